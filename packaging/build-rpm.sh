#!/usr/bin/env bash
# Builds target/generate-rpm/pausewatch-VERSION-1.ARCH.rpm: the release
# binary, the man page and shell completions it prints (release-files.sh),
# the binary stripped (cargo-generate-rpm does not strip), then
# `cargo generate-rpm` (metadata in Cargo.toml). Prints the .rpm's path.
# Needs cargo-generate-rpm: `cargo install cargo-generate-rpm`.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${CARGO_TARGET_DIR:-target}
packaging/release-files.sh
strip --strip-unneeded -o "$target/release/generated/pausewatch" "$target/release/pausewatch"
cargo generate-rpm >&2
ls -t "$target"/generate-rpm/pausewatch-*.rpm | head -n 1
