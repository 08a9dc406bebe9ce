#!/usr/bin/env bash
# bench-plan-svg: what `mem4d plan --svg` costs over the same search without
# it, on a search of about 785,000 layouts (an 840-layer, 840-head model on
# 110,880 GPUs, every micro-batch 1-64 and vpp 1-4) whose landscape has
# 12,288 cells. Prints the two wall times; never fails on speed.
# Usage: bench/bench-plan-svg.sh [PATH/TO/mem4d] (default build/cli/mem4d)
# SPDX-License-Identifier: MIT
set -eu
cli=${1:-build/cli/mem4d}
job=(--model llama3.1-8b --model-set num_layers=840 --model-set num_attention_heads=840
     --model-set num_query_groups=840 --model-set hidden_size=53760 --gpus 110880 --seq 2520
     --gbs 221760 --all --top 1 --mbs 1-64 --vpp 1-4 --cross-node)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
secs() { local t0 t1; t0=$(date +%s.%N); "$@" > /dev/null; t1=$(date +%s.%N); echo "$t0 $t1" | awk '{printf "%.2f", $2 - $1}'; }
layouts=$("$cli" plan "${job[@]}" | sed -n 2p | cut -d' ' -f1)
plain=$(secs "$cli" plan "${job[@]}")
svg=$(secs "$cli" plan "${job[@]}" --svg "$tmp/plan.svg")
cells=$(($(grep -c '<rect' "$tmp/plan.svg") - 1))
echo "plan: $layouts layouts, $cells landscape cells: ${plain} s without --svg, ${svg} s with it"
