#!/usr/bin/env bash
# Parse-throughput benchmark beside `wc -l` on the same large real GC log.
#
#   parsers/benches/run.sh [LOG]
#
# Without LOG, records target/bench/gc-large.log first: JDK 17 G1 running the
# fixture workload for 90 s with -Xlog:gc*=debug,safepoint (tens of MB).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../../tests/workload/java-env.sh
source "$ROOT/tests/workload/java-env.sh"
LOG="${1:-$ROOT/target/bench/gc-large.log}"
if [[ ! -s "$LOG" ]]; then
    mkdir -p "$(dirname "$LOG")"
    CLASSES="$(mktemp -d)"
    trap 'rm -rf "$CLASSES"' EXIT
    compile_workloads "$CLASSES"
    java -XX:+UseG1GC -Xmx256m "-Xlog:gc*=debug,safepoint:file=$LOG:time,uptime,level,tags:filecount=0" \
        -cp "$CLASSES" GcWorkload concurrent 90 /dev/null
fi
echo "log: $LOG ($(stat -c %s "$LOG") bytes, $(wc -l < "$LOG") lines)"
cat "$LOG" > /dev/null # warm the page cache
best=""
for _ in 1 2 3 4 5; do
    start=$(date +%s%N); wc -l "$LOG" > /dev/null; end=$(date +%s%N)
    ns=$((end - start)); if [[ -z "$best" || $ns -lt $best ]]; then best=$ns; fi
done
bytes=$(stat -c %s "$LOG")
echo "wc -l: best of 5 = $((best / 1000000)) ms = $((bytes * 1000 / best)) MB/s"
cd "$ROOT" && PAUSEWATCH_BENCH_LOG="$LOG" taskset -c 0 cargo bench -p pausewatch-parsers --bench throughput
