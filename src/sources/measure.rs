//! Which input measures a discovered JVM: the one rule, kept apart from the
//! I/O that finds the inputs (its processes, logs and probes), so that a
//! table states it and the next input kind is added in one place.
//!
//! One truth per JVM: a GC log outranks the probes for its pauses (it has
//! the causes, the heap and the collector's phases), the probes outrank
//! hsperfdata (exact pauses, not totals sampled); the safepoints come from
//! the log when it has the `safepoint` tag, else from the probes.

use std::path::PathBuf;

use super::ebpf::Coverage;
use crate::store::{EbpfReason, PauseSource, SafepointSource, StreamId};

/// The GC log a JVM writes, as discovery found it.
#[derive(Debug, Clone, PartialEq)]
pub enum JvmLog {
    /// It writes none (or none the agent trusts).
    None,
    /// A `[[gc_log]]` stream already follows it.
    Followed(StreamId),
    /// A `[[gc_log]]` names it but has not found it yet (the JVM has not
    /// created it): that stream will carry the JVM.
    Configured,
    /// A log of its own, outside the configuration: `first_created` whether
    /// the first of the names it may have exists, `created` the first that
    /// does.
    Own {
        first_created: bool,
        created: Option<PathBuf>,
    },
}

/// What discovery found of one JVM.
#[derive(Debug, Clone, PartialEq)]
pub struct JvmInputs {
    /// What the probes say of it.
    pub ebpf: Coverage,
    pub log: JvmLog,
    /// Whether its GC log has its safepoints (the `safepoint` tag, or
    /// JDK 8's `-XX:+PrintGCApplicationStoppedTime`).
    pub log_has_safepoints: bool,
    /// Whether it started so recently that its log may not be created yet.
    pub young: bool,
    /// Whether it started after the agent (a log read from its beginning
    /// saw all of it).
    pub started_after_agent: bool,
}

/// Where a measured JVM's figures go.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamChoice {
    /// The stream of the `[[gc_log]]` it writes, which supplies its pauses.
    Configured(StreamId),
    /// A new stream following the log discovery found, its pauses from it.
    FollowLog(PathBuf),
    /// A stream of its own, its pauses from the probes or hsperfdata.
    Own,
}

/// How a JVM is measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    pub stream: StreamChoice,
    pub pause_source: PauseSource,
    pub safepoint_source: SafepointSource,
    /// Why the probes do not measure it, when they do not.
    pub ebpf_reason: Option<EbpfReason>,
    /// Whether its pauses' input saw it from its start: its counters are
    /// compared from zero, else from the difference at the first comparison.
    pub pauses_from_start: bool,
}

/// What discovery does with a JVM now.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Not yet: look at it again at the next scan, or `soon` (its library
    /// is being attached, which takes milliseconds).
    LookAgain {
        soon: bool,
    },
    Measure(Measurement),
}

/// The rule: which input measures a JVM with these inputs, or why not yet.
pub fn decide(inputs: JvmInputs) -> Decision {
    let probes = match inputs.ebpf {
        // Its records wait meanwhile: the JVM is found again.
        Coverage::Attaching => return Decision::LookAgain { soon: true },
        Coverage::NotYet => return Decision::LookAgain { soon: false },
        Coverage::Measured { from_start } => Ok(from_start),
        Coverage::NotMeasured(reason, _) => Err(reason),
    };
    let stream = match inputs.log {
        JvmLog::Followed(id) => StreamChoice::Configured(id),
        // Found again once its `[[gc_log]]` follows the file, so that the
        // JVM appears once, on that stream.
        JvmLog::Configured => return Decision::LookAgain { soon: false },
        // A log of its own not created yet: wait, unless it has run long
        // without it.
        JvmLog::Own {
            first_created: false,
            ..
        } if inputs.young => return Decision::LookAgain { soon: false },
        JvmLog::Own {
            created: Some(log), ..
        } => StreamChoice::FollowLog(log),
        JvmLog::Own { created: None, .. } | JvmLog::None => StreamChoice::Own,
    };
    let pause_source = match (&stream, probes) {
        (StreamChoice::Configured(_) | StreamChoice::FollowLog(_), _) => PauseSource::GcLog,
        (StreamChoice::Own, Ok(_)) => PauseSource::Ebpf,
        (StreamChoice::Own, Err(_)) => PauseSource::Hsperfdata,
    };
    // Beside a GC log without them, the probes give the safepoints.
    let safepoint_source = match (pause_source, probes) {
        (PauseSource::GcLog, _) if inputs.log_has_safepoints => SafepointSource::GcLog,
        (PauseSource::GcLog | PauseSource::Ebpf, Ok(_)) => SafepointSource::Ebpf,
        _ => SafepointSource::None,
    };
    // A library attached after the JVM started (a JDK outside the usual
    // places) missed its first pauses.
    let pauses_from_start = match (pause_source, probes) {
        (PauseSource::Ebpf, Ok(from_start)) => from_start,
        _ => inputs.started_after_agent,
    };
    Decision::Measure(Measurement {
        stream,
        pause_source,
        safepoint_source,
        ebpf_reason: probes.err(),
        pauses_from_start,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: bool = false;
    const YOUNG: bool = true;
    const AFTER: bool = true;
    const BEFORE: bool = false;
    const TAGGED: bool = true;
    const UNTAGGED: bool = false;

    /// A decision in the words of the table below.
    fn describe(decision: &Decision) -> String {
        let Decision::Measure(m) = decision else {
            return format!("{decision:?}");
        };
        let stream = match &m.stream {
            StreamChoice::Configured(_) => "configured".to_string(),
            StreamChoice::FollowLog(log) => format!("follow {}", log.display()),
            StreamChoice::Own => "own".to_string(),
        };
        let reason = m.ebpf_reason.map_or("", EbpfReason::as_str);
        let from = if m.pauses_from_start {
            "zero"
        } else {
            "baseline"
        };
        format!(
            "{stream}: pauses {}, safepoints {}, reason '{reason}', compared from {from}",
            m.pause_source.as_str(),
            m.safepoint_source.as_str()
        )
    }

    /// Every row: the probes, the log, whether the log has the safepoints,
    /// young, started after the agent, and the decision.
    #[test]
    fn the_rule_for_each_kind_of_jvm() {
        let attaching = Coverage::Attaching;
        let not_yet = Coverage::NotYet;
        let probed = Coverage::Measured { from_start: true };
        let late = Coverage::Measured { from_start: false };
        let denied = Coverage::NotMeasured(EbpfReason::PermissionDenied, String::new());
        let followed = JvmLog::Followed(StreamId(7));
        let created = |first_created| JvmLog::Own {
            first_created,
            created: Some(PathBuf::from("/x/gc.log")),
        };
        let (first, later) = (created(true), created(false));
        let uncreated = JvmLog::Own {
            first_created: false,
            created: None,
        };
        let (none, configured) = (JvmLog::None, JvmLog::Configured);
        let rows = [
            // Probes not settled: whatever else is known, look again.
            (&attaching, &followed, TAGGED, OLD, AFTER, "LookAgain { soon: true }"),
            (&not_yet, &none, UNTAGGED, YOUNG, AFTER, "LookAgain { soon: false }"),
            // A configured log outranks the probes; its safepoints come from
            // the log with the tag, else from the probes, else from nowhere.
            (&probed, &followed, TAGGED, OLD, BEFORE, "configured: pauses gc_log, safepoints gc_log, reason '', compared from baseline"),
            (&probed, &followed, UNTAGGED, OLD, AFTER, "configured: pauses gc_log, safepoints ebpf, reason '', compared from zero"),
            (&denied, &followed, UNTAGGED, OLD, AFTER, "configured: pauses gc_log, safepoints none, reason 'permission_denied', compared from zero"),
            // Its log is configured and not followed yet: wait for the stream.
            (&probed, &configured, UNTAGGED, OLD, AFTER, "LookAgain { soon: false }"),
            // A log of its own: followed once created; a young JVM is waited
            // for, an old one without it measured on its own.
            (&probed, &first, UNTAGGED, YOUNG, AFTER, "follow /x/gc.log: pauses gc_log, safepoints ebpf, reason '', compared from zero"),
            (&probed, &later, UNTAGGED, YOUNG, AFTER, "LookAgain { soon: false }"),
            (&probed, &uncreated, UNTAGGED, YOUNG, AFTER, "LookAgain { soon: false }"),
            (&denied, &later, TAGGED, OLD, BEFORE, "follow /x/gc.log: pauses gc_log, safepoints gc_log, reason 'permission_denied', compared from baseline"),
            (&probed, &uncreated, UNTAGGED, OLD, AFTER, "own: pauses ebpf, safepoints ebpf, reason '', compared from zero"),
            // No log: the probes, compared from zero only when the library
            // was attached before the JVM started; else hsperfdata.
            (&late, &none, UNTAGGED, OLD, AFTER, "own: pauses ebpf, safepoints ebpf, reason '', compared from baseline"),
            (&probed, &none, UNTAGGED, YOUNG, BEFORE, "own: pauses ebpf, safepoints ebpf, reason '', compared from zero"),
            (&denied, &none, UNTAGGED, OLD, AFTER, "own: pauses hsperfdata, safepoints none, reason 'permission_denied', compared from zero"),
        ];
        for (ebpf, log, log_has_safepoints, young, started_after_agent, expected) in rows {
            let inputs = JvmInputs {
                ebpf: ebpf.clone(),
                log: log.clone(),
                log_has_safepoints,
                young,
                started_after_agent,
            };
            assert_eq!(describe(&decide(inputs.clone())), expected, "{inputs:?}");
        }
    }
}
