#!/usr/bin/env python3
"""Turns bench/launch results (JSON lines from bench/launch/run.sh) into the
"## Launch (bench/launch)" section of docs/BENCHMARKS.md, replacing that
section if it is there and keeping the rest of the file, and draws time
against nodes (one panel per binary size) into a PNG with gnuplot.

usage: report.py RESULTS.jsonl docs/BENCHMARKS.md [docs/launch.png]
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchdoc import fmt_ratio, load, ratio, replace_section, table  # noqa: E402
import tempfile

SECTION = "## Launch (bench/launch)"

# method -> (label, how it is run)
METHODS = [
    ("srun_bcast", "srun --bcast", "`srun --bcast=DIR/ -N n -n 4n app`: Slurm sends the"
     " binary (sbcast's protocol) and every node writes its own copy, then launches"),
    ("srun", "srun", "`srun -N n -n 4n app`, the binary on a path every node sees"),
    ("mpiexec", "mpiexec", "MPICH `mpiexec -n 4n app` (hydra, all ranks on this host):"
     " launch without transfer and without a resource manager"),
    ("copy_floor", "copy floor", "`copy_floor app /tmp/DIR n`: the binary mapped once and"
     " written to n files with write(), in one process, on /tmp (ext4)"),
    ("copy_floor_shm", "copy floor, tmpfs", "the same into /dev/shm: memory only, no disk"
     " and no writeback (what a launcher that keeps the binary in memory, e.g. a memfd,"
     " has to beat)"),
    ("cp", "cp ×n", "n × `cp app /tmp/DIR/i` from one shell loop (a process per copy; cp"
     " uses copy_file_range). The ratio storm / copy floor divides by the fastest of"
     " the three copies"),
    ("storm", "storm", "`storm run --timing -N n -n 4n ./app`: transfer through global"
     " memory, then execution"),
    ("storm_nobcast", "storm --no-bcast", "the same with `--no-bcast` (binary on a"
     " shared path)"),
]
LABEL = {m: label for m, label, _ in METHODS}

# The launch targets (benchmark, not a test).
TARGETS = [
    # (text, numerator method, denominator method, size, nodes, limit)
    ("12 MiB on 8 nodes / 32 processes, transfer plus execution: storm ≤ 1/10 of"
     " srun --bcast", "storm", "srun_bcast", 12, 8, 0.1),
    ("Without transfer, 12 MiB on 8 nodes: storm --no-bcast ≤ 1/5 of srun",
     "storm_nobcast", "srun", 12, 8, 0.2),
    ("Without transfer, 12 MiB on 8 nodes: storm --no-bcast within 2x of mpiexec",
     "storm_nobcast", "mpiexec", 12, 8, 2.0),
    ("64 nodes, 12 MiB: storm within 2x of the copy floor", "storm", "copy_floor", 12, 64, 2.0),
]



class Results:
    def __init__(self, rows):
        self.rows = rows
        self.launch = [r for r in rows if r.get("bench") == "launch" and "skipped" not in r]

    def _lines(self, method, size, nodes):
        return [r for r in self.launch
                if r.get("method") == method and r.get("size_mib") == size and
                r.get("nodes") == nodes and r.get("run", 1) != 0]  # run 0: warm-up

    def get(self, method, size, nodes):
        """A point's timed runs merged: all their samples and the medians of
        them (and of storm's phases); "failed" counts failed runs. None when
        no run succeeded."""
        ok = [r for r in self._lines(method, size, nodes) if "error" not in r]
        if not ok:
            return None
        out = {"failed": sum(1 for r in self._lines(method, size, nodes) if "error" in r)}
        for key in ("samples_ms", "transfer_samples_ms", "execute_samples_ms",
                    "total_samples_ms"):
            vals = [v for r in ok for v in r.get(key, [])]
            if vals:
                out[key] = vals
                out[key.replace("_samples", "").replace("samples_ms", "median_ms")] = \
                    statistics.median(vals)
        out["min_ms"] = min(out["samples_ms"])
        out["max_ms"] = max(out["samples_ms"])
        return out

    def med(self, method, size, nodes, key="median_ms"):
        r = self.get(method, size, nodes)
        return r.get(key) if r else None

    def floor(self, size, nodes):
        """The copy floor: the fastest of the three copies."""
        v = [x for x in (self.med(m, size, nodes) for m in ("copy_floor", "copy_floor_shm", "cp"))
             if x is not None]
        return min(v) if v else None

    def error(self, method, size, nodes):
        for r in self._lines(method, size, nodes):
            if "error" in r:
                return r["error"]
        return None

    def skipped(self, method):
        for r in self.rows:
            if r.get("bench") == "launch" and r.get("method") == method and "skipped" in r:
                return r["skipped"]
        return None

    def meta(self, key, bench=("meta", "meta_end", "meta_slurm")):
        for r in self.rows:
            if r.get("bench") in bench and key in r:
                return r[key]
        return None

    def sizes(self):
        return sorted({r["size_mib"] for r in self.launch if "size_mib" in r})

    def nodes(self):
        return sorted({r["nodes"] for r in self.launch if "nodes" in r})

    def methods(self):
        present = {r.get("method") for r in self.launch if "error" not in r}
        return [m for m, _, _ in METHODS if m in present]


def ms(v):
    if v is None:
        return "–"
    if v >= 10000:
        return "%.1f s" % (v / 1000)
    if v >= 1000:
        return "%.2f s" % (v / 1000)
    if v >= 100:
        return "%.0f ms" % v
    if v >= 10:
        return "%.1f ms" % v
    return "%.2f ms" % v








def cell(res, m, s, n):
    r = res.get(m, s, n)
    if r is None:
        e = res.error(m, s, n)
        return "failed (%s)" % e if e else "–"
    v = ms(r["median_ms"])
    if m in ("storm", "storm_nobcast") and "transfer_ms" in r:
        v += " (xfer %s, exec %s)" % (ms(r["transfer_ms"]), ms(r["execute_ms"]))
    if r["failed"]:
        v += " (%d run%s failed)" % (r["failed"], "s" if r["failed"] > 1 else "")
    return v


def build(res, results_path, png_rel):
    L = [SECTION, ""]
    loads = [r["load1"] for r in res.rows if "load1" in r]
    L.append("Command: `make bench` (runs `bench/launch/run.sh`; alone: `bench/launch/run.sh`,"
             " `BENCH_QUICK=1` for sizes 4 and 12 MiB on 1, 8 and 64 nodes; "
             "`BENCH_LAUNCH_SIZES`, `BENCH_LAUNCH_NODES`, `BENCH_LAUNCH_METHODS`,"
             " `BENCH_LAUNCH_REPS` choose). Generated by `bench/launch/report.py` from `%s`." %
             results_path)
    L.append("")
    L.append("Date: %s. Machine: %s × %s, Linux %s, /tmp on %s; Slurm %s (Debian"
             " `slurm-wlm`, multiple-slurmd build: %s, TreeWidth %s), MPICH %s."
             " **2 cores, shared with other jobs**: 1-minute load average %s at the start,"
             " %s at the end, %s–%s across the measurements (`load1` per result)."
             " Whole run: %s s." %
             (res.meta("date") or "?", res.meta("nproc") or "?", res.meta("cpu") or "?",
              res.meta("kernel") or "?", res.meta("tmp_fs") or "?", res.meta("slurm") or "?",
              res.meta("multiple_slurmd") or "?", res.meta("tree_width") or "?",
              res.meta("mpich") or "?", res.meta("load1_start"), res.meta("load1_end"),
              min(loads) if loads else "?", max(loads) if loads else "?",
              res.meta("seconds")))
    L.append("")
    L.append("Setup: do-nothing static programs (`bench/launch/make-app.sh`: `main` returns"
             " 0, an initialised array of random bytes pads the file to exactly 4, 8 or 12"
             " MiB) on n virtual nodes with 4 processes a node. Slurm: a private cluster on"
             " this host (`bench/launch/slurm-cluster.sh up %s`: munged, slurmctld and one"
             " `slurmd -N bnI` per node, each on its own port, 4 CPUs each; no cgroups,"
             " accounting or PMI), jobs submitted with srun's own allocation. Every value"
             " is wall time from fork to exit of the launching command, the median of %s"
             " runs after one warm-up (`bench/launch/timeit.py`, monotonic clock); the runs"
             " of one point go round-robin over the methods, so that a burst of load from"
             " the machine's other users falls on all of them alike; copies from the"
             " previous run are removed before each run, untimed. The load average is"
             " partly the benchmark's own: a 64-node launch puts hundreds of processes on"
             " the run queue for a moment. All virtual"
             " nodes and all processes share the 2 cores, and every copy lands on the"
             " same disk: this is the cost of the software path, not of a network." %
             (res.meta("nodes", ("meta_slurm",)) or "N", res.meta("reps") or "?"))
    L.append("")
    for m, label, how in METHODS:
        L.append("- **%s**: %s." % (label, how))
    L.append("")

    storm_skip = res.skipped("storm")
    if storm_skip:
        L.append("**storm was not measured in this run**: %s. The storm columns and the"
                 " ratios stay empty until it is; nothing here is estimated." % storm_skip)
        L.append("")

    nodes = res.nodes()
    for s in res.sizes():
        L.append("### %d MiB binary" % s)
        L.append("")
        hdr = ["nodes / procs"] + [LABEL[m] for m, _, _ in METHODS] + [
            "storm / srun --bcast", "storm / srun", "storm / mpiexec", "storm / copy floor"]
        rows = []
        for n in nodes:
            row = ["%d / %d" % (n, 4 * n)]
            row += [cell(res, m, s, n) for m, _, _ in METHODS]
            st, stn = res.med("storm", s, n), res.med("storm_nobcast", s, n)
            row += [fmt_ratio(ratio(st, res.med("srun_bcast", s, n))),
                    fmt_ratio(ratio(stn, res.med("srun", s, n))),
                    fmt_ratio(ratio(stn, res.med("mpiexec", s, n))),
                    fmt_ratio(ratio(st, res.floor(s, n)))]
            rows.append(row)
        L.append(table(hdr, rows))
        L.append("")
    big = max(res.sizes()) if res.sizes() else None
    if big is not None:
        L.append("### Transfer and execution, %d MiB" % big)
        L.append("")
        L.append("Slurm's transfer is estimated as srun --bcast − srun (the same launch with and"
                 " without the broadcast); storm's two phases are its own `--timing` split."
                 " The copy floor is the fastest of the three copies.")
        L.append("")
        rows = []
        for n in nodes:
            b, p = res.med("srun_bcast", big, n), res.med("srun", big, n)
            rows.append(["%d / %d" % (n, 4 * n),
                         ms(b - p) if b is not None and p is not None else "–",
                         ms(p), ms(res.floor(big, n)),
                         ms(res.med("storm", big, n, "transfer_ms")),
                         ms(res.med("storm", big, n, "execute_ms")),
                         ms(res.med("mpiexec", big, n))])
        L.append(table(["nodes / procs", "Slurm transfer (srun --bcast − srun)",
                        "Slurm launch (srun)", "copy floor", "storm transfer",
                        "storm execute", "mpiexec"], rows))
        L.append("")
    L.append("storm / srun --bcast and storm / copy floor use `storm run` with transfer;"
             " storm / srun and storm / mpiexec use `--no-bcast` (no transfer on either"
             " side). Below 1: storm faster.")
    L.append("")
    if png_rel:
        L.append("![launch time against nodes](%s)" % png_rel)
        L.append("")

    L.append("### Targets")
    L.append("")
    for text, num, den, s, n, limit in TARGETS:
        a = res.med(num, s, n)
        b = res.floor(s, n) if den == "copy_floor" else res.med(den, s, n)
        if a is None:
            verdict = "not measured (%s)" % (
                "no %s result" % LABEL[num] if not storm_skip else "storm not built")
        elif b is None:
            verdict = "no %s result at %d MiB / %d nodes" % (LABEL[den], s, n)
        else:
            verdict = "%s (%s vs %s)" % (fmt_ratio(ratio(a, b), limit), ms(a), ms(b))
        L.append("- %s: %s" % (text, verdict))
    L.append("")

    fails = failures(res)
    if fails:
        L.extend(fails + [""])
    return "\n".join(L)


def failures(res):
    """The launches that failed, for the section's end."""
    out = []
    fails = [r for r in res.launch if "error" in r]
    if fails:
        out.append("- **Failures in this run:** " + "; ".join(
            "%s %s MiB on %s nodes (%s)" % (LABEL.get(r.get("method"), r.get("method")),
                                           r.get("size_mib"), r.get("nodes"), r["error"])
            for r in fails) + ". See the run's `log.txt` next to the results.")
    return out


def plot(res, png):
    """time against nodes, log-log, one panel per size; False if gnuplot is missing."""
    if not shutil.which("gnuplot"):
        print("report.py: gnuplot not found (gnuplot-nox): no %s" % png, file=sys.stderr)
        return False
    sizes, nodes, methods = res.sizes(), res.nodes(), res.methods()
    if not sizes or not methods:
        return False
    with tempfile.TemporaryDirectory() as d:
        for s in sizes:
            for m in methods:
                with open(os.path.join(d, "%s-%d.dat" % (m, s)), "w") as f:
                    for n in nodes:
                        v = res.med(m, s, n)
                        if v is not None:
                            f.write("%d %.3f\n" % (n, v))
        style = {"srun_bcast": "lc rgb '#d62728' pt 7 lw 2",
                 "srun": "lc rgb '#ff7f0e' pt 5 lw 2",
                 "mpiexec": "lc rgb '#2ca02c' pt 9 lw 2",
                 "copy_floor": "lc rgb '#7f7f7f' pt 13 dt 2 lw 2",
                 "cp": "lc rgb '#bcbd22' pt 11 dt 3 lw 2",
                 "copy_floor_shm": "lc rgb '#9467bd' pt 15 dt 4 lw 2",
                 "storm": "lc rgb '#1f77b4' pt 7 lw 3",
                 "storm_nobcast": "lc rgb '#17becf' pt 5 lw 3"}
        ymin = min(v for v in (res.med(m, s, n) for m in methods for s in sizes for n in nodes)
                   if v is not None)
        ymax = max(v for v in (res.med(m, s, n) for m in methods for s in sizes for n in nodes)
                   if v is not None)
        gp = ["set terminal pngcairo size %d,520 font 'sans,10'" % (460 * len(sizes) + 40),
              "set output '%s'" % png,
              "set multiplot layout 1,%d title 'Launch of a do-nothing program, 4 processes a"
              " node, 2 shared cores (median of %s runs)'" % (len(sizes), res.meta("reps")),
              "set logscale xy", "set xlabel 'nodes'", "set ylabel 'time (ms)'",
              "set xtics (%s)" % ", ".join("'%d' %d" % (n, n) for n in nodes),
              "set xrange [%g:%g]" % (min(nodes) / 1.3, max(nodes) * 1.3),
              "set yrange [%g:%g]" % (ymin / 1.5, ymax * 1.5),
              "set grid", "set key top left font ',9'"]
        for s in sizes:
            gp.append("set title '%d MiB binary'" % s)
            series = ["'%s/%s-%d.dat' using 1:2 with linespoints %s title '%s'" %
                      (d, m, s, style.get(m, ""), LABEL[m]) for m in methods]
            gp.append("plot " + ", ".join(series))
        gp.append("unset multiplot")
        r = subprocess.run(["gnuplot"], input="\n".join(gp) + "\n", text=True,
                           capture_output=True)
        if r.returncode != 0:
            print("report.py: gnuplot failed:\n" + r.stderr, file=sys.stderr)
            return False
    return True


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    res = Results(load(sys.argv[1]))
    doc = sys.argv[2]
    png_rel = None
    if len(sys.argv) == 4 and plot(res, sys.argv[3]):
        png_rel = os.path.relpath(sys.argv[3], os.path.dirname(os.path.abspath(doc)))
    section = build(res, os.path.relpath(sys.argv[1]), png_rel)
    replace_section(doc, 'Launch (bench/launch)', section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
