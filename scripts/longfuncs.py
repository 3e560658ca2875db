#!/usr/bin/env python3
"""The longest C functions of a tree: top-level definitions found by their
opening line (a name and '(' at column 0 or after a type, '{' closing the
signature) and measured to the matching '}' at column 0.

    scripts/longfuncs.py [--most N] [--over LINES] DIR...
"""
import argparse
import os
import re
import sys

START = re.compile(r"^[A-Za-z_][^;=]*?\b([A-Za-z_]\w*)\s*\([^;]*$")


def functions(path):
    with open(path, errors="replace") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = START.match(lines[i])
        if m:
            # the signature ends at a line that is "{" or ends with "{"
            j = i
            while j < len(lines) and j < i + 8 and not lines[j].rstrip().endswith("{") \
                    and not lines[j].rstrip().endswith(";"):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith("{"):
                k = j + 1
                while k < len(lines) and lines[k] != "}":
                    k += 1
                yield m.group(1), i + 1, k - i + 1
                i = k + 1
                continue
        i += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--most", type=int, default=15)
    ap.add_argument("--over", type=int, default=0)
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    found = []
    for d in a.dirs:
        for root, _, files in os.walk(d):
            for fn in files:
                if fn.endswith(".c"):
                    p = os.path.join(root, fn)
                    for name, line, n in functions(p):
                        found.append((n, name, f"{p}:{line}"))
    found.sort(reverse=True)
    shown = [f for f in found if f[0] > a.over][:a.most] if a.over else found[:a.most]
    for n, name, where in shown:
        print(f"{n:5d}  {name:32s} {where}")
    if found:
        print(f"{len(found)} functions, mean {sum(f[0] for f in found) / len(found):.1f} lines, "
              f"{sum(1 for f in found if f[0] > 100)} over 100")
    return 0


if __name__ == "__main__":
    sys.exit(main())
