# SPDX-License-Identifier: MIT
"""Megatron-LM argument lists and Hugging Face configs."""

import ctypes
import dataclasses
import enum
import os
import typing

from . import _capi
from ._capi import lib
from ._errors import check
from ._objects import Layout, Model, _Handle, _new


class WorldSource(enum.IntEnum):
    """mem4d_world_source: where a Megatron import took the world size from."""
    NONE = 0
    EXPLICIT = 1
    ENV_WORLD_SIZE = 2
    ENV_SLURM_NTASKS = 3
    ENV_SLURM_NODES = 4


class Importer(_Handle):
    """A C import handle; keeps the messages of its last import."""

    _free = lib.mem4d_import_free

    def __init__(self):
        super().__init__(_new(lib.mem4d_import_new, _capi.IMPORT))

    def _check(self, code):
        check(code, lib.mem4d_import_message(self).decode())

    @property
    def warnings(self):
        return [lib.mem4d_import_warning(self, i).decode()
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


def _cstrings(items):
    """A NULL-terminated char * array (and the bytes it points into)."""
    data = [s.encode() if isinstance(s, str) else bytes(s) for s in items]
    array = (ctypes.c_char_p * (len(data) + 1))(*data, None)
    return array, len(data)


def import_megatron(argv, env=None, world_size=0, model=None, layout=None):
    """Read a Megatron-LM argument list (as given to pretrain_gpt.py).

    argv: the arguments (no program name). env: a mapping, or a list of
    "NAME=value" strings, for the world-size fallbacks; None uses no
    environment (pass os.environ to use the process's). world_size: an
    explicit value, or 0. model, layout: objects to fill (new ones by
    default). Raises Mem4dError naming the flag at fault.
    """
    model = model if model is not None else Model()
    layout = layout if layout is not None else Layout()
    args, argc = _cstrings(argv)
    envp = None
    if env is not None:
        if isinstance(env, (dict, type(os.environ))):
            env = [f"{k}={v}" for k, v in env.items()]
        envp, _ = _cstrings(env)
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
        imp._check(lib.mem4d_import_deepspeed_config(imp, os.fsencode(path), layout))
    return layout, imp.warnings
