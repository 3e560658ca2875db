"""A discrete-event model of storm at scale (Python 3, standard library only).

What it models (README.md beside this file says why and with which limits):
the machine manager (MM) as the root of every operation, the fan-out tree of
net_abstraction/tree.h, XFER-AND-SIGNAL in RMA pieces down that tree (or one
hardware multicast), COMPARE-AND-WRITE as a down-and-up combining wave, the
program transfer with its two file buffers and COMPARE-AND-WRITE flow control
(daemons/mm/transfer.c), the launch command, the nodes' reports and the
termination check, the per-slice strobe, and the time-triggered switch with
clock error.

Every node daemon is one single-threaded process: its work items run one at
a time, in order. Where they run is the CPU model: on a *virtual cluster*
every daemon shares the host's few cores (processor sharing, with optional
background load); on a *machine* every node has a core of its own. A sleeping
daemon pays a wake-up delay before its first work item. Messages cost CPU at
both ends (per message and per byte) and, on a machine, the sender's link
(bandwidth, message rate) and the network's latency.
"""
import heapq
import math
import random
from collections import deque

MIB = 1 << 20

# ------------------------------------------------------------ storm's layout
# These mirror common/layout.h and net_abstraction/sn.h; test_scalemodel.py
# checks them against the values layout.h gives for the sizes it allows.
FANOUT = 4                       # storm.conf [cluster] fanout default
RMA_CHUNK = 1 << 20              # SN_RMA_CHUNK_DEFAULT
FILE_CHUNK_HDR = 152             # sizeof(struct file_chunk)
FILE_DATA_MAX = (4 << 20) - FILE_CHUNK_HDR
STROBE_HDR = 56                  # sizeof(struct strobe)
STROBE_SLOT = 24                 # sizeof(struct strobe_slot)
TAG = 16                         # GM_TAG_BYTES
GM_STROBE_MAX = 20480            # one of the two strobe areas (layout.h)
STROBE_AHEAD_MAX = 8
STORM_MAX_NODES = 1000           # node sets are 1024-bit maps
CMD_BYTES = 2048                 # a launch command (Launch message + tag), typical
REPORT_BYTES = 512               # a report with a few records, typical
RXM_RX_BUFS = 128                # FI_OFI_RXM_MSG_RX_SIZE
RXM_BUF = 128 << 10              # storm's rxm eager limit, its chunk
FAST_CAW_NODES = 256             # above: a launch's flow-control CAWs in closed form


def tree_children(i, members, fanout=FANOUT):
    """Tree positions of member i's children (tree.h: i*f+1 .. i*f+f)."""
    lo = i * fanout + 1
    return list(range(lo, min(lo + fanout, members)))


def tree_parent(i, fanout=FANOUT):
    return None if i == 0 else (i - 1) // fanout


def tree_depth(members, fanout=FANOUT):
    """Levels below the root (0 for a lone root), as sn_tree_depth."""
    if members <= 1:
        return 0
    return tree_level(members - 1, fanout)


def tree_level(i, fanout=FANOUT):
    d = 0
    while i > 0:
        i = (i - 1) // fanout
        d += 1
    return d


def strobe_size(nnodes, k):
    ahead = STROBE_SLOT * (k + 1) + 8 * k * nnodes if k else 0
    return STROBE_HDR + 16 * nnodes + ahead + TAG


def ahead_fit(nnodes, want=4):
    """The schedule-ahead depth K whose strobe fits its area (common/ahead.c);
    -1 when not even K = 0 fits: the strobe cannot be sent at all."""
    k = min(want, STROBE_AHEAD_MAX)
    while k > 0 and strobe_size(nnodes, k) > GM_STROBE_MAX:
        k -= 1
    return k if strobe_size(nnodes, k) <= GM_STROBE_MAX else -1


def gmem_size(nnodes):
    """Bytes of global memory every daemon maps (layout_gmem_size)."""
    a64k = lambda x: (x + 65535) & ~65535  # noqa: E731
    reports = (10 << 20) + nnodes * 65536
    slots = a64k(a64k(reports) + 8 * max(nnodes, STORM_MAX_NODES))
    s = (32 << 20) // nnodes if nnodes else 8 << 20
    s = max(min(s, 8 << 20), 512 << 10) & ~(4 * 65536 - 1)
    return slots + nnodes * 16 * 65536 + nnodes * s


# ------------------------------------------------------------ the engine
class Sim:
    def __init__(self):
        self.t = 0.0
        self._q = []
        self._n = 0

    def at(self, t, fn, *args):
        heapq.heappush(self._q, (t, self._n, fn, args))
        self._n += 1

    def run(self, until=None):
        while self._q:
            if until is not None and self._q[0][0] > until:
                break
            t, _, fn, args = heapq.heappop(self._q)
            self.t = t
            fn(*args)


class SharedCPU:
    """cores shared by every daemon of a virtual cluster, processor sharing;
    bg background tasks (other users of the host) always runnable."""

    def __init__(self, sim, cores, bg=0.0):
        self.sim, self.cores, self.bg = sim, float(cores), float(bg)
        self.active = {}
        self.last = 0.0
        self.ver = 0
        self.ids = 0
        self.busy_time = 0.0

    def rate(self):
        n = len(self.active)
        return min(1.0, self.cores / (n + self.bg)) if n else 1.0

    def _advance(self):
        dt = self.sim.t - self.last
        if dt > 0 and self.active:
            r = self.rate()
            for v in self.active.values():
                v[0] -= dt * r
            self.busy_time += dt * r * len(self.active)
        self.last = self.sim.t

    def _arm(self):
        self.ver += 1
        if self.active:
            rem = min(v[0] for v in self.active.values())
            self.sim.at(self.sim.t + max(rem, 0.0) / self.rate(), self._due, self.ver)

    def add(self, work, cb):
        self._advance()
        self.ids += 1
        self.active[self.ids] = [work, cb]
        self._arm()

    def _due(self, ver):
        if ver != self.ver:
            return
        self._advance()
        done = [k for k, v in self.active.items() if v[0] <= 1e-12]
        cbs = [self.active.pop(k)[1] for k in done]
        self._arm()
        for cb in cbs:
            cb()


class BurstCPU:
    """The same cores for short work items: a daemon woken by a message runs
    its short burst at once (the kernel's fair scheduler credits a task that
    slept), so the background does not stretch it; cores at a time, FIFO."""

    def __init__(self, sim, cores):
        self.sim, self.free = sim, int(cores)
        self.q = deque()

    def add(self, work, cb):
        self.q.append((work, cb))
        self._go()

    def _go(self):
        while self.free and self.q:
            work, cb = self.q.popleft()
            self.free -= 1
            self.sim.at(self.sim.t + work, self._done, cb)

    def _done(self, cb):
        self.free += 1
        cb()
        self._go()


class OwnCPU:
    """A core per node: work takes exactly its time."""

    def __init__(self, sim):
        self.sim = sim

    def add(self, work, cb):
        self.sim.at(self.sim.t + work, cb)


class Node:
    """One daemon: a single thread running its work items in order."""

    def __init__(self, m, idx):
        self.m, self.idx = m, idx
        self.q = deque()
        self.busy = False
        self.nic_free = 0.0
        self.st = {}  # per-operation state

    def post(self, work, fn, *args):
        self.q.append((work, fn, args))
        if not self.busy:
            self.busy = True
            w = self.m.wake()
            if w > 0:
                self.m.sim.at(self.m.sim.t + w, self._next)
            else:
                self._next()

    def _next(self):
        if not self.q:
            self.busy = False
            return
        work, fn, args = self.q.popleft()
        self.m.cpu_for(self, work).add(work, lambda: (fn(*args), self._next()))


# ------------------------------------------------------------ parameters
DEFAULTS = {
    # CPU per message at the sender and at the receiver, and per byte of a
    # hop at each end (s)
    "c_send": 5e-6, "c_recv": 5e-6, "b_send": 0.1e-9, "b_recv": 0.1e-9,
    "wake": 30e-6,          # mean delay before a sleeping daemon runs (s)
    "wake_dist": "exp",     # "exp" (random, mean wake) or "const"
    "wake_bench": None,     # the same for sn_bench's processes (None: wake)
    "burst": 2e-3,          # work items up to this long are not stretched
                            # by the background on shared cores
    "cores": None,          # None: a core per node (a machine); else shared
    "bg": 0.0,              # background runnable tasks on the shared cores
    "lat": 0.0,             # network latency per hop (s)
    "bw": None,             # link bandwidth (B/s), None: no link limit
    "msg_rate": None,       # NIC messages per second, None: no limit
    "hw_mcast": False,      # XFER data as one hardware multicast
    "fanout": FANOUT,
    "mm_read_pb": 1e-9,     # MM per byte of a program: pread and tag (s/B)
    "consume_pb": 1e-9,     # node per byte: private copy, tag check, write
    "mm_launch_cpu": 1e-3,  # MM CPU per launch (submit, persist, replies)
    "mm_launch_node_cpu": 0.0,  # ... and per node of the job
    "nd_exec_cpu": 5e-3,    # node CPU to act on a Launch: fork/exec, report
    "transfer_wait": 0.0,   # non-CPU waits of a transfer, from the 1-node point
    "exec_wait": 0.0,       # and of execution (slice alignment, reaping)
    "mm_slice_cpu0": 50e-6,  # MM CPU per slice: fixed ...
    "mm_slice_cpu_node": 1e-6,  # ... and per node
    "nd_slice_cpu": 30e-6,  # node CPU per slice besides receiving the strobe
    "timeslice": 10e-3,
    "ahead": 4,
    "clock_err": 5e-6,      # sd of a node's MM-clock offset error (s)
    "timer_jitter": 5e-6,   # mean lateness of a node's switch timer (s)
    "seed": 1,
}


class Model:
    def __init__(self, **params):
        p = dict(DEFAULTS)
        unknown = set(params) - set(DEFAULTS)
        if unknown:
            raise ValueError("unknown parameters: " + ", ".join(sorted(unknown)))
        p.update(params)
        self.p = p
        self.rng = random.Random(p["seed"])
        self.bench = False  # running sn_bench's processes, not the daemons

    # --- per run
    def _fresh(self, members):
        self.sim = Sim()
        p = self.p
        if p["cores"]:
            shared = SharedCPU(self.sim, p["cores"], p["bg"])
            burst = BurstCPU(self.sim, p["cores"])
            self.cpu_for = lambda node, work=1.0: (  # noqa: E731
                burst if work <= p["burst"] else shared)
            self.shared = shared
        else:
            own = OwnCPU(self.sim)
            self.cpu_for = lambda node, work=1.0: own  # noqa: E731
            self.shared = None
        self.nodes = [Node(self, i) for i in range(members)]
        return self.nodes

    def wake(self):
        w = self.p["wake_bench"] if self.bench and self.p["wake_bench"] is not None \
            else self.p["wake"]
        if w <= 0:
            return 0.0
        return self.rng.expovariate(1.0 / w) if self.p["wake_dist"] == "exp" else w

    def send(self, a, b, nbytes, fn, *args):
        """A message from node a (its CPU already spent) to node b: the link,
        the latency, then b's receive work and fn(*args) on b."""
        p, t = self.p, self.sim.t
        wire = 0.0
        if p["bw"]:
            wire += nbytes / p["bw"]
        if p["msg_rate"]:
            wire += 1.0 / p["msg_rate"]
        start = max(t, a.nic_free)
        a.nic_free = start + wire
        self.sim.at(a.nic_free + p["lat"], b.post, p["c_recv"] + nbytes * p["b_recv"], fn, *args)

    def send_cost(self, nbytes):
        return self.p["c_send"] + nbytes * self.p["b_send"]

    # --- XFER-AND-SIGNAL down the tree, ACKs up
    def xfer(self, op, nbytes, on_node=None, on_done=None, piece=RMA_CHUNK, root_work=0.0):
        """Root (member 0) sends nbytes to every other member in pieces;
        on_node(i) when member i holds all of it, on_done() at the root when
        every member confirmed (the local event)."""
        nodes, f = self.nodes, self.p["fanout"]
        n = len(nodes)
        pieces = [min(piece, nbytes - o) for o in range(0, max(nbytes, 1), piece)] or [0]
        for nd in nodes:
            nd.st[op] = {"got": 0, "acks": 0, "kids": len(tree_children(nd.idx, n, f))}
        if n == 1:
            self.sim.at(self.sim.t, on_done) if on_done else None
            return
        root = nodes[0]

        def ack_in(i):
            s = nodes[i].st[op]
            s["acks"] += 1
            maybe_ack(i)

        def maybe_ack(i):
            s = nodes[i].st[op]
            if s["got"] == len(pieces) and s["acks"] == s["kids"] and not s.get("acked"):
                s["acked"] = True
                if i == 0:
                    if on_done:
                        on_done()
                    return
                par = tree_parent(i, f)
                nodes[i].post(self.send_cost(64), self.send, nodes[i], nodes[par], 64, ack_in, par)

        def piece_in(i, k):
            s = nodes[i].st[op]
            s["got"] += 1
            if not self.p["hw_mcast"]:
                for c in tree_children(i, n, f):
                    nodes[i].post(self.send_cost(pieces[k]), self.send, nodes[i], nodes[c],
                                  pieces[k], piece_in, c, k)
            if s["got"] == len(pieces) and on_node:
                on_node(i)
            maybe_ack(i)

        def root_send():
            root.st[op]["got"] = len(pieces)
            if self.p["hw_mcast"]:
                for k, sz in enumerate(pieces):
                    root.post(self.send_cost(sz), self._mcast, root, sz, piece_in, k)
            else:
                for k, sz in enumerate(pieces):
                    for c in tree_children(0, n, f):
                        root.post(self.send_cost(sz), self.send, root, nodes[c], sz, piece_in, c, k)
            maybe_ack(0)

        root.post(root_work, root_send)

    def _mcast(self, root, nbytes, fn, k):
        p = self.p
        wire = (nbytes / p["bw"] if p["bw"] else 0.0) + (1.0 / p["msg_rate"] if p["msg_rate"] else 0)
        start = max(self.sim.t, root.nic_free)
        root.nic_free = start + wire
        for nd in self.nodes[1:]:
            self.sim.at(root.nic_free + p["lat"], nd.post, p["c_recv"] + nbytes * p["b_recv"],
                        fn, nd.idx, k)

    # --- COMPARE-AND-WRITE: a combining wave down and up (twice to write)
    def caw(self, op, on_done, cond=None, write=False):
        """cond(i) evaluated at member i when the wave reaches it (default:
        true); on_done(all_true) at the root."""
        nodes, f = self.nodes, self.p["fanout"]
        n = len(nodes)
        rounds = 2 if write else 1
        state = {"round": 0, "ok": True}

        def start_round():
            for nd in nodes:
                nd.st[op] = {"acks": 0, "kids": len(tree_children(nd.idx, n, f))}
            down(0)

        def down(i):
            if i and state["round"] == 0 and cond and not cond(i):
                state["ok"] = False
            for c in tree_children(i, n, f):
                nodes[i].post(self.send_cost(64), self.send, nodes[i], nodes[c], 64, down, c)
            maybe_up(i)

        def up_in(i):
            nodes[i].st[op]["acks"] += 1
            maybe_up(i)

        def maybe_up(i):
            s = nodes[i].st[op]
            if s["acks"] < s["kids"] or s.get("up"):
                return
            s["up"] = True
            if i == 0:
                state["round"] += 1
                if state["round"] < rounds:
                    start_round()
                else:
                    on_done(state["ok"])
                return
            nodes[i].post(self.send_cost(64), self.send, nodes[i], nodes[tree_parent(i, f)], 64,
                          up_in, tree_parent(i, f))

        nodes[0].post(0.0, start_round)

    # --- public predictions -------------------------------------------------
    def caw_latency(self, members, write=False, reps=20, keep=False):
        """Median time of a COMPARE-AND-WRITE over `members` processes, the
        root one of them (sn_bench's caw, every other node asleep). keep:
        on a model of its own, leaving this one's run as it is."""
        if keep:
            return Model(**dict(self.p, seed=self.rng.randrange(1 << 30))).caw_latency(
                members, write, reps)
        out = []
        self.bench = True
        for _ in range(reps):
            self._fresh(members)
            done = {}
            self.caw("caw", lambda ok: done.setdefault("t", self.sim.t), write=write)
            self.sim.run()
            out.append(done["t"])
        self.bench = False
        return median(out)

    def mcast_time(self, members, nbytes, reps=5):
        """sn_bench's mcast: member 0 XFERs nbytes to the others and waits
        for its local event."""
        out = []
        self.bench = True
        for _ in range(reps):
            self._fresh(members)
            done = {}
            self.xfer("x", nbytes, on_done=lambda: done.setdefault("t", self.sim.t))
            self.sim.run()
            out.append(done["t"])
        self.bench = False
        return median(out)

    def launch(self, nnodes, nbytes, reps=3):
        """`storm run --timing -N nnodes` of an nbytes program: transfer
        (chunks in two buffers, flow control by COMPARE-AND-WRITE), then
        execute (Launch command, the nodes' work, reports, termination
        check). Returns medians of (transfer, execute) in seconds."""
        xs, es = [], []
        for _ in range(reps):
            x, e = self._launch_once(nnodes, nbytes)
            xs.append(x)
            es.append(e)
        return median(xs), median(es)

    def cluster_load(self, nnodes):
        """Cores an idle cluster of nnodes keeps busy with its slices."""
        p = self.p
        return (self.mm_cpu_per_slice(nnodes) + nnodes * (p["nd_slice_cpu"] + p["c_recv"])) / \
            p["timeslice"]

    def _launch_once(self, nnodes, nbytes):
        p = self.p
        nodes = self._fresh(nnodes + 1)
        if self.shared is not None:
            # the cluster's own strobes go on meanwhile, on the same cores
            self.shared.bg += self.cluster_load(nnodes)
        mm = nodes[0]
        chunks = [min(FILE_DATA_MAX, nbytes - o) for o in range(0, nbytes, FILE_DATA_MAX)] or [0]
        written = {}  # member -> chunks written out
        st = {"next": 0, "busy": [False, False], "asking": False, "confirmed": -1}
        res = {}

        written_at = {}  # (member, chunk) -> when written out

        def wrote(i, k):
            written[i] = max(written.get(i, -1), k)
            written_at[(i, k)] = self.sim.t

        def consume(i, k):
            nodes[i].post(chunks[k] * p["consume_pb"], wrote, i, k)

        def pump():
            # send what the buffers allow; ask (COMPARE-AND-WRITE) before reuse
            while st["next"] < len(chunks):
                k = st["next"]
                b = k % 2
                if st["busy"][b]:
                    return
                if k >= 2 and st["confirmed"] < k - 2:
                    ask(k - 2)
                    return
                st["busy"][b] = True
                st["next"] += 1
                self.xfer(("file", k), chunks[k] + FILE_CHUNK_HDR,
                          on_node=lambda i, k=k: consume(i, k),
                          on_done=lambda b=b: (st["busy"].__setitem__(b, False), pump()),
                          root_work=chunks[k] * p["mm_read_pb"])
            if not any(st["busy"]):
                last = len(chunks) - 1
                if st["confirmed"] < last:
                    ask(last)
                elif "x" not in res:
                    res["x"] = self.sim.t
                    execute()

        def ask(k):
            if st["asking"]:
                return
            st["asking"] = True
            if self.shared is None and nnodes > FAST_CAW_NODES:
                # on a machine, a wave of L seconds finds each node about
                # L/2 after it starts; the answer is a no until every node
                # has written the chunk out, and the MM asks again at once
                if "caw_l" not in st:
                    st["caw_l"] = self.caw_latency(nnodes + 1, reps=1, keep=True)
                t0, L = self.sim.t, st["caw_l"]
                ok = all(written_at.get((i, k), math.inf) <= t0 + L / 2
                         for i in range(1, nnodes + 1))
                self.sim.at(t0 + L, answer, k, ok)
                return
            self.caw(("ask", k, self.sim.t), lambda ok: answer(k, ok),
                     cond=lambda i: written.get(i, -1) >= k)

        def answer(k, ok):
            st["asking"] = False
            if ok:
                st["confirmed"] = max(st["confirmed"], k)
            pump()

        def execute():
            reports = {"n": 0}

            def report_in():
                reports["n"] += 1
                if reports["n"] == nnodes:
                    self.caw("end", lambda ok: res.setdefault("e", self.sim.t))

            def act(i):
                nodes[i].post(p["nd_exec_cpu"], lambda: nodes[i].post(
                    self.send_cost(REPORT_BYTES), self.send, nodes[i], mm, REPORT_BYTES,
                    report_in))

            self.xfer("cmd", CMD_BYTES, on_node=act)

        mm.post(p["mm_launch_cpu"] + nnodes * p["mm_launch_node_cpu"], pump)
        self.sim.run()
        return res["x"] + p["transfer_wait"], res["e"] - res["x"] + p["exec_wait"]

    def strobes(self, nnodes, slices=100):
        """Slices of an idle cluster: the MM's work, the strobe down the
        tree, each node's slice work. Per slice that every node got: the
        arrival skew (last - first) and the last arrival after the send.
        Returns (skews, last_arrivals) in seconds."""
        p = self.p
        nodes = self._fresh(nnodes + 1)
        k = max(ahead_fit(nnodes, p["ahead"]), 0)
        size = strobe_size(nnodes, k)
        arr = {}
        sent = {}

        pending = set()

        def got(s, i):
            arr.setdefault(s, []).append(self.sim.t)
            if i not in pending:  # a node behind acts on the latest strobe only
                pending.add(i)
                nodes[i].post(p["nd_slice_cpu"], pending.discard, i)

        def tick(s):
            def go():
                sent[s] = self.sim.t
                self.xfer(("strobe", s), size, on_node=lambda i: got(s, i), piece=size)
            # a timer's expirations coalesce: an MM still busy skips the slice
            if not nodes[0].busy:
                nodes[0].post(p["mm_slice_cpu0"] + nnodes * p["mm_slice_cpu_node"], go)
            if s + 1 < slices:
                self.sim.at(self.sim.t + p["timeslice"], tick, s + 1)

        tick(0)
        self.sim.run()
        skews = [max(v) - min(v) for s, v in arr.items() if len(v) == nnodes]
        last = [max(v) - sent[s] for s, v in arr.items() if len(v) == nnodes]
        return skews, last

    def mm_cpu_per_slice(self, nnodes):
        return self.p["mm_slice_cpu0"] + nnodes * self.p["mm_slice_cpu_node"]

    def timed_skew(self, nnodes, slices=200):
        """The time-triggered switch: every node switches at the slot's start
        on its own timer, mapped through its measured offset to the MM's
        clock. Per slice: max - min over the nodes of (offset error + timer
        lateness). The strobe only has to land K slices ahead."""
        p, rng = self.p, self.rng
        out = []
        for _ in range(slices):
            ts = [rng.gauss(0.0, p["clock_err"]) +
                  (rng.expovariate(1.0 / p["timer_jitter"]) if p["timer_jitter"] > 0 else 0)
                  for _ in range(nnodes)]
            out.append(max(ts) - min(ts))
        return out


def median(v):
    v = sorted(v)
    n = len(v)
    if not n:
        return None
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def pct(v, q):
    v = sorted(v)
    if not v:
        return None
    k = (len(v) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)
