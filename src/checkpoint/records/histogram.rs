//! Records of the latency histogram source's accumulator.

use chrono::{DateTime, Utc};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::sources::latency_histogram::{
    parse_number, Buckets, Cumulative, MinuteAccumulator, Scrape,
};

/// Version 5 of [`Cumulative`]: bounds are written as strings (`"+Inf"`,
/// `"0.1"`) since JSON has no infinity.
#[derive(Debug, Clone)]
pub struct CumulativeV5(Buckets);

impl From<Cumulative> for CumulativeV5 {
    fn from(Cumulative(buckets): Cumulative) -> Self {
        CumulativeV5(buckets)
    }
}

impl From<CumulativeV5> for Cumulative {
    fn from(CumulativeV5(buckets): CumulativeV5) -> Self {
        Cumulative(buckets)
    }
}

impl Serialize for CumulativeV5 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let pairs: Vec<(String, f64)> = self
            .0
            .iter()
            .map(|(le, count)| {
                let le = if *le == f64::INFINITY {
                    "+Inf".to_string()
                } else {
                    le.to_string()
                };
                (le, *count)
            })
            .collect();
        pairs.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for CumulativeV5 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let pairs: Vec<(String, f64)> = Vec::deserialize(deserializer)?;
        pairs
            .into_iter()
            .map(|(le, count)| match parse_number(&le) {
                Some(bound) if !bound.is_nan() => Ok((bound, count)),
                _ => Err(D::Error::custom(format!("invalid bucket bound `{le}`"))),
            })
            .collect::<Result<Buckets, _>>()
            .map(CumulativeV5)
    }
}

/// Version 5 of [`Scrape`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScrapeV5 {
    at: DateTime<Utc>,
    raw: CumulativeV5,
    adjusted: CumulativeV5,
}

both_ways!(Scrape, ScrapeV5, |scrape| {
    at: scrape.at,
    raw: scrape.raw.into(),
    adjusted: scrape.adjusted.into(),
});

/// Version 5 of [`MinuteAccumulator`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AccumulatorV5 {
    last: Option<ScrapeV5>,
    baseline: Option<CumulativeV5>,
}

both_ways!(MinuteAccumulator, AccumulatorV5, |accumulator| {
    last: accumulator.last.map(Into::into),
    baseline: accumulator.baseline.map(Into::into),
});

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    const INF: f64 = f64::INFINITY;

    fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2024, 5, 1, h, m, s).unwrap()
    }

    #[test]
    fn checkpoint_round_trip_keeps_infinity() {
        let mut accumulator = MinuteAccumulator::new();
        accumulator.observe(at(12, 0, 30), vec![(0.1, 1.0), (INF, 2.0)]);
        accumulator.observe(at(12, 1, 30), vec![(0.1, 3.0), (INF, 5.0)]);
        let json = serde_json::to_string(&AccumulatorV5::from(accumulator.clone())).unwrap();
        assert!(json.contains("\"+Inf\""), "{json}");
        let record: AccumulatorV5 = serde_json::from_str(&json).unwrap();
        let mut restored = MinuteAccumulator::from(record);
        assert_eq!(restored, accumulator);
        let completed = restored.observe(at(12, 2, 30), vec![(0.1, 4.0), (INF, 9.0)]);
        assert_eq!((completed[0].0, completed[0].1.count), (at(12, 1, 0), 3));
        assert!(
            serde_json::from_str::<AccumulatorV5>(r#"{"last":null,"baseline":[["abc",1.0]]}"#)
                .is_err()
        );
    }
}
