#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Uncore counters the kernel holds, through the real daemon, socket and CLI: a Skylake-SP memory
controller channel whose counters the kernel's uncore_imc driver programs (for pmugated's own
package counters, or for another perf user) and AMD L3 and data-fabric counters whose enable bit
amd_uncore set are refused busy with a reason naming the kernel's driver, and left exactly as the
kernel had them when a lease ends; clients read the kernel's counters instead."""

import json
import os
import sys

import pmugatetest as t

IMC_CTR0, IMC_CTL0, IMC_CTL1, IMC_FIXED_CTL, IMC_BOX_CTL = 0xA0, 0xD8, 0xDC, 0xF0, 0xF4
KERNEL_CAS_READ, KERNEL_CAS_WRITE = 0x400304, 0x400C04
L3_CTL0, DF_CTL0 = 0xC0010230, 0xC0010240
EN = 1 << 22
GROUPS = t.GROUPS


def sim(model, sockets=1, cores=2, smt=False, extra=""):
    d = t.workdir()
    conf = os.path.join(d, "sim.conf")
    with open(conf, "w") as f:
        f.write("[machine]\nsockets = %d\ncores = %d\nsmt = %s\ncores_per_ccx = 2\n" %
                (sockets, cores, "yes" if smt else "no"))
        f.write("[clock]\nmode = deterministic\nseed = 3\ncycles_per_access = 1000000\n")
        f.write(extra)
    return t.Daemon(d, ["--backend=sim", "--sim-model=" + model, "--sim-config=" + conf])


def values(c, ops):
    r = c.batch(ops)
    assert r["ok"] and all(s == 0 for s in r["status"]), r
    return r["values"]


def refusal(r):
    if r.get("ok"):
        return ("ok", "")
    return (r["error"]["name"], r["error"].get("reason", ""))


def test_imc_box_of_daemon_counters(tap):
    """skx with the kernel's uncore_imc PMUs: pmugated opens cas_count_read/write on every channel,
    so every channel is the kernel's."""
    dm = sim("skx", sockets=1, cores=2)
    try:
        c = t.Client(dm.socket)
        hello = c.call("hello")
        units = [u[0] for u in hello["units"]]
        tap.ok(len(units) == 6 and len(hello["counters"]) == 12,
               "skx: six IMC channels and the kernel's twelve CAS counters are served")
        before = values(c, [["pr", 0, IMC_CTL0], ["pr", 0, IMC_CTL1]])
        tap.eq(before, [KERNEL_CAS_READ, KERNEL_CAS_WRITE], "the simulated kernel programmed CAS on counters 0 and 1")
        c.call("lease", cpus=[0, 1])
        for op, what in (([["pw", 0, IMC_CTL0, 0]], "a counter control"),
                         ([["pw", 0, IMC_BOX_CTL, 0x3]], "the box control (reset)"),
                         ([["pw", 0, IMC_CTL0 + 8, 0x400304]], "a counter the kernel does not use")):
            name, reason = refusal(c.batch(op))
            tap.ok(name == "busy" and "uncore_imc" in reason and "kernel" in reason and "pmugated's own" in reason,
                   "writing %s of a channel the kernel programs is refused busy, naming its driver" % what,
                   (name, reason))
        name, reason = refusal(c.batch([["pw", 5, IMC_CTL0 + 12, 0x400304]]))
        tap.ok(name == "busy", "so is every other channel of the package", reason)
        ctr = values(c, [["pr", 0, IMC_CTR0]])[0]
        tap.ok(ctr > 0, "reading the kernel's channel is allowed (%d CAS reads so far)" % ctr)
        counts = values(c, [["cr", 0], ["cr", 1]])
        tap.ok(all(v > 0 for v in counts), "the kernel's counters are read as package counters", counts)
        c.call("release")
        after = values(c, [["pr", 0, IMC_CTL0], ["pr", 0, IMC_CTL1], ["pr", 0, IMC_CTR0]])
        tap.ok(after[:2] == [KERNEL_CAS_READ, KERNEL_CAS_WRITE] and after[2] > ctr,
               "after the lease ends the kernel's controls are as it left them and its counter was not zeroed",
               after)
        rc, out, err = t.run_cli([t.PMUGATE, "write", "-u", "3", "IMC_PMON_BOX_CTL=0x3"], dm.socket)
        tap.ok(rc != 0 and "held by the kernel's uncore_imc driver" in out + err,
               "pmugate write to such a channel fails with the daemon's reason", out + err)
        st = c.call("status")
        owners = st.get("foreign", {}).get("units", [])
        tap.ok(sorted(owners) == units, "status lists the kernel's channels under foreign.units", st.get("foreign"))
        rc, out, err = t.run_cli([t.PMUGATECTL, "status"], dm.socket)
        tap.ok(rc == 0 and "kernel uncore: L3 counters 0x0, data-fabric counters 0x0, 6 memory-controller channels"
               in out, "pmugatectl status says how many channels the kernel holds", out + err)
        c.close()
    finally:
        dm.stop()


def test_imc_box_of_another_perf_user(tap):
    """skx without pmugated's own IMC counters: channel 1 of package 0 has a counter the kernel's
    uncore_imc driver programmed for a perf user; channel 0 is free."""
    dm = sim("skx", sockets=1, cores=2, extra="[imc]\nkernel_pmu = no\n[inject]\nkernel_imc_units = 1\n")
    try:
        c = t.Client(dm.socket)
        tap.eq(values(c, [["pr", 1, IMC_CTL0]]), [KERNEL_CAS_READ], "the simulated kernel programmed channel 1")
        c.call("lease", cpus=[0, 1])
        name, reason = refusal(c.batch([["pw", 1, IMC_CTL1, KERNEL_CAS_WRITE]]))
        tap.ok(name == "busy" and "the kernel's uncore_imc driver" in reason and "perf user" in reason,
               "a channel whose counter control the kernel enabled is refused busy, naming its driver",
               (name, reason))
        r = c.batch([["pw", 0, IMC_CTL0, KERNEL_CAS_READ], ["pw", 0, IMC_CTL1, KERNEL_CAS_WRITE]])
        tap.ok(r.get("ok"), "a free channel of the same package is still the user's to program", r)
        kernel_ctr = values(c, [["pr", 1, IMC_CTR0]])[0]
        c.call("release")
        after = values(c, [["pr", 1, IMC_CTL0], ["pr", 1, IMC_CTR0], ["pr", 0, IMC_CTL0], ["pr", 0, IMC_CTR0]])
        tap.ok(after[0] == KERNEL_CAS_READ and after[1] > kernel_ctr,
               "after the lease ends the kernel's channel still counts, untouched", after)
        tap.eq(after[2:], [0, 0], "the user's channel was put back and its counter zeroed")
        c.close()
    finally:
        dm.stop()


def test_amd_l3_and_df(tap):
    """zen4: amd_uncore enabled L3 counter 0 of every CCX and data-fabric counter 15 of every
    package. CCX 0 is cores 0-1: CPUs 0-1 and their siblings 4-5."""
    dm = sim("zen4", sockets=1, cores=4, smt=True,
             extra="[inject]\nkernel_l3_counters = 0\nkernel_df_counters = 15\n")
    try:
        c = t.Client(dm.socket)
        kernel_ctl = values(c, [["r", 0, L3_CTL0]])[0]
        tap.ok(kernel_ctl & EN, "the simulated amd_uncore enabled L3 counter 0", hex(kernel_ctl))
        c.call("lease", cpus=list(range(8)))
        for reg, what in ((L3_CTL0, "L3 counter 0's control"), (L3_CTL0 + 1, "L3 counter 0"),
                          (DF_CTL0 + 30, "data-fabric counter 15's control")):
            name, reason = refusal(c.batch([["w", 1, reg, 0]]))
            tap.ok(name == "busy" and "amd_uncore" in reason and "kernel" in reason,
                   "writing %s is refused busy, naming amd_uncore" % what, (name, reason))
        r = c.batch([["w", 0, L3_CTL0 + 2, kernel_ctl], ["w", 0, DF_CTL0, EN | 0x1F]])
        tap.ok(r.get("ok"), "L3 counter 1 and data-fabric counter 0 are still the user's", r)
        kernel_ctr = values(c, [["r", 0, L3_CTL0 + 1]])[0]
        c.call("release")
        after = values(c, [["r", 0, L3_CTL0], ["r", 0, L3_CTL0 + 1], ["r", 0, L3_CTL0 + 2], ["r", 0, DF_CTL0],
                           ["r", 0, DF_CTL0 + 30]])
        tap.ok(after[0] == kernel_ctl and after[1] > kernel_ctr and after[4] & EN,
               "after the lease ends the kernel's L3 and data-fabric counters are as it left them, still "
               "counting", after)
        tap.eq(after[2:4], [0, 0], "the user's L3 and data-fabric controls were put back")
        c.close()
    finally:
        dm.stop()


def test_fake_machines(tap):
    """The same through the dev backend on fake machines under --root: a Skylake-SP channel whose
    config space shows a control with EN when pmugated starts, and a Genoa L3 counter enabled."""
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "skx", sockets=1, cores=2, smt=False)
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        c = t.Client(dm.socket)
        units = c.call("hello")["units"]
        bdf0, bdf1 = units[0][1], units[1][1]
        dm.stop()
        m.set_pci(bdf1, IMC_CTL1, KERNEL_CAS_WRITE)
        dm = t.Daemon(d, ["--root=" + m.root])
        c = t.Client(dm.socket)
        tap.eq(c.call("hello")["foreign"]["units"], [units[1][0]], "hello names the channel the kernel programs")
        c.call("lease", cpus=[0, 1])
        name, reason = refusal(c.batch([["pw", units[1][0], IMC_CTL0, KERNEL_CAS_READ]]))
        tap.ok(name == "busy" and "uncore_imc" in reason and bdf1 in reason,
               "dev backend: writing it is refused busy, naming the driver and the channel", (name, reason))
        tap.ok(c.batch([["pw", units[0][0], IMC_CTL0, KERNEL_CAS_READ]]).get("ok"), "its neighbour is free")
        c.call("release")
        tap.eq((m.pci(bdf1, IMC_CTL1), m.pci(bdf1, IMC_CTL0), m.pci(bdf0, IMC_CTL0)), (KERNEL_CAS_WRITE, 0, 0),
               "after the lease the kernel's control is as it was, the neighbour's is restored")
        c.close()
        dm.stop()
        # the kernel's uncore_imc_2 as a PMU perf_event_open accepts (the software PMU, type 1)
        m.add_uncore_pmu("uncore_imc_2", 1, "0", {"cas_count_read": "event=0x00"}, scale="6.103515625e-5",
                         unit="MiB")
        dm = t.Daemon(d, ["--root=" + m.root])
        c = t.Client(dm.socket)
        h = c.call("hello")
        served = [x[1] for x in h["counters"] if not x[7]]
        held = sorted(h["foreign"]["units"])
        tap.ok(served == ["uncore_imc_2/cas_count_read"] and held == [units[1][0], units[2][0]],
               "with pmugated's own uncore_imc_2 counter open, channel 2 of the package is the kernel's too",
               h["foreign"])
        c.call("lease", cpus=[0, 1])
        name, reason = refusal(c.batch([["pw", units[2][0], IMC_BOX_CTL, 0x3]]))
        tap.ok(name == "busy" and "pmugated's own memory-bandwidth counters" in reason,
               "writing it is refused busy, naming pmugated's own counters", (name, reason))
        c.close()
    finally:
        dm.stop()

    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "zen4", sockets=1, cores=2, smt=False, cores_per_ccx=2)
    m.set_msr(0, L3_CTL0, EN | 0x04)
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        c = t.Client(dm.socket)
        tap.eq(c.call("hello")["foreign"]["l3_mask"], 1, "dev backend: hello names amd_uncore's L3 counter 0")
        c.call("lease", cpus=[0, 1])
        name, reason = refusal(c.batch([["w", 1, L3_CTL0, 0]]))
        tap.ok(name == "busy" and "amd_uncore" in reason, "writing it is refused busy", (name, reason))
        c.call("release")
        tap.eq(m.msr(0, L3_CTL0), EN | 0x04, "and it is untouched after the lease")
        c.close()
    finally:
        dm.stop()


def stat(dm, *args):
    return t.run_cli([t.PMUGATE, "stat"] + list(args), dm.socket, env={"PMUGATE_GROUP_PATH": GROUPS})


def test_client_reads_kernel_counters(tap):
    dm = sim("skx", sockets=1, cores=2, extra="[imc]\nread_gbps = 20\nwrite_gbps = 5\n")
    try:
        rc, out, err = stat(dm, "-g", "MEM", "-c", "0-1", "-S", "0.2s", "-O", "json")
        r = json.loads(out) if rc == 0 else {}
        m = r.get("per_package", [{}])[0].get("metrics", {}) if rc == 0 else {}
        tap.ok(rc == 0 and (m.get("mem_read_bandwidth") or 0) > 0 and not r.get("withheld"),
               "pmugate stat -g MEM measures bandwidth from the kernel's counters", out + err)
        c = t.Client(dm.socket)
        tap.eq(values(c, [["pr", 0, IMC_CTL0], ["pr", 0, IMC_CTL1]]), [KERNEL_CAS_READ, KERNEL_CAS_WRITE],
               "and never touched the kernel's channel")
        c.close()
    finally:
        dm.stop()

    dm = sim("skx", sockets=1, cores=2, extra="[imc]\nkernel_pmu = no\n[inject]\nkernel_imc_units = 2\n")
    try:
        rc, out, err = stat(dm, "-g", "MEM", "-c", "0-1", "-S", "0.1s", "-O", "json")
        r = json.loads(out) if rc == 0 else {"withheld": ""}
        tap.ok(rc == 0 and "the kernel's uncore_imc driver programs memory-controller channel" in r["withheld"]
               and "(unit 2)" in r["withheld"],
               "where the kernel holds a channel and serves no counter, the memory traffic is withheld with a "
               "reason naming the kernel's driver and the channel", out + err)
        rc, out, err = t.run_cli([t.PMUGATE, "info"], dm.socket)
        tap.ok(rc == 0 and "unit 2   0000:3a:0b.2 8086:204a package 0 (held by the kernel's uncore_imc driver)" in out
               and "1 memory-controller channels are held by it" in out,
               "pmugate info marks the channel the kernel holds", out + err)
        c = t.Client(dm.socket)
        tap.eq(values(c, [["pr", u, IMC_CTL0] for u in range(6)]), [0, 0, KERNEL_CAS_READ, 0, 0, 0],
               "and no channel was left programmed")
        c.close()
    finally:
        dm.stop()


def test_amd_client_avoids_kernel_counters(tap):
    dm = sim("zen4", sockets=1, cores=4, smt=True, extra="[inject]\nkernel_l3_counters = 0\n")
    try:
        rc, out, err = stat(dm, "-g", "L3", "-c", "0-7", "-S", "0.2s", "-O", "json")
        r = json.loads(out) if rc == 0 else {}
        ratio = r.get("aggregate", {}).get("metrics", {}).get("l3_miss_ratio") if rc == 0 else None
        tap.ok(rc == 0 and ratio is not None and not r.get("withheld"),
               "pmugate stat -g L3 measures on the L3 counters the kernel left free", out + err)
        c = t.Client(dm.socket)
        tap.ok(values(c, [["r", 0, L3_CTL0]])[0] & EN, "and left the kernel's L3 counter 0 enabled")
        c.close()
        rc, out, err = t.run_cli([t.PMUGATE, "info"], dm.socket)
        tap.ok(rc == 0 and "L3 counters 0x1 and data-fabric counters 0x0 are held by it" in out,
               "pmugate info names the L3 counter amd_uncore holds", out + err)
    finally:
        dm.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_imc_box_of_daemon_counters, test_imc_box_of_another_perf_user, test_amd_l3_and_df,
                          test_fake_machines, test_client_reads_kernel_counters,
                          test_amd_client_avoids_kernel_counters]))
