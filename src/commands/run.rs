//! `pausewatch run`: the HTTP server on a small runtime, signal handling,
//! and the agent's loop on the main thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::agent::Agent;
use crate::config::Config;
use crate::export::prometheus as metrics;
use crate::server;
use crate::store::Store;

/// Serves the endpoints and runs the agent until SIGTERM or SIGINT.
pub fn run(config: Config) -> Result<()> {
    let store = Arc::new(Store::default());
    let registry = Arc::new(metrics::registry(store.clone(), env!("CARGO_PKG_VERSION")));
    let router = server::router(store.clone(), registry);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(config.listen))
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    tracing::info!(listen = %config.listen, sources = config.gc_log.len(), "pausewatch agent started");
    let limits = config.http;
    runtime.spawn(async move {
        if let Err(error) = server::serve(listener, router, limits).await {
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
    let agent = Agent::new(config, store)?;
    let result = agent.run(shutdown);
    tracing::info!("pausewatch agent stopped");
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    result
}
