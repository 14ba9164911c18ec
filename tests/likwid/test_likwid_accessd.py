#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate-likwid-accessD speaking LIKWID's record protocol, driven record by record (no LIKWID
needed), against a real pmugated on the simulated Skylake-SP: the socket, batching, leases and
their restore (also when the forwarder is killed), refusals in LIKWID's codes and in the audit
log, the PEBS rule, device checks, the memory controller mapping, job scope and bad input; on the
simulated Ice Lake-SP, the free-running DDR devices answered from the daemon's package counters."""

import os
import signal
import socket
import struct
import subprocess
import time

import likwidtest as lt
import pmugatetest as t

READ, WRITE, CHECK, EXIT = 0, 1, 2, 3
NOERROR, UNKNOWN, RESTREG, OPENFAIL, RWFAIL, DAEMONBUSY, NODEV, LOCKED = range(8)
EVTSEL0, EVTSEL1, PMC0, FIXED_CTRL, GLOBAL_CTRL = 0x186, 0x187, 0xC1, 0x38D, 0x38F
MISC_ENABLE, PEBS_ENABLE = 0x1A0, 0x3F1
IMC_CTL0, IMC_CTR0, IMC_BOX_CTL = 0xD8, 0xA0, 0xF4
UNPRIVILEGED = (t.UNPRIVILEGED_UID, 4999, [t.USER_GID])
FREERUN, MMIO_IMC = (51, 52, 53, 54), (43, 44, 45, 46, 47, 48, 49, 50)
FREERUN_READ, FREERUN_WRITE, UBOX_CTL = 0x0, 0x8, 0x700
READ_GBPS, WRITE_GBPS = 40, 15
SIZES = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "KB": 1e3, "MB": 1e6, "GB": 1e9}


def sim_daemon(mode="open", model="skx", kernel_pmu=None, args=()):
    """kernel_pmu: serve the kernel's uncore PMUs; by default not on skx and clx, whose memory
    channels LIKWID programs itself (the kernel's uncore_imc driver would hold them)."""
    d = t.workdir()
    conf = os.path.join(d, "sim.conf")
    if kernel_pmu is None:
        kernel_pmu = model not in ("skx", "clx")
    with open(conf, "w") as f:
        f.write("[machine]\nsockets = 1\ncores = 2\nsmt = no\n")
        f.write("[imc]\nread_gbps = %d\nwrite_gbps = %d\nkernel_pmu = %s\n" % (READ_GBPS, WRITE_GBPS,
                                                                              "yes" if kernel_pmu else "no"))
    cfg = os.path.join(d, "pmugate.conf")
    with open(cfg, "w") as f:
        f.write("[access]\nmode = %s\nadmin_groups = %d\nuser_groups = %d\n" % (mode, t.ADMIN_GID, t.USER_GID))
    return t.Daemon(d, ["--backend=sim", "--sim-model=" + model, "--sim-config=" + conf] + list(args), config=cfg)


def connect_as(path, user=None):
    """Connects to the forwarder like LIKWID does (retrying until it listens), as user: LIKWID
    runs as the same user as the daemon it started."""
    def connect():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        for _ in range(1000):
            try:
                s.connect(path)
                return s
            except (FileNotFoundError, ConnectionRefusedError):
                time.sleep(0.0025)
        raise TimeoutError("the forwarder did not listen on " + path)
    if not user:
        return connect()
    parent, child = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        try:
            parent.close()
            t.as_user(*user)()
            s = connect()
            socket.send_fds(child, [b"x"], [s.fileno()])
        finally:
            os._exit(0)
    child.close()
    _, fds, _, _ = socket.recv_fds(parent, 1, 1)
    parent.close()
    os.waitpid(pid, 0)
    return socket.socket(fileno=fds[0])


class Forwarder:
    """The forwarder as LIKWID starts it, and a LIKWID-side connection to it."""

    def __init__(self, socket_path, args=(), user=None, connect=True, version="5.2"):
        argv = [lt.ACCESSD] + (["--socket=" + socket_path] if socket_path else []) + list(args)
        pre = t.as_user(*user) if user else None
        # This test, not LIKWID, starts the forwarder: no liblikwid to tell the release by
        env = {"PMUGATE_LIKWID_VERSION": version} if version else {}
        self.proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, preexec_fn=pre, env=env)
        self.path = "/tmp/likwid-%d" % self.proc.pid
        deadline = time.time() + 10
        while not os.path.exists(self.path) and self.proc.poll() is None and time.time() < deadline:
            time.sleep(0.005)
        self.mode = os.stat(self.path) if os.path.exists(self.path) else None
        self.sock = None
        if connect:
            self.sock = connect_as(self.path, user)
            self.sock.settimeout(10)

    def send(self, cpu, reg, data=0, device=0, kind=READ):
        self.sock.sendall(struct.pack("=IIQIIII", cpu, reg, data, device, kind, OPENFAIL, 0))
        if kind == EXIT:
            return None
        reply = b""
        while len(reply) < 32:
            chunk = self.sock.recv(32 - len(reply))
            if not chunk:
                raise ConnectionError("forwarder closed the connection")
            reply += chunk
        _, _, value, _, _, err, _ = struct.unpack("=IIQIIII", reply)
        return err, value

    def read(self, cpu, reg, device=0):
        return self.send(cpu, reg, 0, device, READ)

    def write(self, cpu, reg, value, device=0):
        return self.send(cpu, reg, value, device, WRITE)[0]

    def check(self, cpu, device):
        return self.send(cpu, 0, 0, device, CHECK)[0]

    def exit(self):
        self.send(0, 0, kind=EXIT)
        return self.wait()

    def wait(self, timeout=10):
        rc = self.proc.wait(timeout=timeout)
        self.stderr = self.proc.stderr.read()
        if self.sock:
            self.sock.close()
        return rc


def raw(dm, ops):
    c = t.Client(dm.socket)
    try:
        r = c.batch(ops)
        assert r.get("ok"), r
        return r["values"]
    finally:
        c.close()


def imc_units(dm):
    """pmugate unit index of each LIKWID memory channel device on socket 0."""
    c = t.Client(dm.socket)
    try:
        hello = c.call("hello")
    finally:
        c.close()
    found = {}
    for u in hello["units"]:
        index, bdf = u[0], u[1]
        for dev, devfn in ((5, "0a.2"), (6, "0a.6"), (7, "0b.2"), (9, "0c.2"), (10, "0c.6"), (11, "0d.2")):
            if bdf.endswith(devfn) and dev not in found:
                found[dev] = index
    return found


def package_counters(dm):
    """{(name, package): (index, bytes per count)} of the daemon's package counters."""
    c = t.Client(dm.socket)
    try:
        hello = c.call("hello")
    finally:
        c.close()
    return {(x[1], x[2]): (x[0], x[4] * SIZES[x[5]]) for x in hello["counters"] if not x[7]}


def count_audit(dm, needle):
    return sum(1 for line in dm.audit().splitlines() if needle in line)


def test_socket_and_session(tap):
    dm = sim_daemon()
    try:
        fw = Forwarder(dm.socket)
        tap.ok(fw.mode is not None and (fw.mode.st_mode & 0o777) == 0o600 and fw.mode.st_uid == os.getuid(),
               "the socket is /tmp/likwid-PID, mode 0600, owned by the caller")
        tap.eq(fw.write(0, EVTSEL0, 0x4100C4), NOERROR, "an allowed write is answered NOERROR")
        tap.ok(not os.path.exists(fw.path), "the socket is removed once LIKWID is connected")
        tap.eq(fw.read(0, EVTSEL0), (NOERROR, 0x4100C4), "reading it back gives the value")
        tap.eq(raw(dm, [["r", 0, EVTSEL0]]), [0x4100C4], "the write reached the (simulated) register")
        tap.eq(fw.write(0, EVTSEL0, 0x5100C4 | (1 << 21)), NOERROR, "a write with bits outside the mask is accepted")
        got = fw.read(0, EVTSEL0)[1]
        tap.ok(got & (1 << 21) == 0 and got & (1 << 20) == 0, "ANY and INT never reach the register (0x%x)" % got)
        c = t.Client(dm.socket)
        status = c.call("status")
        c.close()
        leases = status.get("leases", [])
        tap.ok(any(lease[0] == 0 for lease in leases),
               "the first write took a lease on CPU 0", status)
        tap.eq(fw.exit(), 0, "EXIT ends the forwarder with status 0")
        tap.eq(raw(dm, [["r", 0, EVTSEL0]]), [0], "its end put the event select back")
        tap.ok("lease-end verdict=restored" in dm.audit(), "the daemon audited the restore")
    finally:
        dm.stop()


def test_batching(tap):
    dm = sim_daemon()
    try:
        fw = Forwarder(dm.socket, ["--verbose"])
        fw.write(0, EVTSEL0, 0)   # takes the lease
        fw.read(0, EVTSEL0)
        before = count_audit(dm, "event=write")
        for i, reg in enumerate((EVTSEL0, EVTSEL1, PMC0, PMC0 + 1, FIXED_CTRL)):
            tap.eq(fw.write(0, reg, 0x430000 + i if reg in (EVTSEL0, EVTSEL1) else 0), NOERROR,
                   "write %d is answered at once" % i)
        err, value = fw.read(0, EVTSEL1)
        tap.eq((err, value), (NOERROR, 0x430001), "a read after the writes sees them")
        writes = [l for l in dm.audit().splitlines() if "event=write" in l][before:]
        tap.ok(len(writes) == 1 and "count=5" in writes[0], "five writes and the read went in one batch", writes)
        fw.write(0, EVTSEL0, 0x4300C0)
        time.sleep(0.2)
        tap.eq(raw(dm, [["r", 0, EVTSEL0]]), [0x4300C0], "a write LIKWID follows with nothing runs by itself soon")
        fw.exit()
        tap.ok("10 records (2 reads, 7 writes, 0 checks) in 3 batches; 7 writes collected" in fw.stderr,
               "--verbose ends with a summary that counts the batches", fw.stderr)
    finally:
        dm.stop()


def test_refusals(tap):
    dm = sim_daemon()
    try:
        fw = Forwarder(dm.socket)
        tap.eq(fw.read(0, MISC_ENABLE), (RESTREG, 0), "a never-listed register: LIKWID's 'not allowed' code")
        tap.eq(count_audit(dm, "regs=0x1a0"), 1, "the refusal is audited by pmugated")
        tap.eq(fw.read(0, MISC_ENABLE), (RESTREG, 0), "asked again: the same answer")
        tap.eq(count_audit(dm, "regs=0x1a0"), 1, "answered from the forwarder's memory, no second round trip")
        tap.eq(fw.read(0, 0xCE)[0], RESTREG, "an unlisted register: 'not allowed'")
        tap.eq(fw.write(0, 0x38E, 1), RESTREG, "a write to a read-only register: 'not allowed'")
        tap.eq(fw.write(0, PEBS_ENABLE, 0), NOERROR, "PEBS_ENABLE written 0 is answered as done")
        tap.eq(count_audit(dm, "regs=0x3f1"), 0, "... without a request to pmugated")
        tap.eq(fw.write(0, PEBS_ENABLE, 1), RESTREG, "PEBS_ENABLE written 1 is refused")
        tap.eq(count_audit(dm, "regs=0x3f1"), 1, "... by pmugated, and audited")
        tap.eq(fw.write(0, PEBS_ENABLE, 0), NOERROR, "PEBS_ENABLE written 0 after a refused 1: still answered as done")
        tap.eq(fw.read(0, PEBS_ENABLE)[0], RESTREG, "reading PEBS_ENABLE is refused")
        tap.eq(fw.read(99, EVTSEL0)[0], OPENFAIL, "a CPU the machine lacks: 'failed to open device file'")
        tap.eq(fw.read(0x40000000, EVTSEL0)[0], OPENFAIL, "a huge CPU index is just another absent CPU")
        tap.eq(fw.send(0, EVTSEL0, 0, 0, 9)[0], UNKNOWN, "an unknown record type: 'unknown command'")
        tap.eq(fw.read(0, EVTSEL0), (NOERROR, 0), "the session goes on after bad records")
        tap.eq(fw.exit(), 0, "and ends normally")
    finally:
        dm.stop()


def test_perf_node(tap):
    """On a node that counts via perf the core PMU programming becomes perf events."""
    en, usr, anythread = 1 << 22, 1 << 16, 1 << 21
    fixed_ctr, perf_metrics = 0x309, 0x329
    dm = sim_daemon(model="icx", args=["--counters=perf"])
    try:
        fw = Forwarder(dm.socket)
        tap.eq(fw.write(0, EVTSEL0, en | usr | 0x01c7), NOERROR, "perf node: an event select is taken")
        tap.eq(fw.read(0, EVTSEL0), (NOERROR, en | usr | 0x01c7), "... and read back from the forwarder's shadow")
        tap.eq(raw(dm, [["r", 0, EVTSEL0]]), [0], "... without reaching the CPU")
        tap.eq(fw.write(0, FIXED_CTRL, 0x2222), NOERROR, "the fixed counters' control is taken")
        for reg in (PMC0, fixed_ctr, fixed_ctr + 1, fixed_ctr + 2, fixed_ctr + 3, perf_metrics):
            fw.write(0, reg, 0)
        tap.eq(fw.write(0, GLOBAL_CTRL, 1 | (0xF << 32) | (1 << 48)), NOERROR,
               "enabling counting opens the events")
        c = t.Client(dm.socket)
        tap.eq([x[0] for x in c.call("status")["leases"]], [0], "under a lease on CPU 0")
        c.close()
        time.sleep(0.2)
        instr, cycles = fw.read(0, fixed_ctr)[1], fw.read(0, fixed_ctr + 1)[1]
        tap.ok(cycles > 0 and abs(instr / cycles - 1.4) < 0.01,
               "FIXED_CTR0/FIXED_CTR1 count the profile's IPC 1.4 (%d / %d)" % (instr, cycles))
        err, metrics = fw.read(0, perf_metrics)
        fractions = [(metrics >> (8 * i)) & 0xFF for i in range(8)]
        tap.ok(err == NOERROR and abs(sum(fractions[:4]) - 255) <= 2 and abs(fractions[0] - 89) <= 1 and
               fractions[4:] == [0, 0, 0, 0],
               "PERF_METRICS holds the level-1 fractions in 255ths (retiring 35%%: %s)" % fractions)
        tap.eq(fw.write(0, GLOBAL_CTRL, 0), NOERROR, "disabling counting")
        stopped = fw.read(0, fixed_ctr)[1]
        time.sleep(0.05)
        tap.eq(fw.read(0, fixed_ctr)[1], stopped, "stopped: the counter stands still")
        tap.eq(fw.write(0, EVTSEL1, en | usr | anythread | 0x3c), RESTREG, "AnyThread: 'not allowed'")
        tap.eq(fw.write(0, 0x1A6, 0x10001), RESTREG, "offcore response: 'not allowed'")
        tap.eq(fw.exit(), 0, "the session ends normally")
        tap.ok("IA32_PERFEVTSEL1 on CPU 0" in fw.stderr and "ANY" in fw.stderr and "MSR_OFFCORE_RSP" in fw.stderr,
               "stderr names each refused register and why", fw.stderr)
        c = t.Client(dm.socket)
        tap.eq(c.call("status")["leases"], [], "nothing is left held")
        c.close()
    finally:
        dm.stop()


def test_devices(tap):
    dm = sim_daemon()
    try:
        units = imc_units(dm)
        tap.eq(sorted(units), [5, 6, 7, 9, 10, 11], "the simulated machine has LIKWID's six channels")
        fw = Forwarder(dm.socket)
        tap.eq([fw.check(0, d) for d in (0, 5, 6, 7, 9, 10, 11)], [NOERROR] * 7,
               "CPU 0 and the six memory channels of socket 0 are present")
        tap.eq([fw.check(0, d) for d in (1, 8, 13, 17, 43, 51, 600)], [NODEV] * 7,
               "units pmugate does not serve (and unknown indexes) are 'no such device'")
        tap.eq(fw.check(3, 5), NODEV, "a socket the machine lacks has no devices")
        tap.eq(fw.check(5, 0), NODEV, "a CPU the machine lacks fails its check")
        for _ in range(200):
            fw.check(0, 43)
        tap.ok("event=deny" not in dm.audit(), "checks never reach pmugated")
        tap.eq(fw.write(0, IMC_CTL0, 0x400304, device=6), NOERROR, "a control write to channel 1 of socket 0")
        tap.eq(fw.read(0, IMC_CTL0, device=6), (NOERROR, 0x400304), "reads back")
        tap.eq(raw(dm, [["pr", units[6], IMC_CTL0]]), [0x400304], "it reached pmugate's unit for 0a.6")
        tap.eq(fw.read(0, IMC_CTL0, device=43)[0], NODEV, "an access to an MMIO device: 'no such device'")
        tap.eq(fw.write(0, 0x700, 1 << 63), NOERROR, "the U-box freeze-all is answered")
        tap.eq(raw(dm, [["pr", units[d], IMC_BOX_CTL] for d in sorted(units)]), [0x100] * 6,
               "... by freezing every memory controller box of the package")
        tap.eq(fw.write(0, IMC_BOX_CTL, 0, device=5), NOERROR, "a box control write while frozen")
        tap.eq(raw(dm, [["pr", units[5], IMC_BOX_CTL]]), [0x100], "keeps the box frozen")
        tap.eq(fw.write(0, 0x700, 1 << 61), NOERROR, "unfreeze-all")
        tap.eq(raw(dm, [["pr", units[d], IMC_BOX_CTL] for d in sorted(units)]), [0] * 6, "unfreezes them")
        tap.eq(fw.write(0, 0x700, 1), RESTREG, "any other U-box value is refused")
        tap.eq(fw.write(0, 0x700, 1 << 63), NOERROR, "freeze-all after a refused value still works")
        tap.eq(fw.write(0, 0x700, 1 << 61), NOERROR, "and unfreeze-all")
        before = raw(dm, [["pr", units[6], IMC_CTR0]])[0]
        tap.ok(before > 0, "channel 1 counts CAS reads (%d)" % before)
        tap.eq(fw.write(0, IMC_CTR0, 0, device=6), NOERROR, "LIKWID zeroes the read-only counter")
        err, after = fw.read(0, IMC_CTR0, device=6)
        now = raw(dm, [["pr", units[6], IMC_CTR0]])[0]
        tap.ok(err == NOERROR and after < before and now >= before, "it reads from zero (%d) while the hardware "
               "counter was not written (%d -> %d)" % (after, before, now))
        tap.eq(fw.read(0, 0xE02), (NOERROR, 0), "the client uncore status LIKWID reads on SKX reads 0")
        fw.exit()
        tap.eq(raw(dm, [["pr", units[6], IMC_CTL0]]), [0], "the end put the memory controller back")
    finally:
        dm.stop()


def test_kernel_channels(tap):
    """Skylake-SP whose channels the kernel's uncore_imc driver programs for pmugated's own package
    counters: LIKWID's writes to them are refused, the forwarder says why, the channels keep the
    kernel's programming."""
    dm = sim_daemon(kernel_pmu=True)
    try:
        units = imc_units(dm)
        fw = Forwarder(dm.socket)
        tap.eq(fw.write(0, IMC_CTL0 + 8, 0x400304, device=6), NOERROR, "LIKWID's write is collected")
        tap.eq(fw.read(0, IMC_CTL0 + 8, device=6), (NOERROR, 0), "the read after it finds the channel unchanged")
        fw.exit()
        tap.ok("held by the kernel's uncore_imc driver" in fw.stderr,
               "the forwarder reports the daemon's refusal, naming the kernel's driver", fw.stderr)
        tap.eq(raw(dm, [["pr", units[6], IMC_CTL0], ["pr", units[6], IMC_CTL0 + 8]]), [0x400304, 0],
               "the kernel's programming of the channel is intact")
    finally:
        dm.stop()


def test_freerun(tap):
    """Ice Lake-SP: LIKWID's free-running DDR devices answered from the daemon's package counters."""
    dm = sim_daemon(model="icx")
    try:
        counters = package_counters(dm)
        read0, per_count = counters[("uncore_imc_free_running_0/read", 0)]
        fw = Forwarder(dm.socket)
        tap.eq([fw.check(0, d) for d in FREERUN], [NOERROR] * 4,
               "the four free-running devices of socket 0 are present")
        tap.eq([fw.check(0, d) for d in MMIO_IMC], [NOERROR] * 8,
               "the programmable MMIO channels of the four controllers are present (to be refused with the reason)")
        tap.eq([fw.check(1, d) for d in MMIO_IMC], [NODEV] * 8, "but not on a socket the machine lacks")
        tap.eq([fw.check(1, d) for d in FREERUN], [NODEV] * 4, "a socket the machine lacks has none")
        start = raw(dm, [["cr", read0]])[0]
        err, first = fw.read(0, FREERUN_READ, device=51)
        tap.eq((err, first), (NOERROR, 0), "LIKWID's first read of a free-running counter counts from 0")
        before = raw(dm, [["cr", read0]])[0]
        time.sleep(0.2)
        after = raw(dm, [["cr", read0]])[0]
        err, lines = fw.read(0, FREERUN_READ, device=51)
        end = raw(dm, [["cr", read0]])[0]
        least, most = (after - before) * per_count, (end - start) * per_count
        tap.ok(err == NOERROR and least > 0 and least - 32 <= lines * 64 <= most + 32,
               "it answers the bytes in between in 64-byte lines: %d lines, the daemon's counter "
               "advanced %.0f to %.0f bytes around it" % (lines, least, most))
        err, writes = fw.read(0, FREERUN_WRITE, device=54)
        tap.eq(err, NOERROR, "offset 8 is the write counter of controller 3")
        time.sleep(0.05)
        err, writes = fw.read(0, FREERUN_WRITE, device=54)
        tap.ok(err == NOERROR and writes > 0, "which counts (%d lines)" % writes)
        tap.eq(fw.read(0, 0x10, device=51)[0], RWFAIL, "an offset the device lacks fails")
        tap.eq(fw.write(0, 0x0, 0, device=43), RESTREG, "LIKWID clearing a programmable channel: 'not allowed'")
        tap.eq(fw.read(0, FREERUN_READ, device=43)[0], RESTREG, "reading a programmable channel's counter: "
               "'not allowed', not a 0 LIKWID would turn into 0 MB/s")
        tap.eq(fw.write(0, FREERUN_READ, 0, device=51), NOERROR, "LIKWID's zeroing write is answered")
        err, again = fw.read(0, FREERUN_READ, device=51)
        tap.ok(err == NOERROR and again < lines, "and the counter counts from 0 again (%d < %d)" % (again, lines))
        tap.eq(fw.write(0, FREERUN_READ, 5, device=51), RESTREG, "any other value is refused")
        tap.eq(fw.write(0, UBOX_CTL, 1 << 63), NOERROR, "the U-box freeze-all is answered")
        frozen = fw.read(0, FREERUN_READ, device=51)
        time.sleep(0.05)
        tap.eq(fw.read(0, FREERUN_READ, device=51), frozen, "LIKWID's frozen uncore: the free-running count "
               "stands still (%d lines), as LIKWID's freeze means" % frozen[1])
        tap.ok(raw(dm, [["cr", read0]])[0] > end, "while the daemon's counter went on")
        tap.eq(fw.write(0, UBOX_CTL, 1 << 61), NOERROR, "unfreeze-all")
        time.sleep(0.05)
        err, thawed = fw.read(0, FREERUN_READ, device=51)
        tap.ok(err == NOERROR and frozen[1] < thawed < frozen[1] + (end - before) * per_count / 64,
               "and counts on from there, without the frozen time (%d lines)" % thawed)
        tap.eq(fw.write(0, UBOX_CTL, 0), NOERROR, "and the 0 LIKWID ends with")
        tap.ok("event=deny" not in dm.audit(), "none of it was refused by pmugated (nothing was asked of it)")
        tap.eq(fw.write(0, UBOX_CTL, 1), RESTREG, "any other U-box value goes to pmugated, which refuses it")
        tap.eq(count_audit(dm, "event=deny"), 1, "and audits it")
        fw.exit()
        tap.ok("MEM_FREERUN" in fw.stderr and "not served" in fw.stderr,
               "the refused channel is explained once on LIKWID's stderr, naming MEM_FREERUN", fw.stderr)
        tap.eq(fw.stderr.count("not served"), 1, "once")
        c = t.Client(dm.socket)
        tap.eq(c.call("status")["leases"], [], "the package lease ends with LIKWID")
        c.close()
    finally:
        dm.stop()
    dm = sim_daemon(mode="job", model="icx")
    try:
        rc, out, err = t.run_cli([t.PMUGATECTL, "grant", "--job", "12", "--uid", str(t.UNPRIVILEGED_UID), "--cpus",
                                  "0"], dm.socket)
        tap.eq(rc, 0, "the job is granted CPU 0 of the two-core package")
        fw = Forwarder(dm.socket, user=UNPRIVILEGED)
        tap.eq(fw.read(0, FREERUN_READ, device=51)[0], RESTREG, "the package's traffic needs the package")
        tap.eq(fw.write(0, UBOX_CTL, 1 << 63), RESTREG, "so does the U-box freeze")
        tap.eq(fw.write(0, 0x186, 0x4300C0), NOERROR, "the job's CPU is still the user's")
        fw.exit()
    finally:
        dm.stop()


def test_killed(tap):
    dm = sim_daemon()
    try:
        fw = Forwarder(dm.socket)
        fw.write(0, EVTSEL0, 0x4300C0)
        fw.write(1, FIXED_CTRL, 0x222)
        fw.write(1, GLOBAL_CTRL, 0x700000003)
        tap.eq(raw(dm, [["r", 0, EVTSEL0], ["r", 1, FIXED_CTRL]]), [0x4300C0, 0x222], "programmed")
        fw.proc.send_signal(signal.SIGKILL)
        fw.wait()
        time.sleep(0.2)
        got = raw(dm, [["r", 0, EVTSEL0], ["r", 1, FIXED_CTRL]])
        tap.eq(got, [0, 0], "a killed forwarder leaves nothing programmed")
        fw = Forwarder(dm.socket)
        fw.write(0, EVTSEL0, 0x4300C0)
        fw.sock.sendall(b"\0" * 16)
        fw.sock.shutdown(socket.SHUT_WR)
        tap.eq(fw.wait(), 1, "half a record then EOF ends the session with status 1")
        tap.ok("partial record" in fw.stderr, "and says so", fw.stderr)
        tap.eq(raw(dm, [["r", 0, EVTSEL0]]), [0], "and restores")
        fw = Forwarder(dm.socket)
        fw.write(0, EVTSEL0, 0x4300C0)
        fw.sock.close()
        fw.sock = None
        tap.eq(fw.wait(), 0, "LIKWID going away without EXIT ends the forwarder")
        tap.eq(raw(dm, [["r", 0, EVTSEL0]]), [0], "and restores")
    finally:
        dm.stop()


def test_start_up(tap):
    fw = Forwarder(None, ["--accept-timeout=200"], connect=False)
    rc = fw.wait()
    tap.ok(rc == 1 and "no client connected" in fw.stderr and not os.path.exists(fw.path),
           "nobody connects: exit 1, socket removed", fw.stderr)
    d = t.workdir()
    fw = Forwarder(os.path.join(d, "absent.sock"))
    tap.eq(fw.read(0, EVTSEL0)[0], LOCKED, "pmugated unreachable: accesses are 'locked'")
    tap.eq(fw.check(0, 0), LOCKED, "and so are checks")
    tap.eq(fw.exit(), 0, "the session still ends cleanly")
    tap.ok("cannot reach pmugated" in fw.stderr, "and the reason is on LIKWID's stderr", fw.stderr)
    dm = sim_daemon()
    try:
        fw = Forwarder(dm.socket, user=UNPRIVILEGED, connect=False)
        s = connect_as(fw.path)   # root passes the file mode; the peer check does not
        rc = fw.wait()
        s.close()
        tap.ok(rc == 1 and "another user" in fw.stderr, "a client of another uid is refused", fw.stderr)
        e = dict(os.environ, PMUGATE_SOCKET=dm.socket, PMUGATE_LIKWID_VERSION="5.2")
        p = subprocess.run(["sh", "-c", 'exec env -i "$0" --accept-timeout=5000 & pid=$!; '
                            'while [ ! -S /tmp/likwid-$pid ]; do sleep 0.01; done; '
                            'python3 -c "import socket,struct,sys; s=socket.socket(socket.AF_UNIX); '
                            's.connect(\'/tmp/likwid-%s\' % sys.argv[1]); s.sendall(struct.pack(\'=IIQIIII\',0,0x186,0,0,0,0,0)); '
                            'print(struct.unpack(\'=IIQIIII\', s.recv(32))[5]); s.sendall(struct.pack(\'=IIQIIII\',0,0,0,0,3,0,0))" '
                            '$pid; wait $pid', lt.ACCESSD], capture_output=True, text=True, env=e, timeout=20)
        tap.ok(p.returncode == 0 and p.stdout.strip() == "0",
               "with an empty environment, the socket comes from the parent's PMUGATE_SOCKET", p.stdout + p.stderr)
    finally:
        dm.stop()


def test_job_scope(tap):
    dm = sim_daemon(mode="job")
    try:
        rc, out, err = t.run_cli([t.PMUGATECTL, "grant", "--job", "12", "--uid", str(t.UNPRIVILEGED_UID), "--cpus",
                                  "0"], dm.socket)
        tap.eq(rc, 0, "the job is granted CPU 0")
        fw = Forwarder(dm.socket, user=UNPRIVILEGED)
        if fw.proc.poll() is not None:
            raise AssertionError("forwarder exited: " + fw.proc.stderr.read())
        tap.eq(fw.write(0, EVTSEL0, 0x4300C0), NOERROR, "the job's user programs its CPU")
        tap.eq(fw.read(0, EVTSEL0), (NOERROR, 0x4300C0), "and reads it")
        tap.eq(fw.write(1, EVTSEL0, 0x4300C0), RESTREG, "a CPU outside the job: 'not allowed'")
        tap.eq(fw.read(1, EVTSEL0)[0], RESTREG, "reading it too")
        tap.eq(fw.write(0, 0xD8, 0x400304, device=5), RESTREG, "the package's memory controller needs the package")
        tap.eq(fw.write(1, PEBS_ENABLE, 0), RESTREG, "even the PEBS answer needs the CPU")
        tap.eq(raw(dm, [["r", 1, EVTSEL0]]), [0], "nothing reached CPU 1")
        fw.exit()
        tap.ok("outside" in fw.stderr or "job" in fw.stderr, "the lease refusal is explained on stderr", fw.stderr)
        tap.eq(raw(dm, [["r", 0, EVTSEL0]]), [0], "CPU 0 is restored at the end")
    finally:
        dm.stop()


# Each LIKWID release's numbers of the devices the forwarder serves (tests/likwid/devices/, from
# LIKWID's pci_types.h): memory channels 0a.2 and 0c.2 of Skylake-SP, controller 0's first
# programmable channel and free-running counters on Ice Lake-SP, and the first unserved index.
RELEASE_DEVICES = {
    "5.2": {"imc0": 5, "imc1": 9, "mmio": 43, "freerun": 51, "unserved": 1, "past": 55},
    "5.3.0": {"imc0": 21, "imc1": 25, "mmio": 90, "freerun": 110, "unserved": 5, "past": 317},
    "5.4.1": {"imc0": 49, "imc1": 53, "mmio": 149, "freerun": 169, "unserved": 5, "past": 499},
}


def test_versions(tap):
    """LIKWID 5.3 and 5.4 number their devices differently from 5.2: each release's numbers
    reach the same unit; an unknown release is refused, never answered with zeros."""
    dm = sim_daemon()
    try:
        units = imc_units(dm)
        for release, dev in RELEASE_DEVICES.items():
            fw = Forwarder(dm.socket, version=release)
            tap.eq([fw.check(0, dev["imc0"]), fw.check(0, dev["imc1"])], [NOERROR] * 2,
                   "LIKWID %s: its numbers of memory channels 0a.2 and 0c.2 are present" % release)
            tap.eq([fw.check(0, dev["unserved"]), fw.check(0, dev["past"])], [NODEV] * 2,
                   "LIKWID %s: a device pmugate does not serve, and one past its list, are not" % release)
            tap.eq(fw.write(0, IMC_CTL0, 0x400304, device=dev["imc1"]), NOERROR,
                   "LIKWID %s: a control write to its device %d" % (release, dev["imc1"]))
            tap.eq(fw.read(0, IMC_CTL0, device=dev["imc1"]), (NOERROR, 0x400304), "reads back")
            tap.eq(raw(dm, [["pr", units[9], IMC_CTL0], ["pr", units[5], IMC_CTL0]]), [0x400304, 0],
                   "LIKWID %s: it reached 0c.2, and nothing else" % release)
            tap.eq(fw.exit(), 0, "LIKWID %s: the session ends" % release)
            tap.eq(raw(dm, [["pr", units[9], IMC_CTL0]]), [0], "and is put back")
        for release, why in (("6.0", "PMUGATE_LIKWID_VERSION=6.0"), (None, "no liblikwid")):
            fw = Forwarder(dm.socket, version=release)
            tap.eq([fw.check(0, 0), fw.read(0, EVTSEL0), fw.write(0, EVTSEL0, 0x4300C0)],
                   [LOCKED, (LOCKED, 0), LOCKED], "an unknown LIKWID release (%s): every access is 'locked'" % why)
            fw.exit()
            tap.ok("unknown LIKWID release" in fw.stderr and why in fw.stderr,
                   "and the forwarder says why on LIKWID's stderr", fw.stderr)
        tap.eq(raw(dm, [["r", 0, EVTSEL0]]), [0], "nothing reached the CPU")
    finally:
        dm.stop()
    dm = sim_daemon(model="icx")
    try:
        for release, dev in RELEASE_DEVICES.items():
            fw = Forwarder(dm.socket, version=release)
            tap.eq(fw.check(0, dev["freerun"]), NOERROR, "LIKWID %s: its free-running device %d is controller 0's"
                   % (release, dev["freerun"]))
            fw.read(0, FREERUN_READ, device=dev["freerun"])
            time.sleep(0.05)
            err, lines = fw.read(0, FREERUN_READ, device=dev["freerun"])
            tap.ok(err == NOERROR and lines > 0, "LIKWID %s: and counts read traffic (%d lines)" % (release, lines))
            tap.eq(fw.read(0, 0, device=dev["mmio"])[0], RESTREG,
                   "LIKWID %s: its programmable channel %d is refused, not read as 0" % (release, dev["mmio"]))
            fw.exit()
    finally:
        dm.stop()


def test_likwid_verb(tap):
    """pmugate likwid: the command line around LIKWID, without LIKWID."""
    env = {"PMUGATE_LIKWID_ACCESSD": os.path.abspath(lt.ACCESSD)}
    rc, out, err = t.run_cli([t.PMUGATE, "likwid"], "/nonexistent", env=env)
    tap.ok(rc == 2 and "after --" in err, "no command: usage error", err)
    rc, out, err = t.run_cli([t.PMUGATE, "likwid", "--forwarder=relative/path", "--", "true"], "/nonexistent")
    tap.ok(rc == 1 and "relative path" in err, "a relative forwarder is refused", err)
    rc, out, err = t.run_cli([t.PMUGATE, "likwid", "--forwarder=/nonexistent/x", "--", "true"], "/nonexistent")
    tap.ok(rc == 1 and "not an executable" in err, "a missing forwarder is refused", err)
    rc, out, err = t.run_cli([t.PMUGATE, "likwid", "--", "no-such-command-x"], "/nonexistent", env=env)
    tap.eq(rc, 127, "an unknown command exits 127")
    script = ('d=$(dirname "$(command -v likwid-accessD)"); echo "$d"; readlink "$d/likwid-accessD"; '
              'echo "$PMUGATE_SOCKET"; exit 7')
    rc, out, err = t.run_cli([t.PMUGATE, "--socket=/run/x.sock", "likwid", "--", "sh", "-c", script], "/y", env=env)
    lines = out.split()
    tap.ok(rc == 7 and len(lines) == 3 and lines[0].startswith("/tmp/pmugate-likwid-") and
           lines[1] == os.path.abspath(lt.ACCESSD) and lines[2] == "/run/x.sock",
           "LIKWID finds the forwarder first in PATH, the socket in PMUGATE_SOCKET; the exit status is kept", out + err)
    tap.ok(len(lines) == 3 and not os.path.exists(lines[0]), "the private directory is gone afterwards")
    rc, out, err = t.run_cli([t.PMUGATE, "likwid", "--", "sh", "-c", "kill -TERM $$"], "/y", env=env)
    tap.eq(rc, 128 + 15, "a command killed by a signal: 128 + the signal")


if __name__ == "__main__":
    raise SystemExit(t.Tap().run([test_socket_and_session, test_batching, test_refusals, test_perf_node,
                                  test_devices,
                                  test_kernel_channels, test_freerun, test_killed, test_start_up, test_job_scope,
                                  test_versions, test_likwid_verb]))
