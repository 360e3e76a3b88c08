#!/usr/bin/env bash
# What the kernel request-latency source costs: a Java HTTP service
# (tests/workload/HttpService.java, blocking shape, no GC pressure) driven
# by tests/workload/HttpLoad.java, without and with an agent (`--features
# ebpf`, release) that measures its requests from the kernel.
#   1. Open loop at each RATE: the agent's CPU over the load window, less
#      its CPU over an idle window of the same length, per 1,000 requests/s.
#   2. Closed loop (as fast as CONNECTIONS allow): the service's throughput
#      with the agent over without, runs alternated, ROUNDS of each.
#   3. The kernel memory the program's maps lock (fdinfo `memlock`).
# Root (CAP_BPF, CAP_PERFMON). Usage: bench/kernel-latency.sh [SECONDS]
# [RATES] [ROUNDS]; PAUSEWATCH_BIN names a binary instead of building one,
# PAUSEWATCH_PORT a port for the agent.
set -euo pipefail
seconds=${1:-15}
rates=${2:-"1000 10000"}
rounds=${3:-3}
connections=${CONNECTIONS:-50}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
source "$ROOT/bench/lib.sh"
bench_setup kernel-latency --features ebpf
javac -nowarn --release 17 -d "$WORK" "$ROOT"/tests/workload/*.java
marker="-Dpausewatch.bench=$WORK"
ticks=$(getconf CLK_TCK)

java "$marker" -XX:+UseParallelGC -Xmx512m -Dhs.gcEverySec=0 -Dhs.live=0.1 -cp "$WORK" \
    HttpService blocking "$WORK/port" "$WORK/access.jsonl" 2>"$WORK/service.log" &
PIDS+=($!)
for _ in $(seq 100); do [[ -s "$WORK/port" ]] && break; sleep 0.2; done
service_port=$(cat "$WORK/port")
# load RATE SECONDS: the requests completed.
load() {
    java -cp "$WORK" HttpLoad "$service_port" "$1" "$connections" "$2" "$WORK/record" |
        sed -n 's/.*completed=\([0-9]*\).*/\1/p'
}
load 2000 5 >/dev/null # warm the service's JIT

discovery_config 1s "${marker//./\\.}"
if [[ -n "${PAUSEWATCH_PORT:-}" ]]; then
    sed -i "s/^listen = .*/listen = \"127.0.0.1:$PAUSEWATCH_PORT\"/" "$WORK/pausewatch.toml"
    PORT=$PAUSEWATCH_PORT
fi
start_agent() {
    "$BIN" run --config "$WORK/pausewatch.toml" 2>>"$WORK/agent.log" &
    agent=$!
    PIDS+=("$agent")
    for _ in $(seq 100); do
        curl -s "http://127.0.0.1:$PORT/metrics" | grep -q 'latency_source="kernel"' && return
        sleep 0.2
    done
    echo "the agent never measured the service's requests (see $WORK/agent.log)" >&2
    exit 1
}
stop_agent() {
    kill "$agent"
    wait "$agent" 2>/dev/null || true
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
start_agent
for rate in $rates; do
    idle_from=$(cpu_ticks "$agent")
    sleep "$seconds"
    idle=$(($(cpu_ticks "$agent") - idle_from))
    busy_from=$(cpu_ticks "$agent")
    began=$(date +%s.%N)
    done_requests=$(load "$rate" "$seconds")
    elapsed=$(awk -v a="$began" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')
    busy=$(($(cpu_ticks "$agent") - busy_from))
    awk -v r="$rate" -v d="$done_requests" -v s="$seconds" -v e="$elapsed" -v b="$busy" -v i="$idle" -v t="$ticks" 'BEGIN {
        achieved = d / e
        added = b / t / e * 100 - i / t / s * 100
        printf "open loop %d req/s (achieved %.0f over %.1f s): agent %.2f %% of a core under load, %.2f %% idle; added %.2f %% of a core, %.3f %% per 1,000 req/s\n",
            r, achieved, e, b / t / e * 100, i / t / s * 100, added, added / (achieved / 1000)
    }'
done
memlock=$(for fd in /proc/"$agent"/fdinfo/*; do
    awk '/^map_type:/ {type = $2} /^max_entries:/ {max = $2} /^memlock:/ {lock = $2}
         END {if (type == 9 && max == 65536) print lock}' "$fd" 2>/dev/null
done | awk '{n += $1} END {print n + 0}')
stop_agent

with=() without=()
for round in $(seq "$rounds"); do
    without+=("$(load 0 "$seconds")")
    start_agent
    with+=("$(load 0 "$seconds")")
    stop_agent
    echo "closed loop round $round: ${without[-1]} requests without the agent, ${with[-1]} with"
done
printf '%s\n' "${without[@]}" | sort -n > "$WORK/without"
printf '%s\n' "${with[@]}" | sort -n > "$WORK/with"
awk -v s="$seconds" -v m="$memlock" 'NR == FNR {a[FNR] = $1; n = FNR; next} {b[FNR] = $1}
END {
    mid = int((n + 1) / 2)
    printf "closed loop, medians of %d: %.0f req/s without, %.0f with: throughput with / without %.3f\n",
        n, a[mid] / s, b[mid] / s, b[mid] / a[mid]
    printf "connection map: %d KiB locked for 65,536 connections (%.0f bytes each, allocated up front)\n",
        m / 1024, m / 65536
}' "$WORK/without" "$WORK/with"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
