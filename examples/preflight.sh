#!/usr/bin/env bash
# preflight.sh: a launcher wrapper that checks a Megatron-LM job's memory
# with `mem4d check` and launches it only when it fits, so a job that would
# run out of memory stops before it queues (or holds) GPUs.
#
#   examples/preflight.sh [CHECK-OPTIONS] -- torchrun --nproc-per-node 8 --nnodes 4 ... \
#       pretrain_gpt.py --num-layers 32 --hidden-size 4096 ...
#
# CHECK-OPTIONS are passed to `mem4d check` (--gpu NAME, --strict, --mode,
# --world-size N, --model NAME, --hf-config FILE, --gpu-memory-gib X);
# --dry-run prints the launch command instead of running it. Everything after
# the first *.py word is given to `mem4d check` as the Megatron-LM arguments.
# The world size is --nproc-per-node x --nnodes when the launcher says so
# (torchrun sets WORLD_SIZE only in its workers), else WORLD_SIZE or SLURM's
# variables, as `mem4d check` reads them.
#
# Environment: MEM4D (the mem4d program, default: mem4d on PATH);
# PREFLIGHT_FORCE=1 launches even when the check fails (it still reports).
# Exit status: that of `mem4d check` when it refuses (1 out of memory, 2
# invalid input), else that of the launched command.
# SPDX-License-Identifier: MIT
set -u

usage() {
    sed -n '2,21s/^# \{0,1\}//p' "$0"
}

mem4d=${MEM4D:-mem4d}
check_opts=()
dry_run=0
have_world=0
while (($#)); do
    case $1 in
    --) shift; break ;;
    --dry-run) dry_run=1; shift ;;
    --strict | --json) check_opts+=("$1"); shift ;;
    --gpu | --mode | --model | --hf-config | --gpu-memory-gib | --world-size)
        (($# >= 2)) || { echo "preflight: $1 needs a value" >&2; exit 2; }
        [[ $1 == --world-size ]] && have_world=1
        check_opts+=("$1" "$2"); shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "preflight: unknown option '$1' (the launch command goes after --)" >&2; exit 2 ;;
    esac
done
(($#)) || { usage >&2; exit 2; }
launch=("$@")

# Launcher words up to the training script; Megatron's arguments after it.
megatron=()
nproc='' nnodes=1 script=0
for ((i = 0; i < ${#launch[@]}; i++)); do
    w=${launch[i]}
    if ((script)); then
        megatron+=("$w")
        continue
    fi
    case $w in
    *.py) script=1 ;;
    --nproc-per-node=* | --nproc_per_node=*) nproc=${w#*=} ;;
    --nproc-per-node | --nproc_per_node) nproc=${launch[i + 1]:-} ;;
    --nnodes=*) nnodes=${w#*=} ;;
    --nnodes) nnodes=${launch[i + 1]:-} ;;
    esac
done
((script)) || { echo "preflight: no training script (*.py) in the launch command" >&2; exit 2; }
if ((!have_world)) && [[ $nproc =~ ^[0-9]+$ && $nnodes =~ ^[0-9]+$ ]]; then
    check_opts+=(--world-size "$((nproc * nnodes))")
fi

"$mem4d" check "${check_opts[@]}" -- "${megatron[@]}"
status=$?
if ((status != 0)); then
    if [[ ${PREFLIGHT_FORCE:-0} == 1 ]]; then
        echo "preflight: mem4d check exited $status; launching anyway (PREFLIGHT_FORCE=1)" >&2
    else
        echo "preflight: not launching: mem4d check exited $status" \
            "($( ((status == 1)) && echo "out of memory" || echo "invalid input"))" >&2
        exit "$status"
    fi
fi
if ((dry_run)); then
    printf 'preflight: would run:'
    printf ' %q' "${launch[@]}"
    printf '\n'
    exit 0
fi
exec "${launch[@]}"
