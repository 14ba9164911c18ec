#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The systemd side of pmugated: the units pass systemd-analyze, carry the hardening the
daemon depends on, the daemon starts under socket activation, and after start-up it holds no
privilege at all."""

import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time

import pmugatetest as t

SERVICE = os.path.join(t.BUILD, "systemd", "pmugated.service")
SOURCE_UNITS = os.path.abspath(os.path.join(t.SOURCE, "systemd"))
SOCKET_UNIT = os.path.join(SOURCE_UNITS, "pmugated.socket")

# Exactly what start-up needs (daemon/backend/backend-dev.c, daemon/privileges.c, the state directory
# in daemon/main.c and daemon/server/server.c); one more is a hole, one fewer and the daemon cannot start.
START_UP_CAPS = {"CAP_SYS_RAWIO", "CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"}
# A fake machine is plain files, so these two cannot be shown to be needed here.
DEVICE_CAPS = {"CAP_SYS_RAWIO", "CAP_SYS_ADMIN"}
# Kept by the perf opener alone after start-up (daemon/backend/perf-opener.c); without it the
# daemon starts and the opener says it opens only what perf_event_paranoid allows.
OPENER_CAPS = {"CAP_PERFMON"}
# System calls of the privilege drop; SystemCallFilter= must allow them or start-up fails.
START_UP_SYSCALLS = {"capget", "capset", "prctl", "setgroups", "setresgid", "setresuid"}
# systemd-analyze security: exposure 0.0 (locked down) to 10.0, scaled by 10 for --threshold.
# The service scores 1.9 on systemd 252 (SECURITY.md explains each remaining item); anything
# above 2.0 means hardening was lost.
EXPOSURE_THRESHOLD = 20
PMC0 = 0xC1


def find_program(name, *fallbacks):
    return shutil.which(name) or next((p for p in fallbacks if os.access(p, os.X_OK)), None)


SYSTEMD_ANALYZE = find_program("systemd-analyze")
SOCKET_ACTIVATE = find_program("systemd-socket-activate", "/lib/systemd/systemd-socket-activate",
                               "/usr/lib/systemd/systemd-socket-activate")
STRACE = find_program("strace")
SETPRIV = find_program("setpriv")


def skip(tap, desc, why):
    tap.ok(True, "%s # SKIP %s" % (desc, why))


def parse_unit(path):
    """Returns {section: {key: [values]}}: a key may repeat, and the values are kept in order
    (an empty assignment is kept too, since it resets the list in systemd)."""
    sections, current = {}, None
    with open(path) as f:
        text = f.read().replace("\\\n", " ")
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        key, _, value = line.partition("=")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def setting(unit, section, key):
    """The effective value of a single-valued setting: the last assignment wins."""
    values = unit.get(section, {}).get(key)
    return values[-1] if values else None


def data_lines(path):
    """Non-comment lines of a sysusers.d or tmpfiles.d file, split into fields."""
    with open(path) as f:
        return [line.split() for line in f if line.strip() and not line.lstrip().startswith("#")]


def units_for_verify(d):
    """Copies of our units in d whose ExecStart= names the built daemon, since verify checks
    that the program exists and is executable."""
    service = os.path.join(d, "pmugated.service")
    with open(SERVICE) as f:
        text = f.read()
    text = re.sub(r"(?m)^ExecStart=\S+", "ExecStart=" + os.path.abspath(t.PMUGATED), text)
    with open(service, "w") as f:
        f.write(text)
    sock = os.path.join(d, "pmugated.socket")
    shutil.copy(SOCKET_UNIT, sock)
    return service, sock


def test_units_verify(tap):
    if not SYSTEMD_ANALYZE:
        skip(tap, "systemd-analyze verify accepts the units", "systemd-analyze not installed")
        return
    d = tempfile.mkdtemp(prefix="pmugate-units-")
    try:
        service, sock = units_for_verify(d)
        # --man=no: the man pages are not installed yet. --recursive-errors=no: problems of
        # other units on this system (sockets.target, ...) are not ours to judge.
        p = subprocess.run([SYSTEMD_ANALYZE, "verify", "--man=no", "--recursive-errors=no", sock, service],
                           capture_output=True, text=True, cwd=d, timeout=120)
        output = p.stdout + p.stderr
        ours = [line for line in output.splitlines() if "pmugated." in line or d in line]
        tap.eq(p.returncode, 0, "systemd-analyze verify finds no error in the units")
        tap.eq(ours, [], "systemd-analyze verify has nothing to say about our units (not even a warning)")

        p = subprocess.run([SYSTEMD_ANALYZE, "security", "--offline=true", "--threshold=%d" % EXPOSURE_THRESHOLD,
                            service], capture_output=True, text=True, cwd=d, timeout=120)
        level = re.search(r"Overall exposure level for \S+: (\S+ \S+)", p.stdout)
        tap.ok(p.returncode == 0, "systemd-analyze security rates the service at most %.1f (is %s)" % (
            EXPOSURE_THRESHOLD / 10, level.group(1) if level else "?"), p.stdout + p.stderr)
    finally:
        shutil.rmtree(d)


def syscall_groups():
    """systemd's own syscall groups, {"@name": [members]}, members possibly groups too."""
    out = subprocess.run([SYSTEMD_ANALYZE, "syscall-filter"], capture_output=True, text=True,
                         timeout=60).stdout
    groups, current = {}, None
    for line in out.splitlines():
        if line.startswith("@"):
            current = groups.setdefault(line.strip(), [])
        elif not line.startswith(" "):
            current = None
        elif current is not None and line.strip() and not line.strip().startswith("#"):
            current.append(line.strip())
    return groups


def expand_syscalls(groups, names):
    result = set()
    for name in names:
        if name.startswith("@"):
            result |= expand_syscalls(groups, groups.get(name, []))
        else:
            result.add(name)
    return result


def allowed_syscalls(service):
    """The system calls SystemCallFilter= allows, combined as systemd combines repeated
    assignments: the first decides allow-list or deny-list ("~"), later ones add or remove,
    an empty one resets."""
    groups = syscall_groups()
    allowed = None
    for value in service["Service"].get("SystemCallFilter", []):
        if not value:
            allowed = None
            continue
        deny = value.startswith("~")
        names = expand_syscalls(groups, value.lstrip("~").split())
        if allowed is None:
            allowed = expand_syscalls(groups, ["@known"]) - names if deny else names
        elif deny:
            allowed -= names
        else:
            allowed |= names
    return allowed if allowed is not None else expand_syscalls(groups, ["@known"])


def test_hardening_lines(tap):
    service = parse_unit(SERVICE)
    sock = parse_unit(SOCKET_UNIT)
    s = service.get("Service", {})

    tap.eq(setting(service, "Service", "Type"), "notify", "Type=notify: the daemon reports READY=1")
    exec_start = setting(service, "Service", "ExecStart") or ""
    tap.ok(exec_start.startswith("/") and exec_start.endswith("/pmugated") and "@" not in exec_start,
           "ExecStart= is the configured absolute path of pmugated", exec_start)
    # systemctl reload sends SIGHUP (the daemon reloads instead of dying with registers
    # programmed). The kill runs with '+': the unit's bounding set leaves out CAP_KILL, which
    # root needs to signal the daemon once it runs as its own user.
    tap.eq(setting(service, "Service", "ExecReload"), "+kill -HUP $MAINPID",
           "ExecReload= sends SIGHUP, outside the bounding set that has no CAP_KILL")
    tap.eq((setting(service, "Unit", "Requires"), setting(service, "Unit", "After")),
           ("pmugated.socket", "pmugated.socket"), "the service always comes with its socket")
    tap.eq(setting(service, "Install", "Also"), "pmugated.socket", "enabling the service enables the socket")

    caps = set(" ".join(s.get("CapabilityBoundingSet", [])).split())
    tap.eq(caps, START_UP_CAPS | OPENER_CAPS,
           "CapabilityBoundingSet= is exactly what start-up and the perf opener need")
    tap.eq(s.get("AmbientCapabilities"), None, "no ambient capabilities")
    tap.eq(setting(service, "Service", "NoNewPrivileges"), "yes", "NoNewPrivileges=yes")
    tap.eq(setting(service, "Service", "User"), None, "no User=: the daemon must start as root to open its devices")

    tap.eq(setting(service, "Service", "DevicePolicy"), "closed", "DevicePolicy=closed")
    tap.eq(s.get("DeviceAllow"), ["char-cpu/msr rw", "char-cpu/cpuid r"],
           "DeviceAllow= opens the msr devices, the cpuid devices read-only, and nothing else")
    tap.ok("PrivateDevices" not in s, "no PrivateDevices= (it hides /dev/cpu/N/msr)")
    tap.eq((setting(service, "Service", "ProtectKernelTunables"), s.get("ReadWritePaths")), ("yes", ["/sys/devices"]),
           "ProtectKernelTunables=yes, with only /sys/devices (the PCI config files) writable again")
    tap.eq(s.get("SystemCallFilter"), ["@system-service", "~@resources"],
           "SystemCallFilter= allows @system-service without @resources")
    tap.eq(setting(service, "Service", "IPAddressDeny"), "any", "IPAddressDeny=any")
    tap.ok("ProcSubset" not in s, "no ProcSubset= (it hides /proc/cpuinfo and nmi_watchdog)")
    tap.eq(setting(service, "Service", "ProtectSystem"), "strict",
           "ProtectSystem=strict (it leaves /dev, /proc and /sys writable)")

    required = {
        "PrivateMounts": "yes", "ProtectHome": "yes", "PrivateTmp": "yes", "PrivateNetwork": "yes", "RestrictAddressFamilies": "AF_UNIX",
        "ProtectKernelModules": "yes", "ProtectKernelLogs": "yes", "ProtectControlGroups": "yes",
        "ProtectClock": "yes", "ProtectHostname": "yes", "RestrictNamespaces": "yes", "RestrictRealtime": "yes",
        "RestrictSUIDSGID": "yes", "LockPersonality": "yes", "MemoryDenyWriteExecute": "yes",
        "SystemCallArchitectures": "native",
        "SystemCallErrorNumber": "EPERM", "UMask": "0077", "RuntimeDirectory": "pmugate",
        "RuntimeDirectoryPreserve": "yes",
    }
    wrong = {key: setting(service, "Service", key) for key in required
             if setting(service, "Service", key) != required[key]}
    tap.ok(not wrong, "the other hardening and runtime directory settings are as required",
           "\n".join("%s=%s, want %s" % (k, v, required[k]) for k, v in sorted(wrong.items(), key=str)))

    if SYSTEMD_ANALYZE:
        missing = START_UP_SYSCALLS - allowed_syscalls(service)
        tap.eq(missing, set(), "SystemCallFilter= allows the system calls of the privilege drop")
    else:
        skip(tap, "SystemCallFilter= allows the system calls of the privilege drop", "systemd-analyze not installed")

    tap.eq(setting(sock, "Socket", "ListenSequentialPacket"), "/run/pmugate/pmugate.sock",
           "the socket unit listens on the daemon's default socket, SOCK_SEQPACKET")
    tap.eq(setting(sock, "Socket", "SocketMode"), "0666", "anyone may connect; the daemon authorizes each request")
    tap.eq(setting(sock, "Socket", "RemoveOnStop"), "yes", "the socket file goes with the socket unit")
    tap.eq(setting(sock, "Install", "WantedBy"), "sockets.target", "the socket is enabled for sockets.target")

    # The socket unit, the service and tmpfiles.d all create /run/pmugate: they must agree.
    tmpfiles = data_lines(os.path.join(SOURCE_UNITS, "pmugate.tmpfiles"))
    tap.eq(tmpfiles, [["d", "/run/pmugate", "0755", "root", "root", "-", "-"],
                      ["d", "/run/pmugate/state", "0700", "pmugate", "pmugate", "-", "-"]],
           "tmpfiles.d creates /run/pmugate, and state/ in it for the daemon's user")
    tap.eq({setting(sock, "Socket", "DirectoryMode"), setting(service, "Service", "RuntimeDirectoryMode")}, {"0755"},
           "the socket unit and the service give /run/pmugate the tmpfiles.d mode")

    sysusers = {(f[0], f[1]) for f in data_lines(os.path.join(SOURCE_UNITS, "pmugate.sysusers"))}
    tap.eq(sysusers, {("u", "pmugate"), ("g", "pmugate-users"), ("g", "pmugate-admin"), ("u", "pmugate-exporter")},
           "sysusers.d creates the users pmugate and pmugate-exporter and the groups pmugate-users and "
           "pmugate-admin")


def read_db(path):
    """/etc/passwd or /etc/group as {name: fields}."""
    with open(path) as f:
        return {line.split(":")[0]: line.rstrip("\n").split(":") for line in f if line.strip()}


def test_sysusers_and_tmpfiles_apply(tap):
    """The real tools accept both files and create what the units and daemon expect, in a
    scratch root."""
    desc = "systemd-sysusers and systemd-tmpfiles apply our files"
    sysusers, tmpfiles = find_program("systemd-sysusers"), find_program("systemd-tmpfiles")
    if not (sysusers and tmpfiles and os.geteuid() == 0):
        skip(tap, desc, "needs root, systemd-sysusers and systemd-tmpfiles")
        return
    root = tempfile.mkdtemp(prefix="pmugate-sysroot-")
    try:
        os.mkdir(os.path.join(root, "etc"))
        p = subprocess.run([sysusers, "--root=" + root, os.path.join(SOURCE_UNITS, "pmugate.sysusers")],
                           capture_output=True, text=True, timeout=60)
        if not tap.ok(p.returncode == 0, "systemd-sysusers accepts pmugate.sysusers", p.stdout + p.stderr):
            return
        passwd = read_db(os.path.join(root, "etc", "passwd"))
        groups = read_db(os.path.join(root, "etc", "group"))
        user = passwd.get("pmugate", [""] * 7)
        tap.ok(0 < int(user[2] or 0) < 1000 and user[5] == "/" and user[6].endswith("/nologin"),
               "pmugate is a system user with no home and no login", user)
        tap.ok({"pmugate", "pmugate-users", "pmugate-admin"} <= set(groups), "the groups exist", sorted(groups))

        p = subprocess.run([tmpfiles, "--root=" + root, "--create", os.path.join(SOURCE_UNITS, "pmugate.tmpfiles")],
                           capture_output=True, text=True, timeout=60)
        st = os.stat(os.path.join(root, "run", "pmugate"))
        tap.eq((p.returncode, oct(st.st_mode & 0o7777), st.st_uid, st.st_gid), (0, "0o755", 0, 0),
               "systemd-tmpfiles creates /run/pmugate 0755 root:root")
        st = os.stat(os.path.join(root, "run", "pmugate", "state"))
        tap.eq((oct(st.st_mode & 0o7777), st.st_uid, st.st_gid), ("0o700", int(user[2]), int(user[3])),
               "and /run/pmugate/state 0700 for the pmugate user")
    finally:
        shutil.rmtree(root)


def proc_status(pid):
    with open("/proc/%d/status" % pid) as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def check_no_privileges(tap, pid, how):
    """The daemon as /proc sees it: nobody's ids, no group, no capability anywhere, and
    no_new_privs, so not even an exec could give anything back."""
    st = proc_status(pid)
    nobody = pwd.getpwnam("nobody")
    tap.eq(st["Uid"].split(), [str(nobody.pw_uid)] * 4, "%s: real, effective, saved and fs uid are nobody's" % how)
    tap.eq(st["Gid"].split(), [str(nobody.pw_gid)] * 4, "%s: all gids are nobody's" % how)
    tap.eq(st.get("Groups", "").split(), [], "%s: no supplementary groups" % how)
    caps = {k: st[k] for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}
    tap.eq(caps, {k: "0" * 16 for k in caps}, "%s: every capability set is empty" % how)
    tap.eq(st["NoNewPrivs"], "1", "%s: no_new_privs is set" % how)


def unit_caps():
    return set(" ".join(parse_unit(SERVICE)["Service"].get("CapabilityBoundingSet", [])).split())


def as_unit_would(caps):
    """A command prefix that runs the rest as root with only caps in the bounding set and
    no_new_privs: what CapabilityBoundingSet= and NoNewPrivileges= do, without systemd."""
    keep = ",".join("+" + c[len("CAP_"):].lower() for c in sorted(caps))
    return [SETPRIV, "--bounding-set=-all," + keep, "--inh-caps=-all", "--ambient-caps=-all", "--no-new-privs", "--"]


def test_privileges_dropped(tap):
    desc = "a daemon started by hand drops every privilege"
    if os.geteuid() != 0:
        skip(tap, desc, "needs root to start the daemon as root")
        return
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=2)
    dm = t.Daemon(d, ["--root=" + m.root])
    try:
        check_no_privileges(tap, dm.proc.pid, "started by hand")
        h = t.Client(dm.socket).call("hello")
        tap.eq(h.get("cpu", {}).get("key"), "spr", "the unprivileged daemon still answers")
    finally:
        dm.stop()
        shutil.rmtree(d)


class Activated:
    """pmugated behind systemd-socket-activate: the socket exists before the daemon, and the
    first connection execs the daemon in place with LISTEN_FDS=1, as systemd does."""

    def __init__(self, d, machine, wrapper=()):
        self.socket = os.path.join(d, "activate.sock")
        # Bound by the daemon only if it ignored the socket it was given.
        self.fallback = os.path.join(d, "fallback.sock")
        self.log_path = os.path.join(d, "pmugated.log")
        config = os.path.join(d, "pmugate.conf")
        t.write_config(config)
        notify_path = os.path.join(d, "notify.sock")
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(notify_path)
        os.chmod(notify_path, 0o666)   # READY=1 comes after the switch to nobody
        # systemd-socket-activate passes on only the environment it is told to.
        argv = [SOCKET_ACTIVATE, "--seqpacket", "-l", self.socket, "-E", "NOTIFY_SOCKET=" + notify_path]
        argv += list(wrapper) + [
            os.path.abspath(t.PMUGATED), "--root=" + machine.root, "--allowlist-dir=" + t.ALLOWLISTS,
            "--user=nobody", "--config=" + config, "--audit-log=" + os.path.join(d, "audit.log"),
            "--runtime-dir=" + os.path.join(d, "run"), "--socket=" + self.fallback]
        self.log_file = open(self.log_path, "w")
        self.proc = t.spawn(argv, stdout=self.log_file, stderr=self.log_file)
        self._wait_for_socket()

    def _listening(self):
        # The path exists from bind() on, but connecting is refused until listen(): /proc/net/unix
        # flags a listening socket with __SO_ACCEPTCON (0x10000).
        with open("/proc/net/unix") as f:
            return any(line.split()[-1] == self.socket and int(line.split()[3], 16) & 0x10000
                       for line in f.readlines()[1:] if len(line.split()) >= 8)

    def _wait_for_socket(self, timeout=10):
        deadline = time.time() + timeout
        while not os.path.exists(self.socket) or not self._listening():
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("systemd-socket-activate did not listen: " + self.log())
            time.sleep(0.02)

    def wait_ready(self, timeout=10):
        self.notify.settimeout(timeout)
        try:
            return "READY=1" in self.notify.recv(4096).decode()
        except socket.timeout:
            return False

    def log(self):
        if not self.log_file.closed:
            self.log_file.flush()
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.notify.close()
        self.log_file.close()
        return self.proc.returncode


def test_socket_activation(tap):
    if not SOCKET_ACTIVATE:
        skip(tap, "pmugated starts under socket activation", "systemd-socket-activate not installed")
        return
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=2)
    m.set_msr(3, PMC0, 0xC0FFEE)
    # As root, start the daemon with no more capabilities than the unit gives it, so a
    # capability that start-up needs and the unit lacks fails here.
    bounded = os.geteuid() == 0 and SETPRIV is not None
    if bounded:
        # Without CAP_CHOWN the daemon needs state/ made for its user, as tmpfiles.d does.
        state = os.path.join(d, "run", "state")
        os.makedirs(state, mode=0o700)
        os.chown(state, pwd.getpwnam("nobody").pw_uid, pwd.getpwnam("nobody").pw_gid)
    act = Activated(d, m, wrapper=as_unit_would(unit_caps()) if bounded else ())
    try:
        tap.ok(act.proc.poll() is None and "Execing" not in act.log(),
               "the socket listens before the daemon runs", act.log())
        c = t.Client(act.socket)   # this connection starts the daemon
        h = c.call("hello")
        tap.eq((h.get("cpu", {}).get("key"), len(h.get("cpus", []))), ("spr", 4),
               "hello over the activated socket describes the machine")
        tap.ok(act.wait_ready(), "the daemon reports READY=1 to NOTIFY_SOCKET")
        r = c.batch([["r", 3, PMC0]])
        tap.eq((r.get("status"), r.get("values")), ([0], [0xC0FFEE]), "a read over the activated socket works")
        c2 = t.Client(act.socket)
        tap.eq(c2.call("hello").get("cpu", {}).get("key"), "spr", "a second client is served on the same socket")
        c.close()
        c2.close()
        tap.ok("Using the socket passed by systemd" in act.log(), "the daemon says it used the passed socket",
               act.log())
        if bounded:
            tap.ok(True, "start-up needed no capability beyond CapabilityBoundingSet=")
        else:
            skip(tap, "start-up needed no capability beyond CapabilityBoundingSet=", "needs root and setpriv")
        tap.ok(not os.path.exists(act.fallback), "the daemon bound no socket of its own")
        if os.geteuid() == 0:
            check_no_privileges(tap, act.proc.pid, "socket-activated")
        else:
            skip(tap, "socket-activated: privileges dropped", "needs root to start the daemon as root")
        tap.eq(act.stop(), 0, "SIGTERM stops the daemon cleanly")
        tap.ok(os.path.exists(act.socket), "the daemon leaves the socket file to its owner")
    except Exception:
        print_log(act)
        raise
    finally:
        act.stop()
        shutil.rmtree(d)


def print_log(act):
    """What the daemon said, as TAP comments, for a test that failed halfway."""
    for line in act.log().splitlines()[-40:]:
        print("# log: " + line)


def start_fails_without(d, machine, caps):
    """Starts the daemon by hand with only caps; returns (failed, log)."""
    log_path = os.path.join(d, "without.log")
    config = os.path.join(d, "pmugate.conf")
    t.write_config(config)
    argv = as_unit_would(caps) + [
        os.path.abspath(t.PMUGATED), "--root=" + machine.root, "--allowlist-dir=" + t.ALLOWLISTS, "--user=nobody",
        "--config=" + config, "--audit-log=" + os.path.join(d, "audit.log"),
        "--runtime-dir=" + tempfile.mkdtemp(dir=d), "--socket=" + os.path.join(d, "without.sock")]
    env = {k: v for k, v in os.environ.items() if k not in ("LISTEN_FDS", "LISTEN_PID", "NOTIFY_SOCKET")}
    with open(log_path, "w") as log:
        proc = t.spawn(argv, stdout=log, stderr=log, env=env)
    try:
        failed = proc.wait(timeout=10) != 0
    except subprocess.TimeoutExpired:   # it started and serves: the capability was not needed
        proc.terminate()
        proc.wait()
        failed = False
    with open(log_path) as f:
        return failed, f.read()


def test_each_capability_needed(tap):
    """The other half of "exactly": without any one of the unit's capabilities (the device
    ones aside), start-up fails, and says why."""
    desc = "each capability of CapabilityBoundingSet= is needed at start-up"
    if not (SETPRIV and os.geteuid() == 0):
        skip(tap, desc, "needs root and setpriv")
        return
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=2)
    try:
        caps = unit_caps()
        for cap in sorted(caps - DEVICE_CAPS - OPENER_CAPS):
            failed, log = start_fails_without(d, m, caps - {cap})
            tap.ok(failed and log.strip(), "without %s the daemon refuses to start" % cap, log)
        for cap in sorted(OPENER_CAPS):
            # Start-up may still stop later for its own reasons (here: a state directory of
            # root's, which needs CAP_CHOWN); the opener has started by then.
            _, log = start_fails_without(d, m, caps - {cap})
            tap.ok("Perf opener runs without CAP_PERFMON" in log and "Perf opener started" in log,
                   "without %s the perf opener starts and says it runs without it" % cap, log)
    finally:
        shutil.rmtree(d)


def traced_syscalls(path):
    """System call names in an strace -f output file."""
    names = set()
    with open(path) as f:
        for line in f:
            match = re.match(r"^(?:\d+\s+)?([a-z0-9_]+)\(", line)
            if match:
                names.add(match.group(1))
    return names


def wait_for_trace_end(path, pid, timeout=10):
    """The detached tracer writes the daemon's last lines after the daemon is reaped."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open(path) as f:
            if re.search(r"(?m)^%d\s+\+\+\+ exited with" % pid, f.read()):
                return
        time.sleep(0.05)


def test_syscalls_within_filter(tap):
    """What the daemon really calls from exec to exit, start-up and one request of each kind
    included, must pass SystemCallFilter=; under systemd a miss is EPERM."""
    desc = "every system call the daemon makes is allowed by SystemCallFilter="
    if not (SYSTEMD_ANALYZE and SOCKET_ACTIVATE and STRACE and os.geteuid() == 0):
        skip(tap, desc, "needs root, strace, systemd-analyze and systemd-socket-activate")
        return
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=2)
    trace = os.path.join(d, "strace.out")
    # -D: strace runs as a grandchild, so the daemon keeps the pid LISTEN_PID names.
    act = Activated(d, m, wrapper=[STRACE, "-D", "-f", "-q", "-o", trace])
    try:
        c = t.Client(act.socket)
        tap.ok(act.wait_ready(), "the traced daemon started", act.log())
        c.call("hello")
        c.batch([["r", 0, PMC0], ["w", 1, PMC0, 5]])
        c.call("status")
        c.close()
        act.stop()
        wait_for_trace_end(trace, act.proc.pid)
        used = traced_syscalls(trace)
        allowed = allowed_syscalls(parse_unit(SERVICE))
        tap.ok(START_UP_SYSCALLS - {"capget"} <= used, "the trace saw the privilege drop", sorted(used))
        # perf_event_open: the perf opener's probe at start-up, which the shipped filter answers
        # with EPERM and the opener reports (SECURITY.md, "The systemd unit", has the drop-in).
        tap.eq(sorted(used - allowed - {"perf_event_open"}), [], desc)
    except Exception:
        print_log(act)
        raise
    finally:
        act.stop()
        shutil.rmtree(d)


if __name__ == "__main__":
    raise SystemExit(t.Tap().run([test_units_verify, test_hardening_lines, test_sysusers_and_tmpfiles_apply,
                                  test_privileges_dropped, test_socket_activation, test_each_capability_needed,
                                  test_syscalls_within_filter]))
