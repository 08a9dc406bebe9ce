/*
 * The rows `mem4d plan` lists and their printers (print_plan.c): the table,
 * JSON, CSV and the SVG landscape.
 * SPDX-License-Identifier: MIT
 */
#ifndef MEM4D_CLI_PRINT_PLAN_H
#define MEM4D_CLI_PRINT_PLAN_H

#include "cli.h"

/* Metrics of a row's step breakdown (print_plan.c, plan_parts[]). */
#define PLAN_PARTS 13

/* One listed layout: the searched knobs and the figures printed. */
struct plan_row {
    uint64_t tp, cp, pp, dp, mbs, vpp, recompute, dist_opt, peak, device;
    uint64_t ep, etp, dispatcher; /* expert parallelism (etp 0: tp), mem4d_moe_dispatcher */
    uint64_t first, last; /* uneven first/last stage layers; 0: even */
    uint64_t allocated, reserved; /* the peak stage's PEAK_ALLOCATED and PEAK_RESERVED */
    mem4d_verdict verdict;
    bool metrics;
    bool equivalent; /* its speed band overlaps the fastest's (the search's tie-break) */
    const char *attention; /* the attention kernel that runs: cli_attention_kernel() */
    uint64_t softmax_fallback; /* MEM4D_INFO_SOFTMAX_FALLBACK */
    double step, tokens, tflops, mfu, mfu_peak_flops;
    const char *mfu_peak; /* "bf16" or "fp8": cli_mfu_peak_name() */
    double step_lo, step_hi, tok_lo, tok_hi; /* the speed band */
    double part[PLAN_PARTS]; /* the step's breakdown: plan_parts[] */
};

struct plan_rows {
    struct plan_row *a;
    size_t n, cap;
};

struct plan_stats {
    uint64_t visited, pruned, valid;
    double seconds;
    char why[320]; /* when no layout is valid: the rule the plainest split breaks */
    char warn[4][256]; /* the rows' report warnings, each once (mem4d_report_warning()) */
    size_t nwarn;
};

/* Append the layout and its report; false when out of memory. */
bool plan_rows_push(struct plan_rows *rs, const mem4d_layout *l, const mem4d_report *r, const mem4d_device *dev);

/* How many rows fit (verdict fits; --all lists the others too). */
size_t plan_rows_fitting(const struct plan_rows *rs);

/* The first n rows as a table (with the job's header line), JSON or CSV. */
void plan_print_table(FILE *out, const struct plan_rows *rs, size_t n, const struct plan_stats *st,
                      const char *model, const char *gpu, const mem4d_layout *base, const mem4d_device *dev,
                      bool all);
void plan_print_json(FILE *out, const struct plan_rows *rs, size_t n);
void plan_print_csv(FILE *out, const struct plan_rows *rs, size_t n);

/* The landscape of all rows; prints the error naming --svg. */
bool plan_write_svg(const char *path, const struct plan_rows *rs, const char *title);

#endif
