#!/usr/bin/env python3
"""File-level call graph of a folder, from its object files' symbols.

A file A "calls" a file B of the same folder when A's object file needs a
symbol (function or data) that B's defines. Calls through function pointers
(handlers a file registers with another) are not arrows: that is the point of
registering them. Prints each folder's files, arrows and strongly connected
components (call cycles); exits 1 when a cycle spans more than --max-cycle
files.

    scripts/callgraph.py [--max-cycle N] [--json] OBJDIR...
e.g. scripts/callgraph.py build/obj/daemons/mm build/obj/daemons/node
"""
import argparse
import json
import os
import subprocess
import sys


def folder_symbols(objdir, objs):
    """Each object's defined and needed global symbols, from one nm for the
    folder (an nm per object was most of `make layers`' time)."""
    defined = {o: set() for o in objs}
    needed = {o: set() for o in objs}
    if not objs:
        return defined, needed
    out = subprocess.run(["nm", "-A", "-g"] + [os.path.join(objdir, o) for o in objs],
                         capture_output=True, text=True, check=True).stdout
    for ln in out.splitlines():
        path, _, rest = ln.partition(".o:")
        fields = rest.split()
        if len(fields) < 2:
            continue
        # U: undefined; w, v: undefined weak (a defined weak one is W or V)
        (needed if fields[-2] in ("U", "w", "v") else defined)[os.path.basename(path) + ".o"].add(
            fields[-1])
    return defined, needed


def sccs(nodes, edges):
    """Tarjan's algorithm; components in reverse topological order."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def folder_graph(objdir):
    objs = sorted(f for f in os.listdir(objdir) if f.endswith(".o"))
    defined, needed = folder_symbols(objdir, objs)
    defs = {o[:-2] + ".c": defined[o] for o in objs}
    needs = {o[:-2] + ".c": needed[o] for o in objs}
    owner = {}
    for f, ds in defs.items():
        for s in ds:
            owner[s] = f
    edges = {f: {owner[s] for s in needs[f] if s in owner and owner[s] != f} for f in defs}
    return list(defs), edges


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-cycle", type=int, default=0,
                    help="fail when a cycle spans more files than this (0: report only)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    bad = False
    report = {}
    for d in a.dirs:
        nodes, edges = folder_graph(d)
        comps = [c for c in sccs(nodes, edges) if len(c) > 1]
        narrows = sum(len(v) for v in edges.values())
        # arrows inside a cycle: one of them at least points "back up"
        in_cycle = sum(1 for c in comps for f in c for t in edges[f] if t in c)
        report[d] = {"files": len(nodes), "arrows": narrows,
                     "arrows_in_cycles": in_cycle, "cycles": comps}
        if a.max_cycle and any(len(c) > a.max_cycle for c in comps):
            bad = True
        if not a.json:
            big = max((len(c) for c in comps), default=1)
            print(f"{d}: {len(nodes)} files, {narrows} arrows, {in_cycle} in cycles, "
                  f"largest cycle {big} files")
            for c in comps:
                print("  cycle: " + " ".join(c))
    if a.json:
        print(json.dumps(report, indent=1))
    if bad:
        print(f"callgraph: a call cycle spans more than {a.max_cycle} files", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
