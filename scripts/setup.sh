#!/usr/bin/env bash
# Install what libmem4d needs to build, test and document itself, on Debian
# or Ubuntu, when missing. Idempotent; needs root (or sudo) only to install.
set -euo pipefail

packages=(meson ninja-build pkg-config gcc g++ check libjson-c-dev doxygen
          clang lld libclang-rt-dev abigail-tools valgrind python3 python3-setuptools
          python3-pip cargo rustc
          slurm-wlm libslurm-dev munge)

# not_installed PKG...: those of the packages dpkg does not have.
not_installed() {
    local p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
    done
}

# apt_install PKG...: install with apt-get, as root or through sudo.
apt_install() {
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

mapfile -t missing < <(not_installed "${packages[@]}")
# A toolchain installed outside apt (rustup, pyenv) serves as well.
keep=()
for p in "${missing[@]}"; do
    case "$p" in
        cargo|rustc) command -v cargo >/dev/null 2>&1 && command -v rustc >/dev/null 2>&1 && continue ;;
        python3) command -v python3 >/dev/null 2>&1 && continue ;;
        python3-setuptools) python3 -c 'import setuptools' >/dev/null 2>&1 && continue ;;
        python3-pip) python3 -m pip --version >/dev/null 2>&1 && continue ;;
    esac
    keep+=("$p")
done
missing=("${keep[@]+"${keep[@]}"}")

if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    apt_install "${missing[@]}"
fi
# The browser page (scripts/ci.d/80-web.sh): emscripten, cmake (json-c for
# wasm), Chromium. Best effort: where a distribution cannot give them (e.g.
# Ubuntu's chromium is a snap), that stage is skipped, except under CI=true.
mapfile -t web_missing < <(not_installed emscripten cmake chromium)
# npm fetches puppeteer-core; a node installed outside apt brings its own.
command -v npm >/dev/null 2>&1 || web_missing+=(npm)
if [ ${#web_missing[@]} -gt 0 ]; then
    echo "setup: installing ${web_missing[*]} (the browser page's test)"
    apt_install "${web_missing[@]}" ||
        echo "setup: ${web_missing[*]} could not be installed; the web stage will be skipped (failed under CI=true)"
fi
echo "setup: all build and test dependencies present"
