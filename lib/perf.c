/*
 * Step-time model: predicted seconds per optimizer step of a layout, used to
 * rank the layouts a search finds. doc/perf.md, "Step-time model", derives
 * every term; the symbols below are those of doc/formulas.md (t c p d b m s
 * v h f L a k V). Every constant is a device parameter with a documented
 * default, so a user can calibrate the model to a cluster.
 * SPDX-License-Identifier: MIT
 */
#include <math.h>

#include "private.h"

/* Link figures of one kind of collective path (intra- or inter-node). */
struct link {
    double bw;  /* bytes/s per GPU reached by collectives; 0: not modelled */
    double lat; /* seconds per collective step */
};

/* Per-device figures, in SI units, with the efficiencies applied. */
struct machine {
    double gemm;        /* FLOP/s reached by large GEMMs */
    double hbm;         /* bytes/s of HBM; 0: not modelled */
    double gpn;         /* GPUs per node */
    struct link intra, inter;
};

/* Work of one transformer layer for one micro-batch on one GPU. */
struct layer_work {
    double fwd;          /* forward FLOPs actually executed (causal attention) */
    double attn_core;    /* of which the attention core (QK^T and AV) */
    double weight_bytes; /* bytes of the layer's weights held by the GPU */
    double tp_bytes;     /* one TP collective's buffer: b*s*h/c activations */
    double cp_bytes;     /* one CP ring step: K and V of the local chunk */
};

/* Time of one pipeline stage's work for one micro-batch. */
struct stage_time {
    double compute; /* GEMMs, attention, recompute, weight streaming */
    double comm;    /* exposed TP, CP and pipeline send/recv */
};

static double ppm(uint64_t v) { return (double)v / 1e6; }

static struct machine machine_of(const struct m4d_ctx *x, const mem4d_device *dev)
{
    const uint64_t *dv = dev->v;
    double peak = (double)dv[MEM4D_DEVICE_PEAK_FLOPS];
    if (x->fp8 && dv[MEM4D_DEVICE_PEAK_FP8_FLOPS] != 0)
        peak = (double)dv[MEM4D_DEVICE_PEAK_FP8_FLOPS];
    double ce = ppm(dv[MEM4D_DEVICE_COMM_EFFICIENCY_PPM]);
    struct machine mc = {
        .gemm = peak * ppm(dv[MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM]),
        .hbm = (double)dv[MEM4D_DEVICE_HBM_BANDWIDTH],
        .gpn = (double)(dv[MEM4D_DEVICE_GPUS_PER_NODE] ? dv[MEM4D_DEVICE_GPUS_PER_NODE] : 1),
        .intra = {(double)dv[MEM4D_DEVICE_INTRA_NODE_BANDWIDTH] * ce,
                  (double)dv[MEM4D_DEVICE_INTRA_NODE_LATENCY_NS] * 1e-9},
        .inter = {(double)dv[MEM4D_DEVICE_INTER_NODE_BANDWIDTH] * ce,
                  (double)dv[MEM4D_DEVICE_INTER_NODE_LATENCY_NS] * 1e-9},
    };
    return mc;
}

/* Megatron orders ranks tp-cp-dp-pp: a group whose members span `span`
 * consecutive ranks stays inside a node when span <= GPUs per node. */
static const struct link *link_for(const struct machine *mc, double span)
{
    return span <= mc->gpn ? &mc->intra : &mc->inter;
}

/* Ring collective over n ranks moving `frac` of `bytes` per GPU in `steps`
 * latency-bound steps. A link without bandwidth is not modelled (0 s). */
static double ring_time(const struct link *l, double n, double bytes, double frac, double steps)
{
    if (n <= 1 || l->bw <= 0)
        return 0;
    return steps * l->lat + frac * bytes / l->bw;
}

/* Active MLP width: dense f, or top-k routed experts plus the shared one. */
static double mlp_width(const struct m4d_ctx *x)
{
    if (x->experts == 0)
        return (double)x->f;
    double fe = (double)(x->fe ? x->fe : x->f);
    return (double)x->topk * fe + (double)x->fs;
}

static struct layer_work layer_work_of(const struct m4d_ctx *x)
{
    double T = (double)x->b * (double)x->s;      /* tokens of one micro-batch */
    double h = (double)x->h, qd = (double)(x->a * x->dh), kvd = (double)(x->k * x->dh);
    double shard = (double)(x->t * x->c);        /* TP splits weights, CP tokens */
    double gm = x->gated ? 3 : 2;                /* MLP matrices */
    double wt = h * (qd + 2 * kvd) + qd * h + gm * h * mlp_width(x);
    struct layer_work w;
    /* Causal attention: flash kernels skip the masked half of s x s. */
    w.attn_core = 0.5 * 4 * T * (double)x->s * qd / shard;
    w.fwd = 2 * T * wt / shard + w.attn_core;
    w.weight_bytes = wt / (double)x->t * (double)x->param_bytes;
    w.tp_bytes = T * h * 2 / (double)x->c;
    w.cp_bytes = 2 * T / (double)x->c * kvd / (double)x->t * 2;
    return w;
}

/* One stage with n layers; `last` adds the LM head and the loss. */
static struct stage_time stage_time_of(const struct m4d_ctx *x, const struct machine *mc,
                                       const struct layer_work *w, double n, bool last)
{
    /* passes: forward + backward (twice the forward's FLOPs); comm_passes:
     * passes that run TP/CP collectives (forward, backward). Full
     * recompute runs the forward, and its collectives, once more. */
    double t = (double)x->t, c = (double)x->c, passes = 3, comm_passes = 2;
    if (x->recompute == 2) {
        passes = 4;
        comm_passes = 3;
    }
    double flops = n * passes * w->fwd;
    if (x->recompute == 1) /* selective: the attention core runs again */
        flops += n * w->attn_core;
    double logit = 2 * (double)x->b * (double)x->s * (double)x->h * (double)x->Vp / (t * c);
    if (last)
        flops += 3 * logit;
    struct stage_time st = {flops / mc->gemm, 0};
    /* Weights stream from HBM once per pass; fp32 main gradients are read
     * and written once per micro-batch (roofline terms, not hidden). */
    if (mc->hbm > 0)
        st.compute += n * w->weight_bytes * (3 + 2.0 * (double)x->grad_bytes / (double)x->param_bytes)
                      / mc->hbm;
    /* TP with sequence parallelism: 2 all-gathers + 2 reduce-scatters per
     * layer in each pass (all-reduces without SP move the same bytes);
     * exposed, as Megatron does not overlap them by default. */
    double tp = ring_time(link_for(mc, t), t, w->tp_bytes, (t - 1) / t, t - 1);
    st.comm += n * 4 * comm_passes * tp;
    /* CP ring attention: c-1 steps of K,V per forward, K,V and dK,dV per
     * backward. The transfers hide behind the attention core when it is
     * longer; each step's latency is a synchronisation and never hides. */
    if (c > 1) {
        const struct link *cl = link_for(mc, t * c);
        double xfer = cl->bw > 0 ? w->cp_bytes / cl->bw : 0, core = w->attn_core / mc->gemm;
        double cp_fwd = (c - 1) * cl->lat + fmax(0, (c - 1) * xfer - core);
        double cp_bwd = (c - 1) * cl->lat + fmax(0, 2 * (c - 1) * xfer - 2 * core);
        st.comm += n * ((comm_passes - 1) * cp_fwd + cp_bwd);
    }
    return st;
}

/* Pipeline send/recv of one micro-batch's activations, forward and backward,
 * once per model chunk the rank holds. */
static double p2p_time(const struct m4d_ctx *x, const struct machine *mc)
{
    if (x->p <= 1)
        return 0;
    double bytes = (double)x->b * (double)x->s * (double)x->h * 2 / (double)(x->t * x->c);
    double span = (double)(x->t * x->c * x->d * x->p);
    return 2 * (double)x->v * ring_time(link_for(mc, span), 2, bytes, 1, 1);
}

/* Layers of the first, a middle and the last stage (uneven first/last
 * stages as Megatron's decoder_{first,last}_pipeline_num_layers). */
static void stage_layers(const struct m4d_ctx *x, double *first, double *mid, double *last)
{
    uint64_t fl = x->p > 1 ? x->first_layers : 0, ll = x->p > 1 ? x->last_layers : 0;
    uint64_t rest_n = x->p - (fl != 0) - (ll != 0), rest_l = x->L - fl - ll;
    double per = rest_n ? (double)rest_l / (double)rest_n : 0;
    *first = fl ? (double)fl : per;
    *last = ll ? (double)ll : per;
    *mid = per;
}

/* Megatron's model FLOPs per step (training.py, num_floating_point_operations,
 * the --log-throughput figure): 3 passes, full s x s attention, no recompute. */
static double model_flops(const struct m4d_ctx *x)
{
    double s = (double)x->s, h = (double)x->h, qd = (double)(x->a * x->dh), kvd = (double)(x->k * x->dh);
    double gm = x->gated ? 3 : 2;
    double layer = 2 * s * h * (2 * qd + 2 * kvd) + 4 * s * s * qd + 2 * s * h * gm * mlp_width(x);
    return 3 * (double)x->gbs * ((double)x->L * layer + 2 * s * h * (double)x->Vp);
}

/* Gradient reduction and parameter gather over the d*c ranks that share
 * weights, plus the optimizer step; returns exposed seconds. */
static double dp_time(const struct m4d_ctx *x, const struct machine *mc, double params,
                      double bwd_window, double fwd_window, double *opt_s)
{
    double n = (double)(x->d * x->c), frac = (n - 1) / n;
    const struct link *l = link_for(mc, (double)(x->t * x->c * x->d));
    double bucket = (double)x->bucket;
    if (bucket == 0) /* Megatron: max(40M, 1M x dp) elements */
        bucket = fmax(40e6, 1e6 * n);
    double colls = ceil(params / bucket), steps = colls * 2 * ceil(log2(fmax(n, 2)));
    double g = params * (double)x->grad_bytes, w = params * (double)x->param_bytes;
    double reduce, gather = 0;
    if (x->zero >= 1) {
        reduce = ring_time(l, n, g, frac, steps);
        gather = ring_time(l, n, w, frac, steps);
    } else {
        reduce = ring_time(l, n, g, 2 * frac, 2 * steps);
    }
    if (x->overlap_grad)
        reduce = fmax(0, reduce - bwd_window);
    if (x->overlap_param)
        gather = fmax(0, gather - fwd_window);
    /* Adam is memory-bound: read the gradient, read and write master
     * weights and both moments, write the bf16 weights. */
    double shard = x->zero >= 1 ? params / n : params;
    double per = (double)x->grad_bytes + 2.0 * (double)x->master_bytes + 4.0 * (double)x->opt_bytes
                 + (double)x->param_bytes;
    *opt_s = mc->hbm > 0 ? shard * per / mc->hbm : 0;
    return reduce + gather;
}

void m4d_perf(const struct m4d_ctx *x, const mem4d_device *dev, mem4d_report *r)
{
    r->have_metrics = false;
    for (int i = 0; i < M4D_NMETRICS; i++)
        r->metric[i] = 0;
    if (dev->v[MEM4D_DEVICE_PEAK_FLOPS] == 0 || x->m == 0 || x->p == 0 || x->t == 0 || x->c == 0)
        return;
    struct machine mc = machine_of(x, dev);
    struct layer_work w = layer_work_of(x);
    double n_first, n_mid, n_last, p = (double)x->p, v = (double)(x->v ? x->v : 1), m = (double)x->m;
    stage_layers(x, &n_first, &n_mid, &n_last);
    double p2p = p2p_time(x, &mc);
    struct stage_time sf = stage_time_of(x, &mc, &w, n_first, x->p == 1);
    struct stage_time sm = stage_time_of(x, &mc, &w, n_mid, false);
    struct stage_time sl = stage_time_of(x, &mc, &w, n_last, true);
    double tf = sf.compute + sf.comm + p2p, tm = sm.compute + sm.comm + p2p, tl = sl.compute + sl.comm + p2p;
    /* The slowest stage sets the pace of the steady state; the others'
     * warm-up and cool-down form the bubble, cut by v when interleaved. */
    double tmax = tf, sum = tf, cmax = sf.compute, xmax = sf.comm;
    if (x->p > 1) {
        sum = tf + (p - 2) * tm + tl;
        if (x->p > 2 && tm > tmax) { tmax = tm; cmax = sm.compute; xmax = sm.comm; }
        if (tl > tmax) { tmax = tl; cmax = sl.compute; xmax = sl.comm; }
    }
    double bubble = (sum - tmax) / v;
    double pipe = m * tmax + bubble;
    /* The DP collectives of the heaviest stage; only the last micro-batch's
     * backward (two thirds of its compute) can hide the gradient reduce. */
    double layers_max = fmax(n_first, fmax(n_mid, n_last));
    double params = layers_max * w.weight_bytes / (double)x->param_bytes
                    + (double)x->h * (double)x->Vp / (double)x->t;
    double opt_s;
    double dp = dp_time(x, &mc, params, cmax * 2 / 3, cmax / 3, &opt_s);
    double step = pipe + dp + opt_s;
    double world = (double)x->world;
    r->metric[MEM4D_METRIC_STEP_TIME_S] = step;
    r->metric[MEM4D_METRIC_TOKENS_PER_S] = (double)x->gbs * (double)x->s / step;
    r->metric[MEM4D_METRIC_TFLOPS_PER_GPU] = model_flops(x) / (step * 1e12 * world);
    r->metric[MEM4D_METRIC_MFU] = r->metric[MEM4D_METRIC_TFLOPS_PER_GPU] * 1e12
                                  / (double)dev->v[MEM4D_DEVICE_PEAK_FLOPS];
    r->metric[MEM4D_METRIC_BUBBLE_FRACTION] = bubble / step;
    r->metric[MEM4D_METRIC_COMPUTE_TIME_S] = m * cmax;
    r->metric[MEM4D_METRIC_EXPOSED_COMM_S] = m * (xmax + p2p) + dp;
    r->have_metrics = true;
}
