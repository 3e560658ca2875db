#!/usr/bin/env python3
"""The "## CoMD" section of docs/BENCHMARKS.md from a bench/comd/run.sh
results.jsonl: each implementation's median CoMD time, its ratio to MPICH's
(over tcp and with shared memory), and whether every run's energies at the
last step are the same."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import benchdoc  # noqa: E402

USAGE = "usage: report.py RESULTS.jsonl BENCHMARKS.md\n"
TARGET = 1.1
NAMES = [("bcs", "BCS-MPI, rank writes (default)"), ("bcs-daemons", "BCS-MPI, daemons' path"),
         ("mpich-tcp", "MPICH over tcp"), ("mpich-shm", "MPICH, shared memory")]


def main():
    rows, doc, shown = benchdoc.report_args(USAGE)
    meta = next(r for r in rows if r.get("bench") == "meta")
    end = next((r for r in rows if r.get("bench") == "end"), {})
    res = [r for r in rows if r.get("bench") == "comd" and "time_s" in r]
    fails = [r for r in rows if r.get("bench") == "comd" and "error" in r]
    times = {i: [r["time_s"] for r in res if r["impl"] == i] for i, _ in NAMES}
    med = {i: benchdoc.med(v) for i, v in times.items()}
    energies = {r["energies"] for r in res}
    table = []
    for impl, name in NAMES:
        if not times[impl]:
            continue
        t = med[impl]
        cells = [name, "%.2f s (%.2f–%.2f s)" % (t, min(times[impl]), max(times[impl])),
                 str(len(times[impl]))]
        for peer in ("mpich-tcp", "mpich-shm"):
            x = benchdoc.ratio(t, med[peer])
            cells.append(benchdoc.fmt_ratio(x, TARGET if impl.startswith("bcs") else None))
        table.append(cells)
    out = ["## CoMD (bench/comd)", ""]
    out.append(benchdoc.header("make bench-comd COMD=PATH", "bench/comd/report.py", shown,
                               {**benchdoc.host_meta(), "date": meta["date"], "commit": meta["commit"]},
                               meta["load1_start"]))
    out.append("")
    out.append(
        "Method: CoMD's own sources (commit %s, given by path; nothing of them is kept here) built "
        "twice with its `Makefile.vanilla` at `-O2`, with `bcs-mpicc` and with MPICH's `mpicc` (%s); "
        "`CoMD-mpi %s` (%d ranks), %s repetition(s), alternating which goes first. BCS-MPI runs "
        "%d ranks on %d virtual nodes over `tcp;ofi_rxm` at %d µs slices, a fresh cluster per run; "
        "MPICH runs over tcp (`MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self UCX_NET_DEVICES=lo`) and with "
        "its shared memory. Times are CoMD's own `total` (the slowest rank), medians and in "
        "brackets their range. Target: ≤ %.1fx MPICH's time with the same energies."
        % (meta.get("comd") or "?", meta.get("mpich", "").strip() or "?", meta["args"],
           meta["ranks"], meta["reps"], meta["ranks"], meta["ranks"], meta["timeslice_us"], TARGET))
    out.append("")
    out.append(benchdoc.table(["implementation", "CoMD time", "n", "/ MPICH over tcp",
                               "/ MPICH, shared memory"], table))
    out.append("")
    if len(energies) == 1:
        out.append("Energies at the last step (total, potential, kinetic), every run: `%s` ✓."
                   % next(iter(energies)))
    else:
        out.append("Energies at the last step differ between runs ✗: %s."
                   % "; ".join("`%s`" % e for e in sorted(energies)))
    out.append("")
    out.append("Failed runs: %d%s. Load at the end: %s." % (
        len(fails), "" if not fails else " (" + "; ".join(
            "%s: %s" % (r["impl"], r["error"]) for r in fails[:5]) + ")", end.get("load1_end", "?")))
    benchdoc.replace_section(doc, "CoMD (bench/comd)", "\n".join(out).rstrip() + "\n")


if __name__ == "__main__":
    main()
