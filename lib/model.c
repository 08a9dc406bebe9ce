/*
 * The model handle: architecture parameters, presets, consistency checks and
 * parameter counts.
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>

#include "private.h"

#define NP M4D_MODEL_NPARAM

static void apply_preset(mem4d_model *m, const struct m4d_model_preset *p)
{
    m4d_param_defaults(m4d_model_params, NP, m->v);
    for (size_t i = 0; i < NP; i++)
        if (p->v[i])
            m->v[i] = p->v[i] == M4D_ZERO ? 0 : p->v[i];
    m4d_strlcpy(m->name, p->name, sizeof m->name);
}

mem4d_status mem4d_model_new(mem4d_model **out)
{
    if (!out)
        return MEM4D_E_INVALID_ARG;
    *out = calloc(1, sizeof **out);
    if (!*out)
        return MEM4D_E_NOMEM;
    m4d_param_defaults(m4d_model_params, NP, (*out)->v);
    m4d_strlcpy((*out)->name, "custom", sizeof (*out)->name);
    return MEM4D_OK;
}

mem4d_status mem4d_model_new_preset(const char *name, mem4d_model **out)
{
    if (!out)
        return MEM4D_E_INVALID_ARG;
    *out = NULL;
    if (!name)
        return MEM4D_E_INVALID_ARG;
    for (size_t i = 0; i < m4d_model_preset_n; i++) {
        if (!m4d_streq_ci(name, m4d_model_presets[i].name))
            continue;
        mem4d_status st = mem4d_model_new(out);
        if (st == MEM4D_OK)
            apply_preset(*out, &m4d_model_presets[i]);
        return st;
    }
    return MEM4D_E_UNKNOWN_PRESET;
}

mem4d_status mem4d_model_clone(const mem4d_model *model, mem4d_model **out)
{
    if (!out)
        return MEM4D_E_INVALID_ARG;
    *out = NULL;
    if (!model)
        return MEM4D_E_INVALID_ARG;
    *out = malloc(sizeof **out);
    if (!*out)
        return MEM4D_E_NOMEM;
    **out = *model;
    return MEM4D_OK;
}

void mem4d_model_free(mem4d_model *model)
{
    free(model);
}

mem4d_status mem4d_model_set(mem4d_model *model, mem4d_model_param key, uint64_t value)
{
    if (!model)
        return MEM4D_E_INVALID_ARG;
    return m4d_param_set(m4d_model_params, NP, model->v, (int)key, value);
}

mem4d_status mem4d_model_get(const mem4d_model *model, mem4d_model_param key, uint64_t *value)
{
    if (!model || !value || (unsigned)key >= NP)
        return MEM4D_E_INVALID_ARG;
    *value = model->v[key];
    return MEM4D_OK;
}

mem4d_status mem4d_model_set_str(mem4d_model *model, const char *name, const char *value)
{
    if (!model || !name || !value)
        return MEM4D_E_INVALID_ARG;
    if (m4d_name_eq(name, "layer_pattern") || m4d_name_eq(name, "hybrid_override_pattern"))
        return mem4d_model_set_layer_pattern(model, value);
    return m4d_param_set_str(m4d_model_params, NP, model->v, name, value);
}

const char *mem4d_model_name(const mem4d_model *model)
{
    return model ? model->name : "";
}

mem4d_status mem4d_model_set_name(mem4d_model *model, const char *name)
{
    if (!model || !name)
        return MEM4D_E_INVALID_ARG;
    m4d_strlcpy(model->name, name, sizeof model->name);
    return MEM4D_OK;
}

size_t mem4d_model_preset_count(void)
{
    return m4d_model_preset_n;
}

const char *mem4d_model_preset_name(size_t index)
{
    return index < m4d_model_preset_n ? m4d_model_presets[index].name : NULL;
}

size_t mem4d_model_param_count(void)
{
    return NP;
}

const char *mem4d_model_param_name(mem4d_model_param key)
{
    return (unsigned)key < NP ? m4d_model_params[key].name : NULL;
}

mem4d_status mem4d_model_param_from_name(const char *name, mem4d_model_param *key)
{
    if (!name || !key)
        return MEM4D_E_INVALID_ARG;
    int k = m4d_param_lookup(m4d_model_params, NP, name);
    if (k < 0)
        return MEM4D_E_UNKNOWN_KEY;
    *key = (mem4d_model_param)k;
    return MEM4D_OK;
}

mem4d_status mem4d_model_param_bounds(mem4d_model_param key, uint64_t *min, uint64_t *max)
{
    return m4d_param_bounds(m4d_model_params, NP, (int)key, min, max);
}

/* Checks that do not depend on the layout. */
mem4d_status m4d_model_check(const mem4d_model *m, char *why, size_t n)
{
    static const mem4d_model_param required[] = {
        MEM4D_MODEL_HIDDEN_SIZE, MEM4D_MODEL_NUM_LAYERS, MEM4D_MODEL_NUM_HEADS, MEM4D_MODEL_VOCAB_SIZE,
    };
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        if (m->v[required[i]] == 0) {
            m4d_msg(why, n, "model parameter %s is not set", m4d_model_params[required[i]].name);
            return MEM4D_E_MISSING;
        }
    }
    const uint64_t *v = m->v;
    uint64_t h = v[MEM4D_MODEL_HIDDEN_SIZE], a = v[MEM4D_MODEL_NUM_HEADS];
    uint64_t k = v[MEM4D_MODEL_NUM_KV_HEADS] ? v[MEM4D_MODEL_NUM_KV_HEADS] : a;
    uint64_t experts = v[MEM4D_MODEL_NUM_EXPERTS];
    if (v[MEM4D_MODEL_FFN_HIDDEN_SIZE] == 0 && (experts == 0 || v[MEM4D_MODEL_EXPERT_FFN_SIZE] == 0) &&
        !m->nlt) {
        m4d_msg(why, n, "model parameter ffn_hidden_size is not set");
        return MEM4D_E_MISSING;
    }
    if (v[MEM4D_MODEL_HEAD_DIM] == 0 && h % a != 0) {
        m4d_msg(why, n, "hidden size %llu is not divisible by %llu attention heads (set kv_channels)",
                (unsigned long long)h, (unsigned long long)a);
        return MEM4D_E_MODEL;
    }
    if (k > a || a % k != 0) {
        m4d_msg(why, n, "%llu attention heads are not a multiple of %llu key/value heads",
                (unsigned long long)a, (unsigned long long)k);
        return MEM4D_E_MODEL;
    }
    if (experts > 0 && (v[MEM4D_MODEL_EXPERT_TOPK] == 0 || v[MEM4D_MODEL_EXPERT_TOPK] > experts)) {
        m4d_msg(why, n, "moe_router_topk %llu must be between 1 and num_experts %llu",
                (unsigned long long)v[MEM4D_MODEL_EXPERT_TOPK], (unsigned long long)experts);
        return MEM4D_E_MODEL;
    }
    uint64_t period = v[MEM4D_MODEL_MOE_LAYER_FREQ];
    if (period < 64 && (v[MEM4D_MODEL_MOE_LAYER_MASK] >> period) != 0) {
        m4d_msg(why, n, "moe_layer_mask %#llx has bits beyond its period of %llu layers",
                (unsigned long long)v[MEM4D_MODEL_MOE_LAYER_MASK], (unsigned long long)period);
        return MEM4D_E_MODEL;
    }
    uint64_t wp = v[MEM4D_MODEL_WINDOW_LAYER_FREQ];
    if (wp < 64 && (v[MEM4D_MODEL_WINDOW_LAYER_MASK] >> wp) != 0) {
        m4d_msg(why, n, "window_layer_mask %#llx has bits beyond its period of %llu layers",
                (unsigned long long)v[MEM4D_MODEL_WINDOW_LAYER_MASK], (unsigned long long)wp);
        return MEM4D_E_MODEL;
    }
    if (v[MEM4D_MODEL_WINDOW_SIZE] && v[MEM4D_MODEL_ATTENTION_CHUNK_SIZE]) {
        m4d_msg(why, n, "window_size %llu and attention_chunk_size %llu are both set: the local layers (window_layer_*) "
                "are either sliding or chunked; set one of them to 0",
                (unsigned long long)v[MEM4D_MODEL_WINDOW_SIZE], (unsigned long long)v[MEM4D_MODEL_ATTENTION_CHUNK_SIZE]);
        return MEM4D_E_MODEL;
    }
    if (v[MEM4D_MODEL_KV_LORA_RANK] && (v[MEM4D_MODEL_QK_HEAD_DIM] == 0 || v[MEM4D_MODEL_V_HEAD_DIM] == 0)) {
        m4d_msg(why, n, "multi-latent attention (kv_lora_rank %llu) needs qk_head_dim and v_head_dim",
                (unsigned long long)v[MEM4D_MODEL_KV_LORA_RANK]);
        return MEM4D_E_MODEL;
    }
    if (experts > 0 && v[MEM4D_MODEL_MOE_FIRST_DENSE] > 0 && v[MEM4D_MODEL_FFN_HIDDEN_SIZE] == 0) {
        m4d_msg(why, n, "%llu dense layers (first_k_dense_replace) need ffn_hidden_size",
                (unsigned long long)v[MEM4D_MODEL_MOE_FIRST_DENSE]);
        return MEM4D_E_MISSING;
    }
    if (v[MEM4D_MODEL_DSA_INDEX_HEADS] &&
        (!v[MEM4D_MODEL_KV_LORA_RANK] || !v[MEM4D_MODEL_DSA_INDEX_HEAD_DIM] || !v[MEM4D_MODEL_DSA_INDEX_TOPK])) {
        m4d_msg(why, n, "the sparse-attention indexer (dsa_indexer_n_heads %llu) needs multi-latent attention "
                "(kv_lora_rank), dsa_indexer_head_dim and dsa_indexer_topk",
                (unsigned long long)v[MEM4D_MODEL_DSA_INDEX_HEADS]);
        return MEM4D_E_MODEL;
    }
    /* LatentMoE's projections are an expert layer's (Megatron-Core moe_layer.py
     * fc1_latent_proj / fc2_latent_proj); a latent as wide as h compresses nothing
     * (the LatentMoE paper, arXiv:2601.18089: the latent dimension is below d) */
    if (v[MEM4D_MODEL_MOE_LATENT_SIZE] && (experts == 0 || v[MEM4D_MODEL_MOE_LATENT_SIZE] >= v[MEM4D_MODEL_HIDDEN_SIZE])) {
        m4d_msg(why, n, experts == 0 ? "moe_latent_size %llu is set but num_experts is 0"
                                     : "moe_latent_size %llu must be below hidden_size %llu",
                (unsigned long long)v[MEM4D_MODEL_MOE_LATENT_SIZE], (unsigned long long)v[MEM4D_MODEL_HIDDEN_SIZE]);
        return MEM4D_E_MODEL;
    }
    if (experts == 0 && v[MEM4D_MODEL_EXPERT_TOPK] != 0) {
        m4d_msg(why, n, "moe_router_topk %llu is set but num_experts is 0",
                (unsigned long long)v[MEM4D_MODEL_EXPERT_TOPK]);
        return MEM4D_E_MODEL;
    }
    return m4d_pattern_check(m, why, n);
}

mem4d_status mem4d_model_validate(const mem4d_model *model, char *why, size_t why_size)
{
    if (!model) {
        m4d_msg(why, why_size, "the model is NULL");
        return MEM4D_E_INVALID_ARG;
    }
    m4d_msg(why, why_size, "%s", "");
    return m4d_model_check(model, why, why_size);
}

/* Fill the model half of a context: for m4d_resolve(), and alone for
 * parameter counts without a layout. */
void m4d_ctx_model(const mem4d_model *m, struct m4d_ctx *x)
{
    const uint64_t *v = m->v;
    x->h = v[MEM4D_MODEL_HIDDEN_SIZE];
    x->f = v[MEM4D_MODEL_FFN_HIDDEN_SIZE];
    x->L = v[MEM4D_MODEL_NUM_LAYERS];
    x->a = v[MEM4D_MODEL_NUM_HEADS];
    x->k = v[MEM4D_MODEL_NUM_KV_HEADS] ? v[MEM4D_MODEL_NUM_KV_HEADS] : x->a;
    x->dh = v[MEM4D_MODEL_HEAD_DIM] ? v[MEM4D_MODEL_HEAD_DIM] : x->h / x->a;
    x->V = x->Vp = v[MEM4D_MODEL_VOCAB_SIZE];
    x->tied = v[MEM4D_MODEL_TIED_EMBEDDINGS] != 0;
    x->qkv_bias = v[MEM4D_MODEL_QKV_BIAS] != 0;
    x->layernorm = v[MEM4D_MODEL_NORM] == 1;
    x->gated = v[MEM4D_MODEL_GATED_MLP] != 0;
    x->experts = v[MEM4D_MODEL_NUM_EXPERTS];
    x->topk = v[MEM4D_MODEL_EXPERT_TOPK];
    x->fe = v[MEM4D_MODEL_EXPERT_FFN_SIZE] ? v[MEM4D_MODEL_EXPERT_FFN_SIZE] : x->f;
    x->fs = v[MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE];
    x->latent = v[MEM4D_MODEL_MOE_LATENT_SIZE];
    x->linear_bias = v[MEM4D_MODEL_LINEAR_BIAS] != 0;
    x->qk_norm = v[MEM4D_MODEL_QK_LAYERNORM] != 0;
    x->pos_rows = v[MEM4D_MODEL_POSITION_EMBEDDING] == 1 ? v[MEM4D_MODEL_MAX_POSITION] : 0;
    x->rope = v[MEM4D_MODEL_POSITION_EMBEDDING] == 0;
    x->alibi = v[MEM4D_MODEL_POSITION_EMBEDDING] == 2;
    x->moe_period = v[MEM4D_MODEL_MOE_LAYER_FREQ] ? v[MEM4D_MODEL_MOE_LAYER_FREQ] : 1;
    x->moe_mask = v[MEM4D_MODEL_MOE_LAYER_MASK];
    x->first_dense = v[MEM4D_MODEL_MOE_FIRST_DENSE];
    x->window = v[MEM4D_MODEL_WINDOW_SIZE];
    x->win_period = v[MEM4D_MODEL_WINDOW_LAYER_FREQ] ? v[MEM4D_MODEL_WINDOW_LAYER_FREQ] : 1;
    x->win_mask = v[MEM4D_MODEL_WINDOW_LAYER_MASK];
    x->win_first = v[MEM4D_MODEL_WINDOW_FIRST_FULL];
    x->chunk = v[MEM4D_MODEL_ATTENTION_CHUNK_SIZE];
    x->q_lora = v[MEM4D_MODEL_Q_LORA_RANK];
    x->kv_lora = v[MEM4D_MODEL_KV_LORA_RANK];
    x->rope_dim = x->kv_lora ? v[MEM4D_MODEL_QK_POS_EMB_HEAD_DIM] : 0;
    x->qk_dim = x->kv_lora ? v[MEM4D_MODEL_QK_HEAD_DIM] + x->rope_dim : x->dh;
    x->v_dim = x->kv_lora ? v[MEM4D_MODEL_V_HEAD_DIM] : x->dh;
    x->kv_heads = x->kv_lora ? x->a : x->k;
    x->mtp = v[MEM4D_MODEL_MTP_LAYERS];
    x->mtp_repeated = v[MEM4D_MODEL_MTP_REPEATED_LAYER] != 0;
    x->shared_gate = v[MEM4D_MODEL_SHARED_EXPERT_GATE] != 0;
    x->norms = v[MEM4D_MODEL_NORMS_PER_LAYER] ? v[MEM4D_MODEL_NORMS_PER_LAYER] : 2;
    x->qk_whole = v[MEM4D_MODEL_QK_NORM_WHOLE] != 0;
    x->sinks = v[MEM4D_MODEL_ATTENTION_SINKS] != 0;
    x->router_bias = v[MEM4D_MODEL_ROUTER_BIAS] != 0;
    x->expert_bias = v[MEM4D_MODEL_ROUTER_EXPERT_BIAS] != 0;
    x->sq_relu = v[MEM4D_MODEL_ACTIVATION] == 1;
    x->idx_heads = v[MEM4D_MODEL_DSA_INDEX_HEADS];
    x->idx_dim = v[MEM4D_MODEL_DSA_INDEX_HEAD_DIM];
    x->idx_topk = v[MEM4D_MODEL_DSA_INDEX_TOPK];
    x->idx_freq = v[MEM4D_MODEL_DSA_INDEX_TOPK_FREQ] ? v[MEM4D_MODEL_DSA_INDEX_TOPK_FREQ] : 1;
    x->idx_offset = v[MEM4D_MODEL_DSA_INDEX_SKIP_OFFSET];
    m4d_ctx_pattern(m, x);
}

void m4d_ctx_dense(const struct m4d_ctx *x, struct m4d_ctx *dense)
{
    *dense = *x;
    dense->experts = 0;
    dense->topk = 0;
    dense->fs = 0;
    dense->latent = 0;
}

/* Layers of [first, first + n) in a model's layer form: `zero` layers
 * first, then `period` layers (at most 64) whose `mask` bits are set, the
 * form of the expert layers and of the sliding-window ones. */
static uint64_t periodic_layers_in(uint64_t zero, uint64_t period, uint64_t mask, uint64_t first, uint64_t n)
{
    uint64_t end = first + n, count = 0;
    if (first < zero)
        first = zero < end ? zero : end;
    if (period == 1)
        return end - first; /* the mask of a period of one is 1 */
    /* Whole periods by their population, the rest one by one (period <= 64). */
    uint64_t whole = (end - first) / period;
    count = whole * (uint64_t)__builtin_popcountll(mask);
    for (uint64_t i = first + whole * period; i < end; i++)
        count += (mask >> ((i - zero) % period)) & 1u;
    return count;
}

uint64_t m4d_moe_layers_in(const struct m4d_ctx *x, uint64_t first, uint64_t n)
{
    if (!x->experts)
        return 0;
    if (x->nlt) { /* a layer pattern: its E layers */
        uint64_t counts[M4D_MAX_LAYER_KINDS], e = 0;
        m4d_pattern_kind_count(x, first, n, counts);
        for (uint64_t i = 0; i < x->nkinds; i++)
            e += x->kinds[i].sym == 'E' ? counts[i] : 0;
        return e;
    }
    return periodic_layers_in(x->first_dense, x->moe_period, x->moe_mask, first, n);
}

uint64_t m4d_local_layers_in(const struct m4d_ctx *x, uint64_t first, uint64_t n)
{
    return x->window || x->chunk ? periodic_layers_in(x->win_first, x->win_period, x->win_mask, first, n) : 0;
}

/* Biases of one MLP of width f (or of one expert): the first projection's
 * (2f when gated, split over t) and the second's h (replicated over t, as
 * Megatron's row-parallel bias is). */
static uint64_t mlp_bias_split(const struct m4d_ctx *x, uint64_t f) { return (x->gated ? 2 : 1) * f; }

/* An MLP of width fe between w-wide tokens, with its biases: (3 or 2)·w·fe
 * [+ (2 or 1)·fe + w]. */
static bool mlp_params_at(const struct m4d_ctx *x, uint64_t w, uint64_t fe, uint64_t *out)
{
    uint64_t mats = x->gated ? 3 : 2;
    if (!m4d_mul3(mats, w, fe, out))
        return false;
    return !x->linear_bias || m4d_add(*out, mlp_bias_split(x, fe) + w, out);
}

/* One expert's parameters (the shared expert's), h-wide. */
bool m4d_expert_params(const struct m4d_ctx *x, uint64_t fe, uint64_t *out)
{
    return mlp_params_at(x, x->h, fe, out);
}

/* One routed expert's parameters: at LatentMoE's latent width where there
 * is one (Megatron-Core experts.py: linear_fc1 moe_latent_size -> fe,
 * linear_fc2 fe -> moe_latent_size; transformers' NemotronHExperts alike). */
bool m4d_routed_expert_params(const struct m4d_ctx *x, uint64_t *out)
{
    return mlp_params_at(x, m4d_expert_width(x), x->fe, out);
}

/* LatentMoE's two projections of an expert layer, h x latent and latent x h,
 * with their biases (add_bias_linear): TELinear with parallel_mode
 * "duplicated", so whole on every tensor-parallel rank, and not expert
 * parameters (is_expert False: the dense data-parallel group's)
 * (Megatron-Core moe_layer.py, NVIDIA/Megatron-LM@d98e8a64). */
uint64_t m4d_latent_proj_params(const struct m4d_ctx *x)
{
    if (!x->latent || !x->experts)
        return 0;
    return 2 * x->h * x->latent + (x->linear_bias ? x->h + x->latent : 0);
}

/* P_attn = h·a·dh (Q) + 2·h·k·dh (K, V) + a·dh·h (O) [+ (a + 2k)·dh QKV biases];
 * P_mlp = (3 or 2)·h·f [+ its first projection's bias], or for MoE:
 * E experts (with their biases) + router h·E + shared expert (3 or 2)·h·fs,
 * the experts (3 or 2)·latent·fe with LatentMoE, whose projections 2·h·latent
 * join `repl`;
 * `repl` are the parameters replicated over tensor-parallel ranks: the norms
 * n·h (RMSNorm) or 2n·h (LayerNorm), n = 2 or Gemma's 4, per-head Q/K norms
 * 2·dh (4·dh) or OLMo 2's whole-projection ones (a + k)·dh, and with
 * biases on every linear layer the attention output's and the MLP's second
 * projection's h each. */
/* Multi-latent attention (DeepSeek-V2/V3; Megatron-Core's MLASelfAttention):
 * split over t, the up-projections q_b r_q·a·d_qk (or a full-rank query
 * projection h·a·d_qk), kv_b r_kv·a·(d_nope + d_v) and the output
 * a·d_v·h; replicated, the down-projections h·r_q and h·(r_kv + d_rope)
 * and their norms r_q + r_kv. d_qk = d_nope + d_rope. */
/* DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2; Megatron-Core
 * DSAIndexer, every projection "duplicated" over t): wq_b r_q x n_i·d_i (h
 * rows without a query compression), wk h x d_i, the key's LayerNorm 2·d_i
 * and weights_proj h x n_i, no biases. */
uint64_t m4d_dsa_indexer_params(const struct m4d_ctx *x)
{
    if (!x->idx_heads)
        return 0;
    uint64_t q_in = x->q_lora ? x->q_lora : x->h, wq, rest;
    if (!m4d_mul3(q_in, x->idx_heads, x->idx_dim, &wq) || !m4d_mul(x->h, x->idx_dim + x->idx_heads, &rest))
        return UINT64_MAX;
    return wq + rest + 2 * x->idx_dim;
}

/* Megatron-Core's is_dsa_skip_topk_layer (dsa.py): with --dsa-indexer-topk-freq
 * N > 1, layer n (counted from 1) past the offset o (at least 1) reuses the
 * top-k of the last layer with (n - o) % N == 0, and builds no indexer; the
 * first o layers all build one. GLM-5.2 (N 4, o 3): layers 1-3, 7, 11, ... */
uint64_t m4d_indexer_layers_in(const struct m4d_ctx *x, uint64_t first, uint64_t n)
{
    if (!x->idx_heads)
        return 0;
    if (x->idx_freq <= 1)
        return n;
    uint64_t o = x->idx_offset ? x->idx_offset : 1, count = 0;
    for (uint64_t i = first; i < first + n; i++)
        count += (i + 1 > o ? i + 1 - o : 0) % x->idx_freq == 0;
    return count;
}

static bool mla_params(const struct m4d_ctx *x, uint64_t *attn, uint64_t *repl)
{
    uint64_t q, kv, o, down, norm = x->layernorm ? 2 : 1;
    uint64_t q_in = x->q_lora ? x->q_lora : x->h, nope = x->qk_dim - x->rope_dim;
    if (!m4d_mul3(q_in, x->a, x->qk_dim, &q) || !m4d_mul3(x->kv_lora, x->a, nope + x->v_dim, &kv) ||
        !m4d_mul3(x->a, x->v_dim, x->h, &o) || !m4d_mul(x->h, x->q_lora + x->kv_lora + x->rope_dim, &down))
        return false;
    *attn = q + kv + o;
    *repl = down + norm * (x->q_lora + x->kv_lora);
    return *attn >= q && m4d_add(*repl, m4d_dsa_indexer_params(x), repl);
}

bool m4d_layer_params(const struct m4d_ctx *x, uint64_t *attn, uint64_t *mlp, uint64_t *repl)
{
    uint64_t q, kv, o, bias = 0, mats = x->gated ? 3 : 2, dense, mla_repl = 0;
    uint64_t norm = x->layernorm ? 2 : 1;
    if (x->kv_lora) {
        if (!mla_params(x, attn, &mla_repl))
            return false;
    } else {
        if (!m4d_mul3(x->h, x->a, x->dh, &q) || !m4d_mul3(2 * x->h, x->k, x->dh, &kv) || !m4d_add(q, q, &o))
            return false;
        if (x->out_gate && !m4d_add(o, q, &o)) /* the gate half of the query projection */
            return false;
        if (x->qkv_bias || x->linear_bias)
            bias = (x->a + 2 * x->k) * x->dh;
        if (!m4d_add(o, kv, attn) || !m4d_add(*attn, bias, attn))
            return false;
    }
    if (x->sinks)
        *attn += x->a; /* one sink logit per head */
    uint64_t qk = !x->qk_norm ? 0 : x->qk_whole ? (x->a + x->k) * x->dh : 2 * x->dh;
    *repl = x->norms * norm * x->h + norm * qk + (x->linear_bias ? x->h : 0) + mla_repl;
    if (x->experts == 0) {
        if (!m4d_mul3(mats, x->h, x->f, mlp))
            return false;
        if (x->linear_bias) {
            *mlp += mlp_bias_split(x, x->f);
            *repl += x->h;
        }
        return true;
    }
    uint64_t shared = 0, router;
    *repl += m4d_latent_proj_params(x); /* bounded: h and latent are below 2^20 */
    if (!m4d_routed_expert_params(x, &dense) || !m4d_mul(dense, x->experts, &dense) ||
        !m4d_mul(x->h + x->router_bias, x->experts, &router))
        return false;
    if (x->fs) {
        if (!m4d_mul3(mats, x->h, x->fs, &shared))
            return false;
        if (x->shared_gate)
            shared += x->h; /* shared-expert gate (Qwen-MoE) */
        if (x->linear_bias) {
            shared += mlp_bias_split(x, x->fs);
            *repl += x->h;
        }
    }
    return m4d_add(dense, router, mlp) && m4d_add(*mlp, shared, mlp);
}

/* Whole-model count for vocabulary V: L·P_layer + P_final_norm + V·h (+ V·h
 * untied) + a learned position table pos_rows·h. */
static bool one_layer(const struct m4d_ctx *x, uint64_t *out)
{
    uint64_t attn, mlp, repl;
    return m4d_layer_params(x, &attn, &mlp, &repl) && m4d_add(attn, mlp, out) && m4d_add(*out, repl, out);
}

/* A multi-token-prediction module (DeepSeek-V3; Megatron-Core's
 * MultiTokenPredictionLayer): a transformer layer, the projection eh_proj
 * 2h x h and three norms (of the embedding, of the hidden state, before the
 * shared head); the embedding and the head are the model's own. With
 * mtp_use_repeated_layer one module serves every depth
 * (multi_token_prediction.py: "only 1 layer is created and applied
 * mtp_num_layers times"). */
static bool mtp_params(const struct m4d_ctx *x, uint64_t layer, uint64_t *out)
{
    uint64_t each;
    if (!m4d_mul(2 * x->h, x->h, &each) || !m4d_add(each, layer, &each) ||
        !m4d_add(each, 3 * (x->layernorm ? 2 : 1) * x->h, &each))
        return false;
    return m4d_mul(each, m4d_mtp_modules(x), out);
}

/* One layer of kind k of a layer pattern: a Mamba-2, Gated DeltaNet or
 * linear layer with its norm, or the attention, MLP or expert half of a
 * dense layer with its norm. */
bool m4d_kind_params(const struct m4d_ctx *x, const struct m4d_layer_kind *k, uint64_t *out)
{
    uint64_t split, repl;
    if (m4d_is_mixer(k->sym))
        return m4d_mixer_params(x, k->sym, &split, &repl) && m4d_add(split, repl, out);
    struct m4d_ctx one;
    m4d_kind_ctx(x, k, &one);
    return one_layer(&one, out);
}

/* A layer pattern: each layer by its kind; MTP modules are GPT layers of
 * the model's dimensions (attention and, with experts, an expert MLP:
 * Qwen3-Next's MTP layer is a full-attention layer beside its Gated
 * DeltaNet ones). */
static bool pattern_total(const struct m4d_ctx *x, uint64_t *out)
{
    uint64_t counts[M4D_MAX_LAYER_KINDS], each, sum, mtp = 0;
    m4d_pattern_kind_count(x, 0, x->nlt, counts);
    *out = 0;
    for (uint64_t i = 0; i < x->nkinds; i++)
        if (!m4d_kind_params(x, &x->kinds[i], &each) || !m4d_mul(each, counts[i], &sum) || !m4d_add(*out, sum, out))
            return false;
    if (x->mtp && (!one_layer(x, &each) || !mtp_params(x, each, &mtp)))
        return false;
    return m4d_add(*out, mtp, out);
}

/* L_e expert layers and L - L_e dense ones (of width f), and the MTP modules
 * (expert layers when the model has experts). */
static bool layers_total(const struct m4d_ctx *x, uint64_t *out)
{
    if (x->nlt)
        return pattern_total(x, out);
    struct m4d_ctx dense;
    uint64_t moe = 0, each_moe = 0, each_dense = 0, le = m4d_moe_layers_in(x, 0, x->L), a, b, mtp = 0;
    m4d_ctx_dense(x, &dense);
    if ((le && !one_layer(x, &each_moe)) || (le < x->L && !one_layer(&dense, &each_dense)))
        return false;
    if (!m4d_mul(each_moe, le, &moe) || !m4d_mul(each_dense, x->L - le, &a) || !m4d_add(moe, a, &b))
        return false;
    /* layers that reuse another layer's top-k have no indexer (the MTP layers keep theirs) */
    uint64_t no_idx, idx_params = m4d_dsa_indexer_params(x);
    if (!m4d_mul(x->L - m4d_indexer_layers_in(x, 0, x->L), x->idx_heads ? idx_params : 0, &no_idx))
        return false;
    b -= no_idx;
    if (x->mtp && !mtp_params(x, x->experts ? each_moe : each_dense, &mtp))
        return false;
    return m4d_add(b, mtp, out);
}

bool m4d_model_params_total(const struct m4d_ctx *x, uint64_t V, uint64_t *out)
{
    uint64_t emb, total, pos;
    if (!layers_total(x, &total))
        return false;
    if (!m4d_mul(V, x->h, &emb) || !m4d_add(total, emb, &total) || !m4d_mul(x->pos_rows, x->h, &pos) ||
        !m4d_add(total, pos, &total))
        return false;
    if (!x->tied && !m4d_add(total, emb, &total))
        return false;
    return m4d_add(total, (x->layernorm ? 2 : 1) * x->h, out);
}

mem4d_status mem4d_model_num_params(const mem4d_model *model, uint64_t *count)
{
    if (!model || !count)
        return MEM4D_E_INVALID_ARG;
    mem4d_status st = m4d_model_check(model, NULL, 0);
    if (st != MEM4D_OK)
        return st;
    struct m4d_ctx x;
    memset(&x, 0, sizeof x);
    m4d_ctx_model(model, &x);
    return m4d_model_params_total(&x, x.V, count) ? MEM4D_OK : MEM4D_E_RANGE;
}
