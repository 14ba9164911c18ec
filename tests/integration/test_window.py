#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Rates from the counted window, not the client's clock: on the simulated PMU every "/s" metric
divides by the time the counters counted, taken from the TSC read in the same batch as the
counts (hello's tsc_hz turns ticks into seconds), and package and L3 events read in a round
trip of their own get their own window. FLOPS_DP on icx is the profile's rate within 0.1 % run
after run at -S 1 and -S 0.2, and AMD's L3 accesses per instruction are the profile's 0.01
within a relative 1e-4."""

import json
import os
import sys

import pmugatetest as t

Sim = t.Sim
STENCIL = t.STENCIL
# FP_ARITH_INST_RETIRED per unhalted cycle, as tests/integration/test_package_groups.py: scalar,
# 128-, 256- and 512-bit packed double (umasks 0x01, 0x04, 0x10, 0x40)
FP = {0x01: 0.10, 0x04: 0.20, 0x10: 0.30, 0x40: 0.25}
FLOPS_PROFILE = dict(STENCIL, **{"event.0xc7.0x%02x" % u: r for u, r in FP.items()})
DP_PER_CYCLE = FP[0x01] + 2 * FP[0x04] + 4 * FP[0x10] + 8 * FP[0x40]
ICX_MHZ = 2000
CPUS = 16
RUNS = 10
HPC = dict(retiring=0.35, bad_speculation=0.06, frontend_bound=0.14, backend_bound=0.37, smt_contention=0.08,
           heavy_operations=0.04, branch_mispredicts=0.04, fetch_latency=0.09, memory_bound=0.25,
           ipc=1.5, utilization=0.95, user_fraction=0.9)


def test_hello(tap):
    sim = Sim("icx", cores=2)
    try:
        rc, out, err = sim.run("info", "--json")
        got = json.loads(out).get("tsc_hz") if rc == 0 else err
        tap.eq(got, ICX_MHZ * 1000000, "hello reports the simulated TSC's rate, the model's nominal 2000 MHz")
    finally:
        sim.stop()


def test_hello_hardware(tap):
    # the dev backend on a fake machine: the kernel's tsc_freq_khz under --root, else unknown
    for text, want, what in (("2100000\n", 2100000000, "the kernel's tsc_freq_khz (2100000 kHz)"),
                             (None, None, "nil without the kernel's tsc_freq_khz"),
                             ("21000000000\n", None, "nil for a rate no TSC has"),
                             ("2100000 kHz\n", None, "nil for a file that is no number")):
        d = t.workdir()
        m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=2)
        path = os.path.join(m.root, "sys/devices/system/cpu/cpu0/tsc_freq_khz")
        if text is not None:
            with open(path, "w") as f:
                f.write(text)
        dm = t.Daemon(d, ["--root=" + m.root])
        try:
            c = t.Client(dm.socket)
            h = c.call("hello")
            c.close()
            tap.eq(h.get("tsc_hz", "absent"), want, "dev backend hello tsc_hz: " + what)
        finally:
            dm.stop()


def test_flops_rate(tap):
    # the profile's DP FLOPs per second of the 16 CPUs: per unhalted cycle x utilization x clock
    truth = DP_PER_CYCLE * STENCIL["utilization"] * ICX_MHZ * CPUS
    sim = Sim("icx", sockets=1, cores=8, smt=True, rules=[("0-15", FLOPS_PROFILE)])
    try:
        for seconds in ("1", "0.2"):
            errors = []
            clocks = set()
            for _ in range(RUNS):
                r = sim.json("stat", "-g", "FLOPS_DP", "-c", "0-%d" % (CPUS - 1), "-S", seconds, "-O", "json")
                errors.append(r["aggregate"]["metrics"]["dp_mflops"] / truth - 1)
                clocks.add(r.get("window_clock"))
            tap.ok(all(abs(e) < 1e-3 for e in errors),
                   "icx FLOPS_DP -S %s: %d runs within 0.1 %% of the profile's %.0f MFLOP/s (%+.4f%% .. %+.4f%%)"
                   % (seconds, RUNS, truth, 100 * min(errors), 100 * max(errors)))
            tap.eq(clocks, {"tsc"}, "icx FLOPS_DP -S %s: the window is timed by the TSC" % seconds)
    finally:
        sim.stop()


def test_flops_rate_perf(tap):
    # the perf path: the window is time_enabled of the same read. Its events count user space
    # only here (unhalted cycles are utilization x user_fraction of the clock), so the truth
    # carries the profile's user_fraction too.
    truth = DP_PER_CYCLE * STENCIL["utilization"] * STENCIL["user_fraction"] * ICX_MHZ * 4
    sim = Sim("icx", sockets=1, cores=4, smt=False, rules=[("0-3", FLOPS_PROFILE)])
    sim.daemon.stop()
    sim.daemon = t.Daemon(sim.dir, ["--backend=sim", "--sim-model=icx",
                                    "--sim-config=" + os.path.join(sim.dir, "sim.conf"), "--counters=perf"])
    try:
        errors, clocks = [], set()
        for _ in range(3):
            r = sim.json("stat", "-g", "FLOPS_DP", "-c", "0-3", "-S", "0.2", "-O", "json")
            errors.append(r["aggregate"]["metrics"]["dp_mflops"] / truth - 1)
            clocks.add(r.get("window_clock"))
        tap.ok(all(abs(e) < 1e-3 for e in errors) and clocks == {"perf"},
               "icx FLOPS_DP through perf -S 0.2: within 0.1 %% of the profile's rate, timed by time_enabled "
               "(%+.4f%% .. %+.4f%%, %s)" % (100 * min(errors), 100 * max(errors), clocks))
    finally:
        sim.stop()


def test_amd_l3(tap):
    for model in ("zen4", "zen5"):
        sim = Sim(model, sockets=2, cores=4, cores_per_ccx=2, rules=[("0-15", HPC)])
        try:
            got = []
            for seconds in ("0.3", "0.2"):
                r = sim.json("stat", "-g", "L3", "-c", "0-1,4-5,8-9,12-13", "-S", seconds, "-O", "json")
                got.append(r["aggregate"]["metrics"]["l3_access_rate"])
                got.extend(p["metrics"]["l3_access_rate"] for p in r["per_package"])
            # the L3 counters are read a round trip after the core counters: without their own
            # window the ratio was 1.8e-4 off at -S 0.3, 6e-4 at -S 0.1
            tap.ok(all(abs(x / 0.01 - 1) < 1e-4 for x in got),
                   "%s L3: accesses per instruction are the profile's 0.01 within 1e-4, node and sockets (%s)"
                   % (model, " ".join("%.7f" % x for x in got)))
        finally:
            sim.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_hello, test_hello_hardware, test_flops_rate, test_flops_rate_perf, test_amd_l3]))
