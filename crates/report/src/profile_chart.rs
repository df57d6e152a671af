//! A survey's profile as one picture, as seed 003's author drew NFS against OCFS2 by hand: a
//! row per step, and in it a bar per survey (storage A against B), each as long as its figure
//! against the row's largest and labelled with the figure in its unit and its p99 latency.
//! Steps come in different units (MB/s, IOPS, commits/s, transactions/s), so each row has its
//! own scale: what a row compares is the surveys. Plain SVG, no fonts needed beyond the page's.

use crate::charts::color;
use crate::fmt::{count, ms, num};
use crate::markup::escape;
use crate::survey::Figure;
use std::fmt::Write;

const WIDTH: f64 = 980.0;
const LABEL_W: f64 = 250.0;
const BAR_W: f64 = 400.0;
const BAR_H: f64 = 16.0;
const ROW_GAP: f64 = 10.0;
const TOP: f64 = 8.0;

/// One survey in the picture: its name in the legend, and its steps' figures in order.
pub struct Survey<'a> {
    pub name: String,
    pub steps: &'a [(String, Option<Figure>)],
}

fn figure_words(f: &Figure) -> String {
    let v = if f.value >= 100.0 { count(f.value) } else { num(f.value) };
    if f.p99_ns > 0 {
        format!("{v} {} · p99 {} ms", f.unit, ms(f.p99_ns))
    } else {
        format!("{v} {}", f.unit)
    }
}

/// The picture: the steps any survey ran, in the order the first survey ran them (then those
/// only later ones ran), a bar per survey in each.
pub fn svg(surveys: &[Survey]) -> String {
    let mut steps: Vec<&str> = Vec::new();
    for s in surveys {
        for (t, _) in s.steps {
            if !steps.contains(&t.as_str()) {
                steps.push(t);
            }
        }
    }
    let n = surveys.len().max(1) as f64;
    let legend_h = if surveys.len() > 1 { 22.0 } else { 0.0 };
    let row_h = n * BAR_H + ROW_GAP;
    let height = TOP + legend_h + row_h * steps.len() as f64 + 4.0;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<svg class=\"plot profile\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {height:.0}\" role=\"img\" aria-label=\"survey profile\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    if surveys.len() > 1 {
        let mut x = LABEL_W;
        for (i, s) in surveys.iter().enumerate() {
            let c = color(i);
            let _ = writeln!(
                o,
                "<rect x=\"{x:.0}\" y=\"{:.0}\" width=\"12\" height=\"12\" fill=\"#{:02X}{:02X}{:02X}\"/><text x=\"{:.0}\" y=\"{:.0}\">{}</text>",
                TOP,
                c.0,
                c.1,
                c.2,
                x + 16.0,
                TOP + 10.0,
                escape(&s.name)
            );
            x += 24.0 + 7.0 * s.name.chars().count() as f64;
        }
    }
    for (row, step) in steps.iter().enumerate() {
        let y0 = TOP + legend_h + row as f64 * row_h;
        let figs: Vec<Option<&Figure>> =
            surveys.iter().map(|s| s.steps.iter().find(|(t, _)| t == step).and_then(|(_, f)| f.as_ref())).collect();
        let max = figs.iter().flatten().map(|f| f.value).fold(0.0, f64::max);
        let _ = writeln!(o, "<text x=\"4\" y=\"{:.0}\">{}</text>", y0 + (n * BAR_H) / 2.0 + 4.0, escape(step));
        if row > 0 {
            let _ = writeln!(
                o,
                "<line x1=\"0\" x2=\"{WIDTH}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#d5dae0\"/>",
                y0 - ROW_GAP / 2.0,
                y0 - ROW_GAP / 2.0
            );
        }
        for (i, f) in figs.iter().enumerate() {
            let y = y0 + i as f64 * BAR_H;
            let c = color(i);
            match f {
                Some(f) => {
                    let w = if max > 0.0 { (f.value / max * BAR_W).max(1.0) } else { 1.0 };
                    let _ = writeln!(
                        o,
                        "<rect x=\"{LABEL_W}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"#{:02X}{:02X}{:02X}\"><title>{}</title></rect>\
                         <text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                        y + 1.0,
                        BAR_H - 3.0,
                        c.0,
                        c.1,
                        c.2,
                        escape(&format!("{}: {}", surveys[i].name, figure_words(f))),
                        LABEL_W + w + 6.0,
                        y + BAR_H - 4.0,
                        escape(&figure_words(f))
                    );
                }
                None => {
                    let _ = writeln!(
                        o,
                        "<text x=\"{LABEL_W}\" y=\"{:.1}\" fill=\"#5b6670\">not run</text>",
                        y + BAR_H - 4.0
                    );
                }
            }
        }
    }
    o.push_str("</svg>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_surveys_side_by_side_each_row_on_its_own_scale() {
        let a = vec![
            ("random read 4 KiB, QD32".to_string(), Some(Figure { value: 72_485.0, unit: "IOPS", p99_ns: 564_000 })),
            ("append 4 KiB + fsync".to_string(), Some(Figure { value: 5381.0, unit: "commits/s", p99_ns: 242_000 })),
        ];
        let b = vec![
            ("random read 4 KiB, QD32".to_string(), Some(Figure { value: 36_242.5, unit: "IOPS", p99_ns: 1_900_000 })),
            ("append 4 KiB + fsync".to_string(), None),
        ];
        let s = svg(&[Survey { name: "nfs <A>".into(), steps: &a }, Survey { name: "ocfs2".into(), steps: &b }]);
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert!(s.contains("72,485 IOPS · p99 0.564 ms") && s.contains("36,243 IOPS · p99 1.90 ms"), "{s}");
        assert!(s.contains("nfs &lt;A&gt;") && !s.contains("nfs <A>"), "names are escaped");
        // The larger of a row is the full bar; the other is to scale: half of it.
        assert!(s.contains("width=\"400.0\"") && s.contains("width=\"200.0\""), "{s}");
        assert!(s.contains("not run"), "a step one survey lacks says so");
        assert_eq!(s.matches("<rect").count(), 2 + 3, "two legend marks and three bars");
    }
}
