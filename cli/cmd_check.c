/*
 * mem4d check: pre-flight check of a Megatron-LM argument list. A launcher
 * runs it before `torchrun pretrain_gpt.py ...` and launches only on exit 0.
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"

extern char **environ;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: mem4d check [--gpu NAME] [--gpu-memory-gib X] [--world-size N] [--strict]\n"
            "                   [--mode paper|full] [--model NAME | --hf-config FILE] [--json]\n"
            "                   -- MEGATRON-ARGS...\n"
            "Reads the arguments given to pretrain_gpt.py, prints the memory of every pipeline\n"
            "stage and the verdict. The world size comes from --world-size, else WORLD_SIZE,\n"
            "else SLURM_NTASKS, else SLURM_JOB_NUM_NODES x SLURM_GPUS_ON_NODE. --model or\n"
            "--hf-config give the model when the arguments do not (Megatron flags override it).\n"
            "Exit status: 0 fits, 1 out of memory (or tight, with --strict), 2 invalid input.\n"
            "--gpu defaults to h100-80.\n");
}

struct check_opts {
    const char *gpu, *model, *hf_config;
    uint64_t gpu_bytes, world;
    bool strict, json, help;
    const char *mode;
    int margc;           /* Megatron arguments */
    const char *const *margv;
};

/* "--flag value" or "--flag=value"; NULL when argv[*i] is not this flag. */
static const char *opt_value(int argc, char **argv, int *i, const char *flag, bool *missing)
{
    size_t n = strlen(flag);
    if (strncmp(argv[*i], flag, n) != 0 || (argv[*i][n] != '\0' && argv[*i][n] != '='))
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (*i + 1 >= argc || !strcmp(argv[*i + 1], "--")) {
        *missing = true;
        return NULL;
    }
    return argv[++*i];
}

static bool parse_opts(int argc, char **argv, struct check_opts *o)
{
    int i;
    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *a = argv[i], *v;
        bool missing = false;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            o->help = true;
            return true;
        } else if (!strcmp(a, "--strict")) {
            o->strict = true;
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if ((v = opt_value(argc, argv, &i, "--gpu", &missing))) {
            o->gpu = v;
        } else if ((v = opt_value(argc, argv, &i, "--model", &missing))) {
            o->model = v;
        } else if ((v = opt_value(argc, argv, &i, "--hf-config", &missing))) {
            o->hf_config = v;
        } else if ((v = opt_value(argc, argv, &i, "--mode", &missing))) {
            o->mode = v;
        } else if ((v = opt_value(argc, argv, &i, "--gpu-memory-gib", &missing))) {
            if (!cli_parse_gib("--gpu-memory-gib", v, &o->gpu_bytes))
                return false;
        } else if ((v = opt_value(argc, argv, &i, "--world-size", &missing))) {
            if (!cli_parse_u64("--world-size", v, &o->world))
                return false;
            if (o->world == 0) {
                cli_error("--world-size must be at least 1");
                return false;
            }
        } else {
            if (missing)
                cli_error("%s needs a value", a);
            else
                cli_error("unknown option '%s' (Megatron-LM arguments go after --)", a);
            return false;
        }
    }
    if (o->model && o->hf_config) {
        cli_error("--model and --hf-config contradict each other");
        return false;
    }
    if (i < argc)
        i++; /* the "--" */
    o->margc = argc - i;
    o->margv = (const char *const *)argv + i;
    return true;
}

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
static bool import_job(const struct check_opts *o, mem4d_import *imp, mem4d_model *model, mem4d_layout *layout)
{
    mem4d_status st = mem4d_import_megatron(imp, o->margc, o->margv, (const char *const *)environ, o->world,
                                            model, layout);
    for (size_t i = 0; i < mem4d_import_warning_count(imp); i++)
        fprintf(stderr, "mem4d: warning: %s\n", mem4d_import_warning(imp, i));
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
        cli_error("the vocabulary size is unknown: add --vocab-size N to the Megatron-LM arguments, "
                  "or give the model with --model NAME or --hf-config FILE");
        return false;
    }
    if (o->mode && !cli_layout_set(layout, "--mode", MEM4D_LAYOUT_MODE, o->mode))
        return false;
    return true;
}

static void print_json(FILE *out, const mem4d_import *imp, const mem4d_layout *layout,
                       const mem4d_report *report, int status)
{
    uint64_t world = 0;
    mem4d_layout_get(layout, MEM4D_LAYOUT_WORLD, &world);
    fprintf(out, "{\"exit_status\": %d, \"world_size\": %llu, \"world_source\": ", status,
            (unsigned long long)world);
    cli_json_string(out, world_source_text(mem4d_import_world_source(imp)));
    fprintf(out, ", \"warnings\": [");
    for (size_t i = 0; i < mem4d_import_warning_count(imp); i++) {
        fputs(i ? ", " : "", out);
        cli_json_string(out, mem4d_import_warning(imp, i));
    }
    fprintf(out, "], \"report\": ");
    cli_print_report_json(out, report);
    fprintf(out, "}\n");
}

static int verdict_status(const struct check_opts *o, mem4d_verdict v)
{
    if (v == MEM4D_VERDICT_OOM || (v == MEM4D_VERDICT_TIGHT && o->strict))
        return CLI_FAIL;
    return CLI_OK;
}

static int run_check(const struct check_opts *o, mem4d_model *model, mem4d_device *device)
{
    mem4d_import *imp = NULL;
    mem4d_layout *layout = NULL;
    mem4d_report *report = NULL;
    int status = CLI_USAGE;
    if (mem4d_import_new(&imp) != MEM4D_OK || mem4d_layout_new(&layout) != MEM4D_OK ||
        mem4d_report_new(&report) != MEM4D_OK) {
        cli_error("out of memory");
        goto out;
    }
    if (!import_job(o, imp, model, layout))
        goto out;
    mem4d_status st = mem4d_estimate(model, layout, device, report);
    if (st != MEM4D_OK) {
        const char *msg = mem4d_report_message(report);
        cli_error("%s", *msg ? msg : mem4d_strerror(st));
        goto out;
    }
    mem4d_verdict v = mem4d_report_verdict(report);
    status = verdict_status(o, v);
    if (o->json) {
        print_json(stdout, imp, layout, report, status);
    } else {
        uint64_t world = 0;
        mem4d_layout_get(layout, MEM4D_LAYOUT_WORLD, &world);
        printf("world size %llu (from %s)\n", (unsigned long long)world,
               world_source_text(mem4d_import_world_source(imp)));
        cli_print_report(stdout, model, layout, device, report);
        printf("check: %s%s\n", mem4d_verdict_name(v),
               status == CLI_OK ? ", the job may launch"
                                : (v == MEM4D_VERDICT_OOM ? ", the job would run out of memory"
                                                          : ", too close to the limit (--strict)"));
    }
out:
    mem4d_report_free(report);
    mem4d_layout_free(layout);
    mem4d_import_free(imp);
    return status;
}

int cmd_check(int argc, char **argv)
{
    struct check_opts o = {.gpu = "h100-80"};
    if (!parse_opts(argc, argv, &o))
        return CLI_USAGE;
    if (o.help) {
        usage(stdout);
        return CLI_OK;
    }
    if (o.margc == 0) {
        cli_error("no Megatron-LM arguments (give them after --)");
        usage(stderr);
        return CLI_USAGE;
    }
    mem4d_device *device = NULL;
    mem4d_model *model = NULL;
    if (!cli_open_device(o.gpu, o.gpu_bytes, &device))
        return CLI_USAGE;
    bool ok = (o.model || o.hf_config) ? cli_open_model(o.model, o.hf_config, &model)
                                       : mem4d_model_new(&model) == MEM4D_OK;
    int status = ok ? run_check(&o, model, device) : CLI_USAGE;
    mem4d_model_free(model);
    mem4d_device_free(device);
    return status;
}
