/*
 * The batch-script reader: a small subset of the POSIX shell's lexer and
 * parameter expansion, enough to see the words a launcher line passes to a
 * training script, and nothing that runs anything.
 *
 * What it follows: commands separated by newlines, ';', '&', '|', '&&',
 * '||'; backslash-newline continuations; '...', "...", $'...' and
 * backslash quoting; comments; redirections (dropped) and here-documents
 * (skipped); assignments NAME=value, NAME+=value, NAME=(array words) and
 * export/declare/readonly/local forms; expansions $NAME, ${NAME},
 * ${NAME[@]}, ${NAME[*]}, ${NAME[i]}, ${NAME:-word}, ${NAME-word},
 * ${NAME:=word}, ${NAME:+word}, ${NAME+word}, $0..$9 (the script's arguments), with field splitting of
 * unquoted expansions; a word holding a whole command (bash -c "...") is
 * read again as a script. Anything else ($(...), `...`, $((...)), ${#X},
 * a variable assigned from one of them, a variable nobody set) is an
 * unresolved reference: it stays in its word as written and marks it.
 * SPDX-License-Identifier: MIT
 */
#include "batch_script.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sbuf {
    char *p;
    size_t len, cap;
};

/* A list of words, each flagged when it holds an unresolved reference. */
struct words {
    char **w;
    bool *unres;
    size_t n, cap;
};

struct var {
    char *name;
    size_t len;
    uint32_t hash;
    struct words val;
    size_t cap0; /* capacity of val.w[0] when grown by NAME+=...; 0: its length + 1 */
    bool known;  /* false: assigned something the reader cannot evaluate */
};

struct ctx {
    const char *const *scripts, *const *args;
    const char **env; /* the environment, sorted by name, for bsearch */
    size_t nenv;
    size_t refs;      /* expansions done, against M4S_MAX_REFS */
    struct var *vars;
    size_t nvars, vcap;
    size_t budget; /* expansion bytes left */
    bool oom, overflow;
    struct words found;     /* the training command's arguments */
    unsigned found_line;
    bool have_found;
    struct words directive; /* every #MEM4D line's words */
    unsigned directive_line;
};

struct lex {
    const char *s, *e;
    unsigned line;
    unsigned depth;
    struct ctx *c;
    char heredoc[64]; /* delimiter of a pending here-document, or "" */
    bool heredoc_strip;
};

/* One raw word being expanded into fields. */
struct fields {
    struct ctx *c;
    struct words *out;
    struct sbuf cur;
    bool has;   /* the current field exists (even if empty: "") */
    bool unres; /* the current field holds an unresolved reference */
    bool split; /* field splitting applies (not an assignment value) */
};

/* ------------------------------------------------------------------------ */
/* Buffers                                                                   */

static bool sb_put(struct ctx *c, struct sbuf *b, const char *s, size_t n)
{
    if (c->oom || c->overflow)
        return false;
    if (n > c->budget) {
        c->overflow = true;
        return false;
    }
    c->budget -= n;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            c->oom = true;
            return false;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return true;
}

static char *xstrndup(struct ctx *c, const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (!p) {
        c->oom = true;
        return NULL;
    }
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

static void words_free(struct words *w)
{
    for (size_t i = 0; i < w->n; i++)
        free(w->w[i]);
    free(w->w);
    free(w->unres);
    memset(w, 0, sizeof *w);
}

/* Append a copy of s (n bytes). */
static bool words_add(struct ctx *c, struct words *w, const char *s, size_t n, bool unres)
{
    if (c->oom || c->overflow)
        return false;
    /* A word costs its bytes and its bookkeeping against the budget. */
    if (w->n >= M4S_MAX_WORDS || n + M4S_WORD_COST > c->budget) {
        c->overflow = true;
        return false;
    }
    c->budget -= n + M4S_WORD_COST;
    if (w->n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 16;
        char **nw = realloc(w->w, cap * sizeof *nw);
        if (!nw) {
            c->oom = true;
            return false;
        }
        w->w = nw;
        bool *nu = realloc(w->unres, cap * sizeof *nu);
        if (!nu) {
            c->oom = true;
            return false;
        }
        w->unres = nu;
        w->cap = cap;
    }
    char *p = xstrndup(c, s, n);
    if (!p)
        return false;
    w->w[w->n] = p;
    w->unres[w->n++] = unres;
    return true;
}

static bool words_copy(struct ctx *c, struct words *dst, const struct words *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (!words_add(c, dst, src->w[i], strlen(src->w[i]), src->unres[i]))
            return false;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Fields                                                                    */

static void f_break(struct fields *f)
{
    if (f->has)
        words_add(f->c, f->out, f->cur.p ? f->cur.p : "", f->cur.len, f->unres);
    f->cur.len = 0;
    if (f->cur.p)
        f->cur.p[0] = '\0';
    f->has = false;
    f->unres = false;
}

static void f_text(struct fields *f, const char *s, size_t n, bool unres)
{
    sb_put(f->c, &f->cur, s, n);
    f->has = true;
    f->unres |= unres;
}

static bool is_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* An expansion's value: quoted it joins the current field; unquoted it is
 * split on blanks (the default IFS), its first piece joining the field. */
static void f_value(struct fields *f, const char *v, bool quoted)
{
    if (quoted || !f->split) {
        f_text(f, v, strlen(v), false);
        return;
    }
    const char *p = v;
    if (*p && is_blank(*p))
        f_break(f);
    while (*p) {
        while (*p && is_blank(*p))
            p++;
        const char *q = p;
        while (*q && !is_blank(*q))
            q++;
        if (q > p)
            f_text(f, p, (size_t)(q - p), false);
        p = q;
        if (*p)
            f_break(f);
    }
}

/* ------------------------------------------------------------------------ */
/* Variables                                                                 */

static bool name_start(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_';
}

static bool name_char(char ch)
{
    return name_start(ch) || (ch >= '0' && ch <= '9');
}

static uint32_t name_hash(const char *name, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)name[i]) * 16777619u;
    return h;
}

static struct var *var_find(struct ctx *c, const char *name, size_t n)
{
    uint32_t h = name_hash(name, n);
    for (size_t i = c->nvars; i-- > 0;)
        if (c->vars[i].hash == h && c->vars[i].len == n && memcmp(c->vars[i].name, name, n) == 0)
            return &c->vars[i];
    return NULL;
}

/* Order of "NAME=value" strings by NAME. */
static int env_cmp(const char *a, size_t an, const char *b)
{
    size_t bn = strcspn(b, "=");
    int r = memcmp(a, b, an < bn ? an : bn);
    return r ? r : (an > bn) - (an < bn);
}

static int env_sort(const void *x, const void *y)
{
    const char *a = *(const char *const *)x;
    return env_cmp(a, strcspn(a, "="), *(const char *const *)y);
}

struct env_key {
    const char *name;
    size_t n;
};

static int env_search(const void *key, const void *elem)
{
    const struct env_key *k = key;
    return env_cmp(k->name, k->n, *(const char *const *)elem);
}

static const char *env_find(const struct ctx *c, const char *name, size_t n)
{
    struct env_key k = {name, n};
    const char *const *e = c->nenv ? bsearch(&k, c->env, c->nenv, sizeof *c->env, env_search) : NULL;
    return e ? *e + n + 1 : NULL;
}

/* The environment, sorted once: a lookup then costs log(size), whatever
 * the submitter put in it. Entries past M4S_MAX_ENV are ignored (unset). */
static void env_index(struct ctx *c, const char *const *envp)
{
    size_t n = 0;
    while (envp && envp[n] && n < M4S_MAX_ENV)
        n++;
    if (!n || !(c->env = malloc(n * sizeof *c->env))) {
        c->oom = n != 0;
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (strchr(envp[i], '='))
            c->env[c->nenv++] = envp[i];
    qsort(c->env, c->nenv, sizeof *c->env, env_sort);
}

/* Set (or append to) a variable. An unknown value makes it unknown. */
static void var_set(struct ctx *c, const char *name, size_t n, struct words *val, bool known, bool append,
                    bool array)
{
    struct var *v = var_find(c, name, n);
    if (!v) {
        if (c->nvars >= M4S_MAX_VARS) {
            c->overflow = true;
            return;
        }
        if (c->nvars == c->vcap) {
            size_t cap = c->vcap ? c->vcap * 2 : 16;
            struct var *nv = realloc(c->vars, cap * sizeof *nv);
            if (!nv) {
                c->oom = true;
                return;
            }
            c->vars = nv;
            c->vcap = cap;
        }
        v = &c->vars[c->nvars];
        memset(v, 0, sizeof *v);
        if (!(v->name = xstrndup(c, name, n)))
            return;
        v->len = n;
        v->hash = name_hash(name, n);
        c->nvars++;
        append = false;
    }
    if (!append) {
        words_free(&v->val);
        v->cap0 = 0;
        v->val = *val;
        memset(val, 0, sizeof *val);
        v->known = known;
        return;
    }
    /* NAME+=(x) adds elements; NAME+=x appends to the first element's text. */
    v->known = v->known && known;
    if (array || v->val.n == 0 || val->n == 0) {
        words_copy(c, &v->val, val);
    } else {
        /* Grown by doubling (sb_put), so repeated appends stay linear. */
        struct sbuf b = {.p = v->val.w[0], .len = strlen(v->val.w[0])};
        b.cap = v->cap0 ? v->cap0 : b.len + 1;
        sb_put(c, &b, val->w[0], strlen(val->w[0]));
        v->val.w[0] = b.p;
        v->cap0 = b.cap;
    }
    words_free(val);
}

/* ------------------------------------------------------------------------ */
/* Lexing                                                                    */

static bool at(const struct lex *L, size_t k)
{
    return L->s + k < L->e;
}

static char ch(const struct lex *L, size_t k)
{
    return at(L, k) ? L->s[k] : '\0';
}

static void adv(struct lex *L, size_t k)
{
    for (size_t i = 0; i < k && L->s < L->e; i++) {
        if (*L->s == '\n')
            L->line++;
        L->s++;
    }
}

/* Skip a balanced construct starting at an opening character: $( ... ),
 * ${ ... }, $(( ... )); quotes inside are honoured. */
static void skip_balanced(struct lex *L, char open, char close)
{
    int depth = 0;
    while (L->s < L->e) {
        char c0 = *L->s;
        if (c0 == '\\') {
            adv(L, 2);
            continue;
        }
        if (c0 == '\'') {
            adv(L, 1);
            while (L->s < L->e && *L->s != '\'')
                adv(L, 1);
            adv(L, 1);
            continue;
        }
        if (c0 == '"') {
            adv(L, 1);
            while (L->s < L->e && *L->s != '"') {
                if (*L->s == '\\')
                    adv(L, 1);
                adv(L, 1);
            }
            adv(L, 1);
            continue;
        }
        adv(L, 1);
        if (c0 == open)
            depth++;
        else if (c0 == close && --depth == 0)
            return;
    }
}

static void unresolved(struct fields *f, const char *from, const char *to)
{
    f_text(f, from, (size_t)(to - from), true);
}

static void expand_text(struct ctx *c, const char *s, size_t n, unsigned depth, unsigned line,
                        struct fields *into, bool quoted);

/* Put a known variable's value (or one element, or all of an array). */
static void put_var(struct fields *f, const struct var *v, const char *idx, bool quoted)
{
    if (!idx) {
        f_value(f, v->val.n ? v->val.w[0] : "", quoted);
        return;
    }
    if (*idx == '@' || *idx == '*') {
        if (*idx == '*' && quoted) {
            for (size_t i = 0; i < v->val.n; i++) {
                if (i)
                    f_text(f, " ", 1, false);
                f_text(f, v->val.w[i], strlen(v->val.w[i]), false);
            }
            return;
        }
        for (size_t i = 0; i < v->val.n; i++) {
            if (i)
                f_break(f);
            f_value(f, v->val.w[i], quoted);
        }
        return;
    }
    size_t k = (size_t)strtoul(idx, NULL, 10);
    f_value(f, k < v->val.n ? v->val.w[k] : "", quoted);
}

/* ${...} starting at L->s (at '$'). */
static void expand_braced(struct lex *L, struct fields *f, bool quoted)
{
    const char *start = L->s;
    adv(L, 2); /* "${" */
    const char *name = L->s;
    while (at(L, 0) && name_char(*L->s))
        adv(L, 1);
    size_t nlen = (size_t)(L->s - name);
    char idx[24] = "";
    bool has_idx = false;
    if (nlen && ch(L, 0) == '[') {
        const char *i0 = L->s + 1;
        const char *i1 = i0;
        while (i1 < L->e && *i1 != ']' && *i1 != '}')
            i1++;
        size_t ilen = (size_t)(i1 - i0);
        bool ok = i1 < L->e && *i1 == ']' && ilen > 0 && ilen < sizeof idx;
        for (size_t k = 0; ok && k < ilen; k++)
            ok = (ilen == 1 && (i0[k] == '@' || i0[k] == '*')) || (i0[k] >= '0' && i0[k] <= '9');
        if (ok) {
            memcpy(idx, i0, ilen);
            idx[ilen] = '\0';
            has_idx = true;
            adv(L, ilen + 2);
        }
    }
    /* The operator and its word, up to the matching brace. */
    bool colon = false;
    char op = 0;
    if (nlen && ch(L, 0) == ':' && (ch(L, 1) == '-' || ch(L, 1) == '=' || ch(L, 1) == '+')) {
        colon = true;
        op = ch(L, 1);
        adv(L, 2);
    } else if (nlen && (ch(L, 0) == '-' || ch(L, 0) == '=' || ch(L, 0) == '+')) {
        op = ch(L, 0);
        adv(L, 1);
    }
    const char *w0 = L->s;
    if (nlen == 0 || (!op && ch(L, 0) != '}')) {
        /* ${#X}, ${!X}, ${X%...}, ${X/...}: not followed. */
        L->s = start;
        adv(L, 1);
        skip_balanced(L, '{', '}');
        unresolved(f, start, L->s);
        return;
    }
    int depth = 1;
    while (at(L, 0)) {
        char c0 = *L->s;
        if (c0 == '\\') {
            adv(L, 2);
            continue;
        }
        if (c0 == '{')
            depth++;
        else if (c0 == '}' && --depth == 0)
            break;
        adv(L, 1);
    }
    const char *w1 = L->s;
    adv(L, 1); /* '}' */

    struct var *v = var_find(L->c, name, nlen);
    const char *env = v ? NULL : env_find(L->c, name, nlen);
    bool set = v || env;
    bool empty = v ? (v->known && (v->val.n == 0 || (v->val.n == 1 && !v->val.w[0][0]))) : (env && !*env);
    bool absent = !set || (colon && empty);
    if (op == '+') { /* the alternative word when set, else nothing */
        if (v && !v->known)
            unresolved(f, start, L->s);
        else if (!absent)
            expand_text(L->c, w0, (size_t)(w1 - w0), L->depth + 1, L->line, f, quoted);
        return;
    }
    if (op && absent) {
        /* The default word, expanded as it stands, quoted or not. */
        expand_text(L->c, w0, (size_t)(w1 - w0), L->depth + 1, L->line, f, quoted);
        return;
    }
    if (v && v->known)
        put_var(f, v, has_idx ? idx : NULL, quoted);
    else if (env && !has_idx)
        f_value(f, env, quoted);
    else
        unresolved(f, start, L->s);
}

/* $... at L->s. */
static void expand_dollar(struct lex *L, struct fields *f, bool quoted)
{
    const char *start = L->s;
    if (++L->c->refs > M4S_MAX_REFS) {
        L->c->overflow = true;
        adv(L, 1);
        return;
    }
    char n1 = ch(L, 1);
    if (n1 == '{') {
        expand_braced(L, f, quoted);
    } else if (n1 == '(') {
        adv(L, 1);
        skip_balanced(L, '(', ')');
        unresolved(f, start, L->s);
    } else if (name_start(n1)) {
        adv(L, 1);
        const char *name = L->s;
        while (at(L, 0) && name_char(*L->s))
            adv(L, 1);
        size_t nlen = (size_t)(L->s - name);
        struct var *v = var_find(L->c, name, nlen);
        const char *env = v ? NULL : env_find(L->c, name, nlen);
        if (v && v->known)
            put_var(f, v, NULL, quoted);
        else if (!v && env)
            f_value(f, env, quoted);
        else
            unresolved(f, start, L->s);
    } else if (n1 >= '0' && n1 <= '9') {
        adv(L, 2);
        const char *const *a = L->c->args;
        size_t k = (size_t)(n1 - '0'), i = 0;
        while (a && a[i] && i < k)
            i++;
        if (a && a[i])
            f_value(f, a[i], quoted);
        else
            unresolved(f, start, L->s);
    } else if (n1 && strchr("@*#?$!-", n1)) {
        adv(L, 2);
        unresolved(f, start, L->s);
    } else {
        adv(L, 1);
        f_text(f, "$", 1, false);
    }
}

static bool word_end(char c0)
{
    return is_blank(c0) || c0 == ';' || c0 == '&' || c0 == '|' || c0 == '<' || c0 == '>' ||
           c0 == '(' || c0 == ')';
}

/* Lex one word at L->s into fields. Stops at an unquoted blank or operator. */
static void lex_word(struct lex *L, struct fields *f)
{
    while (at(L, 0) && !L->c->oom && !L->c->overflow) {
        char c0 = *L->s;
        if (word_end(c0))
            break;
        if (c0 == '\\') {
            if (ch(L, 1) == '\n') {
                adv(L, 2);
            } else if (at(L, 1)) {
                f_text(f, L->s + 1, 1, false);
                adv(L, 2);
            } else {
                adv(L, 1);
            }
        } else if (c0 == '\'' || (c0 == '$' && ch(L, 1) == '\'')) {
            adv(L, c0 == '$' ? 2 : 1);
            const char *q = L->s;
            while (at(L, 0) && *L->s != '\'')
                adv(L, 1);
            f_text(f, q, (size_t)(L->s - q), false);
            adv(L, 1);
        } else if (c0 == '"') {
            adv(L, 1);
            f->has = true;
            while (at(L, 0) && *L->s != '"' && !L->c->oom && !L->c->overflow) {
                char d = *L->s;
                if (d == '\\' && at(L, 1) && strchr("$`\"\\\n", ch(L, 1))) {
                    if (ch(L, 1) != '\n')
                        f_text(f, L->s + 1, 1, false);
                    adv(L, 2);
                } else if (d == '$') {
                    expand_dollar(L, f, true);
                } else if (d == '`') {
                    const char *b = L->s;
                    adv(L, 1);
                    while (at(L, 0) && *L->s != '`' && *L->s != '"')
                        adv(L, *L->s == '\\' ? 2 : 1);
                    if (ch(L, 0) == '`')
                        adv(L, 1);
                    unresolved(f, b, L->s);
                } else {
                    f_text(f, L->s, 1, false);
                    adv(L, 1);
                }
            }
            adv(L, 1);
        } else if (c0 == '$') {
            expand_dollar(L, f, false);
        } else if (c0 == '`') {
            const char *b = L->s;
            adv(L, 1);
            while (at(L, 0) && *L->s != '`')
                adv(L, *L->s == '\\' ? 2 : 1);
            adv(L, 1);
            unresolved(f, b, L->s);
        } else {
            f_text(f, L->s, 1, false);
            adv(L, 1);
        }
    }
}

/* Expand a piece of text (a ${X:-word} default) into the fields. */
static void expand_text(struct ctx *c, const char *s, size_t n, unsigned depth, unsigned line,
                        struct fields *into, bool quoted)
{
    if (depth > M4S_MAX_DEPTH) {
        c->overflow = true;
        return;
    }
    struct lex L = {.s = s, .e = s + n, .line = line, .depth = depth, .c = c};
    bool split = into->split;
    if (quoted)
        into->split = false;
    while (at(&L, 0) && !c->oom && !c->overflow) {
        if (is_blank(*L.s)) {
            if (quoted || !into->split)
                f_text(into, L.s, 1, false);
            else
                f_break(into);
            adv(&L, 1);
            continue;
        }
        const char *before = L.s;
        lex_word(&L, into);
        if (L.s == before) { /* an operator character: literal here */
            f_text(into, L.s, 1, false);
            adv(&L, 1);
        }
    }
    into->split = split;
}

/* ------------------------------------------------------------------------ */
/* Commands                                                                  */

static void skip_blanks(struct lex *L)
{
    while (at(L, 0)) {
        char c0 = *L->s;
        if (c0 == ' ' || c0 == '\t' || c0 == '\r')
            adv(L, 1);
        else if (c0 == '\\' && ch(L, 1) == '\n')
            adv(L, 2);
        else if (c0 == '\\' && ch(L, 1) == '\r' && ch(L, 2) == '\n')
            adv(L, 3);
        else
            break;
    }
}

static void skip_line(struct lex *L)
{
    while (at(L, 0) && *L->s != '\n')
        adv(L, 1);
}

/* After a newline: skip a pending here-document's body. */
static void skip_heredoc(struct lex *L)
{
    if (!L->heredoc[0])
        return;
    size_t dl = strlen(L->heredoc);
    while (at(L, 0)) {
        const char *p = L->s;
        if (L->heredoc_strip)
            while (p < L->e && *p == '\t')
                p++;
        const char *eol = memchr(p, '\n', (size_t)(L->e - p));
        size_t n = (size_t)((eol ? eol : L->e) - p);
        if (n && p[n - 1] == '\r')
            n--;
        bool end = n == dl && memcmp(p, L->heredoc, dl) == 0;
        skip_line(L);
        adv(L, 1);
        if (end)
            break;
    }
    L->heredoc[0] = '\0';
}

/* Lex one plain word into a single string (no field splitting). */
static bool lex_one(struct lex *L, struct sbuf *out, bool *unres)
{
    struct words w = {0};
    struct fields f = {.c = L->c, .out = &w, .split = false};
    lex_word(L, &f);
    f_break(&f);
    free(f.cur.p);
    bool ok = !L->c->oom && !L->c->overflow;
    out->len = 0;
    *unres = false;
    if (ok && w.n) {
        sb_put(L->c, out, w.w[0], strlen(w.w[0]));
        *unres = w.unres[0];
    }
    words_free(&w);
    return ok && !L->c->oom && !L->c->overflow;
}

/* A redirection at L->s ('<', '>', or "&>"): drop it and its target. */
static void redirection(struct lex *L)
{
    if (ch(L, 0) == '&')
        adv(L, 1);
    char first = ch(L, 0);
    size_t n = 0;
    while ((ch(L, 0) == '<' || ch(L, 0) == '>') && n < 3) {
        adv(L, 1);
        n++;
    }
    bool dup = false;
    if (ch(L, 0) == '&') {
        adv(L, 1);
        dup = true;
    } else if (ch(L, 0) == '|') {
        adv(L, 1);
    }
    if (first == '<' && n == 2 && !dup) { /* a here-document */
        bool strip = false;
        if (ch(L, 0) == '-') {
            strip = true;
            adv(L, 1);
        }
        skip_blanks(L);
        struct sbuf d = {0};
        bool unres;
        if (at(L, 0) && !word_end(*L->s) && lex_one(L, &d, &unres) && d.len && d.len < sizeof L->heredoc) {
            memcpy(L->heredoc, d.p, d.len + 1);
            L->heredoc_strip = strip;
        }
        free(d.p);
        return;
    }
    if (dup && (ch(L, 0) == '-' || (ch(L, 0) >= '0' && ch(L, 0) <= '9'))) {
        while (ch(L, 0) == '-' || (ch(L, 0) >= '0' && ch(L, 0) <= '9'))
            adv(L, 1);
        return;
    }
    skip_blanks(L);
    if (at(L, 0) && !word_end(*L->s)) {
        struct sbuf d = {0};
        bool unres;
        lex_one(L, &d, &unres);
        free(d.p);
    }
}

/* NAME= or NAME+= at L->s? Returns the length of NAME (0: not one). */
static size_t assignment_at(const struct lex *L, bool *append)
{
    size_t k = 0;
    if (!name_start(ch(L, 0)))
        return 0;
    while (name_char(ch(L, k)))
        k++;
    *append = ch(L, k) == '+' && ch(L, k + 1) == '=';
    return (*append || ch(L, k) == '=') ? k : 0;
}

static void lex_command(struct lex *L);

/* Words up to an unquoted @p stop, not consumed (an array's ')', a
 * directive's end of line); '#' starts a comment, operators are dropped. */
static void word_list(struct lex *L, struct fields *f, char stop)
{
    while (at(L, 0) && *L->s != stop && !L->c->oom && !L->c->overflow) {
        char c0 = *L->s;
        if (is_blank(c0)) {
            adv(L, 1);
        } else if (c0 == '\\' && ch(L, 1) == '\n') {
            adv(L, 2);
        } else if (c0 == '#') {
            skip_line(L);
        } else {
            const char *before = L->s;
            lex_word(L, f);
            f_break(f);
            if (L->s == before)
                adv(L, 1); /* an operator character: not a word here */
        }
    }
}

/* An assignment at L->s, kept in *pending until the command ends. */
struct assign {
    char name[64];
    struct words val;
    bool known, append, array;
};

static void lex_assignment(struct lex *L, size_t nlen, bool append, struct assign *a)
{
    memset(a, 0, sizeof *a);
    size_t cp = nlen < sizeof a->name ? nlen : sizeof a->name - 1;
    memcpy(a->name, L->s, cp);
    a->append = append;
    adv(L, nlen + (append ? 2 : 1));
    struct fields f = {.c = L->c, .out = &a->val, .split = true};
    if (ch(L, 0) == '(') {
        a->array = true;
        adv(L, 1);
        word_list(L, &f, ')');
        adv(L, 1);
    } else {
        f.split = false;
        f.has = true; /* NAME= sets an empty string */
        lex_word(L, &f);
        f_break(&f);
    }
    free(f.cur.p);
    a->known = true;
    for (size_t i = 0; i < a->val.n; i++)
        a->known = a->known && !a->val.unres[i];
}

static bool is_word(const char *w, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(w, *list) == 0)
            return true;
    return false;
}

static const char *base_name(const char *w)
{
    const char *b = strrchr(w, '/');
    return b ? b + 1 : w;
}

/* The first unresolved reference in a word, for the message. */
static void ref_name(const char *w, char *out, size_t size)
{
    const char *d = strpbrk(w, "$`");
    size_t n = 0;
    if (d) {
        const char *e = d + 1;
        if (*e == '{') {
            while (*e && *e != '}')
                e++;
            e += *e == '}';
        } else if (*e == '(' || *d == '`') {
            e = d + strlen(d);
        } else {
            while (*e && name_char(*e))
                e++;
            if (e == d + 1 && *e)
                e++;
        }
        n = (size_t)(e - d);
    } else {
        d = w;
        n = strlen(w);
    }
    if (n > 48) {
        snprintf(out, size, "%.45s...", d);
        return;
    }
    snprintf(out, size, "%.*s", (int)n, d);
}

/* Words of a command: is this the training command? */
/* A word that runs a Python script: an interpreter or a launcher. */
static bool launcher(const char *w)
{
    static const char *const launchers[] = {"torchrun", "deepspeed", "accelerate", "srun", "mpirun", "mpiexec",
                                            "torch.distributed.run", "torch.distributed.launch", NULL};
    const char *b = base_name(w);
    return strncmp(b, "python", 6) == 0 || is_word(b, launchers);
}

static void check_command(struct lex *L, const struct words *cmd, unsigned line)
{
    struct ctx *c = L->c;
    if (c->have_found || cmd->n == 0)
        return;
    /* The script run directly, or after a launcher (not "cp pretrain_gpt.py"). */
    bool launched = false;
    for (size_t i = 0; i < cmd->n; i++) {
        if (!(i == 0 || launched) || !is_word(base_name(cmd->w[i]), c->scripts)) {
            launched = launched || launcher(cmd->w[i]);
            continue;
        }
        for (size_t k = i + 1; k < cmd->n; k++)
            words_add(c, &c->found, cmd->w[k], strlen(cmd->w[k]), cmd->unres[k]);
        c->have_found = true;
        c->found_line = line;
        return;
    }
    /* bash -c "torchrun ... pretrain_gpt.py ...": read the word again. */
    if (L->depth >= M4S_MAX_DEPTH)
        return;
    for (size_t i = 0; i < cmd->n && !c->have_found; i++) {
        bool inner = false;
        for (const char *const *s = c->scripts; *s && !inner; s++)
            inner = strstr(cmd->w[i], *s) && strpbrk(cmd->w[i], " \t\n");
        if (!inner)
            continue;
        struct lex sub = {.s = cmd->w[i], .e = cmd->w[i] + strlen(cmd->w[i]), .line = line,
                          .depth = L->depth + 1, .c = c};
        while (at(&sub, 0) && !c->have_found && !c->oom && !c->overflow)
            lex_command(&sub);
    }
}

/* A #MEM4D line at L->s (at '#'). */
static void directive(struct lex *L)
{
    struct ctx *c = L->c;
    unsigned line = L->line;
    adv(L, 6);
    struct fields f = {.c = c, .out = &c->directive, .split = true};
    word_list(L, &f, '\n');
    free(f.cur.p);
    if (!c->directive_line && c->directive.n)
        c->directive_line = line;
}

static const char *const reserved[] = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until",
                                       "!", "{", "}", "time", "exec", "nohup", NULL};
static const char *const declarers[] = {"export", "declare", "typeset", "readonly", "local", NULL};

/* One simple command, up to and including its terminator. */
static void lex_command(struct lex *L)
{
    struct ctx *c = L->c;
    struct words cmd = {0};
    struct assign pend[8];
    size_t npend = 0;
    bool start = true, decl = false;
    unsigned line = L->line;
    while (at(L, 0) && !c->oom && !c->overflow) {
        skip_blanks(L);
        if (!at(L, 0))
            break;
        char c0 = *L->s;
        if (c0 == '#') {
            if (L->e - L->s >= 6 && memcmp(L->s, "#MEM4D", 6) == 0 &&
                (L->e - L->s == 6 || is_blank(L->s[6])))
                directive(L);
            else
                skip_line(L);
            continue;
        }
        if (c0 == '\n') {
            adv(L, 1);
            skip_heredoc(L);
            break;
        }
        if (c0 == '&' && ch(L, 1) == '>') {
            redirection(L);
            continue;
        }
        if (c0 == ';' || c0 == '&' || c0 == '|' || c0 == '(' || c0 == ')') {
            adv(L, 1);
            if ((c0 == '&' || c0 == '|' || c0 == ';') && (ch(L, 0) == c0 || (c0 == '|' && ch(L, 0) == '&')))
                adv(L, 1);
            break;
        }
        if (c0 == '<' || c0 == '>') {
            redirection(L);
            continue;
        }
        /* 2>&1, 2>file: the digits are a file descriptor. */
        size_t k = 0;
        while (ch(L, k) >= '0' && ch(L, k) <= '9')
            k++;
        if (k && (ch(L, k) == '>' || ch(L, k) == '<')) {
            adv(L, k);
            redirection(L);
            continue;
        }
        bool append;
        size_t nlen = (start || decl) ? assignment_at(L, &append) : 0;
        if (nlen) {
            struct assign a;
            lex_assignment(L, nlen, append, &a);
            if (npend < sizeof pend / sizeof *pend)
                pend[npend++] = a;
            else
                words_free(&a.val);
            continue;
        }
        size_t before = cmd.n;
        struct fields f = {.c = c, .out = &cmd, .split = true};
        const char *s0 = L->s;
        lex_word(L, &f);
        f_break(&f);
        free(f.cur.p);
        if (L->s == s0) { /* cannot happen: every stop character is handled above */
            adv(L, 1);
            continue;
        }
        if (start && cmd.n == before + 1 && !cmd.unres[before]) {
            const char *w = cmd.w[before];
            if (is_word(w, reserved) && !decl) {
                free(cmd.w[--cmd.n]);
                continue;
            }
            if (is_word(w, declarers)) {
                decl = true;
                start = false;
                free(cmd.w[--cmd.n]);
                continue;
            }
        }
        if (cmd.n > before && !decl)
            start = false;
    }
    /* Assignments alone (or after export) set shell variables; before a
     * command they only set its environment. */
    for (size_t i = 0; i < npend; i++) {
        if ((start || decl) && !c->oom)
            var_set(c, pend[i].name, strlen(pend[i].name), &pend[i].val, pend[i].known, pend[i].append,
                    pend[i].array);
        words_free(&pend[i].val);
    }
    if (!start && !decl)
        check_command(L, &cmd, line);
    words_free(&cmd);
}

/* ------------------------------------------------------------------------ */
/* Result                                                                    */

/* A reference the reader could not resolve is taken as the value of the
 * flag before it (--data-path $DATA); anywhere else it may hold flags that
 * change the estimate, and the arguments are unreadable. */
static bool args_readable(const struct words *w, char *why, size_t size, const char *where)
{
    for (size_t i = 0; i < w->n; i++) {
        if (!w->unres[i])
            continue;
        const char *prev = i ? w->w[i - 1] : NULL;
        bool value = prev && !w->unres[i - 1] && prev[0] == '-' && prev[1] == '-' && !strchr(prev, '=');
        bool inside = w->w[i][0] == '-' && w->w[i][1] == '-'; /* --flag=$X */
        if (value || inside)
            continue;
        char ref[64];
        ref_name(w->w[i], ref, sizeof ref);
        snprintf(why, size,
                 "%s uses %s, which the script does not set to a literal value, where flags could be "
                 "(add a #MEM4D line with the Megatron-LM arguments)",
                 where, ref);
        return false;
    }
    return true;
}

/* Move --hf-config and --model (not Megatron-LM flags) out of the words. */
static bool take_option(struct words *w, const char *flag, char **out)
{
    size_t fl = strlen(flag);
    for (size_t i = 0; i < w->n; i++) {
        const char *a = w->w[i];
        if (strncmp(a, flag, fl) != 0 || (a[fl] != '\0' && a[fl] != '='))
            continue;
        size_t drop = 1;
        char *val = NULL;
        if (a[fl] == '=') {
            val = strdup(a + fl + 1);
        } else if (i + 1 < w->n) {
            val = strdup(w->w[i + 1]);
            drop = 2;
        } else {
            val = strdup("");
        }
        if (!val)
            return false;
        free(*out);
        *out = val;
        for (size_t k = i; k < i + drop; k++)
            free(w->w[k]);
        memmove(&w->w[i], &w->w[i + drop], (w->n - i - drop) * sizeof *w->w);
        memmove(&w->unres[i], &w->unres[i + drop], (w->n - i - drop) * sizeof *w->unres);
        w->n -= drop;
        i--;
    }
    return true;
}

static int finish(struct ctx *c, struct m4s_script *out)
{
    struct words *w = NULL;
    if (c->overflow) {
        out->found = M4S_FOUND_UNREADABLE;
        snprintf(out->why, sizeof out->why,
                 "the script exceeds what the reader follows (%u words a command, %u variables, %u "
                 "expansions, %u bytes of them, %u levels of nesting)",
                 M4S_MAX_WORDS, M4S_MAX_VARS, M4S_MAX_REFS, M4S_MAX_EXPANSION, M4S_MAX_DEPTH);
        return 0;
    }
    if (c->directive.n) {
        w = &c->directive;
        out->found = M4S_FOUND_DIRECTIVE;
        out->line = c->directive_line;
    } else if (c->have_found) {
        w = &c->found;
        out->found = M4S_FOUND_COMMAND;
        out->line = c->found_line;
    } else {
        return 0;
    }
    char where[64];
    snprintf(where, sizeof where, "%s on line %u",
             out->found == M4S_FOUND_DIRECTIVE ? "the #MEM4D line" : "the training command", out->line);
    if (!args_readable(w, out->why, sizeof out->why, where)) {
        out->found = M4S_FOUND_UNREADABLE;
        return 0;
    }
    if (!take_option(w, "--hf-config", &out->hf_config) || !take_option(w, "--model", &out->model))
        return -1;
    out->argv = calloc(w->n + 1, sizeof *out->argv);
    if (!out->argv)
        return -1;
    for (size_t i = 0; i < w->n; i++) {
        out->argv[i] = w->w[i];
        w->w[i] = NULL;
    }
    out->argc = (int)w->n;
    return 0;
}

int m4s_read_script(const char *text, size_t len, const char *const *scripts, const char *const *envp,
                    const char *const *args, struct m4s_script *out)
{
    static const char *const none[] = {NULL};
    memset(out, 0, sizeof *out);
    if (!text)
        return 0;
    const char *nul = memchr(text, '\0', len);
    if (nul)
        len = (size_t)(nul - text);
    if (len > M4S_MAX_SCRIPT_BYTES) {
        out->found = M4S_FOUND_UNREADABLE;
        snprintf(out->why, sizeof out->why, "the script has %zu bytes, more than the reader's %u", len,
                 M4S_MAX_SCRIPT_BYTES);
        return 0;
    }
    struct ctx c = {.scripts = scripts ? scripts : none, .args = args, .budget = M4S_MAX_EXPANSION};
    env_index(&c, envp);
    struct lex L = {.s = text, .e = text + len, .line = 1, .c = &c};
    while (at(&L, 0) && !c.oom && !c.overflow)
        lex_command(&L);
    int rc = c.oom ? -1 : finish(&c, out);
    for (size_t i = 0; i < c.nvars; i++) {
        free(c.vars[i].name);
        words_free(&c.vars[i].val);
    }
    free(c.vars);
    free(c.env);
    words_free(&c.found);
    words_free(&c.directive);
    if (rc != 0)
        m4s_script_free(out);
    return rc;
}

void m4s_script_free(struct m4s_script *s)
{
    if (!s)
        return;
    for (int i = 0; s->argv && i < s->argc; i++)
        free(s->argv[i]);
    free(s->argv);
    free(s->hf_config);
    free(s->model);
    memset(s, 0, sizeof *s);
}
