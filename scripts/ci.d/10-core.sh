#!/usr/bin/env bash
# gcc build with -Werror, every meson test (Check suites, header and symbol
# checks, CLI tests), the Doxygen build (warnings are errors), and an
# install whose pkg-config file builds and runs an example.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${BUILD_DIR:?}"

if [ -d "$BUILD_DIR" ]; then
    meson setup --reconfigure "$BUILD_DIR" -Ddocs=enabled -Djson=enabled -Dwerror=true >/dev/null
else
    CC=gcc meson setup "$BUILD_DIR" -Ddocs=enabled -Djson=enabled -Dwerror=true >/dev/null
fi
ninja -C "$BUILD_DIR"
meson test -C "$BUILD_DIR" --print-errorlogs --num-processes 2

# Install into a scratch prefix and build the example against it with
# nothing but pkg-config.
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
meson install -C "$BUILD_DIR" --destdir "$prefix" --quiet
root="$prefix$(meson introspect "$BUILD_DIR" --buildoptions | python3 -c \
    'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')"
pcdir=$(dirname "$(find "$root" -name mem4d.pc | head -n 1)")
export PKG_CONFIG_PATH="$pcdir"
export PKG_CONFIG_SYSROOT_DIR="$prefix"
cc -std=c11 -Wall -Wextra -Werror examples/hello.c $(pkg-config --cflags --libs mem4d) -o "$prefix/hello"
libdir=$(dirname "$(find "$root" -name 'libmem4d.so.0' | head -n 1)")
LD_LIBRARY_PATH="$libdir" "$prefix/hello" | tee "$prefix/out"
grep -q '^peak 72495972352 bytes' "$prefix/out"
soname=$(readelf -d "$libdir/libmem4d.so.0" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = "libmem4d.so.0" ] || { echo "soname is '$soname'"; exit 1; }
echo "installed library, header and mem4d.pc build and run an example (soname $soname)"
