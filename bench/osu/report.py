#!/usr/bin/env python3
"""The "## OSU micro-benchmarks" section of docs/BENCHMARKS.md from a
bench/osu/run.sh results.jsonl: per program and placement, the medians of
MPICH, BCS-MPI (rank writes) and BCS-MPI through the daemons at each size,
and BCS-MPI's speed as a share of MPICH's (bandwidth over bandwidth, latency
over latency inverted, so 1.0x is MPICH's speed and more is faster)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import benchdoc  # noqa: E402

USAGE = "usage: report.py RESULTS.jsonl BENCHMARKS.md\n"
SIZES = [8, 1024, 65536, 262144, 1048576, 2097152, 4194304]
BIG = (262144, 4194304)  # the range the targets name
TARGET = {"nodes": 0.7, "node": 0.8}
PLACE = {"nodes": "2 ranks on 2 nodes, tcp", "node": "2 ranks on one node"}
PEER = {"nodes": "MPICH over tcp", "node": "MPICH, shared memory"}


def size_name(s):
    if s >= 1 << 20:
        return "%d MiB" % (s >> 20)
    if s >= 1024:
        return "%d KiB" % (s >> 10)
    return "%d B" % s


def fmt(v, unit):
    if v is None:
        return "–"
    if unit == "us":
        return "%.0f µs" % v if v >= 100 else "%.1f µs" % v
    return "%.0f" % v if v >= 100 else "%.2f" % v


def speed(bcs, mpich, unit):
    """BCS-MPI's speed over MPICH's: >1 is faster."""
    return benchdoc.ratio(mpich, bcs) if unit == "us" else benchdoc.ratio(bcs, mpich)


def mark(x, limit, size):
    s = benchdoc.fmt_ratio(x)
    if x is not None and BIG[0] <= size <= BIG[1]:
        s += " ✓" if x >= limit else " ✗"
    return s


def main():
    rows, doc, shown = benchdoc.report_args(USAGE)
    meta = next(r for r in rows if r.get("bench") == "meta")
    end = next((r for r in rows if r.get("bench") == "end"), {})
    res = [r for r in rows if r.get("bench") == "osu" and "value" in r]
    fails = [r for r in rows if r.get("bench") == "osu" and "error" in r]
    vals = {}
    for r in res:
        vals.setdefault((r["prog"], r["place"], r["impl"], r["size"]), []).append(r["value"])
    progs = [p for p in meta["progs"].split() if any(r["prog"] == p for r in res)]
    places = [p for p in meta["places"].split() if any(r["place"] == p for r in res)]
    out = ["## OSU micro-benchmarks (bench/osu)", ""]
    out.append(benchdoc.header("make bench-osu OSU=PATH", "bench/osu/report.py", shown,
                               {**benchdoc.host_meta(), "date": meta["date"], "commit": meta["commit"]},
                               meta["load1_start"]))
    out.append("")
    out.append(
        "Method: OSU's own sources (version %s, given by path; nothing of them is kept here) "
        "built twice, with `bcs-mpicc` and with MPICH's `mpicc` (%s), and run in the same "
        "run, %s repetition(s), alternating which goes first; each cell the median of the "
        "repetitions. BCS-MPI at %d µs slices on fresh 2-node `tcp;ofi_rxm` clusters: *rank "
        "writes* is the default (messages of 64 KiB or more between nodes go from the sending "
        "rank's endpoint into the receiving rank), *daemons* is `--bcs-rank-writes 0` (every "
        "byte through both node daemons, tagged). MPICH over tcp: `MPIR_CVAR_NOLOCAL=1 "
        "UCX_TLS=tcp,self UCX_NET_DEVICES=lo`. Iterations are cut from OSU's defaults for "
        "both builds alike (`bench/osu/run.sh`). *Speed* is BCS-MPI's over MPICH's (bandwidth "
        "over bandwidth; latency inverted), so 1.00x is MPICH's and more is faster. Targets, "
        "from 256 KiB to 4 MiB: ≥ %.1fx between nodes, ≥ %.1fx on one node."
        % (meta.get("osu") or "?", meta.get("mpich", "").strip() or "?", meta["reps"],
           meta["timeslice_us"], TARGET["nodes"], TARGET["node"]))
    out.append("")
    for prog in progs:
        unit = next(r["unit"] for r in res if r["prog"] == prog)
        for place in places:
            have = sorted({s for (p, pl, _i, s) in vals if p == prog and pl == place})
            sizes = [s for s in SIZES if s in have]
            if not sizes:
                continue
            med = {(i, s): benchdoc.med(vals.get((prog, place, i, s), []))
                   for i in ("mpich", "bcs", "bcs-daemons") for s in have}
            daemons = any(med[("bcs-daemons", s)] is not None for s in sizes)
            head = ["size", PEER[place], "BCS-MPI", "speed"]
            if daemons:
                head += ["BCS-MPI, daemons", "speed"]
            table = []
            for s in sizes:
                m, b = med[("mpich", s)], med[("bcs", s)]
                row = [size_name(s), fmt(m, unit), fmt(b, unit),
                       mark(speed(b, m, unit), TARGET[place], s)]
                if daemons:
                    d = med[("bcs-daemons", s)]
                    row += [fmt(d, unit), benchdoc.fmt_ratio(speed(d, m, unit))]
                table.append(row)
            out.append("**%s**, %s (%s):" % (prog, PLACE[place], "MB/s" if unit == "MB/s" else "latency"))
            out.append("")
            out.append(benchdoc.table(head, table))
            if unit == "MB/s":
                big = [s for s in have if BIG[0] <= s <= BIG[1]]
                seq = [med[("bcs", s)] for s in big]
                falls = [(size_name(a), size_name(c)) for a, c, x, y in
                         zip(big, big[1:], seq, seq[1:]) if x is not None and y is not None and y < x]
                out.append("")
                out.append("BCS-MPI's bandwidth from 256 KiB to 4 MiB %s." % (
                    "never falls as messages grow ✓" if not falls else
                    "falls: " + ", ".join("%s → %s" % f for f in falls) + " ✗"))
            out.append("")
    out.append("Failed runs: %d%s." % (len(fails), "" if not fails else " (" + "; ".join(
        "%s %s %s: %s" % (r["impl"], r["place"], r["prog"], r["error"]) for r in fails[:5]) + ")"))
    if end:
        out.append("")
        out.append("Load at the end: %s." % end.get("load1_end"))
    benchdoc.replace_section(doc, "OSU micro-benchmarks (bench/osu)", "\n".join(out).rstrip() + "\n")


if __name__ == "__main__":
    main()
