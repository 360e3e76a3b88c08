//! The two transports of OTLP: gRPC through tonic, http/protobuf through the agent's one HTTP client.

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

use crate::config::{redact_url, OtlpConfig, Protocol};

/// The sender: a gRPC channel or an HTTP client, with the configured headers.
pub(super) enum Transport {
    Grpc {
        channel: tonic::transport::Channel,
        metadata: tonic::metadata::MetadataMap,
        timeout: Duration,
    },
    Http {
        client: reqwest::Client,
        metrics_url: String,
        logs_url: Option<String>,
        headers: reqwest::header::HeaderMap,
    },
}

impl Transport {
    /// Needs a tokio runtime entered (the gRPC channel connects lazily on it).
    pub(super) fn new(config: &OtlpConfig) -> anyhow::Result<Transport> {
        match config.protocol {
            Protocol::Grpc => {
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
                Ok(Transport::Grpc {
                    channel: endpoint.connect_lazy(),
                    metadata,
                    timeout: config.timeout,
                })
            }
            Protocol::HttpProtobuf => {
                let mut builder = reqwest::Client::builder()
                    .timeout(config.timeout)
                    .connect_timeout(config.timeout)
                    .user_agent(concat!("pausewatch/", env!("CARGO_PKG_VERSION")));
                if let Some(ca) = &config.tls.ca {
                    builder = builder.tls_certs_only(reqwest::Certificate::from_pem_bundle(ca)?);
                }
                if let Some((cert, key)) = &config.tls.client {
                    let pem = [cert.as_slice(), b"\n", key].concat();
                    builder = builder.identity(reqwest::Identity::from_pem(&pem)?);
                }
                let mut headers = reqwest::header::HeaderMap::new();
                for (name, value) in &config.headers {
                    headers.insert(
                        reqwest::header::HeaderName::from_bytes(name.as_bytes())?,
                        value.parse()?,
                    );
                }
                Ok(Transport::Http {
                    client: builder.build()?,
                    metrics_url: config.endpoint.clone(),
                    logs_url: config.logs_endpoint.clone(),
                    headers,
                })
            }
        }
    }

    /// Sends metrics; `Ok` holds the data points the receiver rejected.
    pub(super) async fn send_metrics(
        &self,
        request: ExportMetricsServiceRequest,
    ) -> Result<i64, String> {
        let response = match self {
            Transport::Grpc { channel, .. } => MetricsServiceClient::new(channel.clone())
                .export(self.grpc_request(request))
                .await
                .map_err(grpc_error)?
                .into_inner(),
            Transport::Http {
                metrics_url: url, ..
            } => ExportMetricsServiceResponse::decode(&self.post(url, request).await?[..])
                .unwrap_or_default(),
        };
        Ok(response
            .partial_success
            .map_or(0, |p| p.rejected_data_points))
    }

    /// Sends pause records; `Ok` holds the records the receiver rejected.
    pub(super) async fn send_logs(&self, request: ExportLogsServiceRequest) -> Result<i64, String> {
        let response = match self {
            Transport::Grpc { channel, .. } => LogsServiceClient::new(channel.clone())
                .export(self.grpc_request(request))
                .await
                .map_err(grpc_error)?
                .into_inner(),
            Transport::Http { logs_url, .. } => {
                let url = logs_url.as_deref().ok_or("no logs endpoint")?;
                ExportLogsServiceResponse::decode(&self.post(url, request).await?[..])
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

    /// POSTs a protobuf message; the response body of a 2xx answer (empty
    /// when the receiver has nothing to say, which decodes as "all taken").
    async fn post(&self, url: &str, message: impl Message) -> Result<Vec<u8>, String> {
        let Transport::Http {
            client, headers, ..
        } = self
        else {
            unreachable!("only the HTTP transport posts")
        };
        let response = client
            .post(url)
            .headers(headers.clone())
            .header("Content-Type", "application/x-protobuf")
            .body(message.encode_to_vec())
            .send()
            .await
            .map_err(|e| format!("POST {}: {}", redact_url(url), e.without_url()))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| format!("POST {}: {}", redact_url(url), e.without_url()))?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
            return Err(format!("POST {}: HTTP {status}: {text}", redact_url(url)));
        }
        Ok(body.to_vec())
    }
}

fn grpc_error(status: tonic::Status) -> String {
    format!("gRPC {:?}: {}", status.code(), status.message())
}
