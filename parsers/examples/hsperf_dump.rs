//! Prints every counter of a HotSpot PerfData file, one `name = value` a
//! line: what the runtime-stats source can read of a JVM.
//!
//! `cargo run -p pausewatch-parsers --example hsperf_dump -- /tmp/hsperfdata_USER/PID`

fn main() {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: hsperf_dump FILE");
        std::process::exit(2);
    };
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) => {
            eprintln!("{}: {error}", path.to_string_lossy());
            std::process::exit(1);
        }
    };
    match pausewatch_parsers::hsperf::parse(&bytes) {
        Ok(data) => {
            for counter in &data.counters {
                println!(
                    "{} = {:?} ({:?})",
                    counter.name, counter.value, counter.units
                );
            }
        }
        Err(error) => {
            eprintln!("{}: {error}", path.to_string_lossy());
            std::process::exit(1);
        }
    }
}
