//! Data validation (`phases[].verify`) in words: the terminal's lines under a phase and the
//! HTML report's table, with the first errors located. The journal's own writes are the
//! `journal` operation class, shown with the others.

use crate::fmt::{count, fmt_binary};
use crate::markup::escape;
use iolab_model::{ErrorClass, VerifyResult};
use std::fmt::Write;

/// Errors listed in the terminal under a phase (the JSON has every one kept).
pub const SHOWN: usize = 10;

/// What was checked, in one line.
pub fn checked_words(v: &VerifyResult) -> String {
    let mut parts = Vec::new();
    if v.checked_during > 0 {
        parts.push(format!("{} by the workload's reads", count(v.checked_during as f64)));
    }
    if v.checked_before_rewrite > 0 {
        parts.push(format!("{} before rewriting", count(v.checked_before_rewrite as f64)));
    }
    if v.checked_after > 0 {
        parts.push(format!("{} read back after", count(v.checked_after as f64)));
    }
    let checked = if parts.is_empty() { "none checked".to_string() } else { format!("checked {}", parts.join(", ")) };
    if v.blocks_written == 0 {
        return format!("key blocks of {}, {checked}", fmt_binary(v.key_block as f64));
    }
    format!("{} key blocks of {} written, {checked}", count(v.blocks_written as f64), fmt_binary(v.key_block as f64))
}

/// The errors per class in words (`2 torn block (mixed keys), 1 lost write (older key)`).
pub fn errors_words(v: &VerifyResult) -> String {
    ErrorClass::ALL
        .iter()
        .filter(|c| v.errors.get(**c) > 0)
        .map(|c| format!("{} {}", count(v.errors.get(*c) as f64), c.words()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The terminal's lines for a phase's validation.
pub fn terminal(v: &VerifyResult) -> String {
    let mut s = String::new();
    let journal = match (&v.journal, &v.journal_sync) {
        (Some(d), Some(sync)) => format!(" [journal {d}, {sync}]"),
        (Some(d), None) => format!(" [journal {d}]"),
        _ => String::new(),
    };
    let pending = if v.pending > 0 {
        format!("; {} write(s) pending at the crash, either key accepted", count(v.pending as f64))
    } else {
        String::new()
    };
    let n = v.errors.total();
    if n == 0 {
        let _ = writeln!(s, "  verify: {}{pending}; no errors{journal}", checked_words(v));
        return s;
    }
    let _ = writeln!(s, "  verify: {}{pending}{journal}", checked_words(v));
    let stopped = if v.stopped { " (stopped at --max-errors)" } else { "" };
    let _ = writeln!(s, "  verify: {} BAD BLOCK(S){stopped}: {}", count(n as f64), errors_words(v));
    for e in v.first_errors.iter().take(SHOWN) {
        let _ = writeln!(s, "    - {e}");
    }
    if v.first_errors.len() > SHOWN || n as usize > v.first_errors.len() {
        let _ = writeln!(
            s,
            "    ({} of {} listed here; --output json lists the first {})",
            SHOWN.min(v.first_errors.len()),
            count(n as f64),
            v.first_errors.len()
        );
    }
    s
}

/// The report's "Data validation" table: one row per run and phase that validated, then the
/// first errors.
pub fn html(h: &mut String, rows: &[(String, String, &VerifyResult)]) {
    if rows.is_empty() {
        return;
    }
    h.push_str(
        "<h3>Data validation</h3>\n<div class=\"wide\"><table class=\"classes\">\n<tr><th>run</th><th>phase</th>\
         <th>written</th><th>checked</th><th>errors</th><th>journal</th></tr>\n",
    );
    for (run, phase, v) in rows {
        let errors = if v.errors.total() == 0 {
            "none".to_string()
        } else {
            format!("<span class=\"error\">{}</span>", escape(&errors_words(v)))
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{errors}</td><td>{}</td></tr>",
            escape(run),
            escape(phase),
            count(v.blocks_written as f64),
            count(v.checked() as f64),
            escape(&match (&v.journal, &v.journal_sync) {
                (Some(d), Some(s)) => format!("{d} ({s})"),
                (Some(d), None) => d.clone(),
                _ => "-".into(),
            })
        );
    }
    h.push_str("</table></div>\n");
    let errors: Vec<String> =
        rows.iter()
            .flat_map(|(run, phase, v)| {
                v.first_errors.iter().take(SHOWN).map(move |e| {
                    format!("<li>{}, phase {}: {}</li>", escape(run), escape(phase), escape(&e.to_string()))
                })
            })
            .collect();
    if !errors.is_empty() {
        let _ = writeln!(h, "<ul class=\"findings\">\n{}\n</ul>", errors.join("\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_model::{BlockError, ErrorCounts};

    #[test]
    fn errors_are_counted_by_class_and_located() {
        let mut errors = ErrorCounts::default();
        errors.add(ErrorClass::Torn, 1);
        let v = VerifyResult {
            key_block: 4096,
            blocks_written: 1000,
            checked_after: 900,
            errors,
            first_errors: vec![BlockError {
                class: ErrorClass::Torn,
                file: "/d/f".into(),
                offset: 8192,
                sector_offset: 10240,
                expected_key: 4,
                found_key: Some(3),
                found_time_unix_ns: Some(0),
                writer: Some("n1/0".into()),
                detail: "its 8 sectors disagree".into(),
                when: "after".into(),
            }],
            ..Default::default()
        };
        let t = terminal(&v);
        assert!(t.contains("1,000 key blocks of 4.0 KiB written, checked 900 read back after"), "{t}");
        assert!(t.contains("1 BAD BLOCK(S): 1 torn block (mixed keys)"), "{t}");
        assert!(t.contains("at offset 8192 of /d/f (first bad sector at 10240): expected key 4, found key 3"), "{t}");
        assert!(t.contains("by n1/0"), "{t}");
        let mut h = String::new();
        html(&mut h, &[("run 3".into(), "randrw".into(), &v)]);
        assert!(
            h.contains("<h3>Data validation</h3>") && h.contains("<td class=\"n\">1,000</td><td class=\"n\">900</td>"),
            "{h}"
        );
        assert!(h.contains("<span class=\"error\">1 torn block (mixed keys)</span>"), "{h}");
        assert!(h.contains("<li>run 3, phase randrw: torn block (mixed keys) at offset 8192 of /d/f"), "{h}");
        let clean = terminal(&VerifyResult { errors: ErrorCounts::default(), first_errors: vec![], ..v });
        assert!(clean.contains("no errors"), "{clean}");
    }
}
