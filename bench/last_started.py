#!/usr/bin/env python3
"""Unix time of the last node's "job JOB: started ranks" line in a virtual
cluster's node logs (LOGDIR/node*.log): when a launch or restart had every
rank started. Prints nothing if no node says so.

    bench/last_started.py LOGDIR JOB
"""
import datetime
import glob
import sys

if len(sys.argv) != 3:
    sys.exit(__doc__)
best = None
for f in glob.glob(sys.argv[1] + "/node*.log"):
    for line in open(f, errors="replace"):
        if ("job %s: started ranks" % sys.argv[2]) in line:
            t = datetime.datetime.strptime(line[:23], "%Y-%m-%dT%H:%M:%S.%f").timestamp()
            best = t if best is None or t > best else best
print(best if best is not None else "")
