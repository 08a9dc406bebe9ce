/*
 * The one option parser and the one usage printer of the mem4d tool, both
 * driven by a subcommand's table of struct cli_option rows (cli.h).
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/* Length of the well-formed UTF-8 sequence at s (1 to 4), or 0. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    unsigned cp = n == 1 ? c : c & (0x7fu >> n);
    for (size_t k = 1; k < n; k++) {
        if ((s[k] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[k] & 0x3fu);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return n;
}

const char *cli_printable(const char *text, char *buf, size_t size)
{
    const unsigned char *s = (const unsigned char *)(text ? text : "");
    size_t used = 0;
    while (*s && size) {
        size_t n = utf8_len(s);
        unsigned cp = n == 2 ? (s[0] & 0x1fu) << 6 | (s[1] & 0x3fu) : n == 3 ? (s[0] & 0xfu) << 12 | (s[1] & 0x3fu) << 6 | (s[2] & 0x3fu) : 0;
        char esc[12] = "";
        if (n == 0 || (n == 1 && (*s < 0x20 || *s == 0x7f)))
            snprintf(esc, sizeof esc, "\\x%02x", *s); /* a control character or a byte that is not UTF-8 */
        else if ((n == 2 && cp >= 0x80 && cp <= 0x9f) || (n == 3 && ((cp >= 0x202a && cp <= 0x202e) ||
                                                                     (cp >= 0x2066 && cp <= 0x2069) ||
                                                                     cp == 0x2028 || cp == 0x2029 || cp == 0x200e ||
                                                                     cp == 0x200f || cp == 0x061c)))
            snprintf(esc, sizeof esc, "\\u%04x", cp); /* C1 controls, bidirectional and line separators */
        size_t w = esc[0] ? strlen(esc) : n ? n : 1;
        if (used + w >= size)
            break;
        memcpy(buf + used, esc[0] ? esc : (const char *)s, w);
        used += w;
        s += n ? n : 1;
    }
    if (size)
        buf[used] = '\0';
    return size ? buf : "";
}

const char *cli_text(const char *text)
{
    static char bufs[4][1024];
    static unsigned next;
    return cli_printable(text, bufs[next++ % 4], sizeof bufs[0]);
}

void cli_error(const char *fmt, ...)
{
    /* paths, values and the library's sentences quote what the user gave */
    char msg[2048], shown[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "mem4d: %s\n", cli_printable(msg, shown, sizeof shown));
}

/* --- values ----------------------------------------------------------------- */

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* Decimal only: "0x10", "+1", " 1" and "1e3" are refused. */
static bool parse_uint(const char *flag, const char *text, uint64_t min, uint64_t *out)
{
    errno = 0;
    unsigned long long v = all_digits(text) ? strtoull(text, NULL, 10) : 0;
    if (!all_digits(text)) {
        cli_error("%s needs a non-negative decimal integer, got '%s'", flag, text);
        return false;
    }
    if (errno == ERANGE) {
        cli_error("%s %s is out of range (at most 18446744073709551615)", flag, text);
        return false;
    }
    if (v < min) {
        cli_error("%s must be at least %llu, got %s", flag, (unsigned long long)min, text);
        return false;
    }
    *out = (uint64_t)v;
    return true;
}

/* The smallest and largest GPU memory, in GiB, the tool accepts: below a
 * MiB is a unit mix-up (bytes or MiB given as GiB), above 2^20 GiB is the
 * library's own bound on memory_bytes. */
#define GIB_MIN (1.0 / 1024.0)
#define GIB_MAX 1048576.0

/* "80", "79.5": digits with at most one decimal point; no sign, exponent or hex. */
static bool parse_gib(const char *flag, const char *text, uint64_t *out)
{
    size_t whole = strspn(text, "0123456789"), frac = 0;
    bool dot = text[whole] == '.';
    if (dot)
        frac = strspn(text + whole + 1, "0123456789");
    bool decimal = whole + frac > 0 && text[whole + (dot ? 1 + frac : 0)] == '\0';
    double v = decimal ? strtod(text, NULL) : -1.0;
    if (!(v >= GIB_MIN && v <= GIB_MAX)) {
        cli_error("%s needs a size in GiB from 1/1024 (one MiB) to %.0f, got '%s'", flag, GIB_MAX, text);
        return false;
    }
    *out = (uint64_t)llround(v * 1073741824.0);
    return true;
}

/* A layout key from text: decimal numbers only, else one of the key's names;
 * the key is then one the command line set (cli_layout_given). */
static bool layout_set(struct cli_args *a, const char *flag, mem4d_layout_param key, const char *text, uint64_t min)
{
    mem4d_layout *layout = a->layout;
    if (text[0] >= '0' && text[0] <= '9' && !all_digits(text)) {
        cli_error("%s needs a decimal number, got '%s'", flag, text);
        return false;
    }
    mem4d_status st = mem4d_layout_set_str(layout, mem4d_layout_param_name(key), text);
    uint64_t v = 0, lo = 0, hi = 0;
    if (st == MEM4D_OK && mem4d_layout_get(layout, key, &v) == MEM4D_OK && v >= min) {
        if ((size_t)key < sizeof a->layout_given / sizeof a->layout_given[0])
            a->layout_given[key] = true;
        return true;
    }
    mem4d_layout_param_bounds(key, &lo, &hi);
    if (st == MEM4D_OK)
        cli_error("%s must be at least %llu, got %s", flag, (unsigned long long)min, text);
    else if (st == MEM4D_E_RANGE)
        cli_range_error(flag, text, lo > min ? lo : min, hi);
    else
        cli_value_error(flag, text, CLI_TABLE_LAYOUT, (int)key, min);
    return false;
}

void cli_value_error(const char *flag, const char *text, enum cli_table table, int key, uint64_t min)
{
    mem4d_param_kind kind = MEM4D_KIND_INTEGER;
    uint64_t lo = 0, hi = 0;
    if (table == CLI_TABLE_MODEL) {
        mem4d_model_param_kind((mem4d_model_param)key, &kind);
        mem4d_model_param_bounds((mem4d_model_param)key, &lo, &hi);
    } else if (table == CLI_TABLE_LAYOUT) {
        mem4d_layout_param_kind((mem4d_layout_param)key, &kind);
        mem4d_layout_param_bounds((mem4d_layout_param)key, &lo, &hi);
    } else {
        mem4d_device_param_kind((mem4d_device_param)key, &kind);
        mem4d_device_param_bounds((mem4d_device_param)key, &lo, &hi);
    }
    if (kind == MEM4D_KIND_BOOLEAN) {
        cli_error("%s: '%s' is not true or false (or 1 or 0)", flag, text);
        return;
    }
    if (kind == MEM4D_KIND_CHOICE) {
        char names[512] = "";
        size_t used = 0;
        for (uint64_t v = lo; v <= hi && v < 64 && used < sizeof names; v++) {
            const char *n = table == CLI_TABLE_MODEL    ? mem4d_model_value_name((mem4d_model_param)key, v)
                            : table == CLI_TABLE_LAYOUT ? mem4d_layout_value_name((mem4d_layout_param)key, v)
                                                        : mem4d_device_value_name((mem4d_device_param)key, v);
            int w = n ? snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", n) : 0;
            used += w > 0 ? (size_t)w : 0;
        }
        cli_error("%s: '%s' is not one of %s", flag, text, names);
        return;
    }
    cli_error("%s: '%s' is not a whole number from %llu to %llu (decimal digits only)", flag, text,
              (unsigned long long)(lo > min ? lo : min), (unsigned long long)hi);
}

void cli_range_error(const char *flag, const char *text, uint64_t lo, uint64_t hi)
{
    uint64_t v = 0;
    /* Some keys take only some values of their range (main_grad_bytes: 2 or 4). */
    if (text && all_digits(text) && (v = strtoull(text, NULL, 10)) >= lo && v <= hi)
        cli_error("%s %s is not a value this key takes (it lies in %llu to %llu, but not every value does)", flag,
                  text, (unsigned long long)lo, (unsigned long long)hi);
    else if (text)
        cli_error("%s %s is out of range (%llu to %llu)", flag, text, (unsigned long long)lo, (unsigned long long)hi);
    else
        cli_error("%s is out of range (%llu to %llu)", flag, (unsigned long long)lo, (unsigned long long)hi);
}

/* --- plan's SPEC: "V", "LO-HI" or "A,B,C" ------------------------------------ */

/* One value, through the layout's own parser (so "full" and "true" work). */
static bool spec_value(mem4d_layout *scratch, const char *flag, mem4d_layout_param key, const char *text,
                       uint64_t *v)
{
    if (!*text) {
        cli_error("%s: an empty value in the SPEC (V, LO-HI or A,B,C)", flag);
        return false;
    }
    mem4d_status st = text[0] >= '0' && text[0] <= '9' && !all_digits(text)
                          ? MEM4D_E_PARSE
                          : mem4d_layout_set_str(scratch, mem4d_layout_param_name(key), text);
    if (st == MEM4D_OK && mem4d_layout_get(scratch, key, v) == MEM4D_OK)
        return true;
    uint64_t lo = 0, hi = 0;
    mem4d_layout_param_bounds(key, &lo, &hi);
    if (st == MEM4D_E_RANGE)
        cli_range_error(flag, text, lo, hi);
    else
        cli_value_error(flag, text, CLI_TABLE_LAYOUT, (int)key, 0);
    return false;
}

static bool parse_spec(struct cli_args *a, const char *flag, mem4d_layout_param key, const char *text)
{
    char buf[512];
    if (strlen(text) >= sizeof buf) {
        cli_error("%s needs a value, a range LO-HI or a list A,B,C", flag);
        return false;
    }
    size_t k = 0;
    while (k < a->n_spec && a->spec[k].key != key)
        k++;
    if (k == CLI_MAX_SPECS) {
        cli_error("%s: too many constraints", flag);
        return false;
    }
    struct cli_spec *s = &a->spec[k];
    memset(s, 0, sizeof *s);
    s->flag = flag;
    s->key = key;
    if (k == a->n_spec)
        a->n_spec++;
    strcpy(buf, text);
    char *dash = strchr(buf, '-');
    if (strchr(buf, ',')) {
        s->is_list = true;
        for (char *tok = buf, *next; tok; tok = next) {
            next = strchr(tok, ',');
            if (next)
                *next++ = '\0';
            if (s->n == CLI_MAX_LIST) {
                cli_error("%s: at most %d values", flag, CLI_MAX_LIST);
                return false;
            }
            if (!spec_value(a->scratch, flag, key, tok, &s->list[s->n++]))
                return false;
        }
        return true;
    }
    if (dash && dash != buf) {
        *dash = '\0';
        if (!spec_value(a->scratch, flag, key, buf, &s->lo) || !spec_value(a->scratch, flag, key, dash + 1, &s->hi))
            return false;
        if (s->lo > s->hi) {
            cli_error("%s %s-%s is an empty range: LO must not exceed HI", flag, buf, dash + 1);
            return false;
        }
        return true;
    }
    if (!spec_value(a->scratch, flag, key, buf, &s->lo))
        return false;
    s->hi = s->lo;
    return true;
}

/* --- model and device settings, applied once their objects exist ------------ */

static bool pend(struct cli_pending *list, size_t *n, const char *flag, size_t key, const char *text,
                 uint64_t value)
{
    if (*n == CLI_MAX_PENDING) {
        cli_error("%s: more than %d settings", flag, CLI_MAX_PENDING);
        return false;
    }
    list[(*n)++] = (struct cli_pending){flag, key, text, value};
    return true;
}

/* A key unknown to the table a flag sets: the error, and the flag of the
 * table that knows it (--set stack=... is --device-set's). */
static void unknown_key(const struct cli_option *o, const char *table, const char *key, const char *val)
{
    mem4d_layout_param lp;
    mem4d_model_param mp;
    mem4d_device_param dp;
    const char *other = strcmp(table, "layout") && mem4d_layout_param_from_name(key, &lp) == MEM4D_OK ? "layout"
                        : strcmp(table, "model") && mem4d_model_param_from_name(key, &mp) == MEM4D_OK ? "model"
                        : strcmp(table, "device") && mem4d_device_param_from_name(key, &dp) == MEM4D_OK ? "device"
                                                                                                        : NULL;
    const char *flag = !other ? NULL : !strcmp(other, "layout") ? "--set" : !strcmp(other, "model") ? "--model-set"
                                                                                                     : "--device-set";
    if (other)
        cli_error("%s: unknown %s key '%s': a %s key, %s %s=%s", o->name, table, key, other, flag, key, val);
    else
        cli_error("%s: unknown %s key '%s'", o->name, table, key);
}

/* KEY=VALUE: the key by its library name. */
static bool parse_keyval(struct cli_args *a, const struct cli_option *o, const char *kv)
{
    const char *eq = strchr(kv, '=');
    char key[128];
    if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof key) {
        cli_error("%s needs KEY=VALUE, got '%s'", o->name, kv);
        return false;
    }
    memcpy(key, kv, (size_t)(eq - kv));
    key[eq - kv] = '\0';
    const char *val = eq + 1;
    if (o->dest == CLI_TO_LAYOUT && strcmp(key, "stage_layers") == 0) {
        /* the layer table: a list, not a key's number */
        mem4d_status st = mem4d_layout_set_str(a->layout, key, val);
        if (st != MEM4D_OK) {
            cli_error("%s stage_layers needs the layers of each virtual stage, comma-separated (at most %zu, "
                      "4096 layers in all), got '%s'", o->name, mem4d_layout_stage_layers_max(), val);
            return false;
        }
        return true;
    }
    if (o->dest == CLI_TO_MODEL && (strcmp(key, "layer_pattern") == 0 || strcmp(key, "hybrid_override_pattern") == 0)) {
        a->layer_pattern = val; /* applied to the model before its keys (it sets num_layers) */
        return true;
    }
    if (val[0] >= '0' && val[0] <= '9' && !all_digits(val)) {
        cli_error("%s %s needs a decimal number, got '%s'", o->name, key, val);
        return false;
    }
    if (o->dest == CLI_TO_LAYOUT) {
        mem4d_layout_param p;
        if (mem4d_layout_param_from_name(key, &p) != MEM4D_OK) {
            unknown_key(o, "layout", key, val);
            return false;
        }
        char flag[sizeof key + 16];
        snprintf(flag, sizeof flag, "%s %s", o->name, key);
        return layout_set(a, flag, p, val, 0);
    }
    if (o->dest == CLI_TO_MODEL) {
        mem4d_model_param p;
        if (mem4d_model_param_from_name(key, &p) != MEM4D_OK) {
            unknown_key(o, "model", key, val);
            return false;
        }
        return pend(a->model_set, &a->n_model_set, o->name, p, val, 0);
    }
    mem4d_device_param p;
    if (o->dest != CLI_TO_DEVICE || mem4d_device_param_from_name(key, &p) != MEM4D_OK) {
        unknown_key(o, "device", key, val);
        return false;
    }
    return pend(a->device_set, &a->n_device_set, o->name, p, val, 0);
}

/* --- one row, one value ------------------------------------------------------- */

static void *field(struct cli_args *a, const struct cli_option *o)
{
    return (char *)a + o->key;
}

/* Store a number (CLI_UINT, CLI_GIB) where the row says. */
static bool store_number(struct cli_args *a, const struct cli_option *o, const char *text, uint64_t v)
{
    switch (o->dest) {
    case CLI_TO_ARGS:
        *(uint64_t *)field(a, o) = v;
        return true;
    case CLI_TO_MODEL:
        return pend(a->model_set, &a->n_model_set, o->name, o->key, NULL, v);
    case CLI_TO_DEVICE:
        return pend(a->device_set, &a->n_device_set, o->name, o->key, NULL, v);
    case CLI_TO_LAYOUT:
        return layout_set(a, o->name, (mem4d_layout_param)o->key, text, o->min);
    case CLI_TO_FORMAT:
    case CLI_TO_SEARCH:
        break;
    }
    cli_error("%s: internal error: a number cannot go there", o->name);
    return false;
}

static bool set_option(struct cli_args *a, const struct cli_option *o, const char *text)
{
    uint64_t v = 0;
    struct stat sb;
    if (o->kind != CLI_SWITCH && o->kind != CLI_KEYVAL && !*text) {
        cli_error("%s needs a value", o->name);
        return false;
    }
    switch (o->kind) {
    case CLI_SWITCH:
        if (o->dest == CLI_TO_FORMAT)
            a->format = (enum cli_format)o->key;
        else
            *(bool *)field(a, o) = true;
        return true;
    case CLI_UINT:
        return parse_uint(o->name, text, o->min, &v) && store_number(a, o, text, v);
    case CLI_GIB:
        return parse_gib(o->name, text, &v) && store_number(a, o, text, v);
    case CLI_PATH:
        /* A FIFO or a device would block or never end: only regular files are
         * read. A missing file is left to the reader, which names it. */
        if (stat(text, &sb) == 0 && !S_ISREG(sb.st_mode)) {
            cli_error("%s: '%s' is not a regular file", o->name, text);
            return false;
        }
        /* fall through */
    case CLI_NAME:
    case CLI_OUTPUT:
        *(const char **)field(a, o) = text;
        return true;
    case CLI_VALUE:
        if (o->dest == CLI_TO_LAYOUT)
            return layout_set(a, o->name, (mem4d_layout_param)o->key, text, o->min);
        if (text[0] >= '0' && text[0] <= '9' && !all_digits(text)) {
            cli_error("%s needs a decimal number, got '%s'", o->name, text);
            return false;
        }
        if (o->dest == CLI_TO_MODEL)
            return pend(a->model_set, &a->n_model_set, o->name, o->key, text, 0);
        return pend(a->device_set, &a->n_device_set, o->name, o->key, text, 0);
    case CLI_SPEC:
        return parse_spec(a, o->name, (mem4d_layout_param)o->key, text);
    case CLI_KEYVAL:
        return parse_keyval(a, o, text);
    }
    return false;
}

/* --- the command line ----------------------------------------------------------- */

static const struct cli_option *find(const struct cli_option *opts, const char *arg, size_t len)
{
    for (const struct cli_option *o = opts; o->name; o++)
        if (strlen(o->name) == len && !strncmp(o->name, arg, len))
            return o;
    return NULL;
}

bool cli_given(const struct cli_args *a, const char *name)
{
    const struct cli_option *o = find(a->cmd->options, name, strlen(name));
    return o && a->given[o - a->cmd->options];
}

bool cli_layout_given(const struct cli_args *a, mem4d_layout_param key)
{
    return (size_t)key < sizeof a->layout_given / sizeof a->layout_given[0] && a->layout_given[key];
}

/* The flag of the same group given earlier, if any. */
static const struct cli_option *conflict(const struct cli_args *a, const struct cli_option *o)
{
    if (!o->group)
        return NULL;
    for (const struct cli_option *p = a->cmd->options; p->name; p++)
        if (p != o && p->group == o->group && a->given[p - a->cmd->options])
            return p;
    return NULL;
}

static bool is_help(const char *arg)
{
    return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

/* CLI_OK, CLI_USAGE, or -1 after --help. */
static int parse(struct cli_args *a, int argc, char **argv)
{
    const struct cli_command *cmd = a->cmd;
    size_t rows = 0;
    while (cmd->options[rows].name)
        rows++;
    if (rows > CLI_MAX_OPTIONS) {
        cli_error("%s: internal error: more than %d options", cmd->name, CLI_MAX_OPTIONS);
        return CLI_FAIL;
    }
    for (const struct cli_option *o = cmd->options; o->name; o++)
        if (o->def && !set_option(a, o, o->def))
            return CLI_FAIL; /* a table error: tests catch it */
    int i;
    for (i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (cmd->rest_usage && !strcmp(arg, "--"))
            break;
        if (is_help(arg)) {
            cli_usage(stdout, cmd);
            return -1;
        }
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        const struct cli_option *o = strncmp(arg, "--", 2) ? NULL : find(cmd->options, arg, len);
        if (!o) {
            cli_error("%s: unknown option '%s' (%s)", cmd->name, arg,
                      cmd->rest_usage ? "Megatron-LM arguments go after --" : "try --help");
            return CLI_USAGE;
        }
        const struct cli_option *other = conflict(a, o);
        if (other) {
            cli_error("%s and %s contradict each other", other->name, o->name);
            return CLI_USAGE;
        }
        const char *value = NULL;
        if (o->kind == CLI_SWITCH) {
            if (eq) {
                cli_error("%s takes no value", o->name);
                return CLI_USAGE;
            }
        } else if (eq) {
            value = eq + 1;
        } else if (i + 1 < argc && !(cmd->rest_usage && !strcmp(argv[i + 1], "--"))) {
            value = argv[++i];
        } else {
            cli_error("%s needs a value", o->name);
            return CLI_USAGE;
        }
        if (!set_option(a, o, value))
            return CLI_USAGE;
        a->given[o - cmd->options] = true;
    }
    if (i < argc) {
        a->rest_argc = argc - i - 1;
        a->rest_argv = argv + i + 1;
    }
    return CLI_OK;
}

int cli_run(const struct cli_command *cmd, int argc, char **argv)
{
    struct cli_args *a = calloc(1, sizeof *a);
    int rc = CLI_FAIL;
    if (!a || mem4d_layout_new(&a->layout) != MEM4D_OK || mem4d_layout_new(&a->scratch) != MEM4D_OK) {
        cli_error("out of memory");
        goto out;
    }
    a->cmd = cmd;
    rc = parse(a, argc, argv);
    if (rc == CLI_OK)
        rc = cmd->run(a);
    else if (rc < 0)
        rc = CLI_OK;
out:
    if (a) {
        mem4d_layout_free(a->scratch);
        mem4d_layout_free(a->layout);
    }
    free(a);
    return rc;
}

/* --- usage ---------------------------------------------------------------------- */

/* "none|selective|full" for a layout key with value names; "" when none. */
static const char *value_names(const struct cli_option *o, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    if (o->dest != CLI_TO_LAYOUT && o->dest != CLI_TO_SEARCH)
        return buf;
    for (uint64_t v = 0; v < 16; v++) {
        const char *n = mem4d_layout_value_name((mem4d_layout_param)o->key, v);
        if (!n)
            break;
        int k = snprintf(buf + used, size - used, "%s%s", v ? "|" : "", n);
        if (k < 0 || (size_t)k >= size - used)
            break;
        used += (size_t)k;
    }
    return buf;
}

void cli_usage(FILE *out, const struct cli_command *cmd)
{
    fprintf(out, "usage: mem4d %s%s%s%s\n%s\n", cmd->name, cmd->options->name ? " [OPTIONS]" : "",
            cmd->rest_usage ? " -- " : "",
            cmd->rest_usage ? cmd->rest_usage : "", cmd->about ? cmd->about : cmd->summary);
    if (!cmd->options->name)
        return;
    fprintf(out, "\noptions:\n");
    for (const struct cli_option *o = cmd->options; o->name; o++) {
        char names[128], left[192];
        const char *meta = o->metavar;
        if (!meta && o->kind != CLI_SWITCH)
            meta = *value_names(o, names, sizeof names) ? names : "VALUE";
        snprintf(left, sizeof left, "%s%s%s", o->name, meta ? " " : "", meta ? meta : "");
        if (strlen(left) > 22)
            fprintf(out, "  %s\n  %-22s %s", left, "", o->help);
        else
            fprintf(out, "  %-22s %s", left, o->help);
        if (o->def)
            fprintf(out, " (default %s)", o->def);
        for (const struct cli_option *p = cmd->options; o->group && p->name; p++)
            if (p != o && p->group == o->group)
                fprintf(out, "; not with %s", p->name);
        fputc('\n', out);
    }
    fprintf(out, "  %-22s %s\n", "-h, --help", "this help");
}
