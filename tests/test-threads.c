/*
 * Thread safety: many threads estimating and searching at once on shared
 * const handles must get exactly the single-threaded answers. Run it under
 * ThreadSanitizer too (scripts/ci.d/40-sanitizers.sh): a data race in the
 * library is then a failure even when the numbers happen to agree.
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mem4d/mem4d.h>

#define NTHREADS 8
#define ROUNDS 200
#define MAX_STAGES 16
#define NTERMS 14
#define MAX_FOUND 48

/* One layout to estimate: a mix of valid and invalid ones, so error paths
 * (and their messages) are exercised concurrently as well. */
struct layout_case {
    uint64_t tp, cp, pp, world, mbs, seq, gbs, vpp, recompute, mode;
};

static const struct layout_case cases[] = {
    {2, 1, 1, 4, 1, 8192, 0, 1, 0, 1},      /* the paper's golden rows */
    {1, 2, 1, 4, 1, 8192, 0, 1, 0, 1},
    {2, 1, 2, 128, 1, 8192, 0, 1, 0, 1},
    {2, 2, 1, 128, 2, 8192, 0, 1, 0, 1},
    {2, 1, 1, 8, 1, 8192, 64, 1, 0, 0},     /* full mode, with speed */
    {4, 2, 2, 64, 1, 16384, 256, 1, 2, 0},
    {8, 1, 4, 256, 2, 4096, 512, 2, 1, 0},
    {1, 1, 8, 64, 1, 4096, 1024, 4, 0, 0},
    {2, 1, 16, 32, 1, 2048, 0, 2, 2, 0},
    {3, 1, 1, 3, 1, 4096, 0, 1, 0, 0},      /* heads not divisible by tp */
    {2, 1, 1, 7, 1, 4096, 0, 1, 0, 0},      /* world not tp x cp x pp x dp */
    {1, 3, 1, 3, 1, 4096, 0, 1, 0, 0},      /* seq not divisible by 2 cp */
    {1, 1, 3, 3, 1, 4096, 0, 1, 0, 0},      /* layers not divisible by pp */
    {2, 1, 1, 8, 3, 4096, 64, 1, 0, 0},     /* gbs not divisible by mbs x dp */
};
#define NCASES (sizeof cases / sizeof cases[0])

/* Everything a report says, in comparable form. */
struct outcome {
    mem4d_status status;
    mem4d_verdict verdict;
    uint32_t nstages, peak_stage;
    uint64_t peak;
    uint64_t terms[MAX_STAGES][NTERMS];
    double step_time;
    mem4d_status metric_status;
    char message[256];
};

/* One search hit: the searched knobs, the peak and the predicted time. */
struct hit {
    uint64_t knobs[8];
    uint64_t peak;
    double step_time;
};
struct search_outcome {
    mem4d_status end_status;
    size_t n;
    struct hit hits[MAX_FOUND];
    uint64_t visited, valid, yielded;
};

static const mem4d_layout_param search_knobs[8] = {
    MEM4D_LAYOUT_TP, MEM4D_LAYOUT_CP, MEM4D_LAYOUT_PP, MEM4D_LAYOUT_DP,
    MEM4D_LAYOUT_MICRO_BATCH, MEM4D_LAYOUT_VPP, MEM4D_LAYOUT_RECOMPUTE, MEM4D_LAYOUT_DIST_OPT,
};

/* The shared, read-only inputs. Built once by the test before any thread. */
struct shared {
    const mem4d_model *model;
    const mem4d_device *device;
    const mem4d_layout *layouts[NCASES];
    const mem4d_layout *search_base;
    struct outcome expect[NCASES];
    struct search_outcome expect_search;
    pthread_barrier_t start;
};

static mem4d_layout *make_layout(const struct layout_case *c)
{
    mem4d_layout *l = NULL;
    ck_assert_int_eq(mem4d_layout_new(&l), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_TP, c->tp), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_CP, c->cp), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_PP, c->pp), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_WORLD, c->world), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_MICRO_BATCH, c->mbs), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_SEQ_LENGTH, c->seq), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_GLOBAL_BATCH, c->gbs), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_VPP, c->vpp), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_RECOMPUTE, c->recompute), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_MODE, c->mode), MEM4D_OK);
    return l;
}

/* Read a report into an outcome. Uses only the public getters, which a
 * thread calls on its own report. */
static void capture(const mem4d_report *r, mem4d_status st, struct outcome *o)
{
    memset(o, 0, sizeof *o);
    o->status = st;
    o->verdict = mem4d_report_verdict(r);
    o->nstages = mem4d_report_num_stages(r);
    o->peak_stage = mem4d_report_peak_stage(r);
    o->peak = mem4d_report_peak_bytes(r);
    snprintf(o->message, sizeof o->message, "%s", mem4d_report_message(r));
    for (uint32_t s = 0; s < o->nstages && s < MAX_STAGES; s++)
        for (int t = 0; t < NTERMS; t++)
            (void)mem4d_report_get(r, s, (mem4d_term)t, &o->terms[s][t]);
    o->metric_status = mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &o->step_time);
}

/* Exact equality, doubles included: the library is deterministic. */
static bool same_outcome(const struct outcome *a, const struct outcome *b)
{
    return a->status == b->status && a->verdict == b->verdict && a->nstages == b->nstages
           && a->peak_stage == b->peak_stage && a->peak == b->peak
           && memcmp(a->terms, b->terms, sizeof a->terms) == 0
           && a->metric_status == b->metric_status
           && memcmp(&a->step_time, &b->step_time, sizeof a->step_time) == 0
           && strcmp(a->message, b->message) == 0;
}

static mem4d_status run_search(const struct shared *sh, struct search_outcome *o)
{
    mem4d_search *s = NULL;
    mem4d_layout *l = NULL;
    mem4d_report *r = NULL;
    memset(o, 0, sizeof *o);
    mem4d_status st = mem4d_search_new(sh->model, sh->device, sh->search_base, &s);
    if (st == MEM4D_OK)
        st = mem4d_layout_new(&l);
    if (st == MEM4D_OK)
        st = mem4d_report_new(&r);
    if (st == MEM4D_OK)
        st = mem4d_search_set_option(s, MEM4D_SEARCH_MAX_RESULTS, MAX_FOUND);
    while (st == MEM4D_OK && (st = mem4d_search_next(s, l, r)) == MEM4D_OK) {
        if (o->n == MAX_FOUND) {
            st = MEM4D_E_RANGE; /* MAX_RESULTS was not honoured */
            break;
        }
        struct hit *h = &o->hits[o->n++];
        for (int k = 0; k < 8; k++)
            (void)mem4d_layout_get(l, search_knobs[k], &h->knobs[k]);
        h->peak = mem4d_report_peak_bytes(r);
        (void)mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &h->step_time);
    }
    o->end_status = st;
    if (s) {
        (void)mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_VISITED, &o->visited);
        (void)mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_VALID, &o->valid);
        (void)mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_YIELDED, &o->yielded);
    }
    mem4d_report_free(r);
    mem4d_layout_free(l);
    mem4d_search_free(s);
    return st;
}

static bool same_search(const struct search_outcome *a, const struct search_outcome *b)
{
    return a->end_status == b->end_status && a->n == b->n
           && memcmp(a->hits, b->hits, sizeof a->hits) == 0 && a->visited == b->visited
           && a->valid == b->valid && a->yielded == b->yielded;
}

struct worker {
    struct shared *sh;
    int id;
    bool do_search;
    int mismatches;     /* estimates that differed from the reference */
    int search_mismatches;
    int setup_failures; /* handles that could not be created */
};

static void *work(void *arg)
{
    struct worker *w = arg;
    mem4d_report *r = NULL;
    if (mem4d_report_new(&r) != MEM4D_OK) {
        w->setup_failures++;
        return NULL;
    }
    pthread_barrier_wait(&w->sh->start);
    for (int round = 0; round < ROUNDS; round++) {
        /* Each thread walks the cases from its own offset, so different
         * threads estimate different layouts at the same moment. */
        for (size_t i = 0; i < NCASES; i++) {
            size_t c = (i + (size_t)w->id) % NCASES;
            struct outcome got;
            mem4d_status st = mem4d_estimate(w->sh->model, w->sh->layouts[c], w->sh->device, r);
            capture(r, st, &got);
            if (!same_outcome(&got, &w->sh->expect[c]))
                w->mismatches++;
        }
        if (w->do_search && round % 10 == 0) {
            struct search_outcome got;
            run_search(w->sh, &got);
            if (!same_search(&got, &w->sh->expect_search))
                w->search_mismatches++;
        }
    }
    mem4d_report_free(r);
    return NULL;
}

static struct shared *shared_new(void)
{
    struct shared *sh = calloc(1, sizeof *sh);
    ck_assert_ptr_nonnull(sh);
    mem4d_model *m = NULL;
    mem4d_device *d = NULL;
    mem4d_layout *base = NULL;
    ck_assert_int_eq(mem4d_model_new_preset("llama3.1-8b", &m), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_new_preset("h100-80", &d), MEM4D_OK);
    sh->model = m;
    sh->device = d;
    for (size_t i = 0; i < NCASES; i++)
        sh->layouts[i] = make_layout(&cases[i]);
    ck_assert_int_eq(mem4d_layout_new(&base), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(base, MEM4D_LAYOUT_WORLD, 32), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(base, MEM4D_LAYOUT_SEQ_LENGTH, 4096), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(base, MEM4D_LAYOUT_GLOBAL_BATCH, 256), MEM4D_OK);
    sh->search_base = base;

    /* The reference answers, computed before any thread exists. */
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    for (size_t i = 0; i < NCASES; i++) {
        mem4d_status st = mem4d_estimate(sh->model, sh->layouts[i], sh->device, r);
        capture(r, st, &sh->expect[i]);
        ck_assert_uint_le(sh->expect[i].nstages, MAX_STAGES);
    }
    mem4d_report_free(r);
    return sh;
}

static void shared_free(struct shared *sh)
{
    for (size_t i = 0; i < NCASES; i++)
        mem4d_layout_free((mem4d_layout *)sh->layouts[i]);
    mem4d_layout_free((mem4d_layout *)sh->search_base);
    mem4d_model_free((mem4d_model *)sh->model);
    mem4d_device_free((mem4d_device *)sh->device);
    free(sh);
}

/* Start NTHREADS workers together and wait for them; returns the totals. */
static void run_threads(struct shared *sh, bool search, int *mismatch, int *search_mismatch)
{
    pthread_t tid[NTHREADS];
    struct worker w[NTHREADS];
    ck_assert_int_eq(pthread_barrier_init(&sh->start, NULL, NTHREADS), 0);
    for (int i = 0; i < NTHREADS; i++) {
        w[i] = (struct worker){.sh = sh, .id = i, .do_search = search};
        ck_assert_int_eq(pthread_create(&tid[i], NULL, work, &w[i]), 0);
    }
    *mismatch = *search_mismatch = 0;
    int setup = 0;
    for (int i = 0; i < NTHREADS; i++) {
        ck_assert_int_eq(pthread_join(tid[i], NULL), 0);
        *mismatch += w[i].mismatches;
        *search_mismatch += w[i].search_mismatches;
        setup += w[i].setup_failures;
    }
    pthread_barrier_destroy(&sh->start);
    ck_assert_int_eq(setup, 0);
}

START_TEST(test_reference_is_meaningful)
{
    /* Guard against a vacuous comparison: the references must contain both
     * successes with real numbers and the specific failures we expect. */
    struct shared *sh = shared_new();
    ck_assert_int_eq(sh->expect[0].status, MEM4D_OK);
    ck_assert_uint_gt(sh->expect[0].peak, 0);
    ck_assert_int_eq(sh->expect[4].status, MEM4D_OK);
    ck_assert_int_eq(sh->expect[4].metric_status, MEM4D_OK);
    ck_assert_int_eq(sh->expect[5].nstages, 2);
    ck_assert_int_eq(sh->expect[9].status, MEM4D_E_HEADS_TP);
    ck_assert_int_eq(sh->expect[10].status, MEM4D_E_WORLD);
    ck_assert_int_eq(sh->expect[11].status, MEM4D_E_SEQ);
    ck_assert_int_eq(sh->expect[12].status, MEM4D_E_LAYERS_PP);
    ck_assert_int_eq(sh->expect[13].status, MEM4D_E_BATCH);
    ck_assert_str_ne(sh->expect[9].message, "");
    shared_free(sh);
}
END_TEST

START_TEST(test_concurrent_estimates)
{
    struct shared *sh = shared_new();
    int mismatch, search_mismatch;
    run_threads(sh, false, &mismatch, &search_mismatch);
    ck_assert_int_eq(mismatch, 0);
    shared_free(sh);
}
END_TEST

START_TEST(test_concurrent_searches)
{
    struct shared *sh = shared_new();
    ck_assert_int_eq(run_search(sh, &sh->expect_search), MEM4D_END);
    ck_assert_uint_gt(sh->expect_search.n, 0);
    int mismatch, search_mismatch;
    run_threads(sh, true, &mismatch, &search_mismatch);
    ck_assert_int_eq(mismatch, 0);
    ck_assert_int_eq(search_mismatch, 0);
    shared_free(sh);
}
END_TEST

/* Distinct handles on different threads (the header's other promise): each
 * thread fits its own calibration and imports into its own model, and must
 * get what one thread alone gets. Two kinds of job alternate between the
 * threads, so scratch state shared by the library's calls (the fit's
 * Jacobian, the importer's built layer pattern) would mix two jobs' values;
 * ThreadSanitizer reports it even when the numbers happen to agree. */
#define KINDS 2
#define OWN_ROUNDS 4

struct own_outcome {
    mem4d_status fit, import;
    uint64_t fitted[4];
    int chosen[4];
    char pattern[64];
};

static const mem4d_device_param fit_keys[4] = {
    MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM, MEM4D_DEVICE_ATTENTION_EFFICIENCY_PPM,
    MEM4D_DEVICE_MICROBATCH_OVERHEAD_NS, MEM4D_DEVICE_COMM_EFFICIENCY_PPM,
};

/* Fit an h100-80 to five runs timed on a device that differs by kind. */
static mem4d_status own_fit(int kind, struct own_outcome *o)
{
    static const char *const truths[KINDS][2][2] = {
        {{"matmul_efficiency_ppm", "500000"}, {"microbatch_overhead_ns", "20000000"}},
        {{"matmul_efficiency_ppm", "700000"}, {"attention_efficiency_ppm", "400000"}},
    };
    static const uint64_t jobs[5][3] = {{2048, 512, 1}, {2048, 512, 8}, {16384, 64, 1}, {8192, 128, 2}, {4096, 256, 4}};
    mem4d_model *m = NULL;
    mem4d_device *truth = NULL, *d = NULL;
    mem4d_report *r = NULL;
    mem4d_calibration *c = NULL;
    mem4d_layout *l = NULL;
    mem4d_status st = mem4d_model_new_preset("llama3.1-8b", &m);
    if (st == MEM4D_OK)
        st = mem4d_device_new_preset("h100-80", &truth);
    if (st == MEM4D_OK)
        st = mem4d_device_new_preset("h100-80", &d);
    for (int i = 0; i < 2 && st == MEM4D_OK; i++)
        st = mem4d_device_set_str(truth, truths[kind][i][0], truths[kind][i][1]);
    if (st == MEM4D_OK)
        st = mem4d_report_new(&r);
    if (st == MEM4D_OK)
        st = mem4d_calibration_new(&c);
    if (st == MEM4D_OK)
        st = mem4d_layout_new(&l);
    for (size_t i = 0; i < 5 && st == MEM4D_OK; i++) {
        double step = 0;
        const uint64_t v[5] = {8, 2, jobs[i][0], jobs[i][1], jobs[i][2]};
        const mem4d_layout_param k[5] = {MEM4D_LAYOUT_WORLD, MEM4D_LAYOUT_TP, MEM4D_LAYOUT_SEQ_LENGTH,
                                         MEM4D_LAYOUT_GLOBAL_BATCH, MEM4D_LAYOUT_MICRO_BATCH};
        for (int j = 0; j < 5 && st == MEM4D_OK; j++)
            st = mem4d_layout_set(l, k[j], v[j]);
        if (st == MEM4D_OK)
            st = mem4d_estimate(m, l, truth, r);
        if (st == MEM4D_OK)
            st = mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &step);
        if (st == MEM4D_OK)
            st = mem4d_calibration_add_measurement(c, m, l, MEM4D_CALIBRATION_MEASURED_STEP_S, step);
    }
    if (st == MEM4D_OK)
        st = mem4d_calibration_fit(c, d);
    for (size_t i = 0; i < 4 && st == MEM4D_OK; i++) {
        mem4d_device_param key;
        (void)mem4d_device_get(d, fit_keys[i], &o->fitted[i]);
        (void)mem4d_calibration_constant(c, i, &key, &o->chosen[i]);
    }
    mem4d_layout_free(l);
    mem4d_calibration_free(c);
    mem4d_report_free(r);
    mem4d_device_free(d);
    mem4d_device_free(truth);
    mem4d_model_free(m);
    return st;
}

/* A Megatron command line whose layer pattern the importer builds: Gated
 * DeltaNet every fourth GPT layer, or a hybrid model by its ratios. */
static mem4d_status own_import(int kind, struct own_outcome *o)
{
    static const char *const common[] = {"--num-layers", "8", "--hidden-size", "256", "--num-attention-heads", "4",
                                         "--seq-length", "1024", "--vocab-size", "1000"};
    static const char *const extra[KINDS][6] = {
        {"--experimental-attention-variant", "gdn", "--linear-attention-freq", "4", "--linear-num-key-heads", "2"},
        {"--is-hybrid-model", "--hybrid-attention-ratio", "0.25", "--hybrid-mlp-ratio", "0.5", "--bf16"},
    };
    const char *argv[18];
    int argc = 0;
    for (size_t i = 0; i < sizeof common / sizeof *common; i++)
        argv[argc++] = common[i];
    for (size_t i = 0; i < 6; i++)
        argv[argc++] = extra[kind][i];
    if (kind == 0) {
        argv[argc++] = "--linear-num-value-heads";
        argv[argc++] = "4";
    }
    mem4d_import *imp = NULL;
    mem4d_model *m = NULL;
    mem4d_layout *l = NULL;
    mem4d_status st = mem4d_import_new(&imp);
    if (st == MEM4D_OK)
        st = mem4d_model_new(&m);
    if (st == MEM4D_OK)
        st = mem4d_layout_new(&l);
    if (st == MEM4D_OK)
        st = mem4d_import_megatron(imp, argc, argv, NULL, 8, m, l);
    (void)mem4d_model_get_layer_pattern(m, o->pattern, sizeof o->pattern);
    mem4d_layout_free(l);
    mem4d_model_free(m);
    mem4d_import_free(imp);
    return st;
}

static void own_run(int kind, struct own_outcome *o)
{
    memset(o, 0, sizeof *o);
    o->fit = own_fit(kind, o);
    o->import = own_import(kind, o);
}

struct own_worker {
    pthread_barrier_t *start;
    const struct own_outcome *expect; /* by kind */
    int id, mismatches;
};

static void *own_work(void *arg)
{
    struct own_worker *w = arg;
    pthread_barrier_wait(w->start);
    for (int round = 0; round < OWN_ROUNDS; round++) {
        int kind = (w->id + round) % KINDS;
        struct own_outcome got;
        own_run(kind, &got);
        if (memcmp(&got, &w->expect[kind], sizeof got) != 0)
            w->mismatches++;
    }
    return NULL;
}

START_TEST(test_concurrent_fits_and_imports)
{
    struct own_outcome expect[KINDS];
    for (int k = 0; k < KINDS; k++) {
        own_run(k, &expect[k]);
        ck_assert_int_eq(expect[k].fit, MEM4D_OK);
        ck_assert_int_eq(expect[k].import, MEM4D_OK);
    }
    /* the two kinds differ where a mix-up would show */
    ck_assert_uint_ne(expect[0].fitted[0], expect[1].fitted[0]);
    ck_assert_str_eq(expect[0].pattern, "G-G-G-*-G-G-G-*-");
    ck_assert_str_ne(expect[1].pattern, "");
    ck_assert_str_ne(expect[0].pattern, expect[1].pattern);
    pthread_barrier_t start;
    pthread_t tid[NTHREADS];
    struct own_worker w[NTHREADS];
    ck_assert_int_eq(pthread_barrier_init(&start, NULL, NTHREADS), 0);
    for (int i = 0; i < NTHREADS; i++) {
        w[i] = (struct own_worker){.start = &start, .expect = expect, .id = i};
        ck_assert_int_eq(pthread_create(&tid[i], NULL, own_work, &w[i]), 0);
    }
    int mismatches = 0;
    for (int i = 0; i < NTHREADS; i++) {
        ck_assert_int_eq(pthread_join(tid[i], NULL), 0);
        mismatches += w[i].mismatches;
    }
    pthread_barrier_destroy(&start);
    ck_assert_int_eq(mismatches, 0);
}
END_TEST

static Suite *threads_suite(void)
{
    Suite *s = suite_create("threads");
    TCase *tc = tcase_create("shared-const-handles");
    /* Generous: under ThreadSanitizer everything runs ~10x slower. */
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_reference_is_meaningful);
    tcase_add_test(tc, test_concurrent_estimates);
    tcase_add_test(tc, test_concurrent_searches);
    suite_add_tcase(s, tc);
    TCase *own = tcase_create("distinct-handles");
    tcase_set_timeout(own, 600);
    tcase_add_test(own, test_concurrent_fits_and_imports);
    suite_add_tcase(s, own);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(threads_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
