//! Finding the start time of the running JVM that writes a GC log, from
//! `/proc`, for logs decorated with uptime only: without it their pauses
//! cannot be placed in wall-clock time.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

/// Linux reports process start times in USER_HZ ticks, 100 on every
/// mainstream architecture.
const TICKS_PER_SECOND: f64 = 100.0;

/// Boot time, seconds since the epoch (`btime` in /proc/stat).
fn boot_time() -> Option<i64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    stat.lines()
        .find_map(|line| line.strip_prefix("btime "))
        .and_then(|value| value.trim().parse().ok())
}

/// Start of process `pid`, from field 22 of /proc/PID/stat (after the command
/// name, which may itself contain spaces and parentheses).
fn process_start(pid: u32, boot: i64) -> Option<DateTime<Utc>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    let ticks: f64 = after_name.split_whitespace().nth(19)?.parse().ok()?;
    let nanos = (boot as f64 * 1e9 + ticks / TICKS_PER_SECOND * 1e9) as i64;
    Some(DateTime::from_timestamp_nanos(nanos))
}

/// The log files named in a JVM's `-Xlog:...:file=PATH...` options,
/// resolved against its working directory, with `%p` expanded.
fn xlog_files(pid: u32, arguments: &[String]) -> Vec<PathBuf> {
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default();
    arguments
        .iter()
        .filter(|a| a.starts_with("-Xlog"))
        .filter_map(|a| a.split_once("file=").map(|(_, rest)| rest))
        .map(|rest| {
            let path = match rest.strip_prefix('"') {
                Some(quoted) => quoted.split('"').next().unwrap_or(quoted),
                None => rest.split(':').next().unwrap_or(rest),
            };
            cwd.join(path.replace("%p", &pid.to_string()))
        })
        .collect()
}

/// Start time of the process whose `-Xlog` writes `log`, if one runs now.
pub fn jvm_start_for_log(log: &Path) -> Option<DateTime<Utc>> {
    let boot = boot_time()?;
    let wanted = std::fs::canonicalize(log).unwrap_or_else(|_| log.to_path_buf());
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let arguments: Vec<String> = cmdline
            .split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let writes_it = xlog_files(pid, &arguments)
            .iter()
            .any(|file| std::fs::canonicalize(file).unwrap_or_else(|_| file.clone()) == wanted);
        if writes_it {
            return process_start(pid, boot);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xlog_file_options_are_resolved_and_expanded() {
        let arguments = [
            "java".to_string(),
            "-Xlog:gc*,safepoint:file=logs/gc-%p.log:uptime:filecount=5".to_string(),
            "-Xlog:gc:file=\"/var/log/a b/gc.log\"".to_string(),
        ];
        let files = xlog_files(std::process::id(), &arguments);
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            files[0],
            cwd.join(format!("logs/gc-{}.log", std::process::id()))
        );
        assert_eq!(files[1], PathBuf::from("/var/log/a b/gc.log"));
    }

    #[test]
    fn this_process_started_before_now() {
        let boot = boot_time().unwrap();
        let start = process_start(std::process::id(), boot).unwrap();
        let age = Utc::now() - start;
        assert!(age.num_seconds() >= 0 && age.num_hours() < 24, "{start}");
    }
}
