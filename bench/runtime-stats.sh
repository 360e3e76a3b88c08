#!/usr/bin/env bash
# Cost of discovery and runtime stats (issue 11, section 7): the release agent,
# with no [[gc_log]], on a host with N idle JVMs (default 50) sampled every
# 200 ms, and M other processes (default 450, `sleep`s) so that a /proc scan
# sees about 500. Prints the agent's CPU as a share of one core over a window
# (target: at most 2 %) and the duration of its /proc scans (target: at most
# 50 ms), from its own debug log.
#
# Usage: bench/runtime-stats.sh [JVMS] [OTHERS] [SECONDS]   (needs java)
# DISCOVERY_INTERVAL=1s: how often the agent scans /proc (its default is 10s).
# WARMUP=15: seconds between the agent's start and the window (an idle JVM
# is sampled less often 10 s after its counters last moved).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=lib.sh
source "$ROOT/bench/lib.sh"
JVMS="${1:-50}" OTHERS="${2:-450}" SECONDS_WINDOW="${3:-20}"
bench_setup runtime-stats
command -v java >/dev/null || { echo "java is required" >&2; exit 1; }

# An idle JVM: a small heap, the interpreter and C1 only, sleeping.
cat > "$WORK/Idle.java" <<'JAVA'
public class Idle { public static void main(String[] a) throws Exception { Thread.sleep(Long.MAX_VALUE); } }
JAVA
javac -d "$WORK" "$WORK/Idle.java"
for ((i = 0; i < JVMS; i++)); do
    java -Xmx16m -Xss256k -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dbench.runtime-stats="$WORK" -cp "$WORK" Idle &
    PIDS+=($!)
done
for ((i = 0; i < OTHERS; i++)); do
    sleep 100000 &
    PIDS+=($!)
done
sleep 5
discovery_config "${DISCOVERY_INTERVAL:-1s}" "bench\.runtime-stats=${WORK//./\\.}"
RUST_LOG=pausewatch::sources=debug "$BIN" run --config "$WORK/pausewatch.toml" 2> "$WORK/agent.log" &
agent=$!
PIDS+=($agent)
sleep "${WARMUP:-15}"
discovered=$(curl -s "127.0.0.1:$PORT/metrics" | grep -c '^pausewatch_jvm_discovered{.*runtime_stats="available"' || true)
before=$(cpu_ns "$agent")
sleep "$SECONDS_WINDOW"
after=$(cpu_ns "$agent")
processes=$(ls /proc | grep -c '^[0-9]')
echo "JVMs discovered and sampled: $discovered of $JVMS; processes on the host: $processes"
python3 - "$before" "$after" "$SECONDS_WINDOW" <<'PY'
import sys
before, after, window = map(float, sys.argv[1:])
print(f"agent CPU while sampling: {100 * (after - before) / 1e9 / window:.3f} % of one core (target <= 2 %)")
PY
grep -o 'elapsed_us=[0-9]*' "$WORK/agent.log" | cut -d= -f2 | sort -n | python3 -c '
import sys
v = [int(x) / 1000 for x in sys.stdin]
print(f"/proc scans: {len(v)}, median {v[len(v)//2]:.1f} ms, max {max(v):.1f} ms (target <= 50 ms)") if v else print("no scan logged")'
