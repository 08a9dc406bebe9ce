// SPDX-License-Identifier: MIT
//! Megatron argument lists and Hugging Face configs through the safe crate.

mod common;

use mem4d::{import_megatron, Importer, Layout, Model, Status, WorldSource};

const ARGS: &str = "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 \
    --group-query-attention --num-query-groups 8 --seq-length 8192 --max-position-embeddings 131072 --swiglu \
    --normalization RMSNorm --disable-bias-linear --untie-embeddings-and-output-weights \
    --position-embedding-type rope --vocab-size 128256 --tensor-model-parallel-size 2 --micro-batch-size 1 \
    --global-batch-size 128 --bf16 --use-distributed-optimizer --attention-dropout 0 --hidden-dropout 0 \
    --use-flash-attn";

const HF: &str = r#"{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
  "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
  "vocab_size": 128256, "max_position_embeddings": 131072, "rms_norm_eps": 1e-05,
  "tie_word_embeddings": false, "hidden_act": "silu", "torch_dtype": "bfloat16"}"#;

fn args() -> Vec<&'static str> {
    ARGS.split_whitespace().collect()
}

#[test]
fn megatron_llama_gives_the_preset() {
    let got = import_megatron(&args(), Some(&["WORLD_SIZE=4"]), 0).unwrap();
    assert_eq!(got.model.values(), common::llama8b().values());
    assert_eq!(got.layout.get("tp").unwrap(), 2);
    assert_eq!(got.layout.get("world").unwrap(), 4);
    assert_eq!(got.layout.get("gbs").unwrap(), 128);
    assert_eq!(got.world_source, WorldSource::EnvWorldSize);
    assert!(got.warnings.is_empty(), "{:?}", got.warnings);
    let explicit = import_megatron(&args(), Some(&["WORLD_SIZE=4"]), 8).unwrap();
    assert_eq!(explicit.layout.get("world").unwrap(), 8);
    assert_eq!(explicit.world_source, WorldSource::Explicit);
}

#[test]
fn megatron_errors_name_the_flag() {
    let err = import_megatron(&["--tensor-model-parallel-size", "eight"], None, 0).unwrap_err();
    assert_eq!(err.status, Status::E_PARSE);
    assert!(err.message.contains("--tensor-model-parallel-size"), "{err}");
    let err = import_megatron(&["--num-layers"], None, 0).unwrap_err();
    assert_eq!(err.status, Status::E_MISSING);
    assert!(err.message.contains("--num-layers"), "{err}");
}

#[test]
fn hf_config() {
    let model = match Model::from_hf_json(HF) {
        Err(e) if e.status == Status::E_NO_JSON => {
            eprintln!("skipped: the library was built without JSON support");
            return;
        }
        other => other.unwrap(),
    };
    assert_eq!(model.num_params().unwrap(), 8_030_261_248);
    let dir = std::env::temp_dir().join(format!("mem4d-rs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config.json");
    std::fs::write(&path, HF).unwrap();
    let from_file = Model::from_hf_config(&path);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(from_file.unwrap().values(), model.values());
    assert_eq!(Model::from_hf_config("/nonexistent/config.json").unwrap_err().status, Status::E_IO);
    let err = Model::from_hf_json(r#"{"hidden_size": 4096,"#).unwrap_err();
    assert_eq!(err.status, Status::E_JSON);
    assert!(!err.message.is_empty());
}

#[test]
fn torchtitan_toml() {
    let model = Model::preset("llama3.1-8b").unwrap();
    let mut imp = Importer::new().unwrap();
    let mut layout = Layout::new().unwrap();
    imp.torchtitan_toml(
        "[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_schedule = \"ZBVZeroBubble\"\n",
        32,
        Some(&model),
        &mut layout,
    )
    .unwrap();
    assert_eq!(layout.get("vpp").unwrap(), 2);
    assert_eq!(layout.get("dp").unwrap(), 8);
    let err = imp.torchtitan_toml("[compile]\nenable = \"no\"\n", 8, None, &mut layout).unwrap_err();
    assert_eq!(err.status, Status::E_PARSE);
    assert!(err.message.contains("compile.enable"), "{err}");
    let err = imp.torchtitan_config("/dev/zero", 8, None, &mut layout).unwrap_err();
    assert_eq!(err.status, Status::E_IO);
}
