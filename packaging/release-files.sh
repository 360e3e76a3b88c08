#!/usr/bin/env bash
# The files both packages ship from the build: the release binary, and in
# TARGET/release/generated/ the man page and shell completions it prints.
# Used by build-deb.sh and build-rpm.sh.
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
