# SPDX-License-Identifier: MIT
"""Private: the C signatures of include/mem4d/mem4d.h, and the loader.

Every public function of the header appears once in SIGNATURES, with the
ctypes types of its result and parameters. tests/test_signatures.py parses the
header and fails when the two disagree (a missing or extra symbol, a different
number of parameters, or a parameter of another kind), so this table is the
one place a header change has to be mirrored.

The library is found, in order, by:
  1. MEM4D_LIBRARY, a path (or a name the dynamic linker resolves);
  2. the soname libmem4d.so.0 through the dynamic linker (an installed library);
  3. a build tree of this source checkout: MEM4D_BUILD_DIR, or the newest
     build*/lib/libmem4d.so.0 beside bindings/ (for development).
"""

import ctypes
import glob
import os

SONAME = "libmem4d.so.0"


# Opaque handles: distinct structure types, so a model pointer cannot be passed
# where a layout is expected, and the signature test can tell them apart.
class Model(ctypes.Structure):
    pass


class Layout(ctypes.Structure):
    pass


class Device(ctypes.Structure):
    pass


class Report(ctypes.Structure):
    pass


class Search(ctypes.Structure):
    pass


class Import(ctypes.Structure):
    pass


# C enums are passed as int (their values are all small and non-negative).
c_enum = ctypes.c_int
c_status = ctypes.c_int

u64 = ctypes.c_uint64
u32 = ctypes.c_uint32
size = ctypes.c_size_t
f64 = ctypes.c_double
cstr = ctypes.c_char_p          # const char * in, and char * buffers out
P = ctypes.POINTER

MODEL, LAYOUT, DEVICE = P(Model), P(Layout), P(Device)
REPORT, SEARCH, IMPORT = P(Report), P(Search), P(Import)

# (name, restype, argtypes); restype None is void.
SIGNATURES = (
    # status
    ("mem4d_strerror", cstr, [c_status]),
    ("mem4d_version", cstr, []),
    # model
    ("mem4d_model_new", c_status, [P(MODEL)]),
    ("mem4d_model_new_preset", c_status, [cstr, P(MODEL)]),
    ("mem4d_model_clone", c_status, [MODEL, P(MODEL)]),
    ("mem4d_model_free", None, [MODEL]),
    ("mem4d_model_set", c_status, [MODEL, c_enum, u64]),
    ("mem4d_model_get", c_status, [MODEL, c_enum, P(u64)]),
    ("mem4d_model_set_str", c_status, [MODEL, cstr, cstr]),
    ("mem4d_model_name", cstr, [MODEL]),
    ("mem4d_model_set_name", c_status, [MODEL, cstr]),
    ("mem4d_model_validate", c_status, [MODEL, cstr, size]),
    ("mem4d_model_num_params", c_status, [MODEL, P(u64)]),
    ("mem4d_model_preset_count", size, []),
    ("mem4d_model_preset_name", cstr, [size]),
    ("mem4d_model_param_count", size, []),
    ("mem4d_model_param_name", cstr, [c_enum]),
    ("mem4d_model_param_from_name", c_status, [cstr, P(c_enum)]),
    ("mem4d_model_param_bounds", c_status, [c_enum, P(u64), P(u64)]),
    # layout
    ("mem4d_layout_new", c_status, [P(LAYOUT)]),
    ("mem4d_layout_clone", c_status, [LAYOUT, P(LAYOUT)]),
    ("mem4d_layout_copy", c_status, [LAYOUT, LAYOUT]),
    ("mem4d_layout_free", None, [LAYOUT]),
    ("mem4d_layout_set", c_status, [LAYOUT, c_enum, u64]),
    ("mem4d_layout_get", c_status, [LAYOUT, c_enum, P(u64)]),
    ("mem4d_layout_set_str", c_status, [LAYOUT, cstr, cstr]),
    ("mem4d_layout_param_count", size, []),
    ("mem4d_layout_param_name", cstr, [c_enum]),
    ("mem4d_layout_param_from_name", c_status, [cstr, P(c_enum)]),
    ("mem4d_layout_param_bounds", c_status, [c_enum, P(u64), P(u64)]),
    ("mem4d_layout_value_name", cstr, [c_enum, u64]),
    ("mem4d_validate", c_status, [MODEL, LAYOUT, cstr, size]),
    # device
    ("mem4d_device_new", c_status, [P(DEVICE)]),
    ("mem4d_device_new_preset", c_status, [cstr, P(DEVICE)]),
    ("mem4d_device_clone", c_status, [DEVICE, P(DEVICE)]),
    ("mem4d_device_free", None, [DEVICE]),
    ("mem4d_device_set", c_status, [DEVICE, c_enum, u64]),
    ("mem4d_device_get", c_status, [DEVICE, c_enum, P(u64)]),
    ("mem4d_device_set_str", c_status, [DEVICE, cstr, cstr]),
    ("mem4d_device_name", cstr, [DEVICE]),
    ("mem4d_device_preset_count", size, []),
    ("mem4d_device_preset_name", cstr, [size]),
    ("mem4d_device_param_count", size, []),
    ("mem4d_device_param_name", cstr, [c_enum]),
    ("mem4d_device_param_from_name", c_status, [cstr, P(c_enum)]),
    ("mem4d_device_param_bounds", c_status, [c_enum, P(u64), P(u64)]),
    # estimate
    ("mem4d_report_new", c_status, [P(REPORT)]),
    ("mem4d_report_free", None, [REPORT]),
    ("mem4d_estimate", c_status, [MODEL, LAYOUT, DEVICE, REPORT]),
    ("mem4d_report_status", c_status, [REPORT]),
    ("mem4d_report_message", cstr, [REPORT]),
    ("mem4d_report_mode", c_enum, [REPORT]),
    ("mem4d_report_verdict", c_enum, [REPORT]),
    ("mem4d_report_num_stages", u32, [REPORT]),
    ("mem4d_report_peak_stage", u32, [REPORT]),
    ("mem4d_report_peak_bytes", u64, [REPORT]),
    ("mem4d_report_device_bytes", u64, [REPORT]),
    ("mem4d_report_get", c_status, [REPORT, u32, c_enum, P(u64)]),
    ("mem4d_report_info", c_status, [REPORT, c_enum, P(u64)]),
    ("mem4d_report_metric", c_status, [REPORT, c_enum, P(f64)]),
    ("mem4d_report_warning_count", size, [REPORT]),
    ("mem4d_report_warning", cstr, [REPORT, size]),
    ("mem4d_verdict_name", cstr, [c_enum]),
    ("mem4d_mode_name", cstr, [c_enum]),
    ("mem4d_term_name", cstr, [c_enum]),
    # search
    ("mem4d_search_new", c_status, [MODEL, DEVICE, LAYOUT, P(SEARCH)]),
    ("mem4d_search_free", None, [SEARCH]),
    ("mem4d_search_set_option", c_status, [SEARCH, c_enum, u64]),
    ("mem4d_search_bound", c_status, [SEARCH, c_enum, u64, u64]),
    ("mem4d_search_allow", c_status, [SEARCH, c_enum, P(u64), size]),
    ("mem4d_search_next", c_status, [SEARCH, LAYOUT, REPORT]),
    ("mem4d_search_reset", c_status, [SEARCH]),
    ("mem4d_search_stat_get", c_status, [SEARCH, c_enum, P(u64)]),
    ("mem4d_solve_max_micro_batch", c_status, [MODEL, LAYOUT, DEVICE, P(u64)]),
    ("mem4d_solve_max_seq_length", c_status, [MODEL, LAYOUT, DEVICE, P(u64)]),
    ("mem4d_solve_min_gpus", c_status, [MODEL, DEVICE, LAYOUT, u64, P(u64), LAYOUT]),
    # import
    ("mem4d_import_new", c_status, [P(IMPORT)]),
    ("mem4d_import_free", None, [IMPORT]),
    ("mem4d_import_megatron", c_status,
     [IMPORT, ctypes.c_int, P(cstr), P(cstr), u64, MODEL, LAYOUT]),
    ("mem4d_import_hf_config", c_status, [IMPORT, cstr, MODEL]),
    ("mem4d_import_hf_config_buffer", c_status, [IMPORT, cstr, size, MODEL]),
    ("mem4d_import_deepspeed_config", c_status, [IMPORT, cstr, LAYOUT]),
    ("mem4d_import_deepspeed_config_buffer", c_status, [IMPORT, cstr, size, LAYOUT]),
    ("mem4d_import_message", cstr, [IMPORT]),
    ("mem4d_import_warning_count", size, [IMPORT]),
    ("mem4d_import_warning", cstr, [IMPORT, size]),
    ("mem4d_import_world_source", c_enum, [IMPORT]),
    # layout -> Megatron-LM flags (0.2)
    ("mem4d_layout_megatron_args", c_status, [MODEL, LAYOUT, cstr, size, P(size)]),
)


def _build_tree_candidates():
    """libmem4d.so.0 files of build trees in this checkout, newest first."""
    explicit = os.environ.get("MEM4D_BUILD_DIR")
    if explicit:
        return [os.path.join(explicit, "lib", SONAME)]
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    if not os.path.isfile(os.path.join(root, "include", "mem4d", "mem4d.h")):
        return []
    found = glob.glob(os.path.join(root, "build*", "lib", SONAME))
    return sorted(found, key=os.path.getmtime, reverse=True)


def _open():
    override = os.environ.get("MEM4D_LIBRARY")
    if override:
        # An explicit choice must not silently fall back to another library.
        return ctypes.CDLL(override)
    errors = []
    for candidate in [SONAME] + _build_tree_candidates():
        try:
            return ctypes.CDLL(candidate)
        except OSError as exc:
            errors.append(str(exc))
    raise OSError("libmem4d not found (set MEM4D_LIBRARY to its path): "
                  + "; ".join(errors))


def _bind(cdll):
    for name, restype, argtypes in SIGNATURES:
        fn = getattr(cdll, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return cdll


lib = _bind(_open())
