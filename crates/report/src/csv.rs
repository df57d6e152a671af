//! CSV for spreadsheets: one row per run × phase × job × operation class that saw operations
//! (the `dir` column holds the class: read, write, sync, create, rename, ...); the phase's total is the
//! job named `*`. Fields holding commas or quotes are quoted as RFC 4180 says.

use iolab_model::Totals;
use iolab_store::StoredRun;

const HEADER: &str = "run_id,kind,started_unix_s,labels,phase,job,dir,ops,bytes,elapsed_s,iops,bw_bytes,mb_s,mib_s,lat_min_ns,lat_mean_ns,lat_p50_ns,lat_p90_ns,lat_p99_ns,lat_p999_ns,lat_max_ns";

fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn to_csv(runs: &[StoredRun]) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    for r in runs {
        let labels: Vec<String> = r.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let labels = quote(&labels.join(";"));
        for p in &r.result.phases {
            let mut emit = |job: &str, t: &Totals, elapsed: f64| {
                for (class, c) in t.iter() {
                    let (dir, ops, bytes, iops, bw, l) =
                        (class.as_str(), c.ops, c.bytes, c.iops, c.bw_bytes, &c.lat_ns);
                    out.push_str(&format!(
                        "{},{},{:.3},{},{},{},{},{},{},{:.6},{:.3},{:.3},{:.3},{:.3},{},{},{},{},{},{},{}\n",
                        r.id,
                        r.kind,
                        r.result.started_unix_s,
                        labels,
                        quote(&p.name),
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
            emit("*", &p.total, p.elapsed_s);
            for j in &p.jobs {
                emit(&j.name, &j.total, j.elapsed_s);
            }
        }
    }
    out
}
