/*
 * Full mode, buffers and fixed costs: communication and framework buffers at
 * the forward/backward peak and at the optimizer step, the communicators and
 * persistent buffers outside PyTorch's allocator, and the allocator's
 * fragmentation (doc/full-model.md, "Buffers", "Fixed", "Fragmentation").
 * SPDX-License-Identifier: MIT
 */
#include "estimate_full.h"

/* torch.distributed.pipelining's receive buffers (PipelineStage
 * _prepare_forward_infra and _create_grad_recv_info): one activation buffer
 * per micro-batch and chunk that receives from a previous stage, one
 * gradient buffer per micro-batch and chunk that sends to a next stage,
 * each a stage boundary's hidden state T·2h/t_sp (torchtitan's blocks pass
 * the sequence-parallel shard), allocated once and kept. The activation
 * buffers of the micro-batches in flight are the first block's saved input,
 * already counted with the activations. */
uint64_t m4d_pp_recv_buffers(bool *ok, const struct m4d_ctx *x, uint64_t r)
{
    if (x->fw != MEM4D_FRAMEWORK_TORCHTITAN || x->p < 2)
        return 0;
    uint64_t m = x->m ? x->m : x->p, v = x->v ? x->v : 1, units, each;
    uint64_t fwd = mul(ok, m, v - (r == 0)), grad = mul(ok, m, v - (r == x->p - 1));
    m4d_in_flight(x, r, &units, &each);
    fwd = fwd > units ? fwd - units : 0;
    return muldiv(ok, mul(ok, add(ok, fwd, grad), tokens(ok, x)), 2 * x->h, t_sp(x));
}

/* The embedding's weight gradient is formed densely in the parameter dtype,
 * P_bytes·V_p·h/t, before Megatron's gradient hook adds it to the main
 * gradient (the LM head's is fused into the main gradient instead). */
uint64_t m4d_embedding_grad_bytes(bool *ok, const struct m4d_ctx *x)
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
    struct m4d_shards g;
    m4d_shards(x, &g);
    if (m4d_fsdp_keeps_blocks(x) || g.fsdp == 1)
        return 0;
    uint64_t params = share_total(ok, s);
    return add(ok, mul(ok, 2, m4d_fsdp_block_bytes(ok, x, s)), mul(ok, params, x->grad_bytes));
}

/* DeepSpeed's defaults (deepspeed/runtime/zero/config.py): reduce and
 * all-gather buckets (M4D_DS_BUCKET, private.h), stage-3 prefetch bucket
 * 5·10^7 and at most 10^9 live parameters. */
#define DS_PREFETCH_DEFAULT UINT64_C(50000000)
#define DS_MAX_LIVE_DEFAULT UINT64_C(1000000000)

/* DeepSpeed during forward/backward: the gradient reduction bucket
 * (reduce_bucket_size elements of P_b; with contiguous_gradients the ipg
 * buffer, two of them with overlap_comm = overlap_grad_reduce), and with
 * ZeRO-3 the gathered parameters: the layer being computed plus the
 * prefetch bucket, at most stage3_max_live_parameters. */
static uint64_t deepspeed_buffers(bool *ok, const struct m4d_ctx *x, const struct layer_share *s)
{
    uint64_t b = 0, bucket = m4d_ds_bucket(x->bucket);
    if (x->zero >= 1)
        b = mul(ok, mul(ok, bucket, x->param_bytes), x->contiguous_grads && x->overlap_grad ? 2 : 1);
    if (x->zero >= 3) {
        uint64_t layer = share_total(ok, s);
        uint64_t live = add(ok, layer, x->prefetch ? x->prefetch : DS_PREFETCH_DEFAULT);
        live = min64(live, x->max_live ? x->max_live : DS_MAX_LIVE_DEFAULT);
        b = add(ok, b, mul(ok, max64(live, layer), x->param_bytes));
    }
    return b;
}

/* Megatron-FSDP's all-gather prefetch window: suggested_communication_unit_size
 * = max(1e9, 2·(unit params)/(units)) elements (megatron_fsdp.py, "Cap to 1B
 * elements" written as max), half of it the prefetch size (5e8), and
 * AllGatherPipeline.all_gather_params adds the next units' buckets until
 * the prefetched elements reach it. */
#define MFSDP_AG_PREFETCH UINT64_C(500000000)

/* Megatron FSDP's communication buffers during forward/backward, the part
 * every stage shares. ZeRO-2: the reduce-scatter bucket max(40M, 1M·dp)
 * elements (two with overlap). ZeRO-3: the units are the transformer layers
 * (mcore_fsdp_adapter.py), each its own bucket; with its double buffers
 * (FixedPoolAllocator, fsdp_double_buffer: allocated once, they stay
 * allocated through the optimizer step too) two layers' gathered weights and
 * two layers' unsharded gradients; without, the unsharded gradients of the
 * layer in backward (its reduce-scatter queued), the gathered weights being
 * the stage's (m4d_megatron_fsdp_gather). */
uint64_t m4d_megatron_fsdp_buffers(bool *ok, const struct m4d_ctx *x, const struct layer_share *s)
{
    if (x->fw != MEM4D_FRAMEWORK_MEGATRON || x->zero < 2)
        return 0;
    if (x->zero == 2)
        return mul(ok, mul(ok, bucket_elements(ok, x), x->grad_bytes), x->overlap_grad || x->fsdp_double ? 2 : 1);
    uint64_t layer = share_total(ok, s);
    if (!x->fsdp_double)
        return mul(ok, layer, x->grad_bytes);
    return mul(ok, 2, add(ok, mul(ok, layer, x->grad_bytes), mul(ok, layer, x->param_bytes)));
}

/* Megatron-FSDP (ZeRO-3, no double buffers) at the start of backward, a
 * stage's own part: the unit in backward and the units prefetched after it
 * until the prefetch reaches MFSDP_AG_PREFETCH elements, all of them
 * gathered in P_b: min(units, layer + 5e8 + layer) elements, every layer of
 * a stage below 5e8 parameters a GPU. The gradients of the layers done go
 * on the reduce-scatter queue (capacity the 1e9 elements above) as their
 * weights are released, so the sum does not grow with G_b <= P_b. */
uint64_t m4d_megatron_fsdp_gather(bool *ok, const struct m4d_ctx *x, const struct layer_share *s, uint64_t units)
{
    if (x->fw != MEM4D_FRAMEWORK_MEGATRON || x->zero < 3 || x->fsdp_double)
        return 0;
    uint64_t layer = share_total(ok, s);
    return mul(ok, min64(units, add(ok, MFSDP_AG_PREFETCH, mul(ok, 2, layer))), x->param_bytes);
}

/* BUFFERS during forward/backward: kernel workspaces; the sequence-parallel
 * all-gather of a full-sequence activation 2·T·h; pipeline receive buffers
 * for an activation and a gradient 2·(2·T·h/t_sp) (4 bytes an element with
 * fp32 residuals); Megatron-Core's allgather token dispatcher
 * (MoEAllGatherTokenDispatcher) gathering the hidden states, fp32 router
 * probabilities and routing map of the N = ep·etp ranks' tokens, and at
 * the combine the unpermuted output with its fp32 copy for the
 * reduce-scatter: N·T/t_sp tokens of 6h + 5E bytes (the latent for h with
 * LatentMoE, whose tokens are projected before the dispatch); with context
 * parallelism the ring's send and receive K/V blocks 2·(2·T·k·(d_qk + d_v)/t); with ZeRO-2/3 the
 * Megatron-FSDP buffers above. Megatron's own buckets are views
 * of the persistent grad/param buffers (counted in GRADIENTS/WEIGHTS). */
uint64_t m4d_fwd_bwd_buffers(bool *ok, const struct m4d_ctx *x, const mem4d_device *dev,
                             const struct layer_share *s)
{
    uint64_t T = tokens(ok, x), b = dev->v[MEM4D_DEVICE_WORKSPACE_BYTES];
    if (x->sp && x->t > 1)
        b = add(ok, b, mul(ok, T, 2 * x->h));
    if (x->p > 1)
        b = add(ok, b, mul(ok, 2, muldiv(ok, T, residual_bytes(x) * x->h, t_sp(x))));
    if (x->experts && x->dispatcher == MEM4D_MOE_DISPATCHER_ALLGATHER && m4d_ep_group(x) > 1)
        b = add(ok, b, mul(ok, muldiv(ok, T, m4d_ep_group(x), t_sp(x)), add(ok, 6 * m4d_expert_width(x), 5 * x->experts)));
    if (x->c > 1)
        b = add(ok, b, mul(ok, 2, muldiv(ok, T, mul(ok, 2 * x->kv_heads, x->qk_dim + x->v_dim), x->t)));
    switch (x->fw) {
    case MEM4D_FRAMEWORK_TORCHTITAN: return add(ok, b, fsdp_buffers(ok, x, s));
    case MEM4D_FRAMEWORK_DEEPSPEED: return add(ok, b, deepspeed_buffers(ok, x, s));
    case MEM4D_FRAMEWORK_NANOTRON: return b;
    case MEM4D_FRAMEWORK_MEGATRON: break;
    }
    return add(ok, b, m4d_megatron_fsdp_buffers(ok, x, s));
}

/* BUFFERS at the optimizer step (no activation live): workspaces, and with
 * gradients below fp32 the fp32 copy the optimizer makes of its gradient
 * shard (shard_main_param.grad = shard_model_grad.float()); the
 * precision-aware optimizer hands the gradient over as it is
 * (decoupled_grad). nanotron's moment is the end of backward, with every
 * bf16 gradient before the accumulator frees them; DeepSpeed's below. */
uint64_t m4d_step_buffers(bool *ok, const struct m4d_ctx *x, const mem4d_device *dev,
                          const struct stage_params *n)
{
    uint64_t b = dev->v[MEM4D_DEVICE_WORKSPACE_BYTES];
    if (x->fw == MEM4D_FRAMEWORK_DEEPSPEED) {
        /* ZeRO-1/2: the fp32 copy of the gradient partition
         * (single_grad_partition) and the all-gather bucket of updated
         * parameters; nothing on the GPU when the optimizer is offloaded. */
        if (x->zero >= 3 || x->offload)
            return b;
        uint64_t ag = m4d_ds_bucket(x->ag_bucket);
        b = add(ok, b, muldiv(ok, n->all, 4, x->zero >= 1 ? x->d * x->c : 1));
        return add(ok, b, mul(ok, min64(ag, n->all), x->param_bytes));
    }
    if (x->fw == MEM4D_FRAMEWORK_NANOTRON && x->grad_bytes == 4) /* end of backward: every bf16 .grad */
        return add(ok, b, mul(ok, n->all, x->param_bytes));
    if (x->fw != MEM4D_FRAMEWORK_MEGATRON)
        return b;
    if (x->grad_bytes < 4 && x->master_bytes == 4 && !x->precision_aware) {
        struct m4d_shards g;
        m4d_shards(x, &g);
        b = add(ok, b, x->zero >= 1 ? muldiv(ok, n->all, 4, g.opt) : mul(ok, n->all, 4));
    }
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
uint64_t m4d_process_groups(const struct m4d_ctx *x)
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
    if (x->ag_groups) /* parallel_state.create_all_gather_groups (Megatron-LM only: its row in params.c) */
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
uint64_t m4d_userbuffers(bool *ok, const struct m4d_ctx *x)
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
 *   T_p·(2h + 4E' + 4h/128 + (n − 1)·(6h + 12·L·R + 4h/128)) more.
 * With LatentMoE h is the latent: the dispatcher moves the projected tokens
 * (DeepEP's get_buffer takes the dispatched tensor's hidden bytes, fused_a2a.py;
 * HybridEP its hidden_dim; the NCCL EP dispatcher "sized to the latent dim",
 * token_dispatcher.py; NVIDIA/Megatron-LM@d98e8a64). */
uint64_t m4d_dispatcher_buffers(bool *ok, const struct m4d_ctx *x, const mem4d_device *dev)
{
    uint64_t N = m4d_ep_group(x), w = m4d_expert_width(x), hb = 2 * w;
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
    uint64_t sf = 4 * (w / 128), Ex = x->experts * x->etp;
    uint64_t b = mul(ok, M, add(ok, add(ok, hb, mul(ok, 4 * L, R)), add(ok, sf, Ex)));
    b = add(ok, b, 8 * m4d_ceil_div(Tp, 64) * N);
    if (domains > 1) {
        uint64_t far = add(ok, add(ok, 6 * w, mul(ok, 12 * L, R)), sf);
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
uint64_t m4d_graph_static_buffers(bool *ok, const struct m4d_ctx *x, uint64_t r)
{
    if (!x->cuda_graph)
        return 0;
    uint64_t T = tokens(ok, x), H = muldiv(ok, T, 2 * x->h, t_sp(x)), units, each;
    if (x->cuda_graph == MEM4D_CUDA_GRAPH_FULL_ITERATION)
        return mul(ok, mul(ok, x->m ? x->m : x->p, T), 28);
    m4d_in_flight(x, r, &units, &each);
    if (x->cuda_graph == MEM4D_CUDA_GRAPH_LOCAL)
        return mul(ok, units, H);
    bool attn = x->graph_scope == 0 || (x->graph_scope & M4D_GRAPH_ATTN);
    uint64_t one = attn ? add(ok, H, mul(ok, T, x->s)) : H;
    return add(ok, mul(ok, mul(ok, units, each), one), H);
}
