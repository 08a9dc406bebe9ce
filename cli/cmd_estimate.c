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
    CLI_LAYOUT("--framework", MEM4D_LAYOUT_FRAMEWORK, NULL, "the framework whose buffers and defaults apply; the speed's software stack is --device-set stack=NAME"),
    CLI_LAYOUT("--dist-opt", MEM4D_LAYOUT_DIST_OPT, "true|false", "Megatron's distributed optimizer"),
    CLI_ROW("--set", CLI_KEYVAL, CLI_TO_LAYOUT, 0, "KEY=VALUE",
            "any layout key, by its name or its Megatron name (--set main_grad_bytes=2)", NULL, 0, 0),
    CLI_ARG("--ds-config", CLI_PATH, ds_config, "FILE",
            "a DeepSpeed ds_config.json (framework deepspeed, ZeRO, buckets, offload, batch); "
            "values set on the command line win"),
    CLI_ARG("--torchtitan-config", CLI_PATH, tt_config, "FILE",
            "a torchtitan job TOML (degrees, batch, schedule and split, recompute, precision, float8, "
            "compile); values set on the command line win"),
    CLI_FORMAT("--json", CLI_FORMAT_JSON, "print a JSON object"),
    CLI_END,
};

const char cmd_estimate_about[] =
    "Prints the memory of every pipeline stage (GiB): peak allocated and reserved as PyTorch\n"
    "reports them, and the total with the CUDA context and NCCL, and the verdict against the\n"
    "GPU (fits: total <= 85% of memory in full mode, 80% in paper mode; tight: <= 100%; oom).\n"
    "Give --tp, --cp, --pp, --dp or --world, --mbs and --seq; with --gbs it also predicts the\n"
    "step time, tokens/s, TFLOP/s and MFU, each with its band (doc/perf.md). --framework\n"
    "torchtitan (or deepspeed, nanotron) selects that framework's buffers and defaults;\n"
    "--device-set stack=NAME the software stack whose kernels set the speed (perf.md, \"The\n"
    "software stack\": middle by default, nemo-25, torchtitan, ...).";

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
    if (!cli_apply_job_files(a, model))
        goto out;
    mem4d_status st = mem4d_estimate(model, a->layout, device, report);
    if (st != MEM4D_OK) {
        cli_error("%s (%s)", mem4d_report_message(report), mem4d_strerror(st));
        goto out;
    }
    if (a->format == CLI_FORMAT_JSON)
        cli_print_report_json(stdout, model, report, a->layout, device);
    else
        cli_print_report(stdout, model, a->layout, device, report);
    rc = CLI_OK;
out:
    mem4d_report_free(report);
    mem4d_device_free(device);
    mem4d_model_free(model);
    return rc;
}
