/*
 * The decision on one job. Every libmem4d handle is made and freed here,
 * per job; the configuration is only read.
 * SPDX-License-Identifier: MIT
 */
#include "decide.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "batch_script.h"

#define MAX_HF_CONFIG_BYTES (1u << 20)
#define GIB 1073741824.0

const char *m4s_outcome_name(enum m4s_outcome o)
{
    static const char *const names[] = {"no-training", "fits", "oom", "tight", "invalid", "unknown"};
    return (unsigned)o < sizeof names / sizeof *names ? names[o] : "unknown";
}

struct work {
    const struct m4s_config *conf;
    const struct m4s_job *job;
    struct m4s_decision *d;
    struct m4s_script script;
    const struct m4s_named_device *dev;
    mem4d_model *model;
    mem4d_layout *layout;
    mem4d_report *report;
    mem4d_import *imp;
};

__attribute__((format(printf, 2, 3))) static void say(struct m4s_decision *d, const char *fmt, ...)
{
    size_t used = strlen(d->message);
    if (used + 1 >= sizeof d->message)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->message + used, sizeof d->message - used, fmt, ap);
    va_end(ap);
}

/* What cannot be read or computed: the configured policy decides. */
__attribute__((format(printf, 2, 3))) static void unknown(struct work *w, const char *fmt, ...)
{
    struct m4s_decision *d = w->d;
    d->outcome = M4S_UNKNOWN;
    d->reject = w->conf->reject_unreadable;
    d->message[0] = '\0';
    say(d, "mem4d: cannot check this job's GPU memory: ");
    size_t used = strlen(d->message);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->message + used, sizeof d->message - used, fmt, ap);
    va_end(ap);
    say(d, " (policy = %s)", d->reject ? "reject" : "admit");
}

/* Read a config.json the submitter may read: a regular file, owned by them
 * or readable by everyone, at most 1 MiB; never blocks on a FIFO or device. */
static char *read_hf(struct work *w, const char *path, size_t *size)
{
    if (path[0] != '/') {
        unknown(w, "--hf-config %s is not an absolute path", path);
        return NULL;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        unknown(w, "--hf-config %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        unknown(w, "--hf-config %s is not a regular file", path);
    } else if (!((st.st_uid == w->job->uid && (st.st_mode & S_IRUSR)) || (st.st_mode & S_IROTH))) {
        unknown(w, "--hf-config %s is neither owned by the submitter nor readable by everyone", path);
    } else if (st.st_size > (off_t)MAX_HF_CONFIG_BYTES) {
        unknown(w, "--hf-config %s has more than %u bytes", path, MAX_HF_CONFIG_BYTES);
    } else if (!(buf = malloc((size_t)st.st_size + 1))) {
        unknown(w, "out of memory");
    } else {
        size_t got = 0;
        while (got < (size_t)st.st_size) {
            ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        if (got != (size_t)st.st_size) {
            unknown(w, "--hf-config %s could not be read whole", path);
            free(buf);
            buf = NULL;
        } else {
            buf[got] = '\0';
            *size = got;
        }
    }
    close(fd);
    return buf;
}

static bool rule_status(mem4d_status st)
{
    switch (st) {
    case MEM4D_E_HEADS_TP:
    case MEM4D_E_KV_HEADS_TP:
    case MEM4D_E_LAYERS_PP:
    case MEM4D_E_WORLD:
    case MEM4D_E_SEQ:
    case MEM4D_E_BATCH:
    case MEM4D_E_DIM_TP:
    case MEM4D_E_EXPERTS:
        return true;
    default:
        return false;
    }
}

/* The model and layout of the job; false after unknown(). */
static bool import_job(struct work *w)
{
    const struct m4s_script *s = &w->script;
    mem4d_status st = s->model ? mem4d_model_new_preset(s->model, &w->model) : mem4d_model_new(&w->model);
    if (st == MEM4D_E_UNKNOWN_PRESET) {
        unknown(w, "--model %s on line %u is not a model preset", s->model, s->line);
        return false;
    }
    if (st == MEM4D_OK)
        st = mem4d_layout_new(&w->layout);
    if (st == MEM4D_OK)
        st = mem4d_report_new(&w->report);
    if (st == MEM4D_OK)
        st = mem4d_import_new(&w->imp);
    if (st != MEM4D_OK) {
        unknown(w, "%s", mem4d_strerror(st));
        return false;
    }
    if (s->hf_config) {
        size_t size = 0;
        char *json;
        if (!w->conf->hf_config) {
            unknown(w, "--hf-config is turned off (hf_config = no)");
            return false;
        }
        if (!(json = read_hf(w, s->hf_config, &size)))
            return false;
        st = mem4d_import_hf_config_buffer(w->imp, json, size, w->model);
        free(json);
        if (st != MEM4D_OK) {
            unknown(w, "--hf-config %s: %s", s->hf_config, mem4d_import_message(w->imp));
            return false;
        }
    }
    /* The job's environment, as `mem4d check` run in the job reads its own:
     * PYTORCH_CUDA_ALLOC_CONF's expandable_segments changes the reserved
     * memory (the world size is the request's, not WORLD_SIZE's). */
    st = mem4d_import_megatron(w->imp, s->argc, (const char *const *)s->argv, w->job->envp, w->job->req.gpus,
                               w->model, w->layout);
    if (st != MEM4D_OK) {
        unknown(w, "the arguments on line %u: %s", s->line, mem4d_import_message(w->imp));
        return false;
    }
    char why[256] = "";
    if (mem4d_model_validate(w->model, why, sizeof why) != MEM4D_OK) {
        unknown(w, "the arguments on line %u do not describe a whole model: %s", s->line, why);
        return false;
    }
    return true;
}

/* "stage 2 needs 95.30 GiB (102325780480 bytes) per GPU" */
static void say_peak(struct work *w, const mem4d_report *r)
{
    say(w->d, "pipeline stage %u needs %.2f GiB (%llu bytes) per GPU; one %s GPU has %.2f GiB (%llu bytes)",
        (unsigned)mem4d_report_peak_stage(r), (double)mem4d_report_peak_bytes(r) / GIB,
        (unsigned long long)mem4d_report_peak_bytes(r), w->dev->label, (double)mem4d_report_device_bytes(r) / GIB,
        (unsigned long long)mem4d_report_device_bytes(r));
}

/* The fastest layout of the same model on the same GPUs that fits. */
static void propose(struct work *w)
{
    mem4d_layout *best = NULL;
    mem4d_report *rep = NULL;
    mem4d_status st = mem4d_layout_new(&best);
    if (st == MEM4D_OK)
        st = mem4d_report_new(&rep);
    if (st == MEM4D_OK)
        st = mem4d_solve_best_layout(w->model, w->dev->device, w->layout, best, rep);
    if (st == MEM4D_OK) {
        char flags[1024];
        if (mem4d_layout_megatron_args(w->model, best, flags, sizeof flags, NULL) == MEM4D_OK)
            say(w->d, "; on these %llu GPUs this layout fits (%.2f GiB per GPU): %s",
                (unsigned long long)w->job->req.gpus, (double)mem4d_report_peak_bytes(rep) / GIB, flags);
    } else if (st == MEM4D_END) {
        say(w->d, "; no layout of this model fits on %llu %s GPUs", (unsigned long long)w->job->req.gpus,
            w->dev->label);
    }
    mem4d_report_free(rep);
    mem4d_layout_free(best);
}

static void estimate(struct work *w)
{
    struct m4s_decision *d = w->d;
    char why[512] = "";
    mem4d_status st = mem4d_validate(w->model, w->layout, why, sizeof why);
    if (rule_status(st)) {
        d->outcome = M4S_INVALID;
        d->reject = true;
        say(d, "mem4d: this job's parallel layout is invalid (%s): %s", mem4d_strerror(st), why);
        if (w->conf->propose)
            propose(w);
        return;
    }
    if (st == MEM4D_OK)
        st = mem4d_estimate(w->model, w->layout, w->dev->device, w->report);
    if (st != MEM4D_OK) {
        unknown(w, "%s", why[0] ? why : mem4d_report_message(w->report));
        return;
    }
    mem4d_verdict v = mem4d_report_verdict(w->report);
    if (v == MEM4D_VERDICT_FITS || (v == MEM4D_VERDICT_TIGHT && !w->conf->strict)) {
        d->outcome = M4S_FITS;
        say(d, "mem4d: %s on %llu %s GPUs: ", mem4d_verdict_name(v), (unsigned long long)w->job->req.gpus,
            w->dev->label);
        say_peak(w, w->report);
        return;
    }
    d->reject = true;
    if (v == MEM4D_VERDICT_OOM) {
        d->outcome = M4S_OOM;
        say(d, "mem4d: this job would run out of GPU memory: ");
    } else {
        uint64_t ppm = 0;
        /* the margin of the report's mode: full mode's own, paper mode's 80% */
        mem4d_device_get(w->dev->device,
                         mem4d_report_mode(w->report) == MEM4D_MODE_FULL ? MEM4D_DEVICE_FULL_FIT_THRESHOLD_PPM
                                                                         : MEM4D_DEVICE_FIT_THRESHOLD_PPM,
                         &ppm);
        d->outcome = M4S_TIGHT;
        say(d, "mem4d: this job's GPU memory is above the %.0f%% safety margin (strict = yes): ",
            (double)ppm / 1e4);
    }
    say_peak(w, w->report);
    if (w->conf->propose)
        propose(w);
}

void m4s_decide(const struct m4s_config *conf, const struct m4s_job *job, struct m4s_decision *d)
{
    struct work w = {.conf = conf, .job = job, .d = d};
    memset(d, 0, sizeof *d);
    const char *text = job->script ? job->script : "";
    if (m4s_read_script(text, strlen(text), (const char *const *)conf->scripts, job->envp, job->argv,
                        &w.script) != 0) {
        unknown(&w, "out of memory while reading the script");
        return;
    }
    switch (w.script.found) {
    case M4S_FOUND_NONE:
        d->outcome = M4S_NO_TRAINING;
        say(d, "mem4d: no training command in the script");
        break;
    case M4S_FOUND_UNREADABLE:
        unknown(&w, "%s", w.script.why);
        break;
    default:
        if (!job->req.gpus) {
            unknown(&w, "%s", job->req.why);
        } else if (!(w.dev = m4s_config_device(conf, job->req.gpu_type, job->partition))) {
            unknown(&w, "no device for GPU type '%s' in partition '%s' (map one in mem4d.conf: gres.TYPE, "
                        "partition.NAME or default_device)",
                    job->req.gpu_type, job->partition ? job->partition : "(default)");
        } else if (import_job(&w)) {
            estimate(&w);
        }
    }
    m4s_script_free(&w.script);
    mem4d_import_free(w.imp);
    mem4d_report_free(w.report);
    mem4d_layout_free(w.layout);
    mem4d_model_free(w.model);
}
