#!/usr/bin/env bash
# Build libmem4d as WebAssembly and assemble the static page:
#   scripts/build-web.sh [OUT]         (OUT defaults to build-web)
# leaves OUT/site/ (index.html, the page's scripts, mem4d/ = bindings/js + the
# wasm module), which works from any static host, or from file:// in a
# browser that allows file access (chromium --allow-file-access-from-files).
#
# Uses Debian's emscripten (scripts/setup.sh installs it). config.json import
# needs json-c: its Debian source package (fetched with apt-get source through
# a private source list, not the system's; apt checks it against Debian's
# signed index) is built once for wasm into
# OUT/json-c, so the page reads Hugging Face configs with the library's own
# reader.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-build-web}")
mkdir -p "$out"

# Debian's emcc finds its JavaScript modules only through NODE_PATH when node
# is not Debian's own (these machines have node 20 from elsewhere).
export NODE_PATH="${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs"
command -v emcc >/dev/null || { echo "build-web: emcc not found (scripts/setup.sh --web installs emscripten)"; exit 1; }

# --- json-c for wasm, from Debian's source package --------------------------
jsonc="$out/json-c"
if [ ! -f "$jsonc/inst/lib/libjson-c.a" ]; then
    rm -rf "$jsonc"
    mkdir -p "$jsonc/lists/partial"
    # A private deb-src list and package-list directory, made from the
    # system's own binary sources (the archive apt already uses): the
    # system's apt configuration is read but never changed.
    mkdir -p "$jsonc/sources.list.d"
    if [ -f /etc/apt/sources.list ]; then
        sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' /etc/apt/sources.list > "$jsonc/sources.list"
    else
        : > "$jsonc/sources.list"
    fi
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] && sed 's/^Types:.*/Types: deb-src/' "$f" > "$jsonc/sources.list.d/$(basename "$f")"
    done
    for f in /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] && sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" > "$jsonc/sources.list.d/$(basename "$f")"
    done
    apt=(-o Dir::Etc::SourceList="$jsonc/sources.list" -o Dir::Etc::SourceParts="$jsonc/sources.list.d"
         -o Dir::State::Lists="$jsonc/lists" -o Dir::Cache::srcpkgcache= -o Dir::Cache::pkgcache=
         -o APT::Sandbox::User=root -qq)
    apt-get "${apt[@]}" update
    (cd "$jsonc" && apt-get "${apt[@]}" source --download-only json-c)
    orig=$(find "$jsonc" -maxdepth 1 -name "json-c_*.orig.tar.gz" | head -n 1)
    mkdir -p "$jsonc/src" "$jsonc/build"
    tar -xzf "$orig" -C "$jsonc/src" --strip-components=1
    (cd "$jsonc/build" &&
        emcmake cmake "$jsonc/src" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
            -DBUILD_STATIC_LIBS=ON -DBUILD_TESTING=OFF \
            -DDISABLE_THREAD_LOCAL_STORAGE=ON -DCMAKE_INSTALL_PREFIX="$jsonc/inst" -Wno-dev >/dev/null &&
        emmake make -s -j"$(nproc)" install >/dev/null)
fi

# --- libmem4d.a --------------------------------------------------------------
printf "[properties]\npkg_config_libdir = ['%s']\n" "$jsonc/inst/lib/pkgconfig" > "$out/paths.ini"
if [ ! -f "$out/meson/build.ninja" ]; then
    meson setup "$out/meson" --cross-file web/wasm-cross.ini --cross-file "$out/paths.ini" \
        -Djson=enabled -Dtests=false -Ddocs=disabled -Dbuildtype=release >/dev/null
fi
ninja -C "$out/meson" lib/libmem4d.a >/dev/null

# --- the ES module: every exported symbol of the version script --------------
symbols=$(sed -n 's/^[[:space:]]*\(mem4d_[a-z0-9_]*\);.*/_\1/p' lib/libmem4d.map | sort -u | paste -sd, -)
site="$out/site"
rm -rf "$site"
mkdir -p "$site/mem4d"
# emscripten's in-memory file system stays in: json-c seeds its hash tables
# from /dev/urandom on the first key it hashes, and without the file system
# that read throws in the browser ("SYSCALLS.getStreamFromFD is not a
# function") instead of failing over to json-c's other seeds. The page itself
# reads no file: dropped configs reach the library as buffers.
emcc -O2 "$out/meson/lib/libmem4d.a" "$jsonc/inst/lib/libjson-c.a" \
    -o "$site/mem4d/libmem4d.mjs" \
    -sMODULARIZE=1 -sEXPORT_ES6=1 -sEXPORT_NAME=createMem4d -sENVIRONMENT=web \
    -sWASM_BIGINT=1 -sALLOW_MEMORY_GROWTH=1 \
    -sEXPORTED_FUNCTIONS="[$symbols,_malloc,_free]" \
    -sEXPORTED_RUNTIME_METHODS="[UTF8ToString,stringToUTF8,lengthBytesUTF8]"

cp bindings/js/*.js "$site/mem4d/"
cp web/index.html web/*.js web/*.css "$site/"
wasm_bytes=$(stat -c %s "$site/mem4d/libmem4d.wasm")
echo "build-web: $site (libmem4d.wasm $wasm_bytes bytes)"
