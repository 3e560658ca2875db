#!/usr/bin/env python3
"""Predictions on a machine (a core per node, a network profile) from the
host's calibrated costs, at any node count: launch of 1 and 12 MiB, the
strobe's last arrival and arrival skew down the software tree, the
time-triggered switch's skew, COMPARE-AND-WRITE over all nodes, the MM's CPU
per slice and the smallest slice it sustains, a daemon's global memory and
connections; then the sizes at which each of storm's limits is reached.

usage: predict.py COSTS.json [--nodes 64 1024 16384] [--profiles eth100 ib200]
                  [--timeslice-us 10000] [--set NAME=SECONDS ...] [--json OUT]
                  [--memory COSTS.json]

A daemon's resident memory is memory.py's, from the 2-node point and the MM's
per-node slope of COSTS.json or of the --memory costs file (a run of a build
whose memory differs from the one the times were measured on).
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memory  # noqa: E402
from calibrate import PROFILES, host_params, machine_params, point  # noqa: E402
from scalemodel import (GM_STROBE_MAX, MIB, STORM_MAX_NODES, Model, ahead_fit,  # noqa: E402
                        gmem_size, pct, strobe_size, tree_depth)

MM_SHARE = 0.5  # the MM may spend at most this share of its core on slices
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def unit_nofile():
    """The MM's descriptor limit under its systemd unit (LimitNOFILE)."""
    try:
        with open(os.path.join(TOP, "systemd", "stormmm.service.in")) as f:
            for line in f:
                if line.startswith("LimitNOFILE="):
                    return int(line.split("=", 1)[1])
    except (OSError, ValueError):
        pass
    return None


def predict(prm, profile, n, hw, ts, slices, mem=None):
    m = Model(**machine_params(prm, profile, hw_mcast=hw, timeslice=ts))
    x12, e12 = m.launch(n, 12 * MIB, reps=1)
    x1, e1 = m.launch(n, MIB, reps=1) if n <= 4096 else (None, None)  # time: the 12 MiB's is the figure
    caw = m.caw_latency(n + 1, reps=1)
    skews, last = m.strobes(n, slices=slices)
    timed = m.timed_skew(n, slices=200)
    mm = m.mm_cpu_per_slice(n)
    return {"profile": profile, "hw_mcast": hw, "nodes": n, "depth": tree_depth(n + 1),
            "launch_12m_s": x12 + e12, "transfer_12m_s": x12, "launch_1m_s": x1 + e1 if x1 is not None else None,
            "caw_us": caw * 1e6, "strobe_last_p99_us": pct(last, 99) * 1e6,
            "strobe_skew_p99_us": pct(skews, 99) * 1e6,
            "timed_skew_p99_us": pct(timed, 99) * 1e6,
            "mm_cpu_per_slice_us": mm * 1e6, "min_slice_ms": mm / MM_SHARE * 1e3,
            "strobe_bytes": strobe_size(n, max(ahead_fit(n), 0)), "ahead_k": ahead_fit(n),
            "gmem_mib": gmem_size(n) / MIB,
            "nd_rss_mib": (memory.node_rss(mem, n) or 0) / MIB if mem else None,
            "mm_rss_mib": (memory.mm_rss(mem, n) or 0) / MIB if mem else None}


def limits(costs, prm, mem=None):
    """Node counts at which each limit of today's design is reached."""
    out = []
    n = memory.first_over(mem or costs, memory.TARGET_MIB * MIB)
    if n:
        out.append(("a node daemon's resident memory, running a job on every node (each node talking to its tree neighbours and the MM), passes "
                    "%d MiB (%.2f KiB a node of the cluster, %.2f KiB a node of the job, and "
                    "the buffers sized by node sets of N bits: memory.py)"
                    % (memory.TARGET_MIB, memory.PER_CONFIGURED / 1024,
                       memory.PER_JOB_NODE / 1024), n))
    out.append(("node sets are %d-bit maps (STORM_MAX_NODES)" % 1024, STORM_MAX_NODES + 1))
    n = 1
    while ahead_fit(n) == 4:
        n += 1
    out.append(("the strobe's schedule ahead shrinks below K = 4 (its %d KiB area)" % (GM_STROBE_MAX // 1024), n))
    while ahead_fit(n) >= 0:
        n += 1
    out.append(("the strobe no longer fits its %d-byte area, even with K = 0" % GM_STROBE_MAX, n))
    for ms in (10, 1):
        cap = ms * 1e-3 * MM_SHARE
        k = (cap - prm["mm_slice_cpu0"]) / prm["mm_slice_cpu_node"] if prm["mm_slice_cpu_node"] else None
        if k is not None:
            out.append(("the MM's per-slice work exceeds %d%% of its core at a %d ms slice"
                        % (MM_SHARE * 100, ms), int(k) + 1))
    n = 1
    while gmem_size(n) < (4 << 30):
        n *= 2
    lo = n // 2
    while lo + 1 < n:
        mid = (lo + n) // 2
        if gmem_size(mid) >= (4 << 30):
            n = mid
        else:
            lo = mid
    out.append(("a daemon's global memory passes 4 GiB (1.5 MiB per peer)", n))
    pts = [p for p in costs["points"] if p.get("sockets_mm") is not None]
    if len(pts) >= 2:
        a, b = pts[0], pts[-1]
        slope = (b["sockets_mm"] - a["sockets_mm"]) / max(1, b["nodes"] - a["nodes"])
        nofile = unit_nofile()
        if slope > 0 and nofile:
            # the MM raises its soft limit to the hard one (daemons/mm/main.c)
            out.append(("the MM's sockets (%.1f a node, measured) pass its descriptors, "
                        "LimitNOFILE=%d of systemd/stormmm.service.in" % (slope, nofile),
                        int((nofile - a["sockets_mm"]) / slope + a["nodes"]) + 1))
    r0, r1 = prm.get("mm_report_cpu", 0.0), prm.get("mm_report_cpu_node", 0.0)
    if (r0 or r1) and not prm.get("job_end_combined"):
        # every node of a job reports its end straight to the MM, which
        # takes them one at a time before the job can end: N (r0 + r1 N)
        n = (-r0 + math.sqrt(r0 * r0 + 4 * r1 * 0.2)) / (2 * r1) if r1 else 0.2 / r0
        out.append(("the MM's work on a launch's reports alone (%.0f µs + %.1f µs a node of "
                    "the job, per node, measured) passes the 0.2 s launch target"
                    % (r0 * 1e6, r1 * 1e6), int(n) + 1))
    return sorted(out, key=lambda x: x[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("costs")
    ap.add_argument("--nodes", nargs="+", type=int, default=[64, 256, 1024, 4096, 16384])
    ap.add_argument("--profiles", nargs="+", default=list(PROFILES))
    ap.add_argument("--timeslice-us", type=int, default=10000)
    ap.add_argument("--slices", type=int, default=30)
    ap.add_argument("--multicast", nargs="+", default=["tree", "hardware"],
                    choices=["tree", "hardware"])
    ap.add_argument("--set", nargs="+", default=[], metavar="NAME=SECONDS",
                    help="a parameter measured elsewhere, in place of the calibration's "
                         "(e.g. mm_report_cpu=153e-6 for a design measured beside it)")
    ap.add_argument("--json")
    ap.add_argument("--memory", help="the costs file whose memory points to use (default: COSTS)")
    a = ap.parse_args()
    with open(a.costs) as f:
        costs = json.load(f)
    mem = costs
    if a.memory:
        with open(a.memory) as f:
            mem = json.load(f)
    prm = host_params(costs)
    for kv in a.set:
        k, v = kv.split("=", 1)
        if k not in prm:
            sys.exit("predict.py: --set: no parameter %s" % k)
        prm[k] = float(v)
    ts = a.timeslice_us * 1e-6
    rows = []
    for prof in a.profiles:
        if prof not in PROFILES:
            sys.exit("predict.py: no profile %s (have: %s)" % (prof, ", ".join(PROFILES)))
        for hw in [m == "hardware" for m in a.multicast]:
            for n in a.nodes:
                rows.append(predict(prm, prof, n, hw, ts, a.slices, mem))
                print("  %s" % json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print("| profile | multicast | nodes | depth | launch 12 MiB | launch 1 MiB | CAW | strobe last arrival p99 | strobe skew p99 | timed switch skew p99 | MM CPU per slice | smallest slice (MM ≤ 50%) | strobe | global memory | node daemon RSS | MM RSS |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %d | %d | %.1f ms | %s | %.0f µs | %.0f µs | %.0f µs | %.0f µs | %.0f µs | %.2f ms | %d B%s | %.0f MiB | %.1f MiB | %.0f MiB |" % (
            r["profile"], "hardware" if r["hw_mcast"] else "tree", r["nodes"], r["depth"],
            r["launch_12m_s"] * 1e3,
            "-" if r["launch_1m_s"] is None else "%.1f ms" % (r["launch_1m_s"] * 1e3),  # not run past 4,096 nodes
            r["caw_us"], r["strobe_last_p99_us"],
            r["strobe_skew_p99_us"], r["timed_skew_p99_us"], r["mm_cpu_per_slice_us"],
            r["min_slice_ms"], r["strobe_bytes"], "" if r["ahead_k"] >= 0 else " (does not fit)",
            r["gmem_mib"], r["nd_rss_mib"] or 0, r["mm_rss_mib"] or 0))
    lim = limits(costs, prm, mem)
    print("\nWhat breaks first (node count at which each limit is reached):\n")
    for what, n in lim:
        print("- %d nodes: %s" % (n, what))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"params": prm, "rows": rows, "limits": lim,
                       "profiles": PROFILES, "timeslice_us": a.timeslice_us}, f, indent=1)


if __name__ == "__main__":
    main()
