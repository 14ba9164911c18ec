#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate's Debian packages under a real systemd: builds the packages from the source tree,
checks them with lintian --pedantic, boots Debian 12 under systemd-nspawn (root file system from
tests/system/rootfs.sh, cached in $PMUGATE_TEST_CACHE, default /var/cache/pmugate-tests),
installs them there with dpkg and proves what the units promise: socket activation, the
privilege drop, DevicePolicy= (with a device the filter must refuse: a silently disabled
filter fails), ProtectSystem= and ProtectKernelTunables=, audit records in the journal,
restart after a crash with the lease's registers restored, the systemd-analyze security
score, RemoveOnStop=; then removes and purges the packages and checks nothing is left.

The daemon serves a fake machine (regular files under /var/lib/pmugate-fake, as the
integration tests use) through the dev backend, so that registers written before a crash can
be read after it: the container has no msr driver.

Prints "1..0 # SKIP reason" when this machine cannot run it (not root, no systemd-nspawn,
no cgroup2, no network for the first debootstrap). Runs once per test run (suite "system")."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

import pmugatetest as t

SOURCE = os.path.abspath(t.SOURCE)
HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.environ.get("PMUGATE_TEST_CACHE", "/var/cache/pmugate-tests")
KEEP = os.environ.get("KEEP") == "1"
AUDIT_ID = "4c7e0b3a9d2f4e61a58b6f0c2d9e1a77"
FAKE_ROOT = "/var/lib/pmugate-fake"
EVTSEL0 = 0x186
PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
# systemd-analyze security of the installed service; test_systemd.py checks the same offline.
EXPOSURE_MAX = 2.0


def comment(text):
    for line in str(text).splitlines():
        print("# " + line)
    sys.stdout.flush()


def skip_all(reason):
    print("1..0 # SKIP " + reason)
    sys.exit(0)


def sh(argv, timeout=120, **kw):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        return 124, "timed out after %ss: %s" % (timeout, e)


def wait_for(fn, timeout, interval=0.2):
    deadline = time.time() + timeout
    while True:
        v = fn()
        if v or time.time() > deadline:
            return v
        time.sleep(interval)


def preconditions():
    if os.geteuid() != 0:
        skip_all("needs root (systemd-nspawn, dpkg)")
    for tool in ("systemd-nspawn", "nsenter", "dpkg-buildpackage", "lintian", "debootstrap"):
        if not shutil.which(tool):
            skip_all("%s is not installed (contrib/install-deps.sh installs it)" % tool)
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        return ["/sys/fs/cgroup"]
    if os.path.exists("/sys/fs/cgroup/unified/cgroup.procs") and os.path.isdir("/sys/fs/cgroup/systemd"):
        return ["/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd"]
    skip_all("no cgroup2 hierarchy: systemd in the container could not enforce DevicePolicy=")


# ---------------------------------------------------------------------------------------------
# The packages


def copy_source(dest):
    """The source tree without version control and build directories."""
    def ignore(d, names):
        return [n for n in names if n in (".git", ".build-tests") or
                os.path.isdir(os.path.join(d, n, "meson-private"))]
    shutil.copytree(SOURCE, dest, ignore=ignore, symlinks=True)


def build_packages(tap, work):
    src = os.path.join(work, "pmugate")
    copy_source(src)
    env = dict(os.environ, DEB_BUILD_OPTIONS="nocheck parallel=2")
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "MESON_TEST_ITERATION", "MALLOC_PERTURB_"):
        env.pop(k, None)
    rc, out = sh(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=src, env=env, timeout=900)
    if not tap.ok(rc == 0, "dpkg-buildpackage builds the packages", out[-3000:]):
        return None
    debs = sorted(f for f in os.listdir(work) if f.endswith(".deb") and "-dbgsym" not in f)
    tap.eq([re.sub(r"_.*", "", f) for f in debs], ["libpmugate-dev", "libpmugate0", "pmugate", "python3-pmugate"],
           "four packages: pmugate, libpmugate0, libpmugate-dev, python3-pmugate")
    changes = [f for f in os.listdir(work) if f.endswith(".changes")]
    rc, out = sh(["lintian", "--allow-root", "--pedantic", "--display-info", "--tag-display-limit", "0",
                  os.path.join(work, changes[0])], timeout=300)
    tags = [line for line in out.splitlines() if re.match(r"[EWIPX]: ", line)]
    tap.eq(tags, [], "lintian --pedantic has nothing to say of the packages (debian/*.lintian-overrides give "
           "their reasons)")
    comment("lintian: " + (out.strip() or "nothing to say"))
    return [os.path.join(work, f) for f in debs]


# ---------------------------------------------------------------------------------------------
# The container


class Container:
    def __init__(self, work, tarball, hierarchies):
        self.work = work
        self.rootfs = os.path.join(work, "rootfs")
        self.name = "pmugatetest-%d" % os.getpid()
        self.cgroups = [os.path.join(h, "pmugate-test-%d" % os.getpid()) for h in hierarchies]
        self.proc = None
        self.leader = None
        self.log = os.path.join(work, "nspawn.log")
        os.mkdir(self.rootfs)
        rc, out = sh(["tar", "-C", self.rootfs, "-xf", tarball], timeout=300)
        if rc != 0:
            raise RuntimeError("cannot extract %s: %s" % (tarball, out))

    def path(self, rel):
        return os.path.join(self.rootfs, rel.lstrip("/"))

    def write(self, rel, text, mode=0o644):
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, mode)

    def boot(self):
        for cg in self.cgroups:
            os.makedirs(cg, exist_ok=True)
        cgroups = self.cgroups

        def join():
            # nspawn without systemd on the host makes payload/ and supervisor/ next to itself.
            for cg in cgroups:
                with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                    f.write("0")
        env = dict(os.environ, SYSTEMD_NSPAWN_UNIFIED_HIERARCHY="1")
        # Bound once, so that a container left behind would not share a name.
        # systemd-nspawn's default capability set leaves out, among others, CAP_SYS_RAWIO (the
        # daemon's start-up) and CAP_PERFMON (the perf opener's AmbientCapabilities=), and its
        # system-call filter leaves out perf_event_open (the perf opener's one job): what the
        # container withholds, no unit in it can have, as on a host no unit can have what its
        # PID 1 lacks.
        argv = ["systemd-nspawn", "-D", self.rootfs, "-M", self.name, "-b", "--register=no", "--keep-unit",
                "--private-network", "--console=read-only", "--system-call-filter=bpf perf_event_open",
                "--capability=CAP_BPF,CAP_SYS_RAWIO,CAP_PERFMON"]
        self.logf = open(self.log, "w")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.logf, stderr=subprocess.STDOUT,
                                     env=env, preexec_fn=join)
        self.leader = wait_for(self.find_leader, 60)
        if not self.leader:
            raise RuntimeError("the container's systemd did not start: " + self.tail())
        # The bus comes up a moment after PID 1: until then systemctl cannot ask.
        states = ("running", "degraded", "maintenance", "stopping")
        deadline = time.time() + 120
        while True:
            rc, out = self.run(["systemctl", "is-system-running", "--wait"], timeout=120)
            if out.strip() in states or time.time() > deadline:
                return out.strip()
            time.sleep(0.2)

    def exists(self, path):
        """Inside the container: /run is its own tmpfs, which the host does not see."""
        return self.run(["test", "-e", path])[0] == 0 or self.run(["test", "-L", path])[0] == 0

    def find_leader(self):
        """The container's PID 1: the nspawn child whose pid namespace calls it 1."""
        if self.proc.poll() is not None:
            raise RuntimeError("systemd-nspawn exited: " + self.tail())
        todo = [self.proc.pid]
        while todo:
            pid = todo.pop()
            try:
                with open("/proc/%d/status" % pid) as f:
                    status = f.read()
                with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                    todo += [int(x) for x in f.read().split()]
            except OSError:
                continue
            nspid = re.search(r"^NSpid:\s+(.*)$", status, re.M)
            if pid != self.proc.pid and nspid and nspid.group(1).split()[-1] == "1":
                return pid
        return None

    def tail(self, n=40):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def argv(self, argv, user=None):
        pre = ["nsenter", "-t", str(self.leader), "-a", "--", "env", "-i", "PATH=" + PATH, "LANG=C.UTF-8"]
        if user:
            pre += ["setpriv", "--reuid=" + user, "--regid=" + user, "--init-groups"]
        return pre + list(argv)

    def run(self, argv, user=None, timeout=120):
        return sh(self.argv(argv, user), timeout=timeout)

    def shell(self, script, user=None, timeout=120):
        return self.run(["sh", "-c", script], user=user, timeout=timeout)

    def value(self, unit, prop):
        return self.run(["systemctl", "show", "-P", prop, unit])[1].strip()

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            for sig, wait in ((signal.SIGTERM, 30), (signal.SIGTERM, 10), (signal.SIGKILL, 10)):
                self.proc.send_signal(sig)
                try:
                    self.proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if hasattr(self, "logf"):
            self.logf.close()
        for cg in self.cgroups:
            for d, _, _ in sorted(os.walk(cg, topdown=False), key=lambda x: -len(x[0])):
                try:
                    os.rmdir(d)
                except OSError as e:
                    comment("cannot remove cgroup %s: %s" % (d, e))
        shutil.rmtree("/run/systemd/nspawn/propagate/" + self.name, ignore_errors=True)


def mounted_under(path):
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f if line.split()[4].startswith(path + "/")]


# ---------------------------------------------------------------------------------------------
# The checks, in order: each builds on the state the one before left


def check_install(tap, c):
    rc, out = c.shell("dpkg -i /root/debs/*.deb")
    if not tap.ok(rc == 0, "dpkg -i installs the three packages", out[-3000:]):
        return False
    tap.eq(c.run(["systemctl", "is-enabled", "pmugated.socket"])[1].strip(), "enabled",
           "the socket is enabled")
    tap.eq(c.run(["systemctl", "is-active", "pmugated.socket"])[1].strip(), "active", "the socket listens")
    tap.eq(c.run(["systemctl", "is-active", "pmugated.service"])[1].strip(), "inactive",
           "the service waits for its first client")
    tap.eq([c.run(["systemctl", "is-enabled", "pmugate-perf-opener.socket"])[1].strip(),
            c.run(["systemctl", "is-active", "pmugate-perf-opener.socket"])[1].strip(),
            c.run(["systemctl", "is-active", "pmugate-perf-opener.service"])[1].strip()],
           ["enabled", "active", "inactive"], "the perf opener's socket listens; its service waits for pmugated")
    tap.eq(c.run(["stat", "-c", "%U:%G %a", "/run/pmugate/perf-opener.socket"])[1].strip(), "pmugate:pmugate 600",
           "only the daemon's user may connect to the opener's socket")
    rc, out = c.run(["getent", "passwd", "pmugate"])
    tap.ok(rc == 0 and out.split(":")[6].strip() in ("/usr/sbin/nologin", "/sbin/nologin", "/bin/false"),
           "sysusers.d made the system user pmugate, without a login shell", out)
    rc, out = c.run(["getent", "group", "pmugate-users", "pmugate-admin"])
    tap.eq(rc, 0, "sysusers.d made the groups pmugate-users and pmugate-admin")
    tap.eq(c.run(["stat", "-c", "%U:%G %a", "/run/pmugate"])[1].strip(), "root:root 755",
           "/run/pmugate is root's, 0755")
    tap.eq(c.run(["stat", "-c", "%U:%G %a", "/run/pmugate/state"])[1].strip(), "pmugate:pmugate 700",
           "tmpfiles.d made /run/pmugate/state for the daemon's user, 0700")
    rc, out = c.run(["pmugate", "--version"])
    tap.ok(rc == 0 and "pmugate 0.1.0" in out, "pmugate runs: the dynamic linker finds libpmugate.so.0", out)
    rc, out = c.run(["pkg-config", "--cflags", "--libs", "pmugate"])
    tap.ok(rc == 0 and "-lpmugate" in out, "libpmugate-dev: pkg-config --libs pmugate", out)
    tap.ok(os.path.isfile(c.path("/usr/include/pmugate/pmugate.h")), "libpmugate-dev: the headers")
    rc, out = c.run(["/usr/libexec/pmugated", "--help"])
    tap.ok("(default: /etc/pmugate/pmugate.conf)" in out and "(default: /usr/share/pmugate/allowlists)" in out,
           "the packaged daemon reads /etc/pmugate/pmugate.conf and /usr/share/pmugate/allowlists", out)
    tap.ok(os.path.isfile(c.path("/usr/share/doc/pmugate/GROUPS.md")) and
           os.path.isfile(c.path("/usr/share/man/man1/pmugate.1.gz")),
           "GROUPS.md, which pmugate(1) points at, is installed next to the man pages")
    with open(c.path("/usr/libexec/pmugate/pmugate-prolog.sh")) as f:
        tap.ok("PMUGATECTL=${PMUGATECTL:-/usr/bin/pmugatectl}" in f.read() and
               os.access(c.path("/usr/bin/pmugatectl"), os.X_OK) and os.access(c.path("/usr/sbin/pmugatectl"), os.X_OK),
               "the Slurm Prolog finds pmugatectl where the package put it")
    for user, groups in (("alice", "pmugate-users"), ("bob", None)):
        rc, out = c.run(["useradd", "-M", "-s", "/bin/sh"] + (["-G", groups] if groups else []) + [user])
        if rc != 0:
            raise RuntimeError("useradd %s: %s" % (user, out))
    return True


def main_pid(c):
    return c.value("pmugated.service", "MainPID")


def check_activation(tap, c):
    rc, out = c.run(["pmugate", "info"], user="alice")
    tap.eq(rc, 0, "alice's first pmugate info starts the daemon and is served")
    tap.eq(c.run(["systemctl", "is-active", "pmugated.service"])[1].strip(), "active",
           "the first connection activated the service")
    rc, out = c.run(["journalctl", "-b", "-u", "pmugated.service", "-o", "cat"])
    tap.ok("Using the socket passed by systemd" in out, "the daemon serves the socket systemd passed it", out)
    # Why the opener is not there is in its own unit's journal and status, not in the daemon's.
    opener = "\n".join(c.run(argv)[1] for argv in (
        ["journalctl", "-b", "-u", "pmugate-perf-opener.service", "-u", "pmugate-perf-opener.socket",
         "--no-pager", "-n", "20", "-o", "short-monotonic"],
        ["systemctl", "status", "--no-pager", "-n", "0", "pmugate-perf-opener.service"]))
    tap.ok("Perf opener service connected at /run/pmugate/perf-opener.socket" in out,
           "the daemon connected to the perf opener service",
           opener + "\n" + "\n".join(line for line in out.splitlines() if "opener" in line.lower()))
    state = c.run(["systemctl", "is-active", "pmugate-perf-opener.service"])[1].strip()
    tap.ok(state == "active", "the daemon's connection activated the perf opener service (got %r)" % state, opener)


def check_privileges(tap, c):
    pid = main_pid(c)
    rc, status = c.run(["cat", "/proc/%s/status" % pid])
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    fields = {k: v.strip() for k, v in fields.items()}
    uid = c.run(["id", "-u", "pmugate"])[1].strip()
    gid = c.run(["id", "-g", "pmugate"])[1].strip()
    tap.eq((fields.get("Uid", "").split(), fields.get("Gid", "").split(), fields.get("Groups")),
           ([uid] * 4, [gid] * 4, ""), "the serving daemon is user pmugate on every uid and gid, no groups")
    caps = {k: fields.get(k) for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}
    tap.eq(set(caps.values()), {"0000000000000000"}, "all five capability sets are empty")
    tap.eq(fields.get("NoNewPrivs"), "1", "NoNewPrivs is set")
    tap.eq(fields.get("Seccomp"), "2", "a seccomp filter is in force")
    rc, out = c.run(["stat", "-c", "%U:%G %a", "/run/pmugate/state"])
    tap.eq(out.strip(), "pmugate:pmugate 700", "state/ belongs to the daemon's user, 0700")

    pid = c.value("pmugate-perf-opener.service", "MainPID")
    rc, status = c.run(["cat", "/proc/%s/status" % pid])
    fields = {k: v.strip() for k, v in (line.split(":", 1) for line in status.splitlines() if ":" in line)}
    # systemd's User= sets the user's groups (initgroups(3)), its own group among them; the opener
    # has no CAP_SETGID to clear them and refuses to start with any group but its own.
    tap.eq((fields.get("Uid", "").split(), fields.get("Gid", "").split(), fields.get("Groups")),
           ([uid] * 4, [gid] * 4, gid),
           "the perf opener is user pmugate on every uid and gid, no supplementary group but its own")
    perfmon = "%016x" % (1 << 38)
    tap.eq({k: fields.get(k) for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")},
           {"CapInh": "0" * 16, "CapPrm": perfmon, "CapEff": perfmon, "CapBnd": perfmon, "CapAmb": "0" * 16},
           "the perf opener holds CAP_PERFMON alone (permitted, effective, bounding)")
    tap.eq((fields.get("NoNewPrivs"), fields.get("Seccomp")), ("1", "2"),
           "the perf opener has NoNewPrivs and its own seccomp filter")


# Spins until this process has used SECONDS of CPU (CPU time, so a loaded machine changes nothing).
BUSY = "import sys, time\nwhile time.process_time() < float(sys.argv[1]): pass\n"


def stat_ms(c, event, args):
    """alice's pmugate stat -e event ARGS: (the event's count / 1e6, what to show on failure)."""
    out = "/tmp/pmugate-%s.json" % event
    rc, err = c.run(["pmugate", "stat", "-e", event, "-O", "json", "-o", out] + args, user="alice")
    doc = {}
    if rc == 0:
        try:
            doc = json.loads(c.run(["cat", out])[1])
        except ValueError:
            pass
    log = c.run(["journalctl", "-b", "-u", "pmugated.service", "-u", "pmugate-perf-opener.service", "-o", "cat",
                 "--no-pager", "-n", "15"])[1]
    return doc.get("aggregate", {}).get("counts", {}).get(event, {}).get("value", 0) / 1e6, err + "\n" + log


def check_perf_events(tap, c):
    """Perf events opened for real through the units: pmugated can open them only through the
    opener service (its own filter leaves perf_event_open out), and the opener only if the
    container admits the call. Both need the opener's CAP_PERFMON: a CPU's cpu-clock at
    perf_event_paranoid > 0, and the task-clock of alice's command because the opener, user
    pmugate, may not otherwise open events on another user's process."""
    ms, why = stat_ms(c, "task-clock", ["--", "python3", "-c", BUSY, "0.3"])
    tap.ok(ms >= 250, "alice's pmugate stat -e task-clock counts her command through the perf opener service: "
           "%.0f ms >= 250 ms" % ms, why)
    paranoid = c.run(["cat", "/proc/sys/kernel/perf_event_paranoid"])[1].strip()
    ms, why = stat_ms(c, "cpu-clock", ["-c", "0", "-S", "0.3"])
    tap.ok(ms >= 250, "alice's pmugate stat -e cpu-clock -c 0 counts CPU 0 for 0.3 s (perf_event_paranoid %s): "
           "%.0f ms" % (paranoid, ms), why)
    rc, daemon = c.run(["journalctl", "-b", "-u", "pmugated.service", "-o", "cat"])
    tap.ok("is refused in the perf opener" not in daemon, "the daemon found perf_event_open admitted in the opener",
           "\n".join(line for line in daemon.splitlines() if "opener" in line.lower()))


def check_devices(tap, c):
    """A device access the service was not given must be refused inside its cgroup, and work
    outside it: without BPF device control (pitfall of nspawn) both would open. The unit gives
    the cpuid device for reading only (DeviceAllow=char-cpu/cpuid r), so opening it for writing
    is the refused case, and reading it inside the cgroup shows the filter is not simply closed."""
    rc, out = c.shell("mkdir -p /dev/cpu/0 && { [ -c /dev/cpu/0/cpuid ] || mknod /dev/cpu/0/cpuid c 203 0; }")
    if not tap.ok(rc == 0, "a cpuid device node (203:0) exists in the container", out):
        return
    rc, out = c.shell("exec 3<>/dev/cpu/0/cpuid")
    tap.ok(rc == 0, "control: outside the service's cgroup the cpuid device opens for writing", out)
    cg = "/sys/fs/cgroup/system.slice/pmugated.service"
    rc, out = c.shell("echo $$ > %s/cgroup.procs && exec 3</dev/null" % cg)
    tap.ok(rc == 0, "control: inside the service's cgroup /dev/null opens", out)
    rc, out = c.shell("echo $$ > %s/cgroup.procs && exec 3</dev/cpu/0/cpuid" % cg)
    tap.ok(rc == 0, "DeviceAllow=char-cpu/cpuid r: inside the service's cgroup the cpuid device opens "
           "for reading", (rc, out))
    rc, out = c.shell("echo $$ > %s/cgroup.procs && exec 3<>/dev/cpu/0/cpuid" % cg)
    tap.ok(rc != 0 and "Operation not permitted" in out,
           "DevicePolicy=closed: inside the service's cgroup the cpuid device is refused for writing "
           "(EPERM)", (rc, out))


def check_filesystem(tap, c):
    pid = main_pid(c)
    for d in ("/usr", "/etc"):
        rc, out = c.run(["nsenter", "-t", pid, "-m", "touch", d + "/pmugate-probe"])
        tap.ok(rc != 0 and "Read-only file system" in out, "ProtectSystem=strict: %s is read-only for the service" % d,
               (rc, out))
    rc, out = c.run(["sh", "-c", "touch /usr/pmugate-probe && rm /usr/pmugate-probe"])
    tap.eq(rc, 0, "control: /usr is writable outside the service")
    rc, mountinfo = c.run(["cat", "/proc/%s/mountinfo" % pid])
    opts = {}
    for line in mountinfo.splitlines():
        f = line.split()
        opts[f[4]] = f[5].split(",")
    tap.ok("ro" in opts.get("/proc/sys", []) and "ro" in opts.get("/sys", []),
           "ProtectKernelTunables=yes: /proc/sys and /sys are read-only for the service",
           {k: v for k, v in opts.items() if k.startswith(("/sys", "/proc"))})
    # systemd-nspawn gives the container a read-only /sys, so the service's /sys/devices can be
    # no more than that here; on a host it is read-write.
    rc, outer = c.run(["cat", "/proc/1/mountinfo"])
    container_sys = [line.split()[5].split(",")[0] for line in outer.splitlines() if line.split()[4] == "/sys"]
    tap.eq(opts.get("/sys/devices", ["missing"])[0], container_sys[-1] if container_sys else "?",
           "ReadWritePaths=/sys/devices: the PCI config files are as writable as the container's /sys")


def journal(c, *match):
    rc, out = c.run(["journalctl", "-b", "-o", "json", "MESSAGE_ID=" + AUDIT_ID] + list(match))
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def check_audit(tap, c):
    alice = c.run(["id", "-u", "alice"])[1].strip()
    bob = c.run(["id", "-u", "bob"])[1].strip()
    rc, out = c.run(["pmugate", "write", "-c", "0", "IA32_PERFEVTSEL0=0x43003c", "--", "true"], user="alice")
    tap.ok(rc == 0, "alice writes a register under a lease", out)
    rc, out = c.run(["pmugate", "read", "-c", "0", "IA32_PMC0"], user="bob")
    tap.ok(rc != 0 and "not-authorized" in out, "bob, not in pmugate-users, is refused", out)
    # journald may take a moment; bob's refusal is the last record expected.
    wait_for(lambda: journal(c, "PMUGATE_UID=" + bob), 10)
    recs = [r for r in journal(c) if r.get("PMUGATE_UID") in (alice, bob)]
    mine = {(r.get("PMUGATE_EVENT"), r.get("PMUGATE_VERDICT")) for r in recs if r.get("PMUGATE_UID") == alice}
    tap.ok({("lease-begin", "allowed"), ("write", "allowed"), ("lease-end", "restored")} <= mine,
           "the journal has alice's lease-begin, write and lease-end (restored)", sorted(mine))
    write = [r for r in recs if r.get("PMUGATE_EVENT") == "write" and r.get("PMUGATE_UID") == alice]
    tap.ok(write and write[0].get("PMUGATE_CPUS") == "0" and "0x186" in write[0].get("PMUGATE_REGS", "").lower()
           and write[0].get("SYSLOG_IDENTIFIER") == "pmugated" and write[0].get("_SYSTEMD_UNIT") == "pmugated.service",
           "the write record names CPU 0, register 0x186, and comes from pmugated.service", write[:1])
    deny = [r for r in recs if r.get("PMUGATE_UID") == bob and r.get("PMUGATE_EVENT") == "deny"]
    tap.ok(deny and deny[0].get("PMUGATE_VERDICT") == "denied" and deny[0].get("PMUGATE_CODE") == "not-authorized"
           and deny[0].get("PRIORITY") == "5", "bob's refusal is a deny record, not-authorized, PRIORITY=5", deny[:1])


def check_crash(tap, c, machine):
    """A lease holder's write, then SIGSEGV: systemd restarts the daemon, which restores the
    register from its journal before serving again."""
    holder = subprocess.Popen(c.argv(["pmugate", "write", "-c", "1", "IA32_PERFEVTSEL0=0x43003c", "--",
                                      "sleep", "60"], user="alice"),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        written = wait_for(lambda: machine.msr(1, EVTSEL0) == 0x43003c, 15)
        if not tap.ok(written, "alice holds CPU 1 with IA32_PERFEVTSEL0 = 0x43003c"):
            return
        pid = main_pid(c)
        c.run(["kill", "-SEGV", pid])
        restarted = wait_for(lambda: c.value("pmugated.service", "NRestarts") == "1" and
                             c.value("pmugated.service", "ActiveState") == "active" and main_pid(c) not in ("0", pid),
                             30)
        tap.ok(restarted, "after SIGSEGV systemd restarted the daemon (NRestarts=1)",
               c.run(["systemctl", "status", "--no-pager", "pmugated.service"])[1])
        tap.eq(machine.msr(1, EVTSEL0), 0, "the new daemon put the register back from the lease journal")
        rc, out = c.run(["journalctl", "-b", "-u", "pmugated.service", "-o", "cat"])
        tap.ok(re.search(r"Restored \d+ registers from lease-cpu", out), "and said so in the journal", out[-2000:])
        rc, out = c.run(["pmugate", "read", "-c", "0", "IA32_PMC0"], user="alice")
        tap.eq(rc, 0, "the next client is served through the same listening socket")
    finally:
        holder.kill()
        holder.wait()


SLURM_CONF = """ClusterName=pmugatetest
SlurmctldHost={host}
NodeName={host} CPUs={cpus} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
PrologFlags=Alloc
Prolog={prolog}
Epilog=/usr/libexec/pmugate/pmugate-epilog.sh
SlurmctldLogFile=/var/log/slurmctld.log
SlurmdLogFile=/var/log/slurmd.log
"""

# Where cgroup v2 has no cpuset controller (this host binds it to v1), no cgroup names a job's
# CPUs: the Prolog grants them by name, as contrib/slurm/README.md shows for such sites.
CPUS_PROLOG = """#!/bin/sh
cpus=$(/usr/bin/scontrol show job -d "$SLURM_JOB_ID" |
        /usr/bin/sed -n "s/.* CPU_IDs=\\([0-9,-]*\\).*/\\1/p" | /usr/bin/head -n1)
/usr/sbin/pmugatectl grant --job "$SLURM_JOB_ID" --uid "$SLURM_JOB_UID" --cpus "$cpus"
"""


def check_slurm_cgroup_v2(tap, c):
    """Debian 12's Slurm with CgroupPlugin=cgroup/v2 and the packaged Prolog and Epilog: a job
    step of alice measures on its CPUs, is known to pmugated by its cgroup v2 path, and the
    Epilog's revoke ends her access."""
    rc, membership = c.run(["cat", "/proc/self/cgroup"])
    v1 = [line for line in membership.splitlines() if line and not line.startswith("0::")]
    if v1:
        # The kernel lists every mounted v1 hierarchy in /proc/PID/cgroup, inside any container.
        tap.ok(True, "Slurm with cgroup/v2 # SKIP this host mounts cgroup v1 hierarchies (%s), and Slurm's "
               "cgroup/v2 refuses such a hybrid system; a pure cgroup v2 host (Debian 12's default) runs it"
               % ", ".join(line.split(":")[1] for line in v1))
        return
    rc, controllers = c.run(["cat", "/sys/fs/cgroup/cgroup.controllers"])
    cpuset = "cpuset" in controllers.split()
    host = c.run(["hostname"])[1].strip()
    cpus = c.run(["nproc", "--all"])[1].strip()
    prolog = "/usr/libexec/pmugate/pmugate-prolog.sh"
    if not cpuset:
        c.write("/etc/slurm/pmugate-cpus-prolog.sh", CPUS_PROLOG, mode=0o755)
        prolog = "/etc/slurm/pmugate-cpus-prolog.sh"
        tap.ok(True, "ConstrainCores=yes under cgroup v2 # SKIP no cpuset controller in this host's cgroup v2 "
               "(bound to v1): the Prolog grants the job's CPUs by name instead")
    c.write("/etc/slurm/slurm.conf", SLURM_CONF.format(host=host, cpus=cpus, prolog=prolog))
    c.write("/etc/slurm/cgroup.conf", "CgroupPlugin=cgroup/v2\nConstrainCores=%s\n" % ("yes" if cpuset else "no"))
    c.write("/etc/pmugate/pmugate.conf", "[access]\nmode = job\nuser_groups =\n")
    rc, out = c.run(["pmugatectl", "reload"])
    if not tap.ok(rc == 0, "pmugated switches to job mode (pmugatectl reload)", out):
        return
    c.run(["mkdir", "-p", "/var/spool/slurmd", "/var/spool/slurmctld"])
    for unit in ("munge", "slurmctld", "slurmd"):
        if os.path.lexists(c.path("/etc/systemd/system/%s.service" % unit)):
            os.unlink(c.path("/etc/systemd/system/%s.service" % unit))
    c.run(["systemctl", "daemon-reload"])
    rc, out = c.run(["systemctl", "start", "munge", "slurmctld", "slurmd"], timeout=120)
    up = wait_for(lambda: "idle" in c.run(["sinfo", "-h", "-o", "%T"])[1], 60)
    if not tap.ok(rc == 0 and up, "munge, slurmctld and slurmd run, the node is idle",
                  out + c.run(["tail", "-n", "30", "/var/log/slurmd.log"])[1]):
        return
    rc, out = c.run(["pmugate", "read", "-c", "0", "IA32_PMC0"], user="alice")
    tap.ok(rc != 0 and "no-grant" in out, "outside a job alice is refused (no-grant)", out)
    probe = ("cat /proc/self/cgroup; cpu=$(taskset -c -p $$ | sed 's/.*: //; s/[,-].*//'); "
             "pmugate read -c $cpu IA32_PMC0 && echo READ-OK")
    rc, out = c.run(["srun", "-n1", "-c1", "sh", "-c", probe], user="alice", timeout=120)
    job = re.search(r"^0::/\S*/job_(\d+)/step_\d+", out, re.M)
    tap.ok(job, "the job step runs in a cgroup v2 path naming its job (0::.../job_N/step_M)", out)
    tap.ok(rc == 0 and "READ-OK" in out, "inside the job alice reads a counter of her CPU", out)
    revoked = job and wait_for(lambda: ("job %s " % job.group(1)) not in c.run(["pmugatectl", "status"])[1], 30)
    tap.ok(revoked, "the Epilog revoked the job's grant when it ended", c.run(["pmugatectl", "status"])[1])
    rc, log = c.run(["journalctl", "-b", "-o", "json", "MESSAGE_ID=" + AUDIT_ID, "PMUGATE_EVENT=grant"])
    tap.ok(job and ('"PMUGATE_JOB":"%s"' % job.group(1)) in log.replace(" ", ""),
           "the Prolog's grant of the job is in the journal")
    c.run(["systemctl", "stop", "slurmd", "slurmctld", "munge"], timeout=120)


def check_security_score(tap, c):
    for unit in ("pmugated.service", "pmugate-perf-opener.service"):
        rc, out = c.run(["systemd-analyze", "security", "--no-pager", unit])
        m = re.search(r"Overall exposure level for %s: (\d+\.\d+)" % re.escape(unit), out)
        tap.ok(m and float(m.group(1)) <= EXPOSURE_MAX, "systemd-analyze security %s: %s (at most %.1f)" % (
            unit, m.group(1) if m else "?", EXPOSURE_MAX), "\n".join(line for line in out.splitlines() if "✗" in line))


def check_stop(tap, c):
    rc, out = c.run(["systemctl", "stop", "pmugated.socket", "pmugated.service"])
    tap.eq(rc, 0, "systemctl stop pmugated.socket pmugated.service")
    tap.ok(not c.exists("/run/pmugate/pmugate.sock"), "RemoveOnStop=yes removed the socket")
    tap.ok(c.exists("/run/pmugate/state"), "RuntimeDirectoryPreserve=yes kept state/")


def check_remove_purge(tap, c):
    c.run(["systemctl", "start", "pmugated.socket"])
    rc, out = c.run(["dpkg", "-r", "libpmugate-dev", "pmugate", "libpmugate0"])
    tap.eq(rc, 0, "dpkg -r removes the packages")
    tap.eq(c.run(["systemctl", "is-active", "pmugated.socket"])[1].strip(), "inactive", "removal stopped the socket")
    tap.ok(not os.path.exists(c.path("/usr/libexec/pmugated")) and not os.path.exists(c.path("/usr/bin/pmugate")),
           "the programs are gone")
    tap.ok(os.path.exists(c.path("/etc/pmugate/pmugate.conf")), "removal keeps the configuration (a conffile)")
    c.write("/etc/pmugate/slurm.env", "PMUGATE_TIMEOUT=5\n")
    rc, out = c.run(["dpkg", "-P", "libpmugate-dev", "pmugate", "libpmugate0"])
    tap.ok(rc == 0, "dpkg -P purges them", out)
    left = [p for p in ("/etc/pmugate", "/run/pmugate", "/usr/share/pmugate", "/usr/share/doc/pmugate",
                        "/usr/libexec/pmugate", "/etc/systemd/system/sockets.target.wants/pmugated.socket",
                        "/var/lib/systemd/deb-systemd-helper-enabled/pmugated.socket.dsh-also")
            if c.exists(p)]
    tap.eq(left, [], "purge leaves no file, directory or enablement link behind")
    rc, out = c.run(["dpkg-query", "-W", "-f", "${Package} ${Status}\\n", "pmugate*", "libpmugate*"])
    tap.ok("installed" not in out.replace("not-installed", ""), "dpkg knows none of them any more", out)


def run_checks(tap, hierarchies):
    work = tempfile.mkdtemp(prefix="pmugate-nspawn-", dir="/var/tmp")
    container = None
    try:
        debs = build_packages(tap, work)
        if not debs:
            return
        rc, tarball = sh([os.path.join(HERE, "rootfs.sh"), CACHE], timeout=900)
        if rc == 77:
            tap.ok(True, "the container checks # SKIP no Debian 12 root file system: " + tarball.strip())
            return
        if not tap.ok(rc == 0, "a Debian 12 root file system (cached in %s)" % CACHE, tarball):
            return
        # rootfs.sh prints the tarball's path last on stdout, its progress on stderr (which sh()
        # appends after stdout): the path is the line that names a tarball in the cache
        path = [line for line in tarball.splitlines() if line.startswith(CACHE) and line.endswith(".tar")]
        if not tap.ok(path, "rootfs.sh names the cached tarball", tarball):
            return
        container = c = Container(work, path[-1], hierarchies)
        os.makedirs(c.path("/root/debs"))
        # python3-pmugate needs python3-numpy, which the minimal root file system lacks;
        # tests/python/test_python_module.py tests the module
        for d in debs:
            if not os.path.basename(d).startswith("python3-pmugate_"):
                shutil.copy(d, c.path("/root/debs"))
        machine = t.FakeMachine(c.path(FAKE_ROOT), "spr", sockets=1, cores=2, smt=False)
        # The container has no msr driver: the dev backend serves the fake machine's files.
        c.write("/etc/systemd/system/pmugated.service.d/fake-machine.conf",
                "[Service]\nExecStart=\n"
                "ExecStart=/usr/libexec/pmugated --root=%s --perf-opener=/run/pmugate/perf-opener.socket\n"
                "ReadWritePaths=%s\n" % (FAKE_ROOT, FAKE_ROOT))
        state = c.boot()
        tap.ok(state in ("running", "degraded"), "Debian 12 boots under systemd-nspawn (%s)" % state,
               c.run(["systemctl", "--failed", "--no-pager"])[1])
        if not check_install(tap, c):
            return
        for check in (check_activation, check_privileges, check_perf_events, check_devices, check_filesystem,
                      check_audit):
            try:
                check(tap, c)
            except Exception:
                tap.ok(False, "%s raised" % check.__name__, traceback.format_exc())
        check_crash(tap, c, machine)
        check_security_score(tap, c)
        try:
            check_slurm_cgroup_v2(tap, c)
        except Exception:
            tap.ok(False, "check_slurm_cgroup_v2 raised", traceback.format_exc())
        check_stop(tap, c)
        check_remove_purge(tap, c)
    finally:
        if container is not None and not KEEP:
            container.stop()
        if KEEP:
            comment("KEEP=1: %s left running (leader pid %s)" % (work, container.leader if container else "-"))
        elif not mounted_under(work):
            shutil.rmtree(work, ignore_errors=True)
        else:
            comment("not removing %s: still mounted: %s" % (work, mounted_under(work)))


def main():
    hierarchies = preconditions()
    tap = t.Tap()

    def nspawn(tap):
        run_checks(tap, hierarchies)
    return tap.run([nspawn])


if __name__ == "__main__":
    sys.exit(main())
