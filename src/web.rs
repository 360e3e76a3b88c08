//! The secured endpoints at run time: the web config as last loaded, re-read
//! when its file or a certificate file it names changes (a renewed
//! certificate needs no restart), and the basic-auth check of each request.
//!
//! A web config that turns bad while running is logged and the last good one
//! kept: a typo must not open the endpoints nor take them down.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;

use crate::config::{load_web_config, WebConfig};

/// What identifies a version of a file: a rename over it or a rewrite in
/// place changes one of these.
type Stamp = Option<(i64, i64, u64, u64)>;

fn stamp(file: &Path) -> Stamp {
    let meta = std::fs::metadata(file).ok()?;
    Some((meta.mtime(), meta.mtime_nsec(), meta.ino(), meta.len()))
}

struct Loaded {
    config: Arc<WebConfig>,
    stamps: Vec<Stamp>,
    /// `(user, password)` pairs that matched their hash: bcrypt is slow on
    /// purpose (tens of milliseconds), too slow to pay on every scrape.
    /// Only successes are kept, so it holds the few real credentials; a
    /// reload empties it.
    verified: HashSet<(String, String)>,
}

/// The web config of `--web-config` or `web_config`, shared by the accept
/// loop (TLS) and the request handler (basic auth).
pub struct WebGuard {
    path: PathBuf,
    loaded: Mutex<Loaded>,
}

impl WebGuard {
    pub fn new(path: PathBuf, config: WebConfig) -> WebGuard {
        let stamps = config.files.iter().map(|f| stamp(f)).collect();
        WebGuard {
            path,
            loaded: Mutex::new(Loaded {
                config: Arc::new(config),
                stamps,
                verified: HashSet::new(),
            }),
        }
    }

    /// The web config for a new connection or request, re-read first when
    /// one of its files changed since it was loaded (a few `stat`s).
    pub fn current(&self) -> Arc<WebConfig> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        let stamps: Vec<Stamp> = loaded.config.files.iter().map(|f| stamp(f)).collect();
        if stamps != loaded.stamps {
            match load_web_config(&self.path) {
                Ok(config) => {
                    tracing::info!(file = %self.path.display(), "web config reloaded");
                    loaded.stamps = config.files.iter().map(|f| stamp(f)).collect();
                    loaded.config = Arc::new(config);
                    loaded.verified.clear();
                }
                Err(error) => {
                    // Remembered, so that the error is logged once per change.
                    loaded.stamps = stamps;
                    tracing::error!(%error, "web config not reloaded; the last good one stays in force");
                }
            }
        }
        loaded.config.clone()
    }

    /// Whether the request's `Authorization: Basic` names a configured user
    /// with the right password; true when no users are configured.
    async fn authorized(self: &Arc<Self>, headers: &HeaderMap) -> bool {
        // Re-checked per request: a keep-alive connection may outlive a reload.
        let config = self.current();
        if config.users.is_empty() {
            return true;
        }
        let Some((user, password)) = basic_credentials(headers) else {
            return false;
        };
        let Some(hash) = config.users.get(&user).cloned() else {
            return false;
        };
        let pair = (user, password);
        if self.lock().verified.contains(&pair) {
            return true;
        }
        // Off the runtime's one worker thread: bcrypt takes milliseconds.
        let password = pair.1.clone();
        let matches = tokio::task::spawn_blocking(move || bcrypt::verify(password, &hash))
            .await
            .is_ok_and(|verified| verified.unwrap_or(false));
        if matches {
            let mut loaded = self.lock();
            // Not when a reload happened meanwhile: the hash may have changed.
            if Arc::ptr_eq(&loaded.config, &config) {
                loaded.verified.insert(pair);
            }
        }
        matches
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Loaded> {
        self.loaded.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The user and password of an `Authorization: Basic` header.
fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let (user, password) = String::from_utf8(decoded)
        .ok()?
        .split_once(':')
        .map(|(u, p)| (u.to_string(), p.to_string()))?;
    Some((user, password))
}

/// Middleware: 401 with a `WWW-Authenticate` challenge unless the request
/// carries valid credentials. `/healthz` stays open: liveness probes carry
/// no credentials, and it tells nothing but "ok" and a count of streams.
pub async fn require_basic_auth(
    State(guard): State<Arc<WebGuard>>,
    request: Request,
    next: Next,
) -> Response {
    if request.uri().path() == "/healthz" || guard.authorized(request.headers()).await {
        return next.run(request).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Basic realm=\"pausewatch\"")],
        "Unauthorized\n",
    )
        .into_response()
}
