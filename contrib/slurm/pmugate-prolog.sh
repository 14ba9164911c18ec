#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# pmugate-prolog.sh: Slurm Prolog (slurm.conf Prolog=) that lets the job's user use pmugate on
# this node for the job's lifetime:
#
#   pmugatectl grant --job $SLURM_JOB_ID --uid $SLURM_JOB_UID
#
# No --cpus: with TaskPlugin=task/cgroup and ConstrainCores=yes, pmugated reads the job's
# CPUs from the caller's cpuset cgroup at every request, so the grant never goes stale and a
# step limited to fewer CPUs gets only those. (The job's cgroup does not exist yet while the
# Prolog runs, so the CPUs could not be read here anyway.) Sites without task/cgroup, see
# contrib/slurm/README.md.
#
# Exit status, which Slurm turns into node state (non-zero DRAINs the node):
#   0  the grant is in place, or there is nothing to do: pmugatectl is not installed or
#      pmugated is not running on this node. A node without pmugate is a healthy node.
#   1  pmugated is running and refused the grant or did not answer in time: an admin must
#      look (the reason goes to syslog, tag "pmugate").
#   2  not started by Slurm (no SLURM_JOB_ID or SLURM_JOB_UID).
#
# Slurm runs Prologs with no PATH and discards their output, so every command has an absolute
# path and every message goes to syslog as well.
set -u

PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH

# Settings. /etc/pmugate/slurm.env (shell syntax, root-owned) may override them, e.g.
#   PMUGATE_SOCKET=/run/pmugate/pmugate.sock
PMUGATECTL=${PMUGATECTL:-/usr/sbin/pmugatectl}
PMUGATE_SLURM_ENV=${PMUGATE_SLURM_ENV:-/etc/pmugate/slurm.env}
if [ -r "$PMUGATE_SLURM_ENV" ]; then
        # shellcheck source=/dev/null
        . "$PMUGATE_SLURM_ENV"
fi
PMUGATE_SOCKET=${PMUGATE_SOCKET:-/run/pmugate/pmugate.sock}
# With the 1 s grace of timeout -k and the 3 s logger bound, the script ends within 9 s:
# below Slurm's MessageTimeout (10 s by default), which Slurm expects a Prolog to stay within.
# pmugated answers in milliseconds; a daemon that does not answer in 5 s is broken.
PMUGATE_TIMEOUT=${PMUGATE_TIMEOUT:-5}

say() {
        echo "pmugate-prolog: $*" >&2
        if [ -x /usr/bin/logger ]; then
                /usr/bin/timeout -k 1 2 /usr/bin/logger -t pmugate -p daemon.notice -- "prolog: $*" 2>/dev/null || :
        fi
}

job=${SLURM_JOB_ID:-}
uid=${SLURM_JOB_UID:-}
if [ -z "$job" ] || [ -z "$uid" ]; then
        say "SLURM_JOB_ID or SLURM_JOB_UID not set; run me as Slurm's Prolog"
        exit 2
fi

if [ ! -x "$PMUGATECTL" ]; then
        say "job $job: $PMUGATECTL not installed; nothing to do"
        exit 0
fi
if [ ! -S "$PMUGATE_SOCKET" ]; then
        say "job $job: no pmugated socket at $PMUGATE_SOCKET; nothing to do"
        exit 0
fi

out=$(/usr/bin/timeout -k 1 "$PMUGATE_TIMEOUT" "$PMUGATECTL" --socket="$PMUGATE_SOCKET" \
        grant --job "$job" --uid "$uid" 2>&1)
rc=$?
case $rc in
0)
        exit 0
        ;;
124|137)
        say "job $job: pmugated did not answer the grant within ${PMUGATE_TIMEOUT}s"
        exit 1
        ;;
esac
# A stale socket file with no daemon behind it is "not running", not a refusal.
case $out in
*"cannot connect to"*"Connection refused"* | *"cannot connect to"*"No such file"*)
        say "job $job: pmugated is not running ($out); nothing to do"
        exit 0
        ;;
esac
say "job $job uid $uid: grant failed (status $rc): $out"
exit 1
