//! The PerfData parser on files real JVMs wrote (tests/fixtures/hsperf, made
//! by tests/fixtures/hsperf.sh), checked against the MXBeans the same JVM
//! reported at the same moment; the same files in big-endian order; and
//! arbitrary or damaged bytes, which must give an error, never a panic.

use std::path::{Path, PathBuf};

use pausewatch_parsers::hsperf::{parse, ByteOrder, PerfData, PerfDataError, Value, PROLOGUE_LEN};
use proptest::prelude::*;

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/hsperf");
    let mut dirs: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("hsperfdata").exists())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 10,
        "expected the committed hsperfdata fixtures"
    );
    dirs
}

fn mxbeans(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("mxbeans.json")).unwrap()).unwrap()
}

#[test]
fn threads_classes_and_the_command_match_the_jvms_own_beans() {
    for dir in fixtures() {
        let data = parse(&std::fs::read(dir.join("hsperfdata")).unwrap()).unwrap();
        let beans = mxbeans(&dir);
        let name = dir.display();
        assert_eq!(data.prologue.byte_order, ByteOrder::Little, "{name}");
        let threads = &beans["threads"];
        assert_eq!(
            data.long("java.threads.live"),
            threads["live"].as_i64(),
            "{name}"
        );
        assert_eq!(
            data.long("java.threads.daemon"),
            threads["daemon"].as_i64(),
            "{name}"
        );
        assert_eq!(
            data.long("java.threads.livePeak"),
            threads["peak"].as_i64(),
            "{name}"
        );
        // ClassLoadingMXBean counts classes from the CDS archive too.
        let loaded = data.long("java.cls.loadedClasses").unwrap()
            + data.long("java.cls.sharedLoadedClasses").unwrap();
        assert_eq!(Some(loaded), beans["classes"]["loaded"].as_i64(), "{name}");
        assert_eq!(
            data.string("java.property.java.vm.version"),
            beans["vm_version"].as_str(),
            "{name}"
        );
        let command = data.string("sun.rt.javaCommand").unwrap();
        assert!(command.starts_with("GcWorkload "), "{name}: {command}");
        let start = data.long("sun.rt.createVmBeginTime").unwrap();
        let bean_start = beans["start_time_ms"].as_i64().unwrap();
        assert!(
            (start - bean_start).abs() < 1000,
            "{name}: {start} vs {bean_start}"
        );
    }
}

/// The file re-encoded in big-endian order, field by field from HotSpot's
/// struct layout: what a big-endian JVM (s390x, SPARC) writes.
fn to_big_endian(bytes: &[u8], data: &PerfData) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out[4] = 0;
    let swap32 = |out: &mut Vec<u8>, at: usize| out[at..at + 4].reverse();
    for at in [8, 12, 24, 28] {
        swap32(&mut out, at);
    }
    out[16..24].reverse();
    let mut start = data.prologue.entry_offset;
    for counter in &data.counters {
        let length = u32::from_le_bytes(bytes[start..start + 4].try_into().unwrap()) as usize;
        for field in [0, 4, 8, 16] {
            swap32(&mut out, start + field);
        }
        if let Value::Long(_) = counter.value {
            out[counter.data_offset..counter.data_offset + 8].reverse();
        }
        start += length;
    }
    out
}

#[test]
fn a_big_endian_file_reads_the_same() {
    for dir in fixtures() {
        let bytes = std::fs::read(dir.join("hsperfdata")).unwrap();
        let little = parse(&bytes).unwrap();
        let big = parse(&to_big_endian(&bytes, &little)).unwrap();
        assert_eq!(big.prologue.byte_order, ByteOrder::Big);
        assert_eq!(big.counters, little.counters, "{}", dir.display());
    }
}

#[test]
fn the_magic_version_and_accessible_flag_are_checked() {
    let bytes = std::fs::read(fixtures()[0].join("hsperfdata")).unwrap();
    let mut wrong = bytes.clone();
    wrong[0] = 0;
    assert!(matches!(parse(&wrong), Err(PerfDataError::BadMagic(_))));
    let mut wrong = bytes.clone();
    wrong[5] = 1;
    assert_eq!(
        parse(&wrong),
        Err(PerfDataError::UnsupportedVersion { major: 1, minor: 0 })
    );
    let mut wrong = bytes.clone();
    wrong[7] = 0;
    assert_eq!(parse(&wrong), Err(PerfDataError::NotAccessible));
    assert_eq!(parse(&bytes[..10]), Err(PerfDataError::TooShort(10)));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let _ = parse(&bytes);
    }

    #[test]
    fn arbitrary_bytes_after_a_valid_prologue_never_panic(
        tail in proptest::collection::vec(any::<u8>(), 0..4096),
        little in any::<bool>(),
    ) {
        let mut bytes = vec![0xca, 0xfe, 0xc0, 0xc0, u8::from(little), 2, 0, 1];
        bytes.resize(PROLOGUE_LEN, 0);
        bytes[24] = if little { 32 } else { 0 };
        bytes[27] = if little { 0 } else { 32 };
        bytes[28] = if little { 50 } else { 0 };
        bytes[31] = if little { 0 } else { 50 };
        bytes.extend(tail);
        let _ = parse(&bytes);
    }

    /// A real file with some bytes changed and cut anywhere: every length,
    /// offset and name may now point anywhere.
    #[test]
    fn a_damaged_real_file_never_panics(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..16),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = std::fs::read(fixtures()[0].join("hsperfdata")).unwrap();
        for (at, byte) in edits {
            let at = at.index(bytes.len());
            bytes[at] = byte;
        }
        bytes.truncate(cut.index(bytes.len() + 1));
        if let Ok(data) = parse(&bytes) {
            prop_assert!(data.counters.len() <= bytes.len() / 20);
        }
    }
}
