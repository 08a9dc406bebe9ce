/*
 * Fuzz the string-keyed setters (model, layout, device), the name lookups,
 * and the estimate of whatever description they leave behind.
 *
 * Input: byte 0 picks the model preset, byte 1 the device preset, byte 2 the
 * size of the "why" buffers; the rest is split on NUL/newline into name, value
 * pairs. A name "m:key", "l:key" or "d:key" goes to one handle; a bare name is
 * tried on all three (every table's lookup sees every name). A short search
 * from the result checks that search and estimate agree.
 * SPDX-License-Identifier: MIT
 */
#include <ctype.h>

#include "fuzz-common.h"

/* A setter that fails must leave the value as it was (header: "value unchanged"). */
#define CHECK_SET(kind, handle, name, value)                                          \
    do {                                                                             \
        mem4d_##kind##_param key_;                                                   \
        mem4d_status lk_ = mem4d_##kind##_param_from_name(name, &key_);              \
        uint64_t before_ = 0, after_ = 0, lo_ = 0, hi_ = 0;                          \
        if (lk_ == MEM4D_OK) {                                                       \
            const char *canon_ = mem4d_##kind##_param_name(key_);                    \
            mem4d_##kind##_param rt_;                                                \
            FUZZ_REQUIRE(canon_ && mem4d_##kind##_param_from_name(canon_, &rt_) == MEM4D_OK \
                             && rt_ == key_, "canonical name of %s does not map back", name); \
            FUZZ_REQUIRE(mem4d_##kind##_get(handle, key_, &before_) == MEM4D_OK, "get");     \
            FUZZ_REQUIRE(mem4d_##kind##_param_bounds(key_, &lo_, &hi_) == MEM4D_OK, "bounds"); \
        }                                                                            \
        mem4d_status st_ = mem4d_##kind##_set_str(handle, name, value);              \
        if (lk_ != MEM4D_OK) {                                                       \
            FUZZ_REQUIRE(st_ == MEM4D_E_UNKNOWN_KEY, #kind " set_str(%s) gave %d for an unknown key", \
                         name, (int)st_);                                            \
            break;                                                                   \
        }                                                                            \
        FUZZ_REQUIRE(st_ != MEM4D_E_UNKNOWN_KEY, "lookup and set_str disagree on %s", name); \
        FUZZ_REQUIRE(mem4d_##kind##_get(handle, key_, &after_) == MEM4D_OK, "get");  \
        if (st_ == MEM4D_OK)                                                         \
            FUZZ_REQUIRE(after_ >= lo_ && after_ <= hi_, #kind " %s = %llu outside [%llu, %llu]", \
                         name, (unsigned long long)after_, (unsigned long long)lo_,  \
                         (unsigned long long)hi_);                                   \
        else                                                                         \
            FUZZ_REQUIRE(after_ == before_ && (st_ == MEM4D_E_PARSE || st_ == MEM4D_E_RANGE), \
                         #kind " set_str(%s, %s) failed with %d and changed the value", name, \
                         value, (int)st_);                                           \
    } while (0)

/* The layout's layer table, set by name from a list: a failure leaves the
 * table as it was, a success reads back within its bounds. */
static void set_stage_layers(mem4d_layout *l, const char *value)
{
    uint32_t before[64], after[64];
    size_t nb = mem4d_layout_get_stage_layers(l, before, 64);
    mem4d_status st = mem4d_layout_set_str(l, "stage_layers", value);
    size_t na = mem4d_layout_get_stage_layers(l, after, 64);
    FUZZ_REQUIRE(na <= mem4d_layout_stage_layers_max(), "stage_layers: %zu entries", na);
    if (st == MEM4D_OK) {
        uint64_t sum = 0;
        for (size_t k = 0; k < na && k < 64; k++)
            sum += after[k];
        FUZZ_REQUIRE(sum <= 4096, "stage_layers: %llu layers", (unsigned long long)sum);
    } else {
        FUZZ_REQUIRE(st == MEM4D_E_PARSE || st == MEM4D_E_RANGE, "stage_layers(%s) gave %d", value, (int)st);
        FUZZ_REQUIRE(na == nb && memcmp(before, after, (na < 64 ? na : 64) * sizeof *after) == 0,
                     "stage_layers(%s) failed with %d and changed the table", value, (int)st);
    }
}

/* The model's layer pattern, set by name from text: a failure leaves the
 * pattern as it was, a success writes back a pattern that reads back to
 * itself, with num_layers its length. */
static void set_layer_pattern(mem4d_model *m, const char *name, const char *value)
{
    static char before[65536], after[65536], again[65536];
    size_t nb = mem4d_model_get_layer_pattern(m, before, sizeof before);
    mem4d_status st = mem4d_model_set_str(m, name, value);
    size_t na = mem4d_model_get_layer_pattern(m, after, sizeof after);
    if (st != MEM4D_OK) {
        FUZZ_REQUIRE(st == MEM4D_E_PARSE || st == MEM4D_E_RANGE, "%s(%s) gave %d", name, value, (int)st);
        FUZZ_REQUIRE(na == nb && strcmp(before, after) == 0, "%s(%s) failed with %d and changed the pattern", name,
                     value, (int)st);
        return;
    }
    FUZZ_REQUIRE(na < sizeof after, "%s: a pattern of %zu characters", name, na);
    uint64_t L = 0;
    (void)mem4d_model_get(m, MEM4D_MODEL_NUM_LAYERS, &L);
    FUZZ_REQUIRE(na == 0 || (L >= 1 && L <= 4096), "%s: %llu layers", name, (unsigned long long)L);
    FUZZ_REQUIRE(mem4d_model_set_layer_pattern(m, after) == MEM4D_OK, "%s: its own text does not read back", name);
    mem4d_model_get_layer_pattern(m, again, sizeof again);
    FUZZ_REQUIRE(strcmp(after, again) == 0, "%s: the pattern does not round-trip", name);
}

/* The library's rule for key names: case-insensitive, '-' equal to '_'. */
static int key_is(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        int ca = *a == '-' ? '_' : tolower((unsigned char)*a);
        int cb = *b == '-' ? '_' : tolower((unsigned char)*b);
        if (ca != cb)
            return 0;
    }
    return *a == *b;
}

static void apply(mem4d_model *m, mem4d_layout *l, mem4d_device *d, const char *name, const char *value)
{
    if (key_is(name, "stage_layers") || key_is(name, "l:stage_layers")) {
        set_stage_layers(l, value);
        return;
    }
    const char *bare = strncmp(name, "m:", 2) == 0 ? name + 2 : name;
    if (key_is(bare, "layer_pattern") || key_is(bare, "hybrid_override_pattern")) {
        set_layer_pattern(m, bare, value);
        return;
    }
    if (name[0] && name[1] == ':') {
        const char *key = name + 2;
        switch (name[0]) {
        case 'm': CHECK_SET(model, m, key, value); return;
        case 'l': CHECK_SET(layout, l, key, value); return;
        case 'd': CHECK_SET(device, d, key, value); return;
        default: break;
        }
    }
    CHECK_SET(model, m, name, value);
    CHECK_SET(layout, l, name, value);
    CHECK_SET(device, d, name, value);
}

/* Every query the CLI and bindings make of a finished description. */
static void exercise(const mem4d_model *m, const mem4d_layout *l, const mem4d_device *d,
                     mem4d_report *r, size_t why_size)
{
    char why[256];
    if (why_size > sizeof why)
        why_size = sizeof why;
    uint64_t n = 0;
    mem4d_status ms = mem4d_model_validate(m, why, why_size);
    FUZZ_REQUIRE(why_size == 0 || strlen(why) < why_size, "model why overflows");
    (void)mem4d_model_num_params(m, &n);
    mem4d_status vs = mem4d_validate(m, l, why, why_size);
    FUZZ_REQUIRE(why_size == 0 || strlen(why) < why_size, "layout why overflows");
    mem4d_status es = mem4d_estimate(m, l, d, r);
    FUZZ_REQUIRE(es == mem4d_report_status(r), "estimate returned %d, report says %d", (int)es,
                 (int)mem4d_report_status(r));
    if (es == MEM4D_OK) {
        FUZZ_REQUIRE(ms == MEM4D_OK && vs == MEM4D_OK, "estimate OK on a model/layout that fails validation (%d, %d)",
                     (int)ms, (int)vs);
        fuzz_check_report(r);
    } else {
        FUZZ_REQUIRE(es != MEM4D_END && es != MEM4D_E_INVALID_ARG, "estimate gave %d", (int)es);
        FUZZ_REQUIRE(mem4d_report_message(r)[0] != '\0', "failed estimate %d without a message", (int)es);
    }
    (void)mem4d_strerror(es);
}

/* A short streamed search from the fuzzed description: every layout it
 * yields must estimate, directly, to exactly the report it came with. */
static void search_a_little(const mem4d_model *m, const mem4d_layout *base, const mem4d_device *d)
{
    uint64_t world = 0;
    (void)mem4d_layout_get(base, MEM4D_LAYOUT_WORLD, &world);
    if (world == 0 || world > 64)
        return; /* keep each input cheap; large worlds are the bench's job */
    mem4d_search *s = NULL;
    if (mem4d_search_new(m, d, base, &s) != MEM4D_OK)
        return;
    mem4d_layout *l = NULL;
    mem4d_report *got = NULL, *direct = NULL;
    FUZZ_REQUIRE(mem4d_layout_new(&l) == MEM4D_OK && mem4d_report_new(&got) == MEM4D_OK
                     && mem4d_report_new(&direct) == MEM4D_OK, "new");
    FUZZ_REQUIRE(mem4d_search_set_option(s, MEM4D_SEARCH_RANKED, 0) == MEM4D_OK, "ranked");
    FUZZ_REQUIRE(mem4d_search_set_option(s, MEM4D_SEARCH_MAX_RESULTS, 4) == MEM4D_OK, "max");
    mem4d_status st;
    int n = 0;
    while ((st = mem4d_search_next(s, l, got)) == MEM4D_OK) {
        FUZZ_REQUIRE(++n <= 4, "MAX_RESULTS 4 not honoured");
        fuzz_check_report(got);
        FUZZ_REQUIRE(mem4d_estimate(m, l, d, direct) == MEM4D_OK, "a yielded layout does not estimate");
        /* The header: "its estimate, exactly as mem4d_estimate() gives it". */
        uint32_t ns = mem4d_report_num_stages(direct);
        FUZZ_REQUIRE(mem4d_report_num_stages(got) == ns, "search has %u stages, estimate %u",
                     mem4d_report_num_stages(got), ns);
        FUZZ_REQUIRE(mem4d_report_verdict(got) == mem4d_report_verdict(direct), "verdicts differ");
        for (uint32_t st_i = 0; st_i < ns; st_i++)
            for (int t = 0; t < (int)mem4d_term_count(); t++)
                FUZZ_REQUIRE(fuzz_term(got, st_i, (mem4d_term)t) == fuzz_term(direct, st_i, (mem4d_term)t),
                             "stage %u term %d: search %llu, direct estimate %llu", st_i, t,
                             (unsigned long long)fuzz_term(got, st_i, (mem4d_term)t),
                             (unsigned long long)fuzz_term(direct, st_i, (mem4d_term)t));
    }
    FUZZ_REQUIRE(st == MEM4D_END, "search ended with %d", (int)st);
    mem4d_report_free(direct);
    mem4d_report_free(got);
    mem4d_layout_free(l);
    mem4d_search_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    size_t nm = mem4d_model_preset_count(), nd = mem4d_device_preset_count();
    mem4d_model *m = NULL;
    mem4d_layout *l = NULL;
    mem4d_device *d = NULL;
    mem4d_report *r = NULL;
    /* Preset 0xff stands for an empty handle: the setters must then build it. */
    if (data[0] == 0xff || nm == 0)
        FUZZ_REQUIRE(mem4d_model_new(&m) == MEM4D_OK, "model_new");
    else
        FUZZ_REQUIRE(mem4d_model_new_preset(mem4d_model_preset_name(data[0] % nm), &m) == MEM4D_OK, "preset");
    if (data[1] == 0xff || nd == 0)
        FUZZ_REQUIRE(mem4d_device_new(&d) == MEM4D_OK, "device_new");
    else
        FUZZ_REQUIRE(mem4d_device_new_preset(mem4d_device_preset_name(data[1] % nd), &d) == MEM4D_OK, "preset");
    FUZZ_REQUIRE(mem4d_layout_new(&l) == MEM4D_OK && mem4d_report_new(&r) == MEM4D_OK, "new");
    /* A small job as the starting point, so most inputs reach the estimator. */
    FUZZ_REQUIRE(mem4d_layout_set(l, MEM4D_LAYOUT_WORLD, 8) == MEM4D_OK, "world");
    FUZZ_REQUIRE(mem4d_layout_set(l, MEM4D_LAYOUT_SEQ_LENGTH, 4096) == MEM4D_OK, "seq");

    struct fuzz_argv a;
    fuzz_split(&a, data + 3, size - 3, 1);
    for (int i = 0; i + 1 < a.argc; i += 2)
        apply(m, l, d, a.argv[i], a.argv[i + 1]);
    exercise(m, l, d, r, data[2]);
    search_a_little(m, l, d);

    fuzz_argv_free(&a);
    mem4d_report_free(r);
    mem4d_layout_free(l);
    mem4d_device_free(d);
    mem4d_model_free(m);
    return 0;
}
