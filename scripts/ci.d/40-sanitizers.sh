#!/usr/bin/env bash
# Every meson test under AddressSanitizer + UndefinedBehaviorSanitizer, in a
# build of its own; then the thread test under ThreadSanitizer. Any report
# from a sanitizer fails the test that triggered it.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${BUILD_DIR:?}"
run() { echo "+ $*"; "$@"; }

asan="$BUILD_DIR-asan"
[ -f "$asan/build.ninja" ] ||
    run meson setup "$asan" -Db_sanitize=address,undefined -Db_lundef=false \
        -Ddocs=disabled -Djson=enabled -Dwerror=true >/dev/null
run ninja -C "$asan" >/dev/null
# halt_on_error: the first finding stops the test with a non-zero status
# (UBSan otherwise reports and carries on).
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1"
status=0
run meson test -C "$asan" --print-errorlogs --num-processes 2 --timeout-multiplier 4 || status=1

tsan="$BUILD_DIR-tsan"
[ -f "$tsan/build.ninja" ] ||
    run meson setup "$tsan" -Db_sanitize=thread -Db_lundef=false \
        -Ddocs=disabled -Djson=enabled -Dwerror=true >/dev/null
run ninja -C "$tsan" tests/test-threads >/dev/null
# No fork: the threads run in the test process itself, and TSan's exit
# status (66 on any race) is the test's.
export TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1"
export CK_FORK=no
run meson test -C "$tsan" --no-rebuild --print-errorlogs --timeout-multiplier 4 threads || status=1
exit $status
