# SPDX-License-Identifier: MIT
"""Regressions: bad input a new user tried, each refused with a clear
exception instead of a silently wrong result (issue 10, part 5)."""

import json
import os
import tempfile
import unittest

import support
from support import mem4d
from mem4d import Mem4dError, Status

from test_import import LLAMA31_8B_ARGS, LLAMA31_8B_HF

HF_DIR = os.path.join(support.REPO, "tests", "data", "hf")


def json_available():
    try:
        mem4d.Model.from_hf_json(json.dumps(LLAMA31_8B_HF))
    except Mem4dError as err:
        return err.status != Status.E_NO_JSON
    return True


class NulTest(unittest.TestCase):
    """A NUL in a str would make C read only the text before it."""

    @unittest.skipUnless(json_available(), "built without JSON support")
    def test_hf_config_path_with_nul(self):
        path = os.path.join(HF_DIR, "llama3.1-8b.json")
        self.assertEqual(mem4d.Model.from_hf_config(path)["num_layers"], 32)
        with self.assertRaises(ValueError) as ctx:
            mem4d.Model.from_hf_config(path + "\0x")
        self.assertIn("NUL", str(ctx.exception))

    def test_every_str_passed_to_c(self):
        calls = [
            lambda: mem4d.Model.preset("llama3.1-8b\0junk"),
            lambda: mem4d.Device.preset("h100-80\0"),
            lambda: mem4d.Layout(tp="8\0 0"),
            lambda: mem4d.Layout().set(**{"tp\0x": 8}),
            lambda: mem4d.Layout.key("seq\0"),
            lambda: setattr(mem4d.Model(), "name", "a\0b"),
            lambda: mem4d.import_megatron(["--num-layers", "32\0"]),
            lambda: mem4d.import_megatron(["--num-layers", "32"], env={"WORLD_SIZE": "8\0"}),
        ]
        for i, call in enumerate(calls):
            with self.subTest(call=i), self.assertRaises(ValueError):
                call()


class WorldSizeTest(unittest.TestCase):
    def test_out_of_64_bits_is_refused(self):
        for bad in (1 << 64, 2 ** 70, -1):
            with self.subTest(world_size=bad), self.assertRaises(Mem4dError) as ctx:
                mem4d.import_megatron(LLAMA31_8B_ARGS, world_size=bad)
            self.assertIs(ctx.exception.status, Status.E_RANGE)
            self.assertIn(str(bad), ctx.exception.message)

    def test_not_an_int_is_refused(self):
        for bad in (8.0, "8", True, None):
            with self.subTest(world_size=bad), self.assertRaises(TypeError):
                mem4d.import_megatron(LLAMA31_8B_ARGS, world_size=bad)

    def test_explicit_value_reaches_the_library(self):
        got = mem4d.import_megatron(LLAMA31_8B_ARGS, world_size=16)
        self.assertEqual(got.layout["world"], 16)
        self.assertEqual(got.world_source, mem4d.WorldSource.EXPLICIT)


class ArgvStringTest(unittest.TestCase):
    """One string is a command line, split as a shell would, not into characters."""

    def test_string_equals_list(self):
        text = " ".join(LLAMA31_8B_ARGS)
        from_text = mem4d.import_megatron(text, world_size=8)
        from_list = mem4d.import_megatron(LLAMA31_8B_ARGS, world_size=8)
        self.assertEqual(from_text.model.as_dict(), from_list.model.as_dict())
        self.assertEqual(from_text.layout.as_dict(), from_list.layout.as_dict())
        self.assertEqual(from_text.model["num_layers"], 32)

    def test_shell_quoting(self):
        got = mem4d.import_megatron("--num-layers '32' --hidden-size \"4096\"")
        self.assertEqual(got.model["num_layers"], 32)
        self.assertEqual(got.model["hidden_size"], 4096)

    def test_short_string(self):
        self.assertEqual(mem4d.import_megatron("--num-layers 32").model["num_layers"], 32)


class BoolTest(unittest.TestCase):
    """A bool is refused where an int is meant; boolean keys take bools, 0 and 1."""

    def test_bool_for_an_integer_key(self):
        for cls, key in ((mem4d.Layout, "tp"), (mem4d.Layout, "seq"), (mem4d.Model, "num_layers"),
                         (mem4d.Device, "gpus_per_node"), (mem4d.Layout, "recompute"),
                         (mem4d.Layout, "main_grad_bytes")):
            with self.subTest(key=key), self.assertRaises(TypeError) as ctx:
                cls(**{key: True})
            self.assertIn(key, str(ctx.exception))

    def test_boolean_keys(self):
        layout = mem4d.Layout(sp=False, dist_opt=True, fp8=1, flash_attn=0)
        self.assertEqual((layout["sp"], layout["dist_opt"], layout["fp8"], layout["flash_attn"]),
                         (0, 1, 1, 0))
        self.assertEqual(mem4d.Model(tie_word_embeddings=True)["tie_word_embeddings"], 1)
        with self.assertRaises(Mem4dError) as ctx:
            mem4d.Layout(sp=2)
        self.assertIs(ctx.exception.status, Status.E_RANGE)

    def test_other_types(self):
        for bad in (8.0, None, [8]):
            with self.subTest(value=bad), self.assertRaises(TypeError):
                mem4d.Layout(tp=bad)

    def test_search_constraint_and_option(self):
        model = mem4d.Model.preset("llama3.1-8b")
        device = mem4d.Device.preset("h100-80")
        with self.assertRaises(TypeError):
            mem4d.plan(model, device, gpus=8, seq=4096, max_results=2.5)
        with self.assertRaises(TypeError):
            mem4d.plan(model, device, gpus=8, seq=4096, tp=True)
        self.assertTrue(all(p.layout["dist_opt"] == 1
                            for p in mem4d.plan(model, device, gpus=8, seq=4096, dist_opt=True, max_results=3)))
        with self.assertRaises(Mem4dError) as ctx:
            mem4d.plan(model, device, gpus=8, seq=4096, max_results=1 << 64)
        self.assertIs(ctx.exception.status, Status.E_RANGE)

    def test_kinds_describe_the_keys(self):
        self.assertIs(mem4d.Layout.kind("tp"), mem4d.ParamKind.INTEGER)
        self.assertIs(mem4d.Layout.kind("sp"), mem4d.ParamKind.BOOLEAN)
        self.assertIs(mem4d.Layout.kind("recompute"), mem4d.ParamKind.CHOICE)
        self.assertIs(mem4d.Device.kind("memory_bytes"), mem4d.ParamKind.BYTES)
        # "op" is torchtitan's op-selective recomputation (framework torchtitan)
        self.assertEqual(mem4d.Layout.value_names("recompute"), ["none", "selective", "full", "op"])
        self.assertEqual(mem4d.Model.value_names("normalization"), ["rmsnorm", "layernorm"])
        self.assertEqual(mem4d.Layout.value_names("tp"), [])
        self.assertEqual(mem4d.Layout.default("vocab_divisor"), 128)
        self.assertEqual(mem4d.Device.default("fit_threshold_ppm"), 800000)


@unittest.skipUnless(json_available(), "built without JSON support")
class Utf8Test(unittest.TestCase):
    """The library quotes at most 64 bytes of model_type; a cut inside a
    character must not make the warnings unreadable."""

    def test_model_type_cut_inside_a_character(self):
        config = dict(LLAMA31_8B_HF, model_type="a" * 63 + "\u00e9" * 10)
        with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8", delete=False) as f:
            json.dump(config, f, ensure_ascii=False)
        self.addCleanup(os.unlink, f.name)
        imp = mem4d.Importer()
        # An unknown model_type is refused (issue 12); the message quotes it,
        # cut at a character boundary, and must decode.
        with self.assertRaises(mem4d.Mem4dError) as caught:
            mem4d.Model.from_hf_config(f.name, importer=imp)
        self.assertIn("a" * 63, str(caught.exception))
        self.assertIn("is not an architecture this version reads", str(caught.exception))
        self.assertEqual(imp.warnings, [])


if __name__ == "__main__":
    unittest.main()
