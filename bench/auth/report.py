#!/usr/bin/env python3
"""Writes the "## Authentication (bench/auth)" section of docs/BENCHMARKS.md
from mac_bench's CSV: the time to check each kind of tag, and a MUNGE
credential's round trip.
Usage: report.py RESULTS.csv LOAD_AT_START DOC"""
import csv
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import benchdoc  # noqa: E402

HEADING = "Authentication (bench/auth)"
# mac_bench's row names, as the table names them
NAMES = {
    "report slot": "full report slot",
    "file chunk (Poly1305)": "file chunk, Poly1305 under a one-time key (used)",
    "file chunk (BLAKE2b; not used)": "file chunk, keyed BLAKE2b (not used)",
    "munge encode+decode": "MUNGE credential, encode + decode (once per control connection)",
}


def rows(path):
    out = []
    with open(path) as f:
        for r in csv.DictReader(f):
            ns, size = float(r["ns"]), int(r["bytes"])
            cell = "{:,.0f}".format(ns).replace(",", " ")
            if size >= 1 << 20:
                cell += " (%.1f GB/s)" % (size / ns)
            out.append([NAMES.get(r["what"], r["what"]), "{:,}".format(size).replace(",", " "),
                        cell])
    return out


def main():
    res, load0, doc = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    meta = benchdoc.host_meta()
    text = ["## " + HEADING, "",
            benchdoc.header("make bench-auth", "bench/auth/report.py", res, meta, load0), "",
            "One process on one core: `mac_bench` times each check in a loop (the median of "
            "21 timed loops; a file chunk and a MUNGE round trip the median of 21 single "
            "runs), the MUNGE row against a private munged.", "",
            benchdoc.table(["what", "bytes tagged", "ns per check"], rows(res))]
    section = "\n".join(text) + "\n"
    print(section)
    benchdoc.replace_section(doc, HEADING, section)


if __name__ == "__main__":
    main()
