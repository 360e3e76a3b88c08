//! The runtime stats the agent reads from an hsperfdata file, for files real
//! JVMs of every collector wrote (tests/fixtures/hsperf), against the MXBeans
//! the same JVM reported at the same moment: pause counts per bean, memory
//! per pool (Micrometer's `id`), threads and classes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use pausewatch::model::mxbean::jdk_major;
use pausewatch::model::runtime::gc_label_of_counter;
use pausewatch::sources::runtime_stats::stats_of;

use crate::common;

/// Allocation the sampled `used` counters may lag the MXBeans by.
const USED_LAG_BYTES: u64 = 1 << 20;

fn fixtures() -> Vec<PathBuf> {
    let root = common::root().join("tests/fixtures/hsperf");
    let mut dirs: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 10);
    dirs
}

#[test]
fn runtime_stats_match_the_mxbeans_of_every_collector() {
    for dir in fixtures() {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let beans: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("mxbeans.json")).unwrap()).unwrap();
        let stats = stats_of(&std::fs::read(dir.join("hsperfdata")).unwrap()).unwrap();
        let major = jdk_major(beans["java_version"].as_str().unwrap());

        // Pauses: every pause bean has its counter, with its count; Shenandoah none.
        let mut by_bean: BTreeMap<String, (u64, f64)> = BTreeMap::new();
        for collector in &stats.collectors {
            if let Some(bean) = gc_label_of_counter(&collector.name, major) {
                let entry = by_bean.entry(bean).or_default();
                entry.0 += collector.invocations;
                entry.1 += collector.seconds;
            }
        }
        for bean in beans["collectors"].as_array().unwrap() {
            let bean_name = bean["name"].as_str().unwrap();
            let (count, time_ms) = (
                bean["count"].as_u64().unwrap(),
                bean["time_ms"].as_u64().unwrap(),
            );
            if bean_name.ends_with("Cycles") || bean_name.starts_with("Shenandoah") {
                assert!(!by_bean.contains_key(bean_name), "{name}: {bean_name}");
                continue;
            }
            let (counted, seconds) = by_bean.get(bean_name).copied().unwrap_or_default();
            println!("{name:<18} {bean_name:<22} jvm {count:>4} {time_ms:>5} ms | hsperf {counted:>4} {:>9.3} ms", seconds * 1e3);
            assert_eq!(counted, count, "{name}: {bean_name}");
            assert!(
                (seconds * 1e3 - time_ms as f64).abs() <= count as f64 + 1.0,
                "{name}: {bean_name}"
            );
        }
        // G1 on JDK 17 counts Remark and Cleanup, which no bean does before
        // JDK 20: they go under Micrometer's `G1 Concurrent GC`, as the log's.
        if name == "jdk17-g1" {
            let remark = by_bean.get("G1 Concurrent GC");
            assert!(remark.is_some_and(|(count, _)| *count > 0), "{name}");
        }

        // Memory: every pool the agent reports is an MXBean pool, with its figures.
        let pools = beans["memory_pools"].as_array().unwrap();
        // Generational ZGC's generation counters lag its MXBeans: not reported.
        assert_eq!(stats.memory.is_empty(), name == "jdk25-zgc", "{name}");
        for pool in &stats.memory {
            let bean = pools
                .iter()
                .find(|p| p["name"] == pool.id.as_str())
                .unwrap_or_else(|| panic!("{name}: no MXBean pool {}", pool.id));
            assert_eq!(bean["type"], "Heap memory", "{name}: {}", pool.id);
            println!(
                "{name:<18} {:<22} used {:>9} / {:>9} committed {:>9} / {:>9}",
                pool.id,
                format!("{:?}", pool.used),
                bean["used"],
                pool.committed,
                bean["committed"]
            );
            let committed = bean["committed"].as_u64();
            assert_eq!(
                Some(pool.committed),
                committed,
                "{name}: {} committed",
                pool.id
            );
            // Where the agent reports used (the spaces whose counter follows
            // the heap), it may lag the MXBean by the snapshot's own allocation.
            if let Some(ours) = pool.used {
                let lag = bean["used"].as_u64().unwrap().checked_sub(ours);
                assert!(
                    lag.is_some_and(|lag| lag <= USED_LAG_BYTES),
                    "{name}: {} used",
                    pool.id
                );
            }
            if let (Some(max), Some(bean_max)) = (pool.max, bean["max"].as_i64().filter(|m| *m > 0))
            {
                assert_eq!(max as i64, bean_max, "{name}: {} max", pool.id);
            }
        }

        let threads = &beans["threads"];
        assert_eq!(Some(stats.threads_live), threads["live"].as_u64(), "{name}");
        assert_eq!(
            Some(stats.threads_daemon),
            threads["daemon"].as_u64(),
            "{name}"
        );
        assert_eq!(Some(stats.threads_peak), threads["peak"].as_u64(), "{name}");
        assert_eq!(
            Some(stats.classes_loaded),
            beans["classes"]["loaded"].as_u64(),
            "{name}"
        );
        assert_eq!(
            Some(stats.classes_unloaded),
            beans["classes"]["unloaded"].as_u64(),
            "{name}"
        );
    }
}
