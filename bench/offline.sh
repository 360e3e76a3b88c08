#!/usr/bin/env bash
# The whole `pausewatch analyze` process beside `wc -l` on the same large,
# trace-level GC log, and the cores it uses when an access log comes along.
# See bench/README.md.
#
#   bench/offline.sh [GCLOG]
#
# Without GCLOG, records target/bench/gc-trace.log first: JDK 17 G1 running the
# fixture workload for 40 s with -Xlog:gc*=trace,safepoint (about 70 MB).
# PAUSEWATCH_BIN=... uses that binary instead of building target/release/pausewatch.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/bench/lib.sh"
bench_setup offline
LOG="${1:-$ROOT/target/bench/gc-trace.log}"
if [[ ! -s "$LOG" ]]; then
    # shellcheck source=../tests/workload/java-env.sh
    source "$ROOT/tests/workload/java-env.sh"
    mkdir -p "$(dirname "$LOG")"
    compile_workloads "$WORK"
    java -XX:+UseG1GC -Xmx256m "-Xlog:gc*=trace,safepoint:file=$LOG:time,uptime,level,tags:filecount=0" \
        -cp "$WORK" GcWorkload concurrent 40 /dev/null > /dev/null
fi
cat "$LOG" > /dev/null # warm the page cache

# best_of N CMD...: the best wall time of N runs, in ms, with that run's CPU time (ms).
best_of() {
    python3 - "$@" <<'PY'
import resource, subprocess, sys, time
runs, command = int(sys.argv[1]), sys.argv[2:]
best = None
for _ in range(runs):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if best is None or wall < best[0]:
        best = (wall, cpu)
print(f"{best[0] * 1000:.1f} {best[1] * 1000:.1f}")
PY
}

bytes=$(stat -c %s "$LOG")
lines=$(wc -l < "$LOG")
echo "log: $LOG ($bytes bytes, $lines lines)"
read -r wc_ms wc_cpu <<< "$(best_of 5 wc -l "$LOG")"
read -r analyze_ms analyze_cpu <<< "$(best_of 5 "$BIN" analyze --format json "$LOG")"
printf '%-44s %8s ms  CPU %s ms\n' "wc -l (best of 5)" "$wc_ms" "$wc_cpu"
printf '%-44s %8s ms  CPU %s ms  (%s lines/s)\n' "pausewatch analyze --format json (best of 5)" \
    "$analyze_ms" "$analyze_cpu" "$(python3 -c "print(f'{$lines / $analyze_ms * 1000:,.0f}')")"
printf '%-44s %8s  (by CPU time: %s; wall time suffers first on a busy host)\n' \
    "analyze speed / wc -l speed" "$(python3 -c "print(f'{$wc_ms / $analyze_ms:.0%}')")" \
    "$(python3 -c "print(f'{$wc_cpu / $analyze_cpu:.0%}')")"

# An access log over the GC log's time span, one request per millisecond of
# it at most 2 million: read on its own thread beside the GC log.
python3 - "$LOG" "$WORK/access.jsonl" <<'PY'
import datetime, json, re, sys
stamps = re.findall(rb"^\[(\d{4}-\d\d-\d\dT[\d:.]+[+-]\d{4})\]", open(sys.argv[1], "rb").read(), re.M)
first = datetime.datetime.strptime(stamps[0].decode(), "%Y-%m-%dT%H:%M:%S.%f%z")
last = datetime.datetime.strptime(stamps[-1].decode(), "%Y-%m-%dT%H:%M:%S.%f%z")
count = min(2_000_000, int((last - first).total_seconds() * 1000))
step = (last - first) / count
with open(sys.argv[2], "w") as out:
    for i in range(count):
        start = first + step * i
        out.write(json.dumps({"start": start.isoformat(timespec="milliseconds"), "duration_ms": 3 + i % 17}) + "\n")
PY
access_lines=$(wc -l < "$WORK/access.jsonl")
read -r both_ms both_cpu <<< "$(best_of 3 "$BIN" analyze --format json --latency "$WORK/access.jsonl" \
    --latency-format json --time-field start --duration-field duration_ms --duration-unit ms "$LOG")"
printf '%-44s %8s ms  (%s requests), CPU %s ms: %s cores busy\n' "analyze with an access log (best of 3)" \
    "$both_ms" "$access_lines" "$both_cpu" "$(python3 -c "print(f'{$both_cpu / $both_ms:.2f}')")"
