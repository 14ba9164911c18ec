#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugatectl through the real daemon: reload names the configuration file the daemon read and
the mode it now runs in, from the daemon's own word (the "config" key of status and of the
reload reply), not the packaged default path."""

import os
import sys

import pmugatetest as t


def ctl(dm, *args, **kw):
    return t.run_cli([t.PMUGATECTL] + list(args), dm.socket, **kw)


def test_reload_names_file_and_mode(tap):
    sim = t.Sim("skx")
    try:
        conf = os.path.join(sim.dir, "pmugate.conf")
        rc, out, err = ctl(sim.daemon, "reload")
        tap.ok(rc == 0 and ("configuration reloaded from %s: pmugated runs in open mode" % conf) in out,
               "reload names the file the daemon read and its mode", out + err)
        rc, out, err = ctl(sim.daemon, "status")
        tap.ok(rc == 0 and ("Config:    %s\n" % conf) in out, "status names the configuration file", out + err)
        t.write_config(conf, extra="mode = job\n")
        rc, out, err = ctl(sim.daemon, "reload")
        tap.ok(rc == 0 and ("configuration reloaded from %s: pmugated runs in job mode" % conf) in out,
               "after a change of mode, reload says the new one", out + err)
    finally:
        sim.stop()


def test_cpus_named(tap):
    """A CPU is "CPU 1", never a bare "1"; a list is "CPUs 0-1"."""
    sim = t.Sim("skx")
    try:
        for args, want in ((("reset", "-c", "1"), "reset the PMU of CPU 1\n"),
                           (("reset", "-c", "0-1"), "reset the PMU of CPUs 0-1\n"),
                           (("grant", "--job", "7", "--uid", "0", "--cpus", "2"), " on CPU 2\n"),
                           (("grant", "--job", "8", "--uid", "0", "--cpus", "2,3"), " on CPUs 2,3\n")):
            rc, out, err = ctl(sim.daemon, *args)
            tap.ok(rc == 0 and want in out, "pmugatectl %s: %r" % (" ".join(args), want.strip()), out + err)
    finally:
        sim.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_reload_names_file_and_mode, test_cpus_named]))
