//! Traces for replay jobs, sent with the run: an agent replays only a trace it was sent (it
//! never reads a path it is told), so before a node's run the coordinator streams it the trace
//! of each of its replay jobs in pieces, each trace read once and checked to be the file that
//! was planned.

use crate::dial::Client;
use iolab_cluster_protocol::proto;
use iolab_spec::{Plan, Workload};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The size of the pieces a trace travels in.
const TRACE_CHUNK: usize = 1 << 20;

/// Send a node the trace of each replay job of its plan (the agent runs a replay only from a
/// trace it was sent). Each trace is read once, and must still be the file that was planned.
pub(crate) async fn ship_traces(
    client: &mut Client,
    plan: &Plan,
    read: &mut HashMap<PathBuf, Arc<Vec<u8>>>,
) -> Result<(), String> {
    let mut sent = std::collections::HashSet::new();
    for job in plan.phases.iter().flat_map(|p| &p.jobs) {
        let Workload::Replay(r) = &job.workload else { continue };
        if !sent.insert((r.trace_bytes, r.trace_crc32)) {
            continue;
        }
        let bytes = match read.get(&r.trace) {
            Some(b) => b.clone(),
            None => {
                let b = tokio::fs::read(&r.trace)
                    .await
                    .map_err(|e| format!("reading the trace {}: {e}", r.trace.display()))?;
                let mut crc = flate2::Crc::new();
                crc.update(&b);
                if (b.len() as u64, crc.sum()) != (r.trace_bytes, r.trace_crc32) {
                    return Err(format!("the trace {} changed since the replay was planned", r.trace.display()));
                }
                let b = Arc::new(b);
                read.insert(r.trace.clone(), b.clone());
                b
            }
        };
        let (total, crc32) = (r.trace_bytes, r.trace_crc32);
        let n = bytes.len().div_ceil(TRACE_CHUNK).max(1);
        let chunks = (0..n).map(move |i| {
            let end = ((i + 1) * TRACE_CHUNK).min(bytes.len());
            proto::TraceChunk { total_bytes: total, crc32, data: bytes[i * TRACE_CHUNK..end].to_vec() }
        });
        client
            .put_trace(tokio_stream::iter(chunks))
            .await
            .map_err(|e| format!("sending the trace {}: {}", r.trace.display(), e.message()))?;
    }
    Ok(())
}
