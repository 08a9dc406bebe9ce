/*
 * Device handle: presets with their published figures, keys, bounds.
 * SPDX-License-Identifier: MIT
 */
#include "testutil.h"

#define GiB (UINT64_C(1) << 30)

static const struct {
    const char *name;
    uint64_t memory, peak_tflops10;
} published[] = {
    {"a100-40", 40 * GiB, 3120},   {"a100-80", 80 * GiB, 3120},   {"h100-80", 80 * GiB, 9894},
    {"h100-94", 94 * GiB, 8355},   {"h200-141", 141 * GiB, 9894}, {"b200-180", 180 * GiB, 22500},
    {"mi300x-192", 192 * GiB, 13074},
};

START_TEST(presets)
{
    mem4d_device *d = tu_device(published[_i].name);
    uint64_t v;
    ck_assert_int_eq(mem4d_device_get(d, MEM4D_DEVICE_MEMORY_BYTES, &v), MEM4D_OK);
    ck_assert_uint_eq(v, published[_i].memory);
    ck_assert_int_eq(mem4d_device_get(d, MEM4D_DEVICE_PEAK_FLOPS, &v), MEM4D_OK);
    ck_assert_uint_eq(v, published[_i].peak_tflops10 * UINT64_C(100000000000));
    mem4d_device_get(d, MEM4D_DEVICE_GPUS_PER_NODE, &v);
    ck_assert_uint_eq(v, 8);
    mem4d_device_get(d, MEM4D_DEVICE_FIT_THRESHOLD_PPM, &v);
    ck_assert_uint_eq(v, 800000);
    static const mem4d_device_param nonzero[] = {MEM4D_DEVICE_HBM_BANDWIDTH, MEM4D_DEVICE_INTRA_NODE_BANDWIDTH,
                                                 MEM4D_DEVICE_INTER_NODE_BANDWIDTH};
    for (size_t i = 0; i < 3; i++) {
        mem4d_device_get(d, nonzero[i], &v);
        ck_assert_uint_gt(v, 0);
    }
    ck_assert_str_eq(mem4d_device_name(d), published[_i].name);
    mem4d_device_free(d);
}
END_TEST

START_TEST(keys)
{
    mem4d_device *d = NULL;
    ck_assert_int_eq(mem4d_device_new(&d), MEM4D_OK);
    ck_assert_str_eq(mem4d_device_name(d), "custom");
    uint64_t v;
    mem4d_device_get(d, MEM4D_DEVICE_MEMORY_BYTES, &v);
    ck_assert_uint_eq(v, 0);
    ck_assert_int_eq(mem4d_device_set_str(d, "memory_bytes", "85899345920"), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_set_str(d, "fit_threshold_ppm", "900000"), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_set_str(d, "fit_threshold_ppm", "1000001"), MEM4D_E_RANGE);
    ck_assert_int_eq(mem4d_device_set_str(d, "fit_threshold_ppm", "0"), MEM4D_E_RANGE);
    ck_assert_int_eq(mem4d_device_set_str(d, "memory", "1e9"), MEM4D_E_PARSE);
    ck_assert_int_eq(mem4d_device_set_str(d, "colour", "red"), MEM4D_E_UNKNOWN_KEY);
    mem4d_device_get(d, MEM4D_DEVICE_FIT_THRESHOLD_PPM, &v);
    ck_assert_uint_eq(v, 900000);
    for (size_t i = 0; i < mem4d_device_param_count(); i++) {
        mem4d_device_param k;
        ck_assert_int_eq(mem4d_device_param_from_name(mem4d_device_param_name((mem4d_device_param)i), &k), MEM4D_OK);
        ck_assert_int_eq((int)k, (int)i);
        uint64_t lo, hi;
        ck_assert_int_eq(mem4d_device_param_bounds(k, &lo, &hi), MEM4D_OK);
        ck_assert_int_eq(mem4d_device_set(d, k, hi + 1), MEM4D_E_RANGE);
    }
    mem4d_device *c = NULL;
    ck_assert_int_eq(mem4d_device_clone(d, &c), MEM4D_OK);
    mem4d_device_get(c, MEM4D_DEVICE_MEMORY_BYTES, &v);
    ck_assert_uint_eq(v, UINT64_C(85899345920));
    mem4d_device_free(c);
    mem4d_device_free(d);
    mem4d_device_free(NULL);
    ck_assert_int_eq(mem4d_device_new_preset("tpu-v5", &d), MEM4D_E_UNKNOWN_PRESET);
    ck_assert_ptr_null(d);
    ck_assert_uint_ge(mem4d_device_preset_count(), sizeof published / sizeof published[0]);
    ck_assert_ptr_null(mem4d_device_preset_name(mem4d_device_preset_count()));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("device");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, presets, 0, (int)(sizeof published / sizeof published[0]));
    tcase_add_test(tc, keys);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
