//! `pausewatch rules [--config FILE]`: the Prometheus rule file for the
//! thresholds of a configuration (the defaults without one).

use std::path::Path;

use crate::alerts::rules::prometheus_rules;
use crate::config::{self, Config};

/// The rule file's text, or the one-line error to print (a bad configuration,
/// a threshold Prometheus cannot express).
pub fn rules(config_path: Option<&Path>) -> Result<String, String> {
    let config = match config_path {
        Some(path) => config::load(path).map_err(|e| e.to_string())?,
        None => Config::default(),
    };
    let from = config_path.map(|p| p.display().to_string());
    prometheus_rules(&config.alerts, from.as_deref())
}
