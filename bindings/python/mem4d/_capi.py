# SPDX-License-Identifier: MIT
"""Private: the loader of libmem4d, and the C signatures bound to it.

The signatures (SIGNATURES, the handle types MODEL, LAYOUT, ...) are
generated from include/mem4d/mem4d.h into _signatures.py by
scripts/gen-bindings.py; `scripts/gen-bindings.py --check` fails when they are
stale. This file only finds the library and binds them.

The library is found, in order, by:
  1. MEM4D_LIBRARY, a path (or a name the dynamic linker resolves);
  2. the soname libmem4d.so.0 through the dynamic linker (an installed library);
  3. a build tree of this source checkout: MEM4D_BUILD_DIR, or the newest
     build*/lib/libmem4d.so.0 beside bindings/ (for development).
"""

import ctypes
import glob
import os

from ._signatures import (DEVICE, IMPORT, LAYOUT, MODEL, REPORT,  # noqa: F401 (re-exported)
                          SEARCH, SIGNATURES)

SONAME = "libmem4d.so.0"


def _build_tree_candidates():
    """libmem4d.so.0 files of build trees in this checkout, newest first."""
    explicit = os.environ.get("MEM4D_BUILD_DIR")
    if explicit:
        return [os.path.join(explicit, "lib", SONAME)]
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    if not os.path.isfile(os.path.join(root, "include", "mem4d", "mem4d.h")):
        return []
    found = glob.glob(os.path.join(root, "build*", "lib", SONAME))
    return sorted(found, key=os.path.getmtime, reverse=True)


def _open():
    override = os.environ.get("MEM4D_LIBRARY")
    if override:
        # An explicit choice must not silently fall back to another library.
        return ctypes.CDLL(override)
    errors = []
    for candidate in [SONAME] + _build_tree_candidates():
        try:
            return ctypes.CDLL(candidate)
        except OSError as exc:
            errors.append(str(exc))
    raise OSError("libmem4d not found (set MEM4D_LIBRARY to its path): "
                  + "; ".join(errors))


def _bind(cdll):
    for name, restype, argtypes in SIGNATURES:
        try:
            fn = getattr(cdll, name)
        except AttributeError:
            # An older library of the same soname lacks newer functions: the
            # rest still works, and calling a missing one raises
            # AttributeError naming it.
            continue
        fn.restype = restype
        fn.argtypes = argtypes
    return cdll


lib = _bind(_open())


def to_c(text, what):
    """text (str, bytes or a path) as a NUL-terminated C string argument.

    C would read a string with a NUL in it only up to the NUL (so
    "config.json\\0x" would open "config.json"): that is refused with
    ValueError, like the standard library's own calls into C.
    """
    if isinstance(text, os.PathLike):
        text = os.fspath(text)
    if isinstance(text, str):
        data = text.encode()
    elif isinstance(text, (bytes, bytearray)):
        data = bytes(text)
    else:
        raise TypeError(f"{what} must be a str, not {type(text).__name__}")
    cut = data.find(b"\0")
    if cut >= 0:
        kept = data[:cut].decode(errors="replace")
        raise ValueError(f"{what} {text!r} contains a NUL character: C would read only {kept!r}")
    return data


def from_c(raw):
    """A string the library returned, as str; "" for NULL. Bytes that are not
    UTF-8 (a name cut inside a character) become U+FFFD rather than raise."""
    return raw.decode("utf-8", errors="replace") if raw is not None else ""
