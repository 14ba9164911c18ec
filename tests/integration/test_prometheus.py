#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate-exporter scraped by a real Prometheus (Debian's prometheus, started here on a loopback
port with a scrape config for the exporter): TopDown fractions from PromQL rate() ratios per node
and per job against the simulator's profile, job series that exist while the job runs and stop
when it ends, and a user's lease visible as a CPU the exporter does not monitor. Skips when
prometheus is not installed."""

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


class Prometheus:
    def __init__(self, workdir, target):
        self.port = x.free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        config = os.path.join(workdir, "prometheus.yml")
        with open(config, "w") as f:
            # honor_labels: the exporter's "job" label names the batch job, not the scrape job
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: pmugate\n    honor_labels: true\n"
                    "    static_configs:\n      - targets: ['%s']\n" % target)
        self.log_path = os.path.join(workdir, "prometheus.log")
        self.proc = t.spawn([PROMETHEUS, "--config.file=" + config,
                             "--storage.tsdb.path=" + os.path.join(workdir, "tsdb"),
                             "--web.listen-address=127.0.0.1:%d" % self.port,
                             "--web.enable-lifecycle"],
                            stdout=subprocess.DEVNULL, stderr=open(self.log_path, "w"))

    def log(self):
        with open(self.log_path) as f:
            return f.read()[-3000:]

    def api(self, path, **params):
        url = self.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.loads(r.read().decode())

    def query(self, q):
        r = self.api("/api/v1/query", query=q)
        if r.get("status") != "success":
            raise AssertionError("query %s: %s" % (q, r))
        return r["data"]["result"]

    def wait(self, fn, what, timeout=60):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("prometheus exited: " + self.log())
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


def values(result, label):
    return {r["metric"].get(label, ""): float(r["value"][1]) for r in result}


def main():
    tap = t.Tap()
    if not os.path.exists(x.EXPORTER):
        print("1..0 # SKIP pmugate-exporter not built (libmicrohttpd missing)")
        return 0
    if not PROMETHEUS:
        print("1..0 # SKIP prometheus not installed (Debian package prometheus)")
        return 0
    node = x.Node()
    ex = x.Exporter(node, ["--interval=200ms"])
    prom = Prometheus(node.dir, "127.0.0.1:%d" % ex.port)
    try:
        def scraped():
            targets = prom.api("/api/v1/targets")["data"]["activeTargets"]
            return targets and targets[0]["health"] == "up" and targets[0]["lastError"] == "" and targets[0]
        prom.wait(scraped, "Prometheus scrapes the exporter")
        tap.ok(True, "Prometheus scrapes the exporter without error")
        om = prom.wait(lambda: prom.query('pmugate_exporter_scrapes_total{format="openmetrics"} > 0'),
                       "an OpenMetrics scrape")
        tap.ok(len(om) == 1, "Prometheus negotiated OpenMetrics and parsed it", om)
        node.admin("grant", job="4711", uid=x.USER, cpus=[1, 2])

        # Several scrapes inside the rate window.
        node_q = ('sum by (category) (rate(pmugate_node_topdown_slots_total{level="1"}[6s])) '
                  '/ scalar(rate(pmugate_node_slots_total[6s]))')
        got = prom.wait(lambda: len(prom.query(node_q)) == 4 and values(prom.query(node_q), "category"),
                        "node TopDown fractions")
        bad = {c: v for c, v in got.items() if abs(v - x.PROFILE[c]) > x.FRACTION_BOUND}
        tap.ok(not bad, "PromQL rate() ratios give the profile's TopDown per node", got)
        mem = prom.query('rate(pmugate_node_topdown_slots_total{category="memory_bound"}[6s]) '
                         '/ on() rate(pmugate_node_slots_total[6s])')
        tap.ok(len(mem) == 1 and abs(float(mem[0]["value"][1]) - x.PROFILE["memory_bound"]) <= x.FRACTION_BOUND,
               "and memory bound from level 2", mem)
        ipc = prom.query("rate(pmugate_node_instructions_total[6s]) / rate(pmugate_node_cycles_total[6s])")
        tap.ok(len(ipc) == 1 and abs(float(ipc[0]["value"][1]) - x.PROFILE["ipc"]) < 1e-3, "and IPC", ipc)

        job_q = ('sum by (job, category) (rate(pmugate_job_topdown_slots_total{level="1",job="4711"}[6s])) '
                 '/ on (job) group_left sum by (job) (rate(pmugate_job_slots_total{job="4711"}[6s]))')
        got = prom.wait(lambda: len(prom.query(job_q)) == 4 and values(prom.query(job_q), "category"),
                        "the job's TopDown")
        bad = {c: v for c, v in got.items() if abs(v - x.PROFILE[c]) > x.FRACTION_BOUND}
        tap.ok(not bad, "TopDown per job, by its job label", got)
        cpus = prom.query('count by (job) (pmugate_cpu_instructions_total{job="4711"})')
        tap.ok(len(cpus) == 1 and float(cpus[0]["value"][1]) == 2, "the job's CPUs carry its label", cpus)
        # rate() over a window the series do not fill yet reads low: wait until they are older.
        def within(q, want, bound):
            r = prom.query(q)
            return len(r) == 1 and abs(float(r[0]["value"][1]) / want - 1) < bound and r
        queries = (
            ('sum by (socket) (rate(pmugate_socket_memory_read_bytes_total[6s]) '
             '+ rate(pmugate_socket_memory_written_bytes_total[6s]))', (x.READ_GBPS + x.WRITE_GBPS) * 1e9,
             "PromQL rate() gives the socket's memory bandwidth (read + write) within 10 %"),
            ('sum(rate(pmugate_node_energy_joules_total[6s]))', x.PACKAGE_WATTS + x.DRAM_WATTS,
             "and the node's power in watts"),
            ('rate(pmugate_job_memory_read_bytes_total{job="4711"}[6s]) '
             '/ on() rate(pmugate_socket_memory_read_bytes_total{socket="0"}[6s])', 0.5,
             "and the job's estimated share of it (2 of 4 busy CPUs)"),
        )
        for q, want, what in queries:
            try:
                tap.ok(prom.wait(lambda: within(q, want, 0.1), what, timeout=20), what)
            except AssertionError as e:
                tap.ok(False, what, "%s: %s" % (e, prom.query(q)))

        # The Grafana dashboard's queries run, with its variables filled in, and those of
        # panels with data while a job runs give some.
        dash = json.load(open(os.path.join(t.SOURCE, "contrib", "grafana", "pmugate-topdown.json")))
        failed = []
        for panel in dash["panels"]:
            for target in panel["targets"]:
                q = (target["expr"].replace("$__rate_interval", "6s").replace("$instance", ".*")
                     .replace("$batchjob", ".*"))
                try:
                    r = prom.query(q)
                    if not r and "not monitored" not in panel["title"]:
                        failed.append((panel["title"], "no data"))
                except Exception as e:
                    failed.append((panel["title"], str(e)))
        tap.ok(not failed, "every query of the Grafana dashboard runs and the panels have data", failed)

        node.admin("revoke", job="4711")
        prom.wait(lambda: prom.query('pmugate_job_cpus{job="4711"}') == [] and
                  prom.query('pmugate_cpu_instructions_total{job="4711"}') == [] or None,
                  "the job's series stop")
        tap.ok(True, "the job's series stop when it ends (stale at the next scrape)")

        node.admin("grant", job="88", uid=x.USER, cpus=[3])
        with x.UserLease(node, 3) as lease:
            tap.ok(lease.ok, "a user leases CPU 3")
            r = prom.wait(lambda: prom.query('pmugate_cpu_monitored{cpu="3",reason="user_lease"} == 0'),
                          "the lease shows in Prometheus")
            tap.ok(len(r) == 1, "Prometheus shows CPU 3 not monitored because of a user's lease", r)
            others = prom.query('pmugate_cpu_monitored{reason="monitored"} == 1')
            tap.eq(sorted(o["metric"]["cpu"] for o in others), ["0", "1", "2"], "the other CPUs stay monitored")
        prom.wait(lambda: prom.query('pmugate_cpu_monitored{cpu="3",reason="monitored"} == 1'),
                  "CPU 3 monitored again")
        tap.ok(True, "CPU 3 is monitored again once the user lets go")
        return tap.run([])
    except Exception as e:
        tap.ok(False, "the Prometheus test ran through", "%s\nexporter: %s\nprometheus: %s" % (
            e, ex.log()[-2000:], prom.log()))
        return tap.run([])
    finally:
        prom.stop()
        ex.stop()
        node.stop()


sys.exit(main())
