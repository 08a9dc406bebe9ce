/*
 * Search suite: every yielded layout is valid and carries exactly
 * mem4d_estimate()'s report; brute force finds nothing the search misses
 * (so pruning never drops a fitting layout); constraints, options, early
 * stop, the inverse solvers; and the ranking facts practitioners rely on.
 * SPDX-License-Identifier: MIT
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* The searched knobs of a layout, in a fixed order. */
#define NKNOB 8
static const mem4d_layout_param knobs[NKNOB] = {
    MEM4D_LAYOUT_TP, MEM4D_LAYOUT_CP, MEM4D_LAYOUT_PP, MEM4D_LAYOUT_DP,
    MEM4D_LAYOUT_MICRO_BATCH, MEM4D_LAYOUT_VPP, MEM4D_LAYOUT_RECOMPUTE, MEM4D_LAYOUT_DIST_OPT,
};
enum { T, C, P, D, B, V, RC, DIST };

struct tuple {
    uint64_t k[NKNOB];
};

struct tuples {
    struct tuple *a;
    size_t n, cap;
};

static void push(struct tuples *ts, const mem4d_layout *l)
{
    if (ts->n == ts->cap) {
        ts->cap = ts->cap ? ts->cap * 2 : 256;
        ts->a = realloc(ts->a, ts->cap * sizeof ts->a[0]);
        if (!ts->a)
            abort();
    }
    for (int i = 0; i < NKNOB; i++)
        mem4d_layout_get(l, knobs[i], &ts->a[ts->n].k[i]);
    ts->n++;
}

static int cmp_tuple(const void *a, const void *b)
{
    const struct tuple *x = a, *y = b;
    for (int i = 0; i < NKNOB; i++)
        if (x->k[i] != y->k[i])
            return x->k[i] < y->k[i] ? -1 : 1;
    return 0;
}

static uint64_t get(const mem4d_layout *l, mem4d_layout_param key)
{
    uint64_t v;
    ck_assert_int_eq(mem4d_layout_get(l, key, &v), MEM4D_OK);
    return v;
}

static double metric(const mem4d_report *r, mem4d_metric m)
{
    double v = -1;
    ck_assert_int_eq(mem4d_report_metric(r, m, &v), MEM4D_OK);
    return v;
}

/* Two reports agree on every public field, exactly. Returns the first
 * difference's name, or NULL. (Plain comparisons: Check's assertions are
 * slow in loops this long.) */
static const char *reports_differ(const mem4d_report *a, const mem4d_report *b)
{
    if (mem4d_report_status(a) != mem4d_report_status(b) || mem4d_report_mode(a) != mem4d_report_mode(b) ||
        mem4d_report_verdict(a) != mem4d_report_verdict(b))
        return "status, mode or verdict";
    if (mem4d_report_num_stages(a) != mem4d_report_num_stages(b) ||
        mem4d_report_peak_stage(a) != mem4d_report_peak_stage(b) ||
        mem4d_report_peak_bytes(a) != mem4d_report_peak_bytes(b) ||
        mem4d_report_device_bytes(a) != mem4d_report_device_bytes(b))
        return "stages, peak or device bytes";
    if (strcmp(mem4d_report_message(a), mem4d_report_message(b)) != 0)
        return "message";
    for (uint32_t s = 0; s < mem4d_report_num_stages(a); s++)
        for (int t = 0; t < (int)mem4d_term_count(); t++) {
            uint64_t x = 1, y = 2;
            mem4d_report_get(a, s, (mem4d_term)t, &x);
            mem4d_report_get(b, s, (mem4d_term)t, &y);
            if (x != y)
                return "a stage term";
        }
    for (int i = 0; i <= MEM4D_INFO_PROCESS_GROUPS; i++) {
        uint64_t x = 1, y = 2;
        mem4d_report_info(a, (mem4d_info)i, &x);
        mem4d_report_info(b, (mem4d_info)i, &y);
        if (x != y)
            return "an info value";
    }
    for (int i = 0; i < (int)mem4d_metric_count(); i++) {
        double x = 0, y = 0;
        if (mem4d_report_metric(a, (mem4d_metric)i, &x) != mem4d_report_metric(b, (mem4d_metric)i, &y) || x != y)
            return "a metric";
    }
    if (mem4d_report_warning_count(a) != mem4d_report_warning_count(b))
        return "the warnings";
    for (size_t i = 0; i < mem4d_report_warning_count(a); i++)
        if (strcmp(mem4d_report_warning(a, i), mem4d_report_warning(b, i)) != 0)
            return "a warning";
    return NULL;
}

/* Drain a search, checking every layout against a direct estimate. */
static void drain(mem4d_search *s, const mem4d_model *m, const mem4d_device *d, struct tuples *out)
{
    mem4d_layout *l = NULL;
    mem4d_report *r = NULL, *direct = NULL;
    ck_assert_int_eq(mem4d_layout_new(&l), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_new(&direct), MEM4D_OK);
    mem4d_status st;
    size_t bad = 0;
    const char *first = NULL; /* what the first disagreeing layout differs in */
    while ((st = mem4d_search_next(s, l, r)) == MEM4D_OK) {
        const char *what = NULL;
        if (mem4d_validate(m, l, NULL, 0) != MEM4D_OK || mem4d_estimate(m, l, d, direct) != MEM4D_OK)
            what = "validity";
        else
            what = reports_differ(r, direct);
        bad += what != NULL;
        if (!first)
            first = what;
        push(out, l);
    }
    ck_assert_msg(bad == 0, "%zu yielded layouts disagree with mem4d_estimate (%s)", bad, first);
    ck_assert_int_eq(st, MEM4D_END);
    ck_assert_int_eq(mem4d_search_next(s, l, r), MEM4D_END);
    mem4d_report_free(direct);
    mem4d_report_free(r);
    mem4d_layout_free(l);
}

typedef bool (*tuple_filter)(const struct tuple *t);

/* The split the search promises when p does not divide L (and the base sets
 * none): the largest x with first = last = x stages no heavier than a middle
 * one; p = 2: the halves, the first one larger. Found by scanning, not by
 * the library's arithmetic. */
static void expected_split(mem4d_layout *l, uint64_t L, uint64_t p)
{
    uint64_t first = 0, last = 0;
    if (L % p != 0 && p == 2) {
        first = L - L / 2;
        last = L / 2;
    }
    for (uint64_t x = 1; L % p != 0 && p > 2 && 2 * x < L; x++)
        if ((L - 2 * x) % (p - 2) == 0 && x <= (L - 2 * x) / (p - 2))
            first = last = x;
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_FIRST_STAGE_LAYERS, first), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_LAST_STAGE_LAYERS, last), MEM4D_OK);
}

/* Every layout brute force accepts: all divisor triples, every b, v,
 * recompute and dist_opt, each estimated directly. */
static void brute_force(const mem4d_model *m, const mem4d_device *d, const mem4d_layout *base,
                        bool fits_only, uint64_t node_gpus, tuple_filter keep, struct tuples *out)
{
    uint64_t world = get(base, MEM4D_LAYOUT_WORLD), gbs = get(base, MEM4D_LAYOUT_GLOBAL_BATCH), L;
    ck_assert_int_eq(mem4d_model_get(m, MEM4D_MODEL_NUM_LAYERS, &L), MEM4D_OK);
    bool base_split = get(base, MEM4D_LAYOUT_FIRST_STAGE_LAYERS) || get(base, MEM4D_LAYOUT_LAST_STAGE_LAYERS);
    /* dist_opt shapes nothing under a zero_stage or torchtitan's FSDP2: the
     * search yields those layouts once, at dist_opt 1 */
    bool dist_inert = get(base, MEM4D_LAYOUT_ZERO_STAGE) != 0 ||
                      get(base, MEM4D_LAYOUT_FRAMEWORK) == MEM4D_FRAMEWORK_TORCHTITAN;
    mem4d_layout *l = NULL;
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_layout_clone(base, &l), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    struct tuple x;
    for (x.k[T] = 1; x.k[T] <= world; x.k[T]++)
        for (x.k[C] = 1; x.k[T] * x.k[C] <= world; x.k[C]++)
            for (x.k[P] = 1; x.k[T] * x.k[C] * x.k[P] <= world; x.k[P]++) {
                if (world % (x.k[T] * x.k[C] * x.k[P]) != 0)
                    continue;
                if (node_gpus && x.k[T] * x.k[C] > node_gpus)
                    continue;
                x.k[D] = world / (x.k[T] * x.k[C] * x.k[P]);
                uint64_t bmax = gbs ? gbs / x.k[D] : 64;
                for (x.k[B] = 1; x.k[B] <= bmax; x.k[B]++)
                    for (x.k[V] = 1; x.k[V] <= L; x.k[V]++)
                        for (x.k[RC] = 0; x.k[RC] <= 3; x.k[RC]++) /* 3: op, torchtitan's alone */
                            for (x.k[DIST] = 0; x.k[DIST] <= 1; x.k[DIST]++) {
                                if ((keep && !keep(&x)) || (dist_inert && x.k[DIST] == 0))
                                    continue;
                                bool set = true;
                                for (int i = 0; i < NKNOB; i++)
                                    set &= mem4d_layout_set(l, knobs[i], x.k[i]) == MEM4D_OK;
                                if (!base_split)
                                    expected_split(l, L, x.k[P]);
                                if (!set || mem4d_estimate(m, l, d, r) != MEM4D_OK)
                                    continue;
                                if (fits_only && mem4d_report_verdict(r) != MEM4D_VERDICT_FITS)
                                    continue;
                                push(out, l);
                            }
            }
    mem4d_report_free(r);
    mem4d_layout_free(l);
}

static mem4d_layout *base_layout(uint64_t world, uint64_t seq, uint64_t gbs)
{
    mem4d_layout *l = NULL;
    ck_assert_int_eq(mem4d_layout_new(&l), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_WORLD, world), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_SEQ_LENGTH, seq), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_GLOBAL_BATCH, gbs), MEM4D_OK);
    return l;
}

static mem4d_search *new_search(const mem4d_model *m, const mem4d_device *d, const mem4d_layout *base,
                                bool fits_only, bool node_local, bool ranked)
{
    mem4d_search *s = NULL;
    ck_assert_int_eq(mem4d_search_new(m, d, base, &s), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_set_option(s, MEM4D_SEARCH_FITS_ONLY, fits_only), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_set_option(s, MEM4D_SEARCH_NODE_LOCAL, node_local), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_set_option(s, MEM4D_SEARCH_RANKED, ranked), MEM4D_OK);
    return s;
}

/* The search (ranked and streamed) yields exactly brute force's set, on d. */
static void check_complete_on(mem4d_model *m, mem4d_device *d, const mem4d_layout *base, bool fits_only,
                              bool node_local)
{
    uint64_t gpn;
    ck_assert_int_eq(mem4d_device_get(d, MEM4D_DEVICE_GPUS_PER_NODE, &gpn), MEM4D_OK);
    struct tuples want = {0};
    brute_force(m, d, base, fits_only, node_local ? gpn : 0, NULL, &want);
    qsort(want.a, want.n, sizeof want.a[0], cmp_tuple);
    for (int ranked = 0; ranked <= 1; ranked++) {
        struct tuples got = {0};
        mem4d_search *s = new_search(m, d, base, fits_only, node_local, ranked);
        drain(s, m, d, &got);
        uint64_t yielded, valid, visited, pruned;
        mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_YIELDED, &yielded);
        mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_VALID, &valid);
        mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_VISITED, &visited);
        mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_PRUNED, &pruned);
        ck_assert_uint_eq(yielded, got.n);
        ck_assert_uint_le(yielded, valid);
        ck_assert_uint_eq(valid, visited);
        if (!fits_only)
            ck_assert_uint_eq(pruned, 0);
        qsort(got.a, got.n, sizeof got.a[0], cmp_tuple);
        ck_assert_uint_eq(got.n, want.n);
        size_t differ = 0;
        for (size_t i = 0; i < got.n; i++)
            differ += cmp_tuple(&got.a[i], &want.a[i]) != 0;
        ck_assert_msg(differ == 0, "%zu layouts differ from brute force", differ);
        free(got.a);
        mem4d_search_free(s);
    }
    ck_assert_uint_gt(want.n, 0);
    free(want.a);
    mem4d_device_free(d);
    mem4d_model_free(m);
}

static void check_complete(const char *model, const char *device, uint64_t mem_gib, const mem4d_layout *base,
                           bool fits_only, bool node_local)
{
    mem4d_device *d = tu_device(device);
    if (mem_gib)
        ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_MEMORY_BYTES, mem_gib << 30), MEM4D_OK);
    check_complete_on(tu_model(model), d, base, fits_only, node_local);
}

START_TEST(complete_8b_fits)
{
    mem4d_layout *base = base_layout(8, 4096, 16);
    check_complete("llama3.1-8b", "h100-80", 0, base, true, true);
    mem4d_layout_free(base);
}
END_TEST

START_TEST(complete_8b_all_valid)
{
    mem4d_layout *base = base_layout(8, 4096, 16);
    check_complete("llama3.1-8b", "h100-80", 0, base, false, true);
    mem4d_layout_free(base);
}
END_TEST

START_TEST(complete_8b_16_gpus_any_tc)
{
    mem4d_layout *base = base_layout(16, 8192, 32);
    check_complete("llama3.1-8b", "h100-80", 0, base, true, false);
    check_complete("llama3.1-8b", "a100-40", 0, base, true, true);
    mem4d_layout_free(base);
}
END_TEST

START_TEST(complete_unknown_batch)
{
    /* No global batch: b runs 1..64, m is unknown. */
    mem4d_layout *base = base_layout(4, 2048, 0);
    check_complete("llama3.2-1b", "a100-40", 0, base, true, true);
    mem4d_layout_free(base);
}
END_TEST

/* Keys whose rules depend on what the search varies (activation
 * offloading allows no recompute; distributed-optimizer instances need the
 * distributed optimizer and must divide dp x cp): the search yields exactly
 * the layouts mem4d_validate() accepts. */
/* check_complete() on h100-80, every valid layout, within a node, of the
 * base layout given (freed). */
static void complete_with(const char *model, mem4d_layout *base)
{
    check_complete(model, "h100-80", 0, base, false, true);
    mem4d_layout_free(base);
}

START_TEST(complete_with_activation_offloading)
{
    complete_with("llama3.1-8b", tu_layout("world=8", "seq=4096", "gbs=16", "activation_offload_layers=8", NULL));
    /* shorter end virtual stages: which pp x vpp split (32 + 1 + 1) layers */
    complete_with("llama3.1-8b", tu_layout("world=8", "seq=4096", "gbs=16", "first_chunk_fewer_layers=1",
                                           "last_chunk_fewer_layers=1", NULL));
    /* per-layer CUDA graphs refuse full recompute; the EP overlap also the moe module and pp without vpp */
    complete_with("llama3.1-8b", tu_layout("world=8", "seq=4096", "gbs=16", "cuda_graph=transformer_engine", NULL));
    complete_with("qwen1.5-moe-a2.7b", tu_layout("world=8", "seq=4096", "gbs=16", "ep=2", "moe_ep_overlap=1",
                                                 "recompute_modules=64" /* moe */, NULL));
    /* offloading the experts' inputs refuses the moe recompute module */
    complete_with("qwen1.5-moe-a2.7b", tu_layout("world=8", "seq=4096", "gbs=16", "ep=2", "offload_modules=96",
                                                 "recompute_modules=64", NULL));
    /* a layer table: only the pp x vpp of its 8 virtual stages (2 x 4, 4 x 2, 8 x 1) */
    complete_with("llama3.1-8b", tu_layout("world=8", "seq=4096", "gbs=16", "stage_layers=5,4,4,4,4,4,4,3", NULL));
    /* and one whose rule depends on dp x cp and the distributed optimizer */
    complete_with("llama3.1-8b", tu_layout("world=16", "seq=4096", "gbs=32", "dist_opt_instances=2", NULL));
}
END_TEST

/* On a stack whose attention is softmax (megatron-deepspeed) a layout that
 * leaves flash_attn unset runs it, in the search as in mem4d_estimate()
 * (m4d_attention_fused(), lib/perf.c): the s x s scores are kept, so the
 * layout's activations exceed the default stack's, and every searched
 * report is the estimate's (drain()). */
START_TEST(complete_on_softmax_stack)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_layout *base = tu_layout("world=8", "seq=4096", "gbs=16", NULL), *l = tu_layout("world=8", "tp=8", "seq=4096", "gbs=16", NULL);
    mem4d_device *d = tu_device("h100-80"), *mid = tu_device("h100-80");
    ck_assert_int_eq(mem4d_device_set_str(d, "stack", "megatron-deepspeed"), MEM4D_OK);
    mem4d_report *r = tu_estimate(m, l, d), *rm = tu_estimate(m, l, mid);
    uint64_t a = 0, am = 0;
    ck_assert_int_eq(mem4d_report_get(r, 0, MEM4D_TERM_ACTIVATIONS, &a), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_get(rm, 0, MEM4D_TERM_ACTIVATIONS, &am), MEM4D_OK);
    ck_assert_uint_gt(a, am + UINT64_C(32) / 8 * 4096 * 4096 * 32); /* >= 1 byte a score, 32 layers */
    mem4d_report_free(rm);
    mem4d_report_free(r);
    mem4d_device_free(mid);
    mem4d_layout_free(l);
    check_complete_on(m, d, base, false, true);
    mem4d_layout_free(base);
}
END_TEST

/* Where the fused softmax's shape test depends on the micro-batch
 * (FUSED_SOFTMAX_SWAPPED, lib/perf.c; m4d_softmax_falls_back()), the
 * search's per-b terms (the step time's m4d_perf_b memo, the activation
 * terms of each b) hold each b's own: on BigScience's fork of 2022-02,
 * llama3.1-8b's 32 heads at tp 4 (8 a rank, 32 batches a block) fall back
 * at micro-batch 1 and 2 and run fused at 4, so its activations per sample
 * and its attention time per sample differ between them; every searched
 * report is still mem4d_estimate()'s (drain()). */
START_TEST(complete_where_softmax_falls_back_by_micro_batch)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_device *d = tu_device("a100-80");
    ck_assert_int_eq(mem4d_device_set_str(d, "stack", "megatron-deepspeed-bigscience-2022-02"), MEM4D_OK);
    mem4d_layout *l = tu_layout("world=8", "tp=4", "seq=2048", "gbs=16", "flash_attn=0", NULL);
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    uint64_t act[5] = {0};
    double attn[5] = {0};
    for (uint64_t b = 1; b <= 4; b *= 2) {
        ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_MICRO_BATCH, b), MEM4D_OK);
        ck_assert_msg(mem4d_estimate(m, l, d, r) == MEM4D_OK, "%s", mem4d_report_message(r));
        ck_assert_int_eq(mem4d_report_get(r, 0, MEM4D_TERM_ACTIVATIONS, &act[b]), MEM4D_OK);
        ck_assert_int_eq(mem4d_report_metric(r, MEM4D_METRIC_COMPUTE_TIME_S, &attn[b]), MEM4D_OK);
    }
    ck_assert_uint_eq(2 * act[1], act[2]);
    ck_assert_uint_gt(2 * act[2], act[4]); /* micro-batch 4 keeps the fused kernel's 5 bytes a score, not 7 */
    ck_assert(attn[4] < attn[2]);          /* the same samples a step, fewer bytes a score */
    mem4d_report_free(r);
    mem4d_layout_free(l);
    mem4d_layout *base = tu_layout("world=8", "seq=2048", "gbs=16", "flash_attn=0", NULL);
    check_complete_on(m, d, base, false, true); /* frees m and d */
    mem4d_layout_free(base);
}
END_TEST

/* A device whose efficiencies put a layout's MFU above the peak: its
 * report warns (m4d_perf_warn(), lib/perf.c) and its band's fast end stops
 * at the prediction, in the search's reports as in mem4d_estimate()'s,
 * streamed or ranked (drain() compares every metric and warning). */
START_TEST(complete_with_mfu_above_the_peak)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_device *d = tu_device("h100-80");
    ck_assert_int_eq(mem4d_device_set_str(d, "matmul_efficiency_ppm", "1000000"), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_set_str(d, "attention_efficiency_ppm", "1000000"), MEM4D_OK);
    mem4d_layout *l = tu_layout("world=8", "cp=8", "seq=131072", "gbs=8", "mbs=1", NULL);
    mem4d_report *r = tu_estimate(m, l, d);
    double mfu = 0;
    ck_assert_int_eq(mem4d_report_metric(r, MEM4D_METRIC_MFU, &mfu), MEM4D_OK);
    ck_assert_msg(mfu > 1 && mem4d_report_warning_count(r) > 0, "%g", mfu);
    mem4d_report_free(r);
    mem4d_layout_free(l);
    mem4d_layout *base = tu_layout("world=8", "seq=131072", "gbs=8", NULL);
    check_complete_on(m, d, base, false, true); /* frees m and d */
    mem4d_layout_free(base);
}
END_TEST

/* Every framework's searched reports are mem4d_estimate()'s, field for field:
 * the state terms the search keeps for a group (m4d_state_cache) depend on
 * the group alone, and torchtitan's also on the micro-batches per step. */
START_TEST(complete_every_framework)
{
    complete_with("llama3.1-8b", tu_layout("world=8", "seq=4096", "gbs=16", "framework=torchtitan", NULL));
    complete_with("llama3.1-8b", tu_layout("world=8", "seq=4096", "gbs=16", "framework=deepspeed", NULL));
    complete_with("llama3.1-8b", tu_layout("world=8", "seq=4096", "gbs=16", "framework=nanotron", NULL));
}
END_TEST

/* The search keeps the b terms (the head's and loss's, the forward/backward
 * buffers) across the groups of one key (m4d_b_key(): the context but b,
 * the recompute mode and v, and Megatron's ZeRO stage below 2). DeepSpeed's
 * buffers follow its ZeRO stage, which dist_opt sets: two layouts differing
 * in it alone differ in BUFFERS, and each searched report is still
 * mem4d_estimate()'s (a key without the stage hands the dist_opt 0 group
 * the dist_opt 1 group's buffers, and drain() fails). Megatron's groups
 * differ in v and dist_opt and share them. */
START_TEST(b_terms_kept_per_key)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_device *d = tu_device("h100-80");
    mem4d_report *r0 = NULL, *r1 = NULL;
    ck_assert_int_eq(mem4d_report_new(&r0), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_new(&r1), MEM4D_OK);
    mem4d_layout *l0 = tu_layout("world=8", "seq=4096", "gbs=16", "framework=deepspeed", "dp=8", "dist_opt=0", NULL);
    mem4d_layout *l1 = tu_layout("world=8", "seq=4096", "gbs=16", "framework=deepspeed", "dp=8", "dist_opt=1", NULL);
    ck_assert_int_eq(mem4d_estimate(m, l0, d, r0), MEM4D_OK);
    ck_assert_int_eq(mem4d_estimate(m, l1, d, r1), MEM4D_OK);
    uint64_t b0, b1;
    ck_assert_int_eq(mem4d_report_get(r0, 0, MEM4D_TERM_BUFFERS, &b0), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_get(r1, 0, MEM4D_TERM_BUFFERS, &b1), MEM4D_OK);
    ck_assert_uint_ne(b0, b1);
    const char *fw[] = {"framework=deepspeed", "framework=megatron"};
    for (size_t i = 0; i < 2; i++) {
        mem4d_layout *base = tu_layout("world=8", "seq=4096", "gbs=16", fw[i], NULL);
        mem4d_search *s = new_search(m, d, base, false, false, false);
        uint64_t pp = i == 0 ? 1 : 2;
        ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_TP, 1, 1), MEM4D_OK);
        ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_CP, 1, 1), MEM4D_OK);
        ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_PP, pp, pp), MEM4D_OK);
        struct tuples got = {0};
        drain(s, m, d, &got);
        ck_assert_uint_gt(got.n, 2);
        free(got.a);
        mem4d_search_free(s);
        mem4d_layout_free(base);
    }
    mem4d_layout_free(l1);
    mem4d_layout_free(l0);
    mem4d_report_free(r1);
    mem4d_report_free(r0);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

START_TEST(complete_paper_mode)
{
    mem4d_layout *base = base_layout(8, 8192, 16);
    ck_assert_int_eq(mem4d_layout_set(base, MEM4D_LAYOUT_MODE, MEM4D_MODE_PAPER), MEM4D_OK);
    check_complete("llama3.1-8b", "h100-80", 0, base, true, true);
    mem4d_layout_free(base);
}
END_TEST

/* Llama-3.2-3B's 28 layers do not split evenly over pp 8: the search also
 * yields the 2 + 6 x 4 + 2 split, and none with the option off. */
START_TEST(complete_uneven_stages)
{
    mem4d_layout *base = base_layout(16, 4096, 32);
    check_complete("llama3.2-3b", "h100-80", 0, base, false, true);
    mem4d_model *m = tu_model("llama3.2-3b");
    mem4d_device *d = tu_device("h100-80");
    for (int uneven = 0; uneven <= 1; uneven++) {
        mem4d_search *s = new_search(m, d, base, false, true, false);
        ck_assert_int_eq(mem4d_search_set_option(s, MEM4D_SEARCH_UNEVEN_STAGES, (uint64_t)uneven), MEM4D_OK);
        mem4d_layout *l = NULL;
        ck_assert_int_eq(mem4d_layout_new(&l), MEM4D_OK);
        size_t split = 0;
        while (mem4d_search_next(s, l, NULL) == MEM4D_OK) {
            uint64_t first = get(l, MEM4D_LAYOUT_FIRST_STAGE_LAYERS), last = get(l, MEM4D_LAYOUT_LAST_STAGE_LAYERS);
            if (first || last) {
                ck_assert_uint_eq(get(l, MEM4D_LAYOUT_PP), 8);
                ck_assert_uint_eq(first, 2);
                ck_assert_uint_eq(last, 2);
                split++;
            }
        }
        if (uneven)
            ck_assert_uint_gt(split, 0);
        else
            ck_assert_uint_eq(split, 0);
        mem4d_layout_free(l);
        mem4d_search_free(s);
    }
    mem4d_device_free(d);
    mem4d_model_free(m);
    mem4d_layout_free(base);
}
END_TEST

/* The search judges a layout by stages 0, 1 and p-1 only: no middle stage
 * may exceed stage 1 in any memory term, whatever the schedule. */
START_TEST(middle_stages_never_exceed_stage_one)
{
    static const char *const variants[][4] = {
        {"pp=8", "gbs=512", NULL}, {"pp=8", "gbs=16", NULL}, {"pp=8", "vpp=5", "gbs=512", NULL},
        {"pp=8", "vpp=2", "gbs=8", NULL}, {"pp=8", "recompute=full", "gbs=512", NULL},
        {"pp=8", "recompute=full", "recompute_method=block", "recompute_num_layers=3"},
        {"pp=16", "first_stage_layers=4", "last_stage_layers=6", NULL}, {"pp=4", "recompute=selective", NULL},
        {"pp=16", "gbs=0", NULL}, {"pp=8", "zero_stage=3", "main_grad_bytes=2", NULL},
    };
    static const mem4d_term terms[] = {MEM4D_TERM_WEIGHTS, MEM4D_TERM_GRADIENTS, MEM4D_TERM_OPTIMIZER,
                                       MEM4D_TERM_ACTIVATIONS, MEM4D_TERM_BUFFERS, MEM4D_TERM_TOTAL};
    mem4d_model *m = tu_model("llama3.1-70b");
    mem4d_device *d = tu_device("h100-80");
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        mem4d_layout *l = tu_layout("tp=4", "world=256", "seq=8192", variants[i][0], variants[i][1],
                                    variants[i][2], variants[i][3], NULL);
        ck_assert_msg(mem4d_estimate(m, l, d, r) == MEM4D_OK, "%s", mem4d_report_message(r));
        uint32_t p = mem4d_report_num_stages(r), peak = mem4d_report_peak_stage(r);
        ck_assert_msg(peak <= 1 || peak == p - 1, "variant %zu: peak at middle stage %u", i, peak);
        for (uint32_t s = 2; s + 1 < p; s++)
            for (size_t k = 0; k < sizeof terms / sizeof terms[0]; k++) {
                uint64_t one, mid;
                mem4d_report_get(r, 1, terms[k], &one);
                mem4d_report_get(r, s, terms[k], &mid);
                ck_assert_msg(mid <= one, "variant %zu: stage %u term %d exceeds stage 1", i, s, (int)terms[k]);
            }
        mem4d_layout_free(l);
    }
    mem4d_report_free(r);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

START_TEST(complete_pruning_heavy)
{
    /* 70B on 32 GPUs: most sub-spaces cannot fit and are pruned. */
    mem4d_layout *base = base_layout(32, 4096, 64);
    check_complete("llama3.1-70b", "h100-80", 0, base, true, true);
    mem4d_model *m = tu_model("llama3.1-70b");
    mem4d_device *d = tu_device("h100-80");
    mem4d_search *s = new_search(m, d, base, true, true, true);
    ck_assert_int_eq(mem4d_search_next(s, NULL, NULL), MEM4D_OK);
    uint64_t pruned, visited;
    mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_PRUNED, &pruned);
    mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_VISITED, &visited);
    ck_assert_uint_gt(pruned, visited);
    mem4d_search_free(s);
    mem4d_device_free(d);
    mem4d_model_free(m);
    mem4d_layout_free(base);
}
END_TEST

/* Memory can fall as b grows where a known global batch sets the
 * micro-batch count m = gbs/(d·b): the search once pruned every b above the
 * first that did not fit, and every layout of a (t, c, p) whose weights,
 * gradients and optimizer state did not fit at that b's m. The limit is
 * the peak of a layout above a smaller b's of its group, so that the
 * smaller one does not fit and it does:
 * - llama2-7b at pp 2 on 8 GPUs, 8 tokens, global batch 64: b 16 (m 1)
 *   peaks 90 MB below b 8 (m 2), whose first stage forms its embedding
 *   gradient beside the other micro-batch in flight; the search yielded b 8
 *   and below, not 16;
 * - llama3.2-1b under torchtitan at pp 2 on 4 GPUs, global batch 16: FSDP2
 *   keeps an unsharded gradient to accumulate into at m > 1, 3 GB that b 8
 *   (m 1) does not hold; the search pruned the whole (t, c, p) at b 1.
 * Brute force (check_complete_on) finds exactly the fitting set. */
START_TEST(complete_where_memory_falls_with_the_micro_batch)
{
    static const struct {
        const char *model, *fw, *world, *gbs, *layout[5];
        uint64_t small, large;
    } c[] = {
        {"llama2-7b", "framework=megatron", "world=8", "gbs=64", {"tp=1", "pp=2", "recompute=0", "dist_opt=1", "sp=0"}, 8, 16},
        {"llama3.2-1b", "framework=torchtitan", "world=4", "gbs=16", {"tp=1", "pp=2", "recompute=2", "dist_opt=1", "sp=0"}, 1, 8},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        mem4d_model *m = tu_model(c[i].model);
        mem4d_device *d = tu_device("h200-141");
        ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_FULL_FIT_THRESHOLD_PPM, 1000000), MEM4D_OK);
        mem4d_layout *l = tu_layout(c[i].fw, c[i].world, "seq=8", c[i].gbs, c[i].layout[0], c[i].layout[1],
                                    c[i].layout[2], c[i].layout[3], c[i].layout[4], NULL);
        uint64_t peak[2];
        for (int k = 0; k < 2; k++) {
            ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_MICRO_BATCH, k ? c[i].large : c[i].small), MEM4D_OK);
            mem4d_report *r = tu_estimate(m, l, d);
            peak[k] = mem4d_report_peak_bytes(r);
            mem4d_report_free(r);
        }
        ck_assert_msg(peak[1] < peak[0], "%s: the peak does not fall from b %llu to %llu", c[i].model,
                      (unsigned long long)c[i].small, (unsigned long long)c[i].large);
        ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_MEMORY_BYTES, peak[1]), MEM4D_OK);
        mem4d_layout_free(l);
        mem4d_layout *base = tu_layout(c[i].fw, c[i].world, "seq=8", c[i].gbs, NULL);
        check_complete_on(m, d, base, true, true); /* frees m and d */
        mem4d_layout_free(base);
    }
}
END_TEST

/* The facts the pruning rests on, checked directly: the largest per-stage
 * weights + gradients + optimizer bytes of a (t, c, p) do not depend on b,
 * recompute or v, and dist_opt 1 never holds more than dist_opt 0. */
static uint64_t static_bytes(const mem4d_report *r)
{
    uint64_t best = 0;
    for (uint32_t s = 0; s < mem4d_report_num_stages(r); s++) {
        uint64_t w = 0, g = 0, o = 0;
        mem4d_report_get(r, s, MEM4D_TERM_WEIGHTS, &w);
        mem4d_report_get(r, s, MEM4D_TERM_GRADIENTS, &g);
        mem4d_report_get(r, s, MEM4D_TERM_OPTIMIZER, &o);
        if (w + g + o > best)
            best = w + g + o;
    }
    return best;
}

START_TEST(pruning_invariants)
{
    static const char *const models[] = {"llama3.1-8b", "llama3.1-70b", "llama3.2-1b", "qwen2.5-7b"};
    mem4d_device *d = tu_device("h100-80");
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    size_t checked = 0, broken = 0;
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        mem4d_model *m = tu_model(models[i]);
        uint64_t L;
        mem4d_model_get(m, MEM4D_MODEL_NUM_LAYERS, &L);
        for (uint64_t mode = 0; mode <= 1; mode++)
            for (uint64_t t = 1; t <= 4; t *= 2)
                for (uint64_t p = 1; p <= 8; p *= 2) {
                    if (L % p)
                        continue;
                    uint64_t ref[2] = {0, 0};
                    for (uint64_t dist = 0; dist <= 1; dist++)
                        for (uint64_t v = 1; v <= L / p; v++)
                            for (uint64_t b = 1; b <= 4; b *= 2)
                                for (uint64_t rc = 0; rc <= 2; rc++) {
                                    if ((L / p) % v || (v > 1 && p == 1))
                                        continue;
                                    mem4d_layout *l = base_layout(32, 4096, 64);
                                    mem4d_layout_set(l, MEM4D_LAYOUT_MODE, mode);
                                    mem4d_layout_set(l, MEM4D_LAYOUT_TP, t);
                                    mem4d_layout_set(l, MEM4D_LAYOUT_CP, 2);
                                    mem4d_layout_set(l, MEM4D_LAYOUT_PP, p);
                                    mem4d_layout_set(l, MEM4D_LAYOUT_VPP, v);
                                    mem4d_layout_set(l, MEM4D_LAYOUT_MICRO_BATCH, b);
                                    mem4d_layout_set(l, MEM4D_LAYOUT_RECOMPUTE, rc);
                                    mem4d_layout_set(l, MEM4D_LAYOUT_DIST_OPT, dist);
                                    if (mem4d_estimate(m, l, d, r) == MEM4D_OK) {
                                        uint64_t sb = static_bytes(r);
                                        if (ref[dist] == 0)
                                            ref[dist] = sb;
                                        broken += sb != ref[dist];
                                        checked++;
                                    }
                                    mem4d_layout_free(l);
                                }
                    broken += ref[1] > ref[0];
                }
        mem4d_model_free(m);
    }
    ck_assert_uint_gt(checked, 1000);
    ck_assert_uint_eq(broken, 0);
    mem4d_report_free(r);
    mem4d_device_free(d);
}
END_TEST

static bool constrained(const struct tuple *t)
{
    return t->k[T] <= 2 && t->k[P] == 1 && (t->k[B] == 1 || t->k[B] == 2 || t->k[B] == 4) && t->k[RC] != 1;
}

START_TEST(constraints_honoured)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_device *d = tu_device("h100-80");
    mem4d_layout *base = base_layout(16, 4096, 64);
    mem4d_search *s = new_search(m, d, base, true, true, true);
    const uint64_t mbs[] = {4, 1, 2, 2};
    const uint64_t rcs[] = {0, 2};
    ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_TP, 1, 8), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_TP, 1, 2), MEM4D_OK); /* bounds intersect */
    ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_PP, 1, 1), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_allow(s, MEM4D_LAYOUT_MICRO_BATCH, mbs, 4), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_allow(s, MEM4D_LAYOUT_RECOMPUTE, rcs, 2), MEM4D_OK);
    struct tuples got = {0}, want = {0};
    drain(s, m, d, &got);
    brute_force(m, d, base, true, 8, constrained, &want);
    ck_assert_uint_gt(got.n, 0);
    for (size_t i = 0; i < got.n; i++)
        ck_assert(constrained(&got.a[i]));
    qsort(got.a, got.n, sizeof got.a[0], cmp_tuple);
    qsort(want.a, want.n, sizeof want.a[0], cmp_tuple);
    ck_assert_uint_eq(got.n, want.n);
    for (size_t i = 0; i < got.n; i++)
        ck_assert(cmp_tuple(&got.a[i], &want.a[i]) == 0);
    free(got.a);
    free(want.a);
    mem4d_search_free(s);
    mem4d_layout_free(base);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

START_TEST(node_local_rule)
{
    mem4d_model *m = tu_model("llama3.1-70b");
    mem4d_device *d = tu_device("h100-80");
    ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_GPUS_PER_NODE, 4), MEM4D_OK);
    mem4d_layout *base = base_layout(64, 8192, 128);
    mem4d_search *s = new_search(m, d, base, false, true, false);
    struct tuples got = {0};
    drain(s, m, d, &got);
    ck_assert_uint_gt(got.n, 0);
    for (size_t i = 0; i < got.n; i++)
        ck_assert_uint_le(got.a[i].k[T] * got.a[i].k[C], 4);
    free(got.a);
    mem4d_search_free(s);
    mem4d_layout_free(base);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

START_TEST(early_stop)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_device *d = tu_device("h100-80");
    mem4d_layout *base = base_layout(64, 8192, 512);
    mem4d_search *full = new_search(m, d, base, true, true, false);
    struct tuples all = {0};
    drain(full, m, d, &all);
    uint64_t full_visited;
    mem4d_search_stat_get(full, MEM4D_SEARCH_STAT_VISITED, &full_visited);
    ck_assert_uint_gt(all.n, 3);
    /* Streaming: one layout costs a fraction of the whole walk. */
    mem4d_search *s = new_search(m, d, base, true, true, false);
    ck_assert_int_eq(mem4d_search_next(s, NULL, NULL), MEM4D_OK);
    uint64_t visited;
    mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_VISITED, &visited);
    ck_assert_uint_lt(visited, full_visited);
    mem4d_search_free(s);
    /* MAX_RESULTS: exactly that many, then END, in both modes. */
    for (int ranked = 0; ranked <= 1; ranked++) {
        s = new_search(m, d, base, true, true, ranked);
        ck_assert_int_eq(mem4d_search_set_option(s, MEM4D_SEARCH_MAX_RESULTS, 3), MEM4D_OK);
        struct tuples got = {0};
        drain(s, m, d, &got);
        ck_assert_uint_eq(got.n, 3);
        free(got.a);
        /* reset keeps options, zeroes counters, replays the same layouts */
        ck_assert_int_eq(mem4d_search_reset(s), MEM4D_OK);
        uint64_t y;
        mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_YIELDED, &y);
        ck_assert_uint_eq(y, 0);
        struct tuples again = {0};
        drain(s, m, d, &again);
        ck_assert_uint_eq(again.n, 3);
        free(again.a);
        mem4d_search_free(s);
    }
    free(all.a);
    mem4d_search_free(full);
    mem4d_layout_free(base);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

START_TEST(errors)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_device *d = tu_device("h100-80");
    mem4d_layout *base = base_layout(8, 4096, 16), *noworld = base_layout(0, 4096, 16);
    mem4d_search *s = NULL;
    ck_assert_int_eq(mem4d_search_new(NULL, d, base, &s), MEM4D_E_INVALID_ARG);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(mem4d_search_new(m, d, base, NULL), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_search_new(m, d, noworld, &s), MEM4D_E_MISSING);
    mem4d_model *empty = NULL;
    ck_assert_int_eq(mem4d_model_new(&empty), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_new(empty, d, base, &s), MEM4D_E_MISSING);
    mem4d_model_free(empty);
    mem4d_model *odd = tu_model("llama3.1-8b");
    ck_assert_int_eq(mem4d_model_set(odd, MEM4D_MODEL_HIDDEN_SIZE, 4095), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_new(odd, d, base, &s), MEM4D_E_MODEL);
    mem4d_model_free(odd);
    ck_assert_int_eq(mem4d_search_new(m, d, base, &s), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_set_option(s, MEM4D_SEARCH_FITS_ONLY, 2), MEM4D_E_RANGE);
    ck_assert_int_eq(mem4d_search_set_option(s, (mem4d_search_option)99, 0), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_SEQ_LENGTH, 1, 2), MEM4D_E_UNSUPPORTED);
    ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_TP, 4, 2), MEM4D_E_RANGE);
    ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_TP, 0, 2), MEM4D_E_RANGE);
    ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_TP, 1, 2), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_TP, 4, 8), MEM4D_E_RANGE); /* empty intersection */
    ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_RECOMPUTE, 0, 4), MEM4D_E_RANGE); /* 3 is "op" */
    const uint64_t v[] = {1, 2};
    ck_assert_int_eq(mem4d_search_allow(s, MEM4D_LAYOUT_MICRO_BATCH, v, 0), MEM4D_E_RANGE);
    ck_assert_int_eq(mem4d_search_allow(s, MEM4D_LAYOUT_MICRO_BATCH, v, 65), MEM4D_E_RANGE);
    ck_assert_int_eq(mem4d_search_allow(s, MEM4D_LAYOUT_MICRO_BATCH, NULL, 1), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_search_allow(s, MEM4D_LAYOUT_FP8, v, 2), MEM4D_E_UNSUPPORTED);
    ck_assert_int_eq(mem4d_search_next(s, NULL, NULL), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_set_option(s, MEM4D_SEARCH_RANKED, 0), MEM4D_E_CONFLICT);
    ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_PP, 1, 1), MEM4D_E_CONFLICT);
    ck_assert_int_eq(mem4d_search_allow(s, MEM4D_LAYOUT_MICRO_BATCH, v, 2), MEM4D_E_CONFLICT);
    ck_assert_int_eq(mem4d_search_reset(s), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_set_option(s, MEM4D_SEARCH_RANKED, 0), MEM4D_OK);
    uint64_t x;
    ck_assert_int_eq(mem4d_search_stat_get(s, (mem4d_search_stat)9, &x), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_search_stat_get(NULL, MEM4D_SEARCH_STAT_VISITED, &x), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_search_next(NULL, NULL, NULL), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_search_reset(NULL), MEM4D_E_INVALID_ARG);
    mem4d_search_free(s);
    mem4d_search_free(NULL);
    /* A model that fits nowhere: END at once, no error. */
    ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_MEMORY_BYTES, UINT64_C(1) << 30), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_new(m, d, base, &s), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_next(s, NULL, NULL), MEM4D_END);
    mem4d_search_free(s);
    mem4d_layout_free(noworld);
    mem4d_layout_free(base);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

/* --- ranking ----------------------------------------------------------------- */

struct ranked {
    struct tuples t;
    double *step, *bubble;
    uint64_t *peak;
};

static void collect_ranked(const mem4d_model *m, const mem4d_device *d, const mem4d_layout *base, bool node_local,
                           struct ranked *out)
{
    memset(out, 0, sizeof *out);
    mem4d_search *s = new_search(m, d, base, true, node_local, true);
    mem4d_layout *l = NULL;
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_layout_new(&l), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    size_t cap = 0;
    while (mem4d_search_next(s, l, r) == MEM4D_OK) {
        push(&out->t, l);
        if (out->t.n > cap) {
            cap = out->t.cap;
            out->step = realloc(out->step, cap * sizeof *out->step);
            out->bubble = realloc(out->bubble, cap * sizeof *out->bubble);
            out->peak = realloc(out->peak, cap * sizeof *out->peak);
        }
        out->step[out->t.n - 1] = metric(r, MEM4D_METRIC_STEP_TIME_S);
        out->bubble[out->t.n - 1] = metric(r, MEM4D_METRIC_BUBBLE_FRACTION);
        out->peak[out->t.n - 1] = mem4d_report_peak_bytes(r);
    }
    mem4d_report_free(r);
    mem4d_layout_free(l);
    mem4d_search_free(s);
}

static void ranked_free(struct ranked *r)
{
    free(r->t.a);
    free(r->step);
    free(r->bubble);
    free(r->peak);
}

START_TEST(ranked_order_is_total_and_deterministic)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_device *d = tu_device("h100-80");
    mem4d_layout *base = base_layout(32, 8192, 256);
    struct ranked a, b;
    collect_ranked(m, d, base, true, &a);
    collect_ranked(m, d, base, true, &b);
    ck_assert_uint_gt(a.t.n, 10);
    ck_assert_uint_eq(a.t.n, b.t.n);
    for (size_t i = 0; i < a.t.n; i++) {
        ck_assert(cmp_tuple(&a.t.a[i], &b.t.a[i]) == 0);
        if (i == 0)
            continue;
        ck_assert(a.step[i - 1] <= a.step[i]);
        if (a.step[i - 1] == a.step[i])
            ck_assert_uint_le(a.peak[i - 1], a.peak[i]);
    }
    ranked_free(&a);
    ranked_free(&b);
    mem4d_layout_free(base);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

/* Keep t*c inside a node: allowed to cross nodes, the best layout still does not. */
START_TEST(fact_tc_inside_node)
{
    static const char *const models[] = {"llama3.1-8b", "llama3.1-70b"};
    for (int i = 0; i < 2; i++) {
        mem4d_model *m = tu_model(models[i]);
        mem4d_device *d = tu_device("h100-80");
        mem4d_layout *base = base_layout(64, 8192, 512);
        struct ranked r;
        collect_ranked(m, d, base, false, &r);
        ck_assert_uint_gt(r.t.n, 0);
        ck_assert_uint_le(r.t.a[0].k[T] * r.t.a[0].k[C], 8);
        /* and the fastest layout that crosses nodes is slower than the best */
        bool crossing = false;
        for (size_t j = 0; j < r.t.n; j++)
            if (r.t.a[j].k[T] * r.t.a[j].k[C] > 8) {
                ck_assert(r.step[j] > r.step[0]);
                crossing = true;
            }
        ck_assert(crossing);
        ranked_free(&r);
        mem4d_layout_free(base);
        mem4d_device_free(d);
        mem4d_model_free(m);
    }
}
END_TEST

/* Smallest model-parallel size that fits: among fitting layouts that share
 * the best layout's (t, c), none has a smaller p; among those sharing its
 * (c, p), none has a smaller t. (Across axes the model may trade, e.g. a
 * cheaper t for a small pipeline, as practitioners also do.) */
START_TEST(fact_smallest_model_parallel)
{
    static const char *const models[] = {"llama3.1-8b", "llama3.1-70b"};
    for (int i = 0; i < 2; i++) {
        mem4d_model *m = tu_model(models[i]);
        mem4d_device *d = tu_device("h100-80");
        mem4d_layout *base = base_layout(64, 8192, 512);
        struct ranked r;
        /* The fact holds with the 80% margin: with full mode's 85%, 70B's
         * t 2 x c 2 x p 4 fits only with full recompute and is then slower
         * than the best t 4 layout with the same (c, p). */
        ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_FULL_FIT_THRESHOLD_PPM, 800000), MEM4D_OK);
        collect_ranked(m, d, base, true, &r);
        ck_assert_uint_gt(r.t.n, 0);
        const struct tuple *best = &r.t.a[0];
        size_t rivals = 0;
        for (size_t j = 1; j < r.t.n; j++) {
            const struct tuple *x = &r.t.a[j];
            if (x->k[C] != best->k[C])
                continue;
            if (x->k[T] == best->k[T]) {
                ck_assert_uint_ge(x->k[P], best->k[P]);
                rivals++;
            }
            if (x->k[P] == best->k[P])
                ck_assert_uint_ge(x->k[T], best->k[T]);
        }
        ck_assert_uint_gt(rivals, 0);
        ranked_free(&r);
        mem4d_layout_free(base);
        mem4d_device_free(d);
        mem4d_model_free(m);
    }
}
END_TEST

/* Without a pipeline (whose bubble grows as b takes micro-batches away), a
 * larger micro-batch that fits is faster. 70B needs pp > 1 on 80 GiB at
 * 64 GPUs, so it is checked on 141 GiB parts. */
START_TEST(fact_larger_micro_batch)
{
    static const char *const models[] = {"llama3.1-8b", "llama3.1-70b"};
    static const uint64_t gpus[] = {8, 64};
    static const char *const devices[] = {"h100-80", "h200-141"};
    for (int i = 0; i < 2; i++) {
        mem4d_model *m = tu_model(models[i]);
        mem4d_device *d = tu_device(devices[i]);
        mem4d_layout *base = base_layout(gpus[i], 2048, 1024);
        struct ranked r;
        collect_ranked(m, d, base, true, &r);
        size_t pairs = 0;
        for (size_t j = 0; j < r.t.n; j++)
            for (size_t k = 0; k < r.t.n; k++) {
                const struct tuple *x = &r.t.a[j], *y = &r.t.a[k];
                if (x->k[P] != 1 || y->k[B] <= x->k[B])
                    continue;
                bool same = true;
                for (int q = 0; q < NKNOB; q++)
                    if (q != B && x->k[q] != y->k[q])
                        same = false;
                if (!same)
                    continue;
                ck_assert_msg(r.step[k] < r.step[j], "b %llu not faster than b %llu",
                              (unsigned long long)y->k[B], (unsigned long long)x->k[B]);
                pairs++;
            }
        ck_assert_uint_gt(pairs, 0);
        ranked_free(&r);
        mem4d_layout_free(base);
        mem4d_device_free(d);
        mem4d_model_free(m);
    }
}
END_TEST

/* Pipeline bubbles cost: with few micro-batches, the bubble share is
 * (p-1)/(m+p-1)-like, interleaving shrinks it, and pp = 1 has none. */
START_TEST(fact_bubbles_cost)
{
    mem4d_model *m = tu_model("llama3.1-70b");
    mem4d_device *d = tu_device("h100-80");
    mem4d_layout *small = base_layout(64, 8192, 32), *large = base_layout(64, 8192, 512);
    struct ranked rs, rl;
    collect_ranked(m, d, small, true, &rs);
    collect_ranked(m, d, large, true, &rl);
    size_t checked = 0;
    for (size_t j = 0; j < rs.t.n; j++) {
        const struct tuple *x = &rs.t.a[j];
        if (x->k[P] == 1)
            ck_assert(rs.bubble[j] == 0);
        else
            ck_assert(rs.bubble[j] > 0);
        for (size_t k = 0; k < rl.t.n; k++) /* same layout, 16x the micro-batches */
            if (cmp_tuple(x, &rl.t.a[k]) == 0 && x->k[P] > 1) {
                ck_assert(rl.bubble[k] < rs.bubble[j]);
                ck_assert(rl.step[k] / 512 < rs.step[j] / 32); /* seconds per sample */
                checked++;
            }
        for (size_t k = 0; k < rs.t.n; k++) { /* same layout, interleaved */
            const struct tuple *y = &rs.t.a[k];
            bool same = y->k[V] > x->k[V];
            for (int q = 0; q < NKNOB; q++)
                if (q != V && x->k[q] != y->k[q])
                    same = false;
            if (same)
                ck_assert(rs.bubble[k] < rs.bubble[j]);
        }
    }
    ck_assert_uint_gt(checked, 0);
    ranked_free(&rs);
    ranked_free(&rl);
    mem4d_layout_free(small);
    mem4d_layout_free(large);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

/* --- inverse questions ------------------------------------------------------- */

static mem4d_verdict verdict_of(const mem4d_model *m, const mem4d_layout *l, const mem4d_device *d)
{
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    mem4d_verdict v = mem4d_estimate(m, l, d, r) == MEM4D_OK ? mem4d_report_verdict(r) : MEM4D_VERDICT_OOM;
    mem4d_report_free(r);
    return v;
}

START_TEST(solve_max_micro_batch)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_device *d = tu_device("h100-80");
    mem4d_layout *l = tu_layout("world=8", "tp=2", "seq=2048", "gbs=256", NULL);
    uint64_t b = 99;
    ck_assert_int_eq(mem4d_solve_max_micro_batch(m, l, d, &b), MEM4D_OK);
    ck_assert_uint_gt(b, 0);
    ck_assert_uint_eq(64 % b, 0); /* gbs / dp = 64 */
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_MICRO_BATCH, b), MEM4D_OK);
    ck_assert_int_eq(verdict_of(m, l, d), MEM4D_VERDICT_FITS);
    for (uint64_t nb = b + 1; nb <= 64; nb++)
        if (64 % nb == 0) {
            ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_MICRO_BATCH, nb), MEM4D_OK);
            ck_assert_int_ne(verdict_of(m, l, d), MEM4D_VERDICT_FITS);
            break;
        }
    /* Unknown global batch: any b; the next one up no longer fits. */
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_GLOBAL_BATCH, 0), MEM4D_OK);
    ck_assert_int_eq(mem4d_solve_max_micro_batch(m, l, d, &b), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_MICRO_BATCH, b), MEM4D_OK);
    ck_assert_int_eq(verdict_of(m, l, d), MEM4D_VERDICT_FITS);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_MICRO_BATCH, b + 1), MEM4D_OK);
    ck_assert_int_ne(verdict_of(m, l, d), MEM4D_VERDICT_FITS);
    /* Invalid layouts say why; hopeless ones give 0. */
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_TP, 3), MEM4D_OK);
    ck_assert_int_eq(mem4d_solve_max_micro_batch(m, l, d, &b), MEM4D_E_WORLD);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_TP, 1), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_MEMORY_BYTES, UINT64_C(1) << 30), MEM4D_OK);
    ck_assert_int_eq(mem4d_solve_max_micro_batch(m, l, d, &b), MEM4D_OK);
    ck_assert_uint_eq(b, 0);
    ck_assert_int_eq(mem4d_solve_max_micro_batch(m, l, d, NULL), MEM4D_E_INVALID_ARG);
    mem4d_layout_free(l);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

START_TEST(solve_max_seq_length)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_device *d = tu_device("h100-80");
    mem4d_layout *l = tu_layout("world=8", "tp=2", "cp=2", "seq=8", "gbs=16", NULL);
    uint64_t s = 0;
    ck_assert_int_eq(mem4d_solve_max_seq_length(m, l, d, &s), MEM4D_OK);
    ck_assert_uint_gt(s, 8192);
    ck_assert_uint_eq(s % 4, 0); /* 2c = 4 and t*c = 4 */
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_SEQ_LENGTH, s), MEM4D_OK);
    ck_assert_int_eq(verdict_of(m, l, d), MEM4D_VERDICT_FITS);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_SEQ_LENGTH, s + 4), MEM4D_OK);
    ck_assert_int_ne(verdict_of(m, l, d), MEM4D_VERDICT_FITS);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_TP, 3), MEM4D_OK);
    ck_assert_int_eq(mem4d_solve_max_seq_length(m, l, d, &s), MEM4D_E_WORLD);
    mem4d_layout_free(l);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

/* Memory is not monotone in the micro-batch where the fused softmax
 * declines some (m4d_ctx_softmax_falls_back()): llama3.1-8b on BigScience's
 * fork of 2022-02 at tp 4 (8 heads a rank, 32 batches a block) falls back at
 * micro-batch 1 to 3 and runs fused at 4, whose peak is below 3's; on 56 GiB
 * 3 does not fit and 4 does. The search yields 4 (its pruning once stopped
 * at 3), and the solver's answer is 4 (the divisors' scan once stopped at 3
 * and answered 2). */
static mem4d_device *fallback_device(mem4d_layout **l)
{
    mem4d_device *d = tu_device("a100-80");
    ck_assert_int_eq(mem4d_device_set_str(d, "stack", "megatron-deepspeed-bigscience-2022-02"), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_MEMORY_BYTES, UINT64_C(56) << 30), MEM4D_OK);
    *l = tu_layout("world=8", "tp=4", "seq=2048", "gbs=24", "flash_attn=0", NULL);
    return d;
}

START_TEST(solve_where_softmax_falls_back)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_layout *l;
    mem4d_device *d = fallback_device(&l);
    const mem4d_verdict want[] = {MEM4D_VERDICT_FITS, MEM4D_VERDICT_FITS, MEM4D_VERDICT_TIGHT, MEM4D_VERDICT_FITS};
    for (uint64_t b = 1; b <= 4; b++) {
        ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_MICRO_BATCH, b), MEM4D_OK);
        ck_assert_int_eq(verdict_of(m, l, d), want[b - 1]);
    }
    uint64_t b = 0;
    ck_assert_int_eq(mem4d_solve_max_micro_batch(m, l, d, &b), MEM4D_OK);
    ck_assert_uint_eq(b, 4); /* gbs / d = 12: divisors 1, 2, 3, 4, 6, 12 */
    /* the search, b free up to 8: every fitting b, 4 among them */
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_GLOBAL_BATCH, 0), MEM4D_OK);
    for (int ranked = 0; ranked <= 1; ranked++) {
        mem4d_search *s = new_search(m, d, l, true, false, ranked);
        ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_TP, 4, 4), MEM4D_OK);
        ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_PP, 1, 1), MEM4D_OK);
        ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_CP, 1, 1), MEM4D_OK);
        ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_RECOMPUTE, 0, 0), MEM4D_OK);
        ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_DIST_OPT, 1, 1), MEM4D_OK);
        ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_MICRO_BATCH, 1, 8), MEM4D_OK);
        mem4d_layout *out = NULL;
        ck_assert_int_eq(mem4d_layout_new(&out), MEM4D_OK);
        uint64_t seen = 0;
        while (mem4d_search_next(s, out, NULL) == MEM4D_OK)
            seen |= UINT64_C(1) << get(out, MEM4D_LAYOUT_MICRO_BATCH);
        ck_assert_uint_eq(seen, 2 + 4 + 16); /* b 1, 2 and 4 */
        mem4d_layout_free(out);
        mem4d_search_free(s);
    }
    mem4d_layout_free(l);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

/* A device on `stack` (NULL: the default) whose fit limit is each peak of
 * `l` as `key` runs over [1, hi] in turn (threshold 100%): the solver's
 * answer is brute force's, the largest value that fits, at every one. Galloping once stopped at the first power of two
 * that fell back and did not fit: llama2-7b at tp 4 with sequence
 * parallelism on BigScience's fork (8 heads a rank, fused from micro-batch
 * 4) answered 1 where 4 fits. */
static void solver_matches_brute_force(const char *model, const char *stack, mem4d_layout *l,
                                       mem4d_layout_param key, uint64_t hi)
{
    mem4d_model *m = tu_model(model);
    mem4d_device *d = tu_device("h200-141");
    if (stack)
        ck_assert_int_eq(mem4d_device_set_str(d, "stack", stack), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_FULL_FIT_THRESHOLD_PPM, 1000000), MEM4D_OK);
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    uint64_t *peak = calloc(hi + 1, sizeof *peak);
    ck_assert_ptr_nonnull(peak);
    for (uint64_t x = 1; x <= hi; x++) {
        ck_assert_int_eq(mem4d_layout_set(l, key, x), MEM4D_OK);
        if (mem4d_estimate(m, l, d, r) == MEM4D_OK)
            peak[x] = mem4d_report_peak_bytes(r);
    }
    size_t wrong = 0, limits = 0;
    for (uint64_t k = 1; k <= hi; k++) {
        if (!peak[k])
            continue;
        ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_MEMORY_BYTES, peak[k]), MEM4D_OK);
        uint64_t want = 0, got = 0;
        for (uint64_t x = 1; x <= hi; x++)
            if (peak[x] && peak[x] <= peak[k])
                want = x;
        ck_assert_int_eq((key == MEM4D_LAYOUT_MICRO_BATCH ? mem4d_solve_max_micro_batch
                                                           : mem4d_solve_max_seq_length)(m, l, d, &got),
                         MEM4D_OK);
        wrong += want < hi ? got != want : got < hi;
        limits++;
    }
    ck_assert_uint_ge(limits, hi / 8); /* sequence parallelism at tp 8: every 8th */
    ck_assert_msg(wrong == 0, "%zu of %zu limits answer other than brute force", wrong, limits);
    free(peak);
    mem4d_report_free(r);
    mem4d_device_free(d);
    mem4d_model_free(m);
}

START_TEST(solve_brute_force_where_softmax_falls_back)
{
    mem4d_layout *l = tu_layout("world=8", "tp=4", "sp=1", "seq=2048", "flash_attn=0", NULL);
    solver_matches_brute_force("llama2-7b", "megatron-deepspeed-bigscience-2022-02", l, MEM4D_LAYOUT_MICRO_BATCH, 64);
    mem4d_layout_free(l);
    /* Megatron-DeepSpeed (keys' batches per block): llama2-7b at tp 8, 4
     * heads a rank, micro-batch 3, falls back below 129 keys and at every
     * key count not a multiple of 4; bisection once answered 127 where 132
     * fits. */
    l = tu_layout("world=8", "tp=8", "sp=0", "mbs=3", "flash_attn=0", NULL);
    solver_matches_brute_force("llama2-7b", "megatron-deepspeed", l, MEM4D_LAYOUT_SEQ_LENGTH, 400);
    mem4d_layout_free(l);
}
END_TEST

/* Memory is not monotone in s or b on any stack: the logits blocks'
 * segments (PyTorch's caching allocator gives a request below 10 MiB a
 * 20 MiB segment, a larger one its size rounded to 2 MiB; m4d_alloc_size(),
 * loss_segments()) can reserve less for more tokens. llama2-7b at tp 4
 * peaks 4 MB lower at 651 tokens than at 650 (its bf16 logits reach 10 MiB:
 * 34 MiB of segments for the two blocks instead of 40): on the peak of 649
 * the solver once answered 649 where 651 fits, bisecting as if memory were
 * monotone (and 323 where 326 fits, before loss_segments() let the fp32
 * logits share the bf16 ones' 20 MiB segment). With a known global
 * batch, b sets m: llama2-7b at pp 2, 8 tokens, peaks 90 MB lower at b 16
 * (m 1) than at 8 (m 2, the first stage's embedding gradient beside the
 * other micro-batch), where the divisors' scan once stopped at 8 and
 * answered 4. The answer is the largest value that fits; a smaller one
 * need not fit. With expandable segments the peak's segment end is mapped
 * in 20 MiB pages (never less for more bytes) and each logits block keeps
 * its 512-byte rounding, which can fall. */
START_TEST(solve_brute_force_where_memory_falls)
{
    static const struct {
        const char *model, *tp, *sp, *pp, *gbs, *seq, *expandable;
        mem4d_layout_param key;
        uint64_t hi;
    } c[] = {
        {"llama2-7b", "tp=4", "sp=0", "pp=1", "gbs=0", "seq=2048", "expandable_segments=0", MEM4D_LAYOUT_SEQ_LENGTH,
         700},
        {"llama3.2-1b", "tp=8", "sp=0", "pp=1", "gbs=0", "seq=2048", "expandable_segments=0", MEM4D_LAYOUT_SEQ_LENGTH,
         400},
        {"llama3.1-8b", "tp=8", "sp=1", "pp=1", "gbs=0", "seq=2048", "expandable_segments=0", MEM4D_LAYOUT_SEQ_LENGTH,
         400},
        {"llama3.2-1b", "tp=8", "sp=0", "pp=1", "gbs=0", "seq=8", "expandable_segments=0", MEM4D_LAYOUT_MICRO_BATCH,
         64},
        {"llama3.2-1b", "tp=8", "sp=1", "pp=1", "gbs=0", "seq=32", "expandable_segments=0", MEM4D_LAYOUT_MICRO_BATCH,
         64},
        {"llama2-7b", "tp=1", "sp=0", "pp=2", "gbs=64", "seq=8", "expandable_segments=0", MEM4D_LAYOUT_MICRO_BATCH, 16},
        {"llama2-7b", "tp=4", "sp=0", "pp=1", "gbs=0", "seq=2048", "expandable_segments=1", MEM4D_LAYOUT_SEQ_LENGTH,
         700},
        {"llama3.2-1b", "tp=8", "sp=0", "pp=1", "gbs=0", "seq=8", "expandable_segments=1", MEM4D_LAYOUT_MICRO_BATCH,
         64},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        mem4d_layout *l =
            tu_layout("world=8", c[i].tp, c[i].sp, c[i].pp, c[i].gbs, c[i].seq, c[i].expandable, "mbs=1", NULL);
        solver_matches_brute_force(c[i].model, NULL, l, c[i].key, c[i].hi);
        mem4d_layout_free(l);
    }
}
END_TEST

START_TEST(solve_min_gpus)
{
    mem4d_model *m = tu_model("llama3.1-70b");
    mem4d_device *d = tu_device("h100-80");
    mem4d_layout *base = tu_layout("seq=4096", "gbs=64", NULL);
    mem4d_layout *best = NULL;
    ck_assert_int_eq(mem4d_layout_new(&best), MEM4D_OK);
    uint64_t n = 0;
    ck_assert_int_eq(mem4d_solve_min_gpus(m, d, base, 64, &n, best), MEM4D_OK);
    ck_assert_uint_gt(n, 1);
    ck_assert_uint_eq(get(best, MEM4D_LAYOUT_WORLD), n);
    ck_assert_int_eq(verdict_of(m, best, d), MEM4D_VERDICT_FITS);
    /* n - 1 GPUs: nothing fits (a full search says so). */
    mem4d_layout *fewer = base_layout(n - 1, 4096, 64);
    mem4d_search *s = new_search(m, d, fewer, true, true, false);
    ck_assert_int_eq(mem4d_search_next(s, NULL, NULL), MEM4D_END);
    mem4d_search_free(s);
    /* The layout is the fastest of a ranked search on n GPUs. */
    mem4d_layout *on_n = base_layout(n, 4096, 64), *first = NULL;
    ck_assert_int_eq(mem4d_layout_new(&first), MEM4D_OK);
    s = new_search(m, d, on_n, true, true, true);
    ck_assert_int_eq(mem4d_search_next(s, first, NULL), MEM4D_OK);
    for (int i = 0; i < NKNOB; i++)
        ck_assert_uint_eq(get(first, knobs[i]), get(best, knobs[i]));
    mem4d_search_free(s);
    ck_assert_int_eq(mem4d_solve_min_gpus(m, d, base, n - 1, &n, NULL), MEM4D_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(mem4d_solve_min_gpus(m, d, base, 0, &n, NULL), MEM4D_E_RANGE);
    mem4d_layout_free(first);
    mem4d_layout_free(on_n);
    mem4d_layout_free(fewer);
    mem4d_layout_free(best);
    mem4d_layout_free(base);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

/* The proposal of a job that does not fit: the first answer of a ranked
 * search over its GPUs, with its estimate; END when nothing fits. */
START_TEST(solve_best_layout)
{
    mem4d_model *m = tu_model("llama3.1-70b");
    mem4d_device *d = tu_device("h100-80");
    mem4d_layout *job = tu_layout("tp=2", "world=64", "seq=8192", "gbs=256", NULL);
    ck_assert_int_ne(verdict_of(m, job, d), MEM4D_VERDICT_FITS);
    mem4d_layout *best = NULL, *first = NULL;
    mem4d_report *r = NULL, *direct = NULL;
    ck_assert_int_eq(mem4d_layout_new(&best), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_new(&first), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_new(&direct), MEM4D_OK);
    ck_assert_int_eq(mem4d_solve_best_layout(m, d, job, best, r), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_verdict(r), MEM4D_VERDICT_FITS);
    ck_assert_int_eq(mem4d_estimate(m, best, d, direct), MEM4D_OK);
    ck_assert_uint_eq(mem4d_report_peak_bytes(direct), mem4d_report_peak_bytes(r));
    mem4d_search *s = new_search(m, d, job, true, true, true);
    ck_assert_int_eq(mem4d_search_next(s, first, NULL), MEM4D_OK);
    for (int i = 0; i < NKNOB; i++)
        ck_assert_uint_eq(get(first, knobs[i]), get(best, knobs[i]));
    mem4d_search_free(s);
    /* Eight GPUs hold no 70B layout at 8192 tokens; the report may be NULL. */
    ck_assert_int_eq(mem4d_layout_set(job, MEM4D_LAYOUT_WORLD, 8), MEM4D_OK);
    ck_assert_int_eq(mem4d_solve_best_layout(m, d, job, best, NULL), MEM4D_END);
    ck_assert_int_eq(mem4d_solve_best_layout(m, d, job, NULL, NULL), MEM4D_E_INVALID_ARG);
    mem4d_report_free(direct);
    mem4d_report_free(r);
    mem4d_layout_free(first);
    mem4d_layout_free(best);
    mem4d_layout_free(job);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

/* The tie-break: the same layouts as strictly fastest first; the first
 * EQUIVALENT ones are those whose band between layouts (here the device's
 * own speed_band_*_ppm, which replace it) overlaps the
 * fastest's, by fewer model-parallel GPUs then step time; the rest keep
 * the step order. Without the option the stat is 0. */
START_TEST(tie_break_equivalent_first)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_device *d = tu_device("h100-80");
    mem4d_layout *base = base_layout(16, 4096, 128);
    double lo, hi;
    ck_assert_int_eq(mem4d_device_set_str(d, "speed_band_low_ppm", "950000"), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_set_str(d, "speed_band_high_ppm", "1100000"), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_speed_band(d, &lo, &hi), MEM4D_OK);
    ck_assert(fabs(lo - 0.95) < 1e-12 && fabs(hi - 1.1) < 1e-12);
    ck_assert_int_eq(mem4d_device_speed_band(NULL, &lo, &hi), MEM4D_E_INVALID_ARG);
    double steps[2][4096];
    uint64_t mp[4096], peak[4096], n[2] = {0, 0}, eq = 0;
    mem4d_layout *l = NULL;
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_layout_new(&l), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    for (int tb = 0; tb <= 1; tb++) {
        mem4d_search *s = new_search(m, d, base, true, true, true);
        ck_assert_int_eq(mem4d_search_set_option(s, MEM4D_SEARCH_TIE_BREAK, (uint64_t)tb), MEM4D_OK);
        while (mem4d_search_next(s, l, r) == MEM4D_OK) {
            ck_assert_uint_lt(n[tb], 4096);
            ck_assert_int_eq(mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &steps[tb][n[tb]]), MEM4D_OK);
            mp[n[tb]] = get(l, MEM4D_LAYOUT_TP) * get(l, MEM4D_LAYOUT_CP) * get(l, MEM4D_LAYOUT_PP);
            peak[n[tb]] = mem4d_report_peak_bytes(r);
            n[tb]++;
        }
        ck_assert_int_eq(mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_EQUIVALENT, &eq), MEM4D_OK);
        if (!tb)
            ck_assert_uint_eq(eq, 0);
        mem4d_search_free(s);
    }
    ck_assert_uint_eq(n[0], n[1]);
    ck_assert(eq >= 1 && eq < n[1]);
    double fastest = steps[0][0];
    for (uint64_t i = 0; i < n[1]; i++) {
        ck_assert(i == 0 || steps[0][i] >= steps[0][i - 1]);
        ck_assert_int_eq(steps[1][i] * lo <= fastest * hi, i < eq);
        if (i > 0 && i < eq)
            ck_assert(mp[i] > mp[i - 1] || (mp[i] == mp[i - 1] && (steps[1][i] > steps[1][i - 1] ||
                                                                (steps[1][i] == steps[1][i - 1] &&
                                                                 peak[i] >= peak[i - 1]))));
        if (i > eq)
            ck_assert(steps[1][i] >= steps[1][i - 1]);
    }
    mem4d_report_free(r);
    mem4d_layout_free(l);
    mem4d_layout_free(base);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

/* One ranked search over every valid layout with the tie-break: how many it
 * counts equivalent, how many of those fit, and how many fit at all; the
 * steps and verdicts, in the order yielded, into steps[] and verdicts[]. */
static uint64_t equivalent_among(mem4d_model *m, mem4d_device *d, const mem4d_layout *base, bool fits_only,
                                 uint64_t *eq_fitting, uint64_t *fitting, size_t *n, double *steps, int *verdicts)
{
    mem4d_search *s = new_search(m, d, base, fits_only, true, true);
    ck_assert_int_eq(mem4d_search_set_option(s, MEM4D_SEARCH_TIE_BREAK, 1), MEM4D_OK);
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    *n = 0;
    *fitting = 0;
    while (mem4d_search_next(s, NULL, r) == MEM4D_OK) {
        ck_assert_uint_lt(*n, 8192);
        ck_assert_int_eq(mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &steps[*n]), MEM4D_OK);
        verdicts[*n] = (int)mem4d_report_verdict(r);
        *fitting += verdicts[*n] == MEM4D_VERDICT_FITS;
        (*n)++;
    }
    uint64_t eq = 0;
    ck_assert_int_eq(mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_EQUIVALENT, &eq), MEM4D_OK);
    ck_assert_uint_le(eq, *n);
    *eq_fitting = 0;
    for (uint64_t i = 0; i < eq; i++)
        *eq_fitting += verdicts[i] == MEM4D_VERDICT_FITS;
    mem4d_report_free(r);
    mem4d_search_free(s);
    return eq;
}

/* Equivalence is a choice among layouts that fit. Where none fits (every
 * layout oom: llama3.1-405b on 8 H100; or only tight and oom ones: llama3.1-70b
 * on 8 GPUs of 195 GB) none is equivalent and the layouts keep the strict
 * order (verdict, then step): it counted 1498 of 2790 oom and 24 of 70 tight
 * ones and led with them by model-parallel GPUs. Where some fit, the
 * equivalent ones are those of the fitting-only search, all fitting. */
START_TEST(tie_break_only_among_fitting)
{
    static double steps[8192];
    static int verdicts[8192];
    mem4d_device *d = tu_device("h100-80");
    mem4d_layout *base = base_layout(8, 8192, 512);
    uint64_t eq, eq_fit, fit;
    size_t n;
    const char *big[] = {"llama3.1-405b", "llama3.1-70b"};
    for (int k = 0; k < 2; k++) {
        mem4d_model *m = tu_model(big[k]);
        if (k == 1)
            ck_assert_int_eq(mem4d_device_set_str(d, "memory_bytes", "195000000000"), MEM4D_OK);
        eq = equivalent_among(m, d, base, false, &eq_fit, &fit, &n, steps, verdicts);
        ck_assert_uint_gt(n, 1000);
        ck_assert_uint_eq(fit, 0);
        ck_assert_int_eq(verdicts[0], k == 0 ? MEM4D_VERDICT_OOM : MEM4D_VERDICT_TIGHT);
        ck_assert_int_eq(verdicts[1], verdicts[0]);
        ck_assert_uint_eq(eq, 0);
        for (size_t i = 1; i < n; i++)
            ck_assert(verdicts[i] > verdicts[i - 1] || (verdicts[i] == verdicts[i - 1] && steps[i] >= steps[i - 1]));
        mem4d_model_free(m);
    }
    mem4d_device_free(d);
    mem4d_layout_free(base);
    mem4d_model *m = tu_model("llama3.1-8b");
    d = tu_device("h100-80");
    base = base_layout(16, 4096, 128);
    uint64_t eq_only = equivalent_among(m, d, base, true, &eq_fit, &fit, &n, steps, verdicts);
    ck_assert(eq_only > 1 && eq_only == eq_fit && fit == n);
    eq = equivalent_among(m, d, base, false, &eq_fit, &fit, &n, steps, verdicts);
    ck_assert(fit > 0 && fit < n);
    ck_assert_uint_eq(eq, eq_only);
    ck_assert_uint_eq(eq_fit, eq);
    mem4d_layout_free(base);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("search");
    TCase *tc = tcase_create("complete");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, complete_8b_fits);
    tcase_add_test(tc, complete_8b_all_valid);
    tcase_add_test(tc, complete_8b_16_gpus_any_tc);
    tcase_add_test(tc, complete_unknown_batch);
    tcase_add_test(tc, complete_paper_mode);
    tcase_add_test(tc, complete_with_activation_offloading);
    tcase_add_test(tc, complete_every_framework);
    tcase_add_test(tc, complete_on_softmax_stack);
    tcase_add_test(tc, complete_where_softmax_falls_back_by_micro_batch);
    tcase_add_test(tc, complete_with_mfu_above_the_peak);
    tcase_add_test(tc, b_terms_kept_per_key);
    tcase_add_test(tc, complete_uneven_stages);
    tcase_add_test(tc, middle_stages_never_exceed_stage_one);
    tcase_add_test(tc, complete_pruning_heavy);
    tcase_add_test(tc, complete_where_memory_falls_with_the_micro_batch);
    tcase_add_test(tc, pruning_invariants);
    suite_add_tcase(s, tc);
    tc = tcase_create("options");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, constraints_honoured);
    tcase_add_test(tc, node_local_rule);
    tcase_add_test(tc, early_stop);
    tcase_add_test(tc, errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("ranking");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, ranked_order_is_total_and_deterministic);
    tcase_add_test(tc, fact_tc_inside_node);
    tcase_add_test(tc, fact_smallest_model_parallel);
    tcase_add_test(tc, fact_larger_micro_batch);
    tcase_add_test(tc, fact_bubbles_cost);
    suite_add_tcase(s, tc);
    tc = tcase_create("solvers");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, solve_max_micro_batch);
    tcase_add_test(tc, solve_max_seq_length);
    tcase_add_test(tc, solve_min_gpus);
    tcase_add_test(tc, solve_where_softmax_falls_back);
    tcase_add_test(tc, solve_brute_force_where_softmax_falls_back);
    tcase_add_test(tc, solve_brute_force_where_memory_falls);
    tcase_add_test(tc, solve_best_layout);
    tcase_add_test(tc, tie_break_equivalent_first);
    tcase_add_test(tc, tie_break_only_among_fitting);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
