//! A personality's own figures (PostMark's transactions, maildir's messages per minute, ...):
//! their names, what kind of number each is, and the one rule by which the figures of several
//! threads, jobs or nodes combine — counts add up, seconds take the longest, a setting keeps
//! its value, a worst latency takes the worst, %CPU is averaged, and rates and ratios are
//! recomputed from the combined counts and seconds (never summed). The workload crate combines
//! a job's threads and a phase's jobs with it, the coordinator and the store a run's nodes;
//! `compare` takes its metric names from [`names`].

use std::collections::BTreeMap;

/// bonnie++'s tests in its order, under its CSV names (`TESTS`, `CPU`, `SECS`, `LATENCY`,
/// `AMOUNT`).
pub use iolab_spec::bonnie::columns as bonnie;
/// A personality's figure table (declared in its module in the spec crate).
pub use iolab_spec::figures::FigureTable as Personality;
pub use iolab_spec::figures::{Figures, Kind};

use Kind::*;

/// Every personality's figures.
pub const PERSONALITIES: &[Personality] = iolab_spec::FIGURE_TABLES;

/// The personality of a workload (`postmark`, ...), if it has figures.
pub fn personality(workload: &str) -> Option<&'static Personality> {
    PERSONALITIES.iter().find(|p| p.workload == workload)
}

/// Every figure name of every personality, once each, in a stable order.
pub fn names() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for p in PERSONALITIES {
        for (n, _) in p.figures {
            if !out.contains(n) {
                out.push(n);
            }
        }
    }
    out
}

/// The kind of a figure by its name alone (the first table that names it; a name none knows:
/// seconds when it ends in `_s`, else a count).
pub fn kind_of(name: &str) -> Kind {
    PERSONALITIES
        .iter()
        .flat_map(|p| p.figures.iter())
        .find(|(n, _)| *n == name)
        .map(|(_, k)| *k)
        .unwrap_or_else(|| iolab_spec::figures::guess(name))
}

/// How several parts' figures combine: the module's rule.
pub trait Combine {
    /// Combine the figures of parts that ran at once (threads of a job, jobs of a phase, nodes
    /// of a run).
    fn combine<'a>(&self, parts: impl IntoIterator<Item = &'a Figures>) -> Figures;
}

impl Combine for Personality {
    fn combine<'a>(&self, parts: impl IntoIterator<Item = &'a Figures>) -> Figures {
        let mut out = Figures::new();
        let mut percent: BTreeMap<&str, (f64, u32)> = BTreeMap::new();
        for part in parts {
            for (k, v) in part {
                match self.kind(k) {
                    Derived => {}
                    Count => *out.entry(k.clone()).or_insert(0.0) += v,
                    Seconds | Setting | Max => {
                        let e = out.entry(k.clone()).or_insert(*v);
                        *e = e.max(*v);
                    }
                    Percent => {
                        let e = percent.entry(k.as_str()).or_insert((0.0, 0));
                        e.0 += v;
                        e.1 += 1;
                    }
                }
            }
        }
        for (k, (sum, n)) in percent {
            out.insert(k.to_string(), sum / n as f64);
        }
        if !out.is_empty() {
            (self.derive)(&mut out);
        }
        out
    }
}

/// The figures of parts that ran at once, each with its workload's name: combined when they
/// are all of one personality, none when they mix personalities (each part keeps its own) or
/// have none.
pub fn roll_up<'a>(parts: impl IntoIterator<Item = (&'a str, &'a Figures)>) -> Figures {
    let parts: Vec<(&str, &Figures)> = parts.into_iter().filter(|(_, f)| !f.is_empty()).collect();
    let Some((first, _)) = parts.first() else { return Figures::new() };
    if parts.iter().any(|(w, _)| w != first) {
        return Figures::new();
    }
    match personality(first) {
        Some(p) => p.combine(parts.iter().map(|(_, f)| *f)),
        None => Figures::new(),
    }
}

/// Figures as JSON: a count is a whole number (`"created": 7957`), everything else (seconds,
/// rates, settings, %CPU, worst cases) a number as measured. Runs stored with counts as
/// `7957.0` read back alike.
pub fn serialize<S: serde::Serializer>(f: &Figures, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(f.len()))?;
    for (k, v) in f {
        let whole = v.fract() == 0.0 && v.abs() < 9.0e15;
        match kind_of(k) {
            Count if whole && *v >= 0.0 => map.serialize_entry(k, &(*v as u64))?,
            Count if whole => map.serialize_entry(k, &(*v as i64))?,
            _ => map.serialize_entry(k, v)?,
        }
    }
    map.end()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(pairs: &[(&str, f64)]) -> Figures {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn counts_add_seconds_take_the_longest_and_rates_are_recomputed() {
        let a = f(&[
            ("messages", 600.0),
            ("messages_after_discard", 500.0),
            ("measured_s", 50.0),
            ("elapsed_s", 60.0),
            ("discard_s", 10.0),
        ]);
        let b = f(&[
            ("messages", 300.0),
            ("messages_after_discard", 250.0),
            ("measured_s", 25.0),
            ("elapsed_s", 35.0),
            ("discard_s", 10.0),
        ]);
        let mut a1 = a.clone();
        (personality("maildir").unwrap().derive)(&mut a1);
        assert_eq!(a1["messages_per_min"], 600.0, "500 in 50 s");
        let c = personality("maildir").unwrap().combine([&a1, &b]);
        assert_eq!(c["messages"], 900.0);
        assert_eq!((c["measured_s"], c["elapsed_s"], c["discard_s"]), (50.0, 60.0, 10.0));
        assert_eq!(c["messages_per_min"], 750.0 / 50.0 * 60.0, "recomputed, not 600 + 600");
    }

    #[test]
    fn cpu_is_averaged_and_a_worst_latency_is_the_worst() {
        let a = f(&[("seeks_count", 4000.0), ("seeks_s", 2.0), ("seeks_cpu", 40.0), ("seeks_latency_us", 900.0)]);
        let b = f(&[("seeks_count", 4192.0), ("seeks_latency_us", 1500.0)]);
        let bonnie = personality("bonnie").unwrap();
        let c = bonnie.combine([&a, &b]);
        assert_eq!(
            (c["seeks_count"], c["seeks"], c["seeks_cpu"], c["seeks_latency_us"]),
            (8192.0, 4096.0, 40.0, 1500.0)
        );
        let two = bonnie.combine([&c, &f(&[("seeks_count", 8192.0), ("seeks_s", 4.0), ("seeks_cpu", 20.0)])]);
        assert_eq!((two["seeks"], two["seeks_cpu"]), (16384.0 / 4.0, 30.0), "two nodes: %CPU averaged");
        assert!(!two.contains_key("putc"), "a test that did not run has no rate");
        let kb = bonnie.combine([&f(&[("put_block_bytes", 1048576.0), ("put_block_s", 2.0)])]);
        assert_eq!(kb["put_block"], 512.0, "K/sec");
    }

    #[test]
    fn mixed_personalities_roll_up_to_nothing_and_names_are_unique() {
        let p = f(&[("transactions", 10.0), ("transactions_s", 2.0)]);
        let m = f(&[("messages", 10.0)]);
        assert_eq!(roll_up([("postmark", &p), ("postmark", &p)])["transactions_per_s"], 10.0);
        assert!(roll_up([("postmark", &p), ("maildir", &m)]).is_empty());
        assert!(roll_up([("read", &Figures::new())]).is_empty());
        let n = names();
        assert!(n.contains(&"put_block") && n.contains(&"messages_read") && n.contains(&"seeks_latency_us"));
        let unique: std::collections::BTreeSet<_> = n.iter().collect();
        assert_eq!(unique.len(), n.len());
        for name in &n {
            let kinds: std::collections::BTreeSet<String> = PERSONALITIES
                .iter()
                .flat_map(|p| p.figures.iter())
                .filter(|(f, _)| f == name)
                .map(|(_, k)| format!("{k:?}"))
                .collect();
            assert_eq!(kinds.len(), 1, "`{name}` is one kind of figure wherever it appears: {kinds:?}");
        }
        for p in PERSONALITIES {
            for (name, _) in p.figures {
                assert_eq!(p.kind(name), p.figures.iter().find(|x| x.0 == *name).unwrap().1);
            }
        }
    }

    #[test]
    fn counts_are_whole_numbers_in_json_and_old_floats_read_back() {
        let figures = f(&[("created", 7957.0), ("created_per_s", 2.0), ("elapsed_s", 3.0), ("seeks_cpu", 40.0)]);
        #[derive(serde::Serialize, serde::Deserialize)]
        struct Holder {
            #[serde(serialize_with = "serialize")]
            workload: Figures,
        }
        let text = serde_json::to_string(&Holder { workload: figures.clone() }).unwrap();
        assert_eq!(text, r#"{"workload":{"created":7957,"created_per_s":2.0,"elapsed_s":3.0,"seeks_cpu":40.0}}"#);
        let back: Holder = serde_json::from_str(&text).unwrap();
        assert_eq!(back.workload, figures);
        let old: Holder = serde_json::from_str(r#"{"workload":{"created":7957.0}}"#).unwrap();
        assert_eq!(old.workload["created"], 7957.0);
    }
}
