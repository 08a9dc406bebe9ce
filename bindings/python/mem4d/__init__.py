# SPDX-License-Identifier: MIT
"""Python bindings of libmem4d, the GPU memory estimator for 4D-parallel LLM training.

    import mem4d
    model = mem4d.Model.preset("llama3.1-70b")
    layout = mem4d.Layout(tp=8, pp=4, dp=2, mbs=1, seq=8192)
    device = mem4d.Device.preset("h100-80")
    report = mem4d.estimate(model, layout, device)
    print(report.verdict, report.peak_gib)

Only the standard library is used (ctypes); see _capi.py for how the shared
library is found (MEM4D_LIBRARY overrides).
"""

from ._capi import from_c as _from_c
from ._capi import lib as _lib
from ._enums import VERSION as __version__
from ._calibrate import Calibration
from ._enums import CalibrationFigure, Framework, LogFormat, Info, Metric, Moment, ParamKind, SearchOption, SearchStat, Term
from ._errors import Mem4dError, Status, strerror
from ._estimate import (GIB, Metrics, Report, ReportBuffer, Stage, estimate,
                        max_micro_batch, max_seq_length, min_gpus,
                        best_layout)
from ._import import Importer, MegatronImport, WorldSource, import_deepspeed, import_megatron
from ._objects import Device, Layout, Model
from ._search import Plan, Search, plan
from ._torchtitan import torchtitan_layout


def library_version():
    """Version of the loaded libmem4d ("0.2.0"); __version__ is the header's
    these bindings were generated from."""
    return _from_c(_lib.mem4d_version())


__all__ = [
    "GIB", "Calibration", "CalibrationFigure", "Device", "Framework", "Importer", "Info", "Layout", "LogFormat", "MegatronImport", "Mem4dError", "Metric",
    "Metrics", "Model", "Moment", "ParamKind", "Plan", "Report", "ReportBuffer", "Search", "SearchOption",
    "SearchStat", "Stage", "Status", "Term", "WorldSource",
    "estimate", "import_deepspeed", "import_megatron", "library_version", "max_micro_batch",
    "max_seq_length", "min_gpus", "best_layout", "plan", "strerror", "torchtitan_layout",
]
