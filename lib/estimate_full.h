/*
 * Full mode's internal header: what the five parts of lib/estimate_full.c
 * share (doc/full-model.md has one section per part):
 *   stages.c                stage geometry (layers, expert layers per stage and chunk)
 *   estimate_state.c        WEIGHTS, GRADIENTS, OPTIMIZER per framework
 *   estimate_activations.c  ACTIVATIONS and the schedule's micro-batches in flight
 *   estimate_buffers.c      BUFFERS, FIXED and FRAGMENTATION
 *   estimate_full.c         the driver: one estimate, stage by stage, its peak moment
 * SPDX-License-Identifier: MIT
 */
#ifndef MEM4D_ESTIMATE_FULL_H
#define MEM4D_ESTIMATE_FULL_H

#include "private.h"

/* Sticky checked arithmetic: a step that would overflow clears *ok and
 * yields 0, so a formula reads like the formula and is checked once. */
static inline uint64_t add(bool *ok, uint64_t a, uint64_t b)
{
    uint64_t r;
    if (M4D_UNLIKELY(!m4d_add(a, b, &r))) {
        *ok = false;
        return 0;
    }
    return r;
}

static inline uint64_t mul(bool *ok, uint64_t a, uint64_t b)
{
    uint64_t r;
    if (M4D_UNLIKELY(!m4d_mul(a, b, &r))) {
        *ok = false;
        return 0;
    }
    return r;
}

/* ⌈a·b/d⌉ exactly, d > 0. */
static inline uint64_t muldiv(bool *ok, uint64_t a, uint64_t b, uint64_t d)
{
    uint64_t r;
    if (M4D_UNLIKELY(!m4d_muldiv_ceil(a, b, d, &r))) {
        *ok = false;
        return 0;
    }
    return r;
}

/* v per routed expert input, times the expert inputs per token the
 * busiest expert-parallel rank receives: top-k (or with a capacity factor,
 * m4d_routed_ppm) times moe_imbalance_ppm, the rows that rank receives over
 * the mean. Dropless routing hands a rank every token its experts are
 * chosen for, so its permuted tokens and expert activations grow with its
 * load; a capacity factor bounds them (dropping: at most the capacity;
 * padding: exactly it). Unset, the busiest rank's load the step time
 * derives for dropless routing (m4d_moe_imbalance_ppm, at resolve). */
static inline uint64_t routed(bool *ok, const struct m4d_ctx *x, uint64_t v)
{
    uint64_t ppm = m4d_routed_ppm(x), imb = x->routed_imb_ppm;
    if (imb > 1000000 && !x->cap_pad) {
        uint64_t pad = ppm - x->topk * (x->cap_ppm && x->cap_ppm < 1000000 ? x->cap_ppm : 1000000);
        uint64_t f = x->cap_ppm ? (imb < x->cap_ppm ? imb : x->cap_ppm) : imb;
        if (!x->cap_ppm || x->cap_ppm > 1000000)
            ppm = add(ok, mul(ok, x->topk, f), pad);
    }
    return muldiv(ok, v, ppm, 1000000);
}

/* All of one layer's parameters on a rank (struct layer_share's parts). */
static inline uint64_t share_total(bool *ok, const struct layer_share *s)
{
    return add(ok, add(ok, s->linear, s->expert), s->replicated);
}

static inline uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static inline uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* t_sp: what splits the "replicated" half of a layer's activations (norm
 * inputs and outputs): t with sequence parallelism, else 1. */
static inline uint64_t t_sp(const struct m4d_ctx *x) { return x->sp && x->t > 1 ? x->t : 1; }

/* T = s·b/c: tokens of one micro-batch on one context-parallel rank. */
static inline uint64_t tokens(bool *ok, const struct m4d_ctx *x) { return mul(ok, x->s / x->c, x->b); }

/* Bytes of a residual-stream element between layers and stages: 4 with
 * --fp32-residual-connection (the embedding's output, each layer's
 * residual and bias-dropout-add in fp32; the pipeline sends fp32). */
static inline uint64_t residual_bytes(const struct m4d_ctx *x) { return x->fp32_residual ? 4 : 2; }

/* The schedule's micro-batches in flight (estimate_activations.c's) and the
 * allocator's fragmentation (estimate_buffers.c's) are inline: every stage
 * of every estimate of a search asks them. */

/* Micro-batches live on stage r at its peak (m4d_in_flight_units(),
 * lib/private.h) and the layers of each: ℓ_r, or ℓ_r/v a chunk. */
static inline void m4d_in_flight(const struct m4d_ctx *x, uint64_t r, uint64_t *units, uint64_t *layers_each)
{
    *units = m4d_in_flight_units(x, r);
    *layers_each = m4d_split_rank_layers(&x->split, r) / (x->v > 1 ? x->v : 1);
}

/* The caching allocator's reserved-but-unallocated bytes at the peak,
 * besides the stranded blocks the moment names: allocator_overhead_ppm of
 * the allocated peak (blocks split and cached across sizes; measured
 * reserved/allocated ratios, doc/full-model.md). With expandable segments
 * the peak's blocks are packed in one segment whose end is mapped in
 * 20 MiB pages (m4d_alloc_expandable_mapped): that rounding remains. */
static inline uint64_t m4d_fragmentation(bool *ok, const struct m4d_ctx *x, const mem4d_device *dev, uint64_t alloc)
{
    if (x->expandable)
        return m4d_alloc_expandable_mapped(alloc) - alloc;
    return muldiv(ok, alloc, dev->v[MEM4D_DEVICE_ALLOCATOR_OVERHEAD_PPM], 1000000);
}

/* What every stage of one estimate shares, computed once per estimate (the
 * search calls m4d_estimate_full() millions of times a second). */
struct shared {
    struct layer_share share; /* one layer's parameters on a rank (an expert layer's with experts) */
    struct layer_share dense; /* one dense layer's (= share without experts) */
    uint64_t A_dense;         /* A_layer of a dense layer */
    struct layer_share mtp;   /* the MTP modules' parameters on the last stage */
    uint64_t emb;             /* V_p·h/t */
    uint64_t T;               /* tokens of a micro-batch on a rank */
    uint64_t A, C;            /* A_layer and a full-recompute checkpoint */
    uint64_t A_mtp;           /* an MTP module's layer (a GPT layer of the model's dimensions) */
    uint64_t core_live;       /* selective recompute: one re-run attention core */
    uint64_t backward;        /* one layer's backward working set */
    uint64_t head_keep, loss; /* last stage (head_bytes) */
    uint64_t emb_keep;        /* first stage, per micro-batch (embedding_keep) */
    uint64_t emb_grad;        /* first stage's embedding gradient */
    uint64_t fb;              /* forward/backward buffers */
    uint64_t fsdp_kept;       /* Megatron FSDP's double buffers, also at the optimizer step */
    uint64_t fixed, groups;   /* FIXED and the communicators behind it */
    uint64_t block;           /* torchtitan: one block's unsharded compute copy */
    uint64_t sac;             /* torchtitan op-selective: kept per block and micro-batch */
    uint64_t stranded;        /* last stage: cached blocks the loss cannot reuse */
    uint64_t pp_kept, pp_merge; /* last stage: outputs kept at the loss and merged at the step (pp_kept_outputs) */
    struct {                  /* one micro-batch's keep and live set over l layers, e of them expert layers */
        bool have;            /* (m4d_stage_activations, one pipeline chunk per stage): one for */
        uint64_t l, e, keep, live; /* each stage a peak-only estimate fills (0, 1, p - 1: uneven ends differ) */
    } mbk[3];
    /* a layer pattern: each kind's parameters on a rank and A_layer */
    struct layer_share ks[M4D_MAX_LAYER_KINDS];
    uint64_t kA[M4D_MAX_LAYER_KINDS];
};

/* Parameters of stage r: N (all), N_e (expert part), N_lin (transformer
 * linear weights, what fp8 caches). The embedding V_p·h/t sits on the first
 * stage; the final norm and the LM head on the last; a tied head is a
 * separate copy whenever p > 1 (Megatron keeps one on each end). */
struct stage_params {
    uint64_t all, expert, linear;
};

/* --- estimate_state.c ------------------------------------------------------ */

struct layer_share m4d_mtp_share(bool *ok, const struct m4d_ctx *x, const struct shared *sh);
struct stage_params m4d_stage_params(bool *ok, const struct m4d_ctx *x, const struct shared *sh, uint64_t r);
uint64_t m4d_stage_root_params(bool *ok, const struct m4d_ctx *x, const struct shared *sh, uint64_t r);
bool m4d_fsdp_keeps_blocks(const struct m4d_ctx *x);
uint64_t m4d_fsdp_block_bytes(bool *ok, const struct m4d_ctx *x, const struct layer_share *s);
void m4d_state_terms(bool *ok, const struct m4d_ctx *x, const struct shared *sh, uint64_t r,
                     const struct stage_params *n, uint64_t *t);

/* --- estimate_activations.c ------------------------------------------------ */

uint64_t m4d_layer_activation(bool *ok, const struct m4d_ctx *x);
uint64_t m4d_checkpoint_bytes(bool *ok, const struct m4d_ctx *x);
uint64_t m4d_op_sac_layer_keep(bool *ok, const struct m4d_ctx *x);
uint64_t m4d_backward_working_set(bool *ok, const struct m4d_ctx *x);
void m4d_head_bytes(bool *ok, const struct m4d_ctx *x, uint64_t *keep, uint64_t *loss, uint64_t *stranded);
uint64_t m4d_mtp_loss_keep(bool *ok, const struct m4d_ctx *x);
uint64_t m4d_embedding_keep(bool *ok, const struct m4d_ctx *x);
void m4d_pp_kept_outputs(bool *ok, const struct m4d_ctx *x, uint64_t *at_loss, uint64_t *at_merge);
void m4d_stage_activations(bool *ok, const struct m4d_ctx *x, struct shared *sh, uint64_t r,
                           uint64_t *reported_in_flight, uint64_t *peak, uint64_t *at_embedding_grad,
                           uint64_t *stranded);
uint64_t m4d_selective_live(bool *ok, const struct m4d_ctx *x);

/* --- estimate_buffers.c ---------------------------------------------------- */

uint64_t m4d_pp_recv_buffers(bool *ok, const struct m4d_ctx *x, uint64_t r);
uint64_t m4d_embedding_grad_bytes(bool *ok, const struct m4d_ctx *x);
uint64_t m4d_megatron_fsdp_buffers(bool *ok, const struct m4d_ctx *x, const struct layer_share *s);
uint64_t m4d_megatron_fsdp_gather(bool *ok, const struct m4d_ctx *x, const struct layer_share *s, uint64_t units);
uint64_t m4d_fwd_bwd_buffers(bool *ok, const struct m4d_ctx *x, const mem4d_device *dev,
                             const struct layer_share *s);
uint64_t m4d_step_buffers(bool *ok, const struct m4d_ctx *x, const mem4d_device *dev,
                          const struct stage_params *n);
uint64_t m4d_process_groups(const struct m4d_ctx *x);
uint64_t m4d_userbuffers(bool *ok, const struct m4d_ctx *x);
uint64_t m4d_dispatcher_buffers(bool *ok, const struct m4d_ctx *x, const mem4d_device *dev);
uint64_t m4d_graph_static_buffers(bool *ok, const struct m4d_ctx *x, uint64_t r);

#endif
