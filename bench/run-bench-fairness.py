#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Fair service under a flood: what other uids sending maximal batches cost an honest user and an
admin, and what the scheduler costs the flooders and a single operation.

Usage: bench/run-bench-fairness.py [BUILD_DIR] [-- OPTIONS]   (BUILD_DIR defaults to "build")

Options after --:
  --base=DIR        a second build (say of main, in its own checkout) measured the same way,
                    for the flooders' throughput against it
  --uids=N          flooding uids (31)
  --connections=N   connections per flooding uid, each with a maximal batch in flight (1)
  --reads=N         the honest user's reads, idle and under the flood (2000)
  --seconds=S       how long the flooders' throughput is counted (10)
  --no-rpc          skip the unloaded single op against a bare echo (bench-rpc)

Starts BUILD_DIR/daemon/pmugated with the simulated PMU (Sapphire Rapids, 16 CPUs) in a
temporary directory, then:
  1. idle: the honest user (a uid of its own) reads one register N times, one round trip each,
     after 500 reads not counted (the first reads of a fresh process are slower);
  2. starts the flooders: every one a uid of its own, each connection sending a maximal batch
     (131072 reads of the TSC, a reply of 32 parts), reading all of its reply, and sending the
     next, for as long as the measurement runs;
  3. loaded: the honest user's N reads again, a millisecond apart; median and p99 against idle;
  4. an admin (root) makes a grant and revokes it, 50 times; the revoke's round trip, end to
     end, and a status's;
  5. the flooders' throughput: batches (and operations) per second over --seconds;
  6. without --no-rpc, bench-rpc's echo and single op rows (--placement=same --no-admin), the
     unloaded single operation against a bare socket echo.
With --base, steps 1-6 run for the base build too and the throughput ratio is printed. Not a
test: it prints numbers, it does not judge them. Needs root (uids to switch to, the daemon).
"""

import os
import re
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import shutil

import benchnode

# the TSC of the 16 simulated CPUs, 8192 times: 131072 reads, the batch limit
MAXIMAL_OPS = [["R", list(range(16)) * 256, [0x10] * 32]]
FIRST_UID = 61000

FLOODER = r"""
import select, socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
with open(sys.argv[3], "rb") as f:
    req = f.read()
socks = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    socks.append(s)
for s in socks:
    s.send(req)
left = {s: 32 for s in socks}
print("flooding", flush=True)
counting, batches, started = False, 0, 0.0
stdin = sys.stdin.fileno()
while True:
    ready, _, _ = select.select(socks + [stdin], [], [])
    if stdin in ready:
        line = sys.stdin.readline()
        if line.startswith("count"):
            counting, batches, started = True, 0, time.perf_counter()
            continue
        break
    for s in ready:
        if s == stdin:
            continue
        data = s.recv(1 << 20)
        if not data:
            print("dropped", flush=True)
            sys.exit(1)
        if left[s] == 32 and len(data) < 4096:
            print("refused %r" % data[:200], flush=True)
            sys.exit(1)
        left[s] -= 1
        if left[s] == 0:
            left[s] = 32
            batches += counting
            s.send(req)
print("%d %.6f" % (batches, time.perf_counter() - started), flush=True)
"""


def percentile(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def options(extra):
    o = {"base": None, "uids": 31, "connections": 1, "reads": 2000, "seconds": 10.0, "rpc": True}
    for a in extra:
        if a == "--no-rpc":
            o["rpc"] = False
            continue
        m = re.match(r"--(base|uids|connections|reads|seconds)=(.+)$", a)
        if not m:
            raise SystemExit("unknown option %s (see --help)" % a)
        k, v = m.groups()
        o[k] = os.path.abspath(v) if k == "base" else float(v) if k == "seconds" else int(v)
    return o


def as_uid(uid, gid):
    def switch():
        os.setgroups([gid])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    return switch


HONEST = r"""
import socket, sys, time
path, n, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
req = bytes.fromhex(sys.argv[4])
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(path)
times = []
warm = 500
for i in range(n + warm):
    t0 = time.perf_counter()
    s.send(req)
    data = s.recv(65536)
    t1 = time.perf_counter()
    if b"\xa2ok\xc3" not in data:
        print("failed %r" % data[:200], flush=True)
        sys.exit(1)
    if i >= warm:
        times.append(t1 - t0)
    if pause:
        time.sleep(pause)
print(" ".join("%.9f" % t for t in times), flush=True)
"""


def honest_reads(pt, sock, n, pause, gid):
    import msgpack
    req = msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [["r", 3, 0xC1]]}).hex()
    p = subprocess.run([sys.executable, "-c", HONEST, sock, str(n), str(pause), req], capture_output=True,
                       text=True, preexec_fn=as_uid(FIRST_UID - 1, gid), timeout=600)
    if p.returncode != 0:
        raise RuntimeError("honest reads failed: %s %s" % (p.stdout, p.stderr))
    return [float(x) for x in p.stdout.split()]


def admin_round_trips(sock, n):
    import msgpack
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sock)
    revoke, status = [], []

    def call(i, op, **kw):
        req = {"v": 1, "id": i, "op": op}
        req.update(kw)
        t0 = time.perf_counter()
        s.send(msgpack.packb(req))
        r = msgpack.unpackb(s.recv(1 << 20))
        if not r.get("ok"):
            raise RuntimeError("%s failed: %r" % (op, r))
        return time.perf_counter() - t0

    for i in range(n):
        call(3 * i + 1, "grant", job="bench-fair-%d" % i, uid=FIRST_UID - 1)
        revoke.append(call(3 * i + 2, "revoke", job="bench-fair-%d" % i))
        status.append(call(3 * i + 3, "status"))
        time.sleep(0.01)
    s.close()
    return revoke, status


def ms(x):
    return "%.3f ms" % (x * 1e3)


def measure(build, label, o, gid):
    pt = benchnode.harness(build)
    pt.PMUGATED = os.path.join(build, "daemon", "pmugated")
    import msgpack
    work = tempfile.mkdtemp(prefix="pmugate-fair-", dir="/dev/shm" if os.path.isdir("/dev/shm") else "/tmp")
    os.chmod(work, 0o755)
    conf = os.path.join(work, "pmugate.conf")
    pt.write_config(conf, admin_gids=(0,), user_gids=(gid,))
    dm = pt.Daemon(work, ["--backend=sim", "--sim-model=spr", "--runtime-dir=" + os.path.join(work, "run")],
                   config=conf, allowlist_dir=os.path.join(benchnode.SOURCE, "policy", "allowlists"))
    flooders = []
    out = {}
    try:
        idle = honest_reads(pt, dm.socket, o["reads"], 0.0, gid)
        out["idle"] = idle
        req = os.path.join(work, "maximal.msgpack")
        with open(req, "wb") as f:
            f.write(msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": MAXIMAL_OPS}))
        os.chmod(req, 0o644)
        for k in range(o["uids"]):
            p = subprocess.Popen([sys.executable, "-c", FLOODER, dm.socket, str(o["connections"]), req],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                 preexec_fn=as_uid(FIRST_UID + k, gid))
            flooders.append(p)
        for p in flooders:
            state = p.stdout.readline().strip()
            if state != "flooding":
                raise RuntimeError("a flooder did not start: %s" % state)
        time.sleep(2)
        out["loaded"] = honest_reads(pt, dm.socket, o["reads"], 0.001, gid)
        out["revoke"], out["status"] = admin_round_trips(dm.socket, 50)
        for p in flooders:
            p.stdin.write("count\n")
            p.stdin.flush()
        time.sleep(o["seconds"])
        batches, elapsed = 0, []
        for p in flooders:
            p.stdin.write("stop\n")
            p.stdin.flush()
        for p in flooders:
            try:
                line, _ = p.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                raise RuntimeError("a flooder did not stop within 120 s: the daemon stopped answering it")
            fields = line.strip().split()
            if p.returncode != 0 or len(fields) != 2:
                raise RuntimeError("a flooder failed: %s" % line)
            batches += int(fields[0])
            elapsed.append(float(fields[1]))
        flooders = []
        out["batches_per_s"] = batches / max(elapsed)
        out["rss_kib"] = 0
        with open("/proc/%d/status" % dm.proc.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    out["rss_kib"] = int(line.split()[1])
    finally:
        for p in flooders:
            p.kill()
            p.wait()
        dm.stop()
        shutil.rmtree(work, ignore_errors=True)

    idle_med = statistics.median(out["idle"])
    med, p99 = statistics.median(out["loaded"]), percentile(out["loaded"], 99)
    print("[%s] %s" % (label, build))
    print("  honest single read, idle        median %s  p99 %s  (%d reads)" %
          (ms(idle_med), ms(percentile(out["idle"], 99)), len(out["idle"])))
    print("  honest single read, %2d uids x %d flooding  median %s (%.1fx idle)  p99 %s (%.1fx idle)  max %s" %
          (o["uids"], o["connections"], ms(med), med / idle_med, ms(p99), p99 / idle_med, ms(max(out["loaded"]))))
    print("  admin revoke, end to end        median %s  p99 %s  max %s  (50)" %
          (ms(statistics.median(out["revoke"])), ms(percentile(out["revoke"], 99)), ms(max(out["revoke"]))))
    print("  admin status                    median %s  max %s  (50)" %
          (ms(statistics.median(out["status"])), ms(max(out["status"]))))
    print("  flooders' throughput            %.2f batches/s = %.2f M ops/s  (over %.0f s)" %
          (out["batches_per_s"], out["batches_per_s"] * 131072 / 1e6, o["seconds"]))
    print("  daemon's peak RSS               %d KiB" % out["rss_kib"])
    sys.stdout.flush()
    return out


def single_op_vs_echo(build, label):
    """bench-rpc's echo and single-op rows, as run-bench.py would print them."""
    p = subprocess.run([sys.executable, os.path.join(benchnode.SOURCE, "bench", "run-bench.py"), build, "--",
                        "--scale=0.3", "--placement=same", "--no-admin"], capture_output=True, text=True,
                       timeout=900)
    rows = [line for line in p.stdout.splitlines() if re.search(r"bare SEQPACKET echo|single allowed op", line)]
    print("[%s] unloaded single op against a bare echo (bench-rpc --scale=0.3 --placement=same --no-admin)" % label)
    for line in rows:
        print("  " + line.strip())
    nums = [re.findall(r"[0-9]+\.[0-9]+", line) for line in rows]
    if len(nums) >= 2 and nums[0] and nums[1]:
        print("  ratio of the medians            %.3f" % (float(nums[1][0]) / float(nums[0][0])))
    if p.returncode != 0:
        print("  bench-rpc failed: %s" % p.stderr[-400:])
    sys.stdout.flush()


def main(argv):
    rc, build, extra, command = benchnode.parse(argv, __doc__, "run-bench-fairness.py", "daemon/pmugated")
    if rc is not None:
        return rc
    o = options(extra)
    gid = 61999
    print("command: %s" % command)
    print("machine: %d CPUs online, load average %s" % (os.cpu_count(), " ".join(
        "%.2f" % x for x in os.getloadavg())))
    print()
    runs = [("this build", build)] + ([("base", o["base"])] if o["base"] else [])
    results = {}
    for label, b in runs:
        results[label] = measure(b, label, o, gid)
        if o["rpc"]:
            single_op_vs_echo(b, label)
        print()
    if o["base"]:
        mine, base = results["this build"]["batches_per_s"], results["base"]["batches_per_s"]
        print("flooders' throughput against the base: %.2f / %.2f batches/s = %.3f" % (mine, base, mine / base))
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main(sys.argv[1:]))
