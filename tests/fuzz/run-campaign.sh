#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Fuzzing campaign runner (docs/FUZZING.md). Not a test: it builds the clang libFuzzer build,
# runs each target for a while on a copy of its corpus, merges the inputs that add coverage
# back into tests/fuzz/corpus/NAME, and prints what each run did.
#
#   tests/fuzz/run-campaign.sh [-t SECONDS] [-b BUILD_DIR] [-w WORK_DIR] [-j JOBS] [NAME...]
#
# NAME is a target without its "fuzz_" prefix or with it (request, fuzz_config, ...); the
# default is every target the build has. Crashes are kept as WORK_DIR/NAME/crash-* files.
# Run it niced on a shared machine: nice -n 19 tests/fuzz/run-campaign.sh
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
seconds=600
build="$src/build-fuzz"
work=""
jobs=2

usage() {
        sed -n '8,12p' "$0" | sed 's/^# \{0,1\}//'
        exit "${1:-0}"
}

while getopts "t:b:w:j:h" opt; do
        case $opt in
        t) seconds=$OPTARG ;;
        b) build=$OPTARG ;;
        w) work=$OPTARG ;;
        j) jobs=$OPTARG ;;
        h) usage 0 ;;
        *) usage 2 ;;
        esac
done
shift $((OPTIND - 1))
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "seconds must be a positive number" >&2; exit 2; }
work=${work:-$build/campaign}

# ---- The clang build with every library instrumented, and only the libFuzzer binaries of it
if [[ ! -f $build/build.ninja ]]; then
        CC=clang meson setup "$build" "$src" -Dfuzz=true -Db_lundef=false >/dev/null
fi
fuzz_option=$(meson introspect --buildoptions "$build" | python3 -c \
        'import json, sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "fuzz"][0])')
if [[ $fuzz_option != True ]]; then
        echo "$build is not a -Dfuzz=true build" >&2
        exit 1
fi

if [[ $# -eq 0 ]]; then
        names=$(sed -n "s/^.*\['fuzz_\([a-z0-9_]*\)',.*/\1/p" "$src/tests/meson.build")
else
        names=""
        for n in "$@"; do
                names+="${n#fuzz_} "
        done
fi
targets=()
for n in $names; do
        targets+=("tests/fuzz_${n}_libfuzzer")
done
mkdir -p "$work"
if ! ninja -C "$build" -j "$jobs" "${targets[@]}" > "$work/build.log" 2>&1; then
        cat "$work/build.log" >&2
        exit 1
fi

# Group files "include" shipped groups; find them in this tree, never in an installed one.
export PMUGATE_GROUP_PATH="$src/client/groups"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# The request decoder takes what one recv() on the socket gives, up to the request size limit
# (64 KiB), and refuses a larger message by its size: its inputs may be that long and one byte
# longer, where libFuzzer would stop at 4 KiB. Other targets keep libFuzzer's default.
request_size=$(sed -n 's/^#define PMUGATE_REQUEST_SIZE_MAX (\([0-9]*\)U \* \([0-9]*\)U)$/\1 * \2/p' \
        "$src/proto/pmugate-limits.h")
if [[ -z $request_size ]]; then
        echo "cannot find PMUGATE_REQUEST_SIZE_MAX in proto/pmugate-limits.h" >&2
        exit 1
fi
target_options() {
        case $1 in
        request) echo "-max_len=$((request_size + 1))" ;;
        esac
}

corpus_stats() {
        local dir=$1
        printf '%s files/%s bytes' "$(find "$dir" -type f | wc -l)" "$(find "$dir" -type f -printf '%s\n' | \
                awk '{ s += $1 } END { print s + 0 }')"
}

summary="$work/summary.txt"
{
        echo "# $(date -u +%Y-%m-%dT%H:%MZ) run-campaign.sh -t $seconds $*"
        printf '%-12s %7s %10s %8s %6s %6s %-22s %-22s %s\n' target seconds executions exec/s cov ft \
                "corpus before" "corpus after" crashes
} > "$summary"

status=0
for n in $names; do
        bin="$build/tests/fuzz_${n}_libfuzzer"
        corpus="$src/tests/fuzz/corpus/$n"
        dir="$work/$n"
        rm -rf "$dir"
        mkdir -p "$dir/corpus"
        cp "$corpus"/* "$dir/corpus/"
        before=$(corpus_stats "$corpus")

        echo "== fuzz_$n: ${seconds}s on a copy of tests/fuzz/corpus/$n"
        set +e
        # stderr of the target (its parsers' log lines) is closed; libFuzzer and the sanitizers
        # keep their own copy of it for their reports.
        # shellcheck disable=SC2046 # the options are words
        "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -close_fd_mask=2 \
                $(target_options "$n") -print_final_stats=1 -artifact_prefix="$dir/" "$dir/corpus" > "$dir/fuzz.log" 2>&1
        rc=$?
        set -e

        # Only inputs that reach edges the committed corpus does not go back into it; hit counts
        # (-use_counters=0) do not count, which keeps the corpus small.
        "$bin" -merge=1 -use_counters=0 -close_fd_mask=2 "$corpus" "$dir/corpus" \
                > "$dir/merge.log" 2>&1 || true
        after=$(corpus_stats "$corpus")

        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/fuzz.log" | tail -1)
        rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/fuzz.log" | tail -1)
        cov=$(grep -o 'cov: [0-9]*' "$dir/fuzz.log" | tail -1 | cut -d' ' -f2)
        ft=$(grep -o 'ft: [0-9]*' "$dir/fuzz.log" | tail -1 | cut -d' ' -f2)
        crashes=$(find "$dir" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
                -o -name 'oom-*' \) | wc -l)
        if [[ $rc -ne 0 || $crashes -gt 0 ]]; then
                status=1
        fi
        printf '%-12s %7s %10s %8s %6s %6s %-22s %-22s %s\n' "$n" "$seconds" "${execs:-?}" "${rate:-?}" \
                "${cov:-?}" "${ft:-?}" "$before" "$after" "$crashes" >> "$summary"
        find "$dir" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
                -o -name 'oom-*' \) -printf '   %p\n' >> "$summary"
done

cat "$summary"
exit $status
