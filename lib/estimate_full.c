/*
 * Full mode: every pipeline stage with its own weights, the micro-batches
 * its schedule keeps in flight, the last stage's logits and cross-entropy
 * temporaries, recomputation, the buffers Megatron-LM really allocates and
 * the fixed costs of CUDA and NCCL. Every term, its symbol and where it comes
 * from is in doc/full-model.md; symbols follow doc/formulas.md.
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "estimate_full.h"

/* The stage's peak is the largest of three moments: the forward/backward
 * peak, the first stage forming its embedding gradient, and the optimizer
 * step (no activation live). ACTIVATIONS and BUFFERS are those of the
 * winning moment; ties go to the earlier one. reload is the optimizer state
 * that is on the host during forward and backward and back on the GPU for
 * the step (optimizer_state_offload): OPTIMIZER holds it only when the step
 * wins. */
static uint64_t pick_moment(bool *ok, const struct m4d_ctx *x, struct shared *sh, uint64_t r,
                            uint64_t step_buffers, uint64_t reload, uint64_t gather, uint64_t *t)
{
    /* kept at every moment */
    uint64_t recv = 0; /* torchtitan's pipeline and CUDA graphs alone keep buffers of their own */
    if (M4D_UNLIKELY(x->fw == MEM4D_FRAMEWORK_TORCHTITAN && x->p > 1))
        recv = m4d_pp_recv_buffers(ok, x, r);
    if (M4D_UNLIKELY(x->cuda_graph))
        recv = add(ok, recv, m4d_graph_static_buffers(ok, x, r));
    uint64_t act, act_emb, fb = add(ok, add(ok, sh->fb, recv), gather), stranded, extra;
    m4d_stage_activations(ok, x, sh, r, &t[MEM4D_TERM_IN_FLIGHT], &act, &act_emb, &stranded);
    extra = stranded;
    t[MEM4D_TERM_ACTIVATIONS] = act;
    t[MEM4D_TERM_BUFFERS] = fb;
    t[MEM4D_TERM_PEAK_MOMENT] = MEM4D_MOMENT_FORWARD_BACKWARD;
    uint64_t best = add(ok, act, fb);
    if (r == 0) {
        uint64_t emb = add(ok, fb, sh->emb_grad);
        if (add(ok, act_emb, emb) > best) {
            t[MEM4D_TERM_ACTIVATIONS] = act_emb;
            t[MEM4D_TERM_BUFFERS] = emb;
            t[MEM4D_TERM_PEAK_MOMENT] = MEM4D_MOMENT_EMBEDDING_GRAD;
            best = add(ok, act_emb, emb);
            extra = 0;
        }
    }
    uint64_t step = add(ok, add(ok, step_buffers, recv), sh->fsdp_kept);
    if (r == x->p - 1) /* the merged outputs at the end of the pipeline step */
        step = add(ok, step, sh->pp_merge);
    if (add(ok, step, reload) > best) {
        t[MEM4D_TERM_ACTIVATIONS] = 0;
        t[MEM4D_TERM_BUFFERS] = step;
        t[MEM4D_TERM_OPTIMIZER] = add(ok, t[MEM4D_TERM_OPTIMIZER], reload);
        t[MEM4D_TERM_PEAK_MOMENT] = MEM4D_MOMENT_OPTIMIZER_STEP;
        extra = 0;
    }
    /* CUDA graphs: the graphed activations live in a private pool the eager
     * optimizer step cannot reuse; the smaller of the two stays reserved */
    if (M4D_UNLIKELY(x->cuda_graph))
        extra = add(ok, extra, min64(act, step > recv ? step - recv : 0));
    return extra;
}

/* Parameters on a rank of one kind of layer of a pattern: a Mamba-2, Gated
 * DeltaNet or linear layer split over t but its norm (and GDN's shared
 * gated norm), or the attention, MLP or expert half of a dense layer. */
static struct layer_share kind_share(bool *ok, const struct m4d_ctx *x, const struct m4d_layer_kind *k)
{
    struct layer_share s = {0, 0, 0};
    uint64_t split, repl;
    if (m4d_is_mixer(k->sym)) {
        if (!m4d_mixer_params(x, k->sym, &split, &repl))
            *ok = false;
        s.linear = m4d_ceil_div(split, x->t);
        s.replicated = repl;
        return s;
    }
    struct m4d_ctx one;
    m4d_kind_ctx(x, k, &one);
    return m4d_layer_share(ok, &one);
}

/* A_layer of one kind of layer of a pattern, its backward working set
 * (*backward) and the selective re-run's live set (*core_live). Selective
 * recompute, fp8's one-byte copies and fine-grained offloading act on the
 * attention and MLP kinds only: a Mamba-2 or Gated DeltaNet layer keeps what
 * its kernels save (an upper bound with fp8). */
static uint64_t kind_activation(bool *ok, const struct m4d_ctx *x, const struct m4d_layer_kind *k, uint64_t *backward,
                                uint64_t *core_live)
{
    uint64_t T = tokens(ok, x);
    if (m4d_is_mixer(k->sym)) {
        uint64_t repl, split;
        m4d_mixer_token_bytes(x, k->sym, &repl, &split);
        *backward = add(ok, muldiv(ok, T, m4d_mixer_backward_token_bytes(x, k->sym), x->t),
                        muldiv(ok, T, 2 * x->h, t_sp(x)));
        *core_live = 0;
        return add(ok, muldiv(ok, T, repl, t_sp(x)), muldiv(ok, T, split, x->t));
    }
    struct m4d_ctx one;
    m4d_kind_ctx(x, k, &one);
    *backward = m4d_backward_working_set(ok, &one);
    *core_live = m4d_selective_live(ok, &one);
    uint64_t a = m4d_layer_activation(ok, &one);
    /* the attention output gate: its sigmoid output and the gated output
     * out_proj takes, 2·a·d_v elements of 2 bytes */
    return one.out_gate && one.a ? add(ok, a, muldiv(ok, T, 4 * one.a * one.v_dim, x->t)) : a;
}

/* The per-kind terms of a layer pattern; one layer's parameters for the
 * framework buffers are the largest kind's. */
static void pattern_init(bool *ok, const struct m4d_ctx *x, struct shared *sh)
{
    uint64_t big = 0, amax = 0, back = 0, live = 0;
    for (uint64_t i = 0; i < x->nkinds; i++) {
        uint64_t b, cl;
        sh->ks[i] = kind_share(ok, x, &x->kinds[i]);
        sh->kA[i] = kind_activation(ok, x, &x->kinds[i], &b, &cl);
        uint64_t all = add(ok, add(ok, sh->ks[i].linear, sh->ks[i].expert), sh->ks[i].replicated);
        if (all > big) {
            big = all;
            sh->share = sh->ks[i];
        }
        amax = max64(amax, sh->kA[i]);
        back = max64(back, b);
        live = max64(live, cl);
    }
    sh->dense = sh->share;
    sh->A = sh->A_dense = amax;
    sh->backward = back;
    sh->core_live = live;
}

/* The terms that depend on the group of layouts alone (not on b, the
 * recompute mode or m): one layer's shares, the MTP modules, the embedding,
 * the FSDP blocks, the communicators and FIXED but the token-sized buffers.
 * A layer pattern's block and FSDP buffers wait for its kinds (shared_init). */
static void group_terms(bool *ok, const struct m4d_ctx *x, const struct m4d_ctx *dense, const mem4d_device *dev,
                        struct shared *sh)
{
    sh->share = m4d_layer_share(ok, x);
    sh->dense = x->experts ? m4d_layer_share(ok, dense) : sh->share;
    sh->mtp = m4d_mtp_share(ok, x, sh);
    sh->emb = muldiv(ok, x->Vp, x->h, x->t);
    sh->emb_grad = m4d_embedding_grad_bytes(ok, x);
    if (!x->nlt) {
        sh->block = m4d_fsdp_block_bytes(ok, x, &sh->share);
        sh->fsdp_kept = x->fsdp_double ? m4d_megatron_fsdp_buffers(ok, x, &sh->share) : 0;
    }
    sh->groups = m4d_process_groups(x);
    sh->fixed = add(ok, dev->v[MEM4D_DEVICE_CUDA_CONTEXT_BYTES], mul(ok, sh->groups, dev->v[MEM4D_DEVICE_NCCL_BYTES_PER_GROUP]));
}

static void group_store(struct m4d_state_cache *c, const struct shared *sh)
{
    c->share[0] = sh->share.linear, c->share[1] = sh->share.expert, c->share[2] = sh->share.replicated;
    c->dense[0] = sh->dense.linear, c->dense[1] = sh->dense.expert, c->dense[2] = sh->dense.replicated;
    c->mtp[0] = sh->mtp.linear, c->mtp[1] = sh->mtp.expert, c->mtp[2] = sh->mtp.replicated;
    c->emb = sh->emb, c->emb_grad = sh->emb_grad, c->block = sh->block;
    c->fsdp_kept = sh->fsdp_kept, c->groups = sh->groups, c->fixed = sh->fixed;
    c->have_group = true;
}

static void group_load(const struct m4d_state_cache *c, struct shared *sh)
{
    sh->share = (struct layer_share){c->share[0], c->share[1], c->share[2]};
    sh->dense = (struct layer_share){c->dense[0], c->dense[1], c->dense[2]};
    sh->mtp = (struct layer_share){c->mtp[0], c->mtp[1], c->mtp[2]};
    sh->emb = c->emb, sh->emb_grad = c->emb_grad, sh->block = c->block;
    sh->fsdp_kept = c->fsdp_kept, sh->groups = c->groups, sh->fixed = c->fixed;
}

/* The terms that depend on b (and m) but not on the recompute mode; the
 * search's cache keeps them for the group's other modes (shared_init). */
static void b_terms(bool *ok, const struct m4d_ctx *x, const mem4d_device *dev, const struct shared *sh,
                    struct m4d_b_terms *bt)
{
    bt->b = x->b;
    bt->C = m4d_checkpoint_bytes(ok, x);
    m4d_head_bytes(ok, x, &bt->head_keep, &bt->loss, &bt->stranded);
    m4d_pp_kept_outputs(ok, x, &bt->pp_kept, &bt->pp_merge);
    bt->emb_keep = m4d_embedding_keep(ok, x);
    bt->fb = m4d_fwd_bwd_buffers(ok, x, dev, &sh->share);
    bt->fixed = add(ok, m4d_userbuffers(ok, x), m4d_dispatcher_buffers(ok, x, dev));
}

bool m4d_b_key(const struct m4d_ctx *x, struct m4d_ctx *key)
{
    if (x->nlt)
        return false;
    memcpy(key, x, sizeof *x); /* padding too: keys are compared bytewise */
    key->b = key->m = key->recompute = 0;
    key->v = key->split.v = 0;
    /* Megatron reads the ZeRO stage in a b term only from 2 on (the FSDP
     * buffers): the distributed optimizer's 1 and 0 share them */
    if (key->fw == MEM4D_FRAMEWORK_MEGATRON && key->zero < 2)
        key->zero = 0;
    return true;
}

/* The cache's slot of b: the one holding it, else the free one where b's
 * probe sequence ends, else NULL. */
static struct m4d_b_terms *b_slot(struct m4d_state_cache *c, uint64_t b)
{
    _Static_assert(M4D_B_SLOTS == 16, "m4d_b_probe() hashes into 16 slots");
    if (!c->per_b)
        return NULL;
    for (size_t i = 0; i < M4D_B_SLOTS; i++) {
        struct m4d_b_terms *e = &c->per_b[m4d_b_probe(b, i)];
        if (e->b == b || e->b == 0)
            return e;
    }
    return NULL;
}

bool m4d_act_key(const struct m4d_ctx *x, uint64_t key[M4D_ACT_KEY_LEN])
{
    if (x->nlt)
        return false;
    const uint64_t k[] = {
        x->a, x->attn_dropout, x->c, x->cap_pad, x->cap_ppm, x->delay_wgrad, x->dh, x->dispatcher,
        x->distribute_saved, x->ep, x->ep_overlap, x->etp, x->experts, x->f, x->fe, x->flash, x->fp32_residual,
        x->fp8, x->fs, (uint64_t)x->fw, x->gated, x->h, x->hidden_dropout, x->idx_dim, x->idx_heads, x->idx_topk,
        x->k, x->kv_heads, x->kv_lora, x->norms, x->offload_modules, x->offload_ppm, x->pad_multiple, x->q_lora,
        x->qk_dim, x->rc_modules, x->rope_dim, x->router_bytes, x->s, x->sp, x->t, x->topk, x->v_dim,
        x->first_dense, x->moe_period, x->softmax.keys, x->softmax.bpb_heads, x->latent,
    };
    _Static_assert(sizeof k / sizeof k[0] == M4D_ACT_KEY_LEN, "M4D_ACT_KEY_LEN counts m4d_act_key()'s fields");
    memcpy(key, k, sizeof k);
    return true;
}

/* The terms of one (b, recompute mode): m4d_act_key() lists what they read. */
static void act_terms(bool *ok, const struct m4d_ctx *x, const struct m4d_ctx *dense, struct m4d_act_terms *a)
{
    a->A_dense = x->experts ? m4d_layer_activation(ok, dense) : 0;
    a->A = m4d_layer_activation(ok, x);
    if (!x->experts)
        a->A_dense = a->A;
    a->core_live = m4d_selective_live(ok, x);
    a->backward = m4d_backward_working_set(ok, x);
    if (x->experts && (x->first_dense || x->moe_period > 1))
        a->backward = max64(a->backward, m4d_backward_working_set(ok, dense));
    a->sac = m4d_op_sac_layer_keep(ok, x);
}

static void shared_init(bool *ok, const struct m4d_ctx *x, const mem4d_device *dev, struct shared *sh,
                        struct m4d_state_cache *cache)
{
    struct m4d_ctx dense; /* an MoE model's dense layers (a copy of the context: only when there are experts) */
    bool keep = cache && !x->nlt; /* a pattern's kinds replace the share below */
    struct m4d_act_terms *act = keep ? cache->act : NULL;
    bool need_group = !(keep && cache->have_group), need_act = !(act && act->have);
    if (M4D_UNLIKELY(need_group || need_act) && x->experts)
        m4d_ctx_dense(x, &dense);
    if (M4D_LIKELY(!need_group)) {
        group_load(cache, sh);
    } else {
        bool gok = true;
        group_terms(&gok, x, &dense, dev, sh);
        if (keep && gok)
            group_store(cache, sh);
        *ok = *ok && gok;
    }
    struct m4d_act_terms own_act;
    if (M4D_UNLIKELY(need_act)) {
        bool aok = true;
        struct m4d_act_terms *to = act ? act : &own_act;
        act_terms(&aok, x, &dense, to);
        to->have = act && aok;
        act = to;
        *ok = *ok && aok;
    }
    sh->T = tokens(ok, x);
    sh->A_dense = act->A_dense, sh->A = act->A, sh->core_live = act->core_live, sh->backward = act->backward;
    /* an MTP module is a GPT layer, an expert one with experts, even beside
     * a layer pattern (whose kinds replace A below) */
    sh->A_mtp = x->experts ? act->A : act->A_dense;
    sh->mbk[0].have = sh->mbk[1].have = sh->mbk[2].have = false;
    if (x->nlt) {
        pattern_init(ok, x, sh);
        sh->block = m4d_fsdp_block_bytes(ok, x, &sh->share);
        sh->fsdp_kept = x->fsdp_double ? m4d_megatron_fsdp_buffers(ok, x, &sh->share) : 0;
    }
    sh->sac = act->sac;
    struct m4d_b_terms own, *bt = keep ? b_slot(cache, x->b) : NULL;
    if (!bt || bt->b != x->b) {
        bool bok = true;
        struct m4d_b_terms *to = bt ? bt : &own;
        b_terms(&bok, x, dev, sh, to);
        if (bt && !bok)
            bt->b = 0; /* an overflow: not kept */
        bt = to;
        *ok = *ok && bok;
    }
    sh->C = bt->C, sh->head_keep = bt->head_keep, sh->loss = bt->loss, sh->stranded = bt->stranded;
    sh->emb_keep = bt->emb_keep, sh->fb = bt->fb, sh->pp_kept = bt->pp_kept, sh->pp_merge = bt->pp_merge;
    sh->fixed = add(ok, sh->fixed, bt->fixed);
}

/* A middle stage's parameters and state terms depend on its layer count
 * alone; consecutive middle stages reuse them. */
struct middle {
    uint64_t l, e; /* layers and expert layers; l = 0: nothing cached */
    struct stage_params n;
    uint64_t w, g, o;
};

/* The stage's parameters, state terms and step buffers when the search's
 * cache does not hold them (out of line: a search finds them cached for
 * all but a group's first layouts). */
static M4D_NOINLINE void stage_state(bool *ok, const struct m4d_ctx *x, const mem4d_device *dev, struct shared *sh,
                                     uint64_t r, uint64_t l, bool middle, int slot, uint64_t *t, struct middle *mid,
                                     struct m4d_state_cache *cache, struct stage_params *np, uint64_t *stepb)
{
    struct stage_params n;
    uint64_t e = middle ? m4d_stage_moe_layers(x, r) : 0;
    if (middle && mid->l == l && mid->e == e) {
        n = mid->n;
        t[MEM4D_TERM_WEIGHTS] = mid->w;
        t[MEM4D_TERM_GRADIENTS] = mid->g;
        t[MEM4D_TERM_OPTIMIZER] = mid->o;
    } else {
        /* the state terms add to their row: it starts from zero (copied,
         * not memset: gcc's memset of a row is a slow `rep stos`) */
        static const struct m4d_stage zero;
        memcpy(t, zero.t, sizeof zero.t);
        n = m4d_stage_params(ok, x, sh, r);
        m4d_state_terms(ok, x, sh, r, &n, t);
        if (middle)
            *mid = (struct middle){l, e, n, t[MEM4D_TERM_WEIGHTS], t[MEM4D_TERM_GRADIENTS], t[MEM4D_TERM_OPTIMIZER]};
    }
    *stepb = m4d_step_buffers(ok, x, dev, &n);
    if (slot >= 0 && *ok) {
        cache->have[slot] = true;
        cache->m[slot] = x->m;
        cache->all[slot] = n.all, cache->expert[slot] = n.expert, cache->linear[slot] = n.linear;
        cache->w[slot] = t[MEM4D_TERM_WEIGHTS], cache->g[slot] = t[MEM4D_TERM_GRADIENTS];
        cache->o[slot] = t[MEM4D_TERM_OPTIMIZER], cache->step[slot] = *stepb;
    }
    *np = n;
}

/* Stage r's row, its four sums (m4d_stage_sums()'s, from the allocation sum
 * computed here) included; false when a term overflows, *sums_ok false when
 * only a sum does. */
static bool stage_memory(const struct m4d_ctx *x, const mem4d_device *dev, struct shared *sh, uint64_t r,
                         uint64_t *t, struct middle *mid, struct m4d_state_cache *cache, bool *sums_ok)
{
    bool ok = true;
    bool middle = r != 0 && r != x->p - 1;
    uint64_t l = m4d_split_rank_layers(&x->split, r);
    int slot = !cache ? -1 : r == 0 ? 0 : r == x->p - 1 ? 2 : r == 1 ? 1 : -1;
    struct stage_params n;
    uint64_t stepb; /* the optimizer step's buffers (m4d_step_buffers) */
    if (M4D_UNLIKELY(x->nlt))
        middle = false; /* a pattern's middle stages differ in their layers' kinds */
    /* the search's group, seen before (torchtitan's state depends on m too) */
    if (M4D_LIKELY(slot >= 0 && cache->have[slot] &&
                   (x->fw != MEM4D_FRAMEWORK_TORCHTITAN || cache->m[slot] == x->m))) {
        n = (struct stage_params){cache->all[slot], cache->expert[slot], cache->linear[slot]};
        stepb = cache->step[slot];
        t[MEM4D_TERM_WEIGHTS] = cache->w[slot];
        t[MEM4D_TERM_GRADIENTS] = cache->g[slot];
        t[MEM4D_TERM_OPTIMIZER] = cache->o[slot];
    } else {
        stage_state(&ok, x, dev, sh, r, l, middle, slot, t, mid, cache, &n, &stepb);
    }
    /* Megatron-Core's OptimizerStateOffloader (--offload-optimizer-states)
     * copies the Adam moments and the fp32 main parameters to the host after
     * each step and frees them on the GPU, and reloads them before the next
     * step (doc/full-model.md, "Optimizer state offload"). */
    uint64_t reload = 0;
    if (M4D_UNLIKELY(x->opt_state_offload)) {
        reload = t[MEM4D_TERM_OPTIMIZER];
        t[MEM4D_TERM_OPTIMIZER] = 0;
    }
    /* Megatron-FSDP's gathered layers at the start of backward (the stage's units) */
    uint64_t gather = 0;
    if (M4D_UNLIKELY(x->zero >= 3 && x->fw == MEM4D_FRAMEWORK_MEGATRON))
        gather = m4d_megatron_fsdp_gather(&ok, x, &sh->share, n.all - m4d_stage_root_params(&ok, x, sh, r));
    uint64_t stranded = pick_moment(&ok, x, sh, r, stepb, reload, gather, t);
    uint64_t state = add(&ok, add(&ok, t[MEM4D_TERM_WEIGHTS], t[MEM4D_TERM_GRADIENTS]), t[MEM4D_TERM_OPTIMIZER]);
    uint64_t alloc = add(&ok, add(&ok, state, t[MEM4D_TERM_ACTIVATIONS]), t[MEM4D_TERM_BUFFERS]);
    uint64_t frag = add(&ok, m4d_fragmentation(&ok, x, dev, alloc), stranded);
    t[MEM4D_TERM_FRAGMENTATION] = frag;
    t[MEM4D_TERM_FIXED] = sh->fixed;
    t[MEM4D_TERM_PARAMS] = n.all;
    t[MEM4D_TERM_LAYERS] = l;
    /* m4d_stage_sums() of the row: alloc is its PEAK_ALLOCATED, the five
     * main terms summed in the same order */
    t[MEM4D_TERM_PEAK_ALLOCATED] = alloc;
    t[MEM4D_TERM_OVERHEAD] = add(sums_ok, add(sums_ok, t[MEM4D_TERM_BUFFERS], frag), sh->fixed);
    t[MEM4D_TERM_PEAK_RESERVED] = add(sums_ok, alloc, frag);
    t[MEM4D_TERM_TOTAL] = add(sums_ok, t[MEM4D_TERM_PEAK_RESERVED], sh->fixed);
    return ok;
}

static void warn(mem4d_report *r, const char *text)
{
    if (r->nwarn < M4D_MAX_WARN)
        m4d_strlcpy(r->warn[r->nwarn++], text, sizeof r->warn[0]);
}

/* Settings that change memory in ways the model does not follow: the
 * estimate stands, with a warning naming each. */
static void unmodelled_warnings(const struct m4d_ctx *x, const mem4d_device *dev, mem4d_report *r)
{
    if (x->compile)
        warn(r, "compile: torch.compile's effect on the transformer blocks' memory (fused "
                "elementwise kernels, Inductor's saved tensors) is not modelled; measured peaks are lower");
    if (x->tp_overlap && x->fw == MEM4D_FRAMEWORK_TORCHTITAN)
        warn(r, "async_tp: asynchronous tensor parallelism's symmetric-memory buffers and "
                "micro-pipelined matmuls are not modelled");
    if (x->opt_state_offload)
        warn(r, "optimizer_state_offload: the step time leaves out the host copies of the optimizer state "
                "(the copy out after each step, the reload the next step waits for)");
    if (x->float8 == 2)
        warn(r, "float8 rowwise: modelled as tensorwise (no float8 all-gather, no weight cache)");
    /* torchao's float8 linears: no memory term changes (doc/full-model.md), and
     * the step time has no float8 GEMM of theirs (fp8 is Transformer Engine's). */
    if (x->float8 && !x->fp8 && dev->v[MEM4D_DEVICE_PEAK_FLOPS])
        warn(r, "float8: the step time runs the linear GEMMs in bf16 (torchao's float8 GEMMs and casts are not "
                "modelled) and MFU is of the bf16 peak: the float8 job is slower here than it runs");
    enum m4d_window window = m4d_window_timing(x);
    if (window == M4D_WINDOW_TIMED && dev->v[MEM4D_DEVICE_PEAK_FLOPS])
        warn(r, x->chunk ? "attention_chunk_size: MFU counts the chunked layers' attention over all earlier tokens "
                           "(Megatron-LM's FLOP count has no chunk term); the step time charges only each chunk's "
                           "causal triangle, as torchtitan's FlexAttention block mask skips the rest"
                         : "window_size: MFU counts the local layers' attention over all earlier tokens (Megatron-LM's "
                           "FLOP count has no window term); the step time charges only the window's keys");
    if (window == M4D_WINDOW_TIMED_FULL && dev->v[MEM4D_DEVICE_PEAK_FLOPS])
        warn(r, x->chunk && x->c > 1
                    ? "attention_chunk_size with cp > 1: the step time charges the chunked layers full causal "
                      "attention (torchtitan runs the chunks with FlexAttention, which its context parallelism "
                      "does not take)"
                : x->chunk && !x->nlt
                    ? "attention_chunk_size: the step time charges the chunked layers full causal attention (only "
                      "torchtitan's FlexAttention runs the chunks in training: Megatron-Core has no chunked "
                      "attention, FlashAttention-2 no chunk argument, FlashAttention-3's is forward only)"
                : x->c > 1 ? "window_size with cp > 1: the step time charges the local layers full causal attention "
                             "(the context-parallel ring's chunks under a sliding window are not modelled)"
                : x->chunk ? "attention_chunk_size beside a layer pattern: the step time charges the chunked layers "
                             "full causal attention (the chunked layers among the pattern's are not modelled)"
                           : "window_size beside a layer pattern: the step time charges the local layers full causal "
                             "attention (the window's layers among the pattern's are not modelled)");
    if (x->act_offload && dev->v[MEM4D_DEVICE_HOST_BANDWIDTH] == 0)
        warn(r, "activation_offload_layers: the device's host_bandwidth is unknown, so the step time does not "
                "count the host transfers, which stall compute when the host link is slower than the layers "
                "they overlap");
    /* A link of bandwidth 0 is unknown, not free: the step time leaves its
     * transfers out, and says so (issue 24). */
    const uint64_t *dv = dev->v;
    uint64_t gpn = dv[MEM4D_DEVICE_GPUS_PER_NODE] ? dv[MEM4D_DEVICE_GPUS_PER_NODE] : 1;
    uint64_t domain = dv[MEM4D_DEVICE_NVLINK_DOMAIN] ? dv[MEM4D_DEVICE_NVLINK_DOMAIN] : gpn;
    bool nics = dv[MEM4D_DEVICE_NICS_PER_NODE] && dv[MEM4D_DEVICE_NIC_BANDWIDTH];
    if (dv[MEM4D_DEVICE_PEAK_FLOPS] && x->world > 1 && dv[MEM4D_DEVICE_INTRA_NODE_BANDWIDTH] == 0)
        warn(r, "intra_node_bandwidth is 0 (unknown): the step time leaves out the communication inside a node "
                "(set it, or use a GPU preset)");
    if (dv[MEM4D_DEVICE_PEAK_FLOPS] && x->world > domain && !nics && dv[MEM4D_DEVICE_INTER_NODE_BANDWIDTH] == 0)
        warn(r, "inter_node_bandwidth is 0 (unknown): the step time leaves out the communication between nodes "
                "(set it, or nics_per_node and nic_bandwidth)");
    if (dv[MEM4D_DEVICE_PEAK_FLOPS] && x->dispatcher == MEM4D_MOE_DISPATCHER_HYBRIDEP && !m4d_dispatcher_sourced(dev, x->dispatcher))
        warn(r, "moe_dispatcher hybridep: its NVLink rate is published on B200/GB200 (900 GB/s) only, not on this "
                "device's link (its H100 figures are RDMA-bound): the dispatch time uses the GB200 rate, unsourced here");
    if (dv[MEM4D_DEVICE_PEAK_FLOPS] && x->dispatcher == MEM4D_MOE_DISPATCHER_DEEPEP && !m4d_dispatcher_sourced(dev, x->dispatcher))
        warn(r, "moe_dispatcher deepep: its rates are measured on NVIDIA H800/H20 (NVLink, CUDA kernels) only; "
                "ROCm/DeepEP publishes none on this AMD GPU (xGMI, HIP kernels): the dispatch time uses the "
                "NVIDIA rates, unsourced here");
    /* Transformer Engine refuses fp8 before compute capability 8.9
     * (transformer_engine/pytorch/fp8.py, check_fp8_support()). */
    if (dv[MEM4D_DEVICE_PEAK_FLOPS] && x->fp8 && dv[MEM4D_DEVICE_PEAK_FP8_FLOPS] == 0)
        warn(r, "fp8: the device has no fp8 peak (peak_fp8_flops 0; Transformer Engine refuses fp8 before "
                "compute capability 8.9, an A100): the GEMMs run at the bf16 rate, MFU is of the bf16 peak");
    /* MXFP8's block scales are Blackwell's tensor cores': Transformer
     * Engine runs MXFP8BlockScaling on compute capability 10.0 and later
     * alone (check_mxfp8_support, transformer_engine/pytorch/fp8.py; ROCm's
     * port on gfx950, an MI350, not an MI300X), which a device states here by
     * its fp4 peak (as m4d_check_device() reads it for NVFP4). A device that
     * states no fp8 peak has the warning above. */
    if (dv[MEM4D_DEVICE_PEAK_FLOPS] && x->fp8 && x->fp8_recipe == M4D_FP8_RECIPE_MXFP8 &&
        dv[MEM4D_DEVICE_PEAK_FP8_FLOPS] && dv[MEM4D_DEVICE_PEAK_FP4_FLOPS] == 0)
        warn(r, "fp8_recipe mxfp8: Transformer Engine runs MXFP8 on compute capability 10.0 and later only "
                "(Blackwell; on ROCm an MI350), and this device states no fp4 peak (peak_fp4_flops 0, a Hopper or "
                "an MI300X): Megatron-LM would refuse the job; it is estimated as if MXFP8 ran");
    if (dv[MEM4D_DEVICE_PEAK_FLOPS] && dv[MEM4D_DEVICE_HBM_BANDWIDTH] == 0)
        warn(r, "hbm_bandwidth is 0 (unknown): the step time leaves out the memory-bound time of kernels");
    /* nanotron's build_model balances the stages by compute cost with the
     * lm_head counted (V·h against 4h² + 3fh a layer), which puts more
     * layers on the first stages than L/p. */
    if (x->fw == MEM4D_FRAMEWORK_NANOTRON && x->p > 1 && !x->split.first && !x->split.last)
        warn(r, "nanotron split: nanotron balances pipeline stages by compute cost, the lm_head "
                "included, and gives the first stages more layers than an even split; set "
                "first_stage_layers and last_stage_layers to its split");
}

/* The middle stages hold the same layers and state as stage 1 and keep
 * no more micro-batches in flight (min(p - r, m), and the interleaved
 * warm-up, fall with r), so none exceeds stage 1 in any term: with
 * peak_only, stages 0, 1 and p - 1 decide the peak (tests/test-search.c
 * checks this against every stage). */
mem4d_status m4d_estimate_full(const struct m4d_ctx *x, const mem4d_device *dev, mem4d_report *r, bool peak_only,
                               struct m4d_state_cache *cache)
{
    bool ok = true;
    struct shared sh;
    struct middle mid = {0};
    shared_init(&ok, x, dev, &sh, cache);
    /* A pattern of dense and expert layers, or a layer table, can make a
     * middle stage heavier than stage 1. */
    if (M4D_UNLIKELY((x->experts && (x->first_dense || x->moe_period > 1)) || x->split.nvs || x->nlt))
        peak_only = false;
    r->peak_only = peak_only;
    /* stage_memory() writes every term of its row and its four sums: no
     * row is cleared first */
    bool sums_ok = true;
    uint64_t peak = 0;
    r->peak_stage = 0;
    for (uint64_t i = 0; ok && i < x->p; i = m4d_stage_next(peak_only, i, x->p)) {
        uint64_t *t = r->stages[i].t;
        if (!stage_memory(x, dev, &sh, i, t, &mid, cache, &sums_ok)) {
            m4d_msg(r->msg, sizeof r->msg, "the estimate of stage %llu overflows 64 bits", (unsigned long long)i);
            return MEM4D_E_RANGE;
        }
        if (t[MEM4D_TERM_TOTAL] > peak || i == 0) /* the first stage of the largest TOTAL */
            peak = t[MEM4D_TERM_TOTAL], r->peak_stage = (uint32_t)i;
    }
    if (!ok || !sums_ok) {
        m4d_msg(r->msg, sizeof r->msg, "the estimate overflows 64 bits");
        return MEM4D_E_RANGE;
    }
    r->nstages = (uint32_t)x->p;
    r->info[MEM4D_INFO_PROCESS_GROUPS] = sh.groups;
    if (!peak_only) /* a peak-only report is the search's scratch: nobody reads its warnings */
        unmodelled_warnings(x, dev, r);
    return MEM4D_OK;
}

bool m4d_floor_over_limit(const struct m4d_ctx *x, const mem4d_device *dev, const mem4d_report *r)
{
    uint64_t most = 0;
    for (uint32_t i = 0; i < r->nstages; i = (uint32_t)m4d_stage_next(r->peak_only, i, r->nstages)) {
        const uint64_t *t = r->stages[i].t;
        bool ok = true;
        uint64_t frag = m4d_fragmentation(&ok, x, dev, t[MEM4D_TERM_PEAK_ALLOCATED]);
        uint64_t extra = ok && t[MEM4D_TERM_FRAGMENTATION] > frag ? t[MEM4D_TERM_FRAGMENTATION] - frag : 0;
        most = max64(most, t[MEM4D_TERM_TOTAL] - extra);
    }
    return most > dev->v[MEM4D_DEVICE_MEMORY_BYTES] || m4d_over_fit_limit(dev, r->mode, most);
}
