# SPDX-License-Identifier: MIT
"""Model, Layout and Device: owned handles with string-keyed parameters."""

import ctypes

from . import _capi
from ._capi import from_c, lib, to_c
from ._enums import ParamKind
from ._errors import Mem4dError, Status, check


class _Handle:
    """An owned C handle, freed by close(), a with-block or the collector."""

    _free = None  # the C destructor, set by subclasses

    def __init__(self, ptr):
        self._ptr = ptr

    def close(self):
        ptr = getattr(self, "_ptr", None)
        if ptr:
            # A typed NULL stays behind, so later calls get MEM4D_E_INVALID_ARG.
            self._ptr = type(ptr)()
            type(self)._free(ptr)

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def _as_parameter_(self):
        # Lets a wrapper object be passed straight to a C function. A closed
        # object passes NULL, which every function refuses with
        # MEM4D_E_INVALID_ARG (destructors accept it).
        return self._ptr


def _new(fn, handle_type, *args):
    out = handle_type()
    check(fn(*args, ctypes.byref(out)))
    return out


class _Params(_Handle):
    """Shared parameter access; _kind is "model", "layout" or "device"."""

    _kind = None

    @classmethod
    def _fn(cls, verb):
        return getattr(lib, f"mem4d_{cls._kind}_{verb}")

    @classmethod
    def key(cls, name):
        """The enum value of a parameter name or alias."""
        if isinstance(name, int) and not isinstance(name, bool):
            return name
        out = ctypes.c_int()
        code = cls._fn("param_from_name")(to_c(name, f"{cls._kind} parameter name"), ctypes.byref(out))
        check(code, f"unknown {cls._kind} parameter '{name}'")
        return out.value

    @classmethod
    def keys(cls):
        """Canonical names of every parameter, in enum order."""
        count = cls._fn("param_count")()
        return [from_c(cls._fn("param_name")(i)) for i in range(count)]

    @classmethod
    def bounds(cls, name):
        """(min, max) accepted for a parameter."""
        lo, hi = ctypes.c_uint64(), ctypes.c_uint64()
        check(cls._fn("param_bounds")(cls.key(name), ctypes.byref(lo), ctypes.byref(hi)))
        return lo.value, hi.value

    @classmethod
    def kind(cls, name):
        """What a parameter's number means: a ParamKind (INTEGER, BOOLEAN, CHOICE, BYTES, ...)."""
        out = ctypes.c_int()
        check(cls._fn("param_kind")(cls.key(name), ctypes.byref(out)))
        try:
            return ParamKind(out.value)
        except ValueError:  # a kind newer than this binding: a plain number
            return ParamKind.INTEGER

    @classmethod
    def default(cls, name):
        """The value a new object holds for a parameter."""
        out = ctypes.c_uint64()
        check(cls._fn("param_default")(cls.key(name), ctypes.byref(out)))
        return out.value

    @classmethod
    def value_names(cls, name):
        """Names of the values 0, 1, ... of an enumerated (CHOICE) parameter; [] for others."""
        key = cls.key(name)
        if cls.kind(key) != ParamKind.CHOICE:
            return []
        _, hi = cls.bounds(key)
        return [from_c(cls._fn("value_name")(key, v)) for v in range(hi + 1)]

    def set(self, **values):
        """Set parameters by name: ints, bools, or text ("full", "rmsnorm")."""
        for name, value in values.items():
            self[name] = value
        return self

    def __setitem__(self, name, value):
        if isinstance(value, str):
            code = self._fn("set_str")(self, to_c(name, f"{self._kind} parameter name"),
                                       to_c(value, f"{self._kind} parameter '{name}'"))
            check(code, f"{self._kind} parameter '{name}' = '{value}' is not accepted")
            return
        key = self.key(name)
        if isinstance(value, bool):
            # True is an int to Python, but tp=True is a mistake, not tp=1.
            kind = self.kind(key)
            if kind != ParamKind.BOOLEAN:
                raise TypeError(f"{self._kind} parameter '{name}' is {kind.name.lower()}, "
                                f"not a boolean: {value!r} is refused")
            value = int(value)
        if not isinstance(value, int):
            raise TypeError(f"{self._kind} parameter '{name}' takes an int or a str, "
                            f"not {type(value).__name__} {value!r}")
        if value < 0 or value >= 1 << 64:
            raise Mem4dError(Status.E_RANGE, f"{self._kind} parameter '{name}' = {value!r} "
                                              "is not an unsigned 64-bit integer")
        code = self._fn("set")(self, key, value)
        if code == Status.E_RANGE:
            lo, hi = self.bounds(key)
            check(code, f"{self._kind} parameter '{name}' = {value} is outside [{lo}, {hi}]")
        check(code)

    def __getitem__(self, name):
        out = ctypes.c_uint64()
        check(self._fn("get")(self, self.key(name), ctypes.byref(out)))
        return out.value

    get = __getitem__

    def as_dict(self):
        """Every parameter by canonical name."""
        return {name: self[key] for key, name in enumerate(self.keys())}

    def copy(self):
        return type(self)(_ptr=_new(self._fn("clone"), self._handle_type, self))

    def __repr__(self):
        shown = ", ".join(f"{k}={v}" for k, v in self.as_dict().items() if v)
        return f"{type(self).__name__}({shown})"


def _validate_text(fn, *args):
    why = ctypes.create_string_buffer(512)
    code = fn(*args, why, ctypes.sizeof(why))
    check(code, from_c(why.value))


class Model(_Params):
    """A transformer architecture: Model.preset("llama3.1-8b"), Model(hidden_size=...)."""

    _kind = "model"
    _handle_type = _capi.MODEL
    _free = lib.mem4d_model_free

    def __init__(self, _ptr=None, **values):
        super().__init__(_ptr or _new(lib.mem4d_model_new, _capi.MODEL))
        self.set(**values)

    @classmethod
    def preset(cls, name):
        code_ptr = _capi.MODEL()
        code = lib.mem4d_model_new_preset(to_c(name, "model preset"), ctypes.byref(code_ptr))
        check(code, f"unknown model preset '{name}'")
        return cls(_ptr=code_ptr)

    @staticmethod
    def presets():
        return [from_c(lib.mem4d_model_preset_name(i))
                for i in range(lib.mem4d_model_preset_count())]

    @classmethod
    def from_hf_config(cls, path, importer=None):
        """A model read from a Hugging Face config.json file."""
        from ._import import Importer
        imp = importer or Importer()
        model = cls()
        imp._check(lib.mem4d_import_hf_config(imp, to_c(path, "config path"), model))
        return model

    @classmethod
    def from_hf_json(cls, text, importer=None):
        """A model read from the text of a Hugging Face config.json."""
        from ._import import Importer
        imp = importer or Importer()
        data = text.encode() if isinstance(text, str) else bytes(text)
        model = cls()
        imp._check(lib.mem4d_import_hf_config_buffer(imp, data, len(data), model))
        return model

    @property
    def name(self):
        return from_c(lib.mem4d_model_name(self))

    @name.setter
    def name(self, value):
        check(lib.mem4d_model_set_name(self, to_c(value, "model name")))

    @property
    def num_params(self):
        out = ctypes.c_uint64()
        check(lib.mem4d_model_num_params(self, ctypes.byref(out)))
        return out.value

    def validate(self):
        """Raise Mem4dError saying what is wrong, if anything."""
        _validate_text(lib.mem4d_model_validate, self)


class Layout(_Params):
    """A training layout: Layout(tp=8, pp=4, dp=2, mbs=1, seq=8192)."""

    _kind = "layout"
    _handle_type = _capi.LAYOUT
    _free = lib.mem4d_layout_free

    def __init__(self, _ptr=None, **values):
        super().__init__(_ptr or _new(lib.mem4d_layout_new, _capi.LAYOUT))
        self.set(**values)

    def value_name(self, name):
        """The name of an enumerated parameter's value ("full"), or None."""
        key = self.key(name)
        text = lib.mem4d_layout_value_name(key, self[key])
        return from_c(text) if text else None

    @property
    def stage_layers(self):
        """Transformer layers of each virtual pipeline stage (virtual stage k on
        rank k % pp), as Megatron-Core's pipeline layout places them; [] for
        the even split."""
        n = lib.mem4d_layout_get_stage_layers(self, None, 0)
        buf = (ctypes.c_uint32 * n)()
        lib.mem4d_layout_get_stage_layers(self, buf, n)
        return list(buf)

    @stage_layers.setter
    def stage_layers(self, layers):
        layers = list(layers)
        if any(not isinstance(v, int) or isinstance(v, bool) or v < 0 or v >= 1 << 32 for v in layers):
            raise TypeError(f"stage_layers takes non-negative ints, not {layers!r}")
        buf = (ctypes.c_uint32 * len(layers))(*layers)
        check(lib.mem4d_layout_set_stage_layers(self, buf, len(layers)),
              f"stage_layers {layers!r} is not accepted (at most "
              f"{lib.mem4d_layout_stage_layers_max()} virtual stages, 4096 layers in all)")

    def __setitem__(self, name, value):
        if name == "stage_layers" and not isinstance(value, str):
            self.stage_layers = value
            return
        super().__setitem__(name, value)

    def __repr__(self):
        text = super().__repr__()
        table = self.stage_layers
        return text[:-1] + f", stage_layers={table})" if table else text

    def validate(self, model):
        """Raise Mem4dError naming the first rule this layout breaks for model."""
        _validate_text(lib.mem4d_validate, model, self)

    def megatron_args(self, model):
        """The Megatron-LM flags that set this layout, as one line (str)."""
        need = ctypes.c_size_t(0)
        lib.mem4d_layout_megatron_args(model, self, None, 0, ctypes.byref(need))
        buf = ctypes.create_string_buffer(need.value + 1)
        check(lib.mem4d_layout_megatron_args(model, self, buf, ctypes.sizeof(buf), None), "")
        return from_c(buf.value)


class Device(_Params):
    """One GPU: Device.preset("h100-80"), Device(memory_bytes=...)."""

    _kind = "device"
    _handle_type = _capi.DEVICE
    _free = lib.mem4d_device_free

    def __init__(self, _ptr=None, **values):
        super().__init__(_ptr or _new(lib.mem4d_device_new, _capi.DEVICE))
        self.set(**values)

    @classmethod
    def preset(cls, name):
        ptr = _capi.DEVICE()
        code = lib.mem4d_device_new_preset(to_c(name, "device preset"), ctypes.byref(ptr))
        check(code, f"unknown device preset '{name}'")
        return cls(_ptr=ptr)

    @staticmethod
    def presets():
        return [from_c(lib.mem4d_device_preset_name(i))
                for i in range(lib.mem4d_device_preset_count())]

    @property
    def name(self):
        return from_c(lib.mem4d_device_name(self))

    @classmethod
    def from_file(cls, path):
        """A device from a device file (KEY = VALUE lines; see doc/perf.md)."""
        device = cls()
        device.load(path)
        return device

    def load(self, path):
        """Apply a device file to this device; Mem4dError names the line at fault."""
        why = ctypes.create_string_buffer(256)
        code = lib.mem4d_device_load(self, to_c(path, "device file"), why, len(why))
        check(code, from_c(why.value))
        return self

    def parse(self, text):
        """Apply a device file's text to this device."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        why = ctypes.create_string_buffer(256)
        code = lib.mem4d_device_parse(self, data, len(data), why, len(why))
        check(code, from_c(why.value))
        return self

    def to_text(self):
        """This device as a device file's text."""
        length = ctypes.c_size_t()
        lib.mem4d_device_format(self, None, 0, ctypes.byref(length))
        buf = ctypes.create_string_buffer(length.value + 1)
        check(lib.mem4d_device_format(self, buf, len(buf), None))
        return from_c(buf.value)
