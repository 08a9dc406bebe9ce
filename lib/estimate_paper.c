/*
 * Paper mode: the formula of Fujii, Watanabe and Yokota (arXiv 2411.06465),
 * exactly, for the setup the paper covers; anything else is refused with
 * the reason. Symbols are those of doc/formulas.md ("Paper mode").
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "private.h"

/* Paper mode covers the paper's setup only; anything else would be a
 * silently wrong number, so it is refused with the reason. */
static const char *paper_unsupported(const struct m4d_ctx *x)
{
    if (x->experts)
        return "mixture-of-experts models";
    if (!x->gated)
        return "non-gated MLPs (the formula assumes SwiGLU)";
    if (!x->flash)
        return "attention without FlashAttention";
    if (x->t > 1 && !x->sp)
        return "tensor parallelism without sequence parallelism";
    if (x->v > 1)
        return "virtual pipeline stages (vpp > 1)";
    if (x->recompute == 2)
        return "full recomputation";
    if (!m4d_split_even(&x->split))
        return "uneven pipeline stages (first/last stage layers, shorter end chunks or a layer table)";
    if (x->zero > 1)
        return "ZeRO stages 2 and 3";
    if (x->opt_moments != 2)
        return "optimizers other than Adam";
    if (x->odo)
        return "Megatron-LLaMA's overlapped distributed optimizer";
    if (x->dopt_inst > 1)
        return "several distributed-optimizer instances";
    if (x->act_offload)
        return "activation offloading to the host";
    if (x->param_bytes != 2 || x->opt_bytes != 4 || x->master_bytes != 4)
        return "precisions other than bf16 weights with fp32 master weights and Adam states";
    if (x->fp8)
        return "fp8 training";
    if (x->ep > 1)
        return "expert parallelism";
    if (x->hidden_dropout || x->attn_dropout)
        return "dropout (the formula assumes none, so no dropout masks)";
    if (x->ce_fusion)
        return "the fused cross-entropy's extra logits buffer";
    if (x->linear_bias || x->pos_rows || x->qk_norm || x->norms != 2 || x->kv_lora || x->mtp)
        return "linear biases, learned position tables or query/key norms (the formula's layer has none)";
    if (x->distribute_saved || x->fp8_params || x->opt_sq_bytes != x->opt_bytes || x->precision_aware ||
        x->opt_offload_ppm)
        return "distributed checkpoints, fp8 parameters or mixed Adam moment precisions";
    if (x->fw != MEM4D_FRAMEWORK_MEGATRON)
        return "frameworks other than Megatron-LM";
    if (x->recompute == 3)
        return "op-selective recomputation";
    if (x->tp_overlap && x->t > 1)
        return "tensor-parallel communication overlap's userbuffers";
    if (x->expandable || x->compile || x->afab)
        return "allocator, compiler or schedule settings outside the paper's setup";
    if (x->cuda_graph || x->fp32_residual)
        return "CUDA graphs or fp32 residual connections";
    return NULL;
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
    const char *what = paper_unsupported(x);
    if (what) {
        m4d_msg(r->msg, sizeof r->msg, "paper mode does not model %s; use full mode", what);
        return MEM4D_E_UNSUPPORTED;
    }
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
