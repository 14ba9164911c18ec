#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The systemd side of pmugated: the units pass systemd-analyze, carry the hardening the
daemon depends on, the daemon starts under socket activation, and after start-up it holds no
privilege at all."""

import os
import pwd
import re
import shutil
import json
import socket
import struct
import subprocess
import tempfile
import time

import pmugatetest as t

SERVICE = os.path.join(t.BUILD, "systemd", "pmugated.service")
SOURCE_UNITS = os.path.abspath(os.path.join(t.SOURCE, "systemd"))
SOCKET_UNIT = os.path.join(SOURCE_UNITS, "pmugated.socket")
OPENER_SERVICE = os.path.join(t.BUILD, "systemd", "pmugate-perf-opener.service")
OPENER_SOCKET_UNIT = os.path.join(SOURCE_UNITS, "pmugate-perf-opener.socket")
OPENER = os.path.join(t.BUILD, "daemon", "pmugate-perf-opener")
OPENER_SOCKET = "/run/pmugate/perf-opener.socket"

# Exactly what start-up needs (daemon/backend/backend-dev.c, daemon/privileges.c, the state directory
# in daemon/main.c and daemon/server/server.c); one more is a hole, one fewer and the daemon cannot start.
START_UP_CAPS = {"CAP_SYS_RAWIO", "CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"}
# A fake machine is plain files, so these two cannot be shown to be needed here.
DEVICE_CAPS = {"CAP_SYS_RAWIO", "CAP_SYS_ADMIN"}
# The perf opener's, in a unit of its own (pmugate-perf-opener.service); never pmugated's.
OPENER_CAPS = {"CAP_PERFMON"}
CAP_PERFMON = 38
# System calls of the privilege drop; SystemCallFilter= must allow them or start-up fails.
START_UP_SYSCALLS = {"capget", "capset", "prctl", "setgroups", "setresgid", "setresuid"}
# systemd-analyze security: exposure 0.0 (locked down) to 10.0, scaled by 10 for --threshold.
# pmugated.service scores 1.9 on systemd 252 and pmugate-perf-opener.service 0.7 (SECURITY.md
# explains each remaining item); anything above 2.0 means hardening was lost.
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
    opener = os.path.join(d, "pmugate-perf-opener.service")
    with open(OPENER_SERVICE) as f:
        text = f.read()
    text = re.sub(r"(?m)^ExecStart=\S+", "ExecStart=" + os.path.abspath(OPENER), text)
    with open(opener, "w") as f:
        f.write(text)
    opener_sock = os.path.join(d, "pmugate-perf-opener.socket")
    shutil.copy(OPENER_SOCKET_UNIT, opener_sock)
    return service, sock, opener, opener_sock


def exposure(d, unit):
    """systemd-analyze security's rating of unit: (at most the threshold, the level, output)."""
    p = subprocess.run([SYSTEMD_ANALYZE, "security", "--offline=true", "--threshold=%d" % EXPOSURE_THRESHOLD, unit],
                       capture_output=True, text=True, cwd=d, timeout=120)
    level = re.search(r"Overall exposure level for \S+: (\S+ \S+)", p.stdout)
    return p.returncode == 0, level.group(1) if level else "?", p.stdout + p.stderr


def test_units_verify(tap):
    if not SYSTEMD_ANALYZE:
        skip(tap, "systemd-analyze verify accepts the units", "systemd-analyze not installed")
        return
    d = tempfile.mkdtemp(prefix="pmugate-units-")
    try:
        units = units_for_verify(d)
        # --man=no: the man pages are not installed yet. --recursive-errors=no: problems of
        # other units on this system (sockets.target, ...) are not ours to judge.
        p = subprocess.run([SYSTEMD_ANALYZE, "verify", "--man=no", "--recursive-errors=no"] + list(units),
                           capture_output=True, text=True, cwd=d, timeout=120)
        output = p.stdout + p.stderr
        ours = [line for line in output.splitlines() if "pmugate" in line or d in line]
        tap.ok(p.returncode == 0, "systemd-analyze verify finds no error in the units", output)
        tap.eq(ours, [], "systemd-analyze verify has nothing to say about our units (not even a warning)")

        for unit in (units[0], units[2]):
            ok, level, output = exposure(d, unit)
            tap.ok(ok, "systemd-analyze security rates %s at most %.1f (is %s)" % (
                os.path.basename(unit), EXPOSURE_THRESHOLD / 10, level), output)
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
    tap.ok(exec_start.startswith("/") and "@" not in exec_start and
           exec_start.split() == [exec_start.split()[0], "--perf-opener=" + OPENER_SOCKET] and
           exec_start.split()[0].endswith("/pmugated"),
           "ExecStart= is the configured absolute path of pmugated, with the opener service's socket", exec_start)
    # systemctl reload sends SIGHUP (the daemon reloads instead of dying with registers
    # programmed). The kill runs with '+': the unit's bounding set leaves out CAP_KILL, which
    # root needs to signal the daemon once it runs as its own user.
    tap.eq(setting(service, "Service", "ExecReload"), "+kill -HUP $MAINPID",
           "ExecReload= sends SIGHUP, outside the bounding set that has no CAP_KILL")
    tap.eq((service["Unit"].get("Requires"), "pmugated.socket" in service["Unit"].get("After", [])),
           (["pmugated.socket"], True), "the service always comes with its socket")
    tap.eq(setting(service, "Install", "Also"), "pmugated.socket", "enabling the service enables the socket")
    tap.eq((s.get("Wants"), service["Unit"].get("Wants"), service["Unit"].get("After")),
           (None, ["pmugate-perf-opener.socket"], ["pmugated.socket", "pmugate-perf-opener.socket"]),
           "the service wants the perf opener's socket, and starts after it")

    caps = set(" ".join(s.get("CapabilityBoundingSet", [])).split())
    tap.eq(caps, START_UP_CAPS, "CapabilityBoundingSet= is exactly what start-up needs (no CAP_PERFMON: the "
           "opener service has it)")
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


def test_opener_unit_lines(tap):
    """The opener's own unit: the daemon's user, CAP_PERFMON alone, and the one filter that admits
    perf_event_open; pmugated's filter leaves it out."""
    unit = parse_unit(OPENER_SERVICE)
    sock = parse_unit(OPENER_SOCKET_UNIT)
    s = unit.get("Service", {})
    sysusers = {f[1] for f in data_lines(os.path.join(SOURCE_UNITS, "pmugate.sysusers")) if f[0] == "u"}

    exec_start = setting(unit, "Service", "ExecStart") or ""
    tap.ok(exec_start.startswith("/") and exec_start.endswith("/pmugate/pmugate-perf-opener") and "@" not in exec_start,
           "ExecStart= is the configured libexecdir/pmugate/pmugate-perf-opener", exec_start)
    tap.eq((setting(unit, "Unit", "Requires"), setting(unit, "Unit", "After"), setting(unit, "Install", "Also")),
           ("pmugate-perf-opener.socket",) * 3, "the opener service always comes with its socket")
    tap.eq((setting(unit, "Service", "User"), setting(unit, "Service", "Group")), ("pmugate", "pmugate"),
           "it runs as the daemon's user (pmugate, as sysusers.d creates it)")
    tap.ok("pmugate" in sysusers, "sysusers.d creates that user", sysusers)
    tap.eq((s.get("AmbientCapabilities"), s.get("CapabilityBoundingSet")), (["CAP_PERFMON"], ["CAP_PERFMON"]),
           "AmbientCapabilities= and CapabilityBoundingSet= are CAP_PERFMON alone")
    required = {
        "NoNewPrivileges": "yes", "PrivateDevices": "yes", "PrivateNetwork": "yes", "PrivateTmp": "yes",
        "PrivateMounts": "yes", "IPAddressDeny": "any", "ProtectProc": "invisible", "RestrictAddressFamilies": "AF_UNIX",
        "ProtectSystem": "strict", "ProtectHome": "yes", "ProtectKernelTunables": "yes",
        "ProtectKernelModules": "yes", "ProtectKernelLogs": "yes", "ProtectControlGroups": "yes",
        "ProtectClock": "yes", "ProtectHostname": "yes", "RestrictNamespaces": "yes", "RestrictRealtime": "yes",
        "RestrictSUIDSGID": "yes", "LockPersonality": "yes", "MemoryDenyWriteExecute": "yes",
        "SystemCallArchitectures": "native", "SystemCallErrorNumber": "EPERM", "UMask": "0077",
    }
    wrong = {key: setting(unit, "Service", key) for key in required if setting(unit, "Service", key) != required[key]}
    tap.ok(not wrong, "the opener service's hardening settings are as required",
           "\n".join("%s=%s, want %s" % (k, v, required[k]) for k, v in sorted(wrong.items(), key=str)))
    tap.eq(s.get("SystemCallFilter"), ["@system-service perf_event_open", "~@privileged @resources", "capset"],
           "its SystemCallFilter= is @system-service and perf_event_open, without @privileged and @resources, "
           "with capset")

    tap.eq(setting(sock, "Socket", "ListenSequentialPacket"), OPENER_SOCKET,
           "the opener's socket unit listens where pmugated.service's --perf-opener= points, SOCK_SEQPACKET")
    tap.eq((setting(sock, "Socket", "SocketUser"), setting(sock, "Socket", "SocketGroup"),
            setting(sock, "Socket", "SocketMode")), ("pmugate", "pmugate", "0600"),
           "only the daemon's user may connect to it (0600, pmugate's)")
    tap.eq((setting(sock, "Socket", "Accept"), setting(sock, "Socket", "DirectoryMode"),
            setting(sock, "Socket", "RemoveOnStop"), setting(sock, "Install", "WantedBy")),
           (None, "0755", "yes", "sockets.target"),
           "one listening socket passed to one service, in /run/pmugate as the other units make it")

    if not SYSTEMD_ANALYZE:
        skip(tap, "only the opener's filter admits perf_event_open", "systemd-analyze not installed")
        return
    groups = syscall_groups()
    opener_allowed, daemon_allowed = allowed_syscalls(unit), allowed_syscalls(parse_unit(SERVICE))
    tap.eq(("perf_event_open" in opener_allowed, "perf_event_open" in daemon_allowed), (True, False),
           "only the opener's filter admits perf_event_open")
    tap.eq(sorted(opener_allowed & expand_syscalls(groups, ["@privileged"])), ["capset"],
           "the opener's filter admits nothing of @privileged but capset, which empties the inheritable set "
           "AmbientCapabilities= fills")


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

    def __init__(self, d, machine, wrapper=(), extra=()):
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
            "--runtime-dir=" + os.path.join(d, "run"), "--socket=" + self.fallback] + list(extra)
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

def as_opener_unit_would(user, groups=None):
    """A command prefix that runs the rest as the opener unit runs its program: User=, Group=
    (with the user's groups from the group database, as systemd sets them with initgroups(3), or
    the gids in groups), AmbientCapabilities= and CapabilityBoundingSet= CAP_PERFMON,
    NoNewPrivileges=."""
    return [SETPRIV, "--reuid=%d" % user.pw_uid, "--regid=%d" % user.pw_gid,
            "--init-groups" if groups is None else "--groups=" + ",".join(str(g) for g in groups),
            "--inh-caps=-all,+perfmon", "--ambient-caps=-all,+perfmon", "--bounding-set=-all,+perfmon",
            "--no-new-privs", "--"]


class OpenerActivated:
    """pmugate-perf-opener behind systemd-socket-activate as pmugate-perf-opener.socket and
    .service would run it: root binds the socket and gives it to the user with mode 0600
    (SocketUser=, SocketMode=), the first connection execs the program as that user."""

    def __init__(self, d, user, groups=None, tracer=()):
        self.socket = os.path.join(d, "perf-opener.socket")
        self.log_path = os.path.join(d, "perf-opener.log")
        argv = [SOCKET_ACTIVATE, "--seqpacket", "-l", self.socket] + list(tracer) + as_opener_unit_would(
            user, groups) + [os.path.abspath(OPENER), "-v"]
        self.log_file = open(self.log_path, "w")
        self.proc = t.spawn(argv, stdout=self.log_file, stderr=self.log_file)
        deadline = time.time() + 10
        while not os.path.exists(self.socket):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("systemd-socket-activate did not listen: " + self.log())
            time.sleep(0.02)
        os.chown(self.socket, user.pw_uid, user.pw_gid)
        os.chmod(self.socket, 0o600)

    def log(self):
        if not self.log_file.closed:
            self.log_file.flush()
        with open(self.log_path) as f:
            return f.read()

    def wait_log(self, text, timeout=10):
        deadline = time.time() + timeout
        while text not in self.log() and time.time() < deadline:
            time.sleep(0.02)
        return text in self.log()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log_file.close()


def perf_attr_size():
    """sizeof(struct perf_event_attr) as the opener was built: the newest PERF_ATTR_SIZE_VER of
    the kernel header, which is what the opener's check demands of attr.size."""
    try:
        with open("/usr/include/linux/perf_event.h") as f:
            sizes = [int(n) for n in re.findall(r"(?m)^#define\s+PERF_ATTR_SIZE_VER\d+\s+(\d+)", f.read())]
    except OSError:
        return None
    return max(sizes) if sizes else None


def opener_request(size, type_, config, flags, pid, cpu, sample_period=0):
    """A PerfOpenerRequest (daemon/backend/perf-opener.h) without fds: the attr's type, size,
    config, sample_period and its flag bits (disabled 0, exclude_kernel 5, exclude_hv 6 ...),
    then pid, cpu, the open flags, which fds follow (none) and the reserved word."""
    attr = bytearray(size)
    struct.pack_into("=IIQQ", attr, 0, type_, size, config, sample_period)
    struct.pack_into("=Q", attr, 40, flags)
    return bytes(attr) + struct.pack("=iiQII", pid, cpu, 0, 0, 0)


def opener_exchange(path, user, requests):
    """Speaks the opener's messages on path as user, in a child that became that user: the
    ready message's error, then per request the reply's error and, with an fd, the count read
    from it after a moment. Returns {"ready": E, "replies": [[error, count], ...]}, or
    {"closed": true} when the opener closed the connection without a word."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        result = {}
        try:
            os.close(rfd)
            if user:
                os.setgroups([])
                os.setresgid(user.pw_gid, user.pw_gid, user.pw_gid)
                os.setresuid(user.pw_uid, user.pw_uid, user.pw_uid)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.settimeout(10)
            s.connect(path)
            msg = s.recv(64)
            if not msg:
                result["closed"] = True
            else:
                result["ready"] = struct.unpack("=i", msg)[0]
                result["replies"] = []
                for req in requests:
                    s.sendall(req)
                    msg, fds, _, _ = socket.recv_fds(s, 64, 4)
                    count = None
                    if fds:
                        time.sleep(0.05)
                        count = struct.unpack("=Q", os.read(fds[0], 8))[0]
                        for fd in fds:
                            os.close(fd)
                    result["replies"].append([struct.unpack("=i", msg)[0], count])
            s.close()
        except Exception as e:
            result["exception"] = repr(e)
        os.write(wfd, json.dumps(result).encode())
        os._exit(0)
    os.close(wfd)
    with os.fdopen(rfd) as f:
        out = f.read()
    os.waitpid(pid, 0)
    return json.loads(out)


def add_package_counters(m):
    """A memory-controller PMU whose read and write events are the kernel's cpu-clock of CPU 0
    (type 1, the software PMU, config 0): package counters pmugated opens at start-up that really
    count on this machine, which has no uncore PMU."""
    m.add_uncore_pmu("uncore_imc_free_running_0", 1, "0", {"read": "event=0x00", "write": "event=0x00"})


def test_opener_service(tap):
    """The opener as its units run it: activated by pmugated's first connection (pmugated as
    pmugated.service runs it, with --perf-opener), uid pmugate's (here nobody's, as the daemon's
    --user) with CAP_PERFMON alone, pmugated with nothing; the package counters opened through
    it; a cpu-clock of a whole CPU, which needs CAP_PERFMON at perf_event_paranoid > 0, opened
    through the socket by the daemon's uid; a connection of another uid refused."""
    desc = "the perf opener service"
    if not (SOCKET_ACTIVATE and SETPRIV and os.geteuid() == 0):
        skip(tap, desc, "needs root, setpriv and systemd-socket-activate")
        return
    size = perf_attr_size()
    if not size:
        skip(tap, desc, "no linux/perf_event.h to size the attr by")
        return
    nobody = pwd.getpwnam("nobody")
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=2)
    add_package_counters(m)
    state = os.path.join(d, "run", "state")
    os.makedirs(state, mode=0o700)
    os.chown(state, nobody.pw_uid, nobody.pw_gid)
    opener = OpenerActivated(d, nobody)
    act = None
    try:
        tap.ok(opener.proc.poll() is None and "Perf opener ready" not in opener.log(),
               "the opener's socket listens before the opener runs", opener.log())
        act = Activated(d, m, wrapper=as_unit_would(unit_caps()), extra=["--perf-opener=" + opener.socket])
        c = t.Client(act.socket)   # starts the daemon, which connects to the opener
        tap.eq(c.call("hello").get("cpu", {}).get("key"), "spr", "the daemon serves")
        tap.ok(act.wait_ready(), "the daemon reports READY=1", act.log())
        tap.ok(opener.wait_log("Serving pmugated (process %d)" % act.proc.pid),
               "the daemon's connection activated the opener, which serves it", opener.log())
        tap.ok("Perf opener service connected at %s" % opener.socket in act.log(),
               "the daemon says it connected to the opener service", act.log())
        tap.ok("Perf opener started" not in act.log(), "the daemon forked no opener of its own", act.log())
        tap.ok("Package counters: 2 of 2 opened through the perf opener" in act.log(),
               "the daemon, whose filter leaves perf_event_open out, opened its package counters through "
               "the opener service", act.log())
        counters = c.call("hello").get("counters", [])
        tap.eq([(x[1], x[7]) for x in counters],
               [("uncore_imc_free_running_0/read", ""), ("uncore_imc_free_running_0/write", "")],
               "both package counters are served, with no error")
        first = c.batch([["cr", 0]])
        time.sleep(0.05)
        second = c.batch([["cr", 0]])
        tap.ok(first.get("status") == [0] and second.get("status") == [0] and
               second["values"][0] > first["values"][0],
               "a package counter the opener opened counts (%s -> %s)" % (first.get("values"), second.get("values")))

        st = proc_status(opener.proc.pid)
        tap.eq((st["Uid"].split(), st["Gid"].split(), st.get("Groups", "").split()),
               ([str(nobody.pw_uid)] * 4, [str(nobody.pw_gid)] * 4, [str(nobody.pw_gid)]),
               "the opener runs as the daemon's user, with no supplementary group but its own (User=)")
        perfmon = "%016x" % (1 << CAP_PERFMON)
        tap.eq({k: st[k] for k in ("CapPrm", "CapEff", "CapBnd", "CapInh", "CapAmb")},
               {"CapPrm": perfmon, "CapEff": perfmon, "CapBnd": perfmon, "CapInh": "0" * 16, "CapAmb": "0" * 16},
               "the opener: CapEff = CapPrm = CapBnd = CAP_PERFMON, nothing inheritable or ambient")
        tap.eq(st["NoNewPrivs"], "1", "the opener has no_new_privs")
        check_no_privileges(tap, act.proc.pid, "pmugated with the opener service")
        c.close()
        tap.eq(act.stop(), 0, "the daemon stops cleanly")
        tap.ok(opener.wait_log("pmugated (process %d) closed its connection" % act.proc.pid) and
               opener.proc.poll() is None, "the opener sees the daemon go and keeps listening", opener.log())

        cpu_clock = opener_request(size, 1, 0, (1 << 5) | (1 << 6), -1, 0)
        sampling = opener_request(size, 1, 0, (1 << 5) | (1 << 6), -1, 0, sample_period=1000)
        r = opener_exchange(opener.socket, nobody, [cpu_clock, sampling])
        tap.ok(r.get("ready") == 0, "the opener says it is ready, perf_event_open admitted", r)
        replies = r.get("replies") or [[None, None]] * 2
        tap.ok(replies[0][0] == 0 and replies[0][1] is not None and replies[0][1] > 0,
               "a cpu-clock of CPU 0 (CAP_PERFMON at perf_event_paranoid > 0) opens and counts", r)
        tap.eq(replies[1][0], -1, "a sampling event is refused with -EPERM by the opener's own check")
        tap.ok("attr field 'sample_period' is set" in opener.log(), "and the opener logs why", opener.log())

        r = opener_exchange(opener.socket, None, [cpu_clock])
        tap.eq(r, {"closed": True}, "a connection of another uid (root) is closed without a word")
        tap.ok(opener.wait_log("Refusing a connection from uid 0"), "and the opener logs the refusal", opener.log())
    except Exception:
        if act:
            print_log(act)
        for line in opener.log().splitlines()[-20:]:
            print("# opener: " + line)
        raise
    finally:
        if act:
            act.stop()
        opener.stop()
        shutil.rmtree(d)


def test_opener_refuses_other_groups(tap):
    """systemd's User= gives the opener its user's groups from the group database; one besides
    its own group is access nobody asked for, so the opener refuses to start and says why."""
    desc = "an opener with a supplementary group besides its own refuses to start"
    if not (SOCKET_ACTIVATE and SETPRIV and os.geteuid() == 0):
        skip(tap, desc, "needs root, setpriv and systemd-socket-activate")
        return
    nobody = pwd.getpwnam("nobody")
    other = next(g for g in range(1, 65534) if g != nobody.pw_gid)
    d = t.workdir()
    opener = OpenerActivated(d, nobody, groups=[nobody.pw_gid, other])
    try:
        r = opener_exchange(opener.socket, nobody, [])
        tap.ok("ready" not in r, "%s: the daemon's user gets no ready message" % desc, r)
        tap.ok(opener.wait_log("Refusing to run with supplementary group %d" % other),
               "and the opener says which group", opener.log())
        try:
            code = opener.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        tap.ok(code not in (0, None), "and exits with a failure, which systemd reports (exit %s)" % code)
    finally:
        opener.stop()
        shutil.rmtree(d)


def syscalls_after_exec(path, program):
    """System call names in an strace -f output file from the execve() of program on: what the
    program itself called. The wrapper before it (setpriv) runs, under systemd, in systemd's
    place, before the unit's SystemCallFilter= is applied."""
    names, started = set(), False
    with open(path) as f:
        for line in f:
            if not started:
                started = re.match(r'^(?:\d+\s+)?execve\("%s"' % re.escape(program), line) is not None
            if started:
                match = re.match(r"^(?:\d+\s+)?([a-z0-9_]+)\(", line)
                if match:
                    names.add(match.group(1))
    return names if started else None


def test_opener_syscalls_within_filter(tap):
    """What the opener really calls from its exec on, as its unit runs it, through its privilege
    check, a ready message and two requests, must pass its unit's SystemCallFilter=; under
    systemd a miss is EPERM and the service fails (as capset did before the unit admitted it)."""
    desc = "every system call the perf opener makes is allowed by its SystemCallFilter="
    if not (SYSTEMD_ANALYZE and SOCKET_ACTIVATE and SETPRIV and STRACE and os.geteuid() == 0):
        skip(tap, desc, "needs root, strace, setpriv, systemd-analyze and systemd-socket-activate")
        return
    size = perf_attr_size()
    if not size:
        skip(tap, desc, "no linux/perf_event.h to size the attr by")
        return
    nobody = pwd.getpwnam("nobody")
    d = t.workdir()
    trace = os.path.join(d, "strace.out")
    # -D: strace runs as a grandchild, so the opener keeps the pid LISTEN_PID names.
    opener = OpenerActivated(d, nobody, tracer=[STRACE, "-D", "-f", "-q", "-o", trace, "--"])
    try:
        cpu_clock = opener_request(size, 1, 0, (1 << 5) | (1 << 6), -1, 0)
        sampling = opener_request(size, 1, 0, (1 << 5) | (1 << 6), -1, 0, sample_period=1000)
        r = opener_exchange(opener.socket, nobody, [cpu_clock, sampling])
        replies = r.get("replies") or []
        tap.ok(r.get("ready") == 0 and len(replies) == 2 and replies[0][0] == 0 and replies[1][0] == -1,
               "the traced opener starts, opens a cpu-clock and refuses a sampling event", r)
        tap.ok(opener.wait_log("closed its connection"), "the traced opener sees the connection end", opener.log())
        pid = opener.proc.pid
        opener.stop()
        wait_for_trace_end(trace, pid)
        used = syscalls_after_exec(trace, os.path.abspath(OPENER))
        if not tap.ok(used is not None, "the trace saw the opener's exec"):
            return
        allowed = allowed_syscalls(parse_unit(OPENER_SERVICE))
        tap.ok({"capset", "perf_event_open", "accept4"} <= used,
               "the trace saw the privilege check, the open and the connection", sorted(used))
        tap.eq(sorted(used - allowed), [], desc)
    except Exception:
        for line in opener.log().splitlines()[-20:]:
            print("# opener: " + line)
        raise
    finally:
        opener.stop()
        shutil.rmtree(d)


def test_opener_missing(tap):
    """pmugated.service's daemon whose opener socket is not there: a warning naming the unit,
    and registers are served all the same."""
    desc = "a missing opener service does not stop the daemon"
    if not SOCKET_ACTIVATE:
        skip(tap, desc, "systemd-socket-activate not installed")
        return
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=2)
    m.set_msr(3, PMC0, 0xC0FFEE)
    missing = os.path.join(d, "no-perf-opener.socket")
    act = Activated(d, m, extra=["--perf-opener=" + missing])
    try:
        c = t.Client(act.socket)
        r = c.batch([["r", 3, PMC0]])
        tap.eq((r.get("status"), r.get("values")), ([0], [0xC0FFEE]), "%s: registers are served" % desc)
        c.close()
        tap.ok("Cannot reach the perf opener at %s (pmugate-perf-opener.socket" % missing in act.log(),
               "the daemon warns that the opener cannot be reached, naming its unit", act.log())
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
            # The unit's bounding set has no CAP_PERFMON (the opener service has it): a daemon
            # started without --perf-opener forks its opener, which says it runs without it.
            # Start-up may still stop later for its own reasons (here: a state directory of
            # root's, which needs CAP_CHOWN); the opener has started by then.
            _, log = start_fails_without(d, m, caps - {cap})
            tap.ok(cap not in caps and "Perf opener runs without CAP_PERFMON" in log and "Perf opener started" in log,
                   "without %s a forked perf opener starts and says it runs without it" % cap, log)
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
            if re.search(r"(?m)^%d\s+\+\+\+ (?:exited with|killed by)" % pid, f.read()):
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
    add_package_counters(m)
    trace = os.path.join(d, "strace.out")
    # -D: strace runs as a grandchild, so the daemon keeps the pid LISTEN_PID names. As
    # pmugated.service starts it, with --perf-opener (here a socket nobody listens on): the
    # daemon forks no opener, so perf_event_open, which its filter leaves out, is never called,
    # not even for the package counters, which only the opener opens.
    act = Activated(d, m, wrapper=[STRACE, "-D", "-f", "-q", "-o", trace],
                    extra=["--perf-opener=" + os.path.join(d, "no-perf-opener.socket")])
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
        tap.eq(sorted(used - allowed), [], desc)
        tap.ok("perf_event_open" not in used and "Package counters: 0 of 2 opened through the perf opener" in act.log()
               and "the perf opener cannot be reached" in act.log(),
               "pmugated never calls perf_event_open itself: without the opener its package counters say why",
               act.log())
    except Exception:
        print_log(act)
        raise
    finally:
        act.stop()
        shutil.rmtree(d)


if __name__ == "__main__":
    raise SystemExit(t.Tap().run([test_units_verify, test_hardening_lines, test_sysusers_and_tmpfiles_apply,
                                  test_opener_unit_lines, test_privileges_dropped, test_socket_activation,
                                  test_opener_service, test_opener_refuses_other_groups,
                                  test_opener_syscalls_within_filter, test_opener_missing,
                                  test_each_capability_needed,
                                  test_syscalls_within_filter]))
