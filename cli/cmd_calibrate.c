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
    CLI_ARG("--log", CLI_OUTPUT, log, "FILE[,FILE...]", "training logs (stdout of the training script)"),
    CLI_ARG("--log-format", CLI_NAME, log_format, "megatron|torchtitan|nanotron",
            "the framework that wrote the logs (default megatron); torchtitan and nanotron logs need the job, of that "
            "framework unless --framework or --set framework= says"),
    CLI_ARG("--measured-step-s", CLI_NAME, measured[0], "X", "a measured step time in seconds, of the job"),
    CLI_ARG("--measured-tflops", CLI_NAME, measured[1], "X",
            "a measured TFLOP/s per GPU under Megatron's count (--log-throughput), of the job"),
    CLI_ARG("--measured-tokens-per-s", CLI_NAME, measured[2], "X", "measured tokens per second of the whole job"),
    CLI_ROWS_DEVICE,
    CLI_ROWS_MODEL("the job's model (with the layout flags), or give its Megatron arguments after --", NULL),
    CLI_LAYOUT("--tp", MEM4D_LAYOUT_TP, "T", "the job's tensor-parallel size"),
    CLI_LAYOUT("--cp", MEM4D_LAYOUT_CP, "C", "context-parallel size"),
    CLI_LAYOUT("--pp", MEM4D_LAYOUT_PP, "P", "pipeline-parallel size"),
    CLI_LAYOUT("--world", MEM4D_LAYOUT_WORLD, "W", "GPUs in the job"),
    CLI_LAYOUT("--mbs", MEM4D_LAYOUT_MICRO_BATCH, "B", "micro-batch size"),
    CLI_LAYOUT("--gbs", MEM4D_LAYOUT_GLOBAL_BATCH, "G", "global batch size"),
    CLI_LAYOUT("--seq", MEM4D_LAYOUT_SEQ_LENGTH, "S", "sequence length"),
    CLI_LAYOUT("--recompute", MEM4D_LAYOUT_RECOMPUTE, NULL, "activation recomputation"),
    CLI_LAYOUT("--framework", MEM4D_LAYOUT_FRAMEWORK, NULL,
               "the job's framework; the software stack fitted under is --device-set stack=NAME"),
    CLI_ROW("--set", CLI_KEYVAL, CLI_TO_LAYOUT, 0, "KEY=VALUE", "any layout key of the job, by name", NULL, 0, 0),
    CLI_ROW("--world-size", CLI_UINT, CLI_TO_ARGS, CLI_FIELD(world_size), "N",
            "GPUs of the job when the log's arguments block does not say", NULL, 1, 0),
    CLI_ARG("--output", CLI_OUTPUT, output, "FILE", "write the fitted device file here"),
    CLI_FORMAT("--json", CLI_FORMAT_JSON, "print a JSON object"),
    CLI_END,
};

const char cmd_calibrate_about[] =
    "Fits the device given by --gpu / --device-file to measured runs: Megatron-LM logs (the\n"
    "arguments block, the iteration lines, the memory lines), torchtitan or nanotron logs\n"
    "(--log-format) and figures measured without a log (--measured-step-s, --measured-tflops,\n"
    "--measured-tokens-per-s). Those need the job: --model and the layout flags, or its\n"
    "Megatron-LM arguments after --. Of GEMM, fp8 and attention efficiency, the per-micro-batch\n"
    "overhead, the communication efficiency inside a node and across nodes apart, and the MoE\n"
    "router's load spread it fits what the runs can tell apart (one constant for one run) and\n"
    "says which it left at the device's value; from memory lines, the fixed workspace and\n"
    "allocator overhead. Prints the error before and after; --output writes the device file,\n"
    "which records on how many runs it was calibrated.";

#define MAX_LOGS 32
static double figure(const mem4d_calibration *c, size_t i, mem4d_calibration_figure f, bool *have)
{
    double v = 0;
    *have = mem4d_calibration_get(c, i, f, &v) == MEM4D_OK;
    return v;
}

/* Which speed constants the fit took from the runs, and which it left. */
static void print_constants(const mem4d_calibration *c)
{
    for (int want = 1; want >= 0; want--) {
        size_t n = 0;
        mem4d_device_param key;
        int fitted;
        for (size_t i = 0; mem4d_calibration_constant(c, i, &key, &fitted) == MEM4D_OK; i++)
            if (fitted == want)
                printf("%s%s", n++ ? ", " : want ? "fitted from the runs: " : "left at the device's value: ",
                       mem4d_device_param_name(key));
        if (n)
            printf(want ? "\n" : " (the runs' step times do not tell them apart)\n");
    }
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
        if (x != y && k == MEM4D_DEVICE_CALIBRATED_RUNS)
            printf("the device records calibrated_runs = %llu\n", (unsigned long long)y);
        else if (x != y)
            printf("fitted %s: %llu -> %llu\n", mem4d_device_param_name((mem4d_device_param)k),
                   (unsigned long long)x, (unsigned long long)y);
    }
    print_constants(c);
}

static void print_json(const mem4d_calibration *c, char names[][256], const mem4d_device *after)
{
    static const char *const keys[] = {
        "measured_step_s",           "predicted_step_before_s",       "predicted_step_after_s",
        "measured_tflops_per_gpu",   "measured_max_allocated",        "predicted_max_allocated_before",
        "predicted_max_allocated_after", "measured_max_reserved",     "predicted_max_reserved_before",
        "predicted_max_reserved_after",  "memory_rank",               "measured_tokens_per_s"};
    printf("{\"logs\": [");
    for (size_t i = 0; i < mem4d_calibration_log_count(c); i++) {
        printf("%s{\"log\": ", i ? ", " : "");
        cli_json_string(stdout, names[i]);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            bool h;
            double v = figure(c, i, (mem4d_calibration_figure)k, &h);
            /* bytes as whole numbers, as estimate --json prints them (%.9g rounded 12586686873.6,
             * a log's 12003.60 MB, to 12586686900); the rest to nine digits */
            bool bytes = k >= MEM4D_CALIBRATION_MEASURED_MAX_ALLOCATED &&
                         k <= MEM4D_CALIBRATION_PREDICTED_MAX_RESERVED_AFTER;
            if (h)
                printf(bytes ? ", \"%s\": %.0f" : ", \"%s\": %.9g", keys[k], v);
        }
        printf("}");
    }
    printf("], \"constants\": [");
    mem4d_device_param key;
    int fitted;
    for (size_t i = 0; mem4d_calibration_constant(c, i, &key, &fitted) == MEM4D_OK; i++)
        printf("%s{\"key\": \"%s\", \"fitted\": %s}", i ? ", " : "", mem4d_device_param_name(key),
               fitted ? "true" : "false");
    printf("], \"device\": {");
    for (size_t k = 0; k < mem4d_device_param_count(); k++) {
        uint64_t v = 0;
        mem4d_device_get(after, (mem4d_device_param)k, &v);
        /* a choice by its name, as the device file --output writes it ("stack": "torchtitan") */
        const char *choice = mem4d_device_value_name((mem4d_device_param)k, v);
        printf("%s\"%s\": ", k ? ", " : "", mem4d_device_param_name((mem4d_device_param)k));
        if (choice)
            cli_json_string(stdout, choice);
        else
            printf("%llu", (unsigned long long)v);
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

/* Read every log named by --log into the calibration (Megatron-LM's with
 * their own arguments, the others as the job's); names[i] its path. */
static bool read_logs(const struct cli_args *a, mem4d_calibration *c, char names[][256], mem4d_log_format format,
                      const mem4d_model *model, const mem4d_layout *layout)
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
        mem4d_status st = format == MEM4D_LOG_MEGATRON
                              ? mem4d_calibration_add_megatron_log_file(c, path, a->rest_argc,
                                                                        (const char *const *)a->rest_argv,
                                                                        a->world_size)
                              : mem4d_calibration_add_log_file(c, format, path, model, layout);
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

/* The job of torchtitan / nanotron logs and measured figures: its Megatron-LM
 * arguments after --, or --model and the layout flags. */
static bool open_job(struct cli_args *a, mem4d_model **model)
{
    if (a->rest_argc == 0)
        return cli_open_model(a, NULL, model);
    mem4d_import *imp = NULL;
    if (mem4d_model_new(model) != MEM4D_OK || mem4d_import_new(&imp) != MEM4D_OK) {
        cli_error("out of memory");
        return false;
    }
    mem4d_status st = mem4d_import_megatron(imp, a->rest_argc, (const char *const *)a->rest_argv, NULL,
                                            a->world_size, *model, a->layout);
    cli_print_warnings(imp);
    if (st != MEM4D_OK)
        cli_error("the job's arguments: %s", mem4d_import_message(imp));
    mem4d_import_free(imp);
    return st == MEM4D_OK && cli_apply_model_settings(a, *model);
}

static const char *const measured_flags[3] = {"--measured-step-s", "--measured-tflops", "--measured-tokens-per-s"};

/* "2.5", "1.2e6": decimal digits, at most one point, an optional exponent;
 * no sign, blank, hex ("0x10", which strtod reads as 16), inf or nan. */
static bool decimal_number(const char *t)
{
    size_t whole = strspn(t, "0123456789"), frac = 0;
    t += whole;
    if (*t == '.')
        frac = strspn(++t, "0123456789"), t += frac;
    if (whole + frac == 0)
        return false;
    if (*t == 'e' || *t == 'E') {
        t += t[1] == '+' || t[1] == '-' ? 2 : 1;
        size_t exp = strspn(t, "0123456789");
        if (exp == 0)
            return false;
        t += exp;
    }
    return *t == '\0';
}

/* The --measured-* values, each a positive number (0 where not given). */
static bool parse_measured(const struct cli_args *a, double v[3])
{
    for (size_t k = 0; k < 3; k++) {
        v[k] = 0;
        if (!a->measured[k])
            continue;
        v[k] = decimal_number(a->measured[k]) ? strtod(a->measured[k], NULL) : 0;
        if (!(v[k] > 0) || !isfinite(v[k])) {
            cli_error("%s %s: not a positive decimal number", measured_flags[k], a->measured[k]);
            return false;
        }
    }
    return true;
}

/* --measured-*: each a run of the job; names[n...] say which. */
static bool add_measured(const struct cli_args *a, const double v[3], mem4d_calibration *c, char names[][256],
                         const mem4d_model *model, const mem4d_layout *layout)
{
    static const mem4d_calibration_figure figs[3] = {MEM4D_CALIBRATION_MEASURED_STEP_S,
                                                     MEM4D_CALIBRATION_MEASURED_TFLOPS_PER_GPU,
                                                     MEM4D_CALIBRATION_MEASURED_TOKENS_PER_S};
    const char *const *flags = measured_flags;
    for (size_t k = 0; k < 3; k++) {
        if (!a->measured[k])
            continue;
        size_t i = mem4d_calibration_log_count(c);
        if (i == MAX_LOGS) {
            cli_error("%s: at most %d logs and measured figures", flags[k], MAX_LOGS);
            return false;
        }
        if (mem4d_calibration_add_measurement(c, model, layout, figs[k], v[k]) != MEM4D_OK) {
            cli_error("%s: %s", flags[k], mem4d_calibration_message(c));
            return false;
        }
        snprintf(names[i], 256, "%s %s", flags[k] + 2, a->measured[k]);
    }
    return true;
}


int cmd_calibrate(struct cli_args *a)
{
    static char names[MAX_LOGS][256];
    mem4d_calibration *c = NULL;
    mem4d_device *dev = NULL, *before = NULL;
    mem4d_model *model = NULL;
    int rc = CLI_USAGE;
    bool measured = a->measured[0] || a->measured[1] || a->measured[2];
    if (!a->log && !measured) {
        cli_error("calibrate needs --log FILE or a measured figure (--measured-step-s, --measured-tflops, "
                  "--measured-tokens-per-s)");
        return CLI_USAGE;
    }
    static const char *const formats[] = {"megatron", "torchtitan", "nanotron"};
    mem4d_log_format format = MEM4D_LOG_MEGATRON;
    for (size_t i = 0; a->log_format && i <= 3; i++) {
        if (i == 3) {
            cli_error("--log-format %s: not megatron, torchtitan or nanotron", a->log_format);
            return CLI_USAGE;
        }
        if (!strcmp(a->log_format, formats[i])) {
            format = (mem4d_log_format)i;
            break;
        }
    }
    /* A Megatron-LM log carries its job: flags that describe one would be
     * passed over (they are the job of the other logs and of measured figures). */
    static const char *const job_flags[] = {"--model", "--hf-config", "--model-set", "--tp", "--cp", "--pp",
                                            "--world", "--mbs", "--gbs", "--seq", "--recompute", "--framework",
                                            "--set"};
    for (size_t i = 0; format == MEM4D_LOG_MEGATRON && !measured && i < sizeof job_flags / sizeof *job_flags; i++)
        if (cli_given(a, job_flags[i])) {
            cli_error("%s: a Megatron-LM log's arguments give its job (its arguments block, or the arguments after "
                      "--); --model and the layout flags are the job of --log-format torchtitan or nanotron logs "
                      "and of --measured-* figures", job_flags[i]);
            return CLI_USAGE;
        }
    double values[3];
    if (!parse_measured(a, values))
        return CLI_USAGE;
    if (mem4d_calibration_new(&c) != MEM4D_OK) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    if (!cli_open_device(a, &dev) || mem4d_device_clone(dev, &before) != MEM4D_OK)
        goto out;
    if ((format != MEM4D_LOG_MEGATRON || measured) && !open_job(a, &model))
        goto out;
    /* A torchtitan or nanotron log is that framework's job unless --framework
     * or --set framework= says otherwise (megatron, the key's default, too). */
    if (format != MEM4D_LOG_MEGATRON && a->rest_argc == 0 && !cli_layout_given(a, MEM4D_LAYOUT_FRAMEWORK))
        mem4d_layout_set(a->layout, MEM4D_LAYOUT_FRAMEWORK,
                         format == MEM4D_LOG_TORCHTITAN ? MEM4D_FRAMEWORK_TORCHTITAN : MEM4D_FRAMEWORK_NANOTRON);
    if ((a->log && !read_logs(a, c, names, format, model, a->layout)) ||
        (measured && !add_measured(a, values, c, names, model, a->layout)))
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
    mem4d_model_free(model);
    mem4d_device_free(before);
    mem4d_device_free(dev);
    mem4d_calibration_free(c);
    return rc;
}
