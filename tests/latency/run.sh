#!/usr/bin/env bash
# Records a latency fixture: runs tests/workload/RequestWorkload.java (constant
# arrival rate, latency from the intended start) with a GC log, and freezes the JVM
# twice with SIGSTOP/SIGCONT while it runs.
#
# Usage: tests/latency/run.sh OUT_DIR [SECONDS=30] [COLLECTOR_FLAG=-XX:+UseParallelGC]
#   e.g. tests/latency/run.sh tests/fixtures/latency/jdk17-parallel
#
# Environment (defaults in brackets):
#   RATE [200]              requests per second
#   HEAP ["-Xmx256m -Xmn40m"] heap flags
#   FREEZE_MS [75]          length of each freeze: above a 50 ms SLO, below the
#                           full-GC pauses, so that GC is what makes the p99.9
#   FREEZE_AT [0.3S 0.58S]  freeze times in seconds after the first intended start
#                           (between the full GCs of the default workload)
#   ATTEMPTS [3]            re-record (up to this many runs in all) while a freeze
#                           overlaps or is near a GC pause
#   JAVA, JAVAC [from PATH] OpenJDK 17 (tests/workload/*.java are compiled together)
#
# OUT_DIR gets:
#   gc.log            -Xlog:gc*,safepoint:file=gc.log:time,uptime,level,tags:filecount=0
#   access.jsonl      one JSON line per request (intended start, duration)
#   access.nginx.log  the same requests in nginx form
#   gc-events.jsonl   the JVM's GC notifications (GarbageCollectionNotificationInfo)
#   freezes.json      [{"start_ms":N,"end_ms":N,"start_us":N,"end_us":N}, ...] epoch
#                     time read once every JVM thread is stopped and just before
#                     `kill -CONT` (ms rounded inwards), see below
#   mxbeans.json      MXBean snapshot taken by the workload right before exiting
#   command.txt       the java command line (run with OUT_DIR as the working directory)
# and the script prints tests/latency/summary.py's statistics and checks.
#
# Before each freeze the script waits until no GC pause is in progress (the last
# "GC(N) Pause" line of gc.log is an end line) and gc.log has not been written for
# 100 ms, so that the freeze is not inside or right after a pause; a pause can
# still start right after it, which summary.py reports (exit status 2), and the
# run is then recorded again (ATTEMPTS).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
# shellcheck source=../workload/java-env.sh
source "$ROOT/tests/workload/java-env.sh"

if [[ $# -lt 1 || $# -gt 3 ]]; then
    sed -n '6,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 64
fi
OUT="$1"
SECS="${2:-30}"
COLLECTOR="${3:--XX:+UseParallelGC}"
RATE="${RATE:-200}"
HEAP="${HEAP:--Xmx256m -Xmn40m}"
FREEZE_MS="${FREEZE_MS:-75}"
FREEZE_AT="${FREEZE_AT:-$(awk -v s="$SECS" 'BEGIN { printf "%.3f %.3f", 0.3 * s, 0.58 * s }')}"
ATTEMPTS="${ATTEMPTS:-3}"
JAVA="${JAVA:-$(command -v java)}"

require_jdk JAVA 17
[[ -n "${EPOCHREALTIME:-}" ]] || { echo "needs bash >= 5 (EPOCHREALTIME)" >&2; exit 1; }

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/pausewatch-latency.XXXXXX")"
PID=""
cleanup() {
    if [[ -n "$PID" ]] && kill -0 "$PID" 2>/dev/null; then
        kill -CONT "$PID" 2>/dev/null || true
        kill "$PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir "$WORK/classes"
compile_workloads "$WORK/classes"

now_us() { local t="${EPOCHREALTIME/[.,]/}"; echo "$((10#$t))"; }

sleep_until_ms() { # sleep_until_ms EPOCH_MS
    local d=$(( $1 * 1000 - $(now_us) ))
    if (( d > 0 )); then
        sleep "$(printf '%d.%06d' $((d / 1000000)) $((d % 1000000)))"
    fi
}

# true when no GC pause is in progress and gc.log has been quiet for 100 ms
gc_quiet() {
    local last mtime
    last="$(grep -E 'GC\([0-9]+\) Pause' "$OUT/gc.log" | tail -n 1 || true)"
    [[ -z "$last" || "$last" =~ ms$ ]] || return 1
    mtime="$(stat -c %.3Y "$OUT/gc.log")"
    mtime="${mtime/./}"
    (( $(now_us) / 1000 - 10#$mtime >= 100 ))
}

# returns once every thread of process $1 is in the stopped state (T in
# /proc/PID/task/*/stat); fails after 5 s. Reads with builtins only: no fork.
wait_stopped() {
    local deadline stat rest running
    deadline=$(( $(now_us) + 5000000 ))
    while :; do
        running=0
        for stat in /proc/"$1"/task/*/stat; do
            read -r rest 2>/dev/null < "$stat" || continue # the thread has exited
            rest="${rest##*) }"
            [[ "${rest:0:1}" == T ]] || { running=1; break; }
        done
        (( running )) || return 0
        if (( $(now_us) > deadline )); then
            echo "process $1 not stopped 5 s after SIGSTOP" >&2
            return 1
        fi
    done
}

record() {
    rm -f "$OUT"/gc.log* "$OUT"/access.jsonl "$OUT"/access.nginx.log "$OUT"/gc-events.jsonl \
          "$OUT"/freezes.json "$OUT"/mxbeans.json "$OUT"/command.txt
    # shellcheck disable=SC2206
    local cmd=("$JAVA" -XX:ActiveProcessorCount=2 $COLLECTOR $HEAP
               "-Xlog:gc*,safepoint:file=gc.log:time,uptime,level,tags:filecount=0"
               -cp "$WORK/classes" RequestWorkload "$SECS" "$RATE"
               access.jsonl gc-events.jsonl mxbeans.json access.nginx.log)
    quote_command "${cmd[@]}" > "$OUT/command.txt"

    (cd "$OUT" && exec "${cmd[@]}") > "$WORK/stdout" 2>&1 &
    PID=$!

    # Wait for the first intended start.
    local t0="" i
    for ((i = 0; i < 1200; i++)); do
        t0="$(grep -o 't0_ms=[0-9]*' "$WORK/stdout" | cut -d= -f2 || true)"
        [[ -n "$t0" ]] && break
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.05
    done
    if [[ -z "$t0" ]]; then
        echo "workload did not start:" >&2
        cat "$WORK/stdout" >&2
        return 1
    fi

    local json="[" sep="" at target waited a a2 b c fs fe
    local freeze_s
    freeze_s="$(printf '%d.%03d' $((FREEZE_MS / 1000)) $((FREEZE_MS % 1000)))"
    for at in $FREEZE_AT; do
        # (awk only for the small number: mawk's %d overflows at 2^31)
        target=$((t0 + $(awk -v at="$at" 'BEGIN { printf "%d", at * 1000 }')))
        sleep_until_ms "$target"
        if ! kill -0 "$PID" 2>/dev/null; then
            echo "WARNING: the workload has already exited, no freeze at t0+${at}s" >&2
            break
        fi
        waited=0
        until gc_quiet; do
            sleep 0.005
            waited=$((waited + 1))
            if (( waited > 400 )); then
                echo "WARNING: GC log not quiet for 2 s, freezing anyway" >&2
                break
            fi
        done
        # The freeze is recorded as [a2, c]: a2 read once every thread of the JVM is
        # seen stopped, c right before `kill -CONT`, so the interval lies inside the
        # real freeze. `kill -STOP` returns before the stop takes effect: one thread
        # of the JVM must be scheduled to stop the others, and busy threads were seen
        # running 0.3-36 ms after kill returned (a read then would put requests that
        # complete before the stop inside the freeze). A read before the STOP and b
        # after the CONT can be late by ms: the JVM competes for the CPUs then.
        # EPOCHREALTIME is read directly, without forking.
        a="$EPOCHREALTIME"
        kill -STOP "$PID"
        wait_stopped "$PID"
        a2="$EPOCHREALTIME"
        sleep "$freeze_s"
        c="$EPOCHREALTIME"
        kill -CONT "$PID"
        b="$EPOCHREALTIME"
        a="$((10#${a/[.,]/}))"
        a2="$((10#${a2/[.,]/}))"
        c="$((10#${c/[.,]/}))"
        b="$((10#${b/[.,]/}))"
        fs=$(((a2 + 999) / 1000))
        fe=$((c / 1000))
        json+="${sep}"$'\n'"  {\"start_ms\":$fs,\"end_ms\":$fe,\"start_us\":$a2,\"end_us\":$c}"
        sep=","
        echo "freeze at t0+${at}s: [$fs, $fe] ms ($((fe - fs)) ms); STOP until every thread stopped $((a2 - a)) us, CONT $((b - c)) us"
    done
    json+=$'\n]\n'
    printf '%s' "$json" > "$OUT/freezes.json"

    local rc=0
    wait "$PID" || rc=$?
    PID=""
    cat "$WORK/stdout"
    if [[ $rc -ne 0 ]]; then
        echo "workload exited with status $rc" >&2
        return 1
    fi
    return 0
}

attempt=1
while :; do
    echo "== attempt $attempt: $OUT (${SECS}s at ${RATE}/s, $COLLECTOR $HEAP, freezes of ${FREEZE_MS} ms at t0+{${FREEZE_AT// /,}}s)"
    record
    rc=0
    python3 "$HERE/summary.py" "$OUT" --check || rc=$?
    case $rc in
        0) break ;;
        2)
            if (( attempt < ATTEMPTS )); then
                echo "a freeze overlaps or is near a GC pause: recording again"
                attempt=$((attempt + 1))
                continue
            fi
            echo "NOTE: a freeze overlaps or is near a GC pause (see above); kept after $attempt attempts"
            break ;;
        *) echo "consistency checks FAILED" >&2; exit 1 ;;
    esac
done
echo "total: $(du -sh "$OUT" | cut -f1) in $OUT"
