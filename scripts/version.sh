#!/bin/sh
# Print the version the public header declares ("0.2.0"): the project's one
# source of its version, read by meson.build (project and library version).
# Usage: version.sh [HEADER]  (default: include/mem4d/mem4d.h beside this script)
set -eu
header=${1:-$(dirname "$0")/../include/mem4d/mem4d.h}
part() {
    v=$(sed -n "s/^#define MEM4D_VERSION_$1 \([0-9][0-9]*\)\$/\1/p" "$header")
    [ -n "$v" ] || { echo "version.sh: no MEM4D_VERSION_$1 in $header" >&2; exit 1; }
    printf %s "$v"
}
echo "$(part MAJOR).$(part MINOR).$(part MICRO)"
