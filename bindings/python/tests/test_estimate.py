# SPDX-License-Identifier: MIT
"""Estimates through the binding: the paper's golden values, and agreement
with the C library as the CLI prints it."""

import json
import sys
import subprocess
import unittest

import support
from support import mem4d

GIB = 2.0 ** 30

# estimator-notes.md section 2: Llama-3.1-8B, s = 8192, FlashAttention,
# distributed optimizer, fp32 gradients, no recompute, no VPP, m unknown.
# (tp, cp, pp, mbs, world, dp, weights+optimizer GiB, activations GiB, params on the rank)
GOLDEN = [
    (2, 1, 1, 1, 4, 2, 44.87260437011719, 22.64453125, 4015132672),
    (1, 2, 1, 1, 4, 2, 67.30887222290039, 22.64453125, 8030261248),
    (2, 1, 2, 1, 128, 32, 11.919273376464844, 20.75, 2007564288),
    (2, 2, 1, 2, 128, 32, 23.137436628341675, 22.64453125, None),
]


class GoldenTest(unittest.TestCase):
    def setUp(self):
        self.model = mem4d.Model.preset("llama3.1-8b")
        self.device = mem4d.Device.preset("h100-80")

    def test_paper_golden_values(self):
        for tp, cp, pp, mbs, world, dp, w_gib, a_gib, params in GOLDEN:
            with self.subTest(tp=tp, cp=cp, pp=pp, mbs=mbs, world=world):
                layout = support.paper_layout(tp=tp, cp=cp, pp=pp, mbs=mbs, world=world, seq=8192)
                report = mem4d.estimate(self.model, layout, self.device)
                self.assertEqual(report.mode, "paper")
                self.assertEqual(len(report.stages), 1)
                self.assertEqual(report.dp, dp)
                self.assertEqual(report.world, world)
                stage = report.stages[0]
                self.assertAlmostEqual(stage.weights_and_optimizer / GIB, w_gib, delta=1e-9)
                self.assertAlmostEqual(stage.activations / GIB, a_gib, delta=1e-9)
                self.assertEqual(stage.total, stage.weights_and_optimizer + stage.activations)
                self.assertEqual(report.peak_bytes, stage.total)
                if params is not None:
                    self.assertEqual(stage.params, params)

    def test_model_parameter_count(self):
        self.assertEqual(self.model.num_params, 8030261248)

    def test_verdict_follows_threshold(self):
        # 44.87 + 22.64 = 67.5 GiB on 80 GiB is above 80% (64 GiB): tight.
        layout = support.paper_layout(tp=2, world=4, seq=8192)
        self.assertEqual(mem4d.estimate(self.model, layout, self.device).verdict, "tight")
        big = mem4d.Device.preset("h200-141")
        self.assertEqual(mem4d.estimate(self.model, layout, big).verdict, "fits")
        small = mem4d.Device.preset("a100-40")
        self.assertEqual(mem4d.estimate(self.model, layout, small).verdict, "oom")

    def test_report_buffer_reuse_gives_same_values(self):
        layout = support.paper_layout(tp=2, world=4, seq=8192)
        with mem4d.ReportBuffer() as buf:
            first = buf.estimate(self.model, layout, self.device)
            other = support.paper_layout(tp=1, cp=2, world=4, seq=8192)
            buf.estimate(self.model, other, self.device)
            again = buf.estimate(self.model, layout, self.device)
        self.assertEqual(first, again)


FULL_CASES = [
    ("llama3.1-70b", "h100-80", dict(tp=8, pp=4, dp=2, mbs=1, seq=8192)),
    ("llama3.1-8b", "h100-80", dict(tp=2, cp=2, pp=2, dp=2, mbs=2, seq=16384, gbs=64)),
    ("llama3.1-8b", "a100-80", dict(tp=1, pp=1, dp=8, mbs=1, seq=4096, recompute="full")),
    ("qwen2.5-7b", "h100-80", dict(tp=4, pp=2, dp=1, mbs=1, seq=8192, vpp=2, gbs=16)),
]

FLAGS = {"tp": "--tp", "cp": "--cp", "pp": "--pp", "dp": "--dp", "mbs": "--mbs",
         "seq": "--seq", "gbs": "--gbs", "vpp": "--vpp", "recompute": "--recompute", "world": "--world"}


class AgreesWithCliTest(unittest.TestCase):
    """Each number the CLI (C, through the same library) prints, the binding gives too."""

    def setUp(self):
        self.cli = support.cli()
        if not self.cli:
            self.skipTest("the mem4d CLI of the loaded build tree was not found (set MEM4D_CLI)")

    def test_full_mode_matches_cli_json(self):
        for preset, gpu, keys in FULL_CASES:
            with self.subTest(model=preset, **keys):
                argv = [self.cli, "estimate", "--model", preset, "--gpu", gpu, "--json"]
                for key, value in keys.items():
                    argv += [FLAGS[key], str(value)]
                out = json.loads(subprocess.run(argv, check=True, capture_output=True,
                                                text=True).stdout)
                report = mem4d.estimate(mem4d.Model.preset(preset), mem4d.Layout(**keys),
                                        mem4d.Device.preset(gpu))
                self.assertEqual(report.mode, out["mode"])
                self.assertEqual(report.verdict, out["verdict"])
                self.assertEqual(report.peak_bytes, out["peak_bytes"])
                self.assertEqual(report.peak_stage, out["peak_stage"])
                self.assertEqual(report.device_bytes, out["device_bytes"])
                self.assertEqual(len(report.stages), len(out["stages"]))
                for stage, c_stage in zip(report.stages, out["stages"]):
                    for field in ("weights", "gradients", "optimizer", "activations",
                                  "overhead", "total", "peak_allocated", "peak_reserved"):
                        self.assertEqual(getattr(stage, field), c_stage[field + "_bytes"], field)
                    for field in ("params", "layers", "in_flight"):
                        self.assertEqual(getattr(stage, field), c_stage[field], field)

    def test_report_says_which_attention_ran(self):
        # The layout's flash_attn reads 1 when left unset, whatever the device's
        # stack runs; the report says what ran, as estimate --json does.
        cases = [("h100-80", {}, {"seq": 8192}, ("cudnn", 0)),
                 ("a100-80", {"attention_kernel": "fa3"}, {"seq": 8192}, ("fa2", 0)),
                 ("h100-80", {"stack": "megatron-deepspeed"}, {"seq": 2048}, ("unfused", 0)),
                 ("h100-80", {"stack": "megatron-deepspeed"}, {"seq": 4096}, ("unfused", 1)),
                 ("a100-80", {"stack": "megatron-deepspeed-bigscience-2022-02"}, {"seq": 2048, "tp": 4},
                  ("unfused", 1))]
        for gpu, dev, keys, want in cases:
            with self.subTest(gpu=gpu, **dev, **keys):
                layout = mem4d.Layout(**{"tp": 2, "world": 8, "gbs": 64, **keys})
                self.assertEqual(layout["flash_attn"], 1)
                device = mem4d.Device.preset(gpu)
                device.set(**dev)
                report = mem4d.estimate(mem4d.Model.preset("llama3.1-8b"), layout, device)
                self.assertEqual((report.attention_kernel_name, report.softmax_fallback), want)
                argv = [self.cli, "estimate", "--model", "llama3.1-8b", "--gpu", gpu, "--json"]
                for key, value in {"tp": 2, "world": 8, "gbs": 64, **keys}.items():
                    argv += [FLAGS[key], str(value)]
                for key, value in dev.items():
                    argv += ["--device-set", f"{key}={value}"]
                out = json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)
                self.assertEqual((out["attention_kernel"], out["softmax_fallback"]), (want[0], bool(want[1])))

    def test_moe_step_breakdown_matches_cli_json(self):
        """An expert-parallel job: the step's expert GEMMs, router and permutation and exposed
        dispatch/combine (issue 22) as the CLI's JSON gives them."""
        argv = [self.cli, "estimate", "--model", "mixtral-8x7b", "--gpu", "h100-80", "--dp", "8",
                "--seq", "4096", "--gbs", "64", "--set", "ep=8", "--set", "moe_dispatcher=deepep", "--json"]
        speed = json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)["speed"]
        report = mem4d.estimate(mem4d.Model.preset("mixtral-8x7b"),
                                mem4d.Layout(dp=8, seq=4096, gbs=64, ep=8, moe_dispatcher="deepep"),
                                mem4d.Device.preset("h100-80"))
        for key in ("step_time_s", "expert_compute_s", "router_permute_s", "ep_comm_s"):
            self.assertGreater(speed[key], 0.0, key)
            self.assertAlmostEqual(getattr(report.metrics, key) / speed[key], 1.0, delta=1e-6, msg=key)

    def test_example_prints_the_cli_table(self):
        argv = [self.cli, "estimate", "--model", "llama3.1-70b", "--gpu", "h100-80",
                "--tp", "8", "--pp", "4", "--dp", "2", "--mbs", "1", "--seq", "8192"]
        expected = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
        example = support.PYROOT + "/examples/estimate.py"
        got = subprocess.run([sys.executable, example], check=True,
                             capture_output=True, text=True).stdout
        self.assertEqual(got, expected)


class FullModeTest(unittest.TestCase):
    def test_stage_identities(self):
        report = mem4d.estimate(mem4d.Model.preset("llama3.1-70b"),
                                mem4d.Layout(tp=8, pp=4, dp=2, mbs=1, seq=8192, gbs=64),
                                mem4d.Device.preset("h100-80"))
        self.assertEqual(report.mode, "full")
        self.assertEqual(len(report.stages), 4)
        self.assertEqual(sum(s.layers for s in report.stages), 80)
        for s in report.stages:
            self.assertEqual(s.total, s.weights + s.gradients + s.optimizer + s.activations
                             + s.overhead)
            self.assertEqual(s.overhead, s.buffers + s.fragmentation + s.fixed)
            self.assertEqual(s.peak_allocated, s.total - s.fragmentation - s.fixed)
            self.assertEqual(s.peak_reserved, s.peak_allocated + s.fragmentation)
        self.assertEqual(report.peak_bytes, max(s.total for s in report.stages))
        self.assertEqual(report.microbatches, 64 // 2)
        self.assertIsNotNone(report.metrics)
        self.assertGreater(report.metrics.step_time_s, 0.0)

    def test_no_metrics_without_global_batch(self):
        report = mem4d.estimate(mem4d.Model.preset("llama3.1-8b"),
                                mem4d.Layout(tp=2, dp=4, seq=8192),
                                mem4d.Device.preset("h100-80"))
        self.assertIsNone(report.metrics)
        self.assertEqual(report.microbatches, 0)


if __name__ == "__main__":
    unittest.main()
