#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Register access through the real daemon, socket and CLI: reads, masked writes, PCI units,
refusals (allowlist, never-list, read-only, CPU, unit), per-op device errors, audit."""

import json
import os
import sys
import time

import pmugatetest as t

EVTSEL0 = 0x186
PMC0 = 0xC1
GLOBAL_CTRL = 0x38F
GLOBAL_STATUS = 0x38E
DS_AREA = 0x600
EVTSEL_MASK = 0xFFC7FFFF


def spr(d=None, **kw):
    d = d or t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=4, smt=False)
    return d, m, t.Daemon(d, ["--root=" + m.root], **kw)


def test_read_and_write(tap):
    d, m, dm = spr()
    try:
        c = t.Client(dm.socket)
        r = c.batch([["w", 1, GLOBAL_CTRL, 1]])
        tap.eq(r.get("error", {}).get("name"), "no-lease", "writing without a lease is refused")
        tap.eq(c.call("lease", cpus=[0, 1, 2, 3])["cpus"], [0, 1, 2, 3], "a lease on CPUs 0-3 is granted")
        m.set_msr(2, PMC0, 0x123456789A)
        r = c.batch([["r", 2, PMC0]])
        tap.eq((r["ok"], r["status"], r["values"]), (True, [0], [0x123456789A]), "a read returns the register")

        r = c.batch([["w", 1, GLOBAL_CTRL, 0x1000F000000FF]])
        tap.eq(r["status"], [0], "a write within the mask succeeds")
        tap.eq(m.msr(1, GLOBAL_CTRL), 0x1000F000000FF, "the write reached the device")

        # Bits outside the mask take the clean value (0), not the register's: INT (bit 20) set
        # by someone else does not end up beside the client's EN, and the client cannot set ANY
        # (bit 21) or PC (bit 19).
        m.set_msr(0, EVTSEL0, 1 << 20)
        r = c.batch([["w", 0, EVTSEL0, 0xFFFFFFFFFFFFFFFF]])
        want = EVTSEL_MASK
        tap.eq(r["values"], [want], "the reply shows the value written after the mask")
        tap.eq(m.msr(0, EVTSEL0), want, "masked write: read back shows the mask applied, INT left clean")
        m.set_msr(0, EVTSEL0, 1 << 20)
        r = c.batch([["w", 0, EVTSEL0, 0], ["r", 0, EVTSEL0]])
        tap.eq(r["values"], [0, 0], "clearing leaves the bits outside the mask clean too")

        r = c.batch([["w", 3, PMC0, 0xFFFFFFFFFFFFFFFF]])
        tap.eq(m.msr(3, PMC0), 0xFFFFFFFFFFFF, "counter writes are limited to 48 bits")

        r = c.batch([["R", [0, 1, 2, 3], [PMC0, EVTSEL0]]])
        tap.eq(len(r["values"]), 8, "a sweep returns CPUs x registers results")
        tap.eq(r["values"][4], 0x123456789A, "sweep results are CPU-major")

        ops = [["r", cpu, reg] for cpu in range(4) for reg in range(0xC1, 0xC9)] * 32
        r = c.batch(ops)
        tap.ok(r["ok"] and len(r["status"]) == 1024 and all(s == 0 for s in r["status"]),
               "a 1024-op batch runs in one request")
    finally:
        dm.stop()


def test_refusals_run_nothing(tap):
    d, m, dm = spr()
    try:
        c = t.Client(dm.socket)
        c.call("lease", cpus=[0])
        cases = [
            ([["r", 0, 0x1234]], "reg-not-allowed", "a register not on the allowlist"),
            ([["r", 0, DS_AREA]], "reg-forbidden", "DS_AREA (never-list) read"),
            ([["w", 0, 0xC0000080, 0]], "reg-forbidden", "EFER (never-list) write"),
            ([["w", 0, 0x1D9, 0]], "reg-forbidden", "DEBUGCTL (never-list) write"),
            ([["w", 0, 0x610, 0]], "reg-forbidden", "a RAPL power limit write"),
            ([["w", 0, GLOBAL_STATUS, 1]], "read-only", "a write to a read-only register"),
            ([["w", 0, 0x611, 1]], "read-only", "a write to RAPL energy status"),
            ([["r", 4, PMC0]], "no-such-cpu", "a CPU past the last one"),
            ([["r", 0xFFFFFFFF, PMC0]], "no-such-cpu", "CPU 2^32-1"),
            ([["pr", 0, 0xA0]], "no-such-unit", "a PCI unit that does not exist"),
        ]
        for ops, name, desc in cases:
            r = c.batch([["w", 0, EVTSEL0, 0x43003C]] + ops)
            tap.ok(not r["ok"] and r["error"]["name"] == name and r["error"]["op"] == 1,
                   "%s is refused as %s, naming op 1" % (desc, name), r)
            tap.eq(m.msr(0, EVTSEL0), 0, "... and the allowed write before it did not run (%s)" % desc)
        r = c.batch([["r", 0, DS_AREA]])
        tap.ok("0x600" in r["error"]["reason"] and "IA32_DS_AREA" in r["error"]["reason"],
               "the reason names the register", r)
        tap.ok(c.call("hello")["ok"], "the connection stays usable after refusals")
    finally:
        dm.stop()


def test_never_list_beats_allowlist(tap):
    d = t.workdir()
    allow = os.path.join(d, "allowlists")
    os.mkdir(allow)
    with open(os.path.join(t.ALLOWLISTS, "intel-spr.conf")) as f:
        text = f.read()
    text += ("\n# A bad data file that tries to open holes:\n"
             "msr 0x600 0xffffffffffffffff thread core-pmu IA32_DS_AREA\n"
             "msr 0x1d9 0xffffffffffffffff thread core-pmu IA32_DEBUGCTL\n"
             "msr 0xc0000080 0xffffffffffffffff thread core-pmu IA32_EFER\n")
    with open(os.path.join(allow, "intel-spr.conf"), "w") as f:
        f.write(text)
    d, m, dm = spr(d, allowlist_dir=allow)
    try:
        c = t.Client(dm.socket)
        c.call("lease", cpus=[0])
        for reg in (0x600, 0x1D9, 0xC0000080):
            for op in (["r", 0, reg], ["w", 0, reg, 0]):
                r = c.batch([op])
                tap.ok(not r["ok"] and r["error"]["name"] == "reg-forbidden",
                       "0x%x %s stays forbidden although the allowlist lists it" % (reg, op[0]), r)
        tap.eq(m.msr(0, 0x600), 0, "DS_AREA was never written")
    finally:
        dm.stop()


def never_list():
    """The daemon's never-list, read from its source so that this test follows every entry:
    (first, last, name, write_only)."""
    import re
    with open(os.path.join(t.SOURCE, "daemon", "pmu", "never-list.c")) as f:
        text = f.read()
    table = text[text.index("static const NeverEntry never_list[] = {"):]
    table = table[:table.index("};")]
    return [(int(a, 16), int(b, 16), name, kind == "NEVER_WRITE")
            for a, b, name, kind in re.findall(r'\{ (0x[0-9A-F]+), (0x[0-9A-F]+), "([^"]+)"(?:, (\w+))? \}', table)]


def test_writable_never_list_file_opens_nothing(tap):
    """An allowlist that lists every never-list register and the PCI configuration header as
    writable, with full masks: no write gets through, and only the write-only entries (the TSC,
    TjMax, TDP and turbo levels, HWP capabilities) and the header can be read."""
    entries = never_list()
    tap.ok(len(entries) > 100 and any(e[2] == "IA32_TIME_STAMP_COUNTER" and e[3] for e in entries),
           "the never-list is read from the source (%d entries)" % len(entries))
    d = t.workdir()
    allow = os.path.join(d, "allowlists")
    os.mkdir(allow)
    lines = ["models skx clx"]
    for i, (first, last, name, _) in enumerate(entries):
        lines.append("msr 0x%x-0x%x 0xffffffffffffffff thread core-pmu HOLE%d" % (first, last, i))
    for device in ("2042", "2046", "204a"):
        lines.append("pci 8086:%s 0x00-0x3C 4 0xffffffff package uncore-imc PCI_HEADER" % device)
        lines.append("pci 8086:%s 0xF4 4 0x103 package uncore-imc IMC_PMON_BOX_CTL" % device)
    with open(os.path.join(allow, "holes.conf"), "w") as f:
        f.write("\n".join(lines) + "\n")
    m = t.FakeMachine(os.path.join(d, "root"), "skx", sockets=1, cores=2, smt=False)
    dm = t.Daemon(d, ["--root=" + m.root], allowlist_dir=allow)
    try:
        log = dm.log()
        tap.ok("IA32_TIME_STAMP_COUNTER from the built-in never-list; writes for it will be refused" in log
               and "of the PCI configuration header" in log, "start-up warns about every hole the file tries", log)
        c = t.Client(dm.socket)
        c.call("lease", cpus=[0, 1])
        leaked = []
        for first, last, name, write_only in entries:
            for reg in sorted({first, last}):
                w = c.batch([["w", 0, reg, 0x5A5A]])
                if w.get("ok") or w["error"]["name"] != "reg-forbidden" or name not in w["error"]["reason"]:
                    leaked.append(("write", hex(reg), w))
                r = c.batch([["r", 0, reg]])
                if write_only != bool(r.get("ok")) or (not r.get("ok") and r["error"]["name"] != "reg-forbidden"):
                    leaked.append(("read", hex(reg), r))
        tap.eq(leaked, [], "no never-list write gets through, and only write-only entries are read")
        tap.eq(m.msr(0, 0x10), 0, "the TSC was never written")
        units = c.call("hello")["units"]
        u, bdf = units[0][0], units[0][1]
        for offset in (0x00, 0x04, 0x10, 0x3C):
            r = c.batch([["pw", u, offset, 0]])
            tap.ok(not r["ok"] and r["error"]["name"] == "reg-forbidden"
                   and "configuration header" in r["error"]["reason"],
                   "writing config header offset 0x%x is refused" % offset, r)
        tap.eq(m.pci(bdf, 0x00), 0x20428086, "the header's IDs were never written")
        r = c.batch([["pr", u, 0x00], ["pw", u, 0xF4, 0x103]])
        tap.eq((r["ok"], r["values"][0]), (True, 0x20428086), "the header reads, and registers past it are written")
    finally:
        dm.stop()


def test_pci_units(tap):
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "skx", sockets=2, cores=2, smt=False)
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        c = t.Client(dm.socket)
        units = c.call("hello")["units"]
        r = c.batch([["pw", units[0][0], 0xF4, 0x103]])
        tap.eq(r.get("error", {}).get("name"), "no-lease", "writing a unit without leases is refused")
        c.call("lease", cpus=[0])
        r = c.batch([["pw", units[0][0], 0xF4, 0x103]])
        tap.ok(r.get("error", {}).get("name") == "no-lease" and "every CPU of package 0" in r["error"]["reason"],
               "writing a unit needs leases on its whole package", r)
        c.call("lease", cpus=[0, 1])
        u = units[0]
        bdf = u[1]
        m.set_pci(bdf, 0xA0, 0x0000123456789ABC, width=8)
        r = c.batch([["pr", u[0], 0xA0]])
        tap.eq(r["values"], [0x123456789ABC], "a 48-bit IMC counter reads as two dwords, low first")
        r = c.batch([["pw", u[0], 0xD8, 0xFFFFFFFF]])
        tap.eq(m.pci(bdf, 0xD8), 0xFFC6FFFF, "IMC control writes are masked (no overflow-enable bit 20)")
        r = c.batch([["pw", u[0], 0xF4, 0x103]])
        tap.eq(m.pci(bdf, 0xF4), 0x103, "the box control takes reset and freeze bits")
        r = c.batch([["pw", u[0], 0xA0, 0]])
        tap.eq(r["error"]["name"], "read-only", "IMC counters are read-only")
        r = c.batch([["pr", u[0], 0xA4]])
        tap.eq(r["error"]["name"], "reg-not-allowed", "the middle of an 8-byte counter is refused")
        r = c.batch([["pr", u[0], 0x00]])
        tap.eq(r["error"]["name"], "reg-not-allowed", "the config header is refused")
        rc, out, err = t.run_cli([t.PMUGATE, "read", "-u", "0-1", "IMC_PMON_CTR0", "IMC_PMON_BOX_CTL"], dm.socket)
        tap.ok(rc == 0 and "0x0000123456789abc" in out and out.count("\n") == 4, "pmugate read -u reads PCI registers",
               out + err)
    finally:
        dm.stop()


def test_device_errors_per_op(tap):
    d, m, dm = spr()
    try:
        # A register the device cannot read (EOF in the fake, #GP on hardware): EIO for that op only.
        with open(m.path("dev/cpu/3/msr"), "r+b") as f:
            f.truncate(0x10)
        c = t.Client(dm.socket)
        c.call("lease", cpus=[3])
        r = c.batch([["r", 2, PMC0], ["r", 3, PMC0], ["w", 3, EVTSEL0, 1], ["r", 1, PMC0]])
        tap.eq(r["status"], [0, -5, -5, 0], "EIO is reported per op while the rest of the batch succeeds")
        rc, out, err = t.run_cli([t.PMUGATE, "read", "-c", "2-3", "IA32_PMC0"], dm.socket)
        tap.ok(rc == 1 and "Input/output error" in out and "cpu 2" in out, "the CLI prints per-op errors and fails",
               out + err)
    finally:
        dm.stop()


def leases_ended(dm, timeout=10):
    """The daemon ends a lease when it sees the holder's connection close, which can be a moment
    after the holder exited."""
    c = t.Client(dm.socket)
    deadline = time.time() + timeout
    while c.call("status")["leases"] and time.time() < deadline:
        time.sleep(0.01)
    c.close()


def test_cli(tap):
    d, m, dm = spr()
    try:
        s = dm.socket
        m.set_msr(0, 0x309, 42)
        rc, out, err = t.run_cli([t.PMUGATE, "read", "-c", "0", "IA32_FIXED_CTR0", "0x309", "0x777"], s)
        tap.ok(rc == 1 and "refused" in err and "0x309" not in out, "a refused register fails the whole read", out + err)
        rc, out, err = t.run_cli([t.PMUGATE, "read", "-c", "0", "IA32_FIXED_CTR0", "0x309"], s)
        tap.ok(rc == 0 and out.count("0x000000000000002a") == 2, "names and numbers address the same register",
               out + err)
        probe = ("import struct,sys\n"
                 "def rd(cpu, reg):\n"
                 "    f = open('%s/dev/cpu/%%d/msr' %% cpu, 'rb'); f.seek(reg); return struct.unpack('<Q', f.read(8))[0]\n"
                 "ok = [rd(c, 0x187) for c in range(4)] == [0x43003C, 0x43003C, 0, 0x43003C] and rd(3, 0xC2) == 100\n"
                 "sys.exit(0 if ok else 7)\n" % m.root)
        rc, out, err = t.run_cli([t.PMUGATE, "write", "-c", "0-1,3", "IA32_PERFEVTSEL1=0x43003c", "IA32_PMC1=100",
                                  "--", "/usr/bin/python3", "-c", probe], s)
        tap.ok(rc == 0 and out.count("(written)") == 6,
               "write -- CMD: hex and decimal values on a CPU list are in place while the command runs", out + err)
        leases_ended(dm)
        tap.eq([m.msr(cpu, 0x187) for cpu in range(4)] + [m.msr(3, 0xC2)], [0, 0, 0, 0, 0],
               "when write exits, its lease ends and every register is restored")
        rc, out, err = t.run_cli([t.PMUGATE, "write", "-c", "0", "IA32_PMC1=5", "--", "/bin/sh", "-c", "exit 42"], s)
        tap.eq(rc, 42, "write -- CMD passes the command's exit status through")
        m.set_msr(2, 0x186, 0x1234)
        rc, out, err = t.run_cli([t.PMUGATE, "write", "-c", "2", "IA32_PERFEVTSEL0=0x43003c"], s)
        leases_ended(dm)
        tap.ok(rc == 0 and m.msr(2, 0x186) == 0x1234, "write without a command restores the old value on exit",
               (rc, out, err, hex(m.msr(2, 0x186))))
        for argv, desc in [
            (["read", "-c", "0", "NO_SUCH_REG"], "an unknown register name"),
            (["read", "-c", "0-", "0xc1"], "a bad CPU list"),
            (["write", "-c", "0", "IA32_PMC0=12z"], "a bad value"),
            (["write", "-c", "0", "IA32_PMC0"], "a write without a value"),
            (["read", "IA32_PMC0"], "a read without -c or -u"),
            (["frobnicate"], "an unknown command"),
        ]:
            rc, out, err = t.run_cli([t.PMUGATE] + argv, s)
            tap.ok(rc == 2 and err.strip() and "\n" not in err.strip(), "%s is a usage error with one line" % desc,
                   (rc, out, err))
        rc, out, err = t.run_cli([t.PMUGATE, "read", "-c", "9", "IA32_PMC0"], s)
        tap.ok(rc == 1 and "CPU 9 does not exist" in err and "[no-such-cpu]" in err, "an unknown CPU is named", err)
        rc, out, err = t.run_cli([t.PMUGATE, "info", "--json"], s)
        info = json.loads(out)
        tap.ok(rc == 0 and info["cpu"]["key"] == "spr" and info["caller"]["role"] == "admin" and
               len(info["cpus"]) == 4 and any(r["name"] == "MSR_PERF_METRICS" for r in info["registers"]),
               "info --json describes machine, registers and caller", out)
        rc, out, err = t.run_cli([t.PMUGATE, "--socket=" + os.path.join(d, "nope.sock"), "info"], s)
        tap.ok(rc == 1 and "is pmugated running" in err, "a missing daemon says what to do", err)
    finally:
        dm.stop()


def test_audit(tap):
    d, m, dm = spr()
    try:
        c = t.Client(dm.socket)
        c.call("lease", cpus=[2, 3])
        c.batch([["w", 2, EVTSEL0, 0x43003C], ["w", 3, EVTSEL0, 0x43003C], ["r", 0, PMC0]])
        c.batch([["r", 0, DS_AREA]])
        rc, _, _ = t.run_cli([t.PMUGATE, "read", "-c", "0", "IA32_PMC0"], dm.socket, uid=4242, gid=4242)
        log = dm.audit()
        writes = [l for l in log.splitlines() if "event=write" in l]
        denies = [l for l in log.splitlines() if "event=deny" in l]
        tap.ok(len(writes) == 1 and "count=2" in writes[0] and "cpus=2-3" in writes[0] and "regs=0x186" in writes[0]
               and "uid=0" in writes[0], "a write batch is one audit record with CPUs, registers and count", log)
        tap.ok(any("code=reg-forbidden" in l and "regs=0x600" in l for l in denies), "a never-list denial is audited", log)
        tap.ok(any("uid=4242" in l and "code=not-authorized" in l for l in denies), "an unauthorized uid is audited",
               log)
    finally:
        dm.stop()


def test_audit_rate_limit(tap):
    d, m, dm = spr()
    try:
        c = t.Client(dm.socket)
        for _ in range(200):
            c.batch([["r", 0, DS_AREA]])
        rc, out, err = t.run_cli([t.PMUGATECTL, "status"], dm.socket)
        log = dm.audit()
        denies = [l for l in log.splitlines() if "event=deny" in l]
        tap.ok(len(denies) <= 25, "a denial storm is rate limited in the log (%d records)" % len(denies))
        tap.ok(rc == 0 and "held back by the rate limit" in out and " 180 held back" in out,
               "pmugatectl status counts what was held back", out + err)
        tap.ok(c.call("hello")["ok"], "the daemon keeps serving through a denial storm")
        dm.stop()
        log = dm.audit()
        tap.ok("event=suppressed" in log and "count=180" in log, "held-back records are reported, never silent", log)
    finally:
        dm.stop()


sys.exit(t.Tap().run([test_read_and_write, test_refusals_run_nothing, test_never_list_beats_allowlist,
                      test_writable_never_list_file_opens_nothing, test_pci_units,
                      test_device_errors_per_op, test_cli, test_audit, test_audit_rate_limit]))
