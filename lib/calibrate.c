/*
 * Calibration: read Megatron-LM training logs (the arguments block, the
 * iteration lines, the memory lines), fit the device's efficiency constants
 * to the measured step times and the memory model's fixed and allocator
 * offsets to the measured peaks. Formats are those of Megatron-LM's
 * megatron/training/training.py (training_log), arguments.py (_print_args)
 * and utils/common_utils.py (report_memory) at NVIDIA/Megatron-LM@d98e8a64;
 * doc/perf.md, "Calibration".
 * SPDX-License-Identifier: MIT
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "private.h"

#define CAL_MAX_LOGS 32
#define CAL_MAX_ARGS 1024
#define CAL_LINE_MAX 4096
#define CAL_MAX_STEPS 4096

struct cal_log {
    struct mem4d_model model;
    struct mem4d_layout layout;
    double step_s, tflops;        /* medians of the iteration lines (first left out) */
    bool have_tflops, have_mem;
    uint64_t mem_rank, mem_stage;
    double max_alloc, max_res;    /* bytes, of mem_rank's last memory line */
    double fig[M4D_NCALFIG];
    bool fig_set[M4D_NCALFIG];
};

struct mem4d_calibration {
    struct cal_log log[CAL_MAX_LOGS];
    size_t n;
    mem4d_report *report;
    char msg[M4D_MSG_MAX];
    /* scratch of one log read */
    double steps[CAL_MAX_STEPS], tfl[CAL_MAX_STEPS];
    char argbuf[CAL_MAX_ARGS][96];
    const char *argv[CAL_MAX_ARGS];
};

mem4d_status mem4d_calibration_new(mem4d_calibration **out)
{
    if (!out)
        return MEM4D_E_INVALID_ARG;
    *out = calloc(1, sizeof **out);
    if (!*out)
        return MEM4D_E_NOMEM;
    if (mem4d_report_new(&(*out)->report) != MEM4D_OK) {
        free(*out);
        *out = NULL;
        return MEM4D_E_NOMEM;
    }
    return MEM4D_OK;
}

void mem4d_calibration_free(mem4d_calibration *cal)
{
    if (!cal)
        return;
    mem4d_report_free(cal->report);
    free(cal);
}

const char *mem4d_calibration_message(const mem4d_calibration *cal)
{
    return cal ? cal->msg : "";
}

size_t mem4d_calibration_log_count(const mem4d_calibration *cal)
{
    return cal ? cal->n : 0;
}

/* --- reading a log -------------------------------------------------------------- */

static mem4d_status fail(mem4d_calibration *cal, mem4d_status st, size_t lineno, const char *what)
{
    if (lineno)
        m4d_msg(cal->msg, sizeof cal->msg, "line %zu: %s", lineno, what);
    else
        m4d_msg(cal->msg, sizeof cal->msg, "%s", what);
    return st;
}

/* The number after `label` in the line, or false when the label is absent;
 * *bad when it is there but no number follows. */
static bool number_after(const char *line, const char *label, double *v, bool *bad)
{
    const char *p = strstr(line, label);
    if (!p)
        return false;
    p += strlen(label);
    while (*p == ' ')
        p++;
    char *end = NULL;
    double x = strtod(p, &end);
    if (end == p || !(x >= 0) || x > 1e18) {
        *bad = true;
        return false;
    }
    *v = x;
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[first..n), v reordered. */
static double median_from(double *v, size_t n, size_t first)
{
    if (n <= first)
        first = 0;
    qsort(v + first, n - first, sizeof *v, cmp_double);
    size_t k = n - first;
    return k % 2 ? v[first + k / 2] : (v[first + k / 2 - 1] + v[first + k / 2]) / 2;
}

/* "  name ........ value" of Megatron's arguments block -> "--name-with-dashes
 * value" (or the switch alone for True). False values, None and lists set
 * nothing; the few destinations whose flag has another name are mapped. */
static bool argument_line(mem4d_calibration *cal, const char *line, int *argc, uint64_t *world, bool *tp_overlap)
{
    const char *p = line;
    while (*p == ' ')
        p++;
    size_t nl = strcspn(p, " ");
    const char *dots = p + nl;
    while (*dots == ' ')
        dots++;
    if (nl == 0 || nl >= 64 || *dots != '.')
        return false;
    while (*dots == '.')
        dots++;
    if (*dots != ' ')
        return false;
    const char *val = dots + 1;
    char name[64], value[96];
    memcpy(name, p, nl);
    name[nl] = '\0';
    size_t vl = strcspn(val, "\r\n");
    if (vl >= sizeof value)
        return true; /* a long value (a list, a path): not one we read */
    memcpy(value, val, vl);
    value[vl] = '\0';
    if (!strcmp(value, "None") || !strcmp(value, "False") || value[0] == '[' || value[0] == '{' ||
        value[0] == '<' || strchr(value, ' '))
        return true;
    if (!strcmp(name, "world_size")) {
        *world = strtoull(value, NULL, 10);
        return true;
    }
    /* Megatron derives this one from the flags it prints beside it. */
    if (!strcmp(name, "virtual_pipeline_model_parallel_size"))
        return true;
    if (!strcmp(name, "tp_comm_overlap") && !strcmp(value, "True"))
        *tp_overlap = true;
    /* Python enums print as "AttnBackend.auto": the flag takes "auto". */
    const char *flag = name, *flagval = value, *dot = strchr(value, '.');
    if (value[0] >= 'A' && value[0] <= 'Z' && dot && dot[1] >= 'a' && dot[1] <= 'z')
        flagval = dot + 1;
    if (!strcmp(name, "add_bias_linear"))
        return true; /* True is Megatron's default; False is bias_switch()'s */
    if (!strcmp(name, "fp8"))
        flag = "fp8_format";
    if (*argc + 2 > CAL_MAX_ARGS)
        return true;
    char *a = cal->argbuf[*argc];
    snprintf(a, sizeof cal->argbuf[0], "--%s", flag);
    for (char *q = a + 2; *q; q++)
        if (*q == '_')
            *q = '-';
    cal->argv[(*argc)++] = a;
    if (strcmp(flagval, "True") != 0) {
        snprintf(cal->argbuf[*argc], sizeof cal->argbuf[0], "%s", flagval);
        cal->argv[*argc] = cal->argbuf[*argc];
        (*argc)++;
    }
    return true;
}

/* Megatron prints add_bias_linear; its flag is --disable-bias-linear. */
static void bias_switch(mem4d_calibration *cal, const char *line, int *argc)
{
    if (strstr(line, " add_bias_linear ") && strstr(line, " False") && *argc < CAL_MAX_ARGS) {
        snprintf(cal->argbuf[*argc], sizeof cal->argbuf[0], "--disable-bias-linear");
        cal->argv[*argc] = cal->argbuf[*argc];
        (*argc)++;
    }
}

struct scan {
    size_t nsteps;
    bool in_args, args_seen;
    int argc;
    uint64_t world;
    bool tp_overlap;
    bool have_mem;
    uint64_t mem_rank;
    double max_alloc, max_res;
};

/* One line of a log. Lines that are neither iteration, memory nor
 * arguments lines are other output and are passed over. */
static mem4d_status scan_line(mem4d_calibration *cal, struct scan *sc, const char *line, size_t lineno)
{
    bool bad = false;
    if (strstr(line, "-- arguments --")) {
        sc->in_args = true;
        sc->args_seen = true;
        sc->argc = 0;
        return MEM4D_OK;
    }
    if (sc->in_args) {
        if (strstr(line, "-- end of arguments --")) {
            sc->in_args = false;
            return MEM4D_OK;
        }
        bias_switch(cal, line, &sc->argc);
        if (!argument_line(cal, line, &sc->argc, &sc->world, &sc->tp_overlap))
            return fail(cal, MEM4D_E_PARSE, lineno, "not a \"name .... value\" line inside the arguments block");
        return MEM4D_OK;
    }
    double ms;
    if (strstr(line, " iteration ") && number_after(line, "elapsed time per iteration (ms):", &ms, &bad)) {
        if (ms <= 0)
            return fail(cal, MEM4D_E_PARSE, lineno, "elapsed time per iteration is not a positive number of ms");
        if (sc->nsteps == CAL_MAX_STEPS)
            return MEM4D_OK; /* enough for a median */
        double tf = 0;
        cal->tfl[sc->nsteps] = number_after(line, "throughput per GPU (TFLOP/s/GPU):", &tf, &bad) ? tf : -1;
        if (bad)
            return fail(cal, MEM4D_E_PARSE, lineno, "throughput per GPU (TFLOP/s/GPU) is not a number");
        cal->steps[sc->nsteps++] = ms / 1000;
        return MEM4D_OK;
    }
    if (bad)
        return fail(cal, MEM4D_E_PARSE, lineno, "elapsed time per iteration (ms) is not a number");
    if (strstr(line, "memory (MB) | allocated:")) {
        double al = 0, mal = 0, res = 0, mres = 0, rank = 0;
        bool ok = number_after(line, "| allocated:", &al, &bad) && number_after(line, "| max allocated:", &mal, &bad) &&
                  number_after(line, "| reserved:", &res, &bad) && number_after(line, "| max reserved:", &mres, &bad);
        const char *r = strstr(line, "[Rank ");
        if (r && !number_after(r, "[Rank ", &rank, &bad))
            ok = false;
        if (!ok || bad || mres < mal)
            return fail(cal, MEM4D_E_PARSE, lineno,
                        "a memory line needs allocated, max allocated, reserved and max reserved (MB), "
                        "max reserved >= max allocated");
        /* The last report of the first rank seen: its maxima only grow. */
        if (!sc->have_mem || (uint64_t)rank == sc->mem_rank) {
            sc->have_mem = true;
            sc->mem_rank = (uint64_t)rank;
            sc->max_alloc = mal * 1048576.0;
            sc->max_res = mres * 1048576.0;
        }
    }
    return MEM4D_OK;
}

mem4d_status mem4d_calibration_add_megatron_log(mem4d_calibration *cal, const char *text, size_t length, int argc,
                                                const char *const *argv, uint64_t world_size)
{
    if (!cal || (!text && length) || argc < 0 || (argc > 0 && !argv))
        return MEM4D_E_INVALID_ARG;
    cal->msg[0] = '\0';
    if (cal->n == CAL_MAX_LOGS)
        return fail(cal, MEM4D_E_RANGE, 0, "too many logs (at most 32)");
    struct scan sc = {0};
    char line[CAL_LINE_MAX];
    const char *p = text, *end = text + length;
    for (size_t lineno = 1; p < end; lineno++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
        size_t n = (size_t)(le - p);
        if (n >= sizeof line)
            n = sizeof line - 1; /* long lines (tracebacks, tensors) are cut, not read further */
        memcpy(line, p, n);
        line[n] = '\0';
        if (memchr(line, '\0', n))
            return fail(cal, MEM4D_E_PARSE, lineno, "a NUL byte: not a text log");
        mem4d_status st = scan_line(cal, &sc, line, lineno);
        if (st != MEM4D_OK)
            return st;
        p = nl ? nl + 1 : end;
    }
    if (sc.in_args)
        return fail(cal, MEM4D_E_PARSE, 0, "the arguments block has no \"end of arguments\" line");
    if (sc.nsteps == 0)
        return fail(cal, MEM4D_E_MISSING, 0,
                    "no iteration line with \"elapsed time per iteration (ms)\": not a Megatron-LM training log");
    struct cal_log *lg = &cal->log[cal->n];
    memset(lg, 0, sizeof *lg);
    m4d_param_defaults(m4d_model_params, M4D_MODEL_NPARAM, lg->model.v);
    m4d_strlcpy(lg->model.name, "custom", sizeof lg->model.name);
    m4d_param_defaults(m4d_layout_params, M4D_LAYOUT_NPARAM, lg->layout.v);
    /* The arguments block when the log has one, else the caller's argv. */
    int ac = sc.args_seen ? sc.argc : argc;
    const char *const *av = sc.args_seen ? cal->argv : argv;
    if (ac == 0)
        return fail(cal, MEM4D_E_MISSING, 0, "the log has no arguments block and no arguments were given");
    mem4d_import *imp = NULL;
    if (mem4d_import_new(&imp) != MEM4D_OK)
        return MEM4D_E_NOMEM;
    mem4d_status st = mem4d_import_megatron(imp, ac, av, NULL, world_size ? world_size : sc.world, &lg->model,
                                            &lg->layout);
    if (st != MEM4D_OK)
        m4d_msg(cal->msg, sizeof cal->msg, "%s arguments: %s", sc.args_seen ? "the log's" : "the",
                mem4d_import_message(imp));
    mem4d_import_free(imp);
    if (st != MEM4D_OK)
        return st;
    if (sc.tp_overlap || (!sc.args_seen && argc > 0)) {
        for (int i = 0; i < argc && !sc.args_seen; i++)
            if (argv[i] && !strcmp(argv[i], "--tp-comm-overlap"))
                sc.tp_overlap = true;
        lg->layout.v[MEM4D_LAYOUT_TP_COMM_OVERLAP] = sc.tp_overlap;
    }
    lg->step_s = median_from(cal->steps, sc.nsteps, 1);
    size_t nt = 0;
    for (size_t i = 0; i < sc.nsteps; i++)
        if (cal->tfl[i] >= 0)
            cal->tfl[nt++] = cal->tfl[i];
    lg->have_tflops = nt > 0;
    lg->tflops = nt ? median_from(cal->tfl, nt, 1) : 0;
    lg->have_mem = sc.have_mem;
    lg->mem_rank = sc.mem_rank;
    lg->max_alloc = sc.max_alloc;
    lg->max_res = sc.max_res;
    cal->n++;
    return MEM4D_OK;
}

#define CAL_LOG_MAX_BYTES ((size_t)1 << 30)

mem4d_status mem4d_calibration_add_megatron_log_file(mem4d_calibration *cal, const char *path, int argc,
                                                     const char *const *argv, uint64_t world_size)
{
    if (!cal || !path)
        return MEM4D_E_INVALID_ARG;
    char *text = NULL;
    size_t len = 0;
    mem4d_status st = m4d_read_file(path, "Megatron-LM training log", CAL_LOG_MAX_BYTES, &text, &len, cal->msg,
                                    sizeof cal->msg);
    if (st != MEM4D_OK)
        return st;
    st = mem4d_calibration_add_megatron_log(cal, text, len, argc, argv, world_size);
    free(text);
    return st;
}

/* --- fitting ----------------------------------------------------------------------- */

static void set_fig(struct cal_log *lg, mem4d_calibration_figure f, double v)
{
    lg->fig[f] = v;
    lg->fig_set[f] = true;
}

/* Estimate one log on a device: step time and, for its memory rank's
 * stage, peak allocated and reserved bytes. */
static mem4d_status predict(mem4d_calibration *cal, struct cal_log *lg, const mem4d_device *dev, double *step,
                            double *alloc, double *res, double *compute_share)
{
    mem4d_report *r = cal->report;
    mem4d_status st = mem4d_estimate(&lg->model, &lg->layout, dev, r);
    if (st != MEM4D_OK) {
        m4d_msg(cal->msg, sizeof cal->msg, "log %zu: %s", (size_t)(lg - cal->log) + 1, mem4d_report_message(r));
        return st;
    }
    double comm = 0;
    if (mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, step) != MEM4D_OK) {
        m4d_msg(cal->msg, sizeof cal->msg, "log %zu: no step time (a device without peak_flops?)",
                (size_t)(lg - cal->log) + 1);
        return MEM4D_E_UNSUPPORTED;
    }
    mem4d_report_metric(r, MEM4D_METRIC_COMPUTE_TIME_S, compute_share);
    mem4d_report_metric(r, MEM4D_METRIC_EXPOSED_COMM_S, &comm);
    *compute_share = *compute_share >= comm ? 1 : 0;
    uint64_t world = 0, a = 0, rs = 0;
    mem4d_report_info(r, MEM4D_INFO_WORLD, &world);
    uint32_t nst = mem4d_report_num_stages(r);
    uint64_t per = world && nst ? world / nst : 1;
    lg->mem_stage = per ? lg->mem_rank / per : 0;
    if (lg->mem_stage >= nst)
        lg->mem_stage = nst - 1;
    mem4d_report_get(r, (uint32_t)lg->mem_stage, MEM4D_TERM_PEAK_ALLOCATED, &a);
    mem4d_report_get(r, (uint32_t)lg->mem_stage, MEM4D_TERM_PEAK_RESERVED, &rs);
    *alloc = (double)a;
    *res = (double)rs;
    return MEM4D_OK;
}

/* Sum over the logs of log(predicted / measured)^2 on `dev`. */
static double step_error(mem4d_calibration *cal, const mem4d_device *dev)
{
    double e = 0, step, a, r, c;
    for (size_t i = 0; i < cal->n; i++) {
        if (predict(cal, &cal->log[i], dev, &step, &a, &r, &c) != MEM4D_OK)
            return INFINITY;
        double d = log(step / cal->log[i].step_s);
        e += d * d;
    }
    return e;
}

/* Golden-section search of one ppm constant in [lo, hi] for the least error. */
static void fit_key(mem4d_calibration *cal, mem4d_device *dev, mem4d_device_param key, double lo, double hi)
{
    const double g = 0.6180339887498949;
    double a = log(lo), b = log(hi);
    for (int it = 0; it < 48; it++) {
        double x1 = b - g * (b - a), x2 = a + g * (b - a);
        dev->v[key] = (uint64_t)llround(exp(x1));
        double f1 = step_error(cal, dev);
        dev->v[key] = (uint64_t)llround(exp(x2));
        double f2 = step_error(cal, dev);
        if (f1 <= f2)
            b = x2;
        else
            a = x1;
    }
    dev->v[key] = (uint64_t)llround(exp((a + b) / 2));
}

mem4d_status mem4d_calibration_fit(mem4d_calibration *cal, mem4d_device *device)
{
    if (!cal || !device)
        return MEM4D_E_INVALID_ARG;
    cal->msg[0] = '\0';
    if (cal->n == 0)
        return fail(cal, MEM4D_E_MISSING, 0, "no log to fit");
    mem4d_device dev = *device;
    bool fit_mm = false, fit_fp8 = false, fit_comm = false;
    double dalloc = 0, ratio = 0;
    size_t nmem = 0;
    for (size_t i = 0; i < cal->n; i++) {
        struct cal_log *lg = &cal->log[i];
        double step, a, r, compute;
        mem4d_status st = predict(cal, lg, &dev, &step, &a, &r, &compute);
        if (st != MEM4D_OK)
            return st;
        set_fig(lg, MEM4D_CALIBRATION_MEASURED_STEP_S, lg->step_s);
        set_fig(lg, MEM4D_CALIBRATION_PREDICTED_STEP_BEFORE_S, step);
        if (lg->have_tflops)
            set_fig(lg, MEM4D_CALIBRATION_MEASURED_TFLOPS_PER_GPU, lg->tflops);
        /* One log fits the constant that dominates its step. */
        if (compute <= 0)
            fit_comm = true;
        else if (lg->layout.v[MEM4D_LAYOUT_FP8])
            fit_fp8 = true;
        else
            fit_mm = true;
        if (lg->have_mem) {
            set_fig(lg, MEM4D_CALIBRATION_MEASURED_MAX_ALLOCATED, lg->max_alloc);
            set_fig(lg, MEM4D_CALIBRATION_MEASURED_MAX_RESERVED, lg->max_res);
            set_fig(lg, MEM4D_CALIBRATION_PREDICTED_MAX_ALLOCATED_BEFORE, a);
            set_fig(lg, MEM4D_CALIBRATION_PREDICTED_MAX_RESERVED_BEFORE, r);
            set_fig(lg, MEM4D_CALIBRATION_MEMORY_RANK, (double)lg->mem_rank);
            dalloc += lg->max_alloc - a;
            /* The estimate's reserved-over-allocated has a structural part
             * (stranded and rounded segments, doc/full-model.md "The
             * allocator") besides allocator_overhead_ppm x allocated; the
             * constant takes only what the structure leaves. */
            double ppm0 = (double)dev.v[MEM4D_DEVICE_ALLOCATOR_OVERHEAD_PPM] / 1e6, structural = r - a - a * ppm0;
            ratio += lg->max_alloc > 0 ? (lg->max_res - lg->max_alloc - structural) / lg->max_alloc : 0;
            nmem++;
        }
    }
    /* Coordinate descent over the constants the logs call for. */
    for (int round = 0; round < (fit_mm + fit_fp8 + fit_comm > 1 ? 3 : 1); round++) {
        if (fit_mm)
            fit_key(cal, &dev, MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM, 20000, 1000000);
        if (fit_fp8)
            fit_key(cal, &dev, MEM4D_DEVICE_FP8_EFFICIENCY_PPM, 20000, 1000000);
        if (fit_comm)
            fit_key(cal, &dev, MEM4D_DEVICE_COMM_EFFICIENCY_PPM, 10000, 1000000);
    }
    /* Memory: the fixed workspace takes the mean allocated offset (it adds to
     * both moments the peak is taken at), the allocator overhead the
     * measured reserved over allocated. */
    if (nmem) {
        double ws = (double)dev.v[MEM4D_DEVICE_WORKSPACE_BYTES] + dalloc / (double)nmem;
        dev.v[MEM4D_DEVICE_WORKSPACE_BYTES] = ws > 0 ? (uint64_t)llround(ws) : 0;
        double ppm = ratio / (double)nmem * 1e6;
        dev.v[MEM4D_DEVICE_ALLOCATOR_OVERHEAD_PPM] = ppm <= 0 ? 0 : ppm >= 1e6 ? 1000000 : (uint64_t)llround(ppm);
    }
    for (size_t i = 0; i < cal->n; i++) {
        struct cal_log *lg = &cal->log[i];
        double step, a, r, compute;
        mem4d_status st = predict(cal, lg, &dev, &step, &a, &r, &compute);
        if (st != MEM4D_OK)
            return st;
        set_fig(lg, MEM4D_CALIBRATION_PREDICTED_STEP_AFTER_S, step);
        if (lg->have_mem) {
            set_fig(lg, MEM4D_CALIBRATION_PREDICTED_MAX_ALLOCATED_AFTER, a);
            set_fig(lg, MEM4D_CALIBRATION_PREDICTED_MAX_RESERVED_AFTER, r);
        }
    }
    *device = dev;
    return MEM4D_OK;
}

mem4d_status mem4d_calibration_get(const mem4d_calibration *cal, size_t log_index,
                                      mem4d_calibration_figure figure, double *value)
{
    if (!cal || !value || log_index >= cal->n || (unsigned)figure >= M4D_NCALFIG)
        return MEM4D_E_INVALID_ARG;
    if (!cal->log[log_index].fig_set[figure])
        return MEM4D_E_UNSUPPORTED;
    *value = cal->log[log_index].fig[figure];
    return MEM4D_OK;
}
