#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The unmodified likwid-perfctr of Debian's likwid package, run with 'pmugate likwid' against
the real daemon on the simulated PMU: groups BRANCH, FLOPS_DP, TMA and MEM on Skylake-SP,
Cascade Lake and Ice Lake-SP (and MEM_FREERUN there) run to their results tables; LIKWID's metrics agree with the
simulated profile and with pmugate's own measurement of the same CPUs; in job mode a user gets
results on the job's CPU and LIKWID's own error on another; a LIKWID killed mid-run leaves
nothing programmed. The topology file LIKWID needs lives in a private mount namespace."""

import json
import os
import signal
import subprocess
import sys
import time

import likwidtest as lt
import pmugatetest as t

EVTSEL0, FIXED_CTRL, GLOBAL_CTRL = 0x186, 0x38D, 0x38F
IPC = 1.4                   # the simulator's default profile
BRANCHES_PER_CYCLE = 0.2
FP = {0x01: 0.5, 0x04: 0.25, 0x10: 0.125, 0x40: 0.0625}     # FP_ARITH_INST_RETIRED per cycle
TOPDOWN = {"Front End [%]": 15.0, "Speculation [%]": 5.0, "Retiring [%]": 35.0, "Back End [%]": 45.0}
READ_GBPS, WRITE_GBPS = 40, 15
# LIKWID's own timed mode (start, sleep, stop); the wrapper mode (-- CMD) runs in the job and
# kill tests. With the wrapper, LIKWID 5.2 reads the counters once more when its SIGCHLD wake-up
# races the workload's exit, and on Ice Lake-SP it then doubles its TMA fractions (docs/LIKWID.md).
TIMED = ["-S", "300ms"]
TIMED_MEM = ["-S", "1s"]
WORKLOAD = ["--", "sleep", "0.3"]
USER = (t.UNPRIVILEGED_UID, 4999, [t.USER_GID])

# Bounds: counts are exact rates of the simulated clock, so ratios of two counters agree to
# rounding (1e-3 covers LIKWID's four printed decimals). Ice Lake's TopDown comes from the 8-bit
# fields of PERF_METRICS (1/255 = 0.4 points), which count dropped uops as Frontend Bound and
# recovery bubbles as Bad Speculation, as the hardware does; pmugate's formulas correct for
# both, LIKWID's do not: 1 point against the profile, 0.6 against pmugate topdown. Bandwidth divides by LIKWID's own wall clock,
# and the uncore boxes count from the first CPU's start to its stop, which includes the other
# CPU's start records: 3% over one second. pmugate's own measurement runs in another
# interval of the same profile: 1%, and 3% for bandwidth, which LIKWID overstates as above.
RATIO = 1e-3
TMA_POINTS = {"skx": 0.05, "clx": 0.05, "icx": 1.0}
BANDWIDTH = 0.03
AGREE = 0.01


def sim_daemon(model, mode="open", args=(), kernel_pmu=None):
    d = t.workdir()
    conf = os.path.join(d, "sim.conf")
    with open(conf, "w") as f:
        f.write("[machine]\nsockets = 1\ncores = 2\nsmt = no\n")
        # LIKWID programs skx's and clx's memory channels itself: without the kernel's uncore PMUs,
        # whose driver would hold them
        f.write("[imc]\nread_gbps = %d\nwrite_gbps = %d\nkernel_pmu = %s\n" % (
            READ_GBPS, WRITE_GBPS, ("no" if model in ("skx", "clx") else "yes") if kernel_pmu is None else
            ("yes" if kernel_pmu else "no")))
        f.write("[cpus 0-1]\nevent.0xc4.0x00 = %s\n" % BRANCHES_PER_CYCLE)
        f.write("".join("event.0xc7.0x%02x = %s\n" % kv for kv in FP.items()))
    cfg = os.path.join(d, "pmugate.conf")
    with open(cfg, "w") as f:
        f.write("[access]\nmode = %s\nadmin_groups = %d\nuser_groups = %d\n" % (mode, t.ADMIN_GID, t.USER_GID))
    return d, t.Daemon(d, ["--backend=sim", "--sim-model=" + model, "--sim-config=" + conf] + list(args), config=cfg)


def pmugate_json(dm, *args):
    rc, out, err = t.run_cli([t.PMUGATE] + list(args) + ["-O", "json"], dm.socket,
                             env={"PMUGATE_GROUP_PATH": os.path.join(t.SOURCE, "client", "groups")})
    if rc != 0:
        raise AssertionError("pmugate %s: %s" % (" ".join(args), err))
    return json.loads(out)


def close(got, want, bound, relative=False):
    if got is None:
        return False
    return abs(got - want) <= (bound * abs(want) if relative else bound)


def check_group(tap, dm, model, group, out):
    m = lambda name: lt.metric(out, name)
    if group == "BRANCH":
        tap.ok(close(m("Branch rate"), BRANCHES_PER_CYCLE / IPC, RATIO),
               "%s BRANCH: branch rate %s = profile %.4f" % (model, m("Branch rate"), BRANCHES_PER_CYCLE / IPC))
        tap.ok(close(m("CPI"), 1 / IPC, RATIO), "%s BRANCH: CPI %s = 1/IPC of the profile" % (model, m("CPI")))
        c = pmugate_json(dm, "stat", "-e", "INST_RETIRED.ANY,CPU_CLK_UNHALTED.THREAD,BR_INST_RETIRED.ALL_BRANCHES",
                         "-c", "0-1", "-S", "0.3s")["aggregate"]["counts"]
        own = c["BR_INST_RETIRED.ALL_BRANCHES"]["value"] / c["INST_RETIRED.ANY"]["value"]
        tap.ok(close(m("Branch rate"), own, AGREE, relative=True),
               "%s BRANCH: LIKWID's branch rate agrees with pmugate stat's (%.4f)" % (model, own))
    elif group == "FLOPS_DP":
        packed = FP[0x04] + FP[0x10] + FP[0x40]
        want = 100 * packed / (packed + FP[0x01])
        tap.ok(close(m("Vectorization ratio"), want, 0.01),
               "%s FLOPS_DP: vectorization ratio %s = profile %.3f" % (model, m("Vectorization ratio"), want))
        flops = m("DP [MFLOP/s]") or 0
        muops = (m("Packed [MUOPS/s]") or 0) + (m("Scalar [MUOPS/s]") or 0)
        want = (2 * FP[0x04] + FP[0x01] + 4 * FP[0x10] + 8 * FP[0x40]) / (packed + FP[0x01])
        tap.ok(muops > 0 and close(flops / muops, want, RATIO, relative=True),
               "%s FLOPS_DP: FLOPs per FP instruction %.4f = profile %.4f" % (model, flops / muops if muops else 0,
                                                                               want))
        names = {0x01: "SCALAR_DOUBLE", 0x04: "128B_PACKED_DOUBLE", 0x10: "256B_PACKED_DOUBLE",
                 0x40: "512B_PACKED_DOUBLE"}
        c = pmugate_json(dm, "stat", "-e", ",".join("FP_ARITH_INST_RETIRED." + n for n in names.values()),
                         "-c", "0-1", "-S", "0.3s")["aggregate"]["counts"]
        v = {k: c["FP_ARITH_INST_RETIRED." + n]["value"] for k, n in names.items()}
        own = 100 * (v[0x04] + v[0x10] + v[0x40]) / sum(v.values())
        tap.ok(close(m("Vectorization ratio"), own, AGREE, relative=True),
               "%s FLOPS_DP: LIKWID's vectorization ratio agrees with pmugate stat's (%.3f)" % (model, own))
    elif group == "TMA":
        for name, want in TOPDOWN.items():
            tap.ok(close(m(name), want, TMA_POINTS[model]), "%s TMA: %s %s = profile %.1f" % (model, name, m(name), want))
        own = pmugate_json(dm, "topdown", "-l", "1", "-c", "0-1", "-S", "0.3s")["aggregate"]["metrics"]
        pairs = {"Front End [%]": "tma_frontend_bound", "Speculation [%]": "tma_bad_speculation",
                 "Retiring [%]": "tma_retiring", "Back End [%]": "tma_backend_bound"}
        # pmugate writes '%' metrics as percentages, as LIKWID does
        tap.ok(all(close(m(k), own[v], TMA_POINTS[model] + 0.1) for k, v in pairs.items()),
               "%s TMA: LIKWID's level 1 agrees with pmugate topdown's" % model,
               {k: (m(k), own[v]) for k, v in pairs.items()})
    elif group == "MEM_FREERUN":
        read, write = m("Memory read bandwidth [MBytes/s]"), m("Memory write bandwidth [MBytes/s]")
        tap.ok(close(read, READ_GBPS * 1000, BANDWIDTH, relative=True),
               "%s MEM_FREERUN: read bandwidth %s MB/s = simulated %d GB/s" % (model, read, READ_GBPS))
        tap.ok(close(write, WRITE_GBPS * 1000, BANDWIDTH, relative=True),
               "%s MEM_FREERUN: write bandwidth %s MB/s = simulated %d GB/s" % (model, write, WRITE_GBPS))
        own = pmugate_json(dm, "stat", "-g", "MEM", "-c", "0-1", "-S", "1s")["aggregate"]["metrics"]
        tap.ok(close(read, own["mem_read_bandwidth"], BANDWIDTH, relative=True) and
               close(write, own["mem_write_bandwidth"], BANDWIDTH, relative=True),
               "%s MEM_FREERUN: LIKWID's bandwidth agrees with pmugate stat -g MEM's (%.0f, %.0f MB/s)"
               % (model, own["mem_read_bandwidth"], own["mem_write_bandwidth"]))
    elif group == "MEM":
        read, write = m("Memory read bandwidth [MBytes/s]"), m("Memory write bandwidth [MBytes/s]")
        tap.ok(close(read, READ_GBPS * 1000, BANDWIDTH, relative=True),
               "%s MEM: read bandwidth %s MB/s = simulated %d GB/s" % (model, read, READ_GBPS))
        tap.ok(close(write, WRITE_GBPS * 1000, BANDWIDTH, relative=True),
               "%s MEM: write bandwidth %s MB/s = simulated %d GB/s" % (model, write, WRITE_GBPS))


def test_groups(tap):
    for model in ("skx", "clx", "icx"):
        d, dm = sim_daemon(model)
        try:
            for group in ("BRANCH", "FLOPS_DP", "TMA", "MEM") + (("MEM_FREERUN",) if model == "icx" else ()):
                args = ["-C", "0-1", "-g", group] + (TIMED_MEM if group.startswith("MEM") else TIMED)
                rc, out, err = lt.perfctr(d, dm.socket, model, args)
                # Once in several runs (seen once in eight full suites, on skx) the TMA table
                # came without a value for its last row, Back End. Until that is explained,
                # such a run is shown in full and repeated once; the repeat is checked.
                if group == "TMA" and any(lt.metric(out, name) is None for name in TOPDOWN):
                    print("# likwid-perfctr's TMA table lacks a value; repeated once. Its output "
                          "(rc %d):\n# " % rc + "\n# ".join((out + err).splitlines()), flush=True)
                    rc, out, err = lt.perfctr(d, dm.socket, model, args)
                if model == "icx" and group == "MEM":
                    tap.ok(rc != 0 and "counts are void" in err and "MEM_FREERUN" in err,
                           "icx MEM: the programmable MMIO channels are not served; the run fails saying so "
                           "and naming MEM_FREERUN, instead of printing 0 MB/s with exit 0",
                           "rc %d\n%s\n%s" % (rc, out[-1500:], err[-1500:]))
                    continue
                tap.ok(rc == 0 and "Group 1: " + group in out and lt.metric(out, "CPI") is not None,
                       "%s %s: likwid-perfctr runs to its results table and exits 0" % (model, group),
                       "rc %d\n%s\n%s" % (rc, out[-1500:], err[-1500:]))
                check_group(tap, dm, model, group, out)
            c = t.Client(dm.socket)
            tap.eq(c.call("status")["leases"], [], "%s: no lease is left after the runs" % model)
            c.close()
        finally:
            dm.stop()


def test_job_mode(tap):
    d, dm = sim_daemon("skx", mode="job")
    try:
        rc, out, err = t.run_cli([t.PMUGATECTL, "grant", "--job", "77", "--uid", str(USER[0]), "--cpus", "0"],
                                 dm.socket)
        tap.eq(rc, 0, "job 77 is granted CPU 0")
        rc, out, err = lt.perfctr(d, dm.socket, "skx", ["-C", "0", "-g", "BRANCH"] + WORKLOAD, user=USER)
        tap.ok(rc == 0 and close(lt.metric(out, "Branch rate"), BRANCHES_PER_CYCLE / IPC, RATIO),
               "the job's user gets LIKWID's results on CPU 0", "rc %d\n%s\n%s" % (rc, out[-1500:], err[-1500:]))
        rc, out, err = lt.perfctr(d, dm.socket, "skx", ["-C", "1", "-g", "BRANCH"] + WORKLOAD, user=USER)
        tap.ok(lt.metric(out, "Branch rate") is None and "ERROR" in err + out,
               "on CPU 1 (not the job's) LIKWID reports its own error and no results",
               "rc %d\n%s\n%s" % (rc, out[-1500:], err[-1500:]))
        tap.ok("outside" in err or "job" in err, "and the forwarder says which rule refused it", err[-1500:])
        tap.eq(t.Client(dm.socket).batch([["r", 1, EVTSEL0]])["values"], [0], "nothing reached CPU 1")
    finally:
        dm.stop()


def group_members(pgid):
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid:
                pids.append(int(entry))
    return pids


def test_killed(tap):
    d, dm = sim_daemon("skx")
    try:
        c = t.Client(dm.socket)
        regs = [["r", 0, r] for r in (EVTSEL0, EVTSEL0 + 1, EVTSEL0 + 2, EVTSEL0 + 3, FIXED_CTRL, GLOBAL_CTRL)]
        before = c.batch(regs)["values"]
        argv, env = lt.perfctr_command(d, dm.socket, "skx", ["-C", "0", "-g", "BRANCH", "--", "sleep", "20"])
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd="/",
                             start_new_session=True)
        try:
            deadline, programmed, forwarder = time.time() + 30, False, None
            while time.time() < deadline and not programmed:
                time.sleep(0.05)
                leases = c.call("status")["leases"]
                forwarder = leases[0][2] if leases else None
                programmed = forwarder is not None and c.batch([["r", 0, GLOBAL_CTRL]])["values"][0] != before[-1]
            tap.ok(programmed, "LIKWID is counting on CPU 0 under a lease")
            # LIKWID and its workload (which inherited LIKWID's end of the socket), not the
            # forwarder: it must notice on its own that LIKWID is gone.
            for pid in group_members(p.pid):
                if pid != forwarder:
                    os.kill(pid, signal.SIGKILL)
            deadline = time.time() + 10
            while time.time() < deadline and c.call("status")["leases"]:
                time.sleep(0.05)
            tap.eq(c.call("status")["leases"], [], "killing LIKWID ends the forwarder and its lease")
            tap.eq(c.batch(regs)["values"], before, "event selects, fixed and global control are as before LIKWID")
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.communicate()
        c.close()
    finally:
        dm.stop()


DIVERT = os.path.join(t.SOURCE, "contrib", "likwid", "pmugate-likwid-divert")
# In the test's namespace: /usr/sbin and dpkg's database are overlays too, so the diversion
# and the links never reach the real system.
DIVERT_SCRIPT = r"""
set -e
for d in /usr/sbin /var/lib/dpkg; do
        n=$(echo $d | tr / _)
        mkdir -p "$W/$n-upper" "$W/$n-work"
        mount -t overlay overlay -o "lowerdir=$d,upperdir=$W/$n-upper,workdir=$W/$n-work" $d
done
"$DIVERT" install
echo "status: $("$DIVERT" status)"
echo "found: $(PATH=/usr/sbin:/usr/bin:/bin which likwid-accessD) -> $(readlink /usr/sbin/likwid-accessD)"
echo "compiled: $(readlink /usr/sbin/likwid/likwid-accessD)"
PATH=/usr/sbin:/usr/bin:/sbin:/bin likwid-perfctr -C 0 -g BRANCH -S 200ms > "$W/root.out" 2>&1 || echo "root run failed"
setpriv --reuid=$USER_UID --regid=4999 --groups=$USER_GID -- env PATH=/usr/bin:/bin likwid-perfctr -C 1 -g BRANCH \
        -S 200ms > "$W/user.out" 2>&1 || echo "user run failed"
"$DIVERT" remove
echo "after: $("$DIVERT" status)"
echo "diversions: $(dpkg-divert --list /usr/sbin/likwid-accessD | wc -l)"
test -x /usr/sbin/likwid-accessD && ! test -L /usr/sbin/likwid-accessD && echo "original back"
test -e /usr/sbin/likwid || echo "no compiled-path link"
"""


def test_site_install(tap):
    d, dm = sim_daemon("skx")
    try:
        if not os.path.exists("/usr/sbin/likwid-accessD") or not os.path.exists("/usr/bin/dpkg-divert"):
            tap.ok(True, "# SKIP no Debian likwid-accessD or dpkg-divert to divert")
            return
        e = dict(os.environ, W=d, DIVERT=DIVERT, PMUGATE_SOCKET=dm.socket, USER_UID=str(USER[0]),
                 USER_GID=str(t.USER_GID), PMUGATE_LIKWID_ACCESSD=os.path.abspath(lt.ACCESSD))
        p = subprocess.run(lt.overlay_command(d, ["sh", "-c", DIVERT_SCRIPT], "skx"), capture_output=True,
                           text=True, env=e, timeout=120, cwd="/")
        out = p.stdout + p.stderr
        fw = os.path.abspath(lt.ACCESSD)
        tap.ok("status: pmugate:" in out and "found: /usr/sbin/likwid-accessD -> " + fw in out,
               "install: the first likwid-accessD on root's PATH is the forwarder", out)
        tap.ok("compiled: " + fw in out, "install: so is LIKWID's compiled-in path, for PATHs without /usr/sbin", out)
        for who in ("root", "user"):
            with open(os.path.join(d, who + ".out")) as f:
                res = f.read()
            tap.ok(close(lt.metric(res, "Branch rate"), BRANCHES_PER_CYCLE / IPC, RATIO),
                   "installed: plain likwid-perfctr as %s works through pmugated" % who, res[-1500:])
        tap.ok("after: likwid:" in out and "diversions: 0" in out and "original back" in out and
               "no compiled-path link" in out, "remove puts LIKWID's own daemon back and leaves nothing", out)
        tap.ok(not os.path.islink("/usr/sbin/likwid-accessD"), "the real /usr/sbin was never touched")
    finally:
        dm.stop()


if __name__ == "__main__":
    why = lt.missing()
    if why:
        print("1..0 # SKIP %s" % why)
        sys.exit(0)
    if os.environ.get("PMUGATE_SANITIZED") == "1":
        print("1..0 # SKIP real LIKWID runs once, in the build without sanitizers (about a minute)")
        sys.exit(0)
    raise SystemExit(t.Tap().run([test_groups, test_job_mode, test_killed, test_site_install]))
