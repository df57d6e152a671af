//! Numbers the way storage people read them, written in one place for every output (terminal
//! summary, compare table, CSV, HTML): dd's decimal MB/s beside binary MiB/s, counts with
//! thousands separators, latencies in milliseconds, UTC dates.

pub use iolab_spec::units::{fmt_binary, fmt_decimal};

/// `85.0 MB/s (81.1 MiB/s)`
pub fn rate(bytes_per_s: f64) -> String {
    format!("{}/s ({}/s)", fmt_decimal(bytes_per_s), fmt_binary(bytes_per_s))
}

/// Milliseconds from nanoseconds, with enough digits for microsecond latencies (`0.012`,
/// `1.50`, `38.5`, `137`).
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
    let n = v.round().max(0.0) as u64;
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

/// `88.12 s`, `137 s`
pub fn secs(s: f64) -> String {
    if s >= 100.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.2} s")
    }
}

/// A measured value in a table: three significant digits below 100 (`35.21` above 10, `1.50`,
/// `0.415`, `0.00340`), whole numbers with separators above (`1,266`, `309,072`, as [`count`]
/// writes counts). A small value keeps its digits, so a percentage of the baseline printed
/// beside it agrees with what is printed: 0.0034 → 0.0080 ms reads `0.00340` → `0.00800
/// (235.3%)`, never `0.003` → `0.008 (235.3%)`; [`shown`] is the value a string of `num` reads as.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v.abs() >= 100.0 {
        let sign = if v < 0.0 { "-" } else { "" };
        format!("{sign}{}", count(v.abs()))
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else if v == 0.0 || v.abs() >= 0.1 {
        format!("{v:.3}")
    } else {
        // Three significant digits, up to nine decimals (nanoseconds in ms).
        let decimals = (2 - v.abs().log10().floor() as i32).clamp(3, 9) as usize;
        format!("{v:.decimals$}")
    }
}

/// The value [`num`] prints for `v`, as a number: what a reader of the table sees, so a ratio
/// of two printed values is computed from these (0.00254 and 0.006 print as `0.00254` and
/// `0.00600`, and their ratio is 236.2% of what is printed, not of what was rounded away).
pub fn shown(v: f64) -> f64 {
    num(v).replace(',', "").parse().unwrap_or(v)
}

/// `part` as a percentage of `whole`, both as [`num`] prints them; `None` when `whole` prints
/// as zero.
pub fn pct_of(part: f64, whole: f64) -> Option<f64> {
    let (p, w) = (shown(part), shown(whole));
    (w != 0.0).then(|| 100.0 * p / w)
}

/// Unix seconds as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn utc(unix_s: f64) -> String {
    let secs = unix_s.max(0.0).floor() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The date of a day count since 1970-01-01 (Howard Hinnant's civil_from_days).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
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
        assert_eq!(ms(38_500_000), "38.5");
        assert_eq!(ms(137_400_000), "137");
        assert_eq!(rate(11_900_000.0), "11.9 MB/s (11.3 MiB/s)");
        assert_eq!(num(1266.4), "1,266");
        assert_eq!(num(309_072.0), count(309_072.0), "IOPS read the same in every table");
        assert_eq!(num(-1266.0), "-1,266");
        assert_eq!(num(250.0), "250");
        assert_eq!(num(0.415), "0.415");
        assert_eq!(num(0.0034), "0.00340", "a small value keeps three significant digits");
        assert_eq!(num(0.0123), "0.0123");
        assert_eq!(num(0.0), "0.000");
        assert_eq!(num(-0.05), "-0.0500");
        assert_eq!(num(f64::NAN), "-");
    }

    #[test]
    fn percentages_are_of_the_values_printed() {
        // 0.003 → 0.006 ms: the ratio of what is printed, whatever the digits rounded away.
        assert_eq!(pct_of(0.006, 0.003).map(|p| format!("{p:.1}")), Some("200.0".into()));
        let (base, new) = (0.002_544_9, 0.006_000_4);
        assert_eq!((num(base), num(new)), ("0.00254".to_string(), "0.00600".to_string()));
        assert_eq!(pct_of(new, base).map(|p| format!("{p:.1}")), Some("236.2".into()));
        assert_ne!(format!("{:.1}", 100.0 * new / base), "236.2", "the raw ratio differs (235.8%)");
        assert_eq!(shown(1266.4), 1266.0);
        assert_eq!(shown(0.0), 0.0);
        assert_eq!(pct_of(5.0, 0.0), None);
    }

    #[test]
    fn dates_both_ways() {
        assert_eq!(utc(0.0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400.0), "2000-02-29 00:00:00 UTC");
        for days in [-1000, 0, 20_779, 100_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(days_from_civil(2026, 11, 22), 20779);
    }
}
