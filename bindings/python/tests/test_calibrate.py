# SPDX-License-Identifier: MIT
"""Device files and calibration from Megatron-LM logs through the bindings."""

import os
import tempfile
import unittest

import support
from support import mem4d

LOGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "data",
                    "megatron-logs")


class DeviceFileTest(unittest.TestCase):
    def test_round_trip_and_refusal(self):
        device = mem4d.Device().parse("preset = gb200-186\n# one NIC per two GPUs\nnics_per_node = 2\n")
        self.assertEqual(device.name, "gb200-186")
        self.assertEqual(device["nvlink_domain"], 72)
        self.assertEqual(device["nics_per_node"], 2)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "gb.device")
            with open(path, "w") as f:
                f.write(device.to_text())
            again = mem4d.Device.from_file(path)
        self.assertEqual({k: again[k] for k in mem4d.Device.keys()}, {k: device[k] for k in mem4d.Device.keys()})
        with self.assertRaises(mem4d.Mem4dError) as cm:
            mem4d.Device().parse("gpus_per_node = 4\nnvlink = 72\n")
        self.assertEqual(cm.exception.status, mem4d.Status.E_UNKNOWN_KEY)
        self.assertIn('line 2: unknown device key "nvlink"', str(cm.exception))

    def test_only_regular_files(self):
        # A FIFO would block the reader forever and /dev/zero never ends:
        # both are refused at once, naming what the path is (issue 24).
        with tempfile.TemporaryDirectory() as d:
            fifo = os.path.join(d, "fifo")
            os.mkfifo(fifo)
            for path, kind in ((fifo, "a FIFO"), ("/dev/zero", "a character device"), (d, "a directory")):
                with self.assertRaises(mem4d.Mem4dError) as cm:
                    mem4d.Device.from_file(path)
                self.assertEqual(cm.exception.status, mem4d.Status.E_IO)
                self.assertIn(f"is {kind}", str(cm.exception))
                with self.assertRaises(mem4d.Mem4dError) as cm:
                    mem4d.Calibration().add_megatron_log_file(path)
                self.assertEqual(cm.exception.status, mem4d.Status.E_IO)
                self.assertIn(f"is {kind}", str(cm.exception))
                self.assertIn("not a regular file; give the path of a Megatron-LM training log", str(cm.exception))


class CalibrationTest(unittest.TestCase):
    def test_fit_one_log(self):
        with open(os.path.join(LOGS, "llama31-8b-cp2-16gpu.log")) as f:
            text = f.read()
        cal = mem4d.Calibration()
        cal.add_megatron_log(text)
        self.assertEqual(len(cal), 1)
        device = cal.fit(mem4d.Device.preset("h100-80"))
        figs = cal.figures(0)
        self.assertAlmostEqual(figs["measured_step_s"], 12.30145, places=9)
        self.assertAlmostEqual(figs["predicted_step_after_s"] / figs["measured_step_s"], 1, delta=0.005)
        self.assertIsNone(cal.figure(0, mem4d.CalibrationFigure.MEASURED_MAX_ALLOCATED))
        self.assertNotEqual(device["matmul_efficiency_ppm"], mem4d.Device.preset("h100-80")["matmul_efficiency_ppm"])

    def test_log_file_reads_like_text(self):
        cal = mem4d.Calibration()
        cal.add_megatron_log_file(os.path.join(LOGS, "llama31-8b-cp2-16gpu.log"))
        with open(os.path.join(LOGS, "llama31-8b-cp2-16gpu.log"), "rb") as f:
            cal.add_megatron_log(f.read())
        cal.fit(mem4d.Device.preset("h100-80"))
        self.assertEqual(cal.figures(0), cal.figures(1))
        self.assertIsInstance(cal.note, str)

    def test_clamped_constant_is_noted(self):
        # Measured peaks far below the prediction: the workspace goes to its
        # least value, and the note says so (issue 24, item 4).
        with open(os.path.join(LOGS, "llama32-1b-dp8.log")) as f:
            text = f.read()
        low = text.replace("max allocated: 12003.60", "max allocated: 100.00").replace(
            "max reserved: 12232.00", "max reserved: 200.00")
        self.assertNotEqual(low, text)
        cal = mem4d.Calibration()
        cal.add_megatron_log(low)
        device = cal.fit(mem4d.Device.preset("h100-80"))
        self.assertEqual(device["workspace_bytes"], 0)
        self.assertIn("workspace_bytes", cal.note)

    def test_wrong_types_and_ranges(self):
        # issue 24 item 11: ctypes wrapped 2**64 to 0 and a string of
        # arguments became one argument per character.
        log = " iteration 1/ 2 | elapsed time per iteration (ms): 900.0 |\n" * 3
        job = ("--num-layers 16 --hidden-size 2048 --num-attention-heads 32 --seq-length 2048 "
               "--max-position-embeddings 2048 --micro-batch-size 1 --vocab-size 128256 --bf16")
        for bad in (1 << 64, -1):
            with self.assertRaises(mem4d.Mem4dError) as cm:
                mem4d.Calibration().add_megatron_log(log, job.split(), world_size=bad)
            self.assertEqual(cm.exception.status, mem4d.Status.E_RANGE)
            self.assertIn("outside [0, 2**64 - 1]", str(cm.exception))
        for bad in (8.0, "8", True):
            with self.assertRaises(TypeError):
                mem4d.Calibration().add_megatron_log(log, job.split(), world_size=bad)
        with self.assertRaises(TypeError):
            mem4d.Calibration().add_megatron_log(log, [16, 2048])
        with self.assertRaises(TypeError):
            mem4d.Calibration().add_megatron_log(4096)  # bytes(4096) would be 4096 NULs
        # One command line is split as a shell would, as import_megatron() does.
        by_line, by_list = mem4d.Calibration(), mem4d.Calibration()
        by_line.add_megatron_log(log, job, world_size=8)
        by_list.add_megatron_log(log, job.split(), world_size=8)
        device = mem4d.Device.preset("h100-80")
        by_line.fit(device)
        by_list.fit(mem4d.Device.preset("h100-80"))
        self.assertEqual(by_line.figures(0), by_list.figures(0))
    def test_framework_log_and_measurement_types(self):
        # As add_megatron_log() (issue 24 item 11): add_measurement(True)
        # was a step of 1 s, add_measurement("5") 5 s, add_log(4096) a log
        # of 4096 NULs, and a log format of 7 "invalid argument".
        model = mem4d.Model.preset("llama3.1-8b")
        layout = mem4d.Layout(world=8, seq=8192, gbs=32)
        for bad in (True, "5", None):
            with self.assertRaises(TypeError):
                mem4d.Calibration().add_measurement(model, layout, mem4d.CalibrationFigure.MEASURED_STEP_S, bad)
        for value in (5, 5.0):
            mem4d.Calibration().add_measurement(model, layout, mem4d.CalibrationFigure.MEASURED_STEP_S, value)
        with self.assertRaises(TypeError):
            mem4d.Calibration().add_log(4096, model, layout, mem4d.LogFormat.TORCHTITAN)
        with self.assertRaises(ValueError) as cm:
            mem4d.Calibration().add_log("step: 1  loss: 2  tps: 8\n", model, layout, 7)
        self.assertIn("TORCHTITAN", str(cm.exception))

    def test_framework_log_measurement_and_constants(self):
        model = mem4d.Model.preset("llama3.1-8b")
        layout = mem4d.Layout(world=8, seq=8192, gbs=32, zero_stage=3)
        cal = mem4d.Calibration()
        titan = "".join("step: %2d  loss: 9.00000  memory: 60.50GiB(63.68%%)  tps: 8,192  tflops: 400.00  "
                        "mfu: 40.44%%\n" % s for s in (1, 10, 20))
        cal.add_log(titan, model, layout, mem4d.LogFormat.TORCHTITAN)
        cal.add_measurement(model, layout, mem4d.CalibrationFigure.MEASURED_STEP_S, 4.0)
        device = cal.fit(mem4d.Device.preset("h100-80"))
        self.assertAlmostEqual(cal.figures(0)["measured_step_s"], 4.0, places=9)
        self.assertAlmostEqual(cal.figures(0)["measured_tokens_per_s"], 65536, places=6)
        self.assertEqual(device["calibrated_runs"], 2)
        constants = cal.constants()
        self.assertTrue(constants["matmul_efficiency_ppm"])
        self.assertFalse(constants["microbatch_overhead_ns"])
        # The band narrows on the calibrated device; MFU names its peak.
        speed = mem4d.estimate(model, layout, device).metrics
        self.assertLess(speed.tokens_per_s_low, speed.tokens_per_s)
        self.assertGreater(speed.tokens_per_s_high, speed.tokens_per_s)
        self.assertEqual(speed.mfu_peak_flops, device["peak_flops"])
        plain = mem4d.estimate(model, layout, mem4d.Device.preset("h100-80")).metrics
        self.assertGreater(speed.tokens_per_s_low / speed.tokens_per_s, plain.tokens_per_s_low / plain.tokens_per_s)
        with self.assertRaises(mem4d.Mem4dError) as cm:
            cal.add_log("step: 1  loss: 2  tps: soon\n", model, layout, mem4d.LogFormat.TORCHTITAN)
        self.assertEqual(cm.exception.status, mem4d.Status.E_PARSE)

    def test_refused_log_names_the_line(self):
        cal = mem4d.Calibration()
        with self.assertRaises(mem4d.Mem4dError) as cm:
            cal.add_megatron_log("x\n iteration 1/ 2 | elapsed time per iteration (ms): soon |\n")
        self.assertEqual(cm.exception.status, mem4d.Status.E_PARSE)
        self.assertIn("line 2: elapsed time per iteration (ms) is not a number", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
