#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# meson install script: refreshes the dynamic linker's cache after an install into the live
# system, so that the installed programs find libpmugate.so.0 (Debian's cache knows
# /usr/local/lib only after ldconfig ran). Skipped for a staged install (DESTDIR: a package
# build, whose package runs ldconfig when it is installed) and when not root.
set -eu
libdir=$1
if [ -n "${DESTDIR:-}" ]; then
        exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
        echo "ldconfig-after-install: not root; run ldconfig as root, or set LD_LIBRARY_PATH=$libdir" >&2
        exit 0
fi
/sbin/ldconfig
if ! /sbin/ldconfig -p | grep -qF "=> $libdir/libpmugate.so.0"; then
        echo "ldconfig-after-install: $libdir is not in the dynamic linker's search path;" \
             "add it to /etc/ld.so.conf.d/ and run ldconfig" >&2
fi
