//! A personality's own figures (PostMark's transactions, maildir's messages per minute, ...):
//! their names, what kind of number each is, and the one rule by which the figures of several
//! threads, jobs or nodes combine — counts add up, seconds take the longest, a setting keeps
//! its value, a worst latency takes the worst, %CPU is averaged, and rates and ratios are
//! recomputed from the combined counts and seconds (never summed). The workload crate combines
//! a job's threads and a phase's jobs with it, the coordinator and the store a run's nodes;
//! `compare` takes its metric names from [`names`].

use std::collections::BTreeMap;

/// A set of figures, by name.
pub type Figures = BTreeMap<String, f64>;

/// What a figure is, which says how several combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Things done (files created, bytes written): added up.
    Count,
    /// A duration: the longest (threads and nodes run at once).
    Seconds,
    /// A parameter every part has the same (maildir's discarded start): kept.
    Setting,
    /// A worst case (bonnie++'s latency): the largest.
    Max,
    /// A share of CPU time in %: the mean of the parts that have it.
    Percent,
    /// A rate or ratio: recomputed from the combined figures by the personality's `derive`.
    Derived,
}

/// A personality's figures: its workload's name (as `JobResult::rw` and job files spell it),
/// every figure it reports with its kind, and how its rates follow from the rest.
pub struct Personality {
    pub workload: &'static str,
    pub figures: &'static [(&'static str, Kind)],
    derive: fn(&mut Figures),
}

use Kind::*;

fn get(f: &Figures, k: &str) -> f64 {
    f.get(k).copied().unwrap_or(0.0)
}

fn per(n: f64, s: f64) -> f64 {
    if s > 0.0 {
        n / s
    } else {
        0.0
    }
}

pub const POSTMARK: Personality = Personality {
    workload: "postmark",
    figures: &[
        ("transactions", Count),
        ("created", Count),
        ("created_alone", Count),
        ("created_mixed", Count),
        ("read", Count),
        ("appended", Count),
        ("deleted", Count),
        ("deleted_alone", Count),
        ("deleted_mixed", Count),
        ("bytes_read", Count),
        ("bytes_written", Count),
        ("elapsed_s", Seconds),
        ("creation_s", Seconds),
        ("transactions_s", Seconds),
        ("deletion_s", Seconds),
        ("transactions_per_s", Derived),
        ("created_per_s", Derived),
        ("created_alone_per_s", Derived),
        ("created_mixed_per_s", Derived),
        ("read_per_s", Derived),
        ("appended_per_s", Derived),
        ("deleted_per_s", Derived),
        ("deleted_alone_per_s", Derived),
        ("deleted_mixed_per_s", Derived),
        ("bytes_read_per_s", Derived),
        ("bytes_written_per_s", Derived),
    ],
    derive: postmark_rates,
};

/// Rates as PostMark divides them: creations, reads, appends and deletions mixed with
/// transactions over the transactions' time; the pool's creation and deletion over their own;
/// totals and bytes over all of it.
fn postmark_rates(f: &mut Figures) {
    let (e, t, c, d) = (get(f, "elapsed_s"), get(f, "transactions_s"), get(f, "creation_s"), get(f, "deletion_s"));
    let rates = [
        ("transactions_per_s", per(get(f, "transactions"), t)),
        ("created_per_s", per(get(f, "created"), e)),
        ("created_alone_per_s", per(get(f, "created_alone"), c)),
        ("created_mixed_per_s", per(get(f, "created_mixed"), t)),
        ("read_per_s", per(get(f, "read"), t)),
        ("appended_per_s", per(get(f, "appended"), t)),
        ("deleted_per_s", per(get(f, "deleted"), e)),
        ("deleted_alone_per_s", per(get(f, "deleted_alone"), d)),
        ("deleted_mixed_per_s", per(get(f, "deleted_mixed"), t)),
        ("bytes_read_per_s", per(get(f, "bytes_read"), e)),
        ("bytes_written_per_s", per(get(f, "bytes_written"), e)),
    ];
    for (k, v) in rates {
        f.insert(k.to_string(), v);
    }
}

pub const MAILDIR: Personality = Personality {
    workload: "maildir",
    figures: &[
        ("messages", Count),
        ("messages_after_discard", Count),
        ("bytes_delivered", Count),
        ("discard_s", Setting),
        ("elapsed_s", Seconds),
        ("measured_s", Seconds),
        ("messages_read", Count),
        ("bytes_read", Count),
        ("messages_per_min", Derived),
        ("messages_per_s", Derived),
    ],
    derive: maildir_rates,
};

/// messages_per_min: the messages after the discarded start over the measured minutes (seed
/// 001's figure); messages_per_s: all of them over the whole delivery.
fn maildir_rates(f: &mut Figures) {
    let per_min = per(get(f, "messages_after_discard"), get(f, "measured_s")) * 60.0;
    let per_s = per(get(f, "messages"), get(f, "elapsed_s"));
    f.insert("messages_per_min".into(), per_min);
    f.insert("messages_per_s".into(), per_s);
}

pub const REDOLOG: Personality = Personality {
    workload: "redolog",
    figures: &[
        ("files", Count),
        ("sparse_s", Seconds),
        ("sparse_bytes", Count),
        ("sparse_fsyncs", Count),
        ("full_s", Seconds),
        ("full_bytes", Count),
        ("full_fsyncs", Count),
        ("sparse_bytes_per_s", Derived),
        ("sparse_expected_s", Derived),
        ("full_bytes_per_s", Derived),
        ("full_speedup", Derived),
    ],
    derive: redolog_rates,
};

/// The two passes' rates, the time the sparse pattern's bytes would take at the full pass's
/// rate, and how much longer the sparse pass took than the full one.
fn redolog_rates(f: &mut Figures) {
    let (ss, fs) = (get(f, "sparse_s"), get(f, "full_s"));
    let full_rate = per(get(f, "full_bytes"), fs);
    f.insert("full_bytes_per_s".into(), full_rate);
    f.insert("sparse_bytes_per_s".into(), per(get(f, "sparse_bytes"), ss));
    f.insert("sparse_expected_s".into(), per(get(f, "sparse_bytes"), full_rate));
    f.insert("full_speedup".into(), per(ss, fs));
}

pub const VARMAIL: Personality = Personality {
    workload: "varmail",
    figures: &[
        ("flowops", Count),
        ("loops", Count),
        ("elapsed_s", Seconds),
        ("flowops_per_s", Derived),
        ("loops_per_s", Derived),
    ],
    derive: varmail_rates,
};

/// filebench's ops/s: flowops (and whole loops) over the longest thread's time.
fn varmail_rates(f: &mut Figures) {
    let el = get(f, "elapsed_s");
    let (ops, loops) = (per(get(f, "flowops"), el), per(get(f, "loops"), el));
    f.insert("flowops_per_s".into(), ops);
    f.insert("loops_per_s".into(), loops);
}

/// bonnie++'s tests in its order, under its CSV names: each test's rate (K/sec of the data
/// tests, seeks/sec, files/sec) is the figure of that name.
pub mod bonnie {
    pub const TESTS: [&str; 12] = [
        "putc",
        "put_block",
        "rewrite",
        "getc",
        "get_block",
        "seeks",
        "seq_create",
        "seq_stat",
        "seq_del",
        "ran_create",
        "ran_stat",
        "ran_del",
    ];
    /// %CPU over each test (the CSV's `*_cpu`).
    pub const CPU: [&str; 12] = [
        "putc_cpu",
        "put_block_cpu",
        "rewrite_cpu",
        "getc_cpu",
        "get_block_cpu",
        "seeks_cpu",
        "seq_create_cpu",
        "seq_stat_cpu",
        "seq_del_cpu",
        "ran_create_cpu",
        "ran_stat_cpu",
        "ran_del_cpu",
    ];
    /// Each test's wall time.
    pub const SECS: [&str; 12] = [
        "putc_s",
        "put_block_s",
        "rewrite_s",
        "getc_s",
        "get_block_s",
        "seeks_s",
        "seq_create_s",
        "seq_stat_s",
        "seq_del_s",
        "ran_create_s",
        "ran_stat_s",
        "ran_del_s",
    ];
    /// Each test's longest unit of work (the CSV's latency columns).
    pub const LATENCY: [&str; 12] = [
        "putc_latency_us",
        "put_block_latency_us",
        "rewrite_latency_us",
        "getc_latency_us",
        "get_block_latency_us",
        "seeks_latency_us",
        "seq_create_latency_us",
        "seq_stat_latency_us",
        "seq_del_latency_us",
        "ran_create_latency_us",
        "ran_stat_latency_us",
        "ran_del_latency_us",
    ];
    /// What each test did: bytes, seeks or files.
    pub const AMOUNT: [&str; 12] = [
        "putc_bytes",
        "put_block_bytes",
        "rewrite_bytes",
        "getc_bytes",
        "get_block_bytes",
        "seeks_count",
        "seq_create_files",
        "seq_stat_files",
        "seq_del_files",
        "ran_create_files",
        "ran_stat_files",
        "ran_del_files",
    ];
}

macro_rules! bonnie_figures {
    ($($i:literal)+) => {
        &[$(
            (bonnie::TESTS[$i], Derived),
            (bonnie::CPU[$i], Percent),
            (bonnie::SECS[$i], Seconds),
            (bonnie::LATENCY[$i], Max),
            (bonnie::AMOUNT[$i], Count),
        )+]
    };
}

pub const BONNIE: Personality =
    Personality { workload: "bonnie", figures: bonnie_figures!(0 1 2 3 4 5 6 7 8 9 10 11), derive: bonnie_rates };

/// Each test's rate from what it did over its time: K/sec for the data tests (bonnie++'s K is
/// 1024 bytes), seeks/sec, files/sec. A test that did not run has none.
fn bonnie_rates(f: &mut Figures) {
    for i in 0..12 {
        let (Some(amount), Some(secs)) = (f.get(bonnie::AMOUNT[i]).copied(), f.get(bonnie::SECS[i]).copied()) else {
            continue;
        };
        let unit = if i <= 4 { 1024.0 } else { 1.0 };
        f.insert(bonnie::TESTS[i].to_string(), per(amount / unit, secs));
    }
}

/// Every personality.
pub const PERSONALITIES: &[&Personality] = &[&POSTMARK, &MAILDIR, &REDOLOG, &VARMAIL, &BONNIE];

/// The personality of a workload (`postmark`, ...), if it has figures.
pub fn personality(workload: &str) -> Option<&'static Personality> {
    PERSONALITIES.iter().copied().find(|p| p.workload == workload)
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

impl Personality {
    /// The kind of figure `name` (a name no table knows: seconds when it ends in `_s`, else a
    /// count, so figures of an older run still combine).
    pub fn kind(&self, name: &str) -> Kind {
        self.figures.iter().find(|(n, _)| *n == name).map(|(_, k)| *k).unwrap_or(if name.ends_with("_s") {
            Seconds
        } else {
            Count
        })
    }

    /// Combine the figures of parts that ran at once (threads of a job, jobs of a phase, nodes
    /// of a run): see the module's rule.
    pub fn combine<'a>(&self, parts: impl IntoIterator<Item = &'a Figures>) -> Figures {
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
        maildir_rates(&mut a1);
        assert_eq!(a1["messages_per_min"], 600.0, "500 in 50 s");
        let c = MAILDIR.combine([&a1, &b]);
        assert_eq!(c["messages"], 900.0);
        assert_eq!((c["measured_s"], c["elapsed_s"], c["discard_s"]), (50.0, 60.0, 10.0));
        assert_eq!(c["messages_per_min"], 750.0 / 50.0 * 60.0, "recomputed, not 600 + 600");
    }

    #[test]
    fn cpu_is_averaged_and_a_worst_latency_is_the_worst() {
        let a = f(&[("seeks_count", 4000.0), ("seeks_s", 2.0), ("seeks_cpu", 40.0), ("seeks_latency_us", 900.0)]);
        let b = f(&[("seeks_count", 4192.0), ("seeks_latency_us", 1500.0)]);
        let c = BONNIE.combine([&a, &b]);
        assert_eq!(
            (c["seeks_count"], c["seeks"], c["seeks_cpu"], c["seeks_latency_us"]),
            (8192.0, 4096.0, 40.0, 1500.0)
        );
        let two = BONNIE.combine([&c, &f(&[("seeks_count", 8192.0), ("seeks_s", 4.0), ("seeks_cpu", 20.0)])]);
        assert_eq!((two["seeks"], two["seeks_cpu"]), (16384.0 / 4.0, 30.0), "two nodes: %CPU averaged");
        assert!(!two.contains_key("putc"), "a test that did not run has no rate");
        let kb = BONNIE.combine([&f(&[("put_block_bytes", 1048576.0), ("put_block_s", 2.0)])]);
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
        for p in PERSONALITIES {
            for (name, _) in p.figures {
                assert_eq!(p.kind(name), p.figures.iter().find(|x| x.0 == *name).unwrap().1);
            }
        }
    }
}
