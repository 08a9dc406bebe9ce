/*
 * Parameter tables: names, aliases, kinds, bounds and defaults of every key of the
 * model, layout and device. One row per enum value, in enum order; rows are
 * only ever appended.
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "private.h"

#define GiB (UINT64_C(1) << 30)
#define MiB (UINT64_C(1) << 20)

static const char *const norm_names[] = {"rmsnorm", "layernorm", NULL};
static const char *const activation_names[] = {"default", "squared_relu", NULL};
static const char *const recompute_names[] = {"none", "selective", "full", "op", NULL};
static const char *const method_names[] = {"uniform", "block", NULL};
static const char *const mode_names[] = {"full", "paper", NULL};
M4D_TABLE_ROWS(mode_names, M4D_NMODES + 1); /* mem4d_mode's names, in order, and the NULL */
static const char *const position_names[] = {"rope", "learned_absolute", "alibi", "none", NULL};
static const char *const framework_names[] = {"megatron", "torchtitan", "deepspeed", "nanotron", NULL};
static const char *const reshard_names[] = {"auto", "always", "never", NULL};
static const char *const float8_names[] = {"none", "tensorwise", "rowwise", NULL};
static const char *const offload_names[] = {"none", "optimizer", "optimizer_and_params", NULL};
static const char *const schedule_names[] = {"1f1b", "afab", NULL};
static const char *const compile_names[] = {"none", "blocks", "blocks_and_loss", NULL};
static const char *const dispatcher_names[] = {"alltoall", "allgather", "deepep", "hybridep", NULL};
static const char *const fp8_recipe_names[] = {"delayed", "tensorwise", "mxfp8", "blockwise", "custom", "nvfp4", NULL};
static const char *const ce_impl_names[] = {"stack", "unfused", "native", "te", NULL};
static const char *const cp_comm_names[] = {"p2p", "all_gather", NULL};
static const char *const cuda_graph_names[] = {"none", "local", "transformer_engine", "full_iteration", NULL};
static const char *const stack_names[] = {"middle",     "megatron-lm-2022", "megatron-deepspeed", "nemo-24.07", "nemo-25",
                                          "torchtitan", "composer",         "nanotron",           "torchtitan-compile",
                                          "megatron-deepspeed-bigscience-2022-02", NULL};
M4D_TABLE_ROWS(stack_names, M4D_NSTACKS + 1); /* lib/perf.c's profiles, in order, and the NULL */
static const char *const attention_names[] = {"auto", "fa2", "fa3", "cudnn", "sdpa", "unfused", "triton", NULL};
static const char *const gemm_library_names[] = {"auto", "native", "ampere", "cuda11", NULL};

/* Rows by kind (mem4d_param_kind): NUM_ROW is a plain number, UNIT_ROW a
 * number with a unit (BYTES_ROW, PPM_ROW, FLOPS_ROW, RATE_ROW for bytes/s,
 * NS_ROW), SET_ROW a byte width limited to the widths of its mask. */
/* A row may end with where the key applies: .fw = M4D_FW(MEGATRON) (only
 * that framework models its non-default values, or its .fw_values), .paper
 * = the values paper mode models (PAPER_DEFAULT: the default alone). */
/* Every field named: rows that leave where-it-applies at its default stay
 * complete for -Wmissing-field-initializers. */
#define ROW_(n_, a_, a2_, lo_, hi_, def_, vals_, kind_, mask_, ...)                          \
    {.name = n_, .alias = a_, .alias2 = a2_, .min = lo_, .max = hi_, .def = def_, .values = vals_, \
     .kind = kind_, .allowed = mask_, __VA_ARGS__}
#define BOOL_ROW(n, a, a2, d, ...) ROW_(n, a, a2, 0, 1, d, NULL, MEM4D_KIND_BOOLEAN, 0, __VA_ARGS__)
#define NUM_ROW(n, a, a2, lo, hi, d, ...) ROW_(n, a, a2, lo, hi, d, NULL, MEM4D_KIND_INTEGER, 0, __VA_ARGS__)
#define UNIT_ROW(kind, n, a, a2, lo, hi, d, ...) ROW_(n, a, a2, lo, hi, d, NULL, kind, 0, __VA_ARGS__)
#define BYTES_ROW(n, a, a2, lo, hi, d, ...) UNIT_ROW(MEM4D_KIND_BYTES, n, a, a2, lo, hi, d, __VA_ARGS__)
#define PPM_ROW(n, a, a2, lo, hi, d, ...) UNIT_ROW(MEM4D_KIND_PPM, n, a, a2, lo, hi, d, __VA_ARGS__)
#define FLOPS_ROW(n, a, a2, lo, hi, d, ...) UNIT_ROW(MEM4D_KIND_FLOPS, n, a, a2, lo, hi, d, __VA_ARGS__)
#define RATE_ROW(n, a, a2, lo, hi, d, ...) UNIT_ROW(MEM4D_KIND_BYTES_PER_S, n, a, a2, lo, hi, d, __VA_ARGS__)
#define NS_ROW(n, a, a2, lo, hi, d, ...) UNIT_ROW(MEM4D_KIND_NANOSECONDS, n, a, a2, lo, hi, d, __VA_ARGS__)
/* An enumerated key's largest value follows from its NULL-terminated names. */
#define ENUM_ROW(n, a, a2, names, d, ...) \
    ROW_(n, a, a2, 0, M4D_LEN(names) - 2, d, names, MEM4D_KIND_CHOICE, 0, __VA_ARGS__)
#define SET_ROW(n, a, a2, lo, hi, d, mask, ...) ROW_(n, a, a2, lo, hi, d, NULL, MEM4D_KIND_WIDTH, mask, __VA_ARGS__)
/* Paper mode models the default value alone (the default must be < 63). */
#define PAPER_DEFAULT(def) .paper = M4D_VAL(def)
#define MEGATRON_ONLY .fw = M4D_FW(MEGATRON)
/* Tied to one framework release's internals (doc/abi-policy.md): the whole key. */
#define EXPERIMENTAL .experimental = M4D_ALL_VALUES
#define TORCHTITAN_ONLY .fw = M4D_FW(TORCHTITAN)

const struct m4d_param_desc m4d_model_params[] = {
    [MEM4D_MODEL_HIDDEN_SIZE] = NUM_ROW("hidden_size", "h", NULL, 1, 1u << 20, 0),
    [MEM4D_MODEL_FFN_HIDDEN_SIZE] = NUM_ROW("ffn_hidden_size", "intermediate_size", "f", 1, 1u << 22, 0),
    [MEM4D_MODEL_NUM_LAYERS] = NUM_ROW("num_layers", "num_hidden_layers", "layers", 1, 4096, 0),
    [MEM4D_MODEL_NUM_HEADS] = NUM_ROW("num_attention_heads", "heads", NULL, 1, 1u << 14, 0),
    [MEM4D_MODEL_NUM_KV_HEADS] = NUM_ROW("num_query_groups", "num_key_value_heads", "kv_heads", 0, 1u << 14, 0),
    [MEM4D_MODEL_HEAD_DIM] = NUM_ROW("kv_channels", "head_dim", NULL, 0, 1u << 14, 0),
    [MEM4D_MODEL_VOCAB_SIZE] = NUM_ROW("vocab_size", "vocab", NULL, 1, 1u << 24, 0),
    [MEM4D_MODEL_TIED_EMBEDDINGS] = BOOL_ROW("tie_word_embeddings", "tied_embeddings", NULL, 0),
    [MEM4D_MODEL_QKV_BIAS] = BOOL_ROW("add_qkv_bias", "qkv_bias", NULL, 0),
    [MEM4D_MODEL_NORM] = ENUM_ROW("normalization", "norm", NULL, norm_names, 0),
    [MEM4D_MODEL_GATED_MLP] = BOOL_ROW("swiglu", "gated_mlp", NULL, 1, PAPER_DEFAULT(1)),
    [MEM4D_MODEL_NUM_EXPERTS] = NUM_ROW("num_experts", "num_local_experts", NULL, 0, 4096, 0, PAPER_DEFAULT(0)),
    [MEM4D_MODEL_EXPERT_TOPK] = NUM_ROW("moe_router_topk", "num_experts_per_tok", NULL, 0, 4096, 0),
    [MEM4D_MODEL_EXPERT_FFN_SIZE] = NUM_ROW("moe_ffn_hidden_size", "moe_intermediate_size", NULL, 0, 1u << 22, 0),
    [MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE] = NUM_ROW("moe_shared_expert_intermediate_size",
                                                   "shared_expert_intermediate_size", NULL, 0, 1u << 22, 0),
    [MEM4D_MODEL_MAX_POSITION] = NUM_ROW("max_position_embeddings", NULL, NULL, 0, 1u << 26, 0),
    [MEM4D_MODEL_LINEAR_BIAS] = BOOL_ROW("add_bias_linear", "linear_bias", NULL, 0, PAPER_DEFAULT(0)),
    [MEM4D_MODEL_POSITION_EMBEDDING] = ENUM_ROW("position_embedding_type", "position_embedding", NULL,
                                                position_names, 0, .paper = M4D_VAL(0) | M4D_VAL(2) | M4D_VAL(3)),
    [MEM4D_MODEL_QK_LAYERNORM] = BOOL_ROW("qk_layernorm", "qk_norm", NULL, 0, PAPER_DEFAULT(0)),
    [MEM4D_MODEL_MOE_LAYER_FREQ] = NUM_ROW("moe_layer_freq", NULL, NULL, 1, 64, 1),
    [MEM4D_MODEL_MOE_LAYER_MASK] = NUM_ROW("moe_layer_mask", NULL, NULL, 1, UINT64_MAX, 1),
    [MEM4D_MODEL_MOE_FIRST_DENSE] = NUM_ROW("first_k_dense_replace", "moe_first_dense_layers", NULL, 0, 4096, 0),
    [MEM4D_MODEL_Q_LORA_RANK] = NUM_ROW("q_lora_rank", NULL, NULL, 0, 1u << 20, 0),
    [MEM4D_MODEL_KV_LORA_RANK] = NUM_ROW("kv_lora_rank", NULL, NULL, 0, 1u << 20, 0, PAPER_DEFAULT(0)),
    [MEM4D_MODEL_QK_HEAD_DIM] = NUM_ROW("qk_head_dim", "qk_nope_head_dim", NULL, 0, 1u << 14, 0),
    [MEM4D_MODEL_QK_POS_EMB_HEAD_DIM] = NUM_ROW("qk_pos_emb_head_dim", "qk_rope_head_dim", NULL, 0, 1u << 14, 0),
    [MEM4D_MODEL_V_HEAD_DIM] = NUM_ROW("v_head_dim", NULL, NULL, 0, 1u << 14, 0),
    [MEM4D_MODEL_MTP_LAYERS] = NUM_ROW("mtp_num_layers", "num_nextn_predict_layers", NULL, 0, 64, 0, PAPER_DEFAULT(0)),
    [MEM4D_MODEL_SHARED_EXPERT_GATE] = BOOL_ROW("moe_shared_expert_gate", "shared_expert_gate", NULL, 1),
    [MEM4D_MODEL_NORMS_PER_LAYER] = NUM_ROW("norms_per_layer", NULL, NULL, 1, 8, 2, PAPER_DEFAULT(2)),
    [MEM4D_MODEL_QK_NORM_WHOLE] = BOOL_ROW("qk_norm_whole", NULL, NULL, 0),
    [MEM4D_MODEL_ATTENTION_SINKS] = BOOL_ROW("attention_sinks", "sinks", NULL, 0, PAPER_DEFAULT(0)),
    [MEM4D_MODEL_ROUTER_BIAS] = BOOL_ROW("moe_router_bias", "router_bias", NULL, 0),
    [MEM4D_MODEL_DSA_INDEX_HEADS] = NUM_ROW("dsa_indexer_n_heads", "index_n_heads", NULL, 0, 1u << 14, 0,
        PAPER_DEFAULT(0)),
    [MEM4D_MODEL_DSA_INDEX_HEAD_DIM] = NUM_ROW("dsa_indexer_head_dim", "index_head_dim", NULL, 0, 1u << 14, 0),
    [MEM4D_MODEL_DSA_INDEX_TOPK] = NUM_ROW("dsa_indexer_topk", "index_topk", NULL, 0, 1u << 24, 0),
    [MEM4D_MODEL_MAMBA_STATE_DIM] = NUM_ROW("mamba_state_dim", "ssm_state_size", NULL, 1, 1u << 14, 128),
    [MEM4D_MODEL_MAMBA_HEAD_DIM] = NUM_ROW("mamba_head_dim", NULL, NULL, 1, 1u << 14, 64),
    [MEM4D_MODEL_MAMBA_NUM_GROUPS] = NUM_ROW("mamba_num_groups", "n_groups", "mamba_n_groups", 1, 1u << 14, 8),
    [MEM4D_MODEL_MAMBA_NUM_HEADS] = NUM_ROW("mamba_num_heads", NULL, NULL, 0, 1u << 16, 0),
    [MEM4D_MODEL_CONV_KERNEL] = NUM_ROW("conv_kernel", "mamba_d_conv", "linear_conv_kernel_dim", 1, 64, 4),
    [MEM4D_MODEL_LINEAR_KEY_HEADS] = NUM_ROW("linear_num_key_heads", NULL, NULL, 0, 1u << 14, 0),
    [MEM4D_MODEL_LINEAR_VALUE_HEADS] = NUM_ROW("linear_num_value_heads", NULL, NULL, 0, 1u << 14, 0),
    [MEM4D_MODEL_LINEAR_KEY_HEAD_DIM] = NUM_ROW("linear_key_head_dim", NULL, NULL, 1, 1u << 14, 128),
    [MEM4D_MODEL_LINEAR_VALUE_HEAD_DIM] = NUM_ROW("linear_value_head_dim", NULL, NULL, 1, 1u << 14, 128),
    [MEM4D_MODEL_ATTENTION_OUTPUT_GATE] = BOOL_ROW("attention_output_gate", "attn_output_gate", NULL, 0,
        PAPER_DEFAULT(0)),
    [MEM4D_MODEL_DSA_INDEX_TOPK_FREQ] = NUM_ROW("dsa_indexer_topk_freq", "index_topk_freq", NULL, 1, 4096, 1,
        PAPER_DEFAULT(1)),
    [MEM4D_MODEL_DSA_INDEX_SKIP_OFFSET] = NUM_ROW("dsa_indexer_skip_topk_offset", "index_skip_topk_offset", NULL, 0,
        4096, 0, PAPER_DEFAULT(0)),
    [MEM4D_MODEL_MTP_REPEATED_LAYER] = BOOL_ROW("mtp_use_repeated_layer", NULL, NULL, 0, PAPER_DEFAULT(0)),
    [MEM4D_MODEL_ROUTER_EXPERT_BIAS] = BOOL_ROW("moe_router_expert_bias", "moe_router_enable_expert_bias", NULL, 0),
    [MEM4D_MODEL_ACTIVATION] = ENUM_ROW("activation", "activation_func", NULL, activation_names, 0),
    [MEM4D_MODEL_WINDOW_SIZE] = NUM_ROW("window_size", NULL, NULL, 0, 1u << 24, 0),
    [MEM4D_MODEL_WINDOW_LAYER_FREQ] = NUM_ROW("window_layer_freq", NULL, NULL, 1, 64, 1),
    [MEM4D_MODEL_WINDOW_LAYER_MASK] = NUM_ROW("window_layer_mask", NULL, NULL, 1, UINT64_MAX, 1),
    [MEM4D_MODEL_WINDOW_FIRST_FULL] = NUM_ROW("window_first_full_layers", NULL, NULL, 0, 4096, 0),
    [MEM4D_MODEL_ATTENTION_CHUNK_SIZE] = NUM_ROW("attention_chunk_size", "fixed_attn_block_size", NULL, 0, 1u << 24, 0),
    [MEM4D_MODEL_MOE_LATENT_SIZE] = NUM_ROW("moe_latent_size", NULL, NULL, 0, 1u << 20, 0, PAPER_DEFAULT(0)),
};
M4D_TABLE_ROWS(m4d_model_params, M4D_MODEL_NPARAM);

/* vpp: interleaving is Megatron-Core's schedule and torch.distributed.pipelining's
 * (torchtitan); DeepSpeed's PipelineEngine runs its TrainSchedule (1F1B,
 * deepspeed/runtime/pipe/schedule.py) and nanotron its AllForwardAllBackward
 * and OneForwardOneBackward engines (parallel/pipeline_parallel/engine.py),
 * one model chunk a rank. */
const struct m4d_param_desc m4d_layout_params[] = {
    [MEM4D_LAYOUT_TP] = NUM_ROW("tp", "tensor_model_parallel_size", NULL, 1, 4096, 1),
    [MEM4D_LAYOUT_CP] = NUM_ROW("cp", "context_parallel_size", NULL, 1, 4096, 1),
    [MEM4D_LAYOUT_PP] = NUM_ROW("pp", "pipeline_model_parallel_size", NULL, 1, M4D_MAX_STAGES, 1),
    [MEM4D_LAYOUT_DP] = NUM_ROW("dp", "data_parallel_size", NULL, 0, 1u << 24, 0),
    [MEM4D_LAYOUT_WORLD] = NUM_ROW("world", "world_size", NULL, 0, 1u << 24, 0),
    [MEM4D_LAYOUT_MICRO_BATCH] = NUM_ROW("mbs", "micro_batch_size", NULL, 1, 1u << 16, 1),
    [MEM4D_LAYOUT_GLOBAL_BATCH] = NUM_ROW("gbs", "global_batch_size", NULL, 0, UINT64_C(1) << 32, 0),
    [MEM4D_LAYOUT_SEQ_LENGTH] = NUM_ROW("seq", "seq_length", "sequence_length", 1, 1u << 24, 0),
    [MEM4D_LAYOUT_SEQUENCE_PARALLEL] = BOOL_ROW("sp", "sequence_parallel", NULL, 1),
    [MEM4D_LAYOUT_DIST_OPT] = BOOL_ROW("dist_opt", "use_distributed_optimizer", NULL, 1),
    [MEM4D_LAYOUT_MAIN_GRAD_BYTES] = SET_ROW("main_grad_bytes", "grad_bytes", NULL, 2, 4, 4, (1u << 2) | (1u << 4)),
    [MEM4D_LAYOUT_VPP] = NUM_ROW("vpp", "virtual_pipeline_model_parallel_size", NULL, 1, M4D_MAX_STAGES, 1,
        .fw = M4D_FW(MEGATRON) | M4D_FW(TORCHTITAN), PAPER_DEFAULT(1)),
    [MEM4D_LAYOUT_RECOMPUTE] = ENUM_ROW("recompute", "recompute_granularity", NULL, recompute_names, 0,
        .fw = M4D_FW(TORCHTITAN), .fw_values = M4D_VAL(3), .paper = M4D_VAL(0) | M4D_VAL(1)),
    [MEM4D_LAYOUT_RECOMPUTE_METHOD] = ENUM_ROW("recompute_method", NULL, NULL, method_names, 0),
    [MEM4D_LAYOUT_RECOMPUTE_LAYERS] = NUM_ROW("recompute_num_layers", NULL, NULL, 0, 4096, 0),
    [MEM4D_LAYOUT_FLASH_ATTN] = BOOL_ROW("flash_attn", "use_flash_attn", NULL, 1, PAPER_DEFAULT(1)),
    [MEM4D_LAYOUT_MODE] = ENUM_ROW("mode", NULL, NULL, mode_names, 0),
    [MEM4D_LAYOUT_VOCAB_DIVISOR] = NUM_ROW("make_vocab_size_divisible_by", "vocab_divisor", NULL, 1, 1u << 20, 128),
    [MEM4D_LAYOUT_ZERO_STAGE] = NUM_ROW("zero_stage", NULL, NULL, 0, 3, 0,
        .fw = M4D_FW(MEGATRON) | M4D_FW(TORCHTITAN) | M4D_FW(DEEPSPEED),
        .fw_values = M4D_VAL(2) | M4D_VAL(3), .paper = M4D_VAL(0) | M4D_VAL(1)),
    [MEM4D_LAYOUT_PARAM_BYTES] = SET_ROW("param_bytes", NULL, NULL, 2, 4, 2, (1u << 2) | (1u << 4), PAPER_DEFAULT(2)),
    [MEM4D_LAYOUT_OPT_STATE_BYTES] = SET_ROW("optimizer_state_bytes", NULL, NULL, 1, 4, 4,
                                             (1u << 1) | (1u << 2) | (1u << 4), PAPER_DEFAULT(4)),
    [MEM4D_LAYOUT_MASTER_WEIGHT_BYTES] = SET_ROW("master_weight_bytes", NULL, NULL, 0, 4, 4,
                                                 (1u << 0) | (1u << 2) | (1u << 4), PAPER_DEFAULT(4)),
    [MEM4D_LAYOUT_FP8] = BOOL_ROW("fp8", NULL, NULL, 0, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_EP] = NUM_ROW("ep", "expert_model_parallel_size", NULL, 1, 4096, 1, PAPER_DEFAULT(1)),
    [MEM4D_LAYOUT_FIRST_STAGE_LAYERS] = NUM_ROW("decoder_first_pipeline_num_layers", "first_stage_layers", NULL, 0, 4096, 0,
        PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_LAST_STAGE_LAYERS] = NUM_ROW("decoder_last_pipeline_num_layers", "last_stage_layers", NULL, 0, 4096, 0,
        PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_OVERLAP_GRAD_REDUCE] = BOOL_ROW("overlap_grad_reduce", NULL, NULL, 0),
    [MEM4D_LAYOUT_OVERLAP_PARAM_GATHER] = BOOL_ROW("overlap_param_gather", NULL, NULL, 0),
    [MEM4D_LAYOUT_BUCKET_SIZE] = NUM_ROW("ddp_bucket_size", "bucket_size", "reduce_bucket_size", 0, UINT64_C(1) << 40, 0),
    [MEM4D_LAYOUT_HIDDEN_DROPOUT] = BOOL_ROW("hidden_dropout", NULL, NULL, 0, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_ATTENTION_DROPOUT] = BOOL_ROW("attention_dropout", NULL, NULL, 0, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_CROSS_ENTROPY_FUSION] = BOOL_ROW("cross_entropy_fusion", "cross_entropy_loss_fusion", NULL, 0,
        PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_DISTRIBUTE_SAVED_ACTIVATIONS] = BOOL_ROW("distribute_saved_activations",
                                                           "distribute_checkpointed_activations", NULL, 0,
        PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_FP8_PARAM_GATHER] = BOOL_ROW("fp8_param_gather", NULL, NULL, 0, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_EXP_AVG_SQ_BYTES] = SET_ROW("exp_avg_sq_bytes", NULL, NULL, 0, 4, 0,
                                              (1u << 0) | (1u << 1) | (1u << 2) | (1u << 4),
        .paper = M4D_VAL(0) | M4D_VAL(4)),
    [MEM4D_LAYOUT_PRECISION_AWARE_OPTIMIZER] = BOOL_ROW("precision_aware_optimizer",
                                                        "use_precision_aware_optimizer", NULL, 0, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_ETP] = NUM_ROW("etp", "expert_tensor_parallel_size", NULL, 0, 4096, 0),
    [MEM4D_LAYOUT_RECOMPUTE_MODULES] = NUM_ROW("recompute_modules", NULL, NULL, 0, 127, 1, PAPER_DEFAULT(1)),
    [MEM4D_LAYOUT_MOE_ROUTER_BYTES] = SET_ROW("moe_router_bytes", NULL, NULL, 4, 8, 4, (1u << 4) | (1u << 8)),
    [MEM4D_LAYOUT_TP_COMM_OVERLAP] = BOOL_ROW("tp_comm_overlap", "async_tp", NULL, 0, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_OPTIMIZER_OFFLOAD_PPM] = NUM_ROW("optimizer_offload_ppm", NULL, NULL, 0, 1000000, 0,
        PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_FRAMEWORK] = ENUM_ROW("framework", NULL, NULL, framework_names, 0, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_RESHARD_AFTER_FORWARD] = ENUM_ROW("reshard_after_forward", NULL, NULL, reshard_names, 0, TORCHTITAN_ONLY),
    [MEM4D_LAYOUT_DP_REPLICATE] = NUM_ROW("dp_replicate", "data_parallel_replicate_degree", NULL, 1, 1u << 24, 1,
        TORCHTITAN_ONLY, PAPER_DEFAULT(1)),
    [MEM4D_LAYOUT_RECOMPUTE_EVERY] = NUM_ROW("recompute_every", "selective_ac_option", NULL, 0, 4096, 0, TORCHTITAN_ONLY),
    [MEM4D_LAYOUT_FLOAT8] = ENUM_ROW("float8", NULL, NULL, float8_names, 0, TORCHTITAN_ONLY, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_FP8_ALL_GATHER] = BOOL_ROW("fp8_all_gather", "enable_fsdp_float8_all_gather", NULL, 0,
        TORCHTITAN_ONLY, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_ALLGATHER_BUCKET_SIZE] = NUM_ROW("allgather_bucket_size", NULL, NULL, 0, UINT64_C(1) << 40, 0,
        .fw = M4D_FW(DEEPSPEED)),
    [MEM4D_LAYOUT_PREFETCH_BUCKET_SIZE] = NUM_ROW("stage3_prefetch_bucket_size", "prefetch_bucket_size", NULL, 0,
                                                  UINT64_C(1) << 40, 0, .fw = M4D_FW(DEEPSPEED)),
    [MEM4D_LAYOUT_MAX_LIVE_PARAMETERS] = NUM_ROW("stage3_max_live_parameters", "max_live_parameters", NULL, 0,
                                                 UINT64_C(1) << 40, 0, .fw = M4D_FW(DEEPSPEED)),
    [MEM4D_LAYOUT_OFFLOAD] = ENUM_ROW("offload", NULL, NULL, offload_names, 0,
        .fw = M4D_FW(DEEPSPEED), PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_CONTIGUOUS_GRADIENTS] = BOOL_ROW("contiguous_gradients", NULL, NULL, 1, .fw = M4D_FW(DEEPSPEED)),
    [MEM4D_LAYOUT_PIPELINE_SCHEDULE] = ENUM_ROW("pipeline_schedule", "pp_engine", NULL, schedule_names, 0,
        PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_COMPILE] = ENUM_ROW("compile", "torch_compile", NULL, compile_names, 0, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_EXPANDABLE_SEGMENTS] = BOOL_ROW("expandable_segments", NULL, NULL, 0, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_OPTIMIZER_MOMENTS] = NUM_ROW("optimizer_moments", NULL, NULL, 0, 2, 2,
        MEGATRON_ONLY, PAPER_DEFAULT(2)),
    [MEM4D_LAYOUT_OVERLAPPED_DIST_OPT] = BOOL_ROW("overlapped_dist_opt", "overlapped_distributed_optimizer", NULL, 0,
        MEGATRON_ONLY, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_DIST_OPT_INSTANCES] = NUM_ROW("dist_opt_instances", "num_distributed_optimizer_instances", NULL, 1,
                                                1u << 24, 1, MEGATRON_ONLY, PAPER_DEFAULT(1)),
    [MEM4D_LAYOUT_MOE_CAPACITY_FACTOR_PPM] = NUM_ROW("moe_capacity_factor_ppm", NULL, NULL, 0, 1000000000, 0,
        MEGATRON_ONLY, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_MOE_PAD_TO_CAPACITY] = BOOL_ROW("moe_pad_to_capacity", "moe_pad_expert_input_to_capacity", NULL, 0,
        MEGATRON_ONLY, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_ACTIVATION_OFFLOAD_LAYERS] = NUM_ROW("activation_offload_layers", "cpu_offloading_num_layers", NULL,
                                                       0, 4096, 0, MEGATRON_ONLY, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_PP_RETURN_OUTPUTS] = BOOL_ROW("pp_return_outputs", "return_outputs", NULL, 0,
        TORCHTITAN_ONLY, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_FIRST_CHUNK_FEWER_LAYERS] = NUM_ROW("first_chunk_fewer_layers", NULL, NULL, 0, 4096, 0,
        PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_LAST_CHUNK_FEWER_LAYERS] = NUM_ROW("last_chunk_fewer_layers", NULL, NULL, 0, 4096, 0,
        PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_MOE_DISPATCHER] = ENUM_ROW("moe_dispatcher", "moe_token_dispatcher_type", NULL, dispatcher_names, 0,
        MEGATRON_ONLY, PAPER_DEFAULT(0), .experimental = M4D_VAL(MEM4D_MOE_DISPATCHER_DEEPEP) | M4D_VAL(MEM4D_MOE_DISPATCHER_HYBRIDEP)),
    [MEM4D_LAYOUT_MOE_DISPATCHER_SMS] = NUM_ROW("moe_dispatcher_sms", "moe_flex_dispatcher_num_sms", NULL, 2, 256, 20, EXPERIMENTAL),
    [MEM4D_LAYOUT_MOE_PAD_MULTIPLE] = NUM_ROW("moe_pad_multiple", NULL, NULL, 0, 256, 0,
        MEGATRON_ONLY, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_MOE_EP_OVERLAP] = BOOL_ROW("moe_ep_overlap", "overlap_moe_expert_parallel_comm", NULL, 0,
        MEGATRON_ONLY, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_DELAY_WGRAD] = BOOL_ROW("delay_wgrad", "delay_wgrad_compute", NULL, 0,
        MEGATRON_ONLY, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_CUDA_GRAPH] = ENUM_ROW("cuda_graph", "cuda_graph_impl", NULL, cuda_graph_names, 0,
        MEGATRON_ONLY, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_CUDA_GRAPH_SCOPE] = NUM_ROW("cuda_graph_scope", "cuda_graph_modules", NULL, 0, 31, 0, MEGATRON_ONLY, EXPERIMENTAL),
    [MEM4D_LAYOUT_FP32_RESIDUAL] = BOOL_ROW("fp32_residual", "fp32_residual_connection", NULL, 0,
        MEGATRON_ONLY, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_FSDP_DOUBLE_BUFFER] = BOOL_ROW("fsdp_double_buffer", NULL, NULL, 0, MEGATRON_ONLY, PAPER_DEFAULT(0), EXPERIMENTAL),
    [MEM4D_LAYOUT_OFFLOAD_MODULES] = NUM_ROW("offload_modules", NULL, NULL, 0, 127, 0, MEGATRON_ONLY, PAPER_DEFAULT(0), EXPERIMENTAL),
    [MEM4D_LAYOUT_ACTIVATION_OFFLOAD_FRACTION_PPM] = PPM_ROW("activation_offload_fraction_ppm", NULL, NULL, 0,
                                                             1000000, 1000000, MEGATRON_ONLY, EXPERIMENTAL),
    [MEM4D_LAYOUT_DEFER_EMBEDDING_WGRAD] = BOOL_ROW("defer_embedding_wgrad", "defer_embedding_wgrad_compute", NULL, 0,
        MEGATRON_ONLY, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_WGRAD_DEFERRAL_LIMIT] = NUM_ROW("wgrad_deferral_limit", NULL, NULL, 0, 1u << 24, 0, MEGATRON_ONLY),
    [MEM4D_LAYOUT_ALLGATHER_GROUPS] = BOOL_ROW("allgather_groups", "create_all_gather_group", NULL, 0, MEGATRON_ONLY, EXPERIMENTAL),
    [MEM4D_LAYOUT_MOE_IMBALANCE_PPM] = NUM_ROW("moe_imbalance_ppm", NULL, NULL, 0, 64000000, 0),
    [MEM4D_LAYOUT_MOE_GROUPED_GEMM] = BOOL_ROW("moe_grouped_gemm", NULL, NULL, 1),
    [MEM4D_LAYOUT_MOE_SHARED_EXPERT_OVERLAP] = BOOL_ROW("moe_shared_expert_overlap", NULL, NULL, 0, MEGATRON_ONLY,
        PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_OPTIMIZER_STATE_OFFLOAD] = BOOL_ROW("optimizer_state_offload", NULL, NULL, 0, MEGATRON_ONLY,
        PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_LOGPROB_LOSS] = NUM_ROW("logprob_loss", NULL, NULL, 0, 2, 0, MEGATRON_ONLY, PAPER_DEFAULT(0),
        EXPERIMENTAL),
    [MEM4D_LAYOUT_FP8_RECIPE] = ENUM_ROW("fp8_recipe", NULL, NULL, fp8_recipe_names, 0, MEGATRON_ONLY, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_CROSS_ENTROPY_IMPL] = ENUM_ROW("cross_entropy_impl", NULL, NULL, ce_impl_names, 0, MEGATRON_ONLY,
        PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_CP_COMM_TYPE] = ENUM_ROW("cp_comm_type", NULL, NULL, cp_comm_names, 0, PAPER_DEFAULT(0)),
    [MEM4D_LAYOUT_OVERLAP_P2P_COMM] = BOOL_ROW("overlap_p2p_comm", "overlap_p2p_communication", NULL, 0, PAPER_DEFAULT(0)),
};
M4D_TABLE_ROWS(m4d_layout_params, M4D_LAYOUT_NPARAM);

/* Device constants' defaults are documented in doc/formulas.md and
 * doc/full-model.md; presets override the hardware figures. */
const struct m4d_param_desc m4d_device_params[] = {
    [MEM4D_DEVICE_MEMORY_BYTES] = BYTES_ROW("memory_bytes", "memory", NULL, 1, UINT64_C(1) << 50, 0),
    [MEM4D_DEVICE_PEAK_FLOPS] = FLOPS_ROW("peak_flops", "peak_bf16_flops", NULL, 0, UINT64_C(1) << 60, 0),
    [MEM4D_DEVICE_PEAK_FP8_FLOPS] = FLOPS_ROW("peak_fp8_flops", NULL, NULL, 0, UINT64_C(1) << 60, 0),
    [MEM4D_DEVICE_HBM_BANDWIDTH] = RATE_ROW("hbm_bandwidth", NULL, NULL, 0, UINT64_C(1) << 50, 0),
    [MEM4D_DEVICE_INTRA_NODE_BANDWIDTH] = RATE_ROW("intra_node_bandwidth", NULL, NULL, 0, UINT64_C(1) << 50, 0),
    [MEM4D_DEVICE_INTER_NODE_BANDWIDTH] = RATE_ROW("inter_node_bandwidth", NULL, NULL, 0, UINT64_C(1) << 50, 0),
    [MEM4D_DEVICE_GPUS_PER_NODE] = NUM_ROW("gpus_per_node", NULL, NULL, 1, 1024, 8),
    [MEM4D_DEVICE_FIT_THRESHOLD_PPM] = PPM_ROW("fit_threshold_ppm", NULL, NULL, 1, 1000000, 800000),
    [MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM] = PPM_ROW("matmul_efficiency_ppm", NULL, NULL, 1, 1000000, 600000),
    [MEM4D_DEVICE_COMM_EFFICIENCY_PPM] = PPM_ROW("comm_efficiency_ppm", NULL, NULL, 1, 1000000, 700000),
    [MEM4D_DEVICE_INTRA_NODE_LATENCY_NS] = NS_ROW("intra_node_latency_ns", NULL, NULL, 0, UINT64_C(1) << 40, 5000),
    [MEM4D_DEVICE_INTER_NODE_LATENCY_NS] = NS_ROW("inter_node_latency_ns", NULL, NULL, 0, UINT64_C(1) << 40, 15000),
    [MEM4D_DEVICE_CUDA_CONTEXT_BYTES] = BYTES_ROW("cuda_context_bytes", NULL, NULL, 0, UINT64_C(1) << 40, 512 * MiB),
    [MEM4D_DEVICE_NCCL_BYTES_PER_GROUP] = BYTES_ROW("nccl_bytes_per_group", NULL, NULL, 0, UINT64_C(1) << 40, 128 * MiB),
    [MEM4D_DEVICE_ALLOCATOR_OVERHEAD_PPM] = PPM_ROW("allocator_overhead_ppm", NULL, NULL, 0, 1000000, 40000),
    [MEM4D_DEVICE_WORKSPACE_BYTES] = BYTES_ROW("workspace_bytes", NULL, NULL, 0, UINT64_C(1) << 40, 256 * MiB),
    [MEM4D_DEVICE_SM_COUNT] = NUM_ROW("sm_count", "sms", NULL, 0, 1u << 16, 0),
    [MEM4D_DEVICE_NVLINK_DOMAIN] = NUM_ROW("nvlink_domain", "nvlink_domain_size", NULL, 0, 1u << 20, 0),
    [MEM4D_DEVICE_NICS_PER_NODE] = NUM_ROW("nics_per_node", NULL, NULL, 0, 1024, 0),
    [MEM4D_DEVICE_NIC_BANDWIDTH] = RATE_ROW("nic_bandwidth", NULL, NULL, 0, UINT64_C(1) << 50, 0),
    [MEM4D_DEVICE_KERNEL_OVERHEAD_NS] = NS_ROW("kernel_overhead_ns", NULL, NULL, 0, UINT64_C(1) << 40, 2000),
    [MEM4D_DEVICE_FP8_EFFICIENCY_PPM] = PPM_ROW("fp8_efficiency_ppm", NULL, NULL, 1, 1000000, 540000),
    [MEM4D_DEVICE_FULL_FIT_THRESHOLD_PPM] = PPM_ROW("full_fit_threshold_ppm", NULL, NULL, 1, 1000000, 850000),
    [MEM4D_DEVICE_HOST_BANDWIDTH] = RATE_ROW("host_bandwidth", "host_link_bandwidth", NULL, 0, UINT64_C(1) << 50, 0),
    [MEM4D_DEVICE_STACK] = ENUM_ROW("stack", "software_stack", NULL, stack_names, 0),
    [MEM4D_DEVICE_ATTENTION_KERNEL] = ENUM_ROW("attention_kernel", "attention_backend", NULL, attention_names, 0),
    [MEM4D_DEVICE_GEMM_LIBRARY] = ENUM_ROW("gemm_library", NULL, NULL, gemm_library_names, 0),
    [MEM4D_DEVICE_MICROBATCH_OVERHEAD_NS] = NS_ROW("microbatch_overhead_ns", NULL, NULL, 0, UINT64_C(1) << 40, 0),
    [MEM4D_DEVICE_GRAD_ACCUM_BYTES] = NUM_ROW("grad_accum_bytes", NULL, NULL, 0, 64, 0),
    [MEM4D_DEVICE_ATTENTION_EFFICIENCY_PPM] = PPM_ROW("attention_efficiency_ppm", NULL, NULL, 0, 2000000, 0),
    [MEM4D_DEVICE_CALIBRATED_RUNS] = NUM_ROW("calibrated_runs", NULL, NULL, 0, 1u << 20, 0),
    [MEM4D_DEVICE_SPEED_BAND_LOW_PPM] = PPM_ROW("speed_band_low_ppm", NULL, NULL, 0, 1000000, 0),
    [MEM4D_DEVICE_SPEED_BAND_HIGH_PPM] = PPM_ROW("speed_band_high_ppm", NULL, NULL, 0, 100000000, 0),
    [MEM4D_DEVICE_BOARD_POWER_W] = NUM_ROW("board_power_w", "tdp_w", NULL, 0, 100000, 0),
    [MEM4D_DEVICE_POWER_LIMIT_W] = NUM_ROW("power_limit_w", "power_cap_w", NULL, 0, 100000, 0),
    [MEM4D_DEVICE_HBM_EFFICIENCY_PPM] = PPM_ROW("hbm_efficiency_ppm", NULL, NULL, 0, 1000000, 0),
    [MEM4D_DEVICE_MOE_LOAD_SPREAD_PPM] = PPM_ROW("moe_load_spread_ppm", NULL, NULL, 0, 4000000, 0),
    [MEM4D_DEVICE_INTER_NODE_EFFICIENCY_PPM] = PPM_ROW("inter_node_efficiency_ppm", NULL, NULL, 0, 1000000, 0),
    [MEM4D_DEVICE_PYTORCH_FSDP] = BOOL_ROW("pytorch_fsdp", NULL, NULL, 0),
    [MEM4D_DEVICE_PEAK_FP4_FLOPS] = FLOPS_ROW("peak_fp4_flops", "peak_nvfp4_flops", NULL, 0, UINT64_C(1) << 60, 0),
};
M4D_TABLE_ROWS(m4d_device_params, M4D_DEVICE_NPARAM);

static bool allowed(const struct m4d_param_desc *d, uint64_t value)
{
    if (value < d->min || value > d->max)
        return false;
    return d->allowed == 0 || (value < 32 && (d->allowed >> value) & 1u);
}

mem4d_status m4d_param_set(const struct m4d_param_desc *table, size_t n, uint64_t *v,
                           int key, uint64_t value)
{
    if (key < 0 || (size_t)key >= n)
        return MEM4D_E_INVALID_ARG;
    if (!allowed(&table[key], value))
        return MEM4D_E_RANGE;
    v[key] = value;
    return MEM4D_OK;
}

mem4d_status m4d_param_set_str(const struct m4d_param_desc *table, size_t n, uint64_t *v,
                               const char *name, const char *text)
{
    if (!name || !text)
        return MEM4D_E_INVALID_ARG;
    int key = m4d_param_lookup(table, n, name);
    if (key < 0)
        return MEM4D_E_UNKNOWN_KEY;
    uint64_t value;
    mem4d_status st = m4d_parse_value(&table[key], text, &value);
    if (st != MEM4D_OK)
        return st;
    return m4d_param_set(table, n, v, key, value);
}

mem4d_status m4d_param_bounds(const struct m4d_param_desc *table, size_t n, int key,
                              uint64_t *min, uint64_t *max)
{
    if (key < 0 || (size_t)key >= n)
        return MEM4D_E_INVALID_ARG;
    if (min)
        *min = table[key].min;
    if (max)
        *max = table[key].max;
    return MEM4D_OK;
}

void m4d_param_defaults(const struct m4d_param_desc *table, size_t n, uint64_t *v)
{
    for (size_t i = 0; i < n; i++)
        v[i] = table[i].def;
}

mem4d_status m4d_param_kind(const struct m4d_param_desc *table, size_t n, int key, mem4d_param_kind *kind)
{
    if (key < 0 || (size_t)key >= n || !kind)
        return MEM4D_E_INVALID_ARG;
    *kind = table[key].kind;
    return MEM4D_OK;
}

mem4d_status m4d_param_default(const struct m4d_param_desc *table, size_t n, int key, uint64_t *value)
{
    if (key < 0 || (size_t)key >= n || !value)
        return MEM4D_E_INVALID_ARG;
    *value = table[key].def;
    return MEM4D_OK;
}

/* Is value v in a value set (bit v; bit 63 for every v >= 63)? */
static bool in_set(uint64_t set, uint64_t v) { return (set >> (v < 63 ? v : 63)) & 1; }

bool m4d_param_applies(const struct m4d_param_desc *d, uint64_t value, mem4d_framework fw, mem4d_mode mode,
                       char *why, size_t n)
{
    bool fw_ok = !d->fw || value == d->def || (d->fw & (1u << fw)) || (d->fw_values && !in_set(d->fw_values, value));
    bool paper_ok = mode != MEM4D_MODE_PAPER || !d->paper || in_set(d->paper, value);
    if (fw_ok && paper_ok)
        return true; /* the common case: no words made */
    char val[32];
    if (d->values && value < d->max + 1)
        m4d_strlcpy(val, d->values[value], sizeof val);
    else
        m4d_msg(val, sizeof val, "%llu", (unsigned long long)value);
    if (!fw_ok) {
        char list[64] = "";
        unsigned left = (unsigned)__builtin_popcount(d->fw);
        for (unsigned f = 0; framework_names[f]; f++)
            if (d->fw & (1u << f)) {
                left--;
                m4d_msg(list + strlen(list), sizeof list - strlen(list), "%s%s",
                        !list[0] ? "" : left ? ", " : " or ", framework_names[f]);
            }
        m4d_msg(why, n, "%s %s is modelled for framework %s only, not %s", d->name, val, list, framework_names[fw]);
        return false;
    }
    m4d_msg(why, n, "paper mode does not model %s %s; use full mode", d->name, val);
    return false;
}

int m4d_params_apply(const struct m4d_param_desc *table, size_t n, const uint64_t *v, int skip, mem4d_framework fw,
                     mem4d_mode mode, char *why, size_t why_size)
{
    for (size_t k = 0; k < n; k++) /* a default applies everywhere (the rows hold that) */
        if (v[k] != table[k].def && (int)k != skip && !m4d_param_applies(&table[k], v[k], fw, mode, why, why_size))
            return (int)k;
    return -1;
}

const char *m4d_param_value_name(const struct m4d_param_desc *table, size_t n, int key, uint64_t value)
{
    if (key < 0 || (size_t)key >= n || !table[key].values)
        return NULL;
    const char *const *names = table[key].values;
    for (uint64_t i = 0; names[i]; i++)
        if (i == value)
            return names[i];
    return NULL;
}

/* --- the tables described to callers (tools and bindings build on these) --- */

/* The *_param_applies() reason for MEM4D_E_INVALID_ARG: the first argument
 * out of range (a model key's framework is 0, always valid). */
static mem4d_status invalid_arg(char *why, size_t n, const char *what, unsigned key, unsigned nkeys,
                                unsigned framework, unsigned mode)
{
    if (key >= nkeys)
        m4d_msg(why, n, "%s %u is unknown (%u keys)", what, key, nkeys);
    else if (framework >= M4D_LEN(framework_names) - 1)
        m4d_msg(why, n, "framework %u is unknown", framework);
    else
        m4d_msg(why, n, "mode %u is unknown", mode);
    return MEM4D_E_INVALID_ARG;
}

mem4d_status mem4d_layout_param_applies(mem4d_layout_param key, uint64_t value, mem4d_framework framework,
                                        mem4d_mode mode, char *why, size_t why_size)
{
    m4d_msg(why, why_size, "%s", ""); /* what it says when the value applies */
    if ((unsigned)key >= M4D_LAYOUT_NPARAM || (unsigned)framework >= M4D_LEN(framework_names) - 1 ||
        (unsigned)mode >= M4D_NMODES)
        return invalid_arg(why, why_size, "layout key", (unsigned)key, M4D_LAYOUT_NPARAM, (unsigned)framework,
                           (unsigned)mode);
    const struct m4d_param_desc *d = &m4d_layout_params[key];
    if (m4d_param_applies(d, value, framework, MEM4D_MODE_FULL, why, why_size))
        return m4d_param_applies(d, value, framework, mode, why, why_size) ? MEM4D_OK : MEM4D_E_UNSUPPORTED;
    return MEM4D_E_CONFLICT;
}

mem4d_status mem4d_model_param_applies(mem4d_model_param key, uint64_t value, mem4d_mode mode, char *why,
                                       size_t why_size)
{
    m4d_msg(why, why_size, "%s", "");
    if ((unsigned)key >= M4D_MODEL_NPARAM || (unsigned)mode >= M4D_NMODES)
        return invalid_arg(why, why_size, "model key", (unsigned)key, M4D_MODEL_NPARAM, 0, (unsigned)mode);
    const struct m4d_param_desc *d = &m4d_model_params[key];
    return m4d_param_applies(d, value, MEM4D_FRAMEWORK_MEGATRON, mode, why, why_size) ? MEM4D_OK
                                                                                       : MEM4D_E_UNSUPPORTED;
}

int mem4d_layout_param_experimental(mem4d_layout_param key, uint64_t value)
{
    if ((unsigned)key >= M4D_LAYOUT_NPARAM)
        return 0;
    return in_set(m4d_layout_params[key].experimental, value);
}

mem4d_status mem4d_model_param_kind(mem4d_model_param key, mem4d_param_kind *kind)
{
    return m4d_param_kind(m4d_model_params, M4D_MODEL_NPARAM, (int)key, kind);
}

mem4d_status mem4d_model_param_default(mem4d_model_param key, uint64_t *value)
{
    return m4d_param_default(m4d_model_params, M4D_MODEL_NPARAM, (int)key, value);
}

const char *mem4d_model_value_name(mem4d_model_param key, uint64_t value)
{
    return m4d_param_value_name(m4d_model_params, M4D_MODEL_NPARAM, (int)key, value);
}

mem4d_status mem4d_layout_param_kind(mem4d_layout_param key, mem4d_param_kind *kind)
{
    return m4d_param_kind(m4d_layout_params, M4D_LAYOUT_NPARAM, (int)key, kind);
}

mem4d_status mem4d_layout_param_default(mem4d_layout_param key, uint64_t *value)
{
    return m4d_param_default(m4d_layout_params, M4D_LAYOUT_NPARAM, (int)key, value);
}

mem4d_status mem4d_device_param_kind(mem4d_device_param key, mem4d_param_kind *kind)
{
    return m4d_param_kind(m4d_device_params, M4D_DEVICE_NPARAM, (int)key, kind);
}

mem4d_status mem4d_device_param_default(mem4d_device_param key, uint64_t *value)
{
    return m4d_param_default(m4d_device_params, M4D_DEVICE_NPARAM, (int)key, value);
}

const char *mem4d_device_value_name(mem4d_device_param key, uint64_t value)
{
    return m4d_param_value_name(m4d_device_params, M4D_DEVICE_NPARAM, (int)key, value);
}
