#!/usr/bin/env python3
"""The longest C functions of a tree: top-level definitions found by their
opening line (a name and '(' at column 0 or after a type, '{' closing the
signature) and measured to the matching '}' at column 0.

With --max, a check: each function over --over lines must say why it reads
best whole, in a one-line comment just above its first line,
"/* whole: <why> */", and there may be at most --max of them; otherwise it
names the functions at fault and exits 1.

    scripts/longfuncs.py [--most N] [--over LINES] [--max N] DIR...
"""
import argparse
import os
import re
import sys

REASON = re.compile(r"^/\* whole: \S.*\*/$")
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
                why = i > 0 and REASON.match(lines[i - 1]) is not None
                yield m.group(1), i + 1, k - i + 1, why
                i = k + 1
                continue
        i += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--most", type=int, default=15)
    ap.add_argument("--over", type=int, default=0)
    ap.add_argument("--max", type=int, default=None,
                    help="fail beyond N functions over --over, or one without its reason")
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    found = []
    for d in a.dirs:
        for root, _, files in os.walk(d):
            for fn in files:
                if fn.endswith(".c"):
                    p = os.path.join(root, fn)
                    for name, line, n, why in functions(p):
                        found.append((n, name, f"{p}:{line}", why))
    found.sort(reverse=True)
    shown = [f for f in found if f[0] > a.over][:a.most] if a.over else found[:a.most]
    for n, name, where, why in shown:
        print(f"{n:5d}  {name:32s} {where}{'' if why else '  (no reason)'}")
    if found:
        print(f"{len(found)} functions, mean {sum(f[0] for f in found) / len(found):.1f} lines, "
              f"{sum(1 for f in found if f[0] > 100)} over 100")
    if a.max is None:
        return 0
    over = [f for f in found if f[0] > a.over]
    bad = [f for f in over if not f[3]]
    for n, name, where, _ in bad:
        print(f"longfuncs: {where}: {name} is {n} lines with no "
              f"'/* whole: <why> */' line above it: split it into named steps or say why")
    if len(over) > a.max:
        print(f"longfuncs: {len(over)} functions over {a.over} lines, at most {a.max}: "
              f"split one into named steps")
    return 1 if bad or len(over) > a.max else 0


if __name__ == "__main__":
    sys.exit(main())
