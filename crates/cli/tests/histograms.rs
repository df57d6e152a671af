//! Latency histograms leaving iolab (`--histograms`): what `run --output json` and
//! `export --format json` carry is HdrHistogram's compressed form, which the hdrhistogram crate's
//! own deserializer reads back to the figures iolab printed beside it.

mod common;
use base64::Engine as _;
use common::*;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use serde_json::Value;

/// Decode one `histogram` object with nothing of iolab's: base64, then hdrhistogram.
fn decode(h: &Value) -> Histogram<u64> {
    assert_eq!(h["encoding"], "hdr-v2-deflate-base64");
    assert_eq!(h["unit"], "ns");
    let bytes = base64::engine::general_purpose::STANDARD.decode(h["data"].as_str().unwrap()).unwrap();
    // HdrHistogram's V2 compressed cookie, with the word-size nibble its encoders set.
    let cookie = u32::from_be_bytes(bytes[..4].try_into().unwrap());
    assert_eq!(cookie & !0xf0, 0x1c84_9304, "cookie {cookie:#x}");
    assert_eq!(cookie, 0x1c84_9314);
    Deserializer::new().deserialize(&mut &bytes[..]).unwrap()
}

/// Every class of a totals object: its histogram holds its operations and gives its percentiles.
fn check_totals(t: &Value) -> usize {
    let classes = t["classes"].as_object().unwrap();
    for (name, c) in classes {
        let h = decode(&c["histogram"]);
        assert_eq!(h.len(), c["ops"].as_u64().unwrap(), "{name}");
        assert_eq!(c["histogram"]["count"].as_u64().unwrap(), h.len(), "{name}");
        let l = &c["lat_ns"];
        for (q, k) in [(0.5, "p50"), (0.99, "p99"), (0.999, "p999")] {
            assert_eq!(h.value_at_quantile(q), l[k].as_u64().unwrap(), "{name} {k}");
        }
        assert_eq!((h.min(), h.max()), (l["min"].as_u64().unwrap(), l["max"].as_u64().unwrap()), "{name}");
    }
    classes.len()
}

#[test]
fn run_and_export_carry_hdr_compressed_histograms() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    let args = ["run", "--target", f.to_str().unwrap(), "--size", "4M", "--rw", "randrw", "--runtime", "1s"];
    let v = run_json(&[&args[..], &["--fsync-every", "32", "--label", "hist=yes", "--histograms"]].concat());
    let p = &v["phases"][0];
    // read, write and sync, in the phase and in its job.
    assert_eq!(check_totals(&p["total"]), 3);
    assert_eq!(check_totals(&p["jobs"][0]["total"]), 3);

    // The stored run exports the same histograms (the database keeps V2, export re-deflates).
    let out = iolab().args(["export", "hist=yes", "--format", "json", "--histograms"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stored: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sp = &stored[0]["result"]["phases"][0];
    assert_eq!(check_totals(&sp["total"]), 3);
    assert_eq!(check_totals(&sp["jobs"][0]["total"]), 3);
    for class in ["read", "write", "sync"] {
        let (a, b) = (&p["total"]["classes"][class]["histogram"], &sp["total"]["classes"][class]["histogram"]);
        assert_eq!(decode(a), decode(b), "{class}");
    }

    // Without the flag, no histogram is printed.
    let out = iolab().args(["export", "hist=yes", "--format", "json"]).output().unwrap();
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("histogram"));
}

#[test]
fn histograms_without_json_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    let out = iolab()
        .args(["run", "--target", f.to_str().unwrap(), "--size", "1M", "--runtime", "1s", "--histograms"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--histograms goes with --output json"));
    assert!(!f.exists(), "nothing was laid out");
    let out = iolab().args(["export", "last", "--format", "csv", "--histograms"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--histograms goes with --format json"));
}
