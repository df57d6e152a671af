//! Steady state (issue 29): when a phase may end because its figure stopped moving. Two
//! methods: SNIA PTS's rounds judged over a window of rounds (range and the fitted line's
//! excursion against the window's mean), and fio's one criterion judged each sample
//! (`ss=iops_slope:0.3%`, `ss_dur`, `ss_ramp`). What a job asks for lives here; the arithmetic
//! is `iolab_model::steady`'s and the judging the executor's coordinating thread's.

use crate::units::duration_serde;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The figure a steady-state criterion follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tracked {
    /// Operations per second (reads and writes).
    #[default]
    Iops,
    /// Bytes read and written per second.
    Bw,
    /// Mean completion latency of reads and writes.
    Lat,
}

impl Tracked {
    pub fn word(self) -> &'static str {
        match self {
            Tracked::Iops => "iops",
            Tracked::Bw => "bw",
            Tracked::Lat => "lat",
        }
    }
    /// The unit of the tracked values as iolab records them.
    pub fn unit(self) -> &'static str {
        match self {
            Tracked::Iops => "IOPS",
            Tracked::Bw => "B/s",
            Tracked::Lat => "ns",
        }
    }
}

impl fmt::Display for Tracked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

impl FromStr for Tracked {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "iops" => Ok(Tracked::Iops),
            "bw" => Ok(Tracked::Bw),
            "lat" => Ok(Tracked::Lat),
            other => Err(format!("`{other}` is not a tracked figure; accepted: iops, bw, lat")),
        }
    }
}

/// fio's two tests: the largest deviation from the window's mean, or the least-squares slope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FioTest {
    Deviation,
    Slope,
}

/// One fio criterion: `iops`, `iops_slope`, `bw`, `bw_slope`, `lat`, `lat_slope`, with a limit
/// (absolute in the tracked unit — IOPS, B/s, ns — or a percentage of the window's mean).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FioCriterion {
    pub tracked: Tracked,
    pub test: FioTest,
    pub limit: f64,
    pub percent: bool,
}

impl FioCriterion {
    /// fio's default criterion (`ss` not given, `ss_dur` given): `iops_slope:0.01%`.
    pub const FIO_DEFAULT: FioCriterion =
        FioCriterion { tracked: Tracked::Iops, test: FioTest::Slope, limit: 0.01, percent: true };
}

impl fmt::Display for FioCriterion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let slope = if self.test == FioTest::Slope { "_slope" } else { "" };
        write!(f, "{}{slope}:{}{}", self.tracked, self.limit, if self.percent { "%" } else { "" })
    }
}

impl FromStr for FioCriterion {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let (name, limit) = text.trim().split_once(':').unwrap_or((text.trim(), ""));
        let (tracked, test) = match name {
            "iops" => (Tracked::Iops, FioTest::Deviation),
            "iops_slope" => (Tracked::Iops, FioTest::Slope),
            "bw" => (Tracked::Bw, FioTest::Deviation),
            "bw_slope" => (Tracked::Bw, FioTest::Slope),
            "lat" => (Tracked::Lat, FioTest::Deviation),
            "lat_slope" => (Tracked::Lat, FioTest::Slope),
            other => {
                return Err(format!(
                    "`{other}` is not a steady-state criterion; accepted: iops, iops_slope, bw, bw_slope, lat, lat_slope, with a limit (iops_slope:0.3%)"
                ))
            }
        };
        let (num, percent) = match limit.trim().strip_suffix('%') {
            Some(n) => (n.trim(), true),
            None => (limit.trim(), false),
        };
        if num.is_empty() {
            return Err(format!("`{text}`: a criterion needs a limit, for example {name}:0.3% or {name}:20"));
        }
        let limit: f64 = num
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v > 0.0)
            .ok_or_else(|| format!("`{text}`: the limit must be a positive number, optionally with %"))?;
        Ok(FioCriterion { tracked, test, limit, percent })
    }
}

/// What `--steady-state` names: SNIA PTS's method, or one of fio's criteria.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SteadyWord {
    Snia,
    Fio(FioCriterion),
}

impl fmt::Display for SteadyWord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SteadyWord::Snia => f.write_str("snia"),
            SteadyWord::Fio(c) => c.fmt(f),
        }
    }
}

impl FromStr for SteadyWord {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "snia" | "pts" => Ok(SteadyWord::Snia),
            other => other.parse().map(SteadyWord::Fio).map_err(|e| format!("{e}; or snia (SNIA PTS's rounds)")),
        }
    }
}

impl Serialize for SteadyWord {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SteadyWord {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A percentage as typed: `20`, `20%` or `0.5%`.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let t = text.trim();
    t.strip_suffix('%')
        .unwrap_or(t)
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0 && *v <= 1000.0)
        .ok_or_else(|| format!("`{text}` is not a percentage; write for example 20 or 20% (above 0)"))
}

/// SNIA PTS's method: the tracked figure measured once per round, judged over the last
/// `window` rounds after every round; steady when the range is at most `range_pct` of the
/// window's mean and the least-squares line's excursion across the window at most
/// `excursion_pct`; not steady after `max_rounds`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Snia {
    #[serde(with = "duration_serde")]
    pub round: Duration,
    pub window: u32,
    pub max_rounds: u32,
    pub range_pct: f64,
    pub excursion_pct: f64,
    pub tracked: Tracked,
}

impl Snia {
    /// PTS's: one-minute rounds, a window of 5, at most 25 rounds, 20% and 10%.
    pub const PTS: Snia = Snia {
        round: Duration::from_secs(60),
        window: 5,
        max_rounds: 25,
        range_pct: 20.0,
        excursion_pct: 10.0,
        tracked: Tracked::Iops,
    };
    /// The round in whole seconds (validated to be whole).
    pub fn round_s(&self) -> u64 {
        self.round.as_secs().max(1)
    }
}

/// fio's method: one sample every `interval` from `ramp` after the job's start, the criterion
/// judged over the last `dur / interval` samples each time one comes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FioSteady {
    pub criterion: FioCriterion,
    #[serde(with = "duration_serde")]
    pub dur: Duration,
    #[serde(with = "duration_serde")]
    pub ramp: Duration,
    #[serde(with = "duration_serde")]
    pub interval: Duration,
}

impl FioSteady {
    /// Samples in the window (validated to be at least 2).
    pub fn samples(&self) -> u32 {
        (self.dur.as_secs() / self.interval.as_secs().max(1)) as u32
    }
}

/// A job's steady-state criterion.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "lowercase")]
pub enum SteadyState {
    Snia(Snia),
    Fio(FioSteady),
}

impl SteadyState {
    /// The criterion in a few words, for `iolab runs` and the report.
    pub fn describe(&self) -> String {
        match self {
            SteadyState::Snia(s) => format!(
                "steady state SNIA ({} per {}s round, window {}, range {}%, excursion {}%, at most {} rounds)",
                s.tracked,
                s.round_s(),
                s.window,
                s.range_pct,
                s.excursion_pct,
                s.max_rounds
            ),
            SteadyState::Fio(f) => format!(
                "steady state {} over {}s{}",
                f.criterion,
                f.dur.as_secs(),
                if f.ramp.is_zero() { String::new() } else { format!(" after {}s", f.ramp.as_secs_f64()) }
            ),
        }
    }
}

/// The options a job's patch sets, gathered (see [`crate::JobPatch`]'s `steady_state`, `round`,
/// `ss_*`): the criterion, or a refusal naming the option and what is accepted.
pub struct SteadyOptions {
    pub word: Option<SteadyWord>,
    pub round: Option<Duration>,
    pub window: Option<u32>,
    pub max_rounds: Option<u32>,
    pub range: Option<f64>,
    pub excursion: Option<f64>,
    pub track: Option<Tracked>,
    pub dur: Option<Duration>,
    pub ramp: Option<Duration>,
    pub interval: Option<Duration>,
}

fn whole_seconds(d: Duration) -> bool {
    d.subsec_nanos() == 0 && d.as_secs() > 0
}

impl SteadyOptions {
    /// The criterion these options make, or an error as (field, message).
    pub fn resolve(&self) -> Result<Option<SteadyState>, (&'static str, String)> {
        let snia_only: [(&'static str, bool); 6] = [
            ("round", self.round.is_some()),
            ("ss_window", self.window.is_some()),
            ("ss_max_rounds", self.max_rounds.is_some()),
            ("ss_range", self.range.is_some()),
            ("ss_excursion", self.excursion.is_some()),
            ("ss_track", self.track.is_some()),
        ];
        let fio_only: [(&'static str, bool); 3] = [
            ("ss_dur", self.dur.is_some()),
            ("ss_ramp", self.ramp.is_some()),
            ("ss_interval", self.interval.is_some()),
        ];
        let flag = |k: &str| format!("--{}", k.replace('_', "-"));
        match self.word {
            None => {
                if let Some((k, _)) = snia_only.iter().chain(&fio_only).find(|(_, set)| *set) {
                    return Err((
                        k,
                        format!("{} needs --steady-state (snia, or a fio criterion such as iops_slope:0.3%)", flag(k)),
                    ));
                }
                Ok(None)
            }
            Some(SteadyWord::Snia) => {
                if let Some((k, _)) = fio_only.iter().find(|(_, set)| *set) {
                    return Err((k, format!("{} belongs to fio's criteria; with --steady-state snia use --round, --ss-window, --ss-max-rounds, --ss-range, --ss-excursion, --ss-track", flag(k))));
                }
                let p = Snia::PTS;
                let s = Snia {
                    round: self.round.unwrap_or(p.round),
                    window: self.window.unwrap_or(p.window),
                    max_rounds: self.max_rounds.unwrap_or(p.max_rounds),
                    range_pct: self.range.unwrap_or(p.range_pct),
                    excursion_pct: self.excursion.unwrap_or(p.excursion_pct),
                    tracked: self.track.unwrap_or(p.tracked),
                };
                if !whole_seconds(s.round) {
                    return Err((
                        "round",
                        "a round is a whole number of seconds, at least 1s (for example 1m, 10s)".into(),
                    ));
                }
                if !(2..=1000).contains(&s.window) {
                    return Err(("ss_window", format!("{} rounds: accepted 2 to 1000", s.window)));
                }
                if s.max_rounds < s.window || s.max_rounds > 100_000 {
                    return Err((
                        "ss_max_rounds",
                        format!("{} rounds: accepted from the window ({}) to 100000", s.max_rounds, s.window),
                    ));
                }
                Ok(Some(SteadyState::Snia(s)))
            }
            Some(SteadyWord::Fio(criterion)) => {
                if let Some((k, _)) = snia_only.iter().find(|(_, set)| *set) {
                    return Err((
                        k,
                        format!(
                            "{} belongs to --steady-state snia; fio's criteria take --ss-dur, --ss-ramp, --ss-interval",
                            flag(k)
                        ),
                    ));
                }
                let dur = self.dur.ok_or((
                    "ss_dur",
                    "a fio criterion needs its window: --ss-dur (ss_dur in a job file), for example 30s".to_string(),
                ))?;
                let interval = self.interval.unwrap_or(Duration::from_secs(1));
                if !whole_seconds(interval) {
                    return Err((
                        "ss_interval",
                        "the sample interval is a whole number of seconds, at least 1s".into(),
                    ));
                }
                if !whole_seconds(dur) || dur.as_secs() % interval.as_secs() != 0 {
                    return Err((
                        "ss_dur",
                        format!(
                            "{}s: a whole number of seconds and of --ss-interval ({}s)",
                            dur.as_secs_f64(),
                            interval.as_secs()
                        ),
                    ));
                }
                let f = FioSteady { criterion, dur, ramp: self.ramp.unwrap_or_default(), interval };
                if f.samples() < 2 {
                    return Err((
                        "ss_dur",
                        format!(
                            "{}s holds one sample of {}s; a window needs two at least",
                            dur.as_secs(),
                            interval.as_secs()
                        ),
                    ));
                }
                Ok(Some(SteadyState::Fio(f)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> SteadyOptions {
        SteadyOptions {
            word: None,
            round: None,
            window: None,
            max_rounds: None,
            range: None,
            excursion: None,
            track: None,
            dur: None,
            ramp: None,
            interval: None,
        }
    }

    #[test]
    fn words_read_as_fio_and_snia_write_them() {
        assert_eq!("snia".parse::<SteadyWord>().unwrap(), SteadyWord::Snia);
        let c: FioCriterion = "iops_slope:0.3%".parse().unwrap();
        assert_eq!(c, FioCriterion { tracked: Tracked::Iops, test: FioTest::Slope, limit: 0.3, percent: true });
        assert_eq!(c.to_string(), "iops_slope:0.3%");
        let c: FioCriterion = "bw:20000".parse().unwrap();
        assert_eq!((c.tracked, c.test, c.limit, c.percent), (Tracked::Bw, FioTest::Deviation, 20000.0, false));
        assert!("lat_slope:1%".parse::<FioCriterion>().is_ok());
        let e = "iop:1%".parse::<SteadyWord>().unwrap_err();
        assert!(e.contains("accepted: iops, iops_slope") && e.contains("or snia"), "{e}");
        assert!("iops".parse::<SteadyWord>().unwrap_err().contains("needs a limit"));
        assert!("iops:-1%".parse::<SteadyWord>().unwrap_err().contains("positive"));
        assert_eq!(parse_percent("20%").unwrap(), 20.0);
        assert!(parse_percent("0").is_err());
    }

    #[test]
    fn snia_takes_pts_defaults_and_refuses_fio_options() {
        let s = SteadyOptions { word: Some(SteadyWord::Snia), ..opts() }.resolve().unwrap();
        assert_eq!(s, Some(SteadyState::Snia(Snia::PTS)));
        let e = SteadyOptions { word: Some(SteadyWord::Snia), dur: Some(Duration::from_secs(5)), ..opts() }
            .resolve()
            .unwrap_err();
        assert_eq!(e.0, "ss_dur");
        let e = SteadyOptions { round: Some(Duration::from_secs(5)), ..opts() }.resolve().unwrap_err();
        assert_eq!(e.0, "round");
        assert!(e.1.contains("needs --steady-state"));
        let e = SteadyOptions { word: Some(SteadyWord::Snia), round: Some(Duration::from_millis(1500)), ..opts() }
            .resolve()
            .unwrap_err();
        assert_eq!(e.0, "round");
        let e = SteadyOptions { word: Some(SteadyWord::Snia), window: Some(5), max_rounds: Some(4), ..opts() }
            .resolve()
            .unwrap_err();
        assert_eq!(e.0, "ss_max_rounds");
    }

    #[test]
    fn fio_criteria_need_a_window_of_two_samples() {
        let word = Some(SteadyWord::Fio("iops:10%".parse().unwrap()));
        assert_eq!(SteadyOptions { word, ..opts() }.resolve().unwrap_err().0, "ss_dur");
        let e = SteadyOptions { word, dur: Some(Duration::from_secs(1)), ..opts() }.resolve().unwrap_err();
        assert!(e.1.contains("two at least"), "{}", e.1);
        let e =
            SteadyOptions { word, dur: Some(Duration::from_secs(5)), interval: Some(Duration::from_secs(2)), ..opts() }
                .resolve()
                .unwrap_err();
        assert_eq!(e.0, "ss_dur");
        let Some(SteadyState::Fio(f)) =
            SteadyOptions { word, dur: Some(Duration::from_secs(6)), interval: Some(Duration::from_secs(2)), ..opts() }
                .resolve()
                .unwrap()
        else {
            panic!("fio")
        };
        assert_eq!(f.samples(), 3);
        let e =
            SteadyOptions { word, dur: Some(Duration::from_secs(6)), window: Some(3), ..opts() }.resolve().unwrap_err();
        assert_eq!(e.0, "ss_window");
    }
}

/// `--ramp`: a time not counted at the job's start, or `auto`: the warm-up ends where the
/// phase's per-second figure is first steady by SNIA's rule over [`AUTO_RAMP`]'s short window
/// (issue 29); what came before is dropped and reported (`phases[].warmup`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ramp {
    Time(Duration),
    Auto,
}

/// `--ramp auto`'s rule: the phase's operations per second (every class) over a window of 10
/// one-second values, range ≤ 20% and the fitted line's excursion ≤ 10% of their mean (PTS's
/// limits on a window short enough for a warm-up of seconds to minutes).
pub const AUTO_RAMP: Snia = Snia {
    round: Duration::from_secs(1),
    window: 10,
    max_rounds: u32::MAX,
    range_pct: 20.0,
    excursion_pct: 10.0,
    tracked: Tracked::Iops,
};

impl FromStr for Ramp {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "auto" => Ok(Ramp::Auto),
            t => crate::units::parse_duration(t)
                .map(Ramp::Time)
                .map_err(|e| format!("{e}; or `auto`: the warm-up ends once the per-second figure is steady")),
        }
    }
}

impl fmt::Display for Ramp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ramp::Time(d) => write!(f, "{}s", d.as_secs_f64()),
            Ramp::Auto => f.write_str("auto"),
        }
    }
}

impl Serialize for Ramp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Ramp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Ramp;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration (seconds as a number, or \"30s\", \"2m\") or \"auto\"")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Ramp, E> {
                Ok(Ramp::Time(Duration::from_secs(v)))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Ramp, E> {
                u64::try_from(v)
                    .map(|v| Ramp::Time(Duration::from_secs(v)))
                    .map_err(|_| E::custom("a ramp cannot be negative"))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Ramp, E> {
                crate::units::parse_duration(&v.to_string()).map(Ramp::Time).map_err(E::custom)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Ramp, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}
