#!/usr/bin/env python3
"""Samples the ranks of gang-scheduled jobs at random moments and checks the
gang property: at any moment the jobs whose ranks run are exactly the jobs of
one row of the matrix, and each job runs on all its nodes or on none.

Usage: gang_sample.py SECONDS JOB:PID,PID,... JOB:PID,...  < matrix.json
The ranks must be CPU-bound spinners, so a rank that may run is in state R;
a stopped (SIGSTOP: T) or frozen (cgroup freezer: S) rank is not.

A sample caught while nodes switch rows may see the old and the new row at
once; a violation counts only if it persists over four further samples
spread across 60 ms. On a real cluster a switch is done within a
millisecond; here the node daemons share two cores with the spinners, and a
daemon woken by a strobe can wait several milliseconds for a core (see
docs/BENCHMARKS.md, Gang scheduling: switch skew), so rows in the test last
250 ms and the settling window is 60 ms. Exit 0 when
no violation persists and every job ran in some sample; 1 otherwise, with
what was seen."""
import json
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


def main():
    seconds = float(sys.argv[1])
    jobs = {}
    for arg in sys.argv[2:]:
        job, pids = arg.split(":")
        jobs[int(job)] = [int(p) for p in pids.split(",")]
    matrix = json.load(sys.stdin)
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
            persisted = True
            for _ in range(4):
                time.sleep(0.015)
                now, problems = sample()
                if not problems:
                    persisted = False
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
