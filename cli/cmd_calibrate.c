/*
 * mem4d calibrate: fit the device to Megatron-LM training logs (step time,
 * memory peaks), print the error before and after, write a device file that
 * estimate, plan and check read with --device-file.
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

CLI_COMMAND(calibrate);

const struct cli_option cmd_calibrate_options[] = {
    CLI_ARG("--log", CLI_OUTPUT, log, "FILE[,FILE...]", "Megatron-LM training logs (stdout of pretrain_gpt.py)"),
    CLI_ROWS_DEVICE,
    CLI_ROW("--world-size", CLI_UINT, CLI_TO_ARGS, CLI_FIELD(world_size), "N",
            "GPUs of the job when the log's arguments block does not say", NULL, 1, 0),
    CLI_ARG("--output", CLI_OUTPUT, output, "FILE", "write the fitted device file here"),
    CLI_FORMAT("--json", CLI_FORMAT_JSON, "print a JSON object"),
    CLI_END,
};

const char cmd_calibrate_about[] =
    "Reads Megatron-LM training logs (the arguments block, the iteration lines, the memory\n"
    "lines), fits the device given by --gpu / --device-file: the efficiency that dominates\n"
    "each log's step (matmul, fp8 or communication) and the memory model's fixed workspace\n"
    "and allocator overhead. Prints the error before and after; --output writes the device\n"
    "file. Arguments after -- are the job's, for logs without an arguments block.";

#define MAX_LOGS 32
static double figure(const mem4d_calibration *c, size_t i, mem4d_calibration_figure f, bool *have)
{
    double v = 0;
    *have = mem4d_calibration_get(c, i, f, &v) == MEM4D_OK;
    return v;
}

static void print_table(const mem4d_calibration *c, char names[][256], const mem4d_device *before,
                        const mem4d_device *after)
{
    bool h;
    printf("%-32s %10s %10s %8s %10s %8s\n", "log", "measured", "before", "error", "after", "error");
    for (size_t i = 0; i < mem4d_calibration_log_count(c); i++) {
        double m = figure(c, i, MEM4D_CALIBRATION_MEASURED_STEP_S, &h);
        double b = figure(c, i, MEM4D_CALIBRATION_PREDICTED_STEP_BEFORE_S, &h);
        double a = figure(c, i, MEM4D_CALIBRATION_PREDICTED_STEP_AFTER_S, &h);
        printf("%-32.32s %9.3fs %9.3fs %+7.1f%% %9.3fs %+7.1f%%   step\n", names[i], m, b, 100 * (b / m - 1), a,
               100 * (a / m - 1));
        static const struct {
            const char *what;
            mem4d_calibration_figure meas, before, after;
        } mem[] = {
            {"max allocated", MEM4D_CALIBRATION_MEASURED_MAX_ALLOCATED, MEM4D_CALIBRATION_PREDICTED_MAX_ALLOCATED_BEFORE,
             MEM4D_CALIBRATION_PREDICTED_MAX_ALLOCATED_AFTER},
            {"max reserved", MEM4D_CALIBRATION_MEASURED_MAX_RESERVED, MEM4D_CALIBRATION_PREDICTED_MAX_RESERVED_BEFORE,
             MEM4D_CALIBRATION_PREDICTED_MAX_RESERVED_AFTER},
        };
        for (size_t k = 0; k < 2; k++) {
            double mm = figure(c, i, mem[k].meas, &h);
            if (!h)
                continue;
            double mb = figure(c, i, mem[k].before, &h), ma = figure(c, i, mem[k].after, &h);
            printf("%-32s %8.2fG %8.2fG %+7.1f%% %8.2fG %+7.1f%%   %s, rank %.0f\n", "", cli_gib((uint64_t)mm),
                   cli_gib((uint64_t)mb), 100 * (mb / mm - 1), cli_gib((uint64_t)ma), 100 * (ma / mm - 1),
                   mem[k].what, figure(c, i, MEM4D_CALIBRATION_MEMORY_RANK, &h));
        }
    }
    for (size_t k = 0; k < mem4d_device_param_count(); k++) {
        uint64_t x = 0, y = 0;
        mem4d_device_get(before, (mem4d_device_param)k, &x);
        mem4d_device_get(after, (mem4d_device_param)k, &y);
        if (x != y)
            printf("fitted %s: %llu -> %llu\n", mem4d_device_param_name((mem4d_device_param)k),
                   (unsigned long long)x, (unsigned long long)y);
    }
}

static void print_json(const mem4d_calibration *c, char names[][256], const mem4d_device *after)
{
    static const char *const keys[] = {
        "measured_step_s",           "predicted_step_before_s",       "predicted_step_after_s",
        "measured_tflops_per_gpu",   "measured_max_allocated",        "predicted_max_allocated_before",
        "predicted_max_allocated_after", "measured_max_reserved",     "predicted_max_reserved_before",
        "predicted_max_reserved_after",  "memory_rank"};
    printf("{\"logs\": [");
    for (size_t i = 0; i < mem4d_calibration_log_count(c); i++) {
        printf("%s{\"log\": ", i ? ", " : "");
        cli_json_string(stdout, names[i]);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            bool h;
            double v = figure(c, i, (mem4d_calibration_figure)k, &h);
            if (h)
                printf(", \"%s\": %.9g", keys[k], v);
        }
        printf("}");
    }
    printf("], \"device\": {");
    for (size_t k = 0; k < mem4d_device_param_count(); k++) {
        uint64_t v = 0;
        mem4d_device_get(after, (mem4d_device_param)k, &v);
        printf("%s\"%s\": %llu", k ? ", " : "", mem4d_device_param_name((mem4d_device_param)k), (unsigned long long)v);
    }
    printf("}}\n");
}

static bool write_device(const char *path, const mem4d_device *d)
{
    char buf[8192];
    size_t len = 0;
    if (mem4d_device_format(d, buf, sizeof buf, &len) != MEM4D_OK) {
        cli_error("--output %s: the device file does not fit the buffer", path);
        return false;
    }
    FILE *fp = fopen(path, "w");
    if (!fp || fwrite(buf, 1, len, fp) != len || fclose(fp) != 0) {
        cli_error("--output %s: %s", path, strerror(errno));
        return false;
    }
    return true;
}

/* Read every log named by --log into the calibration; names[i] its path. */
static bool read_logs(const struct cli_args *a, mem4d_calibration *c, char names[][256])
{
    char list[4096];
    if (strlen(a->log) >= sizeof list) {
        cli_error("--log: the list of files is too long");
        return false;
    }
    strcpy(list, a->log);
    size_t n = 0;
    for (char *save = NULL, *path = strtok_r(list, ",", &save); path; path = strtok_r(NULL, ",", &save)) {
        if (n == MAX_LOGS) {
            cli_error("--log: at most %d logs", MAX_LOGS);
            return false;
        }
        mem4d_status st = mem4d_calibration_add_megatron_log_file(c, path, a->rest_argc,
                                                                  (const char *const *)a->rest_argv, a->world_size);
        if (st != MEM4D_OK) {
            cli_error("--log %s: %s", path, mem4d_calibration_message(c));
            return false;
        }
        const char *base = strrchr(path, '/');
        cli_printable(base ? base + 1 : path, names[n++], 256); /* a file name may hold any byte */
    }
    if (n == 0) {
        cli_error("--log needs at least one file");
        return false;
    }
    return true;
}

int cmd_calibrate(struct cli_args *a)
{
    static char names[MAX_LOGS][256];
    mem4d_calibration *c = NULL;
    mem4d_device *dev = NULL, *before = NULL;
    int rc = CLI_USAGE;
    if (!a->log) {
        cli_error("calibrate needs --log FILE");
        return CLI_USAGE;
    }
    if (mem4d_calibration_new(&c) != MEM4D_OK) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    if (!cli_open_device(a, &dev) || mem4d_device_clone(dev, &before) != MEM4D_OK || !read_logs(a, c, names))
        goto out;
    if (mem4d_calibration_fit(c, dev) != MEM4D_OK) {
        cli_error("%s", mem4d_calibration_message(c));
        goto out;
    }
    if (mem4d_calibration_message(c)[0])
        fprintf(stderr, "mem4d: warning: %s\n", mem4d_calibration_message(c));
    if (a->output && !write_device(a->output, dev))
        goto out;
    if (a->format == CLI_FORMAT_JSON)
        print_json(c, names, dev);
    else
        print_table(c, names, before, dev);
    if (a->output && a->format != CLI_FORMAT_JSON)
        printf("device file written to %s (use it with --device-file)\n", a->output);
    rc = CLI_OK;
out:
    mem4d_device_free(before);
    mem4d_device_free(dev);
    mem4d_calibration_free(c);
    return rc;
}
