# SPDX-License-Identifier: MIT
"""torchtitan job TOML files (train_configs/NAME.toml) into a layout.

A thin call into the library's reader (mem4d_import_torchtitan_config): the
TOML is read there, strictly (TOML 1.0, torchtitan's types and choices), so
the CLI (--torchtitan-config), Rust, the web page and this binding read a
file the same way. Both torchtitan's 2024 layout ([training] +
[experimental]) and its 2025-2026 layout ([parallelism], [compile],
[quantize.linear.float8]) are read; keys that are absent keep torchtitan's
defaults. Every failure is a Mem4dError.
"""

import math
import typing

from ._capi import lib, to_c
from ._errors import Mem4dError, Status
from ._objects import Layout, Model


def _key(k):
    return k if k.replace("_", "").replace("-", "").isalnum() and k.isascii() else '"' + _escape(k) + '"'


def _escape(s):
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def _value(v, depth=0):
    if depth > 32:
        raise Mem4dError(Status.E_PARSE, "torchtitan TOML: the dict is nested too deep")
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return '"' + _escape(v) + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x, depth + 1) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(str(k))} = {_value(x, depth + 1)}" for k, x in v.items()) + "}"
    raise Mem4dError(Status.E_PARSE, f"torchtitan TOML: {type(v).__name__} {v!r} has no TOML form")


def _dumps(cfg):
    """A parsed job (a dict, as tomllib gives it) back into TOML text."""
    return "".join(f"{_key(str(k))} = {_value(v)}\n" for k, v in cfg.items())


def torchtitan_layout(toml: typing.Union[str, bytes, dict, None] = None, world: int = 0,
                      layout: typing.Optional[Layout] = None, path: typing.Optional[str] = None,
                      model: typing.Optional[Model] = None) -> Layout:
    """The layout of a torchtitan job: toml is the file's text (or a parsed
    dict), or pass path= (a regular file: a FIFO or a device is refused at
    once). world: GPUs in the job, needed when data_parallel_shard_degree
    is -1 (an int in [0, 2**64)). model: gives torchtitan's pipeline split
    its layer count. Raises Mem4dError naming the key or the TOML line at
    fault."""
    if isinstance(world, bool) or not isinstance(world, int):
        raise Mem4dError(Status.E_INVALID_ARG, f"world must be an int, not {type(world).__name__} {world!r}")
    if not 0 <= world < 1 << 64:
        raise Mem4dError(Status.E_RANGE, f"world {world} is outside [0, 2**64 - 1]")
    if (toml is None) == (path is None):
        raise Mem4dError(Status.E_INVALID_ARG, "give the TOML text or path=, one of them")
    layout = layout if layout is not None else Layout()
    from ._import import Importer  # the import handle, shared with the other readers
    imp = Importer()
    if path is not None:
        imp._check(lib.mem4d_import_torchtitan_config(imp, to_c(path, "torchtitan TOML path"), world, model, layout))
        return layout
    if isinstance(toml, dict):
        toml = _dumps(toml)
    if isinstance(toml, str):
        data = toml.encode("utf-8", "surrogatepass")
    elif isinstance(toml, (bytes, bytearray, memoryview)):
        data = bytes(toml)
    else:
        raise Mem4dError(Status.E_INVALID_ARG, f"toml must be text, bytes or a dict, not {type(toml).__name__}")
    imp._check(lib.mem4d_import_torchtitan_config_buffer(imp, data, len(data), world, model, layout))
    return layout

