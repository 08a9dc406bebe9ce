/*
 * Megatron-LM's pipeline split, both ways: the reader of its flags (virtual
 * stages, the embedding and loss counted as layers, DeepSpeed's partition
 * method, Megatron-Core's --pipeline-model-parallel-layout string) into the
 * layout's stage keys and layer table, and the writer of a layout's split
 * back into those flags (mem4d_layout_megatron_args).
 * SPDX-License-Identifier: MIT
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "megatron.h"

/* --- reading ------------------------------------------------------------- */

/* --account-for-embedding/loss-in-pipeline-split: Megatron-Core counts the
 * embedding (on the first stage) and the loss (on the last) as one layer
 * each and splits L + e + l evenly, so those stages build one transformer
 * layer fewer. Without virtual stages this is the uneven first/last split. */
static mem4d_status apply_account_split(mem4d_import *imp, const struct m4d_opt_val *vals, const mem4d_model *m,
                                        mem4d_layout *l)
{
    uint64_t e = GIVEN(MF_ACCOUNT_EMB), s = GIVEN(MF_ACCOUNT_LOSS), p = l->v[MEM4D_LAYOUT_PP];
    /* Megatron-DeepSpeed's --pp-partition-method: DeepSpeed's PipelineModule
     * balances the layers whose type matches; "type:transformer|embedding"
     * counts the embedding pipes on the first and last stage as layers. */
    if (GIVEN(MF_PP_PARTITION)) {
        const char *how = vals[MF_PP_PARTITION].s;
        if (strcmp(how, "type:transformer|embedding") == 0)
            e = s = 1;
        else if (strcmp(how, "type:transformer") != 0 && strcmp(how, "uniform") != 0)
            m4d_imp_warn(imp, "--pp-partition-method %.64s is not a partition this version knows; the layers are "
                         "split evenly", how);
    }
    uint64_t L = m->v[MEM4D_MODEL_NUM_LAYERS];
    if (!e && !s)
        return MEM4D_OK;
    if (GIVEN(MF_FIRST_LAYERS) || GIVEN(MF_LAST_LAYERS))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "counting the embedding or loss as pipeline layers contradicts "
                            "--decoder-first/last-pipeline-num-layers");
    if (p == 1)
        return MEM4D_OK; /* one stage holds everything */
    uint64_t v = l->v[MEM4D_LAYOUT_VPP];
    if (v > 1) {
        /* the embedding (loss) takes a layer's place in the first (last)
         * virtual stage: every virtual stage holds (L + e + s)/(p·v) */
        if (L == 0 || (L + e + s) % (p * v) != 0 || (L + e + s) / (p * v) <= 1)
            return m4d_imp_fail(imp, MEM4D_E_LAYERS_PP, "%llu layers plus the embedding and loss counted as layers "
                                "(%llu) do not split evenly over %llu x %llu virtual pipeline stages",
                                (unsigned long long)L, (unsigned long long)(L + e + s), (unsigned long long)p,
                                (unsigned long long)v);
        TRY(SET_L(l, MEM4D_LAYOUT_FIRST_CHUNK_FEWER_LAYERS, e, "--account-for-embedding-in-pipeline-split"));
        return SET_L(l, MEM4D_LAYOUT_LAST_CHUNK_FEWER_LAYERS, s, "--account-for-loss-in-pipeline-split");
    }
    if (L == 0 || (L + e + s) % p != 0 || (L + e + s) / p <= 1)
        return m4d_imp_fail(imp, MEM4D_E_LAYERS_PP, "%llu layers plus the embedding and loss counted as layers "
                            "(%llu) do not split evenly over %llu pipeline stages", (unsigned long long)L,
                            (unsigned long long)(L + e + s), (unsigned long long)p);
    uint64_t per = (L + e + s) / p;
    /* Both ends are given; the one not accounted for keeps a full share. */
    TRY(SET_L(l, MEM4D_LAYOUT_FIRST_STAGE_LAYERS, per - e, "--account-for-embedding-in-pipeline-split"));
    return SET_L(l, MEM4D_LAYOUT_LAST_STAGE_LAYERS, per - s, "--account-for-loss-in-pipeline-split");
}

/* Virtual pipeline: chunks per rank = layers per stage / layers per chunk. */
static mem4d_status apply_vpp(mem4d_import *imp, const struct m4d_opt_val *vals, const mem4d_model *m,
                              mem4d_layout *l)
{
    uint64_t p = l->v[MEM4D_LAYOUT_PP], vpp = 1;
    if (GIVEN(MF_VPP_STAGES))
        vpp = U(MF_VPP_STAGES);
    if (GIVEN(MF_VPP_LAYERS)) {
        uint64_t L = m->v[MEM4D_MODEL_NUM_LAYERS], per = U(MF_VPP_LAYERS);
        if (L == 0)
            return m4d_imp_fail(imp, MEM4D_E_MISSING, "--num-layers-per-virtual-pipeline-stage needs --num-layers");
        if (per == 0)
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "--num-layers-per-virtual-pipeline-stage must be at least 1");
        /* a layer pattern of GPT layers, each a mixer and its MLP (Gated
         * DeltaNet in GPT layers, slime's spec): the flag counts GPT layers,
         * half the pattern's symbols, and so do the chunks */
        bool halves = m->nlt && GIVEN(MF_NUM_LAYERS) && 2 * U(MF_NUM_LAYERS) == L;
        if (halves)
            L /= 2;
        /* Megatron counts the embedding and the loss as layers here too
         * when they are accounted for in the split (validate_args). */
        L += GIVEN(MF_ACCOUNT_EMB) + GIVEN(MF_ACCOUNT_LOSS);
        if (L % p != 0 || (L / p) % per != 0)
            return m4d_imp_fail(imp, MEM4D_E_CONFLICT,
                            "--num-layers-per-virtual-pipeline-stage %llu does not divide the %llu layers "
                            "of each of %llu pipeline stages (%llu layers)",
                            (unsigned long long)per, (unsigned long long)(L / p), (unsigned long long)p,
                            (unsigned long long)L);
        vpp = L / p / per;
    }
    if ((GIVEN(MF_VPP_LAYERS) || GIVEN(MF_VPP_STAGES)) && p == 1)
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "an interleaved (virtual) pipeline needs "
                        "--pipeline-model-parallel-size above 1");
    return m4d_megatron_set_layout(imp, l, MEM4D_LAYOUT_VPP, GIVEN(MF_VPP_LAYERS) ? MF_VPP_LAYERS : MF_VPP_STAGES, vpp);
}

/* --pipeline-model-parallel-layout (Megatron-Core's PipelineParallelLayerLayout,
 * megatron/core/transformer/pipeline_parallel_layer_layout.py): stages split
 * by '|' in layer order (virtual stage k on rank k mod pp), 'E' the
 * embedding, 't' a transformer layer, 'm' an MTP layer, 'L' the loss;
 * commas are cosmetic; "(X)*n" then "c*n" repeat (parse_str_to_list). */
/* Characters after expansion: room for num_layers' bound of 4096 layers, a
 * '|' after each and the E, m and L around them, twice over. */
#define M4D_PP_LAYOUT_MAX 16384

/* One expansion pass, as Megatron's re.sub: "(X)*n" when `groups` (X up to
 * the first ')'), else "c*n" for any character c. */
static bool pp_layout_unroll(const char *in, char *out, size_t cap, bool groups)
{
    size_t n = 0;
    for (const char *p = in; *p;) {
        const char *body = p, *star = NULL;
        size_t len = 1;
        if (groups) {
            const char *close = *p == '(' ? strchr(p + 1, ')') : NULL;
            if (close && close > p + 1 && close[1] == '*' && isdigit((unsigned char)close[2])) {
                body = p + 1;
                len = (size_t)(close - body);
                star = close + 1;
            }
        } else if (p[1] == '*' && isdigit((unsigned char)p[2])) {
            star = p + 1;
        }
        if (!star) {
            if (n + 1 >= cap)
                return false;
            out[n++] = *p++;
            continue;
        }
        char *num_end;
        unsigned long long times = strtoull(star + 1, &num_end, 10);
        if (times > M4D_PP_LAYOUT_MAX || n + len * times >= cap)
            return false;
        for (unsigned long long k = 0; k < times; k++, n += len)
            memcpy(out + n, body, len);
        p = num_end;
    }
    out[n] = '\0';
    return true;
}

/* Scratch of one layout read, on the heap. */
struct pp_work {
    char b[M4D_PP_LAYOUT_MAX + 1];
    uint32_t t[M4D_PP_LAYOUT_MAX / 2], mtp[M4D_PP_LAYOUT_MAX / 2];
    uint16_t vs[M4D_PP_LAYOUT_MAX / 2], vs_first[M4D_PP_LAYOUT_MAX / 2];
    size_t S;
};

static mem4d_status pp_layout_table(mem4d_import *imp, const char *flag, char *a, struct pp_work *w);
static mem4d_status pp_layout_apply(mem4d_import *imp, const char *flag, struct pp_work *w, const mem4d_model *m,
                                    mem4d_layout *l);

static mem4d_status apply_pp_layout(mem4d_import *imp, const struct m4d_opt_val *vals, const mem4d_model *m,
                                    mem4d_layout *l)
{
    if (!GIVEN(MF_PP_LAYOUT))
        return MEM4D_OK;
    const char *flag = "--pipeline-model-parallel-layout";
    if (GIVEN(MF_FIRST_LAYERS) || GIVEN(MF_LAST_LAYERS) || GIVEN(MF_ACCOUNT_EMB) || GIVEN(MF_ACCOUNT_LOSS) ||
        GIVEN(MF_VPP_STAGES) || GIVEN(MF_VPP_LAYERS))
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "%s places the layers itself; it contradicts "
                            "--decoder-first/last-pipeline-num-layers, --account-for-*-in-pipeline-split and the "
                            "virtual-stage flags", flag);
    /* The text as given, of any length (no cut), then its expansion. */
    const char *given = vals[MF_PP_LAYOUT].s;
    size_t glen = strlen(given), n = 0;
    struct pp_work *w = malloc(sizeof *w);
    char *a = malloc(glen + 1 > M4D_PP_LAYOUT_MAX + 1 ? glen + 1 : M4D_PP_LAYOUT_MAX + 1);
    if (!w || !a) {
        free(w);
        free(a);
        return m4d_imp_fail(imp, MEM4D_E_NOMEM, "%s: out of memory", flag);
    }
    for (const char *p = given; *p; p++)
        if (*p != ',')
            a[n++] = *p;
    a[n] = '\0';
    mem4d_status st = pp_layout_table(imp, flag, a, w);
    if (st == MEM4D_OK)
        st = pp_layout_apply(imp, flag, w, m, l);
    free(a);
    free(w);
    return st;
}

/* Expand the layout (in `a`, at least M4D_PP_LAYOUT_MAX + 1 bytes, which
 * receives the expansion) and count each stage's layers into w. */
static mem4d_status pp_layout_table(mem4d_import *imp, const char *flag, char *a, struct pp_work *w)
{
    if (strlen(a) > M4D_PP_LAYOUT_MAX || !pp_layout_unroll(a, w->b, sizeof w->b, true) ||
        !pp_layout_unroll(w->b, a, M4D_PP_LAYOUT_MAX + 1, false))
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "%s is longer than %d characters once its repeats are expanded "
                            "(at most 4096 layers, each stage's '|', E, m and L fit in half of that)", flag,
                            M4D_PP_LAYOUT_MAX);
    /* Per stage: transformer and MTP layers. */
    static const size_t max_stages = M4D_PP_LAYOUT_MAX / 2;
    uint32_t *t = w->t, *mtp = w->mtp;
    size_t S = 1, emb = 0, loss = 0;
    t[0] = mtp[0] = 0;
    for (const char *p = a; *p; p++) {
        switch (*p) {
        case '|':
            if (S == max_stages)
                return m4d_imp_fail(imp, MEM4D_E_RANGE, "%s has more than %zu stages", flag, max_stages);
            t[S] = mtp[S] = 0;
            S++;
            break;
        case 't': t[S - 1]++; break;
        case 'm': mtp[S - 1]++; break;
        case 'E': emb++; break;
        case 'L': loss++; break;
        default:
            if ((unsigned char)*p < 0x80 && isprint((unsigned char)*p))
                return m4d_imp_fail(imp, MEM4D_E_PARSE, "%s: '%c' is not a layer (E, t, m, L, '|', \"(...)*n\", "
                                    "\"c*n\")", flag, *p);
            return m4d_imp_fail(imp, MEM4D_E_PARSE, "%s: byte 0x%02X is not a layer (E, t, m, L, '|', "
                                "\"(...)*n\", \"c*n\")", flag, (unsigned)(unsigned char)*p);
        }
    }
    if (emb != 1 || loss != 1 || a[0] != 'E' || a[strlen(a) - 1] != 'L')
        return m4d_imp_fail(imp, MEM4D_E_PARSE, "%s must start with the embedding 'E' and end with the loss 'L', "
                            "each once", flag);
    w->S = S;
    return MEM4D_OK;
}

/* The counted stages into the layout, by the split's own rules. */
static mem4d_status pp_layout_apply(mem4d_import *imp, const char *flag, struct pp_work *w, const mem4d_model *m,
                                    mem4d_layout *l)
{
    uint64_t p = l->v[MEM4D_LAYOUT_PP], L = m->v[MEM4D_MODEL_NUM_LAYERS], total = 0;
    size_t S = w->S;
    uint32_t *t = w->t, *mtp = w->mtp;
    /* The split's own rules (stages.c): p·v virtual stages, L layers, every rank with one. */
    uint16_t *vs = w->vs, *vs_first = w->vs_first;
    for (size_t k = 0; k < S; k++) {
        vs[k] = (uint16_t)t[k];
        vs_first[k] = (uint16_t)total;
        total += t[k];
    }
    uint64_t vpp = S / p;
    struct m4d_split whole = {.L = L, .p = p, .v = vpp ? vpp : 1, .nvs = S, .vs = vs, .vs_first = vs_first};
    char why[M4D_MSG_MAX];
    mem4d_status st = m4d_split_check(&whole, why, sizeof why);
    if (st != MEM4D_OK)
        return m4d_imp_fail(imp, st, "%s: %s", flag, why);
    for (size_t k = 0; k + 1 < S; k++)
        if (mtp[k])
            return m4d_imp_fail(imp, MEM4D_E_UNSUPPORTED, "%s puts MTP layers on stage %zu; the estimate keeps "
                                "them on the last stage", flag, k);
    /* The simplest form the split takes (stages.c): the virtual stages
     * alone, shorter end virtual stages, uneven end ranks (the keys every
     * Megatron-LM reads back), or the layer table itself. */
    struct m4d_split sp;
    m4d_split_of_table(t, S, p, &sp);
    if (!sp.nvs) {
        TRY(SET_L(l, MEM4D_LAYOUT_FIRST_CHUNK_FEWER_LAYERS, sp.cf, flag));
        TRY(SET_L(l, MEM4D_LAYOUT_LAST_CHUNK_FEWER_LAYERS, sp.cl, flag));
        TRY(SET_L(l, MEM4D_LAYOUT_FIRST_STAGE_LAYERS, sp.first, flag));
        TRY(SET_L(l, MEM4D_LAYOUT_LAST_STAGE_LAYERS, sp.last, flag));
        return vpp > 1 ? SET_L(l, MEM4D_LAYOUT_VPP, vpp, flag) : MEM4D_OK;
    }
    if (S > mem4d_layout_stage_layers_max())
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "%s has %zu stages; a layer table holds at most %zu", flag, S,
                            mem4d_layout_stage_layers_max());
    TRY(SET_L(l, MEM4D_LAYOUT_VPP, vpp, flag));
    st = mem4d_layout_set_stage_layers(l, t, S);
    if (st != MEM4D_OK)
        return m4d_imp_fail(imp, st, "%s: its layer table was refused (%s)", flag, mem4d_status_name(st));
    return MEM4D_OK;
}

mem4d_status m4d_megatron_read_pipeline(mem4d_import *imp, const struct m4d_opt_val *vals, const mem4d_model *m,
                                        mem4d_layout *l)
{
    TRY(apply_vpp(imp, vals, m, l));
    TRY(apply_account_split(imp, vals, m, l));
    TRY(apply_pp_layout(imp, vals, m, l));
    /* A layout of more virtual stages than ranks interleaves as the
     * virtual-stage flags do: Megatron-LM's validate_args sets
     * virtual_pipeline_model_parallel_size from it, and overlap_p2p_comm
     * keeps its default, on (import_megatron.c sets it for the flags) */
    if (GIVEN(MF_PP_LAYOUT) && l->v[MEM4D_LAYOUT_VPP] > 1 && !GIVEN(MF_NO_P2P_OVERLAP))
        TRY(SET_L(l, MEM4D_LAYOUT_OVERLAP_P2P_COMM, 1, "--pipeline-model-parallel-layout"));
    return MEM4D_OK;
}

/* --- writing ------------------------------------------------------------- */

static unsigned long long lv(const mem4d_layout *l, mem4d_layout_param k)
{
    return (unsigned long long)l->v[k];
}

/* Megatron-Core's --pipeline-model-parallel-layout for S virtual stages: E
 * and L at the ends, MTP layers before the loss, each run of equal middle
 * stages as "(t*n|)*k", single-quoted for the shell (it holds | ( ) *). */
static void put_layout_string(struct m4d_out *o, const mem4d_model *m, const struct m4d_split *sp)
{
    unsigned long long S = sp->nvs ? sp->nvs : sp->p * sp->v;
    m4d_put(o, " --pipeline-model-parallel-layout 'E");
    for (unsigned long long k = 0; k < S;) {
        unsigned long long n = m4d_split_vs_layers(sp, k), run = 1;
        while (k > 0 && k + run < S - 1 && m4d_split_vs_layers(sp, k + run) == n)
            run++;
        if (run > 1)
            m4d_put(o, "(");
        if (n)
            m4d_put(o, "t*%llu", n);
        if (run > 1)
            m4d_put(o, "|)*%llu", run);
        else if (k + 1 < S)
            m4d_put(o, "|");
        k += run;
    }
    for (uint64_t k = 0; k < m->v[MEM4D_MODEL_MTP_LAYERS]; k++)
        m4d_put(o, "m");
    m4d_put(o, "L'");
}

/* Uneven first/last stages and virtual chunks. Layers per virtual stage is
 * the older spelling every Megatron-LM reads; it needs an even split, so
 * uneven stages name the chunk count instead; a layer table and shorter
 * end virtual stages are written as a pipeline layout. */
void m4d_megatron_put_pipeline(struct m4d_out *o, const mem4d_model *m, const mem4d_layout *l)
{
    unsigned long long p = lv(l, MEM4D_LAYOUT_PP), v = lv(l, MEM4D_LAYOUT_VPP);
    unsigned long long L = (unsigned long long)m->v[MEM4D_MODEL_NUM_LAYERS];
    /* the split as stages.c forms it; one given per virtual stage has no
     * flags but the layout string */
    struct m4d_split sp;
    m4d_split_init(&sp, l, m->v[MEM4D_MODEL_NUM_LAYERS], m->v[MEM4D_MODEL_MTP_LAYERS]);
    unsigned long long first = sp.first, last = sp.last;
    if (m4d_split_by_vstage(&sp) && (sp.nvs || sp.p * sp.v >= 2)) {
        put_layout_string(o, m, &sp);
        return;
    }
    if (first)
        m4d_put(o, " --decoder-first-pipeline-num-layers %llu", first);
    if (last)
        m4d_put(o, " --decoder-last-pipeline-num-layers %llu", last);
    if (v <= 1)
        return;
    /* with a layer pattern the flag may count GPT layers, each two of the
     * pattern's layers (apply_vpp: a mixer and its MLP), not the model's
     * layers: the chunk count is the spelling that reads back the same */
    if (!first && !last && p && L % (p * v) == 0 && !m->nlt)
        m4d_put(o, " --num-layers-per-virtual-pipeline-stage %llu", L / (p * v));
    else
        m4d_put(o, " --num-virtual-stages-per-pipeline-rank %llu", v);
}
