#!/usr/bin/env python3
"""The "BCS-MPI: one-sided epochs" section of docs/BENCHMARKS.md from
bench/mpi/rma_epochs.sh's results: per kind of call, the median over the
runs of each run's median (and 90th percentile), BCS-MPI beside MPICH."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import benchdoc  # noqa: E402

HEADING = "BCS-MPI: one-sided epochs (bench/mpi/rma_epochs.sh)"
KINDS = [("iprobe_empty", "`MPI_Iprobe` finding nothing"),
         ("excl_cas_right", "exclusive lock, `Compare_and_swap`, unlock (right neighbour)"),
         ("excl_put_right", "exclusive lock, `Put`, unlock (right neighbour)"),
         ("excl_get_rank0", "exclusive lock, `Get`, unlock: all 4 on rank 0"),
         ("lockall_fop_flush", "`Fetch_and_op` + `Win_flush` in `lock_all` (right)"),
         ("lockall_unlockall", "an empty `lock_all` epoch")]


def main():
    rows, doc, shown = benchdoc.report_args(
        "usage: rma_epochs_report.py RESULTS.jsonl DOC\n")
    meta = next(r for r in rows if r.get("bench") == "meta")
    res = [r for r in rows if r.get("bench") == "rma_epochs"]
    out = []
    for kind, what in KINDS:
        cells = [what]
        for impl in ("bcs", "mpich"):
            v = [r for r in res if r["kind"] == kind and r["impl"] == impl]
            md, p90 = benchdoc.med([r["median_ms"] for r in v]), benchdoc.med([r["p90_ms"] for r in v])
            mean = benchdoc.med([r.get("mean_ms") for r in v])
            mx = max([r["max_ms"] for r in v if "max_ms" in r], default=None)
            cells.append("–" if md is None else "%.3f (%.3f)" % (md, p90))
            cells.append("–" if mean is None else "%.3f / %.1f" % (mean, mx))
        b = benchdoc.med([r["median_ms"] for r in res if r["kind"] == kind and r["impl"] == "bcs"])
        cells.append("–" if b is None else "%.1f" % (b * 1000.0 / meta["timeslice_us"]))
        out.append(cells)
    sec = ["## " + HEADING, "",
           benchdoc.header("bench/mpi/rma_epochs.sh --reps %d --iters %d --timeslice-us %d"
                           % (meta["reps"], meta["iters"], meta["timeslice_us"]),
                           "bench/mpi/rma_epochs_report.py", shown, meta, meta["load1"]),
           "",
           "4 ranks; BCS-MPI on 4 virtual nodes at %d µs slices, MPICH 4.0.2 under "
           "`mpiexec.mpich -n 4` on the same host. Per call or epoch, in ms: the median over "
           "the runs of each run's median over every rank's %d samples (the 90th percentile "
           "likewise in brackets); the median of the runs' means, and the largest sample of "
           "all %d runs. The empty `MPI_Iprobe`s are a loop of them, as a polling program "
           "makes." % (meta["timeslice_us"], meta["iters"], meta["reps"]),
           "",
           benchdoc.table(["call", "BCS-MPI median (p90)", "mean / max", "MPICH median (p90)",
                          "mean / max", "BCS-MPI median, slices"], out)]
    benchdoc.replace_section(doc, HEADING, "\n".join(sec) + "\n")


if __name__ == "__main__":
    main()
