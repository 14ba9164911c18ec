#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""LIKWID's marker mode through pmugate: LIKWID's own example C-markerAPI.c (unchanged, from
Debian's likwid 5.2.2), built against Debian's liblikwid with -DLIKWID_PERFMON and run by
'pmugate likwid -- likwid-perfctr -m' as an unprivileged user against the real daemon on the
simulated Skylake-SP. likwid-perfctr starts one access daemon and the program's liblikwid
another; the second joins the first one's session, so the region counts what the simulated
profile says. Nobody outside the measurement joins: another uid cannot reach the share socket,
and the user's own process outside the measurement, or root, is turned away by the forwarder.
A run whose counts are void (a lease held by someone else) fails instead of exiting 0 with
zeros. The region counts the same on a node that counts via perf.
"""

import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

import likwidtest as lt
import pmugatetest as t
import test_likwid_perfctr as tp

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "C-markerAPI.c")
# The example's 10 rounds of one region, each sleeping 2 s.
ROUNDS = 10
RUN_TIMEOUT = 120
OTHER_UID = 4244
RECORD = struct.Struct("=IIQIIII")
LIKWID_READ = 0


def build_example(d):
    """The example built as LIKWID's documentation says; None and why when it cannot be."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc or not os.path.exists("/usr/include/likwid-marker.h"):
        return None, "no C compiler or no likwid-marker.h (Debian's likwid package)"
    exe = os.path.join(d, "markerAPI")
    p = subprocess.run([cc, "-fopenmp", "-DLIKWID_PERFMON", "-o", exe, EXAMPLE, "-llikwid"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None, "cannot build C-markerAPI.c: " + p.stderr[-500:]
    os.chmod(exe, 0o755)
    return exe, None


def start(d, dm, args, user=tp.USER, threads=1):
    argv, e = lt.perfctr_command(d, dm.socket, "skx", args, user=user, env={"OMP_NUM_THREADS": str(threads)})
    out = tempfile.TemporaryFile("w+")
    err = tempfile.TemporaryFile("w+")
    p = subprocess.Popen(argv, stdout=out, stderr=err, text=True, env=e, cwd="/", start_new_session=True)
    return p, out, err


def finish(p, out, err, timeout=RUN_TIMEOUT):
    try:
        p.wait(timeout=timeout)
    finally:
        try:
            os.killpg(p.pid, 9)
        except ProcessLookupError:
            pass
        p.wait()
    out.seek(0)
    err.seek(0)
    return p.returncode, out.read(), err.read()


def run_dir_of(pid, timeout=30):
    """The run directory 'pmugate likwid' (pid) gave its LIKWID command, once its share socket
    is there."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                children = f.read().split()
            for child in children:
                with open("/proc/%s/environ" % child, "rb") as f:
                    for var in f.read().split(b"\0"):
                        if var.startswith(b"PMUGATE_LIKWID_RUN="):
                            d = var.split(b"=", 1)[1].decode()
                            if os.path.exists(os.path.join(d, "share")):
                                return d
        except OSError:
            pass
        time.sleep(0.1)
    return None


def try_join(path):
    """Connects to the share socket and sends a read of IA32_PERFEVTSEL0 on CPU 0: the answer,
    'closed' when the forwarder hung up without one, or the connect error's name."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(path)
    except OSError as e:
        return type(e).__name__
    try:
        s.sendall(RECORD.pack(0, 0x186, 0, 0, LIKWID_READ, 0, 0))
        data = s.recv(RECORD.size)
        return "closed" if not data else "answered"
    except (ConnectionResetError, BrokenPipeError):
        return "closed"
    finally:
        s.close()


def region_value(out, name):
    return lt.metric(out, name, 2)


def test_marker_counts(tap, counters="msr"):
    d, dm = tp.sim_daemon("skx", args=["--counters=" + counters])
    try:
        exe, why = build_example(d)
        if not exe:
            tap.skip("C-markerAPI.c through pmugate likwid -- likwid-perfctr -m", why)
            return
        # Two threads: LIKWID's library starts an access daemon for the program and, for a thread
        # other than the first, one per CPU (access_client.c): each joins likwid-perfctr's.
        p, out, err = start(d, dm, ["-C", "0-1", "-m", "-g", "FLOPS_DP", exe], threads=2)
        run = run_dir_of(p.pid)
        tap.ok(run is not None, "the run directory has the first forwarder's share socket")
        if run:
            share = os.path.join(run, "share")
            tap.eq(os.stat(run).st_mode & 0o777, 0o700, "the run directory is private to its user")
            tap.eq(t.in_child_as(OTHER_UID, t.OTHER_GID, [], lambda: try_join(share)), "PermissionError",
                   "another uid cannot reach the share socket")
            tap.eq(try_join(share), "closed", "root (another uid) connecting anyway is turned away unanswered")
            tap.eq(t.in_child_as(tp.USER[0], tp.USER[1], tp.USER[2], lambda: try_join(share)), "closed",
                   "the user's own process outside the measurement is turned away unanswered")
        rc, out, err = finish(p, out, err)
        detail = "rc %d\n%s\n%s" % (rc, out[-2500:], err[-1500:])
        tap.ok(rc == 0 and "Region example, Group 1: FLOPS_DP" in out, "likwid-perfctr -m exits 0 with the "
               "region's results", detail)
        tap.eq(lt.metric(out, "call count"), ROUNDS, "the region was entered %d times" % ROUNDS)
        instr = region_value(out, "INSTR_RETIRED_ANY")
        cycles = region_value(out, "CPU_CLK_UNHALTED_CORE")
        tap.ok(instr and cycles and instr > 0 and cycles > 0, "the region counted instructions and cycles", detail)
        tap.ok(tp.close(lt.metric(out, "CPI"), 1 / tp.IPC, tp.RATIO), "the region's CPI is the profile's", detail)
        tap.ok((lt.metric(out, "INSTR_RETIRED_ANY", 3) or 0) > 0 and
               tp.close(lt.metric(out, "CPI", 2), 1 / tp.IPC, tp.RATIO),
               "so is the second thread's, on CPU 1", detail)
        for event, umask in (("FP_ARITH_INST_RETIRED_SCALAR_DOUBLE", 0x01),
                             ("FP_ARITH_INST_RETIRED_128B_PACKED_DOUBLE", 0x04),
                             ("FP_ARITH_INST_RETIRED_256B_PACKED_DOUBLE", 0x10),
                             ("FP_ARITH_INST_RETIRED_512B_PACKED_DOUBLE", 0x40)):
            v = region_value(out, event)
            tap.ok(v and cycles and tp.close(v / cycles, tp.FP[umask], tp.RATIO),
                   "%s per cycle in the region is the profile's %s" % (event, tp.FP[umask]), detail)
        # The region sleeps 2 s in each of its rounds: the counts cover those 20 s, not LIKWID's start-up.
        runtime = lt.metric(out, "RDTSC Runtime [s]")
        tap.ok(runtime is not None and abs(runtime - 2.0 * ROUNDS) < 1.5, "the region ran %d rounds of 2 s" % ROUNDS,
               detail)
        tap.ok("refused a lease" not in err and "void" not in err, "no forwarder was refused a lease", err[-1500:])
        c = t.Client(dm.socket)
        tap.eq(c.call("status")["leases"], [], "no lease is left after the run")
        c.close()
    finally:
        dm.stop()


def test_marker_counts_via_perf(tap):
    # The same run where pmugated counts via perf: the forwarder turns the programming into perf
    # events, and the region's reads (from the program's own forwarder) come from their counts.
    print("# the same on a node that counts via perf (pmugated --counters=perf)", flush=True)
    test_marker_counts(tap, "perf")


def test_void_counts_fail(tap):
    d, dm = tp.sim_daemon("skx")
    try:
        exe, why = build_example(d)
        holder = t.Client(dm.socket)
        holder.call("lease", cpus=[0])
        for what, args in (("a timed run", ["-C", "0", "-g", "FLOPS_DP", "-S", "200ms"]),
                           ("a marker run", ["-C", "0", "-m", "-g", "FLOPS_DP", exe] if exe else None)):
            if not args:
                tap.skip("%s whose CPU someone else leased fails" % what, why)
                continue
            p, out, err = start(d, dm, args)
            rc, out, err = finish(p, out, err)
            tap.ok(rc != 0 and "counts are void" in err and "leased" in err,
                   "%s whose CPU someone else leased fails, saying why, instead of exiting 0 with zeros" % what,
                   "rc %d\n%s\n%s" % (rc, out[-1000:], err[-1500:]))
        holder.close()
    finally:
        dm.stop()


if __name__ == "__main__":
    why = lt.missing()
    if why:
        print("1..0 # SKIP %s" % why)
        sys.exit(0)
    if os.environ.get("PMUGATE_SANITIZED") == "1":
        print("1..0 # SKIP real LIKWID runs once, in the build without sanitizers")
        sys.exit(0)
    raise SystemExit(t.Tap().run([test_marker_counts, test_marker_counts_via_perf, test_void_counts_fail]))
