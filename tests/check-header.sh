#!/bin/sh
# The public header stands alone as strict C11 and as C++.
# Usage: check-header.sh INCLUDE_DIR
set -eu
inc="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include <mem4d/mem4d.h>\nint main(void) { return mem4d_strerror(MEM4D_OK) == 0; }\n' > "$tmp/h.c"
cp "$tmp/h.c" "$tmp/h.cpp"
for cc in ${CC:-cc} clang; do
    command -v "$cc" >/dev/null 2>&1 || continue
    "$cc" -std=c11 -pedantic -Wall -Wextra -Werror -I"$inc" -fsyntax-only "$tmp/h.c"
    echo "ok: $cc -std=c11 -pedantic"
done
for cxx in ${CXX:-c++} clang++; do
    command -v "$cxx" >/dev/null 2>&1 || continue
    "$cxx" -std=c++11 -pedantic -Wall -Wextra -Werror -I"$inc" -fsyntax-only "$tmp/h.cpp"
    echo "ok: $cxx -std=c++11 -pedantic"
done
