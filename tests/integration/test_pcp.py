#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate-exporter read by Performance Co-Pilot's own openmetrics agent (Debian's pcp): a pmcd
of this test's own (its port, socket, namespace and state in a work directory; the system's pmcd
is left alone) runs pmdaopenmetrics with the shipped contrib/pcp/pmugate.url pointed at a real
exporter on the simulated PMU. pminfo shows the counters with their HELP, PCP units and
semantics and per-CPU and per-job instances; pmval's rates of the job's counters equal what the
exporter's own job summary says, within 5 %; pmlogger archives them. Skips, saying why, where pcp is not installed
(contrib/install-deps.sh installs it) or pmcd cannot run here."""

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pmugatetest as t
import exportertest as x

PMCD = "/usr/lib/pcp/bin/pmcd"
PMDA = "/var/lib/pcp/pmdas/openmetrics/pmdaopenmetrics.python"
# The agent is a script of the system's Python (python3-pcp, python3-requests), whatever python3
# runs this test.
PMDA_PYTHON = "/usr/bin/python3"
URL_FILE = os.path.join(t.SOURCE, "contrib", "pcp", "pmugate.url")
PREFIX = "openmetrics.pmugate."
JOB = "4711"


def missing():
    """Why the real agent cannot run here, or None."""
    for path in (PMCD, PMDA, shutil.which("pminfo"), shutil.which("pmval")):
        if not path or not os.path.exists(path):
            return "pcp is not installed (%s missing; contrib/install-deps.sh installs it)" % (
                path or "pminfo or pmval")
    p = subprocess.run([PMDA_PYTHON, "-c", "import pcp.pmda, requests"], capture_output=True, text=True)
    if p.returncode != 0:
        return "the openmetrics agent cannot import its modules: " + p.stderr.strip().splitlines()[-1]
    return None


class Pmcd:
    """pmcd with only the openmetrics agent, reading one URL file, on a free loopback port."""

    def __init__(self, workdir, exporter_url):
        self.dir = os.path.join(workdir, "pcp")
        self.port = x.free_port()
        for d in ("config.d", "var/config/pmda", "run", "log"):
            os.makedirs(os.path.join(self.dir, d))
        # The shipped file, its first line (the URL) pointed at this exporter.
        lines = open(URL_FILE).read().splitlines()
        with open(os.path.join(self.dir, "config.d", "pmugate.url"), "w") as f:
            f.write("\n".join([exporter_url + "/metrics"] + lines[1:]) + "\n")
        self.log_dir = os.path.join(self.dir, "log")
        conf = os.path.join(self.dir, "pmcd.conf")
        with open(conf, "w") as f:
            f.write("openmetrics\t144\tpipe\tbinary notready\t%s %s -c %s -l %s\n" % (
                PMDA_PYTHON, PMDA, os.path.join(self.dir, "config.d"),
                os.path.join(self.log_dir, "openmetrics.log")))
        pmns = os.path.join(self.dir, "root")
        with open(pmns, "w") as f:
            f.write("root {\n\topenmetrics\t144:*:*\n}\n")
        # The agent keeps its metric and instance numbers under PCP_VAR_DIR: this test's own.
        env = dict(os.environ, PCP_VAR_DIR=os.path.join(self.dir, "var"),
                   PCP_RUN_DIR=os.path.join(self.dir, "run"), PCP_LOG_DIR=self.log_dir)
        self.proc = t.spawn([PMCD, "-f", "-A", "-i", "127.0.0.1", "-p", str(self.port),
                             "-s", os.path.join(self.dir, "run", "pmcd.socket"), "-c", conf, "-n", pmns,
                             "-l", os.path.join(self.log_dir, "pmcd.log"), "-U", "root",
                             "-x", os.path.join(self.log_dir, "fatal.log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, env=env)
        self.env = dict(os.environ, PMCD_PORT=str(self.port))

    def log(self):
        out = []
        for name in ("pmcd.log", "openmetrics.log", "fatal.log"):
            path = os.path.join(self.log_dir, name)
            if os.path.exists(path):
                out.append("%s: %s" % (name, open(path, errors="replace").read()[-2000:]))
        return "\n".join(out)

    def run(self, *args, timeout=60):
        p = subprocess.run(list(args) + ["-h", "127.0.0.1"], capture_output=True, text=True, env=self.env,
                           timeout=timeout)
        return p.returncode, p.stdout + p.stderr

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def instances(pminfo_f):
    """{instance name: value} from pminfo -f of one metric."""
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r'inst \[\d+ or "([^"]*)"\] value (\S+)', pminfo_f)}


def pmval_rate(pmcd, metric, instance, samples=5, interval=1.5):
    """The mean of pmval's rates of one instance of a counter: (last - first) over the time
    between, so the exporter's sampling period does not show as jitter."""
    # -i takes a list split at spaces and commas; the agent's instance names have a space
    rc, out = pmcd.run("pmval", "-s", str(samples), "-t", str(interval), "-f", "3", "-i", '"%s"' % instance,
                       PREFIX + metric, timeout=samples * interval + 30)
    # one value a line (with or without a time stamp before it); the first has no rate yet
    rates = [float(m.group(1)) for m in re.finditer(r"^(?:\d\d:\d\d:\d\d\.\d+)?\s*([0-9][0-9.eE+-]*)\s*$", out, re.M)]
    return (sum(rates) / len(rates) if rates else None), out


def main():
    tap = t.Tap()
    if not os.path.exists(x.EXPORTER):
        print("1..0 # SKIP pmugate-exporter not built (libmicrohttpd missing)")
        return 0
    why = missing()
    if why:
        print("1..0 # SKIP " + why)
        return 0
    node = x.Node()
    ex = x.Exporter(node, ["--interval=100ms"])
    # The exporter serves no counter family before its first sample (unknown is not 0), and
    # the agent learns a source's metric names from its first reads of the URL: a slow first
    # sample (a loaded machine, event sets taking turns) left the per-CPU counters unknown to it.
    ex.wait_samples(1)
    pmcd = Pmcd(node.dir, ex.url)
    try:
        deadline = time.time() + 30
        status = ""
        while time.time() < deadline:
            if pmcd.proc.poll() is not None:
                print("1..0 # SKIP pmcd cannot run here: exited with %d: %s" % (
                    pmcd.proc.returncode, pmcd.log().replace("\n", " | ")[-600:]))
                return 0
            rc, status = pmcd.run("pminfo", "-f", "openmetrics.control.status")
            if rc == 0 and '"pmugate"] value "success"' in status:
                break
            time.sleep(0.5)
        tap.ok('"pmugate"] value "success"' in status, "pmcd's openmetrics agent reads the exporter through "
               "the shipped URL file", status + pmcd.log())

        node.admin("grant", job=JOB, uid=x.USER, cpus=[1, 2])
        ex.wait(lambda: x.series(ex.metrics(), "pmugate_job_cpus", jobid=JOB), "the job shows")
        ex.wait_samples(3)

        def fetched(metric):
            rc, out = pmcd.run("pminfo", "-f", PREFIX + metric)
            return instances(out) if rc == 0 else {}
        # The agent learns new instances at its next fetch of the URL.
        deadline = time.time() + 20
        cpu = {}
        while time.time() < deadline:
            cpu = fetched("pmugate_cpu_instructions_total")
            if any("jobid:" + JOB in name for name in cpu):
                break
            time.sleep(1)
        names = sorted(re.sub(r"^\d+ ", "", n) for n in cpu)
        tap.ok("cpu:0 socket:0" in names and "cpu:1 jobid:%s socket:0" % JOB in names and
               "cpu:2 jobid:%s socket:0" % JOB in names and all(v > 0 for v in cpu.values()),
               "per-CPU instances, the job's CPUs also by jobid, counting", names)
        st = {re.sub(r"^\d+ ", "", n): v for n, v in fetched("pmugate_cpu_state").items()}
        tap.ok(st.get("cpu:0 pmugate_cpu_state:monitored socket:0") == 1 and
               st.get("cpu:0 pmugate_cpu_state:user_lease socket:0") == 0 and len(st) == 4 * 7,
               "the CPU state set, one instance per CPU and state", st)
        job = fetched("pmugate_job_instructions_total")
        job_inst = [n for n in job if n.endswith("jobid:" + JOB)]
        tap.ok(len(job_inst) == 1 and job[job_inst[0]] > 0, "a per-job instance", job)

        rc, desc = pmcd.run("pminfo", "-d", "-T", PREFIX + "pmugate_job_instructions_total",
                            PREFIX + "pmugate_node_monitored_seconds_total",
                            PREFIX + "pmugate_socket_memory_read_bytes_total",
                            PREFIX + "pmugate_node_topdown_level1_slots_total", PREFIX + "pmugate_job_cpus")
        blocks = {b.strip().split("\n", 1)[0]: b for b in desc.split("\n\n") if b.strip()}

        def described(metric, semantics, units, help_words):
            b = blocks.get(PREFIX + metric, "")
            return ("Semantics: %s  Units: %s\n" % (semantics, units)) in b and help_words in b
        tap.ok(described("pmugate_job_instructions_total", "counter", "count", "Instructions retired") and
               described("pmugate_node_monitored_seconds_total", "counter", "sec", "Time the exporter counted") and
               described("pmugate_socket_memory_read_bytes_total", "counter", "byte", "Bytes read from DRAM") and
               described("pmugate_node_topdown_level1_slots_total", "counter", "count", "level-1") and
               described("pmugate_job_cpus", "instant", "count", "CPUs of this node"),
               "HELP text, semantics and units PCP understands (count, sec, byte)", desc)

        rates = {}
        for metric in ("pmugate_job_instructions_total", "pmugate_job_cycles_total",
                       "pmugate_job_memory_read_bytes_total"):
            rates[metric], out = pmval_rate(pmcd, metric, job_inst[0] if job_inst else "")
            if rates[metric] is None:
                tap.ok(False, "pmval gives a rate of " + metric, out + pmcd.log())
        status, _, body = ex.get("/jobs/" + JOB)
        s = json.loads(body) if status == 200 else {}
        # The summary's totals over the time the exporter counted the job's 2 CPUs.
        seconds = s.get("monitored_cpu_seconds", 0) / 2
        want = {"pmugate_job_instructions_total": s.get("instructions", 0) / seconds if seconds else None,
                "pmugate_job_cycles_total": s.get("cycles", 0) / seconds if seconds else None,
                "pmugate_job_memory_read_bytes_total": (s.get("memory_read_bytes") or 0) / seconds if seconds else None}
        off = {m: (rates[m], want[m]) for m in want
               if not rates.get(m) or not want[m] or abs(rates[m] / want[m] - 1) > 0.05}
        for m in want:
            print("# %s: pmval %s/s, summary %s/s" % (m, rates.get(m), want[m]))
        tap.ok(s and not off, "pmval's rates of the job's instructions, cycles and memory reads are the job "
               "summary's within 5 %", off or rates)
        ipc = rates["pmugate_job_instructions_total"] / rates["pmugate_job_cycles_total"] \
            if rates.get("pmugate_job_cycles_total") else None
        tap.ok(ipc and abs(ipc - s.get("ipc", 0)) < 0.05, "and their ratio is the summary's IPC", (ipc, s.get("ipc")))

        # pmlogger archives them like any other metric, and pmval reads the rate back from the archive.
        config = os.path.join(pmcd.dir, "pmlogger.config")
        with open(config, "w") as f:
            f.write("log mandatory on 1 sec {\n\t%spmugate_job_instructions_total\n}\n" % PREFIX)
        archive = os.path.join(pmcd.dir, "archive")
        rc, out = pmcd.run("pmlogger", "-c", config, "-T", "5sec", "-l", os.path.join(pmcd.log_dir, "pmlogger.log"),
                           archive)
        p = subprocess.run(["pmval", "-a", archive, "-t", "1", "-f", "3", PREFIX + "pmugate_job_instructions_total"],
                           capture_output=True, text=True, timeout=30)
        archived = [float(v) for v in re.findall(r"^\d\d:\d\d:\d\d\.\d+\s+([0-9][0-9.eE+-]*)\s*$", p.stdout, re.M)]
        tap.ok(rc == 0 and p.returncode == 0 and archived and
               all(abs(v / want["pmugate_job_instructions_total"] - 1) < 0.2 for v in archived),
               "pmlogger archives the job's counter and pmval reads its rate back from the archive",
               out + p.stdout + p.stderr)
        node.admin("revoke", job=JOB)
        return tap.run([])
    except Exception as e:
        tap.ok(False, "the PCP test ran through", "%s\nexporter: %s\n%s" % (e, ex.log()[-2000:], pmcd.log()))
        return tap.run([])
    finally:
        pmcd.stop()
        ex.stop()
        node.stop()


sys.exit(main())
