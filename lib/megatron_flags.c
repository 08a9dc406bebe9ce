/*
 * The Megatron-LM flag table: every flag the reader knows, as data (like
 * presets.c). A row says how the flag is read and where it goes: a modelled
 * slot (import_megatron.c gives it its meaning, and an INT row may name the
 * model key it sets as given), "skip" (no effect on per-GPU memory) or
 * "warn" (changes memory in a way not modelled, and how). One row per flag,
 * in alphabetical order for the reader; tests/test-import.c feeds skipped
 * flags and expects no warning.
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "import.h"

static const char *const c_norm[] = {"LayerNorm", "RMSNorm", NULL};
static const char *const c_rc_gran[] = {"full", "selective", NULL};
static const char *const c_rc_method[] = {"uniform", "block", NULL};
static const char *const c_impl[] = {"local", "transformer_engine", NULL};
static const char *const c_backend[] = {"flash", "fused", "unfused", "local", "auto", NULL};
/* Megatron-LM's names, then BigScience Megatron-DeepSpeed's (absolute, rotary, alibi). */
static const char *const c_pos[] = {"learned_absolute", "rope", "mrope", "relative", "none", "absolute", "rotary", "alibi", NULL};
static const char *const c_fp8[] = {"e4m3", "hybrid", NULL};
/* Megatron-Core's fp4 (--fp4-format) and fp4_recipe (--fp4-recipe) choices
 * (transformer_config.py at NVIDIA/Megatron-LM@d98e8a64). */
static const char *const c_fp4[] = {"e2m1", NULL};
static const char *const c_fp4_recipe[] = {"nvfp4", "custom", NULL};
static const char *const c_sharding[] = {"no_shard", "optim", "optim_grads", "optim_grads_params", NULL};
static const char *const c_optimizer[] = {"adam", "sgd", NULL};
/* In the order of the recompute_modules bits (lib/private.h M4D_RC_*). */
static const char *const c_rc_modules[] = {"core_attn", "mlp", "layernorm", "moe_act", "shared_experts",
                                           "mla_up_proj", "moe", NULL};
static const char *const c_router_dtype[] = {"fp32", "fp64", NULL};
static const char *const c_ce_impl[] = {"native", "te", NULL};
static const char *const c_grad_dtype[] = {"fp32", "bf16", NULL};
static const char *const c_param_dtype[] = {"fp32", "fp16", NULL};
static const char *const c_state_dtype[] = {"fp32", "fp16", "bf16", "fp8", NULL};
static const char *const c_cuda_graph[] = {"none", "local", "transformer_engine", "full_iteration", NULL};
/* In the order of the M4D_SCOPE_* bits (import_megatron.c). */
static const char *const c_graph_scope[] = {"full", "attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba",
                                            "full_iteration", NULL};
static const char *const c_dispatcher[] = {"allgather", "alltoall", "flex", "alltoall_seq", NULL};
static const char *const c_flex_backend[] = {"deepep", "hybridep", "ncclep", NULL};
/* In the order of the M4D_OFFLOAD_* bits (lib/private.h), then the two not modelled. */
static const char *const c_offload_modules[] = {"attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm",
                                                "expert_fc1", "moe_act", "fused_group_mlp", "gdp_qkv", NULL};
static const char *const c_fsdp_dtype[] = {"fp32", "bf16", "fp16", "auto", NULL};
/* in the order of the layout key fp8_recipe's values */
static const char *const c_fp8_recipe[] = {"delayed", "tensorwise", "mxfp8", "blockwise", "custom", NULL};
/* Megatron-Core TransformerConfig.softmax_type; "learnable" is gpt-oss's per-head sink. */
static const char *const c_softmax[] = {"vanilla", "off-by-one", "learnable", NULL};
/* Transformer Engine's cp_comm_type names (attn_forward_func_with_cp, context_parallel.py at
 * NVIDIA/TransformerEngine@d0067d0d), then "allgather", the spelling of Megatron-LM's --help,
 * in the order of M4D_CP_* (import.h). */
static const char *const c_cp_comm[] = {"p2p", "all_gather", "allgather", "a2a", "a2a+p2p", NULL};

#define INT_ROW(f, slot, key) {f, M4D_FLAG_INT, slot, key, NULL, NULL}
#define SWITCH_ROW(f, slot) {f, M4D_FLAG_SWITCH, slot, -1, NULL, NULL}
#define WORD_ROW(f, slot, choices) {f, M4D_FLAG_WORD, slot, -1, choices, NULL}
#define REAL_ROW(f, slot) {f, M4D_FLAG_REAL, slot, -1, NULL, NULL}
#define TEXT_ROW(f, slot) {f, M4D_FLAG_TEXT, slot, -1, NULL, NULL}
#define BITS_ROW(f, slot, choices) {f, M4D_FLAG_BITS, slot, -1, choices, NULL}
#define SKIP_ROW(f) {f, M4D_FLAG_SKIP, -1, -1, NULL, NULL}
#define WARN_ROW(f, why) {f, M4D_FLAG_WARN, -1, -1, NULL, why}

const struct m4d_megatron_flag m4d_megatron_flags[] = {
    SKIP_ROW("DDP-impl"),
    SWITCH_ROW("RMSNorm", MF_RMSNORM_FORK),
    SKIP_ROW("abort-on-unmet-fused-kernel-constraints"),
    SWITCH_ROW("account-for-embedding-in-pipeline-split", MF_ACCOUNT_EMB),
    SWITCH_ROW("account-for-loss-in-pipeline-split", MF_ACCOUNT_LOSS),
    SWITCH_ROW("accumulate-allreduce-grads-in-fp32", MF_ACC_FP32),
    SKIP_ROW("activation-func-clamp-value"), /* gpt-oss clamps the GLU inputs: no tensor more */
    REAL_ROW("activation-offload-fraction", MF_OFFLOAD_FRACTION),
    WORD_ROW("activations-checkpoint-method", MF_ACT_CKPT_METHOD, c_rc_method),
    INT_ROW("activations-checkpoint-num-layers", MF_ACT_CKPT_LAYERS, -1),
    SKIP_ROW("adam-beta1"),
    SKIP_ROW("adam-beta2"),
    SKIP_ROW("adam-eps"),
    SWITCH_ROW("add-bias-linear", MF_ADD_BIAS),
    SWITCH_ROW("add-qkv-bias", MF_QKV_BIAS),
    SKIP_ROW("align-grad-reduce"),
    SKIP_ROW("align-param-gather"),
    SKIP_ROW("apply-layernorm-1p"),
    SKIP_ROW("apply-query-key-layer-scaling"),
    SKIP_ROW("apply-rope-fusion"),
    SKIP_ROW("async-save"),
    WORD_ROW("attention-backend", MF_ATTN_BACKEND, c_backend),
    REAL_ROW("attention-dropout", MF_ATTN_DROPOUT),
    SWITCH_ROW("attention-output-gate", MF_ATTN_OUT_GATE),
    SKIP_ROW("attention-softmax-in-fp32"),
    SKIP_ROW("auto-detect-ckpt-format"),
    WARN_ROW("batch-size", "is no longer accepted by Megatron-LM (use --micro-batch-size)"),
    SKIP_ROW("bert-no-binary-head"),
    SKIP_ROW("beta-fast"),
    SKIP_ROW("beta-slow"),
    SWITCH_ROW("bf16", MF_BF16),
    SKIP_ROW("bias-dropout-fusion"),
    SKIP_ROW("calculate-per-token-loss"),
    SKIP_ROW("causal-lm"),
    SKIP_ROW("check-for-nan-in-loss-and-grad"),
    SKIP_ROW("check-weight-hash-across-dp-replicas-interval"),
    SWITCH_ROW("checkpoint-activations", MF_CKPT_ACT),
    INT_ROW("checkpoint-num-layers", MF_CKPT_NUM_LAYERS, -1),
    SKIP_ROW("ckpt-assume-constant-structure"),
    SKIP_ROW("ckpt-format"),
    SKIP_ROW("ckpt-fully-parallel-load"),
    SKIP_ROW("ckpt-fully-parallel-save"),
    SKIP_ROW("clip-grad"),
    SKIP_ROW("codecarbon-dir"),
    INT_ROW("context-parallel-size", MF_CP, -1),
    BITS_ROW("cp-comm-type", MF_CP_COMM, c_cp_comm), /* one word, or one per layer */
    SWITCH_ROW("cpu-offloading", MF_CPU_OFFLOAD),
    INT_ROW("cpu-offloading-num-layers", MF_CPU_OFFLOAD_LAYERS, -1),
    SWITCH_ROW("create-all-gather-group", MF_AG_GROUP),
    WORD_ROW("cross-entropy-fusion-impl", MF_CE_IMPL, c_ce_impl),
    SWITCH_ROW("cross-entropy-loss-fusion", MF_CE_FUSION),
    WORD_ROW("cuda-graph-impl", MF_CUDA_GRAPH, c_cuda_graph),
    BITS_ROW("cuda-graph-modules", MF_CUDA_GRAPH_MODULES, c_graph_scope),
    BITS_ROW("cuda-graph-scope", MF_CUDA_GRAPH_SCOPE, c_graph_scope),
    SKIP_ROW("cuda-graph-warmup-steps"),
    SKIP_ROW("data-args-path"),
    SKIP_ROW("data-cache-path"),
    SKIP_ROW("data-impl"),
    WORD_ROW("data-parallel-sharding-strategy", MF_DP_SHARDING, c_sharding),
    SKIP_ROW("data-path"),
    SKIP_ROW("dataloader-type"),
    SKIP_ROW("dataset"),
    SKIP_ROW("ddp-average-in-collective"),
    INT_ROW("ddp-bucket-size", MF_BUCKET, -1),
    INT_ROW("decoder-first-pipeline-num-layers", MF_FIRST_LAYERS, -1),
    INT_ROW("decoder-last-pipeline-num-layers", MF_LAST_LAYERS, -1),
    SKIP_ROW("decoupled-lr"),
    SKIP_ROW("decoupled-min-lr"),
    SWITCH_ROW("deepspeed", MF_DEEPSPEED),
    SWITCH_ROW("deepspeed-activation-checkpointing", MF_DS_ACT_CKPT),
    TEXT_ROW("deepspeed-config", MF_DS_CONFIG),
    TEXT_ROW("deepspeed_config", MF_DS_CONFIG),
    SWITCH_ROW("defer-embedding-wgrad-compute", MF_DEFER_EMB_WGRAD),
    SKIP_ROW("delay-offload-until-cuda-graph"), /* when the host copies are queued, not what */
    SWITCH_ROW("delay-wgrad-compute", MF_DELAY_WGRAD),
    WARN_ROW("delta-offload-bytes-across-pp-ranks", "keeps N more bytes of offload groups on the GPU for each pipeline rank; the estimate offloads alike on every rank"),
    SKIP_ROW("deterministic-mode"),
    SKIP_ROW("disable-bf16-reduced-precision-matmul"),
    SWITCH_ROW("disable-bias-linear", MF_NO_BIAS),
    SKIP_ROW("disable-gloo-process-groups"), /* CPU (gloo) communicators */
    SKIP_ROW("disable-straggler-on-startup"),
    SKIP_ROW("dist-ckpt-format"),
    SKIP_ROW("dist-ckpt-strictness"),
    SWITCH_ROW("distribute-checkpointed-activations", MF_DIST_SAVED),
    SWITCH_ROW("distribute-saved-activations", MF_DIST_SAVED),
    SKIP_ROW("distributed-backend"),
    SKIP_ROW("distributed-timeout-minutes"),
    INT_ROW("dsa-indexer-head-dim", MF_DSA_HEAD_DIM, MEM4D_MODEL_DSA_INDEX_HEAD_DIM),
    SKIP_ROW("dsa-indexer-k-norm-fp32"), /* the key norm's input in fp32: d_i elements a token, below a megabyte */
    SKIP_ROW("dsa-indexer-loss-coeff"),
    INT_ROW("dsa-indexer-n-heads", MF_DSA_HEADS, MEM4D_MODEL_DSA_INDEX_HEADS),
    SKIP_ROW("dsa-indexer-rope-interleaved"),
    SKIP_ROW("dsa-indexer-rotate-activation"),
    INT_ROW("dsa-indexer-skip-topk-offset", MF_DSA_OFFSET, MEM4D_MODEL_DSA_INDEX_SKIP_OFFSET),
    INT_ROW("dsa-indexer-topk", MF_DSA_TOPK, MEM4D_MODEL_DSA_INDEX_TOPK),
    INT_ROW("dsa-indexer-topk-freq", MF_DSA_FREQ, MEM4D_MODEL_DSA_INDEX_TOPK_FREQ),
    SKIP_ROW("dsa-indexer-use-sparse-loss"),
    SKIP_ROW("dsa-kernel-backend"), /* the fused kernels keep the same indices and inputs for backward */
    SKIP_ROW("embed-layernorm"), /* 2h parameters and one h-wide activation: below a megabyte */
    SKIP_ROW("empty-unused-memory-level"),
    SWITCH_ROW("enable-cuda-graph", MF_ENABLE_CUDA_GRAPH),
    SKIP_ROW("enable-experimental"),
    SKIP_ROW("enable-gpt-oss"), /* post-training: sets YaRN RoPE, which has no parameters */
    SWITCH_ROW("enable-shared-expert", MF_ENABLE_SHARED), /* Pai-Megatron-Patch and the ROCm fork */
    INT_ROW("encoder-seq-length", MF_ENC_SEQ, -1),
    SKIP_ROW("end-weight-decay"),
    SKIP_ROW("eod-mask-loss"),
    WARN_ROW("ep-overlap-early-attn-memory-release", "frees the overlapped backward's attention earlier; the estimate keeps a whole forward layer beside it, an upper bound"),
    SKIP_ROW("eval-interval"),
    SKIP_ROW("eval-iters"),
    SKIP_ROW("exit-duration-in-mins"),
    SKIP_ROW("exit-interval"),
    SKIP_ROW("exit-on-missing-checkpoint"),
    SKIP_ROW("exit-signal-handler"),
    WORD_ROW("exp-avg-dtype", MF_EXP_AVG_DTYPE, c_state_dtype),
    WORD_ROW("exp-avg-sq-dtype", MF_EXP_AVG_SQ_DTYPE, c_state_dtype),
    TEXT_ROW("experimental-attention-variant", MF_ATTN_VARIANT),
    TEXT_ROW("linear-attention-type", MF_ATTN_VARIANT), /* its earlier name (Megatron-LM@ba3682c) */
    INT_ROW("expert-model-parallel-size", MF_EP, -1),
    INT_ROW("expert-tensor-parallel-size", MF_ETP, -1),
    SWITCH_ROW("external-cuda-graph", MF_EXTERNAL_CUDA_GRAPH),
    INT_ROW("extra-vocab-size", MF_EXTRA_VOCAB, -1),
    INT_ROW("ffn-hidden-size", MF_FFN, MEM4D_MODEL_FFN_HIDDEN_SIZE),
    SWITCH_ROW("fine-grained-activation-offloading", MF_FG_OFFLOAD),
    SKIP_ROW("fine-grained-offloading-max-inflight-offloads"),
    SKIP_ROW("finetune"),
    SWITCH_ROW("fp16", MF_FP16),
    /* Megatron-Core's GPTModel stores it and never reads it: its cross entropy
     * casts the logits to fp32 either way (tensor_parallel/cross_entropy.py, d98e8a64) */
    SKIP_ROW("fp16-lm-cross-entropy"),
    SWITCH_ROW("fp32-residual-connection", MF_FP32_RESIDUAL),
    WORD_ROW("fp4-format", MF_FP4, c_fp4),
    SWITCH_ROW("fp4-param-gather", MF_FP4_PARAM),
    WORD_ROW("fp4-recipe", MF_FP4_RECIPE, c_fp4_recipe),
    SKIP_ROW("fp8-amax-compute-algo"),
    SKIP_ROW("fp8-amax-history-len"),
    WORD_ROW("fp8-format", MF_FP8, c_fp8),
    SKIP_ROW("fp8-interval"),
    SKIP_ROW("fp8-margin"),
    SWITCH_ROW("fp8-param-gather", MF_FP8_PARAM),
    WORD_ROW("fp8-recipe", MF_FP8_RECIPE, c_fp8_recipe),
    SWITCH_ROW("fsdp-double-buffer", MF_FSDP_DOUBLE),
    INT_ROW("global-batch-size", MF_GBS, -1),
    SKIP_ROW("glu-linear-offset"),
    SWITCH_ROW("grad-reduce-in-bf16", MF_GRAD_BF16),
    SWITCH_ROW("group-query-attention", MF_GQA),
    TEXT_ROW("heterogeneous-layers-config-encoded-json", MF_HETERO_JSON),
    TEXT_ROW("heterogeneous-layers-config-path", MF_HETERO_PATH),
    REAL_ROW("hidden-dropout", MF_HIDDEN_DROPOUT),
    INT_ROW("hidden-size", MF_HIDDEN, MEM4D_MODEL_HIDDEN_SIZE),
    REAL_ROW("hybrid-attention-ratio", MF_HYBRID_ATTN),
    TEXT_ROW("hybrid-layer-pattern", MF_HYBRID_PATTERN),
    REAL_ROW("hybrid-mlp-ratio", MF_HYBRID_MLP),
    TEXT_ROW("hybrid-override-pattern", MF_HYBRID_OVERRIDE),
    SKIP_ROW("hysteresis"),
    SKIP_ROW("init-method-std"),
    SKIP_ROW("init-method-xavier-uniform"),
    SKIP_ROW("init-model-with-meta-device"),
    SKIP_ROW("initial-loss-scale"),
    SWITCH_ROW("is-hybrid-model", MF_IS_HYBRID),
    SKIP_ROW("job-name"),
    SKIP_ROW("kill-switch-path"),
    INT_ROW("kv-channels", MF_KV_CHANNELS, MEM4D_MODEL_HEAD_DIM),
    SKIP_ROW("kv-channels-scale"),
    INT_ROW("kv-lora-rank", MF_KV_LORA, -1),
    SKIP_ROW("layernorm-epsilon"),
    SKIP_ROW("legacy-tokenizer"),
    TEXT_ROW("linear-attention-freq", MF_LA_FREQ),
    INT_ROW("linear-conv-kernel-dim", MF_LIN_CONV, MEM4D_MODEL_CONV_KERNEL),
    INT_ROW("linear-key-head-dim", MF_LIN_KEY_DIM, MEM4D_MODEL_LINEAR_KEY_HEAD_DIM),
    INT_ROW("linear-num-key-heads", MF_LIN_KEY_HEADS, MEM4D_MODEL_LINEAR_KEY_HEADS),
    INT_ROW("linear-num-value-heads", MF_LIN_VALUE_HEADS, MEM4D_MODEL_LINEAR_VALUE_HEADS),
    INT_ROW("linear-value-head-dim", MF_LIN_VALUE_DIM, MEM4D_MODEL_LINEAR_VALUE_HEAD_DIM),
    SKIP_ROW("load"),
    SKIP_ROW("local-rank"),
    SKIP_ROW("local_rank"),
    SKIP_ROW("log-batch-size-to-tensorboard"),
    SKIP_ROW("log-energy"),
    SKIP_ROW("log-interval"),
    SKIP_ROW("log-loss-scale-to-tensorboard"),
    SKIP_ROW("log-memory-to-tensorboard"),
    SKIP_ROW("log-num-zeros-in-grad"),
    SKIP_ROW("log-optimizer-states-to-tensorboard"),
    SKIP_ROW("log-params-norm"),
    SKIP_ROW("log-progress"),
    SKIP_ROW("log-straggler"),
    SKIP_ROW("log-throughput"),
    SKIP_ROW("log-timers-to-tensorboard"),
    SKIP_ROW("log-validation-ppl-to-tensorboard"),
    SKIP_ROW("log-world-size-to-tensorboard"),
    SKIP_ROW("logging-level"),
    SKIP_ROW("loss-scale"),
    SKIP_ROW("loss-scale-window"),
    SKIP_ROW("lr"),
    SKIP_ROW("lr-decay-iters"),
    SKIP_ROW("lr-decay-samples"),
    SKIP_ROW("lr-decay-style"),
    SKIP_ROW("lr-decay-tokens"),
    SKIP_ROW("lr-warmup-fraction"),
    SKIP_ROW("lr-warmup-init"),
    SKIP_ROW("lr-warmup-iters"),
    SKIP_ROW("lr-warmup-samples"),
    SKIP_ROW("lr-warmup-tokens"),
    WORD_ROW("main-grads-dtype", MF_MAIN_GRADS_DTYPE, c_grad_dtype),
    WORD_ROW("main-params-dtype", MF_MAIN_PARAMS_DTYPE, c_param_dtype),
    INT_ROW("make-vocab-size-divisible-by", MF_VOCAB_DIV, -1),
    WARN_ROW("mamba-chunk-size", "sizes the chunked scan's fp32 states in backward, modelled at mamba_ssm's 128 tokens"),
    INT_ROW("mamba-head-dim", MF_MAMBA_HEAD_DIM, MEM4D_MODEL_MAMBA_HEAD_DIM),
    INT_ROW("mamba-num-groups", MF_MAMBA_GROUPS, MEM4D_MODEL_MAMBA_NUM_GROUPS),
    INT_ROW("mamba-num-heads", MF_MAMBA_HEADS, MEM4D_MODEL_MAMBA_NUM_HEADS),
    INT_ROW("mamba-state-dim", MF_MAMBA_STATE, MEM4D_MODEL_MAMBA_STATE_DIM),
    SKIP_ROW("mamba-training-ssm-states-dtype"), /* the scan's transient states, recomputed in backward */
    SKIP_ROW("manual-gc"),
    SKIP_ROW("manual-gc-interval"),
    SKIP_ROW("max-padding-length"),
    INT_ROW("max-position-embeddings", MF_MAX_POS, MEM4D_MODEL_MAX_POSITION),
    INT_ROW("max-tokens-per-gpu", MF_MAX_TOKENS, -1),
    WORD_ROW("megatron-fsdp-main-grads-dtype", MF_FSDP_GRADS_DTYPE, c_fsdp_dtype),
    WORD_ROW("megatron-fsdp-main-params-dtype", MF_FSDP_PARAMS_DTYPE, c_fsdp_dtype),
    SWITCH_ROW("megatron-fsdp-max-pool-double-buffer", MF_FSDP_MAXPOOL),
    SKIP_ROW("merge-file"),
    INT_ROW("micro-batch-size", MF_MBS, -1),
    SKIP_ROW("min-loss-scale"),
    SKIP_ROW("min-lr"),
    SKIP_ROW("min-offloaded-tensor-size"), /* 1M elements by default: every offloaded input of a real layer is larger */
    SKIP_ROW("mock-data"),
    WARN_ROW("model-parallel-size", "is no longer accepted by Megatron-LM (use --tensor-model-parallel-size)"),
    SKIP_ROW("moe-aux-loss-coeff"),
    INT_ROW("moe-deepep-num-sms", MF_DEEPEP_SMS, -1),
    SWITCH_ROW("moe-enable-deepep", MF_ENABLE_DEEPEP),
    TEXT_ROW("moe-expert-capacity-factor", MF_MOE_CAP),
    INT_ROW("moe-ffn-hidden-size", MF_MOE_FFN, MEM4D_MODEL_EXPERT_FFN_SIZE),
    WORD_ROW("moe-flex-dispatcher-backend", MF_FLEX_BACKEND, c_flex_backend),
    INT_ROW("moe-flex-dispatcher-num-sms", MF_FLEX_SMS, -1),
    SWITCH_ROW("moe-grouped-gemm", MF_GROUPED_GEMM), /* its workspace is inside workspace_bytes (doc/full-model.md) */
    SKIP_ROW("moe-hybridep-num-sms"), /* HybridEP's buffers do not depend on its SMs */
    SKIP_ROW("moe-hybridep-num-sms-preprocessing"),
    SKIP_ROW("moe-input-jitter-eps"),
    TEXT_ROW("moe-layer-freq", MF_MOE_FREQ),
    INT_ROW("moe-latent-size", MF_MOE_LATENT, MEM4D_MODEL_MOE_LATENT_SIZE), /* LatentMoE (arguments.py: > 0) */
    SWITCH_ROW("moe-layer-recompute", MF_MOE_LAYER_RC),
    SWITCH_ROW("moe-pad-expert-input-to-capacity", MF_MOE_PAD),
    SKIP_ROW("moe-per-layer-logging"),
    SKIP_ROW("moe-permute-fusion"),
    SKIP_ROW("moe-permute-fusion-into-hybridep"),
    SKIP_ROW("moe-router-bias-update-rate"),
    WORD_ROW("moe-router-dtype", MF_ROUTER_DTYPE, c_router_dtype),
    SWITCH_ROW("moe-router-enable-expert-bias", MF_EXPERT_BIAS), /* a buffer: step time only */
    SWITCH_ROW("moe-router-force-load-balancing", MF_FORCE_BALANCE), /* step time only */
    SKIP_ROW("moe-router-fusion"),
    SKIP_ROW("moe-router-group-topk"),
    SKIP_ROW("moe-router-load-balancing-type"),
    SKIP_ROW("moe-router-num-groups"),
    SWITCH_ROW("moe-router-padding-for-fp8", MF_ROUTER_PAD_FP8),
    SWITCH_ROW("moe-router-padding-for-quantization", MF_ROUTER_PAD_Q),
    SKIP_ROW("moe-router-pre-softmax"),
    SKIP_ROW("moe-router-score-function"),
    INT_ROW("moe-router-topk", MF_TOPK, MEM4D_MODEL_EXPERT_TOPK),
    SKIP_ROW("moe-router-topk-scaling-factor"),
    SWITCH_ROW("moe-shared-expert-gate", MF_SHARED_GATE),
    INT_ROW("moe-shared-expert-intermediate-size", MF_SHARED_FFN, MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE),
    SWITCH_ROW("moe-shared-expert-overlap", MF_SHARED_OVERLAP),
    WORD_ROW("moe-token-dispatcher-type", MF_DISPATCHER, c_dispatcher),
    SKIP_ROW("moe-token-drop-policy"),
    SKIP_ROW("moe-use-legacy-grouped-gemm"), /* GroupedMLP instead of TEGroupedMLP: the same weights and kept tensors */
    SKIP_ROW("moe-z-loss-coeff"),
    SKIP_ROW("mscale"),
    SKIP_ROW("mscale-all-dim"),
    SKIP_ROW("mtp-loss-scaling-factor"),
    INT_ROW("mtp-num-layers", MF_MTP, MEM4D_MODEL_MTP_LAYERS),
    SWITCH_ROW("mtp-use-repeated-layer", MF_MTP_REPEATED),
    SWITCH_ROW("multi-latent-attention", MF_MLA),
    SKIP_ROW("nccl-communicator-config-path"),
    SKIP_ROW("no-async-tensor-model-parallel-allreduce"),
    SKIP_ROW("no-bias-dropout-fusion"),
    SKIP_ROW("no-bias-gelu-fusion"),
    SKIP_ROW("no-bias-swiglu-fusion"),
    SKIP_ROW("no-check-for-nan-in-loss-and-grad"),
    SKIP_ROW("no-ckpt-fully-parallel-save"),
    SKIP_ROW("no-create-attention-mask-in-dataloader"),
    SKIP_ROW("no-gradient-accumulation-fusion"),
    SKIP_ROW("no-load-optim"),
    SKIP_ROW("no-load-rng"),
    SKIP_ROW("no-masked-softmax-fusion"),
    SKIP_ROW("no-mmap-bin-files"),
    SWITCH_ROW("no-overlap-p2p-communication", MF_NO_P2P_OVERLAP),
    SKIP_ROW("no-persist-layer-norm"),
    SKIP_ROW("no-pipeline-parallel"),
    SWITCH_ROW("no-position-embedding", MF_NO_POS),
    SKIP_ROW("no-query-key-layer-scaling"),
    SKIP_ROW("no-rope-fusion"),
    SKIP_ROW("no-save-optim"),
    SKIP_ROW("no-save-rng"),
    SKIP_ROW("no-shared-fs"),
    SKIP_ROW("no-weight-decay-cond-type"),
    SKIP_ROW("non-persistent-ckpt-type"),
    SKIP_ROW("non-persistent-save-interval"),
    SKIP_ROW("norm-epsilon"),
    WORD_ROW("normalization", MF_NORM, c_norm),
    INT_ROW("num-attention-heads", MF_HEADS, MEM4D_MODEL_NUM_HEADS),
    SKIP_ROW("num-dataset-builder-threads"),
    INT_ROW("num-distributed-optimizer-instances", MF_DOPT_INST, -1),
    INT_ROW("num-experts", MF_EXPERTS, MEM4D_MODEL_NUM_EXPERTS),
    INT_ROW("num-key-value-heads", MF_KV_HEADS_DS, -1),
    INT_ROW("num-layers", MF_NUM_LAYERS, MEM4D_MODEL_NUM_LAYERS),
    INT_ROW("num-layers-per-virtual-pipeline-stage", MF_VPP_LAYERS, -1),
    INT_ROW("num-query-groups", MF_GROUPS, -1),
    INT_ROW("num-shared-experts", MF_NUM_SHARED, -1), /* Pai-Megatron-Patch and the ROCm fork */
    INT_ROW("num-virtual-stages-per-pipeline-rank", MF_VPP_STAGES, -1),
    SKIP_ROW("num-workers"),
    BITS_ROW("offload-modules", MF_OFFLOAD_MODULES, c_offload_modules),
    SWITCH_ROW("offload-optimizer-states", MF_OPT_STATE_OFFLOAD),
    SKIP_ROW("onnx-safe"),
    SKIP_ROW("openai-gelu"),
    WORD_ROW("optimizer", MF_OPTIMIZER, c_optimizer),
    SWITCH_ROW("optimizer-cpu-offload", MF_OPT_OFFLOAD),
    REAL_ROW("optimizer-offload-fraction", MF_OPT_OFFLOAD_FRACTION),
    SKIP_ROW("original-max-position-embeddings"),
    /* fp32 logits: the loss then works in place on them (4 bytes a logit) and the output
     * layer's backward casts the gradient to bf16 (2): the 6 bytes a logit of bf16 logits
     * with their fp32 copy (tensor_parallel/layers.py, cross_entropy.py) */
    SKIP_ROW("output-logit-dtype"),
    SKIP_ROW("overlap-cpu-optimizer-d2h-h2d"),
    SWITCH_ROW("overlap-grad-reduce", MF_OVERLAP_GRAD),
    SWITCH_ROW("overlap-moe-expert-parallel-comm", MF_EP_OVERLAP),
    SWITCH_ROW("overlap-p2p-communication", MF_P2P_OVERLAP), /* 2023-05 to 2023-10; later the default with vpp */
    /* NVIDIA/Megatron-LM@4295be1a (2024-11, core_r0.10): the interleaved
     * schedule's warm-up and flush transfers overlapped too (dest
     * overlap_p2p_comm_warmup_flush); the step time charges them exposed */
    WARN_ROW("overlap-p2p-communication-warmup-flush",
             "is not modelled: the warm-up's and flush's transfers stay exposed in the estimate"),
    SWITCH_ROW("overlap-param-gather", MF_OVERLAP_PARAM),
    SKIP_ROW("overlap-param-gather-with-optimizer-step"),
    SWITCH_ROW("overlapped-distributed-optimizer", MF_ODO),
    SKIP_ROW("override-opt_param-scheduler"),
    INT_ROW("pad-vocab-size-to", MF_PAD_VOCAB_TO, -1),
    INT_ROW("padded-vocab-size", MF_PADDED_VOCAB, -1),
    TEXT_ROW("patch-tokenizer-type", MF_PATCH_TOKENIZER),
    SKIP_ROW("pin-cpu-grads"),
    SKIP_ROW("pin-cpu-params"),
    TEXT_ROW("pipeline-model-parallel-layout", MF_PP_LAYOUT),
    INT_ROW("pipeline-model-parallel-size", MF_PP, -1),
    WORD_ROW("position-embedding-type", MF_POS_TYPE, c_pos),
    TEXT_ROW("pp-partition-method", MF_PP_PARTITION),
    SKIP_ROW("pretrained-checkpoint"),
    SKIP_ROW("profile"),
    SKIP_ROW("profile-ranks"),
    SKIP_ROW("profile-step-end"),
    SKIP_ROW("profile-step-start"),
    INT_ROW("q-lora-rank", MF_Q_LORA, -1),
    INT_ROW("qk-head-dim", MF_QK_HEAD_DIM, -1),
    SWITCH_ROW("qk-layernorm", MF_QK_NORM),
    INT_ROW("qk-nope-head-dim", MF_QK_HEAD_DIM, -1), /* Pai-Megatron-Patch's spelling of --qk-head-dim */
    INT_ROW("qk-pos-emb-head-dim", MF_QK_POS_DIM, -1),
    INT_ROW("qk-rope-head-dim", MF_QK_POS_DIM, -1), /* Pai-Megatron-Patch's spelling of --qk-pos-emb-head-dim */
    SWITCH_ROW("quick-geglu", MF_QUICK_GEGLU), /* gpt-oss: a gated linear unit like --swiglu */
    SKIP_ROW("rampup-batch-size"),
    SWITCH_ROW("recompute-activations", MF_RC_ACT),
    WORD_ROW("recompute-granularity", MF_RC_GRAN, c_rc_gran),
    WORD_ROW("recompute-method", MF_RC_METHOD, c_rc_method),
    BITS_ROW("recompute-modules", MF_RC_MODULES, c_rc_modules),
    INT_ROW("recompute-num-layers", MF_RC_LAYERS, -1),
    TEXT_ROW("reduce-bucket-size", MF_REDUCE_BUCKET),
    SKIP_ROW("reset-attention-mask"),
    SKIP_ROW("reset-position-ids"),
    SWITCH_ROW("reuse-grad-buf-for-mxfp8-param-ag", MF_REUSE_GRAD_MXFP8),
    SKIP_ROW("rope-type"), /* rope or yarn: the same (parameter-free) rotary embedding for memory */
    SKIP_ROW("rotary-base"),
    SKIP_ROW("rotary-interleaved"),
    SKIP_ROW("rotary-percent"),
    SKIP_ROW("rotary-scaling-factor"),
    SKIP_ROW("rotary-seq-len-interpolation-factor"),
    SKIP_ROW("save"),
    SKIP_ROW("save-interval"),
    SKIP_ROW("seed"),
    INT_ROW("seq-length", MF_SEQ, -1),
    SWITCH_ROW("sequence-parallel", MF_SP),
    REAL_ROW("sgd-momentum", MF_SGD_MOMENTUM),
    SKIP_ROW("sliding-window"),
    WORD_ROW("softmax-type", MF_SOFTMAX, c_softmax),
    TEXT_ROW("spec", MF_SPEC),
    SKIP_ROW("split"),
    SKIP_ROW("squared-relu"),
    SKIP_ROW("start-weight-decay"),
    SKIP_ROW("step-batch-size-schedule"),
    SKIP_ROW("straggler-minmax-count"),
    SWITCH_ROW("swiglu", MF_SWIGLU),
    SKIP_ROW("te-rng-tracker"),
    INT_ROW("tensor-model-parallel-size", MF_TP, -1),
    SKIP_ROW("tensorboard-dir"),
    SKIP_ROW("tensorboard-log-interval"),
    SKIP_ROW("tensorboard-queue-size"),
    SKIP_ROW("test-data-path"),
    SKIP_ROW("tiktoken-num-special-tokens"),
    SKIP_ROW("tiktoken-pattern"),
    SKIP_ROW("tiktoken-special-tokens"),
    SKIP_ROW("timing-log-level"),
    SKIP_ROW("timing-log-option"),
    SKIP_ROW("tokenizer-metadata"),
    TEXT_ROW("tokenizer-model", MF_TOKENIZER_MODEL),
    TEXT_ROW("tokenizer-name-or-path", MF_TOKENIZER_NAME),
    SKIP_ROW("tokenizer-prompt-format"),
    SKIP_ROW("tokenizer-special-tokens"),
    TEXT_ROW("tokenizer-type", MF_TOKENIZER),
    SWITCH_ROW("tp-comm-overlap", MF_TP_OVERLAP),
    SKIP_ROW("train-data-path"),
    SKIP_ROW("train-iters"),
    SKIP_ROW("train-mode"),
    SKIP_ROW("train-samples"),
    SKIP_ROW("train-tokens"),
    SKIP_ROW("train-weighted-split-paths-path"),
    WORD_ROW("transformer-impl", MF_TE_IMPL, c_impl),
    SKIP_ROW("trust-remote-code"),
    SWITCH_ROW("untie-embeddings-and-output-weights", MF_UNTIE),
    WARN_ROW("use-checkpoint-args", "takes the model from a checkpoint the estimate cannot see"),
    SKIP_ROW("use-checkpoint-opt_param-scheduler"),
    SKIP_ROW("use-cpu-initialization"),
    SWITCH_ROW("use-custom-fsdp", MF_CUSTOM_FSDP),
    SKIP_ROW("use-dist-ckpt"),
    SWITCH_ROW("use-distributed-optimizer", MF_DIST_OPT),
    SKIP_ROW("use-distributed-optimizer-instances"),
    SWITCH_ROW("use-dynamic-batch-size", MF_DYN_BATCH),
    SWITCH_ROW("use-flash-attn", MF_FLASH),
    SKIP_ROW("use-flash-attn-triton"),
    SKIP_ROW("use-fused-weighted-squared-relu"), /* one kernel for relu² and the routing weight; fc2 keeps its input as before */
    SKIP_ROW("use-legacy-models"),
    SKIP_ROW("use-mcore-models"),
    SWITCH_ROW("use-megatron-fsdp", MF_MEGATRON_FSDP),
    SWITCH_ROW("use-nccl-ub", MF_NCCL_UB),
    SWITCH_ROW("use-precision-aware-optimizer", MF_PREC_AWARE),
    SKIP_ROW("use-pytorch-profiler"),
    SKIP_ROW("use-rope-scaling"),
    SWITCH_ROW("use-rotary-position-embeddings", MF_ROPE),
    WARN_ROW("use-separate-send-recv-groups", "asks for separate pipeline send and receive process groups; the estimate counts one NCCL communicator for each pipeline group"),
    SWITCH_ROW("use-torch-fsdp2", MF_FSDP2),
    SKIP_ROW("use-torch-optimizer-for-cpu-offload"),
    SKIP_ROW("use-tp-pp-dp-mapping"),
    INT_ROW("v-head-dim", MF_V_HEAD_DIM, -1),
    SKIP_ROW("valid-data-path"),
    SKIP_ROW("valid-num-workers"),
    SKIP_ROW("valid-weighted-split-paths-path"),
    INT_ROW("vocab-extra-ids", MF_VOCAB_EXTRA_IDS, -1),
    TEXT_ROW("vocab-file", MF_VOCAB_FILE),
    INT_ROW("vocab-size", MF_VOCAB, -1),
    SKIP_ROW("wandb-entity"),
    SKIP_ROW("wandb-exp-name"),
    SKIP_ROW("wandb-project"),
    SKIP_ROW("wandb-save-dir"),
    SKIP_ROW("weight-decay"),
    SKIP_ROW("weight-decay-incr-style"),
    INT_ROW("wgrad-deferral-limit", MF_WGRAD_DEFER_LIMIT, -1),
    TEXT_ROW("window-attn-skip-freq", MF_WINDOW_SKIP), /* which layers use --window-size */
    TEXT_ROW("window-size", MF_WINDOW),
    WARN_ROW("yaml-cfg", "reads the configuration from a YAML file the estimate cannot see"),
    INT_ROW("zero-stage", MF_ZERO_STAGE, -1),
};

const size_t m4d_megatron_flag_n = sizeof m4d_megatron_flags / sizeof *m4d_megatron_flags;

/* A linear scan: a few hundred comparisons per argument, and no ordering
 * invariant for a new row to break. */
const struct m4d_megatron_flag *m4d_megatron_flag_find(const char *name)
{
    for (size_t i = 0; i < m4d_megatron_flag_n; i++)
        if (strcmp(name, m4d_megatron_flags[i].flag) == 0)
            return &m4d_megatron_flags[i];
    return NULL;
}

const struct m4d_megatron_flag *m4d_megatron_flag_of(int slot)
{
    for (size_t i = 0; i < m4d_megatron_flag_n; i++)
        if (m4d_megatron_flags[i].slot == slot && m4d_flag_is_read(&m4d_megatron_flags[i]))
            return &m4d_megatron_flags[i];
    return NULL;
}

/* The flags of the trainers that drive Megatron-Core in one command line
 * (slime's train.py: THUDM/slime@624b824 slime/utils/arguments.py, every flag
 * of its own listed, those that change memory with the sentence saying how;
 * Megatron-LM's RL loop:
 * megatron/rl; Model Optimizer's examples/post_training/modelopt): rollout, reward, evaluation and actor sizing, read by the
 * trainer and not by the model. A name ending in '-' is a family. They do
 * not change the training step's per-GPU memory: slime's colocated SGLang
 * engine releases its memory while the actor trains (its
 * --sglang-mem-fraction-static applies while it generates); Megatron-RL's
 * inference buffers are the one family that stays, and says so. */
const struct m4d_trainer_flag m4d_trainer_flags[] = {
    {"actor-num-gpus-per-node", "slime", NULL},
    {"actor-num-nodes", "slime", NULL},
    {"advantage-estimator", "slime", NULL},
    {"allgather-cp", "slime",
     "uses all-gather context parallelism (DSA models), which is not modelled; the estimate keeps Megatron's ring"},
    {"apply-chat-template", "slime", NULL},
    {"apply-chat-template-kwargs", "slime", NULL},
    {"balance-by-flops", "slime", NULL},
    {"balance-data", "slime", NULL},
    {"buffer-filter-path", "slime", NULL},
    {"check-weight-update-equal", "slime", NULL},
    {"ci-", "slime", NULL},
    {"colocate", "slime", NULL},
    {"custom-", "slime", NULL},
    {"data-pad-size-multiplier", "slime", NULL},
    {"data-source-path", "slime", NULL},
    {"debug-rollout-only", "slime", NULL},
    {"debug-train-only", "slime", NULL},
    {"decode-only-cuda-graphs", "Megatron-RL", NULL},
    {"disable-compute-advantages-and-returns", "slime", NULL},
    {"disable-grpo-std-normalization", "slime", NULL},
    {"disable-rewards-normalization", "slime", NULL},
    {"disable-rollout-global-dataset", "slime", NULL},
    {"disable-wandb-random-suffix", "slime", NULL},
    {"dump-details", "slime", NULL},
    {"dynamic-sampling-filter-path", "slime", NULL},
    {"enable-mtp-training", "slime", NULL},
    {"entropy-coef", "slime", NULL},
    {"eps-clip", "slime", NULL},
    {"eps-clip-c", "slime", NULL},
    {"eps-clip-high", "slime", NULL},
    {"eval-", "slime", NULL},
    {"export-", "Model Optimizer", NULL},
    {"fetch-trajectory-retry-times", "slime", NULL},
    {"finetune-hf-dataset", "Model Optimizer", NULL},
    {"freeze-indexer", "slime", "freezes the sparse-attention indexer; the estimate trains it"},
    {"freeze-params-name-list", "slime",
     "freezes parameters, which keep no gradient or optimizer state; the estimate trains every parameter"},
    {"gamma", "slime", NULL},
    {"get-mismatch-metrics", "slime", NULL},
    {"group-rm", "slime", NULL},
    {"grpo-", "Megatron-RL", NULL},
    {"hf-checkpoint", "slime", NULL},
    {"http-proxy", "slime", NULL},
    {"inference-", "Megatron-RL",
     "its rollout inference (KV cache, request buffers, --inference-* flags) shares the GPUs with training; "
     "the estimate is the training step's alone"},
    {"input-key", "slime", NULL},
    {"keep-old-actor", "slime", NULL},
    {"kl-coef", "slime", NULL},
    {"kl-loss-coef", "slime", NULL},
    {"kl-loss-type", "slime", NULL},
    {"label-key", "slime", NULL},
    {"lambd", "slime", NULL},
    {"langrl-env-config", "Megatron-RL", NULL},
    {"load-debug-rollout-data", "slime", NULL},
    {"load-debug-rollout-data-subsample", "slime", NULL},
    {"load-forge-rollout-data", "slime", NULL},
    {"log-correct-samples", "slime", NULL},
    {"log-multi-turn", "slime", NULL},
    {"log-passrate", "slime", NULL},
    {"log-probs-chunk-size", "slime", NULL}, /* every chunk keeps its softmax: the loss still holds 8 bytes per logit */
    {"log-probs-max-tokens-per-gpu", "slime",
     "packs its forward-only log-probability pass up to that many tokens per GPU; the estimate is the training step's"},
    {"log-reward-category", "slime", NULL},
    {"loss-mask-type", "slime", NULL},
    {"loss-type", "slime", NULL},
    {"mask-offpolicy-in-partial-rollout", "slime", NULL},
    {"megatron-config-path", "slime",
     "reads more Megatron arguments from that file, which the estimate does not see"},
    {"memory-recorder", "slime",
     "records the allocator's history; the estimate leaves its host and GPU cost out"},
    {"metadata-key", "slime", NULL},
    {"min-batch-collection-ratio", "slime", NULL},
    {"model-name", "slime", NULL},
    {"moe-pad-experts-for-cuda-graph-inference", "Megatron-RL", NULL},
    {"multimodal-keys", "slime", NULL},
    {"n-samples-per-eval-prompt", "slime", NULL},
    {"n-samples-per-prompt", "slime", NULL},
    {"normalize-advantages", "slime", NULL},
    {"num-critic-only-steps", "slime", NULL},
    {"num-epoch", "slime", NULL},
    {"num-gpus-per-node", "slime", NULL},
    {"num-rollout", "slime", NULL},
    {"num-steps-per-rollout", "slime", NULL},
    {"offload", "slime", NULL},
    {"offload-rollout", "slime", NULL},
    {"offload-train", "slime", NULL},
    {"only-train-params-name-list", "slime",
     "freezes the other parameters, which keep no gradient or optimizer state; the estimate trains every parameter"},
    {"opd-", "slime", NULL},
    {"opsm-delta", "slime", NULL},
    {"over-sampling-batch-size", "slime", NULL},
    {"partial-rollout", "slime", NULL},
    {"prefill-num-servers", "slime", NULL},
    {"pretrained-checkpoint", "Megatron-RL", NULL},
    {"profile-target", "slime", NULL},
    {"prompt-data", "slime", NULL},
    {"recompute-loss-function", "slime",
     "recomputes its loss function in backward; the estimate keeps Megatron's cross entropy"},
    {"record-memory-history", "slime",
     "records the allocator's history; the estimate leaves its host and GPU cost out"},
    {"ref-ckpt-step", "slime", NULL},
    {"ref-load", "slime", NULL},
    {"ref-update-interval", "slime", NULL},
    {"release-train", "slime", NULL},
    {"reward-key", "slime", NULL},
    {"rl-", "Megatron-RL", NULL},
    {"rm-type", "slime", NULL},
    {"rm-url", "slime", NULL},
    {"rollout-", "slime", NULL},
    {"save-debug-rollout-data", "slime", NULL},
    {"save-debug-train-data", "slime", NULL},
    {"save-hf", "slime", NULL},
    {"sglang-", "slime", NULL},
    {"skip-eval-before-train", "slime", NULL},
    {"start-rollout-id", "slime", NULL},
    {"tb-", "slime", NULL},
    {"tis-clip", "slime", NULL},
    {"tis-clip-low", "slime", NULL},
    {"tool-key", "slime", NULL},
    {"train-backend", "slime", 
     "chooses the actor's training backend; the estimate is Megatron-Core's"},
    {"train-env-vars", "slime", NULL},
    {"update-weight-", "slime", NULL},
    {"update-weights-interval", "slime", NULL},
    {"use-distributed-post", "slime", NULL},
    {"use-fault-tolerance", "slime", NULL},
    {"use-gated-attention", "slime", NULL}, /* its Qwen3.5 spec's switch; the gate is --attention-output-gate */
    {"use-kl-loss", "slime", NULL},
    {"use-opd", "slime", NULL},
    {"use-opsm", "slime", NULL},
    {"use-rollout-entropy", "slime", NULL},
    {"use-rollout-logprobs", "slime", NULL},
    {"use-rollout-routing-replay", "slime",
     "keeps each token's routing for the replay; the estimate leaves it out"},
    {"use-routing-replay", "slime", 
     "keeps each token's routing for the replay; the estimate leaves it out"},
    {"use-stateless-adam", "slime", 
     "replaces Adam by a stateless optimizer; the estimate keeps Adam's moments"},
    {"use-tensorboard", "slime", NULL},
    {"use-tis", "slime", NULL},
    {"use-unbiased-kl", "slime", NULL},
    {"use-wandb", "slime", NULL},
    {"value-clip", "slime", NULL},
    {"wandb-always-use-train-step", "slime", NULL},
};
const size_t m4d_trainer_flag_n = sizeof m4d_trainer_flags / sizeof *m4d_trainer_flags;

const struct m4d_trainer_flag *m4d_trainer_flag_find(const char *name)
{
    for (size_t i = 0; i < m4d_trainer_flag_n; i++) {
        const char *f = m4d_trainer_flags[i].flag;
        size_t n = strlen(f);
        if (f[n - 1] == '-' ? strncmp(name, f, n) == 0 : strcmp(name, f) == 0)
            return &m4d_trainer_flags[i];
    }
    return NULL;
}
