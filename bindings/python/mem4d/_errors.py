# SPDX-License-Identifier: MIT
"""Status codes and the exception that carries them."""

import enum

from ._capi import lib


class Status(enum.IntEnum):
    """mem4d_status: values are fixed forever (see mem4d.h)."""
    OK = 0
    END = 1
    E_INVALID_ARG = 2
    E_NOMEM = 3
    E_RANGE = 4
    E_UNKNOWN_KEY = 5
    E_UNKNOWN_PRESET = 6
    E_PARSE = 7
    E_MODEL = 8
    E_HEADS_TP = 9
    E_KV_HEADS_TP = 10
    E_LAYERS_PP = 11
    E_WORLD = 12
    E_SEQ = 13
    E_BATCH = 14
    E_UNSUPPORTED = 15
    E_NO_JSON = 16
    E_IO = 17
    E_JSON = 18
    E_MISSING = 19
    E_CONFLICT = 20
    E_DIM_TP = 21
    E_EXPERTS = 22

    @property
    def description(self):
        """The library's short description (mem4d_strerror)."""
        return strerror(self)


def strerror(status):
    return lib.mem4d_strerror(int(status)).decode()


def _as_status(code):
    try:
        return Status(code)
    except ValueError:
        # A newer library may return a status this binding does not know;
        # keep the number rather than hide the error.
        return code


class Mem4dError(Exception):
    """A libmem4d call failed.

    .status is a Status (an IntEnum: .status.name, int(.status)); .message is
    the library's sentence about this failure (or its status description
    when the call gives no sentence).
    """

    def __init__(self, status, message=""):
        self.status = _as_status(status)
        self.message = message or strerror(status)
        name = getattr(self.status, "name", str(status))
        super().__init__(f"{self.message} [{name}]")


def check(code, message=""):
    """Raise Mem4dError unless code is MEM4D_OK."""
    if code != Status.OK:
        raise Mem4dError(code, message)
