/*
 * Device handle: presets with their published figures, keys, bounds.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#define GiB (UINT64_C(1) << 30)

/* hbm_ppm: the measured share of the HBM rate a streaming kernel reaches
 * (doc/presets.md, "Achievable HBM bandwidth"); 0 where none is published. */
static const struct {
    const char *name;
    uint64_t memory, peak_tflops10, gpus_per_node, hbm_ppm;
} published[] = {
    {"a100-40", 40 * GiB, 3120, 8, 888000},      {"a100-80", 80 * GiB, 3120, 8, 849000},
    {"h100-80", 80 * GiB, 9894, 8, 852000},      {"h100-94", 94 * GiB, 8355, 8, 852000},
    {"h100-nvl-94", 94 * GiB, 8355, 8, 852000},  {"h100-sxm-94", 94 * GiB, 9894, 8, 852000},
    {"h200-141", 141 * GiB, 9894, 8, 850000},    {"b200-180", 180 * GiB, 22500, 8, 0},
    {"gb200-186", 186 * GiB, 25000, 4, 0},       {"mi300x-192", 192 * GiB, 13074, 8, 777000},
    {"b300-288", 288 * GiB, 22500, 8, 0},        {"gb300-288", 288 * GiB, 25000, 4, 0},
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
    ck_assert_uint_eq(v, published[_i].gpus_per_node);
    mem4d_device_get(d, MEM4D_DEVICE_HBM_EFFICIENCY_PPM, &v);
    ck_assert_uint_eq(v, published[_i].hbm_ppm);
    mem4d_device_get(d, MEM4D_DEVICE_SM_COUNT, &v);
    ck_assert_uint_gt(v, 100);
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

/* The Blackwell presets' fp8 and fp4 peaks, MAMF shares and links as
 * doc/presets.md cites them: Blackwell Ultra keeps B200/GB200's bf16 and fp8
 * and raises the dense fp4 peak (12.6 against 9 PFLOP/s on the DGX board,
 * 15 against 10 in the NVL72 rack), with one 800 Gb/s ConnectX-8 a GPU; a
 * GPU before Blackwell has no fp4 peak. */
START_TEST(blackwell_fp4_peaks)
{
    static const struct {
        const char *name;
        uint64_t fp8_tf, fp4_tf, mm_ppm, fp8_ppm, nic_gbs, domain, sms, watts;
    } bw[] = {
        {"b200-180", 4500, 9000, 776000, 763000, 50, 0, 148, 1000},
        {"gb200-186", 5000, 10000, 729000, 723000, 50, 72, 148, 1200},
        {"b300-288", 4500, 12600, 786000, 745000, 100, 0, 160, 1000},
        {"gb300-288", 5000, 15000, 729000, 723000, 100, 72, 160, 1400},
        {"h100-80", 1978, 0, 803000, 709000, 50, 0, 132, 700},
    };
    for (size_t i = 0; i < sizeof bw / sizeof bw[0]; i++) {
        mem4d_device *d = tu_device(bw[i].name);
        uint64_t nics = tu_device_get(d, "nics_per_node");
        ck_assert_uint_eq(tu_device_get(d, "peak_fp8_flops") / UINT64_C(1000000000000), bw[i].fp8_tf);
        ck_assert_uint_eq(tu_device_get(d, "peak_fp4_flops"), bw[i].fp4_tf * UINT64_C(1000000000000));
        ck_assert_uint_eq(tu_device_get(d, "matmul_efficiency_ppm"), bw[i].mm_ppm);
        ck_assert_uint_eq(tu_device_get(d, "fp8_efficiency_ppm"), bw[i].fp8_ppm);
        ck_assert_uint_eq(tu_device_get(d, nics ? "nic_bandwidth" : "inter_node_bandwidth"),
                          bw[i].nic_gbs * UINT64_C(1000000000));
        ck_assert_uint_eq(tu_device_get(d, "nvlink_domain"), bw[i].domain);
        ck_assert_uint_eq(tu_device_get(d, "sm_count"), bw[i].sms);
        ck_assert_uint_eq(tu_device_get(d, "board_power_w"), bw[i].watts);
        ck_assert_uint_eq(tu_device_get(d, "intra_node_bandwidth"), (i < 4 ? 900 : 450) * UINT64_C(1000000000));
        mem4d_device_free(d);
    }
    mem4d_device *d = NULL;
    uint64_t v = 1;
    ck_assert_int_eq(mem4d_device_new(&d), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_get(d, MEM4D_DEVICE_PEAK_FP4_FLOPS, &v), MEM4D_OK);
    ck_assert_uint_eq(v, 0);
    ck_assert_int_eq(mem4d_device_set_str(d, "peak_nvfp4_flops", "15000000000000000"), MEM4D_OK);
    mem4d_device_get(d, MEM4D_DEVICE_PEAK_FP4_FLOPS, &v);
    ck_assert_uint_eq(v, UINT64_C(15000000000000000));
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

/* h100-94 keeps the H100 NVL's figures: it is h100-nvl-94 by another name. */
START_TEST(h100_94_is_the_nvl)
{
    mem4d_device *a = tu_device("h100-94"), *b = tu_device("h100-nvl-94");
    for (size_t k = 0; k < mem4d_device_param_count(); k++) {
        uint64_t x, y;
        ck_assert_int_eq(mem4d_device_get(a, (mem4d_device_param)k, &x), MEM4D_OK);
        ck_assert_int_eq(mem4d_device_get(b, (mem4d_device_param)k, &y), MEM4D_OK);
        ck_assert_uint_eq(x, y);
    }
    mem4d_device_free(a);
    mem4d_device_free(b);
}
END_TEST

START_TEST(device_files)
{
    mem4d_device *d = NULL;
    char why[256];
    ck_assert_int_eq(mem4d_device_new(&d), MEM4D_OK);
    static const char text[] = "# a power-capped cluster\n"
                               "preset = h100-80   # start from the SXM5 figures\n"
                               "\n"
                               "name = grand-teton-500w\n"
                               "  peak_flops = 800000000000000\r\n"
                               "nics_per_node=8\n"
                               "stack = torchtitan\n"
                               "attention_kernel = fa3\n"
                               "nic_bandwidth = 50000000000";
    ck_assert_int_eq(mem4d_device_parse(d, text, sizeof text - 1, why, sizeof why), MEM4D_OK);
    ck_assert_str_eq(mem4d_device_name(d), "grand-teton-500w");
    ck_assert_uint_eq(tu_device_get(d, "peak_flops"), UINT64_C(800000000000000));
    ck_assert_uint_eq(tu_device_get(d, "memory_bytes"), 80 * GiB);
    ck_assert_uint_eq(tu_device_get(d, "nics_per_node"), 8);
    ck_assert_uint_eq(tu_device_get(d, "stack"), 5); /* torchtitan, a named software stack */
    ck_assert_uint_eq(tu_device_get(d, "attention_kernel"), 2);
    /* format, then parse into a blank device: the same device. */
    size_t len = 0;
    ck_assert_int_eq(mem4d_device_format(d, NULL, 0, &len), MEM4D_E_RANGE);
    char buf[4096];
    ck_assert_uint_lt(len, sizeof buf);
    ck_assert_int_eq(mem4d_device_format(d, buf, 8, NULL), MEM4D_E_RANGE);
    ck_assert_str_eq(buf, "");
    ck_assert_int_eq(mem4d_device_format(d, buf, sizeof buf, &len), MEM4D_OK);
    ck_assert_uint_eq(strlen(buf), len);
    /* A choice is written by its name, as the file above gives it (a
     * calibrated device file read "stack = 5"). */
    ck_assert_ptr_nonnull(strstr(buf, "\nstack = torchtitan\n"));
    ck_assert_ptr_nonnull(strstr(buf, "\nattention_kernel = fa3\n"));
    ck_assert_ptr_nonnull(strstr(buf, "\ngemm_library = auto\n"));
    mem4d_device *e = NULL;
    ck_assert_int_eq(mem4d_device_new(&e), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_parse(e, buf, len, why, sizeof why), MEM4D_OK);
    ck_assert_str_eq(mem4d_device_name(e), "grand-teton-500w");
    for (size_t k = 0; k < mem4d_device_param_count(); k++)
        ck_assert_uint_eq(tu_device_get(e, mem4d_device_param_name((mem4d_device_param)k)),
                          tu_device_get(d, mem4d_device_param_name((mem4d_device_param)k)));
    /* A new device's unset memory_bytes is written as a comment (found by fuzz_calibrate). */
    mem4d_device *blank = NULL, *back = NULL;
    ck_assert_int_eq(mem4d_device_new(&blank), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_new(&back), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_format(blank, buf, sizeof buf, &len), MEM4D_OK);
    ck_assert_ptr_nonnull(strstr(buf, "# memory_bytes not set\n"));
    ck_assert_int_eq(mem4d_device_parse(back, buf, len, why, sizeof why), MEM4D_OK);
    ck_assert_uint_eq(tu_device_get(back, "memory_bytes"), 0);
    mem4d_device_free(back);
    mem4d_device_free(blank);
    /* Refusals name the line and leave the device as it was. */
    static const struct {
        const char *text;
        mem4d_status st;
        const char *why;
    } bad[] = {
        {"gpus_per_node = 4\nnvlink = 72\n", MEM4D_E_UNKNOWN_KEY, "line 2: unknown device key \"nvlink\""},
        {"gpus_per_node 4\n", MEM4D_E_PARSE, "line 1: \"gpus_per_node 4\" is not KEY = VALUE"},
        {"gpus_per_node =\n", MEM4D_E_PARSE, "line 1: \"gpus_per_node =\" needs a key and a value"},
        {"gpus_per_node = 0\n", MEM4D_E_RANGE, "line 1: gpus_per_node = 0 is out of range (1 to 1024)"},
        {"# c\ngpus_per_node = four\n", MEM4D_E_PARSE, "line 2: gpus_per_node = \"four\" is not a whole number from 1 to 1024"},
        {"sm_count = 132\npreset = h100-80\n", MEM4D_E_CONFLICT,
         "line 2: preset must be the first key (it resets every other)"},
        {"preset = tpu\n", MEM4D_E_UNKNOWN_PRESET, "line 1: unknown device preset \"tpu\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(mem4d_device_parse(e, bad[i].text, strlen(bad[i].text), why, sizeof why), bad[i].st);
        ck_assert_str_eq(why, bad[i].why);
        ck_assert_uint_eq(tu_device_get(e, "gpus_per_node"), 8);
    }
    ck_assert_int_eq(mem4d_device_parse(e, "a\0b = 1", 7, why, sizeof why), MEM4D_E_PARSE);
    ck_assert_int_eq(mem4d_device_parse(NULL, "", 0, NULL, 0), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_device_load(e, "/nonexistent/x.device", why, sizeof why), MEM4D_E_IO);
    char path[] = "/tmp/mem4d-device-XXXXXX";
    tu_temp_file(path, "preset = gb200-186\nnics_per_node = 2\n");
    ck_assert_int_eq(mem4d_device_load(e, path, why, sizeof why), MEM4D_OK);
    remove(path);
    ck_assert_str_eq(mem4d_device_name(e), "gb200-186");
    ck_assert_uint_eq(tu_device_get(e, "nvlink_domain"), 72);
    ck_assert_uint_eq(tu_device_get(e, "nics_per_node"), 2);
    ck_assert_int_eq(mem4d_device_format(NULL, buf, sizeof buf, NULL), MEM4D_E_INVALID_ARG);
    mem4d_device_free(e);
    mem4d_device_free(d);
}
END_TEST

/* Every reader that takes a path reads a regular file only, without
 * blocking: a FIFO has no writer (open() would wait, read() too), /dev/zero
 * never ends, a directory is no document; a file over the size limit is
 * refused by its size (issue 24). */
START_TEST(only_regular_files)
{
    char dir[] = "/tmp/mem4d-fifo-XXXXXX", fifo[64], big[64], why[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(big, sizeof big, "%s/big", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    FILE *fp = fopen(big, "w");
    ck_assert_ptr_nonnull(fp);
    ck_assert_int_eq(ftruncate(fileno(fp), (off_t)(1 << 20) + 1), 0); /* sparse: nothing is written */
    fclose(fp);
    static const char *const kind[] = {"a FIFO (named pipe)", "a character device", "a directory"};
    const char *paths[] = {fifo, "/dev/zero", dir};
    mem4d_device *d = tu_device("h100-80");
    mem4d_calibration *c = NULL;
    ck_assert_int_eq(mem4d_calibration_new(&c), MEM4D_OK);
    for (size_t i = 0; i < 3; i++) {
        char want[256];
        snprintf(want, sizeof want, "%s is %s, not a regular file; give the path of a device file", paths[i], kind[i]);
        ck_assert_int_eq(mem4d_device_load(d, paths[i], why, sizeof why), MEM4D_E_IO);
        ck_assert_str_eq(why, want);
        snprintf(want, sizeof want, "%s is %s, not a regular file; give the path of a Megatron-LM training log",
                 paths[i], kind[i]);
        ck_assert_int_eq(mem4d_calibration_add_megatron_log_file(c, paths[i], 0, NULL, 0), MEM4D_E_IO);
        ck_assert_str_eq(mem4d_calibration_message(c), want);
    }
    ck_assert_int_eq(mem4d_device_load(d, big, why, sizeof why), MEM4D_E_RANGE);
    ck_assert_ptr_nonnull(strstr(why, "is larger than 1048576 bytes; not a device file"));
    ck_assert_int_eq(mem4d_calibration_add_megatron_log_file(c, "/nonexistent/train.log", 0, NULL, 0), MEM4D_E_IO);
    ck_assert_str_eq(mem4d_calibration_message(c), "cannot open /nonexistent/train.log: No such file or directory");
    ck_assert_int_eq(mem4d_calibration_add_megatron_log_file(c, NULL, 0, NULL, 0), MEM4D_E_INVALID_ARG);
    ck_assert_uint_eq(mem4d_calibration_log_count(c), 0);
    ck_assert_uint_eq(tu_device_get(d, "gpus_per_node"), 8); /* untouched */
    remove(big);
    remove(fifo);
    rmdir(dir);
    mem4d_calibration_free(c);
    mem4d_device_free(d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("device");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, presets, 0, (int)(sizeof published / sizeof published[0]));
    tcase_add_test(tc, blackwell_fp4_peaks);
    tcase_add_test(tc, keys);
    tcase_add_test(tc, h100_94_is_the_nvl);
    tcase_add_test(tc, device_files);
    tcase_add_test(tc, only_regular_files);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
