//! Inline SVG charts for the HTML report: generated here so that the file
//! needs no network, no script and no chart library, and opens anywhere.

use std::fmt::Write;

use chrono::{DateTime, Utc};

const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 260.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 44.0;
const BOTTOM: f64 = 36.0;
/// Restarts and run boundaries: a grey that no series uses.
const MARK_COLOR: &str = "#555555";
/// The pause budget: green, the colour of "within it".
const BUDGET_COLOR: &str = "#2ca02c";

/// Points a chart draws at most per series: about one per pixel column of
/// the plot. Longer series are cut into this many runs of neighbours and
/// each run drawn by its highest point, so a day of minutes keeps every
/// spike (an average would hide the pause that matters).
pub const MAX_POINTS: usize = 900;

/// One line (or set of dots) of a chart.
pub struct Series {
    pub name: String,
    pub color: &'static str,
    /// (x, y); x in seconds (epoch or since the run's start), sorted.
    pub points: Vec<(f64, f64)>,
}

#[derive(Default)]
pub enum XAxis {
    /// Wall-clock time, labelled HH:MM UTC.
    #[default]
    Time,
    /// Minutes since each run's start (compare's overlay).
    MinutesSinceStart,
}

#[derive(Default)]
pub enum Style {
    #[default]
    Lines,
    Dots,
}

/// A labelled line across the plot: at an x (a restart) or a y (a budget).
#[derive(Clone)]
pub struct Mark {
    pub at: f64,
    pub label: String,
}

#[derive(Default)]
pub struct Chart {
    pub title: String,
    pub y_label: String,
    pub x_axis: XAxis,
    pub style: Style,
    pub series: Vec<Series>,
    /// The x range to draw instead of the points' own: the charts of one
    /// report share it, so that one minute is at one place on every chart.
    /// Points outside it are left out.
    pub x_range: Option<(f64, f64)>,
    /// Vertical lines at these x (JVM restarts, the change between runs).
    pub x_marks: Vec<Mark>,
    /// Horizontal lines at these y (the pause budget); the y axis reaches them.
    pub y_marks: Vec<Mark>,
}

/// Keeps at most `max` points: consecutive runs of points, each by its
/// highest one.
pub fn downsample_max(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    if points.len() <= max || max == 0 {
        return points.to_vec();
    }
    let run = points.len().div_ceil(max);
    points
        .chunks(run)
        .filter_map(|chunk| chunk.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1)))
        .collect()
}

/// XML-escapes text for an element or an attribute.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A round step for about `target` ticks over `span`.
fn nice_step(span: f64, target: f64) -> f64 {
    let raw = (span / target).max(f64::MIN_POSITIVE);
    let magnitude = 10f64.powf(raw.log10().floor());
    let fraction = raw / magnitude;
    let nice = if fraction <= 1.0 {
        1.0
    } else if fraction <= 2.0 {
        2.0
    } else if fraction <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

fn tick_label(x_axis: &XAxis, x: f64) -> String {
    match x_axis {
        XAxis::Time => DateTime::<Utc>::from_timestamp(x as i64, 0)
            .map_or_else(String::new, |t| t.format("%H:%M").to_string()),
        XAxis::MinutesSinceStart => format!("{:.0} min", x / 60.0),
    }
}

fn y_tick_label(y: f64) -> String {
    if y.abs() >= 100.0 || y == y.trunc() {
        format!("{y:.0}")
    } else {
        format!("{y:.2}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

impl Chart {
    /// The chart as an `<svg>` element; a chart without points says so.
    pub fn render(&self) -> String {
        let series: Vec<(&Series, Vec<(f64, f64)>)> = self
            .series
            .iter()
            .map(|s| {
                let points: Vec<(f64, f64)> = s
                    .points
                    .iter()
                    .copied()
                    .filter(|(x, y)| x.is_finite() && y.is_finite())
                    .filter(|(x, _)| self.x_range.is_none_or(|(lo, hi)| (lo..=hi).contains(x)))
                    .collect();
                (s, downsample_max(&points, MAX_POINTS))
            })
            .collect();
        let all = || series.iter().flat_map(|(_, p)| p.iter());
        let mut svg = String::new();
        let _ = write!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img"><title>{}</title><text x="{LEFT}" y="18" class="title">{}</text>"#,
            escape(&self.title),
            escape(&self.title)
        );
        if all().next().is_none() {
            let _ = write!(
                svg,
                r#"<text x="{}" y="{}" class="empty">no data</text></svg>"#,
                WIDTH / 2.0,
                HEIGHT / 2.0
            );
            return svg;
        }
        let (mut x_min, mut x_max) = self.x_range.unwrap_or_else(|| {
            all().fold((f64::MAX, f64::MIN), |(lo, hi), (x, _)| {
                (lo.min(*x), hi.max(*x))
            })
        });
        if x_max <= x_min {
            x_min -= 30.0;
            x_max += 30.0;
        }
        let y_top = all()
            .map(|(_, y)| *y)
            .chain(self.y_marks.iter().map(|m| m.at).filter(|y| y.is_finite()))
            .fold(0.0f64, f64::max);
        let y_step = nice_step(if y_top > 0.0 { y_top } else { 1.0 }, 4.0);
        let y_max = (y_top / y_step).ceil().max(1.0) * y_step;
        let plot_w = WIDTH - LEFT - RIGHT;
        let plot_h = HEIGHT - TOP - BOTTOM;
        let px = |x: f64| LEFT + (x - x_min) / (x_max - x_min) * plot_w;
        let py = |y: f64| TOP + plot_h - y / y_max * plot_h;
        // The axes' ranges and the plot's box, for a reader (and the tests)
        // to place a time or a value without parsing ticks.
        let _ = write!(
            svg,
            r#"<rect class="plot" x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" data-x-min="{x_min}" data-x-max="{x_max}" data-y-max="{y_max}"/>"#
        );
        // Grid and y ticks.
        let mut y = 0.0;
        while y <= y_max + y_step / 2.0 {
            let _ = write!(
                svg,
                r#"<line x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}" class="grid"/><text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text>"#,
                WIDTH - RIGHT,
                py(y),
                py(y),
                LEFT - 6.0,
                py(y) + 4.0,
                y_tick_label(y)
            );
            y += y_step;
        }
        // X ticks: whole minutes (or hours) for time.
        let x_step = match self.x_axis {
            XAxis::Time | XAxis::MinutesSinceStart => {
                nice_step((x_max - x_min) / 60.0, 8.0).max(1.0) * 60.0
            }
        };
        let mut x = (x_min / x_step).ceil() * x_step;
        while x <= x_max {
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"#,
                px(x),
                HEIGHT - BOTTOM + 16.0,
                tick_label(&self.x_axis, x)
            );
            x += x_step;
        }
        let _ = write!(
            svg,
            r#"<text x="12" y="{:.1}" class="axis" transform="rotate(-90 12 {:.1})" text-anchor="middle">{}</text>"#,
            TOP + plot_h / 2.0,
            TOP + plot_h / 2.0,
            escape(&self.y_label)
        );
        self.render_marks(&mut svg, (x_min, x_max), &px, &py);
        for (index, (s, points)) in series.iter().enumerate() {
            match self.style {
                Style::Lines => {
                    let path: Vec<String> = points
                        .iter()
                        .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
                        .collect();
                    let _ = write!(
                        svg,
                        r#"<polyline class="series" fill="none" stroke="{}" stroke-width="1.6" points="{}"><title>{}</title></polyline>"#,
                        s.color,
                        path.join(" "),
                        escape(&s.name)
                    );
                }
                Style::Dots => {
                    for (x, y) in points {
                        let _ = write!(
                            svg,
                            r#"<circle class="series" cx="{:.1}" cy="{:.1}" r="2.2" fill="{}"/>"#,
                            px(*x),
                            py(*y),
                            s.color
                        );
                    }
                }
            }
            legend(&mut svg, index, s.color, &s.name);
        }
        svg.push_str("</svg>");
        svg
    }
}

impl Chart {
    /// The x marks inside the drawn range, each a dashed vertical line with
    /// its label at the top, and the y marks as dashed horizontal lines
    /// labelled at the right end.
    fn render_marks(
        &self,
        svg: &mut String,
        (x_min, x_max): (f64, f64),
        px: &dyn Fn(f64) -> f64,
        py: &dyn Fn(f64) -> f64,
    ) {
        for mark in self
            .x_marks
            .iter()
            .filter(|m| (x_min..=x_max).contains(&m.at))
        {
            let x = px(mark.at);
            // Labels of marks in the right half go to their left.
            let (dx, anchor) = if x > LEFT + (WIDTH - LEFT - RIGHT) / 2.0 {
                (-4.0, "end")
            } else {
                (4.0, "start")
            };
            let _ = write!(
                svg,
                r#"<line class="x-mark" x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{:.1}" stroke="{MARK_COLOR}" stroke-width="1.2" stroke-dasharray="5 3"/><text class="mark-label" x="{:.1}" y="{:.1}" font-size="11" stroke="white" stroke-width="3" paint-order="stroke" text-anchor="{anchor}" fill="{MARK_COLOR}">{}</text>"#,
                HEIGHT - BOTTOM,
                x + dx,
                TOP + 12.0,
                escape(&mark.label)
            );
        }
        for mark in self.y_marks.iter().filter(|m| m.at.is_finite()) {
            let y = py(mark.at);
            let _ = write!(
                svg,
                r#"<line class="y-mark" x1="{LEFT}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{BUDGET_COLOR}" stroke-width="1.2" stroke-dasharray="6 3"/><text class="mark-label" x="{:.1}" y="{:.1}" font-size="11" stroke="white" stroke-width="3" paint-order="stroke" text-anchor="end" fill="{BUDGET_COLOR}">{}</text>"#,
                WIDTH - RIGHT,
                WIDTH - RIGHT - 4.0,
                y - 4.0,
                escape(&mark.label)
            );
        }
    }
}

/// The `index`-th legend entry, in a row under the title.
fn legend(svg: &mut String, index: usize, color: &str, name: &str) {
    let x = LEFT + 170.0 * index as f64;
    let _ = write!(
        svg,
        r#"<rect x="{x:.1}" y="25" width="12" height="12" fill="{color}"/><text x="{:.1}" y="35" class="legend">{}</text>"#,
        x + 16.0,
        escape(name)
    );
}

/// A bar chart of counts per labelled bucket, one bar per series side by side.
pub fn bars(title: &str, labels: &[String], series: &[(&str, &'static str, Vec<u64>)]) -> String {
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img"><title>{}</title><text x="{LEFT}" y="18" class="title">{}</text>"#,
        escape(title),
        escape(title)
    );
    let top = series
        .iter()
        .flat_map(|(_, _, counts)| counts.iter())
        .copied()
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let slot = plot_w / labels.len().max(1) as f64;
    let bar = slot * 0.8 / series.len().max(1) as f64;
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text><line x1="{LEFT}" x2="{:.1}" y1="{TOP}" y2="{TOP}" class="grid"/>"#,
        LEFT - 6.0,
        TOP + 4.0,
        top,
        WIDTH - RIGHT
    );
    for (i, label) in labels.iter().enumerate() {
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"#,
            LEFT + slot * (i as f64 + 0.5),
            HEIGHT - BOTTOM + 16.0,
            escape(label)
        );
    }
    for (s, (name, color, counts)) in series.iter().enumerate() {
        for (i, &count) in counts.iter().enumerate() {
            let h = count as f64 / top * plot_h;
            let _ = write!(
                svg,
                r#"<rect class="series" x="{:.1}" y="{:.1}" width="{bar:.1}" height="{h:.1}" fill="{color}"><title>{}: {count}</title></rect>"#,
                LEFT + slot * i as f64 + slot * 0.1 + bar * s as f64,
                TOP + plot_h - h,
                escape(&labels[i])
            );
        }
        legend(&mut svg, s, color, name);
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downsampling_keeps_every_spike() {
        // A day of minutes, quiet but for three one-minute spikes.
        let mut points: Vec<(f64, f64)> = (0..1440).map(|m| (m as f64 * 60.0, 0.002)).collect();
        for spike in [7, 700, 1439] {
            points[spike].1 = 0.3 + spike as f64 / 1e4;
        }
        let kept = downsample_max(&points, 100);
        assert!(kept.len() <= 100);
        for spike in [7, 700, 1439] {
            assert!(
                kept.contains(&points[spike]),
                "spike at minute {spike} lost"
            );
        }
        assert_eq!(downsample_max(&points[..50], 100), points[..50].to_vec());
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
    }
}
