//! Which `GarbageCollectorMXBean` accounts for a pause. Micrometer labels its
//! `jvm.gc.pause` series with this name (`gc="G1 Young Generation"`), so the
//! agent uses it for the `gc` label, and tests compare our counts with the
//! JVM's own bean counts through it.

use pausewatch_parsers::{Collector, Pause};

/// The JDK feature release from a `Version:` line such as `17.0.15+6-Debian-1deb12u1 (release)`.
/// Asked for every pause the agent counts: read in place, not collected first.
pub fn jdk_major(version: &str) -> Option<u32> {
    let mut digits = version.bytes().take_while(u8::is_ascii_digit);
    digits.clone().next()?;
    digits.try_fold(0u32, |major, digit| {
        major.checked_mul(10)?.checked_add(u32::from(digit - b'0'))
    })
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
        // No MXBean: the name Go pauses are labelled with beside the JVMs'.
        Collector::Go => "Go GC",
        Collector::Unknown => return None,
    })
}

/// Micrometer's `jvm.gc.pause` labels `(gc, action, cause)` for a pause, as the
/// JVM's GC notification would carry them. Borrowed from the pause: the
/// agent asks for every pause, and copies them only for a new series.
pub fn micrometer_labels(pause: &Pause, jdk_major: Option<u32>) -> (&'static str, &str, &str) {
    let cause = pause.cause.as_deref().unwrap_or("unknown");
    let (gc, action) = match bean_name(pause, jdk_major) {
        Some(bean @ ("G1 Young Generation" | "PS Scavenge" | "Copy" | "ParNew")) => {
            (bean, "end of minor GC")
        }
        Some(
            bean @ ("G1 Old Generation"
            | "PS MarkSweep"
            | "MarkSweepCompact"
            | "ConcurrentMarkSweep"),
        ) => (bean, "end of major GC"),
        // Shenandoah names the action after the pause phase.
        Some(bean @ "Shenandoah Pauses") => (
            bean,
            pause.name.strip_prefix("Pause ").unwrap_or(&pause.name),
        ),
        Some(bean @ ("ZGC Pauses" | "ZGC Minor Pauses" | "ZGC Major Pauses")) => {
            (bean, "end of GC pause")
        }
        // G1 Remark and Cleanup: the JDK 20+ bean's names, also before JDK 20.
        Some("G1 Concurrent GC") | None if pause.collector == Collector::G1 => {
            return ("G1 Concurrent GC", "end of concurrent GC pause", "No GC")
        }
        Some(bean) => (bean, "end of GC pause"),
        None => ("unknown", "end of GC pause"),
    };
    (gc, action, cause)
}
