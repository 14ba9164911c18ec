#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# pmugate-epilog.sh: Slurm Epilog (slurm.conf Epilog=) that ends the job's use of pmugate on
# this node:
#
#   pmugatectl revoke --job $SLURM_JOB_ID
#
# pmugated ends the job's grant and every lease its processes still hold, puts back every
# register they wrote and zeroes their counters, so the next job finds a clean PMU. Revoking
# is idempotent: Slurm runs the Epilog even when the Prolog did not run or granted nothing.
#
# With PMUGATE_JOB_SUMMARY_DIR set (in /etc/pmugate/slurm.env), it first asks the node's
# pmugate-exporter for the job's summary (TopDown, IPC, counts over its run on this node; see
# docs/EXPORTER.md) and writes it as DIR/JOB.HOST.json. A missing exporter or curl, or a job the
# exporter never saw, is logged and changes nothing else: the revoke and the exit status are
# the same without it.
#
# Exit status, which Slurm turns into node state (non-zero DRAINs the node):
#   0  revoked, or nothing to revoke, or nothing to do: pmugatectl is not installed or
#      pmugated is not running on this node (a daemon that starts again later restores
#      whatever its journal says the job still held).
#   1  pmugated is running and refused the revoke or did not answer in time: the PMU may
#      still hold the job's settings, so the node should not take the next job unseen.
#   2  not started by Slurm (no SLURM_JOB_ID).
#
# Slurm runs Epilogs with no PATH and discards their output, so every command has an absolute
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
# below Slurm's MessageTimeout (10 s by default), which Slurm expects an Epilog to stay within.
# pmugated answers in milliseconds; a daemon that does not answer in 5 s is broken.
PMUGATE_TIMEOUT=${PMUGATE_TIMEOUT:-5}
# The job summary: off unless a directory is set. The exporter answers in milliseconds; the
# fetch is bounded to 2 s and its failure is logged without waiting, so the script still ends
# within 11 s.
PMUGATE_JOB_SUMMARY_DIR=${PMUGATE_JOB_SUMMARY_DIR:-}
PMUGATE_EXPORTER_URL=${PMUGATE_EXPORTER_URL:-http://127.0.0.1:9755}
CURL=${CURL:-/usr/bin/curl}

say() {
        echo "pmugate-epilog: $*" >&2
        if [ -x /usr/bin/logger ]; then
                /usr/bin/timeout -k 1 2 /usr/bin/logger -t pmugate -p daemon.notice -- "epilog: $*" 2>/dev/null || :
        fi
}

job=${SLURM_JOB_ID:-}
if [ -z "$job" ]; then
        say "SLURM_JOB_ID not set; run me as Slurm's Epilog"
        exit 2
fi

say_later() {
        echo "pmugate-epilog: $*" >&2
        if [ -x /usr/bin/logger ]; then
                (/usr/bin/timeout -k 1 2 /usr/bin/logger -t pmugate -p daemon.notice -- \
                        "epilog: $*" >/dev/null 2>&1 &)
        fi
}

# Writes the exporter's summary of the job; never fails the Epilog.
write_summary() {
        dir=$PMUGATE_JOB_SUMMARY_DIR
        case $job in
        *[!A-Za-z0-9._+-]*)
                say_later "job $job: not a job id a summary file can be named after"
                return 0
                ;;
        esac
        if [ ! -d "$dir" ]; then
                say_later "job $job: summary directory $dir does not exist; no summary"
                return 0
        fi
        if [ ! -x "$CURL" ]; then
                say_later "job $job: $CURL not installed; no summary"
                return 0
        fi
        host=$(/bin/hostname -s 2>/dev/null || echo node)
        tmp=$(/bin/mktemp "$dir/.$job.$host.XXXXXX" 2>/dev/null) || {
                say_later "job $job: cannot write to $dir; no summary"
                return 0
        }
        if /usr/bin/timeout -k 1 2 "$CURL" -fsS --max-time 1 --max-filesize 1048576 --proto =http,https \
                -o "$tmp" "$PMUGATE_EXPORTER_URL/jobs/$job" 2>/dev/null; then
                /bin/chmod 0644 "$tmp"
                /bin/mv -f "$tmp" "$dir/$job.$host.json"
        else
                /bin/rm -f "$tmp"
                say_later "job $job: no summary from pmugate-exporter at $PMUGATE_EXPORTER_URL" \
                        "(not running, or it never saw the job)"
        fi
        return 0
}

if [ -n "$PMUGATE_JOB_SUMMARY_DIR" ]; then
        write_summary
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
        revoke --job "$job" 2>&1)
rc=$?
case $rc in
0)
        # "revoked job N" or "job N had no grant; nothing to revoke": both are success.
        exit 0
        ;;
124|137)
        say "job $job: pmugated did not answer the revoke within ${PMUGATE_TIMEOUT}s"
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
say "job $job: revoke failed (status $rc): $out"
exit 1
