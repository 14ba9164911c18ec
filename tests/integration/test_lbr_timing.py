#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate timing through the real daemon, socket and CLI (docs/TIMING.md). On the simulated
Sapphire Rapids, whose perf layer emits LBR branch stacks at the real block addresses of a loop
the suite builds (random loads, and the same with a prefetch) with cycles drawn from two-spike
distributions: each block's median within one cycle of the mixture's, the histogram's shape by
a Kolmogorov-Smirnov statistic, both spikes found and moved left by the prefetch; --block's
disassembly with the timing under it; --top; the CSV and JSON shapes; a stripped copy timed and
named by its addresses, said so; the plot of one result and of two overlaid. IP mode on this machine's
real kernel: most samples in the loop's functions, named. Hostile: the class not granted, AMD
(no cycles in its LBR), the real kernel's missing LBR, another user's process, a process that
exits at once, absurd periods, a command that is not found; the daemon keeps serving."""

import csv
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

import pmugatetest as t

USER = t.UNPRIVILEGED_UID
OTHER_USER = USER + 1
LOOP = os.environ.get("PMUGATE_TIMING_LOOP", os.path.join(t.BUILD, "tests", "timing_loop"))
LOOP_PREFETCH = os.environ.get("PMUGATE_TIMING_LOOP_PREFETCH", os.path.join(t.BUILD, "tests", "timing_loop_prefetch"))
# where the simulated kernel maps a PIE, as Linux does without ASLR
PIE_BASE = 0x555555554000
# the block ending at load_one's ret: the load, mostly retire-bound, sometimes from DRAM; the
# prefetch moves both spikes left (the document's figure)
BASELINE = [(32.0, 2.0, 0.7), (300.0, 30.0, 0.3)]
PREFETCH = [(24.0, 2.0, 0.7), (180.0, 20.0, 0.3)]
# the other two blocks of the loop: the call's and the back edge's, narrow
CALL_BLOCK = [(6.0, 0.5, 1.0)]
EDGE_BLOCK = [(3.0, 0.5, 1.0)]
CPU_SECONDS = "0.4"


def program_blocks(path):
    """The loop's three branches from the binary (objdump -d, readelf -l): load_one's ret, the
    call of load_one in hot_loop and the instruction after it, hot_loop's backward conditional
    jump and its target; and the executable segment as the kernel maps it."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], capture_output=True, text=True,
                          check=True).stdout
    functions, current = {}, None
    for line in text.splitlines():
        m = re.match(r"^([0-9a-f]+) <([^>]+)>:$", line)
        if m:
            current = functions.setdefault(m.group(2), [])
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if m and current is not None:
            current.append((int(m.group(1), 16), m.group(2), m.group(3)))
    load, loop = functions["load_one"], functions["hot_loop"]
    entry = load[0][0]
    ret = [a for a, op, _ in load if op.startswith("ret")][-1]
    calls = [(i, a) for i, (a, op, arg) in enumerate(loop) if op.startswith("call") and "<load_one>" in arg]
    call_index, call = calls[0]
    after_call = loop[call_index + 1][0]
    edge, edge_target = None, None
    for a, op, arg in loop:
        m = re.match(r"^([0-9a-f]+) <", arg)
        if op.startswith("j") and op != "jmp" and m and int(m.group(1), 16) < a:
            edge, edge_target = a, int(m.group(1), 16)
    segments = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True, check=True).stdout
    for line in segments.splitlines():
        f = line.split()
        if f and f[0] == "LOAD" and "E" in f[6:-1]:
            offset, vaddr, memsz = int(f[1], 16), int(f[2], 16), int(f[5], 16)
    start = vaddr & ~0xfff
    map_len = ((vaddr + memsz + 0xfff) & ~0xfff) - start
    pgoff = offset & ~0xfff
    return dict(entry=entry, ret=ret, call=call, after_call=after_call, edge=edge, edge_target=edge_target,
                map_start=PIE_BASE + start, map_len=map_len, pgoff=pgoff, vaddr_start=start)


def file_offset(b, vaddr):
    return vaddr - b["vaddr_start"] + b["pgoff"]


def mixture(spec):
    return " ".join("%g:%g@%g" % s for s in spec)


def lbr_section(path, b, load_block):
    """The simulator's [lbr] section (docs/SIMULATOR.md): the map, then the branches in the
    order the loop retires them, each with the distribution of the block it ends."""
    rt = lambda vaddr: PIE_BASE + vaddr
    return ("[lbr]\nmap = 0x%x 0x%x 0x%x\nbinary = %s\n" % (b["map_start"], b["map_len"], b["pgoff"], path) +
            "branch = 0x%x 0x%x %s\n" % (rt(b["call"]), rt(b["entry"]), mixture(CALL_BLOCK)) +
            "branch = 0x%x 0x%x %s\n" % (rt(b["ret"]), rt(b["after_call"]), mixture(load_block)) +
            "branch = 0x%x 0x%x %s\n" % (rt(b["edge"]), rt(b["edge_target"]), mixture(EDGE_BLOCK)))


def conf(d, lbr=True, extra=""):
    path = os.path.join(d, "pmugate-%s.conf" % ("lbr" if lbr else "off"))
    t.write_config(path, extra=("[rights]\nlbr_groups = %d\n" % t.USER_GID if lbr else "") + extra)
    return path


def outdir():
    d = t.workdir()
    out = os.path.join(d, "out")
    os.makedirs(out, exist_ok=True)
    os.chmod(out, 0o777)
    return out


def sim(model, program, load_block, lbr=True):
    d = t.workdir()
    b = program_blocks(program)
    return t.Sim(model, config=conf(d, lbr), cores=2, smt=False, extra=lbr_section(program, b, load_block)), b


def cli(s, *args, timeout=120):
    return s.run(*args, uid=USER, gid=t.USER_GID, groups=[t.USER_GID], timeout=timeout)


def normal_cdf(x, mean, sd):
    return 0.5 * (1 + math.erf((x - mean) / (sd * math.sqrt(2))))


def rounded_cdf(k, spec):
    """P(X <= k) for the simulator's draw: a mixture of normals, rounded, at least 1."""
    if k < 1:
        return 0.0
    return sum(w * normal_cdf(k + 0.5, m, sd) for m, sd, w in spec)


def mixture_median(spec):
    lo, hi = 0.0, 70000.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if sum(w * normal_cdf(mid, m, sd) for m, sd, w in spec) < 0.5:
            lo = mid
        else:
            hi = mid
    return lo


def ks_statistic(hist, spec):
    """The largest distance between the histogram's cumulative share and the mixture's at each
    bin's upper end: the one-sample Kolmogorov-Smirnov statistic of binned data (numpy where
    the machine has it, the same sums in plain Python where not)."""
    counts, lo, width = hist["counts"], hist["lo"], hist["width"]
    model = [rounded_cdf(lo + (i + 1) * width - 1, spec) for i in range(len(counts))]
    try:
        import numpy
    except ImportError:
        n = sum(counts)
        seen, d = 0, 0.0
        for c, f in zip(counts, model):
            seen += c
            d = max(d, abs(seen / n - f))
        return d, n
    c = numpy.asarray(counts, dtype=float)
    return float(numpy.max(numpy.abs(numpy.cumsum(c) / c.sum() - numpy.asarray(model)))), int(c.sum())


def spike(hist, around, window):
    """The centre of the heaviest window of the histogram within around's +-50 %: where its
    counts, summed over +-window cycles, peak."""
    counts, lo, width = hist["counts"], hist["lo"], hist["width"]
    best, where = -1, None
    for i in range(len(counts)):
        x = lo + i * width + (width - 1) / 2
        if not (0.5 * around <= x <= 1.5 * around):
            continue
        s = sum(counts[j] for j in range(len(counts)) if abs((lo + j * width) - x) <= window)
        if s > best:
            best, where = s, x
    return where


def png_text(path):
    """The tEXt and zTXt entries of a PNG (pmugate plot keeps what it drew in "Panels")."""
    import struct
    import zlib
    with open(path, "rb") as f:
        data = f.read()
    at, text = 8, {}
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        key, _, value = body.partition(b"\0")
        if kind == b"tEXt":
            text[key.decode()] = value.decode("latin-1")
        elif kind == b"zTXt":
            text[key.decode()] = zlib.decompress(value[1:]).decode("latin-1")
        at += 12 + length
    return text


def block_ending(doc, offset):
    return [b for b in doc["blocks"] if b["end"] == offset]


def check_distribution(tap, doc, b, spec, label):
    found = block_ending(doc, file_offset(b, b["ret"]))
    if not tap.ok(len(found) == 1, "%s: one block ends at load_one's ret" % label,
                  [(x["start"], x["end"]) for x in doc.get("blocks", [])]):
        return None
    blk = found[0]
    tap.eq(blk["start"], file_offset(b, b["entry"]), "%s: it starts at load_one's entry" % label)
    tap.ok(blk["module"] and os.path.basename(blk["module"]).startswith("timing_loop"),
           "%s: keyed by the program's file" % label, blk["module"])
    tap.eq(blk["function"], "load_one", "%s: named load_one" % label)
    c = blk["cycles"]
    want = mixture_median(spec)
    tap.ok(c and abs(c["median"] - want) <= 1.0,
           "%s: median %s within one cycle of the mixture's %.2f" % (label, c and c["median"], want), c)
    d, n = ks_statistic(c["histogram"], spec)
    # the critical value at a significance of 0.001 for n draws
    crit = 1.95 / math.sqrt(n)
    tap.ok(n > 1000 and d < crit, "%s: histogram shape matches: KS %.4f < %.4f over %d counts" % (label, d, crit, n))
    low, high = spike(c["histogram"], spec[0][0], 2), spike(c["histogram"], spec[1][0], 10)
    tap.ok(low is not None and abs(low - spec[0][0]) <= 2, "%s: the fast spike at %s (configured %g)" %
           (label, low, spec[0][0]))
    tap.ok(high is not None and abs(high - spec[1][0]) <= 0.1 * spec[1][0],
           "%s: the slow spike at %s (configured %g)" % (label, high, spec[1][0]))
    tap.ok(c["min"] <= c["median"] <= c["p90"] <= c["max"] and c["p90"] >= spec[1][0] - 3 * spec[1][1],
           "%s: min <= median <= p90 <= max, p90 in the slow spike" % label, c)
    # the two narrow blocks of the loop
    for vaddr, start, narrow, what in ((b["call"], b["edge_target"], CALL_BLOCK, "call"),
                                       (b["edge"], b["after_call"], EDGE_BLOCK, "back edge")):
        other = block_ending(doc, file_offset(b, vaddr))
        tap.ok(len(other) == 1 and other[0]["start"] == file_offset(b, start) and other[0]["cycles"] and
               abs(other[0]["cycles"]["median"] - mixture_median(narrow)) <= 1.0,
               "%s: the block ending at the %s, median %s" % (label, what, other and other[0]["cycles"]
                                                                and other[0]["cycles"]["median"]))
    return (low, high)


def test_two_spikes_and_prefetch(tap):
    out = outdir()
    spikes = {}
    for label, program, spec in (("baseline", LOOP, BASELINE), ("prefetch", LOOP_PREFETCH, PREFETCH)):
        s, b = sim("spr", program, spec)
        try:
            path = os.path.join(out, label + ".json")
            rc, _, err = cli(s, "timing", "--format", "json", "-o", path, "--", program, CPU_SECONDS)
            if not tap.eq(rc, 0, "%s: pmugate timing -- %s exits with its status" % (label, os.path.basename(program))):
                tap.ok(False, "stderr", err)
                continue
            doc = json.load(open(path))
            tap.ok(doc["kind"] == "timing" and doc["mode"] == "branches" and doc["simulated"] and
                   doc["exit_status"] == 0 and doc["samples"] > 0,
                   "%s: the document says what was recorded" % label,
                   {k: v for k, v in doc.items() if k != "blocks"})
            spikes[label] = check_distribution(tap, doc, b, spec, label)
            tap.ok(s.daemon.alive(), "%s: the daemon keeps serving" % label)
        finally:
            s.stop()
    if spikes.get("baseline") and spikes.get("prefetch") and None not in spikes["baseline"] + spikes["prefetch"]:
        tap.ok(spikes["prefetch"][0] < spikes["baseline"][0] and spikes["prefetch"][1] < spikes["baseline"][1],
               "the prefetch moves both spikes left: %s -> %s" % (spikes["baseline"], spikes["prefetch"]))
    else:
        tap.ok(False, "the prefetch moves both spikes left", spikes)
    try:
        import matplotlib  # noqa: F401 (only whether pmugate plot can run)
    except ImportError:
        tap.skip("pmugate plot of two timing results", "needs python3-matplotlib (contrib/install-deps.sh)")
        return
    png = os.path.join(out, "both.png")
    p = subprocess.run([t.PMUGATE, "plot", "-o", png, os.path.join(out, "baseline.json"),
                        os.path.join(out, "prefetch.json")], capture_output=True, text=True, timeout=300)
    if not tap.ok(p.returncode == 0 and p.stdout.strip() == png and "Traceback" not in p.stderr,
                  "pmugate plot of the two results draws a PNG", p.stderr):
        return
    # the drawn histograms (the medians' lines have no label of their own)
    panels = [dict(x, series=[c for c in x["series"] if not c["label"].startswith("_")])
              for x in json.loads(png_text(png)["Panels"])]
    first = next((x for x in panels if "load_one" in x["title"]), panels[0])
    tap.ok(len(first["series"]) == 2 and all(x["points"] > 10 for x in first["series"]) and
           "load_one" in first["title"] and first["xlabel"] == "cycles",
           "a panel overlays load_one's histograms of both runs", first)
    tap.ok(any("timing_loop " in x["label"] for x in first["series"]) and
           any("timing_loop_prefetch" in x["label"] for x in first["series"]), "each run named in the legend",
           first["series"])
    png1 = os.path.join(out, "one.png")
    p = subprocess.run([t.PMUGATE, "plot", "-o", png1, os.path.join(out, "baseline.json")], capture_output=True,
                       text=True, timeout=300)
    panels = [dict(x, series=[c for c in x["series"] if not c["label"].startswith("_")])
              for x in json.loads(png_text(png1)["Panels"])] if p.returncode == 0 else []
    tap.ok(panels and all(len(x["series"]) == 1 for x in panels) and len(panels) >= 3,
           "pmugate plot of one result: a histogram per block", p.stderr or panels)


def test_block_top_and_formats(tap):
    out = outdir()
    s, b = sim("spr", LOOP, BASELINE)
    try:
        ret = file_offset(b, b["ret"])
        for query in ("0x%x" % ret, "load_one"):
            rc, _, err = cli(s, "timing", "--block", query, "--", LOOP, "0.2")
            tap.eq(rc, 0, "--block %s exits 0" % query)
            tap.ok(re.search(r"\bmov\b", err) and re.search(r"\bret\b", err),
                   "--block %s lists the block's instructions (mov ... ret)" % query, err)
            tap.ok(re.search(r"cycles: min \d+, median [\d.]+, mean [\d.]+, p90 \d+, max \d+", err) and
                   "histogram" in err, "--block %s prints the timing and histogram under them" % query, err)
            tap.ok("load_one" in err, "--block %s names the function" % query, err)
        rc, _, err = cli(s, "timing", "--block", "0x1", "--", LOOP, "0.1")
        tap.ok(rc == 1 and "no recorded block ends there" in err, "--block of no block says so", err)

        path = os.path.join(out, "top.csv")
        rc, _, err = cli(s, "timing", "--top", "2", "-o", path, "--", LOOP, "0.2")
        rows = list(csv.reader(open(path))) if rc == 0 else []
        tap.ok(rc == 0 and len(rows) == 3, "--top 2 -o FILE.csv: a header and two rows", rows or err)
        if rows:
            header = rows[0]
            tap.ok(header[:3] == ["module", "start", "end"] and "median" in header and "p90" in header and
                   "cycles_na" in header, "the CSV header names the columns", header)
            counts = [int(r[header.index("count")]) for r in rows[1:]]
            tap.ok(counts == sorted(counts, reverse=True), "the hottest first", counts)
        path = os.path.join(out, "top.json")
        rc, _, err = cli(s, "timing", "--top", "1", "--format", "json", "-o", path, "--", LOOP, "0.2")
        doc = json.load(open(path)) if rc == 0 else {}
        tap.ok(doc and len(doc["blocks"]) == 1 and doc["blocks_total"] >= 3, "--top 1: one block of the three",
               doc or err)
        keys = {"module", "start", "end", "address_start", "address_end", "function", "source", "instructions",
                "count", "no_cycles", "cycles", "cycles_na"}
        tap.ok(doc and keys <= set(doc["blocks"][0]) and {"n", "min", "median", "mean", "p90", "max", "histogram"} <=
               set(doc["blocks"][0]["cycles"] or {}), "JSON: each block's keys", doc and doc["blocks"][0])
        tap.ok(doc and isinstance(doc["blocks"][0]["instructions"], int) and doc["blocks"][0]["instructions"] > 0,
               "JSON: the block's instruction count from the disassembly", doc and doc["blocks"][0])
        path = os.path.join(out, "top.jsonl")
        rc, _, err = cli(s, "timing", "--top", "3", "-o", path, "--", LOOP, "0.1")
        lines = open(path).read().splitlines() if rc == 0 else []
        tap.ok(len(lines) == 1 and json.loads(lines[0])["kind"] == "timing", "-o FILE.jsonl: the document on a line",
               lines or err)
        rc, _, err = cli(s, "timing", "--top", "3", "--", LOOP, CPU_SECONDS)
        tap.ok(rc == 0 and re.search(r"block \(file: addresses\)\s+insns\s+count\s+timed\s+min\s+median\s+mean\s+p90"
                                     r"\s+max", err) and "load_one" in err, "the table, on stderr with a command", err)
        rc, _, err = cli(s, "timing", "-o", os.path.join(out, "x.png"), "--", LOOP, "0.1")
        tap.ok(rc == 2 and "unknown suffix" in err, "-o with an unknown suffix is refused", err)
        tap.ok(s.daemon.alive(), "the daemon keeps serving")
    finally:
        s.stop()


def test_stripped(tap):
    """A stripped program: its blocks timed and named by their addresses, and the table says
    why there are no names."""
    out = outdir()
    stripped = os.path.join(out, "timing_loop_stripped")
    subprocess.run(["strip", "-o", stripped, LOOP], check=True)
    os.chmod(stripped, 0o755)
    b = program_blocks(LOOP)
    s = t.Sim("spr", config=conf(t.workdir()), cores=2, smt=False, extra=lbr_section(stripped, b, BASELINE))
    try:
        path = os.path.join(out, "stripped.json")
        rc, _, err = cli(s, "timing", "--format", "json", "-o", path, "--", stripped, CPU_SECONDS)
        doc = json.load(open(path)) if rc == 0 else {}
        found = block_ending(doc, file_offset(b, b["ret"])) if doc else []
        tap.ok(len(found) == 1 and found[0]["function"] is None and found[0]["cycles"] and
               abs(found[0]["cycles"]["median"] - mixture_median(BASELINE)) <= 1.0,
               "stripped: the block ending at the ret is timed, with no function name", found or err)
        tap.ok(found and found[0]["file_start"] == b["entry"] and isinstance(found[0]["instructions"], int) and
               found[0]["instructions"] > 0, "stripped: its file addresses and instructions are still known", found)
        rc, _, err = cli(s, "timing", "--", stripped, CPU_SECONDS)
        tap.ok(rc == 0 and "stripped: no symbol table" in err, "the table says the file is stripped", err)
    finally:
        s.stop()


def real_node(lbr=True):
    """A real daemon on a fake Sapphire Rapids of this machine's CPUs: IP mode samples through
    the real kernel's cpu-clock; branch mode finds no LBR in its PMU."""
    d = t.workdir()
    ncpu = os.cpu_count() or 2
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=ncpu, smt=False)
    m.set_user("user", USER, t.USER_GID, [t.USER_GID])
    m.set_user("other", OTHER_USER, t.USER_GID, [t.USER_GID])
    # under --root the daemon reads the kernel's rate bound there: this kernel's
    with open("/proc/sys/kernel/perf_event_max_sample_rate") as f:
        m._write("proc/sys/kernel/perf_event_max_sample_rate", f.read())
    return t.Daemon(d, ["--root=" + m.root], config=conf(d, lbr))


def test_setuid_exec(tap, dm, out):
    """The command execs a set-user-ID program while it is sampled: the kernel detaches the
    process's perf events at that exec (the process is no longer the user's to observe), so its
    samples end there, and pmugate timing says so."""
    setuid_dir = os.path.join(out, "setuid")
    os.makedirs(setuid_dir, exist_ok=True)
    os.chmod(setuid_dir, 0o755)
    setuid_loop = os.path.join(setuid_dir, "setuid_loop")
    shutil.copyfile(LOOP, setuid_loop)
    os.chown(setuid_loop, 0, 0)
    os.chmod(setuid_loop, 0o4755)
    path = os.path.join(out, "setuid.json")
    # the shell runs the loop as its child (sampled, inherited), then becomes the setuid copy
    script = "%s 0.3; exec %s 0.6" % (LOOP, setuid_loop)
    rc, _, err = t.run_cli([t.PMUGATE, "timing", "--mode", "ips", "--format", "json", "-o", path, "--", "sh", "-c",
                            script], dm.socket, uid=USER, gid=t.USER_GID, groups=[t.USER_GID], timeout=120)
    doc = json.load(open(path)) if rc == 0 else {}
    files = {}
    for f in doc.get("functions", []):
        files[f.get("module")] = files.get(f.get("module"), 0) + f["samples"]
    tap.ok(rc == 0 and files.get(LOOP, 0) > 0, "setuid exec: the loop before it is sampled", (err, files))
    tap.eq(files.get(setuid_loop, 0), 0, "setuid exec: nothing of the set-user-ID program is sampled")
    tap.ok("set-user-ID" in err and "stopped sampling" in err,
           "setuid exec: pmugate timing says the kernel stopped sampling the command there", err)


def test_ips_on_the_real_kernel(tap):
    out = outdir()
    dm = real_node()
    try:
        path = os.path.join(out, "ips.json")
        rc, _, err = t.run_cli([t.PMUGATE, "timing", "--mode", "ips", "--format", "json", "-o", path, "--", LOOP,
                                "0.5"], dm.socket, uid=USER, gid=t.USER_GID, groups=[t.USER_GID], timeout=120)
        tap.eq(rc, 0, "pmugate timing --mode ips -- loop exits 0")
        doc = json.load(open(path)) if rc == 0 else {}
        funcs = {f["function"]: f["share"] for f in doc.get("functions", [])}
        hot = funcs.get("load_one", 0) + funcs.get("hot_loop", 0)
        tap.ok(doc and doc["samples"] >= 50, "samples from the real kernel: %s" % doc.get("samples"), err)
        tap.ok(hot > 0.6, "most samples in the loop's functions, named: %.2f (%s)" % (hot, list(funcs)[:5]), funcs)
        tap.ok(doc and doc["functions"][0]["function"] in ("load_one", "hot_loop"),
               "the hottest function is the loop's", doc and doc["functions"][:3])
        tap.ok(doc and any(re.match(r".*timing_loop\.c:\d+$", ln["source"]) for ln in doc["lines"]),
               "samples per source line of the loop's file", doc and doc["lines"][:3])
        test_setuid_exec(tap, dm, out)
        rc, _, err = t.run_cli([t.PMUGATE, "timing", "--", LOOP, "0.1"], dm.socket, uid=USER, gid=t.USER_GID,
                               groups=[t.USER_GID])
        tap.ok(rc == 1 and "branch stack" in err and "mode ips" in err,
               "branch mode without an LBR is refused, and mode ips suggested", err)
        tap.ok(dm.alive(), "the daemon keeps serving")
    finally:
        dm.stop()


def test_hostile(tap):
    out = outdir()
    # the class off
    s, _ = sim("spr", LOOP, BASELINE, lbr=False)
    try:
        rc, _, err = cli(s, "timing", "--", LOOP, "0.1")
        tap.ok(rc == 1 and "lbr" in err, "the class lbr not granted: refused, naming it", err)
    finally:
        s.stop()
    # AMD: its LBR records no cycles
    s, _ = sim("zen4", LOOP, BASELINE)
    try:
        rc, _, err = cli(s, "timing", "--", LOOP, "0.1")
        tap.ok(rc == 1 and "records no cycles" in err and "mode ips" in err,
               "zen4: refused, saying its LBR records no cycles, and mode ips suggested", err)
    finally:
        s.stop()
    s, _ = sim("spr", LOOP, BASELINE)
    try:
        # another user's process
        other = t.spawn(["sleep", "30"], preexec_fn=t.as_user(OTHER_USER, t.USER_GID, [t.USER_GID]))
        try:
            rc, _, err = cli(s, "timing", "-p", str(other.pid), "--duration", "0.2")
            tap.ok(rc == 1 and "uid" in err, "-p another user's process: refused", err)
        finally:
            t.end(other)
        # a process that is gone
        gone = subprocess.Popen(["true"])
        gone.wait()
        rc, _, err = cli(s, "timing", "-p", str(gone.pid), "--duration", "0.2")
        tap.ok(rc == 1 and ("No such process" in err or "gone" in err), "-p a process that exited: said so", err)
        # absurd periods
        for period in ("1", "100000000000000000"):
            rc, _, err = cli(s, "timing", "--period", period, "--", LOOP, "0.1")
            tap.ok(rc == 1 and "period" in err, "--period %s: refused with the bounds" % period, err)
        rc, _, err = cli(s, "timing", "--period", "-5", "--", LOOP, "0.1")
        tap.ok(rc == 2 and "--period" in err, "--period -5: a usage error", err)
        # a command that is not found
        rc, _, err = cli(s, "timing", "--", "/nonexistent/prog")
        tap.ok(rc == 127 and "/nonexistent/prog" in err, "a command that is not found: 127, named", err)
        rc, usage, err = cli(s, "timing", "--help")
        tap.ok(rc == 0 and usage.startswith("Usage: pmugate timing") and not err, "pmugate timing --help",
               usage + err)
        rc, _, err = cli(s, "timing", "--bogus", "--", LOOP)
        tap.ok(rc == 2 and err.startswith("pmugate: ") and err.count("\n") == 1,
               "an unknown option: exit 2, one line with the program's prefix", err)
        rc, _, err = cli(s, "timing", "--mode", "bogus", "--", LOOP)
        tap.ok(rc == 2 and "--mode" in err, "--mode bogus: a usage error", err)
        rc, _, err = cli(s, "timing", "-p", "1", "--", LOOP)
        tap.ok(rc == 2, "-p and a command together: a usage error", err)
        rc, _, err = cli(s, "timing", "--mode", "ips", "--block", "load_one", "--", LOOP)
        tap.ok(rc == 2 and "--block" in err, "--block in IP mode: a usage error", err)
        # -p of one's own running process works and ends at --duration
        own = t.spawn([LOOP, "5"], preexec_fn=t.as_user(USER, t.USER_GID, [t.USER_GID]))
        try:
            time.sleep(0.1)
            path = os.path.join(out, "pid.json")
            rc, _, err = cli(s, "timing", "-p", str(own.pid), "--duration", "0.5", "--format", "json", "-o", path)
            doc = json.load(open(path)) if rc == 0 else {}
            tap.ok(rc == 0 and doc["pid"] == own.pid and doc["samples"] > 0,
                   "-p of one's own process, --duration 0.5: recorded", err)
            tap.ok(doc and any(b["function"] == "load_one" for b in doc["blocks"]),
                   "its blocks named through /proc/PID/maps", doc and doc["blocks"][:2])
        finally:
            t.end(own)
        # the daemon still serves a good request
        rc, _, err = cli(s, "timing", "--top", "1", "--", LOOP, "0.1")
        tap.ok(rc == 0 and s.daemon.alive(), "after all that the daemon still serves", err)
    finally:
        s.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_two_spikes_and_prefetch, test_block_top_and_formats, test_stripped,
                          test_ips_on_the_real_kernel, test_hostile]))
