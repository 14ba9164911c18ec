#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""After the suite: no process the tests started from this build is still running (a pmugated,
pmugate-exporter, pmugate or test program, also under a wrapper such as strace). meson runs it
last (lowest priority, alone). It names each one it finds, then ends it, so the next run starts
clean; but it fails: a test that leaves a process behind is a bug in that test or the harness
(tests/integration/pmugatetest.py ends what it starts, see spawn())."""

import os
import signal
import sys

import pmugatetest as t


def ancestors():
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            with open("/proc/%d/stat" % pid) as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def from_build(build, pid):
    """Whether process pid runs a program of the build directory, or names one on its command
    line (a wrapper's argument); None when it is gone or not readable."""
    try:
        exe = os.readlink("/proc/%d/exe" % pid)
        cwd = os.readlink("/proc/%d/cwd" % pid)
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return None
    if exe.removesuffix(" (deleted)").startswith(build):
        return argv
    for a in argv:
        # a relative argument is relative to that process's directory, not to this test's
        path = os.path.realpath(os.path.join(cwd, a))
        if path.startswith(build) and os.path.isfile(path) and os.access(path, os.X_OK):
            return argv
    return None


def test_no_process_left(tap):
    build = os.path.realpath(t.BUILD) + "/"
    mine = ancestors()
    left = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in mine:
            argv = from_build(build, int(name))
            if argv:
                left[int(name)] = argv
    tap.eq(["%d %s" % (pid, " ".join(argv)) for pid, argv in sorted(left.items())], [],
           "no process started from %s is still running" % build)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_no_process_left]))
