# Sourced (not run) by the scripts that run the Java workloads in this directory:
# tests/fixtures/generate.sh, tests/latency/run.sh, parsers/benches/run.sh.
#
#   JAVAC                  javac to use [the first on PATH]
#   require_jdk VAR MAJOR  exits unless the java named by $VAR says `version "MAJOR`
#   compile_workloads DIR  compiles every tests/workload/*.java into DIR, together
#                          (the workloads share MxBeanSnapshot.java), with
#                          `javac --release 17`: the class files run on JDK 17 and later
#   quote_command ARGS...  prints the command line, shell-quoted, on one line
#                          (what the scripts write into command.txt)
# shellcheck shell=bash

WORKLOAD_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
JAVAC="${JAVAC:-$(command -v javac)}"

require_jdk() {
    local var="$1" major="$2"
    "${!var}" -version 2>&1 | grep "version \"$major" >/dev/null || {
        echo "$var=${!var} is not JDK $major" >&2
        exit 1
    }
}

compile_workloads() {
    "$JAVAC" --release 17 -d "$1" "$WORKLOAD_DIR"/*.java
}

quote_command() {
    local a line=""
    for a in "$@"; do
        if [[ "$a" =~ ^[A-Za-z0-9_./:=,+@%-]+$ ]]; then
            line+="${line:+ }$a"
        else
            line+="${line:+ }'${a//\'/\'\\\'\'}'"
        fi
    done
    printf '%s\n' "$line"
}
