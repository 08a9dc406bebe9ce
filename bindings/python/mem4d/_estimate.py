# SPDX-License-Identifier: MIT
"""estimate(): one layout's memory, per pipeline stage, as plain values."""

import ctypes
import dataclasses
import typing

from . import _capi
from ._capi import lib
from ._errors import Status, check
from ._objects import _Handle, _new

GIB = float(1 << 30)

# mem4d_term values, in enum order (fixed forever; new ones are appended).
TERMS = ("weights", "gradients", "optimizer", "activations", "overhead", "total",
         "params", "layers", "in_flight", "buffers", "fragmentation", "fixed",
         "peak_allocated", "peak_reserved")
# mem4d_info values.
INFOS = ("dp", "world", "microbatches", "padded_vocab", "model_params", "process_groups")
# mem4d_metric values.
METRICS = ("step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "bubble_fraction",
           "compute_time_s", "exposed_comm_s")


@dataclasses.dataclass(frozen=True)
class Stage:
    """One pipeline stage: bytes, except params, layers and in_flight (counts)."""
    weights: int
    gradients: int
    optimizer: int
    activations: int
    overhead: int
    total: int
    params: int
    layers: int
    in_flight: int
    buffers: int
    fragmentation: int
    fixed: int
    peak_allocated: int
    peak_reserved: int

    @property
    def weights_and_optimizer(self):
        """The paper's "weights + optimizer" column: weights, gradients, optimizer."""
        return self.weights + self.gradients + self.optimizer


@dataclasses.dataclass(frozen=True)
class Metrics:
    """Predicted speed (present when the device has a peak and the layout a global batch)."""
    step_time_s: float
    tokens_per_s: float
    tflops_per_gpu: float
    mfu: float
    bubble_fraction: float
    compute_time_s: float
    exposed_comm_s: float


@dataclasses.dataclass(frozen=True)
class Report:
    """A successful estimate, copied out of the library (holds no C memory)."""
    mode: str                  # "full" or "paper"
    verdict: str               # "fits", "tight" or "oom"
    stages: typing.Tuple[Stage, ...]
    peak_stage: int
    peak_bytes: int
    device_bytes: int
    dp: int
    world: int
    microbatches: int
    padded_vocab: int
    model_params: int
    process_groups: int
    metrics: typing.Optional[Metrics]
    # settings that change memory but are not modelled (e.g. "compile: ...")
    warnings: typing.Tuple[str, ...] = ()

    @property
    def peak(self):
        return self.stages[self.peak_stage]

    @property
    def peak_allocated_bytes(self):
        """The peak stage's torch.cuda.max_memory_allocated counterpart."""
        return self.peak.peak_allocated

    @property
    def peak_reserved_bytes(self):
        """The peak stage's torch.cuda.max_memory_reserved counterpart."""
        return self.peak.peak_reserved

    @property
    def peak_gib(self):
        return self.peak_bytes / GIB


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
        mode=lib.mem4d_mode_name(lib.mem4d_report_mode(handle)).decode(),
        verdict=lib.mem4d_verdict_name(lib.mem4d_report_verdict(handle)).decode(),
        stages=tuple(stages),
        peak_stage=lib.mem4d_report_peak_stage(handle),
        peak_bytes=lib.mem4d_report_peak_bytes(handle),
        device_bytes=lib.mem4d_report_device_bytes(handle),
        dp=infos[0], world=infos[1], microbatches=infos[2], padded_vocab=infos[3],
        model_params=infos[4], process_groups=infos[5],
        metrics=metrics,
        warnings=tuple(lib.mem4d_report_warning(handle, i).decode()
                       for i in range(lib.mem4d_report_warning_count(handle))))


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
        check(code, lib.mem4d_report_message(self).decode())
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
