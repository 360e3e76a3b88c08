//! The `pausewatch` command line: parses the arguments and hands each
//! subcommand to its module.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use chrono::{DateTime, Utc};
use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use pausewatch::commands::analyze::{analyze, render_text, AnalyzeOptions, LatencyInput};
use pausewatch::commands::compare::{self, compare, summarise_run, Gate, RunInput};
use pausewatch::commands::demo::{demo_config, demo_report};
use pausewatch::commands::man;
use pausewatch::commands::replay::{replay, ReplayOptions};
use pausewatch::commands::report::{write_report, ReportOptions};
use pausewatch::commands::run::{run, SetupError};
use pausewatch::config::access_format::{
    build_format, parse_duration_unit, parse_signed_duration, parse_time_format,
    parse_timestamp_meaning, AccessFields,
};
use pausewatch::config::{self, Config};
use pausewatch::model::correlate::AttributionOptions;
use pausewatch_parsers::{DurationUnit, TimeFormat, TimestampMeaning};

/// The cargo features the binary was built with, for `--version`.
#[cfg(feature = "ebpf")]
macro_rules! features {
    () => {
        "ebpf"
    };
}
#[cfg(not(feature = "ebpf"))]
macro_rules! features {
    () => {
        "none"
    };
}

/// `--version`: the release, the cargo features it was built with (a
/// build without `ebpf` measures JVMs without a GC log less exactly), and
/// the commit it was built from (`build.rs`).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (features: ",
    features!(),
    ") (",
    env!("PAUSEWATCH_COMMIT"),
    ")"
);

#[derive(Parser)]
#[command(
    name = "pausewatch",
    version = VERSION,
    about = "GC and pause telemetry for JVM services"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum CompareFormat {
    Text,
    Json,
    Html,
}

/// How the agent's log lines are written to stderr.
#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    /// Human-readable lines, coloured only on a terminal.
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Follow GC logs and serve Prometheus metrics (the host agent).
    Run {
        /// TOML configuration; without it, the documented defaults (no sources).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Also follow a bundled service's GC and access logs, replayed live
        /// before and after a cache change, in a temporary directory.
        #[arg(long)]
        demo: bool,
        /// With --demo: also discover the host's JVMs (off in the demo, so it
        /// shows its own service alone).
        #[arg(long, requires = "demo")]
        discover: bool,
        /// Address to serve on, instead of the configuration's `listen`.
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
        /// TLS and basic auth of the endpoints (exporter-toolkit YAML), instead of the configuration's `web_config`.
        #[arg(long)]
        web_config: Option<PathBuf>,
        /// Log line format on stderr.
        #[arg(long, value_enum, default_value = "text")]
        log_format: LogFormat,
        /// Checkpoint directory, instead of the configuration's `checkpoint_dir`
        /// (without a configuration: /var/lib/pausewatch as root, else
        /// $XDG_STATE_HOME/pausewatch or ~/.local/state/pausewatch).
        #[arg(long)]
        checkpoint_dir: Option<PathBuf>,
    },
    /// Check a configuration file: exit 0 when the agent would start with it, 2 naming the line and key of every mistake, in file order, when not.
    CheckConfig { file: PathBuf },
    /// Print the man page (roff) on stdout, or write every page to a directory.
    Man {
        /// Write pausewatch.1, a pausewatch-COMMAND.1 for every subcommand and
        /// pausewatch.toml.5 (every configuration key with its default) here.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Print the completion script for SHELL on stdout.
    Completions { shell: clap_complete::Shell },
    /// Summarise the pauses in GC log files (a rotated set is put in time order).
    Analyze {
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Include one object per pause in the JSON output.
        #[arg(long)]
        events: bool,
        /// Wall-clock JVM start (RFC 3339), for logs that carry uptime only.
        #[arg(long)]
        jvm_start: Option<DateTime<Utc>>,
        #[command(flatten)]
        latency: LatencyArgs,
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Write one self-contained HTML report (key figures, findings, charts).
    Report {
        /// Wall-clock JVM start (RFC 3339), for logs that carry uptime only.
        #[arg(long)]
        jvm_start: Option<DateTime<Utc>>,
        #[command(flatten)]
        latency: LatencyArgs,
        /// Pauses longer than this are reported as a finding.
        #[arg(long, default_value = "50ms", value_parser = humantime::parse_duration)]
        pause_budget: std::time::Duration,
        /// The HTML file to write.
        #[arg(short, long, default_value = "report.html")]
        output: PathBuf,
        /// Report on the demo's embedded service logs (before and after a cache change).
        #[arg(long, conflicts_with_all = ["files", "latency"])]
        demo: bool,
        #[arg(required_unless_present = "demo")]
        files: Vec<PathBuf>,
    },
    /// Compare two runs (before and after a change, a canary and the fleet) and gate on the result.
    Compare {
        /// GC log of the baseline run (repeat for a rotated set).
        #[arg(long, required = true)]
        baseline: Vec<PathBuf>,
        /// GC log of the candidate run (repeat for a rotated set).
        #[arg(long, required = true)]
        candidate: Vec<PathBuf>,
        /// Access log of the baseline run's service (repeatable).
        #[arg(long)]
        baseline_latency: Vec<PathBuf>,
        /// Access log of the candidate run's service (repeatable).
        #[arg(long)]
        candidate_latency: Vec<PathBuf>,
        #[command(flatten)]
        latency: LatencyOptions,
        /// Leave out each run's first events and requests (its warm-up), e.g. 1m.
        #[arg(long, value_parser = humantime::parse_duration)]
        skip_first: Option<std::time::Duration>,
        #[arg(long, value_enum, default_value = "text")]
        format: CompareFormat,
        /// Exit 1 when the candidate's figure crosses the line:
        /// `pauses.max_seconds > 50ms`, `latency.p999_seconds > +10%` (repeatable).
        #[arg(long = "fail-if", value_name = "EXPR")]
        fail_if: Vec<Gate>,
        /// Write the output to this file instead of standard output.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Print the Prometheus rule file for the configuration's alert thresholds.
    Rules {
        /// TOML configuration; without it, the defaults (the shipped file).
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Append a recorded GC log to a file line by line at its own pace (for demos and tests).
    Replay {
        source: PathBuf,
        destination: PathBuf,
        /// Pace multiplier on the log's timestamps.
        #[arg(long, default_value_t = 1.0)]
        speed: f64,
        /// A fixed rate instead of the log's own pace.
        #[arg(long)]
        lines_per_second: Option<f64>,
        /// Move wall-clock decorations (JDK 8 date stamps) so the first line is stamped now.
        #[arg(long)]
        retime: bool,
    },
}

/// Lining the GC log up with a service's access log.
#[derive(clap::Args)]
struct LatencyArgs {
    /// Access log of the service whose JVM wrote the GC log; repeat it for
    /// several instances or a rotated set (their requests are combined).
    #[arg(long)]
    latency: Vec<PathBuf>,
    #[command(flatten)]
    options: LatencyOptions,
}

/// How access logs are read and requests attributed (analyze, report, compare).
#[derive(clap::Args)]
struct LatencyOptions {
    /// nginx, apache, tomcat, tomcat9, envoy, envoy-json, json, regex, ...; detected per file when omitted.
    #[arg(long)]
    latency_format: Option<String>,
    /// The server's own format string: an nginx log_format or an Apache LogFormat.
    #[arg(long)]
    log_format: Option<String>,
    /// Requests slower than this are slow (e.g. 50ms); default: the p99.9.
    #[arg(long, value_parser = humantime::parse_duration)]
    slo: Option<std::time::Duration>,
    /// Share of a request's time stops must cover to make it stop-affected.
    #[arg(long, default_value_t = 0.25)]
    affected_share: f64,
    /// Added to the access log's times, for clock skew (e.g. -20ms).
    #[arg(long, allow_hyphen_values = true)]
    latency_offset: Option<String>,
    /// json: the field holding the timestamp (dotted path for nested fields).
    #[arg(long)]
    time_field: Option<String>,
    /// json: the field holding the duration.
    #[arg(long)]
    duration_field: Option<String>,
    /// regex: named groups `duration` and `start`, `end` or `time`.
    #[arg(long)]
    pattern: Option<String>,
    /// json, regex: rfc3339, epoch_seconds, epoch_millis, epoch_micros, clf.
    #[arg(long, value_parser = parse_time_format)]
    time_format: Option<TimeFormat>,
    /// json, regex: s, ms, us, ns.
    #[arg(long, value_parser = parse_duration_unit)]
    duration_unit: Option<DurationUnit>,
    /// json, regex: whether the timestamp is the request's start or end.
    #[arg(long, value_parser = parse_timestamp_meaning)]
    timestamp: Option<TimestampMeaning>,
}

impl LatencyOptions {
    /// The access logs `paths` read with these options; `None` without paths.
    fn input(&self, paths: Vec<PathBuf>) -> Result<Option<LatencyInput>> {
        if paths.is_empty() {
            let given = [
                ("--latency-format", self.latency_format.is_some()),
                ("--log-format", self.log_format.is_some()),
                ("--slo", self.slo.is_some()),
                ("--latency-offset", self.latency_offset.is_some()),
            ];
            if let Some((flag, _)) = given.iter().find(|(_, given)| *given) {
                anyhow::bail!("{flag} applies to access logs, and none is given");
            }
            return Ok(None);
        }
        let fields = AccessFields {
            log_format: self.log_format.clone(),
            time_field: self.time_field.clone(),
            duration_field: self.duration_field.clone(),
            pattern: self.pattern.clone(),
            time_format: self.time_format,
            duration_unit: self.duration_unit,
            timestamp: self.timestamp,
        };
        let format = match (&self.latency_format, &fields.log_format) {
            (None, None) => None,
            (name, _) => Some(build_format(name.as_deref(), &fields).map_err(|e| {
                let flag = if e.key == "format" {
                    "latency-format"
                } else {
                    "log-format"
                };
                anyhow::anyhow!("--{flag}: {e}")
            })?),
        };
        let offset_seconds = match &self.latency_offset {
            Some(text) => parse_signed_duration(text).map_err(anyhow::Error::msg)?,
            None => 0.0,
        };
        Ok(Some(LatencyInput {
            paths,
            format,
            hints: fields,
            offset_seconds,
            attribution: AttributionOptions {
                slo_seconds: self.slo.map(|d| d.as_secs_f64()),
                affected_share: self.affected_share,
            },
        }))
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Analyze {
            format,
            events,
            jvm_start,
            latency,
            files,
        } => {
            let latency = match latency.options.input(latency.latency) {
                Ok(latency) => latency,
                Err(error) => return fail(error),
            };
            let options = AnalyzeOptions {
                jvm_start,
                include_events: events,
                latency,
                skip_first_seconds: None,
            };
            match analyze(&files, &options) {
                Ok(report) => {
                    let text = match format {
                        Format::Text => render_text(&report),
                        Format::Json => {
                            serde_json::to_string_pretty(&report).expect("report serialises") + "\n"
                        }
                    };
                    // A closed pipe (`| head`) is not an error worth a panic.
                    let _ = std::io::stdout().lock().write_all(text.as_bytes());
                    ExitCode::SUCCESS
                }
                Err(error) => fail(error),
            }
        }
        Command::Report {
            jvm_start,
            latency,
            pause_budget,
            output,
            demo,
            files,
        } => {
            let options = ReportOptions::of_files(pause_budget.as_secs_f64());
            let result = if demo {
                demo_report(&output, &options)
            } else {
                latency
                    .options
                    .input(latency.latency)
                    .and_then(|latency| write_report(&files, jvm_start, latency, &output, &options))
            };
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => fail(error),
            }
        }
        Command::Compare {
            baseline,
            candidate,
            baseline_latency,
            candidate_latency,
            latency,
            skip_first,
            format,
            fail_if,
            output,
        } => {
            let runs = [(baseline, baseline_latency), (candidate, candidate_latency)];
            match compare_runs(runs, &latency, skip_first, &fail_if, format, output) {
                Ok(comparison_failed) if comparison_failed => ExitCode::FAILURE,
                Ok(_) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("pausewatch: {error:#}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Rules { config } => match pausewatch::commands::rules::rules(config.as_deref()) {
            Ok(text) => {
                print!("{text}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("pausewatch: {error}");
                ExitCode::from(2)
            }
        },
        Command::Replay {
            source,
            destination,
            speed,
            lines_per_second,
            retime,
        } => {
            let options = ReplayOptions {
                speed,
                lines_per_second,
                retime,
            };
            match replay(&source, &destination, &options) {
                Ok(_) => ExitCode::SUCCESS,
                Err(error) => fail(error),
            }
        }
        Command::CheckConfig { file } => match config::check(&file) {
            Ok(_) => {
                println!("{}: valid", file.display());
                ExitCode::SUCCESS
            }
            Err(errors) => {
                for error in errors {
                    eprintln!("pausewatch: {error}");
                }
                ExitCode::from(2)
            }
        },
        Command::Man { dir: Some(dir) } => match write_man_pages(&dir) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                fail(error.context(format!("cannot write the man pages to {}", dir.display())))
            }
        },
        Command::Man { dir: None } => match main_man_page() {
            Ok(page) => {
                let _ = std::io::stdout().lock().write_all(&page);
                ExitCode::SUCCESS
            }
            Err(error) => fail(error.into()),
        },
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "pausewatch",
                &mut std::io::stdout(),
            );
            ExitCode::SUCCESS
        }
        Command::Run {
            config,
            demo,
            discover,
            listen,
            web_config,
            log_format,
            checkpoint_dir,
        } => {
            init_logging(log_format);
            let config = match config {
                Some(path) => match config::load(&path) {
                    Ok(config) => config,
                    Err(error) => {
                        eprintln!("pausewatch: {error}");
                        return ExitCode::from(2);
                    }
                },
                None => Config {
                    checkpoint_dir: checkpoint_dir
                        .clone()
                        .unwrap_or_else(pausewatch::commands::run::zero_config_checkpoint_dir),
                    ..Config::default()
                },
            };
            // The demo's directory lives until the agent has stopped.
            let (mut config, _demo_dir) = if demo {
                match demo_config(config, discover) {
                    Ok((config, dir)) => (config, Some(dir)),
                    Err(error) => return fail(error),
                }
            } else {
                (config, None)
            };
            if let Some(listen) = listen {
                config.listen = listen;
            }
            if let Some(file) = web_config {
                config.web_config = Some(file);
            }
            if let Some(dir) = checkpoint_dir {
                config.checkpoint_dir = dir;
            }
            match run(config) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) if error.is::<SetupError>() => {
                    eprintln!("pausewatch: {error}");
                    ExitCode::from(2)
                }
                Err(error) => fail(error),
            }
        }
    }
}

/// The main page: clap's, then files, signals, exit status and environment.
fn main_man_page() -> std::io::Result<Vec<u8>> {
    let mut page = Vec::new();
    // As the pages `--dir` writes: no pausewatch-help(1) is shipped.
    let command = Cli::command().disable_help_subcommand(true);
    clap_mangen::Man::new(command).render(&mut page)?;
    page.extend_from_slice(man::main_page_sections().as_bytes());
    Ok(page)
}

/// pausewatch.1, a pausewatch-COMMAND.1 for every subcommand (the main
/// page's SUBCOMMANDS name them) and pausewatch.toml.5.
fn write_man_pages(dir: &std::path::Path) -> Result<()> {
    clap_mangen::generate_to(Cli::command(), dir)?;
    std::fs::write(dir.join("pausewatch.1"), main_man_page()?)?;
    std::fs::write(dir.join(man::CONFIG_PAGE), man::config_page(VERSION))?;
    Ok(())
}

/// Summarises the baseline and the candidate, compares them and writes the
/// result; `true` when a gate failed.
fn compare_runs(
    runs: [(Vec<PathBuf>, Vec<PathBuf>); 2],
    latency: &LatencyOptions,
    skip_first: Option<std::time::Duration>,
    gates: &[Gate],
    format: CompareFormat,
    output: Option<PathBuf>,
) -> Result<bool> {
    if runs[0].1.is_empty() != runs[1].1.is_empty() {
        anyhow::bail!(
            "give access logs for both runs (--baseline-latency and --candidate-latency) or for neither"
        );
    }
    let skip = skip_first.map(|d| d.as_secs_f64());
    let [baseline, candidate] = runs.map(|(gc_logs, access_logs)| -> Result<_> {
        Ok(RunInput {
            gc_logs,
            latency: latency.input(access_logs)?,
        })
    });
    let (baseline, candidate) = (baseline?, candidate?);
    // The two runs are summarised on two threads: each is a whole archive.
    let (baseline, candidate) = std::thread::scope(|scope| {
        let baseline = scope.spawn(|| summarise_run(baseline, skip));
        let candidate = summarise_run(candidate, skip);
        (
            baseline.join().expect("the baseline's summary panicked"),
            candidate,
        )
    });
    let comparison = compare(baseline?, candidate?, gates)?;
    let text = match format {
        CompareFormat::Text => compare::render_text(&comparison),
        CompareFormat::Json => {
            serde_json::to_string_pretty(&comparison).expect("comparison serialises") + "\n"
        }
        CompareFormat::Html => pausewatch::commands::report::compare_html(&comparison),
    };
    write_output(output.as_deref(), &text)?;
    Ok(comparison.any_gate_failed())
}

/// Writes to the file, or to standard output when none is given (a closed
/// pipe, `| head`, is not an error worth a panic).
fn write_output(path: Option<&std::path::Path>, text: &str) -> Result<()> {
    match path {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display())),
        None => {
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            Ok(())
        }
    }
}

fn fail(error: anyhow::Error) -> ExitCode {
    eprintln!("pausewatch: {error:#}");
    ExitCode::FAILURE
}

/// Colours only on a terminal: under systemd, stderr goes to journald,
/// where escape codes would show up as text.
fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => builder.json().with_ansi(false).init(),
    }
}
