#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write a Megatron-LM training log whose arguments block holds every
argument that megatron/training/arguments.py adds with add_argument(), each
with its default as Megatron prints it, the job's own values laid over them,
in _print_args()'s exact format; then the iteration and memory lines of a
log given (the job's measured figures).

    gen-all-arguments.py MEGATRON_CHECKOUT JOB_LOG > all-arguments.log

MEGATRON_CHECKOUT: a checkout of NVIDIA/Megatron-LM (d98e8a64dd for the
committed file). JOB_LOG: a log in tests/data/megatron-logs whose arguments
block gives the job and whose other lines are copied. Standard library only:
arguments.py is read with ast, not imported (it needs torch).

How a default becomes the printed text (what str() of the value is after
parse_args() and validate_args()):
- store_true prints False, store_false True, other actions their default;
- a string default of an argument with a type= is converted the way argparse
  converts it (int, float); other defaults print as Python prints them
  (None, lists with their quotes, enum members as Class.member);
- validate_args() maps the optimizer and FSDP dtype arguments to torch
  dtypes ('fp32' -> torch.float32, 'bf16' -> torch.bfloat16, 'fp16' ->
  torch.float16, 'fp8' -> torch.uint8, 'auto' -> None), as at arguments.py
  line 1077 of d98e8a64dd, and adds params_dtype, rank, world_size,
  data_parallel_size and virtual_pipeline_model_parallel_size.
"""
import ast
import os
import sys

DTYPES = {"fp32": "torch.float32", "bf16": "torch.bfloat16", "fp16": "torch.float16", "fp8": "torch.uint8",
          "auto": "None"}
MAPPED = ["main_grads_dtype", "main_params_dtype", "exp_avg_dtype", "exp_avg_sq_dtype",
          "mamba_inference_conv_states_dtype", "mamba_inference_ssm_states_dtype",
          "mamba_training_ssm_states_dtype", "megatron_fsdp_main_params_dtype", "megatron_fsdp_main_grads_dtype",
          "megatron_fsdp_grad_comm_dtype"]


class _Env:
    """os for the defaults that read the environment (the job's world size)."""
    environ = {}

    @staticmethod
    def getenv(key, default=None):
        return _Env.environ.get(key, default)


def printed(node, kwargs):
    """str() of a default given as an AST node."""
    try:
        value = ast.literal_eval(node)
    except ValueError:
        try:  # 2 ** 32, int(os.getenv('WORLD_SIZE', '1'))
            value = eval(compile(ast.Expression(node), "default", "eval"), {"__builtins__": {}},
                         {"int": int, "float": float, "os": _Env})
        except Exception:
            text = ast.unparse(node)  # AttnBackend.auto, torch.float32
            return "Signals." + text[7:] if text.startswith("signal.SIG") else text
    typ = kwargs.get("type")
    if isinstance(value, str) and typ is not None and isinstance(typ, ast.Name) and typ.id in ("int", "float"):
        value = int(value) if typ.id == "int" else float(value)
    return str(value)


def arguments(path):
    """{dest: printed default} of every add_argument() call in arguments.py."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    out = {}
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "add_argument"):
            continue
        flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        kwargs = {k.arg: k.value for k in call.keywords if k.arg}
        if not flags or not flags[0].startswith("-"):
            continue
        if "dest" in kwargs:
            dest = ast.literal_eval(kwargs["dest"])
        else:
            longs = [f for f in flags if f.startswith("--")] or flags
            dest = longs[0].lstrip("-").replace("-", "_")
        action = ast.literal_eval(kwargs["action"]) if isinstance(kwargs.get("action"), ast.Constant) else None
        if "default" in kwargs:
            text = printed(kwargs["default"], kwargs)
        elif action == "store_true":
            text = "False"
        elif action == "store_false":
            text = "True"
        else:
            text = "None"
        # The first add_argument of a dest sets its default (argparse keeps the first).
        out.setdefault(dest, text)
    return out


def _sources(root):
    for top, _, files in os.walk(os.path.join(root, "megatron")):
        for name in files:
            if name.endswith(".py"):
                yield os.path.join(top, name)


def dataclass_fields(root, name, found=None):
    """[(field, printed default)] of dataclass `name` and its bases, read with ast."""
    for path in _sources(root):
        text = open(path, encoding="utf-8").read()
        if f"class {name}" not in text:
            continue
        for cls in ast.walk(ast.parse(text)):
            if not (isinstance(cls, ast.ClassDef) and cls.name == name):
                continue
            out = []
            for base in cls.bases:
                if isinstance(base, ast.Name) and base.id not in ("object",):
                    out += dataclass_fields(root, base.id)
            for st in cls.body:
                if not (isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)):
                    continue
                if "ClassVar" in ast.unparse(st.annotation) or st.target.id.startswith("_"):
                    continue
                default = st.value
                text_default = "None"
                if isinstance(default, ast.Call) and ast.unparse(default.func) in ("field", "dataclasses.field"):
                    kw = {k.arg: k.value for k in default.keywords}
                    if isinstance(kw.get("init"), ast.Constant) and kw["init"].value is False:
                        continue  # build_group() skips fields with init=False
                    if "default" in kw:
                        text_default = printed(kw["default"], {})
                    elif "default_factory" in kw:
                        f = ast.unparse(kw["default_factory"])
                        text_default = {"list": "[]", "dict": "{}"}.get(f, text_default)
                    meta = kw.get("metadata")
                    if isinstance(meta, ast.Dict):
                        for k, v in zip(meta.keys, meta.values):
                            if isinstance(k, ast.Constant) and k.value == "argparse_meta" and isinstance(v, ast.Dict):
                                for mk, mv in zip(v.keys, v.values):
                                    if isinstance(mk, ast.Constant) and mk.value == "default":
                                        text_default = printed(mv, {})
                elif default is not None:
                    text_default = printed(default, {})
                out.append((st.target.id, text_default))
            return out
    return []


def factory_arguments(root, path):
    """{field: printed default} of the dataclasses arguments.py turns into
    arguments with ArgumentGroupFactory(Class, exclude=...)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    out = {}
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        names = {}
        for st in ast.walk(fn):
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                try:
                    names[st.targets[0].id] = ast.literal_eval(st.value)
                except ValueError:
                    pass
        for call in ast.walk(fn):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                    and call.func.id == "ArgumentGroupFactory" and call.args):
                continue
            kw = {k.arg: k.value for k in call.keywords}
            exclude = kw.get("exclude")
            exclude = names.get(exclude.id, []) if isinstance(exclude, ast.Name) else (
                ast.literal_eval(exclude) if exclude is not None else [])
            for field, text in dataclass_fields(root, call.args[0].id):
                if field not in exclude:
                    out.setdefault(field, text)
    return out


def job(path):
    """The job log's arguments and its other lines."""
    args, rest, inside = {}, [], False
    for line in open(path, encoding="utf-8"):
        if "-- arguments --" in line:
            inside = True
        elif "-- end of arguments --" in line:
            inside = False
        elif inside:
            name, _, value = line.strip().partition(" ")
            args[name] = value.lstrip(".").strip()
        else:
            rest.append(line)
    return args, rest


def main():
    megatron, job_log = sys.argv[1], sys.argv[2]
    mine, rest = job(job_log)
    _Env.environ = {"WORLD_SIZE": mine.get("world_size", "1")}
    path = os.path.join(megatron, "megatron", "training", "arguments.py")
    args = arguments(path)
    for k, v in factory_arguments(megatron, path).items():
        args.setdefault(k, v)
    for dest in MAPPED:
        if dest in args and args[dest] in DTYPES:
            args[dest] = DTYPES[args[dest]]
    for dest in MAPPED:
        if dest in mine and mine[dest] in DTYPES:
            mine[dest] = DTYPES[mine[dest]]
    args.update({"params_dtype": "torch.bfloat16", "rank": "0"})
    args.update(mine)
    lines = ["  {} {} {}".format(k, "." * (48 - len(k)), v) for k, v in args.items()]
    out = sys.stdout
    # The job log's lines before its block, the block, then its other lines.
    head = 0
    with open(job_log, encoding="utf-8") as f:
        for line in f:
            if "-- arguments --" in line:
                break
            head += 1
    out.writelines(rest[:head])
    out.write("------------------------ arguments ------------------------\n")
    for line in sorted(lines, key=lambda x: x.lower()):
        out.write(line + "\n")
    out.write("-------------------- end of arguments ---------------------\n")
    out.writelines(rest[head:])


if __name__ == "__main__":
    main()
