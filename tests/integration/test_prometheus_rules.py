#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The shipped Prometheus recording rules (contrib/prometheus/pmugate-rules.yml, docs/SCALE.md)
in a real Prometheus: promtool check rules accepts them; a Prometheus loading them and scraping
pmugate-exporter (run with --per-cpu=no, as a large node would be) records the node's and a
job's aggregates, and they give the simulator's profile (TopDown fractions, IPC, FLOPs per cycle, the node's
power and bandwidth, the job's CPUs and nodes). When VictoriaMetrics is installed, the same
Prometheus remote_writes into it, and the job's raw series and its recorded aggregates read
back from VictoriaMetrics equal Prometheus' own (same samples at the same timestamps). Skips
when prometheus, or (for remote_write) victoria-metrics, is not installed, and says so."""

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pmugatetest as t
import exportertest as x

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
VICTORIA = shutil.which("victoria-metrics")
RULES = os.path.join(t.SOURCE, "contrib", "prometheus", "pmugate-rules.yml")
JOB = "4711"


def http_json(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read().decode())


class Store:
    """A Prometheus-compatible query API (Prometheus, or VictoriaMetrics' single node)."""

    def __init__(self, name, proc, url, log_path):
        self.name, self.proc, self.url, self.log_path = name, proc, url, log_path

    def log(self):
        with open(self.log_path) as f:
            return f.read()[-3000:]

    def query(self, q, at=None):
        params = {"query": q}
        if at is not None:
            params["time"] = "%.3f" % at
        r = http_json(self.url + "/api/v1/query?" + urllib.parse.urlencode(params))
        if r.get("status") != "success":
            raise AssertionError("%s: query %s: %s" % (self.name, q, r))
        return r["data"]["result"]

    def query_range(self, q, start, end, step):
        r = http_json(self.url + "/api/v1/query_range?" + urllib.parse.urlencode(
            {"query": q, "start": start, "end": end, "step": step}))
        return r["data"]["result"]

    def wait(self, fn, what, timeout=60):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("%s exited: %s" % (self.name, self.log()))
            try:
                last = fn()
                if last:
                    return last
            except (OSError, ValueError, KeyError, IndexError) as e:
                last = e
            time.sleep(0.3)
        raise AssertionError("timed out waiting until %s (last: %r)" % (what, last))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_victoria(workdir):
    port = x.free_port()
    log_path = os.path.join(workdir, "victoria.log")
    proc = t.spawn([VICTORIA, "-storageDataPath=" + os.path.join(workdir, "vm"),
                    "-httpListenAddr=127.0.0.1:%d" % port, "-retentionPeriod=1d",
                    "-search.disableCache", "-search.latencyOffset=0s"],
                   stdout=subprocess.DEVNULL, stderr=open(log_path, "w"))
    vm = Store("victoria-metrics", proc, "http://127.0.0.1:%d" % port, log_path)
    vm.wait(lambda: urllib.request.urlopen(vm.url + "/health", timeout=5).status == 200,
            "VictoriaMetrics answers", timeout=30)
    return vm


def start_prometheus(workdir, target, remote_write=None):
    port = x.free_port()
    config = os.path.join(workdir, "prometheus.yml")
    with open(config, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "rule_files:\n  - %s\n"
                "scrape_configs:\n  - job_name: pmugate\n"
                "    static_configs:\n      - targets: ['%s']\n" % (RULES, target))
        if remote_write:
            f.write("remote_write:\n  - url: %s/api/v1/write\n"
                    "    queue_config:\n      batch_send_deadline: 1s\n" % remote_write)
    log_path = os.path.join(workdir, "prometheus.log")
    proc = t.spawn([PROMETHEUS, "--config.file=" + config,
                    "--storage.tsdb.path=" + os.path.join(workdir, "tsdb"),
                    "--web.listen-address=127.0.0.1:%d" % port],
                   stdout=subprocess.DEVNULL, stderr=open(log_path, "w"))
    return Store("prometheus", proc, "http://127.0.0.1:%d" % port, log_path)


def by(result, label):
    return {r["metric"].get(label, ""): float(r["value"][1]) for r in result}


def test_rules(tap, prom):
    def near(q, want, bound, label="category"):
        got = by(prom.query(q), label)
        return set(got) == set(want) and all(abs(got[k] - want[k]) <= bound for k in want) and got

    l1 = {c: x.PROFILE[c] for c in ("frontend_bound", "bad_speculation", "backend_bound", "retiring")}
    for scope, q in (("node", "instance_category:pmugate_topdown_level1:ratio_rate1m"),
                     ("job", 'jobid_category:pmugate_topdown_level1:ratio_rate1m{jobid="%s"}' % JOB)):
        try:
            got = prom.wait(lambda: near(q, l1, x.FRACTION_BOUND), "%s TopDown recorded" % scope)
            tap.ok(True, "the %s's TopDown level 1 is recorded and gives the profile" % scope, got)
        except AssertionError as e:
            tap.ok(False, "the %s's TopDown level 1 is recorded and gives the profile" % scope,
                   "%s: %s" % (e, prom.query(q)))
    for q, want, bound in (
            ("instance:pmugate_ipc:rate1m", x.PROFILE["ipc"], 1e-3),
            ('jobid:pmugate_ipc:rate1m{jobid="%s"}' % JOB, x.PROFILE["ipc"], 1e-3),
            ('instance_jobid:pmugate_ipc:rate1m{jobid="%s"}' % JOB, x.PROFILE["ipc"], 1e-3),
            # the package counts of the period in which the grant restarted the measurement
            # are lost (docs/EXPORTER.md): a 1m window holding it reads low until it moves past
            ("instance:pmugate_memory_bandwidth_bytes:rate1m", (x.READ_GBPS + x.WRITE_GBPS) * 1e9,
             0.1 * (x.READ_GBPS + x.WRITE_GBPS) * 1e9),
            ("instance:pmugate_power_watts:rate1m", x.PACKAGE_WATTS + x.DRAM_WATTS,
             0.1 * (x.PACKAGE_WATTS + x.DRAM_WATTS)),
            # FLOPs per cycle: the profile's FP_ARITH events weighted by lanes, node and job
            ("instance:pmugate_flops:rate1m / instance:pmugate_cycles:rate1m", x.FLOPS_PER_CYCLE, 1e-3),
            ('jobid:pmugate_flops:rate1m{jobid="%s"} / jobid:pmugate_cycles:rate1m{jobid="%s"}' % (JOB, JOB),
             x.FLOPS_PER_CYCLE, 1e-3),
            ('jobid:pmugate_cpus:sum{jobid="%s"}' % JOB, 2, 0),
            ('jobid:pmugate_nodes:count{jobid="%s"}' % JOB, 1, 0),
            ("instance:pmugate_cpus_monitored:sum", 4, 0)):
        try:
            got = prom.wait(lambda: near(q, {"": want}, bound, label="__none__"), q, timeout=100)
            tap.ok(True, "%s is recorded: %g" % (q, want), got)
        except AssertionError as e:
            tap.ok(False, "%s is recorded: %g" % (q, want), "%s: %s" % (e, prom.query(q)))


def test_remote_write(tap, prom, vm):
    """The job's series in VictoriaMetrics equal Prometheus' own: the same samples at the same
    timestamps, raw counters and recorded aggregates alike."""
    queries = ['pmugate_job_instructions_total{jobid="%s"}' % JOB,
               'pmugate_job_topdown_level1_slots_total{jobid="%s"}' % JOB,
               'jobid_category:pmugate_topdown_level1:ratio_rate1m{jobid="%s"}' % JOB]

    def raw(store, q):
        # the raw samples of the last 30 s, with their timestamps: a range vector selector
        out = {}
        for r in store.query("%s[30s]" % q, at=at):
            key = tuple(sorted((k, v) for k, v in r["metric"].items() if k != "__name__"))
            out[key] = [(round(float(ts), 3), float(v)) for ts, v in r["values"]]
        return out

    def same(got, want):
        # VictoriaMetrics keeps about 12 significant digits of a float (its compression scales
        # values to integers): label sets and timestamps exact, values to 1e-11 relative
        return want and set(got) == set(want) and all(
            len(got[k]) == len(want[k]) and all(
                tg == tw and abs(vg - vw) <= 1e-11 * max(abs(vw), 1e-300) for (tg, vg), (tw, vw) in zip(got[k], want[k]))
            for k in want)

    time.sleep(3)
    at = time.time() - 5     # samples older than remote_write's batching and VictoriaMetrics' ingestion
    for q in queries:
        try:
            want = raw(prom, q)
            got = vm.wait(lambda: same(raw(vm, q), want) and raw(vm, q), "%s in VictoriaMetrics" % q,
                          timeout=40)
            tap.ok(bool(got), "remote_write carries %s intact (%d series, %d samples)" % (
                q, len(want), sum(len(v) for v in want.values())))
        except AssertionError as e:
            tap.ok(False, "remote_write carries %s intact" % q, "%s\nprometheus: %r" % (e, raw(prom, q)))


def main():
    tap = t.Tap()
    if not os.path.exists(x.EXPORTER):
        print("1..0 # SKIP pmugate-exporter not built (libmicrohttpd missing)")
        return 0
    if not PROMETHEUS or not PROMTOOL:
        print("1..0 # SKIP prometheus not installed (Debian package prometheus)")
        return 0
    r = subprocess.run([PROMTOOL, "check", "rules", RULES], capture_output=True, text=True)
    tap.ok(r.returncode == 0 and "SUCCESS" in r.stdout, "promtool check rules accepts the shipped rules",
           r.stdout + r.stderr)
    node = x.Node(flops=True)
    ex = x.Exporter(node, ["--interval=200ms", "--per-cpu=no"])
    vm = start_victoria(node.dir) if VICTORIA else None
    prom = start_prometheus(node.dir, "127.0.0.1:%d" % ex.port, vm.url if vm else None)
    try:
        node.admin("grant", job=JOB, uid=x.USER, cpus=[1, 2])
        tap.ok(len(prom.wait(lambda: prom.query("pmugate_job_cpus"), "the job's series")) == 1,
               "Prometheus scrapes the exporter with --per-cpu=no and loads the rules")
        tap.eq(prom.query("count(pmugate_cpu_instructions_total)"), [], "and there are no per-CPU series")
        test_rules(tap, prom)
        if vm:
            test_remote_write(tap, prom, vm)
        else:
            tap.skip("remote_write into VictoriaMetrics carries the job's series intact",
                     "victoria-metrics not installed (Debian package victoria-metrics)")
    except AssertionError as e:
        tap.ok(False, "the rules test ran through", "%s\nexporter: %s\nprometheus: %s" % (
            e, ex.log()[-2000:], prom.log()))
    finally:
        prom.stop()
        if vm:
            vm.stop()
        ex.stop()
        node.stop()
    print("1..%d" % tap.n)
    return 1 if tap.failed else 0


sys.exit(main())
