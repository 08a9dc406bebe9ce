# SPDX-License-Identifier: MIT
"""Calibration: a device fitted to Megatron-LM training logs."""

import ctypes

from ._capi import from_c, lib, to_c
from ._enums import CalibrationFigure
from ._errors import Status, check
from ._objects import _Handle, _new
from ._signatures import CALIBRATION


class Calibration(_Handle):
    """Megatron-LM logs read so far; fit() fits a Device to them.

        cal = mem4d.Calibration()
        cal.add_megatron_log(open("train.log").read())
        device = mem4d.Device.preset("h100-80")
        cal.fit(device)                      # device changed in place
        cal.figure(0, mem4d.CalibrationFigure.PREDICTED_STEP_AFTER_S)
    """

    _free = lib.mem4d_calibration_free

    def __init__(self):
        super().__init__(_new(lib.mem4d_calibration_new, CALIBRATION))

    def add_megatron_log(self, text, args=(), world_size=0):
        """Read one log (str or bytes). args: the job's Megatron-LM arguments,
        used only when the log has no arguments block. Mem4dError names the
        line it cannot read."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        args = list(args)
        argv = (ctypes.c_char_p * (len(args) + 1))(*[to_c(a, "argument") for a in args], None)
        code = lib.mem4d_calibration_add_megatron_log(self, data, len(data), len(args), argv, world_size)
        check(code, from_c(lib.mem4d_calibration_message(self)))

    def fit(self, device):
        """Fit the device's constants to every log read; returns the device."""
        check(lib.mem4d_calibration_fit(self, device), from_c(lib.mem4d_calibration_message(self)))
        return device

    def __len__(self):
        return lib.mem4d_calibration_log_count(self)

    def figure(self, index, which):
        """A figure of log `index` after fit(); None when the log has no such line."""
        value = ctypes.c_double()
        code = lib.mem4d_calibration_get(self, index, int(which), ctypes.byref(value))
        if code == Status.E_UNSUPPORTED:
            return None
        check(code)
        return value.value

    def figures(self, index):
        """Every figure of log `index` as a dict keyed by CalibrationFigure name (lower case)."""
        out = {}
        for f in CalibrationFigure:
            v = self.figure(index, f)
            if v is not None:
                out[f.name.lower()] = v
        return out
