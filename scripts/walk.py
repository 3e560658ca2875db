#!/usr/bin/env python3
"""Back-and-forth along a call path: from a root function, follow every call
into the folder's own functions (each function expanded once, depth first)
and count the steps that cross into another file, those that enter a file
the walk has visited before, and those that go back to a file already on
the path (A -> B -> A: the reader is sent back to a file just left). Reads the call graphs gcc writes with
-fcallgraph-info (one .ci file per source file).

    scripts/walk.py CI_DIR ROOT [ROOT...]
e.g. for f in daemons/mm/*.c; do gcc $CFLAGS -fcallgraph-info -c $f \\
       -o /tmp/ci/$(basename $f .c).o -dumpdir /tmp/ci/; done
     scripts/walk.py /tmp/ci client.c:handle
"""
import os
import re
import sys

NODE = re.compile(r'node: \{ title: "([^"]+)" label: "([^\\"]+)\\n([^:"]+):\d+:\d+"')
EDGE = re.compile(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"')


def load(ci_dir):
    where, calls = {}, {}
    for fn in sorted(os.listdir(ci_dir)):
        if not fn.endswith(".ci"):
            continue
        with open(os.path.join(ci_dir, fn)) as f:
            for line in f:
                m = NODE.search(line)
                if m and m.group(3).endswith(".c") and "shape" not in line:
                    where[m.group(1)] = os.path.basename(m.group(3))
                m = EDGE.search(line)
                if m:
                    calls.setdefault(m.group(1), []).append(m.group(2))
    return where, calls


def walk(root, where, calls):
    seen, files, steps, back, again = set(), set(), 0, 0, 0

    def visit(fn, path):
        nonlocal steps, back, again
        seen.add(fn)
        here = where[fn]
        files.add(here)
        for callee in calls.get(fn, ()):
            if callee not in where or callee in seen:
                continue
            there = where[callee]
            if there != here:
                steps += 1
                if there in path:
                    back += 1
                if there in files:
                    again += 1
            visit(callee, path + [there] if there != here else path)

    visit(root, [where[root]])
    return steps, back, again, len(seen)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    where, calls = load(sys.argv[1])
    for r in sys.argv[2:]:
        key = r
        if key not in where:
            f, _, name = r.partition(":")
            cands = [k for k in where if where[k] == f and k.split(":")[-1] == name]
            if not cands:
                print(f"walk: no function {r}", file=sys.stderr)
                return 2
            key = cands[0]
        steps, back, again, n = walk(key, where, calls)
        print(f"{r}: {n} functions reached, {steps} steps between files, "
              f"{again} into a file already visited, {back} back to a file on the path")
    return 0


if __name__ == "__main__":
    sys.exit(main())
