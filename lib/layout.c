/*
 * The layout handle and validation of a layout against a model (the rules of
 * doc/formulas.md, "Valid layouts").
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>

#include "private.h"

#define NP M4D_LAYOUT_NPARAM
#define U(x) ((unsigned long long)(x))

mem4d_status mem4d_layout_new(mem4d_layout **out)
{
    if (!out)
        return MEM4D_E_INVALID_ARG;
    *out = calloc(1, sizeof **out);
    if (!*out)
        return MEM4D_E_NOMEM;
    m4d_param_defaults(m4d_layout_params, NP, (*out)->v);
    return MEM4D_OK;
}

mem4d_status mem4d_layout_clone(const mem4d_layout *layout, mem4d_layout **out)
{
    if (!out)
        return MEM4D_E_INVALID_ARG;
    *out = NULL;
    if (!layout)
        return MEM4D_E_INVALID_ARG;
    *out = malloc(sizeof **out);
    if (!*out)
        return MEM4D_E_NOMEM;
    **out = *layout;
    return MEM4D_OK;
}

mem4d_status mem4d_layout_copy(mem4d_layout *dst, const mem4d_layout *src)
{
    if (!dst || !src)
        return MEM4D_E_INVALID_ARG;
    *dst = *src;
    return MEM4D_OK;
}

void mem4d_layout_free(mem4d_layout *layout)
{
    free(layout);
}

mem4d_status mem4d_layout_set(mem4d_layout *layout, mem4d_layout_param key, uint64_t value)
{
    if (!layout)
        return MEM4D_E_INVALID_ARG;
    mem4d_status st = m4d_param_set(m4d_layout_params, NP, layout->v, (int)key, value);
    layout->flash_set |= st == MEM4D_OK && key == MEM4D_LAYOUT_FLASH_ATTN;
    return st;
}

mem4d_status mem4d_layout_get(const mem4d_layout *layout, mem4d_layout_param key, uint64_t *value)
{
    if (!layout || !value || (unsigned)key >= NP)
        return MEM4D_E_INVALID_ARG;
    *value = layout->v[key];
    return MEM4D_OK;
}

mem4d_status mem4d_layout_set_stage_layers(mem4d_layout *layout, const uint32_t *layers, size_t n)
{
    if (!layout || (n && !layers))
        return MEM4D_E_INVALID_ARG;
    if (n > M4D_MAX_VSTAGES)
        return MEM4D_E_RANGE;
    uint32_t first = 0;
    for (size_t k = 0; k < n; k++) {
        if (layers[k] > m4d_model_params[MEM4D_MODEL_NUM_LAYERS].max ||
            first + layers[k] > m4d_model_params[MEM4D_MODEL_NUM_LAYERS].max)
            return MEM4D_E_RANGE;
        first += layers[k];
    }
    first = 0;
    for (size_t k = 0; k < n; k++) {
        layout->vs[k] = (uint16_t)layers[k];
        layout->vs_first[k] = (uint16_t)first;
        first += layers[k];
    }
    layout->nvs = (uint32_t)n;
    return MEM4D_OK;
}

size_t mem4d_layout_get_stage_layers(const mem4d_layout *layout, uint32_t *layers, size_t n)
{
    if (!layout)
        return 0;
    for (size_t k = 0; layers && k < n && k < layout->nvs; k++)
        layers[k] = layout->vs[k];
    return layout->nvs;
}

/* "3,2,2,1": decimal entries separated by commas, spaces allowed around
 * them; "" clears the table. */
static mem4d_status set_stage_layers_str(mem4d_layout *layout, const char *text)
{
    uint32_t t[M4D_MAX_VSTAGES];
    size_t n = 0;
    const char *p = text;
    while (*p == ' ')
        p++;
    if (*p == '\0')
        return mem4d_layout_set_stage_layers(layout, NULL, 0);
    for (;;) {
        while (*p == ' ')
            p++;
        if (*p < '0' || *p > '9')
            return MEM4D_E_PARSE;
        uint64_t v = 0;
        for (; *p >= '0' && *p <= '9'; p++) {
            v = v * 10 + (uint64_t)(*p - '0');
            if (v > m4d_model_params[MEM4D_MODEL_NUM_LAYERS].max)
                return MEM4D_E_RANGE;
        }
        if (n == M4D_MAX_VSTAGES)
            return MEM4D_E_RANGE;
        t[n++] = (uint32_t)v;
        while (*p == ' ')
            p++;
        if (*p == '\0')
            break;
        if (*p++ != ',')
            return MEM4D_E_PARSE;
    }
    return mem4d_layout_set_stage_layers(layout, t, n);
}

size_t mem4d_layout_stage_layers_max(void)
{
    return M4D_MAX_VSTAGES;
}

mem4d_status mem4d_layout_set_str(mem4d_layout *layout, const char *name, const char *value)
{
    if (!layout || !name || !value)
        return MEM4D_E_INVALID_ARG;
    if (m4d_name_eq(name, "stage_layers"))
        return set_stage_layers_str(layout, value);
    mem4d_status st = m4d_param_set_str(m4d_layout_params, NP, layout->v, name, value);
    layout->flash_set |= st == MEM4D_OK && m4d_param_lookup(m4d_layout_params, NP, name) == MEM4D_LAYOUT_FLASH_ATTN;
    return st;
}

size_t mem4d_layout_param_count(void)
{
    return NP;
}

const char *mem4d_layout_param_name(mem4d_layout_param key)
{
    return (unsigned)key < NP ? m4d_layout_params[key].name : NULL;
}

mem4d_status mem4d_layout_param_from_name(const char *name, mem4d_layout_param *key)
{
    if (!name || !key)
        return MEM4D_E_INVALID_ARG;
    int k = m4d_param_lookup(m4d_layout_params, NP, name);
    if (k < 0)
        return MEM4D_E_UNKNOWN_KEY;
    *key = (mem4d_layout_param)k;
    return MEM4D_OK;
}

mem4d_status mem4d_layout_param_bounds(mem4d_layout_param key, uint64_t *min, uint64_t *max)
{
    return m4d_param_bounds(m4d_layout_params, NP, (int)key, min, max);
}

const char *mem4d_layout_value_name(mem4d_layout_param key, uint64_t value)
{
    return m4d_param_value_name(m4d_layout_params, NP, (int)key, value);
}

bool m4d_dist_opt_applies(const uint64_t *v)
{
    return v[MEM4D_LAYOUT_ZERO_STAGE] == 0 && v[MEM4D_LAYOUT_FRAMEWORK] != MEM4D_FRAMEWORK_TORCHTITAN;
}

static void ctx_layout(const mem4d_layout *l, struct m4d_ctx *x)
{
    const uint64_t *v = l->v;
    x->lv = v;
    x->t = v[MEM4D_LAYOUT_TP];
    x->c = v[MEM4D_LAYOUT_CP];
    x->p = v[MEM4D_LAYOUT_PP];
    x->d = v[MEM4D_LAYOUT_DP];
    x->world = v[MEM4D_LAYOUT_WORLD];
    x->b = v[MEM4D_LAYOUT_MICRO_BATCH];
    x->gbs = v[MEM4D_LAYOUT_GLOBAL_BATCH];
    x->s = v[MEM4D_LAYOUT_SEQ_LENGTH];
    x->v = v[MEM4D_LAYOUT_VPP];
    x->sp = v[MEM4D_LAYOUT_SEQUENCE_PARALLEL] != 0;
    x->flash = v[MEM4D_LAYOUT_FLASH_ATTN] != 0; /* the layout's word; the device's after m4d_ctx_device() */
    x->ep = v[MEM4D_LAYOUT_EP];
    x->etp = v[MEM4D_LAYOUT_ETP] ? v[MEM4D_LAYOUT_ETP] : v[MEM4D_LAYOUT_TP];
    x->zero = v[MEM4D_LAYOUT_ZERO_STAGE];
    if (m4d_dist_opt_applies(v) && v[MEM4D_LAYOUT_DIST_OPT])
        x->zero = 1;
    x->recompute = v[MEM4D_LAYOUT_RECOMPUTE];
    x->rc_method = v[MEM4D_LAYOUT_RECOMPUTE_METHOD];
    x->rc_layers = v[MEM4D_LAYOUT_RECOMPUTE_LAYERS];
    x->rc_modules = v[MEM4D_LAYOUT_RECOMPUTE_MODULES];
    x->router_bytes = v[MEM4D_LAYOUT_MOE_ROUTER_BYTES];
    x->opt_offload_ppm = v[MEM4D_LAYOUT_OPTIMIZER_OFFLOAD_PPM];
    x->opt_state_offload = v[MEM4D_LAYOUT_OPTIMIZER_STATE_OFFLOAD] != 0;
    x->logprob_loss = v[MEM4D_LAYOUT_LOGPROB_LOSS];
    x->fp8_recipe = v[MEM4D_LAYOUT_FP8_RECIPE];
    x->ce_impl = v[MEM4D_LAYOUT_CROSS_ENTROPY_IMPL];
    x->cp_all_gather = v[MEM4D_LAYOUT_CP_COMM_TYPE] == 1;
    x->p2p_overlap = v[MEM4D_LAYOUT_OVERLAP_P2P_COMM] != 0;
    x->param_bytes = v[MEM4D_LAYOUT_PARAM_BYTES];
    x->grad_bytes = v[MEM4D_LAYOUT_MAIN_GRAD_BYTES];
    x->opt_bytes = v[MEM4D_LAYOUT_OPT_STATE_BYTES];
    x->master_bytes = v[MEM4D_LAYOUT_MASTER_WEIGHT_BYTES];
    x->fp8 = v[MEM4D_LAYOUT_FP8] != 0;
    x->overlap_grad = v[MEM4D_LAYOUT_OVERLAP_GRAD_REDUCE] != 0;
    x->overlap_param = v[MEM4D_LAYOUT_OVERLAP_PARAM_GATHER] != 0;
    x->bucket = v[MEM4D_LAYOUT_BUCKET_SIZE];
    x->hidden_dropout = v[MEM4D_LAYOUT_HIDDEN_DROPOUT] != 0;
    x->attn_dropout = v[MEM4D_LAYOUT_ATTENTION_DROPOUT] != 0;
    x->ce_fusion = v[MEM4D_LAYOUT_CROSS_ENTROPY_FUSION] != 0;
    x->distribute_saved = v[MEM4D_LAYOUT_DISTRIBUTE_SAVED_ACTIVATIONS] != 0;
    x->fp8_params = v[MEM4D_LAYOUT_FP8_PARAM_GATHER] != 0;
    x->opt_sq_bytes = v[MEM4D_LAYOUT_EXP_AVG_SQ_BYTES] ? v[MEM4D_LAYOUT_EXP_AVG_SQ_BYTES] : x->opt_bytes;
    x->precision_aware = v[MEM4D_LAYOUT_PRECISION_AWARE_OPTIMIZER] != 0;
    x->tp_overlap = v[MEM4D_LAYOUT_TP_COMM_OVERLAP] != 0;
    x->vocab_div = v[MEM4D_LAYOUT_VOCAB_DIVISOR];
    x->mode = v[MEM4D_LAYOUT_MODE] == 1 ? MEM4D_MODE_PAPER : MEM4D_MODE_FULL;
    x->fw = (mem4d_framework)v[MEM4D_LAYOUT_FRAMEWORK];
    x->reshard = v[MEM4D_LAYOUT_RESHARD_AFTER_FORWARD];
    x->dp_rep = v[MEM4D_LAYOUT_DP_REPLICATE];
    x->rc_every = v[MEM4D_LAYOUT_RECOMPUTE_EVERY];
    x->float8 = v[MEM4D_LAYOUT_FLOAT8];
    x->fp8_all_gather = v[MEM4D_LAYOUT_FP8_ALL_GATHER] != 0;
    x->ag_bucket = v[MEM4D_LAYOUT_ALLGATHER_BUCKET_SIZE];
    x->prefetch = v[MEM4D_LAYOUT_PREFETCH_BUCKET_SIZE];
    x->max_live = v[MEM4D_LAYOUT_MAX_LIVE_PARAMETERS];
    x->offload = v[MEM4D_LAYOUT_OFFLOAD];
    x->contiguous_grads = v[MEM4D_LAYOUT_CONTIGUOUS_GRADIENTS] != 0;
    x->afab = v[MEM4D_LAYOUT_PIPELINE_SCHEDULE] == 1;
    x->compile = v[MEM4D_LAYOUT_COMPILE];
    x->expandable = v[MEM4D_LAYOUT_EXPANDABLE_SEGMENTS] != 0;
    x->opt_moments = v[MEM4D_LAYOUT_OPTIMIZER_MOMENTS];
    x->odo = v[MEM4D_LAYOUT_OVERLAPPED_DIST_OPT] != 0;
    x->dopt_inst = v[MEM4D_LAYOUT_DIST_OPT_INSTANCES];
    x->cap_ppm = v[MEM4D_LAYOUT_MOE_CAPACITY_FACTOR_PPM];
    x->cap_pad = v[MEM4D_LAYOUT_MOE_PAD_TO_CAPACITY] != 0;
    x->act_offload = v[MEM4D_LAYOUT_ACTIVATION_OFFLOAD_LAYERS];
    x->pp_outputs = v[MEM4D_LAYOUT_PP_RETURN_OUTPUTS] != 0;
    x->dispatcher = v[MEM4D_LAYOUT_MOE_DISPATCHER];
    x->dispatcher_sms = v[MEM4D_LAYOUT_MOE_DISPATCHER_SMS];
    x->pad_multiple = v[MEM4D_LAYOUT_MOE_PAD_MULTIPLE];
    x->ep_overlap = v[MEM4D_LAYOUT_MOE_EP_OVERLAP] != 0;
    x->delay_wgrad = v[MEM4D_LAYOUT_DELAY_WGRAD] != 0;
    x->cuda_graph = v[MEM4D_LAYOUT_CUDA_GRAPH];
    x->graph_scope = v[MEM4D_LAYOUT_CUDA_GRAPH_SCOPE];
    x->fp32_residual = v[MEM4D_LAYOUT_FP32_RESIDUAL] != 0;
    x->fsdp_double = v[MEM4D_LAYOUT_FSDP_DOUBLE_BUFFER] != 0;
    x->offload_modules = v[MEM4D_LAYOUT_OFFLOAD_MODULES];
    x->offload_ppm = v[MEM4D_LAYOUT_ACTIVATION_OFFLOAD_FRACTION_PPM];
    x->defer_emb_wgrad = v[MEM4D_LAYOUT_DEFER_EMBEDDING_WGRAD] != 0;
    x->wgrad_defer_limit = v[MEM4D_LAYOUT_WGRAD_DEFERRAL_LIMIT];
    x->ag_groups = v[MEM4D_LAYOUT_ALLGATHER_GROUPS] != 0;
    m4d_split_init(&x->split, l, x->L, x->mtp);
    x->imbalance_ppm = v[MEM4D_LAYOUT_MOE_IMBALANCE_PPM];
    x->moe_grouped_gemm = v[MEM4D_LAYOUT_MOE_GROUPED_GEMM] != 0;
    x->shared_overlap = v[MEM4D_LAYOUT_MOE_SHARED_EXPERT_OVERLAP] != 0;
    /* torchtitan always shards with FSDP2 (over dp_shard x cp); nanotron offers
     * ZeRO-0 and ZeRO-1 only. */
    if (x->fw == MEM4D_FRAMEWORK_TORCHTITAN)
        x->zero = 3;
}

/* world = t·c·p·d, from whichever of dp and world is given (both must agree). */
static mem4d_status check_world(struct m4d_ctx *x, char *why, size_t n)
{
    uint64_t tcp;
    if (!m4d_mul3(x->t, x->c, x->p, &tcp) || tcp > (UINT64_C(1) << 24)) {
        m4d_msg(why, n, "tp %llu x cp %llu x pp %llu exceeds 2^24 GPUs", U(x->t), U(x->c), U(x->p));
        return MEM4D_E_RANGE;
    }
    if (x->world == 0 && x->d == 0) {
        m4d_msg(why, n, "neither dp nor world size is set");
        return MEM4D_E_MISSING;
    }
    if (x->world == 0) {
        if (!m4d_mul(tcp, x->d, &x->world) || x->world > (UINT64_C(1) << 24)) {
            m4d_msg(why, n, "tp x cp x pp %llu x dp %llu exceeds 2^24 GPUs", U(tcp), U(x->d));
            return MEM4D_E_RANGE;
        }
        return MEM4D_OK;
    }
    if (x->world % tcp != 0) {
        m4d_msg(why, n, "world size %llu is not divisible by tp %llu x cp %llu x pp %llu = %llu",
                U(x->world), U(x->t), U(x->c), U(x->p), U(tcp));
        return MEM4D_E_WORLD;
    }
    if (x->d != 0 && x->d != x->world / tcp) {
        m4d_msg(why, n, "world size %llu is not tp %llu x cp %llu x pp %llu x dp %llu = %llu",
                U(x->world), U(x->t), U(x->c), U(x->p), U(x->d), U(tcp * x->d));
        return MEM4D_E_WORLD;
    }
    x->d = x->world / tcp;
    return MEM4D_OK;
}

static mem4d_status check_tp(const struct m4d_ctx *x, char *why, size_t n)
{
    if (x->a % x->t != 0) {
        m4d_msg(why, n, "%llu attention heads are not divisible by tp %llu", U(x->a), U(x->t));
        return MEM4D_E_HEADS_TP;
    }
    if (x->k % x->t != 0) {
        m4d_msg(why, n, "%llu key/value heads are not divisible by tp %llu "
                "(Megatron does not replicate key/value heads)", U(x->k), U(x->t));
        return MEM4D_E_KV_HEADS_TP;
    }
    /* The FFN sizes are the only dimensions checked: h is split only through
     * the heads (checked above), so it need not be divisible by t. */
    const char *what = x->f % x->t ? "FFN" : x->fs % x->t ? "shared-expert FFN"
                     : x->experts && x->fe % x->etp ? "expert FFN" : NULL;
    if (what) {
        m4d_msg(why, n, "%s size %llu is not divisible by tp %llu", what,
                U(x->f % x->t ? x->f : x->fs % x->t ? x->fs : x->fe), U(x->t));
        return MEM4D_E_DIM_TP;
    }
    return MEM4D_OK;
}

static mem4d_status check_seq_batch(struct m4d_ctx *x, char *why, size_t n)
{
    if (x->c > 1 && x->s % (2 * x->c) != 0) {
        m4d_msg(why, n, "sequence length %llu is not divisible by 2 x cp %llu = %llu "
                "(context-parallel load balancing)", U(x->s), U(x->c), U(2 * x->c));
        return MEM4D_E_SEQ;
    }
    if (x->sp && x->t > 1 && (x->s / x->c) % x->t != 0) {
        m4d_msg(why, n, "sequence length %llu / cp %llu is not divisible by tp %llu "
                "(sequence parallelism)", U(x->s), U(x->c), U(x->t));
        return MEM4D_E_SEQ;
    }
    x->m = 0;
    if (x->gbs) {
        uint64_t bd;
        if (!m4d_mul(x->b, x->d, &bd) || x->gbs % bd != 0) {
            m4d_msg(why, n, "global batch %llu is not divisible by micro-batch %llu x dp %llu",
                    U(x->gbs), U(x->b), U(x->d));
            return MEM4D_E_BATCH;
        }
        x->m = x->gbs / bd;
    }
    return MEM4D_OK;
}

/* Framework settings that contradict other settings (where a key applies at
 * all is its row in params.c). */
static mem4d_status check_framework(const struct m4d_ctx *x, char *why, size_t n)
{
    if (x->d % x->dp_rep != 0) {
        m4d_msg(why, n, "dp_replicate %llu does not divide dp %llu", U(x->dp_rep), U(x->d));
        return MEM4D_E_CONFLICT;
    }
    /* DeepSpeed's PipelineEngine asserts zero_optimization_stage() <
     * ZeroStageEnum.gradients (deepspeed/runtime/pipe/engine.py). */
    if (x->fw == MEM4D_FRAMEWORK_DEEPSPEED && x->p > 1 && x->zero >= 2) {
        m4d_msg(why, n, "zero_stage %llu with pp %llu: DeepSpeed refuses it (\"ZeRO-2 and ZeRO-3 are incompatible "
                "with pipeline parallelism\", deepspeed/runtime/pipe/engine.py); use zero_stage 0 or 1", U(x->zero),
                U(x->p));
        return MEM4D_E_CONFLICT;
    }
    if (x->offload == 2 && x->zero < 3) {
        m4d_msg(why, n, "offloading parameters needs zero_stage 3 (it is %llu)", U(x->zero));
        return MEM4D_E_CONFLICT;
    }
    if (x->odo && (x->zero != 1 || x->experts)) {
        m4d_msg(why, n, "overlapped_dist_opt (Megatron-LLaMA) needs dist_opt and a dense model (zero_stage %llu, "
                "%llu experts)", U(x->zero), U(x->experts));
        return MEM4D_E_CONFLICT;
    }
    /* Megatron-Core's OptimizerStateOffloader wraps the DistributedOptimizer's
     * TE FusedAdam and asserts it is one (optimizer_state_offloader.py), which
     * HybridDeviceOptimizer (--optimizer-cpu-offload) is not. */
    if (x->opt_state_offload && (x->zero != 1 || x->opt_offload_ppm)) {
        m4d_msg(why, n, "optimizer_state_offload needs the distributed optimizer (zero_stage %llu) and no "
                "optimizer_offload_ppm (%llu): Megatron-Core's OptimizerStateOffloader wraps the distributed "
                "optimizer's Transformer Engine FusedAdam", U(x->zero), U(x->opt_offload_ppm));
        return MEM4D_E_CONFLICT;
    }
    if (x->dopt_inst > 1) {
        struct m4d_shards g;
        m4d_shards(x, &g);
        if (x->zero < 1) {
            m4d_msg(why, n, "dist_opt_instances %llu needs the distributed optimizer (zero_stage %llu)",
                    U(x->dopt_inst), U(x->zero));
            return MEM4D_E_CONFLICT;
        }
        if (g.dp % x->dopt_inst != 0 || g.edp % x->dopt_inst != 0) {
            m4d_msg(why, n, "dist_opt_instances %llu does not divide dp x cp = %llu%s", U(x->dopt_inst),
                    U(x->d * x->c), x->experts ? " or the experts' data-parallel size" : "");
            return MEM4D_E_CONFLICT;
        }
    }
    if (x->act_offload) {
        /* Megatron-Core's TransformerConfig: no pipeline parallelism, fewer
         * offloaded layers than layers (and no recomputation, below) */
        if (x->p > 1) {
            m4d_msg(why, n, "activation_offload_layers needs pp 1 (pp %llu)", U(x->p));
            return MEM4D_E_CONFLICT;
        }
        if (x->act_offload >= x->L) {
            m4d_msg(why, n, "activation_offload_layers %llu must be below the %llu layers", U(x->act_offload), U(x->L));
            return MEM4D_E_CONFLICT;
        }
    }
    if (x->cap_pad && x->cap_ppm == 0) {
        m4d_msg(why, n, "moe_pad_to_capacity needs moe_capacity_factor_ppm");
        return MEM4D_E_CONFLICT;
    }
    if (x->fp8_all_gather && x->float8 != 1) {
        m4d_msg(why, n, "fp8_all_gather needs float8 tensorwise");
        return MEM4D_E_CONFLICT;
    }
    return MEM4D_OK;
}

/* DeepEP's configured group sizes (deep_ep/buffer.py, get_dispatch_config
 * and get_combine_config, v1.2.1 and the hybrid-ep branch Megatron-Core
 * imports); deepep_config() in estimate_buffers.c holds their receive sizes. */
bool m4d_deepep_group_ok(uint64_t ranks)
{
    static const uint64_t sizes[] = {2, 4, 8, 16, 24, 32, 64, 128, 144, 160};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        if (sizes[i] == ranks)
            return true;
    return false;
}

/* What the flex dispatchers run on (doc/perf.md, "What the flex
 * dispatchers run on"). DeepEP's normal (training) kernels take each 8
 * consecutive ranks of the group as one node's NVLink peers
 * (NUM_MAX_NVL_PEERS 8, rdma_rank = rank / 8, num_ranks a multiple of 8
 * above it: deepseek-ai/DeepEP@94a9f8f csrc/deep_ep.cpp, Buffer::Buffer)
 * and reach them by CUDA IPC, which stays inside a node: a group of up to 8
 * runs the intranode kernels, so on one node. On nodes of fewer than 8
 * GPUs (a GB200 NVL72's 4-GPU trays) a group wider than a node runs neither
 * (DeepEP issues 392 and 579: the normal mode does not support GB200;
 * NVIDIA's runs used a modified, unpublished DeepEP). HybridEP and the
 * all-to-all run there.
 * Before Hopper (SM80) DeepEP builds with DISABLE_SM90_FEATURES, which
 * asserts NVSHMEM off (setup.py), and without NVSHMEM a Buffer asserts one
 * RDMA rank (csrc/deep_ep.cpp): the intranode kernels alone, a group of at
 * most 8 ranks on one node. HybridEP's kernels copy with the TMA
 * (cuda::ptx::cp_async_bulk, SM90 and later: csrc/hybrid_ep/backend/
 * hybrid_ep_backend.cuh, docs/README_Hybrid-EP.md), and have no ROCm port
 * (ROCm/DeepEP@92b4ae1 ports DeepEP's kernels alone). DeepEP runs on an
 * MI300X (that port), so an AMD GPU refuses HybridEP only. The library
 * reads a device that states a bf16 peak and no fp8 one as a GPU before
 * Hopper (as lib/perf.c does), and knows an AMD GPU by its preset's name
 * (m4d_device_rocm()); what it cannot tell apart (a Volta, an Ada, a
 * custom AMD device) it does not refuse. */
#define DEEPEP_NVL_PEERS 8
mem4d_status m4d_check_device(const struct m4d_ctx *x, const mem4d_device *dev, char *why, size_t n)
{
    const uint64_t *dv = dev->v;
    /* NVFP4 needs fp4 tensor cores: Transformer Engine's NVFP4BlockScaling
     * runs on Blackwell (compute capability 10.0) and later alone
     * (check_nvfp4_support, transformer_engine/pytorch/quantization.py;
     * Megatron-Core's fp4 recipe "for Blackwell+ architecture",
     * transformer_config.py), which a device states by its fp4 peak. A
     * device with no peaks at all (memory alone) is not refused. */
    if (x->fp8 && x->fp8_recipe == M4D_FP8_RECIPE_NVFP4 && dv[MEM4D_DEVICE_PEAK_FLOPS] != 0 &&
        dv[MEM4D_DEVICE_PEAK_FP4_FLOPS] == 0) {
        m4d_msg(why, n, "fp8_recipe nvfp4 (Megatron's --fp4-format e2m1) needs fp4 tensor cores (Blackwell or later), "
                "and %s states no fp4 peak (peak_fp4_flops 0); use an fp8 recipe, or a Blackwell preset "
                "(b200-180, gb200-186, b300-288, gb300-288) or set peak_fp4_flops", dev->name);
        return MEM4D_E_CONFLICT;
    }
    if (x->dispatcher != MEM4D_MOE_DISPATCHER_DEEPEP && x->dispatcher != MEM4D_MOE_DISPATCHER_HYBRIDEP)
        return MEM4D_OK;
    uint64_t gpn = dv[MEM4D_DEVICE_GPUS_PER_NODE], group = m4d_ep_group(x);
    bool pre_hopper = dv[MEM4D_DEVICE_PEAK_FLOPS] != 0 && dv[MEM4D_DEVICE_PEAK_FP8_FLOPS] == 0;
    if (x->dispatcher == MEM4D_MOE_DISPATCHER_HYBRIDEP) {
        if (m4d_device_rocm(dev)) {
            m4d_msg(why, n, "HybridEP is CUDA code for NVIDIA GPUs (TMA copies over NVLink) with no ROCm port, and "
                    "%s is an AMD GPU; use deepep (ROCm/DeepEP) or alltoall", dev->name);
            return MEM4D_E_CONFLICT;
        }
        if (pre_hopper) {
            m4d_msg(why, n, "HybridEP's kernels copy with the TMA (cp.async.bulk), which GPUs before Hopper lack, and "
                    "a device with no fp8 peak (peak_fp8_flops 0: an A100) is one; use deepep or alltoall, or set "
                    "peak_fp8_flops for a Hopper or later");
            return MEM4D_E_CONFLICT;
        }
        return MEM4D_OK;
    }
    uint64_t most = gpn && gpn < DEEPEP_NVL_PEERS ? gpn : DEEPEP_NVL_PEERS;
    if (pre_hopper && group > most) {
        m4d_msg(why, n, "DeepEP before Hopper (no fp8 peak, peak_fp8_flops 0: an A100) builds without NVSHMEM and "
                "runs its intranode kernels alone, an ep x etp group of at most %llu ranks on one node, not %llu; "
                "use alltoall, or set peak_fp8_flops for a Hopper", U(most), U(group));
        return MEM4D_E_CONFLICT;
    }
    if (gpn && gpn < DEEPEP_NVL_PEERS && group > gpn) {
        m4d_msg(why, n, "DeepEP's normal kernels do not run an ep x etp group of %llu ranks over nodes of %llu GPUs "
                "(it needs one node, or 8 GPUs a node: a GB200 NVL72 tray holds 4; DeepEP issue 579); use "
                "hybridep or alltoall", U(group), U(gpn));
        return MEM4D_E_CONFLICT;
    }
    return MEM4D_OK;
}

/* The MoE token dispatcher and the Megatron-Core features around it
 * (transformer_config.py __post_init__, token_dispatcher.py). */
static mem4d_status check_moe_dispatch(const struct m4d_ctx *x, char *why, size_t n)
{
    static const char *const names[] = {"alltoall", "allgather", "deepep", "hybridep"};
    bool flex = x->dispatcher == MEM4D_MOE_DISPATCHER_DEEPEP || x->dispatcher == MEM4D_MOE_DISPATCHER_HYBRIDEP;
    uint64_t group = m4d_ep_group(x);
    if (!x->experts && (x->dispatcher || x->pad_multiple || x->ep_overlap)) {
        m4d_msg(why, n, "%s needs a mixture-of-experts model",
                x->dispatcher ? "moe_dispatcher" : x->pad_multiple ? "moe_pad_multiple" : "moe_ep_overlap");
        return MEM4D_E_EXPERTS;
    }
    if (flex && group < 2) {
        m4d_msg(why, n, "moe_dispatcher %s (the flex dispatcher) needs ep x etp > 1", names[x->dispatcher]);
        return MEM4D_E_CONFLICT;
    }
    if (x->dispatcher == MEM4D_MOE_DISPATCHER_DEEPEP && !m4d_deepep_group_ok(group)) {
        m4d_msg(why, n, "DeepEP has no configuration for ep x etp = %llu ranks (2, 4, 8, 16, 24, 32, 64, 128, "
                "144 or 160)", U(group));
        return MEM4D_E_CONFLICT;
    }
    if (x->dispatcher == MEM4D_MOE_DISPATCHER_DEEPEP && x->cap_pad) {
        m4d_msg(why, n, "moe_pad_to_capacity does not work with the DeepEP dispatcher (Megatron-Core refuses it)");
        return MEM4D_E_CONFLICT;
    }
    if (x->imbalance_ppm && x->imbalance_ppm < 1000000) {
        m4d_msg(why, n, "moe_imbalance_ppm %llu is below 1000000 (the busiest rank's rows over the mean; 0 derives "
                "it)", U(x->imbalance_ppm));
        return MEM4D_E_RANGE;
    }
    if (x->dispatcher_sms % 2) {
        m4d_msg(why, n, "moe_dispatcher_sms %llu must be even (DeepEP pairs them into channels)",
                U(x->dispatcher_sms));
        return MEM4D_E_RANGE;
    }
    if (x->pad_multiple && (!x->fp8 || x->dispatcher == MEM4D_MOE_DISPATCHER_ALLGATHER)) {
        m4d_msg(why, n, "moe_pad_multiple needs fp8 and a dispatcher other than allgather (Megatron-Core's "
                "--moe-router-padding-for-quantization)");
        return MEM4D_E_CONFLICT;
    }
    if (x->ep_overlap) {
        if (x->ep < 2 || x->dispatcher == MEM4D_MOE_DISPATCHER_ALLGATHER) {
            m4d_msg(why, n, "moe_ep_overlap needs ep > 1 and the alltoall or flex dispatcher");
            return MEM4D_E_CONFLICT;
        }
        if (x->p > 1 && x->v < 2) {
            m4d_msg(why, n, "moe_ep_overlap with pp %llu needs vpp > 1 (Megatron-Core combines the forward and "
                    "backward steps in the interleaved schedule only)", U(x->p));
            return MEM4D_E_CONFLICT;
        }
    }
    if (x->delay_wgrad && !x->ep_overlap) {
        m4d_msg(why, n, "delay_wgrad needs moe_ep_overlap (Megatron-Core delays weight gradients only there)");
        return MEM4D_E_CONFLICT;
    }
    if (x->fp32_residual && x->param_bytes != 2) {
        m4d_msg(why, n, "fp32_residual needs 2-byte (bf16/fp16) parameters");
        return MEM4D_E_CONFLICT;
    }
    if (x->fsdp_double && x->zero < 2) {
        m4d_msg(why, n, "fsdp_double_buffer needs Megatron FSDP (zero_stage 2 or 3)");
        return MEM4D_E_CONFLICT;
    }
    if (x->offload_modules) {
        uint64_t om = x->offload_modules;
        const char *bad = x->act_offload ? "contradicts activation_offload_layers (Megatron-Core refuses both)"
                        : (om & M4D_OFFLOAD_ATTN_PROJ) && !(om & M4D_OFFLOAD_CORE_ATTN)
                            ? "offloads attn_proj without core_attn (its input is core_attn's output)"
                        : !x->experts && (om & (M4D_OFFLOAD_EXPERT_FC1 | M4D_OFFLOAD_MOE_ACT))
                            ? "names expert_fc1 or moe_act for a model without experts"
                        : x->cuda_graph == MEM4D_CUDA_GRAPH_TRANSFORMER_ENGINE &&
                                  (om & (M4D_OFFLOAD_ATTN_NORM | M4D_OFFLOAD_MLP_NORM))
                            ? "offloads a norm's input across CUDA graph boundaries"
                        : x->cuda_graph == MEM4D_CUDA_GRAPH_LOCAL && (om & ~(uint64_t)(M4D_OFFLOAD_EXPERT_FC1 |
                                                                                     M4D_OFFLOAD_MOE_ACT))
                            ? "offloads modules local CUDA graphs do not support (expert_fc1 and moe_act only)"
                            : NULL;
        if (bad) {
            m4d_msg(why, n, "offload_modules %s", bad);
            return MEM4D_E_CONFLICT;
        }
    }
    if (x->defer_emb_wgrad && x->p < 2) {
        m4d_msg(why, n, "defer_embedding_wgrad needs pipeline parallelism (as Megatron-Core)");
        return MEM4D_E_CONFLICT;
    }
    if (x->cuda_graph && x->act_offload) {
        m4d_msg(why, n, "cuda_graph does not work with activation offloading (Megatron-Core refuses it)");
        return MEM4D_E_CONFLICT;
    }
    if (x->ep_overlap && x->cuda_graph && x->cuda_graph != MEM4D_CUDA_GRAPH_FULL_ITERATION &&
        (x->graph_scope == 0 || (x->graph_scope & (M4D_GRAPH_MLP | M4D_GRAPH_MOE)))) {
        m4d_msg(why, n, "moe_ep_overlap does not work with CUDA graphs over the MLP or MoE (cuda_graph_scope must "
                "leave out mlp and moe)");
        return MEM4D_E_CONFLICT;
    }
    return MEM4D_OK;
}

bool m4d_recompute_mode_ok(const struct m4d_ctx *x, char *why, size_t n)
{
    bool full = x->recompute == 2, moe_module = x->recompute == 1 && (x->rc_modules & M4D_RC_MOE);
    bool layer_graphs = x->cuda_graph && x->cuda_graph != MEM4D_CUDA_GRAPH_FULL_ITERATION;
    if (!m4d_param_applies(&m4d_layout_params[MEM4D_LAYOUT_RECOMPUTE], x->recompute, x->fw, MEM4D_MODE_FULL, why, n))
        return false;
    if (x->rc_every > 1 && !full)
        m4d_msg(why, n, "recompute_every %llu needs recompute full", U(x->rc_every));
    else if (x->act_offload && x->recompute)
        m4d_msg(why, n, "activation_offload_layers needs no recomputation (Megatron-Core refuses both)");
    else if (layer_graphs && full)
        m4d_msg(why, n, "cuda_graph %s does not work with full recompute (only full_iteration does)",
                mem4d_layout_value_name(MEM4D_LAYOUT_CUDA_GRAPH, x->cuda_graph));
    else if (x->ep_overlap && (full || moe_module))
        m4d_msg(why, n, "moe_ep_overlap does not work with full recompute or the moe recompute module");
    else if (moe_module && (x->offload_modules & (M4D_OFFLOAD_EXPERT_FC1 | M4D_OFFLOAD_MOE_ACT)))
        m4d_msg(why, n, "offload_modules offloads inside the MoE layer the moe recompute module re-runs whole");
    else
        return true;
    return false;
}

static mem4d_status check_misc(struct m4d_ctx *x, char *why, size_t n)
{
    mem4d_status st;
    if (x->ep > 1 && x->experts == 0) {
        m4d_msg(why, n, "ep %llu needs a mixture-of-experts model", U(x->ep));
        return MEM4D_E_EXPERTS;
    }
    /* LatentMoE is Megatron-Core's (--moe-latent-size) and transformers' alone */
    if (x->latent && x->experts && x->fw != MEM4D_FRAMEWORK_MEGATRON) {
        m4d_msg(why, n, "a latent mixture of experts (moe_latent_size %llu) is modelled as Megatron-Core trains "
                "it (framework megatron)", U(x->latent));
        return MEM4D_E_UNSUPPORTED;
    }
    /* The experts fold over the t·d·c ranks of a stage: ep·etp of them hold
     * distinct expert shards, the others replicate them (expert data
     * parallelism); with etp = t this is "ep divides dp x cp". */
    uint64_t tdc = x->t * x->d * x->c;
    if (x->experts && (x->experts % x->ep != 0 || tdc % m4d_ep_group(x) != 0)) {
        if (x->etp == x->t)
            m4d_msg(why, n, "%llu experts over ep %llu: ep must divide the experts and dp x cp = %llu",
                    U(x->experts), U(x->ep), U(x->d * x->c));
        else
            m4d_msg(why, n, "%llu experts over ep %llu x etp %llu: ep must divide the experts and ep x etp "
                    "tp x dp x cp = %llu", U(x->experts), U(x->ep), U(x->etp), U(tdc));
        return MEM4D_E_EXPERTS;
    }
    if (!x->experts && x->etp != x->t) {
        m4d_msg(why, n, "etp %llu needs a mixture-of-experts model", U(x->etp));
        return MEM4D_E_EXPERTS;
    }
    if ((st = check_framework(x, why, n)) != MEM4D_OK || (st = check_moe_dispatch(x, why, n)) != MEM4D_OK)
        return st;
    if (!m4d_recompute_mode_ok(x, why, n))
        return MEM4D_E_CONFLICT;
    if (!m4d_recompute_layers_ok(x)) {
        m4d_msg(why, n, "recompute_num_layers %llu exceeds the %llu layers of a pipeline stage",
                U(x->rc_layers), U(x->L / x->p));
        return MEM4D_E_CONFLICT;
    }
    /* Megatron pads the vocabulary (_vocab_size_with_padding); torchtitan,
     * DeepSpeed's HF models and nanotron's Llama use it as it is. */
    uint64_t unit = x->fw == MEM4D_FRAMEWORK_MEGATRON ? x->vocab_div * x->t : 1;
    x->Vp = x->V;
    if (x->mode == MEM4D_MODE_FULL && !m4d_mul(m4d_ceil_div(x->V, unit), unit, &x->Vp)) {
        m4d_msg(why, n, "padded vocabulary overflows");
        return MEM4D_E_RANGE;
    }
    return MEM4D_OK;
}

mem4d_status m4d_resolve(const mem4d_model *model, const mem4d_layout *layout,
                         struct m4d_ctx *x, char *why, size_t n)
{
    return m4d_resolve_memo(model, layout, x, why, n, NULL);
}

mem4d_status m4d_resolve_memo(const mem4d_model *model, const mem4d_layout *layout, struct m4d_ctx *x,
                              char *why, size_t n, struct m4d_resolve_memo *memo)
{
    memset(x, 0, sizeof *x);
    if (why && n)
        why[0] = '\0'; /* cheap: the search resolves once per group */
    mem4d_status st = m4d_model_check(model, why, n);
    if (st != MEM4D_OK)
        return st;
    m4d_ctx_model(model, x);
    ctx_layout(layout, x);
    if (x->s == 0) {
        m4d_msg(why, n, "sequence length (seq) is not set");
        return MEM4D_E_MISSING;
    }
    /* Where each key applies is in its row (params.c): a key set for a
     * framework that does not model it is refused here; what paper mode
     * does not model is refused when it estimates (the search varies
     * recompute itself, m4d_recompute_mode_ok()). */
    if (m4d_params_apply(m4d_layout_params, M4D_LAYOUT_NPARAM, layout->v, -1, x->fw, MEM4D_MODE_FULL, why, n) >= 0)
        return MEM4D_E_CONFLICT;
    if (x->mode == MEM4D_MODE_PAPER) {
        int k = m4d_params_apply(m4d_model_params, M4D_MODEL_NPARAM, model->v, -1, x->fw, x->mode, NULL, 0);
        if (k >= 0) {
            x->paper_row = &m4d_model_params[k];
            x->paper_value = model->v[k];
        } else if ((k = m4d_params_apply(m4d_layout_params, M4D_LAYOUT_NPARAM, layout->v, MEM4D_LAYOUT_RECOMPUTE,
                                         x->fw, x->mode, NULL, 0)) >= 0) {
            x->paper_row = &m4d_layout_params[k];
            x->paper_value = layout->v[k];
        }
    }
    if ((st = check_world(x, why, n)) != MEM4D_OK || (st = check_tp(x, why, n)) != MEM4D_OK ||
        (st = m4d_split_check(&x->split, why, n)) != MEM4D_OK || (st = check_seq_batch(x, why, n)) != MEM4D_OK ||
        (st = m4d_pattern_layout_check(x, why, n)) != MEM4D_OK || (st = check_misc(x, why, n)) != MEM4D_OK)
        return st;
    x->routed_imb_ppm = m4d_moe_imbalance_ppm(x);
    /* the model's size depends on the model and V_p alone: once per resolve
     * (or per V_p of a search), not per estimate */
    if (memo && memo->have && memo->Vp == x->Vp) {
        x->params_total_ok = memo->ok;
        x->params_total = memo->total;
        return MEM4D_OK;
    }
    x->params_total_ok = m4d_model_params_total(x, x->Vp, &x->params_total);
    if (memo)
        *memo = (struct m4d_resolve_memo){true, x->params_total_ok, x->Vp, x->params_total};
    return MEM4D_OK;
}

mem4d_status mem4d_validate(const mem4d_model *model, const mem4d_layout *layout, char *why, size_t why_size)
{
    if (!model || !layout) {
        m4d_msg(why, why_size, "the %s is NULL", !model ? "model" : "layout");
        return MEM4D_E_INVALID_ARG;
    }
    struct m4d_ctx x;
    return m4d_resolve(model, layout, &x, why, why_size);
}
