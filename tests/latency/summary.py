#!/usr/bin/env python3
"""Summary statistics and consistency checks for a latency fixture directory.

Usage: python3 tests/latency/summary.py DIR [--check]

DIR holds what tests/latency/run.sh records: access.jsonl, access.nginx.log,
gc-events.jsonl, freezes.json, mxbeans.json, gc.log.

All arithmetic is done on integers (microseconds) so that the numbers can be
reproduced exactly:
  request interval  [start_us, start_us + dur_us]  (start = intended start from
                    access.jsonl, dur_us = duration_ms * 1000)
  GC interval       [(jvm_start_ms + start_uptime_ms) * 1000,
                     (jvm_start_ms + end_uptime_ms) * 1000]  from gc-events.jsonl
  freeze interval   [start_ms * 1000, end_ms * 1000]  from freezes.json (the
                    time read right after `kill -STOP` and right before
                    `kill -CONT`, rounded inwards: inside the real freeze)
  slow              dur_us > 50_000
  GC-attributed     length of the request interval's intersection with the union
                    of all GC intervals, times 4, >= dur_us  (overlap >= 25 %)
  percentiles       nearest rank: the ceil(p/100 * n)-th smallest latency

With --check the exit status is 1 if a consistency check fails (no request may
complete inside a freeze; requests whose intended start falls in a freeze must
complete no earlier than its end; counts must match across files) and 2 if a
freeze overlaps or is near a GC pause (see check_freezes_vs_gc); 0 otherwise.
"""

import json
import math
import re
import sys
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path

SLOW_US = 50_000
TOL_US = 1_000  # slack for the freeze checks (freezes.json is rounded inwards to ms)
NEAR_BEFORE_US = 100_000  # a GC pause >= NEAR_MIN_US must end this long before a freeze
NEAR_AFTER_US = 200_000  # ... and start this long after it
NEAR_MIN_US = 20_000


def parse_rfc3339_us(s):
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{6})Z", s)
    if not m:
        raise ValueError("bad timestamp %r" % s)
    y, mo, d, h, mi, se, us = (int(g) for g in m.groups())
    epoch = datetime(y, mo, d, h, mi, se, tzinfo=timezone.utc).timestamp()
    return int(epoch) * 1_000_000 + us


def ms3_to_int(s):
    """'12.345' -> 12345 (exact)."""
    whole, _, frac = s.partition(".")
    frac = (frac + "000")[:3]
    return int(whole) * 1000 + int(frac)


def load(d):
    d = Path(d)
    # duration_ms has exactly 3 decimals: parse the text, not a float, to stay exact
    reqs = []
    pat = re.compile(r'"start":"([^"]+)","duration_ms":([0-9]+\.[0-9]{3}),')
    for line in open(d / "access.jsonl", encoding="utf-8"):
        m = pat.search(line)
        if not m:
            raise ValueError("unexpected access.jsonl line %r" % line)
        reqs.append((parse_rfc3339_us(m.group(1)), ms3_to_int(m.group(2))))

    nginx = []
    npat = re.compile(r'^127\.0\.0\.1 - - \[([^\]]+)\] "GET /price HTTP/1\.1" 200 512 "-" "workload" (\d+\.\d{3}) (\d+\.\d{3})$')
    for line in open(d / "access.nginx.log", encoding="utf-8"):
        m = npat.match(line.rstrip("\n"))
        if not m:
            raise ValueError("unexpected nginx line %r" % line)
        rt_ms = ms3_to_int(m.group(2))
        msec = ms3_to_int(m.group(3))
        tl = datetime.strptime(m.group(1), "%d/%b/%Y:%H:%M:%S %z").timestamp()
        nginx.append((msec - rt_ms, rt_ms, msec, int(tl)))

    lines = [json.loads(l) for l in open(d / "gc-events.jsonl", encoding="utf-8") if l.strip()]
    jvm_start_ms = lines[0]["jvm_start_ms"]
    gcs = []
    for e in lines[1:]:
        gcs.append(dict(e, start_us=(jvm_start_ms + e["start_uptime_ms"]) * 1000,
                        end_us=(jvm_start_ms + e["end_uptime_ms"]) * 1000))
    gcs.sort(key=lambda e: e["start_us"])
    freezes = json.load(open(d / "freezes.json", encoding="utf-8"))
    mx = json.load(open(d / "mxbeans.json", encoding="utf-8"))
    log_pauses = parse_gc_log(d / "gc.log")
    return reqs, nginx, jvm_start_ms, gcs, freezes, mx, log_pauses


def parse_gc_log(path):
    """Pause end lines of a `time,uptime,level,tags` log: (gc id, end wall us, ms, text)."""
    out = []
    pat = re.compile(r"^\[([^\]]+)\]\[[0-9.]+s\]\[info\]\[gc +\] GC\((\d+)\) (Pause [^)]*\)).* ([0-9.]+)ms$")
    if not path.exists():
        return out
    for line in open(path, encoding="utf-8"):
        m = pat.match(line.rstrip("\n"))
        if m:
            t = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
            out.append((int(m.group(2)), round(t * 1000) * 1000, float(m.group(4)), m.group(3)))
    return out


def union(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def overlap(s, e, merged):
    tot = 0
    for a, b in merged:
        if b <= s:
            continue
        if a >= e:
            break
        tot += min(b, e) - max(a, s)
    return tot


def pct(sorted_vals, p):
    n = len(sorted_vals)
    k = max(1, math.ceil(Fraction(str(p)) * n / 100))  # exact: 0.999 * 6000 is not 5994 in floats
    return sorted_vals[k - 1]


def iso_ms(us):
    return datetime.fromtimestamp(us / 1e6, tz=timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def fmt_ms(us):
    return "%.3f" % (us / 1000.0)


def check_freezes_vs_gc(freezes, gcs):
    """Problems between freezes and GC pauses (by the GC notifications)."""
    notes = []
    for i, f in enumerate(freezes):
        fs, fe = f["start_ms"] * 1000, f["end_ms"] * 1000
        for g in gcs:
            gs, ge = g["start_us"], g["end_us"]
            if gs < fe and ge > fs:
                notes.append("freeze %d [%d, %d] OVERLAPS GC %s #%d [%d, %d] ms"
                             % (i + 1, f["start_ms"], f["end_ms"], g["gc"], g["id"], gs // 1000, ge // 1000))
            elif ge - gs >= NEAR_MIN_US and ((0 <= fs - ge < NEAR_BEFORE_US) or (0 <= gs - fe < NEAR_AFTER_US)):
                notes.append("freeze %d [%d, %d] is near GC %s #%d [%d, %d] ms (%d ms)"
                             % (i + 1, f["start_ms"], f["end_ms"], g["gc"], g["id"], gs // 1000, ge // 1000,
                                g["duration_ms"]))
    return notes


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    check = "--check" in argv
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 64
    d = args[0]
    reqs, nginx, jvm_start_ms, gcs, freezes, mx, log_pauses = load(d)
    failures = []

    n = len(reqs)
    lat = sorted(du for _, du in reqs)
    gc_merged = union((g["start_us"], g["end_us"]) for g in gcs)
    fr = [(f["start_ms"] * 1000, f["end_ms"] * 1000) for f in freezes]
    fr_merged = union(fr)

    print("fixture: %s" % d)
    print("requests: %d (scheduled %s, rate %s/s)" % (n, mx.get("requests_scheduled"), mx.get("rate_per_second")))
    first = min(s for s, _ in reqs)
    last = max(s + du for s, du in reqs)
    print("first intended start: %d us (%s), last completion: %d us (%s)" % (first, iso_ms(first), last, iso_ms(last)))
    ranks = [max(1, math.ceil(Fraction(str(p)) * n / 100)) for p in (50, 99, 99.9)]
    print("latency ms: p50=%s p99=%s p99.9=%s max=%s (nearest rank: the %s-th smallest of %d)"
          % (fmt_ms(pct(lat, 50)), fmt_ms(pct(lat, 99)), fmt_ms(pct(lat, 99.9)), fmt_ms(lat[-1]),
             "/".join(str(r) for r in ranks), n))
    slow = [(s, du) for s, du in reqs if du > SLOW_US]
    print("slow requests (> 50 ms): %d" % len(slow))

    # ---- GC pauses
    by_gc = {}
    for g in gcs:
        by_gc.setdefault(g["gc"], []).append(g)
    print("GC notifications: %d (%s), jvm_start_ms=%d"
          % (len(gcs), ", ".join("%s: %d" % (k, len(v)) for k, v in sorted(by_gc.items())), jvm_start_ms))
    in_run = [g for g in gcs if g["end_us"] > first]
    print("GC notifications during the requests (ending after the first intended start): %d" % len(in_run))
    long_gcs = [g for g in gcs if g["duration_ms"] > 50]
    long_in_run = [g for g in long_gcs if g["end_us"] > first]
    print("GC pauses > 50 ms (notification duration_ms): %d, %d of them during the requests" % (len(long_gcs), len(long_in_run)))
    for g in long_gcs:
        slow_in = sum(1 for s, du in slow if overlap(s, s + du, [[g["start_us"], g["end_us"]]]) > 0)
        print("  %-12s #%-3d %-13s uptime [%d, %d] ms  wall [%d, %d] ms (%s-%s UTC)  %d ms  slow requests overlapping: %d%s"
              % (g["gc"], g["id"], g["cause"], g["start_uptime_ms"], g["end_uptime_ms"], g["start_us"] // 1000,
                 g["end_us"] // 1000, iso_ms(g["start_us"]), iso_ms(g["end_us"]), g["duration_ms"], slow_in,
                 "" if g["end_us"] > first else "  (before the first request)"))
    log_long = [p for p in log_pauses if p[2] > 50]
    print("gc.log pauses: %d, > 50 ms: %d (%s)"
          % (len(log_pauses), len(log_long), ", ".join("GC(%d) %s %.3fms" % (p[0], p[3], p[2]) for p in log_long)))

    # ---- freezes
    for i, (fs, fe) in enumerate(fr):
        delayed = [(s, du) for s, du in slow if overlap(s, s + du, [[fs, fe]]) > 0]
        attributed = [(s, du) for s, du in slow if 4 * overlap(s, s + du, [[fs, fe]]) >= du]
        in_freeze = [(s, du) for s, du in reqs if fs <= s < fe]
        print("freeze %d: [%d, %d] ms (%s-%s UTC, %d ms): intended starts inside: %d, slow requests overlapping: %d, "
              "slow requests >= 25%% inside: %d, max latency among them: %s ms"
              % (i + 1, fs // 1000, fe // 1000, iso_ms(fs), iso_ms(fe), (fe - fs) // 1000, len(in_freeze), len(delayed),
                 len(attributed), fmt_ms(max((du for _, du in delayed), default=0))))

    # ---- attribution of slow requests
    gc_attr = [(s, du) for s, du in slow if 4 * overlap(s, s + du, gc_merged) >= du]
    fr_attr = [(s, du) for s, du in slow if 4 * overlap(s, s + du, fr_merged) >= du]
    both = [r for r in gc_attr if r in set(fr_attr)]
    gc_any = [(s, du) for s, du in slow if overlap(s, s + du, gc_merged) > 0]
    fr_any = [(s, du) for s, du in slow if overlap(s, s + du, fr_merged) > 0]
    neither = [(s, du) for s, du in slow if (s, du) not in set(gc_any) and (s, du) not in set(fr_any)]
    print("slow requests overlapping a GC pause by >= 25%% of their duration: %d" % len(gc_attr))
    print("slow requests overlapping a freeze by >= 25%% of their duration: %d" % len(fr_attr))
    print("slow requests counted in both: %d" % len(both))
    print("slow requests overlapping any GC pause: %d, any freeze: %d, neither: %d"
          % (len(gc_any), len(fr_any), len(neither)))
    for s, du in neither[:10]:
        print("  unexplained: start %s UTC, %s ms" % (iso_ms(s), fmt_ms(du)))
    slow_gc_lt = [(s, du) for s, du in gc_any if 4 * overlap(s, s + du, gc_merged) < du]
    if slow_gc_lt:
        print("slow requests overlapping a GC pause by < 25%%: %d" % len(slow_gc_lt))

    # ---- consistency checks
    if mx.get("requests") is not None and mx["requests"] != n:
        failures.append("mxbeans.json requests=%s but access.jsonl has %d lines" % (mx["requests"], n))
    if len(nginx) != n:
        failures.append("access.nginx.log has %d lines, access.jsonl %d" % (len(nginx), n))
    # nginx: start (msec - request_time) equals the JSON start truncated to ms, line by line
    for (s, du), (nstart, rt, msec, tl) in zip(reqs, nginx):
        if nstart != s // 1000 or msec != (s + du) // 1000 or tl != msec // 1000:
            failures.append("nginx line does not match JSON line: %r vs %r" % ((s, du), (nstart, rt, msec, tl)))
            break
    # gc-events.jsonl is closed before the snapshot, whose own allocation can
    # start one more collection: it is in gc.log and the final count, not in
    # the notifications.
    after_close = 0
    for c in mx["collectors"]:
        got = len(by_gc.get(c["name"], []))
        if got != c["count_at_close"]:
            failures.append("%s: %d notifications in gc-events.jsonl, MXBean count %d when it was closed"
                            % (c["name"], got, c["count_at_close"]))
        after_close += c["count"] - c["count_at_close"]
    if after_close:
        print("collections after gc-events.jsonl was closed: %d" % after_close)
    # JDK 17 sends no notification for G1's Remark and Cleanup pauses
    notified_pauses = [p for p in log_pauses if not re.match(r"Pause (Remark|Cleanup)", p[3])]
    if log_pauses and len(notified_pauses) != len(gcs) + after_close:
        failures.append("gc.log has %d pauses (other than Remark/Cleanup), gc-events.jsonl %d notifications"
                        " and %d collections followed its close" % (len(notified_pauses), len(gcs), after_close))
    worst_margin = None
    for i, (fs, fe) in enumerate(fr):
        done_inside = [(s, du) for s, du in reqs if fs + TOL_US < s + du < fe - TOL_US]
        if done_inside:
            failures.append("freeze %d: %d requests completed inside the freeze" % (i + 1, len(done_inside)))
        for s, du in reqs:
            if fs <= s < fe:
                margin = s + du - fe  # must be >= -TOL_US: latency >= remaining freeze time
                worst_margin = margin if worst_margin is None else min(worst_margin, margin)
                if margin < -TOL_US:
                    failures.append("freeze %d: request starting at %d us completed %d us before the freeze ended"
                                    % (i + 1, s, -margin))
        # requests intended just before the freeze: completed before it, or after it
        before = [(s, du) for s, du in reqs if fs - 50_000 <= s < fs]
        straddle = [(s, du) for s, du in before if s + du >= fs - TOL_US]
        bad = [(s, du) for s, du in straddle if fs + TOL_US < s + du < fe - TOL_US]
        if bad:
            failures.append("freeze %d: %d requests started just before completed inside" % (i + 1, len(bad)))
        print("freeze %d check: requests intended in the 50 ms before: %d, of which in flight at the freeze: %d "
              "(all completed after it: %s)" % (i + 1, len(before), len(straddle), "yes" if not bad else "NO"))
    if worst_margin is not None:
        print("freeze check: requests starting inside a freeze complete %s ms after its recorded end at the earliest"
              % fmt_ms(worst_margin))
    notes = check_freezes_vs_gc(freezes, gcs)
    for nt in notes:
        print("NOTE: " + nt)
    if not notes:
        print("freezes vs GC: no GC notification overlaps a freeze; no GC pause >= %d ms ends within %d ms before "
              "or starts within %d ms after one" % (NEAR_MIN_US // 1000, NEAR_BEFORE_US // 1000, NEAR_AFTER_US // 1000))
    for f in failures:
        print("FAILED: " + f)
    if not failures:
        print("consistency checks: ok")
    if check:
        if failures:
            return 1
        if notes:
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
