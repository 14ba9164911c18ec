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
