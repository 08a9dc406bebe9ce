# SPDX-License-Identifier: MIT
"""Calibration: a device fitted to Megatron-LM training logs."""

import ctypes

from ._capi import from_c, lib, to_c
from ._import import _megatron_argv
from ._enums import CalibrationFigure, DeviceParam, LogFormat
from ._errors import Status, check
from ._objects import _Handle, _new
from ._signatures import CALIBRATION


def _log_bytes(text):
    """A log's text as bytes: a str (UTF-8) or bytes-like; TypeError for anything
    else (bytes(4096) would be 4096 NULs)."""
    if isinstance(text, str):
        return text.encode("utf-8")
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text)
    raise TypeError(f"a log must be a str or bytes, not {type(text).__name__}")


class Calibration(_Handle):
    """Megatron-LM logs read so far; fit() fits a Device to them.

        cal = mem4d.Calibration()
        cal.add_megatron_log_file("train.log")
        device = mem4d.Device.preset("h100-80")
        cal.fit(device)                      # device changed in place
        cal.figure(0, mem4d.CalibrationFigure.PREDICTED_STEP_AFTER_S)
    """

    _free = lib.mem4d_calibration_free

    def __init__(self):
        super().__init__(_new(lib.mem4d_calibration_new, CALIBRATION))

    def add_megatron_log(self, text, args=(), world_size=0):
        """Read one log (str, bytes or bytearray). args: the job's Megatron-LM
        arguments, used only when the log has no arguments block: a list of
        strings, or one command line split as a POSIX shell would (as
        import_megatron() takes them). world_size: 0 or the job's GPUs, in
        [0, 2**64). Mem4dError names the line it cannot read (E_RANGE for a
        world size outside 64 bits); TypeError for a text, an argument or a
        world size of the wrong type."""
        data = _log_bytes(text)
        argv, argc = _megatron_argv(args, world_size)
        code = lib.mem4d_calibration_add_megatron_log(self, data, len(data), argc, argv, world_size)
        check(code, from_c(lib.mem4d_calibration_message(self)))

    def add_megatron_log_file(self, path, args=(), world_size=0):
        """Read one log from a file: only a regular file of at most 1 GiB (a
        FIFO, a device or a directory is refused with Mem4dError E_IO, without
        blocking). args and world_size as for add_megatron_log()."""
        argv, argc = _megatron_argv(args, world_size)
        code = lib.mem4d_calibration_add_megatron_log_file(self, to_c(path, "log path"), argc, argv, world_size)
        check(code, from_c(lib.mem4d_calibration_message(self)))

    def add_log(self, text, model, layout, log_format=LogFormat.MEGATRON):
        """Read one log (str or bytes) of the job `model` / `layout` in `log_format`
        (LogFormat.TORCHTITAN, NANOTRON or MEGATRON). Mem4dError names the line it
        cannot read."""
        data = _log_bytes(text)
        try:
            log_format = LogFormat(log_format)
        except ValueError:
            raise ValueError(f"log_format {log_format!r} is not one of "
                             + ", ".join(f"LogFormat.{f.name}" for f in LogFormat)) from None
        code = lib.mem4d_calibration_add_log(self, int(log_format), data, len(data), model, layout)
        check(code, from_c(lib.mem4d_calibration_message(self)))

    def add_measurement(self, model, layout, figure, value):
        """A measured figure of the job without a log: CalibrationFigure.MEASURED_STEP_S,
        MEASURED_TFLOPS_PER_GPU (Megatron's count) or MEASURED_TOKENS_PER_S (whole job).
        value: an int or a float (TypeError for a bool or a str)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"a measured figure is an int or a float, not {type(value).__name__}")
        code = lib.mem4d_calibration_add_measurement(self, model, layout, int(figure), float(value))
        check(code, from_c(lib.mem4d_calibration_message(self)))

    def constants(self):
        """After fit(): {device key name: True when fitted from the runs, False when left
        at the device's value}."""
        out = {}
        key, fitted = ctypes.c_int(), ctypes.c_int()
        i = 0
        while True:
            code = lib.mem4d_calibration_constant(self, i, ctypes.byref(key), ctypes.byref(fitted))
            if code == Status.E_RANGE:
                return out
            check(code)
            out[DeviceParam(key.value).name.lower()] = bool(fitted.value)
            i += 1

    def fit(self, device):
        """Fit the device's constants to every log read; returns the device.
        A constant the fit stopped at its bound is said in `note`."""
        check(lib.mem4d_calibration_fit(self, device), from_c(lib.mem4d_calibration_message(self)))
        return device

    @property
    def note(self):
        """After fit(): what it says about a constant kept at its bound
        (mem4d_calibration_message()), or ""."""
        return from_c(lib.mem4d_calibration_message(self))

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
