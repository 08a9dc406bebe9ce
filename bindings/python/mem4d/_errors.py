# SPDX-License-Identifier: MIT
"""Status codes and the exception that carries them."""

from ._capi import lib
from ._enums import Status


def _description(self):
    """The library's short description (mem4d_strerror)."""
    return strerror(self)


# Status (mem4d_status, values fixed forever) is generated from the header.
Status.description = property(_description)


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
