#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Bad input over the real socket: every request that can be wrong is sent wrong, and the daemon
answers with a code and a reason while it keeps serving everyone else."""

import os
import random
import select
import socket
import subprocess
import sys
import time

import msgpack

import pmugatetest as t


def start(limits=""):
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=2, smt=False)
    conf = os.path.join(d, "pmugate.conf")
    t.write_config(conf, extra=limits)
    return m, t.Daemon(d, ["--root=" + m.root], config=conf)


def error_of(reply):
    return reply.get("error", {}).get("name") if not reply.get("ok") else None


def test_malformed(tap):
    m, dm = start()
    try:
        c = t.Client(dm.socket)
        valid = msgpack.packb({"v": 1, "id": 3, "op": "batch", "ops": [["r", 0, 0xC1]] * 8})
        cases = [
            (b"\xc1", "malformed", "a reserved msgpack byte"),
            (b"\x93\x01\x02\x03", "malformed", "an array instead of a map"),
            (valid[:-5], "malformed", "a truncated message"),
            (valid + b"\x00", "malformed", "trailing bytes"),
            (b"\x81\xa2id\xdd\x7f\xff\xff\xff", "malformed", "an array header claiming 2^31 elements"),
            (b"\xdb\xff\xff\xff\xff", "malformed", "a string header claiming 4 GiB"),
            (b"\x91" * 40 + b"\x01", "malformed", "nesting 40 deep"),
            (msgpack.packb("hello"), "malformed", "a bare string"),
            (msgpack.packb({"id": 1, "op": "hello"}), "version", "no protocol version"),
            (msgpack.packb({"v": 2, "id": 1, "op": "hello"}), "version", "protocol version 2"),
            (msgpack.packb({"v": "1", "id": 1, "op": "hello"}), "version", "a version of the wrong type"),
            (msgpack.packb({"v": 1, "op": "hello"}), "bad-field", "no id"),
            (msgpack.packb({"v": 1, "id": -1, "op": "hello"}), "bad-field", "a negative id"),
            (msgpack.packb({"v": 1, "id": 1}), "bad-field", "no op"),
            (msgpack.packb({"v": 1, "id": 1, "op": 5}), "bad-field", "op of the wrong type"),
            (msgpack.packb({"v": 1, "id": 1, "op": "frobnicate"}), "unknown-op", "an unknown op"),
            (msgpack.packb({"v": 1, "id": 1, "op": "hello", "uid": 0}), "bad-field", "hello claiming a uid"),
            (msgpack.packb({"v": 1, "id": 1, "op": "hello", 7: 1}), "bad-field", "an integer map key"),
            (msgpack.packb({"v": 1, "id": 1, "op": "batch"}), "bad-field", "a batch without ops"),
            (msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": {}}), "bad-field", "ops of the wrong type"),
            (msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["r", "0", 0xC1]]}), "bad-field", "a CPU string"),
            (msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["r", 0, -1]]}), "bad-field", "a negative register"),
            (msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["r", 0, 1 << 32]]}), "bad-field", "a 33-bit register"),
            (msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["r", 0, 0xC1, 5]]}), "bad-field", "a read with a value"),
            (msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["w", 0, 0x186]]}), "bad-field", "a write without value"),
            (msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["w", 0, 0x186, 1.5]]}), "bad-field", "a float value"),
            (msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["x", 0, 0x186]]}), "bad-field", "an unknown op kind"),
            (msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [[]]}), "bad-field", "an empty op"),
            (msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["W", [0], [0x186], []]]}), "bad-field",
             "a sweep write with too few values"),
            (msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["each", [0]]]}), "bad-field",
             "an each op without steps"),
            (msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["each", 0, [["r", 0xC1]]]]}), "bad-field",
             "an each op whose CPUs are no list"),
            (msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["each", [0], [["pr", 0, 0]]]]}), "bad-field",
             "an each step that is a PCI read"),
            (msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["each", [0], [["R", 0xC1]]]]}),
             "bad-field", "an each step that is a sweep"),
            (msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["each", [0], [["R", [0], [0xC1]]]]]}),
             "malformed", "a sweep's lists inside an each step (nested too deep)"),
            (msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["each", [0], [["w", 0x186]]]]}), "bad-field",
             "an each write without value"),
            (msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["each", [-1], [["r", 0xC1]]]]}), "bad-field",
             "an each op on a negative CPU"),
            (msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["Each", [0], [["r", 0xC1]]]]}), "bad-field",
             "an each op spelled with a capital"),
            (msgpack.packb({"v": 1, "id": 1, "op": "grant", "job": "1"}), "bad-field", "a grant without uid"),
            (msgpack.packb({"v": 1, "id": 1, "op": "revoke", "job": "a b"}), "bad-field", "a job id with a space"),
            (msgpack.packb({"v": 1, "id": 1, "op": "revoke", "job": "x" * 300}), "bad-field", "a 300-byte job id"),
        ]
        for data, name, desc in cases:
            c.send_raw(data)
            r = c.recv()
            tap.ok(error_of(r) == name and r["error"]["reason"] and r["error"]["code"] > 0,
                   "%s is refused as %s" % (desc, name), r)
        c.send_raw(msgpack.packb({"v": 2, "id": 77, "op": "hello"}))
        r = c.recv()
        tap.ok(r["id"] == 77 and "protocol version 1" in r["error"]["reason"],
               "an old or new client learns which version to speak, with its id echoed", r)
        tap.ok(c.call("hello")["ok"], "the connection is still usable after all of it")
    finally:
        dm.stop()


def test_limits(tap):
    m, dm = start()
    try:
        c = t.Client(dm.socket)
        big = msgpack.packb({"v": 1, "id": 9, "op": "hello", "pad": "x" * 70000})
        c.send_raw(big)
        r = c.recv()
        tap.ok(error_of(r) == "too-large" and "65536" in r["error"]["reason"], "an oversized message is refused", r)
        tap.ok(c.call("hello")["ok"], "the connection stays usable after an oversized message")
        r = c.batch([["R", [0, 1] * 2048, [0xC1] * 33]])
        tap.ok(error_of(r) == "too-many-ops" and "131072" in r["error"]["reason"],
               "a sweep expanding past 131072 ops is refused", r)
        r = c.batch([["R", [0, 1] * 2048, [0xC1] * 16]] * 2 + [["r", 0, 0xC1]])
        tap.ok(error_of(r) == "too-many-ops", "sweeps adding up past 131072 ops are refused", r)
        r = c.batch([["each", [0, 1] * 2048, [["r", 0xC1]] * 32], ["r", 0, 0xC1]])
        tap.ok(error_of(r) == "too-many-ops", "an each op and a single op adding up past 131072 ops are refused", r)
        r = c.batch([["R", [0] * 4097, [0xC1]]])
        tap.ok(error_of(r) == "too-many-ops" and "4096" in r["error"]["reason"],
               "a CPU list of 4097 entries is refused", r)
        r = c.batch([["each", [0], [["r", 0xC1]] * 65]])
        tap.ok(error_of(r) == "too-many-ops" and "64" in r["error"]["reason"], "65 steps per CPU are refused", r)
        r = c.batch([["r", 0, 0xC1]] * 4096)
        tap.ok(r["ok"] and len(r["values"]) == 4096 and "parts" not in r, "4096 ops are served in one message")
        tap.ok(c.call("hello")["limits"]["ops_per_batch"] == 131072, "hello reports the batch limit")
        r = c.batch([])
        tap.ok(r["ok"] and r["values"] == [], "an empty batch is served")
    finally:
        dm.stop()


def test_too_many_clients(tap):
    m, dm = start("[limits]\nclients = 4\nclients_per_uid = 2\n")
    try:
        held = [t.Client(dm.socket) for _ in range(4)]
        for c in held:
            c.call("hello")
        extra = t.Client(dm.socket)
        r = extra.recv()
        tap.ok(error_of(r) == "too-many-clients" and "at most 4 clients" in r["error"]["reason"],
               "the fifth client is told the daemon is full", r)
        try:
            extra.recv()
            closed = False
        except (ConnectionError, OSError):
            closed = True
        tap.ok(closed, "and its connection is closed")
        held.pop().close()
        time.sleep(0.1)
        tap.ok(t.Client(dm.socket).call("hello")["ok"], "a freed slot is served again")
        for c in held:
            c.close()
        time.sleep(0.1)

        def per_uid():
            a, b = t.Client(dm.socket), t.Client(dm.socket)
            a.call("hello")
            b.call("hello")
            third = t.Client(dm.socket)
            return third.recv()
        r = t.in_child_as(t.UNPRIVILEGED_UID, t.USER_GID, [], per_uid)
        tap.ok(error_of(r) == "too-many-clients" and "uid %d" % t.UNPRIVILEGED_UID in r["error"]["reason"],
               "a user past clients_per_uid is refused", r)
        rc, out, err = t.run_cli([t.PMUGATECTL, "status"], dm.socket)
        tap.ok(rc == 0 and "2 refused" in out, "refused connections are counted", out + err)
        tap.ok("event=deny" in dm.audit() and "too-many-clients" in dm.audit(), "refused connections are audited")
    finally:
        dm.stop()


HOLDER = """
import sys
import pmugatetest as t
held = []
for _ in range(int(sys.argv[2])):
    c = t.Client(sys.argv[1])
    r = c.call("hello")
    held.append(c)
print("held" if r.get("ok") else "refused", flush=True)
sys.stdin.read()
"""


def hold_connections(sock, uid, n, groups=()):
    """A process of uid holding n connections until its stdin closes."""
    p = t.spawn([sys.executable, "-c", HOLDER, sock, str(n)], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, text=True, preexec_fn=t.as_user(uid, uid, groups))
    return p, p.stdout.readline().strip()


def test_admin_slots_reserved(tap):
    """Users of many uids filling every slot they may take leave the reserved ones to admins."""
    m, dm = start("[limits]\nclients = 20\nclients_per_uid = 4\n")
    holders = []
    try:
        for i in range(3):
            p, state = hold_connections(dm.socket, t.UNPRIVILEGED_UID + i, 4, [t.USER_GID])
            holders.append(p)
            tap.eq(state, "held", "uid %d holds 4 connections" % (t.UNPRIVILEGED_UID + i))

        def one_more():
            return t.Client(dm.socket).recv()
        r = t.in_child_as(t.UNPRIVILEGED_UID + 3, t.UNPRIVILEGED_UID + 3, [t.USER_GID], one_more)
        tap.ok(error_of(r) == "too-many-clients" and "at most 12 clients other than admins" in r["error"]["reason"],
               "a fourth uid finds the 12 user slots of 20 taken", r)
        r = t.in_child_as(t.UNPRIVILEGED_UID + 4, t.UNPRIVILEGED_UID + 4, [], one_more)
        tap.ok(error_of(r) == "not-authorized" and "pmugate" in r["error"]["reason"],
               "a uid of no role is refused as not authorized, with the policy's reason", r)

        rc, out, err = t.run_cli([t.PMUGATECTL, "status"], dm.socket)
        tap.ok(rc == 0 and "uid 4242" in out, "root still connects and runs pmugatectl status", out + err)
        rc, out, err = t.run_cli([t.PMUGATECTL, "status"], dm.socket, uid=t.UNPRIVILEGED_UID + 5, gid=4999,
                                 groups=[t.ADMIN_GID])
        tap.ok(rc == 0, "so does a member of admin_groups", out + err)
        admins = [t.Client(dm.socket) for _ in range(8)]
        tap.ok(all(c.call("hello")["ok"] for c in admins), "admins take the 8 reserved slots")
        r = t.Client(dm.socket).recv()
        tap.ok(error_of(r) == "too-many-clients" and "at most 20 clients" in r["error"]["reason"],
               "past 20 clients even an admin is refused", r)
    finally:
        for p in holders:
            p.stdin.close()
            p.wait()
        dm.stop()


def test_vanishing_and_slow_clients(tap):
    m, dm = start()
    try:
        for _ in range(20):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.connect(dm.socket)
            s.send(msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["r", 0, 0xC1]] * 4096}))
            s.close()
        tap.ok(dm.alive() and t.Client(dm.socket).call("hello")["ok"],
               "clients that vanish mid-request do not hurt the daemon")

        # A client that sends without reading: the daemon stops reading from it when its
        # replies back up, and keeps serving others meanwhile.
        flood = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        flood.connect(dm.socket)
        flood.setblocking(False)
        req = msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["r", 0, 0xC1]] * 2048})
        sent = 0
        deadline = time.time() + 5
        while time.time() < deadline:
            try:
                flood.send(req)
                sent += 1
            except BlockingIOError:
                break
        other = t.Client(dm.socket, timeout=5)
        start_t = time.time()
        ok = all(other.call("hello")["ok"] for _ in range(20))
        tap.ok(ok and time.time() - start_t < 5, "others are served while a client floods without reading (%d sent)" % sent)
        flood.close()
        time.sleep(0.2)
        tap.ok(dm.alive() and other.call("hello")["ok"], "the flooding client's departure is handled")

        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.connect(dm.socket)
        s.send(b"")
        time.sleep(0.1)
        tap.ok(dm.alive() and other.call("hello")["ok"], "an empty message does not hurt the daemon")
    finally:
        dm.stop()


def test_each(tap):
    m, dm = start()
    try:
        c = t.Client(dm.socket)
        for cpu in (0, 1):
            m.set_msr(cpu, 0xC1, 1000 + cpu)
            m.set_msr(cpu, 0x309, 2000 + cpu)
            m.set_msr(cpu, 0x186, 0xFF00)
        steps = [["r", 0xC1], ["r", 0x309]]
        r = c.batch([["each", [1, 0], steps]])
        tap.ok(r.get("values") == [1001, 2001, 1000, 2000], "an each op runs its steps CPU by CPU, in order", r)

        r = c.batch([["each", [0, 1], [["w", 0x186, 0x43]]]])
        tap.ok(error_of(r) == "no-lease" and r["error"]["op"] == 0, "each op's writes need leases like single ones", r)
        r = c.batch([["each", [0, 1], [["r", 0xC1], ["w", 0x600, 1]]]])
        tap.ok(error_of(r) == "reg-forbidden" and r["error"]["op"] == 1,
               "a forbidden register in a step is refused, naming the expanded op", r)
        tap.eq(m.msr(0, 0x186), 0xFF00, "a refused each op wrote nothing")
        tap.eq(c.call("lease", cpus=[0])["cpus"], [0], "a lease on CPU 0 only")
        r = c.batch([["each", [0, 1], [["wm", 0x186, 0x43, 0xFF]]]])
        tap.ok(error_of(r) == "no-lease" and r["error"]["op"] == 1,
               "the step on the CPU without a lease is refused, the whole op with it", r)
        tap.eq(m.msr(0, 0x186), 0xFF00, "and nothing ran on the leased CPU either")
        tap.eq(c.call("lease", cpus=[1])["cpus"], [1], "a lease on CPU 1 too")
        r = c.batch([["each", [0, 1], [["wm", 0x186, 0x43, 0xFF], ["r", 0x186]]]])
        tap.ok(r.get("values") == [0x43, 0xFF43] * 2,
               "masked writes in steps keep the bits outside the mask; a write's reply shows only what it wrote", r)
        tap.ok(m.msr(0, 0x186) == 0xFF43 and m.msr(1, 0x186) == 0xFF43, "and reached both CPUs' registers")
        r = c.batch([["each", [0, 5], [["r", 0xC1]]]])
        tap.ok(error_of(r) == "no-such-cpu" and r["error"]["op"] == 1, "a CPU that does not exist is refused", r)
    finally:
        dm.stop()


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_reply_parts(tap):
    m, dm = start()
    try:
        for cpu in (0, 1):
            for k in range(8):
                m.set_msr(cpu, 0xC1 + k, (cpu << 4 | k) << 56)
        c = t.Client(dm.socket)
        c.send_raw(msgpack.packb({"v": 1, "id": 41, "op": "batch", "ops": [["r", 1, 0xC2]] * 4097}))
        first, second = c.recv(), c.recv()
        tap.ok(first["ok"] and first["id"] == 41 and first["part"] == 0 and first["parts"] == 2 and
               len(first["values"]) == 4096 and len(first["status"]) == 4096,
               "4097 results come in two messages, the first with 4096", {k: first.get(k) for k in ("id", "part", "parts")})
        tap.ok(second["ok"] and second["id"] == 41 and second["part"] == 1 and second["parts"] == 2 and
               second["values"] == [m.msr(1, 0xC2)] and second["status"] == [0], "and the second with the last one", second)
        tap.ok(c.call("hello")["ok"], "the next request is answered after them")

        idle = rss_kib(dm.proc.pid)
        regs = [0xC1 + k for k in range(8)] * 4
        r = c.batch([["R", [0, 1] * 2048, regs]])
        # the registers overlap in the fake machine's files: what single reads give is the truth
        single = c.batch([["r", cpu, reg] for cpu in (0, 1) for reg in regs[:8]])["values"]
        expected = [single[8 * cpu + reg - 0xC1] for cpu in [0, 1] * 2048 for reg in regs]
        tap.ok(r["ok"] and r["parts"] == 32 and r["values"] == expected and r["status"] == [0] * 131072,
               "131072 results come in 32 parts, in order", {k: r.get(k) for k in ("ok", "parts")})
        grown = rss_kib(dm.proc.pid)

        # A client that asks for 32 parts and does not read them: the daemon sends what the
        # socket takes, keeps the rest for it, and serves others meanwhile.
        slow = t.Client(dm.socket, timeout=10)
        slow.send_raw(msgpack.packb({"v": 1, "id": 9, "op": "batch", "ops": [["R", [0, 1] * 2048, regs]]}))
        time.sleep(0.3)
        other = t.Client(dm.socket, timeout=5)
        t0 = time.time()
        ok = all(other.call("hello")["ok"] for _ in range(20))
        tap.ok(ok and time.time() - t0 < 5, "others are served while a client leaves 32 parts unread")
        r = slow.recv_reply()
        tap.ok(r["ok"] and r["values"] == expected, "the slow client then reads every part, in order")
        tap.ok(slow.call("hello")["ok"], "and its connection goes on")

        # Clients that leave after reading one part, or none.
        for n_read in (0, 1, 5):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.connect(dm.socket)
            s.send(msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["R", [0, 1] * 2048, regs]]}))
            for _ in range(n_read):
                s.recv(1 << 20)
            s.close()
        time.sleep(0.2)
        tap.ok(dm.alive() and other.call("hello")["ok"], "clients that leave halfway through the parts do not hurt")
        c.close()
        slow.close()
        other.close()
        time.sleep(0.3)
        left = rss_kib(dm.proc.pid)
        what = ("the daemon gives back what the large batches needed once their clients left "
                "(RSS idle %d KiB, after 131072 ops %d KiB, after the clients left %d KiB)" % (idle, grown, left))
        if t.SANITIZED:
            tap.skip(what, t.SANITIZED_RSS)
        else:
            tap.ok(grown - idle > 4096 and left - idle < 2048, what)
    finally:
        dm.stop()


def test_library_batches(tap):
    # libpmugate's side of the same: each ops, a reply in 32 parts, the limits it enforces
    d = t.workdir()
    dm = t.Daemon(d, ["--backend=sim", "--sim-model=spr"])
    try:
        helper = os.environ.get("PMUGATE_BATCH_CLIENT", os.path.join(t.BUILD, "tests", "batch_client"))
        p = subprocess.run([helper, dm.socket, "0", "3"], capture_output=True, text=True, timeout=60)
        lines = [l for l in p.stdout.splitlines() if l.startswith(("ok ", "not ok "))]
        for line in lines:
            tap.ok(line.startswith("ok "), "library: " + line.split(" ", 1 if line.startswith("ok ") else 2)[-1],
                   p.stderr)
        tap.ok(p.returncode == 0 and len(lines) == 11, "the library checks ran (exit %d, %d checks)" %
               (p.returncode, len(lines)), p.stdout + p.stderr)
    finally:
        dm.stop()


def test_pending_budget(tap):
    # Clients of one uid that ask for 32-part replies and never read them: the daemon holds what
    # their sockets do not take up to the uid's budget (16 MiB); past it, the client whose reply
    # does not fit is disconnected, and everyone else is served.
    d = t.workdir()
    dm = t.Daemon(d, ["--backend=sim", "--sim-model=spr"])
    held = []
    try:
        req = msgpack.packb({"v": 1, "id": 1, "op": "batch",
                             "ops": [["R", [0, 1] * 2048, [0x10] * 32]]})  # TSC: 9 bytes a value
        dropped = None
        for i in range(40):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.connect(dm.socket)
            s.send(req)
            held.append(s)
            # the first part arrives, or the connection ends: the batch ran
            ready, _, _ = select.select([s], [], [], 10)
            if not ready:
                break
            # the first parts go out before the rest is found not to fit: give the log a moment
            time.sleep(0.1)
            if "Dropping uid=0" in dm.log():
                dropped = i
                break
        # each holds its reply's buffer (1.1 MB of results in a buffer of up to twice that)
        tap.ok(dropped is not None and 6 <= dropped <= 24,
               "past 16 MiB of unread replies of one uid its next such client is disconnected (client %s)" % dropped,
               dm.log()[-600:])
        s = held[-1]
        s.settimeout(5)
        parts = 0
        try:
            while s.recv(1 << 20):
                parts += 1
        except socket.timeout:
            parts = -parts
        tap.ok(0 < parts < 32, "it read the parts its socket had taken, then the end (%d parts)" % parts)
        rss = rss_kib(dm.proc.pid)
        tap.ok(dm.alive(), "the daemon stays up")
        if t.SANITIZED:
            tap.skip("its RSS stays below 64 MiB (%d KiB)" % rss, t.SANITIZED_RSS)
        else:
            tap.ok(rss < 64 * 1024, "its RSS stays below 64 MiB (%d KiB)" % rss)
        first = held[0]
        first.settimeout(5)
        got = [msgpack.unpackb(first.recv(1 << 20)) for _ in range(32)]
        tap.ok([g["part"] for g in got] == list(range(32)) and sum(len(g["values"]) for g in got) == 131072,
               "the first client, reading at last, gets all its 32 parts")
        c = t.Client(dm.socket)
        tap.ok(c.call("hello")["ok"], "others are served throughout")
    finally:
        for s in held:
            s.close()
        dm.stop()


def test_random_garbage(tap):
    m, dm = start()
    try:
        rng = random.Random(1234)
        c = t.Client(dm.socket)
        answered = 0
        for i in range(300):
            n = rng.choice([1, 2, 5, 17, 100, 1000])
            data = bytes(rng.getrandbits(8) for _ in range(n))
            if data[0] == 0:
                data = b"\x01" + data[1:]
            c.send_raw(data)
            r = c.recv()
            answered += (not r["ok"]) and r["error"]["code"] > 0
        tap.eq(answered, 300, "300 random messages each get an error reply")
        valid = msgpack.packb({"v": 1, "id": 5, "op": "batch", "ops": [["r", 0, 0xC1], ["w", 1, 0x186, 1]]})
        mutated = 0
        for i in range(300):
            b = bytearray(valid)
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(len(b))] = rng.getrandbits(8)
            c.send_raw(bytes(b))
            r = c.recv()
            mutated += "ok" in r
        tap.eq(mutated, 300, "300 mutated requests each get a reply")
        tap.ok(dm.alive() and c.call("hello")["ok"], "the daemon survives and keeps serving")
    finally:
        dm.stop()


sys.exit(t.Tap().run([test_malformed, test_limits, test_too_many_clients, test_admin_slots_reserved,
                      test_vanishing_and_slow_clients, test_each, test_reply_parts, test_library_batches, test_pending_budget,
                      test_random_garbage]))
