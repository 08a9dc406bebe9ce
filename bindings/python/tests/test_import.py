# SPDX-License-Identifier: MIT
"""Megatron-LM argument lists and Hugging Face configs through the binding."""

import json
import os
import tempfile
import unittest

import support
from support import mem4d
from mem4d import Status, WorldSource

LLAMA31_8B_ARGS = (
    "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 "
    "--group-query-attention --num-query-groups 8 --seq-length 8192 "
    "--max-position-embeddings 131072 --swiglu --normalization RMSNorm --disable-bias-linear "
    "--untie-embeddings-and-output-weights --position-embedding-type rope --vocab-size 128256 "
    "--tensor-model-parallel-size 2 --micro-batch-size 1 --global-batch-size 128 --bf16 "
    "--use-distributed-optimizer --attention-dropout 0 --hidden-dropout 0 --use-flash-attn"
).split()

LLAMA31_8B_HF = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "tie_word_embeddings": False,
    "hidden_act": "silu", "torch_dtype": "bfloat16",
}


def import_available():
    try:
        mem4d.import_megatron(["--num-layers", "2"])
    except mem4d.Mem4dError as err:
        return err.status != Status.E_UNSUPPORTED
    return True


@unittest.skipUnless(import_available(), "the library's Megatron import is not available yet")
class MegatronImportTest(unittest.TestCase):
    def test_llama_args_give_the_preset_model(self):
        got = mem4d.import_megatron(LLAMA31_8B_ARGS, env={"WORLD_SIZE": "4"})
        self.assertEqual(got.model.as_dict(), mem4d.Model.preset("llama3.1-8b").as_dict())
        self.assertEqual((got.layout["tp"], got.layout["pp"], got.layout["cp"]), (2, 1, 1))
        self.assertEqual(got.layout["world"], 4)
        self.assertEqual(got.layout["seq"], 8192)
        self.assertEqual(got.layout["gbs"], 128)
        self.assertIs(got.world_source, WorldSource.ENV_WORLD_SIZE)
        self.assertEqual(got.warnings, [])

    def test_explicit_world_size_wins(self):
        got = mem4d.import_megatron(LLAMA31_8B_ARGS, env=["WORLD_SIZE=4"], world_size=8)
        self.assertEqual(got.layout["world"], 8)
        self.assertIs(got.world_source, WorldSource.EXPLICIT)

    def test_equals_form_and_into_existing_objects(self):
        model, layout = mem4d.Model.preset("llama3.1-8b"), mem4d.Layout()
        args = ["--tensor-model-parallel-size=4", "--seq-length=4096"]
        got = mem4d.import_megatron(args, world_size=8, model=model, layout=layout)
        self.assertIs(got.model, model)
        self.assertEqual(layout["tp"], 4)
        self.assertEqual(layout["seq"], 4096)

    def test_malformed_value_names_the_flag(self):
        with self.assertRaises(mem4d.Mem4dError) as ctx:
            mem4d.import_megatron(["--tensor-model-parallel-size", "eight"])
        self.assertIs(ctx.exception.status, Status.E_PARSE)
        self.assertIn("--tensor-model-parallel-size", ctx.exception.message)

    def test_missing_value(self):
        with self.assertRaises(mem4d.Mem4dError) as ctx:
            mem4d.import_megatron(["--num-layers"])
        self.assertIs(ctx.exception.status, Status.E_MISSING)
        self.assertIn("--num-layers", ctx.exception.message)


def hf_available():
    try:
        mem4d.Model.from_hf_json(json.dumps(LLAMA31_8B_HF))
    except mem4d.Mem4dError as err:
        return err.status not in (Status.E_NO_JSON, Status.E_UNSUPPORTED)
    return True


@unittest.skipUnless(hf_available(), "the library was built without JSON support, "
                                     "or its HF import is not available yet")
class HfConfigTest(unittest.TestCase):
    def test_config_file_gives_the_preset_model(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "config.json")
            with open(path, "w") as f:
                json.dump(LLAMA31_8B_HF, f)
            model = mem4d.Model.from_hf_config(path)
        self.assertEqual(model.num_params, 8030261248)
        preset = mem4d.Model.preset("llama3.1-8b")
        for key in ("hidden_size", "ffn_hidden_size", "num_layers", "num_attention_heads",
                    "num_query_groups", "vocab_size", "tie_word_embeddings"):
            self.assertEqual(model[key], preset[key], key)

    def test_missing_file(self):
        with self.assertRaises(mem4d.Mem4dError) as ctx:
            mem4d.Model.from_hf_config("/nonexistent/config.json")
        self.assertIs(ctx.exception.status, Status.E_IO)

    def test_malformed_json(self):
        with self.assertRaises(mem4d.Mem4dError) as ctx:
            mem4d.Model.from_hf_json('{"hidden_size": 4096,')
        self.assertIs(ctx.exception.status, Status.E_JSON)
        self.assertTrue(ctx.exception.message)

    def test_missing_key(self):
        config = dict(LLAMA31_8B_HF)
        del config["num_hidden_layers"]
        with self.assertRaises(mem4d.Mem4dError) as ctx:
            mem4d.Model.from_hf_json(json.dumps(config))
        self.assertIs(ctx.exception.status, Status.E_MISSING)


if __name__ == "__main__":
    unittest.main()
