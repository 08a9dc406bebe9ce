# SPDX-License-Identifier: MIT
"""No memory leak over 100k create/estimate/free cycles.

Resident memory is read from /proc before and after; a leak of even one model
handle (about 200 bytes) per cycle would grow it by some 20 MB, a leaked
report by gigabytes. The allowance covers allocator and interpreter noise.
"""

import gc
import os
import unittest

import support
from support import mem4d

CYCLES = int(os.environ.get("MEM4D_LEAK_CYCLES", "100000"))
ALLOWANCE = 4 << 20


def cycle(preset="llama3.1-8b"):
    with mem4d.Model.preset(preset) as model, \
         mem4d.Layout(mode="paper", tp=2, world=4, seq=8192) as layout, \
         mem4d.Device.preset("h100-80") as device:
        report = mem4d.estimate(model, layout, device)
    return report.peak_bytes


def failing_cycle():
    with mem4d.Model.preset("llama3.1-8b") as model, \
         mem4d.Layout(tp=3, world=3, seq=8192) as layout, \
         mem4d.Device.preset("h100-80") as device:
        try:
            mem4d.estimate(model, layout, device)
        except mem4d.Mem4dError as err:
            return err.status
    return None


def search_cycle():
    with mem4d.Model.preset("llama3.1-8b") as model, \
         mem4d.Device.preset("h100-80") as device:
        search = mem4d.plan(model, device, gpus=16, seq=8192, gbs=512, ranked=False,
                            max_results=2)
        with search:
            return sum(p.report.peak_bytes for p in search)


def import_cycle():
    got = mem4d.import_megatron(["--num-layers", "32", "--hidden-size", "4096",
                                 "--tensor-model-parallel-size", "2"], world_size=8)
    with got.model, got.layout:
        return got.layout["tp"]


@unittest.skipUnless(os.path.exists("/proc/self/statm"), "needs /proc to read resident memory")
class LeakTest(unittest.TestCase):
    def measure(self, fn, cycles):
        for _ in range(2000):  # let caches and arenas reach their steady size
            fn()
        gc.collect()
        before = support.rss_bytes()
        for _ in range(cycles):
            fn()
        gc.collect()
        return support.rss_bytes() - before

    def test_estimate_cycles_do_not_leak(self):
        first = cycle()
        growth = self.measure(cycle, CYCLES)
        self.assertEqual(cycle(), first)
        self.assertLess(growth, ALLOWANCE,
                        f"resident memory grew {growth} bytes over {CYCLES} cycles")

    def test_failing_estimates_do_not_leak(self):
        self.assertIs(failing_cycle(), mem4d.Status.E_HEADS_TP)
        growth = self.measure(failing_cycle, CYCLES // 10)
        self.assertLess(growth, ALLOWANCE,
                        f"resident memory grew {growth} bytes over {CYCLES // 10} failures")

    def test_search_and_import_cycles_do_not_leak(self):
        first = search_cycle()
        self.assertGreater(first, 0)
        growth = self.measure(lambda: self.assertEqual(search_cycle(), first), CYCLES // 10)
        self.assertLess(growth, ALLOWANCE, f"search: grew {growth} bytes")
        self.assertEqual(import_cycle(), 2)
        growth = self.measure(import_cycle, CYCLES // 10)
        self.assertLess(growth, ALLOWANCE, f"import: grew {growth} bytes")

    def test_measure_can_see_a_leak(self):
        # The method itself must be able to fail: keeping 2000 reports alive
        # (over 100 KB of C memory each) is seen.
        kept = []

        def leaky():
            buf = mem4d.ReportBuffer()
            kept.append(buf)

        growth = self.measure(lambda: None, 0)
        before = support.rss_bytes()
        for _ in range(2000):
            leaky()
        self.assertGreater(support.rss_bytes() - before, ALLOWANCE)
        del kept
        self.assertLess(growth, ALLOWANCE)


if __name__ == "__main__":
    unittest.main()
