//! Run selectors, as every command that takes RUN reads them: an id, `last`, `last~N`, or
//! `key=value[,key=value]` for every run carrying those labels.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    Id(i64),
    /// `last` is `Last(0)`, `last~2` is `Last(2)`.
    Last(u32),
    Labels(Vec<(String, String)>),
}

/// Text that is no run selector; it keeps the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a run selector; use an id (42), last, last~N, or a label such as config=ext4")]
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
        return n.parse().map(Selector::Last).map_err(|_| bad());
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
        for bad in ["", "0", "-1", "lastly", "last~x", "=v", "foo"] {
            assert!(parse_selector(bad).is_err(), "{bad}");
        }
    }
}
