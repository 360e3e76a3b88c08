//! The two transports of OTLP: gRPC through tonic, on a tokio runtime of its
//! own; http/protobuf through the agent's one HTTP client ([`HttpClient`]),
//! blocking on the exporter's thread like every other outgoing request.

use std::time::Duration;

use opentelemetry_proto::tonic::collector::logs::v1::logs_service_client::LogsServiceClient;
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_client::MetricsServiceClient;
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use prost::Message;

use crate::config::{tls_from_pem, HttpClientConfig, OtlpConfig, Protocol};
use crate::http_client::HttpClient;

/// The largest response body read: a partial-success message is small.
const MAX_RESPONSE_BYTES: u64 = 1024 * 1024;

/// The sender: a gRPC channel or HTTP clients, with the configured headers.
pub(super) enum Transport {
    Grpc {
        runtime: tokio::runtime::Runtime,
        channel: tonic::transport::Channel,
        metadata: tonic::metadata::MetadataMap,
        timeout: Duration,
    },
    Http {
        metrics: HttpClient,
        logs: Option<HttpClient>,
        headers: Vec<(String, String)>,
    },
}

impl Transport {
    pub(super) fn new(config: &OtlpConfig) -> anyhow::Result<Transport> {
        match config.protocol {
            Protocol::Grpc => {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                let mut endpoint =
                    tonic::transport::Endpoint::from_shared(config.endpoint.clone())?
                        .connect_timeout(config.timeout)
                        .timeout(config.timeout);
                if config.endpoint.starts_with("https:") {
                    let mut tls = tonic::transport::ClientTlsConfig::new();
                    tls = match &config.tls.ca {
                        Some(ca) => tls.ca_certificate(tonic::transport::Certificate::from_pem(ca)),
                        None => tls.with_native_roots(),
                    };
                    if let Some((cert, key)) = &config.tls.client {
                        tls = tls.identity(tonic::transport::Identity::from_pem(cert, key));
                    }
                    endpoint = endpoint.tls_config(tls)?;
                }
                let mut metadata = tonic::metadata::MetadataMap::new();
                for (name, value) in &config.headers {
                    let name = tonic::metadata::MetadataKey::from_bytes(name.as_bytes())?;
                    metadata.insert(name, value.parse()?);
                }
                // The channel connects lazily, on the runtime entered here.
                let channel = {
                    let _context = runtime.enter();
                    endpoint.connect_lazy()
                };
                Ok(Transport::Grpc {
                    runtime,
                    channel,
                    metadata,
                    timeout: config.timeout,
                })
            }
            Protocol::HttpProtobuf => {
                let tls = &config.tls;
                let settings = HttpClientConfig {
                    tls: tls_from_pem(
                        tls.ca.as_deref(),
                        (tls.client.as_ref()).map(|(cert, key)| (&cert[..], &key[..])),
                    )
                    .map_err(|e| anyhow::anyhow!("[otlp] tls: {e}"))?,
                    authorization: None,
                };
                let client = |url: &str| {
                    HttpClient::through_env_proxy(url, &settings, config.timeout)
                        .map_err(anyhow::Error::msg)
                };
                Ok(Transport::Http {
                    metrics: client(&config.endpoint)?,
                    logs: config.logs_endpoint.as_deref().map(client).transpose()?,
                    headers: config.headers.clone().into_iter().collect(),
                })
            }
        }
    }

    /// Sends metrics; `Ok` holds the data points the receiver rejected.
    pub(super) fn send_metrics(&self, request: ExportMetricsServiceRequest) -> Result<i64, String> {
        let response = match self {
            Transport::Grpc {
                runtime, channel, ..
            } => runtime
                .block_on(
                    MetricsServiceClient::new(channel.clone()).export(self.grpc_request(request)),
                )
                .map_err(grpc_error)?
                .into_inner(),
            Transport::Http {
                metrics, headers, ..
            } => ExportMetricsServiceResponse::decode(&post(metrics, headers, request)?[..])
                .unwrap_or_default(),
        };
        Ok(response
            .partial_success
            .map_or(0, |p| p.rejected_data_points))
    }

    /// Sends pause records; `Ok` holds the records the receiver rejected.
    pub(super) fn send_logs(&self, request: ExportLogsServiceRequest) -> Result<i64, String> {
        let response = match self {
            Transport::Grpc {
                runtime, channel, ..
            } => runtime
                .block_on(
                    LogsServiceClient::new(channel.clone()).export(self.grpc_request(request)),
                )
                .map_err(grpc_error)?
                .into_inner(),
            Transport::Http { logs, headers, .. } => {
                let logs = logs.as_ref().ok_or("no logs endpoint")?;
                ExportLogsServiceResponse::decode(&post(logs, headers, request)?[..])
                    .unwrap_or_default()
            }
        };
        Ok(response
            .partial_success
            .map_or(0, |p| p.rejected_log_records))
    }

    /// A gRPC request with the configured metadata and timeout.
    fn grpc_request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        if let Transport::Grpc {
            metadata, timeout, ..
        } = self
        {
            *request.metadata_mut() = metadata.clone();
            request.set_timeout(*timeout);
        }
        request
    }
}

/// POSTs a protobuf message; the response body of a 2xx answer (empty
/// when the receiver has nothing to say, which decodes as "all taken").
fn post(
    client: &HttpClient,
    headers: &[(String, String)],
    message: impl Message,
) -> Result<Vec<u8>, String> {
    let mut request = client
        .post()
        .header("Content-Type", "application/x-protobuf");
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let mut response = request
        .send(&message.encode_to_vec()[..])
        .map_err(|e| client.describe("POST", e))?;
    client.check("POST", &mut response)?;
    response
        .body_mut()
        .with_config()
        .limit(MAX_RESPONSE_BYTES)
        .read_to_vec()
        .map_err(|e| client.describe("POST", e))
}

fn grpc_error(status: tonic::Status) -> String {
    format!("gRPC {:?}: {}", status.code(), status.message())
}
