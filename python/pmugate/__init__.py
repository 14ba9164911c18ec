# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate for Python: CPU performance counters through pmugated, without root and without
lowering perf_event_paranoid (docs/PYTHON.md).

    import pmugate
    with pmugate.measure(group="topdown-l2") as m:
        work()
    m.result.metrics["tma_backend_bound"]      # numpy array, one value per CPU
    m.result.aggregate.metrics                  # {metric: value} over all CPUs
    m.dataframe()                               # pandas, one row per CPU (or per interval and CPU)

Every failure raises a pmugate.Error subclass carrying the daemon's reason.
"""

import errno
import functools
import os
import warnings

from . import _pmugate
from . import marker
from ._errors import (Busy, DaemonUnavailable, Error, InvalidEvent, LeaseLost, NoGrant, NotAuthorized,
                      NotSupported, OutOfScope, UnknownGroup)
from ._result import Result, Row

__all__ = ["Busy", "DaemonUnavailable", "Error", "InvalidEvent", "LeaseLost", "NoGrant", "NotAuthorized",
           "NotSupported", "OutOfScope", "Result", "Row", "UnknownGroup", "info", "list_events", "list_groups",
           "marker", "measure", "measured", "DEFAULT_GROUP"]

DEFAULT_GROUP = "topdown-l2"


def info(socket=None):
    """The daemon's description of the machine and of the caller's rights: model_key
    ("spr"), model_label, backend ("msr", "sim"), counting {"via", "wanted", "reason"}, mode
    ("open", "job"), cpus (dicts with cpu, package, core, online), role, scoped, scope_cpus,
    scope_reason, ... socket: the daemon's socket (default $PMUGATE_SOCKET, then
    /run/pmugate/pmugate.sock)."""
    return _pmugate.info(socket)


def _warn_skipped(skipped):
    for path, reason in skipped:
        warnings.warn("pmugate: skipping %s: %s" % (path, reason), stacklevel=3)


def list_groups(socket=None):
    """The groups the daemon's CPU model can measure (what `pmugate list groups` shows): dicts
    with name, description, path and metrics (name, label, parent, unit)."""
    groups, skipped = _pmugate.list_groups(socket)
    _warn_skipped(skipped)
    return groups


def list_events(socket=None, pattern=None):
    """The events of the daemon's CPU model (perf's generic names, pmugate's table, libpfm4's
    list): dicts with name, description and source. pattern keeps those whose name or
    description contains it (case ignored)."""
    events, _ = _pmugate.list_events(socket)
    if pattern:
        p = pattern.lower()
        events = [e for e in events if p in e["name"].lower() or p in e["description"].lower()]
    return events


def _parse_cpulist(text):
    cpus = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        first, _, last = part.partition("-")
        try:
            lo, hi = int(first), int(last or first)
        except ValueError:
            raise ValueError("cpus %r: not a CPU list such as '0-3,8'" % text) from None
        if hi < lo:
            raise ValueError("cpus %r: range %s runs backwards" % (text, part))
        cpus.extend(range(lo, hi + 1))
    return cpus


def _select_cpus(cpus, machine):
    """The CPUs to measure: those given, or (as the pmugate command) the online CPUs this
    process may run on; in job mode only the job's."""
    if machine["scoped"] and not machine["scope_cpus"]:
        raise NoGrant(errno.EACCES, "no-grant", "you have no job on this machine that pmugate may measure: %s" % (
            machine["scope_reason"] or "no grant"), "choosing the CPUs")
    if cpus is None:
        mine = os.sched_getaffinity(0)
        cpus = [c["cpu"] for c in machine["cpus"] if c["online"] and c["cpu"] in mine]
        if not cpus:
            raise ValueError("none of the CPUs this process may run on is online on the daemon's machine; "
                             "give cpus=")
    elif isinstance(cpus, str):
        cpus = _parse_cpulist(cpus)
    elif isinstance(cpus, int):
        cpus = [cpus]
    else:
        cpus = [int(c) for c in cpus]
    if machine["scoped"]:
        outside = [c for c in cpus if c not in set(machine["scope_cpus"])]
        if outside:
            raise OutOfScope(errno.EPERM, "out-of-scope", "CPUs %s are not in your job (job %s has CPUs %s)" % (
                outside, machine["scope_job"], machine["scope_cpus"]), "choosing the CPUs")
    return cpus


class measure:
    """A measurement of cpus while a block (with), a function (measured) or the time between
    start() and stop() runs.

    group: a group name (`pmugate list groups`, default "topdown-l2"); events: a comma-separated
    list or a list of event names (Intel names with modifiers, rHEX), counted with the group's
    or alone (group=None); cpus: a list, a CPU list text ("0-3") or None for the online CPUs
    this process may run on (as `pmugate stat` without -c); user, kernel: which rings to count
    (both by default); interval: seconds between interval results (m.intervals, one
    DataFrame row per interval and CPU), None for none; socket: the daemon's socket.

    The counters count on the CPUs, whatever runs there: pin the work (os.sched_setaffinity)
    or measure the CPUs it runs on. A thread samples the counters while the block runs, so that
    long blocks stay exact."""

    def __init__(self, group=DEFAULT_GROUP, cpus=None, events=None, *, user=True, kernel=True, interval=None,
                 socket=None, reset_period=None, rotate_period=None):
        if not user and not kernel:
            raise ValueError("count at least one of user and kernel")
        if isinstance(events, (list, tuple)):
            events = ",".join(events)
        self.socket = socket
        self.machine = _pmugate.info(socket)
        self.cpus = _select_cpus(cpus, self.machine)
        flags = 0 if user and kernel else _pmugate.MEASURE_USER if user else _pmugate.MEASURE_KERNEL
        self._m = _pmugate.Measurement(self.cpus, group=group, events=events, flags=flags, socket=socket,
                                       interval=interval or 0.0, reset_period=reset_period or 0.0,
                                       rotate_period=rotate_period or 0.0)
        described = self._m.describe()
        self.model = described["model"]
        self.group = described["group"]
        self.description = described["description"]
        self.event_sets = described["event_sets"]
        self.poll_interval = described["poll_interval"]     # seconds between the thread's samples
        self._result = None
        self._intervals = None
        self.withheld = ""
        self.running = False

    def start(self):
        self._m.start()
        self.running = True
        return self

    def stop(self):
        """Takes a last sample, puts the registers back and releases the CPUs. When the daemon
        ended the lease meanwhile (LeaseLost), the result still covers the time until then."""
        error = None
        try:
            self._m.stop()
        except Error as e:
            error = e
        finally:
            self.running = False
        try:
            self._result = Result(self._m.result())
            self._intervals = [Result(d) for d in self._m.intervals()]
            self.withheld = self._m.describe()["withheld"]
        finally:
            self._m.close()
        if error is not None:
            raise error

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.stop()
        else:
            # the block's exception is the one to see; the registers are put back either way
            try:
                self.stop()
            except Error:
                pass
        return False

    @property
    def result(self):
        """The Result of the whole measurement (while it runs: so far)."""
        if self._result is not None:
            return self._result
        if not self.running:
            raise RuntimeError("the measurement has not started")
        return Result(self._m.result())

    @property
    def intervals(self):
        """A Result per interval (measure(interval=...)); the last one may be shorter."""
        if self._intervals is not None:
            return self._intervals
        return [Result(d) for d in self._m.intervals()]

    def dataframe(self, counts=True, aggregate=False):
        """A pandas DataFrame: one row per CPU, or with intervals one row per interval and CPU
        (columns time and elapsed: the interval's end and length in seconds); columns cpu,
        package, the metrics (in their units) and, with counts, the events' counts. aggregate
        adds the sum over CPUs as cpu -1. Needs pandas."""
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError("m.dataframe() needs pandas (Debian: python3-pandas); "
                              "m.result has the same values as numpy arrays") from e
        spans = self.intervals if self.intervals else [self.result]
        records = []
        for span in spans:
            rows = span.rows("cpu") + (span.rows("aggregate") if aggregate else [])
            for rec in rows:
                if self.intervals:
                    rec = dict({"time": span.start + span.elapsed, "elapsed": span.elapsed}, **rec)
                if not counts:
                    rec = {k: v for k, v in rec.items() if k not in span.counts}
                records.append(rec)
        df = pd.DataFrame.from_records(records)
        df.attrs["units"] = dict(spans[0].units)
        df.attrs["event_units"] = dict(spans[0].event_units)
        df.attrs["group"] = self.group
        df.attrs["model"] = self.model
        return df

    def close(self):
        self._m.close()


def measured(group=DEFAULT_GROUP, cpus=None, events=None, **kwargs):
    """A decorator measuring every call of a function (see measure for the arguments): the
    function returns what it returns, and function.measurement is the last call's measure
    (function.result its Result). @pmugate.measured works without arguments too."""
    if callable(group):
        return measured()(group)

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kw):
            m = measure(group=group, cpus=cpus, events=events, **kwargs)
            with m:
                value = fn(*args, **kw)
            wrapper.measurement = m
            wrapper.result = m.result
            return value
        wrapper.measurement = None
        wrapper.result = None
        return wrapper
    return decorate
