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

    def test_refused_log_names_the_line(self):
        cal = mem4d.Calibration()
        with self.assertRaises(mem4d.Mem4dError) as cm:
            cal.add_megatron_log("x\n iteration 1/ 2 | elapsed time per iteration (ms): soon |\n")
        self.assertEqual(cm.exception.status, mem4d.Status.E_PARSE)
        self.assertIn("line 2: elapsed time per iteration (ms) is not a number", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
