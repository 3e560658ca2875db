#!/usr/bin/env python3
"""Samples the CPU time of two gang-scheduled jobs' ranks from outside
every ~1 ms (the process's CPU-time clock, as clock_getcpuclockid gives
it) and says how much of it they spent on the CPU at the same time on the
same node. Read from another process, that clock of a task running on
another CPU advances only at its scheduler ticks, so time is booked late
and the figure is an overestimate: two processes that never run at once
measure 8-9% here. So, where perf can record sched:sched_switch on every
CPU (root), the same span is also traced and "exact" is the fraction from
the ranks' on-CPU intervals (null when it cannot be traced).

Usage: gang_overlap.py SECONDS PID,PID,... PID,...   (job A's ranks, job B's)
A rank's node is its parent (the node daemon that forked it). Each read is
bracketed by clock reads, so a rank's CPU time a between two reads was spent
inside a known span; if A's rank on a node ran a ns and B's rank there b ns
over spans whose union is u long, at least a + b - u of it was concurrent
(this holds however this sampler is delayed between its reads). Prints the
concurrent fraction: the sum of those lower bounds over the sum of a + b,
as JSON with the samples taken."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time


def cpu_ns(pid):
    # the kernel's CPU clock id of a process: MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
    try:
        return time.clock_gettime_ns(((~pid) << 3) | 2)
    except OSError:
        return None


def parent(pid):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    return int(s[s.rindex(")") + 2:].split()[1])


SWITCH = re.compile(r"\s([\d.]+):\s+sched:sched_switch:.*prev_pid=(\d+).*==>.*next_pid=(\d+)")


def on_cpu(text, pids):
    """Each pid's on-CPU intervals from perf script's sched_switch lines."""
    start, spans, last = {}, {p: [] for p in pids}, None
    for line in text.splitlines():
        m = SWITCH.search(line)
        if not m:
            continue
        t, prev, nxt = float(m[1]), int(m[2]), int(m[3])
        last = t
        if prev in start:
            spans[prev].append((start.pop(prev), t))
        if nxt in spans:
            start[nxt] = t
    for p, t0 in start.items():
        spans[p].append((t0, last))
    return spans


def both(x, y):
    i = j = 0
    tot = 0.0
    while i < len(x) and j < len(y):
        lo, hi = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        tot += max(0.0, hi - lo)
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return tot


def trace_start(seconds):
    """perf recording every CPU's sched_switch for seconds, or None."""
    try:
        d = tempfile.mkdtemp(prefix="gang_overlap.")
        out = os.path.join(d, "perf.data")
        p = subprocess.Popen(["perf", "record", "-q", "-e", "sched:sched_switch", "-a",
                              "-o", out, "--", "sleep", str(seconds)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return p, d, out
    except OSError:
        return None


def trace_overlap(rec, pairs):
    """The exact concurrent fraction from the recording, or None."""
    if not rec:
        return None
    p, d, out = rec
    try:
        if p.wait() != 0:
            return None
        text = subprocess.run(["perf", "script", "-i", out], capture_output=True,
                              text=True).stdout
    finally:
        subprocess.run(["rm", "-rf", d])
    spans = on_cpu(text, [x for pr in pairs for x in pr])
    conc = total = 0.0
    for x, y in pairs:
        conc += both(spans[x], spans[y])
        total += sum(e - s for s, e in spans[x] + spans[y])
    return round(conc / total, 4) if total else None


def main():
    seconds = float(sys.argv[1])
    a = [int(p) for p in sys.argv[2].split(",")]
    b = [int(p) for p in sys.argv[3].split(",")]
    pa = {parent(p): p for p in a}
    pb = {parent(p): p for p in b}
    pairs = [(pa[n], pb[n]) for n in pa if n in pb]
    if not pairs:
        print(json.dumps({"error": "the jobs share no node"}))
        return 1
    def read():
        out = {}
        for pr in pairs:
            for p in pr:
                t0 = time.monotonic_ns()
                v = cpu_ns(p)
                out[p] = (v, t0, time.monotonic_ns())
        return out

    rec = trace_start(seconds)
    last = read()
    conc = total = 0
    samples = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.001)
        now = read()
        for x, y in pairs:
            (ax, sx, _), (nx, _, ex) = last[x], now[x]
            (ay, sy, _), (ny, _, ey) = last[y], now[y]
            if None in (ax, nx, ay, ny):
                continue
            da, db = nx - ax, ny - ay
            u = max(ex, ey) - min(sx, sy)
            conc += max(0, da + db - u)
            total += da + db
        last = now
        samples += 1
    frac = conc / total if total else 0.0
    print(json.dumps({"samples": samples, "concurrent": round(frac, 4),
                      "cpu_s": round(total / 1e9, 3), "exact": trace_overlap(rec, pairs)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
