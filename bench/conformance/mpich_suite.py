#!/usr/bin/env python3
"""BCS-MPI against MPICH's own conformance suite (its test/mpi).

Given a checkout of MPICH's test/mpi (nothing of it is fetched or kept
here), each chosen directory's programs are built twice, with MPICH's
compiler and with bcs-mpicc, against the suite's harness (util/mtest.c and
friends, configured by a header written here, strict MPI: no MPIX), then run
under mpiexec and under storm run on a virtual cluster this script brings
up and takes down. A program passes when it exits 0 and prints MPICH's
" No Errors". The table: per directory, programs tried, passed under MPICH,
built with bcs-mpicc (of those), passed under storm (of those), and each
program that builds and fails under storm with the first line it printed.

usage: mpich_suite.py [options] TEST_MPI_DIR [DIR[:COUNT] ...]
  TEST_MPI_DIR  MPICH's test/mpi (e.g. git archive v4.0.2 test/mpi of
                pmodels/mpich: the version of Debian's mpich, the reference)
  DIR[:COUNT]   directories of it (default: group topo coll comm attr init
                basic datatype pt2pt rma), COUNT: only the first COUNT tests
See --help for the options.
"""
import argparse
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

DIRS = "group topo coll comm attr init basic datatype pt2pt rma".split()
HARNESS = ["util/mtest.c", "util/mtest_common.c", "util/dtypes.c", "util/mtest_thread.c"]
# the datatype pools of the testlist.dtp programs (mtest_dtp.h), built into
# the harness from a copy beside the header configure would write
DTPOOLS = "dtpools"
DTPOOLS_CONF_H = """/* written by storm's bench/conformance/mpich_suite.py in place of
 * dtpools' configure: a Debian system */
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_LIMITS_H 1
#define HAVE_STDINT_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_STRDUP 1
#define HAVE_MEMSET 1
"""

CONF_H = """/* written by storm's bench/conformance/mpich_suite.py in place of
 * configure's: a Debian system, strict MPI (no MPIX extensions) */
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_STDARG_H 1
#define HAVE_STDINT_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_MEMORY_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_PTHREAD_H 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG 1
#define HAVE_LONG_LONG_INT 1
#define HAVE_MPI_WIN_CREATE 1
#define USE_STRICT_MPI 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
"""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def parse_testlist(d):
    """[(name, ranks, args)] of d's testlist (.in: configure's @...@ lines
    are conditional on features; they are left out)"""
    for fn in ("testlist", "testlist.in"):
        path = os.path.join(d, fn)
        if os.path.exists(path):
            break
    else:
        return []
    tests = []
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if not line or "@" in line:
            continue
        f = line.split()
        if len(f) < 2 or not f[1].isdigit():
            continue  # a subdirectory, or a line without a rank count
        args, skip = [], False
        for kv in f[2:]:
            k, _, v = kv.partition("=")
            if k == "arg":
                args.append(v)
            elif k in ("xfail", "env", "mpiversion", "strict", "resultTest", "mem"):
                skip |= k in ("env",)  # an environment MPICH reads: not a like test
        if not skip:
            tests.append((f[0], int(f[1]), args))
    return tests


def makefile_am(d):
    """{program: (sources, cppflags)} from d's Makefile.am"""
    progs = {}
    path = os.path.join(d, "Makefile.am")
    if not os.path.exists(path):
        return progs
    text = open(path).read().replace("\\\n", " ")
    for m in re.finditer(r"^(\w+)_(SOURCES|CPPFLAGS)\s*=\s*(.*)$", text, re.M):
        src, flags = progs.get(m.group(1), (None, ""))
        if m.group(2) == "SOURCES":
            src = m.group(3).split()
        else:
            flags = m.group(3).replace("$(AM_CPPFLAGS)", "")
        progs[m.group(1)] = (src, flags)
    return progs


def sources_of(d, name, am):
    src, flags = am.get(name, (None, ""))
    if not src:
        src = [name + ".c"]
    src = [s for s in src if s.endswith(".c")]
    if not src or not all(os.path.exists(os.path.join(d, s)) for s in src):
        return None, ""
    return [os.path.join(d, s) for s in src], flags


def dtpools_copy(top, work):
    """a copy of MPICH's dtpools with its configure header; its sources
    (none when this test/mpi has no dtpools)"""
    src = os.path.join(top, DTPOOLS)
    dst = os.path.join(work, DTPOOLS)
    if not os.path.isdir(os.path.join(src, "src")):
        return []
    for sub in ("include", "src"):
        shutil.copytree(os.path.join(src, sub), os.path.join(dst, sub), dirs_exist_ok=True)
    open(os.path.join(dst, "dtpoolsconf.h"), "w").write(DTPOOLS_CONF_H)
    return sorted(os.path.join(dst, "src", f) for f in os.listdir(os.path.join(dst, "src"))
                  if f.endswith(".c"))


def build_harness(cc, conf, top, out, extra=()):
    os.makedirs(out, exist_ok=True)
    objs = []
    for s in HARNESS + list(extra):
        o = os.path.join(out, os.path.basename(s)[:-2] + ".o")
        r = subprocess.run([cc, "-O1", "-w", "-c", "-I", conf, "-I", os.path.join(top, "include"),
                            "-I", os.path.join(os.path.dirname(conf), DTPOOLS, "include"),
                            os.path.join(top, s), "-o", o], capture_output=True, text=True)
        if r.returncode:
            return None, first_line(r.stderr)
        objs.append(o)
    return objs, ""


def first_line(text):
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            return line[:160]
    return "(no output)"


def build(cc, conf, top, d, name, am, harness, out):
    src, flags = sources_of(d, name, am)
    if not src:
        return None, "no source"
    exe = os.path.join(out, name)
    cmd = [cc, "-O1", "-w", "-I", conf, "-I", os.path.join(top, "include"),
           "-I", os.path.join(os.path.dirname(conf), DTPOOLS, "include")] + flags.split() + src + harness + ["-lm", "-lpthread", "-o", exe]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=d)
    if r.returncode:
        errs = [l for l in r.stderr.splitlines()
                if ("error" in l or "undefined reference" in l) and "collect2" not in l]
        return None, first_line("\n".join(errs or r.stderr.splitlines()))
    return exe, ""


def run(cmd, timeout, cwd, env=None):
    """(verdict, first line, seconds): pass, fail or timeout"""
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env,
                           start_new_session=True)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return "timeout", "no end in %d s; %s" % (timeout, first_line(out)), time.time() - t0
    out = r.stdout + r.stderr
    ok = r.returncode == 0 and re.search(r"^\s*No Errors\s*$", r.stdout, re.M)
    if ok:
        return "pass", "", time.time() - t0
    bad = [l for l in out.splitlines() if l.strip() and "No Errors" not in l]
    return "fail", "exit %d: %s" % (r.returncode, first_line("\n".join(bad))), time.time() - t0


class Storm:
    """a virtual cluster for the storm runs, down again at the end"""

    def __init__(self, bindir, nodes, work, slice_us):
        self.env = dict(os.environ)
        self.env["PATH"] = bindir + ":" + self.env["PATH"]
        self.dir = os.path.join(work, "cluster")
        self.env["STORM_CONF"] = os.path.join(self.dir, "storm.conf")
        r = subprocess.run(["storm", "cluster", "up", "--nodes", str(nodes), "--dir", self.dir,
                            "--timeslice-us", str(slice_us)], env=self.env, capture_output=True,
                           text=True)
        if r.returncode:
            sys.exit("mpich_suite: storm cluster up: " + first_line(r.stderr))
        self.nodes = nodes

    def cmd(self, exe, ranks, args):
        return ["storm", "run", "-N", str(min(ranks, self.nodes)), "-n", str(ranks), exe] + args

    def cancel_all(self):
        # a timed-out run's job: its storm run was killed, the job goes on
        r = subprocess.run(["storm", "jobs", "--json"], env=self.env, capture_output=True, text=True)
        try:
            for j in json.loads(r.stdout)["jobs"]:
                subprocess.run(["storm", "cancel", str(j["job"])], env=self.env,
                               capture_output=True)
        except (ValueError, KeyError):
            pass

    def down(self):
        subprocess.run(["storm", "cluster", "down", "--dir", self.dir], env=self.env,
                       capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("top", metavar="TEST_MPI_DIR", help="MPICH's test/mpi")
    ap.add_argument("dirs", metavar="DIR[:COUNT]", nargs="*", help="directories (default: %s)" % " ".join(DIRS))
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../build/bin"),
                    help="storm's build/bin (storm, bcs-mpicc)")
    ap.add_argument("--mpicc", default="mpicc.mpich")
    ap.add_argument("--mpiexec", default="mpiexec.mpich")
    ap.add_argument("-N", "--nodes", type=int, default=4, help="virtual nodes (default 4)")
    ap.add_argument("--max-ranks", type=int, default=8, help="tests of up to this many ranks (default 8)")
    ap.add_argument("--timeout", type=int, default=90, help="seconds a run may take (default 90)")
    ap.add_argument("--timeslice-us", type=int, default=1000)
    ap.add_argument("--only", metavar="PATTERNS",
                    help="only the tests whose names match one of these comma-separated shell patterns")
    ap.add_argument("--skip", metavar="PATTERNS",
                    help="leave out the tests whose names match one of these comma-separated shell patterns")
    ap.add_argument("-o", "--out", help="work directory (default: a new one in /tmp, removed)")
    ap.add_argument("--json", help="write the results to this file too")
    ap.add_argument("--markdown", help="write the table as Markdown to this file")
    a = ap.parse_args()
    top = os.path.abspath(a.top)
    if not os.path.isdir(os.path.join(top, "util")) or not os.path.exists(os.path.join(top, "util/mtest.c")):
        sys.exit("mpich_suite: %s is not MPICH's test/mpi (no util/mtest.c)" % a.top)
    bindir = os.path.abspath(a.bin)
    bcscc = os.path.join(bindir, "bcs-mpicc")
    for tool in (bcscc, os.path.join(bindir, "storm")):
        if not os.access(tool, os.X_OK):
            sys.exit("mpich_suite: %s not found (build storm first, or --bin)" % tool)
    if not shutil.which(a.mpicc) or not shutil.which(a.mpiexec):
        sys.exit("mpich_suite: %s or %s not found (apt-get install mpich)" % (a.mpicc, a.mpiexec))
    work = a.out or tempfile.mkdtemp(prefix="storm-mpichsuite.")
    os.makedirs(work, exist_ok=True)
    conf = os.path.join(work, "conf")
    os.makedirs(conf, exist_ok=True)
    open(os.path.join(conf, "mpitestconf.h"), "w").write(CONF_H)
    open(os.path.join(conf, "mtest_mpix.h"), "w").write("/* strict MPI: no MPIX */\n")
    harness = {}
    dtp = dtpools_copy(top, work)
    for side, cc in (("mpich", a.mpicc), ("storm", bcscc)):
        objs, why = build_harness(cc, conf, top, os.path.join(work, side), dtp)
        if objs is None:
            sys.exit("mpich_suite: the harness does not build with %s: %s" % (cc, why))
        harness[side] = objs
    # a SIGTERM (timeout, a CI limit) still takes the cluster down
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("mpich_suite: terminated"))
    storm = Storm(bindir, a.nodes, work, a.timeslice_us)
    results = []
    try:
        for spec in a.dirs or DIRS:
            dname, _, count = spec.partition(":")
            d = os.path.join(top, dname)
            tests = [t for t in parse_testlist(d) if t[1] <= a.max_ranks]
            if count:
                tests = tests[:int(count)]
            if a.only:
                pats = a.only.split(",")
                tests = [t for t in tests if any(fnmatch.fnmatchcase(t[0], p) for p in pats)]
            if a.skip:
                pats = a.skip.split(",")
                tests = [t for t in tests if not any(fnmatch.fnmatchcase(t[0], p) for p in pats)]
            am = makefile_am(d)
            log("== %s: %d tests" % (dname, len(tests)))
            for name, ranks, args in tests:
                r = {"dir": dname, "test": name, "ranks": ranks, "args": args}
                outs = {s: os.path.join(work, s, dname) for s in harness}
                for o in outs.values():
                    os.makedirs(o, exist_ok=True)
                exe, why = build(a.mpicc, conf, top, d, name, am, harness["mpich"], outs["mpich"])
                r["mpich_built"] = bool(exe)
                if exe:
                    r["mpich"], r["mpich_why"], r["mpich_s"] = run(
                        [a.mpiexec, "-n", str(ranks), exe] + args, a.timeout, d)
                else:
                    r["mpich"], r["mpich_why"] = "nobuild", why
                exe, why = build(bcscc, conf, top, d, name, am, harness["storm"], outs["storm"])
                r["storm_built"] = bool(exe)
                if exe:
                    r["storm"], r["storm_why"], r["storm_s"] = run(storm.cmd(exe, ranks, args),
                                                                  a.timeout, d, storm.env)
                    if r["storm"] == "timeout":
                        storm.cancel_all()
                else:
                    r["storm"], r["storm_why"] = "nobuild", why
                log("%-10s %-28s %d  mpich %-8s storm %-8s %s" % (dname, name + " " + " ".join(args), ranks,
                    r["mpich"], r["storm"], r.get("storm_why", "")))
                results.append(r)
    finally:
        storm.down()
    table = report(results, a.dirs or DIRS)
    print(table)
    if a.markdown:
        open(a.markdown, "w").write(table + "\n")
    if a.json:
        json.dump(results, open(a.json, "w"), indent=1)
    if not a.out:
        shutil.rmtree(work, ignore_errors=True)
    # a program that builds with bcs-mpicc and passes under MPICH but not
    # under storm is what this suite exists to find
    return 1 if any(r["mpich"] == "pass" and r["storm_built"] and r["storm"] != "pass" for r in results) else 0


def report(results, dirs):
    lines = ["| directory | tried | pass under MPICH | of those, build with bcs-mpicc | of those, pass under storm |",
             "|---|---:|---:|---:|---:|"]
    tot = [0, 0, 0, 0]
    for spec in dirs:
        d = spec.partition(":")[0]
        rs = [r for r in results if r["dir"] == d]
        good = [r for r in rs if r["mpich"] == "pass"]
        built = [r for r in good if r["storm_built"]]
        passed = [r for r in built if r["storm"] == "pass"]
        row = [len(rs), len(good), len(built), len(passed)]
        tot = [x + y for x, y in zip(tot, row)]
        lines.append("| %s | %d | %d | %d | %d |" % (d, *row))
    lines.append("| **all** | %d | %d | %d | %d (%.0f%% of those passing under MPICH) |"
                 % (*tot, 100.0 * tot[3] / tot[1] if tot[1] else 0))
    fails = [r for r in results if r["mpich"] == "pass" and r["storm_built"] and r["storm"] != "pass"]
    if fails:
        lines += ["", "Build with bcs-mpicc, pass under MPICH, not under storm:", ""]
        lines += ["- `%s/%s` (%d ranks%s): %s — %s" % (r["dir"], r["test"], r["ranks"],
                  ", " + " ".join(r["args"]) if r["args"] else "", r["storm"], r["storm_why"])
                  for r in fails]
    nobuild = {}
    for r in results:
        if r["mpich"] == "pass" and not r["storm_built"]:
            m = re.search(r"(MPI_\w+|MPIX?_\w+)", r["storm_why"])
            key = m.group(1) if m else r["storm_why"][:60]
            nobuild[key] = nobuild.get(key, 0) + 1
    if nobuild:
        lines += ["", "Pass under MPICH, do not build with bcs-mpicc (the first missing name, programs):", ""]
        lines.append(", ".join("`%s` %d" % kv for kv in sorted(nobuild.items(), key=lambda kv: -kv[1])))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
