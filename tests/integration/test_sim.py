#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The simulated PMU through the real daemon, socket and CLI: counting gates, overflow and
status, reset semantics, PERF_METRICS invariants, perf's L1 formulas on simulated counts for
skx, icx and spr, determinism, injected faults per op, RAPL and the Skylake-SP IMC, and the
[lbr] section of pmugate timing's simulated LBR."""

import os
import subprocess
import sys

import pmugatetest as t

PMC0, A_PMC0, EVTSEL0 = 0xC1, 0x4C1, 0x186
FIXED_CTR0, SLOTS, PERF_METRICS = 0x309, 0x30C, 0x329
FIXED_CTRL, GLOBAL_STATUS, GLOBAL_CTRL, STATUS_RESET, STATUS_SET = 0x38D, 0x38E, 0x38F, 0x390, 0x391
USR, OS, EN, EDGE = 1 << 16, 1 << 17, 1 << 22, 1 << 18
WIDTH48 = (1 << 48) - 1

PROFILE = {"retiring": 0.30, "bad_speculation": 0.10, "frontend_bound": 0.20, "backend_bound": 0.40,
           "heavy_operations": 0.05, "branch_mispredicts": 0.06, "fetch_latency": 0.12, "memory_bound": 0.25,
           "ipc": 1.6, "utilization": 1.0, "user_fraction": 0.9}


def evtsel(event, umask, cmask=0, edge=False, usr=True, os_=True):
    return event | umask << 8 | (USR if usr else 0) | (OS if os_ else 0) | (EDGE if edge else 0) | EN | cmask << 24


def sim_daemon(model, sockets=1, cores=2, smt=False, extra="", seed=7, cycles=1000000):
    d = t.workdir()
    conf = os.path.join(d, "sim.conf")
    with open(conf, "w") as f:
        f.write("[machine]\nsockets = %d\ncores = %d\nsmt = %s\n" % (sockets, cores, "yes" if smt else "no"))
        f.write("[clock]\nmode = deterministic\nseed = %d\ncycles_per_access = %d\n" % (seed, cycles))
        f.write("[profile test]\n" + "".join("%s = %s\n" % kv for kv in PROFILE.items()))
        f.write("[cpus 0-%d]\nprofile = test\n" % (sockets * cores * (2 if smt else 1) - 1))
        f.write(extra)
    return t.Daemon(d, ["--backend=sim", "--sim-model=" + model, "--sim-config=" + conf])


def values(c, ops):
    r = c.batch(ops)
    assert r["ok"] and all(s == 0 for s in r["status"]), r
    return r["values"]


def spin(c, n=40):
    """Each register access lets simulated time pass (deterministic clock)."""
    for _ in range(n):
        values(c, [["r", 0, FIXED_CTR0]])


def test_info_and_cli(tap):
    dm = sim_daemon("spr", sockets=2, cores=4, smt=True)
    try:
        rc, out, err = t.run_cli([t.PMUGATE, "info"], dm.socket)
        tap.ok(rc == 0 and "sim (simulated PMU)" in out and "Sapphire Rapids" in out and "0-15 (16 CPUs, 2 packages)"
               in out, "info names the model and says simulated", out + err)
        rc, out, err = t.run_cli([t.PMUGATE, "read", "-c", "0-1", "IA32_PERF_CAPABILITIES", "MSR_RAPL_POWER_UNIT"],
                                 dm.socket)
        tap.ok(rc == 0 and out.count("0x") == 8, "the CLI reads simulated registers", out + err)
    finally:
        dm.stop()


def test_counting_gates_and_overflow(tap):
    dm = sim_daemon("spr")
    try:
        c = t.Client(dm.socket)
        c.call("lease", cpus=[0])
        cycles = evtsel(0x3C, 0x00)
        values(c, [["w", 0, EVTSEL0, cycles], ["w", 0, PMC0, 0], ["wm", 0, GLOBAL_CTRL, 0, 1]])
        spin(c, 5)
        tap.eq(values(c, [["r", 0, PMC0]])[0], 0, "GLOBAL_CTRL off: the counter does not count")
        values(c, [["wm", 0, GLOBAL_CTRL, 1, 1]])
        spin(c, 5)
        a = values(c, [["r", 0, PMC0]])[0]
        tap.ok(a > 0, "GLOBAL_CTRL on and EN set: it counts (%d)" % a)
        values(c, [["w", 0, EVTSEL0, cycles & ~EN], ["w", 0, PMC0, 0]])
        spin(c, 5)
        tap.eq(values(c, [["r", 0, PMC0]])[0], 0, "EN clear: it does not count")

        counts = {}
        for ring, (usr, os_) in {"user": (True, False), "kernel": (False, True), "both": (True, True)}.items():
            values(c, [["w", 0, EVTSEL0, evtsel(0x3C, 0, usr=usr, os_=os_)], ["w", 0, PMC0, 0]])
            spin(c, 20)
            values(c, [["w", 0, EVTSEL0, 0]])
            counts[ring] = values(c, [["r", 0, PMC0]])[0]
        tap.ok(abs(counts["user"] / counts["both"] - PROFILE["user_fraction"]) < 0.02 and
               abs((counts["user"] + counts["kernel"]) / counts["both"] - 1) < 0.02,
               "the USR and OS bits split counting by the profile's user fraction", counts)

        values(c, [["w", 0, PMC0 + 1, 0x80000000]])
        tap.eq(values(c, [["r", 0, PMC0 + 1]])[0], 0xFFFF80000000, "a legacy PMC write sign-extends bit 31 to 48 bits")
        values(c, [["w", 0, A_PMC0 + 1, 1 << 47]])
        tap.eq(values(c, [["r", 0, PMC0 + 1]])[0], 1 << 47, "the full-width alias takes the value as it is")

        values(c, [["w", 0, EVTSEL0, cycles], ["w", 0, A_PMC0, WIDTH48 - 1000]])
        spin(c, 3)
        pmc, status = values(c, [["r", 0, PMC0], ["r", 0, GLOBAL_STATUS]])
        tap.ok(pmc < 1 << 40 and status & 1, "the 48-bit counter wraps and sets its GLOBAL_STATUS bit",
               (hex(pmc), hex(status)))
        values(c, [["w", 0, STATUS_RESET, 1]])
        tap.eq(values(c, [["r", 0, GLOBAL_STATUS]])[0] & 1, 0, "STATUS_RESET clears it")
        values(c, [["w", 0, STATUS_SET, 2]])
        tap.eq(values(c, [["r", 0, GLOBAL_STATUS]])[0] & 3, 2, "STATUS_SET sets a bit")
        inuse = values(c, [["r", 0, 0x392]])[0]
        tap.ok(inuse & 1, "GLOBAL_INUSE shows the programmed event select", hex(inuse))
    finally:
        dm.stop()


def program_perf_metrics(c, cpu, extra_evtsels):
    """FIXED_CTR_CTRL for CLK (1) and SLOTS (3); SLOTS before PERF_METRICS when zeroing."""
    ops = [["wm", cpu, GLOBAL_CTRL, 0, (1 << 49) - 1],
           ["wm", cpu, FIXED_CTRL, 0x3030, 0xF0F0], ["w", cpu, FIXED_CTR0 + 1, 0],
           ["w", cpu, SLOTS, 0], ["w", cpu, PERF_METRICS, 0]]
    enable = (1 << 33) | (1 << 35) | (1 << 48)
    for i, sel in enumerate(extra_evtsels):
        ops += [["w", cpu, EVTSEL0 + i, sel], ["w", cpu, PMC0 + i, 0]]
        enable |= 1 << i
    ops.append(["wm", cpu, GLOBAL_CTRL, enable, enable])
    values(c, ops)


def metrics_bytes(pm):
    return [(pm >> (8 * i)) & 0xFF for i in range(8)]


def test_perf_metrics(tap):
    for model, uop_dropping in (("icx", (0x0D, 0x10)), ("spr", (0xAD, 0x10))):
        dm = sim_daemon(model)
        try:
            c = t.Client(dm.socket)
            c.call("lease", cpus=[0])
            sels = [evtsel(*uop_dropping)]
            if model == "icx":
                sels.append(evtsel(0x0D, 0x01, cmask=1, edge=True))    # INT_MISC.CLEARS_COUNT
            program_perf_metrics(c, 0, sels)
            spin(c, 60)
            # Freeze first: every access moves the deterministic clock, and reading running
            # counters one after the other would skew them against each other.
            values(c, [["wm", 0, GLOBAL_CTRL, 0, (1 << 49) - 1]])
            slots, pm, *gp = values(c, [["r", 0, SLOTS], ["r", 0, PERF_METRICS]] + [["r", 0, PMC0 + i]
                                                                                  for i in range(len(sels))])
            b = metrics_bytes(pm)
            tap.ok(slots > 0 and pm != 0, "%s: SLOTS and PERF_METRICS count" % model, (slots, hex(pm)))
            tap.eq(sum(b[:4]), 0xFF, "%s: the four L1 bytes sum to 0xff" % model)
            if model == "spr":
                tap.ok(b[4] <= b[0] and b[5] <= b[1] and b[6] <= b[2] and b[7] <= b[3],
                       "spr: each L2 byte stays within its L1 parent", b)
            else:
                tap.eq(b[4:], [0, 0, 0, 0], "icx: bytes 4-7 read 0")

            # perf's L1 formulas (tma-formulas.md 3.2/3.3) on the simulated counts.
            sum4 = sum(b[:4])
            ret = b[0] / sum4
            fe = b[2] / sum4 - gp[0] / slots
            be = b[3] / sum4 + (5 * gp[1] / slots if model == "icx" else 0)
            bad = max(1 - (fe + be + ret), 0)
            got = {"retiring": ret, "bad_speculation": bad, "frontend_bound": fe, "backend_bound": be}
            bound = 2 / 255 + 1e-6
            worst = max(abs(got[k] - PROFILE[k]) for k in got)
            tap.ok(worst <= bound, "%s: perf's L1 formulas give the profile back within 2/255 (worst %.4f)"
                   % (model, worst), got)

            values(c, [["wm", 0, GLOBAL_CTRL, 0, (1 << 49) - 1], ["w", 0, SLOTS, 0], ["w", 0, PERF_METRICS, 0]])
            tap.eq(values(c, [["r", 0, SLOTS], ["r", 0, PERF_METRICS]]), [0, 0],
                   "%s: writing 0 to SLOTS and PERF_METRICS resets them" % model)
        finally:
            dm.stop()


def test_skx_generic_counters(tap):
    dm = sim_daemon("skx", cores=2, smt=False)
    try:
        c = t.Client(dm.socket)
        c.call("lease", cpus=[0])
        sels = [evtsel(0x0E, 0x01), evtsel(0xC2, 0x02), evtsel(0x9C, 0x01), evtsel(0x0D, 0x01)]
        ops = [["wm", 0, GLOBAL_CTRL, 0, 0x7000000FF], ["wm", 0, FIXED_CTRL, 0x30, 0xF0], ["w", 0, FIXED_CTR0 + 1, 0]]
        for i, sel in enumerate(sels):
            ops += [["w", 0, EVTSEL0 + i, sel], ["w", 0, PMC0 + i, 0]]
        ops.append(["wm", 0, GLOBAL_CTRL, 0x20000000F, 0x20000000F])
        values(c, ops)
        spin(c, 60)
        values(c, [["wm", 0, GLOBAL_CTRL, 0, 0x7000000FF]])
        issued, retired, idq, recovery, clks = values(c, [["r", 0, PMC0 + i] for i in range(4)] +
                                                      [["r", 0, FIXED_CTR0 + 1]])
        slots = 4 * clks
        got = {"frontend_bound": idq / slots, "bad_speculation": (issued - retired + 4 * recovery) / slots,
               "retiring": retired / slots}
        got["backend_bound"] = 1 - got["frontend_bound"] - (issued + 4 * recovery) / slots
        worst = max(abs(got[k] - PROFILE[k]) for k in got)
        tap.ok(worst < 1e-6, "skx (SMT off): perf's generic-counter L1 formulas give the profile back (worst %.2g)"
               % worst, got)
    finally:
        dm.stop()


def run_sequence(seed):
    dm = sim_daemon("spr", seed=seed)
    try:
        c = t.Client(dm.socket)
        c.call("lease", cpus=[0, 1])
        program_perf_metrics(c, 0, [evtsel(0x3C, 0), evtsel(0xC0, 0)])
        spin(c, 25)
        return values(c, [["R", [0, 1], [SLOTS, PERF_METRICS, PMC0, PMC0 + 1, FIXED_CTR0 + 1, 0x10, 0x611]]])
    finally:
        dm.stop()


def test_determinism(tap):
    a, b = run_sequence(7), run_sequence(7)
    tap.eq(a, b, "same seed, same sequence of requests: identical counts")
    tap.ok(any(a), "and the counts are not all zero", a)


def test_faults(tap):
    extra = "[inject]\noffline_cpus = 3\neio_msr = 0x189\neio_cpus = 1\nnmi_watchdog = no\n"
    dm = sim_daemon("clx", cores=4, smt=False, extra=extra)
    try:
        c = t.Client(dm.socket)
        h = c.call("hello")
        tap.eq([cpu[5] for cpu in h["cpus"]], [True, True, True, False], "the injected offline CPU is listed offline")
        r = c.batch([["r", 0, EVTSEL0 + 3], ["r", 1, EVTSEL0 + 3], ["r", 1, EVTSEL0 + 2], ["r", 3, PMC0],
                     ["r", 2, PMC0]])
        tap.eq(r["status"], [0, -5, 0, -6, 0], "EIO and ENXIO are reported per op; the rest of the batch succeeds")
        rc, out, err = t.run_cli([t.PMUGATE, "read", "-c", "0-3", "IA32_PERFEVTSEL3"], dm.socket)
        tap.ok(rc == 1 and "Input/output error" in out and "No such device or address" in out and
               out.count("0x0000") == 2, "the CLI shows each CPU's own result", out + err)
    finally:
        dm.stop()


def test_rapl_and_imc(tap):
    # without the kernel's uncore PMUs: where the kernel programs the channels they are not a
    # client's (test_kernel_uncore.py)
    extra = "[rapl]\npackage_watts = 150\n[imc]\nread_gbps = 12\nwrite_gbps = 4\nkernel_pmu = no\n"
    dm = sim_daemon("skx", sockets=2, cores=2, smt=False, extra=extra)
    try:
        c = t.Client(dm.socket)
        unit, e0 = values(c, [["r", 0, 0x606], ["r", 0, 0x611]])
        spin(c, 40)
        e1, e_other = values(c, [["r", 1, 0x611], ["r", 2, 0x611]])
        joules = ((e1 - e0) % (1 << 32)) * 2.0 ** -((unit >> 8) & 0x1F)
        tap.ok(unit == 0xA0E03 and e1 != e0, "RAPL energy counts in the units of MSR 0x606 (%.3f J)" % joules)

        units = c.call("hello")["units"]
        tap.eq(len(units), 12, "six IMC channels per socket are served")
        c.call("lease", cpus=[0, 1])
        u = units[0][0]
        r = c.batch([["pw", u, 0xF4, 0x3], ["pw", u, 0xD8, 0x400304], ["pw", u, 0xDC, 0x400C04]])
        tap.ok(r["ok"], "CAS_COUNT.RD and .WR are programmed on IMC unit 0 (leases on all of package 0)", r)
        spin(c, 40)
        rd, wr = values(c, [["pr", u, 0xA0], ["pr", u, 0xA8]])
        tap.ok(rd > 0 and wr > 0 and 2.0 < rd / wr < 4.0, "CAS reads and writes count at the configured 3:1 ratio",
               (rd, wr))
        values(c, [["pw", u, 0xF4, 0x100]])
        frozen = values(c, [["pr", u, 0xA0]])[0]
        spin(c, 10)
        tap.eq(values(c, [["pr", u, 0xA0]])[0], frozen, "BOX_CTL freeze stops the box's counters")
        values(c, [["pw", u, 0xF4, 0x2]])
        tap.ok(values(c, [["pr", u, 0xA0]])[0] < frozen, "BOX_CTL reset clears them")
        values(c, [["pw", u, 0xF4, 0x0]])
        spin(c, 10)
        tap.ok(values(c, [["pr", u, 0xA0]])[0] > 0, "they count again")
        c.call("release")
        tap.eq(values(c, [["pr", u, 0xD8], ["pr", u, 0xA0], ["pr", u, 0xA8]]), [0, 0, 0],
               "when the lease ends, the box's controls are restored and its counts zeroed")
    finally:
        dm.stop()


def test_lease_end_clears_started_counters(tap):
    """A job that only enables counters (never writes them) must not leave its counts behind."""
    dm = sim_daemon("spr", cycles=100000)
    try:
        c = t.Client(dm.socket)
        c.call("lease", cpus=[1])
        values(c, [["w", 1, EVTSEL0, evtsel(0x3C, 0)], ["wm", 1, FIXED_CTRL, 0x3333, 0xFFFF],
                   ["wm", 1, GLOBAL_CTRL, (1 << 48) | (0xF << 32) | 1, (1 << 48) | (0xF << 32) | 1]])
        spin(c, 20)
        counts = values(c, [["r", 1, PMC0], ["r", 1, FIXED_CTR0], ["r", 1, FIXED_CTR0 + 1], ["r", 1, SLOTS],
                            ["r", 1, PERF_METRICS]])
        tap.ok(all(counts), "the job's counters count without ever being written", counts)
        c.call("release")
        after = values(c, [["r", 1, PMC0], ["r", 1, FIXED_CTR0], ["r", 1, FIXED_CTR0 + 1], ["r", 1, SLOTS],
                           ["r", 1, PERF_METRICS], ["r", 1, EVTSEL0], ["r", 1, FIXED_CTRL]])
        spin(c, 5)
        later = values(c, [["r", 1, PMC0], ["r", 1, FIXED_CTR0]])
        tap.eq(after, [0] * 7, "release stops them and zeroes every counter the job started")
        tap.eq(later, [0, 0], "and they stay stopped")
        c.close()

        c = t.Client(dm.socket)
        c.call("lease", cpus=[0])
        values(c, [["w", 0, EVTSEL0 + 1, evtsel(0xC0, 0)], ["wm", 0, GLOBAL_CTRL, 2, 2]])
        spin(c, 5)
        dm.proc.kill()
        dm.wait_exit()
        dm2 = t.Daemon(dm.workdir, dm.argv[dm.argv.index("--backend=sim"):], config=dm.argv[2].split("=", 1)[1])
        try:
            tap.ok("Restored" in dm2.log(), "a restarted daemon applies the journal of a started counter", dm2.log())
        finally:
            dm2.stop()
    finally:
        dm.stop()


def test_lbr_section(tap):
    """A daemon whose simulated CPU has an LBR ([lbr]) starts and serves as before; a bad [lbr]
    stops it at start with the file, the line and the reason."""
    binary = os.path.realpath(sys.executable)
    lbr = ("[lbr]\nmap = 0x555555555000 0x1000 0x1000\nbinary = %s\n"
           "branch = 0x555555555189 0x555555555170 32:2@0.7 300:30@0.3\n"
           "branch = 0x5555555551a0 0x555555555190 10:1\n" % binary)
    dm = sim_daemon("spr", extra=lbr)
    try:
        rc, out, err = t.run_cli([t.PMUGATE, "info"], dm.socket)
        tap.ok(rc == 0 and "sim (simulated PMU)" in out, "a configuration with [lbr] starts the daemon", out + err)
        c = t.Client(dm.socket)
        c.call("lease", cpus=[0])
        values(c, [["w", 0, EVTSEL0, evtsel(0xC0, 0)], ["wm", 0, GLOBAL_CTRL, 1, 1]])
        spin(c, 5)
        tap.ok(values(c, [["r", 0, PMC0]])[0] > 0, "and the simulated PMU counts as before")
        c.close()
    finally:
        dm.stop()
    d = t.workdir()
    conf = os.path.join(d, "sim.conf")
    for body, line, reason in [
            ("branch = 0x555555555189 0x555555555170 32:2@0.7 300:30@0.2\n", 4, "the weights sum to 0.9, not 1"),
            ("branch = 0x555555555189 0x555555557000 32:2\n", 4, "lies outside the map"),
            ("binary = relative/path\n", 3, "binary = 'relative/path'"),
            ("", 1, "[lbr] has no branch")]:
        with open(conf, "w") as f:
            f.write(lbr.split("branch =")[0].replace("binary = %s\n" % binary, "") if "binary" in body else
                    lbr.split("branch =")[0])
            f.write(body)
        p = subprocess.run([t.PMUGATED, "--backend=sim", "--sim-model=spr", "--sim-config=" + conf],
                           capture_output=True, text=True, timeout=10)
        tap.ok(p.returncode != 0 and ("sim.conf:%d: " % line) in p.stderr and reason in p.stderr,
               "a bad [lbr] is refused at start: line %d, %s" % (line, reason), p.stderr)


sys.exit(t.Tap().run([test_lbr_section, test_lease_end_clears_started_counters, test_info_and_cli, test_counting_gates_and_overflow, test_perf_metrics,
                      test_skx_generic_counters, test_determinism, test_faults, test_rapl_and_imc]))
