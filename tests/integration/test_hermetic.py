#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The test suite never reads an installed pmugate's files: with the environment meson gives
every test, neither the daemon started by the harness nor pmugate and pmugatectl touch the
configured (installed) configuration, allowlists or groups, or a user's ~/.config/pmugate.
Checked with strace on every path a process looks up; a control run without the test
environment shows that the check sees those lookups when they happen."""

import os
import re
import shutil
import subprocess
import sys

import pmugatetest as t

BUILD = os.path.abspath(t.BUILD)


def build_config():
    with open(os.path.join(BUILD, "build-config.h")) as f:
        return dict(re.findall(r'#define (PMUGATE_\w+) "([^"]*)"', f.read()))


def installed_paths():
    cfg = build_config()
    home = os.path.expanduser("~")
    return [os.path.dirname(cfg["PMUGATE_CONFIG_FILE"]), cfg["PMUGATE_ALLOWLIST_DIR"], cfg["PMUGATE_GROUP_DIR"],
            os.path.join(home, ".config", "pmugate")]


def traced_paths(log):
    """Every quoted path in strace's file-syscall lines."""
    paths = set()
    with open(log) as f:
        for line in f:
            for p in re.findall(r'"(/[^"]*)"', line):
                paths.add(os.path.normpath(p))
    return paths


def touched(paths, forbidden):
    return sorted(p for p in paths for f in forbidden if p == f or p.startswith(f + "/"))


def strace(log):
    return ["strace", "-f", "-qq", "-o", log, "-e", "trace=%file"]


def untraced_leaks():
    """LeakSanitizer cannot work under ptrace; the sanitizer builds still catch memory errors."""
    if not t.SANITIZED and "ASAN_OPTIONS" not in os.environ:
        return {}
    return {"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0"}


def test_suite_reads_no_installed_file(tap):
    if not shutil.which("strace"):
        tap.ok(True, "hermetic suite # SKIP strace is not installed (contrib/install-deps.sh)")
        return
    forbidden = installed_paths()
    tap.ok(os.environ.get("PMUGATE_GROUP_DIR", "").startswith(t.SOURCE) or
           os.environ.get("PMUGATE_GROUP_DIR", "").startswith(os.path.abspath(t.SOURCE)),
           "meson gives the tests the source tree's groups", os.environ.get("PMUGATE_GROUP_DIR"))
    d = t.workdir()
    daemon_log = os.path.join(d, "daemon.strace")
    dm = t.Daemon(d, ["--backend=sim", "--sim-model=spr"], wrapper=strace(daemon_log))
    try:
        cli_log = os.path.join(d, "cli.strace")
        runs = [[t.PMUGATE, "info"],
                [t.PMUGATE, "stat", "-g", "ipc", "-c", "0", "-S", "0.2s"],
                [t.PMUGATE, "topdown", "-l", "1", "-c", "0", "-S", "0.2s"],
                [t.PMUGATECTL, "status"]]
        cli_paths = set()
        for argv in runs:
            rc, out, err = t.run_cli(strace(cli_log) + argv, dm.socket, env=untraced_leaks())
            tap.ok(rc == 0, "%s runs under strace" % " ".join(os.path.basename(a) for a in argv[:3]), out + err)
            cli_paths |= traced_paths(cli_log)

        # Control: without the test environment the same lookup goes to the installed groups, and
        # the check above would have seen it.
        env = {k: v for k, v in os.environ.items() if k not in ("PMUGATE_GROUP_DIR", "XDG_CONFIG_HOME")}
        env.update(untraced_leaks())
        env["PMUGATE_GROUP_PATH"] = os.path.join(d, "empty")
        log = os.path.join(d, "control.strace")
        subprocess.run(strace(log) + [t.PMUGATE, "--socket=" + dm.socket, "stat", "-g", "no-such-group", "-c", "0"],
                       env=env, capture_output=True, timeout=30)
        control = touched(traced_paths(log), [build_config()["PMUGATE_GROUP_DIR"]])
        tap.ok(control != [],
               "control: without PMUGATE_GROUP_DIR pmugate looks in the installed groups",
               sorted(traced_paths(log))[-40:])
    finally:
        dm.stop()
    daemon_paths = traced_paths(daemon_log)
    tap.ok(any(p.startswith(os.path.abspath(os.path.join(t.SOURCE, "client", "groups"))) for p in cli_paths),
           "the clients read the source tree's groups (the trace sees group lookups)")
    tap.ok(any(p.startswith(os.path.abspath(t.ALLOWLISTS)) for p in daemon_paths),
           "the daemon reads the source tree's allowlists (the trace sees its file lookups)")
    tap.eq(touched(daemon_paths, forbidden), [], "the daemon looks at no installed file of pmugate")
    tap.eq(touched(cli_paths, forbidden), [], "pmugate and pmugatectl look at no installed file of pmugate")

    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_suite_reads_no_installed_file]))
