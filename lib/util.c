/*
 * Small helpers: messages, parsing, names, divisors, status strings.
 * SPDX-License-Identifier: MIT
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "private.h"

/* Length of s[0..n) without a UTF-8 sequence that the cut at n left
 * incomplete, so that truncated text stays valid UTF-8 (Python decodes
 * messages and names strictly). Only the last character can be cut. */
size_t m4d_utf8_cut(const char *s, size_t n)
{
    size_t i = n, back = 0;
    while (i > 0 && back < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) {
        i--;
        back++;
    }
    if (i == 0)
        return n;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (need > 1 && back + 1 < need)
        return i - 1; /* the lead byte and its continuations are dropped */
    return n;
}

void m4d_vmsg(char *buf, size_t size, const char *fmt, va_list ap)
{
    if (!buf || size == 0)
        return;
    int n = vsnprintf(buf, size, fmt, ap);
    if (n > 0 && (size_t)n >= size)
        buf[m4d_utf8_cut(buf, size - 1)] = '\0';
}

void m4d_msg(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    m4d_vmsg(buf, size, fmt, ap);
    va_end(ap);
}

void m4d_strlcpy(char *dst, const char *src, size_t size)
{
    if (size == 0)
        return;
    size_t n = strlen(src);
    if (n >= size)
        n = m4d_utf8_cut(src, size - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

bool m4d_streq_ci(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return false;
    return *a == *b;
}

/* Parameter names compare case-insensitively with '-' equal to '_', so
 * "tensor-model-parallel-size" finds "tensor_model_parallel_size". */
bool m4d_name_eq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        int ca = *a == '-' ? '_' : tolower((unsigned char)*a);
        int cb = *b == '-' ? '_' : tolower((unsigned char)*b);
        if (ca != cb)
            return false;
    }
    return *a == *b;
}

int m4d_param_lookup(const struct m4d_param_desc *table, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        const struct m4d_param_desc *d = &table[i];
        if (m4d_name_eq(name, d->name) || (d->alias && m4d_name_eq(name, d->alias)) ||
            (d->alias2 && m4d_name_eq(name, d->alias2)))
            return (int)i;
    }
    return -1;
}

/* The files and arguments the library reads write their decimals with a
 * point, but strtod reads the point of the process's LC_NUMERIC: a program
 * that embeds the library and calls setlocale(LC_ALL, "") under a locale
 * whose decimal point is a comma (de_DE, fr_FR, ru_RU) would have "0.1"
 * read as 0 with ".1" left over. So the number's span is copied with its
 * point turned into the locale's, which snprintf tells (unlike localeconv(),
 * safe beside other threads); the span is what strtod may read in the "C"
 * locale (letters for exponents, hex, inf and nan), so a comma in the text
 * still ends the number. A span is read up to 255 bytes. */
double m4d_strtod(const char *text, char **end)
{
    char radix[16];
    int rn = snprintf(radix, sizeof radix, "%.1f", 0.5); /* "0.5", "0,5" */
    if (rn < 3 || (size_t)rn >= sizeof radix || (rn == 3 && radix[1] == '.'))
        return strtod(text, end);
    size_t rl = (size_t)rn - 2;
    char copy[256 + sizeof radix];
    size_t n = 0, dot = SIZE_MAX;
    const char *p = text;
    while (*p && strchr(" \t\n\v\f\r", *p) && n < 255)
        copy[n++] = *p++;
    for (; *p && n < 255 && (isalnum((unsigned char)*p) || strchr("+-._()", *p)); p++) {
        if (*p == '.' && dot == SIZE_MAX) {
            dot = n;
            memcpy(copy + n, radix + 1, rl);
            n += rl;
        } else {
            copy[n++] = *p;
        }
    }
    copy[n] = '\0';
    char *e = NULL;
    double v = strtod(copy, &e);
    size_t used = (size_t)(e - copy);
    if (dot != SIZE_MAX && used > dot)
        used = used >= dot + rl ? used - (rl - 1) : dot; /* a radix read in part is not read */
    if (end)
        *end = (char *)text + used;
    return v;
}

/* Strict unsigned parse: decimal or 0x hex, no sign, no junk, no overflow. */
static mem4d_status parse_u64(const char *text, uint64_t *out)
{
    if (!isdigit((unsigned char)text[0]))
        return MEM4D_E_PARSE;
    errno = 0;
    char *end = NULL;
    int base = (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) ? 16 : 10;
    unsigned long long v = strtoull(text, &end, base);
    if (end == text || *end != '\0')
        return MEM4D_E_PARSE;
    if (errno == ERANGE)
        return MEM4D_E_RANGE;
    *out = (uint64_t)v;
    return MEM4D_OK;
}

mem4d_status m4d_parse_value(const struct m4d_param_desc *d, const char *text, uint64_t *out)
{
    if (d->kind == MEM4D_KIND_BOOLEAN) {
        if (m4d_streq_ci(text, "true") || m4d_streq_ci(text, "yes") || m4d_streq_ci(text, "on")) {
            *out = 1;
            return MEM4D_OK;
        }
        if (m4d_streq_ci(text, "false") || m4d_streq_ci(text, "no") || m4d_streq_ci(text, "off")) {
            *out = 0;
            return MEM4D_OK;
        }
    }
    if (d->values) {
        for (uint64_t i = 0; d->values[i]; i++) {
            if (m4d_streq_ci(text, d->values[i])) {
                *out = i;
                return MEM4D_OK;
            }
        }
    }
    return parse_u64(text, out);
}

static const char *file_kind(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO (named pipe)";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a plain file";
}

/* The one rule of every file reader: open without blocking (a FIFO or a
 * terminal would wait for a writer forever), read only a regular file (a
 * device such as /dev/zero never ends, a directory is no document), and
 * refuse more than `max` bytes with a sentence instead of reading on. The
 * buffer grows from the size fstat reports, so a small file costs little
 * and a file that grows while it is read is still bounded. */
mem4d_status m4d_read_file(const char *path, const char *doc, size_t max, char **buf, size_t *size, char *why,
                           size_t why_size)
{
    *buf = NULL;
    *size = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        m4d_msg(why, why_size, "cannot open %s: %s", path, strerror(errno));
        return MEM4D_E_IO;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int err = errno;
        close(fd);
        m4d_msg(why, why_size, "cannot read %s: %s", path, strerror(err));
        return MEM4D_E_IO;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        m4d_msg(why, why_size, "%s is %s, not a regular file; give the path of a %s", path, file_kind(sb.st_mode),
                doc);
        return MEM4D_E_IO;
    }
    if (sb.st_size < 0 || (uintmax_t)sb.st_size > max) {
        close(fd);
        m4d_msg(why, why_size, "%s is larger than %zu bytes; not a %s", path, max, doc);
        return MEM4D_E_RANGE;
    }
    /* Room for what fstat says, one byte more to see that it grew, and the NUL. */
    size_t cap = (size_t)sb.st_size + 2, n = 0;
    char *b = malloc(cap);
    mem4d_status st = b ? MEM4D_OK : MEM4D_E_NOMEM;
    while (st == MEM4D_OK) {
        if (n + 1 == cap) {
            if (n > max) {
                st = MEM4D_E_RANGE;
                break;
            }
            size_t grown = cap > (max + 2) / 2 ? max + 2 : cap * 2;
            char *nb = realloc(b, grown);
            if (!nb) {
                st = MEM4D_E_NOMEM;
                break;
            }
            b = nb;
            cap = grown;
        }
        ssize_t r = read(fd, b + n, cap - 1 - n);
        if (r > 0) {
            n += (size_t)r;
        } else if (r == 0) {
            break;
        } else if (errno != EINTR) {
            m4d_msg(why, why_size, "cannot read %s: %s", path, strerror(errno));
            st = MEM4D_E_IO;
        }
    }
    close(fd);
    if (st == MEM4D_E_RANGE)
        m4d_msg(why, why_size, "%s is larger than %zu bytes; not a %s", path, max, doc);
    else if (st == MEM4D_E_NOMEM)
        m4d_msg(why, why_size, "out of memory reading %s", path);
    if (st != MEM4D_OK) {
        free(b);
        return st;
    }
    b[n] = '\0';
    *buf = b;
    *size = n;
    return MEM4D_OK;
}

size_t m4d_divisors(uint64_t n, uint64_t *out, size_t cap)
{
    size_t lo = 0, hi = 0;
    uint64_t big[M4D_MAX_DIVISORS];
    for (uint64_t i = 1; i * i <= n && lo < cap && hi < M4D_MAX_DIVISORS; i++) {
        if (n % i != 0)
            continue;
        out[lo++] = i;
        if (i != n / i)
            big[hi++] = n / i;
    }
    while (hi > 0 && lo < cap)
        out[lo++] = big[--hi];
    return lo;
}

const char *mem4d_strerror(mem4d_status status)
{
    switch (status) {
    case MEM4D_OK: return "success";
    case MEM4D_END: return "no more layouts";
    case MEM4D_E_INVALID_ARG: return "invalid argument";
    case MEM4D_E_NOMEM: return "out of memory";
    case MEM4D_E_RANGE: return "value out of range";
    case MEM4D_E_UNKNOWN_KEY: return "unknown parameter name";
    case MEM4D_E_UNKNOWN_PRESET: return "unknown preset";
    case MEM4D_E_PARSE: return "malformed value";
    case MEM4D_E_MODEL: return "inconsistent or incomplete model";
    case MEM4D_E_HEADS_TP: return "attention heads not divisible by tensor-parallel size";
    case MEM4D_E_KV_HEADS_TP: return "key/value heads not divisible by tensor-parallel size";
    case MEM4D_E_LAYERS_PP: return "layers not divisible by pipeline-parallel size";
    case MEM4D_E_WORLD: return "world size is not tp x cp x pp x dp";
    case MEM4D_E_SEQ: return "sequence length not divisible as parallelism requires";
    case MEM4D_E_BATCH: return "global batch not divisible by micro-batch x dp";
    case MEM4D_E_UNSUPPORTED: return "setting not supported";
    case MEM4D_E_NO_JSON: return "not built with JSON support";
    case MEM4D_E_IO: return "file could not be read";
    case MEM4D_E_JSON: return "malformed JSON";
    case MEM4D_E_MISSING: return "required value missing";
    case MEM4D_E_CONFLICT: return "contradictory settings";
    case MEM4D_E_DIM_TP: return "FFN size not divisible by tensor-parallel size";
    case MEM4D_E_EXPERTS: return "expert parallelism does not fit the model's experts or the layout";
    }
    return "unknown status";
}

#define STR_(x) #x
#define STR(x) STR_(x)

const char *mem4d_version(void)
{
    return STR(MEM4D_VERSION_MAJOR) "." STR(MEM4D_VERSION_MINOR) "." STR(MEM4D_VERSION_MICRO);
}

void m4d_put(struct m4d_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->size ? o->size - o->len : 0;
    int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}
