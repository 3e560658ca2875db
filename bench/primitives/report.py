#!/usr/bin/env python3
"""Turns bench/primitives results (JSON lines) into the "## Primitives
(bench/primitives)" section of docs/BENCHMARKS.md, replacing that section if
it is there and keeping the rest of the file.

usage: report.py RESULTS.jsonl docs/BENCHMARKS.md
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchdoc import fmt_ratio, load, ratio, replace_section, table  # noqa: E402

SECTION = "## Primitives (bench/primitives)"
PROVIDERS = ["tcp;ofi_rxm", "shm", "sockets", "udp;ofi_rxd"]
TARGET = 1.5
MCAST_SIZE = 12 << 20



class Results:
    def __init__(self, rows):
        self.rows = rows

    def find(self, bench, provider=None, nodes=None, size=None, spin=None,
             local_ev=None):
        """The matching result without an error (of several repeated runs, the
        one with the median value), or None. local_ev filters xfer_lat runs
        (runs from before the option always had a local event)."""
        hits = []
        for r in self.rows:
            if r.get("bench") != bench or "error" in r:
                continue
            if local_ev is not None and r.get("local_ev", True) != local_ev:
                continue
            if provider is not None and r.get("provider") != provider:
                continue
            if nodes is not None and r.get("nodes") != nodes:
                continue
            if size is not None and r.get("size") != size:
                continue
            if spin is not None and r.get("spin") != spin:
                continue
            hits.append(r)
        if not hits:
            return None
        hits.sort(key=value)
        return hits[(len(hits) - 1) // 2]

    def count(self, bench, provider=None, nodes=None, size=None, spin=None,
              local_ev=None):
        return sum(1 for r in self.rows if r.get("bench") == bench and "error" not in r
                   and (local_ev is None or r.get("local_ev", True) == local_ev)
                   and (provider is None or r.get("provider") == provider)
                   and (nodes is None or r.get("nodes") == nodes)
                   and (size is None or r.get("size") == size)
                   and (spin is None or r.get("spin") == spin))

    def values(self, bench, provider=None, size=None, **kw):
        """Every value of the matching runs (to show how repeated runs vary)."""
        return sorted(value(r) for r in self.rows
                      if r.get("bench") == bench and "error" not in r
                      and (provider is None or r.get("provider") == provider)
                      and (size is None or r.get("size") == size)
                      and all(r.get(k) == v for k, v in kw.items()))

    def failed(self, bench, provider, nodes):
        for r in self.rows:
            if (r.get("bench") == bench and r.get("provider") == provider and
                    r.get("nodes") == nodes and "error" in r):
                return r["error"]
        return None

    def meta(self, key):
        for r in self.rows:
            if r.get("bench") in ("meta", "meta_end") and key in r:
                return r[key]
        return None

    def node_counts(self):
        return sorted({r["nodes"] for r in self.rows
                       if r.get("bench") in ("xfer_mcast", "caw", "mpi_bcast")
                       and "nodes" in r})


def us(v):
    """A duration in µs, readable."""
    if v is None:
        return "–"
    if v >= 100000:
        return "%.0f ms" % (v / 1000)
    if v >= 10000:
        return "%.1f ms" % (v / 1000)
    if v >= 1000:
        return "%.2f ms" % (v / 1000)
    if v >= 100:
        return "%.0f µs" % v
    if v >= 10:
        return "%.1f µs" % v
    return "%.2f µs" % v


def value(r):
    """A result's value in µs: the median, or fi_pingpong's mean."""
    return r["median_us"] if "median_us" in r else r["mean_us"]


def med(r):
    return value(r) if r else None


def mean(r):
    """The mean in µs (fi_pingpong's only statistic; sn_bench reports both)."""
    if not r:
        return None
    return r.get("mean_us", r.get("median_us"))


def spread(r):
    if not r:
        return "–"
    if "p10_us" not in r:
        return us(value(r))
    return "%s (%s–%s)" % (us(r["median_us"]), us(r["p10_us"]), us(r["p90_us"]))






def cell(res, bench, prov, n, **kw):
    r = res.find(bench, prov, n, **kw)
    if r:
        return r
    return None


def failed_cell(res, bench, prov, n):
    e = res.failed(bench, prov, n)
    return "failed (%s)" % e if e else "–"


def times(n):
    return {0: "no times", 1: "once", 2: "twice"}.get(n, "%d times" % n)




def build(res, results_path):
    L = []
    date = res.meta("date") or "?"
    nproc = res.meta("nproc")
    cpu = res.meta("cpu") or "?"
    quick = res.meta("quick")
    secs = res.meta("seconds")
    l0, l1 = res.meta("load1_start"), res.meta("load1_end")
    loads = [r["load1"] for r in res.rows if "load1" in r]
    L.append(SECTION)
    L.append("")
    L.append("Command: `make bench` (runs `bench/primitives/run.sh` after `make all`;"
             " `BENCH_QUICK=1 make bench` for a shorter run)%s. Generated by"
             " `bench/primitives/report.py` from `%s`." %
             (" — this run was a quick one" if quick else "", results_path))
    L.append("")
    L.append("Date: %s. Machine: %s × %s, Linux %s, libfabric %s, MPICH %s (%s). "
             "**2 cores, shared with other jobs**: the 1-minute load average was %s at the"
             " start, %s at the end, %s–%s across the runs (recorded per result as"
             " `load1`), so every number here is noisy and the ratios matter more than"
             " the absolute values. All node processes are local (forked by"
             " `tests/lib/spawn.c`); up to 32 of them share the 2 cores. Whole run: %s s." %
             (date, nproc, cpu, res.meta("kernel") or "?", res.meta("libfabric") or "?",
              res.meta("mpich") or "?", res.meta("mpich_device") or "?", l0, l1,
              min(loads) if loads else "?", max(loads) if loads else "?", secs))
    L.append("")
    L.append("Method: medians (p10–p90 in brackets) over ≥ 20 iterations after warm-up,"
             " except where a measurement reached its time budget first (then ≥ 5;"
             " `iters` in the JSON). storm nodes wait with the library's default"
             " (`spin_us = 0`: sleep on the completion fd, or back off with nanosleep"
             " when the provider has none) unless marked *spin* (`spin_us` = 1 s:"
             " busy-poll, as fi_pingpong and MPICH do). MPICH runs with `mpiexec -n N`"
             " (hydra's default, no binding; `-bind-to none` measured the same; ch4 has"
             " no yield knob — `MPIR_CVAR_POLLS_BEFORE_YIELD` is ch3-only — so its ranks"
             " busy-poll).")
    L.append("")

    # ---------------------------------------------------------- latency
    pps = med(res.find("fi_pingpong", "sockets", size=8))
    sockets_note = ""
    if pps is not None and pps > 1000:
        sockets_note = (" The busy-polling `sockets` rows (both fi_pingpong and XFER) are"
                        " bound by the scheduler's time slice, not by the network"
                        " (see below): their ratios mean nothing.")
    L.append("### XFER-AND-SIGNAL latency, 2 nodes (half round trip)")
    L.append("")
    L.append("fi_pingpong: `fi_pingpong -p P -e rdm -S SIZE -I K` (server and client on"
             " 127.0.0.1, `-d lo` for sockets, pinned with `taskset` to two different"
             " CPUs), its mean µs per transfer (it reports no distribution). XFER:"
             " `sn_bench --test lat --pin 1` (its two nodes pinned the same way, both"
             " busy-polling: `spin_us` = 1 s), median with p10–p90, and its mean. For 8 B"
             " both ran %s, interleaved, and the table shows the run with the median"
             " value of each. In the XFER test node 0 XFERs to node 1 with a remote"
             " event, node 1 waits in TEST-EVENT and XFERs back. The XFERs ask for no"
             " local event, as a daemon answering a request does (the reply is the"
             " confirmation, as in fi_pingpong), so no ACK travels; the column *with local"
             " event* is the same ping-pong with a local event on every XFER, waited for"
             " before the next one, so every XFER is also acknowledged by its"
             " destination. Target: XFER 8 B (spin) ≤ 1.5x fi_pingpong; *ratio* is"
             " XFER's median over fi_pingpong's mean (the comparison used since the"
             " first report), *mean ratio* is mean over mean.%s" %
             (times(res.count("fi_pingpong", "shm", size=8)), sockets_note))
    L.append("")
    rows = []
    for p in PROVIDERS:
        pp = res.find("fi_pingpong", p, size=8)
        x = res.find("xfer_lat", p, 2, 8, spin=True, local_ev=False)
        xa = res.find("xfer_lat", p, 2, 8, spin=True, local_ev=True)
        xn = res.find("xfer_lat", p, 2, 8, spin=False)
        pp_s = us(med(pp)) if pp else failed_cell(res, "fi_pingpong", p, 2)
        runs = res.values("fi_pingpong", p, 8)
        if len(runs) > 1:
            pp_s += " (runs: %s)" % ", ".join(us(v) for v in runs)
        row = ["`%s`" % p, pp_s, spread(x) if x else failed_cell(res, "xfer_lat", p, 2),
               fmt_ratio(ratio(med(x), med(pp)), TARGET), us(mean(x)),
               fmt_ratio(ratio(mean(x), med(pp))),
               "%s (%s)" % (us(med(xa)), fmt_ratio(ratio(med(xa), med(pp)))) if xa else "–",
               spread(xn)]
        for size in (65536, 1 << 20):
            ppl = res.find("fi_pingpong", p, size=size)
            xl = res.find("xfer_lat", p, 2, size, spin=True)
            row += [us(med(ppl)), us(med(xl)), fmt_ratio(ratio(med(xl), med(ppl)))]
        rows.append(row)
    m8 = res.find("mpi_lat", None, 2, 8)
    m64 = res.find("mpi_lat", None, 2, 65536)
    m1m = res.find("mpi_lat", None, 2, 1 << 20)
    if m8:
        rows.append(["MPICH (own shm), MPI_Send/Recv", "–", spread(m8), "–", "–", "–", "–",
                     "–", "–", us(med(m64)), "–", "–", us(med(m1m)), "–"])
    L.append(table(["provider", "fi_pingpong 8 B", "XFER 8 B, spin", "ratio",
                    "XFER 8 B mean", "mean ratio", "XFER 8 B with local event (ratio)",
                    "XFER 8 B, no spin", "fi_pingpong 64 KiB", "XFER 64 KiB, spin", "ratio",
                    "fi_pingpong 1 MiB", "XFER 1 MiB, spin", "ratio"], rows))
    L.append("")
    noisy = []
    for p in PROVIDERS:
        runs = res.values("fi_pingpong", p, 8)
        if len(runs) > 1 and runs[0] > 0 and runs[-1] / runs[0] > 1.5 and \
                not (p == "sockets" and sockets_note):
            noisy.append("`%s` (%s to %s)" % (p, us(runs[0]), us(runs[-1])))
    if noisy:
        L.append("**Caution:** fi_pingpong's repeated 8 B runs disagree by more than 1.5x"
                 " on %s: its mean absorbs every time another job takes the CPU, while"
                 " XFER's median does not, so in this run the median-over-mean *ratio*"
                 " flatters storm; the *mean ratio* is the like-for-like one (and is"
                 " just as exposed to the load)." % ", ".join(noisy))
        L.append("")

    nodes = [n for n in res.node_counts() if n >= 2]

    # ---------------------------------------------------------- multicast
    L.append("### Multicast: XFER-AND-SIGNAL of 12 MiB to N-1 nodes vs MPI_Bcast")
    L.append("")
    L.append("XFER: node 0 sends 12 MiB to nodes 1..N-1 and waits for its local event"
             " (every destination holds the data); a barrier between iterations; MB/s"
             " is 12 MiB / time, the rate each destination sees (not summed over"
             " destinations)."
             " MPI_Bcast: barrier, then each rank times its MPI_Bcast; the iteration's"
             " value is the slowest rank's. Timing each rank from its own entry"
             " underestimates small broadcasts (a rank that leaves the barrier late"
             " finds the data already there; see the 8 B column below), so any error"
             " favours MPICH. Ratio = XFER / MPI_Bcast (below 1: storm"
             " faster). Target: ≤ 1.5x with shm at 32 nodes.")
    L.append("")
    rows = []
    for n in nodes:
        b = res.find("mpi_bcast", None, n, MCAST_SIZE)
        row = [str(n), spread(b)]
        for p in PROVIDERS:
            x = res.find("xfer_mcast", p, n, MCAST_SIZE, spin=False)
            if x:
                row.append("%s, %.0f MB/s" % (us(med(x)), x["mbps"]))
                row.append(fmt_ratio(ratio(med(x), med(b)), TARGET if p == "shm" and n == 32 else None))
            else:
                row += [failed_cell(res, "xfer_mcast", p, n), "–"]
        rows.append(row)
    hdr = ["N", "MPI_Bcast 12 MiB"]
    for p in PROVIDERS:
        hdr += ["XFER `%s`" % p, "ratio"]
    L.append(table(hdr, rows))
    L.append("")
    rows = []
    for n in nodes:
        row = [str(n)]
        for size in (8, 65536, 1 << 20):
            row.append(us(med(res.find("mpi_bcast", None, n, size))))
        rows.append(row)
    L.append("MPI_Bcast of smaller sizes, for reference:")
    L.append("")
    L.append(table(["N", "8 B", "64 KiB", "1 MiB"], rows))
    L.append("")

    # ---------------------------------------------------------- CAW
    L.append("### COMPARE-AND-WRITE vs MPI_Allreduce")
    L.append("")
    L.append("CAW: node 0 runs a read-only COMPARE-AND-WRITE (`var >= 0`) over all N"
             " nodes, back to back; the other nodes wait in TEST-EVENT (which is where"
             " they forward and answer). MPI_Allreduce of one uint64 and MPI_Barrier,"
             " back to back, timed at rank 0. Ratio = CAW / MPI_Allreduce. Target:"
             " ≤ 1.5x with shm at 32 nodes.")
    L.append("")
    rows = []
    for n in nodes:
        a = res.find("mpi_allreduce", None, n)
        bar = res.find("mpi_barrier", None, n)
        row = [str(n), spread(a), us(med(bar))]
        for p in PROVIDERS:
            for spin in (False, True):
                c = res.find("caw", p, n, spin=spin)
                if c:
                    row.append("%s (%s)" % (us(med(c)),
                                            fmt_ratio(ratio(med(c), med(a)),
                                                      TARGET if p == "shm" and n == 32 else None)))
                else:
                    row.append(failed_cell(res, "caw", p, n) if not spin else "–")
        rows.append(row)
    hdr = ["N", "MPI_Allreduce", "MPI_Barrier"]
    for p in PROVIDERS:
        hdr += ["CAW `%s`" % p, "CAW `%s`, spin" % p]
    L.append(table(hdr, rows))
    L.append("")

    L.append("CAW with a write (`var >= 0`, then another variable := a value, on all N): the"
             " prepare and the commit are two tree round trips before the answer, a read's"
             " answer comes after one (its locks are released after it). Without spinning;"
             " the read's time beside it.")
    L.append("")
    rows = []
    for n in nodes:
        row = [str(n)]
        for p in PROVIDERS:
            w, r = res.find("caw_write", p, n, spin=False), res.find("caw", p, n, spin=False)
            row.append("%s (read %s)" % (us(med(w)), us(med(r))) if w and r else
                       (us(med(w)) if w else failed_cell(res, "caw_write", p, n)))
        rows.append(row)
    L.append(table(["N"] + ["CAW write `%s`" % p for p in PROVIDERS], rows))
    L.append("")

    # ---------------------------------------------------------- headline
    L.append("### Headline")
    L.append("")
    for p in PROVIDERS:
        x = res.find("xfer_lat", p, 2, 8, spin=True, local_ev=False)
        pp = res.find("fi_pingpong", p, size=8)
        L.append("- XFER 8 B vs fi_pingpong, `%s`: %s (median %s vs %s; mean %s, %s)" %
                 (p, fmt_ratio(ratio(med(x), med(pp)), TARGET), us(med(x)), us(med(pp)),
                  us(mean(x)), fmt_ratio(ratio(mean(x), med(pp)))))
    x = res.find("xfer_mcast", "shm", 32, MCAST_SIZE, spin=False)
    b = res.find("mpi_bcast", None, 32, MCAST_SIZE)
    L.append("- multicast 12 MiB, shm, 32 nodes vs MPI_Bcast: %s (%s vs %s)" %
             (fmt_ratio(ratio(med(x), med(b)), TARGET), us(med(x)), us(med(b))))
    for spin in (False, True):
        c = res.find("caw", "shm", 32, spin=spin)
        a = res.find("mpi_allreduce", None, 32)
        L.append("- CAW, shm%s, 32 nodes vs MPI_Allreduce: %s (%s vs %s)" %
                 (", spin" if spin else "", fmt_ratio(ratio(med(c), med(a)), TARGET),
                  us(med(c)), us(med(a))))
    for spin in (False, True):
        c = res.find("caw", "shm", 2, spin=spin)
        a = res.find("mpi_allreduce", None, 2)
        L.append("- CAW, shm%s, 2 nodes vs MPI_Allreduce: %s (%s vs %s)" %
                 (", spin" if spin else "", fmt_ratio(ratio(med(c), med(a)), TARGET),
                  us(med(c)), us(med(a))))
    L.append("")

    fails = failures(res)
    if fails:
        L.extend(fails + [""])
    return "\n".join(L)


def failures(res):
    """The runs that failed, for the section's end."""
    out = []
    fails = [r for r in res.rows if "error" in r]
    if fails:
        out.append("- **Failures in this run:** " + "; ".join(
            "%s on `%s` with %s nodes (%s)" % (r["bench"], r.get("provider"), r.get("nodes"),
                                                 r["error"]) for r in fails) +
            ". See the run's `log.txt` next to the results.")
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    res = Results(load(sys.argv[1]))
    rel = os.path.relpath(sys.argv[1])
    section = build(res, rel)
    doc = sys.argv[2]
    replace_section(doc, 'Primitives (bench/primitives)', section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
