/*
 * A strict TOML 1.0 reader (toml.c) for the torchtitan job reader
 * (import_torchtitan.c): the whole document into a tree, or a sentence
 * naming the line that is not TOML. No dependency beyond libc (and
 * m4d_strtod(), strtod whatever the process's locale).
 * SPDX-License-Identifier: MIT
 */
#ifndef MEM4D_TOML_H
#define MEM4D_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mem4d/mem4d.h>

enum m4d_toml_type {
    M4D_TOML_TABLE,
    M4D_TOML_ARRAY,
    M4D_TOML_STRING,
    M4D_TOML_INT,
    M4D_TOML_FLOAT,
    M4D_TOML_BOOL,
    M4D_TOML_DATETIME, /* kept as its text */
};

struct m4d_toml {
    enum m4d_toml_type type;
    char *key;              /* its key in the table holding it; NULL for an array item */
    struct m4d_toml *next;  /* the next member or item */
    struct m4d_toml *first; /* a table's members, an array's items */
    struct m4d_toml *last;
    size_t count;           /* members or items */
    char *s;                /* STRING, DATETIME */
    int64_t i;
    double f;
    bool b;
    /* how a table came to be (TOML's rules against defining one twice) */
    bool header;     /* [a.b] named it, or it is an element of [[a.b]] */
    bool frozen;     /* an inline table or a value array: closed */
    bool aot;        /* an array of tables ([[a.b]]) */
    unsigned dotted; /* the section whose dotted keys created it (0: none) */
};

/* Parse a whole document of size bytes (it need not end in NUL; NUL bytes
 * are refused, as are invalid UTF-8 and control characters). On success *out
 * is the root table (free it with m4d_toml_free). On failure why says what and
 * on which line: MEM4D_E_PARSE, or MEM4D_E_NOMEM. */
mem4d_status m4d_toml_parse(const char *text, size_t size, struct m4d_toml **out, char *why, size_t n);

void m4d_toml_free(struct m4d_toml *node);

/* The member `key` of a table, or NULL. */
const struct m4d_toml *m4d_toml_get(const struct m4d_toml *table, const char *key);

/* "a table", "an integer", ... for messages. */
const char *m4d_toml_type_name(enum m4d_toml_type type);

#endif
