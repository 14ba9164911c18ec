#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Files are never written through a path another user controls: the Slurm Epilog's job summary
(written as root, through pmugatectl save-summary) against a user who plants links and files in
the summary directory, the Prolog's and Epilog's settings file, and pmugate stat -o against
links and files another user created first under a predictable name."""

import http.server
import json
import os
import socketserver
import stat
import subprocess
import threading

import pmugatetest as t

SLURM = os.path.join(t.BUILD, "contrib", "slurm")
ATTACKER = t.UNPRIVILEGED_UID + 1
VICTIM = t.UNPRIVILEGED_UID
SUMMARY = {"job": "5150", "cpus": "0-1", "ipc": 1.4}
SECRET = "root's secret\n"


class FakeExporter:
    """Answers GET /jobs/ID with SUMMARY, as pmugate-exporter does for a job it saw."""

    def __init__(self):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = json.dumps(SUMMARY).encode()
                self.send_response(200 if self.path.startswith("/jobs/") else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = socketserver.TCPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def as_attacker(fn):
    """Runs fn() as another user (a uid in no pmugate group), as a user on the node would."""
    return t.in_child_as(ATTACKER, ATTACKER, [], fn)


def secret_file(d):
    path = os.path.join(d, "secret")
    with open(path, "w") as f:
        f.write(SECRET)
    os.chmod(path, 0o600)
    return path


def untouched(path):
    with open(path) as f:
        return f.read() == SECRET and stat.S_IMODE(os.lstat(path).st_mode) == 0o600


def host():
    return subprocess.run(["/bin/hostname", "-s"], capture_output=True, text=True).stdout.strip()


def run_script(kind, d, env):
    e = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "5150", "SLURM_JOB_UID": str(VICTIM),
         "PMUGATECTL": os.path.abspath(t.PMUGATECTL), "PMUGATE_SOCKET": os.path.join(d, "no-daemon.sock"),
         "PMUGATE_SLURM_ENV": "/nonexistent", "PMUGATE_LOGGER": "/nonexistent"}
    e.update(env)
    p = subprocess.run(["/bin/sh", os.path.join(SLURM, "pmugate-%s.sh" % kind)], capture_output=True, text=True,
                       env=e, timeout=60)
    return p.returncode, p.stderr


def swapping_curl(d):
    """A curl that, once it has written its output, lets a user race the Epilog: every file
    next to the output that the user can replace becomes a symbolic link to the secret (what a
    user watching a directory it can write does between curl and chmod)."""
    path = os.path.join(d, "swapping-curl")
    with open(path, "w") as f:
        f.write("""#!/bin/sh
out=
prev=
for a in "$@"; do [ "$prev" = -o ] && out=$a; prev=$a; done
/usr/bin/curl "$@" || exit $?
dir=$(dirname "$out")
/usr/bin/setpriv --reuid=%d --regid=%d --clear-groups /bin/sh -c '
for f in "$1"/.[!.]* "$1"/*; do
        [ -f "$f" ] && rm -f "$f" 2>/dev/null && ln -s "$2" "$f"
done' sh "$dir" "$SECRET_PATH" 2>/dev/null
exit 0
""" % (ATTACKER, ATTACKER))
    os.chmod(path, 0o755)
    return path


def test_summary_race(tap):
    """The flaw of the shell version: curl -o and chmod on a name in a directory users can write."""
    d = t.workdir()
    exporter = FakeExporter()
    try:
        secret = secret_file(d)
        out = os.path.join(d, "summaries")
        os.mkdir(out)
        os.chmod(out, 0o777)
        rc, err = run_script("epilog", d, {"PMUGATE_JOB_SUMMARY_DIR": out, "PMUGATE_EXPORTER_URL": exporter.url,
                                           "CURL": swapping_curl(d), "SECRET_PATH": secret})
        tap.ok(rc == 0 and untouched(secret),
               "a user racing the Epilog in a world-writable summary directory cannot make a root-only file "
               "readable", (rc, err, oct(os.stat(secret).st_mode)))
        tap.ok("writable by group or others" in err and not any(n.endswith(".json") for n in os.listdir(out)),
               "the directory is refused with its reason, and nothing is written there", (err, os.listdir(out)))
        os.chmod(out, 0o1777)
        rc, err = run_script("epilog", d, {"PMUGATE_JOB_SUMMARY_DIR": out, "PMUGATE_EXPORTER_URL": exporter.url,
                                           "CURL": swapping_curl(d), "SECRET_PATH": secret})
        path = os.path.join(out, "5150.%s.json" % host())
        st = os.lstat(path) if os.path.lexists(path) else None
        tap.ok(rc == 0 and untouched(secret) and st and stat.S_ISREG(st.st_mode) and st.st_uid == 0 and
               stat.S_IMODE(st.st_mode) == 0o644 and json.load(open(path)) == SUMMARY,
               "with the sticky bit the summary is written, root's and 0644, and the race changes nothing",
               (rc, err, st))
    finally:
        exporter.stop()


def test_summary_planted(tap):
    d = t.workdir()
    exporter = FakeExporter()
    try:
        secret = secret_file(d)
        out = os.path.join(d, "summaries")
        os.mkdir(out)
        os.chmod(out, 0o1777)
        name = "5150.%s.json" % host()

        def plant():
            os.symlink(secret, os.path.join(out, name))
            with open(os.path.join(out, ".5150.%s.json.0000000000000000" % host()), "w") as f:
                f.write("planted")
            return True
        as_attacker(plant)
        rc, err = run_script("epilog", d, {"PMUGATE_JOB_SUMMARY_DIR": out, "PMUGATE_EXPORTER_URL": exporter.url})
        path = os.path.join(out, name)
        st = os.lstat(path)
        tap.ok(rc == 0 and untouched(secret) and stat.S_ISREG(st.st_mode) and st.st_uid == 0 and
               json.load(open(path)) == SUMMARY,
               "a link a user planted at the summary's name is replaced, never written through", (rc, err, st))
        leftovers = sorted(n for n in os.listdir(out) if n.startswith(".") and not n.endswith("0000000000000000"))
        tap.eq(leftovers, [], "no temporary file is left")

        user_dir = os.path.join(d, "users-dir")
        os.mkdir(user_dir)
        os.chown(user_dir, ATTACKER, ATTACKER)
        rc, err = run_script("epilog", d, {"PMUGATE_JOB_SUMMARY_DIR": user_dir,
                                           "PMUGATE_EXPORTER_URL": exporter.url})
        tap.ok(rc == 0 and "belongs to uid %d, not root" % ATTACKER in err and os.listdir(user_dir) == [],
               "a summary directory a user owns is refused (its owner could swap the file)", err)
        link = os.path.join(d, "link-to-summaries")
        os.symlink(out, link)
        rc, err = run_script("epilog", d, {"PMUGATE_JOB_SUMMARY_DIR": link, "PMUGATE_EXPORTER_URL": exporter.url})
        tap.ok(rc == 0 and "symbolic link" in err, "so is a path through a symbolic link", err)
        big = subprocess.run([t.PMUGATECTL, "save-summary", "--dir", out, "--name", "big.json"],
                             input=b"x" * (1024 * 1024 + 1), capture_output=True, timeout=30)
        tap.ok(big.returncode == 1 and b"larger than" in big.stderr and not os.path.exists(os.path.join(out, "big.json")),
               "pmugatectl save-summary refuses input over 1 MiB and writes nothing", big.stderr)
        bad = subprocess.run([t.PMUGATECTL, "save-summary", "--dir", out, "--name", "../x.json"],
                             input=b"{}", capture_output=True, timeout=30)
        tap.ok(bad.returncode == 1 and b"not a file name" in bad.stderr, "and a name that is not one component",
               bad.stderr)
    finally:
        exporter.stop()


def test_settings_file(tap):
    d = t.workdir()
    marker = os.path.join(d, "sourced")
    env_file = os.path.join(d, "slurm.env")
    with open(env_file, "w") as f:
        f.write(": >%s\n" % marker)
    for kind in ("prolog", "epilog"):
        for what, mode, owner in (("group-writable", 0o664, 0), ("world-writable", 0o646, 0),
                                  ("user-owned", 0o644, ATTACKER)):
            os.chown(env_file, owner, 0)
            os.chmod(env_file, mode)
            rc, err = run_script(kind, d, {"PMUGATE_SLURM_ENV": env_file})
            tap.ok(rc == 1 and not os.path.exists(marker) and "not sourcing %s" % env_file in err,
                   "%s: a %s slurm.env is not sourced, and the node drains (exit 1)" % (kind, what), (rc, err))
        os.chown(env_file, 0, 0)
        os.chmod(env_file, 0o644)
        rc, err = run_script(kind, d, {"PMUGATE_SLURM_ENV": env_file})
        tap.ok(os.path.exists(marker) and "not sourcing" not in err, "%s: root's own slurm.env is sourced" % kind,
               (rc, err))
        os.unlink(marker)
    # The Epilog still revokes the job (built-in settings) before it exits 1.
    conf = os.path.join(d, "pmugate.conf")
    with open(conf, "w") as f:
        f.write("[access]\nmode = job\nadmin_groups = %d\nuser_groups = %d\n" % (t.ADMIN_GID, t.USER_GID))
    daemon = t.Daemon(d, ["--backend=sim", "--sim-model=spr"], config=conf)
    try:
        ctl = [t.PMUGATECTL, "--socket=" + daemon.socket]
        granted = subprocess.run(ctl + ["grant", "--job", "5150", "--uid", str(VICTIM), "--cpus", "1"],
                                 capture_output=True, text=True, timeout=30)
        os.chmod(env_file, 0o666)
        rc, err = run_script("epilog", d, {"PMUGATE_SLURM_ENV": env_file, "PMUGATE_SOCKET": daemon.socket})
        status = subprocess.run(ctl + ["status"], capture_output=True, text=True, timeout=30).stdout
        tap.ok(granted.returncode == 0 and rc == 1 and "5150" not in status and not os.path.exists(marker)
               and "revoking with the built-in settings" in err,
               "epilog: with a refused slurm.env the job is still revoked, and the node drains", (rc, err, status))
    finally:
        daemon.stop()
    os.chmod(env_file, 0o644)
    shared = os.path.join(d, "shared-etc")
    os.mkdir(shared)
    os.chmod(shared, 0o777)
    moved = os.path.join(shared, "slurm.env")
    os.rename(env_file, moved)
    rc, err = run_script("epilog", d, {"PMUGATE_SLURM_ENV": moved})
    tap.ok(rc == 1 and not os.path.exists(marker) and "writable by group or others" in err,
           "nor is root's file in a directory others can write", err)


def test_stat_output(tap):
    d = t.workdir()
    daemon = t.Daemon(d, ["--backend=sim", "--sim-model=spr"])
    try:
        shared = os.path.join(d, "project")
        os.mkdir(shared)
        os.chmod(shared, 0o777)     # a shared directory without the sticky bit
        notes = os.path.join(shared, "notes.txt")
        with open(notes, "w") as f:
            f.write("the victim's own notes\n")
        os.chown(notes, VICTIM, VICTIM)
        link = os.path.join(shared, "out-4711.csv")
        theirs = os.path.join(shared, "out-4712.csv")

        def plant():
            os.symlink(notes, link)
            with open(theirs, "w") as f:
                f.write("planted\n")
            os.chmod(theirs, 0o666)
            return True
        as_attacker(plant)

        def stat_o(pattern, job):
            return t.run_cli([t.PMUGATE, "stat", "-e", "INST_RETIRED.ANY", "-c", "0", "-S", "0.1s",
                              "-o", os.path.join(shared, pattern)], daemon.socket, uid=VICTIM, gid=VICTIM,
                             groups=[t.USER_GID], env={"SLURM_JOB_ID": job})
        rc, out, err = stat_o("out-%j.csv", "4711")
        with open(notes) as f:
            kept = f.read() == "the victim's own notes\n"
        tap.ok(rc == 1 and kept and "symbolic link" in err,
               "pmugate stat -o onto a symbolic link another user planted is refused, the target untouched", err)
        rc, out, err = stat_o("out-%j.csv", "4712")
        with open(theirs) as f:
            kept = f.read() == "planted\n"
        tap.ok(rc == 1 and kept and "belongs to uid %d" % ATTACKER in err,
               "so is a file another user created first under the predictable name", err)
        rc, out, err = stat_o("out-%j.csv", "4713")
        mine = os.path.join(shared, "out-4713.csv")
        st = os.lstat(mine) if os.path.exists(mine) else None
        tap.ok(rc == 0 and st and st.st_uid == VICTIM and "INST_RETIRED.ANY" in open(mine).read(),
               "a new name is created, the caller's own", (rc, err))
        with open(mine, "a") as f:
            f.write("x" * 100000)
        rc, out, err = stat_o("out-%j.csv", "4713")
        tap.ok(rc == 0 and os.path.getsize(mine) < 100000, "and the caller's own file is overwritten", (rc, err))
        rc, out, err = t.run_cli(
            [t.PMUGATE, "stat", "-e", "INST_RETIRED.ANY", "-c", "0", "-S", "0.1s", "-o", "/dev/null"],
            daemon.socket, uid=VICTIM, gid=VICTIM, groups=[t.USER_GID])
        tap.ok(rc == 0, "-o /dev/null still works (a character device)", err)
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            tap.skip("pmugate plot -o", "needs python3-matplotlib")
            return
        timeline = os.path.join(shared, "timeline.csv")
        rc, out, err = t.run_cli([t.PMUGATE, "topdown", "-l", "1", "-c", "0", "-I", "100ms", "-S", "0.35s",
                                  "-O", "csv", "-o", timeline], daemon.socket, uid=VICTIM, gid=VICTIM,
                                 groups=[t.USER_GID])
        plots = []
        for target in (link, theirs):
            rc, out, err = t.run_cli([t.PMUGATE, "plot", "-o", target, timeline], daemon.socket, uid=VICTIM,
                                     gid=VICTIM, groups=[t.USER_GID])
            plots.append((rc, err))
        with open(notes) as f, open(theirs) as g:
            kept = f.read() == "the victim's own notes\n" and g.read() == "planted\n"
        tap.ok(kept and plots[0][0] == 1 and "symbolic link" in plots[0][1] and plots[1][0] == 1 and
               "belongs to uid %d" % ATTACKER in plots[1][1],
               "pmugate plot -o refuses the same link and file, and leaves them alone", plots)
        png = os.path.join(shared, "mine.png")
        rc, out, err = t.run_cli([t.PMUGATE, "plot", "-o", png, timeline], daemon.socket, uid=VICTIM, gid=VICTIM,
                                 groups=[t.USER_GID])
        tap.ok(rc == 0 and os.stat(png).st_uid == VICTIM and open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n",
               "and writes a new PNG", err)
    finally:
        daemon.stop()


def main():
    tap = t.Tap()
    return tap.run([test_summary_race, test_summary_planted, test_settings_file, test_stat_output])


if __name__ == "__main__":
    raise SystemExit(main())
