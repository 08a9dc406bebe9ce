/*
 * Search: enumerate every valid layout of a model on a GPU count, estimate
 * each, filter by memory and rank by predicted step time.
 *
 * The space is walked as groups (t, c, p, v, dist_opt, and for a model with
 * experts ep, etp and the dispatcher) — d follows from the world size — and,
 * inside a group, recompute modes and micro-batch sizes b.
 * Two facts let whole sub-spaces be skipped without an estimate when only
 * fitting layouts are wanted (both are checked against brute force by
 * tests/test-search.c):
 *  - weights, gradients and optimizer state of a stage do not depend on b,
 *    recompute or v, and dist_opt 1 never holds more of them than dist_opt
 *    0, so once they alone exceed the fit limit on some stage (at the
 *    group's smallest micro-batch count m: they can grow with m), no layout
 *    of that (t, c, p) with as little or less sharding fits;
 *  - the floor of m4d_floor_over_limit() never decreases when b grows at a
 *    fixed m, nor when m grows at a fixed b, so once the next b's floor at
 *    the group's smallest m does not fit, no larger b fits: where the
 *    stack's fused softmax runs at that b. Memory itself can fall as b
 *    grows (candidate_bounds()). Where the fused softmax declines b
 *    (m4d_ctx_softmax_falls_back()), PyTorch's fp32 softmax adds to the
 *    fused figure and a larger b that it takes may fit (micro-batch 4 below
 *    3), so no b is skipped then.
 * Nothing is allocated per layout: groups, micro-batch lists and ranked
 * results live in arrays grown geometrically.
 * SPDX-License-Identifier: MIT
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "private.h"

/* The searched knobs, in loop order from the outside in. */
enum { K_TP, K_CP, K_PP, K_DP, K_MBS, K_VPP, K_RC, K_DIST, K_EP, K_ETP, K_DISP, K_N };

static const mem4d_layout_param knob_key[] = {
    [K_TP] = MEM4D_LAYOUT_TP, [K_CP] = MEM4D_LAYOUT_CP, [K_PP] = MEM4D_LAYOUT_PP, [K_DP] = MEM4D_LAYOUT_DP,
    [K_MBS] = MEM4D_LAYOUT_MICRO_BATCH, [K_VPP] = MEM4D_LAYOUT_VPP, [K_RC] = MEM4D_LAYOUT_RECOMPUTE,
    [K_DIST] = MEM4D_LAYOUT_DIST_OPT, [K_EP] = MEM4D_LAYOUT_EP, [K_ETP] = MEM4D_LAYOUT_ETP,
    [K_DISP] = MEM4D_LAYOUT_MOE_DISPATCHER,
};
M4D_TABLE_ROWS(knob_key, K_N);

#define ALLOW_MAX 64
/* Micro-batch sizes tried when the global batch is unknown and b is not bounded. */
#define MBS_UNBOUNDED_MAX 64

struct knob {
    uint64_t lo, hi;
    uint64_t set[ALLOW_MAX]; /* sorted, unique; used when nset > 0 */
    size_t nset;
};

/* 32 bits a knob: world is at most 2^24 (params.c), so are t, c, p, d, ep,
 * etp and their products, and layers at most 4096. A search of every
 * layout holds thousands of groups (2,134 for Llama-3.1-405B on 16,384
 * GPUs): 40 bytes each instead of 88 are fewer pages to fault in. */
struct group {
    uint32_t t, c, p, d, v;
    uint32_t ep, etp;       /* expert parallelism (etp 0: t) */
    uint32_t first, last;   /* layers of the first and last stage; 0: even split */
    uint8_t dist, disp;     /* dist_opt and the dispatcher */
};

/* One ranked result: enough to rebuild the layout and order it. */
struct cand {
    double step;      /* predicted seconds; INFINITY without metrics */
    uint64_t peak;
    uint32_t mp;      /* model-parallel GPUs of its group, t x c x p (the tie-break's; at most world, 2^24) */
    uint32_t gi;      /* index of its group */
    uint32_t b;
    uint8_t rc, verdict;
};

/* The recompute modes a search may try: none, selective, full, and
 * torchtitan's op policy (mem4d_layout_recompute values 0 to 3). */
#define RC_MODES 4
/* The activation terms of the groups of one m4d_act_key() (p, d, v and
 * dist_opt vary among them), by b and recompute mode. */
#define ACT_SIGS 32
#define ACT_BS 16
struct act_sig {
    bool used;
    uint64_t key[M4D_ACT_KEY_LEN];
    struct {
        uint64_t b; /* 0: a free slot */
        struct m4d_act_terms rc[RC_MODES];
    } per_b[ACT_BS];
};

/* The b terms of the groups of one m4d_b_key() (v and dist_opt vary among
 * a search's consecutive groups; under Megatron both leave the key), by b.
 * Four: DeepSpeed's two ZeRO stages of one (t, c, p) and room to spare, and
 * the search stays below glibc's 128 KiB mmap threshold (eight crossed it:
 * every new search then faulted its pages in, +0.1 ms a plan). */
#define B_SIGS 4
struct b_sig {
    bool used;
    struct m4d_ctx key;
    struct m4d_b_terms per_b[M4D_B_SLOTS];
};

struct mem4d_search {
    mem4d_model model;
    mem4d_device dev;
    mem4d_layout base, work;
    uint64_t opt[M4D_NSEARCH_OPTIONS];
    struct knob knob[K_N];
    bool started, built;
    /* enumeration */
    struct group *groups;
    size_t ngroups, gcap;
    uint64_t *mbs;     /* b values of the current group */
    size_t nmbs, mcap;
    uint64_t mbs_d;    /* the d they are of (0: none yet) */
    uint64_t *gbs_div; /* divisors of the global batch */
    size_t ngbs_div, gdcap;
    uint64_t rcs[RC_MODES];
    size_t nrc;
    size_t gi, ri, bi; /* position: next candidate to evaluate */
    bool in_group;
    struct group dead; /* the last group whose static bytes cannot fit (p = 0: none) */
    uint64_t bad_t;    /* a t whose heads rule the model refuses (0: none) */
    struct m4d_ctx gx; /* the current group's context, resolved once */
    struct m4d_perf_group pg; /* the step-time model's share of the group (pg_ready) */
    bool pg_ready;
    struct m4d_machine mc; /* m4d_perf_machine() of the search's framework, fp8 and device (mc_ready) */
    bool mc_ready;
    struct m4d_state_cache sc; /* the group's state terms (m4d_estimate_full) */
    signed char rc_ok[RC_MODES]; /* the group's recompute rules per mode: 1, 0, or -1 not yet known */
    struct m4d_perf_b pb[64];  /* per-b step-time terms by pb_slot(b) (m4d_perf_fill_memo), */
    unsigned char pb_key[M4D_PERF_B_KEY_BYTES]; /* of the groups with this key (m4d_perf_b_shared) */
    bool pb_keyed;
    struct act_sig act[ACT_SIGS]; /* activation terms across groups, by key hash (direct-mapped) */
    struct act_sig *gact;         /* the current group's (NULL: not kept) */
    struct b_sig bsig[B_SIGS];    /* b terms across groups, by a hash of their key's group knobs */
    struct m4d_resolve_memo rmemo; /* the model's parameter count at the last V_p resolved */
    struct m4d_ctx x;  /* the candidate's */
    /* ranking */
    struct cand *cands;
    size_t ncand, ccap, ci;
    bool ranked_done;
    mem4d_report *scratch;
    uint64_t stat[M4D_NSEARCH_STATS];
};

static int knob_index(mem4d_layout_param key)
{
    for (int i = 0; i < K_N; i++)
        if (knob_key[i] == key)
            return i;
    return -1;
}

int mem4d_search_varies(mem4d_layout_param key)
{
    return knob_index(key) >= 0;
}

static bool knob_allows(const struct knob *k, uint64_t v)
{
    if (v < k->lo || v > k->hi)
        return false;
    if (k->nset == 0)
        return true;
    for (size_t i = 0; i < k->nset; i++)
        if (k->set[i] == v)
            return true;
    return false;
}

/* Geometric growth of an array of `size`-byte elements; false on failure. */
static bool grow(void **arr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *p = realloc(*arr, n * size);
    if (!p)
        return false;
    *arr = p;
    *cap = n;
    return true;
}

static void knobs_default(mem4d_search *s)
{
    for (int i = 0; i < K_N; i++) {
        uint64_t lo, hi;
        mem4d_layout_param_bounds(knob_key[i], &lo, &hi);
        s->knob[i].lo = lo;
        s->knob[i].hi = hi;
        s->knob[i].nset = 0;
    }
    s->knob[K_DP].lo = 1; /* dp 0 means "derive" in a layout, never in a search */
}

mem4d_status mem4d_search_new(const mem4d_model *model, const mem4d_device *device,
                              const mem4d_layout *base, mem4d_search **out)
{
    if (!out)
        return MEM4D_E_INVALID_ARG;
    *out = NULL;
    if (!model || !device || !base)
        return MEM4D_E_INVALID_ARG;
    if (base->v[MEM4D_LAYOUT_WORLD] == 0 || base->v[MEM4D_LAYOUT_SEQ_LENGTH] == 0 ||
        device->v[MEM4D_DEVICE_MEMORY_BYTES] == 0)
        return MEM4D_E_MISSING;
    mem4d_status st = m4d_model_check(model, NULL, 0);
    if (st != MEM4D_OK)
        return st;
    mem4d_search *s = calloc(1, sizeof *s);
    if (!s)
        return MEM4D_E_NOMEM;
    if (mem4d_report_new(&s->scratch) != MEM4D_OK) {
        free(s);
        return MEM4D_E_NOMEM;
    }
    s->model = *model;
    s->dev = *device;
    s->base = *base;
    for (size_t i = 0; i < M4D_NSEARCH_OPTIONS; i++)
        s->opt[i] = m4d_search_options[i].def;
    knobs_default(s);
    *out = s;
    return MEM4D_OK;
}

void mem4d_search_free(mem4d_search *search)
{
    if (!search)
        return;
    free(search->groups);
    free(search->mbs);
    free(search->gbs_div);
    free(search->cands);
    mem4d_report_free(search->scratch);
    free(search);
}

mem4d_status mem4d_search_set_option(mem4d_search *search, mem4d_search_option option, uint64_t value)
{
    if (!search || (unsigned)option >= M4D_NSEARCH_OPTIONS)
        return MEM4D_E_INVALID_ARG;
    if (search->started)
        return MEM4D_E_CONFLICT;
    if (m4d_search_options[option].kind == MEM4D_KIND_BOOLEAN && value > 1)
        return MEM4D_E_RANGE;
    search->opt[option] = value;
    return MEM4D_OK;
}

/* Common checks of bound() and allow(); returns the knob or NULL with *st set. */
static struct knob *knob_for(mem4d_search *search, mem4d_layout_param key, mem4d_status *st)
{
    *st = MEM4D_E_INVALID_ARG;
    if (!search)
        return NULL;
    int i = knob_index(key);
    if (i < 0) {
        *st = (unsigned)key < M4D_LAYOUT_NPARAM ? MEM4D_E_UNSUPPORTED : MEM4D_E_INVALID_ARG;
        return NULL;
    }
    if (search->started) {
        *st = MEM4D_E_CONFLICT;
        return NULL;
    }
    *st = MEM4D_OK;
    return &search->knob[i];
}

mem4d_status mem4d_search_bound(mem4d_search *search, mem4d_layout_param key, uint64_t min, uint64_t max)
{
    mem4d_status st;
    struct knob *k = knob_for(search, key, &st);
    if (!k)
        return st;
    uint64_t klo, khi;
    mem4d_layout_param_bounds(key, &klo, &khi);
    if (min > max || min < klo || max > khi)
        return MEM4D_E_RANGE;
    uint64_t lo = min > k->lo ? min : k->lo, hi = max < k->hi ? max : k->hi;
    if (lo > hi)
        return MEM4D_E_RANGE;
    k->lo = lo;
    k->hi = hi;
    return MEM4D_OK;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

mem4d_status mem4d_search_allow(mem4d_search *search, mem4d_layout_param key, const uint64_t *values, size_t count)
{
    mem4d_status st;
    struct knob *k = knob_for(search, key, &st);
    if (!k)
        return st;
    if (!values)
        return MEM4D_E_INVALID_ARG;
    if (count == 0 || count > ALLOW_MAX)
        return MEM4D_E_RANGE;
    uint64_t klo, khi, tmp[ALLOW_MAX];
    mem4d_layout_param_bounds(key, &klo, &khi);
    for (size_t i = 0; i < count; i++) {
        if (values[i] < klo || values[i] > khi)
            return MEM4D_E_RANGE;
        tmp[i] = values[i];
    }
    qsort(tmp, count, sizeof tmp[0], cmp_u64);
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (n == 0 || tmp[n - 1] != tmp[i])
            tmp[n++] = tmp[i];
    memcpy(k->set, tmp, n * sizeof tmp[0]);
    k->nset = n;
    return MEM4D_OK;
}

mem4d_status mem4d_search_reset(mem4d_search *search)
{
    if (!search)
        return MEM4D_E_INVALID_ARG;
    search->started = false;
    search->gi = search->ri = search->bi = 0;
    search->in_group = false;
    search->dead.p = 0;
    search->bad_t = 0;
    search->mbs_d = 0; /* the knobs may change before the next start */
    search->ncand = search->ci = 0;
    search->ranked_done = false;
    memset(search->stat, 0, sizeof search->stat);
    return MEM4D_OK;
}

mem4d_status mem4d_search_stat_get(const mem4d_search *search, mem4d_search_stat stat, uint64_t *value)
{
    if (!search || !value || (unsigned)stat >= M4D_NSEARCH_STATS)
        return MEM4D_E_INVALID_ARG;
    *value = search->stat[stat];
    return MEM4D_OK;
}

/* Append group g once per expert layout: with `div_e` (the experts'
 * divisors: a model with experts whose layout leaves ep at 1) every ep
 * whose ep·etp ranks fold into the stage's t·d·c, etp 1 or t (Megatron-
 * Core's parallel folding, or the experts split like the dense layers), and
 * every dispatcher (m4d_resolve() and m4d_check_device() refuse what DeepEP
 * cannot run; a dispatcher whose rates are not sourced on the device,
 * m4d_dispatcher_sourced(), only when the dispatcher knob is set);
 * else the base layout's. false when out of memory. */
static bool experts_groups(mem4d_search *s, struct group *g, const uint64_t *div_e, size_t ndiv_e)
{
    const uint64_t *b = s->base.v;
    uint64_t eps[1] = {b[MEM4D_LAYOUT_EP]}, etps[2] = {b[MEM4D_LAYOUT_ETP], 0};
    const uint64_t *ep = div_e ? div_e : eps;
    size_t nep = div_e ? ndiv_e : 1, netp = 1;
    uint64_t disp_lo = b[MEM4D_LAYOUT_MOE_DISPATCHER], disp_hi = disp_lo;
    if (div_e) {
        etps[0] = 1, etps[1] = g->t;
        netp = g->t > 1 ? 2 : 1;
        disp_lo = 0, disp_hi = MEM4D_MOE_DISPATCHER_HYBRIDEP;
    }
    const struct knob *kd = &s->knob[K_DISP];
    bool listed = kd->nset != 0 || kd->lo != 0; /* the dispatcher knob set: what it lists is tried */
    uint64_t tdc = g->t * g->d * g->c;
    for (size_t i = 0; i < nep; i++) {
        if (div_e && !knob_allows(&s->knob[K_EP], ep[i]))
            continue;
        for (size_t j = 0; j < netp; j++) {
            uint64_t etp = etps[j] ? etps[j] : g->t;
            if (div_e && (!knob_allows(&s->knob[K_ETP], etp) || tdc % (ep[i] * etp) != 0))
                continue;
            for (uint64_t disp = disp_lo; disp <= disp_hi; disp++) {
                if (div_e && (!knob_allows(kd, disp) || (!listed && !m4d_dispatcher_sourced(&s->dev, disp)) ||
                              (disp >= MEM4D_MOE_DISPATCHER_DEEPEP && ep[i] * etp < 2)))
                    continue;
                if (!grow((void **)&s->groups, &s->gcap, s->ngroups + 1, sizeof *s->groups))
                    return false;
                g->ep = ep[i], g->etp = etps[j], g->disp = disp;
                s->groups[s->ngroups++] = *g;
            }
        }
    }
    return true;
}

/* A pipeline size's split in the search: whether p is tried (ok), its end
 * stages and which v up to vmax its rule allows (v of P_SPLIT_V and above
 * are asked of m4d_split_check() each time, in sp). */
#define P_SPLIT_V 256
struct p_split {
    bool known, ok;
    uint64_t first, last, vmax;
    uint64_t vbits[P_SPLIT_V / 64];
    struct m4d_split sp;
};

static void p_split_of(const mem4d_search *s, const struct m4d_split *base_split, uint64_t p, struct p_split *q)
{
    q->known = true;
    q->ok = m4d_split_search_at(base_split, p, s->opt[MEM4D_SEARCH_UNEVEN_STAGES] != 0, &q->sp);
    if (!q->ok)
        return;
    q->first = q->sp.first;
    q->last = q->sp.last;
    /* the split's own rule decides which v hold (stages.c) */
    q->vmax = m4d_split_vpp_max(&q->sp);
    for (uint64_t v = 1; v <= q->vmax && v < P_SPLIT_V; v++) {
        m4d_split_at(&q->sp, p, v);
        if (m4d_split_check(&q->sp, NULL, 0) == MEM4D_OK)
            q->vbits[v / 64] |= UINT64_C(1) << (v % 64);
    }
}

static bool p_split_allows(struct p_split *q, uint64_t v)
{
    if (v < P_SPLIT_V)
        return (q->vbits[v / 64] >> (v % 64)) & 1u;
    m4d_split_at(&q->sp, q->sp.p, v);
    return m4d_split_check(&q->sp, NULL, 0) == MEM4D_OK;
}

/* Every (t, c, p, v, dist_opt) the constraints allow, in loop order. The
 * rules that need the model are left to m4d_resolve() at group entry. */
static bool build_groups(mem4d_search *s)
{
    uint64_t world = s->base.v[MEM4D_LAYOUT_WORLD], L = s->model.v[MEM4D_MODEL_NUM_LAYERS];
    /* "Within a node" is within the NVLink domain: a whole NVL72 rack. */
    uint64_t gpn = s->dev.v[MEM4D_DEVICE_NVLINK_DOMAIN] ? s->dev.v[MEM4D_DEVICE_NVLINK_DOMAIN]
                                                       : s->dev.v[MEM4D_DEVICE_GPUS_PER_NODE];
    bool local = s->opt[MEM4D_SEARCH_NODE_LOCAL] != 0, dist_applies = m4d_dist_opt_applies(s->base.v);
    /* The base layout's form of split (stages.c): uneven ends, shorter end
     * virtual stages, a layer table; each (p, v) below takes that form. */
    struct m4d_split base_split;
    m4d_split_init(&base_split, &s->base, L, s->model.v[MEM4D_MODEL_MTP_LAYERS]);
    uint64_t div[M4D_MAX_DIVISORS];
    size_t nd = m4d_divisors(world, div, M4D_MAX_DIVISORS);
    /* a model with experts and no ep given: ep over the divisors of the experts */
    uint64_t div_e[M4D_MAX_DIVISORS], E = s->model.v[MEM4D_MODEL_NUM_EXPERTS];
    size_t ndiv_e = E && s->base.v[MEM4D_LAYOUT_EP] == 1 ? m4d_divisors(E, div_e, M4D_MAX_DIVISORS) : 0;
    /* What depends on p alone (its split: uneven ends, the v it allows) is
     * found at p's first (t, c) and kept for the others. */
    struct p_split *ps = calloc(nd ? nd : 1, sizeof *ps);
    if (!ps)
        return false;
    s->ngroups = 0;
    for (size_t i = 0; i < nd; i++) {
        uint64_t t = div[i];
        if (!knob_allows(&s->knob[K_TP], t) || (local && t > gpn))
            continue;
        for (size_t j = 0; j < nd; j++) {
            uint64_t c = div[j];
            if ((world / t) % c != 0 || !knob_allows(&s->knob[K_CP], c) || (local && t * c > gpn))
                continue;
            for (size_t k = 0; k < nd; k++) {
                uint64_t p = div[k];
                if ((world / t / c) % p != 0 || p > M4D_MAX_STAGES || !knob_allows(&s->knob[K_PP], p))
                    continue;
                uint64_t d = world / t / c / p;
                if (!knob_allows(&s->knob[K_DP], d))
                    continue;
                struct p_split *q = &ps[k];
                if (!q->known)
                    p_split_of(s, &base_split, p, q);
                if (!q->ok)
                    continue;
                uint64_t first = q->first, last = q->last;
                for (uint64_t v = 1; v <= q->vmax; v++) {
                    if (!p_split_allows(q, v))
                        continue;
                    if (!knob_allows(&s->knob[K_VPP], v))
                        continue;
                    /* dist_opt 1 first: when its static bytes cannot fit,
                     * neither can dist_opt 0's (see dead_block); where it
                     * shapes nothing (a zero_stage given, torchtitan) one
                     * value, the first allowed, not two alike layouts */
                    for (uint64_t dist = 2; dist-- > 0;) {
                        if (!knob_allows(&s->knob[K_DIST], dist))
                            continue;
                        struct group g = {.t = t, .c = c, .p = p, .d = d, .v = v, .dist = dist, .first = first, .last = last};
                        if (!experts_groups(s, &g, ndiv_e ? div_e : NULL, ndiv_e)) {
                            free(ps);
                            return false;
                        }
                        if (!dist_applies)
                            break;
                    }
                }
            }
        }
    }
    free(ps);
    /* the modes of the job's framework (op: torchtitan's alone), as the
     * estimate's recompute rules take them (m4d_recompute_mode_ok) */
    s->nrc = 0;
    mem4d_framework fw = (mem4d_framework)s->base.v[MEM4D_LAYOUT_FRAMEWORK];
    for (uint64_t rc = 0; rc < RC_MODES; rc++)
        if (knob_allows(&s->knob[K_RC], rc) &&
            m4d_param_applies(&m4d_layout_params[MEM4D_LAYOUT_RECOMPUTE], rc, fw, MEM4D_MODE_FULL, NULL, 0))
            s->rcs[s->nrc++] = rc;
    return true;
}

/* Micro-batch sizes of a group: divisors b of gbs / d, or, with the global
 * batch unknown, every allowed b up to the bound (64 unless bounded). */
static bool list_mbs(mem4d_search *s, const struct group *g)
{
    const struct knob *k = &s->knob[K_MBS];
    uint64_t gbs = s->base.v[MEM4D_LAYOUT_GLOBAL_BATCH];
    if (gbs != 0) {
        if (gbs % g->d != 0)
            return true;
        uint64_t q = gbs / g->d;
        if (!grow((void **)&s->mbs, &s->mcap, s->ngbs_div, sizeof *s->mbs))
            return false;
        for (size_t i = 0; i < s->ngbs_div && s->gbs_div[i] <= q; i++)
            if (q % s->gbs_div[i] == 0 && knob_allows(k, s->gbs_div[i]))
                s->mbs[s->nmbs++] = s->gbs_div[i];
        return true;
    }
    uint64_t khi;
    mem4d_layout_param_bounds(MEM4D_LAYOUT_MICRO_BATCH, NULL, &khi);
    uint64_t hi = k->hi < khi ? k->hi : (k->lo > MBS_UNBOUNDED_MAX ? k->lo : MBS_UNBOUNDED_MAX);
    for (uint64_t b = k->lo; b <= hi; b++) {
        if (!knob_allows(k, b))
            continue;
        if (!grow((void **)&s->mbs, &s->mcap, s->nmbs + 1, sizeof *s->mbs))
            return false;
        s->mbs[s->nmbs++] = b;
    }
    return true;
}

/* The group's micro-batch list, refilled only when d changes (it depends on
 * d alone); mbs_d names the d it is of once it is whole. */
static bool fill_mbs(mem4d_search *s, const struct group *g)
{
    if (s->mbs_d == g->d)
        return true;
    s->nmbs = 0;
    s->mbs_d = 0;
    if (!list_mbs(s, g))
        return false;
    s->mbs_d = g->d;
    return true;
}

static void set_work(mem4d_search *s, const struct group *g, uint64_t b, uint64_t rc)
{
    uint64_t *v = s->work.v;
    v[MEM4D_LAYOUT_TP] = g->t;
    v[MEM4D_LAYOUT_CP] = g->c;
    v[MEM4D_LAYOUT_PP] = g->p;
    v[MEM4D_LAYOUT_DP] = g->d;
    v[MEM4D_LAYOUT_WORLD] = g->t * g->c * g->p * g->d;
    v[MEM4D_LAYOUT_MICRO_BATCH] = b;
    v[MEM4D_LAYOUT_VPP] = g->v;
    v[MEM4D_LAYOUT_RECOMPUTE] = rc;
    v[MEM4D_LAYOUT_DIST_OPT] = g->dist;
    v[MEM4D_LAYOUT_FIRST_STAGE_LAYERS] = g->first;
    v[MEM4D_LAYOUT_LAST_STAGE_LAYERS] = g->last;
    v[MEM4D_LAYOUT_EP] = g->ep;
    v[MEM4D_LAYOUT_ETP] = g->etp;
    v[MEM4D_LAYOUT_MOE_DISPATCHER] = g->disp;
}

/* FNV-1a of n words, its high bits folded down (a cache's slot). */
static uint64_t key_hash(const uint64_t *k, size_t n)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ k[i]) * 1099511628211u;
    return h ^ (h >> 29);
}

/* The activation terms kept for the groups of x's m4d_act_key(): found,
 * or a slot reset for it; NULL when they are not kept. The slot is picked
 * by the knobs of the key that tell a search's groups apart, the key
 * compared whole (as b_sig_of()). */
static struct act_sig *act_sig_of(mem4d_search *s, const struct m4d_ctx *x)
{
    uint64_t key[M4D_ACT_KEY_LEN];
    if (!m4d_act_key(x, key))
        return NULL;
    const uint64_t k[] = {x->t, x->c, x->ep, x->etp, x->dispatcher, x->sp};
    struct act_sig *g = &s->act[key_hash(k, M4D_LEN(k)) % ACT_SIGS];
    if (!g->used || memcmp(g->key, key, sizeof key) != 0) {
        memset(g, 0, sizeof *g);
        memcpy(g->key, key, sizeof key);
        g->used = true;
    }
    return g;
}

/* The b terms kept for the groups of x's m4d_b_key(): found, or a slot
 * reset for it; NULL when they are not kept. The slot is picked by the
 * knobs that tell a search's groups apart, the key compared whole. */
static struct m4d_b_terms *b_sig_of(mem4d_search *s, const struct m4d_ctx *x)
{
    struct m4d_ctx key;
    if (!m4d_b_key(x, &key))
        return NULL;
    const uint64_t k[] = {key.t, key.c, key.p, key.d, key.zero, key.ep, key.etp, key.dispatcher,
                          key.split.first, key.split.last};
    struct b_sig *g = &s->bsig[key_hash(k, M4D_LEN(k)) % B_SIGS];
    if (!g->used || memcmp(&g->key, &key, sizeof key) != 0) {
        for (size_t i = 0; i < M4D_B_SLOTS; i++)
            g->per_b[i].b = 0;
        memcpy(&g->key, &key, sizeof key);
        g->used = true;
    }
    return g->per_b;
}

/* Resolve the group once, with its first b and no recompute: every rule
 * but the batch split (b divides gbs / d by construction) and the rules of
 * the recompute mode (quick_estimate) depends on the group alone. */
static bool group_valid(mem4d_search *s, const struct group *g)
{
    set_work(s, g, s->mbs[0], 0);
    s->pg_ready = false;
    m4d_state_cache_clear(&s->sc);
    memset(s->rc_ok, -1, sizeof s->rc_ok);
    mem4d_status st = m4d_resolve_memo(&s->model, &s->work, &s->gx, NULL, 0, &s->rmemo);
    if (st == MEM4D_OK)
        st = m4d_check_device(&s->gx, &s->dev, NULL, 0);
    m4d_ctx_device(&s->gx, &s->work, &s->dev);
    if (st == MEM4D_E_HEADS_TP || st == MEM4D_E_KV_HEADS_TP)
        s->bad_t = g->t; /* a rule of the model's heads and t alone: no group of this t is valid */
    if (st != MEM4D_OK)
        return false;
    s->x = s->gx; /* quick_estimate() changes b, the recompute mode and m alone */
    s->gact = act_sig_of(s, &s->gx);
    s->sc.per_b = b_sig_of(s, &s->gx);
    return true;
}

/* The slot of b among the group's activation terms: the one holding it,
 * else the free one where b's probe sequence ends (taken for b), else NULL. */
static struct m4d_act_terms *act_slot(struct act_sig *g, uint64_t b, uint64_t rc)
{
    _Static_assert(ACT_BS == 16, "m4d_b_probe() hashes into 16 slots");
    if (!g || rc >= 3)
        return NULL;
    for (size_t i = 0; i < ACT_BS; i++) {
        size_t k = m4d_b_probe(b, i);
        if (g->per_b[k].b == b)
            return &g->per_b[k].rc[rc];
        if (g->per_b[k].b == 0) {
            g->per_b[k].b = b;
            return &g->per_b[k].rc[rc];
        }
    }
    return NULL;
}

/* mem4d_estimate() of the work layout from the group's context: only what
 * b and the recompute mode change is redone, and the speed metrics wait
 * until the layout passes the filter (m4d_perf() in scan()). The report is
 * field for field mem4d_estimate()'s; tests/test-search.c proves it. */
static M4D_INLINE mem4d_status quick_estimate_m(mem4d_search *s, uint64_t b, uint64_t rc, uint64_t m, bool peak_only)
{
    struct m4d_ctx *x = &s->x;
    mem4d_report *r = s->scratch;
    x->b = b;
    x->recompute = rc;
    x->m = m;
    m4d_report_reset(r, &s->dev);
    mem4d_status st = MEM4D_E_CONFLICT; /* m4d_resolve()'s status for the rule */
    /* the recompute rules depend on the group and the mode alone */
    if (M4D_UNLIKELY(s->rc_ok[rc] < 0))
        s->rc_ok[rc] = m4d_recompute_layers_ok(x) && m4d_recompute_mode_ok(x, NULL, 0);
    if (s->rc_ok[rc]) {
        s->sc.act = act_slot(s->gact, b, rc);
        st = m4d_estimate_ctx(x, &s->dev, r, peak_only, &s->sc);
    }
    m4d_report_done(r, st);
    return st;
}

static M4D_INLINE mem4d_status quick_estimate(mem4d_search *s, uint64_t b, uint64_t rc, bool peak_only)
{
    return quick_estimate_m(s, b, rc, s->x.gbs ? s->x.gbs / (b * s->x.d) : 0, peak_only);
}

/* b's slot among the per-b step-time terms: b itself up to 48, above it
 * by its factors of 2 (the larger b of a global batch's divisors). */
static size_t pb_slot(uint64_t b)
{
    return b <= 48 ? (size_t)(b - 1) : 48 + (size_t)__builtin_ctzll(b) % 16;
}

/* The speed metrics of the candidate: what its group shares is computed
 * once, at the group's first layout that needs it. */
static M4D_INLINE void search_perf(mem4d_search *s)
{
    if (M4D_UNLIKELY(!s->pg_ready)) {
        /* the layer's share, which the group's state cache holds after its
         * first estimate (b, m and the recompute mode do not change it) */
        const uint64_t *c = s->sc.share;
        struct layer_share share = {c[0], c[1], c[2]};
        if (M4D_UNLIKELY(!s->mc_ready)) /* no knob changes what it reads */
            s->mc = m4d_perf_machine(&s->gx, &s->dev), s->mc_ready = true;
        m4d_perf_prepare(&s->gx, &s->dev, s->sc.have_group ? &share : NULL, &s->mc, &s->pg);
        s->pg_ready = true;
        if (!s->pb_keyed || !m4d_perf_b_shared(&s->pg, s->pb_key)) {
            memset(s->pb, 0, sizeof s->pb);
            m4d_perf_b_key(&s->pg, s->pb_key);
            s->pb_keyed = true;
        }
    }
    m4d_perf_fill_memo(&s->x, &s->pg, &s->pb[pb_slot(s->x.b)], s->scratch);
}

/* Weights, gradients and optimizer state do not depend on v or the
 * dispatcher, and dist_opt 1 never holds more of them than dist_opt 0: a
 * group of the same (t, c, p, ep, etp) as a dead one, and with no more
 * sharding, cannot fit either. */
static bool dead_block(const mem4d_search *s, const struct group *g)
{
    const struct group *d = &s->dead;
    return d->p != 0 && g->t == d->t && g->c == d->c && g->p == d->p && g->ep == d->ep && g->etp == d->etp &&
           g->dist <= d->dist;
}

/* Enter the next group that has candidates; false at the end (or on ENOMEM,
 * reported through *err). */
static bool enter_group(mem4d_search *s, mem4d_status *err)
{
    for (; s->gi < s->ngroups; s->gi++) {
        const struct group *g = &s->groups[s->gi];
        if (!fill_mbs(s, g)) {
            *err = MEM4D_E_NOMEM;
            return false;
        }
        if (s->opt[MEM4D_SEARCH_FITS_ONLY] && dead_block(s, g)) {
            s->stat[MEM4D_SEARCH_STAT_PRUNED] += (uint64_t)s->nrc * s->nmbs;
            continue;
        }
        if (g->t == s->bad_t)
            continue;
        if (s->nmbs > 0 && s->nrc > 0 && group_valid(s, g)) {
            s->ri = s->bi = 0;
            s->in_group = true;
            return true;
        }
    }
    return false;
}

/* Position the work layout on the next candidate; false at the end. */
static bool next_candidate(mem4d_search *s, mem4d_status *err)
{
    for (;;) {
        if (!s->in_group && !enter_group(s, err))
            return false;
        if (s->ri < s->nrc && s->bi < s->nmbs) {
            /* group_valid() set the group's knobs */
            s->work.v[MEM4D_LAYOUT_MICRO_BATCH] = s->mbs[s->bi];
            s->work.v[MEM4D_LAYOUT_RECOMPUTE] = s->rcs[s->ri];
            s->bi++;
            return true;
        }
        if (s->ri + 1 < s->nrc) {
            s->ri++;
            s->bi = 0;
            continue;
        }
        s->in_group = false;
        s->gi++;
    }
}

/* Skip the larger micro-batches of the current recompute mode. */
static void prune_mbs(mem4d_search *s)
{
    s->stat[MEM4D_SEARCH_STAT_PRUNED] += s->nmbs - s->bi;
    s->bi = s->nmbs;
}

/* Skip the rest of the group: every later (recompute, b). */
static void prune_group(mem4d_search *s)
{
    prune_mbs(s);
    s->stat[MEM4D_SEARCH_STAT_PRUNED] += (uint64_t)(s->nrc - s->ri - 1) * s->nmbs;
    s->ri = s->nrc;
}

/* Do the weights, gradients and optimizer state of some stage alone
 * exceed the fit limit? They do not depend on b or recompute, and depend on
 * m only where they grow with it (torchtitan's FSDP2 keeps an unsharded
 * gradient to accumulate into when m > 1). */
static bool static_over_limit(const mem4d_search *s)
{
    const mem4d_report *r = s->scratch;
    /* the stages not filled are like stage 1 */
    for (uint32_t i = 0; i < r->nstages; i = (uint32_t)m4d_stage_next(r->peak_only, i, r->nstages)) {
        const uint64_t *t = r->stages[i].t;
        unsigned __int128 sum = (unsigned __int128)t[MEM4D_TERM_WEIGHTS] + t[MEM4D_TERM_GRADIENTS]
                                + t[MEM4D_TERM_OPTIMIZER];
        if (sum > UINT64_MAX || m4d_over_fit_limit(&s->dev, r->mode, (uint64_t)sum))
            return true;
    }
    return false;
}

/* What a candidate that does not fit bounds: nothing, the larger b of its
 * recompute mode, or its whole group. Memory can fall as b grows: the
 * logits blocks' segments (m4d_floor_over_limit() leaves them out), and
 * with a known global batch the micro-batch count m = gbs/(d·b) falls with
 * it, and with it what the other micro-batches in flight hold beside this
 * one (llama2-7b at pp 2, 8 tokens, global batch 64 on 8 GPUs: 90 MB less
 * at b 16, m 1, than at b 8, m 2, whose first stage forms its embedding
 * gradient beside the other micro-batch) and, under torchtitan, the
 * gradient accumulated over m > 1. The floor grows with b at a fixed m and
 * with m at a fixed b, and the weights, gradients and optimizer state with
 * m alone, so the next b's figures at the smallest m of the group (its
 * last b's) bound every larger b, and the state every b. They are
 * estimated where the candidate's own figures do not fit (figures that fit
 * at m fit at a smaller m and at the candidate's b; there the candidate
 * misses by the segments it strands, and the walk goes on). Where the
 * fused softmax declines a b, a larger b that it takes may fit: a b that
 * falls back bounds no larger b, and where the next b falls back the
 * candidate's own b is estimated at that m instead. */
enum { BOUNDS_NONE, BOUNDS_MBS, BOUNDS_GROUP };
static int candidate_bounds(mem4d_search *s)
{
    struct m4d_ctx *x = &s->x;
    bool state = static_over_limit(s), fused = !m4d_ctx_softmax_falls_back(x, x->s, x->b);
    bool floor = fused && m4d_floor_over_limit(x, &s->dev, s->scratch);
    uint64_t m_last = x->gbs ? x->gbs / (s->mbs[s->nmbs - 1] * x->d) : 0;
    if ((state || floor) && x->m != m_last && s->bi < s->nmbs) {
        uint64_t next = s->mbs[s->bi], at = m4d_ctx_softmax_falls_back(x, x->s, next) ? x->b : next;
        /* the b terms of the group's cache hold each b's own m: not read or written */
        struct m4d_b_terms *per_b = s->sc.per_b;
        s->sc.per_b = NULL;
        mem4d_status st = quick_estimate_m(s, at, x->recompute, m_last, true);
        s->sc.per_b = per_b;
        if (st != MEM4D_OK)
            return BOUNDS_NONE;
        state = state && static_over_limit(s);
        floor = floor && m4d_floor_over_limit(x, &s->dev, s->scratch);
    }
    return state ? BOUNDS_GROUP : floor ? BOUNDS_MBS : BOUNDS_NONE;
}

/* Estimate candidates until one passes the filter: true with it in work and
 * scratch; false at the end, or on an error left in *err. */
static bool scan(mem4d_search *s, mem4d_status *err)
{
    bool fits_only = s->opt[MEM4D_SEARCH_FITS_ONLY] != 0;
    while (next_candidate(s, err)) {
        if (quick_estimate(s, s->work.v[MEM4D_LAYOUT_MICRO_BATCH], s->work.v[MEM4D_LAYOUT_RECOMPUTE], true) !=
            MEM4D_OK)
            continue; /* an invalid layout: not visited */
        s->stat[MEM4D_SEARCH_STAT_VISITED]++;
        s->stat[MEM4D_SEARCH_STAT_VALID]++;
        if (!fits_only || s->scratch->verdict == MEM4D_VERDICT_FITS) {
            search_perf(s);
            return true;
        }
        int bounds = candidate_bounds(s);
        if (bounds == BOUNDS_GROUP) {
            prune_group(s);
            s->dead = s->groups[s->gi];
        } else if (bounds == BOUNDS_MBS) {
            prune_mbs(s);
        }
    }
    return false;
}

/* Deterministic total order: verdict, step time, peak, then the knobs in
 * enumeration order. */
static int cmp_cand(const void *pa, const void *pb)
{
    const struct cand *a = pa, *b = pb;
    if (a->verdict != b->verdict)
        return a->verdict < b->verdict ? -1 : 1;
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    if (a->peak != b->peak)
        return a->peak < b->peak ? -1 : 1;
    if (a->gi != b->gi)
        return a->gi < b->gi ? -1 : 1;
    if (a->rc != b->rc)
        return a->rc < b->rc ? -1 : 1;
    return (a->b > b->b) - (a->b < b->b);
}

/* Among candidates equivalent to the fastest: fewer model-parallel GPUs
 * (the rule "fewest model-parallel GPUs" orders the published sweeps better
 * than the step-time model does, issue 21), then the ranked order (faster,
 * then less peak memory). */
static int cmp_tie(const void *pa, const void *pb)
{
    const struct cand *a = pa, *b = pb;
    if (a->mp != b->mp)
        return a->mp < b->mp ? -1 : 1;
    return cmp_cand(a, b);
}

/* The fitting candidates whose band overlaps the fastest fitting one's,
 * under the band between layouts of one job (a level common to them
 * cancels), form a prefix of the sorted array (fitting ones sort first, and
 * the test is monotone in the step); they are ordered by the tie-break and
 * counted. Equivalence is a choice among layouts that fit: where none fits
 * (only tight or oom ones, with MEM4D_SEARCH_FITS_ONLY 0), none is
 * equivalent, and they keep the strict order. */
static void tie_break(mem4d_search *s)
{
    s->stat[MEM4D_SEARCH_STAT_EQUIVALENT] = 0;
    if (s->ncand == 0 || s->cands[0].verdict != MEM4D_VERDICT_FITS || !(s->cands[0].step < INFINITY))
        return;
    double lo, hi;
    m4d_speed_band_relative(&s->dev, &lo, &hi);
    size_t k = 1;
    while (k < s->ncand && s->cands[k].verdict == MEM4D_VERDICT_FITS &&
           s->cands[k].step * lo <= s->cands[0].step * hi)
        k++;
    qsort(s->cands, k, sizeof *s->cands, cmp_tie);
    s->stat[MEM4D_SEARCH_STAT_EQUIVALENT] = k;
}

/* The whole ranked search: every passing layout into the array, sorted. */
static mem4d_status run_ranked(mem4d_search *s)
{
    mem4d_status err = MEM4D_OK;
    while (scan(s, &err)) {
        const mem4d_report *r = s->scratch;
        if (!grow((void **)&s->cands, &s->ccap, s->ncand + 1, sizeof *s->cands))
            return MEM4D_E_NOMEM;
        s->cands[s->ncand++] = (struct cand){
            .step = r->have_metrics ? r->perf.step : INFINITY,
            .peak = r->stages[r->peak_stage].t[MEM4D_TERM_TOTAL],
            .mp = s->groups[s->gi].t * s->groups[s->gi].c * s->groups[s->gi].p,
            .gi = (uint32_t)s->gi,
            .b = (uint32_t)s->work.v[MEM4D_LAYOUT_MICRO_BATCH],
            .rc = (uint8_t)s->work.v[MEM4D_LAYOUT_RECOMPUTE],
            .verdict = (uint8_t)r->verdict,
        };
    }
    if (err != MEM4D_OK)
        return err;
    if (s->ncand > 1) /* qsort must not see the NULL of an empty array */
        qsort(s->cands, s->ncand, sizeof *s->cands, cmp_cand);
    if (s->opt[MEM4D_SEARCH_TIE_BREAK])
        tie_break(s);
    s->ranked_done = true;
    return MEM4D_OK;
}

static mem4d_status start(mem4d_search *s)
{
    s->work = s->base;
    uint64_t div[M4D_MAX_DIVISORS];
    s->ngbs_div = m4d_divisors(s->base.v[MEM4D_LAYOUT_GLOBAL_BATCH], div, M4D_MAX_DIVISORS);
    if (!grow((void **)&s->gbs_div, &s->gdcap, s->ngbs_div + 1, sizeof *s->gbs_div))
        return MEM4D_E_NOMEM;
    memcpy(s->gbs_div, div, s->ngbs_div * sizeof div[0]);
    if (!build_groups(s))
        return MEM4D_E_NOMEM;
    s->started = true;
    return MEM4D_OK;
}

mem4d_status mem4d_search_next(mem4d_search *search, mem4d_layout *layout, mem4d_report *report)
{
    if (!search)
        return MEM4D_E_INVALID_ARG;
    mem4d_search *s = search;
    mem4d_status st;
    if (M4D_UNLIKELY(!s->started) && (st = start(s)) != MEM4D_OK)
        return st;
    uint64_t max = s->opt[MEM4D_SEARCH_MAX_RESULTS];
    if (M4D_UNLIKELY(max != 0) && s->stat[MEM4D_SEARCH_STAT_YIELDED] >= max)
        return MEM4D_END;
    if (s->opt[MEM4D_SEARCH_RANKED]) {
        if (!s->ranked_done && (st = run_ranked(s)) != MEM4D_OK)
            return st;
        if (s->ci >= s->ncand)
            return MEM4D_END;
        const struct cand *c = &s->cands[s->ci++];
        set_work(s, &s->groups[c->gi], c->b, c->rc);
        if (report)
            mem4d_estimate(&s->model, &s->work, &s->dev, report);
    } else {
        st = MEM4D_OK;
        if (!scan(s, &st))
            return st != MEM4D_OK ? st : MEM4D_END;
        if (report) { /* the scratch holds only the stages that decide the peak */
            /* scan() formed the step time of this very context (b, the
             * recompute mode and m), and the memory estimate does not
             * write it: kept, not formed a second time */
            bool metrics = s->scratch->have_metrics;
            quick_estimate(s, s->work.v[MEM4D_LAYOUT_MICRO_BATCH], s->work.v[MEM4D_LAYOUT_RECOMPUTE], false);
            s->scratch->have_metrics = metrics;
            m4d_perf_warn(s->scratch); /* as mem4d_estimate() warns */
            m4d_report_copy(report, s->scratch);
        }
    }
    if (layout)
        *layout = s->work;
    s->stat[MEM4D_SEARCH_STAT_YIELDED]++;
    return MEM4D_OK;
}
