"""From a costs file (bench/scale/measure.py) to the model's parameters.

Only the calibration points are used: the 1-node cluster (launch CPU per
byte and per launch, the MM's and a node's CPU per slice, the launch's
non-CPU waits) and the 2-node point (one tree hop: COMPARE-AND-WRITE asleep
and busy-polling, the multicast's cost per byte); and for the MM's CPU per
slice per node alone, the largest point (the MM's per-slice CPU at 1 and 2
nodes differ by less than the load's noise). The points between are left
for validation.

Wall times measured on the shared host are stretched by its load: a task
that needs c seconds of CPU gets cores / (runnable tasks) of a core. The
calibration undoes that stretch with the background load measured at the
calibration point (procs_running), so the parameters are a daemon's own
costs, and the model puts the stretch back for the load of each point it
predicts.
"""
import math

from scalemodel import MIB, Model

# A machine: every node its own cores; the network per profile. The CPU
# costs that are the daemons' own work (tags, copies, the MM's per-slice
# work) come from this host's calibration; what the NIC does instead of the
# CPU, and the network, from the profile. Assumptions, README.md.
PROFILES = {
    # a message's CPU: half of an unloaded 8 B XFER ping-pong's one-way hop
    # on tcp;ofi_rxm (5.92 µs, BENCHMARKS.md "Primitives") at each end; the
    # value measured under this host's load (~100 µs) is its load's, not
    # storm's
    "eth100": {  # 100 Gb/s Ethernet, tcp;ofi_rxm: the kernel copies every byte
        "bw": 12.5e9, "lat": 3e-6, "msg_rate": 20e6, "wake": 10e-6, "c_msg": 3e-6,
        "clock_err": 10e-6, "timer_jitter": 5e-6, "rma_offload": False,
    },
    "ib200": {  # 200 Gb/s InfiniBand-class, verbs;ofi_rxm: RMA writes offloaded
        "bw": 25e9, "lat": 1.5e-6, "msg_rate": 200e6, "wake": 10e-6, "c_msg": 1e-6,
        "clock_err": 2e-6, "timer_jitter": 5e-6, "rma_offload": True,
    },
}


def point(costs, n):
    for p in costs["points"]:
        if p["nodes"] == n:
            return p
    return None


def _rates(cores, bg):
    """Share of a core a task gets with 1 and with 2 of ours runnable."""
    one = min(1.0, cores / (1.0 + bg))
    two = min(1.0, cores / (2.0 + bg))
    return one, two


def host_params(costs):
    """Parameters of this host's virtual cluster (shared cores)."""
    p1, p2 = point(costs, 1), point(costs, 2)
    if not p1 or not p2 or "launch_1m" not in p1 or "caw_us" not in p2:
        raise ValueError("the costs file needs the 1- and 2-node points (measure.py --nodes 1 2 ...)")
    # the host's share: the background that makes the model's 1-node launch
    # of 12 MiB take what it measured (the kernel shares the cores among
    # users' groups, so the count of runnable tasks overstates it)
    lo, hi = 0.0, 64.0
    for _ in range(14):
        mid = (lo + hi) / 2
        prm = _params(costs, p1, p2, mid)
        x, e = Model(**prm).launch(1, 12 * MIB, reps=3)
        if x + e < p1["launch_12m"]["total_ms"] * 1e-3:
            lo = mid
        else:
            hi = mid
    prm = _params(costs, p1, p2, lo)
    prm["wake_bench"] = _wake_bench(prm, p2)
    # what the 1-node launch of 1 MiB spent not computing (slice
    # alignment, polls): the measured times less the model's own
    x, e = Model(**prm).launch(1, MIB, reps=5)
    l1 = p1["launch_1m"]
    prm["transfer_wait"] = max(0.0, l1["transfer_ms"] * 1e-3 - x)
    prm["exec_wait"] = max(0.0, l1["execute_ms"] * 1e-3 - e)
    bgs = [v for q in (p1, p2) for v in (q.get("bg_runnable"), q.get("bg_runnable_end"))
           if v is not None]
    prm["bg_ref"] = sum(bgs) / len(bgs) if bgs else None
    return prm


def msg_cost(costs, p2):
    """A message's CPU at each end: the root's CPU per COMPARE-AND-WRITE
    over its message ends (a prepare and a decision down to each child and
    each one's answer up: 4 a child), least squares through the origin over
    the sizes where the root shares the cores with three processes or more
    (4 nodes and up), reads and writes. On 2 nodes the root's CPU per call
    is 94-107% of the call's wall time: it polls while its one peer works
    on the otherwise idle host, so that CPU is not its messages'. Without
    such sizes, the 2-node root's CPU over its four message ends."""
    f = costs["meta"].get("fanout", 4)
    num = den = 0.0
    for q in costs["points"]:
        if q["nodes"] < 4:
            continue
        ends = 4.0 * min(q["nodes"] - 1, f)
        for key in ("caw_cpu_us", "caw_write_cpu_us"):
            if q.get(key) is not None:
                num += ends * q[key] * 1e-6
                den += ends * ends
    return num / den if den else p2["caw_cpu_us"] * 1e-6 / 4.0


def _wake_bench(prm, p2):
    """sn_bench's wake-up: what makes the model's 2-node read take its
    measured wall time (bisection; 0 if the messages alone take longer)."""
    q = dict(prm, wake_bench=0.0)
    q.pop("bg_ref", None)
    target = p2["caw_us"] * 1e-6
    if Model(**q).caw_latency(2, reps=30) >= target:
        return 0.0
    lo, hi = 0.0, target
    for _ in range(16):
        q["wake_bench"] = (lo + hi) / 2
        if Model(**q).caw_latency(2, reps=30) < target:
            lo = q["wake_bench"]
        else:
            hi = q["wake_bench"]
    return lo


def _params(costs, p1, p2, bg):
    cores = costs["meta"]["nproc"]
    us = 1e-6
    # one hop: the root of a read CAW on 2 nodes sends the prepare, takes
    # its answer, sends the decision and takes its confirmation (its CPU
    # per operation: four message ends); the answer comes after the first
    # two, and the wall time beyond their four message costs (root and
    # member) is two wake-ups
    c = msg_cost(costs, p2)
    wake_bench = None  # host_params: from the 2-node read's wall time
    # a daemon's wake-up: the strobe's latency on 1 node (the MM's send,
    # the node's wake-up and receive) less its two message costs; a
    # constant part and an exponential tail, from its median and its 99th
    # percentile (an exponential's p99 is 4.61 means, its median 0.69)
    st1 = p1["strobe"]
    tail = max(0.0, (st1["latency_p99_us"] - st1["latency_p50_us"]) * us / (4.605 - 0.693))
    w50 = max(0.0, st1["latency_p50_us"] * us - 2.0 * c)
    tail = min(tail, w50 / 0.693)
    wake = w50 - 0.693 * tail + tail
    # a multicast hop's bytes: the root's CPU for 12 MiB less 1 MiB; the
    # receiving end's kernel copies as much
    b = max(0.0, (p2["mcast_12m_cpu_us"] - p2["mcast_1m_cpu_us"]) * us / (11 * MIB))
    # launches on 1 node: the daemons' CPU beyond what an idle slice costs
    ts = costs["meta"]["timeslice_us"] * us
    idle = p1["idle"]
    per_s_mm = idle["mm_cpu_per_slice_us"] * us * idle["strobes"] / idle["window_s"]
    per_s_nd = idle["nd_cpu_per_slice_us"] * us * idle["strobes"] / idle["window_s"]
    l1, l12 = p1["launch_1m"], p1["launch_12m"]

    def excess(l, key, rate):
        return l[key] * 1e-3 - rate * l["total_ms"] * 1e-3

    mm1, mm12 = excess(l1, "mm_cpu_ms", per_s_mm), excess(l12, "mm_cpu_ms", per_s_mm)
    nd1, nd12 = excess(l1, "nd_cpu_ms", per_s_nd), excess(l12, "nd_cpu_ms", per_s_nd)
    mm_pb = max(0.0, (mm12 - mm1) / (11 * MIB))
    nd_pb = max(0.0, (nd12 - nd1) / (11 * MIB))
    # the MM's CPU per slice per node: the difference between two sizes
    # must outgrow the load's noise, so it comes from the 1-node point and
    # the largest one measured (the points between validate it) -- or, with
    # three sizes or more at which the MM sends the strobe to a full fan-out
    # (below it, each node added is also one more send of the strobe), the
    # least-squares line through them, less sensitive to one noisy point
    pts = [q for q in costs["points"] if q.get("idle", {}).get("strobes")]
    big = max(pts, key=lambda q: q["nodes"])
    full = [q for q in pts if q["nodes"] >= costs["meta"].get("fanout", 4)]
    m_slope, m_base = 0.0, idle["mm_cpu_per_slice_us"] * us
    if len(full) >= 3:
        xs = [q["nodes"] for q in full]
        ys = [q["idle"]["mm_cpu_per_slice_us"] * us for q in full]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        m_slope = max(0.0, sum((x - mx) * (y - my) for x, y in zip(xs, ys))
                      / sum((x - mx) ** 2 for x in xs))
        m_base = max(0.0, my - m_slope * mx) + m_slope
    elif big["nodes"] > 1:
        m_slope = max(0.0, (big["idle"]["mm_cpu_per_slice_us"] - idle["mm_cpu_per_slice_us"])
                      * us / (big["nodes"] - 1))
    # the MM's CPU per node's report of a launch: at 1 and 2 nodes below the
    # noise, so (as the per-slice line) from the sizes with the full
    # fan-out: the MM's CPU per launch beyond its idle slices meanwhile, its
    # bytes' part and its fixed part, both program sizes, as a report's
    # cost r0 + r1 * N (least squares of r0 N + r1 N^2: a commit per report
    # of the job's row, whose arrays and the write-ahead log it appends to
    # grow with the job)
    xs, ys = [], []
    for q in full:
        rate = q["idle"]["mm_cpu_per_slice_us"] * us * q["idle"]["strobes"] / q["idle"]["window_s"]
        for key, nb in (("launch_1m", MIB), ("launch_12m", 12 * MIB)):
            lq = q.get(key) or {}
            if lq.get("mm_cpu_ms") is None or lq.get("total_ms") is None:
                continue
            xs.append(float(q["nodes"]))
            ys.append(excess(lq, "mm_cpu_ms", rate) - nb * mm_pb - max(0.0, mm1 - MIB * mm_pb))
    r0 = r1 = 0.0
    combined = float(costs["meta"].get("job_end_combined", 0))
    if combined:
        # the job's end combined: the first node's reports and one read,
        # whatever N, which the 1-node launch's fixed part (mm_launch_cpu)
        # holds already. The MM's CPU per launch at larger sizes beyond it
        # is its multicast to four children instead of one and the reads'
        # messages, which the model runs itself: taken as a report's cost
        # too, it was counted twice (5.4 ms in a run whose 1-node execute
        # phase took 2-3 ms)
        r0 = 0.0
    elif len(set(xs)) >= 3:
        s11 = sum(x * x for x in xs)
        s12 = sum(x ** 3 for x in xs)
        s22 = sum(x ** 4 for x in xs)
        t1 = sum(x * y for x, y in zip(xs, ys))
        t2 = sum(x * x * y for x, y in zip(xs, ys))
        det = s11 * s22 - s12 * s12
        r0 = (t1 * s22 - t2 * s12) / det
        r1 = (s11 * t2 - s12 * t1) / det
        if r0 < 0 or r1 < 0:  # one term alone
            r0, r1 = max(0.0, t1 / s11), 0.0
    return {
        "cores": cores, "bg": bg,
        "c_send": c, "c_recv": c, "b_send": b, "b_recv": b, "wake": wake, "wake_tail": tail,
        "wake_bench": wake_bench,
        # Linux's EEVDF base slice: 0.75 ms times 1 + log2(CPUs), for up to 8
        "quantum": 0.75e-3 * (1 + math.log2(min(cores, 8))),
        "mm_read_pb": max(0.1 * mm_pb, mm_pb - b),
        "consume_pb": max(0.1 * nd_pb, nd_pb - b),
        "mm_launch_cpu": max(0.0, mm1 - MIB * mm_pb),
        "nd_exec_cpu": max(0.0, nd1 - MIB * nd_pb),
        "mm_report_cpu": r0, "mm_report_cpu_node": r1,
        # the design measured (costs before the field: each node reported)
        "job_end_combined": combined,
        "mm_slice_cpu0": max(0.0, m_base - m_slope),
        "mm_slice_cpu_node": m_slope,
        "nd_slice_cpu": max(0.0, idle["nd_cpu_per_slice_us"] * us - c),
        # an idle node wakes 2.4-2.9 times a slice (voluntary context
        # switches of its threads, 4 and 16 nodes) and spends most of its
        # CPU on what every wake-up runs (perf: 60% of its samples in the
        # fabric's progress round and the poll, 11% in the strobe's own
        # handling): the turn that takes the strobe is half of it, the
        # turns after it the rest
        "nd_slice_at_strobe": 0.5,
        "timeslice": ts,
        "lat": 0.0, "bw": None, "msg_rate": None, "hw_mcast": False,
    }


def at_point(prm, pt):
    """The host's parameters for a point: the background found at
    calibration, scaled by how the other users' runnable tasks at pt
    compare with theirs then (procs_running before the point's cluster
    started and after it stopped, so not counting its own)."""
    q = dict(prm)
    ref = prm.get("bg_ref")
    bgs = [v for v in (pt.get("bg_runnable"), pt.get("bg_runnable_end")) if v is not None]
    if ref and bgs:
        q["bg"] = prm["bg"] * (1.0 + sum(bgs) / len(bgs)) / (1.0 + ref)
    q.pop("bg_ref", None)
    return q


def machine_params(prm, profile, hw_mcast=False, timeslice=10e-3):
    """A machine of the profile: a core per node, no background load, the
    host's CPU costs for what storm itself computes."""
    pr = PROFILES[profile]
    q = dict(prm)
    q.update({k: v for k, v in pr.items() if k in ("bw", "lat", "msg_rate", "wake", "clock_err",
                                                   "timer_jitter")})
    q["cores"] = None
    q["bg"] = 0.0
    q["wake_bench"] = None
    q.pop("bg_ref", None)
    q["hw_mcast"] = hw_mcast
    q["timeslice"] = timeslice
    q["wake_tail"] = None
    q["c_send"] = q["c_recv"] = pr["c_msg"]
    if pr["rma_offload"]:
        q["b_send"] = q["b_recv"] = 0.0
    # the measured waits were the virtual host's slice alignment: on a
    # machine, half a slice on average before the Launch is acted on
    q["transfer_wait"] = 0.0
    q["exec_wait"] = timeslice / 2
    return q
