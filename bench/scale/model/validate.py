#!/usr/bin/env python3
"""Predicted against measured at every point of a costs file above the
calibration points (1 and 2 nodes): launch of 1 and 12 MiB, strobe arrival
skew, COMPARE-AND-WRITE latency, the 12 MiB multicast, the MM's CPU per
slice. Prints a markdown table (ratio = predicted / measured; within ±20%
marked ✓) and writes the rows as JSON.

usage: validate.py COSTS.json [--json OUT] [--band 0.2]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from calibrate import at_point, host_params  # noqa: E402
from scalemodel import MIB, Model, pct  # noqa: E402
import memory  # noqa: E402


def rows_for(prm, pt, slices):
    n = pt["nodes"]
    m = Model(**at_point(prm, pt))
    out = []

    def add(what, pred_s, meas_s):
        if meas_s is None or pred_s is None:
            return
        out.append({"nodes": n, "what": what, "pred_ms": pred_s * 1e3, "meas_ms": meas_s * 1e3,
                    "ratio": pred_s / meas_s if meas_s > 0 else None})

    for size, key in ((1, "launch_1m"), (12, "launch_12m")):
        if pt.get(key, {}).get("total_ms") is not None:
            x, e = m.launch(n, size * MIB, reps=3)
            add("launch %d MiB" % size, x + e, pt[key]["total_ms"] * 1e-3)
    st = pt.get("strobe", {})
    if st.get("skew_p50_us") is not None:
        skews, last = m.strobes(n, slices=slices)
        add("strobe skew p50", pct(skews, 50), st["skew_p50_us"] * 1e-6)
    if pt.get("caw_us") is not None:
        add("CAW (read)", m.caw_latency(n), pt["caw_us"] * 1e-6)
    if pt.get("caw_write_us") is not None:
        add("CAW (write)", m.caw_latency(n, write=True), pt["caw_write_us"] * 1e-6)
    if pt.get("mcast_12m_us") is not None:
        add("multicast 12 MiB", m.mcast_time(n, 12 * MIB, reps=3), pt["mcast_12m_us"] * 1e-6)
    if pt.get("idle", {}).get("mm_cpu_per_slice_us") is not None:
        add("MM CPU per slice", m.mm_cpu_per_slice(n), pt["idle"]["mm_cpu_per_slice_us"] * 1e-6)
    return out


def fmt_ms(v):
    if v >= 100:
        return "%.0f ms" % v
    if v >= 1:
        return "%.1f ms" % v
    return "%.0f µs" % (v * 1e3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("costs")
    ap.add_argument("--json")
    ap.add_argument("--band", type=float, default=0.2)
    ap.add_argument("--slices", type=int, default=150)
    a = ap.parse_args()
    with open(a.costs) as f:
        costs = json.load(f)
    rows = []
    try:
        prm = host_params(costs)
    except ValueError as e:  # a run without sn_bench (--no-sn): its memory only
        prm = None
        print("validate.py: no times: %s" % e, file=sys.stderr)
    for pt in costs["points"]:
        if pt["nodes"] <= 2 or prm is None:
            continue
        rows += rows_for(prm, pt, a.slices)
    print("| nodes | quantity | predicted | measured | ratio |")
    print("|---|---|---|---|---|")
    ok = 0
    for r in rows:
        good = r["ratio"] is not None and abs(r["ratio"] - 1) <= a.band
        ok += good
        print("| %d | %s | %s | %s | %.2f%s |" % (r["nodes"], r["what"], fmt_ms(r["pred_ms"]),
                                                fmt_ms(r["meas_ms"]), r["ratio"],
                                                " ✓" if good else " ✗"))
    print("\n%d of %d points within ±%d%%" % (ok, len(rows), round(a.band * 100)))
    mem = memory.validation(costs)
    if mem:
        print("\nA node daemon's resident memory (memory.py), predicted / measured: " +
              ", ".join("%d nodes %.1f / %.1f MiB" % (n, p / memory.MIB, m / memory.MIB)
                        for n, p, m in mem))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"params": prm, "rows": rows, "band": a.band, "within": ok}, f, indent=1)


if __name__ == "__main__":
    main()
