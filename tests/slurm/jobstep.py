#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What a job step sees of pmugate. test_slurm.py runs this as the job's unprivileged user
under srun or sbatch, with PMUGATE_SOCKET in the environment:

  jobstep.py probe PMUGATE OTHER_CPUS   print one JSON object: the step's cgroup and CPUs,
                                        the daemon's view of its scope (raw hello), and what
                                        the pmugate CLI does on its own CPU and on OTHER_CPUS
  jobstep.py hold PMUGATE               program the step's first CPU and keep the lease until
                                        the job is cancelled
"""

import json
import os
import socket
import subprocess
import sys

import msgpack

PROGRAM = ["IA32_PERFEVTSEL0=0x43003c", "IA32_FIXED_CTR_CTRL=0x333", "IA32_PERF_GLOBAL_CTRL=0x700000001"]


def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    return {"rc": p.returncode, "out": p.stdout, "err": p.stderr}


def cpuset_cgroup():
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if "cpuset" in controllers.split(","):
                return path
    return None


def hello_scope():
    """The daemon's answer to hello, asked over the wire so the test sees exactly what
    pmugated decided for this process."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(10)
    s.connect(os.environ["PMUGATE_SOCKET"])
    s.send(msgpack.packb({"v": 1, "id": 1, "op": "hello"}))
    reply = msgpack.unpackb(s.recv(1 << 20), raw=False, strict_map_key=False)
    s.close()
    return {"mode": reply.get("mode"), "caller": reply.get("caller")}


def probe(pmugate, others):
    cpus = sorted(os.sched_getaffinity(0))
    mine = str(cpus[0])
    out = {
        "job": os.environ.get("SLURM_JOB_ID"),
        "cgroup": cpuset_cgroup(),
        "affinity": cpus,
        "hello": hello_scope(),
        "info": run([pmugate, "info"]),
        "read_own": run([pmugate, "read", "-c", mine, "IA32_PMC0", "IA32_FIXED_CTR0"]),
        "read_other": {cpu: run([pmugate, "read", "-c", cpu, "IA32_PMC0"]) for cpu in others},
        # The command after -- runs while the lease holds: its read shows the programmed value.
        "write_own": run([pmugate, "write", "-c", mine, "IA32_PERFEVTSEL0=0x43003c", "--",
                          pmugate, "read", "-c", mine, "IA32_PERFEVTSEL0"]),
    }
    print(json.dumps(out))
    return 0


def hold(pmugate):
    mine = str(sorted(os.sched_getaffinity(0))[0])
    sys.stdout.flush()
    os.execv(pmugate, [pmugate, "write", "-c", mine] + PROGRAM + ["--", "/bin/sleep", "300"])


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "probe":
        return probe(sys.argv[2], [c for c in sys.argv[3].split(",") if c])
    if len(sys.argv) == 3 and sys.argv[1] == "hold":
        return hold(sys.argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
