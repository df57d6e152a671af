//! CSV for spreadsheets: one row per run × phase × node × job × operation class that saw
//! operations (the `dir` column holds the class: read, write, sync, create, rename, ...); the
//! phase's total is the job named `*`. The `node` column names the node: the run's own on one
//! machine; on several, each node's rows (its total as job `*`, then its jobs) and the
//! aggregate over all nodes as node `*`. Fields holding commas or quotes are quoted as RFC 4180
//! says; control characters in names and labels are escaped (`\e`, `\n`), never written raw.

use iolab_model::Totals;
use iolab_store::StoredRun;

const HEADER: &str = "run_id,kind,started_unix_s,labels,phase,node,job,dir,ops,bytes,elapsed_s,iops,bw_bytes,mb_s,mib_s,lat_min_ns,lat_mean_ns,lat_p50_ns,lat_p90_ns,lat_p99_ns,lat_p999_ns,lat_max_ns";

/// A cell: control characters escaped (`crate::text::safe`: a name's newline reads `\n`, an
/// ESC `\e`), quoted when it holds a comma or a quote.
fn quote(s: &str) -> String {
    let s = crate::text::safe(s);
    if s.contains([',', '"']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.into_owned()
    }
}

pub fn to_csv(runs: &[StoredRun]) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    for r in runs {
        let labels: Vec<String> = r.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let labels = quote(&labels.join(";"));
        for p in &r.result.phases {
            let mut emit = |node: &str, job: &str, t: &Totals, elapsed: f64| {
                for (class, c) in t.iter() {
                    let (dir, ops, bytes, iops, bw, l) =
                        (class.as_str(), c.ops, c.bytes, c.iops, c.bw_bytes, &c.lat_ns);
                    out.push_str(&format!(
                        "{},{},{:.3},{},{},{},{},{},{},{},{:.6},{:.3},{:.3},{:.3},{:.3},{},{},{},{},{},{},{}\n",
                        r.id,
                        r.kind,
                        r.result.started_unix_s,
                        labels,
                        quote(&p.name),
                        quote(node),
                        quote(job),
                        dir,
                        ops,
                        bytes,
                        elapsed,
                        iops,
                        bw,
                        bw / 1e6,
                        bw / 1048576.0,
                        l.min,
                        l.mean,
                        l.p50,
                        l.p90,
                        l.p99,
                        l.p999,
                        l.max
                    ));
                }
            };
            if p.nodes.is_empty() {
                emit(&r.result.node, "*", &p.total, p.elapsed_s);
                for j in &p.jobs {
                    emit(&r.result.node, &j.name, &j.total, j.elapsed_s);
                }
                continue;
            }
            emit("*", "*", &p.total, p.elapsed_s);
            for n in &p.nodes {
                emit(&n.name, "*", &n.total, n.elapsed_s);
                for j in p.jobs.iter().filter(|j| j.node.as_deref() == Some(n.name.as_str())) {
                    emit(&n.name, &j.name, &j.total, j.elapsed_s);
                }
            }
            // Jobs of a node the phase has no share for (none, unless saved half-way).
            for j in p.jobs.iter().filter(|j| !p.nodes.iter().any(|n| j.node.as_deref() == Some(n.name.as_str()))) {
                emit(j.node.as_deref().unwrap_or("*"), &j.name, &j.total, j.elapsed_s);
            }
        }
    }
    out
}
