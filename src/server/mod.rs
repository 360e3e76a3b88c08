//! The agent's HTTP endpoints: `/metrics` for Prometheus, `/healthz` for
//! liveness probes and `/api/v1/minutes`, the exact per-minute pause series
//! that dashboards and correlation tools line up with request latency.
//!
//! Handlers read a snapshot of the store and build their response without
//! holding its lock.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use serde::{Deserialize, Serialize};

mod admission;
mod minutes;

use crate::config::HttpLimits;
use crate::export::prometheus as metrics;
use crate::store::SharedStore;
use crate::web::{require_basic_auth, Peer, WebGuard};
use admission::{Admission, Admitted, RequestStarted, SPARE_HEADER_TIMEOUT};
pub use minutes::{JvmMinutes, MinutesResponse};

/// How long to wait after a failed accept before the next.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);
/// How often a failing accept is logged.
const ACCEPT_ERROR_LOG_EVERY: Duration = Duration::from_secs(60);

#[derive(Clone)]
struct App {
    store: SharedStore,
    registry: Arc<metrics::Exposition>,
}

/// Routes `/metrics`, `/healthz` and `/api/v1/minutes`; any other path is 404.
pub fn router(store: SharedStore, registry: Arc<metrics::Exposition>) -> Router {
    Router::new()
        .route("/metrics", get(metrics_handler))
        .route("/healthz", get(healthz))
        .route("/api/v1/minutes", get(minutes::minutes))
        .route("/api/v1/alerts", get(alerts))
        .with_state(App { store, registry })
}

/// Serves `router` on `listener` within `limits` until the process ends,
/// with TLS and basic auth when `guard` has a web config.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: HttpLimits,
    guard: Option<Arc<WebGuard>>,
) -> std::io::Result<()> {
    serve_with_shutdown(listener, router, limits, guard, std::future::pending()).await
}

/// As [`serve`], but stops accepting connections when `shutdown` completes
/// and returns once the requests in flight are answered.
///
/// Connections are accepted here rather than by `axum::serve`, which has no
/// limit and no timeouts: 1,100 idle connections once used up the agent's
/// 1,024 descriptors, so checkpoints failed and `/healthz` hung. At most
/// `max_connections` are served at once, a client address at most
/// `max_connections_per_client` of them, and a few spare connections beyond
/// serve `/healthz` alone ([`admission`]); the rest are closed at once. One
/// that sends no complete header for `header_timeout`, new or idle between
/// requests, is closed; a TLS handshake gets no longer either.
pub async fn serve_with_shutdown(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: HttpLimits,
    guard: Option<Arc<WebGuard>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let router = match &guard {
        Some(guard) => router.layer(axum::middleware::from_fn_with_state(
            guard.clone(),
            require_basic_auth,
        )),
        None => router,
    };
    let health_only = router
        .clone()
        .layer(axum::middleware::from_fn(only_healthz));
    let spare_limits = HttpLimits {
        header_timeout: limits.header_timeout.min(SPARE_HEADER_TIMEOUT),
        ..limits
    };
    let admission = Admission::new(limits.max_connections, limits.max_connections_per_client);
    let (stop, stopped) = tokio::sync::watch::channel(());
    let mut connections = tokio::task::JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = accept(&listener) => accepted,
        };
        let Some(stream) = accepted else {
            continue;
        };
        // The client's address, for its share of the slots and basic
        // auth's per-client backoff.
        let address = stream.peer_addr().ok().map(|a| a.ip());
        let Some(admitted) = admission.admit(address).await else {
            continue;
        };
        let peer = Extension(Peer(address));
        let stopped = stopped.clone();
        let tls = guard.as_ref().and_then(|guard| guard.current().tls.clone());
        match admitted {
            Admitted::Full(slot) => {
                let service = TowerToHyperService::new(router.clone().layer(peer));
                connections.spawn(async move {
                    let _slot = slot;
                    serve_plain_or_tls(stream, tls, service, limits, true, stopped).await;
                });
            }
            Admitted::Spare(slot, evicted) => {
                let service = health_only.clone().layer(peer);
                let service = TowerToHyperService::new(service.layer(Extension(slot.started())));
                connections.spawn(async move {
                    let _slot = slot;
                    // Closed only when evicted: once its request has
                    // arrived, the list drops the sender and it is served.
                    let evicted = async {
                        if evicted.await.is_err() {
                            std::future::pending::<()>().await;
                        }
                    };
                    tokio::select! {
                        () = serve_plain_or_tls(stream, tls, service, spare_limits, false, stopped) => {}
                        () = evicted => {}
                    }
                });
            }
        }
        while connections.try_join_next().is_some() {}
    }
    drop(stop);
    while connections.join_next().await.is_some() {}
    Ok(())
}

/// A spare connection serves `/healthz` alone: anything else is told at once
/// to come back, rather than waiting for a slot.
async fn only_healthz(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    if let Some(started) = request.extensions().get::<RequestStarted>() {
        started.mark();
    }
    if request.uri().path() == "/healthz" {
        return next.run(request).await;
    }
    let mut busy = error(
        StatusCode::SERVICE_UNAVAILABLE,
        "too many connections: this one serves /healthz only, try again".to_string(),
    );
    busy.headers_mut()
        .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    busy
}

/// Serves one connection, after a TLS handshake when the web config has TLS.
async fn serve_plain_or_tls(
    stream: tokio::net::TcpStream,
    tls: Option<Arc<rustls::ServerConfig>>,
    service: TowerToHyperService<Router>,
    limits: HttpLimits,
    keep_alive: bool,
    stopped: tokio::sync::watch::Receiver<()>,
) {
    let Some(tls) = tls else {
        return serve_connection(stream, service, limits, keep_alive, stopped).await;
    };
    let handshake = tokio_rustls::TlsAcceptor::from(tls).accept(stream);
    match tokio::time::timeout(limits.header_timeout, handshake).await {
        Ok(Ok(stream)) => serve_connection(stream, service, limits, keep_alive, stopped).await,
        Ok(Err(error)) => tracing::debug!(%error, "TLS handshake failed"),
        Err(_) => tracing::debug!("TLS handshake timed out"),
    }
}

/// Serves HTTP/1.1 on one connection, plain or TLS, until the client
/// leaves, its header times out, or `stopped` says the server is stopping.
async fn serve_connection<S>(
    stream: S,
    service: TowerToHyperService<Router>,
    limits: HttpLimits,
    keep_alive: bool,
    mut stopped: tokio::sync::watch::Receiver<()>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .keep_alive(keep_alive)
        .header_read_timeout(limits.header_timeout);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        _ = stopped.changed() => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}

/// The next connection. `None` after an accept error (out of descriptors, a
/// connection reset before it was accepted), after a pause so that a full
/// descriptor table is not spun on.
async fn accept(listener: &tokio::net::TcpListener) -> Option<tokio::net::TcpStream> {
    match listener.accept().await {
        Ok((stream, _)) => {
            // Without it, Nagle's algorithm held the end of each response
            // on a kept-alive connection until the client's delayed ACK:
            // 44 ms per request from the second on (0.5 ms on a new one),
            // in every scrape and API call that reuses its connection.
            let _ = stream.set_nodelay(true);
            Some(stream)
        }
        Err(error) => {
            // Out of descriptors it fails on every try: one line a minute
            // (5,745 lines in 10 minutes once), with how many were not logged.
            static UNLOGGED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            static LOGGED: std::sync::Mutex<Option<std::time::Instant>> =
                std::sync::Mutex::new(None);
            {
                let mut logged = LOGGED
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if logged.is_none_or(|at| at.elapsed() >= ACCEPT_ERROR_LOG_EVERY) {
                    *logged = Some(std::time::Instant::now());
                    let unlogged = UNLOGGED.swap(0, std::sync::atomic::Ordering::Relaxed);
                    tracing::warn!(%error, unlogged, "cannot accept an HTTP connection");
                } else {
                    UNLOGGED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
            tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
            None
        }
    }
}

/// Rendered on a blocking thread: with hundreds of JVMs it takes long enough
/// to hold up `/healthz` on the server's one worker thread.
async fn metrics_handler(State(app): State<App>) -> Response {
    match tokio::task::spawn_blocking(move || metrics::render(&app.registry)).await {
        Ok(body) => ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], body).into_response(),
        Err(failed) => error(StatusCode::INTERNAL_SERVER_ERROR, failed.to_string()),
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Health {
    status: String,
    streams: usize,
    /// Why the agent is not healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

/// `ok`, or 503 `stalled` when the agent's loop has not beaten for longer
/// than its limit (stuck in a system call, on a lock, or dead): a liveness
/// probe then restarts an agent that would otherwise serve stale figures.
async fn healthz(State(app): State<App>) -> Response {
    // Not a snapshot: that would share every stream, and the agent's next
    // write to each would copy it.
    let streams = app.store.write().streams.len();
    match app.store.heartbeat.stalled() {
        None => Json(Health {
            status: "ok".to_string(),
            streams,
            reason: None,
        })
        .into_response(),
        Some((age, limit)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(Health {
                status: "stalled".to_string(),
                streams,
                reason: Some(format!(
                    "the agent's loop has made no progress for {:.1} s (limit {} s)",
                    age.as_secs_f64(),
                    limit.as_secs()
                )),
            }),
        )
            .into_response(),
    }
}

fn error(status: StatusCode, message: String) -> Response {
    (status, Json(serde_json::json!({ "error": message }))).into_response()
}

/// Pending and firing alerts of the agent's own rules, and those resolved at
/// the last evaluation.
async fn alerts(State(app): State<App>) -> Response {
    let alerts = app.store.snapshot().alerts;
    Json(serde_json::json!({ "alerts": alerts })).into_response()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::io::{Read, Write};
    use std::net::SocketAddr;
    use std::time::Duration;

    use pausewatch_parsers::GcLogParser;

    use super::*;
    use crate::export::prometheus::tests::{fixture_path, fixture_state};
    use crate::model::jvm::JvmState;
    use crate::store::{Store, StreamId, StreamState};

    /// Two pauses three minutes apart, so 01:46 and 01:47 are quiet minutes.
    const GAPPY_LOG: &str = "\
[2026-11-30T01:45:10.000+0000][1.000s][info][gc] Using G1
[2026-11-30T01:45:14.664+0000][5.664s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 15M->14M(61M) 14.401ms
[2026-11-30T01:48:01.000+0000][172.000s][info][gc] GC(1) Pause Young (Normal) (G1 Evacuation Pause) 30M->20M(61M) 2.000ms
";

    fn gappy_stream() -> StreamState {
        let mut parser = GcLogParser::default();
        let mut events = Vec::new();
        parser.feed(GAPPY_LOG.as_bytes(), &mut events);
        parser.finish(&mut events);
        let mut jvm = JvmState::default();
        jvm.ingest(parser.run(), &events, None);
        StreamState {
            log: "/var/log/search/gc.log".to_string(),
            jvm,
            ..StreamState::default()
        }
    }

    /// The fixture stream (jdk17-parallel-full) first, then the gappy one.
    fn two_streams() -> SharedStore {
        let state = fixture_state();
        state
            .write()
            .streams
            .insert(StreamId(2), Arc::new(gappy_stream()));
        state
    }

    struct Reply {
        status: u16,
        headers: HashMap<String, String>,
        body: String,
    }

    /// A plain HTTP/1.0 GET over loopback: the server closes the connection
    /// after the response, so reading to the end yields exactly one reply.
    async fn get(addr: SocketAddr, path: &str) -> Reply {
        let request = format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n");
        let raw = tokio::task::spawn_blocking(move || {
            let mut stream = std::net::TcpStream::connect(addr).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            stream.write_all(request.as_bytes()).unwrap();
            let mut raw = String::new();
            stream.read_to_string(&mut raw).unwrap();
            raw
        })
        .await
        .unwrap();
        let (head, body) = raw.split_once("\r\n\r\n").expect("response has a head");
        let mut lines = head.lines();
        let status = lines
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let headers = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
            .collect();
        Reply {
            status,
            headers,
            body: body.to_string(),
        }
    }

    async fn start(
        state: SharedStore,
    ) -> (SocketAddr, tokio::task::JoinHandle<std::io::Result<()>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let registry = Arc::new(metrics::registry(state.clone(), "test"));
        let server = tokio::spawn(serve(
            listener,
            router(state, registry),
            HttpLimits::default(),
            None,
        ));
        (addr, server)
    }

    fn minutes_of(reply: &Reply) -> MinutesResponse {
        assert_eq!(reply.status, 200, "{}", reply.body);
        assert_eq!(reply.headers["content-type"], "application/json");
        serde_json::from_str(&reply.body).unwrap()
    }

    #[tokio::test]
    async fn serves_metrics_health_and_minutes() {
        let (addr, server) = start(two_streams()).await;

        let reply = get(addr, "/metrics").await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.headers["content-type"], metrics::CONTENT_TYPE);
        assert!(reply.body.ends_with("# EOF\n"));
        assert!(reply
            .body
            .contains("pausewatch_build_info{version=\"test\"} 1\n"));
        assert!(reply.body.contains("jvm_gc_pause_seconds_count{log=\"/var/log/pricing/gc.log\",service=\"pricing\",gc=\"PS Scavenge\",action=\"end of minor GC\",cause=\"Allocation Failure\"} 4\n"));

        let reply = get(addr, "/healthz").await;
        assert_eq!(reply.status, 200);
        let health: serde_json::Value = serde_json::from_str(&reply.body).unwrap();
        assert_eq!(health, serde_json::json!({"status": "ok", "streams": 2}));

        let reply = get(addr, "/api/v1/minutes").await;
        let response = minutes_of(&reply);
        // Streamed per JVM, the body is still one compact JSON object.
        assert!(reply.body.starts_with(r#"{"jvms":[{"log":"/var/log/pricing/gc.log","labels":{"service":"pricing"},"collector":"parallel","#));
        assert!(reply
            .body
            .contains(r#"]},{"log":"/var/log/search/gc.log","labels":{},"#));
        assert!(reply.body.ends_with("]}]}"));
        assert_eq!(response.jvms.len(), 2);
        let fixture = &response.jvms[0];
        assert_eq!(fixture.log, "/var/log/pricing/gc.log");
        assert_eq!(fixture.labels["service"], "pricing");
        assert_eq!(fixture.collector, "parallel");
        assert!(fixture
            .jdk_version
            .as_deref()
            .unwrap()
            .starts_with("17.0.15"));
        // Every pause line of the log is stamped 2026-11-30T01:45.
        assert_eq!(fixture.minutes.len(), 1);
        assert_eq!(
            fixture.minutes[0].gc.start.to_rfc3339(),
            "2026-11-30T01:45:00+00:00"
        );
        // ... and the minutes hold as many pauses as the JVM's own beans counted.
        let mxbeans: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(fixture_path("mxbeans.json")).unwrap())
                .unwrap();
        let bean_total: u64 = mxbeans["collectors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["count"].as_u64().unwrap())
            .sum();
        let pauses: u64 = fixture.minutes.iter().map(|m| m.gc.pause_count).sum();
        assert_eq!(pauses, bean_total);
        assert!((fixture.minutes[0].gc.pause_max_seconds - 0.022499).abs() < 1e-9);

        // Quiet minutes appear as zeros, oldest first.
        let gappy = &response.jvms[1];
        assert_eq!(gappy.collector, "g1");
        assert!(gappy.labels.is_empty());
        let counts: Vec<u64> = gappy.minutes.iter().map(|m| m.gc.pause_count).collect();
        assert_eq!(counts, [1, 0, 0, 1]);
        let starts: Vec<String> = gappy
            .minutes
            .iter()
            .map(|m| m.gc.start.format("%H:%M").to_string())
            .collect();
        assert_eq!(starts, ["01:45", "01:46", "01:47", "01:48"]);

        server.abort();
    }

    #[tokio::test]
    async fn since_keeps_minutes_starting_at_or_after_it() {
        let (addr, server) = start(two_streams()).await;
        let starts = |response: &MinutesResponse| -> Vec<Vec<String>> {
            response
                .jvms
                .iter()
                .map(|jvm| {
                    jvm.minutes
                        .iter()
                        .map(|m| m.gc.start.format("%H:%M").to_string())
                        .collect()
                })
                .collect()
        };
        let response = minutes_of(&get(addr, "/api/v1/minutes?since=2026-11-30T01:47:00Z").await);
        assert_eq!(starts(&response), [vec![], vec!["01:47", "01:48"]]);
        // Mid-minute: 01:46 started before it.
        let response = minutes_of(&get(addr, "/api/v1/minutes?since=2026-11-30T01:46:30Z").await);
        assert_eq!(starts(&response), [vec![], vec!["01:47", "01:48"]]);
        // An offset, percent-encoded or with its `+` turned into a space.
        for since in ["2026-11-30T02:46:00%2B01:00", "2026-11-30T02:46:00+01:00"] {
            let response = minutes_of(&get(addr, &format!("/api/v1/minutes?since={since}")).await);
            assert_eq!(
                starts(&response),
                [vec![], vec!["01:46", "01:47", "01:48"]],
                "{since}"
            );
        }
        let response = minutes_of(&get(addr, "/api/v1/minutes?since=2026-11-30T01:00:00Z").await);
        assert_eq!(
            starts(&response),
            [vec!["01:45"], vec!["01:45", "01:46", "01:47", "01:48"]]
        );

        let reply = get(addr, "/api/v1/minutes?since=yesterday").await;
        assert_eq!(reply.status, 400);
        assert!(reply.body.contains("RFC 3339"), "{}", reply.body);
        // A duplicate parameter is refused as JSON, like every API error.
        let reply = get(
            addr,
            "/api/v1/minutes?since=2026-11-30T01:00:00Z&since=2026-11-30T01:47:00Z",
        )
        .await;
        assert_eq!(reply.status, 400);
        assert_eq!(reply.headers["content-type"], "application/json");
        let refused: serde_json::Value = serde_json::from_str(&reply.body).unwrap();
        assert!(
            refused["error"]
                .as_str()
                .unwrap()
                .contains("duplicate field"),
            "{}",
            reply.body
        );
        server.abort();
    }

    /// `jvms` streams whose logs hold a pause a minute for `minutes` minutes.
    fn long_streams(jvms: u64, minutes: u64) -> SharedStore {
        let mut log = String::from("[2026-11-30T00:00:00.000+0000][1.000s][info][gc] Using G1\n");
        for minute in 0..minutes {
            let at = chrono::DateTime::parse_from_rfc3339("2026-11-30T00:00:30Z").unwrap()
                + chrono::TimeDelta::minutes(minute as i64);
            log += &format!(
                "[{}][{}.000s][info][gc] GC({minute}) Pause Young (Normal) (G1 Evacuation Pause) 30M->20M(61M) 2.000ms\n",
                at.format("%Y-%m-%dT%H:%M:%S%.3f+0000"),
                30 + 60 * minute
            );
        }
        let state = Arc::new(Store::default());
        for id in 0..jvms {
            let mut parser = GcLogParser::default();
            let mut events = Vec::new();
            parser.feed(log.as_bytes(), &mut events);
            parser.finish(&mut events);
            let mut jvm = JvmState::default();
            jvm.ingest(parser.run(), &events, None);
            let stream = StreamState {
                log: format!("/var/log/jvm{id}/gc.log"),
                jvm,
                ..StreamState::default()
            };
            // Ids with gaps, as streams that went leave them.
            state
                .write()
                .streams
                .insert(StreamId(3 * id + 1), Arc::new(stream));
        }
        state
    }

    #[tokio::test]
    async fn minutes_default_to_the_last_hour_of_a_page_of_streams_and_page_on() {
        let (addr, server) = start(long_streams(5, 150)).await;
        let logs = |response: &MinutesResponse| -> Vec<String> {
            response.jvms.iter().map(|jvm| jvm.log.clone()).collect()
        };
        let all: Vec<String> = (0..5)
            .map(|id| format!("/var/log/jvm{id}/gc.log"))
            .collect();
        // By default: every stream (one page), each its newest hour.
        let response = minutes_of(&get(addr, "/api/v1/minutes").await);
        assert_eq!(logs(&response), all);
        assert_eq!(response.next_after, None);
        for jvm in &response.jvms {
            assert_eq!(jvm.minutes.len(), 60);
            assert_eq!(
                jvm.minutes[0].gc.start.to_rfc3339(),
                "2026-11-30T01:30:00+00:00"
            );
        }
        // The day on request.
        let response = minutes_of(&get(addr, "/api/v1/minutes?limit=1440").await);
        assert!(response.jvms.iter().all(|jvm| jvm.minutes.len() == 150));
        // Two streams a page: three pages, every stream once, in order.
        let mut paged = Vec::new();
        let mut query = "/api/v1/minutes?page_size=2&limit=1".to_string();
        let mut pages = 0;
        loop {
            let response = minutes_of(&get(addr, &query).await);
            pages += 1;
            assert!(response.jvms.len() <= 2);
            paged.extend(logs(&response));
            match response.next_after {
                Some(after) => query = format!("/api/v1/minutes?page_size=2&limit=1&after={after}"),
                None => break,
            }
        }
        assert_eq!((pages, paged), (3, all));
        for query in ["page_size=0", "page_size=1001", "after=first"] {
            let reply = get(addr, &format!("/api/v1/minutes?{query}")).await;
            assert_eq!(reply.status, 400, "{query}: {}", reply.body);
        }
        server.abort();
    }

    #[tokio::test]
    async fn healthz_fails_when_the_loop_stops_beating() {
        let state = Arc::new(Store::default());
        let (addr, server) = start(state.clone()).await;
        assert_eq!(get(addr, "/healthz").await.status, 200);
        // A loop that beat 50 ms ago against a limit of none, as one stuck in open().
        state.heartbeat.set_limit(Duration::ZERO);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let reply = get(addr, "/healthz").await;
        assert_eq!(reply.status, 503, "{}", reply.body);
        let health: serde_json::Value = serde_json::from_str(&reply.body).unwrap();
        assert_eq!(health["status"], "stalled");
        assert_eq!(health["streams"], 0);
        let reason = health["reason"].as_str().unwrap();
        assert!(reason.contains("no progress for 0."), "{reason}");
        // A beat within the limit, and it is healthy again.
        state.heartbeat.set_limit(Duration::from_secs(10));
        state.heartbeat.beat();
        assert_eq!(get(addr, "/healthz").await.status, 200);
        server.abort();
    }

    /// A kept-alive connection's second response is not held back by
    /// Nagle's algorithm until the client's delayed ACK (44 ms).
    #[tokio::test]
    async fn an_accepted_connection_sends_without_delay() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let accepted = accept(&listener).await.expect("accepted");
        assert!(accepted.nodelay().unwrap());
        drop(client);
    }

    #[tokio::test]
    async fn unknown_paths_are_404() {
        let state = Arc::new(Store::default());
        let (addr, server) = start(state).await;
        for path in [
            "/",
            "/metrics/",
            "/api/v1",
            "/api/v1/minutes/x",
            "/favicon.ico",
        ] {
            assert_eq!(get(addr, path).await.status, 404, "{path}");
        }
        let health = get(addr, "/healthz").await;
        assert_eq!(health.body, r#"{"status":"ok","streams":0}"#);
        server.abort();
    }

    #[tokio::test]
    async fn an_idle_keep_alive_connection_is_closed_after_the_header_timeout() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Store::default());
        let registry = Arc::new(metrics::registry(state.clone(), "test"));
        let limits = HttpLimits {
            max_connections: 2,
            header_timeout: Duration::from_secs(1),
            ..HttpLimits::default()
        };
        let server = tokio::spawn(serve(listener, router(state, registry), limits, None));
        let closed_after = tokio::task::spawn_blocking(move || {
            let mut stream = std::net::TcpStream::connect(addr).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            stream
                .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
                .unwrap();
            let answered = std::time::Instant::now();
            // One reply, then nothing until the agent closes the idle connection.
            let mut raw = Vec::new();
            stream.read_to_end(&mut raw).unwrap();
            let raw = String::from_utf8(raw).unwrap();
            assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
            assert!(raw.ends_with(r#"{"status":"ok","streams":0}"#), "{raw}");
            answered.elapsed()
        })
        .await
        .unwrap();
        assert!(
            closed_after >= Duration::from_millis(900) && closed_after < Duration::from_secs(5),
            "{closed_after:?}"
        );
        server.abort();
    }

    #[tokio::test]
    async fn graceful_shutdown_returns() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let state = Arc::new(Store::default());
        let registry = Arc::new(metrics::registry(state.clone(), "test"));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve_with_shutdown(
            listener,
            router(state, registry),
            HttpLimits::default(),
            None,
            async {
                let _ = stopped.await;
            },
        ));
        stop.send(()).unwrap();
        let result = tokio::time::timeout(Duration::from_secs(10), server).await;
        assert!(result.expect("server stops").unwrap().is_ok());
    }
}
