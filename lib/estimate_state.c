/*
 * Full mode, model state: the parameters of each stage and the WEIGHTS,
 * GRADIENTS and OPTIMIZER terms each framework keeps for them
 * (doc/full-model.md, "Weights, gradients, optimizer").
 * SPDX-License-Identifier: MIT
 */
#include "estimate_full.h"

struct layer_share m4d_layer_share(bool *ok, const struct m4d_ctx *x)
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
    if (!m4d_routed_expert_params(x, &one) || (x->fs && !m4d_expert_params(x, x->fs, &shared)))
        *ok = false;
    uint64_t experts = mul(ok, one, x->experts);
    s.expert = muldiv(ok, experts, 1, m4d_ep_group(x));
    s.linear = add(ok, s.linear, m4d_ceil_div(shared, x->t));
    s.replicated = add(ok, s.replicated, mul(ok, x->h, x->experts) + (x->fs && x->shared_gate ? x->h : 0));
    return s;
}

/* A learned absolute position table, pos_rows·h, on the first stage and
 * replicated over t (Megatron-Core's LanguageModelEmbedding keeps a plain
 * nn.Embedding beside the vocabulary-parallel one). */
static uint64_t position_table(bool *ok, const struct m4d_ctx *x)
{
    return mul(ok, x->pos_rows, x->h);
}

/* Multi-token-prediction modules on the last stage: each a layer (an
 * expert layer with experts), the projection 2h·h split over t, three norms
 * (one module for every depth with mtp_use_repeated_layer). As a layer's
 * share: linear (the layer's linear weights with its experts', and eh_proj),
 * expert (the experts', kept with the other expert weights: Megatron-Core
 * puts every expert parameter, an MTP layer's too, in the expert-parallel
 * buffers and shards their optimizer state over the expert data-parallel
 * group) and replicated (the rest: the layer's, and the three norms). */
struct layer_share m4d_mtp_share(bool *ok, const struct m4d_ctx *x, const struct shared *sh)
{
    const struct layer_share *s = x->experts ? &sh->share : &sh->dense;
    uint64_t n = m4d_mtp_modules(x);
    return (struct layer_share){
        .linear = mul(ok, add(ok, add(ok, s->linear, s->expert), m4d_ceil_div(2 * x->h * x->h, x->t)), n),
        .expert = mul(ok, s->expert, n),
        .replicated = mul(ok, add(ok, s->replicated, 3 * (x->layernorm ? 2 : 1) * x->h), n),
    };
}

/* A layer pattern's layers [first, first + l) into n, by their kinds. */
static void pattern_params(bool *ok, const struct m4d_ctx *x, const struct shared *sh, uint64_t first, uint64_t l,
                           struct stage_params *n)
{
    uint64_t counts[M4D_MAX_LAYER_KINDS];
    m4d_pattern_kind_count(x, first, l, counts);
    for (uint64_t i = 0; i < x->nkinds; i++) {
        const struct layer_share *k = &sh->ks[i];
        n->linear = add(ok, n->linear, mul(ok, add(ok, k->linear, k->expert), counts[i]));
        n->expert = add(ok, n->expert, mul(ok, k->expert, counts[i]));
        n->all = add(ok, n->all, mul(ok, share_total(ok, k), counts[i]));
    }
}

struct stage_params m4d_stage_params(bool *ok, const struct m4d_ctx *x, const struct shared *sh, uint64_t r)
{
    const struct layer_share s = sh->share, d = sh->dense;
    uint64_t l = m4d_split_rank_layers(&x->split, r), e = m4d_stage_moe_layers(x, r);
    struct stage_params n = {0, 0, 0};
    if (x->nlt) {
        for (uint64_t j = 0; j < x->v; j++)
            pattern_params(ok, x, sh, m4d_split_chunk_first(&x->split, r, j), m4d_split_chunk_layers(&x->split, r, j),
                           &n);
    } else {
        n.linear = add(ok, mul(ok, add(ok, s.linear, s.expert), e), mul(ok, d.linear, l - e));
        n.expert = mul(ok, s.expert, e);
        n.all = add(ok, n.linear, add(ok, mul(ok, s.replicated, e), mul(ok, d.replicated, l - e)));
        /* layers that reuse another layer's top-k have no (replicated) indexer */
        uint64_t idx = 0;
        for (uint64_t j = 0; j < x->v && x->idx_heads; j++)
            idx = add(ok, idx, m4d_indexer_layers_in(x, m4d_split_chunk_first(&x->split, r, j),
                                                     m4d_split_chunk_layers(&x->split, r, j)));
        if (x->idx_heads) {
            uint64_t p = m4d_dsa_indexer_params(x), drop = mul(ok, l - idx, p);
            *ok = *ok && p != UINT64_MAX;
            n.all = n.all > drop ? n.all - drop : 0;
        }
    }
    if (r == x->p - 1) {
        n.linear = add(ok, n.linear, sh->mtp.linear);
        n.expert = add(ok, n.expert, sh->mtp.expert);
        n.all = add(ok, n.all, add(ok, sh->mtp.linear, sh->mtp.replicated));
    }
    n.all = add(ok, n.all, m4d_stage_root_params(ok, x, sh, r));
    return n;
}

/* The stage's parameters outside its transformer layers (and MTP modules):
 * on the first stage the embedding and a learned position table, on the
 * last the final norm and the output layer (not with a tied head on one
 * stage: the embedding is the head). Megatron-FSDP's units are the
 * transformer layers (mcore_fsdp_adapter.py: TransformerLayer,
 * MoETransformerLayer, MambaLayer); these are its root. */
uint64_t m4d_stage_root_params(bool *ok, const struct m4d_ctx *x, const struct shared *sh, uint64_t r)
{
    uint64_t root = r == 0 ? add(ok, sh->emb, position_table(ok, x)) : 0;
    if (r == x->p - 1) {
        root = add(ok, root, (x->layernorm ? 2 : 1) * x->h);
        if (!x->tied || x->p > 1)
            root = add(ok, root, sh->emb);
    }
    return root;
}

/* WEIGHTS of a stage before any sharding: every parameter in the training
 * dtype; with fp8 an fp8 copy and an fp8 transpose of every linear weight
 * beside it (2·N_lin), or with fp8 parameters (--fp8-param-gather) the
 * linear weights held in fp8 alone, one byte and one for the transpose:
 * P_bytes·(N − N_lin) + 2·N_lin. NVFP4 keeps its rowwise and columnwise
 * copies at 9/8 of a byte together (M4D_NVFP4_WEIGHT_EIGHTHS) in place of
 * fp8's 2 (--fp4-param-gather likewise). */
static uint64_t weight_bytes(bool *ok, const struct m4d_ctx *x, const struct stage_params *n)
{
    uint64_t q = x->fp8_recipe == M4D_FP8_RECIPE_NVFP4
                     ? add(ok, mul(ok, n->linear / 8, M4D_NVFP4_WEIGHT_EIGHTHS), n->linear % 8 * M4D_NVFP4_WEIGHT_EIGHTHS / 8)
                     : mul(ok, n->linear, 2);
    if (x->fp8 && x->fp8_params)
        return add(ok, mul(ok, n->all - n->linear, x->param_bytes), q);
    uint64_t w = mul(ok, n->all, x->param_bytes);
    return x->fp8 ? add(ok, w, q) : w;
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
 * precision-aware optimizer). Megatron-FSDP (ZeRO-2/3) shards each
 * parameter group's gradient and weight buffers over the group's own FSDP
 * group, the expert data-parallel one for experts (param_and_grad_buffer.py:
 * get_fsdp_group(is_expert_parallel=group.is_expert_param)), and at ZeRO-3
 * keeps its root's buckets (root: the parameters outside the transformer
 * layers) gathered for good besides their shard (AllGatherPipeline.reset
 * (preserve_non_fsdp_units=True)): P_b·root more. */
static void megatron_state_terms(bool *ok, const struct m4d_ctx *x, const struct stage_params *n, uint64_t root,
                                 uint64_t *t)
{
    struct m4d_shards sh;
    m4d_shards(x, &sh);
    uint64_t dc = sh.opt, edc = sh.eopt;
    uint64_t per = optimizer_bytes_ppm(ok, x), M = 1000000;
    t[MEM4D_TERM_WEIGHTS] = weight_bytes(ok, x, n);
    t[MEM4D_TERM_GRADIENTS] = mul(ok, n->all, x->grad_bytes);
    t[MEM4D_TERM_OPTIMIZER] = muldiv(ok, n->all, per, M);
    if (x->zero >= 1)
        t[MEM4D_TERM_OPTIMIZER] = add(ok, muldiv(ok, n->all - n->expert, per, mul(ok, dc, M)),
                                      muldiv(ok, n->expert, per, mul(ok, edc, M)));
    if (x->zero >= 2)
        t[MEM4D_TERM_GRADIENTS] = add(ok, muldiv(ok, n->all - n->expert, x->grad_bytes, dc),
                                      muldiv(ok, n->expert, x->grad_bytes, edc));
    if (x->zero >= 3) {
        /* the experts' own bytes: every expert parameter is a linear weight */
        struct stage_params ex = {n->expert, n->expert, n->expert};
        uint64_t w = t[MEM4D_TERM_WEIGHTS], we = weight_bytes(ok, x, &ex);
        t[MEM4D_TERM_WEIGHTS] = add(ok, add(ok, muldiv(ok, w - we, 1, dc), muldiv(ok, we, 1, edc)),
                                    mul(ok, root, x->param_bytes));
    }
    if (x->odo)
        odo_state_terms(ok, x, n, t);
}

/* Megatron's distributed optimizer shards over the data-parallel group with
 * the context-parallel ranks, experts over the expert data-parallel group
 * (parallel_state.py), each split again by its instances; FSDP2's shard
 * group is dp_shard x cp (torchtitan's dp_shard_cp mesh), dp divided by the
 * HSDP replicate degree. */
void m4d_shards(const struct m4d_ctx *x, struct m4d_shards *s)
{
    s->dp = x->d * x->c;
    s->edp = x->experts ? x->t * s->dp / m4d_ep_group(x) : s->dp;
    s->opt = s->dp / x->dopt_inst;
    s->eopt = s->edp / x->dopt_inst;
    s->fsdp = x->fw == MEM4D_FRAMEWORK_TORCHTITAN ? x->d / x->dp_rep * x->c : s->dp;
}

/* Does torchtitan keep the stage's transformer blocks unsharded from their
 * forward to their backward? auto: only under pipeline parallelism
 * (apply_fsdp: reshard_after_forward = False with PP). */
bool m4d_fsdp_keeps_blocks(const struct m4d_ctx *x)
{
    return x->reshard == 2 || (x->reshard == 0 && x->p > 1);
}

/* Bytes of one transformer block's unsharded compute copy: P_b per parameter,
 * 1 for the linear weights when FSDP all-gathers float8 (torchao
 * enable_fsdp_float8_all_gather). */
uint64_t m4d_fsdp_block_bytes(bool *ok, const struct m4d_ctx *x, const struct layer_share *s)
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
    struct m4d_shards g;
    m4d_shards(x, &g);
    /* The stage's blocks as they are: n less the root and the MTP modules,
     * each layer of its own kind (dense and expert layers of a pattern,
     * hybrid layers, layers without an indexer), as m4d_fsdp_block_bytes()
     * prices one. One expert layer's share times the layers counted every
     * dense layer of Llama 4 Maverick (experts every second layer) as an
     * expert one, twice its blocks, and its replicated part could pass n:
     * the root wrapped below zero ("overflows 64 bits" at pp 4). */
    bool last = r == x->p - 1;
    uint64_t lin = n->linear - (last ? sh->mtp.linear : 0);
    uint64_t outside = add(ok, add(ok, m4d_stage_root_params(ok, x, sh, r), lin),
                           last ? add(ok, sh->mtp.linear, sh->mtp.replicated) : 0);
    uint64_t rep = n->all > outside ? n->all - outside : 0;
    uint64_t shard = g.fsdp, blocks = add(ok, mul(ok, lin, x->fp8_all_gather ? 1 : x->param_bytes), mul(ok, rep, x->param_bytes));
    uint64_t root = n->all - add(ok, n->linear, rep);
    t[MEM4D_TERM_WEIGHTS] = add(ok, muldiv(ok, n->all, x->master_bytes, shard), mul(ok, root, x->param_bytes));
    t[MEM4D_TERM_GRADIENTS] = muldiv(ok, n->all, x->grad_bytes, shard);
    t[MEM4D_TERM_OPTIMIZER] = muldiv(ok, n->all, 2 * x->opt_bytes, shard);
    if (m4d_fsdp_keeps_blocks(x)) {
        t[MEM4D_TERM_WEIGHTS] = add(ok, t[MEM4D_TERM_WEIGHTS], blocks);
        if (x->p > 1 && x->m != 1)
            t[MEM4D_TERM_GRADIENTS] = add(ok, t[MEM4D_TERM_GRADIENTS], mul(ok, n->all, x->grad_bytes));
    } else if (x->reshard == 0 && r == x->p - 1 && m4d_split_rank_layers(&x->split, r) > 0) {
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
void m4d_state_terms(bool *ok, const struct m4d_ctx *x, const struct shared *sh, uint64_t r,
                     const struct stage_params *n, uint64_t *t)
{
    switch (x->fw) {
    case MEM4D_FRAMEWORK_TORCHTITAN: fsdp_state_terms(ok, x, sh, r, n, t); return;
    case MEM4D_FRAMEWORK_NANOTRON: nanotron_state_terms(ok, x, n, t); return;
    case MEM4D_FRAMEWORK_DEEPSPEED: deepspeed_state_terms(ok, x, n, t); return;
    case MEM4D_FRAMEWORK_MEGATRON: break;
    }
    megatron_state_terms(ok, x, n, x->zero >= 3 ? m4d_stage_root_params(ok, x, sh, r) : 0, t);
}
