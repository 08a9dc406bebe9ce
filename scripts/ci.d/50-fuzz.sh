#!/usr/bin/env bash
# The libFuzzer harnesses (clang, ASan + UBSan): each replays its committed
# seed and regression corpus, then fuzzes briefly. Long runs: scripts/fuzz.sh.
# FUZZ_SECONDS sets the brief run (default 5 s per harness).
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${BUILD_DIR:?}"
run() { echo "+ $*"; "$@"; }
secs="${FUZZ_SECONDS:-5}"
harnesses=(setters megatron hf_config deepspeed torchtitan cli batch_script calibrate)

fuzz="$BUILD_DIR-fuzz"
[ -f "$fuzz/build.ninja" ] ||
    CC=clang run meson setup "$fuzz" -Dfuzz=true -Dtests=false -Ddocs=disabled \
        -Djson=enabled -Dwerror=true >/dev/null
run ninja -C "$fuzz" "${harnesses[@]/#/fuzz/fuzz_}" >/dev/null

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
# The harnesses run in the scratch directory, so a stray relative write of
# the code under test can never land in the checkout.
src=$PWD
fuzz=$(cd "$fuzz" && pwd)
cd "$scratch"
for h in "${harnesses[@]}"; do
    exe="$fuzz/fuzz/fuzz_$h"
    seeds="$src/fuzz/corpus/$h"
    log="$scratch/$h.log"
    # Replay every committed input once: a regression input that crashes
    # again fails here, whatever the random run below does.
    if ! run "$exe" -runs=0 -timeout=10 "$seeds" >"$log" 2>&1; then
        echo "FAIL: fuzz_$h crashes on its committed corpus:"; tail -n 40 "$log"; status=1; continue
    fi
    # New inputs go to a scratch directory; the committed seeds stay as they are.
    mkdir -p "$scratch/$h"
    if ! run "$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -dict="$src/fuzz/$h.dict" \
            -artifact_prefix="$scratch/$h-" "$scratch/$h" "$seeds" >"$log" 2>&1; then
        echo "FAIL: fuzz_$h found a crash; the input:"
        for f in "$scratch/$h"-*; do [ -f "$f" ] && od -c "$f" | head -n 20; done
        tail -n 40 "$log"; status=1; continue
    fi
    echo "ok   fuzz_$h: $(grep -E '^#[0-9]+' "$log" | tail -n 1)"
done
exit $status
