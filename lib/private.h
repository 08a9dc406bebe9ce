/*
 * Private declarations shared by the library's source files.
 * SPDX-License-Identifier: MIT
 */
#ifndef MEM4D_PRIVATE_H
#define MEM4D_PRIVATE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem4d/mem4d.h"

/* Compile-time checks that tie tables to the public enums. */
#define M4D_LEN(a) (sizeof (a) / sizeof (a)[0])
/* count is the number of values of the enum whose last value is `last`. */
#define M4D_ENUM_COUNT(count, last) \
    _Static_assert((count) == (last) + 1, #count " must be " #last " + 1")
/* table has exactly `count` rows. Tables indexed by an enum are written with
 * designated initializers ([MEM4D_X] = row), so row i is the row of value i,
 * and with an unsized [] so that a row appended without raising the count
 * fails here. */
#define M4D_TABLE_ROWS(table, count) \
    _Static_assert(M4D_LEN(table) == (count), #table " must have one row per value (" #count ")")

/* Number of values of each enum; grow only by appending to the enum, then
 * raise the count, name the new last value and append the table rows. */
#define M4D_MODEL_NPARAM 57
M4D_ENUM_COUNT(M4D_MODEL_NPARAM, MEM4D_MODEL_MOE_LATENT_SIZE);
#define M4D_LAYOUT_NPARAM 87
M4D_ENUM_COUNT(M4D_LAYOUT_NPARAM, MEM4D_LAYOUT_OVERLAP_P2P_COMM);
/* The CLI keeps a flag per layout key (cli_args.layout_given, cli/cli.h,
 * CLI_MAX_LAYOUT_KEYS): raise it with the count past 256. */
_Static_assert(M4D_LAYOUT_NPARAM <= 256, "cli_args.layout_given (cli/cli.h) has room for 256 layout keys");
#define M4D_DEVICE_NPARAM 40
M4D_ENUM_COUNT(M4D_DEVICE_NPARAM, MEM4D_DEVICE_PEAK_FP4_FLOPS);
#define M4D_NTERMS 15
M4D_ENUM_COUNT(M4D_NTERMS, MEM4D_TERM_PEAK_MOMENT);
#define M4D_NINFO 10
M4D_ENUM_COUNT(M4D_NINFO, MEM4D_INFO_WINDOW_TIMED_FULL);
#define M4D_NMETRICS 26
M4D_ENUM_COUNT(M4D_NMETRICS, MEM4D_METRIC_STRAGGLER_S);
#define M4D_NSEARCH_OPTIONS 6
M4D_ENUM_COUNT(M4D_NSEARCH_OPTIONS, MEM4D_SEARCH_TIE_BREAK);
#define M4D_NSEARCH_STATS 5
M4D_ENUM_COUNT(M4D_NSEARCH_STATS, MEM4D_SEARCH_STAT_EQUIVALENT);
#define M4D_NMODES 2
#define M4D_NSTACKS 10 /* named software stacks (MEM4D_DEVICE_STACK), lib/perf.c */
M4D_ENUM_COUNT(M4D_NMODES, MEM4D_MODE_PAPER);
#define M4D_NSTATUS 23
M4D_ENUM_COUNT(M4D_NSTATUS, MEM4D_E_EXPERTS);
#define M4D_NCALFIG 12
M4D_ENUM_COUNT(M4D_NCALFIG, MEM4D_CALIBRATION_MEASURED_TOKENS_PER_S);

/* Upper bound of pp (and so of stages in a report). */
#define M4D_MAX_STAGES 512
#define M4D_NAME_MAX 64
#define M4D_MSG_MAX 256
#define M4D_MAX_WARN 4   /* warnings kept per report */

/* One row of a parameter table: the single source of names, bounds and
 * defaults for the generic setters, the CLI and the bindings. */
struct m4d_param_desc {
    const char *name;           /* canonical string key */
    const char *alias;          /* second accepted name, or NULL */
    const char *alias2;         /* third accepted name, or NULL */
    uint64_t min, max, def;
    const char *const *values;  /* names of values 0..n-1 for enumerated keys, NULL-terminated; else NULL */
    mem4d_param_kind kind;      /* what the number means; BOOLEAN accepts true/false */
    uint32_t allowed;           /* bit v set: value v allowed (small keys); 0: all of [min, max] */
    /* Where the key applies (m4d_param_applies(); doc/keys.md). A value set
     * is a bit mask: bit v for value v < 63, bit 63 for every value from 63
     * on; 0 means every value. */
    uint8_t fw;                 /* M4D_FW_* bits of the frameworks that model fw_values; 0: every framework */
    uint64_t fw_values;         /* the values only those frameworks model (0: every value but the default) */
    uint64_t paper;             /* the values paper mode models (0: every value) */
    uint64_t experimental;      /* the values tied to one framework release's internals: outside the ABI
                                   freeze (doc/abi-policy.md, "Experimental keys"); M4D_ALL_VALUES: the key */
};

/* Framework bits of a row's fw, and a value set of one value. */
#define M4D_FW(f) (1u << MEM4D_FRAMEWORK_##f)
#define M4D_VAL(v) (UINT64_C(1) << (v))
#define M4D_ALL_VALUES UINT64_MAX

/* Generic access to a parameter array described by a table (params.c). */
mem4d_status m4d_param_set(const struct m4d_param_desc *table, size_t n, uint64_t *v,
                           int key, uint64_t value);
mem4d_status m4d_param_set_str(const struct m4d_param_desc *table, size_t n, uint64_t *v,
                               const char *name, const char *text);
mem4d_status m4d_param_bounds(const struct m4d_param_desc *table, size_t n, int key,
                              uint64_t *min, uint64_t *max);
void m4d_param_defaults(const struct m4d_param_desc *table, size_t n, uint64_t *v);
mem4d_status m4d_param_kind(const struct m4d_param_desc *table, size_t n, int key, mem4d_param_kind *kind);
mem4d_status m4d_param_default(const struct m4d_param_desc *table, size_t n, int key, uint64_t *value);
/* Does a key's value apply to a framework in a mode? false with the
 * sentence naming the key, its value and where it applies (why may be NULL).
 * The one rule of where a key applies: m4d_params_apply() runs it over a
 * table; the search runs it for the keys it varies. */
bool m4d_param_applies(const struct m4d_param_desc *d, uint64_t value, mem4d_framework fw, mem4d_mode mode,
                       char *why, size_t why_size);
/* m4d_param_applies() over every key of a table but `skip` (-1: none):
 * the first key that does not apply, or -1. */
int m4d_params_apply(const struct m4d_param_desc *table, size_t n, const uint64_t *v, int skip, mem4d_framework fw,
                     mem4d_mode mode, char *why, size_t why_size);
/* Name of value `value` of an enumerated key; NULL when not enumerated or unknown. */
const char *m4d_param_value_name(const struct m4d_param_desc *table, size_t n, int key, uint64_t value);

/* One row per key, M4D_*_NPARAM rows (checked in params.c; declared unsized
 * here so that the definition's own row count is what the check sees). */
extern const struct m4d_param_desc m4d_model_params[];
extern const struct m4d_param_desc m4d_layout_params[];
extern const struct m4d_param_desc m4d_device_params[];

/* A layer pattern (mem4d_model_set_layer_pattern): each layer an index into
 * the model's distinct layers, each a symbol and a width ('*': key/value
 * heads, '-': FFN width; 0: the model's). */
#define M4D_MAX_PATTERN 4096
#define M4D_MAX_LAYER_KINDS 32
struct m4d_layer_kind {
    char sym;        /* M G * - E L */
    uint32_t width;
};

struct mem4d_model {
    uint64_t v[M4D_MODEL_NPARAM];
    char name[M4D_NAME_MAX];
    uint16_t nlt;                                   /* layers of the pattern; 0: none */
    uint8_t nkinds;
    struct m4d_layer_kind kinds[M4D_MAX_LAYER_KINDS];
    uint8_t lt[M4D_MAX_PATTERN];                    /* layer i's kind */
};

/* Virtual stages a layer table may give (mem4d_layout_set_stage_layers). */
#define M4D_MAX_VSTAGES 1024

struct mem4d_layout {
    uint64_t v[M4D_LAYOUT_NPARAM];
    uint32_t nvs;                       /* virtual stages in the layer table; 0: none */
    uint16_t vs[M4D_MAX_VSTAGES];       /* transformer layers of virtual stage k (num_layers <= 4096) */
    uint16_t vs_first[M4D_MAX_VSTAGES]; /* the first layer of virtual stage k */
    bool flash_set;                     /* flash_attn was set (mem4d_layout_set(), an importer reading a flag that
                                         * says it), not left at its default: m4d_attention_fused() */
};

struct mem4d_device {
    uint64_t v[M4D_DEVICE_NPARAM];
    char name[M4D_NAME_MAX];
};

struct m4d_stage {
    uint64_t t[M4D_NTERMS]; /* indexed by mem4d_term */
};

/* The parts of a layout's step time its metrics are formed from (lib/perf.c):
 * an estimate keeps these, and m4d_perf_metrics() forms the metrics when they
 * are read, so a search pays for the step time alone. */
struct m4d_perf_parts {
    double step;                    /* seconds per optimizer step */
    double bubble, m, cmax, lmax, emax; /* bubble; micro-batches; slowest stage's compute, layers, expert layers */
    double straggle;                /* the wait for a straggling host (STRAGGLER_STEP) */
    double tp, cp, ep, expert, router, fsdp; /* one layer's exposed TP, CP, EP, FSDP seconds; expert, router compute */
    double tp_dense;                /* the slowest stage's dense layers' TP beyond an expert layer's, a micro-batch */
    double p2p, dp, opt;            /* one micro-batch's send/recv; exposed DP; optimizer step */
    double gbs, s, world;           /* the job: global batch, sequence, GPUs */
    double flops_per_seq, peak, band_lo, band_hi;
    double exec_flops_per_seq;      /* the FLOPs the step executes per sequence (executed_flops_per_seq) */
    double kernel_share;            /* the fastest kernel's charged rate over its peak (kernel_share) */
};

struct mem4d_report {
    mem4d_status status;
    mem4d_mode mode;
    mem4d_verdict verdict;
    uint32_t nstages;
    uint32_t peak_stage;
    uint64_t device_bytes;
    uint64_t info[M4D_NINFO];
    bool have_metrics;
    bool peak_only; /* only stages 0, 1 and nstages-1 are filled (search scratch) */
    struct m4d_perf_parts perf; /* the metrics' parts (m4d_perf_metrics) when have_metrics */
    char msg[M4D_MSG_MAX];
    uint32_t nwarn;                      /* settings the estimate does not model */
    char warn[M4D_MAX_WARN][M4D_MSG_MAX];
    struct m4d_stage stages[M4D_MAX_STAGES];
};

/* The pipeline split of a layout (stages.c): filled once per resolved
 * layout by m4d_split_init(), refused by m4d_split_check(). */
struct m4d_split {
    uint64_t L, p, v;              /* transformer layers, pipeline ranks, chunks per rank (>= 1) */
    uint64_t first, last;          /* uneven end ranks' layers (0: as a middle rank) */
    uint64_t cf, cl;               /* the first / last virtual stage holds this many layers fewer */
    uint64_t nvs;                  /* virtual stages of a layer table (0: none) */
    const uint16_t *vs, *vs_first; /* the table: layers and first layer of each virtual stage */
    uint64_t mtp;                  /* multi-token-prediction modules, on the last rank */
    const uint64_t *lv;            /* the layout's keys, a form's own parameters (NULL: none; stages.c) */
    uint64_t ranks[3];             /* m4d_split_init(): layers of rank 0, a middle rank, rank p - 1 (no table) */
};

/* Everything the formulas need, resolved and validated once: symbols follow
 * doc/formulas.md. Filled by m4d_resolve(). */
/* DeepSpeed's reduce_bucket_size and allgather_bucket_size default, 5·10^8
 * elements (deepspeed/runtime/zero/config.py, constants.py): the buffers'
 * size (estimate_buffers.c) and the ZeRO-1 collectives' count (DS_ZERO1,
 * perf.c). */
#define M4D_DS_BUCKET UINT64_C(500000000)
/* A DeepSpeed bucket key's value (bucket_size, allgather_bucket_size): 0 is
 * its default. */
static inline uint64_t m4d_ds_bucket(uint64_t set) { return set ? set : M4D_DS_BUCKET; }
/* HBM bytes per element Transformer Engine's fp8 linears move beyond bf16's
 * to quantize a tensor (read 2, write 1), transpose an fp8 one (1, 1), do
 * both in one kernel (2, 1 + 1), or quantize unfused, then transpose; and
 * the amax read of tensorwise (current) scaling, 2 (lib/perf.c,
 * TE_FP8_CASTS and TE_FP8_CURRENT; the dense linears there, the expert
 * GEMMs in lib/perf_moe.c). */
#define M4D_FP8_Q 3.0
#define M4D_FP8_T 2.0
#define M4D_FP8_QT 4.0
#define M4D_FP8_Q_THEN_T 5.0
#define M4D_FP8_AMAX 2.0
/* The fp8_recipe value of NVFP4 (Megatron's --fp4-format e2m1 --fp4-recipe
 * nvfp4; params.c's names), and the bytes an NVFP4 linear weight keeps beside
 * its bf16 copy, in eighths: rowwise and columnwise 4-bit values (1/2 byte
 * each) with an E4M3 scale per 16 (1/16 each), 2·(1/2 + 1/16) = 9/8
 * (NVIDIA/TransformerEngine@0163495 transformer_engine/pytorch/tensor/
 * nvfp4_tensor.py, NVFP4Quantizer.make_empty and get_scale_shape; the two
 * fp32 per-tensor amax and the scales' padding to 128 rows are left out). */
#define M4D_FP8_RECIPE_NVFP4 5
/* The fp8_recipe value of MXFP8 (Megatron's --fp8-recipe mxfp8; params.c's names). */
#define M4D_FP8_RECIPE_MXFP8 2
#define M4D_NVFP4_WEIGHT_EIGHTHS 9

/* Megatron's FusedScaleMaskSoftmax on a software stack (FUSED_SOFTMAX,
 * lib/perf.c): the longest keys its fused kernel takes (0: no rule, the
 * stack's softmax never falls back) and whether its availability test
 * takes the heads per rank for the keys (FUSED_SOFTMAX_SWAPPED). */
struct m4d_softmax_rule {
    uint16_t keys;
    bool bpb_heads;
};

/* Does the stack's fused softmax decline a causal [b, heads, s, s] shape, so
 * that PyTorch's fp32 softmax runs instead (is_kernel_available: 16 < s <=
 * keys, s % 4 == 0, and b * heads a multiple of the kernel's batches per
 * block, get_batch_per_block(): 128 threads of warps of min(n', 32) lanes,
 * two rows a warp where n' <= 128, n' the power of two at or above the
 * keys, or above the heads per rank under FUSED_SOFTMAX_SWAPPED)? The one
 * owner of the rule: the step time charges the fallback's HBM bytes
 * (lib/perf.c, SOFTMAX_TORCH_FWD) and the memory model what it keeps for
 * the backward (lib/estimate_activations.c, SOFTMAX_TORCH_KEPT). */
static inline bool m4d_softmax_falls_back(struct m4d_softmax_rule r, uint64_t s, uint64_t heads, uint64_t b)
{
    if (!r.keys)
        return false;
    if (s <= 16 || s > r.keys || s % 4 != 0)
        return true;
    uint64_t n = r.bpb_heads ? heads : s, p2 = 1;
    while (p2 < n)
        p2 *= 2;
    uint64_t per_block = 128 / (p2 < 32 ? p2 : 32) * (p2 <= 128 ? 2 : 1);
    return (b * heads) % per_block != 0;
}

struct m4d_ctx {
    /* model */
    uint64_t h, f, L, a, k, dh, V, Vp; /* Vp: padded vocabulary (= V in paper mode) */
    bool tied, qkv_bias, layernorm, gated;
    bool linear_bias, qk_norm;         /* biases on every linear layer; per-head Q/K norms */
    uint64_t pos_rows;                 /* rows of a learned position table (0: none) */
    bool rope;                         /* rotary position embeddings (the element-wise RoPE kernels) */
    bool alibi;                        /* ALiBi: softmax attention adds its bias to the scores (UNFUSED_ALIBI, lib/perf.c) */
    uint64_t moe_period, moe_mask, first_dense; /* which layers are expert layers */
    uint64_t window, win_period, win_mask, win_first; /* sliding-window attention: keys per query (0: none), its local layers */
    uint64_t chunk;                    /* chunked attention: tokens per chunk (0: none), on the window's local layers */
    uint64_t q_lora, kv_lora, rope_dim; /* MLA (kv_lora > 0): compression ranks, rotary head dim */
    uint64_t qk_dim, v_dim, kv_heads;  /* per head Q/K and V dims, heads of K and V (MLA: qk = nope + rope, kv_heads = a) */
    uint64_t mtp;                      /* multi-token-prediction layers on the last stage */
    bool mtp_repeated;                 /* one MTP module's weights serve every depth */
    bool shared_gate;                  /* the shared expert has a gate of h parameters */
    uint64_t norms;                    /* normalisations per layer (2; Gemma 2/3: 4) */
    bool qk_whole;                     /* Q/K norms over the whole projections (OLMo 2) */
    bool sinks, router_bias;           /* a sink logit per head (gpt-oss); a router bias of E */
    bool expert_bias;                  /* auxiliary-loss-free balancing (a per-expert score bias) */
    bool sq_relu;                      /* the MLP's activation is squared ReLU (step time only) */
    uint64_t idx_heads, idx_dim, idx_topk; /* DSA lightning indexer (0 heads: none) */
    uint64_t idx_freq, idx_offset;     /* only every idx_freq-th layer after idx_offset has one */
    bool out_gate;                     /* attention output gate (the query projection twice as wide) */
    /* a layer pattern (lib/hybrid.c; nlt = 0: none) and its layers' dimensions */
    uint64_t nlt, nkinds;
    const uint8_t *lt;
    const struct m4d_layer_kind *kinds;
    uint64_t ssm_n, ssm_p, ssm_g, ssm_heads, conv_k; /* Mamba-2: state, head dim, groups, heads; conv width */
    uint64_t gdn_kh, gdn_vh, gdn_dk, gdn_dv;         /* Gated DeltaNet: key/value heads and head dims */
    uint64_t experts, topk, fe, fs;    /* MoE: experts, top-k, expert ffn, shared-expert ffn */
    uint64_t latent;                   /* LatentMoE: the routed experts' width (0: h) */
    /* layout */
    const uint64_t *lv;                /* the layout's keys as set: a knob the model reads as it is needs no field
                                          here, x->lv[MEM4D_LAYOUT_KEY] (the search varies only b and recompute,
                                          which it sets in the fields below) */
    uint64_t t, c, p, d, world, b, gbs, m, s, v; /* m = 0 when gbs unknown */
    bool sp, flash;                    /* flash: fused attention, as m4d_attention_fused() decides (m4d_ctx_device()) */
    uint64_t ep, etp, zero;            /* etp: experts' tensor parallelism; effective ZeRO stage: max(zero_stage, dist_opt) */
    uint64_t recompute, rc_method, rc_layers;
    uint64_t rc_modules;               /* M4D_RC_* bits of what selective recompute re-runs */
    uint64_t router_bytes;             /* each router logit and probability (fp32 4, fp64 8) */
    uint64_t opt_offload_ppm;          /* share of the Adam moments on the host */
    bool opt_state_offload;            /* optimizer state on the host between steps */
    uint64_t logprob_loss;             /* an RL trainer's loss on fp32 logits (0: Megatron's cross entropy) */
    uint64_t fp8_recipe;               /* Transformer Engine's fp8 recipe (0: delayed) */
    uint64_t ce_impl;                  /* the cross entropy's kernels (0: the stack's) */
    bool cp_all_gather;                /* CP all-gathers K,V (cp_comm_type 1), not the ring */
    bool p2p_overlap;                  /* the interleaved schedule's steady-state transfers asynchronous (overlap_p2p_comm) */
    uint64_t param_bytes, grad_bytes, opt_bytes, master_bytes;
    bool fp8, overlap_grad, overlap_param;
    bool hidden_dropout, attn_dropout; /* dropout on: masks kept for backward */
    bool ce_fusion;                    /* Megatron-Core <= 0.14 fused cross entropy */
    bool distribute_saved;             /* full-recompute checkpoints split over t */
    bool fp8_params;                   /* linear weights kept in fp8 only */
    uint64_t opt_sq_bytes;             /* Adam's second moment */
    uint64_t opt_moments;              /* 2 Adam, 1 SGD with momentum, 0 plain SGD */
    bool odo;                          /* Megatron-LLaMA's overlapped distributed optimizer */
    uint64_t dopt_inst;                /* distributed optimizer copies over dp·cp */
    uint64_t cap_ppm;                  /* MoE capacity factor, millionths (0: none) */
    bool cap_pad;                      /* expert inputs padded to the capacity */
    uint64_t act_offload;              /* layers whose activations go to the host */
    bool pp_outputs;                   /* torch pipelining keeps the last stage's outputs */
    struct m4d_split split;            /* the pipeline split (stages.c) */
    bool precision_aware;              /* the optimizer takes low-precision gradients as they are */
    uint64_t dispatcher, dispatcher_sms; /* mem4d_moe_dispatcher; DeepEP's SMs */
    uint64_t pad_multiple;             /* expert token counts rounded up to this (0: none) */
    bool ep_overlap, delay_wgrad;      /* EP all-to-all overlap (combined 1F1B); delayed weight gradients */
    uint64_t cuda_graph;               /* mem4d_cuda_graph */
    uint64_t graph_scope;              /* M4D_GRAPH_* bits; 0: the whole layer */
    bool fp32_residual;                /* the residual stream in fp32 */
    bool fsdp_double;                  /* Megatron FSDP's persistent double buffers */
    uint64_t offload_modules;          /* M4D_OFFLOAD_* bits of fine-grained activation offloading */
    uint64_t offload_ppm;              /* the share of their groups offloaded */
    bool defer_emb_wgrad;              /* the output layer's weight gradient at the pipeline flush */
    uint64_t wgrad_defer_limit;        /* micro-batches deferred (0: all) */
    bool ag_groups;                    /* separate all-gather communicators (--create-all-gather-group) */
    uint64_t imbalance_ppm;            /* busiest EP rank's expert rows over the mean, millionths */
    uint64_t routed_imb_ppm;           /* what memory sizes the routed rows by: the above, or derived (m4d_moe_imbalance_ppm) */
    bool moe_grouped_gemm;             /* local experts' GEMMs grouped (TE GroupedLinear) or sequential */
    bool shared_overlap;               /* the shared expert beside the dispatch and combine */
    bool tp_overlap;                   /* TP collectives chunked under their GEMMs */
    uint64_t bucket, vocab_div;
    mem4d_mode mode;
    uint64_t params_total;             /* the model's parameters with V_p (MEM4D_INFO_MODEL_PARAMS) */
    bool params_total_ok;              /* false: they overflow 64 bits */
    const struct m4d_param_desc *paper_row; /* paper mode: the first key it does not model (resolve time), or NULL */
    uint64_t paper_value;                   /* that key's value */
    /* frameworks (doc/full-model.md, "Frameworks") */
    mem4d_framework fw;
    uint64_t reshard;                  /* reshard_after_forward: 0 auto, 1 always, 2 never */
    uint64_t dp_rep;                   /* HSDP replicate degree (divides d) */
    uint64_t rc_every;                 /* full recompute of every N-th block only (0/1: all) */
    uint64_t float8;                   /* 0 none, 1 tensorwise, 2 rowwise */
    bool fp8_all_gather, contiguous_grads, afab, expandable;
    uint64_t compile;                  /* 0 none, 1 blocks, 2 blocks and loss */
    uint64_t ag_bucket, prefetch, max_live, offload; /* DeepSpeed; 0 = its default */
    /* the device's software stack, what the memory model reads of it (m4d_ctx_device(), after m4d_resolve()) */
    struct m4d_softmax_rule softmax;   /* its fused softmax's shapes: where it declines, PyTorch's fp32 softmax keeps more */
    uint64_t attn_kernel;              /* the attention kernel that runs (MEM4D_INFO_ATTENTION_KERNEL; 5: softmax) */
};

/* Does PyTorch's fp32 softmax run in place of the stack's fused one at
 * keys s and micro-batch b? Memory is monotone in b and in s within each
 * class (fused, fallen back: the same bytes a score), and the fallback only
 * adds to the fused figure, so a shape that does not fit bounds the larger
 * ones only where it runs fused: a larger fused shape may fit beside a
 * fallen-back one that does not (llama3.1-8b at tp 4 on BigScience's fork
 * of 2022-02: micro-batch 3 peaks 8 GiB above 4). The solvers (lib/solve.c)
 * and the search's pruning (lib/search.c) bound by this; without a rule
 * (the default stack) or with flash attention it is false at once. */
static inline bool m4d_ctx_softmax_falls_back(const struct m4d_ctx *x, uint64_t s, uint64_t b)
{
    return !x->flash && m4d_softmax_falls_back(x->softmax, s, x->a / x->t, b);
}

/* The expert group: ep·etp consecutive ranks (Megatron-Core's tp_ep group with
 * the expert tensor-parallel size), over which the experts are split and the
 * dispatchers send; the one place memory and speed take it from. */
static inline uint64_t m4d_ep_group(const struct m4d_ctx *x) { return x->ep * x->etp; }

/* MTP modules whose weights the last stage holds: one for every depth, or
 * one in all with mtp_use_repeated_layer. */
static inline uint64_t m4d_mtp_modules(const struct m4d_ctx *x) { return x->mtp_repeated && x->mtp ? 1 : x->mtp; }

/* Chunk-micro-batch passes live on stage r at its peak (the one owner of
 * the schedule's warm-up count: memory's m4d_in_flight(), lib/estimate_full.h,
 * and the EP overlap's unpaired passes, lib/perf_moe.c). 1F1B: min(p − r, m).
 * Interleaved (v chunks): Megatron's warm-up 2(p−r−1) + (v−1)·p chunk passes
 * plus the one of the first steady-state step, capped at m·v. All forward,
 * all backward: every micro-batch. m = 0 (unknown) is taken as large. */
static inline uint64_t m4d_in_flight_units(const struct m4d_ctx *x, uint64_t r)
{
    if (x->v > 1) {
        uint64_t n = 2 * (x->p - r - 1) + (x->v - 1) * x->p + 1;
        return x->m > 0 && n > x->m * x->v ? x->m * x->v : n;
    }
    uint64_t n = x->p - r;
    if (x->afab && x->m > n) /* all forward, all backward: every micro-batch */
        n = x->m;
    return x->m > 0 && x->m < n ? x->m : n;
}


/* Bits of cuda_graph_scope, in Megatron's names (0: the whole layer). */
enum { M4D_GRAPH_ATTN = 1, M4D_GRAPH_MLP = 2, M4D_GRAPH_MOE = 4, M4D_GRAPH_MOE_ROUTER = 8, M4D_GRAPH_MOE_PREPROCESS = 16 };

/* Bits of offload_modules, in Megatron's names. */
enum {
    M4D_OFFLOAD_ATTN_NORM = 1, M4D_OFFLOAD_QKV_LINEAR = 2, M4D_OFFLOAD_CORE_ATTN = 4, M4D_OFFLOAD_ATTN_PROJ = 8,
    M4D_OFFLOAD_MLP_NORM = 16, M4D_OFFLOAD_EXPERT_FC1 = 32, M4D_OFFLOAD_MOE_ACT = 64,
};

/* Bits of recompute_modules, in Megatron's names. */
enum {
    M4D_RC_CORE_ATTN = 1, M4D_RC_MLP = 2, M4D_RC_LAYERNORM = 4, M4D_RC_MOE_ACT = 8,
    M4D_RC_SHARED_EXPERTS = 16, M4D_RC_MLA_UP_PROJ = 32, M4D_RC_MOE = 64,
};

/* Expert inputs per token, in millionths: top-k, or with a capacity factor
 * (Megatron-Core moe_utils.get_capacity, ceil(tokens·topk/experts·factor)
 * per expert) topk·factor when inputs are padded to the capacity, and at
 * most topk·factor when tokens beyond it are dropped. */
static inline uint64_t m4d_routed_ppm(const struct m4d_ctx *x)
{
    uint64_t f = x->cap_ppm == 0 ? 1000000 : x->cap_pad || x->cap_ppm < 1000000 ? x->cap_ppm : 1000000;
    uint64_t pad = 0;
    if (x->pad_multiple > 1 && x->experts) {
        /* --moe-router-padding-for-quantization: each expert's count rounded
         * up to a multiple of a, on average (a − 1)/2 rows more, padded by
         * every ep·etp sender with the alltoall dispatcher, once by the
         * receiver with the others; per token of T/t_sp (the rank's share) */
        uint64_t senders = x->dispatcher == MEM4D_MOE_DISPATCHER_ALLTOALL ? m4d_ep_group(x) : 1;
        uint64_t rows2 = (x->experts / x->ep) * senders * (x->pad_multiple - 1); /* twice the mean */
        uint64_t tsp = x->sp && x->t > 1 ? x->t : 1, T = (x->s / x->c) * x->b;
        pad = T ? rows2 * 500000 * tsp / T : 0;
    }
    return x->topk * f + pad;
}

/* --- util.c --------------------------------------------------------------- */

/* Bounded formatting into a caller buffer (NULL or size 0 allowed). */
void m4d_msg(char *buf, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* m4d_msg with a va_list. Both cut a message that does not fit at a UTF-8
 * character boundary. */
void m4d_vmsg(char *buf, size_t size, const char *fmt, va_list ap)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 0)))
#endif
    ;

/* A bounded writer: appends with m4d_put(), remembers the whole length even
 * past the end of buf (a caller then reports the size needed). */
struct m4d_out {
    char *buf;
    size_t size, len;
};
void m4d_put(struct m4d_out *o, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Length of the first n bytes of s less a UTF-8 character cut at n. */
size_t m4d_utf8_cut(const char *s, size_t n);

/* strtod as the "C" locale reads a number, whatever LC_NUMERIC the process
 * that loaded the library has set (every reader of a decimal uses it). */
double m4d_strtod(const char *text, char **end);

/* Parse the text of a value for a described key: numbers, booleans, value names. */
mem4d_status m4d_parse_value(const struct m4d_param_desc *d, const char *text, uint64_t *out);

/* Look a name up in a table (canonical name or aliases; '-' and '_' equal; case-insensitive). */
int m4d_param_lookup(const struct m4d_param_desc *table, size_t n, const char *name);

/* Case-insensitive ASCII string equality. */
/* Key names: case-insensitive, '-' equal to '_' (every key lookup uses it). */
bool m4d_name_eq(const char *a, const char *b);
bool m4d_streq_ci(const char *a, const char *b);

/* Copy a string into a fixed buffer, truncating at a character boundary. */
void m4d_strlcpy(char *dst, const char *src, size_t size);

/* Read a whole regular file of at most `max` bytes into a new
 * NUL-terminated buffer (*buf, free it; *size without the NUL). The one
 * rule of every reader that takes a path: never blocks on a FIFO or a
 * terminal, refuses a directory, a device or a socket (MEM4D_E_IO) and a
 * file larger than max (MEM4D_E_RANGE), saying so in why; `doc` names the
 * expected document ("device file"). */
mem4d_status m4d_read_file(const char *path, const char *doc, size_t max, char **buf, size_t *size, char *why,
                           size_t why_size);

/* Sorted divisors of n into out (at most `cap` of them); no n <= 2^32 has
 * more than M4D_MAX_DIVISORS. */
#define M4D_MAX_DIVISORS 1536
size_t m4d_divisors(uint64_t n, uint64_t *out, size_t cap);

/* Branch hints for the per-layout path (a search runs it millions of times a
 * second): the compiler lays out the expected side as the straight line.
 * Only where one side is rare in every job (an overflow, a setting few jobs
 * use); the result never depends on them. */
#define M4D_LIKELY(c) __builtin_expect(!!(c), 1)
#define M4D_UNLIKELY(c) __builtin_expect(!!(c), 0)
/* A static helper with one hot call site, inlined into it (gcc left the
 * search's and the activations' out of line), and a rare path kept out of
 * its caller's straight line. */
#define M4D_INLINE inline __attribute__((always_inline))
#define M4D_NOINLINE __attribute__((noinline))

/* Checked arithmetic: false on overflow (the output is then unspecified). */
static inline bool m4d_add(uint64_t a, uint64_t b, uint64_t *r) { return !__builtin_add_overflow(a, b, r); }
static inline bool m4d_mul(uint64_t a, uint64_t b, uint64_t *r) { return !__builtin_mul_overflow(a, b, r); }
static inline bool m4d_mul3(uint64_t a, uint64_t b, uint64_t c, uint64_t *r)
{
    uint64_t x;
    return m4d_mul(a, b, &x) && m4d_mul(x, c, r);
}
/* Ceiling division; d must be non-zero. */
static inline uint64_t m4d_ceil_div(uint64_t n, uint64_t d) { return n / d + (n % d != 0); }

/* a * b / d rounded up, exact through 128-bit intermediates; false when the
 * result exceeds 64 bits. */
static inline bool m4d_muldiv_ceil(uint64_t a, uint64_t b, uint64_t d, uint64_t *r)
{
    uint64_t x64; /* the common case: a 64-bit division is far cheaper than a 128-bit one */
    if (M4D_LIKELY(!__builtin_mul_overflow(a, b, &x64))) {
        *r = x64 / d + (x64 % d != 0);
        return true;
    }
    unsigned __int128 x = (unsigned __int128)a * b;
    unsigned __int128 q = x / d + (x % d != 0);
    if (q > UINT64_MAX)
        return false;
    *r = (uint64_t)q;
    return true;
}

/* PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp):
 * a request is rounded up to a block of 512-byte multiples (round_size,
 * kMinBlockSize); a new segment is 2 MiB (kSmallBuffer) for blocks up to
 * 1 MiB (kSmallSize), 20 MiB (kLargeBuffer) below 10 MiB (kMinLargeAlloc)
 * and otherwise the block rounded up to 2 MiB (kRoundLarge). */
#define M4D_ALLOC_MIN_BLOCK UINT64_C(512)
#define M4D_ALLOC_SMALL_SIZE (UINT64_C(1) << 20)
#define M4D_ALLOC_SMALL_BUFFER (UINT64_C(2) << 20)
#define M4D_ALLOC_LARGE_BUFFER (UINT64_C(20) << 20)
#define M4D_ALLOC_MIN_LARGE_ALLOC (UINT64_C(10) << 20)
#define M4D_ALLOC_ROUND_LARGE (UINT64_C(2) << 20)

/* Bytes of the block a request of `bytes` occupies (what max_memory_allocated counts). */
static inline uint64_t m4d_alloc_block(uint64_t bytes)
{
    if (bytes < M4D_ALLOC_MIN_BLOCK)
        return M4D_ALLOC_MIN_BLOCK;
    return bytes > UINT64_MAX - M4D_ALLOC_MIN_BLOCK ? bytes : (bytes + M4D_ALLOC_MIN_BLOCK - 1) / M4D_ALLOC_MIN_BLOCK * M4D_ALLOC_MIN_BLOCK;
}

/* Bytes of the segment cudaMalloc'ed for a request no cached block can serve
 * (what max_memory_reserved counts). */
static inline uint64_t m4d_alloc_size(uint64_t bytes)
{
    uint64_t b = m4d_alloc_block(bytes);
    if (b <= M4D_ALLOC_SMALL_SIZE)
        return M4D_ALLOC_SMALL_BUFFER;
    if (b < M4D_ALLOC_MIN_LARGE_ALLOC)
        return M4D_ALLOC_LARGE_BUFFER;
    return b > UINT64_MAX - M4D_ALLOC_ROUND_LARGE ? b : (b + M4D_ALLOC_ROUND_LARGE - 1) / M4D_ALLOC_ROUND_LARGE * M4D_ALLOC_ROUND_LARGE;
}

/* With expandable segments (the same file, Note [Expandable Segments],
 * find_expandable_block, ExpandableSegment::map): one segment per stream
 * and pool that grows at its end by whole pages, 20 MiB (kLargeBuffer) in
 * the large pool (2 MiB, kSmallBuffer, in the small one); the blocks inside
 * stay 512-byte multiples and split at any size (should_split: a rest of
 * kMinBlockSize), and a freed page is unmapped only when an allocation
 * fails or the cache is emptied. So only the segment's mapped end is
 * rounded: bytes mapped for `bytes` of large blocks packed in it. */
static inline uint64_t m4d_alloc_expandable_mapped(uint64_t bytes)
{
    if (bytes > UINT64_MAX - M4D_ALLOC_LARGE_BUFFER)
        return bytes;
    return (bytes + M4D_ALLOC_LARGE_BUFFER - 1) / M4D_ALLOC_LARGE_BUFFER * M4D_ALLOC_LARGE_BUFFER;
}

/* --- model.c / layout.c ----------------------------------------------------- */

/* Parameters of one transformer layer in three parts: attention and MLP
 * (what tensor parallelism splits) and what every tensor-parallel rank
 * replicates (norms, row-parallel biases); the model must have been
 * validated. false on overflow. */
bool m4d_layer_params(const struct m4d_ctx *x, uint64_t *attn, uint64_t *mlp, uint64_t *repl);
/* The sparse-attention indexer: its parameters (UINT64_MAX on overflow) and
 * how many of layers [first, first + n) build one. */
uint64_t m4d_dsa_indexer_params(const struct m4d_ctx *x);
uint64_t m4d_indexer_layers_in(const struct m4d_ctx *x, uint64_t first, uint64_t n);

/* Parameters of one layer of kind k of a layer pattern (model.c). */
bool m4d_kind_params(const struct m4d_ctx *x, const struct m4d_layer_kind *k, uint64_t *out);

/* Is layer i (0-based) an expert layer? */
static inline bool m4d_is_moe_layer(const struct m4d_ctx *x, uint64_t i)
{
    return x->experts && i >= x->first_dense && ((x->moe_mask >> ((i - x->first_dense) % x->moe_period)) & 1u);
}

/* Expert layers among layers [first, first + n); sliding-window or chunked
 * (local) attention layers among them. */
uint64_t m4d_moe_layers_in(const struct m4d_ctx *x, uint64_t first, uint64_t n);
uint64_t m4d_local_layers_in(const struct m4d_ctx *x, uint64_t first, uint64_t n);

/* The same model with every layer dense (an MoE model's dense layers). */
void m4d_ctx_dense(const struct m4d_ctx *x, struct m4d_ctx *dense);

/* One expert's (or the shared expert's) parameters for FFN width fe, biases included. */
bool m4d_expert_params(const struct m4d_ctx *x, uint64_t fe, uint64_t *out);
/* One routed expert's parameters, at the latent width with LatentMoE. */
bool m4d_routed_expert_params(const struct m4d_ctx *x, uint64_t *out);
/* LatentMoE's projections of one expert layer (replicated over t); 0 without. */
uint64_t m4d_latent_proj_params(const struct m4d_ctx *x);
/* The width the routed experts' tokens have: LatentMoE's latent, else h. */
static inline uint64_t m4d_expert_width(const struct m4d_ctx *x) { return x->latent ? x->latent : x->h; }

/* Whether the layout's dist_opt shapes the job: it is ZeRO-1 where no
 * zero_stage is given, and torchtitan always shards with FSDP2 (layout.c). */
bool m4d_dist_opt_applies(const uint64_t *layout_values);

/* Validate model + layout and fill the context. The message names the
 * numbers at fault. */
mem4d_status m4d_resolve(const mem4d_model *model, const mem4d_layout *layout,
                         struct m4d_ctx *x, char *why, size_t why_size);

/* The model's parameter count at one padded vocabulary V_p (it depends on
 * the model and V_p alone): a search resolves a thousand groups of one
 * model at a handful of V_p. have = false: empty. */
struct m4d_resolve_memo {
    bool have, ok;
    uint64_t Vp, total;
};

/* m4d_resolve() taking the parameter count from *memo when it holds the
 * same V_p, and leaving the one it computes there (memo NULL: none). */
mem4d_status m4d_resolve_memo(const mem4d_model *model, const mem4d_layout *layout, struct m4d_ctx *x,
                              char *why, size_t why_size, struct m4d_resolve_memo *memo);

/* The recompute-layers rule of m4d_resolve(): full recomputation of no more
 * layers than a stage holds. The search checks it alone per candidate, whose
 * recompute settings change after its group was resolved. */
static inline bool m4d_recompute_layers_ok(const struct m4d_ctx *x)
{
    return x->recompute != 2 || x->rc_layers <= x->L / x->p;
}

/* --- stages.c: the pipeline split ------------------------------------------ */

/* Fill a split from a layout's keys and table, for a model of L layers and
 * mtp MTP modules (m4d_resolve(); the Megatron-LM writer). */
void m4d_split_init(struct m4d_split *sp, const mem4d_layout *l, uint64_t L, uint64_t mtp);
/* The split at p ranks of v chunks each: what its form derives from p and
 * v, and the cache of m4d_split_rank_layers() (m4d_split_init() ends with it). */
void m4d_split_at(struct m4d_split *sp, uint64_t p, uint64_t v);
/* The split a search tries at p ranks (v = 1) for a base layout's split:
 * the base's form at p, or for an even base whose layers do not split over
 * p, when `uneven`, the search's uneven ends (m4d_split_uneven_ends). false
 * when p has none; which v hold is m4d_split_check()'s. */
bool m4d_split_search_at(const struct m4d_split *base, uint64_t p, bool uneven, struct m4d_split *out);
/* The one rule of a split: MEM4D_OK, or the status and a sentence naming
 * the numbers at fault (why may be NULL). */
mem4d_status m4d_split_check(const struct m4d_split *sp, char *why, size_t why_size);
/* The most chunks per rank a split of this form could take (the search
 * asks m4d_split_check() about each v up to it). */
uint64_t m4d_split_vpp_max(const struct m4d_split *sp);
/* Is the split given per virtual stage (shorter ends, a layer table)? */
static inline bool m4d_split_by_vstage(const struct m4d_split *sp) { return sp->nvs || sp->cf || sp->cl; }
/* Is it the even split, L/(p·v) layers per virtual stage? */
bool m4d_split_even(const struct m4d_split *sp);
/* Layers of rank r (all its chunks); of virtual stage k; of chunk j of
 * rank r, and that chunk's first layer. */
uint64_t m4d_split_rank_layers_of(const struct m4d_split *sp, uint64_t r);
/* The same, from the cache m4d_split_init() fills (the estimator asks it
 * many times per estimate). */
static inline uint64_t m4d_split_rank_layers(const struct m4d_split *sp, uint64_t r)
{
    if (M4D_UNLIKELY(sp->nvs))
        return m4d_split_rank_layers_of(sp, r);
    return r == 0 ? sp->ranks[0] : r == sp->p - 1 ? sp->ranks[2] : sp->ranks[1];
}
uint64_t m4d_split_vs_layers(const struct m4d_split *sp, uint64_t k);
uint64_t m4d_split_chunk_layers(const struct m4d_split *sp, uint64_t r, uint64_t j);
uint64_t m4d_split_chunk_first(const struct m4d_split *sp, uint64_t r, uint64_t j);
/* The heaviest rank between the ends (with p < 3, the heavier end). */
uint64_t m4d_split_middle_max(const struct m4d_split *sp);
/* MTP modules on rank r (inline: every last stage of a search's estimates asks). */
static inline uint64_t m4d_split_mtp(const struct m4d_split *sp, uint64_t r) { return r == sp->p - 1 ? sp->mtp : 0; }
/* The simplest form of a layer table t[S] over p ranks: even, shorter end
 * virtual stages (cf, cl), uneven end ranks (first, last), or the table
 * itself (nvs = S; vs left NULL for the caller to set). */
void m4d_split_of_table(const uint32_t *t, size_t S, uint64_t p, struct m4d_split *sp);
/* Layers of the first and last rank when L does not split evenly over p
 * (the search's uneven split); false when there is none. */
bool m4d_split_uneven_ends(uint64_t L, uint64_t p, uint64_t *first, uint64_t *last);
/* L_e(r): expert layers of rank r; of its heaviest chunk. Sliding-window or
 * chunked (local) attention layers of rank r, over its chunks. */
uint64_t m4d_stage_moe_layers(const struct m4d_ctx *x, uint64_t r);
uint64_t m4d_stage_local_layers(const struct m4d_ctx *x, uint64_t r);
uint64_t m4d_chunk_moe_layers(const struct m4d_ctx *x, uint64_t r);

/* The layout rules that depend on the recompute mode, which a search
 * varies inside a group resolved without recompute: m4d_resolve() gives
 * the sentence naming the rule broken, the search (why NULL) only the
 * answer (layout.c). */
bool m4d_recompute_mode_ok(const struct m4d_ctx *x, char *why, size_t why_size);

mem4d_status m4d_model_check(const mem4d_model *model, char *why, size_t why_size);
/* One of DeepEP's configured group sizes (layout.c). */
bool m4d_deepep_group_ok(uint64_t ranks);
/* The rules of a resolved layout that need the device (what DeepEP and
 * HybridEP run on: the node, the GPU's generation and vendor): MEM4D_OK or
 * MEM4D_E_CONFLICT with why. */
mem4d_status m4d_check_device(const struct m4d_ctx *x, const mem4d_device *dev, char *why, size_t n);
/* An AMD GPU (ROCm, not CUDA): a device named after a ROCm preset (device.c). */
bool m4d_device_rocm(const mem4d_device *device);
/* Whether a dispatcher's rates (lib/perf_moe.c) were measured on a device
 * like this one: HybridEP's NVLink rate (HYBRIDEP_SM_BW) on a link as fast
 * as the one it was measured on, DeepEP's (DEEPEP_SM_BW, DEEPEP_LINK_EFF)
 * on a GPU of the device's vendor (not an AMD GPU); the all-to-all and
 * all-gather are timed from the device's own links. Where not, the
 * estimate warns and the search does not propose the dispatcher unless
 * asked to. */
bool m4d_dispatcher_sourced(const mem4d_device *dev, uint64_t dispatcher);
void m4d_ctx_model(const mem4d_model *model, struct m4d_ctx *x);
bool m4d_model_params_total(const struct m4d_ctx *x, uint64_t vocab, uint64_t *out);

/* --- hybrid.c ------------------------------------------------------------- */

/* Checks of a model's layer pattern (part of m4d_model_check). */
mem4d_status m4d_pattern_check(const mem4d_model *model, char *why, size_t why_size);
/* The pattern half of m4d_ctx_model(). */
void m4d_ctx_pattern(const mem4d_model *model, struct m4d_ctx *x);
/* The context of one kind of layer of a pattern: the model's with only that
 * layer's parts (one norm; attention without an MLP, an MLP or experts
 * without attention), for the dense formulas. */
void m4d_kind_ctx(const struct m4d_ctx *x, const struct m4d_layer_kind *k, struct m4d_ctx *out);
/* Parameters of a Mamba-2 (M), Gated DeltaNet (G) or linear (L) layer:
 * split over t and replicated (its norm). false on overflow. */
bool m4d_mixer_params(const struct m4d_ctx *x, char sym, uint64_t *split, uint64_t *repl);
/* Bytes such a layer keeps for backward per token, in the two halves of
 * the dense layers' (repl split by t_sp, split by t). */
void m4d_mixer_token_bytes(const struct m4d_ctx *x, char sym, uint64_t *repl, uint64_t *split);
/* Bytes per token (split by t) of such a layer's backward working set. */
uint64_t m4d_mixer_backward_token_bytes(const struct m4d_ctx *x, char sym);
/* Layers of each kind among layers [first, first + n) into counts
 * (nkinds entries); returns the layers counted. */
uint64_t m4d_pattern_kind_count(const struct m4d_ctx *x, uint64_t first, uint64_t n, uint64_t *counts);
/* The layout rules of a layer pattern (part of m4d_resolve()): full mode,
 * Megatron, and the heads and widths each layer splits over t. */
mem4d_status m4d_pattern_layout_check(const struct m4d_ctx *x, char *why, size_t why_size);
static inline bool m4d_is_mixer(char sym) { return sym == 'M' || sym == 'G' || sym == 'L'; }

/* --- estimate.c (dispatch), estimate_paper.c, estimate_full.c ------------- */

mem4d_status m4d_estimate_paper(const struct m4d_ctx *x, mem4d_report *r);

/* One micro-batch size's terms of m4d_estimate_full() that do not depend on
 * the recompute mode (b = 0: a free slot of a table of M4D_B_SLOTS). */
struct m4d_b_terms {
    uint64_t b, C, head_keep, loss, stranded, emb_keep, fb, fixed, pp_kept, pp_merge;
};
#define M4D_B_SLOTS 16

/* What the search keeps of a group's estimates from one layout to the next:
 * the parameters and state terms of stages 0, 1 and p - 1, which depend on
 * the group alone (and on m, for torchtitan's accumulated gradients), not on
 * the micro-batch or recompute, and (have_group) the layer shares and the
 * fixed terms that depend on the group alone (estimate_full.c,
 * group_terms()). Cleared at each group; NULL: none. */
struct m4d_state_cache {
    bool have[3];
    uint64_t m[3];
    uint64_t all[3], expert[3], linear[3], w[3], g[3], o[3], step[3]; /* step: m4d_step_buffers() */
    bool have_group;
    uint64_t share[3], dense[3]; /* struct layer_share: linear, expert, replicated */
    uint64_t mtp[3], emb, emb_grad, block, fsdp_kept, groups, fixed; /* mtp: a layer_share as share[] */
    /* the terms that depend on b (and m, which b sets) but not on the
     * recompute mode, for up to M4D_B_SLOTS micro-batch sizes (b = 0: a free
     * slot), shared by the groups of one m4d_b_key() (NULL: none kept; the
     * search points it) */
    struct m4d_b_terms *per_b;
    /* the activation terms of the candidate's (b, recompute mode) for every
     * group of the same m4d_act_key() (NULL: none; the search points it) */
    struct m4d_act_terms *act;
};

/* Slot i of the probe sequence of micro-batch size b in a table of 16 (the
 * search's per-b caches): a multiplicative hash of b, then the next slots
 * (a search asks for its few b in turn; a scan from slot 0 walked past
 * all the earlier ones every time). */
static inline size_t m4d_b_probe(uint64_t b, size_t i)
{
    return ((size_t)((b * UINT64_C(0x9E3779B97F4A7C15)) >> 60) + i) & 15;
}

/* Empty a cache for a new group: its flags and free slots alone (a field
 * is read only under its flag; a memset of the 1.6 KB was a `rep stos`
 * at every group of a search). */
static inline void m4d_state_cache_clear(struct m4d_state_cache *c)
{
    c->have[0] = c->have[1] = c->have[2] = false;
    c->have_group = false;
    c->per_b = NULL;
    c->act = NULL;
}

/* A layer's activation terms of one (b, recompute mode): they read only the
 * context's fields that m4d_act_key() lists, b and the mode, so the search
 * keeps them across groups that differ in p, d, v or dist_opt alone. have:
 * filled (only when computed without overflow). */
struct m4d_act_terms {
    bool have;
    uint64_t A_dense, A, core_live, backward, sac;
};
/* Entries of m4d_act_key(). */
#define M4D_ACT_KEY_LEN 48
/* Every field but b and the recompute mode that m4d_layer_activation(),
 * m4d_selective_live(), m4d_backward_working_set() and
 * m4d_op_sac_layer_keep() read (of x and of its dense copy), into key;
 * false for a layer pattern, whose terms are not kept. */
bool m4d_act_key(const struct m4d_ctx *x, uint64_t key[M4D_ACT_KEY_LEN]);
/* The key of x's b terms (struct m4d_b_terms): the whole context, byte for
 * byte, with the fields they do not read cleared (b, m and the recompute
 * mode, which the slots and the state cache carry; the chunks v); false for
 * a layer pattern, whose terms are not kept. Groups of equal keys share
 * their b terms. */
bool m4d_b_key(const struct m4d_ctx *x, struct m4d_ctx *key);

/* Every stage's row with its sums (m4d_stage_sums) and the peak stage; the
 * verdict is the caller's (m4d_report_verdict). peak_only: fill only stages
 * 0, 1 and p-1 (enough for the peak and the verdict: a middle stage never
 * exceeds stage 1, see doc/full-model.md), and write no warnings; the report
 * is then for the search's internal use only. */
mem4d_status m4d_estimate_full(const struct m4d_ctx *x, const mem4d_device *dev, mem4d_report *r, bool peak_only,
                               struct m4d_state_cache *cache);

/* Does the part of r's peak that never falls as b or s grows exceed the fit
 * limit (r an estimate of x, peak_only or whole)? That floor is every
 * stage's TOTAL less the part of FRAGMENTATION that m4d_fragmentation() of
 * PEAK_ALLOCATED leaves: the blocks the peak moment strands and the logits
 * blocks' segments beyond their bytes, which can fall as the tokens grow
 * (PyTorch's caching allocator gives a request below 10 MiB a 20 MiB
 * segment, a larger one its size rounded to 2 MiB: loss_segments(), lib/
 * estimate_activations.c; with expandable segments only each block's
 * 512-byte rounding, m4d_head_bytes()); the loss's blocks count only where
 * the loss is the moment's transient (m4d_stage_activations()).
 * m4d_fragmentation() itself never falls (with expandable segments the peak
 * rounded up to a 20 MiB page, which grows with it); the rest is sums,
 * maxima and products of what grows with b and s and with the micro-batch
 * count m, so where the floor does not fit, no larger b or s at the same or
 * a larger m fits (within the softmax classes, m4d_ctx_softmax_falls_back()).
 * The solvers bisect on it and the search prunes on it (lib/solve.c,
 * lib/search.c). */
bool m4d_floor_over_limit(const struct m4d_ctx *x, const mem4d_device *dev, const mem4d_report *r);


/* The filled stage after stage i of n (every stage is filled, or with
 * peak_only stages 0, 1 and n-1 alone): loops visit the filled stages only. */
static inline uint64_t m4d_stage_next(bool peak_only, uint64_t i, uint64_t n)
{
    return peak_only && i == 1 && n > 3 ? n - 1 : i + 1;
}

/* Memory of a resolved context into a reset report (no speed metrics).
 * peak_only: only the stages that decide the peak, and no job-wide values
 * (MEM4D_INFO_*, left as m4d_report_reset() clears them): the search's
 * scratch. */
mem4d_status m4d_estimate_ctx(const struct m4d_ctx *x, const mem4d_device *dev, mem4d_report *r, bool peak_only,
                              struct m4d_state_cache *cache);


/* --- estimate_state.c: how a rank's state is sharded -------------------------- */

/* The groups a rank's parameters and state are sharded over: the memory
 * model and the step time read them from here. */
struct m4d_shards {
    uint64_t dp;   /* data x context ranks that hold the same dense parameters: d·c */
    uint64_t edp;  /* expert data-parallel ranks that hold the same experts: t·d·c/(ep·etp) (dp without experts) */
    uint64_t opt;  /* what ZeRO and the distributed optimizer shard dense state over: dp / its instances */
    uint64_t eopt; /* the same for the experts' state: edp / its instances */
    uint64_t fsdp; /* FSDP2's shard group (torchtitan's dp_shard x cp): d/dp_replicate·c; dp elsewhere */
};
void m4d_shards(const struct m4d_ctx *x, struct m4d_shards *s);

/* One layer's parameters on one rank: the linear weights split by t (expert
 * weights by ep·t_e, t_e the expert tensor-parallel size, t by default),
 * norms and router replicated.
 * `expert` is the part whose optimizer shards over the expert-data-parallel
 * group (d·c/ep) instead of d·c. */
struct layer_share {
    uint64_t linear, expert, replicated;
};

/* One layer's parameters on one GPU (an expert layer's with experts). */
struct layer_share m4d_layer_share(bool *ok, const struct m4d_ctx *x);

/* --- report.c --------------------------------------------------------------- */

/* Clear a report's results before an estimate. */
void m4d_report_reset(mem4d_report *r, const mem4d_device *dev);

/* One stage row's four sums from its parts; false on overflow.
 * OVERHEAD = BUFFERS + FRAGMENTATION + FIXED; TOTAL = the four main terms +
 * OVERHEAD; PEAK_ALLOCATED = TOTAL - FRAGMENTATION - FIXED;
 * PEAK_RESERVED = PEAK_ALLOCATED + FRAGMENTATION. (Inline: full mode sums
 * every stage it fills.) */
static inline bool m4d_stage_sums(uint64_t *t)
{
    uint64_t alloc = 0, over = 0;
    static const mem4d_term main_terms[] = {MEM4D_TERM_WEIGHTS, MEM4D_TERM_GRADIENTS, MEM4D_TERM_OPTIMIZER,
                                             MEM4D_TERM_ACTIVATIONS, MEM4D_TERM_BUFFERS};
    for (size_t k = 0; k < sizeof main_terms / sizeof main_terms[0]; k++)
        if (M4D_UNLIKELY(!m4d_add(alloc, t[main_terms[k]], &alloc)))
            return false;
    if (M4D_UNLIKELY(!m4d_add(t[MEM4D_TERM_BUFFERS], t[MEM4D_TERM_FRAGMENTATION], &over) ||
                     !m4d_add(over, t[MEM4D_TERM_FIXED], &over)))
        return false;
    t[MEM4D_TERM_OVERHEAD] = over;
    t[MEM4D_TERM_PEAK_ALLOCATED] = alloc;
    return m4d_add(alloc, t[MEM4D_TERM_FRAGMENTATION], &t[MEM4D_TERM_PEAK_RESERVED]) &&
           m4d_add(t[MEM4D_TERM_PEAK_RESERVED], t[MEM4D_TERM_FIXED], &t[MEM4D_TERM_TOTAL]);
}

/* The device's size and the verdict of the peak stage (peak_stage set). */
void m4d_report_verdict(mem4d_report *r, const mem4d_device *dev);

/* Sum the parts of every stage into TOTAL, pick the peak stage and the
 * verdict (paper mode; full mode sums each stage as it fills it). */
mem4d_status m4d_report_finish(mem4d_report *r, const mem4d_device *dev);

/* Job-wide infos of a resolved context; MEM4D_E_RANGE (with the message) on overflow. */
mem4d_status m4d_report_fill_info(mem4d_report *r, const struct m4d_ctx *x);

/* Record an estimate's final status: a failed report has no stages.
 * (Inline: the search calls it once per candidate.) */
static inline void m4d_report_done(mem4d_report *r, mem4d_status status)
{
    r->status = status;
    if (status != MEM4D_OK)
        r->nstages = 0;
}

/* Copy a report's results (only the stages it has). */
void m4d_report_copy(mem4d_report *dst, const mem4d_report *src);

/* The fit limit: do `bytes` exceed the device's fit threshold? */
bool m4d_over_fit_limit(const mem4d_device *dev, mem4d_mode mode, uint64_t bytes);

/* The verdict rule: oom above the device memory, tight above the fit limit, else fits. */
mem4d_verdict m4d_verdict_for(const mem4d_device *dev, mem4d_mode mode, uint64_t peak);

/* --- perf.c ------------------------------------------------------------------ */

/* Fill the report's speed metrics; leaves have_metrics false when the
 * device has no peak or the global batch is unknown. */
void m4d_perf(const struct m4d_ctx *x, const mem4d_device *dev, mem4d_report *r);

/* Every speed metric (indexed by mem4d_metric) from the parts an estimate
 * kept. */
void m4d_perf_metrics(const struct m4d_perf_parts *p, double metric[M4D_NMETRICS]);
/* The FLOPs the step executes (not MFU's count) over what the peak runs in
 * the step: the band's fast end stops where this is 1 (lib/perf.c). */
double m4d_perf_executed_share(const struct m4d_perf_parts *p);
/* A warning on the report when the work it runs is above the peak, a note
 * where only the counted MFU is (lib/perf.c). */
void m4d_perf_warn(mem4d_report *r);

/* Bytes one layer keeps for backward for one micro-batch (estimate_activations.c's
 * A_layer; 0 on overflow). */
uint64_t m4d_layer_activation_bytes(const struct m4d_ctx *x);

/* --- describe.c -------------------------------------------------------------- */

/* One search option: its name, kind (BOOLEAN or INTEGER) and default. */
struct m4d_option_desc {
    const char *name;
    mem4d_param_kind kind;
    uint64_t def;
};
extern const struct m4d_option_desc m4d_search_options[]; /* M4D_NSEARCH_OPTIONS rows */
/* Link figures of one kind of collective path. */
struct m4d_link {
    double bw;  /* bytes/s per GPU reached by collectives; 0: not modelled */
    double lat; /* seconds per collective step */
};

/* Per-device figures, in SI units, with the efficiencies applied. */
struct m4d_machine {
    double gemm;         /* bf16 FLOP/s reached by large GEMMs */
    double gemm_lin;     /* FLOP/s of large linear-layer GEMMs (fp8 when on, at its recipe's FP8_RECIPE_TIME) */
    double fp8_slow;     /* the fp8 recipe's GEMM and quantization time over delayed scaling's (FP8_RECIPE_TIME); 1 */
    double power_r;      /* the cube of the compute rate a step of compute alone sustains at the power limit (power_r_of) */
    double power_zc;     /* the inverse of that rate, power_r^(-1/3) */
    double hbm, inv_hbm; /* bytes/s of HBM and its inverse; 0: not modelled */
    double domain;       /* GPUs sharing one NVLink domain */
    double gpn;          /* GPUs a host (gpus_per_node): the hosts a straggler may be among (STRAGGLER_HOSTS, lib/perf.c) */
    double kernel;       /* seconds per kernel launch / dependency */
    double host_op;      /* host seconds of one eager op issued back to back (EAGER_OP_S, lib/perf.c) */
    double sms, inv_sms; /* SMs for wave quantisation; 0: none */
    double nccl_dup;     /* 2 where NCCL's ring search duplicates a cross-node group's channels (nccl_slow_of) */
    double wave_lost;    /* share of a partial last wave's idle SM time a GEMM loses (lib/perf.c) */
    struct m4d_link intra, inter;
    /* The software stack (lib/perf.c, stack_of()). */
    double attn_fwd, attn_bwd; /* attention's rate, forward and backward, as a share of gemm */
    double attn_work;          /* executed attention FLOPs over the causal count: 1 flash, 2 unfused */
    double attn_dh64;          /* the kernel's rate at head dimension <= 64 over its rate at 128 (TRITON_FA_DH64, lib/perf.c) */
    double mb_overhead;        /* seconds per micro-batch and stage outside the layers */
    double accum_bytes;        /* HBM bytes per local weight and micro-batch of gradient accumulation */
    double ce_bytes;           /* HBM bytes per logit of the cross entropy, forward and backward */
    bool op_sac;               /* selective recompute is torchtitan's per-op policy (lib/perf.c) */
    bool ew_eager;             /* element-wise work unfused, as eager PyTorch runs it (lib/perf.c) */
    bool act_eager;            /* only the gated activation unfused (nanotron's GLUActivation) */
    bool sq_relu_eager;        /* squared ReLU as two eager kernels (lib/perf.c, SQ_RELU_EAGER) */
    bool zero1_allreduce;      /* ZeRO-1 as nanotron runs it: fp32 all-reduce, unpacked all-gather (lib/perf.c) */
    bool dtensor_tp;           /* TP as PyTorch's DTensor runs it: backward collectives exposed (lib/perf.c) */
    bool fsdp2_copies;         /* FSDP2's copy-out and copy-in around its collectives (lib/perf.c) */
    bool titan_model;          /* torchtitan's Llama: separate linears, GQA by repeat_kv (lib/perf.c) */
    bool nanotron_model;       /* nanotron's Llama: its attention's q/k/v reshuffles copied (lib/perf.c, NANOTRON_MODEL) */
    bool tp_sync;              /* TP's backward all-reduces on the compute stream, none hidden (lib/perf.c) */
    bool ln_apex;              /* Megatron's non-persistent fused LayerNorm (lib/perf.c, LN_APEX_FWD) */
    bool bias_add;             /* the QKV bias added by a kernel of its own (lib/perf.c, BIAS_BYTES) */
    bool bias_epilogue;        /* the QKV bias and its gradient in the GEMMs' epilogues (lib/perf.c, BIAS_BYTES) */
    bool ds_pipe;              /* DeepSpeed's pipeline engine: blocking p2p, partitioned activations (lib/perf.c) */
    bool ds_zero1;             /* DeepSpeed's engine runs ZeRO-1: a gradient all-reduce, then the gather (DS_ZERO1, lib/perf.c) */
    bool p2p_split;            /* without SP the pipeline sends 1/t and all-gathers what it receives (P2P_SHAPE, lib/perf.c) */
    uint8_t step_passes;       /* the Megatron family's step outside Adam's kernel: the gradient buffer's, the clip's and the master copy's passes (STEP_PASSES, lib/perf.c) */
    bool persistent;           /* GEMMs are persistent kernels (Hopper, CUDA 12 cuBLAS): PERSISTENT_WAVES (lib/perf.c) */
    bool ampere_beside;        /* Ampere: every kernel beside a NCCL kernel AMPERE_BESIDE times as long (lib/perf.c) */
    bool fsdp_root;            /* ZeRO-2/3 as PyTorch's FSDP wraps a model: the root unit's collectives exposed, ZeRO-2 as SHARD_GRAD_OP (lib/perf.c) */
    bool attn_unpad;           /* flash attention through llm-foundry's unpadding copies (ATTN_UNPAD, lib/perf.c) */
    bool attn_unfused;         /* softmax attention: its dropout a kernel of its own (ATTN_DROPOUT_BYTES, lib/perf.c) */
    struct m4d_softmax_rule softmax; /* the stack's fused softmax's shapes (FUSED_SOFTMAX, lib/perf.c) */
    bool te_norm_fp8;          /* the norm before qkv and fc1 writes fp8 itself (TE_FP8_CASTS, lib/perf.c) */
    uint8_t te_cp_ring;        /* CP as Transformer Engine's p2p ring runs it (TE_CP_RING, lib/perf.c): 0 not, 1 TE 1.9-2.1, 2 TE 2.2+ */
};

/* One GEMM of a layer with its N and K fixed by the group; M (tokens)
 * varies with the micro-batch: time(M) = max(M c slots/tiles, M a + b) with
 * tiles = ceil(M / TILE_M) tn (lib/perf.c, gemm_time()). */
struct m4d_gemm {
    double c;  /* compute seconds per row at full waves: 2 N (K + K_FILL) / rate */
    double a;  /* HBM seconds per row: (e K + 2 N) / B_hbm */
    double b;  /* HBM seconds of the weight: e K N / B_hbm */
    double tn; /* tiles along N */
};

/* An expert layer's share of a search group (lib/perf_moe.c): the rows
 * the busiest rank's experts compute, their GEMM shapes, the memory-bound
 * router and permutation work, and one dispatch (or combine). */
struct m4d_moe_group {
    bool on;                /* the model has routed experts */
    double experts_local;   /* E / ep */
    double rows_per_b;      /* expert rows of the busiest rank per sample (imbalance, capacity, etp gather) */
    double streams;         /* expert GEMMs that share the SMs at a time */
    double fc1_n, fc2_k, h; /* fc1's outputs, fc2's inputs (after etp), the experts' token width (h or the latent) */
    double lat_rows, lat_h; /* LatentMoE: tokens a sample its projections run (0: none), and h */
    double eb, rate;        /* input bytes per element, FLOP/s of large GEMMs */
    double wgrad_out;       /* HBM bytes per weight element a wgrad GEMM's epilogue moves */
    double row_var;         /* variance of an expert's rows over their mean (random routing; 0 padded) */
    double cast_per_b, cast_w; /* fp8 casts of the experts' inputs and output gradients per sample; of their weights, per step */
    double router_per_b;    /* router GEMM, top-k, aux loss, permute and unpermute: forward seconds per sample */
    double act_per_b;       /* the experts' activation: forward seconds per sample */
    double kernels;         /* launch seconds of an expert layer's forward */
    double host_fwd, host_bwd; /* host seconds that issue an expert layer's forward and backward */
    double stretch;         /* GPU seconds lost after the dispatcher's host synchronisations, per forward */
    double comm_lat, comm_per_b; /* one dispatch (or combine): latency, seconds per sample */
    double sm_keep;         /* share of the SMs compute keeps beside DeepEP / HybridEP kernels */
    double tp_share;        /* share of a dense layer's TP collectives an expert layer runs */
};

/* One expert layer and micro-batch: forward and backward seconds of the
 * expert GEMMs (with the activation) and of the router and permutation,
 * the expert weight gradients, the activation alone, one dispatch. */
struct m4d_moe_time {
    double expert_fwd, expert_bwd, wgrad, act, router_fwd, router_bwd, comm;
    double cast; /* fp8 casts of the expert GEMMs' inputs and output gradients */
};
uint64_t m4d_moe_imbalance_ppm(const struct m4d_ctx *x);
void m4d_moe_prepare(const struct m4d_ctx *x, const mem4d_device *dev, const struct m4d_machine *mc,
                     struct m4d_moe_group *g);
void m4d_moe_time(const struct m4d_machine *mc, const struct m4d_moe_group *g, double b, struct m4d_moe_time *t);
/* Exposed dispatch and combine seconds of one expert layer and micro-batch,
 * beside the layer's forward and backward compute (the EP overlap) or its
 * shared expert's forward (shared_fwd: the shared-expert overlap). */
double m4d_moe_exposed(const struct m4d_ctx *x, const struct m4d_moe_time *t,
                       double fwd, double bwd, double shared_fwd, double passes_fwd, double lost);
/* Seconds one expert layer and micro-batch waits for the host: the launches
 * the GPU outruns after the dispatcher's device-to-host synchronisations,
 * and a forward or backward whose host work outlasts its GPU work (fwd,
 * bwd: the layer's compute; comm: its exposed collectives). */
double m4d_moe_host(const struct m4d_ctx *x, const struct m4d_moe_group *g, double fwd, double bwd, double comm,
                    double passes_fwd);
/* `streams` concurrent GEMMs of m x n x k at `rate` FLOP/s, inputs of `eb`
 * bytes: wave quantisation over their tiles together, rows and columns
 * padded to the tile (a partial tile runs as long as a whole one in its
 * wave), the K pipeline fill, or their HBM traffic (lib/perf.c). */
double m4d_gemm_mnk(const struct m4d_machine *mc, double m, double n, double k, double rate, double eb,
                    double streams);
/* The same with the row tiles given: tm, the (mean) 128-row tiles of m. */
double m4d_gemm_tiles(const struct m4d_machine *mc, double m, double tm, double n, double k, double rate, double eb,
                      double streams);
/* The same averaged over a spread of the rows: uniform on m ± √3·sd (the
 * spread of standard deviation sd), each whole tile count weighted by its
 * share. sd 0: m4d_gemm_mnk. */
double m4d_gemm_spread(const struct m4d_machine *mc, double m, double sd, double n, double k, double rate, double eb,
                       double streams);

/* What the step time of a layout shares with every layout that differs only
 * in the micro-batch size and recompute (a search group): the machine, the
 * GEMMs but M, per-sample coefficients of everything linear in the
 * micro-batch, the stage split, the data-parallel collectives and the
 * optimizer step. m4d_perf() = m4d_perf_prepare() + m4d_perf_fill(). */
struct m4d_perf_group {
    bool ok; /* false: no speed for this device / layout */
    struct m4d_machine mc;
    /* From lin to attn_tiles_per_b: what the per-b terms (struct m4d_perf_b)
     * are formed from, with the machine, which a search shares; groups equal
     * there share them (m4d_perf_b_shared). Doubles and uint64_t only (no
     * padding): compared bytewise. */
    struct m4d_gemm lin[4], head;                  /* QKV, attention out, MLP up(+gate), down; LM head */
    struct m4d_gemm lin_ub[4];                     /* the same beside a userbuffers kernel (SMs - UB_SMS) */
    struct m4d_gemm dense_mlp[2], dense_mlp_ub[2]; /* an MoE model's dense layer: its MLP's up(+gate) and down, each way (else tn 0) */
    double chunks;                                 /* t with tp_comm_overlap (chunked GEMMs), else 1 */
    double row_slices;                             /* t where nanotron's async TP slices GEMMs by rank (NANOTRON_TP_SLICES), else 0 */
    double rows_per_b;                             /* GEMM rows per sample: s / c */
    double cast_a, cast_b;                         /* fp8 casts: seconds per row, fixed */
    double attn_pv_per_b, attn_qk_tiles_per_b;     /* unfused (UNFUSED_ATTN): a long-K GEMM's compute at full waves, the score GEMM's tiles (else 0) */
    double attn_bytes_fwd_per_b, attn_bytes_bwd_per_b; /* unfused: its GEMMs' and softmax's HBM seconds, forward, backward */
    double attn_torch_fwd_per_b, attn_torch_bwd_per_b; /* unfused: PyTorch's softmax beyond the fused one's, where that declines (FUSED_SOFTMAX) */
    uint64_t attn_softmax_s, attn_softmax_np;      /* unfused: the keys and heads per rank the fused softmax's test takes (m4d_softmax_falls_back) */
    double attn_drop_per_b;                        /* unfused: its dropout's forward (ATTN_DROPOUT_BYTES), in ew_per_b, re-run with the core */
    double attn_per_b, attn_tiles_per_b;           /* forward attention at full waves, query tiles (unfused: the score GEMM's compute, P.V's tiles) */
    double ew_per_b, ce_per_b;                     /* element-wise forward, cross entropy (fwd+bwd) */
    double ew_grad_per_b;                          /* element-wise work of the backward alone (TITAN_MODEL's gradient sums, ATTN_UNPAD's) */
    double pad_per_b;                              /* ATTN_UNPAD's copies in the forward */
    double ew_norm_per_b, ew_act_per_b;            /* of the forward: the norms, the MLP activation */
    double copy_per_b, copy_mb_per_b;              /* NANOTRON_MODEL's forward copies; those of b > 1 only, forward and backward each */
    double cp_fwd_per_b, cp_bwd_per_b;             /* TE_CP_RING's merges and copies around the attention, forward, backward */
    double tp_lat, tp_per_b;                       /* one TP collective: latency, transfer per sample */
    double tp_ag_share;                            /* an all-gather's share of tp_per_b (TP_FP8_GATHER, lib/perf.c) */
    double tp_lost;                                /* compute seconds lost per second of a TP collective hidden under a GEMM (TP_BESIDE, lib/perf.c) */
    double cp_lat, cp_per_b;                       /* one CP ring step */
    double p2p_lat, p2p_per_b;                     /* one pipeline transfer of a micro-batch: latency, per sample */
    double p2p_n[3], p2p_ag[3];                    /* transfers and TP all-gathers per micro-batch: first, middle, last stage */
    double n_first, n_mid, n_last, layers_max;
    /* An MoE model's dense layers (moe_first_dense_layers, a MoE layer
     * period): how many the first, the middle and the last stage hold, and
     * the activation's element-wise seconds per sample of their MLP (dense
     * ffn, GEMMs dense_mlp above) beyond the shared expert's. */
    double d_first, d_mid, d_last;
    double dense_act_per_b;
    /* Sliding-window attention (SLIDING_WINDOW, lib/perf.c): the global
     * layers of the first, the middle and the last stage beyond the model's
     * share of its layers (the layer's time charges the mean), those of
     * every middle stage together, and a global layer's attention beyond a
     * local one's over the mean layer's (0: no window modelled). */
    double g_first, g_mid, g_last, g_mids;
    double win_delta;
    double dp_reduce, dp_gather, dp_colls, opt_s; /* unhidden DP seconds, buckets, optimizer */
    double fp8_gather_lin; /* linear weights the DP and FSDP gathers move in fp8 (fp8_param_gather) */
    double dp_slow, fsdp_slow;                     /* extra compute seconds per hidden DP / FSDP second (nccl_slow_of) */
    double p2p_slow;                               /* the same for a hidden pipeline transfer (P2P_OVERLAP) */
    double dp_serial;                              /* DP and tied-embedding seconds no overlap hides */
    double fsdp_ag, fsdp_rs;                       /* one layer's ZeRO-3 gather / reduce-scatter */
    double fsdp_edge_ag, fsdp_edge_rs;             /* FSDP_ROOT: gathers before the first forward, reduce-scatters after the last backward */
    double flops_per_seq, peak;                    /* Megatron's model FLOPs per sequence; the MFU's peak */
    double exec_flops_per_seq;                     /* the FLOPs it executes (the band's stop at the peak) */
    double kernel_share;                           /* the fastest kernel's rate over its peak (lib/perf.c) */
    double attn_flops_per_b;                       /* one attention forward's executed FLOPs a sample on a rank */
    double band_lo, band_hi;                       /* measured / predicted step: 5th, 95th percentile */
    double offload_per_b;                          /* host transfer seconds of the offloaded layers, per sample */
    double accum_layer;                            /* gradient accumulation (and FSDP2 copy) seconds of one layer, per micro-batch */
    double straggle;                               /* straggler_share() of the job's world and hosts (STRAGGLER_STEP, lib/perf.c) */
    double host_fwd, host_bwd;                     /* host seconds issuing one layer's forward, backward, per micro-batch (EAGER_HOST, lib/perf.c); 0: not counted */
    struct m4d_moe_group moe;                      /* the expert layer's share (lib/perf_moe.c) */
    /* Settings fixed for the group, read once per layout by the step time
     * (m4d_perf_prepare sets them from the terms above): */
    bool fsdp;        /* the weights gathered per layer (fsdp_units) */
    bool attn_copies; /* pad_per_b, copy_per_b or copy_mb_per_b nonzero */
    bool tp_ag_whole; /* tp_ag_share == 1: an all-gather moves what a reduce-scatter does */
    bool moe_dense;   /* experts with dense layers in a stage (d_first + d_mid + d_last > 0) */
};
/* share: m4d_layer_share(x) when the caller holds it (a search group's state
 * cache, computed without overflow), else NULL; mc: m4d_perf_machine(x, dev)
 * when the caller holds it (a search's, which varies neither), else NULL. */
void m4d_perf_prepare(const struct m4d_ctx *x, const mem4d_device *dev, const struct layer_share *share,
                      const struct m4d_machine *mc, struct m4d_perf_group *pg);
/* The machine of a device for x: it reads the framework, fp8 and flash of x alone. */
struct m4d_machine m4d_perf_machine(const struct m4d_ctx *x, const mem4d_device *dev);

/* A layer pattern's step time (lib/perf_hybrid.c): what perf.c hands in for
 * one micro-batch, and the mean layer it gets back. */
struct m4d_hybrid_in {
    const struct m4d_machine *mc;
    double M;                  /* GEMM rows of the micro-batch on the rank */
    double attn_fwd, attn_bwd; /* one attention core */
    double moe_fwd, moe_bwd;   /* one expert layer's routed experts and router */
};
struct m4d_hybrid_out {
    double fwd, bwd;               /* mean forward and backward compute seconds of a layer */
    double attn_share, moe_share;  /* shares of the layers that are attention, experts */
};
void m4d_hybrid_mean(const struct m4d_ctx *x, const struct m4d_hybrid_in *in, struct m4d_hybrid_out *out);
/* Megatron-LM's model FLOPs per sequence of a hybrid model (hybrid_flops). */
double m4d_hybrid_flops_per_seq(const struct m4d_ctx *x);
/* Mean weights of a layer on one GPU (routed experts over ep·etp, the rest over t). */
double m4d_hybrid_mean_layer_weights(const struct m4d_ctx *x);

void m4d_perf_fill(const struct m4d_ctx *x, const struct m4d_perf_group *pg, mem4d_report *r);
/* The GEMM and attention seconds of one micro-batch of a group, which do
 * not depend on the recompute mode, nor on p, d, v or dist_opt: the search
 * keeps them per b (b = 0: not known yet) for the other layouts of that b,
 * in its group and the next groups while m4d_perf_b_shared() holds. */
struct m4d_perf_b {
    double b;
    double lin, lin_bwd, mlp, cast, attn_fwd, attn_bwd, head; /* lin_bwd: the linears' dgrad and wgrad */
    double dense_lin, dense_lin_bwd, dense_mlp;              /* the same of an MoE model's dense layer (dense_mlp[0].tn > 0) */
};
/* The bytes of a group the per-b terms are formed from (lin to
 * attn_tiles_per_b), and whether two groups' per-b terms are the same:
 * those bytes equal (the machine is the same for a whole search). */
#define M4D_PERF_B_KEY_BYTES                                                                                  \
    (offsetof(struct m4d_perf_group, attn_tiles_per_b) + sizeof(double) - offsetof(struct m4d_perf_group, lin))
bool m4d_perf_b_shared(const struct m4d_perf_group *pg, const unsigned char key[M4D_PERF_B_KEY_BYTES]);
void m4d_perf_b_key(const struct m4d_perf_group *pg, unsigned char key[M4D_PERF_B_KEY_BYTES]);
/* m4d_perf_fill() reusing *memo when it holds x->b, else filling it. */
void m4d_perf_fill_memo(const struct m4d_ctx *x, const struct m4d_perf_group *pg, struct m4d_perf_b *memo,
                        mem4d_report *r);
/* The value a speed key takes on a device: its own, or where it is 0 the
 * stack's (attention_efficiency_ppm: the attention kernel's forward share of
 * the GEMM rate; microbatch_overhead_ns: the stack's overhead). */
uint64_t m4d_perf_effective(const mem4d_device *dev, mem4d_device_param key);

/* The job's attention, one owner for the memory model and the step time:
 * fused (true: keeps no s x s scores) or softmax attention over the
 * materialised scores (the attention kernel "unfused"). (a) The layout's
 * flash_attn where set (mem4d_layout::flash_set); (b) else the device's
 * attention_kernel, else its stack's (lib/perf.c's profiles: the
 * megatron-lm-2022 and megatron-deepspeed ones run softmax attention);
 * (c) the default stack's kernel is fused, flash_attn's default 1. */
bool m4d_attention_fused(const mem4d_layout *l, const mem4d_device *dev);
/* How the step time takes the model's sliding window or chunk (lib/perf.c,
 * SLIDING_WINDOW, CHUNKED_ATTN): none shorter than the sequence; over the
 * window's keys or the chunks' triangles; or, with cp > 1, a layer pattern,
 * or a chunk outside framework torchtitan, as full causal attention. One owner
 * for the step time, its warnings and the report's MEM4D_INFO_WINDOW_*. */
enum m4d_window { M4D_WINDOW_NONE, M4D_WINDOW_TIMED, M4D_WINDOW_TIMED_FULL };
enum m4d_window m4d_window_timing(const struct m4d_ctx *x);
/* What the device decides of the job, onto a context m4d_resolve() filled:
 * its attention (m4d_ctx.flash, m4d_attention_fused()), the kernel that
 * runs it (m4d_ctx.attn_kernel, the report's MEM4D_INFO_ATTENTION_KERNEL)
 * and its stack's fused-softmax rule (m4d_ctx.softmax). estimate.c,
 * search.c and solve.c call it. */
void m4d_ctx_device(struct m4d_ctx *x, const mem4d_layout *l, const mem4d_device *dev);
/* The band between layouts of one job (doc/perf.md, "Uncertainty"): the
 * device's own speed_band_*_ppm where set, else the calibrated series band. */
void m4d_speed_band_relative(const mem4d_device *dev, double *low, double *high);

/* --- presets.c -------------------------------------------------------------- */

/* In a preset row, 0 means "the default"; M4D_ZERO means an explicit 0. */
#define M4D_ZERO UINT64_MAX
struct m4d_model_preset {
    const char *name;
    uint64_t v[M4D_MODEL_NPARAM]; /* 0 where the default applies */
};
struct m4d_device_preset {
    const char *name;
    bool rocm; /* an AMD GPU, programmed through ROCm/HIP, not CUDA (m4d_device_rocm()) */
    uint64_t v[M4D_DEVICE_NPARAM]; /* 0 where the default applies */
};
extern const struct m4d_model_preset m4d_model_presets[];
extern const size_t m4d_model_preset_n;
extern const struct m4d_device_preset m4d_device_presets[];
extern const size_t m4d_device_preset_n;

#endif
