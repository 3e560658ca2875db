#!/usr/bin/env python3
"""Where one checkpoint's time went, from the cluster's logs: the MM's
"checkpoint ID (epoch E) started" and each node's "checkpoint ID into"
(the command arrived) and "checkpoint ID written ...: B T fork F dirs D
captured C (stop S meta M copy X held H, ...)" (times from the command's
arrival, daemons/node/ckpt.c). Prints one JSON object: per phase the median
over the nodes and the slowest node, in seconds.

usage: phases.py CLUSTER_DIR CHECKPOINT_ID
"""
import datetime
import glob
import json
import re
import statistics
import sys


def main():
    sdir, ck = sys.argv[1], sys.argv[2]
    start = None
    for line in open(sdir + "/log/mm.log", errors="replace"):
        if re.search(r": checkpoint %s \(epoch \d+\) started" % ck, line):
            t = datetime.datetime.strptime(line[11:23], "%H:%M:%S.%f")  # both daemons log ISO times
            start = t.hour * 3600 + t.minute * 60 + t.second + t.microsecond / 1e6
    ph = {k: [] for k in ("command", "fork", "dirs", "captured", "written", "held", "stop",
                          "meta", "copy")}
    for f in glob.glob(sdir + "/log/node*.log"):
        for line in open(f, errors="replace"):
            if (": checkpoint %s into " % ck) in line and start is not None:
                t = datetime.datetime.strptime(line[11:23], "%H:%M:%S.%f")
                ph["command"].append(t.hour * 3600 + t.minute * 60 + t.second +
                                     t.microsecond / 1e6 - start)
            m = re.search(r": checkpoint %s written, \d+ bytes: \d+ ([\d.]+) fork ([\d.]+) "
                          r"dirs ([\d.]+) captured ([\d.]+) \(stop ([\d.]+) meta ([\d.]+) "
                          r"copy ([\d.]+) held ([\d.]+)" % ck, line)
            if m:
                v = [float(x) for x in m.groups()]
                for k, x in zip(("written", "fork", "dirs", "captured", "stop", "meta", "copy",
                                 "held"), v):
                    ph[k].append(x)
    print(json.dumps({k: {"median": statistics.median(v), "max": max(v)}
                      for k, v in ph.items() if v}))


if __name__ == "__main__":
    main()
