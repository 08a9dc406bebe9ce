/*
 * Full mode against published measurements (tests/data/measurements.csv):
 * prints the error of every row and asserts that the median |error| of the
 * Megatron-style, modelled, exact rows is at most 5% and that no run that
 * ran out of memory is called "fits".
 * SPDX-License-Identifier: MIT
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define MAX_FIELDS 64
#define MAX_ROWS 256

static const char *csv_path; /* argv[1]; read-only after main() starts */

struct row {
    char id[96], precision[16], metric[24], unit[8];
    double value;
    int megatron_style, modelled, oom;
    uint64_t stage, gpu_gib;
    mem4d_model *model;
    mem4d_layout *layout;
};

static int column(char **head, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(head[i], name) == 0)
            return i;
    ck_abort_msg("measurements.csv has no column %s", name);
    return -1;
}

static uint64_t num(char **head, int nh, char **f, const char *name)
{
    return strtoull(f[column(head, nh, name)], NULL, 10);
}

static const struct {
    const char *col;
    mem4d_model_param key;
} model_cols[] = {
    {"h", MEM4D_MODEL_HIDDEN_SIZE}, {"f", MEM4D_MODEL_FFN_HIDDEN_SIZE}, {"L", MEM4D_MODEL_NUM_LAYERS},
    {"a", MEM4D_MODEL_NUM_HEADS}, {"k", MEM4D_MODEL_NUM_KV_HEADS}, {"dh", MEM4D_MODEL_HEAD_DIM},
    {"V", MEM4D_MODEL_VOCAB_SIZE}, {"tied", MEM4D_MODEL_TIED_EMBEDDINGS}, {"norm", MEM4D_MODEL_NORM},
    {"gated", MEM4D_MODEL_GATED_MLP}, {"qkv_bias", MEM4D_MODEL_QKV_BIAS}, {"experts", MEM4D_MODEL_NUM_EXPERTS},
    {"topk", MEM4D_MODEL_EXPERT_TOPK}, {"fe", MEM4D_MODEL_EXPERT_FFN_SIZE},
    {"fs", MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE},
};

static const struct {
    const char *col;
    mem4d_layout_param key;
} layout_cols[] = {
    {"tp", MEM4D_LAYOUT_TP}, {"cp", MEM4D_LAYOUT_CP}, {"pp", MEM4D_LAYOUT_PP}, {"dp", MEM4D_LAYOUT_DP},
    {"vpp", MEM4D_LAYOUT_VPP}, {"mbs", MEM4D_LAYOUT_MICRO_BATCH}, {"gbs", MEM4D_LAYOUT_GLOBAL_BATCH},
    {"seq", MEM4D_LAYOUT_SEQ_LENGTH}, {"sp", MEM4D_LAYOUT_SEQUENCE_PARALLEL}, {"recompute", MEM4D_LAYOUT_RECOMPUTE},
    {"rc_method", MEM4D_LAYOUT_RECOMPUTE_METHOD}, {"rc_layers", MEM4D_LAYOUT_RECOMPUTE_LAYERS},
    {"dist_opt", MEM4D_LAYOUT_DIST_OPT}, {"grad_bytes", MEM4D_LAYOUT_MAIN_GRAD_BYTES},
    {"overlap_grad", MEM4D_LAYOUT_OVERLAP_GRAD_REDUCE}, {"overlap_param", MEM4D_LAYOUT_OVERLAP_PARAM_GATHER},
    {"bucket", MEM4D_LAYOUT_BUCKET_SIZE}, {"flash", MEM4D_LAYOUT_FLASH_ATTN},
    {"first_layers", MEM4D_LAYOUT_FIRST_STAGE_LAYERS}, {"last_layers", MEM4D_LAYOUT_LAST_STAGE_LAYERS},
    {"ep", MEM4D_LAYOUT_EP}, {"hidden_dropout", MEM4D_LAYOUT_HIDDEN_DROPOUT},
    {"attention_dropout", MEM4D_LAYOUT_ATTENTION_DROPOUT}, {"ce_fusion", MEM4D_LAYOUT_CROSS_ENTROPY_FUSION},
};

static void parse_row(char **head, int nh, char **f, struct row *r)
{
    snprintf(r->id, sizeof r->id, "%s", f[column(head, nh, "id")]);
    snprintf(r->precision, sizeof r->precision, "%s", f[column(head, nh, "precision")]);
    snprintf(r->metric, sizeof r->metric, "%s", f[column(head, nh, "metric")]);
    snprintf(r->unit, sizeof r->unit, "%s", f[column(head, nh, "unit")]);
    r->value = strtod(f[column(head, nh, "value")], NULL);
    r->megatron_style = (int)num(head, nh, f, "megatron_style");
    r->modelled = (int)num(head, nh, f, "modelled");
    r->oom = (int)num(head, nh, f, "oom");
    r->stage = num(head, nh, f, "stage");
    r->gpu_gib = num(head, nh, f, "gpu_gib");
    ck_assert_int_eq(mem4d_model_new(&r->model), MEM4D_OK);
    for (size_t i = 0; i < sizeof model_cols / sizeof model_cols[0]; i++)
        ck_assert_msg(mem4d_model_set(r->model, model_cols[i].key, num(head, nh, f, model_cols[i].col)) == MEM4D_OK,
                      "%s: bad %s", r->id, model_cols[i].col);
    ck_assert_int_eq(mem4d_layout_new(&r->layout), MEM4D_OK);
    for (size_t i = 0; i < sizeof layout_cols / sizeof layout_cols[0]; i++)
        ck_assert_msg(mem4d_layout_set(r->layout, layout_cols[i].key, num(head, nh, f, layout_cols[i].col)) ==
                          MEM4D_OK,
                      "%s: bad %s", r->id, layout_cols[i].col);
}

static size_t load(struct row *rows)
{
    FILE *fp = fopen(csv_path, "r");
    ck_assert_msg(fp != NULL, "cannot open %s", csv_path ? csv_path : "(null)");
    char line[4096], head_line[4096], *head[MAX_FIELDS], *f[MAX_FIELDS];
    int nh = 0;
    size_t n = 0;
    while (fgets(line, sizeof line, fp)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (nh == 0) {
            memcpy(head_line, line, sizeof line);
            nh = tu_csv_split(head_line, head, MAX_FIELDS);
            continue;
        }
        ck_assert_msg(tu_csv_split(line, f, MAX_FIELDS) == nh, "row %zu has a different number of fields", n + 1);
        ck_assert_uint_lt(n, MAX_ROWS);
        parse_row(head, nh, f, &rows[n++]);
    }
    fclose(fp);
    return n;
}

static double unit_bytes(const char *unit)
{
    if (strcmp(unit, "MiB") == 0)
        return 1048576.0;
    if (strcmp(unit, "GiB") == 0)
        return 1073741824.0;
    if (strcmp(unit, "GB") == 0)
        return 1e9;
    ck_assert_str_eq(unit, "B");
    return 1.0;
}

/* The predicted counterpart of a row's metric. device_used rows do not say
 * which GPU was the busiest, so they compare with the peak stage. */
static double predicted(const struct row *r, const mem4d_report *rep)
{
    uint64_t v = 0;
    mem4d_term term = MEM4D_TERM_TOTAL;
    uint32_t stage = mem4d_report_peak_stage(rep);
    if (strcmp(r->metric, "max_allocated") == 0)
        term = MEM4D_TERM_PEAK_ALLOCATED, stage = (uint32_t)r->stage;
    else if (strcmp(r->metric, "max_reserved") == 0)
        term = MEM4D_TERM_PEAK_RESERVED, stage = (uint32_t)r->stage;
    ck_assert_int_eq(mem4d_report_get(rep, stage, term, &v), MEM4D_OK);
    return (double)v;
}

static double term(const mem4d_report *rep, uint32_t stage, mem4d_term t)
{
    uint64_t v = 0;
    ck_assert_int_eq(mem4d_report_get(rep, stage, t, &v), MEM4D_OK);
    return (double)v;
}

static double state_bytes(const mem4d_report *rep, uint32_t stage)
{
    return term(rep, stage, MEM4D_TERM_WEIGHTS) + term(rep, stage, MEM4D_TERM_GRADIENTS) +
           term(rep, stage, MEM4D_TERM_OPTIMIZER);
}

/* For comparison only: paper mode's estimate (its first stage, no
 * overheads) against a max_allocated row, when paper mode covers the run. */
static bool paper_error(const struct row *r, const mem4d_device *dev, double meas, double *err)
{
    if (strcmp(r->metric, "max_allocated") != 0 || r->stage != 0)
        return false;
    mem4d_layout *l = NULL;
    mem4d_report *rep = NULL;
    ck_assert_int_eq(mem4d_layout_clone(r->layout, &l), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_new(&rep), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_MODE, MEM4D_MODE_PAPER), MEM4D_OK);
    bool ok = mem4d_estimate(r->model, l, dev, rep) == MEM4D_OK;
    if (ok)
        *err = ((double)mem4d_report_peak_bytes(rep) - meas) / meas;
    mem4d_report_free(rep);
    mem4d_layout_free(l);
    return ok;
}

START_TEST(full_mode_matches_measurements)
{
    static struct row rows[MAX_ROWS];
    size_t n = load(rows), nstyle = 0, nall = 0;
    double style[MAX_ROWS], all[MAX_ROWS];
    mem4d_device *dev = NULL;
    mem4d_report *rep = NULL;
    ck_assert_uint_gt(n, 0);
    ck_assert_int_eq(mem4d_device_new(&dev), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_new(&rep), MEM4D_OK);
    printf("%-36s %-13s %10s %10s %8s %8s %8s %8s %8s  %s\n", "row", "metric", "measured", "full", "error", "W+G+O",
           "act", "buf", "paper", "verdict");
    for (size_t i = 0; i < n; i++) {
        struct row *r = &rows[i];
        uint64_t gib = r->gpu_gib ? r->gpu_gib : 80;
        ck_assert_int_eq(mem4d_device_set(dev, MEM4D_DEVICE_MEMORY_BYTES, gib << 30), MEM4D_OK);
        ck_assert_msg(mem4d_estimate(r->model, r->layout, dev, rep) == MEM4D_OK, "%s: %s", r->id,
                      mem4d_report_message(rep));
        const char *verdict = mem4d_verdict_name(mem4d_report_verdict(rep));
        if (r->oom) {
            printf("%-36s %-13s %10s %9.2fG %8s  %s (the run ran out of memory)\n", r->id, "oom", "-",
                   mem4d_report_peak_bytes(rep) / GIB, "-", verdict);
            ck_assert_msg(mem4d_report_verdict(rep) != MEM4D_VERDICT_FITS, "%s ran out of memory but full mode says fits",
                          r->id);
            continue;
        }
        double meas = r->value * unit_bytes(r->unit), pred = predicted(r, rep), err = (pred - meas) / meas;
        uint32_t st = strcmp(r->metric, "device_used") ? (uint32_t)r->stage : mem4d_report_peak_stage(rep);
        char paper[16] = "-";
        double perr;
        if (paper_error(r, dev, meas, &perr))
            snprintf(paper, sizeof paper, "%+.1f%%", 100 * perr);
        printf("%-36s %-13s %9.2fG %9.2fG %+7.1f%% %7.2fG %7.2fG %7.2fG %8s  %s%s%s\n", r->id, r->metric,
               meas / GIB, pred / GIB, 100 * err, state_bytes(rep, st) / GIB,
               term(rep, st, MEM4D_TERM_ACTIVATIONS) / GIB, term(rep, st, MEM4D_TERM_BUFFERS) / GIB, paper, verdict,
               r->modelled ? "" : " [not modelled]", strcmp(r->precision, "exact") ? " [approx]" : "");
        all[nall++] = fabs(err);
        if (r->megatron_style && r->modelled && strcmp(r->precision, "exact") == 0)
            style[nstyle++] = fabs(err);
    }
    ck_assert_uint_gt(nstyle, 0);
    double med_style = tu_median(style, nstyle), med_all = tu_median(all, nall);
    printf("median |error|: %.2f%% over %zu Megatron-style modelled exact rows; %.2f%% over all %zu measured rows\n",
           100 * med_style, nstyle, 100 * med_all, nall);
    ck_assert_msg(med_style <= 0.05, "median |error| %.2f%% exceeds 5%%", 100 * med_style);
    for (size_t i = 0; i < n; i++) {
        mem4d_model_free(rows[i].model);
        mem4d_layout_free(rows[i].layout);
    }
    mem4d_report_free(rep);
    mem4d_device_free(dev);
}
END_TEST

int main(int argc, char **argv)
{
    csv_path = argc > 1 ? argv[1] : "tests/data/measurements.csv";
    Suite *s = suite_create("measurements");
    TCase *tc = tcase_create("full-mode");
    tcase_add_test(tc, full_mode_matches_measurements);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
