//! Per-thread results through the command line: each thread's end and volume in the JSON, in
//! the database, and in the terminal, with a note where jobs' MB/s do not add up to the phase's.

mod common;
use common::*;

#[test]
fn threads_and_jobs_of_different_lengths_are_shown_per_thread_and_explained() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let job = dir.path().join("two.toml");
    // Two jobs of one phase, one running twice as long as the other, each with two threads.
    std::fs::write(
        &job,
        format!(
            r#"
[defaults]
size = "4M"
threads = 2
rate_iops = 200

[[phase]]
name = "both"
[[phase.job]]
name = "short"
target = "{d}/a"
rw = "randwrite"
runtime = "1s"
[[phase.job]]
name = "long"
target = "{d}/b"
rw = "randwrite"
runtime = "2s"
"#,
            d = dir.path().display()
        ),
    )
    .unwrap();
    let v = run_json(&["run", "--db", db.to_str().unwrap(), job.to_str().unwrap()]);
    let p = &v["phases"][0];
    for j in p["jobs"].as_array().unwrap() {
        let threads = j["per_thread"].as_array().unwrap();
        assert_eq!(threads.len(), 2, "{j}");
        let bytes: u64 = threads.iter().map(|t| u(&t["bytes"])).sum();
        assert_eq!(bytes, u(&j["total"]["write"]["bytes"]), "threads add up to their job");
        for t in threads {
            let e = t["elapsed_s"].as_f64().unwrap();
            assert!((e - j["elapsed_s"].as_f64().unwrap()).abs() < 0.2, "{t}");
            assert!((t["bw_bytes"].as_f64().unwrap() - u(&t["bytes"]) as f64 / e).abs() < 1.0, "{t}");
        }
    }
    // The terminal, from the database: a thread table and why the jobs do not add up.
    let out = iolab().args(["show", "--db", db.to_str().unwrap(), "last"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("per thread:"), "{text}");
    let rows = text.lines().filter(|l| l.contains("│ short ") || l.contains("│ long ")).count();
    assert_eq!(rows, 2 + 2 * 2, "a job row each, a thread row each:\n{text}");
    assert!(text.contains("the jobs' MB/s add up to"), "{text}");
}
