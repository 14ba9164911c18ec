#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate-exporter on AMD Zen 4 and Zen 5 (simulated) through the real daemon: instructions,
cycles, IPC and pipeline utilization (TopDown) levels 1 and 2 counted with AMD's categories,
smt_contention the fifth level-1 class, against the simulator's profile; package energy
without a DRAM domain, memory traffic from the data fabric's DRAM beats; what AMD nodes do not
count (DRAM energy) has no series
and pmugate_exporter_quantity_counted says 0 for it, never a total of 0; a job's summary; the
shipped recording rules evaluated by promtool on the AMD node's series. (A model with no
known events at all, whose every quantity is uncounted: tests/exporter/test_exporter.c.)

Bounds: the exporter's TopDown comes from the Zen groups' metrics over 200 ms samples of a
multiplexed measurement (level 2 and the instructions take turns with level 1), on the
simulator's steady workload: FRACTION_BOUND (2/255, the exporter's usual bound) for every
class, 1e-3 relative for IPC and 10 % for power, as test_exporter.py."""

import json
import os
import shutil
import subprocess
import sys

import pmugatetest as t
import exportertest as x
from exportertest import one, series

# test_amd.py's HPC workload: smt_contention is AMD's fifth level-1 class.
HPC = dict(retiring=0.35, bad_speculation=0.06, frontend_bound=0.14, backend_bound=0.37, smt_contention=0.08,
           heavy_operations=0.04, branch_mispredicts=0.04, fetch_latency=0.09, memory_bound=0.25,
           ipc=1.5, utilization=0.95, user_fraction=0.9)
L1 = ("frontend_bound", "bad_speculation", "backend_bound", "smt_contention", "retiring")
L2 = {
    "frontend_bound_latency": HPC["fetch_latency"],
    "frontend_bound_bandwidth": HPC["frontend_bound"] - HPC["fetch_latency"],
    "bad_speculation_mispredicts": HPC["branch_mispredicts"],
    "bad_speculation_pipeline_restarts": HPC["bad_speculation"] - HPC["branch_mispredicts"],
    "backend_bound_memory": HPC["memory_bound"],
    "backend_bound_cpu": HPC["backend_bound"] - HPC["memory_bound"],
    "retiring_fastpath": HPC["retiring"] - HPC["heavy_operations"],
    "retiring_microcode": HPC["heavy_operations"],
}
READ_GBPS, WRITE_GBPS = 30.0, 10.0
PACKAGE_WATTS = 150.0
RULES = os.path.abspath(os.path.join(t.SOURCE, "contrib", "prometheus", "pmugate-rules.yml"))


class AmdNode(x.Node):
    """A daemon on a simulated Zen node: one socket of 4 cores, no SMT, every CPU on HPC."""

    def __init__(self, model):
        self.model = model
        self.dir = t.workdir()
        self.conf = os.path.join(self.dir, "pmugate.conf")
        x.write_config(self.conf)
        self.sim = os.path.join(self.dir, "sim.conf")
        with open(self.sim, "w") as f:
            f.write("[machine]\nmodel = %s\nsockets = 1\ncores = 4\nsmt = no\n[clock]\nmode = realtime\n"
                    "[rapl]\npackage_watts = %g\n[imc]\nread_gbps = %g\nwrite_gbps = %g\n"
                    "[profile hpc]\n%s[cpus 0-3]\nprofile = hpc\n" % (
                        model, PACKAGE_WATTS, READ_GBPS, WRITE_GBPS, "".join("%s = %r\n" % kv for kv in HPC.items())))
        self.daemon = None
        self.start_daemon()

    def start_daemon(self):
        self.daemon = t.Daemon(self.dir, ["--backend=sim", "--sim-model=" + self.model, "--sim-config=" + self.sim],
                               config=self.conf)


def fraction(m, prefix, category, level, **labels):
    return (one(m, "%s_topdown_level%d_slots_total" % (prefix, level), category=category, **labels) /
            one(m, prefix + "_slots_total", **labels))


def zero_totals(m):
    """Counter samples that are exactly 0 on a node whose CPUs all count."""
    return [k for k, v in m.items() if k[0].endswith("_total") and v == 0 and
            not k[0].startswith("pmugate_exporter_")]


def test_model(tap, model):
    node = AmdNode(model)
    ex = x.Exporter(node, ["--interval=200ms"])
    try:
        ex.wait(lambda: ex.samples() >= 2, "%s: two samples" % model)
        ex.wait_samples(5)
        m0 = ex.metrics()
        ex.wait_samples(5)
        m = ex.metrics()
        tap.eq(one(m, "pmugate_exporter_info", model=model, backend="sim", topdown_level="2",
                   version=dict(next(k for k in m if k[0] == "pmugate_exporter_info")[1])["version"]), 1,
               "%s: the exporter measures level 2" % model)
        tap.ok(one(m, "pmugate_node_instructions_total") > 0 and one(m, "pmugate_node_cycles_total") > 0 and
               one(m, "pmugate_node_slots_total") > 0,
               "%s: the node counts instructions, cycles and slots (not 0)" % model)
        tap.eq(zero_totals(m), [], "%s: no counter of a node whose CPUs all count is 0" % model)
        ipc = one(m, "pmugate_node_instructions_total") / one(m, "pmugate_node_cycles_total")
        tap.ok(abs(ipc / HPC["ipc"] - 1) < 1e-3, "%s: IPC from ex_ret_instr / ls_not_halted_cyc is the "
               "profile's" % model, ipc)
        width = {"zen4": 6, "zen5": 8}[model]
        tap.ok(abs(one(m, "pmugate_node_slots_total") / one(m, "pmugate_node_cycles_total") / width - 1) < 1e-9,
               "%s: the slots are %d dispatch slots per cycle" % (model, width))
        cats = sorted(dict(k)["category"] for k in series(m, "pmugate_node_topdown_level1_slots_total"))
        tap.eq(cats, sorted(L1), "%s: level 1 has AMD's five classes, smt_contention among them" % model)
        got = {c: fraction(m, "pmugate_node", c, 1) for c in L1}
        bad = {c: (got[c], HPC[c]) for c in L1 if abs(got[c] - HPC[c]) > x.FRACTION_BOUND}
        tap.ok(not bad, "%s: node level 1 matches the profile within 2/255" % model, bad or got)
        total = sum(series(m, "pmugate_node_topdown_level1_slots_total").values())
        tap.ok(abs(total / one(m, "pmugate_node_slots_total") - 1) < 0.01,
               "%s: the five classes add up to the slots" % model, total)
        l2 = {dict(k)["category"]: v for k, v in series(m, "pmugate_node_topdown_level2_slots_total").items()}
        tap.eq(sorted(l2), sorted(L2), "%s: level 2 has AMD's eight categories, under Zen 4's names" % model)
        got = {c: fraction(m, "pmugate_node", c, 2) for c in L2 if c in l2}
        bad = {c: (got[c], L2[c]) for c in got if abs(got[c] - L2[c]) > x.FRACTION_BOUND}
        tap.ok(got and not bad, "%s: node level 2 matches the profile within 2/255" % model, bad or got)
        cpu = {dict(k)["category"] for k in series(m, "pmugate_cpu_topdown_level1_slots_total", cpu="2")}
        tap.eq(sorted(cpu), sorted(L1), "%s: per CPU, the five level-1 classes" % model)

        dt = one(m, "pmugate_exporter_last_sample_timestamp_seconds") - \
            one(m0, "pmugate_exporter_last_sample_timestamp_seconds")
        watts = (one(m, "pmugate_socket_energy_joules_total", socket="0", domain="package") -
                 one(m0, "pmugate_socket_energy_joules_total", socket="0", domain="package")) / dt
        tap.ok(abs(watts / PACKAGE_WATTS - 1) < 0.1, "%s: package power from RAPL is the simulator's" % model, watts)
        counted = {dict(k)["quantity"]: v for k, v in series(m, "pmugate_exporter_quantity_counted").items()}
        tap.eq(counted, {"instructions": 1, "cycles": 1, "topdown": 1, "memory_read_bytes": 1,
                         "memory_written_bytes": 1, "energy_package": 1, "energy_dram": 0,
                         "flops_double": 0, "flops_single": 0, "flops_all": 1},
               "%s: quantity_counted says what the node counts" % model)
        for direction, gbps in (("read", READ_GBPS), ("written", WRITE_GBPS)):
            name = "pmugate_socket_memory_%s_bytes_total" % direction
            rate = (one(m, name, socket="0") - one(m0, name, socket="0")) / dt / 1e9
            tap.ok(abs(rate / gbps - 1) < 0.1, "%s: memory %s from the data fabric's DRAM beats is the "
                   "simulator's %g GB/s" % (model, direction, gbps), rate)
        tap.ok(not [k for k in m if dict(k[1]).get("domain") == "dram"],
               "%s: DRAM energy, which it does not count (no such RAPL domain), has no series (not 0)" % model)
        tap.ok("not counted on this CPU model" in ex.log() and "dram_energy" in ex.log() and
               "instructions" not in ex.log().split("not counted on this CPU model")[1].split("\n")[0],
               "%s: the log says what is not counted" % model, ex.log())

        node.admin("grant", job="808", uid=x.USER, cpus=[1, 2])
        ex.wait(lambda: series(ex.metrics(), "pmugate_job_cpus", jobid="808"), "the job shows")
        ex.wait_samples(4)
        m = ex.metrics()
        tap.ok(one(m, "pmugate_job_instructions_total", jobid="808") > 0 and
               abs(fraction(m, "pmugate_job", "smt_contention", 1, jobid="808") - HPC["smt_contention"]) <=
               x.FRACTION_BOUND, "%s: the job counts, its smt_contention is the profile's" % model)
        node.admin("revoke", job="808")
        status, _, body = ex.get("/jobs/808")
        s = json.loads(body) if status == 200 else {}
        tap.ok(s and abs(s["ipc"] / HPC["ipc"] - 1) < 1e-3 and s["instructions"] > 0 and
               abs(s["topdown_percent"]["smt_contention"] - 100 * HPC["smt_contention"]) <= 100 * x.FRACTION_BOUND and
               abs(s["topdown_level2_percent"]["backend_bound_memory"] - 100 * HPC["memory_bound"]) <=
               100 * x.FRACTION_BOUND,
               "%s: the job's summary has IPC and AMD's TopDown in percent" % model, body)
        tap.ok(s and s["memory_read_bytes"] > 0 and s["memory_bandwidth_mbytes_per_second"] > 0 and
               s["energy_joules"] > 0, "%s: and its share of memory traffic and energy" % model, body)
        if model == "zen4":
            test_rules(tap, ex)
    finally:
        ex.stop()
        node.stop()


def test_zen4(tap):
    test_model(tap, "zen4")


def test_zen5(tap):
    test_model(tap, "zen5")


def test_level1(tap):
    """--level=1 on Zen 5: the five classes alone (with the instructions two sets take turns),
    no level-2 family."""
    node = AmdNode("zen5")
    ex = x.Exporter(node, ["--interval=200ms", "--level=1"])
    try:
        ex.wait(lambda: ex.samples() >= 2, "two samples")
        ex.wait_samples(4)
        m = ex.metrics()
        got = {c: fraction(m, "pmugate_node", c, 1) for c in L1}
        bad = {c: (got[c], HPC[c]) for c in L1 if abs(got[c] - HPC[c]) > x.FRACTION_BOUND}
        ipc = one(m, "pmugate_node_instructions_total") / one(m, "pmugate_node_cycles_total")
        tap.ok(not bad and abs(ipc / HPC["ipc"] - 1) < 1e-3, "zen5 --level=1: the five classes and IPC are the "
               "profile's", (bad or got, ipc))
        tap.ok(not series(m, "pmugate_node_topdown_level2_slots_total") and
               dict(next(k for k in m if k[0] == "pmugate_exporter_info")[1])["topdown_level"] == "1",
               "and no level-2 family")
    finally:
        ex.stop()
        node.stop()


def promql_labels(key):
    return "{%s}" % ",".join('%s="%s"' % kv for kv in key[1]) if key[1] else ""


def test_rules(tap, ex):
    """The shipped node recording rules on an AMD node's series, evaluated by promtool's rule
    unit tests: two scrapes of the exporter as the input, placed 60 s apart (the ratios do not
    depend on the time; the power is scaled by the real time between the two samples), and the
    recorded level-1 ratios (five, smt_contention's among them), IPC and power checked against
    the profile."""
    if not shutil.which("promtool"):
        x.skip(tap, "the recording rules on AMD's series", "promtool not installed (Debian package prometheus)")
        return
    ex.get("/metrics")
    a = ex.metrics()
    ex.wait_samples(3)
    b = ex.metrics()
    names = ("pmugate_node_instructions_total", "pmugate_node_cycles_total", "pmugate_node_slots_total",
             "pmugate_node_topdown_level1_slots_total", "pmugate_node_energy_joules_total")
    lines = []
    for k in sorted(b):
        if k[0] in names and k in a:
            lines.append("      - series: '%s%s'\n        values: '%r %r'" % (
                k[0], promql_labels((k[0], tuple([("instance", "amd")] + list(k[1])))), a[k], b[k]))
    d = t.workdir()
    dt = one(b, "pmugate_exporter_last_sample_timestamp_seconds") - one(a, "pmugate_exporter_last_sample_timestamp_seconds")
    # promtool compares values exactly: each check is a comparison against the profile's truth
    # within the bounds above, 1 where it holds
    checks = [
        ('abs(instance_category:pmugate_topdown_level1:ratio_rate1m{category="smt_contention"} - %r) < bool %r'
         % (HPC["smt_contention"], x.FRACTION_BOUND), '{instance="amd",category="smt_contention"}', 1),
        ('abs(sum by (instance) (instance_category:pmugate_topdown_level1:ratio_rate1m) - 1) < bool 0.01',
         '{instance="amd"}', 1),
        ("count(instance_category:pmugate_topdown_level1:ratio_rate1m)", "{}", 5),
        ("abs(instance:pmugate_ipc:rate1m / %r - 1) < bool 0.001" % HPC["ipc"], '{instance="amd"}', 1),
        ("abs(instance:pmugate_power_watts:rate1m / %r - 1) < bool 0.1" % (PACKAGE_WATTS * dt / 60),
         '{instance="amd"}', 1),
    ]
    test = """rule_files:
  - %s
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
%s
    promql_expr_test:
""" % (RULES, "\n".join(lines))
    for expr, labels, value in checks:
        test += "      - expr: '%s'\n        eval_time: 1m\n        exp_samples:\n" \
                "          - labels: '%s'\n            value: %d\n" % (expr, labels, value)
    path = os.path.join(d, "amd-rules-test.yml")
    with open(path, "w") as f:
        f.write(test)
    p = subprocess.run(["promtool", "test", "rules", path], capture_output=True, text=True, timeout=60)
    tap.ok(p.returncode == 0, "zen4: promtool evaluates the shipped node rules on AMD's series: five level-1 "
           "ratios adding up to 1, smt_contention's, IPC and package power the profile's", p.stdout + p.stderr + test)


def main():
    tap = t.Tap()
    if not os.path.exists(x.EXPORTER):
        print("1..0 # SKIP pmugate-exporter not built (libmicrohttpd missing)")
        return 0
    return tap.run([test_zen4, test_zen5, test_level1])


sys.exit(main())
