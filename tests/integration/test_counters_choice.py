#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The backend choice through the real daemon: 'auto' takes perf under kernel lockdown (the
simulator's, and a fake machine's lockdown file), without the msr driver, and msr where writes
work; --counters and [counters] backend choose; hello's "counting" and 'pmugate info' say how
and why; under perf a batch write is refused with the reason before anything runs while RAPL
reads work; a reload keeps the start-up choice; bad values are refused."""

import json
import os
import re
import signal
import sys
import time

import pmugatetest as t

EVTSEL0, PMC0, PKG_ENERGY = 0x186, 0xC1, 0x611
LOCKDOWN_REASON = "kernel lockdown: integrity"


def sim(extra_inject="", args=(), config=None):
    d = t.workdir()
    conf = t.sim_config(d, "spr", cores=2, smt=False,
                        extra="[inject]\n" + extra_inject if extra_inject else "")
    dm = t.Daemon(d, ["--backend=sim", "--sim-model=spr", "--sim-config=" + conf] + list(args), config=config)
    return d, dm


def counting(dm):
    return t.Client(dm.socket).call("hello").get("counting")


def check_perf_pmus(tap, hello, dm):
    """pmugate info shows the PMUs hello lists, in text and JSON: the simulated Sapphire Rapids
    has the software PMU, "cpu" with the level-1 and level-2 TopDown metric events, "hardware",
    and eight memory-controller PMUs of package 0 counting on CPU 0."""
    pmus = hello.get("pmus", [])
    rc, out, err = t.run_cli([t.PMUGATE, "info"], dm.socket)
    section = re.search(r"^Perf PMUs:\s+(\d+)\n((?:  .*\n)*)", out, re.M)
    lines = section.group(2).splitlines() if section else []
    tap.ok(rc == 0 and section and int(section.group(1)) == len(pmus) == len(lines) == 11,
           "pmugate info has a 'Perf PMUs:' section with one line per PMU of hello", out + err)
    tap.ok(any(re.fullmatch(r"  cpu\s+core\s+type \d+\s+TopDown levels 1 and 2", line) for line in lines) and
           any(re.fullmatch(r"  software\s+software\s+type 1", line) for line in lines) and
           any(re.fullmatch(r"  uncore_imc_7\s+uncore\s+type \d+\s+package 0, CPU 0", line) for line in lines),
           "each line names the PMU, its kind and type, the TopDown level of the core PMU, an uncore PMU's "
           "package and CPU", lines)
    rc, out, err = t.run_cli([t.PMUGATE, "info", "--json"], dm.socket)
    doc = json.loads(out) if rc == 0 else {}
    tap.eq([[p["name"], p["kind"], p["type"], p["package"], p["cpu"], p["topdown"]] for p in doc.get("perf_pmus", [])],
           pmus, "pmugate info --json has them as perf_pmus: name, kind, type, package, cpu, topdown")


def test_sim_lockdown_auto(tap):
    _, dm = sim("lockdown = integrity\n")
    try:
        c = t.Client(dm.socket)
        h = c.call("hello")
        tap.eq(h.get("counting"), {"via": "perf", "wanted": "auto", "reason": LOCKDOWN_REASON, "msr_reads": True},
               "lockdown = integrity, auto: hello says counters via perf, and why")
        tap.eq(h.get("backend"), "sim", "hello's backend key stays the device layer")
        tap.ok("Counters via perf: kernel lockdown: integrity; MSR reads of RAPL stay" in dm.log(),
               "the choice and its reason are logged at start-up", dm.log())

        rc, out, err = t.run_cli([t.PMUGATE, "info"], dm.socket)
        tap.ok(rc == 0 and re.search(r"^Counters:\s+perf \(kernel lockdown: integrity\)$", out, re.M),
               "pmugate info prints 'Counters: perf (kernel lockdown: integrity)'", out + err)
        rc, out, err = t.run_cli([t.PMUGATE, "info", "--json"], dm.socket)
        doc = json.loads(out) if rc == 0 else {}
        tap.eq(doc.get("counting", {}).get("via"), "perf", "pmugate info --json carries counting.via")
        check_perf_pmus(tap, h, dm)

        tap.eq(c.call("lease", cpus=[0]).get("cpus"), [0], "root leases CPU 0")
        r = c.batch([["r", 0, PMC0], ["w", 0, EVTSEL0, 0x43003C]])
        err = r.get("error", {})
        tap.ok(not r.get("ok") and err.get("name") == "read-only" and err.get("op") == 1 and
               "this node programs counters through perf (kernel lockdown: integrity); MSR writes are off: "
               "use the perf path" in err.get("reason", ""),
               "a batch write is refused before anything runs, with the reason naming perf", r)
        r = c.batch([["r", 0, PKG_ENERGY], ["r", 0, PMC0]])
        tap.ok(r.get("ok") and r.get("status") == [0, 0] and r["values"][0] > 0,
               "a batch read of RAPL energy and of a counter works", r)
        tap.ok("event=denial" in dm.audit() or "verdict=denied" in dm.audit(), "the refused write is audited",
               dm.audit())
    finally:
        dm.stop()


def test_sim_lockdown_msr_asked(tap):
    """msr asked for on a locked-down node: it starts with msr, warns, and each write fails."""
    _, dm = sim("lockdown = integrity\n", ["--counters=msr"])
    try:
        got = counting(dm)
        tap.eq((got["via"], got["wanted"]), ("msr", "msr"), "--counters=msr under lockdown: via msr as asked")
        tap.ok("--counters=msr, but kernel lockdown: integrity" == got["reason"], "the reason says both", got)
        tap.ok("writes will fail one by one" in dm.log(), "a warning is logged", dm.log())
        c = t.Client(dm.socket)
        c.call("lease", cpus=[0])
        r = c.batch([["w", 0, EVTSEL0, 0x43003C]])
        tap.eq((r.get("ok"), r.get("status")), (True, [-1]), "the write is tried and fails with EPERM")
    finally:
        dm.stop()


def test_sim_without_lockdown(tap):
    _, dm = sim()
    try:
        got = counting(dm)
        tap.eq((got["via"], got["wanted"], got["msr_reads"]), ("msr", "auto", True),
               "no lockdown, auto: counters via msr")
        tap.eq(got["reason"], "a write of PERFEVTSEL0 with its own value works", "and why")
        c = t.Client(dm.socket)
        c.call("lease", cpus=[0])
        r = c.batch([["w", 0, EVTSEL0, 0x43003C], ["r", 0, EVTSEL0]])
        tap.eq((r.get("ok"), r.get("values")), (True, [0x43003C, 0x43003C]), "batch writes run as before")
    finally:
        dm.stop()


def test_counters_option_perf(tap):
    _, dm = sim(args=["--counters=perf"])
    try:
        got = counting(dm)
        tap.eq((got["via"], got["wanted"], got["reason"]), ("perf", "perf", "--counters=perf"),
               "--counters=perf: via perf")
        rc, out, err = t.run_cli([t.PMUGATE, "info"], dm.socket)
        tap.ok(re.search(r"^Counters:\s+perf \(--counters=perf\)$", out, re.M), "pmugate info says so", out + err)
    finally:
        dm.stop()


def test_config_perf_and_option_wins(tap):
    d = t.workdir()
    conf = os.path.join(d, "pmugate.conf")
    t.write_config(conf, extra="[counters]\nbackend = perf\n")
    _, dm = sim(config=conf)
    try:
        got = counting(dm)
        tap.eq((got["via"], got["reason"]), ("perf", "chosen in pmugate.conf"), "backend = perf in pmugate.conf")
    finally:
        dm.stop()
    _, dm = sim(args=["--counters=auto"], config=conf)
    try:
        tap.eq(counting(dm)["via"], "msr", "--counters=auto wins over the file")
    finally:
        dm.stop()


def fake(d, lockdown=None, msr=True):
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=2, smt=False)
    if lockdown is not None:
        os.makedirs(m.path("sys/kernel/security"), exist_ok=True)
        with open(m.path("sys/kernel/security/lockdown"), "w") as f:
            f.write(lockdown)
    if not msr:
        for cpu in range(m.ncpus):
            os.unlink(m.path("dev/cpu/%d/msr" % cpu))
    return m


def test_fake_lockdown_file(tap):
    d = t.workdir()
    m = fake(d, "none [integrity] confidentiality\n")
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        got = counting(dm)
        tap.eq((got["via"], got["reason"], got["msr_reads"]), ("perf", LOCKDOWN_REASON, True),
               "a fake machine whose lockdown file says [integrity]: perf")
        c = t.Client(dm.socket)
        c.call("lease", cpus=[0])
        m.set_msr(0, EVTSEL0, 0x1234)
        r = c.batch([["w", 0, EVTSEL0, 0x43003C]])
        tap.eq(r.get("error", {}).get("name"), "read-only", "a batch write is refused")
        tap.eq(m.msr(0, EVTSEL0), 0x1234, "and nothing reached the device")
        r = c.call("reset", cpus=[0])
        tap.eq((r.get("ok"), r.get("cpus")), (True, [0]), "an admin reset ends the leases")
        tap.eq(m.msr(0, EVTSEL0), 0x1234, "but writes no register the kernel's perf programs")
    finally:
        dm.stop()

    d = t.workdir()
    m = fake(d, "[none] integrity confidentiality\n")
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        tap.eq(counting(dm)["via"], "msr", "lockdown file saying [none], writes work: msr")
    finally:
        dm.stop()

    d = t.workdir()
    m = fake(d, "x" * 100000)
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        tap.eq(counting(dm)["via"], "msr", "a lockdown file that is not the kernel's: the write probe decides")
        tap.ok("Cannot tell the kernel's lockdown" in dm.log(), "and the log says why", dm.log())
    finally:
        dm.stop()


def test_fake_no_msr_driver(tap):
    d = t.workdir()
    m = fake(d, msr=False)
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        c = t.Client(dm.socket)
        got = c.call("hello").get("counting")
        tap.eq((got["via"], got["reason"], got["msr_reads"]),
               ("perf", "no msr driver (/dev/cpu/0/msr missing)", False),
               "a fake machine without /dev/cpu/*/msr starts with perf")
        r = c.batch([["r", 0, PMC0]])
        tap.eq((r.get("ok"), r.get("status")), (True, [-19]), "an MSR read fails alone with ENODEV")
    finally:
        dm.stop()

    d = t.workdir()
    m = fake(d, msr=False)
    dm = t.Daemon(d, ["--root=" + m.root, "--counters=msr"], expect_ready=False)
    rc = dm.wait_exit()
    log = dm.log()
    dm.stop()
    tap.ok(rc != 0 and re.search(r"Cannot open \S+/dev/cpu/0/msr \(load the msr driver", log),
           "--counters=msr without the msr driver: start-up refused with what to do", log)


def test_reload_keeps_choice(tap):
    d = t.workdir()
    m = fake(d)
    conf = os.path.join(d, "pmugate.conf")
    t.write_config(conf)
    os.chmod(conf, 0o644)
    dm = t.Daemon(d, ["--root=" + m.root], config=conf)
    try:
        tap.eq(counting(dm)["via"], "msr", "started with msr")
        with open(conf, "a") as f:
            f.write("[counters]\nbackend = perf\n")
        dm.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 10
        while time.time() < deadline and "takes effect at the next start" not in dm.log():
            time.sleep(0.05)
        tap.ok("backend = perf in [counters] takes effect at the next start; counters stay via msr" in dm.log(),
               "a reload that changes backend logs that it takes effect at restart", dm.log())
        tap.eq(counting(dm)["via"], "msr", "and the start-up choice stays")
    finally:
        dm.stop()


def test_bad_values_refused(tap):
    d = t.workdir()
    conf = os.path.join(d, "pmugate.conf")
    t.write_config(conf, extra="[counters]\nbackend = sometimes\n")
    m = fake(d)
    dm = t.Daemon(d, ["--root=" + m.root], config=conf, expect_ready=False)
    rc = dm.wait_exit()
    log = dm.log()
    dm.stop()
    tap.ok(rc != 0 and re.search(re.escape(conf) + r":5: unknown backend 'sometimes'", log),
           "backend = sometimes: start-up refused with FILE:LINE", log)

    d = t.workdir()
    m = fake(d)
    dm = t.Daemon(d, ["--root=" + m.root, "--counters=dev"], expect_ready=False)
    rc = dm.wait_exit()
    log = dm.log()
    dm.stop()
    tap.ok(rc != 0 and "Unknown --counters='dev'" in log, "--counters=dev is refused", log)


sys.exit(t.Tap().run([test_sim_lockdown_auto, test_sim_lockdown_msr_asked, test_sim_without_lockdown,
                      test_counters_option_perf, test_config_perf_and_option_wins, test_fake_lockdown_file,
                      test_fake_no_msr_driver, test_reload_keeps_choice, test_bad_values_refused]))
