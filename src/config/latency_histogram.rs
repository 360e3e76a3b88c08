//! `[[latency_histogram]]`: an application's Prometheus histogram of request
//! durations, for services without an access log.

use std::collections::BTreeMap;
use std::time::Duration;

use documented::DocumentedFields;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::gc_log::GcLogSource;
use super::http_client::{HttpClientConfig, RawAuthorization, RawBasicAuth, RawClient, RawTls};
use super::serialize_duration;
use super::spans::{key, ConfigError, Ctx, Seg};
use super::values::{Dur, Table, Text, Trimmed, Url};

/// A Prometheus histogram of request durations served by the application.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyHistogramSource {
    pub url: String,
    /// Family name without `_bucket`, e.g. `http_server_requests_seconds`.
    pub metric: String,
    /// Label equality filters (`uri = "/price"`).
    pub matchers: BTreeMap<String, String>,
    #[serde(serialize_with = "serialize_duration")]
    pub interval: Duration,
    /// The live path of the GC log whose JVM serves these requests: named,
    /// or the only `[[gc_log]]` when that is a plain path.
    pub gc_log: String,
    /// TLS and credentials: not printed with the effective config.
    #[serde(skip)]
    pub client: HttpClientConfig,
}

#[derive(Deserialize, DocumentedFields)]
#[serde(deny_unknown_fields, expecting = "a [[latency_histogram]] table")]
pub(super) struct RawHistogram {
    /// The application's Prometheus endpoint, http:// or https://.
    ///
    /// Default: required
    url: Option<Url>,
    /// The histogram's name.
    ///
    /// Default: `"http_server_requests_seconds"`
    metric: Option<Text>,
    /// Label values the series must have.
    ///
    /// Default: none
    #[serde(default)]
    matchers: BTreeMap<String, String>,
    /// Time between scrapes.
    ///
    /// Default: `"15s"`
    interval: Option<Dur>,
    /// As for [[access_log]].
    ///
    /// Default: the only [[gc_log]] path
    gc_log: Option<Spanned<Text>>,
    /// As under [alerts.alertmanager].
    ///
    /// Default: none
    tls_config: Option<Table<RawTls>>,
    /// As under [alerts.alertmanager].
    ///
    /// Default: none
    basic_auth: Option<Table<RawBasicAuth>>,
    /// As under [alerts.alertmanager].
    ///
    /// Default: none
    authorization: Option<Table<RawAuthorization>>,
    /// As under [alerts.alertmanager].
    ///
    /// Default: none
    bearer_token: Option<Trimmed>,
    /// As under [alerts.alertmanager].
    ///
    /// Default: none
    bearer_token_file: Option<Trimmed>,
}

impl Ctx<'_> {
    pub(super) fn histogram_source(
        &self,
        i: usize,
        raw: Spanned<RawHistogram>,
        gc_logs: &[GcLogSource],
    ) -> Result<LatencyHistogramSource, ConfigError> {
        let at = |k: &str| vec![key("latency_histogram"), Seg::Index(i), key(k)];
        let span = raw.span();
        let r = raw.into_inner();
        let Some(url) = &r.url else {
            return Err(self.missing(
                span,
                &at("url"),
                "the http:// or https:// address of the application's metrics",
            ));
        };
        let section = [key("latency_histogram"), Seg::Index(i)];
        let settings = RawClient {
            tls_config: r.tls_config,
            basic_auth: r.basic_auth,
            authorization: r.authorization,
            bearer_token: r.bearer_token,
            bearer_token_file: r.bearer_token_file,
        };
        let client = self.http_client(settings, &section, span.clone(), &url.0)?;
        Ok(LatencyHistogramSource {
            url: url.0.clone(),
            metric: r
                .metric
                .map_or_else(|| "http_server_requests_seconds".to_string(), |v| v.0),
            matchers: r.matchers,
            interval: r.interval.map_or(Duration::from_secs(15), |v| v.0),
            gc_log: self.gc_link(span, r.gc_log, &at("gc_log"), gc_logs)?,
            client,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::parse_err;

    #[test]
    fn histogram_url_must_be_http_or_https() {
        let e = parse_err(
            &[
                "[[latency_histogram]]",
                "url = \"ftp://x/metrics\"",
                "gc_log = \"/a/gc.log\"",
            ],
            2,
            "latency_histogram[0].url",
        );
        assert!(e.message.contains("not an http:// or https:// URL"), "{e}");
    }
}
