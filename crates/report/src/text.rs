//! Text from users and traces (labels, run, job and phase names, paths, trace lines) made safe
//! where it is shown: a control character never reaches a terminal, a CSV cell or the HTML
//! report raw, where it could move the cursor, recolour the screen, set the window's title or
//! forge a line. ESC shows as `\e`, a newline, tab or carriage return as `\n`, `\t`, `\r`; any
//! other control character (C0, DEL, C1) and the bidirectional overrides as U+FFFD.

#[cfg(test)]
use std::borrow::Cow;

// The escaping itself lives with the spec, at the bottom of the crates, so the cluster's
// transport (which logs what peers send) shows text as the terminal, CSV and HTML here do.
pub use iolab_spec::shown::{safe, safe_lines, unsafe_char};

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
