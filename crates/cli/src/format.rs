//! Numbers the way storage people read them: dd's decimal MB/s beside binary MiB/s, IOPS
//! with thousands separators, latencies in milliseconds.

pub use iolab_spec::units::{fmt_binary, fmt_decimal};

/// `85.0 MB/s (81.1 MiB/s)`
pub fn rate(bytes_per_s: f64) -> String {
    format!("{}/s ({}/s)", fmt_decimal(bytes_per_s), fmt_binary(bytes_per_s))
}

/// Milliseconds with enough digits for microsecond latencies.
pub fn ms(ns: u64) -> String {
    let v = ns as f64 / 1e6;
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// 12,345
pub fn count(v: f64) -> String {
    let n = v.round() as u64;
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn secs(s: f64) -> String {
    if s >= 100.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.2} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn formats() {
        assert_eq!(count(1234567.0), "1,234,567");
        assert_eq!(count(12.0), "12");
        assert_eq!(ms(12_345), "0.012");
        assert_eq!(ms(1_500_000), "1.50");
        assert_eq!(rate(11_900_000.0), "11.9 MB/s (11.3 MiB/s)");
    }
}
