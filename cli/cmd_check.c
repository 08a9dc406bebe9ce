/*
 * mem4d check: pre-flight check of a Megatron-LM argument list. A launcher
 * runs it before `torchrun pretrain_gpt.py ...` and launches only on exit 0.
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "../lib/megatron_args.h" /* the flags a proposal replaces */

extern char **environ;

CLI_COMMAND(check);

const struct cli_option cmd_check_options[] = {
    CLI_ROWS_DEVICE,
    CLI_ROW("--world-size", CLI_UINT, CLI_TO_ARGS, CLI_FIELD(world_size), "N",
            "GPUs in the job (else WORLD_SIZE, SLURM_NTASKS, SLURM_JOB_NUM_NODES x SLURM_GPUS_ON_NODE)",
            NULL, 1, 0),
    CLI_ARG("--strict", CLI_SWITCH, strict, NULL, "exit 1 when the verdict is tight too"),
    CLI_ARG("--torchtitan-config", CLI_PATH, tt_config, "FILE",
            "check a torchtitan job TOML instead of Megatron-LM arguments (needs --model or --hf-config)"),
    CLI_LAYOUT("--mode", MEM4D_LAYOUT_MODE, NULL, "the full model, or the paper's formula exactly"),
    CLI_ROWS_MODEL("the model when the arguments do not give it (Megatron flags override it)", NULL),
    CLI_MODEL("--vocab-size", CLI_UINT, MEM4D_MODEL_VOCAB_SIZE, "N",
              "the vocabulary when only the tokenizer's files know it"),
    CLI_FORMAT("--json", CLI_FORMAT_JSON, "print a JSON object"),
    CLI_END,
};

const char cmd_check_about[] =
    "Reads the arguments given to pretrain_gpt.py, prints the memory of every pipeline\n"
    "stage and the verdict. Run it with the job's environment: PYTORCH_CUDA_ALLOC_CONF's\n"
    "expandable_segments is read. Exit status: 0 fits, 1 out of memory (or tight, with\n"
    "--strict), 2 invalid input.";

static const char *world_source_text(mem4d_world_source src)
{
    switch (src) {
    case MEM4D_WORLD_EXPLICIT: return "--world-size";
    case MEM4D_WORLD_ENV_WORLD_SIZE: return "WORLD_SIZE";
    case MEM4D_WORLD_ENV_SLURM_NTASKS: return "SLURM_NTASKS";
    case MEM4D_WORLD_ENV_SLURM_NODES: return "SLURM_JOB_NUM_NODES x GPUs per node";
    case MEM4D_WORLD_NONE: break;
    }
    return "nowhere";
}

/* Import the Megatron arguments over the model; warnings go to stderr. */
static bool import_job(const struct cli_args *o, mem4d_import *imp, mem4d_model *model)
{
    mem4d_layout *layout = o->layout;
    mem4d_status st = mem4d_import_megatron(imp, o->rest_argc, (const char *const *)o->rest_argv,
                                            (const char *const *)environ, o->world_size, model, layout);
    cli_print_warnings(imp);
    if (st != MEM4D_OK) {
        const char *msg = mem4d_import_message(imp);
        cli_error("%s", *msg ? msg : mem4d_strerror(st));
        return false;
    }
    if (mem4d_import_world_source(imp) == MEM4D_WORLD_NONE) {
        uint64_t dp = 0;
        mem4d_layout_get(layout, MEM4D_LAYOUT_DP, &dp);
        if (dp == 0) {
            cli_error("the world size is unknown: give --world-size, or run under torchrun (WORLD_SIZE) or SLURM");
            return false;
        }
    }
    uint64_t vocab = 0;
    mem4d_model_get(model, MEM4D_MODEL_VOCAB_SIZE, &vocab);
    if (vocab == 0) {
        /* Launch scripts leave it to the tokenizer, which is not at hand here. */
        cli_error("the vocabulary size is unknown: give `mem4d check --vocab-size N`, "
                  "or the model with --model NAME or --hf-config FILE");
        return false;
    }
    return true;
}

/* --torchtitan-config: the job's TOML over the model; the world size from
 * --world-size, else WORLD_SIZE (torchrun's), else the file's degrees. */
static const char *tt_world_source = "the file's degrees";

static bool import_torchtitan_job(const struct cli_args *o, mem4d_import *imp, const mem4d_model *model)
{
    uint64_t world = o->world_size;
    const char *env = getenv("WORLD_SIZE");
    if (!world && env && *env) {
        char *end;
        unsigned long long w = strtoull(env, &end, 10);
        if (*end || env[0] < '0' || env[0] > '9' || w == 0 || w > (1u << 24)) {
            cli_error("WORLD_SIZE '%.32s' is not a number of GPUs", env);
            return false;
        }
        world = w;
        tt_world_source = "WORLD_SIZE";
    }
    if (o->world_size)
        tt_world_source = "--world-size";
    if (mem4d_import_torchtitan_config(imp, o->tt_config, world, model, o->layout) != MEM4D_OK) {
        cli_error("--torchtitan-config %s: %s", o->tt_config, mem4d_import_message(imp));
        return false;
    }
    uint64_t v[4] = {1, 1, 1, 1};
    static const mem4d_layout_param k[4] = {MEM4D_LAYOUT_TP, MEM4D_LAYOUT_CP, MEM4D_LAYOUT_PP, MEM4D_LAYOUT_DP};
    for (int i = 0; i < 4; i++)
        mem4d_layout_get(o->layout, k[i], &v[i]);
    mem4d_layout_set(o->layout, MEM4D_LAYOUT_WORLD, v[0] * v[1] * v[2] * v[3]); /* each below 2^24, checked */
    cli_print_warnings(imp);
    return true;
}

static bool has_arg(const struct cli_args *o, const char *name)
{
    for (int i = 0; i < o->rest_argc; i++)
        if (strcmp(o->rest_argv[i], name) == 0)
            return true;
    return false;
}

/* When the job does not fit: the fastest layout of the same GPUs, sequence
 * and batch that does, as the Megatron-LM flags that set it, appended to the
 * job's arguments once the job's flags it replaces (drop: every flag that
 * sets a key the line writes, lib/megatron_args.h) are taken out. The line
 * leaves out switches that are off and Megatron's defaults, and argparse
 * cannot take a switch back, so a job's --sequence-parallel or recompute
 * flags would otherwise outlive a proposal that turns them off. */
struct proposal {
    bool found;
    char flags[1024];
    char drop[1024]; /* the job's words the flags replace, space-separated */
    uint64_t peak, device;
};

/* The job's arguments without the flags the proposal replaces, then its words:
 * an argument vector in words[] (pointing into argv and into text). */
static int applied_args(const struct cli_args *o, struct proposal *p, char *text, char **words, int cap)
{
    int n = 0;
    size_t used = 0;
    p->drop[0] = '\0';
    for (int i = 0; i < o->rest_argc;) {
        int w = m4d_megatron_replaced_words(o->rest_argc, (const char *const *)o->rest_argv, i);
        if (w == 0) {
            if (n < cap)
                words[n++] = o->rest_argv[i];
            i++;
            continue;
        }
        for (int k = 0; k < w; k++, i++) {
            size_t len = strlen(p->drop);
            snprintf(p->drop + len, sizeof p->drop - len, "%s%s", len ? " " : "", o->rest_argv[i]);
        }
    }
    /* the writer's words are separated by one space; a layout string is
     * single-quoted for the shell, which takes the quotes off */
    strcpy(text, p->flags);
    for (char *w = text; *w && n < cap; used++) {
        char *end = strchr(w, ' ');
        if (end)
            *end = '\0';
        size_t len = strlen(w);
        if (len >= 2 && w[0] == '\'' && w[len - 1] == '\'') {
            w[len - 1] = '\0';
            w++;
        }
        words[n++] = w;
        w = end ? end + 1 : w + len;
    }
    return used ? n : -1;
}

/* Megatron-DeepSpeed: DeepSpeed's --zero-stage, not Megatron's distributed
 * optimizer, shards the optimizer state (the reader ignores the latter there). */
static void deepspeed_zero(struct proposal *p, const mem4d_layout *best)
{
    uint64_t zero = 0, dopt = 0;
    mem4d_layout_get(best, MEM4D_LAYOUT_ZERO_STAGE, &zero);
    mem4d_layout_get(best, MEM4D_LAYOUT_DIST_OPT, &dopt);
    static const char dist[] = " --use-distributed-optimizer";
    char *at = strstr(p->flags, dist);
    if (at)
        memmove(at, at + sizeof dist - 1, strlen(at + sizeof dist - 1) + 1);
    size_t len = strlen(p->flags);
    snprintf(p->flags + len, sizeof p->flags - len, " --zero-stage %llu",
             (unsigned long long)(zero ? zero : dopt ? 1 : 0));
}

/* Read the job with the proposal applied as `check` reads a job, and judge it:
 * the proposal stands only if that command line is accepted, fits, and is
 * estimated as the layout proposed (best, of the job's model) was: the same
 * peak and step time, so that a flag the line leaves out or a reader takes
 * otherwise cannot print one layout's figures for another's line. */
static bool proposal_fits(const struct cli_args *o, const mem4d_layout *given, const mem4d_device *device,
                          const mem4d_model *job_model, const mem4d_layout *best, struct proposal *p, char *why,
                          size_t n)
{
    enum { CAP = 4096 };
    char text[sizeof p->flags];
    char **words = malloc(CAP * sizeof *words);
    mem4d_model *model = NULL;
    mem4d_layout *layout = NULL;
    mem4d_import *imp = NULL;
    mem4d_report *rep = NULL;
    bool fits = false;
    int argc = words ? applied_args(o, p, text, words, CAP) : -1;
    snprintf(why, n, "out of memory");
    if (argc < 0 || mem4d_layout_clone(given, &layout) != MEM4D_OK || mem4d_import_new(&imp) != MEM4D_OK ||
        mem4d_report_new(&rep) != MEM4D_OK)
        goto out;
    if (!((o->model || o->hf_config) ? cli_open_model(o, NULL, &model)
                                     : mem4d_model_new(&model) == MEM4D_OK && cli_apply_model_settings(o, model)))
        goto out;
    if (mem4d_import_megatron(imp, argc, (const char *const *)words, (const char *const *)environ, o->world_size,
                              model, layout) != MEM4D_OK) {
        snprintf(why, n, "%s", mem4d_import_message(imp));
        goto out;
    }
    if (mem4d_estimate(model, layout, device, rep) != MEM4D_OK) {
        snprintf(why, n, "%s", mem4d_report_message(rep));
        goto out;
    }
    fits = mem4d_report_verdict(rep) == MEM4D_VERDICT_FITS;
    p->peak = mem4d_report_peak_bytes(rep);
    p->device = mem4d_report_device_bytes(rep);
    if (!fits) {
        snprintf(why, n, "it is judged %s", mem4d_verdict_name(mem4d_report_verdict(rep)));
        goto out;
    }
    double t_line = 0, t_best = 0;
    mem4d_report_metric(rep, MEM4D_METRIC_STEP_TIME_S, &t_line);
    if (mem4d_estimate(job_model, best, device, rep) != MEM4D_OK ||
        mem4d_report_metric(rep, MEM4D_METRIC_STEP_TIME_S, &t_best) != MEM4D_OK ||
        mem4d_report_peak_bytes(rep) != p->peak || t_best != t_line) {
        fits = false;
        snprintf(why, n, "its flags read back as another layout (peak %.2f GiB, step %.3f s; proposed %.2f GiB, "
                 "%.3f s)", cli_gib(p->peak), t_line, cli_gib(mem4d_report_peak_bytes(rep)), t_best);
    }
out:
    mem4d_report_free(rep);
    mem4d_import_free(imp);
    mem4d_layout_free(layout);
    mem4d_model_free(model);
    free(words);
    return fits;
}

/* Dynamic batching (slime's --use-dynamic-batch-size): every GPU packs up
 * to --max-tokens-per-gpu tokens, N, so a context-parallel group of c GPUs
 * holds a sequence of N·c (the reader's rule). The fastest layout then has
 * the sequence of its own cp: one search per cp that divides the GPUs, with
 * cp pinned, the sequence N·c and the micro-batch 1 (the packer's), ranked by
 * tokens per second (the steps of different sequences are not comparable). */
static mem4d_status best_dynamic_layout(const mem4d_model *model, const mem4d_device *device,
                                        const mem4d_layout *job, mem4d_layout *best)
{
    uint64_t seq = 0, cp = 1, world = 0;
    mem4d_layout_get(job, MEM4D_LAYOUT_SEQ_LENGTH, &seq);
    mem4d_layout_get(job, MEM4D_LAYOUT_CP, &cp);
    mem4d_layout_get(job, MEM4D_LAYOUT_WORLD, &world);
    uint64_t per_gpu = cp ? seq / cp : 0;
    double fastest = 0;
    mem4d_status found = MEM4D_END;
    mem4d_layout *base = NULL, *cand = NULL;
    mem4d_report *crep = NULL;
    mem4d_status st = mem4d_layout_clone(job, &base);
    if (st == MEM4D_OK)
        st = mem4d_layout_new(&cand);
    if (st == MEM4D_OK)
        st = mem4d_report_new(&crep);
    for (uint64_t c = 1; st == MEM4D_OK && per_gpu && c <= world; c++) {
        mem4d_search *s = NULL;
        if (world % c || mem4d_layout_set(base, MEM4D_LAYOUT_SEQ_LENGTH, per_gpu * c) != MEM4D_OK ||
            mem4d_search_new(model, device, base, &s) != MEM4D_OK)
            continue;
        double tps = 0;
        if (mem4d_search_bound(s, MEM4D_LAYOUT_CP, c, c) == MEM4D_OK &&
            mem4d_search_bound(s, MEM4D_LAYOUT_MICRO_BATCH, 1, 1) == MEM4D_OK &&
            mem4d_search_set_option(s, MEM4D_SEARCH_MAX_RESULTS, 1) == MEM4D_OK &&
            mem4d_search_next(s, cand, crep) == MEM4D_OK &&
            mem4d_report_metric(crep, MEM4D_METRIC_TOKENS_PER_S, &tps) == MEM4D_OK && tps > fastest) {
            fastest = tps;
            found = MEM4D_OK;
            st = mem4d_layout_copy(best, cand);
        }
        mem4d_search_free(s);
    }
    mem4d_report_free(crep);
    mem4d_layout_free(cand);
    mem4d_layout_free(base);
    return st == MEM4D_OK ? found : st;
}

static void propose(const struct cli_args *o, const mem4d_layout *given, const mem4d_model *model,
                    const mem4d_device *device, const mem4d_layout *job, struct proposal *p)
{
    mem4d_layout *best = NULL, *base = NULL;
    mem4d_report *rep = NULL;
    mem4d_status st = mem4d_layout_new(&best);
    if (st == MEM4D_OK)
        st = mem4d_report_new(&rep);
    /* The layouts searched are run as Megatron-LM runs them: a job without
     * virtual stages reads overlap_p2p_comm off, but an interleaved layout
     * proposed for it overlaps its transfers, Megatron-LM's default there
     * (the step time reads the key only when interleaved), unless the job
     * turns it off */
    if (st == MEM4D_OK)
        st = mem4d_layout_clone(job, &base);
    if (st == MEM4D_OK && !has_arg(o, "--no-overlap-p2p-communication"))
        st = mem4d_layout_set(base, MEM4D_LAYOUT_OVERLAP_P2P_COMM, 1);
    if (st == MEM4D_OK)
        st = has_arg(o, "--use-dynamic-batch-size") ? best_dynamic_layout(model, device, base, best)
                                                     : mem4d_solve_best_layout(model, device, base, best, rep);
    if (st == MEM4D_OK)
        st = mem4d_layout_megatron_args(model, best, p->flags, sizeof p->flags, NULL);
    p->found = st == MEM4D_OK;
    if (p->found && has_arg(o, "--deepspeed"))
        deepspeed_zero(p, best);
    char why[512];
    if (p->found && !proposal_fits(o, given, device, model, best, p, why, sizeof why)) {
        /* never a proposal that does not hold: say what went wrong */
        fprintf(stderr, "mem4d: warning: the best layout found (%s) does not hold over this job's flags: %s\n",
                p->flags, cli_text(why));
        p->found = false;
    }
    mem4d_report_free(rep);
    mem4d_layout_free(base);
    mem4d_layout_free(best);
}

static const char *tt_source(const struct cli_args *o, const mem4d_import *imp)
{
    return o->tt_config ? tt_world_source : world_source_text(mem4d_import_world_source(imp));
}

static void print_json(FILE *out, const struct cli_args *o, const mem4d_import *imp, const mem4d_model *model,
                       const mem4d_layout *layout, const mem4d_device *device, const mem4d_report *report, int status,
                       const struct proposal *p)
{
    uint64_t world = 0;
    mem4d_layout_get(layout, MEM4D_LAYOUT_WORLD, &world);
    fprintf(out, "{\"exit_status\": %d, \"world_size\": %llu, \"world_source\": ", status,
            (unsigned long long)world);
    cli_json_string(out, tt_source(o, imp));
    fprintf(out, ", \"warnings\": [");
    for (size_t i = 0; i < mem4d_import_warning_count(imp); i++) {
        fputs(i ? ", " : "", out);
        cli_json_string(out, mem4d_import_warning(imp, i));
    }
    fprintf(out, "], \"proposal\": ");
    if (p->found) {
        fprintf(out, "{\"megatron_flags\": ");
        cli_json_string(out, p->flags);
        fprintf(out, ", \"replaces\": ");
        cli_json_string(out, p->drop);
        fprintf(out, ", \"peak_bytes\": %llu, \"device_bytes\": %llu}", (unsigned long long)p->peak,
                (unsigned long long)p->device);
    } else {
        fputs("null", out);
    }
    fprintf(out, ", \"report\": ");
    cli_print_report_json(out, model, report, layout, device);
    fprintf(out, "}\n");
}

static int verdict_status(const struct cli_args *o, mem4d_verdict v)
{
    if (v == MEM4D_VERDICT_OOM || (v == MEM4D_VERDICT_TIGHT && o->strict))
        return CLI_FAIL;
    return CLI_OK;
}

static int run_check(const struct cli_args *o, mem4d_model *model, mem4d_device *device)
{
    mem4d_import *imp = NULL;
    mem4d_layout *layout = o->layout, *given = NULL;
    mem4d_report *report = NULL;
    int status = CLI_USAGE;
    if (mem4d_import_new(&imp) != MEM4D_OK || mem4d_report_new(&report) != MEM4D_OK ||
        mem4d_layout_clone(layout, &given) != MEM4D_OK) {
        cli_error("out of memory");
        goto out;
    }
    if (o->tt_config ? !import_torchtitan_job(o, imp, model) : !import_job(o, imp, model))
        goto out;
    mem4d_status st = mem4d_estimate(model, layout, device, report);
    if (st != MEM4D_OK) {
        const char *msg = mem4d_report_message(report);
        cli_error("%s", *msg ? msg : mem4d_strerror(st));
        goto out;
    }
    mem4d_verdict v = mem4d_report_verdict(report);
    status = verdict_status(o, v);
    struct proposal p = {.found = false};
    if (status != CLI_OK && !o->tt_config) /* the proposal is Megatron-LM flags */
        propose(o, given, model, device, layout, &p);
    if (o->format == CLI_FORMAT_JSON) {
        print_json(stdout, o, imp, model, layout, device, report, status, &p);
    } else {
        uint64_t world = 0;
        mem4d_layout_get(layout, MEM4D_LAYOUT_WORLD, &world);
        printf("world size %llu (from %s)\n", (unsigned long long)world,
               tt_source(o, imp));
        cli_print_report(stdout, model, layout, device, report);
        printf("check: %s%s\n", mem4d_verdict_name(v),
               status == CLI_OK ? ", the job may launch"
                                : (v == MEM4D_VERDICT_OOM ? ", the job would run out of memory"
                                                          : ", too close to the limit (--strict)"));
        if (p.found)
            printf("check: propose %s (peak %.1f GiB of %.1f GiB)\n", p.flags, cli_gib(p.peak), cli_gib(p.device));
        if (p.found && p.drop[0])
            printf("check: in place of the job's %s\n", cli_text(p.drop));
        else if (!p.found && status != CLI_OK)
            printf("check: no layout of these %llu GPUs fits either\n", (unsigned long long)world);
    }
out:
    mem4d_layout_free(given);
    mem4d_report_free(report);
    mem4d_import_free(imp);
    return status;
}

int cmd_check(struct cli_args *o)
{
    if (o->rest_argc == 0 && !o->tt_config) {
        cli_error("no Megatron-LM arguments (give them after --, or --torchtitan-config FILE)");
        return CLI_USAGE;
    }
    if (o->tt_config && (o->rest_argc > 0 || !(o->model || o->hf_config))) {
        cli_error(o->rest_argc ? "--torchtitan-config and Megatron-LM arguments contradict each other"
                               : "--torchtitan-config needs the model: --model NAME or --hf-config FILE");
        return CLI_USAGE;
    }
    mem4d_device *device = NULL;
    mem4d_model *model = NULL;
    if (!cli_open_device(o, &device))
        return CLI_USAGE;
    bool ok = (o->model || o->hf_config) ? cli_open_model(o, NULL, &model)
                                         : mem4d_model_new(&model) == MEM4D_OK && cli_apply_model_settings(o, model);
    int status = ok ? run_check(o, model, device) : CLI_USAGE;
    mem4d_model_free(model);
    mem4d_device_free(device);
    return status;
}
