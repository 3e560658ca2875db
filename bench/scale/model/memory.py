"""A daemon's resident memory (VmRSS) at any node count.

The sizes this host runs (1-64 nodes) cannot tell the per-node terms from
the noise (a node daemon's RSS moves by 0.3 MiB from 2 to 64 nodes), so each
is measured or counted on its own (docs/design/scale.md, "A daemon's
memory"), and the sizes measured are the check:

  node daemon = its RSS at the 2-node point (after the launches: shared
                libraries, the provider's buffers, the program's file
                buffers)
              + PER_CONFIGURED for every node of the cluster (the rail's
                per-peer tables, the address vector, the node's per-node
                arrays), measured on an idle node of clusters of 250 and
                1000 configured nodes
              + PER_JOB_NODE for every node of the job it runs (BCS-MPI's
                per-job arrays, counted from daemons/node/bcs*.c: the
                allreduce's partials, 2 x BCS_RED_MAX a node, and a dozen
                4-8 byte entries)
              + CONN for each connection above the 2-node point's (a node
                daemon's are its tree neighbours and the MM: O(fan-out))
              + what larger node sets add to every buffer sized for the
                largest header, once the sets hold N bits instead of today's
                1024 (ofi_rxm's two 1024-buffer regions over tcp, storm's
                posted receives)
  MM          = its RSS at the 2-node point + MM_PER_NODE for every node
                (its per-node state and a connection to each node).

Not in it: global memory's per-peer areas (0.9-1.5 MiB a peer mapped,
resident only where written: a page or more of a peer's mailbox and BCS
areas once that peer sends to this node), so a job whose every node sends to
every other through mailboxes or BCS-MPI point-to-point adds at least
2 pages a peer (memory_touched_per_peer).
"""

KIB = 1024
MIB = 1 << 20

WIRE_FIXED = 96           # SN_WIRE_FIXED: a header without its two node sets
INLINE_MAX = 256          # SN_INLINE_MAX
SET_BITS_TODAY = 1024     # SN_MAX_NODES: the node sets' bits
RX_DEPTH = 32             # sn_config.rx_depth
RXM_REGION = 1024         # ofi_rxm's bounce buffers are allocated (and zeroed) this many at a time
RXM_BUF_HDR = 360         # rxm's header on each (a region of 16 KiB buffers: 17,141,760 B)
PAGE = 4096
TARGET_MIB = 64

# measured: an idle node daemon's RssAnon with 250 and with 1000 nodes
# configured (2 running), 5444 and 5648 KiB
PER_CONFIGURED = (5648 - 5444) * KIB / 750
# counted: red_part (2 x 512 B), red_part_seq and _len (2 x 2 x 4 B), nodes,
# nfirst, ncount (3 x 4 B), and twelve per-node entries of bcs_job_new of
# 4-8 B (96 B)
PER_JOB_NODE = 2 * 512 + 16 + 12 + 96
# measured: the MM's VmRSS from 2 to 64 nodes, per node (least squares of
# the run of 2026-11-30 13:13 UTC after the change; the idle configured-
# node experiment puts 20 KiB of it on per-node state, the rest on the
# connection)
MM_PER_NODE_DEFAULT = 38 * KIB
# a connection: tcp's endpoint with its two 9000 B staging buffers, rxm's
# connection, the kernel socket's user-space side
CONN = 24 * KIB
FANOUT = 4


def set_bits(n):
    """Bits of a node set for a cluster of n nodes and the MM: today's fixed
    1024, or enough for n + 1 once they are sized to the cluster."""
    return max(SET_BITS_TODAY, ((n + 1 + 63) // 64) * 64)


def header_max(n):
    return WIRE_FIXED + 2 * set_bits(n) // 8


def sized_by_header(n):
    """Bytes of the buffers that each hold a largest header: rxm's receive
    and send regions and storm's posted receives."""
    return (2 * RXM_REGION + RX_DEPTH) * (header_max(n) + INLINE_MAX)


def node_conns(n):
    """A node daemon's fabric connections: its parent and children in the
    tree (fan-out 4) and the MM, at most."""
    return min(n, FANOUT + 2)


def point(costs, n):
    for p in costs["points"]:
        if p["nodes"] == n:
            return p
    return None


def mm_per_node(costs):
    """The MM's VmRSS per node: least squares over the measured sizes."""
    pts = [(p["nodes"], p["rss_mm_kib"] * KIB) for p in costs["points"] if p.get("rss_mm_kib")]
    if len(pts) < 2:
        return MM_PER_NODE_DEFAULT
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx if sxx else MM_PER_NODE_DEFAULT


def node_rss(costs, n, job_nodes=None):
    """A node daemon's VmRSS in bytes in a cluster of n nodes, running a job
    of job_nodes nodes (default: all of them)."""
    p2 = point(costs, 2)
    if not p2 or not p2.get("rss_nd_kib"):
        return None
    j = n if job_nodes is None else job_nodes
    return (p2["rss_nd_kib"] * KIB + PER_CONFIGURED * (n - 2) + PER_JOB_NODE * (j - 2) +
            CONN * (node_conns(n) - node_conns(2)) + sized_by_header(n) - sized_by_header(2))


def mm_rss(costs, n):
    p2 = point(costs, 2)
    if not p2 or not p2.get("rss_mm_kib"):
        return None
    return p2["rss_mm_kib"] * KIB + mm_per_node(costs) * (n - 2)


def memory_touched_per_peer():
    """Global memory a node makes resident per peer that sends to it through
    mailboxes or BCS-MPI: a page of each of the two areas at least."""
    return 2 * PAGE


def first_over(costs, limit_bytes, hi=1 << 22):
    """The smallest node count whose node daemon (a job on every node)
    passes limit_bytes, or None below hi."""
    if node_rss(costs, 2) is None or node_rss(costs, hi) <= limit_bytes:
        return None
    lo = 2
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if node_rss(costs, mid) > limit_bytes:
            hi = mid
        else:
            lo = mid
    return hi


def validation(costs):
    """(nodes, predicted, measured) node-daemon VmRSS in bytes at every
    measured size above 2."""
    return [(p["nodes"], node_rss(costs, p["nodes"]), p["rss_nd_kib"] * KIB)
            for p in costs["points"] if p["nodes"] > 2 and p.get("rss_nd_kib")]
