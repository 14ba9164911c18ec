#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Slurm end to end: installs Debian's slurm-wlm and munge if missing, starts a private
single-node cluster on localhost (its own munged, slurmctld and slurmd, configuration, state
and logs in a temporary directory, nothing under /etc), whose Prolog and Epilog are
contrib/slurm/pmugate-prolog.sh and -epilog.sh talking to a job-mode pmugated on a simulated
PMU. An unprivileged user's jobs then measure through pmugate on their own CPUs, are refused
on others, and leave a clean PMU behind.

Needs root and the cgroup v1 cpuset hierarchy (task/cgroup with ConstrainCores=yes). Prints
"1..0 # SKIP" when the packages cannot be installed (no network) or a Slurm daemon already
runs on this host."""

import json
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request

import pmugatetest as t

HERE = os.path.dirname(os.path.abspath(__file__))
# The configured scripts (contrib/slurm/*.sh.in with this build's paths).
CONTRIB = os.path.join(os.path.abspath(t.BUILD), "contrib", "slurm")
PMUGATE = os.path.abspath(t.PMUGATE)
PMUGATECTL = os.path.abspath(t.PMUGATECTL)

PACKAGES = ["slurm-wlm", "slurmctld", "slurmd", "slurm-client", "munge"]
POLICY_RC = "/usr/sbin/policy-rc.d"
USER = "pmugate-slurm-test"
CGROUP_ROOT = "/sys/fs/cgroup"
SLURM_DAEMONS = ("slurmctld", "slurmd", "slurmstepd")

EVTSEL0, PMC0, FIXED_CTR0, FIXED_CTRL, GLOBAL_CTRL = 0x186, 0xC1, 0x309, 0x38D, 0x38F
EXPORTER = os.path.join(os.path.abspath(t.BUILD), "exporter", "pmugate-exporter")
EXPORTER_UID = 4260
SNAPSHOT_REGS = {"IA32_PERFEVTSEL0": EVTSEL0, "IA32_PMC0": PMC0, "IA32_FIXED_CTR0": FIXED_CTR0,
                 "IA32_FIXED_CTR_CTRL": FIXED_CTRL, "IA32_PERF_GLOBAL_CTRL": GLOBAL_CTRL}


# ---------------------------------------------------------------------------------------------
# Small helpers


def sh(argv, timeout=60, **kw):
    """Runs argv, returns (status, stdout + stderr); never raises on failure or timeout."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        return 124, "timed out after %ss: %s" % (timeout, e)
    except OSError as e:
        return 127, str(e)


def wait_for(what, fn, timeout=60, interval=0.2):
    """Polls fn() until it returns something true; raises with what after timeout."""
    deadline = time.time() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.time() > deadline:
            raise TimeoutError("timed out after %ds waiting for %s" % (timeout, what))
        time.sleep(interval)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def tail(path, lines=40):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()[-lines:]
    except OSError as e:
        return ["(%s)" % e]


def comment(text):
    for line in str(text).splitlines():
        print("# " + line)
    sys.stdout.flush()


def processes_named(names):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % pid) as f:
                comm = f.read().strip()
            with open("/proc/%s/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if comm in names and state != "Z":
            found.append((int(pid), comm))
    return found


def parse_audit(text):
    """logfmt lines: key=value or key="quoted value"."""
    records = []
    for line in text.splitlines():
        rec = {}
        for m in re.finditer(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)', line):
            v = m.group(2)
            if v.startswith('"'):
                v = re.sub(r'\\(.)', r'\1', v[1:-1])
            rec[m.group(1)] = v
        records.append(rec)
    return records


def parse_reads(out):
    """pmugate read output: {(cpu, address): value}."""
    values = {}
    for m in re.finditer(r"^cpu\s+(\d+)\s+\S+\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)", out, re.M):
        values[(int(m.group(1)), int(m.group(2), 16))] = int(m.group(3), 16)
    return values


def todo(tap, cond, desc, why, detail=None):
    """A check of something not built yet: 'not ok ... # TODO why' does not fail the run,
    and it turns into a plain 'ok' the day it works."""
    if cond:
        return tap.ok(True, desc)
    tap.n += 1
    print("not ok %d - %s # TODO %s" % (tap.n, desc, why))
    comment("\n".join("  " + line for line in str(detail).splitlines()[:20]))
    return False


def register_changes(before, after):
    """Lines naming every register whose value differs; empty when the PMU is as before."""
    names = {addr: name for name, addr in SNAPSHOT_REGS.items()}
    return ["CPU %d %s (0x%x): 0x%x, was 0x%x" % (cpu, names.get(addr, "?"), addr, after.get((cpu, addr), -1),
                                                 before.get((cpu, addr), -1))
            for cpu, addr in sorted(set(before) | set(after)) if before.get((cpu, addr)) != after.get((cpu, addr))]


def format_cpus(cpus):
    return t.format_cpulist(cpus)


# ---------------------------------------------------------------------------------------------
# Packages


def installed(pkg):
    rc, out = sh(["dpkg-query", "-W", "-f=${db:Status-Abbrev}", pkg], timeout=30)
    return rc == 0 and out.startswith("ii")


def install_packages():
    """Installs what is missing; True when every package is there afterwards. A policy-rc.d
    that forbids starting services keeps the maintainer scripts from starting Debian's own
    munged and Slurm daemons; it is removed again if this test created it."""
    missing = [p for p in PACKAGES if not installed(p)]
    if not missing:
        comment("slurm packages already installed")
        return True
    comment("installing " + " ".join(missing))
    created = not os.path.lexists(POLICY_RC)
    if created:
        with open(POLICY_RC, "w") as f:
            f.write("#!/bin/sh\n# pmugate test_slurm.py: keep maintainer scripts from starting daemons\nexit 101\n")
        os.chmod(POLICY_RC, 0o755)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        for update in (False, True):
            if update:
                rc, out = sh(["apt-get", "-o", "DPkg::Lock::Timeout=120", "update"], timeout=300, env=env)
                if rc != 0:
                    comment("apt-get update failed:\n" + "\n".join(out.splitlines()[-10:]))
            rc, out = sh(["apt-get", "-o", "DPkg::Lock::Timeout=120", "install", "-y", "--no-install-recommends"]
                         + missing, timeout=600, env=env)
            if rc == 0 and all(installed(p) for p in PACKAGES):
                return True
            comment("apt-get install failed:\n" + "\n".join(out.splitlines()[-10:]))
    finally:
        if created:
            os.unlink(POLICY_RC)
    return False


# ---------------------------------------------------------------------------------------------
# The cluster


class Cluster:
    """munged, slurmctld, slurmd and pmugated, all children of this process, with everything
    they write under one temporary directory."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="pmugate-slurm-")
        os.chmod(self.dir, 0o755)
        self.node = socket.gethostname().split(".")[0]
        self.cpus = sorted(os.sched_getaffinity(0))
        self.procs = {}
        self.daemon = None
        self.created_user = False
        self.uid = self.gid = None
        self.cgroups_before = self.slurm_cgroups()
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def mkdir(self, name, owner=None, mode=0o755):
        p = self.path(name)
        os.makedirs(p, exist_ok=True)
        os.chmod(p, mode)
        if owner:
            pw = pwd.getpwnam(owner)
            os.chown(p, pw.pw_uid, pw.pw_gid)
        return p

    def spawn(self, name, argv, preexec_fn=None):
        """Through the harness's spawn(): its own process group, ended and reaped at exit if
        stop() did not get to it."""
        log = open(self.path("log", name + ".out"), "w")
        self.procs[name] = t.spawn(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                   env=self.env, preexec_fn=preexec_fn)
        log.close()

    # -- start-up

    def start(self):
        self.mkdir("log", owner="slurm")
        self.create_user()
        self.mkdir("jobs", owner=USER)  # the jobs' output files
        self.start_pmugated()
        self.write_slurm_files()
        self.start_munged()
        self.spawn("slurmctld", ["/usr/sbin/slurmctld", "-D", "-f", self.conf])
        self.spawn("slurmd", ["/usr/sbin/slurmd", "-D", "-f", self.conf])
        wait_for("the node to be idle (sinfo)", self.node_idle, timeout=60, interval=0.5)

    def create_user(self):
        try:
            pw = pwd.getpwnam(USER)
            comment("user %s already exists (uid %d); reusing it" % (USER, pw.pw_uid))
        except KeyError:
            rc, out = sh(["useradd", "-M", "-U", "-d", "/nonexistent", "-s", "/usr/sbin/nologin", USER])
            if rc != 0:
                raise RuntimeError("useradd failed: " + out)
            self.created_user = True
            pw = pwd.getpwnam(USER)
        self.uid, self.gid = pw.pw_uid, pw.pw_gid

    def sim_config(self):
        """A simulated machine with more CPUs than this one, so every real CPU number a job's
        cgroup names exists there, and the last simulated CPU belongs to no job."""
        cores = max(4, (max(self.cpus) + 2 + 3) // 4)
        p = self.path("sim.conf")
        with open(p, "w") as f:
            f.write("[machine]\nmodel = spr\nsockets = 2\ncores = %d\nsmt = yes\n" % cores)
        self.sim_cpus = 2 * cores * 2
        return p

    def start_pmugated(self):
        d = self.mkdir("pmugated")
        conf = os.path.join(d, "pmugate.conf")
        with open(conf, "w") as f:
            # Every user, written out: left out, user_groups means pmugate-users. The exporter's
            # uid is a monitor (test_exporter_job_labels).
            f.write("[access]\nmode = job\nuser_groups =\nmonitor_users = %d\n" % EXPORTER_UID)
        self.daemon = t.Daemon(d, ["--backend=sim", "--sim-model=spr", "--sim-config=" + self.sim_config()],
                               config=conf, user="nobody")
        self.socket = self.daemon.socket
        self.env["PMUGATE_SOCKET"] = self.socket

    def write_slurm_files(self):
        state = self.mkdir("state", owner="slurm", mode=0o700)
        spool = self.mkdir("spool", mode=0o755)
        munge_socket = self.path("munge", "munge.sock")
        with open(self.path("slurm.env"), "w") as f:
            # What /etc/pmugate/slurm.env would hold on a site with pmugate elsewhere.
            f.write("PMUGATECTL=%s\nPMUGATE_SOCKET=%s\n" % (PMUGATECTL, self.socket))
        for kind in ("prolog", "epilog"):
            # Slurm's record of each run: the script's status, next to its stderr.
            with open(self.path(kind + ".sh"), "w") as f:
                f.write("#!/bin/sh\n"
                        "PMUGATE_SLURM_ENV=%s %s 2>>%s\n"
                        "rc=$?\n"
                        'echo "$SLURM_JOB_ID $rc" >>%s\n'
                        "exit $rc\n" % (self.path("slurm.env"), os.path.join(CONTRIB, "pmugate-%s.sh" % kind),
                                        self.path("log", kind + ".err"), self.path("log", kind + ".status")))
            os.chmod(self.path(kind + ".sh"), 0o755)
        conf = {
            "ClusterName": "pmugatetest",
            "SlurmctldHost": "%s(127.0.0.1)" % self.node,
            "SlurmctldPort": free_port(),
            "SlurmdPort": free_port(),
            "SlurmUser": "slurm",
            "SlurmdUser": "root",
            "AuthType": "auth/munge",
            "CredType": "cred/munge",
            "AuthInfo": "socket=" + munge_socket,
            "StateSaveLocation": state,
            "SlurmdSpoolDir": spool,
            "SlurmctldPidFile": self.path("slurmctld.pid"),
            "SlurmdPidFile": self.path("slurmd.pid"),
            "SlurmctldLogFile": self.path("log", "slurmctld.log"),
            "SlurmdLogFile": self.path("log", "slurmd.log"),
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
            f.write("NodeName=%s NodeAddr=127.0.0.1 CPUs=%d State=UNKNOWN\n" % (self.node, len(self.cpus)))
            f.write("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n")
        with open(self.path("cgroup.conf"), "w") as f:
            f.write("CgroupPlugin=cgroup/v1\nConstrainCores=yes\nConstrainRAMSpace=no\nConstrainDevices=no\n")
        open(self.path("plugstack.conf"), "w").close()

    def start_munged(self):
        """A private munged with its own key and socket (slurm.conf AuthInfo names it), so a
        munged the host already runs is neither needed nor touched."""
        pw = pwd.getpwnam("munge")
        d = self.mkdir("munge", owner="munge")
        key = os.path.join(d, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chown(key, pw.pw_uid, pw.pw_gid)
        os.chmod(key, 0o400)
        self.spawn("munged", ["/usr/sbin/munged", "-F", "--socket=" + os.path.join(d, "munge.sock"),
                              "--key-file=" + key, "--pid-file=" + os.path.join(d, "munged.pid"),
                              "--seed-file=" + os.path.join(d, "munged.seed"),
                              "--log-file=" + os.path.join(d, "munged.log")],
                   preexec_fn=t.as_user(pw.pw_uid, pw.pw_gid))
        wait_for("munged's socket", lambda: os.path.exists(os.path.join(d, "munge.sock")), timeout=15)

    def node_idle(self):
        for name, p in self.procs.items():
            if p.poll() is not None:
                raise RuntimeError("%s exited with status %d" % (name, p.returncode))
        rc, out = sh(["sinfo", "-h", "-n", self.node, "-o", "%T"], timeout=15, env=self.env)
        return rc == 0 and out.strip() == "idle"

    # -- running things

    def as_user(self, argv, timeout=120):
        """argv as the test user (not in a job unless argv is srun/sbatch): (status, out, err)."""
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=self.env, cwd=self.dir,
                               preexec_fn=t.as_user(self.uid, self.gid, [self.gid]))
            return p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            return 124, "", "timed out after %ss: %s" % (timeout, e)

    def ctl(self, *args):
        return sh([PMUGATECTL, "--socket=" + self.socket] + list(args), timeout=30)

    def status(self):
        rc, out = self.ctl("status")
        if rc != 0:
            raise RuntimeError("pmugatectl status failed: " + out)
        return out

    def grants_and_leases(self):
        out = self.status()
        return (int(re.search(r"^Grants:\s+(\d+)", out, re.M).group(1)),
                int(re.search(r"^Leases:\s+(\d+)", out, re.M).group(1)), out)

    def audit(self):
        return parse_audit(self.daemon.audit())

    def audit_find(self, **want):
        return [r for r in self.audit() if all(r.get(k) == v for k, v in want.items())]

    def script_status(self, kind):
        """{job: [status, ...]} from the prolog or epilog wrapper."""
        out = {}
        try:
            with open(self.path("log", kind + ".status")) as f:
                for line in f:
                    job, rc = line.split()
                    out.setdefault(job, []).append(int(rc))
        except FileNotFoundError:
            pass
        return out

    def job_done(self, job):
        """The job left the queue and its Epilog has run."""
        rc, out = sh(["squeue", "-h", "-j", job, "-o", "%T"], timeout=15, env=self.env)
        return (rc != 0 or not out.strip()) and job in self.script_status("epilog")

    def registers(self, cpus):
        """As root (an admin may read every CPU): {(cpu, address): value}."""
        rc, out = sh([PMUGATE, "--socket=" + self.socket, "read", "-c", format_cpus(cpus)] + list(SNAPSHOT_REGS),
                     timeout=30)
        if rc != 0:
            raise RuntimeError("root's read failed: " + out)
        return parse_reads(out)

    # -- teardown

    def diagnose(self):
        for name in ("slurmctld.log", "slurmd.log", "prolog.err", "epilog.err", "prolog.status",
                     "epilog.status", "munged.out"):
            comment("--- tail of %s" % name)
            comment("\n".join(tail(self.path("log", name), 30)))
        if self.daemon:
            comment("--- tail of pmugated's log")
            comment("\n".join(self.daemon.log().splitlines()[-40:]))
            comment("--- tail of the audit log")
            comment("\n".join(self.daemon.audit().splitlines()[-40:]))

    def stop(self):
        """Undoes start() as far as it got; every step is bounded and none raises."""
        if "slurmctld" in self.procs and self.uid is not None:
            sh(["scancel", "-u", USER], timeout=15, env=self.env)
            try:
                wait_for("the test user's jobs to end", lambda: sh(
                    ["squeue", "-h", "-u", USER], timeout=15, env=self.env)[1].strip() == "", timeout=30)
            except Exception as e:
                comment(str(e))
        # slurmstepd processes of our jobs end on their own once the jobs are gone; wait for them
        # before slurmd, whose process group end() empties, SIGKILL after its timeout.
        try:
            wait_for("slurmstepd to exit", lambda: not self.own_stepds(), timeout=30)
        except Exception as e:
            comment("%s: %s" % (e, self.own_stepds()))
        for name in ("slurmd", "slurmctld", "munged"):
            p = self.procs.get(name)
            if p:
                t.end(p, timeout=15)
        self.remove_cgroups()
        if self.daemon:
            self.daemon.stop()
        if self.created_user:
            rc, out = sh(["userdel", USER], timeout=30)
            if rc != 0:
                comment("userdel failed: " + out)
        shutil.rmtree(self.dir, ignore_errors=True)

    def own_stepds(self):
        """slurmstepd processes started for this cluster (their spool dir is ours)."""
        out = []
        for pid, _ in processes_named(("slurmstepd",)):
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    if self.dir.encode() in f.read():
                        out.append(pid)
            except OSError:
                pass
            try:
                if os.readlink("/proc/%d/cwd" % pid).startswith(self.path("spool")):
                    out.append(pid)
            except OSError:
                pass
        return out

    def slurm_cgroups(self):
        """slurm_<node> directories (cgroup v1 task/cgroup and proctrack/cgroup) that exist now."""
        found = set()
        try:
            controllers = os.listdir(CGROUP_ROOT)
        except OSError:
            return found
        for c in controllers:
            p = os.path.join(CGROUP_ROOT, c, "slurm_" + self.node)
            if os.path.isdir(p):
                found.add(p)
        return found

    def remove_cgroups(self):
        for top in sorted(self.slurm_cgroups() - self.cgroups_before):
            for root, dirs, _ in os.walk(top, topdown=False):
                try:
                    os.rmdir(root)
                except OSError as e:
                    comment("cannot remove cgroup %s: %s" % (root, e))


# ---------------------------------------------------------------------------------------------
# The tests


def test_no_grant_outside_jobs(tap, c):
    rc, out, err = c.as_user([PMUGATE, "read", "-c", str(c.cpus[0]), "IA32_PMC0"])
    tap.ok(rc == 1 and "[no-grant]" in err and "no job grant for uid %d" % c.uid in err,
           "outside any job the user is refused with a no-grant reason", (rc, out, err))


def run_script(c, kind, env):
    e = {"PATH": "/usr/bin:/bin", "PMUGATE_SLURM_ENV": "/nonexistent"}
    e.update(env)
    return sh([os.path.join(CONTRIB, "pmugate-%s.sh" % kind)], timeout=30, env=e)


def test_scripts_without_slurm(tap, c):
    """The exit statuses Slurm turns into node state, with the scripts run by hand."""
    job = {"SLURM_JOB_ID": "990001", "SLURM_JOB_UID": str(c.uid)}
    ok = dict(job, PMUGATECTL=PMUGATECTL, PMUGATE_SOCKET=c.socket)
    for kind in ("prolog", "epilog"):
        rc, out = run_script(c, kind, dict(job, PMUGATECTL="/nonexistent/pmugatectl", PMUGATE_SOCKET=c.socket))
        tap.eq(rc, 0, "%s: pmugatectl not installed is nothing to do (exit 0)" % kind)
        rc, out = run_script(c, kind, dict(job, PMUGATECTL=PMUGATECTL, PMUGATE_SOCKET=c.path("missing.sock")))
        tap.eq(rc, 0, "%s: no pmugated socket is nothing to do (exit 0)" % kind)
        stale = c.path("stale.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.bind(stale)
        s.close()  # a socket file with nobody listening: the daemon died
        rc, out = run_script(c, kind, dict(job, PMUGATECTL=PMUGATECTL, PMUGATE_SOCKET=stale))
        os.unlink(stale)
        tap.ok(rc == 0 and "not running" in out, "%s: a stale socket (pmugated not running) is nothing to do" % kind,
               (rc, out))
        rc, out = run_script(c, kind, dict(ok, SLURM_JOB_ID="bad job id"))
        tap.ok(rc == 1 and "[bad-field]" in out, "%s: pmugated refusing is a real problem (exit 1)" % kind, (rc, out))
    rc, out = run_script(c, "epilog", ok)
    tap.eq(rc, 0, "epilog: a job that never had a grant exits 0 (nothing to revoke)")
    # Slurm gives a Prolog no PATH and only its SLURM_* variables.
    rc, out = sh(["/bin/sh", "-c", 'env -i SLURM_JOB_ID=990002 SLURM_JOB_UID=1 PMUGATE_SLURM_ENV="$1" "$2"', "sh",
                  c.path("slurm.env"), os.path.join(CONTRIB, "pmugate-prolog.sh")])
    grants = c.audit_find(event="grant", job="990002")
    c.ctl("revoke", "--job", "990002")
    tap.ok(rc == 0 and grants, "prolog: with no PATH and no environment but the env file it grants", (rc, out))


def test_job_step(tap, c):
    """One srun job step: scope, reads in and out of it, a write under a lease, then the
    Epilog and a clean PMU."""
    before = c.registers(c.cpus)
    others = sorted(set(c.cpus[1:2] + [c.sim_cpus - 1]))
    rc, out, err = c.as_user(["srun", "-n1", "-c1", "-J", "pmugate-probe", "/usr/bin/python3",
                              c.path("jobstep.py"), "probe", PMUGATE, ",".join(str(x) for x in others)])
    if not tap.ok(rc == 0, "srun -n1 -c1 runs the probe as %s" % USER, out + err):
        return
    step = json.loads(out.strip().splitlines()[-1])
    job, mine = step["job"], step["affinity"][0]
    comment("job %s: cpuset cgroup %s, CPUs %s" % (job, step["cgroup"], step["affinity"]))
    tap.ok(re.search(r"/job_%s/step_0$" % job, step["cgroup"] or "") is not None,
           "the step runs in the job's cpuset cgroup", step["cgroup"])
    tap.eq(len(step["affinity"]), 1, "-c1 gives the step one CPU")
    tap.eq(step["hello"]["mode"], "job", "hello reports job mode")
    tap.eq(step["hello"]["caller"].get("scope"), {"job": job, "cpus": step["affinity"]},
           "pmugated takes the job and its CPUs from the step's cgroup")
    info = step["info"]
    tap.ok(info["rc"] == 0 and "role user" in info["out"], "pmugate info works inside the job", info)
    todo(tap, re.search(r"\bjob\b\D*\b%s\b" % job, info["out"], re.I) is not None,
         "pmugate info names the job and its CPUs", "the CLI does not print hello's caller.scope yet", info["out"])
    reads = parse_reads(step["read_own"]["out"])
    tap.ok(step["read_own"]["rc"] == 0 and (mine, PMC0) in reads and (mine, FIXED_CTR0) in reads,
           "pmugate read on the job's CPU %d succeeds" % mine, step["read_own"])
    for cpu in others:
        r = step["read_other"][str(cpu)]
        tap.ok(r["rc"] == 1 and "[out-of-scope]" in r["err"] and "not one of job %s's CPUs" % job in r["err"],
               "pmugate read on CPU %d outside the job is refused (out-of-scope)" % cpu, r)
    w = step["write_own"]
    tap.ok(w["rc"] == 0 and "(written)" in w["out"] and
           re.search(r"IA32_PERFEVTSEL0\s+0x186\s+0x000000000043003c$", w["out"], re.M) is not None,
           "pmugate write -- CMD programs EVTSEL0 on the job's CPU while CMD runs", w)

    wait_for("job %s's Epilog" % job, lambda: c.job_done(job), timeout=60)
    tap.eq(c.script_status("prolog").get(job), [0], "the Prolog of job %s exited 0" % job)
    tap.eq(c.script_status("epilog").get(job), [0], "the Epilog of job %s exited 0" % job)
    grants, leases, out = c.grants_and_leases()
    tap.ok(grants == 0 and leases == 0, "after the job pmugatectl status shows no grants and no leases", out)
    changes = register_changes(before, c.registers(c.cpus))
    tap.ok(not changes, "the PMU of every CPU is back to its pre-job values", "\n".join(changes))

    uid = str(c.uid)
    tap.ok(c.audit_find(event="grant", verdict="allowed", uid="0", job=job, cpus="cgroup",
                        reason="granted to uid " + uid),
           "audit: the Prolog (root) granted job %s to uid %s, CPUs from the cgroup" % (job, uid))
    for cpu in others:
        tap.ok(c.audit_find(event="deny", uid=uid, code="out-of-scope", cpus=str(cpu)),
               "audit: the out-of-scope read of CPU %d is recorded" % cpu)
    tap.ok(c.audit_find(event="lease-begin", uid=uid, job=job, cpus=str(mine)) and
           c.audit_find(event="write", verdict="allowed", uid=uid, job=job, cpus=str(mine), regs="0x186") and
           c.audit_find(event="lease-end", verdict="restored", uid=uid, job=job, cpus=str(mine)),
           "audit: lease, write and restore on CPU %d are recorded for job %s" % (mine, job))
    tap.ok(c.audit_find(event="revoke", verdict="allowed", uid="0", job=job),
           "audit: the Epilog (root) revoked job %s" % job)


def lease_of(c, job):
    """(cpu,) of job's lease in pmugatectl status, or None."""
    m = re.search(r"^\s+cpu (\d+)\s+uid \d+(?: \(\S+\))?\s+pid \d+\s+role \S+\s+job %s\s" % job, c.status(), re.M)
    return (int(m.group(1)),) if m else None


def test_job_ends_while_measuring(tap, c):
    """A batch job holds a lease with the PMU programmed when it is cancelled: the Epilog's
    revoke (and the client's end) must leave nothing behind."""
    before = c.registers(c.cpus)
    rc, out, err = c.as_user(["sbatch", "--parsable", "-n1", "-c1", "-J", "pmugate-hold",
                              "-o", c.path("jobs", "hold-%j.out"),
                              "--wrap", "exec srun -n1 -c1 /usr/bin/python3 %s hold %s" % (c.path("jobstep.py"),
                                                                                          PMUGATE)])
    if not tap.ok(rc == 0, "sbatch submits a job that keeps a lease", out + err):
        return
    job = out.strip().split(";")[0]
    cpu = wait_for("job %s's lease" % job, lambda: lease_of(c, job), timeout=60)[0]
    regs = c.registers([cpu])
    tap.ok(regs[(cpu, EVTSEL0)] == 0x43003C and regs[(cpu, FIXED_CTRL)] == 0x333 and
           regs[(cpu, GLOBAL_CTRL)] == 0x700000001,
           "while job %s runs, its CPU %d is programmed as it asked" % (job, cpu), regs)

    rc, out, err = c.as_user([PMUGATE, "read", "-c", str(cpu), "IA32_PMC0"])
    tap.ok(rc == 1 and "[no-grant]" in err and "not inside a job's cgroup" in err,
           "the job's user outside the job (no cgroup) is refused with a no-grant reason", (rc, out, err))

    if len(c.cpus) > 1:
        # A second job on the other CPU measures beside the first and cannot touch its CPU.
        rc, out, err = c.as_user(["srun", "-n1", "-c1", "-J", "pmugate-beside", "/usr/bin/python3",
                                  c.path("jobstep.py"), "probe", PMUGATE, str(cpu)])
        step = json.loads(out.strip().splitlines()[-1]) if rc == 0 else {}
        tap.ok(rc == 0 and step["affinity"] != [cpu] and step["read_own"]["rc"] == 0 and
               step["write_own"]["rc"] == 0 and "[out-of-scope]" in step["read_other"][str(cpu)]["err"],
               "a second job measures on its own CPU and is refused on job %s's CPU %d" % (job, cpu), out + err)
        if step:
            wait_for("job %s's Epilog" % step["job"], lambda: c.job_done(step["job"]), timeout=60)

    rc, out = sh(["scancel", job], timeout=30, env=c.env)
    tap.eq(rc, 0, "scancel ends job %s" % job)
    wait_for("job %s's Epilog" % job, lambda: c.job_done(job), timeout=60)
    tap.eq(c.script_status("epilog").get(job), [0], "the Epilog of the cancelled job exited 0")
    grants, leases, out = c.grants_and_leases()
    tap.ok(grants == 0 and leases == 0, "no grants and no leases remain after the cancelled job", out)
    changes = register_changes(before, c.registers(c.cpus))
    tap.ok(not changes, "the PMU is back to its pre-job values after the cancelled job (counters the job "
           "enabled are zeroed too)", "\n".join(changes))
    tap.ok(c.audit_find(event="lease-end", verdict="restored", job=job, cpus=str(cpu)) and
           c.audit_find(event="revoke", verdict="allowed", uid="0", job=job),
           "audit: job %s's lease ended with a restore and the Epilog revoked the job" % job)


def exporter_metrics(url):
    """{(name, labels as a sorted tuple): value} from the exporter's /metrics; {} while it does not
    answer yet."""
    out = {}
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
            text = r.read().decode()
    except OSError:
        return out
    for line in text.splitlines():
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', line)
        if m:
            labels = re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or "")
            out[(m.group(1), tuple(sorted(labels)))] = float(m.group(3))
    return out


def job_series(url, job):
    """Names of the exporter's series labelled with job (label jobid), and the CPUs they name."""
    got = {}
    for (name, labels), v in exporter_metrics(url).items():
        d = dict(labels)
        if d.get("jobid") == job:
            got.setdefault(name, set()).add(d.get("cpu"))
    return got


def test_exporter_job_labels(tap, c):
    """pmugate-exporter as a monitor beside Slurm: a running job's series carry its job id from
    the job's cgroup, stop when the job ends, and its Epilog writes the job's summary."""
    if not os.path.exists(EXPORTER):
        tap.ok(True, "pmugate-exporter job labels # SKIP pmugate-exporter not built (libmicrohttpd missing)")
        return
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    summaries = c.mkdir("summaries", mode=0o755)
    with open(c.path("slurm.env"), "a") as f:
        f.write("PMUGATE_JOB_SUMMARY_DIR=%s\nPMUGATE_EXPORTER_URL=%s\n" % (summaries, url))
    env = dict(c.env, PMUGATE_GROUP_PATH=os.path.join(os.path.abspath(t.SOURCE), "client", "groups"))
    log = open(c.path("log", "exporter.out"), "w")
    ex = t.spawn([EXPORTER, "--listen=127.0.0.1:%d" % port, "--interval=200ms"], stdout=log, stderr=log,
                 env=env, preexec_fn=t.as_user(EXPORTER_UID, EXPORTER_UID, []))
    log.close()
    try:
        wait_for("the exporter to measure", lambda: any(
            k[0] == "pmugate_cpu_monitored" and v == 1
            for k, v in exporter_metrics(url).items()) if ex.poll() is None else True, timeout=30)
        rc, out, err = c.as_user(["sbatch", "--parsable", "-n1", "-c1", "-J", "pmugate-exported",
                                  "-o", c.path("jobs", "exported-%j.out"), "--wrap", "exec srun -n1 -c1 sleep 60"])
        if not tap.ok(rc == 0, "sbatch submits a job for the exporter to label", out + err):
            return
        job = out.strip().split(";")[0]
        series = wait_for("job %s's series" % job, lambda: job_series(url, job).get("pmugate_job_cpus") and
                          job_series(url, job), timeout=60)
        cpus = series.get("pmugate_cpu_instructions_total", set())
        tap.ok(len(cpus) == 1 and "pmugate_job_topdown_level1_slots_total" in series,
               "while job %s runs its CPU's series and its job series carry jobid=\"%s\" (from its cgroup)" % (
                   job, job), series)
        # A job's totals start at 0 when the exporter first sees it and grow from its next sample:
        # end the job only once it has been measured, or its summary has nothing to say.
        wait_for("job %s's first measured instructions" % job, lambda: any(
            k[0] == "pmugate_job_instructions_total" and dict(k[1]).get("jobid") == job and v > 0
            for k, v in exporter_metrics(url).items()), timeout=30)
        rc, out = sh(["scancel", job], timeout=30, env=c.env)
        wait_for("job %s's Epilog" % job, lambda: c.job_done(job), timeout=60)
        gone = wait_for("job %s's series to stop" % job, lambda: not job_series(url, job) or None, timeout=30)
        tap.ok(gone, "after job %s ends no series carries its label" % job)
        host = socket.gethostname().split(".")[0]
        path = os.path.join(summaries, "%s.%s.json" % (job, host))
        summary = {}
        if os.path.exists(path):
            with open(path) as f:
                summary = json.load(f)
        tap.ok(summary.get("job") == job and summary.get("instructions", 0) > 0 and summary.get("topdown_percent"),
               "job %s's Epilog wrote its summary (TopDown, IPC, counts) to the configured directory" % job,
               summary or os.listdir(summaries))
        tap.eq(c.script_status("epilog").get(job), [0], "and exited 0")
    finally:
        tap.eq(t.end(ex, timeout=20), 0, "the exporter stops cleanly")


def test_node_healthy(tap, c):
    failed = {k: v for kind in ("prolog", "epilog") for k, v in c.script_status(kind).items() if any(v)}
    tap.eq(failed, {}, "every Prolog and Epilog Slurm ran exited 0")
    rc, out = sh(["sinfo", "-h", "-n", c.node, "-o", "%T"], timeout=15, env=c.env)
    tap.eq(out.strip(), "idle", "the node is idle, not drained")


TESTS = [test_no_grant_outside_jobs, test_scripts_without_slurm, test_job_step, test_job_ends_while_measuring,
         test_exporter_job_labels, test_node_healthy]


def skip(reason):
    print("1..0 # SKIP " + reason)
    return 0


def main():
    if os.geteuid() != 0:
        return skip("needs root (installs packages, starts Slurm and switches uids)")
    for controller, probe in (("cpuset", "cpuset.cpus"), ("freezer", "tasks")):
        if not os.path.exists(os.path.join(CGROUP_ROOT, controller, probe)):
            return skip("no cgroup v1 %s hierarchy at %s/%s (this test runs Slurm with cgroup/v1)" %
                        (controller, CGROUP_ROOT, controller))
    if not install_packages():
        return skip("slurm packages unavailable")
    running = processes_named(SLURM_DAEMONS)
    if running:
        return skip("Slurm daemons already run on this host (%s); this test starts its own cluster" %
                    ", ".join("%s %d" % (n, p) for p, n in running))

    tap = t.Tap()
    started = time.time()
    c = Cluster()
    try:
        shutil.copy(os.path.join(HERE, "jobstep.py"), c.path("jobstep.py"))
        os.chmod(c.path("jobstep.py"), 0o755)
        try:
            c.start()
            tap.ok(True, "a single-node cluster runs: munged, slurmctld, slurmd and pmugated in job mode")
        except Exception:
            tap.ok(False, "a single-node cluster runs", traceback.format_exc())
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
    leftovers = processes_named(SLURM_DAEMONS + ("munged",))
    tap.ok(not [p for p, n in leftovers if p in [q.pid for q in c.procs.values()]],
           "teardown stopped every daemon it started", leftovers)
    tap.ok(not (c.slurm_cgroups() - c.cgroups_before), "teardown removed the cgroups Slurm created",
           c.slurm_cgroups())
    comment("took %.0f s" % (time.time() - started))
    print("1..%d" % tap.n)
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
