# SPDX-License-Identifier: MIT
"""torchtitan job TOML files (train_configs/*.toml) into a layout.

The C library takes the layout keys; this reads the TOML with the standard
library's tomllib (Python 3.11 or later). Both torchtitan's 2024 layout
([training] + [experimental]) and its 2025 layout ([parallelism],
[compile], [quantize.linear.float8]) are read; keys that are absent keep
torchtitan's defaults.
"""

import typing

from ._errors import Mem4dError, Status
from ._objects import Layout

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None


def _fail(message):
    raise Mem4dError(Status.E_CONFLICT, message)


def _int(section, key, default):
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise Mem4dError(Status.E_PARSE, f"torchtitan TOML: {key} = {value!r} is not an integer")
    return value


def _first(tables, key, default):
    for table in tables:
        if key in table:
            return table[key]
    return default


def _degrees(cfg, world):
    """tp, cp, pp, dp_shard, dp_replicate; dp_shard -1 takes the rest of world."""
    par = cfg.get("parallelism", {})
    training, experimental = cfg.get("training", {}), cfg.get("experimental", {})
    tables = (par, training, experimental)
    tp = _int({"v": _first(tables, "tensor_parallel_degree", 1)}, "v", 1)
    cp = _int({"v": _first(tables, "context_parallel_degree", 1)}, "v", 1)
    pp = _int({"v": _first(tables, "pipeline_parallel_degree", 1)}, "v", 1)
    rep = _int({"v": _first(tables, "data_parallel_replicate_degree", 1)}, "v", 1)
    shard = _int({"v": _first(tables, "data_parallel_shard_degree", -1)}, "v", -1)
    if shard == -1:
        if not world:
            _fail("torchtitan TOML: data_parallel_shard_degree is -1 (the rest of the GPUs); "
                  "give world= to say how many GPUs the job has")
        rest = tp * cp * pp * rep
        if world % rest:
            _fail(f"torchtitan TOML: world {world} is not divisible by tp {tp} x cp {cp} x pp {pp} "
                  f"x dp_replicate {rep} = {rest}")
        shard = world // rest
    if min(tp, cp, pp, rep, shard) < 1:
        _fail("torchtitan TOML: a parallel degree is below 1")
    return tp, cp, pp, shard, rep


def _activation_checkpoint(cfg):
    ac = cfg.get("activation_checkpoint", {})
    mode = ac.get("mode", "selective")
    if mode == "none":
        return {"recompute": "none"}
    if mode == "full":
        return {"recompute": "full"}
    if mode != "selective":
        _fail(f"torchtitan TOML: activation_checkpoint.mode = {mode!r} is not none, full or selective")
    option = str(ac.get("selective_ac_option", "2"))
    if option == "op":
        return {"recompute": "op"}
    if option.isdigit() and int(option) > 0:
        return {"recompute": "full", "recompute_every": int(option)}
    _fail(f"torchtitan TOML: selective_ac_option = {option!r} is not 'op' or a positive integer")
    return {}


def _float8(cfg):
    old = cfg.get("float8", {})
    new = cfg.get("quantize", {}).get("linear", {}).get("float8")
    converters = cfg.get("model", {}).get("converters", [])
    if isinstance(converters, str):  # "float8" or "float8,other"
        converters = [c.strip() for c in converters.split(",")]
    keys = {}
    if new is not None or old.get("enable_float8_linear", False) or "float8" in converters:
        recipe = (new or old).get("recipe_name", "tensorwise") or "tensorwise"
        if recipe not in ("tensorwise", "rowwise", "rowwise_with_gw_hp"):
            _fail(f"torchtitan TOML: float8 recipe_name = {recipe!r} is not tensorwise or rowwise")
        keys["float8"] = "tensorwise" if recipe == "tensorwise" else "rowwise"
        if (new or old).get("enable_fsdp_float8_all_gather", False):
            keys["fp8_all_gather"] = 1
    return keys


def _compile(cfg):
    section = cfg.get("compile")
    if isinstance(section, dict):  # 2025: [compile] enable, components
        if not section.get("enable", False):
            return "none"
        parts = section.get("components", ["model", "loss"])
        return "blocks_and_loss" if "loss" in parts else "blocks"
    if cfg.get("training", {}).get("compile", False):
        # training.compile: torchtitan compiles the loss too since it moved
        # the parallel degrees to [parallelism] (2025)
        return "blocks_and_loss" if "parallelism" in cfg else "blocks"
    return "none"


def _batch(cfg, pp, dp, keys):
    training = cfg.get("training", {})
    par = cfg.get("parallelism", {})
    local = _int(training, "local_batch_size", _int(training, "batch_size", 8))
    mbs = local
    if pp > 1:
        if "pipeline_parallel_microbatch_size" in par:
            mbs = _int(par, "pipeline_parallel_microbatch_size", 1)
        else:
            exp = cfg.get("experimental", {})
            n = _int(exp, "pipeline_parallel_microbatches", 0) or pp
            if local % n:
                _fail(f"torchtitan TOML: local batch {local} is not divisible by {n} microbatches")
            mbs = local // n
    keys["mbs"] = mbs
    keys["gbs"] = _int(training, "global_batch_size", -1) if "global_batch_size" in training else local * dp
    if keys["gbs"] < 0:
        keys["gbs"] = local * dp


def torchtitan_layout(toml: typing.Union[str, bytes, dict], world: int = 0,
                      layout: typing.Optional[Layout] = None, path: typing.Optional[str] = None) -> Layout:
    """The layout of a torchtitan job: toml is the file's text (or a parsed
    dict), or pass path=. world: GPUs in the job, needed when
    data_parallel_shard_degree is -1. Raises Mem4dError (E_UNSUPPORTED on
    Python < 3.11, which has no tomllib)."""
    if path is not None:
        with open(path, "rb") as f:
            toml = f.read()
    if isinstance(toml, dict):
        cfg = toml
    else:
        if tomllib is None:
            raise Mem4dError(Status.E_UNSUPPORTED, "reading TOML needs Python 3.11 or later (tomllib)")
        text = toml.decode() if isinstance(toml, bytes) else toml
        try:
            cfg = tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            raise Mem4dError(Status.E_PARSE, f"torchtitan TOML: {err}") from None
    tp, cp, pp, shard, rep = _degrees(cfg, world)
    dp = shard * rep
    training = cfg.get("training", {})
    par = cfg.get("parallelism", {})
    exp = cfg.get("experimental", {})
    keys = {"framework": "torchtitan", "tp": tp, "cp": cp, "pp": pp, "dp": dp, "dp_replicate": rep,
            "seq": _int(training, "seq_len", 2048)}
    _batch(cfg, pp, dp, keys)
    keys.update(_activation_checkpoint(cfg))
    keys.update(_float8(cfg))
    keys["compile"] = _compile(cfg)
    if _first((par, exp), "enable_async_tensor_parallel", False):
        keys["tp_comm_overlap"] = 1  # torchtitan's async TP
    schedule = str(_first((par, exp), "pipeline_parallel_schedule", "1F1B"))
    if pp > 1 and schedule.lower() in ("gpipe",):
        keys["pipeline_schedule"] = "afab"
    elif pp > 1 and schedule.lower().startswith("interleaved"):
        keys["vpp"] = 2  # torchtitan's default of two stages per rank
    if training.get("mixed_precision_param", "bfloat16") == "float32":
        keys["param_bytes"] = 4
    if training.get("mixed_precision_reduce", "float32") == "bfloat16":
        keys["main_grad_bytes"] = 2
    layout = layout if layout is not None else Layout()
    layout.set(**keys)
    return layout
