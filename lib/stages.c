/*
 * Pipeline stage geometry: the layers, first layer and expert layers of each
 * pipeline rank and of each of its virtual-stage chunks (doc/full-model.md,
 * "Stages").
 * SPDX-License-Identifier: MIT
 */
#include "private.h"

/* ℓ_r: layers of stage r (Megatron's --decoder-first/last-pipeline-num-layers,
 * or its v virtual stages: a layer table, or a shorter first/last one). */
uint64_t m4d_stage_layers(const struct m4d_ctx *x, uint64_t r)
{
    if (m4d_chunked(x))
        return m4d_vs_rank_layers(x, r);
    if (!x->first_layers && !x->last_layers)
        return x->L / x->p;
    if (r == 0 && x->first_layers)
        return x->first_layers;
    if (r == x->p - 1 && x->last_layers)
        return x->last_layers;
    uint64_t ends = (x->first_layers > 0) + (x->last_layers > 0);
    return (x->L - x->first_layers - x->last_layers) / (x->p - ends);
}

/* The first layer of stage r (no vpp). */
static uint64_t stage_first_layer(const struct m4d_ctx *x, uint64_t r)
{
    if (m4d_chunked(x))
        return m4d_vs_first_layer(x, r);
    return r == 0 ? 0 : m4d_stage_layers(x, 0) + (r - 1) * m4d_stage_layers(x, 1);
}

/* The first layer of chunk j of stage r with vpp: Megatron-Core gives each
 * of a stage's v chunks 1/v of its layers (uneven first/last stages
 * included, each divisible by v), and chunk j of every stage follows chunk
 * j of the stage before it: j·L/v + (the layers of stages < r)/v. Even
 * stages: (j·p + r)·L/(p·v). */
uint64_t m4d_chunk_first_layer(const struct m4d_ctx *x, uint64_t r, uint64_t j)
{
    if (m4d_chunked(x))
        return m4d_vs_first_layer(x, j * x->p + r);
    return j * (x->L / x->v) + stage_first_layer(x, r) / x->v;
}

/* Layers of chunk j of stage r. */
uint64_t m4d_chunk_layers(const struct m4d_ctx *x, uint64_t r, uint64_t j)
{
    return m4d_chunked(x) ? m4d_vs_layers(x, j * x->p + r) : m4d_stage_layers(x, r) / x->v;
}

/* L_e(r): expert layers of stage r; with vpp, of its v chunks of ℓ_r/v layers. */
uint64_t m4d_stage_moe_layers(const struct m4d_ctx *x, uint64_t r)
{
    if (!x->experts)
        return 0;
    if (x->v <= 1)
        return m4d_moe_layers_in(x, stage_first_layer(x, r), m4d_stage_layers(x, r));
    uint64_t e = 0;
    for (uint64_t j = 0; j < x->v; j++)
        e += m4d_moe_layers_in(x, m4d_chunk_first_layer(x, r, j), m4d_chunk_layers(x, r, j));
    return e;
}

/* Expert layers of the heaviest chunk of stage r (the stage itself without vpp). */
uint64_t m4d_chunk_moe_layers(const struct m4d_ctx *x, uint64_t r)
{
    if (x->v <= 1 || !x->experts)
        return m4d_stage_moe_layers(x, r);
    uint64_t e = 0;
    for (uint64_t j = 0; j < x->v; j++) {
        uint64_t n = m4d_moe_layers_in(x, m4d_chunk_first_layer(x, r, j), m4d_chunk_layers(x, r, j));
        e = n > e ? n : e;
    }
    return e;
}
