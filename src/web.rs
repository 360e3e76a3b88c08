//! The secured endpoints at run time: the web config as last loaded, re-read
//! when its file or a certificate file it names changes (a renewed
//! certificate needs no restart), and the basic-auth check of each request.
//!
//! A web config that turns bad while running is logged and the last good one
//! kept: a typo must not open the endpoints nor take them down.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use tokio::sync::Semaphore;

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
    /// SHA-256 of `user NUL password` of the pairs that matched their hash,
    /// as exporter-toolkit caches them: bcrypt is slow on purpose (tens of
    /// milliseconds), too slow to pay on every scrape. Only successes are
    /// kept, so it holds the few real credentials, never in clear; a reload
    /// empties it.
    verified: HashSet<[u8; 32]>,
    /// A hash of the configured users' cost that unknown users are checked
    /// against, so that they take as long as known ones (made when first
    /// needed, off the runtime's thread).
    dummy: Arc<OnceLock<String>>,
}

/// bcrypt verifications at once; beyond, a request is refused at once
/// (429) rather than queued: 200 wrong passwords once cost 17 CPU-seconds.
const MAX_VERIFICATIONS: usize = 2;
/// Refusals remembered per client address before the stale ones go.
const MAX_CLIENTS: usize = 4096;
/// Failures in a row a client may have before it is backed off: a person
/// mistyping, or a scraper with an old password, still gets its 401s.
const FREE_FAILURES: u32 = 5;
/// The longest a client waits after failures before it may try again.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The client address of a connection, for per-client backoff.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub Option<IpAddr>);

/// What a request's credentials got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Allowed,
    Denied,
    /// Too many verifications at once, or this client failed recently.
    Throttled,
}

/// A client's recent failures.
struct Failures {
    count: u32,
    until: Instant,
}

fn credential_key(user: &str, password: &str) -> [u8; 32] {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    context.update(user.as_bytes());
    context.update(&[0]);
    context.update(password.as_bytes());
    let mut key = [0; 32];
    key.copy_from_slice(context.finish().as_ref());
    key
}

/// The web config of `--web-config` or `web_config`, shared by the accept
/// loop (TLS) and the request handler (basic auth).
pub struct WebGuard {
    path: PathBuf,
    loaded: Mutex<Loaded>,
    verifications: Arc<Semaphore>,
    failures: Mutex<HashMap<IpAddr, Failures>>,
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
                dummy: Arc::default(),
            }),
            verifications: Arc::new(Semaphore::new(MAX_VERIFICATIONS)),
            failures: Mutex::new(HashMap::new()),
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
                    loaded.dummy = Arc::default();
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
    /// with the right password (allowed when no users are configured).
    async fn authorized(self: &Arc<Self>, headers: &HeaderMap, peer: Option<IpAddr>) -> Verdict {
        // Re-checked per request: a keep-alive connection may outlive a reload.
        let config = self.current();
        if config.users.is_empty() {
            return Verdict::Allowed;
        }
        let Some((user, password)) = basic_credentials(headers) else {
            return Verdict::Denied;
        };
        let key = credential_key(&user, &password);
        if self.lock().verified.contains(&key) {
            if let Some(peer) = peer {
                self.record(peer, true);
            }
            return Verdict::Allowed;
        }
        if let Some(peer) = peer {
            let failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
            if failures
                .get(&peer)
                .is_some_and(|f| f.until > Instant::now())
            {
                return Verdict::Throttled;
            }
        }
        let Ok(_permit) = self.verifications.clone().try_acquire_owned() else {
            return Verdict::Throttled;
        };
        let known = config.users.get(&user).cloned();
        let (dummy, first) = (
            self.lock().dummy.clone(),
            config.users.values().next().cloned(),
        );
        // Off the runtime's one worker thread: bcrypt takes milliseconds.
        let matches = tokio::task::spawn_blocking(move || match known {
            Some(hash) => bcrypt::verify(password, &hash).unwrap_or(false),
            None => {
                // The same work for a name that is not configured.
                let cost = first
                    .and_then(|h| h.parse::<bcrypt::HashParts>().ok())
                    .map_or(bcrypt::DEFAULT_COST, |p| p.get_cost());
                let dummy = dummy.get_or_init(|| {
                    bcrypt::hash("pausewatch: no such user", cost).unwrap_or_default()
                });
                let _ = bcrypt::verify(password, dummy);
                false
            }
        })
        .await
        .unwrap_or(false);
        if matches {
            let mut loaded = self.lock();
            // Not when a reload happened meanwhile: the hash may have changed.
            if Arc::ptr_eq(&loaded.config, &config) {
                loaded.verified.insert(key);
            }
        }
        if let Some(peer) = peer {
            self.record(peer, matches);
        }
        if matches {
            Verdict::Allowed
        } else {
            Verdict::Denied
        }
    }

    /// Backs a client off past [`FREE_FAILURES`] failures in a row (100 ms,
    /// doubling, at most [`MAX_BACKOFF`]); a success clears it.
    fn record(&self, peer: IpAddr, success: bool) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if success {
            failures.remove(&peer);
            return;
        }
        let now = Instant::now();
        if failures.len() >= MAX_CLIENTS {
            failures.retain(|_, f| f.until > now);
        }
        let entry = failures.entry(peer).or_insert(Failures {
            count: 0,
            until: now,
        });
        entry.count = entry.count.saturating_add(1);
        if let Some(beyond) = entry.count.checked_sub(FREE_FAILURES + 1) {
            let backoff = Duration::from_millis(100 << beyond.min(6)).min(MAX_BACKOFF);
            entry.until = now + backoff;
        }
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
    if request.uri().path() == "/healthz" {
        return next.run(request).await;
    }
    let peer = request.extensions().get::<Peer>().and_then(|p| p.0);
    match guard.authorized(request.headers(), peer).await {
        Verdict::Allowed => next.run(request).await,
        Verdict::Throttled => (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "1")],
            "Too many authentication attempts\n",
        )
            .into_response(),
        Verdict::Denied => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Basic realm=\"pausewatch\"")],
            "Unauthorized\n",
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWORD: &str = "scrape me gently";

    /// A guard with `alice`'s password hashed at `cost`, and no files.
    fn guard(cost: u32) -> Arc<WebGuard> {
        let users = [("alice".to_string(), bcrypt::hash(PASSWORD, cost).unwrap())];
        let config = WebConfig {
            tls: None,
            users: users.into_iter().collect(),
            files: Vec::new(),
        };
        Arc::new(WebGuard::new(PathBuf::from("/nonexistent/web.yml"), config))
    }

    fn basic(user: &str, password: &str) -> HeaderMap {
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            format!("Basic {encoded}").parse().unwrap(),
        );
        headers
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_wrong_passwords_beyond_the_bound_are_refused_at_once() {
        let guard = guard(8);
        let attempts: Vec<_> = (0..20)
            .map(|i| {
                let guard = guard.clone();
                tokio::spawn(async move {
                    let headers = basic("alice", &format!("guess {i}"));
                    guard.authorized(&headers, None).await
                })
            })
            .collect();
        let mut verdicts = Vec::new();
        for attempt in attempts {
            verdicts.push(attempt.await.unwrap());
        }
        let denied = verdicts.iter().filter(|v| **v == Verdict::Denied).count();
        let throttled = verdicts
            .iter()
            .filter(|v| **v == Verdict::Throttled)
            .count();
        assert_eq!(denied + throttled, 20, "{verdicts:?}");
        assert!(denied >= 1 && throttled >= 10, "{verdicts:?}");
    }

    #[tokio::test]
    async fn a_client_is_backed_off_after_a_failure_and_cleared_by_a_success() {
        let guard = guard(4);
        let address = IpAddr::from([10, 0, 0, 9]);
        let peer = Some(address);
        let other = Some(IpAddr::from([10, 0, 0, 10]));
        let wrong = basic("alice", "wrong");
        for _ in 0..=FREE_FAILURES {
            assert_eq!(guard.authorized(&wrong, peer).await, Verdict::Denied);
        }
        // At once again: refused without a verification, even the right password.
        let right = basic("alice", PASSWORD);
        assert_eq!(guard.authorized(&right, peer).await, Verdict::Throttled);
        // Another client is not held back.
        assert_eq!(guard.authorized(&right, other).await, Verdict::Allowed);
        tokio::time::sleep(Duration::from_millis(150)).await;
        let fresh = basic("alice", PASSWORD);
        assert_eq!(guard.authorized(&fresh, peer).await, Verdict::Allowed);
        assert!(guard.failures.lock().unwrap().get(&address).is_none());
    }

    #[tokio::test]
    async fn an_unknown_user_costs_a_verification_as_a_known_one() {
        let guard = guard(8);
        let timed = |user: &'static str| {
            let guard = guard.clone();
            async move {
                let started = Instant::now();
                assert_eq!(
                    guard.authorized(&basic(user, "x"), None).await,
                    Verdict::Denied
                );
                started.elapsed()
            }
        };
        // The first unknown user makes the dummy hash.
        timed("mallory").await;
        let known = timed("alice").await;
        let unknown = timed("mallory").await;
        assert!(unknown * 3 > known, "unknown {unknown:?}, known {known:?}");
    }

    #[test]
    fn credentials_are_cached_by_digest_not_in_clear() {
        let key = credential_key("alice", PASSWORD);
        assert_ne!(key, credential_key("alice", "scrape me gentlY"));
        assert_ne!(key, credential_key("alic", &format!("e{PASSWORD}")));
        let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        // sha256("alice\0scrape me gently"), by `printf 'alice\0scrape me gently' | sha256sum`.
        assert_eq!(
            hex,
            "2fb0f75449a62ccdbc058ea436d2934bc917f5503b8d59285cad6573f8ccdbca"
        );
    }
}
