#!/usr/bin/env bash
# Fleet sizing (issue 23): what one JVM costs a Prometheus, and what 1,000 do.
#
#   bench/fleet-sizing.sh                 # release build, 1,000 simulated JVMs
#   PAUSEWATCH_BIN=... JVMS=1000 SCRAPE=15s MINUTES=4 bench/fleet-sizing.sh
#
# Part 1, per collector: the agent follows one recorded GC log of each
# collector (tests/fixtures/jvm/*-steady, the Go gctrace fixture, and the
# Parallel service with its access log for the latency families) and its
# /metrics is counted: series (sample lines), of them histogram buckets and
# per-minute gauges, and bytes per scrape.
#
# Part 2, a simulated fleet: the G1-with-access-log exposition copied JVMS
# times (each copy its own `instance`, `log` and `pid`), served by a static
# HTTP server as JVMS/50 targets of 50 JVMs each (hosts), scraped every
# SCRAPE by a real Prometheus that loads `pausewatch rules` for MINUTES.
# Reported: head series, samples appended per second, Prometheus' RSS, and
# the time of each kind of dashboard query, raw against the recording rule
# that pre-aggregates it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/bench/lib.sh"
bench_setup fleet-sizing
for tool in prometheus curl; do
    command -v "$tool" >/dev/null || { echo "fleet-sizing: $tool is required" >&2; exit 1; }
done
JVMS="${JVMS:-1000}"
SCRAPE="${SCRAPE:-15s}"
MINUTES="${MINUTES:-4}"
PER_HOST=50

# metrics_of NAME GC_LOG [ACCESS_LOG]: the agent's /metrics once it has read the log.
metrics_of() {
    local name="$1" gc_log="$2" access="${3:-}" port dir
    dir="$WORK/$name"; mkdir -p "$dir"; port="$(free_port)"
    {
        echo "listen = \"127.0.0.1:$port\""
        echo "checkpoint_dir = \"$dir/checkpoint\""
        echo "[discovery]"; echo "enabled = false"
        if [[ -n "$gc_log" ]]; then
            echo "[[gc_log]]"; echo "path = \"$gc_log\""; echo 'start_at = "beginning"'
            echo 'labels = { service = "sizing" }'
        fi
        if [[ -n "$access" ]]; then
            echo "[[access_log]]"; echo "path = \"$access\""; echo 'format = "json"'
            echo 'time_field = "start"'; echo 'duration_field = "duration_ms"'
            echo 'duration_unit = "ms"'; echo 'start_at = "beginning"'
            echo "[correlation]"; echo 'finalize_after = "1s"'
        fi
    } > "$dir/pausewatch.toml"
    "$BIN" run --config "$dir/pausewatch.toml" 2>"$dir/stderr" &
    PIDS+=($!)
    local lines want=0
    [[ -n "$gc_log" ]] && want="$(wc -l < "$gc_log")"
    for _ in $(seq 100); do
        [[ -z "$gc_log" ]] && { curl -sf "http://127.0.0.1:$port/metrics" >/dev/null && break; sleep 0.2; continue; }
        lines="$(curl -sf "http://127.0.0.1:$port/metrics" | awk '/^pausewatch_log_lines_total/ {print $2}' | head -1 || true)"
        [[ "${lines%.*}" == "$want" ]] && break
        sleep 0.2
    done
    # The latency minute attributed (finalize_after) and published.
    if [[ -n "$access" ]]; then sleep 3; else sleep 1; fi
    curl -sf "http://127.0.0.1:$port/metrics" > "$dir/metrics"
    kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true
    echo "$dir/metrics"
}

# count FILE: series, buckets, stamped (per-minute) series, bytes.
count() {
    awk '!/^#/ && NF { n++; if ($1 ~ /_bucket\{/) b++; if (NF == 3) m++ } END { printf "%d %d %d", n, b, m }' "$1"
    printf ' %d\n' "$(wc -c < "$1")"
}

echo "== Part 1: one JVM's series, by collector =="
printf '%-34s %8s %8s %10s %8s\n' log series buckets per-minute bytes
f="$(metrics_of agent-alone "")"
printf '%-34s %8s %8s %10s %8s\n' "the agent alone (no log)" $(count "$f")
for fixture in jdk17-g1-steady jdk17-parallel-steady jdk17-serial-steady jdk17-zgc-steady \
    jdk25-zgc-steady jdk17-shenandoah-steady jdk25-g1-steady; do
    f="$(metrics_of "$fixture" "$ROOT/tests/fixtures/jvm/$fixture/gc.log")"
    printf '%-34s %8s %8s %10s %8s\n' "$fixture" $(count "$f")
done
f="$(metrics_of go "$ROOT/tests/fixtures/go/go1.19-alloc/gctrace.log")"
printf '%-34s %8s %8s %10s %8s\n' "go1.19 gctrace" $(count "$f")
service="$(metrics_of service "$ROOT/tests/fixtures/latency/jdk17-parallel/gc.log" \
    "$ROOT/tests/fixtures/latency/jdk17-parallel/access.jsonl")"
printf '%-34s %8s %8s %10s %8s\n' "Parallel service + access log" $(count "$service")

echo
echo "== Part 2: $JVMS simulated JVMs, scraped every $SCRAPE for $MINUTES minutes =="
hosts=$(( (JVMS + PER_HOST - 1) / PER_HOST ))
mkdir -p "$WORK/fleet"
# Each host's exposition: the service's series PER_HOST times, without the
# minute stamps (a static file's stamps would age out of the head).
python3 - "$service" "$WORK/fleet" "$hosts" "$PER_HOST" <<'PY'
import re, sys
src, out, hosts, per_host = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
samples = [l for l in open(src) if l.strip() and not l.startswith('#')]
def unstamped(line):
    parts = line.rsplit(' ', 2)
    return line if len(parts) < 3 or '}' not in parts[0] else parts[0] + ' ' + parts[1] + '\n'
for h in range(hosts):
    with open(f"{out}/host{h}.txt", "w") as f:
        for j in range(per_host):
            for line in samples:
                line = unstamped(line)
                line = re.sub(r'log="[^"]*"', f'log="/var/log/jvm{j}/gc.log"', line)
                if '{' in line:
                    f.write(line.replace('{', f'{{pid="{1000 + j}",', 1))
                else:
                    name, value = line.split(' ', 1)
                    f.write(f'{name}{{pid="{1000 + j}"}} {value}')
PY
http_port="$(free_port)"
(cd "$WORK/fleet" && exec python3 -m http.server --bind 127.0.0.1 "$http_port" >/dev/null 2>&1) &
PIDS+=($!)
"$BIN" rules > "$WORK/rules.yml"
{
    echo "global:"; echo "  scrape_interval: $SCRAPE"; echo "  evaluation_interval: $SCRAPE"
    echo "rule_files: [\"$WORK/rules.yml\"]"
    echo "scrape_configs:"
    echo "  - job_name: prometheus"
    echo "    static_configs: [{targets: ['127.0.0.1:PROM_PORT']}]"
    for h in $(seq 0 $((hosts - 1))); do
        echo "  - job_name: host$h"; echo "    metrics_path: /host$h.txt"
        echo "    static_configs: [{targets: ['127.0.0.1:$http_port'], labels: {host: 'h$h', service: 'checkout'}}]"
    done
} > "$WORK/prometheus.yml"
prom_port="$(free_port)"
sed -i "s/PROM_PORT/$prom_port/" "$WORK/prometheus.yml"
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
    --web.listen-address="127.0.0.1:$prom_port" 2>"$WORK/prometheus.stderr" &
PROM=$!
PIDS+=($PROM)
q() { curl -sf --get "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1"; }
value() { q "$1" | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "none")'; }
sleep $((MINUTES * 60))
series="$(value 'prometheus_tsdb_head_series')"
rate="$(value 'rate(prometheus_tsdb_head_samples_appended_total[2m])')"
rss_kb="$(awk '/VmRSS/ {print $2}' "/proc/$PROM/status")"
scrape_bytes="$(cat "$WORK"/fleet/host*.txt | wc -c)"
printf 'head series %s (%.0f per JVM), samples/s %.0f, Prometheus RSS %d MiB (%.1f KiB per series), %d MB per round of scrapes\n' \
    "$series" "$(echo "$series / $JVMS" | bc -l)" "$rate" $((rss_kb / 1024)) \
    "$(echo "$rss_kb / $series" | bc -l)" $((scrape_bytes / 1000000))

# time_query LABEL PROMQL: best of 3 server-side timings.
time_query() {
    local best=999 t
    for _ in 1 2 3; do
        t="$(curl -sf -o /dev/null -w '%{time_total}' --get "http://127.0.0.1:$prom_port/api/v1/query" \
            --data-urlencode "query=$2")"
        best="$(python3 -c "print(min($best, $t))")"
    done
    printf '%-58s %7.1f ms\n' "$1" "$(echo "$best * 1000" | bc -l)"
}
echo "query (instant, over $JVMS JVMs)                           best of 3"
time_query "p99 pause per service, raw histogram" \
    'histogram_quantile(0.99, sum by (service, le) (rate(jvm_gc_pause_seconds_bucket[5m])))'
time_query "p99 pause per service, recording rule" 'service:jvm_gc_pause_seconds:p99_5m'
time_query "max pause per instance, raw" 'max by (instance) (pausewatch_gc_pause_max_seconds)'
time_query "max pause per instance, recording rule" 'instance:pausewatch_gc_pause_max_seconds:max1m'
time_query "canary ratio, raw (median of instances)" \
    'max by (service, instance) (pausewatch_gc_pause_max_seconds) / on (service) group_left quantile by (service) (0.5, max by (service, instance) (pausewatch_gc_pause_max_seconds))'
time_query "canary ratio, recording rule" 'service_instance:pausewatch_gc_pause_max_seconds:ratio_to_others_median5m'
time_query "stop-affected share per instance, raw" \
    'sum without (log, pid) (rate(pausewatch_slow_requests_gc_driven_total[10m])) / sum without (log, pid) (rate(pausewatch_slow_requests_total[10m]))'
time_query "stop-affected share per instance, recording rule" \
    'instance:pausewatch_slow_requests_gc_driven_per_slow_requests:ratio_rate10m'
