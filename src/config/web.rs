//! The web configuration of the agent's own endpoints (`--web-config FILE`,
//! `web_config`), in the Prometheus exporter-toolkit's YAML format, so that
//! one file and one habit serve every exporter on a host:
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: server.pem
//!   key_file: server-key.pem
//!   client_ca_file: ca.pem                     # optional
//!   client_auth_type: RequireAndVerifyClientCert
//!   min_version: TLS12
//! basic_auth_users:
//!   prometheus: $2y$10$...                     # bcrypt hash
//! ```
//!
//! Relative file names are relative to the web config's directory, as the
//! exporter-toolkit resolves them. Errors name the file, the line and the key
//! like the rest of the configuration.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;

use super::ConfigError;

/// A loaded web config: what every connection and request is checked against.
#[derive(Clone)]
pub struct WebConfig {
    /// `None`: plain HTTP.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// User name to bcrypt hash; empty: no authentication.
    pub users: BTreeMap<String, String>,
    /// The YAML file and the certificate files it names: a change to any of
    /// them (a renewed certificate) reloads the whole.
    pub files: Vec<PathBuf>,
}

impl std::fmt::Debug for WebConfig {
    /// Neither keys nor hashes: the config may be logged.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebConfig")
            .field("tls", &self.tls.is_some())
            .field("users", &self.users.keys().collect::<Vec<_>>())
            .field("files", &self.files)
            .finish()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWebConfig {
    tls_server_config: Option<RawTls>,
    basic_auth_users: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTls {
    cert_file: Option<String>,
    key_file: Option<String>,
    client_ca_file: Option<String>,
    #[serde(default)]
    client_auth_type: ClientAuth,
    #[serde(default)]
    min_version: TlsVersion,
}

/// The exporter-toolkit's names (Go's `tls.ClientAuthType`). The two that
/// accept a certificate without verifying it are refused rather than
/// silently verified.
#[derive(Deserialize, Default, Clone, Copy, PartialEq)]
enum ClientAuth {
    #[default]
    NoClientCert,
    RequestClientCert,
    RequireAnyClientCert,
    VerifyClientCertIfGiven,
    RequireAndVerifyClientCert,
}

#[derive(Deserialize, Default, Clone, Copy, PartialEq)]
enum TlsVersion {
    TLS10,
    TLS11,
    #[default]
    TLS12,
    TLS13,
}

/// Reads, checks and builds the web config at `path`.
pub fn load_web_config(path: &Path) -> Result<WebConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        file: path.to_path_buf(),
        line: None,
        key: None,
        message: format!("cannot read web config file: {e}"),
    })?;
    WebFile { path, text: &text }.build()
}

/// The file being checked, for locating its errors.
struct WebFile<'a> {
    path: &'a Path,
    text: &'a str,
}

impl WebFile<'_> {
    /// An error at the first line holding `key:` (the leaf of `dotted`).
    fn err(&self, dotted: &str, message: impl Into<String>) -> ConfigError {
        let leaf = dotted.rsplit('.').next().unwrap_or(dotted);
        let line = self.text.lines().position(|line| {
            line.trim_start()
                .trim_start_matches(['"', '\''])
                .strip_prefix(leaf)
                .is_some_and(|rest| rest.trim_start_matches(['"', '\'']).starts_with(':'))
        });
        ConfigError {
            file: self.path.to_path_buf(),
            line: line.map(|l| l + 1),
            key: Some(dotted.to_string()),
            message: message.into(),
        }
    }

    fn resolve(&self, file: &str) -> PathBuf {
        super::relative_to(self.path, file)
    }

    fn build(&self) -> Result<WebConfig, ConfigError> {
        let raw: RawWebConfig = serde_yaml_ng::from_str(self.text).map_err(|e| {
            let message = e.to_string();
            // serde_yaml_ng appends " at line L column C": the line goes in front.
            let message = match message.find(" at line ") {
                Some(at) => message[..at].to_string(),
                None => message,
            };
            ConfigError {
                file: self.path.to_path_buf(),
                line: e.location().map(|l| l.line()),
                key: None,
                message,
            }
        })?;
        let mut config = WebConfig {
            tls: None,
            users: BTreeMap::new(),
            files: vec![self.path.to_path_buf()],
        };
        for (user, hash) in raw.basic_auth_users.unwrap_or_default() {
            let key = format!("basic_auth_users.{user}");
            if user.is_empty() || user.contains(':') {
                return Err(self.err(&key, "a user name is not empty and has no ':'"));
            }
            if bcrypt::HashParts::from_str(&hash).is_err() {
                return Err(self.err(
                    &key,
                    "not a bcrypt hash ($2y$...); make one with `htpasswd -nBC 10 \"\" | tr -d ':\\n'`",
                ));
            }
            config.users.insert(user, hash);
        }
        if let Some(tls) = raw.tls_server_config {
            config.tls = Some(Arc::new(self.tls(tls, &mut config.files)?));
        }
        Ok(config)
    }

    fn tls(
        &self,
        raw: RawTls,
        files: &mut Vec<PathBuf>,
    ) -> Result<rustls::ServerConfig, ConfigError> {
        const CERT: &str = "tls_server_config.cert_file";
        const KEY: &str = "tls_server_config.key_file";
        const CA: &str = "tls_server_config.client_ca_file";
        const AUTH: &str = "tls_server_config.client_auth_type";
        let (Some(cert_file), Some(key_file)) = (&raw.cert_file, &raw.key_file) else {
            let missing = if raw.cert_file.is_none() { CERT } else { KEY };
            return Err(self.err(
                "tls_server_config",
                format!("{missing} is required for TLS"),
            ));
        };
        let cert_file = self.resolve(cert_file);
        let key_file = self.resolve(key_file);
        let chain = self.certificates(&cert_file, CERT)?;
        let key = PrivateKeyDer::from_pem_file(&key_file).map_err(|e| {
            self.err(
                KEY,
                format!("{}: no PEM private key: {e}", key_file.display()),
            )
        })?;
        files.extend([cert_file.clone(), key_file.clone()]);

        let versions: &[&rustls::SupportedProtocolVersion] = match raw.min_version {
            TlsVersion::TLS10 | TlsVersion::TLS11 => {
                return Err(self.err(
                    "tls_server_config.min_version",
                    "TLS 1.0 and 1.1 are not supported (rustls): use TLS12 or TLS13",
                ))
            }
            TlsVersion::TLS12 => &[&rustls::version::TLS13, &rustls::version::TLS12],
            TlsVersion::TLS13 => &[&rustls::version::TLS13],
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(versions)
            .map_err(|e| self.err("tls_server_config.min_version", e.to_string()))?;

        let verifier = match (raw.client_auth_type, &raw.client_ca_file) {
            (ClientAuth::NoClientCert, None) => None,
            (ClientAuth::NoClientCert, Some(_)) => {
                return Err(self.err(
                    CA,
                    "a client CA without a client_auth_type that checks client certificates (VerifyClientCertIfGiven or RequireAndVerifyClientCert)",
                ))
            }
            (ClientAuth::RequestClientCert | ClientAuth::RequireAnyClientCert, _) => {
                return Err(self.err(
                    AUTH,
                    "client certificates are always verified here: use VerifyClientCertIfGiven or RequireAndVerifyClientCert with client_ca_file",
                ))
            }
            (_, None) => return Err(self.err(AUTH, "needs client_ca_file to verify against")),
            (auth, Some(ca_file)) => {
                let ca_file = self.resolve(ca_file);
                let mut roots = rustls::RootCertStore::empty();
                let (added, _) =
                    roots.add_parsable_certificates(self.certificates(&ca_file, CA)?);
                if added == 0 {
                    return Err(self.err(
                        CA,
                        format!("{}: no CA certificate rustls can use", ca_file.display()),
                    ));
                }
                files.push(ca_file);
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
                let verifier = if auth == ClientAuth::VerifyClientCertIfGiven {
                    verifier.allow_unauthenticated()
                } else {
                    verifier
                };
                Some(verifier.build().map_err(|e| self.err(CA, e.to_string()))?)
            }
        };
        let builder = match verifier {
            Some(verifier) => builder.with_client_cert_verifier(verifier),
            None => builder.with_no_client_auth(),
        };
        // rustls checks that the key belongs to the certificate.
        let mut config = builder.with_single_cert(chain, key).map_err(|e| {
            self.err(
                KEY,
                format!(
                    "{} does not fit {}: {e}",
                    key_file.display(),
                    cert_file.display()
                ),
            )
        })?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }

    /// Every certificate of a PEM file; at least one.
    fn certificates(
        &self,
        file: &Path,
        key: &str,
    ) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
        let not_pem = |detail: String| {
            self.err(
                key,
                format!("{}: not a PEM certificate file: {detail}", file.display()),
            )
        };
        let certificates = CertificateDer::pem_file_iter(file)
            .map_err(|e| self.err(key, format!("{}: {e}", file.display())))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| not_pem(e.to_string()))?;
        if certificates.is_empty() {
            return Err(not_pem("no CERTIFICATE block".to_string()));
        }
        Ok(certificates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory with a self-signed `cert.pem`/`key.pem` and `web.yml` holding `yaml`.
    fn web_file(yaml: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
        std::fs::write(dir.path().join("cert.pem"), certified.cert.pem()).unwrap();
        std::fs::write(
            dir.path().join("key.pem"),
            certified.signing_key.serialize_pem(),
        )
        .unwrap();
        let file = dir.path().join("web.yml");
        std::fs::write(&file, yaml).unwrap();
        (dir, file)
    }

    fn error(yaml: &str) -> ConfigError {
        let (_dir, file) = web_file(yaml);
        load_web_config(&file).expect_err("should be rejected")
    }

    const TLS: &str = "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n";

    #[test]
    fn tls_and_users_load_and_debug_shows_no_hash() {
        let hash = bcrypt::hash("pw", 4).unwrap();
        let (_dir, file) = web_file(&format!("{TLS}basic_auth_users:\n  alice: {hash}\n"));
        let config = load_web_config(&file).unwrap_or_else(|e| panic!("{e}"));
        assert!(config.tls.is_some());
        assert_eq!(config.users.get("alice"), Some(&hash));
        assert_eq!(
            config.files.len(),
            3,
            "the YAML, the certificate and the key"
        );
        assert!(!format!("{config:?}").contains(&hash));
    }

    #[test]
    fn settings_that_cannot_work_name_their_line_and_key() {
        let cases = [
            (
                format!("{TLS}  min_version: TLS10\n"),
                4,
                "tls_server_config.min_version",
            ),
            (
                format!("{TLS}  client_ca_file: cert.pem\n"),
                4,
                "tls_server_config.client_ca_file",
            ),
            (
                format!(
                    "{TLS}  client_auth_type: RequireAnyClientCert\n  client_ca_file: cert.pem\n"
                ),
                4,
                "tls_server_config.client_auth_type",
            ),
            (
                format!("{TLS}  client_auth_type: RequireAndVerifyClientCert\n"),
                4,
                "tls_server_config.client_auth_type",
            ),
            (
                "tls_server_config:\n  cert_file: cert.pem\n".to_string(),
                1,
                "tls_server_config",
            ),
            (
                "tls_server_config:\n  cert_file: cert.pem\n  key_file: cert.pem\n".to_string(),
                3,
                "tls_server_config.key_file",
            ),
            (
                "basic_auth_users:\n  bob: secret\n".to_string(),
                2,
                "basic_auth_users.bob",
            ),
        ];
        for (yaml, line, key) in cases {
            let e = error(&yaml);
            assert_eq!(
                (e.line, e.key.as_deref()),
                (Some(line), Some(key)),
                "{e}\n{yaml}"
            );
        }
        let e = error(
            "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  ciphers: []\n",
        );
        assert_eq!(e.line, Some(4), "{e}");
        assert!(e.message.contains("unknown field `ciphers`"), "{e}");
    }
}
