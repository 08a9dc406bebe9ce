/*
 * Step time of a layer pattern (lib/hybrid.c): each kind of layer timed as
 * it runs, one module with its norm, and the mean over the pattern's layers
 * handed to lib/perf.c's unit of one layer; Megatron-LM's model FLOPs of a
 * hybrid model for the MFU. doc/perf.md, "Hybrid layers", gives every term.
 * SPDX-License-Identifier: MIT
 */
#include "private.h"

#define MAX(a, b) ((a) > (b) ? (a) : (b))

static inline double D(uint64_t v) { return (double)(int64_t)v; }

/* Kernels of one module's forward besides its GEMMs (norm, residual add,
 * and the mixer's own: conv, scan, gate and norm for a Mamba-2 or Gated
 * DeltaNet layer); the backward launches twice as many (perf.c's
 * KERNELS_FWD is 16 for a whole layer of two modules). */
#define HYBRID_KERNELS_FWD 8.0
/* The chunked scan and the gated delta rule recompute their chunk states in
 * backward (mamba_ssm _mamba_chunk_scan_combined_bwd, fla
 * chunk_gated_delta_rule_bwd) and run the gradients of the forward's
 * matmuls: a forward and twice its work, 3 forwards in all. */
#define MIXER_BWD_WORK 3.0

/* Megatron-LM's model FLOPs of one forward of each layer, T tokens of a
 * sequence of s (megatron/training/training.py, hybrid_flops and its
 * helpers, d98e8a64): attention 4Th·p·(h + h·g/a) + 2s²h·p with p =
 * dh·a/h (a causal s x s: the /2 cancels the multiply-add's 2); MLP 4·f·T·h
 * (3/2 of it with SwiGLU); MoE 4·T·h·(fe·topk + fs) (with SwiGLU 3/2), with
 * LatentMoE 4·T·(latent·fe·topk + h·fs) (3/2) + 4·T·h·latent;
 * Mamba-2 2Th·(2·d_in + 2GN + heads) + 7·T·d_in·N + 2·T·d_in·h with
 * d_in = 2h as Megatron counts it; Gated DeltaNet 2T·(h·in + K·(2qk + v) +
 * 4·value heads·d_v² + h·v). A linear h x h layer (DeciLM) 2Th². */
static double kind_flops(const struct m4d_ctx *x, const struct m4d_layer_kind *k, double T, double s)
{
    double h = D(x->h), sw = x->gated ? 1.5 : 1.0;
    switch (k->sym) {
    case '*': {
        double a = D(x->a), g = D(k->width ? k->width : x->k), p = D(x->dh) * a / h;
        return 4 * T * h * p * (h + h * g / a) + 2 * s * s * h * p;
    }
    case '-':
        return 4 * sw * T * h * D(k->width ? k->width : x->f);
    case 'E': /* LatentMoE: the routed experts at the latent width, its projections 4·T·h·latent */
        if (x->latent)
            return 4 * sw * T * (D(x->latent) * D(x->fe) * D(x->topk) + h * D(x->fs)) + 4 * T * h * D(x->latent);
        return 4 * sw * T * h * (D(x->fe) * D(x->topk) + D(x->fs));
    case 'M': {
        double din = 2 * h, N = D(x->ssm_n);
        return 2 * T * h * (2 * din + 2 * D(x->ssm_g) * N + D(x->ssm_heads)) + 7 * T * din * N + 2 * T * din * h;
    }
    case 'G': {
        double qk = D(x->gdn_kh * x->gdn_dk), v = D(x->gdn_vh * x->gdn_dv);
        double in = 2 * qk + 2 * v + 2 * D(x->gdn_vh);
        return 2 * T * (h * in + D(x->conv_k) * (2 * qk + v) + 4 * D(x->gdn_vh) * D(x->gdn_dv) * D(x->gdn_dv) + h * v);
    }
    default:
        return 2 * T * h * h;
    }
}

double m4d_hybrid_flops_per_seq(const struct m4d_ctx *x)
{
    double s = D(x->s), f = 0;
    uint64_t counts[M4D_MAX_LAYER_KINDS];
    m4d_pattern_kind_count(x, 0, x->nlt, counts);
    for (uint64_t i = 0; i < x->nkinds; i++)
        f += D(counts[i]) * kind_flops(x, &x->kinds[i], s, s);
    return 3 * (f + 2 * s * D(x->h) * D(x->Vp));
}

/* One GEMM of M rows, n outputs and k inputs on one GPU (perf.c). */
static double gemm(const struct m4d_machine *mc, double M, double n, double k, double eb)
{
    return m4d_gemm_mnk(mc, M, n, k, mc->gemm_lin, eb, 1);
}

/* The mixer's own work beside its projections, forward, on the rank's
 * heads: Megatron's scan or gated-delta-rule FLOPs (above) at the GEMM
 * rate, or the kernel's HBM traffic when that is longer (it reads the
 * projected inputs and writes its output, bf16, and the fp32 chunk states
 * each way: heads·P·N per 128 tokens, value heads·d_k·d_v per 64). */
static double mixer_core(const struct m4d_ctx *x, const struct m4d_machine *mc, double M, char sym)
{
    double t = D(x->t), flops, bytes;
    if (sym == 'M') {
        double d = D(x->ssm_heads * x->ssm_p), N = D(x->ssm_n), G = D(x->ssm_g);
        flops = 7 * M * d * N / t; /* Megatron's count with the layer's own d_inner */
        bytes = M * (2 * (2 * d + 2 * G * N + D(x->ssm_heads)) + 4 * d + 8 * d * N / 128) / t;
    } else {
        double qk = D(x->gdn_kh * x->gdn_dk), v = D(x->gdn_vh * x->gdn_dv);
        flops = 2 * M * (D(x->conv_k) * (2 * qk + v) + 4 * D(x->gdn_vh) * D(x->gdn_dv) * D(x->gdn_dv)) / t;
        bytes = M * (2 * (2 * qk + 2 * v) + 2 * v + 8 * D(x->gdn_vh) * D(x->gdn_dk) * D(x->gdn_dv) / 64) / t;
    }
    return MAX(flops / mc->gemm, bytes * mc->inv_hbm);
}

/* Forward and backward seconds of one layer of kind k for M rows: its
 * GEMMs (forward once, backward twice: data and weight gradients), its
 * core (attention as perf.c times it; the mixers above, 3 forwards in
 * backward; the routed experts as lib/perf_moe.c times them), its norm
 * (read and write h on the sequence-parallel shard), launches. */
static void kind_time(const struct m4d_ctx *x, const struct m4d_hybrid_in *in, const struct m4d_layer_kind *k,
                      double *fwd, double *bwd)
{
    const struct m4d_machine *mc = in->mc;
    double t = D(x->t), h = D(x->h), M = in->M, eb = x->fp8 ? 1 : 2, lin = 0, core_f = 0, core_b = 0;
    double sh = x->t > 1 && x->sp ? 1 / t : 1, ew = 2 * M * sh * 4 * h * mc->inv_hbm;
    switch (k->sym) {
    case '*': {
        double q = D(x->a * x->dh), kv = D((k->width ? k->width : x->k) * x->dh);
        lin = gemm(mc, M, (q * (x->out_gate ? 2 : 1) + 2 * kv) / t, h, eb) + gemm(mc, M, h, q / t, eb);
        core_f = in->attn_fwd, core_b = in->attn_bwd;
        break;
    }
    case '-': {
        double w = D(k->width ? k->width : x->f);
        lin = gemm(mc, M, (x->gated ? 2 : 1) * w / t, h, eb) + gemm(mc, M, h, w / t, eb);
        ew += 2 * M * (x->gated ? 3 : 2) * w / t * mc->inv_hbm; /* the activation */
        break;
    }
    case 'E':
        if (x->fs)
            lin = gemm(mc, M, (x->gated ? 2 : 1) * D(x->fs) / t, h, eb) + gemm(mc, M, h, D(x->fs) / t, eb);
        core_f = in->moe_fwd, core_b = in->moe_bwd;
        break;
    case 'M': {
        double d = D(x->ssm_heads * x->ssm_p), conv = d + 2 * D(x->ssm_g * x->ssm_n);
        lin = gemm(mc, M, (d + conv + D(x->ssm_heads)) / t, h, eb) + gemm(mc, M, h, d / t, eb);
        core_f = mixer_core(x, mc, M, 'M');
        core_b = MIXER_BWD_WORK * core_f;
        break;
    }
    case 'G': {
        double qk = D(x->gdn_kh * x->gdn_dk), v = D(x->gdn_vh * x->gdn_dv);
        lin = gemm(mc, M, (2 * qk + 2 * v + 2 * D(x->gdn_vh)) / t, h, eb) + gemm(mc, M, h, v / t, eb);
        core_f = mixer_core(x, mc, M, 'G');
        core_b = MIXER_BWD_WORK * core_f;
        break;
    }
    default: /* L */
        lin = gemm(mc, M, h / t, h, eb);
        break;
    }
    *fwd = lin + core_f + ew + HYBRID_KERNELS_FWD * mc->kernel;
    *bwd = 2 * lin + core_b + 2 * ew + 2 * HYBRID_KERNELS_FWD * mc->kernel;
}

void m4d_hybrid_mean(const struct m4d_ctx *x, const struct m4d_hybrid_in *in, struct m4d_hybrid_out *out)
{
    uint64_t counts[M4D_MAX_LAYER_KINDS];
    double n = D(m4d_pattern_kind_count(x, 0, x->nlt, counts)), f = 0, b = 0, attn = 0, moe = 0;
    for (uint64_t i = 0; i < x->nkinds; i++) {
        double kf, kb, c = D(counts[i]);
        kind_time(x, in, &x->kinds[i], &kf, &kb);
        f += c * kf;
        b += c * kb;
        attn += x->kinds[i].sym == '*' ? c : 0;
        moe += x->kinds[i].sym == 'E' ? c : 0;
    }
    out->fwd = n > 0 ? f / n : 0;
    out->bwd = n > 0 ? b / n : 0;
    out->attn_share = n > 0 ? attn / n : 0;
    out->moe_share = n > 0 ? moe / n : 0;
}

double m4d_hybrid_mean_layer_weights(const struct m4d_ctx *x)
{
    uint64_t counts[M4D_MAX_LAYER_KINDS], each, one;
    double n = D(m4d_pattern_kind_count(x, 0, x->nlt, counts)), w = 0;
    for (uint64_t i = 0; i < x->nkinds; i++) {
        if (!m4d_kind_params(x, &x->kinds[i], &each))
            return 0;
        double e = D(each) / D(x->t);
        if (x->kinds[i].sym == 'E' && m4d_routed_expert_params(x, &one)) { /* the routed experts over ep·etp */
            double experts = D(one) * D(x->experts);
            e += experts / D(m4d_ep_group(x)) - experts / D(x->t);
            /* LatentMoE's projections whole on every rank */
            e += D(m4d_latent_proj_params(x)) * (1 - 1 / D(x->t));
        }
        w += D(counts[i]) * e;
    }
    return n > 0 ? w / n : 0;
}
