//! Run selectors, as every command that takes RUN reads them: an id, `last`, `last~N`, `all`,
//! a range `A..B` (each end an id or `last~N`; `A..` runs to the last), or
//! `key=value[,key=value]` for every run carrying those labels.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    Id(i64),
    /// `last` is `Last(0)`, `last~2` is `Last(2)`.
    Last(u32),
    Labels(Vec<(String, String)>),
    /// Every run.
    All,
    /// `A..B`, both ends included; `A..` to the last run.
    Range(End, Option<End>),
}

/// One end of a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Id(i64),
    /// `last~N`.
    Last(u32),
}

impl End {
    /// The position in `ids` (ascending) this end stands at: an id's own or the first after
    /// it (`upper`: the last before it); `last~N` counted from the end, the first run when N
    /// reaches past it.
    fn position(self, ids: &[i64], upper: bool) -> Option<usize> {
        match self {
            End::Id(id) if upper => ids.iter().rposition(|&i| i <= id),
            End::Id(id) => ids.iter().position(|&i| i >= id),
            End::Last(n) => Some(ids.len().checked_sub(1)?.saturating_sub(n as usize)),
        }
    }
}

impl Selector {
    /// The runs of `ids` (every run's id, ascending) an id, `last~N`, `all` or a range names,
    /// in ascending order; `None` for a label selector, which the store looks up.
    pub fn pick(&self, ids: &[i64]) -> Option<Vec<i64>> {
        Some(match *self {
            Selector::Id(id) => ids.iter().copied().filter(|&i| i == id).collect(),
            Selector::Last(n) => ids.len().checked_sub(1 + n as usize).map(|i| vec![ids[i]]).unwrap_or_default(),
            Selector::All => ids.to_vec(),
            Selector::Range(a, b) => {
                let from = a.position(ids, false);
                let to = b.map_or(ids.len().checked_sub(1), |b| b.position(ids, true));
                match (from, to) {
                    (Some(f), Some(t)) if f <= t => ids[f..=t].to_vec(),
                    _ => Vec::new(),
                }
            }
            Selector::Labels(_) => return None,
        })
    }
}

/// Text that is no run selector; it keeps the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a run selector; use an id (42), last, last~N, all, a range (3..7, last~4..), or a label such as config=ext4")]
pub struct BadSelector(pub String);

pub fn parse_selector(s: &str) -> Result<Selector, BadSelector> {
    let s = s.trim();
    let bad = || BadSelector(s.to_string());
    if let Ok(id) = s.parse::<i64>() {
        return if id > 0 { Ok(Selector::Id(id)) } else { Err(bad()) };
    }
    if s == "last" {
        return Ok(Selector::Last(0));
    }
    if let Some(n) = s.strip_prefix("last~") {
        if !n.contains("..") {
            return n.parse().map(Selector::Last).map_err(|_| bad());
        }
    }
    if s == "all" {
        return Ok(Selector::All);
    }
    if let Some((a, b)) = s.split_once("..") {
        let end = |t: &str| -> Result<End, BadSelector> {
            match t {
                "last" => Ok(End::Last(0)),
                t => match t.strip_prefix("last~") {
                    Some(n) => n.parse().map(End::Last).map_err(|_| bad()),
                    None => t.parse::<i64>().ok().filter(|&i| i > 0).map(End::Id).ok_or_else(bad),
                },
            }
        };
        let from = end(a)?;
        let to = if b.is_empty() { None } else { Some(end(b)?) };
        // Two ids out of order name nothing: say so rather than match no run.
        if let (End::Id(x), Some(End::Id(y))) = (from, to) {
            if x > y {
                return Err(bad());
            }
        }
        return Ok(Selector::Range(from, to));
    }
    if s.contains('=') {
        let mut pairs = Vec::new();
        for part in s.split(',') {
            let (k, v) = part.split_once('=').ok_or_else(bad)?;
            if k.trim().is_empty() {
                return Err(bad());
            }
            pairs.push((k.trim().to_string(), v.to_string()));
        }
        return Ok(Selector::Labels(pairs));
    }
    Err(bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_text_is_a_selector_or_an_error() {
        // A cheap in-CI fuzz: every short string over a selector-ish alphabet, no panic.
        let alphabet = ['l', 'a', 's', 't', '~', '=', ',', '1', '0', '-', ' '];
        let mut buf = String::new();
        fn walk(buf: &mut String, alphabet: &[char], depth: usize) {
            let _ = parse_selector(buf);
            if depth == 0 {
                return;
            }
            for c in alphabet {
                buf.push(*c);
                walk(buf, alphabet, depth - 1);
                buf.pop();
            }
        }
        walk(&mut buf, &alphabet, 5);
    }

    #[test]
    fn selectors() {
        assert_eq!(parse_selector("42"), Ok(Selector::Id(42)));
        assert_eq!(parse_selector("last"), Ok(Selector::Last(0)));
        assert_eq!(parse_selector("last~3"), Ok(Selector::Last(3)));
        assert_eq!(
            parse_selector("config=ext4 barrier=0"),
            Ok(Selector::Labels(vec![("config".into(), "ext4 barrier=0".into())]))
        );
        assert_eq!(
            parse_selector("a=1,b=2"),
            Ok(Selector::Labels(vec![("a".into(), "1".into()), ("b".into(), "2".into())]))
        );
        for bad in
            ["", "0", "-1", "lastly", "last~x", "=v", "foo", "7..3", "..", "..5", "1..x", "0..4", "last~..", "alll"]
        {
            assert!(parse_selector(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn all_and_ranges_pick_in_order() {
        let ids = [2, 3, 5, 8, 9];
        let pick = |s: &str| parse_selector(s).unwrap().pick(&ids).unwrap();
        assert_eq!(pick("all"), ids);
        assert_eq!(pick("3..8"), [3, 5, 8]);
        assert_eq!(pick("4..7"), [5], "ends that are no run's id still bound the range");
        assert_eq!(pick("5.."), [5, 8, 9]);
        assert_eq!(pick("last~2.."), [5, 8, 9]);
        assert_eq!(pick("last~1..last"), [8, 9]);
        assert_eq!(pick("last~99.."), ids, "a range reaching past the first run starts there");
        assert_eq!(pick("3..last~3"), [3]);
        assert_eq!(pick("10.."), Vec::<i64>::new());
        assert_eq!(pick("last~1"), [8]);
        assert_eq!(pick("last~5"), Vec::<i64>::new());
        assert_eq!(pick("5"), [5]);
        assert_eq!(pick("last~1..last~3"), Vec::<i64>::new(), "reversed: nothing");
        assert!(parse_selector("config=x").unwrap().pick(&ids).is_none());
        assert!(Selector::All.pick(&[]).unwrap().is_empty());
    }
}
