#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate plot on the output of every group of a model, through the real daemon and CLI: each
group's -I timeline as CSV and as a json-doc document, plotted without a traceback, and what
each figure holds read back from the PNG's "Panels" text (titles, axis labels, the number of
values each series and heatmap drew, colour limits): memory bandwidth and power per socket,
heatmaps of package metrics per socket, fractions on a fixed 0-100 % scale, other heatmaps
over at least a minimum span, level-2 TopDown colours of their level-1 parent's hue, and a
title naming the model, the CPUs and the command."""

import colorsys
import json
import os
import sys

import pmugatetest as t
from pmugatetest import SOLVER, STENCIL, Sim
from test_cli import png_info

CPUS = "0-3"
SOCKET_UNITS = {"MBytes/s": "Memory bandwidth per socket", "W": "Power per socket"}
# Groups whose per-socket timelines must be drawn (so that the checks below cannot pass on a
# file that has none): memory bandwidth and power.
MUST_HAVE_SOCKETS = {"spr": {"MEM": "MBytes/s", "MEM_DP": "MBytes/s", "MEM_SP": "MBytes/s", "ENERGY": "W"},
                     "zen4": {"MEM": "MBytes/s", "ENERGY": "W"}}
MIN_SPAN = 0.2


def sim_for(model):
    extra = "[imc]\nread_gbps = 40\nwrite_gbps = 15\n"
    kw = {"cores_per_ccx": 2} if model.startswith("zen") else {}
    return Sim(model, sockets=2, cores=2, smt=False, rules=[("0-1", STENCIL), ("2-3", SOLVER)], extra=extra, **kw)


def groups_of(tap, sim):
    rc, out, err = sim.run("list", "groups")
    names = [line.split()[0] for line in out.splitlines()[1:] if line.strip()]
    tap.ok(rc == 0 and len(names) >= 8, "%s: pmugate list groups names the model's groups" % sim.model, out + err)
    return names


def plot(tap, sim, path, *args):
    png = path + ".png"
    rc, out, err = t.run_cli([t.PMUGATE, "plot", "-o", png] + list(args) + [path], sim.daemon.socket)
    if not tap.ok(rc == 0 and out.strip() == png and "Traceback" not in err,
                  "%s: pmugate plot %s draws it" % (os.path.basename(path), " ".join(args)), err):
        return None, None
    _, _, text = png_info(png)
    return text, json.loads(text["Panels"])


def socket_expectations(doc):
    """{unit: metrics} of the metrics a json-doc holds per socket in a unit drawn per socket."""
    units = {m["name"]: m["unit"] for m in doc["intervals"][0]["metrics"]}
    want = {}
    for name, unit in units.items():
        if unit in SOCKET_UNITS and any(p["metrics"].get(name) is not None
                                        for i in doc["intervals"] for p in i.get("per_package", [])):
            want.setdefault(unit, set()).add(name)
    return want


def hue(color):
    r, g, b = (int(color[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return colorsys.rgb_to_hsv(r, g, b)[0]


def check_figure(tap, name, text, panels, doc, fmt, model, group):
    title = text.get("Title", "")
    model_ok = ("(%s, simulated PMU)" % model in title and "-g %s" % group in title) if fmt == "json" else \
        "model not recorded" in title
    tap.ok(model_ok and "CPUs %s" % CPUS in title and ("no command" in title if fmt == "json" else
                                                       "command not recorded" in title),
           "%s: the title names the model, the CPUs and the command (or says the CSV records none)" % name, title)
    bad = [p["title"] for p in panels if not p["title"] or p["xlabel"] != "seconds" or not p["ylabel"]]
    tap.eq(bad, [], "%s: every panel has a title, a time axis and a labelled y axis" % name)
    empty = [(p["title"], s["label"]) for p in panels for s in p["series"] if s["points"] == 0]
    heat = panels[-1].get("heatmap", {})
    tap.ok(not empty and heat.get("finite", 0) > 0 and heat["finite"] == heat["cells"],
           "%s: every series drew values and the heatmap has a value in every cell (%s)" % (
               name, heat), empty)
    want = socket_expectations(doc)
    for unit, metrics in want.items():
        panel = [p for p in panels if p["title"] == SOCKET_UNITS[unit]]
        labels = [s["label"] for s in panel[0]["series"]] if panel else []
        tap.ok(len(panel) == 1 and panel[0]["ylabel"] == unit and
               len(labels) == 2 * len(metrics) and {l.split(",")[0] for l in labels} == {"socket 0", "socket 1"},
               "%s: %s, a line per socket for each of %s" % (name, SOCKET_UNITS[unit], ", ".join(sorted(metrics))),
               panels)
    if group in MUST_HAVE_SOCKETS.get(model, {}):
        tap.ok(MUST_HAVE_SOCKETS[model][group] in want, "%s: has its per-socket timeline" % name, want)
    td = [p for p in panels if p["title"].startswith("TopDown")]
    if group.startswith("topdown"):
        tap.ok(len(td) == (1 if group == "topdown-l1" else 2) and
               all(p["ylabel"] == "% of pipeline slots" and len(p["series"]) >= 4 for p in td) and
               heat["clim"] == [0.0, 100.0],
               "%s: TopDown stacks in %% of slots, the tma_retiring heatmap on the fixed 0-100 %% scale" % name,
               panels)
    if group == "topdown-l2" and len(td) == 2:
        info = doc["intervals"][0]["metrics"]
        # CSV has no labels: the figure names a metric by its name made readable ("Light
        # operations" for tma_light_operations).
        def shown(name):
            return [m["label"] for m in info if m["name"] == name][0].lower() if fmt == "json" else \
                name.replace("tma_", "", 1).replace("_", " ").lower()
        parent_of = {shown(m["name"]): shown(m["parent"]) for m in info if m.get("parent")}
        l1 = {s["label"].lower(): hue(s["color"]) for s in td[0]["series"]}
        wrong = []
        for s in td[1]["series"]:
            parent = parent_of.get(s["label"].lower())
            if parent not in l1 or min(abs(hue(s["color"]) - l1[parent]), 1 - abs(hue(s["color"]) - l1[parent])) > 0.03:
                wrong.append((s["label"], parent))
        tap.ok(len(td[1]["series"]) >= 6 and not wrong, "%s: each level-2 colour has its level-1 parent's hue" % name,
               wrong)


def test_every_group(tap):
    try:
        import matplotlib  # noqa: F401 (only whether pmugate plot can run)
    except ImportError:
        tap.skip("pmugate plot of every group", "needs python3-matplotlib (contrib/install-deps.sh)")
        return
    for model in ("spr", "zen4"):
        sim = sim_for(model)
        try:
            for group in groups_of(tap, sim):
                paths = {}
                for fmt, suffix in (("csv", "csv"), ("json-doc", "json")):
                    paths[suffix] = os.path.join(sim.dir, "%s.%s" % (group, suffix))
                    # levels 3 and 4 rotate up to 14 event sets, 10 ms each, through an interval
                    deep = group in ("topdown-l3", "topdown-l4")
                    rc, _, err = sim.run("stat", "-g", group, "-c", CPUS, "-I", "200ms" if deep else "100ms",
                                         "-S", "0.7s" if deep else "0.35s", "-O", fmt, "-o", paths[suffix])
                    tap.ok(rc == 0, "%s %s: a -I %s timeline" % (model, group, fmt), err)
                with open(paths["json"]) as f:
                    doc = json.load(f)
                for fmt, path in paths.items():
                    text, panels = plot(tap, sim, path)
                    if text is not None:
                        check_figure(tap, "%s %s %s" % (model, group, fmt), text, panels, doc, fmt, model, group)
        finally:
            sim.stop()


def test_package_heatmap_and_scale(tap):
    try:
        import matplotlib  # noqa: F401 (only whether pmugate plot can run)
    except ImportError:
        tap.skip("pmugate plot -m mem_bandwidth", "needs python3-matplotlib (contrib/install-deps.sh)")
        return
    sim = sim_for("spr")
    try:
        for fmt, suffix in (("csv", "csv"), ("json-doc", "json")):
            path = os.path.join(sim.dir, "mem.%s" % suffix)
            rc, _, err = sim.run("stat", "-g", "MEM", "-c", CPUS, "-I", "100ms", "-S", "0.35s", "-O", fmt, "-o", path)
            tap.ok(rc == 0, "MEM as %s" % fmt, err)
            text, panels = plot(tap, sim, path, "-m", "mem_bandwidth")
            if text is None:
                continue
            heat = panels[-1].get("heatmap", {})
            lo, hi = heat.get("clim", [0.0, 0.0])
            tap.ok(panels[-1]["ylabel"] == "socket" and heat.get("cells") == heat.get("finite") and
                   heat.get("cells", 0) >= 2 * 3 and "mem_bandwidth over 2 sockets" in text["Description"],
                   "%s: -m mem_bandwidth, a package metric, is a heatmap per socket with a value in every cell" % fmt,
                   (panels[-1], text["Description"]))
            # The simulator's sockets move the same bandwidth, give or take noise: the colours
            # must not spread that noise over the whole map.
            tap.ok(hi - lo >= MIN_SPAN * (lo + hi) / 2 * 0.999 and lo >= 0,
                   "%s: the bandwidth's colours span at least %d %% of its size (%.1f to %.1f)" % (
                       fmt, 100 * MIN_SPAN, lo, hi))
            tap.ok(panels[-1]["title"].endswith("per socket"), "%s: the heatmap says it is per socket" % fmt,
                   panels[-1]["title"])
        path = os.path.join(sim.dir, "cmd.json")
        rc, _, err = sim.run("stat", "-g", "ENERGY", "-c", CPUS, "-I", "100ms", "-O", "json-doc", "-o", path,
                             "--", "sleep", "0.35")
        tap.ok(rc == 0, "ENERGY with a command", err)
        text, panels = plot(tap, sim, path)
        if text is not None:
            tap.ok("command: sleep 0.35" in text["Title"] and "Sapphire Rapids (spr" in text["Title"],
                   "the title names the command the CPUs ran", text["Title"])
    finally:
        sim.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_every_group, test_package_heatmap_and_scale]))
