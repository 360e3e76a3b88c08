//! The integration tests that need the host to themselves: their JVMs'
//! figures are held to the JVMs' own counters (`runtime_stats`, `ebpf`) or
//! to the latency clients saw (`kernel_latency`), or their probes' ring
//! buffer is filled on purpose (`hostile_probes`). The eBPF probes see
//! every JVM of the host, and another test's JVM beside them would make
//! stops, records or slow requests that none of theirs caused. Cargo runs
//! test binaries one after another, in the order of their names, so these
//! run after `tests/it/`; `.ci/run` runs them once its lane of `tests/it`
//! has ended too (beside the fleet's Prometheus and agents, a client's
//! slowest request took 20 ms where the kernel saw 13). [`ALONE`] runs them
//! one at a time.

use std::sync::{Mutex, MutexGuard, PoisonError};

#[path = "../common/mod.rs"]
mod common;

mod ebpf;
mod hostile_probes;
mod kernel_latency;
mod runtime_stats;

/// Held by each test of this binary for its whole run.
static ALONE: Mutex<()> = Mutex::new(());

/// This test's turn: the host to itself.
fn alone() -> MutexGuard<'static, ()> {
    ALONE.lock().unwrap_or_else(PoisonError::into_inner)
}
