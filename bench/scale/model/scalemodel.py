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
SN_CM_POLL = 5e-3                # SN_CM_POLL_MS: a sleeping daemon's longest sleep
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


class HostCPU:
    """The host's cores as the kernel's fair scheduler shares them among the
    daemons of a virtual cluster: runnable work in the order it became
    runnable, each item running at most a quantum (the scheduler's base
    slice) before the next in line gets the core. A daemon's short work (a
    message, a strobe's handling: far below the quantum) so runs at once if
    a core is free and otherwise queues behind whatever became runnable
    first: N daemons woken together take N items' time on `cores` cores,
    while long work (a chunk's tag check) is shared quantum by quantum. One
    pool for all of it: what one daemon runs, no other can. `bg` background
    tasks (the host's other users) always runnable take their fair share
    of every core: our work runs at cores / (cores + bg) of a core's speed
    (not in their queue: a daemon that slept is not made to wait for each
    of them to run a quantum, as the scheduler credits a task that slept)."""

    def __init__(self, sim, cores, quantum, bg=0.0):
        self.sim, self.free, self.quantum = sim, int(cores), float(quantum)
        self.speed = min(1.0, cores / (cores + bg)) if bg > 0 else 1.0
        self.q = deque()
        self.busy_time = 0.0

    def add(self, work, cb):
        self.q.append([float(work), cb])
        self._go()

    def _go(self):
        while self.free and self.q:
            item = self.q.popleft()
            run = min(item[0], self.quantum)
            self.free -= 1
            self.sim.at(self.sim.t + run / self.speed, self._done, item, run)

    def _done(self, item, run):
        self.free += 1
        self.busy_time += run
        item[0] -= run
        if item[0] > 1e-12:
            self.q.append(item)
        else:
            item[1]()
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
        self.q = deque()   # the network layer's: messages, forwards, ACKs
        self.dq = deque()  # the daemon's own work on what arrived
        self.busy = False
        self.nic_free = 0.0
        self.st = {}  # per-operation state
        self.cpu = 0.0  # CPU spent (sn_bench's root: its CPU per call)

    def post(self, work, fn, *args):
        """Network work (a message in or out): taken first in a turn."""
        self.q.append((work, fn, args))
        self._wake()

    def work(self, work, fn, *args):
        """The daemon's work on what arrived (a chunk's write, a Launch, a
        strobe's handling): after the turn's network progress, as the
        daemons' loops do (sn_progress, then the events)."""
        self.dq.append((work, fn, args))
        self._wake()

    def _wake(self):
        if not self.busy:
            self.busy = True
            w = self.m.wake()
            if w > 0:
                self.m.sim.at(self.m.sim.t + w, self._next)
            else:
                self._next()

    def _next(self):
        if not self.q and not self.dq:
            self.busy = False
            return
        work, fn, args = (self.q or self.dq).popleft()
        self.cpu += work
        self.m.cpu_for(self, work).add(work, lambda: (fn(*args), self._next()))


# ------------------------------------------------------------ parameters
DEFAULTS = {
    # CPU per message at the sender and at the receiver, and per byte of a
    # hop at each end (s)
    "c_send": 5e-6, "c_recv": 5e-6, "b_send": 0.1e-9, "b_recv": 0.1e-9,
    "wake": 30e-6,          # mean delay before a sleeping daemon runs (s)
    "wake_tail": None,      # of which exponentially distributed (None: all
                            # of it; the rest is a constant)
    "wake_bench": None,     # the same for sn_bench's processes (None: wake)
    "cores": None,          # None: a core per node (a machine); else shared
    "quantum": 1.5e-3,      # shared cores: the scheduler's base slice (s)
    "bg": 0.0,              # background runnable tasks on the shared cores
    "lat": 0.0,             # network latency per hop (s)
    "bw": None,             # link bandwidth (B/s), None: no link limit
    "msg_rate": None,       # NIC messages per second, None: no limit
    "hw_mcast": False,      # XFER data as one hardware multicast
    "fanout": FANOUT,
    "mm_read_pb": 1e-9,     # MM per byte of a program: pread and tag (s/B)
    "consume_pb": 1e-9,     # node per byte: private copy, tag check, write
    "mm_launch_cpu": 1e-3,  # MM CPU per launch (submit, persist, replies)
    "mm_report_cpu": 0.0,   # MM CPU per node's report of a launch (its tag,
                            # decode, records, the commit, the acknowledgement)
    "mm_report_cpu_node": 0.0,  # ... and per node of the job, per report
    "job_end_combined": 0.0,  # 1: the job's end combined up the tree (the
                            # design of docs/design/scale.md, "The job's
                            # end combined up the tree"): only the job's first
                            # node reports; every other node whose ranks all
                            # exited 0 sets its done and accounting words, and
                            # the MM reads them all with one COMPARE-AND-WRITE,
                            # asked again a slice later while it is false
    "nd_exec_cpu": 5e-3,    # node CPU to act on a Launch: fork/exec, report
    "transfer_wait": 0.0,   # non-CPU waits of a transfer, from the 1-node point
    "exec_wait": 0.0,       # and of execution (slice alignment, reaping)
    "mm_slice_cpu0": 50e-6,  # MM CPU per slice: fixed ...
    "mm_slice_cpu_node": 1e-6,  # ... and per node
    "nd_slice_cpu": 30e-6,  # node CPU per slice besides receiving the strobe
    "nd_slice_at_strobe": 1.0,  # ... the share of it at the strobe's arrival
                            # (the rest after every node's arrival)
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
            host = HostCPU(self.sim, p["cores"], p["quantum"], p["bg"])
            self.cpu_for = lambda node, work=1.0: host  # noqa: E731
            self.shared = host
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
        tail = w if self.bench or self.p["wake_tail"] is None else min(w, self.p["wake_tail"])
        return (w - tail) + (self.rng.expovariate(1.0 / tail) if tail > 0 else 0.0)

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
            # the network layer acknowledges in its progress round, before
            # the daemon acts on the data in the same turn (a leaf's ACK
            # does not wait for its chunk's write; an inner node's waits
            # for its children's, which queue behind that work)
            maybe_ack(i)
            if s["got"] == len(pieces) and on_node:
                on_node(i)

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

        root.work(root_work, root_send)

    def _mcast(self, root, nbytes, fn, k):
        p = self.p
        wire = (nbytes / p["bw"] if p["bw"] else 0.0) + (1.0 / p["msg_rate"] if p["msg_rate"] else 0)
        start = max(self.sim.t, root.nic_free)
        root.nic_free = start + wire
        for nd in self.nodes[1:]:
            self.sim.at(root.nic_free + p["lat"], nd.post, p["c_recv"] + nbytes * p["b_recv"],
                        fn, nd.idx, k)

    # --- COMPARE-AND-WRITE: a prepare wave down and up, then a decision's
    def caw(self, op, on_done, cond=None, write=False):
        """COMPARE-AND-WRITE as net_abstraction/caw.h runs it: PREPARE, a
        wave down the tree (each member locks and evaluates cond(i), default
        true) and the combined answer up it; then DECIDE, a second wave down
        and up that commits the write or only releases the locks. on_done
        (all_true) at the root: after the prepare for a read (it is answered
        before the locks are released), after the decision for a write. A
        read's decision still runs after its answer, on the same CPUs."""
        nodes, f = self.nodes, self.p["fanout"]
        n = len(nodes)
        state = {"ok": True}

        def wave(phase):
            key = (op, phase)
            for nd in nodes:
                nd.st[key] = {"acks": 0, "kids": len(tree_children(nd.idx, n, f))}

            def down(i):
                if i and phase == 0 and cond and not cond(i):
                    state["ok"] = False
                for c in tree_children(i, n, f):
                    nodes[i].post(self.send_cost(64), self.send, nodes[i], nodes[c], 64, down, c)
                maybe_up(i)

            def up_in(i):
                nodes[i].st[key]["acks"] += 1
                maybe_up(i)

            def maybe_up(i):
                s = nodes[i].st[key]
                if s["acks"] < s["kids"] or s.get("up"):
                    return
                s["up"] = True
                if i == 0:
                    waved(phase)
                    return
                par = tree_parent(i, f)
                nodes[i].post(self.send_cost(64), self.send, nodes[i], nodes[par], 64, up_in, par)

            down(0)

        def waved(phase):
            if phase == 0:
                if not write:
                    on_done(state["ok"])
                wave(1)
            elif write:
                on_done(state["ok"])

        nodes[0].post(0.0, wave, 0)

    # --- public predictions -------------------------------------------------
    def caw_latency(self, members, write=False, reps=20, keep=False):
        """Median time of a COMPARE-AND-WRITE over `members` processes, the
        root one of them, called back to back as sn_bench's caw does (the
        next call starts when the last answered, while a read's decision may
        still be on its way; every other node asleep between messages).
        keep: on a model of its own, leaving this one's run as it is."""
        if keep:
            return Model(**dict(self.p, seed=self.rng.randrange(1 << 30))).caw_latency(
                members, write, reps)
        out = []
        self.bench = True
        self._fresh(members)
        state = {"k": 0, "t0": 0.0}

        def start():
            state["t0"] = self.sim.t
            self.caw(("caw", state["k"]), answered, write=write)

        def answered(ok):
            out.append(self.sim.t - state["t0"])
            state["k"] += 1
            if state["k"] < reps + 1:  # the first is a warm-up
                start()

        start()
        self.sim.run()
        self.bench = False
        root = self.nodes[0]
        self.root_cpu_per_call = root.cpu / (reps + 1)
        self.cpu_per_call = sum(nd.cpu for nd in self.nodes) / (reps + 1)
        return median(out[1:] or out)

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

    def _slices(self, nnodes, stop, phase=0.0, sent=None, arrived=None):
        """The cluster's timeslices on the current run: every timeslice the
        MM's per-slice work, then the strobe down the tree, then each node's
        per-slice work (a node behind acts on the latest strobe only). The
        slice timer's expirations coalesce: while one slice's work waits in
        the MM's queue, another is not added. Runs until stop() holds;
        sent(s) at the MM's send, arrived(s, i) when node i holds it."""
        p, nodes = self.p, self.nodes
        k = max(ahead_fit(nnodes, p["ahead"]), 0)
        size = strobe_size(nnodes, k)
        acting, st = set(), {"due": False}
        at_strobe = p["nd_slice_cpu"] * p["nd_slice_at_strobe"]
        later = p["nd_slice_cpu"] - at_strobe

        def got(s, i):
            if arrived:
                arrived(s, i)
            if i not in acting:
                acting.add(i)
                nodes[i].work(at_strobe, acting.discard, i)
                if later > 0:
                    # the rest of its slice's work: the wake-ups its
                    # fabric's poll limit makes (SN_CM_POLL_MS, 5 ms) after
                    # the strobe's turn, in the middle of the slice
                    self.sim.at(self.sim.t + SN_CM_POLL, nodes[i].work, later, lambda: None)

        def go(s):
            st["due"] = False
            if sent:
                sent(s)
            self.xfer(("strobe", s), size, on_node=lambda i: got(s, i), piece=size)

        def tick(s):
            if stop():
                return
            if not st["due"]:
                st["due"] = True
                nodes[0].work(self.mm_cpu_per_slice(nnodes), go, s)
            self.sim.at(self.sim.t + p["timeslice"], tick, s + 1)

        self.sim.at(self.sim.t + phase, tick, 0)

    def _launch_once(self, nnodes, nbytes):
        p = self.p
        nodes = self._fresh(nnodes + 1)
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
            nodes[i].work(chunks[k] * p["consume_pb"], wrote, i, k)

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
            if p["job_end_combined"]:
                return execute_combined()
            reports = {"n": 0}

            def report_in():
                mm.work(p["mm_report_cpu"] + nnodes * p["mm_report_cpu_node"], counted)

            def counted():
                reports["n"] += 1
                if reports["n"] == nnodes:
                    self.caw("end", lambda ok: res.setdefault("e", self.sim.t))

            def act(i):
                nodes[i].work(p["nd_exec_cpu"], lambda: nodes[i].post(
                    self.send_cost(REPORT_BYTES), self.send, nodes[i], mm, REPORT_BYTES,
                    report_in))

            self.xfer("cmd", CMD_BYTES, on_node=act)

        def execute_combined():
            done_at = {}  # member -> when its done and accounting words hold

            def probe():
                # one read over the job's nodes: done == job on every one,
                # their accounting summed and maxed up the tree on the way
                if self.shared is None and nnodes > FAST_CAW_NODES:
                    if "end_l" not in st:
                        st["end_l"] = self.caw_latency(nnodes + 1, reps=1, keep=True)
                    t0, L = self.sim.t, st["end_l"]
                    ok = all(done_at.get(i, math.inf) <= t0 + L / 2
                             for i in range(1, nnodes + 1))
                    self.sim.at(t0 + L, answered, ok)
                    return
                self.caw(("end", self.sim.t), answered,
                         cond=lambda i: done_at.get(i, math.inf) <= self.sim.t)

            def answered(ok):
                if ok:
                    res.setdefault("e", self.sim.t)
                else:  # the MM's slice asks again
                    self.sim.at(self.sim.t + p["timeslice"], mm.post, 0.0, probe)

            def act(i):
                def ended():
                    done_at[i] = self.sim.t
                    if i == 1:  # the job's first node reports: the MM's hint
                        nodes[i].post(self.send_cost(REPORT_BYTES), self.send, nodes[i], mm,
                                      REPORT_BYTES, mm.work, p["mm_report_cpu"], probe)
                nodes[i].work(p["nd_exec_cpu"], ended)

            self.xfer("cmd", CMD_BYTES, on_node=act)

        mm.work(p["mm_launch_cpu"], pump)
        # the cluster's own slices go on meanwhile, on the same CPUs (on a
        # machine of more nodes than FAST_CAW_NODES they are left out: each
        # node's are a few per cent of its own core, and the MM's per-slice
        # work is predicted on its own)
        if self.shared is not None or nnodes <= FAST_CAW_NODES:
            self._slices(nnodes, lambda: "e" in res, phase=self.rng.random() * p["timeslice"])
        self.sim.run()
        # the daemons' CPU per launch, as measure.py takes it (its slices
        # meanwhile included): the MM's and a node's mean
        self.launch_cpu = (nodes[0].cpu, sum(nd.cpu for nd in nodes[1:]) / max(1, nnodes))
        return res["x"] + p["transfer_wait"], res["e"] - res["x"] + p["exec_wait"]

    def strobes(self, nnodes, slices=100):
        """Slices of an idle cluster (_slices). Per slice that every node
        got: the arrival skew (last - first) and the last arrival after the
        send. Returns (skews, last_arrivals) in seconds."""
        self._fresh(nnodes + 1)
        arr, sent = {}, {}
        self._slices(nnodes, lambda: len(sent) >= slices,
                     sent=lambda s: sent.__setitem__(s, self.sim.t),
                     arrived=lambda s, i: arr.setdefault(s, []).append(self.sim.t))
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
