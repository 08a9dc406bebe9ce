/*
 * mem4d.conf: "key = value" lines, '#' comments.
 * SPDX-License-Identifier: MIT
 */
#include "conf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_CONF_BYTES (1u << 20)

static const char *const default_scripts[] = {"pretrain_gpt.py", NULL};

static void map_free(struct m4s_map *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->v[i].name);
        free(m->v[i].label);
        mem4d_device_free(m->v[i].device);
    }
    free(m->v);
    memset(m, 0, sizeof *m);
}

static void free_scripts(char **s)
{
    for (size_t i = 0; s && s[i]; i++)
        free(s[i]);
    free(s);
}

void m4s_config_free(struct m4s_config *c)
{
    if (!c)
        return;
    map_free(&c->devices);
    map_free(&c->partitions);
    map_free(&c->gres);
    mem4d_device_free(c->default_device.device);
    free(c->default_device.label);
    free_scripts(c->scripts);
    free(c);
}

static const struct m4s_named_device *map_find(const struct m4s_map *m, const char *name)
{
    for (size_t i = 0; name && i < m->n; i++)
        if (strcmp(m->v[i].name, name) == 0)
            return &m->v[i];
    return NULL;
}

/* Set an entry's device and label; takes the device. */
static int entry_set(struct m4s_named_device *e, const char *label, mem4d_device *d)
{
    char *l = strdup(label);
    if (!l)
        return -1;
    free(e->label);
    mem4d_device_free(e->device);
    e->label = l;
    e->device = d;
    return 0;
}

/* Add or replace; takes the device. */
static int map_put(struct m4s_map *m, const char *name, const char *label, mem4d_device *d)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->v[i].name, name) == 0)
            return entry_set(&m->v[i], label, d);
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 8;
        struct m4s_named_device *v = realloc(m->v, cap * sizeof *v);
        if (!v)
            return -1;
        m->v = v;
        m->cap = cap;
    }
    char *n = strdup(name);
    if (!n)
        return -1;
    memset(&m->v[m->n], 0, sizeof m->v[m->n]);
    if (entry_set(&m->v[m->n], label, d) != 0) {
        free(n);
        return -1;
    }
    m->v[m->n++].name = n;
    return 0;
}

const struct m4s_named_device *m4s_config_device(const struct m4s_config *c, const char *gpu_type,
                                                 const char *partition)
{
    const struct m4s_named_device *e;
    if (gpu_type && *gpu_type) {
        if ((e = map_find(&c->gres, gpu_type)))
            return e;
        if ((e = map_find(&c->devices, gpu_type)))
            return e;
    }
    /* A comma-separated partition list: the first one mapped. */
    for (const char *p = partition; p && *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char name[128];
        if (n < sizeof name) {
            memcpy(name, p, n);
            name[n] = '\0';
            if ((e = map_find(&c->partitions, name)))
                return e;
        }
        p = end ? end + 1 : NULL;
    }
    return c->default_device.device ? &c->default_device : NULL;
}

struct parser {
    const char *name;
    unsigned line;
    char *err;
    size_t err_size;
};

__attribute__((format(printf, 2, 3))) static int fail(struct parser *p, const char *fmt, ...)
{
    int n = snprintf(p->err, p->err_size, "%s:%u: ", p->name, p->line);
    if (n >= 0 && (size_t)n < p->err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err + n, p->err_size - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int parse_bool(struct parser *p, const char *key, const char *v, bool *out)
{
    if (!strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcmp(v, "1")) {
        *out = true;
        return 0;
    }
    if (!strcasecmp(v, "no") || !strcasecmp(v, "false") || !strcmp(v, "0")) {
        *out = false;
        return 0;
    }
    return fail(p, "%s = '%s': the value must be yes or no", key, v);
}

/* A device by name: one defined by device.NAME above, or a preset; a new
 * handle (a copy), or NULL with the error written. */
static mem4d_device *device_named(struct parser *p, const struct m4s_config *c, const char *key, const char *name)
{
    mem4d_device *d = NULL;
    const struct m4s_named_device *e = map_find(&c->devices, name);
    mem4d_status st = e ? mem4d_device_clone(e->device, &d) : mem4d_device_new_preset(name, &d);
    if (st == MEM4D_OK)
        return d;
    if (st == MEM4D_E_NOMEM) {
        fail(p, "out of memory");
        return NULL;
    }
    char known[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < mem4d_device_preset_count() && used < sizeof known; i++) {
        int n = snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "", mem4d_device_preset_name(i));
        used += n > 0 ? (size_t)n : 0;
    }
    fail(p, "%s = '%s': not a device defined above nor a preset (%s)", key, name, known);
    return NULL;
}

/* device.NAME = BASE [key=value ...] */
static int define_device(struct parser *p, struct m4s_config *c, const char *key, const char *name, char *v)
{
    char *save = NULL;
    char *base = strtok_r(v, " \t", &save);
    if (!base)
        return fail(p, "%s needs a base device (a preset or a device defined above)", key);
    mem4d_device *d = device_named(p, c, key, base);
    if (!d)
        return -1;
    for (char *kv; (kv = strtok_r(NULL, " \t", &save));) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            mem4d_device_free(d);
            return fail(p, "%s: '%s' is not KEY=VALUE", key, kv);
        }
        *eq = '\0';
        mem4d_status st = mem4d_device_set_str(d, kv, eq + 1);
        if (st != MEM4D_OK) {
            mem4d_device_free(d);
            return fail(p, "%s: %s=%s: %s", key, kv, eq + 1, mem4d_strerror(st));
        }
    }
    if (map_put(&c->devices, name, name, d) != 0) {
        mem4d_device_free(d);
        return fail(p, "out of memory");
    }
    return 0;
}

static int set_scripts(struct parser *p, struct m4s_config *c, char *v)
{
    size_t n = 0;
    char **s = calloc(strlen(v) / 2 + 2, sizeof *s);
    if (!s)
        return fail(p, "out of memory");
    char *save = NULL;
    for (char *w = strtok_r(v, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (!(s[n++] = strdup(w))) {
            free_scripts(s);
            return fail(p, "out of memory");
        }
    }
    if (n == 0) {
        free_scripts(s);
        return fail(p, "scripts needs at least one script name");
    }
    free_scripts(c->scripts);
    c->scripts = s;
    return 0;
}

static int set_key(struct parser *p, struct m4s_config *c, const char *key, char *v)
{
    if (!strcmp(key, "policy")) {
        if (!strcmp(v, "admit") || !strcmp(v, "reject")) {
            c->reject_unreadable = v[0] == 'r';
            return 0;
        }
        return fail(p, "policy = '%s': the value must be admit or reject", v);
    }
    if (!strcmp(key, "strict"))
        return parse_bool(p, key, v, &c->strict);
    if (!strcmp(key, "propose"))
        return parse_bool(p, key, v, &c->propose);
    if (!strcmp(key, "hf_config"))
        return parse_bool(p, key, v, &c->hf_config);
    if (!strcmp(key, "scripts"))
        return set_scripts(p, c, v);
    if (!strncmp(key, "device.", 7) && key[7])
        return define_device(p, c, key, key + 7, v);
    bool part = !strncmp(key, "partition.", 10) && key[10];
    bool gres = !strncmp(key, "gres.", 5) && key[5];
    if (part || gres || !strcmp(key, "default_device")) {
        mem4d_device *d = device_named(p, c, key, v);
        if (!d)
            return -1;
        int rc = part || gres ? map_put(part ? &c->partitions : &c->gres, key + (part ? 10 : 5), v, d)
                              : entry_set(&c->default_device, v, d);
        if (rc != 0) {
            mem4d_device_free(d);
            return fail(p, "out of memory");
        }
        return 0;
    }
    return fail(p, "unknown key '%s' (known: policy, strict, propose, hf_config, scripts, default_device, "
                   "partition.NAME, gres.TYPE, device.NAME)", key);
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

int m4s_config_parse(const char *text, size_t len, const char *name, struct m4s_config **out, char *err,
                     size_t err_size)
{
    struct parser p = {.name = name, .err = err, .err_size = err_size};
    *out = NULL;
    struct m4s_config *c = calloc(1, sizeof *c);
    if (!c)
        return fail(&p, "out of memory");
    c->propose = true;
    c->hf_config = true;
    size_t nscripts = sizeof default_scripts / sizeof *default_scripts;
    c->scripts = calloc(nscripts, sizeof *c->scripts);
    for (size_t i = 0; c->scripts && default_scripts[i]; i++)
        if (!(c->scripts[i] = strdup(default_scripts[i])))
            break;
    if (!c->scripts || !c->scripts[0]) {
        m4s_config_free(c);
        return fail(&p, "out of memory");
    }
    const char *s = text, *end = text + len;
    while (s < end) {
        p.line++;
        const char *eol = memchr(s, '\n', (size_t)(end - s));
        size_t n = (size_t)((eol ? eol : end) - s);
        char line[1024];
        if (n >= sizeof line) {
            m4s_config_free(c);
            return fail(&p, "the line is longer than %zu bytes", sizeof line - 1);
        }
        memcpy(line, s, n);
        line[n] = '\0';
        s = eol ? eol + 1 : end;
        if (memchr(line, '\0', n)) {
            m4s_config_free(c);
            return fail(&p, "the line holds a NUL byte: not a text file");
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *l = trim(line);
        if (!*l)
            continue;
        char *eq = strchr(l, '=');
        if (!eq) {
            m4s_config_free(c);
            return fail(&p, "'%s' is not KEY = VALUE", l);
        }
        *eq = '\0';
        char *key = trim(l), *val = trim(eq + 1);
        if (!*key || !*val || strpbrk(key, " \t")) {
            m4s_config_free(c);
            return fail(&p, "'%s = %s' is not KEY = VALUE", key, val);
        }
        if (set_key(&p, c, key, val) != 0) {
            m4s_config_free(c);
            return -1;
        }
    }
    *out = c;
    return 0;
}

int m4s_config_load(const char *path, struct m4s_config **out, bool *missing, char *err, size_t err_size)
{
    *missing = false;
    FILE *f = fopen(path, "rb");
    if (!f && errno == ENOENT) {
        *missing = true;
        return m4s_config_parse("", 0, path, out, err, err_size);
    }
    if (!f) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *buf = malloc(MAX_CONF_BYTES + 1);
    size_t n = buf ? fread(buf, 1, MAX_CONF_BYTES + 1, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad || n > MAX_CONF_BYTES) {
        snprintf(err, err_size, "%s: %s", path,
                 !buf ? "out of memory" : bad ? "read error" : "larger than 1 MiB: not a configuration file");
        free(buf);
        return -1;
    }
    int rc = m4s_config_parse(buf, n, path, out, err, err_size);
    free(buf);
    return rc;
}
