//! The report's charts, drawn by plotters into SVG strings. Plotters is built without `ttf`:
//! text is laid out with its built-in size estimate and written as SVG `<text>`, which the
//! browser sets in its own fonts, so no font library or fontconfig is needed to build or draw.
//! Each chart keeps its legend in a column of its own to the right of the plot, so no legend
//! ever covers a line.

use plotters::coord::combinators::IntoLogRange;
use plotters::coord::ranged1d::{IntoSegmentedCoord, SegmentValue};
use plotters::prelude::*;

/// Size of every chart's SVG canvas; the page scales it to the width it has.
pub const WIDTH: u32 = 600;
pub const HEIGHT: u32 = 330;
const LEGEND_W: u32 = 160;
const FONT: &str = "sans-serif";

/// Colours that stay apart on screen and on paper (Tableau 10).
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0xba, 0xb0, 0xac),
];

const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);
const GRID: RGBColor = RGBColor(0xf0, 0xf0, 0xf0);
const GRID_BOLD: RGBColor = RGBColor(0xd4, 0xd4, 0xd4);

/// How a line is drawn, to tell apart series that share a colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dash {
    Solid,
    Dashed,
    Dotted,
}

impl Dash {
    /// The n-th style, for the n-th run of series that share a colour.
    pub fn nth(n: usize) -> Dash {
        [Dash::Solid, Dash::Dashed, Dash::Dotted][n % 3]
    }
}

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    /// Index into the palette.
    pub color: usize,
    pub dash: Dash,
}

pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// A number as an axis label: few digits, no trailing noise.
pub fn axis_num(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}").trim_end_matches(".0").to_string()
    } else if a >= 0.001 {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{v:.0e}")
    }
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

/// Plotters' SVG opens with a namespace attribute and fixed pixel sizes; inline in HTML the
/// namespace is implied, and the page sizes the chart from its viewBox.
fn tidy_svg(svg: String) -> String {
    let head = format!(r#"<svg width="{WIDTH}" height="{HEIGHT}" "#);
    svg.replacen(&head, r#"<svg class="plot" preserveAspectRatio="xMidYMid meet" "#, 1).replacen(
        r#" xmlns="http://www.w3.org/2000/svg""#,
        "",
        1,
    )
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn legend(area: &Area, entries: &[(String, RGBColor, Dash)]) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<_>| e.to_string();
    let row = 17;
    let top = 34;
    let max_rows = ((HEIGHT as i32 - top - 10) / row).max(1) as usize;
    let style = (FONT, 14).into_font().color(&INK);
    let shown = if entries.len() > max_rows { max_rows - 1 } else { entries.len() };
    for (i, (label, c, dash)) in entries.iter().take(shown).enumerate() {
        let y = top + i as i32 * row;
        let (x0, x1) = (6, 30);
        let st = ShapeStyle::from(c).stroke_width(2);
        match dash {
            Dash::Solid => area.draw(&PathElement::new(vec![(x0, y), (x1, y)], st)).map_err(e)?,
            Dash::Dashed => {
                for x in [x0, x0 + 10, x0 + 20] {
                    area.draw(&PathElement::new(vec![(x, y), ((x + 5).min(x1), y)], st)).map_err(e)?;
                }
            }
            Dash::Dotted => {
                for x in (x0..x1).step_by(5) {
                    area.draw(&PathElement::new(vec![(x, y), (x + 2, y)], st)).map_err(e)?;
                }
            }
        }
        area.draw(&Text::new(shorten(label, 20), (36, y - 7), style.clone())).map_err(e)?;
    }
    if shown < entries.len() {
        let y = top + shown as i32 * row;
        area.draw(&Text::new(format!("… {} more", entries.len() - shown), (36, y - 7), style)).map_err(e)?;
    }
    Ok(())
}

fn draw_line<DB: DrawingBackend, CT: CoordTranslate<From = (f64, f64)>>(
    chart: &mut ChartContext<DB, CT>,
    s: &Series,
) -> Result<(), String> {
    let c = color(s.color);
    let st = ShapeStyle::from(&c).stroke_width(2);
    let pts = s.points.iter().copied();
    let r = match s.dash {
        Dash::Solid => chart.draw_series(LineSeries::new(pts, st).point_size(if s.points.len() < 40 { 2 } else { 0 })),
        Dash::Dashed => chart.draw_series(DashedLineSeries::new(pts, 6, 4, st)),
        Dash::Dotted => chart.draw_series(DashedLineSeries::new(pts, 2, 4, st)),
    };
    r.map(|_| ()).map_err(|e| e.to_string())?;
    if s.dash != Dash::Solid && s.points.len() == 1 {
        // A dashed line of one point draws nothing: mark the point.
        chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, c.filled()))).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// A line chart of `series` over a linear x and y; y starts at 0 and ends above the highest
/// point (at least `y_min_top`, e.g. 100 for percentages when `y_fixed_top`).
pub fn line_chart(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    y_top: Option<f64>,
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (plot, side) = root.split_horizontally(WIDTH - LEGEND_W);
        let x_max = series.iter().flat_map(|s| &s.points).map(|p| p.0).fold(1.0f64, f64::max);
        let y_max = series.iter().flat_map(|s| &s.points).map(|p| p.1).fold(0.0f64, f64::max);
        let y_hi = y_top.unwrap_or(if y_max > 0.0 { y_max * 1.1 } else { 1.0 });
        let mut chart = ChartBuilder::on(&plot)
            .caption(title, (FONT, 20).into_font().color(&INK))
            .margin(8)
            .x_label_area_size(40)
            .y_label_area_size(58)
            .build_cartesian_2d(0f64..x_max, 0f64..y_hi)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_labels(8)
            .y_labels(6)
            .x_label_formatter(&|v| axis_num(*v))
            .y_label_formatter(&|v| axis_num(*v))
            .label_style((FONT, 15).into_font().color(&INK))
            .axis_desc_style((FONT, 15).into_font().color(&INK))
            .bold_line_style(GRID_BOLD)
            .light_line_style(GRID)
            .axis_style(INK)
            .draw()
            .map_err(|e| e.to_string())?;
        for s in series {
            draw_line(&mut chart, s)?;
        }
        legend(&side, &series.iter().map(|s| (s.label.clone(), color(s.color), s.dash)).collect::<Vec<_>>())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(tidy_svg(svg))
}

/// One set of latency percentiles for the percentile chart, in milliseconds, in the order of
/// [`PERCENTILES`].
#[derive(Debug, Clone)]
pub struct LatSet {
    pub label: String,
    pub ms: [f64; 5],
    pub color: usize,
    pub dash: Dash,
}

pub const PERCENTILES: [&str; 5] = ["p50", "p90", "p99", "p99.9", "max"];

fn decade_floor(v: f64) -> f64 {
    10f64.powf(v.log10().floor())
}

fn decade_ceil(v: f64) -> f64 {
    10f64.powf(v.log10().ceil())
}

/// Latency percentiles per set, one line with markers per set over p50…max, on a log y axis.
pub fn latency_chart(title: &str, sets: &[LatSet]) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (plot, side) = root.split_horizontally(WIDTH - LEGEND_W);
        let vals = sets.iter().flat_map(|s| s.ms).filter(|v| *v > 0.0);
        let (lo, hi) = vals.fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let (lo, hi) = if hi > 0.0 { (decade_floor(lo), decade_ceil(hi * 1.01)) } else { (0.001, 1.0) };
        let hi = if hi <= lo { lo * 10.0 } else { hi };
        let mut chart = ChartBuilder::on(&plot)
            .caption(title, (FONT, 20).into_font().color(&INK))
            .margin(8)
            .x_label_area_size(40)
            .y_label_area_size(58)
            .build_cartesian_2d((0i32..4).into_segmented(), (lo..hi).log_scale())
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("percentile")
            .y_desc("latency (ms, log scale)")
            .x_labels(5)
            .y_labels(8)
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
                    PERCENTILES.get(*i as usize).copied().unwrap_or("").to_string()
                }
                SegmentValue::Last => String::new(),
            })
            .y_label_formatter(&|v| axis_num(*v))
            .label_style((FONT, 15).into_font().color(&INK))
            .axis_desc_style((FONT, 15).into_font().color(&INK))
            .bold_line_style(GRID_BOLD)
            .light_line_style(GRID)
            .axis_style(INK)
            .draw()
            .map_err(|e| e.to_string())?;
        for s in sets {
            let c = color(s.color);
            let st = ShapeStyle::from(&c).stroke_width(2);
            let pts: Vec<(SegmentValue<i32>, f64)> =
                s.ms.iter()
                    .enumerate()
                    .filter(|(_, v)| **v > 0.0)
                    .map(|(i, v)| (SegmentValue::CenterOf(i as i32), *v))
                    .collect();
            let r = match s.dash {
                Dash::Solid => chart.draw_series(LineSeries::new(pts.clone(), st)),
                Dash::Dashed => chart.draw_series(DashedLineSeries::new(pts.clone(), 6, 4, st)),
                Dash::Dotted => chart.draw_series(DashedLineSeries::new(pts.clone(), 2, 4, st)),
            };
            r.map_err(|e| e.to_string())?;
            chart.draw_series(pts.iter().map(|p| Circle::new(p.clone(), 3, c.filled()))).map_err(|e| e.to_string())?;
        }
        legend(&side, &sets.iter().map(|s| (s.label.clone(), color(s.color), s.dash)).collect::<Vec<_>>())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(tidy_svg(svg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_text_without_a_font_library() {
        let s = Series { label: "#1 a<b".into(), points: vec![(1.0, 2.0), (2.0, 3.0)], color: 0, dash: Dash::Solid };
        let svg = line_chart("t", "time (s)", "MB/s", &[s], None).unwrap();
        assert!(svg.starts_with(r#"<svg class="plot""#), "{}", &svg[..80]);
        assert!(svg.contains("time (s)") && svg.contains("MB/s") && svg.contains("#1 a&lt;b"), "{svg}");
        assert!(!svg.contains("http"));
        let l = LatSet { label: "r".into(), ms: [0.1, 0.2, 1.0, 3.0, 40.0], color: 1, dash: Dash::Dashed };
        let svg = latency_chart("lat", &[l]).unwrap();
        assert!(svg.contains("\np99.9\n") && svg.contains("log scale"), "{svg}");
    }

    #[test]
    fn axis_numbers() {
        assert_eq!(axis_num(0.0), "0");
        assert_eq!(axis_num(0.5), "0.5");
        assert_eq!(axis_num(0.001), "0.001");
        assert_eq!(axis_num(0.0001), "1e-4");
        assert_eq!(axis_num(12.0), "12");
        assert_eq!(axis_num(12.5), "12.5");
        assert_eq!(axis_num(250.0), "250");
        assert_eq!(axis_num(25000.0), "25k");
        assert_eq!(axis_num(2_500_000.0), "2.5M");
    }
}
