//! A personality's own figures as its module declares them: each figure's name (the original
//! tool's) and kind, and how its rates follow from the rest. How several parts' figures combine
//! is the model crate's rule (`iolab_model::figures`); what there is to combine is declared here,
//! beside the personality's options, so a personality's figures live in its own file.

use std::collections::BTreeMap;

/// A set of figures, by name.
pub type Figures = BTreeMap<String, f64>;

/// What a figure is, which says how several combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Things done (files created, bytes written): added up; a whole number in the JSON.
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
pub struct FigureTable {
    pub workload: &'static str,
    pub figures: &'static [(&'static str, Kind)],
    /// Figures in words, for people.
    pub words: &'static [(&'static str, &'static str)],
    pub derive: fn(&mut Figures),
}

impl FigureTable {
    /// The kind of figure `name` (a name the table does not know: seconds when it ends in
    /// `_s`, else a count, so figures of an older run still combine).
    pub fn kind(&self, name: &str) -> Kind {
        self.figures.iter().find(|(n, _)| *n == name).map(|(_, k)| *k).unwrap_or_else(|| guess(name))
    }
}

/// A figure in words for people: the words its personality gives it (in `tables`, the
/// personality running `workload` first), else its name read plainly (`_per_s` "per second",
/// `_per_min` "per minute", `_s` "seconds", underscores as spaces).
pub fn words(tables: &[FigureTable], workload: Option<&str>, name: &str) -> String {
    let own = tables.iter().filter(|t| Some(t.workload) == workload);
    let others = tables.iter().filter(|t| Some(t.workload) != workload);
    if let Some((_, w)) = own.chain(others).flat_map(|t| t.words.iter()).find(|(n, _)| *n == name) {
        return (*w).to_string();
    }
    let (stem, tail) = if let Some(s) = name.strip_suffix("_per_s") {
        (s, " per second")
    } else if let Some(s) = name.strip_suffix("_per_min") {
        (s, " per minute")
    } else if let Some(s) = name.strip_suffix("_s") {
        (s, ", seconds")
    } else {
        (name, "")
    };
    format!("{}{tail}", stem.replace('_', " "))
}

/// The kind of a figure no table names: seconds when it ends in `_s`, else a count.
pub fn guess(name: &str) -> Kind {
    if name.ends_with("_s") {
        Kind::Seconds
    } else {
        Kind::Count
    }
}

/// A figure, 0 when absent.
pub fn get(f: &Figures, k: &str) -> f64 {
    f.get(k).copied().unwrap_or(0.0)
}

/// `n` per `s`, 0 over no time.
pub fn per(n: f64, s: f64) -> f64 {
    if s > 0.0 {
        n / s
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_said_in_words_their_personality_first() {
        let t = crate::FIGURE_TABLES;
        assert_eq!(words(t, Some("postmark"), "created_mixed_per_s"), "files created per second, mixed phase");
        // The same name in two personalities: the one running says it.
        assert_eq!(words(t, Some("maildir"), "bytes_read"), "bytes read by the readers");
        assert_eq!(words(t, Some("postmark"), "bytes_read"), "bytes read");
        // A figure no personality words is read plainly.
        assert_eq!(words(t, None, "put_block_per_s"), "put block per second");
        assert_eq!(words(t, None, "flush_s"), "flush, seconds");
        assert_eq!(words(t, None, "ops"), "ops");
    }
}
