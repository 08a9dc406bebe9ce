/*
 * Import: Megatron-LM argument vectors (pretrain_gpt.py's command line).
 * Which flags exist and how each is read is data in megatron_flags.c, the
 * scanner that reads a vector is megatron_scan.c; this file's appliers give
 * the modelled flags their meaning, with Megatron-LM's defaults for the
 * flags a vector leaves out (the pipeline split's: megatron_pipeline.c).
 * SPDX-License-Identifier: MIT
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "megatron.h"

/* ------------------------------------------------------------------------ */
/* Meaning                                                                  */

/* The choice a WORD flag was given, "" when absent. */
static const char *choice(const struct m4d_opt_val *vals, int o)
{
    return GIVEN(o) ? m4d_megatron_flag_of(o)->choices[U(o)] : "";
}

/* Contradictions that make Megatron-LM refuse to start. */
static mem4d_status check_conflicts(mem4d_import *imp, const struct m4d_opt_val *vals)
{
    if (GIVEN(MF_BF16) && GIVEN(MF_FP16))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--bf16 and --fp16 contradict each other");
    if (GIVEN(MF_GRAD_BF16) && GIVEN(MF_ACC_FP32))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT,
                        "--grad-reduce-in-bf16 and --accumulate-allreduce-grads-in-fp32 contradict each other");
    if (GIVEN(MF_SEQ) && GIVEN(MF_ENC_SEQ))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--seq-length and --encoder-seq-length are both given");
    if (GIVEN(MF_P2P_OVERLAP) && GIVEN(MF_NO_P2P_OVERLAP))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT,
                        "--overlap-p2p-communication and --no-overlap-p2p-communication contradict each other");
    if (GIVEN(MF_VPP_LAYERS) && GIVEN(MF_VPP_STAGES))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT,
                        "--num-layers-per-virtual-pipeline-stage and --num-virtual-stages-per-pipeline-rank are both given");
    if (GIVEN(MF_RC_ACT) && GIVEN(MF_RC_GRAN) && U(MF_RC_GRAN) == M4D_GRAN_FULL)
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT,
                        "--recompute-activations (selective) contradicts --recompute-granularity full");
    if (GIVEN(MF_RC_GRAN) && U(MF_RC_GRAN) == M4D_GRAN_SELECTIVE && GIVEN(MF_RC_LAYERS))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT,
                        "--recompute-num-layers contradicts --recompute-granularity selective");
    if (GIVEN(MF_FSDP2) && GIVEN(MF_DIST_OPT))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--use-torch-fsdp2 and --use-distributed-optimizer contradict each other");
    if (GIVEN(MF_OVERLAP_PARAM) && !GIVEN(MF_DIST_OPT))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--overlap-param-gather needs --use-distributed-optimizer");
    uint64_t seq = GIVEN(MF_SEQ) ? U(MF_SEQ) : U(MF_ENC_SEQ);
    if (GIVEN(MF_MAX_POS) && (GIVEN(MF_SEQ) || GIVEN(MF_ENC_SEQ)) && seq > U(MF_MAX_POS))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--seq-length %llu exceeds --max-position-embeddings %llu",
                        (unsigned long long)seq, (unsigned long long)U(MF_MAX_POS));
    if (GIVEN(MF_RC_GRAN) && U(MF_RC_GRAN) == M4D_GRAN_FULL) {
        if (!GIVEN(MF_RC_METHOD))
            return m4d_imp_fail(imp, MEM4D_E_MISSING, "--recompute-granularity full needs --recompute-method");
        if (!GIVEN(MF_RC_LAYERS))
            return m4d_imp_fail(imp, MEM4D_E_MISSING, "--recompute-granularity full needs --recompute-num-layers");
    }
    return MEM4D_OK;
}

static mem4d_status set_opt_m(mem4d_import *imp, mem4d_model *m, mem4d_model_param key, int o,
                              uint64_t value)
{
    char what[96];
    m4d_msg(what, sizeof what, "--%s", m4d_megatron_flag_of(o)->flag);
    return SET_M(m, key, value, what);
}

mem4d_status m4d_megatron_set_layout(mem4d_import *imp, mem4d_layout *l, mem4d_layout_param key, int o,
                                     uint64_t value)
{
    char what[96];
    m4d_msg(what, sizeof what, "--%s", m4d_megatron_flag_of(o)->flag);
    return SET_L(l, key, value, what);
}

/* Megatron-LLaMA's --reduce-bucket-size (type=float, "2e8"): the
 * overlapped distributed optimizer's bucket in elements, a whole number. */
static mem4d_status apply_reduce_bucket(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_layout *l)
{
    if (!GIVEN(MF_REDUCE_BUCKET))
        return MEM4D_OK;
    if (!GIVEN(MF_ODO)) {
        m4d_imp_warn(imp, "--reduce-bucket-size is ignored without --overlapped-distributed-optimizer");
        return MEM4D_OK;
    }
    const char *text = vals[MF_REDUCE_BUCKET].s;
    char *end = NULL;
    errno = 0;
    double r = m4d_strtod(text, &end);
    if (end == text || *end != '\0' || !isfinite(r))
        return m4d_imp_fail(imp, MEM4D_E_PARSE, "--reduce-bucket-size: '%s' is not a number", text);
    if (r < 1.0 || r > 1099511627776.0 || r != floor(r))
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "--reduce-bucket-size %s is not a whole number of elements "
                            "from 1 to 2^40", text);
    if (GIVEN(MF_BUCKET))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--reduce-bucket-size and --ddp-bucket-size both set the bucket");
    return SET_L(l, MEM4D_LAYOUT_BUCKET_SIZE, (uint64_t)r, "--reduce-bucket-size");
}


/* --moe-layer-freq N (every N-th layer, from layer 0) or a pattern of L layers. */
static mem4d_status apply_moe_pattern(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_model *m)
{
    const char *text = vals[MF_MOE_FREQ].s;
    uint64_t first = 0, period = 1, mask = 1;
    if (strchr(text, '[')) {
        size_t n;
        bool fits;
        if (!m4d_moe_pattern_read(text, &n, &fits, &first, &period, &mask))
            return m4d_imp_fail(imp, MEM4D_E_PARSE, "--moe-layer-freq '%.64s' is not a list expression of 0 and 1 "
                                "(like \"([0]*3+[1]*58)\")", text);
        uint64_t L = m->v[MEM4D_MODEL_NUM_LAYERS];
        if (L && n != L)
            return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--moe-layer-freq names %zu layers but --num-layers is %llu",
                                n, (unsigned long long)L);
        if (!fits)
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "--moe-layer-freq '%.64s' is not dense layers followed by a "
                                "repeating pattern of at most 64 layers", text);
    } else {
        TRY(m4d_megatron_parse_int(imp, "moe-layer-freq", text, &period));
    }
    if (period == 0 || period > 64) {
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "--moe-layer-freq %llu must be between 1 and 64",
                            (unsigned long long)period);
    }
    TRY(SET_M(m, MEM4D_MODEL_MOE_FIRST_DENSE, first, "--moe-layer-freq"));
    TRY(SET_M(m, MEM4D_MODEL_MOE_LAYER_FREQ, period, "--moe-layer-freq"));
    return SET_M(m, MEM4D_MODEL_MOE_LAYER_MASK, mask, "--moe-layer-freq");
}

/* --window-size (left, right): a query attends to keys [i - left, i + right]
 * (transformer_config.py window_size, Transformer Engine's and flash-attn's
 * convention), left + 1 keys of a causal model; (-1, -1) or none is full
 * attention. --window-attn-skip-freq N: layer numbers (from 1) divisible by
 * N are full attention, or a list expression of the layers, 1 where the
 * window applies (megatron/core/transformer/utils.py,
 * is_layer_window_attention, NVIDIA/Megatron-LM@d98e8a64). A window that
 * also looks ahead (right > 0) is not modelled: timed full, said. */
static mem4d_status apply_window(mem4d_import *imp, const struct m4d_opt_val *vals, bool describes, mem4d_model *m)
{
    if (describes || GIVEN(MF_WINDOW)) {
        TRY(SET_M(m, MEM4D_MODEL_WINDOW_SIZE, 0, "--window-size"));
        TRY(SET_M(m, MEM4D_MODEL_WINDOW_FIRST_FULL, 0, "--window-attn-skip-freq"));
        TRY(SET_M(m, MEM4D_MODEL_WINDOW_LAYER_FREQ, 1, "--window-attn-skip-freq"));
        TRY(SET_M(m, MEM4D_MODEL_WINDOW_LAYER_MASK, 1, "--window-attn-skip-freq"));
    }
    if (!GIVEN(MF_WINDOW))
        return MEM4D_OK;
    const char *text = vals[MF_WINDOW].s;
    char buf[64];
    size_t n = strlen(text);
    if (n && text[0] == '(' && text[n - 1] == ')')
        text++, n -= 2;
    if (n >= sizeof buf)
        return m4d_imp_fail(imp, MEM4D_E_PARSE, "--window-size '%.64s' is not two whole numbers", vals[MF_WINDOW].s);
    memcpy(buf, text, n);
    buf[n] = '\0';
    char *comma = strchr(buf, ',');
    if (!comma)
        return m4d_imp_fail(imp, MEM4D_E_PARSE, "--window-size '%s' is not (left, right)", vals[MF_WINDOW].s);
    *comma = '\0';
    const char *right = comma + 1;
    while (*right == ' ')
        right++;
    if (strcmp(buf, "-1") == 0 && strcmp(right, "-1") == 0)
        return MEM4D_OK;
    uint64_t left, ahead;
    TRY(m4d_megatron_parse_int(imp, "window-size", buf, &left));
    TRY(m4d_megatron_parse_int(imp, "window-size", right, &ahead));
    if (ahead) {
        m4d_imp_warn(imp, "--window-size %s looks %llu tokens ahead: timed as full causal attention", vals[MF_WINDOW].s,
                     (unsigned long long)ahead);
        return MEM4D_OK;
    }
    uint64_t first = 0, period = 1, mask = 1;
    if (GIVEN(MF_WINDOW_SKIP)) {
        const char *f = vals[MF_WINDOW_SKIP].s;
        if (strchr(f, '[')) {
            size_t layers;
            bool fits;
            uint64_t L = m->v[MEM4D_MODEL_NUM_LAYERS];
            if (!m4d_moe_pattern_read(f, &layers, &fits, &first, &period, &mask))
                return m4d_imp_fail(imp, MEM4D_E_PARSE, "--window-attn-skip-freq '%.64s' is not a list expression "
                                    "of 0 and 1", f);
            if (L && layers != L)
                return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--window-attn-skip-freq names %zu layers but "
                                    "--num-layers is %llu", layers, (unsigned long long)L);
            if (!fits) /* none windowed, or no period of 64 layers */
                return mask ? m4d_imp_fail(imp, MEM4D_E_RANGE, "--window-attn-skip-freq '%.64s' is not full "
                                           "layers followed by a repeating pattern of at most 64 layers", f)
                            : MEM4D_OK;
        } else {
            TRY(m4d_megatron_parse_int(imp, "window-attn-skip-freq", f, &period));
            if (period == 0 || period > 64)
                return m4d_imp_fail(imp, MEM4D_E_RANGE, "--window-attn-skip-freq %llu must be between 1 and 64",
                                    (unsigned long long)period);
            mask = (UINT64_C(1) << (period - 1)) - 1; /* the period's last layer is full */
            if (!mask)
                return MEM4D_OK;
        }
    }
    TRY(SET_M(m, MEM4D_MODEL_WINDOW_SIZE, left + 1, "--window-size"));
    TRY(SET_M(m, MEM4D_MODEL_WINDOW_FIRST_FULL, first, "--window-attn-skip-freq"));
    TRY(SET_M(m, MEM4D_MODEL_WINDOW_LAYER_FREQ, period, "--window-attn-skip-freq"));
    return SET_M(m, MEM4D_MODEL_WINDOW_LAYER_MASK, mask, "--window-attn-skip-freq");
}

/* Multi-latent attention and its dimensions, with Megatron-LM's defaults
 * (kv_lora_rank 32, qk_head_dim 128, qk_pos_emb_head_dim 64, v_head_dim
 * 128, no query compression). */
static mem4d_status apply_mla(mem4d_import *imp, const struct m4d_opt_val *vals, bool describes, mem4d_model *m)
{
    if (!GIVEN(MF_MLA)) {
        if (GIVEN(MF_Q_LORA) || GIVEN(MF_KV_LORA))
            m4d_imp_warn(imp, "--q-lora-rank and --kv-lora-rank are ignored without --multi-latent-attention");
        return describes ? SET_M(m, MEM4D_MODEL_KV_LORA_RANK, 0, "--multi-latent-attention") : MEM4D_OK;
    }
    static const struct { int o; mem4d_model_param key; uint64_t def; } dims[] = {
        {MF_Q_LORA, MEM4D_MODEL_Q_LORA_RANK, 0}, {MF_KV_LORA, MEM4D_MODEL_KV_LORA_RANK, 32},
        {MF_QK_HEAD_DIM, MEM4D_MODEL_QK_HEAD_DIM, 128}, {MF_QK_POS_DIM, MEM4D_MODEL_QK_POS_EMB_HEAD_DIM, 64},
        {MF_V_HEAD_DIM, MEM4D_MODEL_V_HEAD_DIM, 128},
    };
    for (size_t i = 0; i < sizeof dims / sizeof *dims; i++)
        TRY(set_opt_m(imp, m, dims[i].key, dims[i].o, GIVEN(dims[i].o) ? U(dims[i].o) : dims[i].def));
    if (m->v[MEM4D_MODEL_KV_LORA_RANK] == 0)
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "--kv-lora-rank must be at least 1 with --multi-latent-attention");
    return MEM4D_OK;
}

/* Biases: Megatron-LM puts one on every linear layer unless
 * --disable-bias-linear (--add-bias-linear restores them; the later flag
 * wins); --add-qkv-bias keeps the QKV bias alone. */
static mem4d_status apply_biases(mem4d_import *imp, const struct m4d_opt_val *vals, bool describes, mem4d_model *m)
{
    if (!describes && !GIVEN(MF_QKV_BIAS) && !GIVEN(MF_NO_BIAS) && !GIVEN(MF_ADD_BIAS))
        return MEM4D_OK;
    bool linear = !GIVEN(MF_NO_BIAS) || (GIVEN(MF_ADD_BIAS) && vals[MF_ADD_BIAS].at > vals[MF_NO_BIAS].at);
    TRY(SET_M(m, MEM4D_MODEL_LINEAR_BIAS, linear, "--disable-bias-linear"));
    return SET_M(m, MEM4D_MODEL_QKV_BIAS, GIVEN(MF_QKV_BIAS) || linear, "--add-qkv-bias");
}

/* Position embeddings: Megatron-LM's default is a learned absolute table
 * of --max-position-embeddings rows (BigScience's Megatron-DeepSpeed calls
 * it "absolute"); rotary embeddings and ALiBi have no parameters. */
static mem4d_status apply_positions(mem4d_import *imp, const struct m4d_opt_val *vals, bool describes, mem4d_model *m)
{
    if (!describes && !GIVEN(MF_POS_TYPE) && !GIVEN(MF_ROPE) && !GIVEN(MF_NO_POS))
        return MEM4D_OK;
    /* The flag's choices (megatron_flags.c) to the model's values: rope 0,
     * learned_absolute 1, alibi 2, none 3 (T5's relative bias is a few
     * hundred parameters, taken as none). */
    static const uint64_t model_value[] = {1, 0, 0, 3, 3, 1, 0, 2};
    uint64_t type = GIVEN(MF_POS_TYPE) ? model_value[U(MF_POS_TYPE)] : 1;
    if (GIVEN(MF_ROPE))
        type = 0;
    if (type == 1 && GIVEN(MF_NO_POS))
        type = 3;
    if (type == 1 && m->v[MEM4D_MODEL_MAX_POSITION] == 0) {
        /* Megatron-LM requires the flag; the table is as long as a sequence at least. */
        uint64_t seq = GIVEN(MF_SEQ) ? U(MF_SEQ) : U(MF_ENC_SEQ);
        m4d_imp_warn(imp, "learned absolute position embeddings (Megatron-LM's default without "
                     "--position-embedding-type rope) need --max-position-embeddings; %s", seq ?
                     "the table is taken as --seq-length rows" : "their table is not counted");
        if (seq)
            TRY(SET_M(m, MEM4D_MODEL_MAX_POSITION, seq, "--seq-length"));
    }
    return SET_M(m, MEM4D_MODEL_POSITION_EMBEDDING, type, "--position-embedding-type");
}

/* The architecture. When the vector describes a model (it names layers,
 * hidden size or heads, as Megatron-LM requires), Megatron's defaults apply
 * to every switch it leaves out: LayerNorm, a plain 4h MLP, tied
 * embeddings, biases on. Otherwise only the flags given change the model. */
/* --softmax-type learnable (gpt-oss's per-head sink logits), the DSA
 * indexer's sizes and top-k sharing (set by the table) and, in Pai-Megatron-Patch and the ROCm
 * fork, shared experts as --num-shared-experts x --moe-ffn-hidden-size
 * (their scripts also pass --moe-shared-expert-intermediate-size, which
 * wins) behind --enable-shared-expert. */
static mem4d_status apply_new_attention(mem4d_import *imp, const struct m4d_opt_val *vals, bool describes,
                                        mem4d_model *m)
{
    if (describes || GIVEN(MF_SOFTMAX))
        TRY(SET_M(m, MEM4D_MODEL_ATTENTION_SINKS, GIVEN(MF_SOFTMAX) && U(MF_SOFTMAX) == M4D_SOFTMAX_LEARNABLE,
                  "--softmax-type"));
    static const struct { int slot; mem4d_model_param key; } dsa[] = {
        {MF_DSA_HEADS, MEM4D_MODEL_DSA_INDEX_HEADS}, {MF_DSA_HEAD_DIM, MEM4D_MODEL_DSA_INDEX_HEAD_DIM},
        {MF_DSA_TOPK, MEM4D_MODEL_DSA_INDEX_TOPK},
    };
    for (size_t i = 0; i < sizeof dsa / sizeof *dsa; i++)
        if (describes && !GIVEN(dsa[i].slot))
            TRY(SET_M(m, dsa[i].key, 0, "--dsa-indexer-*"));
    if (describes && !GIVEN(MF_DSA_FREQ))
        TRY(SET_M(m, MEM4D_MODEL_DSA_INDEX_TOPK_FREQ, 1, "--dsa-indexer-topk-freq"));
    if (describes && !GIVEN(MF_DSA_OFFSET))
        TRY(SET_M(m, MEM4D_MODEL_DSA_INDEX_SKIP_OFFSET, 0, "--dsa-indexer-skip-topk-offset"));
    if (!GIVEN(MF_NUM_SHARED)) {
        if (GIVEN(MF_ENABLE_SHARED) && !GIVEN(MF_SHARED_FFN))
            m4d_imp_warn(imp, "--enable-shared-expert without --num-shared-experts or "
                         "--moe-shared-expert-intermediate-size: read as no shared expert");
        return MEM4D_OK;
    }
    uint64_t fe = m->v[MEM4D_MODEL_EXPERT_FFN_SIZE] ? m->v[MEM4D_MODEL_EXPERT_FFN_SIZE] : m->v[MEM4D_MODEL_FFN_HIDDEN_SIZE];
    uint64_t fs;
    if (!m4d_mul(U(MF_NUM_SHARED), fe, &fs))
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "--num-shared-experts x --moe-ffn-hidden-size overflows");
    if (!GIVEN(MF_SHARED_FFN))
        return SET_M(m, MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE, fs, "--num-shared-experts");
    if (fs != m->v[MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE])
        m4d_imp_warn(imp, "--num-shared-experts %llu x --moe-ffn-hidden-size %llu is not "
                     "--moe-shared-expert-intermediate-size %llu; the intermediate size is used",
                     (unsigned long long)U(MF_NUM_SHARED), (unsigned long long)fe,
                     (unsigned long long)m->v[MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE]);
    return MEM4D_OK;
}

static mem4d_status apply_model(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_model *m)
{
    bool describes = GIVEN(MF_NUM_LAYERS) || GIVEN(MF_HIDDEN) || GIVEN(MF_HEADS);
    /* 0 is the model's "not set" for these; Megatron-LM divides by them */
    static const int sizes[] = {MF_GROUPS, MF_KV_CHANNELS, MF_KV_HEADS_DS};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        if (GIVEN(sizes[i]) && U(sizes[i]) == 0)
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "--%s 0: a size is at least 1",
                                m4d_megatron_flag_of(sizes[i])->flag);
    /* Flags with a direct counterpart: the table names the model key. */
    for (size_t i = 0; i < m4d_megatron_flag_n; i++) {
        const struct m4d_megatron_flag *row = &m4d_megatron_flags[i];
        if (row->kind == M4D_FLAG_INT && row->model_key >= 0 && GIVEN(row->slot))
            TRY(set_opt_m(imp, m, (mem4d_model_param)row->model_key, row->slot, U(row->slot)));
    }
    /* Megatron-LM reads the router only with experts; a dense job keeps the
     * default (moe_router_topk 2), which its log prints. */
    if (describes && GIVEN(MF_TOPK) && !(GIVEN(MF_EXPERTS) && U(MF_EXPERTS))) {
        m4d_imp_warn(imp, "--moe-router-topk %llu is ignored without --num-experts (a dense model)",
                     (unsigned long long)U(MF_TOPK));
        TRY(SET_M(m, MEM4D_MODEL_EXPERT_TOPK, 0, "--moe-router-topk"));
    }

    /* --quick-geglu (gpt-oss) is a gated linear unit too (Megatron's argument_utils.py) */
    if (describes || GIVEN(MF_SWIGLU) || GIVEN(MF_QUICK_GEGLU))
        TRY(SET_M(m, MEM4D_MODEL_GATED_MLP, GIVEN(MF_SWIGLU) || GIVEN(MF_QUICK_GEGLU), "--swiglu"));
    if (GIVEN(MF_NORM))
        TRY(SET_M(m, MEM4D_MODEL_NORM, U(MF_NORM) == M4D_NORM_LAYER ? 1 : 0, "--normalization"));
    else if (GIVEN(MF_RMSNORM_FORK)) /* Megatron-LLaMA's switch for RMSNorm */
        TRY(SET_M(m, MEM4D_MODEL_NORM, 0, "--RMSNorm"));
    else if (describes)
        TRY(SET_M(m, MEM4D_MODEL_NORM, 1, "--normalization"));
    if (!GIVEN(MF_FFN) && GIVEN(MF_HIDDEN)) {
        /* Megatron: 4h, or with SwiGLU int(4h * 2/3 / 64) * 64 = (h / 24) * 64. */
        uint64_t h = U(MF_HIDDEN);
        TRY(SET_M(m, MEM4D_MODEL_FFN_HIDDEN_SIZE, GIVEN(MF_SWIGLU) ? h / 24 * 64 : 4 * h,
                  "--ffn-hidden-size (Megatron's default)"));
    }
    if (GIVEN(MF_KV_HEADS_DS)) /* Megatron-DeepSpeed's spelling, which implies grouped-query attention */
        TRY(SET_M(m, MEM4D_MODEL_NUM_KV_HEADS, U(MF_KV_HEADS_DS), "--num-key-value-heads"));
    else if (GIVEN(MF_GQA))
        TRY(SET_M(m, MEM4D_MODEL_NUM_KV_HEADS, GIVEN(MF_GROUPS) ? U(MF_GROUPS) : 1, "--num-query-groups"));
    else if (describes)
        TRY(SET_M(m, MEM4D_MODEL_NUM_KV_HEADS, 0, "--num-query-groups"));
    if (GIVEN(MF_GROUPS) && !GIVEN(MF_GQA))
        m4d_imp_warn(imp, "--num-query-groups %llu is ignored by Megatron-LM without --group-query-attention; "
                 "every head keeps its own keys and values", (unsigned long long)U(MF_GROUPS));
    if (!GIVEN(MF_KV_CHANNELS) && describes)
        TRY(SET_M(m, MEM4D_MODEL_HEAD_DIM, 0, "--kv-channels"));
    if (describes || GIVEN(MF_UNTIE))
        TRY(SET_M(m, MEM4D_MODEL_TIED_EMBEDDINGS, !GIVEN(MF_UNTIE), "--untie-embeddings-and-output-weights"));
    TRY(apply_biases(imp, vals, describes, m));
    TRY(apply_positions(imp, vals, describes, m));
    if (describes || GIVEN(MF_QK_NORM))
        TRY(SET_M(m, MEM4D_MODEL_QK_LAYERNORM, GIVEN(MF_QK_NORM), "--qk-layernorm"));
    if (GIVEN(MF_EXPERTS) && !GIVEN(MF_TOPK))
        TRY(SET_M(m, MEM4D_MODEL_EXPERT_TOPK, 2, "--moe-router-topk (Megatron's default)"));
    if (GIVEN(MF_MOE_FREQ))
        TRY(apply_moe_pattern(imp, vals, m));
    else if (describes) {
        TRY(SET_M(m, MEM4D_MODEL_MOE_FIRST_DENSE, 0, "--moe-layer-freq"));
        TRY(SET_M(m, MEM4D_MODEL_MOE_LAYER_FREQ, 1, "--moe-layer-freq"));
        TRY(SET_M(m, MEM4D_MODEL_MOE_LAYER_MASK, 1, "--moe-layer-freq"));
    }
    TRY(apply_window(imp, vals, describes, m));
    if (describes && !GIVEN(MF_MTP))
        TRY(SET_M(m, MEM4D_MODEL_MTP_LAYERS, 0, "--mtp-num-layers"));
    if (describes || GIVEN(MF_MTP_REPEATED))
        TRY(SET_M(m, MEM4D_MODEL_MTP_REPEATED_LAYER, GIVEN(MF_MTP_REPEATED), "--mtp-use-repeated-layer"));
    if (describes || GIVEN(MF_EXPERT_BIAS))
        TRY(SET_M(m, MEM4D_MODEL_ROUTER_EXPERT_BIAS, GIVEN(MF_EXPERT_BIAS), "--moe-router-enable-expert-bias"));
    /* LatentMoE: arguments.py asserts "MoE latent projection dimension has to
     * be greater than zero" (NVIDIA/Megatron-LM@d98e8a64) */
    if (GIVEN(MF_MOE_LATENT) && U(MF_MOE_LATENT) == 0)
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "--moe-latent-size 0: Megatron-LM requires a latent size above zero");
    if (describes && !GIVEN(MF_MOE_LATENT))
        TRY(SET_M(m, MEM4D_MODEL_MOE_LATENT_SIZE, 0, "--moe-latent-size"));
    if (GIVEN(MF_SHARED_FFN) || GIVEN(MF_SHARED_GATE))
        TRY(SET_M(m, MEM4D_MODEL_SHARED_EXPERT_GATE, GIVEN(MF_SHARED_GATE), "--moe-shared-expert-gate"));
    TRY(apply_mla(imp, vals, describes, m));
    TRY(apply_new_attention(imp, vals, describes, m));
    if (describes)
        m4d_strlcpy(m->name, "custom", sizeof m->name);
    return MEM4D_OK;
}

/* ------------------------------------------------------------------------ */
/* Vocabulary                                                                */

/* What the flags say about the vocabulary: V, and whether it is the padded
 * vocabulary itself (exact) or Megatron pads it to a multiple of
 * make_vocab_size_divisible_by x tp. V = 0 with `unknown` set: only a file
 * knows, and `unknown` says which. */
struct vocab {
    uint64_t V;
    bool exact;
    char unknown[160];
};

/* A tokenizer named by a hub id or a path: its size, if the id is a known one. */
static void vocab_hub(const struct m4d_opt_val *vals, const struct m4d_tokenizer_type *t, struct vocab *out)
{
    const char *id = GIVEN(MF_TOKENIZER_MODEL) ? vals[MF_TOKENIZER_MODEL].s
                     : GIVEN(MF_TOKENIZER_NAME) ? vals[MF_TOKENIZER_NAME].s : NULL;
    if (!id) {
        m4d_msg(out->unknown, sizeof out->unknown, "--tokenizer-type %s names no --tokenizer-model", t->name);
        return;
    }
    const struct m4d_hub_tokenizer *hub = m4d_hub_tokenizer_find(id);
    if (hub)
        out->V = t->rule == M4D_VOCAB_HUB_BASE ? hub->base : hub->len;
    else
        m4d_msg(out->unknown, sizeof out->unknown, "the vocabulary of tokenizer %.96s is in its files", id);
}

/* Megatron-LM's (and Megatron-DeepSpeed's) --tokenizer-type. */
static mem4d_status vocab_megatron(mem4d_import *imp, const struct m4d_opt_val *vals, struct vocab *out)
{
    const char *name = vals[MF_TOKENIZER].s;
    const struct m4d_tokenizer_type *t = m4d_tokenizer_find(m4d_tokenizer_types, m4d_tokenizer_type_n, name);
    if (!t) {
        m4d_msg(out->unknown, sizeof out->unknown, "--tokenizer-type %.64s is not a tokenizer this version knows",
                name);
        return MEM4D_OK;
    }
    switch (t->rule) {
    case M4D_VOCAB_FIXED: out->V = t->size; break;
    case M4D_VOCAB_BERT:
        if (!m4d_add(t->size, U(MF_VOCAB_EXTRA_IDS), &out->V))
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "--vocab-extra-ids %llu is too large",
                                (unsigned long long)U(MF_VOCAB_EXTRA_IDS));
        break;
    case M4D_VOCAB_NULL:
        if (!GIVEN(MF_VOCAB))
            return m4d_imp_fail(imp, MEM4D_E_MISSING, "--tokenizer-type %s needs --vocab-size", t->name);
        out->V = U(MF_VOCAB) + 1; /* the end-of-document token; bounds are checked when set */
        if (out->V == 0)
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "--vocab-size %llu is too large",
                                (unsigned long long)U(MF_VOCAB));
        return MEM4D_OK;
    case M4D_VOCAB_TIKTOKEN: out->V = GIVEN(MF_VOCAB) ? U(MF_VOCAB) : t->size; return MEM4D_OK;
    case M4D_VOCAB_HUB_LEN:
    case M4D_VOCAB_HUB_BASE: vocab_hub(vals, t, out); break;
    default:
        m4d_msg(out->unknown, sizeof out->unknown, "the vocabulary of --tokenizer-type %s is in its tokenizer file",
                t->name);
        break;
    }
    if (out->V && GIVEN(MF_VOCAB) && U(MF_VOCAB) != out->V)
        m4d_imp_warn(imp, "--vocab-size %llu is ignored by Megatron-LM with --tokenizer-type %s, whose "
                     "vocabulary is %llu", (unsigned long long)U(MF_VOCAB), t->name, (unsigned long long)out->V);
    return MEM4D_OK;
}

/* Pai-Megatron-Patch's --patch-tokenizer-type: most set the padded
 * vocabulary outright, the tokenizer's size plus --extra-vocab-size. */
static mem4d_status vocab_pai(mem4d_import *imp, const struct m4d_opt_val *vals, struct vocab *out)
{
    const char *name = vals[MF_PATCH_TOKENIZER].s;
    const struct m4d_tokenizer_type *t =
        m4d_tokenizer_find(m4d_patch_tokenizer_types, m4d_patch_tokenizer_type_n, name);
    if (!t) {
        m4d_msg(out->unknown, sizeof out->unknown,
                "the vocabulary of --patch-tokenizer-type %.64s is in the checkpoint's tokenizer files", name);
        return MEM4D_OK;
    }
    out->exact = t->rule != M4D_VOCAB_FIXED;
    out->V = t->size;
    if (t->rule == M4D_VOCAB_PLUS_EXTRA && !m4d_add(t->size, U(MF_EXTRA_VOCAB), &out->V))
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "--extra-vocab-size %llu is too large",
                            (unsigned long long)U(MF_EXTRA_VOCAB));
    return MEM4D_OK;
}

/* Megatron-DeepSpeed's --pad-vocab-size-to: the padded vocabulary, at
 * least the tokenizer's. */
static mem4d_status vocab_pad_to(mem4d_import *imp, const struct m4d_opt_val *vals, struct vocab *v)
{
    uint64_t to = U(MF_PAD_VOCAB_TO);
    if (v->V && !v->exact && to < v->V)
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--pad-vocab-size-to %llu is below the tokenizer's %llu tokens",
                            (unsigned long long)to, (unsigned long long)v->V);
    v->V = to;
    v->exact = true;
    return MEM4D_OK;
}

static mem4d_status apply_vocab(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_model *m, mem4d_layout *l)
{
    struct vocab v = {0, false, ""};
    if (GIVEN(MF_PADDED_VOCAB) && U(MF_PADDED_VOCAB) > 0) { /* Pai's default is 0, "not set" */
        v.V = U(MF_PADDED_VOCAB);
        v.exact = true;
    } else if (GIVEN(MF_PATCH_TOKENIZER)) {
        TRY(vocab_pai(imp, vals, &v));
    } else if (GIVEN(MF_TOKENIZER)) {
        TRY(vocab_megatron(imp, vals, &v));
    } else if (GIVEN(MF_VOCAB_FILE)) {
        /* pretrain_gpt.py's args_defaults: a vocabulary file is GPT-2's BPE. */
        v.V = m4d_tokenizer_find(m4d_tokenizer_types, m4d_tokenizer_type_n, "GPT2BPETokenizer")->size;
    }
    if (!v.V && GIVEN(MF_VOCAB)) {
        if (v.unknown[0])
            m4d_imp_warn(imp, "%s; --vocab-size %llu is taken as its size", v.unknown,
                         (unsigned long long)U(MF_VOCAB));
        v.V = U(MF_VOCAB);
        v.unknown[0] = '\0';
    }
    if (GIVEN(MF_PAD_VOCAB_TO))
        TRY(vocab_pad_to(imp, vals, &v));
    if (v.V == 0) {
        bool describes = GIVEN(MF_NUM_LAYERS) || GIVEN(MF_HIDDEN) || GIVEN(MF_HEADS);
        if (m->v[MEM4D_MODEL_VOCAB_SIZE] == 0 && (describes || v.unknown[0]))
            m4d_imp_warn(imp, "the vocabulary size is unknown: %s; pass `mem4d check --vocab-size N` or "
                         "`--hf-config FILE`", v.unknown[0] ? v.unknown : "no --tokenizer-type or --vocab-size");
        return MEM4D_OK;
    }
    TRY(set_opt_m(imp, m, MEM4D_MODEL_VOCAB_SIZE, GIVEN(MF_VOCAB) ? MF_VOCAB : MF_TOKENIZER, v.V));
    if (!v.exact)
        return MEM4D_OK;
    /* The padded vocabulary itself: Megatron splits it over tp as it is. */
    uint64_t t = l->v[MEM4D_LAYOUT_TP];
    if (v.V % t != 0)
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "the padded vocabulary of %llu tokens does not divide over "
                            "--tensor-model-parallel-size %llu", (unsigned long long)v.V, (unsigned long long)t);
    return SET_L(l, MEM4D_LAYOUT_VOCAB_DIVISOR, 1, "the padded vocabulary");
}

/* fp4 training: Megatron-Core's --fp4-format e2m1 with --fp4-recipe nvfp4
 * (its default) is Transformer Engine's NVFP4BlockScaling on every
 * transformer layer's linears, the layout key fp8 = 1 with fp8_recipe
 * "nvfp4" (lib/perf.c, NVFP4_GEMM_SHARE). validate_args refuses fp4 beside
 * fp8 (arguments.py at NVIDIA/Megatron-LM@d98e8a64); the custom recipe runs a
 * user's quantizer factory, which is read as NVFP4's. */
static mem4d_status apply_fp4(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_layout *l)
{
    if (GIVEN(MF_FP4) && GIVEN(MF_FP8))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--fp4-format and --fp8-format cannot be used together "
                            "(Megatron refuses both)");
    if (!GIVEN(MF_FP4)) /* --fp4-recipe alone does nothing (a log prints its default) */
        return MEM4D_OK;
    if (GIVEN(MF_FP4_RECIPE) && strcmp(choice(vals, MF_FP4_RECIPE), "custom") == 0)
        m4d_imp_warn(imp, "--fp4-recipe custom: a quantizer factory the library cannot read; modelled as nvfp4 "
                     "(NVFP4BlockScaling)");
    return SET_L(l, MEM4D_LAYOUT_FP8_RECIPE, M4D_FP8_RECIPE_NVFP4, "--fp4-format");
}

/* Layout settings where Megatron-LM's default applies when the flag is absent.
 * --expert-tensor-parallel-size only shapes the expert groups
 * (parallel_state.initialize_model_parallel builds them whatever the model):
 * without experts no layer uses them, so a dense model keeps etp = tp. */
static mem4d_status apply_layout_basic(mem4d_import *imp, const struct m4d_opt_val *vals, const mem4d_model *m,
                                       mem4d_layout *l)
{
    TRY(m4d_megatron_set_layout(imp, l, MEM4D_LAYOUT_TP, MF_TP, GIVEN(MF_TP) ? U(MF_TP) : 1));
    TRY(m4d_megatron_set_layout(imp, l, MEM4D_LAYOUT_PP, MF_PP, GIVEN(MF_PP) ? U(MF_PP) : 1));
    TRY(m4d_megatron_set_layout(imp, l, MEM4D_LAYOUT_CP, MF_CP, GIVEN(MF_CP) ? U(MF_CP) : 1));
    TRY(m4d_megatron_set_layout(imp, l, MEM4D_LAYOUT_EP, MF_EP, GIVEN(MF_EP) ? U(MF_EP) : 1));
    bool etp = GIVEN(MF_ETP) && m->v[MEM4D_MODEL_NUM_EXPERTS] != 0;
    TRY(m4d_megatron_set_layout(imp, l, MEM4D_LAYOUT_ETP, MF_ETP, etp ? U(MF_ETP) : 0));
    if (GIVEN(MF_MBS))
        TRY(m4d_megatron_set_layout(imp, l, MEM4D_LAYOUT_MICRO_BATCH, MF_MBS, U(MF_MBS)));
    if (GIVEN(MF_SEQ))
        TRY(m4d_megatron_set_layout(imp, l, MEM4D_LAYOUT_SEQ_LENGTH, MF_SEQ, U(MF_SEQ)));
    if (GIVEN(MF_ENC_SEQ))
        TRY(m4d_megatron_set_layout(imp, l, MEM4D_LAYOUT_SEQ_LENGTH, MF_ENC_SEQ, U(MF_ENC_SEQ)));
    /* Megatron turns sequence parallelism off at tp = 1. */
    TRY(SET_L(l, MEM4D_LAYOUT_SEQUENCE_PARALLEL, GIVEN(MF_SP) && l->v[MEM4D_LAYOUT_TP] > 1, "--sequence-parallel"));
    /* Megatron-LLaMA's overlapped distributed optimizer shards the optimizer state as Megatron's does. */
    TRY(SET_L(l, MEM4D_LAYOUT_DIST_OPT, GIVEN(MF_DIST_OPT) || GIVEN(MF_ODO), "--use-distributed-optimizer"));
    TRY(SET_L(l, MEM4D_LAYOUT_OVERLAPPED_DIST_OPT, GIVEN(MF_ODO), "--overlapped-distributed-optimizer"));
    TRY(m4d_megatron_set_layout(imp, l, MEM4D_LAYOUT_VOCAB_DIVISOR, MF_VOCAB_DIV, GIVEN(MF_VOCAB_DIV) ? U(MF_VOCAB_DIV) : 128));
    TRY(apply_fp4(imp, vals, l));
    TRY(SET_L(l, MEM4D_LAYOUT_FP8, GIVEN(MF_FP8) || GIVEN(MF_FP4), GIVEN(MF_FP4) ? "--fp4-format" : "--fp8-format"));
    if (GIVEN(MF_FP8) && GIVEN(MF_FP8_RECIPE)) /* the choices in the key's order (megatron_flags.c) */
        TRY(m4d_megatron_set_layout(imp, l, MEM4D_LAYOUT_FP8_RECIPE, MF_FP8_RECIPE, U(MF_FP8_RECIPE)));
    TRY(m4d_megatron_set_layout(imp, l, MEM4D_LAYOUT_FIRST_STAGE_LAYERS, MF_FIRST_LAYERS, GIVEN(MF_FIRST_LAYERS) ? U(MF_FIRST_LAYERS) : 0));
    TRY(m4d_megatron_set_layout(imp, l, MEM4D_LAYOUT_LAST_STAGE_LAYERS, MF_LAST_LAYERS, GIVEN(MF_LAST_LAYERS) ? U(MF_LAST_LAYERS) : 0));
    TRY(SET_L(l, MEM4D_LAYOUT_OVERLAP_GRAD_REDUCE, GIVEN(MF_OVERLAP_GRAD), "--overlap-grad-reduce"));
    TRY(SET_L(l, MEM4D_LAYOUT_OVERLAP_PARAM_GATHER, GIVEN(MF_OVERLAP_PARAM), "--overlap-param-gather"));
    TRY(m4d_megatron_set_layout(imp, l, MEM4D_LAYOUT_BUCKET_SIZE, MF_BUCKET, GIVEN(MF_BUCKET) ? U(MF_BUCKET) : 0));
    TRY(apply_reduce_bucket(imp, vals, l));
    /* Only whether dropout is on matters (its masks); Megatron-LM defaults both to 0.1. */
    TRY(SET_L(l, MEM4D_LAYOUT_HIDDEN_DROPOUT, !GIVEN(MF_HIDDEN_DROPOUT) || vals[MF_HIDDEN_DROPOUT].r > 0.0,
              "--hidden-dropout"));
    TRY(SET_L(l, MEM4D_LAYOUT_ATTENTION_DROPOUT, !GIVEN(MF_ATTN_DROPOUT) || vals[MF_ATTN_DROPOUT].r > 0.0,
              "--attention-dropout"));
    /* Transformer Engine's fused cross entropy (--cross-entropy-fusion-impl te) works in place. */
    bool te_ce = strcmp(choice(vals, MF_CE_IMPL), "te") == 0;
    /* Userbuffers overlap: the step-time model reads it, full mode counts its buffers in FIXED. */
    TRY(SET_L(l, MEM4D_LAYOUT_TP_COMM_OVERLAP, GIVEN(MF_TP_OVERLAP), "--tp-comm-overlap"));
    /* The interleaved schedule's asynchronous transfers: Megatron-LM's default with virtual stages
     * since 2023-10 (NVIDIA/Megatron-LM@4eeff55d, core_r0.4: off only with
     * --no-overlap-p2p-communication, which a log's overlap_p2p_comm False reads as), before that
     * the opt-in --overlap-p2p-communication of 2023-05. A command line of Megatron-LM from before
     * 2023-10 with virtual stages and without the opt-in ran without it: give
     * --no-overlap-p2p-communication there. */
    bool interleaved = GIVEN(MF_VPP_LAYERS) || GIVEN(MF_VPP_STAGES);
    TRY(SET_L(l, MEM4D_LAYOUT_OVERLAP_P2P_COMM, !GIVEN(MF_NO_P2P_OVERLAP) && (GIVEN(MF_P2P_OVERLAP) || interleaved),
              GIVEN(MF_NO_P2P_OVERLAP) ? "--no-overlap-p2p-communication" : "--overlap-p2p-communication"));
    TRY(SET_L(l, MEM4D_LAYOUT_CROSS_ENTROPY_FUSION, GIVEN(MF_CE_FUSION) && !te_ce, "--cross-entropy-loss-fusion"));
    /* The step time's cross entropy: without --cross-entropy-loss-fusion (Megatron-LM's default)
     * the unfused vocab_parallel_cross_entropy, with it the implementation named (native by
     * default); the values in the key's order (params.c). */
    TRY(SET_L(l, MEM4D_LAYOUT_CROSS_ENTROPY_IMPL, !GIVEN(MF_CE_FUSION) ? 1 : te_ce ? 3 : 2,
              "--cross-entropy-loss-fusion"));
    TRY(SET_L(l, MEM4D_LAYOUT_MOE_ROUTER_BYTES, GIVEN(MF_ROUTER_DTYPE) && U(MF_ROUTER_DTYPE) == 1 ? 8 : 4,
              "--moe-router-dtype"));
    return MEM4D_OK;
}

/* Bytes of each dtype name of the precision-aware optimizer's lists
 * (fp32 first; fp8 is stored as uint8). */
static uint64_t dtype_bytes(const struct m4d_opt_val *vals, int o)
{
    if (!GIVEN(o))
        return 4;
    const char *name = choice(vals, o);
    return strcmp(name, "fp32") == 0 ? 4 : strcmp(name, "fp8") == 0 ? 1 : 2;
}

/* Megatron's precision-aware optimizer keeps main gradients, main
 * parameters and each Adam moment in the dtypes named; without it those
 * flags must stay fp32 (OptimizerConfig refuses otherwise). */
static mem4d_status apply_precision_aware(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_layout *l)
{
    static const int dtypes[] = {MF_MAIN_GRADS_DTYPE, MF_MAIN_PARAMS_DTYPE, MF_EXP_AVG_DTYPE, MF_EXP_AVG_SQ_DTYPE};
    bool aware = GIVEN(MF_PREC_AWARE);
    TRY(SET_L(l, MEM4D_LAYOUT_PRECISION_AWARE_OPTIMIZER, aware, "--use-precision-aware-optimizer"));
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
        if (!aware && dtype_bytes(vals, dtypes[i]) != 4)
            return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--%s %s needs --use-precision-aware-optimizer",
                                m4d_megatron_flag_of(dtypes[i])->flag, choice(vals, dtypes[i]));
    if (!aware)
        return MEM4D_OK;
    if (dtype_bytes(vals, MF_MAIN_GRADS_DTYPE) != 4) {
        if (GIVEN(MF_ACC_FP32))
            return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--main-grads-dtype bf16 contradicts "
                                "--accumulate-allreduce-grads-in-fp32");
        TRY(SET_L(l, MEM4D_LAYOUT_MAIN_GRAD_BYTES, 2, "--main-grads-dtype"));
    }
    if (l->v[MEM4D_LAYOUT_MASTER_WEIGHT_BYTES] != 0)
        TRY(SET_L(l, MEM4D_LAYOUT_MASTER_WEIGHT_BYTES, dtype_bytes(vals, MF_MAIN_PARAMS_DTYPE), "--main-params-dtype"));
    uint64_t m1 = dtype_bytes(vals, MF_EXP_AVG_DTYPE), m2 = dtype_bytes(vals, MF_EXP_AVG_SQ_DTYPE);
    TRY(SET_L(l, MEM4D_LAYOUT_OPT_STATE_BYTES, m1, "--exp-avg-dtype"));
    return SET_L(l, MEM4D_LAYOUT_EXP_AVG_SQ_BYTES, m2 == m1 ? 0 : m2, "--exp-avg-sq-dtype");
}

/* --optimizer-cpu-offload keeps --optimizer-offload-fraction (default 1)
 * of the optimizer state on the host; Megatron requires the
 * precision-aware optimizer for it. */
static mem4d_status apply_optimizer_offload(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_layout *l)
{
    /* --offload-optimizer-states: Megatron-Core's OptimizerStateOffloader
     * keeps the distributed optimizer's state on the host between steps */
    TRY(SET_L(l, MEM4D_LAYOUT_OPTIMIZER_STATE_OFFLOAD, GIVEN(MF_OPT_STATE_OFFLOAD), "--offload-optimizer-states"));
    if (GIVEN(MF_LOGPROB_LOSS))
        TRY(SET_L(l, MEM4D_LAYOUT_LOGPROB_LOSS, U(MF_LOGPROB_LOSS), "slime's loss"));
    if (!GIVEN(MF_OPT_OFFLOAD)) {
        if (GIVEN(MF_OPT_OFFLOAD_FRACTION))
            m4d_imp_warn(imp, "--optimizer-offload-fraction is ignored without --optimizer-cpu-offload");
        return SET_L(l, MEM4D_LAYOUT_OPTIMIZER_OFFLOAD_PPM, 0, "--optimizer-cpu-offload");
    }
    if (!GIVEN(MF_PREC_AWARE))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--optimizer-cpu-offload needs --use-precision-aware-optimizer");
    double f = GIVEN(MF_OPT_OFFLOAD_FRACTION) ? vals[MF_OPT_OFFLOAD_FRACTION].r : 1.0;
    return SET_L(l, MEM4D_LAYOUT_OPTIMIZER_OFFLOAD_PPM, (uint64_t)llround(f * 1e6), "--optimizer-offload-fraction");
}

/* The MoE token dispatcher (Megatron-Core TransformerConfig: the dispatcher
 * type defaults to allgather; flex runs the backend named, DeepEP by default;
 * --moe-enable-deepep is the older spelling of flex + deepep), router padding
 * for quantized GEMMs (fp8_utils.get_fp8_align_size: 32 for MXFP8, 16 for
 * the other fp8 recipes), the EP overlap and delayed weight gradients. */
static mem4d_status apply_moe_dispatch(mem4d_import *imp, const struct m4d_opt_val *vals, const mem4d_model *m,
                                      mem4d_layout *l)
{
    const char *type = GIVEN(MF_DISPATCHER) ? choice(vals, MF_DISPATCHER) : "allgather";
    const char *backend = GIVEN(MF_FLEX_BACKEND) ? choice(vals, MF_FLEX_BACKEND) : "deepep";
    uint64_t d = MEM4D_MOE_DISPATCHER_ALLGATHER;
    if (GIVEN(MF_ENABLE_DEEPEP)) {
        if (strcmp(type, "flex") != 0)
            return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--moe-enable-deepep needs --moe-token-dispatcher-type flex");
        if (strcmp(backend, "deepep") != 0)
            return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--moe-enable-deepep contradicts "
                                "--moe-flex-dispatcher-backend %s", backend);
    }
    if (strcmp(type, "alltoall") == 0)
        d = MEM4D_MOE_DISPATCHER_ALLTOALL;
    else if (strcmp(type, "alltoall_seq") == 0)
        return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "--moe-token-dispatcher-type alltoall_seq was removed from "
                            "Megatron-Core; use alltoall");
    else if (strcmp(type, "flex") == 0) {
        if (strcmp(backend, "ncclep") == 0)
            return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "--moe-flex-dispatcher-backend ncclep: NCCL EP's buffers "
                                "are not modelled (deepep and hybridep are)");
        d = strcmp(backend, "hybridep") == 0 ? MEM4D_MOE_DISPATCHER_HYBRIDEP : MEM4D_MOE_DISPATCHER_DEEPEP;
    } else if (GIVEN(MF_FLEX_BACKEND) && strcmp(backend, "ncclep") == 0) {
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--moe-flex-dispatcher-backend ncclep needs "
                            "--moe-token-dispatcher-type flex");
    } else if (GIVEN(MF_FLEX_BACKEND) && strcmp(backend, "deepep") != 0) {
        /* Megatron-Core refuses only ncclep without the flex dispatcher
         * (TransformerConfig.__post_init__) and reads the others only there;
         * a log prints the default, deepep, for every job */
        m4d_imp_warn(imp, "--moe-flex-dispatcher-backend %s is ignored without --moe-token-dispatcher-type flex",
                     backend);
    }
    /* a dense model has no dispatcher (Megatron ignores the flags there) */
    TRY(SET_L(l, MEM4D_LAYOUT_MOE_DISPATCHER, m->v[MEM4D_MODEL_NUM_EXPERTS] ? d : 0, "--moe-token-dispatcher-type"));
    uint64_t sms = GIVEN(MF_FLEX_SMS) ? U(MF_FLEX_SMS) : GIVEN(MF_DEEPEP_SMS) ? U(MF_DEEPEP_SMS) : 20;
    TRY(SET_L(l, MEM4D_LAYOUT_MOE_DISPATCHER_SMS, sms,
              GIVEN(MF_FLEX_SMS) ? "--moe-flex-dispatcher-num-sms" : "--moe-deepep-num-sms"));
    uint64_t pad = 0;
    if (GIVEN(MF_ROUTER_PAD_Q) || GIVEN(MF_ROUTER_PAD_FP8)) {
        const char *flag = GIVEN(MF_ROUTER_PAD_Q) ? "--moe-router-padding-for-quantization"
                                                  : "--moe-router-padding-for-fp8";
        if (!GIVEN(MF_FP8) && !GIVEN(MF_FP4))
            return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "%s needs fp8 training (--fp8-format, or fp4: --fp4-format)",
                                flag);
        /* fp4_utils.get_fp4_align_size: 128 for NVFP4's grouped quantization */
        pad = GIVEN(MF_FP4) ? 128 : strcmp(choice(vals, MF_FP8_RECIPE), "mxfp8") == 0 ? 32 : 16;
    }
    TRY(SET_L(l, MEM4D_LAYOUT_MOE_PAD_MULTIPLE, pad, "--moe-router-padding-for-quantization"));
    TRY(SET_L(l, MEM4D_LAYOUT_MOE_EP_OVERLAP, GIVEN(MF_EP_OVERLAP), "--overlap-moe-expert-parallel-comm"));
    TRY(SET_L(l, MEM4D_LAYOUT_DELAY_WGRAD, GIVEN(MF_DELAY_WGRAD), "--delay-wgrad-compute"));
    /* Megatron-Core runs SequentialMLP unless --moe-grouped-gemm (step time only) */
    if (m->v[MEM4D_MODEL_NUM_EXPERTS])
        TRY(SET_L(l, MEM4D_LAYOUT_MOE_GROUPED_GEMM, GIVEN(MF_GROUPED_GEMM), "--moe-grouped-gemm"));
    TRY(SET_L(l, MEM4D_LAYOUT_MOE_SHARED_EXPERT_OVERLAP, GIVEN(MF_SHARED_OVERLAP), "--moe-shared-expert-overlap"));
    /* --moe-router-force-load-balancing routes each token to random experts
     * (moe_utils.py, apply_random_logits): balanced, 10^6; without it the
     * learned router's imbalance is derived (0; step time only) */
    if (GIVEN(MF_FORCE_BALANCE))
        TRY(SET_L(l, MEM4D_LAYOUT_MOE_IMBALANCE_PPM, 1000000, "--moe-router-force-load-balancing"));
    /* --reuse-grad-buf-for-mxfp8-param-ag: the MXFP8 parameters' all-gather
     * runs in the gradient buffer (param_and_grad_buffer.py), so fp8
     * parameters keep no other buffer: what --fp8-param-gather models. */
    if (GIVEN(MF_REUSE_GRAD_MXFP8) && !GIVEN(MF_FP8_PARAM))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--reuse-grad-buf-for-mxfp8-param-ag needs --fp8-param-gather");
    if (GIVEN(MF_FP8_PARAM) && strcmp(choice(vals, MF_FP8_RECIPE), "mxfp8") == 0 && !GIVEN(MF_REUSE_GRAD_MXFP8))
        m4d_imp_warn(imp, "--fp8-recipe mxfp8 with --fp8-param-gather needs --reuse-grad-buf-for-mxfp8-param-ag "
                     "(Megatron-Core's MoE README; Transformer Engine cannot remap MXFP8 parameters into the "
                     "parameter buffer): the estimate assumes it");
    return MEM4D_OK;
}

/* CUDA graphs: --cuda-graph-impl, or the older --enable-cuda-graph (local)
 * and --external-cuda-graph (transformer_engine); a scope of full_iteration
 * (the older --cuda-graph-scope) is that implementation; a scope or module
 * list without attn (nor the whole layer) leaves attention eager. */
static mem4d_status apply_cuda_graphs(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_layout *l)
{
    /* bits of the flags' choices: full attn mlp moe moe_router moe_preprocess mamba full_iteration */
    enum { SCOPE_FULL = 1, SCOPE_FULL_ITERATION = 128 };
    uint64_t impl = GIVEN(MF_CUDA_GRAPH) ? U(MF_CUDA_GRAPH)
                  : GIVEN(MF_EXTERNAL_CUDA_GRAPH) ? MEM4D_CUDA_GRAPH_TRANSFORMER_ENGINE
                  : GIVEN(MF_ENABLE_CUDA_GRAPH) ? MEM4D_CUDA_GRAPH_LOCAL : MEM4D_CUDA_GRAPH_NONE;
    uint64_t scope = (GIVEN(MF_CUDA_GRAPH_SCOPE) ? U(MF_CUDA_GRAPH_SCOPE) : 0) |
                     (GIVEN(MF_CUDA_GRAPH_MODULES) ? U(MF_CUDA_GRAPH_MODULES) : 0);
    if (scope & SCOPE_FULL_ITERATION)
        impl = MEM4D_CUDA_GRAPH_FULL_ITERATION;
    if (scope && !impl)
        m4d_imp_warn(imp, "--cuda-graph-scope/--cuda-graph-modules without a CUDA graph implementation capture "
                     "nothing");
    TRY(SET_L(l, MEM4D_LAYOUT_CUDA_GRAPH, impl, "--cuda-graph-impl"));
    /* attn .. moe_preprocess are bits 1-5 of the choices, 0-4 of the key; full (or none) is the whole layer */
    uint64_t bits = scope & SCOPE_FULL ? 0 : (scope >> 1) & 31;
    TRY(SET_L(l, MEM4D_LAYOUT_CUDA_GRAPH_SCOPE, bits, "--cuda-graph-scope"));
    return SET_L(l, MEM4D_LAYOUT_FP32_RESIDUAL, GIVEN(MF_FP32_RESIDUAL), "--fp32-residual-connection");
}

/* Activation offloading: Megatron-Core turns cpu_offloading on when
 * --cpu-offloading-num-layers is above 0 (the older --cpu-offloading
 * switch alone offloads no layer: the count defaults to 0). */
static mem4d_status apply_cpu_offloading(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_layout *l)
{
    uint64_t n = GIVEN(MF_CPU_OFFLOAD_LAYERS) ? U(MF_CPU_OFFLOAD_LAYERS) : 0;
    if (GIVEN(MF_CPU_OFFLOAD) && n == 0)
        m4d_imp_warn(imp, "--cpu-offloading without --cpu-offloading-num-layers offloads no layer (the count "
                     "defaults to 0)");
    return SET_L(l, MEM4D_LAYOUT_ACTIVATION_OFFLOAD_LAYERS, n, "--cpu-offloading-num-layers");
}

/* Fine-grained activation offloading: --offload-modules names the modules
 * (their bits in the flag's choice order are the layout's); Megatron-Core
 * asserts a non-empty list. fused_group_mlp (the TE op fuser's grouped MLP)
 * and gdp_qkv (the GatedDeltaProduct mixer) are layers this version does
 * not have. */
static mem4d_status apply_fine_grained_offloading(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_layout *l)
{
    enum { MODELLED = 127, FUSED_GROUP_MLP = 128 };
    if (!GIVEN(MF_FG_OFFLOAD)) {
        if (GIVEN(MF_OFFLOAD_MODULES) || GIVEN(MF_OFFLOAD_FRACTION))
            m4d_imp_warn(imp, "--offload-modules and --activation-offload-fraction are ignored without "
                         "--fine-grained-activation-offloading");
        return SET_L(l, MEM4D_LAYOUT_OFFLOAD_MODULES, 0, "--offload-modules");
    }
    if (!GIVEN(MF_OFFLOAD_MODULES) || U(MF_OFFLOAD_MODULES) == 0)
        return m4d_imp_fail(imp, MEM4D_E_MISSING, "--fine-grained-activation-offloading needs --offload-modules");
    if (U(MF_OFFLOAD_MODULES) & ~(uint64_t)MODELLED)
        return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "--offload-modules %s: %s is not a layer this version models",
                            U(MF_OFFLOAD_MODULES) & FUSED_GROUP_MLP ? "fused_group_mlp" : "gdp_qkv",
                            U(MF_OFFLOAD_MODULES) & FUSED_GROUP_MLP ? "the TE op fuser's grouped MLP"
                                                                    : "the GatedDeltaProduct mixer");
    double f = GIVEN(MF_OFFLOAD_FRACTION) ? vals[MF_OFFLOAD_FRACTION].r : 1.0; /* in [0, 1]: REAL rows */
    TRY(SET_L(l, MEM4D_LAYOUT_OFFLOAD_MODULES, U(MF_OFFLOAD_MODULES), "--offload-modules"));
    return SET_L(l, MEM4D_LAYOUT_ACTIVATION_OFFLOAD_FRACTION_PPM, (uint64_t)llround(f * 1e6),
                 "--activation-offload-fraction");
}

/* --defer-embedding-wgrad-compute with --wgrad-deferral-limit (0: every
 * micro-batch); the limit alone does nothing. */
static mem4d_status apply_deferred_wgrad(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_layout *l)
{
    if (GIVEN(MF_WGRAD_DEFER_LIMIT) && !GIVEN(MF_DEFER_EMB_WGRAD))
        m4d_imp_warn(imp, "--wgrad-deferral-limit is ignored without --defer-embedding-wgrad-compute");
    TRY(SET_L(l, MEM4D_LAYOUT_DEFER_EMBEDDING_WGRAD, GIVEN(MF_DEFER_EMB_WGRAD), "--defer-embedding-wgrad-compute"));
    return SET_L(l, MEM4D_LAYOUT_WGRAD_DEFERRAL_LIMIT, GIVEN(MF_WGRAD_DEFER_LIMIT) ? U(MF_WGRAD_DEFER_LIMIT) : 0,
                 "--wgrad-deferral-limit");
}

/* MoE token capacity (Megatron-Core TransformerConfig): a negative
 * --moe-expert-capacity-factor means none; padding needs a factor. */
static mem4d_status apply_moe_capacity(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_layout *l)
{
    double f = 0;
    if (GIVEN(MF_MOE_CAP)) {
        TRY(m4d_megatron_parse_number(imp, "moe-expert-capacity-factor", vals[MF_MOE_CAP].s, &f));
        if (f < 0)
            f = 0;
    }
    if (GIVEN(MF_MOE_PAD) && f == 0)
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--moe-pad-expert-input-to-capacity needs "
                            "--moe-expert-capacity-factor");
    if (f > 1000.0)
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "--moe-expert-capacity-factor %g is above 1000 (the estimate's "
                            "bound; a negative factor means none, as in Megatron-Core)", f);
    TRY(SET_L(l, MEM4D_LAYOUT_MOE_CAPACITY_FACTOR_PPM, (uint64_t)llround(f * 1e6), "--moe-expert-capacity-factor"));
    return SET_L(l, MEM4D_LAYOUT_MOE_PAD_TO_CAPACITY, GIVEN(MF_MOE_PAD), "--moe-pad-expert-input-to-capacity");
}

/* Megatron FSDP's own buffer dtypes (arguments.py: --megatron-fsdp-main-grads-dtype,
 * default auto, and --megatron-fsdp-main-params-dtype, default fp32;
 * megatron_fsdp param_and_grad_buffer.py _resolve_group_grad_dtype: auto is
 * the parameters' dtype). --accumulate-allreduce-grads-in-fp32 does not
 * reach its buffers, so bf16 training keeps bf16 main gradients there. */
static uint64_t fsdp_dtype_bytes(const struct m4d_opt_val *vals, int o, uint64_t dflt, uint64_t native)
{
    if (!GIVEN(o))
        return dflt;
    return strcmp(choice(vals, o), "auto") == 0 ? native : dtype_bytes(vals, o);
}

static mem4d_status apply_fsdp_precision(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_layout *l, bool half)
{
    if (!GIVEN(MF_MEGATRON_FSDP)) {
        if (GIVEN(MF_FSDP_GRADS_DTYPE) || GIVEN(MF_FSDP_PARAMS_DTYPE))
            m4d_imp_warn(imp, "--megatron-fsdp-main-grads-dtype and --megatron-fsdp-main-params-dtype are ignored "
                         "without --use-megatron-fsdp");
        return MEM4D_OK;
    }
    uint64_t native = half ? 2 : 4;
    TRY(SET_L(l, MEM4D_LAYOUT_MAIN_GRAD_BYTES, fsdp_dtype_bytes(vals, MF_FSDP_GRADS_DTYPE, native, native),
              "--megatron-fsdp-main-grads-dtype"));
    if (!half)
        return MEM4D_OK; /* fp32 training: the parameters are the main weights */
    uint64_t master = fsdp_dtype_bytes(vals, MF_FSDP_PARAMS_DTYPE, 4, native);
    return SET_L(l, MEM4D_LAYOUT_MASTER_WEIGHT_BYTES, master, "--megatron-fsdp-main-params-dtype");
}

/* Precision: bf16 forces fp32 gradient accumulation unless
 * --grad-reduce-in-bf16; fp16 accumulates in fp16 unless asked; fp32
 * training keeps no separate master copy. */
static mem4d_status apply_precision(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_layout *l)
{
    bool half = GIVEN(MF_BF16) || GIVEN(MF_FP16);
    uint64_t grad = 4;
    if (GIVEN(MF_BF16) && GIVEN(MF_GRAD_BF16))
        grad = 2;
    else if (GIVEN(MF_FP16) && !GIVEN(MF_ACC_FP32))
        grad = 2;
    TRY(SET_L(l, MEM4D_LAYOUT_PARAM_BYTES, half ? 2 : 4, "--bf16/--fp16"));
    TRY(SET_L(l, MEM4D_LAYOUT_MASTER_WEIGHT_BYTES, half ? 4 : 0, "--bf16/--fp16"));
    TRY(SET_L(l, MEM4D_LAYOUT_MAIN_GRAD_BYTES, grad, "--accumulate-allreduce-grads-in-fp32"));
    TRY(SET_L(l, MEM4D_LAYOUT_OPT_STATE_BYTES, 4, "--optimizer"));
    TRY(apply_precision_aware(imp, vals, l));
    TRY(apply_fsdp_precision(imp, vals, l, half));
    TRY(apply_optimizer_offload(imp, vals, l));
    bool sharded = GIVEN(MF_DIST_OPT) || GIVEN(MF_FSDP2) || GIVEN(MF_MEGATRON_FSDP) || GIVEN(MF_CUSTOM_FSDP);
    if (GIVEN(MF_FP8_PARAM) && (!GIVEN(MF_FP8) || !sharded))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--fp8-param-gather needs --fp8-format and the distributed "
                            "optimizer or FSDP");
    /* --fp4-param-gather: NVFP4 weights alone, gathered in fp4 (validate_args
     * refuses it without --fp4-format) */
    if (GIVEN(MF_FP4_PARAM) && !GIVEN(MF_FP4))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--fp4-param-gather must be used together with --fp4-format");
    TRY(SET_L(l, MEM4D_LAYOUT_FP8_PARAM_GATHER, GIVEN(MF_FP8_PARAM) || GIVEN(MF_FP4_PARAM),
              GIVEN(MF_FP4_PARAM) ? "--fp4-param-gather" : "--fp8-param-gather"));
    /* --optimizer sgd: one momentum buffer, none with --sgd-momentum 0
     * (Megatron's default momentum is 0.9). */
    bool sgd = GIVEN(MF_OPTIMIZER) && U(MF_OPTIMIZER) != M4D_OPT_ADAM;
    if (GIVEN(MF_SGD_MOMENTUM) && !sgd)
        m4d_imp_warn(imp, "--sgd-momentum is ignored without --optimizer sgd");
    uint64_t moments = !sgd ? 2 : GIVEN(MF_SGD_MOMENTUM) && vals[MF_SGD_MOMENTUM].r == 0.0 ? 0 : 1;
    return SET_L(l, MEM4D_LAYOUT_OPTIMIZER_MOMENTS, moments, "--optimizer");
}

/* DeepSpeed's BF16_Optimizer (deepspeed/runtime/bf16_optimizer.py, used by
 * the engine for bf16 at ZeRO stage 0, written for BLOOM's training) keeps
 * the bf16 weights and one fp32 gradient accumulation buffer whole, but
 * clones only this rank's 1/dp partition of the flat weights to fp32 and
 * hands the optimizer that partition: the fp32 master weights and Adam's
 * moments are partitioned over data parallelism even at stage 0. That is
 * what ZeRO stage 1 with fp32 main gradients holds. */
static uint64_t deepspeed_bf16_optimizer_stage(const struct m4d_opt_val *vals, uint64_t stage)
{
    return stage == 0 && GIVEN(MF_BF16) ? 1 : stage;
}

/* Sharding of parameters, gradients and optimizer state beyond ZeRO-1. */
static mem4d_status apply_sharding(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_layout *l)
{
    uint64_t zero = 0;
    if (GIVEN(MF_FSDP2))
        zero = 3;
    else if (GIVEN(MF_MEGATRON_FSDP) || GIVEN(MF_CUSTOM_FSDP))
        zero = GIVEN(MF_DP_SHARDING) ? U(MF_DP_SHARDING) : 3; /* choices are in stage order */
    else if (GIVEN(MF_DP_SHARDING))
        m4d_imp_warn(imp, "--data-parallel-sharding-strategy is ignored without --use-megatron-fsdp");
    if (GIVEN(MF_DEEPSPEED)) {
        /* Megatron-DeepSpeed: DeepSpeed's ZeRO replaces the distributed optimizer. */
        if (GIVEN(MF_ZERO_STAGE) && U(MF_ZERO_STAGE) > 3)
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "--zero-stage %llu is not a ZeRO stage (0 to 3)",
                                (unsigned long long)U(MF_ZERO_STAGE));
        zero = deepspeed_bf16_optimizer_stage(vals, GIVEN(MF_ZERO_STAGE) ? U(MF_ZERO_STAGE) : 1); /* default 1 */
        if (!GIVEN(MF_ZERO_STAGE))
            m4d_imp_warn(imp, "--deepspeed without --zero-stage: the ZeRO stage is in the DeepSpeed config file; "
                         "taken as 1 (Megatron-DeepSpeed's default)");
        TRY(SET_L(l, MEM4D_LAYOUT_DIST_OPT, 0, "--deepspeed"));
    } else if (GIVEN(MF_ZERO_STAGE)) {
        m4d_imp_warn(imp, "--zero-stage is ignored without --deepspeed");
    }
    if (GIVEN(MF_DOPT_INST))
        TRY(SET_L(l, MEM4D_LAYOUT_DIST_OPT_INSTANCES, U(MF_DOPT_INST), "--num-distributed-optimizer-instances"));
    TRY(SET_L(l, MEM4D_LAYOUT_ALLGATHER_GROUPS, GIVEN(MF_AG_GROUP), "--create-all-gather-group"));
    /* Megatron FSDP's double buffers: asked for, or turned on by NCCL user
     * buffers (DistributedDataParallelConfig: nccl_ub needs them) or the
     * max-pool variant; with Megatron's DDP --use-nccl-ub allocates the same
     * parameter and gradient buffers through NCCL's allocator: nothing more. */
    bool fsdp = GIVEN(MF_MEGATRON_FSDP) || GIVEN(MF_CUSTOM_FSDP);
    bool dbl = GIVEN(MF_FSDP_DOUBLE) || GIVEN(MF_FSDP_MAXPOOL) || (fsdp && GIVEN(MF_NCCL_UB));
    if (dbl && !fsdp)
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--%s needs --use-megatron-fsdp",
                            GIVEN(MF_FSDP_DOUBLE) ? "fsdp-double-buffer" : "megatron-fsdp-max-pool-double-buffer");
    TRY(SET_L(l, MEM4D_LAYOUT_ZERO_STAGE, zero, "--data-parallel-sharding-strategy"));
    return SET_L(l, MEM4D_LAYOUT_FSDP_DOUBLE_BUFFER, dbl && zero >= 2, "--fsdp-double-buffer");
}

/* The legacy spelling of full recomputation (Megatron-LM before 2022, and
 * Megatron-DeepSpeed today): --checkpoint-activations is uniform over
 * --checkpoint-num-layers (default 1); Megatron-LM 3.0's
 * --activations-checkpoint-method/-num-layers (default 1) name it. */
static bool legacy_recompute(const struct m4d_opt_val *vals, uint64_t *method, uint64_t *layers)
{
    if (!GIVEN(MF_CKPT_ACT) && !GIVEN(MF_ACT_CKPT_METHOD))
        return false;
    *method = GIVEN(MF_ACT_CKPT_METHOD) ? U(MF_ACT_CKPT_METHOD) : 0;
    *layers = GIVEN(MF_ACT_CKPT_LAYERS) ? U(MF_ACT_CKPT_LAYERS) : GIVEN(MF_CKPT_NUM_LAYERS) ? U(MF_CKPT_NUM_LAYERS) : 1;
    return true;
}

/* --moe-layer-recompute (deprecated in Megatron-Core's TransformerConfig)
 * is selective recomputation with "moe" added to the modules; it refuses
 * full granularity. */
static mem4d_status apply_recompute(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_layout *l)
{
    uint64_t rc = 0, method = 0, layers = 0;
    if (GIVEN(MF_RC_ACT))
        rc = 1;
    else if (GIVEN(MF_RC_GRAN))
        rc = U(MF_RC_GRAN) == M4D_GRAN_FULL ? 2 : 1;
    if (GIVEN(MF_MOE_LAYER_RC)) {
        if (rc == 2)
            return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--moe-layer-recompute contradicts --recompute-granularity full");
        rc = 1;
    }
    if (rc == 2) {
        method = U(MF_RC_METHOD);
        layers = U(MF_RC_LAYERS);
    } else if (rc == 0 && legacy_recompute(vals, &method, &layers)) {
        rc = 2;
    } else if (GIVEN(MF_RC_METHOD) || GIVEN(MF_RC_LAYERS)) {
        m4d_imp_warn(imp, "--recompute-method and --recompute-num-layers are ignored without "
                     "--recompute-granularity full");
    }
    if (rc != 2 && (GIVEN(MF_CKPT_ACT) || GIVEN(MF_ACT_CKPT_METHOD)))
        m4d_imp_warn(imp, "--checkpoint-activations and --activations-checkpoint-method are ignored beside "
                     "--recompute-activations or --recompute-granularity");
    if (GIVEN(MF_DIST_SAVED) && (rc != 2 || l->v[MEM4D_LAYOUT_TP] < 2))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--distribute-saved-activations needs full recomputation and "
                            "--tensor-model-parallel-size above 1");
    if (GIVEN(MF_RC_MODULES) && rc != 1)
        m4d_imp_warn(imp, "--recompute-modules is ignored without --recompute-granularity selective");
    uint64_t modules = GIVEN(MF_RC_MODULES) ? U(MF_RC_MODULES) : M4D_RC_CORE_ATTN;
    if (GIVEN(MF_MOE_LAYER_RC))
        modules |= M4D_RC_MOE;
    TRY(SET_L(l, MEM4D_LAYOUT_RECOMPUTE_MODULES, modules, "--recompute-modules"));
    TRY(SET_L(l, MEM4D_LAYOUT_RECOMPUTE, rc, "--recompute-granularity"));
    TRY(SET_L(l, MEM4D_LAYOUT_RECOMPUTE_METHOD, method, "--recompute-method"));
    TRY(SET_L(l, MEM4D_LAYOUT_DISTRIBUTE_SAVED_ACTIVATIONS, GIVEN(MF_DIST_SAVED), "--distribute-saved-activations"));
    return SET_L(l, MEM4D_LAYOUT_RECOMPUTE_LAYERS, layers, "--recompute-num-layers");
}

/* Flash attention: Transformer Engine (Megatron's default implementation)
 * picks a fused kernel unless told otherwise; the local implementation
 * needs --use-flash-attn. Set (mem4d_layout::flash_set) where a flag says
 * it; a log with none (Megatron-LM of 2022, Megatron-DeepSpeed: neither
 * has --transformer-impl) leaves the job's attention to the device's stack
 * (m4d_attention_fused()). */
static mem4d_status apply_attention(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_layout *l)
{
    bool flash = true;
    if (GIVEN(MF_ATTN_BACKEND))
        flash = U(MF_ATTN_BACKEND) != M4D_BACKEND_UNFUSED && U(MF_ATTN_BACKEND) != M4D_BACKEND_LOCAL;
    else if (GIVEN(MF_TE_IMPL) && U(MF_TE_IMPL) == M4D_IMPL_LOCAL)
        flash = GIVEN(MF_FLASH);
    if (GIVEN(MF_FLASH))
        flash = true;
    mem4d_status st = SET_L(l, MEM4D_LAYOUT_FLASH_ATTN, flash, "--use-flash-attn");
    l->flash_set = GIVEN(MF_ATTN_BACKEND) || GIVEN(MF_TE_IMPL) || GIVEN(MF_FLASH);
    return st;
}

/* --cp-comm-type (nargs='+', default p2p): one word for every layer, or
 * one per layer, handed to Transformer Engine's attention as its
 * cp_comm_type (TEDotProductAttention, megatron/core/extensions/
 * transformer_engine.py at NVIDIA/Megatron-LM@d98e8a6). The step time
 * models two of TE's four: p2p (the ring, layout key cp_comm_type 0) and
 * all_gather (1). a2a (Ulysses: Q, K, V and the output exchanged
 * all-to-all, heads split over the group), a2a+p2p (a2a inside
 * --hierarchical-context-parallel-sizes' inner groups, the ring across
 * them) and a list mixing kinds are not modelled: the ring's cost stands
 * in, and a warning says so. At context-parallel size 1 TE gets no CP
 * group and the word does nothing. */
static mem4d_status apply_context_parallel(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_layout *l)
{
    uint64_t bits = GIVEN(MF_CP_COMM) ? U(MF_CP_COMM) : UINT64_C(1) << M4D_CP_P2P;
    uint64_t ag = (UINT64_C(1) << M4D_CP_ALL_GATHER) | (UINT64_C(1) << M4D_CP_ALLGATHER);
    bool cp = l->v[MEM4D_LAYOUT_CP] > 1;
    unsigned words = vals[MF_CP_COMM].words;
    /* TransformerConfig.__post_init__ asserts it when cp > 1 */
    if (cp && words > 1 && GIVEN(MF_NUM_LAYERS) && words != U(MF_NUM_LAYERS))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--cp-comm-type lists %u types but --num-layers is %llu "
                            "(Megatron-LM wants one type, or one per layer)", words,
                            (unsigned long long)U(MF_NUM_LAYERS));
    bool all_gather = (bits & ag) == bits;
    if (cp && !all_gather && (bits & ~(UINT64_C(1) << M4D_CP_P2P)) != 0) {
        const char *what = bits & (UINT64_C(1) << M4D_CP_A2A_P2P) ? "a2a+p2p (hierarchical: all-to-all inside "
                           "the inner groups, the ring across them)" : bits & (UINT64_C(1) << M4D_CP_A2A) ?
                           "a2a (Ulysses: Q, K, V and the output exchanged all-to-all)" :
                           "a per-layer mix of p2p and all_gather";
        m4d_imp_warn(imp, "--cp-comm-type: %s is not modelled; the step time charges context parallelism the "
                     "ring's (p2p) transfers instead", what);
        all_gather = false;
    }
    if (cp && all_gather && (bits & (UINT64_C(1) << M4D_CP_ALLGATHER)))
        m4d_imp_warn(imp, "--cp-comm-type allgather: Transformer Engine's attention names it all_gather and "
                     "raises on 'allgather' (only the DSA attention takes either); read as all_gather");
    return SET_L(l, MEM4D_LAYOUT_CP_COMM_TYPE, all_gather, "--cp-comm-type");
}

/* World size and, as Megatron-LM does without --global-batch-size, a
 * global batch of one micro-batch per data-parallel rank. */
static mem4d_status apply_world(mem4d_import *imp, const struct m4d_opt_val *vals, uint64_t world,
                                mem4d_layout *l)
{
    if (world) {
        TRY(SET_L(l, MEM4D_LAYOUT_WORLD, world, "world size"));
        TRY(SET_L(l, MEM4D_LAYOUT_DP, 0, "world size"));
    }
    if (GIVEN(MF_GBS))
        return m4d_megatron_set_layout(imp, l, MEM4D_LAYOUT_GLOBAL_BATCH, MF_GBS, U(MF_GBS));
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
    m4d_imp_reset(imp);
    if (argc < 0 || (argc > 0 && !argv) || !model || !layout)
        return m4d_imp_fail(imp, MEM4D_E_INVALID_ARG, "NULL argument vector, model or layout");

    struct m4d_opt_val vals[MF_COUNT];
    memset(vals, 0, sizeof vals);
    mem4d_model m = *model;
    mem4d_layout l = *layout;
    uint64_t world = 0;
    mem4d_status st = m4d_megatron_scan(imp, argc, argv, vals);
    if (st == MEM4D_OK)
        st = check_conflicts(imp, vals);
    if (st == MEM4D_OK)
        st = apply_model(imp, vals, &m);
    if (st == MEM4D_OK)
        st = apply_layout_basic(imp, vals, &m, &l);
    if (st == MEM4D_OK)
        st = m4d_megatron_apply_hybrid(imp, vals, &m, &l);
    if (st == MEM4D_OK)
        st = m4d_megatron_apply_dynamic_batch(imp, vals, &l);
    if (st == MEM4D_OK)
        st = apply_vocab(imp, vals, &m, &l);
    if (st == MEM4D_OK)
        st = apply_precision(imp, vals, &l);
    if (st == MEM4D_OK)
        st = apply_sharding(imp, vals, &l);
    if (st == MEM4D_OK)
        st = apply_moe_capacity(imp, vals, &l);
    if (st == MEM4D_OK)
        st = apply_cpu_offloading(imp, vals, &l);
    if (st == MEM4D_OK)
        st = apply_moe_dispatch(imp, vals, &m, &l);
    if (st == MEM4D_OK)
        st = apply_cuda_graphs(imp, vals, &l);
    if (st == MEM4D_OK)
        st = apply_fine_grained_offloading(imp, vals, &l);
    if (st == MEM4D_OK)
        st = apply_deferred_wgrad(imp, vals, &l);
    if (st == MEM4D_OK)
        st = apply_recompute(imp, vals, &l);
    if (st == MEM4D_OK)
        st = apply_attention(imp, vals, &l);
    if (st == MEM4D_OK)
        st = apply_context_parallel(imp, vals, &l);
    if (st == MEM4D_OK)
        st = m4d_megatron_read_pipeline(imp, vals, &m, &l);
    if (st == MEM4D_OK)
        st = m4d_megatron_apply_hybrid_segments(imp, vals, &l);
    if (st == MEM4D_OK)
        st = m4d_imp_alloc_conf(imp, envp, &l);
    if (st == MEM4D_OK)
        st = m4d_imp_world(imp, envp, world_size, &world);
    if (st == MEM4D_OK)
        st = apply_world(imp, vals, world, &l);
    if (st != MEM4D_OK) {
        imp->world_source = MEM4D_WORLD_NONE;
        m4d_imp_done(imp);
        return st;
    }
    m4d_imp_done(imp);
    *model = m;
    *layout = l;
    return MEM4D_OK;
}

