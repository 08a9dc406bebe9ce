/*
 * Full mode: every pipeline stage with its own weights, in-flight
 * micro-batches, last-stage logits, buffers and fixed costs. Symbols and the
 * derivation of each term are in doc/formulas.md and doc/full-model.md.
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "private.h"

/* Layers held by stage r (uneven first/last stages as Megatron's
 * --decoder-first/last-pipeline-num-layers). */
static uint64_t stage_layers(const struct m4d_ctx *x, uint64_t r)
{
    if (!x->first_layers && !x->last_layers)
        return x->L / x->p;
    if (r == 0 && x->first_layers)
        return x->first_layers;
    if (r == x->p - 1 && x->last_layers)
        return x->last_layers;
    uint64_t ends = (x->first_layers > 0) + (x->last_layers > 0);
    return (x->L - x->first_layers - x->last_layers) / (x->p - ends);
}

/* Parameters on stage r: transformer layers split by t (norms replicated,
 * experts split by ep·t), the embedding on the first stage, the final norm
 * and LM head on the last (a tied head is a second copy when p > 1). */
static bool stage_params(const struct m4d_ctx *x, uint64_t r, uint64_t *out)
{
    uint64_t attn, mlp, norms, per_layer, n, emb;
    if (!m4d_layer_params(x, &attn, &mlp, &norms))
        return false;
    uint64_t mlp_split = x->experts ? x->t * x->ep : x->t;
    per_layer = m4d_ceil_div(attn, x->t) + m4d_ceil_div(mlp, mlp_split) + norms;
    if (!m4d_mul(per_layer, stage_layers(x, r), &n) || !m4d_mul(x->Vp, x->h, &emb))
        return false;
    emb = m4d_ceil_div(emb, x->t);
    if (r == 0 && !m4d_add(n, emb, &n))
        return false;
    if (r == x->p - 1) {
        n += (x->layernorm ? 2 : 1) * x->h;
        if ((!x->tied || x->p > 1) && !m4d_add(n, emb, &n))
            return false;
    }
    *out = n;
    return true;
}

/* Bytes per token per layer kept for backward (2-byte elements), before
 * splitting by t·c: 8h of norm/QKV/MLP inputs, 2a·dh + 2k·dh of Q, K, V and
 * the attention output, and 4f (gated) or 2f of MLP intermediates (times
 * top-k for experts). Without sequence parallelism the 8h part is not split
 * by t. */
static void layer_bytes_per_token(const struct m4d_ctx *x, uint64_t *replicated, uint64_t *split)
{
    uint64_t inter = x->gated ? 4 : 2;
    uint64_t mlp = x->experts ? inter * x->fe * x->topk + inter * x->fs : inter * x->f;
    *replicated = 8 * x->h;
    *split = 2 * (2 * x->a * x->dh + 2 * x->k * x->dh + mlp);
}

/* Activations of one layer for one micro-batch on one rank. */
static bool layer_activation(const struct m4d_ctx *x, uint64_t *out)
{
    uint64_t repl, split, tokens, a_split, a_repl;
    layer_bytes_per_token(x, &repl, &split);
    if (!m4d_mul(x->s, x->b, &tokens) || !m4d_mul(tokens, split, &a_split) || !m4d_mul(tokens, repl, &a_repl))
        return false;
    uint64_t tc = x->t * x->c;
    a_split = m4d_ceil_div(a_split, tc);
    a_repl = m4d_ceil_div(a_repl, x->sp ? tc : x->c);
    if (!x->flash) { /* softmax output a·s·(s/c)·b, 2 bytes, split by t */
        uint64_t scores;
        if (!m4d_mul3(2 * x->a, x->s, x->s / x->c, &scores) || !m4d_mul(scores, x->b, &scores))
            return false;
        if (!m4d_add(a_split, m4d_ceil_div(scores, x->t * x->c), &a_split))
            return false;
    }
    return m4d_add(a_split, a_repl, out);
}

/* Micro-batches (1F1B) or chunk-micro-batches (interleaved) live on stage r
 * at its peak, and the layers each covers. */
static void in_flight(const struct m4d_ctx *x, uint64_t r, uint64_t *count, uint64_t *layers_each)
{
    if (x->v > 1) {
        uint64_t chunks = x->p * (x->v - 1) + 2 * (x->p - r) - 1;
        if (x->m > 0 && chunks > x->m * x->v)
            chunks = x->m * x->v;
        *count = chunks;
        *layers_each = x->L / (x->p * x->v);
        return;
    }
    uint64_t n = x->p - r;
    if (x->m > 0 && x->m < n)
        n = x->m;
    *count = n;
    *layers_each = stage_layers(x, r);
}

static bool stage_activations(const struct m4d_ctx *x, uint64_t r, uint64_t *out, uint64_t *count)
{
    uint64_t a_layer, layers_each, act, tokens, tc = x->t * x->c;
    in_flight(x, r, count, &layers_each);
    if (!layer_activation(x, &a_layer) || !m4d_mul3(a_layer, layers_each, *count, &act) ||
        !m4d_mul(x->s, x->b, &tokens))
        return false;
    if (r == 0) { /* embedding output per in-flight micro-batch: 8·s·b·h/(t·c) as in the paper */
        uint64_t emb;
        uint64_t n0 = x->v > 1 ? m4d_ceil_div(*count, x->v) : *count;
        if (!m4d_mul3(8 * x->h, tokens, n0, &emb) || !m4d_add(act, m4d_ceil_div(emb, tc), &act))
            return false;
    }
    if (r == x->p - 1) { /* final-norm and head inputs (bf16) + fp32 logits and their gradient */
        uint64_t head;
        if (!m4d_mul(4 * x->h + 8 * x->Vp, tokens, &head) || !m4d_add(act, m4d_ceil_div(head, tc), &act))
            return false;
    }
    *out = act;
    return true;
}

/* Process groups a rank joins whose size exceeds one (each holds NCCL buffers). */
static uint64_t process_groups(const struct m4d_ctx *x)
{
    return (x->t > 1) + (x->c > 1) + (x->p > 1) + (x->d > 1) + (x->d * x->c > 1 && x->c > 1) + (x->p > 1);
}

static bool stage_memory(const struct m4d_ctx *x, const mem4d_device *dev, uint64_t r, uint64_t *t)
{
    uint64_t N, dc = x->d * x->c;
    if (!stage_params(x, r, &N))
        return false;
    uint64_t w_bytes = x->param_bytes + (x->fp8 ? 1 : 0);
    uint64_t opt_bytes = x->master_bytes + 2 * x->opt_bytes;
    if (!m4d_mul(N, w_bytes, &t[MEM4D_TERM_WEIGHTS]) || !m4d_mul(N, x->grad_bytes, &t[MEM4D_TERM_GRADIENTS]) ||
        !m4d_mul(N, opt_bytes, &t[MEM4D_TERM_OPTIMIZER]))
        return false;
    if (x->zero >= 1)
        t[MEM4D_TERM_OPTIMIZER] = m4d_ceil_div(t[MEM4D_TERM_OPTIMIZER], dc);
    if (x->zero >= 2)
        t[MEM4D_TERM_GRADIENTS] = m4d_ceil_div(t[MEM4D_TERM_GRADIENTS], dc);
    if (x->zero >= 3)
        t[MEM4D_TERM_WEIGHTS] = m4d_ceil_div(t[MEM4D_TERM_WEIGHTS], dc);
    if (!stage_activations(x, r, &t[MEM4D_TERM_ACTIVATIONS], &t[MEM4D_TERM_IN_FLIGHT]))
        return false;
    t[MEM4D_TERM_PARAMS] = N;
    t[MEM4D_TERM_LAYERS] = stage_layers(x, r);
    t[MEM4D_TERM_BUFFERS] = dev->v[MEM4D_DEVICE_WORKSPACE_BYTES];
    uint64_t alloc = 0;
    for (int k = MEM4D_TERM_WEIGHTS; k <= MEM4D_TERM_ACTIVATIONS; k++)
        if (!m4d_add(alloc, t[k], &alloc))
            return false;
    if (!m4d_add(alloc, t[MEM4D_TERM_BUFFERS], &alloc) ||
        !m4d_muldiv_ceil(alloc, dev->v[MEM4D_DEVICE_ALLOCATOR_OVERHEAD_PPM], 1000000, &t[MEM4D_TERM_FRAGMENTATION]))
        return false;
    uint64_t nccl;
    if (!m4d_mul(process_groups(x), dev->v[MEM4D_DEVICE_NCCL_BYTES_PER_GROUP], &nccl) ||
        !m4d_add(nccl, dev->v[MEM4D_DEVICE_CUDA_CONTEXT_BYTES], &t[MEM4D_TERM_FIXED]))
        return false;
    return true;
}

mem4d_status m4d_estimate_full(const struct m4d_ctx *x, const mem4d_device *dev, mem4d_report *r)
{
    for (uint64_t i = 0; i < x->p; i++) {
        memset(r->stages[i].t, 0, sizeof r->stages[i].t);
        if (!stage_memory(x, dev, i, r->stages[i].t)) {
            m4d_msg(r->msg, sizeof r->msg, "the estimate of stage %llu overflows 64 bits", (unsigned long long)i);
            return MEM4D_E_RANGE;
        }
    }
    r->nstages = (uint32_t)x->p;
    r->info[MEM4D_INFO_PROCESS_GROUPS] = process_groups(x);
    return MEM4D_OK;
}
