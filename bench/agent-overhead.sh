#!/usr/bin/env bash
# Overhead of the pausewatch agent following a GC log written live at 1,000
# lines per second: its CPU time beside `tail -F` on the same file, its
# memory, and the delay from a pause line being written to the pause being
# visible on /metrics. See bench/README.md.
#
#   bench/agent-overhead.sh [LOG]
#
# LOG defaults to target/bench/gc-large.log (parsers/benches/run.sh records
# it), else the fixture logs concatenated. Environment overrides:
#   SECONDS_MEASURED=60   length of the CPU window
#   RATE=1000             lines per second the writer appends
#   SAMPLES=150           delay samples (probe pauses)
#   PROBE_INTERVAL_MS=200 one probe pause every this many ms
#   POLL_MS=5             /metrics polling period of the probe
#   SCRAPE_SECONDS=15     /metrics scrape period during the CPU window (as Prometheus would)
#   PAUSEWATCH_BIN=...    use this binary instead of building target/release/pausewatch
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_MEASURED="${SECONDS_MEASURED:-60}"
RATE="${RATE:-1000}"
SAMPLES="${SAMPLES:-150}"
PROBE_INTERVAL_MS="${PROBE_INTERVAL_MS:-200}"
POLL_MS="${POLL_MS:-5}"
SCRAPE_SECONDS="${SCRAPE_SECONDS:-15}"
WARMUP_SECONDS=3

source "$ROOT/bench/lib.sh"
bench_setup agent-overhead

# --- helpers (Python: HTTP, the probe, percentiles) ---------------------------
cat > "$WORK/bench.py" <<'PY'
import datetime, os, socket, sys, time

def scrape(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
    chunks = []
    while True:
        chunk = s.recv(1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    s.close()
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.") or b" 200 " not in head.split(b"\r\n")[0] + b" ":
        raise RuntimeError("bad reply: %r" % head[:100])
    return body

def total(body, family, log):
    """Sum of the samples of `family` (exact name) whose `log` label is `log`."""
    prefix = family.encode() + b"{"
    label = b'log="' + log.encode() + b'"'
    value = 0.0
    for line in body.split(b"\n"):
        if line.startswith(prefix) and label in line:
            value += float(line.rsplit(b" ", 1)[1])
    return value

def stamp(now):
    return datetime.datetime.fromtimestamp(now, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%f")[:-3] + "+0000"

def line(started, tags, message):
    now = time.time()
    uptime_ms = 1000 + int((now - started) * 1000)
    return ("[%s][%dms][info][%-12s] %s\n" % (stamp(now), uptime_ms, tags, message)).encode()

def percentile(sorted_values, p):
    """Nearest rank."""
    rank = max(1, -(-len(sorted_values) * p // 100))
    return sorted_values[int(rank) - 1]

def probe(port, log, samples, interval_ms, poll_ms, out):
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    started = time.time()
    # One write() per line, as HotSpot does.
    os.write(fd, line(started, "gc", "Using G1"))
    os.write(fd, line(started, "gc,init", "Version: 17.0.15+6-bench (release)"))
    delays, timeouts = [], 0
    baseline = total(scrape(port), "jvm_gc_pause_seconds_count", log)
    next_at = time.monotonic()
    for gc_id in range(samples):
        now = time.monotonic()
        if now < next_at:
            time.sleep(next_at - now)
        next_at = max(next_at + interval_ms / 1000, time.monotonic())
        pause = line(started, "gc", "GC(%d) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(128M) 3.210ms" % gc_id)
        cpu = line(started, "gc,cpu", "GC(%d) User=0.01s Sys=0.00s Real=0.00s" % gc_id)
        written = time.monotonic()
        os.write(fd, pause)
        os.write(fd, cpu)
        want = baseline + gc_id + 1
        while True:
            seen = total(scrape(port), "jvm_gc_pause_seconds_count", log)
            now = time.monotonic()
            if seen >= want:
                delays.append((now - written) * 1000)
                break
            if now - written > 5:
                timeouts += 1
                baseline -= 1  # this pause is lost; do not wait for it again
                break
            time.sleep(poll_ms / 1000)
    os.close(fd)
    final = total(scrape(port), "jvm_gc_pause_seconds_count", log)
    with open(out, "w") as f:
        for d in delays:
            f.write("%.3f\n" % d)
    print("probe: %d pauses written, %d seen within 5 s, %d timeouts, series count %.0f"
          % (samples, len(delays), timeouts, final), file=sys.stderr)

def main():
    command = sys.argv[1]
    if command == "ready":
        port, deadline = int(sys.argv[2]), time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if scrape(port).endswith(b"# EOF\n"):
                    return
            except OSError:
                pass
            time.sleep(0.05)
        sys.exit("agent not serving /metrics after 10 s")
    elif command == "total":
        print("%.0f" % total(scrape(int(sys.argv[2])), sys.argv[3], sys.argv[4]))
    elif command == "probe":
        probe(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5]),
              float(sys.argv[6]), sys.argv[7])
    elif command == "stats":
        values = sorted(float(v) for v in open(sys.argv[2]))
        if not values:
            print("nan nan nan 0")
        else:
            print("%.1f %.1f %.1f %d" % (percentile(values, 50), percentile(values, 99),
                                         values[-1], len(values)))

main()
PY
py() { python3 "$WORK/bench.py" "$@"; }

# --- the log the writer replays ---------------------------------------------------
# Enough lines for warm-up, the CPU window and the probe phase, with margin:
# the writer must still be writing while the probe runs.
NEEDED=$((RATE * (WARMUP_SECONDS + SECONDS_MEASURED + SAMPLES * PROBE_INTERVAL_MS / 1000 + 20)))
ONE="${1:-}"
if [[ -z "$ONE" ]]; then
    if [[ -s "$ROOT/target/bench/gc-large.log" ]]; then
        ONE="$ROOT/target/bench/gc-large.log"
    else
        ONE="$WORK/fixtures.log"
        cat "$ROOT"/tests/fixtures/jvm/*/gc.log > "$ONE"
    fi
fi
ONE_LINES=$(wc -l < "$ONE")
SOURCE="$WORK/source.log"
: > "$SOURCE"
copies=0
while (( copies == 0 || copies * ONE_LINES < NEEDED )); do
    cat "$ONE" >> "$SOURCE"
    copies=$((copies + 1))
done

# --- the agent ------------------------------------------------------------------
GC_LOG="$WORK/logs/gc.log"
PROBE_LOG="$WORK/logs/probe.log"
mkdir -p "$WORK/logs"
: > "$GC_LOG"
: > "$PROBE_LOG"
PORT=$(agent_port)
cat > "$WORK/pausewatch.toml" <<EOF
listen = "127.0.0.1:$PORT"
checkpoint_dir = "$WORK/checkpoint"

[[gc_log]]
path = "$GC_LOG"
start_at = "beginning"
labels = { service = "bench" }

[[gc_log]]
path = "$PROBE_LOG"
start_at = "beginning"
labels = { service = "probe" }
EOF
"$BIN" run --config "$WORK/pausewatch.toml" 2> "$WORK/agent.stderr" &
AGENT=$!
PIDS+=("$AGENT")
py ready "$PORT"

TICKS=$(getconf CLK_TCK)
# Whether PID runs (an exited child stays a zombie until waited for).
running() {
    local stat
    read -r stat < "/proc/$1/stat" 2>/dev/null || return 1
    [[ "${stat##*) }" != Z* ]]
}
status_kib() { awk -v key="$2:" '$1 == key { print $2 }' "/proc/$1/status"; }
secs() { python3 -c "print('%.2f' % ($1 / $TICKS))"; }

# --- phase 1: CPU beside tail -F ------------------------------------------------
echo "log: $ONE ($ONE_LINES lines; replayed $copies time(s)) at $RATE lines/s into $GC_LOG" >&2
"$BIN" replay "$SOURCE" "$GC_LOG" --lines-per-second "$RATE" --retime 2> "$WORK/replay.stderr" &
WRITER=$!
PIDS+=("$WRITER")
tail -F "$GC_LOG" > /dev/null 2>&1 &
TAIL=$!
PIDS+=("$TAIL")
sleep "$WARMUP_SECONDS"

echo "phase 1: ${SECONDS_MEASURED} s CPU window (a /metrics scrape every ${SCRAPE_SECONDS} s)" >&2
lines0=$(py total "$PORT" pausewatch_log_lines_total "$GC_LOG")
agent0=$(cpu_ticks "$AGENT")
tail0=$(cpu_ticks "$TAIL")
t0=$(date +%s%N)
elapsed=0
while (( elapsed < SECONDS_MEASURED )); do
    step=$(( SECONDS_MEASURED - elapsed < SCRAPE_SECONDS ? SECONDS_MEASURED - elapsed : SCRAPE_SECONDS ))
    sleep "$step"
    elapsed=$((elapsed + step))
    (( elapsed < SECONDS_MEASURED )) && py total "$PORT" pausewatch_log_lines_total "$GC_LOG" > /dev/null
done
agent1=$(cpu_ticks "$AGENT")
tail1=$(cpu_ticks "$TAIL")
t1=$(date +%s%N)
lines1=$(py total "$PORT" pausewatch_log_lines_total "$GC_LOG")
kill "$TAIL"
wall=$(python3 -c "print('%.2f' % (($t1 - $t0) / 1e9))")
agent_ticks=$((agent1 - agent0))
tail_ticks=$((tail1 - tail0))
lines_read=$((lines1 - lines0))

# --- phase 2: write-to-visible delay ---------------------------------------------
# The probe writes its pauses into a second log file followed by the same agent,
# while the writer keeps appending to the first: the agent is under the same load
# and the probe's lines cannot interleave with the writer's.
echo "phase 2: $SAMPLES probe pauses every ${PROBE_INTERVAL_MS} ms into $PROBE_LOG, /metrics polled every ${POLL_MS} ms" >&2
agent2=$(cpu_ticks "$AGENT")
py probe "$PORT" "$PROBE_LOG" "$SAMPLES" "$PROBE_INTERVAL_MS" "$POLL_MS" "$WORK/delays.txt"
agent3=$(cpu_ticks "$AGENT")
writer_alive=yes
running "$WRITER" || writer_alive=no
read -r p50 p99 max nsamples < <(py stats "$WORK/delays.txt")
hwm=$(status_kib "$AGENT" VmHWM)
rss=$(status_kib "$AGENT" VmRSS)
lag=$(py total "$PORT" pausewatch_log_read_lag_bytes "$GC_LOG")

# --- summary ----------------------------------------------------------------------
verdict() { if python3 -c "import sys; sys.exit(0 if ($1) else 1)"; then echo ok; else echo FAIL; fi; }
ratio=$(python3 -c "print('%.2f' % ($agent_ticks / $tail_ticks) if $tail_ticks else 'inf')")
cpu_ok=$(verdict "$tail_ticks > 0 and $agent_ticks <= 2 * $tail_ticks")
rss_ok=$(verdict "$hwm < 16 * 1024")
delay_ok=$(verdict "$nsamples >= 100 and $p99 < 250")
printf '\npausewatch agent overhead: %s lines/s for %s s (log %s)\n' "$RATE" "$wall" "$(basename "$ONE")"
printf '%-34s %14s   %-18s %s\n' "measure" "value" "target" "verdict"
printf '%-34s %14s\n' "lines read by the agent" "$lines_read ($(python3 -c "print('%.0f' % ($lines_read / $wall))")/s)"
printf '%-34s %12s s   %-18s\n' "agent CPU (user+sys)" "$(secs $agent_ticks)" ""
printf '%-34s %12s s   %-18s\n' "tail -F CPU (user+sys)" "$(secs $tail_ticks)" ""
printf '%-34s %13sx   %-18s %s\n' "agent / tail -F" "$ratio" "<= 2x" "$cpu_ok"
printf '%-34s %10s MiB   %-18s %s\n' "agent VmHWM (peak RSS, at the end)" "$(python3 -c "print('%.1f' % ($hwm / 1024))")" "< 16 MiB" "$rss_ok"
printf '%-34s %10s MiB\n' "agent VmRSS (at the end)" "$(python3 -c "print('%.1f' % ($rss / 1024))")"
printf '%-34s %11s ms\n' "delay p50 ($nsamples samples)" "$p50"
printf '%-34s %11s ms   %-18s %s\n' "delay p99" "$p99" "< 250 ms" "$delay_ok"
printf '%-34s %11s ms\n' "delay max" "$max"
printf '%-34s %12s s\n' "agent CPU during the probe phase" "$(secs $((agent3 - agent2)))"
printf '%-34s %14s\n' "read lag at the end (bytes)" "$lag"
if [[ "$writer_alive" == no ]]; then
    echo "note: the writer had finished before the probe phase ended; part of phase 2 ran without load" >&2
fi
errors=$(grep -c -E ' (WARN|ERROR) ' "$WORK/agent.stderr" || true)
if (( errors > 0 )); then
    echo "agent warnings/errors:" >&2
    grep -E ' (WARN|ERROR) ' "$WORK/agent.stderr" | head -20 >&2
fi
