#!/usr/bin/env python3
"""Writes the "## PMI" section of docs/BENCHMARKS.md from bench/pmi/run.sh's
results: medians per runner, and storm's over mpiexec's."""
import json, re, statistics, sys

res, command = sys.argv[1], sys.argv[2]
vals = {}
for line in open(res):
    r = json.loads(line)
    vals.setdefault((r["mode"], r["key"]), {}).setdefault(r["runner"], []).append(r["value"])

def fmt_size(k):
    n = int(k)
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1 << 10 else f"{n} B"

out = ["## PMI: unmodified MPICH programs under storm run", "",
       f"`{command}`; every rank on this host under both, so both use MPICH's same "
       "transports (ch4:ucx): the difference is storm's PMI-1 wire-up and gang "
       "scheduling. Medians over repetitions; ratio = storm / mpiexec (latency, "
       "init: lower is better; bandwidth: higher is better).", "",
       "| measure | size | storm run (PMI-1) | mpiexec (Hydra) | ratio |", "|---|---|---|---|---|"]
for mode, unit in (("latency", "us"), ("bw", "MB/s"), ("init", "ms")):
    keys = sorted({k for (m, k) in vals if m == mode}, key=lambda k: int(k) if k.isdigit() else 0)
    for k in keys:
        d = vals[(mode, k)]
        if "storm" not in d or "mpiexec" not in d:
            continue
        s, m = statistics.median(d["storm"]), statistics.median(d["mpiexec"])
        if mode == "init":
            s, m = s / 1000, m / 1000
        size = fmt_size(k) if k.isdigit() else "-"
        name = {"latency": "ping-pong latency", "bw": "streaming bandwidth",
                "init": "MPI_Init, all ranks"}[mode]
        out.append(f"| {name} ({unit}) | {size} | {s:.2f} | {m:.2f} | {s / m:.2f} |")
section = "\n".join(out) + "\n"
print(section)
path = "docs/BENCHMARKS.md"
doc = open(path).read()
pat = re.compile(r"^## PMI: .*?(?=^## |\Z)", re.S | re.M)
doc = pat.sub(section + "\n", doc) if pat.search(doc) else doc.rstrip("\n") + "\n\n" + section
open(path, "w").write(doc)
