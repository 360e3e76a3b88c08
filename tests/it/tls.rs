//! Every outgoing connection over TLS, against servers that check the
//! credentials themselves. Each test makes its own throwaway PKI with rcgen: a
//! CA, a server certificate, a client certificate, and a second CA that
//! signed nothing the servers use.
//!
//! - A real Alertmanager (`prometheus-alertmanager`) whose `--web.config.file`
//!   requires TLS, a client certificate from the CA and basic auth (a bcrypt
//!   hash made here). Agents (`pausewatch run`) send it `StaleGcLog` (a GC
//!   log that does not exist, `after = "1s"`): the one configured right gets
//!   its alert into Alertmanager, as Alertmanager's own API shows; one that
//!   trusts the other CA, one with a wrong password and one without a client
//!   certificate fail, counted, each saying why.
//! - A small rustls server that answers only `Authorization: Bearer <token>`:
//!   the webhook sink trusting the CA through the system roots
//!   (`SSL_CERT_FILE`, read by rustls-platform-verifier) and the latency
//!   histogram scrape with `tls_config.ca_file`.
//!
//! No secret may appear in the agents' logs or `/metrics`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::common::pki::{leaf, new_ca};
use crate::common::{alertmanager_or_skip, free_ports, http_get_ok, run_command, sum, Children};
use pausewatch::config::HttpClientConfig;
use pausewatch::http_client::HttpClient;
use pausewatch::sources::latency_histogram::{fetch, parse_buckets};
use rcgen::ExtendedKeyUsagePurpose;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::Value;

use crate::common;

const PASSWORD: &str = "correct horse battery staple";
const TOKEN: &str = "tok-8f3a1c9e5b7d";
const METRIC: &str = "http_server_requests_seconds";
/// Alertmanager's certificate names this host only, not 127.0.0.1, so
/// reaching it at 127.0.0.1 takes `server_name`.
const ALERTMANAGER_NAME: &str = "alertmanager.test";

// ---------------------------------------------------------------- PKI

/// Writes `ca.pem`, `other-ca.pem`, `alertmanager.pem`/`-key.pem`,
/// `server.pem`/`-key.pem` (127.0.0.1), `client.pem`/`-key.pem`,
/// `password` and `token` into `dir`.
fn write_pki(dir: &Path) {
    let ca = new_ca("pausewatch test CA");
    let other = new_ca("some other CA");
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    write("ca.pem", &ca.pem());
    write("other-ca.pem", &other.pem());
    let server_auth = ExtendedKeyUsagePurpose::ServerAuth;
    let (cert, key) = leaf(&ca, &[ALERTMANAGER_NAME, "localhost"], server_auth.clone());
    write("alertmanager.pem", &cert);
    write("alertmanager-key.pem", &key);
    let (cert, key) = leaf(&ca, &["127.0.0.1"], server_auth);
    write("server.pem", &cert);
    write("server-key.pem", &key);
    let (cert, key) = leaf(&ca, &["pausewatch"], ExtendedKeyUsagePurpose::ClientAuth);
    write("client.pem", &cert);
    write("client-key.pem", &key);
    write("password", &format!("{PASSWORD}\n"));
    write("token", &format!("{TOKEN}\n"));
}

// ---------------------------------------------------------------- agents

/// The config of an agent listening on `port` whose only GC log does not
/// exist, so that `StaleGcLog` fires a second after it starts. `alerts` goes
/// into `[alerts]` (the sink URLs), `tables` after it (relative file names
/// in them are relative to `dir`, the config's directory).
fn agent_config(dir: &Path, port: u16, name: &str, alerts: &str, tables: &str) -> PathBuf {
    let config = dir.join(format!("{name}.toml"));
    let text = format!(
        r#"listen = "127.0.0.1:{port}"
checkpoint_dir = {checkpoints}
poll_interval = "100ms"

[[gc_log]]
path = {missing}

[alerts]
evaluation_interval = "1s"
resend_interval = "3s"
labels = {{ agent = "{name}" }}
{alerts}

[alerts.stale_log]
after = "1s"

{tables}
"#,
        checkpoints = common::toml_string(&dir.join(format!("{name}-checkpoints"))),
        missing = common::toml_string(&dir.join("no-such-gc.log")),
    );
    std::fs::write(&config, text).unwrap();
    config
}

fn deliveries(port: u16, sink: &str, result: &str) -> f64 {
    let metrics = http_get_ok(port, "/metrics").unwrap_or_default();
    sum(
        &metrics,
        "pausewatch_alert_deliveries_total",
        &[&format!("sink=\"{sink}\""), &format!("result=\"{result}\"")],
    )
}

/// No secret in the agent's stderr or `/metrics`.
fn assert_no_secrets(dir: &Path, name: &str, port: u16) {
    let log = std::fs::read_to_string(dir.join(format!("{name}.stderr"))).unwrap();
    let metrics = http_get_ok(port, "/metrics").unwrap();
    for secret in [PASSWORD, "wrong password", TOKEN, "PRIVATE KEY"] {
        assert!(!log.contains(secret), "{name} logged a secret:\n{log}");
        assert!(!metrics.contains(secret), "{name} /metrics holds a secret");
    }
}

fn stderr_of(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(format!("{name}.stderr"))).unwrap_or_default()
}

// ---------------------------------------------------------------- Alertmanager

/// A plain ureq agent that Alertmanager lets in: trusts the CA and presents
/// the client certificate.
fn alertmanager_reader(dir: &Path) -> ureq::Agent {
    use ureq::tls::{Certificate, ClientCert, PrivateKey, RootCerts, TlsConfig};
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    let ca = Certificate::from_pem(&read("ca.pem")).unwrap();
    let cert = Certificate::from_pem(&read("client.pem")).unwrap();
    let key = PrivateKey::from_pem(&read("client-key.pem")).unwrap();
    let tls = TlsConfig::builder()
        .root_certs(RootCerts::new_with_certs(&[ca]))
        .client_cert(Some(ClientCert::new_with_certs(&[cert], key)))
        .build();
    ureq::Agent::config_builder()
        .tls_config(tls)
        .timeout_global(Some(Duration::from_secs(5)))
        .http_status_as_error(false)
        .proxy(None)
        .build()
        .into()
}

/// GET `path` from Alertmanager as `https://localhost:<port>`, a name its
/// certificate has besides `alertmanager.test` (127.0.0.1 it has not).
fn alertmanager_get(reader: &ureq::Agent, port: u16, path: &str) -> Result<String, String> {
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("pausewatch:{PASSWORD}"));
    let url = format!("https://localhost:{port}{path}");
    let mut response = reader
        .get(&url)
        .header("Authorization", format!("Basic {basic}"))
        .call()
        .map_err(|e| format!("GET {url}: {e}"))?;
    let body = response.body_mut().read_to_string().unwrap_or_default();
    if response.status().is_success() {
        Ok(body)
    } else {
        Err(format!("GET {url}: HTTP {}: {body}", response.status()))
    }
}

/// Alertmanager's `--web.config.file`: TLS with a client certificate from the
/// CA, and basic auth for user `pausewatch` (bcrypt, as Alertmanager wants).
fn alertmanager_web_config(dir: &Path) -> PathBuf {
    let hash = bcrypt::hash(PASSWORD, 4).unwrap();
    let path = dir.join("web.yml");
    let file = |name: &str| dir.join(name).display().to_string();
    std::fs::write(
        &path,
        format!(
            "tls_server_config:\n  cert_file: {}\n  key_file: {}\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {}\n\
             basic_auth_users:\n  pausewatch: '{hash}'\n",
            file("alertmanager.pem"),
            file("alertmanager-key.pem"),
            file("ca.pem"),
        ),
    )
    .unwrap();
    path
}

#[test]
fn alertmanager_requiring_tls_client_certificate_and_basic_auth() {
    let Some(binary) = alertmanager_or_skip() else {
        return;
    };
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    write_pki(dir);
    std::fs::write(dir.join("wrong-password"), "wrong password\n").unwrap();
    let ports = free_ports(5);
    let alertmanager_port = ports[0];
    let mut children = Children::new(dir);
    std::fs::write(
        dir.join("alertmanager.yml"),
        "route:\n  receiver: blackhole\n  group_wait: 1s\n  group_interval: 1s\n  repeat_interval: 1h\n\
         receivers:\n  - name: blackhole\n",
    )
    .unwrap();
    children.spawn_service(
        "alertmanager",
        Command::new(binary)
            .arg(format!(
                "--config.file={}",
                dir.join("alertmanager.yml").display()
            ))
            .arg(format!(
                "--storage.path={}",
                dir.join("alertmanager-data").display()
            ))
            .arg(format!(
                "--web.listen-address=127.0.0.1:{alertmanager_port}"
            ))
            .arg(format!(
                "--web.config.file={}",
                alertmanager_web_config(dir).display()
            ))
            .arg("--cluster.listen-address="),
    );
    let reader = alertmanager_reader(dir);
    let deadline = Instant::now() + Duration::from_secs(20);
    children.wait_until(deadline, "Alertmanager to be ready over TLS", |_| {
        alertmanager_get(&reader, alertmanager_port, "/-/ready").is_ok()
    });

    // The same sink four times: right, trusting another CA, with a wrong
    // password, without a client certificate.
    let url = format!("https://127.0.0.1:{alertmanager_port}");
    let sink = |tls: &str, password_file: &str| {
        format!(
            "[alerts.alertmanager]\ntls_config = {{ {tls} }}\nbasic_auth = {{ username = \"pausewatch\", password_file = \"{password_file}\" }}\n"
        )
    };
    let identity = r#"cert_file = "client.pem", key_file = "client-key.pem""#;
    let name = format!(r#"server_name = "{ALERTMANAGER_NAME}""#);
    let agents = [
        (
            "right",
            sink(
                &format!(r#"ca_file = "ca.pem", {identity}, {name}"#),
                "password",
            ),
        ),
        (
            "wrong-ca",
            sink(
                &format!(r#"ca_file = "other-ca.pem", {identity}, {name}"#),
                "password",
            ),
        ),
        (
            "wrong-password",
            sink(
                &format!(r#"ca_file = "ca.pem", {identity}, {name}"#),
                "wrong-password",
            ),
        ),
        (
            "no-client-cert",
            sink(&format!(r#"ca_file = "ca.pem", {name}"#), "password"),
        ),
    ];
    for ((name, settings), port) in agents.iter().zip(&ports[1..]) {
        let alerts = format!("alertmanager_url = \"{url}\"");
        let config = agent_config(dir, *port, name, &alerts, settings);
        children.spawn_service(name, run_command(&config).env("RUST_LOG", "info"));
    }
    children.dump_on_failure(&ports[1..], &["pausewatch_alert", "pausewatch_errors"]);
    let right_port = ports[1];

    // The right agent's StaleGcLog, in Alertmanager's own API.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut alert = Value::Null;
    children.wait_until(
        deadline,
        "StaleGcLog from agent `right` in Alertmanager",
        |_| {
            let Ok(body) =
                alertmanager_get(&reader, alertmanager_port, "/api/v2/alerts?active=true")
            else {
                return false;
            };
            let alerts: Value = serde_json::from_str(&body).unwrap_or_default();
            let found = alerts.as_array().into_iter().flatten().find(|a| {
                a["labels"]["alertname"] == "StaleGcLog" && a["labels"]["agent"] == "right"
            });
            alert = found.cloned().unwrap_or_default();
            !alert.is_null()
        },
    );
    assert_eq!(alert["labels"]["source"], "agent", "{alert}");
    assert_eq!(
        alert["labels"]["log"].as_str(),
        Some(dir.join("no-such-gc.log").display().to_string().as_str()),
        "{alert}"
    );
    assert!(deliveries(right_port, "alertmanager", "success") >= 1.0);
    assert_eq!(deliveries(right_port, "alertmanager", "failure"), 0.0);

    // The others: two failed attempts each (at once, then after 2 s),
    // counted, nothing delivered, and the log says why.
    let deadline = Instant::now() + Duration::from_secs(20);
    children.wait_until(
        deadline,
        "2 failed deliveries from each wrong agent",
        |_| {
            ports[2..]
                .iter()
                .all(|port| deliveries(*port, "alertmanager", "failure") >= 2.0)
        },
    );
    let expected = [
        (
            "wrong-ca",
            "TLS certificate problem: the server's certificate is not accepted",
        ),
        (
            "wrong-password",
            "HTTP 401 Unauthorized (the server refused the configured credentials)",
        ),
        // Refused by an alert, or (TLS 1.3) by closing before the alert is read.
        ("no-client-cert", "tls_config cert_file and key_file"),
    ];
    for ((name, why), port) in expected.iter().zip(&ports[2..]) {
        assert_eq!(deliveries(*port, "alertmanager", "success"), 0.0, "{name}");
        let log = stderr_of(dir, name);
        let failure = log
            .lines()
            .find(|line| line.contains("alert delivery failed"))
            .unwrap_or_else(|| panic!("{name} logged no failure:\n{log}"));
        assert!(failure.contains(why), "{name}: {failure}");
        // The sink's scheme, host and port; never its path (8129e8d).
        assert!(failure.contains(&format!("POST {url}: ")), "{failure}");
        eprintln!("{name}: {failure}");
    }
    for ((name, _), port) in agents.iter().zip(&ports[1..]) {
        assert_no_secrets(dir, name, *port);
    }
    eprintln!(
        "alertmanager over TLS: took {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

// ---------------------------------------------------------------- a bearer-token server

/// The application's histogram: 100 requests, 90 under 100 ms, 99 under 500 ms.
const EXPOSITION: &str = "# TYPE http_server_requests_seconds histogram
http_server_requests_seconds_bucket{uri=\"/price\",le=\"0.1\"} 90
http_server_requests_seconds_bucket{uri=\"/price\",le=\"0.5\"} 99
http_server_requests_seconds_bucket{uri=\"/price\",le=\"+Inf\"} 100
http_server_requests_seconds_count{uri=\"/price\"} 100
http_server_requests_seconds_sum{uri=\"/price\"} 7.5
";

/// One request as the server saw it.
struct Seen {
    path: String,
    authorized: bool,
    body: String,
}

/// A rustls server on 127.0.0.1 with `server.pem`: 401 unless the request
/// has `Authorization: Bearer TOKEN`, else [`EXPOSITION`] for `GET /metrics`
/// and 200 for `POST /hook`. Every request goes to the channel.
fn bearer_server(dir: &Path) -> (u16, mpsc::Receiver<Seen>) {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(dir.join("server.pem"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(dir.join("server-key.pem")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (seen, received) = mpsc::channel();
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let (config, seen) = (config.clone(), seen.clone());
            // A failed handshake (a client that does not trust us) ends here.
            std::thread::spawn(move || answer(config, tcp, &seen));
        }
    });
    (port, received)
}

fn answer(
    config: Arc<rustls::ServerConfig>,
    tcp: std::net::TcpStream,
    seen: &mpsc::Sender<Seen>,
) -> std::io::Result<()> {
    tcp.set_read_timeout(Some(Duration::from_secs(5)))?;
    let connection = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
    let mut tls = BufReader::new(rustls::StreamOwned::new(connection, tcp));
    let mut request_line = String::new();
    tls.read_line(&mut request_line)?;
    let (mut authorization, mut length) = (String::new(), 0);
    loop {
        let mut line = String::new();
        tls.read_line(&mut line)?;
        let Some((name, value)) = line.trim_end().split_once(':') else {
            break;
        };
        match name.to_ascii_lowercase().as_str() {
            "authorization" => authorization = value.trim().to_string(),
            "content-length" => length = value.trim().parse().unwrap_or(0),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    tls.read_exact(&mut body)?;
    let path = request_line
        .split(' ')
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let authorized = authorization == format!("Bearer {TOKEN}");
    let (status, reply) = match (authorized, path.as_str()) {
        (false, _) => ("401 Unauthorized", ""),
        (true, "/metrics") => ("200 OK", EXPOSITION),
        (true, "/hook") => ("200 OK", ""),
        (true, _) => ("404 Not Found", ""),
    };
    let _ = seen.send(Seen {
        path,
        authorized,
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let stream = tls.get_mut();
    write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
        reply.len()
    )?;
    stream.conn.send_close_notify();
    stream.flush()
}

/// The client of `[[latency_histogram]]` configured with `settings`, as the
/// agent loads it from a file in `dir`.
fn histogram_client(dir: &Path, port: u16, settings: &str) -> HttpClient {
    let config = dir.join("histogram.toml");
    let url = format!("https://127.0.0.1:{port}/metrics");
    std::fs::write(
        &config,
        format!(
            "[[gc_log]]\npath = \"/var/log/app/gc.log\"\n[[latency_histogram]]\nurl = \"{url}\"\n{settings}\n"
        ),
    )
    .unwrap();
    let loaded = pausewatch::config::load(&config).unwrap_or_else(|e| panic!("{e}"));
    let client: &HttpClientConfig = &loaded.latency_histogram[0].client;
    HttpClient::new(&url, client, Duration::from_secs(3)).unwrap()
}

#[test]
fn histogram_scrape_over_https_with_a_bearer_token() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    write_pki(dir);
    let (port, seen) = bearer_server(dir);
    let matchers = [("uri".to_string(), "/price".to_string())].into();
    let inf = f64::INFINITY;

    let right = histogram_client(
        dir,
        port,
        "tls_config = { ca_file = \"ca.pem\" }\nbearer_token_file = \"token\"",
    );
    let text = fetch(&right).unwrap_or_else(|e| panic!("{e}"));
    let buckets = parse_buckets(&text, METRIC, &matchers).unwrap();
    assert_eq!(buckets, vec![(0.1, 90.0), (0.5, 99.0), (inf, 100.0)]);
    let request = seen.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(
        (request.path.as_str(), request.authorized),
        ("/metrics", true)
    );

    // `authorization` with a wrong token: the server's 401, said plainly.
    let wrong = histogram_client(
        dir,
        port,
        "tls_config = { ca_file = \"ca.pem\" }\nauthorization = { type = \"Bearer\", credentials = \"tok-guess\" }",
    );
    let error = fetch(&wrong).unwrap_err();
    assert!(
        error.contains("HTTP 401 Unauthorized (the server refused the configured credentials)"),
        "{error}"
    );
    assert!(!error.contains("tok-guess"), "{error}");
    assert!(
        !seen
            .recv_timeout(Duration::from_secs(5))
            .unwrap()
            .authorized
    );

    // The system roots do not hold the test CA (this process has no
    // SSL_CERT_FILE), and a server_name the certificate does not name fails.
    for settings in [
        "bearer_token_file = \"token\"",
        "tls_config = { ca_file = \"ca.pem\", server_name = \"elsewhere.test\" }\nbearer_token_file = \"token\"",
    ] {
        let error = fetch(&histogram_client(dir, port, settings)).unwrap_err();
        assert!(
            error.contains("TLS certificate problem: the server's certificate is not accepted"),
            "{settings}: {error}"
        );
        assert!(error.contains(&format!("GET https://127.0.0.1:{port}: ")), "{error}");
        eprintln!("{error}");
    }
    // insecure_skip_verify trusts anything.
    let insecure = histogram_client(
        dir,
        port,
        "tls_config = { insecure_skip_verify = true }\nbearer_token = \"tok-8f3a1c9e5b7d\"",
    );
    assert_eq!(fetch(&insecure).unwrap(), EXPOSITION);
}

#[test]
fn agent_webhook_and_histogram_over_https_with_a_bearer_token() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    write_pki(dir);
    let (server, seen) = bearer_server(dir);
    let port = free_ports(1)[0];
    let alerts = format!("webhook_url = \"https://127.0.0.1:{server}/hook\"");
    // The webhook trusts the CA through the system roots only.
    let tables = format!(
        r#"[alerts.webhook]
bearer_token_file = "token"

[[latency_histogram]]
url = "https://127.0.0.1:{server}/metrics"
interval = "1s"
gc_log = {gc_log}
tls_config = {{ ca_file = "ca.pem" }}
authorization = {{ credentials_file = "token" }}
"#,
        gc_log = common::toml_string(&dir.join("no-such-gc.log")),
    );
    let config = agent_config(dir, port, "agent", &alerts, &tables);
    let mut children = Children::new(dir);
    children.spawn_service(
        "agent",
        run_command(&config)
            .env("RUST_LOG", "info")
            .env("SSL_CERT_FILE", dir.join("ca.pem")),
    );
    children.dump_on_failure(&[port], &["pausewatch_alert", "pausewatch_errors"]);

    let (mut hook, mut scrapes) = (None, 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    children.wait_until(deadline, "the webhook call and 2 scrapes", |_| {
        for request in seen.try_iter() {
            assert!(request.authorized, "unauthorized {}", request.path);
            match request.path.as_str() {
                "/hook" => hook = Some(request.body),
                _ => scrapes += 1,
            }
        }
        hook.is_some() && scrapes >= 2
    });
    let hook: Value = serde_json::from_str(&hook.unwrap()).unwrap();
    assert_eq!(hook["alertname"], "StaleGcLog", "{hook}");
    assert_eq!(hook["labels"]["agent"], "agent", "{hook}");
    assert!(deliveries(port, "webhook", "success") >= 1.0);
    assert_eq!(deliveries(port, "webhook", "failure"), 0.0);
    let metrics = http_get_ok(port, "/metrics").unwrap();
    assert_eq!(
        sum(
            &metrics,
            "pausewatch_errors_total",
            &["latency_histogram_scrape"]
        ),
        0.0,
        "{}",
        stderr_of(dir, "agent")
    );
    assert_no_secrets(dir, "agent", port);
}
