#!/usr/bin/env bash
# Set up, build, and run the main job on the built-in default: plan
# Llama-3.1-70B on 64 H100-80GB GPUs (8 per node), sequence 8192, global
# batch 512. Extra arguments go to `mem4d plan` instead of the default.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
[ -d build ] || meson setup build -Ddocs=disabled -Dtests=false >/dev/null
ninja -C build >/dev/null
if [ $# -eq 0 ]; then
    set -- --model llama3.1-70b --gpu h100-80 --gpus 64 --seq 8192 --gbs 512
fi
exec build/cli/mem4d plan "$@"
