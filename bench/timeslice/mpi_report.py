#!/usr/bin/env python3
"""The "## Timeslice and BCS-MPI" section of docs/BENCHMARKS.md from the
results of bench/timeslice/mpi.sh.
usage: mpi_report.py RESULTS.jsonl DOC.md"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from benchdoc import load, med, replace_section, table  # noqa: E402

APPS = [("sweep", "sweep"), ("sweep_nb", "sweep --nb"), ("stencil", "stencil")]
DEFAULT = 10000


def ms(us):
    return "%g ms" % (us / 1000)


def secs(v):
    return "–" if v is None else "%.2f s" % v


def pct(v):
    return "–" if v is None else "%.0f %%" % v


def main():
    rows = load(sys.argv[1])
    runs = [r for r in rows if r.get("bench") == "run" and r.get("rc") == 0]
    failed = [r for r in rows if r.get("bench") == "run" and r.get("rc") != 0]
    idle = {r["ts"]: r["daemon_cpu_pct"] for r in rows if r.get("bench") == "idle"}

    def pick(ts, ask, mode, app=None):
        return [r for r in runs if r["ts"] == ts and r["ask"] == ask and r["mode"] == mode
                and (app is None or r["app"] == app)]

    def wall(ts, ask, mode, app):
        return med([r["wall_s"] for r in pick(ts, ask, mode, app)])

    def cells(ts, ask):
        c = [secs(wall(ts, ask, "alone", a)) for a, _ in APPS]
        c += [secs(wall(ts, ask, "shared", a)) for a, _ in APPS]
        c.append(pct(med([r["spin_cpu_pct"] for r in pick(ts, ask, "shared")])))
        c.append(pct(med([r["daemon_cpu_pct"] for r in pick(ts, ask, "shared")])))
        return c

    slices = sorted(idle)
    header = (["slice"] + ["%s alone" % n for _, n in APPS]
              + ["%s beside a CPU-bound job" % n for _, n in APPS]
              + ["CPU-bound job's CPU meanwhile", "daemons' CPU meanwhile"])
    t1 = [[("**%s** (default)" if ts == DEFAULT else "%s") % ms(ts)] + cells(ts, 0) +
          [pct(idle.get(ts))] for ts in slices]
    header1 = header + ["daemons' CPU, idle cluster"]
    asks = sorted({r["ask"] for r in runs if r["ts"] == DEFAULT and r["ask"]})
    t2 = [["cluster %s, no ask" % ms(DEFAULT)] + cells(DEFAULT, 0)]
    t2 += [["cluster %s, the MPI job asks %s" % (ms(DEFAULT), ms(a))] + cells(DEFAULT, a)
           for a in asks]
    t2 += [["cluster %s (every row)" % ms(ts)] + cells(ts, 0) for ts in asks if ts in idle]
    loads = [r["load1"] for r in runs]
    out = ["## Timeslice and BCS-MPI", "",
           "Command: `bench/timeslice/mpi.sh 8` (then `python3 bench/timeslice/mpi_report.py "
           "bench/results/slice-mpi-latest/results.jsonl docs/BENCHMARKS.md`). For each "
           "timeslice a fresh `storm cluster up --nodes 8 --provider shm --mpl 2 --quantum 1 "
           "--timeslice-us T`; the bench/mpi programs built with bcs-mpicc run on 8 ranks (one "
           "a node) with `storm run -N 8 -n 8`, alone, then beside a CPU-bound job "
           "(`gang_spin`, one rank a node, endless) in the other row of the matrix; medians of "
           "%d runs. *CPU-bound job's CPU meanwhile*: its ranks' utime+stime over the MPI "
           "job's run, in %% of one core (all of it shares this host's %s cores); *daemons' "
           "CPU*: the MM's and the node daemons', during the runs and over %g s of an idle "
           "cluster (the strobes' cost). Load average %.1f–%.1f."
           % (max([r["rep"] for r in runs] or [0]), os.cpu_count(),
              med([r.get("window") for r in rows if r.get("bench") == "idle"]),
              min(loads or [0]), max(loads or [0])), ""]
    out += ["#### The cluster's timeslice", "", table(header1, t1), ""]
    out += ["#### A row's own slice (`storm run --timeslice-us`) at the default timeslice",
            "", "The same runs on the 10 ms cluster with the MPI job asking for a shorter "
            "slice: its row runs at it, the CPU-bound job's row at 10 ms, and the rows still "
            "switch every 10 ms; next to them the cluster run at that slice throughout.", "",
            table(header, t2), ""]
    if failed:
        out += ["Runs that failed (not in the medians): " + ", ".join(
            "%s at %s ask %s (%s, exit %s)" % (r["app"], ms(r["ts"]), r["ask"], r["mode"],
                                               r["rc"]) for r in failed), ""]
    replace_section(sys.argv[2], "Timeslice and BCS-MPI", "\n".join(out).rstrip("\n"))


if __name__ == "__main__":
    main()
