/*
 * Solvers: the inverse questions. The largest micro-batch and the longest
 * sequence that fit (a bisection on the part of the peak that never falls
 * as they grow, m4d_floor_over_limit(), then the values it leaves are
 * estimated: the ones below whose peak is above the floor, and, where a
 * stack's fused softmax declines a shape, the ones above, memory being
 * monotone only within each class, m4d_ctx_softmax_falls_back()), and the
 * fewest GPUs on which some layout fits (searches over GPU counts).
 * SPDX-License-Identifier: MIT
 */
#include "estimate_full.h"

/* Estimate into the caller's heap report (a report is too large for the
 * stack): does the layout fit? */
static mem4d_status fits(const mem4d_model *model, const mem4d_layout *l, const mem4d_device *dev,
                         mem4d_report *r, bool *ok)
{
    mem4d_status st = mem4d_estimate(model, l, dev, r);
    *ok = st == MEM4D_OK && r->verdict == MEM4D_VERDICT_FITS;
    return st;
}

/* Largest x in [1, hi] with pred(x) true, pred monotone (true then false);
 * 0 when pred(1) is false. Galloping, then bisection. */
typedef bool (*probe_fn)(void *ctx, uint64_t x);
static uint64_t last_true(probe_fn pred, void *ctx, uint64_t hi)
{
    if (hi == 0 || !pred(ctx, 1))
        return 0;
    uint64_t good = 1, bad = 0;
    for (uint64_t x = 2; x <= hi; x *= 2) {
        if (!pred(ctx, x)) {
            bad = x;
            break;
        }
        good = x;
        if (x > hi / 2)
            break;
    }
    if (bad == 0) {
        if (good == hi || pred(ctx, hi))
            return hi;
        bad = hi;
    }
    while (bad - good > 1) {
        uint64_t mid = good + (bad - good) / 2;
        if (pred(ctx, mid))
            good = mid;
        else
            bad = mid;
    }
    return good;
}

struct probe {
    const mem4d_model *model;
    const mem4d_device *dev;
    mem4d_layout l;
    mem4d_layout_param key;
    uint64_t unit;
    mem4d_report *r;
    const struct m4d_ctx *c; /* the resolved layout (probe_start): the allocator's settings */
    uint64_t best;           /* the largest x estimated that fits, 0 before one */
};

/* Estimate the layout at x units: does it fit (then p->best may move), and
 * does it bound the larger values (its floor does not fit,
 * m4d_floor_over_limit())? A status other than MEM4D_OK fits nothing and
 * bounds everything above. */
static bool probe(struct probe *p, uint64_t x, bool *bounds)
{
    p->l.v[p->key] = x * p->unit;
    bool ok;
    mem4d_status st = fits(p->model, &p->l, p->dev, p->r, &ok);
    if (ok && x > p->best)
        p->best = x;
    if (bounds) /* m stays: s, or b without a global batch */
        *bounds = st != MEM4D_OK || m4d_floor_over_limit(p->c, p->dev, p->r);
    return ok;
}

/* last_true()'s predicate: the floor fits (monotone but for the softmax classes). */
static bool probe_floor_fits(void *ctx, uint64_t x)
{
    bool bounds;
    probe(ctx, x, &bounds);
    return !bounds;
}

/* Does the stack's fused softmax decline the probed key at x units? */
static bool probe_falls_back(const struct probe *p, uint64_t x)
{
    bool seq = p->key == MEM4D_LAYOUT_SEQ_LENGTH;
    return m4d_ctx_softmax_falls_back(p->c, seq ? x * p->unit : p->c->s, seq ? p->c->b : x);
}

/* Where the fused softmax declines some shapes, memory is monotone only
 * within each class (fused, fallen back), and the fallback only adds to
 * the fused figure: a value whose floor does not fit bounds every larger
 * one where it runs fused, and only the larger fallen-back ones where it
 * falls back. The values from `from` up to hi are estimated up to the
 * first fused one that bounds; a fallen-back one above a fallen-back bound
 * is skipped unestimated. Every fused shape of the micro-batch recurs within
 * 256 (the kernel's largest batches per block), of the sequence only up to
 * the kernel's longest keys, so the scan ends past those once a fallen-back
 * one has bounded. */
static void scan_up(struct probe *p, uint64_t from, uint64_t hi)
{
    bool fell = false;
    uint64_t fell_at = 0;
    for (uint64_t x = from; x <= hi; x++) {
        bool back = probe_falls_back(p, x), bounds;
        if (back && fell) {
            bool seq = p->key == MEM4D_LAYOUT_SEQ_LENGTH;
            if (seq ? x * p->unit > p->c->softmax.keys : x - fell_at > 256)
                return;
            continue;
        }
        probe(p, x, &bounds);
        if (bounds && !back)
            return;
        if (bounds)
            fell = true, fell_at = x;
    }
}

/* The largest x in [1, hi] that fits. Bisection on the floor (last_true)
 * ends at x0 whose floor fits, x0 + 1's not: no fused value above x0 fits,
 * and the scan above finds the fallen-back ones that do. Below x0 the peak
 * may exceed the floor: the largest fitting value is found going down from
 * x0 to the largest one the bisection saw fit. */
static uint64_t solve_key(struct probe *p, uint64_t hi)
{
    uint64_t x0 = last_true(probe_floor_fits, p, hi);
    for (uint64_t x = x0; x > p->best; x--)
        if (probe(p, x, NULL))
            break;
    if (x0 < hi && p->c->softmax.keys && !p->c->flash)
        scan_up(p, x0 + 1, hi);
    return p->best;
}

/* Set the probed key to its smallest value (one unit), resolve the layout
 * (an invalid one is refused with its status) and allocate the report;
 * *khi receives the key's upper bound. */
static mem4d_status probe_start(struct probe *p, struct m4d_ctx *x, uint64_t *khi)
{
    p->l.v[p->key] = p->unit;
    mem4d_status st = m4d_resolve(p->model, &p->l, x, NULL, 0);
    if (st != MEM4D_OK)
        return st;
    m4d_ctx_device(x, &p->l, p->dev); /* the softmax rule and flash attention (probe_falls_back) */
    p->c = x;
    mem4d_layout_param_bounds(p->key, NULL, khi);
    return mem4d_report_new(&p->r);
}

mem4d_status mem4d_solve_max_micro_batch(const mem4d_model *model, const mem4d_layout *layout,
                                         const mem4d_device *device, uint64_t *mbs)
{
    if (!model || !layout || !device || !mbs)
        return MEM4D_E_INVALID_ARG;
    *mbs = 0;
    struct probe p = {model, device, *layout, MEM4D_LAYOUT_MICRO_BATCH, 1, NULL, NULL, 0};
    struct m4d_ctx x;
    uint64_t khi;
    mem4d_status st = probe_start(&p, &x, &khi);
    if (st != MEM4D_OK)
        return st;
    if (x.gbs != 0) {
        /* Only divisors of gbs / d keep the batch whole, and each is
         * estimated, largest first, until one fits: b sets the micro-batch
         * count m = gbs / (d·b), and where m falls below the pipeline's
         * depth a larger b can need less (the first stage's embedding
         * gradient is formed beside the other m − 1 micro-batches in
         * flight, b·(min(p, m) − 1) samples). */
        uint64_t div[M4D_MAX_DIVISORS];
        size_t nd = m4d_divisors(x.gbs / x.d, div, M4D_MAX_DIVISORS);
        while (nd > 0 && div[nd - 1] > khi)
            nd--;
        while (nd > 0 && !probe(&p, div[nd - 1], NULL))
            nd--;
        *mbs = p.best;
    } else {
        *mbs = solve_key(&p, khi);
    }
    mem4d_report_free(p.r);
    return MEM4D_OK;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

mem4d_status mem4d_solve_max_seq_length(const mem4d_model *model, const mem4d_layout *layout,
                                        const mem4d_device *device, uint64_t *seq)
{
    if (!model || !layout || !device || !seq)
        return MEM4D_E_INVALID_ARG;
    *seq = 0;
    const uint64_t *v = layout->v;
    uint64_t t = v[MEM4D_LAYOUT_TP], c = v[MEM4D_LAYOUT_CP];
    /* The smallest sequence every divisibility rule accepts: 2c for CP load
     * balancing, times t with sequence parallelism. */
    uint64_t a = c > 1 ? 2 * c : 1, b = v[MEM4D_LAYOUT_SEQUENCE_PARALLEL] && t > 1 ? t * c : 1;
    uint64_t unit = a / gcd(a, b) * b;
    struct probe p = {model, device, *layout, MEM4D_LAYOUT_SEQ_LENGTH, unit, NULL, NULL, 0};
    struct m4d_ctx x;
    uint64_t khi;
    mem4d_status st = probe_start(&p, &x, &khi);
    if (st != MEM4D_OK)
        return st;
    *seq = solve_key(&p, khi / unit) * unit;
    mem4d_report_free(p.r);
    return MEM4D_OK;
}

/* Does any layout fit on `gpus`? With `ranked`, the fastest into *out. */
static mem4d_status any_fits(const mem4d_model *model, const mem4d_device *device, const mem4d_layout *base,
                             uint64_t gpus, bool ranked, mem4d_layout *out, bool *found)
{
    mem4d_layout l = *base;
    l.v[MEM4D_LAYOUT_WORLD] = gpus;
    l.v[MEM4D_LAYOUT_DP] = 0;
    mem4d_search *s;
    mem4d_status st = mem4d_search_new(model, device, &l, &s);
    if (st != MEM4D_OK)
        return st;
    mem4d_search_set_option(s, MEM4D_SEARCH_RANKED, ranked);
    mem4d_search_set_option(s, MEM4D_SEARCH_MAX_RESULTS, 1);
    st = mem4d_search_next(s, out, NULL);
    *found = st == MEM4D_OK;
    mem4d_search_free(s);
    return st == MEM4D_END ? MEM4D_OK : st;
}

mem4d_status mem4d_solve_min_gpus(const mem4d_model *model, const mem4d_device *device,
                                  const mem4d_layout *base, uint64_t max_gpus,
                                  uint64_t *gpus, mem4d_layout *layout)
{
    if (!model || !device || !base || !gpus)
        return MEM4D_E_INVALID_ARG;
    *gpus = 0;
    uint64_t khi;
    mem4d_layout_param_bounds(MEM4D_LAYOUT_WORLD, NULL, &khi);
    if (max_gpus == 0 || max_gpus > khi)
        return MEM4D_E_RANGE;
    if (base->v[MEM4D_LAYOUT_SEQ_LENGTH] == 0 || device->v[MEM4D_DEVICE_MEMORY_BYTES] == 0)
        return MEM4D_E_MISSING;
    mem4d_status st = m4d_model_check(model, NULL, 0);
    if (st != MEM4D_OK)
        return st;
    /* Existence is an unranked search that stops at its first fit; only the
     * answer's GPU count pays for a ranked one. */
    mem4d_layout scratch;
    for (uint64_t n = 1; n <= max_gpus; n++) {
        bool found;
        if ((st = any_fits(model, device, base, n, false, &scratch, &found)) != MEM4D_OK)
            return st;
        if (!found)
            continue;
        *gpus = n;
        if (layout)
            return any_fits(model, device, base, n, true, layout, &found);
        return MEM4D_OK;
    }
    return MEM4D_OK;
}

mem4d_status mem4d_solve_best_layout(const mem4d_model *model, const mem4d_device *device,
                                     const mem4d_layout *base, mem4d_layout *layout, mem4d_report *report)
{
    if (!model || !device || !base || !layout)
        return MEM4D_E_INVALID_ARG;
    mem4d_search *s;
    mem4d_status st = mem4d_search_new(model, device, base, &s);
    if (st != MEM4D_OK)
        return st;
    st = mem4d_search_set_option(s, MEM4D_SEARCH_MAX_RESULTS, 1);
    if (st == MEM4D_OK)
        st = mem4d_search_next(s, layout, report); /* fits only, fastest first: the defaults */
    mem4d_search_free(s);
    return st;
}
