#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Scrape latency and memory of pmugate-exporter against the HTTP library's floor.

Usage: bench/run-bench-exporter.py [--cpus=16,512,4096] [--scrapes=N] [--per-cpu=yes|no|auto] [--flops]
                                   [BUILD_DIR]

For each CPU count, starts BUILD_DIR/daemon/pmugated on a simulated Sapphire Rapids (16: one
socket of 8 cores, 512: two of 128, 4096: eight of 256, SMT on) in job mode, and the exporter
on it as a monitor sampling every second, with --per-cpu=yes (the most series: the worst case;
give --per-cpu=auto for the default). Once it has sampled, it takes one /metrics body and
serves the same bytes from memory with BUILD_DIR/bench/bench-http-floor (libmicrohttpd with
the exporter's threading: the floor). Then N scrapes (100; 30 at 4096 CPUs) of each, one
connection each, alternating, from one client; prints the median and p99 latency of both,
their ratio, the body's bytes and series, and the exporter's RSS (VmRSS, and VmHWM: the peak)
from /proc after the scrapes. Then, for 15 s, one scrape every 15 s (Prometheus' usual interval):
the CPU (user + system from /proc/PID/stat) the exporter and pmugated spent per second of it,
sampling every second and rendering the body once a period. With --flops every CPU runs the
built-in default profile plus rates of the eight FP_ARITH_INST_RETIRED events, so that the
exporter counts FLOPs (series of precision double and single), as on an Intel node; without it
the simulator does not model them and there are no FLOPs series. Needs root, as the daemon does.
Not a test: it prints numbers.
"""

import os
import socket
import statistics
import subprocess
import sys
import time

import benchnode

SHAPES = {16: (1, 8), 512: (2, 128), 4096: (8, 256)}
# the built-in default profile (docs/SIMULATOR.md) with FP_ARITH_INST_RETIRED (0xc7) per cycle
FLOPS_PROFILE = ("[profile fp]\nretiring = 0.35\nbad_speculation = 0.05\nfrontend_bound = 0.15\n"
                 "backend_bound = 0.45\nheavy_operations = 0.05\nbranch_mispredicts = 0.03\n"
                 "fetch_latency = 0.09\nmemory_bound = 0.32\nipc = 1.4\nutilization = 0.98\n"
                 "user_fraction = 0.95\n" + "".join("event.0xc7.0x%02x = 0.05\n" % (1 << i) for i in range(8)) +
                 "[cpus 0-%d]\nprofile = fp\n")
SIM_CONFIG = "[machine]\nmodel = spr\nsockets = %d\ncores = %d\nsmt = yes\n[clock]\nmode = realtime\n"


def scrape(port):
    """Seconds for one GET /metrics on a fresh connection, and the body's length."""
    start = time.perf_counter()
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
    n = 0
    while True:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        n += len(chunk)
    s.close()
    return time.perf_counter() - start, n


def rss_kib(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    return out


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100.0 * (len(values) - 1))))]


def bench_one(build, et, t, n_cpus, scrapes, per_cpu, flops):
    sockets, cores = SHAPES[n_cpus]
    work = t.workdir()
    conf = os.path.join(work, "pmugate.conf")
    et.write_config(conf)
    sim = os.path.join(work, "sim.conf")
    with open(sim, "w") as f:
        f.write(SIM_CONFIG % (sockets, cores) + (FLOPS_PROFILE % (n_cpus - 1) if flops else ""))
    node = et.Node.__new__(et.Node)
    node.dir, node.conf, node.sim, node.daemon = work, conf, sim, None
    node.start_daemon()
    exporter = floor = None
    try:
        exporter = et.Exporter(node, ["--interval=1s", "--per-cpu=" + per_cpu])
        exporter.wait(lambda: exporter.samples() >= 2, "two samples", timeout=120)
        status, ctype, body = exporter.get("/metrics")
        path = os.path.join(work, "body")
        with open(path, "w") as f:
            f.write(body)
        port = et.free_port()
        floor = subprocess.Popen([os.path.join(build, "bench", "bench-http-floor"), path, str(port), ctype])
        deadline = time.time() + 10
        while True:
            try:
                scrape(port)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        lat_e, lat_f = [], []
        for _ in range(scrapes):
            lat_e.append(scrape(exporter.port)[0])
            lat_f.append(scrape(port)[0])
        mem = rss_kib(exporter.proc.pid)
        e0, d0, w0 = cpu_seconds(exporter.proc.pid), cpu_seconds(node.daemon.proc.pid), time.time()
        scrape(exporter.port)
        time.sleep(15)
        wall = time.time() - w0
        e_cpu = (cpu_seconds(exporter.proc.pid) - e0) / wall
        d_cpu = (cpu_seconds(node.daemon.proc.pid) - d0) / wall
        series = sum(1 for line in body.splitlines() if line and not line.startswith("#"))
        me, mf = statistics.median(lat_e), statistics.median(lat_f)
        print("%5d %9d %8d %9.3f %9.3f %9.3f %9.3f %6.1fx %6.1fx %8.1f %8.1f %7.1f%% %7.1f%%" % (
            n_cpus, len(body), series, me * 1e3, pct(lat_e, 99) * 1e3, mf * 1e3, pct(lat_f, 99) * 1e3,
            me / mf, pct(lat_e, 99) / pct(lat_f, 99), mem["VmRSS"] / 1024.0, mem["VmHWM"] / 1024.0,
            100 * e_cpu, 100 * d_cpu))
        sys.stdout.flush()
    finally:
        if floor:
            floor.terminate()
            floor.wait()
        if exporter:
            exporter.stop()
        node.stop()


def main(argv):
    cpus, scrapes, per_cpu, flops, rest = [16, 512, 4096], None, "yes", False, []
    for a in argv:
        key, _, value = a.partition("=")
        if key == "--cpus" and all(v.strip() and int(v) in SHAPES for v in value.split(",")):
            cpus = [int(v) for v in value.split(",")]
        elif key == "--scrapes" and value.isdigit() and int(value) > 0:
            scrapes = int(value)
        elif key == "--per-cpu" and value in ("yes", "no", "auto"):
            per_cpu = value
        elif a == "--flops":
            flops = True
        else:
            rest.append(a)
    if any(a in ("-h", "--help") for a in rest) or len(rest) > 1 or any(a.startswith("-") for a in rest):
        print(__doc__.strip())
        return 0 if rest and rest[0] in ("-h", "--help") else 2
    build = os.path.abspath(rest[0] if rest else "build")
    rc = benchnode.check_programs(build, ["exporter/pmugate-exporter", "bench/bench-http-floor"],
                                  "run-bench-exporter.py")
    if rc is not None:
        return rc
    t = benchnode.harness(build)
    import exportertest as et
    print("%5s %9s %8s %9s %9s %9s %9s %7s %7s %8s %8s %8s %8s" % (
        "CPUs", "bytes", "series", "med ms", "p99 ms", "floor med", "floor p99", "x med", "x p99",
        "RSS MiB", "peak MiB", "exp CPU", "pmugated"))
    for n in cpus:
        bench_one(build, et, t, n, scrapes or (30 if n >= 4096 else 100), per_cpu, flops)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
