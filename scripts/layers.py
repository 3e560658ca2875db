#!/usr/bin/env python3
"""The layering rules, checked (make layers).

Each product folder has a README.md whose "May include:" line lists the
folders whose headers its files may include (besides its own, the system's
and libraries'). This script resolves every #include "..." of every .c and
.h file the way the compiler does (the file's own folder, then the -I
folders of the Makefile) and fails when one reaches a folder not listed.
It also checks:
  - every source file opens with a comment saying what it is for;
  - the folders marked "Pure: yes" (no I/O) reference no I/O function;
  - no daemon folder has a call cycle over two files (scripts/callgraph.py).
Exit 0 when all hold, 1 with one line per breach otherwise.

    scripts/layers.py [--objdir build/obj]
"""
import argparse
import os
import re
import subprocess
import sys

from callgraph import folder_symbols

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the compiler's -I folders, in the Makefile's order; proto headers are
# generated into build/gen/proto and belong to the folder "proto"
INCLUDE_DIRS = ["net_abstraction", "common", "scheduler", "checkpoint", "bcs_mpi/abi",
                "kernel", "kernel/uapi", "build/gen/proto"]
# folders compiled with more -I than the rest (the Makefile's target-specific CFLAGS)
EXTRA_INCLUDE_DIRS = {"vcluster": ["cli"], "slurm": ["cli"]}
PRODUCT = ["net_abstraction", "common", "scheduler", "checkpoint", "bcs_mpi", "bcs_mpi/abi",
           "daemons/mm", "daemons/node", "cli", "vcluster", "slurm", "kernel"]
DAEMONS = ["daemons/mm", "daemons/node", "cli", "vcluster", "slurm"]
IO_SYMBOLS = {"open", "open64", "openat", "read", "write", "pread", "pwrite", "fopen",
              "fopen64", "fread", "fwrite", "fprintf", "printf", "puts", "fputs", "putchar",
              "socket", "connect", "send", "recv", "sendmsg", "recvmsg", "close", "ioctl",
              "mmap", "__printf_chk", "__fprintf_chk", "syslog"}


def note(folder):
    """The folder's note: its rules as a dict of lowercased keys."""
    path = os.path.join(ROOT, folder, "README.md")
    if not os.path.exists(path):
        return None
    rules = {}
    for line in open(path, encoding="utf-8"):
        m = re.match(r"^(May include|Pure):\s*(.*)$", line.strip())
        if m:
            rules[m.group(1).lower()] = m.group(2).strip()
    return rules


def owner_of(path):
    rel = os.path.relpath(path, ROOT)
    if rel.startswith("build/gen/proto"):
        return "proto"
    return os.path.dirname(rel)


def resolve(src, name):
    here = os.path.join(os.path.dirname(src), name)
    if os.path.exists(here):
        return os.path.normpath(here)
    folder = os.path.relpath(os.path.dirname(src), ROOT)
    for d in EXTRA_INCLUDE_DIRS.get(folder, []) + INCLUDE_DIRS:
        p = os.path.join(ROOT, d, name)
        if os.path.exists(p):
            return os.path.normpath(p)
        if d == "build/gen/proto" and name.endswith(".pb-c.h"):
            return os.path.normpath(p)  # generated on the first build
    return None


def sources(folder):
    d = os.path.join(ROOT, folder)
    return sorted(os.path.join(d, f) for f in os.listdir(d)
                  if f.endswith((".c", ".h")) and os.path.isfile(os.path.join(d, f)))


def check_includes(folder, allowed, errors):
    for src in sources(folder):
        rel = os.path.relpath(src, ROOT)
        for n, line in enumerate(open(src, encoding="utf-8", errors="replace"), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            if "../" in m.group(1):
                errors.append(f"{rel}:{n}: includes {m.group(1)} by a relative path "
                              "(name the header; the Makefile says where it lives)")
                continue
            target = resolve(src, m.group(1))
            if target is None:
                errors.append(f"{rel}:{n}: includes {m.group(1)}, found nowhere")
                continue
            own = owner_of(target)
            if own != folder and own not in allowed:
                errors.append(f"{rel}:{n}: includes {m.group(1)} of {own}/, which {folder}/ "
                              f"may not (its README.md: May include: {', '.join(allowed) or 'nothing'})")


def check_purpose(folder, errors):
    for src in sources(folder):
        with open(src, encoding="utf-8", errors="replace") as f:
            first = f.readline()
        if not first.startswith(("/*", "//")):
            errors.append(f"{os.path.relpath(src, ROOT)}:1: does not open with a comment "
                          "saying what it is for")


def check_pure(folder, objdir, errors):
    d = os.path.join(ROOT, objdir, folder)
    if not os.path.isdir(d):
        errors.append(f"{folder}/: no objects in {objdir} (build first)")
        return
    objs = sorted(f for f in os.listdir(d) if f.endswith(".o"))
    _, needed = folder_symbols(d, objs)
    for o in objs:
        used = needed[o] & IO_SYMBOLS
        if used:
            errors.append(f"{folder}/{o[:-2]}.c: does I/O ({', '.join(sorted(used))}) in a "
                          "folder that is pure")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objdir", default="build/obj")
    args = ap.parse_args()
    errors = []
    for folder in PRODUCT:
        rules = note(folder)
        if rules is None or "may include" not in rules:
            errors.append(f"{folder}/: no README.md with a 'May include:' line")
            continue
        allowed = [a.strip().rstrip("/") for a in rules["may include"].split(",")
                   if a.strip() and a.strip() != "nothing"]
        check_includes(folder, allowed, errors)
        check_purpose(folder, errors)
        if rules.get("pure", "").lower().startswith("yes"):
            check_pure(folder, args.objdir, errors)
    dirs = [os.path.join(ROOT, args.objdir, d) for d in DAEMONS]
    rc = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "callgraph.py"),
                         "--max-cycle", "2"] + dirs, capture_output=True, text=True)
    if rc.returncode != 0:
        errors.append("a call cycle spans more than two files:\n" + rc.stdout.strip())
    for e in errors:
        print("layers: " + e)
    if not errors:
        print(f"layers: {len(PRODUCT)} folders hold to their rules; no daemon call cycle "
              "over two files")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
