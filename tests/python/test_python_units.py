#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The pmugate Python module's own logic, without a daemon: which exception a failure becomes,
a result's arrays, units and NaN reasons, CPU lists, and the DataFrame's rows."""

import errno
import math
import os
import sys

import pmugatetest as t
from pythontest import sanitizer_env


def result_dict():
    """What _pmugate.Measurement.result() returns for two CPUs, a fraction metric and a ratio."""
    def row(cpu, package, counts, metrics):
        return {"cpu": cpu, "package": package, "counts": counts, "raw": [int(c) for c in counts],
                "scale": [1.0] * len(counts), "metrics": metrics}
    return {"start": 0.0, "elapsed": 0.5, "window": 0.499, "window_clock": "tsc", "samples": 3, "resets": 1, "event_sets": 1,
            "events": ["CYCLES", "INST"], "event_units": ["", ""],
            "metrics": [{"name": "share", "label": "Share", "parent": -1, "level": 1, "unit": "%"},
                        {"name": "ipc", "label": "IPC", "parent": -1, "level": 1, "unit": ""}],
            "per_cpu": [row(0, 0, [100.0, 160.0], [0.25, 1.6]), row(1, 0, [0.0, 0.0], [math.nan, math.nan])],
            "aggregate": row(-1, -1, [100.0, 160.0], [0.25, 1.6]), "per_package": [], "withheld": ""}


def test_errors(tap):
    from pmugate import _errors as e
    cases = [
        ((errno.EACCES, "not-authorized", "uid 1 is not ...", "hello"), e.NotAuthorized),
        ((errno.EACCES, "no-grant", "no grant", "starting the counters"), e.NoGrant),
        ((errno.EPERM, "out-of-scope", "CPU 4 ...", "starting the counters"), e.OutOfScope),
        ((errno.EBUSY, "busy", "held by the NMI watchdog", "starting the counters"), e.Busy),
        ((errno.EKEYREVOKED, "revoked", "the grant is gone", "sampling the counters"), e.LeaseLost),
        ((errno.ECANCELED, "", "lease taken", "sampling the counters"), e.LeaseLost),
        ((errno.ENOENT, "", "No such file or directory", "connecting to /run/x"), e.DaemonUnavailable),
        ((errno.ECONNREFUSED, "", "Connection refused", "connecting to /run/x"), e.DaemonUnavailable),
        ((errno.EPIPE, "", "Broken pipe", "hello"), e.DaemonUnavailable),
        ((errno.ENOENT, "", "no group 'X' for spr ...", "opening the measurement"), e.UnknownGroup),
        ((errno.ENOENT, "", "unknown event 'X' for spr", "opening the measurement"), e.InvalidEvent),
        ((errno.EOPNOTSUPP, "", "no recipe for this model", "opening the measurement"), e.NotSupported),
        ((errno.EIO, "internal", "see the daemon's log", "hello"), e.Error),
    ]
    for args, cls in cases:
        x = e.from_errno(*args)
        tap.ok(type(x) is cls and isinstance(x, e.Error) and x.reason == args[2] and x.name == args[1] and
               x.errno == args[0], "%s [%s] in %s: %s" % (errno.errorcode[args[0]], args[1], args[3], cls.__name__),
               repr(x))
    x = e.from_errno(errno.EACCES, "no-grant", "you have no job", "hello")
    tap.eq(str(x), "hello: you have no job [no-grant]", "the message carries the step, the reason and the code name")


def test_result(tap):
    import numpy as np
    from pmugate._result import Result
    r = Result(result_dict())
    tap.eq((r.window, r.window_clock), (0.499, "tsc"), "the counted window and what timed it")
    tap.ok(isinstance(r.metrics["share"], np.ndarray) and r.metrics["share"].shape == (2,), "metrics per CPU as arrays")
    tap.eq(r.metrics["share"][0], 25.0, "a '%' metric is a percentage, as the CLI writes it")
    tap.eq(r.metrics["ipc"][0], 1.6, "other metrics as they are")
    tap.eq(r.aggregate.metrics["share"], 25.0, "the aggregate's too")
    tap.eq(r.counts["INST"].tolist(), [160.0, 0.0], "counts per CPU")
    tap.eq(r.cpus.tolist(), [0, 1], "the CPUs in order")
    tap.eq(r.units, {"share": "%", "ipc": ""}, "units per metric")
    tap.ok(math.isnan(r.metrics["ipc"][1]), "an undefined metric stays NaN, never 0")
    tap.ok("zero" in r.reason("ipc", cpu=1), "reason() says why it is NaN")
    tap.eq(r.reason("ipc", cpu=0), None, "and None for a value")
    d = result_dict()
    d["withheld"] = "package 0: the job does not hold the whole package"
    d["aggregate"]["metrics"] = [0.25, math.nan]
    tap.ok("withheld" in Result(d).reason("ipc"), "a withheld package event is the reason when there is one")
    try:
        r.reason("nope")
        tap.ok(False, "an unknown metric is a KeyError")
    except KeyError as x:
        tap.ok("share" in str(x), "an unknown metric is a KeyError naming those there are")
    rows = r.rows("cpu")
    tap.eq([(x["cpu"], x["share"], x["INST"]) for x in rows][0], (0, 25.0, 160.0), "a row per CPU")
    tap.eq(len(rows), 2, "one for each CPU")
    tap.eq(r.rows("aggregate")[0]["cpu"], -1, "the aggregate row is cpu -1")


def test_cpu_lists(tap):
    import pmugate
    machine = {"scoped": False, "cpus": [{"cpu": c, "online": c != 3} for c in range(8)]}
    tap.eq(pmugate._select_cpus("0-2,5", machine), [0, 1, 2, 5], "a CPU list text")
    tap.eq(pmugate._select_cpus(4, machine), [4], "one CPU number")
    tap.eq(pmugate._select_cpus((1, 2), machine), [1, 2], "a sequence")
    for bad in ("3-1", "a-b"):
        try:
            pmugate._select_cpus(bad, machine)
            tap.ok(False, "%r is refused" % bad)
        except ValueError as x:
            tap.ok(bad in str(x), "%r is refused, naming it" % bad)
    job = {"scoped": True, "scope_cpus": [], "scope_reason": "no grant for uid 7", "scope_job": "", "cpus": []}
    try:
        pmugate._select_cpus([0], job)
        tap.ok(False, "job mode without a job raises NoGrant")
    except pmugate.NoGrant as x:
        tap.ok("no grant for uid 7" in x.reason, "job mode without a job raises NoGrant with the daemon's reason")
    job = dict(job, scope_cpus=[0, 1], scope_job="42")
    try:
        pmugate._select_cpus([1, 2], job)
        tap.ok(False, "a CPU outside the job raises OutOfScope")
    except pmugate.OutOfScope as x:
        tap.ok("[2]" in x.reason and "42" in x.reason, "a CPU outside the job raises OutOfScope naming it and the job")


if __name__ == "__main__":
    san = sanitizer_env()
    if san and os.environ.get("LD_PRELOAD") != san["LD_PRELOAD"]:
        # a sanitizer build: again, with its runtime loaded first
        os.execve(sys.executable, [sys.executable] + sys.argv, dict(os.environ, **san))
    if san is None:
        tap = t.Tap()
        tap.skip("the Python module's logic", "this sanitizer build's extension links no sanitizer runtime "
                 "that can be preloaded (clang's is in executables only)")
        print("1..%d" % tap.n)
        sys.exit(0)
    sys.exit(t.Tap().run([test_errors, test_result, test_cpu_lists]))
