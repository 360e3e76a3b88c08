//! `pausewatch report` and `compare --format html` rendered by a real
//! browser: headless Chromium (Debian package `chromium`, installed by
//! .ci/run) loads the file with nothing but the file itself, logs no
//! console error, builds every chart, and paints a screenshot of the right
//! size with the charts' colours in it.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

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
    let page = work.path().join("broken.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><script>console.error('broken on purpose')</script></body></html>",
    )
    .unwrap();
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
    report(&["--demo"], &page);
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
    let leftovers: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("pausewatch-demo-report-")
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
