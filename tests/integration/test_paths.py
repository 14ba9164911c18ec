#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Paths from the build configuration: the daemon's --help, the generated man pages and the
Slurm scripts name the directories meson was configured with (a /usr prefix gives /etc), and
the Slurm scripts tell a node without pmugate (quiet, exit 0) from a node whose pmugated cannot
be reached (logged as an error)."""

import json
import os
import re
import socket
import subprocess
import sys
import tempfile

import pmugatetest as t

BUILD = os.path.abspath(t.BUILD)
SOURCE = os.path.abspath(t.SOURCE)
SLURM = os.path.join(BUILD, "contrib", "slurm")


def sh(argv, env=None, timeout=60):
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def configured_dirs(build):
    """The directories meson says this build installs to, made absolute under the prefix."""
    rc, out, err = sh(["meson", "introspect", "--buildoptions", build])
    if rc != 0:
        raise RuntimeError("meson introspect failed: " + err)
    opts = {o["name"]: o["value"] for o in json.loads(out)}
    prefix = opts["prefix"]
    d = {k: os.path.join(prefix, opts[k])
         for k in ("sysconfdir", "datadir", "bindir", "sbindir", "libexecdir", "mandir")}
    if prefix == "/usr":
        d["sysconfdir"] = "/etc"
    d["prefix"] = prefix
    return d


def build_config(build):
    with open(os.path.join(build, "build-config.h")) as f:
        return dict(re.findall(r'#define (PMUGATE_\w+) "([^"]*)"', f.read()))


def test_this_build_agrees(tap):
    d = configured_dirs(BUILD)
    conf = os.path.join(d["sysconfdir"], "pmugate", "pmugate.conf")
    allowlists = os.path.join(d["datadir"], "pmugate", "allowlists")
    rc, out, err = sh([t.PMUGATED, "--help"])
    tap.ok(rc == 0 and "(default: %s)" % conf in out and "(default: %s)" % allowlists in out,
           "pmugated --help names the configured config file and allowlists (%s)" % conf, out + err)
    with open(os.path.join(BUILD, "docs", "pmugated.8")) as f:
        page = f.read()
    tap.ok(conf in page and allowlists in page, "the built pmugated(8) names the same paths")
    if d["sysconfdir"] != "/etc":
        tap.ok(not re.search(r"(?<![\w/])/etc/pmugate", page),
               "pmugated(8) does not name /etc/pmugate for sysconfdir %s" % d["sysconfdir"])
    with open(os.path.join(BUILD, "docs", "pmugate.1")) as f:
        page = f.read()
    docdir = os.path.join(d["datadir"], "doc", "pmugate")
    tap.ok(os.path.join(docdir, "GROUPS.md") in page and os.path.join(d["datadir"], "pmugate", "groups") in page,
           "the built pmugate(1) points at the installed GROUPS.md and groups directory")
    for name in ("pmugate.1", "pmugated.8", "pmugatectl.8"):
        with open(os.path.join(BUILD, "docs", name)) as f:
            refs = re.findall(r"(?<![\w/])docs/\S+", f.read())
        tap.eq(refs, [], "%s names no document by its place in the source tree" % name)
    installed = sorted(os.path.basename(p) for p in re.findall(r"/doc/pmugate/(\w+\.md)", page))
    rc, out, err = sh(["meson", "introspect", "--installed", BUILD])
    tap.ok(rc == 0 and all(any(p.endswith("/doc/pmugate/" + n) for p in json.loads(out).values()) for n in installed),
           "every document pmugate(1) names is installed (%s)" % ", ".join(installed))
    for kind in ("prolog", "epilog"):
        with open(os.path.join(SLURM, "pmugate-%s.sh" % kind)) as f:
            script = f.read()
        tap.ok("PMUGATECTL=${PMUGATECTL:-%s}" % os.path.join(d["bindir"], "pmugatectl") in script and
               "${PMUGATE_SLURM_ENV:-%s}" % os.path.join(d["sysconfdir"], "pmugate", "slurm.env") in script
               and "@" not in script,
               "the %s script's defaults are the configured bindir and sysconfdir" % kind)
    # pmugatectl where admins who are not root look (bindir, as scontrol), a link in sbindir
    rc, out, err = sh(["meson", "introspect", "--installed", BUILD])
    installed = set(json.loads(out).values()) if rc == 0 else set()
    tap.ok(os.path.join(d["bindir"], "pmugatectl") in installed,
           "pmugatectl is installed in bindir (%s)" % d["bindir"], sorted(p for p in installed if "ctl" in p))
    with tempfile.TemporaryDirectory(prefix="pmugate-destdir-") as dest:
        rc, out, err = sh(["meson", "install", "-C", BUILD, "--no-rebuild", "--destdir", dest], timeout=120)
        ctl_bin = dest + os.path.join(d["bindir"], "pmugatectl")
        ctl_sbin = dest + os.path.join(d["sbindir"], "pmugatectl")
        link = os.readlink(ctl_sbin) if os.path.islink(ctl_sbin) else None
        tap.ok(rc == 0 and os.path.isfile(ctl_bin) and not os.path.islink(ctl_bin) and link is not None and
               os.path.samefile(os.path.join(os.path.dirname(ctl_sbin), link), ctl_bin),
               "sbindir keeps a relative link to it for scripts that name the old path (%s)" % link, out[-500:] + err)


def test_prefixes(tap):
    """A /usr prefix reads /etc; /usr/local reads /usr/local/etc; everything generated agrees."""
    for prefix, etc in (("/usr", "/etc"), ("/usr/local", "/usr/local/etc")):
        with tempfile.TemporaryDirectory(prefix="pmugate-prefix-") as build:
            rc, out, err = sh(["meson", "setup", build, SOURCE, "--prefix=" + prefix, "-Dtests=false"], timeout=120)
            if not tap.ok(rc == 0, "meson setup --prefix=%s" % prefix, out[-2000:] + err):
                continue
            rc, out, err = sh(["ninja", "-C", build, "docs/pmugate.1", "docs/pmugated.8", "docs/pmugatectl.8"])
            tap.ok(rc == 0, "prefix %s: the man pages build" % prefix, out + err)
            cfg = build_config(build)
            tap.eq(cfg.get("PMUGATE_CONFIG_FILE"), etc + "/pmugate/pmugate.conf",
                   "prefix %s: the daemon reads %s/pmugate/pmugate.conf" % (prefix, etc))
            share = "/usr/share" if prefix == "/usr" else prefix + "/share"
            tap.eq((cfg.get("PMUGATE_ALLOWLIST_DIR"), cfg.get("PMUGATE_GROUP_DIR"), cfg.get("PMUGATE_DOC_DIR")),
                   (share + "/pmugate/allowlists", share + "/pmugate/groups", share + "/doc/pmugate"),
                   "prefix %s: allowlists, groups and docs under %s" % (prefix, share))
            pages = ""
            for page in ("pmugate.1", "pmugated.8", "pmugatectl.8"):
                with open(os.path.join(build, "docs", page)) as f:
                    pages += f.read()
            tap.ok(etc + "/pmugate/pmugate.conf" in pages and share + "/pmugate/allowlists" in pages,
                   "prefix %s: the man pages name the configured paths" % prefix)
            wrong = [p for p in ("/etc/pmugate", "/usr/share/pmugate", "/usr/share/doc/pmugate", "/usr/sbin/")
                     if prefix != "/usr" and re.search(r"(?<![\w/])" + re.escape(p), pages)]
            tap.eq(wrong, [], "prefix %s: the man pages name no /usr-prefix path" % prefix)
            with open(os.path.join(build, "contrib", "slurm", "pmugate-prolog.sh")) as f:
                tap.ok("PMUGATECTL=${PMUGATECTL:-%s/bin/pmugatectl}" % prefix in f.read(),
                       "prefix %s: the Prolog finds pmugatectl in %s/bin" % (prefix, prefix))


class FakeLogger:
    """Stands in for logger(1): records each call's arguments, one line each."""

    def __init__(self, d):
        self.path = os.path.join(d, "logger")
        self.log = os.path.join(d, "logger.log")
        with open(self.path, "w") as f:
            f.write('#!/bin/sh\nprintf "%%s\\n" "$*" >>%s\n' % self.log)
        os.chmod(self.path, 0o755)

    def calls(self):
        """The calls since the last look."""
        try:
            with open(self.log) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        os.unlink(self.log)
        return lines


def run_script(kind, env):
    e = {"PATH": "/usr/bin:/bin", "PMUGATE_SLURM_ENV": "/nonexistent", "SLURM_JOB_ID": "4711",
         "SLURM_JOB_UID": "1000"}
    e.update(env)
    return sh([os.path.join(SLURM, "pmugate-%s.sh" % kind)], env=e, timeout=30)


def test_slurm_scripts(tap):
    d = t.workdir()
    logger = FakeLogger(d)
    conf = os.path.join(d, "pmugate.conf")
    with open(conf, "w") as f:
        f.write("[access]\nmode = job\nuser_groups =\n")
    daemon = t.Daemon(d, ["--backend=sim", "--sim-model=spr"], config=conf)
    try:
        ctl = os.path.abspath(t.PMUGATECTL)
        stale = os.path.join(d, "stale.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.bind(stale)
        s.close()
        for kind in ("prolog", "epilog"):
            base = {"PMUGATE_LOGGER": logger.path}
            rc, out, err = run_script(kind, dict(base, PMUGATECTL=os.path.join(d, "not-installed", "pmugatectl"),
                                                 PMUGATE_SOCKET=daemon.socket))
            tap.ok(rc == 0 and not out and not err and logger.calls() == [],
                   "%s: a node without pmugatectl exits 0 and says nothing" % kind, (rc, out, err))
            for what, sock in (("no socket", os.path.join(d, "missing.sock")), ("a stale socket", stale)):
                env = dict(base, PMUGATECTL=ctl, PMUGATE_SOCKET=sock)
                rc, out, err = run_script(kind, env)
                calls = logger.calls()
                tap.ok(rc == 0 and len(calls) == 1 and "-p daemon.err" in calls[0] and
                       "pmugated cannot be reached" in calls[0],
                       "%s: pmugate installed, %s: logged to syslog as an error, exit 0" % (kind, what),
                       (rc, err, calls))
                rc, out, err = run_script(kind, dict(env, PMUGATE_REQUIRED="yes"))
                logger.calls()
                tap.ok(rc == 1 and "cannot be reached" in err,
                       "%s: with PMUGATE_REQUIRED=yes, %s drains the node (exit 1)" % (kind, what), (rc, err))
        # The real thing: a grant and its revoke through the daemon, pmugatectl from the defaults
        # the env file gives, as an admin's /etc/pmugate/slurm.env would.
        env_file = os.path.join(d, "slurm.env")
        with open(env_file, "w") as f:
            f.write("PMUGATECTL=%s\nPMUGATE_SOCKET=%s\nPMUGATE_LOGGER=%s\n" % (ctl, daemon.socket, logger.path))
        rc, out, err = run_script("prolog", {"PMUGATE_SLURM_ENV": env_file})
        rc2, status, err2 = sh([ctl, "--socket=" + daemon.socket, "status"])
        tap.ok(rc == 0 and "4711" in status and logger.calls() == [],
               "prolog: with the daemon running it grants job 4711, quietly", (rc, err, status, err2))
        rc, out, err = run_script("epilog", {"PMUGATE_SLURM_ENV": env_file})
        rc2, status, err2 = sh([ctl, "--socket=" + daemon.socket, "status"])
        tap.ok(rc == 0 and "4711" not in status and logger.calls() == [],
               "epilog: revokes it, quietly", (rc, err, status))
    finally:
        daemon.stop()


def needed(path):
    rc, out, err = sh(["readelf", "-d", path])
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def test_pmugatectl_loads_little(tap):
    """An admin command (a Slurm Prolog's grant) must not pay for loading libpfm4, muparser and
    the C++ runtime: pmugatectl links only libpmugate's plain-C part (bench/bench-ctl.py)."""
    ctl = needed(t.PMUGATECTL)
    heavy = [lib for lib in ctl if re.match(r"lib(pmugate|pfm|muparser|stdc\+\+|gomp|inih|json-c)\.", lib)]
    tap.ok(ctl and not heavy, "pmugatectl needs no libpmugate, libpfm4, muparser, libstdc++ or inih", ctl)
    tap.ok(any(lib.startswith("libpmugate.so") for lib in needed(t.PMUGATE)),
           "control: pmugate does load libpmugate", needed(t.PMUGATE))


# Installed paths the documents name that the build does not install, each with its reason.
NOT_INSTALLED = {
    "/etc/pmugate/slurm.env": "the admin's optional settings for the Slurm scripts, written by the admin",
    "/etc/prometheus/pmugate-nodes.yml": "the admin's Prometheus target list, an example in the README",
    "/etc/systemd/system/pmugated.service.d/uncore.conf": "the admin's drop-in, an example in SECURITY.md",
}
# What the documents tell users to run, import or copy: must be installed and packaged.
SHIPPED = ["/usr/libexec/pmugate/pmugate-likwid-divert", "/usr/share/pmugate/grafana/dashboards/pmugate-topdown.json",
           "/usr/share/doc/pmugate/examples/topdown-example.c", "/usr/share/doc/pmugate/examples/marker-omp.c",
           "/usr/share/man/man1/pmugate-plot.1", "/usr/bin/pmugate-plot"]
DOCUMENTS = ["README.md", "SECURITY.md", "contrib/slurm/README.md"] + \
    ["docs/" + n for n in sorted(os.listdir(os.path.join(SOURCE, "docs"))) if n.endswith(".md")] + \
    ["docs/man/" + n for n in sorted(os.listdir(os.path.join(SOURCE, "docs", "man")))]


def named_paths():
    """{path: [document, ...]} of the project's own installed paths the documents name."""
    found = {}
    for doc in DOCUMENTS:
        with open(os.path.join(SOURCE, doc)) as f:
            text = f.read().replace("\\-", "-")
        for m in re.finditer(r"(?<![\w/.$])/(?:usr/(?:share|libexec|lib|bin|sbin)|etc)/[\w./-]*pmugate[\w./-]*", text):
            path = m.group(0).rstrip(".,-")
            if "..." not in path:
                found.setdefault(path, []).append(doc)
    return found


def debian_patterns():
    """Every debian/*.install line, as (package, pattern)."""
    out = []
    for name in sorted(os.listdir(os.path.join(SOURCE, "debian"))):
        if name.endswith(".install"):
            with open(os.path.join(SOURCE, "debian", name)) as f:
                out += [(name[:-len(".install")], line.split()[0].replace("${DEB_HOST_MULTIARCH}", "*"))
                        for line in f if line.strip() and not line.startswith("#")]
    return out


def test_docs_name_installed_paths(tap):
    """Every installed path a document names is installed by a /usr build and put in a package
    by debian/*.install; so is what they tell users to run (the LIKWID divert script), import
    (the Grafana dashboard) or copy (the examples)."""
    import fnmatch
    with tempfile.TemporaryDirectory(prefix="pmugate-install-") as build:
        rc, out, err = sh(["meson", "setup", build, SOURCE, "--prefix=/usr", "--sysconfdir=/etc", "-Dtests=false"],
                          timeout=120)
        if not tap.ok(rc == 0, "meson setup --prefix=/usr", out[-2000:] + err):
            return
        rc, out, err = sh(["meson", "introspect", "--installed", build])
        installed = sorted(set(json.loads(out).values())) if rc == 0 else []
    tap.ok(len(installed) > 20, "meson introspect --installed lists what a /usr build installs", err)
    dirs = {os.path.join(SOURCE, "contrib", "grafana"): "/usr/share/pmugate/grafana"}

    def is_installed(path):
        # a file, a directory holding installed files, or a file in an installed directory
        # (install_subdir lists the directory only: its files are those of the source one)
        if path.rstrip("/") in installed or any(i.startswith(path.rstrip("/") + "/") for i in installed):
            return True
        for src, dest in dirs.items():
            if path.startswith(dest + "/") and dest in installed and \
                    os.path.exists(os.path.join(src, os.path.relpath(path, dest))):
                return True
        return False

    patterns = debian_patterns()

    def packaged(path):
        rel = path.lstrip("/")
        return [pkg for pkg, pat in patterns if (pat.endswith("/") and (rel + "/").startswith(pat)) or
                fnmatch.fnmatchcase(rel, pat) or fnmatch.fnmatchcase(rel, pat.rstrip("/") + "/*")]

    for path in SHIPPED:
        tap.ok(is_installed(path) and packaged(path) == ["pmugate"],
               "%s is installed and in the pmugate package" % path, (packaged(path), installed))
    named = named_paths()
    tap.ok(len(named) >= 15, "the documents name %d installed paths" % len(named), named)
    missing = {p: d for p, d in named.items() if p not in NOT_INSTALLED and not is_installed(p)}
    tap.eq(missing, {}, "every installed path a document names is installed")
    unpackaged = {p: d for p, d in named.items() if p not in NOT_INSTALLED and not packaged(p)}
    tap.eq(unpackaged, {}, "and a debian/*.install line puts it in a package")
    source_only = {doc: re.findall(r"(?<![\w/.])contrib/(?:likwid|grafana)/[\w.-]+|client/examples/[\w.-]+",
                                   open(os.path.join(SOURCE, doc)).read()) for doc in DOCUMENTS}
    unexplained = {doc: refs for doc, refs in source_only.items() if refs and
                   not any(p in open(os.path.join(SOURCE, doc)).read() for p in SHIPPED)}
    tap.eq(unexplained, {}, "a document naming a shipped file by its place in the source tree names "
           "where it is installed too")


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_this_build_agrees, test_prefixes, test_slurm_scripts, test_pmugatectl_loads_little,
                          test_docs_name_installed_paths]))
