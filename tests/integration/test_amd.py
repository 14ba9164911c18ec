#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""AMD Zen 4 and Zen 5 through the real daemon, socket and CLI: discovery on fake machines
(family, model, CPUID leaf 0x80000022, the CCX from the L3 cache), allowlist masks and the
never-list, foreign counters, PerfMonV2 gating on the simulator, leases of CCX- and
package-scope counters and their restore, job scope over a CCX, pipeline utilization (TopDown)
levels 1 and 2 against the simulator's profile, and the Zen groups.

Bounds: level 1 counts on the six core counters without multiplexing, so perf's formulas give
the profile back up to integer counts: EXACT (1e-6). Level 2 (and level 1 beside the NMI
watchdog) needs two event sets that take turns; on the simulator's steady workload the
scaling by the time each set counted adds at most MUX_BOUND (1e-4)."""

import json
import os
import sys
import time

import pmugatetest as t

EXACT = 1e-6
MUX_BOUND = 1e-4
GROUPS = t.GROUPS

PERF_CTL0, PERF_CTR0 = 0xC0010200, 0xC0010201
GLOBAL_STATUS, GLOBAL_CTL, GLOBAL_STATUS_CLR, GLOBAL_STATUS_SET = 0xC0000300, 0xC0000301, 0xC0000302, 0xC0000303
L3_CTL0, L3_CTR0 = 0xC0010230, 0xC0010231
DF_CTL0, DF_CTR0 = 0xC0010240, 0xC0010241
RAPL_UNIT, CORE_ENERGY, PKG_ENERGY = 0xC0010299, 0xC001029A, 0xC001029B
HWCR, SYSCFG, EFER, IBS_FETCH_CTL, PSTATE_CTL = 0xC0010015, 0xC0010010, 0xC0000080, 0xC0011030, 0xC0010062
EVTSEL_MASK = 0xFFFC7FFFF
EN, USR, OS, INT = 1 << 22, 1 << 16, 1 << 17, 1 << 20
CYCLES = 0x76 | USR | OS | EN
L3_ALL_LOOKUPS = 0x04 | 0xFF << 8 | EN
DF_READ_BEATS_CH0 = 0x1F | 0xFE << 8 | 0x7 << 24 | EN
USER = t.UNPRIVILEGED_UID

# Workloads; smt_contention is AMD's fifth level-1 class.
HPC = dict(retiring=0.35, bad_speculation=0.06, frontend_bound=0.14, backend_bound=0.37, smt_contention=0.08,
           heavy_operations=0.04, branch_mispredicts=0.04, fetch_latency=0.09, memory_bound=0.25,
           ipc=1.5, utilization=0.95, user_fraction=0.9)
BRANCHY = dict(retiring=0.30, bad_speculation=0.28, frontend_bound=0.22, backend_bound=0.20,
               heavy_operations=0.02, branch_mispredicts=0.21, fetch_latency=0.15, memory_bound=0.05,
               ipc=1.1, utilization=0.6, user_fraction=0.95)

L1 = ["frontend_bound", "bad_speculation", "backend_bound", "smt_contention", "retiring"]
L2_NAMES = {
    "zen4": ["frontend_bound_latency", "frontend_bound_bandwidth", "bad_speculation_mispredicts",
             "bad_speculation_pipeline_restarts", "backend_bound_memory", "backend_bound_cpu",
             "retiring_fastpath", "retiring_microcode"],
    "zen5": ["frontend_bound_by_latency", "frontend_bound_by_bandwidth", "bad_speculation_from_mispredicts",
             "bad_speculation_from_pipeline_restarts", "backend_bound_by_memory", "backend_bound_by_cpu",
             "retiring_from_fastpath", "retiring_from_microcode"],
}
NOMINAL_MHZ = {"zen4": 2400, "zen5": 2500}


def expected(model, p):
    lat, bw, misp, restarts, mem, cpu, fast, ucode = L2_NAMES[model]
    return {
        "frontend_bound": p["frontend_bound"],
        "bad_speculation": p["bad_speculation"],
        "backend_bound": p["backend_bound"],
        "smt_contention": p.get("smt_contention", 0.0),
        "retiring": p["retiring"],
        lat: p["fetch_latency"],
        bw: p["frontend_bound"] - p["fetch_latency"],
        misp: p["branch_mispredicts"],
        restarts: p["bad_speculation"] - p["branch_mispredicts"],
        mem: p["memory_bound"],
        cpu: p["backend_bound"] - p["memory_bound"],
        fast: p["retiring"] - p["heavy_operations"],
        ucode: p["heavy_operations"],
    }


def Sim(model, config=None, cores_per_ccx=2, **kw):
    """The harness's simulated machine with AMD's core complexes (two cores each by default)."""
    return t.Sim(model, config=config, cores_per_ccx=cores_per_ccx, **kw)


def fake(model, **kw):
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), model, **kw)
    return d, m


def err(r):
    return "ok" if r.get("ok") else r["error"]["name"]


# ---------------------------------------------------------------- discovery on fake machines

def test_discovery(tap):
    d, m = fake("zen4", sockets=2, cores=4, cores_per_ccx=2)
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        h = t.Client(dm.socket).call("hello")
        tap.eq((h["cpu"]["key"], h["cpu"]["name"], h["cpu"]["vendor"]), ("zen4", "Zen 4 (Genoa)", "AuthenticAMD"),
               "family 0x19 model 0x11 is Zen 4 (Genoa)")
        pmu = h["pmu"]
        tap.eq((pmu["gp_counters"], pmu["fixed_counters"], pmu["counter_width"], pmu["slots_width"]), (6, 0, 48, 6),
               "six 48-bit core counters, no fixed counters, 6 dispatch slots")
        tap.eq((pmu["perfmon_v2"], pmu["df_counters"], pmu["umc_counters"], pmu["l3_counters"], pmu["cpuid"]),
               (True, 16, 48, 6, True), "PerfMonV2 and the uncore counters come from CPUID leaf 0x80000022")
        ccx = {c[0]: c[6] for c in h["cpus"]}
        want = {cpu: m.topology(cpu)[0] * 2 + m.topology(cpu)[1] // 2 for cpu in range(m.ncpus)}
        tap.eq(ccx, want, "every CPU's CCX is its L3 cache id (two cores per CCX, SMT siblings alike)")
        scopes = {r[7]: r[5] for r in h["registers"]}
        tap.eq((scopes["AMD_L3_PERF_CTL0"], scopes["AMD_DF_PERF_CTL0"], scopes["AMD_PERF_CTL0"]),
               ("ccx", "package", "thread"), "hello lists L3 counters as ccx scope, data fabric as package")
    finally:
        dm.stop()

    for model, key, name in (("zen4c", "zen4", "Zen 4 (Bergamo)"), ("zen5", "zen5", "Zen 5 (Turin)")):
        d, m = fake(model, sockets=1, cores=2)
        dm = t.Daemon(d, ["--root=" + m.root])
        try:
            h = t.Client(dm.socket).call("hello")
            tap.eq((h["cpu"]["key"], h["cpu"]["name"]), (key, name), "%s is recognised as %s" % (model, name))
            tap.eq(h["pmu"]["slots_width"], 8 if key == "zen5" else 6, "%s dispatch width" % key)
        finally:
            dm.stop()

    d, m = fake("zen3", sockets=1, cores=2)
    dm = t.Daemon(d, ["--root=" + m.root], expect_ready=False)
    rc = dm.wait_exit()
    log = dm.log()
    dm.stop()
    tap.ok(rc != 0 and "is not supported" in log, "Zen 3 (family 0x19 model 0x01) is not taken for Zen 4", log)

    d, m = fake("zen4", sockets=1, cores=2, cpuid=(0x1, 4 | 8 << 10))
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        h = t.Client(dm.socket).call("hello")
        tap.eq((h["pmu"]["gp_counters"], h["pmu"]["df_counters"]), (4, 8),
               "a CPUID leaf with fewer counters (a virtual PMU) is believed")
        tap.ok(all(c[6] == -1 for c in h["cpus"]), "without cache/index3 the CCX is unknown (-1)", h["cpus"])
    finally:
        dm.stop()

    d, m = fake("zen5", sockets=1, cores=2, cpuid=None)
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        h = t.Client(dm.socket).call("hello")
        tap.eq((h["pmu"]["gp_counters"], h["pmu"]["perfmon_v2"], h["pmu"]["cpuid"]), (6, True, False),
               "without the cpuid driver the model's defaults stand, and hello says so")
    finally:
        dm.stop()


def test_masks_and_never_list(tap):
    d, m = fake("zen4", sockets=1, cores=2, smt=False, cores_per_ccx=2)
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        c = t.Client(dm.socket)
        c.call("lease", cpus=[0, 1])
        m.set_msr(0, PERF_CTL0, INT)
        r = c.batch([["w", 0, PERF_CTL0, 0xFFFFFFFFFFFFFFFF]])
        tap.eq(m.msr(0, PERF_CTL0), EVTSEL_MASK,
               "PerfEvtSel: INT, GuestOnly, HostOnly and reserved bits stay out of reach; an INT someone "
               "else left there is not kept beside EN (the clean value)")
        m.set_msr(0, PERF_CTL0, INT)
        c.batch([["w", 0, PERF_CTL0, 0]])
        tap.eq(m.msr(0, PERF_CTL0), 0, "clearing leaves the bits outside the mask clean too")
        c.batch([["w", 1, PERF_CTR0 + 2, 0xFFFFFFFFFFFFFFFF]])
        tap.eq(m.msr(1, PERF_CTR0 + 2), 0xFFFFFFFFFFFF, "core counters take 48 bits")
        c.batch([["w", 0, GLOBAL_CTL, 0xFFFFFFFFFFFFFFFF]])
        tap.eq(m.msr(0, GLOBAL_CTL), 0x3F, "PerfCntrGlobalCtl: the six counter bits only")
        c.batch([["w", 0, L3_CTL0, 0xFFFFFFFFFFFFFFFF]])
        tap.eq(m.msr(0, L3_CTL0), 0x0307DC000040FFFF, "L3 event select: no INT, no reserved bits")
        c.batch([["w", 0, DF_CTL0, 0xFFFFFFFFFFFFFFFF]])
        tap.eq(m.msr(0, DF_CTL0), 0x3F0F40FFFF, "data-fabric event select: no INT, no reserved bits")
        cases = [
            ([["r", 0, HWCR]], "reg-forbidden", "HWCR read"),
            ([["w", 0, SYSCFG, 0]], "reg-forbidden", "SYSCFG write"),
            ([["w", 0, EFER, 0]], "reg-forbidden", "EFER write"),
            ([["r", 0, IBS_FETCH_CTL]], "reg-forbidden", "IBS read"),
            ([["w", 0, PSTATE_CTL, 0]], "reg-forbidden", "P-state control write"),
            ([["w", 0, GLOBAL_STATUS_SET, 1]], "read-only", "PerfCntrGlobalStatusSet write"),
            ([["w", 0, GLOBAL_STATUS, 1]], "read-only", "PerfCntrGlobalStatus write"),
            ([["w", 0, PKG_ENERGY, 1]], "read-only", "package energy write"),
            ([["r", 0, 0xC0010000]], "reg-not-allowed", "the legacy PERF_CTL0 alias"),
            ([["r", 0, 0xC001020C]], "reg-not-allowed", "a seventh core counter"),
        ]
        for ops, name, desc in cases:
            r = c.batch([["w", 0, PERF_CTL0 + 8, CYCLES]] + ops)
            tap.ok(not r["ok"] and r["error"]["name"] == name and r["error"]["op"] == 1,
                   "%s is refused as %s and the batch runs nothing" % (desc, name), r)
        # (the fake machine's MSR files are byte-addressed: PerfEvtSel4 overlaps nothing written here)
        tap.eq(m.msr(0, PERF_CTL0 + 8), 0, "nothing of a refused batch ran")
        r = c.batch([["r", 0, GLOBAL_STATUS_SET], ["r", 0, RAPL_UNIT], ["r", 1, CORE_ENERGY]])
        tap.eq(r["status"], [0, 0, 0], "status-set, the RAPL unit and core energy are readable")
    finally:
        dm.stop()


# perf's PMC2 on CPU 1. The fake machine's MSR files are byte-addressed, so neighbouring
# registers overlap: an event code without bit 6 keeps PerfEvtSel1's EN bit clear.
PERF_EVENT = 0x0C | USR | OS | EN | INT


def test_foreign_counters(tap):
    d, m = fake("zen4", sockets=1, cores=2, smt=False, cores_per_ccx=2)
    m.set_msr(1, PERF_CTL0 + 4, PERF_EVENT)
    m.set_msr(1, GLOBAL_CTL, 0x3F)
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        c = t.Client(dm.socket)
        h = c.call("hello")
        tap.eq(h["foreign"]["gp_mask"], 0x4, "perf's enabled PMC2 on CPU 1 is detected as foreign")
        c.call("lease", cpus=[1])
        r = c.batch([["w", 1, PERF_CTL0 + 4, 0]])
        tap.ok(err(r) == "busy" and "held by another PMU user" in r["error"]["reason"],
               "its event select is never written", r)
        r = c.batch([["w", 1, PERF_CTR0 + 4, 0]])
        tap.eq(err(r), "busy", "nor its counter")
        r = c.batch([["w", 1, GLOBAL_CTL, 0]])
        tap.eq(err(r), "busy", "an unmasked PerfCntrGlobalCtl write would stop it: refused")
        r = c.batch([["w", 1, GLOBAL_STATUS_CLR, 0x3F]])
        tap.eq(err(r), "busy", "clearing its overflow bit is refused")
        r = c.batch([["wm", 1, GLOBAL_CTL, 0, 0x3]])
        tap.eq(err(r), "ok", "a masked write of one's own bits is fine")
        tap.eq(m.msr(1, GLOBAL_CTL), 0x3C, "the foreign counter's global enable survived")
        c.call("release")
        # (its event select itself cannot be checked here: zeroing PerfCtr1 and 3 overlaps it
        # in the byte-addressed fake files; test_topdown_beside_watchdog checks it on the simulator)
        tap.eq(m.msr(1, GLOBAL_CTL), 0x3F, "the restore gives the foreign counter its global enable back")
    finally:
        dm.stop()

    d, m = fake("zen4", sockets=1, cores=2, smt=False, nmi_watchdog=True)
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        h = t.Client(dm.socket).call("hello")
        tap.eq(h["foreign"]["gp_mask"], 0x1,
               "with the NMI watchdog on and its counter caught disabled, PMC0 counts as taken")
    finally:
        dm.stop()


def test_crash_restores_ccx_and_package(tap):
    # one socket, two cores of two threads, one CCX: CPUs 0-3, CPU 0 the anchor of both. (The
    # fake MSR files are byte-addressed: zeroing a PerfCtr overwrites all but the low byte of the
    # select below it, so the selects' original values fit in that byte.)
    d, m = fake("zen4", sockets=1, cores=2, cores_per_ccx=2)
    for cpu in range(4):
        m.set_msr(cpu, L3_CTL0, 0x04)
        m.set_msr(cpu, DF_CTL0, 0x1F)
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        c = t.Client(dm.socket)
        c.call("lease", cpus=[0, 1, 2, 3])
        r = c.batch([["w", 0, L3_CTL0, L3_ALL_LOOKUPS], ["w", 0, DF_CTL0, DF_READ_BEATS_CH0]])
        tap.eq(err(r), "ok", "L3 and data-fabric selects written")
        tap.ok(os.path.exists(os.path.join(dm.runtime_dir, "state", "lease-cpu0")),
               "both are journaled under CPU 0, the anchor of the CCX and of the package")
        dm.proc.kill()
        dm.wait_exit()
        tap.eq((m.msr(0, L3_CTL0), m.msr(0, DF_CTL0)), (L3_ALL_LOOKUPS, DF_READ_BEATS_CH0),
               "the daemon died with them programmed")
        dm2 = t.Daemon(d, ["--root=" + m.root])
        try:
            tap.eq((m.msr(0, L3_CTL0), m.msr(0, DF_CTL0)), (0x04, 0x1F),
                   "the restarted daemon put the CCX and package registers back before serving")
            tap.ok("Restored 4 registers" in dm2.log(), "selects restored, the counters they start zeroed",
                   dm2.log())
        finally:
            dm2.stop()
    finally:
        dm.stop()


def read1(c, cpu, reg):
    r = c.batch([["r", cpu, reg]])
    if not r.get("ok"):
        raise AssertionError(r)
    return r["values"][0]


# ---------------------------------------------------------------- simulator: PerfMonV2, leases

def test_perfmon_v2_gating(tap):
    sim = Sim("zen4")
    try:
        c = t.Client(sim.daemon.socket)
        c.call("lease", cpus=[0])
        c.batch([["w", 0, PERF_CTR0, 0], ["w", 0, PERF_CTL0, CYCLES]])
        a = read1(c, 0, PERF_CTR0)
        time.sleep(0.05)
        b = read1(c, 0, PERF_CTR0)
        tap.ok(a == b == 0, "PerfEvtSel.EN alone does not count under PerfMonV2 (%d, %d)" % (a, b))
        c.batch([["wm", 0, GLOBAL_CTL, 1, 1]])
        time.sleep(0.05)
        a = read1(c, 0, PERF_CTR0)
        tap.ok(a > 1e6, "with its PerfCntrGlobalCtl bit the counter counts (%d)" % a)
        c.batch([["wm", 0, GLOBAL_CTL, 0, 1]])
        a = read1(c, 0, PERF_CTR0)
        time.sleep(0.02)
        tap.eq(read1(c, 0, PERF_CTR0), a, "clearing the global bit freezes it")

        c.batch([["w", 0, PERF_CTR0, (1 << 48) - 1000], ["wm", 0, GLOBAL_CTL, 1, 1]])
        time.sleep(0.02)
        r = c.batch([["r", 0, GLOBAL_STATUS], ["r", 0, PERF_CTR0]])
        tap.ok(r["values"][0] & 1 and r["values"][1] < (1 << 40),
               "a 48-bit wrap sets the overflow bit in PerfCntrGlobalStatus", r)
        c.batch([["w", 0, GLOBAL_STATUS_CLR, 1]])
        tap.eq(read1(c, 0, GLOBAL_STATUS) & 1, 0, "PerfCntrGlobalStatusClr clears it")
        c.call("release")
        r = c.batch([["r", 0, PERF_CTL0], ["r", 0, PERF_CTR0], ["r", 0, GLOBAL_CTL]])
        tap.eq(r["values"], [0, 0, 0], "release restores the event select and global control, zeroes the counter")
    finally:
        sim.stop()


def test_ccx_and_package_leases(tap):
    # one socket, four cores, two per CCX, SMT: CCX 0 = CPUs 0,1,4,5 and CCX 1 = CPUs 2,3,6,7
    sim = Sim("zen4", rules=[("0-7", HPC)])
    try:
        c = t.Client(sim.daemon.socket)
        h = c.call("hello")
        tap.eq([cpu[6] for cpu in h["cpus"]], [0, 0, 1, 1, 0, 0, 1, 1], "the simulator reports the CCX of every CPU")
        c.call("lease", cpus=[0])
        r = c.batch([["w", 0, L3_CTL0, L3_ALL_LOOKUPS]])
        tap.ok(err(r) == "no-lease" and "CCX" in r["error"]["reason"] and "CPU 1 " in r["error"]["reason"],
               "an L3 counter needs leases on every CPU of its CCX", r)
        c.call("lease", cpus=[1, 4, 5])
        r = c.batch([["w", 0, L3_CTR0, 0], ["w", 0, L3_CTL0, L3_ALL_LOOKUPS]])
        tap.eq(err(r), "ok", "with the whole CCX leased the L3 counter is programmed")
        time.sleep(0.05)
        r = c.batch([["r", 5, L3_CTL0], ["r", 5, L3_CTR0], ["r", 2, L3_CTL0]])
        tap.ok(r["values"][0] == L3_ALL_LOOKUPS and r["values"][1] > 0 and r["values"][2] == 0,
               "one register per CCX: CPU 5 sees it counting, CPU 2 (the other CCX) does not", r)
        r = c.batch([["w", 0, DF_CTL0, DF_READ_BEATS_CH0]])
        tap.ok(err(r) == "no-lease" and "package 0" in r["error"]["reason"],
               "a data-fabric counter needs the whole package", r)
        c.call("release", cpus=[5])
        r = c.batch([["r", 0, L3_CTL0], ["r", 0, L3_CTR0]])
        tap.eq(r["values"], [0, 0], "ending one lease of the CCX restores the L3 select and zeroes its counter")

        c.call("lease", cpus=[2, 3, 5, 6, 7])
        r = c.batch([["w", 3, DF_CTR0, 0], ["w", 3, DF_CTL0, DF_READ_BEATS_CH0]])
        tap.eq(err(r), "ok", "with every CPU of the package leased the data fabric is programmed")
        time.sleep(0.05)
        tap.ok(read1(c, 7, DF_CTR0) > 0, "DRAM read beats count, seen from any CPU of the package")
        c.close()
        time.sleep(0.2)
        c = t.Client(sim.daemon.socket)
        r = c.batch([["r", 0, DF_CTL0], ["r", 0, DF_CTR0]])
        tap.eq(r["values"], [0, 0], "a disconnect restores the data fabric and zeroes its counter")
        r = c.batch([["r", 0, PKG_ENERGY], ["r", 0, RAPL_UNIT]])
        tap.ok(r["values"][0] > 0 and (r["values"][1] >> 8) & 0x1F == 14,
               "RAPL: package energy counts in 2^-14 J units", r)
    finally:
        sim.stop()


def test_cli(tap):
    sim = Sim("zen4", rules=[("0-7", HPC)])
    try:
        rc, out, e = sim.run("info")
        tap.ok(rc == 0 and "AMD PMU:       PerfMonV2 yes, 6 L3 counters per CCX, 16 data-fabric" in out,
               "pmugate info shows the AMD PMU capabilities", out + e)
        info = sim.json("info", "--json")
        tap.eq(([c["ccx"] for c in info["cpus"]], info["pmu"]["perfmon_v2"], info["pmu"]["df_counters"]),
               ([0, 0, 1, 1, 0, 0, 1, 1], True, 16), "pmugate info --json has every CPU's CCX and the AMD PMU")
        check = "%s read -c 5 AMD_L3_PERF_CTL0 | grep -q 0x00000000004004ff" % t.PMUGATE
        rc, out, e = sim.run("write", "-c", "0", "AMD_L3_PERF_CTL0=0x4004ff", "--", "/bin/sh", "-c", check)
        tap.ok(rc == 0 and "(written)" in out,
               "pmugate write leases the whole CCX for an L3 register; CPU 5 sees it while the command runs",
               out + e)
        rc, out, e = sim.run("read", "-c", "0", "AMD_L3_PERF_CTL0")
        tap.ok(rc == 0 and "0x0000000000000000" in out, "and it is restored when the command ends", out + e)
    finally:
        sim.stop()


def test_job_scope_ccx(tap):
    d = t.workdir()
    conf = os.path.join(d, "pmugate.conf")
    with open(conf, "w") as f:
        f.write("[access]\nmode = job\nadmin_groups = %d\nuser_groups = %d\n" % (t.ADMIN_GID, t.USER_GID))
    sim = Sim("zen4", config=conf)
    try:
        def ctl(*args):
            return t.run_cli([t.PMUGATECTL] + list(args), sim.daemon.socket)

        def probe(cpus):
            def run():
                c = t.Client(sim.daemon.socket)
                out = {"lease": err(c.call("lease", cpus=cpus))}
                r = c.batch([["w", 0, L3_CTL0, L3_ALL_LOOKUPS]])
                out["l3"] = err(r)
                out["reason"] = r.get("error", {}).get("reason", "")
                out["core"] = err(c.batch([["w", 0, PERF_CTL0, CYCLES]]))
                return out
            return run

        ctl("grant", "--job", "41", "--uid", str(USER), "--cpus", "0,1,4,5")
        got = t.in_child_as(USER, 4999, [t.USER_GID], probe([0, 1, 4, 5]))
        tap.eq((got["lease"], got["l3"], got["core"]), ("ok", "ok", "ok"),
               "a job holding a whole CCX programs its L3 counters")
        ctl("grant", "--job", "41", "--uid", str(USER), "--cpus", "0-1")
        got = t.in_child_as(USER, 4999, [t.USER_GID], probe([0, 1]))
        tap.ok(got["l3"] == "out-of-scope" and "CCX" in got["reason"] and got["core"] == "ok",
               "a job with half a CCX may not touch its L3 counters, only its own cores'", got)
    finally:
        sim.stop()


# ---------------------------------------------------------------- TopDown and groups

def check(tap, model, values, profile, metrics, bound, what):
    want = expected(model, profile)
    worst = max(abs(values[k] - want[k]) for k in metrics)
    detail = "\n".join("%-40s measured %.7f profile %.7f" % (k, values[k], want[k]) for k in metrics)
    tap.ok(worst <= bound, "%s: %s within %g (worst %.2e)" % (model, what, bound, worst), detail)


def test_topdown(tap):
    for model in ("zen4", "zen5"):
        sim = Sim(model, rules=[("0-1,4-5", HPC), ("2-3,6-7", BRANCHY)])
        try:
            r = sim.json("topdown", "-l", "1", "-c", "0-3", "-S", "0.5s", "-O", "json")
            tap.eq([x["name"] for x in r["metrics"]], L1, "%s level 1: perf's five PipelineL1 classes" % model)
            tap.eq(r["event_sets"], 1, "%s level 1 fits the six core counters" % model)
            tap.ok(set(r["aggregate"]["counts"]) >= {"ls_not_halted_cyc", "de_src_op_disp.all", "ex_ret_ops"},
                   "%s raw counts are named as perf names them" % model, sorted(r["aggregate"]["counts"]))
            for cpu in r["per_cpu"]:
                check(tap, model, cpu["metrics"], HPC if cpu["cpu"] < 2 else BRANCHY, L1, EXACT,
                      "level 1 on CPU %d" % cpu["cpu"])

            r = sim.json("topdown", "-l", "2", "-c", "0-3", "-S", "1.5s", "-O", "json")
            tap.eq(r["event_sets"], 2, "%s level 2: twelve events on six counters take turns" % model)
            scales = [v["scale"] for v in r["aggregate"]["counts"].values()]
            tap.ok(all(1.3 < s < 3.5 for s in scales), "%s: every count is scaled (%s)" % (
                model, sorted(set(round(s, 2) for s in scales))))
            for cpu in r["per_cpu"]:
                check(tap, model, cpu["metrics"], HPC if cpu["cpu"] < 2 else BRANCHY, L1 + L2_NAMES[model],
                      MUX_BOUND, "multiplexed levels 1 and 2 on CPU %d" % cpu["cpu"])
            width = "6" if model == "zen4" else "8"
            tap.ok("de_no_dispatch_per_slot.no_ops_from_frontend:c=" + width in r["aggregate"]["counts"],
                   "%s front-end latency uses cmask %s" % (model, width))
        finally:
            sim.stop()


def test_topdown_beside_watchdog(tap):
    sim = Sim("zen5", rules=[("0-7", HPC)], extra="[inject]\nnmi_watchdog = yes\n")
    try:
        before = sim.run("read", "-c", "0", "AMD_PERF_CTL0", "AMD_PERF_CNTR_GLOBAL_CTL")[1]
        r = sim.json("topdown", "-l", "1", "-c", "0-1", "-S", "1s", "-O", "json")
        tap.eq(r["event_sets"], 2, "the watchdog holds PMC0: level 1's six events multiplex on five counters")
        for cpu in r["per_cpu"]:
            check(tap, "zen5", cpu["metrics"], HPC, L1, MUX_BOUND, "level 1 beside the watchdog, CPU %d" % cpu["cpu"])
        after = sim.run("read", "-c", "0", "AMD_PERF_CTL0", "AMD_PERF_CNTR_GLOBAL_CTL")[1]
        tap.eq(after, before, "the watchdog's event select and global enable are untouched")
    finally:
        sim.stop()


def test_groups(tap):
    for model in ("zen4", "zen5"):
        sim = Sim(model, rules=[("0-7", HPC)])
        try:
            m = sim.json("stat", "-g", "BRANCH", "-c", "0-1", "-S", "0.3s", "-O", "json")["aggregate"]["metrics"]
            tap.ok(abs(m["branch_rate"] - 1 / 6) < EXACT and abs(m["taken_branch_ratio"] - 2 / 3) < EXACT and
                   abs(m["ipc"] - HPC["ipc"]) < EXACT, "%s BRANCH: rates of the simulated workload" % model, m)
            m = sim.json("stat", "-g", "FLOPS_DP", "-c", "0", "-S", "0.3s", "-O", "json")["aggregate"]["metrics"]
            mhz = NOMINAL_MHZ[model] * HPC["utilization"]
            tap.ok(abs(m["flops_per_instruction"] - 0.5) < EXACT and
                   abs(m["dp_mflop_s"] - 0.5 * HPC["ipc"] * mhz) < 0.05 * 0.5 * HPC["ipc"] * mhz,
                   "%s FLOPS_DP: FLOP rate of the simulated workload" % model, m)
            m = sim.json("stat", "-g", "FLOPS_SP", "-c", "0", "-S", "0.2s", "-O", "json")["aggregate"]["metrics"]
            tap.ok(abs(m["flops_per_cycle"] - 0.5 * HPC["ipc"]) < EXACT, "%s FLOPS_SP runs" % model, m)
            m = sim.json("stat", "-g", "CLOCK", "-c", "0", "-S", "0.3s", "-O", "json")["aggregate"]["metrics"]
            tap.ok(abs(m["clock_mhz"] - mhz) < 0.05 * mhz, "%s CLOCK: unhalted MHz (%.0f, want %.0f)" % (
                model, m["clock_mhz"], mhz), m)
            m = sim.json("stat", "-g", "ipc", "-c", "0", "-S", "0.2s", "-O", "json")["aggregate"]["metrics"]
            tap.ok(abs(m["ipc"] - HPC["ipc"]) < EXACT and abs(m["cpi"] - 1 / HPC["ipc"]) < EXACT,
                   "%s: the ipc group every model has works, with perf's event names" % model, m)
            rc, out, e = sim.run("stat", "-g", "topdown-l1", "-c", "0", "-S", "0.1s")
            tap.ok(rc == 0 and "SMT Contention" in out, "%s: the TopDown group also runs through stat" % model,
                   out + e)
        finally:
            sim.stop()
    sim = Sim("zen4")
    try:
        rc, out, e = sim.run("stat", "-e", "UOPS_ISSUED.ANY", "-c", "0", "-S", "0.1s")
        tap.ok(rc != 0 and "UOPS_ISSUED.ANY" in e, "an Intel event name is refused on Zen 4, naming it", e)
        rc, out, e = sim.run("stat", "-e", "r1000001a0", "-c", "0", "-S", "0.1s", "-O", "json")
        tap.ok(rc == 0 and json.loads(out)["aggregate"]["counts"]["r1000001a0"]["value"] > 0,
               "a raw AMD code with event[11:8] in bits 32-35 counts", out + e)
    finally:
        sim.stop()


def test_energy(tap):
    for model in ("zen4", "zen5"):
        sim = Sim(model, sockets=2, cores=2, cores_per_ccx=2)
        try:
            r = sim.json("stat", "-g", "ENERGY", "-c", "0-7", "-S", "0.5s", "-O", "json")
            packages = r["per_package"]
            watts = [p["metrics"]["power_package"] for p in packages]
            tap.ok(len(packages) == 2 and all(abs(w - 180.0) < 1.8 for w in watts),
                   "%s ENERGY: each socket's package power is the simulator's 180 W within 1 %% (%s)" % (
                       model, ", ".join("%.2f" % w for w in watts)))
            c = packages[0]["counts"]["PWR_PKG_ENERGY"]
            tap.ok(abs(c["value"] - c["raw"] * 2.0 ** -14) <= 2.0 ** -14,
                   "%s: joules are AMD_PKG_ENERGY_STAT counts in RAPL_PWR_UNIT's 2^-14 J" % model, c)
            rc, out, e = sim.run("stat", "-e", "PWR_DRAM_ENERGY", "-c", "0", "-S", "0.1s")
            tap.ok("DRAM" in out + e, "%s: a DRAM domain AMD does not have is named as not counted" % model, out + e)
        finally:
            sim.stop()


def read_ctl(sim, cpu, reg):
    return read1(t.Client(sim.daemon.socket), cpu, reg)


def test_mem(tap):
    for model in ("zen4", "zen5"):
        sim = Sim(model, sockets=2, cores=4, cores_per_ccx=2, extra="[imc]\nread_gbps = 30\nwrite_gbps = 12\n")
        try:
            r = sim.json("stat", "-g", "MEM", "-c", "0-15", "-S", "0.5s", "-O", "json")
            packages = r["per_package"]
            rd = [p["metrics"]["mem_read_bandwidth"] for p in packages]
            wr = [p["metrics"]["mem_write_bandwidth"] for p in packages]
            tap.ok(len(packages) == 2 and all(abs(x - 30000) < 300 for x in rd) and
                   all(abs(x - 12000) < 120 for x in wr),
                   "%s MEM: each socket's DRAM read and write bandwidth is the simulator's 30 and 12 GB/s "
                   "within 1 %% (%s / %s)" % (model, rd, wr))
            node = r["aggregate"]["metrics"]
            tap.ok(abs(node["mem_bandwidth"] - 84000) < 840,
                   "%s MEM: the node's bandwidth is both sockets' within 1 %%" % model, node)
            tap.eq([read_ctl(sim, 0, DF_CTL0), read_ctl(sim, 4, DF_CTL0 + 2 * 15)], [0, 0],
                   "%s MEM: the data-fabric control registers are restored after the measurement" % model)
            rc, out, e = sim.run("list", "groups")
            names = [line.split()[0] for line in out.splitlines() if line.strip()]
            tap.ok(rc == 0 and "L3" in names and "MEM" in names and "ENERGY" in names and "DATA" not in names,
                   "%s: pmugate list groups names L3 and MEM, and no Intel-only group" % model, out + e)
        finally:
            sim.stop()


def test_l3(tap):
    want = HPC["memory_bound"] / HPC["backend_bound"]
    for model in ("zen4", "zen5"):
        sim = Sim(model, sockets=2, cores=4, cores_per_ccx=2, rules=[("0-15", HPC)])
        try:
            # CCX 0 (CPUs 0-1 and their SMT siblings 8-9) and CCX 2 (4-5, 12-13), one per socket
            r = sim.json("stat", "-g", "L3", "-c", "0-1,4-5,8-9,12-13", "-S", "0.3s", "-O", "json")
            ratios = [p["metrics"]["l3_miss_ratio"] for p in r["per_package"]]
            tap.ok(len(ratios) == 2 and all(abs(x - want) < 1e-4 for x in ratios) and
                   abs(r["aggregate"]["metrics"]["l3_miss_ratio"] - want) < 1e-4,
                   "%s L3: the miss ratio per socket and for the node is the profile's %.4f (%s)" % (
                       model, want, ratios))
            acc = r["aggregate"]["metrics"]["l3_access_rate"]
            # The core and L3 counters are read in separate round trips, whose windows differ by a
            # scheduling delay (up to 6 % of 0.3 s seen under load). The bound still tells a CCX's
            # whole count (0.01) from one counted per measured thread or per CCX twice (0.005, 0.02).
            tap.ok(abs(acc - 0.01) < 1e-3, "%s L3: a hundredth of the measured CCXs' instructions look up "
                   "their L3s (within 10 %%)" % model, acc)
            tap.eq([read_ctl(sim, 0, L3_CTL0), read_ctl(sim, 4, L3_CTL0 + 2)], [0, 0],
                   "%s L3: the CCXs' L3 control registers are restored after the measurement" % model)
        finally:
            sim.stop()


def test_mem_l3_job_scope(tap):
    d = t.workdir()
    conf = os.path.join(d, "pmugate.conf")
    with open(conf, "w") as f:
        f.write("[access]\nmode = job\nadmin_groups = %d\nuser_groups = %d\n" % (t.ADMIN_GID, t.USER_GID))
    sim = Sim("zen4", config=conf, sockets=1, cores=4, cores_per_ccx=2)
    try:
        t.run_cli([t.PMUGATECTL, "grant", "--job", "42", "--uid", str(USER), "--cpus", "0,4"], sim.daemon.socket)
        for group, events, what in (("MEM", "local_or_remote_socket_read_data_beats_dram", "data fabric"),
                                    ("L3", "l3_lookup_state.l3_miss", "L3")):
            rc, out, e = sim.run("stat", "-g", group, "-c", "0,4", "-S", "0.1s", uid=USER, gid=4999,
                                 groups=[t.USER_GID])
            tap.ok(rc == 0 and events in out + e and what in out + e and "lease" in out + e,
                   "job mode without the whole %s: %s is withheld naming the %s and the leases it needs" % (
                       "package" if group == "MEM" else "CCX", events, what), out + e)
        t.run_cli([t.PMUGATECTL, "grant", "--job", "42", "--uid", str(USER), "--cpus", "0-1,4-5"],
                  sim.daemon.socket)
        rc, out, e = sim.run("stat", "-g", "L3", "-c", "0,4", "-S", "0.1s", "-O", "json", uid=USER, gid=4999,
                             groups=[t.USER_GID])
        ok = rc == 0 and json.loads(out)["aggregate"]["metrics"]["l3_miss_ratio"] > 0
        tap.ok(ok, "a job holding the whole CCX counts its L3", out + e)
    finally:
        sim.stop()


def test_markers(tap):
    omp = os.path.join(t.BUILD, "client", "marker-omp")
    if not os.path.exists(omp):
        tap.ok(True, "TopDown per marked region on Zen 4 # SKIP the OpenMP example was not built (no OpenMP)")
        return
    env = {"OMP_NUM_THREADS": "2", "OMP_PROC_BIND": "true", "OMP_PLACES": "{0},{1}",
           "KMP_AFFINITY": "norespect"}  # for a clang build, see OMP in test_marker.py
    for model in ("zen4", "zen5"):
        sim = Sim(model, smt=False, rules=[("0", HPC), ("1-3", BRANCHY)])
        try:
            path = os.path.join(sim.dir, "report.json")
            rc, out, e = sim.run("topdown", "-m", "-l", "1", "-C", "0-1", "-O", "json", "-o", path, "--", omp, "4",
                                 "15", env=env)
            doc = json.load(open(path)) if rc == 0 and os.path.exists(path) else None
            tap.ok(doc is not None, "%s: topdown -m runs the marked program" % model, out + e)
            if not doc:
                continue
            # reading without stopping the counters shifts each one's window by microseconds
            for r in doc["regions"]:
                for th in r["threads"]:
                    # pmugate writes '%' metrics as percentages
                    fractions = {k: th["metrics"][k] / 100 for k in L1}
                    check(tap, model, fractions, HPC if th["cpu"] == 0 else BRANCHY, L1, 2e-3,
                          "region %s, thread on CPU %d" % (r["name"], th["cpu"]))
        finally:
            sim.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_discovery, test_masks_and_never_list, test_foreign_counters, test_perfmon_v2_gating,
                          test_ccx_and_package_leases, test_crash_restores_ccx_and_package, test_cli, test_job_scope_ccx, test_topdown, test_topdown_beside_watchdog,
                          test_groups, test_energy, test_mem, test_l3, test_mem_l3_job_scope,
                          test_markers]))
