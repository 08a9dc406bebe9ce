/*
 * mem4d_estimate(): paper mode against the golden values of the paper's
 * reference tests, report accessors, verdicts, determinism, no allocation,
 * overflow.
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* Count allocations made through malloc and friends (the library's calls
 * resolve to these definitions, which forward to glibc's). Sanitizers bring
 * their own allocator, so under them the count is not taken. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define NO_MALLOC_HOOK 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NO_MALLOC_HOOK 1
#endif
static volatile unsigned long allocations;
#ifndef NO_MALLOC_HOOK
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
void *malloc(size_t n) { allocations++; return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { allocations++; return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { allocations++; return __libc_realloc(p, n); }
#endif

static const struct {
    uint64_t t, c, p, b, world;
    double weights_opt_gib, act_gib;
    uint64_t params;
} golden[] = {
    {2, 1, 1, 1, 4, 44.87260437011719, 22.64453125, UINT64_C(4015132672)},
    {1, 2, 1, 1, 4, 67.30887222290039, 22.64453125, UINT64_C(8030261248)},
    {2, 1, 2, 1, 128, 11.919273376464844, 20.75, UINT64_C(2007564288)},
    {2, 2, 1, 2, 128, 23.137436628341675, 22.64453125, UINT64_C(4015132672)},
};

static uint64_t get(const mem4d_report *r, uint32_t stage, mem4d_term t)
{
    uint64_t v = UINT64_MAX;
    ck_assert_int_eq(mem4d_report_get(r, stage, t, &v), MEM4D_OK);
    return v;
}

static mem4d_layout *paper_layout(uint64_t t, uint64_t c, uint64_t p, uint64_t b, uint64_t world)
{
    mem4d_layout *l = tu_layout("mode=paper", "seq=8192", NULL);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_TP, t), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_CP, c), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_PP, p), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_MICRO_BATCH, b), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_WORLD, world), MEM4D_OK);
    return l;
}

START_TEST(paper_golden)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_device *d = tu_device("h100-80");
    mem4d_layout *l = paper_layout(golden[_i].t, golden[_i].c, golden[_i].p, golden[_i].b, golden[_i].world);
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    ck_assert_int_eq(mem4d_estimate(m, l, d, r), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_mode(r), MEM4D_MODE_PAPER);
    ck_assert_uint_eq(mem4d_report_num_stages(r), 1);
    uint64_t wo = get(r, 0, MEM4D_TERM_WEIGHTS) + get(r, 0, MEM4D_TERM_GRADIENTS) + get(r, 0, MEM4D_TERM_OPTIMIZER);
    uint64_t act = get(r, 0, MEM4D_TERM_ACTIVATIONS);
    ck_assert_double_eq_tol((double)wo / GIB, golden[_i].weights_opt_gib, 1e-9);
    ck_assert_double_eq_tol((double)act / GIB, golden[_i].act_gib, 1e-9);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_PARAMS), golden[_i].params);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_OVERHEAD), 0);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_TOTAL), wo + act);
    ck_assert_uint_eq(mem4d_report_peak_bytes(r), wo + act);
    uint64_t dp;
    ck_assert_int_eq(mem4d_report_info(r, MEM4D_INFO_DP, &dp), MEM4D_OK);
    ck_assert_uint_eq(dp, golden[_i].world / (golden[_i].t * golden[_i].c * golden[_i].p));
    mem4d_report_free(r);
    mem4d_layout_free(l);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

static mem4d_report *estimate_ok(const char *model, mem4d_layout *l, const char *gpu)
{
    mem4d_model *m = tu_model(model);
    mem4d_device *d = tu_device(gpu);
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    mem4d_status st = mem4d_estimate(m, l, d, r);
    ck_assert_msg(st == MEM4D_OK, "%s: %s", mem4d_strerror(st), mem4d_report_message(r));
    mem4d_device_free(d);
    mem4d_model_free(m);
    return r;
}

/* Without the distributed optimizer every rank holds 18 bytes per
 * parameter; bf16 gradients save 2 of them. */
START_TEST(paper_bytes_per_param)
{
    mem4d_layout *l = paper_layout(2, 1, 1, 1, 4);
    mem4d_layout_set(l, MEM4D_LAYOUT_DIST_OPT, 0);
    mem4d_report *r = estimate_ok("llama3.1-8b", l, "h100-80");
    uint64_t N = UINT64_C(4015132672);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_WEIGHTS), 2 * N);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_GRADIENTS), 4 * N);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_OPTIMIZER), 12 * N);
    mem4d_report_free(r);
    mem4d_layout_set(l, MEM4D_LAYOUT_MAIN_GRAD_BYTES, 2);
    r = estimate_ok("llama3.1-8b", l, "h100-80");
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_GRADIENTS), 2 * N);
    mem4d_report_free(r);
    mem4d_layout_free(l);
}
END_TEST

/* m < p: the first stage holds only m micro-batches, so the layer term
 * scales by m/p while the embedding term stays. */
START_TEST(paper_few_microbatches)
{
    mem4d_layout *l = paper_layout(2, 1, 2, 1, 128);
    mem4d_report *r = estimate_ok("llama3.1-8b", l, "h100-80");
    uint64_t full = get(r, 0, MEM4D_TERM_ACTIVATIONS);
    mem4d_report_free(r);
    mem4d_layout_set(l, MEM4D_LAYOUT_GLOBAL_BATCH, 32); /* m = 32 / (1 x 32) = 1 < p = 2 */
    r = estimate_ok("llama3.1-8b", l, "h100-80");
    uint64_t layers = UINT64_C(22011707392), emb = UINT64_C(268435456);
    ck_assert_uint_eq(full, layers + emb);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_ACTIVATIONS), layers / 2 + emb);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_IN_FLIGHT), 1);
    uint64_t m;
    mem4d_report_info(r, MEM4D_INFO_MICROBATCHES, &m);
    ck_assert_uint_eq(m, 1);
    mem4d_report_free(r);
    mem4d_layout_free(l);
}
END_TEST

static const char *const paper_refuses[] = {
    "vpp=2", "recompute=full", "flash_attn=false", "sp=false", "zero_stage=3", "fp8=true",
    "optimizer_state_bytes=2", "param_bytes=4", "hidden_dropout=1", "attention_dropout=1",
    "cross_entropy_fusion=1", "tp_comm_overlap=1", "optimizer_moments=1",
    "overlapped_dist_opt=1", "dist_opt_instances=2",
};

START_TEST(paper_refuses_what_it_does_not_model)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_device *d = tu_device("h100-80");
    mem4d_layout *l = tu_layout("mode=paper", "seq=8192", "tp=2", "pp=2", "dp=2", paper_refuses[_i], NULL);
    mem4d_report *r = NULL;
    mem4d_report_new(&r);
    ck_assert_int_eq(mem4d_estimate(m, l, d, r), MEM4D_E_UNSUPPORTED);
    ck_assert_int_eq(mem4d_report_status(r), MEM4D_E_UNSUPPORTED);
    ck_assert_msg(strncmp(mem4d_report_message(r), "paper mode does not model ", 26) == 0, "%s",
                  mem4d_report_message(r));
    ck_assert_uint_eq(mem4d_report_num_stages(r), 0);
    ck_assert_uint_eq(mem4d_report_peak_bytes(r), 0);
    uint64_t v;
    ck_assert_int_eq(mem4d_report_get(r, 0, MEM4D_TERM_TOTAL, &v), MEM4D_E_RANGE);
    mem4d_report_free(r);
    mem4d_layout_free(l);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

START_TEST(full_mode_stages)
{
    mem4d_layout *l = tu_layout("tp=8", "pp=4", "dp=2", "seq=8192", "gbs=64", NULL);
    mem4d_report *r = estimate_ok("llama3.1-70b", l, "h100-80");
    ck_assert_int_eq(mem4d_report_mode(r), MEM4D_MODE_FULL);
    ck_assert_uint_eq(mem4d_report_num_stages(r), 4);
    uint64_t peak = 0;
    for (uint32_t s = 0; s < 4; s++) {
        uint64_t parts = get(r, s, MEM4D_TERM_WEIGHTS) + get(r, s, MEM4D_TERM_GRADIENTS) +
                         get(r, s, MEM4D_TERM_OPTIMIZER) + get(r, s, MEM4D_TERM_ACTIVATIONS) +
                         get(r, s, MEM4D_TERM_OVERHEAD);
        ck_assert_uint_eq(get(r, s, MEM4D_TERM_TOTAL), parts);
        ck_assert_uint_eq(get(r, s, MEM4D_TERM_OVERHEAD), get(r, s, MEM4D_TERM_BUFFERS) +
                                                              get(r, s, MEM4D_TERM_FRAGMENTATION) +
                                                              get(r, s, MEM4D_TERM_FIXED));
        ck_assert_uint_eq(get(r, s, MEM4D_TERM_PEAK_RESERVED),
                          get(r, s, MEM4D_TERM_PEAK_ALLOCATED) + get(r, s, MEM4D_TERM_FRAGMENTATION));
        ck_assert_uint_eq(get(r, s, MEM4D_TERM_LAYERS), 20);
        if (get(r, s, MEM4D_TERM_TOTAL) > peak)
            peak = get(r, s, MEM4D_TERM_TOTAL);
    }
    ck_assert_uint_eq(mem4d_report_peak_bytes(r), peak);
    ck_assert_uint_eq(get(r, mem4d_report_peak_stage(r), MEM4D_TERM_TOTAL), peak);
    uint64_t v;
    ck_assert_int_eq(mem4d_report_get(r, 4, MEM4D_TERM_TOTAL, &v), MEM4D_E_RANGE);
    ck_assert_int_eq(mem4d_report_get(r, 0, (mem4d_term)99, &v), MEM4D_E_INVALID_ARG);
    mem4d_report_info(r, MEM4D_INFO_PADDED_VOCAB, &v);
    ck_assert_uint_eq(v, 129024); /* 128256 padded to a multiple of 128 x 8 */
    mem4d_report_free(r);
    mem4d_layout_free(l);
}
END_TEST

/* fits <= threshold < tight <= 100% < oom, at the exact byte. */
START_TEST(verdict_thresholds)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_device *d = tu_device("h100-80");
    mem4d_layout *l = paper_layout(2, 1, 1, 1, 4);
    mem4d_report *r = NULL;
    mem4d_report_new(&r);
    ck_assert_int_eq(mem4d_estimate(m, l, d, r), MEM4D_OK);
    uint64_t peak = mem4d_report_peak_bytes(r);
    static const struct {
        uint64_t mem, ppm;
        mem4d_verdict v;
    } cases[] = {
        {0, 1000000, MEM4D_VERDICT_FITS}, {1, 1000000, MEM4D_VERDICT_OOM}, {0, 999999, MEM4D_VERDICT_TIGHT},
    };
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_MEMORY_BYTES, peak - cases[i].mem), MEM4D_OK);
        ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_FIT_THRESHOLD_PPM, cases[i].ppm), MEM4D_OK);
        ck_assert_int_eq(mem4d_estimate(m, l, d, r), MEM4D_OK);
        ck_assert_int_eq(mem4d_report_verdict(r), cases[i].v);
        ck_assert_uint_eq(mem4d_report_device_bytes(r), peak - cases[i].mem);
    }
    /* 67.5 GiB on an 80 GiB card with the default 80% threshold: tight. */
    mem4d_device_set(d, MEM4D_DEVICE_MEMORY_BYTES, UINT64_C(80) << 30);
    mem4d_device_set(d, MEM4D_DEVICE_FIT_THRESHOLD_PPM, 800000);
    ck_assert_int_eq(mem4d_estimate(m, l, d, r), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_verdict(r), MEM4D_VERDICT_TIGHT);
    ck_assert_str_eq(mem4d_verdict_name(mem4d_report_verdict(r)), "tight");
    mem4d_report_free(r);
    mem4d_layout_free(l);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

START_TEST(deterministic_and_allocation_free)
{
    mem4d_model *m = tu_model("llama3.1-405b");
    mem4d_device *d = tu_device("h100-80");
    mem4d_layout *l = tu_layout("tp=8", "pp=7", "vpp=2", "cp=2", "dp=64", "seq=8192", "gbs=2048", NULL);
    mem4d_report *a = NULL, *b = NULL;
    mem4d_report_new(&a);
    mem4d_report_new(&b);
    ck_assert_int_eq(mem4d_estimate(m, l, d, a), MEM4D_OK);
    /* No ck_assert inside the measured span: Check's bookkeeping allocates. */
    unsigned long before = allocations;
    int failures = 0;
    for (int i = 0; i < 1000; i++)
        failures += mem4d_estimate(m, l, d, b) != MEM4D_OK;
    mem4d_layout_set(l, MEM4D_LAYOUT_MODE, MEM4D_MODE_PAPER);
    failures += mem4d_estimate(m, l, d, b) != MEM4D_E_UNSUPPORTED; /* refused (vpp) */
    mem4d_layout_set(l, MEM4D_LAYOUT_MODE, MEM4D_MODE_FULL);
    failures += mem4d_estimate(m, l, d, b) != MEM4D_OK;
    unsigned long after = allocations;
    ck_assert_int_eq(failures, 0);
    ck_assert_uint_eq(after, before);
    ck_assert_uint_eq(mem4d_report_num_stages(a), mem4d_report_num_stages(b));
    for (uint32_t s = 0; s < mem4d_report_num_stages(a); s++)
        for (int t = 0; t < (int)mem4d_term_count(); t++)
            ck_assert_uint_eq(get(a, s, (mem4d_term)t), get(b, s, (mem4d_term)t));
    mem4d_report_free(a);
    mem4d_report_free(b);
    mem4d_layout_free(l);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

/* The largest values every key accepts: a status, never a wrapped number. */
START_TEST(overflow_is_range)
{
    mem4d_model *m = NULL;
    mem4d_model_new(&m);
    uint64_t hi;
    static const mem4d_model_param keys[] = {MEM4D_MODEL_HIDDEN_SIZE, MEM4D_MODEL_FFN_HIDDEN_SIZE,
                                             MEM4D_MODEL_NUM_LAYERS, MEM4D_MODEL_NUM_HEADS,
                                             MEM4D_MODEL_VOCAB_SIZE};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        mem4d_model_param_bounds(keys[i], NULL, &hi);
        ck_assert_int_eq(mem4d_model_set(m, keys[i], hi), MEM4D_OK);
    }
    mem4d_model_set(m, MEM4D_MODEL_NUM_HEADS, 1024);
    mem4d_device *d = tu_device("h100-80");
    mem4d_layout *l = tu_layout("dp=1", "seq=16777216", "mbs=65536", NULL);
    mem4d_report *r = NULL;
    mem4d_report_new(&r);
    for (int mode = 0; mode < 2; mode++) {
        mem4d_layout_set(l, MEM4D_LAYOUT_MODE, (uint64_t)mode);
        ck_assert_int_eq(mem4d_estimate(m, l, d, r), MEM4D_E_RANGE);
        ck_assert_str_ne(mem4d_report_message(r), "");
        ck_assert_uint_eq(mem4d_report_peak_bytes(r), 0);
    }
    uint64_t n;
    ck_assert_int_eq(mem4d_model_num_params(m, &n), MEM4D_OK); /* the count itself still fits */
    mem4d_report_free(r);
    mem4d_layout_free(l);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

START_TEST(bad_arguments)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_device *d = NULL;
    mem4d_device_new(&d);
    mem4d_layout *l = tu_layout("dp=1", "seq=4096", NULL);
    mem4d_report *r = NULL;
    mem4d_report_new(&r);
    ck_assert_int_eq(mem4d_report_status(r), MEM4D_E_MISSING);
    ck_assert_int_eq(mem4d_estimate(m, l, d, r), MEM4D_E_MISSING);
    ck_assert_str_eq(mem4d_report_message(r), "device memory (memory_bytes) is not set");
    ck_assert_int_eq(mem4d_estimate(NULL, l, d, r), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_estimate(m, NULL, d, r), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_estimate(m, l, NULL, r), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_estimate(m, l, d, NULL), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_report_verdict(r), MEM4D_VERDICT_OOM);
    double x;
    ck_assert_int_eq(mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &x), MEM4D_E_UNSUPPORTED);
    ck_assert_str_eq(mem4d_strerror(MEM4D_E_KV_HEADS_TP), "key/value heads not divisible by tensor-parallel size");
    ck_assert_str_eq(mem4d_strerror((mem4d_status)1000), "unknown status");
    /* MEM4D_E_EXPERTS is also ep, etp or a dispatcher set on a model without
     * experts: "mem4d: ep 2 needs a mixture-of-experts model (experts not
     * divisible by expert-parallel size)" named a division there is none of. */
    ck_assert_str_eq(mem4d_strerror(MEM4D_E_EXPERTS),
                     "expert parallelism does not fit the model's experts or the layout");
    ck_assert_str_eq(mem4d_term_name(MEM4D_TERM_WEIGHTS), "weights_bytes");
    ck_assert_ptr_null(mem4d_term_name((mem4d_term)100));
    ck_assert_str_eq(mem4d_mode_name(MEM4D_MODE_PAPER), "paper");
    ck_assert_str_eq(mem4d_version(), "0.2.0");
    mem4d_report_free(r);
    mem4d_report_free(NULL);
    mem4d_layout_free(l);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("estimate");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, paper_golden, 0, (int)(sizeof golden / sizeof golden[0]));
    tcase_add_test(tc, paper_bytes_per_param);
    tcase_add_test(tc, paper_few_microbatches);
    tcase_add_loop_test(tc, paper_refuses_what_it_does_not_model, 0,
                        (int)(sizeof paper_refuses / sizeof paper_refuses[0]));
    tcase_add_test(tc, full_mode_stages);
    tcase_add_test(tc, verdict_thresholds);
    tcase_add_test(tc, deterministic_and_allocation_free);
    tcase_add_test(tc, overflow_is_range);
    tcase_add_test(tc, bad_arguments);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
