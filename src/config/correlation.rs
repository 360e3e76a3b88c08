//! `[correlation]`: how requests are attributed to stops.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::{Spanned, Value};

use super::spans::{key, ConfigError, Ctx};
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [correlation] table")]
pub(super) struct RawCorrelation {
    slo: Option<Spanned<Value>>,
    affected_share: Option<Spanned<Value>>,
    window: Option<Spanned<Value>>,
    min_minutes: Option<Spanned<Value>>,
    finalize_after: Option<Spanned<Value>>,
}

impl Ctx<'_> {
    pub(super) fn correlation(
        &self,
        raw: &RawCorrelation,
    ) -> Result<CorrelationConfig, ConfigError> {
        let at = |k: &str| vec![key("correlation"), key(k)];
        let mut config = CorrelationConfig::default();
        if let Some(v) = &raw.slo {
            config.slo = Some(self.duration(v, &at("slo"))?);
        }
        if let Some(v) = &raw.affected_share {
            config.affected_share =
                self.share(v, &at("affected_share"), "a number between 0 and 1")?;
        }
        if let Some(v) = &raw.window {
            config.window = self.duration(v, &at("window"))?;
        }
        if let Some(v) = &raw.min_minutes {
            let Value::Integer(n) = v.get_ref() else {
                return Err(self.type_err(v, &at("min_minutes"), "an integer"));
            };
            if *n < 2 {
                return Err(self.err(
                    v.span(),
                    &at("min_minutes"),
                    "a correlation needs at least 2 minutes",
                ));
            }
            config.min_minutes = *n as usize;
        }
        if let Some(v) = &raw.finalize_after {
            config.finalize_after = self.duration(v, &at("finalize_after"))?;
        }
        Ok(config)
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
