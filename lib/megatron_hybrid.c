/*
 * Megatron-LM's hybrid models (Megatron-Core's HybridModel / MambaModel) as
 * their flags describe them: --hybrid-layer-pattern (the deprecated
 * --hybrid-override-pattern; --is-hybrid-model with the ratios of older
 * versions), the Mamba-2 and Gated DeltaNet dimensions; and the dynamic
 * batching of the RL trainers that drive Megatron-Core (slime's
 * --use-dynamic-batch-size with --max-tokens-per-gpu).
 * SPDX-License-Identifier: MIT
 */
#include <math.h>
#include <string.h>

#include "megatron.h"

/* Megatron-Core's pattern_from_ratios (models/hybrid/hybrid_layer_allocation.py,
 * d98e8a64): round(L·attention_ratio) attention layers spread evenly among
 * the Mamba layers, then round(L·mlp_ratio) of the Mamba layers turned into
 * MLP layers, evenly. Python's round() rounds half to even, as rint() does
 * in the default rounding mode. */
static void pattern_from_ratios(uint64_t L, double attn, double mlp, char *out)
{
    uint64_t n_attn = (uint64_t)rint((double)L * attn), mamba = L - n_attn;
    double section = (double)mamba / (double)(n_attn + 1), x = section;
    for (uint64_t i = 0; i < L; i++)
        out[i] = 'M';
    out[L] = '\0';
    for (uint64_t i = 0; i < L; i++) {
        if (x < 0.5) {
            out[i] = '*';
            x += section;
        } else {
            x -= 1;
        }
    }
    uint64_t n_mlp = (uint64_t)rint((double)L * mlp);
    if (n_mlp == 0)
        return;
    double ratio = (double)(mamba - n_mlp) / (double)n_mlp;
    x = ratio;
    for (uint64_t i = 0; i < L; i++) {
        if (out[i] != 'M')
            continue;
        if (x < 0.5) {
            out[i] = '-';
            x += ratio;
        } else {
            x -= 1;
        }
    }
}

/* The layer specs Megatron-LM ships for hybrid models: the pattern says what
 * each layer is. */
static bool hybrid_spec(const char *spec)
{
    return strncmp(spec, "megatron.core.models.hybrid.", 28) == 0 ||
           strncmp(spec, "megatron.core.models.mamba.", 27) == 0;
}

/* Megatron-Core's names of Gated DeltaNet as an attention variant
 * (transformer_config.py experimental_attention_variant; earlier
 * --linear-attention-type gated_delta_net). */
static bool gdn_variant(const char *v)
{
    return strcmp(v, "gated_delta_net") == 0 || strcmp(v, "gdn") == 0;
}

/* Gated DeltaNet inside GPT layers (--experimental-attention-variant gdn
 * --linear-attention-freq F; experimental_attention_variant_module_specs.py
 * get_linear_attention_pattern): layer i (from 0) mixes with Gated DeltaNet
 * unless F is an integer N and (i + 1) % N == 0, or F is a list
 * expression whose i-th entry is 0 (softmax attention). Each GPT layer is
 * the mixer and its MLP, two symbols of a layer pattern: G or *, then E for
 * an expert layer (--moe-layer-freq) or - for a dense one. */
static mem4d_status gdn_gpt_pattern(mem4d_import *imp, const struct m4d_opt_val *vals, const mem4d_model *m,
                                    char *out, size_t size)
{
    const char *f = vals[MF_LA_FREQ].s;
    uint64_t L = m->v[MEM4D_MODEL_NUM_LAYERS], first = 0, period = 1, mask = 1;
    if (L == 0 || 2 * L >= size)
        return m4d_imp_fail(imp, MEM4D_E_MISSING, "--linear-attention-freq needs --num-layers (1 to %d)",
                            (int)(size / 2 - 1));
    if (strchr(f, '[')) {
        size_t n;
        bool fits;
        if (!m4d_moe_pattern_read(f, &n, &fits, &first, &period, &mask) || !fits || n != L)
            return m4d_imp_fail(imp, MEM4D_E_PARSE, "--linear-attention-freq '%.64s' is not a list expression of "
                                "%llu 0s and 1s (like \"([1]*3+[0])*12\")", f, (unsigned long long)L);
    } else {
        TRY(m4d_megatron_parse_int(imp, "linear-attention-freq", f, &period));
        if (period == 0 || period > 64)
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "--linear-attention-freq %llu must be between 1 and 64",
                                (unsigned long long)period);
        mask = (period == 64 ? ~UINT64_C(0) : (UINT64_C(1) << period) - 1) & ~(UINT64_C(1) << (period - 1));
    }
    struct m4d_ctx x = {0};
    x.experts = m->v[MEM4D_MODEL_NUM_EXPERTS];
    x.first_dense = m->v[MEM4D_MODEL_MOE_FIRST_DENSE];
    x.moe_period = m->v[MEM4D_MODEL_MOE_LAYER_FREQ] ? m->v[MEM4D_MODEL_MOE_LAYER_FREQ] : 1;
    x.moe_mask = m->v[MEM4D_MODEL_MOE_LAYER_MASK];
    for (uint64_t i = 0; i < L; i++) {
        bool la = i >= first && ((mask >> ((i - first) % period)) & 1u);
        out[2 * i] = la ? 'G' : '*';
        out[2 * i + 1] = m4d_is_moe_layer(&x, i) ? 'E' : '-';
    }
    out[2 * L] = '\0';
    return MEM4D_OK;
}

/* Does the model (a config.json read before the flags) already carry a
 * layer pattern with Gated DeltaNet layers? */
static bool has_gdn_pattern(const mem4d_model *m)
{
    for (uint8_t k = 0; k < m->nkinds; k++)
        if (m->kinds[k].sym == 'G')
            return m->nlt > 0;
    return false;
}

/* Refusals of what the flags cannot describe, each naming what is missing. */
static mem4d_status hybrid_refusals(mem4d_import *imp, const struct m4d_opt_val *vals, const mem4d_model *m)
{
    if (GIVEN(MF_HETERO_PATH) || GIVEN(MF_HETERO_JSON))
        return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "--heterogeneous-layers-config-%s describes each layer in a "
                            "config.json the flags do not carry; read that file with --hf-config (its "
                            "block_configs become a layer pattern)", GIVEN(MF_HETERO_PATH) ? "path" : "encoded-json");
    if (GIVEN(MF_ATTN_VARIANT) && !gdn_variant(vals[MF_ATTN_VARIANT].s))
        return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "--experimental-attention-variant %.32s is not read; only "
                            "Gated DeltaNet (gated_delta_net, gdn) with --linear-attention-freq is",
                            vals[MF_ATTN_VARIANT].s);
    if (GIVEN(MF_ATTN_VARIANT) != GIVEN(MF_LA_FREQ))
        return m4d_imp_fail(imp, MEM4D_E_MISSING, "Gated DeltaNet inside transformer layers needs both "
                            "--experimental-attention-variant (or --linear-attention-type) and --linear-attention-freq");
    if (GIVEN(MF_SPEC) && !hybrid_spec(vals[MF_SPEC].s)) {
        /* slime's Qwen3.5 / Qwen3-Next spec builds its layers from the
         * Hugging Face config: with that config read first (--hf-config) its
         * pattern is the model's, and the flags give the layout */
        if (strncmp(vals[MF_SPEC].s, "slime_plugins.models.qwen3", 26) == 0 && has_gdn_pattern(m))
            return MEM4D_OK;
        if (strncmp(vals[MF_SPEC].s, "slime_plugins.models.qwen3", 26) == 0)
            return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "--spec %.64s builds Gated DeltaNet layers from the Hugging "
                                "Face config (--hf-checkpoint), which the flags do not carry; estimate the model "
                                "with --hf-config and this layout", vals[MF_SPEC].s);
        m4d_imp_warn(imp, "--spec %.64s replaces the layer specification; the estimate assumes the GPT layer",
                     vals[MF_SPEC].s);
    }
    return MEM4D_OK;
}

/* A pattern's '|' pipeline segments into a virtual-stage layer table (the
 * layers of each segment), with vpp = segments / pp. */
static mem4d_status pattern_segments(mem4d_import *imp, const char *text, mem4d_layout *l)
{
    uint32_t seg[M4D_MAX_VSTAGES];
    size_t n = 0;
    uint32_t run = 0;
    for (const char *c = text;; c++) {
        if (*c == '|' || *c == '\0' || *c == '/') {
            if (n >= M4D_MAX_VSTAGES)
                return m4d_imp_fail(imp, MEM4D_E_RANGE, "--hybrid-layer-pattern has more than %d pipeline segments",
                                    M4D_MAX_VSTAGES);
            seg[n++] = run;
            run = 0;
            if (*c != '|')
                break;
        } else if (*c != ' ' && *c != '"' && *c != '\'') {
            run++;
        }
    }
    if (n < 2)
        return MEM4D_OK;
    uint64_t pp = l->v[MEM4D_LAYOUT_PP];
    if (n % pp != 0)
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--hybrid-layer-pattern has %zu pipeline segments, not a "
                            "multiple of --pipeline-model-parallel-size %llu", n, (unsigned long long)pp);
    TRY(SET_L(l, MEM4D_LAYOUT_VPP, n / pp, "--hybrid-layer-pattern's segments"));
    mem4d_status st = mem4d_layout_set_stage_layers(l, seg, n);
    return st == MEM4D_OK ? MEM4D_OK
                          : m4d_imp_fail(imp, st, "--hybrid-layer-pattern's pipeline segments are not a layer table");
}

/* The multi-token-prediction depths of a unified pattern, "main/d/d..."
 * (Megatron-Core hybrid_layer_allocation.py parse_hybrid_pattern: one
 * pattern per depth after each '/', all identical; arguments.py takes
 * mtp_num_layers from their count, over --mtp-num-layers with a warning).
 * A depth of an attention layer and an MLP ("*E" with experts, "*-"
 * without) is the MTP module libmem4d counts (a GPT layer, its eh_proj and
 * norms); another depth pattern is refused. */
static mem4d_status mtp_depths(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_model *m, const char *flag,
                               const char *depths)
{
    const char *end = strchr(depths, '/');
    size_t len = end ? (size_t)(end - depths) : strlen(depths), n = 0;
    for (const char *c = depths;; c += len + 1) {
        if (strncmp(c, depths, len) != 0 || (c[len] != '/' && c[len] != '\0'))
            return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "%s has multi-token-prediction depths that differ; "
                                "Megatron-Core requires every depth's pattern to be the same", flag);
        n++;
        if (c[len] == '\0')
            break;
    }
    if (len == 0)
        return MEM4D_OK; /* "main/": no depth */
    if (len != 2 || depths[0] != '*' || (depths[1] != 'E' && depths[1] != '-'))
        return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "%s has multi-token-prediction depths '%.*s'; an MTP "
                            "depth of an attention layer and its MLP ('*E' or '*-') is modelled, not this one",
                            flag, (int)(len < 16 ? len : 16), depths);
    if (GIVEN(MF_MTP) && U(MF_MTP) != n)
        m4d_imp_warn(imp, "--mtp-num-layers %llu conflicts with the %zu depths of %s; its depths are used, as "
                     "Megatron-LM uses them", (unsigned long long)U(MF_MTP), n, flag);
    return SET_M(m, MEM4D_MODEL_MTP_LAYERS, n, flag);
}

mem4d_status m4d_megatron_apply_hybrid(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_model *m,
                                       mem4d_layout *l)
{
    TRY(hybrid_refusals(imp, vals, m));
    if (GIVEN(MF_SPEC) && !hybrid_spec(vals[MF_SPEC].s) && has_gdn_pattern(m)) {
        /* slime's spec over the config's pattern: one of its transformer
         * layers is a mixer and its MLP, two symbols of the pattern */
        uint64_t L = GIVEN(MF_NUM_LAYERS) ? U(MF_NUM_LAYERS) : 0;
        if (L && L != m->nlt && 2 * L != m->nlt)
            return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--num-layers %llu is not the config's %u layers (%u mixers "
                                "and MLPs of its layer pattern)", (unsigned long long)L, (unsigned)m->nlt / 2,
                                (unsigned)m->nlt);
        TRY(SET_M(m, MEM4D_MODEL_NUM_LAYERS, m->nlt, "--spec"));
        if (2 * L == m->nlt) { /* the flags' uneven ends count transformer layers too */
            if (l->nvs)
                return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "a pipeline layout over slime's %.64s layers "
                                    "(each a mixer and its MLP) is not read; give the split with "
                                    "--decoder-first/last-pipeline-num-layers", vals[MF_SPEC].s);
            l->v[MEM4D_LAYOUT_FIRST_STAGE_LAYERS] *= 2;
            l->v[MEM4D_LAYOUT_LAST_STAGE_LAYERS] *= 2;
        }
    }
    if (GIVEN(MF_ATTN_OUT_GATE))
        TRY(SET_M(m, MEM4D_MODEL_ATTENTION_OUTPUT_GATE, 1, "--attention-output-gate"));
    if (GIVEN(MF_HYBRID_PATTERN) && GIVEN(MF_HYBRID_OVERRIDE))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--hybrid-override-pattern and --hybrid-layer-pattern cannot "
                            "both be given (Megatron-LM refuses it)");
    const char *text = GIVEN(MF_HYBRID_PATTERN) ? vals[MF_HYBRID_PATTERN].s
                     : GIVEN(MF_HYBRID_OVERRIDE) ? vals[MF_HYBRID_OVERRIDE].s : NULL;
    const char *flag = GIVEN(MF_HYBRID_PATTERN) ? "--hybrid-layer-pattern" : "--hybrid-override-pattern";
    char built[M4D_MAX_PATTERN + 1]; /* not static: imports run on several threads at once */
    char main_part[M4D_MAX_PATTERN * 2 + 1];
    bool gpt_halves = false; /* a GPT layer is two symbols (mixer, MLP) of the pattern */
    if (GIVEN(MF_LA_FREQ)) {
        if (text || GIVEN(MF_IS_HYBRID))
            return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "--linear-attention-freq places Gated DeltaNet in GPT "
                                "layers; a hybrid model's pattern places its own (give one of them)");
        TRY(gdn_gpt_pattern(imp, vals, m, built, sizeof built));
        text = built;
        flag = "--linear-attention-freq";
        gpt_halves = true;
    } else if (!text && (GIVEN(MF_IS_HYBRID) || GIVEN(MF_HYBRID_ATTN) || GIVEN(MF_HYBRID_MLP))) {
        /* older Megatron-LM (--is-hybrid-model, or pretrain_mamba.py, whose
         * model is hybrid by its ratios): the pattern from --num-layers and
         * the ratios, none meaning every layer Mamba-2 */
        uint64_t L = m->v[MEM4D_MODEL_NUM_LAYERS];
        double attn = GIVEN(MF_HYBRID_ATTN) ? vals[MF_HYBRID_ATTN].r : 0.0;
        double mlp = GIVEN(MF_HYBRID_MLP) ? vals[MF_HYBRID_MLP].r : 0.0;
        if (L == 0 || L > M4D_MAX_PATTERN)
            return m4d_imp_fail(imp, MEM4D_E_MISSING, "--is-hybrid-model without a pattern needs --num-layers "
                                "(1 to %d)", M4D_MAX_PATTERN);
        if (attn + mlp > 1.0)
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "--hybrid-attention-ratio %g and --hybrid-mlp-ratio %g add "
                                "up to more than 1", attn, mlp);
        pattern_from_ratios(L, attn, mlp, built);
        text = built;
        flag = "--is-hybrid-model's ratios";
    } else if (!text) {
        return MEM4D_OK;
    } else if (GIVEN(MF_HYBRID_ATTN) || GIVEN(MF_HYBRID_MLP)) {
        m4d_imp_warn(imp, "%s overrides --hybrid-attention-ratio and --hybrid-mlp-ratio", flag);
    }
    const char *slash = strchr(text, '/');
    if (slash)
        TRY(mtp_depths(imp, vals, m, flag, slash + 1));
    size_t n = 0;
    for (const char *c = text; *c && *c != '/' && n + 1 < sizeof main_part; c++)
        if (*c != '|')
            main_part[n++] = *c;
    main_part[n] = '\0';
    mem4d_status st = mem4d_model_set_layer_pattern(m, main_part);
    if (st != MEM4D_OK)
        return m4d_imp_fail(imp, st, "%s '%.64s' is not a layer pattern (M Mamba-2, G Gated DeltaNet, * attention, "
                            "- MLP, E experts; at most %d layers)", flag, text, M4D_MAX_PATTERN);
    /* Megatron-LM's hybrid layers take none of the GPT expert-layer keys */
    TRY(SET_M(m, MEM4D_MODEL_MOE_FIRST_DENSE, 0, flag));
    TRY(SET_M(m, MEM4D_MODEL_MOE_LAYER_FREQ, 1, flag));
    TRY(SET_M(m, MEM4D_MODEL_MOE_LAYER_MASK, 1, flag));
    if (gpt_halves) { /* the flags' uneven ends count GPT layers */
        if (l->nvs)
            return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "a pipeline layout over GPT layers with Gated DeltaNet "
                                "is not read; give the split with --decoder-first/last-pipeline-num-layers");
        l->v[MEM4D_LAYOUT_FIRST_STAGE_LAYERS] *= 2;
        l->v[MEM4D_LAYOUT_LAST_STAGE_LAYERS] *= 2;
    } else if (GIVEN(MF_NUM_LAYERS) && U(MF_NUM_LAYERS) != m->v[MEM4D_MODEL_NUM_LAYERS]) {
        m4d_imp_warn(imp, "%s has %llu layers; --num-layers %llu is ignored, as Megatron-LM ignores it", flag,
                     (unsigned long long)m->v[MEM4D_MODEL_NUM_LAYERS], (unsigned long long)U(MF_NUM_LAYERS));
    }
    return MEM4D_OK;
}

mem4d_status m4d_megatron_apply_hybrid_segments(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_layout *l)
{
    const char *text = GIVEN(MF_HYBRID_PATTERN) ? vals[MF_HYBRID_PATTERN].s
                     : GIVEN(MF_HYBRID_OVERRIDE) ? vals[MF_HYBRID_OVERRIDE].s : NULL;
    if (!text || !strchr(text, '|'))
        return MEM4D_OK;
    if (GIVEN(MF_VPP_LAYERS) || GIVEN(MF_VPP_STAGES) || GIVEN(MF_PP_LAYOUT) || GIVEN(MF_FIRST_LAYERS) ||
        GIVEN(MF_LAST_LAYERS))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "the pipeline segments of a hybrid layer pattern ('|') define "
                            "the split; Megatron-LM refuses other pipeline-split flags beside them");
    return pattern_segments(imp, text, l);
}

mem4d_status m4d_megatron_apply_dynamic_batch(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_layout *l)
{
    if (!GIVEN(MF_DYN_BATCH)) {
        if (GIVEN(MF_MAX_TOKENS))
            m4d_imp_warn(imp, "--max-tokens-per-gpu %llu is ignored without --use-dynamic-batch-size",
                         (unsigned long long)U(MF_MAX_TOKENS));
        return MEM4D_OK;
    }
    if (!GIVEN(MF_MAX_TOKENS))
        return m4d_imp_fail(imp, MEM4D_E_MISSING, "--use-dynamic-batch-size packs micro-batches up to "
                            "--max-tokens-per-gpu tokens, which is not given");
    /* slime (slime/utils/data.py, get_minimum_num_micro_batch_size): each
     * micro-batch packs samples up to max_tokens_per_gpu tokens per GPU,
     * cp times that per context-parallel group, as one packed sequence */
    uint64_t cp = l->v[MEM4D_LAYOUT_CP], N = U(MF_MAX_TOKENS), seq;
    if (!m4d_mul(N, cp, &seq))
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "--max-tokens-per-gpu %llu x cp %llu overflows",
                            (unsigned long long)N, (unsigned long long)cp);
    TRY(m4d_megatron_set_layout(imp, l, MEM4D_LAYOUT_SEQ_LENGTH, MF_MAX_TOKENS, seq));
    TRY(m4d_megatron_set_layout(imp, l, MEM4D_LAYOUT_MICRO_BATCH, MF_MAX_TOKENS, 1));
    m4d_imp_warn(imp, "dynamic batching: the memory is that of the longest packed micro-batch the flags allow, "
                 "--max-tokens-per-gpu %llu tokens on each GPU (one packed sequence of %llu tokens per "
                 "context-parallel group)", (unsigned long long)N, (unsigned long long)seq);
    return MEM4D_OK;
}
