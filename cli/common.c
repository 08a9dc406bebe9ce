/*
 * Shared pieces of the mem4d tool: parsing, opening presets, printing reports.
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("mem4d: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

bool cli_parse_u64(const char *flag, const char *text, uint64_t *out)
{
    char *end = NULL;
    if (!text || !*text || *text == '-' || *text == '+' || *text == ' ') {
        cli_error("%s needs a non-negative integer, got '%s'", flag, text ? text : "");
        return false;
    }
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (*end != '\0' || errno == ERANGE) {
        cli_error("%s needs a non-negative integer, got '%s'", flag, text);
        return false;
    }
    *out = (uint64_t)v;
    return true;
}

bool cli_parse_gib(const char *flag, const char *text, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    double v = text ? strtod(text, &end) : 0.0;
    if (!text || end == text || *end != '\0' || errno == ERANGE || !(v > 0.0) || v > 1048576.0) {
        cli_error("%s needs a positive size in GiB (at most 1048576), got '%s'", flag, text ? text : "");
        return false;
    }
    *out = (uint64_t)llround(v * 1073741824.0);
    return true;
}

/* "a, b, c" into a buffer, for a one-line error. */
static const char *list_names(char *buf, size_t size, size_t (*count)(void), const char *(*name)(size_t))
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < count() && used < size; i++) {
        int n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", name(i));
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return buf;
}

bool cli_open_model(const char *preset, const char *hf_config, mem4d_model **out)
{
    *out = NULL;
    if (hf_config) {
        mem4d_import *imp = NULL;
        mem4d_status st = mem4d_import_new(&imp);
        if (st == MEM4D_OK && (st = mem4d_model_new(out)) == MEM4D_OK)
            st = mem4d_import_hf_config(imp, hf_config, *out);
        if (st != MEM4D_OK) {
            const char *msg = imp ? mem4d_import_message(imp) : "";
            cli_error("%s: %s", hf_config, *msg ? msg : mem4d_strerror(st));
            mem4d_model_free(*out);
            *out = NULL;
        }
        mem4d_import_free(imp);
        return st == MEM4D_OK;
    }
    if (!preset) {
        cli_error("--model is required");
        return false;
    }
    if (mem4d_model_new_preset(preset, out) != MEM4D_OK) {
        char names[1024];
        cli_error("unknown model '%s' (known: %s)", preset,
                  list_names(names, sizeof names, mem4d_model_preset_count, mem4d_model_preset_name));
        return false;
    }
    return true;
}

bool cli_open_device(const char *preset, uint64_t memory_bytes, mem4d_device **out)
{
    *out = NULL;
    if (mem4d_device_new_preset(preset, out) != MEM4D_OK) {
        char names[1024];
        cli_error("unknown gpu '%s' (known: %s)", preset,
                  list_names(names, sizeof names, mem4d_device_preset_count, mem4d_device_preset_name));
        return false;
    }
    if (memory_bytes && mem4d_device_set(*out, MEM4D_DEVICE_MEMORY_BYTES, memory_bytes) != MEM4D_OK) {
        cli_error("--gpu-memory-gib is out of range");
        mem4d_device_free(*out);
        *out = NULL;
        return false;
    }
    return true;
}

bool cli_layout_set(mem4d_layout *layout, const char *flag, mem4d_layout_param key, const char *text)
{
    if (!text) {
        cli_error("%s needs a value", flag);
        return false;
    }
    mem4d_status st = mem4d_layout_set_str(layout, mem4d_layout_param_name(key), text);
    if (st == MEM4D_OK)
        return true;
    uint64_t lo = 0, hi = 0;
    mem4d_layout_param_bounds(key, &lo, &hi);
    if (st == MEM4D_E_RANGE)
        cli_error("%s %s is out of range (%llu to %llu)", flag, text, (unsigned long long)lo,
                  (unsigned long long)hi);
    else
        cli_error("%s: '%s' is not a valid value", flag, text);
    return false;
}

const char *cli_flag_value(int argc, char **argv, int *i, const char *flag)
{
    size_t n = strlen(flag);
    if (strncmp(argv[*i], flag, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] != '\0')
        return NULL;
    if (*i + 1 >= argc)
        return "";
    return argv[++*i];
}

bool cli_layout_set_kv(mem4d_layout *layout, const char *kv)
{
    const char *eq = strchr(kv, '=');
    char key[128];
    if (!eq || (size_t)(eq - kv) >= sizeof key) {
        cli_error("--set needs KEY=VALUE, got '%s'", kv);
        return false;
    }
    memcpy(key, kv, (size_t)(eq - kv));
    key[eq - kv] = '\0';
    mem4d_layout_param p;
    if (mem4d_layout_param_from_name(key, &p) != MEM4D_OK) {
        cli_error("--set: unknown layout key '%s'", key);
        return false;
    }
    return cli_layout_set(layout, key, p, eq + 1);
}

double cli_gib(uint64_t bytes)
{
    return (double)bytes / 1073741824.0;
}

static uint64_t term(const mem4d_report *r, uint32_t stage, mem4d_term t)
{
    uint64_t v = 0;
    mem4d_report_get(r, stage, t, &v);
    return v;
}

void cli_print_report(FILE *out, const mem4d_model *model, const mem4d_layout *layout,
                      const mem4d_device *device, const mem4d_report *r)
{
    uint64_t v[6] = {0};
    static const mem4d_layout_param keys[] = {MEM4D_LAYOUT_TP, MEM4D_LAYOUT_CP, MEM4D_LAYOUT_PP,
                                               MEM4D_LAYOUT_MICRO_BATCH, MEM4D_LAYOUT_SEQ_LENGTH};
    for (size_t i = 0; i < 5; i++)
        mem4d_layout_get(layout, keys[i], &v[i]);
    mem4d_report_info(r, MEM4D_INFO_DP, &v[5]);
    fprintf(out, "%s on %s, tp %llu cp %llu pp %llu dp %llu, micro-batch %llu, sequence %llu, %s mode\n",
            mem4d_model_name(model), mem4d_device_name(device), (unsigned long long)v[0],
            (unsigned long long)v[1], (unsigned long long)v[2], (unsigned long long)v[5],
            (unsigned long long)v[3], (unsigned long long)v[4], mem4d_mode_name(mem4d_report_mode(r)));
    fprintf(out, "%5s %8s %9s %9s %11s %9s %9s %9s\n", "stage", "layers", "weights", "grads", "optimizer",
            "activ.", "overhead", "total");
    for (uint32_t s = 0; s < mem4d_report_num_stages(r); s++)
        fprintf(out, "%5u %8llu %9.2f %9.2f %11.2f %9.2f %9.2f %9.2f%s\n", s,
                (unsigned long long)term(r, s, MEM4D_TERM_LAYERS), cli_gib(term(r, s, MEM4D_TERM_WEIGHTS)),
                cli_gib(term(r, s, MEM4D_TERM_GRADIENTS)), cli_gib(term(r, s, MEM4D_TERM_OPTIMIZER)),
                cli_gib(term(r, s, MEM4D_TERM_ACTIVATIONS)), cli_gib(term(r, s, MEM4D_TERM_OVERHEAD)),
                cli_gib(term(r, s, MEM4D_TERM_TOTAL)), s == mem4d_report_peak_stage(r) ? "  <- peak" : "");
    uint64_t dev = mem4d_report_device_bytes(r), peak = mem4d_report_peak_bytes(r);
    fprintf(out, "GiB. peak %.2f GiB of %.2f GiB (%.1f%%): %s\n", cli_gib(peak), cli_gib(dev),
            dev ? 100.0 * (double)peak / (double)dev : 0.0, mem4d_verdict_name(mem4d_report_verdict(r)));
}

void cli_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

void cli_print_report_json(FILE *out, const mem4d_report *r)
{
    static const mem4d_term terms[] = {MEM4D_TERM_WEIGHTS, MEM4D_TERM_GRADIENTS, MEM4D_TERM_OPTIMIZER,
                                       MEM4D_TERM_ACTIVATIONS, MEM4D_TERM_OVERHEAD, MEM4D_TERM_TOTAL,
                                       MEM4D_TERM_PARAMS, MEM4D_TERM_LAYERS, MEM4D_TERM_IN_FLIGHT,
                                       MEM4D_TERM_PEAK_ALLOCATED, MEM4D_TERM_PEAK_RESERVED};
    fprintf(out, "{\"mode\": \"%s\", \"verdict\": \"%s\", \"device_bytes\": %llu, \"peak_bytes\": %llu, "
                 "\"peak_stage\": %u, \"stages\": [",
            mem4d_mode_name(mem4d_report_mode(r)), mem4d_verdict_name(mem4d_report_verdict(r)),
            (unsigned long long)mem4d_report_device_bytes(r), (unsigned long long)mem4d_report_peak_bytes(r),
            mem4d_report_peak_stage(r));
    for (uint32_t s = 0; s < mem4d_report_num_stages(r); s++) {
        fprintf(out, "%s{\"stage\": %u", s ? ", " : "", s);
        for (size_t i = 0; i < sizeof terms / sizeof terms[0]; i++)
            fprintf(out, ", \"%s\": %llu", mem4d_term_name(terms[i]), (unsigned long long)term(r, s, terms[i]));
        fputc('}', out);
    }
    fprintf(out, "]}\n");
}
