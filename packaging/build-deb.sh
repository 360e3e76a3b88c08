#!/usr/bin/env bash
# Builds target/debian/pausewatch_VERSION_ARCH.deb: the release binary, the
# man page and shell completions it prints (release-files.sh), then
# `cargo deb --no-build` (metadata in Cargo.toml; cargo-deb strips the
# binary). Prints the .deb's path.
# Needs cargo-deb: `cargo install cargo-deb`.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${CARGO_TARGET_DIR:-target}
packaging/release-files.sh
cargo deb --no-build --strip --locked --output "$target/debian/" >&2
ls -t "$target"/debian/pausewatch_*.deb | head -n 1
