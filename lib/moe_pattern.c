/*
 * The MoE layer-pattern language: Megatron-LM's --moe-layer-freq list
 * expression of expert (1) and dense (0) layers, and its fit to the model's
 * form (moe_first_dense_layers, moe_layer_freq, moe_layer_mask).
 * SPDX-License-Identifier: MIT
 */
#include <ctype.h>
#include <string.h>

#include "import.h"

/* A pattern of expert (1) and dense (0) layers, as Megatron-LM evaluates
 * --moe-layer-freq's Python list expression ("([0]*3+[1]*58)",
 * "([1]*3+[0]*1)*3", "[1,0,1,0]"): lists, concatenation with '+' and
 * repetition with '*'. */
#define PATTERN_MAX M4D_PATTERN_BITS
struct pattern {
    uint8_t bit[PATTERN_MAX];
    size_t n;
    const char *p; /* the text still to read */
    bool bad;
};

static void pat_space(struct pattern *pt)
{
    while (*pt->p == ' ')
        pt->p++;
}

static bool pat_number(struct pattern *pt, uint64_t *v)
{
    pat_space(pt);
    if (!isdigit((unsigned char)*pt->p))
        return false;
    *v = 0;
    while (isdigit((unsigned char)*pt->p) && *v <= PATTERN_MAX)
        *v = *v * 10 + (uint64_t)(*pt->p++ - '0');
    return *v <= PATTERN_MAX;
}

static void pat_expr(struct pattern *pt, int depth);

/* The closing bracket, never read past the end of the text. */
static void pat_close(struct pattern *pt, char c)
{
    if (*pt->p == c)
        pt->p++;
    else
        pt->bad = true;
}

/* atom := '[' bit (',' bit)* ']' | '(' expr ')', then ('*' count)*. */
static void pat_term(struct pattern *pt, int depth)
{
    size_t start = pt->n;
    uint64_t v;
    pat_space(pt);
    if (*pt->p == '[') {
        pt->p++;
        do {
            if (!pat_number(pt, &v) || v > 1 || pt->n >= PATTERN_MAX) {
                pt->bad = true;
                return;
            }
            pt->bit[pt->n++] = (uint8_t)v;
            pat_space(pt);
        } while (*pt->p == ',' && pt->p++);
        pat_close(pt, ']');
    } else if (*pt->p == '(' && depth < 8) {
        pt->p++;
        pat_expr(pt, depth + 1);
        pat_space(pt);
        pat_close(pt, ')');
    } else {
        pt->bad = true;
    }
    pat_space(pt);
    while (!pt->bad && *pt->p == '*') {
        pt->p++;
        size_t len = pt->n - start;
        if (!pat_number(pt, &v) || (v > 0 && len * v > PATTERN_MAX - start)) {
            pt->bad = true;
            return;
        }
        for (uint64_t k = 1; k < v; k++)
            memcpy(pt->bit + start + k * len, pt->bit + start, len);
        pt->n = start + (size_t)v * len;
        pat_space(pt);
    }
}

static void pat_expr(struct pattern *pt, int depth)
{
    pat_term(pt, depth);
    pat_space(pt);
    while (!pt->bad && *pt->p == '+') {
        pt->p++;
        pat_term(pt, depth);
        pat_space(pt);
    }
}

/* The model's form of a pattern of n layers' bits: `first` zero layers
 * (dense; full attention), then a period of at most 64 layers repeated (the
 * last one possibly cut), the shortest period first; false if none fits.
 * The expert layers' form, and the sliding-window layers' (import_hf.c). */
bool m4d_pattern_fit(const uint8_t *bit, size_t n, uint64_t *first, uint64_t *period, uint64_t *mask)
{
    for (size_t P = 1; P <= 64; P++) {
        for (size_t k = 0; k + P <= n && (k == 0 || bit[k - 1] == 0); k++) {
            bool ok = true;
            for (size_t i = k + P; ok && i < n; i++)
                ok = bit[i] == bit[k + (i - k) % P];
            if (!ok)
                continue;
            *first = k;
            *period = P;
            *mask = 0;
            for (size_t i = 0; i < P; i++)
                *mask |= (uint64_t)bit[k + i] << i;
            return *mask != 0;
        }
    }
    return false;
}

bool m4d_moe_pattern_read(const char *text, size_t *layers, bool *fits, uint64_t *first, uint64_t *period,
                          uint64_t *mask)
{
    static const struct pattern empty;
    struct pattern pt = empty;
    pt.p = text;
    pat_expr(&pt, 0);
    if (pt.bad || *pt.p != '\0')
        return false;
    *layers = pt.n;
    *fits = m4d_pattern_fit(pt.bit, pt.n, first, period, mask);
    return true;
}
