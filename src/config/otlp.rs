//! `[otlp]`: pushing the catalog's metrics to an OpenTelemetry receiver.
//!
//! Keys left out of the table are taken from the `OTEL_EXPORTER_OTLP_*`
//! environment variables as the OpenTelemetry SDKs read them (the
//! metrics-specific variable before the general one), then from the
//! defaults; a key in the file wins over the environment.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use documented::DocumentedFields;
use serde::Deserialize;
use toml::Spanned;

use super::http_client::RawTls;
use super::spans::{key, ConfigError, Ctx, Seg};
use super::values::{AttributeName, Flag, Positive, Table, Text};

/// The transport of OTLP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Grpc,
    HttpProtobuf,
}

/// What a sum or histogram point holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Temporality {
    /// Everything since the series started.
    Cumulative,
    /// What happened since the previous export the receiver acknowledged.
    Delta,
}

/// PEM files for TLS, read when the configuration is loaded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsFiles {
    /// CA certificates to trust instead of the system's.
    pub ca: Option<Vec<u8>>,
    /// Client certificate chain and key, for mutual TLS.
    pub client: Option<(Vec<u8>, Vec<u8>)>,
}

/// The `[otlp]` section, with the environment applied.
#[derive(Debug, Clone, PartialEq)]
pub struct OtlpConfig {
    /// Full URL of the receiver: for http/protobuf including `/v1/metrics`.
    pub endpoint: String,
    pub protocol: Protocol,
    pub interval: Duration,
    /// Of one export request, connecting included.
    pub timeout: Duration,
    /// Sent with every request (authentication).
    pub headers: BTreeMap<String, String>,
    pub temporality: Temporality,
    pub tls: TlsFiles,
    /// Resource attributes of every resource, over `OTEL_RESOURCE_ATTRIBUTES`.
    pub resource_attributes: BTreeMap<String, String>,
    /// The opt-in `jvm.gc.cause` attribute on `jvm.gc.duration`: one series
    /// per cause, as `jvm_gc_pause_seconds` has.
    pub gc_cause: bool,
    /// Each pause as a `jvm.gc.pause` log record, to the logs endpoint.
    pub pause_events: bool,
    /// Where the pause records go, while `pause_events` is on: for
    /// http/protobuf `/v1/logs` beside `/v1/metrics`; for gRPC the endpoint.
    pub logs_endpoint: Option<String>,
}

/// Pauses each JVM keeps for the records while the receiver is away; older
/// ones are dropped and counted (`pausewatch_otlp_pause_records_dropped_total`).
pub const PAUSE_RECORDS_KEPT: usize = 10_000;

/// The paths OTLP/HTTP receivers serve, appended to an endpoint without one.
const METRICS_PATH: &str = "/v1/metrics";
const LOGS_PATH: &str = "/v1/logs";

const DEFAULT_INTERVAL: Duration = Duration::from_secs(15);
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Deserialize, DocumentedFields)]
#[serde(deny_unknown_fields, expecting = "an [otlp] table")]
pub(super) struct RawOtlp {
    /// The receiver; /v1/metrics is added to an http/protobuf URL without a
    /// path (OTEL_EXPORTER_OTLP_ENDPOINT).
    ///
    /// Default: "http://localhost:4318" (gRPC: "http://localhost:4317")
    endpoint: Option<Spanned<Text>>,
    /// Or "grpc" (OTEL_EXPORTER_OTLP_PROTOCOL).
    ///
    /// Default: `"http/protobuf"`
    protocol: Option<Spanned<Text>>,
    /// Time between exports (OTEL_METRIC_EXPORT_INTERVAL).
    ///
    /// Default: `"15s"`
    interval: Option<Positive>,
    /// Of one export request (OTEL_EXPORTER_OTLP_TIMEOUT).
    ///
    /// Default: `"10s"`
    timeout: Option<Positive>,
    /// Sent with every request (OTEL_EXPORTER_OTLP_HEADERS).
    ///
    /// Default: `{}`
    headers: Option<BTreeMap<Spanned<String>, String>>,
    /// Or "delta" (OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE).
    ///
    /// Default: `"cumulative"`
    temporality: Option<Spanned<Text>>,
    /// { ca_file, cert_file, key_file } for an https:// endpoint.
    ///
    /// Default: none
    tls_config: Option<Spanned<Table<RawTls>>>,
    /// Attributes of every resource (merged with OTEL_RESOURCE_ATTRIBUTES).
    ///
    /// Default: `{}`
    #[serde(default)]
    resource_attributes: BTreeMap<AttributeName, String>,
    /// jvm.gc.cause on jvm.gc.duration.
    ///
    /// Default: `false`
    gc_cause: Option<Flag>,
    /// Each pause also as a jvm.gc.pause log record.
    ///
    /// Default: `false`
    pause_events: Option<Spanned<Flag>>,
    /// Where the pause records go (OTEL_EXPORTER_OTLP_LOGS_ENDPOINT).
    ///
    /// Default: the endpoint with /v1/logs
    logs_endpoint: Option<Spanned<Text>>,
}

/// Reads environment variables; tests pass their own.
pub(super) type Env<'e> = &'e dyn Fn(&str) -> Option<String>;

/// The value of the metrics-specific variable `OTEL_EXPORTER_OTLP_METRICS_<suffix>`,
/// else of `OTEL_EXPORTER_OTLP_<suffix>`, with the name it came from.
fn otlp_env(env: Env, suffix: &str) -> Option<(String, String)> {
    [
        format!("OTEL_EXPORTER_OTLP_METRICS_{suffix}"),
        format!("OTEL_EXPORTER_OTLP_{suffix}"),
    ]
    .into_iter()
    .find_map(|name| {
        let value = env(&name).filter(|v| !v.trim().is_empty())?;
        Some((name, value))
    })
}

/// A setting that comes from the file (with its span and key) or from an
/// environment variable (by name), for errors that say which.
enum Origin {
    File(Range<usize>, Vec<Seg>),
    Env(String),
}

impl Ctx<'_> {
    pub(super) fn otlp(&self, raw: RawOtlp, env: Env) -> Result<OtlpConfig, ConfigError> {
        let at = |k: &str| vec![key("otlp"), key(k)];
        let from_env = |name: String| ConfigError {
            file: self.origin.to_path_buf(),
            line: None,
            key: None,
            message: format!("environment variable {name}: "),
        };
        let fail = |origin: &Origin, message: String| match origin {
            Origin::File(span, path) => self.err(span.clone(), path, message),
            Origin::Env(name) => {
                let mut e = from_env(name.clone());
                e.message.push_str(&message);
                e
            }
        };

        let protocol = match Self::named_choice(&raw.protocol, "protocol", otlp_env(env, "PROTOCOL")) {
            None => Protocol::HttpProtobuf,
            Some((text, origin)) => match text.as_str() {
                "grpc" => Protocol::Grpc,
                "http/protobuf" => Protocol::HttpProtobuf,
                other => return Err(fail(
                    &origin,
                    format!("unknown protocol {other:?}, expected \"grpc\" or \"http/protobuf\" (http/json is not supported)"),
                )),
            },
        };

        let endpoint = match &raw.endpoint {
            Some(v) => {
                let origin = Origin::File(v.span(), at("endpoint"));
                let text = &v.get_ref().0;
                endpoint_url(text, protocol, METRICS_PATH, false).map_err(|m| fail(&origin, m))?
            }
            None => {
                let specific = env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT").filter(|v| !v.is_empty());
                let (name, text, as_is) = match specific {
                    Some(text) => ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", text, true),
                    None => match env("OTEL_EXPORTER_OTLP_ENDPOINT").filter(|v| !v.is_empty()) {
                        Some(text) => ("OTEL_EXPORTER_OTLP_ENDPOINT", text, false),
                        None => ("", default_endpoint(protocol).to_string(), false),
                    },
                };
                // The general variable is a base URL: the signal's path is
                // always appended to it (the SDKs' rule); the specific one is used as is.
                let text = if !as_is && !name.is_empty() && protocol == Protocol::HttpProtobuf {
                    format!("{}/v1/metrics", text.trim_end_matches('/'))
                } else {
                    text
                };
                endpoint_url(&text, protocol, METRICS_PATH, as_is || !name.is_empty())
                    .map_err(|m| fail(&Origin::Env(name.to_string()), m))?
            }
        };

        let interval = match raw.interval {
            Some(v) => v.0,
            None => match env("OTEL_METRIC_EXPORT_INTERVAL").filter(|v| !v.is_empty()) {
                Some(ms) => env_millis("OTEL_METRIC_EXPORT_INTERVAL", &ms).map_err(|m| {
                    fail(&Origin::Env("OTEL_METRIC_EXPORT_INTERVAL".to_string()), m)
                })?,
                None => DEFAULT_INTERVAL,
            },
        };
        let timeout = match raw.timeout {
            Some(v) => v.0,
            None => match otlp_env(env, "TIMEOUT") {
                Some((name, ms)) => {
                    env_millis(&name, &ms).map_err(|m| fail(&Origin::Env(name.clone()), m))?
                }
                None => DEFAULT_TIMEOUT,
            },
        };

        let headers = match &raw.headers {
            Some(table) => {
                let mut headers = BTreeMap::new();
                for (name, value) in table {
                    let mut path = at("headers");
                    path.push(Seg::Key(name.get_ref().clone()));
                    if let Some(problem) = header_problem(name.get_ref(), value) {
                        return Err(self.err(name.span(), &path, problem));
                    }
                    headers.insert(name.get_ref().to_ascii_lowercase(), value.clone());
                }
                headers
            }
            None => match otlp_env(env, "HEADERS") {
                Some((name, text)) => {
                    env_headers(&text).map_err(|m| fail(&Origin::Env(name.clone()), m))?
                }
                None => BTreeMap::new(),
            },
        };

        let preference = otlp_env(env, "TEMPORALITY_PREFERENCE");
        let temporality = match Self::named_choice(&raw.temporality, "temporality", preference) {
            None => Temporality::Cumulative,
            Some((text, origin)) => match text.as_str() {
                "cumulative" => Temporality::Cumulative,
                "delta" => Temporality::Delta,
                other => {
                    return Err(fail(
                        &origin,
                        format!(
                            "unknown temporality {other:?}, expected \"cumulative\" or \"delta\""
                        ),
                    ))
                }
            },
        };

        let tls = match raw.tls_config {
            Some(v) => self.otlp_tls(v, &at("tls_config"), &endpoint)?,
            None => {
                // The SDKs' variables: each names one PEM file.
                let file = |suffix: &str| -> Result<Option<Vec<u8>>, ConfigError> {
                    let Some((name, path)) = otlp_env(env, suffix) else {
                        return Ok(None);
                    };
                    read_pem(Path::new(&path))
                        .map(Some)
                        .map_err(|m| fail(&Origin::Env(name), m))
                };
                let client = match (file("CLIENT_CERTIFICATE")?, file("CLIENT_KEY")?) {
                    (Some(cert), Some(key)) => Some((cert, key)),
                    (None, None) => None,
                    _ => {
                        return Err(fail(
                            &Origin::Env("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE".to_string()),
                            "a client certificate and its key (OTEL_EXPORTER_OTLP_CLIENT_KEY) go together".to_string(),
                        ))
                    }
                };
                TlsFiles {
                    ca: file("CERTIFICATE")?,
                    client,
                }
            }
        };

        let resource_attributes = (raw.resource_attributes.into_iter())
            .map(|(name, value)| (name.0, value))
            .collect();
        let gc_cause = raw.gc_cause.is_some_and(|f| f.0);
        let pause_events = raw.pause_events.as_ref().is_some_and(|f| f.get_ref().0);
        let logs_endpoint = match (&raw.logs_endpoint, protocol) {
            _ if !pause_events => None,
            (Some(v), _) => {
                let origin = Origin::File(v.span(), at("logs_endpoint"));
                let text = &v.get_ref().0;
                Some(endpoint_url(text, protocol, LOGS_PATH, false).map_err(|m| fail(&origin, m))?)
            }
            (None, Protocol::Grpc) => Some(endpoint.clone()),
            (None, Protocol::HttpProtobuf) => {
                let name = "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT";
                let beside = endpoint
                    .strip_suffix(METRICS_PATH)
                    .map(|base| format!("{base}{LOGS_PATH}"));
                match (raw.endpoint.is_none().then(|| env(name)).flatten(), beside) {
                    (Some(text), _) => Some(
                        endpoint_url(&text, protocol, LOGS_PATH, true)
                            .map_err(|m| fail(&Origin::Env(name.to_string()), m))?,
                    ),
                    (None, Some(url)) => Some(url),
                    (None, None) => {
                        let v = raw.pause_events.as_ref().expect("pause_events is on");
                        return Err(self.err(
                            v.span(),
                            &at("pause_events"),
                            format!("the endpoint {endpoint} does not end in {METRICS_PATH}: set logs_endpoint"),
                        ));
                    }
                }
            }
        };

        Ok(OtlpConfig {
            endpoint,
            protocol,
            interval,
            timeout,
            headers,
            temporality,
            tls,
            resource_attributes,
            gc_cause,
            pause_events,
            logs_endpoint,
        })
    }
}

impl Ctx<'_> {
    /// `tls_config` as every outgoing URL spells it, its files checked by the
    /// same code; `server_name` and `insecure_skip_verify` are refused, the
    /// gRPC client taking neither.
    fn otlp_tls(
        &self,
        value: Spanned<Table<RawTls>>,
        path: &[Seg],
        endpoint: &str,
    ) -> Result<TlsFiles, ConfigError> {
        if !endpoint.starts_with("https://") {
            return Err(self.err(
                value.span(),
                path,
                format!("{endpoint:?} is plain http: TLS settings would be ignored; use an https:// endpoint or remove tls_config"),
            ));
        }
        let span = value.span();
        let settings = self.tls_settings(value.into_inner().0, path, &span)?;
        if settings.server_name.is_some() || settings.insecure_skip_verify {
            return Err(self.err(
                span,
                path,
                "server_name and insecure_skip_verify are not supported for [otlp]",
            ));
        }
        let read = |file: &Path| {
            std::fs::read(file)
                .map_err(|e| self.err(span.clone(), path, format!("{}: {e}", file.display())))
        };
        let client = match (&settings.cert_file, &settings.identity) {
            (Some(cert_file), Some(identity)) => Some((
                read(cert_file)?,
                identity.key_pem.expose().as_bytes().to_vec(),
            )),
            _ => None,
        };
        Ok(TlsFiles {
            ca: settings.ca_file.as_deref().map(read).transpose()?,
            client,
        })
    }

    /// A named choice from the file's `[otlp] k`, else from the environment
    /// (lower-cased, as the SDKs read it), else `None` for the default.
    fn named_choice(
        value: &Option<Spanned<Text>>,
        k: &str,
        from_env: Option<(String, String)>,
    ) -> Option<(String, Origin)> {
        let (text, origin) = match value {
            Some(v) => {
                let origin = Origin::File(v.span(), vec![key("otlp"), key(k)]);
                (v.get_ref().0.clone(), origin)
            }
            None => {
                let (name, value) = from_env?;
                (value.to_ascii_lowercase(), Origin::Env(name))
            }
        };
        Some((text.trim().to_string(), origin))
    }
}

fn default_endpoint(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Grpc => "http://localhost:4317",
        Protocol::HttpProtobuf => "http://localhost:4318/v1/metrics",
    }
}

/// Checks an endpoint URL; for http/protobuf, the signal's `path` is added
/// to one given without a path unless `as_is`.
fn endpoint_url(text: &str, protocol: Protocol, path: &str, as_is: bool) -> Result<String, String> {
    let text = text.trim();
    let mut url = url::Url::parse(text).map_err(|e| {
        format!("invalid endpoint {text:?}: {e} (expected http://HOST:PORT or https://HOST:PORT)")
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!(
            "invalid endpoint {text:?}: expected an http:// or https:// URL with a host"
        ));
    }
    if protocol == Protocol::HttpProtobuf && !as_is && matches!(url.path(), "" | "/") {
        url.set_path(path);
    }
    let mut url = url.to_string();
    // gRPC wants the bare origin; the URL type adds a `/` path to it.
    if protocol == Protocol::Grpc && url.ends_with('/') {
        url.pop();
    }
    Ok(url)
}

/// `OTEL_*_TIMEOUT` and `OTEL_METRIC_EXPORT_INTERVAL`: integer milliseconds.
fn env_millis(name: &str, text: &str) -> Result<Duration, String> {
    match text.trim().parse::<u64>() {
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(format!(
            "{text:?} is not a positive number of milliseconds ({name})"
        )),
    }
}

/// `OTEL_EXPORTER_OTLP_HEADERS`: `key1=value1,key2=value2`, values
/// percent-encoded (the W3C baggage format the SDKs read).
fn env_headers(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut headers = BTreeMap::new();
    for pair in text.split(',').filter(|p| !p.trim().is_empty()) {
        let Some((name, value)) = pair.split_once('=') else {
            return Err(format!("{pair:?} is not key=value"));
        };
        let (name, value) = (name.trim(), percent_decode(value.trim())?);
        if let Some(problem) = header_problem(name, &value) {
            return Err(problem);
        }
        headers.insert(name.to_ascii_lowercase(), value);
    }
    Ok(headers)
}

fn percent_decode(text: &str) -> Result<String, String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b == b'%' {
            let hex = tail
                .get(..2)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad percent-encoding in {text:?}"))?;
            bytes.push(hex);
            rest = &tail[2..];
        } else {
            bytes.push(b);
            rest = tail;
        }
    }
    String::from_utf8(bytes).map_err(|_| format!("{text:?} does not decode to UTF-8"))
}

/// Why `name: value` cannot be sent as an HTTP header or gRPC metadata.
fn header_problem(name: &str, value: &str) -> Option<String> {
    let name_ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if !name_ok {
        return Some(format!(
            "{name:?} is not a valid header name (letters, digits, '-', '_', '.')"
        ));
    }
    if name.to_ascii_lowercase().starts_with("grpc-") {
        return Some(format!("header {name:?}: grpc- headers are gRPC's own"));
    }
    if value.bytes().any(|b| b < 0x20 && b != b'\t' || b == 0x7f) {
        return Some(format!("header {name:?}: the value has control characters"));
    }
    None
}

/// A PEM file, checked now so that a wrong path stops the agent at start.
fn read_pem(path: &Path) -> Result<Vec<u8>, String> {
    let pem = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !pem.windows(11).any(|w| w == b"-----BEGIN ") {
        return Err(format!("{} is not a PEM file", path.display()));
    }
    Ok(pem)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{doc, parse_err, FILE};
    use super::*;

    fn parse_with(lines: &[&str], vars: &[(&str, &str)]) -> Result<OtlpConfig, ConfigError> {
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let env = move |name: &str| vars.get(name).cloned();
        super::super::parse_with_env(&doc(lines), Path::new(FILE), &env)
            .map(|c| c.otlp.expect("[otlp] given"))
    }

    #[test]
    fn defaults_are_the_sdks() {
        let c = parse_with(&["[otlp]"], &[]).unwrap();
        assert_eq!(c.endpoint, "http://localhost:4318/v1/metrics");
        assert_eq!(c.protocol, Protocol::HttpProtobuf);
        assert_eq!(c.interval, Duration::from_secs(15));
        assert_eq!(c.temporality, Temporality::Cumulative);
        assert!(!c.gc_cause);
        let grpc = parse_with(&["[otlp]", "protocol = 'grpc'"], &[]).unwrap();
        assert_eq!(grpc.endpoint, "http://localhost:4317");
        assert_eq!(c.logs_endpoint, None);
    }

    #[test]
    fn pause_records_go_beside_the_metrics() {
        let on = |lines: &[&str]| {
            let mut lines = lines.to_vec();
            lines.insert(0, "[otlp]");
            lines.push("pause_events = true");
            parse_with(&lines, &[]).map(|c| c.logs_endpoint.unwrap())
        };
        assert_eq!(on(&[]).unwrap(), "http://localhost:4318/v1/logs");
        assert_eq!(
            on(&["endpoint = 'https://c:4318/otlp/v1/metrics'"]).unwrap(),
            "https://c:4318/otlp/v1/logs"
        );
        assert_eq!(
            on(&["protocol = 'grpc'", "endpoint = 'http://c:4317'"]).unwrap(),
            "http://c:4317"
        );
        assert_eq!(
            on(&["endpoint = 'http://c/m'", "logs_endpoint = 'http://c'"]).unwrap(),
            "http://c/v1/logs"
        );
        parse_err(
            &["[otlp]", "endpoint = 'http://c/m'", "pause_events = true"],
            3,
            "otlp.pause_events",
        );
        let config = super::super::tests::parse_ok(&[
            "[[gc_log]]",
            "path = '/x/gc.log'",
            "[otlp]",
            "pause_events = true",
        ]);
        assert_eq!(config.gc_log[0].pause_records, PAUSE_RECORDS_KEPT);
    }

    #[test]
    fn the_http_path_is_added_only_when_missing() {
        let c = parse_with(&["[otlp]", "endpoint = 'http://collector:4318'"], &[]).unwrap();
        assert_eq!(c.endpoint, "http://collector:4318/v1/metrics");
        let c = parse_with(
            &["[otlp]", "endpoint = 'https://c:8443/otlp/v1/metrics'"],
            &[],
        )
        .unwrap();
        assert_eq!(c.endpoint, "https://c:8443/otlp/v1/metrics");
    }

    #[test]
    fn the_environment_fills_what_the_file_leaves_out() {
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/base"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "Authorization=Bearer%20abc,x-tenant=7",
            ),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "Delta"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "5000"),
        ];
        let c = parse_with(&["[otlp]"], &vars).unwrap();
        assert_eq!(c.endpoint, "http://collector:4318/base/v1/metrics");
        assert_eq!(c.headers["authorization"], "Bearer abc");
        assert_eq!(c.headers["x-tenant"], "7");
        assert_eq!(c.timeout, Duration::from_millis(2500));
        assert_eq!(c.temporality, Temporality::Delta);
        assert_eq!(c.interval, Duration::from_secs(5));
        // The metrics-specific endpoint is used as is; the file wins over both.
        let specific = [
            ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m:9/x"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
        ];
        assert_eq!(
            parse_with(&["[otlp]"], &specific).unwrap().endpoint,
            "http://m:9/x"
        );
        let c = parse_with(&["[otlp]", "timeout = '1s'"], &vars).unwrap();
        assert_eq!(c.timeout, Duration::from_secs(1));
    }

    #[test]
    fn bad_environment_names_the_variable() {
        let e =
            parse_with(&["[otlp]"], &[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]).unwrap_err();
        let shown = e.to_string();
        assert!(shown.starts_with(FILE), "{shown}");
        assert!(shown.contains("OTEL_EXPORTER_OTLP_PROTOCOL"), "{shown}");
        let e = parse_with(&["[otlp]"], &[("OTEL_EXPORTER_OTLP_TIMEOUT", "10s")]).unwrap_err();
        assert!(e.to_string().contains("OTEL_EXPORTER_OTLP_TIMEOUT"), "{e}");
    }

    #[test]
    fn bad_keys_name_file_line_and_key() {
        parse_err(&["[otlp]", "protocol = 'http/json'"], 2, "otlp.protocol");
        parse_err(
            &["[otlp]", "endpoint = 'collector:4317'"],
            2,
            "otlp.endpoint",
        );
        parse_err(
            &["[otlp]", "temporality = 'lowmemory'"],
            2,
            "otlp.temporality",
        );
        parse_err(&["[otlp]", "interval = '0s'"], 2, "otlp.interval");
        let tls = "tls_config = { ca_file = '/nonexistent/ca.pem' }";
        parse_err(
            &["[otlp]", "endpoint = 'https://c'", tls],
            3,
            "otlp.tls_config.ca_file",
        );
        parse_err(&["[otlp]", tls], 2, "otlp.tls_config");
        let server_name = "tls_config = { server_name = 'collector' }";
        parse_err(
            &["[otlp]", "endpoint = 'https://c'", server_name],
            3,
            "otlp.tls_config",
        );
        parse_err(&["[otlp]", "gc_cause = 'yes'"], 2, "otlp.gc_cause");
        parse_err(
            &["[otlp]", "headers = { 'bad name' = 'x' }"],
            2,
            "otlp.headers.\"bad name\"",
        );
        parse_err(&["[otlp]", "colour = 'blue'"], 2, "otlp.colour");
    }
}
