//! The report's HTML building blocks, below every section that writes HTML (the report, the
//! nodes' tables, validation's findings): text escaped for HTML, and a chart in its figure.

use crate::charts::ChartError;
use std::fmt::Write;

/// Escape text for HTML element content and attribute values; control characters (ESC among
/// them) become U+FFFD (`crate::text`).
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars().map(crate::text::html_safe) {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A chart in its figure, or a note saying why there is none.
pub(crate) fn figure(
    h: &mut String,
    marker: &str,
    result: Option<Result<String, ChartError>>,
    caption: &str,
    empty: &str,
) {
    match result {
        Some(Ok(svg)) => {
            let _ = write!(
                h,
                "<figure class=\"chart\" data-chart=\"{m}\">\n{svg}<figcaption>{c}</figcaption>\n</figure>\n",
                m = escape(marker),
                c = caption
            );
        }
        Some(Err(e)) => {
            let _ = writeln!(
                h,
                "<p class=\"note\" data-chart-skipped=\"{}\">Chart could not be drawn: {}</p>",
                escape(marker),
                escape(&e.to_string())
            );
        }
        None => {
            let _ = writeln!(h, "<p class=\"note\" data-chart-skipped=\"{}\">{}</p>", escape(marker), empty);
        }
    }
}
