#!/usr/bin/env bash
# Builds the container image `localhost/pausewatch:VERSION` from
# packaging/container/Containerfile with buildah (no daemon; set
# STORAGE_DRIVER=vfs where overlay mounts are not allowed, as in CI):
# a static release binary (glibc, +crt-static, the gnu target) with the eBPF
# safepoint source (`--features ebpf`; the linker takes libelf.a and libz.a
# from libelf-dev and zlib1g-dev), given the file capabilities the agent
# needs, in a context directory of its own.
# Prints the image's name.
set -euo pipefail
cd "$(dirname "$0")/../.."

target_dir=${CARGO_TARGET_DIR:-target}
triple=$(rustc -vV | sed -n 's/^host: //p')
RUSTFLAGS="-C target-feature=+crt-static" \
    cargo build --release --locked --features ebpf --target "$triple" >&2
binary="$target_dir/$triple/release/pausewatch"
if ! file -b "$binary" | grep -q 'static'; then
    echo "build.sh: $binary is not static" >&2
    exit 1
fi

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
install -m 0755 "$binary" "$context/pausewatch"
strip "$context/pausewatch"
setcap cap_dac_read_search,cap_sys_ptrace,cap_bpf,cap_perfmon+ep "$context/pausewatch"
cp packaging/container/pausewatch.toml "$context/"
mkdir "$context/state"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
image="localhost/pausewatch:$version"
buildah ${STORAGE_DRIVER:+--storage-driver "$STORAGE_DRIVER"} build --quiet \
    -f packaging/container/Containerfile -t "$image" "$context" >&2
echo "$image"
