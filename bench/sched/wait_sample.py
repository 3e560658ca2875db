#!/usr/bin/env python3
"""wait_sample.py SECONDS PID:NAME...: every 5 ms reads each process's main
thread schedstat (time on a core, time waiting for one, times run); prints
per process its longest single wait for a core (run_delay is added when the
thread gets the core, so one interval's growth with one more run is one
wait), its worst 1 s window of waiting, its CPU time and its total wait."""
import sys
import time

dur = float(sys.argv[1])
procs = [(int(a.split(':')[0]), a.split(':')[1]) for a in sys.argv[2:]]


def read(pid):
    with open(f'/proc/{pid}/task/{pid}/schedstat') as f:
        a = f.read().split()
    return int(a[0]), int(a[1]), int(a[2])


st = {}
for pid, name in procs:
    c, d, p = read(pid)
    st[pid] = dict(c0=c, d0=d, last=(c, d, p), streak=0, maxwait=0, hist=[], worst=0)
t0 = time.monotonic()
while time.monotonic() - t0 < dur:
    time.sleep(0.005)
    now = time.monotonic()
    for pid, name in procs:
        s = st[pid]
        try:
            c, d, p = read(pid)
        except OSError:
            continue
        s['streak'] += d - s['last'][1]
        s['maxwait'] = max(s['maxwait'], s['streak'])
        if p != s['last'][2]:
            s['streak'] = 0
        s['hist'].append((now, d))
        while now - s['hist'][0][0] > 1.0:
            s['hist'].pop(0)
        s['worst'] = max(s['worst'], d - s['hist'][0][1])
        s['last'] = (c, d, p)
for pid, name in procs:
    s = st[pid]
    c, d, _ = s['last']
    print(f"{name}: longest wait {s['maxwait'] / 1e6:.0f} ms, worst second {s['worst'] / 1e6:.0f} ms "
          f"waiting, {(c - s['c0']) / 1e6:.0f} ms on a core, {(d - s['d0']) / 1e6:.0f} ms waiting")
