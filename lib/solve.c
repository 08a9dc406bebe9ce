/*
 * Solvers: the inverse questions. The largest micro-batch and the longest
 * sequence that fit (monotone searches over mem4d_estimate(), then a scan
 * above the answer where a stack's fused softmax declines a shape: memory
 * is then monotone only within each class, m4d_ctx_softmax_falls_back()),
 * and the fewest GPUs on which some layout fits (searches over GPU counts).
 * SPDX-License-Identifier: MIT
 */
#include "private.h"

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
};

static bool probe_fits(void *ctx, uint64_t x)
{
    struct probe *p = ctx;
    bool ok;
    p->l.v[p->key] = x * p->unit;
    fits(p->model, &p->l, p->dev, p->r, &ok);
    return ok;
}

/* Does the stack's fused softmax decline the probed key at x units? */
static bool probe_falls_back(const struct probe *p, const struct m4d_ctx *c, uint64_t x)
{
    bool seq = p->key == MEM4D_LAYOUT_SEQ_LENGTH;
    return m4d_ctx_softmax_falls_back(c, seq ? x * p->unit : c->s, seq ? c->b : x);
}

/* Where the fused softmax declines some shapes, memory is monotone only
 * within each class (fused, fallen back), and the fallback only adds to
 * the fused figure: a value that does not fit bounds every larger one
 * where it runs fused, and only the larger fallen-back ones where it falls
 * back. The candidates xs[0..n) (ascending) above the answer *best are
 * estimated up to the first fused one that does not fit; a fallen-back one
 * above one that did not fit is skipped unestimated. Every fused shape of
 * the micro-batch recurs within 256 (the kernel's largest batches per
 * block), of the sequence only up to the kernel's longest keys, so the
 * scan ends past those once a fallen-back one has failed. */
static void scan_past_fallback(struct probe *p, const struct m4d_ctx *c, const uint64_t *xs, uint64_t from,
                               size_t n, uint64_t *best)
{
    bool fell = false;
    uint64_t fell_at = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = xs ? xs[i] : from + i;
        bool back = probe_falls_back(p, c, x);
        if (back && fell) {
            bool seq = p->key == MEM4D_LAYOUT_SEQ_LENGTH;
            if (seq ? x * p->unit > c->softmax.keys : x - fell_at > 256)
                return;
            continue;
        }
        if (probe_fits(p, x))
            *best = x;
        else if (!back)
            return;
        else
            fell = true, fell_at = x;
    }
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
    mem4d_layout_param_bounds(p->key, NULL, khi);
    return mem4d_report_new(&p->r);
}

mem4d_status mem4d_solve_max_micro_batch(const mem4d_model *model, const mem4d_layout *layout,
                                         const mem4d_device *device, uint64_t *mbs)
{
    if (!model || !layout || !device || !mbs)
        return MEM4D_E_INVALID_ARG;
    *mbs = 0;
    struct probe p = {model, device, *layout, MEM4D_LAYOUT_MICRO_BATCH, 1, NULL};
    struct m4d_ctx x;
    uint64_t khi;
    mem4d_status st = probe_start(&p, &x, &khi);
    if (st != MEM4D_OK)
        return st;
    if (x.gbs != 0) {
        /* Only divisors of gbs / d keep the batch whole; memory grows with b
         * (within each softmax class: scan_past_fallback). */
        uint64_t div[M4D_MAX_DIVISORS];
        size_t nd = m4d_divisors(x.gbs / x.d, div, M4D_MAX_DIVISORS);
        while (nd > 0 && div[nd - 1] > khi)
            nd--;
        scan_past_fallback(&p, &x, div, 0, nd, mbs);
    } else {
        *mbs = last_true(probe_fits, &p, khi);
        if (x.softmax.keys && !x.flash && *mbs < khi)
            scan_past_fallback(&p, &x, NULL, *mbs + 1, khi - *mbs, mbs);
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
    struct probe p = {model, device, *layout, MEM4D_LAYOUT_SEQ_LENGTH, unit, NULL};
    struct m4d_ctx x;
    uint64_t khi;
    mem4d_status st = probe_start(&p, &x, &khi);
    if (st != MEM4D_OK)
        return st;
    uint64_t n = last_true(probe_fits, &p, khi / unit);
    if (x.softmax.keys && !x.flash && n < khi / unit)
        scan_past_fallback(&p, &x, NULL, n + 1, khi / unit - n, &n);
    *seq = n * unit;
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
