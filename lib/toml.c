/*
 * A strict TOML 1.0 reader (https://toml.io/en/v1.0.0): every construct of
 * the specification is read or refused with the line and a reason; nothing
 * is guessed. Strings, integers (decimal, 0x, 0o, 0b; 64-bit), floats
 * (inf, nan), booleans, date-times (kept as text), arrays, inline tables,
 * [tables], [[arrays of tables]], dotted and quoted keys, and the rules
 * against defining a key or a table twice (as Python's tomllib applies them).
 * Nesting is bounded (M4D_TOML_DEPTH) so hostile input cannot exhaust the
 * stack.
 * SPDX-License-Identifier: MIT
 */
#include "toml.h"

#include "private.h" /* m4d_strtod */

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define M4D_TOML_DEPTH 64 /* arrays and inline tables inside each other */
#define M4D_TOML_KEYS 64  /* parts of one dotted key */

struct parser {
    const char *s;
    size_t n, i;
    unsigned line;
    unsigned section; /* counts [headers], for the dotted-key rule */
    char *why;
    size_t why_n;
    bool nomem;
};

static bool fail(struct parser *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static bool fail(struct parser *p, const char *fmt, ...)
{
    if (p->why && p->why_n && !p->why[0]) {
        int k = snprintf(p->why, p->why_n, "line %u: ", p->line);
        va_list ap;
        va_start(ap, fmt);
        if (k > 0 && (size_t)k < p->why_n)
            vsnprintf(p->why + k, p->why_n - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return false;
}

static bool oom(struct parser *p)
{
    p->nomem = true;
    return fail(p, "out of memory");
}

const char *m4d_toml_type_name(enum m4d_toml_type type)
{
    switch (type) {
    case M4D_TOML_TABLE: return "a table";
    case M4D_TOML_ARRAY: return "an array";
    case M4D_TOML_STRING: return "a string";
    case M4D_TOML_INT: return "an integer";
    case M4D_TOML_FLOAT: return "a float";
    case M4D_TOML_BOOL: return "a boolean";
    case M4D_TOML_DATETIME: return "a date-time";
    }
    return "a value";
}

void m4d_toml_free(struct m4d_toml *node)
{
    while (node) {
        struct m4d_toml *next = node->next;
        m4d_toml_free(node->first);
        free(node->key);
        free(node->s);
        free(node);
        node = next;
    }
}

const struct m4d_toml *m4d_toml_get(const struct m4d_toml *table, const char *key)
{
    if (!table || table->type != M4D_TOML_TABLE)
        return NULL;
    for (const struct m4d_toml *m = table->first; m; m = m->next)
        if (strcmp(m->key, key) == 0)
            return m;
    return NULL;
}

static struct m4d_toml *node_new(struct parser *p, enum m4d_toml_type type)
{
    struct m4d_toml *v = calloc(1, sizeof *v);
    if (!v)
        oom(p);
    else
        v->type = type;
    return v;
}

static void append(struct m4d_toml *parent, struct m4d_toml *child)
{
    if (parent->last)
        parent->last->next = child;
    else
        parent->first = child;
    parent->last = child;
    parent->count++;
}

static struct m4d_toml *member(struct m4d_toml *table, const char *key)
{
    return (struct m4d_toml *)m4d_toml_get(table, key);
}

/* --- the document as a whole: UTF-8, no control characters ----------------- */

/* TOML documents are UTF-8; no control character but tab, LF and CR before
 * LF appears anywhere (in strings they are escaped). */
static bool check_text(struct parser *p)
{
    const unsigned char *s = (const unsigned char *)p->s;
    for (size_t i = 0; i < p->n;) {
        unsigned c = s[i];
        if (c == '\n') {
            p->line++;
            i++;
            continue;
        }
        if (c == '\r' && i + 1 < p->n && s[i + 1] == '\n') {
            i++;
            continue;
        }
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return fail(p, "control character U+%04X (escape it in a string, or remove it)", c);
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
        if (len == 0 || c > 0xf4 || i + len > p->n)
            return fail(p, "not UTF-8 (byte 0x%02X)", c);
        unsigned cp = c & (0xff >> (len + 1));
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return fail(p, "not UTF-8 (byte 0x%02X)", c);
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return fail(p, "not UTF-8 (an overlong sequence or a surrogate)");
        i += len;
    }
    p->line = 1;
    return true;
}

/* --- characters ------------------------------------------------------------ */

static int peek(const struct parser *p, size_t ahead)
{
    return p->i + ahead < p->n ? (unsigned char)p->s[p->i + ahead] : -1;
}

static bool at(const struct parser *p, const char *lit)
{
    size_t k = strlen(lit);
    return p->n - p->i >= k && memcmp(p->s + p->i, lit, k) == 0;
}

static void skip_ws(struct parser *p)
{
    while (peek(p, 0) == ' ' || peek(p, 0) == '\t')
        p->i++;
}

static bool at_newline(const struct parser *p)
{
    return peek(p, 0) == '\n' || (peek(p, 0) == '\r' && peek(p, 1) == '\n');
}

static void skip_newline(struct parser *p)
{
    p->i += peek(p, 0) == '\r' ? 2 : 1;
    p->line++;
}

static void skip_comment(struct parser *p)
{
    if (peek(p, 0) == '#')
        while (p->i < p->n && !at_newline(p))
            p->i++;
}

/* Whitespace, comments and newlines (inside arrays). */
static void skip_blank(struct parser *p)
{
    for (;;) {
        skip_ws(p);
        skip_comment(p);
        if (!at_newline(p))
            return;
        skip_newline(p);
    }
}

/* After a key/value pair or a header: only a comment, then the line ends. */
static bool end_of_line(struct parser *p)
{
    skip_ws(p);
    skip_comment(p);
    if (p->i >= p->n)
        return true;
    if (!at_newline(p))
        return fail(p, "unexpected '%c' after the value (one key = value per line)", p->s[p->i]);
    skip_newline(p);
    return true;
}

/* --- a growing string ------------------------------------------------------- */

struct buf {
    char *a;
    size_t len, cap;
};

static bool put(struct parser *p, struct buf *b, const char *s, size_t k)
{
    if (b->len + k + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 32;
        while (cap < b->len + k + 1)
            cap *= 2;
        char *a = realloc(b->a, cap);
        if (!a)
            return oom(p);
        b->a = a;
        b->cap = cap;
    }
    memcpy(b->a + b->len, s, k);
    b->len += k;
    b->a[b->len] = '\0';
    return true;
}

static bool put_utf8(struct parser *p, struct buf *b, unsigned long cp)
{
    char u[4];
    size_t k;
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return fail(p, "\\u escape U+%04lX is not a Unicode scalar value", cp);
    if (cp < 0x80) {
        u[0] = (char)cp;
        k = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xc0 | cp >> 6);
        u[1] = (char)(0x80 | (cp & 0x3f));
        k = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | cp >> 12);
        u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        u[2] = (char)(0x80 | (cp & 0x3f));
        k = 3;
    } else {
        u[0] = (char)(0xf0 | cp >> 18);
        u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
        u[2] = (char)(0x80 | (cp >> 6 & 0x3f));
        u[3] = (char)(0x80 | (cp & 0x3f));
        k = 4;
    }
    return put(p, b, u, k);
}

/* --- strings ---------------------------------------------------------------- */

static bool escape(struct parser *p, struct buf *b)
{
    int c = peek(p, 1);
    static const char from[] = "btnfr\"\\", to[] = "\b\t\n\f\r\"\\";
    const char *e = c > 0 ? strchr(from, c) : NULL;
    if (e && *e) {
        p->i += 2;
        return put(p, b, &to[e - from], 1);
    }
    if (c == 'u' || c == 'U') {
        size_t digits = c == 'u' ? 4 : 8;
        unsigned long cp = 0;
        for (size_t k = 0; k < digits; k++) {
            int h = peek(p, 2 + k);
            int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                                   : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
            if (v < 0)
                return fail(p, "\\%c needs %zu hexadecimal digits", c, digits);
            cp = cp << 4 | (unsigned long)v;
        }
        p->i += 2 + digits;
        return put_utf8(p, b, cp);
    }
    return fail(p, "unknown escape \\%c in a string", c > 0x20 && c < 0x7f ? c : '?');
}

/* "basic", """multi-line basic""", 'literal', '''multi-line literal'''. */
static bool string(struct parser *p, struct buf *b)
{
    char q = p->s[p->i];
    bool multi = q == '"' ? at(p, "\"\"\"") : at(p, "'''");
    unsigned start = p->line;
    p->i += multi ? 3 : 1;
    if (multi && at_newline(p)) /* a newline right after the opening quotes is trimmed */
        skip_newline(p);
    for (;;) {
        if (p->i >= p->n) {
            p->line = start;
            return fail(p, "a string that never ends");
        }
        int c = peek(p, 0);
        if (!multi && at_newline(p))
            return fail(p, "a newline inside a one-line string");
        if (c == q) {
            if (!multi) {
                p->i++;
                break;
            }
            if (at(p, q == '"' ? "\"\"\"" : "'''")) {
                /* up to two quotes may close the content: """a"""" is a" */
                size_t run = 3;
                while (run < 5 && peek(p, run) == q)
                    run++;
                if (!put(p, b, p->s + p->i, run - 3))
                    return false;
                p->i += run;
                break;
            }
        }
        if (q == '"' && c == '\\') {
            if (multi) { /* a line-ending backslash trims the newline and the blanks after it */
                size_t k = p->i + 1;
                while (k < p->n && (p->s[k] == ' ' || p->s[k] == '\t'))
                    k++;
                if (k < p->n && (p->s[k] == '\n' || (p->s[k] == '\r' && k + 1 < p->n && p->s[k + 1] == '\n'))) {
                    p->i = k;
                    while (p->i < p->n && (at_newline(p) || peek(p, 0) == ' ' || peek(p, 0) == '\t')) {
                        if (at_newline(p))
                            skip_newline(p);
                        else
                            p->i++;
                    }
                    continue;
                }
            }
            if (!escape(p, b))
                return false;
            continue;
        }
        if (at_newline(p)) {
            if (!put(p, b, "\n", 1))
                return false;
            skip_newline(p);
            continue;
        }
        if (!put(p, b, p->s + p->i, 1))
            return false;
        p->i++;
    }
    if (!b->a && !put(p, b, "", 0))
        return false;
    return true;
}

/* --- keys ------------------------------------------------------------------- */

static bool bare_char(int c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* a.b."c d".'e': the parts, each a new string. */
static bool key(struct parser *p, char **parts, size_t *n)
{
    *n = 0;
    for (;;) {
        skip_ws(p);
        if (*n == M4D_TOML_KEYS)
            return fail(p, "a dotted key of more than %d parts", M4D_TOML_KEYS);
        struct buf b = {0};
        int c = peek(p, 0);
        if (c == '"' || c == '\'') {
            if ((c == '"' && at(p, "\"\"\"")) || (c == '\'' && at(p, "'''")))
                return fail(p, "a multi-line string cannot be a key");
            if (!string(p, &b)) {
                free(b.a);
                return false;
            }
        } else {
            size_t s = p->i;
            while (bare_char(peek(p, 0)))
                p->i++;
            if (p->i == s)
                return fail(p, c < 0 || c == '\n' || c == '\r' ? "a key is missing"
                                                               : "'%c' cannot start a key (quote the key)", c);
            if (!put(p, &b, p->s + s, p->i - s))
                return false;
        }
        parts[(*n)++] = b.a;
        skip_ws(p);
        if (peek(p, 0) != '.')
            return true;
        p->i++;
    }
}

static void free_parts(char **parts, size_t n)
{
    for (size_t k = 0; k < n; k++)
        free(parts[k]);
}

/* --- scalars ---------------------------------------------------------------- */

static bool digits_ok(const char *t, size_t n, int base)
{
    if (n == 0 || t[0] == '_' || t[n - 1] == '_')
        return false;
    for (size_t k = 0; k < n; k++) {
        char c = t[k];
        bool ok = c == '_' ? t[k + 1] != '_'
                  : base == 16 ? ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))
                  : c >= '0' && c < '0' + (base < 10 ? base : 10);
        if (!ok)
            return false;
    }
    return true;
}

static bool integer(struct parser *p, const char *t, size_t n, struct m4d_toml *v)
{
    int base = 10;
    bool neg = false;
    size_t k = 0;
    if (n > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'o' || t[1] == 'b')) {
        base = t[1] == 'x' ? 16 : t[1] == 'o' ? 8 : 2;
        k = 2;
    } else if (t[0] == '+' || t[0] == '-') {
        neg = t[0] == '-';
        k = 1;
    }
    if (!digits_ok(t + k, n - k, base) || (base == 10 && t[k] == '0' && n - k > 1))
        return fail(p, "'%.*s' is not a TOML number", (int)(n < 40 ? n : 40), t);
    uint64_t u = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; k < n; k++) {
        if (t[k] == '_')
            continue;
        int d = t[k] <= '9' ? t[k] - '0' : (t[k] | 0x20) - 'a' + 10;
        if (u > (lim - (uint64_t)d) / (uint64_t)base)
            return fail(p, "the integer %.*s does not fit in 64 bits", (int)(n < 40 ? n : 40), t);
        u = u * (uint64_t)base + (uint64_t)d;
    }
    v->type = M4D_TOML_INT;
    v->i = neg ? (u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u) : (int64_t)u;
    return true;
}

static bool floating(struct parser *p, const char *t, size_t n, struct m4d_toml *v)
{
    size_t k = t[0] == '+' || t[0] == '-' ? 1 : 0;
    v->type = M4D_TOML_FLOAT;
    if (n - k == 3 && (memcmp(t + k, "inf", 3) == 0 || memcmp(t + k, "nan", 3) == 0)) {
        v->f = t[k] == 'i' ? INFINITY : NAN;
        if (t[0] == '-')
            v->f = -v->f;
        return true;
    }
    /* integer part, then .digits and/or [eE][+-]digits, underscores between digits */
    size_t dot = n, exp = n;
    for (size_t j = k; j < n; j++) {
        if (t[j] == '.' && dot == n && exp == n)
            dot = j;
        else if ((t[j] == 'e' || t[j] == 'E') && exp == n)
            exp = j;
    }
    size_t int_end = dot < exp ? dot : exp;
    bool ok = digits_ok(t + k, int_end - k, 10) && !(t[k] == '0' && int_end - k > 1);
    if (ok && dot < n)
        ok = digits_ok(t + dot + 1, (exp < n ? exp : n) - dot - 1, 10);
    if (ok && exp < n) {
        size_t e = exp + 1 + (exp + 1 < n && (t[exp + 1] == '+' || t[exp + 1] == '-'));
        ok = digits_ok(t + e, n - e, 10);
    }
    char copy[128];
    size_t m = 0;
    for (size_t j = 0; ok && j < n; j++) {
        if (t[j] == '_')
            continue;
        if (m + 1 >= sizeof copy)
            ok = false;
        else
            copy[m++] = t[j];
    }
    if (!ok)
        return fail(p, "'%.*s' is not a TOML number", (int)(n < 40 ? n : 40), t);
    copy[m] = '\0';
    errno = 0;
    v->f = m4d_strtod(copy, NULL);
    if (errno == ERANGE && isinf(v->f))
        return fail(p, "the float %s is out of range", copy);
    return true;
}

static bool two(const char *t, size_t k, int lo, int hi)
{
    if (t[k] < '0' || t[k] > '9' || t[k + 1] < '0' || t[k + 1] > '9')
        return false;
    int v = (t[k] - '0') * 10 + (t[k + 1] - '0');
    return v >= lo && v <= hi;
}

/* HH:MM:SS[.frac] at t; its length, or 0. */
static size_t time_len(const char *t, size_t n)
{
    if (n < 8 || !two(t, 0, 0, 23) || t[2] != ':' || !two(t, 3, 0, 59) || t[5] != ':' || !two(t, 6, 0, 60))
        return 0;
    size_t k = 8;
    if (k < n && t[k] == '.') {
        size_t s = ++k;
        while (k < n && t[k] >= '0' && t[k] <= '9')
            k++;
        if (k == s)
            return 0;
    }
    return k;
}

/* Offset and local date-times, local dates and times: kept as text. */
static bool datetime(struct parser *p, const char *t, size_t n, struct m4d_toml *v)
{
    size_t k = 0;
    bool date = n >= 10 && t[4] == '-' && t[7] == '-';
    if (date) {
        for (size_t j = 0; j < 4; j++)
            if (t[j] < '0' || t[j] > '9')
                return fail(p, "'%.*s' is not a TOML date", (int)(n < 40 ? n : 40), t);
        if (!two(t, 5, 1, 12) || !two(t, 8, 1, 31))
            return fail(p, "'%.*s' is not a TOML date", (int)(n < 40 ? n : 40), t);
        k = 10;
        if (k < n && (t[k] == 'T' || t[k] == 't' || t[k] == ' '))
            k++;
        else if (k == n)
            goto done;
        else
            return fail(p, "'%.*s' is not a TOML date", (int)(n < 40 ? n : 40), t);
    }
    size_t tl = time_len(t + k, n - k);
    if (tl == 0)
        return fail(p, "'%.*s' is not a TOML date or time", (int)(n < 40 ? n : 40), t);
    k += tl;
    if (date && k < n && (t[k] == 'Z' || t[k] == 'z'))
        k++;
    else if (date && k + 6 == n && (t[k] == '+' || t[k] == '-') && two(t, k + 1, 0, 23) && t[k + 3] == ':' &&
             two(t, k + 4, 0, 59))
        k += 6;
    if (k != n)
        return fail(p, "'%.*s' is not a TOML date or time", (int)(n < 40 ? n : 40), t);
done:
    v->type = M4D_TOML_DATETIME;
    v->s = malloc(n + 1);
    if (!v->s)
        return oom(p);
    memcpy(v->s, t, n);
    v->s[n] = '\0';
    return true;
}

/* true, false, numbers and date-times: one token of the characters they use. */
static bool scalar(struct parser *p, struct m4d_toml *v)
{
    size_t s = p->i;
    for (;;) {
        int c = peek(p, 0);
        /* "1979-05-27 07:32:00": the date-time's space delimiter */
        if (c == ' ' && p->i - s == 10 && p->s[s + 4] == '-' && p->s[s + 7] == '-' && peek(p, 1) >= '0' &&
            peek(p, 1) <= '9' && peek(p, 3) == ':')
            c = 'T';
        if (!(bare_char(c) || c == '+' || c == '.' || c == ':' || c == 'T'))
            break;
        p->i++;
    }
    const char *t = p->s + s;
    size_t n = p->i - s;
    if (n == 0) {
        int c = peek(p, 0);
        return fail(p, c < 0 || c == '\n' || c == '\r' ? "a value is missing"
                                                       : "'%c' cannot start a value", c);
    }
    if (n == 4 && memcmp(t, "true", 4) == 0) {
        v->type = M4D_TOML_BOOL;
        v->b = true;
        return true;
    }
    if (n == 5 && memcmp(t, "false", 5) == 0) {
        v->type = M4D_TOML_BOOL;
        return true;
    }
    if (memchr(t, ':', n) || (n >= 10 && t[4] == '-' && t[0] != '+' && t[0] != '-'))
        return datetime(p, t, n, v);
    bool is_float = false;
    if (!(n > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'o' || t[1] == 'b')))
        for (size_t k = 0; k < n; k++)
            is_float |= t[k] == '.' || t[k] == 'e' || t[k] == 'E' || t[k] == 'i' || t[k] == 'n';
    return is_float ? floating(p, t, n, v) : integer(p, t, n, v);
}

/* --- values ----------------------------------------------------------------- */

static bool value(struct parser *p, struct m4d_toml *v, unsigned depth);
static bool key_value(struct parser *p, struct m4d_toml *table, bool in_inline, unsigned depth);

static bool array(struct parser *p, struct m4d_toml *v, unsigned depth)
{
    v->type = M4D_TOML_ARRAY;
    v->frozen = true;
    p->i++; /* [ */
    for (;;) {
        skip_blank(p);
        if (peek(p, 0) == ']') {
            p->i++;
            return true;
        }
        struct m4d_toml *item = node_new(p, M4D_TOML_STRING);
        if (!item)
            return false;
        append(v, item);
        if (!value(p, item, depth + 1))
            return false;
        skip_blank(p);
        if (peek(p, 0) == ',') {
            p->i++;
            continue;
        }
        if (peek(p, 0) == ']') {
            p->i++;
            return true;
        }
        return fail(p, p->i >= p->n ? "an array that never ends" : "expected ',' or ']' in an array");
    }
}

static bool inline_table(struct parser *p, struct m4d_toml *v, unsigned depth)
{
    v->type = M4D_TOML_TABLE;
    p->i++; /* { */
    skip_ws(p);
    if (peek(p, 0) == '}') {
        p->i++;
        v->frozen = true;
        return true;
    }
    for (;;) {
        if (!key_value(p, v, true, depth + 1))
            return false;
        skip_ws(p);
        if (peek(p, 0) == ',') {
            p->i++;
            skip_ws(p);
            if (peek(p, 0) == '}')
                return fail(p, "a trailing comma in an inline table");
            continue;
        }
        if (peek(p, 0) == '}') {
            p->i++;
            v->frozen = true;
            for (struct m4d_toml *m = v->first; m; m = m->next) /* and every table its dotted keys made */
                if (m->type == M4D_TOML_TABLE)
                    m->frozen = true;
            return true;
        }
        return fail(p, at_newline(p) || p->i >= p->n ? "an inline table must end on its line"
                                                      : "expected ',' or '}' in an inline table");
    }
}

static bool value(struct parser *p, struct m4d_toml *v, unsigned depth)
{
    if (depth > M4D_TOML_DEPTH)
        return fail(p, "arrays and inline tables nested more than %d deep", M4D_TOML_DEPTH);
    int c = peek(p, 0);
    if (c == '"' || c == '\'') {
        struct buf b = {0};
        if (!string(p, &b)) {
            free(b.a);
            return false;
        }
        v->type = M4D_TOML_STRING;
        v->s = b.a;
        return true;
    }
    if (c == '[')
        return array(p, v, depth);
    if (c == '{')
        return inline_table(p, v, depth);
    return scalar(p, v);
}

/* --- tables ----------------------------------------------------------------- */

static const char *joined(char **parts, size_t n, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t k = 0; k < n && len < cap; k++) {
        int w = snprintf(out + len, cap - len, "%s%s", k ? "." : "", parts[k]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
    return out;
}

/* a.b = v: walk (or make) the tables of the dotted part, then add the key. */
static bool key_value(struct parser *p, struct m4d_toml *table, bool in_inline, unsigned depth)
{
    char *parts[M4D_TOML_KEYS];
    size_t n = 0;
    char name[256];
    bool ok = key(p, parts, &n);
    struct m4d_toml *t = table;
    for (size_t k = 0; ok && k + 1 < n; k++) {
        struct m4d_toml *m = member(t, parts[k]);
        if (!m) {
            if (!(m = node_new(p, M4D_TOML_TABLE))) {
                ok = false;
                break;
            }
            m->key = parts[k];
            parts[k] = NULL;
            m->dotted = in_inline ? 0 : p->section;
            append(t, m);
        } else if (m->type != M4D_TOML_TABLE || m->frozen || m->header ||
                   (!in_inline && m->dotted && m->dotted != p->section)) {
            /* a [header]'s table, an inline one, a value, or a table dotted
             * keys of an earlier section made (tomllib: "Cannot redefine
             * namespace") */
            ok = fail(p, "%s is already defined (%s); a dotted key cannot add to it",
                      joined(parts, k + 1, name, sizeof name), m4d_toml_type_name(m->type));
            break;
        } else if (!in_inline) {
            m->dotted = p->section; /* a table [a.b.c] made on the way: now this section's */
        }
        t = m;
    }
    if (ok && member(t, parts[n - 1]))
        ok = fail(p, "the key %s is defined twice", joined(parts, n, name, sizeof name));
    if (ok) {
        skip_ws(p);
        if (peek(p, 0) != '=')
            ok = fail(p, "expected '=' after the key %s", joined(parts, n, name, sizeof name));
    }
    struct m4d_toml *v = NULL;
    if (ok && (v = node_new(p, M4D_TOML_STRING)) != NULL) {
        v->key = parts[n - 1];
        parts[n - 1] = NULL;
        append(t, v);
        p->i++;
        skip_ws(p);
        ok = value(p, v, depth);
    } else {
        ok = false;
    }
    free_parts(parts, n);
    return ok;
}

/* [a.b.c] or [[a.b.c]]: the table that key/value lines now go into. */
static bool header(struct parser *p, struct m4d_toml *root, struct m4d_toml **current)
{
    bool aot = at(p, "[[");
    char *parts[M4D_TOML_KEYS];
    size_t n = 0;
    char name[256];
    p->i += aot ? 2 : 1;
    bool ok = key(p, parts, &n);
    if (ok && !(aot ? at(p, "]]") : peek(p, 0) == ']'))
        ok = fail(p, "expected '%s' to close the table header", aot ? "]]" : "]");
    struct m4d_toml *t = root;
    for (size_t k = 0; ok && k < n; k++) {
        struct m4d_toml *m = member(t, parts[k]);
        bool last = k + 1 == n;
        if (m && m->type == M4D_TOML_ARRAY && m->aot && !last) {
            t = m->last; /* [[a]] then [a.b]: b in a's last element */
            continue;
        }
        if (!m) {
            if (!(m = node_new(p, last && aot ? M4D_TOML_ARRAY : M4D_TOML_TABLE))) {
                ok = false;
                break;
            }
            m->key = parts[k];
            parts[k] = NULL;
            append(t, m);
            if (last && aot)
                m->aot = true;
        } else if (last && aot) {
            if (m->type != M4D_TOML_ARRAY || !m->aot) {
                ok = fail(p, "[[%s]]: %s is already %s", joined(parts, n, name, sizeof name), name,
                          m4d_toml_type_name(m->type));
                break;
            }
        } else if (m->type != M4D_TOML_TABLE || m->frozen || (last && (m->header || m->dotted))) {
            ok = fail(p, "[%s]: the table %s is already defined", joined(parts, n, name, sizeof name), name);
            break;
        }
        if (last && aot) {
            struct m4d_toml *e = node_new(p, M4D_TOML_TABLE);
            if (!e) {
                ok = false;
                break;
            }
            append(m, e);
            m = e;
        }
        if (last)
            m->header = true;
        t = m;
    }
    free_parts(parts, n);
    if (!ok)
        return false;
    p->i += aot ? 2 : 1;
    p->section++;
    *current = t;
    return end_of_line(p);
}

mem4d_status m4d_toml_parse(const char *text, size_t size, struct m4d_toml **out, char *why, size_t n)
{
    struct parser p = {text, size, 0, 1, 1, why, n, false};
    if (why && n)
        why[0] = '\0';
    *out = NULL;
    struct m4d_toml *root = node_new(&p, M4D_TOML_TABLE);
    if (!root)
        return MEM4D_E_NOMEM;
    root->header = true;
    struct m4d_toml *current = root;
    bool ok = check_text(&p);
    if (ok && size >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
        p.i = 3; /* a UTF-8 byte order mark */
    while (ok) {
        skip_ws(&p);
        skip_comment(&p);
        if (p.i >= p.n)
            break;
        if (at_newline(&p)) {
            skip_newline(&p);
            continue;
        }
        if (peek(&p, 0) == '[')
            ok = header(&p, root, &current);
        else
            ok = key_value(&p, current, false, 0) && end_of_line(&p);
    }
    if (!ok) {
        m4d_toml_free(root);
        return p.nomem ? MEM4D_E_NOMEM : MEM4D_E_PARSE;
    }
    *out = root;
    return MEM4D_OK;
}
