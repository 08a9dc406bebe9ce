/*
 * mem4d estimate: the per-stage memory of one layout.
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"

static const struct {
    const char *flag;
    mem4d_layout_param key;
} layout_flags[] = {
    {"--tp", MEM4D_LAYOUT_TP},         {"--cp", MEM4D_LAYOUT_CP},
    {"--pp", MEM4D_LAYOUT_PP},         {"--dp", MEM4D_LAYOUT_DP},
    {"--world", MEM4D_LAYOUT_WORLD},   {"--mbs", MEM4D_LAYOUT_MICRO_BATCH},
    {"--gbs", MEM4D_LAYOUT_GLOBAL_BATCH}, {"--seq", MEM4D_LAYOUT_SEQ_LENGTH},
    {"--vpp", MEM4D_LAYOUT_VPP},       {"--mode", MEM4D_LAYOUT_MODE},
    {"--recompute", MEM4D_LAYOUT_RECOMPUTE}, {"--dist-opt", MEM4D_LAYOUT_DIST_OPT},
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: mem4d estimate --model NAME | --hf-config FILE  [--gpu NAME] [--gpu-memory-gib X]\n"
            "                      --tp T --cp C --pp P (--dp D | --world W) --mbs B --seq S [--gbs G]\n"
            "                      [--vpp V] [--recompute none|selective|full] [--dist-opt true|false]\n"
            "                      [--mode full|paper] [--set KEY=VALUE ...] [--json]\n"
            "Prints the memory of every pipeline stage (GiB) and the verdict against the GPU\n"
            "(fits: <= 80%% of memory, tight: <= 100%%, oom). --set takes any layout key, by its\n"
            "name or its Megatron name (e.g. --set main_grad_bytes=2). --gpu defaults to h100-80.\n");
}

struct opts {
    const char *model, *hf_config, *gpu;
    uint64_t gpu_bytes;
    bool json;
};



static int parse(int argc, char **argv, struct opts *o, mem4d_layout *layout)
{
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(argv[i], "--json")) {
            o->json = true;
            continue;
        }
        if ((v = cli_flag_value(argc, argv, &i, "--model"))) {
            o->model = v;
            continue;
        }
        if ((v = cli_flag_value(argc, argv, &i, "--hf-config"))) {
            o->hf_config = v;
            continue;
        }
        if ((v = cli_flag_value(argc, argv, &i, "--gpu"))) {
            o->gpu = v;
            continue;
        }
        if ((v = cli_flag_value(argc, argv, &i, "--gpu-memory-gib"))) {
            if (!cli_parse_gib("--gpu-memory-gib", v, &o->gpu_bytes))
                return CLI_USAGE;
            continue;
        }
        if ((v = cli_flag_value(argc, argv, &i, "--set"))) {
            if (!cli_layout_set_kv(layout, v))
                return CLI_USAGE;
            continue;
        }
        size_t k = 0;
        for (; k < sizeof layout_flags / sizeof layout_flags[0]; k++)
            if ((v = cli_flag_value(argc, argv, &i, layout_flags[k].flag)))
                break;
        if (k == sizeof layout_flags / sizeof layout_flags[0]) {
            cli_error("estimate: unknown option '%s' (try --help)", argv[i]);
            return CLI_USAGE;
        }
        if (!cli_layout_set(layout, layout_flags[k].flag, layout_flags[k].key, v))
            return CLI_USAGE;
    }
    return CLI_OK;
}

int cmd_estimate(int argc, char **argv)
{
    struct opts o = {.gpu = "h100-80"};
    mem4d_layout *layout = NULL;
    mem4d_model *model = NULL;
    mem4d_device *device = NULL;
    mem4d_report *report = NULL;
    int rc = CLI_USAGE;
    if (mem4d_layout_new(&layout) != MEM4D_OK || mem4d_report_new(&report) != MEM4D_OK) {
        cli_error("out of memory");
        rc = CLI_FAIL;
        goto out;
    }
    rc = parse(argc, argv, &o, layout);
    if (rc != CLI_OK) {
        rc = rc < 0 ? CLI_OK : rc;
        goto out;
    }
    rc = CLI_USAGE;
    if (!cli_open_model(o.model, o.hf_config, &model) || !cli_open_device(o.gpu, o.gpu_bytes, &device))
        goto out;
    mem4d_status st = mem4d_estimate(model, layout, device, report);
    if (st != MEM4D_OK) {
        cli_error("%s (%s)", mem4d_report_message(report), mem4d_strerror(st));
        goto out;
    }
    if (o.json)
        cli_print_report_json(stdout, report);
    else
        cli_print_report(stdout, model, layout, device, report);
    rc = CLI_OK;
out:
    mem4d_report_free(report);
    mem4d_device_free(device);
    mem4d_model_free(model);
    mem4d_layout_free(layout);
    return rc;
}
