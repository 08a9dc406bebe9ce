/*
 * admit: the shape of a cluster-scheduler admission hook over libmem4d.
 *
 * Given a job's Megatron-LM argument file, the GPU kind and the number of
 * GPUs the job asks for, it decides before anything is queued:
 *   admit    the job fits as written                          (exit 0)
 *   propose  it does not, but another layout on the same GPUs
 *            fits; its flags are printed, to replace the job's
 *            parallel, micro-batch, recompute and optimizer
 *            flags (a flag not printed is off)                 (exit 3)
 *   reject   nothing fits on these GPUs, or the job is invalid (exit 1)
 * Exit 2 is a usage error of the hook itself.
 *
 *   admit --args job.args --gpu h100-80 --gpus 64 [--strict] [--json]
 *         [--model NAME | --hf-config FILE]
 *
 * The argument file holds the words given to pretrain_gpt.py, one per line
 * or shell-like (quotes, '#' comments, backslash-newline continuations), as
 * they appear in launcher scripts.
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <mem4d/mem4d.h>

enum { ADMIT = 0, REJECT = 1, USAGE = 2, PROPOSE = 3 };

#define MAX_WORDS 4096
#define MAX_FILE (1u << 20)

struct words {
    int n;
    char *w[MAX_WORDS];
};

static void words_free(struct words *ws)
{
    for (int i = 0; i < ws->n; i++)
        free(ws->w[i]);
    ws->n = 0;
}

/* Scan one word starting at *s (not blank); quotes group, backslash escapes
 * outside single quotes, backslash-newline joins lines. */
static char *scan_word(const char **s)
{
    size_t cap = strlen(*s) + 1, len = 0;
    char *out = malloc(cap), quote = 0;
    const char *p = *s;
    if (!out)
        return NULL;
    for (; *p && (quote || (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')); p++) {
        if (quote && *p == quote)
            quote = 0;
        else if (!quote && (*p == '\'' || *p == '"'))
            quote = *p;
        else if (*p == '\\' && quote != '\'' && p[1]) {
            p++;
            if (*p != '\n')
                out[len++] = *p;
        } else
            out[len++] = *p;
    }
    out[len] = '\0';
    *s = p;
    return out;
}

static bool split_words(const char *s, struct words *ws)
{
    while (*s) {
        if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') {
            s++;
        } else if (*s == '\\' && (s[1] == '\n' || s[1] == '\r')) {
            s += 2;
        } else if (*s == '#') {
            while (*s && *s != '\n')
                s++;
        } else {
            if (ws->n >= MAX_WORDS) {
                fprintf(stderr, "admit: more than %d words in the argument file\n", MAX_WORDS);
                return false;
            }
            if (!(ws->w[ws->n++] = scan_word(&s)))
                return false;
        }
    }
    return true;
}

/* Opening a FIFO blocks until something writes to it, and a device may never
 * end: only regular files are read (a missing one is left to fopen). */
static bool regular_file(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        fprintf(stderr, "admit: %s is not a regular file\n", path);
        return false;
    }
    return true;
}

static bool read_args_file(const char *path, struct words *ws)
{
    if (!regular_file(path))
        return false;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "admit: cannot open %s: %s\n", path, strerror(errno));
        return false;
    }
    char *buf = malloc(MAX_FILE + 1);
    size_t n = buf ? fread(buf, 1, MAX_FILE + 1, f) : 0;
    fclose(f);
    if (!buf || n > MAX_FILE) {
        fprintf(stderr, "admit: %s is not a readable argument file (at most %u bytes)\n", path, MAX_FILE);
        free(buf);
        return false;
    }
    buf[n] = '\0';
    bool ok = split_words(buf, ws);
    free(buf);
    return ok;
}

struct hook_opts {
    const char *args, *gpu, *model, *hf_config;
    uint64_t gpus;
    bool strict, json;
};

static bool parse_u64(const char *text, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    if (!text || *text < '0' || *text > '9')
        return false;
    unsigned long long v = strtoull(text, &end, 10);
    if (*end || errno == ERANGE)
        return false;
    *out = v;
    return true;
}

static bool parse_opts(int argc, char **argv, struct hook_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--strict")) {
            o->strict = true;
            continue;
        }
        if (!strcmp(a, "--json")) {
            o->json = true;
            continue;
        }
        if (!v) {
            fprintf(stderr, "admit: %s needs a value\n", a);
            return false;
        }
        i++;
        if (!strcmp(a, "--args"))
            o->args = v;
        else if (!strcmp(a, "--gpu"))
            o->gpu = v;
        else if (!strcmp(a, "--model"))
            o->model = v;
        else if (!strcmp(a, "--hf-config"))
            o->hf_config = v;
        else if (!strcmp(a, "--gpus") && parse_u64(v, &o->gpus) && o->gpus > 0)
            continue;
        else {
            fprintf(stderr, "admit: bad option %s %s\n", a, v);
            return false;
        }
    }
    if (!o->args || !o->gpu || !o->gpus) {
        fprintf(stderr, "usage: admit --args FILE --gpu NAME --gpus N [--strict] [--json]\n"
                        "             [--model NAME | --hf-config FILE]\n");
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------------ */

struct job {
    mem4d_model *model;
    mem4d_layout *layout;
    mem4d_device *device;
    mem4d_report *report;
    mem4d_import *imp;
};

static void job_free(struct job *j)
{
    mem4d_model_free(j->model);
    mem4d_layout_free(j->layout);
    mem4d_device_free(j->device);
    mem4d_report_free(j->report);
    mem4d_import_free(j->imp);
}

/* The decision, as printed. */
struct decision {
    int code;
    char reason[512];
    char flags[1024]; /* Megatron flags of a proposal (mem4d_layout_megatron_args) */
    uint64_t peak, device_bytes;
};

static bool acceptable(const struct hook_opts *o, mem4d_verdict v)
{
    return v == MEM4D_VERDICT_FITS || (v == MEM4D_VERDICT_TIGHT && !o->strict);
}

/* Search the same GPUs for the fastest layout that fits. */
static void propose(const struct hook_opts *o, struct job *j, struct decision *d)
{
    mem4d_layout *best = NULL;
    mem4d_report *rep = NULL;
    mem4d_status st = mem4d_layout_new(&best);
    if (st == MEM4D_OK)
        st = mem4d_report_new(&rep);
    if (st == MEM4D_OK)
        st = mem4d_solve_best_layout(j->model, j->device, j->layout, best, rep);
    bool fits = st == MEM4D_OK && acceptable(o, mem4d_report_verdict(rep));
    /* The flags that turn the submitted layout into the proposed one. */
    if (fits)
        st = mem4d_layout_megatron_args(j->model, best, d->flags, sizeof d->flags, NULL);
    if (fits && st == MEM4D_OK) {
        d->code = PROPOSE;
        d->peak = mem4d_report_peak_bytes(rep);
        d->device_bytes = mem4d_report_device_bytes(rep);
    } else if (st == MEM4D_OK || st == MEM4D_END) {
        size_t used = strlen(d->reason);
        snprintf(d->reason + used, sizeof d->reason - used, "; no layout fits on %llu %s",
                 (unsigned long long)o->gpus, mem4d_device_name(j->device));
    } else {
        size_t used = strlen(d->reason);
        snprintf(d->reason + used, sizeof d->reason - used, "; the layout search failed: %s",
                 mem4d_strerror(st));
    }
    mem4d_report_free(rep);
    mem4d_layout_free(best);
}

static bool open_job(const struct hook_opts *o, struct job *j)
{
    mem4d_status st = mem4d_import_new(&j->imp);
    if (st == MEM4D_OK)
        st = mem4d_layout_new(&j->layout);
    if (st == MEM4D_OK)
        st = mem4d_report_new(&j->report);
    if (st == MEM4D_OK && (st = mem4d_device_new_preset(o->gpu, &j->device)) != MEM4D_OK)
        fprintf(stderr, "admit: unknown gpu '%s'\n", o->gpu);
    if (st == MEM4D_OK && o->model && (st = mem4d_model_new_preset(o->model, &j->model)) != MEM4D_OK)
        fprintf(stderr, "admit: unknown model '%s'\n", o->model);
    if (st == MEM4D_OK && !j->model)
        st = mem4d_model_new(&j->model);
    if (st == MEM4D_OK && o->hf_config && !regular_file(o->hf_config))
        st = MEM4D_E_IO;
    else if (st == MEM4D_OK && o->hf_config && (st = mem4d_import_hf_config(j->imp, o->hf_config, j->model)) != MEM4D_OK)
        fprintf(stderr, "admit: %s: %s\n", o->hf_config, mem4d_import_message(j->imp));
    return st == MEM4D_OK;
}

static void decide(const struct hook_opts *o, const struct words *ws, struct job *j, struct decision *d)
{
    mem4d_status st = mem4d_import_megatron(j->imp, ws->n, (const char *const *)ws->w, NULL, o->gpus,
                                            j->model, j->layout);
    d->code = REJECT;
    if (st != MEM4D_OK) {
        snprintf(d->reason, sizeof d->reason, "invalid arguments: %s", mem4d_import_message(j->imp));
        return;
    }
    char why[256] = "";
    if (mem4d_model_validate(j->model, why, sizeof why) != MEM4D_OK) {
        snprintf(d->reason, sizeof d->reason, "the model is incomplete: %s", why);
        return;
    }
    st = mem4d_estimate(j->model, j->layout, j->device, j->report);
    if (st == MEM4D_OK && acceptable(o, mem4d_report_verdict(j->report))) {
        d->code = ADMIT;
        d->peak = mem4d_report_peak_bytes(j->report);
        d->device_bytes = mem4d_report_device_bytes(j->report);
        snprintf(d->reason, sizeof d->reason, "%s", mem4d_verdict_name(mem4d_report_verdict(j->report)));
        return;
    }
    if (st == MEM4D_OK)
        snprintf(d->reason, sizeof d->reason, "the layout as written is %s: peak %.1f GiB of %.1f GiB",
                 mem4d_verdict_name(mem4d_report_verdict(j->report)),
                 (double)mem4d_report_peak_bytes(j->report) / 1073741824.0,
                 (double)mem4d_report_device_bytes(j->report) / 1073741824.0);
    else
        snprintf(d->reason, sizeof d->reason, "the layout as written is invalid: %s",
                 mem4d_report_message(j->report));
    propose(o, j, d);
}

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", (unsigned char)*s);
        else
            putchar(*s);
    }
    putchar('"');
}

static void report(const struct hook_opts *o, const struct job *j, const struct decision *d)
{
    static const char *const names[] = {"admit", "reject", "usage", "propose"};
    if (o->json) {
        printf("{\"decision\": \"%s\", \"reason\": ", names[d->code]);
        json_str(d->reason);
        printf(", \"peak_bytes\": %llu, \"device_bytes\": %llu, \"megatron_flags\": ",
               (unsigned long long)d->peak, (unsigned long long)d->device_bytes);
        json_str(d->flags);
        printf(", \"warnings\": [");
        for (size_t i = 0; i < mem4d_import_warning_count(j->imp); i++) {
            fputs(i ? ", " : "", stdout);
            json_str(mem4d_import_warning(j->imp, i));
        }
        printf("]}\n");
        return;
    }
    for (size_t i = 0; i < mem4d_import_warning_count(j->imp); i++)
        fprintf(stderr, "admit: warning: %s\n", mem4d_import_warning(j->imp, i));
    printf("%s: %s\n", names[d->code], d->reason);
    if (d->code == PROPOSE)
        printf("propose: replace the parallel (expert too), dispatcher, micro-batch, recompute and optimizer "
               "flags with\n"
               "propose: %s (peak %.1f GiB of %.1f GiB)\n", d->flags, (double)d->peak / 1073741824.0,
               (double)d->device_bytes / 1073741824.0);
}

int main(int argc, char **argv)
{
    struct hook_opts o = {0};
    struct words ws = {0};
    struct job j = {0};
    struct decision d = {.code = USAGE};
    if (!parse_opts(argc, argv, &o) || !read_args_file(o.args, &ws) || !open_job(&o, &j)) {
        words_free(&ws);
        job_free(&j);
        return USAGE;
    }
    decide(&o, &ws, &j, &d);
    report(&o, &j, &d);
    words_free(&ws);
    job_free(&j);
    return d.code;
}
