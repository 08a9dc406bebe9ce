/*
 * The printers of `mem4d plan`: the ranked table, JSON, CSV, and the SVG
 * landscape (a tp x pp grid per cp and micro-batch).
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "print_plan.h"

static uint64_t lget(const mem4d_layout *l, mem4d_layout_param k)
{
    uint64_t v = 0;
    mem4d_layout_get(l, k, &v);
    return v;
}

/* Where a row's step goes, as plan --json prints it. */
static const mem4d_metric plan_parts[PLAN_PARTS] = {
    MEM4D_METRIC_COMPUTE_TIME_S, MEM4D_METRIC_EXPOSED_COMM_S, MEM4D_METRIC_TP_COMM_S, MEM4D_METRIC_CP_COMM_S,
    MEM4D_METRIC_DP_COMM_S,      MEM4D_METRIC_PP_COMM_S,      MEM4D_METRIC_EP_COMM_S, MEM4D_METRIC_BUBBLE_S,
    MEM4D_METRIC_BUBBLE_FRACTION, MEM4D_METRIC_OPTIMIZER_S,  MEM4D_METRIC_EXPERT_COMPUTE_S,
    MEM4D_METRIC_ROUTER_PERMUTE_S, MEM4D_METRIC_STRAGGLER_S,
};

bool plan_rows_push(struct plan_rows *rs, const mem4d_layout *l, const mem4d_report *r, const mem4d_device *dev)
{
    if (rs->n == rs->cap) {
        size_t cap = rs->cap ? rs->cap * 2 : 256;
        struct plan_row *a = realloc(rs->a, cap * sizeof *a);
        if (!a)
            return false;
        rs->a = a;
        rs->cap = cap;
    }
    struct plan_row *w = &rs->a[rs->n++];
    *w = (struct plan_row){
        .tp = lget(l, MEM4D_LAYOUT_TP), .cp = lget(l, MEM4D_LAYOUT_CP), .pp = lget(l, MEM4D_LAYOUT_PP),
        .dp = lget(l, MEM4D_LAYOUT_DP), .mbs = lget(l, MEM4D_LAYOUT_MICRO_BATCH),
        .vpp = lget(l, MEM4D_LAYOUT_VPP), .recompute = lget(l, MEM4D_LAYOUT_RECOMPUTE),
        .dist_opt = lget(l, MEM4D_LAYOUT_DIST_OPT), .peak = mem4d_report_peak_bytes(r),
        .ep = lget(l, MEM4D_LAYOUT_EP), .etp = lget(l, MEM4D_LAYOUT_ETP), .dispatcher = lget(l, MEM4D_LAYOUT_MOE_DISPATCHER),
        .first = lget(l, MEM4D_LAYOUT_FIRST_STAGE_LAYERS), .last = lget(l, MEM4D_LAYOUT_LAST_STAGE_LAYERS),
        .device = mem4d_report_device_bytes(r), .verdict = mem4d_report_verdict(r),
        .attention = cli_attention_kernel(r),
    };
    mem4d_report_info(r, MEM4D_INFO_SOFTMAX_FALLBACK, &w->softmax_fallback);
    mem4d_report_get(r, mem4d_report_peak_stage(r), MEM4D_TERM_PEAK_ALLOCATED, &w->allocated);
    mem4d_report_get(r, mem4d_report_peak_stage(r), MEM4D_TERM_PEAK_RESERVED, &w->reserved);
    w->metrics = mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &w->step) == MEM4D_OK;
    if (w->metrics) {
        mem4d_report_metric(r, MEM4D_METRIC_TOKENS_PER_S, &w->tokens);
        mem4d_report_metric(r, MEM4D_METRIC_TFLOPS_PER_GPU, &w->tflops);
        mem4d_report_metric(r, MEM4D_METRIC_MFU, &w->mfu);
        mem4d_report_metric(r, MEM4D_METRIC_MFU_PEAK_FLOPS, &w->mfu_peak_flops);
        w->mfu_peak = cli_mfu_peak_name(l, dev);
        mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_LOW_S, &w->step_lo);
        mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_HIGH_S, &w->step_hi);
        mem4d_report_metric(r, MEM4D_METRIC_TOKENS_PER_S_LOW, &w->tok_lo);
        mem4d_report_metric(r, MEM4D_METRIC_TOKENS_PER_S_HIGH, &w->tok_hi);
        for (size_t i = 0; i < sizeof plan_parts / sizeof plan_parts[0]; i++)
            mem4d_report_metric(r, plan_parts[i], &w->part[i]);
    }
    return true;
}

size_t plan_rows_fitting(const struct plan_rows *rs)
{
    size_t k = 0;
    for (size_t i = 0; i < rs->n; i++)
        k += rs->a[i].verdict == MEM4D_VERDICT_FITS;
    return k;
}

static const char *rc_name(uint64_t v)
{
    const char *n = mem4d_layout_value_name(MEM4D_LAYOUT_RECOMPUTE, v);
    return n ? n : "?";
}

static const char *disp_name(uint64_t v)
{
    const char *n = mem4d_layout_value_name(MEM4D_LAYOUT_MOE_DISPATCHER, v);
    return n ? n : "?";
}

/* Does any of the first n rows use expert parallelism (the table's ep columns)? */
static bool any_ep(const struct plan_rows *rs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (rs->a[i].ep > 1)
            return true;
    return false;
}

/* Which attention a row runs, as one word: the kernel, "unfused*" where the
 * stack's fused softmax declines the row's shape (PyTorch's fp32 softmax). */
static const char *attn_word(const struct plan_row *w)
{
    return w->softmax_fallback ? "unfused*" : w->attention;
}

/* Do the first n rows run one attention (the header says it), or not (a column)? */
static bool one_attention(const struct plan_rows *rs, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (strcmp(attn_word(&rs->a[i]), attn_word(&rs->a[0])) != 0)
            return false;
    return true;
}

void plan_print_table(FILE *out, const struct plan_rows *rs, size_t n, const struct plan_stats *st,
                      const char *model, const char *gpu, const mem4d_layout *base, const mem4d_device *dev,
                      bool all)
{
    uint64_t gpn = 0, mem = 0, thr = 0;
    mem4d_device_get(dev, MEM4D_DEVICE_GPUS_PER_NODE, &gpn);
    mem4d_device_get(dev, MEM4D_DEVICE_MEMORY_BYTES, &mem);
    bool paper = lget(base, MEM4D_LAYOUT_MODE) != 0;
    mem4d_device_get(dev, paper ? MEM4D_DEVICE_FIT_THRESHOLD_PPM : MEM4D_DEVICE_FULL_FIT_THRESHOLD_PPM, &thr);
    /* the attention the rows run (plan --json's attention_kernel and softmax_fallback): in the
     * header when they share it, as they do but on a stack whose fused softmax declines some
     * shapes; else a column */
    bool attn_col = n > 0 && !one_attention(rs, n);
    fprintf(out, "mem4d plan: %s on %llu x %s (%.1f GiB, %llu per node), seq %llu, gbs %llu, %s mode%s%s\n",
            cli_text(model), (unsigned long long)lget(base, MEM4D_LAYOUT_WORLD), cli_text(gpu), cli_gib(mem),
            (unsigned long long)gpn, (unsigned long long)lget(base, MEM4D_LAYOUT_SEQ_LENGTH),
            (unsigned long long)lget(base, MEM4D_LAYOUT_GLOBAL_BATCH),
            mem4d_mode_name(lget(base, MEM4D_LAYOUT_MODE) ? MEM4D_MODE_PAPER : MEM4D_MODE_FULL),
            n > 0 && !attn_col ? ", attention " : "", n > 0 && !attn_col ? attn_word(&rs->a[0]) : "");
    /* without a peak there is no step time: the search ranks by memory */
    bool speed = rs->n == 0 || rs->a[0].metrics;
    fprintf(out, "%llu valid layouts estimated, %llu pruned unseen, in %.2f ms; %zu %s %.0f%% of memory. "
            "%s%s first%s:\n\n", (unsigned long long)st->valid, (unsigned long long)st->pruned, st->seconds * 1e3,
            rs->n, all ? "listed; fits means at most" : "fit in", (double)thr / 1e4,
            !all ? "" : rs->n > 0 && rs->a[0].verdict == MEM4D_VERDICT_FITS ? "Fitting, " : "None fits; by verdict, ",
            speed ? (all ? "fastest" : "Fastest") : (all ? "least memory" : "Least memory"),
            speed ? "" : " (no step time: the device has no peak_flops)");
    if (st->valid == 0) {
        fprintf(out, "No layout is valid: no split of the GPUs into tp x cp x pp x dp meets the model's and the "
                "batch's rules (%s).\n", st->why);
        return;
    }
    if (rs->n == 0) {
        fprintf(out, "No layout fits. Try more GPUs, a shorter sequence, or --all to see how far off they are.\n");
        return;
    }
    bool moe = any_ep(rs, n);
    fprintf(out, "%4s %4s %3s %6s %5s %4s %4s %-9s %-4s", "#", "tp", "cp", "pp", "dp", "mbs", "vpp", "recompute",
            "dopt");
    if (moe)
        fprintf(out, " %4s %3s %-9s", "ep", "etp", "dispatch");
    if (attn_col)
        fprintf(out, " %-9s", "attention");
    fprintf(out, " %9s %6s %-7s %8s %6s %9s %10s %-17s %s\n", "peak GiB", "% mem", "verdict", "TFLOP/s", "MFU",
            "step s", "tokens/s", "tokens/s band", "eq");
    for (size_t i = 0; i < n; i++) {
        const struct plan_row *w = &rs->a[i];
        char pp[32];
        if (w->first || w->last)
            snprintf(pp, sizeof pp, "%llu/%llu", (unsigned long long)w->pp, (unsigned long long)w->first);
        else
            snprintf(pp, sizeof pp, "%llu", (unsigned long long)w->pp);
        fprintf(out, "%4zu %4llu %3llu %6s %5llu %4llu %4llu %-9s %-4s", i + 1, (unsigned long long)w->tp,
                (unsigned long long)w->cp, pp, (unsigned long long)w->dp, (unsigned long long)w->mbs,
                (unsigned long long)w->vpp, rc_name(w->recompute), w->dist_opt ? "yes" : "no");
        if (moe)
            fprintf(out, " %4llu %3llu %-9s", (unsigned long long)w->ep,
                    (unsigned long long)(w->etp ? w->etp : w->tp), disp_name(w->dispatcher));
        if (attn_col)
            fprintf(out, " %-9s", attn_word(w));
        fprintf(out, " %9.2f %5.1f%% %-7s", cli_gib(w->peak),
                w->device ? 100.0 * (double)w->peak / (double)w->device : 0.0, mem4d_verdict_name(w->verdict));
        if (w->metrics) {
            char band[48];
            snprintf(band, sizeof band, "%.0f-%.0f", w->tok_lo, w->tok_hi);
            /* MFU in percent, as estimate and check print it (the JSON and CSV keep the fraction) */
            fprintf(out, " %8.1f %5.1f%% %9.3f %10.0f %-17s %s\n", w->tflops, 100 * w->mfu, w->step, w->tokens, band,
                    w->equivalent ? "=" : "");
        } else {
            fprintf(out, " %8s %6s %9s %10s %-17s\n", "-", "-", "-", "-", "-");
        }
    }
    if (n < rs->n)
        fprintf(out, "... %zu more (--top 0 lists all)\n", rs->n - n);
    bool fallback = false;
    for (size_t i = 0; i < n; i++)
        fallback = fallback || rs->a[i].softmax_fallback;
    if (fallback)
        fprintf(out, "unfused*: the stack's fused softmax declines the row's shape (sequence, micro-batch, heads per "
                "rank), so PyTorch's fp32 softmax runs (more memory and HBM traffic)\n");
    if (plan_rows_fitting(rs) == 0)
        fprintf(out, "No layout fits: the %zu listed are all above %.0f%% of memory.\n", rs->n, (double)thr / 1e4);
    size_t neq = 0;
    while (neq < rs->n && rs->a[neq].equivalent)
        neq++;
    /* The compared band is the one between layouts of one job, narrower than
     * the band of a run printed beside each row, unless the device gives its
     * own (m4d_speed_band_relative(), lib/perf.c). */
    uint64_t own_lo = 0, own_hi = 0;
    mem4d_device_get(dev, MEM4D_DEVICE_SPEED_BAND_LOW_PPM, &own_lo);
    mem4d_device_get(dev, MEM4D_DEVICE_SPEED_BAND_HIGH_PPM, &own_hi);
    if (neq > 1)
        fprintf(out, "eq: the first %zu are equivalent to the fastest (%s; doc/perf.md, \"Uncertainty\"), listed by "
                "fewer model-parallel GPUs, then speed\n", neq,
                own_lo || own_hi ? "their speed bands overlap its band, the device's speed_band_*_ppm"
                                 : "their speeds overlap its speed under the band between layouts of one job, "
                                   "narrower than the tokens/s band shown");
}

static void json_number(FILE *out, bool have, double v)
{
    if (have)
        fprintf(out, "%.9g", v);
    else
        fputs("null", out);
}

void plan_print_json(FILE *out, const struct plan_rows *rs, size_t n)
{
    fputs("[", out);
    for (size_t i = 0; i < n; i++) {
        const struct plan_row *w = &rs->a[i];
        fprintf(out, "%s\n  {\"rank\": %zu, \"tp\": %llu, \"cp\": %llu, \"pp\": %llu, \"dp\": %llu, \"mbs\": %llu, "
                "\"vpp\": %llu, \"recompute\": ", i ? "," : "", i + 1, (unsigned long long)w->tp,
                (unsigned long long)w->cp, (unsigned long long)w->pp, (unsigned long long)w->dp,
                (unsigned long long)w->mbs, (unsigned long long)w->vpp);
        cli_json_string(out, rc_name(w->recompute));
        fprintf(out, ", \"ep\": %llu, \"etp\": %llu, \"moe_dispatcher\": ", (unsigned long long)w->ep,
                (unsigned long long)(w->etp ? w->etp : w->tp));
        cli_json_string(out, disp_name(w->dispatcher));
        fprintf(out, ", \"dist_opt\": %s, \"first_stage_layers\": %llu, \"last_stage_layers\": %llu, "
                "\"peak_bytes\": %llu, \"peak_allocated_bytes\": %llu, \"peak_reserved_bytes\": %llu, "
                "\"device_bytes\": %llu, \"verdict\": ", w->dist_opt ? "true" : "false",
                (unsigned long long)w->first, (unsigned long long)w->last, (unsigned long long)w->peak,
                (unsigned long long)w->allocated, (unsigned long long)w->reserved, (unsigned long long)w->device);
        cli_json_string(out, mem4d_verdict_name(w->verdict));
        const struct {
            const char *key;
            double v;
        } speed[] = {
            {"step_time_s", w->step},         {"tokens_per_s", w->tokens},         {"tflops_per_gpu", w->tflops},
            {"mfu", w->mfu},                  {"step_time_low_s", w->step_lo},     {"step_time_high_s", w->step_hi},
            {"tokens_per_s_low", w->tok_lo},  {"tokens_per_s_high", w->tok_hi},
        };
        for (size_t k = 0; k < sizeof speed / sizeof speed[0]; k++) {
            fprintf(out, ", \"%s\": ", speed[k].key);
            json_number(out, w->metrics, speed[k].v);
        }
        fputs(", \"mfu_peak_flops\": ", out);
        json_number(out, w->metrics, w->mfu_peak_flops);
        fputs(", \"mfu_peak\": ", out);
        if (w->metrics)
            cli_json_string(out, w->mfu_peak);
        else
            fputs("null", out);
        fprintf(out, ", \"equivalent_to_fastest\": %s, \"attention_kernel\": ", w->equivalent ? "true" : "false");
        cli_json_string(out, w->attention);
        fprintf(out, ", \"softmax_fallback\": %s", w->softmax_fallback ? "true" : "false");
        for (size_t k = 0; k < sizeof plan_parts / sizeof plan_parts[0]; k++) {
            fprintf(out, ", \"%s\": ", mem4d_metric_name(plan_parts[k]));
            json_number(out, w->metrics, w->part[k]);
        }
        fputs("}", out);
    }
    fputs(n ? "\n]\n" : "]\n", out);
}

void plan_print_csv(FILE *out, const struct plan_rows *rs, size_t n)
{
    fputs("rank,tp,cp,pp,dp,mbs,vpp,recompute,dist_opt,first_stage_layers,last_stage_layers,peak_bytes,"
          "device_bytes,verdict,"
          "step_time_s,tokens_per_s,tflops_per_gpu,mfu,tokens_per_s_low,tokens_per_s_high,equivalent_to_fastest,"
          "attention_kernel,softmax_fallback,ep,etp,moe_dispatcher\n",
          out);
    for (size_t i = 0; i < n; i++) {
        const struct plan_row *w = &rs->a[i];
        fprintf(out, "%zu,%llu,%llu,%llu,%llu,%llu,%llu,%s,%s,%llu,%llu,%llu,%llu,%s", i + 1,
                (unsigned long long)w->tp, (unsigned long long)w->cp, (unsigned long long)w->pp,
                (unsigned long long)w->dp, (unsigned long long)w->mbs, (unsigned long long)w->vpp,
                rc_name(w->recompute), w->dist_opt ? "true" : "false", (unsigned long long)w->first,
                (unsigned long long)w->last, (unsigned long long)w->peak, (unsigned long long)w->device,
                mem4d_verdict_name(w->verdict));
        if (w->metrics)
            fprintf(out, ",%.9g,%.9g,%.9g,%.9g,%.9g,%.9g", w->step, w->tokens, w->tflops, w->mfu, w->tok_lo,
                    w->tok_hi);
        else
            fputs(",,,,,,", out);
        /* appended after the first columns, whose indexes stay: the band's
         * equivalence, the attention, then the expert knobs the search varies
         * for a model with experts (as --json writes them: without them two
         * rows of one MoE plan can read the same) */
        fprintf(out, ",%s,%s,%s,%llu,%llu,%s\n", w->equivalent ? "true" : "false", w->attention,
                w->softmax_fallback ? "true" : "false", (unsigned long long)w->ep,
                (unsigned long long)(w->etp ? w->etp : w->tp), disp_name(w->dispatcher));
    }
}

/* --- the landscape (SVG) ---------------------------------------------------- */

/* Sorted unique values of one field over the rows. */
static size_t uniq(const struct plan_rows *rs, size_t off, uint64_t *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < rs->n; i++) {
        uint64_t v = *(const uint64_t *)((const char *)&rs->a[i] + off);
        size_t j = 0;
        while (j < n && out[j] < v)
            j++;
        if (j < n && out[j] == v)
            continue;
        if (n == cap)
            continue;
        memmove(out + j + 1, out + j, (n - j) * sizeof *out);
        out[j] = v;
        n++;
    }
    return n;
}

/* Where v sits on a sorted axis, or -1 when the axis left it out. */
static int axis_at(const uint64_t *axis, size_t n, uint64_t v)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (axis[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && axis[lo] == v ? (int)lo : -1;
}

/* Does w beat the cell's best so far: best verdict, then most TFLOP/s (the
 * first of equals stays). */
static bool cell_better(const struct plan_row *w, const struct plan_row *best)
{
    return !best || w->verdict < best->verdict ||
           (w->verdict == best->verdict && w->metrics && (!best->metrics || w->tflops > best->tflops));
}

#define SVG_CELL 46
#define SVG_PANEL_GAP 36
#define SVG_MAX_AXIS 16

/* One (cp, mbs) panel; best[i * nt + j] is the cell of pp ps[i], tp ts[j]. */
static void svg_panel(FILE *f, const struct plan_row *const *best, uint64_t c, uint64_t b, const uint64_t *ts,
                      size_t nt, const uint64_t *ps, size_t np, int x0, int y0)
{
    static const char *const fill[] = {"#4caf50", "#ffb300", "#e53935"};
    fprintf(f, "<text x='%d' y='%d' font-weight='bold'>cp %llu, mbs %llu</text>\n", x0, y0 - 22,
            (unsigned long long)c, (unsigned long long)b);
    for (size_t j = 0; j < nt; j++)
        fprintf(f, "<text x='%d' y='%d' text-anchor='middle' font-size='10'>tp %llu</text>\n",
                x0 + 30 + (int)j * SVG_CELL + SVG_CELL / 2, y0 - 6, (unsigned long long)ts[j]);
    for (size_t i = 0; i < np; i++) {
        int y = y0 + (int)i * SVG_CELL;
        fprintf(f, "<text x='%d' y='%d' font-size='10'>pp %llu</text>\n", x0, y + SVG_CELL / 2 + 4,
                (unsigned long long)ps[i]);
        for (size_t j = 0; j < nt; j++) {
            int x = x0 + 30 + (int)j * SVG_CELL;
            const struct plan_row *w = best[i * nt + j];
            fprintf(f, "<rect x='%d' y='%d' width='%d' height='%d' fill='%s' stroke='white'/>\n", x, y, SVG_CELL,
                    SVG_CELL, w ? fill[w->verdict <= 2 ? w->verdict : 2] : "#e0e0e0");
            if (w && w->verdict != MEM4D_VERDICT_OOM && w->metrics)
                fprintf(f, "<text x='%d' y='%d' text-anchor='middle' font-size='11'>%.0f</text>\n",
                        x + SVG_CELL / 2, y + SVG_CELL / 2 + 4, w->tflops);
            else if (w)
                fprintf(f, "<text x='%d' y='%d' text-anchor='middle' font-size='9'>%.0fG</text>\n",
                        x + SVG_CELL / 2, y + SVG_CELL / 2 + 4, cli_gib(w->peak));
        }
    }
}

/* Panels: one per (cp, mbs), in rows of cp; cells: tp across, pp down. */
bool plan_write_svg(const char *path, const struct plan_rows *rs, const char *title)
{
    uint64_t cs[SVG_MAX_AXIS], bs[SVG_MAX_AXIS], ts[SVG_MAX_AXIS], ps[SVG_MAX_AXIS];
    size_t nc = uniq(rs, offsetof(struct plan_row, cp), cs, SVG_MAX_AXIS);
    size_t nb = uniq(rs, offsetof(struct plan_row, mbs), bs, 6);
    size_t nt = uniq(rs, offsetof(struct plan_row, tp), ts, SVG_MAX_AXIS);
    size_t np = uniq(rs, offsetof(struct plan_row, pp), ps, SVG_MAX_AXIS);
    /* Each row into its cell in one pass (linear in the rows: a search can
     * draw millions); the axes hold at most 16 x 6 x 16 x 16 cells. */
    size_t ncell = nc * nb * nt * np;
    const struct plan_row **best = calloc(ncell ? ncell : 1, sizeof *best);
    if (!best) {
        cli_error("--svg: out of memory");
        return false;
    }
    for (size_t k = 0; k < rs->n; k++) {
        const struct plan_row *w = &rs->a[k];
        int ic = axis_at(cs, nc, w->cp), ib = axis_at(bs, nb, w->mbs), it = axis_at(ts, nt, w->tp),
            ip = axis_at(ps, np, w->pp);
        if (ic < 0 || ib < 0 || it < 0 || ip < 0)
            continue;
        size_t at = (((size_t)ic * nb + (size_t)ib) * np + (size_t)ip) * nt + (size_t)it;
        if (cell_better(w, best[at]))
            best[at] = w;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        cli_error("--svg: cannot write '%s': %s", path, strerror(errno));
        free(best);
        return false;
    }
    int pw = 30 + (int)nt * SVG_CELL + SVG_PANEL_GAP, ph = (int)np * SVG_CELL + SVG_PANEL_GAP + 24;
    int w = 20 + (int)(nb ? nb : 1) * pw, h = 80 + (int)(nc ? nc : 1) * ph;
    fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-family='sans-serif' "
            "font-size='12'>\n<rect width='100%%' height='100%%' fill='white'/>\n", w, h);
    fprintf(f, "<text x='20' y='24' font-size='15' font-weight='bold'>");
    /* XML 1.0 allows no control character and needs UTF-8: the title as
     * cli_printable() shows it, then XML's escapes */
    char shown[1024];
    for (const char *s = cli_printable(title, shown, sizeof shown); *s; s++)
        fputs(*s == '<' ? "&lt;" : *s == '&' ? "&amp;" : *s == '>' ? "&gt;" : (char[2]){*s, 0}, f);
    fprintf(f, "</text>\n<text x='20' y='44'>best layout per cell (over vpp, recompute, dist_opt): "
            "TFLOP/s per GPU; green fits, amber tight, red oom (peak GiB), grey invalid</text>\n");
    for (size_t i = 0; i < nc; i++)
        for (size_t j = 0; j < nb; j++)
            svg_panel(f, best + (i * nb + j) * np * nt, cs[i], bs[j], ts, nt, ps, np, 20 + (int)j * pw,
                      90 + (int)i * ph);
    fputs("</svg>\n", f);
    free(best);
    /* A full disk shows at the last flush: fclose's status, or the stream's error. */
    errno = 0;
    bool failed = ferror(f) != 0;
    if (fclose(f) != 0 || failed) {
        cli_error("--svg: cannot write '%s': %s", path, errno ? strerror(errno) : "write error");
        return false;
    }
    return true;
}
