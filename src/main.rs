use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use chrono::{DateTime, Utc};
use clap::{Parser, Subcommand, ValueEnum};
use pausewatch::analyze::{analyze, render_text, AnalyzeOptions};

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
                Err(error) => {
                    eprintln!("pausewatch: {error:#}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
