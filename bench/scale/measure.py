#!/usr/bin/env python3
"""Per-hop costs of storm, measured on the real daemons of a virtual cluster
at a few sizes, written as one JSON costs file for the scale model
(bench/scale/model/).

usage: measure.py [--nodes 4 8] [--out FILE] [--reps 5] [--window 3]
                  [--timeslice-us 10000] [--provider P] [--ppn 1] [--no-sn]
                  [--sn-max 16] [--caw-runs 3] [--job-end-combined 0|1]

The 1- and 2-node points, which calibrate the model, are always measured.
For each size N:
  sn_bench (2 <= N <= --sn-max)  read-only and writing COMPARE-AND-WRITE over N nodes
                     (--caw-runs runs each, alternating; the median of their
                     medians, and each), multicast of 1 and 12 MiB to N-1 nodes
                     (wall, median), the root's CPU per operation
                     (node0_cpu_us), and every process's CPU per
                     COMPARE-AND-WRITE (the runs' CPU less a short run's)
  storm cluster up --nodes N --timeslice-us T, with STORM_TRACE:
    idle             every daemon's CPU (/proc/PID/schedstat, ns) and
                     wake-ups (voluntary context switches) over a window,
                     per strobe the MM sent in it (mm.trace); how many node
                     daemons run at SCHED_FIFO (the virtual cluster's share
                     of a core drops one over it to nice -10) at its end and
                     after the launches
    strobe           per slice of the window that every node saw: arrival
                     skew (last - first T_RECV) and latency (T_RECV - send)
    launch           `storm run --timing -N N -n N*ppn` of do-nothing programs
                     of 1 and 12 MiB (bench/launch/make-app.sh): transfer,
                     execute, total (medians), and the daemons' CPU per launch
    footprint        VmRSS, RssAnon and socket descriptors of the MM and of the node
                     daemons after the launches (each endpoint has connected
                     to every peer it talked to)
Every daemon of the cluster shares this host's CPUs: what the model needs for
that (the number of CPUs, the load average) is recorded beside the costs.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.join(TOP, "build", "bin")
MIB = 1 << 20


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def load1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def runnable(seconds=1.0, samples=20):
    """Mean number of runnable tasks on the host other than this sampler
    (procs_running of /proc/stat): the background load the model's shared
    cores see."""
    v = []
    for _ in range(samples):
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("procs_running"):
                    v.append(int(line.split()[1]) - 1)
        time.sleep(seconds / samples)
    return sum(v) / len(v)


def children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def sn_bench(provider, nodes, test, size=None, iters=20, warmup=3, cpu=None):
    """One sn_bench run's JSON line; cpu, a list, gets the CPU seconds of
    every process of the run (sn_bench waits for its node processes)."""
    c0 = children_cpu_s()
    cmd = [os.path.join(BIN, "sn_bench"), "--provider", provider, "--nodes", str(nodes),
           "--test", test, "--iters", str(iters), "--warmup", str(warmup), "--budget-s", "30"]
    if size is not None:
        cmd += ["--size", str(size)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError("sn_bench %s %d nodes: %s" % (test, nodes, p.stderr.strip()[-300:]))
    if cpu is not None:
        cpu.append(children_cpu_s() - c0)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("{")][-1]
    return json.loads(line)


def storm(args, env=None, timeout=120):
    return subprocess.run([os.path.join(BIN, "storm")] + args, capture_output=True,
                          text=True, timeout=timeout, env=env)


def pids(d):
    out = {}
    with open(os.path.join(d, "pids")) as f:
        for line in f:
            p = line.split()
            if len(p) >= 2:
                out[int(p[0])] = p[1]
    return out


def mm_and_nodes(d):
    ps = pids(d)
    mm = [p for p, n in ps.items() if n == "mm"]
    nodes = [p for p, n in ps.items() if n != "mm" and os.path.exists("/proc/%d/stat" % p)
             and "stormnd" in open("/proc/%d/comm" % p).read()]
    return (mm[0] if mm else None), nodes


def per_thread_sum(pid, read):
    """read(tid_dir) summed over every thread of pid (libfabric's and the
    daemon's own); a thread gone meanwhile counts 0."""
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return 0
    t = 0
    for tid in tids:
        try:
            t += read("/proc/%d/task/%s" % (pid, tid))
        except OSError:
            pass
    return t


def cpu_ns(pid):
    """CPU time of every thread of pid."""
    def one(d):
        with open(d + "/schedstat") as f:
            return int(f.read().split()[0])
    return per_thread_sum(pid, one)


def rss_kib(pid, field="VmRSS"):
    """VmRSS (everything resident, the shared libraries' pages too) or
    RssAnon (the daemon's own: heap, the provider's buffers, stacks)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def wakeups(pid):
    """Voluntary context switches of every thread of pid: its sleeps,
    so its wake-ups."""
    def one(d):
        with open(d + "/status") as f:
            for line in f:
                if line.startswith("voluntary_ctxt_switches:"):
                    return int(line.split()[1])
        return 0
    return per_thread_sum(pid, one)


def fifo(pid):
    """Whether pid's main thread runs at SCHED_FIFO (policy, field 41 of
    /proc/PID/stat)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[38]) == 1
    except (OSError, IndexError, ValueError):
        return None


def sockets(pid):
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:"):
                n += 1
        except OSError:
            pass
    return n


def app(size_mib):
    path = os.path.join(TOP, "build", "bench", "app-%dM" % size_mib)
    if not (os.path.exists(path) and os.path.getsize(path) == size_mib * MIB):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        subprocess.run([os.path.join(TOP, "bench", "launch", "make-app.sh"), str(size_mib), path],
                       check=True, capture_output=True)
    return path


def timing(stderr):
    for line in stderr.splitlines():
        if " timing: transfer " in line:
            p = line.split("timing:")[1].replace(",", " ").split()
            return {"transfer_ms": float(p[1]), "execute_ms": float(p[4]), "total_ms": float(p[7])}
    return None


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def pct(vals, p):
    if not vals:
        return None
    vals = sorted(vals)
    k = (len(vals) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(vals) - 1)
    return vals[lo] + (vals[hi] - vals[lo]) * (k - lo)


def strobes(tdir, t0, t1, nnodes):
    """MM strobes sent in [t0, t1] (CLOCK_MONOTONIC ns), and per slice that
    every node saw the arrival skew and the latencies."""
    send = {}
    with open(os.path.join(tdir, "mm.trace")) as f:
        for line in f:
            p = line.split()
            if len(p) == 5 and p[0] == "strobe":
                t = float(p[4])
                if t0 <= t <= t1:
                    send[int(p[1])] = t
    recv = {}
    for name in os.listdir(tdir):
        if not name.endswith(".trace") or name == "mm.trace":
            continue
        with open(os.path.join(tdir, name)) as f:
            for line in f:
                p = line.split()
                if len(p) == 6 and p[0] == "strobe" and int(p[1]) in send:
                    recv.setdefault(int(p[1]), []).append(int(p[3]))
    skew, lat = [], []
    for sl, ts in recv.items():
        if len(ts) == nnodes:
            skew.append((max(ts) - min(ts)) / 1e3)
            lat += [(t - send[sl]) / 1e3 for t in ts]
    return {"strobes": len(send), "slices_all_nodes": len(skew),
            "skew_p50_us": pct(skew, 50), "skew_p99_us": pct(skew, 99),
            "latency_p50_us": pct(lat, 50), "latency_p99_us": pct(lat, 99),
            "last_arrival_p50_us": pct([(max(v) - send[k]) / 1e3 for k, v in recv.items()
                                         if len(v) == nnodes], 50)}


def cluster_point(n, a, apps):
    pt = {}
    d = tempfile.mkdtemp(prefix="storm-scale-costs.")
    tdir = os.path.join(d, "trace")
    os.makedirs(tdir)
    sdir = os.path.join(d, "c")
    env = dict(os.environ, STORM_CONF=os.path.join(sdir, "storm.conf"), STORM_TRACE=tdir)
    try:
        up = ["cluster", "up", "--nodes", str(n), "--dir", sdir, "--provider", a.provider,
              "--timeslice-us", str(a.timeslice_us)]
        if a.job_end_combined is not None:
            up += ["--job-end-combined", str(a.job_end_combined)]
        r = storm(up, env=env, timeout=300)
        if r.returncode != 0:
            return {"error": "cluster up: " + (r.stderr.strip().splitlines() or ["?"])[-1]}
        # the design measured: the storm.conf the cluster runs (1, its
        # default, unless it says otherwise)
        with open(os.path.join(sdir, "storm.conf")) as f:
            pt["job_end_combined"] = 0 if "job_end_combined = 0" in f.read() else 1
        mm, nds = mm_and_nodes(sdir)
        # idle: the MM's and the nodes' CPU per strobe
        time.sleep(0.5)  # not a synchronisation: lets the first slices' set-up pass
        c0 = {p: cpu_ns(p) for p in [mm] + nds}
        w0 = {p: wakeups(p) for p in [mm] + nds}
        t0 = time.monotonic_ns()
        time.sleep(a.window)  # the measurement window itself
        t1 = time.monotonic_ns()
        c1 = {p: cpu_ns(p) for p in [mm] + nds}
        w1 = {p: wakeups(p) for p in [mm] + nds}
        idle_mm = c1[mm] - c0[mm]
        idle_nd = sum(c1[p] - c0[p] for p in nds)
        wake_mm = w1[mm] - w0[mm]
        wake_nd = sum(w1[p] - w0[p] for p in nds)
        fifo_idle = sum(1 for p in nds if fifo(p))
        mm_fifo_idle = fifo(mm)
        # launches
        for size, path in apps:
            runs = []
            for i in range(a.reps + 1):
                b0 = {p: cpu_ns(p) for p in [mm] + nds}
                r = storm(["run", "--timing", "-N", str(n), "-n", str(n * a.ppn), path], env=env)
                b1 = {p: cpu_ns(p) for p in [mm] + nds}
                t = timing(r.stderr)
                if r.returncode != 0 or t is None:
                    log("launch %d MiB on %d nodes failed: %s" % (size, n, r.stderr.strip()[-200:]))
                    continue
                if i == 0:
                    continue  # warm-up
                t["mm_cpu_ms"] = (b1[mm] - b0[mm]) / 1e6
                t["nd_cpu_ms"] = sum(b1[p] - b0[p] for p in nds) / 1e6 / n
                runs.append(t)
            key = "launch_%dm" % size
            pt[key] = {k: med([x[k] for x in runs]) for k in
                       ("transfer_ms", "execute_ms", "total_ms", "mm_cpu_ms", "nd_cpu_ms")}
            pt[key]["runs"] = len(runs)
        pt["nd_fifo_after_launches"] = sum(1 for p in nds if fifo(p))
        pt["mm_fifo_after_launches"] = fifo(mm)
        pt["rss_mm_kib"] = rss_kib(mm)
        pt["rss_nd_kib"] = med([rss_kib(p) for p in nds])
        pt["anon_mm_kib"] = rss_kib(mm, "RssAnon")
        pt["anon_nd_kib"] = med([rss_kib(p, "RssAnon") for p in nds])
        pt["sockets_mm"] = sockets(mm)
        pt["sockets_nd"] = med([sockets(p) for p in nds])
        storm(["cluster", "down", "--dir", sdir], env=env, timeout=120)
        st = strobes(tdir, t0, t1, n)
        ns = max(1, st["strobes"])
        pt["idle"] = {"window_s": (t1 - t0) / 1e9, "strobes": st["strobes"],
                      "mm_cpu_per_slice_us": idle_mm / 1e3 / ns,
                      "nd_cpu_per_slice_us": idle_nd / 1e3 / ns / n,
                      "mm_wakes_per_slice": wake_mm / ns, "nd_wakes_per_slice": wake_nd / ns / n,
                      "nd_fifo": fifo_idle, "mm_fifo": mm_fifo_idle}
        pt["strobe"] = st
    finally:
        storm(["cluster", "down", "--dir", sdir], env=env, timeout=120)
        subprocess.run(["rm", "-rf", d])
    return pt


def sn_point(n, a):
    pt = {}
    try:
        # COMPARE-AND-WRITE calls are short: enough of them that the
        # median of a read and of a write settles (30 left the 4-node write
        # 26% below the read measured in the same minute); and several runs
        # of each, alternating: the 4-node read measured 78, 123 and 166 µs
        # in three runs of 200 calls (each run's calls share one placement
        # of the processes on the cores, so its spread says little)
        runs = {"caw": [], "caw_write": []}
        cpus = {"caw": [], "caw_write": []}
        for _ in range(a.caw_runs):
            for test in ("caw", "caw_write"):
                r = sn_bench(a.provider, n, test, None, iters=200, cpu=cpus[test])
                runs[test].append(r)
        for test in ("caw", "caw_write"):
            meds = [r["median_us"] for r in runs[test]]
            pt[test + "_us"] = med(meds)
            pt[test + "_runs_us"] = meds
            pt[test + "_cpu_us"] = med([r.get("node0_cpu_us") for r in runs[test]])
            # every process's CPU per call (the members' besides the
            # root's): the runs' CPU less a short run's, which has the
            # same start-up, over the calls between them
            short = []
            sn_bench(a.provider, n, test, None, iters=20, cpu=short)
            calls = sum(r.get("iters", 200) for r in runs[test]) - len(runs[test]) * 20
            if calls > 0:
                pt[test + "_all_cpu_us"] = (sum(cpus[test]) - len(runs[test]) * short[0]) \
                    * 1e6 / calls
        for key, test, size, iters in (("mcast_1m", "mcast", MIB, 10),
                                       ("mcast_12m", "mcast", 12 * MIB, 5)):
            r = sn_bench(a.provider, n, test, size, iters=iters)
            pt[key + "_us"] = r["median_us"]
            # the root's own CPU per operation: per message and per byte
            pt[key + "_cpu_us"] = r.get("node0_cpu_us")
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        pt["sn_error"] = str(e)[-300:]
    return pt


def git_commit():
    r = subprocess.run(["git", "-C", TOP, "rev-parse", "--short", "HEAD"], capture_output=True,
                       text=True)
    return r.stdout.strip() or None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", nargs="+", type=int, default=[1, 2, 4, 8])
    ap.add_argument("--out", default=os.path.join(TOP, "bench", "results", "scale-latest",
                                                   "costs.json"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--window", type=float, default=3.0)
    ap.add_argument("--timeslice-us", type=int, default=10000)
    ap.add_argument("--sn-max", type=int, default=16,
                    help="largest size for sn_bench (its processes busy the host longest)")
    ap.add_argument("--provider", default="tcp;ofi_rxm")
    ap.add_argument("--ppn", type=int, default=1)
    ap.add_argument("--no-sn", action="store_true", help="skip sn_bench")
    ap.add_argument("--caw-runs", type=int, default=3,
                    help="sn_bench runs of each COMPARE-AND-WRITE test a size")
    ap.add_argument("--job-end-combined", type=int, choices=(0, 1), default=None,
                    help="the cluster's job_end_combined (default: storm's own default)")
    a = ap.parse_args()
    for f in ("storm", "stormmm", "stormnd", "sn_bench"):
        if not os.access(os.path.join(BIN, f), os.X_OK):
            sys.exit("measure.py: build/bin/%s missing: make all build/bin/sn_bench" % f)
    if any(n < 1 or n > 1000 for n in a.nodes):
        sys.exit("measure.py: --nodes: each size must be 1..1000")
    apps = [(1, app(1)), (12, app(12))]
    out = {"meta": {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "commit": git_commit(), "nproc": os.cpu_count(), "provider": a.provider,
                    "timeslice_us": a.timeslice_us, "ppn": a.ppn, "reps": a.reps,
                    "window_s": a.window, "fanout": 4, "load1_start": load1()},
           "points": []}
    t_start = time.time()
    for n in sorted(set(a.nodes) | {1, 2}):  # 1 and 2: the model's calibration
        log("%d nodes (load %.2f)" % (n, load1()))
        pt = {"nodes": n, "load1": load1(), "bg_runnable": runnable()}
        if 2 <= n <= a.sn_max and not a.no_sn:
            pt.update(sn_point(n, a))
        pt.update(cluster_point(n, a, apps))
        pt["load1_end"] = load1()
        pt["bg_runnable_end"] = runnable()
        out["points"].append(pt)
        if "job_end_combined" in pt:
            out["meta"]["job_end_combined"] = pt["job_end_combined"]
        log("  " + json.dumps({k: v for k, v in pt.items() if not isinstance(v, dict)}))
        out["meta"]["load1_end"] = load1()
        out["meta"]["seconds"] = round(time.time() - t_start, 1)
        write(a.out, out)  # after every point: a long run stopped early keeps what it has
    log("wrote " + a.out)


def write(path, out):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(out, f, indent=1)
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
