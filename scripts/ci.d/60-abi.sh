#!/usr/bin/env bash
# ABI guard and memory checks of the main build ($BUILD_DIR, gcc, with -g):
#  1. abidiff of libmem4d.so against the committed baseline doc/abi/libmem4d.abi:
#     any removed or changed function, or changed type, fails; added
#     functions pass with a note (see doc/abi-policy.md).
#  2. valgrind (memcheck, full leak check) on a few CLI runs.
# `60-abi.sh --update` rewrites the baseline (only at a release, or after a
# deliberate soname bump).
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${BUILD_DIR:?}"
run() { echo "+ $*" >&2; "$@"; }

baseline=doc/abi/libmem4d.abi
# The opaque handles' layouts are private (lib/private.h): they may change freely;
# experimental functions (mem4d_x_*, doc/abi-policy.md) are outside the freeze.
suppr=$(mktemp)
trap 'rm -f "$suppr"' EXIT
cat >"$suppr" <<'SUPPR'
[suppress_type]
  name_regexp = ^mem4d_(model|layout|device|report|search|import)$
[suppress_function]
  name_regexp = ^mem4d_x_
SUPPR

run ninja -C "$BUILD_DIR" >/dev/null
lib="$BUILD_DIR/lib/libmem4d.so"

if [ "${1:-}" = "--update" ]; then
    run abidw --no-corpus-path --no-comp-dir-path --no-show-locs "$lib" --out-file "$baseline"
    echo "wrote $baseline"
    exit 0
fi

status=0
set +e
run abidiff --fail-no-debug-info --suppressions "$suppr" "$baseline" "$lib" >"$suppr.out"
rc=$?
set -e
cat "$suppr.out"
# abidiff's status is a bit field: 1 tool error, 2 usage, 4 ABI change,
# 8 incompatible change. A change with only added functions is allowed.
removed_or_changed=$( (grep -E '^(Functions|Variables) changes summary' "$suppr.out" || true) |
    sed -E 's/.*: ([0-9]+) Removed, ([0-9]+) Changed.*/\1 \2/' | awk '{s += $1 + $2} END {print s + 0}')
if [ $((rc & 3)) -ne 0 ]; then
    echo "FAIL: abidiff could not compare (status $rc); is $BUILD_DIR built with -g?"; status=1
elif [ $((rc & 8)) -ne 0 ] || [ "$removed_or_changed" -ne 0 ]; then
    echo "FAIL: incompatible ABI change against $baseline (see doc/abi-policy.md)"; status=1
elif [ $((rc & 4)) -ne 0 ]; then
    echo "ok   ABI: compatible additions only; record them in $baseline at the release"
else
    echo "ok   ABI: identical to $baseline"
fi
rm -f "$suppr.out"

# --- valgrind on the CLI: no invalid access, no leak ---------------------
cli="$BUILD_DIR/cli/mem4d"
vg=(valgrind --quiet --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect,possible
    --errors-for-leak-kinds=definite,indirect,possible --track-origins=yes)
# The CLI's own exit statuses are 0, 1 (oom) and 2 (usage); valgrind reports
# its findings as 99, so the two never mix.
check() {
    local want=$1; shift
    set +e
    run "${vg[@]}" "$cli" "$@" >/dev/null
    local got=$?
    set -e
    if [ "$got" -ne "$want" ]; then
        echo "FAIL: valgrind run exited $got, expected $want"; status=1
    fi
}
megatron=(--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32
          --group-query-attention --num-query-groups 8 --seq-length 8192 --micro-batch-size 1
          --global-batch-size 128 --tensor-model-parallel-size 2 --vocab-size 128256 --swiglu --bf16
          --use-distributed-optimizer --sequence-parallel --use-flash-attn --disable-bias-linear
          --position-embedding-type rope --hidden-dropout 0 --attention-dropout 0
          --normalization RMSNorm --untie-embeddings-and-output-weights)
check 0 estimate --model llama3.1-8b --gpu h100-80 --tp 2 --cp 1 --pp 1 --world 8 --mbs 1 --seq 8192
check 0 estimate --model llama3.1-70b --gpu h100-80 --tp 8 --pp 4 --world 64 --mbs 1 --seq 8192 --gbs 256 --json
check 0 estimate --hf-config fuzz/corpus/hf_config/llama3.1-8b.json --gpu h100-80 --tp 2 --world 8 --mbs 1 --seq 8192
check 2 estimate --model no-such-model --tp 2 --world 8 --seq 8192
check 2 estimate --hf-config fuzz/corpus/hf_config/truncated.json --tp 2 --world 8 --seq 8192
check 0 check --gpu h100-80 --world-size 8 -- "${megatron[@]}"
check 2 check --gpu h100-80 -- --num-layers x
if "$cli" plan --help >/dev/null 2>&1; then
    check 0 plan --model llama3.1-8b --gpu h100-80 --gpus 16 --seq 4096 --gbs 128 --top 3
fi
[ $status -eq 0 ] && echo "ok   valgrind: CLI runs are clean"
exit $status
