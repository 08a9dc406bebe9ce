#!/usr/bin/env bash
# Set up everything and run every test of libmem4d: the README's test command,
# and what CI runs. Each stage is a script in scripts/ci.d/, run in order;
# BUILD_DIR is the main (gcc, -Werror) build that later stages reuse.
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh || exit 1

export BUILD_DIR="${BUILD_DIR:-$PWD/build-test}"
passed=0
failed=0
failures=()
for stage in scripts/ci.d/*.sh; do
    name=$(basename "$stage" .sh)
    echo "=== $name"
    start=$(date +%s)
    if bash "$stage"; then
        passed=$((passed + 1))
        echo "=== $name: ok ($(( $(date +%s) - start )) s)"
    else
        failed=$((failed + 1))
        failures+=("$name")
        echo "=== $name: FAILED ($(( $(date +%s) - start )) s)"
    fi
done
[ "$failed" -eq 0 ] || echo "failed stages: ${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
