#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The whole test suite: installs dependencies, builds with warnings as errors, runs every test,
# then does the same in an AddressSanitizer + UndefinedBehaviorSanitizer build. Ends with the
# line "N passed, N failed, N skipped" counting meson tests of both builds. Run as root from the source
# tree: the integration tests switch uids and start the daemon, which drops privileges.
set -u
cd "$(dirname "$0")/.."
src=$(pwd)
out=${PMUGATE_TEST_BUILD_ROOT:-$src/.build-tests}

if [ "$(id -u)" -ne 0 ]; then
        echo "tests/run-all.sh: run as root (the tests switch uids and start the daemon)" >&2
        exit 2
fi
contrib/install-deps.sh || { echo "tests/run-all.sh: installing dependencies failed" >&2; exit 2; }

passed=0
failed=0
skipped=0
status=0

count() {
        local log=$1/meson-logs/testlog.json
        [ -f "$log" ] || return
        read -r p f s < <(python3 - "$log" <<'PY'
import json, sys
p = f = s = 0
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"):
        p += 1
    elif r == "SKIP":
        s += 1
    else:
        f += 1
print(p, f, s)
PY
)
        passed=$((passed + p))
        failed=$((failed + f))
        skipped=$((skipped + s))
}

run_build() {
        local name=$1; shift
        local dir=$out/$name
        echo "==== $name build: meson setup $*"
        if [ ! -f "$dir/build.ninja" ]; then
                meson setup "$dir" -Dwerror=true "$@" || { status=1; failed=$((failed + 1)); return; }
        else
                meson configure "$dir" -Dwerror=true "$@" >/dev/null || true
        fi
        ninja -C "$dir" || { status=1; failed=$((failed + 1)); return; }
        rm -f "$dir/meson-logs/testlog.json"
        meson test -C "$dir" --print-errorlogs --num-processes 2 || status=1
        count "$dir"
}

run_build plain
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
run_build sanitize -Db_sanitize=address,undefined -Db_lundef=false

echo "$passed passed, $failed failed, $skipped skipped"
exit $status
