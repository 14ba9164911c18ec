#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""explore"""
import sys
import likwidtest as lt
import pmugatetest as t
import test_likwid_perfctr as P

def test_explore(tap):
    for model, group, via in [("icx", "FLOPS_DP", "perf"), ("icx", "TMA", "perf"), ("skx", "FLOPS_DP", "perf")]:
        d, dm = P.sim_daemon(model, args=["--counters=" + via])
        try:
            rc, out, err = lt.perfctr(d, dm.socket, model, ["-C", "0-1", "-g", group] + P.TIMED)
            print("# ==== %s %s %s rc %d" % (model, group, via, rc))
            print("# " + "\n# ".join((out[-2500:] + err[-2000:]).splitlines()))
            tap.ok(True, "ran")
        finally:
            dm.stop()

if __name__ == "__main__":
    raise SystemExit(t.Tap().run([test_explore]))
