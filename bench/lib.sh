# Shared by the benchmark scripts (sourced): the tools they need, the
# binary under test, a work directory removed at exit with every process
# the script started, the agent's port, and a process's CPU time.

# bench_setup NAME [CARGO_ARGS...]: checks tools, sets BIN (PAUSEWATCH_BIN, or
# a release build with CARGO_ARGS such as `--features ebpf`), WORK and PIDS,
# installs the cleanup.
bench_setup() {
    local name="$1" tool
    shift
    for tool in python3 tail getconf; do
        command -v "$tool" >/dev/null || { echo "$name: $tool is required" >&2; exit 1; }
    done
    if [[ -n "${PAUSEWATCH_BIN:-}" ]]; then
        BIN="$PAUSEWATCH_BIN"
    else
        (cd "$ROOT" && cargo build --release --quiet --bin pausewatch "$@")
        BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/pausewatch"
    fi
    WORK="$(mktemp -d "${TMPDIR:-/tmp}/pausewatch-$name.XXXXXX")"
    PIDS=()
    trap bench_cleanup EXIT
}

bench_cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}

# A TCP port free on 127.0.0.1 now (the agent or server started next binds it).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The port of the agent under test: PAUSEWATCH_PORT (a firewall, a port kept
# for the run), else a free one.
agent_port() {
    if [[ -n "${PAUSEWATCH_PORT:-}" ]]; then echo "$PAUSEWATCH_PORT"; else free_port; fi
}

# discovery_config INTERVAL REGEX: writes $WORK/pausewatch.toml for an agent on
# a free port (sets PORT) that discovers, every INTERVAL, only the JVMs whose
# command line matches REGEX (a TOML literal string: no single quote).
discovery_config() {
    PORT="$(agent_port)"
    cat > "$WORK/pausewatch.toml" <<TOML
listen = "127.0.0.1:$PORT"
checkpoint_dir = "$WORK/checkpoint"
[discovery]
interval = "$1"
include = ['$2']
TOML
}

# utime + stime of a process, in clock ticks (fields 14 and 15 of /proc/PID/stat;
# the command name in field 2 may hold spaces, so count from its closing paren).
cpu_ticks() {
    local stat rest
    read -r stat < "/proc/$1/stat"
    rest="${stat##*) }"
    local -a f=($rest)
    echo $((f[11] + f[12]))
}

# CPU time of all of a process's threads, in nanoseconds (the first field of
# each /proc/PID/task/TID/schedstat): finer than cpu_ticks' 10 ms.
cpu_ns() {
    local total=0 task run _
    for task in /proc/"$1"/task/*/schedstat; do
        read -r run _ < "$task" 2>/dev/null || continue
        total=$((total + run))
    done
    echo "$total"
}
