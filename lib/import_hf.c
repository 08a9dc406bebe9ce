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
                            "reads; ask for a Llama-like reading to read it as one", shown);
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
    {"intermediate_size", MEM4D_MODEL_FFN_HIDDEN_SIZE, true},
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

static mem4d_status hf_set(mem4d_import *imp, struct json_object *root, const char *key, mem4d_model *m,
                           mem4d_model_param param, bool *given)
{
    uint64_t v = 0;
    char what[64];
    TRY(hf_uint(imp, root, key, false, &v, given));
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

/* Llama 4's text model (transformers modeling_llama4.py): expert layers
 * every "interleave_moe_layer_step"-th layer (layers step-1, 2·step-1, ...),
 * each with experts and an ungated shared expert of "intermediate_size",
 * dense layers of "intermediate_size_mlp"; chunked attention, the layers
 * without RoPE and the weightless L2 query/key norm change no parameter. */
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
        MEM4D_MODEL_DSA_INDEX_TOPK,
    };
    for (size_t i = 0; i < sizeof zero / sizeof *zero; i++)
        m->v[zero[i]] = 0;
    m->v[MEM4D_MODEL_MOE_LAYER_FREQ] = 1;
    m->v[MEM4D_MODEL_MOE_LAYER_MASK] = 1;
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
    TRY(hf_defaults(imp, f, m));
    for (size_t i = 0; i < NKEYS; i++) {
        char what[64];
        m4d_msg(what, sizeof what, "\"%s\"", hf_keys[i].key);
        if (given[i])
            TRY(SET_M(m, hf_keys[i].param, val[i], what));
    }
    bool tied = f->tied;
    if (root != top)
        TRY(hf_bool(imp, top, "tie_word_embeddings", &tied));
    TRY(hf_bool(imp, root, "tie_word_embeddings", &tied));
    TRY(SET_M(m, MEM4D_MODEL_TIED_EMBEDDINGS, tied, "\"tie_word_embeddings\""));
    if (f->extra)
        TRY(f->extra(imp, root, m));
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
