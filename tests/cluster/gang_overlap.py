#!/usr/bin/env python3
"""Samples the CPU time of two gang-scheduled jobs' ranks from outside
every ~1 ms (the process's CPU-time clock, as clock_getcpuclockid gives
it: exact for a task on a CPU, where /proc/PID/schedstat and stat lag by up
to a scheduler tick) and says how much of it
they spent on the CPU at the same time on the same node.

Usage: gang_overlap.py SECONDS PID,PID,... PID,...   (job A's ranks, job B's)
A rank's node is its parent (the node daemon that forked it). Each read is
bracketed by clock reads, so a rank's CPU time a between two reads was spent
inside a known span; if A's rank on a node ran a ns and B's rank there b ns
over spans whose union is u long, at least a + b - u of it was concurrent
(this holds however this sampler is delayed between its reads). Prints the
concurrent fraction: the sum of those lower bounds over the sum of a + b,
as JSON with the samples taken."""
import json
import sys
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

    last = read()
    both = total = 0
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
            both += max(0, da + db - u)
            total += da + db
        last = now
        samples += 1
    frac = both / total if total else 0.0
    print(json.dumps({"samples": samples, "concurrent": round(frac, 4),
                      "cpu_s": round(total / 1e9, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
