//! Packing iolab's results for the wire: a [`PhaseResult`]'s JSON leaves its histograms out
//! (`#[serde(skip)]`), so they travel beside it as HDR V2 bytes, one per class of the total
//! and of each job, and are put back on arrival.

use crate::proto::PackedPhase;
use iolab_model::class::OpClass;
use iolab_model::{hist, PhaseResult, Totals};

/// Why a packed phase did not unpack.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("a phase result that is not iolab's JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("a phase result's histogram: {0}")]
    Hist(#[from] hist::DecodeError),
    #[error("a phase result with {found} job histograms for {jobs} jobs")]
    Count { found: usize, jobs: usize },
}

fn pack_totals(t: &Totals, out: &mut Vec<Vec<u8>>) {
    for c in OpClass::ALL {
        out.push(t.get(*c).hist.as_ref().and_then(hist::to_v2).unwrap_or_default());
    }
}

fn unpack_totals(t: &mut Totals, bytes: &[Vec<u8>]) -> Result<(), WireError> {
    for (c, b) in OpClass::ALL.iter().zip(bytes) {
        if !b.is_empty() {
            t.get_mut(*c).hist = Some(hist::decode(b)?);
        }
    }
    Ok(())
}

/// A phase result with every histogram of its total and of its jobs.
pub fn pack(p: &PhaseResult) -> PackedPhase {
    let mut total_hist = Vec::new();
    pack_totals(&p.total, &mut total_hist);
    let mut job_hist = Vec::new();
    for j in &p.jobs {
        pack_totals(&j.total, &mut job_hist);
    }
    PackedPhase { json: serde_json::to_vec(p).unwrap_or_default(), total_hist, job_hist }
}

/// The phase result [`pack`] packed, histograms back in place.
pub fn unpack(p: &PackedPhase) -> Result<PhaseResult, WireError> {
    let mut r: PhaseResult = serde_json::from_slice(&p.json)?;
    let n = OpClass::COUNT;
    if p.total_hist.len() > n || p.job_hist.len() > r.jobs.len() * n {
        return Err(WireError::Count { found: p.job_hist.len() / n, jobs: r.jobs.len() });
    }
    unpack_totals(&mut r.total, &p.total_hist)?;
    for (j, chunk) in r.jobs.iter_mut().zip(p.job_hist.chunks(n)) {
        unpack_totals(&mut j.total, chunk)?;
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_model::stats::Acc;
    use iolab_model::{JobResult, Totals};

    #[test]
    fn a_phase_round_trips_with_its_histograms() {
        let mut acc = Acc::default();
        for i in 1..1000u64 {
            acc.record(OpClass::Write, 4096, i * 1000);
        }
        acc.record(OpClass::Read, 512, 77_000);
        let total = Totals::from_acc(&acc, 2.0);
        let job = JobResult {
            node: Some("a".into()),
            name: "j".into(),
            engine: "psync".into(),
            rw: "write".into(),
            threads: 1,
            files: vec!["/x".into()],
            elapsed_s: 2.0,
            total: total.clone(),
            error: None,
            per_thread: Vec::new(),
            workload: Default::default(),
            replay: None,
            holes: None,
            latency_target: None,
            io_errors: None,
        };
        let p = PhaseResult { name: "p".into(), elapsed_s: 2.0, total, jobs: vec![job], ..Default::default() };
        let back = unpack(&pack(&p)).unwrap();
        for t in [&back.total, &back.jobs[0].total] {
            let h = t.write().hist.as_ref().expect("write histogram back");
            assert_eq!(h.len(), 999);
            assert_eq!(h.value_at_quantile(0.5), p.total.write().hist.as_ref().unwrap().value_at_quantile(0.5));
            assert_eq!(t.read().hist.as_ref().unwrap().len(), 1);
            assert!(t.sync().hist.is_none());
        }
        assert_eq!(back.jobs[0].node.as_deref(), Some("a"));
        assert_eq!(back.total.write().ops, 999);
    }

    #[test]
    fn damaged_bytes_are_an_error_not_a_panic() {
        let p = PhaseResult { name: "p".into(), ..Default::default() };
        let mut packed = pack(&p);
        packed.total_hist[0] = vec![0x1c, 0x84, 0x93, 0x13, 0xff, 0xff, 0xff, 0xff];
        assert!(unpack(&packed).is_err());
        packed.json = b"{".to_vec();
        assert!(unpack(&packed).is_err());
    }
}
