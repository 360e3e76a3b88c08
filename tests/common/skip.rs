//! The one way a test skips. A test whose oracle (a JVM, Prometheus, root,
//! the public corpus...) is missing here calls [`skip`] and returns; with
//! `PAUSEWATCH_REQUIRE_ALL=1` (set by `.ci/run`) the skip is a failure
//! instead, so a machine that lacks a tool cannot pass CI by not testing.
//! Shared by the parser crate's tests through `#[path]`.
#![allow(dead_code)]

use std::fmt::Display;
use std::io::Write;

/// The variable that turns every skip into a failure.
pub const REQUIRE_ALL: &str = "PAUSEWATCH_REQUIRE_ALL";

/// Skips the calling test for `reason`: a banner written straight to the
/// process's stderr (libtest captures `eprintln!` of passing tests, which is
/// how 67 skips went unseen), or a panic when [`REQUIRE_ALL`] is `1`.
pub fn skip(reason: impl Display) {
    let current = std::thread::current();
    let test = current.name().unwrap_or("a test");
    if std::env::var_os(REQUIRE_ALL).is_some_and(|v| v == "1") {
        panic!("{test} cannot run: {reason} ({REQUIRE_ALL}=1 forbids skipping)");
    }
    let _ = writeln!(std::io::stderr(), "\n*** SKIPPED {test}: {reason} ***\n");
}

/// `found`, or `None` after [`skip`]ping for `reason`.
pub fn or_skip<T>(found: Option<T>, reason: impl Display) -> Option<T> {
    if found.is_none() {
        skip(reason);
    }
    found
}
