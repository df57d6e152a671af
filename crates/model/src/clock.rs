//! The wall clock as results keep it: Unix time in seconds (`started_unix_s`, a run's end, a
//! sample's stamp). One definition, so every run, report and sample reads the same clock the
//! same way.

use std::time::{SystemTime, UNIX_EPOCH};

/// `t` in Unix seconds; an instant before 1970 (a clock set far back) reads as 0.
pub fn unix_s(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Now, in Unix seconds.
pub fn now_unix_s() -> f64 {
    unix_s(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn unix_seconds_keep_their_fraction_and_never_go_negative() {
        assert_eq!(unix_s(UNIX_EPOCH + Duration::from_millis(1500)), 1.5);
        assert_eq!(unix_s(UNIX_EPOCH - Duration::from_secs(5)), 0.0);
        // 2020-09-13 or later: the helper reads the real clock.
        assert!(now_unix_s() > 1.6e9);
    }
}
