# SPDX-License-Identifier: MIT
"""Bad input raises Mem4dError with the library's status and sentence."""

import ctypes
import unittest

import support
from support import mem4d
from mem4d import Mem4dError, Status


def c_validate_sentence(model, layout):
    """What mem4d_validate() itself says, for comparison."""
    why = ctypes.create_string_buffer(512)
    code = mem4d._capi.lib.mem4d_validate(model, layout, why, ctypes.sizeof(why))
    return code, why.value.decode()


class ErrorMappingTest(unittest.TestCase):
    def setUp(self):
        self.model = mem4d.Model.preset("llama3.1-8b")
        self.device = mem4d.Device.preset("h100-80")

    def assertRaisesStatus(self, status, fn, *args, **kw):
        with self.assertRaises(Mem4dError) as ctx:
            fn(*args, **kw)
        err = ctx.exception
        self.assertIs(err.status, status)
        self.assertEqual(int(err.status), status.value)
        self.assertEqual(err.status.name, status.name)
        self.assertTrue(err.message)
        self.assertIn(err.message, str(err))
        return err

    def test_unknown_presets(self):
        err = self.assertRaisesStatus(Status.E_UNKNOWN_PRESET, mem4d.Model.preset, "gpt-9")
        self.assertIn("gpt-9", err.message)
        self.assertRaisesStatus(Status.E_UNKNOWN_PRESET, mem4d.Device.preset, "tpu-v9")

    def test_unknown_key(self):
        err = self.assertRaisesStatus(Status.E_UNKNOWN_KEY, mem4d.Layout, tensor_size=8)
        self.assertIn("tensor_size", err.message)

    def test_value_out_of_bounds_names_the_bounds(self):
        lo, hi = mem4d.Layout.bounds("tp")
        err = self.assertRaisesStatus(Status.E_RANGE, mem4d.Layout, tp=0)
        self.assertIn(f"[{lo}, {hi}]", err.message)
        self.assertRaisesStatus(Status.E_RANGE, mem4d.Layout, tp=-1)
        self.assertRaisesStatus(Status.E_RANGE, mem4d.Layout, tp=1 << 64)

    def test_malformed_text(self):
        self.assertRaisesStatus(Status.E_PARSE, mem4d.Layout, recompute="sometimes")
        self.assertRaisesStatus(Status.E_PARSE, mem4d.Layout, tp="8x")

    def test_value_unchanged_after_range_error(self):
        layout = mem4d.Layout(tp=4)
        with self.assertRaises(Mem4dError):
            layout["tp"] = 0
        self.assertEqual(layout["tp"], 4)

    def _estimate_error(self, status, **keys):
        layout = mem4d.Layout(**keys)
        err = self.assertRaisesStatus(status, mem4d.estimate, self.model, layout, self.device)
        # The exception carries the library's own sentence.
        code, sentence = c_validate_sentence(self.model, layout)
        self.assertEqual(code, status.value)
        self.assertEqual(err.message, sentence)
        return err

    def test_validation_statuses(self):
        err = self._estimate_error(Status.E_HEADS_TP, tp=3, world=3, seq=8192)
        self.assertIn("3", err.message)
        self._estimate_error(Status.E_WORLD, tp=2, dp=3, world=8, seq=8192)
        self._estimate_error(Status.E_SEQ, cp=2, world=2, seq=8191)
        self._estimate_error(Status.E_LAYERS_PP, pp=3, world=3, seq=8192)
        self._estimate_error(Status.E_BATCH, dp=2, world=2, seq=8192, gbs=3)

    def test_incomplete_model(self):
        model = mem4d.Model(hidden_size=4096)
        err = self.assertRaisesStatus(Status.E_MISSING, model.validate)
        self.assertIn("num_layers", err.message)
        inconsistent = mem4d.Model.preset("llama3.1-8b").set(num_attention_heads=33)
        self.assertRaisesStatus(Status.E_MODEL, inconsistent.validate)

    def test_closed_object_is_refused(self):
        layout = mem4d.Layout()
        layout.close()
        self.assertRaisesStatus(Status.E_INVALID_ARG, mem4d.estimate, self.model, layout,
                                self.device)
        layout.close()  # closing twice is harmless

    def test_status_descriptions(self):
        self.assertEqual(Status.E_RANGE.description, mem4d.strerror(4))
        self.assertNotEqual(Status.E_RANGE.description, Status.E_PARSE.description)
        err = Mem4dError(99)
        self.assertEqual(err.status, 99)  # a status newer than the binding stays a number


if __name__ == "__main__":
    unittest.main()
