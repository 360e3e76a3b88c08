#!/usr/bin/env bash
# What the eBPF safepoint source costs: a JVM at about 1,000 safepoints/s
# (bench/ebpf/SafepointLoad.java) run without, then with an agent
# (`--features ebpf`, release) that measures it through eBPF. Prints the
# JVM's throughput with/without, the agent's CPU per safepoint recorded and
# its peak RSS. Root (CAP_BPF, CAP_PERFMON). Usage: bench/ebpf-overhead.sh
# [SECONDS] [RATE]; PAUSEWATCH_BIN names a binary instead of building one.
# LEFT_OUT=1: the agent's `[discovery] include` leaves the JVM out, so it
# measures nothing: what the probes still cost a JVM the configuration
# excludes, the JVM's throughput and the agent's CPU while it runs.
set -euo pipefail
seconds=${1:-20}
rate=${2:-1000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
source "$ROOT/bench/lib.sh"
bench_setup ebpf-overhead --features ebpf
exports=--add-exports=java.management/sun.management=ALL-UNNAMED
javac -nowarn "$exports" -d "$WORK" "$ROOT/bench/ebpf/SafepointLoad.java" 2>/dev/null
marker="-Dpausewatch.bench=$WORK"
load() { java "$exports" "$marker" -Xmx64m -cp "$WORK" SafepointLoad "$seconds" "$rate"; }

set -- $(load)
base_ops=$1 base_rate=$2

include="${marker//./\\.}"
if [ "${LEFT_OUT:-0}" = 1 ]; then include='-Dpausewatch\.bench-other='; fi
discovery_config 200ms "$include"
"$BIN" run --config "$WORK/pausewatch.toml" 2>"$WORK/agent.log" &
agent=$!
PIDS+=("$agent")
sleep 2
# The cross-check against the JVM's own counter, scraped twice a second
# while it runs: every value it took.
scrape_mismatch() {
    while sleep 0.5; do
        curl -s "http://127.0.0.1:$PORT/metrics" |
            awk '/^pausewatch_jvm_safepoint_probe_mismatch[{ ]/ {print $NF}'
    done
}
scrape_mismatch > "$WORK/mismatch" &
scraper=$!
PIDS+=("$scraper")
window_before=$(cpu_ns "$agent")
set -- $(load)
with_ops=$1 with_rate=$2
window_cpu_ns=$(($(cpu_ns "$agent") - window_before))
kill "$scraper"
mismatch=$(sort -n "$WORK/mismatch" | uniq -c | awk '{printf "%s%s x%s", sep, $2, $1; sep = ", "}')
metrics=$(curl -s "http://127.0.0.1:$PORT/metrics")
ticks=$(getconf CLK_TCK)
cpu=$(awk -v n="$(cpu_ticks "$agent")" -v t="$ticks" 'BEGIN {print n / t}')
rss=$(awk '/VmHWM/ {print $2}' "/proc/$agent/status")
source=$(printf '%s\n' "$metrics" | grep -c 'pausewatch_jvm_discovered{.*pause_source="ebpf"' || true)
unclaimed=$(printf '%s\n' "$metrics" | awk '/^pausewatch_ebpf_records_unclaimed_total / {print $NF}')
kill "$agent"
wait "$agent" 2>/dev/null || true
# The JVM's own count (sun.rt.safepoints, its last sample), else the rate's.
events=$(printf '%s\n' "$metrics" | awk '/^pausewatch_jvm_safepoints_total[{ ]/ {n += $NF} END {print n + 0}')
if [ "$events" -eq 0 ]; then
    events=$(awk -v s="$seconds" -v r="$with_rate" 'BEGIN {print int(r * (s + 1))}')
fi
awk -v bo="$base_ops" -v wo="$with_ops" -v br="$base_rate" -v wr="$with_rate" \
    -v cpu="$cpu" -v ev="$events" -v rss="$rss" -v src="$source" 'BEGIN {
    printf "safepoints/s without agent %.0f, with %.0f (JVMs measured by eBPF: %d)\n", br, wr, src
    printf "JVM throughput with/without agent: %.3f (%.0f vs %.0f ops/s)\n", wo / bo, wo, bo
    printf "agent CPU: %.2f s for ~%d safepoints, %.1f us per safepoint (all agent work included)\n", cpu, ev, cpu / ev * 1e6
    printf "agent peak RSS: %.1f MiB\n", rss / 1024
}'
echo "pausewatch_jvm_safepoint_probe_mismatch while it ran (value x scrapes): ${mismatch:-none}"
awk -v ns="$window_cpu_ns" -v s="$seconds" 'BEGIN {
    printf "agent CPU while the JVM ran: %.1f ms (%.3f %% of a core)\n", ns / 1e6, ns / 1e7 / (s + 1)
}'
echo "records read and dropped (pausewatch_ebpf_records_unclaimed_total): ${unclaimed:-not exported}"
