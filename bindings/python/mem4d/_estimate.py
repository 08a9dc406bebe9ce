# SPDX-License-Identifier: MIT
"""estimate(): one layout's memory, per pipeline stage, as plain values."""

import ctypes
import dataclasses
import typing

from . import _capi
from ._capi import from_c, lib
from ._enums import DeviceParam, Info, Metric, Term
from ._errors import Status, check
from ._objects import _Handle, _new

GIB = float(1 << 30)

# Names of the per-stage terms, whole-job values and speed figures, in enum
# order: the generated enums' member names in lower case ("weights",
# "padded_vocab", "step_time_s"). A value appended to the header appears here,
# in Stage, Report and Metrics, without an edit.
TERMS = tuple(t.name.lower() for t in Term)
INFOS = tuple(i.name.lower() for i in Info)
METRICS = tuple(m.name.lower() for m in Metric)


def _weights_and_optimizer(self):
    """The paper's "weights + optimizer" column: weights, gradients, optimizer."""
    return self.weights + self.gradients + self.optimizer


Stage = dataclasses.make_dataclass(
    "Stage", [(name, int) for name in TERMS], frozen=True,
    namespace={"weights_and_optimizer": property(_weights_and_optimizer),
               "__doc__": "One pipeline stage: bytes, except params, layers and in_flight (counts)."})
Stage.__module__ = __name__

Metrics = dataclasses.make_dataclass(
    "Metrics", [(name, float) for name in METRICS], frozen=True,
    namespace={"__doc__": "Predicted speed (present when the device has a peak and the layout "
                          "a global batch)."})
Metrics.__module__ = __name__


def _peak(self):
    return self.stages[self.peak_stage]


def _peak_gib(self):
    return self.peak_bytes / GIB


def _peak_allocated_bytes(self):
    """The peak stage's torch.cuda.max_memory_allocated counterpart."""
    return self.stages[self.peak_stage].peak_allocated


def _peak_reserved_bytes(self):
    """The peak stage's torch.cuda.max_memory_reserved counterpart."""
    return self.stages[self.peak_stage].peak_reserved


def _attention_kernel_name(self):
    """The attention kernel the job runs, by the device key attention_kernel's names:
    "fa2", "fa3", "cudnn", "sdpa", "triton" (fused attention) or "unfused" (softmax
    attention over the s x s scores; softmax_fallback says whether PyTorch's fp32
    softmax ran in place of the stack's fused one)."""
    return from_c(lib.mem4d_device_value_name(DeviceParam.ATTENTION_KERNEL, self.attention_kernel))


Report = dataclasses.make_dataclass(
    "Report",
    [("mode", str),                   # "full" or "paper"
     ("verdict", str),                # "fits", "tight" or "oom"
     ("stages", typing.Tuple[Stage, ...]),
     ("peak_stage", int), ("peak_bytes", int), ("device_bytes", int)]
    + [(name, int) for name in INFOS]  # dp, world, microbatches, ...
    + [("metrics", typing.Optional[Metrics]),
       # settings that change memory but are not modelled ("compile: ...")
       ("warnings", typing.Tuple[str, ...], dataclasses.field(default=()))],
    frozen=True,
    namespace={"peak": property(_peak), "peak_gib": property(_peak_gib),
               "peak_allocated_bytes": property(_peak_allocated_bytes),
               "peak_reserved_bytes": property(_peak_reserved_bytes),
               "attention_kernel_name": property(_attention_kernel_name),
               "__doc__": "A successful estimate, copied out of the library (holds no C memory)."})
Report.__module__ = __name__


def _read_report(handle):
    """Copy a successful C report into a Report."""
    value = ctypes.c_uint64()
    stages = []
    for stage in range(lib.mem4d_report_num_stages(handle)):
        terms = []
        for term in range(len(TERMS)):
            check(lib.mem4d_report_get(handle, stage, term, ctypes.byref(value)))
            terms.append(value.value)
        stages.append(Stage(*terms))
    infos = []
    for info in range(len(INFOS)):
        check(lib.mem4d_report_info(handle, info, ctypes.byref(value)))
        infos.append(value.value)
    metrics = _read_metrics(handle)
    return Report(
        mode=from_c(lib.mem4d_mode_name(lib.mem4d_report_mode(handle))),
        verdict=from_c(lib.mem4d_verdict_name(lib.mem4d_report_verdict(handle))),
        stages=tuple(stages),
        peak_stage=lib.mem4d_report_peak_stage(handle),
        peak_bytes=lib.mem4d_report_peak_bytes(handle),
        device_bytes=lib.mem4d_report_device_bytes(handle),
        metrics=metrics,
        warnings=tuple(from_c(lib.mem4d_report_warning(handle, i))
                       for i in range(lib.mem4d_report_warning_count(handle))),
        **dict(zip(INFOS, infos)))


def _read_metrics(handle):
    out = ctypes.c_double()
    values = []
    for metric in range(len(METRICS)):
        code = lib.mem4d_report_metric(handle, metric, ctypes.byref(out))
        if code == Status.E_UNSUPPORTED:
            return None  # speed was not predicted for this estimate
        check(code)
        values.append(out.value)
    return Metrics(*values)


class ReportBuffer(_Handle):
    """A reusable C report (for loops that estimate many layouts)."""

    _free = lib.mem4d_report_free

    def __init__(self):
        super().__init__(_new(lib.mem4d_report_new, _capi.REPORT))

    def estimate(self, model, layout, device):
        code = lib.mem4d_estimate(model, layout, device, self)
        check(code, from_c(lib.mem4d_report_message(self)))
        return _read_report(self)


def estimate(model, layout, device):
    """Estimate layout for model on device; a Report, or Mem4dError saying why not."""
    with ReportBuffer() as buf:
        return buf.estimate(model, layout, device)


def _solve(fn, model, layout, device):
    out = ctypes.c_uint64()
    check(fn(model, layout, device, ctypes.byref(out)))
    return out.value


def max_micro_batch(model, layout, device):
    """Largest micro-batch with which layout still fits (0: not even 1)."""
    return _solve(lib.mem4d_solve_max_micro_batch, model, layout, device)


def max_seq_length(model, layout, device):
    """Longest sequence with which layout still fits (0: none)."""
    return _solve(lib.mem4d_solve_max_seq_length, model, layout, device)


def min_gpus(model, device, base, max_gpus):
    """(gpus, Layout) for the fewest GPUs on which some layout fits; (0, None) if none."""
    from ._objects import Layout
    gpus = ctypes.c_uint64()
    layout = Layout()
    check(lib.mem4d_solve_min_gpus(model, device, base, max_gpus, ctypes.byref(gpus), layout))
    return (gpus.value, layout) if gpus.value else (0, None)


def best_layout(model, device, base):
    """(Layout, Report) of the fastest layout of base's GPUs that fits; None if none fits."""
    from ._objects import Layout
    layout = Layout()
    with ReportBuffer() as buf:
        code = lib.mem4d_solve_best_layout(model, device, base, layout, buf)
        if code == Status.END:
            return None
        check(code)
        return layout, _read_report(buf)
