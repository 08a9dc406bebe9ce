/*
 * The process's locale: a program that embeds libmem4d may call
 * setlocale(LC_ALL, "") (a GUI, a Python tool, a daemon), and where the
 * decimal point is a comma the C library's strtod reads "0.1" as 0. The
 * files and arguments the library reads write their decimals with a point
 * whatever the locale, so every reader must answer as in the "C" locale.
 * The comma locale is built for the test with localedef (the test is
 * skipped, exit 77, where localedef or its POSIX sources are missing).
 * Usage: test-locale DATA_DIR (tests/data).
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <locale.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <mem4d/mem4d.h>

#define COMMA "comma.UTF-8"

static const char *data_dir = "tests/data";

/* A locale whose only change from POSIX is the decimal comma. */
static const char locale_source[] =
    "LC_CTYPE\ncopy \"POSIX\"\nEND LC_CTYPE\n"
    "LC_COLLATE\ncopy \"POSIX\"\nEND LC_COLLATE\n"
    "LC_MONETARY\ncopy \"POSIX\"\nEND LC_MONETARY\n"
    "LC_NUMERIC\ndecimal_point \"<U002C>\"\nthousands_sep \"\"\ngrouping -1\nEND LC_NUMERIC\n"
    "LC_TIME\ncopy \"POSIX\"\nEND LC_TIME\n"
    "LC_MESSAGES\ncopy \"POSIX\"\nEND LC_MESSAGES\n";

/* Build the comma locale under a scratch LOCPATH; false when this system
 * cannot. */
static char dir[] = "/tmp/mem4d-locale-XXXXXX";

static bool make_comma_locale(void)
{
    char src[64], cmd[256], numeric[96];
    struct stat st;
    if (!mkdtemp(dir))
        return false;
    snprintf(src, sizeof src, "%s/comma", dir);
    FILE *f = fopen(src, "w");
    if (!f)
        return false;
    fputs(locale_source, f);
    fclose(f);
    /* -c: the categories left out are only warned about (exit status 1) */
    snprintf(cmd, sizeof cmd, "localedef -c -i %s -f UTF-8 %s/%s >/dev/null 2>&1", src, dir, COMMA);
    (void)system(cmd);
    snprintf(numeric, sizeof numeric, "%s/%s/LC_NUMERIC", dir, COMMA);
    return stat(numeric, &st) == 0 && setenv("LOCPATH", dir, 1) == 0 && setlocale(LC_NUMERIC, COMMA) != NULL &&
           setlocale(LC_NUMERIC, "C") != NULL;
}

static void comma(bool on)
{
    ck_assert_ptr_nonnull(setlocale(LC_NUMERIC, on ? COMMA : "C"));
}

START_TEST(the_locale_is_a_comma_locale)
{
    comma(true);
    char *end = NULL;
    ck_assert(strtod("0.5", &end) == 0.0); /* else the tests below prove nothing */
    ck_assert_str_eq(end, ".5");
    comma(false);
}
END_TEST

/* Megatron-LM's float flags: dropouts, and the hybrid ratios that shape the
 * layer pattern. */
static mem4d_status import_hybrid(char *pattern, size_t size)
{
    const char *argv[] = {"--num-layers", "8", "--hidden-size", "256", "--num-attention-heads", "4",
                          "--seq-length", "1024", "--vocab-size", "1000", "--attention-dropout", "0.1",
                          "--hidden-dropout", "0.1", "--is-hybrid-model", "--hybrid-attention-ratio", "0.25",
                          "--hybrid-mlp-ratio", "0.5"};
    mem4d_import *imp = NULL;
    mem4d_model *m = NULL;
    mem4d_layout *l = NULL;
    ck_assert_int_eq(mem4d_import_new(&imp), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_new(&m), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_new(&l), MEM4D_OK);
    mem4d_status st = mem4d_import_megatron(imp, (int)(sizeof argv / sizeof *argv), argv, NULL, 8, m, l);
    if (st != MEM4D_OK)
        fprintf(stderr, "import: %s\n", mem4d_import_message(imp));
    mem4d_model_get_layer_pattern(m, pattern, size);
    mem4d_layout_free(l);
    mem4d_model_free(m);
    mem4d_import_free(imp);
    return st;
}

START_TEST(megatron_float_flags)
{
    char want[64], got[64];
    ck_assert_int_eq(import_hybrid(want, sizeof want), MEM4D_OK);
    ck_assert_str_eq(want, "M-*-M*--"); /* a quarter attention, half MLP */
    comma(true);
    mem4d_status st = import_hybrid(got, sizeof got);
    comma(false);
    ck_assert_int_eq(st, MEM4D_OK);
    ck_assert_str_eq(got, want);
}
END_TEST

/* Fit an h100-80 to the calibration's one run (st: how reading it went)
 * and read its measured step. */
static mem4d_status measured_step(mem4d_calibration *c, mem4d_status st, double *step)
{
    mem4d_device *d = NULL;
    ck_assert_int_eq(mem4d_device_new_preset("h100-80", &d), MEM4D_OK);
    if (st == MEM4D_OK)
        st = mem4d_calibration_fit(c, d);
    if (st == MEM4D_OK)
        st = mem4d_calibration_get(c, 0, MEM4D_CALIBRATION_MEASURED_STEP_S, step);
    if (st != MEM4D_OK)
        fprintf(stderr, "calibration: %s\n", mem4d_calibration_message(c));
    mem4d_device_free(d);
    mem4d_calibration_free(c);
    return st;
}

/* A Megatron-LM log (its arguments block has dropouts and learning rates;
 * its iteration lines "elapsed time per iteration (ms): 1927.5"). */
static mem4d_status calibrate_log(double *step)
{
    char path[512];
    snprintf(path, sizeof path, "%s/megatron-logs/llama32-1b-dp8.log", data_dir);
    mem4d_calibration *c = NULL;
    ck_assert_int_eq(mem4d_calibration_new(&c), MEM4D_OK);
    return measured_step(c, mem4d_calibration_add_megatron_log_file(c, path, 0, NULL, 0), step);
}

/* The step a calibration reads in the "C" locale, read again under the
 * comma locale: the same figure. */
static double same_under_a_comma(mem4d_status (*calibrate)(double *step))
{
    double want = 0, got = 0;
    ck_assert_int_eq(calibrate(&want), MEM4D_OK);
    comma(true);
    mem4d_status st = calibrate(&got);
    comma(false);
    ck_assert_int_eq(st, MEM4D_OK);
    ck_assert(got == want);
    return want;
}

START_TEST(megatron_log)
{
    double want = same_under_a_comma(calibrate_log);
    ck_assert(want > 1.0 && want < 3.0);
}
END_TEST

/* A nanotron log's human_format numbers ("1.93K" ms). */
static mem4d_status calibrate_nanotron(double *step)
{
    static const char log[] =
        "iteration: 1 / 10 | consumed_tokens: 262K | time_per_iteration_ms: 9.87K | tokens_per_sec: 26.6K\n"
        "iteration: 2 / 10 | consumed_tokens: 524K | time_per_iteration_ms: 1.93K | tokens_per_sec: 136K\n"
        "iteration: 3 / 10 | consumed_tokens: 786K | time_per_iteration_ms: 1.95K | tokens_per_sec: 134K\n";
    mem4d_model *m = NULL;
    mem4d_layout *l = NULL;
    mem4d_calibration *c = NULL;
    ck_assert_int_eq(mem4d_model_new_preset("llama3.1-8b", &m), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_new(&l), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set_str(l, "world", "8"), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set_str(l, "seq", "4096"), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set_str(l, "gbs", "64"), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set_str(l, "tp", "8"), MEM4D_OK);
    ck_assert_int_eq(mem4d_calibration_new(&c), MEM4D_OK);
    mem4d_status st = measured_step(c, mem4d_calibration_add_log(c, MEM4D_LOG_NANOTRON, log, sizeof log - 1, m, l),
                                    step);
    mem4d_layout_free(l);
    mem4d_model_free(m);
    return st;
}

START_TEST(nanotron_log)
{
    double want = same_under_a_comma(calibrate_nanotron);
    ck_assert(fabs(want - 1.94) < 1e-12); /* the median of 1.93K and 1.95K ms, the first line left out */
}
END_TEST

/* The locale's directory goes, whether it was built or not. */
static void remove_locale_dir(void)
{
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    (void)system(cmd);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        data_dir = argv[1];
    if (!make_comma_locale()) {
        remove_locale_dir();
        printf("skipped: localedef cannot build a locale with a decimal comma here\n");
        return 77;
    }
    Suite *s = suite_create("locale");
    TCase *tc = tcase_create("decimal-comma");
    tcase_add_test(tc, the_locale_is_a_comma_locale);
    tcase_add_test(tc, megatron_float_flags);
    tcase_add_test(tc, megatron_log);
    tcase_add_test(tc, nanotron_log);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    remove_locale_dir();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
