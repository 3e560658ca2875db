#!/usr/bin/env python3
"""Samples the ranks of gang-scheduled jobs at random moments and checks the
gang property: at any moment the jobs whose ranks run are exactly the jobs of
one row of the matrix, and each job runs on all its nodes or on none.

Usage: GANG_DAEMONS=PID,... gang_sample.py SECONDS JOB:PID,PID,... JOB:PID,...  < matrix.json
The ranks must be CPU-bound spinners, so a rank that may run is in state R;
a stopped (SIGSTOP: T) or frozen (cgroup freezer: S) rank is not.

A sample caught while nodes switch rows may see the old and the new row at
once. A violation counts only if it is still there once every party that
could end it has had the CPU: each daemon (GANG_DAEMONS, their pids: the
node daemons and the MM, whose strobe a node that followed its schedule
ahead to the end waits for) scheduled at least 3 times since it was seen,
so the strobe that ends the row was sent and taken, and each rank still
running scheduled at least twice, so a
SIGSTOP sent to it was delivered (a runnable task takes a pending stop only
when it next runs). How long that takes depends on the machine's load (the
daemons share two cores with the spinners and whatever else runs), so it is
waited for, not timed: at least 60 ms, at most 30 s. Exit 0 when no
violation persists and every job ran in some sample; 1 otherwise, with
what was seen."""
import json
import os
import random
import sys
import time


def state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return "?"
    return s[s.rindex(")") + 2]


def running(pid):
    return state(pid) == "R"


def scheduled(pid):
    """How many times pid's main thread got a CPU (/proc/PID/schedstat)."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[2])
    except (OSError, IndexError, ValueError):
        return None


def settled(daemons, ranks, since):
    """Every daemon scheduled 3 times and every rank still running twice
    since the counts in since (a pid gone counts as settled)."""
    for pid in daemons:
        n = scheduled(pid)
        if n is not None and n < since[pid] + 3:
            return False
    for pid in ranks:
        n = scheduled(pid)
        if n is not None and running(pid) and n < since[pid] + 2:
            return False
    return True


def main():
    seconds = float(sys.argv[1])
    jobs = {}
    for arg in sys.argv[2:]:
        job, pids = arg.split(":")
        jobs[int(job)] = [int(p) for p in pids.split(",")]
    matrix = json.load(sys.stdin)
    daemons = [int(p) for p in os.environ.get("GANG_DAEMONS", "").split(",") if p]
    ranks = [p for pids in jobs.values() for p in pids]
    rows = [frozenset(j for j in row if j in jobs) for row in matrix["rows"]]
    allowed = {r for r in rows if r}

    def sample():
        run = {j: [running(p) for p in pids] for j, pids in jobs.items()}
        problems = []
        for j, flags in run.items():
            if any(flags) and not all(flags):
                problems.append(f"job {j} runs on some nodes only: {flags}")
        now = frozenset(j for j, flags in run.items() if all(flags))
        if now and now not in allowed:
            problems.append(f"jobs {sorted(now)} run together, but no row holds exactly them "
                            f"(rows: {[sorted(r) for r in rows]})")
        return now, problems

    seen_running = set()
    samples = violations = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(random.uniform(0.001, 0.02))
        now, problems = sample()
        samples += 1
        if problems:
            since = {pid: scheduled(pid) or 0 for pid in daemons + ranks}
            seen = time.monotonic()
            persisted = True
            while True:
                time.sleep(0.015)
                now, problems = sample()
                if not problems:
                    persisted = False
                    break
                waited = time.monotonic() - seen
                if waited >= 30 or (waited >= 0.06 and settled(daemons, ranks, since)):
                    break
            if persisted:
                violations += 1
                print("violation: " + "; ".join(problems))
        seen_running |= now
    starved = sorted(set(jobs) - seen_running)
    print(f"{samples} samples, {violations} persistent violations, "
          f"jobs seen running: {sorted(seen_running)}")
    if starved:
        print(f"jobs never seen running: {starved}")
    return 0 if violations == 0 and not starved else 1


if __name__ == "__main__":
    sys.exit(main())
