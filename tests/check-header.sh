#!/bin/sh
# The public header stands alone as strict C11 and as C++, and its
# MEM4D_DEPRECATED marks a declaration so that a call to it warns.
# Usage: check-header.sh INCLUDE_DIR
set -eu
inc="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include <mem4d/mem4d.h>\nint main(void) { return mem4d_strerror(MEM4D_OK) == 0; }\n' > "$tmp/h.c"
cp "$tmp/h.c" "$tmp/h.cpp"
# A deprecated declaration compiles; only a call to it warns (an error here).
printf '#include <mem4d/mem4d.h>\nMEM4D_DEPRECATED("use f") int old_f(void);\nint old_f(void) { return 0; }\n' > "$tmp/d.c"
printf 'int main(void) { return old_f(); }\n' > "$tmp/call.c"
cat "$tmp/d.c" "$tmp/call.c" > "$tmp/dcall.c"
cp "$tmp/d.c" "$tmp/d.cpp"
cp "$tmp/dcall.c" "$tmp/dcall.cpp"
deprecation() {  # deprecation COMPILER STD EXT
    "$1" -std="$2" -pedantic -Wall -Werror -I"$inc" -fsyntax-only "$tmp/d.$3"
    if "$1" -std="$2" -pedantic -Wall -Werror -I"$inc" -fsyntax-only "$tmp/dcall.$3" 2>/dev/null; then
        echo "FAIL: $1 -std=$2: a call to a MEM4D_DEPRECATED function did not warn"
        exit 1
    fi
}
for cc in ${CC:-cc} clang; do
    command -v "$cc" >/dev/null 2>&1 || continue
    "$cc" -std=c11 -pedantic -Wall -Wextra -Werror -I"$inc" -fsyntax-only "$tmp/h.c"
    deprecation "$cc" c11 c
    echo "ok: $cc -std=c11 -pedantic"
done
for cxx in ${CXX:-c++} clang++; do
    command -v "$cxx" >/dev/null 2>&1 || continue
    "$cxx" -std=c++11 -pedantic -Wall -Wextra -Werror -I"$inc" -fsyntax-only "$tmp/h.cpp"
    deprecation "$cxx" c++11 cpp
    deprecation "$cxx" c++14 cpp
    echo "ok: $cxx -std=c++11 -pedantic"
done
