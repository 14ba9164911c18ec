#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Fair service through the real daemon and socket: uids that flood it with maximal batches
leave an honest user's read and an admin's status and revoke answered within bounds; uids that
never read their replies cost an honest reader neither its connection nor its lease; a uid
outside every pmugate group is refused at accept and takes no connection slot. The bounds are
generous (CI machines, sanitizer builds); bench/run-bench-fairness.py measures the real figures."""

import os
import select
import socket
import statistics
import subprocess
import sys
import time

import msgpack

import pmugatetest as t

# the TSC (9 bytes a value in the reply) of the 16 simulated CPUs, 8192 times: the batch limit
# of 131072 ops, and a reply of 32 parts, about 1.2 MB
MAXIMAL = [["R", list(range(16)) * 256, [0x10] * 32]]

FLOODER = """
import os, select, socket, sys
import msgpack
path, n, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ops = %r
next_id = {}


def send(s):
    # every request its own id: a reply must answer the request sent, once
    next_id[s] = next_id.get(s, 0) + 1
    s.send(msgpack.packb({"v": 1, "id": next_id[s], "op": "batch", "ops": ops}))



socks = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    socks.append(s)
for s in socks:
    send(s)
print("flooding", flush=True)
if mode == "hoard":
    # never reads a reply
    sys.stdin.read()
    sys.exit(0)
left = {s: None for s in socks}
batches = 0
while True:
    ready, _, _ = select.select(socks + [sys.stdin], [], [], 1)
    if sys.stdin in ready:
        break
    for s in ready:
        data = s.recv(1 << 20)
        if not data:
            print("dropped", flush=True)
            sys.exit(1)
        if left[s] is None:
            reply = msgpack.unpackb(data)
            if not reply.get("ok") or reply.get("id") != next_id[s]:
                print("refused or not the reply to request %%d: %%r" %% (next_id[s], reply), flush=True)
                sys.exit(1)
            left[s] = reply.get("parts", 1)
        left[s] -= 1
        if left[s] == 0:
            left[s] = None
            batches += 1
            send(s)
print(batches, flush=True)
""" % (MAXIMAL,)


def flood(sock, uid, n, mode="read"):
    env = dict(os.environ)
    p = subprocess.Popen([sys.executable, "-c", FLOODER, sock, str(n), mode], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env=env,
                         preexec_fn=t.as_user(uid, t.USER_GID, [t.USER_GID]))
    return p, p.stdout.readline().strip()


def stop_flood(p):
    try:
        out, _ = p.communicate(input="", timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    return p.returncode, out.strip()


def start(extra=""):
    d = t.workdir()
    conf = os.path.join(d, "pmugate.conf")
    t.write_config(conf, extra=extra)
    return t.Daemon(d, ["--backend=sim", "--sim-model=spr"], config=conf)


def timed_reads(path, n, pause=0.0):
    """Round trips of one read of one register, in seconds."""
    c = t.Client(path, timeout=60)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = c.batch([["r", 3, 0xC1]])
        times.append(time.perf_counter() - t0)
        if not r.get("ok") or r.get("status") != [0]:
            raise AssertionError("read failed: %r" % r)
        time.sleep(pause)
    c.close()
    return times


def test_flood(tap):
    dm = start()
    flooders = []
    try:
        idle = t.in_child_as(t.UNPRIVILEGED_UID, t.UNPRIVILEGED_UID, [t.USER_GID],
                             lambda: timed_reads(dm.socket, 40))
        idle_median = statistics.median(idle)

        # four uids, eight connections each, every connection a maximal batch after another
        for k in range(4):
            p, state = flood(dm.socket, t.UNPRIVILEGED_UID + 1 + k, 8)
            flooders.append(p)
            tap.eq(state, "flooding", "uid %d floods with 8 connections of maximal batches" %
                   (t.UNPRIVILEGED_UID + 1 + k))
        time.sleep(1)

        loaded = t.in_child_as(t.UNPRIVILEGED_UID, t.UNPRIVILEGED_UID, [t.USER_GID],
                               lambda: timed_reads(dm.socket, 40, 0.01))
        med, worst = statistics.median(loaded), max(loaded)
        # main answered it after every batch queued before it: 40 to 180 ms median here; with
        # the scheduler it waits for one turn, well under a millisecond (bounds for CI and ASan)
        tap.ok(med < 0.01 and worst < 0.1,
               "an honest user's read is answered within 10 ms (median) and 100 ms (worst) while 4 uids "
               "flood (median %.2f ms, worst %.2f ms; idle %.3f ms)" % (med * 1e3, worst * 1e3, idle_median * 1e3))

        admin = t.Client(dm.socket, timeout=60)
        status_times, revoke_times = [], []
        for i in range(10):
            t0 = time.perf_counter()
            r = admin.call("status")
            status_times.append(time.perf_counter() - t0)
            ok = r.get("ok")
            r = admin.call("grant", job="fair%d" % i, uid=t.UNPRIVILEGED_UID)
            ok = ok and r.get("ok")
            t0 = time.perf_counter()
            r = admin.call("revoke", job="fair%d" % i)
            revoke_times.append(time.perf_counter() - t0)
            tap.ok(ok and r.get("ok") and r.get("revoked"), "admin round %d: status, grant and revoke answered" % i, r)
            time.sleep(0.02)
        admin.close()
        both = status_times + revoke_times
        tap.ok(statistics.median(both) < 0.01 and max(both) < 0.1,
               "an admin's status and revoke are answered within 10 ms (median) and 100 ms (worst) during the "
               "flood (median %.2f ms, worst status %.2f ms, worst revoke %.2f ms)" %
               (statistics.median(both) * 1e3, max(status_times) * 1e3, max(revoke_times) * 1e3))

        counts = []
        for p in flooders:
            rc, out = stop_flood(p)
            counts.append(int(out) if rc == 0 and out.isdigit() else -1)
        flooders = []
        tap.ok(min(counts) > 0, "every flooding uid got batches done (%s)" % counts)
        tap.ok(min(counts) * 2 >= max(counts),
               "the flooding uids were served alike: none got more than twice another's batches (%s)" % counts)
        tap.ok(dm.alive(), "the daemon stays up")
    finally:
        for p in flooders:
            stop_flood(p)
        dm.stop()


def test_hoarders(tap):
    """Two uids whose 32 connections each leave maximal replies unread: on a budget for all
    uids together they used it up, and the next reply that did not fit, an honest reader's,
    ended that reader's connection and its lease."""
    dm = start()
    hoarders = []
    try:
        reader = t.Client(dm.socket, timeout=30)

        def honest_reader():
            c = t.Client(dm.socket, timeout=60)
            lease = c.call("lease", cpus=[5])
            yield lease
            for _ in range(6):
                yield c.call("batch", ops=MAXIMAL)
            yield c.batch([["wm", 5, 0x186, 0x43, 0xFF], ["r", 5, 0x186]])

        for k in range(2):
            p, state = flood(dm.socket, t.UNPRIVILEGED_UID + 10 + k, 32, "hoard")
            hoarders.append(p)
            tap.eq(state, "flooding", "uid %d sends 32 maximal batches and never reads" % (t.UNPRIVILEGED_UID + 10 + k))
        # every hoarded batch has run once the daemon answers a status after them all
        deadline = time.time() + 120
        while time.time() < deadline:
            st = reader.call("status")
            if st.get("ok") and st.get("counters", {}).get("ops", 0) >= 64 * 131072:
                break
            time.sleep(0.5)
        reader.close()

        def run():
            out = []
            for r in honest_reader():
                out.append({"ok": r.get("ok"), "error": r.get("error"), "n": len(r.get("values", [])),
                            "values": r.get("values", [])[:2]})
            return out

        try:
            got = t.in_child_as(t.UNPRIVILEGED_UID, t.UNPRIVILEGED_UID, [t.USER_GID], run)
        except AssertionError as e:
            got = [{"ok": False, "error": str(e)}]
        tap.ok(len(got) == 8 and got[0]["ok"], "the honest reader takes a lease on CPU 5", got[:1])
        tap.ok(len(got) == 8 and all(g["ok"] and g["n"] == 131072 for g in got[1:7]),
               "it runs 6 maximal batches and reads every reply while 2 uids hold 64 replies unread",
               [{k: g.get(k) for k in ("ok", "error", "n")} for g in got])
        tap.ok(len(got) == 8 and got[7]["ok"] and len(got[7]["values"]) == 2 and got[7]["values"][1] & 0xFF == 0x43,
               "and still holds its lease: a write on CPU 5 goes through", got[-1:])
        tap.ok("Dropping uid=%d" % t.UNPRIVILEGED_UID not in dm.log(), "the daemon never dropped it",
               dm.log()[-800:])
        tap.ok(dm.alive(), "the daemon stays up")
    finally:
        for p in hoarders:
            stop_flood(p)
        dm.stop()


def test_rights_between_slices(tap):
    """A right is checked when used: a batch runs in slices, and a lease that ends between two
    of them (an admin's reset) leaves the ops after it unrun, each with its own status."""
    dm = start()
    try:
        writes = [["each", [3] * 4096, [["wm", 0x186, 0x43, 0xFF]] * 32]]   # 131072 writes
        admin = t.Client(dm.socket, timeout=60)

        def attempt(delay):
            user = t.Client(dm.socket, timeout=60)
            tap_lease = user.call("lease", cpus=[3])
            if not tap_lease.get("ok"):
                return {"lease": tap_lease}
            t0 = time.perf_counter()
            user.send_raw(msgpack.packb({"v": 1, "id": 7, "op": "batch", "ops": writes}))
            if delay is None:
                # the parts go out when the last slice has run: the first one times the batch
                first = user.recv()
                alone = time.perf_counter() - t0
                for _ in range(first.get("parts", 1) - 1):
                    user.recv()
                user.call("release")
                user.close()
                return {"alone": alone, "ok": first.get("ok")}
            time.sleep(delay)
            reset = admin.call("reset", cpus=[3])
            r = user.recv_reply()
            after = admin.batch([["r", 3, 0x186]])
            user.close()
            return {"reset": reset.get("ok"), "reply": r, "after": after.get("values")}

        alone = t.in_child_as(t.UNPRIVILEGED_UID, t.UNPRIVILEGED_UID, [t.USER_GID], lambda: attempt(None))
        tap.ok(alone.get("ok"), "a user's batch of 131072 writes under a lease runs (%.1f ms alone)" %
               (alone.get("alone", 0) * 1e3), alone)
        seen_split = False
        for k in range(8):
            delay = alone.get("alone", 0.02) * (0.2 + 0.1 * k)
            got = t.in_child_as(t.UNPRIVILEGED_UID, t.UNPRIVILEGED_UID, [t.USER_GID], lambda: attempt(delay))
            r = got.get("reply", {})
            if not r.get("ok"):
                # the lease ended while the batch was still being checked: refused whole
                tap.ok(r.get("error", {}).get("name") in ("no-lease", "preempted"),
                       "reset %d during the check: the batch is refused whole (%s)" % (k, r.get("error")), got)
                continue
            st = r["status"]
            first = st.index(-13) if -13 in st else len(st)
            tap.ok(set(st[:first]) <= {0} and set(st[first:]) <= {-13},
                   "reset %d: the ops before the lease ended ran (%d), every op after it has status -13 (EACCES) "
                   "and runs not (%d)" % (k, first, len(st) - first))
            tap.eq(got.get("after"), [0], "reset %d: nothing wrote the event select after the reset zeroed it" % k)
            if 0 < first < len(st):
                seen_split = True
                break
        tap.ok(seen_split, "a reset landed between two slices of the running batch")
        admin.close()
        tap.ok(dm.alive(), "the daemon stays up")
    finally:
        dm.stop()


HOLDER = """
import socket, sys
held = []
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sys.argv[1])
    held.append(s)
print("connected", flush=True)
sys.stdin.read()
"""


def test_outsider(tap):
    dm = start("[limits]\nclients = 16\nclients_per_uid = 4\n")
    holders = []
    try:
        def connect():
            c = t.Client(dm.socket, timeout=3)
            try:
                return c.recv()
            except socket.timeout:
                return {"ok": True, "connected": "and nothing said"}
        r = t.in_child_as(t.UNPRIVILEGED_UID + 20, t.UNPRIVILEGED_UID + 20, [], connect)
        tap.ok(not r.get("ok") and r["error"]["name"] == "not-authorized",
               "a uid outside every pmugate group is refused at connect as not-authorized", r)
        tap.ok("not-authorized" in dm.audit(), "and the refusal is audited")
        # outsiders of 8 uids connect 4 times each and keep their ends open
        for k in range(8):
            p = subprocess.Popen([sys.executable, "-c", HOLDER, dm.socket, "4"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True,
                                 preexec_fn=t.as_user(t.UNPRIVILEGED_UID + 30 + k, t.UNPRIVILEGED_UID + 30 + k, []))
            holders.append(p)
            p.stdout.readline()
        time.sleep(0.3)
        users = []
        for k in range(2):
            def hello():
                cs = [t.Client(dm.socket) for _ in range(4)]
                return [c.call("hello") for c in cs]
            users += t.in_child_as(t.UNPRIVILEGED_UID + k, t.UNPRIVILEGED_UID + k, [t.USER_GID], hello)
        tap.ok(len(users) == 8 and all(u.get("ok") for u in users),
               "32 outsider connections later, users still take all 8 user slots of 16",
               [u.get("error") for u in users if not u.get("ok")])
        rc, out, err = t.run_cli([t.PMUGATECTL, "status"], dm.socket)
        tap.ok(rc == 0, "and an admin still connects", out + err)
    finally:
        for p in holders:
            p.communicate(input="", timeout=10)
        dm.stop()


if __name__ == "__main__":
    t.Tap().run([test_flood, test_hoarders, test_outsider, test_rights_between_slices])
