//! A run's `--label`s as Prometheus labels: names made to Prometheus's rule
//! (`[a-zA-Z_][a-zA-Z0-9_]*`, no leading `__`), kept off the names iolab's own series use, and
//! values stripped of a URL's password, so a label can never carry a secret iolab was given.

/// The label names iolab's own series use (and Prometheus's own): a run label of one of these
/// names is exposed as `label_NAME`.
pub const RESERVED: &[&str] = &[
    "node",
    "run_id",
    "job",
    "class",
    "phase",
    "device",
    "interface",
    "mode",
    "status",
    "kind",
    "version",
    "error",
    "level",
    "le",
    "quantile",
    "instance",
];

/// A label name made valid: each character outside `[a-zA-Z0-9_]` becomes `_`, a leading digit
/// gets a `_` before it, and a name reserved (iolab's or Prometheus's `__` prefix) gets `label_`.
pub fn name(raw: &str) -> String {
    let mut s: String = raw.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    if s.starts_with("__") || RESERVED.contains(&s.as_str()) {
        s.insert_str(0, "label_");
    }
    s
}

/// A label value with any URL's password taken out (`postgres://u:pw@h/db` becomes
/// `postgres://u@h/db`): a label never repeats a secret.
pub fn value(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        // The authority runs to the next '/', '?', '#' or whitespace; its userinfo to the last '@'.
        let end = tail.find(|c: char| "/?#".contains(c) || c.is_whitespace()).unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(u) => {
                let user = &authority[..u];
                out.push_str(user.split_once(':').map_or(user, |(name, _)| name));
                out.push_str(&authority[u..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// A run's labels as exposed: names made valid, values without passwords; a name that comes
/// twice after that keeps its first value.
pub fn of_run(labels: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (k, v) in labels {
        let k = name(k);
        if !out.iter().any(|(n, _)| *n == k) {
            out.push((k, value(v)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_prometheus_s_rule_and_keep_off_iolab_s_own() {
        assert_eq!(name("config"), "config");
        assert_eq!(name("fs-type.v2"), "fs_type_v2");
        assert_eq!(name("2node"), "_2node");
        assert_eq!(name("ünï"), "_n_");
        assert_eq!(name(""), "_");
        assert_eq!(name("node"), "label_node");
        assert_eq!(name("run_id"), "label_run_id");
        assert_eq!(name("__name__"), "label___name__");
        let valid = |s: &str| {
            s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !s.starts_with("__")
        };
        for raw in ["a b", "-", "9", "__x", "le", "x\"y", "😀"] {
            assert!(valid(&name(raw)), "{raw:?} -> {:?}", name(raw));
        }
    }

    #[test]
    fn values_lose_a_url_s_password_and_nothing_else() {
        assert_eq!(value("ext4 barrier=0"), "ext4 barrier=0");
        assert_eq!(value("postgres://iolab:s3cr3t@db.lab:5432/results"), "postgres://iolab@db.lab:5432/results");
        assert_eq!(value("see https://a:b@h/x?y and ssh://root@n1"), "see https://a@h/x?y and ssh://root@n1");
        assert_eq!(value("postgres://u:p:q@h"), "postgres://u@h");
        assert_eq!(value("http://host/a@b"), "http://host/a@b");
        assert_eq!(value("x://"), "x://");
    }

    #[test]
    fn a_name_that_comes_twice_keeps_its_first_value() {
        let l = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(of_run(&[l("a-b", "1"), l("a_b", "2"), l("node", "n")]), [l("a_b", "1"), l("label_node", "n")]);
    }
}
