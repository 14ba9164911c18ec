#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The job map ("jobmap"): which job holds which CPU, from grants with CPUs and from the
batch system's cgroups (v1 and v2, only root's), with leases by role; for monitors and
admins only, uids only where the policy allows."""

import os
import sys

import pmugatetest as t

USER = t.UNPRIVILEGED_UID
MONITOR = USER + 2
MONITOR_GID = 4250
EVTSEL0 = 0x186


def config(path, mode="job", extra=""):
    with open(path, "w") as f:
        f.write("[access]\nmode = %s\nadmin_groups = %d\nuser_groups = %d\nmonitor_groups = %d\n%s" % (
            mode, t.ADMIN_GID, t.USER_GID, MONITOR_GID, extra))


def start(extra=""):
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=2, cores=4, smt=False)
    conf = os.path.join(d, "pmugate.conf")
    config(conf, extra=extra)
    return d, m, conf, t.Daemon(d, ["--root=" + m.root], config=conf)


def fake_cgroup(m, rel, name, cpus, owner=0):
    """A job cgroup under the fake machine's root, as Slurm lays it out."""
    d = os.path.join(m.root, "sys/fs/cgroup", rel)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "w") as f:
        f.write(cpus + "\n")
    os.chown(d, owner, owner)
    return d


def as_monitor(dm, fn):
    return t.in_child_as(MONITOR, 4999, [MONITOR_GID], lambda: fn(t.Client(dm.socket)))


def by_cpu(reply):
    return {cpu: reply["jobs"][k] for cpu, k in reply["cpus"]}


def test_jobmap(tap):
    d, m, conf, dm = start()
    try:
        admin = t.Client(dm.socket)
        admin.call("grant", job="100", uid=USER, cpus=[0, 1])
        fake_cgroup(m, "cpuset/slurm_node1/uid_%d/job_101" % USER, "cpuset.effective_cpus", "2-3")
        admin.call("grant", job="101", uid=USER)
        fake_cgroup(m, "system.slice/slurmstepd.scope/job_102", "cpuset.cpus.effective", "4,5")
        admin.call("grant", job="102", uid=USER + 1)
        admin.call("grant", job="103", uid=USER)      # no cgroup yet (the Prolog runs first)
        fake_cgroup(m, "system.slice/slurmstepd.scope/job_104", "cpuset.cpus.effective", "6-7", owner=USER)
        admin.call("grant", job="104", uid=USER)      # a cgroup the user made: not the job's

        r = as_monitor(dm, lambda c: c.call("jobmap"))
        tap.ok(r.get("ok"), "a monitor may ask for the job map", r)
        tap.eq(by_cpu(r), {0: "100", 1: "100", 2: "101", 3: "101", 4: "102", 5: "102"},
               "CPUs per job: explicit grant CPUs, cgroup v1 and v2 job cgroups of root's")
        tap.eq(sorted(r["jobs"]), ["100", "101", "102"],
               "a job without CPUs yet, or with only a user-owned cgroup, holds no CPU")
        tap.eq(r["uids"], None, "a monitor is not told uids by default")
        tap.eq(r["mode"], "job", "the reply says the mode")

        a = admin.call("jobmap")
        tap.eq(dict(zip(a["jobs"], a["uids"])), {"100": USER, "101": USER, "102": USER + 1},
               "an admin is told each job's uid")

        # A user's lease (job mode, CPUs of its grant) shows with its role and no uid.
        r_fd, w_fd = os.pipe()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r_fd)
            os.close(go_w)
            t.as_user(USER, 4999, [t.USER_GID])()
            c = t.Client(dm.socket)
            os.write(w_fd, b"1" if c.call("lease", cpus=[0])["ok"] else b"0")
            os.read(go_r, 1)
            os._exit(0)
        os.close(w_fd)
        os.close(go_r)
        leased = os.read(r_fd, 1)
        leases = as_monitor(dm, lambda c: c.call("jobmap"))["leases"]
        os.write(go_w, b"x")
        os.waitpid(pid, 0)
        os.close(r_fd)
        os.close(go_w)
        tap.ok(leased == b"1" and leases == [[0, "user"]], "a user's lease is listed by CPU and role", leases)

        r = t.in_child_as(USER, 4999, [t.USER_GID], lambda: t.Client(dm.socket).call("jobmap"))
        tap.ok(not r["ok"] and r["error"]["name"] == "not-authorized" and
               "monitor role" in r["error"]["reason"], "a caller with user may not ask", r)
        r = t.in_child_as(USER + 5, 4999, [], lambda: t.Client(dm.socket).recv())
        tap.ok(not r["ok"] and r["error"]["name"] == "not-authorized",
               "a caller with no role may not even connect", r)

        r = admin.call("jobmap", cpus=[0])
        tap.eq(r["error"]["name"] if not r["ok"] else "ok", "bad-field", "the request takes no arguments")
        r = admin.call("jobmap", job="100")
        tap.eq(r["error"]["name"] if not r["ok"] else "ok", "bad-field", "not even a job")

        rc, out, err = t.run_cli([t.PMUGATECTL, "jobmap"], dm.socket, uid=MONITOR, gid=4999, groups=[MONITOR_GID])
        tap.ok(rc == 0 and "cpu 0    job 100\n" in out and "cpu 5    job 102\n" in out and "uid" not in out,
               "pmugatectl jobmap as a monitor: CPUs and jobs, no uids", out + err)
        rc, out, err = t.run_cli([t.PMUGATECTL, "jobmap"], dm.socket)
        tap.ok(rc == 0 and "cpu 4    job 102 uid %d\n" % (USER + 1) in out, "as root: with uids", out + err)
        rc, out, err = t.run_cli([t.PMUGATECTL, "jobmap"], dm.socket, uid=USER, gid=4999, groups=[t.USER_GID])
        tap.ok(rc == 1 and "[not-authorized]" in err and "monitor role" in err, "a user is refused with why", err)
        rc, out, err = t.run_cli([t.PMUGATECTL, "jobmap", "--job", "100"], dm.socket)
        tap.ok(rc == 2 and "takes no options" in err, "pmugatectl jobmap takes no options", err)

        admin.call("revoke", job="100")
        r = as_monitor(dm, lambda c: c.call("jobmap"))
        tap.ok(0 not in by_cpu(r) and "100" not in r["jobs"], "a revoked job no longer holds its CPUs", r)
    finally:
        dm.stop()


def test_policy_uids(tap):
    d, m, conf, dm = start(extra="[rights]\njobmap_uids = yes\n")
    try:
        t.Client(dm.socket).call("grant", job="7", uid=USER, cpus=[3])
        r = as_monitor(dm, lambda c: c.call("jobmap"))
        tap.eq((r["jobs"], r["uids"], r["cpus"]), (["7"], [USER], [[3, 0]]),
               "with jobmap_uids = yes a monitor is told uids")
        config(conf, extra="[rights]\njobmap_uids = maybe\n")
        r = t.Client(dm.socket).call("reload")
        tap.ok(not r["ok"] and r["error"]["name"] == "bad-config", "a bad jobmap_uids value is refused", r)
        config(conf)
        t.Client(dm.socket).call("reload")
        r = as_monitor(dm, lambda c: c.call("jobmap"))
        tap.eq(r["uids"], None, "after a reload without it, uids are withheld again")
    finally:
        dm.stop()


sys.exit(t.Tap().run([test_jobmap, test_policy_uids]))
