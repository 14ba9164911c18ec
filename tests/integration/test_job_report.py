#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate job, a job's report across nodes: three nodes, each a pmugated on its own simulated
CPU model (spr, icx, zen4) running its own workload profile, with its own pmugate-exporter in a
UTS namespace of its own (its own host name), one job granted on all three, and the real Slurm
Epilog on each node writing the node's summary through pmugatectl save-summary into one shared
directory. The report's per-node numbers against each simulator's configured profile, the total
and the imbalance computed here independently, the table, CSV and JSON, and bad input: a node
without a summary (its exporter down), a job that never ran, a node whose clock is skewed,
malformed and hostile summary files."""

import csv
import shutil
import ctypes
import io
import json
import math
import os
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pmugatetest as t
import exportertest as x
from exportertest import series

PMUGATE = t.PMUGATE
EPILOG = os.path.join(t.BUILD, "contrib", "slurm", "pmugate-epilog.sh")
JOB = "8086"
CLONE_NEWUTS = 0x04000000

# docs/SIMULATOR.md, built-in profiles: (model, profile, its TopDown level 1 and IPC)
NODES = {
    "cn-spr": ("spr", "default", {"frontend_bound": 0.15, "bad_speculation": 0.05, "backend_bound": 0.45,
                                  "retiring": 0.35}, 1.4),
    "cn-icx": ("icx", "compute", {"frontend_bound": 0.08, "bad_speculation": 0.02, "backend_bound": 0.20,
                                  "retiring": 0.70}, 2.8),
    "cn-zen4": ("zen4", "memory-bound", {"frontend_bound": 0.07, "bad_speculation": 0.03, "backend_bound": 0.75,
                                         "retiring": 0.15}, 0.55),
}
L1 = ("frontend_bound", "bad_speculation", "backend_bound", "retiring")
# The built-in profiles the Intel nodes run, written out (docs/SIMULATOR.md) to add the
# FP_ARITH_INST_RETIRED events (0xc7) per unhalted cycle: umask -> (rate, lanes), double and
# single as client/groups/FLOPS_DP.conf and FLOPS_SP.conf weigh them. zen4's
# fp_ret_sse_avx_ops.all counts half its instructions, without a profile key.
BUILTIN = {
    "default": dict(retiring=0.35, bad_speculation=0.05, frontend_bound=0.15, backend_bound=0.45,
                    heavy_operations=0.05, branch_mispredicts=0.03, fetch_latency=0.09, memory_bound=0.32,
                    ipc=1.4, utilization=0.98, user_fraction=0.95),
    "compute": dict(retiring=0.70, bad_speculation=0.02, frontend_bound=0.08, backend_bound=0.20,
                    heavy_operations=0.05, branch_mispredicts=0.015, fetch_latency=0.03, memory_bound=0.05,
                    ipc=2.8, utilization=1.0, user_fraction=0.99),
}
FP_LANES = {0x01: 1, 0x02: 1, 0x04: 2, 0x08: 4, 0x10: 4, 0x20: 8, 0x40: 8, 0x80: 16}
# (every one of the eight: an event the simulator does not model is not counted, and leaves its
# precision unknown rather than short)
FP_RATES = {"spr": {0x01: 0.10, 0x02: 0.05, 0x04: 0.02, 0x08: 0.01, 0x10: 0.20, 0x20: 0.03, 0x40: 0.05, 0x80: 0.01},
            "icx": {0x01: 0.05, 0x02: 0.01, 0x04: 0.30, 0x08: 0.02, 0x10: 0.10, 0x20: 0.10, 0x40: 0.40, 0x80: 0.02}}
FLOPS_PER_CYCLE = {m: sum(r * FP_LANES[u] for u, r in rates.items()) for m, rates in FP_RATES.items()}
# Where the exporter's counts are the simulator's truth: on zen4 its measurement multiplexes
# (the pipeline utilization levels take all six counters and more), and the exporter's
# per-interval counts then miss the intervals in which an event's set was off the counters:
# memory traffic and energy come out about a third of the simulator's, and IPC off by up to 20 %
# over the few seconds a job runs here (docs/EXPORTER.md, "Known gap"). That is the exporter's,
# which the report passes on; on zen4 the test checks TopDown level 1 (one event set) against the
# profile, and that the rest is counted.
EXACT = ("spr", "icx")


def in_uts(host):
    """preexec_fn part: a UTS namespace of the child's own, named host (as root, before any
    switch of user)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWUTS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUTS)")
    socket.sethostname(host)


class SimNode:
    """A node: a job-mode pmugated on one simulated model with one socket of 4 cores, every CPU
    running the node's profile, and its exporter under the node's host name."""

    def __init__(self, host):
        self.host = host
        self.model, self.profile, self.topdown, self.ipc = NODES[host]
        self.dir = t.workdir()
        self.conf = os.path.join(self.dir, "pmugate.conf")
        x.write_config(self.conf)
        self.sim = os.path.join(self.dir, "sim.conf")
        profile, own = self.profile, ""
        if self.model in FP_RATES:
            p = dict(BUILTIN[self.profile], **{"event.0xc7.0x%02x" % u: r for u, r in FP_RATES[self.model].items()})
            profile = "fp-" + self.profile
            own = "[profile %s]\n%s" % (profile, "".join("%s = %r\n" % kv for kv in p.items()))
        with open(self.sim, "w") as f:
            f.write("[machine]\nmodel = %s\nsockets = 1\ncores = 4\nsmt = no\n[clock]\nmode = realtime\n%s%s"
                    "[cpus 0-3]\nprofile = %s\n" % (self.model, x.SIM_PACKAGE, own, profile))
        self.daemon = t.Daemon(self.dir, ["--backend=sim", "--sim-model=" + self.model, "--sim-config=" + self.sim],
                               config=self.conf)
        self.exporter = None

    def admin(self, op, **kw):
        return t.Client(self.daemon.socket).call(op, **kw)

    def start_exporter(self):
        port = self.port = getattr(self, "port", None) or x.free_port()
        self.url = "http://127.0.0.1:%d" % port
        log = os.path.join(self.dir, "exporter.stderr")
        env = dict(os.environ, PMUGATE_SOCKET=self.daemon.socket, PMUGATE_GROUP_PATH=x.GROUPS)
        drop = t.as_user(x.MONITOR, x.MONITOR, [])
        host = self.host

        def pre():
            in_uts(host)
            drop()
        self.exporter = t.spawn([x.EXPORTER, "--listen=127.0.0.1:%d" % port, "--interval=200ms"],
                                stdout=subprocess.DEVNULL, stderr=open(log, "w"), env=env, preexec_fn=pre)

    def stop(self):
        if self.exporter:
            t.end(self.exporter)
        self.daemon.stop()




def epilog(node, job, out):
    """The configured Slurm Epilog, as Slurm runs it on the node: root, the node's host name."""
    e = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": job, "PMUGATECTL": os.path.abspath(t.PMUGATECTL),
         "PMUGATE_SOCKET": node.daemon.socket, "PMUGATE_SLURM_ENV": "/nonexistent",
         "PMUGATE_JOB_SUMMARY_DIR": out, "PMUGATE_EXPORTER_URL": node.url}
    host = node.host
    return subprocess.run(["/bin/sh", EPILOG], capture_output=True, text=True, env=e, timeout=60,
                          preexec_fn=lambda: in_uts(host))


def report(*args, fmt="json"):
    """(exit status, the report (parsed for json), stderr) of pmugate job as the job's user."""
    p = subprocess.run([PMUGATE, "job", "-O", fmt] + list(args), capture_output=True, text=True, timeout=60,
                       preexec_fn=t.as_user(x.USER, x.USER, []))
    out = p.stdout
    if fmt == "json" and p.returncode in (0, 3):
        out = json.loads(p.stdout)
    return p.returncode, out, p.stderr


def close(a, b, rel=1e-9):
    return a is not None and b is not None and abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def run_job(nodes, job, out, down=()):
    """Grants job on every CPU of every node, lets the exporters count it, and ends it with each
    node's Epilog; the exporters of the hosts in down are stopped first."""
    for n in nodes:
        n.admin("grant", job=job, uid=x.USER, cpus=[0, 1, 2, 3])
    for n in nodes:
        wait(lambda: x.series(x.parse(get(n, "/metrics")), "pmugate_job_cpus", jobid=job), "the job shows on " + n.host)
    time.sleep(1.5)
    for n in nodes:
        if n.host in down:
            t.end(n.exporter)
            n.exporter = None
    return {n.host: epilog(n, job, out) for n in nodes}


def wait(fn, what, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if fn():
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.1)
    raise AssertionError("timed out waiting until " + what)


def get(node, path):
    with urllib.request.urlopen(node.url + path, timeout=10) as r:
        return r.read().decode()


def independent(files):
    """The total and imbalance computed here from the summary files themselves."""
    s = [json.load(open(f)) for f in files]
    cycles = sum(d["cycles"] for d in s)
    slots = sum(d["slots"] for d in s)
    tot = {"instructions": sum(d["instructions"] for d in s), "cycles": cycles,
           "ipc": sum(d["instructions"] for d in s) / cycles,
           "memory_bandwidth_mbytes_per_second": sum(d["memory_bandwidth_mbytes_per_second"] for d in s),
           "memory_bytes": sum(d["memory_read_bytes"] + d["memory_written_bytes"] for d in s),
           "energy_joules": sum(d["energy_joules"] for d in s), "power_watts": sum(d["power_watts"] for d in s),
           "flops": sum(d["flops"] for d in s)}
    for c in L1:
        tot[c] = sum(d["topdown_percent"][c] * d["slots"] for d in s) / slots
    imb = {}
    for k, get_v in (("ipc", lambda d: d["ipc"]), ("instructions", lambda d: d["instructions"]),
                     ("retiring", lambda d: d["topdown_percent"]["retiring"]),
                     ("energy_joules", lambda d: d["energy_joules"]), ("flops", lambda d: d["flops"])):
        v = [get_v(d) for d in s]
        mean = statistics.fmean(v)
        imb[k] = (max(v) / mean, statistics.pstdev(v) / mean)
    return tot, imb


def test_per_node(tap, nodes, out):
    files = sorted(os.listdir(out))
    tap.eq(files, sorted("%s.%s.json" % (JOB, h) for h in NODES),
           "each node's Epilog wrote its summary as JOB.HOST.json under the node's host name")
    s = json.load(open(os.path.join(out, "%s.cn-spr.json" % JOB)))
    tap.ok(s["covers"] == "allocation" and s["host"] == "cn-spr" and s["job"] == JOB and s["cpus"] == "0-3" and
           0 < s["start"] <= s["end"], "a summary says which node, job, part of the job, CPUs and times it covers", s)
    rc, r, err = report("--dir", out, "--nodes", ",".join(NODES), JOB)
    tap.eq(rc, 0, "pmugate job reports every node (exit 0)")
    by = {n["host"]: n for n in r["nodes"]}
    tap.eq(sorted(by), sorted(NODES), "one entry per node")
    tap.ok(r["missing"] == [] and r["total"]["complete"] and r["total"]["nodes"] == 3, "nothing missing", r["total"])
    for n in nodes:
        m = by[n.host]["metrics"]
        if n.model in EXACT:
            tap.ok(by[n.host]["cpu_model"] == n.model and abs(m["ipc"] - n.ipc) < 1e-3,
                   "%s (%s, profile %s): IPC %.4f is the profile's %.2f" % (n.host, n.model, n.profile, m["ipc"], n.ipc))
        else:
            tap.ok(by[n.host]["cpu_model"] == n.model and m["ipc"] > 0 and m["instructions"] > 0,
                   "%s (%s, profile %s): IPC is counted (%.4f; the exporter's, see EXACT)" % (
                       n.host, n.model, n.profile, m["ipc"]))
        bad = {c: m[c] for c in L1 if abs(m[c] - 100 * n.topdown[c]) > 100 * x.FRACTION_BOUND}
        tap.ok(not bad, "%s: TopDown level 1 is the profile's within %.2f points" % (n.host, 100 * x.FRACTION_BOUND),
               bad or m)
        # one socket, all 4 CPUs the job's: the socket's traffic and power
        if n.model in EXACT:
            tap.ok(abs(m["memory_bandwidth_mbytes_per_second"] / ((x.READ_GBPS + x.WRITE_GBPS) * 1e3) - 1) < 0.1 and
                   abs(m["power_watts"] / (x.PACKAGE_WATTS + x.DRAM_WATTS) - 1) < 0.1 and m["energy_joules"] > 0,
                   "%s: memory bandwidth and power are the simulator's" % n.host, m)
        else:
            tap.ok(m["memory_bandwidth_mbytes_per_second"] > 0 and m["energy_joules"] > 0,
                   "%s: memory bandwidth and energy are counted (their values are the exporter's: see "
                   "EXACT)" % n.host, m)
        if n.model in FLOPS_PER_CYCLE:
            tap.ok(m["flops"] and abs(m["flops"] / m["cycles"] / FLOPS_PER_CYCLE[n.model] - 1) < 1e-3,
                   "%s: FLOPs (FP_ARITH weighted by lanes) per cycle are the profile's %g" % (
                       n.host, FLOPS_PER_CYCLE[n.model]), m)
        else:
            tap.ok(m["flops"] and m["flops"] > 0,
                   "%s: FLOPs are counted (fp_ret_sse_avx_ops.all; the exporter's, see EXACT)" % n.host, m)
    spr = by["cn-spr"]["metrics"]
    tap.ok(abs(spr["memory_bound"] - 32.0) <= 100 * x.FRACTION_BOUND, "level 2 where measured (spr's Memory Bound)",
           spr["memory_bound"])
    return r


def test_total(tap, out, r):
    tot, imb = independent([os.path.join(out, f) for f in os.listdir(out)])
    got = r["total"]["metrics"]
    bad = {k: (got[k], v) for k, v in tot.items() if not close(got[k], v)}
    tap.ok(not bad, "the total: sums of counts, bytes, joules, bandwidth and power; IPC by cycles, TopDown by slots",
           bad)
    bad = {k: (r["imbalance"][k]["max_over_mean"], r["imbalance"][k]["cv"], v) for k, v in imb.items()
           if not (close(r["imbalance"][k]["max_over_mean"], v[0]) and close(r["imbalance"][k]["cv"], v[1], 1e-6))}
    tap.ok(not bad, "the imbalance: max/mean and the coefficient of variation per metric", bad)
    # against the configured truth: IPC of the whole job is the nodes' weighted by cycles (the
    # profile's where the exporter's count is exact, the node's own on zen4)
    cyc = {n["host"]: n["metrics"]["cycles"] for n in r["nodes"]}
    ipc = {n["host"]: NODES[n["host"]][3] if NODES[n["host"]][0] in EXACT else n["metrics"]["ipc"] for n in r["nodes"]}
    truth = sum(ipc[h] * c for h, c in cyc.items()) / sum(cyc.values())
    tap.ok(abs(got["ipc"] / truth - 1) < 1e-3, "the job's IPC is the nodes' weighted by cycles", (got["ipc"], truth))
    v = list(ipc.values())
    tap.ok(abs(r["imbalance"]["ipc"]["max_over_mean"] / (max(v) / statistics.fmean(v)) - 1) < 1e-3,
           "IPC's max/mean is the nodes'", r["imbalance"]["ipc"])
    # FLOPs against the configured truth: per cycle the profile's on the Intel nodes, the
    # node's own count on zen4; their sum and max/mean
    fl = {n["host"]: FLOPS_PER_CYCLE[NODES[n["host"]][0]] * cyc[n["host"]] if NODES[n["host"]][0] in FLOPS_PER_CYCLE
          else n["metrics"]["flops"] for n in r["nodes"]}
    v = list(fl.values())
    tap.ok(abs(got["flops"] / sum(v) - 1) < 1e-3 and
           abs(r["imbalance"]["flops"]["max_over_mean"] / (max(v) / statistics.fmean(v)) - 1) < 1e-3,
           "the job's FLOPs are the nodes' summed, their max/mean the nodes'", (got["flops"], r["imbalance"]["flops"], fl))


def test_formats(tap, out, r):
    rc, text, _ = report("--dir", out, JOB, fmt="csv")
    rows = list(csv.reader(io.StringIO(text)))
    head = rows[0] if rows else []
    tap.ok(rc == 0 and head[:3] == ["row", "host", "cpu_model"] and "ipc" in head and "energy_joules" in head,
           "CSV: one header", head)
    kinds = [row[0] for row in rows[1:]]
    tap.eq(kinds, ["node"] * 3 + ["total", "max_over_mean", "cv"], "then a row per node, the total and the imbalance")
    col = head.index("instructions") if "instructions" in head else 0
    tap.ok(all(len(row) == len(head) for row in rows) and
           close(float(rows[4][col]), r["total"]["metrics"]["instructions"]), "with every field, and the JSON's numbers")
    rc, text, _ = report("--dir", out, JOB, fmt="table")
    tap.ok(rc == 0 and all(h in text for h in NODES) and "total" in text and "max/mean" in text and
           "Backend Bound" in text and "MISSING" not in text, "the table: a column per node, total and imbalance", text)
    row = [line.split()[3:] for line in text.splitlines() if line.strip().startswith("FLOPs")]
    tap.ok(row and len(row[0]) >= 6 and "-" not in row[0], "the table's FLOPs row has a number per node, total and "
           "imbalance (not -)", row)
    tap.ok(isinstance(r["window"]["start"], int) and r["window"]["start"] <= r["window"]["end"] and
           all(not n["clock_skewed"] for n in r["nodes"]), "JSON, one document: the job's window, no node skewed",
           r["window"])


def test_never_ran(tap, out):
    rc, _, err = report("--dir", out, "4242")
    tap.ok(rc == 1 and "no summary of job 4242" in err, "a job that never ran: exit 1 and a clear error", err)
    rc, _, err = report("--dir", out, "../etc")
    tap.ok(rc == 2 and "not a job id" in err, "a job id that cannot name a summary is a usage error", err)
    rc, _, err = report("--dir", os.path.join(out, "nonexistent"), JOB)
    tap.ok(rc == 1 and "cannot open the summary directory" in err, "so is a missing directory (exit 1)", err)


def test_node_down(tap, nodes, out2):
    job = "8087"
    res = run_job(nodes, job, out2, down=("cn-icx",))
    tap.ok(all(p.returncode == 0 for p in res.values()) and "no summary from pmugate-exporter" in res["cn-icx"].stderr,
           "the Epilog of the node whose exporter is down writes no summary, and exits 0", res["cn-icx"].stderr)
    rc, r, err = report("--dir", out2, "--nodes", "cn-spr,cn-icx,cn-zen4", job)
    tap.eq(rc, 3, "a report with a node missing exits 3")
    tap.ok([m["host"] for m in r["missing"]] == ["cn-icx"] and r["missing"][0]["reason"] == "no summary",
           "it names the missing node", r["missing"])
    tot, _ = independent([os.path.join(out2, "%s.%s.json" % (job, h)) for h in ("cn-spr", "cn-zen4")])
    tap.ok(r["total"]["nodes"] == 2 and r["total"]["complete"] is False and
           close(r["total"]["metrics"]["instructions"], tot["instructions"]),
           "the total covers the two nodes present and says it is not complete", r["total"])
    rc, text, _ = report("--dir", out2, "--nodes", "cn-spr,cn-icx,cn-zen4", job, fmt="table")
    tap.ok(rc == 3 and "MISSING node cn-icx: no summary" in text and "total (part)" in text and
           "not the 1 missing" in text, "the table says so", text)
    rc, text, _ = report("--dir", out2, "--nodes", "cn-spr,cn-icx,cn-zen4", job, fmt="csv")
    tap.ok(rc == 3 and "\nmissing,cn-icx," in text and "covers only the nodes present" in text, "and so does CSV",
           text)


def copy_dir(src, job=JOB):
    d = t.workdir()
    os.chmod(d, 0o755)
    for f in os.listdir(src):
        if f.startswith(job + "."):
            with open(os.path.join(src, f)) as a, open(os.path.join(d, f), "w") as b:
                b.write(a.read())
    return d


def test_skew(tap, out):
    d = copy_dir(out)
    path = os.path.join(d, "%s.cn-zen4.json" % JOB)
    s = json.load(open(path))
    s["start"] += 3600
    s["end"] += 3600
    with open(path, "w") as f:
        json.dump(s, f)
    rc, r, _ = report("--dir", d, JOB)
    by = {n["host"]: n for n in r["nodes"]}
    # the nodes' own times differ by a sampling period or two, so the offset is 3600 give or take
    tap.ok(rc == 0 and by["cn-zen4"]["clock_skewed"] and abs(by["cn-zen4"]["clock_offset_seconds"] - 3600) <= 5 and
           not by["cn-spr"]["clock_skewed"] and not by["cn-icx"]["clock_skewed"] and
           r["total"]["nodes_clock_skewed"] == 1, "a node whose clock is an hour off is flagged, the others not",
           {h: (n["clock_offset_seconds"], n["clock_skewed"]) for h, n in by.items()})
    tot, _ = independent([os.path.join(d, f) for f in os.listdir(d)])
    tap.ok(close(r["total"]["metrics"]["instructions"], tot["instructions"]) and r["total"]["nodes"] == 3,
           "and its counts stay in the total (its own PMU counted them, whatever its clock said)")
    rc, text, _ = report("--dir", d, JOB, fmt="table")
    tap.ok(re.search(r"CLOCK SKEW node cn-zen4: its times are \+3[56]\d\d s off", text), "the table flags it", text)
    rc, r, _ = report("--dir", d, "--skew-max", "4000", JOB)
    tap.ok(rc == 0 and not any(n["clock_skewed"] for n in r["nodes"]), "within --skew-max it is not flagged")


def test_malformed(tap, out):
    good = json.load(open(os.path.join(out, "%s.cn-spr.json" % JOB)))

    def variant(host, text=None, make=None):
        d = copy_dir(out)
        path = os.path.join(d, "%s.%s.json" % (JOB, host))
        if os.path.exists(path):
            os.unlink(path)
        if make:
            make(path)
        else:
            with open(path, "w") as f:
                f.write(text)
        return d

    def bad(desc, host, want, **kw):
        rc, r, err = report("--dir", variant(host, **kw), JOB)
        miss = {m["host"]: m["reason"] for m in r["missing"]} if isinstance(r, dict) else {}
        tap.ok(rc == 3 and want in miss.get(host, "") and r["total"]["nodes"] == 2 and not r["total"]["complete"],
               "%s: the node is named missing (%s), the total covers the others" % (desc, want), (rc, miss, err))

    bad("a truncated summary", "cn-icx", "not JSON", text=json.dumps(good)[:40])
    bad("two documents", "cn-icx", "text after it", text=json.dumps(good) + "{}")
    bad("a number as a string", "cn-icx", '"ipc" is not a number', text=json.dumps(dict(good, host="cn-icx", ipc="1.4")))
    bad("a negative count", "cn-icx", "outside 0", text=json.dumps(dict(good, host="cn-icx", instructions=-1)))
    bad("NaN", "cn-icx", "not a finite number", text=json.dumps(dict(good, host="cn-icx")).replace('"ipc": ' + json.dumps(good["ipc"]), '"ipc": NaN'))
    bad("a file naming another node", "cn-icx", "the summary node cn-spr", text=json.dumps(good))
    bad("no start time", "cn-icx", '"start"', text=json.dumps({k: v for k, v in dict(good, host="cn-icx").items()
                                                                if k != "start"}))
    bad("an end before the start", "cn-icx", "ends before", text=json.dumps(dict(good, host="cn-icx", end=good["start"] - 10)))
    bad("a nesting bomb", "cn-icx", "not JSON", text="[" * 100000)
    bad("a document that is not an object", "cn-icx", "not a JSON object", text="[1, 2]")
    bad("a file over 1 MiB", "cn-icx", "larger than", text=" " * (1024 * 1024 + 1))
    bad("a symbolic link", "cn-icx", "symbolic link", make=lambda p: os.symlink("/etc/shadow", p))
    bad("a FIFO (nothing blocks)", "cn-icx", "not a regular file", make=lambda p: os.mkfifo(p))
    # a job whose id begins with this one's and a dot is another job's, silently left alone
    d = copy_dir(out)
    with open(os.path.join(d, "%s.5.cn-x.json" % JOB), "w") as f:
        json.dump(dict(good, job=JOB + ".5", host="cn-x"), f)
    rc, r, _ = report("--dir", d, JOB)
    tap.ok(rc == 0 and r["total"]["nodes"] == 3 and r["missing"] == [], "job 8086.5's summary is not job 8086's")
    # a summary of an older exporter, without "covers", still reads: the whole allocation
    d = variant("cn-icx", text=json.dumps({k: v for k, v in json.load(open(os.path.join(out, "%s.cn-icx.json" % JOB))).items()
                                           if k != "covers"}))
    rc, r, _ = report("--dir", d, JOB)
    icx = [n for n in r["nodes"] if n["host"] == "cn-icx"]
    tap.ok(rc == 0 and icx and icx[0]["covers"] == "allocation" and icx[0]["covers_assumed"],
           "an older summary without \"covers\" reads as the whole allocation, marked assumed", icx)


PROMETHEUS = shutil.which("prometheus")


class Prometheus:
    """A real Prometheus scraping every node's exporter every second; each target's instance
    label is the node's name, as a site's scrape configuration would have it."""

    def __init__(self, nodes):
        self.dir = t.workdir()
        self.port = x.free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
                    "scrape_configs:\n  - job_name: pmugate\n    static_configs:\n")
            for n in nodes:
                f.write("      - targets: ['127.0.0.1:%d']\n        labels: {instance: %s}\n" % (n.port, n.host))
        self.log_path = os.path.join(self.dir, "prometheus.log")
        self.proc = t.spawn([PROMETHEUS, "--config.file=" + config, "--storage.tsdb.path=" + os.path.join(self.dir, "tsdb"),
                             "--web.listen-address=127.0.0.1:%d" % self.port],
                            stdout=subprocess.DEVNULL, stderr=open(self.log_path, "w"))

    def query(self, q):
        url = self.url + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.loads(r.read().decode())["data"]["result"]

    def scraped(self, job=None):
        """Whether every target is up (and, with job, has the job's series)."""
        up = self.query("up")
        if len(up) != len(NODES) or any(r["value"][1] != "1" for r in up):
            return False
        return not job or len(self.query('pmugate_job_cpus{jobid="%s"}' % job)) == len(NODES)

    def stop(self):
        t.end(self.proc)


def test_prometheus(tap, nodes, prom):
    job = "8088"
    start = int(time.time()) - 5
    for n in nodes:
        n.admin("grant", job=job, uid=x.USER, cpus=[0, 1, 2, 3])
    wait(lambda: prom.scraped(job), "Prometheus has the job's series of every node", timeout=60)
    time.sleep(4)
    for n in nodes:
        n.admin("revoke", job=job)
    time.sleep(2)
    end = int(time.time())
    rc, r, err = report("--prometheus", prom.url, "--start", str(start), "--end", str(end), "--nodes",
                        ",".join(NODES), job)
    tap.ok(rc == 0, "pmugate job --prometheus reports every node (exit 0)", err)
    by = {n["host"]: n for n in r["nodes"]} if isinstance(r, dict) else {}
    tap.ok(sorted(by) == sorted(NODES) and r["source"] == "prometheus", "one entry per node, by its instance label",
           sorted(by))
    for n in nodes:
        m = by.get(n.host, {}).get("metrics", {})
        bad = {c: m.get(c) for c in L1 if abs(m.get(c, 1e9) - 100 * n.topdown[c]) > 100 * x.FRACTION_BOUND}
        ipc_ok = abs(m.get("ipc", 0) - n.ipc) < 1e-3 if n.model in EXACT else m.get("ipc", 0) > 0
        tap.ok(by.get(n.host, {}).get("cpu_model") == n.model and ipc_ok and not bad,
               "%s: IPC and TopDown level 1 from Prometheus are the profile's" % n.host, m)
        if n.model in EXACT:
            tap.ok(abs(m.get("memory_bandwidth_mbytes_per_second", 0) / ((x.READ_GBPS + x.WRITE_GBPS) * 1e3) - 1) < 0.1
                   and abs(m.get("power_watts", 0) / (x.PACKAGE_WATTS + x.DRAM_WATTS) - 1) < 0.1,
                   "%s: and so are its memory bandwidth and power" % n.host, m)
    direct = {q["metric"]["instance"]: float(q["value"][1]) for q in prom.query(
        'last_over_time(pmugate_job_instructions_total{jobid="%s"}[%ds])' % (job, end - start + 60))}
    tap.ok(all(close(by[h]["metrics"]["instructions"], direct.get(h)) for h in by),
           "each node's instructions are the counter's last value Prometheus holds", (direct, {h: by[h]["metrics"]["instructions"] for h in by}))
    direct = {q["metric"]["instance"]: float(q["value"][1]) for q in prom.query(
        'sum by (instance) (last_over_time(pmugate_job_flops_total{jobid="%s"}[%ds]))' % (job, end - start + 60))}
    tap.ok(all(close(by[h]["metrics"]["flops"], direct.get(h)) for h in by) and
           all(abs(by[n.host]["metrics"]["flops"] / by[n.host]["metrics"]["cycles"] / FLOPS_PER_CYCLE[n.model] - 1) < 1e-3
               for n in nodes if n.model in FLOPS_PER_CYCLE),
           "each node's FLOPs are its counters' over the precisions, the profile's per cycle on the Intel nodes",
           (direct, {h: by[h]["metrics"]["flops"] for h in by}))
    nodes_m = [by[h]["metrics"] for h in by]
    tot = r["total"]["metrics"]
    tap.ok(close(tot["instructions"], sum(m["instructions"] for m in nodes_m)) and
           close(tot["ipc"], sum(m["instructions"] for m in nodes_m) / sum(m["cycles"] for m in nodes_m)) and
           close(tot["energy_joules"], sum(m["energy_joules"] for m in nodes_m)) and
           close(tot["flops"], sum(m["flops"] for m in nodes_m)),
           "the total over the nodes, as with summaries", tot)
    rc, _, err = report("--prometheus", prom.url, "4242")
    tap.ok(rc == 1 and "no series of job 4242" in err, "a job that never ran: exit 1 and a clear error", err)
    rc, _, err = report("--prometheus", "http://127.0.0.1:%d" % x.free_port(), job)
    tap.ok(rc == 1 and "cannot connect" in err, "a Prometheus that does not answer: exit 1, saying so", err)
    rc, _, err = report("--prometheus", "https://example.org", job)
    tap.ok(rc == 1 and "not a URL this takes" in err, "only http:// URLs", err)

    # an exporter down during a job: its counts would be short, so it is missing, not summed
    job = "8089"
    icx = [n for n in nodes if n.host == "cn-icx"][0]
    start = int(time.time()) - 2
    for n in nodes:
        n.admin("grant", job=job, uid=x.USER, cpus=[0, 1, 2, 3])
    wait(lambda: prom.scraped(job), "Prometheus has job 8089's series of every node", timeout=60)
    t.end(icx.exporter)
    icx.exporter = None
    wait(lambda: [q for q in prom.query('up{instance="cn-icx"}') if q["value"][1] == "0"], "Prometheus sees cn-icx down")
    time.sleep(1)
    for n in nodes:
        n.admin("revoke", job=job)
    end = int(time.time()) + 1
    rc, r, err = report("--prometheus", prom.url, "--start", str(start), "--end", str(end), job)
    miss = {m["host"]: m["reason"] for m in r["missing"]} if isinstance(r, dict) else {}
    tap.ok(rc == 3 and "exporter was down" in miss.get("cn-icx", "") and r["total"]["nodes"] == 2 and
           not r["total"]["complete"] and sorted(n["host"] for n in r["nodes"]) == ["cn-spr", "cn-zen4"],
           "a node whose exporter went down during the job is named missing; the total covers the other two",
           (rc, miss, err, r["total"] if isinstance(r, dict) else r))
    icx.start_exporter()
    wait(lambda: prom.scraped(), "cn-icx's exporter is back", timeout=60)


def main():
    tap = t.Tap()
    if not os.path.exists(x.EXPORTER):
        print("1..0 # SKIP pmugate-exporter not built (libmicrohttpd missing)")
        return 0
    nodes = []
    try:
        nodes = [SimNode(h) for h in NODES]
        for n in nodes:
            n.start_exporter()
        for n in nodes:
            wait(lambda: get(n, "/").startswith(""), "the exporter of %s serves" % n.host)
        out = t.workdir()
        os.chmod(out, 0o755)
        res = run_job(nodes, JOB, out)
        if any(p.returncode != 0 for p in res.values()):
            raise AssertionError("an Epilog failed: %s" % {h: p.stderr for h, p in res.items()})
        out2 = t.workdir()
        os.chmod(out2, 0o755)
        state = {}
        prom = Prometheus(nodes) if PROMETHEUS else None

        def prometheus(tp):
            if not prom:
                tp.skip("pmugate job --prometheus", "prometheus not installed (Debian package prometheus)")
                return
            try:
                test_prometheus(tp, nodes, prom)
            finally:
                prom.stop()

        def per_node(tp):
            state["r"] = test_per_node(tp, nodes, out)
        tests = [per_node,
                 lambda tp: test_total(tp, out, state["r"]),
                 lambda tp: test_formats(tp, out, state["r"]),
                 lambda tp: test_never_ran(tp, out),
                 lambda tp: test_skew(tp, out),
                 lambda tp: test_malformed(tp, out),
                 prometheus,
                 lambda tp: test_node_down(tp, nodes, out2)]
        for f, name in zip(tests, ("test_per_node", "test_total", "test_formats", "test_never_ran", "test_skew",
                                   "test_malformed", "test_prometheus", "test_node_down")):
            f.__name__ = name
        return tap.run(tests)
    finally:
        for n in nodes:
            n.stop()


sys.exit(main())
