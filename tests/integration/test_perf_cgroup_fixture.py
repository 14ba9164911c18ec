#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The fixture of real job cgroups for per-job counting (perf_cgroup_fixture.py): jobs are
root's directories in the real v2 hierarchy, busy loops run inside them on one shared CPU and
use the CPU time asked, each job's cpu.stat holds its own loop's time only, a fake machine's
root sees the same hierarchy, and nothing is left behind."""

import os
import sys

import perf_cgroup_fixture as fixture
import pmugatetest as t


def test_jobs_share_one_cpu(tap):
    jobs = fixture.JobCgroups(("2001", "2002"))
    try:
        for job in jobs.jobs:
            st = os.stat(jobs.dir(job))
            tap.eq((st.st_uid, st.st_gid), (0, 0), "job %s's cgroup is root's" % job)
        loops = jobs.busy({"2001": 0.4, "2002": 0.2}, cpu=0, uid=t.UNPRIVILEGED_UID)
        for job, loop in loops.items():
            with open("/proc/%d/cgroup" % loop.pid) as f:
                v2 = [line.strip()[3:] for line in f if line.startswith("0::")]
            tap.eq(v2, [jobs.rel(job)], "job %s's loop runs in the job's v2 cgroup" % job)
            tap.eq(os.sched_getaffinity(loop.pid), {0}, "job %s's loop is pinned to CPU 0" % job)
        for loop in loops.values():
            loop.go()
        used = {job: loop.wait() for job, loop in loops.items()}
        for job, want in (("2001", 0.4), ("2002", 0.2)):
            tap.ok(want * 0.95 <= used[job] <= want * 1.5 + 0.05,
                   "job %s's loop used the CPU time asked (%.3f s of %.3f)" % (job, used[job], want))
            got = jobs.cpu_usage(job)
            tap.ok(abs(got - used[job]) <= 0.1 * used[job] + 0.02,
                   "job %s's cpu.stat is its own loop's time (%.3f s, loop %.3f s)" % (job, got, used[job]),
                   "cpu.stat %.3f, rusage %.3f" % (got, used[job]))
    finally:
        jobs.remove()
    tap.ok(not os.path.exists(jobs.v2 + jobs.base), "remove() leaves no cgroup behind")


def test_machine_root_sees_jobs(tap):
    d = t.workdir()
    root = os.path.join(d, "root")
    jobs = fixture.JobCgroups(("2003",), machine_root=root)
    seen = os.path.join(root, "sys/fs/cgroup/unified") + jobs.rel("2003")
    try:
        tap.ok(os.path.isdir(seen), "the job is at <root>/sys/fs/cgroup/unified" + jobs.rel("2003"))
        tap.eq(os.stat(seen).st_ino, os.stat(jobs.dir("2003")).st_ino, "it is the real job directory")
    finally:
        jobs.remove()
    tap.ok(not os.path.ismount(os.path.join(root, "sys/fs/cgroup/unified")), "remove() unmounts it")


def main():
    tap = t.Tap()
    why = fixture.usable()
    if why:
        tap.skip("perf cgroup fixture", why)
        print("1..%d" % tap.n)
        return 0
    return tap.run([test_jobs_share_one_cpu, test_machine_root_sees_jobs])


if __name__ == "__main__":
    sys.exit(main())
