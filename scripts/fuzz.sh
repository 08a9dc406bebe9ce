#!/bin/sh
# Build the libFuzzer harnesses with clang and run each one in turn.
#   scripts/fuzz.sh [seconds-per-harness] [harness...]
# Default: 60 s each, every harness. New inputs land in fuzz/corpus-run/NAME
# (ignored by git; merge good ones into fuzz/corpus/NAME by hand), crashes in
# FUZZ_BUILD_DIR/artifacts/. Env: FUZZ_BUILD_DIR (default build-fuzz),
# FUZZ_JOBS (parallel harnesses, default 1: each run wants a whole core).
set -eu

secs=${1:-60}
[ $# -gt 0 ] && shift
harnesses=${*:-setters megatron hf_config deepspeed torchtitan cli batch_script calibrate}
src=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$src/build-fuzz}

if [ ! -f "$build/build.ninja" ]; then
    echo "+ CC=clang meson setup $build -Dfuzz=true"
    CC=clang meson setup "$build" "$src" -Dfuzz=true -Dtests=false -Ddocs=disabled >/dev/null
fi
echo "+ ninja -C $build"
ninja -C "$build" $(for h in $harnesses; do printf 'fuzz/fuzz_%s ' "$h"; done) >/dev/null

build=$(cd "$build" && pwd)
mkdir -p "$build/artifacts" "$build/fuzz-cwd"
# Run from a scratch directory: a stray relative write lands there.
cd "$build/fuzz-cwd"
status=0
for h in $harnesses; do
    run="$src/fuzz/corpus-run/$h"
    mkdir -p "$run"
    echo "+ fuzz_$h -max_total_time=$secs $run fuzz/corpus/$h"
    # The first corpus directory receives new inputs; the committed seeds
    # (and regression inputs) are read from the second and never modified.
    if ! "$build/fuzz/fuzz_$h" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
            -dict="$src/fuzz/$h.dict" \
            -print_final_stats=1 -artifact_prefix="$build/artifacts/$h-" \
            "$run" "$src/fuzz/corpus/$h" > "$build/fuzz_$h.log" 2>&1; then
        echo "FAIL: fuzz_$h (log: $build/fuzz_$h.log)"
        tail -n 40 "$build/fuzz_$h.log"
        status=1
        continue
    fi
    # One summary line per harness: the last status line plus the speed.
    last=$(grep -E '^#[0-9]+' "$build/fuzz_$h.log" | tail -n 1)
    speed=$(grep -E 'stat::average_exec_per_sec' "$build/fuzz_$h.log" | awk '{print $2}')
    echo "ok   fuzz_$h: $last | exec/s avg $speed"
done
exit $status
