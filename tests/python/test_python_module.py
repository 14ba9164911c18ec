#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The pmugate Python module through the real daemon on the simulated PMU, run as an
unprivileged user: info and the lists against the CLI's, a measurement's metrics against
`pmugate stat -O json` and the profile, the numpy arrays, NaN with its reason, intervals, the
decorator, the DataFrame, markers under `pmugate stat -m`, the exceptions with the daemon's
reason (daemon down, unknown group, job mode without a grant, a user without a role), and the
example notebook executed with Debian's jupyter nbconvert."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pmugatetest as t
from pmugatetest import Sim, STENCIL, SOLVER
from pythontest import PYTHON, PYTHON_DIR, sanitizer_env
from test_topdown import L1, L2, bound, expected

NOTEBOOK = os.path.join(t.SOURCE, "docs", "examples", "pmugate.ipynb")
# what every Python process of the tests needs (a sanitizer build's runtime preloaded)
SAN_ENV = sanitizer_env()
USER = t.UNPRIVILEGED_UID
EXACT = 1e-6


def py(sim_or_socket, code, uid=USER, groups=(t.USER_GID,), env=None, timeout=120):
    """Runs Python code as an unprivileged user against a daemon; its last line of output is
    JSON. Returns (exit status, the decoded JSON or None, stdout, stderr)."""
    socket = sim_or_socket if isinstance(sim_or_socket, str) else sim_or_socket.daemon.socket
    e = dict(SAN_ENV, PYTHONPATH=PYTHON_DIR, PMUGATE_GROUP_PATH=t.GROUPS, PATH="/usr/bin:/bin",
             HOME="/nonexistent")
    e.update(env or {})
    rc, out, err = t.run_cli([PYTHON, "-c", textwrap.dedent(code)], socket, uid=uid, gid=uid, groups=groups,
                             env=e, timeout=timeout)
    doc = None
    lines = out.strip().splitlines()
    if lines:
        try:
            doc = json.loads(lines[-1])
        except ValueError:
            pass
    return rc, doc, out, err


def test_info_and_lists(tap):
    sim = Sim("spr", rules=[("0-7", STENCIL)])
    try:
        rc, doc, out, err = py(sim, """
            import json, pmugate
            i = pmugate.info()
            print(json.dumps({"info": i, "groups": [g["name"] for g in pmugate.list_groups()],
                              "metrics": {g["name"]: [m["name"] for m in g["metrics"]] for g in pmugate.list_groups()},
                              "events": [e["name"] for e in pmugate.list_events()],
                              "loads": [e["name"] for e in pmugate.list_events(pattern="all_loads")]}))
            """)
        if not tap.ok(rc == 0 and doc, "info() and the lists work as an unprivileged user", out + err):
            return
        i = doc["info"]
        tap.eq((i["model_key"], i["backend"], i["simulated"], i["role"], i["uid"]), ("spr", "sim", True, "user", USER),
               "info(): model, backend, simulated, the caller's role and uid")
        tap.eq(i["counting"]["via"], "msr", "info(): how the node counts")
        tap.eq([c["cpu"] for c in i["cpus"]], list(range(8)), "info(): every CPU")
        rc, out, err = sim.run("info", "--json", uid=USER, gid=USER, groups=[t.USER_GID])
        cli = json.loads(out)
        tap.eq((i["model_key"], i["model"], i["backend"], i["counting"]["via"]),
               (cli["cpu"]["key"], cli["cpu"]["model"], cli["backend"], cli["counting"]["via"]),
               "info() says what `pmugate info --json` says")
        rc, out, err = sim.run("list", "groups", uid=USER, gid=USER, groups=[t.USER_GID])
        cli_groups = [l.split()[0] for l in out.splitlines() if l.startswith("  ")]
        tap.eq(doc["groups"], cli_groups, "list_groups() gives the groups `pmugate list groups` gives, in order")
        tap.ok("tma_retiring" in doc["metrics"]["topdown-l2"], "list_groups(): each group's metrics")
        rc, out, err = sim.run("list", "events", uid=USER, gid=USER, groups=[t.USER_GID])
        cli_events = [l.split()[0] for l in out.splitlines() if l.startswith("  ")]
        tap.eq(doc["events"], cli_events, "list_events() gives the %d events `pmugate list events` gives" %
               len(cli_events))
        tap.ok(doc["loads"] and len(doc["loads"]) < len(doc["events"]), "list_events(pattern=) selects",
               doc["loads"])
    finally:
        sim.stop()


MEASURE = """
    import json, time, math, pmugate
    with pmugate.measure(group="topdown-l2", cpus="0-1") as m:
        time.sleep(0.5)
    r = m.result
    import numpy as np
    print(json.dumps({
        "types": [type(r.metrics["tma_retiring"]).__name__, str(r.metrics["tma_retiring"].dtype),
                  list(r.metrics["tma_retiring"].shape), type(r.counts[r.events[0]]).__name__],
        "cpus": r.cpus.tolist(), "units": r.units, "events": r.events,
        "aggregate": r.aggregate.metrics, "counts": r.aggregate.counts,
        "per_cpu": {k: v.tolist() for k, v in r.metrics.items()},
        "group": m.group, "model": m.model, "elapsed": r.elapsed}))
    """


def test_measure_equals_cli(tap):
    sim = Sim("spr", rules=[("0-7", STENCIL)])
    try:
        rc, doc, out, err = py(sim, MEASURE)
        if not tap.ok(rc == 0 and doc, "measure(group='topdown-l2') runs as an unprivileged user", out + err):
            return
        tap.eq(doc["types"], ["ndarray", "float64", [2], "ndarray"], "metrics and counts are numpy arrays, one "
               "value per CPU")
        tap.eq((doc["group"], doc["model"], doc["cpus"]), ("topdown-l2", "spr", [0, 1]), "the group, model and CPUs")
        tap.ok(all(doc["units"][m] == "%" for m in L1 + L2), "TopDown's unit is '%', as the CLI's", doc["units"])
        tap.ok(0.45 < doc["elapsed"] < 5, "the result spans the block (%.3f s)" % doc["elapsed"])
        cli = sim.json("stat", "-g", "topdown-l2", "-c", "0-1", "-S", "0.5s", "-O", "json")
        want = expected(STENCIL)
        metrics = L1 + L2
        got = {m: doc["aggregate"][m] / 100 for m in metrics}
        worst_profile = max(abs(got[m] - want[m]) / bound("spr", m) for m in metrics)
        tap.ok(worst_profile <= 1, "Python's TopDown equals the profile within the bound (worst %.2f of it)" %
               worst_profile, "\n".join("%s %.6f %.6f" % (m, got[m], want[m]) for m in metrics))
        worst_cli = max(abs(got[m] - cli["aggregate"]["metrics"][m]) / (2 * bound("spr", m)) for m in metrics)
        tap.ok(worst_cli <= 1, "and the CLI's `pmugate stat -g topdown-l2 -O json` within the bound (worst %.2f "
               "of it)" % worst_cli, "\n".join("%s py %.6f cli %.6f" % (m, got[m], cli["aggregate"]["metrics"][m])
                                               for m in metrics))
        tap.eq(sorted(doc["events"]), sorted(cli["aggregate"]["counts"]), "the same events as the CLI")
        for k, cpu in enumerate((0, 1)):
            c = [x for x in cli["per_cpu"] if x["cpu"] == cpu][0]
            worst = max(abs(doc["per_cpu"][m][k] / 100 - c["metrics"][m]) / (2 * bound("spr", m)) for m in metrics)
            tap.ok(worst <= 1, "CPU %d: per-CPU arrays equal the CLI's per_cpu within the bound" % cpu)
        slots = doc["counts"].get("TOPDOWN.SLOTS") or doc["counts"].get("topdown-slots")
        tap.ok(slots and slots > 0, "the aggregate carries the counts", sorted(doc["counts"]))
    finally:
        sim.stop()


def test_ipc_nan_and_intervals(tap):
    # CPU 1 never runs: no cycles, so its IPC is undefined (NaN, with the reason)
    idle = dict(SOLVER, utilization=0.0)
    sim = Sim("spr", rules=[("0", STENCIL), ("1-7", idle)])
    try:
        rc, doc, out, err = py(sim, """
            import json, math, time, pmugate
            with pmugate.measure(group="ipc", cpus=[0, 1], interval=0.1) as m:
                time.sleep(0.45)
            r = m.result
            ipc = r.metrics["ipc"]
            print(json.dumps({"ipc0": ipc[0], "nan1": math.isnan(ipc[1]), "reason1": r.reason("ipc", cpu=1),
                              "reason0": r.reason("ipc", cpu=0), "agg": r.aggregate.metrics["ipc"],
                              "intervals": [(i.elapsed, i.metrics["ipc"][0]) for i in m.intervals]}))
            """)
        if not tap.ok(rc == 0 and doc, "measure(group='ipc', interval=0.1) runs", out + err):
            return
        tap.ok(abs(doc["ipc0"] - STENCIL["ipc"]) < EXACT, "CPU 0's IPC is the profile's %.2f" % STENCIL["ipc"],
               doc["ipc0"])
        tap.ok(doc["nan1"], "an idle CPU's IPC is NaN")
        tap.ok(doc["reason1"] and "zero" in doc["reason1"], "and reason() says why", doc["reason1"])
        tap.eq(doc["reason0"], None, "a metric with a value has no reason")
        n = len(doc["intervals"])
        tap.ok(4 <= n <= 6, "intervals of 0.1 s over 0.45 s: %d results" % n, doc["intervals"])
        tap.ok(all(abs(v - STENCIL["ipc"]) < EXACT for _, v in doc["intervals"]), "each interval's IPC is the "
               "profile's", doc["intervals"])
        tap.ok(all(0.05 < e < 0.2 for e, _ in doc["intervals"][:-1]), "each full interval lasts about 0.1 s",
               doc["intervals"])
    finally:
        sim.stop()


def test_packages(tap):
    sim = Sim("spr", sockets=2, cores=2, rules=[("0-7", STENCIL)])
    try:
        rc, doc, out, err = py(sim, """
            import json, math, time, pmugate
            with pmugate.measure(group="ENERGY", cpus="0-7") as m:
                time.sleep(0.3)
            r = m.result
            print(json.dumps({"units": r.event_units, "packages": [[p.package, p.metrics["power_package"],
                                                                    p.counts["PWR_PKG_ENERGY"]] for p in r.packages],
                              "cpu_nan": math.isnan(r.metrics["power_package"][0]),
                              "reason": r.reason("power_package", cpu=0),
                              "aggregate": r.aggregate.metrics["power_package"]}))
            """)
        if not tap.ok(rc == 0 and doc, "measure(group='ENERGY') runs", out + err):
            return
        tap.eq((doc["units"]["PWR_PKG_ENERGY"], doc["units"]["INST_RETIRED.ANY"]), ("J", ""),
               "event_units: energy in joules, counts without a unit")
        tap.eq([p[0] for p in doc["packages"]], [0, 1], "a row per package")
        cli = sim.json("stat", "-g", "ENERGY", "-c", "0-7", "-S", "0.3s", "-O", "json")
        want = {p["package"]: p["metrics"]["power_package"] for p in cli["per_package"]}
        tap.ok(all(abs(p[1] / want[p[0]] - 1) < 1e-2 for p in doc["packages"]),
               "each package's power equals the CLI's per_package within 1 %", (doc["packages"], want))
        tap.ok(abs(doc["aggregate"] - sum(p[1] for p in doc["packages"])) < 1e-6 * doc["aggregate"],
               "the aggregate is the node's: the packages' sum")
        tap.ok(doc["cpu_nan"] and "per package" in (doc["reason"] or ""),
               "a package quantity is NaN per CPU, and reason() points at the package rows", doc["reason"])
    finally:
        sim.stop()


def test_decorator_and_dataframe(tap):
    sim = Sim("spr", rules=[("0-7", STENCIL)])
    try:
        rc, doc, out, err = py(sim, """
            import json, time, pmugate
            @pmugate.measured(group="ipc", cpus=[2, 3])
            def work(x):
                time.sleep(0.2)
                return x * 2
            value = work(21)
            r = work.result
            try:
                import pandas
                df = work.measurement.dataframe()
                frame = {"columns": list(df.columns), "cpus": df["cpu"].tolist(), "ipc": df["ipc"].tolist(),
                         "units": df.attrs["units"]}
            except ImportError:
                frame = None
            print(json.dumps({"value": value, "ipc": r.aggregate.metrics["ipc"], "cpus": r.cpus.tolist(),
                              "name": work.__name__, "frame": frame}))
            """)
        if not tap.ok(rc == 0 and doc, "@pmugate.measured runs", out + err):
            return
        tap.eq((doc["value"], doc["name"]), (42, "work"), "the decorated function returns its value, keeps its name")
        tap.ok(abs(doc["ipc"] - STENCIL["ipc"]) < EXACT and doc["cpus"] == [2, 3],
               "function.result: the IPC of the call on the CPUs asked for", doc)
        have_pandas = importlib.util.find_spec("pandas") is not None
        if not have_pandas:
            tap.skip("m.dataframe()", "pandas is not installed (Debian: python3-pandas)")
        else:
            f = doc["frame"]
            tap.ok(f is not None and f["cpus"] == [2, 3] and "ipc" in f["columns"] and "INST_RETIRED.ANY" in
                   f["columns"], "dataframe(): a row per CPU with metrics and counts", f)
            tap.ok(f and all(abs(v - STENCIL["ipc"]) < EXACT for v in f["ipc"]), "its values are the result's")
        rc, doc, out, err = py(sim, """
            import json, time, pmugate
            with pmugate.measure(group=None, events=["INST_RETIRED.ANY", "cycles"], cpus=[1], user=True,
                                 kernel=False) as m:
                time.sleep(0.1)
            print(json.dumps([m.result.events, m.result.metric_names, m.result.aggregate.counts]))
            """)
        tap.ok(rc == 0 and doc and doc[1] == [] and len(doc[0]) == 2 and
               abs(doc[2]["INST_RETIRED.ANY"] / doc[2][doc[0][1]] - STENCIL["ipc"]) < EXACT,
               "events alone (perf's generic names too, user mode only): their counts, no metrics", (doc, err))
        rc, doc, out, err = py(sim, """
            import json, time, pmugate
            m = pmugate.measure(group="ipc", cpus=[0]).start()
            time.sleep(m.poll_interval + 0.2)
            partial = m.result
            time.sleep(0.2)
            m.stop()
            print(json.dumps([partial.elapsed, partial.aggregate.metrics["ipc"], m.result.elapsed,
                              m.result.aggregate.metrics["ipc"]]))
            """)
        tap.ok(rc == 0 and doc and doc[0] < doc[2] and abs(doc[1] - STENCIL["ipc"]) < EXACT and
               abs(doc[3] - STENCIL["ipc"]) < EXACT, "start()/stop(): m.result while it runs gives the counts so far, "
               "then the whole", (doc, err))
        if have_pandas:
            rc, doc, out, err = py(sim, """
                import json, time, pmugate
                with pmugate.measure(group="ipc", cpus="0-1", interval=0.1) as m:
                    time.sleep(0.35)
                df = m.dataframe(aggregate=True)
                print(json.dumps({"columns": list(df.columns)[:4], "rows": len(df), "n": len(m.intervals),
                                  "cpus": sorted(set(df["cpu"].tolist()))}))
                """)
            tap.ok(rc == 0 and doc and doc["columns"] == ["time", "elapsed", "cpu", "package"] and
                   doc["rows"] == 3 * doc["n"] and doc["cpus"] == [-1, 0, 1],
                   "with intervals: a row per interval and CPU (and the aggregate as cpu -1)", (doc, err))
    finally:
        sim.stop()


def test_markers(tap):
    sim = Sim("spr", rules=[("0-7", STENCIL)])
    try:
        prog = os.path.join(sim.dir, "marked.py")
        with open(prog, "w") as f:
            f.write(textwrap.dedent("""
                import os, time
                import pmugate.marker as marker
                os.sched_setaffinity(0, {0})
                for _ in range(3):
                    with marker.region("py_solve"):
                        time.sleep(0.03)
                marker.start("py_io")
                time.sleep(0.02)
                marker.stop("py_io")
                print("active", marker.active(), marker.read_mode())
                """))
        out_dir = os.path.join(sim.dir, "out")
        os.makedirs(out_dir)
        os.chown(out_dir, USER, USER)
        report = os.path.join(out_dir, "marker.json")
        rc, out, err = sim.run("stat", "-m", "-g", "ipc", "-C", "0", "-O", "json", "-o", report, "--", PYTHON, prog,
                               uid=USER, gid=USER, groups=[t.USER_GID],
                               env=dict(SAN_ENV, PYTHONPATH=PYTHON_DIR, PATH="/usr/bin:/bin"))
        if not tap.ok(rc == 0 and os.path.exists(report), "pmugate stat -m runs a Python program with markers",
                      out + err):
            return
        with open(report) as f:
            doc = json.load(f)
        regions = {r["name"]: r for r in doc["regions"]}
        tap.eq(sorted(regions), ["py_io", "py_solve"], "the runner reports the Python program's regions")
        tap.eq(regions["py_solve"]["aggregate"]["calls"], 3, "the context manager counted each call")
        tap.ok(abs(regions["py_solve"]["aggregate"]["metrics"]["ipc"] / STENCIL["ipc"] - 1) < 2e-3,
               "a region's IPC is the profile's", regions["py_solve"]["aggregate"])
        tap.ok("active True daemon" in out, "marker.active() and read_mode() under the runner", out)
        rc, doc, out, err = py(sim, """
            import json, pmugate.marker as marker
            marker.start("alone"); marker.stop("alone")
            print(json.dumps([marker.active(), marker.read_mode()]))
            """)
        tap.eq((rc, doc), (0, [False, "off"]), "without a runner markers are off and cost nothing")
    finally:
        sim.stop()


def test_errors(tap):
    sim = Sim("spr", rules=[("0-7", STENCIL)])
    try:
        rc, doc, out, err = py(sim, """
            import json, pmugate
            try:
                pmugate.measure(group="NO_SUCH_GROUP", cpus=[0])
                print(json.dumps(None))
            except pmugate.Error as e:
                print(json.dumps([type(e).__name__, isinstance(e, pmugate.UnknownGroup), e.reason, str(e)]))
            """)
        tap.ok(rc == 0 and doc and doc[0] == "UnknownGroup" and "NO_SUCH_GROUP" in doc[2] and "pmugate list groups"
               in doc[2], "an unknown group raises UnknownGroup with the reason naming it", (doc, err))
        rc, doc, out, err = py(sim, """
            import json, pmugate
            try:
                pmugate.info()
                print(json.dumps(None))
            except pmugate.Error as e:
                print(json.dumps([type(e).__name__, e.name, e.reason]))
            """, groups=())
        tap.ok(rc == 0 and doc and doc[0] == "NotAuthorized" and doc[2], "a user without a role gets NotAuthorized "
               "with the daemon's reason", (doc, err))
        socket = sim.daemon.socket
    finally:
        sim.stop()
    rc, doc, out, err = py(socket, """
        import json, pmugate
        try:
            pmugate.measure(group="ipc", cpus=[0])
            print(json.dumps(None))
        except pmugate.DaemonUnavailable as e:
            print(json.dumps([type(e).__name__, e.errno, e.reason, str(e)]))
        """)
    tap.ok(rc == 0 and doc and doc[0] == "DaemonUnavailable" and socket in doc[3] and doc[2],
           "the daemon down: DaemonUnavailable naming the socket and why", (doc, err))

    d = t.workdir()
    conf = os.path.join(d, "pmugate.conf")
    t.write_config(conf, extra="mode = job\n")
    sim = Sim("spr", config=conf, rules=[("0-7", STENCIL)])
    try:
        rc, doc, out, err = py(sim, """
            import json, pmugate
            i = pmugate.info()
            try:
                pmugate.measure(group="ipc")
                print(json.dumps(None))
            except pmugate.Error as e:
                print(json.dumps([type(e).__name__, e.name, e.reason, i["scope_reason"], i["mode"]]))
            """)
        tap.ok(rc == 0 and doc and doc[0] == "NoGrant" and doc[4] == "job" and doc[3] and doc[3] in doc[2],
               "job mode without a grant: NoGrant carrying the daemon's reason", (doc, err))
        rc, _, _ = t.run_cli([t.PMUGATECTL, "grant", "--job", "7", "--uid", str(USER), "--cpus", "0-1"],
                             sim.daemon.socket)
        rc, doc, out, err = py(sim, """
            import json, time, pmugate
            with pmugate.measure(group="ipc", cpus=[0, 1]) as m:
                time.sleep(0.1)
            print(json.dumps([m.result.aggregate.metrics["ipc"], pmugate.info()["scope_job"]]))
            """)
        tap.ok(rc == 0 and doc and abs(doc[0] - STENCIL["ipc"]) < EXACT and doc[1] == "7",
               "with a grant the job's CPUs measure", (doc, err))
        # a grant revoked while the block runs: LeaseLost with the daemon's reason, and the
        # result up to then
        code = textwrap.dedent("""
            import json, sys, time, pmugate
            m = pmugate.measure(group="ipc", cpus=[0, 1]).start()
            time.sleep(m.poll_interval + 0.3)    # the sampling thread sampled
            print("started", flush=True)
            sys.stdin.readline()
            try:
                m.stop()
                print(json.dumps(None))
            except pmugate.Error as e:
                print(json.dumps([type(e).__name__, e.name, e.reason, m.result.aggregate.metrics["ipc"]]))
            """)
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR, PMUGATE_GROUP_PATH=t.GROUPS,
                   PMUGATE_SOCKET=sim.daemon.socket, PATH="/usr/bin:/bin", **SAN_ENV)
        child = t.spawn([PYTHON, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        text=True, env=env, preexec_fn=t.as_user(USER, USER, [t.USER_GID]))
        try:
            started = child.stdout.readline()
            rc, _, _ = t.run_cli([t.PMUGATECTL, "revoke", "--job", "7"], sim.daemon.socket)
            out, err = child.communicate("\n", timeout=60)
        finally:
            t.end(child)
        doc = json.loads(out.strip().splitlines()[-1]) if out.strip() else None
        tap.ok(started.startswith("started") and doc and doc[0] == "LeaseLost" and doc[1] == "revoked" and doc[2]
               and abs(doc[3] - STENCIL["ipc"]) < EXACT,
               "a grant revoked mid-measurement: LeaseLost with the daemon's reason, the result until then kept",
               (started, doc, err))
        rc, _, _ = t.run_cli([t.PMUGATECTL, "grant", "--job", "7", "--uid", str(USER), "--cpus", "0-1"],
                             sim.daemon.socket)
        rc, doc, out, err = py(sim, """
            import json, pmugate
            try:
                pmugate.measure(group="ipc", cpus=[4])
                print(json.dumps(None))
            except pmugate.Error as e:
                print(json.dumps([type(e).__name__, e.reason]))
            """)
        tap.ok(rc == 0 and doc and doc[0] == "OutOfScope" and "job 7" in doc[1],
               "a CPU outside the job: OutOfScope naming the job", (doc, err))
    finally:
        sim.stop()
        shutil.rmtree(d, ignore_errors=True)


def test_notebook(tap):
    nbconvert = shutil.which("jupyter-nbconvert", path="/usr/bin:/bin")
    if not nbconvert:
        tap.skip("the example notebook", "jupyter-nbconvert is not installed (Debian: jupyter-nbconvert, "
                 "python3-ipykernel; contrib/install-deps.sh installs them)")
        return
    sim = Sim("spr", rules=[("0-7", STENCIL)])
    try:
        home = os.path.join(sim.dir, "home")
        os.makedirs(home)
        os.chown(home, USER, USER)
        out_nb = os.path.join(home, "executed.ipynb")
        env = {**SAN_ENV, "PYTHONPATH": PYTHON_DIR, "HOME": home, "PATH": "/usr/bin:/bin",
               "JUPYTER_RUNTIME_DIR": os.path.join(home, "runtime"), "MPLCONFIGDIR": os.path.join(home, "mpl"),
               "JUPYTER_PLATFORM_DIRS": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
        rc, out, err = t.run_cli(
            [nbconvert, "--to", "notebook", "--execute", "--ExecutePreprocessor.timeout=240",
             "--ExecutePreprocessor.kernel_name=python3", "--output", out_nb, NOTEBOOK],
            sim.daemon.socket, uid=USER, gid=USER, groups=[t.USER_GID], env=dict(env, PMUGATE_GROUP_PATH=t.GROUPS),
            timeout=280)
        if not tap.ok(rc == 0 and os.path.exists(out_nb), "jupyter nbconvert --execute runs the example notebook "
                      "against the daemon", out + err):
            return
        with open(out_nb) as f:
            nb = json.load(f)
        outputs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
        tap.eq([o for o in outputs if o.get("output_type") == "error"], [], "no cell raised")
        tap.ok(any("image/png" in o.get("data", {}) for o in outputs), "the notebook plots TopDown (a PNG output)")
        text = "".join("".join(o.get("text", "")) for o in outputs if o.get("output_type") == "stream")
        tap.ok("simulated" in text and "spr" in text, "it shows the machine it measured", text[:400])
        marks = [l for l in text.splitlines() if l.startswith("tma_retiring")]
        tap.ok(marks and abs(float(marks[0].split()[1]) / 100 - STENCIL["retiring"]) < bound("spr", "tma_retiring")
               + 1e-3, "its Retiring is the profile's", marks)
    finally:
        sim.stop()


if __name__ == "__main__":
    tap = t.Tap()
    if SAN_ENV is None:
        tap.skip("the Python module", "this sanitizer build's extension needs the sanitizer runtime loaded "
                 "first, and it links none that can be preloaded (clang's is in executables only)")
        print("1..%d" % tap.n)
        sys.exit(0)
    sys.exit(tap.run([test_info_and_lists, test_measure_equals_cli, test_ipc_nan_and_intervals, test_packages,
                      test_decorator_and_dataframe, test_markers, test_errors, test_notebook]))
