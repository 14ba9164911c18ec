#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A LIKWID release other than Debian's 5.2.2, built from LIKWID's source and installed under
$PMUGATE_TEST_LIKWID_PREFIX (make PREFIX=... install; 5.3 and 5.4 renumbered the access daemon's
devices), run with 'pmugate likwid' against the real daemon on the simulated PMU: the forwarder
tells the release from the liblikwid it runs, so Skylake-SP's MEM counts the simulated
bandwidth, where 5.2's numbers (what the forwarder used before) reach no memory channel;
Ice Lake-SP's MEM_FREERUN counts, its MEM is refused with the reason; LIKWID's C-markerAPI.c
example built against that release counts in marker mode.

No LIKWID 5.3 or 5.4 package exists for Debian 12, so without the variable the test reports
SKIP, saying so."""

import glob
import os
import re
import shutil
import subprocess
import sys

import likwidtest as lt
import pmugatetest as t
import test_likwid_marker as tm
import test_likwid_perfctr as tp

PREFIX = os.environ.get("PMUGATE_TEST_LIKWID_PREFIX", "")


def release():
    """The major.minor of the liblikwid under PREFIX, or None."""
    for lib in glob.glob(os.path.join(PREFIX, "lib*", "liblikwid.so.*.*")):
        m = re.search(r"liblikwid\.so\.(\d+\.\d+)$", lib)
        if m:
            return m.group(1)
    return None


def run(d, dm, model, args, env=None):
    e = {"OMP_NUM_THREADS": "1"}
    e.update(env or {})
    return lt.perfctr(d, dm.socket, model, args, env=e)


def test_mem(tap):
    rel = release()
    d, dm = tp.sim_daemon("skx")
    try:
        rc, out, err = run(d, dm, "skx", ["-C", "0", "-g", "MEM", "-S", "1s"])
        detail = "rc %d\n%s\n%s" % (rc, out[-1500:], err[-1500:])
        read, write = lt.metric(out, "Memory read bandwidth [MBytes/s]"), lt.metric(out, "Memory write bandwidth [MBytes/s]")
        tap.ok(rc == 0 and tp.close(read, tp.READ_GBPS * 1000, tp.BANDWIDTH, relative=True),
               "LIKWID %s skx MEM: read bandwidth %s MB/s = simulated %d GB/s" % (rel, read, tp.READ_GBPS), detail)
        tap.ok(tp.close(write, tp.WRITE_GBPS * 1000, tp.BANDWIDTH, relative=True),
               "LIKWID %s skx MEM: write bandwidth %s MB/s = simulated %d GB/s" % (rel, write, tp.WRITE_GBPS), detail)
        if rel != "5.2":
            rc, out, err = run(d, dm, "skx", ["-C", "0", "-g", "MEM", "-S", "300ms"], {"PMUGATE_LIKWID_VERSION": "5.2"})
            tap.eq(lt.metric(out, "Memory read bandwidth [MBytes/s]"), 0,
                   "LIKWID %s read with 5.2's device numbers (the forwarder before releases were told apart) "
                   "reaches no memory channel: 0 MB/s" % rel)
    finally:
        dm.stop()
    d, dm = tp.sim_daemon("icx")
    try:
        rc, out, err = run(d, dm, "icx", ["-C", "0", "-g", "MEM_FREERUN", "-S", "1s"])
        read = lt.metric(out, "Memory read bandwidth [MBytes/s]")
        tap.ok(rc == 0 and tp.close(read, tp.READ_GBPS * 1000, tp.BANDWIDTH, relative=True),
               "LIKWID %s icx MEM_FREERUN: read bandwidth %s MB/s = simulated %d GB/s" % (rel, read, tp.READ_GBPS),
               "rc %d\n%s\n%s" % (rc, out[-1500:], err[-1500:]))
        rc, out, err = run(d, dm, "icx", ["-C", "0", "-g", "MEM", "-S", "300ms"])
        tap.ok(rc != 0 and "counts are void" in err and "MEM_FREERUN" in err,
               "LIKWID %s icx MEM: refused with the reason, not 0 MB/s with exit 0" % rel, err[-1500:])
    finally:
        dm.stop()


def test_marker(tap):
    rel = release()
    d, dm = tp.sim_daemon("skx")
    try:
        exe = os.path.join(d, "markerAPI")
        p = subprocess.run([shutil.which("cc") or "cc", "-fopenmp", "-DLIKWID_PERFMON", "-I" + os.path.join(PREFIX, "include"),
                            "-o", exe, tm.EXAMPLE, "-L" + os.path.join(PREFIX, "lib"),
                            "-Wl,-rpath," + os.path.join(PREFIX, "lib"), "-llikwid"], capture_output=True, text=True)
        if p.returncode != 0:
            tap.ok(False, "C-markerAPI.c builds against LIKWID %s" % rel, p.stderr[-1500:])
            return
        os.chmod(exe, 0o755)
        rc, out, err = run(d, dm, "skx", ["-C", "0", "-m", "-g", "FLOPS_DP", exe])
        detail = "rc %d\n%s\n%s" % (rc, out[-2000:], err[-1500:])
        instr = lt.metric(out, "INSTR_RETIRED_ANY", 2)
        tap.ok(rc == 0 and instr and instr > 0 and tp.close(lt.metric(out, "CPI"), 1 / tp.IPC, tp.RATIO),
               "LIKWID %s marker mode: the region counts, CPI = the profile's" % rel, detail)
    finally:
        dm.stop()


if __name__ == "__main__":
    if not PREFIX:
        print("1..0 # SKIP no LIKWID built from source: set PMUGATE_TEST_LIKWID_PREFIX to its install prefix "
              "(Debian 12 packages only 5.2.2, which the other LIKWID tests run)")
        sys.exit(0)
    lt.LIKWID_PERFCTR = os.path.join(PREFIX, "bin", "likwid-perfctr")
    if not os.path.exists(lt.LIKWID_PERFCTR) or not release():
        print("1..0 # SKIP %s has no bin/likwid-perfctr or lib/liblikwid.so.X.Y" % PREFIX)
        sys.exit(0)
    why = lt.missing()
    if why:
        print("1..0 # SKIP %s" % why)
        sys.exit(0)
    if os.environ.get("PMUGATE_SANITIZED") == "1":
        print("1..0 # SKIP real LIKWID runs once, in the build without sanitizers")
        sys.exit(0)
    raise SystemExit(t.Tap().run([test_mem, test_marker]))
