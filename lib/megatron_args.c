/*
 * Layout -> Megatron-LM flags: the inverse of the argument reader, for a
 * proposal a user can paste into a launch script (the CLI's check, the
 * admission hook, the SLURM plugin, the web page).
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
 * replaces whatever the job said; for a model with experts the experts'
 * sizes too (Megatron takes ep 1 and etp = tp when their flags are absent,
 * whatever the layout the search proposed). */
static void put_sizes(struct m4d_out *o, const mem4d_model *m, const mem4d_layout *l)
{
    m4d_put(o, "--tensor-model-parallel-size %llu --context-parallel-size %llu "
           "--pipeline-model-parallel-size %llu",
        lv(l, MEM4D_LAYOUT_TP), lv(l, MEM4D_LAYOUT_CP), lv(l, MEM4D_LAYOUT_PP));
    if (m->v[MEM4D_MODEL_NUM_EXPERTS])
        m4d_put(o, " --expert-model-parallel-size %llu --expert-tensor-parallel-size %llu", lv(l, MEM4D_LAYOUT_EP),
            lv(l, MEM4D_LAYOUT_ETP) ? lv(l, MEM4D_LAYOUT_ETP) : lv(l, MEM4D_LAYOUT_TP));
    else if (lv(l, MEM4D_LAYOUT_EP) > 1)
        m4d_put(o, " --expert-model-parallel-size %llu", lv(l, MEM4D_LAYOUT_EP));
    m4d_put(o, " --micro-batch-size %llu", lv(l, MEM4D_LAYOUT_MICRO_BATCH));
    if (lv(l, MEM4D_LAYOUT_GLOBAL_BATCH))
        m4d_put(o, " --global-batch-size %llu", lv(l, MEM4D_LAYOUT_GLOBAL_BATCH));
    if (lv(l, MEM4D_LAYOUT_SEQ_LENGTH))
        m4d_put(o, " --seq-length %llu", lv(l, MEM4D_LAYOUT_SEQ_LENGTH));
}


static void put_memory_switches(struct m4d_out *o, const mem4d_model *m, const mem4d_layout *l)
{
    static const char *const sharding[] = {"no_shard", "optim", "optim_grads", "optim_grads_params"};
    /* the dispatcher, which the search varies too (Megatron's default is
     * allgather; flex runs the backend named) */
    static const char *const dispatcher[] = {
        [MEM4D_MOE_DISPATCHER_ALLTOALL] = "alltoall",
        [MEM4D_MOE_DISPATCHER_ALLGATHER] = "allgather",
        [MEM4D_MOE_DISPATCHER_DEEPEP] = "flex --moe-flex-dispatcher-backend deepep",
        [MEM4D_MOE_DISPATCHER_HYBRIDEP] = "flex --moe-flex-dispatcher-backend hybridep",
    };
    if (m->v[MEM4D_MODEL_NUM_EXPERTS] && lv(l, MEM4D_LAYOUT_MOE_DISPATCHER) < sizeof dispatcher / sizeof *dispatcher)
        m4d_put(o, " --moe-token-dispatcher-type %s", dispatcher[lv(l, MEM4D_LAYOUT_MOE_DISPATCHER)]);
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
