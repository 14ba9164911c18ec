#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The whole test suite: installs dependencies, builds with warnings as errors, runs every test,
# then does the same in an AddressSanitizer + UndefinedBehaviorSanitizer build, and builds
# everything with clang as docs/FUZZING.md says (-Dfuzz=true: every libFuzzer target) and
# replays the fuzz corpora there. Ends with the line "N passed, N failed, N skipped" counting
# meson tests of all three builds (a test that skipped any of its checks counts as skipped;
# the reasons are listed above that line). A build's suite ends with test_leftovers.py, which
# fails naming any process of that build a test left running. The system suite
# (Debian packages under systemd-nspawn) runs in the plain build only. Run as root from the
# source tree: the integration tests switch uids and start the daemon, which drops privileges.
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
skip_list=$(mktemp)
trap 'rm -f "$skip_list"' EXIT

# Counts meson's results; a test that passed with skipped TAP points (a check this machine
# could not make) counts as skipped, not passed, and every skip is listed with its reason.
count() {
        local log=$1/meson-logs/testlog.json
        [ -f "$log" ] || return
        read -r p f s < <(python3 - "$log" "$skip_list" <<'PY'
import json, re, sys
p = f = s = 0
with open(sys.argv[2], "a") as out:
    for line in open(sys.argv[1]):
        r = json.loads(line)
        result = r["result"]
        skips = re.findall(r"^ok .*# SKIP (.*)$|^1\.\.0 # SKIP (.*)$", r.get("stdout") or "", re.M)
        reasons = [a or b for a, b in skips]
        if result in ("OK", "EXPECTEDFAIL") and not reasons:
            p += 1
        elif result in ("OK", "EXPECTEDFAIL", "SKIP"):
            s += 1
            out.write("skipped: %s: %s\n" % (r["name"], "; ".join(reasons) or "(no reason given)"))
        else:
            f += 1
print(p, f, s)
PY
)
        passed=$((passed + p))
        failed=$((failed + f))
        skipped=$((skipped + s))
}

# run_build NAME [MESON TEST OPTIONS --] [MESON SETUP OPTIONS]
run_build() {
        local name=$1; shift
        local dir=$out/$name
        local test_args=()
        if [ "${1:-}" = "--test" ]; then
                read -r -a test_args <<<"$2"
                shift 2
        fi
        echo "==== $name build: meson setup $*"
        if [ ! -f "$dir/build.ninja" ]; then
                meson setup "$dir" -Dwerror=true "$@" || { status=1; failed=$((failed + 1)); return; }
        else
                meson configure "$dir" -Dwerror=true "$@" >/dev/null || true
        fi
        ninja -C "$dir" || { status=1; failed=$((failed + 1)); return; }
        rm -f "$dir/meson-logs/testlog.json"
        meson test -C "$dir" --print-errorlogs --num-processes 2 "${test_args[@]}" || status=1
        count "$dir"
}

# The system suite (the Debian packages under systemd-nspawn) builds its own packages: once is
# enough, in the plain build.
run_build plain
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Tests whose time goes to other programs (suite external: Prometheus, PCP, matplotlib) ran in
# the plain build; their C paths are covered again here by the exporter's and CLI's own tests.
run_build sanitize --test "--no-suite=system --no-suite=external" -Db_sanitize=address,undefined -Db_lundef=false
# The libFuzzer build, so that it stays built with clang: all of it builds (with -Werror, as the
# others), and the corpus replays run there, where libFuzzer's instrumentation and clang's
# sanitizers see every input; the rest of the suite already ran twice above.
if command -v clang >/dev/null; then
        CC=clang run_build fuzz --test --suite=fuzz -Dfuzz=true -Db_lundef=false
else
        echo "==== fuzz build: clang is not installed"
        status=1
        failed=$((failed + 1))
fi

cat "$skip_list"
echo "$passed passed, $failed failed, $skipped skipped"
exit $status
