/*
 * Full mode, activations and schedule: what one layer keeps for backward
 * per micro-batch, recomputation and offloading, the micro-batches a
 * pipeline schedule keeps in flight, the loss and the first and last
 * stages' extras (doc/full-model.md, "Activations").
 * SPDX-License-Identifier: MIT
 */
#include "estimate_full.h"

/* Does selective recompute re-run this module (a M4D_RC_* bit)? */
static bool reruns(const struct m4d_ctx *x, uint64_t module)
{
    return x->recompute == 1 && (x->rc_modules & module);
}

/* SOFTMAX_TORCH_KEPT, _DROPOUT: bytes a score the attention core keeps
 * for the backward where the stack's fused softmax declines the shape
 * (m4d_softmax_falls_back(); lib/perf.c, FUSED_SOFTMAX) and
 * FusedScaleMaskSoftmax.forward_torch_softmax runs in fp32 (Megatron's
 * default apply_query_key_layer_scaling turns attention_softmax_in_fp32
 * on): input.float() and the * scale by a Python number save no tensor (a
 * mul saves its input only for an operand that needs a gradient,
 * pytorch#16583), masked_fill_ saves only the shared [1, 1, s, s] mask,
 * Softmax saves its fp32 output (PyTorch 1.11 on: _softmax_backward_data
 * takes the input's dtype, not the input, pytorch#66018) and .half()
 * nothing: 4, where the fused kernel saves its 2-byte output. After the
 * cast, without attention dropout the context matmul saves the 2-byte
 * half copy, 6 (the fused path 2: the output, saved once); with it the
 * dropout saves its one-byte mask and the matmul the 2-byte dropped
 * probabilities while the half copy is freed, 7 (the fused path 5). Read
 * in megatron/model/fused_softmax.py and transformer.py of
 * bigscience-workshop/Megatron-DeepSpeed@99c8fe07,
 * microsoft/Megatron-DeepSpeed@acc3e9b5 and NVIDIA/Megatron-LM@2e90a342
 * (the same fallback). SOFTMAX_TORCH_BWD_LIVE: the fallback's backward
 * holds two fp32 score tensors at once (the softmax's, masked_fill's and
 * the scale's gradient in and out), where the fused path holds the 2-byte
 * gradient and, with dropout, the dropout backward's output beside it. */
#define SOFTMAX_TORCH_KEPT 6
#define SOFTMAX_TORCH_KEPT_DROPOUT 7
#define SOFTMAX_TORCH_BWD_LIVE 8

/* Does PyTorch's fp32 softmax run in place of the stack's fused one? */
static bool softmax_falls_back(const struct m4d_ctx *x)
{
    return m4d_ctx_softmax_falls_back(x, x->s, x->b);
}

/* The attention core's own tensors per token, before the split by t:
 * FlashAttention's fp32 log-sum-exp 4a; without it the softmax output
 * 2a·s/c, with attention dropout also its one-byte mask and the 2-byte
 * dropped probabilities the context matmul saves, 5a·s/c (Korthikanti et
 * al. 2022, §4.1); where the stack's fused softmax declines the shape,
 * SOFTMAX_TORCH_KEPT(_DROPOUT) a score. Fused attention regenerates its
 * dropout mask. */
static uint64_t attention_core_bytes(bool *ok, const struct m4d_ctx *x)
{
    if (x->flash)
        return 4 * x->a;
    uint64_t per_score = x->attn_dropout ? 5 : 2;
    if (softmax_falls_back(x))
        per_score = x->attn_dropout ? SOFTMAX_TORCH_KEPT_DROPOUT : SOFTMAX_TORCH_KEPT;
    return mul(ok, per_score * x->a, x->s / x->c);
}

/* Elements per token of Q, K, V and the attention output, before the split
 * by t: a·d_qk + k·d_qk + k·d_v + a·d_v; with d_qk = d_v = dh this is
 * (2a + 2k)·dh. Multi-latent attention has a key and value per head (k = a). */
static uint64_t attention_tensors(bool *ok, const struct m4d_ctx *x)
{
    return add(ok, mul(ok, x->a + x->kv_heads, x->qk_dim), mul(ok, x->a + x->kv_heads, x->v_dim));
}

/* Bytes kept for backward per token and layer, in two halves:
 * repl (split by t_sp): both norms' inputs and outputs, 4h elements of 2 bytes
 *   (MoE: + router logits and probabilities in fp32, + the permuted tokens the
 *   experts' fc1 keeps, latent-wide with LatentMoE, + LatentMoE's fc2
 *   projection input; the unpermute keeps nothing, see below);
 * split (split by t): Q, K, V (a+2k)·dh and the attention output a·dh,
 *   2 bytes; the attention core's own tensors; the MLP's fc1 output and fc2
 *   input, 3f (SwiGLU) or 2f elements (experts: top-k of them, plus the
 *   shared expert).
 * Hidden dropout adds two one-byte masks of h elements to repl (after
 * attention and after the MLP). Selective recompute drops the attention
 * core's own tensors, attention dropout included. */
/* MLP intermediates a layer keeps per token, in units of f: Megatron's
 * fused bias_swiglu saves its 2f input and fc2 its f input, 3; eager
 * PyTorch's SwiGLU (torchtitan, nanotron, HF models under DeepSpeed) keeps
 * w1's output (for silu), silu's output and w3's output (for the product)
 * and the product (for w2), 4; a plain MLP 2. */
static uint64_t mlp_saved(const struct m4d_ctx *x)
{
    if (!x->gated)
        return 2;
    return x->fw == MEM4D_FRAMEWORK_MEGATRON ? 3 : 4;
}

/* nanotron's CausalSelfAttention (models/llama.py, training path) keeps two
 * more copies per token: K and V are concatenated and made contiguous for
 * the rotary kernel (2·k·dh, saved by flash attention while the qkv
 * projection's output stays alive through the query view), and with b > 1
 * o_proj's input is the transposed attention output, which the matmul
 * copies to a contiguous tensor it saves (a·dh). 2 bytes each, split by t. */
static uint64_t nanotron_attention_copies(bool *ok, const struct m4d_ctx *x)
{
    if (x->fw != MEM4D_FRAMEWORK_NANOTRON)
        return 0;
    return mul(ok, 2 * (2 * x->k + (x->b > 1 ? x->a : 0)), x->dh);
}

/* What the token dispatcher adds per token (of the rank's T/t_sp) to an
 * expert layer's kept tensors:
 * - HybridEP's routing handle, kept by its dispatch and combine until
 *   backward (DeepEP hybrid-ep executor.cu: sparse_to_dense_map T·N int32,
 *   local_expert_routing_map T·N·L bool, dense_to_expert_map T·N·L int32):
 *   N·(4 + 5L) bytes a token, N = ep·etp, L = E/ep local experts. DeepEP's
 *   handle (prefix matrices, is_token_in_rank) stays below a few bytes a
 *   token and is left out.
 * - with the EP overlap and HybridEP (Megatron-Core models/common/utils.py
 *   should_free_input), the experts' input is never freed after its
 *   forward: with fp8, where the expert GEMM saves its own fp8 copy, the
 *   bf16 permuted tokens stay too, 2h per routed token (fp8_savings drops
 *   them otherwise). The flex dispatcher's own input, also kept there, is
 *   the pre-MLP norm's output, counted already. */
static uint64_t dispatch_kept(bool *ok, const struct m4d_ctx *x)
{
    uint64_t b = 0, N = m4d_ep_group(x);
    if (x->dispatcher == MEM4D_MOE_DISPATCHER_HYBRIDEP)
        b = mul(ok, N, 4 + 5 * (x->experts / x->ep));
    return b;
}

/* HybridEP with the EP overlap keeps the bf16 expert input beside the fp8
 * copy (above). */
static bool keeps_bf16_expert_input(const struct m4d_ctx *x)
{
    return x->ep_overlap && x->dispatcher == MEM4D_MOE_DISPATCHER_HYBRIDEP;
}

/* What an expert layer keeps of its routed tokens, per routed token: the
 * permuted tokens the grouped fc1 saves, 2h. Since Megatron-Core's "memory
 * efficient token permutation" (NVIDIA/Megatron-LM@2659630, April 2025,
 * core 0.13) the router's probabilities multiply the expert activation
 * (weighted_bias_swiglu, experts.py) and the unpermute takes no probabilities,
 * so it saves nothing (moe_utils.unpermute; TE's moe_unpermute without
 * merging_probs keeps only its row map). Before it the unpermute merged the
 * probabilities and saved the experts' output, 2h more; recipes of 2025-2026
 * run the newer code. */
static uint64_t routed_kept(bool *ok, const struct m4d_ctx *x)
{
    return routed(ok, x, 2 * m4d_expert_width(x));
}

/* LatentMoE (Megatron-Core moe_layer.py, NVIDIA/Megatron-LM@d98e8a64): the
 * experts' tokens are latent-wide (routed_kept above); fc1_latent_proj reads
 * the pre-MLP norm's output, kept already, and its latent output goes
 * straight into the permute, which keeps only its row map; fc2_latent_proj
 * keeps its input, the combined latent output, 2·latent bytes per token. */
static uint64_t latent_kept(const struct m4d_ctx *x)
{
    return x->experts && x->latent ? 2 * x->latent : 0;
}

static void layer_token_bytes(bool *ok, const struct m4d_ctx *x, uint64_t *repl, uint64_t *split)
{
    uint64_t inter = mlp_saved(x), mlp;
    *repl = 4 * x->norms * x->h; /* each norm keeps its input and hands on its output */
    if (x->hidden_dropout)
        *repl = add(ok, *repl, 2 * x->h);
    if (x->experts) {
        mlp = add(ok, routed(ok, x, mul(ok, inter, x->fe)), inter * x->fs);
        *repl = add(ok, *repl, add(ok, mul(ok, 2 * x->router_bytes, x->experts), routed_kept(ok, x)));
        *repl = add(ok, *repl, dispatch_kept(ok, x) + latent_kept(x));
        /* fp8 with the bf16 input kept as well: the grouped fc1's own fp8 copy */
        if (x->fp8 && keeps_bf16_expert_input(x))
            *repl = add(ok, *repl, routed(ok, x, m4d_expert_width(x)));
    } else {
        mlp = mul(ok, inter, x->f);
    }
    *split = add(ok, mul(ok, 2, attention_tensors(ok, x)), mul(ok, 2, mlp));
    *split = add(ok, *split, nanotron_attention_copies(ok, x));
    if (!reruns(x, M4D_RC_CORE_ATTN))
        *split = add(ok, *split, attention_core_bytes(ok, x));
}

/* torch-native tensor parallelism (torchtitan): ColwiseParallel's input
 * redistribution (the sequence-parallel all-gather) runs before the
 * matmul, so autograd saves the gathered input, 2h bytes per token not
 * split by t, where Megatron saves its shard and gathers again in backward.
 * A block has two (attention's wq/wk/wv and the MLP's w1/w3); the head one. */
static uint64_t gathered_inputs(const struct m4d_ctx *x)
{
    return x->fw == MEM4D_FRAMEWORK_TORCHTITAN && x->t > 1 ? 4 * x->h : 0;
}

/* Norms of a layer that are modules of their own (1 or 2), which
 * Megatron-Core's layernorm recompute re-runs (transformer_layer.py: only a
 * norm that is not IdentityOp). Its Transformer Engine spec
 * (gpt_layer_specs.py) fuses a dense layer's norms into the following linear
 * (TELayerNormColumnParallelLinear: linear_qkv, linear_fc1), which saves its
 * own input and ln_out, so recomputing "layernorm" changes nothing there;
 * multi-latent attention's input norm (its two down-projections read it) and
 * an expert layer's pre-MLP norm (the router reads it) are modules. */
static uint64_t separate_norms(const struct m4d_ctx *x)
{
    return (x->a && x->kv_lora ? 1 : 0) + (x->experts ? 1 : 0);
}

/* What selective recomputation of other modules than the attention core
 * drops from a layer's kept bytes per token (Megatron-Core's
 * --recompute-modules; each re-run module keeps only its input, which
 * another kept tensor already holds): layernorm the two norms' outputs 4h;
 * mlp a dense MLP's intermediates 2·(3 or 2)·f; moe_act the expert
 * activation's output 2·topk·fe; shared_experts the shared expert's
 * intermediates; moe every expert tensor (router, permuted tokens,
 * intermediates, LatentMoE's projection input); mla_up_proj the up-projected
 * Q, K and V. Returned in the
 * two halves of layer_token_bytes(). */
static void selective_savings(bool *ok, const struct m4d_ctx *x, uint64_t *repl, uint64_t *split)
{
    uint64_t inter = x->gated ? 3 : 2, m = x->recompute == 1 ? x->rc_modules : 0;
    *repl = m & M4D_RC_LAYERNORM ? separate_norms(x) * 2 * x->h : 0;
    *split = 0;
    if (!x->experts && (m & M4D_RC_MLP))
        *split = add(ok, *split, mul(ok, 2 * inter, x->f));
    if (x->experts && (m & M4D_RC_MOE)) {
        *repl = add(ok, *repl, add(ok, mul(ok, 2 * x->router_bytes, x->experts), routed_kept(ok, x)));
        *repl = add(ok, *repl, dispatch_kept(ok, x)); /* the re-run dispatch makes its handle again */
        *repl = add(ok, *repl, latent_kept(x));       /* the latent projections re-run with the layer */
        *split = add(ok, *split, mul(ok, 2, add(ok, routed(ok, x, mul(ok, inter, x->fe)), inter * x->fs)));
    } else if (x->experts) {
        if (m & M4D_RC_MOE_ACT)
            *split = add(ok, *split, routed(ok, x, mul(ok, 2, x->fe)));
        if (m & M4D_RC_SHARED_EXPERTS)
            *split = add(ok, *split, mul(ok, 2 * inter, x->fs));
    }
    if (x->kv_lora && (m & M4D_RC_MLA_UP_PROJ))
        *split = add(ok, *split, mul(ok, 2, add(ok, mul(ok, x->a + x->kv_heads, x->qk_dim), mul(ok, x->kv_heads, x->v_dim))));
}

/* fp8 training: Transformer Engine's linear layers keep their input for
 * the weight gradient as the fp8 tensor the forward GEMM used, one byte per
 * element (te.pytorch Linear / LayerNormLinear save the quantized input).
 * Where that input was kept only for the linear layer, a byte per element is
 * saved: the two norm outputs before the QKV and first MLP projections (h
 * each, replicated half) and the activation output before the second MLP
 * projection (f, or topk·fe + fs with experts), and with experts the
 * permuted tokens the grouped fc1 takes (h per routed token, the bf16 copy
 * freed). The attention output is
 * also kept in bf16 by the attention backward, so its fp8 copy for the
 * output projection is an extra a·d_v byte per token with the delayed
 * recipe (the other recipes save the bf16 input instead). What selective
 * recompute already dropped is not counted. NVFP4's copies are smaller
 * (below). */
static void fp8_savings(bool *ok, const struct m4d_ctx *x, uint64_t *repl, uint64_t *split, uint64_t *extra,
                        uint64_t *extra_repl)
{
    uint64_t m = x->recompute == 1 ? x->rc_modules : 0;
    *repl = *split = *extra = *extra_repl = 0;
    if (!x->fp8)
        return;
    /* the norm outputs: a fused norm's ln_out is kept in fp8 (h of 2h);
     * multi-latent attention's two down-projections each keep their own fp8
     * copy (2h: nothing saved); an expert layer's router keeps the bf16
     * output (nothing saved) and a shared expert's fc1 adds its fp8 copy, h,
     * unless the norm or the shared expert is recomputed (Megatron-Core then
     * sets save_original_input on it: moe_layer.py,
     * set_for_recompute_pre_mlp_layernorm) or the whole MoE layer is. A
     * recomputed norm's linears likewise keep no copy (transformer_layer.py). */
    *repl = (x->a && !x->kv_lora ? x->h : 0) + (x->f && !x->experts ? x->h : 0);
    if (x->experts && x->fs && !(m & (M4D_RC_LAYERNORM | M4D_RC_SHARED_EXPERTS | M4D_RC_MOE)))
        *extra_repl = x->h;
    /* LatentMoE: fc1_latent_proj (a TELinear) keeps its own fp8 copy of the
     * norm's output, h; fc2_latent_proj keeps its input in fp8, latent of
     * 2·latent (Megatron-Core sets save_original_input on neither) */
    if (latent_kept(x) && !(m & M4D_RC_MOE)) {
        *extra_repl += x->h;
        *repl += x->latent;
    }
    /* the output projection's fp8 copy of the attention output, unless
     * Megatron-Core has it save the bf16 input the attention keeps (any
     * recipe but delayed: attention.py, set_save_original_input) */
    if (x->fw != MEM4D_FRAMEWORK_MEGATRON || x->fp8_recipe == 0)
        *extra = mul(ok, x->a, x->v_dim);
    if (!x->experts) {
        if (!(m & M4D_RC_MLP))
            *split = x->f;
    } else if (!(m & M4D_RC_MOE)) {
        if (!(m & M4D_RC_MOE_ACT))
            *split = routed(ok, x, x->fe);
        if (!(m & M4D_RC_SHARED_EXPERTS))
            *split = add(ok, *split, x->fs);
        /* the experts' fc1 input: the permuted tokens quantized and saved in
         * fp8 by the grouped GEMM; the bf16 copy is freed (the fused permute
         * keeps only its row map) */
        if (!keeps_bf16_expert_input(x))
            *repl = add(ok, *repl, routed(ok, x, m4d_expert_width(x)));
    }
    /* NVFP4 keeps the weight gradient's input columnwise alone (the 4-bit
     * values and an E4M3 scale per 16: 9/16 of a byte, M4D_NVFP4_WEIGHT_EIGHTHS'
     * half), so it saves 23/16 of a byte where fp8 saves 1, and a copy kept
     * beside a bf16 input costs 9/16 */
    if (x->fp8_recipe == M4D_FP8_RECIPE_NVFP4) {
        *repl = muldiv(ok, *repl, 32 - M4D_NVFP4_WEIGHT_EIGHTHS, 16);
        *split = muldiv(ok, *split, 32 - M4D_NVFP4_WEIGHT_EIGHTHS, 16);
        *extra = muldiv(ok, *extra, M4D_NVFP4_WEIGHT_EIGHTHS, 16);
        *extra_repl = muldiv(ok, *extra_repl, M4D_NVFP4_WEIGHT_EIGHTHS, 16);
    }
}

/* Fine-grained activation offloading (Megatron-Core
 * pipeline_parallel/fine_grained_activation_offload.py; docs "Fine-Grained
 * Activation Offloading"): each listed module's input, as the layer keeps
 * it for backward, goes to the host in the forward and comes back before
 * the module's backward, per token in the halves of layer_token_bytes:
 * attn_norm the input norm's input 2h and mlp_norm the pre-MLP norm's
 * (replicated); qkv_linear the input norm's output (2h, h when fp8 keeps it,
 * none when the norms are recomputed); core_attn Q, K and V, and attn_proj
 * the attention output (split); expert_fc1 the permuted tokens (2w per
 * routed token, w with fp8; w = h, or LatentMoE's latent) and moe_act the activation's input (2·fe per
 * routed token, 2 bytes). activation_offload_fraction offloads that share of
 * the groups, taken as that share of the bytes. */
static void offload_bytes(bool *ok, const struct m4d_ctx *x, uint64_t *repl, uint64_t *split)
{
    uint64_t om = x->offload_modules, m = x->recompute == 1 ? x->rc_modules : 0;
    *repl = *split = 0;
    if (!om)
        return;
    uint64_t h2 = 2 * x->h, in_h = x->fp8 ? x->h : h2;
    if (om & M4D_OFFLOAD_ATTN_NORM)
        *repl = add(ok, *repl, h2);
    if (om & M4D_OFFLOAD_MLP_NORM)
        *repl = add(ok, *repl, h2);
    if ((om & M4D_OFFLOAD_QKV_LINEAR) && !(m & M4D_RC_LAYERNORM))
        *repl = add(ok, *repl, in_h);
    if (om & M4D_OFFLOAD_CORE_ATTN)
        *split = add(ok, *split, mul(ok, 2, add(ok, mul(ok, x->a, x->qk_dim), mul(ok, x->kv_heads, x->qk_dim + x->v_dim))));
    if (om & M4D_OFFLOAD_ATTN_PROJ)
        *split = add(ok, *split, mul(ok, 2 * x->a, x->v_dim));
    uint64_t ew = m4d_expert_width(x); /* the permuted tokens: latent-wide with LatentMoE */
    if (x->experts && (om & M4D_OFFLOAD_EXPERT_FC1))
        *repl = add(ok, *repl, routed(ok, x, keeps_bf16_expert_input(x) || !x->fp8 ? 2 * ew : ew));
    if (x->experts && (om & M4D_OFFLOAD_MOE_ACT))
        *split = add(ok, *split, routed(ok, x, 4 * x->fe));
    *repl = muldiv(ok, *repl, x->offload_ppm, 1000000);
    *split = muldiv(ok, *split, x->offload_ppm, 1000000);
}

/* One layer's offloaded inputs for a micro-batch (offload_bytes, T tokens). */
static uint64_t offloaded_layer(bool *ok, const struct m4d_ctx *x)
{
    uint64_t repl, split, T = tokens(ok, x);
    offload_bytes(ok, x, &repl, &split);
    return add(ok, muldiv(ok, T, repl, t_sp(x)), muldiv(ok, T, split, x->t));
}

/* DeepSeek Sparse Attention's lightning indexer (Megatron-Core
 * experimental_attention_variant/dsa.py), per token of the micro-batch, not
 * split by t (its projections are duplicated): FusedDSAIndexerLoss keeps the
 * rotated query n_i·d_i, the head weights n_i and the key d_i (2 bytes each),
 * the key's LayerNorm its input d_i, and the chosen keys' indices as int64,
 * 8·topk; the main query and key it also keeps are the attention's own. The
 * indexer reads detached copies of the layer's normalised input and
 * compressed query, which with sequence parallelism over t > 1 it gathers
 * first, 2·(h + r_q) more; otherwise they are tensors the layer keeps
 * anyway. The indexer runs inside the attention core, so recomputing the core
 * (selective recompute's core_attn) drops all of it from what the layer keeps,
 * and the re-run core holds it again during that layer's backward
 * (m4d_selective_live). */
static uint64_t dsa_indexer_bytes(bool *ok, const struct m4d_ctx *x)
{
    if (!x->idx_heads)
        return 0;
    uint64_t b = add(ok, mul(ok, 2 * x->idx_heads, x->idx_dim + 1), add(ok, 4 * x->idx_dim, mul(ok, 8, x->idx_topk)));
    if (x->sp && x->t > 1)
        b = add(ok, b, 2 * (x->h + x->q_lora));
    return mul(ok, tokens(ok, x), b);
}

/* Multi-latent attention's latents (Megatron-Core multi_latent_attention.py,
 * get_query_key_value_tensors), bytes per token of the micro-batch. The
 * down-projections are duplicated over t and, with sequence parallelism, see
 * the rank's T/t tokens only, so their outputs are split by t_sp: the
 * compressed query r_q (saved by the query up-projection's fused norm) and
 * kv_combined r_kv + d_rope (kept whole by the key/value norm's saved view),
 * 2 bytes each; the up-projections (TELayerNormColumnParallelLinear) save
 * their normalised inputs, r_q + r_kv, 2 bytes or 1 with fp8 (*repl). With
 * mla_up_proj recomputed the up-projections run inside CheckpointWithoutOutput,
 * which keeps only its inputs: no normalised copies, but the rotary key
 * k_pos_emb, gathered over the whole sequence when sequence parallelism
 * splits it, 2·d_rope not split (*whole). */
static void mla_latent_bytes(const struct m4d_ctx *x, uint64_t *repl, uint64_t *whole)
{
    *repl = *whole = 0;
    if (!x->kv_lora || !x->a)
        return;
    *repl = 2 * (x->q_lora + x->kv_lora + x->rope_dim);
    if (reruns(x, M4D_RC_MLA_UP_PROJ))
        *whole = t_sp(x) > 1 ? 2 * x->rope_dim : 0;
    else
        *repl += (x->fp8 ? 1 : 2) * (x->q_lora + x->kv_lora);
}

/* A_layer: one layer, one micro-batch, no full recompute, less what
 * fine-grained offloading sends to the host, with multi-latent attention's
 * latents (above). */
uint64_t m4d_layer_activation(bool *ok, const struct m4d_ctx *x)
{
    uint64_t repl, split, drop_repl, drop_split, fp8_repl, fp8_split, fp8_extra, fp8_extra_repl, T = tokens(ok, x);
    layer_token_bytes(ok, x, &repl, &split);
    selective_savings(ok, x, &drop_repl, &drop_split);
    fp8_savings(ok, x, &fp8_repl, &fp8_split, &fp8_extra, &fp8_extra_repl);
    split = add(ok, split, fp8_extra);
    repl = add(ok, repl, fp8_extra_repl);
    drop_repl = add(ok, drop_repl, fp8_repl);
    drop_split = add(ok, drop_split, fp8_split);
    repl = repl > drop_repl ? repl - drop_repl : 0;
    split = split > drop_split ? split - drop_split : 0;
    uint64_t a = add(ok, muldiv(ok, T, repl, t_sp(x)), muldiv(ok, T, split, x->t));
    uint64_t off = offloaded_layer(ok, x);
    a = a > off ? a - off : 0;
    uint64_t lat_repl, lat_whole;
    mla_latent_bytes(x, &lat_repl, &lat_whole);
    a = add(ok, a, add(ok, muldiv(ok, T, lat_repl, t_sp(x)), mul(ok, T, lat_whole)));
    if (!reruns(x, M4D_RC_CORE_ATTN))
        a = add(ok, a, dsa_indexer_bytes(ok, x));
    return add(ok, a, mul(ok, T, gathered_inputs(x)));
}

uint64_t m4d_layer_activation_bytes(const struct m4d_ctx *x)
{
    bool ok = true;
    uint64_t a = m4d_layer_activation(&ok, x);
    return ok ? a : 0;
}

/* C: a full-recompute checkpoint keeps only the layer input, 2·T·h/t_sp (4 with fp32 residuals);
 * --distribute-saved-activations splits it over t when sequence
 * parallelism does not already. */
uint64_t m4d_checkpoint_bytes(bool *ok, const struct m4d_ctx *x)
{
    return muldiv(ok, tokens(ok, x), residual_bytes(x) * x->h, x->distribute_saved ? x->t : t_sp(x));
}

/* torchtitan's op-selective activation checkpointing (_save_list in
 * parallelize_llama.py): inside a block the outputs of every aten.mm except
 * each second one, of the attention kernel and of the tensor-parallel
 * reduce-scatters are saved; everything else is recomputed. The block's
 * matmuls run wq, wk, wv, wo, w1, w3, w2 (SwiGLU; fc1, fc2 without a gate),
 * so wq (a·dh), wv (k·dh), w1 (f) and w2 are saved; w2's output is the full
 * hidden state h before its reduce-scatter. Per micro-batch and block: the
 * block input 2h/t_sp, those 2-byte outputs, the attention output a·dh and
 * its fp32 log-sum-exp 4a (split by t), and with t > 1 the two
 * reduce-scattered outputs of wo and w2, 2·2h/t_sp. */
uint64_t m4d_op_sac_layer_keep(bool *ok, const struct m4d_ctx *x)
{
    uint64_t T = tokens(ok, x), f = x->experts ? routed(ok, x, x->fe) : x->f;
    uint64_t split = add(ok, mul(ok, 2 * (2 * x->a + x->k), x->dh), add(ok, 4 * x->a, mul(ok, 2, f)));
    uint64_t repl = 2 * x->h + (x->t > 1 ? 4 * x->h : 0);
    uint64_t keep = add(ok, muldiv(ok, T, repl, t_sp(x)), muldiv(ok, T, split, x->t));
    return x->gated ? add(ok, keep, mul(ok, T, 2 * x->h)) : keep;
}

/* l layers' A_layer, e of them expert layers: e·A_e + (l − e)·A_dense;
 * with a layer pattern the layers [first, first + l) by their kinds. */
static M4D_INLINE uint64_t mixed_layers(bool *ok, const struct m4d_ctx *x, const struct shared *sh, uint64_t first,
                                        uint64_t l, uint64_t e)
{
    if (x->nlt) {
        uint64_t counts[M4D_MAX_LAYER_KINDS], a = 0;
        m4d_pattern_kind_count(x, first, l, counts);
        for (uint64_t i = 0; i < x->nkinds; i++)
            a = add(ok, a, mul(ok, sh->kA[i], counts[i]));
        return a;
    }
    uint64_t a = add(ok, mul(ok, sh->A, e), mul(ok, sh->A_dense, l - e));
    /* layers that reuse another layer's top-k keep no indexer tensors */
    if (x->idx_heads && x->idx_freq > 1 && !reruns(x, M4D_RC_CORE_ATTN)) {
        uint64_t drop = mul(ok, l - m4d_indexer_layers_in(x, first, l), dsa_indexer_bytes(ok, x));
        a = a > drop ? a - drop : 0;
    }
    return a;
}

/* The largest A_layer among layers [first, first + l) of a layer pattern. */
static uint64_t pattern_max_layer(const struct m4d_ctx *x, const struct shared *sh, uint64_t first, uint64_t l)
{
    uint64_t counts[M4D_MAX_LAYER_KINDS], a = 0;
    m4d_pattern_kind_count(x, first, l, counts);
    for (uint64_t i = 0; i < x->nkinds; i++)
        if (counts[i])
            a = max64(a, sh->kA[i]);
    return a;
}

/* What one micro-batch keeps over `l` consecutive layers, e of them expert
 * layers (a model mixing dense and expert layers; with block recompute the
 * expert layers are taken to be among the kept ones, an upper bound), and the extra
 * live set while one of its recomputed groups runs its backward.
 * selective: l·A_layer kept, one layer's re-run attention core live;
 * uniform, N per group: ⌈l/N⌉·C kept, N·A_layer live;
 * block, first N recomputed: N·C + (l−N)·A_layer kept, one A_layer live.
 * N = 0 means all l layers. */
static M4D_INLINE void micro_batch_keep(bool *ok, const struct m4d_ctx *x, const struct shared *sh, uint64_t first,
                                        uint64_t l, uint64_t e, uint64_t *keep, uint64_t *live)
{
    uint64_t C = sh->C;
    uint64_t Amax = x->nlt ? pattern_max_layer(x, sh, first, l) : e ? max64(sh->A, sh->A_dense) : sh->A_dense;
    *live = 0;
    /* CPU offloading of the first N layers (Transformer Engine's default
     * schedule, docs/features/other_optimizations/cpu_offloading: "at most
     * model_layers - num_layers sets of activations are on GPU at any
     * time"); offloaded expert layers are taken to be dense ones, an upper
     * bound. Megatron allows it on one stage without recomputation only. */
    if (M4D_UNLIKELY(x->act_offload) && l > x->act_offload) {
        l -= x->act_offload;
        e = min64(e, l);
    }
    if (M4D_UNLIKELY(x->recompute == 3) && l > 0) { /* op-selective: the block re-run in backward completes A */
        *keep = mul(ok, sh->sac, l);
        *live = Amax > sh->sac ? Amax - sh->sac : 0;
        return;
    }
    if (M4D_UNLIKELY(x->recompute == 2 && x->fw == MEM4D_FRAMEWORK_TORCHTITAN) && l > 0) {
        /* every block checkpointed on its own, or only every N-th (layer-selective) */
        uint64_t ck = x->rc_every > 1 ? l / x->rc_every : l;
        *keep = add(ok, mul(ok, C, ck), mul(ok, Amax, l - ck));
        *live = Amax;
        return;
    }
    if (x->recompute != 2 || l == 0) {
        *keep = mixed_layers(ok, x, sh, first, l, e);
        if (x->recompute == 1 && l > 0)
            *live = sh->core_live;
        return;
    }
    uint64_t N = x->rc_layers ? min64(x->rc_layers, l) : l;
    if (x->rc_method == 0) {
        *keep = mul(ok, C, m4d_ceil_div(l, N));
        *live = mul(ok, Amax, N);
    } else {
        *keep = add(ok, mul(ok, C, N), mixed_layers(ok, x, sh, first + N, l - N, min64(e, l - N)));
        *live = Amax;
    }
}

/* --delay-wgrad-compute: Transformer Engine queues each linear's
 * [input, grad_output] (WeightGradStore) until backward_dw runs at the end
 * of the layer's step, so within one layer's backward those stay live
 * besides the working set: the QKV projection's output gradient
 * (a·d_qk + k·(d_qk + d_v), split by t), the output projection's and the
 * down projection's (h, per routed token with experts), and with sequence
 * parallelism the all-gathered inputs of the column-parallel linears
 * (the QKV projection, the dense or shared-expert fc1), 2h each over the
 * whole sequence. One layer's worth at a time (the expert weight gradients
 * run right after the MLP's backward). */
static uint64_t delayed_wgrad(bool *ok, const struct m4d_ctx *x)
{
    if (!x->delay_wgrad)
        return 0;
    uint64_t T = tokens(ok, x), qkv = add(ok, mul(ok, x->a, x->qk_dim), mul(ok, x->kv_heads, x->qk_dim + x->v_dim));
    uint64_t down = x->experts ? routed(ok, x, 2 * x->h) : 2 * x->h;
    uint64_t b = add(ok, muldiv(ok, T, 2 * qkv, x->t), muldiv(ok, T, add(ok, 2 * x->h, down), t_sp(x)));
    if (x->sp && x->t > 1)
        b = add(ok, b, mul(ok, mul(ok, T, 2 * x->h), x->experts && !x->fs ? 1 : 2));
    return b;
}

/* The transient of one layer's backward: gradients of the MLP
 * intermediates and of the hidden state, and in attention the flash
 * kernel's fp32 dq accumulator 4·a·dh or, without flash attention, the
 * 2-byte gradient of the probabilities from the context matmul 2a·s/c
 * (the fused softmax backward then works in place on it), and with
 * attention dropout the dropout backward's new output beside it, 4a·s/c;
 * where PyTorch's fp32 softmax runs in place of the fused one,
 * SOFTMAX_TORCH_BWD_LIVE a score; with fine-grained offloading two layers'
 * offloaded inputs, and with delayed weight gradients what Transformer
 * Engine queues (above). */
uint64_t m4d_backward_working_set(bool *ok, const struct m4d_ctx *x)
{
    uint64_t inter = x->gated ? 3 : 2, T = tokens(ok, x);
    uint64_t mlp = x->experts ? add(ok, routed(ok, x, mul(ok, inter, x->fe)), inter * x->fs) : mul(ok, inter, x->f);
    uint64_t per_score = softmax_falls_back(x) ? SOFTMAX_TORCH_BWD_LIVE : x->attn_dropout ? 4 : 2;
    uint64_t attn = x->flash ? mul(ok, 4 * x->a, x->qk_dim) : mul(ok, per_score * x->a, x->s / x->c);
    uint64_t split = add(ok, mul(ok, 2, mlp), attn);
    uint64_t w = add(ok, muldiv(ok, T, split, x->t), muldiv(ok, T, 2 * x->h, t_sp(x)));
    /* offloading keeps the last layer's groups (offload margin) and reloads
     * the layer in backward: two layers' offloaded inputs on the GPU */
    w = add(ok, w, mul(ok, 2, offloaded_layer(ok, x)));
    return add(ok, w, delayed_wgrad(ok, x));
}

/* The logits-sized blocks live around the loss besides Megatron's (below):
 * n2 two-byte and n4 four-byte blocks of T·V_p/t elements, and the two-byte
 * blocks already freed that the allocator cannot hand to the larger fp32
 * requests (they stay reserved).
 * - nanotron (sharded_cross_entropy, dtype fp32): the bf16 logits the caller
 *   holds, their fp32 copy and the max-shifted fp32 copy: 2 + 4 + 4.
 * - torchtitan and DeepSpeed (HF models) with PyTorch's cross_entropy on
 *   logits.float(): forward bf16 + fp32 copy + log_softmax output; the bf16
 *   logits are then freed (`del pred`); backward the saved output, the
 *   nll_loss gradient and the log_softmax gradient, 3·4, with the freed bf16
 *   block stranded.
 * - torchtitan with t > 1 (loss parallel, torch.distributed.tensor.parallel
 *   loss.py): forward, _log_softmax keeps the bf16 logits, the fp32 copy and
 *   the shifted copy while it makes the result (2 + 3·4); backward,
 *   _nll_loss_and_log_softmax_backward computes (grad_input + exp(x)) *
 *   grad_output beside the saved result: 4·4 live, the bf16 block stranded
 *   (the fp32 blocks reuse the forward's freed ones, one more is new).
 * - an RL trainer's log-probability loss (logprob_loss; below).
 * - a compiled loss (compile = blocks_and_loss; torchtitan's
 *   components/loss.py wraps cross_entropy_loss in torch.compile): Inductor
 *   computes the upcast, log-softmax and loss in fused kernels and its
 *   partitioner saves the bf16 logits rather than an fp32 tensor; backward
 *   writes the bf16 gradient directly: 2 + 2. */
static void loss_blocks(const struct m4d_ctx *x, uint64_t *n2, uint64_t *n4, uint64_t *stranded)
{
    if (x->logprob_loss) {
        /* an RL trainer's loss (slime, THUDM/slime@624b824 ppo_utils.py
         * _VocabParallelLogProbEntropy): Float16Module casts the logits to
         * fp32 and frees the bf16 ones (stranded for the fp32 requests); the
         * max-shifted copy becomes the softmax in place and is saved. Forward
         * logits + softmax, 2·4; backward the softmax turns into the gradient
         * in place (then its bf16 cast: 4 + 2). With the entropy's gradient
         * the logits are saved too and its gradient is made beside them: 3·4. */
        *n2 = 0, *n4 = x->logprob_loss == 2 ? 3 : 2, *stranded = 1;
    } else if (x->fw == MEM4D_FRAMEWORK_NANOTRON) {
        *n2 = 1, *n4 = 2;
    } else if (x->compile == 2) {
        *n2 = 2, *n4 = 0;
    } else if (x->fw == MEM4D_FRAMEWORK_TORCHTITAN && x->t > 1) {
        *n2 = 0, *n4 = 4, *stranded = 1;
    } else if (x->fw != MEM4D_FRAMEWORK_MEGATRON) { /* PyTorch's cross_entropy on one rank */
        *n2 = 0, *n4 = 3, *stranded = 1;
    }
}

/* Reserved beyond allocated around the loss, without expandable segments:
 * the n2 live and ns freed two-byte blocks of e2 bytes, allocated first
 * (the head's output), then the n4 four-byte blocks of e4, each placed as
 * PyTorch's caching allocator places a request (c10/cuda/
 * CUDACachingAllocator.cpp: get_free_block, alloc_block, should_split): in
 * the smallest free block of its pool (small up to 1 MiB) that holds it,
 * else in a new segment of m4d_alloc_size() bytes; the rest of the block
 * stays free when it is split off (more than 1 MiB in the large pool, 512
 * bytes in the small), else the request holds it. So a request of 1 to 10
 * MiB takes a 20 MiB segment whose rest holds the next ones ("requests
 * between 1MB and 10MB will allocate and split a 20MB block"). The freed
 * blocks stay reserved: every later request is larger. Segments less the
 * live blocks' bytes. */
static uint64_t loss_segments(bool *ok, uint64_t e2, uint64_t n2, uint64_t ns, uint64_t e4, uint64_t n4)
{
    struct {
        uint64_t bytes;
        bool small;
    } free_[8];
    uint64_t seg = 0;
    size_t nfree = 0;
    for (uint64_t i = 0; i < n2 + ns + n4 && i < M4D_LEN(free_); i++) {
        uint64_t b = m4d_alloc_block(i < n2 + ns ? e2 : e4), rest;
        bool small = b <= M4D_ALLOC_SMALL_SIZE;
        size_t best = nfree;
        for (size_t k = 0; k < nfree; k++)
            if (free_[k].small == small && free_[k].bytes >= b && (best == nfree || free_[k].bytes < free_[best].bytes))
                best = k;
        if (best < nfree) {
            rest = free_[best].bytes - b;
            free_[best] = free_[--nfree];
        } else {
            uint64_t size = m4d_alloc_size(b);
            seg = add(ok, seg, size);
            rest = size - b;
        }
        if (small ? rest >= M4D_ALLOC_MIN_BLOCK : rest > M4D_ALLOC_SMALL_SIZE)
            free_[nfree].bytes = rest, free_[nfree++].small = small;
    }
    uint64_t live = add(ok, mul(ok, n2, e2), mul(ok, n4, e4));
    return seg > live ? seg - live : 0;
}

/* Last stage, one micro-batch: the final norm's input and the head's input
 * (4h/t_sp bytes per token), and around the loss the bf16 logits with their
 * fp32 copy (Megatron's vocab_parallel_cross_entropy works in place on the
 * copy and keeps it as the softmax) or, in backward, that fp32 gradient and
 * its bf16 cast: 6·T·V_p/t. Megatron-Core's fused cross entropy as compiled
 * whole by torch.compile (through 0.14) mutates the fp32 copy inside a graph
 * that also reduces over it, so Inductor builds the new value in a fresh
 * fp32 buffer and copies it back: 10·T·V_p/t. */
void m4d_head_bytes(bool *ok, const struct m4d_ctx *x, uint64_t *keep, uint64_t *loss, uint64_t *stranded)
{
    uint64_t T = tokens(ok, x), E = muldiv(ok, T, x->Vp, x->t), n2 = 1, n4 = x->ce_fusion ? 2 : 1, ns = 0;
    *keep = muldiv(ok, T, 4 * x->h, t_sp(x));
    if (gathered_inputs(x)) /* the head's input is saved gathered (gathered_inputs) */
        *keep = add(ok, muldiv(ok, T, 2 * x->h, t_sp(x)), mul(ok, T, 2 * x->h));
    loss_blocks(x, &n2, &n4, &ns);
    *loss = muldiv(ok, mul(ok, T, 2 * n2 + 4 * n4), x->Vp, x->t);
    /* reserved beyond allocated: the blocks' segments (loss_segments); with
     * expandable segments the blocks sit in the one segment whose end
     * m4d_fragmentation() rounds, so each keeps only its 512-byte rounding
     * (m4d_alloc_block), and the freed ones merge with their neighbours */
    uint64_t e2 = mul(ok, E, 2), e4 = mul(ok, E, 4);
    if (x->expandable)
        *stranded = add(ok, mul(ok, n2, m4d_alloc_block(e2) - e2), mul(ok, n4, m4d_alloc_block(e4) - e4));
    else
        *stranded = loss_segments(ok, e2, n2, ns, e4, n4);
}

/* One MTP depth's loss, kept until the backward (Megatron-Core
 * multi_token_prediction.py process_mtp_loss, NVIDIA/Megatron-LM@d98e8a6):
 * in forward, before the main head's logits, each depth computes its logits
 * and its cross entropy, and the loss reaches the graph through
 * MTPLossAutoScaler; the cross entropy (fused or not,
 * fusions/fused_cross_entropy.py and tensor_parallel/cross_entropy.py)
 * saves its fp32 softmax (exp_logits, T·V_p/t) with the target mask (bool)
 * and the masked targets (int64) for backward. The bf16 logits are freed
 * once the next depth's replace them. */
uint64_t m4d_mtp_loss_keep(bool *ok, const struct m4d_ctx *x)
{
    uint64_t T = tokens(ok, x);
    return add(ok, muldiv(ok, mul(ok, T, 4), x->Vp, x->t), mul(ok, T, 1 + 8));
}

/* First stage, one micro-batch: the int64 token ids 8·T and, with hidden
 * dropout, the embedding dropout's one-byte mask h·T/t_sp (Megatron-Core's
 * LanguageModelEmbedding scatters to the sequence-parallel region first). */
uint64_t m4d_embedding_keep(bool *ok, const struct m4d_ctx *x)
{
    uint64_t T = tokens(ok, x), ids = mul(ok, T, 8);
    return x->hidden_dropout ? add(ok, ids, muldiv(ok, T, x->h, t_sp(x))) : ids;
}

/* Megatron's --defer-embedding-wgrad-compute (tensor_parallel/layers.py,
 * LinearWithGradAccumulationAndAsyncCommunication: the output layer appends
 * its input to embedding_activation_buffer and, in backward, its gradient
 * output (cast to the input's dtype) to grad_output_buffer, for up to
 * wgrad_deferral_limit micro-batches, 0 meaning all; the weight gradients
 * run at the pipeline flush): the last stage keeps, per deferred
 * micro-batch, the head input 2h·T/t_sp and the logits gradient 2·T·V_p/t;
 * at the last loss min(n, m − 1) of the n deferred, at the flush all n. m
 * unknown is taken as p. */
static void deferred_embedding_wgrad(bool *ok, const struct m4d_ctx *x, uint64_t *at_loss, uint64_t *at_flush)
{
    if (!x->defer_emb_wgrad || x->p < 2)
        return;
    uint64_t m = x->m ? x->m : x->p, n = x->wgrad_defer_limit && x->wgrad_defer_limit < m ? x->wgrad_defer_limit : m;
    uint64_t T = tokens(ok, x), each = add(ok, muldiv(ok, T, 2 * x->h, t_sp(x)), muldiv(ok, mul(ok, T, 2), x->Vp, x->t));
    *at_loss = add(ok, *at_loss, mul(ok, each, n < m ? n : m - 1));
    *at_flush = add(ok, *at_flush, mul(ok, each, n));
}

/* torch.distributed.pipelining with return_outputs (PipelineScheduleSingle
 * .step, stage.py forward_one_chunk: "if self.is_last:
 * self.output_chunks.append(output)"; cleared at the next step): the last
 * stage keeps every micro-batch's output, torchtitan's bf16 logits 2·E, and
 * step() ends with _merge_outputs, a torch.cat of them all. Returns the
 * bytes kept at the last micro-batch's loss ((m − 1)·2E) and at the merge
 * (2·m·2E); m unknown is taken as p (torchtitan's default micro-batch
 * count is the pipeline degree). */
void m4d_pp_kept_outputs(bool *ok, const struct m4d_ctx *x, uint64_t *at_loss, uint64_t *at_merge)
{
    *at_loss = *at_merge = 0;
    deferred_embedding_wgrad(ok, x, at_loss, at_merge);
    if (!x->pp_outputs || x->p < 2)
        return;
    uint64_t m = x->m ? x->m : x->p, E2 = muldiv(ok, mul(ok, tokens(ok, x), 2), x->Vp, x->t);
    *at_loss = add(ok, *at_loss, mul(ok, E2, m - 1));
    *at_merge = add(ok, *at_merge, mul(ok, mul(ok, E2, m), 2));
}

/* Of the `units` chunk micro-batches in flight on a stage, those of chunk j:
 * Megatron's interleaved schedule runs its forwards in groups of p
 * micro-batches per chunk, chunk 0 to v-1 and round again
 * (get_model_chunk_id), so q·p + min(p, rest − j·p) are chunk j's. */
static uint64_t chunk_units(const struct m4d_ctx *x, uint64_t units, uint64_t j)
{
    uint64_t pv = x->p * x->v, q = units / pv, rest = units % pv;
    return q * x->p + (rest > j * x->p ? min64(x->p, rest - j * x->p) : 0);
}

/* Activations of stage r at two moments. At the forward/backward peak
 * (*peak): the in-flight micro-batches' kept tensors, the first stage's
 * token ids (int64), and the larger of two transients: the loss on the last
 * stage, or one layer's backward with its recomputed group. When the first
 * stage's embedding gradient is formed (*at_embedding_grad), one in-flight
 * micro-batch has just been freed. */
void m4d_stage_activations(bool *ok, const struct m4d_ctx *x, struct shared *sh, uint64_t r,
                           uint64_t *reported_in_flight, uint64_t *peak, uint64_t *at_embedding_grad,
                           uint64_t *stranded)
{
    uint64_t units, each, keep, live, act, mtp_units;
    m4d_in_flight(x, r, &units, &each);
    *reported_in_flight = x->v > 1 ? m4d_ceil_div(units, x->v) : units;
    /* the MTP modules follow the last chunk: only its micro-batches keep them */
    mtp_units = x->v > 1 ? chunk_units(x, units, x->v - 1) : units;
    if (M4D_UNLIKELY(m4d_split_by_vstage(&x->split)) && x->v > 1) {
        /* Chunks of unequal length: each of chunk j's micro-batches in
         * flight (chunk_units) keeps its own layers. */
        uint64_t first_keep = 0;
        act = live = 0;
        for (uint64_t j = 0; j < x->v; j++) {
            uint64_t nj = chunk_units(x, units, j), kj, lj;
            uint64_t l = m4d_split_chunk_layers(&x->split, r, j);
            uint64_t first = m4d_split_chunk_first(&x->split, r, j);
            micro_batch_keep(ok, x, sh, first, l, m4d_moe_layers_in(x, first, l), &kj, &lj);
            act = add(ok, act, mul(ok, kj, nj));
            if (nj)
                live = max64(live, lj);
            if (j == 0)
                first_keep = kj;
        }
        *at_embedding_grad = act > first_keep ? act - first_keep : 0;
    } else if (M4D_UNLIKELY(x->nlt)) {
        /* a layer pattern: the heaviest chunk's layers, as below */
        keep = live = 0;
        for (uint64_t j = 0; j < x->v; j++) {
            uint64_t kj, lj;
            uint64_t first = m4d_split_chunk_first(&x->split, r, j);
            micro_batch_keep(ok, x, sh, first, m4d_split_chunk_layers(&x->split, r, j), 0, &kj, &lj);
            keep = max64(keep, kj);
            live = max64(live, lj);
        }
        act = mul(ok, keep, units);
        *at_embedding_grad = mul(ok, keep, units - 1);
    } else {
        /* stages of as many layers keep as much: each (layers, expert
         * layers) is computed once per estimate (stages 0, 1 and p - 1 of
         * an even split share one; uneven ends take up to three) */
        uint64_t e = x->experts ? m4d_chunk_moe_layers(x, r) : 0;
        size_t i = 0;
        while (i + 1 < M4D_LEN(sh->mbk) && sh->mbk[i].have && (sh->mbk[i].l != each || sh->mbk[i].e != e))
            i++;
        if (!sh->mbk[i].have || sh->mbk[i].l != each || sh->mbk[i].e != e) {
            micro_batch_keep(ok, x, sh, 0, each, e, &sh->mbk[i].keep, &sh->mbk[i].live);
            sh->mbk[i].have = true, sh->mbk[i].l = each, sh->mbk[i].e = e;
        }
        keep = sh->mbk[i].keep, live = sh->mbk[i].live;
        act = mul(ok, keep, units);
        *at_embedding_grad = mul(ok, keep, units - 1);
    }
    if (r == 0)
        act = add(ok, act, mul(ok, sh->emb_keep, *reported_in_flight));
    /* fp32 residuals: the schedule keeps each received input (fp32), besides
     * the bf16 copy the first norm saves; rank 0's first chunk receives none */
    if (M4D_UNLIKELY(x->fp32_residual) && x->p > 1) {
        uint64_t received = r > 0 ? units : units - m4d_ceil_div(units, x->v);
        act = add(ok, act, mul(ok, received, muldiv(ok, tokens(ok, x), 4 * x->h, t_sp(x))));
    }
    uint64_t transient = add(ok, sh->backward, live);
    /* EP overlap: one micro-batch's forward runs layer by layer beside
     * another's backward (model_chunk_schedule_plan.py): at worst a whole
     * forward layer is allocated before the backward frees its attention */
    if (M4D_UNLIKELY(x->ep_overlap))
        transient = add(ok, transient, sh->A);
    *stranded = 0;
    if (r == x->p - 1) {
        uint64_t mtp = m4d_split_mtp(&x->split, r), mtp_keep = 0; /* no MTP module: no loss of its own to size */
        if (mtp)
            mtp_keep = mul(ok, mul(ok, add(ok, sh->A_mtp, m4d_mtp_loss_keep(ok, x)), mtp), mtp_units);
        act = add(ok, act, add(ok, sh->head_keep, mtp_keep));
        act = add(ok, act, sh->pp_kept);
        uint64_t layer = transient;
        if (sh->loss > transient) {
            transient = sh->loss;
            *stranded = sh->stranded;
        }
        /* per-layer CUDA graphs: the eager loss cannot reuse the graph pool's
         * backward working set, so the smaller of the two stays reserved */
        if (x->cuda_graph == MEM4D_CUDA_GRAPH_LOCAL || x->cuda_graph == MEM4D_CUDA_GRAPH_TRANSFORMER_ENGINE)
            *stranded = add(ok, *stranded, min64(layer, sh->loss));
    }
    *peak = add(ok, act, transient);
}

/* Selective recompute: while one layer's backward runs, the modules it
 * re-ran hold their tensors again: the attention core's, and what
 * selective_savings() dropped, with the sparse-attention indexer's. */
uint64_t m4d_selective_live(bool *ok, const struct m4d_ctx *x)
{
    uint64_t T = tokens(ok, x), repl, split;
    selective_savings(ok, x, &repl, &split);
    uint64_t core = reruns(x, M4D_RC_CORE_ATTN) ? attention_core_bytes(ok, x) : 0;
    uint64_t live = add(ok, muldiv(ok, T, add(ok, core, split), x->t), muldiv(ok, T, repl, t_sp(x)));
    return reruns(x, M4D_RC_CORE_ATTN) ? add(ok, live, dsa_indexer_bytes(ok, x)) : live;
}
