/*
 * Private declarations of the importers: the mem4d_import handle (import.c),
 * the readers (import_megatron.c and megatron.h, import_hf.c), the Megatron-LM
 * flag table (megatron_flags.c) and the MoE layer-pattern language
 * (moe_pattern.c).
 * SPDX-License-Identifier: MIT
 */
#ifndef MEM4D_IMPORT_H
#define MEM4D_IMPORT_H

#include "private.h"

/* Warnings kept per import; further ones are counted into the last slot. */
#define M4D_IMP_MAX_WARN 32

struct mem4d_import {
    char msg[M4D_MSG_MAX];
    char warn[M4D_IMP_MAX_WARN][M4D_MSG_MAX];
    size_t nwarn;   /* slots filled */
    size_t dropped; /* warnings that found no free slot */
    mem4d_world_source world_source;
    bool llama_like; /* read an unknown config.json model_type as Llama (a setting, kept across imports) */
};

/* --- import.c: the handle ---------------------------------------------------- */

/* Forget the previous import's message, warnings and world source. */
void m4d_imp_reset(mem4d_import *imp);

/* Set the message and return st. */
mem4d_status m4d_imp_fail(mem4d_import *imp, mem4d_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Add a warning (bounded; the overflow is summarised by m4d_imp_done). */
void m4d_imp_warn(mem4d_import *imp, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Read a whole regular file of at most M4D_IMP_MAX_FILE bytes into a
 * malloc'ed buffer by m4d_read_file()'s rule, its message the import's; doc
 * names the expected document in messages ("config.json"). */
/* A config.json is a few kilobytes, a DeepSpeed config as small: anything this large is neither. */
#define M4D_IMP_MAX_FILE (16u << 20)
mem4d_status m4d_imp_read_file(mem4d_import *imp, const char *path, const char *doc, char **buf, size_t *size);

/* Close an import: write the "n further warnings" summary if any. */
void m4d_imp_done(mem4d_import *imp);

/* Set a key of a described array, naming the source (a flag or a JSON key)
 * when the value is out of bounds. */
mem4d_status m4d_imp_set(mem4d_import *imp, const struct m4d_param_desc *table, size_t n,
                         uint64_t *v, int key, uint64_t value, const char *what);

/* The world size: explicit_world if non-zero, else WORLD_SIZE, SLURM_NTASKS
 * or SLURM_JOB_NUM_NODES x GPUs per node from envp; 0 when none says. */
/* PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF's expandable_segments into the layout. */
mem4d_status m4d_imp_alloc_conf(mem4d_import *imp, const char *const *envp, mem4d_layout *layout);
mem4d_status m4d_imp_world(mem4d_import *imp, const char *const *envp, uint64_t explicit_world,
                           uint64_t *world);

/* --- import_hf.c: shared by the JSON readers (built with json-c only) ------------ */

struct json_object;

/* Parse a JSON document whose top level must be an object; *out is then a
 * new reference (json_object_put it). */
mem4d_status m4d_imp_parse_object(mem4d_import *imp, const char *json, size_t size, const char *doc,
                                  struct json_object **out);

#define SET_M(m, key, val, what) \
    m4d_imp_set(imp, m4d_model_params, M4D_MODEL_NPARAM, (m)->v, (key), (val), (what))
#define SET_L(l, key, val, what) \
    m4d_imp_set(imp, m4d_layout_params, M4D_LAYOUT_NPARAM, (l)->v, (key), (val), (what))
#define TRY(expr)                          \
    do {                                   \
        mem4d_status st_ = (expr);         \
        if (st_ != MEM4D_OK)               \
            return st_;                    \
    } while (0)

/* --- megatron_flags.c: the flag table ----------------------------------------- */

/* How a flag is read. */
enum m4d_flag_kind {
    M4D_FLAG_INT,    /* a whole number */
    M4D_FLAG_SWITCH, /* present or absent, no value */
    M4D_FLAG_WORD,   /* one of the row's choices */
    M4D_FLAG_REAL,   /* a probability in [0, 1] */
    M4D_FLAG_TEXT,   /* any word, kept as given (a name or a path) */
    M4D_FLAG_BITS,   /* one or more of the row's choices (nargs='+'): bit i for choice i */
    M4D_FLAG_SKIP,   /* no effect on per-GPU memory: skipped, with its values */
    M4D_FLAG_WARN,   /* changes memory in a way not modelled: a warning says how */
};

/* The modelled flags: the reader's slots (import_megatron.c gives each its meaning). */
enum m4d_mflag {
    MF_NUM_LAYERS, MF_HIDDEN, MF_FFN, MF_HEADS, MF_GQA, MF_GROUPS, MF_KV_CHANNELS,
    MF_SEQ, MF_ENC_SEQ, MF_MAX_POS, MF_MBS, MF_GBS, MF_TP, MF_PP, MF_CP,
    MF_VPP_LAYERS, MF_VPP_STAGES, MF_SP, MF_DIST_OPT,
    MF_RC_GRAN, MF_RC_METHOD, MF_RC_LAYERS, MF_RC_ACT,
    MF_UNTIE, MF_VOCAB, MF_VOCAB_DIV, MF_SWIGLU, MF_NORM,
    MF_BF16, MF_FP16, MF_ACC_FP32, MF_GRAD_BF16,
    MF_FLASH, MF_TE_IMPL, MF_ATTN_BACKEND, MF_NO_BIAS, MF_QKV_BIAS, MF_POS_TYPE, MF_ROPE,
    MF_FP8, MF_EP, MF_EXPERTS, MF_TOPK, MF_MOE_FFN, MF_SHARED_FFN,
    MF_FIRST_LAYERS, MF_LAST_LAYERS, MF_OVERLAP_GRAD, MF_OVERLAP_PARAM, MF_BUCKET,
    MF_HIDDEN_DROPOUT, MF_ATTN_DROPOUT, MF_CE_FUSION, MF_FSDP2, MF_MEGATRON_FSDP, MF_CUSTOM_FSDP,
    MF_DP_SHARDING, MF_OPTIMIZER,
    MF_TOKENIZER, MF_TOKENIZER_MODEL, MF_TOKENIZER_NAME, MF_PATCH_TOKENIZER, MF_EXTRA_VOCAB,
    MF_PADDED_VOCAB, MF_PAD_VOCAB_TO, MF_VOCAB_EXTRA_IDS,
    MF_CKPT_ACT, MF_DS_ACT_CKPT, MF_DIST_SAVED, MF_ACT_CKPT_METHOD, MF_ACT_CKPT_LAYERS, MF_CKPT_NUM_LAYERS,
    MF_PREC_AWARE, MF_MAIN_GRADS_DTYPE, MF_MAIN_PARAMS_DTYPE, MF_EXP_AVG_DTYPE, MF_EXP_AVG_SQ_DTYPE,
    MF_FP8_PARAM, MF_ADD_BIAS, MF_NO_POS, MF_QK_NORM, MF_DEEPSPEED, MF_ZERO_STAGE, MF_DS_CONFIG,
    MF_ETP, MF_MOE_FREQ, MF_MTP, MF_MLA, MF_Q_LORA, MF_KV_LORA, MF_QK_HEAD_DIM, MF_QK_POS_DIM, MF_V_HEAD_DIM, MF_SHARED_GATE, MF_RC_MODULES, MF_VOCAB_FILE, MF_KV_HEADS_DS,
    MF_ROUTER_DTYPE, MF_CE_IMPL, MF_RMSNORM_FORK, MF_ODO, MF_ACCOUNT_EMB, MF_ACCOUNT_LOSS, MF_OPT_OFFLOAD, MF_OPT_OFFLOAD_FRACTION, MF_OPT_STATE_OFFLOAD, MF_TP_OVERLAP, MF_PP_PARTITION,
    MF_PP_LAYOUT, MF_SGD_MOMENTUM, MF_REDUCE_BUCKET, MF_DOPT_INST, MF_MOE_CAP, MF_MOE_PAD, MF_MOE_LAYER_RC,
    MF_CUDA_GRAPH, MF_NCCL_UB, MF_CPU_OFFLOAD, MF_CPU_OFFLOAD_LAYERS,
    MF_DISPATCHER, MF_FLEX_BACKEND, MF_ENABLE_DEEPEP, MF_FLEX_SMS, MF_DEEPEP_SMS, MF_ROUTER_PAD_Q, MF_ROUTER_PAD_FP8,
    MF_FP8_RECIPE, MF_EP_OVERLAP, MF_DELAY_WGRAD, MF_REUSE_GRAD_MXFP8, MF_ENABLE_CUDA_GRAPH, MF_EXTERNAL_CUDA_GRAPH,
    MF_CUDA_GRAPH_SCOPE, MF_CUDA_GRAPH_MODULES, MF_FP32_RESIDUAL, MF_FSDP_DOUBLE, MF_FSDP_MAXPOOL, MF_FSDP_GRADS_DTYPE, MF_FSDP_PARAMS_DTYPE,
    MF_FG_OFFLOAD, MF_OFFLOAD_MODULES, MF_OFFLOAD_FRACTION, MF_DEFER_EMB_WGRAD, MF_WGRAD_DEFER_LIMIT, MF_AG_GROUP,
    MF_GROUPED_GEMM, MF_SHARED_OVERLAP, MF_FORCE_BALANCE, MF_EXPERT_BIAS,
    MF_SOFTMAX, MF_DSA_HEADS, MF_DSA_HEAD_DIM, MF_DSA_TOPK, MF_ENABLE_SHARED, MF_NUM_SHARED, MF_DSA_FREQ, MF_DSA_OFFSET,
    MF_QUICK_GEGLU,
    MF_ATTN_OUT_GATE, MF_ATTN_VARIANT, MF_HETERO_JSON, MF_HETERO_PATH, MF_HYBRID_ATTN, MF_HYBRID_PATTERN,
    MF_HYBRID_MLP, MF_HYBRID_OVERRIDE, MF_IS_HYBRID, MF_LA_FREQ, MF_LIN_CONV, MF_LIN_KEY_DIM, MF_LIN_KEY_HEADS,
    MF_LIN_VALUE_HEADS, MF_LIN_VALUE_DIM, MF_MAMBA_HEAD_DIM, MF_MAMBA_GROUPS, MF_MAMBA_HEADS, MF_MAMBA_STATE,
    MF_MAX_TOKENS, MF_DYN_BATCH, MF_SPEC, MF_LOGPROB_LOSS, MF_MTP_REPEATED, MF_CP_COMM, MF_P2P_OVERLAP, MF_NO_P2P_OVERLAP,
    MF_WINDOW, MF_WINDOW_SKIP,
    MF_FP4, MF_FP4_RECIPE, MF_FP4_PARAM, MF_MOE_LATENT,
    MF_COUNT
};

/* Indices into the choice lists of WORD flags, in the table's order. */
enum { M4D_NORM_LAYER = 0, M4D_NORM_RMS = 1 };
enum { M4D_GRAN_FULL = 0, M4D_GRAN_SELECTIVE = 1 };
enum { M4D_IMPL_LOCAL = 0 };
enum { M4D_BACKEND_UNFUSED = 2, M4D_BACKEND_LOCAL = 3 };
enum { M4D_DTYPE_FP32 = 0 }; /* first of every dtype list */
enum { M4D_OPT_ADAM = 0 };
enum { M4D_SOFTMAX_LEARNABLE = 2 };
/* --cp-comm-type's words (bits of a BITS flag) */
enum { M4D_CP_P2P = 0, M4D_CP_ALL_GATHER = 1, M4D_CP_ALLGATHER = 2, M4D_CP_A2A = 3, M4D_CP_A2A_P2P = 4 };

struct m4d_megatron_flag {
    const char *flag;           /* without the leading "--" */
    enum m4d_flag_kind kind;
    int slot;                   /* enum m4d_mflag for read kinds; -1 for SKIP and WARN */
    int model_key;              /* model key an INT flag sets as given, or -1 */
    const char *const *choices; /* WORD: accepted values, NULL-terminated */
    const char *why;            /* WARN: how the memory changes */
};

extern const struct m4d_megatron_flag m4d_megatron_flags[];
extern const size_t m4d_megatron_flag_n;

/* The row of a flag name (without "--"), or NULL. */
const struct m4d_megatron_flag *m4d_megatron_flag_find(const char *name);

/* The row of a modelled slot (every slot has one). */
const struct m4d_megatron_flag *m4d_megatron_flag_of(int slot);

/* A flag of a trainer that drives Megatron-Core (slime, Megatron-RL): not
 * memory-relevant (why NULL), or warned about once (why). */
struct m4d_trainer_flag {
    const char *flag;    /* without "--"; ending in '-': every flag it begins */
    const char *trainer;
    const char *why;
};
extern const struct m4d_trainer_flag m4d_trainer_flags[];
extern const size_t m4d_trainer_flag_n;
const struct m4d_trainer_flag *m4d_trainer_flag_find(const char *name);

/* Is a row read into a slot (as opposed to skipped or warned about)? */
static inline bool m4d_flag_is_read(const struct m4d_megatron_flag *row)
{
    return row->kind <= M4D_FLAG_BITS;
}

/* --- moe_pattern.c: --moe-layer-freq's list expression ---------------------- */

/* The layers of a list of expert (1) and dense (0) layers, or of local (1)
 * and global (0) attention layers, at most M4D_PATTERN_BITS, in the model's
 * form: first zero layers, then period layers with mask repeated. */
#define M4D_PATTERN_BITS 4096
bool m4d_pattern_fit(const uint8_t *bit, size_t n, uint64_t *first, uint64_t *period, uint64_t *mask);
/* Read a list expression of expert (1) and dense (0) layers ("([0]*3+[1]*58)",
 * "([1]*3+[0]*1)*3", "[1,0,1,0]"); false when text is not one. Else
 * *layers is its length and *fits whether it is `first` dense layers then a
 * repeating period of at most 64 layers (the last possibly cut), the
 * shortest period first, with at least one expert layer. */
bool m4d_moe_pattern_read(const char *text, size_t *layers, bool *fits, uint64_t *first, uint64_t *period,
                          uint64_t *mask);

/* --- tokenizers.c: vocabulary sizes of named tokenizers -------------------------- */

/* How a tokenizer's name gives the vocabulary. */
enum m4d_vocab_rule {
    M4D_VOCAB_FIXED,      /* size, then padded to make_vocab_size_divisible_by x tp */
    M4D_VOCAB_BERT,       /* size + --vocab-extra-ids, then padded */
    M4D_VOCAB_NULL,       /* --vocab-size + 1 (end of document), then padded */
    M4D_VOCAB_TIKTOKEN,   /* --vocab-size, or size when absent, then padded */
    M4D_VOCAB_HUB_LEN,    /* len(tokenizer) of the hub id, then padded */
    M4D_VOCAB_HUB_BASE,   /* tokenizer.vocab_size of the hub id, then padded */
    M4D_VOCAB_FILE,       /* only the tokenizer file knows */
    M4D_VOCAB_PADDED,     /* the padded vocabulary outright (Pai) */
    M4D_VOCAB_PLUS_EXTRA, /* size + --extra-vocab-size, the padded vocabulary outright (Pai) */
};

struct m4d_tokenizer_type {
    const char *name;
    enum m4d_vocab_rule rule;
    uint64_t size;
};

struct m4d_hub_tokenizer {
    const char *prefix; /* last path component, up to the model size */
    uint64_t base, len; /* tokenizer.vocab_size, len(tokenizer) */
    bool exact;         /* the whole component, not a prefix followed by a digit */
};

extern const struct m4d_tokenizer_type m4d_tokenizer_types[];       /* --tokenizer-type */
extern const size_t m4d_tokenizer_type_n;
extern const struct m4d_tokenizer_type m4d_patch_tokenizer_types[]; /* --patch-tokenizer-type */
extern const size_t m4d_patch_tokenizer_type_n;

/* A row by name (case-insensitive), or NULL. */
const struct m4d_tokenizer_type *m4d_tokenizer_find(const struct m4d_tokenizer_type *table, size_t n,
                                                    const char *name);

/* The tokenizer of a hub id or a local directory named like one, or NULL. */
const struct m4d_hub_tokenizer *m4d_hub_tokenizer_find(const char *id);

#endif
