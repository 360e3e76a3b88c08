#!/usr/bin/env bash
# The files both packages ship from the build: the release binary with the
# eBPF safepoint source (`--features ebpf`: clang, libelf-dev, zlib1g-dev and
# pkg-config to build; libelf and zlib linked dynamically, so the packages
# depend on them), and in TARGET/release/generated/ the man pages and shell
# completions it prints. Used by build-deb.sh and build-rpm.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${CARGO_TARGET_DIR:-target}
cargo build --release --locked --features ebpf >&2
generated="$target/release/generated"
mkdir -p "$generated"
bin="$target/release/pausewatch"
# pausewatch.1 and pausewatch-COMMAND.1 for every subcommand (the main
# page's SUBCOMMANDS name them), and pausewatch.toml.5 (every configuration
# key with its default), gzipped where man looks for them.
rm -rf "$generated/man"
mkdir -p "$generated/man"
"$bin" man --dir "$generated/man"
for page in "$generated/man"/*.1 "$generated/man"/*.5; do
    gzip -9n <"$page" >"$generated/$(basename "$page").gz"
done
"$bin" completions bash >"$generated/pausewatch.bash"
"$bin" completions zsh >"$generated/_pausewatch"
"$bin" completions fish >"$generated/pausewatch.fish"
