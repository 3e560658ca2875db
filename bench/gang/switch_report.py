#!/usr/bin/env python3
"""Turns bench/gang/switchpath.sh's results into the "## Gang switch path"
section of docs/BENCHMARKS.md (replacing that section, keeping the rest).

usage: switch_report.py RESULTS.jsonl docs/BENCHMARKS.md
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchdoc import fmt_ratio, load, med, replace_section, table  # noqa: E402

HEADING = "Gang switch path"
TARGET_RATIO = 1.03     # T/(Ta+Tb) at 1 ms, 8 nodes, MPL 2
TARGET_SKEW_US = 200    # switch skew p99 at 1 ms, 8 nodes
TARGET_SLICE_US = 1000  # smallest timeslice followed without a missed switch
TARGET_OVERLAP = 0.02   # share of CPU time run concurrently at 10 ms
PATHS = (("arrival", "on the strobe's arrival, no wait (`--ahead 0 --switch-wait-pct 0`)"),
         ("timed", "at the slot's start from the node's timer (`--ahead 4 --switch-wait-pct 0`)"),
         ("strict", "timed, the incoming job held until the outgoing ranks are off the CPU"
                    " (`--ahead 4 --switch-wait-pct 25`, the default)"))


def ts_label(us):
    return "%g ms" % (us / 1e3) if us >= 1000 else "%d µs" % us


def us(v):
    if v is None:
        return "–"
    return "%.2f ms" % (v / 1000) if v >= 1000 else "%.0f µs" % v


def skew(t, path, q):
    return t.get("skew_%s_us" % q) if path == "arrival" else t.get("timed_skew_%s_us" % q)


def missed(t, path):
    """Switches a node did not make at its slot: for the arrival path the
    strobes it missed (it switches only on one), else the slots some node
    did not switch at or switched a whole slice late."""
    return t.get("missed_total") if path == "arrival" else t.get("timed_missed")


def build(rows, shown):
    meta = next((r for r in rows if r.get("bench") == "meta"), {})
    end = next((r for r in rows if r.get("bench") == "meta_end"), {})
    runs = [r for r in rows if r.get("bench") == "switch"]
    traces = [r for r in rows if r.get("bench") == "switch_trace"]
    over = [r for r in rows if r.get("bench") == "switch_overlap"]
    loads = [r["load1"] for r in rows if "load1" in r]
    L = ["## " + HEADING, ""]
    L.append("Command: `bench/gang/switchpath.sh` then `python3 bench/gang/switch_report.py"
             " bench/results/switch-latest/results.jsonl docs/BENCHMARKS.md` (both part of"
             " `make bench-gang`). Generated from `%s`, %s, commit %s, %s CPUs, Linux %s; 1-minute"
             " load %s–%s during the run (**a shared 2-core machine**), %s s in all." %
             (shown, meta.get("date", "?"), meta.get("commit", "?"), meta.get("nproc", "?"),
              meta.get("kernel", "?"), min(loads) if loads else "?",
              max(loads) if loads else "?", end.get("seconds", "?")))
    L.append("")
    L.append("The three ways a node daemon switches rows, side by side in one run, on an"
             " 8-node virtual cluster (MPL 2, quantum 1, daemons at SCHED_FIFO):")
    L.append("")
    for p, what in PATHS:
        L.append("- **%s**: %s;" % (p, what))
    L.append("")
    L.append("Two CPU-bound jobs of one rank per node (`gang_spin`, %d M rounds): at 1 ms alone"
             " and together (T/(Ta+Tb), median of %s), at the other timeslices together only."
             " *Skew*: per switch every node made, the last node's switch-done time − the"
             " first's (the arrival path's from the strobe lines, the others' from the timer's"
             " switch lines). *Missed*: the arrival path's strobes missed (a node switches only"
             " on one); the timed paths' slots some node did not switch at, or switched a whole"
             " slice late. *Wait*: the strict path's time from the stop to the outgoing ranks"
             " off the CPU, and how often the bound (25%% of the slice) passed first." %
             ((meta.get("work8") or 0) // 1000000, meta.get("reps", "?")))
    L.append("")
    slices = sorted({t["timeslice_us"] for t in traces})
    hdr = ["path", "timeslice", "T/(Ta+Tb)", "skew p50 / p99", "missed", "wait p50 / p99",
           "bound passed", "load"]
    out = []
    smallest = {}
    for p, _ in PATHS:
        for ts in slices:
            t = next((x for x in traces if x.get("path") == p and x["timeslice_us"] == ts), None)
            if t is None:
                continue
            rs = [r for r in runs if r.get("path") == p and r.get("timeslice_us") == ts
                  and "ratio" in r]
            rt = med([r["ratio"] for r in rs]) if rs else None
            m = missed(t, p)
            if m == 0 and not t.get("nodes_down_at_end"):
                smallest[p] = min(smallest.get(p, ts), ts)
            out.append([p, ts_label(ts),
                        fmt_ratio(rt, TARGET_RATIO) if rt is not None else "–",
                        "%s / %s" % (us(skew(t, p, "p50")), us(skew(t, p, "p99"))),
                        "%s" % m,
                        "%s / %s" % (us(t.get("strict_off_p50_us")), us(t.get("strict_off_p99_us")))
                        if p == "strict" else "–",
                        "%s" % t.get("strict_timeouts") if p == "strict" else "–",
                        "%s" % t.get("load1", "–")])
    L.append(table(hdr, out))
    L.append("")
    for p, _ in PATHS:
        s = smallest.get(p)
        L.append("- Smallest timeslice followed without a missed switch, %s: %s." %
                 (p, ts_label(s) if s else "none of those measured"))
    L.append("")
    if over:
        L.append("Strictness at a 10 ms slice: two endless jobs on the same 8 nodes, 5 s watched"
                 " from outside by `tests/cluster/gang_overlap.py`. *Sampled*: each rank's CPU"
                 " clock read every ~1 ms, the share of the two jobs' CPU time provably spent on"
                 " one node at the same time — an overestimate, since a running task's CPU clock"
                 " read from another process advances only at scheduler ticks (two processes"
                 " that never run at once measure 5-9% here). *Exact*: the same span traced by"
                 " `perf record -e sched:sched_switch -a`, from the ranks' on-CPU intervals.")
        L.append("")
        orows = []
        for p, _ in PATHS:
            o = next((x for x in over if x.get("path") == p), None)
            if not o or not isinstance(o.get("overlap"), dict):
                continue
            v = o["overlap"]
            ex = v.get("exact")
            orows.append([p, "%.2f%%" % (100 * v["concurrent"]) if v.get("concurrent") is not None
                          else "–", "%.3f%%" % (100 * ex) if ex is not None else "not traced",
                          "%s" % v.get("samples"), "%s" % o.get("load1")])
        L.append(table(["path", "sampled", "exact (perf)", "samples", "load"], orows))
        L.append("")
    L.append("### Targets (user space, 8 nodes)")
    L.append("")
    st = next((x for x in traces if x.get("path") == "strict" and x["timeslice_us"] == 1000), None)
    tt = next((x for x in traces if x.get("path") == "timed" and x["timeslice_us"] == 1000), None)
    for name, t, p in (("timed", tt, "timed"), ("strict", st, "strict")):
        if t:
            v = skew(t, p, "p99")
            L.append("- Switch skew p99 ≤ %d µs at 1 ms, %s: %s — **%s**" %
                     (TARGET_SKEW_US, name, us(v), "met" if v is not None and v <= TARGET_SKEW_US
                      else "missed"))
    for p in ("timed", "strict"):
        s = smallest.get(p)
        L.append("- Smallest timeslice followed ≤ 1 ms, %s: %s — **%s**" %
                 (p, ts_label(s) if s else "none", "met" if s and s <= TARGET_SLICE_US else "missed"))
    for p in ("timed", "strict"):
        rs = [r["ratio"] for r in runs if r.get("path") == p and r.get("timeslice_us") == 1000
              and "ratio" in r]
        if rs:
            L.append("- T/(Ta+Tb) ≤ %.2f at 1 ms, %s: %s — **%s**" %
                     (TARGET_RATIO, p, fmt_ratio(med(rs)), "met" if med(rs) <= TARGET_RATIO
                      else "missed"))
    for p in ("strict",):
        o = next((x for x in over if x.get("path") == p), None)
        if o and isinstance(o.get("overlap"), dict):
            v = o["overlap"]
            L.append("- Concurrent CPU time ≤ 2%% at 10 ms, %s: sampled %.2f%%, exact %s" %
                     (p, 100 * v["concurrent"], "%.3f%%" % (100 * v["exact"])
                      if v.get("exact") is not None else "not traced"))
    L.append("")
    return "\n".join(L)


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    rows = load(sys.argv[1])
    path = os.path.realpath(sys.argv[1])
    shown = os.path.relpath(path) if path.startswith(os.getcwd()) else sys.argv[1]
    replace_section(sys.argv[2], HEADING, build(rows, shown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
