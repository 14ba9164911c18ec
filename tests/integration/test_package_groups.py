#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Package events through the daemon and `pmugate stat` on the simulator: memory bandwidth per
socket and for the node on every model (MEM), energy and power (ENERGY) with the RAPL units of
each model, FLOPS rates against the profile (FLOPS_DP, FLOPS_SP, MEM_DP), 32-bit RAPL and 48-bit
memory-controller counters wrapping during a run without a jump, every shipped group on every
model, multiplexing with its scale, and job mode without the whole package."""

import os
import sys

import pmugatetest as t
from pmugatetest import Sim, STENCIL

MODELS = ("skx", "clx", "icx", "spr")
# models with Sapphire Rapids' RAPL domains (perf's rapl.c: model_spr): psys, no PP0, DRAM in the ESU
SPR_RAPL = ("spr", "emr", "gnr", "srf")
READ_GBPS, WRITE_GBPS = 40.0, 15.0
WATTS = {"package_watts": 180.0, "dram_watts": 25.0, "pp0_watts": 140.0, "platform_watts": 420.0}
IMC = "[imc]\nread_gbps = %g\nwrite_gbps = %g\n" % (READ_GBPS, WRITE_GBPS)
RAPL = "[rapl]\n" + "".join("%s = %g\n" % kv for kv in WATTS.items())
GROUPS = ("MEM", "FLOPS_DP", "FLOPS_SP", "FLOPS_AVX", "MEM_DP", "MEM_SP", "L2", "L3", "BRANCH", "CLOCK",
          "DATA", "TLB_DATA", "ENERGY", "ipc", "topdown-l1", "topdown-l2")
# FP_ARITH_INST_RETIRED per unhalted cycle (event 0xc7; umasks: scalar double 0x01, single 0x02,
# 128-bit double 0x04, single 0x08, 256-bit double 0x10, single 0x20, 512-bit double 0x40,
# single 0x80)
FP = {0x01: 0.10, 0x02: 0.05, 0x04: 0.20, 0x08: 0.03, 0x10: 0.30, 0x20: 0.07, 0x40: 0.25, 0x80: 0.02}
FLOPS_PROFILE = dict(STENCIL, **{"event.0xc7.0x%02x" % u: r for u, r in FP.items()})
DP_PER_CYCLE = FP[0x01] + 2 * FP[0x04] + 4 * FP[0x10] + 8 * FP[0x40]
SP_PER_CYCLE = FP[0x02] + 4 * FP[0x08] + 8 * FP[0x20] + 16 * FP[0x80]
ESU = {"default": 14}


def rel(a, b):
    return abs(a / b - 1)


def per_package(doc):
    return {p["package"]: p for p in doc["per_package"]}


def test_memory_bandwidth(tap):
    for model in MODELS:
        sim = Sim(model, sockets=2, cores=2, extra=IMC)
        try:
            r = sim.json("stat", "-g", "MEM", "-c", "0-3", "-S", "0.5s", "-O", "json")
            pk = per_package(r)
            tap.eq(sorted(pk), [0, 1], "%s: MEM reports both sockets of the measured CPUs" % model)
            for p in (0, 1):
                m = pk[p]["metrics"]
                got = (m["mem_read_bandwidth"] / 1e3, m["mem_write_bandwidth"] / 1e3)
                tap.ok(rel(got[0], READ_GBPS) < 0.01 and rel(got[1], WRITE_GBPS) < 0.01,
                       "%s: socket %d read %.3f and write %.3f GB/s within 1 %% of the configured %g and %g" % (
                           model, p, got[0], got[1], READ_GBPS, WRITE_GBPS))
            node = r["aggregate"]["metrics"]
            tap.ok(rel(node["mem_bandwidth"] / 1e3, 2 * (READ_GBPS + WRITE_GBPS)) < 0.01,
                   "%s: the node's bandwidth is both sockets' (%.1f GB/s)" % (model, node["mem_bandwidth"] / 1e3))
            tap.ok(all(c["counts"]["UNC_M_CAS_COUNT.RD"]["value"] is None for c in r["per_cpu"]),
                   "%s: per-CPU rows carry no package event" % model)
            tap.eq(r["withheld"], "", "%s: nothing is withheld from the admin" % model)
        finally:
            sim.stop()


def test_energy(tap):
    for model in MODELS:
        sim = Sim(model, sockets=2, cores=2, extra=RAPL)
        try:
            rc, out, err = sim.run("stat", "-g", "ENERGY", "-c", "0-3", "-I", "200ms", "-S", "1s", "-O", "jsonl")
            tap.ok(rc == 0, "%s: ENERGY in intervals runs" % model, err)
            docs = [__import__("json").loads(line) for line in out.splitlines() if line.strip()]
            other = "platform" if model in SPR_RAPL else "pp0"
            worst_unit, worst_power = 0.0, 0.0
            for d in docs:
                for p in d["per_package"]:
                    for dom, event, watts in (("package", "PWR_PKG_ENERGY", WATTS["package_watts"]),
                                              ("dram", "PWR_DRAM_ENERGY", WATTS["dram_watts"]),
                                              (other, "PWR_%s_ENERGY" % other.upper(), WATTS[other + "_watts"])):
                        # joules per count: the ESU (14) except skx/clx/icx DRAM (2^-16 J) and spr
                        # platform (1 J)
                        unit = 1.0 if dom == "platform" else 2.0 ** -(16 if dom == "dram" and model not in SPR_RAPL else 14)
                        c = p["counts"][event]
                        worst_unit = max(worst_unit, abs(c["value"] - c["raw"] * unit) / unit)
                        joules = p["metrics"]["energy_" + dom]
                        if dom != "platform":
                            worst_power = max(worst_power, rel(joules / d["elapsed"], watts))
            tap.ok(len(docs) >= 4, "%s: %d intervals" % (model, len(docs)))
            tap.ok(worst_unit <= 1.0, "%s: every sample's joules are its raw RAPL counts in the model's units, "
                   "within one unit (worst %.3g units)" % (model, worst_unit))
            # An interval's watts divide the simulator's joules by the client's clock, and the two are
            # read a scheduling delay apart: under load that is milliseconds of a 200 ms interval. The
            # energy itself is checked exactly above, and over the whole run within 1 % below.
            tap.ok(worst_power < 0.05, "%s: package, DRAM and %s power within 5 %% of the configured watts in "
                   "every interval (worst %.2e)" % (model, other, worst_power))
            total = {}
            for d in docs:
                for p in d["per_package"]:
                    total[p["package"]] = total.get(p["package"], 0.0) + p["metrics"]["energy_package"]
            elapsed = sum(d["elapsed"] for d in docs)
            tap.ok(all(rel(j / elapsed, WATTS["package_watts"]) < 0.01 for j in total.values()),
                   "%s: package power over the whole run within 1 %% of the configured watts" % model)
            r = sim.json("stat", "-g", "ENERGY", "-c", "0-3", "-S", "0.5s", "-O", "json")
            pk = per_package(r)
            tap.ok(rel(r["aggregate"]["metrics"]["power_package"],
                       pk[0]["metrics"]["power_package"] + pk[1]["metrics"]["power_package"]) < 1e-9,
                   "%s: the node's power is the sockets' sum" % model)
        finally:
            sim.stop()


def test_flops(tap):
    for model in MODELS:
        sim = Sim(model, sockets=1, cores=4, rules=[("0-7", FLOPS_PROFILE)], extra=IMC)
        try:
            for group, per_cycle, metric in (("FLOPS_DP", DP_PER_CYCLE, "dp_mflops"),
                                             ("FLOPS_SP", SP_PER_CYCLE, "sp_mflops"),
                                             ("MEM_DP", DP_PER_CYCLE, "dp_mflops")):
                r = sim.json("stat", "-g", group, "-c", "0-3", "-S", "0.3s", "-O", "json")
                agg = r["aggregate"]
                cycles = agg["counts"]["CPU_CLK_UNHALTED.THREAD"]["value"]
                got = agg["metrics"][metric] * 1e6 * r["window"] / cycles
                tap.ok(rel(got, per_cycle) < 1e-6, "%s %s: flops per cycle %.6f = the profile's %.6f" % (
                    model, group, got, per_cycle))
            m = r["aggregate"]["metrics"]
            oi = agg["metrics"]["dp_mflops"] * 1e6 / (m["mem_bandwidth"] * 1e6)
            tap.ok(rel(m["operational_intensity"], oi) < 1e-9,
                   "%s MEM_DP: operational intensity is flops over memory bytes (%.4f)" % (model, oi))
        finally:
            sim.stop()


def test_wraps(tap):
    # RAPL counts in 2^-24 J: the 32-bit counter wraps every 256 J, every 1.4 s at 180 W; the
    # memory controller counters start 1 s of traffic before their 48-bit end.
    lines_per_second = READ_GBPS * 1e9 / 64 / 4
    start = (1 << 48) - int(lines_per_second)
    extra = IMC + "counter_start = %d\n" % start + RAPL + "energy_unit = 24\nenergy_start = %d\n" % (
        (1 << 32) - 180 * (1 << 24) // 2)
    for model in ("skx", "icx"):
        sim = Sim(model, sockets=1, cores=2, extra=extra)
        try:
            c = t.Client(sim.daemon.socket)
            first = c.batch([["r", 0, 0x611], ["cr", 0]])["values"]
            c.close()
            tap.ok(first[0] > (1 << 32) - 180 * (1 << 24) and first[1] > start,
                   "%s: the energy counter starts within a second of its 32-bit end, the memory counters within "
                   "a second of their 48-bit end (0x%x, 0x%x)" % (model, first[0], first[1]))
            rc, out, err = sim.run("stat", "-g", "MEM", "-e", "PWR_PKG_ENERGY", "-c", "0-1", "-I", "250ms",
                                   "-S", "3.5s", "-O", "jsonl", timeout=60)
            docs = [__import__("json").loads(line) for line in out.splitlines() if line.strip()]
            tap.ok(rc == 0 and len(docs) >= 12, "%s: a 3.5 s run in 250 ms intervals" % model, err)
            # A wrap taken for a jump would add 2^48 lines or 2^32 counts (256 J) to one interval:
            # thousands of times the rate. Intervals follow the client's clock, so each may be off
            # by scheduling delays on a loaded machine; together they must add up exactly.
            lines = [d["per_package"][0]["counts"]["UNC_M_CAS_COUNT.RD"]["value"] for d in docs]
            joules = [d["per_package"][0]["counts"]["PWR_PKG_ENERGY"]["value"] for d in docs]
            elapsed = [d["elapsed"] for d in docs]
            bw = [n * 64 / e / 1e9 for n, e in zip(lines, elapsed)]
            watts = [j / e for j, e in zip(joules, elapsed)]
            tap.ok(max(rel(b, READ_GBPS) for b in bw) < 0.25 and rel(sum(lines) * 64 / sum(elapsed) / 1e9, READ_GBPS)
                   < 0.01, "%s: no jump in read bandwidth across the 48-bit wrap (intervals %.2f-%.2f GB/s, all of "
                   "them %.3f)" % (model, min(bw), max(bw), sum(lines) * 64 / sum(elapsed) / 1e9))
            tap.ok(max(rel(w, 180.0) for w in watts) < 0.25 and rel(sum(joules) / sum(elapsed), 180.0) < 0.01,
                   "%s: no jump in package power across two 32-bit wraps (intervals %.1f-%.1f W, all of them %.2f)"
                   % (model, min(watts), max(watts), sum(joules) / sum(elapsed)))
        finally:
            sim.stop()


def test_every_group(tap):
    for model in MODELS:
        sim = Sim(model, sockets=2, cores=2, smt=True, rules=[("0-7", FLOPS_PROFILE)], extra=IMC + RAPL)
        try:
            for g in GROUPS:
                rc, out, err = sim.run("stat", "-g", g, "-c", "0-3", "-S", "0.05s", "-O", "json")
                tap.ok(rc == 0, "%s: group %s loads and measures" % (model, g), err)
            rc, out, err = sim.run("stat", "-g", "MEM_DP", "-c", "0-1", "-S", "0.1s")
            tap.ok(rc == 0 and "socket0" in out and "Operational intensity" in out,
                   "%s: the table shows a column per socket beside the node" % model, out + err)
            rc, out, err = sim.run("stat", "-g", "ENERGY", "-c", "0", "-S", "0.1s", "-O", "csv")
            tap.ok(rc == 0 and ",socket0,count,PWR_PKG_ENERGY," in out and ",all,metric,power_package," in out,
                   "%s: CSV has socket rows and node rows" % model, out)
        finally:
            sim.stop()
    # more events than Skylake-SP's four counters per thread with SMT on: multiplexed, scaled
    sim = Sim("skx", sockets=1, cores=2, smt=True, rules=[("0-3", FLOPS_PROFILE)], extra=IMC)
    try:
        r = sim.json("stat", "-g", "MEM_DP", "-e", "BR_MISP_RETIRED.ALL_BRANCHES", "-c", "0-1", "-S", "1s", "-O",
                     "json")
        tap.eq(r["event_sets"], 2, "skx MEM_DP plus one event on 4 counters: two event sets")
        scale = r["aggregate"]["counts"]["FP_ARITH_INST_RETIRED.SCALAR_DOUBLE"]["scale"]
        tap.ok(1.3 < scale < 3.5, "the scale of multiplexed events is reported (%.2f)" % scale)
        got = r["aggregate"]["metrics"]["dp_mflops"] * 1e6 * r["window"] / \
            r["aggregate"]["counts"]["CPU_CLK_UNHALTED.THREAD"]["value"]
        tap.ok(rel(got, DP_PER_CYCLE) < 1e-3, "scaled flops per cycle still match the profile (%.5f)" % got)
    finally:
        sim.stop()


def test_package_only(tap):
    """Package events alone program no core counter, so a user who may only read measures them."""
    user = t.UNPRIVILEGED_UID
    sim = Sim("spr", sockets=2, cores=2, smt=False, extra=IMC + RAPL)
    sim.daemon.stop()
    conf = os.path.join(sim.dir, "read-only.conf")
    # A read-only user cannot lease the packages whose energy it reads: the site opts in.
    t.write_config(conf, extra="[rights]\nuser_write =\nenergy_read_shared = yes\n")
    sim.daemon = t.Daemon(sim.dir, sim.daemon.argv[-3:], config=conf)
    try:
        rc, out, err = t.run_cli([t.PMUGATE, "stat", "-e", "PWR_PKG_ENERGY,UNC_M_CAS_COUNT.RD", "-c", "0-3", "-S",
                                  "1s", "-O", "json"], sim.daemon.socket, uid=user, gid=4999, groups=[t.USER_GID])
        r = __import__("json").loads(out) if rc == 0 else {"per_package": []}
        pk = per_package(r)
        tap.ok(rc == 0 and sorted(pk) == [0, 1], "a read-only user measures energy and memory traffic", err)
        # within 2 %: without core counters the window is the client's clock around two round trips,
        # which a loaded machine may delay by a few milliseconds
        watts = [p["counts"]["PWR_PKG_ENERGY"]["value"] / r["elapsed"] for p in pk.values()]
        gbps = [p["counts"]["UNC_M_CAS_COUNT.RD"]["value"] * 64 / r["elapsed"] / 1e9 for p in pk.values()]
        tap.ok(watts and all(rel(w, 180.0) < 0.02 for w in watts), "180 W per socket (%s)" % watts)
        tap.ok(gbps and all(rel(g, READ_GBPS) < 0.02 for g in gbps), "40 GB/s read per socket (%s)" % gbps)
        rc, out, err = t.run_cli([t.PMUGATE, "stat", "-e", "PWR_PKG_ENERGY,INST_RETIRED.ANY", "-c", "0", "-S",
                                  "0.1s"], sim.daemon.socket, uid=user, gid=4999, groups=[t.USER_GID])
        tap.ok(rc != 0 and "Permission denied" in err,
               "with a core event the read-only user is refused, as before", out + err)
    finally:
        sim.stop()


def test_imc_pci(tap):
    """Without the kernel's uncore PMUs, Skylake-SP and Cascade Lake memory traffic comes from the
    IMC channels in PCI config space: programmed under leases on the whole package, put back
    by the daemon when the measurement ends."""
    nopmu = IMC + "kernel_pmu = no\n"
    for model in ("skx", "clx"):
        sim = Sim(model, sockets=2, cores=2, extra=nopmu)
        try:
            c = t.Client(sim.daemon.socket)
            tap.eq(c.call("hello")["counters"], [], "%s: the daemon serves no package counter" % model)
            r = sim.json("stat", "-g", "MEM", "-c", "0-3", "-S", "0.5s", "-O", "json")
            pk = per_package(r)
            for p in (0, 1):
                m = pk[p]["metrics"]
                got = (m["mem_read_bandwidth"] / 1e3, m["mem_write_bandwidth"] / 1e3)
                tap.ok(rel(got[0], READ_GBPS) < 0.01 and rel(got[1], WRITE_GBPS) < 0.01,
                       "%s: socket %d read %.3f and write %.3f GB/s from the IMC PCI units" % (model, p, *got))
            units = len(c.call("hello")["units"])
            regs = c.batch([["pr", u, off] for u in range(units) for off in (0xD8, 0xDC, 0xA0, 0xA8)])["values"]
            tap.ok(units == 12 and not any(regs), "%s: afterwards every channel's controls and counters are back "
                   "to 0 (the daemon restored what the leases wrote)" % model)
            c.close()
        finally:
            sim.stop()

    sim = Sim("icx", sockets=1, cores=2, extra=nopmu)
    try:
        r = sim.json("stat", "-g", "MEM", "-c", "0-1", "-S", "0.1s", "-O", "json")
        tap.ok("serves no memory-controller counter of package 0" in r["withheld"] and
               r["aggregate"]["metrics"]["mem_bandwidth"] is None and r["aggregate"]["metrics"]["cpi"] is not None,
               "icx without the kernel's PMUs: memory traffic is withheld with the reason, the rest measured",
               r["withheld"])
    finally:
        sim.stop()

    user = t.UNPRIVILEGED_UID
    sim = Sim("skx", sockets=2, cores=2, smt=False, extra=nopmu)
    sim.daemon.stop()
    conf = os.path.join(sim.dir, "job.conf")
    t.write_config(conf, extra="mode = job\n")
    sim.daemon = t.Daemon(sim.dir, sim.daemon.argv[-3:], config=conf)
    try:
        env = {"PMUGATE_GROUP_PATH": os.path.join(t.SOURCE, "client", "groups")}
        t.run_cli([t.PMUGATECTL, "grant", "--job", "78", "--uid", str(user), "--cpus", "0-2"], sim.daemon.socket)
        rc, out, err = t.run_cli([t.PMUGATE, "stat", "-g", "MEM", "-c", "0-2", "-S", "0.3s", "-O", "json"],
                                 sim.daemon.socket, uid=user, gid=4999, groups=[t.USER_GID], env=env)
        r = __import__("json").loads(out) if rc == 0 else {"per_package": [], "withheld": ""}
        pk = per_package(r)
        tap.ok(0 in pk and rel(pk[0]["metrics"]["mem_read_bandwidth"] / 1e3, READ_GBPS) < 0.01,
               "skx job mode: the job programs package 0's IMC units, which it holds whole", err)
        tap.ok("package 1" in r["withheld"] and "leases on all of its CPUs" in r["withheld"] and
               "job 78" in r["withheld"], "package 1's IMC units are withheld: the job cannot lease all of "
               "its CPUs", r["withheld"])
    finally:
        sim.stop()


def test_job_mode(tap):
    user = t.UNPRIVILEGED_UID
    sim = Sim("icx", sockets=2, cores=2, smt=False, extra=IMC + RAPL)
    sim.daemon.stop()
    conf = os.path.join(sim.dir, "job.conf")
    t.write_config(conf, extra="mode = job\n")
    sim.daemon = t.Daemon(sim.dir, sim.daemon.argv[-3:], config=conf)
    try:
        env = {"PMUGATE_GROUP_PATH": os.path.join(t.SOURCE, "client", "groups")}
        ctl = [t.PMUGATECTL, "grant", "--job", "77", "--uid", str(user)]
        t.run_cli(ctl + ["--cpus", "0-2"], sim.daemon.socket)
        rc, out, err = t.run_cli([t.PMUGATE, "stat", "-g", "MEM", "-c", "0-2", "-S", "0.3s", "-O", "json"],
                                 sim.daemon.socket, uid=user, gid=4999, groups=[t.USER_GID], env=env)
        tap.ok(rc == 0, "job mode: a job holding package 0 and part of package 1 still measures", err)
        r = __import__("json").loads(out) if rc == 0 else {"per_package": [], "withheld": "", "aggregate": {}}
        pk = per_package(r)
        tap.ok(0 in pk and rel(pk[0]["metrics"]["mem_read_bandwidth"] / 1e3, READ_GBPS) < 0.01,
               "package 0, all the job's, gets its bandwidth")
        tap.ok(1 in pk and pk[1]["metrics"]["mem_read_bandwidth"] is None, "package 1's bandwidth is not given")
        tap.ok("package 1" in r["withheld"] and "job 77" in r["withheld"] and "UNC_M_CAS_COUNT.RD" in r["withheld"],
               "the result says which events on which package are withheld and why", r["withheld"])
        tap.ok(r.get("aggregate", {}).get("metrics", {}).get("mem_bandwidth", 0) is None,
               "the node's bandwidth is not given when a package is withheld")
        tap.ok(r.get("aggregate", {}).get("metrics", {}).get("cpi") is not None, "core metrics are given")
        rc, out, err = t.run_cli([t.PMUGATE, "stat", "-g", "ENERGY", "-c", "0-2", "-S", "0.2s"], sim.daemon.socket,
                                 uid=user, gid=4999, groups=[t.USER_GID], env=env)
        withheld = "not counted: PWR_PKG_ENERGY, PWR_DRAM_ENERGY, PWR_PP0_ENERGY on package 1"
        tap.ok(rc == 0 and withheld in out and "job 77" in out,
               "the table names the withheld energy and the reason", out + err)
        t.run_cli(ctl + ["--cpus", "0-3"], sim.daemon.socket)
        rc, out, err = t.run_cli([t.PMUGATE, "stat", "-g", "MEM", "-c", "0-3", "-S", "0.2s", "-O", "json"],
                                 sim.daemon.socket, uid=user, gid=4999, groups=[t.USER_GID], env=env)
        r = __import__("json").loads(out) if rc == 0 else {"withheld": "?", "aggregate": {"metrics": {}}}
        tap.ok(r["withheld"] == "" and r["aggregate"]["metrics"].get("mem_bandwidth") is not None,
               "a job holding both packages gets everything", err)
    finally:
        sim.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_memory_bandwidth, test_energy, test_flops, test_wraps, test_every_group,
                          test_package_only, test_imc_pci, test_job_mode]))
