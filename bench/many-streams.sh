#!/usr/bin/env bash
# The agent on a host with many JVMs: its CPU time and what it writes to its
# checkpoint, beside `tail -F` on the same files. See bench/README.md.
#
#   bench/many-streams.sh live      # STREAMS logs written live, RATE lines/s in all
#   bench/many-streams.sh idle      # STREAMS uptime-only logs whose JVM is gone
#   bench/many-streams.sh requests  # one GC log and its access log at REQUESTS/s
#
# Environment overrides:
#   STREAMS=200          logs followed (live, idle)
#   RATE=1330            lines per second over all logs (live)
#   REQUESTS=800         access-log lines per second (requests)
#   SECONDS_MEASURED=60  length of the window
#   HISTORY_MINUTES=0    live: each log starts with a pause a minute for this many past minutes
#   SCRAPE_EVERY=        seconds between scrapes of /metrics in the window (none by default;
#                        the responses then count in the bytes written)
#   LATENCY_PROBES=0     live: after the window, this many lines written one at a time to
#                        4 more logs that only they write to, each timed from its write() to
#                        the first answer of /api/v1/minutes that shows it (p50, p99, max)
#   API_CALLS=0          live: after the window, /api/v1/minutes this many times with its
#                        defaults and as many for the whole day of every stream (the old
#                        default), alternated: bytes and agent CPU per call
#   PAUSEWATCH_BIN=...   use this binary instead of building target/release/pausewatch
#   OTLP_ENDPOINT=...    also push over OTLP (http/protobuf) to this receiver
#   OTLP_INTERVAL=15s    its export interval
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODE="${1:-live}"
STREAMS="${STREAMS:-200}"
RATE="${RATE:-1330}"
REQUESTS="${REQUESTS:-800}"
SECONDS_MEASURED="${SECONDS_MEASURED:-60}"
HISTORY_MINUTES="${HISTORY_MINUTES:-0}"
SCRAPE_EVERY="${SCRAPE_EVERY:-}"
API_CALLS="${API_CALLS:-0}"
LATENCY_PROBES="${LATENCY_PROBES:-0}"
# The agent reads a history of 1,440 minutes (about 2 pauses each) of 200
# logs in about 20 s.
WARMUP_SECONDS=$((5 + STREAMS * HISTORY_MINUTES / 10000))

case "$MODE" in live | idle | requests) ;; *) echo "usage: $0 live|idle|requests" >&2; exit 2 ;; esac
source "$ROOT/bench/lib.sh"
bench_setup many-streams

# The writers: one write() per line, as HotSpot and web servers do.
cat > "$WORK/write.py" <<'PY'
import datetime, os, random, sys, time

def stamp(now):
    return datetime.datetime.fromtimestamp(now, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%f")[:-3] + "+0000"

def gc_lines(paths, rate, history):
    """Round-robin over the logs: a G1 pause and its CPU line, `rate` lines/s in all,
    after `history` minutes of the past with 1 to 3 pauses each, of varied
    length and heap, as a busy JVM's minutes differ from one to the next."""
    fds = [os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) for p in paths]
    started = time.time()
    for i, fd in enumerate(fds):
        varied = random.Random(i)
        os.write(fd, ("[%s][1000ms][info][gc] Using G1\n" % stamp(started - 60 * history)).encode())
        lines = []
        gc_id = 0
        for m in range(history):
            for p in range(varied.randint(1, 3)):
                at, uptime = started - 60 * (history - m) + 15 * p, 1000 + 60000 * m + 15000 * p
                after = varied.randint(4, 90)
                lines.append("[%s][%dms][info][gc] GC(%d) Pause Young (Normal) (G1 Evacuation Pause) %dM->%dM(128M) %.3fms\n"
                             "[%s][%dms][info][gc,cpu] GC(%d) User=0.01s Sys=0.00s Real=0.00s\n"
                             % (stamp(at), uptime, gc_id, after + 24, after, varied.uniform(0.3, 40.0),
                                stamp(at), uptime, gc_id))
                gc_id += 1
        os.write(fd, "".join(lines).encode())
    n = 0
    while True:
        due = started + n / rate
        now = time.time()
        if due > now:
            time.sleep(due - now)
        fd = fds[(n // 2) % len(fds)]
        gc_id = 3 * history + n // (2 * len(fds))
        uptime = 1000 + 60000 * history + int((time.time() - started) * 1000)
        if n % 2 == 0:
            text = "GC(%d) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(128M) 3.210ms" % gc_id
            tags = "gc"
        else:
            text = "GC(%d) User=0.01s Sys=0.00s Real=0.00s" % gc_id
            tags = "gc,cpu"
        os.write(fd, ("[%s][%dms][info][%s] %s\n" % (stamp(time.time()), uptime, tags, text)).encode())
        n += 1

def requests(path, rate):
    """nginx-style lines with $request_time and $msec, `rate` lines/s."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    started = time.time()
    n = 0
    while True:
        due = started + n / rate
        now = time.time()
        if due > now:
            time.sleep(due - now)
        now = time.time()
        clf = datetime.datetime.fromtimestamp(now, datetime.timezone.utc).strftime("%d/%b/%Y:%H:%M:%S +0000")
        line = '127.0.0.1 - - [%s] "GET /price HTTP/1.1" 200 512 "-" "bench" 0.%03d %.3f\n' % (
            clf, 1 + n % 9, now)
        os.write(fd, line.encode())
        n += 1

mode = sys.argv[1]
if mode == "gc":
    gc_lines(sys.argv[4:], float(sys.argv[2]), int(sys.argv[3]))
else:
    requests(sys.argv[3], float(sys.argv[2]))
PY

mkdir -p "$WORK/logs"
PORT=$(agent_port)
{
    echo "listen = \"127.0.0.1:$PORT\""
    echo "checkpoint_dir = \"$WORK/checkpoint\""
} > "$WORK/pausewatch.toml"
FILES=()
case "$MODE" in
    live | idle)
        for i in $(seq 1 "$STREAMS"); do
            file="$WORK/logs/jvm-$i/gc.log"
            mkdir -p "$(dirname "$file")"
            if [[ "$MODE" == idle ]]; then
                # The JDK's default decorations (uptime only), a JVM long gone.
                printf '[0.010s][info][gc] Using G1\n[0.207s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 14M->12M(128M) 7.033ms\n' > "$file"
            else
                : > "$file"
            fi
            FILES+=("$file")
        done
        # The latency probes' logs: a JVM whose only lines are the probes'.
        PROBED=()
        if [[ "$MODE" == live ]] && ((LATENCY_PROBES > 0)); then
            for i in 1 2 3 4; do
                file="$WORK/logs/jvm-probed-$i/gc.log"
                mkdir -p "$(dirname "$file")"
                printf '[%s][1000ms][info][gc] Using G1\n' "$(date -u +%Y-%m-%dT%H:%M:%S.000+0000)" > "$file"
                PROBED+=("$file")
            done
        fi
        printf '[[gc_log]]\npath = "%s/logs/jvm-*/gc.log"\n' "$WORK" >> "$WORK/pausewatch.toml"
        ;;
    requests)
        FILES=("$WORK/logs/gc.log" "$WORK/logs/access.log")
        : > "${FILES[0]}"
        : > "${FILES[1]}"
        printf '[[gc_log]]\npath = "%s"\n[[access_log]]\npath = "%s"\nformat = "nginx"\n' \
            "${FILES[0]}" "${FILES[1]}" >> "$WORK/pausewatch.toml"
        ;;
esac

if [[ -n "${OTLP_ENDPOINT:-}" ]]; then
    printf '[otlp]\nendpoint = "%s"\ninterval = "%s"\n' "$OTLP_ENDPOINT" "${OTLP_INTERVAL:-15s}" \
        >> "$WORK/pausewatch.toml"
fi

"$BIN" run --config "$WORK/pausewatch.toml" 2> "$WORK/agent.stderr" &
AGENT=$!
PIDS+=("$AGENT")
case "$MODE" in
    live)
        python3 "$WORK/write.py" gc "$RATE" "$HISTORY_MINUTES" "${FILES[@]}" &
        PIDS+=($!)
        ;;
    requests)
        python3 "$WORK/write.py" gc 20 0 "${FILES[0]}" &
        PIDS+=($!)
        python3 "$WORK/write.py" requests "$REQUESTS" "${FILES[1]}" &
        PIDS+=($!)
        ;;
esac
tail -q -F "${FILES[@]}" > /dev/null 2>&1 &
TAIL=$!
PIDS+=("$TAIL")
sleep "$WARMUP_SECONDS"

# CPU in nanoseconds (schedstat): 10 ms ticks cannot resolve one quiet log.
TICKS=1000000000
# Bytes the agent made the kernel write to storage (checkpoints; write_bytes
# of /proc/PID/io, 0 on tmpfs), and all it wrote with write(2), sockets
# included (wchar).
written() { awk '$1 == "write_bytes:" { print $2 }' "/proc/$1/io"; }
syscall_written() { awk '$1 == "wchar:" { print $2 }' "/proc/$1/io"; }

scrape() { curl -s -o /dev/null "127.0.0.1:$PORT/metrics"; }
agent0=$(cpu_ns "$AGENT"); tail0=$(cpu_ns "$TAIL"); bytes0=$(written "$AGENT"); calls0=$(syscall_written "$AGENT")
if [[ -n "$SCRAPE_EVERY" ]]; then
    end=$((SECONDS + SECONDS_MEASURED))
    while ((SECONDS < end)); do scrape; sleep "$SCRAPE_EVERY"; done
else
    sleep "$SECONDS_MEASURED"
fi
agent1=$(cpu_ns "$AGENT"); tail1=$(cpu_ns "$TAIL"); bytes1=$(written "$AGENT"); calls1=$(syscall_written "$AGENT")
hwm=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$AGENT/status")
rss=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$AGENT/status")
streams=$(curl -s "127.0.0.1:$PORT/healthz" 2>/dev/null || python3 -c "
import socket; s = socket.create_connection(('127.0.0.1', $PORT)); s.sendall(b'GET /healthz HTTP/1.0\r\n\r\n'); print(s.makefile().read().split('\r\n\r\n')[1])")

python3 - "$MODE" "$SECONDS_MEASURED" "$TICKS" $((agent1 - agent0)) $((tail1 - tail0)) $((bytes1 - bytes0)) $((calls1 - calls0)) "$hwm" "$rss" "$streams" <<'PY'
import sys
mode, seconds, ticks, agent, tail, written, calls, hwm, rss, health = sys.argv[1:]
seconds, ticks, agent, tail, written, calls, hwm = float(seconds), float(ticks), int(agent), int(tail), int(written), int(calls), int(hwm)
print("pausewatch on many streams: %s, %.0f s window, %s" % (mode, seconds, health))
print("%-36s %12s" % ("agent CPU (share of one core)", "%.3f %%" % (100 * agent / ticks / seconds)))
print("%-36s %12s" % ("tail -F CPU (share of one core)", "%.3f %%" % (100 * tail / ticks / seconds)))
print("%-36s %12s" % ("agent / tail -F", "%.2fx" % (agent / tail) if tail else "inf"))
print("%-36s %12s" % ("agent block writes (checkpoints)", "%.2f MB/min" % (written / 1e6 / seconds * 60)))
print("%-36s %12s" % ("agent write(2) bytes, sockets too", "%.2f MB/min" % (calls / 1e6 / seconds * 60)))
print("%-36s %12s" % ("agent peak RSS", "%.1f MiB" % (hwm / 1024)))
print("%-36s %12s" % ("agent RSS at the end", "%.1f MiB" % (int(rss) / 1024)))
PY
errors=$(grep -c -E ' (WARN|ERROR) ' "$WORK/agent.stderr" || true)
if (( errors > 0 )); then
    echo "agent warnings/errors ($errors), the first:" >&2
    grep -E ' (WARN|ERROR) ' "$WORK/agent.stderr" | head -5 >&2
fi

if (( LATENCY_PROBES > 0 )) && [[ "$MODE" == live ]]; then
    # From the write() of a pause line (with its CPU line, as HotSpot writes
    # them) to the first /api/v1/minutes answer, polled every 2 ms over one
    # connection, whose last minute of that log has changed.
    python3 - "$PORT" "$LATENCY_PROBES" "${PROBED[@]}" <<'PY'
import datetime, http.client, json, os, random, sys, time, urllib.parse
port, probes, paths = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
connection = http.client.HTTPConnection("127.0.0.1", port)
def last_minute(path):
    connection.request("GET", "/api/v1/minutes?limit=1&log=" + urllib.parse.quote(path))
    jvms = json.loads(connection.getresponse().read())["jvms"]
    minutes = jvms[0]["minutes"] if jvms else []
    return (minutes[-1]["start"], minutes[-1]["pause_count"]) if minutes else None
fds = {path: os.open(path, os.O_WRONLY | os.O_APPEND) for path in paths}
latencies = []
for k in range(probes):
    path = random.choice(paths)
    before = last_minute(path)
    now = time.time()
    stamp = datetime.datetime.fromtimestamp(now, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "+0000"
    uptime = 2000 + int(now * 1000) % 10**9
    lines = ("[%s][%dms][info][gc] GC(%d) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(128M) 3.210ms\n"
             "[%s][%dms][info][gc,cpu] GC(%d) User=0.01s Sys=0.00s Real=0.00s\n" % (stamp, uptime, k, stamp, uptime, k))
    written = time.monotonic()
    os.write(fds[path], lines.encode())
    while last_minute(path) == before and time.monotonic() - written < 10:
        time.sleep(0.002)
    latencies.append((time.monotonic() - written) * 1000)
    time.sleep(random.uniform(0.1, 0.3))
latencies.sort()
pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]
print("%-36s %12s" % ("line written -> figure, p50", "%.1f ms" % pick(0.5)))
print("%-36s %12s" % ("line written -> figure, p99", "%.1f ms" % pick(0.99)))
print("%-36s %12s" % ("line written -> figure, max", "%.1f ms" % latencies[-1]))
PY
fi

if (( API_CALLS > 0 )); then
    # Agent CPU per call from its threads' schedstat (nanoseconds), less what
    # it spends meanwhile without calls (measured as long right after each).
    python3 - "$AGENT" "$PORT" "$API_CALLS" <<'PY'
import glob, statistics, sys, time, urllib.request
agent, port, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def cpu_ns():
    total = 0
    for path in glob.glob("/proc/%s/task/*/schedstat" % agent):
        try:
            total += int(open(path).read().split()[0])
        except (OSError, ValueError):
            pass
    return total
def batch(query, calls):
    """Agent CPU per call over `calls` calls in a row, less the CPU it spends
    without calls for as long right after."""
    cpu0, wall0 = cpu_ns(), time.monotonic()
    for _ in range(calls):
        size = len(urllib.request.urlopen("http://127.0.0.1:%d/api/v1/minutes%s" % (port, query)).read())
    busy, wall = cpu_ns() - cpu0, time.monotonic() - wall0
    cpu1 = cpu_ns()
    time.sleep(wall)
    idle = cpu_ns() - cpu1
    return size, (busy - idle) / 1e6 / calls
queries = {"defaults": ("", 20), "the day, every stream": ("?limit=1440&page_size=1000", 1)}
results = {name: [] for name in queries}
for _ in range(calls):
    for name, (query, in_a_row) in queries.items():
        results[name].append(batch(query, in_a_row))
        time.sleep(0.2)
day_ms = statistics.median(ms for _, ms in results["the day, every stream"])
for name, runs in results.items():
    size, ms = runs[-1][0], statistics.median(ms for _, ms in runs)
    print("%-36s %12s %10s %8s" % ("/api/v1/minutes, " + name, "%.2f MB" % (size / 1e6),
                                     "%.1f ms" % ms, "%.3fx" % (ms / day_ms if day_ms else 0)))
    print("  runs (ms per call): " + " ".join("%.1f" % m for _, m in runs))
PY
fi
