#!/usr/bin/env python3
"""The scale model's plots (PNG, matplotlib): predicted against measured at
every validation point, and the predictions to 16,384 nodes.

usage: plots.py RUN_DIR [OUT_DIR]   (RUN_DIR holds validation.json and
                                     predictions.json, as report.py writes
                                     them, and costs.json; OUT_DIR defaults
                                     to RUN_DIR)
Writes scale-validation.png and scale-predictions.png, and
scale-memory.png when the costs hold the daemons' resident memory.
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memory  # noqa: E402

QUANTITIES = ["launch 1 MiB", "launch 12 MiB", "strobe skew p50", "CAW (read)", "CAW (write)",
              "multicast 12 MiB", "MM CPU per slice"]


def validation(rows, band, out):
    qs = [q for q in QUANTITIES if any(r["what"] == q for r in rows)]
    fig, axes = plt.subplots(2, (len(qs) + 2) // 2, figsize=(14, 6.5))
    axes = axes.flatten()
    for ax, q in zip(axes, qs):
        rs = sorted((r for r in rows if r["what"] == q), key=lambda r: r["nodes"])
        n = [r["nodes"] for r in rs]
        meas = [r["meas_ms"] for r in rs]
        pred = [r["pred_ms"] for r in rs]
        ax.fill_between(n, [m * (1 - band) for m in meas], [m * (1 + band) for m in meas],
                        color="0.85", label="measured ±%d%%" % round(band * 100))
        ax.plot(n, meas, "ko-", label="measured")
        ax.plot(n, pred, "s--", color="tab:blue", label="model")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(n)
        ax.set_xticklabels([str(x) for x in n])
        ax.set_title(q, fontsize=10)
        ax.set_xlabel("nodes")
        ax.set_ylabel("ms")
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes[len(qs):]:
        ax.axis("off")
    axes[0].legend(fontsize=8)
    ok = sum(1 for r in rows if r["ratio"] is not None and abs(r["ratio"] - 1) <= band)
    fig.suptitle("storm's scale model against the daemons on this host: %d of %d points "
                 "within ±%d%%" % (ok, len(rows), round(band * 100)))
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)


def predictions(rows, out):
    panels = [("launch_12m_s", 1e3, "launch of 12 MiB (ms)"),
              ("strobe_skew_p99_us", 1e-3, "strobe arrival skew p99 (ms)"),
              ("caw_us", 1e-3, "COMPARE-AND-WRITE, all nodes (ms)"),
              ("mm_cpu_per_slice_us", 1e-3, "MM CPU per slice (ms)")]
    fig, axes = plt.subplots(1, len(panels), figsize=(16, 4.2))
    series = sorted({(r["profile"], r["hw_mcast"]) for r in rows})
    for ax, (key, scale, title) in zip(axes, panels):
        for prof, hw in series:
            rs = sorted((r for r in rows if r["profile"] == prof and r["hw_mcast"] == hw
                         and r.get(key) is not None), key=lambda r: r["nodes"])
            if not rs:
                continue
            ax.plot([r["nodes"] for r in rs], [r[key] * scale for r in rs], "o-",
                    label="%s, %s" % (prof, "hardware multicast" if hw else "tree"))
        if key == "launch_12m_s":
            ax.axhline(200, color="r", ls=":", label="target 0.2 s")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("nodes")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("Predicted on a machine (a core per node, 10 ms timeslice)")
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)


def memory_plot(costs, out):
    """A node daemon's and the MM's resident memory: the model to 16,384
    nodes, the sizes measured, and the node daemon's 64 MiB target."""
    n = [2 ** k for k in range(1, 15)]
    nd = [memory.node_rss(costs, x) / memory.MIB for x in n]
    mm = [memory.mm_rss(costs, x) / memory.MIB for x in n]
    meas = [(p["nodes"], p["rss_nd_kib"] / 1024, p.get("rss_mm_kib", 0) / 1024)
            for p in costs["points"] if p.get("rss_nd_kib")]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    ax.plot(n, nd, "s--", color="tab:blue", label="node daemon, model (a job on every node)")
    ax.plot(n, mm, "^--", color="tab:orange", label="MM, model")
    ax.plot([m[0] for m in meas], [m[1] for m in meas], "ko", label="node daemon, measured")
    ax.plot([m[0] for m in meas], [m[2] for m in meas], "kx", label="MM, measured")
    ax.axhline(memory.TARGET_MIB, color="r", ls=":",
               label="target %d MiB (node daemon)" % memory.TARGET_MIB)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("nodes")
    ax.set_ylabel("resident memory (MiB)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.suptitle("A daemon's resident memory (VmRSS)")
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    d = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) == 3 else d
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(d, "validation.json")) as f:
        v = json.load(f)
    validation(v["rows"], v["band"], os.path.join(out, "scale-validation.png"))
    cf = os.path.join(d, "costs.json")
    if os.path.exists(cf):
        with open(cf) as f:
            costs = json.load(f)
        if memory.node_rss(costs, 2) is not None and memory.mm_rss(costs, 2) is not None:
            memory_plot(costs, os.path.join(out, "scale-memory.png"))
    pf = os.path.join(d, "predictions.json")
    if os.path.exists(pf):
        with open(pf) as f:
            predictions(json.load(f)["rows"], os.path.join(out, "scale-predictions.png"))


if __name__ == "__main__":
    main()
