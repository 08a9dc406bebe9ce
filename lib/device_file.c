/*
 * Device files: a device described as text, one KEY = VALUE per line, so a
 * user describes a cluster without recompiling and `mem4d calibrate` can
 * write what it fitted. Keys are those of mem4d_device_set_str(), plus
 * "preset" (start from a built-in device; first key only) and "name".
 * Text after '#' is a comment. doc/perf.md, "Device files".
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "private.h"

#define LINE_MAX_LEN 512
#define FILE_MAX_BYTES (1u << 20)

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Trim [*b, *e) of blanks on both sides. */
static void trim(const char **b, const char **e)
{
    while (*b < *e && is_space(**b))
        (*b)++;
    while (*e > *b && is_space((*e)[-1]))
        (*e)--;
}

/* Apply one non-empty line "key = value" (already without its comment). */
static mem4d_status apply_line(mem4d_device *device, const char *b, const char *e, size_t lineno, bool first,
                               char *why, size_t why_size)
{
    const char *eq = memchr(b, '=', (size_t)(e - b));
    if (!eq) {
        m4d_msg(why, why_size, "line %zu: \"%.*s\" is not KEY = VALUE", lineno, (int)(e - b), b);
        return MEM4D_E_PARSE;
    }
    const char *kb = b, *ke = eq, *vb = eq + 1, *ve = e;
    trim(&kb, &ke);
    trim(&vb, &ve);
    char key[M4D_NAME_MAX], val[LINE_MAX_LEN];
    if (ke == kb || vb == ve || (size_t)(ke - kb) >= sizeof key) {
        m4d_msg(why, why_size, "line %zu: \"%.*s\" needs a key and a value", lineno, (int)(e - b), b);
        return MEM4D_E_PARSE;
    }
    memcpy(key, kb, (size_t)(ke - kb));
    key[ke - kb] = '\0';
    memcpy(val, vb, (size_t)(ve - vb));
    val[ve - vb] = '\0';
    if (strcmp(key, "name") == 0) {
        m4d_strlcpy(device->name, val, sizeof device->name);
        return MEM4D_OK;
    }
    if (strcmp(key, "preset") == 0) {
        mem4d_device *p = NULL;
        if (!first) {
            m4d_msg(why, why_size, "line %zu: preset must be the first key (it resets every other)", lineno);
            return MEM4D_E_CONFLICT;
        }
        if (mem4d_device_new_preset(val, &p) != MEM4D_OK) {
            m4d_msg(why, why_size, "line %zu: unknown device preset \"%s\"", lineno, val);
            return MEM4D_E_UNKNOWN_PRESET;
        }
        *device = *p;
        mem4d_device_free(p);
        return MEM4D_OK;
    }
    mem4d_status st = mem4d_device_set_str(device, key, val);
    if (st == MEM4D_E_UNKNOWN_KEY)
        m4d_msg(why, why_size, "line %zu: unknown device key \"%s\"", lineno, key);
    else if (st != MEM4D_OK) {
        /* the bounds, so that the sentence says what the key takes */
        int k = m4d_param_lookup(m4d_device_params, M4D_DEVICE_NPARAM, key);
        unsigned long long lo = k >= 0 ? (unsigned long long)m4d_device_params[k].min : 0;
        unsigned long long hi = k >= 0 ? (unsigned long long)m4d_device_params[k].max : 0;
        const struct m4d_param_desc *d = k >= 0 ? &m4d_device_params[k] : NULL;
        if (st == MEM4D_E_RANGE)
            m4d_msg(why, why_size, "line %zu: %s = %s is out of range (%llu to %llu)", lineno, key, val, lo, hi);
        else if (d && d->values)
            m4d_msg(why, why_size, "line %zu: %s = \"%s\" is not one of its names (%s, ...)", lineno, key, val,
                    d->values[0]);
        else if (d && d->kind == MEM4D_KIND_BOOLEAN)
            m4d_msg(why, why_size, "line %zu: %s = \"%s\" is not true or false", lineno, key, val);
        else
            m4d_msg(why, why_size, "line %zu: %s = \"%s\" is not a whole number from %llu to %llu", lineno, key,
                    val, lo, hi);
    }
    return st;
}

mem4d_status mem4d_device_parse(mem4d_device *device, const char *text, size_t length, char *why, size_t why_size)
{
    m4d_msg(why, why_size, "%s", "");
    if (!device || (!text && length)) {
        if (!device)
            m4d_msg(why, why_size, "the device is NULL");
        else
            m4d_msg(why, why_size, "the text is NULL, its length %zu", length);
        return MEM4D_E_INVALID_ARG;
    }
    /* Work on a copy: a rejected file leaves the device as it was. */
    mem4d_device work = *device;
    const char *p = text, *end = text + length;
    bool first = true;
    for (size_t lineno = 1; p < end; lineno++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
        const char *hash = memchr(p, '#', (size_t)(le - p)), *b = p, *e = hash ? hash : le;
        if (memchr(p, '\0', (size_t)(le - p))) {
            m4d_msg(why, why_size, "line %zu: a NUL byte in a device file", lineno);
            return MEM4D_E_PARSE;
        }
        if (le - p >= LINE_MAX_LEN) {
            m4d_msg(why, why_size, "line %zu is longer than %d bytes", lineno, LINE_MAX_LEN - 1);
            return MEM4D_E_PARSE;
        }
        trim(&b, &e);
        if (b < e) {
            mem4d_status st = apply_line(&work, b, e, lineno, first, why, why_size);
            if (st != MEM4D_OK)
                return st;
            first = false;
        }
        p = nl ? nl + 1 : end;
    }
    *device = work;
    return MEM4D_OK;
}

mem4d_status mem4d_device_load(mem4d_device *device, const char *path, char *why, size_t why_size)
{
    m4d_msg(why, why_size, "%s", "");
    if (!device || !path) {
        m4d_msg(why, why_size, "the %s is NULL", !device ? "device" : "path");
        return MEM4D_E_INVALID_ARG;
    }
    char *buf = NULL;
    size_t n = 0;
    mem4d_status st = m4d_read_file(path, "device file", FILE_MAX_BYTES, &buf, &n, why, why_size);
    if (st != MEM4D_OK)
        return st;
    st = mem4d_device_parse(device, buf, n, why, why_size);
    free(buf);
    return st;
}

mem4d_status mem4d_device_format(const mem4d_device *device, char *buf, size_t size, size_t *length)
{
    if (!device || (!buf && size))
        return MEM4D_E_INVALID_ARG;
    size_t used = 0;
    bool fits = true;
    char line[LINE_MAX_LEN];
    for (size_t k = 0; k <= M4D_DEVICE_NPARAM; k++) {
        /* A key below its bounds was never set (memory_bytes of a new
         * device): written as a comment, as a setter would refuse it. */
        const struct m4d_param_desc *d = k ? &m4d_device_params[k - 1] : NULL;
        uint64_t v = k ? device->v[k - 1] : 0;
        /* a choice by its name, as a user writes it ("stack = torchtitan") */
        const char *choice = k ? mem4d_device_value_name((mem4d_device_param)(k - 1), v) : NULL;
        int n = k == 0 ? snprintf(line, sizeof line, "# libmem4d device file\nname = %s\n", device->name)
                : v < d->min || v > d->max ? snprintf(line, sizeof line, "# %s not set\n", d->name)
                : choice                   ? snprintf(line, sizeof line, "%s = %s\n", d->name, choice)
                                           : snprintf(line, sizeof line, "%s = %llu\n", d->name, (unsigned long long)v);
        size_t len = n > 0 ? (size_t)n : 0;
        if (used + len < size)
            memcpy(buf + used, line, len);
        else
            fits = false;
        used += len;
    }
    if (length)
        *length = used;
    if (!fits) {
        if (size)
            buf[0] = '\0';
        return MEM4D_E_RANGE;
    }
    buf[used] = '\0';
    return MEM4D_OK;
}
