//! The connection settings of every outgoing URL (`[alerts.alertmanager]`,
//! `[alerts.webhook]`, `[[latency_histogram]]`), spelled as in Prometheus'
//! `http_config`: `tls_config`, `basic_auth`, `authorization`, `bearer_token`
//! and `bearer_token_file`.
//!
//! Every file is read and checked here, once, at load: a CA file that is not
//! PEM, a client key that does not match its certificate or an unreadable
//! password file is a config error on its key's line, not a delivery failure
//! an hour later. Files are not read again while running (restart to apply a
//! rotated certificate or token, as for any other setting). Relative paths are
//! relative to the config file's directory.

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine as _;
use documented::DocumentedFields;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;

use super::spans::{key, ConfigError, Ctx, Seg};
use super::values::{Flag, ServerName, Table, Text, Trimmed};

/// An outgoing URL with the settings of its connection.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub url: String,
    pub client: HttpClientConfig,
}

impl Endpoint {
    /// A URL with no credentials and default TLS (system roots for `https://`).
    pub fn plain(url: impl Into<String>) -> Endpoint {
        Endpoint {
            url: url.into(),
            client: HttpClientConfig::default(),
        }
    }
}

/// TLS and credentials for one outgoing URL, loaded and checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HttpClientConfig {
    pub tls: TlsSettings,
    /// The whole `Authorization` header value.
    pub authorization: Option<Secret>,
}

/// `tls_config`: the files (resolved) and what they hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TlsSettings {
    pub ca_file: Option<PathBuf>,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// Verified against the certificate and sent as SNI instead of the URL's host.
    pub server_name: Option<String>,
    pub insecure_skip_verify: bool,
    /// The CA file's certificates: the only roots trusted when given.
    pub roots: Option<Vec<CertificateDer<'static>>>,
    pub identity: Option<ClientIdentity>,
}

/// A client certificate chain and its key, known to match.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientIdentity {
    pub chain: Vec<CertificateDer<'static>>,
    /// The key file's PEM text, the form ureq takes a key in.
    pub key_pem: Secret,
}

/// A header value that must not reach a log line, `/metrics` or a debug dump.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// `Err` when `key` does not belong to the certificate of `chain`: ureq
/// would panic on such a pair, so it is refused before a client is built.
fn key_fits(
    chain: &[CertificateDer<'static>],
    key: PrivateKeyDer<'static>,
) -> Result<(), rustls::Error> {
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .and_then(|builder| {
            builder
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_client_auth_cert(chain.to_vec(), key)
        })
        .map(drop)
}

/// TLS settings from PEM text already read: `[otlp]`'s CA and client
/// certificate, which the gRPC client takes as PEM, for the HTTP client.
/// The same checks as `tls_config`'s files (the SDKs' variables name files
/// that were only read at load).
pub fn tls_from_pem(
    ca: Option<&[u8]>,
    client: Option<(&[u8], &[u8])>,
) -> Result<TlsSettings, String> {
    let certificates = |pem: &[u8], what: &str| -> Result<Vec<CertificateDer<'static>>, String> {
        let certificates = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("the {what}: {e}"))?;
        if certificates.is_empty() {
            return Err(format!("the {what} holds no certificate"));
        }
        Ok(certificates)
    };
    let mut tls = TlsSettings::default();
    if let Some(ca) = ca {
        tls.roots = Some(certificates(ca, "CA file")?);
    }
    if let Some((cert, key)) = client {
        let chain = certificates(cert, "client certificate")?;
        let key_pem = String::from_utf8_lossy(key).into_owned();
        let der = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
            .map_err(|e| format!("the client key: no PEM private key: {e}"))?;
        key_fits(&chain, der)
            .map_err(|e| format!("the client key does not fit the client certificate: {e}"))?;
        tls.identity = Some(ClientIdentity {
            chain,
            key_pem: Secret(key_pem),
        });
    }
    Ok(tls)
}

/// The connection settings of one outgoing URL, as read.
#[derive(Deserialize, DocumentedFields, Default)]
#[serde(deny_unknown_fields, expecting = "a table of connection settings")]
pub(super) struct RawClient {
    /// { ca_file, cert_file, key_file, server_name, insecure_skip_verify },
    /// files relative to this file.
    ///
    /// Default: none
    pub(super) tls_config: Option<Table<RawTls>>,
    /// { username, password or password_file }.
    ///
    /// Default: none
    pub(super) basic_auth: Option<Table<RawBasicAuth>>,
    /// { type, credentials or credentials_file }.
    ///
    /// Default: none
    pub(super) authorization: Option<Table<RawAuthorization>>,
    /// Sent as Authorization: Bearer.
    ///
    /// Default: none
    pub(super) bearer_token: Option<Trimmed>,
    /// A file holding the bearer token.
    ///
    /// Default: none
    pub(super) bearer_token_file: Option<Trimmed>,
}

/// `tls_config`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct RawTls {
    ca_file: Option<Trimmed>,
    cert_file: Option<Trimmed>,
    key_file: Option<Trimmed>,
    server_name: Option<ServerName>,
    insecure_skip_verify: Option<Flag>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct RawBasicAuth {
    username: Option<Text>,
    password: Option<Text>,
    password_file: Option<Trimmed>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct RawAuthorization {
    #[serde(rename = "type")]
    scheme: Option<Trimmed>,
    credentials: Option<Text>,
    credentials_file: Option<Trimmed>,
}

/// The tables read as [`RawClient`] word an unknown key as they always
/// have, `unknown key; expected one of a, b`, not as serde does.
pub(super) fn reworded_unknown_key(path: &[Seg], message: &str) -> Option<String> {
    let [.., Seg::Key(table), Seg::Key(_)] = path else {
        return None;
    };
    let connection = ["tls_config", "basic_auth", "authorization"].contains(&table.as_str())
        || path.len() == 3 && ["alertmanager", "webhook"].contains(&table.as_str());
    let (_, expected) = message
        .strip_prefix("unknown field `")?
        .split_once(", expected ")?;
    let known = expected
        .strip_prefix("one of ")
        .unwrap_or(expected)
        .replace('`', "");
    connection.then(|| format!("unknown key; expected one of {known}"))
}

/// Where the file a `*_file` key names is, and the key.
struct Named<'a> {
    file: PathBuf,
    path: &'a [Seg],
}

impl Ctx<'_> {
    /// `path` extended by `k`.
    fn under(path: &[Seg], k: &str) -> Vec<Seg> {
        let mut under = path.to_vec();
        under.push(key(k));
        under
    }

    /// An error on the line of the key at `path` (within `section`).
    fn at_key(
        &self,
        path: &[Seg],
        section: &Range<usize>,
        message: impl Into<String>,
    ) -> ConfigError {
        self.err(self.span_of(path, section.clone()), path, message)
    }

    /// The connection settings `raw` of `section` for requests to `url`:
    /// files read and checked, one credential at most.
    pub(super) fn http_client(
        &self,
        raw: RawClient,
        section: &[Seg],
        section_span: Range<usize>,
        url: &str,
    ) -> Result<HttpClientConfig, ConfigError> {
        let at = |k: &str| Self::under(section, k);
        let mut config = HttpClientConfig::default();
        if let Some(tls) = raw.tls_config {
            let path = at("tls_config");
            if !url.starts_with("https://") {
                return Err(self.at_key(
                    &path,
                    &section_span,
                    format!("{url:?} is plain http: TLS settings would be ignored; use an https:// URL or remove tls_config"),
                ));
            }
            config.tls = self.tls_settings(tls.0, &path, &section_span)?;
        }
        let given = [
            ("basic_auth", raw.basic_auth.is_some()),
            ("authorization", raw.authorization.is_some()),
            ("bearer_token", raw.bearer_token.is_some()),
            ("bearer_token_file", raw.bearer_token_file.is_some()),
        ];
        let mut given = given.iter().filter(|(_, is)| *is).map(|(k, _)| *k);
        if let (Some(_), Some(second)) = (given.next(), given.next()) {
            return Err(self.at_key(
                &at(second),
                &section_span,
                "only one of basic_auth, authorization, bearer_token and bearer_token_file may be given",
            ));
        }
        let header = if let Some(Table(basic)) = raw.basic_auth {
            let path = at("basic_auth");
            let Some(username) = basic.username else {
                return Err(self.at_key(&path, &section_span, "missing required key `username`"));
            };
            let file = basic
                .password_file
                .map(|f| (f, Self::under(&path, "password_file")));
            let password = self.inline_or_file(basic.password, file, "password", &section_span)?;
            let pair = format!("{}:{}", username.0, password.unwrap_or_default());
            Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            ))
        } else if let Some(Table(authorization)) = raw.authorization {
            let path = at("authorization");
            let file = (authorization.credentials_file)
                .map(|f| (f, Self::under(&path, "credentials_file")));
            let credentials = self.inline_or_file(
                authorization.credentials,
                file,
                "credentials",
                &section_span,
            )?;
            let Some(credentials) = credentials else {
                return Err(self.at_key(
                    &path,
                    &section_span,
                    "missing required key `credentials` or `credentials_file`",
                ));
            };
            let scheme = authorization.scheme.map_or("Bearer".to_string(), |s| s.0);
            Some(format!("{scheme} {credentials}"))
        } else if let Some(token) = raw.bearer_token {
            Some(format!("Bearer {}", token.0))
        } else if let Some(file) = raw.bearer_token_file {
            let path = at("bearer_token_file");
            let named = Named {
                file: self.resolve(&file.0),
                path: &path,
            };
            Some(format!(
                "Bearer {}",
                self.secret_file(&named, &section_span)?
            ))
        } else {
            None
        };
        config.authorization = header.map(Secret);
        Ok(config)
    }

    /// `value` (`password`, `credentials`) or the content of the file
    /// `file` names (`*_file`, at its path), not both.
    fn inline_or_file(
        &self,
        value: Option<Text>,
        file: Option<(Trimmed, Vec<Seg>)>,
        value_key: &str,
        section: &Range<usize>,
    ) -> Result<Option<String>, ConfigError> {
        match (value, file) {
            (Some(_), Some((_, path))) => Err(self.at_key(
                &path,
                section,
                format!("give either {value_key} or {value_key}_file, not both"),
            )),
            (Some(value), None) => Ok(Some(value.0)),
            (None, Some((file, path))) => {
                let named = Named {
                    file: self.resolve(&file.0),
                    path: &path,
                };
                self.secret_file(&named, section).map(Some)
            }
            (None, None) => Ok(None),
        }
    }

    /// The files of `tls_config` (at `path`) read and checked.
    pub(super) fn tls_settings(
        &self,
        raw: RawTls,
        path: &[Seg],
        section: &Range<usize>,
    ) -> Result<TlsSettings, ConfigError> {
        let named = |file: &Trimmed, k: &str| (self.resolve(&file.0), Self::under(path, k));
        let mut tls = TlsSettings {
            server_name: raw.server_name.map(|s| s.0),
            insecure_skip_verify: raw.insecure_skip_verify.is_some_and(|f| f.0),
            ..TlsSettings::default()
        };
        if let Some(ca) = &raw.ca_file {
            let (file, path) = named(ca, "ca_file");
            let ca = Named { file, path: &path };
            let certificates = self.certificates(&ca, section)?;
            let mut store = rustls::RootCertStore::empty();
            let (added, _) = store.add_parsable_certificates(certificates.iter().cloned());
            if added == 0 {
                return Err(self.at_key(
                    &path,
                    section,
                    format!("{}: no CA certificate rustls can use", ca.file.display()),
                ));
            }
            tls.roots = Some(certificates);
            tls.ca_file = Some(ca.file);
        }
        match (&raw.cert_file, &raw.key_file) {
            (None, None) => {}
            (Some(_), None) | (None, Some(_)) => {
                let k = if raw.cert_file.is_some() {
                    "cert_file"
                } else {
                    "key_file"
                };
                return Err(self.at_key(
                    &Self::under(path, k),
                    section,
                    "cert_file and key_file go together: give both or neither",
                ));
            }
            (Some(cert), Some(key)) => {
                let (cert_file, cert_path) = named(cert, "cert_file");
                let (key_file, key_path) = named(key, "key_file");
                let chain = self.certificates(
                    &Named {
                        file: cert_file.clone(),
                        path: &cert_path,
                    },
                    section,
                )?;
                let fail = |message: String| self.at_key(&key_path, section, message);
                let key_pem = std::fs::read_to_string(&key_file)
                    .map_err(|e| fail(format!("{}: {e}", key_file.display())))?;
                let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|e| {
                    fail(format!("{}: no PEM private key: {e}", key_file.display()))
                })?;
                key_fits(&chain, key).map_err(|e| {
                    fail(format!(
                        "{} does not fit {}: {e}",
                        key_file.display(),
                        cert_file.display()
                    ))
                })?;
                tls.identity = Some(ClientIdentity {
                    chain,
                    key_pem: Secret(key_pem),
                });
                tls.cert_file = Some(cert_file);
                tls.key_file = Some(key_file);
            }
        }
        Ok(tls)
    }

    /// Every certificate of a PEM file; at least one.
    fn certificates(
        &self,
        named: &Named,
        section: &Range<usize>,
    ) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
        let file = &named.file;
        let fail = |message: String| self.at_key(named.path, section, message);
        std::fs::File::open(file).map_err(|e| fail(format!("{}: {e}", file.display())))?;
        let not_pem = |detail: String| {
            fail(format!(
                "{}: not a PEM certificate file: {detail}",
                file.display()
            ))
        };
        let certificates = CertificateDer::pem_file_iter(file)
            .map_err(|e| not_pem(e.to_string()))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| not_pem(e.to_string()))?;
        if certificates.is_empty() {
            return Err(not_pem("no CERTIFICATE block".to_string()));
        }
        Ok(certificates)
    }

    /// The file's content, trimmed (a trailing newline is not part of a token).
    fn secret_file(&self, named: &Named, section: &Range<usize>) -> Result<String, ConfigError> {
        let file = &named.file;
        let fail = |message: String| self.at_key(named.path, section, message);
        let text =
            std::fs::read_to_string(file).map_err(|e| fail(format!("{}: {e}", file.display())))?;
        let secret = text.trim();
        if secret.is_empty() {
            return Err(fail(format!("{} is empty", file.display())));
        }
        Ok(secret.to_string())
    }

    /// Relative to the config file's directory, as Prometheus resolves them.
    pub(super) fn resolve(&self, file: &str) -> PathBuf {
        super::relative_to(self.origin, file)
    }
}

/// What of an outgoing URL a log line may show: scheme, host and port.
/// Webhooks carry their secret in the query (`?token=`) or the path (Slack,
/// Teams), and logs are read by more people than the config file.
pub fn redact_url(url: &str) -> String {
    let Ok(uri) = url.parse::<ureq::http::Uri>() else {
        return "(a URL that does not parse)".to_string();
    };
    let (Some(scheme), Some(host)) = (uri.scheme_str(), uri.host()) else {
        return "(a URL without scheme or host)".to_string();
    };
    let port = uri.port_u16().or(match scheme {
        "https" => Some(443),
        "http" => Some(80),
        _ => None,
    });
    match port {
        Some(port) => format!("{scheme}://{host}:{port}"),
        None => format!("{scheme}://{host}"),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::parse;
    use super::super::tests::{doc, parse_err, FILE};
    use super::redact_url;

    /// A CA certificate, and a client certificate with its key and a key of
    /// another certificate, as PEM files in a temporary directory.
    fn pem_files() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        let ca = rcgen::generate_simple_self_signed(vec!["ca.test".to_string()]).unwrap();
        write("ca.pem", &ca.cert.pem());
        let client = rcgen::generate_simple_self_signed(vec!["client".to_string()]).unwrap();
        write("client.pem", &client.cert.pem());
        write("client-key.pem", &client.signing_key.serialize_pem());
        let other = rcgen::generate_simple_self_signed(vec!["other".to_string()]).unwrap();
        write("other-key.pem", &other.signing_key.serialize_pem());
        write("password", "s3cret\n");
        write("empty", "\n");
        write("not-pem.txt", "hello\n");
        dir
    }

    fn histogram(settings: &[&str]) -> Vec<String> {
        let mut lines: Vec<String> = [
            "[[gc_log]]",
            "path = '/l/gc.log'",
            "[[latency_histogram]]",
            "url = 'https://app:8443/metrics'",
        ]
        .iter()
        .map(|l| l.to_string())
        .collect();
        lines.extend(settings.iter().map(|l| l.to_string()));
        lines
    }

    fn histogram_err(settings: &[&str], line: usize, key: &str) -> String {
        let lines = histogram(settings);
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        parse_err(&lines, line, key).message
    }

    #[test]
    fn files_are_read_and_checked_at_load() {
        let dir = pem_files();
        let file = |name: &str| dir.path().join(name).display().to_string();
        let tls = |inner: String| format!("tls_config = {{ {inner} }}");
        let key = "latency_histogram[0].tls_config";

        let message = histogram_err(
            &[&tls(format!("ca_file = '{}'", file("nope.pem")))],
            5,
            &format!("{key}.ca_file"),
        );
        assert!(message.contains("No such file"), "{message}");
        let message = histogram_err(
            &[&tls(format!("ca_file = '{}'", file("not-pem.txt")))],
            5,
            &format!("{key}.ca_file"),
        );
        assert!(message.contains("not a PEM certificate file"), "{message}");
        let message = histogram_err(
            &[&tls(format!("cert_file = '{}'", file("client.pem")))],
            5,
            &format!("{key}.cert_file"),
        );
        assert!(message.contains("give both or neither"), "{message}");
        let mismatch = format!(
            "cert_file = '{}', key_file = '{}'",
            file("client.pem"),
            file("other-key.pem")
        );
        let message = histogram_err(&[&tls(mismatch)], 5, &format!("{key}.key_file"));
        assert!(message.contains("does not fit"), "{message}");
        let message = histogram_err(
            &[&tls(format!(
                "key_file = '{0}', cert_file = '{0}'",
                file("client.pem")
            ))],
            5,
            &format!("{key}.key_file"),
        );
        assert!(message.contains("no PEM private key"), "{message}");
        let message = histogram_err(
            &["tls_config = { server_name = 'a b' }"],
            5,
            &format!("{key}.server_name"),
        );
        assert!(message.contains("not a DNS name"), "{message}");
        let message = histogram_err(
            &["tls_config = { verify = false }"],
            5,
            &format!("{key}.verify"),
        );
        assert!(message.contains("unknown key"), "{message}");
        let message = histogram_err(
            &[&format!("bearer_token_file = '{}'", file("empty"))],
            5,
            "latency_histogram[0].bearer_token_file",
        );
        assert!(message.contains("is empty"), "{message}");
    }

    #[test]
    fn one_credential_at_a_time() {
        let dir = pem_files();
        let password_file = dir.path().join("password").display().to_string();
        let both = format!(
            "basic_auth = {{ username = 'u', password = 'p', password_file = '{password_file}' }}"
        );
        let message = histogram_err(&[&both], 5, "latency_histogram[0].basic_auth.password_file");
        assert!(
            message.contains("either password or password_file, not both"),
            "{message}"
        );
        let message = histogram_err(
            &[
                "bearer_token = 't'",
                "basic_auth = { username = 'u', password = 'p' }",
            ],
            5,
            "latency_histogram[0].bearer_token",
        );
        assert!(message.contains("only one of"), "{message}");
        let message = histogram_err(
            &["basic_auth = { password = 'p' }"],
            5,
            "latency_histogram[0].basic_auth",
        );
        assert!(
            message.contains("missing required key `username`"),
            "{message}"
        );
        let message = histogram_err(
            &["authorization = { type = 'Bearer' }"],
            5,
            "latency_histogram[0].authorization",
        );
        assert!(message.contains("credentials"), "{message}");
    }

    #[test]
    fn urls_and_tables_that_cannot_work() {
        let e = parse_err(
            &[
                "[alerts]",
                "alertmanager_url = 'http://am:9093'",
                "[alerts.alertmanager]",
                "tls_config = { insecure_skip_verify = true }",
            ],
            4,
            "alerts.alertmanager.tls_config",
        );
        assert!(e.message.contains("plain http"), "{e}");
        let e = parse_err(
            &["[alerts]", "webhook_url = 'https://bot:pw@hooks.test/x'"],
            2,
            "alerts.webhook_url",
        );
        assert!(e.message.contains("credentials in the URL"), "{e}");
        let e = parse_err(
            &["[alerts.webhook]", "bearer_token = 't'"],
            1,
            "alerts.webhook",
        );
        assert!(e.message.contains("set [alerts] webhook_url"), "{e}");
        let e = parse_err(
            &[
                "[alerts]",
                "webhook_url = 'https://hooks.test/x'",
                "[alerts.webhook]",
                "token = 't'",
            ],
            4,
            "alerts.webhook.token",
        );
        assert!(e.message.contains("unknown key"), "{e}");
    }

    /// The settings' tables read by serde still word a wrong type and an
    /// unknown key as the rest of the file and Prometheus users expect, in
    /// a [[latency_histogram]] as in [alerts.webhook].
    #[test]
    fn wrong_types_and_unknown_keys_keep_their_words() {
        let message = histogram_err(&["tls_config = 3"], 5, "latency_histogram[0].tls_config");
        assert_eq!(message, "expected a table, found integer");
        let message = histogram_err(
            &["", "[latency_histogram.authorization]", "kind = 'Bearer'"],
            7,
            "latency_histogram[0].authorization.kind",
        );
        assert_eq!(
            message,
            "unknown key; expected one of type, credentials, credentials_file"
        );
        let webhook = |line: &'static str| {
            [
                "[alerts]",
                "webhook_url = 'https://hooks.test/x'",
                "[alerts.webhook]",
                line,
            ]
        };
        let e = parse_err(
            &webhook("basic_auth = ['u']"),
            4,
            "alerts.webhook.basic_auth",
        );
        assert_eq!(e.message, "expected a table, found array");
        let e = parse_err(
            &webhook("basic_auth = { username = 'u', pass = 'p' }"),
            4,
            "alerts.webhook.basic_auth.pass",
        );
        assert_eq!(
            e.message,
            "unknown key; expected one of username, password, password_file"
        );
    }

    #[test]
    fn loaded_settings_and_relative_paths() {
        let dir = pem_files();
        let text = doc(&[
            "[alerts]",
            "alertmanager_url = 'https://am.test:9093'",
            "webhook_url = 'https://hooks.test/pausewatch'",
            "[alerts.alertmanager]",
            "tls_config = { ca_file = 'ca.pem', cert_file = 'client.pem', key_file = 'client-key.pem', server_name = 'alertmanager.internal' }",
            "basic_auth = { username = 'pausewatch', password_file = 'password' }",
            "[alerts.webhook]",
            "authorization = { type = 'Token', credentials = 'Zq-token' }",
        ]);
        let origin = dir.path().join("pausewatch.toml");
        let config = parse(&text, &origin).unwrap_or_else(|e| panic!("{e}"));
        let alertmanager = config.alert_sinks.alertmanager.unwrap();
        let tls = &alertmanager.client.tls;
        assert_eq!(
            tls.ca_file.as_deref(),
            Some(dir.path().join("ca.pem").as_path())
        );
        assert_eq!(tls.roots.as_ref().map(Vec::len), Some(1));
        assert_eq!(tls.identity.as_ref().map(|i| i.chain.len()), Some(1));
        assert_eq!(tls.server_name.as_deref(), Some("alertmanager.internal"));
        // base64("pausewatch:s3cret"): the file's content without its newline.
        let authorization = alertmanager.client.authorization.as_ref().unwrap();
        assert_eq!(authorization.expose(), "Basic cGF1c2V3YXRjaDpzM2NyZXQ=");
        let webhook = config.alert_sinks.webhook.unwrap();
        assert_eq!(
            webhook.client.authorization.as_ref().unwrap().expose(),
            "Token Zq-token"
        );
        // Debug output (what a `{:?}` in a log line would show) holds no secret.
        let shown = format!("{alertmanager:?} {webhook:?}");
        assert!(!shown.contains("cGF1c2V3YXRjaDpzM2NyZXQ="), "{shown}");
        // Not hex: a certificate's DER bytes are shown in hex.
        assert!(!shown.contains("Zq-token"), "{shown}");
        assert!(!shown.contains("PRIVATE KEY"), "{shown}");
        // Elsewhere, a relative path is relative to that file's directory.
        let e = parse(&text, Path::new(FILE)).unwrap_err();
        assert!(e.message.contains("/etc/ca.pem"), "{e}");
    }

    #[test]
    fn only_scheme_host_and_port_of_a_url_are_shown() {
        for (url, shown) in [
            (
                "https://hooks.slack.com/services/T000/B000/XXXXSECRET",
                "https://hooks.slack.com:443",
            ),
            (
                "http://10.0.0.7:9093/api/v2/alerts?token=s3cr3t",
                "http://10.0.0.7:9093",
            ),
            ("http://user:pw@[::1]:8080/x#frag", "http://[::1]:8080"),
            ("not a url", "(a URL that does not parse)"),
            ("/relative?token=x", "(a URL without scheme or host)"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }
}
