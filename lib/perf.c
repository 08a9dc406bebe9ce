/*
 * Step-time model: predicted seconds per optimizer step of a layout, used to
 * rank the layouts a search finds. doc/perf.md, "Step-time model", derives
 * every term; the symbols below are those of doc/formulas.md (t c p d b m s
 * v h f L a k V). Every constant is a device parameter with a documented
 * default, so a user can calibrate the model to a cluster.
 * SPDX-License-Identifier: MIT
 */
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

/* Seconds of one micro-batch's work on one GPU: per layer, and the extra
 * of the stage that holds the LM head. */
struct unit_time {
    double layer_compute; /* GEMMs, attention, recompute, weight streaming */
    double layer_comm;    /* exposed TP and CP */
    double head;          /* LM head and loss, forward and backward */
};

#define MAX0(v) ((v) > 0 ? (v) : 0)

/* Every count here is below 2^62: the signed conversion is one instruction,
 * the unsigned one a branchy sequence, and this runs per searched layout. */
static inline double D(uint64_t v) { return (double)(int64_t)v; }

static double ppm(uint64_t v) { return D(v) / 1e6; }

static struct machine machine_of(const struct m4d_ctx *x, const mem4d_device *dev)
{
    const uint64_t *dv = dev->v;
    double peak = D(dv[MEM4D_DEVICE_PEAK_FLOPS]);
    if (x->fp8 && dv[MEM4D_DEVICE_PEAK_FP8_FLOPS] != 0)
        peak = D(dv[MEM4D_DEVICE_PEAK_FP8_FLOPS]);
    double ce = ppm(dv[MEM4D_DEVICE_COMM_EFFICIENCY_PPM]);
    struct machine mc = {
        .gemm = peak * ppm(dv[MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM]),
        .hbm = D(dv[MEM4D_DEVICE_HBM_BANDWIDTH]),
        .gpn = D(dv[MEM4D_DEVICE_GPUS_PER_NODE] ? dv[MEM4D_DEVICE_GPUS_PER_NODE] : 1),
        .intra = {D(dv[MEM4D_DEVICE_INTRA_NODE_BANDWIDTH]) * ce,
                  D(dv[MEM4D_DEVICE_INTRA_NODE_LATENCY_NS]) * 1e-9},
        .inter = {D(dv[MEM4D_DEVICE_INTER_NODE_BANDWIDTH]) * ce,
                  D(dv[MEM4D_DEVICE_INTER_NODE_LATENCY_NS]) * 1e-9},
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
        return D(x->f);
    double fe = D(x->fe ? x->fe : x->f);
    return D(x->topk) * fe + D(x->fs);
}

static struct layer_work layer_work_of(const struct m4d_ctx *x)
{
    double T = D(x->b) * D(x->s);      /* tokens of one micro-batch */
    double h = D(x->h), qd = D(x->a * x->dh), kvd = D(x->k * x->dh);
    double shard = D(x->t * x->c);        /* TP splits weights, CP tokens */
    double gm = x->gated ? 3 : 2;                /* MLP matrices */
    double wt = h * (qd + 2 * kvd) + qd * h + gm * h * mlp_width(x);
    struct layer_work w;
    /* Causal attention: flash kernels skip the masked half of s x s. */
    w.attn_core = 0.5 * 4 * T * D(x->s) * qd / shard;
    w.fwd = 2 * T * wt / shard + w.attn_core;
    w.weight_bytes = wt / D(x->t) * D(x->param_bytes);
    w.tp_bytes = T * h * 2 / D(x->c);
    w.cp_bytes = 2 * T / D(x->c) * kvd / D(x->t) * 2;
    return w;
}

static struct unit_time unit_time_of(const struct m4d_ctx *x, const struct machine *mc,
                                     const struct layer_work *w)
{
    /* passes: forward + backward (twice the forward's FLOPs); comm_passes:
     * passes that run TP/CP collectives (forward, backward). Full
     * recompute runs the forward, and its collectives, once more. */
    double t = D(x->t), c = D(x->c), passes = 3, comm_passes = 2;
    if (x->recompute == 2) {
        passes = 4;
        comm_passes = 3;
    }
    double flops = passes * w->fwd;
    if (x->recompute == 1) /* selective: the attention core runs again */
        flops += w->attn_core;
    struct unit_time u = {flops / mc->gemm, 0, 0};
    /* Weights stream from HBM once per pass; fp32 main gradients are read
     * and written once per micro-batch (roofline terms, not hidden). */
    if (mc->hbm > 0)
        u.layer_compute += w->weight_bytes * (3 + 2.0 * D(x->grad_bytes) / D(x->param_bytes)) / mc->hbm;
    /* TP with sequence parallelism: 2 all-gathers + 2 reduce-scatters per
     * layer in each pass (all-reduces without SP move the same bytes);
     * exposed, as Megatron does not overlap them by default. */
    u.layer_comm = 4 * comm_passes * ring_time(link_for(mc, t), t, w->tp_bytes, (t - 1) / t, t - 1);
    /* CP ring attention: c-1 steps of K,V per forward, K,V and dK,dV per
     * backward. The transfers hide behind the attention core when it is
     * longer; each step's latency is a synchronisation and never hides. */
    if (x->c > 1) {
        const struct link *cl = link_for(mc, t * c);
        double xfer = cl->bw > 0 ? w->cp_bytes / cl->bw : 0, core = w->attn_core / mc->gemm;
        double cp_fwd = (c - 1) * cl->lat + MAX0((c - 1) * xfer - core);
        double cp_bwd = (c - 1) * cl->lat + MAX0(2 * (c - 1) * xfer - 2 * core);
        u.layer_comm += (comm_passes - 1) * cp_fwd + cp_bwd;
    }
    u.head = 3 * 2 * D(x->b) * D(x->s) * D(x->h) * D(x->Vp) / (t * c) / mc->gemm;
    return u;
}

/* Pipeline send/recv of one micro-batch's activations, forward and backward,
 * once per model chunk the rank holds. */
static double p2p_time(const struct m4d_ctx *x, const struct machine *mc)
{
    if (x->p <= 1)
        return 0;
    double bytes = D(x->b) * D(x->s) * D(x->h) * 2 / D(x->t * x->c);
    double span = D(x->t * x->c * x->d * x->p);
    return 2 * D(x->v) * ring_time(link_for(mc, span), 2, bytes, 1, 1);
}

/* Layers of the first, a middle and the last stage (uneven first/last
 * stages as Megatron's decoder_{first,last}_pipeline_num_layers). */
static void stage_layers(const struct m4d_ctx *x, double *first, double *mid, double *last)
{
    uint64_t fl = x->p > 1 ? x->first_layers : 0, ll = x->p > 1 ? x->last_layers : 0;
    uint64_t rest_n = x->p - (fl != 0) - (ll != 0), rest_l = x->L - fl - ll;
    double per = rest_n ? D(rest_l) / D(rest_n) : 0;
    *first = fl ? D(fl) : per;
    *last = ll ? D(ll) : per;
    *mid = per;
}

/* Megatron's model FLOPs per step (training.py, num_floating_point_operations,
 * the --log-throughput figure): 3 passes, full s x s attention, no recompute. */
static double model_flops(const struct m4d_ctx *x)
{
    double s = D(x->s), h = D(x->h), qd = D(x->a * x->dh), kvd = D(x->k * x->dh);
    double gm = x->gated ? 3 : 2;
    double layer = 2 * s * h * (2 * qd + 2 * kvd) + 4 * s * s * qd + 2 * s * h * gm * mlp_width(x);
    return 3 * D(x->gbs) * (D(x->L) * layer + 2 * s * h * D(x->Vp));
}

/* Gradient reduction and parameter gather over the d*c ranks that share
 * weights, plus the optimizer step; returns exposed seconds. */
static double dp_time(const struct m4d_ctx *x, const struct machine *mc, double params,
                      double bwd_window, double fwd_window, double *opt_s)
{
    double n = D(x->d * x->c), frac = (n - 1) / n;
    const struct link *l = link_for(mc, D(x->t * x->c * x->d));
    double bucket = D(x->bucket);
    if (bucket == 0) /* Megatron: max(40M, 1M x dp) elements */
        bucket = n > 40 ? 1e6 * n : 40e6;
    uint64_t ranks = x->d * x->c, lg = ranks > 1 ? 64 - (uint64_t)__builtin_clzll(ranks - 1) : 1;
    double colls = (double)(int64_t)(params / bucket) + 1, steps = colls * 2 * D(lg);
    double g = params * D(x->grad_bytes), w = params * D(x->param_bytes);
    double reduce, gather = 0;
    if (x->zero >= 1) {
        reduce = ring_time(l, n, g, frac, steps);
        gather = ring_time(l, n, w, frac, steps);
    } else {
        reduce = ring_time(l, n, g, 2 * frac, 2 * steps);
    }
    if (x->overlap_grad)
        reduce = MAX0(reduce - bwd_window);
    if (x->overlap_param)
        gather = MAX0(gather - fwd_window);
    /* Adam is memory-bound: read the gradient, read and write master
     * weights and both moments, write the bf16 weights. */
    double shard = x->zero >= 1 ? params / n : params;
    double per = D(x->grad_bytes) + 2.0 * D(x->master_bytes) + 4.0 * D(x->opt_bytes)
                 + D(x->param_bytes);
    *opt_s = mc->hbm > 0 ? shard * per / mc->hbm : 0;
    return reduce + gather;
}

/* The pipeline of one step: the slowest stage's time per micro-batch (and
 * its compute and layers), the bubble, and the whole. */
struct pipeline {
    double tmax, cmax, lmax, layers_max, bubble, total;
};

/* Stage times per micro-batch: the first stage also holds the head when
 * p = 1. The slowest stage sets the pace of the steady state; the others'
 * warm-up and cool-down form the bubble, cut by v. */
static struct pipeline pipeline_of(const struct m4d_ctx *x, const struct unit_time *u, double p2p)
{
    double n_first, n_mid, n_last, p = D(x->p), v = D(x->v ? x->v : 1);
    stage_layers(x, &n_first, &n_mid, &n_last);
    double lt = u->layer_compute + u->layer_comm, hf = x->p == 1 ? u->head : 0;
    double tf = n_first * lt + hf + p2p, tm = n_mid * lt + p2p, tl = n_last * lt + u->head + p2p;
    struct pipeline pl = {tf, n_first * u->layer_compute + hf, n_first, n_first, 0, 0};
    double sum = tf;
    if (x->p > 1) {
        sum = tf + (p - 2) * tm + tl;
        if (x->p > 2 && tm > pl.tmax)
            pl = (struct pipeline){tm, n_mid * u->layer_compute, n_mid, 0, 0, 0};
        if (tl > pl.tmax)
            pl = (struct pipeline){tl, n_last * u->layer_compute + u->head, n_last, 0, 0, 0};
    }
    pl.layers_max = n_first > n_mid ? n_first : n_mid;
    pl.layers_max = pl.layers_max > n_last ? pl.layers_max : n_last;
    pl.bubble = (sum - pl.tmax) / v;
    pl.total = D(x->m) * pl.tmax + pl.bubble;
    return pl;
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
    struct unit_time u = unit_time_of(x, &mc, &w);
    double p2p = p2p_time(x, &mc), m = D(x->m);
    struct pipeline pl = pipeline_of(x, &u, p2p);
    /* The DP collectives of the heaviest stage; only the last micro-batch's
     * backward (two thirds of its compute) can hide the gradient reduce,
     * only the first forward (a third) the parameter gather. */
    double embed = (x->p == 1 && !x->tied ? 2.0 : 1.0) * D(x->h) * D(x->Vp) / D(x->t);
    double params = pl.layers_max * w.weight_bytes / D(x->param_bytes) + embed;
    double opt_s;
    double dp = dp_time(x, &mc, params, pl.cmax * 2 / 3, pl.cmax / 3, &opt_s);
    double step = pl.total + dp + opt_s;
    double tflops = model_flops(x) / (step * 1e12 * D(x->world));
    r->metric[MEM4D_METRIC_STEP_TIME_S] = step;
    r->metric[MEM4D_METRIC_TOKENS_PER_S] = D(x->gbs) * D(x->s) / step;
    r->metric[MEM4D_METRIC_TFLOPS_PER_GPU] = tflops;
    r->metric[MEM4D_METRIC_MFU] = tflops * 1e12 / D(dev->v[MEM4D_DEVICE_PEAK_FLOPS]);
    r->metric[MEM4D_METRIC_BUBBLE_FRACTION] = pl.bubble / step;
    r->metric[MEM4D_METRIC_COMPUTE_TIME_S] = m * pl.cmax;
    r->metric[MEM4D_METRIC_EXPOSED_COMM_S] = m * (pl.lmax * u.layer_comm + p2p) + dp;
    r->have_metrics = true;
}
