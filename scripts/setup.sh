#!/usr/bin/env bash
# Install what libmem4d needs to build, test and document itself, on Debian
# or Ubuntu, when missing. Idempotent; needs root (or sudo) only to install.
set -euo pipefail

packages=(meson ninja-build pkg-config gcc g++ check libjson-c-dev doxygen
          clang lld libclang-rt-dev abigail-tools valgrind python3 python3-setuptools
          python3-pip cargo rustc
          slurm-wlm libslurm-dev munge)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
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
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "setup: all build and test dependencies present"
