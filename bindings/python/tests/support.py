# SPDX-License-Identifier: MIT
"""Shared helpers of the binding's tests: import the package of this checkout,
find the header and the CLI of the build tree under test."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PYROOT = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(PYROOT))
HEADER = os.path.join(REPO, "include", "mem4d", "mem4d.h")

# These tests test the package beside them, not an installed copy.
if sys.path[0] != PYROOT:
    sys.path.insert(0, PYROOT)

import mem4d  # noqa: E402
from mem4d import _capi  # noqa: E402


def build_dir():
    """The build tree whose library is loaded (for the CLI), or None."""
    if os.environ.get("MEM4D_BUILD_DIR"):
        return os.environ["MEM4D_BUILD_DIR"]
    path = getattr(_capi.lib, "_name", "")
    if os.path.sep in path:
        lib_dir = os.path.dirname(os.path.realpath(path))
        return os.path.dirname(lib_dir)
    return None


def cli():
    """Path of the mem4d command-line tool built with the loaded library, or None."""
    if os.environ.get("MEM4D_CLI"):
        return os.environ["MEM4D_CLI"]
    root = build_dir()
    if root:
        path = os.path.join(root, "cli", "mem4d")
        if os.access(path, os.X_OK):
            return path
    return None


def paper_layout(**keys):
    """A paper-mode layout: FlashAttention, distributed optimizer, fp32 grads."""
    return mem4d.Layout(mode="paper", **keys)


def rss_bytes():
    """Resident set size of this process, from /proc (Linux)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")
