//! Stamps the binary with the commit it was built from, for `--version`: a
//! bug report then names the exact source. A build outside git (a source
//! tarball) says so instead of failing.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    (output.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

fn main() {
    let commit =
        git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown commit".to_string());
    println!("cargo:rustc-env=PAUSEWATCH_COMMIT={commit}");
    // Rebuilt when HEAD moves (a commit, a checkout); `logs/HEAD` grows on both.
    if let Some(git_dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={git_dir}/HEAD");
        println!("cargo:rerun-if-changed={git_dir}/logs/HEAD");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
