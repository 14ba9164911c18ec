# SPDX-License-Identifier: LGPL-2.1-or-later
"""Integration test harness: fake machines under --root, a real pmugated, raw protocol access,
CLI runs as other uids, and TAP output."""

import atexit
import fnmatch
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import uuid

import msgpack

BUILD = os.environ.get("PMUGATE_BUILD_DIR", "build")
SOURCE = os.environ.get("PMUGATE_SOURCE_DIR", ".")
PMUGATED = os.environ.get("PMUGATED", os.path.join(BUILD, "daemon", "pmugated"))
# The daemon as a -Dsimulator=false build (the distribution packages) links it.
PMUGATED_WITHOUT_SIM = os.environ.get("PMUGATED_WITHOUT_SIM",
                                      os.path.join(BUILD, "daemon", "pmugated-without-sim"))
PMUGATE = os.environ.get("PMUGATE", os.path.join(BUILD, "client", "pmugate"))
PMUGATECTL = os.environ.get("PMUGATECTL", os.path.join(BUILD, "client", "pmugatectl"))
ALLOWLISTS = os.environ.get("PMUGATE_ALLOWLIST_DIR", os.path.join(SOURCE, "policy", "allowlists"))

# Test identities: no passwd or group entries are needed, the config names gids numerically.
ADMIN_GID = 4240
USER_GID = 4241
UNPRIVILEGED_UID = 4242
OTHER_GID = 4243

MODELS = {
    # key: (family, model, stepping, model name)
    "skx": (6, 0x55, 4, "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz"),
    "clx": (6, 0x55, 7, "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz"),
    "icx": (6, 0x6A, 6, "Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz"),
    "spr": (6, 0x8F, 8, "Intel(R) Xeon(R) Platinum 8480+"),
    "emr": (6, 0xCF, 2, "INTEL(R) XEON(R) PLATINUM 8592+"),
    "gnr": (6, 0xAD, 1, "Intel(R) Xeon(R) 6980P"),
    "gnr-d": (6, 0xAE, 1, "Intel(R) Xeon(R) 6 SoC"),
    "srf": (6, 0xAF, 3, "Intel(R) Xeon(R) 6780E"),
    "zen3": (0x19, 0x01, 1, "AMD EPYC 7763 64-Core Processor"),
    "zen4": (0x19, 0x11, 1, "AMD EPYC 9654 96-Core Processor"),
    "zen4c": (0x19, 0xA0, 2, "AMD EPYC 9754 128-Core Processor"),
    "zen5": (0x1A, 0x02, 1, "AMD EPYC 9755 128-Core Processor"),
}
# CPUID 0x80000022 (EAX, EBX) of Genoa and Turin: PerfMonV2, 6 core, 16 data-fabric and 48
# memory-controller counters.
AMD_CPUID_PMU = (0x1, 6 | 16 << 10 | 48 << 16)
AMD_CPUID_PMU_LEAF = 0x80000022

SKX_IMC = [  # (dev.fn, device id)
    ("0a.2", 0x2042), ("0a.6", 0x2046), ("0b.2", 0x204A),
    ("0c.2", 0x2042), ("0c.6", 0x2046), ("0d.2", 0x204A),
]
# Bus numbers per socket, deliberately not ascending with the socket: a unit's package comes
# from the kernel's NUMA topology (numa_node and the node's CPUs), never from bus order.
SKX_SOCKET_BUSES = [0x3A, 0xAE, 0x17, 0x85]

MSR_FILE_SIZE = 1 << 32


class FakeMachine:
    """A machine described with plain files: proc/cpuinfo, sys/devices/system/cpu, sparse
    dev/cpu/N/msr files read at the register offset, and PCI config files."""

    def __init__(self, root, model="spr", sockets=2, cores=4, smt=True, imc=None, offline=(),
                 nmi_watchdog=False, vendor=None, imc_buses=None, imc_domain=0, numa=True,
                 cores_per_ccx=None, cpuid=AMD_CPUID_PMU):
        """AMD models (zen*) get an L3 per cores_per_ccx cores (cache/index3) when it is given,
        and dev/cpu/N/cpuid files answering leaf 0x80000022 with cpuid (None: no such files)."""
        if vendor is None:
            vendor = "AuthenticAMD" if model.startswith("zen") else "GenuineIntel"
        self.root = root
        self.model = model
        self.sockets = sockets
        self.cores = cores
        self.smt = smt
        self.threads = 2 if smt else 1
        self.ncpus = sockets * cores * self.threads
        self.offline = set(offline)
        self.units = []
        family, model_id, stepping, name = MODELS.get(model, (6, 0x01, 0, "Unknown CPU"))
        self._write("proc/cpuinfo", self._cpuinfo(vendor, family, model_id, stepping, name))
        self._write("proc/sys/kernel/nmi_watchdog", "1\n" if nmi_watchdog else "0\n")
        self.set_boot_id(str(uuid.uuid4()))
        cpulist = "0-%d" % (self.ncpus - 1)
        self._write("sys/devices/system/cpu/present", cpulist + "\n")
        self._write("sys/devices/system/cpu/possible", cpulist + "\n")
        online = [c for c in range(self.ncpus) if c not in self.offline]
        self._write("sys/devices/system/cpu/online", format_cpulist(online) + "\n")
        for cpu in range(self.ncpus):
            pkg, core, thread = self.topology(cpu)
            top = "sys/devices/system/cpu/cpu%d/topology/" % cpu
            siblings = [self.cpu_of(pkg, core, t) for t in range(self.threads)]
            self._write(top + "physical_package_id", "%d\n" % pkg)
            self._write(top + "core_id", "%d\n" % core)
            self._write(top + "die_id", "0\n")
            self._write(top + "thread_siblings_list", format_cpulist(siblings) + "\n")
            path = self.path("dev/cpu/%d/msr" % cpu)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.truncate(MSR_FILE_SIZE)
            if cores_per_ccx:
                cache = "sys/devices/system/cpu/cpu%d/cache/index3/" % cpu
                per_pkg = (cores + cores_per_ccx - 1) // cores_per_ccx
                self._write(cache + "level", "3\n")
                self._write(cache + "id", "%d\n" % (pkg * per_pkg + core // cores_per_ccx))
            if vendor == "AuthenticAMD" and cpuid is not None:
                with open(self.path("dev/cpu/%d/cpuid" % cpu), "wb") as f:
                    f.truncate(MSR_FILE_SIZE)
                    f.seek(AMD_CPUID_PMU_LEAF)
                    f.write(struct.pack("<IIII", cpuid[0], cpuid[1], 0, 0))
        # One NUMA node per socket, as the kernel lists it: the node's CPUs, offline ones too.
        for s in range(sockets):
            node_cpus = [c for c in range(self.ncpus) if self.topology(c)[0] == s]
            self._write("sys/devices/system/node/node%d/cpulist" % s, format_cpulist(node_cpus) + "\n")
        if imc is None:
            imc = model in ("skx", "clx")
        if imc:
            buses = imc_buses or SKX_SOCKET_BUSES
            domains = imc_domain if isinstance(imc_domain, (list, tuple)) else [imc_domain] * sockets
            for s in range(sockets):
                for devfn, device in SKX_IMC:
                    bdf = "%04x:%02x:%s" % (domains[s], buses[s], devfn)
                    self.add_pci(bdf, 0x8086, device, numa_node=s if numa else None)
        # A PCI device no allowlist names: it must never be opened or listed.
        self.add_pci("0000:00:1f.3", 0x8086, 0xA1F0, listed=False)

    def _cpuinfo(self, vendor, family, model, stepping, name):
        blocks = []
        for cpu in range(self.ncpus):
            pkg, core, _ = self.topology(cpu)
            blocks.append(
                "processor\t: %d\nvendor_id\t: %s\ncpu family\t: %d\nmodel\t\t: %d\n"
                "model name\t: %s\nstepping\t: %d\nphysical id\t: %d\ncore id\t\t: %d\n\n"
                % (cpu, vendor, family, model, name, stepping, pkg, core))
        return "".join(blocks)

    def topology(self, cpu):
        """Linux numbering: first threads of all cores socket-major, then the siblings."""
        per_thread = self.sockets * self.cores
        thread = cpu // per_thread
        rest = cpu % per_thread
        return rest // self.cores, rest % self.cores, thread

    def cpu_of(self, pkg, core, thread):
        return thread * self.sockets * self.cores + pkg * self.cores + core

    def path(self, rel):
        return os.path.join(self.root, rel)

    def set_boot_id(self, boot_id):
        """The kernel's boot id: state files of another boot are not used."""
        self.boot_id = boot_id
        self._write("proc/sys/kernel/random/boot_id", boot_id + "\n")

    def _write(self, rel, text):
        path = self.path(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def add_pci(self, bdf, vendor, device, listed=True, numa_node=None):
        d = "sys/bus/pci/devices/%s/" % bdf
        self._write(d + "vendor", "0x%04x\n" % vendor)
        self._write(d + "device", "0x%04x\n" % device)
        if numa_node is not None:
            self._write(d + "numa_node", "%d\n" % numa_node)
        with open(self.path(d + "config"), "wb") as f:
            f.write(struct.pack("<HH", vendor, device) + bytes(4092))
        if listed:
            self.units.append(bdf)

    def add_uncore_pmu(self, name, pmu_type, cpumask, events, formats=None, scale=None, unit=None):
        """A PMU under sys/bus/event_source/devices as the kernel lists it: type, cpumask (one
        CPU per package), events/NAME ("event=0x04,umask=0x03") with .scale and .unit, and
        format/FIELD ("config:0-7")."""
        d = "sys/bus/event_source/devices/%s/" % name
        self._write(d + "type", "%s\n" % pmu_type)
        self._write(d + "cpumask", "%s\n" % cpumask)
        for field, text in (formats or {"event": "config:0-7", "umask": "config:8-15"}).items():
            self._write(d + "format/" + field, text + "\n")
        for event, text in events.items():
            self._write(d + "events/" + event, text + "\n")
            if scale is not None:
                self._write(d + "events/%s.scale" % event, "%s\n" % scale)
            if unit is not None:
                self._write(d + "events/%s.unit" % event, unit + "\n")

    def set_user(self, name, uid, gid, groups=()):
        """The user in the machine's etc/passwd, and a member of each gid in groups in its
        etc/group (the group database the daemon reads at a reload under --root); earlier
        entries of the name or uid, and its memberships, are replaced."""
        users = {}
        members = {}
        try:
            with open(self.path("etc/passwd")) as f:
                for line in f:
                    fields = line.rstrip("\n").split(":")
                    users[fields[0]] = fields
        except FileNotFoundError:
            pass
        try:
            with open(self.path("etc/group")) as f:
                for line in f:
                    g, _, gid_s, mem = line.rstrip("\n").split(":")
                    members[int(gid_s)] = (g, [m for m in mem.split(",") if m and m != name])
        except FileNotFoundError:
            pass
        users = {n: f for n, f in users.items() if n != name and int(f[2]) != uid}
        users[name] = [name, "x", str(uid), str(gid), "", "/", "/bin/sh"]
        for g in groups:
            members.setdefault(g, ("g%d" % g, []))[1].append(name)
        self._write("etc/passwd", "".join(":".join(f) + "\n" for f in users.values()))
        self._write("etc/group", "".join("%s:x:%d:%s\n" % (g, gid_, ",".join(m))
                                         for gid_, (g, m) in sorted(members.items())))

    def msr(self, cpu, reg):
        with open(self.path("dev/cpu/%d/msr" % cpu), "rb") as f:
            f.seek(reg)
            return struct.unpack("<Q", f.read(8))[0]

    def set_msr(self, cpu, reg, value):
        with open(self.path("dev/cpu/%d/msr" % cpu), "r+b") as f:
            f.seek(reg)
            f.write(struct.pack("<Q", value))

    def pci(self, bdf, offset, width=4):
        with open(self.path("sys/bus/pci/devices/%s/config" % bdf), "rb") as f:
            f.seek(offset)
            return int.from_bytes(f.read(width), "little")

    def set_pci(self, bdf, offset, value, width=4):
        with open(self.path("sys/bus/pci/devices/%s/config" % bdf), "r+b") as f:
            f.seek(offset)
            f.write(value.to_bytes(width, "little"))


def format_cpulist(cpus):
    cpus = sorted(cpus)
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else "%d-%d" % (cpus[i], cpus[j]))
        i = j + 1
    return ",".join(out)


def write_config(path, admin_gids=(ADMIN_GID,), user_gids=(USER_GID,), extra=""):
    with open(path, "w") as f:
        f.write("[access]\nadmin_groups = %s\nuser_groups = %s\n%s" % (
            " ".join(str(g) for g in admin_gids), " ".join(str(g) for g in user_gids), extra))


# Every process the harness starts, so that none outlives the test: a test that fails, raises
# or is killed by meson's timeout (SIGTERM, turned into SystemExit below) still ends them at
# exit. tests/integration/test_leftovers.py checks after the suite that none is left.
_started = []


def spawn(argv, **kw):
    """subprocess.Popen in a process group of its own, ended at exit if the test did not: the
    group also holds what the process starts (a wrapper's tracee, a CLI's children)."""
    kw.setdefault("start_new_session", True)
    proc = subprocess.Popen(argv, **kw)
    _started.append(proc)
    return proc


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def end(proc, timeout=10):
    """Ends a process from spawn() and its process group: SIGTERM, SIGKILL after timeout
    seconds; reaps the process itself (the group's others are reaped by their parents)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.time() + timeout
        while (proc.poll() is None or _group_alive(proc.pid)) and time.time() < deadline:
            time.sleep(0.02)
        if proc.poll() is not None and not _group_alive(proc.pid):
            break
    proc.poll()
    if proc in _started:
        _started.remove(proc)
    return proc.returncode


def _end_started():
    # A forked child that exits through here (not os._exit) leaves its parent's processes be.
    if os.getpid() != _harness_pid:
        return
    for proc in list(_started):
        end(proc)


_harness_pid = os.getpid()


atexit.register(_end_started)
# meson ends a test that runs over its timeout with SIGTERM: exit through atexit then.
signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


class Daemon:
    """A real pmugated on a temporary socket. Start-up waits for READY=1 over NOTIFY_SOCKET."""

    def __init__(self, workdir, args, config=None, allowlist_dir=ALLOWLISTS, user="nobody",
                 expect_ready=True, env=None, wrapper=(), binary=None):
        self.workdir = workdir
        self.socket = os.path.join(workdir, "pmugate.sock")
        self.audit_log = os.path.join(workdir, "audit.log")
        self.stderr_path = os.path.join(workdir, "pmugated.stderr")
        if config is None:
            config = os.path.join(workdir, "pmugate.conf")
            write_config(config)
        self.runtime_dir = os.path.join(runtime_parent(workdir), "run")
        # config=False: no --config, the daemon reads its built-in default path.
        # wrapper: a command prefix, e.g. setpriv to start with fewer capabilities.
        # binary: another build of the daemon, e.g. PMUGATED_WITHOUT_SIM.
        self.argv = list(wrapper) + [binary or PMUGATED, "--socket=" + self.socket] + (
            ["--config=" + config] if config else []) + [
                     "--allowlist-dir=" + allowlist_dir, "--user=" + user,
                     "--audit-log=" + self.audit_log, "--runtime-dir=" + self.runtime_dir] + list(args)
        notify_path = os.path.join(workdir, "notify.sock")
        if os.path.exists(notify_path):
            os.unlink(notify_path)
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(notify_path)
        # READY=1 is sent after the daemon dropped to its own user.
        os.chmod(notify_path, 0o666)
        e = dict(os.environ)
        e["NOTIFY_SOCKET"] = notify_path
        # LeakSanitizer cannot inspect a process that switched uid (it is not dumpable
        # any more); sanitizer builds still catch memory errors in the daemon.
        if "ASAN_OPTIONS" in e:
            e["ASAN_OPTIONS"] += ":detect_leaks=0"
        e.pop("LISTEN_FDS", None)
        e.pop("LISTEN_PID", None)
        if env:
            e.update(env)
        self.stderr = open(self.stderr_path, "a")
        self.proc = spawn(self.argv, stdout=self.stderr, stderr=self.stderr, env=e)
        self.ready = False
        if expect_ready:
            self.wait_ready()

    def wait_ready(self, timeout=10):
        self.notify.settimeout(0.1)
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                msg = self.notify.recv(4096).decode()
                if "READY=1" in msg:
                    self.ready = True
                    return
            except socket.timeout:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError("pmugated exited with %d: %s" % (self.proc.returncode, self.log()))
        raise RuntimeError("pmugated did not become ready: %s" % self.log())

    def wait_exit(self, timeout=10):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise

    def log(self):
        if not self.stderr.closed:
            self.stderr.flush()
        with open(self.stderr_path) as f:
            return f.read()

    def audit(self):
        try:
            with open(self.audit_log) as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        """SIGTERM to the daemon and whatever its wrapper started (strace detaches from the
        daemon when it is signalled, and the daemon would live on), SIGKILL after 10 s; returns
        the exit status of the process the harness started."""
        end(self.proc)
        self.notify.close()
        self.stderr.close()
        return self.proc.returncode


class Client:
    """Raw protocol client: one msgpack map per SOCK_SEQPACKET message."""

    def __init__(self, path, timeout=10):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.next_id = 1

    def send_raw(self, data):
        self.sock.send(data)

    def recv(self):
        data = self.sock.recv(1 << 20)
        if not data:
            raise ConnectionError("connection closed")
        return msgpack.unpackb(data, raw=False, strict_map_key=False)

    def recv_reply(self):
        """One reply, its parts joined: a batch of more than results_per_message results comes
        in messages each carrying "part" and "parts" and a slice of "status" and "values", a
        long status reply in parts with slices of "grants", "leases" and "clients"."""
        reply = self.recv()
        if "parts" not in reply:
            return reply
        for k in range(1, reply["parts"]):
            more = self.recv()
            if more.get("id") != reply["id"] or more.get("part") != k or more.get("parts") != reply["parts"]:
                raise ValueError("reply part %d out of order: %r" % (k, {x: more.get(x) for x in ("id", "part", "parts")}))
            # A batch's "status" and "values", a status reply's "grants", "leases" and "clients":
            # every list continues the one before.
            for key, value in more.items():
                if isinstance(value, list) and isinstance(reply.get(key), list):
                    reply[key] += value
        return reply

    def call(self, op, **fields):
        req = {"v": 1, "id": self.next_id, "op": op}
        req.update(fields)
        self.next_id += 1
        self.send_raw(msgpack.packb(req))
        return self.recv_reply()

    def batch(self, ops):
        return self.call("batch", ops=ops)

    def close(self):
        self.sock.close()


def as_user(uid, gid, groups=(), join=None):
    """preexec_fn that switches a forked child to another identity, after moving it into the
    cgroup whose procs file is join (while still root)."""
    def switch():
        if join:
            with open(join, "w") as f:
                f.write(str(os.getpid()))
        os.setgroups(list(groups))
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    return switch


def run_cli(argv, socket_path, uid=None, gid=None, groups=(), timeout=30, env=None, input=None, join=None):
    e = dict(os.environ)
    e["PMUGATE_SOCKET"] = socket_path
    if env:
        e.update(env)
    pre = as_user(uid, gid if gid is not None else uid, groups, join) if uid is not None else None
    # In a process group of its own, ended with what it started (a workload it runs) when it
    # returns or times out.
    p = spawn(argv, stdin=subprocess.PIPE if input is not None else None, stdout=subprocess.PIPE,
              stderr=subprocess.PIPE, text=True, env=e, preexec_fn=pre)
    try:
        out, err = p.communicate(input, timeout=timeout)
    finally:
        end(p)
    return p.returncode, out, err


def in_child_as(uid, gid, groups, fn, join=None):
    """Runs fn() in a forked child with another identity; returns what it returned (a JSON
    value) or raises with the child's exception text."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            as_user(uid, gid, groups, join)()
            out = json.dumps({"ok": fn()})
        except BaseException as e:
            out = json.dumps({"error": "%s: %s" % (type(e).__name__, e)})
        os.write(w, out.encode())
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    result = json.loads(data.decode())
    if "error" in result:
        raise AssertionError("child failed: " + result["error"])
    return result["ok"]


class Tap:
    """Minimal TAP producer: each check is one test point."""

    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, desc, detail=None):
        self.n += 1
        if cond:
            print("ok %d - %s" % (self.n, desc))
        else:
            self.failed += 1
            print("not ok %d - %s" % (self.n, desc))
            if detail is not None:
                for line in str(detail).splitlines()[:40]:
                    print("#   " + line)
        sys.stdout.flush()
        return cond

    def skip(self, desc, reason):
        """One test point reported as skipped, with why."""
        self.n += 1
        print("ok %d - %s # SKIP %s" % (self.n, desc, reason))

    def eq(self, got, want, desc):
        return self.ok(got == want, desc, "got:  %r\nwant: %r" % (got, want))

    def run(self, tests):
        """tests: list of callables taking this Tap; an exception fails that test. Runs only
        the cases named on the command line or in $PMUGATE_TEST_CASE (comma-separated function
        names, shell patterns allowed), e.g. meson test -C build test_sim.py
        --test-args=test_rapl, or PMUGATE_TEST_CASE=test_rapl meson test ...; a name that
        matches no case fails, so a typo does not pass as an empty run."""
        wanted = [w for w in sys.argv[1:] + os.environ.get("PMUGATE_TEST_CASE", "").split(",") if w]
        if wanted:
            names = [t.__name__ for t in tests]
            for w in wanted:
                self.ok(any(fnmatch.fnmatchcase(n, w) for n in names),
                        "case %s is in this file" % w, "its cases: " + " ".join(names))
            tests = [t for t in tests if any(fnmatch.fnmatchcase(t.__name__, w) for w in wanted)]
        for t in tests:
            try:
                t(self)
            except Exception:
                self.ok(False, "%s raised" % t.__name__, traceback.format_exc())
        print("1..%d" % self.n)
        sys.stdout.flush()
        return 1 if self.failed else 0


_runtime_parents = []


def _remove_runtime_parents():
    import shutil
    for d in _runtime_parents:
        shutil.rmtree(d, ignore_errors=True)


def runtime_parent(workdir):
    """Where a daemon of this workdir keeps its runtime state: on tmpfs, as /run is on the
    systems it runs on, so that the lease journal's synced writes cost what they cost there
    (on a disk, each sync of a 4096-CPU start costs seconds). The same for every daemon of one
    workdir, so that a restarted daemon finds what the previous one left; removed at exit."""
    if not os.path.isdir("/dev/shm"):
        return workdir
    d = os.path.join("/dev/shm", "pmugate-test-" + os.path.basename(os.path.normpath(workdir)))
    if d not in _runtime_parents:
        if not _runtime_parents:
            import atexit
            atexit.register(_remove_runtime_parents)
        os.makedirs(d, mode=0o755, exist_ok=True)
        os.chmod(d, 0o755)
        _runtime_parents.append(d)
    return d


def _daemon_sanitized():
    """Whether the daemon was built with AddressSanitizer. The build says so (meson sets
    PMUGATE_SANITIZED); run by hand, the binary does: gcc links libasan as a shared library,
    clang links its runtime in, which then exports __asan_init."""
    said = os.environ.get("PMUGATE_SANITIZED")
    if said in ("0", "1"):
        return said == "1"
    try:
        out = subprocess.run(["ldd", PMUGATED], capture_output=True, text=True, timeout=10).stdout
        syms = subprocess.run(["nm", "-D", PMUGATED], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "ASAN_OPTIONS" in os.environ
    return "libasan" in out or " __asan_init" in syms


# A sanitizer build's allocator keeps freed memory in quarantine: the daemon's resident size says
# nothing about what it gives back there.
SANITIZED = _daemon_sanitized()
SANITIZED_RSS = "AddressSanitizer keeps freed memory in quarantine, so RSS does not show what the daemon frees"


def workdir():
    d = tempfile.mkdtemp(prefix="pmugate-test-")
    os.chmod(d, 0o755)
    return d


class Cgroup:
    """A real cgroup whose path names a Slurm-like job ("<base>/job_<id>"), in the v1 cpuset
    hierarchy or in cgroup v2. The CPUs the daemon reads for it come from a file written under
    the fake machine's root, so any fake CPU numbers work on any host."""

    def __init__(self, machine_root, job, cpus, version=1):
        self.base = "pmugate-test-%d" % os.getpid()
        self.version = version
        rel = "%s/job_%s" % (self.base, job)
        if version == 1:
            top = "/sys/fs/cgroup/cpuset"
            self.dirs = [os.path.join(top, self.base), os.path.join(top, rel)]
            for d in self.dirs:
                os.makedirs(d, exist_ok=True)
                for knob in ("cpuset.cpus", "cpuset.mems"):
                    with open(os.path.join(os.path.dirname(d), knob)) as f:
                        parent = f.read().strip()
                    with open(os.path.join(d, knob), "w") as f:
                        f.write(parent.split(",")[0].split("-")[0])
            self.procs = os.path.join(self.dirs[1], "tasks")
            fake = os.path.join(machine_root, "sys/fs/cgroup/cpuset", rel, "cpuset.effective_cpus")
        else:
            top = "/sys/fs/cgroup/unified" if os.path.isdir("/sys/fs/cgroup/unified") else "/sys/fs/cgroup"
            self.dirs = [os.path.join(top, self.base), os.path.join(top, rel)]
            for d in self.dirs:
                os.makedirs(d, exist_ok=True)
            self.procs = os.path.join(self.dirs[1], "cgroup.procs")
            fake = os.path.join(machine_root, "sys/fs/cgroup", rel, "cpuset.cpus.effective")
            if top.endswith("unified"):
                fake = os.path.join(machine_root, "sys/fs/cgroup/unified", rel, "cpuset.cpus.effective")
        os.makedirs(os.path.dirname(fake), exist_ok=True)
        with open(fake, "w") as f:
            f.write(cpus + "\n")
        self.fake_job_dir = os.path.dirname(fake)

    def remove(self):
        for d in reversed(self.dirs):
            for _ in range(50):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


def fractions(doc):
    """A measurement's JSON doc with the values of metrics whose unit is "%" (written as
    percentages) divided by 100, for checks against profiles' fractions."""
    percent = {m["name"] for m in doc.get("metrics", []) if m["unit"] == "%"}
    for v in [doc.get("aggregate", {})] + doc.get("per_cpu", []) + doc.get("per_package", []):
        for name in percent & set(v.get("metrics", {})):
            if v["metrics"][name] is not None:
                v["metrics"][name] /= 100
    return doc


# ---------------------------------------------------------------- the simulated PMU

GROUPS = os.path.join(SOURCE, "client", "groups")

# Two workloads for the simulator; the keys are its profile keys (docs/SIMULATOR.md).
STENCIL = dict(retiring=0.40, bad_speculation=0.10, frontend_bound=0.20, backend_bound=0.30,
               heavy_operations=0.06, branch_mispredicts=0.07, fetch_latency=0.12, memory_bound=0.18,
               ipc=1.6, utilization=0.9, user_fraction=0.9)
SOLVER = dict(retiring=0.20, bad_speculation=0.04, frontend_bound=0.10, backend_bound=0.66,
              heavy_operations=0.03, branch_mispredicts=0.02, fetch_latency=0.06, memory_bound=0.50,
              ipc=0.8, utilization=0.4, user_fraction=0.8)


def sim_config(workdir, model, sockets=1, cores=4, smt=True, rules=(), extra="", cores_per_ccx=None):
    """A simulator configuration file in workdir, in real time: rules are (CPU list, profile
    dict) pairs, written as profile sections and the CPUs that run them; cores_per_ccx for the
    AMD models; extra is appended to the [clock] section's end (further sections)."""
    path = os.path.join(workdir, "sim.conf")
    text = "[machine]\nmodel = %s\nsockets = %d\ncores = %d\n" % (model, sockets, cores)
    if cores_per_ccx is not None:
        text += "cores_per_ccx = %d\n" % cores_per_ccx
    text += "smt = %s\n[clock]\nmode = realtime\n%s" % ("yes" if smt else "no", extra)
    for i, (_, profile) in enumerate(rules):
        text += "[profile p%d]\n" % i + "".join("%s = %r\n" % kv for kv in profile.items())
    for i, (cpus, _) in enumerate(rules):
        text += "[cpus %s]\nprofile = p%d\n" % (cpus, i)
    with open(path, "w") as f:
        f.write(text)
    return path


class Sim:
    """A pmugated on the simulated PMU of model (sim_config's keywords), in a workdir of its
    own, and the CLI against it with the source tree's groups."""

    def __init__(self, model, config=None, **kw):
        self.dir = workdir()
        self.model = model
        self.daemon = Daemon(self.dir, ["--backend=sim", "--sim-model=" + model,
                                        "--sim-config=" + sim_config(self.dir, model, **kw)], config=config)

    def run(self, *args, env=None, timeout=180, **kw):
        e = {"PMUGATE_GROUP_PATH": GROUPS}
        e.update(env or {})
        return run_cli([PMUGATE] + list(args), self.daemon.socket, env=e, timeout=timeout, **kw)

    def json(self, *args):
        """The JSON result, with "%" metrics (written as percentages) as fractions, so that
        checks compare them with the profiles' fractions."""
        rc, out, err = self.run(*args)
        if rc != 0:
            raise AssertionError("pmugate %s: exit %d: %s" % (" ".join(args), rc, err))
        return fractions(json.loads(out))

    def stop(self):
        self.daemon.stop()
