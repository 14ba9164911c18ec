#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate-exporter against slow HTTP clients (loopback only, bounded in time and number): they
cannot lock out a scrape or the Epilog, and a request that trickles in is cut at its deadline.
And the daemon's audit of a monitoring session: its reads (the counter resets of every sample)
are one record per pattern and one count at the end, while a user's writes and denials stay
audited one by one."""

import os
import socket
import threading
import time

import pmugatetest as t
import exportertest as x

# exporter/http-guard.h
CONNECTIONS_MAX = 32
REQUEST_SECONDS = 10
# Slow clients: more than every connection the exporter serves at once, all from 127.0.0.1.
SLOW_CLIENTS = CONNECTIONS_MAX + 8
TRICKLE_SECONDS = 0.5
# A scrape while they trickle answers in this long (it is milliseconds unloaded).
SCRAPE_BOUND = 3.0


class Slowloris:
    """Connections to the exporter that send a request's header one byte every TRICKLE_SECONDS
    and never finish it, reopened when the exporter closes them, until stop()."""

    def __init__(self, port, n):
        self.port, self.n = port, n
        self.stopping = threading.Event()
        self.opened = 0
        self.cut = []           # seconds each connection lived before the exporter closed it
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(n)]
        for th in self.threads:
            th.start()

    def run(self):
        while not self.stopping.is_set():
            try:
                s = socket.create_connection(("127.0.0.1", self.port), timeout=2)
            except OSError:
                time.sleep(0.05)
                continue
            start = time.monotonic()
            with self.lock:
                self.opened += 1
            try:
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                while not self.stopping.is_set():
                    s.sendall(b"a")
                    time.sleep(TRICKLE_SECONDS)
            except OSError:
                with self.lock:
                    self.cut.append(time.monotonic() - start)
            finally:
                s.close()

    def stop(self):
        self.stopping.set()
        for th in self.threads:
            th.join(timeout=5)


def timed_get(ex, path):
    start = time.monotonic()
    status = ex.get(path)[0]
    return status, time.monotonic() - start


def test_slow_clients(tap, node, ex):
    slow = Slowloris(ex.port, SLOW_CLIENTS)
    try:
        deadline = time.monotonic() + 10
        while slow.opened < SLOW_CLIENTS and time.monotonic() < deadline:
            time.sleep(0.1)
        tap.ok(slow.opened >= SLOW_CLIENTS, "%d slow connections from 127.0.0.1 are open" % SLOW_CLIENTS,
               slow.opened)
        time.sleep(1)
        scrapes = [timed_get(ex, "/metrics") for _ in range(5)]
        tap.ok(all(st == 200 and took <= SCRAPE_BOUND for st, took in scrapes),
               "a scrape from the same address is answered within %gs while they trickle" % SCRAPE_BOUND,
               scrapes)
        st, took = timed_get(ex, "/jobs/4711")
        tap.ok(st == 404 and took <= SCRAPE_BOUND, "so is the Epilog's request (404: a job never seen)",
               (st, took))
    finally:
        slow.stop()
    tap.ok(ex.proc.poll() is None, "the exporter is still running")


def test_request_deadline(tap, node, ex):
    """A single connection that keeps sending, too slowly to ever finish its request, is cut at
    the request deadline (libmicrohttpd's idle timeout alone never fires for it)."""
    slow = Slowloris(ex.port, 1)
    try:
        deadline = time.monotonic() + REQUEST_SECONDS + 5
        while not slow.cut and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        slow.stop()
    tap.ok(slow.cut and REQUEST_SECONDS - 1 <= slow.cut[0] <= REQUEST_SECONDS + 2.5,
           "a request trickling in is closed %ds after it began, not kept forever" % REQUEST_SECONDS, slow.cut)


def audit_records(node, uid, event="write"):
    return [line for line in node.daemon.audit().splitlines()
            if " event=%s " % event in line and " uid=%d " % uid in line]


def test_monitor_audit(tap):
    """A fresh daemon and exporter, so that the audit's rate limit has held nothing back yet."""
    node = x.Node()
    ex = x.Exporter(node, ["--interval=200ms"])
    try:
        check_monitor_audit(tap, node, ex)
    finally:
        ex.stop()
        node.stop()


def check_monitor_audit(tap, node, ex):
    ex.wait_samples(2)
    before = len(audit_records(node, x.MONITOR))
    samples = ex.samples()
    ex.wait_samples(10)
    samples = ex.samples() - samples
    during = audit_records(node, x.MONITOR)[before:]
    tap.ok(samples >= 10 and len(during) == 0,
           "%d samples of the monitor write no audit record (its patterns were audited at its first "
           "samples)" % samples, during)
    first = audit_records(node, x.MONITOR)
    tap.ok(1 <= len(first) <= 3 and all("regs=" in r and "cpus=" in r for r in first),
           "the monitoring session's first writes are audited with their CPUs and registers", first)
    # A user's writes are still audited one by one, repeated or not.
    node.admin("grant", job="77", uid=x.USER, cpus=[3])

    def user_writes():
        c = t.Client(node.daemon.socket)
        results = [c.call("lease", cpus=[3])["ok"]]
        for _ in range(3):
            results.append(c.batch([["w", 3, 0x186, 0x43003c]])["ok"])
        results.append(c.batch([["w", 3, 0x1a0, 0]]).get("ok"))
        c.close()
        return results

    before_user = len(audit_records(node, x.USER))
    got = t.in_child_as(x.USER, 4999, [t.USER_GID], user_writes)
    user = audit_records(node, x.USER)[before_user:]
    denied = audit_records(node, x.USER, "deny")
    tap.ok(got[:4] == [True] * 4 and len(user) == 3, "a user's three identical writes are three records",
           (got, user))
    tap.ok(got[4] is not True and denied and "0x1a0" in denied[-1], "and a user's denied write is audited",
           denied[-1:])
    node.admin("revoke", job="77")
    rc = ex.stop()
    end = audit_records(node, x.MONITOR)
    folded = [r for r in end if "repeats of the monitoring session" in r]
    tap.ok(rc == 0 and len(folded) == 1 and int(folded[0].rsplit("count=", 1)[1].split()[0]) >= 10,
           "at the session's end one record counts the writes that were not audited one by one", folded)


def main():
    tap = t.Tap()
    if not os.path.exists(x.EXPORTER):
        print("1..0 # SKIP pmugate-exporter not built (libmicrohttpd missing)")
        return 0
    node = x.Node()
    ex = x.Exporter(node, ["--interval=200ms"])
    try:
        def bind(f):
            def run(tp):
                f(tp, node, ex)
            run.__name__ = f.__name__
            return run
        return tap.run([test_monitor_audit] + [bind(f) for f in (test_slow_clients, test_request_deadline)])
    finally:
        ex.stop()
        node.stop()


if __name__ == "__main__":
    raise SystemExit(main())
