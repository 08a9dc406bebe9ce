/*
 * libmem4d - GPU memory estimator for 4D-parallel LLM training.
 *
 * SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libmem4d authors
 */

/**
 * @file mem4d.h
 * @brief The one public header of libmem4d.
 *
 * libmem4d answers, before any GPU-hour is spent, how much memory every
 * pipeline stage of a Megatron-style Llama training job uses and which 4D
 * parallel layouts (tensor, context, pipeline, data) fit and run fastest.
 *
 * Data flows one way:
 *  - **describe**: a ::mem4d_model (architecture), a ::mem4d_layout (training
 *    and parallel configuration) and a ::mem4d_device (one GPU);
 *  - **estimate**: mem4d_estimate() fills a ::mem4d_report with bytes per
 *    pipeline stage and a verdict;
 *  - **search**: a ::mem4d_search enumerates every valid layout for a GPU
 *    count, filters by memory and ranks by predicted step time.
 *
 * Conventions, for every function of this header:
 *  - Every handle is opaque. Constructors return a ::mem4d_status and fill an
 *    out-parameter; destructors accept NULL.
 *  - Parameters are keyed by enums whose values never change (new ones are
 *    appended), with bounds queries and string-keyed twins, so adding a knob
 *    never breaks the ABI.
 *  - Sizes are bytes in `uint64_t`. All arithmetic is overflow-checked: an
 *    input whose result does not fit gives ::MEM4D_E_RANGE, never a wrapped
 *    number.
 *  - Fractions are integers in parts per million (`_PPM` keys): 800000 is 80%.
 *  - The library has no global mutable state and never prints. Distinct
 *    handles may be used from different threads at once; a handle passed as
 *    `const` may be shared by many threads.
 *  - Decimals in what the library reads (arguments, logs, files) are written
 *    with a point, and read so whatever LC_NUMERIC the process has set.
 *  - A function that takes a `why` buffer and its size (mem4d_model_validate(),
 *    mem4d_validate(), mem4d_layout_param_applies(),
 *    mem4d_model_param_applies(), mem4d_device_parse(), mem4d_device_load())
 *    writes a NUL-terminated sentence there whatever it returns, unless `why`
 *    is NULL or the size 0 (then nothing is written): the reason for every
 *    status but ::MEM4D_OK, ::MEM4D_E_INVALID_ARG included, and "" for
 *    ::MEM4D_OK. The text is truncated to fit, at a UTF-8 character's
 *    boundary. A buffer reused across calls never holds an earlier reason.
 */
#ifndef MEM4D_H
#define MEM4D_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @cond INTERNAL */
#if defined(MEM4D_BUILDING) && defined(__GNUC__)
#define MEM4D_API __attribute__((visibility("default")))
#else
#define MEM4D_API
#endif
/** @endcond */

/* The version below is the project's one source of its version: meson.build
 * reads these three lines (scripts/version.sh), and so does
 * scripts/gen-bindings.py for the bindings. */
/** Major version of the header; see mem4d_version(). @since 0.1 */
#define MEM4D_VERSION_MAJOR 0
/** Minor version of the header. @since 0.1 */
#define MEM4D_VERSION_MINOR 2
/** Micro version of the header. @since 0.1 */
#define MEM4D_VERSION_MICRO 0

/**
 * The header's version as one number, (MAJOR << 16) | (MINOR << 8) | MICRO:
 * 0.2.0 is 0x000200. Compare it with mem4d_version_number() (the library
 * loaded at run time), or test it in the preprocessor:
 * `#if MEM4D_VERSION_NUMBER >= 0x000200`.
 * @since 0.2
 */
#define MEM4D_VERSION_NUMBER ((MEM4D_VERSION_MAJOR << 16) | (MEM4D_VERSION_MINOR << 8) | MEM4D_VERSION_MICRO)

/**
 * Marks a declaration deprecated, with a message saying what to use instead;
 * it comes first, before the declaration's `MEM4D_API`:
 * `MEM4D_DEPRECATED("use mem4d_new_thing()")`.
 * Calls then warn under GCC, Clang and MSVC (and C++14); other compilers
 * ignore it. Deprecated functions stay exported until the soname changes.
 * @param msg A string literal.
 * @since 0.2
 */
#if defined(__cplusplus) && __cplusplus >= 201402L
#define MEM4D_DEPRECATED(msg) [[deprecated(msg)]]
#elif defined(__GNUC__)
#define MEM4D_DEPRECATED(msg) __attribute__((deprecated(msg)))
#elif defined(_MSC_VER)
#define MEM4D_DEPRECATED(msg) __declspec(deprecated(msg))
#else
#define MEM4D_DEPRECATED(msg)
#endif

/* ------------------------------------------------------------------------ */
/** @defgroup status Status codes
 * @{ */

/**
 * Result of every fallible call. ::MEM4D_OK is zero; values are fixed forever
 * and never reused. mem4d_strerror() names each one.
 * @since 0.1
 */
typedef enum mem4d_status {
    MEM4D_OK = 0,               /**< Success. */
    MEM4D_END = 1,              /**< Not an error: a search has no more layouts. */
    MEM4D_E_INVALID_ARG = 2,    /**< A NULL pointer or an enum value this version does not know. */
    MEM4D_E_NOMEM = 3,          /**< Memory allocation failed. */
    MEM4D_E_RANGE = 4,          /**< A value is outside its bounds, or a result would overflow 64 bits. */
    MEM4D_E_UNKNOWN_KEY = 5,    /**< A parameter name is not known. */
    MEM4D_E_UNKNOWN_PRESET = 6, /**< A preset name is not known. */
    MEM4D_E_PARSE = 7,          /**< A value's text is malformed (not a number, trailing junk, bad name). */
    MEM4D_E_MODEL = 8,          /**< The model is inconsistent or incomplete (e.g. hidden size not divisible by heads). */
    MEM4D_E_HEADS_TP = 9,       /**< Attention heads not divisible by the tensor-parallel size. */
    MEM4D_E_KV_HEADS_TP = 10,   /**< Key/value heads (query groups) not divisible by the tensor-parallel size. */
    MEM4D_E_LAYERS_PP = 11,     /**< Layers not divisible by pipeline size (times virtual chunks), or not split by uneven first/last stages. */
    MEM4D_E_WORLD = 12,         /**< World size is not tp x cp x pp x dp. */
    MEM4D_E_SEQ = 13,           /**< Sequence length not divisible by 2 x cp, or by tp with sequence parallelism. */
    MEM4D_E_BATCH = 14,         /**< Global batch not divisible by micro-batch x dp. */
    MEM4D_E_UNSUPPORTED = 15,   /**< A setting or combination this model (or mode) does not cover. */
    MEM4D_E_NO_JSON = 16,       /**< The library was built without JSON support. */
    MEM4D_E_IO = 17,            /**< A file could not be read. */
    MEM4D_E_JSON = 18,          /**< A JSON document is malformed or a value has the wrong type. */
    MEM4D_E_MISSING = 19,       /**< A required value is missing (a key, a flag's value, a setting). */
    MEM4D_E_CONFLICT = 20,      /**< Two settings contradict each other. */
    MEM4D_E_DIM_TP = 21,        /**< An FFN size (dense, expert or shared-expert) not divisible by the tensor-parallel size. */
    MEM4D_E_EXPERTS = 22        /**< Experts not divisible by the expert-parallel size, or EP does not fit the layout. */
} mem4d_status;

/**
 * A short, static English description of a status.
 * @param status Any value; unknown ones give "unknown status".
 * @return A string that lives forever. Never NULL.
 * @since 0.1
 */
MEM4D_API const char *mem4d_strerror(mem4d_status status);

/**
 * The library's version as "MAJOR.MINOR.MICRO" (of the library loaded at run
 * time, which may be newer than the header).
 * @return A static string. Never NULL.
 * @since 0.1
 */
MEM4D_API const char *mem4d_version(void);

/**
 * The name of a status as this header spells it ("MEM4D_E_RANGE"), for logs
 * and for bindings that mirror the enum.
 * @param status Any value.
 * @return A static string, or NULL for a value this library does not know.
 * @since 0.2
 */
MEM4D_API const char *mem4d_status_name(mem4d_status status);

/**
 * Number of statuses this library knows: they are 0 to count-1.
 * @return The count.
 * @since 0.2
 */
MEM4D_API size_t mem4d_status_count(void);

/**
 * The library's version as one number, (MAJOR << 16) | (MINOR << 8) | MICRO,
 * of the library loaded at run time: compare with ::MEM4D_VERSION_NUMBER.
 * @return The number (0x000200 for 0.2.0).
 * @since 0.2
 */
MEM4D_API uint32_t mem4d_version_number(void);

/** @} */

/* ------------------------------------------------------------------------ */
/** @defgroup kinds Parameter kinds: how to read and show a value
 * Every parameter of a model, layout or device (and every search option) is a
 * `uint64_t`; its kind says what the number means, so that tools and bindings
 * can parse, check and print it without a table of their own
 * (mem4d_model_param_kind(), mem4d_layout_param_kind(),
 * mem4d_device_param_kind(), mem4d_search_option_kind()).
 * @{ */

/**
 * What a parameter's number means. Values are fixed forever; new kinds are
 * appended (a binding treats an unknown kind as ::MEM4D_KIND_INTEGER).
 * @since 0.2
 */
typedef enum mem4d_param_kind {
    MEM4D_KIND_INTEGER = 0,    /**< A plain number: a count, a size in elements, a divisor. */
    MEM4D_KIND_BOOLEAN = 1,    /**< 0 or 1; the text setters also take "true"/"false". */
    MEM4D_KIND_CHOICE = 2,     /**< One of the named values 0 to max of its bounds (see mem4d_layout_value_name()). */
    MEM4D_KIND_BYTES = 3,      /**< A size in bytes. */
    MEM4D_KIND_WIDTH = 4,      /**< Bytes per element: only the widths its documentation lists (e.g. 2 or 4). */
    MEM4D_KIND_PPM = 5,        /**< A fraction in parts per million (800000 is 80%). */
    MEM4D_KIND_FLOPS = 6,      /**< A rate in floating-point operations per second. */
    MEM4D_KIND_BYTES_PER_S = 7,/**< A bandwidth in bytes per second. */
    MEM4D_KIND_NANOSECONDS = 8 /**< A duration in nanoseconds. */
} mem4d_param_kind;

/**
 * Name of a kind: "integer", "boolean", "choice", "bytes", "width", "ppm",
 * "flops", "bytes_per_s" or "nanoseconds".
 * @param kind The kind.
 * @return A static string, or NULL for an unknown kind.
 * @since 0.2
 */
MEM4D_API const char *mem4d_param_kind_name(mem4d_param_kind kind);

/** @} */

/* ------------------------------------------------------------------------ */
/** @defgroup model Model: the architecture
 * A decoder-only transformer: Llama-style (RMSNorm, SwiGLU, grouped-query
 * attention, rotary positions, no biases) by default, with switches for the
 * variants of the presets (QKV bias, LayerNorm, plain MLP, mixture of experts).
 * @{ */

/** Opaque model handle. @since 0.1 */
typedef struct mem4d_model mem4d_model;

/**
 * Model parameters. Values are fixed forever; new keys are appended.
 * Their string names (mem4d_model_param_name()) follow Megatron-LM's argument
 * names; Hugging Face `config.json` names are accepted as aliases.
 * @since 0.1
 */
typedef enum mem4d_model_param {
    MEM4D_MODEL_HIDDEN_SIZE = 0,      /**< h: "hidden_size". Required. */
    MEM4D_MODEL_FFN_HIDDEN_SIZE = 1,  /**< f: "ffn_hidden_size" ("intermediate_size"). Required for dense models. */
    MEM4D_MODEL_NUM_LAYERS = 2,       /**< L: "num_layers" ("num_hidden_layers"). Required. */
    MEM4D_MODEL_NUM_HEADS = 3,        /**< a: "num_attention_heads". Required. */
    MEM4D_MODEL_NUM_KV_HEADS = 4,     /**< k: "num_query_groups" ("num_key_value_heads"); 0 means k = a. */
    MEM4D_MODEL_HEAD_DIM = 5,         /**< "kv_channels" ("head_dim"); 0 means h / a. */
    MEM4D_MODEL_VOCAB_SIZE = 6,       /**< V: "vocab_size", before padding. Required. */
    MEM4D_MODEL_TIED_EMBEDDINGS = 7,  /**< "tie_word_embeddings": 1 when the LM head shares the embedding. */
    MEM4D_MODEL_QKV_BIAS = 8,         /**< "add_qkv_bias": 1 when Q, K, V projections have biases (Qwen2). */
    MEM4D_MODEL_NORM = 9,             /**< "normalization": 0 "rmsnorm", 1 "layernorm" (weight and bias). */
    MEM4D_MODEL_GATED_MLP = 10,       /**< "swiglu": 1 for a gated MLP (three matrices), 0 for two. */
    MEM4D_MODEL_NUM_EXPERTS = 11,     /**< "num_experts": 0 for a dense model. */
    MEM4D_MODEL_EXPERT_TOPK = 12,     /**< "moe_router_topk": experts each token is routed to. */
    MEM4D_MODEL_EXPERT_FFN_SIZE = 13, /**< "moe_ffn_hidden_size": FFN size of one expert; 0 means f. */
    MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE = 14, /**< "moe_shared_expert_intermediate_size": 0 for none. */
    MEM4D_MODEL_MAX_POSITION = 15,    /**< "max_position_embeddings": rows of a learned position table (see POSITION_EMBEDDING). */
    /** "add_bias_linear": 1 when every linear layer has a bias (Megatron-LM's default
     * without --disable-bias-linear; GPT-NeoX, StarCoder 2): QKV, attention output,
     * and the MLP's (or each expert's) two or three projections. Default 0. @since 0.2 */
    MEM4D_MODEL_LINEAR_BIAS = 16,
    /** "position_embedding_type": 0 "rope" (no parameters), 1 "learned_absolute"
     * (a max_position_embeddings x h table on the first stage), 2 "alibi" and
     * 3 "none" (no parameters). Default 0. @since 0.2 */
    MEM4D_MODEL_POSITION_EMBEDDING = 17,
    /** "qk_layernorm": 1 when queries and keys are normalised per head before
     * attention (Megatron's --qk-layernorm; Qwen3, Gemma 3): two norms over the head
     * dimension per layer. Default 0. @since 0.2 */
    MEM4D_MODEL_QK_LAYERNORM = 18,
    /** "moe_layer_freq": with experts, the period of the pattern of expert layers
     * (Megatron's --moe-layer-freq N: every N-th layer). Default 1. @since 0.2 */
    MEM4D_MODEL_MOE_LAYER_FREQ = 19,
    /** "moe_layer_mask": which layers of each period are expert layers, bit i for
     * the i-th (Megatron's --moe-layer-freq "([1]*3+[0]*1)*8" is period 4, mask 7).
     * Default 1. @since 0.2 */
    MEM4D_MODEL_MOE_LAYER_MASK = 20,
    /** "first_k_dense_replace": with experts, the first layers that are dense
     * (DeepSeek; the pattern starts after them). Dense layers use ffn_hidden_size.
     * Default 0. @since 0.2 */
    MEM4D_MODEL_MOE_FIRST_DENSE = 21,
    /** "q_lora_rank": multi-latent attention's query compression rank; 0 for a
     * full-rank query projection. @since 0.2 */
    MEM4D_MODEL_Q_LORA_RANK = 22,
    /** "kv_lora_rank": multi-latent attention's key/value compression rank; a
     * nonzero value turns MLA on (DeepSeek-V2/V3). Default 0. @since 0.2 */
    MEM4D_MODEL_KV_LORA_RANK = 23,
    /** "qk_head_dim" ("qk_nope_head_dim"): MLA's per-head query/key dimension without
     * the rotary part. @since 0.2 */
    MEM4D_MODEL_QK_HEAD_DIM = 24,
    /** "qk_pos_emb_head_dim" ("qk_rope_head_dim"): MLA's rotary per-head dimension,
     * shared by all heads for the keys. @since 0.2 */
    MEM4D_MODEL_QK_POS_EMB_HEAD_DIM = 25,
    /** "v_head_dim": MLA's per-head value dimension. @since 0.2 */
    MEM4D_MODEL_V_HEAD_DIM = 26,
    /** "mtp_num_layers" ("num_nextn_predict_layers"): multi-token-prediction modules
     * after the last layer (DeepSeek-V3), each a transformer layer with its own
     * projection 2h x h and norms, on the last pipeline stage. Default 0. @since 0.2 */
    MEM4D_MODEL_MTP_LAYERS = 27,
    /** "moe_shared_expert_gate": 1 when the shared expert's output is scaled by a
     * learned gate of h parameters (Qwen-MoE; Megatron's --moe-shared-expert-gate),
     * 0 for DeepSeek's ungated shared experts. Default 1 (0.1's reading). @since 0.2 */
    MEM4D_MODEL_SHARED_EXPERT_GATE = 28,
    /** "norms_per_layer": normalisations in each layer, 2 (before attention and
     * before the MLP) by default, 4 with Gemma 2/3's extra post-attention and
     * post-MLP norms. @since 0.2 */
    MEM4D_MODEL_NORMS_PER_LAYER = 29,
    /** "qk_norm_whole": with qk_layernorm, the query and key norms span the whole
     * projections, a·dh and k·dh (OLMo 2), instead of one head. Default 0. @since 0.2 */
    MEM4D_MODEL_QK_NORM_WHOLE = 30,
    /** "attention_sinks": 1 when every attention head has a learned sink logit
     * that joins its softmax (gpt-oss's self_attn.sinks): a parameters per layer,
     * split over t with the heads. Default 0. @since 0.2 */
    MEM4D_MODEL_ATTENTION_SINKS = 31,
    /** "moe_router_bias": 1 when the MoE router is a linear layer with a bias of
     * num_experts parameters (gpt-oss's mlp.router.bias). Default 0. @since 0.2 */
    MEM4D_MODEL_ROUTER_BIAS = 32,
    /** "dsa_indexer_n_heads" ("index_n_heads"): heads of DeepSeek Sparse
     * Attention's lightning indexer (DeepSeek-V3.2, GLM-5; Megatron-Core's
     * DSAIndexer); 0 for no indexer. Needs multi-latent attention. Default 0. @since 0.2 */
    MEM4D_MODEL_DSA_INDEX_HEADS = 33,
    /** "dsa_indexer_head_dim" ("index_head_dim"): the indexer's query/key head
     * dimension. Default 0. @since 0.2 */
    MEM4D_MODEL_DSA_INDEX_HEAD_DIM = 34,
    /** "dsa_indexer_topk" ("index_topk"): keys each query attends to, as chosen by
     * the indexer (the int64 indices are kept for backward). Default 0. @since 0.2 */
    MEM4D_MODEL_DSA_INDEX_TOPK = 35,
    /** "mamba_state_dim" ("ssm_state_size"): the SSM state size N of a Mamba-2
     * layer (symbol M of the layer pattern). Default 128 (Megatron's
     * --mamba-state-dim). @since 0.2 */
    MEM4D_MODEL_MAMBA_STATE_DIM = 36,
    /** "mamba_head_dim": the head dimension P of a Mamba-2 layer. Default 64. @since 0.2 */
    MEM4D_MODEL_MAMBA_HEAD_DIM = 37,
    /** "mamba_num_groups" ("n_groups"): the groups G of a Mamba-2 layer's B and
     * C projections. Default 8. @since 0.2 */
    MEM4D_MODEL_MAMBA_NUM_GROUPS = 38,
    /** "mamba_num_heads": the heads of a Mamba-2 layer; 0 means 2h/mamba_head_dim
     * (Megatron's expand = 2). Default 0. @since 0.2 */
    MEM4D_MODEL_MAMBA_NUM_HEADS = 39,
    /** "conv_kernel" ("mamba_d_conv", "linear_conv_kernel_dim"): the width of
     * the causal depthwise convolution of the Mamba-2 and Gated DeltaNet layers.
     * Default 4. @since 0.2 */
    MEM4D_MODEL_CONV_KERNEL = 40,
    /** "linear_num_key_heads": query/key heads of a Gated DeltaNet layer (symbol G;
     * Qwen3-Next). Required when the pattern has G layers. @since 0.2 */
    MEM4D_MODEL_LINEAR_KEY_HEADS = 41,
    /** "linear_num_value_heads": value heads of a Gated DeltaNet layer. Required
     * when the pattern has G layers. @since 0.2 */
    MEM4D_MODEL_LINEAR_VALUE_HEADS = 42,
    /** "linear_key_head_dim": query/key head dimension of a Gated DeltaNet layer.
     * Default 128. @since 0.2 */
    MEM4D_MODEL_LINEAR_KEY_HEAD_DIM = 43,
    /** "linear_value_head_dim": value head dimension of a Gated DeltaNet layer.
     * Default 128. @since 0.2 */
    MEM4D_MODEL_LINEAR_VALUE_HEAD_DIM = 44,
    /** "attention_output_gate" ("attn_output_gate"): 1 when the attention output
     * is multiplied by a sigmoid gate the query projection also produces (Qwen3-Next's
     * gated attention; Megatron's --attention-output-gate): the query projection
     * is twice as wide. Default 0. @since 0.2 */
    MEM4D_MODEL_ATTENTION_OUTPUT_GATE = 45,
    /** "dsa_indexer_topk_freq" ("index_topk_freq"): with the sparse-attention
     * indexer, only every N-th layer (after the offset below) builds one; the
     * layers between reuse its top-k and have no indexer (GLM-5.2; Megatron-Core's
     * --dsa-indexer-topk-freq). Default 1: every layer. @since 0.2 */
    MEM4D_MODEL_DSA_INDEX_TOPK_FREQ = 46,
    /** "dsa_indexer_skip_topk_offset" ("index_skip_topk_offset"): the first
     * layers that all build their own indexer before the sharing pattern starts
     * (Megatron-Core's is_dsa_skip_topk_layer; 0 counts as 1). Default 0. @since 0.2 */
    MEM4D_MODEL_DSA_INDEX_SKIP_OFFSET = 47,
    /** "mtp_use_repeated_layer": 1 when one multi-token-prediction module is
     * applied at every depth (Megatron-Core's --mtp-use-repeated-layer;
     * Nemotron 3.5 Lightning): its weights, gradients and optimizer state are
     * one module's, its activations every depth's. Default 0. @since 0.2 */
    MEM4D_MODEL_MTP_REPEATED_LAYER = 48,
    /** "moe_router_expert_bias" ("moe_router_enable_expert_bias"): 1 when the router balances
     * its experts' loads with a per-expert bias added to the scores before the top-k and moved
     * against each expert's load after every step (auxiliary-loss-free balancing: DeepSeek-V3's
     * e_score_correction_bias, config.json "topk_method": "noaux_tc" or "use_routing_bias";
     * Megatron's --moe-router-enable-expert-bias). A buffer, not a parameter: only the step time
     * depends on it, through the load spread dropless routing is derived from (device key
     * moe_load_spread_ppm; doc/perf.md, "Token imbalance"). Default 0. @since 0.2 */
    MEM4D_MODEL_ROUTER_EXPERT_BIAS = 49,
    /** "activation" ("activation_func"): the MLP's activation, 0 "default" (GeLU, or SiLU in a
     * gated MLP: the kernels Megatron fuses) or 1 "squared_relu" (relu, then the square:
     * Nemotron-4's). Only the step time depends on it: where the software stack runs it unfused
     * (NeMo 2's own squared_relu, two eager kernels forward and four backward), its element-wise
     * traffic is the eager kernels' (doc/perf.md, "Squared ReLU as NeMo 2 runs it"). Default 0.
     * @since 0.2 */
    MEM4D_MODEL_ACTIVATION = 50,
    /** "window_size": sliding-window (local) attention, the keys each
     * query of a local layer attends to, itself included (config.json's "sliding_window";
     * Megatron's --window-size (left, 0) is left + 1); 0 for none. Which layers are local:
     * the three keys below, in the form of the expert layers' (every layer by default).
     * Only the step time depends on it: a local layer's fused attention computes
     * min(i + 1, w) keys for query i (doc/perf.md, "Sliding-window attention"). Default 0.
     * @since 0.2 */
    MEM4D_MODEL_WINDOW_SIZE = 51,
    /** "window_layer_freq": with a window (or a chunk, ::MEM4D_MODEL_ATTENTION_CHUNK_SIZE),
     * the period of the pattern of local layers (Gemma 3's sliding_window_pattern 6,
     * gpt-oss's alternating layer_types 2, Llama 4's no_rope_layer_interval 4). Default 1.
     * @since 0.2 */
    MEM4D_MODEL_WINDOW_LAYER_FREQ = 52,
    /** "window_layer_mask": which layers of each period are local, bit i for the i-th
     * (Gemma 3: period 6, mask 31, five local then one global). Default 1. @since 0.2 */
    MEM4D_MODEL_WINDOW_LAYER_MASK = 53,
    /** "window_first_full_layers": the first layers that attend to
     * every earlier token before the pattern starts (Qwen2/3's max_window_layers with
     * use_sliding_window). Default 0. @since 0.2 */
    MEM4D_MODEL_WINDOW_FIRST_FULL = 54,
    /** "attention_chunk_size" ("fixed_attn_block_size"): chunked (local) attention,
     * Llama 4's: the sequence is cut into chunks of this many tokens and a query of a
     * local layer attends causally to the keys of its own chunk only (config.json's
     * "attention_chunk_size"; torchtitan's fixed_attn_block_size); 0 for none. Which
     * layers are local: the window layer keys above (Llama 4: period 4, mask 7, its
     * RoPE layers; the NoPE layers attend to every earlier token). Not beside
     * window_size: a model's local layers are either sliding or chunked. Only the step
     * time depends on it: a local layer's attention is the causal triangles of its
     * chunks (doc/perf.md, CHUNKED_ATTN). Default 0. @since 0.2 */
    MEM4D_MODEL_ATTENTION_CHUNK_SIZE = 55,
    /** "moe_latent_size": a latent mixture of experts (LatentMoE; Nemotron 3 Super and
     * Ultra; Megatron-Core's --moe-latent-size): the routed experts work at this width
     * instead of h. Each expert layer projects its tokens h -> latent before the dispatch
     * and latent -> h after the combine (fc1_latent_proj, fc2_latent_proj: 2·h·latent
     * parameters, replicated over t); the router and the shared expert read the h-wide
     * tokens. The experts' weights, the tokens they keep, the dispatch's bytes and
     * buffers are latent-wide. Needs experts and is below h; 0 for none. Default 0.
     * @since 0.2 */
    MEM4D_MODEL_MOE_LATENT_SIZE = 56
} mem4d_model_param;

/**
 * Create an empty model: every required parameter unset (zero).
 * @param[out] out Receives the new handle; set to NULL on failure.
 * @return ::MEM4D_OK, ::MEM4D_E_INVALID_ARG or ::MEM4D_E_NOMEM.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_model_new(mem4d_model **out);

/**
 * Create a model from a built-in preset such as "llama3.1-70b".
 * Names are case-insensitive; list them with mem4d_model_preset_name().
 * @param name Preset name.
 * @param[out] out Receives the new handle; set to NULL on failure.
 * @return ::MEM4D_OK, ::MEM4D_E_UNKNOWN_PRESET, ::MEM4D_E_INVALID_ARG or ::MEM4D_E_NOMEM.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_model_new_preset(const char *name, mem4d_model **out);

/**
 * Copy a model.
 * @param model The model to copy.
 * @param[out] out Receives the new handle; set to NULL on failure.
 * @return ::MEM4D_OK, ::MEM4D_E_INVALID_ARG or ::MEM4D_E_NOMEM.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_model_clone(const mem4d_model *model, mem4d_model **out);

/**
 * Free a model. NULL is allowed.
 * @param model The handle to free.
 * @since 0.1
 */
MEM4D_API void mem4d_model_free(mem4d_model *model);

/**
 * Set a model parameter.
 * @param model The model.
 * @param key The parameter.
 * @param value The new value, within mem4d_model_param_bounds().
 * @return ::MEM4D_OK, ::MEM4D_E_RANGE (value unchanged) or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_model_set(mem4d_model *model, mem4d_model_param key, uint64_t value);

/**
 * Read a model parameter.
 * @param model The model.
 * @param key The parameter.
 * @param[out] value Receives the stored value (0 for "unset" or "derived").
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_model_get(const mem4d_model *model, mem4d_model_param key, uint64_t *value);

/**
 * Set a model parameter by name from text ("hidden_size", "4096").
 * Numbers are decimal (or 0x hexadecimal); booleans are "true"/"false"/"1"/"0";
 * enumerated keys also take their value names ("rmsnorm").
 * @param model The model.
 * @param name A parameter name or alias.
 * @param value The value's text.
 * @return ::MEM4D_OK, ::MEM4D_E_UNKNOWN_KEY, ::MEM4D_E_PARSE, ::MEM4D_E_RANGE or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_model_set_str(mem4d_model *model, const char *name, const char *value);

/**
 * Give the model a layer pattern: one symbol per layer, in Megatron-Core's
 * hybrid notation (--hybrid-override-pattern): "M" a Mamba-2 layer, "G" a
 * Gated DeltaNet layer, "*" an attention layer, "-" an MLP layer, "E" an
 * expert (MoE) layer, each with its own input norm and residual; and "L" a
 * linear h x h layer with its norm (the replace_with_linear blocks of
 * Llama-3.3-Nemotron's block_configs). "*" may carry its key/value heads
 * and "-" its FFN width in braces, "*{1}" and "-{14336}", for models whose
 * layers differ (block_configs). A model whose layers are attention and
 * MLP together, as a Hugging Face layer, is written with two symbols per
 * layer ("G" then "E" for a Qwen3-Next layer). Setting the pattern sets
 * ::MEM4D_MODEL_NUM_LAYERS to its length; the expert-layer keys
 * (moe_layer_freq, first_k_dense_replace) do not apply. mem4d_model_set_str()
 * sets it from text as "layer_pattern" ("hybrid_override_pattern"). Pipeline
 * separators "|" belong to the layout (stage_layers) and multi-token
 * prediction depths "/" are not modelled: both are refused.
 * @param model The model.
 * @param pattern The pattern; "" clears it (every layer attention and MLP).
 * @return ::MEM4D_OK, ::MEM4D_E_PARSE (an unknown symbol or a bad width),
 *         ::MEM4D_E_RANGE (more than 4096 layers, a width out of range, or
 *         more than 32 distinct layers) or ::MEM4D_E_INVALID_ARG.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_model_set_layer_pattern(mem4d_model *model, const char *pattern);

/**
 * Write the model's layer pattern (mem4d_model_set_layer_pattern()) as text.
 * @param model The model.
 * @param[out] buf Receives the pattern, NUL-terminated and cut to fit; may be
 *             NULL when size is 0.
 * @param size Room at buf.
 * @return The pattern's length without the NUL (0: none), also when larger
 *         than size - 1; 0 for a NULL model.
 * @since 0.2
 */
MEM4D_API size_t mem4d_model_get_layer_pattern(const mem4d_model *model, char *buf, size_t size);

/**
 * The model's name: its preset name, or "custom".
 * @param model The model.
 * @return A string owned by the model, valid until it is freed; "" for NULL.
 * @since 0.1
 */
MEM4D_API const char *mem4d_model_name(const mem4d_model *model);

/**
 * Name a model (shown by tools; at most 63 bytes are kept).
 * @param model The model.
 * @param name The new name.
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_model_set_name(mem4d_model *model, const char *name);

/**
 * Check that the model is complete and self-consistent.
 * @param model The model.
 * @param why Buffer for a sentence saying what is wrong, "" when nothing
 *        is (may be NULL; see "Conventions" at the top of this header).
 * @param why_size Size of @p why in bytes; the text is truncated to fit.
 * @return ::MEM4D_OK, ::MEM4D_E_MISSING (a required parameter is unset),
 *         ::MEM4D_E_MODEL or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_model_validate(const mem4d_model *model, char *why, size_t why_size);

/**
 * Total number of parameters of the model (unpadded vocabulary, LM head
 * counted unless tied, all experts counted).
 * @param model The model.
 * @param[out] count Receives the parameter count.
 * @return ::MEM4D_OK, ::MEM4D_E_MISSING, ::MEM4D_E_MODEL, ::MEM4D_E_RANGE or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_model_num_params(const mem4d_model *model, uint64_t *count);

/**
 * Number of built-in model presets.
 * @return The count.
 * @since 0.1
 */
MEM4D_API size_t mem4d_model_preset_count(void);

/**
 * Name of a built-in model preset.
 * @param index 0 to mem4d_model_preset_count() - 1.
 * @return A static string, or NULL when @p index is out of range.
 * @since 0.1
 */
MEM4D_API const char *mem4d_model_preset_name(size_t index);

/**
 * Number of model parameter keys this library knows (keys are 0 to count-1).
 * @return The count.
 * @since 0.1
 */
MEM4D_API size_t mem4d_model_param_count(void);

/**
 * The canonical string name of a model parameter.
 * @param key The parameter.
 * @return A static string, or NULL for an unknown key.
 * @since 0.1
 */
MEM4D_API const char *mem4d_model_param_name(mem4d_model_param key);

/**
 * Look a model parameter up by name or alias.
 * @param name The name.
 * @param[out] key Receives the key.
 * @return ::MEM4D_OK, ::MEM4D_E_UNKNOWN_KEY or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_model_param_from_name(const char *name, mem4d_model_param *key);

/**
 * Bounds of a model parameter: every value in [min, max] is accepted by
 * mem4d_model_set() (consistency is checked by mem4d_model_validate()).
 * @param key The parameter.
 * @param[out] min Receives the lowest value (may be NULL).
 * @param[out] max Receives the highest value (may be NULL).
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_model_param_bounds(mem4d_model_param key, uint64_t *min, uint64_t *max);

/**
 * What a model parameter's number means.
 * @param key The parameter.
 * @param[out] kind Receives the kind.
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG (unknown key, NULL @p kind).
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_model_param_kind(mem4d_model_param key, mem4d_param_kind *kind);

/**
 * The value a new model (mem4d_model_new()) holds for a parameter; 0 for the
 * required ones (unset) and for those whose 0 means "derived".
 * @param key The parameter.
 * @param[out] value Receives the default.
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_model_param_default(mem4d_model_param key, uint64_t *value);

/**
 * Name of a value of an enumerated (::MEM4D_KIND_CHOICE) model parameter
 * ("layernorm" for ::MEM4D_MODEL_NORM = 1).
 * @param key The parameter.
 * @param value The value.
 * @return A static string, or NULL when the key is not enumerated or the value unknown.
 * @since 0.2
 */
MEM4D_API const char *mem4d_model_value_name(mem4d_model_param key, uint64_t value);

/** @} */

/* ------------------------------------------------------------------------ */
/** @defgroup layout Layout: the training and parallel configuration
 * @{ */

/** Opaque layout handle. @since 0.1 */
typedef struct mem4d_layout mem4d_layout;

/**
 * Layout parameters. Values are fixed forever; new keys are appended.
 * The string names are short ("tp"); Megatron-LM's argument names
 * ("tensor_model_parallel_size") are accepted as aliases.
 * @since 0.1
 */
typedef enum mem4d_layout_param {
    MEM4D_LAYOUT_TP = 0,                /**< t: "tp", tensor-parallel size. Default 1. */
    MEM4D_LAYOUT_CP = 1,                /**< c: "cp", context-parallel size. Default 1. */
    MEM4D_LAYOUT_PP = 2,                /**< p: "pp", pipeline-parallel size. Default 1. */
    MEM4D_LAYOUT_DP = 3,                /**< d: "dp", data-parallel size; 0 derives it from the world size. */
    MEM4D_LAYOUT_WORLD = 4,             /**< "world", GPUs in the job; 0 derives it from dp. One of dp and world is required. */
    MEM4D_LAYOUT_MICRO_BATCH = 5,       /**< b: "mbs", micro-batch size. Default 1. */
    MEM4D_LAYOUT_GLOBAL_BATCH = 6,      /**< "gbs", global batch size; 0 = unknown (m is then taken as >= p). */
    MEM4D_LAYOUT_SEQ_LENGTH = 7,        /**< s: "seq", tokens per sample. Required. */
    MEM4D_LAYOUT_SEQUENCE_PARALLEL = 8, /**< "sp", sequence parallelism with tp > 1. Default 1. */
    MEM4D_LAYOUT_DIST_OPT = 9,          /**< "dist_opt", Megatron's distributed optimizer (ZeRO-1). Default 1. */
    MEM4D_LAYOUT_MAIN_GRAD_BYTES = 10,  /**< "main_grad_bytes": 4 (fp32 main gradients, default) or 2 (bf16). */
    MEM4D_LAYOUT_VPP = 11,              /**< v: "vpp", virtual pipeline chunks per rank (interleaved 1F1B). Default 1. */
    MEM4D_LAYOUT_RECOMPUTE = 12,        /**< "recompute": 0 "none", 1 "selective", 2 "full", 3 "op". Default none. */
    MEM4D_LAYOUT_RECOMPUTE_METHOD = 13, /**< "recompute_method": 0 "uniform", 1 "block". */
    MEM4D_LAYOUT_RECOMPUTE_LAYERS = 14, /**< "recompute_num_layers"; 0 means every layer of the stage. */
    MEM4D_LAYOUT_FLASH_ATTN = 15,       /**< "flash_attn": fused attention that keeps no s x s scores. Default 1; left unset
                                         * (never given to mem4d_layout_set() or _set_str()), the device's attention_kernel,
                                         * else its stack's, decides, for the memory and the step time alike: softmax
                                         * attention (0) on "unfused", as the megatron-lm-2022 and megatron-deepspeed stacks
                                         * run. mem4d_layout_get() reads the stored value, 1 when unset, whatever the
                                         * device decides: what ran is the report's ::MEM4D_INFO_ATTENTION_KERNEL (and
                                         * ::MEM4D_INFO_SOFTMAX_FALLBACK). */
    MEM4D_LAYOUT_MODE = 16,             /**< "mode": 0 "full" (default), 1 "paper" (arXiv 2411.06465 exactly). */
    MEM4D_LAYOUT_VOCAB_DIVISOR = 17,    /**< "make_vocab_size_divisible_by": V is padded to a multiple of this x tp. Default 128. */
    MEM4D_LAYOUT_ZERO_STAGE = 18,       /**< "zero_stage": 0 follows dist_opt; 1 optimizer, 2 + gradients, 3 + parameters (FSDP). */
    MEM4D_LAYOUT_PARAM_BYTES = 19,      /**< "param_bytes": 2 (bf16/fp16, default) or 4 (fp32 training). */
    MEM4D_LAYOUT_OPT_STATE_BYTES = 20,  /**< "optimizer_state_bytes": bytes of each Adam moment, 4 (default), 2 or 1. */
    MEM4D_LAYOUT_MASTER_WEIGHT_BYTES = 21, /**< "master_weight_bytes": fp32 master copy, 4 (default), 2 or 0 (none). */
    MEM4D_LAYOUT_FP8 = 22,              /**< "fp8": 1 for fp8 training (weight and transpose caches). */
    MEM4D_LAYOUT_EP = 23,               /**< "ep", expert-parallel size (mixture of experts). Default 1. */
    MEM4D_LAYOUT_FIRST_STAGE_LAYERS = 24, /**< "decoder_first_pipeline_num_layers"; 0 = even split. */
    MEM4D_LAYOUT_LAST_STAGE_LAYERS = 25,  /**< "decoder_last_pipeline_num_layers"; 0 = even split. */
    MEM4D_LAYOUT_OVERLAP_GRAD_REDUCE = 26,  /**< "overlap_grad_reduce". Default 0. */
    MEM4D_LAYOUT_OVERLAP_PARAM_GATHER = 27, /**< "overlap_param_gather". Default 0. */
    MEM4D_LAYOUT_BUCKET_SIZE = 28,      /**< "ddp_bucket_size" in elements; 0 = Megatron's default. */
    /** "hidden_dropout": 1 when hidden dropout is on (Megatron's --hidden-dropout > 0;
     * Megatron-LM's default is 0.1, Llama-style recipes set 0). Only whether it is on
     * matters: each dropout keeps a one-byte mask per element for backward (after the
     * embedding, after attention and after the MLP). Default 0. Paper mode refuses 1. */
    MEM4D_LAYOUT_HIDDEN_DROPOUT = 29,
    /** "attention_dropout": 1 when attention dropout is on (--attention-dropout > 0,
     * Megatron-LM's default 0.1). Without flash attention it keeps an a x s x s mask
     * and the dropped probabilities; fused attention keeps only its RNG state.
     * Default 0. Paper mode refuses 1. */
    MEM4D_LAYOUT_ATTENTION_DROPOUT = 30,
    /** "cross_entropy_fusion": 1 for Megatron-Core's --cross-entropy-loss-fusion
     * (native implementation) as released through Megatron-Core 0.14, where
     * torch.compile materialises one more fp32 logits-sized buffer around the
     * loss: 10 instead of 6 bytes per token and vocabulary entry on the last
     * stage. Later releases that keep it in place are overestimated. Default 0.
     * Paper mode refuses 1. */
    MEM4D_LAYOUT_CROSS_ENTROPY_FUSION = 31,
    /** "distribute_saved_activations": 1 to split each full-recompute checkpoint
     * (a layer's input) over the tensor-parallel ranks when sequence parallelism
     * does not already (Megatron's --distribute-saved-activations). Default 0. @since 0.2 */
    MEM4D_LAYOUT_DISTRIBUTE_SAVED_ACTIVATIONS = 32,
    /** "fp8_param_gather": 1 when fp8 training keeps the linear weights in fp8
     * only (Megatron's --fp8-param-gather: Transformer Engine fp8 parameters, no
     * bf16 copy; one byte per weight and one for its transpose). Needs fp8 = 1.
     * Default 0. @since 0.2 */
    MEM4D_LAYOUT_FP8_PARAM_GATHER = 33,
    /** "exp_avg_sq_bytes": bytes of Adam's second moment when they differ from the
     * first's (the precision-aware optimizer's --exp-avg-sq-dtype); 0 means
     * optimizer_state_bytes. Default 0. @since 0.2 */
    MEM4D_LAYOUT_EXP_AVG_SQ_BYTES = 34,
    /** "precision_aware_optimizer": 1 for Megatron's --use-precision-aware-optimizer
     * (Transformer Engine's FusedAdam takes gradients and states in their own
     * dtypes): no fp32 copy of a bf16 gradient shard at the optimizer step.
     * Default 0. @since 0.2 */
    MEM4D_LAYOUT_PRECISION_AWARE_OPTIMIZER = 35,
    /** "etp" ("expert_tensor_parallel_size"): tensor-parallel size of the experts;
     * 0 means tp. With etp != tp the expert layers fold their parallelism over
     * tp x dp x cp (Megatron-Core's parallel folding): ep x etp must divide
     * tp x dp x cp. Default 0. @since 0.2 */
    MEM4D_LAYOUT_ETP = 36,
    /** "recompute_modules": with recompute = selective, which parts of a layer are
     * re-run in backward instead of kept (Megatron's --recompute-modules), one bit
     * each: 1 core_attn, 2 mlp, 4 layernorm, 8 moe_act, 16 shared_experts,
     * 32 mla_up_proj, 64 moe. Default 1 (core_attn, Megatron's default). @since 0.2 */
    MEM4D_LAYOUT_RECOMPUTE_MODULES = 37,
    /** "moe_router_bytes": bytes of each router logit and probability kept per token
     * and expert, 4 (fp32, default) or 8 (Megatron's --moe-router-dtype fp64). @since 0.2 */
    MEM4D_LAYOUT_MOE_ROUTER_BYTES = 38,
    /** "tp_comm_overlap": 1 for Megatron's --tp-comm-overlap (Transformer
     * Engine's userbuffers) or torchtitan's async TP: the TP all-gathers and
     * reduce-scatters run in chunks under the GEMMs they feed (doc/perf.md);
     * with framework megatron and tp > 1 full mode adds Transformer Engine's
     * userbuffers to FIXED (doc/full-model.md). Default 0.
     * @since 0.2 */
    MEM4D_LAYOUT_TP_COMM_OVERLAP = 39,
    /** "optimizer_offload_ppm": parts per million of the Adam moments kept on the host
     * (Megatron's --optimizer-cpu-offload with --optimizer-offload-fraction; the
     * fp32 main parameters stay on the GPU). Default 0. @since 0.2 */
    MEM4D_LAYOUT_OPTIMIZER_OFFLOAD_PPM = 40,
    /** "framework": the training stack whose conventions and buffers apply:
     * 0 "megatron" (default; Megatron-LM / Megatron-Core), 1 "torchtitan" (FSDP2 over
     * dp x cp with fp32 sharded parameters, bf16 compute, fp32 loss), 2 "deepspeed"
     * (ZeRO stage zero_stage with its buckets), 3 "nanotron" (fp32 gradient
     * accumulation buffers, ZeRO-0/1). See doc/full-model.md, "Frameworks".
     * Paper mode refuses anything but megatron. @since 0.2 */
    MEM4D_LAYOUT_FRAMEWORK = 41,
    /** "reshard_after_forward" (torchtitan / FSDP2): 0 "auto" (torchtitan's rule: every
     * transformer block but the last reshards, none under pipeline parallelism, the
     * root module never), 1 "always", 2 "never". @since 0.2 */
    MEM4D_LAYOUT_RESHARD_AFTER_FORWARD = 42,
    /** "dp_replicate": HSDP replicate degree (torchtitan data_parallel_replicate_degree);
     * FSDP shards over dp / dp_replicate x cp. Must divide dp. Default 1. @since 0.2 */
    MEM4D_LAYOUT_DP_REPLICATE = 43,
    /** "recompute_every": with recompute = full, checkpoint only every N-th transformer
     * block and keep the others whole (torchtitan's layer-selective AC,
     * selective_ac_option = N). 0 or 1 = every block. @since 0.2 */
    MEM4D_LAYOUT_RECOMPUTE_EVERY = 44,
    /** "float8" (torchtitan / torchao float8 linears): 0 "none", 1 "tensorwise",
     * 2 "rowwise". @since 0.2 */
    MEM4D_LAYOUT_FLOAT8 = 45,
    /** "fp8_all_gather": FSDP all-gathers float8 weights (enable_fsdp_float8_all_gather,
     * tensorwise only). Default 0. @since 0.2 */
    MEM4D_LAYOUT_FP8_ALL_GATHER = 46,
    /** "allgather_bucket_size" (DeepSpeed ZeRO-1/2) in elements; 0 = DeepSpeed's 5e8.
     * The reduce bucket is ddp_bucket_size (alias "reduce_bucket_size"; 0 = 5e8 with
     * framework deepspeed). @since 0.2 */
    MEM4D_LAYOUT_ALLGATHER_BUCKET_SIZE = 47,
    /** "stage3_prefetch_bucket_size" (DeepSpeed ZeRO-3) in elements; 0 = 5e7. @since 0.2 */
    MEM4D_LAYOUT_PREFETCH_BUCKET_SIZE = 48,
    /** "stage3_max_live_parameters" (DeepSpeed ZeRO-3) in elements; 0 = 1e9. @since 0.2 */
    MEM4D_LAYOUT_MAX_LIVE_PARAMETERS = 49,
    /** "offload": 0 "none", 1 "optimizer" (master weights and moments in CPU memory),
     * 2 "optimizer_and_params" (ZeRO-3 parameters too). DeepSpeed only. @since 0.2 */
    MEM4D_LAYOUT_OFFLOAD = 50,
    /** "contiguous_gradients" (DeepSpeed): copy reduced gradients into one contiguous
     * buffer. Default 1. @since 0.2 */
    MEM4D_LAYOUT_CONTIGUOUS_GRADIENTS = 51,
    /** "pipeline_schedule": 0 "1f1b" (default), 1 "afab" (all forward, all backward:
     * nanotron's AllForwardAllBackward engine keeps every micro-batch). @since 0.2 */
    MEM4D_LAYOUT_PIPELINE_SCHEDULE = 52,
    /** "compile": torch.compile (torchtitan): 0 "none", 1 "blocks" (each transformer
     * block, torchtitan through 2024: not modelled, the estimate warns), 2
     * "blocks_and_loss" (torchtitan since 2025 also compiles the loss: Inductor fuses
     * the fp32 upcast, softmax and loss, so only the bf16 logits and their bf16
     * gradient are logits-sized). Default 0. @since 0.2 */
    MEM4D_LAYOUT_COMPILE = 53,
    /** "expandable_segments": PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; freed
     * blocks no longer strand whole segments (see doc/full-model.md, "The allocator").
     * Default 0. @since 0.2 */
    MEM4D_LAYOUT_EXPANDABLE_SEGMENTS = 54,
    /** "optimizer_moments": state tensors the optimizer keeps per parameter besides the
     * master weights: 2 Adam (first and second moment, default), 1 SGD with momentum
     * (Megatron's --optimizer sgd, --sgd-momentum 0.9 by default: one momentum buffer),
     * 0 SGD without momentum. The first moment has optimizer_state_bytes, the second
     * exp_avg_sq_bytes. Framework megatron only; paper mode refuses anything but 2.
     * @since 0.2 */
    MEM4D_LAYOUT_OPTIMIZER_MOMENTS = 55,
    /** "overlapped_dist_opt": 1 for Megatron-LLaMA's --overlapped-distributed-optimizer:
     * no whole gradient buffer; each rank keeps its gradient shard and a receiving
     * shard (main_grad_bytes each), one reduce bucket of ddp_bucket_size elements
     * (its --reduce-bucket-size; 0 = 5e8) and a shard copy of the parameters. Needs
     * dist_opt, framework megatron and a dense model; paper mode refuses it.
     * Default 0. @since 0.2 */
    MEM4D_LAYOUT_OVERLAPPED_DIST_OPT = 56,
    /** "dist_opt_instances": copies of the distributed optimizer over the data-parallel
     * domain (Megatron's --num-distributed-optimizer-instances): the optimizer state
     * (and with zero_stage 2/3 the gradients and weights) shards over dp·cp/instances
     * ranks, the experts' over their data-parallel size/instances; both must divide.
     * Needs dist_opt (or zero_stage >= 1) and framework megatron. Default 1.
     * @since 0.2 */
    MEM4D_LAYOUT_DIST_OPT_INSTANCES = 57,
    /** "moe_capacity_factor_ppm": Megatron's --moe-expert-capacity-factor in millionths
     * (1250000 = 1.25); each expert takes at most ceil(tokens·topk/experts·factor)
     * tokens of a rank. 0 (default) = no capacity, no token dropped. With
     * ::MEM4D_LAYOUT_MOE_PAD_TO_CAPACITY every expert input is padded to the capacity,
     * so the routed tokens per token are topk·factor; without padding, at most topk and
     * at most topk·factor (tokens beyond the capacity are dropped). Framework megatron.
     * @since 0.2 */
    MEM4D_LAYOUT_MOE_CAPACITY_FACTOR_PPM = 58,
    /** "moe_pad_to_capacity": 1 for --moe-pad-expert-input-to-capacity (needs
     * ::MEM4D_LAYOUT_MOE_CAPACITY_FACTOR_PPM). Default 0. @since 0.2 */
    MEM4D_LAYOUT_MOE_PAD_TO_CAPACITY = 59,
    /** "activation_offload_layers": layers whose activations Transformer Engine's CPU
     * offloading moves to the host (Megatron's --cpu-offloading-num-layers N): of a stage's
     * ℓ layers at most ℓ − N keep their activations on the GPU at any time. Framework
     * megatron, one pipeline stage, no recomputation (Megatron refuses the others), N < ℓ.
     * The step time counts the host transfers where they outlast the compute beside them,
     * over the device's ::MEM4D_DEVICE_HOST_BANDWIDTH (unknown: left out, with a warning).
     * Default 0.
     * @since 0.2 */
    MEM4D_LAYOUT_ACTIVATION_OFFLOAD_LAYERS = 60,
    /** "pp_return_outputs": 1 when torch.distributed.pipelining's schedule keeps every
     * micro-batch's output on the last stage and concatenates them at the end of the step
     * (PipelineSchedule.step's return_outputs, True by default; torchtitan passes False
     * since 2025-10, and its earlier releases kept them): the last stage holds the bf16
     * logits of the earlier micro-batches at each loss, and twice all of them while they
     * are merged. Framework torchtitan; no effect without pipeline parallelism.
     * Default 0. @since 0.2 */
    MEM4D_LAYOUT_PP_RETURN_OUTPUTS = 61,
    /** "first_chunk_fewer_layers": the first virtual pipeline stage (stage 0's first
     * chunk) holds this many transformer layers fewer than every other virtual stage:
     * Megatron's --account-for-embedding-in-pipeline-split, or a
     * --pipeline-model-parallel-layout such as "Et|(tt|)*30mL". With it or
     * ::MEM4D_LAYOUT_LAST_CHUNK_FEWER_LAYERS set, the pp·vpp virtual stages hold
     * (num_layers + first + last)/(pp·vpp) layers each (which must divide), less these
     * at the two ends; not with first/last_stage_layers. Default 0. @since 0.2 */
    MEM4D_LAYOUT_FIRST_CHUNK_FEWER_LAYERS = 62,
    /** "last_chunk_fewer_layers": the same for the last virtual stage (the last stage's
     * last chunk; --account-for-loss-in-pipeline-split). Default 0. @since 0.2 */
    MEM4D_LAYOUT_LAST_CHUNK_FEWER_LAYERS = 63,
    /** Experimental (values deepep, hybridep): "moe_dispatcher": how MoE tokens reach their
     * experts (Megatron's --moe-token-dispatcher-type and --moe-flex-dispatcher-backend), a ::mem4d_moe_dispatcher.
     * allgather gathers every token of the tp x ep group on each rank and back (transients of
     * T·tp·ep tokens); deepep and hybridep (the flex dispatcher) keep persistent communication
     * buffers outside PyTorch's allocator (FIXED): DeepEP's NVLink buffer, a 32 MiB workspace
     * and across nodes its RDMA buffer in the NVSHMEM heap (512 MiB granularity), sized by the
     * group (ep x etp ranks, one of DeepEP's configured sizes) and ::MEM4D_LAYOUT_MOE_DISPATCHER_SMS;
     * HybridEP's buffers sized for every token of the group reaching one rank, with its routing
     * handles kept per layer and micro-batch. Needs experts and ep x etp > 1 (flex). HybridEP's
     * NVLink rate is published for 900 GB/s links (B200, GB200) alone: on a device whose
     * intra_node_bandwidth is lower (H100) its step time carries a warning and the search
     * proposes it only when the dispatcher is listed; so does DeepEP on an AMD GPU (the
     * mi300x-192 preset: its rates are measured on NVIDIA GPUs alone). DeepEP over nodes of
     * fewer than 8 GPUs (a GB200 NVL72's 4-GPU trays) runs only inside a node: a wider ep x etp
     * group is refused
     * by mem4d_estimate() (::MEM4D_E_CONFLICT). So are HybridEP on a GPU before Hopper (a device
     * with peak_flops and no peak_fp8_flops, an A100) or on an AMD GPU (the mi300x-192 preset),
     * and DeepEP before Hopper over a group of more than 8 GPUs or wider than a node.
     * Default alltoall. @since 0.2 */
    MEM4D_LAYOUT_MOE_DISPATCHER = 64,
    /** Experimental: "moe_dispatcher_sms": streaming multiprocessors DeepEP's kernels use
     * (--moe-flex-dispatcher-num-sms), even, 2 to 256; its buffers scale with them. Default 20
     * (Megatron-Core's). @since 0.2 */
    MEM4D_LAYOUT_MOE_DISPATCHER_SMS = 65,
    /** "moe_pad_multiple": each expert's token count rounded up to a multiple of this for fp8/fp4
     * GEMMs (--moe-router-padding-for-quantization: 16 for fp8, 32 for MXFP8, 128 for fp4):
     * with the alltoall dispatcher every sender pads each expert's count, so a rank's experts
     * receive up to ep·etp·(multiple − 1) more rows each (taken at its mean, half that); the
     * other dispatchers pad once on the receiver. 0 (default): none. @since 0.2 */
    MEM4D_LAYOUT_MOE_PAD_MULTIPLE = 66,
    /** "moe_ep_overlap": Megatron's --overlap-moe-expert-parallel-comm, the forward of one
     * micro-batch run layer by layer beside the backward of another to hide the expert
     * all-to-alls: one more expert layer's activations live at the peak, and with the flex
     * dispatcher each expert layer keeps its dispatch input. Needs ep > 1, and vpp > 1 with
     * pp > 1 (as Megatron-Core). Default 0. @since 0.2 */
    MEM4D_LAYOUT_MOE_EP_OVERLAP = 67,
    /** "delay_wgrad": --delay-wgrad-compute, Transformer Engine holding a layer's linear inputs
     * (gathered, with sequence parallelism) and output gradients until its weight gradients run
     * at the end of the layer's step: added to one layer's backward working set. Needs
     * ::MEM4D_LAYOUT_MOE_EP_OVERLAP. Default 0. @since 0.2 */
    MEM4D_LAYOUT_DELAY_WGRAD = 68,
    /** "cuda_graph": Megatron's --cuda-graph-impl, a ::mem4d_cuda_graph. Graphed layers' memory
     * lives in a private pool the eager parts (the optimizer step, the loss) cannot reuse: their
     * transients stack on the pool's peak (reserved, not allocated). transformer_engine keeps
     * static inputs per in-flight layer (the hidden state, and with attention graphed a causal
     * mask of s bytes per token); local one hidden state per in-flight micro-batch;
     * full_iteration a copy of every micro-batch's input. Default none. @since 0.2 */
    MEM4D_LAYOUT_CUDA_GRAPH = 69,
    /** Experimental: "cuda_graph_scope": what per-layer CUDA graphs capture (--cuda-graph-scope /
     * --cuda-graph-modules), bits: 1 attn, 2 mlp, 4 moe, 8 moe_router, 16 moe_preprocess;
     * 0 (default) the whole layer. With attention graphed, transformer_engine keeps a
     * causal mask per graphed layer and micro-batch; the EP overlap refuses mlp and moe
     * (and the whole layer). @since 0.2 */
    MEM4D_LAYOUT_CUDA_GRAPH_SCOPE = 70,
    /** "fp32_residual": --fp32-residual-connection, the residual stream in fp32: each stage's
     * received input kept per in-flight micro-batch, the pipeline buffers and full-recompute
     * checkpoints at 4 bytes an element (Transformer Engine's norms still save bf16 copies).
     * Needs 2-byte parameters. Default 0. @since 0.2 */
    MEM4D_LAYOUT_FP32_RESIDUAL = 71,
    /** Experimental: "fsdp_double_buffer": Megatron FSDP's persistent double buffers for its all-gathers
     * and reduce-scatters (--fsdp-double-buffer, turned on by --use-nccl-ub): the gathered
     * layers' weights and the reduce-scatter buckets of the forward/backward stay allocated
     * through the optimizer step. Needs zero_stage >= 2 (framework megatron). Default 0.
     * @since 0.2 */
    MEM4D_LAYOUT_FSDP_DOUBLE_BUFFER = 72,
    /** Experimental: "offload_modules": Megatron-Core's fine-grained activation offloading
     * (--fine-grained-activation-offloading --offload-modules): the inputs these modules keep
     * for backward go to the host during the forward and come back before their backward,
     * bits: 1 attn_norm, 2 qkv_linear, 4 core_attn, 8 attn_proj (needs core_attn), 16
     * mlp_norm, 32 expert_fc1, 64 moe_act (experts only). Two layers' worth stay on the GPU
     * (the last layer's groups, kept so the first reload does not stall, and the layer being
     * reloaded). Framework megatron; not with activation_offload_layers, nor the expert
     * modules beside the moe recompute module. Default 0. @since 0.2 */
    MEM4D_LAYOUT_OFFLOAD_MODULES = 73,
    /** Experimental: "activation_offload_fraction_ppm": the share of eligible offload groups offloaded
     * (--activation-offload-fraction), millionths; taken as that share of the bytes.
     * Default 1000000. @since 0.2 */
    MEM4D_LAYOUT_ACTIVATION_OFFLOAD_FRACTION_PPM = 74,
    /** "defer_embedding_wgrad": --defer-embedding-wgrad-compute, the output layer's weight
     * gradient computed at the pipeline flush: the last stage keeps each deferred
     * micro-batch's head input (2h·T/t_sp) and logits gradient (2 bytes a logit) until then.
     * Needs pp > 1 (framework megatron). Default 0. @since 0.2 */
    MEM4D_LAYOUT_DEFER_EMBEDDING_WGRAD = 75,
    /** "wgrad_deferral_limit": how many micro-batches are deferred (--wgrad-deferral-limit);
     * 0 (default) all of them (the global batch's, or pp when it is unknown). @since 0.2 */
    MEM4D_LAYOUT_WGRAD_DEFERRAL_LIMIT = 76,
    /** Experimental: "allgather_groups": --create-all-gather-group, separate NCCL communicators over the
     * data×context ranks (and the expert data-parallel ranks with ep > 1) for the
     * distributed optimizer's all-gathers, so they overlap its reduce-scatters: each another
     * communicator's buffers in FIXED. Default 0. @since 0.2 */
    MEM4D_LAYOUT_ALLGATHER_GROUPS = 77,
    /** "moe_imbalance_ppm": the expert rows the busiest expert-parallel rank receives over the mean,
     * millionths, 1000000 or more (1000000: balanced, what --moe-router-force-load-balancing gives,
     * which the Megatron-LM reader sets). Dropless routing with a learned router loads some ranks more;
     * every rank waits for the busiest at the combine, so its expert GEMMs and the bytes it receives set
     * the step. 0 derives it for dropless routing from a published per-expert load spread of an
     * auxiliary-loss router, the experts per rank and ep (doc/perf.md, "Token imbalance"); a capacity
     * factor caps either. Set it from the router's measured loads. Memory sizes the busiest rank's
     * routed-token buffers by it too: unset, by the derived figure with the router's published spread
     * (a device's moe_load_spread_ppm is the step time's alone). `mem4d calibrate` leaves it as set.
     * Default 0. @since 0.2 */
    MEM4D_LAYOUT_MOE_IMBALANCE_PPM = 78,
    /** "moe_grouped_gemm": 1 for --moe-grouped-gemm (Transformer Engine's GroupedLinear: the local
     * experts' GEMMs run 4 at a time on its compute streams), 0 for Megatron-Core's SequentialMLP (one
     * expert after another). Megatron-LM's default is 0; the library's 1, as every published MoE
     * recipe sets it. Only the step time depends on it. Default 1. @since 0.2 */
    MEM4D_LAYOUT_MOE_GROUPED_GEMM = 79,
    /** "moe_shared_expert_overlap": 1 for --moe-shared-expert-overlap, the shared expert run on its own
     * stream beside the token dispatch and combine (its first linear and activation beside the dispatch,
     * its second beside the combine; the backward likewise). Only the step time depends on it; no effect
     * without a shared expert, nor with ::MEM4D_LAYOUT_MOE_EP_OVERLAP (which schedules the communication
     * itself). Framework megatron. Default 0. @since 0.2 */
    MEM4D_LAYOUT_MOE_SHARED_EXPERT_OVERLAP = 80,
    /** "optimizer_state_offload": 1 for Megatron-Core's --offload-optimizer-states
     * (OptimizerStateOffloader): after each optimizer step the distributed optimizer's Adam
     * moments and fp32 main parameters are copied to pinned host memory and their GPU storage
     * freed, and they are reloaded before the next step. They are off the GPU at the
     * forward/backward peak and back at the optimizer step, which full mode then counts with
     * them (doc/full-model.md, "Optimizer state offload"). Unlike ::MEM4D_LAYOUT_OPTIMIZER_OFFLOAD_PPM
     * nothing is updated on the host. Framework megatron, distributed optimizer. Default 0.
     * @since 0.2 */
    MEM4D_LAYOUT_OPTIMIZER_STATE_OFFLOAD = 81,
    /** Experimental: "logprob_loss": the loss a reinforcement-learning trainer computes on the logits instead
     * of Megatron's cross entropy (doc/full-model.md, "Dynamic batching and the trainers").
     * 0: Megatron's. 1: slime's log-probabilities: Megatron-Core's Float16Module returns the
     * logits cast to fp32 (the model is called without labels) and the loss keeps its own
     * fp32 softmax for backward, 8 bytes per logit at the loss where Megatron's fused cross
     * entropy works in place on one fp32 copy (6). 2: the same with an entropy term in the loss
     * (slime's --entropy-coef not 0), which also keeps the fp32 logits and makes the entropy's
     * gradient beside the softmax's in backward, 12 bytes per logit. Framework megatron.
     * Default 0. @since 0.2 */
    MEM4D_LAYOUT_LOGPROB_LOSS = 82,
    /** "fp8_recipe": Transformer Engine's fp8 scaling recipe with ::MEM4D_LAYOUT_FP8 (Megatron's
     * --fp8-recipe): 0 "delayed" (Megatron's default), 1 "tensorwise", 2 "mxfp8", 3 "blockwise",
     * 4 "custom"; 5 "nvfp4" is fp4 training instead (Megatron's --fp4-format e2m1
     * --fp4-recipe nvfp4: NVFP4BlockScaling), whose GEMMs run at the device's
     * ::MEM4D_DEVICE_PEAK_FP4_FLOPS, MFU taken of it, and which a device without it refuses
     * (::MEM4D_E_CONFLICT); its linear weights keep 9/8 byte each beside the bf16 copy (4-bit
     * values and an E4M3 scale per 16, rowwise and columnwise) where fp8's keep 2, and with
     * ::MEM4D_LAYOUT_FP8_PARAM_GATHER (--fp4-param-gather) those alone (doc/perf.md, "NVFP4").
     * Memory: with any recipe but delayed, Megatron-Core has the attention's output
     * projection save its bf16 input, which the attention kernel keeps anyway, instead of an fp8
     * copy of it (attention.py, set_save_original_input; Transformer Engine 2.6 and later), so
     * the a·d_v bytes per token of that copy are not kept (doc/full-model.md). Speed: the
     * linear and expert GEMMs with their quantization take the recipe's measured time over
     * delayed scaling's (doc/perf.md, FP8_RECIPE_TIME). Framework megatron. Default 0.
     * @since 0.2 */
    MEM4D_LAYOUT_FP8_RECIPE = 83,
    /** "cross_entropy_impl": the kernels of Megatron's vocab-parallel cross entropy, for the
     * step time (HBM bytes per logit over forward and backward; doc/perf.md, "Cross
     * entropy"): 0 "stack" (the stack profile's figure: 12 on middle and nemo-25, 48 on
     * nemo-24.07, 52 on megatron-lm-2022, megatron-deepspeed and nanotron, 40 on the other
     * PyTorch-native ones), 1 "unfused" (Megatron-LM without --cross-entropy-loss-fusion,
     * its default: tensor_parallel/cross_entropy.py's separate kernels, 52), 2 "native"
     * (--cross-entropy-loss-fusion with --cross-entropy-fusion-impl native: the steps
     * compiled by torch.compile, 32, and 48 with ::MEM4D_LAYOUT_CROSS_ENTROPY_FUSION, the
     * releases whose compiled steps rebuild the fp32 logits and copy them back), 3 "te"
     * (--cross-entropy-fusion-impl te: Transformer Engine's parallel_cross_entropy, two
     * passes over the bf16 logits and the gradient written in place, 10). The memory
     * figures do not read it. Framework megatron. Default 0. @since 0.2 */
    MEM4D_LAYOUT_CROSS_ENTROPY_IMPL = 84,
    /** "cp_comm_type": how context parallelism moves K and V, for the step time (doc/perf.md,
     * "Communication, on the links it crosses", CP): 0 "p2p" (the ring: c − 1 steps of K,V in the forward and of K,V
     * and dK,dV in the backward, each under the attention of the chunk it brings; Megatron's
     * --cp-comm-type p2p, its default), 1 "all_gather" (K and V all-gathered over the CP group
     * before the attention and again before its backward, dK and dV reduce-scattered after it,
     * none of it under compute: Llama 3's CP, arXiv 2407.21783 sec. 3.3.2, and Transformer
     * Engine's AttnFuncWithCPAndKVAllGather, Megatron's --cp-comm-type all_gather). Not modelled,
     * read as 0 with an import warning: Megatron's a2a and a2a+p2p, a per-layer list mixing
     * kinds, torchtitan's context_parallel_rotate_method allgather (one all-gather under the
     * local chunk's attention). The memory figures do not read it. Default 0. @since 0.2 */
    MEM4D_LAYOUT_CP_COMM_TYPE = 85,
    /** "overlap_p2p_comm": Megatron-Core's overlap_p2p_comm (Megatron-LM's default with virtual
     * pipeline stages since 2023-10, core_r0.4, --no-overlap-p2p-communication;
     * --overlap-p2p-communication from 2023-05 to then; NeMo and Megatron-Bridge set it with
     * vpp > 1): the interleaved schedule's steady
     * state posts each chunk's send and receive asynchronously and waits for them only before the
     * chunk that needs them, so they run under the other chunks' compute (costing it what a hidden
     * NCCL kernel costs, doc/perf.md "The pipeline and the step"); the warm-up's and cool-down's
     * stay exposed. Read only with vpp > 1 and pp > 1 (Megatron-Core refuses it without
     * interleaving) and not under DeepSpeed's pipeline engine. The memory figures do not read it.
     * The Megatron-LM importer sets it as Megatron-LM does: on with virtual stages unless
     * --no-overlap-p2p-communication. Default 0. @since 0.2 */
    MEM4D_LAYOUT_OVERLAP_P2P_COMM = 86
} mem4d_layout_param;

/**
 * Values of ::MEM4D_LAYOUT_MOE_DISPATCHER.
 * @since 0.2
 */
typedef enum mem4d_moe_dispatcher {
    MEM4D_MOE_DISPATCHER_ALLTOALL = 0,  /**< "alltoall": Megatron's alltoall token dispatcher. */
    MEM4D_MOE_DISPATCHER_ALLGATHER = 1, /**< "allgather": Megatron's default, all-gather over tp x ep. */
    MEM4D_MOE_DISPATCHER_DEEPEP = 2,    /**< "deepep": the flex dispatcher over DeepEP. */
    MEM4D_MOE_DISPATCHER_HYBRIDEP = 3   /**< "hybridep": the flex dispatcher over DeepEP's HybridEP. */
} mem4d_moe_dispatcher;

/**
 * Values of ::MEM4D_LAYOUT_CUDA_GRAPH.
 * @since 0.2
 */
typedef enum mem4d_cuda_graph {
    MEM4D_CUDA_GRAPH_NONE = 0,              /**< "none": eager. */
    MEM4D_CUDA_GRAPH_LOCAL = 1,             /**< "local": Megatron-Core's CudaGraphManager per layer. */
    MEM4D_CUDA_GRAPH_TRANSFORMER_ENGINE = 2, /**< "transformer_engine": TE's make_graphed_callables per layer. */
    MEM4D_CUDA_GRAPH_FULL_ITERATION = 3     /**< "full_iteration": the whole forward/backward of a step. */
} mem4d_cuda_graph;

/**
 * Values of ::MEM4D_LAYOUT_FRAMEWORK.
 * @since 0.2
 */
typedef enum mem4d_framework {
    MEM4D_FRAMEWORK_MEGATRON = 0,   /**< Megatron-LM / Megatron-Core (and Megatron-Bridge, ms-swift). */
    MEM4D_FRAMEWORK_TORCHTITAN = 1, /**< torchtitan: FSDP2, torch-native TP, op-selective AC, torchao float8. */
    MEM4D_FRAMEWORK_DEEPSPEED = 2,  /**< DeepSpeed ZeRO-1/2/3. */
    MEM4D_FRAMEWORK_NANOTRON = 3    /**< nanotron: ZeRO-0/1, fp32 gradient accumulation. */
} mem4d_framework;

/**
 * Create a layout with every parameter at its default.
 * @param[out] out Receives the new handle; set to NULL on failure.
 * @return ::MEM4D_OK, ::MEM4D_E_INVALID_ARG or ::MEM4D_E_NOMEM.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_layout_new(mem4d_layout **out);

/**
 * Copy a layout.
 * @param layout The layout to copy.
 * @param[out] out Receives the new handle; set to NULL on failure.
 * @return ::MEM4D_OK, ::MEM4D_E_INVALID_ARG or ::MEM4D_E_NOMEM.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_layout_clone(const mem4d_layout *layout, mem4d_layout **out);

/**
 * Overwrite one layout with another, without allocating.
 * @param dst The layout to overwrite.
 * @param src The layout to copy from.
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_layout_copy(mem4d_layout *dst, const mem4d_layout *src);

/**
 * Free a layout. NULL is allowed.
 * @param layout The handle to free.
 * @since 0.1
 */
MEM4D_API void mem4d_layout_free(mem4d_layout *layout);

/**
 * Set a layout parameter.
 * @param layout The layout.
 * @param key The parameter.
 * @param value The new value, within mem4d_layout_param_bounds().
 * @return ::MEM4D_OK, ::MEM4D_E_RANGE (value unchanged) or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_layout_set(mem4d_layout *layout, mem4d_layout_param key, uint64_t value);

/**
 * Read a layout parameter: the value last set, or the default
 * (mem4d_layout_param_default()) where none was. What the estimate makes of a
 * key that the device can decide is the report's: ::MEM4D_LAYOUT_FLASH_ATTN
 * left unset reads 1 here, and ::MEM4D_INFO_ATTENTION_KERNEL says which
 * attention the job runs.
 * @param layout The layout.
 * @param key The parameter.
 * @param[out] value Receives the stored value.
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_layout_get(const mem4d_layout *layout, mem4d_layout_param key, uint64_t *value);

/**
 * Set a layout parameter by name from text ("tp", "8"; "recompute", "full").
 * @param layout The layout.
 * @param name A parameter name or alias.
 * @param value The value's text.
 * @return ::MEM4D_OK, ::MEM4D_E_UNKNOWN_KEY, ::MEM4D_E_PARSE, ::MEM4D_E_RANGE or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_layout_set_str(mem4d_layout *layout, const char *name, const char *value);

/**
 * Set the transformer layers of every virtual pipeline stage, as
 * Megatron-Core's --pipeline-model-parallel-layout places them: entry k
 * is virtual stage k, which runs on pipeline rank k mod pp as its chunk
 * k / pp (the embedding is on virtual stage 0, the loss and any MTP layers
 * on the last). An entry may be 0 (a stage holding only the embedding or the
 * loss). The table overrides the even split; at estimate time it must have
 * pp x vpp entries summing to num_layers, every rank must hold a layer, and
 * it contradicts ::MEM4D_LAYOUT_FIRST_STAGE_LAYERS, ::MEM4D_LAYOUT_LAST_STAGE_LAYERS
 * and the chunk_fewer_layers keys (::MEM4D_E_CONFLICT, ::MEM4D_E_LAYERS_PP from
 * mem4d_validate()). A search keeps the table and only yields the pp and vpp
 * whose product is its length. mem4d_layout_set_str() sets it from text as
 * "stage_layers" ("3,2,2,1"; "" clears it).
 * @param layout The layout.
 * @param layers The layers of each virtual stage; may be NULL when n is 0.
 * @param n Entries; 0 clears the table (the even split again).
 * @return ::MEM4D_OK, ::MEM4D_E_RANGE (more than mem4d_layout_stage_layers_max()
 *         entries, or more than 4096 layers in all) or ::MEM4D_E_INVALID_ARG.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_layout_set_stage_layers(mem4d_layout *layout, const uint32_t *layers, size_t n);

/**
 * Read the virtual-stage layer table of mem4d_layout_set_stage_layers().
 * @param layout The layout.
 * @param[out] layers Receives up to n entries; may be NULL to measure.
 * @param n Room at layers.
 * @return The table's length (0: none, the even split), also when larger
 *         than n; 0 for a NULL layout.
 * @since 0.2
 */
MEM4D_API size_t mem4d_layout_get_stage_layers(const mem4d_layout *layout, uint32_t *layers, size_t n);

/**
 * The most virtual stages a layer table may hold.
 * @return The bound (1024 in this version).
 * @since 0.2
 */
MEM4D_API size_t mem4d_layout_stage_layers_max(void);

/**
 * Number of layout parameter keys this library knows (keys are 0 to count-1).
 * @return The count.
 * @since 0.1
 */
MEM4D_API size_t mem4d_layout_param_count(void);

/**
 * The canonical string name of a layout parameter.
 * @param key The parameter.
 * @return A static string, or NULL for an unknown key.
 * @since 0.1
 */
MEM4D_API const char *mem4d_layout_param_name(mem4d_layout_param key);

/**
 * Look a layout parameter up by name or alias.
 * @param name The name.
 * @param[out] key Receives the key.
 * @return ::MEM4D_OK, ::MEM4D_E_UNKNOWN_KEY or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_layout_param_from_name(const char *name, mem4d_layout_param *key);

/**
 * Bounds of a layout parameter. Keys holding a byte width (main_grad_bytes,
 * param_bytes, optimizer_state_bytes, master_weight_bytes) accept only the
 * widths listed in their documentation; every other value in [min, max] is
 * accepted by mem4d_layout_set().
 * @param key The parameter.
 * @param[out] min Receives the lowest value (may be NULL).
 * @param[out] max Receives the highest value (may be NULL).
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_layout_param_bounds(mem4d_layout_param key, uint64_t *min, uint64_t *max);

/**
 * Name of a value of an enumerated layout parameter ("full" for
 * ::MEM4D_LAYOUT_RECOMPUTE = 2), for printing.
 * @param key The parameter.
 * @param value The value.
 * @return A static string, or NULL when the key is not enumerated or the value unknown.
 * @since 0.1
 */
MEM4D_API const char *mem4d_layout_value_name(mem4d_layout_param key, uint64_t value);

/**
 * What a layout parameter's number means.
 * @param key The parameter.
 * @param[out] kind Receives the kind.
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG (unknown key, NULL @p kind).
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_layout_param_kind(mem4d_layout_param key, mem4d_param_kind *kind);

/**
 * The value a new layout (mem4d_layout_new()) holds for a parameter.
 * @param key The parameter.
 * @param[out] value Receives the default.
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_layout_param_default(mem4d_layout_param key, uint64_t *value);

/**
 * Whether a layout key's value is experimental: tied to one framework
 * release's internals, outside the ABI freeze (doc/abi-policy.md,
 * "Experimental keys"): its meaning, bounds or default may change in a
 * minor release, or the value be retired, while its number is never reused.
 * @param key A layout parameter.
 * @param value The value asked about (any value of a wholly experimental key).
 * @return 1 when experimental; 0 when stable, and for an unknown key.
 * @since 0.2
 */
MEM4D_API int mem4d_layout_param_experimental(mem4d_layout_param key, uint64_t value);

/**
 * Check a layout against a model: every rule of doc/formulas.md, section
 * "Valid layouts".
 * @param model The model.
 * @param layout The layout.
 * @param why Buffer for a sentence naming the numbers at fault, "" when the
 *        layout is valid (may be NULL; see "Conventions").
 * @param why_size Size of @p why in bytes; the text is truncated to fit.
 * @return ::MEM4D_OK or the specific status of the first rule broken
 *         (::MEM4D_E_HEADS_TP, ::MEM4D_E_WORLD, ...).
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_validate(const mem4d_model *model, const mem4d_layout *layout,
                                      char *why, size_t why_size);

/** @} */

/* ------------------------------------------------------------------------ */
/** @defgroup device Device: one GPU
 * Memory sizes are exact bytes as the vendor ships them: an "80 GB" H100 has
 * 80 GiB = 85899345920 bytes, as CUDA reports it.
 * @{ */

/** Opaque device handle. @since 0.1 */
typedef struct mem4d_device mem4d_device;

/**
 * Device parameters. Values are fixed forever; new keys are appended.
 * @since 0.1
 */
typedef enum mem4d_device_param {
    MEM4D_DEVICE_MEMORY_BYTES = 0,          /**< "memory_bytes": usable HBM in bytes. Required. */
    MEM4D_DEVICE_PEAK_FLOPS = 1,            /**< "peak_flops": dense bf16 peak, FLOP/s. */
    MEM4D_DEVICE_PEAK_FP8_FLOPS = 2,        /**< "peak_fp8_flops": dense fp8 peak, FLOP/s (0 when none). */
    MEM4D_DEVICE_HBM_BANDWIDTH = 3,         /**< "hbm_bandwidth": bytes/s. */
    MEM4D_DEVICE_INTRA_NODE_BANDWIDTH = 4,  /**< "intra_node_bandwidth": bytes/s per GPU, one direction (NVLink / Infinity Fabric). */
    MEM4D_DEVICE_INTER_NODE_BANDWIDTH = 5,  /**< "inter_node_bandwidth": bytes/s per GPU, one direction (InfiniBand / RoCE). */
    MEM4D_DEVICE_GPUS_PER_NODE = 6,         /**< "gpus_per_node". Default 8. */
    MEM4D_DEVICE_FIT_THRESHOLD_PPM = 7,     /**< "fit_threshold_ppm": verdict "fits" up to this share of memory. Default 800000. */
    MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM = 8, /**< "matmul_efficiency_ppm": share of peak FLOP/s large GEMMs reach. */
    MEM4D_DEVICE_COMM_EFFICIENCY_PPM = 9,   /**< "comm_efficiency_ppm": share of link bandwidth collectives reach. */
    MEM4D_DEVICE_INTRA_NODE_LATENCY_NS = 10, /**< "intra_node_latency_ns": per-collective-step latency inside a node. */
    MEM4D_DEVICE_INTER_NODE_LATENCY_NS = 11, /**< "inter_node_latency_ns": per-collective-step latency across nodes. */
    MEM4D_DEVICE_CUDA_CONTEXT_BYTES = 12,   /**< "cuda_context_bytes": driver context, kernels, cuBLAS handles. */
    MEM4D_DEVICE_NCCL_BYTES_PER_GROUP = 13, /**< "nccl_bytes_per_group": NCCL buffers per communicator. */
    MEM4D_DEVICE_ALLOCATOR_OVERHEAD_PPM = 14, /**< "allocator_overhead_ppm": reserved over allocated, minus one. */
    MEM4D_DEVICE_WORKSPACE_BYTES = 15,      /**< "workspace_bytes": cuBLAS / attention kernel workspaces. */
    /** "sm_count": streaming multiprocessors (compute units) over which GEMM
     * and attention tiles are quantised into waves; 0 switches wave
     * quantisation off. @since 0.2 */
    MEM4D_DEVICE_SM_COUNT = 16,
    /** "nvlink_domain": GPUs that reach each other over NVLink (8 in a DGX
     * node, 72 in a GB200 NVL72 rack that spans 18 nodes, 2 for bridged
     * H100 NVL pairs); 0 means gpus_per_node. A group whose ranks stay in
     * one domain uses the intra-node link. @since 0.2 */
    MEM4D_DEVICE_NVLINK_DOMAIN = 17,
    /** "nics_per_node": network adapters of one node; with nic_bandwidth
     * it replaces inter_node_bandwidth by nics x bandwidth / gpus_per_node,
     * the share of each GPU when all of them cross the network. 0: use
     * inter_node_bandwidth. @since 0.2 */
    MEM4D_DEVICE_NICS_PER_NODE = 18,
    /** "nic_bandwidth": bytes/s of one network adapter, one direction
     * (400 Gb/s = 50000000000). @since 0.2 */
    MEM4D_DEVICE_NIC_BANDWIDTH = 19,
    /** "kernel_overhead_ns": GPU time lost per kernel to launch and
     * dependency gaps. Default 2000. @since 0.2 */
    MEM4D_DEVICE_KERNEL_OVERHEAD_NS = 20,
    /** "fp8_efficiency_ppm": share of the fp8 peak large fp8 GEMMs reach
     * (the linear layers with fp8 = 1). Default 540000. @since 0.2 */
    MEM4D_DEVICE_FP8_EFFICIENCY_PPM = 21,
    /** "full_fit_threshold_ppm": full mode's verdict is "fits" while reserved memory plus
     * the CUDA context and NCCL (TOTAL) stays within this share of memory. Default
     * 850000: 1/(1 + 14.1%) = 87.6%, with 14.1% the worst under-prediction of a
     * measured peak that full mode models (tier-A rows of tests/data/memory-peaks.csv),
     * rounded down to a 5% step (doc/full-model.md, "The verdict"). Paper mode keeps
     * fit_threshold_ppm. @since 0.2 */
    MEM4D_DEVICE_FULL_FIT_THRESHOLD_PPM = 22,
    /** "host_bandwidth": bytes/s between one GPU and host memory, one direction (PCIe
     * or NVLink-C2C); what activation offloading moves its tensors over. 0 (default):
     * unknown, and the step time leaves offloading's transfers out (the estimate
     * warns). @since 0.2 */
    MEM4D_DEVICE_HOST_BANDWIDTH = 23,
    /** "stack": the software stack the job runs on, a named profile that gives
     * the four keys below wherever they are left at 0 (doc/perf.md, "The
     * software stack", sources each figure): "middle" (0, the default: between
     * the profiled stacks, not the fastest), "megatron-lm-2022" (Megatron-LM
     * of 2021-22, softmax attention), "megatron-deepspeed" (Megatron-DeepSpeed's
     * pipeline engine, bf16), "nemo-24.07" (Megatron-Core 0.8, Transformer
     * Engine 1.9), "nemo-25" (Megatron-Core 0.11 and later, Transformer Engine
     * 2, Megatron-Bridge), "torchtitan" (FSDP2, PyTorch SDPA, eager, its
     * default), "composer" (llm-foundry, PyTorch FSDP, FlashAttention-2),
     * "nanotron", "torchtitan-compile" (torchtitan with torch.compile),
     * "megatron-deepspeed-bigscience-2022-02" (megatron-deepspeed as
     * BigScience's fork ran it from 2021-10 to 2022-03: its fused softmax
     * declines more shapes). The stack's attention kernel decides the job's
     * attention where neither the layout's flash_attn nor attention_kernel
     * is set (the memory model's too). The overlaps a
     * stack runs are the job's layout keys (tp_comm_overlap,
     * overlap_grad_reduce, overlap_param_gather). @since 0.2 */
    MEM4D_DEVICE_STACK = 24,
    /** "attention_kernel": the attention kernel: "auto" (0: the stack's). The
     * layout's flash_attn, where set, is the job's word: 0 runs "unfused", 1 this
     * kernel, else the stack's, else "fa2" where either is "unfused"; unset, the
     * kernel decides the job's attention, its memory too (softmax for "unfused"),
     * "fa2" (FlashAttention-2), "fa3" (FlashAttention-3; a device without an
     * fp8 peak, an A100, has none and runs FlashAttention-2), "cudnn" (cuDNN
     * fused attention), "sdpa" (PyTorch's scaled_dot_product_attention, its
     * FlashAttention-2 kernels), "unfused" (softmax over the materialised
     * s x s scores, no causal skipping), "triton" (flash-attn 1.x's Triton
     * kernel, llm-foundry's attn_impl "triton"). @since 0.2 */
    MEM4D_DEVICE_ATTENTION_KERNEL = 25,
    /** "gemm_library": the generation of the GEMM kernels: "auto" (0: the
     * stack's), "native" (kernels of the device's own generation: Hopper's
     * warpgroup MMA, as cuBLAS 12 and Transformer Engine run), "ampere"
     * (mma.sync kernels, which on Hopper reach about 2/3 of the tensor-core
     * peak), "cuda11" (a CUDA 11-era library, before stream-K: the SMs a
     * GEMM's partial last wave leaves idle stay idle, where later kernels
     * spread that wave over them). @since 0.2 */
    MEM4D_DEVICE_GEMM_LIBRARY = 26,
    /** "microbatch_overhead_ns": time per micro-batch and pipeline stage that
     * the framework spends outside the layers' kernels (schedule, data,
     * loss); 0: the stack's. @since 0.2 */
    MEM4D_DEVICE_MICROBATCH_OVERHEAD_NS = 27,
    /** "grad_accum_bytes": HBM bytes per local weight and micro-batch that
     * gradient accumulation moves outside the weight-gradient GEMMs (0 where
     * the GEMM accumulates into the main gradient, as Megatron's
     * gradient_accumulation_fusion does); 0: the stack's. @since 0.2 */
    MEM4D_DEVICE_GRAD_ACCUM_BYTES = 28,
    /** "attention_efficiency_ppm": share of the large-GEMM rate (matmul_efficiency_ppm
     * x peak_flops) the flash-attention forward reaches at long sequences; the backward
     * keeps the model's backward-to-forward ratio. 0 (default): the attention kernel's
     * share (attention_kernel, the stack's; doc/perf.md, "The software stack"). With
     * attention_kernel unfused (timed as its own GEMMs and bytes) it is the rate over
     * that time instead, 1000000 the model's. A calibration fits it when the runs can
     * tell it apart. @since 0.2 */
    MEM4D_DEVICE_ATTENTION_EFFICIENCY_PPM = 29,
    /** "calibrated_runs": measured runs the device's speed constants were fitted to
     * (mem4d_calibration_fit() sets it); 0: not calibrated. It selects the speed band
     * (doc/perf.md, "Uncertainty"). @since 0.2 */
    MEM4D_DEVICE_CALIBRATED_RUNS = 30,
    /** "speed_band_low_ppm": the lower bound of the measured step time as a share of
     * the predicted one (the 5th percentile of measured / predicted over the
     * validation runs); 0 (default): the library's figure for a calibrated or an
     * uncalibrated device. @since 0.2 */
    MEM4D_DEVICE_SPEED_BAND_LOW_PPM = 31,
    /** "speed_band_high_ppm": the upper bound, likewise (the 95th percentile);
     * 0 (default): the library's figure. @since 0.2 */
    MEM4D_DEVICE_SPEED_BAND_HIGH_PPM = 32,
    /** "board_power_w": the board's rated TDP in watts; the presets set it
     * (doc/presets.md). The step's mean power sets the clock its GEMMs and
     * attention run at: where the rate a GEMM sustains at the TDP is
     * published (H100/H200 SXM, B200: mamf-finder's MSMF) below the burst
     * the compute figures (peak_flops, matmul_efficiency_ppm) hold, a step
     * busy with them runs below that burst (doc/perf.md, "Power limit").
     * 0: unknown, no power balance, and power_limit_w has no effect. @since
     * 0.2 */
    MEM4D_DEVICE_BOARD_POWER_W = 33,
    /** "power_limit_w": the power limit in watts the hosts run their GPUs at
     * (nvidia-smi -pl). Below board_power_w the clock of a step's GEMMs and
     * attention falls as the cube root of the ratio of the power above the
     * board's idle share (a tenth of it), less where the step spends time
     * outside its kernels (the step's power balance); memory-bound work
     * keeps its rate (doc/perf.md, "Power limit"). 0 (default): the board
     * power. @since 0.2 */
    MEM4D_DEVICE_POWER_LIMIT_W = 34,
    /** "hbm_efficiency_ppm": share of hbm_bandwidth that memory-bound kernels
     * (element-wise work, norms, casts, cross entropy, the optimizer step,
     * gradient accumulation, a GEMM's memory floor) reach: a streaming
     * kernel's measured bandwidth over the data sheet's (the presets carry
     * their GPU's published figure, doc/presets.md; B200 and GB200 have none).
     * 0: the data sheet's rate. @since 0.2 */
    MEM4D_DEVICE_HBM_EFFICIENCY_PPM = 35,
    /** "moe_load_spread_ppm": the relative standard deviation of each expert's share of the
     * routed tokens under a learned router (its lasting preferences), millionths, from which the
     * step time derives the busiest expert-parallel rank's load for dropless routing (layout key
     * moe_imbalance_ppm 0; doc/perf.md, "Token imbalance"). A trait of the model's router and data
     * rather than of the GPU, kept with the device so that a calibration can fit it from dropless
     * runs (beside a forced-balance run, or runs at several ep, that tell it from the GEMM rate).
     * 0 (default): the router's published figure, 221871 for an auxiliary-loss router at
     * coefficient 0.001 (MaxVio 0.52 over 64 experts, arXiv 2408.15664, Table 2), 17067 with the
     * model's moe_router_expert_bias (MaxVio 0.04, the same table); a calibration starts from the
     * first. @since 0.2 */
    MEM4D_DEVICE_MOE_LOAD_SPREAD_PPM = 36,
    /** "inter_node_efficiency_ppm": share of the network's rate (inter_node_bandwidth, or
     * nics_per_node x nic_bandwidth over the node's GPUs) that NCCL's collectives and
     * point-to-point transfers across nodes reach, in place of comm_efficiency_ppm there; the
     * links inside a node keep comm_efficiency_ppm. What a calibration fits when its runs' exposed
     * communication crosses the network (doc/perf.md, "Calibration"). 0 (default):
     * comm_efficiency_ppm. @since 0.2 */
    MEM4D_DEVICE_INTER_NODE_EFFICIENCY_PPM = 37,
    /** "pytorch_fsdp": the job's data parallelism is PyTorch's FSDP wrapping the model (each
     * block a unit, the model the root), as on the torchtitan and composer stacks: zero_stage 2
     * is FSDP's SHARD_GRAD_OP, and with gradients reduced once a step (zero_stage 1 or
     * dist_opt: FSDP accumulating over the micro-batches, as Llama 3's pre-training did) the
     * gathers and reduce-scatters run per unit beside the GEMMs, which they slow as FSDP's
     * collectives do (doc/perf.md, "Communication"). 0 (default): the stack's. @since 0.2 */
    MEM4D_DEVICE_PYTORCH_FSDP = 38,
    /** "peak_fp4_flops": dense fp4 (NVFP4, E2M1) tensor-core peak, FLOP/s; 0 when the GPU has
     * no fp4 tensor cores (before Blackwell). The GEMMs of layout fp8_recipe "nvfp4" run at it
     * and MFU is of it; a job with that recipe on a device without it is refused
     * (doc/presets.md; doc/perf.md, "NVFP4"). Default 0. @since 0.2 */
    MEM4D_DEVICE_PEAK_FP4_FLOPS = 39
} mem4d_device_param;

/**
 * Create a device with no memory set and default constants.
 * @param[out] out Receives the new handle; set to NULL on failure.
 * @return ::MEM4D_OK, ::MEM4D_E_INVALID_ARG or ::MEM4D_E_NOMEM.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_device_new(mem4d_device **out);

/**
 * Create a device from a built-in preset such as "h100-80".
 * @param name Preset name (case-insensitive).
 * @param[out] out Receives the new handle; set to NULL on failure.
 * @return ::MEM4D_OK, ::MEM4D_E_UNKNOWN_PRESET, ::MEM4D_E_INVALID_ARG or ::MEM4D_E_NOMEM.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_device_new_preset(const char *name, mem4d_device **out);

/**
 * Copy a device.
 * @param device The device to copy.
 * @param[out] out Receives the new handle; set to NULL on failure.
 * @return ::MEM4D_OK, ::MEM4D_E_INVALID_ARG or ::MEM4D_E_NOMEM.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_device_clone(const mem4d_device *device, mem4d_device **out);

/**
 * Free a device. NULL is allowed.
 * @param device The handle to free.
 * @since 0.1
 */
MEM4D_API void mem4d_device_free(mem4d_device *device);

/**
 * Set a device parameter.
 * @param device The device.
 * @param key The parameter.
 * @param value The new value, within mem4d_device_param_bounds().
 * @return ::MEM4D_OK, ::MEM4D_E_RANGE (value unchanged) or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_device_set(mem4d_device *device, mem4d_device_param key, uint64_t value);

/**
 * Read a device parameter.
 * @param device The device.
 * @param key The parameter.
 * @param[out] value Receives the stored value.
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_device_get(const mem4d_device *device, mem4d_device_param key, uint64_t *value);

/**
 * Set a device parameter by name from text ("memory_bytes", "85899345920").
 * @param device The device.
 * @param name A parameter name or alias.
 * @param value The value's text.
 * @return ::MEM4D_OK, ::MEM4D_E_UNKNOWN_KEY, ::MEM4D_E_PARSE, ::MEM4D_E_RANGE or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_device_set_str(mem4d_device *device, const char *name, const char *value);

/**
 * The device's name: its preset name, or "custom".
 * @param device The device.
 * @return A string owned by the device; "" for NULL.
 * @since 0.1
 */
MEM4D_API const char *mem4d_device_name(const mem4d_device *device);

/**
 * Number of built-in device presets.
 * @return The count.
 * @since 0.1
 */
MEM4D_API size_t mem4d_device_preset_count(void);

/**
 * Name of a built-in device preset.
 * @param index 0 to mem4d_device_preset_count() - 1.
 * @return A static string, or NULL when @p index is out of range.
 * @since 0.1
 */
MEM4D_API const char *mem4d_device_preset_name(size_t index);

/**
 * Number of device parameter keys this library knows.
 * @return The count.
 * @since 0.1
 */
MEM4D_API size_t mem4d_device_param_count(void);

/**
 * The canonical string name of a device parameter.
 * @param key The parameter.
 * @return A static string, or NULL for an unknown key.
 * @since 0.1
 */
MEM4D_API const char *mem4d_device_param_name(mem4d_device_param key);

/**
 * Look a device parameter up by name or alias.
 * @param name The name.
 * @param[out] key Receives the key.
 * @return ::MEM4D_OK, ::MEM4D_E_UNKNOWN_KEY or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_device_param_from_name(const char *name, mem4d_device_param *key);

/**
 * Bounds of a device parameter.
 * @param key The parameter.
 * @param[out] min Receives the lowest value (may be NULL).
 * @param[out] max Receives the highest value (may be NULL).
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_device_param_bounds(mem4d_device_param key, uint64_t *min, uint64_t *max);

/**
 * What a device parameter's number means.
 * @param key The parameter.
 * @param[out] kind Receives the kind.
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG (unknown key, NULL @p kind).
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_device_param_kind(mem4d_device_param key, mem4d_param_kind *kind);

/**
 * The value a new device (mem4d_device_new()) holds for a parameter; presets
 * override the hardware figures.
 * @param key The parameter.
 * @param[out] value Receives the default.
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_device_param_default(mem4d_device_param key, uint64_t *value);

/**
 * Name of a value of an enumerated (::MEM4D_KIND_CHOICE) device parameter.
 * @param key The parameter.
 * @param value The value.
 * @return A static string, or NULL when the key is not enumerated or the value unknown.
 * @since 0.2
 */
MEM4D_API const char *mem4d_device_value_name(mem4d_device_param key, uint64_t value);

/**
 * Apply a device file's text to a device. The format is one `KEY = VALUE`
 * per line, keys and values as for mem4d_device_set_str() (e.g.
 * `gpus_per_node = 4`, `nic_bandwidth = 50000000000`); `preset = NAME`,
 * allowed as the first key only, starts from a built-in device;
 * `name = TEXT` names the device; blank lines and text after `#` are
 * ignored. A rejected text leaves the device unchanged.
 * @param device The device to change.
 * @param text The file's bytes (need not be NUL-terminated).
 * @param length Bytes of text.
 * @param[out] why Receives one sentence naming the line at fault, "" when
 *        the text is applied (may be NULL; see "Conventions").
 * @param why_size Size of why.
 * @return ::MEM4D_OK, ::MEM4D_E_INVALID_ARG, ::MEM4D_E_PARSE (not KEY = VALUE,
 *         a bad value, a line over 511 bytes), ::MEM4D_E_UNKNOWN_KEY,
 *         ::MEM4D_E_RANGE, ::MEM4D_E_UNKNOWN_PRESET or ::MEM4D_E_CONFLICT
 *         (preset after another key).
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_device_parse(mem4d_device *device, const char *text, size_t length, char *why,
                                          size_t why_size);

/**
 * Read a device file (at most 1 MiB) and apply it with mem4d_device_parse().
 * @param device The device to change.
 * @param path The file.
 * @param[out] why Receives one sentence naming the file or line at fault, ""
 *        when the file is applied (may be NULL; see "Conventions").
 * @param why_size Size of why.
 * @return as mem4d_device_parse(), or ::MEM4D_E_IO, ::MEM4D_E_NOMEM.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_device_load(mem4d_device *device, const char *path, char *why, size_t why_size);

/**
 * Write a device as a device file: its name and every parameter (a choice
 * by its value name, "stack = torchtitan"; one that was never set, such as
 * memory_bytes of mem4d_device_new(), as a comment),
 * which mem4d_device_parse() reads back into a new device as an equal one.
 * @param device The device.
 * @param[out] buf Receives the NUL-terminated text ("" when too small).
 * @param size Size of buf (0 with buf NULL to ask for the length).
 * @param[out] length Receives the text's length without the NUL (may be NULL).
 * @return ::MEM4D_OK, ::MEM4D_E_RANGE when buf is too small, ::MEM4D_E_INVALID_ARG.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_device_format(const mem4d_device *device, char *buf, size_t size, size_t *length);

/**
 * The band of a measured step time around a predicted one that @p device
 * gives its estimates: measured / predicted at the 5th and 95th percentile
 * (speed_band_low_ppm / speed_band_high_ppm, or the library's figures for a
 * calibrated or uncalibrated device; doc/perf.md, "Uncertainty"). Every
 * estimate's STEP_TIME_LOW_S and STEP_TIME_HIGH_S are its step time times these.
 * @param device The device.
 * @param[out] low Receives the lower factor (at most 1).
 * @param[out] high Receives the upper factor (at least 1).
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_device_speed_band(const mem4d_device *device, double *low, double *high);

/** @} */

/* ------------------------------------------------------------------------ */
/** @defgroup estimate Estimate: one layout, per-stage memory
 * @{ */

/** Opaque report handle: the result of mem4d_estimate(), reusable. @since 0.1 */
typedef struct mem4d_report mem4d_report;

/**
 * Which memory model produced a report.
 * @since 0.1
 */
typedef enum mem4d_mode {
    MEM4D_MODE_FULL = 0,  /**< Every stage, schedules, buffers and fixed costs. */
    MEM4D_MODE_PAPER = 1  /**< arXiv 2411.06465's formula, exactly: the first stage only. */
} mem4d_mode;

/**
 * Whether full or paper mode models a layout key's value under a framework:
 * where a key applies is part of its row in the key table (doc/keys.md),
 * and an estimate refuses, never ignores, a value set where it does not.
 * A key's default applies everywhere.
 * @param key A layout parameter.
 * @param value The value asked about.
 * @param framework The framework (::MEM4D_LAYOUT_FRAMEWORK's values).
 * @param mode ::MEM4D_MODE_FULL, or ::MEM4D_MODE_PAPER for what the paper's formula models.
 * @param why Receives the sentence naming the key, its value and where it
 *        applies when it does not, "" when it does; may be NULL (see "Conventions").
 * @param why_size Size of why in bytes.
 * @return ::MEM4D_OK; ::MEM4D_E_CONFLICT when the framework does not model it
 *         (mem4d_validate() refuses it); ::MEM4D_E_UNSUPPORTED when only
 *         paper mode does not (mem4d_estimate() refuses it);
 *         ::MEM4D_E_INVALID_ARG for an unknown key, framework or mode.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_layout_param_applies(mem4d_layout_param key, uint64_t value, mem4d_framework framework,
                                                  mem4d_mode mode, char *why, size_t why_size);

/**
 * Whether paper mode models a model key's value (full mode models every one).
 * @param key A model parameter.
 * @param value The value asked about.
 * @param mode ::MEM4D_MODE_FULL or ::MEM4D_MODE_PAPER.
 * @param why Receives the sentence when it does not, "" when it does; may be
 *        NULL (see "Conventions").
 * @param why_size Size of why in bytes.
 * @return ::MEM4D_OK; ::MEM4D_E_UNSUPPORTED when paper mode does not model it;
 *         ::MEM4D_E_INVALID_ARG for an unknown key or mode.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_model_param_applies(mem4d_model_param key, uint64_t value, mem4d_mode mode, char *why,
                                                 size_t why_size);

/**
 * Verdict of a report against the device's memory.
 * @since 0.1
 */
typedef enum mem4d_verdict {
    MEM4D_VERDICT_FITS = 0,  /**< Peak at most the fit threshold of memory: full_fit_threshold_ppm (85%) in full mode, fit_threshold_ppm (80%) in paper mode. */
    MEM4D_VERDICT_TIGHT = 1, /**< Between the threshold and 100%. */
    MEM4D_VERDICT_OOM = 2    /**< Above 100%. */
} mem4d_verdict;

/**
 * Per-stage quantities of a report. Bytes unless noted.
 * TOTAL = WEIGHTS + GRADIENTS + OPTIMIZER + ACTIVATIONS + OVERHEAD;
 * OVERHEAD = BUFFERS + FRAGMENTATION + FIXED;
 * PEAK_ALLOCATED = TOTAL - FRAGMENTATION - FIXED;
 * PEAK_RESERVED = PEAK_ALLOCATED + FRAGMENTATION.
 * In paper mode OVERHEAD and its parts are zero.
 * @since 0.1
 */
typedef enum mem4d_term {
    MEM4D_TERM_WEIGHTS = 0,        /**< Model weights held by the rank. */
    MEM4D_TERM_GRADIENTS = 1,      /**< Gradient buffers (main grads). */
    MEM4D_TERM_OPTIMIZER = 2,      /**< Master weights and optimizer moments. */
    MEM4D_TERM_ACTIVATIONS = 3,    /**< Activations kept for the backward pass, at the peak. */
    MEM4D_TERM_OVERHEAD = 4,       /**< Buffers, allocator gap and fixed costs. */
    MEM4D_TERM_TOTAL = 5,          /**< What the verdict compares with the device. */
    MEM4D_TERM_PARAMS = 6,         /**< Parameters held by the rank (a count, not bytes). */
    MEM4D_TERM_LAYERS = 7,         /**< Transformer layers on the stage (a count). */
    MEM4D_TERM_IN_FLIGHT = 8,      /**< Micro-batches whose activations are live at the peak (a count; chunk-micro-batches / v with VPP, rounded up). */
    MEM4D_TERM_BUFFERS = 9,        /**< Temporary buffers: communication buckets, step copies, workspaces. */
    MEM4D_TERM_FRAGMENTATION = 10, /**< Reserved minus allocated (caching allocator). */
    MEM4D_TERM_FIXED = 11,         /**< CUDA context and NCCL communicator buffers. */
    MEM4D_TERM_PEAK_ALLOCATED = 12,/**< Peak bytes allocated by tensors (what torch.cuda.max_memory_allocated shows). */
    MEM4D_TERM_PEAK_RESERVED = 13, /**< Peak bytes reserved by PyTorch's caching allocator (torch.cuda.max_memory_reserved). */
    /** The moment of the step at which the stage peaks (not bytes): a ::mem4d_moment,
     * named by mem4d_moment_name(). ACTIVATIONS and BUFFERS are those of this moment.
     * Always ::MEM4D_MOMENT_FORWARD_BACKWARD in paper mode. @since 0.2 */
    MEM4D_TERM_PEAK_MOMENT = 14
} mem4d_term;

/**
 * The moments of a training step at which a stage's memory can peak (the value of
 * ::MEM4D_TERM_PEAK_MOMENT). Full mode takes the largest of the three; ties go to
 * the earlier one (see doc/full-model.md).
 * @since 0.2
 */
typedef enum mem4d_moment {
    /** The forward/backward peak: the in-flight micro-batches' activations, the
     * backward's working set and the gradient buckets. */
    MEM4D_MOMENT_FORWARD_BACKWARD = 0,
    /** The first stage forming the embedding table's gradient (one micro-batch's
     * activations left, the gradient of the whole table live). */
    MEM4D_MOMENT_EMBEDDING_GRAD = 1,
    /** The optimizer step: no activation live, the step's copies and workspaces. */
    MEM4D_MOMENT_OPTIMIZER_STEP = 2
} mem4d_moment;

/**
 * Whole-job values derived while estimating.
 * @since 0.1
 */
typedef enum mem4d_info {
    MEM4D_INFO_DP = 0,             /**< Data-parallel size. */
    MEM4D_INFO_WORLD = 1,          /**< GPUs in the job. */
    MEM4D_INFO_MICROBATCHES = 2,   /**< m, micro-batches per step per pipeline; 0 when the global batch is unknown. */
    MEM4D_INFO_PADDED_VOCAB = 3,   /**< Vocabulary after padding (equals V in paper mode). */
    MEM4D_INFO_MODEL_PARAMS = 4,   /**< Parameters of the whole model (padded vocabulary). */
    MEM4D_INFO_PROCESS_GROUPS = 5, /**< NCCL communicators each rank creates (full mode; 0 in paper mode). */
    /** The attention kernel the job runs, for its memory and its step time alike: a
     * value of the device key ::MEM4D_DEVICE_ATTENTION_KERNEL, named by
     * mem4d_device_value_name(::MEM4D_DEVICE_ATTENTION_KERNEL, value), never 0
     * ("auto"). 5 ("unfused") is softmax attention over the materialised s x s
     * scores; any other value is fused (flash) attention: 1 "fa2", 2 "fa3", 3 "cudnn",
     * 4 "sdpa", 6 "triton". It is what the layout's flash_attn where set, else the
     * device's attention_kernel, else its stack decided (see ::MEM4D_LAYOUT_FLASH_ATTN):
     * a layout that leaves flash_attn unset, whose mem4d_layout_get() reads 1, runs
     * softmax attention on a stack whose kernel is "unfused". "fa3" asked of a device
     * without an fp8 peak (an A100, which has no FlashAttention-3) reads "fa2", the
     * kernel it runs. @since 0.2 */
    MEM4D_INFO_ATTENTION_KERNEL = 6,
    /** 1 where softmax attention's fused softmax kernel declines the job's shape
     * (the stack's rule on sequence, heads per tensor-parallel rank and micro-batch;
     * doc/perf.md, "The software stack") and PyTorch's fp32 softmax runs in its
     * place, keeping more memory for the backward and moving more bytes; 0 where the
     * fused softmax runs, and always with fused attention (::MEM4D_INFO_ATTENTION_KERNEL
     * other than 5), which has no softmax kernel of its own. @since 0.2 */
    MEM4D_INFO_SOFTMAX_FALLBACK = 7,
    /** The model's local layers, those its sliding window (::MEM4D_MODEL_WINDOW_SIZE
     * and the window layer keys) limits to the window's keys, or its chunk
     * (::MEM4D_MODEL_ATTENTION_CHUNK_SIZE, the same layer keys) to their chunk's; 0
     * without a window or chunk shorter than the sequence. @since 0.2 */
    MEM4D_INFO_WINDOW_LAYERS = 8,
    /** 1 where the step time charges those layers full causal attention all the
     * same (cp > 1: the context-parallel ring's chunks under a window or chunk; a
     * layer pattern beside them; a chunk under any framework but torchtitan, whose
     * FlexAttention alone runs chunks in training), as the report's warning says;
     * else 0. @since 0.2 */
    MEM4D_INFO_WINDOW_TIMED_FULL = 9
} mem4d_info;

/**
 * Predicted speed of a layout (see mem4d_report_metric()).
 * @since 0.1
 */
typedef enum mem4d_metric {
    MEM4D_METRIC_STEP_TIME_S = 0,     /**< Seconds per optimizer step. */
    MEM4D_METRIC_TOKENS_PER_S = 1,    /**< Tokens per second, whole job. */
    MEM4D_METRIC_TFLOPS_PER_GPU = 2,  /**< Model TFLOP/s per GPU (Megatron's --log-throughput definition). */
    MEM4D_METRIC_MFU = 3,             /**< Model FLOPs utilisation: TFLOP/s per GPU over the peak of the job's precision (::MEM4D_METRIC_MFU_PEAK_FLOPS; before 0.2 always the bf16 peak). */
    MEM4D_METRIC_BUBBLE_FRACTION = 4, /**< Share of the step lost to the pipeline bubble. */
    MEM4D_METRIC_COMPUTE_TIME_S = 5,  /**< Seconds of compute per step (recompute included). */
    MEM4D_METRIC_EXPOSED_COMM_S = 6,  /**< Seconds of communication not hidden behind compute (the sum of the next five). */
    MEM4D_METRIC_TP_COMM_S = 7,       /**< Exposed tensor-parallel collectives per step, slowest stage. @since 0.2 */
    MEM4D_METRIC_CP_COMM_S = 8,       /**< Exposed context-parallel ring transfers per step. @since 0.2 */
    MEM4D_METRIC_DP_COMM_S = 9,       /**< Exposed data-parallel gradient reduce / parameter gather (ZeRO-3 per-layer included). @since 0.2 */
    MEM4D_METRIC_PP_COMM_S = 10,      /**< Pipeline send/receive per step. @since 0.2 */
    MEM4D_METRIC_EP_COMM_S = 11,      /**< Exposed expert-parallel all-to-all per step. @since 0.2 */
    MEM4D_METRIC_BUBBLE_S = 12,       /**< Seconds of pipeline bubble per step. @since 0.2 */
    MEM4D_METRIC_OPTIMIZER_S = 13,    /**< Seconds of the optimizer step. @since 0.2 */
    /** Seconds per step of the expert GEMMs and their activation (recompute included), slowest
     * stage: part of ::MEM4D_METRIC_COMPUTE_TIME_S. 0 for a dense model. @since 0.2 */
    MEM4D_METRIC_EXPERT_COMPUTE_S = 14,
    /** Seconds per step of the router (its GEMM, top-k, auxiliary loss) and of the token permutation
     * before the dispatch and after the combine, slowest stage: part of ::MEM4D_METRIC_COMPUTE_TIME_S.
     * 0 for a dense model. @since 0.2 */
    MEM4D_METRIC_ROUTER_PERMUTE_S = 15,
    /** The band the measured step time falls in: the step time times the device's
     * speed_band_low_ppm (the validation runs' 5th percentile of measured over
     * predicted, narrower when the device is calibrated; doc/perf.md,
     * "Uncertainty"), no lower than the step at which the FLOPs the step
     * executes (not MFU's count) run at the peak (or the step itself where that
     * work or a kernel's charged rate is above the peak, which the report warns
     * about). @since 0.2 */
    MEM4D_METRIC_STEP_TIME_LOW_S = 16,
    MEM4D_METRIC_STEP_TIME_HIGH_S = 17,    /**< The band's upper step time (speed_band_high_ppm). @since 0.2 */
    MEM4D_METRIC_TOKENS_PER_S_LOW = 18,    /**< Tokens per second at the band's upper step time. @since 0.2 */
    MEM4D_METRIC_TOKENS_PER_S_HIGH = 19,   /**< Tokens per second at the band's lower step time. @since 0.2 */
    MEM4D_METRIC_TFLOPS_PER_GPU_LOW = 20,  /**< TFLOP/s per GPU at the band's upper step time. @since 0.2 */
    MEM4D_METRIC_TFLOPS_PER_GPU_HIGH = 21, /**< TFLOP/s per GPU at the band's lower step time. @since 0.2 */
    MEM4D_METRIC_MFU_LOW = 22,             /**< MFU at the band's upper step time. @since 0.2 */
    MEM4D_METRIC_MFU_HIGH = 23,            /**< MFU at the band's lower step time. @since 0.2 */
    /** The peak MFU is taken against, FLOP/s: the precision the job's GEMMs run in
     * (peak_fp8_flops for an fp8 job on a device that has one, else peak_flops).
     * @since 0.2 */
    MEM4D_METRIC_MFU_PEAK_FLOPS = 24,
    /** Seconds per step the job waits for a straggling host, one that runs the same work
     * slower (doc/perf.md, "Stragglers"): 0 on one host. The step is
     * ::MEM4D_METRIC_COMPUTE_TIME_S + ::MEM4D_METRIC_EXPOSED_COMM_S + ::MEM4D_METRIC_BUBBLE_S +
     * ::MEM4D_METRIC_OPTIMIZER_S + this; before it the parts fell short of the step by this.
     * @since 0.2 */
    MEM4D_METRIC_STRAGGLER_S = 25
} mem4d_metric;

/**
 * Create a report. It holds room for every stage, so estimates into it never
 * allocate.
 * @param[out] out Receives the new handle; set to NULL on failure.
 * @return ::MEM4D_OK, ::MEM4D_E_INVALID_ARG or ::MEM4D_E_NOMEM.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_report_new(mem4d_report **out);

/**
 * Free a report. NULL is allowed.
 * @param report The handle to free.
 * @since 0.1
 */
MEM4D_API void mem4d_report_free(mem4d_report *report);

/**
 * Estimate the memory of every pipeline stage of @p layout for @p model on
 * @p device, in the layout's mode, and (when the device has a peak FLOP/s and
 * the layout a global batch) its predicted speed. Deterministic; does not
 * allocate. On failure the report says why in mem4d_report_message().
 * @param model The model.
 * @param layout The layout.
 * @param device The device.
 * @param report Receives the result.
 * @return ::MEM4D_OK, a validation status (see mem4d_validate()),
 *         ::MEM4D_E_RANGE, ::MEM4D_E_UNSUPPORTED or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_estimate(const mem4d_model *model, const mem4d_layout *layout,
                                      const mem4d_device *device, mem4d_report *report);

/**
 * Status of the last estimate into this report.
 * @param report The report.
 * @return The status mem4d_estimate() returned; ::MEM4D_E_MISSING before any.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_report_status(const mem4d_report *report);

/**
 * A sentence about the last estimate: why it failed, or "" when it succeeded.
 * @param report The report.
 * @return A string owned by the report, valid until its next estimate.
 * @since 0.1
 */
MEM4D_API const char *mem4d_report_message(const mem4d_report *report);

/**
 * The mode that produced the report.
 * @param report The report.
 * @return The mode.
 * @since 0.1
 */
MEM4D_API mem4d_mode mem4d_report_mode(const mem4d_report *report);

/**
 * The verdict: peak against the device's memory and fit threshold.
 * @param report The report.
 * @return The verdict (::MEM4D_VERDICT_OOM for a failed estimate).
 * @since 0.1
 */
MEM4D_API mem4d_verdict mem4d_report_verdict(const mem4d_report *report);

/**
 * Number of stages in the report: pp in full mode, 1 in paper mode (the
 * paper's formula describes the first stage, its most loaded rank).
 * @param report The report.
 * @return The count; 0 for a failed estimate.
 * @since 0.1
 */
MEM4D_API uint32_t mem4d_report_num_stages(const mem4d_report *report);

/**
 * The stage with the largest ::MEM4D_TERM_TOTAL (the first such).
 * @param report The report.
 * @return The stage index.
 * @since 0.1
 */
MEM4D_API uint32_t mem4d_report_peak_stage(const mem4d_report *report);

/**
 * ::MEM4D_TERM_TOTAL of the peak stage.
 * @param report The report.
 * @return Bytes; 0 for a failed estimate.
 * @since 0.1
 */
MEM4D_API uint64_t mem4d_report_peak_bytes(const mem4d_report *report);

/**
 * The device memory the verdict compared against.
 * @param report The report.
 * @return Bytes.
 * @since 0.1
 */
MEM4D_API uint64_t mem4d_report_device_bytes(const mem4d_report *report);

/**
 * One per-stage quantity.
 * @param report The report.
 * @param stage 0 to mem4d_report_num_stages() - 1.
 * @param term The quantity.
 * @param[out] value Receives it.
 * @return ::MEM4D_OK, ::MEM4D_E_RANGE (no such stage) or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_report_get(const mem4d_report *report, uint32_t stage,
                                        mem4d_term term, uint64_t *value);

/**
 * Number of warnings of the last estimate: settings of the layout that
 * change memory but that the estimate does not model (e.g. "compile").
 * @param report The report.
 * @return The count; 0 after a failed estimate.
 * @since 0.2
 */
MEM4D_API size_t mem4d_report_warning_count(const mem4d_report *report);

/**
 * One warning of the last estimate, one sentence naming the setting.
 * @param report The report.
 * @param index 0 to mem4d_report_warning_count() - 1.
 * @return A string owned by the report (valid until its next estimate), or NULL
 *         when @p index is out of range.
 * @since 0.2
 */
MEM4D_API const char *mem4d_report_warning(const mem4d_report *report, size_t index);

/**
 * One whole-job value.
 * @param report The report.
 * @param info The value wanted.
 * @param[out] value Receives it.
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_report_info(const mem4d_report *report, mem4d_info info, uint64_t *value);

/**
 * One predicted speed figure.
 * @param report The report.
 * @param metric The figure wanted.
 * @param[out] value Receives it.
 * @return ::MEM4D_OK; ::MEM4D_E_UNSUPPORTED when speed was not predicted (no
 *         global batch, or the device has no peak FLOP/s); ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_report_metric(const mem4d_report *report, mem4d_metric metric, double *value);

/**
 * Name of a verdict: "fits", "tight" or "oom".
 * @param verdict The verdict.
 * @return A static string; "unknown" for other values.
 * @since 0.1
 */
MEM4D_API const char *mem4d_verdict_name(mem4d_verdict verdict);

/**
 * Name of a mode: "full" or "paper".
 * @param mode The mode.
 * @return A static string; "unknown" for other values.
 * @since 0.1
 */
MEM4D_API const char *mem4d_mode_name(mem4d_mode mode);

/**
 * Name of a moment of the step (the value of ::MEM4D_TERM_PEAK_MOMENT):
 * "forward_backward", "embedding_grad" or "optimizer_step".
 * @param moment The moment.
 * @return A static string, or NULL for an unknown moment.
 * @since 0.2
 */
MEM4D_API const char *mem4d_moment_name(mem4d_moment moment);

/**
 * Name of a per-stage term, as used in JSON output ("weights_bytes", ...).
 * @param term The term.
 * @return A static string, or NULL for an unknown term.
 * @since 0.1
 */
MEM4D_API const char *mem4d_term_name(mem4d_term term);

/**
 * Number of per-stage terms this library knows: they are 0 to count-1.
 * @return The count.
 * @since 0.2
 */
MEM4D_API size_t mem4d_term_count(void);

/**
 * Number of whole-job values this library knows: they are 0 to count-1.
 * @return The count.
 * @since 0.2
 */
MEM4D_API size_t mem4d_info_count(void);

/**
 * Name of a whole-job value ("dp", "world", "microbatches", ...): the enum
 * name without its prefix, in lower case.
 * @param info The value.
 * @return A static string, or NULL for an unknown value.
 * @since 0.2
 */
MEM4D_API const char *mem4d_info_name(mem4d_info info);

/**
 * Number of speed figures this library knows: they are 0 to count-1.
 * @return The count.
 * @since 0.2
 */
MEM4D_API size_t mem4d_metric_count(void);

/**
 * Name of a speed figure ("step_time_s", "tokens_per_s", ...): the enum name
 * without its prefix, in lower case.
 * @param metric The figure.
 * @return A static string, or NULL for an unknown figure.
 * @since 0.2
 */
MEM4D_API const char *mem4d_metric_name(mem4d_metric metric);

/** @} */

/* ------------------------------------------------------------------------ */
/** @defgroup search Search: every valid layout, filtered and ranked
 * @{ */

/** Opaque search handle. @since 0.1 */
typedef struct mem4d_search mem4d_search;

/**
 * Search options.
 * @since 0.1
 */
typedef enum mem4d_search_option {
    MEM4D_SEARCH_FITS_ONLY = 0,   /**< 1 (default): yield only layouts whose verdict is "fits"; 0: every valid layout. */
    MEM4D_SEARCH_NODE_LOCAL = 1,  /**< 1 (default): require tp x cp <= GPUs per node (per NVLink domain
                                       when the device sets nvlink_domain, e.g. 72 on GB200 NVL72). */
    MEM4D_SEARCH_RANKED = 2,      /**< 1 (default): fastest first (ties: less memory); 0: enumeration order, streamed. */
    MEM4D_SEARCH_MAX_RESULTS = 3, /**< Stop after this many layouts; 0 (default) for no limit. */
    MEM4D_SEARCH_UNEVEN_STAGES = 4, /**< 1 (default): a pp that does not divide the layers is tried with the
                                        balanced uneven split (lighter first and last stages, as Megatron's
                                        decoder_first/last_pipeline_num_layers allow); 0: only even splits. */
    /** "tie_break", ranked mode: 1: the fitting layouts (verdict ::MEM4D_VERDICT_FITS) whose
     * speed band overlaps the fastest fitting one's (under the band between layouts of one job that doc/perf.md states, or the
     * device's own speed_band_low_ppm/_high_ppm: a level common to every layout of one
     * job does not change their order; doc/perf.md, "Uncertainty") are equivalent to it and
     * come first, by fewer model-parallel GPUs (t x c x p), then step time, then less
     * peak memory; ::MEM4D_SEARCH_STAT_EQUIVALENT counts them. A layout that does not fit
     * (tight or oom, yielded with ::MEM4D_SEARCH_FITS_ONLY 0) is never equivalent: where
     * none fits, none is, and the order stays strict. 0 (default): strictly fastest first.
     * `mem4d plan` sets it. @since 0.2 */
    MEM4D_SEARCH_TIE_BREAK = 5
} mem4d_search_option;

/**
 * Counters of a search.
 * @since 0.1
 */
typedef enum mem4d_search_stat {
    MEM4D_SEARCH_STAT_VISITED = 0,  /**< Layouts whose memory was estimated. */
    MEM4D_SEARCH_STAT_PRUNED = 1,   /**< Layouts skipped without an estimate (a sub-space that cannot fit). */
    MEM4D_SEARCH_STAT_VALID = 2,    /**< Valid layouts seen (visited, whatever their verdict). */
    MEM4D_SEARCH_STAT_YIELDED = 3,  /**< Layouts returned by mem4d_search_next(). */
    /** Ranked mode with ::MEM4D_SEARCH_TIE_BREAK, once the first layout is yielded: how many
     * layouts, from the first, are equivalent to the fastest (1 when it stands alone; 0
     * without a speed prediction, without the option, or where no layout fits). @since 0.2 */
    MEM4D_SEARCH_STAT_EQUIVALENT = 4
} mem4d_search_stat;

/**
 * Start a search over layouts of @p model on @p base's world size of
 * @p device GPUs. The search varies tp, cp, pp, dp, micro-batch, vpp,
 * recompute (none, selective, full, and op where the framework is torchtitan)
 * and the distributed optimizer (where it shapes the job: with a
 * zero_stage given, or framework torchtitan, whose FSDP2 always shards, the
 * layouts hold the first value allowed, 1 unless bounded, once rather than
 * twice alike), for a model with experts whose @p base leaves ep at 1 the
 * expert parallelism (ep over the divisors of the experts, etp 1 or tp) and
 * the MoE dispatcher, and for a pp that does not divide
 * the layers the first and last stages' layers (::MEM4D_SEARCH_UNEVEN_STAGES;
 * a @p base that sets them keeps its own split); every other setting
 * (sequence, global batch, precision, mode, ...) comes from @p base. The handles are
 * copied: they may be freed after this call.
 * @param model The model.
 * @param device The device.
 * @param base A layout with at least the world size and sequence length set.
 * @param[out] out Receives the new handle; set to NULL on failure.
 * @return ::MEM4D_OK, ::MEM4D_E_MISSING, ::MEM4D_E_MODEL, ::MEM4D_E_INVALID_ARG or ::MEM4D_E_NOMEM.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_search_new(const mem4d_model *model, const mem4d_device *device,
                                        const mem4d_layout *base, mem4d_search **out);

/**
 * Free a search. NULL is allowed.
 * @param search The handle to free.
 * @since 0.1
 */
MEM4D_API void mem4d_search_free(mem4d_search *search);

/**
 * Set a search option. Only before the first mem4d_search_next() (or after
 * mem4d_search_reset()).
 * @param search The search.
 * @param option The option.
 * @param value Its value.
 * @return ::MEM4D_OK, ::MEM4D_E_RANGE, ::MEM4D_E_CONFLICT (search started) or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_search_set_option(mem4d_search *search, mem4d_search_option option, uint64_t value);

/**
 * Bound a searched knob to [min, max] ("tp <= 8": min 1, max 8; "pp = 1":
 * min 1, max 1). Bounds of the same key intersect.
 * @param search The search.
 * @param key ::MEM4D_LAYOUT_TP, CP, PP, DP, MICRO_BATCH, VPP, RECOMPUTE, DIST_OPT, EP, ETP
 *        or MOE_DISPATCHER (mem4d_search_varies()).
 * @param min Lowest allowed value.
 * @param max Highest allowed value.
 * @return ::MEM4D_OK, ::MEM4D_E_RANGE (empty or outside the key's bounds),
 *         ::MEM4D_E_UNSUPPORTED (not a searched key), ::MEM4D_E_CONFLICT (search started) or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_search_bound(mem4d_search *search, mem4d_layout_param key,
                                          uint64_t min, uint64_t max);

/**
 * Restrict a searched knob to a set of values ("mbs in {1, 2, 4}").
 * Replaces an earlier set for the key; combines with its bounds.
 * @param search The search.
 * @param key A searched key (see mem4d_search_bound()).
 * @param values The allowed values.
 * @param count Number of values, 1 to 64.
 * @return ::MEM4D_OK, ::MEM4D_E_RANGE, ::MEM4D_E_UNSUPPORTED, ::MEM4D_E_CONFLICT or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_search_allow(mem4d_search *search, mem4d_layout_param key,
                                          const uint64_t *values, size_t count);

/**
 * Next layout. With ranking on, the first call does the whole search; with it
 * off, layouts stream in enumeration order and stopping early is free.
 * @param search The search.
 * @param layout Receives the layout (every knob set: tp, cp, pp, dp, world, ...); may be NULL.
 * @param report Receives its estimate, exactly as mem4d_estimate() gives it; may be NULL.
 * @return ::MEM4D_OK with a layout, ::MEM4D_END when there are no more,
 *         ::MEM4D_E_NOMEM or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_search_next(mem4d_search *search, mem4d_layout *layout, mem4d_report *report);

/**
 * Start the search over, keeping options and constraints; counters are zeroed.
 * @param search The search.
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_search_reset(mem4d_search *search);

/**
 * Read a counter.
 * @param search The search.
 * @param stat The counter.
 * @param[out] value Receives it.
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_search_stat_get(const mem4d_search *search, mem4d_search_stat stat, uint64_t *value);

/**
 * Number of search options this library knows: they are 0 to count-1.
 * @return The count.
 * @since 0.2
 */
MEM4D_API size_t mem4d_search_option_count(void);

/**
 * Name of a search option ("fits_only", "node_local", ...): the enum name
 * without its prefix, in lower case.
 * @param option The option.
 * @return A static string, or NULL for an unknown option.
 * @since 0.2
 */
MEM4D_API const char *mem4d_search_option_name(mem4d_search_option option);

/**
 * What a search option's number means: ::MEM4D_KIND_BOOLEAN (0 or 1) or
 * ::MEM4D_KIND_INTEGER (any value).
 * @param option The option.
 * @param[out] kind Receives the kind.
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_search_option_kind(mem4d_search_option option, mem4d_param_kind *kind);

/**
 * The value a new search (mem4d_search_new()) holds for an option.
 * @param option The option.
 * @param[out] value Receives the default.
 * @return ::MEM4D_OK or ::MEM4D_E_INVALID_ARG.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_search_option_default(mem4d_search_option option, uint64_t *value);

/**
 * Number of search counters this library knows: they are 0 to count-1.
 * @return The count.
 * @since 0.2
 */
MEM4D_API size_t mem4d_search_stat_count(void);

/**
 * Name of a search counter ("visited", "pruned", "valid", "yielded").
 * @param stat The counter.
 * @return A static string, or NULL for an unknown counter.
 * @since 0.2
 */
MEM4D_API const char *mem4d_search_stat_name(mem4d_search_stat stat);

/**
 * Whether a search varies a layout key (so mem4d_search_bound() and
 * mem4d_search_allow() accept it): tp, cp, pp, dp, micro-batch, vpp,
 * recompute, the distributed optimizer, and for a model with experts ep,
 * etp and the MoE dispatcher. Every other key comes from the search's base
 * layout.
 * @param key A layout parameter.
 * @return 1 when searched; 0 when not, and for an unknown key.
 * @since 0.2
 */
MEM4D_API int mem4d_search_varies(mem4d_layout_param key);

/**
 * Largest micro-batch size with which @p layout fits (verdict "fits"),
 * exactly: no larger one fits. Every other setting is kept; the global
 * batch, when set, must stay divisible. Memory is not monotone in the
 * micro-batch, so a smaller one need not fit: the caching allocator can
 * reserve a few MiB less for larger logits blocks (a segment of 20 MiB
 * below 10 MiB, the block rounded to 2 MiB above), with a global batch a
 * larger micro-batch leaves fewer micro-batches in flight, and where the
 * device's stack has a fused softmax that declines some shapes (flash
 * attention off), a fused larger micro-batch can need less than a
 * fallen-back smaller one (doc/perf.md, "The search").
 * @param model The model.
 * @param layout The layout (its micro-batch is ignored).
 * @param device The device.
 * @param[out] mbs Receives the micro-batch size, 0 when not even 1 fits.
 * @return ::MEM4D_OK, a validation status, ::MEM4D_E_NOMEM or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_solve_max_micro_batch(const mem4d_model *model, const mem4d_layout *layout,
                                                   const mem4d_device *device, uint64_t *mbs);

/**
 * Longest sequence (a multiple of the layout's divisibility rules) with
 * which @p layout fits, exactly: no longer one fits. As in
 * mem4d_solve_max_micro_batch(), a shorter one need not fit (the logits
 * blocks' segments, and the key counts a stack's fused softmax declines).
 * @param model The model.
 * @param layout The layout (its sequence length is ignored).
 * @param device The device.
 * @param[out] seq Receives the sequence length, 0 when none fits.
 * @return ::MEM4D_OK, a validation status, ::MEM4D_E_NOMEM or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_solve_max_seq_length(const mem4d_model *model, const mem4d_layout *layout,
                                                  const mem4d_device *device, uint64_t *seq);

/**
 * Fewest GPUs (a multiple of nothing in particular: every count up to
 * @p max_gpus is tried) on which some layout of @p model fits.
 * @param model The model.
 * @param device The device.
 * @param base Sequence length, global batch and fixed settings, as for mem4d_search_new().
 * @param max_gpus Give up above this count.
 * @param[out] gpus Receives the count, 0 when none up to @p max_gpus fits.
 * @param layout Receives the fastest layout that fits on that count; may be NULL.
 * @return ::MEM4D_OK, ::MEM4D_E_MISSING, ::MEM4D_E_MODEL, ::MEM4D_E_RANGE or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_solve_min_gpus(const mem4d_model *model, const mem4d_device *device,
                                            const mem4d_layout *base, uint64_t max_gpus,
                                            uint64_t *gpus, mem4d_layout *layout);

/**
 * The fastest layout of @p base's GPUs that fits: the first answer of a
 * ranked mem4d_search_new() over @p base, the proposal a pre-flight check or
 * an admission hook makes for a job that does not fit (write it with
 * mem4d_layout_megatron_args()). Every setting the search does not vary
 * comes from @p base, so the proposal keeps the job's own precision,
 * sequence and batch.
 * @param model The model.
 * @param device The device.
 * @param base The job: at least the world size and sequence length set.
 * @param[out] layout Receives the layout when one fits.
 * @param[out] report Receives its estimate; may be NULL.
 * @return ::MEM4D_OK, ::MEM4D_END when no layout of these GPUs fits, or as
 *         mem4d_search_new() and mem4d_search_next().
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_solve_best_layout(const mem4d_model *model, const mem4d_device *device,
                                               const mem4d_layout *base, mem4d_layout *layout,
                                               mem4d_report *report);

/** @} */

/* ------------------------------------------------------------------------ */
/** @defgroup import Import: Megatron-LM arguments and Hugging Face configs
 * @{ */

/** Opaque import handle: holds the messages of the last import. @since 0.1 */
typedef struct mem4d_import mem4d_import;

/**
 * Where the world size of a Megatron import came from.
 * @since 0.1
 */
typedef enum mem4d_world_source {
    MEM4D_WORLD_NONE = 0,          /**< Not found. */
    MEM4D_WORLD_EXPLICIT = 1,      /**< The caller's explicit value. */
    MEM4D_WORLD_ENV_WORLD_SIZE = 2,/**< The WORLD_SIZE variable (torchrun). */
    MEM4D_WORLD_ENV_SLURM_NTASKS = 3, /**< The SLURM_NTASKS variable. */
    MEM4D_WORLD_ENV_SLURM_NODES = 4   /**< SLURM_JOB_NUM_NODES x SLURM_GPUS_ON_NODE (or SLURM_NTASKS_PER_NODE). */
} mem4d_world_source;

/**
 * Create an import handle.
 * @param[out] out Receives the new handle; set to NULL on failure.
 * @return ::MEM4D_OK, ::MEM4D_E_INVALID_ARG or ::MEM4D_E_NOMEM.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_import_new(mem4d_import **out);

/**
 * Free an import handle. NULL is allowed.
 * @param import The handle to free.
 * @since 0.1
 */
MEM4D_API void mem4d_import_free(mem4d_import *import);

/**
 * Read a Megatron-LM argument vector (as given to pretrain_gpt.py) into a
 * model and a layout. Both `--flag value` and `--flag=value` are accepted.
 * Flags that do not affect memory are skipped; flags that do but are not
 * modelled become warnings (mem4d_import_warning()); malformed values are
 * errors naming the flag (mem4d_import_message()).
 * @param import The import handle (receives messages).
 * @param argc Number of arguments.
 * @param argv The arguments (argv[0] is an argument, not a program name).
 * @param envp NULL-terminated "NAME=value" strings: the world-size
 *             fallbacks (WORLD_SIZE, SLURM_NTASKS, ...), and the caching
 *             allocator's PYTORCH_CUDA_ALLOC_CONF (or PYTORCH_ALLOC_CONF),
 *             whose expandable_segments sets ::MEM4D_LAYOUT_EXPANDABLE_SEGMENTS
 *             (left as it is when neither is set); may be NULL.
 * @param world_size Explicit world size, or 0 to look in @p envp.
 * @param model Receives the architecture (parameters not given are left as they are).
 * @param layout Receives the configuration.
 * @return ::MEM4D_OK, ::MEM4D_E_PARSE, ::MEM4D_E_MISSING, ::MEM4D_E_CONFLICT, ::MEM4D_E_RANGE or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_import_megatron(mem4d_import *import, int argc, const char *const *argv,
                                             const char *const *envp, uint64_t world_size,
                                             mem4d_model *model, mem4d_layout *layout);

/**
 * Read a Hugging Face `config.json` (Llama, Mistral, Qwen2 families) into a model.
 * @param import The import handle (receives messages).
 * @param path The file.
 * @param model Receives the architecture.
 * @return ::MEM4D_OK, ::MEM4D_E_IO, ::MEM4D_E_JSON, ::MEM4D_E_MISSING,
 *         ::MEM4D_E_RANGE, ::MEM4D_E_NO_JSON or ::MEM4D_E_INVALID_ARG.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_import_hf_config(mem4d_import *import, const char *path, mem4d_model *model);

/**
 * Like mem4d_import_hf_config(), from a buffer.
 * @param import The import handle.
 * @param json The document (need not be NUL-terminated).
 * @param size Its length in bytes.
 * @param model Receives the architecture.
 * @return As mem4d_import_hf_config(), without ::MEM4D_E_IO.
 * @since 0.1
 */
MEM4D_API mem4d_status mem4d_import_hf_config_buffer(mem4d_import *import, const char *json, size_t size,
                                                     mem4d_model *model);

/**
 * Read a DeepSpeed `ds_config.json` into a layout: framework deepspeed, the ZeRO
 * stage, reduce and all-gather bucket sizes, stage-3 prefetch bucket and max live
 * parameters, overlap_comm, contiguous_gradients, CPU/NVMe offload of the optimizer
 * and of parameters, bf16/fp16 (else fp32 parameters), micro-batch and global batch.
 * Keys DeepSpeed leaves to its Hugging Face integration ("auto") keep libmem4d's
 * default, with a warning; activation-checkpoint partitioning and CPU checkpointing
 * are warnings (not modelled). Parallel sizes are not in the file: set them on the
 * layout. train_batch_size, train_micro_batch_size_per_gpu and
 * gradient_accumulation_steps are completed and checked as DeepSpeed does
 * (train = micro x steps x the data-parallel size, which is the layout's dp or world
 * over tp x cp x pp; with all three and neither set, dp is set from them); a file
 * that leaves one of them to a data-parallel size the layout lacks is refused
 * (::MEM4D_E_MISSING). So are configurations DeepSpeed refuses: bf16 and fp16 both
 * enabled, an inconsistent batch (::MEM4D_E_BATCH); ZeRO-2/3 with pp > 1 is refused
 * by mem4d_validate(). All or nothing: on failure the layout is unchanged.
 * @param import The import handle (receives messages and warnings).
 * @param path The file (a regular file of at most 16 MiB).
 * @param layout The layout to complete: its dp (or world) is read, and it receives the settings.
 * @return ::MEM4D_OK, ::MEM4D_E_IO, ::MEM4D_E_JSON, ::MEM4D_E_RANGE,
 *         ::MEM4D_E_CONFLICT (offload_param below stage 3, bf16 with fp16),
 *         ::MEM4D_E_BATCH, ::MEM4D_E_MISSING, ::MEM4D_E_NO_JSON
 *         (built without json-c) or ::MEM4D_E_INVALID_ARG.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_import_deepspeed_config(mem4d_import *import, const char *path, mem4d_layout *layout);

/**
 * Like mem4d_import_deepspeed_config(), from a buffer.
 * @param import The import handle.
 * @param json The document (need not be NUL-terminated).
 * @param size Its length in bytes.
 * @param layout Receives the settings.
 * @return As mem4d_import_deepspeed_config(), without ::MEM4D_E_IO.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_import_deepspeed_config_buffer(mem4d_import *import, const char *json, size_t size,
                                                            mem4d_layout *layout);

/**
 * Read a torchtitan job file (`train_configs/NAME.toml`, the TOML torchtitan read
 * until it moved to Python configs in 2026) into a layout: framework torchtitan,
 * the parallel degrees (tp, cp, pp, dp = dp_shard x dp_replicate, dp_replicate,
 * ep, etp), sequence, micro-batch and global batch, the pipeline schedule's stages
 * per rank (torch.distributed.pipelining: 1F1B and GPipe one, Interleaved1F1B,
 * InterleavedZeroBubble, LoopedBFS, ZBVZeroBubble, DualPipeV two, or as
 * pipeline_parallel_layers_per_stage, module_fqns_per_model_part or
 * pipeline_parallel_split_points say) and, given the model, torchtitan's layer
 * split as the layout's stage table (mem4d_layout_set_stage_layers()),
 * activation checkpointing, mixed precision, float8 and compile. Both of
 * torchtitan's file layouts are read: 2025's [parallelism], [compile] and
 * [quantize.linear.float8], and 2024's degrees in [training] and [experimental].
 * The TOML is read strictly (TOML 1.0; any syntax error names its line) and so
 * are the types torchtitan's JobConfig declares: a string where a table, a
 * boolean or an integer is expected is refused (::MEM4D_E_PARSE), as are values
 * outside torchtitan's choices. Keys this reader does not know in the sections
 * it reads, and settings it does not model (CPU offload, a V-shaped or
 * breadth-first schedule's placement and order, the memory_budget mode) are
 * warnings. All or nothing: on failure the layout is unchanged.
 * @param import The import handle (receives messages and warnings).
 * @param path The file (a regular file of at most 1 MiB; a FIFO or a device is refused).
 * @param world GPUs in the job, needed when data_parallel_shard_degree is -1 (the
 *        rest); 0 takes the layout's world key. When given, the degrees must multiply to it.
 * @param model The model, for its layer count (torchtitan's pipeline split); may be
 *        NULL, then the layers are split evenly (a warning says so) and
 *        layers_per_stage / module_fqns_per_model_part / split points are refused.
 * @param layout Receives the settings.
 * @return ::MEM4D_OK, ::MEM4D_E_IO, ::MEM4D_E_PARSE, ::MEM4D_E_RANGE,
 *         ::MEM4D_E_MISSING, ::MEM4D_E_WORLD, ::MEM4D_E_BATCH, ::MEM4D_E_CONFLICT,
 *         ::MEM4D_E_LAYERS_PP, ::MEM4D_E_NOMEM or ::MEM4D_E_INVALID_ARG.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_import_torchtitan_config(mem4d_import *import, const char *path, uint64_t world,
                                                      const mem4d_model *model, mem4d_layout *layout);

/**
 * Like mem4d_import_torchtitan_config(), from a buffer.
 * @param import The import handle.
 * @param toml The document (need not be NUL-terminated; at most 1 MiB).
 * @param size Its length in bytes.
 * @param world GPUs in the job, or 0.
 * @param model The model, or NULL.
 * @param layout Receives the settings.
 * @return As mem4d_import_torchtitan_config(), without ::MEM4D_E_IO.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_import_torchtitan_config_buffer(mem4d_import *import, const char *toml, size_t size,
                                                             uint64_t world, const mem4d_model *model,
                                                             mem4d_layout *layout);

/**
 * The sentence explaining the last import's failure, or "".
 * @param import The import handle.
 * @return A string owned by the handle, valid until its next import.
 * @since 0.1
 */
MEM4D_API const char *mem4d_import_message(const mem4d_import *import);

/**
 * Number of warnings of the last import.
 * @param import The import handle.
 * @return The count.
 * @since 0.1
 */
MEM4D_API size_t mem4d_import_warning_count(const mem4d_import *import);

/**
 * One warning of the last import ("--moe-grouped-gemm affects memory but is not modelled").
 * @param import The import handle.
 * @param index 0 to mem4d_import_warning_count() - 1.
 * @return A string owned by the handle, or NULL when out of range.
 * @since 0.1
 */
MEM4D_API const char *mem4d_import_warning(const mem4d_import *import, size_t index);

/**
 * Where the last Megatron import took the world size from.
 * @param import The import handle.
 * @return The source.
 * @since 0.1
 */
MEM4D_API mem4d_world_source mem4d_import_world_source(const mem4d_import *import);

/**
 * Whether mem4d_import_hf_config() reads a config.json whose "model_type" it
 * does not know (or that has none) as a Llama-like decoder, with a warning.
 * Off by default: such a config is refused with ::MEM4D_E_UNSUPPORTED, since
 * reading another architecture as Llama can miscount its parameters by tens
 * of percent. The setting stays until changed.
 * @param import The import handle.
 * @param enable Nonzero to read unknown architectures as Llama-like.
 * @return ::MEM4D_OK, or ::MEM4D_E_INVALID_ARG for a NULL handle.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_import_set_llama_like(mem4d_import *import, int enable);

/**
 * The Megatron-LM flags that set a layout, as one line a user can paste into
 * a launch script: the parallel sizes (for a model with experts also etp
 * and the MoE token dispatcher), micro-batch (and global batch and
 * sequence length when set), uneven first/last stages, virtual pipeline
 * chunks, sequence parallelism, optimizer sharding, gradient/parameter
 * overlap, recompute, the TP communication overlap and the all-gather
 * context parallelism (cp_comm_type), e.g. "--tensor-model-parallel-size 8
 * --context-parallel-size 1 --pipeline-model-parallel-size 4
 * --micro-batch-size 1 --sequence-parallel --use-distributed-optimizer".
 * The line targets Megatron-Core 0.16 and later: switches that are off and
 * values that are that release's default (ep 1, etp equal to tp, the
 * allgather dispatcher, flex's deepep backend) are not written, so the line
 * replaces the job's parallel (expert ones included), dispatcher,
 * micro-batch, recompute and optimizer flags; appended to them it would keep
 * the job's own where it writes none (lib/megatron_args.h lists every job
 * flag the line replaces, as `mem4d check` takes them out).
 * lib/megatron_args.c lists the Megatron-LM commit and release that added
 * each expert flag. Read back by
 * mem4d_import_megatron(), it gives the same values for those keys.
 * @param model The model (its layer count sets layers per virtual stage and
 *        the layers per recompute group).
 * @param layout The layout.
 * @param[out] buf Receives the NUL-terminated line; may be NULL when size is 0.
 * @param size Bytes available at buf.
 * @param[out] length If not NULL, receives the line's length without the NUL,
 *        also when buf is too small (call with size 0 to measure).
 * @return ::MEM4D_OK, ::MEM4D_E_RANGE when size is not more than the length
 *         (buf then holds "" if size > 0), or ::MEM4D_E_INVALID_ARG.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_layout_megatron_args(const mem4d_model *model, const mem4d_layout *layout,
                                                  char *buf, size_t size, size_t *length);

/** @} */

/* ------------------------------------------------------------------------ */
/** @defgroup calibration Calibration: the device fitted to measured runs
 * A calibration reads Megatron-LM training logs (their arguments block, the
 * iteration lines with "elapsed time per iteration (ms)" and "throughput per
 * GPU (TFLOP/s/GPU)", the "[Rank N] ... memory (MB) | allocated: ... | max
 * allocated: ... | reserved: ... | max reserved: ..." lines), torchtitan and
 * nanotron logs of a job given as a model and a layout, and measured figures
 * without a log; then fits a device to them. Of the speed constants
 * matmul_efficiency_ppm, fp8_efficiency_ppm, attention_efficiency_ppm,
 * microbatch_overhead_ns, comm_efficiency_ppm (the links inside a node),
 * moe_load_spread_ppm (which only dropless MoE runs with a derived imbalance
 * depend on) and inter_node_efficiency_ppm (the network) it fits those the runs'
 * step times can identify (the one that moves them most; with more runs,
 * each other one that moves them in a way the ones chosen do not, up to one
 * constant per run) and leaves the others at the device's value
 * (mem4d_calibration_constant() says which); from memory lines, the memory
 * model's fixed workspace_bytes and allocator_overhead_ppm; and it records
 * calibrated_runs, which narrows the speed band. See doc/perf.md,
 * "Calibration".
 * @{ */

/** Opaque calibration handle: the logs read so far. @since 0.2 */
typedef struct mem4d_calibration mem4d_calibration;

/**
 * Figures of one calibrated log. Values are fixed forever; new ones are appended.
 * @since 0.2
 */
typedef enum mem4d_calibration_figure {
    MEM4D_CALIBRATION_MEASURED_STEP_S = 0,           /**< Median elapsed time per iteration, first logged line left out (s). */
    MEM4D_CALIBRATION_PREDICTED_STEP_BEFORE_S = 1,   /**< Step time the device predicted before the fit (s). */
    MEM4D_CALIBRATION_PREDICTED_STEP_AFTER_S = 2,    /**< Step time the fitted device predicts (s). */
    MEM4D_CALIBRATION_MEASURED_TFLOPS_PER_GPU = 3,   /**< Median "throughput per GPU (TFLOP/s/GPU)" (with --log-throughput). */
    MEM4D_CALIBRATION_MEASURED_MAX_ALLOCATED = 4,    /**< "max allocated" of the first rank's last memory line, bytes. */
    MEM4D_CALIBRATION_PREDICTED_MAX_ALLOCATED_BEFORE = 5, /**< Peak allocated of that rank's stage before the fit, bytes. */
    MEM4D_CALIBRATION_PREDICTED_MAX_ALLOCATED_AFTER = 6,  /**< The same after the fit. */
    MEM4D_CALIBRATION_MEASURED_MAX_RESERVED = 7,     /**< "max reserved" of that memory line, bytes. */
    MEM4D_CALIBRATION_PREDICTED_MAX_RESERVED_BEFORE = 8,  /**< Peak reserved of the stage before the fit, bytes. */
    MEM4D_CALIBRATION_PREDICTED_MAX_RESERVED_AFTER = 9,   /**< The same after the fit. */
    MEM4D_CALIBRATION_MEMORY_RANK = 10,              /**< The rank whose memory line was read. */
    /** Tokens per second of the whole job: a torchtitan log's "tps" (per GPU) times the
     * GPUs, a nanotron log's "tokens_per_sec", or a measurement given as such. @since 0.2 */
    MEM4D_CALIBRATION_MEASURED_TOKENS_PER_S = 11
} mem4d_calibration_figure;

/**
 * Formats of training logs mem4d_calibration_add_log() reads. Values are fixed
 * forever; new ones are appended.
 * @since 0.2
 */
typedef enum mem4d_log_format {
    /** Megatron-LM (and NeMo, Megatron-Bridge): "iteration N/ M | ... | elapsed time per
     * iteration (ms): X | ... | throughput per GPU (TFLOP/s/GPU): Y |" (training.py,
     * training_log()), and its memory lines. */
    MEM4D_LOG_MEGATRON = 0,
    /** torchtitan: "step: N  loss: ...  memory: XGiB(P%)  tps: T  tflops: F  mfu: M%"
     * (torchtitan/components/metrics.py, MetricsProcessor.log()); tps is tokens per
     * second per GPU, ANSI colours are passed over. */
    MEM4D_LOG_TORCHTITAN = 1,
    /** nanotron: "iteration: N / M | consumed_tokens: ... | time_per_iteration_ms: X |
     * tokens_per_sec: Y | tokens_per_sec_per_gpu: Z | ..." (src/nanotron/trainer.py,
     * train_step_logs(); "elapsed_time_per_iteration_ms" before 2025), numbers in
     * nanotron's human_format ("10.2K"). */
    MEM4D_LOG_NANOTRON = 2
} mem4d_log_format;

/**
 * Create an empty calibration.
 * @param[out] out Receives the handle; NULL on failure.
 * @return ::MEM4D_OK, ::MEM4D_E_INVALID_ARG or ::MEM4D_E_NOMEM.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_calibration_new(mem4d_calibration **out);

/**
 * Free a calibration. NULL is allowed.
 * @param cal The handle.
 * @since 0.2
 */
MEM4D_API void mem4d_calibration_free(mem4d_calibration *cal);

/**
 * Read one Megatron-LM training log. The job is taken from the log's
 * arguments block (Megatron prints every argument between "arguments" and
 * "end of arguments" lines); a log without one needs the job's arguments in
 * @p argv (as given to pretrain_gpt.py). Lines that are not iteration,
 * memory or argument lines are passed over; a malformed one of those kinds
 * is refused, and mem4d_calibration_message() names its line.
 * @param cal The calibration.
 * @param text The log's bytes (need not be NUL-terminated).
 * @param length Bytes of text.
 * @param argc Number of arguments in argv (0 when the log has its block).
 * @param argv Megatron-LM arguments, used only when the log has no arguments block.
 * @param world_size GPUs of the job, or 0 to take world_size from the arguments block.
 * Every argument is read as Megatron prints it (str() of the value after
 * validate_args(): torch dtypes, enum members, lists, None, values with
 * blanks, of any length and count), also behind a launcher's prefix on
 * each line ("[default0]:"). Steps outside [0.1 ms, 1 day], a memory line
 * of 0 MB or of a rank the job does not have, and a log with only its
 * warm-up iteration are refused.
 * @return ::MEM4D_OK, ::MEM4D_E_PARSE (a line it cannot read), ::MEM4D_E_MISSING
 *         (fewer than two iteration lines; no arguments), ::MEM4D_E_RANGE (more
 *         than 32 logs; a figure out of range), ::MEM4D_E_CONFLICT (a memory
 *         line of a rank beyond the world),
 *         an import status for arguments it refuses, or ::MEM4D_E_INVALID_ARG.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_calibration_add_megatron_log(mem4d_calibration *cal, const char *text, size_t length,
                                                          int argc, const char *const *argv, uint64_t world_size);

/**
 * Read one Megatron-LM training log from a file: mem4d_calibration_add_megatron_log()
 * on its contents. Only a regular file of at most 1 GiB is read (the rule of
 * every reader of the library that takes a path): a FIFO, a terminal, a
 * device such as /dev/zero or a directory is refused without blocking.
 * @param cal The calibration.
 * @param path The log's path.
 * @param argc Number of arguments in argv (0 when the log has its block).
 * @param argv Megatron-LM arguments, used only when the log has no arguments block.
 * @param world_size GPUs of the job, or 0 to take world_size from the arguments block.
 * @return What mem4d_calibration_add_megatron_log() returns, or ::MEM4D_E_IO
 *         (cannot open or read; not a regular file), ::MEM4D_E_RANGE (larger than
 *         1 GiB), ::MEM4D_E_NOMEM; mem4d_calibration_message() says which.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_calibration_add_megatron_log_file(mem4d_calibration *cal, const char *path, int argc,
                                                               const char *const *argv, uint64_t world_size);

/**
 * Read one training log of a job described by @p model and @p layout (which
 * must have its GPUs, sequence length and global batch): the step time of its
 * iteration lines (their median, the first line, the warm-up, left out; a log
 * of one step line is refused, ::MEM4D_E_MISSING, as it holds the warm-up
 * alone). A Megatron-LM log's arguments block, if it has one, is not read:
 * the job is the one given.
 * @param cal The calibration.
 * @param format The framework that wrote the log.
 * @param text The log's bytes (need not be NUL-terminated).
 * @param length Bytes of text.
 * @param model The job's model.
 * @param layout The job's layout.
 * @return ::MEM4D_OK, ::MEM4D_E_PARSE (a step line it cannot read),
 *         ::MEM4D_E_MISSING (no step line, or one; a layout without world,
 *         sequence or global batch), ::MEM4D_E_RANGE (more than 32 logs and
 *         measurements),
 *         a validation status of the job, or ::MEM4D_E_INVALID_ARG.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_calibration_add_log(mem4d_calibration *cal, mem4d_log_format format, const char *text,
                                                 size_t length, const mem4d_model *model, const mem4d_layout *layout);

/**
 * Read one training log from a file: mem4d_calibration_add_log() on its
 * contents, under the rule of mem4d_calibration_add_megatron_log_file() (a
 * regular file of at most 1 GiB; a FIFO, a device or a directory is refused
 * without blocking).
 * @param cal The calibration.
 * @param format The framework that wrote the log.
 * @param path The log's path.
 * @param model The job's model.
 * @param layout The job's layout.
 * @return What mem4d_calibration_add_log() returns, or ::MEM4D_E_IO (cannot open or
 *         read; not a regular file), ::MEM4D_E_RANGE (larger than 1 GiB),
 *         ::MEM4D_E_NOMEM; mem4d_calibration_message() says which.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_calibration_add_log_file(mem4d_calibration *cal, mem4d_log_format format,
                                                      const char *path, const mem4d_model *model,
                                                      const mem4d_layout *layout);

/**
 * Add a measured figure of a job without a log: its step time
 * (::MEM4D_CALIBRATION_MEASURED_STEP_S, seconds), its TFLOP/s per GPU under
 * Megatron's count (::MEM4D_CALIBRATION_MEASURED_TFLOPS_PER_GPU, the
 * TFLOPS_PER_GPU metric's definition) or its tokens per second
 * (::MEM4D_CALIBRATION_MEASURED_TOKENS_PER_S, whole job). It counts as one run.
 * @param cal The calibration.
 * @param model The job's model.
 * @param layout The job's layout (world, sequence length and global batch set).
 * @param figure One of the three figures above.
 * @param value The measured value, positive.
 * @return ::MEM4D_OK, ::MEM4D_E_RANGE (not a positive finite number; a step outside
 *         [0.1 ms, 1 day], as a log's; more than 32 runs), ::MEM4D_E_MISSING (a layout without world, sequence or global
 *         batch), a validation status of the job, or ::MEM4D_E_INVALID_ARG
 *         (another figure).
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_calibration_add_measurement(mem4d_calibration *cal, const mem4d_model *model,
                                                         const mem4d_layout *layout, mem4d_calibration_figure figure,
                                                         double value);

/**
 * The speed constants the last mem4d_calibration_fit() considered, one per
 * index from 0: which device key, and whether the runs could identify it (1:
 * fitted) or it was left at the device's value (0: the runs' step times
 * barely depend on it, or they cannot tell it apart from a constant already
 * fitted; doc/perf.md, "Calibration").
 * @param cal The calibration.
 * @param index 0, 1, ... until ::MEM4D_E_RANGE.
 * @param[out] key Receives the device key.
 * @param[out] fitted Receives 1 when fitted, 0 when left.
 * @return ::MEM4D_OK, ::MEM4D_E_RANGE (past the last), ::MEM4D_E_UNSUPPORTED
 *         (no fit yet) or ::MEM4D_E_INVALID_ARG.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_calibration_constant(const mem4d_calibration *cal, size_t index,
                                                  mem4d_device_param *key, int *fitted);

/**
 * Fit a device to every log read: see the group's description. The device
 * is changed only on success. A fit that would take workspace_bytes or
 * allocator_overhead_ppm above its maximum is refused. An efficiency that
 * stops at its search bound (the steps are beyond what the device explains)
 * keeps it, and a memory offset below its least value is clamped to it:
 * mem4d_calibration_message() then says so, with the value the device
 * gets, although the fit succeeded.
 * @param cal The calibration.
 * @param device The device to start from (a preset, or a device file), changed in place.
 * @return ::MEM4D_OK, ::MEM4D_E_MISSING (no log), ::MEM4D_E_RANGE (a constant
 *         outside its bounds; a measured throughput that makes a step outside
 *         [0.1 ms, 1 day] for its job), an estimate's status for a log the device
 *         cannot estimate, or ::MEM4D_E_INVALID_ARG.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_calibration_fit(mem4d_calibration *cal, mem4d_device *device);

/**
 * A figure of one log after mem4d_calibration_fit(), while that fit stands:
 * as mem4d_calibration_constant(), none after a fit that failed or once
 * another log is read, until the next fit succeeds.
 * @param cal The calibration.
 * @param log_index 0 to mem4d_calibration_log_count() - 1, in the order read.
 * @param figure The figure.
 * @param[out] value Receives it.
 * @return ::MEM4D_OK, ::MEM4D_E_UNSUPPORTED (the log has no such line, or
 *         no fit stands: none ran yet, the last failed, or a log was read
 *         after it) or ::MEM4D_E_INVALID_ARG.
 * @since 0.2
 */
MEM4D_API mem4d_status mem4d_calibration_get(const mem4d_calibration *cal, size_t log_index,
                                                mem4d_calibration_figure figure, double *value);

/**
 * Logs read so far.
 * @param cal The calibration (NULL gives 0).
 * @return The count.
 * @since 0.2
 */
MEM4D_API size_t mem4d_calibration_log_count(const mem4d_calibration *cal);

/**
 * Why the last call failed, naming the log line or the argument at fault (a
 * refused argument, ::MEM4D_E_INVALID_ARG, included: never the sentence of
 * an earlier failure); after a successful mem4d_calibration_fit(), a note
 * when a memory offset was clamped to its least value.
 * @param cal The calibration.
 * @return A string owned by the handle ("" after a success without a note).
 * @since 0.2
 */
MEM4D_API const char *mem4d_calibration_message(const mem4d_calibration *cal);

/** @} */

#ifdef __cplusplus
}
#endif

#endif /* MEM4D_H */
