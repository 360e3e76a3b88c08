//! The agent as a hostile host treats it: late files, restarts mid-rotation,
//! symlinks, absurd dates and sizes, signals, full disks. Each case runs the
//! release agent and compares what it counted with `pausewatch analyze` of
//! the same bytes, or with a hand-checked figure.

/// Files that are not logs (FIFOs, devices) and writers without O_APPEND.
mod files;
/// Following files: restarts, late files, symlinks, bad bytes.
mod follow;
/// Other users' hsperfdata files: FIFOs, sparse, cut and forged files.
mod host;
/// Bounded memory and responses: dates, sizes, label values, connections.
mod limits;
/// Running as a service: signals, checkpoints, the checkpoint directory.
mod operations;
// Round 3, discovery and the eBPF probes as another local user attacks
// them, is `tests/solo/hostile_probes.rs`: the probes see every JVM of the
// host, and another test's beside them would share their ring buffer.
