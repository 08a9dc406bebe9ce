/*
 * The pipeline split, in one place: which layers each pipeline rank and
 * each of its virtual-stage chunks holds, their expert layers and the MTP
 * modules, and the one rule that refuses a split that does not hold
 * (doc/full-model.md, "Stages"). The estimator, the step-time model, the
 * search, and the Megatron-LM reader and writer all read it from here.
 *
 * The forms: an even split (L/(p·v) layers per virtual stage); uneven end
 * ranks (first, last: Megatron's --decoder-first/last-pipeline-num-layers,
 * the rest even); a shorter first/last virtual stage (cf, cl); a layer
 * table of p·v virtual stages. Virtual stage k is chunk k div p of rank
 * k mod p, as Megatron-Core places them.
 * SPDX-License-Identifier: MIT
 */
#include "private.h"

#define U(x) ((unsigned long long)(x))

void m4d_split_init(struct m4d_split *sp, const mem4d_layout *l, uint64_t L, uint64_t mtp)
{
    const uint64_t *v = l->v;
    sp->L = L;
    sp->p = v[MEM4D_LAYOUT_PP] ? v[MEM4D_LAYOUT_PP] : 1;
    sp->v = v[MEM4D_LAYOUT_VPP] ? v[MEM4D_LAYOUT_VPP] : 1;
    sp->first = v[MEM4D_LAYOUT_FIRST_STAGE_LAYERS];
    sp->last = v[MEM4D_LAYOUT_LAST_STAGE_LAYERS];
    sp->cf = v[MEM4D_LAYOUT_FIRST_CHUNK_FEWER_LAYERS];
    sp->cl = v[MEM4D_LAYOUT_LAST_CHUNK_FEWER_LAYERS];
    sp->nvs = l->nvs;
    sp->vs = l->vs;
    sp->vs_first = l->vs_first;
    sp->mtp = mtp;
    sp->lv = v;
    m4d_split_at(sp, sp->p, sp->v);
}

void m4d_split_at(struct m4d_split *sp, uint64_t p, uint64_t v)
{
    sp->p = p ? p : 1;
    sp->v = v ? v : 1;
    /* valid or not, nothing below divides by zero: p, v >= 1, rank_mid() checks its ends */
    sp->ranks[0] = m4d_split_rank_layers_of(sp, 0);
    sp->ranks[1] = sp->p > 2 ? m4d_split_rank_layers_of(sp, 1) : 0;
    sp->ranks[2] = m4d_split_rank_layers_of(sp, sp->p - 1);
}

bool m4d_split_search_at(const struct m4d_split *base, uint64_t p, bool uneven, struct m4d_split *out)
{
    *out = *base;
    if (m4d_split_by_vstage(out)) /* a form per virtual stage has no end ranks */
        out->first = out->last = 0;
    m4d_split_at(out, p, 1);
    if (!m4d_split_even(out) || out->L % out->p == 0)
        return true;
    if (!uneven || !m4d_split_uneven_ends(out->L, out->p, &out->first, &out->last))
        return false;
    m4d_split_at(out, p, 1);
    return true;
}

/* Layers of a middle virtual stage with shorter ends. */
static uint64_t vs_mid(const struct m4d_split *sp) { return (sp->L + sp->cf + sp->cl) / (sp->p * sp->v); }

/* Layers of a rank between uneven ends. */
static uint64_t rank_mid(const struct m4d_split *sp)
{
    uint64_t ends = (sp->first > 0) + (sp->last > 0);
    return sp->p > ends ? (sp->L - sp->first - sp->last) / (sp->p - ends) : 0;
}

bool m4d_split_even(const struct m4d_split *sp)
{
    return !sp->first && !sp->last && !m4d_split_by_vstage(sp);
}

uint64_t m4d_split_vs_layers(const struct m4d_split *sp, uint64_t k)
{
    if (sp->nvs)
        return sp->vs[k];
    if (sp->cf || sp->cl)
        return vs_mid(sp) - (k == 0 ? sp->cf : 0) - (k == sp->p * sp->v - 1 ? sp->cl : 0);
    return m4d_split_chunk_layers(sp, k % sp->p, k / sp->p);
}

uint64_t m4d_split_rank_layers_of(const struct m4d_split *sp, uint64_t r)
{
    if (m4d_split_by_vstage(sp)) {
        uint64_t n = 0;
        for (uint64_t j = 0; j < sp->v; j++)
            n += m4d_split_vs_layers(sp, j * sp->p + r);
        return n;
    }
    if (r == 0 && sp->first)
        return sp->first;
    if (r == sp->p - 1 && sp->last)
        return sp->last;
    return sp->first || sp->last ? rank_mid(sp) : sp->L / sp->p;
}

/* The first layer of rank r without virtual stages. */
static uint64_t rank_first(const struct m4d_split *sp, uint64_t r)
{
    return r == 0 ? 0 : m4d_split_rank_layers(sp, 0) + (r - 1) * m4d_split_rank_layers(sp, 1);
}

/* Megatron-Core gives each of a rank's v chunks 1/v of its layers (uneven
 * first/last ranks included, each divisible by v), and chunk j of every
 * rank follows chunk j of the rank before it: j·L/v + (the layers of ranks
 * < r)/v. Even ranks: (j·p + r)·L/(p·v). */
uint64_t m4d_split_chunk_first(const struct m4d_split *sp, uint64_t r, uint64_t j)
{
    if (sp->nvs)
        return sp->vs_first[j * sp->p + r];
    if (sp->cf || sp->cl) {
        uint64_t k = j * sp->p + r;
        return k == 0 ? 0 : k * vs_mid(sp) - sp->cf;
    }
    return j * (sp->L / sp->v) + rank_first(sp, r) / sp->v;
}

uint64_t m4d_split_chunk_layers(const struct m4d_split *sp, uint64_t r, uint64_t j)
{
    if (m4d_split_by_vstage(sp))
        return m4d_split_vs_layers(sp, j * sp->p + r);
    return m4d_split_rank_layers(sp, r) / sp->v;
}

uint64_t m4d_split_middle_max(const struct m4d_split *sp)
{
    uint64_t m = 0;
    if (sp->p < 3) {
        uint64_t a = m4d_split_rank_layers(sp, 0), b = m4d_split_rank_layers(sp, sp->p - 1);
        return a > b ? a : b;
    }
    if (!sp->nvs) /* every middle rank alike */
        return m4d_split_rank_layers(sp, 1);
    for (uint64_t r = 1; r + 1 < sp->p; r++) {
        uint64_t n = m4d_split_rank_layers(sp, r);
        m = n > m ? n : m;
    }
    return m;
}

/* Layers of rank r, over its chunks, that `in` counts. */
static uint64_t stage_layers_of(const struct m4d_ctx *x, uint64_t r,
                                uint64_t (*in)(const struct m4d_ctx *, uint64_t, uint64_t))
{
    const struct m4d_split *sp = &x->split;
    uint64_t e = 0;
    for (uint64_t j = 0; j < sp->v; j++)
        e += in(x, m4d_split_chunk_first(sp, r, j), m4d_split_chunk_layers(sp, r, j));
    return e;
}

/* L_e(r): expert layers of rank r, over its chunks. */
uint64_t m4d_stage_moe_layers(const struct m4d_ctx *x, uint64_t r)
{
    return x->experts ? stage_layers_of(x, r, m4d_moe_layers_in) : 0;
}

uint64_t m4d_stage_local_layers(const struct m4d_ctx *x, uint64_t r)
{
    return x->window || x->chunk ? stage_layers_of(x, r, m4d_local_layers_in) : 0;
}

/* Expert layers of the heaviest chunk of rank r (the rank itself without vpp). */
uint64_t m4d_chunk_moe_layers(const struct m4d_ctx *x, uint64_t r)
{
    const struct m4d_split *sp = &x->split;
    if (sp->v <= 1 || !x->experts)
        return m4d_stage_moe_layers(x, r);
    uint64_t e = 0;
    for (uint64_t j = 0; j < sp->v; j++) {
        uint64_t n = m4d_moe_layers_in(x, m4d_split_chunk_first(sp, r, j), m4d_split_chunk_layers(sp, r, j));
        e = n > e ? n : e;
    }
    return e;
}

/* The layer table's rules: virtual stage k on rank k mod p, every rank with a layer. */
static mem4d_status check_table(const struct m4d_split *sp, char *why, size_t n)
{
    uint64_t ends = (sp->first > 0) + (sp->last > 0);
    if (ends || sp->cf || sp->cl) {
        m4d_msg(why, n, "a stage layer table contradicts first/last_stage_layers and "
                "first/last_chunk_fewer_layers");
        return MEM4D_E_CONFLICT;
    }
    if (sp->nvs != sp->p * sp->v) {
        m4d_msg(why, n, "the stage layer table has %llu virtual stages, not pp %llu x vpp %llu = %llu",
                U(sp->nvs), U(sp->p), U(sp->v), U(sp->p * sp->v));
        return MEM4D_E_LAYERS_PP;
    }
    uint64_t total = sp->vs_first[sp->nvs - 1] + sp->vs[sp->nvs - 1];
    if (total != sp->L) {
        m4d_msg(why, n, "the stage layer table places %llu layers; the model has %llu", U(total), U(sp->L));
        return MEM4D_E_LAYERS_PP;
    }
    for (uint64_t r = 0; r < sp->p; r++)
        if (m4d_split_rank_layers(sp, r) == 0) {
            m4d_msg(why, n, "the stage layer table leaves pipeline rank %llu without a layer", U(r));
            return MEM4D_E_LAYERS_PP;
        }
    return MEM4D_OK;
}

/* Shorter first/last virtual stages (Megatron's embedding and loss counted
 * in the split, or a pipeline layout): every virtual stage holds
 * (L + cf + cl)/(p·v) layers but those two. */
static mem4d_status check_short_ends(const struct m4d_split *sp, char *why, size_t n)
{
    uint64_t pv = sp->p * sp->v, total = sp->L + sp->cf + sp->cl, mid = total / pv;
    if (sp->first || sp->last) {
        m4d_msg(why, n, "first/last_chunk_fewer_layers contradict first/last_stage_layers");
        return MEM4D_E_CONFLICT;
    }
    if (pv < 2 || total % pv != 0 || sp->cf > mid || sp->cl > mid || mid * sp->v <= sp->cf ||
        mid * sp->v <= sp->cl || (sp->p == 1 && mid * sp->v <= sp->cf + sp->cl)) {
        m4d_msg(why, n, "%llu layers with %llu fewer in the first and %llu fewer in the last virtual stage do "
                "not split over pp %llu x vpp %llu virtual stages", U(sp->L), U(sp->cf), U(sp->cl), U(sp->p),
                U(sp->v));
        return MEM4D_E_LAYERS_PP;
    }
    return MEM4D_OK;
}

/* Uneven first/last ranks, the rest even. */
static mem4d_status check_uneven_ends(const struct m4d_split *sp, char *why, size_t n)
{
    uint64_t ends = (sp->first > 0) + (sp->last > 0);
    if (sp->p < 2) {
        m4d_msg(why, n, "uneven first/last pipeline stages need pp >= 2");
        return MEM4D_E_CONFLICT;
    }
    bool fit = sp->first + sp->last <= sp->L;
    uint64_t rest = fit ? sp->L - sp->first - sp->last : 0;
    if (!fit || (sp->p > ends && (rest % (sp->p - ends) != 0 || rest == 0)) || (sp->p == ends && rest != 0)) {
        m4d_msg(why, n, "%llu layers minus %llu first-stage and %llu last-stage layers do not split "
                "evenly over the other %llu stages", U(sp->L), U(sp->first), U(sp->last), U(sp->p - ends));
        return MEM4D_E_LAYERS_PP;
    }
    /* Interleaved: Megatron-Core gives each of a stage's v chunks 1/v of
     * its layers, the first, last and middle stages alike
     * (TransformerConfig.__post_init__, "Uneven PP"). */
    uint64_t mid = rank_mid(sp);
    if (sp->v > 1 && (sp->first % sp->v || sp->last % sp->v || mid % sp->v)) {
        m4d_msg(why, n, "vpp %llu does not divide the %llu first-stage, %llu last-stage and %llu middle-stage "
                "layers", U(sp->v), U(sp->first), U(sp->last), U(mid));
        return MEM4D_E_LAYERS_PP;
    }
    return MEM4D_OK;
}

uint64_t m4d_split_vpp_max(const struct m4d_split *sp)
{
    if (sp->p < 2)
        return 1;
    return sp->nvs ? sp->nvs / sp->p : (sp->L + sp->cf + sp->cl) / sp->p;
}

mem4d_status m4d_split_check(const struct m4d_split *sp, char *why, size_t n)
{
    if (sp->v > 1 && sp->p < 2) {
        m4d_msg(why, n, "vpp %llu needs pp of at least 2 (pp is %llu)", U(sp->v), U(sp->p));
        return MEM4D_E_CONFLICT;
    }
    if (sp->nvs)
        return check_table(sp, why, n);
    if (sp->cf || sp->cl)
        return check_short_ends(sp, why, n);
    if (sp->first || sp->last)
        return check_uneven_ends(sp, why, n);
    if (sp->L % (sp->p * sp->v) != 0) {
        if (sp->v > 1)
            m4d_msg(why, n, "%llu layers are not divisible by pp %llu x vpp %llu = %llu", U(sp->L), U(sp->p),
                    U(sp->v), U(sp->p * sp->v));
        else
            m4d_msg(why, n, "%llu layers are not divisible by pp %llu", U(sp->L), U(sp->p));
        return MEM4D_E_LAYERS_PP;
    }
    return MEM4D_OK;
}

/* The search's uneven split when L does not split evenly over p: the most
 * balanced split Megatron's --decoder-first/last-pipeline-num-layers
 * allow with the first and last stages no heavier than the others, since
 * they also hold the embedding and the LM head (Llama 3 405B on pp 16:
 * 7 + 14 x 8 + 7). false when there is none. */
bool m4d_split_uneven_ends(uint64_t L, uint64_t p, uint64_t *first, uint64_t *last)
{
    if (p == 2) {
        *last = L / 2;
        *first = L - *last;
        return *last > 0;
    }
    for (uint64_t x = p > 2 ? L / p : 0; x >= 1; x--) {
        uint64_t rest = L - 2 * x;
        if (rest % (p - 2) == 0 && x <= rest / (p - 2)) {
            *first = *last = x;
            return true;
        }
    }
    return false;
}

void m4d_split_of_table(const uint32_t *t, size_t S, uint64_t p, struct m4d_split *sp)
{
    uint64_t vpp = S / p, L = 0;
    for (size_t k = 0; k < S; k++)
        L += t[k];
    *sp = (struct m4d_split){.L = L, .p = p, .v = vpp};
    bool even = true;
    for (size_t k = 0; k < S; k++)
        even = even && t[k] == t[0];
    if (even)
        return;
    /* Every virtual stage alike but a shorter first and last one (as
     * "Et|(tt|)*30mL" writes the embedding and the MTP and loss in place of
     * layers). */
    if (vpp > 1 && S >= 3 && t[0] <= t[1] && t[S - 1] <= t[1] && (t[0] != t[1] || t[S - 1] != t[1])) {
        bool middle = true;
        for (size_t k = 1; k + 1 < S; k++)
            middle = middle && t[k] == t[1];
        if (middle) {
            sp->cf = t[1] - t[0];
            sp->cl = t[1] - t[S - 1];
            return;
        }
    }
    /* Uneven end ranks whose ranks split evenly over their chunks. */
    bool ranks_even = true;
    for (size_t r = 0; r < p; r++)
        for (size_t k = 1; k < vpp; k++)
            ranks_even = ranks_even && t[k * p + r] == t[r];
    for (size_t r = 1; r + 1 < p; r++)
        ranks_even = ranks_even && t[r] == t[1];
    if (ranks_even) {
        sp->first = t[0] * vpp;
        sp->last = t[p - 1] * vpp;
        return;
    }
    sp->nvs = S; /* the table itself; the caller keeps its entries */
}
