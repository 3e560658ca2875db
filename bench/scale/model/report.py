#!/usr/bin/env python3
"""Validates the model against a run's costs file, predicts to 16,384 nodes,
and writes the "## Scale model (bench/scale)" section of docs/BENCHMARKS.md.

usage: report.py RUN_DIR [DOC]     (RUN_DIR holds costs.json; writes
                                    validation.md/.json and predictions.md/.json there;
                                    SCALE_REUSE_PREDICTIONS=1 keeps the predictions there;
                                    SCALE_PREDICT_SET="NAME=SECONDS ..." passes
                                    predict.py --set)
"""
import contextlib
import io
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", ".."))
import benchdoc  # noqa: E402
import predict  # noqa: E402
import validate  # noqa: E402

HEADING = "Scale model (bench/scale)"


def run(mod, argv):
    out = io.StringIO()
    old = sys.argv
    sys.argv = [mod.__name__] + argv
    try:
        with contextlib.redirect_stdout(out):
            mod.main()
    finally:
        sys.argv = old
    return out.getvalue()


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    d = sys.argv[1]
    doc = sys.argv[2] if len(sys.argv) == 3 else os.path.join(HERE, "..", "..", "..", "docs",
                                                                "BENCHMARKS.md")
    costs_path = os.path.join(d, "costs.json")
    with open(costs_path) as f:
        costs = json.load(f)
    val = run(validate, [costs_path, "--json", os.path.join(d, "validation.json")])
    with open(os.path.join(d, "validation.md"), "w") as f:
        f.write(val)
    if os.environ.get("SCALE_REUSE_PREDICTIONS") == "1":  # hours on a loaded host
        with open(os.path.join(d, "predictions.md")) as f:
            pred = f.read()
    else:
        extra = os.environ.get("SCALE_PREDICT_SET", "").split()
        pred = run(predict, [costs_path, "--nodes", "1024", "16384", "--slices", "5",
                             "--json", os.path.join(d, "predictions.json")] +
                   (["--set"] + extra if extra else []))
        with open(os.path.join(d, "predictions.md"), "w") as f:
            f.write(pred)
    print(val)
    print(pred)
    meta = costs["meta"]
    sizes = " ".join(str(p["nodes"]) for p in costs["points"])
    loads = [p.get("bg_runnable") for p in costs["points"] if p.get("bg_runnable") is not None]
    with open(os.path.join(d, "predictions.json")) as f:
        pj = json.load(f)
    rows = [r for r in pj["rows"] if r["nodes"] == 16384]
    pred_rows = [[r["profile"], "hardware" if r["hw_mcast"] else "tree",
                  "%.0f ms" % (r["launch_12m_s"] * 1e3), "%.0f µs" % r["caw_us"],
                  "%.0f µs" % r["strobe_skew_p99_us"], "%.0f µs" % r["timed_skew_p99_us"],
                  "%.1f ms" % (r["mm_cpu_per_slice_us"] / 1e3), "%.0f ms" % r["min_slice_ms"],
                  "%.0f MiB" % (r.get("nd_rss_mib") or 0), "%.0f MiB" % (r.get("mm_rss_mib") or 0)]
                 for r in rows]
    sec = ["## " + HEADING, "",
           "Command: `make bench-scale` (`SCALE_NODES=\"%s\"`; it runs `bench/scale/measure.py "
           "--nodes $(SCALE_NODES)`, then `bench/scale/model/report.py`, which writes this "
           "section). Generated from `%s`, %s, commit %s: %s virtual nodes of `%s` at a %d µs "
           "timeslice, %d CPUs, background runnable tasks %.1f–%.1f (%s); the model is "
           "calibrated on the 1- and 2-node points (a message's CPU and the MM's per-node costs on "
           "the sizes of 4 nodes and more: "
           "docs/design/scale.md) and predicts the others." % (
               sizes, os.path.relpath(costs_path, os.path.join(HERE, "..", "..", "..")),
               meta["date"], meta.get("commit") or "none", sizes, meta["provider"],
               meta["timeslice_us"], meta["nproc"], min(loads or [0]), max(loads or [0]),
               "**a shared 2-core host, loaded**" if max(loads or [0]) > 2
               else "a shared 2-core host, quiet during the run"),
           "", "### Predicted against measured on this host", "",
           val.strip(), "",
           "### Predicted at 16,384 nodes on a machine (a core per node, 10 ms timeslice)", "",
           ("With %s in place of the calibration's (`SCALE_PREDICT_SET`: measured beside "
            "this run, docs/design/scale.md).\n" % ", ".join(
                "`%s`" % kv for kv in os.environ.get("SCALE_PREDICT_SET", "").split())
            if os.environ.get("SCALE_PREDICT_SET", "").split() else ""),
           benchdoc.table(["profile", "multicast", "launch 12 MiB", "CAW", "strobe skew p99",
                           "timed switch skew p99", "MM CPU per slice",
                           "smallest slice (MM ≤ 50%)", "node daemon RSS", "MM RSS"],
                          pred_rows), "",
           "Limits of today's design, by the node count that reaches them: " +
           "; ".join("%d: %s" % (n, w) for w, n in pj["limits"]) + ".", ""]
    benchdoc.replace_section(doc, HEADING, "\n".join(sec))


if __name__ == "__main__":
    main()
