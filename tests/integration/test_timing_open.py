#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""timing_open through the real daemon, its opener and this machine's real kernel (docs/PERF.md,
"Timing"): the class lbr off by default and given by group or by a job's grant; IP sampling of a
user's spinning process with the rings of the handed fds read here (PERF_RECORD_SAMPLE of its
pid); branch sampling reaching the simulator's driver on spr and refused on zen4 (AMD's LBR
records no cycles) and on this kernel (no branch stack); the handle closed by perf_close, by a
reload that takes the class away and by a revoked grant, its fds disabled; and every hostile
request (another user's process, init, an exited process, absurd periods, rates over the
kernel's perf_event_max_sample_rate, too many or bad CPUs, unknown keys, a flood) refused with
its reason while the daemon serves everyone else."""

import array
import ctypes
import json
import mmap
import os
import socket
import struct
import subprocess
import sys
import time

import msgpack

import perf_cgroup_fixture as fixture
import pmugatetest as t

USER = t.UNPRIVILEGED_UID
OTHER_USER = USER + 1
OTHER_GID = 4999
LBR_GID = 4250
RING_DATA_BYTES = 256 * 1024            # TIMING_RING_DATA_BYTES
CPUS_PER_OPEN = 64                      # TIMING_CPUS_PER_OPEN
PERF_RECORD_SAMPLE = 9
IPS_PERIOD = 1000003                    # 1 ms of cpu-clock: a ring holds far more than a second's samples


def kernel_rate():
    with open("/proc/sys/kernel/perf_event_max_sample_rate") as f:
        return f.read().strip()


def start(mode="open", lbr_groups=str(LBR_GID), rate=None):
    """A daemon on a fake machine of CPUs 0 and 1 (this machine's), the real kernel's perf
    events, and under --root the kernel's perf_event_max_sample_rate: this kernel's, or rate."""
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=2, smt=False)
    conf = os.path.join(d, "pmugate.conf")
    with open(conf, "w") as f:
        f.write("[access]\nmode = %s\nadmin_groups = %d\nuser_groups = %d\n[rights]\nlbr_groups = %s\n" % (
            mode, t.ADMIN_GID, t.USER_GID, lbr_groups))
    m._write("proc/sys/kernel/perf_event_max_sample_rate", (rate if rate is not None else kernel_rate()) + "\n")
    m.set_user("user", USER, OTHER_GID, [t.USER_GID, LBR_GID])
    m.set_user("other", OTHER_USER, OTHER_GID, [t.USER_GID])
    return d, m, t.Daemon(d, ["--root=" + m.root], config=conf)


def ctl(dm, *args):
    return t.run_cli([t.PMUGATECTL] + list(args), dm.socket)


def err(r):
    return r.get("error", {}).get("name", "ok"), r.get("error", {}).get("reason", "")


def recv_with_fds(sock):
    fds = array.array("i")
    msg, anc, _, _ = sock.recvmsg(1 << 20, socket.CMSG_SPACE(CPUS_PER_OPEN * fds.itemsize))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
    return msgpack.unpackb(msg, raw=False), list(fds)


def timing_open(sock_path, **fields):
    """One timing_open on a connection of its own: the reply and the fds that came with it."""
    c = t.Client(sock_path)
    req = {"v": 1, "id": 1, "op": "timing_open"}
    req.update(fields)
    c.sock.send(msgpack.packb(req))
    reply, fds = recv_with_fds(c.sock)
    return c, reply, fds


def ring_map(fd):
    """The ring of a timing fd: one metadata page and the data, mapped before the events fire
    (a sample with no ring to go to is dropped)."""
    return mmap.mmap(fd, mmap.PAGESIZE + RING_DATA_BYTES, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)


def ring_records(mm):
    """(type, pid) of every record in a mapped ring: the metadata page's data_head,
    data_offset and data_size (struct perf_event_mmap_page), then perf_event_header {u32 type,
    u16 misc, u16 size} records; a sample's pid follows its IP (sample_type IP, TID, ...)."""
    head = struct.unpack_from("<Q", mm, 1024)[0]
    offset, size = struct.unpack_from("<QQ", mm, 1040)
    if offset == 0:
        offset, size = mmap.PAGESIZE, RING_DATA_BYTES

    def take(pos, n):
        return bytes(mm[offset + (pos + i) % size] for i in range(n))

    records, pos = [], max(0, head - size)
    while pos + 8 <= head:
        kind, _, length = struct.unpack("<IHH", take(pos, 8))
        if length < 8:
            break
        pid = struct.unpack("<I", take(pos + 16, 4))[0] if kind == PERF_RECORD_SAMPLE else None
        records.append((kind, pid))
        pos += length
    return records


# Waits for a line, then spins in user space for the given seconds of its own CPU time (the
# clock, a system call, read once per 20000 rounds: the events sample user space only).
SPIN = """
import sys, time
sys.stdin.readline()
end = time.process_time() + float(sys.argv[1])
while time.process_time() < end:
    for i in range(20000):
        pass
"""


# Waits for a line, spins, then execs itself to spin again (argv: before, after).
EXEC_SPIN = """
import os, sys, time
def spin(s):
    end = time.process_time() + s
    while time.process_time() < end:
        for i in range(20000):
            pass
if sys.argv[1] != "after":
    sys.stdin.readline()
    spin(float(sys.argv[1]))
    os.execv(sys.executable, [sys.executable, "-c", sys.argv[3], "after", sys.argv[2], sys.argv[3]])
spin(float(sys.argv[2]))
"""


def sample_own_process(sock_path, mode="ips", seconds=0.6, argv=None, **fields):
    """In a child as USER (with the lbr group): a spinning process of its own, timing_open on
    it on CPUs 0 and 1, the spin, then each ring's samples. Returns a JSON summary."""
    def child():
        # a uid change without exec leaves this process undumpable; the spinner execs anyway
        ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)
        spin = subprocess.Popen(argv or ["/usr/bin/python3", "-c", SPIN, str(seconds)], stdin=subprocess.PIPE,
                                text=True)
        try:
            req = dict(mode=mode, pid=spin.pid, on_exec=False, cpus=[0, 1])
            req.update(fields)
            c, reply, fds = timing_open(sock_path, **req)
            maps = [ring_map(fd) for fd in fds]
            spin.stdin.write("go\n")
            spin.stdin.flush()
            spin.wait(timeout=30)
            rings = [ring_records(mm) for mm in maps]
            samples = [sum(1 for k, p in r if k == PERF_RECORD_SAMPLE) for r in rings]
            mine = [sum(1 for k, p in r if k == PERF_RECORD_SAMPLE and p == spin.pid) for r in rings]
            closed = c.call("perf_close", handle=reply.get("handle", 0)) if reply.get("ok") else None
            return dict(reply=reply, n_fds=len(fds), samples=samples, mine=mine, pid=spin.pid, closed=closed)
        finally:
            if spin.poll() is None:
                spin.kill()
                spin.wait()
    return t.in_child_as(USER, OTHER_GID, [t.USER_GID, LBR_GID], child)


def test_ips_on_the_real_kernel(tap):
    d, m, dm = start()
    try:
        out = sample_own_process(dm.socket, period=IPS_PERIOD)
        r = out["reply"]
        tap.ok(r.get("ok") and r["cpus"] == [0, 1] and r["fds"] == 2 == out["n_fds"] and r["period"] == IPS_PERIOD,
               "timing_open mode ips: two fds, one per CPU in order, the period asked", out)
        tap.ok(sum(out["mine"]) >= 100, "the rings hold PERF_RECORD_SAMPLE records of the spinning process "
               "(0.6 s at 1 kHz: >= 100)", out)
        tap.eq(sum(out["mine"]), sum(out["samples"]), "every sample is of its pid (its task, nobody else's)")
        tap.ok(out["closed"] and out["closed"].get("ok"), "perf_close closes the timing handle", out["closed"])
        audit = dm.audit()
        tap.ok("event=timing-open verdict=allowed" in audit and "mode ips pid %d period %d" % (out["pid"], IPS_PERIOD)
               in audit, "the open is audited with mode, pid and period", audit[-2000:])
        tap.ok("event=timing-close verdict=closed" in audit, "and so is the close")

        out = sample_own_process(dm.socket)
        tap.ok(out["reply"].get("ok") and out["reply"]["period"] == 100003, "no period: the default, 100003 ns",
               out["reply"])
    finally:
        dm.stop()


def test_on_exec(tap):
    d, m, dm = start()
    try:
        argv = ["/usr/bin/python3", "-c", EXEC_SPIN, "0.5", "0.5", EXEC_SPIN]
        out = sample_own_process(dm.socket, argv=argv, period=IPS_PERIOD)
        plain = sum(out["mine"])
        out = sample_own_process(dm.socket, argv=argv, period=IPS_PERIOD, on_exec=True)
        after = sum(out["mine"])
        tap.ok(out["reply"].get("ok"), "on_exec: timing_open of a process before its exec", out["reply"])
        # the rate depends on the machine's load: compare with the same run without on_exec
        tap.ok(plain >= 100 and 0.25 * plain <= after <= 0.75 * plain,
               "on_exec samples from the exec on: about the 0.5 s after it (%d) of the 1 s in all (%d)" % (after, plain),
               out)
    finally:
        dm.stop()


def client_lines(dm, *args):
    """The library's timing_open through tests/integration/timing_client.c, as USER."""
    rc, out, e = t.run_cli([os.environ["PMUGATE_TIMING_CLIENT"], dm.socket] + [str(a) for a in args], dm.socket,
                           uid=USER, gid=OTHER_GID, groups=[t.USER_GID, LBR_GID])
    lines = {}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        lines.setdefault(key, []).append(value)
    return rc, lines, out + e


def test_client_library(tap):
    d, m, dm = start()
    try:
        rc, lines, text = client_lines(dm, "ips", IPS_PERIOD, 1, 0)
        tap.ok(rc == 0 and lines.get("fds") == ["2"] and lines.get("period") == [str(IPS_PERIOD)]
               and lines.get("cpu") == ["0 1", "1 0"],
               "pmugate_timing_open: two fds, their CPUs in the request's order, the period", text)
        tap.eq(lines.get("past"), ["-9 -22"], "past the last fd: -EBADF and -EINVAL")
        mine = sum(int(v.split()[1]) for v in lines.get("samples", []))
        others = sum(int(v.split()[1]) for v in lines.get("others", []))
        tap.ok(mine >= 100 and others == 0, "the mapped rings hold the child's samples alone (%d)" % mine, text)
        tap.eq(lines.get("closed"), ["0"], "pmugate_timing_close closes it at the daemon")
        rc, lines, text = client_lines(dm, "ips", 0, 0)
        tap.ok(lines.get("period") == ["100003"], "period 0: the daemon's default comes back", text)
        rc, lines, text = client_lines(dm, "branches", 0, 0)
        tap.ok(lines.get("refused") and "has no branch stack" in lines["refused"][0],
               "a refusal gives the daemon's reason", text)
        rc, lines, text = client_lines(dm, "ips", 0, *range(65))
        tap.ok(lines.get("refused") and "more than 64 CPUs" in lines["refused"][0],
               "65 CPUs: refused by the library before anything is sent", text)
    finally:
        dm.stop()


def test_class_off(tap):
    d, m, dm = start(lbr_groups="")
    try:
        out = sample_own_process(dm.socket, period=IPS_PERIOD)
        name, why = err(out["reply"])
        tap.ok(name == "not-authorized" and "class lbr" in why and "lbr_groups" in why,
               "lbr_groups empty (the shipped policy): timing_open refused, saying how to get the class", why)
        tap.eq(out["n_fds"], 0, "and no fd arrives")
        tap.ok("verdict=denied" in dm.audit() and "op=timing_open" in dm.audit() and "class lbr" in dm.audit(),
               "the refusal is audited", dm.audit())
    finally:
        dm.stop()


def test_reload_takes_the_class(tap):
    d, m, dm = start()
    conf = os.path.join(d, "pmugate.conf")
    opened_r, opened_w = os.pipe()
    reloaded_r, reloaded_w = os.pipe()
    try:
        def child():
            ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)
            spin = subprocess.Popen(["/usr/bin/python3", "-c", SPIN, "5"], stdin=subprocess.PIPE, text=True)
            try:
                c, reply, fds = timing_open(dm.socket, mode="ips", pid=spin.pid, on_exec=False, cpus=[0, 1],
                                            period=IPS_PERIOD)
                maps = [ring_map(fd) for fd in fds]
                spin.stdin.write("go\n")
                spin.stdin.flush()
                time.sleep(0.2)
                before = [len(ring_records(mm)) for mm in maps]
                # the parent narrows the policy and reloads, then says so
                os.write(opened_w, b"x")
                os.read(reloaded_r, 1)
                at_reload = [len(ring_records(mm)) for mm in maps]
                time.sleep(0.3)
                later = [len(ring_records(mm)) for mm in maps]
                notice = c.call("hello")
                again = c.call("perf_close", handle=reply.get("handle", 0))
                return dict(reply=reply, before=before, at_reload=at_reload, later=later, notice=notice, again=again)
            finally:
                spin.kill()
                spin.wait()

        import threading
        result = {}
        th = threading.Thread(target=lambda: result.update(out=t.in_child_as(USER, OTHER_GID, [t.USER_GID, LBR_GID],
                                                                               child)))
        th.start()
        os.read(opened_r, 1)
        with open(conf, "w") as f:
            f.write("[access]\nmode = open\nadmin_groups = %d\nuser_groups = %d\n[rights]\nlbr_groups =\n" % (
                t.ADMIN_GID, t.USER_GID))
        rc, _, e = ctl(dm, "reload")
        os.write(reloaded_w, b"x")
        th.join(timeout=30)
        out = result.get("out", {})
        tap.eq(rc, 0, "the admin reloads a policy without lbr_groups")
        tap.ok(out.get("reply", {}).get("ok") and sum(out["before"]) > 0, "a timing handle was sampling", out)
        tap.ok(out and out["later"] == out["at_reload"],
               "the reload closed it: the fds the client holds are disabled, no record arrives after", out)
        tap.ok(err(out.get("again", {}))[0] == "bad-field", "and the handle is gone", out.get("again"))
        tap.ok("event=timing-close verdict=revoked" in dm.audit(), "the close is audited as revoked")
    finally:
        for fd in (opened_r, opened_w, reloaded_r, reloaded_w):
            os.close(fd)
        dm.stop()


def test_granted_by_job(tap):
    why = fixture.usable()
    if why:
        tap.skip("a job's grant of the class lbr, in a real job cgroup", why)
        return
    d, m, dm = start("job", lbr_groups="")
    jobs = None
    try:
        ctl(dm, "grant", "--job", "21", "--uid", str(USER), "--cpus", "0-1")
        jobs = fixture.JobCgroups(("21",), machine_root=m.root)
        job_dir = jobs.dir("21")

        # a process of the same user that the job does not hold
        outside = t.spawn(["/usr/bin/python3", "-c", "import time; time.sleep(60)"],
                          preexec_fn=t.as_user(USER, OTHER_GID, [t.USER_GID]))

        def sample_in_job(sock_path, seconds):
            ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)
            spin = subprocess.Popen(["/usr/bin/python3", "-c", SPIN, str(seconds)], stdin=subprocess.PIPE,
                                    text=True)
            try:
                c, reply, fds = timing_open(sock_path, mode="ips", pid=spin.pid, on_exec=False, cpus=[0, 1],
                                            period=IPS_PERIOD)
                maps = [ring_map(fd) for fd in fds]
                spin.stdin.write("go\n")
                spin.stdin.flush()
                spin.wait(timeout=30)
                samples = sum(sum(1 for k, p in ring_records(mm) if k == PERF_RECORD_SAMPLE and p == spin.pid)
                              for mm in maps)
                c2, out_reply, _ = timing_open(sock_path, mode="ips", pid=outside.pid, on_exec=False, cpus=[0])
                return dict(reply=reply, samples=samples, outside=out_reply)
            finally:
                spin.kill()
                spin.wait()

        def run(n):
            return t.in_child_as(USER, OTHER_GID, [t.USER_GID], lambda: sample_in_job(dm.socket, n),
                                 join=os.path.join(job_dir, "cgroup.procs"))

        out = run(0.3)
        name, why = err(out["reply"])
        tap.ok(name == "not-authorized" and "class lbr" in why, "job 21's grant without --lbr: refused", why)
        rc, o, e = ctl(dm, "grant", "--job", "21", "--uid", str(USER), "--cpus", "0-1", "--lbr")
        tap.ok(rc == 0 and "with class lbr" in o, "the admin grants job 21 again with --lbr", (rc, o, e))
        out = run(0.4)
        tap.ok(out["reply"].get("ok") and out["samples"] > 0, "now the job's process is sampled", out)
        name, why = err(out["outside"])
        tap.ok(name == "out-of-scope", "a process of the same user outside the job's cgroup is refused", why)
        t.end(outside)
        tap.ok("granted to uid %d with class lbr" % USER in dm.audit(), "the grant of the class is audited")

        # The job's grant replaced without --lbr while a handle samples: it closes.
        opened_r, opened_w = os.pipe()
        replaced_r, replaced_w = os.pipe()

        def hold_in_job():
            ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)
            spin = subprocess.Popen(["/usr/bin/python3", "-c", SPIN, "5"], stdin=subprocess.PIPE, text=True)
            try:
                c, reply, fds = timing_open(dm.socket, mode="ips", pid=spin.pid, on_exec=False, cpus=[0, 1],
                                            period=IPS_PERIOD)
                os.write(opened_w, b"x")
                os.read(replaced_r, 1)
                notice = c.call("timing_open", mode="ips", pid=spin.pid, on_exec=False, cpus=[0])
                after = c.call("timing_open", mode="ips", pid=spin.pid, on_exec=False, cpus=[0])
                return dict(reply=reply, notice=notice, after=after)
            finally:
                spin.kill()
                spin.wait()

        import threading
        result = {}
        th = threading.Thread(target=lambda: result.update(out=t.in_child_as(
            USER, OTHER_GID, [t.USER_GID], hold_in_job, join=os.path.join(job_dir, "cgroup.procs"))))
        th.start()
        os.read(opened_r, 1)
        rc, o, e = ctl(dm, "grant", "--job", "21", "--uid", str(USER), "--cpus", "0-1")
        os.write(replaced_w, b"x")
        th.join(timeout=30)
        for fd in (opened_r, opened_w, replaced_r, replaced_w):
            os.close(fd)
        out = result.get("out", {})
        tap.ok(rc == 0 and out.get("reply", {}).get("ok"), "a handle samples when job 21 is granted again without "
               "--lbr", (rc, out))
        name, why = err(out.get("notice", {}))
        tap.ok(name == "revoked" and "perf handle" in why, "the holder is told 'revoked': its timing handle closed",
               why)
        name, why = err(out.get("after", {}))
        tap.ok(name == "not-authorized" and "class lbr" in why, "and the class is gone", why)
        tap.ok("event=timing-close verdict=revoked" in dm.audit(), "the close is audited as revoked")
    finally:
        dm.stop()
        if jobs:
            jobs.remove()


def test_branches(tap):
    conf_dir = t.workdir()
    conf = os.path.join(conf_dir, "pmugate.conf")
    t.write_config(conf, extra="[rights]\nlbr_groups = %d\n" % LBR_GID)
    for model, want in (("spr", "driver"), ("zen4", "amd")):
        sim = t.Sim(model, config=conf, cores=1, smt=True)
        try:
            out = sample_own_process(sim.daemon.socket, mode="branches", seconds=0.2)
            name, why = err(out["reply"])
            if want == "driver":
                # Every check passed and the simulator's driver was asked: it hands back rings
                # (fds) once it has them, and says it cannot before.
                tap.ok((out["reply"].get("ok") and out["n_fds"] == 2) or "perf driver" in why,
                       "spr: mode branches passes every check and reaches the simulator's driver", out)
            else:
                tap.ok(name == "bad-field" and "records no cycles (AMD LbrExtV2)" in why,
                       "zen4: mode branches refused, its LBR records no cycles", why)
            tap.ok(sim.daemon.alive(), "%s: the daemon serves on" % model)
        finally:
            sim.stop()
    d, m, dm = start()
    try:
        out = sample_own_process(dm.socket, mode="branches", seconds=0.1)
        name, why = err(out["reply"])
        tap.ok(name == "bad-field" and "has no branch stack" in why,
               "this machine's kernel (no core PMU, no caps/branches): mode branches refused", why)
    finally:
        dm.stop()
    # A core PMU whose caps/branches is hostile: no depth is believed, branch sampling refused.
    for text in ("32\n", "4096\n", "-1\n", "x\n"):
        d, m, dm = start()
        try:
            m._write("sys/bus/event_source/devices/cpu/type", "4\n")
            m._write("sys/bus/event_source/devices/cpu/format/event", "config:0-7\n")
            m._write("sys/bus/event_source/devices/cpu/caps/branches", text)
            dm.stop()
            dm = t.Daemon(d, ["--root=" + m.root], config=os.path.join(d, "pmugate.conf"))
            out = sample_own_process(dm.socket, mode="branches", seconds=0.1)
            name, why = err(out["reply"])
            if text == "32\n":
                # believed, and then the kernel here has no cycles event to sample
                tap.ok("has no branch stack" not in why and name != "ok",
                       "caps/branches 32: the depth is believed; this kernel still opens no cycles event", why)
            else:
                tap.ok("has no branch stack" in why, "caps/branches %r is no depth: refused" % text, why)
        finally:
            dm.stop()


def call_timing(dm, uid=USER, gids=(t.USER_GID, LBR_GID), **fields):
    def child():
        c = t.Client(dm.socket)
        return c.call("timing_open", **fields)
    return t.in_child_as(uid, OTHER_GID, list(gids), child)


def test_hostile(tap):
    d, m, dm = start()
    other = t.spawn(["/usr/bin/python3", "-c", "import time; time.sleep(60)"],
                    preexec_fn=t.as_user(OTHER_USER, OTHER_GID, [t.USER_GID]))
    mine = t.spawn(["/usr/bin/python3", "-c", "import time; time.sleep(60)"],
                   preexec_fn=t.as_user(USER, OTHER_GID, [t.USER_GID]))
    gone = t.spawn(["/bin/true"], preexec_fn=t.as_user(USER, OTHER_GID, [t.USER_GID]))
    gone.wait()
    threads = t.spawn(["/usr/bin/python3", "-c", "import threading, time\n"
                       "[threading.Thread(target=time.sleep, args=(60,)).start() for _ in range(3)]\n"
                       "time.sleep(60)"], preexec_fn=t.as_user(USER, OTHER_GID, [t.USER_GID]))
    time.sleep(0.3)
    base = dict(mode="ips", on_exec=False, cpus=[0])
    cases = [
        ("another user's process", dict(base, pid=other.pid), "not-authorized", "is not yours"),
        ("process 1", dict(base, pid=1), "not-authorized", "process 1"),
        ("a process that exited", dict(base, pid=gone.pid), "bad-field", "exited"),
        ("a process of several threads, not from its exec", dict(base, pid=threads.pid), "bad-field", "threads"),
        ("pid 0", dict(base, pid=0), "bad-field", "'pid'"),
        ("period 0", dict(base, pid=mine.pid, period=0), "bad-field", "'period'"),
        ("period 1", dict(base, pid=mine.pid, period=1), "bad-field", "outside 10007.."),
        ("period 2^63", dict(base, pid=mine.pid, period=1 << 63), "bad-field", "outside 10007.."),
        ("period -1", dict(base, pid=mine.pid, period=-1), "bad-field", "'period'"),
        ("65 CPUs", dict(base, pid=mine.pid, cpus=list(range(65))), "too-many-ops", "at most 64"),
        ("no CPU", dict(base, pid=mine.pid, cpus=[]), "bad-field", "'cpus'"),
        ("CPU 7 of 2", dict(base, pid=mine.pid, cpus=[0, 7]), "no-such-cpu", "CPU 7"),
        ("a CPU twice", dict(base, pid=mine.pid, cpus=[1, 1]), "bad-field", "twice"),
        ("a CPU that is no number", dict(base, pid=mine.pid, cpus=["0"]), "bad-field", "'cpus'"),
        ("an unknown mode", dict(base, pid=mine.pid, mode="lbr"), "bad-field", "'mode'"),
        ("mode of another type", dict(base, pid=mine.pid, mode=1), "bad-field", "'mode'"),
        ("on_exec not a bool", dict(base, pid=mine.pid, on_exec=1), "bad-field", "'on_exec'"),
        ("an unknown key", dict(base, pid=mine.pid, sample_type=7), "bad-field", "unknown key 'sample_type'"),
        ("perf_open's key", dict(base, pid=mine.pid, groups=[]), "bad-field", "unknown key 'groups'"),
        ("no pid", dict(mode="ips", cpus=[0]), "bad-field", "missing a required key"),
    ]
    try:
        for desc, fields, want_name, want_why in cases:
            r = call_timing(dm, **fields)
            name, why = err(r)
            tap.ok(name == want_name and want_why in why, "%s: refused (%s)" % (desc, want_name), r)
        r = call_timing(dm, uid=OTHER_USER, gids=(t.USER_GID,), **dict(base, pid=other.pid))
        tap.ok(err(r)[0] == "not-authorized" and "class lbr" in err(r)[1],
               "a user without the class, on its own process: refused", r)
        r = call_timing(dm, **dict(base, pid=mine.pid, period=IPS_PERIOD))
        tap.ok(r.get("ok"), "after all that the daemon serves a good request", r)
        tap.ok(dm.alive(), "the daemon keeps serving")
    finally:
        for p in (other, mine, threads):
            t.end(p)
        dm.stop()


def test_kernel_rate(tap):
    # IP mode samples 1e9 / period times a second: 100003 ns is 9999 a second.
    for rate, want in (("5000", "above the kernel's perf_event_max_sample_rate of 5000"),
                       ("0", "cannot be read"), ("abc", "cannot be read"), ("99999999999", "cannot be read"),
                       ("", "cannot be read"), (None, "cannot be read")):
        d, m, dm = start(rate=rate if rate is not None else "1")
        if rate is None:
            os.unlink(m.path("proc/sys/kernel/perf_event_max_sample_rate"))
        mine = t.spawn(["/usr/bin/python3", "-c", "import time; time.sleep(60)"],
                       preexec_fn=t.as_user(USER, OTHER_GID, [t.USER_GID]))
        try:
            time.sleep(0.2)
            r = call_timing(dm, mode="ips", pid=mine.pid, on_exec=False, cpus=[0])
            name, why = err(r)
            tap.ok(name == "bad-field" and want in why, "perf_event_max_sample_rate %r: refused (%s)" % (rate, want),
                   why)
            if rate == "5000":
                r = call_timing(dm, mode="ips", pid=mine.pid, on_exec=False, cpus=[0], period=200003)
                tap.ok(r.get("ok"), "a period of 200003 ns (4999 a second) is under it", r)
        finally:
            t.end(mine)
            dm.stop()


def test_limits_and_flood(tap):
    d, m, dm = start()
    mine = t.spawn(["/usr/bin/python3", "-c", "import time; time.sleep(120)"],
                   preexec_fn=t.as_user(USER, OTHER_GID, [t.USER_GID]))
    theirs = t.spawn(["/usr/bin/python3", "-c", "import time; time.sleep(120)"],
                     preexec_fn=t.as_user(OTHER_USER, OTHER_GID, [t.USER_GID]))
    try:
        time.sleep(0.2)

        def hold(first, second):
            # two connections: a connection's own limit (16 perf handles) is not what refuses
            conns = [t.Client(dm.socket), t.Client(dm.socket)]
            replies = [conns[0].call("timing_open", mode="ips", pid=mine.pid, on_exec=False, cpus=[0],
                                     period=IPS_PERIOD) for _ in range(first)]
            replies += [conns[1].call("timing_open", mode="ips", pid=mine.pid, on_exec=False, cpus=[0],
                                      period=IPS_PERIOD) for _ in range(second)]
            return ["ok" if r.get("ok") else err(r)[0] for r in replies], [err(r)[1] for r in replies if not r.get("ok")]
        res, why = t.in_child_as(USER, OTHER_GID, [t.USER_GID, LBR_GID], lambda: hold(10, 7))
        tap.ok(res[:16] == ["ok"] * 16 and res[16] == "limit" and "16 timing handles" in why[0],
               "a uid holds 16 timing handles across its connections, the 17th is refused (limit)", (res, why))

        # A flood of timing_open from one uid while another uid is served in time.
        flood = t.spawn(["/usr/bin/python3", "-c", """
import sys, pmugatetest as t
c = t.Client(sys.argv[1])
pid = int(sys.argv[2])
while True:
    r = c.call("timing_open", mode="ips", pid=pid, on_exec=False, cpus=[0, 1], period=1000003)
    if r.get("ok"):
        c.call("perf_close", handle=r["handle"])
""", dm.socket, str(mine.pid)], env=dict(os.environ, PYTHONPATH=os.path.dirname(t.__file__)),
            preexec_fn=t.as_user(USER, OTHER_GID, [t.USER_GID, LBR_GID]))
        time.sleep(0.3)
        worst, served = 0.0, 0
        for _ in range(10):
            t0 = time.monotonic()
            r = t.in_child_as(OTHER_USER, OTHER_GID, [t.USER_GID, LBR_GID],
                              lambda: t.Client(dm.socket).call("timing_open", mode="ips", pid=theirs.pid,
                                                               on_exec=False, cpus=[0], period=IPS_PERIOD))
            worst = max(worst, time.monotonic() - t0)
            served += bool(r.get("ok"))
        tap.eq(served, 10, "another uid's timing_open is served every time during the flood")
        tap.ok(worst < 1.0, "none waits long behind the flood (worst %.3f s)" % worst)
        t.end(flood)
        tap.ok(dm.alive(), "the daemon keeps serving")
    finally:
        t.end(mine)
        t.end(theirs)
        dm.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_ips_on_the_real_kernel, test_on_exec, test_client_library, test_class_off, test_reload_takes_the_class,
                          test_granted_by_job, test_branches, test_hostile, test_kernel_rate,
                          test_limits_and_flood]))
