#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""NVIDIA Grace (Arm Neoverse V2) through the real daemon, socket and CLI: a fake Grace under
--root (MIDR_EL1 in sysfs, or only ARM's /proc/cpuinfo lines; the kernel's armv8_pmuv3_0 PMU
with caps/slots) starts as model grace, counting through perf because there are no MSRs on ARM,
and 'pmugate info' names it; register requests are refused with that reason, --counters=msr
refuses to start, and a hostile MIDR refuses to start."""

import json
import os
import re
import shutil
import sys

import pmugatetest as t

GRACE_MIDR = 0x410FD4F0
PMU_TYPE = 10
NO_MSRS = "no MSRs on ARM: the kernel's perf_event_open is the only way to the PMU"


def arm_cpuinfo(ncpus, midr):
    """/proc/cpuinfo as an arm64 kernel writes it: no vendor_id, family or model."""
    blocks = []
    for cpu in range(ncpus):
        blocks.append("processor\t: %d\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm sve\n"
                      "CPU implementer\t: 0x%02x\nCPU architecture: 8\nCPU variant\t: 0x%x\n"
                      "CPU part\t: 0x%03x\nCPU revision\t: %d\n\n"
                      % (cpu, midr >> 24, (midr >> 20) & 0xF, (midr >> 4) & 0xFFF, midr & 0xF))
    return "".join(blocks)


def fake_grace(d, midr=GRACE_MIDR, sysfs_midr=True, midr_text=None, slots="0x00000008"):
    """A one-socket Grace of 4 cores under d/root: the x86 fake machine's topology with ARM's
    identification, no dev/cpu/N/msr, and the kernel's armv8_pmuv3_0 core PMU."""
    m = t.FakeMachine(os.path.join(d, "root"), "grace", sockets=1, cores=4, smt=False)
    m._write("proc/cpuinfo", arm_cpuinfo(m.ncpus, midr))
    shutil.rmtree(m.path("dev/cpu"))
    for cpu in range(m.ncpus):
        if sysfs_midr:
            m._write("sys/devices/system/cpu/cpu%d/regs/identification/midr_el1" % cpu,
                     (midr_text if midr_text is not None else "0x%016x" % midr) + "\n")
    pmu = "sys/bus/event_source/devices/armv8_pmuv3_0/"
    m._write(pmu + "type", "%d\n" % PMU_TYPE)
    m._write(pmu + "cpus", "0-%d\n" % (m.ncpus - 1))
    for field, text in {"event": "config:0-15", "long": "config1:0", "rdpmc": "config1:1"}.items():
        m._write(pmu + "format/" + field, text + "\n")
    for event, code in {"cpu_cycles": 0x11, "inst_retired": 0x08, "stall_slot": 0x3F}.items():
        m._write(pmu + "events/" + event, "event=0x%04x\n" % code)
    if slots is not None:
        m._write(pmu + "caps/slots", slots + "\n")
    return m


def test_fake_grace(tap):
    for how, kw in (("MIDR_EL1 in sysfs", {}), ("/proc/cpuinfo alone", {"sysfs_midr": False})):
        d = t.workdir()
        m = fake_grace(d, **kw)
        dm = t.Daemon(d, ["--root=" + m.root])
        try:
            h = t.Client(dm.socket).call("hello")
            cpu = h.get("cpu", {})
            tap.eq((cpu.get("vendor"), cpu.get("family"), cpu.get("model"), cpu.get("stepping"), cpu.get("key")),
                   ("ARM", 0xF, 0xD4F, 0, "grace"),
                   "%s: a Neoverse V2 (implementer 0x41, part 0xd4f) is model grace" % how)
            tap.eq(h.get("counting", {}).get("via"), "perf", "%s: counters via perf" % how)
            tap.eq(h.get("counting", {}).get("reason"), NO_MSRS, "%s: because there are no MSRs on ARM" % how)
            pmu = h.get("pmu", {})
            tap.eq((pmu.get("gp_counters"), pmu.get("fixed_counters"), pmu.get("slots_width"),
                    pmu.get("perf_capabilities")), (6, 1, 8, None),
                   "%s: 6 event counters and the cycle counter, 8 slots from caps/slots" % how)
            core = [p for p in h.get("pmus", []) if p[1] == "core" and p[0] != "hardware"]
            tap.eq([p[:3] for p in core], [["armv8_pmuv3_0", "core", PMU_TYPE]],
                   "%s: the core PMU is the kernel's armv8_pmuv3_0" % how)
            rc, out, err = t.run_cli([t.PMUGATE, "info"], dm.socket)
            tap.ok(rc == 0 and re.search(r"^CPU:\s+ARM NVIDIA Grace \(Neoverse V2\) \(family 15 model 0xd4f "
                                         r"stepping 0\)$", out, re.M) and
                   re.search(r"^Counters:\s+perf \(no MSRs on ARM", out, re.M),
                   "%s: pmugate info names Grace and says why perf" % how, out + err)
        finally:
            dm.stop()


def test_registers_refused(tap):
    d = t.workdir()
    m = fake_grace(d)
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        c = t.Client(dm.socket)
        c.call("lease", cpus=[0])
        for what, ops in (("a read", [["r", 0, 0x10]]), ("a write", [["w", 0, 0x186, 0x43003C]])):
            r = c.batch(ops)
            err = r.get("error", {})
            tap.ok(not r.get("ok") and NO_MSRS in err.get("reason", ""),
                   "%s of an MSR is refused: no MSRs on ARM" % what, r)
        h = c.call("hello")
        tap.eq(h.get("registers"), [], "hello lists no allowlisted register")
        tap.ok(dm.alive(), "the daemon keeps serving")
    finally:
        dm.stop()


def test_msr_asked(tap):
    d = t.workdir()
    m = fake_grace(d)
    dm = t.Daemon(d, ["--root=" + m.root, "--counters=msr"], expect_ready=False)
    rc = dm.wait_exit()
    tap.ok(rc != 0 and "there are none: " + NO_MSRS in dm.log(),
           "--counters=msr on Grace refuses to start, saying there are no MSRs on ARM", dm.log())


def test_hostile_midr(tap):
    for text in ("0x1410fd4f0", "410fd4f0", "0x410fd4f0 junk", "0x" + "0" * 17):
        d = t.workdir()
        m = fake_grace(d, midr_text=text)
        dm = t.Daemon(d, ["--root=" + m.root], expect_ready=False)
        rc = dm.wait_exit()
        tap.ok(rc != 0 and "is not a MIDR_EL1 value" in dm.log(),
               "a midr_el1 of '%s' is refused at start-up with the reason" % text, dm.log())
    d = t.workdir()
    m = fake_grace(d, slots="eight")
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        h = t.Client(dm.socket).call("hello")
        tap.ok(not any(p[0] == "armv8_pmuv3_0" for p in h.get("pmus", [])) and
               "Perf event source armv8_pmuv3_0 is left out" in dm.log(),
               "a caps/slots that is not the kernel's hex leaves the core PMU out, logged", dm.log())
    finally:
        dm.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_fake_grace, test_registers_refused, test_msr_asked, test_hostile_midr]))
