/*
 * mem4d plan: every valid layout of a model on N GPUs, filtered by memory
 * and ranked by predicted step time. The printers: print_plan.c.
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "print_plan.h"

/* Rows listed when neither --top nor --all is given. */
#define DEFAULT_TOP 20

CLI_COMMAND(plan);

const struct cli_option cmd_plan_options[] = {
    CLI_ROWS_MODEL("the model, a built-in preset (mem4d presets)", "llama3.1-70b"),
    CLI_ROWS_DEVICE,
    CLI_ROW("--gpus", CLI_VALUE, CLI_TO_LAYOUT, MEM4D_LAYOUT_WORLD, "N", "GPUs in the job", "64", 1, 0),
    CLI_ROW("--seq", CLI_VALUE, CLI_TO_LAYOUT, MEM4D_LAYOUT_SEQ_LENGTH, "S", "sequence length", "8192", 1, 0),
    CLI_ROW("--gbs", CLI_VALUE, CLI_TO_LAYOUT, MEM4D_LAYOUT_GLOBAL_BATCH, "G",
            "global batch size (the step time needs it)", "512", 1, 0),
    CLI_DEVICE("--gpus-per-node", CLI_UINT, MEM4D_DEVICE_GPUS_PER_NODE, "K", "GPUs per node, instead of the preset's"),
    CLI_LAYOUT("--mode", MEM4D_LAYOUT_MODE, NULL, "the full model, or the paper's formula exactly"),
    CLI_LAYOUT("--framework", MEM4D_LAYOUT_FRAMEWORK, NULL, "the framework whose buffers and defaults apply; the speed's software stack is --device-set stack=NAME"),
    CLI_SEARCH("--tp", MEM4D_LAYOUT_TP, "tensor-parallel sizes searched"),
    CLI_SEARCH("--cp", MEM4D_LAYOUT_CP, "context-parallel sizes searched"),
    CLI_SEARCH("--pp", MEM4D_LAYOUT_PP, "pipeline-parallel sizes searched"),
    CLI_SEARCH("--dp", MEM4D_LAYOUT_DP, "data-parallel sizes searched"),
    CLI_SEARCH("--mbs", MEM4D_LAYOUT_MICRO_BATCH, "micro-batch sizes searched"),
    CLI_SEARCH("--vpp", MEM4D_LAYOUT_VPP, "virtual pipeline chunks searched"),
    CLI_SEARCH("--recompute", MEM4D_LAYOUT_RECOMPUTE, "recomputation searched (none, selective, full; op under torchtitan)"),
    CLI_SEARCH("--dist-opt", MEM4D_LAYOUT_DIST_OPT, "distributed optimizer searched (false, true)"),
    CLI_SEARCH("--ep", MEM4D_LAYOUT_EP, "expert-parallel sizes searched (a model with experts, ep not set)"),
    CLI_SEARCH("--etp", MEM4D_LAYOUT_ETP, "experts' tensor-parallel sizes searched (1 or tp)"),
    CLI_SEARCH("--dispatcher", MEM4D_LAYOUT_MOE_DISPATCHER, "MoE dispatchers searched (alltoall, allgather, deepep, hybridep; hybridep only on 900 GB/s NVLink unless listed)"),
    CLI_ARG("--cross-node", CLI_SWITCH, cross_node, NULL, "let tp x cp exceed the GPUs of a node"),
    CLI_ARG("--even-stages", CLI_SWITCH, even_stages, NULL, "skip pp that do not divide the layers"),
    CLI_ROW("--set", CLI_KEYVAL, CLI_TO_LAYOUT, 0, "KEY=VALUE", "any layout key of the job, by name", NULL, 0, 0),
    CLI_ARG("--torchtitan-config", CLI_PATH, tt_config, "FILE",
            "a torchtitan job TOML: its batch, recompute, precision, float8 and compile (the knobs searched "
            "stay searched); values set on the command line win"),
    CLI_ARG("--top", CLI_UINT, top, "K", "print the first K (default 20, 0 for all; with --all: all)"),
    CLI_ARG("--all", CLI_SWITCH, all, NULL, "also list layouts that do not fit (never eq =)"),
    CLI_FORMAT("--json", CLI_FORMAT_JSON, "print an array of objects"),
    CLI_FORMAT("--csv", CLI_FORMAT_CSV, "print one row per layout"),
    CLI_ARG("--svg", CLI_OUTPUT, svg, "FILE", "also draw the landscape of every layout as SVG"),
    CLI_END,
};

const char cmd_plan_about[] =
    "Searches every valid layout (tp, cp, pp, dp, micro-batch, vpp, recompute, distributed\n"
    "optimizer) and lists those that fit (total <= 85% of GPU memory in full mode, 80% in\n"
    "paper mode), ranked by the step-time model (doc/perf.md): the layouts whose speed\n"
    "overlaps the fastest's under the band between layouts of one job (eq =; narrower than\n"
    "the tokens/s band shown, a measured run's) first, by fewer model-parallel GPUs\n"
    "(tp x cp x pp), then step time; then the others, fastest first.\n"
    "A SPEC fixes a knob (--pp 1), bounds it (--tp 1-4) or lists values (--mbs 1,2,4).\n"
    "A pp that does not divide the layers gets lighter first and last stages (pp 16 over\n"
    "126 layers: 7+14x8+7, shown as 16/7). The SVG is a tp x pp grid per cp and\n"
    "micro-batch, coloured by verdict and labelled with TFLOP/s per GPU.\n"
    "Exit status: 0 when a layout fits, 1 when none fits (with --all too, which lists\n"
    "them all the same), 2 on errors.";

/* Hand the knob constraints to the search; each error names its flag. */
static bool apply_specs(mem4d_search *s, const struct cli_args *o)
{
    if (mem4d_search_set_option(s, MEM4D_SEARCH_NODE_LOCAL, !o->cross_node) != MEM4D_OK ||
        mem4d_search_set_option(s, MEM4D_SEARCH_UNEVEN_STAGES, !o->even_stages) != MEM4D_OK) {
        cli_error("cannot set the search's options");
        return false;
    }
    for (size_t k = 0; k < o->n_spec; k++) {
        const struct cli_spec *sp = &o->spec[k];
        mem4d_status st = sp->is_list ? mem4d_search_allow(s, sp->key, sp->list, sp->n)
                                      : mem4d_search_bound(s, sp->key, sp->lo, sp->hi);
        if (st == MEM4D_E_RANGE && sp->is_list)
            cli_error("%s: at most %d values, each within the key's bounds", sp->flag, CLI_MAX_LIST);
        else if (st == MEM4D_E_RANGE)
            cli_error("%s %llu-%llu: none of these is a size the search tries (tp, cp and pp up to the GPUs and "
                      "layers, mbs up to the batch)", sp->flag, (unsigned long long)sp->lo,
                      (unsigned long long)sp->hi);
        else if (st != MEM4D_OK)
            cli_error("%s: %s", sp->flag, mem4d_strerror(st));
        if (st != MEM4D_OK)
            return false;
    }
    return true;
}

static uint64_t lget(const mem4d_layout *l, mem4d_layout_param k)
{
    uint64_t v = 0;
    mem4d_layout_get(l, k, &v);
    return v;
}

/* Two warnings alike but for their figures (each row's "MFU 115.4%"): one
 * warning, said with the first row's figures. */
static bool same_warning(const char *a, const char *b)
{
    while (*a && *b) {
        if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
            a += strspn(a, "0123456789.");
            b += strspn(b, "0123456789.");
        } else if (*a++ != *b++) {
            return false;
        }
    }
    return *a == *b;
}

/* Values a knob's SPEC gives that the job's framework or mode does not model
 * (recompute op, torchtitan's policy, under Megatron; full recompute in paper
 * mode: mem4d_layout_param_applies()): the search leaves them out, so a SPEC of
 * those alone is refused with the reason, and each one beside others is
 * warned about. A wide numeric range is not walked (no such key limits it). */
static bool specs_apply_to_job(const struct cli_args *o, const mem4d_layout *base)
{
    mem4d_framework fw = (mem4d_framework)lget(base, MEM4D_LAYOUT_FRAMEWORK);
    mem4d_mode mode = (mem4d_mode)lget(base, MEM4D_LAYOUT_MODE);
    for (size_t k = 0; k < o->n_spec; k++) {
        const struct cli_spec *sp = &o->spec[k];
        uint64_t n = sp->is_list ? sp->n : sp->hi - sp->lo + 1, refused = 0;
        char why[256] = "";
        for (uint64_t i = 0; n <= 4096 && i < n; i++) {
            uint64_t v = sp->is_list ? sp->list[i] : sp->lo + i;
            if (mem4d_layout_param_applies(sp->key, v, fw, mode, why, sizeof why) == MEM4D_OK)
                continue;
            if (++refused < n)
                fprintf(stderr, "mem4d: warning: %s: %s; not searched\n", sp->flag, cli_text(why));
        }
        if (n && refused == n) {
            cli_error("%s: %s", sp->flag, why);
            return false;
        }
    }
    return true;
}

/* Drain a search into rows. */
static mem4d_status collect(mem4d_search *s, const mem4d_device *dev, struct plan_rows *rs, struct plan_stats *st)
{
    mem4d_layout *l = NULL;
    mem4d_report *r = NULL;
    mem4d_status status = MEM4D_E_NOMEM;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (mem4d_layout_new(&l) == MEM4D_OK && mem4d_report_new(&r) == MEM4D_OK) {
        while ((status = mem4d_search_next(s, l, r)) == MEM4D_OK) {
            if (!plan_rows_push(rs, l, r, dev)) {
                status = MEM4D_E_NOMEM;
                break;
            }
            for (size_t i = 0; i < mem4d_report_warning_count(r); i++) {
                const char *w = mem4d_report_warning(r, i);
                size_t k = 0;
                while (k < st->nwarn && !same_warning(st->warn[k], w))
                    k++;
                if (k == st->nwarn && k < sizeof st->warn / sizeof st->warn[0])
                    snprintf(st->warn[st->nwarn++], sizeof st->warn[0], "%s", w);
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    st->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_VISITED, &st->visited);
    mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_PRUNED, &st->pruned);
    mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_VALID, &st->valid);
    uint64_t eq = 0;
    mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_EQUIVALENT, &eq);
    for (size_t i = 0; i < rs->n && i < eq; i++)
        rs->a[i].equivalent = true;
    mem4d_report_free(r);
    mem4d_layout_free(l);
    return status == MEM4D_END ? MEM4D_OK : status;
}

/* Every valid layout, for the landscape; streamed, unranked. */
static bool landscape(const struct cli_args *o, const mem4d_model *m, const mem4d_device *d, const mem4d_layout *base,
                      const char *title)
{
    mem4d_search *s = NULL;
    struct plan_rows all = {0};
    struct plan_stats st;
    bool ok = mem4d_search_new(m, d, base, &s) == MEM4D_OK &&
              mem4d_search_set_option(s, MEM4D_SEARCH_FITS_ONLY, 0) == MEM4D_OK &&
              mem4d_search_set_option(s, MEM4D_SEARCH_RANKED, 0) == MEM4D_OK &&
              apply_specs(s, o) && collect(s, d, &all, &st) == MEM4D_OK;
    if (ok)
        ok = plan_write_svg(o->svg, &all, title);
    free(all.a);
    mem4d_search_free(s);
    return ok;
}
static mem4d_search *open_search(const struct cli_args *o, const mem4d_model *m, const mem4d_device *d,
                                 const mem4d_layout *base)
{
    mem4d_search *s = NULL;
    mem4d_status st = mem4d_search_new(m, d, base, &s);
    if (st != MEM4D_OK) {
        cli_error("cannot search: %s", mem4d_strerror(st));
        return NULL;
    }
    if (mem4d_search_set_option(s, MEM4D_SEARCH_FITS_ONLY, !o->all) != MEM4D_OK ||
        mem4d_search_set_option(s, MEM4D_SEARCH_TIE_BREAK, 1) != MEM4D_OK || !apply_specs(s, o)) {
        mem4d_search_free(s);
        return NULL;
    }
    return s;
}

/* The device's refusal of the plainest split l with each dispatcher
 * --dispatcher lists (HybridEP on an A100 or an MI300X: m4d_check_device()),
 * at ep 2 where the layout leaves ep to the search: true, with the last one's
 * reason in text, when the device refuses every one. */
static bool dispatchers_refused(const struct cli_args *o, const mem4d_model *m, const mem4d_device *d,
                                const mem4d_layout *l, mem4d_report *r, char *text, size_t size)
{
    const struct cli_spec *sp = NULL;
    for (size_t k = 0; k < o->n_spec; k++)
        if (o->spec[k].key == MEM4D_LAYOUT_MOE_DISPATCHER)
            sp = &o->spec[k];
    mem4d_layout *t = NULL;
    bool refused = sp && mem4d_layout_clone(l, &t) == MEM4D_OK;
    if (refused && lget(l, MEM4D_LAYOUT_EP) <= 1)
        mem4d_layout_set(t, MEM4D_LAYOUT_EP, 2);
    size_t n = !sp ? 0 : sp->is_list ? sp->n : (size_t)(sp->hi - sp->lo + 1); /* a list, or one value or a range */
    for (size_t i = 0; refused && i < n; i++)
        refused = mem4d_layout_set(t, MEM4D_LAYOUT_MOE_DISPATCHER, sp->is_list ? sp->list[i] : sp->lo + i) ==
                      MEM4D_OK && mem4d_estimate(m, t, d, r) == MEM4D_E_CONFLICT;
    if (refused)
        snprintf(text, size, "%s", mem4d_report_message(r)); /* the last one's */
    mem4d_layout_free(t);
    return refused;
}

/* One value of a spec: its name for a choice (recompute, dispatcher), else the number. */
static int spec_value(char *out, size_t size, mem4d_layout_param key, uint64_t v)
{
    const char *name = mem4d_layout_value_name(key, v);
    return name ? snprintf(out, size, "%s", name) : snprintf(out, size, "%llu", (unsigned long long)v);
}

/* The knob bounds given, as typed: "--tp 16, --pp 1,2, --mbs 1-4". */
static void specs_text(const struct cli_args *o, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t k = 0; k < o->n_spec && used < size; k++) {
        const struct cli_spec *sp = &o->spec[k];
        used += (size_t)snprintf(out + used, size - used, "%s%s ", k ? ", " : "", sp->flag);
        size_t n = sp->is_list ? sp->n : 1;
        for (size_t i = 0; i < n && used < size; i++) {
            if (i)
                used += (size_t)snprintf(out + used, size - used, ",");
            if (used < size)
                used += (size_t)spec_value(out + used, size - used, sp->key, sp->is_list ? sp->list[i] : sp->lo);
        }
        if (!sp->is_list && sp->hi != sp->lo && used < size) {
            used += (size_t)snprintf(out + used, size - used, "-");
            if (used < size)
                used += (size_t)spec_value(out + used, size - used, sp->key, sp->hi);
        }
    }
}

/* Why no layout is valid: the rule the plainest split (tp = cp = pp = 1,
 * every GPU data-parallel, one sample a micro-batch unless bound) breaks. */
static void why_none_valid(const struct cli_args *o, const mem4d_model *m, const mem4d_device *d,
                           const mem4d_layout *base, char *why, size_t size)
{
    mem4d_layout *l = NULL;
    mem4d_report *r = NULL;
    char text[256] = "";
    if (mem4d_layout_clone(base, &l) == MEM4D_OK) {
        mem4d_layout_set(l, MEM4D_LAYOUT_TP, 1);
        mem4d_layout_set(l, MEM4D_LAYOUT_CP, 1);
        mem4d_layout_set(l, MEM4D_LAYOUT_PP, 1);
        mem4d_layout_set(l, MEM4D_LAYOUT_DP, 0);
        /* the rules of the layout alone, then those of the device (DeepEP over 4-GPU nodes, HybridEP
         * before Hopper), with the layout's dispatcher or the ones listed */
        if (mem4d_validate(m, l, text, sizeof text) == MEM4D_OK) {
            if (mem4d_report_new(&r) == MEM4D_OK && mem4d_estimate(m, l, d, r) == MEM4D_E_CONFLICT)
                snprintf(text, sizeof text, "%s", mem4d_report_message(r));
            else if (!r || !dispatchers_refused(o, m, d, l, r, text, sizeof text)) {
                char given[128];
                specs_text(o, given, sizeof given);
                snprintf(text, sizeof text, "tp, cp and pp of 1 are valid alone; the bounds given (%s) exclude them "
                         "(tp x cp x pp x dp = %llu, micro-batch x dp divides gbs %llu)", given,
                         (unsigned long long)lget(base, MEM4D_LAYOUT_WORLD),
                         (unsigned long long)lget(base, MEM4D_LAYOUT_GLOBAL_BATCH));
            }
            mem4d_report_free(r);
        }
        mem4d_layout_free(l);
    }
    snprintf(why, size, "with tp 1, cp 1, pp 1, dp %llu: %s", (unsigned long long)lget(base, MEM4D_LAYOUT_WORLD),
             text);
}

static int run(const struct cli_args *o, const mem4d_model *m, const mem4d_device *d, const mem4d_layout *base)
{
    uint64_t world = lget(base, MEM4D_LAYOUT_WORLD), gpn = 0;
    mem4d_device_get(d, MEM4D_DEVICE_GPUS_PER_NODE, &gpn);
    if (gpn && world > gpn && world % gpn) {
        cli_error("--gpus %llu is not a whole number of nodes of %llu GPUs (--gpus-per-node): %llu nodes hold "
                  "%llu, %llu nodes %llu", (unsigned long long)world, (unsigned long long)gpn,
                  (unsigned long long)(world / gpn), (unsigned long long)(world / gpn * gpn),
                  (unsigned long long)(world / gpn + 1), (unsigned long long)((world / gpn + 1) * gpn));
        return CLI_USAGE;
    }
    mem4d_search *s = specs_apply_to_job(o, base) ? open_search(o, m, d, base) : NULL;
    if (!s)
        return CLI_USAGE;
    struct plan_rows rs = {0};
    struct plan_stats st = {0};
    mem4d_status status = collect(s, d, &rs, &st);
    mem4d_search_free(s);
    int rc = CLI_USAGE;
    if (status != MEM4D_OK) {
        cli_error("search failed: %s", mem4d_strerror(status));
        goto out;
    }
    if (st.valid == 0)
        why_none_valid(o, m, d, base, st.why, sizeof st.why);
    for (size_t i = 0; i < st.nwarn; i++) /* on stderr: the JSON and CSV stay parseable */
        fprintf(stderr, "mem4d: warning: %s\n", cli_text(st.warn[i]));
    uint64_t top = cli_given(o, "--top") ? o->top : o->all ? 0 : DEFAULT_TOP;
    size_t n = top && top < rs.n ? (size_t)top : rs.n;
    const char *model_name = o->hf_config ? o->hf_config : mem4d_model_name(m);
    char title[256];
    snprintf(title, sizeof title, "%s on %llu x %s, seq %llu, gbs %llu", model_name,
             (unsigned long long)lget(base, MEM4D_LAYOUT_WORLD), mem4d_device_name(d),
             (unsigned long long)lget(base, MEM4D_LAYOUT_SEQ_LENGTH),
             (unsigned long long)lget(base, MEM4D_LAYOUT_GLOBAL_BATCH));
    if (o->format == CLI_FORMAT_JSON)
        plan_print_json(stdout, &rs, n);
    else if (o->format == CLI_FORMAT_CSV)
        plan_print_csv(stdout, &rs, n);
    else
        plan_print_table(stdout, &rs, n, &st, model_name, mem4d_device_name(d), base, d, o->all);
    if (o->svg && !landscape(o, m, d, base, title))
        goto out;
    /* with --all the rows that do not fit are listed too: the status says whether one fits, as --help does */
    rc = plan_rows_fitting(&rs) > 0 ? CLI_OK : CLI_FAIL;
out:
    free(rs.a);
    return rc;
}

/* --- the command ------------------------------------------------------------ */

int cmd_plan(struct cli_args *o)
{
    mem4d_model *model = NULL;
    mem4d_device *device = NULL;
    int rc = CLI_USAGE;
    if (cli_open_model(o, NULL, &model) && cli_open_device(o, &device) && cli_apply_job_files(o, model))
        rc = run(o, model, device, o->layout);
    mem4d_device_free(device);
    mem4d_model_free(model);
    return rc;
}
