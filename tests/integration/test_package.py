#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Package counters through the real daemon: the simulator's memory controller counters of
every model (names, packages, rates), the dev backend opening the kernel's uncore PMUs found
under --root with perf_event_open (one that opens, one the kernel refuses, one with a broken
sysfs entry), and the refusals: unknown counter, malformed op, roles, job scope."""

import os
import sys
import time

import pmugatetest as t

USER = t.UNPRIVILEGED_UID
OUTSIDER = USER + 3
READ_GBPS, WRITE_GBPS = 40.0, 15.0
IMC = {"skx": ("uncore_imc_%d/cas_count_", 6), "clx": ("uncore_imc_%d/cas_count_", 6),
       "icx": ("uncore_imc_free_running_%d/", 4), "spr": ("uncore_imc_%d/cas_count_", 8)}
SCALE_MIB = 6.103515625e-5


def sim_daemon(model, extra="", config_extra="", sockets=2):
    d = t.workdir()
    conf = os.path.join(d, "sim.conf")
    with open(conf, "w") as f:
        f.write("[machine]\nmodel = %s\nsockets = %d\ncores = 2\nsmt = no\n[imc]\nread_gbps = %g\n"
                "write_gbps = %g\n%s" % (model, sockets, READ_GBPS, WRITE_GBPS, extra))
    pconf = os.path.join(d, "pmugate.conf")
    t.write_config(pconf, extra=config_extra)
    return t.Daemon(d, ["--backend=sim", "--sim-model=" + model, "--sim-config=" + conf], config=pconf)


def name(r):
    return "ok" if r.get("ok") else r["error"]["name"]


def test_sim_counters(tap):
    for model, (pattern, boxes) in IMC.items():
        dm = sim_daemon(model)
        try:
            c = t.Client(dm.socket)
            hello = c.call("hello")
            counters = hello["counters"]
            tap.eq(len(counters), 2 * 2 * boxes, "%s: %d read and write counters per socket, two sockets" % (
                model, 2 * boxes))
            want = []
            for pkg in range(2):
                for box in range(boxes):
                    for rw in ("read", "write"):
                        want.append([pattern % box + rw, pkg, 48, SCALE_MIB, "MiB", "uncore-imc", ""])
            tap.eq([x[1:] for x in counters], want, "%s: names as the kernel's PMUs, package, width, scale, unit, "
                   "class, no error" % model)
            tap.eq([x[0] for x in counters], list(range(len(counters))), "%s: counters are listed by index" % model)
            ops = [["cr", i] for i in range(len(counters))]
            t0 = time.monotonic()
            a = c.batch(ops)
            time.sleep(0.3)
            b = c.batch(ops)
            elapsed = time.monotonic() - t0
            tap.ok(a["ok"] and b["ok"] and set(a["status"] + b["status"]) == {0}, "%s: every counter reads" % model)
            for pkg in range(2):
                for rw, gbps in ((0, READ_GBPS), (1, WRITE_GBPS)):
                    idx = [i for i, x in enumerate(counters) if x[2] == pkg and i % 2 == rw]
                    lines = sum(b["values"][i] - a["values"][i] for i in idx)
                    got = lines * 64 / elapsed / 1e9
                    tap.ok(abs(got / gbps - 1) < 0.05, "%s: package %d %s bandwidth %.2f GB/s (configured %g)" % (
                        model, pkg, "read" if rw == 0 else "write", got, gbps))
        finally:
            dm.stop()


def test_counter_refusals(tap):
    dm = sim_daemon("icx")
    try:
        c = t.Client(dm.socket)
        n = len(c.call("hello")["counters"])
        r = c.batch([["cr", 0], ["cr", n]])
        tap.eq((name(r), r["error"].get("op")), ("no-such-unit", 1), "a counter index past the list is refused, "
               "naming the op")
        tap.ok("does not exist" in r["error"]["reason"], "the reason says so", r["error"]["reason"])
        for op, why in ((["cr"], "no index"), (["cr", 0, 1], "two arguments"), (["cr", "0"], "a string index"),
                        (["cr", -1], "a negative index"), (["cr", 1 << 32], "an index beyond 32 bits"),
                        (["crx", 0], "an unknown kind")):
            tap.eq(name(c.batch([op])), "bad-field", "%s is refused as bad-field" % why)
        r = c.batch([["cr", 0], ["r", 0, 0x611], ["cr", 1]])
        tap.ok(r["ok"] and r["status"] == [0, 0, 0], "counter reads mix with MSR reads in one batch")
        tap.ok(dm.alive(), "the daemon served every malformed op")
    finally:
        dm.stop()

    # A role whose read classes leave out the memory controller, and a caller without rights.
    dm = sim_daemon("spr", config_extra="[rights]\nuser_read = core-pmu rapl\n")
    try:
        def probe():
            c = t.Client(dm.socket)
            return name(c.batch([["cr", 0]])), c.batch([["cr", 0]]).get("error", {}).get("reason", "")
        got, reason = t.in_child_as(USER, 4999, [t.USER_GID], probe)
        tap.eq(got, "not-authorized", "a user whose read classes lack uncore-imc cannot read the counters")
        tap.ok("uncore-imc" in reason, "the reason names the class", reason)
        got = t.in_child_as(OUTSIDER, 4999, [], lambda: name(t.Client(dm.socket).recv()))
        tap.eq(got, "not-authorized", "a caller without a role reads nothing: it is refused as it connects")
    finally:
        dm.stop()


def test_job_scope(tap):
    for shared in (False, True):
        dm = sim_daemon("icx", config_extra="mode = job\n" +
                        ("[rights]\npackage_read_shared = yes\n" if shared else ""))
        try:
            counters = t.Client(dm.socket).call("hello")["counters"]
            pkg0 = [i for i, x in enumerate(counters) if x[2] == 0][0]
            pkg1 = [i for i, x in enumerate(counters) if x[2] == 1][0]
            # sockets of 2 cores without SMT: CPUs 0-1 are package 0, 2-3 package 1
            t.run_cli([t.PMUGATECTL, "grant", "--job", "9", "--uid", str(USER), "--cpus", "0-2"], dm.socket)

            def probe():
                c = t.Client(dm.socket)
                r = c.batch([["cr", pkg1]])
                return name(c.batch([["cr", pkg0]])), name(r), r.get("error", {}).get("reason", "")
            got0, got1, reason = t.in_child_as(USER, 4999, [t.USER_GID], probe)
            tap.eq(got0, "ok", "job mode%s: the job holding all of package 0 reads its counter" % (
                ", package_read_shared" if shared else ""))
            if shared:
                tap.eq(got1, "ok", "package_read_shared: package 1's counter is readable with part of it")
            else:
                tap.eq(got1, "out-of-scope", "job mode: package 1's counter is refused with part of the package")
                tap.ok("package 1" in reason and "job 9" in reason, "the reason names package and job", reason)
        finally:
            dm.stop()


def test_dev_counters(tap):
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "icx", sockets=2, cores=2, smt=False)
    # type 1 is the kernel's software PMU: config 0 (cpu-clock) counts nanoseconds on CPU 0, a
    # real perf event the daemon opens as root and keeps reading as its own user.
    m.add_uncore_pmu("uncore_imc_free_running_0", 1, "0", {"read": "event=0x00", "write": "event=0x00"},
                     scale=SCALE_MIB, unit="MiB")
    # a type no kernel PMU has: listed with the reason it could not be opened
    m.add_uncore_pmu("uncore_imc_free_running_1", 0x7fff0001, "0,2", {"read": "event=0xff,umask=0x20"})
    # an event term without a format file
    m.add_uncore_pmu("uncore_imc_free_running_2", 1, "2", {"read": "event=0x00,bogus=0x1"})
    # not a memory controller PMU: never opened
    m.add_uncore_pmu("uncore_cha_0", 1, "0", {"read": "event=0x00"})
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        c = t.Client(dm.socket)
        counters = c.call("hello")["counters"]
        names = [(x[1], x[2]) for x in counters]
        tap.eq(names, [("uncore_imc_free_running_0/read", 0), ("uncore_imc_free_running_0/write", 0),
                       ("uncore_imc_free_running_1/read", 0), ("uncore_imc_free_running_1/read", 1),
                       ("uncore_imc_free_running_2/read", 1)],
               "one counter per event and per package of the cpumask, package-major; other PMUs left out")
        tap.eq([x[3] for x in counters], [64] * 5, "the kernel's counts are 64 bits wide")
        tap.eq((counters[0][4], counters[0][5]), (SCALE_MIB, "MiB"), "scale and unit come from sysfs")
        tap.eq(counters[0][7], "", "the counter the kernel opened has no error")
        tap.ok("perf_event_open" in counters[2][7] and "No such file" in counters[2][7],
               "the refused one says why", counters[2][7])
        tap.ok("cannot read its event" in counters[4][7], "the broken sysfs entry says why", counters[4][7])
        tap.ok("uncore_imc_free_running_1/read" in dm.log(), "the daemon logs the counters it could not open")
        a = c.batch([["cr", 0], ["cr", 2], ["cr", 4]])
        time.sleep(0.05)
        b = c.batch([["cr", 0]])
        tap.eq(a["status"][1:], [-19, -19], "reading a counter that is not open fails that op alone with ENODEV")
        rc, out, err = t.run_cli([t.PMUGATE, "info"], dm.socket)
        tap.ok(rc == 0 and "Package counters: 5" in out and "uncore_imc_free_running_1/read" in out and
               "not served: perf_event_open" in out, "pmugate info lists the counters and why one is not served",
               out + err)
        rc, out, err = t.run_cli([t.PMUGATE, "info", "--json"], dm.socket)
        info = __import__("json").loads(out) if rc == 0 else {"counters": []}
        tap.eq([(c["name"], c["package"], c["error"] is None) for c in info["counters"]][:3],
               [("uncore_imc_free_running_0/read", 0, True), ("uncore_imc_free_running_0/write", 0, True),
                ("uncore_imc_free_running_1/read", 0, False)], "pmugate info --json has them too")
        tap.ok(a["status"][0] == 0 and b["values"][0] > a["values"][0],
               "the perf event opened as root keeps counting after the privilege drop (%d -> %d)" % (
                   a["values"][0], b["values"][0]))
    finally:
        dm.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_sim_counters, test_counter_refusals, test_job_scope, test_dev_counters]))
