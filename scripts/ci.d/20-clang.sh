#!/usr/bin/env bash
# The same code builds -Werror clean with clang and passes the Check suites.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir="${BUILD_DIR:?}-clang"
[ -d "$dir" ] || CC=clang meson setup "$dir" -Ddocs=disabled -Dwerror=true >/dev/null
ninja -C "$dir"
meson test -C "$dir" --print-errorlogs --num-processes 2 --suite core
