/*
 * Import: Hugging Face config.json files (built only with json-c; without
 * it import_hf_none.c provides the same entry points).
 * SPDX-License-Identifier: MIT
 */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "import.h"

/* An integer member: absent (or null) leaves *given false; wrong types,
 * fractions and negative numbers are errors naming the key. */
static mem4d_status hf_uint(mem4d_import *imp, struct json_object *root, const char *key,
                            bool required, uint64_t *out, bool *given)
{
    struct json_object *v = NULL;
    *given = false;
    if (!json_object_object_get_ex(root, key, &v) || json_object_get_type(v) == json_type_null) {
        if (required)
            return m4d_imp_fail(imp, MEM4D_E_MISSING, "config.json has no \"%s\"", key);
        return MEM4D_OK;
    }
    switch (json_object_get_type(v)) {
    case json_type_int:
        if (json_object_get_int64(v) < 0)
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "\"%s\" is negative (%lld)", key,
                            (long long)json_object_get_int64(v));
        *out = json_object_get_uint64(v);
        if (*out == UINT64_MAX) /* json-c saturates larger numbers */
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "\"%s\" is too large", key);
        break;
    case json_type_double: {
        /* 4096.0 is an integer written oddly; 4096.5 and 1e30 are not. */
        double d = json_object_get_double(v);
        if (d < 0.0)
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "\"%s\" is negative (%g)", key, d);
        if (!(d <= 9007199254740992.0) || d != floor(d))
            return m4d_imp_fail(imp, MEM4D_E_JSON, "\"%s\" is %g, not a whole number", key, d);
        *out = (uint64_t)d;
        break;
    }
    default:
        return m4d_imp_fail(imp, MEM4D_E_JSON, "\"%s\" is a %s, not a number", key,
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
        return m4d_imp_fail(imp, MEM4D_E_JSON, "\"%s\" is a %s, not true or false", key,
                        json_type_to_name(json_object_get_type(v)));
    *out = json_object_get_boolean(v);
    return MEM4D_OK;
}

/* The architectures read, as data: what a family's layers are made of when
 * config.json does not say (transformers' modeling_*.py for each), and the
 * keys it names things with. A family with `extra` reads more keys there. */
struct hf_family {
    const char *model_type;
    bool gated, layernorm, tied; /* gated MLP, LayerNorm (else RMSNorm), tied embeddings by default */
    bool qkv_bias, linear_bias;  /* QKV biases; biases on every linear layer (by default) */
    bool qk_norm;                /* per-head query/key norms */
    uint8_t norms;               /* norms per layer */
    bool shared_gate;            /* Qwen-MoE's gated shared expert */
    mem4d_status (*extra)(mem4d_import *imp, struct json_object *root, mem4d_model *m);
};

static mem4d_status hf_deepseek(mem4d_import *imp, struct json_object *root, mem4d_model *m);
static mem4d_status hf_qwen1(mem4d_import *imp, struct json_object *root, mem4d_model *m);
static mem4d_status hf_qwen_moe(mem4d_import *imp, struct json_object *root, mem4d_model *m);
static mem4d_status hf_olmo2(mem4d_import *imp, struct json_object *root, mem4d_model *m);
static mem4d_status hf_biases(mem4d_import *imp, struct json_object *root, mem4d_model *m);
static mem4d_status hf_gpt_oss(mem4d_import *imp, struct json_object *root, mem4d_model *m);
static mem4d_status hf_dsa(mem4d_import *imp, struct json_object *root, mem4d_model *m);
static mem4d_status hf_glm4_moe(mem4d_import *imp, struct json_object *root, mem4d_model *m);
static mem4d_status hf_minimax_m2(mem4d_import *imp, struct json_object *root, mem4d_model *m);
static mem4d_status hf_llama4(mem4d_import *imp, struct json_object *root, mem4d_model *m);
static mem4d_status hf_mimo(mem4d_import *imp, struct json_object *root, mem4d_model *m);
static mem4d_status hf_olmoe(mem4d_import *imp, struct json_object *root, mem4d_model *m);
static mem4d_status hf_granite_moe(mem4d_import *imp, struct json_object *root, mem4d_model *m);
static mem4d_status hf_nemotron_h(mem4d_import *imp, struct json_object *root, mem4d_model *m);
static mem4d_status hf_qwen3_next(mem4d_import *imp, struct json_object *root, mem4d_model *m);
static mem4d_status hf_nemotron_nas(mem4d_import *imp, struct json_object *root, mem4d_model *m);

static const struct hf_family hf_families[] = {
    /* type             gated  LN     tied   qkvb   bias   qknorm norms gate   extra */
    {"llama",           true,  false, false, false, false, false, 2, false, hf_biases},
    {"mistral",         true,  false, false, false, false, false, 2, false, hf_biases},
    {"mixtral",         true,  false, false, false, false, false, 2, false, NULL},
    {"qwen2",           true,  false, false, true,  false, false, 2, false, NULL},
    {"qwen2_moe",       true,  false, false, true,  false, false, 2, true,  hf_qwen_moe},
    {"qwen3",           true,  false, false, false, false, true,  2, false, hf_biases},
    {"qwen3_moe",       true,  false, false, false, false, true,  2, false, hf_qwen_moe},
    {"qwen",            true,  false, false, true,  false, false, 2, false, hf_qwen1},
    {"gemma",           true,  false, true,  false, false, false, 2, false, hf_biases},
    {"gemma2",          true,  false, true,  false, false, false, 4, false, hf_biases},
    {"gemma3_text",     true,  false, true,  false, false, true,  4, false, hf_biases},
    {"phi3",            true,  false, false, false, false, false, 2, false, NULL},
    {"deepseek",        true,  false, false, false, false, false, 2, false, hf_deepseek},
    {"deepseek_v2",     true,  false, false, false, false, false, 2, false, hf_deepseek},
    {"deepseek_v3",     true,  false, false, false, false, false, 2, false, hf_deepseek},
    {"olmo2",           true,  false, false, false, false, true,  2, false, hf_olmo2},
    {"internlm2",       true,  false, false, false, false, false, 2, false, hf_biases},
    {"starcoder2",      false, true,  true,  true,  true,  false, 2, false, hf_biases},
    {"gpt_neox",        false, true,  false, true,  true,  false, 2, false, NULL},
    /* 2025-2026 families (transformers' modeling_*.py, or the model's own remote code) */
    {"gpt_oss",         true,  false, false, true,  true,  false, 2, false, hf_gpt_oss},
    {"kimi_k2",         true,  false, false, false, false, false, 2, false, hf_deepseek},
    {"deepseek_v32",    true,  false, false, false, false, false, 2, false, hf_dsa},
    {"glm_moe_dsa",     true,  false, false, false, false, false, 2, false, hf_dsa},
    {"glm4_moe",        true,  false, false, false, false, false, 2, false, hf_glm4_moe},
    {"minimax_m2",      true,  false, false, false, false, false, 2, false, hf_minimax_m2},
    {"llama4_text",     true,  false, false, false, false, false, 2, false, hf_llama4},
    {"qwen3_vl_text",   true,  false, false, false, false, true,  2, false, hf_biases},
    {"qwen3_vl_moe_text", true, false, false, false, false, true, 2, false, hf_qwen_moe},
    {"smollm3",         true,  false, true,  false, false, false, 2, false, hf_biases},
    {"mimo",            true,  false, false, true,  false, false, 2, false, hf_mimo},
    {"olmoe",           true,  false, false, false, false, true,  2, false, hf_olmoe},
    {"granite",         true,  false, true,  false, false, false, 2, false, hf_biases},
    {"granitemoe",      true,  false, true,  false, false, false, 2, false, hf_granite_moe},
    {"granitemoeshared", true, false, true,  false, false, false, 2, false, hf_granite_moe},
    /* hybrid and heterogeneous layers: a layer pattern (lib/hybrid.c) */
    {"nemotron_h",      false, false, false, false, false, false, 2, false, hf_nemotron_h},
    {"qwen3_next",      true,  false, false, false, false, true,  2, true,  hf_qwen3_next},
    {"qwen3_5_text",    true,  false, false, false, false, true,  2, true,  hf_qwen3_next},
    {"qwen3_5_moe_text", true, false, false, false, false, true,  2, true,  hf_qwen3_next},
    {"nemotron-nas",    true,  false, false, false, false, false, 2, false, hf_nemotron_nas},
};

/* The family of model_type; unknown ones only when the caller asked for a
 * Llama-like reading (mem4d_import_set_llama_like()), none as Llama. */
static mem4d_status hf_family_of(mem4d_import *imp, struct json_object *root, const struct hf_family **fam)
{
    struct json_object *v = NULL;
    *fam = &hf_families[0];
    if (!json_object_object_get_ex(root, "model_type", &v)) {
        /* Hand-written configs often omit it; what they name is Llama's vocabulary. */
        m4d_imp_warn(imp, "config.json has no \"model_type\"; read as a Llama-like model");
        return MEM4D_OK;
    }
    if (json_object_get_type(v) != json_type_string)
        return m4d_imp_fail(imp, MEM4D_E_JSON, "\"model_type\" is a %s, not a string",
                            json_type_to_name(json_object_get_type(v)));
    const char *t = json_object_get_string(v);
    for (size_t i = 0; i < sizeof hf_families / sizeof *hf_families; i++) {
        if (strcmp(t, hf_families[i].model_type) == 0) {
            *fam = &hf_families[i];
            return MEM4D_OK;
        }
    }
    char shown[65]; /* a long name is cut, at a character boundary */
    m4d_strlcpy(shown, t, sizeof shown);
    if (!imp->llama_like)
        return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "model_type \"%s\" is not an architecture this version "
                            "reads; mem4d_import_set_llama_like() reads it as a Llama-like decoder", shown);
    m4d_imp_warn(imp, "model_type \"%s\" is not an architecture this version reads; read as a Llama-like model",
                 shown);
    return MEM4D_OK;
}

/* The integer keys every family shares, and where they go. */
static const struct {
    const char *key;
    mem4d_model_param param;
    bool required;
} hf_keys[] = {
    {"hidden_size", MEM4D_MODEL_HIDDEN_SIZE, true},
    {"intermediate_size", MEM4D_MODEL_FFN_HIDDEN_SIZE, false}, /* required but for the layer-pattern families */
    {"num_hidden_layers", MEM4D_MODEL_NUM_LAYERS, true},
    {"num_attention_heads", MEM4D_MODEL_NUM_HEADS, true},
    {"vocab_size", MEM4D_MODEL_VOCAB_SIZE, true},
    {"num_key_value_heads", MEM4D_MODEL_NUM_KV_HEADS, false},
    {"head_dim", MEM4D_MODEL_HEAD_DIM, false},
    {"max_position_embeddings", MEM4D_MODEL_MAX_POSITION, false},
    {"num_local_experts", MEM4D_MODEL_NUM_EXPERTS, false},       /* Mixtral */
    {"num_experts", MEM4D_MODEL_NUM_EXPERTS, false},             /* Qwen-MoE */
    {"n_routed_experts", MEM4D_MODEL_NUM_EXPERTS, false},        /* DeepSeek */
    {"num_experts_per_tok", MEM4D_MODEL_EXPERT_TOPK, false},
    {"moe_intermediate_size", MEM4D_MODEL_EXPERT_FFN_SIZE, false},
    {"shared_expert_intermediate_size", MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE, false},
};

/* 0 is the library's "not set" for the key/value heads and the head
 * dimension; transformers divides by them: an explicit 0 is refused. */
static mem4d_status hf_size(mem4d_import *imp, const char *key, mem4d_model_param param, uint64_t v)
{
    if (v == 0 && (param == MEM4D_MODEL_NUM_KV_HEADS || param == MEM4D_MODEL_HEAD_DIM))
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "\"%s\": 0 is not a size; leave it out (or null) for the default",
                            key);
    return MEM4D_OK;
}

static mem4d_status hf_set(mem4d_import *imp, struct json_object *root, const char *key, mem4d_model *m,
                           mem4d_model_param param, bool *given)
{
    uint64_t v = 0;
    char what[64];
    TRY(hf_uint(imp, root, key, false, &v, given));
    if (*given)
        TRY(hf_size(imp, key, param, v));
    m4d_msg(what, sizeof what, "\"%s\"", key);
    return *given ? SET_M(m, param, v, what) : MEM4D_OK;
}

/* "attention_bias" (QKV and output projection), "mlp_bias", and the
 * single switches of InternLM 2 ("bias") and StarCoder 2 ("use_bias"). */
static mem4d_status hf_biases(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    bool attn = m->v[MEM4D_MODEL_QKV_BIAS] != 0, mlp = m->v[MEM4D_MODEL_LINEAR_BIAS] != 0, all = mlp;
    TRY(hf_bool(imp, root, "attention_bias", &attn));
    TRY(hf_bool(imp, root, "mlp_bias", &mlp));
    TRY(hf_bool(imp, root, "bias", &all));
    TRY(hf_bool(imp, root, "use_bias", &all));
    if (attn != mlp && attn != all)
        m4d_imp_warn(imp, "\"attention_bias\" without \"mlp_bias\": read as biases on every linear layer");
    bool linear = all || (attn && mlp);
    TRY(SET_M(m, MEM4D_MODEL_LINEAR_BIAS, linear || mlp, "\"mlp_bias\""));
    return SET_M(m, MEM4D_MODEL_QKV_BIAS, linear || attn, "\"attention_bias\"");
}

/* Qwen-MoE: an expert layer every "decoder_sparse_step" layers (the
 * (i + 1)-th is one when divisible) unless listed in "mlp_only_layers". */
static mem4d_status hf_qwen_moe(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    uint64_t step = 1;
    bool given;
    TRY(hf_uint(imp, root, "decoder_sparse_step", false, &step, &given));
    struct json_object *v = NULL;
    if (json_object_object_get_ex(root, "mlp_only_layers", &v) && json_object_get_type(v) == json_type_array &&
        json_object_array_length(v) > 0)
        return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "\"mlp_only_layers\" lists dense layers; only a regular "
                            "pattern of expert layers is read");
    if (step == 0 || step > 64)
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "\"decoder_sparse_step\" %llu must be between 1 and 64",
                            (unsigned long long)step);
    TRY(SET_M(m, MEM4D_MODEL_MOE_LAYER_FREQ, step, "\"decoder_sparse_step\""));
    return SET_M(m, MEM4D_MODEL_MOE_LAYER_MASK, UINT64_C(1) << (step - 1), "\"decoder_sparse_step\"");
}

/* DeepSeek (MoE, V2, V3): shared experts as n_shared_experts x
 * moe_intermediate_size, the first first_k_dense_replace layers dense, then
 * every moe_layer_freq-th; V2/V3 multi-latent attention; V3's MTP modules. */
static mem4d_status hf_deepseek(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    static const struct { const char *key; mem4d_model_param param; } keys[] = {
        {"first_k_dense_replace", MEM4D_MODEL_MOE_FIRST_DENSE}, {"q_lora_rank", MEM4D_MODEL_Q_LORA_RANK},
        {"kv_lora_rank", MEM4D_MODEL_KV_LORA_RANK}, {"qk_nope_head_dim", MEM4D_MODEL_QK_HEAD_DIM},
        {"qk_rope_head_dim", MEM4D_MODEL_QK_POS_EMB_HEAD_DIM}, {"v_head_dim", MEM4D_MODEL_V_HEAD_DIM},
        {"num_nextn_predict_layers", MEM4D_MODEL_MTP_LAYERS}, {"moe_layer_freq", MEM4D_MODEL_MOE_LAYER_FREQ},
    };
    bool given;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        TRY(hf_set(imp, root, keys[i].key, m, keys[i].param, &given));
    uint64_t shared = 0;
    TRY(hf_uint(imp, root, "n_shared_experts", false, &shared, &given));
    uint64_t fs;
    if (!m4d_mul(shared, m->v[MEM4D_MODEL_EXPERT_FFN_SIZE], &fs))
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "\"n_shared_experts\" x \"moe_intermediate_size\" overflows");
    return SET_M(m, MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE, fs, "\"n_shared_experts\"");
}

/* Qwen (1): "intermediate_size" counts both halves of the gated MLP
 * (w1 and w2 are intermediate_size / 2 wide); only c_attn has a bias
 * unless "no_bias" is false. */
static mem4d_status hf_qwen1(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    bool no_bias = true, given;
    TRY(hf_bool(imp, root, "no_bias", &no_bias));
    TRY(hf_set(imp, root, "kv_channels", m, MEM4D_MODEL_HEAD_DIM, &given));
    TRY(SET_M(m, MEM4D_MODEL_LINEAR_BIAS, !no_bias, "\"no_bias\""));
    return SET_M(m, MEM4D_MODEL_FFN_HIDDEN_SIZE, m->v[MEM4D_MODEL_FFN_HIDDEN_SIZE] / 2, "\"intermediate_size\" / 2");
}

/* OLMo 2: norms after attention and after the MLP (two per layer, as
 * before), and query/key norms over the whole projections. */
static mem4d_status hf_olmo2(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    TRY(SET_M(m, MEM4D_MODEL_QK_NORM_WHOLE, 1, "q_norm/k_norm"));
    return hf_biases(imp, root, m);
}

/* gpt-oss (transformers modeling_gpt_oss.py): biases on the query, key,
 * value and output projections, on the router (num_experts) and on each
 * expert's two projections (2·fe and h), and a learned sink logit per
 * head. The checkpoint stores the experts in MXFP4; training runs them in
 * bf16, so they are read as ordinary weights. Alternating sliding-window
 * layers ("layer_types", "sliding_window") change no parameter and, with
 * FlashAttention, no kept tensor. */
static mem4d_status hf_gpt_oss(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    bool given;
    if (m->v[MEM4D_MODEL_EXPERT_TOPK] == 0)
        TRY(hf_set(imp, root, "experts_per_token", m, MEM4D_MODEL_EXPERT_TOPK, &given));
    TRY(SET_M(m, MEM4D_MODEL_ATTENTION_SINKS, 1, "self_attn.sinks"));
    TRY(SET_M(m, MEM4D_MODEL_ROUTER_BIAS, 1, "mlp.router.bias"));
    return hf_biases(imp, root, m);
}

/* DeepSeek-V3.2 and GLM-5: DeepSeek-V3's layers with the sparse-attention
 * indexer ("index_n_heads", "index_head_dim", "index_topk"). */
static mem4d_status hf_dsa(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    static const struct { const char *key; mem4d_model_param param; } keys[] = {
        {"index_n_heads", MEM4D_MODEL_DSA_INDEX_HEADS}, {"index_head_dim", MEM4D_MODEL_DSA_INDEX_HEAD_DIM},
        {"index_topk", MEM4D_MODEL_DSA_INDEX_TOPK},
    };
    bool given;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        TRY(hf_set(imp, root, keys[i].key, m, keys[i].param, &given));
        if (!given)
            return m4d_imp_fail(imp, MEM4D_E_MISSING, "config.json has no \"%s\" (the sparse-attention indexer)",
                                keys[i].key);
    }
    /* GLM-5.2: only every index_topk_freq-th layer after index_skip_topk_offset
     * builds an indexer, the others reuse its top-k (Megatron-Core's
     * dsa_indexer_topk_freq); its "indexer_types" list says the same. */
    TRY(hf_set(imp, root, "index_topk_freq", m, MEM4D_MODEL_DSA_INDEX_TOPK_FREQ, &given));
    TRY(hf_set(imp, root, "index_skip_topk_offset", m, MEM4D_MODEL_DSA_INDEX_SKIP_OFFSET, &given));
    return hf_deepseek(imp, root, m);
}

/* GLM-4.5/4.6/4.7 (transformers modeling_glm4_moe.py): DeepSeek-V3's expert
 * layers (shared experts, first dense layers, MTP) under grouped-query
 * attention whose query, key and value have biases with "attention_bias"
 * (the output projection none) and per-head query/key norms with
 * "use_qk_norm". */
static mem4d_status hf_glm4_moe(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    bool bias = false, qk = false;
    TRY(hf_bool(imp, root, "attention_bias", &bias));
    TRY(hf_bool(imp, root, "use_qk_norm", &qk));
    TRY(SET_M(m, MEM4D_MODEL_QKV_BIAS, bias, "\"attention_bias\""));
    TRY(SET_M(m, MEM4D_MODEL_QK_LAYERNORM, qk, "\"use_qk_norm\""));
    return hf_deepseek(imp, root, m);
}

/* A string member, NULL when absent or not a string. */
static const char *hf_string(struct json_object *root, const char *key)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(root, key, &v) || json_object_get_type(v) != json_type_string)
        return NULL;
    return json_object_get_string(v);
}

/* MiniMax-M2 (its modeling_minimax_m2.py): every layer an expert layer of
 * num_local_experts experts of "intermediate_size", no shared expert, and
 * with "qk_norm_type" "per_layer" query and key norms over the whole
 * projections. The MTP modules "use_mtp" announces are not in config.json's
 * terms (nor in the published checkpoint), so they are left out, with a
 * warning. */
static mem4d_status hf_minimax_m2(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    bool qk = false, mtp = false, given;
    uint64_t shared = 0;
    TRY(hf_bool(imp, root, "use_qk_norm", &qk));
    TRY(hf_bool(imp, root, "use_mtp", &mtp));
    TRY(hf_uint(imp, root, "shared_intermediate_size", false, &shared, &given));
    if (shared)
        return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "\"shared_intermediate_size\" %llu: MiniMax's shared expert "
                            "is not an architecture this version reads", (unsigned long long)shared);
    const char *type = hf_string(root, "qk_norm_type");
    if (qk && type && strcmp(type, "per_layer") != 0 && strcmp(type, "per_head") != 0)
        return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "\"qk_norm_type\" is neither \"per_layer\" nor \"per_head\"");
    TRY(SET_M(m, MEM4D_MODEL_QK_LAYERNORM, qk, "\"use_qk_norm\""));
    TRY(SET_M(m, MEM4D_MODEL_QK_NORM_WHOLE, qk && (!type || strcmp(type, "per_layer") == 0), "\"qk_norm_type\""));
    if (mtp)
        m4d_imp_warn(imp, "\"use_mtp\": MiniMax's multi-token-prediction modules are not described by config.json "
                     "and are left out of the estimate");
    return MEM4D_OK;
}

/* Llama 4's chunked attention (CHUNKED_ATTN, lib/perf.c): the chunk,
 * "attention_chunk_size" (transformers' 8192 where absent; null or 0 reads
 * as none), on the layers transformers builds as "chunked_attention"
 * (configuration_llama4.py): the list "layer_types" itself, else the RoPE
 * layers of "no_rope_layers" (1 where a layer applies RoPE, use_rope =
 * no_rope_layers[layer_idx] in modeling_llama4.py; an empty list is the
 * default), else every layer but each "no_rope_layer_interval"-th, layer i
 * chunked where (i + 1) % P != 0 (P = 4 where absent). A list of other
 * kinds or one that fits no period of 64 layers keeps full attention and
 * says so. */
static mem4d_status hf_chunk(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    uint64_t c = 8192, P = 4, L = m->v[MEM4D_MODEL_NUM_LAYERS], first = 0, period, mask;
    bool given;
    struct json_object *v = NULL, *list = NULL;
    if (json_object_object_get_ex(root, "attention_chunk_size", &v) && json_object_get_type(v) == json_type_null)
        return MEM4D_OK;
    TRY(hf_uint(imp, root, "attention_chunk_size", false, &c, &given));
    if (c == 0)
        return MEM4D_OK;
    const char *key = json_object_object_get_ex(root, "layer_types", &list) &&
                              json_object_get_type(list) == json_type_array ? "layer_types"
                      : json_object_object_get_ex(root, "no_rope_layers", &list) &&
                              json_object_get_type(list) == json_type_array && json_object_array_length(list) > 0
                          ? "no_rope_layers"
                          : NULL;
    if (key) {
        uint8_t bit[M4D_PATTERN_BITS];
        size_t n = json_object_array_length(list), local = 0;
        bool other = false, types = strcmp(key, "layer_types") == 0;
        for (size_t i = 0; i < n && i < M4D_PATTERN_BITS; i++) {
            struct json_object *e = json_object_array_get_idx(list, i);
            const char *t = types ? json_object_get_string(e) : NULL;
            enum json_type et = json_object_get_type(e);
            bit[i] = types ? t && strcmp(t, "chunked_attention") == 0 : json_object_get_int64(e) != 0;
            other |= types ? !bit[i] && (!t || strcmp(t, "full_attention") != 0)
                           : et != json_type_int && et != json_type_boolean;
            local += bit[i];
        }
        if (!local)
            return MEM4D_OK;
        if (other || n != L || n > M4D_PATTERN_BITS || !m4d_pattern_fit(bit, n, &first, &period, &mask)) {
            m4d_imp_warn(imp, "chunked attention (\"attention_chunk_size\" %llu) is timed as full causal attention: "
                         "\"%s\" is not a pattern of chunked and full attention layers the model holds, so the step "
                         "time overstates the attention of sequences beyond %llu tokens",
                         (unsigned long long)c, key, (unsigned long long)c);
            return MEM4D_OK;
        }
    } else {
        TRY(hf_uint(imp, root, "no_rope_layer_interval", false, &P, &given));
        if (P == 0 || P > 64)
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "\"no_rope_layer_interval\" %llu must be between 1 and 64",
                                (unsigned long long)P);
        period = P, mask = (UINT64_C(1) << (P - 1)) - 1;
        if (!mask) /* P = 1: every layer NoPE, none chunked */
            return MEM4D_OK;
    }
    TRY(SET_M(m, MEM4D_MODEL_ATTENTION_CHUNK_SIZE, c, "\"attention_chunk_size\""));
    TRY(SET_M(m, MEM4D_MODEL_WINDOW_FIRST_FULL, first, "the chunked attention layers"));
    TRY(SET_M(m, MEM4D_MODEL_WINDOW_LAYER_FREQ, period, "the chunked attention layers"));
    return SET_M(m, MEM4D_MODEL_WINDOW_LAYER_MASK, mask, "the chunked attention layers");
}

/* Llama 4's text model (transformers modeling_llama4.py): expert layers
 * every "interleave_moe_layer_step"-th layer (layers step-1, 2·step-1, ...),
 * each with experts and an ungated shared expert of "intermediate_size",
 * dense layers of "intermediate_size_mlp"; chunked attention on its RoPE
 * layers (hf_chunk: the step time only); the layers without RoPE and the
 * weightless L2 query/key norm change no parameter. */
static mem4d_status hf_llama4(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    uint64_t step = 1, dense = 0;
    bool given, dense_given;
    TRY(hf_uint(imp, root, "interleave_moe_layer_step", false, &step, &given));
    TRY(hf_uint(imp, root, "intermediate_size_mlp", false, &dense, &dense_given));
    struct json_object *v = NULL;
    if (json_object_object_get_ex(root, "moe_layers", &v) && json_object_get_type(v) == json_type_array) {
        /* an explicit list is read only where it is the regular pattern */
        size_t n = json_object_array_length(v);
        for (size_t i = 0; i < n; i++) {
            struct json_object *e = json_object_array_get_idx(v, i);
            if (json_object_get_type(e) != json_type_int || step == 0 ||
                (uint64_t)json_object_get_int64(e) != i * step + step - 1)
                return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "\"moe_layers\" is not every %llu-th layer; only a "
                                    "regular pattern of expert layers is read", (unsigned long long)step);
        }
    }
    if (step == 0 || step > 64)
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "\"interleave_moe_layer_step\" %llu must be between 1 and 64",
                            (unsigned long long)step);
    uint64_t f = m->v[MEM4D_MODEL_FFN_HIDDEN_SIZE];
    if (m->v[MEM4D_MODEL_NUM_EXPERTS]) {
        TRY(SET_M(m, MEM4D_MODEL_EXPERT_FFN_SIZE, f, "\"intermediate_size\""));
        TRY(SET_M(m, MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE, f, "\"intermediate_size\""));
        TRY(SET_M(m, MEM4D_MODEL_SHARED_EXPERT_GATE, 0, "the shared expert"));
        TRY(SET_M(m, MEM4D_MODEL_MOE_LAYER_FREQ, step, "\"interleave_moe_layer_step\""));
        TRY(SET_M(m, MEM4D_MODEL_MOE_LAYER_MASK, UINT64_C(1) << (step - 1), "\"interleave_moe_layer_step\""));
    }
    if (dense_given)
        TRY(SET_M(m, MEM4D_MODEL_FFN_HIDDEN_SIZE, dense, "\"intermediate_size_mlp\""));
    TRY(hf_chunk(imp, root, m));
    return hf_biases(imp, root, m);
}

/* MiMo (its modeling_mimo.py): Qwen 2's layers and "num_nextn_predict_layers"
 * MTP layers, each a decoder layer with an input projection 2h x h and
 * three more norms, DeepSeek-V3's shape. */
static mem4d_status hf_mimo(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    bool given;
    return hf_set(imp, root, "num_nextn_predict_layers", m, MEM4D_MODEL_MTP_LAYERS, &given);
}

/* OLMoE (transformers modeling_olmoe.py): OLMo 2's query and key norms over
 * the whole projections; every layer an expert layer of "intermediate_size". */
static mem4d_status hf_olmoe(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    (void)imp;
    (void)root;
    return SET_M(m, MEM4D_MODEL_QK_NORM_WHOLE, 1, "q_norm/k_norm");
}

/* Granite MoE (transformers modeling_granitemoe.py, granitemoeshared): every
 * layer an expert layer of "intermediate_size" with a bias-free router, and
 * with "shared_intermediate_size" an ungated shared expert. */
static mem4d_status hf_granite_moe(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    bool given;
    TRY(hf_set(imp, root, "shared_intermediate_size", m, MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE, &given));
    return SET_M(m, MEM4D_MODEL_SHARED_EXPERT_GATE, 0, "the shared expert");
}

/* --- hybrid and heterogeneous layers ------------------------------------------ */

/* A string or a list of strings member: the list's n-th string, NULL past
 * its end or when it is not a list of strings. */
static const char *hf_list_string(struct json_object *list, size_t i)
{
    if (!list || json_object_get_type(list) != json_type_array || i >= json_object_array_length(list))
        return NULL;
    struct json_object *e = json_object_array_get_idx(list, i);
    return e && json_object_get_type(e) == json_type_string ? json_object_get_string(e) : NULL;
}

/* Append text to a pattern under construction; false when it would not fit. */
static bool pat_add(char *pat, size_t size, size_t *n, const char *text)
{
    size_t k = strlen(text);
    if (*n + k + 1 > size)
        return false;
    memcpy(pat + *n, text, k + 1);
    *n += k;
    return true;
}

/* The pattern is bounded by the model's layer limit: at most 4096 layers of
 * at most 10 characters each ("-{4194304}"). */
#define HF_PATTERN_MAX (M4D_MAX_PATTERN * 10 + 1)

static mem4d_status hf_set_pattern(mem4d_import *imp, mem4d_model *m, const char *pat, const char *what)
{
    mem4d_status st = mem4d_model_set_layer_pattern(m, pat);
    if (st != MEM4D_OK)
        return m4d_imp_fail(imp, st, "%s is not a layer pattern this version reads (symbols M * - E, "
                            "at most %d layers)", what, M4D_MAX_PATTERN);
    return MEM4D_OK;
}

/* Nemotron-H and Nemotron 3 (transformers' modeling_nemotron_h.py): one
 * symbol per layer, "hybrid_override_pattern" or "layers_block_type" (mamba,
 * attention, mlp, moe), each layer one Mamba-2 mixer, attention, relu² MLP
 * or expert block with its RMSNorm; Mamba-2 from "mamba_num_heads",
 * "mamba_head_dim", "ssm_state_size", "n_groups" and "conv_kernel"
 * (in_proj and out_proj without bias, the conv with one). Experts are relu²
 * MLPs of "moe_intermediate_size" and a shared expert of
 * "moe_shared_expert_intermediate_size", no gate; the router's
 * e_score_correction_bias is a buffer, not a parameter. Nemotron 3 Super
 * and Ultra's latent MoE ("moe_latent_size": NemotronHMoE's fc1_latent_proj
 * and fc2_latent_proj around experts of that width) is read. Their MTP layers
 * ("num_nextn_predict_layers", of "mtp_hybrid_override_pattern") are left
 * out with a warning: transformers' NemotronHPreTrainedModel drops them
 * (_keys_to_ignore_on_load_unexpected "mtp.*"), as Qwen3.5's below, and
 * Megatron-LM's own fine-tuning conf for Super trains none
 * (examples/post_training/modelopt/conf/nvidia/NVIDIA-Nemotron-3-Super-
 * 120B-A12B-BF16.sh, no MTP depth in its pattern). A "*E" depth is the MTP
 * module libmem4d counts (mtp_num_layers; lib/megatron_hybrid.c reads
 * Megatron's), which the warning says. */
static mem4d_status hf_nemotron_h(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    static const struct { const char *key; mem4d_model_param param; } keys[] = {
        {"attention_head_dim", MEM4D_MODEL_HEAD_DIM}, {"head_dim", MEM4D_MODEL_HEAD_DIM},
        {"mamba_num_heads", MEM4D_MODEL_MAMBA_NUM_HEADS}, {"mamba_head_dim", MEM4D_MODEL_MAMBA_HEAD_DIM},
        {"ssm_state_size", MEM4D_MODEL_MAMBA_STATE_DIM}, {"n_groups", MEM4D_MODEL_MAMBA_NUM_GROUPS},
        {"conv_kernel", MEM4D_MODEL_CONV_KERNEL}, {"moe_shared_expert_intermediate_size",
                                                   MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE},
    };
    bool given, bias = false;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        TRY(hf_set(imp, root, keys[i].key, m, keys[i].param, &given));
    TRY(hf_bool(imp, root, "mamba_proj_bias", &bias));
    bool use_bias = false, conv_bias = true;
    TRY(hf_bool(imp, root, "use_bias", &use_bias));
    TRY(hf_bool(imp, root, "use_conv_bias", &conv_bias));
    if (bias || use_bias || !conv_bias)
        return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "Mamba-2 projections with biases or a convolution "
                            "without one are not what this version counts (\"mamba_proj_bias\", \"use_bias\", "
                            "\"use_conv_bias\")");
    uint64_t mtp = 0, shared = 1;
    TRY(hf_set(imp, root, "moe_latent_size", m, MEM4D_MODEL_MOE_LATENT_SIZE, &given));
    TRY(hf_uint(imp, root, "num_nextn_predict_layers", false, &mtp, &given));
    const char *mtp_pat = hf_string(root, "mtp_hybrid_override_pattern");
    if (mtp && mtp_pat && strcmp(mtp_pat, "*E") == 0)
        m4d_imp_warn(imp, "the %llu MTP layer(s) (\"num_nextn_predict_layers\") are left out of the estimate, as "
                     "transformers' model leaves them out; a job that trains them sets mtp_num_layers (each "
                     "depth \"*E\", an attention and an expert layer, is what it counts)", (unsigned long long)mtp);
    else if (mtp)
        m4d_imp_warn(imp, "the %llu MTP layer(s) (\"num_nextn_predict_layers\") are left out of the estimate, as "
                     "transformers' model leaves them out", (unsigned long long)mtp);
    TRY(hf_uint(imp, root, "n_shared_experts", false, &shared, &given));
    if (shared > 1)
        return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "%llu shared experts are not what this version reads",
                            (unsigned long long)shared);
    if (!shared)
        TRY(SET_M(m, MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE, 0, "the shared expert"));
    TRY(SET_M(m, MEM4D_MODEL_SHARED_EXPERT_GATE, 0, "the shared expert"));
    char pat[HF_PATTERN_MAX];
    size_t n = 0;
    const char *text = hf_string(root, "hybrid_override_pattern");
    struct json_object *list = NULL;
    if (text)
        return hf_set_pattern(imp, m, text, "\"hybrid_override_pattern\"");
    if (!json_object_object_get_ex(root, "layers_block_type", &list))
        return m4d_imp_fail(imp, MEM4D_E_MISSING, "config.json has neither \"hybrid_override_pattern\" nor "
                            "\"layers_block_type\"");
    static const struct { const char *name, *sym; } kinds[] = {
        {"mamba", "M"}, {"attention", "*"}, {"mlp", "-"}, {"moe", "E"},
    };
    pat[0] = '\0';
    if (json_object_get_type(list) != json_type_array)
        return m4d_imp_fail(imp, MEM4D_E_JSON, "\"layers_block_type\" is not a list");
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        const char *t = hf_list_string(list, i), *sym = NULL;
        for (size_t k = 0; t && k < sizeof kinds / sizeof *kinds; k++)
            if (strcmp(t, kinds[k].name) == 0)
                sym = kinds[k].sym;
        if (!sym)
            return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "\"layers_block_type\" entry %zu is not mamba, "
                                "attention, mlp or moe", i);
        if (!pat_add(pat, sizeof pat, &n, sym))
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "\"layers_block_type\" has more than %d layers",
                                M4D_MAX_PATTERN);
    }
    return hf_set_pattern(imp, m, pat, "\"layers_block_type\"");
}

/* Qwen3-Next and Qwen3.5 (transformers' modeling_qwen3_next.py and
 * modeling_qwen3_5.py): each layer a Gated DeltaNet ("linear_attention")
 * or gated attention ("full_attention", the query projection twice as wide
 * for the output gate) and an MoE block (or a dense MLP for the layers in
 * "mlp_only_layers", and for the dense Qwen3.5), each with its RMSNorm:
 * two symbols per layer ("GE", "*E"), so num_layers counts both halves.
 * "layer_types", or every "full_attention_interval"-th layer full attention.
 * The MTP layer ("mtp_num_hidden_layers") is left out with a warning (the
 * transformers model drops it). */
static mem4d_status hf_qwen3_next(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    static const struct { const char *key; mem4d_model_param param; } keys[] = {
        {"linear_num_key_heads", MEM4D_MODEL_LINEAR_KEY_HEADS}, {"linear_num_value_heads", MEM4D_MODEL_LINEAR_VALUE_HEADS},
        {"linear_key_head_dim", MEM4D_MODEL_LINEAR_KEY_HEAD_DIM},
        {"linear_value_head_dim", MEM4D_MODEL_LINEAR_VALUE_HEAD_DIM},
        {"linear_conv_kernel_dim", MEM4D_MODEL_CONV_KERNEL},
    };
    bool given, gate = true;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        TRY(hf_set(imp, root, keys[i].key, m, keys[i].param, &given));
    TRY(hf_bool(imp, root, "attn_output_gate", &gate));
    TRY(SET_M(m, MEM4D_MODEL_ATTENTION_OUTPUT_GATE, gate, "\"attn_output_gate\""));
    uint64_t L = m->v[MEM4D_MODEL_NUM_LAYERS], interval = 4, mtp = 0, step = 1;
    TRY(hf_uint(imp, root, "full_attention_interval", false, &interval, &given));
    TRY(hf_uint(imp, root, "decoder_sparse_step", false, &step, &given));
    TRY(hf_uint(imp, root, "mtp_num_hidden_layers", false, &mtp, &given));
    if (mtp)
        m4d_imp_warn(imp, "the %llu MTP layer(s) (\"mtp_num_hidden_layers\") are left out of the estimate, as "
                     "transformers' model leaves them out", (unsigned long long)mtp);
    if (interval == 0 || step != 1)
        return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "\"full_attention_interval\" 0 or \"decoder_sparse_step\" "
                            "%llu is not what this version reads", (unsigned long long)step);
    bool moe = m->v[MEM4D_MODEL_NUM_EXPERTS] != 0;
    struct json_object *types = NULL, *dense = NULL;
    json_object_object_get_ex(root, "layer_types", &types);
    json_object_object_get_ex(root, "mlp_only_layers", &dense);
    if (L > M4D_MAX_PATTERN / 2)
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "%llu layers of two halves are more than %d",
                            (unsigned long long)L, M4D_MAX_PATTERN);
    char pat[HF_PATTERN_MAX];
    size_t n = 0;
    pat[0] = '\0';
    for (uint64_t i = 0; i < L; i++) {
        const char *t = types ? hf_list_string(types, i) : (i + 1) % interval ? "linear_attention" : "full_attention";
        if (!t || (strcmp(t, "linear_attention") != 0 && strcmp(t, "full_attention") != 0))
            return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "\"layer_types\" entry %llu is not linear_attention "
                                "or full_attention", (unsigned long long)i);
        bool mlp_only = !moe;
        for (size_t k = 0; dense && json_object_get_type(dense) == json_type_array &&
                           k < json_object_array_length(dense); k++) {
            struct json_object *e = json_object_array_get_idx(dense, k);
            if (e && json_object_get_type(e) == json_type_int && (uint64_t)json_object_get_int64(e) == i)
                mlp_only = true;
        }
        pat_add(pat, sizeof pat, &n, strcmp(t, "full_attention") == 0 ? "*" : "G");
        pat_add(pat, sizeof pat, &n, mlp_only ? "-" : "E");
    }
    return hf_set_pattern(imp, m, pat, "the layers");
}

/* Llama-3.3-Nemotron-Super/Ultra (DeciLM, "nemotron-nas"; its
 * modeling_decilm.py): each of "block_configs" an attention part (none with
 * "no_op", an h x h linear with "replace_with_linear", else attention with
 * num_attention_heads / "n_heads_in_group" key/value heads) and an FFN part
 * (none, a linear, or a SwiGLU MLP of _ffn_mult_to_intermediate_size:
 * int(2·ffn_mult·h/3) rounded up to a multiple of 256), each present part
 * with its RMSNorm. */
static mem4d_status hf_nemotron_nas(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    struct json_object *blocks = NULL;
    if (!json_object_object_get_ex(root, "block_configs", &blocks) || json_object_get_type(blocks) != json_type_array)
        return m4d_imp_fail(imp, MEM4D_E_MISSING, "config.json has no \"block_configs\" list");
    size_t nb = json_object_array_length(blocks);
    uint64_t h = m->v[MEM4D_MODEL_HIDDEN_SIZE], a = m->v[MEM4D_MODEL_NUM_HEADS];
    char pat[HF_PATTERN_MAX];
    size_t n = 0;
    pat[0] = '\0';
    if (nb > M4D_MAX_PATTERN / 2)
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "%zu blocks are more than this version reads", nb);
    for (size_t i = 0; i < nb; i++) {
        struct json_object *b = json_object_array_get_idx(blocks, i), *attn = NULL, *ffn = NULL;
        if (!b || json_object_get_type(b) != json_type_object || !json_object_object_get_ex(b, "attention", &attn) ||
            !json_object_object_get_ex(b, "ffn", &ffn) || json_object_get_type(attn) != json_type_object ||
            json_object_get_type(ffn) != json_type_object)
            return m4d_imp_fail(imp, MEM4D_E_JSON, "\"block_configs\" entry %zu has no attention and ffn objects", i);
        bool no_op = false, linear = false;
        uint64_t group = 0;
        char one[32];
        TRY(hf_bool(imp, attn, "no_op", &no_op));
        TRY(hf_bool(imp, attn, "replace_with_linear", &linear));
        if (!no_op) {
            bool given;
            TRY(hf_uint(imp, attn, "n_heads_in_group", !linear, &group, &given));
            if (!linear && (group == 0 || a % group != 0))
                return m4d_imp_fail(imp, MEM4D_E_MODEL, "block %zu: \"n_heads_in_group\" %llu does not divide %llu "
                                    "heads", i, (unsigned long long)group, (unsigned long long)a);
            m4d_msg(one, sizeof one, linear ? "L" : "*{%llu}", (unsigned long long)(linear ? 0 : a / group));
            pat_add(pat, sizeof pat, &n, one);
        }
        no_op = linear = false;
        TRY(hf_bool(imp, ffn, "no_op", &no_op));
        TRY(hf_bool(imp, ffn, "replace_with_linear", &linear));
        if (no_op)
            continue;
        if (linear) {
            pat_add(pat, sizeof pat, &n, "L");
            continue;
        }
        struct json_object *mult = NULL;
        if (!json_object_object_get_ex(ffn, "ffn_mult", &mult) ||
            (json_object_get_type(mult) != json_type_double && json_object_get_type(mult) != json_type_int))
            return m4d_imp_fail(imp, MEM4D_E_JSON, "block %zu: \"ffn_mult\" is not a number", i);
        double f = floor(2.0 * json_object_get_double(mult) * (double)h / 3.0);
        if (!(f >= 1.0 && f <= 4194048.0))
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "block %zu: \"ffn_mult\" gives no FFN size", i);
        uint64_t w = (uint64_t)f;
        w = (w + 255) / 256 * 256;
        m4d_msg(one, sizeof one, "-{%llu}", (unsigned long long)w);
        pat_add(pat, sizeof pat, &n, one);
    }
    return hf_set_pattern(imp, m, pat, "\"block_configs\"");
}

/* The keys a config may leave out take the family's values, not whatever
 * the handle held. */
static mem4d_status hf_defaults(mem4d_import *imp, const struct hf_family *f, mem4d_model *m)
{
    static const mem4d_model_param zero[] = {
        MEM4D_MODEL_NUM_KV_HEADS, MEM4D_MODEL_HEAD_DIM, MEM4D_MODEL_NUM_EXPERTS, MEM4D_MODEL_EXPERT_TOPK,
        MEM4D_MODEL_EXPERT_FFN_SIZE, MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE, MEM4D_MODEL_MOE_FIRST_DENSE,
        MEM4D_MODEL_Q_LORA_RANK, MEM4D_MODEL_KV_LORA_RANK, MEM4D_MODEL_QK_HEAD_DIM,
        MEM4D_MODEL_QK_POS_EMB_HEAD_DIM, MEM4D_MODEL_V_HEAD_DIM, MEM4D_MODEL_MTP_LAYERS,
        MEM4D_MODEL_POSITION_EMBEDDING, MEM4D_MODEL_QK_NORM_WHOLE, MEM4D_MODEL_ATTENTION_SINKS,
        MEM4D_MODEL_ROUTER_BIAS, MEM4D_MODEL_DSA_INDEX_HEADS, MEM4D_MODEL_DSA_INDEX_HEAD_DIM,
        MEM4D_MODEL_DSA_INDEX_TOPK, MEM4D_MODEL_ROUTER_EXPERT_BIAS, MEM4D_MODEL_MOE_LATENT_SIZE,
    };
    for (size_t i = 0; i < sizeof zero / sizeof *zero; i++)
        m->v[zero[i]] = 0;
    static const mem4d_model_param hybrid[] = {
        MEM4D_MODEL_MAMBA_STATE_DIM, MEM4D_MODEL_MAMBA_HEAD_DIM, MEM4D_MODEL_MAMBA_NUM_GROUPS,
        MEM4D_MODEL_MAMBA_NUM_HEADS, MEM4D_MODEL_CONV_KERNEL, MEM4D_MODEL_LINEAR_KEY_HEADS,
        MEM4D_MODEL_LINEAR_VALUE_HEADS, MEM4D_MODEL_LINEAR_KEY_HEAD_DIM, MEM4D_MODEL_LINEAR_VALUE_HEAD_DIM,
        MEM4D_MODEL_ATTENTION_OUTPUT_GATE, MEM4D_MODEL_DSA_INDEX_SKIP_OFFSET, MEM4D_MODEL_DSA_INDEX_TOPK_FREQ,
    };
    for (size_t i = 0; i < sizeof hybrid / sizeof *hybrid; i++)
        m->v[hybrid[i]] = m4d_model_params[hybrid[i]].def;
    TRY(mem4d_model_set_layer_pattern(m, ""));
    m->v[MEM4D_MODEL_MOE_LAYER_FREQ] = 1;
    m->v[MEM4D_MODEL_MOE_LAYER_MASK] = 1;
    m->v[MEM4D_MODEL_WINDOW_SIZE] = m->v[MEM4D_MODEL_WINDOW_FIRST_FULL] = m->v[MEM4D_MODEL_ATTENTION_CHUNK_SIZE] = 0;
    m->v[MEM4D_MODEL_WINDOW_LAYER_FREQ] = m->v[MEM4D_MODEL_WINDOW_LAYER_MASK] = 1;
    TRY(SET_M(m, MEM4D_MODEL_GATED_MLP, f->gated, "the MLP"));
    TRY(SET_M(m, MEM4D_MODEL_NORM, f->layernorm, "the normalization"));
    TRY(SET_M(m, MEM4D_MODEL_TIED_EMBEDDINGS, f->tied, "\"tie_word_embeddings\""));
    TRY(SET_M(m, MEM4D_MODEL_QKV_BIAS, f->qkv_bias, "the QKV bias"));
    TRY(SET_M(m, MEM4D_MODEL_LINEAR_BIAS, f->linear_bias, "the linear biases"));
    TRY(SET_M(m, MEM4D_MODEL_QK_LAYERNORM, f->qk_norm, "the query/key norms"));
    TRY(SET_M(m, MEM4D_MODEL_NORMS_PER_LAYER, f->norms, "the norms"));
    /* Dense families leave the gate at its default; it only counts with a shared expert. */
    uint64_t gate = f->extra == hf_qwen_moe || f->extra == hf_deepseek || f->extra == hf_dsa ||
                    f->extra == hf_glm4_moe ? f->shared_gate
                  : m4d_model_params[MEM4D_MODEL_SHARED_EXPERT_GATE].def;
    return SET_M(m, MEM4D_MODEL_SHARED_EXPERT_GATE, gate, "the shared-expert gate");
}

/* A multimodal config (Llama 4, Qwen3-VL, Gemma 3, Kimi-K2.5) keeps its
 * language model under "text_config": that object is read, and the vision
 * encoder beside it ("vision_config") is named in a warning as left out of
 * the estimate. A config with its own "hidden_size" is read as it is. */
static mem4d_status hf_text_model(mem4d_import *imp, struct json_object *root, struct json_object **text)
{
    struct json_object *v = NULL;
    *text = root;
    if (json_object_object_get_ex(root, "hidden_size", &v) || !json_object_object_get_ex(root, "text_config", &v))
        return MEM4D_OK;
    if (json_object_get_type(v) != json_type_object)
        return m4d_imp_fail(imp, MEM4D_E_JSON, "\"text_config\" is a %s, not an object",
                            json_type_to_name(json_object_get_type(v)));
    *text = v;
    if (json_object_object_get_ex(root, "vision_config", &v) && json_object_get_type(v) == json_type_object)
        m4d_imp_warn(imp, "the vision encoder (\"vision_config\") is not part of the estimate: "
                     "the figures are the language model's (\"text_config\") alone");
    return MEM4D_OK;
}

/* A quantized checkpoint (MXFP4, FP8, NVFP4, int4) is trained in the
 * layout's precision: say so once. */
static void hf_quantized(mem4d_import *imp, struct json_object *root)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(root, "quantization_config", &v) || json_object_get_type(v) != json_type_object)
        return;
    const char *method = hf_string(v, "quant_method");
    char shown[33];
    m4d_strlcpy(shown, method ? method : "unnamed", sizeof shown);
    m4d_imp_warn(imp, "the checkpoint is stored quantized (\"quant_method\" \"%s\"); its weights are counted as "
                 "trained, in the layout's parameter precision", shown);
}

/* Sliding-window attention (Mistral 7B v0.1, Phi-3, Gemma 2 and 3,
 * gpt-oss): the window (keys per query, transformers' sliding-window mask
 * keeps q - k < sliding_window) and its local layers, as transformers
 * builds "layer_types": the list itself (gpt-oss, Gemma 3 of late 2025),
 * else Gemma 3's "sliding_window_pattern" P (layer i local unless
 * (i + 1) % P == 0; 6 when absent), Gemma 2's alternation (P = 2), Qwen2/3's
 * "use_sliding_window" from "max_window_layers" on, else every layer. A
 * window the config turns off ("use_sliding_window": false) is none; one
 * that is not a positive whole number is passed over. Layer types other
 * than sliding and full attention, or a list that fits no period of 64
 * layers, keep full attention and say so. */
static mem4d_status hf_window(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    struct json_object *v = NULL;
    bool use = true;
    TRY(hf_bool(imp, root, "use_sliding_window", &use));
    if (!use || !json_object_object_get_ex(root, "sliding_window", &v) || json_object_get_type(v) != json_type_int ||
        json_object_get_int64(v) <= 0)
        return MEM4D_OK;
    uint64_t w = (uint64_t)json_object_get_int64(v), L = m->v[MEM4D_MODEL_NUM_LAYERS];
    uint64_t first = 0, period = 1, mask = 1;
    const char *type = hf_string(root, "model_type");
    struct json_object *types = NULL;
    if (json_object_object_get_ex(root, "layer_types", &types) && json_object_get_type(types) == json_type_array) {
        uint8_t bit[M4D_PATTERN_BITS];
        size_t n = json_object_array_length(types), local = 0;
        const char *other = NULL;
        for (size_t i = 0; i < n && i < M4D_PATTERN_BITS; i++) {
            const char *t = json_object_get_string(json_object_array_get_idx(types, i));
            bit[i] = t && strcmp(t, "sliding_attention") == 0;
            local += bit[i];
            if (!bit[i] && (!t || strcmp(t, "full_attention") != 0))
                other = t ? t : "?";
        }
        if (!local)
            return MEM4D_OK;
        if (other || n != L || n > M4D_PATTERN_BITS || !m4d_pattern_fit(bit, n, &first, &period, &mask)) {
            m4d_imp_warn(imp, "sliding-window attention (\"sliding_window\" %llu) is timed as full causal "
                         "attention: \"layer_types\" (%s%s) is not a pattern of sliding and full attention layers "
                         "the model holds, so the step time overstates the attention of sequences beyond %llu tokens",
                         (unsigned long long)w, other ? "with " : "", other ? other : "of another length or period",
                         (unsigned long long)w);
            return MEM4D_OK;
        }
    } else if (json_object_object_get_ex(root, "sliding_window_pattern", &v) ||
               (type && strncmp(type, "gemma", 5) == 0)) {
        uint64_t P = type && strcmp(type, "gemma2") == 0 ? 2 : 6;
        if (v && json_object_get_type(v) == json_type_int && json_object_get_int64(v) > 0)
            P = (uint64_t)json_object_get_int64(v);
        if (P > 64)
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "\"sliding_window_pattern\" %llu is beyond 64 layers",
                                (unsigned long long)P);
        period = P, mask = (UINT64_C(1) << (P - 1)) - 1;
        if (!mask) /* P = 1: every layer global */
            return MEM4D_OK;
    } else if (json_object_object_get_ex(root, "use_sliding_window", &v) &&
               json_object_object_get_ex(root, "max_window_layers", &v) && json_object_get_type(v) == json_type_int &&
               json_object_get_int64(v) > 0) {
        first = (uint64_t)json_object_get_int64(v);
        if (first >= L)
            return MEM4D_OK;
    }
    TRY(SET_M(m, MEM4D_MODEL_WINDOW_SIZE, w, "\"sliding_window\""));
    TRY(SET_M(m, MEM4D_MODEL_WINDOW_FIRST_FULL, first, "\"max_window_layers\""));
    TRY(SET_M(m, MEM4D_MODEL_WINDOW_LAYER_FREQ, period, "the sliding-window layers"));
    return SET_M(m, MEM4D_MODEL_WINDOW_LAYER_MASK, mask, "the sliding-window layers");
}

static mem4d_status hf_apply(mem4d_import *imp, struct json_object *top, mem4d_model *m)
{
    struct json_object *root;
    TRY(hf_text_model(imp, top, &root));
    hf_quantized(imp, top);
    /* The shared keys are checked first: a malformed number is the error to
     * report, whatever the architecture. */
    enum { NKEYS = sizeof hf_keys / sizeof *hf_keys };
    uint64_t val[NKEYS];
    bool given[NKEYS];
    for (size_t i = 0; i < NKEYS; i++)
        TRY(hf_uint(imp, root, hf_keys[i].key, hf_keys[i].required, &val[i], &given[i]));
    const struct hf_family *f;
    TRY(hf_family_of(imp, root, &f));
    for (size_t i = 0; i < NKEYS; i++)
        if (hf_keys[i].param == MEM4D_MODEL_FFN_HIDDEN_SIZE && !given[i] && f->extra != hf_nemotron_nas &&
            f->extra != hf_qwen3_next)
            return m4d_imp_fail(imp, MEM4D_E_MISSING, "config.json has no \"%s\"", hf_keys[i].key);
    TRY(hf_defaults(imp, f, m));
    for (size_t i = 0; i < NKEYS; i++) {
        char what[64];
        m4d_msg(what, sizeof what, "\"%s\"", hf_keys[i].key);
        if (given[i]) {
            TRY(hf_size(imp, hf_keys[i].key, hf_keys[i].param, val[i]));
            TRY(SET_M(m, hf_keys[i].param, val[i], what));
        }
    }
    bool tied = f->tied;
    if (root != top)
        TRY(hf_bool(imp, top, "tie_word_embeddings", &tied));
    TRY(hf_bool(imp, root, "tie_word_embeddings", &tied));
    TRY(SET_M(m, MEM4D_MODEL_TIED_EMBEDDINGS, tied, "\"tie_word_embeddings\""));
    if (f->extra)
        TRY(f->extra(imp, root, m));
    /* Auxiliary-loss-free balancing, a per-expert bias on the scores before
     * the top-k (a buffer: the step time only): DeepSeek-V3's and Kimi K2's
     * "topk_method": "noaux_tc", MiniMax's "use_routing_bias"; GLM-4.5's and
     * Nemotron-H's routers always carry e_score_correction_bias
     * (transformers' modeling_glm4_moe.py, modeling_nemotron_h.py). */
    const char *topk = hf_string(root, "topk_method");
    bool routing_bias = false;
    TRY(hf_bool(imp, root, "use_routing_bias", &routing_bias));
    if ((topk && strcmp(topk, "noaux_tc") == 0) || routing_bias || f->extra == hf_glm4_moe ||
        f->extra == hf_nemotron_h)
        TRY(SET_M(m, MEM4D_MODEL_ROUTER_EXPERT_BIAS, 1, "\"topk_method\""));
    TRY(hf_window(imp, root, m));
    m4d_strlcpy(m->name, "custom", sizeof m->name);
    return MEM4D_OK;
}

mem4d_status m4d_imp_parse_object(mem4d_import *imp, const char *json, size_t size, const char *doc,
                                  struct json_object **out)
{
    *out = NULL;
    if (size > INT_MAX)
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "the document is too large (%zu bytes)", size);
    struct json_tokener *tok = json_tokener_new();
    if (!tok)
        return m4d_imp_fail(imp, MEM4D_E_NOMEM, "out of memory while parsing JSON");
    struct json_object *root = json_tokener_parse_ex(tok, json, (int)size);
    enum json_tokener_error err = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    mem4d_status st = MEM4D_OK;
    if (err == json_tokener_continue || (!root && err == json_tokener_success)) {
        st = m4d_imp_fail(imp, MEM4D_E_JSON, "the JSON document is truncated");
    } else if (err != json_tokener_success) {
        st = m4d_imp_fail(imp, MEM4D_E_JSON, "malformed JSON near byte %zu: %s", end, json_tokener_error_desc(err));
    } else {
        while (end < size && isspace((unsigned char)json[end]))
            end++;
        if (end < size)
            st = m4d_imp_fail(imp, MEM4D_E_JSON, "unexpected text after the JSON document at byte %zu", end);
        else if (json_object_get_type(root) != json_type_object)
            st = m4d_imp_fail(imp, MEM4D_E_JSON, "the top level of %s is a %s, not an object", doc,
                          json_type_to_name(json_object_get_type(root)));
    }
    if (st != MEM4D_OK) {
        json_object_put(root);
        return st;
    }
    *out = root;
    return MEM4D_OK;
}

static mem4d_status hf_parse(mem4d_import *imp, const char *json, size_t size, mem4d_model *model)
{
    struct json_object *root = NULL;
    mem4d_status st = m4d_imp_parse_object(imp, json, size, "config.json", &root);
    if (st != MEM4D_OK)
        return st;
    mem4d_model m = *model;
    st = hf_apply(imp, root, &m);
    if (st == MEM4D_OK)
        *model = m;
    json_object_put(root);
    return st;
}


mem4d_status mem4d_import_hf_config_buffer(mem4d_import *import, const char *json, size_t size,
                                           mem4d_model *model)
{
    if (!import)
        return MEM4D_E_INVALID_ARG;
    m4d_imp_reset(import);
    if (!json || !model)
        return m4d_imp_fail(import, MEM4D_E_INVALID_ARG, "NULL document or model");
    if (size == 0)
        return m4d_imp_fail(import, MEM4D_E_JSON, "the JSON document is empty");
    mem4d_status st = hf_parse(import, json, size, model);
    m4d_imp_done(import);
    return st;
}

mem4d_status mem4d_import_hf_config(mem4d_import *import, const char *path, mem4d_model *model)
{
    if (!import)
        return MEM4D_E_INVALID_ARG;
    m4d_imp_reset(import);
    if (!path || !model)
        return m4d_imp_fail(import, MEM4D_E_INVALID_ARG, "NULL path or model");
    char *buf = NULL;
    size_t size = 0;
    mem4d_status st = m4d_imp_read_file(import, path, "config.json", &buf, &size);
    if (st != MEM4D_OK)
        return st;
    st = mem4d_import_hf_config_buffer(import, buf, size, model);
    free(buf);
    return st;
}
