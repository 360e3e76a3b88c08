//! Feeds arbitrary bytes to the PerfData parser: it must return an error or
//! counters, never panic, and never find more entries than the bytes hold.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pausewatch_parsers::hsperf::parse;

fuzz_target!(|data: &[u8]| {
    if let Ok(perf) = parse(data) {
        assert!(perf.counters.len() <= data.len() / 20);
    }
});
