#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate-exporter end to end on a simulated PMU: both exposition formats with HELP, TYPE and
UNIT (promtool accepts the text format), TopDown fractions from counter ratios against the
simulator's profile, job labels from the daemon's job map, the exporter yielding to a user's
lease and resuming, surviving a daemon restart and a reload with monotonic totals, job
summaries, and refusals of bad requests and options."""

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pmugatetest as t
import exportertest as x
from exportertest import one, series

L1 = ("frontend_bound", "bad_speculation", "backend_bound", "retiring")


def fraction(m, prefix, category, **labels):
    family = "_topdown_level1_slots_total" if category in L1 else "_topdown_level2_slots_total"
    return one(m, prefix + family, category=category, **labels) / one(m, prefix + "_slots_total", **labels)


def monitored(m, cpu):
    """The CPU's 0/1 gauge and its state, which must agree."""
    v = one(m, "pmugate_cpu_monitored", cpu=cpu, socket="0")
    st = x.state(m, cpu)
    return st if (v == 1) == (st == "monitored") else "disagree: %s %s" % (v, st)


def test_formats(tap, node, ex):
    # before the first sample the counters have no series (nothing counted is not 0)
    ex.wait(lambda: ex.samples() >= 1, "the first sample")
    status, ctype, text = ex.get("/metrics")
    tap.ok(status == 200 and ctype.startswith("text/plain; version=0.0.4"), "no Accept: the Prometheus text format",
           ctype)
    tap.ok("# HELP pmugate_node_slots_total " in text and "# TYPE pmugate_node_slots_total counter" in text and
           "# TYPE pmugate_cpu_monitored gauge" in text and "# TYPE pmugate_cpu_state gauge" in text,
           "text format: HELP and TYPE for counters and gauges, the state set as a gauge")
    if shutil.which("promtool"):
        p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        tap.ok(p.returncode == 0 and not p.stdout.strip(), "promtool check metrics accepts it, with no lint "
               "complaint", p.stdout + p.stderr)
    else:
        x.skip(tap, "promtool check metrics", "promtool not installed (Debian package prometheus)")
    status, ctype, om = ex.get("/metrics", accept=x.OPENMETRICS)
    tap.ok(status == 200 and ctype.startswith("application/openmetrics-text; version=1.0.0"),
           "Accept asking for OpenMetrics gets OpenMetrics", ctype)
    tap.ok(om.endswith("# EOF\n") and "# TYPE pmugate_node_monitored_seconds counter\n" in om and
           "# UNIT pmugate_node_monitored_seconds seconds\n" in om and
           "# UNIT pmugate_exporter_last_sample_timestamp_seconds seconds\n" in om and
           "\npmugate_node_monitored_seconds_total " in om,
           "OpenMetrics: family names without _total, UNIT lines, _total samples, # EOF")
    tap.ok("# TYPE pmugate_cpu_state stateset\n" in om and
           'pmugate_cpu_state{cpu="0",socket="0",pmugate_cpu_state="monitored"} ' in om,
           "OpenMetrics: the CPU states as a state set labelled with its own name")
    status, ctype, _ = ex.get("/metrics", accept="application/openmetrics-text;q=0.2,text/plain;q=0.9")
    tap.ok(ctype.startswith("text/plain"), "a higher q for text/plain wins", ctype)


def test_topdown(tap, node, ex):
    ex.wait_samples(3)
    m = ex.metrics()
    got = {c: fraction(m, "pmugate_node", c) for c in L1 + ("memory_bound",)}
    bad = {c: (got[c], x.PROFILE[c]) for c in got if abs(got[c] - x.PROFILE[c]) > x.FRACTION_BOUND}
    tap.ok(not bad, "node TopDown from rate ratios matches the simulator's profile within 2/255", bad or got)
    ipc = one(m, "pmugate_node_instructions_total") / one(m, "pmugate_node_cycles_total")
    tap.ok(abs(ipc - x.PROFILE["ipc"]) < 1e-3, "IPC from instructions / cycles is the profile's", ipc)
    total = sum(series(m, "pmugate_node_topdown_level1_slots_total").values())
    tap.ok(abs(total / one(m, "pmugate_node_slots_total") - 1) < 1e-9,
           "the sum over the level-1 family is the slots, nothing counted twice")
    l2 = series(m, "pmugate_node_topdown_level2_slots_total")
    tap.ok(len(l2) == 8 and abs(sum(l2.values()) / one(m, "pmugate_node_slots_total") - 1) < 0.02,
           "and the 8 level-2 categories in their own family add up to about the slots", l2)
    tap.ok(not [k for k in m if "level" in dict(k[1])], "no series has a level label")
    tap.eq([c for c in "0123" if monitored(m, c) != "monitored"], [], "every CPU is monitored")
    states = series(m, "pmugate_cpu_state", cpu="0")
    tap.eq(sorted(dict(k)["pmugate_cpu_state"] for k in states),
           sorted(["monitored", "user_lease", "other_monitor", "offline", "daemon_unavailable", "refused",
                   "starting"]), "every state of a CPU is a series, whichever it is in")


def test_package(tap, node, ex):
    """Memory traffic and energy per socket, node and job, from the daemon's package counters."""
    m0 = ex.metrics()
    ex.wait_samples(5)
    m1 = ex.metrics()
    # the totals are per sample: the window is the time between the two reads' last samples
    ts0, ts1 = (one(m, "pmugate_exporter_last_sample_timestamp_seconds") for m in (m0, m1))
    dt = ts1 - ts0

    def rate(name, **labels):
        return (one(m1, name, **labels) - one(m0, name, **labels)) / dt
    got = {"read GB/s": rate("pmugate_socket_memory_read_bytes_total", socket="0") / 1e9,
           "write GB/s": rate("pmugate_socket_memory_written_bytes_total", socket="0") / 1e9,
           "package W": rate("pmugate_socket_energy_joules_total", socket="0", domain="package"),
           "dram W": rate("pmugate_socket_energy_joules_total", socket="0", domain="dram")}
    want = {"read GB/s": x.READ_GBPS, "write GB/s": x.WRITE_GBPS, "package W": x.PACKAGE_WATTS,
            "dram W": x.DRAM_WATTS}
    bad = {k: (got[k], want[k]) for k in got if abs(got[k] / want[k] - 1) > 0.1}
    tap.ok(not bad, "socket bandwidth and power from the totals are the simulator's within 10 %", got)
    tap.ok(abs(one(m1, "pmugate_node_memory_read_bytes_total") - one(m1, "pmugate_socket_memory_read_bytes_total",
                                                                     socket="0")) < 1,
           "the node's memory traffic is its one socket's")
    om = ex.get("/metrics", accept=x.OPENMETRICS)[2]
    tap.ok("# UNIT pmugate_socket_memory_read_bytes bytes\n" in om and
           "# UNIT pmugate_node_energy_joules joules\n" in om, "OpenMetrics names the units bytes and joules")


def test_jobs(tap, node, ex):
    node.admin("grant", job="4711", uid=x.USER, cpus=[1, 2])
    ex.wait(lambda: series(ex.metrics(), "pmugate_job_cpus", jobid="4711"), "the job shows")
    ex.wait_samples(2)
    m = ex.metrics()
    tap.eq(one(m, "pmugate_job_cpus", jobid="4711"), 2, "the job holds 2 CPUs")
    held = series(m, "pmugate_cpu_instructions_total", jobid="4711")
    tap.eq(sorted(dict(k)["cpu"] for k in held), ["1", "2"], "the CPUs' series carry the job label jobid")
    tap.ok(not [k for k in m if "job" in dict(k[1])], "and no series has Prometheus' reserved label job")
    tap.ok(all(v > 0 for v in held.values()), "and count", held)
    tap.ok(not series(m, "pmugate_job_uid"), "no uid without --job-uids and the policy's jobmap_uids")
    tap.ok(abs(fraction(m, "pmugate_job", "backend_bound", jobid="4711") - x.PROFILE["backend_bound"])
           <= x.FRACTION_BOUND, "the job's TopDown is the profile's")
    # The job holds 2 of the socket's 4 equally busy CPUs: half its traffic and energy, by cycles.
    a = ex.metrics()
    ex.wait_samples(3)
    b = ex.metrics()
    share = {n: (one(b, n, jobid="4711", **lab) - one(a, n, jobid="4711", **lab)) /
             (one(b, n.replace("_job_", "_socket_"), socket="0", **lab) -
              one(a, n.replace("_job_", "_socket_"), socket="0", **lab))
             for n, lab in (("pmugate_job_memory_read_bytes_total", {}),
                            ("pmugate_job_energy_joules_total", {"domain": "package"}))}
    tap.ok(all(abs(v - 0.5) < 0.05 for v in share.values()),
           "a job's memory traffic and energy are its cycle share of its socket's", share)
    running = ex.get("/jobs/4711")
    node.admin("revoke", job="4711")
    ex.wait(lambda: not series(ex.metrics(), "pmugate_job_cpus", jobid="4711"), "the job's series stop")
    m = ex.metrics()
    tap.ok(not series(m, "pmugate_cpu_instructions_total", jobid="4711"), "no CPU series carries the ended job")
    status, ctype, body = ex.get("/jobs/4711")
    s = json.loads(body) if status == 200 else {}
    tap.ok(json.loads(running[2])["running"] and status == 200 and ctype == "application/json" and
           s["running"] is False and s["cpus"] == "1-2", "the summary outlives the job", body)
    tap.ok(abs(s["topdown_level2_percent"]["memory_bound"] - 100 * x.PROFILE["memory_bound"])
           <= 100 * x.FRACTION_BOUND and
           abs(s["topdown_percent"]["backend_bound"] - 100 * x.PROFILE["backend_bound"]) <= 100 * x.FRACTION_BOUND and
           abs(s["ipc"] - x.PROFILE["ipc"]) < 1e-3 and s["instructions"] > 0,
           "the summary has TopDown in percent (as the CLI gives it), IPC and counts", s)
    tap.ok(s["package_share_estimated"] and s["memory_read_bytes"] > 0 and s["energy_joules"] > 0,
           "and its estimated share of memory traffic and energy", s)
    # half the socket's 55 GB/s and 230 W (2 of 4 busy CPUs), in MBytes/s and W as the MEM and ENERGY
    # groups give them
    half_mbs = (x.READ_GBPS + x.WRITE_GBPS) * 1e3 / 2
    tap.ok(abs(s["memory_bandwidth_mbytes_per_second"] / half_mbs - 1) < 0.1 and
           abs(s["power_watts"] / ((x.PACKAGE_WATTS + x.DRAM_WATTS) / 2) - 1) < 0.1,
           "bandwidth in MBytes/s and power in W", s)


def test_yield(tap, node, ex):
    node.admin("grant", job="77", uid=x.USER, cpus=[3])
    before = ex.metrics()
    with x.UserLease(node, 3) as lease:
        tap.ok(lease.ok, "a user leases CPU 3")
        ex.wait(lambda: monitored(ex.metrics(), "3") == "user_lease",
                "CPU 3 shows the user's lease")
        ex.wait_samples(3)
        m = ex.metrics()
        tap.ok(all(monitored(m, c) == "monitored" for c in "012"),
               "the other CPUs stay monitored")
        c3 = series(m, "pmugate_cpu_instructions_total", cpu="3", jobid="77")
        ex.wait_samples(2)
        tap.eq(series(ex.metrics(), "pmugate_cpu_instructions_total", cpu="3", jobid="77"), c3,
               "CPU 3's totals stand still while the user holds it")
        tap.ok(one(m, "pmugate_node_instructions_total") >= one(before, "pmugate_node_instructions_total"),
               "node totals never went down")
        tap.ok("yielding" in ex.log(), "the exporter logs that it yields", ex.log())
    ex.wait(lambda: monitored(ex.metrics(), "3") == "monitored",
            "CPU 3 is monitored again")
    c3 = one(ex.metrics(), "pmugate_cpu_instructions_total", cpu="3", socket="0", jobid="77")
    ex.wait_samples(2)
    tap.ok(one(ex.metrics(), "pmugate_cpu_instructions_total", cpu="3", socket="0", jobid="77") > c3,
           "and counts again after the user let go")
    node.admin("revoke", job="77")


def test_restart_and_reload(tap, node, ex):
    before = ex.metrics()
    node.daemon.stop()
    ex.wait(lambda: one(ex.metrics(), "pmugate_exporter_daemon_up") == 0, "the exporter sees the daemon gone")
    m = ex.metrics()
    tap.ok(all(monitored(m, c) == "daemon_unavailable"
               for c in "0123"), "every CPU says the daemon is unavailable")
    node.start_daemon()
    ex.wait(lambda: monitored(ex.metrics(), "0") == "monitored",
            "the exporter measures again after the restart")
    ex.wait_samples(2)
    after = ex.metrics()
    down = [k for k, v in before.items() if k[0].endswith("_total") and k in after and after[k] < v]
    tap.ok(not down, "no total went down over the restart", down)
    tap.ok(one(after, "pmugate_node_instructions_total") > one(before, "pmugate_node_instructions_total"),
           "and they grow again")
    r = node.admin("reload")
    tap.ok(r["ok"], "a reload", r)
    ex.wait_samples(3)
    tap.eq(monitored(ex.metrics(), "2"), "monitored",
           "the exporter keeps measuring over a reload")


def test_bad_requests(tap, node, ex):
    tap.eq(ex.get("/metrics", method="POST")[0], 405, "POST is refused")
    tap.eq(ex.get("/jobs/4711;rm")[0], 400, "a job id with other characters is refused")
    tap.eq(ex.get("/jobs/" + "9" * 300)[0], 400, "so is a job id longer than the protocol's")
    tap.eq(ex.get("/jobs/12345")[0], 404, "a job never seen is not found")
    tap.eq(ex.get("/nothing")[0], 404, "an unknown path is not found")
    for args, what in ((["--interval=5ms"], "an interval below 100 ms"), (["--job-label=cpu"], "a label taken"),
                       (["--job-label=1x"], "a label that is no label name"),
                       (["--listen=localhost"], "a listen address without a port"),
                       (["--level=3"], "TopDown level 3"), (["surplus"], "an argument")):
        p = subprocess.run([x.EXPORTER] + args, capture_output=True, text=True, timeout=10)
        tap.ok(p.returncode == 2 and "pmugate-exporter" in p.stderr, "refused: %s" % what, p.stderr)
    busy = subprocess.run([x.EXPORTER, "--listen=127.0.0.1:%d" % ex.port], capture_output=True, text=True,
                          timeout=10, env=dict(os.environ, PMUGATE_SOCKET=node.daemon.socket))
    tap.ok(busy.returncode == 1 and "cannot serve" in busy.stderr, "a port in use is an error", busy.stderr)


def run_epilog(node, job, **env):
    e = dict(os.environ, SLURM_JOB_ID=job, PMUGATECTL=os.path.abspath(t.PMUGATECTL),
             PMUGATE_SOCKET=node.daemon.socket, PMUGATE_SLURM_ENV="/nonexistent")
    e.update(env)
    # The configured script (contrib/slurm/pmugate-epilog.sh.in with this build's paths).
    script = os.path.join(t.BUILD, "contrib", "slurm", "pmugate-epilog.sh")
    return subprocess.run(["/bin/sh", script], capture_output=True, text=True, env=e, timeout=30)


def test_epilog_summary(tap, node, ex):
    out = os.path.join(node.dir, "summaries")
    os.makedirs(out)
    host = subprocess.run(["/bin/hostname", "-s"], capture_output=True, text=True).stdout.strip()
    node.admin("grant", job="5150", uid=x.USER, cpus=[0, 1])
    ex.wait(lambda: series(ex.metrics(), "pmugate_job_cpus", jobid="5150"), "the job shows")
    ex.wait_samples(2)
    p = run_epilog(node, "5150", PMUGATE_JOB_SUMMARY_DIR=out, PMUGATE_EXPORTER_URL=ex.url)
    path = os.path.join(out, "5150.%s.json" % host)
    s = json.load(open(path)) if os.path.exists(path) else {}
    tap.ok(p.returncode == 0 and s.get("job") == "5150" and s.get("cpus") == "0-1" and
           abs(s["topdown_percent"]["retiring"] - 100 * x.PROFILE["retiring"]) <= 100 * x.FRACTION_BOUND,
           "the Epilog writes the job's summary where the admin said", p.stderr + str(s))
    tap.eq(oct(os.stat(path).st_mode & 0o777) if s else None, "0o644", "readable by the site's tools")
    tap.eq(node.admin("status")["grants"], [], "and still revokes the job")
    tap.eq(sorted(os.listdir(out)), ["5150.%s.json" % host], "no temporary file is left")

    node.admin("grant", job="5151", uid=x.USER, cpus=[2])
    p = run_epilog(node, "5151", PMUGATE_JOB_SUMMARY_DIR=out, PMUGATE_EXPORTER_URL="http://127.0.0.1:%d" %
                   x.free_port())
    tap.ok(p.returncode == 0 and "no summary from pmugate-exporter" in p.stderr and
           not os.path.exists(os.path.join(out, "5151.%s.json" % host)) and node.admin("status")["grants"] == [],
           "without an exporter the Epilog exits 0, writes nothing and revokes", p.stderr)
    node.admin("grant", job="5152", uid=x.USER, cpus=[2])
    p = run_epilog(node, "5152", PMUGATE_JOB_SUMMARY_DIR=os.path.join(node.dir, "missing"),
                   PMUGATE_EXPORTER_URL=ex.url)
    tap.ok(p.returncode == 0 and "does not exist" in p.stderr and node.admin("status")["grants"] == [],
           "a summary directory that does not exist changes nothing else", p.stderr)
    node.admin("grant", job="5153", uid=x.USER, cpus=[2])
    p = run_epilog(node, "5153", PMUGATE_JOB_SUMMARY_DIR=out, PMUGATE_EXPORTER_URL=ex.url,
                   CURL="/nonexistent/curl")
    tap.ok(p.returncode == 0 and "not installed" in p.stderr and node.admin("status")["grants"] == [],
           "nor does a missing curl", p.stderr)
    p = run_epilog(node, "5154", PMUGATE_EXPORTER_URL=ex.url)
    tap.ok(p.returncode == 0 and "summary" not in p.stderr, "without a summary directory nothing is asked", p.stderr)


def test_not_a_monitor(tap, node):
    """A uid that is no monitor says so and marks its CPUs refused instead of pretending. (A uid
    without any role is refused by the daemon as it connects: the exporter cannot reach it.) The
    daemon refuses it every sample: the log says each reason once per --log-interval, with a
    count, rather than a line per sample."""
    ex = x.Exporter(node, ["--interval=100ms", "--log-interval=2s"], uid=x.USER + 7, groups=[t.USER_GID])
    try:
        ex.wait(lambda: monitored(ex.metrics(), "0") == "refused", "the CPUs are marked refused")
        tap.ok(True, "an exporter that is not a monitor marks its CPUs refused")
        tap.ok("not 'monitor'" in ex.log() and "monitor_users" in ex.log(), "and logs what to do", ex.log())
        first = ex.samples() + one(ex.metrics(), "pmugate_exporter_sample_errors_total")
        time.sleep(5)
        log = ex.log().splitlines()
        periods = ex.samples() + one(ex.metrics(), "pmugate_exporter_sample_errors_total") - first
        counted = [line for line in log if re.search(r"\(\d+ more times? in the last \d+ s\)$", line)]
        repeats = sum(int(re.search(r"\((\d+) more", line).group(1)) for line in counted)
        tap.ok(len(log) <= 12 and counted and repeats >= 20,
               "refused every sample for 5 s: %d log lines, %d of them counting %d repeats" % (
                   len(log), len(counted), repeats), "\n".join(log) + "\nperiods: %d" % periods)
    finally:
        ex.stop()


def test_shipped_policy(tap):
    """The shipped pmugate.conf names the shipped exporter's user in monitor_users. Where that
    user does not exist (here, unless pmugate's package is installed) the daemon starts all the
    same, says so, and nobody is a monitor by it; where it exists, its exporter is a monitor."""
    import pwd
    d = t.workdir()
    conf = os.path.join(d, "pmugate.conf")
    shutil.copyfile(os.path.join(t.SOURCE, "policy", "pmugate.conf"), conf)
    os.chmod(conf, 0o644)
    sim = os.path.join(d, "sim.conf")
    with open(sim, "w") as f:
        f.write("[machine]\nmodel = spr\nsockets = 1\ncores = 2\nsmt = no\n")
    daemon = t.Daemon(d, ["--backend=sim", "--sim-model=spr", "--sim-config=" + sim], config=conf)
    try:
        r = t.Client(daemon.socket).call("hello")
        tap.ok(r["ok"], "the daemon starts on the shipped pmugate.conf", r)
        try:
            uid = pwd.getpwnam("pmugate-exporter").pw_uid
        except KeyError:
            uid = None
        if uid is None:
            tap.ok("user 'pmugate-exporter' does not exist" in daemon.log(),
                   "without the user pmugate-exporter it warns and admits no monitor by it", daemon.log()[-1500:])
        else:
            ex = x.Exporter(type("N", (), {"daemon": daemon, "dir": d})(), ["--interval=200ms"], uid=uid)
            try:
                ex.wait(lambda: monitored(ex.metrics(), "0") == "monitored", "the exporter measures")
                tap.ok(True, "the package's pmugate-exporter user is a monitor by the shipped policy")
            finally:
                ex.stop()
    finally:
        daemon.stop()


def test_job_label(tap, node):
    """--job-label=NAME for sites that want another name than jobid."""
    ex = x.Exporter(node, ["--interval=200ms", "--job-label=slurm_job"])
    try:
        node.admin("grant", job="6001", uid=x.USER, cpus=[1])
        ex.wait(lambda: series(ex.metrics(), "pmugate_job_cpus", slurm_job="6001"), "the job shows")
        m = ex.metrics()
        # (the node's first exporter holds the CPUs: this one counts nothing, so it has no counter
        # series, only the job's gauges)
        tap.ok(series(m, "pmugate_job_counting_info", slurm_job="6001") and
               not [k for k in m if "jobid" in dict(k[1])], "--job-label=slurm_job names the label")
        node.admin("revoke", job="6001")
    finally:
        ex.stop()


def test_job_uids(tap):
    """uids only where both the policy (jobmap_uids) and the exporter (--job-uids) say so, as a
    gauge's value and never as a label."""
    node = x.Node(cores=2, extra="[rights]\njobmap_uids = yes\n")
    with_uids = x.Exporter(node, ["--interval=200ms", "--job-uids"])
    without = x.Exporter(node, ["--interval=200ms"])
    try:
        node.admin("grant", job="31", uid=x.USER, cpus=[1])
        with_uids.wait(lambda: series(with_uids.metrics(), "pmugate_job_uid", jobid="31"), "the uid gauge")
        m = with_uids.metrics()
        tap.eq(one(m, "pmugate_job_uid", jobid="31"), x.USER, "--job-uids with jobmap_uids = yes: the uid as a value")
        tap.ok(not [k for k in m if "uid" in dict(k[1])], "and never as a label")
        without.wait(lambda: series(without.metrics(), "pmugate_job_cpus", jobid="31"), "the job")
        tap.ok(not series(without.metrics(), "pmugate_job_uid"), "without --job-uids no uid")
    finally:
        with_uids.stop()
        without.stop()
        node.stop()


def main():
    tap = t.Tap()
    if not os.path.exists(x.EXPORTER):
        print("1..0 # SKIP pmugate-exporter not built (libmicrohttpd missing)")
        return 0
    node = x.Node()
    ex = x.Exporter(node, ["--interval=200ms"])
    try:
        def bind(f, *args):
            def run(tp):
                f(tp, *args)
            run.__name__ = f.__name__
            return run
        tests = [bind(f, node, ex) for f in (test_formats, test_topdown, test_package, test_jobs, test_yield,
                                             test_restart_and_reload, test_bad_requests, test_epilog_summary)]
        tests.append(bind(test_not_a_monitor, node))
        tests.append(bind(test_job_label, node))
        tests.append(test_shipped_policy)
        tests.append(test_job_uids)

        def clean_exit(tp):
            rc = ex.stop()
            tp.eq(rc, 0, "the exporter exits 0 on SIGTERM")
            st = node.admin("status")
            tp.eq([l for l in st["leases"] if l[3] == "monitor"], [], "and leaves no lease behind")
        tests.append(clean_exit)
        return tap.run(tests)
    finally:
        ex.stop()
        node.stop()


sys.exit(main())
