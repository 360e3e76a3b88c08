//! The parser crate's integration tests, one binary: the crate is linked
//! once instead of once a file. Each file is a module; `cargo test -p
//! pausewatch-parsers --test it FILE::` runs one file's tests.

#[path = "../../../tests/common/skip.rs"]
mod skip;

mod access_presets;
mod gctrace;
mod hsperf;
mod legacy_corpus;
mod line_shapes;
mod log_formats;
mod speculation;
mod streaming;
