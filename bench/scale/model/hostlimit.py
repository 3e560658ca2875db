#!/usr/bin/env python3
"""Which limit of this host stands between storm's launch and the launch
targets (8 nodes at 0.1x srun --bcast, 64 nodes at 2x the copy floor), and
by how much.

Every virtual node shares the host's cores, so a launch can take no less
than the CPU work it needs divided by the cores: the MM's read and tag of
the program, each node's receive from its parent and send to its children
(a multicast hop's bytes at both ends), each node's copy, check and write
of its own file, and each side's fixed work per launch, all calibrated from
the 1- and 2-node points of a costs file (calibrate.py). A copy floor
(one process writing N copies) does the last term's write only. The bound
is printed beside the target and the launch measured (the costs file's own
point when it has one, and bench/launch's results when given), and the
per-node work that would have to go for the target to be reachable here.

usage: hostlimit.py COSTS.json [--launch RESULTS.jsonl] [--size-mib 12]
                    [--nodes 8 64]
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "launch"))
from calibrate import _params, point  # noqa: E402
from scalemodel import MIB  # noqa: E402


def cpu_terms(prm, nodes, size):
    """The launch's CPU work on this host, term by term (seconds)."""
    return {
        "the MM's read and tag": prm["mm_launch_cpu"] + size * prm["mm_read_pb"],
        "multicast hops (send and receive)": nodes * size * (prm["b_send"] + prm["b_recv"]),
        "nodes' copy, check and write": nodes * size * prm["consume_pb"],
        "nodes' exec and end": nodes * prm["nd_exec_cpu"],
    }


def launch_results(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    from report import Results  # bench/launch/report.py
    return Results(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("costs")
    ap.add_argument("--launch", help="bench/launch's results.jsonl (srun --bcast, copy floor)")
    ap.add_argument("--size-mib", type=int, default=12)
    ap.add_argument("--nodes", nargs="+", type=int, default=[8, 64])
    a = ap.parse_args()
    costs = json.load(open(a.costs))
    p1, p2 = point(costs, 1), point(costs, 2)
    if not p1 or not p2:
        sys.exit("hostlimit.py: the costs file needs its 1- and 2-node points")
    # no background: the bound is what the host's cores can do at best
    prm = _params(costs, p1, p2, 0.0)
    res = launch_results(a.launch) if a.launch else None
    size = a.size_mib * MIB
    print("| nodes | target | target time | CPU work | of it the nodes' per-byte work | "
          "bound on %d cores | storm measured | bound / target |" % prm["cores"])
    print("|---|---|---|---|---|---|---|---|")
    for n in a.nodes:
        terms = cpu_terms(prm, n, size)
        work = sum(terms.values())
        bound = work / prm["cores"]
        target = name = None
        if res:
            if n <= 8:
                b = res.med("srun_bcast", a.size_mib, n)
                target, name = (0.1 * b * 1e-3, "0.1x srun --bcast") if b else (None, None)
            else:
                f = res.floor(a.size_mib, n)
                target, name = (2 * f * 1e-3, "2x the copy floor") if f else (None, None)
        meas = None
        if res and res.med("storm", a.size_mib, n) is not None:
            meas = res.med("storm", a.size_mib, n) * 1e-3
        else:
            q = point(costs, n)
            if q and q.get("launch_12m", {}).get("total_ms") and a.size_mib == 12:
                meas = q["launch_12m"]["total_ms"] * 1e-3
        per_byte = terms["multicast hops (send and receive)"] + terms["nodes' copy, check and write"]
        print("| %d | %s | %s | %.0f ms | %.0f ms | %.0f ms | %s | %s |" % (
            n, name or "-", "%.0f ms" % (target * 1e3) if target else "-", work * 1e3,
            per_byte * 1e3, bound * 1e3, "%.0f ms" % (meas * 1e3) if meas else "-",
            "%.2f" % (bound / target) if target else "-"))
    print()
    print("Terms (ms of CPU), from %s:" % os.path.basename(a.costs))
    for n in a.nodes:
        terms = cpu_terms(prm, n, size)
        print("- %d nodes: " % n + "; ".join("%s %.1f" % (k, v * 1e3) for k, v in terms.items()))


if __name__ == "__main__":
    main()
