//! `[correlation]`: how requests are attributed to stops.

use std::time::Duration;

use documented::DocumentedFields;
use serde::Deserializer;
use serde::{Deserialize, Serialize};
use toml::Value;

use super::values::{self, Dur, Share};
use super::{serialize_duration, serialize_optional_duration};

/// How requests are attributed to stops and correlated with pauses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CorrelationConfig {
    /// Requests slower than this are slow; `None`: each minute's p99.9.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_optional_duration"
    )]
    pub slo: Option<Duration>,
    /// Share of a request's time stops must cover to make it stop-affected.
    pub affected_share: f64,
    /// Sliding window of the correlation coefficients.
    #[serde(serialize_with = "serialize_duration")]
    pub window: Duration,
    /// Minutes with requests needed before a coefficient is given.
    pub min_minutes: usize,
    /// How long after a minute ends its requests are attributed.
    #[serde(serialize_with = "serialize_duration")]
    pub finalize_after: Duration,
}

impl Default for CorrelationConfig {
    fn default() -> Self {
        CorrelationConfig {
            slo: None,
            affected_share: 0.25,
            window: Duration::from_secs(3600),
            min_minutes: 10,
            finalize_after: Duration::from_secs(15),
        }
    }
}

#[derive(Deserialize, DocumentedFields)]
#[serde(deny_unknown_fields, expecting = "a [correlation] table")]
pub(super) struct RawCorrelation {
    /// Requests slower than this are slow.
    ///
    /// Default: none (each minute's p99.9)
    slo: Option<Dur>,
    /// Share of a request's time stops must cover to make it stop-affected.
    ///
    /// Default: `0.25`
    affected_share: Option<Share>,
    /// Sliding window of the pause/latency correlation.
    ///
    /// Default: `"60m"`
    window: Option<Dur>,
    /// Minutes with requests a correlation needs.
    ///
    /// Default: `10`
    min_minutes: Option<MinMinutes>,
    /// How long after a minute ends its requests are attributed (late lines).
    ///
    /// Default: `"15s"`
    finalize_after: Option<Dur>,
}

/// Fewer than two minutes have no correlation.
struct MinMinutes(usize);

impl<'de> Deserialize<'de> for MinMinutes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        values::read(d, |v| match v {
            Value::Integer(n) if *n < 2 => {
                Err("a correlation needs at least 2 minutes".to_string())
            }
            Value::Integer(n) => Ok(MinMinutes(*n as usize)),
            other => Err(values::expected("an integer", other)),
        })
    }
}

impl From<RawCorrelation> for CorrelationConfig {
    fn from(raw: RawCorrelation) -> Self {
        let d = CorrelationConfig::default();
        CorrelationConfig {
            slo: raw.slo.map(|v| v.0),
            affected_share: raw.affected_share.map_or(d.affected_share, |v| v.0),
            window: raw.window.map_or(d.window, |v| v.0),
            min_minutes: raw.min_minutes.map_or(d.min_minutes, |v| v.0),
            finalize_after: raw.finalize_after.map_or(d.finalize_after, |v| v.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::parse_err;

    #[test]
    fn affected_share_is_a_share() {
        parse_err(
            &["[correlation]", "affected_share = 1.5"],
            2,
            "correlation.affected_share",
        );
    }
}
