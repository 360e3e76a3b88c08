//! A JVM's collector CPU from its threads, for JVMs whose hsperfdata has no
//! `sun.threads.cpu_time.*` counters (before JDK 22, and ZGC and Shenandoah
//! on every JDK): each collector thread's `/proc/PID/task/TID/schedstat`
//! first field (`sum_exec_runtime`, nanoseconds), which matched JDK 25's own
//! counters exactly where utime and stime ticks were 10% off. Threads are
//! told apart by name; a thread's name is read once, at first sight.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use procfs::process::Process;

use crate::model::gc_cpu::{
    hotspot_thread_kind, GcCpu, ThreadKind, ThreadReading, ThreadTotals, NO_COLLECTOR_THREADS,
    TASKS_DENIED,
};

/// How often the threads are read: a JVM's runtime stats are sampled up to
/// several times a second, which the collector's CPU (a counter read per
/// minute) does not need, and a host's JVMs have tens of threads each.
const READ_EVERY: Duration = Duration::from_secs(1);

/// The threads of one JVM, sampled.
#[derive(Debug, Default)]
pub struct GcThreads {
    /// The last reading and when it was taken.
    last: Option<(Instant, GcCpu)>,
    /// Each thread seen, by tid: its start and what it is (`None`: not of
    /// interest). A tid reused within one sampling interval would be taken
    /// for the thread before it: pids wrap after millions of threads.
    kinds: HashMap<i32, (u64, Option<ThreadKind>)>,
    totals: ThreadTotals,
}

impl GcThreads {
    /// Reads the threads of process `pid` under `proc_root` and returns the
    /// totals so far, or why there are none.
    pub fn sample(&mut self, proc_root: &Path, pid: u32) -> GcCpu {
        match &self.last {
            Some((at, cpu)) if at.elapsed() < READ_EVERY => cpu.clone(),
            _ => {
                let cpu = self.read(proc_root, pid);
                self.last = Some((Instant::now(), cpu.clone()));
                cpu
            }
        }
    }

    fn read(&mut self, proc_root: &Path, pid: u32) -> GcCpu {
        let tasks = Process::new_with_root(proc_root.join(pid.to_string()))
            .and_then(|process| process.tasks());
        let Ok(tasks) = tasks else {
            // Gone (the last sample after the exit) or refused.
            return match self.kinds.is_empty() {
                true => unavailable(TASKS_DENIED),
                false => self.totals.gc_cpu(),
            };
        };
        let mut readings = Vec::new();
        let mut seen = HashMap::new();
        let mut denied = false;
        for task in tasks.flatten() {
            // Stat (name and start) is read once per thread.
            let (start, kind) = match self.kinds.get(&task.tid) {
                Some(known) => *known,
                None => match task.stat() {
                    Ok(stat) => (stat.starttime, hotspot_thread_kind(&stat.comm)),
                    Err(_) => {
                        denied = true;
                        continue;
                    }
                },
            };
            seen.insert(task.tid, (start, kind));
            let Some((kind, collector)) = kind else {
                continue;
            };
            match task.schedstat() {
                Ok(schedstat) => readings.push(ThreadReading {
                    tid: task.tid,
                    start_ticks: start,
                    kind,
                    collector,
                    runtime_ns: schedstat.sum_exec_runtime,
                }),
                Err(_) => denied = true,
            }
        }
        self.kinds = seen;
        if readings.is_empty() && denied {
            return unavailable(TASKS_DENIED);
        }
        self.totals.update(&readings);
        let cpu = self.totals.gc_cpu();
        match cpu.kinds.is_empty() {
            true if cpu.beside.is_empty() => unavailable(NO_COLLECTOR_THREADS),
            _ => cpu,
        }
    }
}

fn unavailable(reason: &str) -> GcCpu {
    GcCpu {
        unavailable: Some(reason.to_string()),
        ..GcCpu::default()
    }
}
