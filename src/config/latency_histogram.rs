//! `[[latency_histogram]]`: an application's Prometheus histogram of request
//! durations, for services without an access log.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::{Spanned, Value};

use super::gc_log::GcLogSource;
use super::serialize_duration;
use super::spans::{key, ConfigError, Ctx, Seg};

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
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [[latency_histogram]] table")]
pub(super) struct RawHistogram {
    url: Option<Spanned<Value>>,
    metric: Option<Spanned<Value>>,
    matchers: Option<BTreeMap<Spanned<String>, Spanned<String>>>,
    interval: Option<Spanned<Value>>,
    gc_log: Option<Spanned<Value>>,
}

impl Ctx<'_> {
    pub(super) fn histogram_source(
        &self,
        i: usize,
        raw: &Spanned<RawHistogram>,
        gc_logs: &[GcLogSource],
    ) -> Result<LatencyHistogramSource, ConfigError> {
        let at = |k: &str| vec![key("latency_histogram"), Seg::Index(i), key(k)];
        let r = raw.get_ref();
        let url = self.required_string(
            raw.span(),
            &r.url,
            &at("url"),
            "the http:// address of the application's metrics",
        )?;
        if !url.starts_with("http://") {
            let span = r.url.as_ref().map_or(raw.span(), |v| v.span());
            return Err(self.err(span, &at("url"), format!("{url:?} is not an http:// URL")));
        }
        let interval = match &r.interval {
            None => Duration::from_secs(15),
            Some(v) => self.duration(v, &at("interval"))?,
        };
        Ok(LatencyHistogramSource {
            url,
            metric: self
                .optional_string(&r.metric, &at("metric"))?
                .unwrap_or_else(|| "http_server_requests_seconds".to_string()),
            matchers: r
                .matchers
                .iter()
                .flatten()
                .map(|(k, v)| (k.get_ref().clone(), v.get_ref().clone()))
                .collect(),
            interval,
            gc_log: self.gc_link(raw.span(), &r.gc_log, &at("gc_log"), gc_logs)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::parse_err;

    #[test]
    fn histogram_url_must_be_plain_http() {
        parse_err(
            &[
                "[[latency_histogram]]",
                "url = \"https://x\"",
                "gc_log = \"/a/gc.log\"",
            ],
            2,
            "latency_histogram[0].url",
        );
    }
}
