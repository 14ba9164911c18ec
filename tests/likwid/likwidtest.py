# SPDX-License-Identifier: LGPL-2.1-or-later
"""Running the real LIKWID (Debian's likwid package) against pmugated's simulated PMU.

LIKWID learns the CPU from /etc/likwid_topo.cfg when that file exists. The tests never touch
the real /etc: each LIKWID run happens in a private mount namespace where an overlay puts the
file on top of /etc, and the namespace (with the overlay) disappears when the run ends."""

import os
import shutil
import subprocess
import tempfile

import pmugatetest as t

LIKWID_PERFCTR = shutil.which("likwid-perfctr") or "/usr/bin/likwid-perfctr"
ACCESSD = os.environ.get("PMUGATE_LIKWID_ACCESSD",
                         os.path.join(t.BUILD, "client", "likwid", "pmugate-likwid-accessD"))

# key: (family, model, stepping, perf_version, GP counters, fixed counters) as LIKWID's
# topology file gives them (CPUID leaf 0xA on the real parts).
LIKWID_MODELS = {
    "skx": (6, 85, 4, 4, 4, 3),
    "clx": (6, 85, 7, 4, 4, 3),
    "icx": (6, 106, 6, 5, 8, 4),
}


def missing():
    """Why LIKWID cannot run here, or None."""
    if not os.path.exists(LIKWID_PERFCTR):
        return "likwid-perfctr is not installed (contrib/install-deps.sh installs Debian's likwid)"
    if not shutil.which("unshare"):
        return "unshare (util-linux) is missing"
    if (os.cpu_count() or 1) < 2:
        return "LIKWID pins to CPUs 0-1; this machine has one CPU"
    if os.path.exists("/etc/likwid.cfg"):
        return "/etc/likwid.cfg exists: LIKWID 5.2 then ignores the topology file the tests provide"
    probe = overlay_command(t.workdir(), ["true"])
    if subprocess.run(probe, capture_output=True).returncode != 0:
        return "cannot mount an overlay on /etc in a private mount namespace"
    return None


def topology(model, cpus=2):
    family, model_id, stepping, version, gp, fixed = LIKWID_MODELS[model]
    lines = [
        "cpuid_info features = FP MMX SSE SSE2 HTT MMX SSSE FMA SSE4.1 SSE4.2 AES AVX RDRAND AVX2 AVX512 SSE3",
        "cpuid_info perf_width_ctr = 48",
        "cpuid_info turbo = 0",
        "cpuid_info family = %d" % family,
        "cpuid_info architecture = x86_64",
        "cpuid_info osname = Intel(R) Xeon(R) CPU simulated by pmugated",
        "cpuid_info perf_num_fixed_ctr = %d" % fixed,
        "cpuid_info featureFlags = 4316919823",
        "cpuid_info part = 0",
        "cpuid_info supportClientmem = 0",
        "cpuid_info model = %d" % model_id,
        "cpuid_info supportUncore = 1",
        "cpuid_info vendor = 0",
        "cpuid_info perf_version = %d" % version,
        "cpuid_info isIntel = 1",
        "cpuid_info perf_num_ctr = %d" % gp,
        "cpuid_info clock = 2000000000.0",
        "cpuid_info stepping = %d" % stepping,
        "cpuid_topology numSockets = 1",
        "cpuid_topology numCoresPerSocket = %d" % cpus,
        "cpuid_topology numHWThreads = %d" % cpus,
    ]
    caches = [(1, "DATACACHE", 8, 64, 32768, 1), (2, "UNIFIEDCACHE", 16, 1024, 1048576, 1),
              (3, "UNIFIEDCACHE", 11, 32768, 25952256, cpus)]
    for level, kind, assoc, sets, size, threads in caches:
        p = "cpuid_topology cacheLevels %d " % level
        lines += [p + "type = " + kind, p + "associativity = %d" % assoc, p + "sets = %d" % sets,
                  p + "lineSize = 64", p + "size = %d" % size, p + "threads = %d" % threads,
                  p + "inclusive = 0"]
    lines += ["cpuid_topology numCacheLevels = 3", "cpuid_topology numDies = 0"]
    for cpu in range(cpus):
        p = "cpuid_topology threadPool %d " % cpu
        lines += [p + "threadId = 0", p + "coreId = %d" % cpu, p + "packageId = 0", p + "apicId = %d" % cpu,
                  p + "dieId = 0"]
    lines += ["cpuid_topology numThreadsPerCore = 1", "numa_info numberOfNodes = 1", "numa_info nodes 1 id = 0",
              "numa_info nodes 1 numberOfProcessors = %d" % cpus]
    lines += ["numa_info nodes 1 processors %d = %d" % (cpu + 1, cpu) for cpu in range(cpus)]
    lines += ["numa_info nodes 1 numberOfDistances = 1", "numa_info nodes 1 freeMemory = 4000000",
              "numa_info nodes 1 distances 0 = 10", "numa_info nodes 1 totalMemory = 8000000"]
    return "\n".join(lines) + "\n"


def overlay_command(workdir, argv, model=None, user=None):
    """argv in a private mount namespace whose /etc has likwid_topo.cfg for model on top;
    user = (uid, gid) drops to that identity after mounting."""
    upper = os.path.join(workdir, "etc-upper")
    work = os.path.join(workdir, "etc-work")
    for d in (upper, work):
        os.makedirs(d, exist_ok=True)
    os.chmod(upper, 0o755)
    if model:
        with open(os.path.join(upper, "likwid_topo.cfg"), "w") as f:
            f.write(topology(model))
        os.chmod(os.path.join(upper, "likwid_topo.cfg"), 0o644)
    drop = []
    if user:
        uid, gid, groups = user
        drop = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid,
                "--groups=" + ",".join(str(g) for g in groups) if groups else "--clear-groups", "--"]
    script = 'mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1,workdir=$2" /etc && shift 2 && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", upper, work] + drop + argv


def shim_dir(workdir):
    """A directory holding likwid-accessD (a link to the forwarder), for the front of PATH."""
    d = os.path.join(workdir, "likwid-bin")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    link = os.path.join(d, "likwid-accessD")
    if not os.path.lexists(link):
        os.symlink(os.path.abspath(ACCESSD), link)
    return d


def perfctr_command(workdir, socket_path, model, args, user=None, env=None):
    """likwid-perfctr ARGS run by 'pmugate likwid', in the namespace with the topology file;
    returns (argv, environment)."""
    e = dict(os.environ)
    e["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin"
    e["PMUGATE_LIKWID_ACCESSD"] = os.path.abspath(ACCESSD)
    e.pop("LD_PRELOAD", None)
    if env:
        e.update(env)
    argv = [t.PMUGATE, "--socket=" + socket_path, "likwid", "--", LIKWID_PERFCTR] + list(args)
    return overlay_command(workdir, argv, model, user), e


def perfctr(workdir, socket_path, model, args, user=None, timeout=120, env=None):
    """Runs likwid-perfctr ARGS through pmugate; returns (rc, stdout, stderr). Output goes to
    files: when LIKWID 5.2 fails before it starts its workload, it leaves the workload stopped,
    holding any pipe open."""
    argv, e = perfctr_command(workdir, socket_path, model, args, user, env)
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(argv, stdout=out, stderr=err, text=True, env=e, cwd="/", start_new_session=True)
        try:
            p.wait(timeout=timeout)
        finally:
            try:
                os.killpg(p.pid, 9)
            except ProcessLookupError:
                pass
            p.wait()
        out.seek(0)
        err.seek(0)
        return p.returncode, out.read(), err.read()


def metric(out, name, column=1):
    """Value of a metric row of LIKWID's table ("| Branch rate | 0.2 |"), column 1 = first CPU."""
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > column and cells[0] == name:
            try:
                return float(cells[column])
            except ValueError:
                return None
    return None
