/*
 * The library describes itself: status names, version number, parameter
 * kinds and defaults, value names, names and counts of terms, infos, metrics,
 * search options and counters, and the keys a search varies. Exact values by
 * enum name; every table walked end to end (no NULL row, nothing past the
 * count), and each description checked against the behaviour it describes.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Where each key applies and which values are experimental are part of
 * its row: a default applies under every framework and mode, and the rows
 * answer as the estimate does. */
START_TEST(key_applicability)
{
    char why[256];
    for (int k = 0; k < (int)mem4d_layout_param_count(); k++) {
        uint64_t def = 0;
        ck_assert_int_eq(mem4d_layout_param_default((mem4d_layout_param)k, &def), MEM4D_OK);
        for (int f = MEM4D_FRAMEWORK_MEGATRON; f <= MEM4D_FRAMEWORK_NANOTRON; f++)
            for (int mode = MEM4D_MODE_FULL; mode <= MEM4D_MODE_PAPER; mode++)
                ck_assert_msg(mem4d_layout_param_applies((mem4d_layout_param)k, def, (mem4d_framework)f,
                                                         (mem4d_mode)mode, why, sizeof why) == MEM4D_OK,
                              "%s's default: %s", mem4d_layout_param_name((mem4d_layout_param)k), why);
    }
    for (int k = 0; k < (int)mem4d_model_param_count(); k++) {
        uint64_t def = 0;
        ck_assert_int_eq(mem4d_model_param_default((mem4d_model_param)k, &def), MEM4D_OK);
        ck_assert_int_eq(mem4d_model_param_applies((mem4d_model_param)k, def, MEM4D_MODE_PAPER, why, sizeof why),
                         MEM4D_OK);
    }
    ck_assert_int_eq(mem4d_layout_param_applies(MEM4D_LAYOUT_RECOMPUTE, 3, MEM4D_FRAMEWORK_MEGATRON, MEM4D_MODE_FULL,
                                                why, sizeof why), MEM4D_E_CONFLICT);
    ck_assert_str_eq(why, "recompute op is modelled for framework torchtitan only, not megatron");
    ck_assert_int_eq(mem4d_layout_param_applies(MEM4D_LAYOUT_RECOMPUTE, 2, MEM4D_FRAMEWORK_MEGATRON, MEM4D_MODE_PAPER,
                                                why, sizeof why), MEM4D_E_UNSUPPORTED);
    ck_assert_str_eq(why, "paper mode does not model recompute full; use full mode");
    ck_assert_int_eq(mem4d_layout_param_applies(MEM4D_LAYOUT_RECOMPUTE, 1, MEM4D_FRAMEWORK_NANOTRON, MEM4D_MODE_FULL,
                                                NULL, 0), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_param_applies(MEM4D_MODEL_NUM_EXPERTS, 8, MEM4D_MODE_PAPER, NULL, 0),
                     MEM4D_E_UNSUPPORTED);
    ck_assert_int_eq(mem4d_model_param_applies(MEM4D_MODEL_NUM_EXPERTS, 8, MEM4D_MODE_FULL, NULL, 0), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_param_applies((mem4d_layout_param)-1, 0, MEM4D_FRAMEWORK_MEGATRON, MEM4D_MODE_FULL,
                                                NULL, 0), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_layout_param_experimental(MEM4D_LAYOUT_ALLGATHER_GROUPS, 1), 1);
    ck_assert_int_eq(mem4d_layout_param_experimental(MEM4D_LAYOUT_MOE_DISPATCHER, MEM4D_MOE_DISPATCHER_HYBRIDEP), 1);
    ck_assert_int_eq(mem4d_layout_param_experimental(MEM4D_LAYOUT_MOE_DISPATCHER, MEM4D_MOE_DISPATCHER_ALLTOALL), 0);
    ck_assert_int_eq(mem4d_layout_param_experimental(MEM4D_LAYOUT_TP, 8), 0);
    ck_assert_int_eq(mem4d_layout_param_experimental((mem4d_layout_param)-1, 0), 0);
}
END_TEST

/* Every function that takes a `why` buffer writes a NUL-terminated sentence
 * there whatever it returns (mem4d.h, "Conventions"): the reason for every
 * failure, MEM4D_E_INVALID_ARG included, and "" on success, so a caller
 * reusing a buffer never reads an earlier call's reason. Each call below
 * starts from a buffer of 'x' without a NUL. */
static char why_buf[128];

static void why_is(mem4d_status got, mem4d_status want, const char *call)
{
    ck_assert_msg(got == want, "%s: status %d, not %d", call, (int)got, (int)want);
    ck_assert_msg(memchr(why_buf, '\0', sizeof why_buf) != NULL, "%s left why without a NUL", call);
    if (want == MEM4D_OK)
        ck_assert_msg(why_buf[0] == '\0', "%s succeeded with why \"%s\"", call, why_buf);
    else
        ck_assert_msg(why_buf[0] != '\0' && why_buf[0] != 'x', "%s failed with why \"%s\"", call, why_buf);
}

#define WHY(want, call)                                                                                                \
    do {                                                                                                               \
        memset(why_buf, 'x', sizeof why_buf);                                                                          \
        why_is((call), (want), #call);                                                                                 \
    } while (0)

START_TEST(why_is_always_written)
{
    char *const why = why_buf;
    const size_t n = sizeof why_buf;
    mem4d_model *m = tu_model("llama3.1-8b"), *blank = NULL;
    ck_assert_int_eq(mem4d_model_new(&blank), MEM4D_OK);
    mem4d_layout *ok = tu_layout("tp=2", "dp=4", "seq=4096", NULL), *bad = tu_layout("tp=3", "dp=1", "seq=4096", NULL);
    mem4d_device *d = tu_device("h100-80");

    WHY(MEM4D_OK, mem4d_model_validate(m, why, n));
    WHY(MEM4D_E_MISSING, mem4d_model_validate(blank, why, n));
    WHY(MEM4D_E_INVALID_ARG, mem4d_model_validate(NULL, why, n));

    WHY(MEM4D_OK, mem4d_validate(m, ok, why, n));
    WHY(MEM4D_E_HEADS_TP, mem4d_validate(m, bad, why, n));
    WHY(MEM4D_E_INVALID_ARG, mem4d_validate(NULL, ok, why, n));
    WHY(MEM4D_E_INVALID_ARG, mem4d_validate(m, NULL, why, n));

    WHY(MEM4D_OK, mem4d_layout_param_applies(MEM4D_LAYOUT_RECOMPUTE, 1, MEM4D_FRAMEWORK_NANOTRON, MEM4D_MODE_FULL,
                                             why, n));
    WHY(MEM4D_E_CONFLICT, mem4d_layout_param_applies(MEM4D_LAYOUT_RECOMPUTE, 3, MEM4D_FRAMEWORK_MEGATRON,
                                                     MEM4D_MODE_FULL, why, n));
    WHY(MEM4D_E_UNSUPPORTED, mem4d_layout_param_applies(MEM4D_LAYOUT_RECOMPUTE, 2, MEM4D_FRAMEWORK_MEGATRON,
                                                        MEM4D_MODE_PAPER, why, n));
    WHY(MEM4D_E_INVALID_ARG, mem4d_layout_param_applies((mem4d_layout_param)-1, 0, MEM4D_FRAMEWORK_MEGATRON,
                                                        MEM4D_MODE_FULL, why, n));
    WHY(MEM4D_E_INVALID_ARG, mem4d_layout_param_applies(MEM4D_LAYOUT_TP, 1, (mem4d_framework)99, MEM4D_MODE_FULL,
                                                        why, n));
    WHY(MEM4D_E_INVALID_ARG, mem4d_layout_param_applies(MEM4D_LAYOUT_TP, 1, MEM4D_FRAMEWORK_MEGATRON, (mem4d_mode)9,
                                                        why, n));

    WHY(MEM4D_OK, mem4d_model_param_applies(MEM4D_MODEL_NUM_EXPERTS, 8, MEM4D_MODE_FULL, why, n));
    WHY(MEM4D_E_UNSUPPORTED, mem4d_model_param_applies(MEM4D_MODEL_NUM_EXPERTS, 8, MEM4D_MODE_PAPER, why, n));
    WHY(MEM4D_E_INVALID_ARG, mem4d_model_param_applies((mem4d_model_param)-1, 0, MEM4D_MODE_FULL, why, n));
    WHY(MEM4D_E_INVALID_ARG, mem4d_model_param_applies(MEM4D_MODEL_NUM_EXPERTS, 8, (mem4d_mode)9, why, n));

    WHY(MEM4D_OK, mem4d_device_parse(d, "nics_per_node = 2\n", 18, why, n));
    WHY(MEM4D_E_PARSE, mem4d_device_parse(d, "nics_per_node\n", 14, why, n));
    WHY(MEM4D_E_INVALID_ARG, mem4d_device_parse(NULL, "", 0, why, n));
    WHY(MEM4D_E_INVALID_ARG, mem4d_device_parse(d, NULL, 4, why, n));

    char path[] = "/tmp/mem4d-why-XXXXXX";
    tu_temp_file(path, "nics_per_node = 4\n");
    WHY(MEM4D_OK, mem4d_device_load(d, path, why, n));
    remove(path);
    WHY(MEM4D_E_IO, mem4d_device_load(d, path, why, n));
    WHY(MEM4D_E_INVALID_ARG, mem4d_device_load(NULL, path, why, n));
    WHY(MEM4D_E_INVALID_ARG, mem4d_device_load(d, NULL, why, n));

    /* a one-byte buffer holds the NUL alone, and NULL with size 0 is no buffer */
    why_buf[0] = 'x';
    ck_assert_int_eq(mem4d_model_validate(NULL, why, 1), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(why_buf[0], '\0');
    ck_assert_int_eq(mem4d_validate(NULL, NULL, NULL, 0), MEM4D_E_INVALID_ARG);

    mem4d_device_free(d);
    mem4d_layout_free(bad);
    mem4d_layout_free(ok);
    mem4d_model_free(blank);
    mem4d_model_free(m);
}
END_TEST

START_TEST(status_names)
{
    static const struct {
        mem4d_status status;
        const char *name;
    } expect[] = {
        {MEM4D_OK, "MEM4D_OK"}, {MEM4D_END, "MEM4D_END"}, {MEM4D_E_INVALID_ARG, "MEM4D_E_INVALID_ARG"},
        {MEM4D_E_NOMEM, "MEM4D_E_NOMEM"}, {MEM4D_E_RANGE, "MEM4D_E_RANGE"},
        {MEM4D_E_UNKNOWN_KEY, "MEM4D_E_UNKNOWN_KEY"}, {MEM4D_E_UNKNOWN_PRESET, "MEM4D_E_UNKNOWN_PRESET"},
        {MEM4D_E_PARSE, "MEM4D_E_PARSE"}, {MEM4D_E_MODEL, "MEM4D_E_MODEL"},
        {MEM4D_E_HEADS_TP, "MEM4D_E_HEADS_TP"}, {MEM4D_E_KV_HEADS_TP, "MEM4D_E_KV_HEADS_TP"},
        {MEM4D_E_LAYERS_PP, "MEM4D_E_LAYERS_PP"}, {MEM4D_E_WORLD, "MEM4D_E_WORLD"}, {MEM4D_E_SEQ, "MEM4D_E_SEQ"},
        {MEM4D_E_BATCH, "MEM4D_E_BATCH"}, {MEM4D_E_UNSUPPORTED, "MEM4D_E_UNSUPPORTED"},
        {MEM4D_E_NO_JSON, "MEM4D_E_NO_JSON"}, {MEM4D_E_IO, "MEM4D_E_IO"}, {MEM4D_E_JSON, "MEM4D_E_JSON"},
        {MEM4D_E_MISSING, "MEM4D_E_MISSING"}, {MEM4D_E_CONFLICT, "MEM4D_E_CONFLICT"},
        {MEM4D_E_DIM_TP, "MEM4D_E_DIM_TP"}, {MEM4D_E_EXPERTS, "MEM4D_E_EXPERTS"},
    };
    for (size_t i = 0; i < N(expect); i++)
        ck_assert_str_eq(mem4d_status_name(expect[i].status), expect[i].name);
    /* Every status below the count has a name and a description of its own;
     * nothing past it has either. */
    size_t n = mem4d_status_count();
    ck_assert_uint_ge(n, N(expect));
    for (size_t s = 0; s < n; s++) {
        const char *name = mem4d_status_name((mem4d_status)s);
        ck_assert_ptr_nonnull(name);
        ck_assert_int_eq(strncmp(name, "MEM4D_", 6), 0);
        ck_assert_str_ne(mem4d_strerror((mem4d_status)s), "unknown status");
        for (size_t t = 0; t < s; t++)
            ck_assert_str_ne(name, mem4d_status_name((mem4d_status)t));
    }
    ck_assert_ptr_null(mem4d_status_name((mem4d_status)n));
    ck_assert_str_eq(mem4d_strerror((mem4d_status)n), "unknown status");
    ck_assert_ptr_null(mem4d_status_name((mem4d_status)-1));
}
END_TEST

START_TEST(version_number)
{
    ck_assert_uint_eq(mem4d_version_number(), MEM4D_VERSION_NUMBER);
    ck_assert_uint_eq(MEM4D_VERSION_NUMBER,
                      (MEM4D_VERSION_MAJOR << 16) | (MEM4D_VERSION_MINOR << 8) | MEM4D_VERSION_MICRO);
    /* The number and the string say the same version. */
    char text[32];
    uint32_t v = mem4d_version_number();
    snprintf(text, sizeof text, "%u.%u.%u", (unsigned)(v >> 16), (unsigned)(v >> 8 & 0xff), (unsigned)(v & 0xff));
    ck_assert_str_eq(mem4d_version(), text);
#if MEM4D_VERSION_NUMBER < 0x000200
#error "the describing functions are 0.2 API"
#endif
}
END_TEST

START_TEST(kind_names)
{
    ck_assert_str_eq(mem4d_param_kind_name(MEM4D_KIND_INTEGER), "integer");
    ck_assert_str_eq(mem4d_param_kind_name(MEM4D_KIND_BOOLEAN), "boolean");
    ck_assert_str_eq(mem4d_param_kind_name(MEM4D_KIND_CHOICE), "choice");
    ck_assert_str_eq(mem4d_param_kind_name(MEM4D_KIND_BYTES), "bytes");
    ck_assert_str_eq(mem4d_param_kind_name(MEM4D_KIND_WIDTH), "width");
    ck_assert_str_eq(mem4d_param_kind_name(MEM4D_KIND_PPM), "ppm");
    ck_assert_str_eq(mem4d_param_kind_name(MEM4D_KIND_FLOPS), "flops");
    ck_assert_str_eq(mem4d_param_kind_name(MEM4D_KIND_BYTES_PER_S), "bytes_per_s");
    ck_assert_str_eq(mem4d_param_kind_name(MEM4D_KIND_NANOSECONDS), "nanoseconds");
    ck_assert_ptr_null(mem4d_param_kind_name((mem4d_param_kind)-1));
    ck_assert_ptr_null(mem4d_param_kind_name((mem4d_param_kind)1000));
}
END_TEST

/* The three parameter tables behind one interface, so every key of each is
 * walked by the same checks. */
struct table {
    const char *what;
    size_t (*count)(void);
    const char *(*name)(int);
    mem4d_status (*kind)(int, mem4d_param_kind *);
    mem4d_status (*def)(int, uint64_t *);
    mem4d_status (*bounds)(int, uint64_t *, uint64_t *);
    const char *(*value_name)(int, uint64_t);
    mem4d_status (*fresh_get)(int, uint64_t *); /* the value a new handle holds */
    mem4d_status (*set_str)(const char *, const char *); /* on a fresh handle */
};

#define TABLE_FNS(thing)                                                                          \
    static const char *thing##_name(int k) { return mem4d_##thing##_param_name((mem4d_##thing##_param)k); } \
    static mem4d_status thing##_kind(int k, mem4d_param_kind *o)                                  \
    {                                                                                             \
        return mem4d_##thing##_param_kind((mem4d_##thing##_param)k, o);                           \
    }                                                                                             \
    static mem4d_status thing##_def(int k, uint64_t *o)                                           \
    {                                                                                             \
        return mem4d_##thing##_param_default((mem4d_##thing##_param)k, o);                        \
    }                                                                                             \
    static mem4d_status thing##_bounds(int k, uint64_t *lo, uint64_t *hi)                         \
    {                                                                                             \
        return mem4d_##thing##_param_bounds((mem4d_##thing##_param)k, lo, hi);                    \
    }                                                                                             \
    static const char *thing##_vname(int k, uint64_t v)                                           \
    {                                                                                             \
        return mem4d_##thing##_value_name((mem4d_##thing##_param)k, v);                           \
    }                                                                                             \
    static mem4d_status thing##_fresh_get(int k, uint64_t *o)                                     \
    {                                                                                             \
        mem4d_##thing *h = NULL;                                                                  \
        ck_assert_int_eq(mem4d_##thing##_new(&h), MEM4D_OK);                                      \
        mem4d_status st = mem4d_##thing##_get(h, (mem4d_##thing##_param)k, o);                    \
        mem4d_##thing##_free(h);                                                                  \
        return st;                                                                                \
    }                                                                                             \
    static mem4d_status thing##_set_str(const char *n, const char *v)                             \
    {                                                                                             \
        mem4d_##thing *h = NULL;                                                                  \
        ck_assert_int_eq(mem4d_##thing##_new(&h), MEM4D_OK);                                      \
        mem4d_status st = mem4d_##thing##_set_str(h, n, v);                                       \
        mem4d_##thing##_free(h);                                                                  \
        return st;                                                                                \
    }

TABLE_FNS(model)
TABLE_FNS(layout)
TABLE_FNS(device)

#define TABLE(thing)                                                                             \
    {#thing, mem4d_##thing##_param_count, thing##_name, thing##_kind, thing##_def, thing##_bounds, \
     thing##_vname, thing##_fresh_get, thing##_set_str}

static const struct table tables[] = {TABLE(model), TABLE(layout), TABLE(device)};

/* Exact kinds and defaults of keys of each table, by enum name. */
enum { MODEL, LAYOUT, DEVICE };
static const struct {
    int table;
    int key;
    mem4d_param_kind kind;
    uint64_t def;
} expect_kinds[] = {
    {MODEL, MEM4D_MODEL_HIDDEN_SIZE, MEM4D_KIND_INTEGER, 0},
    {MODEL, MEM4D_MODEL_NUM_LAYERS, MEM4D_KIND_INTEGER, 0},
    {MODEL, MEM4D_MODEL_NUM_KV_HEADS, MEM4D_KIND_INTEGER, 0},
    {MODEL, MEM4D_MODEL_TIED_EMBEDDINGS, MEM4D_KIND_BOOLEAN, 0},
    {MODEL, MEM4D_MODEL_QKV_BIAS, MEM4D_KIND_BOOLEAN, 0},
    {MODEL, MEM4D_MODEL_NORM, MEM4D_KIND_CHOICE, 0},
    {MODEL, MEM4D_MODEL_GATED_MLP, MEM4D_KIND_BOOLEAN, 1},
    {MODEL, MEM4D_MODEL_NUM_EXPERTS, MEM4D_KIND_INTEGER, 0},
    {MODEL, MEM4D_MODEL_MAX_POSITION, MEM4D_KIND_INTEGER, 0},
    {LAYOUT, MEM4D_LAYOUT_TP, MEM4D_KIND_INTEGER, 1},
    {LAYOUT, MEM4D_LAYOUT_DP, MEM4D_KIND_INTEGER, 0},
    {LAYOUT, MEM4D_LAYOUT_SEQ_LENGTH, MEM4D_KIND_INTEGER, 0},
    {LAYOUT, MEM4D_LAYOUT_SEQUENCE_PARALLEL, MEM4D_KIND_BOOLEAN, 1},
    {LAYOUT, MEM4D_LAYOUT_DIST_OPT, MEM4D_KIND_BOOLEAN, 1},
    {LAYOUT, MEM4D_LAYOUT_MAIN_GRAD_BYTES, MEM4D_KIND_WIDTH, 4},
    {LAYOUT, MEM4D_LAYOUT_RECOMPUTE, MEM4D_KIND_CHOICE, 0},
    {LAYOUT, MEM4D_LAYOUT_RECOMPUTE_METHOD, MEM4D_KIND_CHOICE, 0},
    {LAYOUT, MEM4D_LAYOUT_MODE, MEM4D_KIND_CHOICE, 0},
    {LAYOUT, MEM4D_LAYOUT_VOCAB_DIVISOR, MEM4D_KIND_INTEGER, 128},
    {LAYOUT, MEM4D_LAYOUT_PARAM_BYTES, MEM4D_KIND_WIDTH, 2},
    {LAYOUT, MEM4D_LAYOUT_OPT_STATE_BYTES, MEM4D_KIND_WIDTH, 4},
    {LAYOUT, MEM4D_LAYOUT_MASTER_WEIGHT_BYTES, MEM4D_KIND_WIDTH, 4},
    {LAYOUT, MEM4D_LAYOUT_FP8, MEM4D_KIND_BOOLEAN, 0},
    {LAYOUT, MEM4D_LAYOUT_BUCKET_SIZE, MEM4D_KIND_INTEGER, 0},
    {LAYOUT, MEM4D_LAYOUT_CROSS_ENTROPY_FUSION, MEM4D_KIND_BOOLEAN, 0},
    {DEVICE, MEM4D_DEVICE_MEMORY_BYTES, MEM4D_KIND_BYTES, 0},
    {DEVICE, MEM4D_DEVICE_PEAK_FLOPS, MEM4D_KIND_FLOPS, 0},
    {DEVICE, MEM4D_DEVICE_PEAK_FP8_FLOPS, MEM4D_KIND_FLOPS, 0},
    {DEVICE, MEM4D_DEVICE_HBM_BANDWIDTH, MEM4D_KIND_BYTES_PER_S, 0},
    {DEVICE, MEM4D_DEVICE_INTRA_NODE_BANDWIDTH, MEM4D_KIND_BYTES_PER_S, 0},
    {DEVICE, MEM4D_DEVICE_INTER_NODE_BANDWIDTH, MEM4D_KIND_BYTES_PER_S, 0},
    {DEVICE, MEM4D_DEVICE_GPUS_PER_NODE, MEM4D_KIND_INTEGER, 8},
    {DEVICE, MEM4D_DEVICE_FIT_THRESHOLD_PPM, MEM4D_KIND_PPM, 800000},
    {DEVICE, MEM4D_DEVICE_INTRA_NODE_LATENCY_NS, MEM4D_KIND_NANOSECONDS, 5000},
    {DEVICE, MEM4D_DEVICE_INTER_NODE_LATENCY_NS, MEM4D_KIND_NANOSECONDS, 15000},
    {DEVICE, MEM4D_DEVICE_CUDA_CONTEXT_BYTES, MEM4D_KIND_BYTES, UINT64_C(512) << 20},
    {DEVICE, MEM4D_DEVICE_ALLOCATOR_OVERHEAD_PPM, MEM4D_KIND_PPM, 40000},
};

START_TEST(kinds_and_defaults)
{
    const struct table *t = &tables[expect_kinds[_i].table];
    int key = expect_kinds[_i].key;
    mem4d_param_kind kind = (mem4d_param_kind)-1;
    uint64_t def = 99;
    ck_assert_int_eq(t->kind(key, &kind), MEM4D_OK);
    ck_assert_msg(kind == expect_kinds[_i].kind, "%s %s is %s", t->what, t->name(key), mem4d_param_kind_name(kind));
    ck_assert_int_eq(t->def(key, &def), MEM4D_OK);
    ck_assert_uint_eq(def, expect_kinds[_i].def);
}
END_TEST

START_TEST(value_names)
{
    ck_assert_str_eq(mem4d_model_value_name(MEM4D_MODEL_NORM, 0), "rmsnorm");
    ck_assert_str_eq(mem4d_model_value_name(MEM4D_MODEL_NORM, 1), "layernorm");
    ck_assert_ptr_null(mem4d_model_value_name(MEM4D_MODEL_NORM, 2));
    ck_assert_ptr_null(mem4d_model_value_name(MEM4D_MODEL_HIDDEN_SIZE, 0));
    ck_assert_str_eq(mem4d_layout_value_name(MEM4D_LAYOUT_RECOMPUTE, 2), "full");
    ck_assert_ptr_null(mem4d_device_value_name(MEM4D_DEVICE_MEMORY_BYTES, 0));
}
END_TEST

START_TEST(every_key_is_described)
{
    const struct table *t = &tables[_i];
    for (size_t k = 0; k < t->count(); k++) {
        const char *name = t->name((int)k);
        mem4d_param_kind kind;
        uint64_t def, lo, hi, fresh;
        ck_assert_int_eq(t->kind((int)k, &kind), MEM4D_OK);
        ck_assert_msg(mem4d_param_kind_name(kind) != NULL, "%s %s: kind %d", t->what, name, (int)kind);
        ck_assert_int_eq(t->def((int)k, &def), MEM4D_OK);
        ck_assert_int_eq(t->bounds((int)k, &lo, &hi), MEM4D_OK);
        /* The default is what a new handle holds; 0 may stand for "unset". */
        ck_assert_int_eq(t->fresh_get((int)k, &fresh), MEM4D_OK);
        ck_assert_msg(fresh == def, "%s %s: new handle holds %llu, default says %llu", t->what, name,
                      (unsigned long long)fresh, (unsigned long long)def);
        ck_assert_msg(def == 0 || (def >= lo && def <= hi), "%s %s: default outside bounds", t->what, name);
        if (kind == MEM4D_KIND_BOOLEAN) {
            ck_assert_msg(lo == 0 && hi == 1, "%s %s: boolean bounds [%llu, %llu]", t->what, name,
                          (unsigned long long)lo, (unsigned long long)hi);
            ck_assert_int_eq(t->set_str(name, "true"), MEM4D_OK);
            ck_assert_int_eq(t->set_str(name, "2"), MEM4D_E_RANGE);
        }
        if (kind == MEM4D_KIND_CHOICE) {
            /* Values 0 to max are named, and each name is accepted as text. */
            ck_assert_uint_eq(lo, 0);
            for (uint64_t v = 0; v <= hi; v++) {
                const char *vname = t->value_name((int)k, v);
                ck_assert_msg(vname != NULL, "%s %s: value %llu has no name", t->what, name,
                              (unsigned long long)v);
                ck_assert_int_eq(t->set_str(name, vname), MEM4D_OK);
            }
            ck_assert_ptr_null(t->value_name((int)k, hi + 1));
        } else {
            ck_assert_ptr_null(t->value_name((int)k, def));
        }
    }
    /* Past the count, before 0 and into NULL: refused, never read. */
    int past = (int)t->count();
    mem4d_param_kind kind;
    uint64_t v;
    ck_assert_int_eq(t->kind(past, &kind), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(t->kind(-1, &kind), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(t->kind(0, NULL), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(t->def(past, &v), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(t->def(-1, &v), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(t->def(0, NULL), MEM4D_E_INVALID_ARG);
    ck_assert_ptr_null(t->value_name(past, 0));
    ck_assert_ptr_null(t->value_name(-1, 0));
}
END_TEST

START_TEST(report_names_and_counts)
{
    ck_assert_str_eq(mem4d_term_name(MEM4D_TERM_WEIGHTS), "weights_bytes");
    ck_assert_str_eq(mem4d_term_name(MEM4D_TERM_PEAK_RESERVED), "peak_reserved_bytes");
    ck_assert_uint_ge(mem4d_term_count(), (size_t)MEM4D_TERM_PEAK_RESERVED + 1);
    for (size_t i = 0; i < mem4d_term_count(); i++)
        ck_assert_ptr_nonnull(mem4d_term_name((mem4d_term)i));
    ck_assert_ptr_null(mem4d_term_name((mem4d_term)mem4d_term_count()));

    static const struct {
        mem4d_info info;
        const char *name;
    } infos[] = {
        {MEM4D_INFO_DP, "dp"}, {MEM4D_INFO_WORLD, "world"}, {MEM4D_INFO_MICROBATCHES, "microbatches"},
        {MEM4D_INFO_PADDED_VOCAB, "padded_vocab"}, {MEM4D_INFO_MODEL_PARAMS, "model_params"},
        {MEM4D_INFO_PROCESS_GROUPS, "process_groups"},
    };
    for (size_t i = 0; i < N(infos); i++)
        ck_assert_str_eq(mem4d_info_name(infos[i].info), infos[i].name);
    ck_assert_uint_ge(mem4d_info_count(), N(infos));
    for (size_t i = 0; i < mem4d_info_count(); i++)
        ck_assert_ptr_nonnull(mem4d_info_name((mem4d_info)i));
    ck_assert_ptr_null(mem4d_info_name((mem4d_info)mem4d_info_count()));
    ck_assert_ptr_null(mem4d_info_name((mem4d_info)-1));

    static const struct {
        mem4d_metric metric;
        const char *name;
    } metrics[] = {
        {MEM4D_METRIC_STEP_TIME_S, "step_time_s"}, {MEM4D_METRIC_TOKENS_PER_S, "tokens_per_s"},
        {MEM4D_METRIC_TFLOPS_PER_GPU, "tflops_per_gpu"}, {MEM4D_METRIC_MFU, "mfu"},
        {MEM4D_METRIC_BUBBLE_FRACTION, "bubble_fraction"}, {MEM4D_METRIC_COMPUTE_TIME_S, "compute_time_s"},
        {MEM4D_METRIC_EXPOSED_COMM_S, "exposed_comm_s"},
    };
    for (size_t i = 0; i < N(metrics); i++)
        ck_assert_str_eq(mem4d_metric_name(metrics[i].metric), metrics[i].name);
    ck_assert_uint_ge(mem4d_metric_count(), N(metrics));
    for (size_t i = 0; i < mem4d_metric_count(); i++)
        ck_assert_ptr_nonnull(mem4d_metric_name((mem4d_metric)i));
    ck_assert_ptr_null(mem4d_metric_name((mem4d_metric)mem4d_metric_count()));

    /* The counts are what the report accepts: the last one is readable, the
     * next one is refused. */
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    uint64_t v;
    ck_assert_int_eq(mem4d_report_info(r, (mem4d_info)(mem4d_info_count() - 1), &v), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_info(r, (mem4d_info)mem4d_info_count(), &v), MEM4D_E_INVALID_ARG);
    double d;
    ck_assert_int_eq(mem4d_report_metric(r, (mem4d_metric)mem4d_metric_count(), &d), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_report_get(r, 0, (mem4d_term)mem4d_term_count(), &v), MEM4D_E_INVALID_ARG);
    mem4d_report_free(r);
}
END_TEST

static mem4d_search *small_search(void)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_device *d = tu_device("h100-80");
    mem4d_layout *l = tu_layout("world=8", "seq=4096", NULL);
    mem4d_search *s = NULL;
    ck_assert_int_eq(mem4d_search_new(m, d, l, &s), MEM4D_OK);
    mem4d_model_free(m);
    mem4d_device_free(d);
    mem4d_layout_free(l);
    return s;
}

START_TEST(search_options_and_stats)
{
    static const struct {
        mem4d_search_option option;
        const char *name;
        mem4d_param_kind kind;
        uint64_t def;
    } options[] = {
        {MEM4D_SEARCH_FITS_ONLY, "fits_only", MEM4D_KIND_BOOLEAN, 1},
        {MEM4D_SEARCH_NODE_LOCAL, "node_local", MEM4D_KIND_BOOLEAN, 1},
        {MEM4D_SEARCH_RANKED, "ranked", MEM4D_KIND_BOOLEAN, 1},
        {MEM4D_SEARCH_MAX_RESULTS, "max_results", MEM4D_KIND_INTEGER, 0},
        {MEM4D_SEARCH_UNEVEN_STAGES, "uneven_stages", MEM4D_KIND_BOOLEAN, 1},
    };
    for (size_t i = 0; i < N(options); i++) {
        mem4d_param_kind kind;
        uint64_t def;
        ck_assert_str_eq(mem4d_search_option_name(options[i].option), options[i].name);
        ck_assert_int_eq(mem4d_search_option_kind(options[i].option, &kind), MEM4D_OK);
        ck_assert_int_eq(kind, options[i].kind);
        ck_assert_int_eq(mem4d_search_option_default(options[i].option, &def), MEM4D_OK);
        ck_assert_uint_eq(def, options[i].def);
    }
    size_t n = mem4d_search_option_count();
    ck_assert_uint_ge(n, N(options));
    mem4d_param_kind kind;
    uint64_t v;
    ck_assert_ptr_null(mem4d_search_option_name((mem4d_search_option)n));
    ck_assert_int_eq(mem4d_search_option_kind((mem4d_search_option)n, &kind), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_search_option_kind(MEM4D_SEARCH_RANKED, NULL), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_search_option_default((mem4d_search_option)n, &v), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_search_option_default(MEM4D_SEARCH_RANKED, NULL), MEM4D_E_INVALID_ARG);

    /* The kinds are what mem4d_search_set_option() enforces. */
    mem4d_search *s = small_search();
    for (size_t o = 0; o < n; o++) {
        ck_assert_ptr_nonnull(mem4d_search_option_name((mem4d_search_option)o));
        ck_assert_int_eq(mem4d_search_option_kind((mem4d_search_option)o, &kind), MEM4D_OK);
        ck_assert_int_eq(mem4d_search_option_default((mem4d_search_option)o, &v), MEM4D_OK);
        ck_assert_int_eq(mem4d_search_set_option(s, (mem4d_search_option)o, v), MEM4D_OK);
        ck_assert_int_eq(mem4d_search_set_option(s, (mem4d_search_option)o, 2),
                         kind == MEM4D_KIND_BOOLEAN ? MEM4D_E_RANGE : MEM4D_OK);
        mem4d_search_set_option(s, (mem4d_search_option)o, v);
    }
    ck_assert_int_eq(mem4d_search_set_option(s, (mem4d_search_option)n, 0), MEM4D_E_INVALID_ARG);

    static const struct {
        mem4d_search_stat stat;
        const char *name;
    } stats[] = {
        {MEM4D_SEARCH_STAT_VISITED, "visited"}, {MEM4D_SEARCH_STAT_PRUNED, "pruned"},
        {MEM4D_SEARCH_STAT_VALID, "valid"}, {MEM4D_SEARCH_STAT_YIELDED, "yielded"},
    };
    for (size_t i = 0; i < N(stats); i++)
        ck_assert_str_eq(mem4d_search_stat_name(stats[i].stat), stats[i].name);
    ck_assert_uint_ge(mem4d_search_stat_count(), N(stats));
    ck_assert_ptr_null(mem4d_search_stat_name((mem4d_search_stat)mem4d_search_stat_count()));
    ck_assert_int_eq(mem4d_search_stat_get(s, (mem4d_search_stat)(mem4d_search_stat_count() - 1), &v), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_stat_get(s, (mem4d_search_stat)mem4d_search_stat_count(), &v),
                     MEM4D_E_INVALID_ARG);
    mem4d_search_free(s);
}
END_TEST

START_TEST(searched_keys)
{
    static const mem4d_layout_param searched[] = {
        MEM4D_LAYOUT_TP, MEM4D_LAYOUT_CP, MEM4D_LAYOUT_PP, MEM4D_LAYOUT_DP,
        MEM4D_LAYOUT_MICRO_BATCH, MEM4D_LAYOUT_VPP, MEM4D_LAYOUT_RECOMPUTE, MEM4D_LAYOUT_DIST_OPT,
        MEM4D_LAYOUT_EP, MEM4D_LAYOUT_ETP, MEM4D_LAYOUT_MOE_DISPATCHER,
    };
    size_t yes = 0;
    mem4d_search *s = small_search();
    for (size_t k = 0; k < mem4d_layout_param_count(); k++) {
        int want = 0;
        for (size_t i = 0; i < N(searched); i++)
            want |= searched[i] == (mem4d_layout_param)k;
        int got = mem4d_search_varies((mem4d_layout_param)k);
        ck_assert_msg(got == want, "%s: varies %d", mem4d_layout_param_name((mem4d_layout_param)k), got);
        yes += (size_t)got;
        /* It says exactly which keys mem4d_search_bound() takes. */
        uint64_t lo, hi;
        mem4d_layout_param_bounds((mem4d_layout_param)k, &lo, &hi);
        mem4d_status st = mem4d_search_bound(s, (mem4d_layout_param)k, lo ? lo : 1, hi);
        ck_assert_int_eq(st, got ? MEM4D_OK : MEM4D_E_UNSUPPORTED);
    }
    ck_assert_uint_eq(yes, N(searched));
    ck_assert_int_eq(mem4d_search_varies((mem4d_layout_param)mem4d_layout_param_count()), 0);
    ck_assert_int_eq(mem4d_search_varies((mem4d_layout_param)-1), 0);
    mem4d_search_free(s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("describe");
    TCase *tc = tcase_create("describe");
    tcase_add_test(tc, status_names);
    tcase_add_test(tc, key_applicability);
    tcase_add_test(tc, why_is_always_written);
    tcase_add_test(tc, version_number);
    tcase_add_test(tc, kind_names);
    tcase_add_loop_test(tc, kinds_and_defaults, 0, (int)N(expect_kinds));
    tcase_add_test(tc, value_names);
    tcase_add_loop_test(tc, every_key_is_described, 0, (int)N(tables));
    tcase_add_test(tc, report_names_and_counts);
    tcase_add_test(tc, search_options_and_stats);
    tcase_add_test(tc, searched_keys);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
