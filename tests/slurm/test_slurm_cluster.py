#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A Slurm cluster of three compute nodes on one machine: slurmctld, and per node a UTS and
mount namespace of its own (hostname node1..3, its own slurmd spool, state, log and settings
file, its own /run/pmugate and its own view of the cpuset cgroups Slurm creates), a slurmd, a
job-mode pmugated on its own simulated model (spr, icx, zen4) and a pmugate-exporter; one
munged (one site, one key) and one real Prometheus scraping every node's exporter. The
Prolog and Epilog are contrib/slurm's scripts, the same settings path on every node.

  - job A (sbatch -N3) is granted by the Prolog of every node, each task measures TopDown on
    its own CPUs through its node's pmugated (the same socket path on every node), and the
    Epilog of every node revokes it and writes the node's summary;
  - job B (sbatch -N2, on the other CPU of node1 and node2) is kept apart from A: neither
    job's user can measure the other's CPUs, each shared node's daemon holds two grants on
    disjoint CPUs, and B's Epilog leaves A's grant;
  - Prometheus holds both jobs' series from every node they ran on.

Reuses test_slurm.py's helpers. Prints "1..0 # SKIP reason" where the host cannot run it."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
import urllib.parse
import urllib.request

import pmugatetest as t
import test_slurm as s

HERE = os.path.dirname(os.path.abspath(__file__))
NODES = [("node1", "spr"), ("node2", "icx"), ("node3", "zen4")]
PROMETHEUS = shutil.which("prometheus")
# The node's paths that its mount namespace makes its own: the same name on every node.
RUN_PMUGATE = "/run/pmugate"
NODE_SOCKET = RUN_PMUGATE + "/pmugate.sock"
# cpuset: where pmugated reads a job's CPUs; freezer: proctrack/cgroup.
CGROUP_CONTROLLERS = ("cpuset", "freezer")
CGROUP_ROOT = s.CGROUP_ROOT


def wait_for(what, fn, timeout=60, interval=0.2):
    return s.wait_for(what, fn, timeout=timeout, interval=interval)


class Node:
    """One compute node: a holder process owns its UTS and mount namespaces; slurmd,
    pmugated and the exporter are started inside them with nsenter."""

    def __init__(self, site, name, model):
        self.site, self.name, self.model = site, name, model
        self.dir = site.mkdir(os.path.join("nodes", name))
        self.slurmd_port = s.free_port()
        self.exporter_port = s.free_port()
        self.exporter_url = "http://127.0.0.1:%d" % self.exporter_port
        self.holder = self.daemon = self.exporter = None
        # The daemon's host-side directory, bind-mounted at /run/pmugate in the node; its name
        # also names the daemon's runtime directory, so it is unique.
        self.run_dir = site.mkdir(os.path.join("nodes", name, "%s-%s-run" % (os.path.basename(site.dir), name)))

    def nsenter(self):
        return ["nsenter", "--target", str(self.holder.pid), "--uts", "--mount", "--"]

    def start_namespaces(self, others):
        ready = os.path.join(self.dir, "namespaces-ready")
        mounts = ["mount --bind %s %s" % (self.run_dir, RUN_PMUGATE),
                  "mount --bind %s %s" % (self.dir, self.site.path("node"))]
        for c in CGROUP_CONTROLLERS:
            mounts.append("mount --bind %s/%s/slurm_%s %s/%s/slurm" % (CGROUP_ROOT, c, self.name, CGROUP_ROOT, c))
        # On a real cluster a node sees only its own jobs' cgroups: hide the other nodes'
        # from this node's pmugated, which would otherwise find a job's CPUs on another node.
        for other in others:
            mounts.append("mount -t tmpfs -o ro,size=4k,mode=0755 none %s/cpuset/slurm_%s" % (CGROUP_ROOT, other))
        script = "hostname %s && %s && touch %s && exec sleep 100000" % (self.name, " && ".join(mounts), ready)
        log = open(self.site.path("log", "ns-%s.out" % self.name), "w")
        self.holder = t.spawn(["unshare", "--uts", "--mount", "--propagation", "private", "--", "/bin/sh", "-ec",
                               script], stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        try:
            wait_for("node %s's namespaces" % self.name,
                     lambda: os.path.exists(ready) or self.holder.poll() is not None, timeout=15)
        except TimeoutError:
            pass
        if not os.path.exists(ready):
            raise RuntimeError("namespace setup of %s failed: %s" % (self.name, s.tail(log.name)))

    def start_pmugated(self):
        conf = os.path.join(self.dir, "pmugate.conf")
        with open(conf, "w") as f:
            f.write("[access]\nmode = job\nuser_groups =\nmonitor_users = %d\n" % s.EXPORTER_UID)
        sim = t.sim_config(self.dir, self.model, sockets=2, cores=4)
        self.daemon = t.Daemon(self.run_dir, ["--backend=sim", "--sim-model=" + self.model, "--sim-config=" + sim],
                               config=conf, user="nobody", wrapper=self.nsenter())
        # The host's path of the socket the node's processes know as NODE_SOCKET.
        self.socket = self.daemon.socket

    def write_env(self):
        with open(os.path.join(self.dir, "slurm.env"), "w") as f:
            f.write("PMUGATECTL=%s\nPMUGATE_SOCKET=%s\nPMUGATE_JOB_SUMMARY_DIR=%s\nPMUGATE_EXPORTER_URL=%s\n" % (
                s.PMUGATECTL, NODE_SOCKET, self.site.path("summaries"), self.exporter_url))
        os.mkdir(os.path.join(self.dir, "spool"))

    def start_exporter(self):
        env = dict(self.site.env, PMUGATE_GROUP_PATH=os.path.join(os.path.abspath(t.SOURCE), "client", "groups"))
        log = open(self.site.path("log", "exporter-%s.out" % self.name), "w")
        self.exporter = t.spawn(["nsenter", "--target", str(self.holder.pid), "--uts", "--mount",
                                 "--setuid", str(s.EXPORTER_UID), "--setgid", str(s.EXPORTER_UID), "--",
                                 s.EXPORTER, "--listen=127.0.0.1:%d" % self.exporter_port, "--interval=200ms",
                                 "--socket=" + NODE_SOCKET], stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                env=env)
        log.close()

    def start_slurmd(self):
        self.site.spawn("slurmd-" + self.name, self.nsenter() + ["/usr/sbin/slurmd", "-D", "-f", self.site.conf])

    def ctl(self, *args):
        return s.sh([s.PMUGATECTL, "--socket=" + self.socket] + list(args), timeout=30)

    def grants(self):
        """{job: uid} of the grants pmugatectl status lists."""
        rc, out = self.ctl("status")
        if rc != 0:
            raise RuntimeError("pmugatectl status on %s failed: %s" % (self.name, out))
        return {m.group(1): m.group(2) for m in re.finditer(r"^  job (\S+)\s+(\S+)", out, re.M)}

    def jobmap(self):
        """{job: [cpu, ...]} from pmugatectl jobmap: the CPUs the daemon finds for each grant."""
        rc, out = self.ctl("jobmap")
        if rc != 0:
            raise RuntimeError("pmugatectl jobmap on %s failed: %s" % (self.name, out))
        got = {}
        for m in re.finditer(r"^  cpu (\d+)\s+job (\S+)", out, re.M):
            got.setdefault(m.group(2), []).append(int(m.group(1)))
        return got

    def audit_find(self, **want):
        return [r for r in s.parse_audit(self.daemon.audit()) if all(r.get(k) == v for k, v in want.items())]

    def stop(self):
        if self.exporter:
            t.end(self.exporter, timeout=15)
        if self.daemon:
            self.daemon.stop()


class Prometheus:
    def __init__(self, site, nodes):
        self.port = s.free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        config = site.path("prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: pmugate\n    static_configs:\n")
            for n in nodes:
                f.write("      - targets: ['127.0.0.1:%d']\n        labels:\n          node: %s\n" % (
                    n.exporter_port, n.name))
        self.log_path = site.path("log", "prometheus.log")
        log = open(self.log_path, "w")
        self.proc = t.spawn([PROMETHEUS, "--config.file=" + config, "--storage.tsdb.path=" + site.path("tsdb"),
                             "--web.listen-address=127.0.0.1:%d" % self.port],
                            stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL)
        log.close()

    def query(self, q):
        try:
            with urllib.request.urlopen(self.url + "/api/v1/query?" + urllib.parse.urlencode({"query": q}),
                                        timeout=10) as r:
                doc = json.loads(r.read().decode())
        except OSError:
            return []
        return doc["data"]["result"] if doc.get("status") == "success" else []

    def targets_up(self):
        try:
            with urllib.request.urlopen(self.url + "/api/v1/targets", timeout=10) as r:
                doc = json.loads(r.read().decode())
        except OSError:
            return {}
        return {x["labels"].get("node"): x["health"] for x in doc["data"]["activeTargets"]}

    def stop(self):
        t.end(self.proc, timeout=20)


class Site(s.Cluster):
    """The controller, munged and Prometheus on the host; three Nodes."""

    def __init__(self):
        super().__init__()
        self.nodes = [Node(self, name, model) for name, model in NODES]
        self.prometheus = None
        self.created = []  # directories this test made outside its own, removed at the end

    def node_named(self, name):
        return next(n for n in self.nodes if n.name == name)

    def make_cgroups(self):
        """Per node, slurm_NODE in each controller Slurm uses, which the node sees at slurm (the
        name Slurm's cgroup/v1 plugin gives its tree on every node); and slurm itself, the
        mount point, unless it exists."""
        for c in CGROUP_CONTROLLERS:
            top = os.path.join(CGROUP_ROOT, c)
            for name in ["slurm"] + [n.name for n in self.nodes]:
                p = os.path.join(top, "slurm" if name == "slurm" else "slurm_" + name)
                if os.path.isdir(p):
                    if name != "slurm":
                        raise RuntimeError("%s exists already" % p)
                    continue
                os.mkdir(p)
                self.created.append(p)
                if c == "cpuset":
                    for f in ("cpuset.cpus", "cpuset.mems"):
                        with open(os.path.join(top, f)) as src, open(os.path.join(p, f), "w") as dst:
                            dst.write(src.read())

    def start(self):
        self.mkdir("log", owner="slurm")
        self.mkdir("node")  # each node's own directory is mounted here in its namespace
        self.mkdir("summaries")
        self.mkdir("ctl")  # root's: what the test tells the jobs' tasks
        self.create_user()
        self.mkdir("jobs", owner=s.USER)
        if not os.path.isdir(RUN_PMUGATE):
            os.mkdir(RUN_PMUGATE, 0o755)
            self.created.append(RUN_PMUGATE)
        self.make_cgroups()
        for n in self.nodes:
            n.start_namespaces([o.name for o in self.nodes if o is not n])
            n.write_env()
            n.start_pmugated()
        self.write_slurm_files()
        self.start_munged()
        self.spawn("slurmctld", ["/usr/sbin/slurmctld", "-D", "-f", self.conf])
        for n in self.nodes:
            n.start_slurmd()
        wait_for("every node to be idle (sinfo)", self.nodes_idle, timeout=90, interval=0.5)
        if os.path.exists(s.EXPORTER):
            for n in self.nodes:
                n.start_exporter()
            if PROMETHEUS:
                self.prometheus = Prometheus(self, self.nodes)

    def write_slurm_files(self):
        state = self.mkdir("state", owner="slurm", mode=0o700)
        for kind in ("prolog", "epilog"):
            # Slurm's record of each run: the job, the node's hostname (its UTS namespace) and
            # the script's status.
            with open(self.path(kind + ".sh"), "w") as f:
                f.write("#!/bin/sh\n"
                        "PMUGATE_SLURM_ENV=%s %s 2>>%s\n"
                        "rc=$?\n"
                        'echo "$SLURM_JOB_ID $(/bin/hostname) $rc" >>%s\n'
                        "exit $rc\n" % (self.path("node", "slurm.env"),
                                        os.path.join(s.CONTRIB, "pmugate-%s.sh" % kind),
                                        self.path("log", kind + ".err"), self.path("log", kind + ".status")))
            os.chmod(self.path(kind + ".sh"), 0o755)
        conf = {
            "ClusterName": "pmugatecluster",
            "SlurmctldHost": "%s(127.0.0.1)" % self.node,
            "SlurmctldPort": s.free_port(),
            "SlurmUser": "slurm",
            "SlurmdUser": "root",
            "AuthType": "auth/munge",
            "CredType": "cred/munge",
            "AuthInfo": "socket=" + self.path("munge", "munge.sock"),
            "StateSaveLocation": state,
            # One path, each node's own directory behind it (its mount namespace).
            "SlurmdSpoolDir": self.path("node", "spool"),
            "SlurmdPidFile": self.path("node", "slurmd.pid"),
            "SlurmdLogFile": self.path("node", "slurmd.log"),
            "SlurmctldPidFile": self.path("slurmctld.pid"),
            "SlurmctldLogFile": self.path("log", "slurmctld.log"),
            "SlurmctldDebug": "info",
            "SlurmdDebug": "debug",
            "SwitchType": "switch/none",
            "MpiDefault": "none",
            "ProctrackType": "proctrack/cgroup",
            "TaskPlugin": "task/cgroup,task/affinity",
            "SchedulerType": "sched/backfill",
            "SelectType": "select/cons_tres",
            "SelectTypeParameters": "CR_Core",
            "ReturnToService": 2,
            "AccountingStorageType": "accounting_storage/none",
            "JobAcctGatherType": "jobacct_gather/none",
            "JobCompType": "jobcomp/none",
            "PrologFlags": "Alloc,Contain",
            "Prolog": self.path("prolog.sh"),
            "Epilog": self.path("epilog.sh"),
            "PlugStackConfig": self.path("plugstack.conf"),
        }
        with open(self.conf, "w") as f:
            for k, v in conf.items():
                f.write("%s=%s\n" % (k, v))
            for n in self.nodes:
                f.write("NodeName=%s NodeAddr=127.0.0.1 Port=%d CPUs=%d State=UNKNOWN\n" % (
                    n.name, n.slurmd_port, len(self.cpus)))
            f.write("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO\n")
        with open(self.path("cgroup.conf"), "w") as f:
            f.write("CgroupPlugin=cgroup/v1\nConstrainCores=yes\nConstrainRAMSpace=no\nConstrainDevices=no\n")
        open(self.path("plugstack.conf"), "w").close()

    def nodes_idle(self):
        for name, p in self.procs.items():
            if p.poll() is not None:
                raise RuntimeError("%s exited with status %d" % (name, p.returncode))
        rc, out = s.sh(["sinfo", "-h", "-N", "-o", "%N %T"], timeout=15, env=self.env)
        states = dict(line.split() for line in out.splitlines() if len(line.split()) == 2)
        return rc == 0 and all(states.get(n.name) == "idle" for n in self.nodes)

    def script_status(self, kind):
        """{(job, node): [status, ...]} from the prolog or epilog wrapper."""
        out = {}
        try:
            with open(self.path("log", kind + ".status")) as f:
                for line in f:
                    job, node, rc = line.split()
                    out.setdefault((job, node), []).append(int(rc))
        except FileNotFoundError:
            pass
        return out

    def epilogs_done(self, job, nodes):
        rc, out = s.sh(["squeue", "-h", "-j", job, "-o", "%T"], timeout=15, env=self.env)
        ran = self.script_status("epilog")
        return (rc != 0 or not out.strip()) and all((job, n) in ran for n in nodes)

    def submit(self, tag, nodes):
        """sbatch of one task per node on nodes, one CPU each; its job id."""
        step = " ".join([
            "exec", "srun", "--ntasks-per-node=1", "-c1", "/usr/bin/python3", self.path("clusterstep.py"),
            s.PMUGATE, self.path("jobs"), self.path("ctl"), tag])
        rc, out, err = self.as_user(["sbatch", "--parsable", "-N%d" % len(nodes), "-w", ",".join(nodes),
                                     "--ntasks-per-node=1", "-c1", "-J", "pmugate-" + tag,
                                     "-o", self.path("jobs", tag + "-%j.out"), "--export=ALL,PMUGATE_SOCKET=" +
                                     NODE_SOCKET, "--wrap", step])
        if rc != 0:
            raise RuntimeError("sbatch failed: %s%s" % (out, err))
        return out.strip().split(";")[0]

    def task_result(self, tag, node, kind=""):
        p = self.path("jobs", "%s-%s%s.json" % (tag, kind, node))
        if not os.path.exists(p):
            return None
        with open(p) as f:
            return json.load(f)

    def tell(self, name, text=""):
        with open(self.path("ctl", name), "w") as f:
            f.write(text)

    def diagnose(self):
        for name in ("slurmctld.log", "prolog.err", "epilog.err", "prolog.status", "epilog.status"):
            s.comment("--- tail of %s" % name)
            s.comment("\n".join(s.tail(self.path("log", name), 30)))
        for n in self.nodes:
            for name in ("slurmd.log",):
                s.comment("--- tail of %s's %s" % (n.name, name))
                s.comment("\n".join(s.tail(os.path.join(n.dir, name), 25)))
            s.comment("--- %s: namespace setup" % n.name)
            s.comment("\n".join(s.tail(self.path("log", "ns-%s.out" % n.name), 10)))
            if n.daemon:
                s.comment("--- tail of %s's pmugated log and audit" % n.name)
                s.comment("\n".join(n.daemon.log().splitlines()[-15:]))
                s.comment("\n".join(n.daemon.audit().splitlines()[-15:]))
        for name in sorted(os.listdir(self.path("jobs"))) if os.path.isdir(self.path("jobs")) else []:
            if name.endswith(".out"):
                s.comment("--- job output %s" % name)
                s.comment("\n".join(s.tail(self.path("jobs", name), 15)))

    def own_stepds(self):
        out = []
        for pid, _ in s.processes_named(("slurmstepd",)):
            try:
                if os.readlink("/proc/%d/cwd" % pid).startswith(self.dir):
                    out.append(pid)
            except OSError:
                pass
        return out

    def stop(self):
        """Undoes start() as far as it got; every step is bounded and none raises."""
        if "slurmctld" in self.procs and self.uid is not None:
            s.sh(["scancel", "-u", s.USER], timeout=15, env=self.env)
            try:
                wait_for("the test user's jobs to end", lambda: s.sh(
                    ["squeue", "-h", "-u", s.USER], timeout=15, env=self.env)[1].strip() == "", timeout=30)
            except Exception as e:
                s.comment(str(e))
        try:
            wait_for("slurmstepd to exit", lambda: not self.own_stepds(), timeout=30)
        except Exception as e:
            s.comment("%s: %s" % (e, self.own_stepds()))
        if self.prometheus:
            self.prometheus.stop()
        for name in ["slurmd-" + n.name for n in self.nodes] + ["slurmctld", "munged"]:
            p = self.procs.get(name)
            if p:
                t.end(p, timeout=15)
        for n in self.nodes:
            n.stop()
        # Last, the namespaces' holders: with them the nodes' mounts go.
        for n in self.nodes:
            if n.holder:
                t.end(n.holder, timeout=10)
        self.remove_cgroups()
        if self.created_user:
            rc, out = s.sh(["userdel", s.USER], timeout=30)
            if rc != 0:
                s.comment("userdel failed: " + out)
        shutil.rmtree(self.dir, ignore_errors=True)

    def remove_cgroups(self):
        for top in reversed(self.created):
            if not top.startswith(CGROUP_ROOT + "/"):
                try:
                    os.rmdir(top)
                except OSError as e:
                    s.comment("cannot remove %s: %s" % (top, e))
                continue
            for root, _, _ in os.walk(top, topdown=False):
                for attempt in range(50):
                    try:
                        os.rmdir(root)
                        break
                    except OSError as e:
                        # a cgroup empties a moment after its last process exits
                        if attempt == 49:
                            s.comment("cannot remove cgroup %s: %s" % (root, e))
                        time.sleep(0.1)

    def leftover_mounts(self):
        with open("/proc/self/mountinfo") as f:
            text = f.read()
        return [line for line in text.splitlines() if self.dir in line or
                any(p in line.split()[4:5] for p in self.created)]


# ---------------------------------------------------------------------------------------------
# The tests


def check_nodes_are_nodes(tap, c):
    rc, out = s.sh(["sinfo", "-h", "-N", "-o", "%N %T %c"], timeout=15, env=c.env)
    tap.ok(rc == 0 and all(re.search(r"^%s idle" % n.name, out, re.M) for n in c.nodes),
           "three slurmd, one per node namespace, registered as node1..3 and idle", out)
    names = {}
    for n in c.nodes:
        rc, out = s.sh(n.nsenter() + ["hostname"], timeout=10)
        names[n.name] = out.strip()
    tap.eq(names, {n.name: n.name for n in c.nodes}, "each node's UTS namespace has its own hostname")
    models = {}
    for n in c.nodes:
        rc, out = s.sh(n.nsenter() + [s.PMUGATE, "--socket=" + NODE_SOCKET, "info"], timeout=30)
        m = re.search(r"^CPU:.*", out, re.M)
        models[n.name] = m.group(0) if m else out
    names = {"spr": "Sapphire Rapids", "icx": "Ice Lake", "zen4": "Zen 4"}
    tap.ok(all(names[n.model] in models[n.name] for n in c.nodes),
           "the same socket path %s reaches each node's own pmugated and model" % NODE_SOCKET, models)


def check_task(tap, c, tag, job, node, result):
    n = c.node_named(node)
    td = result["topdown"]
    ok = (result["node"] == node and result["slurm_node"] == node and result["job"] == job and
          td["rc"] == 0 and td.get("model") == n.model and td.get("cpus") == result["affinity"] and
          td.get("metrics") and abs(sum(v for k, v in td["metrics"].items() if k in (
              "frontend_bound", "bad_speculation", "backend_bound", "retiring",
              "tma_frontend_bound", "tma_bad_speculation", "tma_backend_bound", "tma_retiring")) - 100) < 1)
    tap.ok(ok, "job %s (%s) on %s: the task measured TopDown on its CPUs %s through the node's %s pmugated" % (
        job, tag, node, result["affinity"], n.model), result)
    tap.eq(result["hello"]["caller"].get("scope"), {"job": job, "cpus": result["affinity"]},
           "job %s on %s: the node's pmugated takes the job and CPUs from the task's cgroup" % (job, node))


def check_probed(tap, c, job, node, other_job, result):
    """The node's pmugated refuses the read and the write (out-of-scope); pmugate topdown refuses
    before it asks, naming the job's own CPUs."""
    rd, wr, td = result["read"], result["write"], result["topdown"]
    tap.ok(rd["rc"] != 0 and "[out-of-scope]" in rd["err"] and wr["rc"] != 0 and "[out-of-scope]" in wr["err"],
           "job %s on %s: %s's pmugated refuses its read and its write of job %s's CPU %s (out-of-scope)" % (
               job, node, node, other_job, result["cpus"]), result)
    tap.ok(td["rc"] != 0 and "is not in your job" in td["err"],
           "job %s on %s: pmugate topdown on job %s's CPU %s is refused" % (job, node, other_job, result["cpus"]),
           td)


def test_two_jobs(tap, c):
    a_nodes = [n.name for n in c.nodes]
    b_nodes = a_nodes[:2]
    a = c.submit("a", a_nodes)
    a_tasks = wait_for("job %s's tasks on %s" % (a, a_nodes), lambda: all(
        c.task_result("a", n) for n in a_nodes) and {n: c.task_result("a", n) for n in a_nodes}, timeout=90)
    prolog = c.script_status("prolog")
    tap.eq({n: prolog.get((a, n)) for n in a_nodes}, {n: [0] for n in a_nodes},
           "job %s (sbatch -N3): the Prolog ran and exited 0 on every node" % a)
    for node in a_nodes:
        check_task(tap, c, "a", a, node, a_tasks[node])
    grants = {n.name: sorted(n.grants()) for n in c.nodes}
    tap.eq(grants, {n: [a] for n in a_nodes}, "while job %s runs every node's pmugated holds its grant" % a)

    b = c.submit("b", b_nodes)
    b_tasks = wait_for("job %s's tasks on %s" % (b, b_nodes), lambda: all(
        c.task_result("b", n) for n in b_nodes) and {n: c.task_result("b", n) for n in b_nodes}, timeout=90)
    for node in b_nodes:
        check_task(tap, c, "b", b, node, b_tasks[node])
    for node in b_nodes:
        mine, theirs = set(a_tasks[node]["affinity"]), set(b_tasks[node]["affinity"])
        tap.ok(mine and theirs and not mine & theirs, "on %s jobs %s and %s hold disjoint CPUs %s and %s" % (
            node, a, b, sorted(mine), sorted(theirs)))
        n = c.node_named(node)
        jm = n.jobmap()
        tap.ok(sorted(n.grants()) == sorted([a, b]) and jm.get(a) == sorted(mine) and jm.get(b) == sorted(theirs),
               "%s's pmugated holds two grants, job %s on CPUs %s and job %s on %s" % (
                   node, a, sorted(mine), b, sorted(theirs)), (n.grants(), jm))
    n3 = c.node_named(a_nodes[2])
    tap.eq((sorted(n3.grants()), n3.jobmap()), ([a], {a: a_tasks[n3.name]["affinity"]}),
           "%s, where job %s did not run, holds job %s's grant alone" % (n3.name, b, a))

    # Each job's user tries the other job's CPUs on the nodes they share.
    for node in b_nodes:
        c.tell("b-probe-" + node, t.format_cpulist(a_tasks[node]["affinity"]))
        c.tell("a-probe-" + node, t.format_cpulist(b_tasks[node]["affinity"]))
    for tag, job, other in (("a", a, b), ("b", b, a)):
        for node in b_nodes:
            r = wait_for("job %s's probe on %s" % (job, node), lambda: c.task_result(tag, node, "probed-"), timeout=60)
            check_probed(tap, c, job, node, other, r)
            n = c.node_named(node)
            tap.ok(n.audit_find(event="deny", code="out-of-scope", job=job) or
                   n.audit_find(event="deny", code="out-of-scope", uid=str(c.uid)),
                   "audit on %s: the out-of-scope attempt of job %s is recorded" % (node, job))

    test_prometheus(tap, c, a, b, a_nodes, b_nodes, a_tasks, b_tasks)

    # B ends first: its Epilog on node1 and node2 leaves A's grant.
    c.tell("b-release")
    wait_for("job %s's Epilogs" % b, lambda: c.epilogs_done(b, b_nodes), timeout=60)
    epilog = c.script_status("epilog")
    tap.eq({n: epilog.get((b, n)) for n in b_nodes}, {n: [0] for n in b_nodes},
           "job %s's Epilog ran and exited 0 on %s" % (b, ", ".join(b_nodes)))
    tap.eq({n.name: sorted(n.grants()) for n in c.nodes}, {n: [a] for n in a_nodes},
           "after job %s's Epilogs every node still holds job %s's grant, and only it" % (b, a))

    c.tell("a-release")
    wait_for("job %s's Epilogs" % a, lambda: c.epilogs_done(a, a_nodes), timeout=60)
    epilog = c.script_status("epilog")
    tap.eq({n: epilog.get((a, n)) for n in a_nodes}, {n: [0] for n in a_nodes},
           "job %s's Epilog ran and exited 0 on every node" % a)
    tap.eq({n.name: n.grants() for n in c.nodes}, {n: {} for n in a_nodes},
           "after both jobs no node's pmugated holds a grant")
    uid = str(c.uid)
    for n in c.nodes:
        jobs = [a] + ([b] if n.name in b_nodes else [])
        tap.ok(all(n.audit_find(event="grant", verdict="allowed", uid="0", job=j, reason="granted to uid " + uid) and
                   n.audit_find(event="revoke", verdict="allowed", uid="0", job=j) for j in jobs) and
               (n.name in b_nodes or not n.audit_find(job=b)),
               "audit on %s: the Prolog granted and the Epilog revoked %s%s" % (
                   n.name, " and ".join("job " + j for j in jobs),
                   "" if n.name in b_nodes else ", and job %s never appears" % b))
    test_summaries(tap, c, ((a, a_tasks), (b, b_tasks)))


def test_prometheus(tap, c, a, b, a_nodes, b_nodes, a_tasks, b_tasks):
    if not os.path.exists(s.EXPORTER):
        tap.skip("Prometheus holds both jobs' series from every node", "pmugate-exporter not built (libmicrohttpd)")
        return
    if not c.prometheus:
        tap.skip("Prometheus holds both jobs' series from every node", "prometheus not installed")
        return
    p = c.prometheus
    up = wait_for("Prometheus to scrape every node", lambda: all(
        v == "up" for v in p.targets_up().values()) and len(p.targets_up()) == len(c.nodes) and p.targets_up(),
        timeout=60)
    tap.eq(up, {n.name: "up" for n in c.nodes}, "one Prometheus scrapes every node's exporter")
    models = {r["metric"]["node"]: r["metric"].get("model") for r in p.query("pmugate_exporter_info")}
    tap.eq(models, {n.name: n.model for n in c.nodes}, "each node's exporter reports its own model")

    def nodes_of(q):
        return sorted(r["metric"]["node"] for r in p.query(q))

    def wait_nodes(q, nodes):
        try:
            return wait_for("%s from %s" % (q, nodes), lambda: nodes_of(q) == nodes and nodes, timeout=40)
        except TimeoutError:
            return nodes_of(q)
    for job, nodes in ((a, a_nodes), (b, b_nodes)):
        got = wait_nodes('count by (node) (pmugate_job_cpus{jobid="%s"})' % job, nodes)
        tap.eq(got, nodes, "Prometheus has job %s's series (jobid=\"%s\") from %s" % (job, job, ", ".join(nodes)))
        got = wait_nodes('count by (node) (pmugate_job_instructions_total{jobid="%s"} > 0)' % job, nodes)
        tap.eq(got, nodes, "and has counted job %s's instructions on every node it ran on, %s (AMD's too)"
               % (job, ", ".join(nodes)))
    for job, tasks in ((a, a_tasks), (b, b_tasks)):
        got = {}
        for r in p.query('pmugate_cpu_instructions_total{jobid="%s"}' % job):
            got.setdefault(r["metric"]["node"], []).append(int(r["metric"]["cpu"]))
        tap.eq({k: sorted(v) for k, v in got.items()}, {n: tasks[n]["affinity"] for n in tasks},
               "job %s's per-CPU series name, per node, the CPUs its task ran on there" % job)


def test_summaries(tap, c, jobs):
    """Each node's Epilog keeps its own part of the job: the node and the CPUs the job held there."""
    if not os.path.exists(s.EXPORTER):
        tap.skip("every node's Epilog writes its summary", "pmugate-exporter not built (libmicrohttpd)")
        return
    for job, tasks in jobs:
        got = {}
        for n in c.nodes:
            path = c.path("summaries", "%s.%s.json" % (job, n.name))
            if os.path.exists(path):
                with open(path) as f:
                    doc = json.load(f)
                got[n.name] = (doc.get("job"), doc.get("host"), doc.get("cpus"), doc.get("cpu_model"))
        tap.eq(got, {n: (job, n, t.format_cpulist(tasks[n]["affinity"]), c.node_named(n).model) for n in tasks},
               "job %s: the Epilog of each of its nodes wrote JOB.NODE.json with that node, the job's CPUs "
               "there and the node's model" % job)


def test_nodes_healthy(tap, c):
    failed = {k: v for kind in ("prolog", "epilog") for k, v in c.script_status(kind).items() if any(v)}
    tap.eq(failed, {}, "every Prolog and Epilog Slurm ran exited 0")
    rc, out = s.sh(["sinfo", "-h", "-N", "-o", "%N %T"], timeout=15, env=c.env)
    tap.eq(sorted(out.split()), sorted(sum([[n.name, "idle"] for n in c.nodes], [])),
           "every node is idle, not drained")


TESTS = [check_nodes_are_nodes, test_two_jobs, test_nodes_healthy]


def skip(reason):
    print("1..0 # SKIP " + reason)
    return 0


def host_cannot():
    """Why this host cannot run the cluster, or None."""
    if os.geteuid() != 0:
        return "needs root (starts Slurm, makes namespaces and cgroups, switches uids)"
    for controller, probe in (("cpuset", "cpuset.cpus"), ("freezer", "tasks")):
        if not os.path.exists(os.path.join(CGROUP_ROOT, controller, probe)):
            return ("no cgroup v1 %s hierarchy at %s/%s: each node's slurmd runs task/cgroup and "
                    "proctrack/cgroup with cgroup/v1, and sees its own part of that hierarchy" % (
                        controller, CGROUP_ROOT, controller))
    for tool in ("unshare", "nsenter", "mount"):
        if not shutil.which(tool):
            return "%s not installed (util-linux)" % tool
    rc, out = s.sh(["unshare", "--uts", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
                    "hostname pmugate-probe && mount -t tmpfs none /mnt && umount /mnt"], timeout=15)
    if rc != 0:
        return "cannot make a UTS and mount namespace with a mount in it: %s" % out.strip()
    if len(os.sched_getaffinity(0)) < 2:
        return "needs 2 CPUs for two jobs side by side on one node (has %d)" % len(os.sched_getaffinity(0))
    return None


def main():
    why = host_cannot()
    if why:
        return skip(why)
    if not s.install_packages():
        return skip("slurm packages unavailable")
    running = s.processes_named(s.SLURM_DAEMONS)
    if running:
        return skip("Slurm daemons already run on this host (%s); this test starts its own cluster" %
                    ", ".join("%s %d" % (n, p) for p, n in running))

    tap = t.Tap()
    started = time.time()
    c = Site()
    try:
        shutil.copy(os.path.join(HERE, "clusterstep.py"), c.path("clusterstep.py"))
        os.chmod(c.path("clusterstep.py"), 0o755)
        try:
            c.start()
            tap.ok(True, "a three-node cluster runs: slurmctld, munged, and per node (UTS and mount namespace) "
                   "slurmd, pmugated (spr, icx, zen4) and pmugate-exporter, one Prometheus")
        except Exception:
            tap.ok(False, "a three-node cluster runs", traceback.format_exc())
        if not tap.failed:
            for test in TESTS:
                try:
                    test(tap, c)
                except Exception:
                    tap.ok(False, "%s raised" % test.__name__, traceback.format_exc())
        if tap.failed:
            c.diagnose()
    finally:
        c.stop()
    mine = [p.pid for p in c.procs.values()] + [n.holder.pid for n in c.nodes if n.holder]
    leftovers = s.processes_named(s.SLURM_DAEMONS + ("munged",))
    tap.ok(not [p for p, n in leftovers if p in mine], "teardown stopped every daemon it started", leftovers)
    tap.ok(not [p for p in c.created if os.path.exists(p)], "teardown removed the cgroups and directories it made",
           c.created)
    tap.ok(not c.leftover_mounts(), "no mount of the nodes is left", c.leftover_mounts())
    s.comment("took %.0f s" % (time.time() - started))
    print("1..%d" % tap.n)
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
