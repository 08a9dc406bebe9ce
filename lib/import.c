/*
 * Import: Megatron-LM argument vectors and Hugging Face config.json files.
 *
 * Both readers work on copies of the caller's model and layout and write them
 * back only on success, so a failed import leaves the handles as they were.
 * Messages and warnings live in the mem4d_import handle (bounded storage).
 * SPDX-License-Identifier: MIT
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "private.h"

/* Set by the build when json-c is found. */
#ifndef MEM4D_HAVE_JSON
#define MEM4D_HAVE_JSON 0
#endif

#if MEM4D_HAVE_JSON
#include <json-c/json.h>
#endif

/* Warnings kept per import; further ones are counted into the last slot. */
#define IMP_MAX_WARN 32
/* A config.json is a few kilobytes; anything this large is not one. */
#define HF_MAX_BYTES (16u << 20)

struct mem4d_import {
    char msg[M4D_MSG_MAX];
    char warn[IMP_MAX_WARN][M4D_MSG_MAX];
    size_t nwarn;   /* slots filled */
    size_t dropped; /* warnings that found no free slot */
    mem4d_world_source world_source;
};

/* ------------------------------------------------------------------------ */
/* Handle and messages                                                       */

mem4d_status mem4d_import_new(mem4d_import **out)
{
    if (!out)
        return MEM4D_E_INVALID_ARG;
    *out = calloc(1, sizeof **out);
    return *out ? MEM4D_OK : MEM4D_E_NOMEM;
}

void mem4d_import_free(mem4d_import *import)
{
    free(import);
}

static void imp_reset(mem4d_import *imp)
{
    imp->msg[0] = '\0';
    imp->nwarn = 0;
    imp->dropped = 0;
    imp->world_source = MEM4D_WORLD_NONE;
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static mem4d_status imp_fail(mem4d_import *imp, mem4d_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(imp->msg, sizeof imp->msg, fmt, ap);
    va_end(ap);
    return st;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void imp_warn(mem4d_import *imp, const char *fmt, ...)
{
    /* The last slot is kept for the "n more" summary written by imp_done(). */
    if (imp->nwarn >= IMP_MAX_WARN - 1) {
        imp->dropped++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(imp->warn[imp->nwarn], M4D_MSG_MAX, fmt, ap);
    va_end(ap);
    imp->nwarn++;
}

static void imp_done(mem4d_import *imp)
{
    if (imp->dropped) {
        m4d_msg(imp->warn[IMP_MAX_WARN - 1], M4D_MSG_MAX, "%zu further warnings were not kept",
                imp->dropped);
        imp->nwarn = IMP_MAX_WARN;
    }
}

const char *mem4d_import_message(const mem4d_import *import)
{
    return import ? import->msg : "";
}

size_t mem4d_import_warning_count(const mem4d_import *import)
{
    return import ? import->nwarn : 0;
}

const char *mem4d_import_warning(const mem4d_import *import, size_t index)
{
    if (!import || index >= import->nwarn)
        return NULL;
    return import->warn[index];
}

mem4d_world_source mem4d_import_world_source(const mem4d_import *import)
{
    return import ? import->world_source : MEM4D_WORLD_NONE;
}

/* Set a key of a described array, naming the source (a flag or a JSON key)
 * when the value is out of bounds. */
static mem4d_status imp_set(mem4d_import *imp, const struct m4d_param_desc *table, size_t n,
                            uint64_t *v, int key, uint64_t value, const char *what)
{
    mem4d_status st = m4d_param_set(table, n, v, key, value);
    if (st == MEM4D_E_RANGE)
        return imp_fail(imp, st, "%s %llu is outside the accepted range [%llu, %llu]", what,
                        (unsigned long long)value, (unsigned long long)table[key].min,
                        (unsigned long long)table[key].max);
    if (st != MEM4D_OK)
        return imp_fail(imp, st, "%s could not be set", what);
    return MEM4D_OK;
}

#define SET_M(m, key, val, what) imp_set(imp, m4d_model_params, M4D_MODEL_NPARAM, (m)->v, (key), (val), (what))
#define SET_L(l, key, val, what) imp_set(imp, m4d_layout_params, M4D_LAYOUT_NPARAM, (l)->v, (key), (val), (what))
#define TRY(expr)                          \
    do {                                   \
        mem4d_status st_ = (expr);         \
        if (st_ != MEM4D_OK)               \
            return st_;                    \
    } while (0)

/* ------------------------------------------------------------------------ */
/* Megatron-LM: the flags that are modelled                                  */

enum opt_type { T_INT, T_FLAG, T_WORD, T_REAL };

enum opt {
    O_NUM_LAYERS, O_HIDDEN, O_FFN, O_HEADS, O_GQA, O_GROUPS, O_KV_CHANNELS,
    O_SEQ, O_ENC_SEQ, O_MAX_POS, O_MBS, O_GBS, O_TP, O_PP, O_CP,
    O_VPP_LAYERS, O_VPP_STAGES, O_SP, O_DIST_OPT,
    O_RC_GRAN, O_RC_METHOD, O_RC_LAYERS, O_RC_ACT,
    O_UNTIE, O_VOCAB, O_VOCAB_DIV, O_SWIGLU, O_NORM,
    O_BF16, O_FP16, O_ACC_FP32, O_GRAD_BF16,
    O_FLASH, O_TE_IMPL, O_ATTN_BACKEND, O_NO_BIAS, O_QKV_BIAS, O_POS_TYPE, O_ROPE,
    O_FP8, O_EP, O_EXPERTS, O_TOPK, O_MOE_FFN, O_SHARED_FFN,
    O_FIRST_LAYERS, O_LAST_LAYERS, O_OVERLAP_GRAD, O_OVERLAP_PARAM, O_BUCKET,
    O_HIDDEN_DROPOUT, O_ATTN_DROPOUT, O_CE_FUSION, O_FSDP2, O_MEGATRON_FSDP, O_CUSTOM_FSDP, O_DP_SHARDING, O_OPTIMIZER,
    O_COUNT
};

static const char *const c_norm[] = {"LayerNorm", "RMSNorm", NULL};
static const char *const c_rc_gran[] = {"full", "selective", NULL};
static const char *const c_rc_method[] = {"uniform", "block", NULL};
static const char *const c_impl[] = {"local", "transformer_engine", NULL};
static const char *const c_backend[] = {"flash", "fused", "unfused", "local", "auto", NULL};
static const char *const c_pos[] = {"learned_absolute", "rope", "mrope", "relative", "none", NULL};
static const char *const c_fp8[] = {"e4m3", "hybrid", NULL};
static const char *const c_sharding[] = {"no_shard", "optim", "optim_grads", "optim_grads_params", NULL};
static const char *const c_optimizer[] = {"adam", "sgd", NULL};

/* Indices into the choice lists above, for readability below. */
enum { NORM_LAYER = 0, NORM_RMS = 1 };
enum { GRAN_FULL = 0, GRAN_SELECTIVE = 1 };
enum { IMPL_LOCAL = 0 };
enum { BACKEND_UNFUSED = 2, BACKEND_LOCAL = 3 };
enum { POS_LEARNED = 0 };
enum { OPT_ADAM = 0 };

struct opt_desc {
    const char *flag; /* without the leading "--" */
    enum opt_type type;
    const char *const *choices; /* T_WORD only */
};

static const struct opt_desc opts[O_COUNT] = {
    [O_NUM_LAYERS] = {"num-layers", T_INT, NULL},
    [O_HIDDEN] = {"hidden-size", T_INT, NULL},
    [O_FFN] = {"ffn-hidden-size", T_INT, NULL},
    [O_HEADS] = {"num-attention-heads", T_INT, NULL},
    [O_GQA] = {"group-query-attention", T_FLAG, NULL},
    [O_GROUPS] = {"num-query-groups", T_INT, NULL},
    [O_KV_CHANNELS] = {"kv-channels", T_INT, NULL},
    [O_SEQ] = {"seq-length", T_INT, NULL},
    [O_ENC_SEQ] = {"encoder-seq-length", T_INT, NULL},
    [O_MAX_POS] = {"max-position-embeddings", T_INT, NULL},
    [O_MBS] = {"micro-batch-size", T_INT, NULL},
    [O_GBS] = {"global-batch-size", T_INT, NULL},
    [O_TP] = {"tensor-model-parallel-size", T_INT, NULL},
    [O_PP] = {"pipeline-model-parallel-size", T_INT, NULL},
    [O_CP] = {"context-parallel-size", T_INT, NULL},
    [O_VPP_LAYERS] = {"num-layers-per-virtual-pipeline-stage", T_INT, NULL},
    [O_VPP_STAGES] = {"num-virtual-stages-per-pipeline-rank", T_INT, NULL},
    [O_SP] = {"sequence-parallel", T_FLAG, NULL},
    [O_DIST_OPT] = {"use-distributed-optimizer", T_FLAG, NULL},
    [O_RC_GRAN] = {"recompute-granularity", T_WORD, c_rc_gran},
    [O_RC_METHOD] = {"recompute-method", T_WORD, c_rc_method},
    [O_RC_LAYERS] = {"recompute-num-layers", T_INT, NULL},
    [O_RC_ACT] = {"recompute-activations", T_FLAG, NULL},
    [O_UNTIE] = {"untie-embeddings-and-output-weights", T_FLAG, NULL},
    [O_VOCAB] = {"vocab-size", T_INT, NULL},
    [O_VOCAB_DIV] = {"make-vocab-size-divisible-by", T_INT, NULL},
    [O_SWIGLU] = {"swiglu", T_FLAG, NULL},
    [O_NORM] = {"normalization", T_WORD, c_norm},
    [O_BF16] = {"bf16", T_FLAG, NULL},
    [O_FP16] = {"fp16", T_FLAG, NULL},
    [O_ACC_FP32] = {"accumulate-allreduce-grads-in-fp32", T_FLAG, NULL},
    [O_GRAD_BF16] = {"grad-reduce-in-bf16", T_FLAG, NULL},
    [O_FLASH] = {"use-flash-attn", T_FLAG, NULL},
    [O_TE_IMPL] = {"transformer-impl", T_WORD, c_impl},
    [O_ATTN_BACKEND] = {"attention-backend", T_WORD, c_backend},
    [O_NO_BIAS] = {"disable-bias-linear", T_FLAG, NULL},
    [O_QKV_BIAS] = {"add-qkv-bias", T_FLAG, NULL},
    [O_POS_TYPE] = {"position-embedding-type", T_WORD, c_pos},
    [O_ROPE] = {"use-rotary-position-embeddings", T_FLAG, NULL},
    [O_FP8] = {"fp8-format", T_WORD, c_fp8},
    [O_EP] = {"expert-model-parallel-size", T_INT, NULL},
    [O_EXPERTS] = {"num-experts", T_INT, NULL},
    [O_TOPK] = {"moe-router-topk", T_INT, NULL},
    [O_MOE_FFN] = {"moe-ffn-hidden-size", T_INT, NULL},
    [O_SHARED_FFN] = {"moe-shared-expert-intermediate-size", T_INT, NULL},
    [O_FIRST_LAYERS] = {"decoder-first-pipeline-num-layers", T_INT, NULL},
    [O_LAST_LAYERS] = {"decoder-last-pipeline-num-layers", T_INT, NULL},
    [O_OVERLAP_GRAD] = {"overlap-grad-reduce", T_FLAG, NULL},
    [O_OVERLAP_PARAM] = {"overlap-param-gather", T_FLAG, NULL},
    [O_BUCKET] = {"ddp-bucket-size", T_INT, NULL},
    [O_HIDDEN_DROPOUT] = {"hidden-dropout", T_REAL, NULL},
    [O_ATTN_DROPOUT] = {"attention-dropout", T_REAL, NULL},
    [O_CE_FUSION] = {"cross-entropy-loss-fusion", T_FLAG, NULL},
    [O_FSDP2] = {"use-torch-fsdp2", T_FLAG, NULL},
    [O_MEGATRON_FSDP] = {"use-megatron-fsdp", T_FLAG, NULL},
    [O_CUSTOM_FSDP] = {"use-custom-fsdp", T_FLAG, NULL},
    [O_DP_SHARDING] = {"data-parallel-sharding-strategy", T_WORD, c_sharding},
    [O_OPTIMIZER] = {"optimizer", T_WORD, c_optimizer},
};

/* What the command line said about one modelled flag (last one wins, as in argparse). */
struct opt_val {
    bool given;
    uint64_t u; /* integer, or index into the choices */
    double r;   /* T_REAL */
};

/* ------------------------------------------------------------------------ */
/* Megatron-LM: flags that are not modelled                                  */

/* Flags that do not change per-GPU memory: skipped without a word. Kept in
 * strcmp order for bsearch (test-import feeds flags from the whole list and
 * expects no warning). */
static const char *const silent_flags[] = {
    "adam-beta1", "adam-beta2", "adam-eps", "align-grad-reduce", "align-param-gather",
    "apply-query-key-layer-scaling", "apply-rope-fusion", "async-save",
    "attention-softmax-in-fp32", "auto-detect-ckpt-format",
    "bias-dropout-fusion", "calculate-per-token-loss", "check-for-nan-in-loss-and-grad",
    "check-weight-hash-across-dp-replicas-interval", "ckpt-assume-constant-structure",
    "ckpt-format", "ckpt-fully-parallel-load", "ckpt-fully-parallel-save", "clip-grad",
    "cp-comm-type", "data-cache-path", "data-path", "dataloader-type",
    "ddp-average-in-collective", "deterministic-mode", "dist-ckpt-format",
    "distributed-backend", "distributed-timeout-minutes", "empty-unused-memory-level",
    "end-weight-decay", "eod-mask-loss", "eval-interval", "eval-iters", "exit-duration-in-mins",
    "exit-interval", "exit-on-missing-checkpoint", "exit-signal-handler", "finetune",
    "fp8-amax-compute-algo", "fp8-amax-history-len", "fp8-interval", "fp8-margin",
    "fp8-recipe", "hysteresis", "init-method-std", "init-method-xavier-uniform",
    "initial-loss-scale", "load", "local-rank", "local_rank", "log-interval",
    "log-loss-scale-to-tensorboard", "log-memory-to-tensorboard", "log-num-zeros-in-grad",
    "log-params-norm", "log-progress", "log-throughput", "log-timers-to-tensorboard",
    "log-validation-ppl-to-tensorboard", "log-world-size-to-tensorboard", "logging-level",
    "loss-scale", "loss-scale-window", "lr", "lr-decay-iters", "lr-decay-samples",
    "lr-decay-style", "lr-warmup-fraction", "lr-warmup-init", "lr-warmup-iters",
    "lr-warmup-samples", "manual-gc", "manual-gc-interval", "merge-file", "min-loss-scale",
    "min-lr", "mock-data", "moe-aux-loss-coeff", "moe-router-load-balancing-type",
    "moe-token-dispatcher-type", "moe-z-loss-coeff", "nccl-communicator-config-path",
    "no-async-tensor-model-parallel-allreduce", "no-bias-dropout-fusion",
    "no-bias-gelu-fusion", "no-bias-swiglu-fusion", "no-check-for-nan-in-loss-and-grad",
    "no-create-attention-mask-in-dataloader", "no-gradient-accumulation-fusion",
    "no-load-optim", "no-load-rng", "no-masked-softmax-fusion", "no-persist-layer-norm",
    "no-position-embedding", "no-rope-fusion", "no-save-optim", "no-save-rng",
    "non-persistent-ckpt-type", "non-persistent-save-interval", "norm-epsilon",
    "num-dataset-builder-threads", "num-workers", "overlap-p2p-comm",
    "overlap-param-gather-with-optimizer-step", "pretrained-checkpoint", "profile",
    "profile-ranks", "profile-step-end", "profile-step-start", "rampup-batch-size",
    "reset-attention-mask", "reset-position-ids", "rotary-base", "rotary-interleaved",
    "rotary-percent", "rotary-seq-len-interpolation-factor", "save", "save-interval",
    "seed", "sgd-momentum", "split", "start-weight-decay", "tensorboard-dir",
    "tensorboard-log-interval", "tensorboard-queue-size", "test-data-path",
    "timing-log-level", "timing-log-option", "tokenizer-model", "tokenizer-type",
    "train-data-path", "train-iters", "train-samples", "use-checkpoint-opt_param-scheduler",
    "use-cpu-initialization", "use-dist-ckpt", "use-legacy-models", "use-mcore-models",
    "use-pytorch-profiler", "use-rope-scaling", "use-tp-pp-dp-mapping", "valid-data-path",
    "vocab-extra-ids", "vocab-file", "wandb-entity", "wandb-exp-name", "wandb-project",
    "wandb-save-dir", "weight-decay", "weight-decay-incr-style",
};

/* Flags known to change memory in ways the model does not cover: each
 * becomes a warning saying how. Sorted for bsearch. */
struct warn_flag {
    const char *flag;
    const char *why;
};

static const struct warn_flag warn_flags[] = {
    {"account-for-embedding-in-pipeline-split", "moves layers between pipeline stages in a way the estimate does not follow"},
    {"account-for-loss-in-pipeline-split", "moves layers between pipeline stages in a way the estimate does not follow"},
    {"batch-size", "is no longer accepted by Megatron-LM (use --micro-batch-size)"},
    {"checkpoint-activations", "is no longer accepted by Megatron-LM (use --recompute-granularity)"},
    {"cpu-offloading", "offloads activations to the host; the estimate keeps them on the GPU"},
    {"cpu-offloading-num-layers", "offloads activations to the host; the estimate keeps them on the GPU"},
    {"distribute-saved-activations", "splits saved activations over tensor-parallel ranks; not modelled"},
    {"exp-avg-dtype", "changes the optimizer state precision; not modelled (see optimizer_state_bytes)"},
    {"exp-avg-sq-dtype", "changes the optimizer state precision; not modelled (see optimizer_state_bytes)"},
    {"expert-tensor-parallel-size", "shards experts over tensor-parallel ranks differently; not modelled"},
    {"fp16-lm-cross-entropy", "keeps the logits in fp16, less than the estimate assumes"},
    {"fp32-residual-connection", "keeps the residual stream in fp32; not modelled"},
    {"fp8-param-gather", "gathers parameters in fp8; not modelled"},
    {"main-grads-dtype", "changes the gradient precision; not modelled (see main_grad_bytes)"},
    {"main-params-dtype", "changes the master weight precision; not modelled (see master_weight_bytes)"},
    {"model-parallel-size", "is no longer accepted by Megatron-LM (use --tensor-model-parallel-size)"},
    {"moe-expert-capacity-factor", "drops or pads tokens per expert; not modelled"},
    {"moe-grouped-gemm", "allocates grouped-GEMM workspaces that are not modelled"},
    {"moe-layer-freq", "mixes dense and expert layers; the estimate makes every layer an expert layer"},
    {"moe-layer-recompute", "recomputes expert layers; not modelled"},
    {"moe-pad-expert-input-to-capacity", "pads expert inputs; not modelled"},
    {"mtp-num-layers", "adds multi-token-prediction layers that are not modelled"},
    {"num-distributed-optimizer-instances", "replicates the distributed optimizer; not modelled"},
    {"optimizer-cpu-offload", "keeps optimizer state on the host; the estimate keeps it on the GPU"},
    {"optimizer-offload-fraction", "keeps optimizer state on the host; the estimate keeps it on the GPU"},
    {"pipeline-model-parallel-layout", "places layers on stages explicitly; the estimate splits them evenly"},
    {"qk-layernorm", "adds query/key norms that are not modelled"},
    {"recompute-modules", "chooses modules to recompute; not modelled"},
    {"spec", "replaces the layer specification; the estimate assumes the GPT layer"},
    {"tp-comm-overlap", "allocates user buffers for communication overlap that are not modelled"},
    {"use-checkpoint-args", "takes the model from a checkpoint the estimate cannot see"},
    {"use-precision-aware-optimizer", "changes optimizer precisions; not modelled"},
    {"yaml-cfg", "reads the configuration from a YAML file the estimate cannot see"},
};

static int cmp_str(const void *key, const void *elem)
{
    return strcmp((const char *)key, *(const char *const *)elem);
}

static int cmp_warn(const void *key, const void *elem)
{
    return strcmp((const char *)key, ((const struct warn_flag *)elem)->flag);
}

/* ------------------------------------------------------------------------ */
/* Megatron-LM: reading the vector                                           */

/* A flag's name without "--" and "=value", copied so it can be looked up. */
struct flag_tok {
    char name[96];
    const char *value; /* after '=', or NULL */
};

static void split_flag(const char *arg, struct flag_tok *tok)
{
    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    if (len >= sizeof tok->name)
        len = sizeof tok->name - 1; /* long unknown flags are only ever warned about */
    memcpy(tok->name, name, len);
    tok->name[len] = '\0';
    tok->value = eq ? eq + 1 : NULL;
}

static bool is_flag(const char *arg)
{
    return arg[0] == '-' && arg[1] == '-' && arg[2] != '\0';
}

static int find_opt(const char *name)
{
    for (int i = 0; i < O_COUNT; i++)
        if (strcmp(name, opts[i].flag) == 0)
            return i;
    return -1;
}

/* Integer value of a flag: digits only; a sign or junk names the flag. */
static mem4d_status parse_int(mem4d_import *imp, const char *flag, const char *text, uint64_t *out)
{
    if (text[0] == '-' && isdigit((unsigned char)text[1]))
        return imp_fail(imp, MEM4D_E_RANGE, "--%s %s: the value must not be negative", flag, text);
    if (!isdigit((unsigned char)text[0]))
        return imp_fail(imp, MEM4D_E_PARSE, "--%s: '%s' is not a whole number", flag, text);
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (*end != '\0')
        return imp_fail(imp, MEM4D_E_PARSE, "--%s: '%s' is not a whole number", flag, text);
    if (errno == ERANGE)
        return imp_fail(imp, MEM4D_E_RANGE, "--%s %s does not fit in 64 bits", flag, text);
    *out = (uint64_t)v;
    return MEM4D_OK;
}

static mem4d_status parse_real(mem4d_import *imp, const char *flag, const char *text, double *out)
{
    char *end = NULL;
    errno = 0;
    double r = strtod(text, &end);
    if (end == text || *end != '\0' || errno == ERANGE || !isfinite(r))
        return imp_fail(imp, MEM4D_E_PARSE, "--%s: '%s' is not a number", flag, text);
    if (r < 0.0 || r > 1.0)
        return imp_fail(imp, MEM4D_E_RANGE, "--%s %s is not a probability in [0, 1]", flag, text);
    *out = r;
    return MEM4D_OK;
}

static mem4d_status parse_word(mem4d_import *imp, const struct opt_desc *d, const char *text,
                               uint64_t *out)
{
    for (uint64_t i = 0; d->choices[i]; i++) {
        if (m4d_streq_ci(text, d->choices[i])) {
            *out = i;
            return MEM4D_OK;
        }
    }
    char list[160] = "";
    size_t used = 0;
    for (size_t i = 0; d->choices[i] && used < sizeof list; i++) {
        int n = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", d->choices[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return imp_fail(imp, MEM4D_E_PARSE, "--%s: '%s' is not one of %s", d->flag, text, list);
}

/* Read one modelled flag at argv[*i]; advances *i past its value. */
static mem4d_status read_opt(mem4d_import *imp, int o, const struct flag_tok *tok, int argc,
                             const char *const *argv, int *i, struct opt_val *vals)
{
    const struct opt_desc *d = &opts[o];
    struct opt_val *v = &vals[o];
    if (d->type == T_FLAG) {
        if (tok->value)
            return imp_fail(imp, MEM4D_E_PARSE, "--%s takes no value (got '%s')", d->flag, tok->value);
        v->given = true;
        v->u = 1;
        return MEM4D_OK;
    }
    const char *text = tok->value;
    if (!text) {
        if (*i + 1 >= argc || !argv[*i + 1] || is_flag(argv[*i + 1]))
            return imp_fail(imp, MEM4D_E_MISSING, "--%s needs a value", d->flag);
        text = argv[++*i];
    }
    if (text[0] == '\0')
        return imp_fail(imp, MEM4D_E_MISSING, "--%s has an empty value", d->flag);
    mem4d_status st = MEM4D_OK;
    switch (d->type) {
    case T_INT: st = parse_int(imp, d->flag, text, &v->u); break;
    case T_REAL: st = parse_real(imp, d->flag, text, &v->r); break;
    case T_WORD: st = parse_word(imp, d, text, &v->u); break;
    case T_FLAG: break;
    }
    if (st == MEM4D_OK)
        v->given = true;
    return st;
}

/* Skip a flag that is not modelled and the values after it (Megatron has
 * no positional arguments, so every following non-flag word is its value). */
static void skip_values(const struct flag_tok *tok, int argc, const char *const *argv, int *i)
{
    if (tok->value)
        return;
    while (*i + 1 < argc && argv[*i + 1] && !is_flag(argv[*i + 1]))
        ++*i;
}

static mem4d_status scan_args(mem4d_import *imp, int argc, const char *const *argv,
                              struct opt_val *vals)
{
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!arg)
            return imp_fail(imp, MEM4D_E_INVALID_ARG, "argument %d is NULL", i);
        if (!is_flag(arg)) {
            imp_warn(imp, "'%s' is not a flag; Megatron-LM would reject it", arg);
            continue;
        }
        struct flag_tok tok;
        split_flag(arg, &tok);
        int o = find_opt(tok.name);
        if (o >= 0) {
            TRY(read_opt(imp, o, &tok, argc, argv, &i, vals));
            continue;
        }
        const struct warn_flag *w = bsearch(tok.name, warn_flags, sizeof warn_flags / sizeof *warn_flags,
                                            sizeof *warn_flags, cmp_warn);
        if (w)
            imp_warn(imp, "--%s %s", w->flag, w->why);
        else if (!bsearch(tok.name, silent_flags, sizeof silent_flags / sizeof *silent_flags,
                          sizeof *silent_flags, cmp_str))
            imp_warn(imp, "--%s is not a flag this version knows; it was ignored", tok.name);
        skip_values(&tok, argc, argv, &i);
    }
    return MEM4D_OK;
}

/* ------------------------------------------------------------------------ */
/* Megatron-LM: meaning                                                      */

#define GIVEN(o) (vals[o].given)
#define U(o) (vals[o].u)

/* Contradictions that make Megatron-LM refuse to start. */
static mem4d_status check_conflicts(mem4d_import *imp, const struct opt_val *vals)
{
    if (GIVEN(O_BF16) && GIVEN(O_FP16))
        return imp_fail(imp, MEM4D_E_CONFLICT, "--bf16 and --fp16 contradict each other");
    if (GIVEN(O_GRAD_BF16) && GIVEN(O_ACC_FP32))
        return imp_fail(imp, MEM4D_E_CONFLICT,
                        "--grad-reduce-in-bf16 and --accumulate-allreduce-grads-in-fp32 contradict each other");
    if (GIVEN(O_SEQ) && GIVEN(O_ENC_SEQ))
        return imp_fail(imp, MEM4D_E_CONFLICT, "--seq-length and --encoder-seq-length are both given");
    if (GIVEN(O_VPP_LAYERS) && GIVEN(O_VPP_STAGES))
        return imp_fail(imp, MEM4D_E_CONFLICT,
                        "--num-layers-per-virtual-pipeline-stage and --num-virtual-stages-per-pipeline-rank are both given");
    if (GIVEN(O_RC_ACT) && GIVEN(O_RC_GRAN) && U(O_RC_GRAN) == GRAN_FULL)
        return imp_fail(imp, MEM4D_E_CONFLICT,
                        "--recompute-activations (selective) contradicts --recompute-granularity full");
    if (GIVEN(O_RC_GRAN) && U(O_RC_GRAN) == GRAN_SELECTIVE && GIVEN(O_RC_LAYERS))
        return imp_fail(imp, MEM4D_E_CONFLICT,
                        "--recompute-num-layers contradicts --recompute-granularity selective");
    if (GIVEN(O_FSDP2) && GIVEN(O_DIST_OPT))
        return imp_fail(imp, MEM4D_E_CONFLICT, "--use-torch-fsdp2 and --use-distributed-optimizer contradict each other");
    if (GIVEN(O_OVERLAP_PARAM) && !GIVEN(O_DIST_OPT))
        return imp_fail(imp, MEM4D_E_CONFLICT, "--overlap-param-gather needs --use-distributed-optimizer");
    uint64_t seq = GIVEN(O_SEQ) ? U(O_SEQ) : U(O_ENC_SEQ);
    if (GIVEN(O_MAX_POS) && (GIVEN(O_SEQ) || GIVEN(O_ENC_SEQ)) && seq > U(O_MAX_POS))
        return imp_fail(imp, MEM4D_E_CONFLICT, "--seq-length %llu exceeds --max-position-embeddings %llu",
                        (unsigned long long)seq, (unsigned long long)U(O_MAX_POS));
    if (GIVEN(O_RC_GRAN) && U(O_RC_GRAN) == GRAN_FULL) {
        if (!GIVEN(O_RC_METHOD))
            return imp_fail(imp, MEM4D_E_MISSING, "--recompute-granularity full needs --recompute-method");
        if (!GIVEN(O_RC_LAYERS))
            return imp_fail(imp, MEM4D_E_MISSING, "--recompute-granularity full needs --recompute-num-layers");
    }
    return MEM4D_OK;
}

/* Flags with a direct counterpart: the model key, the flag. */
static const struct { int o; mem4d_model_param key; } model_direct[] = {
    {O_NUM_LAYERS, MEM4D_MODEL_NUM_LAYERS}, {O_HIDDEN, MEM4D_MODEL_HIDDEN_SIZE},
    {O_HEADS, MEM4D_MODEL_NUM_HEADS},       {O_FFN, MEM4D_MODEL_FFN_HIDDEN_SIZE},
    {O_KV_CHANNELS, MEM4D_MODEL_HEAD_DIM},  {O_VOCAB, MEM4D_MODEL_VOCAB_SIZE},
    {O_MAX_POS, MEM4D_MODEL_MAX_POSITION},  {O_EXPERTS, MEM4D_MODEL_NUM_EXPERTS},
    {O_TOPK, MEM4D_MODEL_EXPERT_TOPK},      {O_MOE_FFN, MEM4D_MODEL_EXPERT_FFN_SIZE},
    {O_SHARED_FFN, MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE},
};

static mem4d_status set_opt_m(mem4d_import *imp, mem4d_model *m, mem4d_model_param key, int o,
                              uint64_t value)
{
    char what[96];
    m4d_msg(what, sizeof what, "--%s", opts[o].flag);
    return SET_M(m, key, value, what);
}

static mem4d_status set_opt_l(mem4d_import *imp, mem4d_layout *l, mem4d_layout_param key, int o,
                              uint64_t value)
{
    char what[96];
    m4d_msg(what, sizeof what, "--%s", opts[o].flag);
    return SET_L(l, key, value, what);
}

/* The architecture. When the vector describes a model (it names layers,
 * hidden size or heads, as Megatron-LM requires), Megatron's defaults apply
 * to every switch it leaves out: LayerNorm, a plain 4h MLP, tied
 * embeddings, biases on. Otherwise only the flags given change the model. */
static mem4d_status apply_model(mem4d_import *imp, const struct opt_val *vals, mem4d_model *m)
{
    bool describes = GIVEN(O_NUM_LAYERS) || GIVEN(O_HIDDEN) || GIVEN(O_HEADS);
    for (size_t i = 0; i < sizeof model_direct / sizeof *model_direct; i++)
        if (GIVEN(model_direct[i].o))
            TRY(set_opt_m(imp, m, model_direct[i].key, model_direct[i].o, U(model_direct[i].o)));

    if (describes || GIVEN(O_SWIGLU))
        TRY(SET_M(m, MEM4D_MODEL_GATED_MLP, GIVEN(O_SWIGLU), "--swiglu"));
    if (GIVEN(O_NORM))
        TRY(SET_M(m, MEM4D_MODEL_NORM, U(O_NORM) == NORM_LAYER ? 1 : 0, "--normalization"));
    else if (describes)
        TRY(SET_M(m, MEM4D_MODEL_NORM, 1, "--normalization"));
    if (!GIVEN(O_FFN) && GIVEN(O_HIDDEN)) {
        /* Megatron: 4h, or with SwiGLU int(4h * 2/3 / 64) * 64 = (h / 24) * 64. */
        uint64_t h = U(O_HIDDEN);
        TRY(SET_M(m, MEM4D_MODEL_FFN_HIDDEN_SIZE, GIVEN(O_SWIGLU) ? h / 24 * 64 : 4 * h,
                  "--ffn-hidden-size (Megatron's default)"));
    }
    if (GIVEN(O_GQA))
        TRY(SET_M(m, MEM4D_MODEL_NUM_KV_HEADS, GIVEN(O_GROUPS) ? U(O_GROUPS) : 1, "--num-query-groups"));
    else if (describes)
        TRY(SET_M(m, MEM4D_MODEL_NUM_KV_HEADS, 0, "--num-query-groups"));
    if (GIVEN(O_GROUPS) && !GIVEN(O_GQA))
        imp_warn(imp, "--num-query-groups %llu is ignored by Megatron-LM without --group-query-attention; "
                 "every head keeps its own keys and values", (unsigned long long)U(O_GROUPS));
    if (!GIVEN(O_KV_CHANNELS) && describes)
        TRY(SET_M(m, MEM4D_MODEL_HEAD_DIM, 0, "--kv-channels"));
    if (describes || GIVEN(O_UNTIE))
        TRY(SET_M(m, MEM4D_MODEL_TIED_EMBEDDINGS, !GIVEN(O_UNTIE), "--untie-embeddings-and-output-weights"));
    if (describes || GIVEN(O_QKV_BIAS) || GIVEN(O_NO_BIAS))
        TRY(SET_M(m, MEM4D_MODEL_QKV_BIAS, GIVEN(O_QKV_BIAS) || !GIVEN(O_NO_BIAS), "--add-qkv-bias"));
    if (GIVEN(O_EXPERTS) && !GIVEN(O_TOPK))
        TRY(SET_M(m, MEM4D_MODEL_EXPERT_TOPK, 2, "--moe-router-topk (Megatron's default)"));
    if (describes)
        m4d_strlcpy(m->name, "custom", sizeof m->name);
    return MEM4D_OK;
}

/* Warnings about model defaults whose memory is not modelled. */
static void warn_model(mem4d_import *imp, const struct opt_val *vals, const mem4d_model *m)
{
    bool describes = GIVEN(O_NUM_LAYERS) || GIVEN(O_HIDDEN) || GIVEN(O_HEADS);
    if (!describes)
        return;
    if (!GIVEN(O_NO_BIAS))
        imp_warn(imp, "without --disable-bias-linear every linear layer has a bias; only the QKV bias is modelled");
    bool rope = GIVEN(O_ROPE) || (GIVEN(O_POS_TYPE) && U(O_POS_TYPE) != POS_LEARNED);
    if (!rope)
        imp_warn(imp, "learned absolute position embeddings (Megatron's default without "
                 "--position-embedding-type rope) are not modelled");
    if (m->v[MEM4D_MODEL_VOCAB_SIZE] == 0)
        imp_warn(imp, "no --vocab-size: Megatron-LM takes it from the tokenizer; give it for an estimate");
}

/* Layout settings where Megatron-LM's default applies when the flag is absent. */
static mem4d_status apply_layout_basic(mem4d_import *imp, const struct opt_val *vals, mem4d_layout *l)
{
    TRY(set_opt_l(imp, l, MEM4D_LAYOUT_TP, O_TP, GIVEN(O_TP) ? U(O_TP) : 1));
    TRY(set_opt_l(imp, l, MEM4D_LAYOUT_PP, O_PP, GIVEN(O_PP) ? U(O_PP) : 1));
    TRY(set_opt_l(imp, l, MEM4D_LAYOUT_CP, O_CP, GIVEN(O_CP) ? U(O_CP) : 1));
    TRY(set_opt_l(imp, l, MEM4D_LAYOUT_EP, O_EP, GIVEN(O_EP) ? U(O_EP) : 1));
    if (GIVEN(O_MBS))
        TRY(set_opt_l(imp, l, MEM4D_LAYOUT_MICRO_BATCH, O_MBS, U(O_MBS)));
    if (GIVEN(O_SEQ))
        TRY(set_opt_l(imp, l, MEM4D_LAYOUT_SEQ_LENGTH, O_SEQ, U(O_SEQ)));
    if (GIVEN(O_ENC_SEQ))
        TRY(set_opt_l(imp, l, MEM4D_LAYOUT_SEQ_LENGTH, O_ENC_SEQ, U(O_ENC_SEQ)));
    /* Megatron turns sequence parallelism off at tp = 1. */
    TRY(SET_L(l, MEM4D_LAYOUT_SEQUENCE_PARALLEL, GIVEN(O_SP) && l->v[MEM4D_LAYOUT_TP] > 1, "--sequence-parallel"));
    TRY(SET_L(l, MEM4D_LAYOUT_DIST_OPT, GIVEN(O_DIST_OPT), "--use-distributed-optimizer"));
    TRY(set_opt_l(imp, l, MEM4D_LAYOUT_VOCAB_DIVISOR, O_VOCAB_DIV, GIVEN(O_VOCAB_DIV) ? U(O_VOCAB_DIV) : 128));
    TRY(SET_L(l, MEM4D_LAYOUT_FP8, GIVEN(O_FP8), "--fp8-format"));
    TRY(set_opt_l(imp, l, MEM4D_LAYOUT_FIRST_STAGE_LAYERS, O_FIRST_LAYERS, GIVEN(O_FIRST_LAYERS) ? U(O_FIRST_LAYERS) : 0));
    TRY(set_opt_l(imp, l, MEM4D_LAYOUT_LAST_STAGE_LAYERS, O_LAST_LAYERS, GIVEN(O_LAST_LAYERS) ? U(O_LAST_LAYERS) : 0));
    TRY(SET_L(l, MEM4D_LAYOUT_OVERLAP_GRAD_REDUCE, GIVEN(O_OVERLAP_GRAD), "--overlap-grad-reduce"));
    TRY(SET_L(l, MEM4D_LAYOUT_OVERLAP_PARAM_GATHER, GIVEN(O_OVERLAP_PARAM), "--overlap-param-gather"));
    TRY(set_opt_l(imp, l, MEM4D_LAYOUT_BUCKET_SIZE, O_BUCKET, GIVEN(O_BUCKET) ? U(O_BUCKET) : 0));
    /* Only whether dropout is on matters (its masks); Megatron-LM defaults both to 0.1. */
    TRY(SET_L(l, MEM4D_LAYOUT_HIDDEN_DROPOUT, !GIVEN(O_HIDDEN_DROPOUT) || vals[O_HIDDEN_DROPOUT].r > 0.0,
              "--hidden-dropout"));
    TRY(SET_L(l, MEM4D_LAYOUT_ATTENTION_DROPOUT, !GIVEN(O_ATTN_DROPOUT) || vals[O_ATTN_DROPOUT].r > 0.0,
              "--attention-dropout"));
    TRY(SET_L(l, MEM4D_LAYOUT_CROSS_ENTROPY_FUSION, GIVEN(O_CE_FUSION), "--cross-entropy-loss-fusion"));
    return MEM4D_OK;
}

/* Precision: bf16 forces fp32 gradient accumulation unless
 * --grad-reduce-in-bf16; fp16 accumulates in fp16 unless asked; fp32
 * training keeps no separate master copy. */
static mem4d_status apply_precision(mem4d_import *imp, const struct opt_val *vals, mem4d_layout *l)
{
    bool half = GIVEN(O_BF16) || GIVEN(O_FP16);
    uint64_t grad = 4;
    if (GIVEN(O_BF16) && GIVEN(O_GRAD_BF16))
        grad = 2;
    else if (GIVEN(O_FP16) && !GIVEN(O_ACC_FP32))
        grad = 2;
    TRY(SET_L(l, MEM4D_LAYOUT_PARAM_BYTES, half ? 2 : 4, "--bf16/--fp16"));
    TRY(SET_L(l, MEM4D_LAYOUT_MASTER_WEIGHT_BYTES, half ? 4 : 0, "--bf16/--fp16"));
    TRY(SET_L(l, MEM4D_LAYOUT_MAIN_GRAD_BYTES, grad, "--accumulate-allreduce-grads-in-fp32"));
    TRY(SET_L(l, MEM4D_LAYOUT_OPT_STATE_BYTES, 4, "--optimizer"));
    if (GIVEN(O_OPTIMIZER) && U(O_OPTIMIZER) != OPT_ADAM)
        imp_warn(imp, "--optimizer %s: the optimizer state is modelled for Adam (two moments)",
                 c_optimizer[U(O_OPTIMIZER)]);
    return MEM4D_OK;
}

/* Sharding of parameters, gradients and optimizer state beyond ZeRO-1. */
static mem4d_status apply_sharding(mem4d_import *imp, const struct opt_val *vals, mem4d_layout *l)
{
    uint64_t zero = 0;
    if (GIVEN(O_FSDP2))
        zero = 3;
    else if (GIVEN(O_MEGATRON_FSDP) || GIVEN(O_CUSTOM_FSDP))
        zero = GIVEN(O_DP_SHARDING) ? U(O_DP_SHARDING) : 3; /* choices are in stage order */
    else if (GIVEN(O_DP_SHARDING))
        imp_warn(imp, "--data-parallel-sharding-strategy is ignored without --use-megatron-fsdp");
    return SET_L(l, MEM4D_LAYOUT_ZERO_STAGE, zero, "--data-parallel-sharding-strategy");
}

static mem4d_status apply_recompute(mem4d_import *imp, const struct opt_val *vals, mem4d_layout *l)
{
    uint64_t rc = 0;
    if (GIVEN(O_RC_ACT))
        rc = 1;
    else if (GIVEN(O_RC_GRAN))
        rc = U(O_RC_GRAN) == GRAN_FULL ? 2 : 1;
    TRY(SET_L(l, MEM4D_LAYOUT_RECOMPUTE, rc, "--recompute-granularity"));
    bool full = rc == 2;
    if (!full && (GIVEN(O_RC_METHOD) || GIVEN(O_RC_LAYERS)))
        imp_warn(imp, "--recompute-method and --recompute-num-layers are ignored without "
                 "--recompute-granularity full");
    TRY(SET_L(l, MEM4D_LAYOUT_RECOMPUTE_METHOD, full ? U(O_RC_METHOD) : 0, "--recompute-method"));
    return set_opt_l(imp, l, MEM4D_LAYOUT_RECOMPUTE_LAYERS, O_RC_LAYERS, full ? U(O_RC_LAYERS) : 0);
}

/* Flash attention: Transformer Engine (Megatron's default implementation)
 * picks a fused kernel unless told otherwise; the local implementation
 * needs --use-flash-attn. */
static mem4d_status apply_attention(mem4d_import *imp, const struct opt_val *vals, mem4d_layout *l)
{
    bool flash = true;
    if (GIVEN(O_ATTN_BACKEND))
        flash = U(O_ATTN_BACKEND) != BACKEND_UNFUSED && U(O_ATTN_BACKEND) != BACKEND_LOCAL;
    else if (GIVEN(O_TE_IMPL) && U(O_TE_IMPL) == IMPL_LOCAL)
        flash = GIVEN(O_FLASH);
    if (GIVEN(O_FLASH))
        flash = true;
    return SET_L(l, MEM4D_LAYOUT_FLASH_ATTN, flash, "--use-flash-attn");
}

/* Virtual pipeline: chunks per rank = layers per stage / layers per chunk. */
static mem4d_status apply_vpp(mem4d_import *imp, const struct opt_val *vals, const mem4d_model *m,
                              mem4d_layout *l)
{
    uint64_t p = l->v[MEM4D_LAYOUT_PP], vpp = 1;
    if (GIVEN(O_VPP_STAGES))
        vpp = U(O_VPP_STAGES);
    if (GIVEN(O_VPP_LAYERS)) {
        uint64_t L = m->v[MEM4D_MODEL_NUM_LAYERS], per = U(O_VPP_LAYERS);
        if (L == 0)
            return imp_fail(imp, MEM4D_E_MISSING, "--num-layers-per-virtual-pipeline-stage needs --num-layers");
        if (per == 0)
            return imp_fail(imp, MEM4D_E_RANGE, "--num-layers-per-virtual-pipeline-stage must be at least 1");
        if (L % p != 0 || (L / p) % per != 0)
            return imp_fail(imp, MEM4D_E_CONFLICT,
                            "--num-layers-per-virtual-pipeline-stage %llu does not divide the %llu layers "
                            "of each of %llu pipeline stages (%llu layers)",
                            (unsigned long long)per, (unsigned long long)(L / p), (unsigned long long)p,
                            (unsigned long long)L);
        vpp = L / p / per;
    }
    if ((GIVEN(O_VPP_LAYERS) || GIVEN(O_VPP_STAGES)) && p == 1)
        return imp_fail(imp, MEM4D_E_CONFLICT, "an interleaved (virtual) pipeline needs "
                        "--pipeline-model-parallel-size above 1");
    return set_opt_l(imp, l, MEM4D_LAYOUT_VPP, GIVEN(O_VPP_LAYERS) ? O_VPP_LAYERS : O_VPP_STAGES, vpp);
}

/* ------------------------------------------------------------------------ */
/* World size                                                                */

static const char *env_get(const char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (; envp && *envp; envp++)
        if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
            return *envp + n + 1;
    return NULL;
}

/* A variable's leading count: SLURM writes "8(x2)" or "8,4" for per-node
 * counts; the first figure is the one of the first node. */
static mem4d_status env_count(mem4d_import *imp, const char *name, const char *text, bool lead_only,
                              uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    if (!isdigit((unsigned char)text[0]))
        return imp_fail(imp, MEM4D_E_PARSE, "%s='%s' is not a count of processes", name, text);
    unsigned long long v = strtoull(text, &end, 10);
    if (errno == ERANGE || v == 0)
        return imp_fail(imp, MEM4D_E_RANGE, "%s='%s' is not a usable count", name, text);
    if (*end != '\0' && !(lead_only && (*end == '(' || *end == ',')))
        return imp_fail(imp, MEM4D_E_PARSE, "%s='%s' is not a count of processes", name, text);
    *out = (uint64_t)v;
    return MEM4D_OK;
}

static mem4d_status find_world(mem4d_import *imp, const char *const *envp, uint64_t explicit_world,
                               uint64_t *world)
{
    const char *s;
    *world = 0;
    if (explicit_world) {
        *world = explicit_world;
        imp->world_source = MEM4D_WORLD_EXPLICIT;
    } else if ((s = env_get(envp, "WORLD_SIZE"))) {
        TRY(env_count(imp, "WORLD_SIZE", s, false, world));
        imp->world_source = MEM4D_WORLD_ENV_WORLD_SIZE;
    } else if ((s = env_get(envp, "SLURM_NTASKS"))) {
        TRY(env_count(imp, "SLURM_NTASKS", s, false, world));
        imp->world_source = MEM4D_WORLD_ENV_SLURM_NTASKS;
    } else if ((s = env_get(envp, "SLURM_JOB_NUM_NODES"))) {
        uint64_t nodes, per;
        const char *g = env_get(envp, "SLURM_GPUS_ON_NODE");
        const char *gname = "SLURM_GPUS_ON_NODE";
        if (!g) {
            g = env_get(envp, "SLURM_NTASKS_PER_NODE");
            gname = "SLURM_NTASKS_PER_NODE";
        }
        if (!g)
            return MEM4D_OK; /* nodes alone say nothing about GPUs */
        TRY(env_count(imp, "SLURM_JOB_NUM_NODES", s, false, &nodes));
        TRY(env_count(imp, gname, g, true, &per));
        if (!m4d_mul(nodes, per, world))
            return imp_fail(imp, MEM4D_E_RANGE, "SLURM_JOB_NUM_NODES x %s overflows", gname);
        imp->world_source = MEM4D_WORLD_ENV_SLURM_NODES;
    }
    return MEM4D_OK;
}

/* World size and, as Megatron-LM does without --global-batch-size, a
 * global batch of one micro-batch per data-parallel rank. */
static mem4d_status apply_world(mem4d_import *imp, const struct opt_val *vals, uint64_t world,
                                mem4d_layout *l)
{
    if (world) {
        TRY(SET_L(l, MEM4D_LAYOUT_WORLD, world, "world size"));
        TRY(SET_L(l, MEM4D_LAYOUT_DP, 0, "world size"));
    }
    if (GIVEN(O_GBS))
        return set_opt_l(imp, l, MEM4D_LAYOUT_GLOBAL_BATCH, O_GBS, U(O_GBS));
    uint64_t mp, gbs;
    if (!world || !m4d_mul3(l->v[MEM4D_LAYOUT_TP], l->v[MEM4D_LAYOUT_CP], l->v[MEM4D_LAYOUT_PP], &mp) ||
        world % mp != 0 || !m4d_mul(l->v[MEM4D_LAYOUT_MICRO_BATCH], world / mp, &gbs))
        return SET_L(l, MEM4D_LAYOUT_GLOBAL_BATCH, 0, "--global-batch-size");
    return SET_L(l, MEM4D_LAYOUT_GLOBAL_BATCH, gbs, "--global-batch-size (Megatron's default)");
}

mem4d_status mem4d_import_megatron(mem4d_import *import, int argc, const char *const *argv,
                                   const char *const *envp, uint64_t world_size,
                                   mem4d_model *model, mem4d_layout *layout)
{
    if (!import)
        return MEM4D_E_INVALID_ARG;
    mem4d_import *imp = import;
    imp_reset(imp);
    if (argc < 0 || (argc > 0 && !argv) || !model || !layout)
        return imp_fail(imp, MEM4D_E_INVALID_ARG, "NULL argument vector, model or layout");

    struct opt_val vals[O_COUNT];
    memset(vals, 0, sizeof vals);
    mem4d_model m = *model;
    mem4d_layout l = *layout;
    uint64_t world = 0;
    mem4d_status st = scan_args(imp, argc, argv, vals);
    if (st == MEM4D_OK)
        st = check_conflicts(imp, vals);
    if (st == MEM4D_OK)
        st = apply_model(imp, vals, &m);
    if (st == MEM4D_OK)
        st = apply_layout_basic(imp, vals, &l);
    if (st == MEM4D_OK)
        st = apply_precision(imp, vals, &l);
    if (st == MEM4D_OK)
        st = apply_sharding(imp, vals, &l);
    if (st == MEM4D_OK)
        st = apply_recompute(imp, vals, &l);
    if (st == MEM4D_OK)
        st = apply_attention(imp, vals, &l);
    if (st == MEM4D_OK)
        st = apply_vpp(imp, vals, &m, &l);
    if (st == MEM4D_OK)
        st = find_world(imp, envp, world_size, &world);
    if (st == MEM4D_OK)
        st = apply_world(imp, vals, world, &l);
    if (st != MEM4D_OK) {
        imp->world_source = MEM4D_WORLD_NONE;
        imp_done(imp);
        return st;
    }
    warn_model(imp, vals, &m);
    imp_done(imp);
    *model = m;
    *layout = l;
    return MEM4D_OK;
}

#undef GIVEN
#undef U

/* ------------------------------------------------------------------------ */
/* Hugging Face config.json                                                  */

#if MEM4D_HAVE_JSON

/* An integer member: absent (or null) leaves *given false; wrong types,
 * fractions and negative numbers are errors naming the key. */
static mem4d_status hf_uint(mem4d_import *imp, struct json_object *root, const char *key,
                            bool required, uint64_t *out, bool *given)
{
    struct json_object *v = NULL;
    *given = false;
    if (!json_object_object_get_ex(root, key, &v) || json_object_get_type(v) == json_type_null) {
        if (required)
            return imp_fail(imp, MEM4D_E_MISSING, "config.json has no \"%s\"", key);
        return MEM4D_OK;
    }
    switch (json_object_get_type(v)) {
    case json_type_int:
        if (json_object_get_int64(v) < 0)
            return imp_fail(imp, MEM4D_E_RANGE, "\"%s\" is negative (%lld)", key,
                            (long long)json_object_get_int64(v));
        *out = json_object_get_uint64(v);
        if (*out == UINT64_MAX) /* json-c saturates larger numbers */
            return imp_fail(imp, MEM4D_E_RANGE, "\"%s\" is too large", key);
        break;
    case json_type_double: {
        /* 4096.0 is an integer written oddly; 4096.5 and 1e30 are not. */
        double d = json_object_get_double(v);
        if (d < 0.0)
            return imp_fail(imp, MEM4D_E_RANGE, "\"%s\" is negative (%g)", key, d);
        if (!(d <= 9007199254740992.0) || d != floor(d))
            return imp_fail(imp, MEM4D_E_JSON, "\"%s\" is %g, not a whole number", key, d);
        *out = (uint64_t)d;
        break;
    }
    default:
        return imp_fail(imp, MEM4D_E_JSON, "\"%s\" is a %s, not a number", key,
                        json_type_to_name(json_object_get_type(v)));
    }
    *given = true;
    return MEM4D_OK;
}

static mem4d_status hf_bool(mem4d_import *imp, struct json_object *root, const char *key, bool *out)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(root, key, &v) || json_object_get_type(v) == json_type_null)
        return MEM4D_OK;
    if (json_object_get_type(v) != json_type_boolean)
        return imp_fail(imp, MEM4D_E_JSON, "\"%s\" is a %s, not true or false", key,
                        json_type_to_name(json_object_get_type(v)));
    *out = json_object_get_boolean(v);
    return MEM4D_OK;
}

/* The families read here; all are Llama-shaped decoders. */
enum hf_family { HF_LLAMA, HF_MISTRAL, HF_QWEN2, HF_MIXTRAL, HF_QWEN2_MOE, HF_OTHER };

static mem4d_status hf_family_of(mem4d_import *imp, struct json_object *root, enum hf_family *fam)
{
    struct json_object *v = NULL;
    *fam = HF_OTHER;
    if (!json_object_object_get_ex(root, "model_type", &v)) {
        imp_warn(imp, "config.json has no \"model_type\"; read as a Llama-like model");
        *fam = HF_LLAMA;
        return MEM4D_OK;
    }
    if (json_object_get_type(v) != json_type_string)
        return imp_fail(imp, MEM4D_E_JSON, "\"model_type\" is a %s, not a string",
                        json_type_to_name(json_object_get_type(v)));
    const char *t = json_object_get_string(v);
    static const struct { const char *name; enum hf_family fam; } known[] = {
        {"llama", HF_LLAMA},     {"mistral", HF_MISTRAL},       {"qwen2", HF_QWEN2},
        {"mixtral", HF_MIXTRAL}, {"qwen2_moe", HF_QWEN2_MOE},
    };
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (strcmp(t, known[i].name) == 0)
            *fam = known[i].fam;
    if (*fam == HF_OTHER) {
        imp_warn(imp, "model_type \"%.64s\" is not llama, mistral, qwen2, mixtral or qwen2_moe; "
                 "read as a Llama-like model", t);
        *fam = HF_LLAMA;
    }
    return MEM4D_OK;
}

/* The integer keys and where they go. */
static const struct {
    const char *key;
    mem4d_model_param param;
    bool required;
} hf_keys[] = {
    {"hidden_size", MEM4D_MODEL_HIDDEN_SIZE, true},
    {"intermediate_size", MEM4D_MODEL_FFN_HIDDEN_SIZE, true},
    {"num_hidden_layers", MEM4D_MODEL_NUM_LAYERS, true},
    {"num_attention_heads", MEM4D_MODEL_NUM_HEADS, true},
    {"vocab_size", MEM4D_MODEL_VOCAB_SIZE, true},
    {"num_key_value_heads", MEM4D_MODEL_NUM_KV_HEADS, false},
    {"head_dim", MEM4D_MODEL_HEAD_DIM, false},
    {"max_position_embeddings", MEM4D_MODEL_MAX_POSITION, false},
    {"num_local_experts", MEM4D_MODEL_NUM_EXPERTS, false},       /* Mixtral */
    {"num_experts", MEM4D_MODEL_NUM_EXPERTS, false},             /* Qwen2-MoE */
    {"num_experts_per_tok", MEM4D_MODEL_EXPERT_TOPK, false},
    {"moe_intermediate_size", MEM4D_MODEL_EXPERT_FFN_SIZE, false},
    {"shared_expert_intermediate_size", MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE, false},
};

static mem4d_status hf_apply(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    enum hf_family fam;
    TRY(hf_family_of(imp, root, &fam));
    /* Start from the Llama shape: keys a config leaves out take HF defaults
     * (k = a, head_dim = h / a, untied), not whatever the handle held. */
    m->v[MEM4D_MODEL_NUM_KV_HEADS] = 0;
    m->v[MEM4D_MODEL_HEAD_DIM] = 0;
    m->v[MEM4D_MODEL_NUM_EXPERTS] = 0;
    m->v[MEM4D_MODEL_EXPERT_TOPK] = 0;
    m->v[MEM4D_MODEL_EXPERT_FFN_SIZE] = 0;
    m->v[MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE] = 0;
    for (size_t i = 0; i < sizeof hf_keys / sizeof *hf_keys; i++) {
        uint64_t v = 0;
        bool given;
        char what[64];
        TRY(hf_uint(imp, root, hf_keys[i].key, hf_keys[i].required, &v, &given));
        m4d_msg(what, sizeof what, "\"%s\"", hf_keys[i].key);
        if (given)
            TRY(SET_M(m, hf_keys[i].param, v, what));
    }
    bool tied = false, attn_bias = false, mlp_bias = false;
    TRY(hf_bool(imp, root, "tie_word_embeddings", &tied));
    TRY(hf_bool(imp, root, "attention_bias", &attn_bias));
    TRY(hf_bool(imp, root, "mlp_bias", &mlp_bias));
    if (attn_bias)
        imp_warn(imp, "\"attention_bias\" also puts a bias on the output projection; only the QKV bias is modelled");
    if (mlp_bias)
        imp_warn(imp, "\"mlp_bias\" biases are not modelled");
    TRY(SET_M(m, MEM4D_MODEL_TIED_EMBEDDINGS, tied, "\"tie_word_embeddings\""));
    TRY(SET_M(m, MEM4D_MODEL_QKV_BIAS, fam == HF_QWEN2 || fam == HF_QWEN2_MOE || attn_bias, "\"attention_bias\""));
    TRY(SET_M(m, MEM4D_MODEL_NORM, 0, "normalization"));
    TRY(SET_M(m, MEM4D_MODEL_GATED_MLP, 1, "gated MLP"));
    m4d_strlcpy(m->name, "custom", sizeof m->name);
    return MEM4D_OK;
}

static mem4d_status hf_parse(mem4d_import *imp, const char *json, size_t size, mem4d_model *model)
{
    if (size > INT_MAX)
        return imp_fail(imp, MEM4D_E_RANGE, "the document is too large (%zu bytes)", size);
    struct json_tokener *tok = json_tokener_new();
    if (!tok)
        return imp_fail(imp, MEM4D_E_NOMEM, "out of memory while parsing JSON");
    struct json_object *root = json_tokener_parse_ex(tok, json, (int)size);
    enum json_tokener_error err = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    mem4d_status st = MEM4D_OK;
    if (err == json_tokener_continue || (!root && err == json_tokener_success)) {
        st = imp_fail(imp, MEM4D_E_JSON, "the JSON document is truncated");
    } else if (err != json_tokener_success) {
        st = imp_fail(imp, MEM4D_E_JSON, "malformed JSON near byte %zu: %s", end, json_tokener_error_desc(err));
    } else {
        while (end < size && isspace((unsigned char)json[end]))
            end++;
        if (end < size)
            st = imp_fail(imp, MEM4D_E_JSON, "unexpected text after the JSON document at byte %zu", end);
        else if (json_object_get_type(root) != json_type_object)
            st = imp_fail(imp, MEM4D_E_JSON, "the top level of config.json is a %s, not an object",
                          json_type_to_name(json_object_get_type(root)));
    }
    if (st == MEM4D_OK) {
        mem4d_model m = *model;
        st = hf_apply(imp, root, &m);
        if (st == MEM4D_OK)
            *model = m;
    }
    json_object_put(root);
    return st;
}

#endif /* MEM4D_HAVE_JSON */

mem4d_status mem4d_import_hf_config_buffer(mem4d_import *import, const char *json, size_t size,
                                           mem4d_model *model)
{
    if (!import)
        return MEM4D_E_INVALID_ARG;
    imp_reset(import);
    if (!json || !model)
        return imp_fail(import, MEM4D_E_INVALID_ARG, "NULL document or model");
#if MEM4D_HAVE_JSON
    if (size == 0)
        return imp_fail(import, MEM4D_E_JSON, "the JSON document is empty");
    mem4d_status st = hf_parse(import, json, size, model);
    imp_done(import);
    return st;
#else
    (void)size;
    return imp_fail(import, MEM4D_E_NO_JSON,
                    "libmem4d was built without JSON support; rebuild it with json-c (-Djson=enabled)");
#endif
}

#if MEM4D_HAVE_JSON
/* Read a whole small file; *buf is malloc'ed. */
static mem4d_status read_file(mem4d_import *imp, const char *path, char **buf, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return imp_fail(imp, MEM4D_E_IO, "cannot open %s: %s", path, strerror(errno));
    char *b = malloc(HF_MAX_BYTES + 1);
    if (!b) {
        fclose(f);
        return imp_fail(imp, MEM4D_E_NOMEM, "out of memory reading %s", path);
    }
    size_t n = fread(b, 1, HF_MAX_BYTES + 1, f);
    bool bad = ferror(f) != 0;
    int err = errno;
    fclose(f);
    if (bad) {
        free(b);
        return imp_fail(imp, MEM4D_E_IO, "cannot read %s: %s", path, strerror(err));
    }
    if (n > HF_MAX_BYTES) {
        free(b);
        return imp_fail(imp, MEM4D_E_RANGE, "%s is larger than %u bytes; not a config.json", path, HF_MAX_BYTES);
    }
    *buf = b;
    *size = n;
    return MEM4D_OK;
}
#endif

mem4d_status mem4d_import_hf_config(mem4d_import *import, const char *path, mem4d_model *model)
{
    if (!import)
        return MEM4D_E_INVALID_ARG;
    imp_reset(import);
    if (!path || !model)
        return imp_fail(import, MEM4D_E_INVALID_ARG, "NULL path or model");
#if MEM4D_HAVE_JSON
    char *buf = NULL;
    size_t size = 0;
    mem4d_status st = read_file(import, path, &buf, &size);
    if (st != MEM4D_OK)
        return st;
    st = mem4d_import_hf_config_buffer(import, buf, size, model);
    free(buf);
    return st;
#else
    return imp_fail(import, MEM4D_E_NO_JSON,
                    "libmem4d was built without JSON support; rebuild it with json-c (-Djson=enabled)");
#endif
}
