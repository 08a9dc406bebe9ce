#!/usr/bin/env bash
# Python and Rust bindings against the library of $BUILD_DIR (already built
# and tested by 10-core): the generated tables are fresh
# (scripts/gen-bindings.py --check), the Python unittest suite (the library
# agrees with the generated copies, golden values, error mapping, 100k-cycle
# leak check, search agreement), an offline `pip install` of the package whose
# example must print the CLI's table, and `cargo test --offline` for mem4d-sys
# and mem4d.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${BUILD_DIR:?}"

lib="$BUILD_DIR/lib/libmem4d.so.0"
cli="$BUILD_DIR/cli/mem4d"
[ -f "$lib" ] || { echo "bindings: $lib not found (build $BUILD_DIR first)"; exit 1; }

export MEM4D_LIBRARY="$lib" MEM4D_CLI="$cli" MEM4D_LIB_DIR="$BUILD_DIR/lib"
export PYTHONDONTWRITEBYTECODE=1
results=()
failed=0
step() {  # step NAME COMMAND...: run, remember the outcome, keep going
    local name=$1
    shift
    echo "+ $*"
    if "$@"; then
        results+=("ok    $name")
    else
        results+=("FAIL  $name")
        failed=1
    fi
}

step "generated bindings fresh" python3 scripts/gen-bindings.py --check
step "python unittest" python3 -m unittest discover -s bindings/python/tests -t bindings/python/tests

# The package installs with no network (in-tree stdlib build backend), and the
# installed copy's example prints exactly the CLI's default table.
py_install() {
    local dir
    dir=$(mktemp -d) || return 1
    # Both with and without build isolation; --no-index proves no index is needed.
    local mode
    for mode in --no-build-isolation --use-pep517; do
        rm -rf "$dir/site"
        python3 -m pip install --quiet --no-index "$mode" --disable-pip-version-check \
            --target "$dir/site" ./bindings/python 2>&1 | grep -v "Running pip as the 'root' user"
        [ -f "$dir/site/mem4d/_capi.py" ] ||
            { echo "pip install $mode produced no package"; rm -rf "$dir"; return 1; }
    done
    "$cli" estimate --model llama3.1-70b --gpu h100-80 --tp 8 --pp 4 --dp 2 --mbs 1 --seq 8192 > "$dir/cli.txt" &&
        (cd "$dir" && PYTHONPATH="$dir/site" python3 "$OLDPWD/bindings/python/examples/estimate.py") > "$dir/py.txt" &&
        diff -u "$dir/cli.txt" "$dir/py.txt"
    local rc=$?
    rm -rf "$dir"
    return $rc
}
if python3 -m pip --version >/dev/null 2>&1; then
    step "python offline pip install + example" py_install
else
    results+=("skip  python pip install (no pip for python3)")
fi

if command -v cargo >/dev/null 2>&1; then
    # Build artefacts live beside the C build they link, not in the source tree.
    export CARGO_TARGET_DIR="$BUILD_DIR/cargo-target"
    step "cargo test mem4d-sys mem4d" cargo test --offline --quiet \
        --manifest-path bindings/rust/Cargo.toml --workspace
else
    echo "bindings: cargo not found (scripts/setup.sh installs it)"
    results+=("FAIL  cargo test (cargo not found)")
    failed=1
fi

echo "bindings summary:"
printf '  %s\n' "${results[@]}"
exit $failed
