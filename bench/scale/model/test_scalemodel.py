"""Unit tests of the scale model's pure parts: the mirrors of storm's layout
(checked against common/layout.h compiled here), the tree, the CPU models
and the primitives' event flow on cases whose answer is known by hand.

    python3 -m unittest discover -s bench/scale/model     (make unit runs it)
"""
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scalemodel as sm  # noqa: E402

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SIZES = [1, 2, 3, 4, 8, 16, 33, 64, 100, 500, 593, 594, 1000]

C_PROG = r"""
#include <stdio.h>
#include <stddef.h>
#include "layout.h"
#include "ahead.h"
#include "../net_abstraction/tree.h"
int main(void)
{
	unsigned ns[] = { %s };
	printf("%%zu %%zu %%zu %%zu\n", sizeof(struct file_chunk), sizeof(struct strobe),
	       sizeof(struct strobe_slot), (size_t)GM_STROBE_MAX);
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		printf("%%u %%zu %%zu %%u %%u\n", ns[i], layout_gmem_size(ns[i]), strobe_size(ns[i], 4),
		       strobe_ahead_fit(ns[i], 4), sn_tree_depth(ns[i], 4));
	return 0;
}
"""


class LayoutAgainstC(unittest.TestCase):
    """The model's copies of storm's sizes equal what the C headers give."""

    @classmethod
    def setUpClass(cls):
        d = tempfile.mkdtemp(prefix="scalemodel-test.")
        src = os.path.join(d, "t.c")
        exe = os.path.join(d, "t")
        with open(src, "w") as f:
            f.write(C_PROG % ", ".join(str(n) for n in SIZES))
        cc = os.environ.get("CC", "cc")
        subprocess.run([cc, "-std=c11", "-D_GNU_SOURCE", "-I", os.path.join(TOP, "common"),
                        "-I", os.path.join(TOP, "net_abstraction"), "-o", exe, src,
                        os.path.join(TOP, "common", "ahead.c"),
                        os.path.join(TOP, "net_abstraction", "tree.c"),
                        os.path.join(TOP, "net_abstraction", "nodeset.c")], check=True)
        out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout.split("\n")
        subprocess.run(["rm", "-rf", d])
        cls.sizes = [int(x) for x in out[0].split()]
        cls.rows = [[int(x) for x in ln.split()] for ln in out[1:] if ln.strip()]

    def test_struct_sizes(self):
        self.assertEqual(self.sizes, [sm.FILE_CHUNK_HDR, sm.STROBE_HDR, sm.STROBE_SLOT,
                                      sm.GM_STROBE_MAX])

    def test_gmem_strobe_ahead_depth(self):
        for n, gmem, ssz, k, depth in self.rows:
            self.assertEqual(sm.gmem_size(n), gmem, "gmem at %d nodes" % n)
            self.assertEqual(sm.strobe_size(n, 4), ssz, "strobe at %d nodes" % n)
            self.assertEqual(max(sm.ahead_fit(n, 4), 0), k, "K at %d nodes" % n)
            self.assertEqual(sm.tree_depth(n), depth, "depth of %d members" % n)


class Tree(unittest.TestCase):
    def test_every_member_has_one_parent(self):
        for n in (1, 2, 5, 21, 22, 100):
            seen = [0] * n
            for i in range(n):
                for c in sm.tree_children(i, n):
                    self.assertEqual(sm.tree_parent(c), i)
                    seen[c] += 1
            self.assertEqual(seen, [0] + [1] * (n - 1))

    def test_strobe_stops_fitting(self):
        self.assertEqual(sm.ahead_fit(1275), 0)
        self.assertEqual(sm.ahead_fit(1276), -1)


class CPU(unittest.TestCase):
    def run_items(self, cores, works, quantum=0.1, bg=0):
        sim = sm.Sim()
        cpu = sm.HostCPU(sim, cores=cores, quantum=quantum, bg=bg)
        done = {}
        for i, w in enumerate(works):
            cpu.add(w, lambda i=i: done.__setitem__(i, sim.t))
        sim.run()
        return [round(done[i], 9) for i in range(len(works))]

    def test_long_work_shared_quantum_by_quantum(self):
        # two seconds of work on one core: both end near 2 s, not 1 and 2
        self.assertEqual(self.run_items(1, [1.0, 1.0]), [1.9, 2.0])

    def test_short_work_in_order(self):
        # four 1 ms items on 2 cores: two at a time, in the order they came
        self.assertEqual(self.run_items(2, [1e-3] * 4), [1e-3, 1e-3, 2e-3, 2e-3])

    def test_one_pool_for_short_and_long(self):
        # a short item waits for a core two long ones hold for a quantum
        self.assertEqual(self.run_items(2, [1.0, 1.0, 1e-3], quantum=0.1)[2], 0.101)

    def test_background_load_stretches(self):
        # 2 cores, 2 background tasks: half of a core's speed
        self.assertAlmostEqual(self.run_items(2, [1.0], bg=2)[0], 2.0, places=6)

    def test_node_runs_one_item_at_a_time(self):
        m = sm.Model(cores=2, wake=0)
        nodes = m._fresh(1)
        order = []
        nodes[0].post(1.0, order.append, "a")
        nodes[0].post(1.0, order.append, "b")
        m.sim.run()
        self.assertEqual(order, ["a", "b"])
        self.assertAlmostEqual(m.sim.t, 2.0)  # not 1.0: the daemon is one thread


    def test_network_before_the_daemons_work(self):
        # a message that arrives while the daemon's work waits for a core is
        # taken first in its turn (sn_progress, then the events)
        m = sm.Model(cores=1, wake=0)
        nodes = m._fresh(2)
        order = []
        nodes[1].post(1.0, order.append, "busy")     # holds the only core
        nodes[0].work(1.0, order.append, "write")
        nodes[0].post(1e-3, order.append, "msg")      # queued behind "write"
        m.sim.run()
        self.assertEqual(order, ["busy", "write", "msg"])
        m = sm.Model(cores=1, wake=0)
        nodes = m._fresh(1)
        order = []
        nodes[0].post(1.0, order.append, "first")
        nodes[0].work(1.0, order.append, "write")
        nodes[0].post(1e-3, order.append, "msg")
        m.sim.run()
        self.assertEqual(order, ["first", "msg", "write"])


class Calibration(unittest.TestCase):
    def test_message_cost_from_the_shared_sizes(self):
        import calibrate
        # the root's CPU per call: 8 µs a message end at 4 and 8 nodes (12
        # and 16 ends); at 2 nodes it polls (40 µs for 4 ends): not used
        costs = {"meta": {"fanout": 4}, "points": [
            {"nodes": 2, "caw_cpu_us": 40.0, "caw_write_cpu_us": 40.0},
            {"nodes": 4, "caw_cpu_us": 96.0, "caw_write_cpu_us": 96.0},
            {"nodes": 8, "caw_cpu_us": 128.0, "caw_write_cpu_us": 128.0}]}
        self.assertAlmostEqual(calibrate.msg_cost(costs, costs["points"][0]), 8e-6)
        # without a size of 4 nodes or more: the 2-node root's over its 4 ends
        two = {"meta": {}, "points": costs["points"][:1]}
        self.assertAlmostEqual(calibrate.msg_cost(two, two["points"][0]), 10e-6)


class Primitives(unittest.TestCase):
    def fixed(self, **kw):
        p = dict(c_send=1e-6, c_recv=1e-6, b_send=0, b_recv=0, wake=0, cores=None)
        p.update(kw)
        return sm.Model(**p)

    def one_caw(self, m, members, write=False):
        m._fresh(members)
        got = []
        m.caw("c", lambda ok: got.append(m.sim.t), write=write)
        m.sim.run()
        return got[0]

    def test_caw_two_members_is_two_hops(self):
        # a read is answered after the prepare, a write after the decision
        self.assertAlmostEqual(self.one_caw(self.fixed(), 2), 4e-6)
        self.assertAlmostEqual(self.one_caw(self.fixed(), 2, write=True), 8e-6)

    def test_caw_back_to_back_waits_for_the_decision(self):
        # the next read's prepare follows the last one's decision on the
        # same path: the member takes both and answers both before the
        # root's second answer is in (6 message costs, not 4)
        self.assertAlmostEqual(self.fixed().caw_latency(2, reps=3), 6e-6)

    def test_caw_grows_with_depth_not_members(self):
        m = self.fixed(lat=1e-6)
        t5, t6 = self.one_caw(m, 5), self.one_caw(m, 6)
        t21, t22 = self.one_caw(m, 21), self.one_caw(m, 22)
        self.assertLess(t5, t6)  # a second level
        self.assertLess(t21 - t6, t6 - t5 + 10e-6)
        self.assertLess(t21, t22)  # a third

    def test_caw_condition_false_somewhere(self):
        m = self.fixed()
        m._fresh(9)
        got = []
        m.caw("c", got.append, cond=lambda i: i != 7)
        m.sim.run()
        self.assertEqual(got, [False])

    def test_xfer_reaches_everyone_then_root_event(self):
        m = self.fixed(bw=1e9)
        m._fresh(30)
        held, done = set(), []
        m.xfer("x", 3 * sm.MIB, on_node=held.add, on_done=lambda: done.append(m.sim.t))
        m.sim.run()
        self.assertEqual(held, set(range(1, 30)))
        self.assertEqual(len(done), 1)

    def test_hardware_multicast_sends_once(self):
        tree = self.fixed(bw=1e9, hw_mcast=False).mcast_time(30, 4 * sm.MIB, reps=1)
        hw = self.fixed(bw=1e9, hw_mcast=True).mcast_time(30, 4 * sm.MIB, reps=1)
        # the tree's root writes 4 copies, hardware multicast one
        self.assertLess(hw, tree / 2)

    def test_leaf_acknowledges_before_its_write(self):
        # the XFER's ACK leaves in the network's round, not after the
        # daemon's write of the chunk: the root's local event comes first
        m = self.fixed(consume_pb=1e-6)  # 1 s a MiB written
        nodes = m._fresh(2)
        ev = {}
        m.xfer("x", sm.MIB, on_node=lambda i: nodes[i].work(
                   sm.MIB * 1e-6, lambda: ev.setdefault("written", m.sim.t)),
               on_done=lambda: ev.setdefault("acked", m.sim.t))
        m.sim.run()
        self.assertLess(ev["acked"], 1e-3)
        self.assertGreater(ev["written"], 0.5)

    def test_launch_waits_for_flow_control(self):
        # a node that writes its chunk out slowly holds the third chunk back
        fast = self.fixed(bw=1e9, consume_pb=0.0).launch(4, 12 * sm.MIB, reps=1)[0]
        slow = self.fixed(bw=1e9, consume_pb=10e-9).launch(4, 12 * sm.MIB, reps=1)[0]
        self.assertGreater(slow - fast, 12 * sm.MIB * 10e-9 * 0.5)

    def test_combined_end_does_not_grow_with_the_reports(self):
        # a report per node: the MM's 1 ms each is in the launch N times;
        # the end combined up the tree: once (the first node's), whatever N
        def execute(n, combined):
            return self.fixed(bw=1e9, mm_report_cpu=1e-3, nd_exec_cpu=1e-4,
                              job_end_combined=combined).launch(n, 0, reps=1)[1]
        self.assertGreater(execute(40, 0) - execute(10, 0), 25e-3)
        self.assertLess(execute(40, 1) - execute(10, 1), 1e-3)
        self.assertLess(execute(40, 1), 3e-3)

    def test_combined_end_waits_for_every_node(self):
        # a node that ends 2.5 ms after the first node's report: the read is
        # false until then, and asked again each timeslice (1 ms here)
        def model():
            return self.fixed(mm_report_cpu=1e-5, nd_exec_cpu=1e-4, job_end_combined=1,
                              timeslice=1e-3)
        fast = model().launch(8, 0, reps=1)[1]
        m = model()
        orig, first = m.caw, []

        def slow_caw(op, on_done, cond=None, write=False):
            if op[0] == "end":
                first.append(first[0] if first else m.sim.t)
                late = first[0] + 2.5e-3
                return orig(op, on_done, write=write,
                            cond=lambda i: cond(i) and (i != 5 or m.sim.t > late))
            return orig(op, on_done, cond=cond, write=write)
        m.caw = slow_caw
        slow = m.launch(8, 0, reps=1)[1]
        self.assertEqual(len(first), 4)  # at 0, 1, 2 ms false; at 3 ms true
        self.assertGreater(slow, fast + 2.5e-3)
        self.assertLess(slow, fast + 3.5e-3)

    def test_mm_cpu_linear(self):
        m = sm.Model(mm_slice_cpu0=1e-4, mm_slice_cpu_node=1e-6)
        self.assertAlmostEqual(m.mm_cpu_per_slice(100), 2e-4)


class MemoryTest(unittest.TestCase):
    COSTS = {"points": [{"nodes": 2, "rss_nd_kib": 24000, "rss_mm_kib": 15000},
                        {"nodes": 64, "rss_nd_kib": 24200, "rss_mm_kib": 17480}]}

    def test_two_node_point_is_the_base(self):
        import memory
        self.assertEqual(memory.node_rss(self.COSTS, 2), 24000 * 1024)
        self.assertEqual(memory.mm_rss(self.COSTS, 2), 15000 * 1024)

    def test_terms(self):
        import memory
        # below 1024 nodes only the per-node terms and the connections grow
        want = (24000 * 1024 + memory.PER_CONFIGURED * 998 + memory.PER_JOB_NODE * 998 +
                memory.CONN * (memory.FANOUT + 2 - 2))
        self.assertAlmostEqual(memory.node_rss(self.COSTS, 1000), want)
        # a job on fewer nodes costs less; node sets past 1024 bits grow the buffers
        self.assertLess(memory.node_rss(self.COSTS, 1000, job_nodes=2), want)
        self.assertEqual(memory.sized_by_header(1000), memory.sized_by_header(2))
        self.assertGreater(memory.sized_by_header(16384), memory.sized_by_header(1000))
        # the MM: its measured slope, 40 KiB a node here
        self.assertAlmostEqual(memory.mm_per_node(self.COSTS), 40 * 1024)

    def test_first_over(self):
        import memory
        n = memory.first_over(self.COSTS, 64 * memory.MIB)
        self.assertGreater(memory.node_rss(self.COSTS, n), 64 * memory.MIB)
        self.assertLessEqual(memory.node_rss(self.COSTS, n - 1), 64 * memory.MIB)


if __name__ == "__main__":
    unittest.main()
