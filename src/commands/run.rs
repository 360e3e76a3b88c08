//! `pausewatch run`: the HTTP server on a small runtime, signal handling,
//! and the agent's loop on the main thread.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::agent::{Agent, Wake};
use crate::checkpoint::NewerVersion;
use crate::config::{load_web_config, Config, DEFAULT_CHECKPOINT_DIR};
use crate::export::otlp;
use crate::export::prometheus as metrics;
use crate::server;
use crate::store::Store;
use crate::web::WebGuard;

/// A fault in how the agent was set up rather than in what it met while
/// running: the address is taken, the checkpoint directory is held or holds
/// a newer agent's checkpoint. Exit 2.
#[derive(Debug)]
pub struct SetupError(pub String);

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SetupError {}

/// Where an agent without a configuration keeps its checkpoint: the
/// packaged service's directory when running as root and it can be held,
/// else the user's own state directory (`$XDG_STATE_HOME/pausewatch`, or
/// `~/.local/state/pausewatch`), so that `pausewatch run` works for any
/// user and beside the packaged service.
pub fn zero_config_checkpoint_dir() -> PathBuf {
    let system = PathBuf::from(DEFAULT_CHECKPOINT_DIR);
    if rustix::process::geteuid().is_root() && can_hold(&system) {
        return system;
    }
    user_state_dir(std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME")).unwrap_or(system)
}

/// The XDG state directory's `pausewatch`: `XDG_STATE_HOME` when it is an
/// absolute path (the specification ignores a relative one), else under `HOME`.
fn user_state_dir(
    xdg_state_home: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    let absolute =
        |value: std::ffi::OsString| Some(PathBuf::from(value)).filter(|p| p.is_absolute());
    xdg_state_home
        .and_then(absolute)
        .or_else(|| home.and_then(absolute).map(|h| h.join(".local/state")))
        .map(|dir| dir.join("pausewatch"))
}

/// Whether this process can create `dir` and take its lock now (released
/// at once: the agent takes it again).
fn can_hold(dir: &Path) -> bool {
    std::fs::create_dir_all(dir).is_ok() && crate::agent::lock_checkpoint_dir(dir).is_ok()
}

/// Serves the endpoints and runs the agent until SIGTERM or SIGINT.
pub fn run(config: Config) -> Result<()> {
    // Before the agent: the eBPF probes it loads take their descriptors
    // out of the share planned for held files.
    let limits = share_descriptors(config.http);
    let store = Arc::new(Store::default());
    let agent = Agent::new(config.clone(), store.clone()).map_err(|error| {
        if error.is::<crate::agent::CheckpointDirUnusable>() || error.is::<NewerVersion>() {
            SetupError(error.to_string()).into()
        } else {
            error
        }
    })?;
    if let Some(otlp) = config.otlp.clone() {
        otlp::spawn(otlp, store.clone(), env!("CARGO_PKG_VERSION"))
            .map_err(|error| SetupError(format!("cannot start the OTLP exporter: {error}")))?;
    }
    let registry = Arc::new(metrics::registry(store.clone(), env!("CARGO_PKG_VERSION")));
    let router = server::router(store, registry);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    // Handlers first: a signal that arrives once /healthz answers must not
    // meet the default action, which kills the process for SIGHUP and SIGUSR*.
    let signals = {
        let _context = runtime.enter();
        Signals::install()?
    };
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(config.listen))
        .map_err(|error| SetupError(format!("cannot listen on {}: {error}", config.listen)))?;
    // With port 0 the system picks one: say which.
    let bound = listener.local_addr()?;
    tracing::info!(
        listen = %bound,
        sources = config.gc_log.len(),
        checkpoint_dir = %config.checkpoint_dir.display(),
        "pausewatch agent started"
    );
    let guard = web_guard(&config)?;
    runtime.spawn(async move {
        if let Err(error) = server::serve(listener, router, limits, guard).await {
            tracing::error!(%error, "HTTP server stopped");
        }
    });
    let waker = agent.waker();
    runtime.spawn(async move {
        signals.forward(waker).await;
    });
    let result = agent.run();
    tracing::info!("pausewatch agent stopped");
    // The final checkpoint is written: nothing left on the runtime is worth
    // waiting for, not even a response blocked on a client that reads slowly.
    runtime.shutdown_background();
    result
}

/// Raises the soft limit on open files to the hard one, then shares the
/// descriptors out so that followed files cannot take those of the HTTP
/// server and the checkpoint: the limits to serve with.
fn share_descriptors(limits: crate::config::HttpLimits) -> crate::config::HttpLimits {
    let limit = match crate::follow::raise_open_files_limit() {
        Ok((before, after)) => {
            if after > before {
                tracing::info!(
                    before,
                    after,
                    "raised the soft limit on open files to the hard limit"
                );
            }
            after
        }
        Err(error) => {
            tracing::warn!(%error, "cannot read or raise the limit on open files");
            return limits;
        }
    };
    let plan = crate::follow::plan(limit, limits.max_connections);
    crate::follow::set_budget(plan.files);
    if plan.connections < limits.max_connections {
        tracing::warn!(
            open_files_limit = limit,
            max_connections = plan.connections,
            files_held_open = plan.files,
            "few file descriptors: fewer connections served at once; files beyond those held open are reopened at each poll"
        );
    }
    crate::config::HttpLimits {
        max_connections: plan.connections,
        ..limits
    }
}

/// The web config's guard, and a warning when the endpoints are reachable
/// from other hosts without TLS or without authentication.
fn web_guard(config: &Config) -> Result<Option<Arc<WebGuard>>> {
    let web = match &config.web_config {
        Some(file) => Some((
            file,
            load_web_config(file).map_err(|e| SetupError(e.to_string()))?,
        )),
        None => None,
    };
    if !config.listen.ip().is_loopback() {
        let tls = web.as_ref().is_some_and(|(_, web)| web.tls.is_some());
        let auth = web.as_ref().is_some_and(|(_, web)| !web.users.is_empty());
        let missing = match (tls, auth) {
            (true, true) => None,
            (false, true) => Some("TLS"),
            (true, false) => Some("authentication"),
            (false, false) => Some("TLS or authentication"),
        };
        if let Some(missing) = missing {
            tracing::warn!(
                listen = %config.listen,
                "the endpoints are reachable from other hosts without {missing}; see web_config"
            );
        }
    }
    Ok(web.map(|(file, web)| Arc::new(WebGuard::new(file.clone(), web))))
}

/// The signals the agent handles, registered before it answers anything.
struct Signals {
    terminate: Signal,
    interrupt: Signal,
    hangup: Signal,
    user1: Signal,
    user2: Signal,
}

impl Signals {
    fn install() -> std::io::Result<Self> {
        Ok(Self {
            terminate: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
            hangup: signal(SignalKind::hangup())?,
            user1: signal(SignalKind::user_defined1())?,
            user2: signal(SignalKind::user_defined2())?,
        })
    }

    /// Turns signals into wake-ups of the agent's loop, so that each takes
    /// effect at once whatever the poll interval: SIGTERM and SIGINT stop the
    /// agent after a final checkpoint; SIGHUP, SIGUSR1 and SIGUSR2 never kill it.
    async fn forward(mut self, waker: std::sync::mpsc::Sender<Wake>) {
        loop {
            let wake = tokio::select! {
                _ = self.terminate.recv() => Wake::Shutdown,
                _ = self.interrupt.recv() => Wake::Shutdown,
                _ = self.hangup.recv() => Wake::Reload,
                _ = self.user1.recv() => Wake::Checkpoint,
                _ = self.user2.recv() => Wake::Status,
            };
            let shutdown = wake == Wake::Shutdown;
            if waker.send(wake).is_err() || shutdown {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_state_dir_follows_xdg() {
        let dir = |xdg: Option<&str>, home: Option<&str>| {
            user_state_dir(xdg.map(Into::into), home.map(Into::into))
        };
        assert_eq!(
            dir(Some("/s"), Some("/h")),
            Some(PathBuf::from("/s/pausewatch"))
        );
        assert_eq!(
            dir(None, Some("/h")),
            Some(PathBuf::from("/h/.local/state/pausewatch"))
        );
        // A relative or empty XDG_STATE_HOME is ignored, as the specification says.
        assert_eq!(
            dir(Some("rel"), Some("/h")),
            Some(PathBuf::from("/h/.local/state/pausewatch"))
        );
        assert_eq!(
            dir(Some(""), Some("/h")),
            Some(PathBuf::from("/h/.local/state/pausewatch"))
        );
        assert_eq!(dir(None, None), None);
    }
}
