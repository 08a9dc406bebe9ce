/*
 * mem4d plan: every valid layout of a model on N GPUs, filtered by memory
 * and ranked by predicted step time, as a table, JSON, CSV or an SVG map.
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

/* The built-in job `mem4d plan` (and `mem4d` alone) plans. */
#define DEFAULT_MODEL "llama3.1-70b"
#define DEFAULT_GPU "h100-80"
#define DEFAULT_GPUS "64"
#define DEFAULT_SEQ "8192"
#define DEFAULT_GBS "512"
#define DEFAULT_TOP 20

static void usage(FILE *out)
{
    fprintf(out,
            "usage: mem4d plan [--model NAME | --hf-config FILE] [--gpu NAME] [--gpu-memory-gib X]\n"
            "                  [--gpus N] [--seq S] [--gbs G] [--gpus-per-node K] [--mode full|paper]\n"
            "                  [--tp SPEC] [--cp SPEC] [--pp SPEC] [--dp SPEC] [--mbs SPEC] [--vpp SPEC]\n"
            "                  [--recompute SPEC] [--dist-opt SPEC] [--cross-node] [--even-stages]\n"
            "                  [--set KEY=VALUE ...]\n"
            "                  [--top K] [--all] [--json | --csv] [--svg FILE]\n"
            "Searches every valid layout (tp, cp, pp, dp, micro-batch, vpp, recompute, distributed\n"
            "optimizer) and lists those that fit in 80%% of GPU memory, fastest first by the\n"
            "step-time model (doc/perf.md). Defaults: %s on %s x %s, seq %s, gbs %s.\n"
            "A SPEC fixes a knob (--pp 1), bounds it (--tp 1-4) or lists values (--mbs 1,2,4).\n"
            "--cross-node lets tp x cp exceed the GPUs of a node. A pp that does not divide the\n"
            "layers gets lighter first and last stages (pp 16 over 126 layers: 7+14x8+7, shown as\n"
            "16/7); --even-stages skips such pp. --top K prints the K fastest\n"
            "(default %d, 0 for all); --all also lists layouts that do not fit (then every one\n"
            "unless --top is given). --json prints an array of objects, --csv one row per layout;\n"
            "--svg FILE also draws the landscape: a tp x pp grid per cp and micro-batch, coloured\n"
            "by verdict and labelled with TFLOP/s per GPU. Exit status: 0 with layouts, 1 when\n"
            "none fits, 2 on errors.\n",
            DEFAULT_MODEL, DEFAULT_GPUS, DEFAULT_GPU, DEFAULT_SEQ, DEFAULT_GBS, DEFAULT_TOP);
}

enum format { FMT_TABLE, FMT_JSON, FMT_CSV };

struct knob_flag {
    const char *flag;
    mem4d_layout_param key;
};

static const struct knob_flag knob_flags[] = {
    {"--tp", MEM4D_LAYOUT_TP},  {"--cp", MEM4D_LAYOUT_CP},   {"--pp", MEM4D_LAYOUT_PP},
    {"--dp", MEM4D_LAYOUT_DP},  {"--mbs", MEM4D_LAYOUT_MICRO_BATCH}, {"--vpp", MEM4D_LAYOUT_VPP},
    {"--recompute", MEM4D_LAYOUT_RECOMPUTE}, {"--dist-opt", MEM4D_LAYOUT_DIST_OPT},
};
#define NKNOB_FLAGS (sizeof knob_flags / sizeof knob_flags[0])

/* A knob constraint as given: [lo, hi] or a list. */
struct spec {
    bool set, is_list;
    uint64_t lo, hi;
    uint64_t list[64];
    size_t n;
};

struct opts {
    const char *model, *hf_config, *gpu, *svg;
    uint64_t gpu_bytes, gpus_per_node, top;
    bool top_set, all, cross_node, even_stages;
    enum format fmt;
    struct spec spec[NKNOB_FLAGS];
};


/* One value of a knob, through the layout's own parser (so "full" and
 * "true" work where they mean something). */
static bool knob_value(mem4d_layout *scratch, const struct knob_flag *k, const char *text, uint64_t *v)
{
    if (mem4d_layout_set_str(scratch, mem4d_layout_param_name(k->key), text) != MEM4D_OK ||
        mem4d_layout_get(scratch, k->key, v) != MEM4D_OK) {
        cli_error("%s: '%s' is not a valid value", k->flag, text);
        return false;
    }
    return true;
}

/* SPEC: "V", "LO-HI" or "A,B,C". */
static bool parse_spec(mem4d_layout *scratch, const struct knob_flag *k, const char *text, struct spec *s)
{
    char buf[512];
    if (!*text || strlen(text) >= sizeof buf) {
        cli_error("%s needs a value, a range LO-HI or a list A,B,C", k->flag);
        return false;
    }
    strcpy(buf, text);
    memset(s, 0, sizeof *s);
    s->set = true;
    char *dash = strchr(buf, '-');
    if (strchr(buf, ',')) {
        s->is_list = true;
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            if (s->n == 64) {
                cli_error("%s: at most 64 values", k->flag);
                return false;
            }
            if (!knob_value(scratch, k, tok, &s->list[s->n++]))
                return false;
        }
        return true;
    }
    if (dash && dash != buf) {
        *dash = '\0';
        return knob_value(scratch, k, buf, &s->lo) && knob_value(scratch, k, dash + 1, &s->hi);
    }
    if (!knob_value(scratch, k, buf, &s->lo))
        return false;
    s->hi = s->lo;
    return true;
}


/* Flags that take no value; false when argv[i] is none of them. */
static bool parse_switch(const char *arg, struct opts *o)
{
    if (!strcmp(arg, "--json"))
        o->fmt = FMT_JSON;
    else if (!strcmp(arg, "--csv"))
        o->fmt = FMT_CSV;
    else if (!strcmp(arg, "--all"))
        o->all = true;
    else if (!strcmp(arg, "--cross-node"))
        o->cross_node = true;
    else if (!strcmp(arg, "--even-stages"))
        o->even_stages = true;
    else
        return false;
    return true;
}

/* Flags with a value that are not layout keys; 1 handled, 0 not this, -1 error. */
static int parse_option(int argc, char **argv, int *i, struct opts *o)
{
    const char *v;
    if ((v = cli_flag_value(argc, argv, i, "--model")))
        o->model = v;
    else if ((v = cli_flag_value(argc, argv, i, "--hf-config")))
        o->hf_config = v;
    else if ((v = cli_flag_value(argc, argv, i, "--gpu")))
        o->gpu = v;
    else if ((v = cli_flag_value(argc, argv, i, "--svg")))
        o->svg = v;
    else if ((v = cli_flag_value(argc, argv, i, "--gpu-memory-gib")))
        return cli_parse_gib("--gpu-memory-gib", v, &o->gpu_bytes) ? 1 : -1;
    else if ((v = cli_flag_value(argc, argv, i, "--gpus-per-node")))
        return cli_parse_u64("--gpus-per-node", v, &o->gpus_per_node) ? 1 : -1;
    else if ((v = cli_flag_value(argc, argv, i, "--top"))) {
        o->top_set = true;
        return cli_parse_u64("--top", v, &o->top) ? 1 : -1;
    } else
        return 0;
    if (!*v) {
        cli_error("%s needs a value", argv[*i]);
        return -1;
    }
    return 1;
}

/* Layout flags of the base job, and knob constraints. */
static int parse_layout_flag(int argc, char **argv, int *i, struct opts *o, mem4d_layout *base,
                             mem4d_layout *scratch)
{
    static const struct knob_flag base_flags[] = {
        {"--gpus", MEM4D_LAYOUT_WORLD}, {"--seq", MEM4D_LAYOUT_SEQ_LENGTH},
        {"--gbs", MEM4D_LAYOUT_GLOBAL_BATCH}, {"--mode", MEM4D_LAYOUT_MODE},
    };
    const char *v;
    for (size_t k = 0; k < sizeof base_flags / sizeof base_flags[0]; k++)
        if ((v = cli_flag_value(argc, argv, i, base_flags[k].flag)))
            return cli_layout_set(base, base_flags[k].flag, base_flags[k].key, v) ? 1 : -1;
    if ((v = cli_flag_value(argc, argv, i, "--set")))
        return cli_layout_set_kv(base, v) ? 1 : -1;
    for (size_t k = 0; k < NKNOB_FLAGS; k++)
        if ((v = cli_flag_value(argc, argv, i, knob_flags[k].flag)))
            return parse_spec(scratch, &knob_flags[k], v, &o->spec[k]) ? 1 : -1;
    return 0;
}

/* CLI_OK, CLI_USAGE, or -1 after --help. */
static int parse(int argc, char **argv, struct opts *o, mem4d_layout *base)
{
    mem4d_layout *scratch = NULL;
    if (mem4d_layout_new(&scratch) != MEM4D_OK) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    int rc = CLI_OK;
    for (int i = 1; i < argc && rc == CLI_OK; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            rc = -1;
            break;
        }
        if (parse_switch(argv[i], o))
            continue;
        int r = parse_option(argc, argv, &i, o);
        if (r == 0)
            r = parse_layout_flag(argc, argv, &i, o, base, scratch);
        if (r == 0)
            cli_error("plan: unknown option '%s' (try --help)", argv[i]);
        if (r <= 0)
            rc = CLI_USAGE;
    }
    mem4d_layout_free(scratch);
    return rc;
}

/* Hand the knob constraints to the search; each error names its flag. */
static bool apply_specs(mem4d_search *s, const struct opts *o)
{
    if (mem4d_search_set_option(s, MEM4D_SEARCH_NODE_LOCAL, !o->cross_node) != MEM4D_OK ||
        mem4d_search_set_option(s, MEM4D_SEARCH_UNEVEN_STAGES, !o->even_stages) != MEM4D_OK) {
        cli_error("cannot set the search's options");
        return false;
    }
    for (size_t k = 0; k < NKNOB_FLAGS; k++) {
        const struct spec *sp = &o->spec[k];
        if (!sp->set)
            continue;
        mem4d_status st = sp->is_list ? mem4d_search_allow(s, knob_flags[k].key, sp->list, sp->n)
                                      : mem4d_search_bound(s, knob_flags[k].key, sp->lo, sp->hi);
        if (st != MEM4D_OK) {
            cli_error("%s: %s", knob_flags[k].flag,
                      st == MEM4D_E_RANGE ? "empty range or value out of bounds" : mem4d_strerror(st));
            return false;
        }
    }
    return true;
}

/* --- the results ---------------------------------------------------------- */

/* One listed layout: the searched knobs and the figures printed. */
struct row {
    uint64_t tp, cp, pp, dp, mbs, vpp, recompute, dist_opt, peak, device;
    uint64_t first, last; /* uneven first/last stage layers; 0: even */
    mem4d_verdict verdict;
    bool metrics;
    double step, tokens, tflops, mfu;
};

struct rows {
    struct row *a;
    size_t n, cap;
};

static uint64_t lget(const mem4d_layout *l, mem4d_layout_param k)
{
    uint64_t v = 0;
    mem4d_layout_get(l, k, &v);
    return v;
}

static bool rows_push(struct rows *rs, const mem4d_layout *l, const mem4d_report *r)
{
    if (rs->n == rs->cap) {
        size_t cap = rs->cap ? rs->cap * 2 : 256;
        struct row *a = realloc(rs->a, cap * sizeof *a);
        if (!a)
            return false;
        rs->a = a;
        rs->cap = cap;
    }
    struct row *w = &rs->a[rs->n++];
    *w = (struct row){
        .tp = lget(l, MEM4D_LAYOUT_TP), .cp = lget(l, MEM4D_LAYOUT_CP), .pp = lget(l, MEM4D_LAYOUT_PP),
        .dp = lget(l, MEM4D_LAYOUT_DP), .mbs = lget(l, MEM4D_LAYOUT_MICRO_BATCH),
        .vpp = lget(l, MEM4D_LAYOUT_VPP), .recompute = lget(l, MEM4D_LAYOUT_RECOMPUTE),
        .dist_opt = lget(l, MEM4D_LAYOUT_DIST_OPT), .peak = mem4d_report_peak_bytes(r),
        .first = lget(l, MEM4D_LAYOUT_FIRST_STAGE_LAYERS), .last = lget(l, MEM4D_LAYOUT_LAST_STAGE_LAYERS),
        .device = mem4d_report_device_bytes(r), .verdict = mem4d_report_verdict(r),
    };
    w->metrics = mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &w->step) == MEM4D_OK;
    if (w->metrics) {
        mem4d_report_metric(r, MEM4D_METRIC_TOKENS_PER_S, &w->tokens);
        mem4d_report_metric(r, MEM4D_METRIC_TFLOPS_PER_GPU, &w->tflops);
        mem4d_report_metric(r, MEM4D_METRIC_MFU, &w->mfu);
    }
    return true;
}

struct stats {
    uint64_t visited, pruned, valid;
    double seconds;
};

/* Drain a search into rows. */
static mem4d_status collect(mem4d_search *s, struct rows *rs, struct stats *st)
{
    mem4d_layout *l = NULL;
    mem4d_report *r = NULL;
    mem4d_status status = MEM4D_E_NOMEM;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (mem4d_layout_new(&l) == MEM4D_OK && mem4d_report_new(&r) == MEM4D_OK) {
        while ((status = mem4d_search_next(s, l, r)) == MEM4D_OK)
            if (!rows_push(rs, l, r)) {
                status = MEM4D_E_NOMEM;
                break;
            }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    st->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_VISITED, &st->visited);
    mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_PRUNED, &st->pruned);
    mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_VALID, &st->valid);
    mem4d_report_free(r);
    mem4d_layout_free(l);
    return status == MEM4D_END ? MEM4D_OK : status;
}

static const char *rc_name(uint64_t v)
{
    const char *n = mem4d_layout_value_name(MEM4D_LAYOUT_RECOMPUTE, v);
    return n ? n : "?";
}

static void print_table(FILE *out, const struct rows *rs, size_t n, const struct stats *st,
                        const char *model, const char *gpu, const mem4d_layout *base, const mem4d_device *dev,
                        bool all)
{
    uint64_t gpn = 0, mem = 0, thr = 0;
    mem4d_device_get(dev, MEM4D_DEVICE_GPUS_PER_NODE, &gpn);
    mem4d_device_get(dev, MEM4D_DEVICE_MEMORY_BYTES, &mem);
    mem4d_device_get(dev, MEM4D_DEVICE_FIT_THRESHOLD_PPM, &thr);
    fprintf(out, "mem4d plan: %s on %llu x %s (%.1f GiB, %llu per node), seq %llu, gbs %llu, %s mode\n",
            model, (unsigned long long)lget(base, MEM4D_LAYOUT_WORLD), gpu, cli_gib(mem),
            (unsigned long long)gpn, (unsigned long long)lget(base, MEM4D_LAYOUT_SEQ_LENGTH),
            (unsigned long long)lget(base, MEM4D_LAYOUT_GLOBAL_BATCH),
            mem4d_mode_name(lget(base, MEM4D_LAYOUT_MODE) ? MEM4D_MODE_PAPER : MEM4D_MODE_FULL));
    fprintf(out, "%llu valid layouts estimated, %llu pruned unseen, in %.2f ms; %zu %s %.0f%% of memory. "
            "%s first:\n\n", (unsigned long long)st->valid, (unsigned long long)st->pruned, st->seconds * 1e3,
            rs->n, all ? "listed; fits means at most" : "fit in", (double)thr / 1e4,
            all ? "Fitting, fastest" : "Fastest");
    if (rs->n == 0) {
        fprintf(out, "No layout fits. Try more GPUs, a shorter sequence, or --all to see how far off they are.\n");
        return;
    }
    fprintf(out, "%4s %4s %3s %6s %5s %4s %4s %-9s %-4s %9s %6s %-7s %8s %6s %9s %10s\n", "#", "tp", "cp", "pp",
            "dp", "mbs", "vpp", "recompute", "dopt", "peak GiB", "% mem", "verdict", "TFLOP/s", "MFU",
            "step s", "tokens/s");
    for (size_t i = 0; i < n; i++) {
        const struct row *w = &rs->a[i];
        char pp[32];
        if (w->first || w->last)
            snprintf(pp, sizeof pp, "%llu/%llu", (unsigned long long)w->pp, (unsigned long long)w->first);
        else
            snprintf(pp, sizeof pp, "%llu", (unsigned long long)w->pp);
        fprintf(out, "%4zu %4llu %3llu %6s %5llu %4llu %4llu %-9s %-4s %9.2f %5.1f%% %-7s", i + 1,
                (unsigned long long)w->tp, (unsigned long long)w->cp, pp,
                (unsigned long long)w->dp, (unsigned long long)w->mbs, (unsigned long long)w->vpp,
                rc_name(w->recompute), w->dist_opt ? "yes" : "no", cli_gib(w->peak),
                w->device ? 100.0 * (double)w->peak / (double)w->device : 0.0, mem4d_verdict_name(w->verdict));
        if (w->metrics)
            fprintf(out, " %8.1f %6.3f %9.3f %10.0f\n", w->tflops, w->mfu, w->step, w->tokens);
        else
            fprintf(out, " %8s %6s %9s %10s\n", "-", "-", "-", "-");
    }
    if (n < rs->n)
        fprintf(out, "... %zu more (--top 0 lists all)\n", rs->n - n);
}

static void json_number(FILE *out, bool have, double v)
{
    if (have)
        fprintf(out, "%.9g", v);
    else
        fputs("null", out);
}

static void print_json(FILE *out, const struct rows *rs, size_t n)
{
    fputs("[", out);
    for (size_t i = 0; i < n; i++) {
        const struct row *w = &rs->a[i];
        fprintf(out, "%s\n  {\"rank\": %zu, \"tp\": %llu, \"cp\": %llu, \"pp\": %llu, \"dp\": %llu, \"mbs\": %llu, "
                "\"vpp\": %llu, \"recompute\": ", i ? "," : "", i + 1, (unsigned long long)w->tp,
                (unsigned long long)w->cp, (unsigned long long)w->pp, (unsigned long long)w->dp,
                (unsigned long long)w->mbs, (unsigned long long)w->vpp);
        cli_json_string(out, rc_name(w->recompute));
        fprintf(out, ", \"dist_opt\": %s, \"first_stage_layers\": %llu, \"last_stage_layers\": %llu, "
                "\"peak_bytes\": %llu, \"device_bytes\": %llu, \"verdict\": ", w->dist_opt ? "true" : "false",
                (unsigned long long)w->first, (unsigned long long)w->last, (unsigned long long)w->peak,
                (unsigned long long)w->device);
        cli_json_string(out, mem4d_verdict_name(w->verdict));
        fputs(", \"step_time_s\": ", out);
        json_number(out, w->metrics, w->step);
        fputs(", \"tokens_per_s\": ", out);
        json_number(out, w->metrics, w->tokens);
        fputs(", \"tflops_per_gpu\": ", out);
        json_number(out, w->metrics, w->tflops);
        fputs(", \"mfu\": ", out);
        json_number(out, w->metrics, w->mfu);
        fputs("}", out);
    }
    fputs(n ? "\n]\n" : "]\n", out);
}

static void print_csv(FILE *out, const struct rows *rs, size_t n)
{
    fputs("rank,tp,cp,pp,dp,mbs,vpp,recompute,dist_opt,first_stage_layers,last_stage_layers,peak_bytes,"
          "device_bytes,verdict,"
          "step_time_s,tokens_per_s,tflops_per_gpu,mfu\n", out);
    for (size_t i = 0; i < n; i++) {
        const struct row *w = &rs->a[i];
        fprintf(out, "%zu,%llu,%llu,%llu,%llu,%llu,%llu,%s,%s,%llu,%llu,%llu,%llu,%s", i + 1,
                (unsigned long long)w->tp, (unsigned long long)w->cp, (unsigned long long)w->pp,
                (unsigned long long)w->dp, (unsigned long long)w->mbs, (unsigned long long)w->vpp,
                rc_name(w->recompute), w->dist_opt ? "true" : "false", (unsigned long long)w->first,
                (unsigned long long)w->last, (unsigned long long)w->peak, (unsigned long long)w->device,
                mem4d_verdict_name(w->verdict));
        if (w->metrics)
            fprintf(out, ",%.9g,%.9g,%.9g,%.9g\n", w->step, w->tokens, w->tflops, w->mfu);
        else
            fputs(",,,,\n", out);
    }
}

/* --- the landscape (SVG) ---------------------------------------------------- */

/* Sorted unique values of one field over the rows. */
static size_t uniq(const struct rows *rs, size_t off, uint64_t *out, size_t cap)
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

/* The best of the rows in one cell: best verdict, then most TFLOP/s. */
static const struct row *cell_best(const struct rows *rs, uint64_t c, uint64_t b, uint64_t t, uint64_t p)
{
    const struct row *best = NULL;
    for (size_t i = 0; i < rs->n; i++) {
        const struct row *w = &rs->a[i];
        if (w->cp != c || w->mbs != b || w->tp != t || w->pp != p)
            continue;
        if (!best || w->verdict < best->verdict ||
            (w->verdict == best->verdict && w->metrics && (!best->metrics || w->tflops > best->tflops)))
            best = w;
    }
    return best;
}

#define SVG_CELL 46
#define SVG_PANEL_GAP 36
#define SVG_MAX_AXIS 16

static void svg_panel(FILE *f, const struct rows *rs, uint64_t c, uint64_t b, const uint64_t *ts, size_t nt,
                      const uint64_t *ps, size_t np, int x0, int y0)
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
            const struct row *w = cell_best(rs, c, b, ts[j], ps[i]);
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
static bool write_svg(const char *path, const struct rows *rs, const char *title)
{
    uint64_t cs[SVG_MAX_AXIS], bs[SVG_MAX_AXIS], ts[SVG_MAX_AXIS], ps[SVG_MAX_AXIS];
    size_t nc = uniq(rs, offsetof(struct row, cp), cs, SVG_MAX_AXIS);
    size_t nb = uniq(rs, offsetof(struct row, mbs), bs, 6);
    size_t nt = uniq(rs, offsetof(struct row, tp), ts, SVG_MAX_AXIS);
    size_t np = uniq(rs, offsetof(struct row, pp), ps, SVG_MAX_AXIS);
    FILE *f = fopen(path, "w");
    if (!f) {
        cli_error("--svg: cannot write '%s'", path);
        return false;
    }
    int pw = 30 + (int)nt * SVG_CELL + SVG_PANEL_GAP, ph = (int)np * SVG_CELL + SVG_PANEL_GAP + 24;
    int w = 20 + (int)(nb ? nb : 1) * pw, h = 80 + (int)(nc ? nc : 1) * ph;
    fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-family='sans-serif' "
            "font-size='12'>\n<rect width='100%%' height='100%%' fill='white'/>\n", w, h);
    fprintf(f, "<text x='20' y='24' font-size='15' font-weight='bold'>");
    for (const char *s = title; *s; s++)
        fputs(*s == '<' ? "&lt;" : *s == '&' ? "&amp;" : (char[2]){*s, 0}, f);
    fprintf(f, "</text>\n<text x='20' y='44'>best layout per cell (over vpp, recompute, dist_opt): "
            "TFLOP/s per GPU; green fits, amber tight, red oom (peak GiB), grey invalid</text>\n");
    for (size_t i = 0; i < nc; i++)
        for (size_t j = 0; j < nb; j++)
            svg_panel(f, rs, cs[i], bs[j], ts, nt, ps, np, 20 + (int)j * pw, 90 + (int)i * ph);
    fputs("</svg>\n", f);
    return fclose(f) == 0;
}

/* Every valid layout, for the landscape; streamed, unranked. */
static bool landscape(const struct opts *o, const mem4d_model *m, const mem4d_device *d, const mem4d_layout *base,
                      const char *title)
{
    mem4d_search *s = NULL;
    struct rows all = {0};
    struct stats st;
    bool ok = mem4d_search_new(m, d, base, &s) == MEM4D_OK &&
              mem4d_search_set_option(s, MEM4D_SEARCH_FITS_ONLY, 0) == MEM4D_OK &&
              mem4d_search_set_option(s, MEM4D_SEARCH_RANKED, 0) == MEM4D_OK &&
              apply_specs(s, o) && collect(s, &all, &st) == MEM4D_OK;
    if (ok)
        ok = write_svg(o->svg, &all, title);
    free(all.a);
    mem4d_search_free(s);
    return ok;
}

/* --- the command ------------------------------------------------------------ */

static bool fill_defaults(mem4d_layout *base)
{
    static const struct {
        mem4d_layout_param key;
        const char *value;
    } defs[] = {
        {MEM4D_LAYOUT_WORLD, DEFAULT_GPUS}, {MEM4D_LAYOUT_SEQ_LENGTH, DEFAULT_SEQ},
        {MEM4D_LAYOUT_GLOBAL_BATCH, DEFAULT_GBS},
    };
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++)
        if (mem4d_layout_set_str(base, mem4d_layout_param_name(defs[i].key), defs[i].value) != MEM4D_OK)
            return false;
    return true;
}

static mem4d_search *open_search(const struct opts *o, const mem4d_model *m, const mem4d_device *d,
                                 const mem4d_layout *base)
{
    mem4d_search *s = NULL;
    mem4d_status st = mem4d_search_new(m, d, base, &s);
    if (st != MEM4D_OK) {
        cli_error("cannot search: %s", mem4d_strerror(st));
        return NULL;
    }
    if (mem4d_search_set_option(s, MEM4D_SEARCH_FITS_ONLY, !o->all) != MEM4D_OK || !apply_specs(s, o)) {
        mem4d_search_free(s);
        return NULL;
    }
    return s;
}

static int run(const struct opts *o, const mem4d_model *m, const mem4d_device *d, const mem4d_layout *base)
{
    mem4d_search *s = open_search(o, m, d, base);
    if (!s)
        return CLI_USAGE;
    struct rows rs = {0};
    struct stats st;
    mem4d_status status = collect(s, &rs, &st);
    mem4d_search_free(s);
    int rc = CLI_USAGE;
    if (status != MEM4D_OK) {
        cli_error("search failed: %s", mem4d_strerror(status));
        goto out;
    }
    uint64_t top = o->top_set ? o->top : o->all ? 0 : DEFAULT_TOP;
    size_t n = top && top < rs.n ? (size_t)top : rs.n;
    const char *model_name = o->hf_config ? o->hf_config : mem4d_model_name(m);
    char title[256];
    snprintf(title, sizeof title, "%s on %llu x %s, seq %llu, gbs %llu", model_name,
             (unsigned long long)lget(base, MEM4D_LAYOUT_WORLD), mem4d_device_name(d),
             (unsigned long long)lget(base, MEM4D_LAYOUT_SEQ_LENGTH),
             (unsigned long long)lget(base, MEM4D_LAYOUT_GLOBAL_BATCH));
    if (o->fmt == FMT_JSON)
        print_json(stdout, &rs, n);
    else if (o->fmt == FMT_CSV)
        print_csv(stdout, &rs, n);
    else
        print_table(stdout, &rs, n, &st, model_name, mem4d_device_name(d), base, d, o->all);
    if (o->svg && !landscape(o, m, d, base, title))
        goto out;
    rc = rs.n > 0 ? CLI_OK : CLI_FAIL;
out:
    free(rs.a);
    return rc;
}

int cmd_plan(int argc, char **argv)
{
    struct opts o = {.gpu = DEFAULT_GPU};
    mem4d_layout *base = NULL;
    mem4d_model *model = NULL;
    mem4d_device *device = NULL;
    int rc = CLI_FAIL;
    if (mem4d_layout_new(&base) != MEM4D_OK || !fill_defaults(base)) {
        cli_error("out of memory");
        goto out;
    }
    rc = parse(argc, argv, &o, base);
    if (rc != CLI_OK) {
        rc = rc < 0 ? CLI_OK : rc;
        goto out;
    }
    rc = CLI_USAGE;
    if (!o.hf_config && !o.model)
        o.model = DEFAULT_MODEL;
    if (!cli_open_model(o.model, o.hf_config, &model) || !cli_open_device(o.gpu, o.gpu_bytes, &device))
        goto out;
    if (o.gpus_per_node && mem4d_device_set(device, MEM4D_DEVICE_GPUS_PER_NODE, o.gpus_per_node) != MEM4D_OK) {
        cli_error("--gpus-per-node is out of range");
        goto out;
    }
    rc = run(&o, model, device, base);
out:
    mem4d_device_free(device);
    mem4d_model_free(model);
    mem4d_layout_free(base);
    return rc;
}
