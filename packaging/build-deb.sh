#!/usr/bin/env bash
# Builds target/debian/pausewatch_VERSION_ARCH.deb: the release binary, the
# man page and shell completions it prints, then `cargo deb --no-build`
# (metadata in Cargo.toml; cargo-deb strips the binary). Prints the .deb's path.
# Needs cargo-deb: `cargo install cargo-deb`.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${CARGO_TARGET_DIR:-target}
cargo build --release --locked >&2
generated="$target/release/generated"
mkdir -p "$generated"
bin="$target/release/pausewatch"
"$bin" man | gzip -9n >"$generated/pausewatch.1.gz"
"$bin" completions bash >"$generated/pausewatch.bash"
"$bin" completions zsh >"$generated/_pausewatch"
"$bin" completions fish >"$generated/pausewatch.fish"
cargo deb --no-build --strip --locked --output "$target/debian/" >&2
ls -t "$target"/debian/pausewatch_*.deb | head -n 1
