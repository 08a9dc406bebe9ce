#!/usr/bin/env bash
# The browser page: libmem4d built as WebAssembly (scripts/build-web.sh),
# web/ served on 127.0.0.1 and driven in headless Chromium by puppeteer-core
# (web/tests/browser-test.mjs), which enters the paper's golden job, a plan, a
# Megatron command line and a broken config.json, and compares what the page
# shows with the native CLI's --json. Prints the page's ready time, a
# Llama-3.1-405B plan on 16,384 GPUs in the browser and the .wasm size;
# screenshots go to $WEB_DIR/artifacts. Skipped where the tools cannot be
# installed, except under CI=true, where that fails.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${BUILD_DIR:?}"
WEB_DIR="${WEB_DIR:-$PWD/build-web}"
cli="$BUILD_DIR/cli/mem4d"
[ -x "$cli" ] || { echo "web: $cli not found (build $BUILD_DIR first)"; exit 1; }

missing=()
for tool in emcc chromium node npm cmake; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "${CI:-}" = "true" ]; then
        echo "web: FAILED: ${missing[*]} missing (scripts/setup.sh installs them)"
        exit 1
    fi
    echo "web: skipped: ${missing[*]} could not be installed here"
    exit 0
fi

set -e
start=$(date +%s)
scripts/build-web.sh "$WEB_DIR"
echo "web: wasm build and site in $(( $(date +%s) - start )) s"

# puppeteer-core from npm, into the build folder (never global); v24 is the
# newest major whose engines accept node 18 and 20.
node_dir="$WEB_DIR/node"
if [ ! -d "$node_dir/node_modules/puppeteer-core" ]; then
    mkdir -p "$node_dir"
    npm install --prefix "$node_dir" --no-audit --no-fund --loglevel=error puppeteer-core@24
fi

# What the native CLI says, for the page to match.
exp="$WEB_DIR/expected"
rm -rf "$exp" "$WEB_DIR/artifacts"
mkdir -p "$exp"
"$cli" estimate --model llama3.1-8b --gpu h100-80 --tp 2 --world 4 --seq 8192 --mode paper --json > "$exp/golden.json"
"$cli" estimate --model llama3.1-8b --gpu h100-80 --gpu-memory-gib 40 --tp 2 --world 4 --seq 8192 --mode paper --json \
    > "$exp/golden40.json" || true  # exit 1: it does not fit
"$cli" estimate --model mixtral-8x7b --gpu h100-80 --world 8 --seq 4096 --gbs 64 --set ep=8 --json > "$exp/moe.json"
"$cli" plan --model llama3.1-70b --gpu h100-80 --gpus 64 --seq 8192 --gbs 512 --top 10 --json > "$exp/plan.json"
"$cli" plan --model llama3.1-405b --gpu h100-80 --gpus 16384 --seq 8192 --gbs 2048 --top 10 --json > "$exp/plan405.json"
grep -v '^#' tests/data/megatron/llama3-8b-tp1-cp2.args | xargs "$cli" check --gpu h100-80 --world-size 8 --json -- \
    > "$exp/check.json" || true
"$cli" estimate --hf-config tests/data/hf/truncated.json --gpu h100-80 --world 1 --seq 8192 2> "$exp/broken.txt" && exit 1
"$cli" estimate --model llama3.1-8b --gpu h100-80 --tp 3 --world 3 --seq 8192 2> "$exp/tp3.txt" && exit 1

node web/tests/browser-test.mjs --site "$WEB_DIR/site" --expected "$exp" --artifacts "$WEB_DIR/artifacts" \
    --node-modules "$node_dir/node_modules" --data tests/data
