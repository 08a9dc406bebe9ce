# SPDX-License-Identifier: MIT
"""Model, Layout and Device objects: keys, values, copies, lifetimes, solvers."""

import unittest

import support
from support import mem4d


class ParamsTest(unittest.TestCase):
    def test_megatron_args_of_a_layout(self):
        model = mem4d.Model.preset("llama3.1-70b")
        layout = mem4d.Layout(tp=8, pp=4, dp=2, seq=8192)
        self.assertEqual(layout.megatron_args(model),
                         "--tensor-model-parallel-size 8 --context-parallel-size 1 "
                         "--pipeline-model-parallel-size 4 --micro-batch-size 1 --seq-length 8192 "
                         "--sequence-parallel --use-distributed-optimizer")

    def test_stage_layer_table(self):
        model = mem4d.Model.preset("llama3.1-70b")
        layout = mem4d.Layout(tp=8, pp=4, vpp=2, dp=1, seq=8192, stage_layers=[8, 10, 10, 10, 10, 10, 10, 12])
        self.assertEqual(layout.stage_layers, [8, 10, 10, 10, 10, 10, 10, 12])
        layout.validate(model)
        self.assertIn("--pipeline-model-parallel-layout 'Et*8|(t*10|)*6t*12L'", layout.megatron_args(model))
        self.assertIn("stage_layers=[8, 10", repr(layout))
        self.assertEqual(layout.copy().stage_layers, layout.stage_layers)
        layout["stage_layers"] = "20,20,20,20"
        with self.assertRaises(mem4d.Mem4dError):
            layout.validate(model)  # 4 entries for pp 4 x vpp 2
        layout.stage_layers = []
        self.assertEqual(layout.stage_layers, [])
        with self.assertRaises(TypeError):
            layout.stage_layers = [1, -2]
        with self.assertRaises(mem4d.Mem4dError):
            layout.stage_layers = [4097]

    def test_keys_come_from_the_library(self):
        self.assertEqual(mem4d.Layout.keys()[:4], ["tp", "cp", "pp", "dp"])
        self.assertEqual(mem4d.Model.keys()[0], "hidden_size")
        self.assertEqual(mem4d.Device.keys()[0], "memory_bytes")

    def test_aliases_and_text_values(self):
        layout = mem4d.Layout(tensor_model_parallel_size=8, recompute="full", sp=False)
        self.assertEqual(layout["tp"], 8)
        self.assertEqual(layout["recompute"], 2)
        self.assertEqual(layout.value_name("recompute"), "full")
        self.assertEqual(layout["sp"], 0)
        model = mem4d.Model(hidden_size=4096, num_key_value_heads=8)
        self.assertEqual(model["num_query_groups"], 8)

    def test_presets_listed_and_named(self):
        self.assertIn("llama3.1-70b", mem4d.Model.presets())
        self.assertIn("h100-80", mem4d.Device.presets())
        self.assertEqual(mem4d.Model.preset("LLAMA3.1-70B").name, "llama3.1-70b")
        self.assertEqual(mem4d.Device.preset("h100-80")["memory_bytes"], 80 << 30)

    def test_copy_is_independent(self):
        layout = mem4d.Layout(tp=4)
        other = layout.copy()
        other["tp"] = 2
        self.assertEqual((layout["tp"], other["tp"]), (4, 2))
        model = mem4d.Model.preset("llama3.1-8b")
        model.name = "mine"
        self.assertEqual(model.copy().name, "mine")

    def test_with_block_frees(self):
        with mem4d.Model.preset("llama3.1-8b") as model:
            self.assertEqual(model.num_params, 8030261248)
        self.assertFalse(model._ptr)
        self.assertEqual(model.name, "")  # the library's answer for NULL

    def test_validate_layout(self):
        model = mem4d.Model.preset("llama3.1-8b")
        mem4d.Layout(tp=8, world=8, seq=8192).validate(model)
        with self.assertRaises(mem4d.Mem4dError) as ctx:
            mem4d.Layout(tp=8, world=12, seq=8192).validate(model)
        self.assertIs(ctx.exception.status, mem4d.Status.E_WORLD)

    def test_library_version(self):
        # The library under test is the one the bindings were generated for.
        self.assertEqual(mem4d.library_version(), mem4d.__version__)
        self.assertEqual(mem4d.__version__, "0.2.0")


class SolveTest(unittest.TestCase):
    def setUp(self):
        self.model = mem4d.Model.preset("llama3.1-8b")
        self.device = mem4d.Device.preset("h100-80")

    def test_max_micro_batch_is_the_edge_of_fitting(self):
        layout = mem4d.Layout(tp=2, pp=1, dp=4, seq=8192)
        try:
            best = mem4d.max_micro_batch(self.model, layout, self.device)
        except mem4d.Mem4dError as err:
            if err.status == mem4d.Status.E_UNSUPPORTED:
                self.skipTest(f"solver not available yet: {err}")
            raise
        self.assertGreater(best, 0)
        layout["mbs"] = best
        self.assertEqual(mem4d.estimate(self.model, layout, self.device).verdict, "fits")
        layout["mbs"] = best + 1
        self.assertNotEqual(mem4d.estimate(self.model, layout, self.device).verdict, "fits")


if __name__ == "__main__":
    unittest.main()
