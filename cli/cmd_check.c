/*
 * mem4d check: pre-flight check of a Megatron-LM argument list. A launcher
 * runs it before `torchrun pretrain_gpt.py ...` and launches only on exit 0.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

extern char **environ;

CLI_COMMAND(check);

const struct cli_option cmd_check_options[] = {
    CLI_ROWS_DEVICE,
    CLI_ROW("--world-size", CLI_UINT, CLI_TO_ARGS, CLI_FIELD(world_size), "N",
            "GPUs in the job (else WORLD_SIZE, SLURM_NTASKS, SLURM_JOB_NUM_NODES x SLURM_GPUS_ON_NODE)",
            NULL, 1, 0),
    CLI_ARG("--strict", CLI_SWITCH, strict, NULL, "exit 1 when the verdict is tight too"),
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

/* When the job does not fit: the fastest layout of the same GPUs, sequence
 * and batch that does, as the Megatron-LM flags that set it. */
struct proposal {
    bool found;
    char flags[1024];
    uint64_t peak, device;
};

static void propose(const mem4d_model *model, const mem4d_device *device, const mem4d_layout *job,
                    struct proposal *p)
{
    mem4d_layout *best = NULL;
    mem4d_report *rep = NULL;
    mem4d_status st = mem4d_layout_new(&best);
    if (st == MEM4D_OK)
        st = mem4d_report_new(&rep);
    if (st == MEM4D_OK)
        st = mem4d_solve_best_layout(model, device, job, best, rep);
    if (st == MEM4D_OK)
        st = mem4d_layout_megatron_args(model, best, p->flags, sizeof p->flags, NULL);
    p->found = st == MEM4D_OK;
    if (p->found) {
        p->peak = mem4d_report_peak_bytes(rep);
        p->device = mem4d_report_device_bytes(rep);
    }
    mem4d_report_free(rep);
    mem4d_layout_free(best);
}

static void print_json(FILE *out, const mem4d_import *imp, const mem4d_layout *layout,
                       const mem4d_report *report, int status, const struct proposal *p)
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
    fprintf(out, "], \"proposal\": ");
    if (p->found) {
        fprintf(out, "{\"megatron_flags\": ");
        cli_json_string(out, p->flags);
        fprintf(out, ", \"peak_bytes\": %llu, \"device_bytes\": %llu}", (unsigned long long)p->peak,
                (unsigned long long)p->device);
    } else {
        fputs("null", out);
    }
    fprintf(out, ", \"report\": ");
    cli_print_report_json(out, report);
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
    mem4d_layout *layout = o->layout;
    mem4d_report *report = NULL;
    int status = CLI_USAGE;
    if (mem4d_import_new(&imp) != MEM4D_OK || mem4d_report_new(&report) != MEM4D_OK) {
        cli_error("out of memory");
        goto out;
    }
    if (!import_job(o, imp, model))
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
    if (status != CLI_OK)
        propose(model, device, layout, &p);
    if (o->format == CLI_FORMAT_JSON) {
        print_json(stdout, imp, layout, report, status, &p);
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
        if (p.found)
            printf("check: propose %s (peak %.1f GiB of %.1f GiB)\n", p.flags, cli_gib(p.peak), cli_gib(p.device));
        else if (status != CLI_OK)
            printf("check: no layout of these %llu GPUs fits either\n", (unsigned long long)world);
    }
out:
    mem4d_report_free(report);
    mem4d_import_free(imp);
    return status;
}

int cmd_check(struct cli_args *o)
{
    if (o->rest_argc == 0) {
        cli_error("no Megatron-LM arguments (give them after --)");
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
