/*
 * Helpers shared by the Check suites.
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

int tu_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

mem4d_model *tu_model(const char *preset)
{
    mem4d_model *m = NULL;
    ck_assert_int_eq(mem4d_model_new_preset(preset, &m), MEM4D_OK);
    return m;
}

mem4d_model *tu_qwen3(const char *layers)
{
    mem4d_model *m = NULL;
    ck_assert_int_eq(mem4d_model_new(&m), MEM4D_OK);
    static const char *const dims[][2] = {
        {"hidden_size", "4096"},   {"ffn_hidden_size", "12288"}, {"num_attention_heads", "64"},
        {"num_query_groups", "4"}, {"kv_channels", "128"},       {"vocab_size", "151936"},
        {"num_experts", "128"},    {"moe_router_topk", "8"},     {"moe_ffn_hidden_size", "1536"},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        ck_assert_int_eq(mem4d_model_set_str(m, dims[i][0], dims[i][1]), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(m, "num_layers", layers), MEM4D_OK);
    return m;
}

mem4d_device *tu_device(const char *preset)
{
    mem4d_device *d = NULL;
    ck_assert_int_eq(mem4d_device_new_preset(preset, &d), MEM4D_OK);
    return d;
}

uint64_t tu_device_get(const mem4d_device *d, const char *key)
{
    mem4d_device_param k;
    uint64_t v = 0;
    ck_assert_int_eq(mem4d_device_param_from_name(key, &k), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_get(d, k, &v), MEM4D_OK);
    return v;
}

mem4d_report *tu_estimate(const mem4d_model *m, const mem4d_layout *l, const mem4d_device *d)
{
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    ck_assert_msg(mem4d_estimate(m, l, d, r) == MEM4D_OK, "%s", mem4d_report_message(r));
    return r;
}

mem4d_layout *tu_layout(const char *first, ...)
{
    mem4d_layout *l = NULL;
    ck_assert_int_eq(mem4d_layout_new(&l), MEM4D_OK);
    va_list ap;
    va_start(ap, first);
    for (const char *kv = first; kv; kv = va_arg(ap, const char *)) {
        char key[64];
        const char *eq = strchr(kv, '=');
        ck_assert_ptr_nonnull(eq);
        ck_assert_uint_lt((size_t)(eq - kv), sizeof key);
        memcpy(key, kv, (size_t)(eq - kv));
        key[eq - kv] = '\0';
        ck_assert_msg(mem4d_layout_set_str(l, key, eq + 1) == MEM4D_OK, "cannot set %s", kv);
    }
    va_end(ap);
    return l;
}

int tu_csv_split(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    line[strcspn(line, "\r\n")] = '\0';
    while (n < max) {
        if (*p == '"') {
            f[n++] = ++p;
            p = strchr(p, '"');
            ck_assert_msg(p != NULL, "a quoted CSV field is not closed");
            *p++ = '\0';
        } else {
            f[n++] = p;
            p += strcspn(p, ",");
        }
        if (*p != ',')
            return n;
        *p++ = '\0';
    }
    return n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tu_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void tu_temp_file(char *path, const char *text)
{
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *fp = fdopen(fd, "w");
    ck_assert_ptr_nonnull(fp);
    ck_assert_int_ge(fputs(text, fp), 0);
    ck_assert_int_eq(fclose(fp), 0);
}
