#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""One task of a multi-node job in test_slurm_cluster.py, run under srun as the job's
unprivileged user, one task per node:

  clusterstep.py PMUGATE OUTDIR CTLDIR TAG

It measures TopDown on its own CPUs through the pmugated of the node it runs on (the socket
path is the same on every node; each node's mount namespace puts its own daemon behind it) and
writes OUTDIR/TAG-NODE.json. Then it waits, for at most WAIT_MAX seconds, for the test to
write into CTLDIR (root's directory, the task only reads it):
  TAG-probe-NODE    CPUs of another job on this node: the task tries to read, program and
                    measure them and writes what pmugate said to OUTDIR/TAG-probed-NODE.json
  TAG-release       the task exits 0
"""

import json
import os
import socket
import subprocess
import sys
import time

import msgpack

WAIT_MAX = 150
# A counter to read and an event select to program, by vendor (the model topdown reports).
REGISTERS = {"intel": ("IA32_PMC0", "IA32_PERFEVTSEL0=0x43003c"),
             "amd": ("AMD_PERF_CTR0", "AMD_PERF_CTL0=0x430076")}


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
    """What the node's pmugated decided for this process, asked over the wire."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(10)
    s.connect(os.environ["PMUGATE_SOCKET"])
    s.send(msgpack.packb({"v": 1, "id": 1, "op": "hello"}))
    reply = msgpack.unpackb(s.recv(1 << 20), raw=False, strict_map_key=False)
    s.close()
    return {"mode": reply.get("mode"), "caller": reply.get("caller")}


def topdown(pmugate, cpus):
    r = run([pmugate, "topdown", "-c", cpus, "-S", "0.3", "-O", "json"])
    if r["rc"] == 0:
        try:
            doc = json.loads(r["out"])
            r["model"] = doc.get("model")
            r["cpus"] = doc.get("cpus")
            r["metrics"] = doc.get("aggregate", {}).get("metrics")
            r["out"] = ""
        except ValueError:
            pass
    return r


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.rename(tmp, path)


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    pmugate, outdir, ctldir, tag = sys.argv[1:]
    node = socket.gethostname()
    cpus = sorted(os.sched_getaffinity(0))
    mine = ",".join(str(c) for c in cpus)
    measured = topdown(pmugate, mine)
    counter, program = REGISTERS["amd" if (measured.get("model") or "").startswith("zen") else "intel"]
    write_json(os.path.join(outdir, "%s-%s.json" % (tag, node)), {
        "node": node,
        "job": os.environ.get("SLURM_JOB_ID"),
        "slurm_node": os.environ.get("SLURMD_NODENAME"),
        "cgroup": cpuset_cgroup(),
        "affinity": cpus,
        "hello": hello_scope(),
        "topdown": measured,
    })
    probe = os.path.join(ctldir, "%s-probe-%s" % (tag, node))
    release = os.path.join(ctldir, "%s-release" % tag)
    probed = False
    deadline = time.time() + WAIT_MAX
    while time.time() < deadline:
        if not probed and os.path.exists(probe):
            with open(probe) as f:
                others = f.read().strip()
            write_json(os.path.join(outdir, "%s-probed-%s.json" % (tag, node)), {
                "node": node, "cpus": others,
                "read": run([pmugate, "read", "-c", others, counter]),
                "write": run([pmugate, "write", "-c", others, program]),
                "topdown": topdown(pmugate, others)})
            probed = True
        if os.path.exists(release):
            return 0
        time.sleep(0.1)
    return 1


if __name__ == "__main__":
    sys.exit(main())
