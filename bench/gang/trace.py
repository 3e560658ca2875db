#!/usr/bin/env python3
"""Summarises a STORM_TRACE directory (mm.trace and one NODE.trace per node
daemon, written by a virtual cluster on this machine, so their
CLOCK_MONOTONIC times are comparable) as one JSON object on stdout:

  latency   strobe delivery: node T_RECV - MM T_SEND of the same slice, over
            every strobe the MM sent down its tree and every node received
  skew      per switch K: max - min over the nodes of T_SWITCH_DONE of the
            lines with NSWITCHED > 0 and SWITCHES == K; only switches that
            every node made (the rest are counted as partial)
  timed     with the schedule ahead (storm.conf [scheduler] ahead): per
            switch K the same spread over the "switch" lines (the node's
            timer at the slot's start; NSWITCHED > 0), the lateness of each
            (T_DONE - DEADLINE), the strict wait (OFF_NS) and its timeouts;
            missed switches: slots some node switched and another did not,
            with switches of every node at most 4 slots before and after
            (around a job's launch and end its nodes switch apart for tens
            of slots, since the launch reaches them at different times),
            and switches done a whole timeslice or more past their deadline
            (the node ran the old row through the slot)
  missed    per node: gaps in its SLICE sequence, counted from its first
            strobe at or after the MM's first traced one (before that the
            node was not yet in the tree and got only every fourth probe)

usage: trace.py DIR [key=value ...]   (the pairs are added to the object)
"""
import bisect
import glob
import json
import os
import sys


MISS_SPAN = 4


def pct(vals, p):
    if not vals:
        return None
    vals = sorted(vals)
    k = (len(vals) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(vals) - 1)
    return vals[lo] + (vals[hi] - vals[lo]) * (k - lo)


def main():
    d = sys.argv[1]
    out = {"bench": "gang_trace"}
    for kv in sys.argv[2:]:
        k, _, v = kv.partition("=")
        try:
            out[k] = json.loads(v)
        except ValueError:
            out[k] = v
    send = {}
    with open(os.path.join(d, "mm.trace")) as f:
        for line in f:
            p = line.split()
            if len(p) == 5 and p[0] == "strobe":
                send[int(p[1])] = float(p[4])
    first = min(send) if send else 0
    lat = []
    switch_done = {}  # K -> [t_done per node]
    missed = {}
    timed, late, off, timeouts = {}, [], [], 0
    nodes = sorted(glob.glob(os.path.join(d, "*.trace")))
    nodes = [n for n in nodes if os.path.basename(n) != "mm.trace"]
    for path in nodes:
        name = os.path.basename(path)[:-len(".trace")]
        last = None
        gaps = 0
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) == 8 and p[0] == "switch" and int(p[5]) > 0:
                    timed.setdefault(int(p[1]), {})[name] = int(p[4])
                    late.append(int(p[4]) - int(p[2]))
                    off.append(int(p[6]))
                    timeouts += int(p[7])
                    continue
                if len(p) != 6 or p[0] != "strobe":
                    continue
                sl, sw, trecv, tdone, nsw = int(p[1]), int(p[2]), int(p[3]), int(p[4]), int(p[5])
                t = send.get(sl)
                if t is not None:
                    lat.append(trecv - t)
                if nsw > 0:
                    switch_done.setdefault(sw, {})[name] = tdone
                if sl < first:
                    continue
                if last is not None and sl > last + 1:
                    gaps += sl - last - 1
                if last is None or sl > last:
                    last = sl
        missed[name] = gaps
    skews, partial = [], 0
    for k, per in switch_done.items():
        if len(per) == len(nodes):
            v = list(per.values())
            skews.append(max(v) - min(v))
        else:
            partial += 1
    tskews = [max(v.values()) - min(v.values()) for v in timed.values() if len(v) == len(nodes)]
    # a job starts and ends on its nodes tens of slots apart (its launch
    # reaches them at different times), and meanwhile only some nodes
    # switch: a miss is a slot some node skipped with full switches (every
    # node's) at most MISS_SPAN slots before and after it
    full = sorted(k for k, v in timed.items() if len(v) == len(nodes))
    tpartial = 0
    for k, v in timed.items():
        if len(v) == len(nodes) or not full:
            continue
        i = bisect.bisect_left(full, k)
        if 0 < i < len(full) and k - full[i - 1] <= MISS_SPAN and full[i] - k <= MISS_SPAN:
            tpartial += 1
    slice_ns = int(out.get("timeslice_us") or 0) * 1000
    tlate = sum(1 for x in late if slice_ns and x >= slice_ns)
    us = lambda x: None if x is None else round(x / 1000.0, 2)  # noqa: E731
    out.update({
        "strobes_sent": len(send),
        "latency_n": len(lat),
        "latency_p50_us": us(pct(lat, 50)), "latency_p99_us": us(pct(lat, 99)),
        "latency_max_us": us(max(lat) if lat else None),
        "switches_n": len(skews), "switches_partial": partial,
        "skew_p50_us": us(pct(skews, 50)), "skew_p99_us": us(pct(skews, 99)),
        "skew_max_us": us(max(skews) if skews else None),
        "timed_switches_n": len(tskews),
        "timed_skew_p50_us": us(pct(tskews, 50)), "timed_skew_p99_us": us(pct(tskews, 99)),
        "timed_late_p50_us": us(pct(late, 50)), "timed_late_p99_us": us(pct(late, 99)),
        "timed_partial": tpartial, "timed_late_over_slice": tlate,
        "timed_missed": tpartial + tlate,
        "strict_off_p50_us": us(pct(off, 50)), "strict_off_p99_us": us(pct(off, 99)),
        "strict_timeouts": timeouts,
        "missed_total": sum(missed.values()),
        "missed_max_per_node": max(missed.values()) if missed else None,
        "missed_per_node": missed,
    })
    print(json.dumps(out))


if __name__ == "__main__":
    main()
