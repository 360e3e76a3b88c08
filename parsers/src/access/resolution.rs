//! The resolution of each access log format's durations: nginx writes
//! `$request_time` in whole milliseconds, so a request of 0.58 ms reads
//! `0.000`, and a percentile below that step says only "less than 1 ms".

use super::log_format::CompiledLogFormat;
use super::{AccessFormat, DurationUnit, TOMCAT_BEGIN_MSEC_PATTERN};

impl DurationUnit {
    /// One of this unit, in seconds.
    pub fn seconds(self) -> f64 {
        10f64.powi(self.nanos_exponent() as i32 - 9)
    }
}

impl AccessFormat {
    /// The smallest duration step the format's writer prints, where the
    /// format fixes it; `None` for JSON and regex formats, whose values may
    /// carry any number of decimals.
    pub fn duration_resolution(&self) -> Option<DurationUnit> {
        match self {
            AccessFormat::Nginx | AccessFormat::Envoy | AccessFormat::EnvoyJson => {
                Some(DurationUnit::Milliseconds)
            }
            AccessFormat::Apache => Some(DurationUnit::Microseconds),
            AccessFormat::Tomcat { duration_unit } => Some(*duration_unit),
            // The Tomcat begin-msec presets: `%D`, whole units.
            AccessFormat::Regex {
                pattern,
                duration_unit,
                ..
            } if pattern == TOMCAT_BEGIN_MSEC_PATTERN => Some(*duration_unit),
            AccessFormat::Json { .. } | AccessFormat::Regex { .. } => None,
            AccessFormat::LogFormat { server, format } => CompiledLogFormat::new(*server, format)
                .ok()
                .map(|compiled| compiled.resolution()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Server;

    #[test]
    fn each_format_knows_its_step() {
        let preset = |name| AccessFormat::preset(name).unwrap().duration_resolution();
        assert_eq!(preset("nginx"), Some(DurationUnit::Milliseconds));
        assert_eq!(preset("apache"), Some(DurationUnit::Microseconds));
        assert_eq!(preset("tomcat9"), Some(DurationUnit::Milliseconds));
        assert_eq!(
            preset("tomcat-begin-msec"),
            Some(DurationUnit::Microseconds)
        );
        let custom = |server, format: &str| {
            AccessFormat::LogFormat {
                server,
                format: format.to_string(),
            }
            .duration_resolution()
        };
        let nginx = custom(Server::Nginx, "$msec $upstream_response_time");
        assert_eq!(nginx, Some(DurationUnit::Milliseconds));
        let apache = custom(Server::Apache, "%t %{ms}T");
        assert_eq!(apache, Some(DurationUnit::Milliseconds));
        assert_eq!(DurationUnit::Milliseconds.seconds(), 0.001);
    }
}
