# Shared by the benchmark scripts (sourced): the tools they need, the
# binary under test, a work directory removed at exit with every process
# the script started, and a process's CPU time.

# bench_setup NAME: checks tools, sets BIN, WORK and PIDS, installs the cleanup.
bench_setup() {
    local tool
    for tool in python3 tail getconf; do
        command -v "$tool" >/dev/null || { echo "$1: $tool is required" >&2; exit 1; }
    done
    if [[ -n "${PAUSEWATCH_BIN:-}" ]]; then
        BIN="$PAUSEWATCH_BIN"
    else
        (cd "$ROOT" && cargo build --release --quiet)
        BIN="$ROOT/target/release/pausewatch"
    fi
    WORK="$(mktemp -d "${TMPDIR:-/tmp}/pausewatch-$1.XXXXXX")"
    PIDS=()
    trap bench_cleanup EXIT
}

bench_cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
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
