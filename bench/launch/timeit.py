#!/usr/bin/env python3
"""Times a command for bench/launch: a warm-up run or more (not kept), then
REPS timed runs, each from fork to exit on the monotonic clock
(time.perf_counter_ns), with an optional untimed --prepare shell command
before every run (to remove the previous run's copies, for instance). Prints
one JSON line: the --field values, the samples and their median, min and max
in ms. With --storm-timing each run's stderr must hold storm's line
    storm: job 5 timing: transfer 12.3 ms, execute 20.1 ms, total 35.0 ms
whose three values are kept too (transfer_ms, execute_ms, total_ms: medians).
A run that fails, times out (--timeout, per run: the whole process group is
killed) or lacks the timing line ends the measurement: the JSON line then has
"error" and the exit status is 1; the command's stderr goes to our stderr.

usage: timeit.py [--reps R] [--warmup W] [--timeout S] [--prepare CMD]
                 [--storm-timing] [--cwd DIR] [--field KEY=VALUE]...
                 -- COMMAND [ARG]...
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

STORM_RE = re.compile(r"storm: job \S+ timing: transfer ([0-9.]+) ms, "
                      r"execute ([0-9.]+) ms, total ([0-9.]+) ms")


def field(s):
    k, sep, v = s.partition("=")
    if not sep or not k:
        raise argparse.ArgumentTypeError("--field wants KEY=VALUE, not %r" % s)
    try:
        return k, json.loads(v)  # numbers, true/false stay typed
    except ValueError:
        return k, v


def run_once(cmd, timeout, cwd):
    """(elapsed ms, exit status or None on timeout, stderr text)"""
    t0 = time.perf_counter_ns()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True, cwd=cwd)
    try:
        _, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, err = p.communicate()
        rc = None
    t1 = time.perf_counter_ns()
    return (t1 - t0) / 1e6, rc, err.decode(errors="replace")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per run")
    ap.add_argument("--prepare", help="shell command run (untimed) before every run")
    ap.add_argument("--storm-timing", action="store_true")
    ap.add_argument("--cwd", help="directory to run the command in")
    ap.add_argument("--field", type=field, action="append", default=[])
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd or a.reps < 1 or a.warmup < 0:
        ap.error("a command (after --) and --reps >= 1 are needed")

    out = dict(a.field)
    samples, parts = [], []
    for i in range(a.warmup + a.reps):
        if a.prepare:
            subprocess.run(a.prepare, shell=True, check=False)
        ms, rc, err = run_once(cmd, a.timeout, a.cwd)
        bad = None
        if rc is None:
            bad = "timeout after %g s" % a.timeout
        elif rc != 0:
            bad = "exit %d" % rc if rc > 0 else "signal %d" % -rc
        timing = None
        if bad is None and a.storm_timing:
            m = STORM_RE.search(err)
            if not m:
                bad = "no storm timing line on stderr"
            else:
                timing = [float(x) for x in m.groups()]
        if bad is not None:
            sys.stderr.write(err[-4000:])
            out["error"] = "%s (run %d of %d)" % (bad, i + 1, a.warmup + a.reps)
            out["samples_ms"] = samples
            print(json.dumps(out, separators=(",", ":")), flush=True)
            return 1
        if i >= a.warmup:
            samples.append(round(ms, 3))
            if timing:
                parts.append(timing)
    out["reps"] = a.reps
    out["warmup"] = a.warmup
    out["median_ms"] = round(statistics.median(samples), 3)
    out["min_ms"] = min(samples)
    out["max_ms"] = max(samples)
    out["samples_ms"] = samples
    if parts:
        for j, name in enumerate(("transfer", "execute", "total")):
            vals = [p[j] for p in parts]
            out[name + "_ms"] = round(statistics.median(vals), 3)
            out[name + "_samples_ms"] = vals
    print(json.dumps(out, separators=(",", ":")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
