# SPDX-License-Identifier: MIT
"""Frameworks through the binding: a torchtitan job TOML (tomllib), a
DeepSpeed ds_config.json, both peaks and the warnings of a report."""

import sys
import unittest

import support
from support import mem4d
from mem4d import Status

# torchtitan's llama3_8b.toml as of 2024-12 (9dec370), the parts that set the layout
TOML_2024 = """
[training]
batch_size = 2
seq_len = 8192
data_parallel_replicate_degree = 1
data_parallel_shard_degree = -1
tensor_parallel_degree = 1
compile = true
mixed_precision_param = "bfloat16"
mixed_precision_reduce = "float32"

[experimental]
context_parallel_degree = 1
pipeline_parallel_degree = 1

[activation_checkpoint]
mode = "selective"
selective_ac_option = "op"

[float8]
enable_float8_linear = true
enable_fsdp_float8_all_gather = true
"""

# the 2025 layout: [parallelism], [compile], pipeline micro-batch size
TOML_2025 = """
[training]
local_batch_size = 8
global_batch_size = 64
seq_len = 8192

[parallelism]
data_parallel_shard_degree = 2
tensor_parallel_degree = 8
pipeline_parallel_degree = 4
pipeline_parallel_microbatch_size = 1
pipeline_parallel_schedule = "GPipe"
enable_async_tensor_parallel = true

[compile]
enable = true
components = ["model", "loss"]

[activation_checkpoint]
mode = "selective"
selective_ac_option = "2"
"""


# torchtitan's llama3_8b.toml of 2025 (float8 through [model] converters)
TOML_CONVERTERS = """
[model]
name = "llama3"
flavor = "8B"
converters = "float8"

[training]
batch_size = 1
seq_len = 8192
compile = false

[parallelism]
data_parallel_replicate_degree = 1
data_parallel_shard_degree = -1
tensor_parallel_degree = 1
pipeline_parallel_degree = 1
context_parallel_degree = 1

[activation_checkpoint]
mode = 'selective'
selective_ac_option = 'op'

[float8]
enable_fsdp_float8_all_gather = false
"""


class TorchtitanTomlTest(unittest.TestCase):
    """The library reads the TOML (no tomllib needed)."""
    def test_2024_layout(self):
        l = mem4d.torchtitan_layout(TOML_2024, world=8)
        self.assertEqual(l["framework"], 1)
        self.assertEqual((l["tp"], l["cp"], l["pp"], l["dp"]), (1, 1, 1, 8))
        self.assertEqual((l["mbs"], l["gbs"], l["seq"]), (2, 16, 8192))
        self.assertEqual(l["recompute"], 3)  # op
        self.assertEqual((l["float8"], l["fp8_all_gather"]), (1, 1))
        self.assertEqual(l["compile"], 1)  # 2024: blocks only

    def test_2025_layout(self):
        l = mem4d.torchtitan_layout(TOML_2025)
        self.assertEqual((l["tp"], l["pp"], l["dp"], l["mbs"], l["gbs"]), (8, 4, 2, 1, 64))
        self.assertEqual((l["recompute"], l["recompute_every"]), (2, 2))
        self.assertEqual(l["compile"], 2)  # blocks and loss
        self.assertEqual((l["async_tp"], l["pipeline_schedule"]), (1, 1))

    def test_converters_layout(self):
        l = mem4d.torchtitan_layout(TOML_CONVERTERS, world=64)
        self.assertEqual((l["dp"], l["mbs"], l["gbs"], l["recompute"]), (64, 1, 64, 3))
        self.assertEqual((l["float8"], l["fp8_all_gather"], l["compile"]), (1, 0, 0))

    def test_estimates(self):
        model = mem4d.Model.preset("llama3.1-8b")
        device = mem4d.Device.preset("h100-80")
        report = mem4d.estimate(model, mem4d.torchtitan_layout(TOML_2024, world=8), device)
        self.assertGreater(report.peak_reserved_bytes, report.peak_allocated_bytes)
        self.assertTrue(any(w.startswith("compile") for w in report.warnings))

    def test_bad_input(self):
        with self.assertRaises(mem4d.Mem4dError) as ctx:
            mem4d.torchtitan_layout(TOML_2024)  # dp shard -1 without world
        self.assertIn("world", str(ctx.exception))
        with self.assertRaises(mem4d.Mem4dError) as ctx:
            mem4d.torchtitan_layout("[training\nseq_len = 1")
        self.assertEqual(ctx.exception.status, Status.E_PARSE)
        with self.assertRaises(mem4d.Mem4dError):
            mem4d.torchtitan_layout("[activation_checkpoint]\nmode = 'sometimes'\n", world=8)

    def test_schedules_give_stages_per_rank(self):
        model = mem4d.Model.preset("llama3.1-8b")
        for name, vpp in (("1F1B", 1), ("GPipe", 1), ("Interleaved1F1B", 2), ("LoopedBFS", 2),
                          ("ZBVZeroBubble", 2), ("DualPipeV", 2), ("interleavedzerobubble", 2)):
            l = mem4d.torchtitan_layout(f'[parallelism]\npipeline_parallel_degree = 4\n'
                                        f'pipeline_parallel_schedule = "{name}"\n', world=32, model=model)
            self.assertEqual(l["vpp"], vpp, name)

    def test_every_bad_input_is_a_mem4d_error(self):
        """Each once raised ZeroDivisionError, ValueError, AttributeError,
        RecursionError, hung or read 3 GB, or was read as something else."""
        bad = ["[parallelism]\ntensor_parallel_degree = 0\n",      # ZeroDivisionError
               "[parallelism]\ndata_parallel_shard_degree = 0\n",
               "parallelism = 'tp8'\n",                              # AttributeError
               "[compile]\nenable = 'no'\n",                        # "no" read as true
               "[training]\nmixed_precision_param = 'float64'\n",   # ignored
               "[activation_checkpoint]\nselective_ac_option = 2\n",
               "x = " + "[" * 5000 + "]" * 5000 + "\n",              # RecursionError
               "[training]\nseq_len = 99999999999999999999\n",
               b"x = '\xff'\n"]
        for toml in bad:
            with self.assertRaises(mem4d.Mem4dError, msg=repr(toml)[:60]):
                mem4d.torchtitan_layout(toml, world=8)
        for world in (True, 1.0, "8", 2 ** 64, -1):
            with self.assertRaises(mem4d.Mem4dError, msg=repr(world)):
                mem4d.torchtitan_layout("", world=world)
        with self.assertRaises(mem4d.Mem4dError):
            mem4d.torchtitan_layout({"parallelism": {"tensor_parallel_degree": object()}}, world=8)
        self.assertEqual(mem4d.torchtitan_layout({"parallelism": {"tensor_parallel_degree": 2}}, world=8)["dp"], 4)

    def test_paths_that_are_not_files(self):
        import os
        import tempfile
        import time
        with tempfile.TemporaryDirectory() as d:
            fifo = os.path.join(d, "job.toml")
            os.mkfifo(fifo)
            start = time.monotonic()
            for path in (fifo, "/dev/zero", d, os.path.join(d, "missing.toml")):
                with self.assertRaises(mem4d.Mem4dError) as ctx:
                    mem4d.torchtitan_layout(path=path, world=8)
                self.assertEqual(ctx.exception.status, Status.E_IO, path)
            self.assertLess(time.monotonic() - start, 30)  # refused, never waited on


def deepspeed_available():
    try:
        mem4d.import_deepspeed(text="{}")
    except mem4d.Mem4dError as err:
        return err.status != Status.E_NO_JSON
    return True


@unittest.skipUnless(deepspeed_available(), "libmem4d was built without json-c")
class DeepSpeedTest(unittest.TestCase):
    def test_reads_and_warns(self):
        layout, warnings = mem4d.import_deepspeed(text='{"zero_optimization": {"stage": 2, '
                                                       '"reduce_bucket_size": "auto"}, "bf16": {"enabled": true}}')
        self.assertEqual((layout["framework"], layout["zero_stage"]), (2, 2))
        self.assertEqual(len(warnings), 1)
        with self.assertRaises(mem4d.Mem4dError) as ctx:
            mem4d.import_deepspeed(text='{"zero_optimization": {"stage": 7}}')
        self.assertIn("stage", str(ctx.exception))

    def test_refuses_what_deepspeed_refuses(self):
        with self.assertRaises(mem4d.Mem4dError) as ctx:
            mem4d.import_deepspeed(text='{"bf16": {"enabled": true}, "fp16": {"enabled": true}}')
        self.assertIn("simultaneously enabled", str(ctx.exception))
        layout = mem4d.Layout(dp=4)
        with self.assertRaises(mem4d.Mem4dError) as ctx:
            mem4d.import_deepspeed(text='{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, '
                                        '"gradient_accumulation_steps": 4}', layout=layout)
        self.assertEqual(ctx.exception.status, Status.E_BATCH)
        layout, _ = mem4d.import_deepspeed(text='{"train_batch_size": 64, "gradient_accumulation_steps": 4}',
                                           layout=layout)
        self.assertEqual((layout["mbs"], layout["gbs"]), (4, 64))


if __name__ == "__main__":
    unittest.main()
