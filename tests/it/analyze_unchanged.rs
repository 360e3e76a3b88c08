//! `analyze` prints byte for byte what it printed before it stopped
//! rescanning the rest of a run for every event and began streaming its
//! input: the expected outputs in `tests/fixtures/analyze-before/` were
//! recorded with main's binary before either change (see its README), on
//! logs without wall-clock time (uptime only, undated JDK 5 and 8 logs),
//! three runs with two restarts, and a dated JDK 8 log. Then the same
//! figures from gzipped, zipped and CR-terminated copies of the logs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

use crate::common::{root, succeed, PAUSEWATCH};

/// `analyze --format json ARGS` run in `directory`: its stdout.
fn analyze_in(directory: &Path, args: &[&str]) -> Vec<u8> {
    succeed(
        Command::new(PAUSEWATCH)
            .current_dir(directory)
            .args(["analyze", "--format", "json"])
            .args(args),
    )
}

fn expected(name: &str) -> Vec<u8> {
    std::fs::read(root().join("tests/fixtures/analyze-before").join(name)).unwrap()
}

fn assert_same(name: &str, actual: &[u8]) {
    let expected = expected(name);
    assert!(
        actual == expected.as_slice(),
        "{name} differs from the output recorded before the change:\n{}",
        String::from_utf8_lossy(actual)
    );
}

/// The three steady fixtures concatenated, in a directory of their own.
fn three_runs() -> tempfile::TempDir {
    let directory = tempfile::tempdir().unwrap();
    let mut log = Vec::new();
    for name in [
        "jdk17-g1-steady",
        "jdk25-zgc-steady",
        "jdk17-shenandoah-steady",
    ] {
        log.extend(std::fs::read(common::jvm_fixture(name).join("gc.log")).unwrap());
    }
    std::fs::write(directory.path().join("gc.log"), log).unwrap();
    directory
}

#[test]
fn an_uptime_only_log_gives_the_output_of_before() {
    let actual = analyze_in(
        root(),
        &["--events", "tests/fixtures/jvm/jdk17-g1-steady/gc.log"],
    );
    assert_same("jdk17-g1-steady.json", &actual);
}

#[test]
fn three_runs_with_restarts_give_the_output_of_before() {
    let directory = three_runs();
    assert_same(
        "three-runs.json",
        &analyze_in(directory.path(), &["--events", "gc.log"]),
    );
    assert_same(
        "three-runs-jvm-start.json",
        &analyze_in(
            directory.path(),
            &["--events", "--jvm-start", "2026-01-01T00:00:00Z", "gc.log"],
        ),
    );
}

/// The corpus, or `None` (SKIPPED) when it is absent.
fn corpus() -> Option<PathBuf> {
    let file = common::corpus_file("jifa/analysis/gc-log/src/test/resources/8CMSParser.log")?;
    Some(file.ancestors().nth(7).unwrap().to_path_buf())
}

#[test]
fn jdk8_logs_give_the_output_of_before() {
    let Some(corpus) = corpus() else { return };
    let cases = [
        (
            "jdk8-cms.json",
            vec![
                "--events",
                "jifa/analysis/gc-log/src/test/resources/8CMSParser.log",
            ],
        ),
        (
            "jdk8-cms-dated.json",
            vec!["GCViewer/src/test/resources/openjdk/SampleSun1_8_0Series-ManuallyMerged.txt"],
        ),
        (
            "jdk5-cms-concurrent-mode-failure.json",
            vec!["GCViewer/src/test/resources/openjdk/SampleSun1_5_0ConcurrentModeFailure.txt"],
        ),
    ];
    for (name, args) in cases {
        assert_same(name, &analyze_in(&corpus, &args));
    }
}

/// `log` gzipped into `directory/NAME`.
fn gzip(log: &[u8], directory: &Path, name: &str) -> PathBuf {
    let path = directory.join(name);
    let mut encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(&path).unwrap(),
        flate2::Compression::default(),
    );
    encoder.write_all(log).unwrap();
    encoder.finish().unwrap();
    path
}

/// `analyze --format json FILE` with the `files` field left out, to compare
/// the figures of different files.
fn figures(file: &Path, args: &[&str]) -> serde_json::Value {
    let mut report =
        common::analyze_json(args.iter().map(|a| a.as_ref()).chain([file.as_os_str()]));
    report.as_object_mut().unwrap().remove("files");
    report
}

#[test]
fn gzipped_and_zipped_logs_read_as_the_log_itself() {
    let directory = three_runs();
    let plain = directory.path().join("gc.log");
    let log = std::fs::read(&plain).unwrap();
    let args = ["--events", "--jvm-start", "2026-01-01T00:00:00Z"];
    let expected = figures(&plain, &args);
    assert_eq!(expected["pauses"]["count"], 111, "{expected}");
    // By magic bytes: neither name ends in .gz or .zip.
    let gzipped = gzip(&log, directory.path(), "gc.log.0");
    assert_eq!(figures(&gzipped, &args), expected);
    // Two gzip members one after the other are one stream, as gunzip reads them.
    let (first, second) = log.split_at(log.len() / 2);
    let mut members = std::fs::read(gzip(first, directory.path(), "a")).unwrap();
    members.extend(std::fs::read(gzip(second, directory.path(), "b")).unwrap());
    std::fs::write(directory.path().join("members"), members).unwrap();
    assert_eq!(figures(&directory.path().join("members"), &args), expected);
    let zipped = directory.path().join("gc-logs");
    let mut archive = zip::ZipWriter::new(std::fs::File::create(&zipped).unwrap());
    archive
        .start_file("gc.log", zip::write::SimpleFileOptions::default())
        .unwrap();
    archive.write_all(&log).unwrap();
    archive.finish().unwrap();
    assert_eq!(figures(&zipped, &args), expected);
}

/// `analyze` of a FIFO that a thread fills with `bytes`: its exit status,
/// and its figures when it succeeded.
fn analyze_fifo(
    directory: &Path,
    bytes: Vec<u8>,
    args: &[&str],
) -> (std::process::ExitStatus, String, Option<serde_json::Value>) {
    let fifo = directory.join("gc.fifo");
    let _ = std::fs::remove_file(&fifo);
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let writer = {
        let fifo = fifo.clone();
        // The reader may stop early (a zip archive): a broken pipe is its to report.
        std::thread::spawn(move || {
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .open(fifo)
                .and_then(|mut pipe| pipe.write_all(&bytes));
        })
    };
    let output = Command::new(PAUSEWATCH)
        .args(["analyze", "--format", "json"])
        .args(args)
        .arg(&fifo)
        .output()
        .unwrap();
    writer.join().unwrap();
    let report = output.status.success().then(|| {
        let mut report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        report.as_object_mut().unwrap().remove("files");
        report
    });
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status, stderr, report)
}

/// A log read from a FIFO (`analyze <(zcat gc.log.gz)`, a shell's process
/// substitution) loses nothing: the bytes read to tell a plain log from a
/// gzipped one are the log's first, and a FIFO cannot give them twice. A
/// zip archive, which is read from its end, is a clear error there.
#[test]
fn a_log_read_from_a_fifo_gives_the_figures_of_the_file() {
    let directory = three_runs();
    let plain = directory.path().join("gc.log");
    let log = std::fs::read(&plain).unwrap();
    let args = ["--jvm-start", "2026-01-01T00:00:00Z"];
    let expected = figures(&plain, &args);
    assert_eq!(expected["unparsed_lines"], 0, "{expected}");
    let (status, stderr, piped) = analyze_fifo(directory.path(), log.clone(), &args);
    assert!(status.success(), "{stderr}");
    assert_eq!(piped.unwrap(), expected);
    let gzipped = std::fs::read(gzip(&log, directory.path(), "gc.log.gz")).unwrap();
    let (status, stderr, piped) = analyze_fifo(directory.path(), gzipped, &args);
    assert!(status.success(), "{stderr}");
    assert_eq!(piped.unwrap(), expected);
    let mut zipped = std::io::Cursor::new(Vec::new());
    let mut archive = zip::ZipWriter::new(&mut zipped);
    archive
        .start_file("gc.log", zip::write::SimpleFileOptions::default())
        .unwrap();
    archive.write_all(&log).unwrap();
    archive.finish().unwrap();
    let (status, stderr, _) = analyze_fifo(directory.path(), zipped.into_inner(), &args);
    assert!(!status.success());
    assert!(
        stderr.contains("(zip)") && stderr.contains("gc.fifo"),
        "{stderr}"
    );
}

#[test]
fn a_corrupt_gzip_file_is_a_clear_error() {
    let directory = tempfile::tempdir().unwrap();
    let path = common::write_file(directory.path(), "gc.log.gz", [0x1f, 0x8b, 8, 0, 1, 2, 3]);
    let output = Command::new(PAUSEWATCH)
        .args(["analyze", "--format", "json"])
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("cannot decompress") && stderr.contains("gc.log.gz"),
        "{stderr}"
    );
}

/// Every LF (and CRLF) of `log` turned into a lone CR.
fn cr_only(log: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(log).replace("\r\n", "\n");
    text.replace('\n', "\r").into_bytes()
}

#[test]
fn a_log_with_cr_line_ends_reads_as_with_lf() {
    let directory = three_runs();
    let plain = directory.path().join("gc.log");
    let cr = common::write_file(
        directory.path(),
        "gc-cr.log",
        cr_only(&std::fs::read(&plain).unwrap()),
    );
    let args = ["--events", "--jvm-start", "2026-01-01T00:00:00Z"];
    let expected = figures(&plain, &args);
    assert_eq!(expected["pauses"]["count"], 111);
    assert_eq!(figures(&cr, &args), expected);
}

/// A JDK 8 log from the corpus with CR line ends (the corpus has none of its
/// own): the figures of its LF original (536 pauses).
#[test]
fn a_jdk8_log_with_cr_line_ends_reads_as_with_lf() {
    let Some(corpus) = corpus() else { return };
    let plain =
        corpus.join("GCViewer/src/test/resources/openjdk/SampleSun1_8_0Series-ManuallyMerged.txt");
    let directory = tempfile::tempdir().unwrap();
    let cr = common::write_file(
        directory.path(),
        "gc-cr.log",
        cr_only(&std::fs::read(&plain).unwrap()),
    );
    let expected = figures(&plain, &[]);
    assert_eq!(expected["pauses"]["count"], 536);
    assert_eq!(figures(&cr, &[]), expected);
    // Gzipped as well.
    let gzipped = gzip(
        &std::fs::read(&cr).unwrap(),
        directory.path(),
        "gc-cr.log.gz",
    );
    assert_eq!(figures(&gzipped, &[]), expected);
}

/// A plain log is parsed from a memory map until a part of a stretch holds
/// a CR; from there it is read, and its lone CRs turned into LF. A 9 MB log
/// with one lone CR in the first part of the first 8 MB stretch, in its
/// second part (read ahead on the other thread), or in the next stretch
/// reads as its LF twin.
#[test]
fn a_lone_cr_anywhere_in_a_mapped_log_reads_as_lf() {
    let directory = three_runs();
    let runs = std::fs::read(directory.path().join("gc.log")).unwrap();
    let mut log = Vec::new();
    while log.len() < 9 << 20 {
        log.extend(&runs);
    }
    let plain = common::write_file(directory.path(), "big.log", &log);
    let args = ["--jvm-start", "2026-01-01T00:00:00Z"];
    let expected = figures(&plain, &args);
    for at in [2 << 20, 6 << 20, (8 << 20) + (600 << 10)] {
        let end = at + log[at..].iter().position(|&b| b == b'\n').unwrap();
        let mut with_cr = log.clone();
        with_cr[end] = b'\r';
        let path = common::write_file(directory.path(), "cr.log", with_cr);
        assert_eq!(figures(&path, &args), expected, "a lone CR at byte {end}");
    }
}
