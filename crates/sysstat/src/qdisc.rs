//! The rate a link is shaped to. A token-bucket qdisc (`tc qdisc add dev X root tbf rate
//! 100mbit`) caps an interface below what its driver reports (a veth says 10 Gbit/s or
//! nothing), and it is what a shaped test network runs at. Read with the local `tc -j qdisc
//! show dev X` (iproute2; nothing is asked of any other machine); no `tc`, no tbf: none.

use std::process::{Command, Stdio};

/// The rate, in Mb/s, of the root tbf qdisc in `tc -j qdisc show` output (tc prints the rate
/// in bytes per second), if there is one.
pub fn tbf_rate_mbps(json: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    v.as_array()?
        .iter()
        .filter(|q| q["kind"] == "tbf" && q["root"] == true)
        .filter_map(|q| q["options"]["rate"].as_u64())
        .map(|bytes_s| bytes_s.saturating_mul(8) / 1_000_000)
        .find(|m| *m > 0)
}

/// The root tbf rate of interface `name` on this machine, in Mb/s.
pub fn shaped_mbps(name: &str) -> Option<u64> {
    if name.is_empty() || name.starts_with('-') || name.len() > 15 {
        return None;
    }
    let out = Command::new("tc")
        .args(["-j", "qdisc", "show", "dev", name])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    tbf_rate_mbps(&String::from_utf8_lossy(&out.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_tbf_gives_its_rate() {
        // As iproute2 6.1 prints `tbf rate 100mbit burst 32kbit latency 400ms`.
        let tbf = r#"[{"kind":"tbf","handle":"8021:","root":true,"refcnt":3,"options":{"rate":12500000,"burst":4087,"lat":400000}}]"#;
        assert_eq!(tbf_rate_mbps(tbf), Some(100));
        let none = r#"[{"kind":"noqueue","handle":"0:","root":true,"refcnt":2,"options":{}}]"#;
        assert_eq!(tbf_rate_mbps(none), None);
        let child = r#"[{"kind":"tbf","handle":"10:","parent":"1:1","options":{"rate":125000}}]"#;
        assert_eq!(tbf_rate_mbps(child), None, "only the root qdisc shapes the whole link");
        for bad in ["", "{", "[1,2]", r#"[{"kind":"tbf","root":true,"options":{"rate":-5}}]"#] {
            assert_eq!(tbf_rate_mbps(bad), None, "{bad}");
        }
    }
}
