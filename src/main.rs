use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use clap::{Parser, Subcommand, ValueEnum};
use pausewatch::agent::{demo_source, Agent};
use pausewatch::analyze::{analyze, render_text, AnalyzeOptions};
use pausewatch::config::{self, Config};
use pausewatch::replay::{replay, ReplayOptions};
use pausewatch::state::{AgentState, SharedState};
use pausewatch::{metrics, server};

/// The recorded log the demo replays: JDK 17, G1, concurrent cycles and mixed collections.
const DEMO_LOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/jvm/jdk17-g1-concurrent/gc.log"
);

#[derive(Parser)]
#[command(
    name = "pausewatch",
    version,
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

#[derive(Subcommand)]
enum Command {
    /// Follow GC logs and serve Prometheus metrics (the host agent).
    Run {
        /// TOML configuration; without it, the documented defaults (no sources).
        #[arg(long, conflicts_with = "demo")]
        config: Option<PathBuf>,
        /// Replay a bundled real GC log into a temporary file and follow it.
        #[arg(long)]
        demo: bool,
    },
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
        #[arg(required = true)]
        files: Vec<PathBuf>,
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
        /// Move wall-clock decorations so the first line is stamped now.
        #[arg(long)]
        retime: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Analyze {
            format,
            events,
            jvm_start,
            files,
        } => {
            let options = AnalyzeOptions {
                jvm_start,
                include_events: events,
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
        Command::Run { config, demo } => {
            init_logging();
            let config = match (config, demo) {
                (Some(path), _) => match config::load(&path) {
                    Ok(config) => config,
                    Err(error) => {
                        eprintln!("pausewatch: {error}");
                        return ExitCode::from(2);
                    }
                },
                (None, true) => match demo_config() {
                    Ok(config) => config,
                    Err(error) => return fail(error),
                },
                (None, false) => Config::default(),
            };
            match run(config) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => fail(error),
            }
        }
    }
}

fn fail(error: anyhow::Error) -> ExitCode {
    eprintln!("pausewatch: {error:#}");
    ExitCode::FAILURE
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

/// A temporary directory with a real log being replayed into it at its own pace.
fn demo_config() -> Result<Config> {
    let dir = std::env::temp_dir().join(format!("pausewatch-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let log = dir.join("gc.log");
    let _ = std::fs::remove_file(&log);
    std::fs::File::create(&log)?;
    let writer_log = log.clone();
    std::thread::spawn(move || {
        let options = ReplayOptions {
            speed: 1.0,
            lines_per_second: None,
            retime: true,
        };
        if let Err(error) = replay(PathBuf::from(DEMO_LOG).as_path(), &writer_log, &options) {
            tracing::error!(error = %format!("{error:#}"), "demo replay failed");
        }
    });
    tracing::info!(log = %log.display(), "demo: replaying {DEMO_LOG}");
    Ok(Config {
        checkpoint_dir: dir.join("checkpoint"),
        gc_log: vec![demo_source(&log, Utc::now())],
        ..Config::default()
    })
}

fn run(config: Config) -> Result<()> {
    let shared: SharedState = Arc::new(Mutex::new(AgentState::default()));
    let registry = Arc::new(metrics::registry(shared.clone(), env!("CARGO_PKG_VERSION")));
    let router = server::router(shared.clone(), registry);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(config.listen))
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    tracing::info!(listen = %config.listen, sources = config.gc_log.len(), "pausewatch agent started");
    runtime.spawn(async move {
        if let Err(error) = server::serve(listener, router).await {
            tracing::error!(%error, "HTTP server stopped");
        }
    });
    let shutdown = Arc::new(AtomicBool::new(false));
    let signal_flag = shutdown.clone();
    runtime.spawn(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut terminate), Ok(mut interrupt)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return;
        };
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
        signal_flag.store(true, Ordering::SeqCst);
    });
    let agent = Agent::new(config, shared)?;
    let result = agent.run(shutdown);
    tracing::info!("pausewatch agent stopped");
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    result
}
