/*
 * Extreme inputs: every key at its bounds and one past them, products that
 * would overflow 64 bits, world sizes up to 2^24. Each gives a status and,
 * when OK, a report whose numbers add up (no wrapped value anywhere). Under
 * the sanitizer build (scripts/ci.d/40-sanitizers.sh) this also proves the
 * absence of undefined behaviour on these paths.
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mem4d/mem4d.h>

/* The report invariants live with the fuzzers so both check the same thing;
 * a broken invariant aborts, which Check reports as a failed test. */
#include "../fuzz/fuzz-common.h"

/* The three kinds of handle behind one interface, so each bounds test is
 * written once. */
struct kind {
    const char *name;
    size_t (*count)(void);
    mem4d_status (*bounds)(int key, uint64_t *lo, uint64_t *hi);
    mem4d_status (*set)(void *h, int key, uint64_t v);
    mem4d_status (*get)(const void *h, int key, uint64_t *v);
    mem4d_status (*set_str)(void *h, const char *name, const char *v);
    const char *(*key_name)(int key);
};

#define ADAPT(k)                                                                                  \
    static mem4d_status k##_bounds(int key, uint64_t *lo, uint64_t *hi)                          \
    {                                                                                             \
        return mem4d_##k##_param_bounds((mem4d_##k##_param)key, lo, hi);                          \
    }                                                                                             \
    static mem4d_status k##_set(void *h, int key, uint64_t v)                                    \
    {                                                                                             \
        return mem4d_##k##_set(h, (mem4d_##k##_param)key, v);                                     \
    }                                                                                             \
    static mem4d_status k##_get(const void *h, int key, uint64_t *v)                             \
    {                                                                                             \
        return mem4d_##k##_get(h, (mem4d_##k##_param)key, v);                                     \
    }                                                                                             \
    static mem4d_status k##_set_str(void *h, const char *n, const char *v)                       \
    {                                                                                             \
        return mem4d_##k##_set_str(h, n, v);                                                      \
    }                                                                                             \
    static const char *k##_key_name(int key) { return mem4d_##k##_param_name((mem4d_##k##_param)key); }

ADAPT(model)
ADAPT(layout)
ADAPT(device)

static const struct kind kinds[3] = {
    {"model", mem4d_model_param_count, model_bounds, model_set, model_get, model_set_str, model_key_name},
    {"layout", mem4d_layout_param_count, layout_bounds, layout_set, layout_get, layout_set_str, layout_key_name},
    {"device", mem4d_device_param_count, device_bounds, device_set, device_get, device_set_str, device_key_name},
};

/* A small, valid job: Llama-3.1-8B, tp 2 on 8 H100s. */
struct job {
    mem4d_model *m;
    mem4d_layout *l;
    mem4d_device *d;
    mem4d_report *r;
};

static void job_open(struct job *j)
{
    ck_assert_int_eq(mem4d_model_new_preset("llama3.1-8b", &j->m), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_new_preset("h100-80", &j->d), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_new(&j->l), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_new(&j->r), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(j->l, MEM4D_LAYOUT_TP, 2), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(j->l, MEM4D_LAYOUT_WORLD, 8), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(j->l, MEM4D_LAYOUT_SEQ_LENGTH, 4096), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(j->l, MEM4D_LAYOUT_GLOBAL_BATCH, 64), MEM4D_OK);
}

static void job_close(struct job *j)
{
    mem4d_report_free(j->r);
    mem4d_layout_free(j->l);
    mem4d_device_free(j->d);
    mem4d_model_free(j->m);
}

static void *job_handle(struct job *j, int kind)
{
    return kind == 0 ? (void *)j->m : kind == 1 ? (void *)j->l : (void *)j->d;
}

/* The statuses an estimate may give for a described-but-odd job: anything
 * that names a cause. Never INVALID_ARG (every handle is real), never a
 * parser's or importer's status. */
static bool estimate_status_ok(mem4d_status st)
{
    switch (st) {
    case MEM4D_OK: case MEM4D_E_RANGE: case MEM4D_E_MODEL: case MEM4D_E_HEADS_TP:
    case MEM4D_E_KV_HEADS_TP: case MEM4D_E_LAYERS_PP: case MEM4D_E_WORLD: case MEM4D_E_SEQ:
    case MEM4D_E_BATCH: case MEM4D_E_UNSUPPORTED: case MEM4D_E_MISSING: case MEM4D_E_CONFLICT:
    case MEM4D_E_DIM_TP: case MEM4D_E_EXPERTS:
        return true;
    default:
        return false;
    }
}

/* Estimate and hold the result to its contract. Returns the status. */
static mem4d_status estimate_checked(struct job *j, const char *what)
{
    mem4d_status st = mem4d_estimate(j->m, j->l, j->d, j->r);
    ck_assert_msg(estimate_status_ok(st), "%s: estimate gave %d (%s)", what, (int)st, mem4d_strerror(st));
    ck_assert_int_eq(mem4d_report_status(j->r), st);
    if (st == MEM4D_OK)
        fuzz_check_report(j->r);
    else
        ck_assert_msg(mem4d_report_message(j->r)[0] != '\0', "%s: status %d without a message", what, (int)st);
    return st;
}

static void set_ok(void *h, const struct kind *k, int key, uint64_t v)
{
    ck_assert_msg(k->set(h, key, v) == MEM4D_OK, "%s %s = %" PRIu64 " refused", k->name, k->key_name(key), v);
    uint64_t got = 0;
    ck_assert_int_eq(k->get(h, key, &got), MEM4D_OK);
    ck_assert_uint_eq(got, v);
}

/* A refused value leaves the stored one as it was. */
static void set_refused(void *h, const struct kind *k, int key, uint64_t v)
{
    uint64_t before = 0, after = 0;
    ck_assert_int_eq(k->get(h, key, &before), MEM4D_OK);
    mem4d_status st = k->set(h, key, v);
    ck_assert_msg(st == MEM4D_E_RANGE, "%s %s = %" PRIu64 ": %d, want E_RANGE", k->name, k->key_name(key), v, (int)st);
    ck_assert_int_eq(k->get(h, key, &after), MEM4D_OK);
    ck_assert_uint_eq(after, before);
}

static void set_str_expect(void *h, const struct kind *k, int key, const char *text, mem4d_status want)
{
    mem4d_status st = k->set_str(h, k->key_name(key), text);
    ck_assert_msg(st == want, "%s %s = \"%s\": %d, want %d", k->name, k->key_name(key), text, (int)st, (int)want);
}

/* Every key of every kind: min and max accepted (by number and by text),
 * one past either refused with E_RANGE and the value unchanged. */
START_TEST(test_bounds_every_key)
{
    const struct kind *k = &kinds[_i];
    struct job j;
    job_open(&j);
    void *h = job_handle(&j, _i);
    size_t n = k->count();
    ck_assert_uint_gt(n, 0);
    for (int key = 0; key < (int)n; key++) {
        uint64_t lo = 1, hi = 0;
        ck_assert_int_eq(k->bounds(key, &lo, &hi), MEM4D_OK);
        ck_assert_msg(lo <= hi, "%s %s: bounds [%" PRIu64 ", %" PRIu64 "]", k->name, k->key_name(key), lo, hi);
        ck_assert_ptr_nonnull(k->key_name(key));
        char text[32];
        set_ok(h, k, key, lo);
        set_ok(h, k, key, hi);
        if (hi < UINT64_MAX) {
            set_refused(h, k, key, hi + 1);
            set_refused(h, k, key, UINT64_MAX);
            snprintf(text, sizeof text, "%" PRIu64, hi + 1);
            set_str_expect(h, k, key, text, MEM4D_E_RANGE);
            set_str_expect(h, k, key, "0xffffffffffffffff", MEM4D_E_RANGE);
        }
        if (lo > 0)
            set_refused(h, k, key, lo - 1);
        /* 2^64 does not fit the parser: a range error, not a wrapped 0. */
        set_str_expect(h, k, key, "18446744073709551616", MEM4D_E_RANGE);
        set_str_expect(h, k, key, "99999999999999999999999999", MEM4D_E_RANGE);
        set_str_expect(h, k, key, "-1", MEM4D_E_PARSE);
        set_str_expect(h, k, key, "", MEM4D_E_PARSE);
        set_str_expect(h, k, key, "1 ", MEM4D_E_PARSE);
        snprintf(text, sizeof text, "%" PRIu64, hi);
        set_str_expect(h, k, key, text, MEM4D_OK);
        snprintf(text, sizeof text, "%" PRIu64, lo);
        set_str_expect(h, k, key, text, MEM4D_OK);
    }
    /* The first key past the table is unknown to this version. */
    uint64_t v;
    ck_assert_int_eq(k->bounds((int)n, &v, &v), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(k->set(h, (int)n, 1), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(k->get(h, (int)n, &v), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(k->set(h, -1, 1), MEM4D_E_INVALID_ARG);
    ck_assert_ptr_null(k->key_name((int)n));
    job_close(&j);
}
END_TEST

/* Each key alone at its lowest and at its highest value, the rest of the job
 * ordinary: the estimate gives a status and consistent numbers. */
START_TEST(test_estimate_each_key_at_bounds)
{
    const struct kind *k = &kinds[_i];
    size_t n = k->count();
    int ok = 0, failed = 0;
    for (int key = 0; key < (int)n; key++) {
        uint64_t b[2];
        ck_assert_int_eq(k->bounds(key, &b[0], &b[1]), MEM4D_OK);
        for (int side = 0; side < 2; side++) {
            struct job j;
            job_open(&j);
            set_ok(job_handle(&j, _i), k, key, b[side]);
            char what[96];
            snprintf(what, sizeof what, "%s %s = %" PRIu64, k->name, k->key_name(key), b[side]);
            if (estimate_checked(&j, what) == MEM4D_OK)
                ok++;
            else
                failed++;
            job_close(&j);
        }
    }
    /* Not vacuous: some bounds are harmless, and some model and layout
     * bounds must be refused (a device at any bound is still a device). */
    ck_assert_int_gt(ok, 0);
    if (_i < 2)
        ck_assert_int_gt(failed, 0);
}
END_TEST

/* A model whose every size is at its maximum is described legally but its
 * activations do not fit 64 bits: s b h = 2^24 2^16 2^20 = 2^60 elements
 * per layer term, times a dozen bytes. */
START_TEST(test_overflowing_products)
{
    struct job j;
    job_open(&j);
    mem4d_model_free(j.m);
    ck_assert_int_eq(mem4d_model_new(&j.m), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(j.m, MEM4D_MODEL_HIDDEN_SIZE, UINT64_C(1) << 20), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(j.m, MEM4D_MODEL_FFN_HIDDEN_SIZE, UINT64_C(1) << 22), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(j.m, MEM4D_MODEL_NUM_LAYERS, 4096), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(j.m, MEM4D_MODEL_NUM_HEADS, UINT64_C(1) << 14), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(j.m, MEM4D_MODEL_NUM_KV_HEADS, UINT64_C(1) << 14), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(j.m, MEM4D_MODEL_VOCAB_SIZE, UINT64_C(1) << 24), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_validate(j.m, NULL, 0), MEM4D_OK);

    /* P_layer = 2h^2(1 + k/a) + 3hf + 2h = 2^42 + 3 2^42 + 2^21 = 2^44 + 2^21;
     * total = L P_layer + h + 2 V h (untied) = 2^56 + 2^33 + 2^20 + 2^45. */
    uint64_t params = 0;
    ck_assert_int_eq(mem4d_model_num_params(j.m, &params), MEM4D_OK);
    ck_assert_uint_eq(params, (UINT64_C(1) << 56) + (UINT64_C(1) << 45) + (UINT64_C(1) << 33) + (UINT64_C(1) << 20));

    ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_TP, 1), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_WORLD, 1), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_GLOBAL_BATCH, 0), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_SEQ_LENGTH, UINT64_C(1) << 24), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_MICRO_BATCH, UINT64_C(1) << 16), MEM4D_OK);
    ck_assert_int_eq(mem4d_validate(j.m, j.l, NULL, 0), MEM4D_OK);
    for (uint64_t mode = 0; mode <= 1; mode++) {
        ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_MODE, mode), MEM4D_OK);
        ck_assert_int_eq(estimate_checked(&j, "all sizes at max"), MEM4D_E_RANGE);
        ck_assert_uint_eq(mem4d_report_peak_bytes(j.r), 0);
        ck_assert_uint_eq(mem4d_report_num_stages(j.r), 0);
    }

    /* The logits alone: s b V = 2^24 2^16 2^24 = 2^64 elements. */
    ck_assert_int_eq(mem4d_model_set(j.m, MEM4D_MODEL_HIDDEN_SIZE, 64), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(j.m, MEM4D_MODEL_NUM_HEADS, 1), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(j.m, MEM4D_MODEL_NUM_KV_HEADS, 1), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(j.m, MEM4D_MODEL_FFN_HIDDEN_SIZE, 64), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(j.m, MEM4D_MODEL_NUM_LAYERS, 1), MEM4D_OK);
    for (uint64_t mode = 0; mode <= 1; mode++) {
        ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_MODE, mode), MEM4D_OK);
        ck_assert_int_eq(estimate_checked(&j, "logits 2^64"), MEM4D_E_RANGE);
    }
    job_close(&j);
}
END_TEST

/* The largest world the bounds allow, split several ways. */
START_TEST(test_world_2_24)
{
    static const struct { uint64_t tp, cp, pp, mbs, gbs; } splits[] = {
        {8, 1, 1, 1, 0},
        {8, 1, 1, 1, UINT64_C(1) << 32},    /* m = 2^32 / 2^21 = 2048 */
        {8, 16, 16, 1, UINT64_C(1) << 32},  /* dp 2^13, m 2^19 */
        {1, 1, 32, 4, UINT64_C(1) << 24},   /* dp 2^19, gbs / (b dp) = 8 */
        {8, 8, 32, 1, UINT64_C(1) << 16},   /* dp 2^13: gbs divisible */
    };
    const uint64_t world = UINT64_C(1) << 24;
    for (size_t i = 0; i < sizeof splits / sizeof splits[0]; i++) {
        struct job j;
        job_open(&j);
        ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_TP, splits[i].tp), MEM4D_OK);
        ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_CP, splits[i].cp), MEM4D_OK);
        ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_PP, splits[i].pp), MEM4D_OK);
        ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_MICRO_BATCH, splits[i].mbs), MEM4D_OK);
        ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_GLOBAL_BATCH, splits[i].gbs), MEM4D_OK);
        ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_WORLD, world), MEM4D_OK);
        char what[64];
        snprintf(what, sizeof what, "world 2^24 split %zu", i);
        ck_assert_int_eq(estimate_checked(&j, what), MEM4D_OK);
        uint64_t dp = 0, w = 0, m = 0;
        ck_assert_int_eq(mem4d_report_info(j.r, MEM4D_INFO_DP, &dp), MEM4D_OK);
        ck_assert_int_eq(mem4d_report_info(j.r, MEM4D_INFO_WORLD, &w), MEM4D_OK);
        ck_assert_int_eq(mem4d_report_info(j.r, MEM4D_INFO_MICROBATCHES, &m), MEM4D_OK);
        uint64_t mp = splits[i].tp * splits[i].cp * splits[i].pp;
        ck_assert_uint_eq(w, world);
        ck_assert_uint_eq(dp, world / mp);
        ck_assert_uint_eq(m, splits[i].gbs / (splits[i].mbs * dp));
        ck_assert_uint_eq(mem4d_report_num_stages(j.r), splits[i].pp);
        job_close(&j);
    }

    struct job j;
    job_open(&j);
    /* One past the bound is refused; dp at its bound with tp 8 derives a
     * world past 2^24: a status, and if accepted, no wrapped world. */
    ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_WORLD, world + 1), MEM4D_E_RANGE);
    ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_WORLD, 0), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_DP, world), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_GLOBAL_BATCH, 0), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_TP, 8), MEM4D_OK);
    if (estimate_checked(&j, "dp 2^24 x tp 8") == MEM4D_OK) {
        uint64_t w = 0;
        ck_assert_int_eq(mem4d_report_info(j.r, MEM4D_INFO_WORLD, &w), MEM4D_OK);
        ck_assert_uint_eq(w, world * 8);
    }
    /* world 2^24 with a dp that does not multiply out. */
    ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_WORLD, world), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_DP, world - 1), MEM4D_OK);
    ck_assert_int_eq(estimate_checked(&j, "dp 2^24-1"), MEM4D_E_WORLD);
    job_close(&j);
}
END_TEST

/* Every parallel size at its maximum at once: tp 4096, cp 4096, pp 512 and
 * dp 2^24 make a world of 2^57 GPUs on a model big enough to split that way. */
START_TEST(test_every_parallel_size_at_max)
{
    struct job j;
    job_open(&j);
    ck_assert_int_eq(mem4d_model_set(j.m, MEM4D_MODEL_HIDDEN_SIZE, UINT64_C(1) << 20), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(j.m, MEM4D_MODEL_FFN_HIDDEN_SIZE, UINT64_C(1) << 22), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(j.m, MEM4D_MODEL_NUM_HEADS, 4096), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(j.m, MEM4D_MODEL_NUM_KV_HEADS, 4096), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(j.m, MEM4D_MODEL_NUM_LAYERS, 4096), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(j.m, MEM4D_MODEL_VOCAB_SIZE, UINT64_C(1) << 24), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(j.m, MEM4D_MODEL_MAX_POSITION, 0), MEM4D_OK);
    static const mem4d_layout_param keys[] = {MEM4D_LAYOUT_TP, MEM4D_LAYOUT_CP, MEM4D_LAYOUT_PP, MEM4D_LAYOUT_DP};
    for (size_t i = 0; i < 4; i++) {
        uint64_t hi = 0;
        ck_assert_int_eq(mem4d_layout_param_bounds(keys[i], NULL, &hi), MEM4D_OK);
        ck_assert_int_eq(mem4d_layout_set(j.l, keys[i], hi), MEM4D_OK);
    }
    ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_WORLD, 0), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_GLOBAL_BATCH, 0), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_SEQ_LENGTH, UINT64_C(1) << 24), MEM4D_OK);
    for (uint64_t mode = 0; mode <= 1; mode++) {
        ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_MODE, mode), MEM4D_OK);
        (void)estimate_checked(&j, "every parallel size at max");
    }
    job_close(&j);
}
END_TEST

/* A deterministic walk through random corners: each step sets a few keys of
 * any kind to their min, max or a random value in between, then estimates.
 * Cheap, reproducible fuzzing that runs in every test command. */
static uint64_t next_rand(uint64_t *state)
{
    /* splitmix64: a fixed seed gives the same walk on every machine */
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

START_TEST(test_random_corners)
{
    uint64_t seed = UINT64_C(20241110);
    int ok = 0;
    for (int step = 0; step < 3000; step++) {
        struct job j;
        job_open(&j);
        int nset = 1 + (int)(next_rand(&seed) % 4);
        for (int s = 0; s < nset; s++) {
            int kind = (int)(next_rand(&seed) % 3);
            const struct kind *k = &kinds[kind];
            int key = (int)(next_rand(&seed) % k->count());
            uint64_t lo, hi, v;
            ck_assert_int_eq(k->bounds(key, &lo, &hi), MEM4D_OK);
            switch (next_rand(&seed) % 4) {
            case 0: v = lo; break;
            case 1: v = hi; break;
            case 2: v = lo + next_rand(&seed) % (hi - lo + (hi - lo < UINT64_MAX)); break;
            default: v = lo + next_rand(&seed) % 9; break;
            }
            mem4d_status st = k->set(job_handle(&j, kind), key, v);
            /* Values between the bounds may still be refused (a set of sizes). */
            ck_assert(st == MEM4D_OK || st == MEM4D_E_RANGE);
        }
        char what[32];
        snprintf(what, sizeof what, "random step %d", step);
        ok += estimate_checked(&j, what) == MEM4D_OK;
        job_close(&j);
    }
    ck_assert_int_gt(ok, 100);
}
END_TEST

/* Regression (found by fuzz_cli, input fuzz/corpus/cli/regress-plan-no-candidates:
 * `mem4d plan --cp 3`): a ranked search with no valid layout at all must end
 * cleanly. It used to hand qsort() a NULL array, which UBSan reports. */
START_TEST(test_search_with_nothing_valid)
{
    struct job j;
    job_open(&j);
    mem4d_search *s = NULL;
    ck_assert_int_eq(mem4d_search_new(j.m, j.d, j.l, &s), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_bound(s, MEM4D_LAYOUT_CP, 3, 3), MEM4D_OK); /* 3 does not divide 8 */
    for (uint64_t ranked = 0; ranked <= 1; ranked++) {
        ck_assert_int_eq(mem4d_search_reset(s), MEM4D_OK);
        ck_assert_int_eq(mem4d_search_set_option(s, MEM4D_SEARCH_RANKED, ranked), MEM4D_OK);
        ck_assert_int_eq(mem4d_search_next(s, j.l, j.r), MEM4D_END);
        ck_assert_int_eq(mem4d_search_next(s, j.l, j.r), MEM4D_END);
        uint64_t yielded = 1;
        ck_assert_int_eq(mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_YIELDED, &yielded), MEM4D_OK);
        ck_assert_uint_eq(yielded, 0);
    }
    mem4d_search_free(s);
    job_close(&j);
}
END_TEST

/* A search over the largest world the bounds allow, streamed and stopped
 * early: a status, and every yielded layout's report holds together. */
START_TEST(test_search_world_2_24)
{
    struct job j;
    job_open(&j);
    ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_WORLD, UINT64_C(1) << 24), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(j.l, MEM4D_LAYOUT_GLOBAL_BATCH, UINT64_C(1) << 24), MEM4D_OK);
    mem4d_search *s = NULL;
    ck_assert_int_eq(mem4d_search_new(j.m, j.d, j.l, &s), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_set_option(s, MEM4D_SEARCH_RANKED, 0), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_set_option(s, MEM4D_SEARCH_MAX_RESULTS, 16), MEM4D_OK);
    mem4d_status st;
    int n = 0;
    while ((st = mem4d_search_next(s, j.l, j.r)) == MEM4D_OK) {
        fuzz_check_report(j.r);
        uint64_t w = 0;
        ck_assert_int_eq(mem4d_layout_get(j.l, MEM4D_LAYOUT_WORLD, &w), MEM4D_OK);
        ck_assert_uint_eq(w, UINT64_C(1) << 24);
        n++;
    }
    ck_assert_int_eq(st, MEM4D_END);
    ck_assert_int_eq(n, 16);
    mem4d_search_free(s);
    job_close(&j);
}
END_TEST

static Suite *extremes_suite(void)
{
    Suite *s = suite_create("extremes");
    TCase *tc = tcase_create("bounds");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_bounds_every_key, 0, 3);
    tcase_add_loop_test(tc, test_estimate_each_key_at_bounds, 0, 3);
    suite_add_tcase(s, tc);
    tc = tcase_create("overflow");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_overflowing_products);
    tcase_add_test(tc, test_world_2_24);
    tcase_add_test(tc, test_every_parallel_size_at_max);
    tcase_add_test(tc, test_random_corners);
    tcase_add_test(tc, test_search_with_nothing_valid);
    tcase_add_test(tc, test_search_world_2_24);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(extremes_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
