//! The agent's endpoints secured as Prometheus exporters secure theirs: a
//! web config in the exporter-toolkit format with TLS and basic auth.
//!
//! A real Prometheus (Debian's `prometheus`) scrapes the agent over TLS with
//! basic auth and stores its series; a second job with a wrong password is
//! refused, as Prometheus' own target health says (401). Direct requests
//! without credentials or with a wrong password get 401 with a challenge,
//! and `/healthz` stays open for liveness probes. The certificates and the
//! bcrypt hash are made here. Rewriting the web config with a new password
//! takes effect without a restart.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::pki::{leaf, new_ca};
use crate::common::{toml_string, Children, Prometheus};
use base64::Engine;
use rcgen::ExtendedKeyUsagePurpose;

use crate::common;

const USER: &str = "prometheus";
const PASSWORD: &str = "scrape me gently";
const NEW_PASSWORD: &str = "rotated at noon";

/// `web.yml`: TLS with `server.pem` and `USER` with a bcrypt hash of `password`.
fn write_web_config(dir: &Path, password: &str) {
    // Cost 4, the least bcrypt allows: the test checks the format, not the cost.
    let hash = bcrypt::hash(password, 4).unwrap();
    let yaml = format!(
        "tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\n  min_version: TLS12\nbasic_auth_users:\n  {USER}: {hash}\n"
    );
    // Renamed into place, as configuration management does.
    std::fs::write(dir.join("web.yml.new"), yaml).unwrap();
    std::fs::rename(dir.join("web.yml.new"), dir.join("web.yml")).unwrap();
}

/// An HTTPS client trusting the test CA only.
fn client(dir: &Path) -> ureq::Agent {
    use ureq::tls::{Certificate, RootCerts, TlsConfig};
    let ca = Certificate::from_pem(&std::fs::read(dir.join("ca.pem")).unwrap()).unwrap();
    ureq::Agent::config_builder()
        .tls_config(
            TlsConfig::builder()
                .root_certs(RootCerts::new_with_certs(&[ca]))
                .build(),
        )
        .timeout_global(Some(Duration::from_secs(5)))
        .http_status_as_error(false)
        .proxy(None)
        .build()
        .into()
}

/// GET `path` as `user:password` (none when `None`): status, challenge header, body.
fn get(
    client: &ureq::Agent,
    port: u16,
    path: &str,
    credentials: Option<(&str, &str)>,
) -> Result<(u16, Option<String>, String), String> {
    let mut request = client.get(format!("https://127.0.0.1:{port}{path}"));
    if let Some((user, password)) = credentials {
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        request = request.header("Authorization", format!("Basic {basic}"));
    }
    let mut response = request.call().map_err(|e| e.to_string())?;
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string());
    let body = response.body_mut().read_to_string().unwrap_or_default();
    Ok((response.status().as_u16(), challenge, body))
}

/// A Prometheus scrape job for the agent on `port` over TLS as `user:password`.
fn job(name: &str, dir: &Path, port: u16, password: &str) -> String {
    format!(
        "  - job_name: {name}\n    scheme: https\n    tls_config:\n      ca_file: {ca}\n    basic_auth:\n      username: {USER}\n      password: {password:?}\n    static_configs:\n      - targets: ['127.0.0.1:{port}']",
        ca = toml_string(&dir.join("ca.pem")),
    )
}

#[test]
fn prometheus_scrapes_over_tls_with_basic_auth_and_others_get_401() {
    let Some(prometheus) = common::prometheus_or_skip() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let ca = new_ca("pausewatch web test CA");
    let (cert, key) = leaf(&ca, &["127.0.0.1"], ExtendedKeyUsagePurpose::ServerAuth);
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(dir.join("server.pem"), cert).unwrap();
    std::fs::write(dir.join("server-key.pem"), key).unwrap();
    write_web_config(dir, PASSWORD);

    let ports = common::free_ports(2);
    let (agent_port, prometheus_port) = (ports[0], ports[1]);
    let mut children = Children::new(dir);
    children.spawn_service(
        "agent",
        std::process::Command::new(common::PAUSEWATCH)
            .args(["run", "--demo", "--listen"])
            .arg(format!("127.0.0.1:{agent_port}"))
            .arg("--web-config")
            .arg(dir.join("web.yml")),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let https = client(dir);
    children.wait_until(deadline, "the agent answers over TLS", |_| {
        get(&https, agent_port, "/healthz", None).is_ok_and(|(status, _, _)| status == 200)
    });

    // Plain HTTP on the TLS port gets no answer.
    assert!(
        !matches!(common::http_get(agent_port, "/metrics"), Ok((200, _))),
        "plain HTTP was served"
    );
    for credentials in [None, Some((USER, "wrong")), Some(("someone", PASSWORD))] {
        let (status, challenge, _) = get(&https, agent_port, "/metrics", credentials).unwrap();
        assert_eq!(status, 401, "{credentials:?}");
        assert_eq!(
            challenge.as_deref(),
            Some("Basic realm=\"pausewatch\""),
            "{credentials:?}"
        );
        let (status, _, _) = get(&https, agent_port, "/api/v1/minutes", credentials).unwrap();
        assert_eq!(status, 401, "{credentials:?}");
    }
    let (status, _, body) = get(&https, agent_port, "/metrics", Some((USER, PASSWORD))).unwrap();
    assert_eq!(status, 200);
    assert!(body.ends_with("# EOF\n"), "{body}");

    let prometheus = Prometheus::start_with_jobs(
        &mut children,
        &prometheus,
        prometheus_port,
        &[],
        None,
        &[
            job("secured", dir, agent_port, PASSWORD),
            job("wrong_password", dir, agent_port, "wrong"),
        ],
    );
    prometheus.wait_ready(&mut children, deadline);
    // The demo's pauses, as Prometheus stored them from the TLS scrapes.
    children.wait_until(deadline, "Prometheus stores the demo's pauses", |_| {
        prometheus
            .query_one("sum(jvm_gc_pause_seconds_count{job=\"secured\"})")
            .is_ok_and(|v| v.is_some_and(|v| v > 0.0))
    });
    assert_eq!(prometheus.value("up{job=\"secured\"}"), 1.0);
    children.wait_until(deadline, "the wrong password's scrape fails", |_| {
        prometheus
            .query_one("up{job=\"wrong_password\"}")
            .is_ok_and(|v| v == Some(0.0))
    });
    let targets = prometheus.api("/api/v1/targets").unwrap();
    let refused = targets["activeTargets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["labels"]["job"] == "wrong_password")
        .unwrap();
    assert!(
        refused["lastError"].as_str().unwrap().contains("401"),
        "{refused}"
    );

    // A new password, without a restart: the old one is refused from then on.
    write_web_config(dir, NEW_PASSWORD);
    children.wait_until(deadline, "the new password works", |_| {
        get(&https, agent_port, "/metrics", Some((USER, NEW_PASSWORD)))
            .is_ok_and(|(status, _, _)| status == 200)
    });
    let (status, _, _) = get(&https, agent_port, "/metrics", Some((USER, PASSWORD))).unwrap();
    assert_eq!(status, 401);
}

/// A web config with a mistake stops `check-config` and `run` with its own
/// file, line and key.
#[test]
fn a_bad_web_config_names_its_file_line_and_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("web.yml"),
        "basic_auth_users:\n  prometheus: not-a-hash\n",
    )
    .unwrap();
    let config = common::write_file(
        dir,
        "pausewatch.toml",
        "listen = \"127.0.0.1:0\"\nweb_config = \"web.yml\"\n",
    );
    let stderr = common::exit_2_stderr(
        std::process::Command::new(common::PAUSEWATCH)
            .arg("check-config")
            .arg(&config),
    );
    let expected = format!(
        "pausewatch: {}:2: key basic_auth_users.prometheus: not a bcrypt hash",
        dir.join("web.yml").display()
    );
    assert!(stderr.starts_with(&expected), "{stderr}");

    std::fs::write(
        dir.join("web.yml"),
        "tls_server_config:\n  cert_file: server.pem\n  key_file: missing.pem\n  client_auth_type: Sometimes\n",
    )
    .unwrap();
    let stderr = common::exit_2_stderr(
        std::process::Command::new(common::PAUSEWATCH)
            .args(["run", "--listen", "127.0.0.1:0", "--web-config"])
            .arg(dir.join("web.yml")),
    );
    assert!(
        stderr.contains(&format!("{}:4: ", dir.join("web.yml").display()))
            && stderr.contains("Sometimes"),
        "{stderr}"
    );
}
