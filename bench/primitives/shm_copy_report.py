#!/usr/bin/env python3
"""Writes the "## Primitives: shm copies into a mapped peer" section of
docs/BENCHMARKS.md from bench/primitives/shm_copy.sh's results: per size and
way of waiting, the median XFER time and its bandwidth as a share of memcpy's.
Usage: shm_copy_report.py RESULTS.jsonl DOC"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import benchdoc  # noqa: E402

HEADING = "Primitives: shm copies into a mapped peer (bench/primitives/shm_copy.sh)"


def span(vals, fmt):
    lo, hi = min(vals), max(vals)
    return fmt % lo if fmt % lo == fmt % hi else (fmt % lo) + "–" + (fmt % hi)


def fmt_us(us):
    return "%.0f µs" % us if us < 1000 else "%.2f ms" % (us / 1000)


def us_span(vals):
    lo, hi = fmt_us(min(vals)), fmt_us(max(vals))
    return lo if lo == hi else lo + "–" + hi


def main():
    res, doc = sys.argv[1], sys.argv[2]
    rows = benchdoc.load(res)
    meta = next((r for r in rows if r.get("bench") == "meta"), {})
    runs = [r for r in rows if r.get("bench") == "xfer_mcast" and r.get("memcpy_mbps")]
    host = benchdoc.host_meta()
    host.update({k: meta[k] for k in ("date", "commit") if meta.get(k)})
    load0 = float(meta.get("load1_start", host["load1"]))
    out = []
    for size in sorted({r["size"] for r in runs}):
        for spin in (False, True):
            sel = [r for r in runs if r["size"] == size and r["spin"] == spin]
            if not sel:
                continue
            share = [r["mbps"] / r["memcpy_mbps"] for r in sel]
            out.append(["%d MiB" % (size >> 20), "spinning, pinned" if spin else "sleeping",
                        str(len(sel)), us_span([r["median_us"] for r in sel]),
                        span([r["mbps"] / 1000 for r in sel], "%.1f") + " GB/s",
                        span([r["memcpy_mbps"] / 1000 for r in sel], "%.1f") + " GB/s",
                        span(share, "%.2f") + (" ✓" if min(share) >= 0.5 else " ✗")])
    text = ["## " + HEADING, "",
            benchdoc.header("bench/primitives/shm_copy.sh (BENCH_QUICK=1: one round)",
                            "bench/primitives/shm_copy_report.py", res, host, load0), "",
            "On shm a node maps the global memory of each peer it writes to and copies each "
            "chunk with `memcpy` (`docs/design/network.md`, \"Copies into a mapped peer\"). "
            "One XFER-AND-SIGNAL to one node (`sn_bench --provider shm --nodes 2 --test mcast "
            "--iters 20`, local event), against the single-thread `memcpy` sn_bench measures "
            "in the same process (1 MiB stays in cache, 12 MiB does not); ranges over the "
            "rounds. Target: at least half of `memcpy`.", "",
            benchdoc.table(["size", "nodes wait", "rounds", "median", "XFER", "memcpy",
                            "share of memcpy (≥ 0.5)"], out)]
    section = "\n".join(text) + "\n"
    print(section)
    benchdoc.replace_section(doc, HEADING, section)


if __name__ == "__main__":
    main()
