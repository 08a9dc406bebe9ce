# SPDX-License-Identifier: MIT
"""Megatron-LM argument lists and Hugging Face configs."""

import collections.abc
import ctypes
import dataclasses
import shlex
import typing

from . import _capi
from ._capi import from_c, lib, to_c
from ._enums import WorldSource
from ._errors import Mem4dError, Status, check
from ._objects import Layout, Model, _Handle, _new


class Importer(_Handle):
    """A C import handle; keeps the messages of its last import."""

    _free = lib.mem4d_import_free

    def __init__(self):
        super().__init__(_new(lib.mem4d_import_new, _capi.IMPORT))

    def _check(self, code):
        check(code, from_c(lib.mem4d_import_message(self)))

    @property
    def warnings(self):
        return [from_c(lib.mem4d_import_warning(self, i))
                for i in range(lib.mem4d_import_warning_count(self))]

    @property
    def world_source(self):
        code = lib.mem4d_import_world_source(self)
        try:
            return WorldSource(code)
        except ValueError:
            return code


@dataclasses.dataclass
class MegatronImport:
    """What import_megatron() read."""
    model: Model
    layout: Layout
    warnings: typing.List[str]
    world_source: WorldSource


def _cstrings(items, what):
    """A NULL-terminated char * array (and the bytes it points into)."""
    data = [to_c(s, what) for s in items]
    array = (ctypes.c_char_p * (len(data) + 1))(*data, None)
    return array, len(data)


def _megatron_argv(argv, world_size):
    """A Megatron-LM argument list (a list of strings, or one command line
    split as a POSIX shell would) as a C array and its length, after checking
    that world_size is an int in [0, 2**64): ctypes would wrap a larger one
    (2**64 to 0) without a word."""
    if isinstance(argv, (str, bytes)):
        argv = shlex.split(argv if isinstance(argv, str) else argv.decode())
    if isinstance(world_size, bool) or not isinstance(world_size, int):
        raise TypeError(f"world_size must be an int, not {type(world_size).__name__} {world_size!r}")
    if not 0 <= world_size < 1 << 64:
        raise Mem4dError(Status.E_RANGE, f"world_size {world_size} is outside [0, 2**64 - 1]")
    return _cstrings(argv, "Megatron argument")


def import_megatron(argv, env=None, world_size=0, model=None, layout=None):
    """Read a Megatron-LM argument list (as given to pretrain_gpt.py).

    argv: the arguments (no program name), as a list of strings, or as one
    command-line string, which is split the way a POSIX shell would
    (shlex.split: "--num-layers 32 --seq-length 8192"). env: a mapping, or a
    list of "NAME=value" strings, for the world-size fallbacks; None uses no
    environment (pass os.environ to use the process's). world_size: an
    explicit value in [0, 2**64), or 0. model, layout: objects to fill (new
    ones by default). Raises Mem4dError naming the flag at fault (E_RANGE for
    a world size outside 64 bits), TypeError for a world size that is not an
    int, ValueError for a string with a NUL character.
    """
    args, argc = _megatron_argv(argv, world_size)
    model = model if model is not None else Model()
    layout = layout if layout is not None else Layout()
    envp = None
    if env is not None:
        if isinstance(env, collections.abc.Mapping):
            env = [f"{k}={v}" for k, v in env.items()]
        envp, _ = _cstrings(env, "environment entry")
    imp = Importer()
    imp._check(lib.mem4d_import_megatron(imp, argc, args, envp, world_size, model, layout))
    return MegatronImport(model, layout, imp.warnings, imp.world_source)


def import_deepspeed(path=None, layout=None, text=None):
    """Read a DeepSpeed ds_config.json (a path, or its text) into a layout.

    Sets framework deepspeed, the ZeRO stage and its buckets, offload and
    precision (mem4d_import_deepspeed_config). The parallel sizes are not in
    the file: set them on the layout. Returns (layout, warnings); raises
    Mem4dError naming the key at fault.
    """
    layout = layout if layout is not None else Layout()
    imp = Importer()
    if text is not None:
        data = text.encode() if isinstance(text, str) else bytes(text)
        imp._check(lib.mem4d_import_deepspeed_config_buffer(imp, data, len(data), layout))
    else:
        imp._check(lib.mem4d_import_deepspeed_config(imp, to_c(path, "ds_config.json path"), layout))
    return layout, imp.warnings
