#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes the seed corpus for fuzz_request: valid requests of every kind and the malformed
shapes the decoder must refuse. Run it to regenerate tests/fuzz/corpus/request/."""

import os
import sys

import msgpack

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "request")
os.makedirs(out, exist_ok=True)

def req(op, **kw):
    d = {"v": 1, "id": 7, "op": op}
    d.update(kw)
    return msgpack.packb(d)

seeds = {
    "hello": req("hello"),
    "status": req("status"),
    "batch-read": req("batch", ops=[["r", 0, 0xC1], ["r", 1, 0x38F]]),
    "batch-write": req("batch", ops=[["w", 0, 0x186, 0x43003C]]),
    "batch-pci": req("batch", ops=[["pr", 0, 0xA0], ["pw", 0, 0xF4, 3]]),
    "batch-counter": req("batch", ops=[["cr", 0], ["r", 0, 0x611], ["cr", 4294967295], ["cr"], ["cr", 1, 2]]),
    "batch-sweep": req("batch", ops=[["R", [0, 1, 2, 3], [0xC1, 0xC2, 0x309]]]),
    "batch-sweep-write": req("batch", ops=[["W", [0, 1], [0x186, 0x187], [0, 0]]]),
    "grant": req("grant", job="123", uid=1000, cpus=[0, 1]),
    "revoke": req("revoke", job="123"),
    "lease": req("lease", cpus=[0]),
    "wrong-version": msgpack.packb({"v": 2, "id": 1, "op": "hello"}),
    "no-version": msgpack.packb({"id": 1, "op": "hello"}),
    "unknown-op": req("frobnicate"),
    "unknown-key": req("hello", extra=1),
    "wrong-types": req("batch", ops=[["r", "zero", -1]]),
    "negative-id": msgpack.packb({"v": 1, "id": -5, "op": "hello"}),
    "not-a-map": msgpack.packb([1, 2, 3]),
    "nested": msgpack.packb({"v": 1, "id": 1, "op": "batch", "ops": [[[[[[[1]]]]]]]}),
    "truncated": req("batch", ops=[["r", 0, 0xC1]] * 10)[:-3],
    "trailing": req("hello") + b"\x00",
    "huge-array-header": b"\x83\xa1v\x01\xa2id\x01\xa2op\xdd\x7f\xff\xff\xff",
    "huge-str-header": b"\xdb\xff\xff\xff\xff",
    "reserved-byte": b"\xc1",
    "empty": b"",
    "sweep-overflow": req("batch", ops=[["R", list(range(100)), list(range(100))]]),
    "batch-masked-write": req("batch", ops=[["wm", 0, 0x38F, 1, 1], ["wm", 0, 0x38D, 0x3000, 0xF000]]),
    "masked-write-no-mask": req("batch", ops=[["wm", 0, 0x38F, 1]]),
    "release-all": req("release"),
    "reset-cpus": req("reset", cpus=[0, 1, 2]),
    "reload": req("reload"),
    "jobmap": req("jobmap"),
    "jobmap-with-cpus": req("jobmap", cpus=[0]),
    "duplicate-op": b"\x84\xa1v\x01\xa2id\x01\xa2op\xa5hello\xa2op\xa5batch",
    "integer-key": msgpack.packb({"v": 1, "id": 1, "op": "hello", 7: 1}),
    # Kinds are whole strings: "\0W" is not "W" (it once ran as a sweep write of the TSC).
    "op-kind-nul-prefix": req("batch", ops=[["\0W", [0], [0x10], [0]], ["\0r", 0, 0x10]]),
    # A kind byte above 0x7f; shifting it as a signed char was undefined behaviour.
    "op-kind-high-byte": req("batch", ops=[["XY", 0, 0x38F, 1, 1]]).replace(b"\xa2XY", b"\xa2\xffm"),
    # The perf_event path: every scope, the keys of each, and the EVENT fields refused by name.
    "perf-open-cpu": req("perf_open", scope="cpu", cpus=[0, 1],
                         groups=[[{"pmu": "software", "config": 0}]]),
    "perf-open-process": req("perf_open", scope="process", pid=0, follow=True, on_exec=True, handoff=False,
                             groups=[[{"pmu": "software", "config": 1, "name": "task-clock"},
                                      {"pmu": "software", "config": 2, "kernel": True}]]),
    "perf-open-job-topdown": req("perf_open", scope="job",
                                 groups=[[{"pmu": "cpu", "config": 0x400}] +
                                         [{"pmu": "cpu", "config": 0x8000 + 0x100 * i} for i in range(8)]]),
    "perf-open-config12": req("perf_open", scope="cpu", cpus=[0],
                              groups=[[{"pmu": "uncore_imc_0", "config": 0x304, "config1": 1, "config2": 2}]]),
    "perf-open-sample": req("perf_open", scope="process",
                            groups=[[{"pmu": "software", "config": 0, "sample_period": 1000}]]),
    "perf-open-breakpoint": req("perf_open", scope="process",
                                groups=[[{"pmu": "breakpoint", "config": 0, "bp_addr": 4096, "bp_type": 4}]]),
    "perf-open-pid-cpu": req("perf_open", scope="cpu", pid=1, groups=[[{"pmu": "software", "config": 0}]]),
    "perf-open-many-groups": req("perf_open", scope="process",
                                 groups=[[{"pmu": "software", "config": i}] for i in range(40)]),
    "perf-open-empty-group": req("perf_open", scope="process", groups=[[]]),
    "perf-open-bad-pmu": req("perf_open", scope="process", groups=[[{"pmu": "../../x", "config": 0}]]),
    "perf-read": req("perf_read", handle=1),
    "perf-close": req("perf_close", handle=4294967295),
    "perf-read-no-handle": req("perf_read"),
    # timing_open (pmugate timing): both modes, the bounds of each key, and perf_open's keys
    # and an attr's fields refused by name.
    "timing-open-ips": req("timing_open", mode="ips", pid=4242, on_exec=False, cpus=[0, 1]),
    "timing-open-branches": req("timing_open", mode="branches", pid=4242, on_exec=True, period=200003,
                                cpus=list(range(64))),
    "timing-open-65-cpus": req("timing_open", mode="ips", pid=4242, on_exec=False, cpus=list(range(65))),
    "timing-open-cpu-twice": req("timing_open", mode="ips", pid=4242, cpus=[3, 3]),
    "timing-open-period-0": req("timing_open", mode="ips", pid=4242, cpus=[0], period=0),
    "timing-open-period-max": req("timing_open", mode="branches", pid=4242, cpus=[0], period=2 ** 64 - 1),
    "timing-open-pid-0": req("timing_open", mode="ips", pid=0, cpus=[0]),
    "timing-open-pid-huge": req("timing_open", mode="ips", pid=2 ** 32, cpus=[0]),
    "timing-open-bad-mode": req("timing_open", mode="branch", pid=1, cpus=[0]),
    "timing-open-mode-int": req("timing_open", mode=0, pid=1, cpus=[0]),
    "timing-open-attr-key": req("timing_open", mode="ips", pid=1, cpus=[0], sample_type=0xFFFF),
    "timing-open-scope": req("timing_open", mode="ips", pid=1, cpus=[0], scope="process", groups=[]),
    "timing-open-no-cpus": req("timing_open", mode="ips", pid=1),
    "grant-lbr": req("grant", job="123", uid=1000, lbr=True),
    "grant-lbr-int": req("grant", job="123", uid=1000, lbr=1),
}


def batch_of_size(size):
    """A batch of reads packed into exactly size bytes: one op's MSR number takes 2, 3 or 5
    bytes, which evens out the rest."""
    n = (size - 32) // 6
    for wide in range(0, 64):
        for mid in range(0, 64):
            ops = [["r", 0, 0xC0010200]] * wide + [["r", 0, 0x38F]] * mid + [["r", 0, 0xC1]] * (n - wide - mid)
            data = req("batch", ops=ops)
            if len(data) == size:
                return data
    raise SystemExit("no batch of %d bytes" % size)


# The socket takes requests up to PMUGATE_REQUEST_SIZE_MAX (64 KiB); the decoder refuses a
# longer one by its size. The campaign runs this target with -max_len of one byte more.
REQUEST_SIZE_MAX = 64 * 1024
seeds["size-at-limit"] = batch_of_size(REQUEST_SIZE_MAX)
seeds["size-over-limit"] = batch_of_size(REQUEST_SIZE_MAX + 1)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print("wrote %d seeds to %s" % (len(seeds), out))
