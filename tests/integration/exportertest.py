# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate-exporter under test: a job-mode pmugated on the simulated PMU, the exporter as a
monitor on a free loopback port, and readers of its /metrics in both formats."""

import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pmugatetest as t

EXPORTER = os.path.join(t.BUILD, "exporter", "pmugate-exporter")
MONITOR = 4260
USER = t.UNPRIVILEGED_UID
GROUPS = os.path.join(t.SOURCE, "client", "groups")
OPENMETRICS = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"

# The simulator's built-in "default" profile (docs/SIMULATOR.md), which every CPU runs here.
PROFILE = {"frontend_bound": 0.15, "bad_speculation": 0.05, "backend_bound": 0.45, "retiring": 0.35,
           "memory_bound": 0.32, "ipc": 1.4}
# PERF_METRICS keeps each share in 8 bits; bad speculation is what the other three leave.
FRACTION_BOUND = 2.0 / 255
# The simulator's memory traffic and power per socket (docs/SIMULATOR.md, [imc] and [rapl]).
READ_GBPS, WRITE_GBPS, PACKAGE_WATTS, DRAM_WATTS = 40.0, 15.0, 200.0, 30.0
SIM_PACKAGE = "[imc]\nread_gbps = %g\nwrite_gbps = %g\n[rapl]\npackage_watts = %g\ndram_watts = %g\n" % (
    READ_GBPS, WRITE_GBPS, PACKAGE_WATTS, DRAM_WATTS)
# The built-in "default" profile written out with FP_ARITH_INST_RETIRED (0xc7) per unhalted
# cycle, umask -> (rate, lanes), for Node(flops=True): FLOPS_PER_CYCLE over both precisions.
FP_ARITH = {0x01: (0.10, 1), 0x02: (0.05, 1), 0x04: (0.02, 2), 0x08: (0.01, 4), 0x10: (0.20, 4),
            0x20: (0.03, 8), 0x40: (0.05, 8), 0x80: (0.01, 16)}
FLOPS_PER_CYCLE = sum(r * lanes for r, lanes in FP_ARITH.values())
DEFAULT_PROFILE = dict(retiring=0.35, bad_speculation=0.05, frontend_bound=0.15, backend_bound=0.45,
                       heavy_operations=0.05, branch_mispredicts=0.03, fetch_latency=0.09, memory_bound=0.32,
                       ipc=1.4, utilization=0.98, user_fraction=0.95)


def skip(tap, desc, reason):
    """One TAP test point reported as skipped, with why."""
    tap.skip(desc, reason)


class UserLease:
    """A user's process holding a lease on one CPU (the job's grant made beforehand) until the
    with block ends; .ok says whether the daemon gave it."""

    def __init__(self, node, cpu, uid=None):
        self.node, self.cpu, self.uid = node, cpu, USER if uid is None else uid

    def __enter__(self):
        r_fd, w_fd = os.pipe()
        go_r, self.go_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(r_fd)
            os.close(self.go_w)
            t.as_user(self.uid, 4999, [t.USER_GID])()
            c = t.Client(self.node.daemon.socket)
            os.write(w_fd, b"1" if c.call("lease", cpus=[self.cpu])["ok"] else b"0")
            os.read(go_r, 1)
            os._exit(0)
        os.close(w_fd)
        os.close(go_r)
        self.ok = os.read(r_fd, 1) == b"1"
        os.close(r_fd)
        return self

    def __exit__(self, *exc):
        os.write(self.go_w, b"x")
        os.waitpid(self.pid, 0)
        os.close(self.go_w)
        return False


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def write_config(path, extra=""):
    with open(path, "w") as f:
        f.write("[access]\nmode = job\nadmin_groups = %d\nuser_groups = %d\nmonitor_users = %d\n%s" % (
            t.ADMIN_GID, t.USER_GID, MONITOR, extra))


class Node:
    """A daemon on a simulated Sapphire Rapids node with one socket of 4 cores, no SMT."""

    def __init__(self, sockets=1, cores=4, extra="", flops=False):
        self.dir = t.workdir()
        self.conf = os.path.join(self.dir, "pmugate.conf")
        write_config(self.conf, extra)
        self.sim = os.path.join(self.dir, "sim.conf")
        with open(self.sim, "w") as f:
            f.write("[machine]\nmodel = spr\nsockets = %d\ncores = %d\nsmt = no\n[clock]\nmode = realtime\n%s" % (
                sockets, cores, SIM_PACKAGE))
            if flops:
                p = dict(DEFAULT_PROFILE, **{"event.0xc7.0x%02x" % u: v[0] for u, v in FP_ARITH.items()})
                f.write("[profile fp]\n%s[cpus 0-%d]\nprofile = fp\n" % (
                    "".join("%s = %r\n" % kv for kv in p.items()), sockets * cores - 1))
        self.daemon = None
        self.start_daemon()

    def start_daemon(self):
        self.daemon = t.Daemon(self.dir, ["--backend=sim", "--sim-model=spr", "--sim-config=" + self.sim],
                               config=self.conf)

    def admin(self, op, **kw):
        return t.Client(self.daemon.socket).call(op, **kw)

    def stop(self):
        if self.daemon:
            self.daemon.stop()


class Exporter:
    def __init__(self, node, args=(), uid=MONITOR, port=None, groups=()):
        self.port = port or free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.stderr_path = os.path.join(node.dir, "exporter-%d.stderr" % self.port)
        env = dict(os.environ, PMUGATE_SOCKET=node.daemon.socket, PMUGATE_GROUP_PATH=GROUPS)
        self.proc = t.spawn([EXPORTER, "--listen=127.0.0.1:%d" % self.port] + list(args),
                            stdout=subprocess.DEVNULL, stderr=open(self.stderr_path, "w"), env=env,
                            preexec_fn=t.as_user(uid, uid, list(groups)))
        self.wait(lambda: self.get("/")[0] == 200, "the exporter serves")

    def log(self):
        with open(self.stderr_path) as f:
            return f.read()

    def get(self, path, accept=None, method="GET"):
        """(status, content type, body); never raises for HTTP errors."""
        req = urllib.request.Request(self.url + path, method=method)
        if accept:
            req.add_header("Accept", accept)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.headers.get("Content-Type"), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("Content-Type"), e.read().decode()
        except (urllib.error.URLError, ConnectionError):
            return 0, None, ""

    def metrics(self, accept=None):
        return parse(self.get("/metrics", accept)[2])

    def wait(self, fn, what, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("pmugate-exporter exited with %d: %s" % (self.proc.returncode, self.log()))
            try:
                if fn():
                    return
            except (KeyError, ValueError, ZeroDivisionError):
                pass
            time.sleep(0.1)
        raise AssertionError("timed out waiting until %s; exporter log: %s" % (what, self.log()))

    def samples(self):
        return self.metrics().get(("pmugate_exporter_samples_total", ()), 0)

    def wait_samples(self, n=3):
        first = self.samples()
        self.wait(lambda: self.samples() >= first + n, "%d more samples" % n)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """{(name, ((label, value), ...)): value} of every sample line."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            raise ValueError("not a sample line: %r" % line)
        labels = tuple(sorted(LABEL.findall(m.group(2) or "")))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def series(metrics, name, **labels):
    """Samples of name whose labels include labels."""
    want = set(labels.items())
    return {k[1]: v for k, v in metrics.items() if k[0] == name and want <= set(k[1])}


def state(metrics, cpu, socket="0"):
    """The state pmugate_cpu_state gives the CPU (the one of value 1), or None when not exactly
    one is set."""
    on = [dict(k)["pmugate_cpu_state"] for k, v in series(metrics, "pmugate_cpu_state", cpu=cpu,
                                                            socket=socket).items() if v == 1]
    return on[0] if len(on) == 1 else None


def one(metrics, name, **labels):
    """The value of the one series of name with exactly these labels."""
    return metrics[(name, tuple(sorted(labels.items())))]
