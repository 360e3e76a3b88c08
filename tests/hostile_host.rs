//! The agent as a hostile host treats it: late files, restarts mid-rotation,
//! symlinks, absurd dates and sizes, signals, full disks. Each case runs the
//! release agent and compares what it counted with `pausewatch analyze` of
//! the same bytes, or with a hand-checked figure.

mod common;

/// Files that are not logs (FIFOs, devices) and writers without O_APPEND.
#[path = "hostile_host/files.rs"]
mod files;
/// Following files: restarts, late files, symlinks, bad bytes.
#[path = "hostile_host/follow.rs"]
mod follow;
/// Other users' hsperfdata files: FIFOs, sparse, cut and forged files.
#[path = "hostile_host/host.rs"]
mod host;
/// Bounded memory and responses: dates, sizes, label values, connections.
#[path = "hostile_host/limits.rs"]
mod limits;
/// Running as a service: signals, checkpoints, the checkpoint directory.
#[path = "hostile_host/operations.rs"]
mod operations;
/// Round 3: discovery and the eBPF probes as another local user attacks them.
#[path = "hostile_host/probes.rs"]
mod probes;
