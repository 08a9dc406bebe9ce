/*
 * Layout -> Megatron-LM flags: the inverse of the argument reader, for a
 * proposal a user can paste into a launch script (the CLI's check, the
 * admission hook, the SLURM plugin, the web page).
 *
 * The line targets Megatron-Core 0.16 (core_v0.16.0, 2026-02) and later, the
 * release whose defaults and spellings the reader takes: a flag is written
 * only where its value is not that release's default, so the line is the
 * fewest flags that set the layout, and older releases take every line that
 * does not need a newer flag. The expert flags (NVIDIA/Megatron-LM, the
 * commit that added each to megatron/training/arguments.py, and the first
 * release with it):
 *   --expert-model-parallel-size   e8c22152 (2023-10, core_v0.4.0), default 1;
 *   --moe-token-dispatcher-type    9208adbd (2024-03, core_v0.6.0), default
 *                                  allgather; flex since 0d389f5e (2025-02,
 *                                  core_v0.12.0), there only with
 *                                  --moe-enable-deepep;
 *   --expert-tensor-parallel-size  7f22e210 (2024-11, core_v0.10.0), default
 *                                  None, which validate_args (and, since
 *                                  core_v0.16.0, ModelParallelConfig) sets to
 *                                  --tensor-model-parallel-size, in every
 *                                  release to d98e8a64;
 *   --moe-flex-dispatcher-backend  3df20090 (2025-11, core_v0.16.0), default
 *                                  deepep; --moe-enable-deepep (0d389f5e) is
 *                                  its deprecated older spelling of deepep,
 *                                  not written.
 * So etp equal to tp, ep 1 and allgather write nothing, and DeepEP is
 * "--moe-token-dispatcher-type flex" (core_v0.12 to 0.15 refuse it without
 * --moe-enable-deepep; HybridEP needs 0.16 anyway).
 *
 * Since the line leaves out what is off or at the defaults, it replaces the
 * job's flags rather than being appended to them: megatron_args.h lists
 * every job flag it replaces (a flag written here is added there;
 * test-megatron-args checks it).
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "megatron.h"

static unsigned long long lv(const mem4d_layout *l, mem4d_layout_param k)
{
    return (unsigned long long)l->v[k];
}

/* The parallel sizes and the batch, always written, so that the line
 * replaces whatever the job said; for a model with experts etp where it is
 * not tp (Megatron's default; 0 is the layout's "as tp"). */
static void put_sizes(struct m4d_out *o, const mem4d_model *m, const mem4d_layout *l)
{
    m4d_put(o, "--tensor-model-parallel-size %llu --context-parallel-size %llu "
           "--pipeline-model-parallel-size %llu",
        lv(l, MEM4D_LAYOUT_TP), lv(l, MEM4D_LAYOUT_CP), lv(l, MEM4D_LAYOUT_PP));
    if (lv(l, MEM4D_LAYOUT_EP) > 1)
        m4d_put(o, " --expert-model-parallel-size %llu", lv(l, MEM4D_LAYOUT_EP));
    if (m->v[MEM4D_MODEL_NUM_EXPERTS] && lv(l, MEM4D_LAYOUT_ETP) && lv(l, MEM4D_LAYOUT_ETP) != lv(l, MEM4D_LAYOUT_TP))
        m4d_put(o, " --expert-tensor-parallel-size %llu", lv(l, MEM4D_LAYOUT_ETP));
    m4d_put(o, " --micro-batch-size %llu", lv(l, MEM4D_LAYOUT_MICRO_BATCH));
    if (lv(l, MEM4D_LAYOUT_GLOBAL_BATCH))
        m4d_put(o, " --global-batch-size %llu", lv(l, MEM4D_LAYOUT_GLOBAL_BATCH));
    if (lv(l, MEM4D_LAYOUT_SEQ_LENGTH))
        m4d_put(o, " --seq-length %llu", lv(l, MEM4D_LAYOUT_SEQ_LENGTH));
}


static void put_memory_switches(struct m4d_out *o, const mem4d_model *m, const mem4d_layout *l)
{
    static const char *const sharding[] = {"no_shard", "optim", "optim_grads", "optim_grads_params"};
    /* the dispatcher, which the search varies too: allgather is the default,
     * flex's backend deepep (see the top of this file) */
    static const char *const dispatcher[] = {
        [MEM4D_MOE_DISPATCHER_ALLTOALL] = " --moe-token-dispatcher-type alltoall",
        [MEM4D_MOE_DISPATCHER_ALLGATHER] = "",
        [MEM4D_MOE_DISPATCHER_DEEPEP] = " --moe-token-dispatcher-type flex",
        [MEM4D_MOE_DISPATCHER_HYBRIDEP] = " --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep",
    };
    if (m->v[MEM4D_MODEL_NUM_EXPERTS] && lv(l, MEM4D_LAYOUT_MOE_DISPATCHER) < sizeof dispatcher / sizeof *dispatcher)
        m4d_put(o, "%s", dispatcher[lv(l, MEM4D_LAYOUT_MOE_DISPATCHER)]);
    if (lv(l, MEM4D_LAYOUT_TP) > 1 && lv(l, MEM4D_LAYOUT_SEQUENCE_PARALLEL))
        m4d_put(o, " --sequence-parallel");
    if (lv(l, MEM4D_LAYOUT_ZERO_STAGE) >= 2)
        m4d_put(o, " --use-megatron-fsdp --data-parallel-sharding-strategy %s",
            sharding[lv(l, MEM4D_LAYOUT_ZERO_STAGE)]);
    else if (lv(l, MEM4D_LAYOUT_DIST_OPT) || lv(l, MEM4D_LAYOUT_ZERO_STAGE) == 1)
        m4d_put(o, " --use-distributed-optimizer");
    if (lv(l, MEM4D_LAYOUT_ACTIVATION_OFFLOAD_LAYERS))
        m4d_put(o, " --cpu-offloading-num-layers %llu", lv(l, MEM4D_LAYOUT_ACTIVATION_OFFLOAD_LAYERS));
    if (lv(l, MEM4D_LAYOUT_DIST_OPT_INSTANCES) > 1)
        m4d_put(o, " --num-distributed-optimizer-instances %llu", lv(l, MEM4D_LAYOUT_DIST_OPT_INSTANCES));
    if (lv(l, MEM4D_LAYOUT_MOE_CAPACITY_FACTOR_PPM)) {
        /* millionths as a decimal, without printf's locale-dependent point */
        unsigned long long ppm = lv(l, MEM4D_LAYOUT_MOE_CAPACITY_FACTOR_PPM), frac = ppm % 1000000;
        int digits = 6;
        for (; digits > 0 && frac % 10 == 0; digits--)
            frac /= 10;
        if (digits)
            m4d_put(o, " --moe-expert-capacity-factor %llu.%0*llu", ppm / 1000000, digits, frac);
        else
            m4d_put(o, " --moe-expert-capacity-factor %llu", ppm / 1000000);
        if (lv(l, MEM4D_LAYOUT_MOE_PAD_TO_CAPACITY))
            m4d_put(o, " --moe-pad-expert-input-to-capacity");
    }
    if (lv(l, MEM4D_LAYOUT_OPTIMIZER_MOMENTS) < 2)
        m4d_put(o, lv(l, MEM4D_LAYOUT_OPTIMIZER_MOMENTS) ? " --optimizer sgd" : " --optimizer sgd --sgd-momentum 0");
    if (lv(l, MEM4D_LAYOUT_OVERLAP_GRAD_REDUCE))
        m4d_put(o, " --overlap-grad-reduce");
    if (lv(l, MEM4D_LAYOUT_OVERLAP_PARAM_GATHER))
        m4d_put(o, " --overlap-param-gather");
    if (lv(l, MEM4D_LAYOUT_TP_COMM_OVERLAP) && lv(l, MEM4D_LAYOUT_TP) > 1)
        m4d_put(o, " --tp-comm-overlap");
    /* Megatron-LM overlaps the interleaved schedule's transfers by default
     * (core_r0.4 on; the reader's rule, import_megatron.c): off is a flag */
    if (!lv(l, MEM4D_LAYOUT_OVERLAP_P2P_COMM) && lv(l, MEM4D_LAYOUT_VPP) > 1 && lv(l, MEM4D_LAYOUT_PP) > 1)
        m4d_put(o, " --no-overlap-p2p-communication");
    if (lv(l, MEM4D_LAYOUT_CP_COMM_TYPE) == 1 && lv(l, MEM4D_LAYOUT_CP) > 1) /* TE's name, not --help's "allgather" */
        m4d_put(o, " --cp-comm-type all_gather");
    if (lv(l, MEM4D_LAYOUT_RECOMPUTE) == 1) {
        m4d_put(o, " --recompute-granularity selective");
    } else if (lv(l, MEM4D_LAYOUT_RECOMPUTE) == 2) {
        unsigned long long layers = lv(l, MEM4D_LAYOUT_RECOMPUTE_LAYERS);
        unsigned long long p = lv(l, MEM4D_LAYOUT_PP), v = lv(l, MEM4D_LAYOUT_VPP);
        if (layers == 0) { /* every layer of a chunk: uniform over chunks of at most this many */
            unsigned long long L = (unsigned long long)m->v[MEM4D_MODEL_NUM_LAYERS];
            layers = p && v ? (L + p * v - 1) / (p * v) : 1;
            /* but no more than the reader takes back (m4d_recompute_layers_ok:
             * at most L/p) when uneven stages round it up */
            if (p && layers > L / p)
                layers = L / p;
        }
        m4d_put(o, " --recompute-granularity full --recompute-method %s --recompute-num-layers %llu",
            lv(l, MEM4D_LAYOUT_RECOMPUTE_METHOD) ? "block" : "uniform", layers ? layers : 1);
        /* the checkpoints split over tp (Megatron refuses it otherwise) */
        if (lv(l, MEM4D_LAYOUT_DISTRIBUTE_SAVED_ACTIVATIONS) && lv(l, MEM4D_LAYOUT_TP) > 1)
            m4d_put(o, " --distribute-saved-activations");
    }
}

MEM4D_API mem4d_status mem4d_layout_megatron_args(const mem4d_model *model, const mem4d_layout *layout,
                                                  char *buf, size_t size, size_t *length)
{
    if (!model || !layout || (!buf && size))
        return MEM4D_E_INVALID_ARG;
    struct m4d_out o = {buf, size, 0};
    put_sizes(&o, model, layout);
    m4d_megatron_put_pipeline(&o, model, layout);
    put_memory_switches(&o, model, layout);
    if (length)
        *length = o.len;
    if (o.len >= size) {
        if (size)
            buf[0] = '\0';
        return MEM4D_E_RANGE;
    }
    return MEM4D_OK;
}
