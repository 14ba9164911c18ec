#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs what pmugate needs to build, test and run on Debian 12 (run as root).
set -eu
export DEBIAN_FRONTEND=noninteractive
packages="
        meson ninja-build pkg-config gcc clang
        libsystemd-dev libcap-dev libmsgpack-dev libinih-dev libjson-c-dev
        libpfm4-dev libmuparser-dev libcmocka-dev libhwloc-dev libmicrohttpd-dev
        libdw-dev libcapstone-dev
        systemd python3 python3-msgpack python3-matplotlib util-linux procps
        systemd-container debootstrap debhelper dpkg-dev fakeroot lintian strace
        prometheus victoria-metrics curl pcp python3-requests
        libgomp1
        likwid
        python3-dev python3-numpy python3-pandas dh-python
        jupyter-nbconvert python3-nbconvert python3-ipykernel
"
missing=""
for p in $packages; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
# pcp's postinst starts pmcd with systemctl whether or not systemd runs: in a container
# (PID 1 not systemd) that fails and leaves the package unconfigured. There, it is configured
# with a systemctl that does nothing; the tests start pmcd themselves.
no_systemd_configure() {
        shim=$(mktemp -d)
        printf '#!/bin/sh\nexit 0\n' >"$shim/systemctl"
        chmod 0755 "$shim/systemctl"
        PATH="$shim:$PATH" dpkg --configure -a
        rm -r "$shim"
}
if [ -n "$missing" ]; then
        apt-get update -qq
        if [ -d /run/systemd/system ]; then
                # shellcheck disable=SC2086
                apt-get install -y -qq --no-install-recommends $missing
        else
                # shellcheck disable=SC2086
                if ! apt-get install -y -qq --no-install-recommends $missing; then
                        # what failed for another reason than a service start fails again here
                        no_systemd_configure
                        # shellcheck disable=SC2086
                        apt-get install -y -qq --no-install-recommends $missing
                fi
        fi
fi
