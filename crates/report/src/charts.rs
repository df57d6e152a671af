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

/// Why a chart could not be drawn: plotters' error, its cause (the SVG writer's) kept.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct ChartError(#[from] DrawingAreaErrorKind<std::io::Error>);

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

/// How a line is drawn, to tell apart series that share a colour and to tell runs apart on
/// paper in black and white: solid, or dashes of `on` pixels every `on + off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dash {
    Solid,
    Dashed,
    Dotted,
    LongDashed,
    SparseDashed,
    SparseDotted,
    DenseDashed,
    LongSparse,
}

impl Dash {
    /// Every style, in the order runs take them.
    pub const ALL: [Dash; 8] = [
        Dash::Solid,
        Dash::Dashed,
        Dash::Dotted,
        Dash::LongDashed,
        Dash::SparseDashed,
        Dash::SparseDotted,
        Dash::DenseDashed,
        Dash::LongSparse,
    ];

    /// The n-th style, for the n-th run (they repeat after eight).
    pub fn nth(n: usize) -> Dash {
        Dash::ALL[n % Dash::ALL.len()]
    }

    /// (dash, gap) in pixels, `None` for a solid line.
    pub fn pattern(self) -> Option<(u32, u32)> {
        match self {
            Dash::Solid => None,
            Dash::Dashed => Some((7, 4)),
            Dash::Dotted => Some((2, 3)),
            Dash::LongDashed => Some((16, 4)),
            Dash::SparseDashed => Some((7, 10)),
            Dash::SparseDotted => Some((2, 8)),
            Dash::DenseDashed => Some((4, 2)),
            Dash::LongSparse => Some((16, 10)),
        }
    }
}

/// A run's colour and line style in every chart where it has one line: the k-th run gets the
/// k-th colour and the k-th dash, so no two of the first eight runs look alike in colour or in
/// black and white, and no two of the first 40 share both.
pub fn run_style(k: usize) -> (usize, Dash) {
    (k % PALETTE.len(), Dash::nth(k))
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

fn legend(area: &Area, entries: &[(String, RGBColor, Dash)]) -> Result<(), ChartError> {
    let row = 17;
    let top = 34;
    let max_rows = ((HEIGHT as i32 - top - 10) / row).max(1) as usize;
    let style = (FONT, 14).into_font().color(&INK);
    let shown = if entries.len() > max_rows { max_rows - 1 } else { entries.len() };
    for (i, (label, c, dash)) in entries.iter().take(shown).enumerate() {
        let y = top + i as i32 * row;
        let (x0, x1) = (4, 32);
        let st = ShapeStyle::from(c).stroke_width(2);
        match dash.pattern() {
            None => area.draw(&PathElement::new(vec![(x0, y), (x1, y)], st))?,
            Some((on, off)) => {
                let (on, step) = (on as i32, (on + off) as i32);
                for x in (x0..x1).step_by(step as usize) {
                    area.draw(&PathElement::new(vec![(x, y), ((x + on).min(x1), y)], st))?;
                }
            }
        }
        area.draw(&Text::new(shorten(label, 20), (36, y - 7), style.clone()))?;
    }
    if shown < entries.len() {
        let y = top + shown as i32 * row;
        area.draw(&Text::new(format!("… {} more", entries.len() - shown), (36, y - 7), style))?;
    }
    Ok(())
}

fn draw_line<DB: DrawingBackend<ErrorType = std::io::Error>, CT: CoordTranslate<From = (f64, f64)>>(
    chart: &mut ChartContext<DB, CT>,
    s: &Series,
) -> Result<(), ChartError> {
    let c = color(s.color);
    let st = ShapeStyle::from(&c).stroke_width(2);
    let pts = s.points.iter().copied();
    let r = match s.dash.pattern() {
        None => chart.draw_series(LineSeries::new(pts, st).point_size(if s.points.len() < 40 { 2 } else { 0 })),
        Some((on, off)) => chart.draw_series(DashedLineSeries::new(pts, on, off, st)),
    };
    r?;
    if s.dash != Dash::Solid && s.points.len() == 1 {
        // A dashed line of one point draws nothing: mark the point.
        chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
    }
    Ok(())
}

/// Draws `series` on a chart with the given y range (linear or log) into `plot`: the caption,
/// the mesh with its axis descriptions, and the lines. A macro because plotters' linear and
/// log coordinates are different types.
macro_rules! lines_on {
    ($plot:expr, $title:expr, $x_desc:expr, $y_desc:expr, $x_max:expr, $y_range:expr, $series:expr) => {{
        let mut chart = ChartBuilder::on($plot)
            .caption($title, (FONT, 20).into_font().color(&INK))
            .margin(8)
            .x_label_area_size(40)
            .y_label_area_size(58)
            .build_cartesian_2d(0f64..$x_max, $y_range)?;
        chart
            .configure_mesh()
            .x_desc($x_desc)
            .y_desc($y_desc)
            .x_labels(8)
            .y_labels(6)
            .x_label_formatter(&|v| axis_num(*v))
            .y_label_formatter(&|v| axis_num(*v))
            .label_style((FONT, 15).into_font().color(&INK))
            .axis_desc_style((FONT, 15).into_font().color(&INK))
            .bold_line_style(GRID_BOLD)
            .light_line_style(GRID)
            .axis_style(INK)
            .draw()?;
        for s in $series {
            draw_line(&mut chart, s)?;
        }
    }};
}

/// A line chart of `series` over a linear x and y; y starts at 0 and ends a tenth above the
/// highest point, or at `y_top` (e.g. 100 for percentages).
pub fn line_chart(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    y_top: Option<f64>,
) -> Result<String, ChartError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE)?;
        let (plot, side) = root.split_horizontally(WIDTH - LEGEND_W);
        let x_max = series.iter().flat_map(|s| &s.points).map(|p| p.0).fold(1.0f64, f64::max);
        let y_max = series.iter().flat_map(|s| &s.points).map(|p| p.1).fold(0.0f64, f64::max);
        let y_hi = y_top.unwrap_or(if y_max > 0.0 { y_max * 1.1 } else { 1.0 });
        lines_on!(&plot, title, x_desc, y_desc, x_max, 0f64..y_hi, series);
        legend(&side, &series.iter().map(|s| (s.label.clone(), color(s.color), s.dash)).collect::<Vec<_>>())?;
        root.present()?;
    }
    Ok(tidy_svg(svg))
}

/// How far apart series are: the largest series' mean over the smallest's (positive points
/// only; 1 with fewer than two series that have any).
pub fn spread(series: &[Series]) -> f64 {
    let means: Vec<f64> = series
        .iter()
        .filter_map(|s| {
            let pos: Vec<f64> = s.points.iter().map(|p| p.1).filter(|v| *v > 0.0).collect();
            (!pos.is_empty()).then(|| pos.iter().sum::<f64>() / pos.len() as f64)
        })
        .collect();
    let (lo, hi) = means.iter().fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    if means.len() < 2 {
        1.0
    } else {
        hi / lo
    }
}

/// Series whose means differ by more than this get a log y axis ([`wants_log`]): 35 against
/// 1,266 MB/s on a linear axis flattens the slow one into the floor.
pub const LOG_SPREAD: f64 = 10.0;

/// Whether `series` differ by more than [`LOG_SPREAD`] times.
pub fn wants_log(series: &[Series]) -> bool {
    spread(series) > LOG_SPREAD
}

/// A line chart of `series` over a linear x and a log y spanning whole decades around the
/// positive points; a point at or below zero (a second with no I/O) is drawn on the axis' floor.
/// The y description should say "log scale".
pub fn line_chart_log(title: &str, x_desc: &str, y_desc: &str, series: &[Series]) -> Result<String, ChartError> {
    let vals = series.iter().flat_map(|s| &s.points).map(|p| p.1).filter(|v| *v > 0.0);
    let (lo, hi) = vals.fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if hi > 0.0 { (decade_floor(lo), decade_ceil(hi * 1.01)) } else { (0.1, 1.0) };
    let hi = if hi <= lo { lo * 10.0 } else { hi };
    let floored: Vec<Series> = series
        .iter()
        .map(|s| Series { points: s.points.iter().map(|&(x, y)| (x, y.max(lo))).collect(), ..s.clone() })
        .collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE)?;
        let (plot, side) = root.split_horizontally(WIDTH - LEGEND_W);
        let x_max = series.iter().flat_map(|s| &s.points).map(|p| p.0).fold(1.0f64, f64::max);
        lines_on!(&plot, title, x_desc, y_desc, x_max, (lo..hi).log_scale(), &floored);
        legend(&side, &series.iter().map(|s| (s.label.clone(), color(s.color), s.dash)).collect::<Vec<_>>())?;
        root.present()?;
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
pub fn latency_chart(title: &str, sets: &[LatSet]) -> Result<String, ChartError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE)?;
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
            .build_cartesian_2d((0i32..4).into_segmented(), (lo..hi).log_scale())?;
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
            .draw()?;
        for s in sets {
            let c = color(s.color);
            let st = ShapeStyle::from(&c).stroke_width(2);
            let pts: Vec<(SegmentValue<i32>, f64)> =
                s.ms.iter()
                    .enumerate()
                    .filter(|(_, v)| **v > 0.0)
                    .map(|(i, v)| (SegmentValue::CenterOf(i as i32), *v))
                    .collect();
            let r = match s.dash.pattern() {
                None => chart.draw_series(LineSeries::new(pts.clone(), st)),
                Some((on, off)) => chart.draw_series(DashedLineSeries::new(pts.clone(), on, off, st)),
            };
            r?;
            chart.draw_series(pts.iter().map(|p| Circle::new(p.clone(), 3, c.filled())))?;
        }
        legend(&side, &sets.iter().map(|s| (s.label.clone(), color(s.color), s.dash)).collect::<Vec<_>>())?;
        root.present()?;
    }
    Ok(tidy_svg(svg))
}

/// One bar of a [`bar_chart`].
#[derive(Debug, Clone)]
pub struct Bar {
    /// Under the bar (short: `1`, `4 a`).
    pub label: String,
    pub value: f64,
    /// Index into the palette.
    pub color: usize,
}

/// Bars side by side on a linear y axis from 0, each with its value above it; the legend
/// column explains the colours (`legend`: label and palette index).
pub fn bar_chart(
    title: &str,
    y_desc: &str,
    bars: &[Bar],
    legend_entries: &[(String, usize)],
) -> Result<String, ChartError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE)?;
        let (plot, side) = root.split_horizontally(WIDTH - LEGEND_W);
        let y_max = bars.iter().map(|b| b.value).fold(0.0f64, f64::max);
        let y_hi = if y_max > 0.0 { y_max * 1.15 } else { 1.0 };
        let n = bars.len().max(1) as i32;
        let mut chart = ChartBuilder::on(&plot)
            .caption(title, (FONT, 20).into_font().color(&INK))
            .margin(8)
            .x_label_area_size(40)
            .y_label_area_size(58)
            .build_cartesian_2d((0i32..n).into_segmented(), 0f64..y_hi)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .y_desc(y_desc)
            .x_labels(bars.len() + 1)
            .y_labels(6)
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
                    bars.get(*i as usize).map(|b| b.label.clone()).unwrap_or_default()
                }
                SegmentValue::Last => String::new(),
            })
            .y_label_formatter(&|v| axis_num(*v))
            .label_style((FONT, 15).into_font().color(&INK))
            .axis_desc_style((FONT, 15).into_font().color(&INK))
            .bold_line_style(GRID_BOLD)
            .light_line_style(GRID)
            .axis_style(INK)
            .draw()?;
        chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
            let i = i as i32;
            let mut r = Rectangle::new(
                [(SegmentValue::Exact(i), 0.0), (SegmentValue::Exact(i + 1), b.value)],
                color(b.color).filled(),
            );
            r.set_margin(0, 0, 6, 6);
            r
        }))?;
        chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
            Text::new(
                axis_num(b.value),
                (SegmentValue::CenterOf(i as i32), b.value + y_hi * 0.02),
                (FONT, 13).into_font().color(&INK).pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Center,
                    plotters::style::text_anchor::VPos::Bottom,
                )),
            )
        }))?;
        legend(&side, &legend_entries.iter().map(|(l, c)| (l.clone(), color(*c), Dash::Solid)).collect::<Vec<_>>())?;
        root.present()?;
    }
    Ok(tidy_svg(svg))
}

/// A steady-state convergence chart (issue 29, SNIA PTS's plot): the tracked value of every
/// round (or sample), the judged window shaded, the window's mean with its limits band (mean ±
/// half the range limit, PTS's 90%..110% of the mean), and the least-squares line across it.
pub fn convergence_chart(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    values: &[(f64, f64)],
    window: Option<&iolab_model::steady::Window>,
) -> Result<String, ChartError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE)?;
        let (plot, side) = root.split_horizontally(WIDTH - LEGEND_W);
        let x_max = values.iter().map(|p| p.0).fold(1.0f64, f64::max) + 0.5;
        let band =
            window.map(|w| (w.mean - w.range_limit.unwrap_or(0.0) / 2.0, w.mean + w.range_limit.unwrap_or(0.0) / 2.0));
        let y_max = values.iter().map(|p| p.1).chain(band.map(|b| b.1)).fold(0.0f64, f64::max);
        let y_hi = if y_max > 0.0 { y_max * 1.15 } else { 1.0 };
        let mut chart = ChartBuilder::on(&plot)
            .caption(title, (FONT, 20).into_font().color(&INK))
            .margin(8)
            .x_label_area_size(40)
            .y_label_area_size(58)
            .build_cartesian_2d(0.5f64..x_max, 0f64..y_hi)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_labels(10)
            .y_labels(6)
            .x_label_formatter(&|v| axis_num(*v))
            .y_label_formatter(&|v| axis_num(*v))
            .label_style((FONT, 15).into_font().color(&INK))
            .axis_desc_style((FONT, 15).into_font().color(&INK))
            .bold_line_style(GRID_BOLD)
            .light_line_style(GRID)
            .axis_style(INK)
            .draw()?;
        let mut entries = vec![("each round".to_string(), color(0), Dash::Solid)];
        if let Some(w) = window {
            let (a, b) = (w.first as f64 - 0.5, w.last as f64 + 0.5);
            chart.draw_series(std::iter::once(Rectangle::new(
                [(a, 0.0), (b, y_hi)],
                RGBColor(0xee, 0xf2, 0xf8).filled(),
            )))?;
            if let Some((lo, hi)) = band.filter(|_| w.range_limit.is_some()) {
                for y in [lo, hi] {
                    let st = ShapeStyle::from(&color(2)).stroke_width(1);
                    chart.draw_series(DashedLineSeries::new([(a, y), (b, y)], 6, 4, st))?;
                }
                entries.push(("limits band".to_string(), color(2), Dash::Dashed));
            }
            let mean = ShapeStyle::from(&color(3)).stroke_width(1);
            chart.draw_series(LineSeries::new([(a, w.mean), (b, w.mean)], mean))?;
            entries.push(("window mean".to_string(), color(3), Dash::Solid));
            let n = (w.last - w.first) as f64;
            let fit = [(w.first as f64, w.intercept), (w.last as f64, w.intercept + w.slope * n)];
            chart.draw_series(DashedLineSeries::new(fit, 3, 3, ShapeStyle::from(&color(1)).stroke_width(2)))?;
            entries.push(("fitted line".to_string(), color(1), Dash::Dotted));
        }
        draw_line(&mut chart, &Series { label: String::new(), points: values.to_vec(), color: 0, dash: Dash::Solid })?;
        legend(&side, &entries)?;
        root.present()?;
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

    /// The colours and dash patterns of a chart's lines, as the SVG draws them (grid and text
    /// are drawn in other colours and never dashed).
    fn line_styles(svg: &str) -> Vec<String> {
        let palette: Vec<String> =
            PALETTE.iter().map(|c| format!("stroke=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2)).collect();
        let set: std::collections::BTreeSet<String> =
            svg.lines().filter_map(|l| palette.iter().find(|p| l.contains(p.as_str())).cloned()).collect();
        set.into_iter().collect()
    }

    #[test]
    fn every_run_gets_its_own_colour_and_dash() {
        let styles: Vec<(usize, Dash)> = (0..8).map(run_style).collect();
        for (i, a) in styles.iter().enumerate() {
            for b in &styles[i + 1..] {
                assert!(a.0 != b.0 && a.1 != b.1, "{a:?} and {b:?}");
            }
        }
        let patterns: std::collections::BTreeSet<_> = Dash::ALL.iter().map(|d| d.pattern()).collect();
        assert_eq!(patterns.len(), 8, "eight distinct line styles");
        // Four runs on one chart: four colours in the SVG.
        let series: Vec<Series> = (0..4)
            .map(|k| {
                let (color, dash) = run_style(k);
                let points = (1..=5).map(|t| (t as f64, 100.0 + 10.0 * k as f64 + t as f64)).collect();
                Series { label: format!("#{k}"), points, color, dash }
            })
            .collect();
        let svg = line_chart("t", "time (s)", "MB/s", &series, None).unwrap();
        assert_eq!(line_styles(&svg).len(), 4, "{:?}", line_styles(&svg));
    }

    #[test]
    fn a_tenfold_spread_switches_the_axis_to_log() {
        let s = |label: &str, v: f64, color: usize| Series {
            label: label.into(),
            points: vec![(1.0, v), (2.0, v * 1.02), (3.0, 0.0)],
            color,
            dash: Dash::nth(color),
        };
        let near = [s("a", 900.0, 0), s("b", 1266.0, 1)];
        let far = [s("slow", 35.0, 0), s("fast", 1266.0, 1)];
        assert!(!wants_log(&near) && wants_log(&far), "{} {}", spread(&near), spread(&far));
        assert!(!wants_log(&far[..1]), "one series has no spread");
        let svg = line_chart_log("t", "time (s)", "MB/s (log scale)", &far).unwrap();
        assert!(svg.contains("log scale"));
        // Decades from 10 to 10,000 label the axis; the slow run sits two decades below.
        for tick in [">10<", ">100<", ">1000<"] {
            assert!(svg.replace('\n', "").contains(tick), "{tick} in the log axis");
        }
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
