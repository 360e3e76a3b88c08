//! Which `GarbageCollectorMXBean` accounts for a pause. Micrometer labels its
//! `jvm.gc.pause` series with this name (`gc="G1 Young Generation"`), so the
//! agent uses it for the `gc` label, and tests compare our counts with the
//! JVM's own bean counts through it.

use pausewatch_parsers::{Collector, Pause};

/// The JDK feature release from a `Version:` line such as `17.0.15+6-Debian-1deb12u1 (release)`.
pub fn jdk_major(version: &str) -> Option<u32> {
    let digits: String = version.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// The bean that counts this pause, or `None` where no bean does (G1 Remark
/// and Cleanup before JDK 20, which added the `G1 Concurrent GC` bean).
pub fn bean_name(pause: &Pause, jdk_major: Option<u32>) -> Option<&'static str> {
    let full = pause.full;
    Some(match pause.collector {
        Collector::G1 => match pause.name.as_str() {
            "Pause Full" => "G1 Old Generation",
            "Pause Remark" | "Pause Cleanup" => {
                if jdk_major.is_some_and(|major| major >= 20) {
                    "G1 Concurrent GC"
                } else {
                    return None;
                }
            }
            _ => "G1 Young Generation",
        },
        Collector::Parallel if full => "PS MarkSweep",
        Collector::Parallel => "PS Scavenge",
        Collector::Serial if full => "MarkSweepCompact",
        Collector::Serial => "Copy",
        Collector::Cms if pause.name == "Pause Young" => "ParNew",
        Collector::Cms => "ConcurrentMarkSweep",
        Collector::Shenandoah => "Shenandoah Pauses",
        Collector::Z => "ZGC Pauses",
        Collector::ZGenerational if pause.qualifiers.iter().any(|q| q == "Minor") => {
            "ZGC Minor Pauses"
        }
        Collector::ZGenerational => "ZGC Major Pauses",
        Collector::Unknown => return None,
    })
}
