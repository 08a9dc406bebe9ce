/*
 * Full mode: every pipeline stage with its own weights, the micro-batches
 * its schedule keeps in flight, the last stage's logits and cross-entropy
 * temporaries, recomputation, the buffers Megatron-LM really allocates and
 * the fixed costs of CUDA and NCCL. Every term, its symbol and where it comes
 * from is in doc/full-model.md; symbols follow doc/formulas.md.
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "private.h"

/* Sticky checked arithmetic: a step that would overflow clears *ok and
 * yields 0, so a formula reads like the formula and is checked once. */
static uint64_t add(bool *ok, uint64_t a, uint64_t b)
{
    uint64_t r;
    if (!m4d_add(a, b, &r)) {
        *ok = false;
        return 0;
    }
    return r;
}

static uint64_t mul(bool *ok, uint64_t a, uint64_t b)
{
    uint64_t r;
    if (!m4d_mul(a, b, &r)) {
        *ok = false;
        return 0;
    }
    return r;
}

/* ⌈a·b/d⌉ exactly, d > 0. */
static uint64_t muldiv(bool *ok, uint64_t a, uint64_t b, uint64_t d)
{
    uint64_t r;
    if (!m4d_muldiv_ceil(a, b, d, &r)) {
        *ok = false;
        return 0;
    }
    return r;
}

/* v per routed expert input, times the expert inputs per token (top-k, or
 * with a capacity factor, m4d_routed_ppm). */
static uint64_t routed(bool *ok, const struct m4d_ctx *x, uint64_t v)
{
    return muldiv(ok, v, m4d_routed_ppm(x), 1000000);
}

static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* t_sp: what splits the "replicated" half of a layer's activations (norm
 * inputs and outputs): t with sequence parallelism, else 1. */
static uint64_t t_sp(const struct m4d_ctx *x) { return x->sp && x->t > 1 ? x->t : 1; }

/* T = s·b/c: tokens of one micro-batch on one context-parallel rank. */
static uint64_t tokens(bool *ok, const struct m4d_ctx *x) { return mul(ok, x->s / x->c, x->b); }

/* ℓ_r: layers of stage r (Megatron's --decoder-first/last-pipeline-num-layers,
 * or its v virtual stages: a layer table, or a shorter first/last one). */
static uint64_t stage_layers(const struct m4d_ctx *x, uint64_t r)
{
    if (m4d_chunked(x))
        return m4d_vs_rank_layers(x, r);
    if (!x->first_layers && !x->last_layers)
        return x->L / x->p;
    if (r == 0 && x->first_layers)
        return x->first_layers;
    if (r == x->p - 1 && x->last_layers)
        return x->last_layers;
    uint64_t ends = (x->first_layers > 0) + (x->last_layers > 0);
    return (x->L - x->first_layers - x->last_layers) / (x->p - ends);
}

/* One layer's parameters on one rank: the linear weights split by t (expert
 * weights by ep·t_e, t_e the expert tensor-parallel size, t by default),
 * norms and router replicated.
 * `expert` is the part whose optimizer shards over the expert-data-parallel
 * group (d·c/ep) instead of d·c. */
struct layer_share {
    uint64_t linear, expert, replicated;
};

static struct layer_share layer_share(bool *ok, const struct m4d_ctx *x)
{
    struct layer_share s = {0, 0, 0};
    uint64_t attn, mlp, norms;
    if (!m4d_layer_params(x, &attn, &mlp, &norms)) {
        *ok = false;
        return s;
    }
    s.replicated = norms;
    s.linear = m4d_ceil_div(attn, x->t);
    if (x->experts == 0) {
        s.linear = add(ok, s.linear, m4d_ceil_div(mlp, x->t));
        return s;
    }
    uint64_t one, shared = 0;
    if (!m4d_expert_params(x, x->fe, &one) || (x->fs && !m4d_expert_params(x, x->fs, &shared)))
        *ok = false;
    uint64_t experts = mul(ok, one, x->experts);
    s.expert = muldiv(ok, experts, 1, x->ep * x->etp);
    s.linear = add(ok, s.linear, m4d_ceil_div(shared, x->t));
    s.replicated = add(ok, s.replicated, mul(ok, x->h, x->experts) + (x->fs && x->shared_gate ? x->h : 0));
    return s;
}

/* What every stage of one estimate shares, computed once per estimate (the
 * search calls m4d_estimate_full() millions of times a second). */
struct shared {
    struct layer_share share; /* one layer's parameters on a rank (an expert layer's with experts) */
    struct layer_share dense; /* one dense layer's (= share without experts) */
    uint64_t A_dense;         /* A_layer of a dense layer */
    uint64_t mtp;             /* the MTP modules' parameters on the last stage */
    uint64_t emb;             /* V_p·h/t */
    uint64_t T;               /* tokens of a micro-batch on a rank */
    uint64_t A, C;            /* A_layer and a full-recompute checkpoint */
    uint64_t core_live;       /* selective recompute: one re-run attention core */
    uint64_t backward;        /* one layer's backward working set */
    uint64_t head_keep, loss; /* last stage (head_bytes) */
    uint64_t emb_keep;        /* first stage, per micro-batch (embedding_keep) */
    uint64_t emb_grad;        /* first stage's embedding gradient */
    uint64_t fb;              /* forward/backward buffers */
    uint64_t fsdp_kept;       /* Megatron FSDP's double buffers, also at the optimizer step */
    uint64_t fixed, groups;   /* FIXED and the communicators behind it */
    uint64_t block;           /* torchtitan: one block's unsharded compute copy */
    uint64_t sac;             /* torchtitan op-selective: kept per block and micro-batch */
    uint64_t stranded;        /* last stage: cached blocks the loss cannot reuse */
};

/* A learned absolute position table, pos_rows·h, on the first stage and
 * replicated over t (Megatron-Core's LanguageModelEmbedding keeps a plain
 * nn.Embedding beside the vocabulary-parallel one). */
static uint64_t position_table(bool *ok, const struct m4d_ctx *x)
{
    return mul(ok, x->pos_rows, x->h);
}

/* Parameters of stage r: N (all), N_e (expert part), N_lin (transformer
 * linear weights, what fp8 caches). The embedding V_p·h/t sits on the first
 * stage; the final norm and the LM head on the last; a tied head is a
 * separate copy whenever p > 1 (Megatron keeps one on each end). */
struct stage_params {
    uint64_t all, expert, linear;
};

/* The first layer of stage r (no vpp). */
static uint64_t stage_first_layer(const struct m4d_ctx *x, uint64_t r)
{
    if (m4d_chunked(x))
        return m4d_vs_first_layer(x, r);
    return r == 0 ? 0 : stage_layers(x, 0) + (r - 1) * stage_layers(x, 1);
}

/* The first layer of chunk j of stage r with vpp: Megatron-Core gives each
 * of a stage's v chunks 1/v of its layers (uneven first/last stages
 * included, each divisible by v), and chunk j of every stage follows chunk
 * j of the stage before it: j·L/v + (the layers of stages < r)/v. Even
 * stages: (j·p + r)·L/(p·v). */
static uint64_t chunk_first_layer(const struct m4d_ctx *x, uint64_t r, uint64_t j)
{
    if (m4d_chunked(x))
        return m4d_vs_first_layer(x, j * x->p + r);
    return j * (x->L / x->v) + stage_first_layer(x, r) / x->v;
}

/* Layers of chunk j of stage r. */
static uint64_t chunk_layers(const struct m4d_ctx *x, uint64_t r, uint64_t j)
{
    return m4d_chunked(x) ? m4d_vs_layers(x, j * x->p + r) : stage_layers(x, r) / x->v;
}

/* L_e(r): expert layers of stage r; with vpp, of its v chunks of ℓ_r/v layers. */
static uint64_t stage_moe_layers(const struct m4d_ctx *x, uint64_t r)
{
    if (!x->experts)
        return 0;
    if (x->v <= 1)
        return m4d_moe_layers_in(x, stage_first_layer(x, r), stage_layers(x, r));
    uint64_t e = 0;
    for (uint64_t j = 0; j < x->v; j++)
        e += m4d_moe_layers_in(x, chunk_first_layer(x, r, j), chunk_layers(x, r, j));
    return e;
}

/* Expert layers of the heaviest chunk of stage r (the stage itself without vpp). */
static uint64_t chunk_moe_layers(const struct m4d_ctx *x, uint64_t r)
{
    if (x->v <= 1 || !x->experts)
        return stage_moe_layers(x, r);
    uint64_t e = 0;
    for (uint64_t j = 0; j < x->v; j++)
        e = max64(e, m4d_moe_layers_in(x, chunk_first_layer(x, r, j), chunk_layers(x, r, j)));
    return e;
}

/* Multi-token-prediction modules on the last stage: each a layer (an
 * expert layer with experts), the projection 2h·h split over t, three norms. */
static uint64_t mtp_share(bool *ok, const struct m4d_ctx *x, const struct shared *sh)
{
    const struct layer_share *s = x->experts ? &sh->share : &sh->dense;
    uint64_t each = add(ok, add(ok, add(ok, s->linear, s->expert), s->replicated),
                        m4d_ceil_div(2 * x->h * x->h, x->t) + 3 * (x->layernorm ? 2 : 1) * x->h);
    return mul(ok, each, x->mtp);
}

static struct stage_params stage_params(bool *ok, const struct m4d_ctx *x, const struct shared *sh, uint64_t r)
{
    const struct layer_share s = sh->share, d = sh->dense;
    uint64_t l = stage_layers(x, r), e = stage_moe_layers(x, r), emb = sh->emb;
    struct stage_params n;
    n.linear = add(ok, mul(ok, add(ok, s.linear, s.expert), e), mul(ok, d.linear, l - e));
    n.expert = mul(ok, s.expert, e);
    n.all = add(ok, n.linear, add(ok, mul(ok, s.replicated, e), mul(ok, d.replicated, l - e)));
    if (r == 0)
        n.all = add(ok, n.all, add(ok, emb, position_table(ok, x)));
    if (r == x->p - 1) {
        n.all = add(ok, add(ok, n.all, sh->mtp), (x->layernorm ? 2 : 1) * x->h);
        if (!x->tied || x->p > 1)
            n.all = add(ok, n.all, emb);
    }
    return n;
}

/* WEIGHTS of a stage before any sharding: every parameter in the training
 * dtype; with fp8 an fp8 copy and an fp8 transpose of every linear weight
 * beside it (2·N_lin), or with fp8 parameters (--fp8-param-gather) the
 * linear weights held in fp8 alone, one byte and one for the transpose:
 * P_bytes·(N − N_lin) + 2·N_lin. */
static uint64_t weight_bytes(bool *ok, const struct m4d_ctx *x, const struct stage_params *n)
{
    if (x->fp8 && x->fp8_params)
        return add(ok, mul(ok, n->all - n->linear, x->param_bytes), mul(ok, n->linear, 2));
    uint64_t w = mul(ok, n->all, x->param_bytes);
    return x->fp8 ? add(ok, w, mul(ok, n->linear, 2)) : w;
}

/* Optimizer bytes per parameter on the GPU, in millionths: the main
 * (master) copy, and Adam's two moments less the share Megatron's
 * HybridDeviceOptimizer keeps on the host (--optimizer-cpu-offload: the
 * CPU optimizer updates host copies; the GPU keeps the main parameters to
 * copy back). */
static uint64_t optimizer_bytes_ppm(bool *ok, const struct m4d_ctx *x)
{
    /* SGD (optimizer_moments 1): torch's and Apex's SGD keep one
     * momentum_buffer per parameter, none without momentum. */
    uint64_t M = 1000000, moments = x->opt_moments == 2 ? x->opt_bytes + x->opt_sq_bytes
                                    : x->opt_moments == 1 ? x->opt_bytes : 0;
    return add(ok, mul(ok, x->master_bytes, M), mul(ok, moments, M - x->opt_offload_ppm));
}

/* Megatron-LLaMA's OverlappedDistributedOptimizer (megatron/optimizer/
 * overlapped_dist_optimizer.py, alibaba/Megatron-LLaMA@25306de) replaces
 * the whole gradient buffer (DDP's contiguous buffer is turned off): each
 * gradient is copied into a reduce bucket from a pool as autograd makes it
 * and freed, and the bucket is reduce-scattered into this rank's receiving
 * shard, which is added to its gradient shard (ParameterBuffer's
 * _partitioned_grad and _partitioned_grad_receiving_buffer, main_grad_bytes
 * each). Buckets fill in the order gradients arrive, so the pool holds one:
 * --reduce-bucket-size elements (default 5e8; a bucket closes on the
 * parameter that reaches the size, up to one parameter more, not counted),
 * at most the stage's parameters. The parameters are flattened into one
 * buffer and their shard copied out (_partitioned_param, param_bytes)
 * beside the fp32 master shard. */
#define ODO_BUCKET_DEFAULT UINT64_C(500000000)

static void odo_state_terms(bool *ok, const struct m4d_ctx *x, const struct stage_params *n, uint64_t *t)
{
    uint64_t dc = x->d * x->c, bucket = min64(x->bucket ? x->bucket : ODO_BUCKET_DEFAULT, n->all);
    t[MEM4D_TERM_GRADIENTS] = add(ok, muldiv(ok, n->all, 2 * x->grad_bytes, dc), mul(ok, bucket, x->grad_bytes));
    t[MEM4D_TERM_WEIGHTS] = add(ok, t[MEM4D_TERM_WEIGHTS], muldiv(ok, n->all, x->param_bytes, dc));
}

/* WEIGHTS, GRADIENTS and OPTIMIZER of a stage. ZeRO-1 (Megatron's
 * distributed optimizer) shards master weights and moments over d·c
 * (experts over d·c/ep); ZeRO-2 adds the gradients, ZeRO-3 the weights.
 * With several distributed-optimizer instances each shards over its part of
 * the domain only (parallel_state.py: the intra-partial data-parallel
 * groups of d·c/instances ranks, and of the expert data-parallel size
 * /instances). Adam's two moments may differ in precision (the
 * precision-aware optimizer). */
static void megatron_state_terms(bool *ok, const struct m4d_ctx *x, const struct stage_params *n, uint64_t *t)
{
    uint64_t dc = x->d * x->c, edc = x->experts ? x->t * dc / (x->ep * x->etp) : dc;
    dc /= x->dopt_inst;
    edc /= x->dopt_inst;
    uint64_t per = optimizer_bytes_ppm(ok, x), M = 1000000;
    t[MEM4D_TERM_WEIGHTS] = weight_bytes(ok, x, n);
    t[MEM4D_TERM_GRADIENTS] = mul(ok, n->all, x->grad_bytes);
    t[MEM4D_TERM_OPTIMIZER] = muldiv(ok, n->all, per, M);
    if (x->zero >= 1)
        t[MEM4D_TERM_OPTIMIZER] = add(ok, muldiv(ok, n->all - n->expert, per, mul(ok, dc, M)),
                                      muldiv(ok, n->expert, per, mul(ok, edc, M)));
    if (x->zero >= 2)
        t[MEM4D_TERM_GRADIENTS] = muldiv(ok, t[MEM4D_TERM_GRADIENTS], 1, dc);
    if (x->zero >= 3)
        t[MEM4D_TERM_WEIGHTS] = muldiv(ok, t[MEM4D_TERM_WEIGHTS], 1, dc);
    if (x->odo)
        odo_state_terms(ok, x, n, t);
}

/* FSDP2's shard group: dp_shard x cp (torchtitan's dp_shard_cp mesh), dp
 * divided by the HSDP replicate degree. */
static uint64_t fsdp_shard(const struct m4d_ctx *x) { return x->d / x->dp_rep * x->c; }

/* Does torchtitan keep the stage's transformer blocks unsharded from their
 * forward to their backward? auto: only under pipeline parallelism
 * (apply_fsdp: reshard_after_forward = False with PP). */
static bool fsdp_keeps_blocks(const struct m4d_ctx *x)
{
    return x->reshard == 2 || (x->reshard == 0 && x->p > 1);
}

/* Bytes of one transformer block's unsharded compute copy: P_b per parameter,
 * 1 for the linear weights when FSDP all-gathers float8 (torchao
 * enable_fsdp_float8_all_gather). */
static uint64_t fsdp_block_bytes(bool *ok, const struct m4d_ctx *x, const struct layer_share *s)
{
    uint64_t lin = add(ok, s->linear, s->expert);
    return add(ok, mul(ok, lin, x->fp8_all_gather ? 1 : x->param_bytes), mul(ok, s->replicated, x->param_bytes));
}

/* torchtitan (FSDP2, MixedPrecisionPolicy(param_dtype = P_b, reduce_dtype =
 * G_b)): the sharded parameters are the fp32 master copy (M_b), their
 * gradients G_b and Adam's moments are sharded over dp_shard x cp. Held
 * unsharded besides: the root module (embedding, final norm, head: the root
 * never reshards after forward) in P_b; with reshard_after_forward off (the
 * default under PP) every block of the stage in P_b, plus - since the
 * pipeline schedule turns gradient sync off for all but the last
 * micro-batch - their unsharded gradients accumulated in reduce_dtype; with
 * resharding, the last block (not resharded: FSDP would prefetch it at once). */
static void fsdp_state_terms(bool *ok, const struct m4d_ctx *x, const struct shared *sh, uint64_t r,
                             const struct stage_params *n, uint64_t *t)
{
    uint64_t shard = fsdp_shard(x), blocks = mul(ok, sh->block, stage_layers(x, r));
    uint64_t root = n->all - add(ok, n->linear, mul(ok, sh->share.replicated, stage_layers(x, r)));
    t[MEM4D_TERM_WEIGHTS] = add(ok, muldiv(ok, n->all, x->master_bytes, shard), mul(ok, root, x->param_bytes));
    t[MEM4D_TERM_GRADIENTS] = muldiv(ok, n->all, x->grad_bytes, shard);
    t[MEM4D_TERM_OPTIMIZER] = muldiv(ok, n->all, 2 * x->opt_bytes, shard);
    if (fsdp_keeps_blocks(x)) {
        t[MEM4D_TERM_WEIGHTS] = add(ok, t[MEM4D_TERM_WEIGHTS], blocks);
        if (x->p > 1 && x->m != 1)
            t[MEM4D_TERM_GRADIENTS] = add(ok, t[MEM4D_TERM_GRADIENTS], mul(ok, n->all, x->grad_bytes));
    } else if (x->reshard == 0 && r == x->p - 1 && stage_layers(x, r) > 0) {
        t[MEM4D_TERM_WEIGHTS] = add(ok, t[MEM4D_TERM_WEIGHTS], sh->block);
    }
}

/* nanotron (parallel/parameters + optim/gradient_accumulator.py,
 * FP32GradientAccumulator): bf16 parameters; with fp32 gradient
 * accumulation (G_b = 4) a contiguous fp32 gradient buffer over every
 * parameter ("independently of ZeRO sharding") and the fp32 master copy of
 * the parameters this rank updates (its ZeRO-1 shard over dp); Adam's
 * moments over the same shard. Without fp32 accumulation the bf16 gradients
 * are the main gradients. The bf16 .grad of every parameter exists until
 * backward ends (_accumulate_grad then frees it): nanotron_grads_moment().
 * With dp > 1 the trainer wraps the model in torch's DistributedDataParallel
 * unless fp32 accumulation and ZeRO-1 are both on (trainer.py@c2528430,
 * make_ddp); DDP's Reducer allocates one flat bucket tensor in the
 * parameters' dtype over every parameter at construction and keeps it
 * (gradient_as_bucket_view is left off), 2 bytes a parameter more. */
static void nanotron_state_terms(bool *ok, const struct m4d_ctx *x, const struct stage_params *n, uint64_t *t)
{
    bool acc = x->grad_bytes == 4, ddp = x->d * x->c > 1 && !(acc && x->zero >= 1);
    uint64_t shard = x->zero >= 1 ? x->d * x->c : 1;
    t[MEM4D_TERM_WEIGHTS] = add(ok, mul(ok, n->all, x->param_bytes),
                                acc ? muldiv(ok, n->all, x->master_bytes, shard) : 0);
    t[MEM4D_TERM_GRADIENTS] = mul(ok, n->all, (acc ? 4 : x->param_bytes) + (ddp ? x->param_bytes : 0));
    t[MEM4D_TERM_OPTIMIZER] = muldiv(ok, n->all, 2 * x->opt_bytes + (acc ? 0 : x->master_bytes), shard);
}

/* DeepSpeed ZeRO (stage_1_and_2.py, stage3.py) in bf16: the fp32 master
 * partition and Adam's moments sharded over dp (on the CPU with offload);
 * stages 0-1 keep every bf16 gradient; stage 2 keeps the gradient partition
 * (contiguous_gradients: the grads_in_partition buffer); stage 3 also shards
 * the bf16 parameters (on the CPU with offload of parameters). */
static void deepspeed_state_terms(bool *ok, const struct m4d_ctx *x, const struct stage_params *n, uint64_t *t)
{
    uint64_t dc = x->d * x->c, z = x->zero;
    t[MEM4D_TERM_WEIGHTS] = z >= 3 ? (x->offload == 2 ? 0 : muldiv(ok, n->all, x->param_bytes, dc))
                                   : mul(ok, n->all, x->param_bytes);
    t[MEM4D_TERM_GRADIENTS] = z >= 2 ? muldiv(ok, n->all, x->param_bytes, dc) : mul(ok, n->all, x->param_bytes);
    t[MEM4D_TERM_OPTIMIZER] = x->offload ? 0 : muldiv(ok, n->all, x->master_bytes + 2 * x->opt_bytes, z >= 1 ? dc : 1);
}

/* WEIGHTS, GRADIENTS and OPTIMIZER of stage r, by framework. */
static void state_terms(bool *ok, const struct m4d_ctx *x, const struct shared *sh, uint64_t r,
                        const struct stage_params *n, uint64_t *t)
{
    switch (x->fw) {
    case MEM4D_FRAMEWORK_TORCHTITAN: fsdp_state_terms(ok, x, sh, r, n, t); return;
    case MEM4D_FRAMEWORK_NANOTRON: nanotron_state_terms(ok, x, n, t); return;
    case MEM4D_FRAMEWORK_DEEPSPEED: deepspeed_state_terms(ok, x, n, t); return;
    case MEM4D_FRAMEWORK_MEGATRON: break;
    }
    megatron_state_terms(ok, x, n, t);
}

/* Does selective recompute re-run this module (a M4D_RC_* bit)? */
static bool reruns(const struct m4d_ctx *x, uint64_t module)
{
    return x->recompute == 1 && (x->rc_modules & module);
}

/* The attention core's own tensors per token, before the split by t:
 * FlashAttention's fp32 log-sum-exp 4a; without it the softmax output
 * 2a·s/c, with attention dropout also its one-byte mask and the 2-byte
 * dropped probabilities the context matmul saves, 5a·s/c (Korthikanti et
 * al. 2022, §4.1). Fused attention regenerates its dropout mask. */
static uint64_t attention_core_bytes(bool *ok, const struct m4d_ctx *x)
{
    if (x->flash)
        return 4 * x->a;
    return mul(ok, (x->attn_dropout ? 5 : 2) * x->a, x->s / x->c);
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
 *   (MoE: + router logits and probabilities in fp32, + permuted tokens in and out);
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

/* The flex dispatcher's group: ep·etp ranks (Megatron-Core's tp_ep group
 * with the expert tensor-parallel size). */
static uint64_t ep_group(const struct m4d_ctx *x) { return x->ep * x->etp; }

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
    uint64_t b = 0, N = ep_group(x);
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

static void layer_token_bytes(bool *ok, const struct m4d_ctx *x, uint64_t *repl, uint64_t *split)
{
    uint64_t inter = mlp_saved(x), mlp;
    *repl = 4 * x->norms * x->h; /* each norm keeps its input and hands on its output */
    if (x->hidden_dropout)
        *repl = add(ok, *repl, 2 * x->h);
    if (x->experts) {
        mlp = add(ok, routed(ok, x, mul(ok, inter, x->fe)), inter * x->fs);
        *repl = add(ok, *repl, add(ok, mul(ok, 2 * x->router_bytes, x->experts), routed(ok, x, 4 * x->h)));
        *repl = add(ok, *repl, dispatch_kept(ok, x));
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

/* What selective recomputation of other modules than the attention core
 * drops from a layer's kept bytes per token (Megatron-Core's
 * --recompute-modules; each re-run module keeps only its input, which
 * another kept tensor already holds): layernorm the two norms' outputs 4h;
 * mlp a dense MLP's intermediates 2·(3 or 2)·f; moe_act the expert
 * activation's output 2·topk·fe; shared_experts the shared expert's
 * intermediates; moe every expert tensor (router, permuted tokens,
 * intermediates); mla_up_proj the up-projected Q, K and V. Returned in the
 * two halves of layer_token_bytes(). */
static void selective_savings(bool *ok, const struct m4d_ctx *x, uint64_t *repl, uint64_t *split)
{
    uint64_t inter = x->gated ? 3 : 2, m = x->recompute == 1 ? x->rc_modules : 0;
    *repl = m & M4D_RC_LAYERNORM ? 4 * x->h : 0;
    *split = 0;
    if (!x->experts && (m & M4D_RC_MLP))
        *split = add(ok, *split, mul(ok, 2 * inter, x->f));
    if (x->experts && (m & M4D_RC_MOE)) {
        *repl = add(ok, *repl, add(ok, mul(ok, 2 * x->router_bytes, x->experts), routed(ok, x, 4 * x->h)));
        *repl = add(ok, *repl, dispatch_kept(ok, x)); /* the re-run dispatch makes its handle again */
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
 * output projection is an extra a·d_v byte per token. What selective
 * recompute already dropped is not counted. */
static void fp8_savings(bool *ok, const struct m4d_ctx *x, uint64_t *repl, uint64_t *split, uint64_t *extra)
{
    uint64_t m = x->recompute == 1 ? x->rc_modules : 0;
    *repl = *split = *extra = 0;
    if (!x->fp8)
        return;
    *repl = m & M4D_RC_LAYERNORM ? 0 : 2 * x->h;
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
            *repl = add(ok, *repl, routed(ok, x, x->h));
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
 * the attention output (split); expert_fc1 the permuted tokens (2h per
 * routed token, h with fp8) and moe_act the activation's input (2·fe per
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
    if (x->experts && (om & M4D_OFFLOAD_EXPERT_FC1))
        *repl = add(ok, *repl, routed(ok, x, keeps_bf16_expert_input(x) || !x->fp8 ? h2 : x->h));
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

/* A_layer: one layer, one micro-batch, no full recompute, less what
 * fine-grained offloading sends to the host. With multi-latent attention
 * also the compressed query and key/value latents and their normalised
 * copies, 2·(2·r_q + 2·r_kv + d_rope) bytes per token: the down-projections
 * are replicated over t and see every token. */
static uint64_t layer_activation(bool *ok, const struct m4d_ctx *x)
{
    uint64_t repl, split, drop_repl, drop_split, fp8_repl, fp8_split, fp8_extra, T = tokens(ok, x);
    layer_token_bytes(ok, x, &repl, &split);
    selective_savings(ok, x, &drop_repl, &drop_split);
    fp8_savings(ok, x, &fp8_repl, &fp8_split, &fp8_extra);
    split = add(ok, split, fp8_extra);
    drop_repl = add(ok, drop_repl, fp8_repl);
    drop_split = add(ok, drop_split, fp8_split);
    repl = repl > drop_repl ? repl - drop_repl : 0;
    split = split > drop_split ? split - drop_split : 0;
    uint64_t a = add(ok, muldiv(ok, T, repl, t_sp(x)), muldiv(ok, T, split, x->t));
    uint64_t off = offloaded_layer(ok, x);
    a = a > off ? a - off : 0;
    if (x->kv_lora)
        a = add(ok, a, mul(ok, T, 2 * (2 * x->q_lora + 2 * x->kv_lora + x->rope_dim)));
    return add(ok, a, mul(ok, T, gathered_inputs(x)));
}

uint64_t m4d_layer_activation_bytes(const struct m4d_ctx *x)
{
    bool ok = true;
    uint64_t a = layer_activation(&ok, x);
    return ok ? a : 0;
}

/* Bytes of a residual-stream element between layers and stages: 4 with
 * --fp32-residual-connection (the embedding's output, each layer's
 * residual and bias-dropout-add in fp32; the pipeline sends fp32). */
static uint64_t residual_bytes(const struct m4d_ctx *x) { return x->fp32_residual ? 4 : 2; }

/* C: a full-recompute checkpoint keeps only the layer input, 2·T·h/t_sp (4 with fp32 residuals);
 * --distribute-saved-activations splits it over t when sequence
 * parallelism does not already. */
static uint64_t checkpoint_bytes(bool *ok, const struct m4d_ctx *x)
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
static uint64_t op_sac_layer_keep(bool *ok, const struct m4d_ctx *x)
{
    uint64_t T = tokens(ok, x), f = x->experts ? routed(ok, x, x->fe) : x->f;
    uint64_t split = add(ok, mul(ok, 2 * (2 * x->a + x->k), x->dh), add(ok, 4 * x->a, mul(ok, 2, f)));
    uint64_t repl = 2 * x->h + (x->t > 1 ? 4 * x->h : 0);
    uint64_t keep = add(ok, muldiv(ok, T, repl, t_sp(x)), muldiv(ok, T, split, x->t));
    return x->gated ? add(ok, keep, mul(ok, T, 2 * x->h)) : keep;
}

/* l layers' A_layer, e of them expert layers: e·A_e + (l − e)·A_dense. */
static uint64_t mixed_layers(bool *ok, const struct shared *sh, uint64_t l, uint64_t e)
{
    return add(ok, mul(ok, sh->A, e), mul(ok, sh->A_dense, l - e));
}

/* What one micro-batch keeps over `l` consecutive layers, e of them expert
 * layers (a model mixing dense and expert layers; with block recompute the
 * expert layers are taken to be among the kept ones, an upper bound), and the extra
 * live set while one of its recomputed groups runs its backward.
 * selective: l·A_layer kept, one layer's re-run attention core live;
 * uniform, N per group: ⌈l/N⌉·C kept, N·A_layer live;
 * block, first N recomputed: N·C + (l−N)·A_layer kept, one A_layer live.
 * N = 0 means all l layers. */
static void micro_batch_keep(bool *ok, const struct m4d_ctx *x, const struct shared *sh, uint64_t l,
                             uint64_t e, uint64_t *keep, uint64_t *live)
{
    uint64_t C = sh->C, Amax = e ? max64(sh->A, sh->A_dense) : sh->A_dense;
    *live = 0;
    /* CPU offloading of the first N layers (Transformer Engine's default
     * schedule, docs/features/other_optimizations/cpu_offloading: "at most
     * model_layers - num_layers sets of activations are on GPU at any
     * time"); offloaded expert layers are taken to be dense ones, an upper
     * bound. Megatron allows it on one stage without recomputation only. */
    if (x->act_offload && l > x->act_offload) {
        l -= x->act_offload;
        e = min64(e, l);
    }
    if (x->recompute == 3 && l > 0) { /* op-selective: the block re-run in backward completes A */
        *keep = mul(ok, sh->sac, l);
        *live = Amax > sh->sac ? Amax - sh->sac : 0;
        return;
    }
    if (x->recompute == 2 && x->fw == MEM4D_FRAMEWORK_TORCHTITAN && l > 0) {
        /* every block checkpointed on its own, or only every N-th (layer-selective) */
        uint64_t ck = x->rc_every > 1 ? l / x->rc_every : l;
        *keep = add(ok, mul(ok, C, ck), mul(ok, Amax, l - ck));
        *live = Amax;
        return;
    }
    if (x->recompute != 2 || l == 0) {
        *keep = mixed_layers(ok, sh, l, e);
        if (x->recompute == 1 && l > 0)
            *live = sh->core_live;
        return;
    }
    uint64_t N = x->rc_layers ? min64(x->rc_layers, l) : l;
    if (x->rc_method == 0) {
        *keep = mul(ok, C, m4d_ceil_div(l, N));
        *live = mul(ok, Amax, N);
    } else {
        *keep = add(ok, mul(ok, C, N), mixed_layers(ok, sh, l - N, min64(e, l - N)));
        *live = Amax;
    }
}

/* Micro-batches live on stage r at its peak. 1F1B: min(p − r, m).
 * Interleaved (v chunks of ℓ_r/v layers): Megatron's warm-up
 * 2(p−r−1) + (v−1)·p chunk-micro-batches plus the one of the first
 * steady-state step, capped at m·v. m = 0 (unknown) is taken as large. */
static void in_flight(const struct m4d_ctx *x, uint64_t r, uint64_t *units, uint64_t *layers_each)
{
    if (x->v > 1) {
        uint64_t n = 2 * (x->p - r - 1) + (x->v - 1) * x->p + 1;
        if (x->m > 0 && n > x->m * x->v)
            n = x->m * x->v;
        *units = n;
        *layers_each = stage_layers(x, r) / x->v;
        return;
    }
    uint64_t n = x->p - r;
    if (x->afab && x->m > n) /* all forward, all backward: every micro-batch */
        n = x->m;
    if (x->m > 0 && x->m < n)
        n = x->m;
    *units = n;
    *layers_each = stage_layers(x, r);
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
 * with fine-grained offloading two layers' offloaded inputs, and with
 * delayed weight gradients what Transformer Engine queues (above). */
static uint64_t backward_working_set(bool *ok, const struct m4d_ctx *x)
{
    uint64_t inter = x->gated ? 3 : 2, T = tokens(ok, x);
    uint64_t mlp = x->experts ? add(ok, routed(ok, x, mul(ok, inter, x->fe)), inter * x->fs) : mul(ok, inter, x->f);
    uint64_t attn = x->flash ? mul(ok, 4 * x->a, x->qk_dim) : mul(ok, (x->attn_dropout ? 4 : 2) * x->a, x->s / x->c);
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
 * - a compiled loss (compile = blocks_and_loss; torchtitan's
 *   components/loss.py wraps cross_entropy_loss in torch.compile): Inductor
 *   computes the upcast, log-softmax and loss in fused kernels and its
 *   partitioner saves the bf16 logits rather than an fp32 tensor; backward
 *   writes the bf16 gradient directly: 2 + 2. */
static void loss_blocks(const struct m4d_ctx *x, uint64_t *n2, uint64_t *n4, uint64_t *stranded)
{
    if (x->fw == MEM4D_FRAMEWORK_NANOTRON) {
        *n2 = 1, *n4 = 2;
    } else if (x->compile == 2) {
        *n2 = 2, *n4 = 0;
    } else if (x->fw == MEM4D_FRAMEWORK_TORCHTITAN && x->t > 1) {
        *n2 = 0, *n4 = 4, *stranded = 1;
    } else if (x->fw != MEM4D_FRAMEWORK_MEGATRON) { /* PyTorch's cross_entropy on one rank */
        *n2 = 0, *n4 = 3, *stranded = 1;
    }
}

/* Last stage, one micro-batch: the final norm's input and the head's input
 * (4h/t_sp bytes per token), and around the loss the bf16 logits with their
 * fp32 copy (Megatron's vocab_parallel_cross_entropy works in place on the
 * copy and keeps it as the softmax) or, in backward, that fp32 gradient and
 * its bf16 cast: 6·T·V_p/t. Megatron-Core's fused cross entropy as compiled
 * whole by torch.compile (through 0.14) mutates the fp32 copy inside a graph
 * that also reduces over it, so Inductor builds the new value in a fresh
 * fp32 buffer and copies it back: 10·T·V_p/t. */
static void head_bytes(bool *ok, const struct m4d_ctx *x, uint64_t *keep, uint64_t *loss, uint64_t *stranded)
{
    uint64_t T = tokens(ok, x), E = muldiv(ok, T, x->Vp, x->t), n2 = 1, n4 = x->ce_fusion ? 2 : 1, ns = 0;
    *keep = muldiv(ok, T, 4 * x->h, t_sp(x));
    if (gathered_inputs(x)) /* the head's input is saved gathered (gathered_inputs) */
        *keep = add(ok, muldiv(ok, T, 2 * x->h, t_sp(x)), mul(ok, T, 2 * x->h));
    loss_blocks(x, &n2, &n4, &ns);
    *loss = muldiv(ok, mul(ok, T, 2 * n2 + 4 * n4), x->Vp, x->t);
    /* reserved beyond allocated: the stranded blocks' segments, and each live
     * block's segment rounding (m4d_alloc_size) */
    uint64_t e2 = mul(ok, E, 2), e4 = mul(ok, E, 4);
    uint64_t round = add(ok, mul(ok, n2, m4d_alloc_size(e2) - e2), mul(ok, n4, m4d_alloc_size(e4) - e4));
    *stranded = x->expandable ? round : add(ok, round, mul(ok, ns, m4d_alloc_size(e2)));
}

/* First stage, one micro-batch: the int64 token ids 8·T and, with hidden
 * dropout, the embedding dropout's one-byte mask h·T/t_sp (Megatron-Core's
 * LanguageModelEmbedding scatters to the sequence-parallel region first). */
static uint64_t embedding_keep(bool *ok, const struct m4d_ctx *x)
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
static void pp_kept_outputs(bool *ok, const struct m4d_ctx *x, uint64_t *at_loss, uint64_t *at_merge)
{
    *at_loss = *at_merge = 0;
    deferred_embedding_wgrad(ok, x, at_loss, at_merge);
    if (!x->pp_outputs || x->p < 2)
        return;
    uint64_t m = x->m ? x->m : x->p, E2 = muldiv(ok, mul(ok, tokens(ok, x), 2), x->Vp, x->t);
    *at_loss = add(ok, *at_loss, mul(ok, E2, m - 1));
    *at_merge = add(ok, *at_merge, mul(ok, mul(ok, E2, m), 2));
}

/* torch.distributed.pipelining's receive buffers (PipelineStage
 * _prepare_forward_infra and _create_grad_recv_info): one activation buffer
 * per micro-batch and chunk that receives from a previous stage, one
 * gradient buffer per micro-batch and chunk that sends to a next stage,
 * each a stage boundary's hidden state T·2h/t_sp (torchtitan's blocks pass
 * the sequence-parallel shard), allocated once and kept. The activation
 * buffers of the micro-batches in flight are the first block's saved input,
 * already counted with the activations. */
static uint64_t pp_recv_buffers(bool *ok, const struct m4d_ctx *x, uint64_t r)
{
    if (x->fw != MEM4D_FRAMEWORK_TORCHTITAN || x->p < 2)
        return 0;
    uint64_t m = x->m ? x->m : x->p, v = x->v ? x->v : 1, units, each;
    uint64_t fwd = mul(ok, m, v - (r == 0)), grad = mul(ok, m, v - (r == x->p - 1));
    in_flight(x, r, &units, &each);
    fwd = fwd > units ? fwd - units : 0;
    return muldiv(ok, mul(ok, add(ok, fwd, grad), tokens(ok, x)), 2 * x->h, t_sp(x));
}

/* Activations of stage r at two moments. At the forward/backward peak
 * (*peak): the in-flight micro-batches' kept tensors, the first stage's
 * token ids (int64), and the larger of two transients: the loss on the last
 * stage, or one layer's backward with its recomputed group. When the first
 * stage's embedding gradient is formed (*at_embedding_grad), one in-flight
 * micro-batch has just been freed. */
static void stage_activations(bool *ok, const struct m4d_ctx *x, const struct shared *sh, uint64_t r,
                              uint64_t *reported_in_flight, uint64_t *peak, uint64_t *at_embedding_grad,
                              uint64_t *stranded)
{
    uint64_t units, each, keep, live, act, mtp_units;
    in_flight(x, r, &units, &each);
    *reported_in_flight = x->v > 1 ? m4d_ceil_div(units, x->v) : units;
    mtp_units = units;
    if (m4d_chunked(x) && x->v > 1) {
        /* Chunks of unequal length: Megatron's interleaved schedule runs its
         * forwards in groups of p micro-batches per chunk, chunk 0 to v-1 and
         * round again (get_model_chunk_id), so of the `units` in flight
         * q·p + min(p, rest − j·p) are chunk j's; each keeps its own layers. */
        uint64_t pv = x->p * x->v, q = units / pv, rest = units % pv, first_keep = 0;
        act = live = 0;
        for (uint64_t j = 0; j < x->v; j++) {
            uint64_t nj = q * x->p + (rest > j * x->p ? min64(x->p, rest - j * x->p) : 0), kj, lj;
            uint64_t l = chunk_layers(x, r, j);
            micro_batch_keep(ok, x, sh, l, m4d_moe_layers_in(x, chunk_first_layer(x, r, j), l), &kj, &lj);
            act = add(ok, act, mul(ok, kj, nj));
            if (nj)
                live = max64(live, lj);
            if (j == 0)
                first_keep = kj;
            if (j == x->v - 1)
                mtp_units = nj;
        }
        *at_embedding_grad = act > first_keep ? act - first_keep : 0;
    } else {
        micro_batch_keep(ok, x, sh, each, chunk_moe_layers(x, r), &keep, &live);
        act = mul(ok, keep, units);
        *at_embedding_grad = mul(ok, keep, units - 1);
    }
    if (r == 0)
        act = add(ok, act, mul(ok, sh->emb_keep, *reported_in_flight));
    /* fp32 residuals: the schedule keeps each received input (fp32), besides
     * the bf16 copy the first norm saves; rank 0's first chunk receives none */
    if (x->fp32_residual && x->p > 1) {
        uint64_t received = r > 0 ? units : units - m4d_ceil_div(units, x->v);
        act = add(ok, act, mul(ok, received, muldiv(ok, tokens(ok, x), 4 * x->h, t_sp(x))));
    }
    uint64_t transient = add(ok, sh->backward, live);
    /* EP overlap: one micro-batch's forward runs layer by layer beside
     * another's backward (model_chunk_schedule_plan.py): at worst a whole
     * forward layer is allocated before the backward frees its attention */
    if (x->ep_overlap)
        transient = add(ok, transient, sh->A);
    *stranded = 0;
    if (r == x->p - 1) {
        uint64_t kept, merge;
        pp_kept_outputs(ok, x, &kept, &merge);
        act = add(ok, act,
                  add(ok, sh->head_keep, mul(ok, mul(ok, x->experts ? sh->A : sh->A_dense, x->mtp), mtp_units)));
        act = add(ok, act, kept);
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

/* The embedding's weight gradient is formed densely in the parameter dtype,
 * P_bytes·V_p·h/t, before Megatron's gradient hook adds it to the main
 * gradient (the LM head's is fused into the main gradient instead). */
static uint64_t embedding_grad_bytes(bool *ok, const struct m4d_ctx *x)
{
    return muldiv(ok, mul(ok, x->Vp, x->h), x->param_bytes, x->t);
}

/* Megatron's default bucket: max(40M, 1M·dp) elements (ddp_bucket_size). */
static uint64_t bucket_elements(bool *ok, const struct m4d_ctx *x)
{
    return x->bucket ? x->bucket : max64(40000000, mul(ok, 1000000, x->d * x->c));
}

/* torchtitan's FSDP2 buffers during forward/backward, when blocks reshard:
 * the block being computed and the one prefetched (unsharded compute
 * copies, fsdp_block_bytes), and in backward the reduce-scatter input of
 * one block in reduce_dtype (foreach_reduce copies the unsharded gradients
 * into one flat G_b buffer). */
static uint64_t fsdp_buffers(bool *ok, const struct m4d_ctx *x, const struct layer_share *s)
{
    if (fsdp_keeps_blocks(x) || fsdp_shard(x) == 1)
        return 0;
    uint64_t params = add(ok, add(ok, s->linear, s->expert), s->replicated);
    return add(ok, mul(ok, 2, fsdp_block_bytes(ok, x, s)), mul(ok, params, x->grad_bytes));
}

/* DeepSpeed's defaults (deepspeed/runtime/zero/config.py): reduce and
 * all-gather buckets 5·10^8 elements, stage-3 prefetch bucket 5·10^7 and
 * at most 10^9 live parameters. */
#define DS_BUCKET_DEFAULT UINT64_C(500000000)
#define DS_PREFETCH_DEFAULT UINT64_C(50000000)
#define DS_MAX_LIVE_DEFAULT UINT64_C(1000000000)

/* DeepSpeed during forward/backward: the gradient reduction bucket
 * (reduce_bucket_size elements of P_b; with contiguous_gradients the ipg
 * buffer, two of them with overlap_comm = overlap_grad_reduce), and with
 * ZeRO-3 the gathered parameters: the layer being computed plus the
 * prefetch bucket, at most stage3_max_live_parameters. */
static uint64_t deepspeed_buffers(bool *ok, const struct m4d_ctx *x, const struct layer_share *s)
{
    uint64_t b = 0, bucket = x->bucket ? x->bucket : DS_BUCKET_DEFAULT;
    if (x->zero >= 1)
        b = mul(ok, mul(ok, bucket, x->param_bytes), x->contiguous_grads && x->overlap_grad ? 2 : 1);
    if (x->zero >= 3) {
        uint64_t layer = add(ok, add(ok, s->linear, s->expert), s->replicated);
        uint64_t live = add(ok, layer, x->prefetch ? x->prefetch : DS_PREFETCH_DEFAULT);
        live = min64(live, x->max_live ? x->max_live : DS_MAX_LIVE_DEFAULT);
        b = add(ok, b, mul(ok, max64(live, layer), x->param_bytes));
    }
    return b;
}

/* Megatron FSDP's communication buffers during forward/backward: the
 * reduce-scatter bucket (ZeRO-2/3, two with overlap) and one layer's
 * gathered weights (ZeRO-3, two when prefetching). With its double
 * buffers (FixedPoolAllocator, fsdp_double_buffer: two of each, allocated
 * once) they stay allocated through the optimizer step too. */
static uint64_t megatron_fsdp_buffers(bool *ok, const struct m4d_ctx *x, const struct layer_share *s)
{
    uint64_t b = 0;
    if (x->fw != MEM4D_FRAMEWORK_MEGATRON)
        return 0;
    if (x->zero >= 2)
        b = add(ok, b, mul(ok, mul(ok, bucket_elements(ok, x), x->grad_bytes), x->overlap_grad || x->fsdp_double ? 2 : 1));
    if (x->zero >= 3) {
        uint64_t layer = add(ok, add(ok, s->linear, s->expert), s->replicated);
        b = add(ok, b, mul(ok, mul(ok, layer, x->param_bytes), x->overlap_param || x->fsdp_double ? 2 : 1));
    }
    return b;
}

/* BUFFERS during forward/backward: kernel workspaces; the sequence-parallel
 * all-gather of a full-sequence activation 2·T·h; pipeline receive buffers
 * for an activation and a gradient 2·(2·T·h/t_sp) (4 bytes an element with
 * fp32 residuals); Megatron-Core's allgather token dispatcher
 * (MoEAllGatherTokenDispatcher) gathering the hidden states, fp32 router
 * probabilities and routing map of the N = ep·etp ranks' tokens, and at
 * the combine the unpermuted output with its fp32 copy for the
 * reduce-scatter: N·T/t_sp tokens of 6h + 5E bytes; with context
 * parallelism the ring's send and receive K/V blocks 2·(2·T·k·(d_qk + d_v)/t); with ZeRO-2/3 the
 * reduce-scatter bucket (two with overlap) and, with ZeRO-3, one layer's
 * gathered weights (two when prefetching). Megatron's own buckets are views
 * of the persistent grad/param buffers (counted in GRADIENTS/WEIGHTS). */
static uint64_t fwd_bwd_buffers(bool *ok, const struct m4d_ctx *x, const mem4d_device *dev,
                                const struct layer_share *s)
{
    uint64_t T = tokens(ok, x), b = dev->v[MEM4D_DEVICE_WORKSPACE_BYTES];
    if (x->sp && x->t > 1)
        b = add(ok, b, mul(ok, T, 2 * x->h));
    if (x->p > 1)
        b = add(ok, b, mul(ok, 2, muldiv(ok, T, residual_bytes(x) * x->h, t_sp(x))));
    if (x->experts && x->dispatcher == MEM4D_MOE_DISPATCHER_ALLGATHER && ep_group(x) > 1)
        b = add(ok, b, mul(ok, muldiv(ok, T, ep_group(x), t_sp(x)), add(ok, 6 * x->h, 5 * x->experts)));
    if (x->c > 1)
        b = add(ok, b, mul(ok, 2, muldiv(ok, T, mul(ok, 2 * x->kv_heads, x->qk_dim + x->v_dim), x->t)));
    switch (x->fw) {
    case MEM4D_FRAMEWORK_TORCHTITAN: return add(ok, b, fsdp_buffers(ok, x, s));
    case MEM4D_FRAMEWORK_DEEPSPEED: return add(ok, b, deepspeed_buffers(ok, x, s));
    case MEM4D_FRAMEWORK_NANOTRON: return b;
    case MEM4D_FRAMEWORK_MEGATRON: break;
    }
    return add(ok, b, megatron_fsdp_buffers(ok, x, s));
}

/* BUFFERS at the optimizer step (no activation live): workspaces, and with
 * gradients below fp32 the fp32 copy the optimizer makes of its gradient
 * shard (shard_main_param.grad = shard_model_grad.float()); the
 * precision-aware optimizer hands the gradient over as it is
 * (decoupled_grad). nanotron's moment is the end of backward, with every
 * bf16 gradient before the accumulator frees them; DeepSpeed's below. */
static uint64_t step_buffers(bool *ok, const struct m4d_ctx *x, const mem4d_device *dev,
                             const struct stage_params *n)
{
    uint64_t b = dev->v[MEM4D_DEVICE_WORKSPACE_BYTES];
    if (x->fw == MEM4D_FRAMEWORK_DEEPSPEED) {
        /* ZeRO-1/2: the fp32 copy of the gradient partition
         * (single_grad_partition) and the all-gather bucket of updated
         * parameters; nothing on the GPU when the optimizer is offloaded. */
        if (x->zero >= 3 || x->offload)
            return b;
        uint64_t ag = x->ag_bucket ? x->ag_bucket : DS_BUCKET_DEFAULT;
        b = add(ok, b, muldiv(ok, n->all, 4, x->zero >= 1 ? x->d * x->c : 1));
        return add(ok, b, mul(ok, min64(ag, n->all), x->param_bytes));
    }
    if (x->fw == MEM4D_FRAMEWORK_NANOTRON && x->grad_bytes == 4) /* end of backward: every bf16 .grad */
        return add(ok, b, mul(ok, n->all, x->param_bytes));
    if (x->fw != MEM4D_FRAMEWORK_MEGATRON)
        return b;
    if (x->grad_bytes < 4 && x->master_bytes == 4 && !x->precision_aware)
        b = add(ok, b, x->zero >= 1 ? muldiv(ok, n->all, 4, x->d * x->c / x->dopt_inst) : mul(ok, n->all, 4));
    return b;
}

/* NCCL communicators a rank creates and uses (size > 1): the default world
 * group; tensor, context and pipeline groups; data-parallel (loss
 * averaging) and data×context (gradients, distributed optimizer); the
 * model-parallel group (grad-norm and inf checks); the embedding group of a
 * tied head split over stages; expert and expert-data-parallel groups;
 * with several distributed-optimizer instances the intra- and
 * inter-instance parts of the data×context and expert-data groups; with
 * --create-all-gather-group a second data×context (and expert-data) group
 * for the all-gathers. */
static uint64_t process_groups(const struct m4d_ctx *x)
{
    uint64_t dc = x->d * x->c, n = 0;
    if (x->dopt_inst > 1)
        n += x->experts ? 4 : 2;
    n += x->world > 1;
    n += x->t > 1;
    n += x->c > 1;
    n += x->p > 1;
    n += x->d > 1;
    n += x->c > 1 && dc > 1;
    n += x->t * x->p > 1;
    n += x->p > 1 && x->tied;
    if (x->experts) {
        n += x->ep > 1;
        n += dc / x->ep > 1;
    }
    if (x->ag_groups && x->fw == MEM4D_FRAMEWORK_MEGATRON) /* parallel_state.create_all_gather_groups */
        n += (dc > 1) + (x->experts && x->ep > 1 && dc / x->ep > 1);
    return n;
}

/* Megatron's --tp-comm-overlap: Transformer Engine's initialize_ub
 * (transformer_engine/pytorch/module/base.py), called by Megatron's
 * _initialize_tp_communicators with shape (s·b/c, h), registers one
 * userbuffer per overlapped GEMM outside PyTorch's allocator, at start-up:
 * four ring-exchange all-gathers (qkv_fprop, fc1_fprop, proj_dgrad,
 * fc2_dgrad; CommOverlapP2P, t chunks of T·h/t = T·h elements), two
 * pipelined reduce-scatters (proj_fprop, fc2_fprop) and four bulk overlaps
 * (qkv/fc1 dgrad all-gathers, qkv/fc1 wgrad reduce-scatters), each T·h
 * elements (CommOverlapBase). The six all-gather buffers are fp8 (1 byte)
 * with fp8 training (fp8_buf), the rest bf16: 20·T·h bytes, 14·T·h with fp8.
 * Megatron refuses it without sequence parallelism, so t > 1. */
static uint64_t userbuffers(bool *ok, const struct m4d_ctx *x)
{
    if (x->fw != MEM4D_FRAMEWORK_MEGATRON || !x->tp_overlap || x->t < 2)
        return 0;
    return mul(ok, tokens(ok, x), mul(ok, x->h, x->fp8 ? 6 * 1 + 4 * 2 : 10 * 2));
}

/* DeepEP's receive sizes per group (deep_ep/buffer.py get_dispatch_config
 * and get_combine_config, v1.2.1 / hybrid-ep, the DeepEP Megatron-Core
 * d98e8a64 imports): the NVLink receive tokens of a channel, and the RDMA
 * receive tokens rounded up to a multiple of the send tokens (Config's
 * constructor), the larger of dispatch and combine. */
static void deepep_config(uint64_t N, uint64_t *nvl_recv, uint64_t *rdma_recv)
{
    static const uint64_t tab[][3] = {{2, 256, 0},    {4, 256, 0},    {8, 256, 0},    {16, 288, 140},
                                      {24, 288, 128}, {32, 288, 128}, {64, 288, 140}, {128, 560, 132},
                                      {144, 720, 132}, {160, 720, 132}};
    *nvl_recv = *rdma_recv = 0;
    for (size_t i = 0; i < sizeof tab / sizeof *tab; i++)
        if (tab[i][0] == N) {
            *nvl_recv = tab[i][1];
            *rdma_recv = tab[i][2];
        }
}

#define DEEPEP_WORKSPACE (UINT64_C(32) << 20) /* NUM_WORKSPACE_BYTES (kernels/configs.cuh) */
#define NVSHMEM_CHUNK (UINT64_C(1) << 29)      /* NVSHMEM_CUMEM_GRANULARITY DeepEP sets */

/* The flex dispatcher's persistent buffers, outside PyTorch's allocator
 * (one per process, shared by every layer and micro-batch; Megatron-Core
 * fused_a2a.py get_buffer / init_hybrid_ep_buffer):
 * - DeepEP (csrc/config.hpp get_nvl/rdma_buffer_size_hint): C = sms/2
 *   channels, n = min(N, 8) NVLink peers, r = max(N/8, 1) RDMA ranks,
 *   hb = 2h bytes a token: NVLink buffer ceil128(C·n·(8r + 12 + R_nvl·(hb +
 *   2056))) by cudaMalloc (+160 B of barriers), a 32 MiB workspace, and with
 *   N > 8 the RDMA buffer ceil128(C·r·(144 + 2·R_rdma·(hb + 2072))) in the
 *   NVSHMEM heap, which grows in 512 MiB chunks. NVSHMEM's own heap objects
 *   and queue pairs are not counted.
 * - HybridEP (hybrid_ep buffer/intranode.cu, internode_doca.cu): sized for
 *   every token of the group reaching one rank, M = T_p·N, T_p the rank's
 *   T/t_sp tokens rounded up to 64 (at least 512): tokens M·2h, probabilities
 *   M·4·L·R (the experts of one NVLink domain of R ranks), scaling factors
 *   M·4·h/128, the all-gathered routing map M·E·etp; across n = N/R domains
 *   T_p·(2h + 4E' + 4h/128 + (n − 1)·(6h + 12·L·R + 4h/128)) more. */
static uint64_t dispatcher_buffers(bool *ok, const struct m4d_ctx *x, const mem4d_device *dev)
{
    uint64_t N = ep_group(x), hb = 2 * x->h;
    if (!x->experts || N < 2)
        return 0;
    if (x->dispatcher == MEM4D_MOE_DISPATCHER_DEEPEP) {
        uint64_t nvl_recv, rdma_recv, C = x->dispatcher_sms / 2, n = N < 8 ? N : 8, r = N > 8 ? N / 8 : 1;
        deepep_config(N, &nvl_recv, &rdma_recv);
        uint64_t nvl = mul(ok, C * n, add(ok, 8 * r + 12, mul(ok, nvl_recv, hb + 2056)));
        uint64_t b = add(ok, m4d_ceil_div(nvl, 128) * 128 + 160, DEEPEP_WORKSPACE);
        if (N > 8) {
            uint64_t rdma = m4d_ceil_div(mul(ok, C * r, add(ok, 144, mul(ok, 2 * rdma_recv, hb + 2072))), 128) * 128;
            b = add(ok, b, mul(ok, m4d_ceil_div(rdma, NVSHMEM_CHUNK), NVSHMEM_CHUNK));
        }
        return b;
    }
    if (x->dispatcher != MEM4D_MOE_DISPATCHER_HYBRIDEP)
        return 0;
    uint64_t gpn = dev->v[MEM4D_DEVICE_NVLINK_DOMAIN] ? dev->v[MEM4D_DEVICE_NVLINK_DOMAIN]
                                                       : dev->v[MEM4D_DEVICE_GPUS_PER_NODE];
    uint64_t R = gpn && gpn < N ? gpn : N, domains = m4d_ceil_div(N, R), L = x->experts / x->ep;
    uint64_t Tr = tokens(ok, x) / t_sp(x), Tp = m4d_ceil_div(max64(Tr, 512), 64) * 64, M = mul(ok, Tp, N);
    uint64_t sf = 4 * (x->h / 128), Ex = x->experts * x->etp;
    uint64_t b = mul(ok, M, add(ok, add(ok, hb, mul(ok, 4 * L, R)), add(ok, sf, Ex)));
    b = add(ok, b, 8 * m4d_ceil_div(Tp, 64) * N);
    if (domains > 1) {
        uint64_t far = add(ok, add(ok, 6 * x->h, mul(ok, 12 * L, R)), sf);
        b = add(ok, b, mul(ok, Tp, add(ok, add(ok, hb + sf, 4 * Ex), mul(ok, domains - 1, far))));
    }
    return b;
}

/* CUDA graphs' static buffers on stage r, allocated once and kept
 * (Megatron-Core transformer/cuda_graphs.py):
 * - transformer_engine (TECudaGraphHelper, make_graphed_callables): each
 *   graphed layer of each in-flight chunk-micro-batch has its own static
 *   input, the hidden state 2h·T/t_sp, and with attention graphed a new
 *   causal mask of one byte per query and key, T·s; one more hidden state;
 * - local (CudaGraphManager, outputs passed on as weak references): one
 *   hidden state per in-flight micro-batch;
 * - full_iteration: a static copy of every micro-batch's inputs (token
 *   ids, labels, position ids int64, the loss mask fp32: 28 bytes a token);
 *   m unknown is taken as p. */
static uint64_t graph_static_buffers(bool *ok, const struct m4d_ctx *x, uint64_t r)
{
    if (!x->cuda_graph)
        return 0;
    uint64_t T = tokens(ok, x), H = muldiv(ok, T, 2 * x->h, t_sp(x)), units, each;
    if (x->cuda_graph == MEM4D_CUDA_GRAPH_FULL_ITERATION)
        return mul(ok, mul(ok, x->m ? x->m : x->p, T), 28);
    in_flight(x, r, &units, &each);
    if (x->cuda_graph == MEM4D_CUDA_GRAPH_LOCAL)
        return mul(ok, units, H);
    bool attn = x->graph_scope == 0 || (x->graph_scope & M4D_GRAPH_ATTN);
    uint64_t one = attn ? add(ok, H, mul(ok, T, x->s)) : H;
    return add(ok, mul(ok, mul(ok, units, each), one), H);
}

/* The stage's peak is the largest of three moments: the forward/backward
 * peak, the first stage forming its embedding gradient, and the optimizer
 * step (no activation live). ACTIVATIONS and BUFFERS are those of the
 * winning moment; ties go to the earlier one. */
static uint64_t pick_moment(bool *ok, const struct m4d_ctx *x, const mem4d_device *dev, const struct shared *sh,
                            uint64_t r, const struct stage_params *n, uint64_t *t)
{
    /* kept at every moment */
    uint64_t recv = add(ok, pp_recv_buffers(ok, x, r), graph_static_buffers(ok, x, r));
    uint64_t act, act_emb, fb = add(ok, sh->fb, recv), stranded, extra;
    stage_activations(ok, x, sh, r, &t[MEM4D_TERM_IN_FLIGHT], &act, &act_emb, &stranded);
    extra = stranded;
    t[MEM4D_TERM_ACTIVATIONS] = act;
    t[MEM4D_TERM_BUFFERS] = fb;
    t[MEM4D_TERM_PEAK_MOMENT] = MEM4D_MOMENT_FORWARD_BACKWARD;
    uint64_t best = add(ok, act, fb);
    if (r == 0) {
        uint64_t emb = add(ok, fb, sh->emb_grad);
        if (add(ok, act_emb, emb) > best) {
            t[MEM4D_TERM_ACTIVATIONS] = act_emb;
            t[MEM4D_TERM_BUFFERS] = emb;
            t[MEM4D_TERM_PEAK_MOMENT] = MEM4D_MOMENT_EMBEDDING_GRAD;
            best = add(ok, act_emb, emb);
            extra = 0;
        }
    }
    uint64_t step = add(ok, add(ok, step_buffers(ok, x, dev, n), recv), sh->fsdp_kept), kept, merge;
    pp_kept_outputs(ok, x, &kept, &merge);
    if (r == x->p - 1) /* the merged outputs at the end of the pipeline step */
        step = add(ok, step, merge);
    if (step > best) {
        t[MEM4D_TERM_ACTIVATIONS] = 0;
        t[MEM4D_TERM_BUFFERS] = step;
        t[MEM4D_TERM_PEAK_MOMENT] = MEM4D_MOMENT_OPTIMIZER_STEP;
        extra = 0;
    }
    /* CUDA graphs: the graphed activations live in a private pool the eager
     * optimizer step cannot reuse; the smaller of the two stays reserved */
    if (x->cuda_graph)
        extra = add(ok, extra, min64(act, step > recv ? step - recv : 0));
    return extra;
}

/* The caching allocator's reserved-but-unallocated bytes at the peak,
 * besides the stranded blocks the moment names: allocator_overhead_ppm of
 * the allocated peak (blocks split and cached across sizes; measured
 * reserved/allocated ratios, doc/full-model.md). With expandable segments
 * the allocator maps and unmaps 2 MiB pages within one growing segment per
 * stream, so only the page rounding of the peak remains. */
static uint64_t fragmentation(bool *ok, const struct m4d_ctx *x, const mem4d_device *dev, uint64_t alloc)
{
    if (x->expandable)
        return m4d_alloc_size(alloc) - alloc;
    return muldiv(ok, alloc, dev->v[MEM4D_DEVICE_ALLOCATOR_OVERHEAD_PPM], 1000000);
}

/* Selective recompute: while one layer's backward runs, the modules it
 * re-ran hold their tensors again: the attention core's, and what
 * selective_savings() dropped. */
static uint64_t selective_live(bool *ok, const struct m4d_ctx *x)
{
    uint64_t T = tokens(ok, x), repl, split;
    selective_savings(ok, x, &repl, &split);
    uint64_t core = reruns(x, M4D_RC_CORE_ATTN) ? attention_core_bytes(ok, x) : 0;
    return add(ok, muldiv(ok, T, add(ok, core, split), x->t), muldiv(ok, T, repl, t_sp(x)));
}

static void shared_init(bool *ok, const struct m4d_ctx *x, const mem4d_device *dev, struct shared *sh)
{
    struct m4d_ctx dense;
    m4d_ctx_dense(x, &dense);
    sh->share = layer_share(ok, x);
    sh->dense = x->experts ? layer_share(ok, &dense) : sh->share;
    sh->A_dense = x->experts ? layer_activation(ok, &dense) : 0; /* set below for dense models */
    sh->mtp = 0;
    sh->emb = muldiv(ok, x->Vp, x->h, x->t);
    sh->T = tokens(ok, x);
    sh->A = layer_activation(ok, x);
    if (!x->experts)
        sh->A_dense = sh->A;
    sh->mtp = mtp_share(ok, x, sh);
    sh->C = checkpoint_bytes(ok, x);
    sh->core_live = selective_live(ok, x);
    sh->backward = backward_working_set(ok, x);
    if (x->experts && (x->first_dense || x->moe_period > 1))
        sh->backward = max64(sh->backward, backward_working_set(ok, &dense));
    head_bytes(ok, x, &sh->head_keep, &sh->loss, &sh->stranded);
    sh->emb_keep = embedding_keep(ok, x);
    sh->emb_grad = embedding_grad_bytes(ok, x);
    sh->block = fsdp_block_bytes(ok, x, &sh->share);
    sh->sac = op_sac_layer_keep(ok, x);
    sh->fb = fwd_bwd_buffers(ok, x, dev, &sh->share);
    sh->fsdp_kept = x->fsdp_double ? megatron_fsdp_buffers(ok, x, &sh->share) : 0;
    sh->groups = process_groups(x);
    sh->fixed = add(ok, dev->v[MEM4D_DEVICE_CUDA_CONTEXT_BYTES], mul(ok, sh->groups, dev->v[MEM4D_DEVICE_NCCL_BYTES_PER_GROUP]));
    sh->fixed = add(ok, sh->fixed, userbuffers(ok, x));
    sh->fixed = add(ok, sh->fixed, dispatcher_buffers(ok, x, dev));
}

/* A middle stage's parameters and state terms depend on its layer count
 * alone; consecutive middle stages reuse them. */
struct middle {
    uint64_t l, e; /* layers and expert layers; l = 0: nothing cached */
    struct stage_params n;
    uint64_t w, g, o;
};

static bool stage_memory(const struct m4d_ctx *x, const mem4d_device *dev, const struct shared *sh, uint64_t r,
                         uint64_t *t, struct middle *mid)
{
    bool ok = true;
    bool middle = r != 0 && r != x->p - 1;
    uint64_t l = stage_layers(x, r), e = middle ? stage_moe_layers(x, r) : 0;
    struct stage_params n;
    if (middle && mid->l == l && mid->e == e) {
        n = mid->n;
        t[MEM4D_TERM_WEIGHTS] = mid->w;
        t[MEM4D_TERM_GRADIENTS] = mid->g;
        t[MEM4D_TERM_OPTIMIZER] = mid->o;
    } else {
        n = stage_params(&ok, x, sh, r);
        state_terms(&ok, x, sh, r, &n, t);
        if (middle)
            *mid = (struct middle){l, e, n, t[MEM4D_TERM_WEIGHTS], t[MEM4D_TERM_GRADIENTS], t[MEM4D_TERM_OPTIMIZER]};
    }
    uint64_t state = add(&ok, add(&ok, t[MEM4D_TERM_WEIGHTS], t[MEM4D_TERM_GRADIENTS]), t[MEM4D_TERM_OPTIMIZER]);
    uint64_t stranded = pick_moment(&ok, x, dev, sh, r, &n, t);
    uint64_t alloc = add(&ok, add(&ok, state, t[MEM4D_TERM_ACTIVATIONS]), t[MEM4D_TERM_BUFFERS]);
    t[MEM4D_TERM_FRAGMENTATION] = add(&ok, fragmentation(&ok, x, dev, alloc), stranded);
    t[MEM4D_TERM_FIXED] = sh->fixed;
    t[MEM4D_TERM_PARAMS] = n.all;
    t[MEM4D_TERM_LAYERS] = l;
    return ok;
}

static void warn(mem4d_report *r, const char *text)
{
    if (r->nwarn < M4D_MAX_WARN)
        m4d_strlcpy(r->warn[r->nwarn++], text, sizeof r->warn[0]);
}

/* Settings that change memory in ways the model does not follow: the
 * estimate stands, with a warning naming each. */
static void unmodelled_warnings(const struct m4d_ctx *x, const mem4d_device *dev, mem4d_report *r)
{
    if (x->compile)
        warn(r, "compile: torch.compile's effect on the transformer blocks' memory (fused "
                "elementwise kernels, Inductor's saved tensors) is not modelled; measured peaks are lower");
    if (x->tp_overlap && x->fw == MEM4D_FRAMEWORK_TORCHTITAN)
        warn(r, "async_tp: asynchronous tensor parallelism's symmetric-memory buffers and "
                "micro-pipelined matmuls are not modelled");
    if (x->float8 == 2)
        warn(r, "float8 rowwise: modelled as tensorwise (no float8 all-gather, no weight cache)");
    if (x->act_offload && dev->v[MEM4D_DEVICE_HOST_BANDWIDTH] == 0)
        warn(r, "activation_offload_layers: the device's host_bandwidth is unknown, so the step time does not "
                "count the host transfers, which stall compute when the host link is slower than the layers "
                "they overlap");
    /* nanotron's build_model balances the stages by compute cost with the
     * lm_head counted (V·h against 4h² + 3fh a layer), which puts more
     * layers on the first stages than L/p. */
    if (x->fw == MEM4D_FRAMEWORK_NANOTRON && x->p > 1 && !x->first_layers && !x->last_layers)
        warn(r, "nanotron split: nanotron balances pipeline stages by compute cost, the lm_head "
                "included, and gives the first stages more layers than an even split; set "
                "first_stage_layers and last_stage_layers to its split");
}

/* The middle stages hold the same layers and state as stage 1 and keep
 * no more micro-batches in flight (min(p - r, m), and the interleaved
 * warm-up, fall with r), so none exceeds stage 1 in any term: with
 * peak_only, stages 0, 1 and p - 1 decide the peak (tests/test-search.c
 * checks this against every stage). */
mem4d_status m4d_estimate_full(const struct m4d_ctx *x, const mem4d_device *dev, mem4d_report *r, bool peak_only)
{
    bool ok = true;
    struct shared sh;
    struct middle mid = {0};
    shared_init(&ok, x, dev, &sh);
    /* A pattern of dense and expert layers, or a layer table, can make a
     * middle stage heavier than stage 1. */
    if ((x->experts && (x->first_dense || x->moe_period > 1)) || x->nvs)
        peak_only = false;
    r->peak_only = peak_only;
    for (uint64_t i = 0; ok && i < x->p; i++) {
        if (!m4d_stage_filled(peak_only, i, x->p))
            continue;
        memset(r->stages[i].t, 0, sizeof r->stages[i].t);
        if (!stage_memory(x, dev, &sh, i, r->stages[i].t, &mid)) {
            m4d_msg(r->msg, sizeof r->msg, "the estimate of stage %llu overflows 64 bits", (unsigned long long)i);
            return MEM4D_E_RANGE;
        }
    }
    if (!ok) {
        m4d_msg(r->msg, sizeof r->msg, "the estimate overflows 64 bits");
        return MEM4D_E_RANGE;
    }
    r->nstages = (uint32_t)x->p;
    r->info[MEM4D_INFO_PROCESS_GROUPS] = sh.groups;
    unmodelled_warnings(x, dev, r);
    return MEM4D_OK;
}
