//! `[[latency_histogram]]`: an application's Prometheus histogram of request
//! durations, for services without an access log.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::{Spanned, Value};

use super::gc_log::GcLogSource;
use super::http_client::{HttpClientConfig, KEYS};
use super::serialize_duration;
use super::spans::{key, ConfigError, Ctx, Seg};
use super::values::{Dur, Text, Url};

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

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [[latency_histogram]] table")]
pub(super) struct RawHistogram {
    url: Option<Url>,
    metric: Option<Text>,
    #[serde(default)]
    matchers: BTreeMap<String, String>,
    interval: Option<Dur>,
    gc_log: Option<Spanned<Text>>,
    tls_config: Option<Spanned<Value>>,
    basic_auth: Option<Spanned<Value>>,
    authorization: Option<Spanned<Value>>,
    bearer_token: Option<Spanned<Value>>,
    bearer_token_file: Option<Spanned<Value>>,
}

impl RawHistogram {
    /// The connection settings, as a table for [`Ctx::http_client`].
    fn client_settings(&self) -> toml::Table {
        let values = [
            &self.tls_config,
            &self.basic_auth,
            &self.authorization,
            &self.bearer_token,
            &self.bearer_token_file,
        ];
        KEYS.iter()
            .zip(values)
            .filter_map(|(k, v)| Some((k.to_string(), v.as_ref()?.get_ref().clone())))
            .collect()
    }
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
        let client = self.http_client(&r.client_settings(), &section, span.clone(), &url.0)?;
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
