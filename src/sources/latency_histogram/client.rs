//! Fetching the exposition: the one outgoing client, the media type asked for, a bounded body.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::config::HttpClientConfig;
use crate::http_client::HttpClient;

/// Where and what to scrape.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSourceConfig {
    /// An `http://` or `https://` URL, e.g. `http://127.0.0.1:8080/actuator/prometheus`.
    pub url: String,
    /// The histogram's base name without `_bucket`, e.g. `http_server_requests_seconds`.
    pub metric: String,
    /// Label equality filters, e.g. `uri="/price"`. As in PromQL, an empty
    /// value matches series without the label.
    pub matchers: BTreeMap<String, String>,
    /// The whole exchange (connect, request, response and body) must finish within it.
    pub timeout: Duration,
    /// TLS and credentials.
    pub client: HttpClientConfig,
}

impl HistogramSourceConfig {
    /// The client every scrape of this source uses.
    pub fn client(&self) -> Result<HttpClient, String> {
        HttpClient::new(&self.url, &self.client, self.timeout)
    }
}

/// The media type asked for: the classic text format, which every Prometheus
/// client library serves (an OpenMetrics answer is parsed as well).
pub const ACCEPT: &str = "text/plain;version=0.0.4";

/// The largest response body read: a Spring Boot endpoint with percentile
/// histograms for many URIs runs to a few megabytes.
const MAX_BODY_BYTES: u64 = 64 * 1024 * 1024;

/// GETs the exposition with [`ACCEPT`]. Every failure (refused connection,
/// timeout, TLS, non-2xx status, unreadable body) is an `Err` that names the
/// URL; never panics.
pub fn fetch(client: &HttpClient) -> Result<String, String> {
    let mut response = client
        .get()
        .header("Accept", ACCEPT)
        .call()
        .map_err(|error| client.describe("GET", error))?;
    client.check("GET", &mut response)?;
    response
        .body_mut()
        .with_config()
        .limit(MAX_BODY_BYTES)
        .read_to_string()
        .map_err(|error| client.describe("GET", error))
}
