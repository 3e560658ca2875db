#!/usr/bin/env python3
"""Turns bench/checkpoint results (JSON lines from bench/checkpoint/run.sh)
into the "## Checkpoint/restart" section of docs/BENCHMARKS.md, replacing
that section and keeping the rest.

usage: report.py RESULTS.jsonl docs/BENCHMARKS.md
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchdoc import load, replace_section, table  # noqa: E402

HEADING = "Checkpoint/restart"
TARGET_THROUGHPUT = 0.70   # of the storage write bandwidth
TARGET_RESTART = 1.2       # restart time / checkpoint time
TARGET_OVERHEAD_60 = 0.01  # failure-free, 60 s interval



def mib(n):
    return "%.0f MiB" % (n / 2**20) if n >= 2**20 else "%.0f KiB" % (n / 1024)


def mbps(bps):
    return "–" if not bps else "%.0f MB/s" % (bps / 1e6)


def mark(ok):
    return " ✓" if ok else " ✗"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = load(sys.argv[1])
    run = os.path.basename(os.path.dirname(os.path.realpath(sys.argv[1])))
    sizes = [r for r in rows if r.get("kind") == "size"]
    over = [r for r in rows if r.get("kind") == "overhead"]
    out = ["## " + HEADING, "",
           "`make bench-ckpt` (bench/checkpoint/run.sh, run %s): an 8-node virtual cluster on this "
           "2-core machine, one rank per node (tests/ckpt/ckpt_prog, its heap filled), checkpointed "
           "with `storm checkpoint`. The 8 node daemons write their images in parallel (each rank "
           "through a forked helper, fsync'd) into state directories on the machine's one disk; "
           "the storage's bandwidth is `dd if=/dev/zero bs=1M conv=fsync` of the same size into the "
           "same directory, right before. Checkpoint time is the MM's freeze-to-confirmation "
           "(COMPARE-AND-WRITE), images fsync'd; the job is frozen only until every node has "
           "written its images (then it runs on while they are fsync'd); restart time runs from `storm restart` to the last node's "
           "\"started ranks\" (same nodes, images read back from the page cache). Targets: "
           "throughput ≥ %d%% of dd's, restart ≤ %.1fx the checkpoint." %
           (run, TARGET_THROUGHPUT * 100, TARGET_RESTART), ""]
    trs = []
    for r in sizes:
        thr = r["bytes"] / r["ckpt_s"] if r.get("ckpt_s") else None
        frac = thr / r["dd_bps"] if thr and r.get("dd_bps") else None
        rr = r["restart_s"] / r["ckpt_s"] if r.get("restart_s") and r.get("ckpt_s") else None
        trs.append([
            "%d MiB" % r["total_mib"], mib(r["bytes"]), "%.3f s" % r["ckpt_s"],
            "–" if r.get("frozen_s") is None else "%.3f s" % r["frozen_s"], mbps(thr),
            mbps(r.get("dd_bps")),
            "–" if frac is None else "%.0f%%%s" % (frac * 100, mark(frac >= TARGET_THROUGHPUT)),
            "–" if r.get("restart_s") is None else "%.3f s" % r["restart_s"],
            "–" if rr is None else "%.2fx%s" % (rr, mark(rr <= TARGET_RESTART)),
        ])
    out.append(table(["job memory", "image bytes", "checkpoint", "job frozen", "throughput", "dd (fsync)",
                      "of dd", "restart", "restart / checkpoint"], trs))
    out.append("")
    base = next((r for r in over if r["interval"] == 0 and r.get("rc") == 0), None)
    ors = []
    for r in over:
        ov = r["runtime_s"] / base["runtime_s"] - 1 if base and r["interval"] else None
        tgt = ""
        if ov is not None and r["interval"] == 60:
            tgt = mark(ov <= TARGET_OVERHEAD_60)
        fz = r.get("frozen_s")
        fzr = fz / r["runtime_s"] if fz is not None and r["runtime_s"] else None
        ftgt = mark(fzr <= TARGET_OVERHEAD_60) if fzr is not None and r["interval"] == 60 else ""
        ors.append(["none" if r["interval"] == 0 else "%d s" % r["interval"],
                    "%.2f s" % r["runtime_s"], str(r.get("checkpoints", 0)),
                    "–" if ov is None else "%+.2f%%%s" % (ov * 100, tgt),
                    "–" if not r["interval"] or fz is None else "%.2f s (%.2f%%%s)" % (fz, fzr * 100, ftgt),
                    "ok" if r.get("rc") == 0 else "exit %s" % r.get("rc")])
    if over:
        out.append("Failure-free overhead: the same program paced by `clock_nanosleep` (%d s of "
                   "10 ms steps, %d MiB in total on 8 nodes), with `--checkpoint-interval`; "
                   "overhead = runtime / runtime without checkpoints − 1, which is what the "
                   "freezes cost it (target ≤ %d%% at 60 s); frozen = the sum of the times "
                   "the job was stopped for its checkpoints, the same cost without the run-to-run noise "
                   "of a shared machine (runtimes of identical runs here differ by up to "
                   "~15%%, more than the freezes, so the runtime column may even show a gain)." %
                   (over[0].get("run_s", 0), over[0].get("total_mib", 0), TARGET_OVERHEAD_60 * 100))
        out.append("")
        out.append(table(["interval", "runtime", "checkpoints", "overhead (runtime)",
                          "frozen (of runtime)", "run"], ors))
        out.append("")
    replace_section(sys.argv[2], HEADING, "\n".join(out).rstrip() + "\n")


if __name__ == "__main__":
    main()
