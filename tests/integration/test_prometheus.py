#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate-exporter scraped by a real Prometheus (Debian's prometheus, started here on a loopback
port with a scrape config for the exporter, without honor_labels): TopDown fractions from PromQL
rate() ratios per node and per job against the simulator's profile, the batch job's label jobid
kept beside the scrape job's job, job series that exist while the job runs and stop when it ends,
a user's lease visible in the CPU state set, and every query of the shipped Grafana dashboard,
its variables filled from their own queries, returning data. Skips when prometheus is not
installed."""

import json
import os
import re
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
            # the README's scrape config: no honor_labels, the batch job is jobid
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: pmugate\n"
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


DASHBOARD = os.path.join(t.SOURCE, "contrib", "grafana", "pmugate-topdown.json")
LABEL_VALUES = re.compile(r"^label_values\((.*),\s*(\w+)\)$")


def dashboard_queries(dash):
    """(panel title, PromQL with Grafana's placeholders) of every target of every panel, rows'
    nested panels included."""
    out = []
    for panel in dash["panels"]:
        for p in [panel] + panel.get("panels", []):
            for target in p.get("targets", []):
                out.append((p["title"], target["expr"]))
    return out


def fill(q, variables):
    """Grafana's substitutions for a 1 s scrape interval: $__rate_interval is at least four
    scrapes; a multi-value variable becomes a regex alternation of its values."""
    q = q.replace("$__rate_interval", "6s").replace("$__interval", "1s")
    for name in sorted(variables, key=len, reverse=True):
        q = q.replace("${%s}" % name, variables[name]).replace("$" + name, variables[name])
    return q


def dashboard_variables(prom, dash):
    """Each query variable's values from its own label_values() query, as Grafana would list
    them (in the order the dashboard defines them, so later ones may use earlier ones)."""
    variables = {}
    for v in dash["templating"]["list"]:
        if v["type"] != "query":
            continue
        m = LABEL_VALUES.match(v["definition"])
        if not m:
            raise AssertionError("variable %s: not label_values(): %s" % (v["name"], v["definition"]))
        got = prom.api("/api/v1/series", **{"match[]": fill(m.group(1), variables)})["data"]
        vals = sorted({s[m.group(2)] for s in got if m.group(2) in s})
        if not vals:
            raise AssertionError("variable %s has no values: %s" % (v["name"], v["definition"]))
        # as Grafana formats a multi-value variable for Prometheus: a regex, escaped for PromQL's
        # double-quoted strings
        variables[v["name"]] = "|".join(re.escape(x).replace("\\", "\\\\") for x in vals)
    return variables


def provisioning_ok():
    """The dashboard provider (as configured by meson) and the data source parse as Grafana's
    provisioning YAML and the provider reads the directory the dashboard is installed in."""
    try:
        import yaml
    except ImportError:
        provisioning_ok.why = "python3-yaml missing: not checked"
        return True
    built = os.path.join(t.BUILD, "contrib", "grafana", "pmugate-dashboards.yaml")
    providers = yaml.safe_load(open(built))
    sources = yaml.safe_load(open(os.path.join(t.SOURCE, "contrib", "grafana", "provisioning",
                                               "pmugate-datasource.yaml")))
    intro = subprocess.run(["meson", "introspect", "--installed", t.BUILD], capture_output=True, text=True)
    installed = json.loads(intro.stdout or "{}")
    want = [dst for src, dst in installed.items() if src.endswith("/contrib/grafana/pmugate-topdown.json")]
    p = providers["providers"][0]
    provisioning_ok.why = (providers, sources, want)
    return (providers.get("apiVersion") == 1 and p["type"] == "file" and want and
            os.path.dirname(want[0]) == p["options"]["path"] and sources.get("apiVersion") == 1 and
            sources["datasources"][0]["type"] == "prometheus")


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
        node_q = ('sum by (category) (rate(pmugate_node_topdown_level1_slots_total[6s])) '
                  '/ scalar(rate(pmugate_node_slots_total[6s]))')
        got = prom.wait(lambda: len(prom.query(node_q)) == 4 and values(prom.query(node_q), "category"),
                        "node TopDown fractions")
        bad = {c: v for c, v in got.items() if abs(v - x.PROFILE[c]) > x.FRACTION_BOUND}
        tap.ok(not bad, "PromQL rate() ratios give the profile's TopDown per node", got)
        mem = prom.query('rate(pmugate_node_topdown_level2_slots_total{category="memory_bound"}[6s]) '
                         '/ on() rate(pmugate_node_slots_total[6s])')
        tap.ok(len(mem) == 1 and abs(float(mem[0]["value"][1]) - x.PROFILE["memory_bound"]) <= x.FRACTION_BOUND,
               "and memory bound from level 2", mem)
        ipc = prom.query("rate(pmugate_node_instructions_total[6s]) / rate(pmugate_node_cycles_total[6s])")
        tap.ok(len(ipc) == 1 and abs(float(ipc[0]["value"][1]) - x.PROFILE["ipc"]) < 1e-3, "and IPC", ipc)
        l1 = prom.query("sum(rate(pmugate_node_topdown_level1_slots_total[6s])) / sum(rate(pmugate_node_slots_total[6s]))")
        tap.ok(len(l1) == 1 and abs(float(l1[0]["value"][1]) - 1) < 1e-6,
               "a sum over the level-1 family is the slots: no slot counted twice", l1)

        job_q = ('sum by (jobid, category) (rate(pmugate_job_topdown_level1_slots_total{jobid="4711"}[6s])) '
                 '/ on (jobid) group_left sum by (jobid) (rate(pmugate_job_slots_total{jobid="4711"}[6s]))')
        got = prom.wait(lambda: len(prom.query(job_q)) == 4 and values(prom.query(job_q), "category"),
                        "the job's TopDown")
        bad = {c: v for c, v in got.items() if abs(v - x.PROFILE[c]) > x.FRACTION_BOUND}
        tap.ok(not bad, "TopDown per job, by its job label", got)
        cpus = prom.query('count by (job, jobid) (pmugate_cpu_instructions_total{jobid="4711"})')
        tap.ok(len(cpus) == 1 and float(cpus[0]["value"][1]) == 2 and cpus[0]["metric"].get("job") == "pmugate",
               "the job's CPUs carry its label jobid, and job stays the scrape job's, without honor_labels",
               cpus)
        tap.eq(prom.query('count({exported_job=~".+"})'), [], "no series was renamed exported_job")
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
            ('rate(pmugate_job_memory_read_bytes_total{jobid="4711"}[6s]) '
             '/ on() rate(pmugate_socket_memory_read_bytes_total{socket="0"}[6s])', 0.5,
             "and the job's estimated share of it (2 of 4 busy CPUs)"),
        )
        for q, want, what in queries:
            try:
                tap.ok(prom.wait(lambda: within(q, want, 0.1), what, timeout=20), what)
            except AssertionError as e:
                tap.ok(False, what, "%s: %s" % (e, prom.query(q)))

        # Every query of the Grafana dashboard, its variables filled from their own queries, while
        # a job runs: each returns data. Until the series are old enough for the rate windows, a
        # query may come back empty: wait for all of them, then say which did not.
        dash = json.load(open(DASHBOARD))
        queries = dashboard_queries(dash)
        tap.ok(len(queries) >= 12, "the dashboard has the node and the job views' queries", len(queries))
        results = {}

        def all_have_data():
            variables = dashboard_variables(prom, dash)
            for title, q in queries:
                try:
                    results[title] = len(prom.query(fill(q, variables)))
                except AssertionError as e:
                    results[title] = str(e)
            return all(isinstance(n, int) and n > 0 for n in results.values())
        try:
            prom.wait(all_have_data, "every dashboard query returns data", timeout=30)
        except AssertionError:
            pass
        tap.ok(results and all(isinstance(n, int) and n > 0 for n in results.values()),
               "every query of the Grafana dashboard runs and returns data (%d panels)" % len(results), results)
        tap.eq(dashboard_variables(prom, dash).get("jobid"), "4711", "its jobid variable lists the job")
        tap.ok(provisioning_ok(), "the provisioning files are Grafana's format and load the dashboard from "
               "where meson installs it", provisioning_ok.why)

        node.admin("revoke", job="4711")
        prom.wait(lambda: prom.query('pmugate_job_cpus{jobid="4711"}') == [] and
                  prom.query('pmugate_cpu_instructions_total{jobid="4711"}') == [] or None,
                  "the job's series stop")
        tap.ok(True, "the job's series stop when it ends (stale at the next scrape)")

        node.admin("grant", job="88", uid=x.USER, cpus=[3])
        with x.UserLease(node, 3) as lease:
            tap.ok(lease.ok, "a user leases CPU 3")
            r = prom.wait(lambda: prom.query('pmugate_cpu_state{cpu="3",pmugate_cpu_state="user_lease"} == 1'),
                          "the lease shows in Prometheus")
            tap.ok(len(r) == 1 and prom.query('pmugate_cpu_monitored{cpu="3"} == 0'),
                   "Prometheus shows CPU 3 not monitored because of a user's lease (OpenMetrics state set)", r)
            others = prom.query('pmugate_cpu_monitored == 1')
            tap.eq(sorted(o["metric"]["cpu"] for o in others), ["0", "1", "2"], "the other CPUs stay monitored")
        prom.wait(lambda: prom.query('pmugate_cpu_state{cpu="3",pmugate_cpu_state="monitored"} == 1'),
                  "CPU 3 monitored again")
        tap.ok(True, "CPU 3 is monitored again once the user lets go")
        # A state change changes values, not label sets: CPU 3 has had the same 7 series all along.
        n = prom.query('count(count_over_time(pmugate_cpu_state{cpu="3"}[5m]))')
        tap.ok(n and float(n[0]["value"][1]) == 7, "CPU 3's state changes made no new series (7 states, always)", n)
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
