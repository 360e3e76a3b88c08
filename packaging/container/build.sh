#!/usr/bin/env bash
# Builds the container image `localhost/pausewatch:VERSION` from
# packaging/container/Containerfile with buildah (no daemon; set
# STORAGE_DRIVER=vfs where overlay mounts are not allowed, as in CI): the
# release binary the packages ship (`--features ebpf`, the build
# release-files.sh makes, so a host building both builds once), the shared
# libraries it links (glibc, libgcc_s, libelf, zlib: what `ldd` names) and
# the dynamic loader, the binary given the file capabilities the agent
# needs, in a context directory of its own.
# Prints the image's name.
set -euo pipefail
cd "$(dirname "$0")/../.."

target_dir=${CARGO_TARGET_DIR:-target}
cargo build --release --locked --features ebpf >&2
binary="$target_dir/release/pausewatch"

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
install -m 0755 "$binary" "$context/pausewatch"
strip "$context/pausewatch"
setcap cap_dac_read_search,cap_sys_ptrace,cap_bpf,cap_perfmon+ep "$context/pausewatch"
# Every library at the path the binary's loader looks for it (the loader's
# own path is in the binary), so the image needs nothing from a base.
mkdir "$context/libraries"
linked=$(ldd "$binary")
if grep -q 'not found' <<< "$linked"; then
    echo "build.sh: $binary links a library this host lacks:" >&2
    grep 'not found' <<< "$linked" >&2
    exit 1
fi
libraries=$(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<< "$linked")
[[ -n $libraries ]] || { echo "build.sh: ldd named no library of $binary" >&2; exit 1; }
for library in $libraries; do
    mkdir -p "$context/libraries$(dirname "$library")"
    cp -L --preserve=mode "$library" "$context/libraries$library"
done
cp packaging/container/pausewatch.toml "$context/"
mkdir "$context/state"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
image="localhost/pausewatch:$version"
buildah ${STORAGE_DRIVER:+--storage-driver "$STORAGE_DRIVER"} build --quiet \
    -f packaging/container/Containerfile -t "$image" "$context" >&2
echo "$image"
