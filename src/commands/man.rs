//! The man page text clap does not write: `pausewatch.toml(5)`, every
//! configuration key with its default (from [`crate::config::reference`]:
//! the doc comments of the parser's own fields), and the main page's FILES,
//! SIGNALS, EXIT STATUS and ENVIRONMENT.

use std::fmt::Write;

use crate::config::reference::{keys, KeyDefault, SECTIONS};

/// The configuration page's file name in `man --dir`.
pub const CONFIG_PAGE: &str = "pausewatch.toml.5";

/// Text as roff shows it: a backslash printed, a minus a minus, and a
/// leading dot or quote not taken for a request.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// A section's header as it is written in the file.
fn table_header(section: &str) -> String {
    match section {
        "" => "top level".to_string(),
        "gc_log" | "access_log" | "latency_histogram" | "discovery.rule" => {
            format!("[[{section}]]")
        }
        _ => format!("[{section}]"),
    }
}

/// `pausewatch.toml(5)`.
pub fn config_page(version: &str) -> String {
    let mut page = String::new();
    let _ = writeln!(
        page,
        ".TH pausewatch.toml 5 \"\" \"pausewatch {}\" \"File Formats\"",
        roff(version)
    );
    page.push_str(".SH NAME\npausewatch.toml \\- configuration of the pausewatch agent\n");
    page.push_str(".SH SYNOPSIS\n/etc/pausewatch/pausewatch.toml\n");
    page.push_str(&roff_paragraph(
        "DESCRIPTION",
        "The TOML file `pausewatch run --config FILE` reads; `pausewatch check-config FILE` checks it (exit 0 when valid, 2 naming the line and key of every mistake, in file order, when not). Unknown keys are an error. Durations are strings such as \"250ms\", \"1s\", \"90m\", \"24h\". Every key below is listed with its default: a key left out takes it. Files a key names are relative to the configuration file's directory.",
    ));
    let keys = keys();
    for (section, about) in SECTIONS {
        let _ = writeln!(
            page,
            ".SS {}\n{}",
            roff(&table_header(section)),
            roff(about)
        );
        for key in keys.iter().filter(|k| k.section == *section) {
            let default = match key.default {
                KeyDefault::Value(value) => format!("\\fB{}\\fR = {}", roff(key.name), roff(value)),
                KeyDefault::Note(note) => format!("\\fB{}\\fR ({})", roff(key.name), roff(note)),
            };
            let _ = writeln!(page, ".TP\n{default}\n{}", roff(&key.meaning));
        }
    }
    page.push_str(&roff_paragraph("ENVIRONMENT", "The [otlp] keys left out are read from OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, OTEL_EXPORTER_OTLP_LOGS_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_CERTIFICATE, OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE, OTEL_EXPORTER_OTLP_CLIENT_KEY, OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE, OTEL_METRIC_EXPORT_INTERVAL and OTEL_RESOURCE_ATTRIBUTES (the metrics-specific variable first); a key in the file wins."));
    page.push_str(".SH SEE ALSO\n\\fBpausewatch\\fR(1), \\fBpausewatch\\-run\\fR(1), \\fBpausewatch\\-check\\-config\\fR(1)\n");
    page
}

/// A section of one paragraph.
fn roff_paragraph(title: &str, text: &str) -> String {
    format!(".SH {title}\n{}\n", roff(text))
}

/// What the main page adds to clap's: files, signals, exit status,
/// environment and the configuration page.
pub fn main_page_sections() -> String {
    let mut page = String::new();
    definitions(&mut page, "FILES", &[
        ("/etc/pausewatch/pausewatch.toml", "The packaged service's configuration; every key is in pausewatch.toml(5)."),
        ("/var/lib/pausewatch", "The default checkpoint_dir: positions, parser state and per-minute aggregates."),
        ("$XDG_STATE_HOME/pausewatch, ~/.local/state/pausewatch", "The checkpoint directory of `pausewatch run` without a configuration file when not run as root."),
    ]);
    definitions(&mut page, "SIGNALS", &[
        (
            "SIGTERM, SIGINT",
            "A last read, a final checkpoint, exit 0 (1 if that checkpoint cannot be written).",
        ),
        (
            "SIGHUP",
            "Logged; the configuration is not reloaded while running: restart to apply changes.",
        ),
        ("SIGUSR1", "Write a checkpoint now."),
        (
            "SIGUSR2",
            "Log what is followed: lines, lag and readability of every log.",
        ),
    ]);
    definitions(&mut page, "EXIT STATUS", &[
        ("0", "Success."),
        ("1", "A failure while running or reading; for compare, a --fail-if gate failed."),
        ("2", "A bad command line or configuration (the message names the file, line and key), or a state directory that cannot be used."),
    ]);
    definitions(&mut page, "ENVIRONMENT", &[
        ("RUST_LOG", "The agent's log filter (tracing EnvFilter syntax), \"info\" by default."),
        ("OTEL_*", "The [otlp] keys left out of the file, and OTEL_SERVICE_NAME for the agent's own resource; see pausewatch.toml(5)."),
        ("XDG_STATE_HOME, HOME", "Where `pausewatch run` keeps its checkpoint without a configuration file, when not run as root."),
    ]);
    page.push_str(".SH SEE ALSO\n\\fBpausewatch.toml\\fR(5)\n");
    page
}

/// A section of terms and what each is.
fn definitions(page: &mut String, title: &str, items: &[(&str, &str)]) {
    let _ = writeln!(page, ".SH {title}");
    for (term, what) in items {
        let _ = writeln!(page, ".TP\n{}\n{}", roff(term), roff(what));
    }
}
