//! The one writer of what sources read: each [`Update`] a source hands
//! over is folded into the store here, under the lock the source's
//! [`Reading`](crate::sources::reading::Reading) holds for a batch.

use chrono::Utc;

use pausewatch_parsers::{Collector, GcEvent};

use crate::model::jvm::JvmState;
use crate::sources::reading::{CpuGrowth, FileRead, JvmChange, JvmSample, Origin, Update};
use crate::store::{
    add_errors, count_error, AgentState, EbpfReason, PauseSource, SafepointSource, StreamState,
};

/// Writes `update` into `state`.
pub fn apply(state: &mut AgentState, update: Update) {
    match update {
        Update::Stream(id, stream) => {
            state.streams.insert(id, stream);
        }
        Update::AccessStream(id, access) => {
            state.access_streams.insert(id, access);
        }
        Update::Errors(kind, count) => add_errors(&mut state.errors, kind, count),
        Update::GcEvents {
            stream,
            run,
            events,
            origin,
        } => {
            let Some(stream) = state.stream_mut(stream) else {
                return;
            };
            if origin == Origin::GcLog && events.iter().any(|e| matches!(e, GcEvent::JvmRestart(_)))
            {
                tracing::info!(log = %stream.log, "JVM restarted");
            }
            let latency = stream.latency.as_mut();
            stream.jvm.ingest(&run, &events, latency);
            if origin == Origin::GcLog {
                stream.last_event_processed_at = Some(Utc::now());
            }
        }
        Update::GcLogRead { stream, read } => {
            let Some(stream) = state.stream_mut(stream) else {
                return;
            };
            let FileRead {
                stats,
                lag_bytes,
                files_followed,
                readable,
                errors,
            } = read;
            stream.parse = stats;
            stream.read_lag_bytes = lag_bytes;
            stream.files_followed = files_followed;
            // A live file that is missing, with no file of the set open,
            // leaves nothing to read: not readable, so StaleGcLog can say so.
            stream.readable = readable && files_followed > 0;
            errors
                .into_iter()
                .for_each(|kind| count_error(&mut stream.errors, kind));
        }
        Update::AccessLogRead {
            access,
            read,
            malformed,
            malformed_warned,
        } => {
            let Some(access) = state.access_mut(access) else {
                return;
            };
            access.stats = read.stats;
            access.read_lag_bytes = read.lag_bytes;
            access.readable = read.readable;
            access.malformed_window = malformed;
            access.malformed_warned = malformed_warned;
            (read.errors.into_iter()).for_each(|kind| count_error(&mut access.errors, kind));
        }
        Update::ServiceRequests {
            access,
            target,
            requests,
        } => {
            let Some(stream) = state.stream_mut(target) else {
                return;
            };
            let latency = stream.service_latency();
            requests
                .into_iter()
                .for_each(|request| latency.add_request(request));
            let (log, labels) = (stream.log.clone(), stream.labels.clone());
            if let Some(access) = state.access_mut(access) {
                access.target = Some(log);
                access.labels = labels;
            }
        }
        Update::Unattributed { access, requests } => {
            if let Some(access) = state.access_mut(access) {
                access.unattributed_requests += requests;
            }
        }
        Update::Cpu { stream, growth } => {
            if let Some(stream) = state.stream_mut(stream) {
                add_cpu(&mut stream.jvm, growth);
            }
        }
        Update::HistogramMinutes { log, minutes } => {
            let Some(stream) = state
                .stream_by_log(&log)
                .and_then(|id| state.stream_mut(id))
            else {
                return;
            };
            let latency = stream.service_latency();
            for (start, summary) in minutes {
                latency.add_histogram_minute(start, summary);
            }
        }
        Update::Discovered(stream, discovered) => {
            if let Some(stream) = state.stream_mut(stream) {
                stream.discovered = Some(discovered);
            }
        }
        Update::Jvm {
            stream,
            process,
            change,
        } => {
            let carries = |stream: &StreamState| {
                (stream.discovered.as_ref())
                    .is_some_and(|jvm| (jvm.pid, jvm.start_ticks) == process)
            };
            if let Some(stream) = state.stream_mut(stream).filter(|s| carries(s)) {
                apply_to_jvm(stream, change);
            }
        }
        Update::Listening {
            stream,
            ports,
            verdict,
        } => {
            if let Some(jvm) = state.stream_mut(stream).and_then(|s| s.discovered.as_mut()) {
                jvm.ports = ports;
                jvm.requests = Some(verdict);
            }
        }
        Update::KernelRequests { stream, requests } => {
            if let Some(stream) = state.stream_mut(stream) {
                let latency = stream.kernel_latency();
                for (timing, port) in requests {
                    latency.add_port_request(timing, port);
                }
            }
        }
        Update::Multiplexed {
            stream,
            connections,
        } => {
            if let Some(stream) = state.stream_mut(stream) {
                stream.multiplexed_connections += connections;
            }
        }
        Update::RecordsLost {
            stream,
            minute,
            records,
        } => {
            if let Some(stream) = state.stream_mut(stream) {
                stream.jvm.mark_records_lost(minute, records);
            }
        }
        Update::StopNeverEnded { stream, minute } => {
            if let Some(stream) = state.stream_mut(stream) {
                stream.jvm.mark_max_lower_bound_at(minute);
            }
        }
        Update::LogProbeMismatch { stream, mismatch } => {
            if let Some(jvm) = state.stream_mut(stream).and_then(|s| s.discovered.as_mut()) {
                jvm.log_probe_mismatch = Some(mismatch);
            }
        }
        Update::SafepointProbeMismatch { stream, mismatch } => {
            if let Some(runtime) = state.stream_mut(stream).and_then(|s| s.runtime.as_mut()) {
                runtime.safepoint_probe_mismatch = mismatch;
            }
        }
        Update::ProbesBlind(stream) => {
            if let Some(jvm) = state.stream_mut(stream).and_then(|s| s.discovered.as_mut()) {
                if jvm.pause_source == PauseSource::Ebpf {
                    jvm.pause_source = PauseSource::Hsperfdata;
                }
                jvm.safepoint_source = SafepointSource::None;
                jvm.ebpf_reason = Some(EbpfReason::NoRecords);
            }
        }
        Update::UnclaimedRecords(records) => {
            *state.ebpf_records_unclaimed.get_or_insert(0) += records;
        }
    }
}

/// Writes what a discovered JVM's counters and /proc say into its stream.
fn apply_to_jvm(stream: &mut StreamState, change: JvmChange) {
    match change {
        JvmChange::Unavailable(reason) => {
            if let Some(jvm) = &mut stream.discovered {
                jvm.unavailable = reason;
            }
        }
        JvmChange::ThreadsCpu { gc_cpu, growth } => {
            if let Some(growth) = growth {
                add_cpu(&mut stream.jvm, growth);
            }
            stream.jvm.gc_cpu = gc_cpu;
        }
        JvmChange::Sample(sample) => {
            let JvmSample {
                mut stats,
                growth,
                run,
                recovered,
            } = *sample;
            let StreamState {
                jvm,
                latency,
                runtime,
                ..
            } = stream;
            if let Some(growth) = growth {
                add_cpu(jvm, growth);
            }
            let before = runtime.as_ref();
            let unresolved = recovered.as_ref().map_or(0, |r| r.unresolved);
            stats.unresolved_pauses = before.map_or(0, |r| r.unresolved_pauses) + unresolved;
            // The last sample, taken after the exit, finds no /proc/PID/stat.
            stats.cpu_seconds = stats.cpu_seconds.or(before.and_then(|r| r.cpu_seconds));
            // Compared by the eBPF source, which sees the safepoint in flight.
            stats.safepoint_probe_mismatch = before.and_then(|r| r.safepoint_probe_mismatch);
            match recovered {
                Some(recovered) => {
                    jvm.ingest(&run, &recovered.events, latency.as_mut());
                    if recovered.unresolved > 0 {
                        jvm.mark_max_lower_bound(&recovered.events);
                    }
                }
                None => {
                    // A log picked up mid-file missed its `Version:` and
                    // `Using` lines; the JVM writing it knows both.
                    if jvm.jdk_version.is_none() {
                        jvm.jdk_version = run.version;
                    }
                    if jvm.collector == Collector::Unknown {
                        jvm.collector = run.collector;
                    }
                }
            }
            *runtime = Some(stats);
        }
        JvmChange::Released => {
            stream.runtime = None;
            stream.discovered = None;
        }
    }
}

/// Adds `growth` to its minute of `jvm`.
fn add_cpu(jvm: &mut JvmState, growth: CpuGrowth) {
    let CpuGrowth {
        minute,
        gc_seconds,
        process_seconds,
        cpus,
    } = growth;
    jvm.add_cpu(minute, gc_seconds, process_seconds, cpus);
}
