//! Text from users, traces and the network (labels, run, job and phase names, paths, a peer's
//! message) made safe where it is shown: a control character never reaches a terminal raw,
//! where it could move the cursor, recolour the screen, set the window's title or forge a line.
//! ESC shows as `\e`, a newline, tab or carriage return as `\n`, `\t`, `\r`; any other control
//! character (C0, DEL, C1) and the bidirectional overrides as U+FFFD. Here, at the bottom of the
//! crates, so the report (terminal, CSV, HTML) and the cluster's logs escape alike.

use std::borrow::Cow;

/// Whether `c` is shown escaped: a C0 or C1 control, DEL, or a bidirectional override or
/// isolate (which reorder what a terminal shows).
pub fn unsafe_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn escape(s: &str, keep_newlines: bool) -> Cow<'_, str> {
    if !s.chars().any(|c| unsafe_char(c) && !(keep_newlines && c == '\n')) {
        return Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' if keep_newlines => o.push('\n'),
            '\u{1b}' => o.push_str("\\e"),
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            '\r' => o.push_str("\\r"),
            c if unsafe_char(c) => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    Cow::Owned(o)
}

/// One line of text (a name, a label, a path) as it may be shown: every control character
/// escaped, newlines included.
pub fn safe(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// Several lines (an error message): newlines kept, every other control character escaped.
pub fn safe_lines(s: &str) -> Cow<'_, str> {
    escape(s, true)
}
