#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The unmodified likwid-perfctr on a node that counts via perf (pmugated --counters=perf on the
simulated PMU), where the daemon refuses register writes to the PMU: the forwarder translates
LIKWID's core PMU programming into perf events. BRANCH and FLOPS_DP on Skylake-SP, FLOPS_DP on
Cascade Lake and Ice Lake-SP, and TMA (PERF_METRICS) on Ice Lake-SP, give LIKWID's numbers of
the same groups run on the same profile through register writes (--counters=msr); programming
that has no perf equivalent (uncore boxes, AnyThread, kernel counting a user may not do) fails
the run with the register and the reason, never zeros with exit 0; root's kernel counting counts;
nothing is left open afterwards."""

import os
import sys

import likwidtest as lt
import pmugatetest as t
import test_likwid_perfctr as P

# The metrics compared per group: both runs count exact rates of the simulated clock, so they
# agree to LIKWID's printed decimals (P.RATIO), TopDown to the 8-bit PERF_METRICS fractions
# the perf path rebuilds from the kernel's metric events (1/255 = 0.4 points).
METRICS = {
    "BRANCH": [("CPI", P.RATIO), ("Branch rate", P.RATIO), ("Branch misprediction ratio", P.RATIO)],
    "FLOPS_DP": [("CPI", P.RATIO), ("Vectorization ratio", 0.01)],
    "TMA": [("CPI", P.RATIO)] + [(name, 0.4) for name in P.TOPDOWN],
}
RUNS = [("skx", "BRANCH"), ("skx", "FLOPS_DP"), ("clx", "FLOPS_DP"), ("icx", "FLOPS_DP"), ("icx", "TMA")]


def run(model, counters, group, extra=(), user=None, kernel_pmu=None):
    d, dm = P.sim_daemon(model, args=["--counters=" + counters], kernel_pmu=kernel_pmu)
    try:
        rc, out, err = lt.perfctr(d, dm.socket, model, ["-C", "0-1", "-g", group] + list(extra) + P.TIMED,
                                  user=user)
        c = t.Client(dm.socket)
        left = (c.call("status")["leases"], c.call("hello")["counting"]["via"])
        c.close()
        return rc, out, err, left
    finally:
        dm.stop()


def flops_per_uop(out):
    flops = lt.metric(out, "DP [MFLOP/s]") or 0
    muops = (lt.metric(out, "Packed [MUOPS/s]") or 0) + (lt.metric(out, "Scalar [MUOPS/s]") or 0)
    return flops / muops if muops else None


def test_same_as_msr(tap):
    for model, group in RUNS:
        rc, out, err, left = run(model, "perf", group)
        detail = "rc %d\n%s\n%s" % (rc, out[-1500:], err[-1500:])
        tap.ok(rc == 0 and left[1] == "perf" and "Group 1: " + group in out and "void" not in err,
               "%s %s via perf: likwid-perfctr runs to its results table and exits 0" % (model, group), detail)
        tap.eq(left[0], [], "%s %s via perf: no lease is left" % (model, group))
        mrc, mout, merr, mleft = run(model, "msr", group)
        tap.ok(mrc == 0 and mleft[1] == "msr", "%s %s via msr: the register run for comparison" % (model, group),
               "rc %d\n%s" % (mrc, merr[-1500:]))
        for cpu in (1, 2):
            for name, bound in METRICS[group]:
                got, want = lt.metric(out, name, cpu), lt.metric(mout, name, cpu)
                tap.ok(got is not None and want is not None and abs(got - want) <= bound * max(1.0, abs(want) *
                                                                                               (bound < 0.1)),
                       "%s %s HWThread %d: %s via perf %s = via msr %s" % (model, group, cpu - 1, name, got, want))
            if group == "FLOPS_DP":
                got, want = flops_per_uop(out), flops_per_uop(mout)
                tap.ok(got is not None and want is not None and abs(got - want) <= P.RATIO * want,
                       "%s FLOPS_DP: FLOPs per FP instruction via perf %s = via msr %s" % (model, got, want))
        if group == "TMA":
            for name, want in P.TOPDOWN.items():
                got = lt.metric(out, name)
                tap.ok(P.close(got, want, P.TMA_POINTS[model]),
                       "%s TMA via perf: %s %s = profile %.1f" % (model, name, got, want))


def test_memory_channels(tap):
    # Skylake-SP's memory bandwidth: LIKWID programs CAS_COUNT_RD and _WR on each channel's PCI
    # box; via perf they are the kernel's uncore_imc_N cas_count_read and _write
    for model in ("skx", "clx"):
        rc, out, err, left = run(model, "perf", "MEM", kernel_pmu=True)
        read, write = lt.metric(out, "Memory read bandwidth [MBytes/s]"), lt.metric(out, "Memory write bandwidth [MBytes/s]")
        detail = "rc %d\n%s\n%s" % (rc, out[-1500:], err[-1500:])
        tap.ok(rc == 0 and "void" not in err, "%s MEM via perf: runs to its table and exits 0" % model, detail)
        tap.ok(P.close(read, P.READ_GBPS * 1000, P.BANDWIDTH, relative=True),
               "%s MEM via perf: read bandwidth %s MB/s = simulated %d GB/s" % (model, read, P.READ_GBPS), detail)
        tap.ok(P.close(write, P.WRITE_GBPS * 1000, P.BANDWIDTH, relative=True),
               "%s MEM via perf: write bandwidth %s MB/s = simulated %d GB/s" % (model, write, P.WRITE_GBPS), detail)
        tap.eq(left[0], [], "%s MEM via perf: no lease is left" % model)


def test_refused(tap):
    # Without the kernel's uncore_imc counters there is nothing to count the channels with
    rc, out, err, left = run("skx", "perf", "MEM", kernel_pmu=False)
    tap.ok(rc != 0 and "counts are void" in err and "uncore_imc" in err and "via perf" in err,
           "skx MEM via perf without the kernel's uncore_imc: refused, the run fails saying which and why",
           "rc %d\n%s\n%s" % (rc, out[-1500:], err[-1500:]))
    tap.eq(left[0], [], "skx MEM via perf: no lease is left")
    # Kernel counting a user may not do (pmugate.conf user_count_kernel = no)
    rc, out, err, left = run("skx", "perf", "INSTR_RETIRED_ANY:FIXC0,CPU_CLK_UNHALTED_CORE:FIXC1,"
                             "BR_INST_RETIRED_ALL_BRANCHES:PMC0:KERNEL", user=P.USER)
    # LIKWID fails itself here ("Error starting counters"), so its exit status is the run's
    tap.ok(rc != 0 and "cannot be translated" in err and "user_count_kernel" in err,
           "skx via perf: a user's KERNEL option is refused with the daemon's reason, the run fails",
           "rc %d\n%s\n%s" % (rc, out[-1500:], err[-1500:]))
    # ... which root, an admin, may
    rc, out, err, left = run("skx", "perf", "INSTR_RETIRED_ANY:FIXC0,CPU_CLK_UNHALTED_CORE:FIXC1,"
                             "BR_INST_RETIRED_ALL_BRANCHES:PMC0:KERNEL")
    tap.ok(rc == 0 and (lt.metric(out, "BR_INST_RETIRED_ALL_BRANCHES", 2) or 0) > 0 and "void" not in err,
           "skx via perf: root's KERNEL option counts", "rc %d\n%s\n%s" % (rc, out[-1500:], err[-1500:]))
    # AnyThread on a general counter has no perf counting equivalent
    rc, out, err, left = run("skx", "perf", "INSTR_RETIRED_ANY:FIXC0,CPU_CLK_UNHALTED_CORE:FIXC1,"
                             "BR_INST_RETIRED_ALL_BRANCHES:PMC0:ANYTHREAD")
    tap.ok(rc != 0 and "cannot be translated" in err and "IA32_PERFEVTSEL0" in err and "ANY" in err,
           "skx via perf: ANYTHREAD is refused naming IA32_PERFEVTSEL0 and the bit, the run fails",
           "rc %d\n%s\n%s" % (rc, out[-1500:], err[-1500:]))


if __name__ == "__main__":
    why = lt.missing()
    if why:
        print("1..0 # SKIP %s" % why)
        sys.exit(0)
    if os.environ.get("PMUGATE_SANITIZED") == "1":
        print("1..0 # SKIP real LIKWID runs once, in the build without sanitizers")
        sys.exit(0)
    raise SystemExit(t.Tap().run([test_same_as_msr, test_memory_channels, test_refused]))
