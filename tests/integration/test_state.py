#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The state directory as an attacker who could write it leaves it: planted lease journals
(never-list registers, bits outside the write mask, CPUs and units the machine does not have,
bad checksums, another boot, symlinks, FIFOs, oversized files, other owners, hard links), a
state or runtime directory that is a symlink, someone else's or writable by others, and a
planted grants file. Then what happens when the state directory cannot be written: a grant is
not made, a revoke ends the grant and says it is not saved, a failed restore keeps its
journal for the next start. Recovery never writes what an allowed client could not."""

import os
import pwd
import re
import shutil
import stat
import sys
import zlib

import pmugatetest as t

NOBODY = pwd.getpwnam("nobody")
OTHER_UID = t.UNPRIVILEGED_UID
EVTSEL0, PMC0, FIXED_CTRL = 0x186, 0xC1, 0x38D
LSTAR, DS_AREA, DEBUGCTL = 0xC0000082, 0x600, 0x1D9
EVTSEL_MASK = 0xFFC7FFFF            # intel-spr.conf: no PC (19), INT (20) or AnyThread (21)
IMC_CTL0 = 0xD8                      # intel-skx.conf: IMC_PMON_CTL, 4 bytes, mask 0xFFC6FFFF
IMC_CTL_MASK = 0xFFC6FFFF
IMC_CTL_OFF = (1 << 20) | (1 << 22)      # overflow enable and EN: off in the clean state
EN = 1 << 22
PLANTED = 0x4141414141414141
BEFORE = 0x1111
SOURCE_SERVICE = os.path.join(t.SOURCE, "systemd", "pmugated.service.in")
SETPRIV = shutil.which("setpriv")


def record(text, crc=None):
    """One sealed line, as the daemon writes it; crc overrides the checksum."""
    return "%s crc=%08x\n" % (text, zlib.crc32(text.encode()) if crc is None else crc)


def journal(boot, cpu, entries, uid=OTHER_UID):
    """A journal's text: header, then entries (text to seal, or a finished line)."""
    out = record("pmugate-journal 1 boot=%s cpu=%d uid=%d pid=4321 role=user job=-" % (boot, cpu, uid))
    for e in entries:
        out += e if e.endswith("\n") else record(e)
    return out


def msr(cpu, reg, value, flags=0):
    return "msr %d 0x%x 8 %d 0x%x" % (cpu, reg, flags, value)


def grants_text(boot, lines):
    out = record("pmugate-grants 1 boot=%s" % boot)
    for line in lines:
        out += line if line.endswith("\n") else record(line)
    return out


def state_dir(d, owner=NOBODY.pw_uid, mode=0o700):
    """The state directory as a previous run of the daemon leaves it."""
    run = os.path.join(t.runtime_parent(d), "run")
    os.makedirs(run, exist_ok=True)
    state = os.path.join(run, "state")
    os.makedirs(state, exist_ok=True)
    os.chown(state, owner, owner)
    os.chmod(state, mode)
    return state


def plant(d, name, text, owner=NOBODY.pw_uid, mode=0o600):
    path = os.path.join(state_dir(d), name)
    with open(path, "w") as f:
        f.write(text)
    os.chown(path, owner, owner)
    os.chmod(path, mode)
    return path


def machine(d, model="spr", **kw):
    kw.setdefault("sockets", 1)
    kw.setdefault("cores", 2)
    kw.setdefault("smt", False)
    return t.FakeMachine(os.path.join(d, "root"), model, **kw)


def audit_refusals(dm):
    return [line for line in dm.audit().splitlines() if "event=recover" in line and "verdict=refused" in line]


def refusal(dm, code, reg=None):
    """The audit record refusing a journal entry (or file) with this code, or None."""
    for line in audit_refusals(dm):
        if ("code=%s" % code) in line and (reg is None or ("regs=0x%x" % reg) in line):
            return line
    return None


def status_grants(dm):
    return sorted(tuple(g) for g in t.Client(dm.socket).call("status")["grants"])


def start_refused(d, args, expect):
    dm = t.Daemon(d, args, expect_ready=False)
    try:
        rc = dm.wait_exit()
    finally:
        dm.stop()
    return rc != 0 and expect in dm.log(), dm.log()


def test_never_list_entries(tap):
    d = t.workdir()
    m = machine(d)
    for reg in (LSTAR, DS_AREA, DEBUGCTL):
        m.set_msr(0, reg, BEFORE)
    m.set_msr(0, EVTSEL0, 0x43003C)
    path = plant(d, "lease-cpu0", journal(m.boot_id, 0, [msr(0, LSTAR, PLANTED), msr(0, DS_AREA, PLANTED),
                                                         msr(0, DEBUGCTL, PLANTED), msr(0, EVTSEL0, 0x11)]))
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        tap.eq([m.msr(0, r) for r in (LSTAR, DS_AREA, DEBUGCTL)], [BEFORE] * 3,
               "LSTAR, DS_AREA and DEBUGCTL from a planted journal are never written")
        for reg, name in ((LSTAR, "MSR_LSTAR"), (DS_AREA, "IA32_DS_AREA"), (DEBUGCTL, "IA32_DEBUGCTL")):
            rec = refusal(dm, "never-list", reg)
            tap.ok(rec is not None and name in rec and "cpus=0" in rec,
                   "an audit record refuses %s as on the never-list" % name, dm.audit())
        tap.eq(m.msr(0, EVTSEL0), 0x11, "the journal's allowed entry is restored")
        tap.ok(not os.path.exists(path), "the journal is removed once what it may restore is back")
        tap.eq(t.Client(dm.socket).call("hello").get("cpu", {}).get("key"), "spr", "and the daemon serves")
    finally:
        dm.stop()


def test_write_mask(tap):
    d = t.workdir()
    m = machine(d)
    # INT, AnyThread and PC: bits clients cannot write. (A fake MSR file is addressed by byte:
    # registers closer than 8 apart overlap, hence one EVTSEL per CPU.)
    outside = (1 << 19) | (1 << 20) | (1 << 21)
    m.set_msr(0, EVTSEL0, outside)
    m.set_msr(1, EVTSEL0, 0)
    m.set_msr(0, PMC0, 12345)
    planted = 0x43003C | outside
    plant(d, "lease-cpu0", journal(m.boot_id, 0, [msr(0, EVTSEL0, 0), msr(1, EVTSEL0, planted),
                                                   msr(0, PMC0, PLANTED, flags=1)]))
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        tap.eq(m.msr(1, EVTSEL0), planted & EVTSEL_MASK & ~EN,
               "an EVTSEL entry with INT, AnyThread and PC set is restored only within the write mask, "
               "and never with EN (the clean state)")
        tap.eq(m.msr(0, EVTSEL0), 0,
               "bits outside the mask take the clean value, not what they hold nor what the journal says")
        tap.eq(m.msr(0, PMC0), 0, "a counter is zeroed, not set to the journal's value")
        tap.eq(audit_refusals(dm), [], "nothing in that journal is refused")
    finally:
        dm.stop()


def test_machine_checks(tap):
    d = t.workdir()
    m = machine(d, "skx", offline=[1])
    unit = m.units[0]
    m.set_msr(1, EVTSEL0, BEFORE)
    m.set_pci(unit, IMC_CTL0, 0x00380000)
    plant(d, "lease-cpu0", journal(m.boot_id, 0, [
        msr(99, EVTSEL0, 0x11),                                   # no such CPU
        msr(1, EVTSEL0, 0x11),                                    # offline
        "pci 5000 0x%x 4 0 0x%x" % (IMC_CTL0, 0x11),              # no such unit
        "pci 0 0x%x 8 0 0x%x" % (IMC_CTL0, 0x11),                 # wrong width
        "pci 0 0x%x 4 0 0x%x" % (IMC_CTL0, 0xFFFFFFFF),          # restored within the mask
    ]))
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        tap.ok(refusal(dm, "no-such-cpu") is not None, "an entry for a CPU the machine does not have is refused",
               dm.audit())
        tap.ok(refusal(dm, "cpu-offline") is not None and m.msr(1, EVTSEL0) == BEFORE,
               "an entry for an offline CPU is refused and not written", dm.audit())
        tap.ok(refusal(dm, "no-such-unit") is not None, "an entry for a PCI unit index out of range is refused",
               dm.audit())
        tap.ok(refusal(dm, "bad-width") is not None, "a PCI entry with another access width is refused", dm.audit())
        tap.eq(m.pci(unit, IMC_CTL0), 0xFFFFFFFF & IMC_CTL_MASK & ~IMC_CTL_OFF,
               "a valid PCI entry is restored within its write mask, the rest and its enable bits clean")
    finally:
        dm.stop()


def test_checksum_and_boot(tap):
    d = t.workdir()
    m = machine(d)
    m.set_msr(0, EVTSEL0, BEFORE)
    m.set_msr(1, EVTSEL0, BEFORE)
    text = msr(0, EVTSEL0, 0x22)
    plant(d, "lease-cpu0", journal(m.boot_id, 0, [record(text, crc=zlib.crc32(text.encode()) ^ 1)]))
    other = plant(d, "lease-cpu1", journal("0c0ffee0-0000-4000-8000-000000000000", 1, [msr(1, EVTSEL0, 0x22)]))
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        tap.ok(m.msr(0, EVTSEL0) == BEFORE and refusal(dm, "bad-checksum") is not None,
               "a record whose checksum does not match is refused and audited", dm.audit())
        tap.eq(m.msr(1, EVTSEL0), BEFORE, "a journal of another boot restores nothing")
        tap.ok(not os.path.exists(other) and "before the machine last booted" in dm.log(),
               "it is discarded, with a log line", dm.log())
    finally:
        dm.stop()


def test_unfit_journal_files(tap):
    d = t.workdir()
    m = machine(d, cores=4)
    for cpu in range(4):
        m.set_msr(cpu, EVTSEL0, BEFORE)
    # Each would restore EVTSEL0 to 0x22 if the daemon used it.
    outside = os.path.join(d, "elsewhere")
    with open(outside, "w") as f:
        f.write(journal(m.boot_id, 0, [msr(0, EVTSEL0, 0x22)]))
    state = state_dir(d)
    os.symlink(outside, os.path.join(state, "lease-cpu0"))
    os.mkfifo(os.path.join(state, "lease-cpu1"))
    os.chown(os.path.join(state, "lease-cpu1"), NOBODY.pw_uid, NOBODY.pw_gid)
    big = journal(m.boot_id, 2, [msr(2, EVTSEL0, 0x22)] * 2000)
    plant(d, "lease-cpu2", big)
    plant(d, "lease-cpu3", journal(m.boot_id, 3, [msr(3, EVTSEL0, 0x22)]), owner=OTHER_UID)
    dm = t.Daemon(d, ["--root=" + m.root])    # waits at most 10 s for READY=1
    try:
        tap.ok(dm.ready, "a FIFO journal does not block start-up")
        tap.eq([m.msr(cpu, EVTSEL0) for cpu in range(4)], [BEFORE] * 4,
               "a symlinked, FIFO, oversized or foreign-owned journal restores nothing")
        files = [line for line in audit_refusals(dm) if "code=journal-file" in line]
        for name, why in (("lease-cpu0", "symbolic link"), ("lease-cpu1", "not a regular file"),
                          ("lease-cpu2", "more than the"), ("lease-cpu3", "owned by uid %d" % OTHER_UID)):
            tap.ok(any(name in line and why in line for line in files), "%s (%s) is refused with an audit record"
                   % (name, why), "\n".join(files))
        tap.eq(os.readlink(os.path.join(state, "lease-cpu0")), outside, "the symlink is left alone")
        with open(outside) as f:
            tap.ok("0x22" in f.read(), "and so is the file it points to")
    finally:
        dm.stop()


def test_hard_links(tap):
    d = t.workdir()
    m = machine(d)
    m.set_msr(0, EVTSEL0, BEFORE)
    # outside the state directory, on its file system (hard links do not cross one)
    outside = t.runtime_parent(d)
    journal_outside, grants_outside = os.path.join(outside, "root-journal"), os.path.join(outside, "root-grants")
    with open(journal_outside, "w") as f:
        f.write(journal(m.boot_id, 0, [msr(0, EVTSEL0, 0x22)]))
    with open(grants_outside, "w") as f:
        f.write(grants_text(m.boot_id, ["grant linked %d -" % OTHER_UID]))
    for path, name in ((journal_outside, "lease-cpu0"), (grants_outside, "grants")):
        os.chmod(path, 0o600)
        os.link(path, os.path.join(state_dir(d), name))
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        tap.eq((os.stat(journal_outside).st_uid, os.stat(grants_outside).st_uid), (0, 0),
               "files hard-linked into the state directory are not handed to the daemon's user")
        tap.ok(m.msr(0, EVTSEL0) == BEFORE and refusal(dm, "journal-file") is not None,
               "a hard-linked journal is not read", dm.audit())
        tap.ok(status_grants(dm) == [] and "2 hard links" in dm.log(), "nor a hard-linked grants file", dm.log())
    finally:
        dm.stop()


def test_state_dir_refusals(tap):
    d = t.workdir()
    m = machine(d)
    os.makedirs(os.path.join(t.runtime_parent(d), "run"))
    elsewhere = os.path.join(d, "elsewhere")
    os.mkdir(elsewhere, 0o700)
    os.symlink(elsewhere, os.path.join(t.runtime_parent(d), "run", "state"))
    ok, log = start_refused(d, ["--root=" + m.root], "is a symbolic link")
    tap.ok(ok, "a state directory that is a symlink is refused at start, saying so", log)

    d = t.workdir()
    state_dir(d, owner=OTHER_UID)
    ok, log = start_refused(d, ["--root=" + m.root], "belongs to uid %d" % OTHER_UID)
    tap.ok(ok, "a state directory of another uid is refused at start, saying so", log)

    d = t.workdir()
    state_dir(d, mode=0o777)
    ok, log = start_refused(d, ["--root=" + m.root], "has mode 0777; it must be 0700")
    tap.ok(ok, "a state directory of mode 0777 is refused at start, saying what to fix", log)

    d = t.workdir()
    os.makedirs(os.path.join(t.runtime_parent(d), "run"))
    os.chmod(os.path.join(t.runtime_parent(d), "run"), 0o777)
    ok, log = start_refused(d, ["--root=" + m.root], "chmod go-w")
    tap.ok(ok, "a runtime directory others may write is refused at start", log)

    d = t.workdir()
    m2 = machine(d)
    os.unlink(m2.path("proc/sys/kernel/random/boot_id"))
    ok, log = start_refused(d, ["--root=" + m2.root], "Cannot read the boot id")
    tap.ok(ok, "without the kernel's boot id start-up is refused", log)

    d = t.workdir()
    real = os.path.join(d, "real-run")
    os.mkdir(real)
    os.symlink(real, os.path.join(t.runtime_parent(d), "run"))
    ok, log = start_refused(d, ["--root=" + m.root], "is a symbolic link")
    tap.ok(ok, "a runtime directory that is a symlink is refused at start", log)


def test_planted_grants(tap):
    d = t.workdir()
    m = machine(d)
    outside = os.path.join(d, "elsewhere")
    with open(outside, "w") as f:
        f.write(grants_text(m.boot_id, ["grant evil %d 0-1" % OTHER_UID]))
    os.symlink(outside, os.path.join(state_dir(d), "grants"))
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        tap.ok(status_grants(dm) == [] and "symbolic link" in dm.log(),
               "a grants file that is a symlink is not read, with a log line", dm.log())
    finally:
        dm.stop()

    d = t.workdir()
    plant(d, "grants", grants_text(m.boot_id, ["grant evil %d 0-1" % OTHER_UID]), owner=OTHER_UID)
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        tap.ok(status_grants(dm) == [] and "owned by uid %d" % OTHER_UID in dm.log(),
               "a grants file of another uid is not read", dm.log())
    finally:
        dm.stop()

    d = t.workdir()
    bad_crc = "grant crc %d -" % OTHER_UID
    plant(d, "grants", grants_text(m.boot_id, [
        "grant good %d 0-1" % OTHER_UID,
        "garbage\n",
        "grant spaces in job 1 -",
        "grant bad/job %d -" % OTHER_UID,
        "grant uid 4294967295 -",
        "grant cpus %d 0-63" % OTHER_UID,
        "grant letters %d 1a" % OTHER_UID,
        record(bad_crc, crc=zlib.crc32(bad_crc.encode()) ^ 0x10),
        "grant good %d -" % (OTHER_UID + 1),
        "grant cgroup %d -" % (OTHER_UID + 2),
    ]))
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        tap.eq(status_grants(dm), [("cgroup", OTHER_UID + 2, ""), ("good", OTHER_UID, "0-1")],
               "of a grants file with garbage, bad ids, uids, CPUs, a bad checksum and a duplicate, only valid lines load")
        refused_lines = re.findall(r"Grants file line (\d+)", dm.log())
        tap.eq(refused_lines, [str(n) for n in range(3, 11)], "each refused line is logged with its number")
    finally:
        dm.stop()

    d = t.workdir()
    plant(d, "grants", grants_text("0c0ffee0-0000-4000-8000-000000000000", ["grant old %d -" % OTHER_UID]))
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        tap.ok(status_grants(dm) == [] and "before the machine last booted" in dm.log(),
               "grants of another boot are not restored", dm.log())
    finally:
        dm.stop()


def test_grants_tmp_symlink(tap):
    d = t.workdir()
    m = machine(d)
    target = os.path.join(d, "target")
    with open(target, "w") as f:
        f.write("untouched\n")
    os.chmod(target, 0o666)
    os.symlink(target, os.path.join(state_dir(d), "grants.tmp"))
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        r = t.Client(dm.socket).call("grant", job="7", uid=OTHER_UID)
        with open(target) as f:
            tap.ok(r.get("ok") and f.read() == "untouched\n",
                   "saving grants never writes through a symlink planted as the temporary file", r)
    finally:
        dm.stop()


def test_unwritable_state(tap):
    d = t.workdir()
    m = machine(d)
    dm = t.Daemon(d, ["--root=" + m.root])
    state = os.path.join(dm.runtime_dir, "state")
    try:
        c = t.Client(dm.socket)
        tap.ok(c.call("grant", job="kept", uid=OTHER_UID).get("ok"), "a grant is saved")
        tap.ok(c.call("grant", job="revoked", uid=OTHER_UID + 1).get("ok"), "another one too")
        os.chmod(state, 0o500)
        r = c.call("grant", job="lost", uid=OTHER_UID + 2)
        tap.ok(not r.get("ok") and r["error"]["name"] == "internal" and "was not granted" in r["error"]["reason"],
               "a grant whose save fails is refused, saying it was not granted", r)
        tap.ok(("lost", OTHER_UID + 2, "") not in status_grants(dm), "and is not held")
        r = c.call("revoke", job="revoked")
        tap.ok(not r.get("ok") and "come back" in r["error"]["reason"],
               "a revoke whose save fails is an error saying the grant would come back after a restart", r)
        tap.ok(("revoked", OTHER_UID + 1, "") not in status_grants(dm), "but its access ends now")
        tap.ok("event=revoke verdict=unsaved" in dm.audit() and "event=grant verdict=failed" in dm.audit(),
               "both are audited", dm.audit())
        os.chmod(state, 0o700)
        r = c.call("revoke", job="revoked")
        tap.ok(r.get("ok") and not r["revoked"], "repeated once the directory is writable, the revoke saves", r)
    finally:
        dm.stop()
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        tap.eq(status_grants(dm), [("kept", OTHER_UID, "")],
               "after a restart the refused grant is absent and the revoked one stays revoked")
    finally:
        dm.stop()


def test_failed_restore_kept(tap):
    d = t.workdir()
    sim = os.path.join(t.SOURCE, "policy", "sim", "clx-faults.conf")
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    # clx-faults.conf: IA32_PERFEVTSEL3 (0x189) fails with EIO on CPU 1.
    path = plant(d, "lease-cpu1", journal(boot, 1, [msr(1, EVTSEL0, 0x11), msr(1, 0x189, 0x11)]))
    args = ["--backend=sim", "--sim-model=clx", "--sim-config=" + sim]
    dm = t.Daemon(d, args)
    try:
        tap.ok(os.path.exists(path) and "Keeping lease journal lease-cpu1" in dm.log(),
               "a journal whose restore failed stays for the next start, with a log line", dm.log())
        v = t.Client(dm.socket).batch([["r", 1, EVTSEL0]])
        tap.eq(v.get("values"), [0x11], "what could be restored was")
    finally:
        dm.stop()
    dm = t.Daemon(d, args)
    try:
        tap.ok(os.path.exists(path) and "Keeping lease journal lease-cpu1" in dm.log(),
               "the next start tries it again", dm.log())
    finally:
        dm.stop()


def unit_caps():
    with open(SOURCE_SERVICE) as f:
        match = re.search(r"^CapabilityBoundingSet=(.*)$", f.read(), re.M)
    return match.group(1).split()


def test_restart_without_dac_override(tap):
    desc = "with only the unit's capabilities, a restarted daemon reads its state and restores"
    if not SETPRIV or os.geteuid() != 0:
        tap.ok(True, "%s # SKIP needs root and setpriv" % desc)
        return
    keep = ",".join("+" + c[len("CAP_"):].lower() for c in unit_caps())
    wrapper = [SETPRIV, "--bounding-set=-all," + keep, "--inh-caps=-all", "--ambient-caps=-all", "--no-new-privs",
               "--"]
    d = t.workdir()
    m = machine(d)
    m.set_msr(1, EVTSEL0, 0x11)
    # Without CAP_CHOWN root cannot give a state directory it made to the daemon's user: it
    # must be created for that user, as tmpfiles.d does.
    os.makedirs(os.path.join(t.runtime_parent(d), "run", "state"))
    os.chown(os.path.join(t.runtime_parent(d), "run", "state"), 0, 0)
    os.chmod(os.path.join(t.runtime_parent(d), "run", "state"), 0o700)
    dm = t.Daemon(d, ["--root=" + m.root], wrapper=wrapper, expect_ready=False)
    try:
        tap.ok(dm.wait_exit() != 0 and "create it for that user (systemd-tmpfiles --create" in dm.log(),
               "with the unit's capabilities, a state directory of root's is refused, saying what to do",
               dm.log())
    finally:
        dm.stop()
    state_dir(d)
    dm = t.Daemon(d, ["--root=" + m.root], wrapper=wrapper)
    try:
        c = t.Client(dm.socket)
        c.call("grant", job="9", uid=OTHER_UID)
        c.call("lease", cpus=[1])
        c.batch([["w", 1, EVTSEL0, 0x43003C]])
        dm.proc.kill()
        dm.wait_exit()
    finally:
        dm.stop()
    st = os.stat(os.path.join(dm.runtime_dir, "state"))
    tap.ok(st.st_uid == NOBODY.pw_uid and stat.S_IMODE(st.st_mode) == 0o700,
           "the crashed daemon left a 0700 state directory of its user")
    dm = t.Daemon(d, ["--root=" + m.root], wrapper=wrapper)
    try:
        tap.ok(m.msr(1, EVTSEL0) == 0x11 and status_grants(dm) == [("9", OTHER_UID, "")], desc, dm.log())
    finally:
        dm.stop()


sys.exit(t.Tap().run([test_never_list_entries, test_write_mask, test_machine_checks, test_checksum_and_boot,
                      test_unfit_journal_files, test_hard_links, test_state_dir_refusals,
                      test_planted_grants, test_grants_tmp_symlink, test_unwritable_state, test_failed_restore_kept,
                      test_restart_without_dac_override]))
