/*
 * mem4d estimate: the per-stage memory of one layout.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

CLI_COMMAND(estimate);

const struct cli_option cmd_estimate_options[] = {
    CLI_ROWS_MODEL("the model, a built-in preset (mem4d presets)", NULL),
    CLI_ROWS_DEVICE,
    CLI_LAYOUT("--tp", MEM4D_LAYOUT_TP, "T", "tensor-parallel size"),
    CLI_LAYOUT("--cp", MEM4D_LAYOUT_CP, "C", "context-parallel size"),
    CLI_LAYOUT("--pp", MEM4D_LAYOUT_PP, "P", "pipeline-parallel size"),
    CLI_ROW("--dp", CLI_VALUE, CLI_TO_LAYOUT, MEM4D_LAYOUT_DP, "D", "data-parallel size (or give --world)", NULL,
            1, 0),
    CLI_ROW("--world", CLI_VALUE, CLI_TO_LAYOUT, MEM4D_LAYOUT_WORLD, "W", "GPUs in the job (or give --dp)", NULL, 1,
            0),
    CLI_LAYOUT("--mbs", MEM4D_LAYOUT_MICRO_BATCH, "B", "micro-batch size"),
    CLI_LAYOUT("--gbs", MEM4D_LAYOUT_GLOBAL_BATCH, "G", "global batch size (0: unknown)"),
    CLI_LAYOUT("--seq", MEM4D_LAYOUT_SEQ_LENGTH, "S", "sequence length, tokens per sample"),
    CLI_LAYOUT("--vpp", MEM4D_LAYOUT_VPP, "V", "virtual pipeline chunks per rank"),
    CLI_LAYOUT("--mode", MEM4D_LAYOUT_MODE, NULL, "the full model, or the paper's formula exactly"),
    CLI_LAYOUT("--recompute", MEM4D_LAYOUT_RECOMPUTE, NULL, "activation recomputation"),
    CLI_LAYOUT("--framework", MEM4D_LAYOUT_FRAMEWORK, NULL, "the training stack whose buffers and defaults apply"),
    CLI_LAYOUT("--dist-opt", MEM4D_LAYOUT_DIST_OPT, "true|false", "Megatron's distributed optimizer"),
    CLI_ROW("--set", CLI_KEYVAL, CLI_TO_LAYOUT, 0, "KEY=VALUE",
            "any layout key, by its name or its Megatron name (--set main_grad_bytes=2)", NULL, 0, 0),
    CLI_ARG("--ds-config", CLI_PATH, ds_config, "FILE",
            "a DeepSpeed ds_config.json (framework deepspeed, ZeRO, buckets, offload, batch); "
            "values set on the command line win"),
    CLI_FORMAT("--json", CLI_FORMAT_JSON, "print a JSON object"),
    CLI_END,
};

const char cmd_estimate_about[] =
    "Prints the memory of every pipeline stage (GiB): peak allocated and reserved as PyTorch\n"
    "reports them, and the total with the CUDA context and NCCL, and the verdict against the\n"
    "GPU (fits: total <= 85% of memory in full mode, 80% in paper mode; tight: <= 100%; oom).\n"
    "Give --tp, --cp, --pp, --dp or --world, --mbs and --seq. --set framework=torchtitan (or\n"
    "deepspeed, nanotron) selects another training stack.";

/* Did the command line set layout key k: its own flag given, or (--set) a
 * value other than the key's default. */
static bool layout_key_given(const struct cli_args *a, size_t k, uint64_t v)
{
    uint64_t def = 0;
    for (size_t i = 0; a->cmd->options[i].name; i++)
        if (a->given[i] && a->cmd->options[i].dest == CLI_TO_LAYOUT && a->cmd->options[i].kind == CLI_VALUE &&
            a->cmd->options[i].key == k)
            return true;
    return mem4d_layout_param_default((mem4d_layout_param)k, &def) == MEM4D_OK && v != def;
}

/* --ds-config: the file's settings under those the command line set. */
static bool apply_ds_config(struct cli_args *a)
{
    mem4d_import *imp = NULL;
    mem4d_layout *ds = NULL;
    bool ok = false;
    /* the file is read over the command line's layout, whose dp or world
     * completes the file's batch keys as DeepSpeed's world size does */
    if (mem4d_import_new(&imp) != MEM4D_OK || mem4d_layout_clone(a->layout, &ds) != MEM4D_OK) {
        cli_error("out of memory");
        goto out;
    }
    if (mem4d_import_deepspeed_config(imp, a->ds_config, ds) != MEM4D_OK) {
        cli_error("--ds-config %s: %s", a->ds_config, mem4d_import_message(imp));
        goto out;
    }
    cli_print_warnings(imp);
    for (size_t k = 0; k < mem4d_layout_param_count(); k++) {
        uint64_t v = 0;
        if (mem4d_layout_get(a->layout, (mem4d_layout_param)k, &v) == MEM4D_OK && layout_key_given(a, k, v) &&
            mem4d_layout_set(ds, (mem4d_layout_param)k, v) != MEM4D_OK) {
            cli_error("--ds-config %s: %s = %llu does not go with the file", a->ds_config,
                      mem4d_layout_param_name((mem4d_layout_param)k), (unsigned long long)v);
            goto out;
        }
    }
    ok = mem4d_layout_copy(a->layout, ds) == MEM4D_OK;
out:
    mem4d_layout_free(ds);
    mem4d_import_free(imp);
    return ok;
}

int cmd_estimate(struct cli_args *a)
{
    mem4d_model *model = NULL;
    mem4d_device *device = NULL;
    mem4d_report *report = NULL;
    int rc = CLI_USAGE;
    if (mem4d_report_new(&report) != MEM4D_OK) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    if (!cli_open_model(a, NULL, &model) || !cli_open_device(a, &device))
        goto out;
    if (a->ds_config && !apply_ds_config(a))
        goto out;
    mem4d_status st = mem4d_estimate(model, a->layout, device, report);
    if (st != MEM4D_OK) {
        cli_error("%s (%s)", mem4d_report_message(report), mem4d_strerror(st));
        goto out;
    }
    if (a->format == CLI_FORMAT_JSON)
        cli_print_report_json(stdout, report);
    else
        cli_print_report(stdout, model, a->layout, device, report);
    rc = CLI_OK;
out:
    mem4d_report_free(report);
    mem4d_device_free(device);
    mem4d_model_free(model);
    return rc;
}
