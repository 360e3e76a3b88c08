#!/usr/bin/env bash
# Builds the seed corpus for the gc_log fuzz target in fuzz/corpus/gc_log/
# (git-ignored) from short excerpts of real GC logs:
#   * tests/fixtures/jvm/*/gc.log (logs real JVMs wrote, see tests/fixtures/generate.sh)
#   * tests/fixtures/go/*/gctrace.log (Go GODEBUG=gctrace=1 output, see
#     tests/fixtures/go/generate.sh) and GCViewer's go/go1.9.txt when present
#   * optionally, GCViewer's unified-logging samples for the other collectors
#     (ZGC, Shenandoah, Parallel, Serial, CMS; JDK 9-17 shapes), from
#     $GCVIEWER_UJL (default /work/shared/corpus/GCViewer/src/test/resources/openjdk/unified-jvm-logging)
#     when that directory exists.
#   * optionally, GCViewer's JDK 6 to 8 samples (SampleSun1_*.txt: every
#     collector, tenuring, PrintHeapAtGC, spliced concurrent output), from
#     $GCVIEWER_LEGACY (default /work/shared/corpus/GCViewer/src/test/resources/openjdk).
# Each seed is two header bytes (chunking/flush selectors, see
# fuzz_targets/gc_log.rs) followed by about 25 consecutive lines taken from
# the start, the middle and the last third of a log.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=$here/corpus/gc_log
lines=${SEED_LINES:-25}
gcviewer=${GCVIEWER_UJL:-/work/shared/corpus/GCViewer/src/test/resources/openjdk/unified-jvm-logging}
legacy=${GCVIEWER_LEGACY:-/work/shared/corpus/GCViewer/src/test/resources/openjdk}

mkdir -p "$out"

sources=()
for f in "$root"/tests/fixtures/jvm/*/gc.log; do
    [ -f "$f" ] && sources+=("$f")
done
for f in "$root"/tests/fixtures/go/*/gctrace.log "$gcviewer"/../../go/go1.9.txt; do
    [ -f "$f" ] && sources+=("$f")
done
if [ -d "$gcviewer" ]; then
    for f in "$gcviewer"/*.txt; do
        [ -f "$f" ] && sources+=("$f")
    done
fi
if [ -d "$legacy" ]; then
    for f in "$legacy"/SampleSun1_*.txt; do
        [ -f "$f" ] && sources+=("$f")
    done
fi
if [ ${#sources[@]} -eq 0 ]; then
    echo "seed.sh: no GC logs found under $root/tests/fixtures/jvm or $gcviewer" >&2
    exit 1
fi

count=0
for f in "${sources[@]}"; do
    case "$f" in
        */tests/fixtures/jvm/*) slug=$(basename "$(dirname "$f")") ;;
        */tests/fixtures/go/*) slug=go-$(basename "$(dirname "$f")") ;;
        *) slug=gcviewer-$(basename "$f" .txt | tr -c 'A-Za-z0-9_.\n-' '_') ;;
    esac
    total=$(wc -l <"$f")
    # start line : header bytes (whole input/no flush, 64-byte chunks/flush every 3, 513-byte chunks/no flush)
    for spec in "1:\\x07\\x00" "$((total / 2 + 1)):\\x44\\x03" "$((total * 2 / 3 + 1)):\\x05\\x00"; do
        start=${spec%%:*}
        header=${spec#*:}
        seed=$out/$slug-$start
        [ -e "$seed" ] && continue
        { printf "$header"; sed -n "${start},$((start + lines - 1))p" "$f"; } >"$seed"
        count=$((count + 1))
    done
done
echo "seed.sh: wrote $count seeds from ${#sources[@]} logs to $out"
