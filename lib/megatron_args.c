/*
 * Layout -> Megatron-LM flags: the inverse of the argument reader, for a
 * proposal a user can paste into a launch script (the CLI's check, the
 * admission hook, the SLURM plugin, the web page).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "private.h"

/* A bounded writer: remembers the whole length even past the end of buf. */
struct out {
    char *buf;
    size_t size, len;
};

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->size ? o->size - o->len : 0;
    int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

static unsigned long long lv(const mem4d_layout *l, mem4d_layout_param k)
{
    return (unsigned long long)l->v[k];
}

/* The parallel sizes and the batch, always written, so that the line
 * replaces whatever the job said. */
static void put_sizes(struct out *o, const mem4d_layout *l)
{
    put(o, "--tensor-model-parallel-size %llu --context-parallel-size %llu "
           "--pipeline-model-parallel-size %llu",
        lv(l, MEM4D_LAYOUT_TP), lv(l, MEM4D_LAYOUT_CP), lv(l, MEM4D_LAYOUT_PP));
    if (lv(l, MEM4D_LAYOUT_EP) > 1)
        put(o, " --expert-model-parallel-size %llu", lv(l, MEM4D_LAYOUT_EP));
    put(o, " --micro-batch-size %llu", lv(l, MEM4D_LAYOUT_MICRO_BATCH));
    if (lv(l, MEM4D_LAYOUT_GLOBAL_BATCH))
        put(o, " --global-batch-size %llu", lv(l, MEM4D_LAYOUT_GLOBAL_BATCH));
    if (lv(l, MEM4D_LAYOUT_SEQ_LENGTH))
        put(o, " --seq-length %llu", lv(l, MEM4D_LAYOUT_SEQ_LENGTH));
}

/* Layers of virtual stage k of S: the layer table's entry, or with
 * shorter first/last virtual stages (L + cf + cl)/S less cf or cl at the
 * two ends. */
static unsigned long long vs_layers(const mem4d_layout *l, unsigned long long L, unsigned long long S,
                                    unsigned long long k)
{
    if (l->nvs)
        return l->vs[k];
    unsigned long long cf = lv(l, MEM4D_LAYOUT_FIRST_CHUNK_FEWER_LAYERS), cl = lv(l, MEM4D_LAYOUT_LAST_CHUNK_FEWER_LAYERS);
    return (L + cf + cl) / S - (k == 0 ? cf : 0) - (k == S - 1 ? cl : 0);
}

/* Megatron-Core's --pipeline-model-parallel-layout for S virtual stages: E
 * and L at the ends, MTP layers before the loss, each run of equal middle
 * stages as "(t*n|)*k", single-quoted for the shell (it holds | ( ) *). */
static void put_layout_string(struct out *o, const mem4d_model *m, const mem4d_layout *l, unsigned long long S)
{
    unsigned long long L = (unsigned long long)m->v[MEM4D_MODEL_NUM_LAYERS];
    put(o, " --pipeline-model-parallel-layout 'E");
    for (unsigned long long k = 0; k < S;) {
        unsigned long long n = vs_layers(l, L, S, k), run = 1;
        while (k > 0 && k + run < S - 1 && vs_layers(l, L, S, k + run) == n)
            run++;
        if (run > 1)
            put(o, "(");
        if (n)
            put(o, "t*%llu", n);
        if (run > 1)
            put(o, "|)*%llu", run);
        else if (k + 1 < S)
            put(o, "|");
        k += run;
    }
    for (uint64_t k = 0; k < m->v[MEM4D_MODEL_MTP_LAYERS]; k++)
        put(o, "m");
    put(o, "L'");
}

/* Uneven first/last stages and virtual chunks. Layers per virtual stage is
 * the older spelling every Megatron-LM reads; it needs an even split, so
 * uneven stages name the chunk count instead; a layer table and shorter
 * end virtual stages are written as a pipeline layout. */
static void put_pipeline(struct out *o, const mem4d_model *m, const mem4d_layout *l)
{
    unsigned long long first = lv(l, MEM4D_LAYOUT_FIRST_STAGE_LAYERS);
    unsigned long long last = lv(l, MEM4D_LAYOUT_LAST_STAGE_LAYERS);
    unsigned long long p = lv(l, MEM4D_LAYOUT_PP), v = lv(l, MEM4D_LAYOUT_VPP);
    unsigned long long L = (unsigned long long)m->v[MEM4D_MODEL_NUM_LAYERS];
    bool chunked = lv(l, MEM4D_LAYOUT_FIRST_CHUNK_FEWER_LAYERS) || lv(l, MEM4D_LAYOUT_LAST_CHUNK_FEWER_LAYERS);
    if (l->nvs || (chunked && p && v && p * v >= 2)) {
        put_layout_string(o, m, l, l->nvs ? l->nvs : p * v);
        return;
    }
    if (first)
        put(o, " --decoder-first-pipeline-num-layers %llu", first);
    if (last)
        put(o, " --decoder-last-pipeline-num-layers %llu", last);
    if (v <= 1)
        return;
    if (!first && !last && p && L % (p * v) == 0)
        put(o, " --num-layers-per-virtual-pipeline-stage %llu", L / (p * v));
    else
        put(o, " --num-virtual-stages-per-pipeline-rank %llu", v);
}

static void put_memory_switches(struct out *o, const mem4d_model *m, const mem4d_layout *l)
{
    static const char *const sharding[] = {"no_shard", "optim", "optim_grads", "optim_grads_params"};
    if (lv(l, MEM4D_LAYOUT_TP) > 1 && lv(l, MEM4D_LAYOUT_SEQUENCE_PARALLEL))
        put(o, " --sequence-parallel");
    if (lv(l, MEM4D_LAYOUT_ZERO_STAGE) >= 2)
        put(o, " --use-megatron-fsdp --data-parallel-sharding-strategy %s",
            sharding[lv(l, MEM4D_LAYOUT_ZERO_STAGE)]);
    else if (lv(l, MEM4D_LAYOUT_DIST_OPT) || lv(l, MEM4D_LAYOUT_ZERO_STAGE) == 1)
        put(o, " --use-distributed-optimizer");
    if (lv(l, MEM4D_LAYOUT_ACTIVATION_OFFLOAD_LAYERS))
        put(o, " --cpu-offloading-num-layers %llu", lv(l, MEM4D_LAYOUT_ACTIVATION_OFFLOAD_LAYERS));
    if (lv(l, MEM4D_LAYOUT_DIST_OPT_INSTANCES) > 1)
        put(o, " --num-distributed-optimizer-instances %llu", lv(l, MEM4D_LAYOUT_DIST_OPT_INSTANCES));
    if (lv(l, MEM4D_LAYOUT_MOE_CAPACITY_FACTOR_PPM)) {
        /* millionths as a decimal, without printf's locale-dependent point */
        unsigned long long ppm = lv(l, MEM4D_LAYOUT_MOE_CAPACITY_FACTOR_PPM), frac = ppm % 1000000;
        int digits = 6;
        for (; digits > 0 && frac % 10 == 0; digits--)
            frac /= 10;
        if (digits)
            put(o, " --moe-expert-capacity-factor %llu.%0*llu", ppm / 1000000, digits, frac);
        else
            put(o, " --moe-expert-capacity-factor %llu", ppm / 1000000);
        if (lv(l, MEM4D_LAYOUT_MOE_PAD_TO_CAPACITY))
            put(o, " --moe-pad-expert-input-to-capacity");
    }
    if (lv(l, MEM4D_LAYOUT_OPTIMIZER_MOMENTS) < 2)
        put(o, lv(l, MEM4D_LAYOUT_OPTIMIZER_MOMENTS) ? " --optimizer sgd" : " --optimizer sgd --sgd-momentum 0");
    if (lv(l, MEM4D_LAYOUT_OVERLAP_GRAD_REDUCE))
        put(o, " --overlap-grad-reduce");
    if (lv(l, MEM4D_LAYOUT_OVERLAP_PARAM_GATHER))
        put(o, " --overlap-param-gather");
    if (lv(l, MEM4D_LAYOUT_TP_COMM_OVERLAP) && lv(l, MEM4D_LAYOUT_TP) > 1)
        put(o, " --tp-comm-overlap");
    if (lv(l, MEM4D_LAYOUT_RECOMPUTE) == 1) {
        put(o, " --recompute-granularity selective");
    } else if (lv(l, MEM4D_LAYOUT_RECOMPUTE) == 2) {
        unsigned long long layers = lv(l, MEM4D_LAYOUT_RECOMPUTE_LAYERS);
        unsigned long long p = lv(l, MEM4D_LAYOUT_PP), v = lv(l, MEM4D_LAYOUT_VPP);
        if (layers == 0) /* every layer of a chunk: uniform over chunks of at most this many */
            layers = p && v ? ((unsigned long long)m->v[MEM4D_MODEL_NUM_LAYERS] + p * v - 1) / (p * v) : 1;
        put(o, " --recompute-granularity full --recompute-method %s --recompute-num-layers %llu",
            lv(l, MEM4D_LAYOUT_RECOMPUTE_METHOD) ? "block" : "uniform", layers ? layers : 1);
    }
}

MEM4D_API mem4d_status mem4d_layout_megatron_args(const mem4d_model *model, const mem4d_layout *layout,
                                                  char *buf, size_t size, size_t *length)
{
    if (!model || !layout || (!buf && size))
        return MEM4D_E_INVALID_ARG;
    struct out o = {buf, size, 0};
    put_sizes(&o, layout);
    put_pipeline(&o, model, layout);
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
