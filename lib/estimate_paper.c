/*
 * Paper mode: the formula of Fujii, Watanabe and Yokota (arXiv 2411.06465),
 * exactly, for the setup the paper covers; anything else is refused with
 * the reason. Symbols are those of doc/formulas.md ("Paper mode").
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "private.h"

/* Paper mode covers the paper's setup only; anything else would be a
 * silently wrong number, so it is refused with the reason. Which key values
 * it models is in each key's row (params.c): m4d_resolve() finds the first
 * key it does not, and recompute, which a search varies, is asked here. What
 * is left are the rules between keys and what no key says. */
static bool paper_covers(const struct m4d_ctx *x, char *msg, size_t n)
{
    if (x->paper_row)
        return m4d_param_applies(x->paper_row, x->paper_value, x->fw, MEM4D_MODE_PAPER, msg, n);
    if (!m4d_param_applies(&m4d_layout_params[MEM4D_LAYOUT_RECOMPUTE], x->recompute, x->fw, MEM4D_MODE_PAPER, msg, n))
        return false;
    const char *what = x->t > 1 && !x->sp ? "tensor parallelism without sequence parallelism"
                     : x->split.nvs ? "a stage layer table"
                     : x->nlt ? "a layer pattern of other layer kinds"
                     : !x->flash ? "softmax attention (the device's attention kernel or its stack's is 'unfused')"
                                 : NULL;
    if (what)
        m4d_msg(msg, n, "paper mode does not model %s; use full mode", what);
    return what == NULL;
}

/* N = ((L·P_layer)/p + h·V)/t, plus h·V/t + h when p = 1 and untied. */
static bool paper_params(const struct m4d_ctx *x, uint64_t *N)
{
    uint64_t attn, mlp, norms, layer, num, hv;
    if (!m4d_layer_params(x, &attn, &mlp, &norms) || !m4d_add(attn, mlp, &layer) ||
        !m4d_add(layer, norms, &layer) || !m4d_mul(layer, x->L, &num) || !m4d_mul(x->h, x->V, &hv))
        return false;
    num /= x->p; /* exact: L is divisible by p */
    if (!m4d_add(num, hv, &num))
        return false;
    uint64_t extra = 0;
    if (x->p == 1 && !x->tied) {
        if (!m4d_add(num, hv, &num))
            return false;
        extra = x->h;
    }
    return m4d_add(m4d_ceil_div(num, x->t), extra, N);
}

/* Bytes per token and layer kept for backward, 2 bytes per element:
 * norm inputs 2h, QKV input h, Q a·dh, K and V 2·k·dh, attention output a·dh,
 * MLP input h, four SwiGLU intermediates 4f. With dh = h/a this is
 * 12h + 4hk/a + 8f of the paper. */
static uint64_t paper_layer_bytes_per_token(const struct m4d_ctx *x)
{
    return 2 * (4 * x->h + 2 * x->a * x->dh + 2 * x->k * x->dh + 4 * x->f);
}

static bool paper_activations(const struct m4d_ctx *x, uint64_t *out)
{
    uint64_t tokens, layers, emb, total, tc = x->t * x->c;
    /* s·b/(t·c) is exact: s is divisible by c and by t (sequence parallel). */
    if (!m4d_mul(x->s, x->b, &tokens))
        return false;
    if (!m4d_mul3(x->L, paper_layer_bytes_per_token(x), tokens, &layers))
        return false;
    layers = m4d_ceil_div(layers, tc);
    if (x->m > 0 && x->m < x->p && !m4d_muldiv_ceil(layers, x->m, x->p, &layers))
        return false;
    /* Embedding-input term 8·s·b·h·p/(t·c). */
    if (!m4d_mul3(8 * x->h, x->p, tokens, &emb) || !m4d_add(layers, m4d_ceil_div(emb, tc), &total))
        return false;
    if (x->p == 1) { /* output layer and fp32 logits: 4·s·b·(h + V)/(t·c) */
        uint64_t out_layer;
        if (!m4d_mul3(4, x->h + x->V, tokens, &out_layer) || !m4d_add(total, m4d_ceil_div(out_layer, tc), &total))
            return false;
    }
    *out = total;
    return true;
}

mem4d_status m4d_estimate_paper(const struct m4d_ctx *x, mem4d_report *r)
{
    if (!paper_covers(x, r->msg, sizeof r->msg))
        return MEM4D_E_UNSUPPORTED;
    uint64_t N, *t = r->stages[0].t;
    memset(t, 0, sizeof r->stages[0].t);
    if (!paper_params(x, &N) || !m4d_mul(N, 2, &t[MEM4D_TERM_WEIGHTS]) ||
        !m4d_mul(N, x->grad_bytes, &t[MEM4D_TERM_GRADIENTS]) || !m4d_mul(N, 12, &t[MEM4D_TERM_OPTIMIZER]) ||
        !paper_activations(x, &t[MEM4D_TERM_ACTIVATIONS])) {
        m4d_msg(r->msg, sizeof r->msg, "the estimate overflows 64 bits");
        return MEM4D_E_RANGE;
    }
    /* Distributed optimizer: 12/(d·c) bytes per parameter (sharded over DP x CP). */
    if (x->zero >= 1)
        t[MEM4D_TERM_OPTIMIZER] = m4d_ceil_div(t[MEM4D_TERM_OPTIMIZER], x->d * x->c);
    t[MEM4D_TERM_PARAMS] = N;
    t[MEM4D_TERM_LAYERS] = x->L / x->p;
    t[MEM4D_TERM_IN_FLIGHT] = x->m > 0 && x->m < x->p ? x->m : x->p;
    r->nstages = 1;
    return MEM4D_OK;
}
