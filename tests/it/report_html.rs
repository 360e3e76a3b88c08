//! `pausewatch report` and `compare --format html` rendered by a real
//! browser: headless Chromium (Debian package `chromium`, installed by
//! .ci/run) loads the file with nothing but the file itself, logs no
//! console error, builds every chart, and paints a screenshot of the right
//! size with the charts' colours in it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            let path = std::env::var_os("PATH")?;
            std::env::split_paths(&path)
                .map(|dir| dir.join(name))
                .find(|candidate| candidate.is_file())
        })
}

fn chromium_or_skip() -> Option<PathBuf> {
    common::or_skip(
        chromium(),
        "chromium is not installed (apt-get install chromium; .ci/run installs it)",
    )
}

/// Chromium's flags for a headless run that reaches nothing outside the file.
fn headless(browser: &Path, profile: &Path) -> Command {
    let mut command = Command::new(browser);
    command.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-extensions",
        "--enable-logging=stderr",
        "--v=0",
    ]);
    command.arg(format!("--user-data-dir={}", profile.display()));
    command
}

/// The page's DOM as Chromium built it, and the console messages it logged.
fn load(browser: &Path, page: &Path, work: &Path) -> (String, Vec<String>) {
    let output = headless(browser, &work.join("profile-dom"))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let console = String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|line| line.contains("CONSOLE"))
        .map(str::to_string)
        .collect();
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        console,
    )
}

/// A screenshot of `page`: (width, height, RGBA pixels).
fn screenshot(browser: &Path, page: &Path, work: &Path) -> (u32, u32, Vec<u8>) {
    let png_path = work.join("shot.png");
    let output = headless(browser, &work.join("profile-shot"))
        .arg(format!("--screenshot={}", png_path.display()))
        .arg("--window-size=1100,2600")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let mut decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&png_path).unwrap(),
    ));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    pixels.truncate(info.buffer_size());
    let rgba = match info.color_type {
        png::ColorType::Rgba => pixels,
        png::ColorType::Rgb => pixels
            .chunks(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect(),
        other => panic!("unexpected PNG colour type {other:?}"),
    };
    (info.width, info.height, rgba)
}

/// Pixels within a small distance of `rgb`.
fn pixels_near(rgba: &[u8], rgb: [u8; 3]) -> usize {
    rgba.chunks(4)
        .filter(|p| (0..3).all(|i| p[i].abs_diff(rgb[i]) <= 24))
        .count()
}

fn report(args: &[&str], out: &Path) {
    common::succeed(
        Command::new(common::PAUSEWATCH)
            .arg("report")
            .args(args)
            .arg("-o")
            .arg(out),
    );
}

fn compare_dir(run: &str, file: &str) -> String {
    common::root()
        .join("tests/fixtures/compare")
        .join(run)
        .join(file)
        .display()
        .to_string()
}

/// Nothing in the page reaches outside it: no script, stylesheet, image or
/// font by URL (the only URL is the SVG namespace).
fn assert_self_contained(html: &str) {
    let without_namespace = html.replace("http://www.w3.org/2000/svg", "");
    for reference in ["http://", "https://", "src=", "<link", "url("] {
        assert!(
            !without_namespace.contains(reference),
            "the page references {reference}"
        );
    }
}

#[test]
fn the_console_check_sees_an_error() {
    // The check the other tests make means something: a page that logs a
    // console error is caught by it.
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let page = common::write_file(
        work.path(),
        "broken.html",
        "<!DOCTYPE html><html><body><script>console.error('broken on purpose')</script></body></html>",
    );
    let (_, console) = load(&browser, &page, work.path());
    assert!(
        console.iter().any(|l| l.contains("broken on purpose")),
        "{console:?}"
    );
}

#[test]
fn a_report_renders_in_chromium() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let page = work.path().join("report.html");
    report(
        &[
            "--latency",
            &compare_dir("candidate", "access.log"),
            "--log-format",
            "$request_time $msec",
            "--slo",
            "50ms",
            &compare_dir("candidate", "gc.log"),
        ],
        &page,
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    let (dom, console) = load(&browser, &page, work.path());
    assert!(console.is_empty(), "console messages: {console:?}");
    // Six charts: the headline, the timeline, the histogram, heap,
    // safepoints, stop-affected share; the headline with three lines.
    assert_eq!(dom.matches("<svg").count(), 6, "{dom}");
    let headline = &dom[dom.find("<svg").unwrap()..dom.find("</svg>").unwrap()];
    assert_eq!(headline.matches("<polyline").count(), 3);
    assert!(dom.contains("Longest pause per minute beside request p99 and p99.9"));
    assert!(dom.contains("Findings"));
    let (width, height, rgba) = screenshot(&browser, &page, work.path());
    assert_eq!((width, height), (1100, 2600));
    let white = pixels_near(&rgba, [255, 255, 255]);
    let total = (width * height) as usize;
    assert!(
        white < total * 97 / 100,
        "{white} of {total} pixels are white"
    );
    // The pause series' red and the p99.9 purple are painted.
    assert!(pixels_near(&rgba, [0xd6, 0x27, 0x28]) > 500);
    assert!(pixels_near(&rgba, [0x94, 0x67, 0xbd]) > 100);
}

#[test]
fn a_comparison_renders_both_runs_in_chromium() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let page = work.path().join("compare.html");
    let output = Command::new(common::PAUSEWATCH)
        .args([
            "compare",
            "--format",
            "html",
            "--log-format",
            "$request_time $msec",
        ])
        .args(["--baseline", &compare_dir("baseline", "gc.log")])
        .args(["--candidate", &compare_dir("candidate", "gc.log")])
        .args(["--baseline-latency", &compare_dir("baseline", "access.log")])
        .args([
            "--candidate-latency",
            &compare_dir("candidate", "access.log"),
        ])
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    let (dom, console) = load(&browser, &page, work.path());
    assert!(console.is_empty(), "console messages: {console:?}");
    assert_eq!(dom.matches("<svg").count(), 5, "{dom}");
    // Every line chart overlays the two runs.
    let first = &dom[dom.find("<svg").unwrap()..dom.find("</svg>").unwrap()];
    assert_eq!(first.matches("<polyline").count(), 2);
    let (width, height, rgba) = screenshot(&browser, &page, work.path());
    assert_eq!((width, height), (1100, 2600));
    // The baseline's blue and the candidate's orange.
    assert!(pixels_near(&rgba, [0x1f, 0x77, 0xb4]) > 300);
    assert!(pixels_near(&rgba, [0xff, 0x7f, 0x0e]) > 300);
}

#[test]
fn the_demo_report_tells_the_story() {
    let work = tempfile::tempdir().unwrap();
    let page = work.path().join("demo.html");
    // A temporary directory of its own: other tests run demos at the same time.
    let tmp = work.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    common::succeed(
        Command::new(common::PAUSEWATCH)
            .args(["report", "--demo", "-o"])
            .arg(&page)
            .env("TMPDIR", &tmp),
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    // Before and after the change, the full GCs of the grown cache over
    // the budget, and the tail they drive.
    assert!(
        html.contains("pauses were longer than the budget"),
        "{html}"
    );
    assert!(html.contains("Tail latency is driven by pauses"), "{html}");
    assert_eq!(html.matches("<svg").count(), 6);
    // Its temporary directory is gone.
    let leftovers: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

// ------------------------------------------------------------ issue 22, item 7
//
// The geometry below is read from the SVG as written: each time chart's plot
// box (`<rect class="plot">`, with the x range and the y maximum it draws)
// and its marks. The times and values it is checked against come from the
// fixture logs' own lines, read here.

/// The time of a unified-logging line, `[2026-12-01T03:44:59.628+0000]...`,
/// in epoch seconds.
fn log_line_seconds(line: &str) -> f64 {
    let stamp = &line[1..line.find(']').unwrap()];
    chrono::DateTime::parse_from_str(stamp, "%Y-%m-%dT%H:%M:%S%.3f%z")
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .timestamp_millis() as f64
        / 1e3
}

fn fixture_lines(run: &str) -> Vec<String> {
    std::fs::read_to_string(compare_dir(run, "gc.log"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Every `<svg>` element of the page.
fn svgs(html: &str) -> Vec<&str> {
    html.match_indices("<svg")
        .map(|(start, _)| &html[start..start + html[start..].find("</svg>").unwrap()])
        .collect()
}

/// The value of attribute `name` in the first element `<tag ... class="class"`.
fn attribute(element: &str, name: &str) -> f64 {
    let key = format!(" {name}=\"");
    let at = element
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in {element}"))
        + key.len();
    element[at..at + element[at..].find('"').unwrap()]
        .parse()
        .unwrap()
}

/// The elements (up to their `>`) with this class.
fn elements<'a>(svg: &'a str, class: &str) -> Vec<&'a str> {
    let key = format!("class=\"{class}\"");
    svg.match_indices(&key)
        .map(|(at, _)| {
            let start = svg[..at].rfind('<').unwrap();
            &svg[start..at + svg[at..].find('>').unwrap()]
        })
        .collect()
}

/// The coordinate `name` of the chart's one element of `class`.
fn only_mark(svg: &str, class: &str, name: &str) -> f64 {
    let marks = elements(svg, class);
    assert_eq!(marks.len(), 1, "{svg}");
    attribute(marks[0], name)
}

/// `drawn` is `expected` to the SVG's 0.1 px.
fn assert_at(drawn: f64, expected: f64, what: &str) {
    assert!(
        (drawn - expected).abs() <= 0.05 + 1e-9,
        "{what} is drawn at {drawn}, belongs at {expected}"
    );
}

/// A time chart's plot box: left, top, width, height, x range, y maximum.
struct Plot {
    left: f64,
    top: f64,
    width: f64,
    height: f64,
    x_min: f64,
    x_max: f64,
    y_max: f64,
}

impl Plot {
    fn of(svg: &str) -> Option<Plot> {
        let rect = *elements(svg, "plot").first()?;
        Some(Plot {
            left: attribute(rect, "x"),
            top: attribute(rect, "y"),
            width: attribute(rect, "width"),
            height: attribute(rect, "height"),
            x_min: attribute(rect, "data-x-min"),
            x_max: attribute(rect, "data-x-max"),
            y_max: attribute(rect, "data-y-max"),
        })
    }

    fn x_of(&self, seconds: f64) -> f64 {
        self.left + (seconds - self.x_min) / (self.x_max - self.x_min) * self.width
    }

    fn y_of(&self, value: f64) -> f64 {
        self.top + self.height - value / self.y_max * self.height
    }
}

/// The time charts of a page (every chart but the histogram) and their plots.
fn time_charts(html: &str) -> Vec<(&str, Plot)> {
    let charts: Vec<(&str, Plot)> = svgs(html)
        .into_iter()
        .filter(|svg| !svg.contains("<title>Pause durations</title>"))
        .map(|svg| {
            let plot = Plot::of(svg).unwrap_or_else(|| panic!("no plot box in {svg}"));
            (svg, plot)
        })
        .collect();
    assert!(charts.len() >= 4, "{html}");
    charts
}

fn report_html(args: &[&str]) -> String {
    let work = tempfile::tempdir().unwrap();
    let page = work.path().join("report.html");
    report(args, &page);
    std::fs::read_to_string(&page).unwrap()
}

fn two_runs(extra: &[&str]) -> String {
    let (baseline, candidate) = (
        compare_dir("baseline", "gc.log"),
        compare_dir("candidate", "gc.log"),
    );
    let mut args: Vec<&str> = extra.to_vec();
    args.extend([candidate.as_str(), baseline.as_str()]);
    report_html(&args)
}

#[test]
fn the_title_names_what_the_user_gave() {
    // The demo's logs are temporary files, gone once the report is written:
    // the title names the demo, not them.
    let demo = report_html(&["--demo"]);
    let title = &demo[demo.find("<title>").unwrap()..demo.find("</title>").unwrap()];
    let heading = &demo[demo.find("<h1>").unwrap()..demo.find("</h1>").unwrap()];
    for text in [title, heading] {
        assert!(text.contains("demo"), "{text}");
        assert!(!text.contains("pausewatch-demo-report"), "{text}");
        assert!(
            !text.contains(&std::env::temp_dir().display().to_string()),
            "{text}"
        );
    }
    // Files: the paths as given, the runs in time order.
    let html = two_runs(&[]);
    assert!(html.contains(&format!(
        "<title>pausewatch report: {}, {}</title>",
        compare_dir("baseline", "gc.log"),
        compare_dir("candidate", "gc.log")
    )));
}

#[test]
fn every_time_chart_shares_one_time_axis() {
    let html = two_runs(&[
        "--log-format",
        "$request_time $msec",
        "--latency",
        &compare_dir("baseline", "access.log"),
        "--latency",
        &compare_dir("candidate", "access.log"),
    ]);
    let ticks = |svg: &str| -> Vec<String> {
        elements(svg, "tick")
            .into_iter()
            .filter(|e| e.contains("text-anchor=\"middle\""))
            .map(str::to_string)
            .collect()
    };
    // The same times at the same places on every chart but the histogram,
    // as drawn (the axis labels and where they are).
    let drawn: Vec<&str> = svgs(&html)
        .into_iter()
        .filter(|svg| !svg.contains("<title>Pause durations</title>"))
        .collect();
    // With latency: the headline, timeline, heap, safepoints, stop-affected share.
    assert_eq!(drawn.len(), 5);
    for svg in &drawn {
        assert_eq!(
            ticks(svg),
            ticks(drawn[0]),
            "{}",
            &svg[..svg.find("</title>").unwrap()]
        );
    }
    // And one x range.
    let charts = time_charts(&html);
    let first = &charts[0].1;
    for (svg, plot) in &charts {
        assert_eq!(
            (plot.x_min, plot.x_max),
            (first.x_min, first.x_max),
            "{svg}"
        );
        assert_eq!((plot.left, plot.width), (first.left, first.width));
    }
    // The range holds the runs from their first line to their last pause,
    // and is no wider than their minutes.
    let start = log_line_seconds(&fixture_lines("baseline")[0]);
    let candidate = fixture_lines("candidate");
    let last_pause = candidate
        .iter()
        .rev()
        .find(|l| l.contains(" Pause "))
        .unwrap();
    let end = log_line_seconds(last_pause);
    assert!(first.x_min <= start && start - first.x_min < 60.0);
    assert!(first.x_max >= end && first.x_max - end <= 60.0);
}

#[test]
fn restarts_are_marked_where_they_happened() {
    // The candidate's JVM started with the line `Using Parallel`, its first:
    // that is where its run, and the change between the runs, begins.
    let candidate = fixture_lines("candidate");
    assert!(
        candidate[0].ends_with("[gc] Using Parallel"),
        "{}",
        candidate[0]
    );
    let restart = log_line_seconds(&candidate[0]);
    for (html, label) in [
        (
            two_runs(&[]),
            "JVM restart (".to_string() + &compare_dir("candidate", "gc.log") + ")",
        ),
        (
            report_html(&["--demo"]),
            "cache 15 % → 70 % of the heap (JVM restart)".to_string(),
        ),
    ] {
        for (svg, plot) in time_charts(&html) {
            let x = only_mark(svg, "x-mark", "x1");
            assert_at(x, plot.x_of(restart), "the restart");
            assert!(svg.contains(&format!(">{label}</text>")), "{svg}");
        }
    }
}

#[test]
fn the_headline_draws_the_pause_budget() {
    // The default is PauseBudgetExceeded's: the report holds the runs to
    // the budget the agent alerts on.
    let default_budget = pausewatch::model::alerts::Thresholds::default()
        .max_pause
        .as_secs_f64()
        * 1e3;
    for (args, budget_ms, label) in [
        (vec![], default_budget, "pause budget 50.000 ms"),
        (
            vec!["--pause-budget", "80ms"],
            80.0,
            "pause budget 80.000 ms",
        ),
    ] {
        let html = two_runs(&args);
        let (headline, plot) = time_charts(&html).remove(0);
        assert!(headline.contains("<title>Longest pause per minute"));
        let y = only_mark(headline, "y-mark", "y1");
        assert_at(y, plot.y_of(budget_ms), "the budget");
        assert!(plot.y_max >= budget_ms);
        assert!(headline.contains(&format!(">{label}</text>")), "{headline}");
    }
}
