# SPDX-License-Identifier: MIT
"""The generated copies of include/mem4d/mem4d.h (_signatures.py, _enums.py).

`scripts/gen-bindings.py --check` (meson test bindings-fresh, CI stage
30-bindings) proves they match the header; these tests check what it cannot:
that the loaded library agrees with them (every function present, every enum
name and count as the library describes itself), that the check does fail on
a stale file, and the Python-side rules for text passed to and from C.
"""

import importlib.util
import io
import json
import os
import re
import shutil
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

import support
from support import _capi

import mem4d
from mem4d import _enums

GEN_SCRIPT = os.path.join(support.REPO, "scripts", "gen-bindings.py")


def _generator():
    spec = importlib.util.spec_from_file_location("gen_bindings", GEN_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class LibraryAgreesTest(unittest.TestCase):
    """The bindings were generated from the header of the library under test."""

    lib = _capi.lib

    def test_every_function_is_in_the_library(self):
        missing = [name for name, _, _ in _capi.SIGNATURES if not hasattr(self.lib, name)]
        self.assertEqual(missing, [])

    def test_version(self):
        self.assertEqual(self.lib.mem4d_version_number(), _enums.VERSION_NUMBER)
        self.assertEqual(_capi.from_c(self.lib.mem4d_version()), _enums.VERSION)

    def test_status_names(self):
        self.assertEqual(self.lib.mem4d_status_count(), len(mem4d.Status))
        for status in mem4d.Status:
            self.assertEqual(_capi.from_c(self.lib.mem4d_status_name(status)), "MEM4D_" + status.name)

    def _names(self, enum, count, name):
        self.assertEqual(count(), len(enum), enum.__name__)
        self.assertEqual([_capi.from_c(name(v)) for v in enum], [v.name.lower() for v in enum])

    def test_named_enums(self):
        lib = self.lib
        self._names(mem4d.Info, lib.mem4d_info_count, lib.mem4d_info_name)
        self._names(mem4d.Metric, lib.mem4d_metric_count, lib.mem4d_metric_name)
        self._names(mem4d.SearchOption, lib.mem4d_search_option_count, lib.mem4d_search_option_name)
        self._names(mem4d.SearchStat, lib.mem4d_search_stat_count, lib.mem4d_search_stat_name)
        self.assertEqual(lib.mem4d_term_count(), len(mem4d.Term))
        self.assertEqual([_capi.from_c(lib.mem4d_param_kind_name(k)) for k in mem4d.ParamKind],
                         [k.name.lower() for k in mem4d.ParamKind])

    def test_parameter_enums(self):
        for cls, enum in ((mem4d.Model, _enums.ModelParam), (mem4d.Layout, _enums.LayoutParam),
                          (mem4d.Device, _enums.DeviceParam)):
            self.assertEqual(len(cls.keys()), len(enum), cls.__name__)

    def test_stage_and_report_follow_the_enums(self):
        self.assertEqual([f.name for f in mem4d.Stage.__dataclass_fields__.values()],
                         [t.name.lower() for t in mem4d.Term])
        self.assertEqual(list(mem4d.Metrics.__dataclass_fields__), [m.name.lower() for m in mem4d.Metric])
        for info in mem4d.Info:
            self.assertIn(info.name.lower(), mem4d.Report.__dataclass_fields__)


class CheckTest(unittest.TestCase):
    """--check passes on this checkout and fails, naming the file, on a stale one."""

    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.root)
        gen = _generator()
        paths = list(gen.generate(support.REPO)) + list(gen.SOURCES)
        for path in paths:
            os.makedirs(os.path.join(self.root, os.path.dirname(path)), exist_ok=True)
            shutil.copy(os.path.join(support.REPO, path), os.path.join(self.root, path))
        self.gen = gen

    def check(self):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = self.gen.main(["--check", "--root", self.root])
        return code, err.getvalue()

    def edit(self, path, old, new):
        """Replace the first match of the regular expression old."""
        full = os.path.join(self.root, path)
        with open(full, encoding="utf-8") as f:
            text = f.read()
        text, count = re.subn(old, new, text, count=1, flags=re.S)
        self.assertEqual(count, 1, f"{old!r} not in {path}")
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)

    def append_value(self, enum, name):
        """Append a value to the header's enum (after whatever is last today)."""
        def add(m):
            last = list(re.finditer(r"^\s*(MEM4D_\w+) = (\d+)", m.group(2), re.M))[-1]
            body = (m.group(2)[:last.end()] + f", /**< x. */\n    {name} = {int(last.group(2)) + 1}"
                    + m.group(2)[last.end():])
            return m.group(1) + body + m.group(3)
        self.edit(self.gen.HEADER, rf"(typedef enum {enum} \{{)(.*?)(\}} {enum};)",
                  lambda m: add(m))

    def test_model_as_json(self):
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(self.gen.main(["--model", "--root", self.root]), 0)
        model = json.loads(out.getvalue())
        self.assertEqual([f["name"] for f in model["functions"]], [name for name, _, _ in _capi.SIGNATURES])
        self.assertEqual(model["version"], [_enums.VERSION_MAJOR, _enums.VERSION_MINOR, _enums.VERSION_MICRO])
        status = next(e for e in model["enums"] if e["name"] == "mem4d_status")
        self.assertEqual(len(status["values"]), len(mem4d.Status))

    def test_fresh_copy_passes(self):
        self.assertEqual(self.check(), (0, ""))

    def test_edited_generated_file_is_named(self):
        self.edit("bindings/python/mem4d/_enums.py", "E_RANGE = ", "E_RANGED = ")
        code, err = self.check()
        self.assertEqual(code, 1)
        self.assertIn("bindings/python/mem4d/_enums.py is stale", err)
        self.assertNotIn("_signatures.py", err)

    def test_header_change_makes_every_copy_stale(self):
        self.append_value("mem4d_status", "MEM4D_E_NEW_THING")
        code, err = self.check()
        self.assertEqual(code, 1)
        for path in ("bindings/python/mem4d/_enums.py", "bindings/rust/mem4d-sys/src/generated.rs",
                     "bindings/rust/mem4d/src/generated.rs"):
            self.assertIn(path + " is stale", err)

    def test_version_bump_reaches_the_manifests(self):
        self.edit(self.gen.HEADER, r"#define MEM4D_VERSION_MICRO (\d+)",
                  lambda m: f"#define MEM4D_VERSION_MICRO {int(m.group(1)) + 1}")
        code, err = self.check()
        self.assertEqual(code, 1)
        for path in ("bindings/python/pyproject.toml", "bindings/rust/Cargo.toml", "bindings/rust/Cargo.lock"):
            self.assertIn(path + " is stale", err)

    def test_key_table_change_makes_the_reference_stale(self):
        self.edit("lib/params.c", r'NUM_ROW\("tp", "tensor_model_parallel_size", NULL, 1, 4096, 1\)',
                  'NUM_ROW("tp", "tensor_model_parallel_size", NULL, 1, 2048, 1)')
        code, err = self.check()
        self.assertEqual(code, 1)
        self.assertIn("doc/keys.md is stale", err)

    def test_header_ranges_come_from_the_table(self):
        # the header once said recompute takes 0-2 while the table accepts 3 "op"
        self.edit(self.gen.HEADER, r', 3 "op"\. Default none\.', ". Default none.")
        code, err = self.check()
        self.assertEqual(code, 2)
        self.assertIn("MEM4D_LAYOUT_RECOMPUTE: the comment names the values", err)

    def test_keyword_names_are_escaped_in_rust(self):
        self.append_value("mem4d_term", "MEM4D_TERM_STATIC")
        files = self.gen.generate(self.root)
        safe = files["bindings/rust/mem4d/src/generated.rs"]
        self.assertIn("    pub r#static: u64,", safe)
        self.assertIn("r#static: term(Term::Static)?,", safe)

    def test_python_keyword_field_is_refused(self):
        self.append_value("mem4d_term", "MEM4D_TERM_IN")
        code, err = self.check()
        self.assertEqual(code, 2)
        self.assertIn("MEM4D_TERM_IN: 'in' is a Python keyword", err)

    def test_unreadable_header_is_an_error_not_a_guess(self):
        self.edit(self.gen.HEADER, r"MEM4D_KIND_WIDTH = 4,", "MEM4D_KIND_WIDTH,")
        code, err = self.check()
        self.assertEqual(code, 2)
        self.assertIn("explicit '= N'", err)


class TextTest(unittest.TestCase):
    """Strings cross into C only whole, and come back without raising."""

    def test_nul_is_refused(self):
        with self.assertRaises(ValueError) as ctx:
            _capi.to_c("config.json\0x", "config path")
        self.assertIn("'config.json'", str(ctx.exception))
        with self.assertRaises(TypeError):
            _capi.to_c(3, "name")
        self.assertEqual(_capi.to_c("llama", "name"), b"llama")

    def test_invalid_utf8_is_replaced(self):
        self.assertEqual(_capi.from_c(b"qwen\xe4\xb8"), "qwen\ufffd")
        self.assertEqual(_capi.from_c(None), "")


if __name__ == "__main__":
    unittest.main()
