//! Text from users and traces (labels, run, job and phase names, paths, trace lines) made safe
//! where it is shown: a control character never reaches a terminal, a CSV cell or the HTML
//! report raw, where it could move the cursor, recolour the screen, set the window's title or
//! forge a line. ESC shows as `\e`, a newline, tab or carriage return as `\n`, `\t`, `\r`; any
//! other control character (C0, DEL, C1) and the bidirectional overrides as U+FFFD.

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

/// For HTML: every control character but tab, newline and carriage return as U+FFFD (HTML
/// allows no other, and a browser shows nothing useful for them).
pub fn html_safe(c: char) -> char {
    if unsafe_char(c) && !matches!(c, '\t' | '\n' | '\r') {
        '\u{FFFD}'
    } else {
        c
    }
}

/// Bytes on their way to a terminal or a file, made safe whatever wrote them: each C0 control
/// but newline and tab, DEL, and each C1 control (UTF-8 `C2 80` to `C2 9F`) becomes `\e` (ESC)
/// or U+FFFD. Text already made safe and iolab's own output pass unchanged. Returns whether
/// anything was replaced.
pub fn filter_bytes(buf: &[u8], out: &mut Vec<u8>) -> bool {
    let mut changed = false;
    let mut i = 0;
    while i < buf.len() {
        let b = buf[i];
        match b {
            0x1b => {
                out.extend_from_slice(b"\\e");
                changed = true;
            }
            b'\n' | b'\t' => out.push(b),
            0x00..=0x1f | 0x7f => {
                out.extend_from_slice("\u{FFFD}".as_bytes());
                changed = true;
            }
            0xc2 if matches!(buf.get(i + 1), Some(0x80..=0x9f)) => {
                out.extend_from_slice("\u{FFFD}".as_bytes());
                changed = true;
                i += 1;
            }
            b => out.push(b),
        }
        i += 1;
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_plain_text_is_borrowed() {
        assert!(matches!(safe("config=ext4 barrier=0"), Cow::Borrowed(_)));
        assert!(matches!(safe("naïve 東京"), Cow::Borrowed(_)));
        assert_eq!(safe("\u{1b}[31mred\u{1b}[0m"), "\\e[31mred\\e[0m");
        assert_eq!(safe("\u{1b}]0;owned\u{7}"), "\\e]0;owned\u{FFFD}");
        assert_eq!(safe("a\nb\tc\rd"), "a\\nb\\tc\\rd");
        assert_eq!(safe("\u{9b}31m \u{7f} \u{202e}"), "\u{FFFD}31m \u{FFFD} \u{FFFD}");
        assert_eq!(safe_lines("one\ntwo\u{1b}"), "one\ntwo\\e");
        assert_eq!(html_safe('\u{1b}'), '\u{FFFD}');
        assert_eq!(html_safe('\n'), '\n');
    }

    #[test]
    fn bytes_are_filtered_as_text_is() {
        let mut out = Vec::new();
        assert!(!filter_bytes("plain ünïcode\n\tline".as_bytes(), &mut out));
        assert_eq!(out, "plain ünïcode\n\tline".as_bytes());
        out.clear();
        assert!(filter_bytes("\u{1b}[2J\r\u{9b}x\u{7}".as_bytes(), &mut out));
        assert_eq!(String::from_utf8(out).unwrap(), "\\e[2J\u{FFFD}\u{FFFD}x\u{FFFD}");
    }
}
