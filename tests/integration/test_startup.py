#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Start-up: flags, machine discovery under --root, and refusals that say what to do."""

import os
import shutil
import socket
import stat
import subprocess
import sys

import pmugatetest as t


def run_daemon(args, timeout=10):
    p = subprocess.run([t.PMUGATED] + args, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def test_help_and_version(tap):
    rc, out = run_daemon(["--help"])
    tap.ok(rc == 0 and "--backend=dev|sim" in out and "--root=DIR" in out, "--help lists the flags", out)
    rc, out = run_daemon(["--version"])
    tap.ok(rc == 0 and out.startswith("pmugated "), "--version prints the version", out)
    rc, out = run_daemon(["--backend=bogus"])
    tap.ok(rc != 0 and "Unknown backend" in out, "an unknown backend is refused", out)
    rc, out = run_daemon(["--backend=sim"])
    tap.ok(rc != 0 and "--sim-model" in out, "--backend=sim needs --sim-model", out)
    rc, out = run_daemon(["--sim-model=spr"])
    tap.ok(rc != 0 and "need --backend=sim" in out, "--sim-model without --backend=sim is refused", out)
    rc, out = run_daemon(["extra-argument"])
    tap.ok(rc != 0, "a stray argument is refused", out)


def refused(tap, d, args, expect, desc, **kw):
    dm = t.Daemon(d, args, expect_ready=False, **kw)
    rc = dm.wait_exit()
    log = dm.log()
    dm.stop()
    tap.ok(rc != 0 and expect in log, desc, log)


def test_refusals(tap):
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=2)
    os.unlink(m.path("dev/cpu/1/msr"))
    refused(tap, d, ["--root=" + m.root], "modprobe msr", "a missing msr device stops start-up with what to do")

    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "unknown", sockets=1, cores=2)
    refused(tap, d, ["--root=" + m.root], "is not supported", "an unknown CPU model stops start-up")

    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=2, vendor="AuthenticAMD")
    refused(tap, d, ["--root=" + m.root], "AuthenticAMD", "an AMD CPU is refused, naming it")

    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=2)
    empty = os.path.join(d, "allowlists")
    os.mkdir(empty)
    shutil.copy(os.path.join(t.ALLOWLISTS, "intel-skx.conf"), empty)
    refused(tap, d, ["--root=" + m.root], "No allowlist", "a model without an allowlist stops start-up",
            allowlist_dir=empty)

    d = t.workdir()
    bad = os.path.join(d, "allowlists")
    os.mkdir(bad)
    with open(os.path.join(bad, "broken.conf"), "w") as f:
        f.write("models spr\nmsr 0x186 0xffff thread core-pmu\n")
    refused(tap, d, ["--root=" + m.root], "broken.conf", "a broken allowlist file stops start-up, naming it",
            allowlist_dir=bad)

    d = t.workdir()
    conf = os.path.join(d, "bad.conf")
    with open(conf, "w") as f:
        f.write("[access]\nadmin_groups = 0\n[limits]\nclients = lots\n")
    refused(tap, d, ["--root=" + m.root], "bad.conf:4", "a bad config file stops start-up with its line", config=conf)

    d = t.workdir()
    refused(tap, d, ["--root=" + m.root], "does not exist", "an unknown --user stops start-up",
            user="no-such-user-pmugate")

    d = t.workdir()
    refused(tap, d, ["--root=" + m.root, "--config=" + os.path.join(d, "missing.conf")], "missing.conf",
            "an explicit --config that does not exist is an error")


def test_files_root_opens(tap):
    """The audit log and the socket are paths an admin names and root opens: nothing prepared
    there steers root's writes or gets deleted."""
    m = t.FakeMachine(os.path.join(t.workdir(), "root"), "spr", sockets=1, cores=2)
    args = ["--root=" + m.root]

    d = t.workdir()
    target = os.path.join(d, "target")
    with open(target, "w") as f:
        f.write("precious\n")
    os.symlink(target, os.path.join(d, "audit.log"))
    refused(tap, d, args, "is a symbolic link", "an audit log that is a symbolic link is refused")
    with open(target) as f:
        tap.eq(f.read(), "precious\n", "... and the file it points to is untouched")

    for desc, uid, mode, expect in [("belongs to another user", 4242, 0o600, "belongs to uid 4242"),
                                    ("others may write", 0, 0o666, "chmod go-w"),
                                    ("its group may write", 0, 0o620, "chmod go-w")]:
        d = t.workdir()
        log = os.path.join(d, "audit.log")
        with open(log, "w") as f:
            f.write("someone's\n")
        os.chown(log, uid, uid)
        os.chmod(log, mode)
        refused(tap, d, args, expect, "an audit log that %s is refused" % desc)

    d = t.workdir()
    os.mkfifo(os.path.join(d, "audit.log"))
    refused(tap, d, args, "not a regular file", "an audit log that is a FIFO is refused, without hanging")

    d = t.workdir()
    sock = os.path.join(d, "pmugate.sock")
    with open(sock, "w") as f:
        f.write("precious\n")
    refused(tap, d, args, "a regular file is there, not a socket", "a regular file at the socket path is refused")
    with open(sock) as f:
        tap.eq(f.read(), "precious\n", "... and is not deleted")

    d = t.workdir()
    sock = os.path.join(d, "pmugate.sock")
    os.symlink(target, sock)
    refused(tap, d, args, "a symbolic link is there", "a symbolic link at the socket path is refused")
    tap.ok(os.path.islink(sock) and os.path.exists(target), "... and neither it nor its target is deleted")

    # The configuration decides who may do what: one another user owns, or anyone else may
    # write, stops start-up whatever it says.
    for desc, uid, mode, expect in [("belongs to another user", 4242, 0o644, "belongs to uid 4242"),
                                    ("others may write", 0, 0o646, "writable by everybody"),
                                    ("its group may write", 0, 0o664, "writable by its group")]:
        d = t.workdir()
        conf = os.path.join(d, "pmugate.conf")
        t.write_config(conf)
        os.chown(conf, uid, uid)
        os.chmod(conf, mode)
        refused(tap, d, args, expect, "a configuration file that %s is refused" % desc, config=conf)
    d = t.workdir()
    conf = os.path.join(d, "pmugate.conf")
    os.mkfifo(conf)
    refused(tap, d, args, "not a regular file", "a configuration that is a FIFO is refused, without hanging",
            config=conf)

    # A stale socket from a crashed run is replaced; the new one is 0666 from the start, whatever
    # the umask the daemon was started with.
    d = t.workdir()
    sock = os.path.join(d, "pmugate.sock")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    stale.bind(sock)
    stale.close()
    old = os.umask(0o077)
    try:
        dm = t.Daemon(d, args)
    finally:
        os.umask(old)
    try:
        st = os.lstat(sock)
        tap.ok(stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o666,
               "a stale socket is replaced by one of mode 0666 (umask 077)", oct(st.st_mode))
        tap.ok(t.Client(sock).call("hello")["ok"], "the new socket serves")
        ok = t.in_child_as(t.UNPRIVILEGED_UID, t.UNPRIVILEGED_UID, [t.USER_GID],
                           lambda: t.Client(sock).call("hello")["ok"])
        tap.ok(ok, "an unprivileged user can connect to it")
        st = os.lstat(dm.audit_log)
        tap.ok(stat.S_IMODE(st.st_mode) & 0o137 == 0 and st.st_uid == 0, "the audit log is created 0640 for root",
               oct(st.st_mode))
    finally:
        dm.stop()


def test_no_config_file_is_the_shipped_policy(tap):
    """Without a configuration file the daemon applies the shipped pmugate.conf's policy, says
    so, and admits as users only members of pmugate-users, never everybody."""
    rc, out = run_daemon(["--help"])
    default = out.split("--config=FILE")[1].split("(default: ")[1].split(")")[0]
    if os.path.exists(default):
        tap.ok(True, "no config file: the shipped policy applies # SKIP %s exists on this host" % default)
        return
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=2)
    dm = t.Daemon(d, ["--root=" + m.root], config=False)
    try:
        log = dm.log()
        tap.ok(default + " does not exist: the defaults of the shipped pmugate.conf apply" in log
               and "admin_groups=pmugate-admin user_groups=pmugate-users" in log,
               "start-up names the missing file and the defaults in force", log)

        def as_stranger():
            return t.Client(dm.socket).recv()
        r = t.in_child_as(t.UNPRIVILEGED_UID, t.UNPRIVILEGED_UID, [], as_stranger)
        tap.ok(not r["ok"] and r["error"]["name"] == "not-authorized" and "pmugate-users" in r["error"]["reason"],
               "a uid outside pmugate-users is no user, and is refused at connect", r)
        rc, out, err = t.run_cli([t.PMUGATECTL, "status"], dm.socket)
        tap.ok(rc == 0, "root administers", out + err)
    finally:
        dm.stop()


def test_spr_two_sockets(tap):
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=2, cores=4, smt=True)
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        h = t.Client(dm.socket).call("hello")
        tap.eq(h["cpu"]["key"], "spr", "Sapphire Rapids is recognised")
        tap.eq(h["backend"], "dev", "the backend is dev")
        tap.eq(h["simulated"], False, "dev is not simulated")
        tap.eq(h["pmu"]["perf_metrics"], 2, "SPR has PERF_METRICS L1 and L2")
        cpus = {c[0]: c for c in h["cpus"]}
        tap.eq(len(cpus), 16, "16 CPUs are listed")
        for cpu in (0, 5, 8, 13):
            pkg, core, thread = m.topology(cpu)
            tap.eq((cpus[cpu][1], cpus[cpu][3], cpus[cpu][4], cpus[cpu][5]), (pkg, core, thread, True),
                   "CPU %d has package %d core %d thread %d" % (cpu, pkg, core, thread))
        tap.eq(h["units"], [], "no PCI unit is served on SPR (its IMC is MMIO)")
        names = {r[7] for r in h["registers"]}
        tap.ok({"IA32_PMC", "IA32_PERFEVTSEL", "MSR_PERF_METRICS", "IA32_PERF_GLOBAL_CTRL"} <= names,
               "hello lists the allowlisted registers", names)
        tap.eq(h["limits"]["ops_per_batch"], 131072, "hello reports the batch limit")
        limits = h["limits"]
        tap.eq((limits["results_per_message"], limits["list_entries"], limits["each_steps"]), (4096, 4096, 64),
               "and the results per reply message, the entries of a list and the steps of an each op")
        tap.ok("Listening on" in dm.log() and "Serving 16 CPUs" in dm.log(), "the daemon logs what it serves",
               dm.log())
    finally:
        dm.stop()


def test_skx_imc_units(tap):
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "skx", sockets=2, cores=4, smt=False)
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        h = t.Client(dm.socket).call("hello")
        tap.eq(h["cpu"]["key"], "skx", "Skylake-SP (model 0x55 stepping 4) is recognised")
        units = h["units"]
        tap.eq(len(units), 12, "12 IMC channels on two sockets are served")
        tap.ok(all(u[1] != "0000:00:1f.3" for u in units), "a PCI device no allowlist names is not served", units)
        tap.eq(sorted({u[4] for u in units}), [0, 1], "IMC units are assigned to both packages")
        tap.eq({u[3] for u in units}, {0x2042, 0x2046, 0x204A}, "all three IMC channel device ids are found")
        pkg_of_bus = {u[1][5:7]: u[4] for u in units}
        tap.eq(pkg_of_bus, {"3a": 0, "ae": 1}, "the lower bus is package 0")
    finally:
        dm.stop()

    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "clx", sockets=1, cores=2, smt=False)
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        h = t.Client(dm.socket).call("hello")
        tap.eq(h["cpu"]["key"], "clx", "Cascade Lake (model 0x55 stepping 7) is told apart from Skylake-SP")
    finally:
        dm.stop()


def test_offline_cpu(tap):
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "icx", sockets=1, cores=4, smt=False, offline=[2])
    os.unlink(m.path("dev/cpu/2/msr"))  # the kernel has no msr node for an offline CPU
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        c = t.Client(dm.socket)
        h = c.call("hello")
        online = {cpu[0]: cpu[5] for cpu in h["cpus"]}
        tap.eq(online, {0: True, 1: True, 2: False, 3: True}, "the offline CPU is listed as offline")
        r = c.batch([["r", 1, 0xC1], ["r", 2, 0xC1], ["r", 3, 0xC1]])
        tap.eq(r["status"], [0, -6, 0], "the offline CPU fails with ENXIO alone; the rest of the batch runs")
    finally:
        dm.stop()


sys.exit(t.Tap().run([test_help_and_version, test_refusals, test_files_root_opens,
                      test_no_config_file_is_the_shipped_policy, test_spr_two_sockets, test_skx_imc_units,
                      test_offline_cpu]))
