#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs the build dependencies, builds pmugate, starts pmugated on a simulated Sapphire
# Rapids and measures through it as an unprivileged user: raw counters, then TopDown level 2 of
# a sample workload. Run as root from the source tree.
set -eu
cd "$(dirname "$0")/.."
build=${PMUGATE_BUILD_DIR:-build}

contrib/install-deps.sh
[ -f "$build/build.ninja" ] || meson setup "$build"
ninja -C "$build"

work=$(mktemp -d /tmp/pmugate-quickstart.XXXXXX)
chmod 0755 "$work"
trap 'kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; rm -rf "$work"' EXIT
cat >"$work/pmugate.conf" <<CONF
[access]
# The demo user (nobody's group) may read; root administers.
user_groups = $(id -g nobody)
CONF

"$build/daemon/pmugated" --backend=sim --sim-model=spr \
        --socket="$work/pmugate.sock" --config="$work/pmugate.conf" \
        --allowlist-dir=policy/allowlists --user=nobody --audit-log="$work/audit.log" &
daemon=$!
for _ in $(seq 100); do [ -S "$work/pmugate.sock" ] && break; sleep 0.05; done

export PMUGATE_SOCKET="$work/pmugate.sock"
# TopDown groups from the source tree (an installed pmugate finds them in its data directory).
export PMUGATE_GROUP_PATH="$PWD/client/groups"
as_user() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- "$@"; }

echo "== pmugate info (as nobody)"
as_user "$build/client/pmugate" info
echo
echo "== count instructions, cycles and TopDown slots on CPUs 0-3 for a second (as nobody)"
# write holds a lease while its command runs; when it exits the daemon restores the registers.
as_user "$build/client/pmugate" write -c 0-3 IA32_FIXED_CTR_CTRL=0x3333 IA32_PERF_GLOBAL_CTRL=0xf00000000 -- \
        sh -c "sleep 1; '$build/client/pmugate' read -c 0-3 IA32_FIXED_CTR0 IA32_FIXED_CTR1 IA32_FIXED_CTR3"
echo
echo "== TopDown level 2 of a sample workload pinned to CPUs 0-3 (as nobody)"
# The simulated PMU counts as its workload profile says (docs/SIMULATOR.md); the wrapped
# command only decides how long the measurement lasts.
as_user "$build/client/pmugate" topdown -l 2 -C 0-3 -- \
        sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i + 1)); done'
echo
echo "== a register on the never-list is refused (as nobody)"
as_user "$build/client/pmugate" read -c 0 0x600 || true
