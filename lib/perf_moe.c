/*
 * Step time of an expert (MoE) layer: the expert GEMMs as they run (the rows
 * each local expert receives, grouped or one after another), the router,
 * top-k, auxiliary loss and permutation as memory-bound work, and the token
 * dispatch and combine on the links the expert-parallel group crosses as
 * Megatron-Core lays its ranks out (all-to-all, all-gather, DeepEP's
 * once-per-node RDMA with NVLink forwarding, HybridEP's once-per-NVLink-
 * domain), with the EP overlap (one micro-batch's dispatch and combine under
 * another's compute). lib/perf.c times the rest of the layer and calls in
 * here; doc/perf.md, "Expert layers", derives every term and gives every
 * constant's source. Per-layout work stays free of libm, allocation and
 * integer division, as in perf.c.
 * SPDX-License-Identifier: MIT
 */
#include "private.h"

/* DeepEP's normal (training) kernels reach the link: 153-158 GB/s over
 * H800 NVLink (~160 GB/s) and 43-58 GB/s RDMA over a 400 Gb/s CX7 (~50
 * GB/s) per GPU (deepseek-ai/DeepEP, docs/legacy.md, "Normal kernels with
 * NVLink and RDMA forwarding"): 0.95 of the raw link, where NCCL's rings
 * reach comm_efficiency_ppm. */
#define DEEPEP_LINK_EFF 0.95
/* Inside an NVLink domain their copies are bound by the SMs they run on
 * once the link is faster than those SMs can feed: bytes per second per
 * SM. DeepEP's normal intranode kernels on Hopper: 337 GB/s with its
 * tests' 24 SMs on an H20, whose NVLink has the H100's 450 GB/s a
 * direction (deepseek-ai/DeepEP issue 16; its maintainers: more SMs for
 * more bandwidth, Buffer.set_num_sms), 14.0 GB/s an SM; on an H800 (~160
 * GB/s) the same 24 SMs reach the link. HybridEP's copies (TMA) need
 * fewer SMs and stop at a share of the link: on GB200, BF16, 8 ranks, its
 * Torch API rows give dispatch 550.10 and 545.71 GB/s, combine 538.44 and
 * 568.94 at 16 and 32 SMs (deepseek-ai/DeepEP@94a9f8f, hybrid-ep branch,
 * docs/README_Hybrid-EP.md, GB200 table; the same file's B200 row, 16 SMs:
 * 535.94 and 530.86), the mean of dispatch and combine (which one figure
 * times here) 544.3 at 16 SMs, 34.0 GB/s an SM, and 557.3 at 32: twice
 * the SMs add 2%, a ceiling of 557.3/900 = 0.62 of NVLink 5's 900 GB/s a
 * direction. (The 362/513/616 and 310/426/520 GB/s at 16/24/32 SMs of
 * that README's second GB200 table are DeepEP's normal kernels.) */
#define DEEPEP_SM_BW 14.0e9
#define HYBRIDEP_SM_BW 34.0e9
#define HYBRIDEP_LINK_EFF 0.62
#define HYBRIDEP_NVLINK_MEASURED 900e9
/* Transformer Engine's GroupedLinear runs a bf16 expert GEMM per local
 * expert on a pool of 4 compute streams
 * (transformer_engine/common/util/multi_stream.cpp,
 * get_num_compute_streams()): 4 experts' tiles share the SMs at a time,
 * when the device has the hardware queues for it. Megatron-LM runs with
 * CUDA_DEVICE_MAX_CONNECTIONS=1 (arguments.py requires it for its
 * asynchronous TP communication), which funnels every stream into one
 * queue: one expert GEMM at a time. The EP overlap's recipes raise it to
 * 32 (Megatron-MoE-ModelZoo sbatch_benchmarking.sh, A2A_OVERLAP=1). */
#define GROUPED_STREAMS 4.0
/* Kernels of an expert layer's forward besides the attention block and
 * the expert GEMMs: the host's ops below (MOE_HOST_*, counted from
 * Megatron-Core 1e057005 with Transformer Engine 2.2) less those that
 * launch nothing: the router's 21 (casts, gating GEMM, top-k, softmax,
 * the routing map's fills, scatters and casts, the count, the aux loss's
 * softmax, all-reduce, sums, product and scale, the tracker's three), the
 * preprocess 1, the dispatcher's 25 less its three output allocations
 * (the metadata top-k; DeepEP's layout, notify and dispatch; the
 * multihot's 14; TE's permute 5), of the experts' 10 only the weighted
 * SwiGLU (splits, allocations and stream events launch nothing), the
 * unpermute and combine 4: 49. The alltoall dispatcher launches about as
 * many (its count sums and all-gather, the counts' copies, TE's permute,
 * the all-to-all and the sort by local expert each way). The backward
 * launches twice as many (the convention of KERNELS_FWD, lib/perf.c). */
#define MOE_KERNELS_FWD 49.0
/* Host work of an expert layer (Megatron-Core 1e057005, the revision of
 * the Megatron-MoE-ModelZoo runs, with Transformer Engine 2.2, the
 * ModelZoo's container, dockers/Dockerfile@31c5686): the eager ops the host
 * issues, each EAGER_OP_S of host time. Forward, besides the expert GEMMs:
 * the attention block 12 (transformer_layer.py, attention.py with TE
 * modules: norm, sequence-parallel all-gather and QKV GEMM, q and k norms,
 * RoPE on q and k, attention, projection GEMM and reduce-scatter,
 * bias-dropout-add, the pre-MLP norm), the router 21 (router.py and
 * moe_utils.py: fp32 casts of input and weight and the gating GEMM; top-k,
 * softmax, two zeros_like, two scatters, the int and bool casts and the
 * count of topk_softmax_with_capacity; the aux loss's softmax, its TP
 * all-reduce, sum, product, sum and scale; the tracker's division, index
 * and add), the dispatcher 26 (token_dispatcher.py, _DeepepManager and
 * fused_a2a.py: the top-k of setup_metadata, DeepEP's layout, notify and
 * dispatch kernels and three output allocations, _indices_to_multihot's 14
 * (two zeros, the mask, two boolean indexings, arange, sum,
 * repeat_interleave, two index_puts, the bool cast), TE's permute with
 * probabilities 5), the experts' other work 10 (TEGroupedMLP: the input
 * splits, output allocations and multi-stream events of two GroupedLinear,
 * the weighted SwiGLU), unpermute and combine 4; plus one GEMM per local
 * expert and linear. The backward issues twice the forward's ops besides
 * the experts (the convention of KERNELS_FWD, lib/perf.c) and per local
 * expert and linear four: the dgrad and wgrad GEMMs, the placeholder
 * gradient handle_custom_ddp_from_mcore allocates, and the weight's
 * gradient accumulation with Megatron's DDP hook (grouped_linear.py@
 * release_v2.2, _GroupedLinear.backward). */
#define MOE_HOST_ATTN 12.0
#define MOE_HOST_ROUTER 21.0
#define MOE_HOST_PREPROCESS 1.0
#define MOE_HOST_EXPERTS 10.0
#define MOE_HOST_FWD (MOE_HOST_ATTN + MOE_HOST_ROUTER + MOE_HOST_PREPROCESS + 25.0 + MOE_HOST_EXPERTS + 4.0)
/* Megatron-Core's SequentialMLP (moe_grouped_gemm 0; Megatron-LM@1e057005
 * megatron/core/transformer/moe/experts.py, SequentialMLP.forward) runs
 * each local expert as its own MLP: with more than one,
 * tokens_per_expert.tolist(), a torch.split of the tokens and one of the
 * probabilities, then per expert fc1, the weighted activation and fc2, and
 * one torch.cat of the outputs (a single expert is called directly). In
 * place of TEGroupedMLP's MOE_HOST_EXPERTS ops and one activation kernel:
 * SEQ_MLP_OPS + E_l ops, E_l activations and the cat, E_l kernels more;
 * the GEMMs are one per expert and linear either way. */
#define SEQ_MLP_OPS 4.0
/* Ops issued after the dispatcher's device-to-host synchronisations before
 * a kernel that outlasts its successors' issue (the launches the GPU,
 * drained by the synchronisation, runs as fast as the host issues them):
 * DeepEP (Megatron-Core's flex dispatcher) waits on the host for the
 * notify kernel's counts (buffer.dispatch: "the CPU will wait for GPU's
 * signal to arrive"), then allocates and launches the dispatch (4 ops);
 * _indices_to_multihot then synchronises three times (two boolean
 * indexings and repeat_interleave size their outputs on the host: 4 and 3
 * ops between them, 9 after the last: index, index_put, bool cast, TE's
 * permute, the GroupedLinear's split and allocation before its first GEMM),
 * 20 in all; HybridEP, another backend of that dispatcher, is taken alike.
 * The allgather dispatcher's tokens_per_expert .cpu() drains the compute
 * stream before its permute and its probabilities' masked_select, 10. The
 * alltoall dispatcher copies its counts on a side stream
 * (cuda_dtoh_stream) that waits for the compute stream, and the host waits
 * for that copy before the EP all-to-all; the compute stream keeps the
 * first permute queued and the all-to-all, launched next, outlasts what
 * follows: 0; with the capacity padded, nothing to wait for. */
#define MOE_SYNC_OPS_FLEX 20.0
#define MOE_SYNC_OPS_ALLGATHER 10.0
/* Bytes per router logit (fp32) over a forward: the logits written, read
 * by the fused softmax/top-k, the scores written, read by the auxiliary
 * loss; the backward moves as many. */
#define ROUTER_BYTES_PER_LOGIT 16.0

#define MAX0(v) ((v) > 0 ? (v) : 0)
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define MIN(a, b) ((a) < (b) ? (a) : (b))

static inline double D(uint64_t v) { return (double)(int64_t)v; }

/* DeepEP's rates (DEEPEP_SM_BW, DEEPEP_LINK_EFF) are of its CUDA kernels
 * over NVLink (H800, H20); its ROCm port (ROCm/DeepEP@0e3ef16 README.md,
 * "AMD ROCm Support": xGMI intranode, HIPified kernels, "some NVIDIA-only
 * optimizations (e.g., PTX loads) are not mirrored") publishes no MI300X
 * figure: on an AMD GPU they are not sourced. HybridEP's NVLink rate is
 * sourced on a link of HYBRIDEP_NVLINK_MEASURED and faster. */
bool m4d_dispatcher_sourced(const mem4d_device *dev, uint64_t dispatcher)
{
    switch (dispatcher) {
    case MEM4D_MOE_DISPATCHER_DEEPEP:
        return !m4d_device_rocm(dev);
    case MEM4D_MOE_DISPATCHER_HYBRIDEP:
        return D(dev->v[MEM4D_DEVICE_INTRA_NODE_BANDWIDTH]) >= HYBRIDEP_NVLINK_MEASURED;
    default:
        return true;
    }
}

/* E[max of n independent standard normal draws], the integral of
 * x n phi(x) Phi(x)^(n-1) over x (Simpson's rule on [-12, 12]; the
 * classical tables, e.g. Harter 1961, agree to 4 digits), two points an
 * octave; linear in n between them, within 1.3% (at n = 5). */
static const double NORMAL_MAX[][2] = {
    {1, 0},         {2, 0.5642},    {3, 0.8463},    {4, 1.0294},    {6, 1.2672},    {8, 1.4236},
    {12, 1.6292},   {16, 1.7660},   {24, 1.9477},   {32, 2.0697},   {48, 2.2331},   {64, 2.3437},
    {96, 2.4930},   {128, 2.5946},  {192, 2.7325},  {256, 2.8269},  {384, 2.9555},  {512, 3.0439},
    {768, 3.1648},  {1024, 3.2482}, {1536, 3.3627}, {2048, 3.4418}, {3072, 3.5506}, {4096, 3.6261},
};

static double normal_max(double n)
{
    size_t last = sizeof NORMAL_MAX / sizeof NORMAL_MAX[0] - 1;
    if (n >= NORMAL_MAX[last][0])
        return NORMAL_MAX[last][1];
    size_t i = 1;
    while (NORMAL_MAX[i][0] < n)
        i++;
    const double *a = NORMAL_MAX[i - 1], *b = NORMAL_MAX[i];
    return n <= a[0] ? a[1] : a[1] + (b[1] - a[1]) * (n - a[0]) / (b[0] - a[0]);
}

/* Square root by Newton's iteration (no libm on the per-layout path). */
static double root(double v)
{
    if (v <= 0)
        return 0;
    double y = v > 1 ? 0.5 * v + 0.5 : 1;
    for (int i = 0; i < 64; i++) {
        double z = 0.5 * (y + v / y);
        if (z >= y)
            break;
        y = z;
    }
    return y;
}

/* The router's per-expert load spread, the relative standard deviation of
 * an expert's share about the mean: the device's moe_load_spread_ppm when
 * set (a calibration fits it), else the router's published figure. Wang
 * et al., "Auxiliary-Loss-Free Load Balancing Strategy for Mixture-of-
 * Experts" (arXiv 2408.15664, Table 2) measure MaxVio_global = (max_i Load_i
 * - mean)/mean over the validation set of their 3B DeepSeekMoE model (64
 * routed experts): 0.52 trained with the auxiliary loss at alpha = 0.001,
 * 0.04 with the per-expert bias instead (0.72 and 0.04 at 1B); with loads
 * spread normally that maximum is sigma times E[max of 64 normals] =
 * 2.3437. */
#define SPREAD_AUX_LOSS (0.52 / 2.3437)
#define SPREAD_EXPERT_BIAS (0.04 / 2.3437)

static double spread_of(const struct m4d_ctx *x, const mem4d_device *dev)
{
    uint64_t v = dev ? dev->v[MEM4D_DEVICE_MOE_LOAD_SPREAD_PPM] : 0;
    return v ? D(v) * 1e-6 : x->expert_bias ? SPREAD_EXPERT_BIAS : SPREAD_AUX_LOSS;
}

/* The busiest EP rank's expert rows over the mean (doc/perf.md, "Token
 * imbalance"): ι as the layout gives it (moe_imbalance_ppm; 10^6 is
 * balanced routing, --moe-router-force-load-balancing), else derived for
 * dropless routing with a learned router. A rank's load is the sum over
 * its E_l = E/ep experts; each expert's share deviates by `spread`
 * (systematic: the router's preferences; spread_of() below) plus the sampling of `rows`
 * routed copies (binomial, 1 - k/E); the ep ranks' loads sum to the whole
 * (the factor (1 - 1/ep) E/(E - 1)), and every rank waits for the busiest
 * at the combine: the expected maximum of ep draws, E[max] = 1 +
 * normal_max(ep) · cv. More local experts average a rank's load out; more
 * ranks draw a larger maximum. A capacity factor caps the load: dropping
 * at the capacity, at most max(factor, 1) of the mean; padded to it,
 * exactly the capacity (already in m4d_routed_ppm): 1. */
static double uncapped(const struct m4d_ctx *x, double spread, double rows)
{
    if (x->imbalance_ppm)
        return D(x->imbalance_ppm) * 1e-6;
    if (x->ep > 1 && x->experts > 1 && rows > 0) {
        double ep = D(x->ep), E = D(x->experts), k = D(x->topk);
        double var = (1 - 1 / ep) * E / (E - 1) * (spread * spread * ep / E + (1 - k / E) / rows);
        return 1 + normal_max(ep) * root(var);
    }
    return 1;
}

static double imbalance(const struct m4d_ctx *x, double spread, double rows)
{
    if (x->cap_ppm && x->cap_pad)
        return 1;
    double imb = uncapped(x, spread, rows);
    return x->cap_ppm ? MIN(imb, MAX(D(x->cap_ppm) * 1e-6, 1)) : imb;
}

/* Tokens a rank routes per sample: s over context and sequence
 * parallelism. */
static double tokens_per_sample(const struct m4d_ctx *x)
{
    return D(x->s) / (D(x->c) * (x->sp && x->t > 1 ? D(x->t) : 1));
}

/* The busiest rank's routed rows over the mean that memory sizes its
 * routed-token buffers by (lib/estimate_full.h, routed(); it applies the
 * capacity factor itself), millionths, rounded up: moe_imbalance_ppm as
 * set, else the figure the step time derives for dropless routing with the
 * router's published load spread (a device's moe_load_spread_ppm is the
 * step time's alone: memory is resolved without a device). Once per
 * resolve. */
uint64_t m4d_moe_imbalance_ppm(const struct m4d_ctx *x)
{
    if (!x->experts)
        return 1000000;
    double imb = uncapped(x, spread_of(x, NULL), tokens_per_sample(x) * D(x->topk) * D(x->etp));
    return (uint64_t)(imb * 1e6 + 0.999999);
}

/* Probability that none of a token's k experts (drawn without repetition
 * from E) is among the `held` experts of a rank or a node. */
static double miss(double E, double held, double k)
{
    double p = 1;
    for (double i = 0; i < k; i++)
        p *= MAX0(E - held - i) / (E - i);
    return p;
}

/* The expert-parallel group as Megatron-Core lays it out
 * (parallel_state.py, RankGenerator with order tp-ep-dp-pp over the expert
 * ranks, tp = etp): its ep members sit etp ranks apart over ep·etp
 * consecutive ranks of a stage, so a domain of `dom` GPUs holds
 * min(ep, dom/etp) of them (at least 1). */
static double members_per(double ep, double etp, double dom)
{
    double span = ep * etp;
    if (span <= dom)
        return ep;
    return etp < dom ? dom / etp : 1;
}

/* One dispatch (a combine moves the same bytes back) of one sample's
 * tokens: latency and seconds per sample, on the busiest receiver. */
static void dispatch_prepare(const struct m4d_ctx *x, const mem4d_device *dev, const struct m4d_machine *mc,
                             struct m4d_moe_group *g, double tok, double imb)
{
    double ep = D(x->ep), etp = D(x->etp), E = D(x->experts), El = E / ep, k = D(x->topk);
    /* a token's bytes: LatentMoE dispatches the projected, latent-wide ones */
    double row = 2 * D(m4d_expert_width(x)), ce = D(dev->v[MEM4D_DEVICE_COMM_EFFICIENCY_PPM]) * 1e-6;
    double ie = D(m4d_perf_effective(dev, MEM4D_DEVICE_INTER_NODE_EFFICIENCY_PPM)) * 1e-6;
    double raw_intra = ce > 0 ? mc->intra.bw / ce : 0, raw_inter = ie > 0 ? mc->inter.bw / ie : 0;
    double G = D(dev->v[MEM4D_DEVICE_GPUS_PER_NODE] ? dev->v[MEM4D_DEVICE_GPUS_PER_NODE] : 1);
    double rho = D(m4d_routed_ppm(x)) * 1e-6; /* expert copies per token (capacity, padding) */
    g->comm_lat = g->comm_per_b = 0;
    if (x->dispatcher == MEM4D_MOE_DISPATCHER_ALLGATHER) {
        /* every token of the ep·etp group gathered on each rank, reduce-
         * scattered back: a ring over the group's span */
        double n = ep * etp;
        const struct m4d_link *l = n <= mc->domain ? &mc->intra : &mc->inter;
        if (n > 1 && l->bw > 0) {
            g->comm_lat = (n - 1) * l->lat;
            g->comm_per_b = (n - 1) * tok * row / l->bw;
        }
        return;
    }
    if (x->ep > 1) {
        bool flex = x->dispatcher == MEM4D_MOE_DISPATCHER_DEEPEP || x->dispatcher == MEM4D_MOE_DISPATCHER_HYBRIDEP;
        /* DeepEP forwards over NVLink inside a node (at most 8 NVLink
         * peers), HybridEP inside the whole NVLink domain. */
        double dom = x->dispatcher == MEM4D_MOE_DISPATCHER_HYBRIDEP ? mc->domain : MIN(G, 8);
        if (!flex)
            dom = mc->domain;
        double per = members_per(ep, etp, dom), nodes = ep / per;
        double intra, inter; /* copies per token into this domain's other ranks, out of it */
        if (flex) {
            /* one copy per distinct destination rank; one RDMA copy per
             * distinct remote domain, forwarded there over NVLink */
            double hit_rank = 1 - miss(E, El, k), hit_dom = 1 - miss(E, El * per, k);
            inter = (nodes - 1) * hit_dom;
            intra = (per - 1) * hit_rank + (ep - per) * hit_rank * (per - 1) / per;
        } else {
            /* the alltoall dispatcher sends one copy per expert */
            inter = k * (ep - per) / ep;
            intra = k * (per - 1) / ep;
        }
        bool hyb = x->dispatcher == MEM4D_MOE_DISPATCHER_HYBRIDEP;
        double bi = flex ? raw_intra * (hyb ? HYBRIDEP_LINK_EFF : DEEPEP_LINK_EFF) : mc->intra.bw;
        if (flex) /* the SMs moe_dispatcher_sms gives it feed the NVLink copies, up to that share */
            bi = MIN(bi, (hyb ? HYBRIDEP_SM_BW : DEEPEP_SM_BW) * D(x->dispatcher_sms));
        double bx = flex ? raw_inter * DEEPEP_LINK_EFF : mc->inter.bw;
        double scale = tok * row * rho / k * imb;
        double ti = bi > 0 ? intra * scale / bi : 0, tx = bx > 0 ? inter * scale / bx : 0;
        g->comm_per_b = MAX(ti, tx);
        /* a count exchange then the tokens (DeepEP's notify_dispatch; the
         * alltoall dispatcher's all-to-all of the counts) */
        g->comm_lat = 2 * (nodes > 1 ? mc->inter.lat : mc->intra.lat);
    }
    if (x->etp > 1) { /* the received rows all-gathered over the etp ranks (reduce-scattered back) */
        const struct m4d_link *l = etp <= mc->domain ? &mc->intra : &mc->inter;
        if (l->bw > 0) {
            g->comm_lat += (etp - 1) * l->lat;
            g->comm_per_b += (etp - 1) * tok * rho * imb * row / l->bw;
        }
    }
}

void m4d_moe_prepare(const struct m4d_ctx *x, const mem4d_device *dev, const struct m4d_machine *mc,
                     struct m4d_moe_group *g)
{
    g->on = x->experts != 0;
    if (!g->on)
        return;
    /* h: the router's and the latent projections' width; w: the experts'
     * tokens (LatentMoE's latent, else h) */
    double etp = D(x->etp), h = D(x->h), w = D(m4d_expert_width(x));
    double E = D(x->experts), El = E / D(x->ep), fe = D(x->fe ? x->fe : x->f) / etp;
    double rho = D(m4d_routed_ppm(x)) * 1e-6;
    double tok = tokens_per_sample(x);
    /* the sampling term counts one sample's copies a rank receives: a
     * group is prepared once for every micro-batch size */
    double imb = imbalance(x, spread_of(x, dev), tok * D(x->topk) * etp);
    g->experts_local = El;
    /* rows the busiest rank's experts compute per sample: its share of the
     * group's routed copies, gathered over etp */
    g->rows_per_b = tok * rho * etp * imb;
    g->streams = x->moe_grouped_gemm && x->ep_overlap ? MIN(GROUPED_STREAMS, El) : 1;
    /* Each expert's rows are a random count: with balanced routing (each
     * token's k experts drawn at random, what --moe-router-force-load-
     * balancing gives) binomial, of variance M_e·(1 − k/E) about its mean
     * M_e; padded to the capacity, fixed. Its GEMMs pad the count to whole
     * row tiles (m4d_gemm_spread). */
    g->row_var = x->cap_ppm && x->cap_pad ? 0 : 1 - D(x->topk) / E;
    g->fc1_n = (x->gated ? 2 : 1) * fe;
    g->fc2_k = fe;
    g->h = w;
    /* LatentMoE's projections (Megatron-Core moe_layer.py, fc1_latent_proj
     * h -> latent before the dispatch, fc2_latent_proj latent -> h after the
     * combine; TELinear "duplicated": whole on each rank, over its own
     * tokens): two GEMMs of the rank's tokens, timed with the experts' */
    g->lat_rows = x->latent ? tok : 0;
    g->lat_h = h;
    g->eb = x->fp8 ? 1 : 2;
    g->rate = mc->gemm_lin;
    /* The weight gradients: with the accumulation fused into the GEMM (a
     * stack without a separate accumulation pass, accum_bytes 0: Megatron's
     * gradient_accumulation_fusion, on by default, hands TE's GroupedLinear
     * fuse_wgrad_accumulation, whose wgrad GEMMs write into each expert's
     * main_grad with accumulate set: grouped_linear.py@v2.2,
     * _GroupedLinear.backward) the epilogue reads and writes the main
     * gradient, grad_bytes each (fp32 by default); otherwise it writes a
     * bf16 gradient and the stack's accumulation pass (accum_layer,
     * lib/perf.c) adds it. */
    g->wgrad_out = mc->accum_bytes > 0 ? 2 : 2 * D(x->grad_bytes);
    /* fp8: the experts' GEMMs pay the unfused casts of perf.c's linears
     * (TE_FP8_CASTS; TE's GroupedLinear quantizes every expert's input
     * rowwise and columnwise, tex.fused_multi_quantize, and in the
     * backward its output gradient;
     * each expert's weight once per step, cached by is_first_microbatch:
     * grouped_linear.py@v2.2, _GroupedLinear.forward and backward): 5 bytes
     * per input element and 4 per output element of each row, 5 per weight
     * element (lib/perf.c, gemms_prepare); tensorwise scaling reads each
     * once more for its amax (TE_FP8_CURRENT: 2 bytes; its GEMMs run at
     * delayed scaling's rate), as NVFP4 does (NVFP4_QUANT_TIME, lib/perf.c) */
    g->cast_per_b = g->cast_w = 0;
    if (x->fp8) {
        double amax = x->fp8_recipe == 1 || x->fp8_recipe == M4D_FP8_RECIPE_NVFP4 ? M4D_FP8_AMAX : 0;
        g->cast_per_b = g->rows_per_b * ((M4D_FP8_Q_THEN_T + amax) * (w + fe) + (M4D_FP8_QT + amax) * (g->fc1_n + w)) *
                        mc->inv_hbm * mc->fp8_slow;
        g->cast_w = (M4D_FP8_Q_THEN_T + amax) * El * w * (g->fc1_n + fe) * mc->inv_hbm * mc->fp8_slow;
        /* LatentMoE's two projections, te.Linear layers alike: their inputs
         * (h, latent) and output gradients (latent, h) a token, 2·h·latent
         * weights a step */
        if (x->latent) {
            g->cast_per_b += g->lat_rows * ((M4D_FP8_Q_THEN_T + amax) + (M4D_FP8_QT + amax)) * (h + w) *
                             mc->inv_hbm * mc->fp8_slow;
            g->cast_w += (M4D_FP8_Q_THEN_T + amax) * 2 * h * w * mc->inv_hbm * mc->fp8_slow;
        }
    }
    /* router: logits GEMM (tok x E x h, on the h-wide tokens with LatentMoE
     * too) and the fp32 logits' passes; permute and unpermute read and write
     * each token and each copy (latent-wide with LatentMoE) */
    double logits = tok * E;
    g->router_per_b = (2 * tok * E * h / mc->gemm + (2 * tok * h + ROUTER_BYTES_PER_LOGIT * logits) * mc->inv_hbm) +
                      4 * w * (tok + tok * rho * imb) * mc->inv_hbm;
    /* the alltoall dispatcher receives its rows grouped by source rank and,
     * with more than one local expert, sorts them by expert after the
     * all-to-all and back before the combine (token_dispatcher.py,
     * MoEAlltoAllTokenDispatcher.dispatch_postprocess and
     * combine_preprocess, sort_chunks_by_idxs): each received row read and
     * written twice more */
    if (x->dispatcher == MEM4D_MOE_DISPATCHER_ALLTOALL && x->ep > 1 && El > 1)
        g->router_per_b += 8 * w * tok * rho * etp * imb * mc->inv_hbm;
    /* the experts' activation over their rows (bf16): gated reads 2 fe and
     * writes fe per row, else reads and writes fe */
    g->act_per_b = 2 * g->rows_per_b * (x->gated ? 3 : 2) * fe * mc->inv_hbm;
    bool seq = !x->moe_grouped_gemm && El > 1; /* SequentialMLP's own ops (SEQ_MLP_OPS) */
    double experts_ops = x->moe_grouped_gemm ? MOE_HOST_EXPERTS : (seq ? SEQ_MLP_OPS : 0) + El;
    g->kernels = (MOE_KERNELS_FWD + 2 * El + (seq ? El : 0)) * mc->kernel;
    /* the host's ops (MOE_HOST_*); a CUDA graph replays its scope's ops
     * from one launch (Megatron's --cuda-graph-scope: attn, moe_router,
     * moe_preprocess; moe, the whole layer or the whole iteration only with
     * static shapes, hence no synchronisation either) */
    uint64_t sc = x->graph_scope;
    bool iter = x->cuda_graph == MEM4D_CUDA_GRAPH_FULL_ITERATION, graph = x->cuda_graph != 0 && !iter;
    bool all = graph && sc == 0, moe = all || (graph && (sc & M4D_GRAPH_MOE));
    double attn = all || (graph && (sc & M4D_GRAPH_ATTN)) ? 1 : MOE_HOST_ATTN;
    double router = graph && (sc & M4D_GRAPH_MOE_ROUTER) ? 1 : MOE_HOST_ROUTER;
    double pre = graph && (sc & M4D_GRAPH_MOE_PREPROCESS) ? 1 : MOE_HOST_PREPROCESS;
    double block = moe ? 1
                       : router + pre + MOE_HOST_FWD - MOE_HOST_ATTN - MOE_HOST_ROUTER - MOE_HOST_PREPROCESS -
                             MOE_HOST_EXPERTS + experts_ops;
    double gemms = moe ? 0 : El;
    g->host_fwd = iter ? 0 : (attn + block + 2 * gemms) * mc->host_op;
    g->host_bwd = iter ? 0 : (2 * (attn + block) + 8 * gemms) * mc->host_op;
    double sync_ops = 0;
    if (x->dispatcher == MEM4D_MOE_DISPATCHER_DEEPEP || x->dispatcher == MEM4D_MOE_DISPATCHER_HYBRIDEP)
        sync_ops = MOE_SYNC_OPS_FLEX;
    else if (x->dispatcher == MEM4D_MOE_DISPATCHER_ALLGATHER)
        sync_ops = MOE_SYNC_OPS_ALLGATHER;
    g->stretch = iter || moe ? 0 : sync_ops * MAX0(mc->host_op - mc->kernel);
    dispatch_prepare(x, dev, mc, g, tok, imb);
    /* DeepEP's and HybridEP's kernels hold their SMs while they run beside
     * the compute they overlap */
    g->sm_keep = 1;
    if ((x->dispatcher == MEM4D_MOE_DISPATCHER_DEEPEP || x->dispatcher == MEM4D_MOE_DISPATCHER_HYBRIDEP) &&
        mc->sms > D(x->dispatcher_sms))
        g->sm_keep = (mc->sms - D(x->dispatcher_sms)) * mc->inv_sms;
    /* an expert layer without a shared expert runs only attention's TP
     * collectives: its tokens reach the experts through the dispatcher */
    g->tp_share = x->fs ? 1 : 0.5;
}

/* `n` GEMMs of m x n_ x k on `streams` concurrent streams, their m rows
 * spread with standard deviation sd (0: all alike). */
static double gemms_sd(const struct m4d_machine *mc, const struct m4d_moe_group *g, double n, double m, double sd,
                       double nn, double k)
{
    return m4d_gemm_spread(mc, m, sd, nn, k, g->rate, g->eb, g->streams) * n / g->streams;
}

static double gemms(const struct m4d_machine *mc, const struct m4d_moe_group *g, double n, double m, double nn,
                    double k)
{
    return gemms_sd(mc, g, n, m, 0, nn, k);
}

/* `n` identical weight-gradient GEMMs (m x nn x k, k the rows): as gemms(),
 * or the HBM traffic with the epilogue's wgrad_out bytes per weight element
 * when that is slower (few rows per expert: 2·k FLOPs per element against
 * 8 bytes of an fp32 main gradient is memory-bound on every GPU below
 * about 4·rate/HBM rows: 950 on an H100, 794 TFLOP/s over 3.35 TB/s). */
static double wgrads(const struct m4d_machine *mc, const struct m4d_moe_group *g, double n, double m, double nn,
                     double k)
{
    double mem = n * (g->eb * (m * k + k * nn) + g->wgrad_out * m * nn) * mc->inv_hbm;
    return MAX(gemms(mc, g, n, m, nn, k), mem);
}

void m4d_moe_time(const struct m4d_machine *mc, const struct m4d_moe_group *g, double b, struct m4d_moe_time *t)
{
    double El = g->experts_local, rows = b * g->rows_per_b, me = rows / El;
    /* forward: fc1 (me x fc1_n x h), fc2 (me x h x fe); backward: dgrad of
     * each (me x h x fc1_n, me x fe x h) and wgrad (h x fc1_n x me,
     * fe x h x me: the rows are the reduction) */
    double sd = root(me * g->row_var); /* the spread of an expert's rows */
    double f1 = gemms_sd(mc, g, El, me, sd, g->fc1_n, g->h), f2 = gemms_sd(mc, g, El, me, sd, g->h, g->fc2_k);
    double d1 = gemms_sd(mc, g, El, me, sd, g->h, g->fc1_n), d2 = gemms_sd(mc, g, El, me, sd, g->fc2_k, g->h);
    double w1 = wgrads(mc, g, El, g->h, g->fc1_n, me), w2 = wgrads(mc, g, El, g->fc2_k, g->h, me);
    double act = b * g->act_per_b;
    t->expert_fwd = f1 + f2 + act;
    t->expert_bwd = d1 + d2 + w1 + w2 + 2 * act;
    t->wgrad = w1 + w2;
    if (g->lat_rows > 0) { /* LatentMoE's projections: forward, data and weight gradients of each */
        double R = b * g->lat_rows, H = g->lat_h, Lt = g->h;
        double pf = m4d_gemm_spread(mc, R, 0, Lt, H, g->rate, g->eb, 1) + m4d_gemm_spread(mc, R, 0, H, Lt, g->rate, g->eb, 1);
        double pw = m4d_gemm_spread(mc, H, 0, Lt, R, g->rate, g->eb, 1) + m4d_gemm_spread(mc, Lt, 0, H, R, g->rate, g->eb, 1);
        t->expert_fwd += pf;
        t->expert_bwd += pf + pw;
        t->wgrad += pw;
    }
    t->router_fwd = b * g->router_per_b + g->kernels;
    t->router_bwd = 2 * t->router_fwd;
    t->act = act;
    t->cast = b * g->cast_per_b;
    t->comm = g->comm_lat + b * g->comm_per_b;
}

double m4d_moe_exposed(const struct m4d_ctx *x, const struct m4d_moe_time *t,
                       double fwd, double bwd, double shared_fwd, double passes_fwd, double lost)
{
    double c = t->comm, recompute = (passes_fwd - 1) * 2 * c;
    if (x->recompute == 1 && (x->rc_modules & M4D_RC_MOE))
        recompute += 2 * c;
    if (!x->ep_overlap && x->shared_overlap && shared_fwd > 0) {
        /* --moe-shared-expert-overlap (moe_layer.py): the shared expert's
         * fc1 and activation run beside the dispatch, its fc2 beside the
         * combine, on their own stream; the backward likewise at twice the
         * compute. Its halves are taken as its two GEMMs' halves. */
        double f = 0.5 * shared_fwd, b = shared_fwd;
        return recompute + 2 * MAX0(c - f) + 2 * MAX0(c - b);
    }
    if (!x->ep_overlap)
        return recompute + 4 * c;
    /* Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm)
     * runs the forward of one micro-batch's layer beside the backward of
     * another's, each on its stream (model_chunk_schedule_plan.py,
     * TransformerLayerSchedulePlan.run):
     *   comm:    combine_bwd  | dispatch_fwd -> dispatch_bwd      | combine_fwd
     *   compute: attn_fwd     | mlp_bwd -> mlp_bwd_dw -> mlp_fwd  | attn_bwd
     * where mlp_fwd waits for dispatch_fwd and dispatch_bwd for mlp_bwd;
     * the weight gradients run apart (mlp_bwd_dw) only with
     * --delay-wgrad-compute, else inside mlp_bwd. attn is everything of the
     * layer but the experts (attention, norms, router, permutation). */
    double attn_f = fwd - t->expert_fwd, attn_b = bwd - t->expert_bwd;
    double dw = x->delay_wgrad ? t->wgrad : 0, mlp_b = t->expert_bwd - dw, mlp_f = t->expert_fwd;
    double mid = MAX(MAX(c, mlp_b) + c, MAX(mlp_b + dw, c) + mlp_f) - (mlp_b + dw + mlp_f);
    double exposed = MAX0(c - attn_f) + mid + MAX0(c - attn_b);
    /* what the hidden dispatch and combine cost the compute they run
     * beside (`lost` a second: DeepEP's and HybridEP's SMs taken from it,
     * and a persistent GEMM's second wave, lib/perf.c beside_cost) */
    double hidden = 4 * c - exposed;
    double paired = exposed + hidden * lost;
    /* Only the steady state pairs a forward with a backward: the warm-up's
     * forwards and the cool-down's backwards run alone, their dispatch and
     * combine exposed. Megatron-Core's interleaved schedule
     * (pipeline_parallel/schedules.py, get_pp_rank_microbatches) runs
     * (p - 1)·2 + (v - 1)·p warm-up chunk forwards on the first rank, one
     * more with the EP overlap, of its m·v: the chunk passes the first
     * stage holds at its peak, m4d_in_flight_units() (memory's count). Without
     * pipelining (combined_1f1b_schedule_for_no_pipelining) the first
     * micro-batch's forward and the last one's backward run alone. All
     * forward, all backward (pipeline_schedule=afab) pairs none: every
     * micro-batch is in flight at once, so f = 1 and every dispatch and
     * combine is exposed (the overlap lives in Megatron-Core's 1F1B
     * schedules only). */
    uint64_t units = x->p > 1 || x->afab ? m4d_in_flight_units(x, 0) : 1;
    double steps = D(x->m) * D(x->v ? x->v : 1);
    double f = steps > 0 ? MIN(D(units) / steps, 1) : 0;
    return recompute + (1 - f) * paired + f * 4 * c;
}

double m4d_moe_host(const struct m4d_ctx *x, const struct m4d_moe_group *g, double fwd, double bwd, double comm,
                    double passes_fwd)
{
    /* Each forward of the layer runs its dispatcher's synchronisations
     * (again in a full recompute's re-run and in a recompute of the moe
     * module), after which the GPU waits for the host's next launches: the
     * host's lead is gone at every expert layer, so the forward runs at the
     * slower of its GPU and its host work, at least stretch behind. The
     * backward has no synchronisation (DeepEP's cached dispatch and combine,
     * the alltoall splits of the forward); the host keeps its lead but runs
     * no faster than it issues. With the EP overlap one host thread issues a
     * forward and a backward together (model_chunk_schedule_plan.py). */
    double rerun = passes_fwd - 1, forwards = passes_fwd;
    if (x->recompute == 1 && (x->rc_modules & M4D_RC_MOE))
        forwards += 1;
    double hf = g->host_fwd, hb = g->host_bwd + rerun * g->host_fwd;
    if (x->ep_overlap)
        return MAX(MAX0(hf + hb - (fwd + bwd + rerun * fwd + comm)), forwards * g->stretch);
    double f = MAX(MAX0(hf - fwd - 0.5 * comm), g->stretch);
    double b = MAX(MAX0(hb - bwd - rerun * fwd - 0.5 * comm), (forwards - 1) * g->stretch);
    return f + b;
}
