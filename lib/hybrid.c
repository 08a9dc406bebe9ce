/*
 * Hybrid models: the layer pattern (Megatron-Core's hybrid notation), the
 * parameters of each kind of layer, and what the Mamba-2 and Gated
 * DeltaNet layers keep for backward. Every term and its source is in
 * doc/full-model.md, "Hybrid layers".
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "private.h"

static bool known_symbol(char c)
{
    return c == 'M' || c == 'G' || c == '*' || c == '-' || c == 'E' || c == 'L';
}

/* The kind of (sym, width), appended when new; -1 when the table is full. */
static int kind_index(mem4d_model *m, char sym, uint32_t width)
{
    for (int i = 0; i < m->nkinds; i++)
        if (m->kinds[i].sym == sym && m->kinds[i].width == width)
            return i;
    if (m->nkinds >= M4D_MAX_LAYER_KINDS)
        return -1;
    m->kinds[m->nkinds] = (struct m4d_layer_kind){sym, width};
    return m->nkinds++;
}

mem4d_status mem4d_model_set_layer_pattern(mem4d_model *model, const char *pattern)
{
    if (!model || !pattern)
        return MEM4D_E_INVALID_ARG;
    mem4d_model m = *model;
    m.nlt = 0;
    m.nkinds = 0;
    for (const char *p = pattern; *p;) {
        char c = *p++;
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '"' || c == '\'')
            continue; /* as scripts quote it */
        if (!known_symbol(c))
            return MEM4D_E_PARSE;
        uint64_t width = 0;
        if (*p == '{') {
            if (c != '*' && c != '-')
                return MEM4D_E_PARSE;
            p++;
            if (*p < '0' || *p > '9')
                return MEM4D_E_PARSE;
            while (*p >= '0' && *p <= '9') {
                width = width * 10 + (uint64_t)(*p++ - '0');
                if (width > (1u << 22))
                    return MEM4D_E_RANGE;
            }
            if (*p++ != '}' || width == 0)
                return MEM4D_E_PARSE;
        }
        if (m.nlt >= M4D_MAX_PATTERN)
            return MEM4D_E_RANGE;
        int k = kind_index(&m, c, (uint32_t)width);
        if (k < 0)
            return MEM4D_E_RANGE;
        m.lt[m.nlt++] = (uint8_t)k;
    }
    *model = m;
    if (m.nlt)
        model->v[MEM4D_MODEL_NUM_LAYERS] = m.nlt;
    return MEM4D_OK;
}

size_t mem4d_model_get_layer_pattern(const mem4d_model *model, char *buf, size_t size)
{
    if (!model)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < model->nlt; i++) {
        const struct m4d_layer_kind *k = &model->kinds[model->lt[i]];
        char one[16];
        if (k->width)
            m4d_msg(one, sizeof one, "%c{%u}", k->sym, (unsigned)k->width);
        else
            m4d_msg(one, sizeof one, "%c", k->sym);
        for (const char *c = one; *c; c++, n++)
            if (buf && n + 1 < size)
                buf[n] = *c;
    }
    if (buf && size)
        buf[n < size ? n : size - 1] = '\0';
    return n;
}

/* Does the model have a layer of this symbol? */
static bool has_symbol(const mem4d_model *m, char sym)
{
    for (int i = 0; i < m->nkinds; i++)
        if (m->kinds[i].sym == sym)
            return true;
    return false;
}

mem4d_status m4d_pattern_check(const mem4d_model *m, char *why, size_t n)
{
    const uint64_t *v = m->v;
    if (!m->nlt)
        return MEM4D_OK;
    if (v[MEM4D_MODEL_NUM_LAYERS] != m->nlt) {
        m4d_msg(why, n, "num_layers %llu differs from the layer pattern's %u layers",
                (unsigned long long)v[MEM4D_MODEL_NUM_LAYERS], (unsigned)m->nlt);
        return MEM4D_E_MODEL;
    }
    /* an MTP module is counted as a GPT layer of the model's dimensions
     * (model.c pattern_total): only beside attention layers */
    if (v[MEM4D_MODEL_MTP_LAYERS] && !has_symbol(m, '*')) {
        m4d_msg(why, n, "multi-token prediction beside a layer pattern without attention layers is not modelled "
                        "(set mtp_num_layers to 0)");
        return MEM4D_E_MODEL;
    }
    if (has_symbol(m, 'E') && v[MEM4D_MODEL_NUM_EXPERTS] == 0) {
        m4d_msg(why, n, "the layer pattern has expert layers (E) but num_experts is 0");
        return MEM4D_E_MISSING;
    }
    if (!has_symbol(m, 'E') && v[MEM4D_MODEL_NUM_EXPERTS] != 0) {
        m4d_msg(why, n, "num_experts is %llu but the layer pattern has no expert layer (E)",
                (unsigned long long)v[MEM4D_MODEL_NUM_EXPERTS]);
        return MEM4D_E_MODEL;
    }
    if (has_symbol(m, 'M')) {
        uint64_t heads = v[MEM4D_MODEL_MAMBA_NUM_HEADS], g = v[MEM4D_MODEL_MAMBA_NUM_GROUPS];
        if (!heads && (2 * v[MEM4D_MODEL_HIDDEN_SIZE]) % v[MEM4D_MODEL_MAMBA_HEAD_DIM] != 0) {
            m4d_msg(why, n, "2 x hidden_size %llu is not a multiple of mamba_head_dim %llu (set mamba_num_heads)",
                    (unsigned long long)v[MEM4D_MODEL_HIDDEN_SIZE], (unsigned long long)v[MEM4D_MODEL_MAMBA_HEAD_DIM]);
            return MEM4D_E_MODEL;
        }
        if (!heads)
            heads = 2 * v[MEM4D_MODEL_HIDDEN_SIZE] / v[MEM4D_MODEL_MAMBA_HEAD_DIM];
        if (heads % g != 0) { /* Megatron's MambaMixer asserts it */
            m4d_msg(why, n, "%llu Mamba heads are not a multiple of mamba_num_groups %llu",
                    (unsigned long long)heads, (unsigned long long)g);
            return MEM4D_E_MODEL;
        }
    }
    if (has_symbol(m, 'G')) {
        uint64_t kh = v[MEM4D_MODEL_LINEAR_KEY_HEADS], vh = v[MEM4D_MODEL_LINEAR_VALUE_HEADS];
        if (!kh || !vh) {
            m4d_msg(why, n, "Gated DeltaNet layers (G) need linear_num_key_heads and linear_num_value_heads");
            return MEM4D_E_MISSING;
        }
        if (vh % kh != 0) {
            m4d_msg(why, n, "linear_num_value_heads %llu is not a multiple of linear_num_key_heads %llu",
                    (unsigned long long)vh, (unsigned long long)kh);
            return MEM4D_E_MODEL;
        }
    }
    for (int i = 0; i < m->nkinds; i++) {
        const struct m4d_layer_kind *k = &m->kinds[i];
        if (k->sym == '-' && !k->width && !v[MEM4D_MODEL_FFN_HIDDEN_SIZE]) {
            m4d_msg(why, n, "the layer pattern's MLP layers (-) need ffn_hidden_size");
            return MEM4D_E_MISSING;
        }
        uint64_t a = v[MEM4D_MODEL_NUM_HEADS];
        if (k->sym == '*' && k->width && (k->width > a || a % k->width != 0)) {
            m4d_msg(why, n, "an attention layer's %u key/value heads do not divide %llu attention heads",
                    (unsigned)k->width, (unsigned long long)a);
            return MEM4D_E_MODEL;
        }
    }
    return MEM4D_OK;
}

void m4d_ctx_pattern(const mem4d_model *m, struct m4d_ctx *x)
{
    const uint64_t *v = m->v;
    x->nlt = m->nlt;
    x->lt = m->lt;
    x->nkinds = m->nkinds;
    x->kinds = m->kinds;
    x->ssm_n = v[MEM4D_MODEL_MAMBA_STATE_DIM];
    x->ssm_p = v[MEM4D_MODEL_MAMBA_HEAD_DIM];
    x->ssm_g = v[MEM4D_MODEL_MAMBA_NUM_GROUPS];
    x->ssm_heads = v[MEM4D_MODEL_MAMBA_NUM_HEADS] ? v[MEM4D_MODEL_MAMBA_NUM_HEADS] : 2 * x->h / x->ssm_p;
    x->conv_k = v[MEM4D_MODEL_CONV_KERNEL];
    x->gdn_kh = v[MEM4D_MODEL_LINEAR_KEY_HEADS];
    x->gdn_vh = v[MEM4D_MODEL_LINEAR_VALUE_HEADS];
    x->gdn_dk = v[MEM4D_MODEL_LINEAR_KEY_HEAD_DIM];
    x->gdn_dv = v[MEM4D_MODEL_LINEAR_VALUE_HEAD_DIM];
    x->out_gate = v[MEM4D_MODEL_ATTENTION_OUTPUT_GATE] != 0;
}

void m4d_kind_ctx(const struct m4d_ctx *x, const struct m4d_layer_kind *k, struct m4d_ctx *out)
{
    *out = *x;
    out->nlt = 0;
    out->norms = 1; /* one norm before the layer's one module */
    out->mtp = 0;
    if (k->sym != 'E') {
        out->experts = out->topk = out->fs = 0;
        out->shared_gate = false;
    }
    if (k->sym == '*') {
        out->f = 0;
        if (k->width)
            out->k = out->kv_heads = k->width;
        return;
    }
    /* no attention: its dimensions are zero */
    out->a = out->k = out->kv_heads = 0;
    out->q_lora = out->kv_lora = out->rope_dim = 0;
    out->qkv_bias = out->qk_norm = out->out_gate = out->sinks = false;
    out->idx_heads = out->idx_dim = out->idx_topk = 0;
    if (k->sym == '-' && k->width)
        out->f = k->width;
    if (k->sym != '-')
        out->f = 0;
}

/* Mamba-2 dimensions: d_inner = heads·P, the conv channels x, B, C
 * d_inner + 2·G·N, and in_proj's output z, x, B, C, dt: 2·d_inner + 2·G·N
 * + heads (Megatron-Core ssm/mamba_mixer.py; mamba_ssm's Mamba2). */
static uint64_t ssm_inner(const struct m4d_ctx *x) { return x->ssm_heads * x->ssm_p; }
static uint64_t ssm_conv_dim(const struct m4d_ctx *x) { return ssm_inner(x) + 2 * x->ssm_g * x->ssm_n; }
static uint64_t ssm_in_proj(const struct m4d_ctx *x) { return ssm_inner(x) + ssm_conv_dim(x) + x->ssm_heads; }

/* Gated DeltaNet dimensions (Megatron-Core ssm/gated_delta_net/common.py;
 * transformers' Qwen3NextGatedDeltaNet): qk = key heads·d_k, v = value
 * heads·d_v; in_proj's output q, k, v, z, beta, alpha: 2qk + 2v + 2·value
 * heads; the conv over q, k, v: 2qk + v channels. */
static uint64_t gdn_qk(const struct m4d_ctx *x) { return x->gdn_kh * x->gdn_dk; }
static uint64_t gdn_v(const struct m4d_ctx *x) { return x->gdn_vh * x->gdn_dv; }
static uint64_t gdn_in_proj(const struct m4d_ctx *x) { return 2 * gdn_qk(x) + 2 * gdn_v(x) + 2 * x->gdn_vh; }
static uint64_t gdn_conv_dim(const struct m4d_ctx *x) { return 2 * gdn_qk(x) + gdn_v(x); }

bool m4d_mixer_params(const struct m4d_ctx *x, char sym, uint64_t *split, uint64_t *repl)
{
    uint64_t norm = x->layernorm ? 2 : 1, a, b;
    *repl = norm * x->h; /* the layer's input norm */
    switch (sym) {
    case 'M':
        /* in_proj h x in, conv1d (weight and bias) conv·(K + 1), A_log,
         * dt_bias and D one per head, the gated norm d_inner, out_proj
         * d_inner x h: all split over t (Megatron asserts heads and
         * groups divide by t) */
        if (!m4d_mul(x->h, ssm_in_proj(x), &a) || !m4d_mul(ssm_conv_dim(x), x->conv_k + 1, &b) ||
            !m4d_add(a, b, split) || !m4d_mul(ssm_inner(x), x->h, &a) || !m4d_add(*split, a, split))
            return false;
        return m4d_add(*split, 3 * x->ssm_heads + ssm_inner(x), split);
    case 'G':
        /* in_proj h x in, conv1d (no bias) conv·K, A_log and dt_bias one per
         * value head, out_proj v x h, split over t; the gated norm over one
         * value head d_v is shared by the heads and replicated */
        if (!m4d_mul(x->h, gdn_in_proj(x), &a) || !m4d_mul(gdn_conv_dim(x), x->conv_k, &b) ||
            !m4d_add(a, b, split) || !m4d_mul(gdn_v(x), x->h, &a) || !m4d_add(*split, a, split))
            return false;
        *repl += x->gdn_dv;
        return m4d_add(*split, 2 * x->gdn_vh, split);
    case 'L':
        return m4d_mul(x->h, x->h, split); /* one h x h linear */
    default:
        *split = 0;
        return true;
    }
}

void m4d_mixer_token_bytes(const struct m4d_ctx *x, char sym, uint64_t *repl, uint64_t *split)
{
    *repl = 4 * x->h; /* the fused input norm keeps its input and its output, 2 bytes each */
    if (x->hidden_dropout)
        *repl += x->h; /* the residual dropout's one-byte mask */
    switch (sym) {
    case 'M':
        /* mamba_split_conv1d_scan_combined (mamba_ssm ops/triton/
         * ssd_combined.py, MambaSplitConv1dScanCombinedFn) saves the whole
         * in_proj output zxbcdt and the scan's pre-gate output out_x
         * (d_inner) and recomputes the conv, dt and the chunk states in
         * backward; then the group norm keeps its input and out_proj the
         * norm's output (d_inner each): 2 bytes each */
        *split = 2 * ssm_in_proj(x) + 6 * ssm_inner(x);
        return;
    case 'G':
        /* Megatron-Core's GatedDeltaNet.forward: the in_proj output (the conv
         * keeps its q, k, v and the norm its gate z, views of it), the conv
         * output (the L2 norms keep q and k, the kernel v), the L2-normalised
         * q and k, and fla's ChunkGatedDeltaRuleFunction's g (fp32) and beta
         * per value head and A (one 64-wide chunk row per value head); then
         * the gated norm's input (the kernel's output v) and out_proj's input v */
        *split = 2 * gdn_in_proj(x) + 2 * gdn_conv_dim(x) + 4 * gdn_qk(x) + (4 + 2 + 2 * 64) * x->gdn_vh +
                 4 * gdn_v(x);
        return;
    default: /* L: the linear's input is the norm's output, counted */
        *split = 0;
        return;
    }
}

/* mamba_ssm's chunked-scan chunk size (Megatron's MambaMixer chunk_size
 * 128) and fla's gated-delta-rule chunk (64). */
#define SSM_CHUNK 128
#define GDN_CHUNK 64

uint64_t m4d_mixer_backward_token_bytes(const struct m4d_ctx *x, char sym)
{
    uint64_t in, conv;
    switch (sym) {
    case 'M':
        /* MambaSplitConv1dScanCombinedFn.backward: the gradient of zxbcdt,
         * the recomputed conv output xBC and its gradient dxBC (2 bytes
         * each), and _mamba_chunk_scan_combined_bwd's recomputed chunk
         * states and their gradient dstates in fp32 (heads·P·N per chunk of
         * 128 tokens each) and C·Bᵀ in fp32 (G·128 per token) */
        in = ssm_in_proj(x), conv = ssm_conv_dim(x);
        return 2 * in + 4 * conv + 8 * ssm_inner(x) * x->ssm_n / SSM_CHUNK + 4 * x->ssm_g * SSM_CHUNK;
    case 'G':
        /* fla's chunk_gated_delta_rule_bwd: the gradient of the in_proj
         * output, the recomputed w and u (d_k and d_v per value head), the
         * recomputed chunk states h and their gradient dh (value heads·d_k·d_v
         * per chunk of 64 tokens, 2 bytes), dq, dk, dv */
        in = gdn_in_proj(x), conv = gdn_conv_dim(x);
        return 2 * in + 2 * x->gdn_vh * (x->gdn_dk + x->gdn_dv) + 4 * x->gdn_vh * x->gdn_dk * x->gdn_dv / GDN_CHUNK +
               2 * conv;
    default:
        return 2 * x->h;
    }
}

uint64_t m4d_pattern_kind_count(const struct m4d_ctx *x, uint64_t first, uint64_t n, uint64_t *counts)
{
    memset(counts, 0, sizeof *counts * x->nkinds);
    uint64_t end = first + n > x->nlt ? x->nlt : first + n;
    for (uint64_t i = first; i < end; i++)
        counts[x->lt[i]]++;
    return end > first ? end - first : 0;
}

#define U(v) ((unsigned long long)(v))

mem4d_status m4d_pattern_layout_check(const struct m4d_ctx *x, char *why, size_t n)
{
    if (!x->nlt)
        return MEM4D_OK;
    if (x->mode == MEM4D_MODE_PAPER) {
        m4d_msg(why, n, "paper mode's formulas are those of uniform transformer layers; a model with a layer "
                        "pattern (Mamba, Gated DeltaNet or per-layer widths) needs mode full");
        return MEM4D_E_UNSUPPORTED;
    }
    if (x->fw != MEM4D_FRAMEWORK_MEGATRON) {
        m4d_msg(why, n, "a model with a layer pattern is modelled as Megatron-Core trains it (framework megatron)");
        return MEM4D_E_UNSUPPORTED;
    }
    for (uint64_t i = 0; i < x->nkinds; i++) {
        const struct m4d_layer_kind *k = &x->kinds[i];
        if (k->sym == 'M' && (x->ssm_heads % x->t || x->ssm_g % x->t)) {
            m4d_msg(why, n, "%llu Mamba heads in %llu groups are not divisible by tp %llu "
                    "(Megatron's MambaMixer splits both)", U(x->ssm_heads), U(x->ssm_g), U(x->t));
            return MEM4D_E_HEADS_TP;
        }
        if (k->sym == 'G' && (x->gdn_kh % x->t || x->gdn_vh % x->t)) {
            m4d_msg(why, n, "Gated DeltaNet's %llu key and %llu value heads are not divisible by tp %llu",
                    U(x->gdn_kh), U(x->gdn_vh), U(x->t));
            return MEM4D_E_HEADS_TP;
        }
        if (k->sym == '*' && k->width && k->width % x->t) {
            m4d_msg(why, n, "an attention layer's %u key/value heads are not divisible by tp %llu",
                    (unsigned)k->width, U(x->t));
            return MEM4D_E_KV_HEADS_TP;
        }
        if (k->sym == '-' && k->width && k->width % x->t) {
            m4d_msg(why, n, "an MLP layer's FFN size %u is not divisible by tp %llu", (unsigned)k->width, U(x->t));
            return MEM4D_E_DIM_TP;
        }
    }
    return MEM4D_OK;
}
