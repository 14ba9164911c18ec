#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Bounds through the real daemon: the never-list entries a review found missing, two allowlists
for one model, a PCI config file shorter than the register, and status replies in parts."""

import os
import sys

import pmugatetest as t

# Each gap the review found, with the name the refusal must give, and the model whose allowlist
# the test lists it in (Intel and AMD addresses each in a file for their vendor).
GAPS = [
    (0xE1, "IA32_UMWAIT_CONTROL"), (0xE2, "MSR_PKG_CST_CONFIG_CONTROL"),
    (0x8C, "IA32_SGXLEPUBKEYHASH0-3"), (0x8D, "IA32_SGXLEPUBKEYHASH0-3"),
    (0x8E, "IA32_SGXLEPUBKEYHASH0-3"), (0x8F, "IA32_SGXLEPUBKEYHASH0-3"),
    (0x1A4, "MSR_MISC_FEATURE_CONTROL"), (0x1C4, "IA32_XFD"), (0x1C5, "IA32_XFD_ERR"),
    (0xD90, "IA32_BNDCFGS"), (0xD93, "IA32_PASID"),
    (0xDB0, "IA32_PKG_HDC_CTL"), (0xDB1, "IA32_PM_CTL1"), (0xDB2, "IA32_THREAD_STALL"),
]
AMD_GAPS = [(reg, "AMD_CORE_CFG") for reg in (0xC0011024, 0xC0011025, 0xC0011026, 0xC001102B, 0xC001102C,
                                              0xC001102D, 0xC001102F)] + [
    (0xC0011027, "AMD_DR0_ADDR_MASK"), (0xC0011028, "AMD_FP_CFG"),
    (0xC001103D, "AMD_IBS"), (0xC001103E, "AMD_IBS"), (0xC001103F, "AMD_IBS"),
]


def gap_allowlist(d, models, gaps):
    """A data file that lists every gap register writable with a full mask: only the never-list
    stands between a client and them."""
    allow = os.path.join(d, "allowlists")
    os.mkdir(allow)
    lines = ["models " + models]
    for i, (reg, _) in enumerate(gaps):
        lines.append("msr 0x%x 0xffffffffffffffff thread core-pmu GAP%d" % (reg, i))
    with open(os.path.join(allow, "gaps.conf"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return allow


def check_gaps(tap, model, models, gaps):
    d = t.workdir()
    allow = gap_allowlist(d, models, gaps)
    m = t.FakeMachine(os.path.join(d, "root"), model, sockets=1, cores=2, smt=False)
    dm = t.Daemon(d, ["--root=" + m.root], allowlist_dir=allow)
    try:
        c = t.Client(dm.socket)
        tap.eq(c.call("lease", cpus=[0])["cpus"], [0], "%s: a lease on CPU 0" % model)
        for reg, name in gaps:
            m.set_msr(0, reg, 0x77)
            w = c.batch([["w", 0, reg, 0x5A5A]])
            r = c.batch([["r", 0, reg]])
            tap.ok(not w.get("ok") and w["error"]["name"] == "reg-forbidden" and name in w["error"]["reason"]
                   and not r.get("ok") and r["error"]["name"] == "reg-forbidden",
                   "%s: 0x%X (%s) is refused for writing and reading, named" % (model, reg, name), (w, r))
            tap.eq(m.msr(0, reg), 0x77, "%s: 0x%X was never written" % (model, reg))
    finally:
        dm.stop()


def test_never_list_gaps(tap):
    check_gaps(tap, "spr", "spr", GAPS)
    check_gaps(tap, "zen4", "zen4", AMD_GAPS)


def test_duplicate_model_allowlists(tap):
    """Two files that both name a model stop start-up naming both, whichever model it is: which
    file is trusted must not depend on the order of names."""
    for machine_model, first, second, key in [("spr", "models spr", "models icx spr", "spr"),
                                              ("spr", "models spr skx", "models clx skx", "skx")]:
        d = t.workdir()
        allow = os.path.join(d, "allowlists")
        os.mkdir(allow)
        with open(os.path.join(allow, "10-site.conf"), "w") as f:
            f.write(first + "\nmsr 0x186 0xffff thread core-pmu IA32_PERFEVTSEL0\n")
        with open(os.path.join(allow, "20-copy.conf"), "w") as f:
            f.write(second + "\nmsr 0x186 0xffffffff thread core-pmu IA32_PERFEVTSEL0\n")
        m = t.FakeMachine(os.path.join(d, "root"), machine_model, sockets=1, cores=2, smt=False)
        dm = t.Daemon(d, ["--root=" + m.root], allowlist_dir=allow, expect_ready=False)
        rc = dm.wait_exit()
        log = dm.log()
        dm.stop()
        tap.ok(rc != 0 and "10-site.conf" in log and "20-copy.conf" in log and "'%s'" % key in log,
               "two allowlists naming model %s stop start-up, naming both files" % key, log)


def test_short_pci_config(tap):
    """A config file that ends inside a register (as a device's does past its config size): the
    read of it fails with EIO of its own, not with whatever errno an earlier call left."""
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "skx", sockets=1, cores=2, smt=False)
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        c = t.Client(dm.socket)
        units = c.call("hello")["units"]
        u, bdf = units[0][0], units[0][1]
        tap.eq(c.call("lease", cpus=[0, 1])["cpus"], [0, 1], "a lease on the package's CPUs")
        m.set_pci(bdf, 0xA0, 0x1234, width=4)
        r = c.batch([["pr", u, 0xA0]])
        tap.eq((r.get("ok"), r.get("values")), (True, [0x1234]), "the whole file reads")
        # The counter at 0xA0 is 8 bytes: the file now ends two bytes into its high dword, and
        # the event select at 0xD8 lies wholly past the end.
        os.truncate(m.path("sys/bus/pci/devices/%s/config" % bdf), 0xA6)
        # A request that ends in EAGAIN on the socket first leaves a stale errno behind.
        c.batch([["r", 0, 0xC1]])
        r = c.batch([["pr", u, 0xA0], ["pr", u, 0xD8], ["r", 0, 0xC1]])
        tap.eq(r.get("status"), [-5, -5, 0], "a short PCI read is EIO for that op alone")
        rc, out, err = t.run_cli([t.PMUGATE, "read", "-u", str(u), "0xA0"], dm.socket)
        tap.ok("Input/output error" in out + err, "the CLI names the error", out + err)
    finally:
        dm.stop()


def test_status_in_parts(tap):
    """Grants with long job names and a lease on each of 256 CPUs: more than one message holds.
    The reply comes in parts, every entry once and in order, and pmugatectl prints them all."""
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=2, cores=64, smt=True)
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        c = t.Client(dm.socket, timeout=60)
        jobs = ["%04d-" % i + "j" * 240 for i in range(1200)]
        for i, job in enumerate(jobs):
            r = c.call("grant", job=job, uid=t.UNPRIVILEGED_UID, cpus=[i % m.ncpus])
            if not r.get("ok"):
                break
        tap.ok(r.get("ok"), "1200 grants with 245-character job names", r)
        tap.eq(c.call("lease", cpus=list(range(m.ncpus))).get("cpus"), list(range(m.ncpus)),
               "a lease on each of %d CPUs" % m.ncpus)
        c.send_raw(t.msgpack.packb({"v": 1, "id": 99, "op": "status"}))
        first = c.recv()
        parts = first.get("parts", 1)
        tap.ok(first.get("ok") and 2 <= parts <= 32 and first.get("part") == 0,
               "the status reply comes in parts (%s)" % parts, {k: v for k, v in first.items()
                                                                if not isinstance(v, list)})
        sizes, reply = [len(t.msgpack.packb(first))], first
        for k in range(1, parts):
            more = c.recv()
            sizes.append(len(t.msgpack.packb(more)))
            tap.ok(more.get("id") == 99 and more.get("part") == k and more.get("parts") == parts
                   and "server" not in more, "part %d follows, with only the lists" % k,
                   {x: more.get(x) for x in ("id", "part", "parts")})
            for key in ("grants", "leases", "clients"):
                reply[key] += more[key]
        tap.ok(max(sizes) <= 128 * 1024, "no part is longer than 128 KiB", sizes)
        tap.eq([g[0] for g in reply["grants"]], jobs, "every grant once, in order")
        tap.eq([l[0] for l in reply["leases"]], list(range(m.ncpus)), "every lease once, in order")
        tap.eq(len(reply["clients"]), 1, "the one client")
        tap.ok("omitted" not in first, "nothing was left out")
        tap.ok(c.call("hello").get("ok"), "the connection is in step afterwards")
        rc, out, err = t.run_cli([t.PMUGATECTL, "status"], dm.socket)
        tap.ok(rc == 0 and "Grants:    1200" in out and "Leases:    %d" % m.ncpus in out
               and out.count(" registers to restore") == m.ncpus and jobs[-1] in out,
               "pmugatectl status reads every part", (rc, out[-400:], err))
    finally:
        dm.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_never_list_gaps, test_duplicate_model_allowlists, test_short_pci_config,
                          test_status_in_parts]))
