# SPDX-License-Identifier: LGPL-2.1-or-later
"""A measurement's result as numpy arrays: per CPU, per package and the aggregate."""

import math

import numpy as np

# Metrics whose unit is "%" are fractions in libpmugate; like the pmugate command, the module
# gives them as percentages, so that a notebook and `pmugate stat -O json` show the same numbers.
PERCENT = "%"

NAN_UNDEFINED = ("undefined for this span: a quantity the formula divides by is zero (no cycles "
                 "or slots counted on that CPU, or a span too short)")


class Row:
    """One row of a result: a CPU's, a package's or the aggregate's counts and metrics (floats)."""

    def __init__(self, cpu, package, counts, raw, scale, metrics):
        self.cpu = cpu              # None for a package row or the aggregate
        self.package = package      # None for the aggregate
        self.counts = counts        # {event: count scaled to the span}
        self.raw = raw              # {event: what the counters counted}
        self.scale = scale          # {event: span / time counted; 1 when never multiplexed}
        self.metrics = metrics      # {metric: value in its unit; NaN when undefined}

    def __repr__(self):
        where = "aggregate" if self.package is None else (
            "package %d" % self.package if self.cpu is None else "cpu %d" % self.cpu)
        return "<pmugate.Row %s: %d counts, %d metrics>" % (where, len(self.counts), len(self.metrics))


class Result:
    """Counts and metrics of a span (the whole measurement or one interval).

    counts[event], raw[event], scale[event] and metrics[name] are numpy arrays with one value
    per measured CPU, in the order of cpus; aggregate is a Row of the sums over the CPUs (and
    its metrics computed from them); packages holds a Row per package when the group has
    package events (memory traffic, energy). units[name] is a metric's unit ("%" for
    percentages, "" for none), event_units[event] an event's ("" for counts, "J", "B"). A
    metric that cannot be computed is NaN; reason(name) says why."""

    def __init__(self, d):
        self.start = d["start"]
        self.elapsed = d["elapsed"]
        # seconds the counters counted, which rates divide by, and what timed them
        self.window = d["window"]
        self.window_clock = d["window_clock"]
        self.samples = d["samples"]
        self.resets = d["resets"]
        self.event_sets = d["event_sets"]
        self.events = list(d["events"])
        self.event_units = dict(zip(self.events, d["event_units"]))
        infos = d["metrics"]
        self.metric_names = [m["name"] for m in infos]
        self.units = {m["name"]: m["unit"] for m in infos}
        self.labels = {m["name"]: m["label"] for m in infos}
        self.levels = {m["name"]: m["level"] for m in infos}
        self.parents = {m["name"]: infos[m["parent"]]["name"] if m["parent"] >= 0 else None for m in infos}
        self.withheld = d["withheld"]
        factor = np.array([100.0 if m["unit"] == PERCENT else 1.0 for m in infos])
        per_cpu = d["per_cpu"]
        self.cpus = np.array([r["cpu"] for r in per_cpu], dtype=np.int64)
        self.cpu_packages = np.array([r["package"] for r in per_cpu], dtype=np.int64)
        n_events, n_metrics = len(self.events), len(infos)
        counts = np.array([r["counts"] for r in per_cpu], dtype=np.float64).reshape(len(per_cpu), n_events)
        raw = np.array([r["raw"] for r in per_cpu], dtype=np.uint64).reshape(len(per_cpu), n_events)
        scale = np.array([r["scale"] for r in per_cpu], dtype=np.float64).reshape(len(per_cpu), n_events)
        metrics = np.array([r["metrics"] for r in per_cpu],
                           dtype=np.float64).reshape(len(per_cpu), n_metrics) * factor
        self.counts = {e: counts[:, i] for i, e in enumerate(self.events)}
        self.raw = {e: raw[:, i] for i, e in enumerate(self.events)}
        self.scale = {e: scale[:, i] for i, e in enumerate(self.events)}
        self.metrics = {m: metrics[:, i] for i, m in enumerate(self.metric_names)}
        self.aggregate = self._row(d["aggregate"], factor, aggregate=True)
        self.packages = [self._row(p, factor, package_row=True) for p in d["per_package"]]

    def _row(self, r, factor, aggregate=False, package_row=False):
        return Row(None if aggregate or package_row else r["cpu"], None if aggregate else r["package"],
                   dict(zip(self.events, r["counts"])), dict(zip(self.events, r["raw"])),
                   dict(zip(self.events, r["scale"])),
                   {m: v * f for m, v, f in zip(self.metric_names, r["metrics"], factor)})

    def reason(self, metric, cpu=None):
        """Why metric is NaN in the aggregate (or on CPU cpu), or None when it has a value."""
        if metric not in self.metrics:
            raise KeyError("no metric %r in this result (it has %s)" % (metric, ", ".join(self.metric_names)))
        package_row = None
        if cpu is None:
            value = self.aggregate.metrics[metric]
        else:
            where = np.nonzero(self.cpus == cpu)[0]
            if len(where) == 0:
                raise KeyError("CPU %d was not measured" % cpu)
            value = self.metrics[metric][where[0]]
            package_row = next((p for p in self.packages if p.package == self.cpu_packages[where[0]]), None)
        if not math.isnan(value):
            return None
        if package_row is not None and not math.isnan(package_row.metrics[metric]):
            return ("counted per package, not per CPU (memory traffic, energy): see packages, package %d" %
                    package_row.package)
        if self.withheld:
            return "withheld by the daemon: " + self.withheld
        return NAN_UNDEFINED

    def __repr__(self):
        return "<pmugate.Result %.3f s, %d CPUs, %d events, %d metrics>" % (
            self.elapsed, len(self.cpus), len(self.events), len(self.metric_names))

    def rows(self, kind="cpu"):
        """Flat records (dicts) for a table: one per CPU ("cpu"), per package ("package") or
        the aggregate alone ("aggregate"); metrics first, then counts."""
        if kind == "cpu":
            out = []
            for i, cpu in enumerate(self.cpus):
                rec = {"cpu": int(cpu), "package": int(self.cpu_packages[i])}
                rec.update({m: float(self.metrics[m][i]) for m in self.metric_names})
                rec.update({e: float(self.counts[e][i]) for e in self.events})
                out.append(rec)
            return out
        picked = [self.aggregate] if kind == "aggregate" else self.packages if kind == "package" else None
        if picked is None:
            raise ValueError("kind is 'cpu', 'package' or 'aggregate'")
        out = []
        for row in picked:
            rec = {"cpu": -1, "package": -1 if row.package is None else row.package}
            rec.update(row.metrics)
            rec.update(row.counts)
            out.append(rec)
        return out
