#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Debian 12 root file system for the systemd-nspawn tests, cached as a tarball between runs.
#
# Usage: rootfs.sh CACHE_DIR     prints the tarball's path on stdout (built when missing)
# The tarball's name carries a hash of the package list, so a changed list builds a new one.
# debootstrap fetches from the host's first APT mirror; exit 77 when it cannot (no network,
# no debootstrap), so callers can report a skip with the reason printed on stderr.
set -eu
cache=${1:?usage: rootfs.sh CACHE_DIR}

# systemd as PID 1, the runtime libraries of pmugate's packages (installed offline with dpkg -i
# because the container has no network), pkg-config and msgpack's -dev for libpmugate-dev,
# Slurm and munge for the cgroup v2 tests.
include="systemd,systemd-sysv,dbus,procps,iproute2,util-linux,libinih1,libjson-c5,libmsgpackc2"
include="$include,libmuparser2v5,libpfm4,libgomp1,libcap2,libsystemd0,libmicrohttpd12,libdw1,libcapstone4"
include="$include,pkg-config,libmsgpack-dev,libmuparser-dev,libinih-dev,python3,slurmd,slurmctld,slurm-client,munge"
hash=$(printf '%s\n' "bookworm" "$include" | sha256sum | cut -c1-12)
tarball=$cache/bookworm-$hash.tar

if [ -s "$tarball" ]; then
        echo "$tarball"
        exit 0
fi
command -v debootstrap >/dev/null || { echo "rootfs.sh: debootstrap is not installed" >&2; exit 77; }

mirror=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
         grep -v security | head -n1 || true)
if [ -z "$mirror" ]; then
        mirror=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) \
                 { print $i; exit } }' /etc/apt/sources.list 2>/dev/null || true)
fi
mirror=${mirror:-http://deb.debian.org/debian}

mkdir -p "$cache"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf --one-file-system "$work"' EXIT
rootfs=$work/rootfs
echo "rootfs.sh: debootstrap bookworm from $mirror (a few minutes, once)" >&2
if ! debootstrap --variant=minbase --include="$include" bookworm "$rootfs" "$mirror" >"$work/log" 2>&1; then
        tail -n 20 "$work/log" >&2
        echo "rootfs.sh: debootstrap failed (see above)" >&2
        exit 77
fi
rm -f "$rootfs"/var/cache/apt/archives/*.deb
# Boot must never wait on a prompt, and Slurm/munge start only when a test says so.
ln -sf /dev/null "$rootfs/etc/systemd/system/systemd-firstboot.service"
for unit in slurmd slurmctld munge; do
        ln -sf /dev/null "$rootfs/etc/systemd/system/$unit.service"
done
rm -f "$rootfs/etc/machine-id"
systemd-machine-id-setup --root="$rootfs" >/dev/null 2>&1 || true
tar -C "$rootfs" -cf "$work/rootfs.tar" .
mv "$work/rootfs.tar" "$tarball"
# Tarballs of older package lists are never used again.
find "$cache" -maxdepth 1 -name 'bookworm-*.tar' ! -path "$tarball" -delete
echo "$tarball"
