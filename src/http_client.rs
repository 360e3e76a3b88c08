//! The one HTTP client of every outgoing request: the alert sinks, the
//! latency histogram scrape and OTLP over http/protobuf. Plain `http://`, or `https://` over rustls with
//! the system's roots (`rustls-platform-verifier`), or only the roots of
//! `tls_config.ca_file`; a client certificate, a `server_name` override,
//! `insecure_skip_verify` and an `Authorization` header, as the config module
//! loaded them ([`HttpClientConfig`]).
//!
//! Every failure is one line naming the method and the URL, never the
//! credentials; TLS failures say whether the server's certificate was not
//! trusted or the server refused ours.

use std::fmt::Write as _;
use std::time::Duration;

use ureq::config::Config as UreqConfig;
use ureq::http::uri::{Authority, Uri};
use ureq::tls::{Certificate, ClientCert, PrivateKey, RootCerts, TlsConfig, TlsProvider};
use ureq::typestate::{WithBody, WithoutBody};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};
use ureq::RequestBuilder;

use crate::config::{redact_url, HttpClientConfig, Secret, TlsSettings};

/// Requests to one URL with its connection settings.
pub struct HttpClient {
    agent: ureq::Agent,
    /// What messages name: the configured URL's scheme, host and port ([`redact_url`]).
    shown: String,
    /// What is requested: the configured URL, its host replaced by `server_name` when given,
    /// so that rustls sends and verifies that name.
    target: String,
    /// The configured host, sent as `Host` when `target` names another.
    host: Option<String>,
    authorization: Option<Secret>,
    timeout: Duration,
    /// A server that requires a client certificate may close a TLS 1.3
    /// connection without one before its alert is read: worth a hint.
    tls_without_client_cert: bool,
}

/// Resolves the configured host whatever host the request names: with
/// `server_name`, the request names the certificate's host, the connection
/// goes to the configured one.
#[derive(Debug)]
struct ConnectTo {
    configured: Uri,
    resolver: DefaultResolver,
}

impl Resolver for ConnectTo {
    fn resolve(
        &self,
        _requested: &Uri,
        config: &UreqConfig,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        self.resolver.resolve(&self.configured, config, timeout)
    }
}

impl HttpClient {
    /// A client for `url` whose whole exchange (connect, TLS handshake,
    /// request, response and body) must finish within `timeout`.
    /// `Err` only for what the config module already refuses (a URL that
    /// does not parse, a key ureq cannot read).
    pub fn new(
        url: &str,
        settings: &HttpClientConfig,
        timeout: Duration,
    ) -> Result<HttpClient, String> {
        Self::build(url, settings, timeout, None)
    }

    /// As [`Self::new`], through the proxy the environment names
    /// (`ALL_PROXY`, `HTTPS_PROXY`, `HTTP_PROXY`, with `NO_PROXY`), as the
    /// OpenTelemetry SDKs' exporters go: an OTLP receiver is often remote,
    /// where alert sinks and scraped applications are near.
    pub fn through_env_proxy(
        url: &str,
        settings: &HttpClientConfig,
        timeout: Duration,
    ) -> Result<HttpClient, String> {
        Self::build(url, settings, timeout, ureq::Proxy::try_from_env())
    }

    fn build(
        url: &str,
        settings: &HttpClientConfig,
        timeout: Duration,
        proxy: Option<ureq::Proxy>,
    ) -> Result<HttpClient, String> {
        let configured: Uri = url
            .parse()
            .map_err(|e| format!("the configured URL is not a URL: {e}"))?;
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            // Statuses are reported by the callers, with the body's start.
            .http_status_as_error(false)
            // Nearby targets ignore http_proxy and friends.
            .proxy(proxy)
            .user_agent(concat!("pausewatch/", env!("CARGO_PKG_VERSION")))
            .tls_config(tls_config(&settings.tls)?)
            .build();
        let (agent, target, host) = match (&settings.tls.server_name, configured.authority()) {
            (Some(name), Some(authority)) => {
                let target = with_host(&configured, authority, name)?;
                let resolver = ConnectTo {
                    configured: configured.clone(),
                    resolver: DefaultResolver::default(),
                };
                let agent = ureq::Agent::with_parts(config, DefaultConnector::new(), resolver);
                (agent, target, Some(authority.to_string()))
            }
            _ => (config.into(), url.to_string(), None),
        };
        Ok(HttpClient {
            agent,
            shown: redact_url(url),
            target,
            host,
            authorization: settings.authorization.clone(),
            timeout,
            tls_without_client_cert: configured.scheme_str() == Some("https")
                && settings.tls.identity.is_none(),
        })
    }

    pub fn get(&self) -> RequestBuilder<WithoutBody> {
        self.prepare(self.agent.get(&self.target))
    }

    pub fn post(&self) -> RequestBuilder<WithBody> {
        self.prepare(self.agent.post(&self.target))
    }

    fn prepare<B>(&self, mut request: RequestBuilder<B>) -> RequestBuilder<B> {
        if let Some(host) = &self.host {
            request = request.header("Host", host);
        }
        if let Some(authorization) = &self.authorization {
            request = request.header("Authorization", authorization.expose());
        }
        request
    }

    /// One line for a failed exchange: `METHOD URL: what happened`.
    pub fn describe(&self, method: &str, error: ureq::Error) -> String {
        let url = &self.shown;
        let timeout = self.timeout;
        let rustls_error = match &error {
            ureq::Error::Rustls(e) => Some(e),
            ureq::Error::Io(io) => io.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()),
            _ => None,
        };
        if let Some(tls) = rustls_error {
            return format!("{method} {url}: {}", tls_problem(tls));
        }
        match error {
            ureq::Error::Timeout(which) => {
                format!("{method} {url}: timed out after {timeout:?} ({which})")
            }
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                format!("{method} {url}: connection refused ({io})")
            }
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
                format!("{method} {url}: timed out after {timeout:?} ({io})")
            }
            ureq::Error::Io(io)
                if self.tls_without_client_cert
                    && matches!(
                        io.kind(),
                        std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
                    ) =>
            {
                format!("{method} {url}: the server closed the TLS connection ({io}); if it requires a client certificate, set tls_config cert_file and key_file")
            }
            ureq::Error::BodyExceedsLimit(limit) => {
                format!("{method} {url}: response body larger than {limit} bytes")
            }
            other => format!("{method} {url}: {other}"),
        }
    }

    /// One line for a non-2xx answer; 401 and 403 say which credentials to look at.
    pub fn status_error(&self, method: &str, status: ureq::http::StatusCode) -> String {
        let hint = match (status.as_u16(), &self.authorization) {
            (401 | 403, Some(_)) => " (the server refused the configured credentials)",
            (401 | 403, None) => {
                " (the server wants credentials: basic_auth, authorization or bearer_token)"
            }
            _ => "",
        };
        format!("{method} {}: HTTP {status}{hint}", self.shown)
    }

    /// `Err` for a non-2xx answer: [`Self::status_error`] and the start of
    /// the body, which often says what the server disliked.
    pub fn check(
        &self,
        method: &str,
        response: &mut ureq::http::Response<ureq::Body>,
    ) -> Result<(), String> {
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let body = response
            .body_mut()
            .with_config()
            .limit(4096)
            .lossy_utf8(true)
            .read_to_string()
            .unwrap_or_default();
        let excerpt: String = body.trim().chars().take(200).collect();
        let mut message = self.status_error(method, status);
        if !excerpt.is_empty() {
            let _ = write!(message, ": {excerpt}");
        }
        Err(message)
    }
}

fn tls_problem(error: &rustls::Error) -> String {
    use rustls::AlertDescription as Alert;
    match error {
        rustls::Error::InvalidCertificate(_) => format!(
            "TLS certificate problem: the server's certificate is not accepted ({error}); check tls_config ca_file and server_name"
        ),
        rustls::Error::AlertReceived(
            Alert::BadCertificate
            | Alert::CertificateRequired
            | Alert::UnknownCA
            | Alert::CertificateUnknown
            | Alert::CertificateExpired
            | Alert::CertificateRevoked
            | Alert::UnsupportedCertificate,
        ) => format!(
            "TLS certificate problem: the server refused the client certificate ({error}); check tls_config cert_file and key_file"
        ),
        other => format!("TLS handshake failed: {other}"),
    }
}

/// `Err` only for a key the config module accepted and ureq does not.
fn tls_config(settings: &TlsSettings) -> Result<TlsConfig, String> {
    let roots = match &settings.roots {
        Some(roots) => RootCerts::new_with_certs(
            &roots
                .iter()
                .map(|der| Certificate::from_der(der.as_ref()).to_owned())
                .collect::<Vec<_>>(),
        ),
        None => RootCerts::PlatformVerifier,
    };
    let client_cert = match &settings.identity {
        None => None,
        Some(identity) => {
            let chain: Vec<Certificate<'static>> = identity
                .chain
                .iter()
                .map(|der| Certificate::from_der(der.as_ref()).to_owned())
                .collect();
            let key = PrivateKey::from_pem(identity.key_pem.expose().as_bytes())
                .map_err(|e| format!("tls_config.key_file: {e}"))?;
            Some(ClientCert::new_with_certs(&chain, key))
        }
    };
    Ok(TlsConfig::builder()
        .provider(TlsProvider::Rustls)
        .root_certs(roots)
        .client_cert(client_cert)
        .disable_verification(settings.insecure_skip_verify)
        .build())
}

/// `uri` with its host replaced by `host`, the port kept.
fn with_host(uri: &Uri, authority: &Authority, host: &str) -> Result<String, String> {
    let host = if host.contains(':') {
        format!("[{host}]") // an IPv6 address
    } else {
        host.to_string()
    };
    let authority = match authority.port() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    };
    let mut parts = uri.clone().into_parts();
    parts.authority = Some(
        authority
            .parse()
            .map_err(|e| format!("server_name {authority:?}: {e}"))?,
    );
    Uri::from_parts(parts)
        .map(|uri| uri.to_string())
        .map_err(|e| format!("server_name {authority:?}: {e}"))
}
