/*
 * Full mode, term by term: every switch moves the terms doc/full-model.md
 * says it moves, by the amount derived there, and nothing else.
 * The base case is Llama-3.1-8B, tp 2, pp 4, dp 2, s = 4096, b = 1,
 * global batch 64 (m = 32) on an H100-80.
 * SPDX-License-Identifier: MIT
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

#define MiB (UINT64_C(1) << 20)

/* Symbols of the base case (doc/formulas.md). */
enum {
    H = 4096, F = 14336, A_HEADS = 32, K_HEADS = 8, DH = 128, V = 128256, TP = 2, S = 4096,
};
static const uint64_t T = S;                                   /* tokens per micro-batch, c = 1 */
static const uint64_t P_LAYER = (2 * H * A_HEADS * DH + 2 * H * K_HEADS * DH) / TP + 3 * H * F / TP + 2 * H;
static const uint64_t EMB = (uint64_t)V * H / TP;              /* V_p = V: 128256 = 501 x 256 */
/* A_layer = T·(8h/t_sp + (2(2a+2k)·dh + 2·3f + 4a)/t), t_sp = t with SP. */
static const uint64_t A_LAYER = T * 8 * H / TP + T * (2 * (2 * A_HEADS + 2 * K_HEADS) * DH + 2 * 3 * F + 4 * A_HEADS) / TP;
static const uint64_t CKPT = T * 2 * H / TP;                   /* C = 2·T·h/t_sp */
/* One layer's backward: T·(2·3f + 4a·dh)/t + 2·T·h/t_sp. */
static const uint64_t WS = T * (2 * 3 * F + 4 * A_HEADS * DH) / TP + T * 2 * H / TP;

static mem4d_model *model;
static mem4d_device *device;

static void setup(void)
{
    model = tu_model("llama3.1-8b");
    device = tu_device("h100-80");
}

static void teardown(void)
{
    mem4d_model_free(model);
    mem4d_device_free(device);
}

static uint64_t dev(mem4d_device_param k)
{
    uint64_t v = 0;
    ck_assert_int_eq(mem4d_device_get(device, k, &v), MEM4D_OK);
    return v;
}

/* Estimate the base layout with extra "key=value" settings (NULL-terminated). */
static mem4d_report *run(const char *first, ...)
{
    mem4d_layout *l = tu_layout("tp=2", "pp=4", "dp=2", "seq=4096", "gbs=64", NULL);
    va_list ap;
    va_start(ap, first);
    for (const char *kv = first; kv; kv = va_arg(ap, const char *)) {
        char key[64];
        const char *eq = strchr(kv, '=');
        memcpy(key, kv, (size_t)(eq - kv));
        key[eq - kv] = '\0';
        ck_assert_msg(mem4d_layout_set_str(l, key, eq + 1) == MEM4D_OK, "cannot set %s", kv);
    }
    va_end(ap);
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    ck_assert_msg(mem4d_estimate(model, l, device, r) == MEM4D_OK, "%s", mem4d_report_message(r));
    ck_assert_int_eq(mem4d_report_mode(r), MEM4D_MODE_FULL);
    mem4d_layout_free(l);
    return r;
}

static uint64_t get(const mem4d_report *r, uint32_t stage, mem4d_term t)
{
    uint64_t v = 0;
    ck_assert_int_eq(mem4d_report_get(r, stage, t, &v), MEM4D_OK);
    return v;
}

static uint64_t info(const mem4d_report *r, mem4d_info i)
{
    uint64_t v = 0;
    ck_assert_int_eq(mem4d_report_info(r, i, &v), MEM4D_OK);
    return v;
}

/* The primary terms (not the derived sums) of every stage are equal,
 * except those in `moved` (a bit mask of mem4d_term). */
static void same_except(const mem4d_report *a, const mem4d_report *b, unsigned moved)
{
    static const mem4d_term primary[] = {MEM4D_TERM_WEIGHTS, MEM4D_TERM_GRADIENTS, MEM4D_TERM_OPTIMIZER,
                                         MEM4D_TERM_ACTIVATIONS, MEM4D_TERM_BUFFERS, MEM4D_TERM_FIXED,
                                         MEM4D_TERM_PARAMS, MEM4D_TERM_LAYERS, MEM4D_TERM_IN_FLIGHT};
    ck_assert_uint_eq(mem4d_report_num_stages(a), mem4d_report_num_stages(b));
    for (uint32_t s = 0; s < mem4d_report_num_stages(a); s++)
        for (size_t i = 0; i < sizeof primary / sizeof primary[0]; i++)
            if (!(moved & (1u << primary[i])))
                ck_assert_msg(get(a, s, primary[i]) == get(b, s, primary[i]), "stage %u term %s moved", s,
                              mem4d_term_name(primary[i]));
}

#define BIT(t) (1u << (t))

START_TEST(stage_parameters)
{
    mem4d_report *r = run(NULL);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_PARAMS), 8 * P_LAYER + EMB);
    ck_assert_uint_eq(get(r, 1, MEM4D_TERM_PARAMS), 8 * P_LAYER);
    ck_assert_uint_eq(get(r, 2, MEM4D_TERM_PARAMS), 8 * P_LAYER);
    ck_assert_uint_eq(get(r, 3, MEM4D_TERM_PARAMS), 8 * P_LAYER + H + EMB); /* final norm + LM head */
    for (uint32_t s = 0; s < 4; s++) {
        uint64_t n = get(r, s, MEM4D_TERM_PARAMS);
        ck_assert_uint_eq(get(r, s, MEM4D_TERM_WEIGHTS), 2 * n);
        ck_assert_uint_eq(get(r, s, MEM4D_TERM_GRADIENTS), 4 * n);
        ck_assert_uint_eq(get(r, s, MEM4D_TERM_OPTIMIZER), 12 * n / 2); /* sharded over d·c = 2 */
        ck_assert_uint_eq(get(r, s, MEM4D_TERM_LAYERS), 8);
    }
    mem4d_report_free(r);
}
END_TEST

START_TEST(one_f_one_b_activations)
{
    mem4d_report *r = run(NULL);
    /* 1F1B: stage r holds p − r micro-batches of 8 layers. */
    for (uint32_t s = 0; s < 4; s++)
        ck_assert_uint_eq(get(r, s, MEM4D_TERM_IN_FLIGHT), 4 - s);
    /* First stage: 4·8·A + int64 token ids of 4 micro-batches + one layer's backward. */
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_ACTIVATIONS), 32 * A_LAYER + 8 * T * 4 + WS);
    ck_assert_uint_eq(get(r, 1, MEM4D_TERM_ACTIVATIONS), 24 * A_LAYER + WS);
    /* Last stage: 8·A + final-norm and head inputs 4h·T/t + the loss 6·T·V_p/t. */
    ck_assert_uint_eq(get(r, 3, MEM4D_TERM_ACTIVATIONS), 8 * A_LAYER + T * 4 * H / TP + 6 * T * V / TP);
    mem4d_report_free(r);
}
END_TEST

START_TEST(buffers_and_fixed)
{
    mem4d_report *r = run(NULL);
    /* Workspaces + sequence-parallel gather 2·T·h + two pipeline receive buffers 2·(2·T·h/t). */
    uint64_t buf = dev(MEM4D_DEVICE_WORKSPACE_BYTES) + 2 * T * H + 2 * (2 * T * H / TP);
    for (uint32_t s = 0; s < 4; s++)
        ck_assert_uint_eq(get(r, s, MEM4D_TERM_BUFFERS), buf);
    /* world, tp, pp, dp and the model-parallel group: 5 communicators. */
    ck_assert_uint_eq(info(r, MEM4D_INFO_PROCESS_GROUPS), 5);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_FIXED),
                      dev(MEM4D_DEVICE_CUDA_CONTEXT_BYTES) + 5 * dev(MEM4D_DEVICE_NCCL_BYTES_PER_GROUP));
    uint64_t alloc = get(r, 0, MEM4D_TERM_PEAK_ALLOCATED);
    uint64_t ppm = dev(MEM4D_DEVICE_ALLOCATOR_OVERHEAD_PPM);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_FRAGMENTATION), (alloc * ppm + 999999) / 1000000);
    mem4d_report_free(r);
}
END_TEST

START_TEST(device_constants_move_only_their_terms)
{
    mem4d_report *a = run(NULL);
    ck_assert_int_eq(mem4d_device_set(device, MEM4D_DEVICE_WORKSPACE_BYTES, 0), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_set(device, MEM4D_DEVICE_ALLOCATOR_OVERHEAD_PPM, 0), MEM4D_OK);
    mem4d_report *b = run(NULL);
    same_except(a, b, BIT(MEM4D_TERM_BUFFERS));
    ck_assert_uint_eq(get(a, 0, MEM4D_TERM_BUFFERS) - get(b, 0, MEM4D_TERM_BUFFERS), 256 * MiB);
    ck_assert_uint_eq(get(b, 0, MEM4D_TERM_FRAGMENTATION), 0);
    ck_assert_uint_eq(get(b, 0, MEM4D_TERM_PEAK_RESERVED), get(b, 0, MEM4D_TERM_PEAK_ALLOCATED));
    ck_assert_int_eq(mem4d_device_set(device, MEM4D_DEVICE_CUDA_CONTEXT_BYTES, 0), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_set(device, MEM4D_DEVICE_NCCL_BYTES_PER_GROUP, 1), MEM4D_OK);
    mem4d_report *c = run(NULL);
    same_except(b, c, BIT(MEM4D_TERM_FIXED));
    ck_assert_uint_eq(get(c, 2, MEM4D_TERM_FIXED), 5);
    mem4d_report_free(a);
    mem4d_report_free(b);
    mem4d_report_free(c);
}
END_TEST

/* --tp-comm-overlap: Transformer Engine's ten userbuffers of T·h elements,
 * registered outside the allocator: bf16 all 20·T·h bytes; with fp8 the six
 * all-gather buffers hold one byte, 6·T·h + 4·2·T·h = 14·T·h. */
START_TEST(tp_comm_overlap_userbuffers)
{
    mem4d_report *a = run(NULL), *b = run("tp_comm_overlap=1", NULL);
    same_except(a, b, BIT(MEM4D_TERM_FIXED));
    for (uint32_t s = 0; s < 4; s++)
        ck_assert_uint_eq(get(b, s, MEM4D_TERM_FIXED) - get(a, s, MEM4D_TERM_FIXED), 20 * T * H);
    mem4d_report *c = run("fp8=1", NULL), *d = run("fp8=1", "tp_comm_overlap=1", NULL);
    same_except(c, d, BIT(MEM4D_TERM_FIXED));
    ck_assert_uint_eq(get(d, 0, MEM4D_TERM_FIXED) - get(c, 0, MEM4D_TERM_FIXED), 14 * T * H);
    /* Without tensor parallelism there is nothing to overlap (Megatron refuses it). */
    mem4d_report *e = run("tp=1", NULL), *f = run("tp=1", "tp_comm_overlap=1", NULL);
    same_except(e, f, 0);
    mem4d_report_free(a);
    mem4d_report_free(b);
    mem4d_report_free(c);
    mem4d_report_free(d);
    mem4d_report_free(e);
    mem4d_report_free(f);
}
END_TEST

/* SGD: master weights 4 bytes + one fp32 momentum (4), or none; sharded
 * over d·c = 2 like Adam's 4 + 4 + 4. */
START_TEST(sgd_optimizer_state)
{
    mem4d_report *a = run(NULL), *b = run("optimizer_moments=1", NULL), *c = run("optimizer_moments=0", NULL);
    same_except(a, b, BIT(MEM4D_TERM_OPTIMIZER));
    same_except(a, c, BIT(MEM4D_TERM_OPTIMIZER));
    for (uint32_t s = 0; s < 4; s++) {
        uint64_t n = get(a, s, MEM4D_TERM_PARAMS);
        ck_assert_uint_eq(get(b, s, MEM4D_TERM_OPTIMIZER), 8 * n / 2);
        ck_assert_uint_eq(get(c, s, MEM4D_TERM_OPTIMIZER), 4 * n / 2);
    }
    mem4d_report_free(a);
    mem4d_report_free(b);
    mem4d_report_free(c);
}
END_TEST

/* Megatron-LLaMA's overlapped distributed optimizer (d·c = 2): gradient
 * shard and receiving shard 2·4·n/2, one bucket of 1e8 fp32 elements (or
 * the stage's n when smaller), and a bf16 parameter shard 2·n/2 beside the
 * 2·n weights; the optimizer state as the distributed optimizer's. */
START_TEST(overlapped_distributed_optimizer)
{
    mem4d_report *a = run(NULL), *b = run("overlapped_dist_opt=1", "ddp_bucket_size=100000000", NULL);
    same_except(a, b, BIT(MEM4D_TERM_WEIGHTS) | BIT(MEM4D_TERM_GRADIENTS));
    for (uint32_t s = 0; s < 4; s++) {
        uint64_t n = get(a, s, MEM4D_TERM_PARAMS);
        ck_assert_uint_eq(get(b, s, MEM4D_TERM_GRADIENTS), 8 * n / 2 + 4 * 100000000);
        ck_assert_uint_eq(get(b, s, MEM4D_TERM_WEIGHTS), 2 * n + 2 * n / 2);
        ck_assert_uint_eq(get(b, s, MEM4D_TERM_OPTIMIZER), 12 * n / 2);
    }
    mem4d_report *c = run("overlapped_dist_opt=1", NULL); /* the fork's default bucket, 5e8 elements */
    ck_assert_uint_eq(get(c, 1, MEM4D_TERM_GRADIENTS), 8 * get(a, 1, MEM4D_TERM_PARAMS) / 2 + 4 * 500000000);
    ck_assert_uint_eq(get(b, 1, MEM4D_TERM_GRADIENTS) + 4 * 400000000, get(c, 1, MEM4D_TERM_GRADIENTS));
    /* A bucket larger than the stage holds all its parameters: n elements. */
    mem4d_report *d = run("overlapped_dist_opt=1", "ddp_bucket_size=1000000000000", NULL);
    ck_assert_uint_eq(get(d, 1, MEM4D_TERM_GRADIENTS), 8 * get(a, 1, MEM4D_TERM_PARAMS) / 2 + 4 * get(a, 1, MEM4D_TERM_PARAMS));
    mem4d_report_free(d);
    mem4d_report_free(a);
    mem4d_report_free(b);
    mem4d_report_free(c);
}
END_TEST

/* --num-distributed-optimizer-instances 2 over d·c = 2: each instance is
 * one rank, which keeps the whole optimizer state (12·n); two more NCCL
 * groups (intra- and inter-instance). An instance count that does not
 * divide d·c, or without the distributed optimizer, is refused. */
START_TEST(distributed_optimizer_instances)
{
    mem4d_report *a = run(NULL), *b = run("dist_opt_instances=2", NULL);
    same_except(a, b, BIT(MEM4D_TERM_OPTIMIZER) | BIT(MEM4D_TERM_FIXED));
    for (uint32_t s = 0; s < 4; s++) {
        uint64_t n = get(a, s, MEM4D_TERM_PARAMS);
        ck_assert_uint_eq(get(a, s, MEM4D_TERM_OPTIMIZER), 12 * n / 2);
        ck_assert_uint_eq(get(b, s, MEM4D_TERM_OPTIMIZER), 12 * n);
        ck_assert_uint_eq(get(b, s, MEM4D_TERM_FIXED) - get(a, s, MEM4D_TERM_FIXED),
                          2 * dev(MEM4D_DEVICE_NCCL_BYTES_PER_GROUP));
    }
    static const char *const bad[][2] = {{"dist_opt_instances=3", NULL},
                                         {"dist_opt_instances=2", "dist_opt=false"},
                                         {"dist_opt_instances=2", "framework=nanotron"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mem4d_layout *l = tu_layout("tp=2", "pp=4", "dp=2", "seq=4096", bad[i][0], bad[i][1], NULL);
        char why[256];
        ck_assert_int_eq(mem4d_validate(model, l, why, sizeof why), MEM4D_E_CONFLICT);
        ck_assert_msg(strstr(why, "dist_opt_instances") != NULL, "%s", why);
        mem4d_layout_free(l);
    }
    mem4d_report_free(a);
    mem4d_report_free(b);
}
END_TEST

/* DeepSeek Sparse Attention's indexer (DeepSeek-V3.2; Megatron-Core
 * DSAIndexer) on a small MLA model of 4 layers, h 1024, r_q 256 (and a
 * vocabulary of 512, so that the peak falls in a layer's backward): its
 * parameters, wq_b r_q·n_i·d_i + wk h·d_i + LayerNorm 2·d_i + weights_proj
 * h·n_i, and per layer and token what it keeps for backward, 2·n_i·(d_i + 1)
 * + 4·d_i + 8·topk bytes (n_i 4, d_i 64, topk 256: 2824), plus the gathered
 * input and compressed query 2·(h + r_q) with sequence parallelism over 2
 * ranks; selective recompute of the attention core keeps none of it and holds
 * one layer's worth while that layer's backward re-runs the core. */
static mem4d_report *dsa_estimate(const mem4d_model *m, const char *extra)
{
    mem4d_layout *l = tu_layout("pp=1", "dp=1", "seq=1024", "mbs=1", "gbs=1", extra, NULL);
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    ck_assert_msg(mem4d_estimate(m, l, device, r) == MEM4D_OK, "%s", mem4d_report_message(r));
    mem4d_layout_free(l);
    return r;
}

/* h 256, 4 heads, f 1024, V 32000 and `layers` layers. */
static mem4d_model *small_model(const char *layers)
{
    mem4d_model *m = NULL;
    ck_assert_int_eq(mem4d_model_new(&m), MEM4D_OK);
    const char *const keys[][2] = {{"hidden_size", "256"}, {"num_layers", layers}, {"num_attention_heads", "4"},
                                   {"ffn_hidden_size", "1024"}, {"vocab_size", "32000"}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_int_eq(mem4d_model_set_str(m, keys[i][0], keys[i][1]), MEM4D_OK);
    return m;
}

/* An RL trainer's log-probability loss (logprob_loss): at the loss 8 bytes
 * per logit (fp32 logits and the softmax it keeps) where Megatron's cross
 * entropy without the fused kernel holds 6 (bf16 logits and one fp32 copy),
 * 12 with the entropy's gradient; T = 1024 tokens, V_p = 32000 on one GPU,
 * where the loss is the largest transient. */
START_TEST(logprob_loss_memory)
{
    mem4d_model *m = small_model("2");
    uint64_t peak[3];
    static const char *const mode[3] = {"logprob_loss=0", "logprob_loss=1", "logprob_loss=2"};
    for (int i = 0; i < 3; i++) {
        mem4d_layout *l = tu_layout("pp=1", "dp=1", "seq=1024", "mbs=1", "gbs=1", "cross_entropy_fusion=0",
                                    "make_vocab_size_divisible_by=128", mode[i], NULL);
        mem4d_report *r = tu_estimate(m, l, device);
        peak[i] = get(r, 0, MEM4D_TERM_PEAK_ALLOCATED);
        mem4d_report_free(r);
        mem4d_layout_free(l);
    }
    const uint64_t logits = 1024 * 32000;
    ck_assert_uint_eq(peak[1] - peak[0], 2 * logits);
    ck_assert_uint_eq(peak[2] - peak[0], 6 * logits);
    mem4d_model_free(m);
}
END_TEST

/* fp8 with Megatron-Core: the delayed recipe keeps the output projection's
 * fp8 copy of the attention output (a·d_v bytes per token and layer); the
 * others save the bf16 input the attention keeps anyway. 4 layers, a·d_v =
 * 256, 1024 tokens, one micro-batch in flight. */
/* Stage 0's activations of m on dev in fp8 with `recipe` (fp8_recipe=...):
 * one GPU, 1024 tokens, one micro-batch. */
static uint64_t fp8_activations(const mem4d_model *m, const mem4d_device *dev, const char *recipe)
{
    mem4d_layout *l = tu_layout("pp=1", "dp=1", "seq=1024", "mbs=1", "gbs=1", "fp8=1", recipe, NULL);
    mem4d_report *r = tu_estimate(m, l, dev);
    uint64_t act = get(r, 0, MEM4D_TERM_ACTIVATIONS);
    mem4d_report_free(r);
    mem4d_layout_free(l);
    return act;
}

START_TEST(fp8_recipe_attention_output_copy)
{
    mem4d_model *m = small_model("4");
    static const char *const recipe[] = {"fp8_recipe=delayed", "fp8_recipe=tensorwise", "fp8_recipe=mxfp8",
                                         "fp8_recipe=blockwise", "fp8_recipe=custom"};
    uint64_t act[5];
    for (int i = 0; i < 5; i++)
        act[i] = fp8_activations(m, device, recipe[i]);
    for (int i = 1; i < 5; i++)
        ck_assert_uint_eq(act[0] - act[i], 4 * 1024 * 256);
    mem4d_model_free(m);
}
END_TEST

/* NVFP4 keeps a linear's input for the weight gradient as its columnwise
 * 4-bit values and E4M3 scales, 9/16 byte an element, where fp8 (MXFP8 as
 * the model has it) keeps 1: per token and layer the two norm outputs (h
 * each) and the activation before the second MLP projection (f) take 7/16
 * byte less. 4 layers of h = 256, f = 1024, 1024 tokens. On a GB300: NVFP4
 * needs fp4 tensor cores. */
START_TEST(nvfp4_saved_inputs)
{
    mem4d_model *m = small_model("4");
    mem4d_device *gb300 = tu_device("gb300-288");
    uint64_t mx = fp8_activations(m, gb300, "fp8_recipe=mxfp8"), nv = fp8_activations(m, gb300, "fp8_recipe=nvfp4");
    ck_assert_uint_eq(mx - nv, 4 * 1024 * (2 * 256 + 1024) * 7 / 16);
    mem4d_device_free(gb300);
    mem4d_model_free(m);
}
END_TEST

START_TEST(dsa_indexer_memory)
{
    static const char *const keys[][2] = {
        {"hidden_size", "1024"}, {"num_layers", "4"}, {"num_attention_heads", "8"}, {"ffn_hidden_size", "4096"},
        {"vocab_size", "512"}, {"kv_lora_rank", "128"}, {"q_lora_rank", "256"}, {"qk_head_dim", "64"},
        {"qk_pos_emb_head_dim", "32"}, {"v_head_dim", "64"},
    };
    mem4d_model *plain = NULL, *dsa = NULL;
    ck_assert_int_eq(mem4d_model_new(&plain), MEM4D_OK);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_int_eq(mem4d_model_set_str(plain, keys[i][0], keys[i][1]), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_clone(plain, &dsa), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(dsa, "index_n_heads", "4"), MEM4D_OK);
    char why[256];
    ck_assert_int_eq(mem4d_model_validate(dsa, why, sizeof why), MEM4D_E_MODEL);
    ck_assert_ptr_nonnull(strstr(why, "dsa_indexer_head_dim"));
    ck_assert_int_eq(mem4d_model_set_str(dsa, "index_head_dim", "64"), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(dsa, "index_topk", "256"), MEM4D_OK);
    uint64_t np = 0, nd = 0;
    ck_assert_int_eq(mem4d_model_num_params(plain, &np), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_num_params(dsa, &nd), MEM4D_OK);
    ck_assert_uint_eq(nd - np, 4 * (256 * 4 * 64 + 1024 * 64 + 2 * 64 + 1024 * 4));
    const uint64_t tok = 1024, per = 2 * 4 * 65 + 4 * 64 + 8 * 256;
    static const char *const layouts[] = {"tp=1", "tp=2", "recompute=selective"};
    const uint64_t want[] = {4 * tok * per, 4 * tok * (per + 2 * (1024 + 256)), tok * per};
    for (size_t i = 0; i < 3; i++) {
        mem4d_report *a = dsa_estimate(plain, layouts[i]), *b = dsa_estimate(dsa, layouts[i]);
        ck_assert_msg(get(b, 0, MEM4D_TERM_ACTIVATIONS) - get(a, 0, MEM4D_TERM_ACTIVATIONS) == want[i],
                      "%s: %llu more bytes, want %llu", layouts[i],
                      (unsigned long long)(get(b, 0, MEM4D_TERM_ACTIVATIONS) - get(a, 0, MEM4D_TERM_ACTIVATIONS)),
                      (unsigned long long)want[i]);
        /* the activations at the peak (a layer's backward): what the layers keep, or under selective
         * recompute the one re-run core's; the peak moves by them and the indexer's state */
        uint64_t state = 0;
        for (mem4d_term t = MEM4D_TERM_WEIGHTS; t <= MEM4D_TERM_OPTIMIZER; t++)
            state += get(b, 0, t) - get(a, 0, t);
        uint64_t peak = get(b, 0, MEM4D_TERM_PEAK_ALLOCATED) - get(a, 0, MEM4D_TERM_PEAK_ALLOCATED);
        ck_assert_msg(peak == state + want[i], "%s: peak %llu more, state %llu",
                      layouts[i], (unsigned long long)peak, (unsigned long long)state);
        mem4d_report_free(a);
        mem4d_report_free(b);
    }
    /* top-k sharing (--dsa-indexer-topk-freq 2 after offset 1): layers 1 and 3 (from 1)
     * build an indexer, 2 and 4 reuse their top-k and keep neither its parameters nor its
     * tensors */
    mem4d_model *shared = NULL;
    ck_assert_int_eq(mem4d_model_clone(dsa, &shared), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(shared, "index_topk_freq", "2"), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(shared, "index_skip_topk_offset", "1"), MEM4D_OK);
    uint64_t ns = 0;
    ck_assert_int_eq(mem4d_model_num_params(shared, &ns), MEM4D_OK);
    ck_assert_uint_eq(ns - np, 2 * (256 * 4 * 64 + 1024 * 64 + 2 * 64 + 1024 * 4));
    mem4d_report *a = dsa_estimate(plain, "tp=1"), *b = dsa_estimate(shared, "tp=1");
    ck_assert_uint_eq(get(b, 0, MEM4D_TERM_ACTIVATIONS) - get(a, 0, MEM4D_TERM_ACTIVATIONS), 2 * tok * per);
    ck_assert_uint_eq(get(b, 0, MEM4D_TERM_PARAMS) - get(a, 0, MEM4D_TERM_PARAMS), ns - np);
    mem4d_report_free(a);
    mem4d_report_free(b);
    /* over two stages each holds one indexer layer and one that reuses its top-k */
    a = dsa_estimate(plain, "pp=2");
    b = dsa_estimate(shared, "pp=2");
    ck_assert_uint_eq(mem4d_report_num_stages(b), 2);
    for (uint32_t st = 0; st < 2; st++) {
        ck_assert_uint_eq(get(b, st, MEM4D_TERM_PARAMS) - get(a, st, MEM4D_TERM_PARAMS), (ns - np) / 2);
        /* one micro-batch (gbs 1) in flight: one indexer layer's tensors */
        ck_assert_uint_eq(get(b, st, MEM4D_TERM_ACTIVATIONS) - get(a, st, MEM4D_TERM_ACTIVATIONS), tok * per);
    }
    mem4d_report_free(a);
    mem4d_report_free(b);
    mem4d_model_free(shared);
    mem4d_model_free(plain);
    mem4d_model_free(dsa);
}
END_TEST

/* CPU offloading of the first N layers' activations (one stage, no
 * recompute): at most L - N layers' activations stay on the GPU, N·A_layer
 * less; nothing else moves; the report warns that the step time leaves the
 * transfers out. Megatron's own limits are refused. */
/* Estimate the model on layout l (freed) and return the report. */
static mem4d_report *estimate_layout(mem4d_layout *l)
{
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    ck_assert_msg(mem4d_estimate(model, l, device, r) == MEM4D_OK, "%s", mem4d_report_message(r));
    mem4d_layout_free(l);
    return r;
}

static mem4d_report *one_stage(const char *extra)
{
    return estimate_layout(tu_layout("tp=2", "pp=1", "dp=2", "seq=4096", "gbs=64", extra, NULL));
}

START_TEST(activation_offloading)
{
    mem4d_report *a = one_stage(NULL), *b = one_stage("activation_offload_layers=8");
    same_except(a, b, BIT(MEM4D_TERM_ACTIVATIONS));
    ck_assert_uint_eq(get(a, 0, MEM4D_TERM_ACTIVATIONS) - get(b, 0, MEM4D_TERM_ACTIVATIONS), 8 * A_LAYER);
    /* h100-80 knows its host link (PCIe Gen5): no warning; a device that
     * does not, warns that the step time leaves the transfers out */
    ck_assert_uint_eq(mem4d_report_warning_count(a), 0);
    ck_assert_uint_eq(mem4d_report_warning_count(b), 0);
    ck_assert_int_eq(mem4d_device_set(device, MEM4D_DEVICE_HOST_BANDWIDTH, 0), MEM4D_OK);
    mem4d_report *c = one_stage("activation_offload_layers=8");
    ck_assert_uint_eq(mem4d_report_warning_count(c), 1);
    ck_assert_ptr_nonnull(strstr(mem4d_report_warning(c, 0), "host transfers"));
    mem4d_report_free(c);
    static const char *const bad[][2] = {{"activation_offload_layers=8", "pp=2"},
                                         {"activation_offload_layers=8", "recompute=selective"},
                                         {"activation_offload_layers=32", NULL}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mem4d_layout *l = tu_layout("tp=2", "dp=2", "seq=4096", bad[i][0], bad[i][1], NULL);
        char why[256];
        ck_assert_int_eq(mem4d_validate(model, l, why, sizeof why), MEM4D_E_CONFLICT);
        ck_assert_msg(strstr(why, "activation_offload_layers") != NULL, "%s", why);
        mem4d_layout_free(l);
    }
    /* paper mode does not model it */
    mem4d_layout *pl = tu_layout("mode=paper", "tp=2", "dp=2", "seq=4096", "activation_offload_layers=8", NULL);
    ck_assert_int_eq(mem4d_estimate(model, pl, device, a), MEM4D_E_UNSUPPORTED);
    mem4d_layout_free(pl);
    mem4d_report_free(a);
    mem4d_report_free(b);
}
END_TEST

/* Shorter first/last virtual stages (pp 2, vpp 2, 4 virtual stages of
 * (32 + 2 + 2)/4 = 9 layers, the two ends 7): both ranks still hold 16
 * layers, but rank 0's chunks are 7 and 9 layers and rank 1's 9 and 7. The
 * interleaved schedule keeps 5 chunk-micro-batches on rank 0 (chunk 0,
 * 0, 1, 1, 0: 3·7 + 2·9 = 39 layers' worth, one A_layer less than 5·8
 * evenly) and 3 on rank 1 (9, 9, 7: 25, one more than 3·8). */
static mem4d_report *two_by_two(const char *a, const char *b)
{
    return estimate_layout(tu_layout("tp=2", "pp=2", "vpp=2", "dp=2", "seq=4096", "gbs=64", a, b, NULL));
}

START_TEST(shorter_end_virtual_stages)
{
    mem4d_report *even = two_by_two(NULL, NULL);
    mem4d_report *ends = two_by_two("first_chunk_fewer_layers=2", "last_chunk_fewer_layers=2");
    for (uint32_t r = 0; r < 2; r++) {
        ck_assert_uint_eq(get(ends, r, MEM4D_TERM_LAYERS), 16);
        ck_assert_uint_eq(get(ends, r, MEM4D_TERM_PARAMS), get(even, r, MEM4D_TERM_PARAMS));
    }
    ck_assert_uint_eq(get(even, 0, MEM4D_TERM_ACTIVATIONS) - get(ends, 0, MEM4D_TERM_ACTIVATIONS), A_LAYER);
    ck_assert_uint_eq(get(ends, 1, MEM4D_TERM_ACTIVATIONS) - get(even, 1, MEM4D_TERM_ACTIVATIONS), A_LAYER);
    mem4d_report_free(even);
    mem4d_report_free(ends);
    /* Uneven totals: pp 2 x vpp 2 with 3 fewer first: (32 + 3 + 1)/4 = 9, rank 0 holds 6 + 9 */
    mem4d_report *u = two_by_two("first_chunk_fewer_layers=3", "last_chunk_fewer_layers=1");
    ck_assert_uint_eq(get(u, 0, MEM4D_TERM_LAYERS), 15);
    ck_assert_uint_eq(get(u, 1, MEM4D_TERM_LAYERS), 17);
    mem4d_report_free(u);
    static const char *const bad[][3] = {{"first_chunk_fewer_layers=1", "last_chunk_fewer_layers=0", NULL},
                                         {"first_chunk_fewer_layers=1", "decoder_first_pipeline_num_layers=8", NULL},
                                         {"first_chunk_fewer_layers=12", "last_chunk_fewer_layers=0", NULL}};
    static const mem4d_status want[] = {MEM4D_E_LAYERS_PP, MEM4D_E_CONFLICT, MEM4D_E_LAYERS_PP};
    for (size_t i = 0; i < 3; i++) {
        mem4d_layout *l = tu_layout("tp=2", "pp=2", "vpp=2", "dp=2", "seq=4096", bad[i][0], bad[i][1], NULL);
        char why[256];
        ck_assert_int_eq(mem4d_validate(model, l, why, sizeof why), want[i]);
        mem4d_layout_free(l);
    }
}
END_TEST

/* A layer table (Megatron-Core's pipeline layout with unequal virtual
 * stages): the table 7,9,9,7 is the shorter-ends split above, to the byte;
 * 8,10,8,6 keeps 16 layers a rank but rank 0's chunks hold 8 and 8 (its 5
 * in-flight chunk-micro-batches: 5·8, as the even split) and rank 1's 10
 * and 6 (10, 10, 6: 26, two A_layer more than 3·8). */
START_TEST(virtual_stage_layer_table)
{
    mem4d_report *ends = two_by_two("first_chunk_fewer_layers=2", "last_chunk_fewer_layers=2");
    mem4d_report *same = two_by_two("stage_layers=7,9,9,7", NULL);
    mem4d_report *even = two_by_two(NULL, NULL);
    mem4d_report *table = two_by_two("stage_layers= 8, 10,8 ,6", NULL);
    for (uint32_t r = 0; r < 2; r++) {
        for (int k = 0; k < (int)mem4d_term_count(); k++)
            ck_assert_uint_eq(get(same, r, (mem4d_term)k), get(ends, r, (mem4d_term)k));
        ck_assert_uint_eq(get(table, r, MEM4D_TERM_LAYERS), 16);
        ck_assert_uint_eq(get(table, r, MEM4D_TERM_PARAMS), get(even, r, MEM4D_TERM_PARAMS));
    }
    ck_assert_uint_eq(get(table, 0, MEM4D_TERM_ACTIVATIONS), get(even, 0, MEM4D_TERM_ACTIVATIONS));
    ck_assert_uint_eq(get(table, 1, MEM4D_TERM_ACTIVATIONS) - get(even, 1, MEM4D_TERM_ACTIVATIONS), 2 * A_LAYER);
    mem4d_report_free(ends);
    mem4d_report_free(same);
    mem4d_report_free(even);
    mem4d_report_free(table);
    /* Unequal ranks: rank 0 holds 6 + 6 layers, rank 1 10 + 10. */
    mem4d_report *u = two_by_two("stage_layers=6,10,6,10", NULL);
    ck_assert_uint_eq(get(u, 0, MEM4D_TERM_LAYERS), 12);
    ck_assert_uint_eq(get(u, 1, MEM4D_TERM_LAYERS), 20);
    mem4d_report_free(u);
    static const char *const bad[][2] = {{"stage_layers=8,8,16", NULL},
                                         {"stage_layers=8,8,8,9", NULL},
                                         {"stage_layers=0,16,0,16", NULL},
                                         {"stage_layers=7,9,9,7", "first_chunk_fewer_layers=2"},
                                         {"stage_layers=7,9,9,7", "decoder_last_pipeline_num_layers=16"}};
    static const mem4d_status want[] = {MEM4D_E_LAYERS_PP, MEM4D_E_LAYERS_PP, MEM4D_E_LAYERS_PP, MEM4D_E_CONFLICT,
                                        MEM4D_E_CONFLICT};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        mem4d_layout *l = tu_layout("tp=2", "pp=2", "vpp=2", "dp=2", "seq=4096", bad[i][0], bad[i][1], NULL);
        char why[256];
        ck_assert_int_eq(mem4d_validate(model, l, why, sizeof why), want[i]);
        ck_assert_msg(strstr(why, "table") != NULL, "%s", why);
        mem4d_layout_free(l);
    }
    /* The handle: text, bounds, reading back, clearing. */
    mem4d_layout *l = tu_layout("pp=2", NULL);
    static const char *const junk[] = {"1,,2", "1;2", "-1", "1,", "4097", "x"};
    static const mem4d_status why[] = {MEM4D_E_PARSE, MEM4D_E_PARSE, MEM4D_E_PARSE, MEM4D_E_PARSE, MEM4D_E_RANGE,
                                       MEM4D_E_PARSE};
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++)
        ck_assert_int_eq(mem4d_layout_set_str(l, "stage_layers", junk[i]), why[i]);
    ck_assert_uint_eq(mem4d_layout_get_stage_layers(l, NULL, 0), 0);
    uint32_t in[] = {3, 0, 4096}, out[3] = {0};
    ck_assert_int_eq(mem4d_layout_set_stage_layers(l, in, 3), MEM4D_E_RANGE); /* 4099 layers in all */
    in[2] = 2;
    ck_assert_int_eq(mem4d_layout_set_stage_layers(l, in, 3), MEM4D_OK);
    ck_assert_uint_eq(mem4d_layout_get_stage_layers(l, out, 2), 3);
    ck_assert_uint_eq(out[0], 3);
    ck_assert_uint_eq(out[1], 0);
    ck_assert_uint_eq(out[2], 0);
    ck_assert_int_eq(mem4d_layout_set_stage_layers(l, NULL, 1), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_layout_set_stage_layers(l, in, mem4d_layout_stage_layers_max() + 1), MEM4D_E_RANGE);
    ck_assert_int_eq(mem4d_layout_set_str(l, "stage_layers", ""), MEM4D_OK);
    ck_assert_uint_eq(mem4d_layout_get_stage_layers(l, NULL, 0), 0);
    mem4d_layout_free(l);
}
END_TEST

START_TEST(distributed_optimizer_and_zero)
{
    mem4d_report *z1 = run(NULL), *z0 = run("dist_opt=false", NULL);
    same_except(z1, z0, BIT(MEM4D_TERM_OPTIMIZER));
    ck_assert_uint_eq(get(z0, 1, MEM4D_TERM_OPTIMIZER), 12 * 8 * P_LAYER);
    /* Megatron's buckets are views of the persistent buffers: overlap moves nothing. */
    mem4d_report *ov = run("overlap_grad_reduce=true", "overlap_param_gather=true", NULL);
    same_except(z1, ov, 0);
    /* ZeRO-2: gradients sharded, plus the reduce-scatter bucket max(40M, 1M·dp) of 4-byte elements. */
    mem4d_report *z2 = run("zero_stage=2", NULL);
    same_except(z1, z2, BIT(MEM4D_TERM_GRADIENTS) | BIT(MEM4D_TERM_BUFFERS));
    ck_assert_uint_eq(get(z2, 1, MEM4D_TERM_GRADIENTS), 4 * 8 * P_LAYER / 2);
    ck_assert_uint_eq(get(z2, 1, MEM4D_TERM_BUFFERS) - get(z1, 1, MEM4D_TERM_BUFFERS), 40000000 * 4);
    mem4d_report *z2o = run("zero_stage=2", "overlap_grad_reduce=true", NULL);
    ck_assert_uint_eq(get(z2o, 1, MEM4D_TERM_BUFFERS) - get(z1, 1, MEM4D_TERM_BUFFERS), 2 * 40000000 * 4);
    /* ZeRO-3 (Megatron-FSDP): weights sharded, the first stage's embedding (the root, outside
     * the layers) also kept whole; in backward the layer's fp32 gradients instead of the ZeRO-2
     * bucket, and the stage's layers gathered in bf16 up to the 5e8-element prefetch past the
     * layer in backward and the one that crosses it. */
    mem4d_report *z3 = run("zero_stage=3", "overlap_param_gather=true", NULL);
    same_except(z2, z3, BIT(MEM4D_TERM_WEIGHTS) | BIT(MEM4D_TERM_BUFFERS));
    ck_assert_uint_eq(get(z3, 1, MEM4D_TERM_WEIGHTS), 2 * 8 * P_LAYER / 2);
    ck_assert_uint_eq(get(z3, 0, MEM4D_TERM_WEIGHTS), 2 * (8 * P_LAYER + EMB) / 2 + 2 * EMB);
    uint64_t gathered = 8 * P_LAYER < 500000000 + 2 * P_LAYER ? 8 * P_LAYER : 500000000 + 2 * P_LAYER;
    ck_assert_uint_eq(get(z3, 1, MEM4D_TERM_BUFFERS) + 40000000 * 4 - get(z2, 1, MEM4D_TERM_BUFFERS),
                      4 * P_LAYER + 2 * gathered);
    mem4d_report_free(z0);
    mem4d_report_free(z1);
    mem4d_report_free(ov);
    mem4d_report_free(z2);
    mem4d_report_free(z2o);
    mem4d_report_free(z3);
}
END_TEST

START_TEST(precisions)
{
    mem4d_report *base = run(NULL);
    mem4d_report *bf16 = run("main_grad_bytes=2", NULL);
    same_except(base, bf16, BIT(MEM4D_TERM_GRADIENTS));
    ck_assert_uint_eq(get(bf16, 1, MEM4D_TERM_GRADIENTS), 2 * 8 * P_LAYER);
    mem4d_report *states = run("optimizer_state_bytes=2", "master_weight_bytes=2", NULL);
    same_except(base, states, BIT(MEM4D_TERM_OPTIMIZER));
    ck_assert_uint_eq(get(states, 1, MEM4D_TERM_OPTIMIZER), 6 * 8 * P_LAYER / 2);
    /* fp8 caches an fp8 weight and its transpose: 2 bytes per linear weight (not norms or embeddings). */
    mem4d_report *fp8 = run("fp8=true", NULL);
    same_except(base, fp8, BIT(MEM4D_TERM_WEIGHTS) | BIT(MEM4D_TERM_ACTIVATIONS));
    /* ... and Transformer Engine keeps linear inputs in fp8: fewer activation bytes. */
    ck_assert_uint_lt(get(fp8, 0, MEM4D_TERM_ACTIVATIONS), get(base, 0, MEM4D_TERM_ACTIVATIONS));
    ck_assert_uint_eq(get(fp8, 0, MEM4D_TERM_WEIGHTS) - get(base, 0, MEM4D_TERM_WEIGHTS), 2 * 8 * (P_LAYER - 2 * H));
    mem4d_report_free(base);
    mem4d_report_free(bf16);
    mem4d_report_free(states);
    mem4d_report_free(fp8);
}
END_TEST

/* With bf16 gradients and a tiny sequence, the optimizer step is the peak:
 * no activation is live and the buffer is the fp32 copy of the gradients. */
START_TEST(optimizer_step_moment)
{
    mem4d_report *r = run("seq=16", "dist_opt=false", "main_grad_bytes=2", NULL);
    ck_assert_uint_eq(get(r, 1, MEM4D_TERM_ACTIVATIONS), 0);
    ck_assert_uint_eq(get(r, 1, MEM4D_TERM_BUFFERS), dev(MEM4D_DEVICE_WORKSPACE_BYTES) + 4 * 8 * P_LAYER);
    mem4d_report_free(r);
}
END_TEST

START_TEST(interleaved_schedule)
{
    mem4d_report *v1 = run(NULL), *v2 = run("vpp=2", NULL);
    same_except(v1, v2, BIT(MEM4D_TERM_ACTIVATIONS) | BIT(MEM4D_TERM_IN_FLIGHT));
    /* Stage 0: 2(p−1) + (v−1)·p + 1 = 11 chunk-micro-batches of L/(p·v) = 4 layers;
     * IN_FLIGHT reports ⌈11/2⌉ = 6 micro-batches. */
    ck_assert_uint_eq(get(v2, 0, MEM4D_TERM_IN_FLIGHT), 6);
    ck_assert_uint_eq(get(v2, 0, MEM4D_TERM_ACTIVATIONS), 44 * A_LAYER + 8 * T * 6 + WS);
    /* Last stage: (v−1)·p + 1 = 5 chunk-micro-batches. */
    ck_assert_uint_eq(get(v2, 3, MEM4D_TERM_ACTIVATIONS), 20 * A_LAYER + T * 4 * H / TP + 6 * T * V / TP);
    mem4d_report_free(v1);
    mem4d_report_free(v2);
}
END_TEST

START_TEST(fewer_micro_batches_than_stages)
{
    mem4d_report *r = run("gbs=4", NULL); /* m = 2 < p */
    ck_assert_uint_eq(info(r, MEM4D_INFO_MICROBATCHES), 2);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_IN_FLIGHT), 2);
    ck_assert_uint_eq(get(r, 2, MEM4D_TERM_IN_FLIGHT), 2);
    ck_assert_uint_eq(get(r, 3, MEM4D_TERM_IN_FLIGHT), 1);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_ACTIVATIONS), 16 * A_LAYER + 8 * T * 2 + WS);
    mem4d_report_free(r);
}
END_TEST

START_TEST(recomputation)
{
    mem4d_report *none = run(NULL);
    /* Selective: the attention core's own tensor (FlashAttention's fp32 log-sum-exp)
     * goes from all 32 layer-micro-batches and lives again for the one layer re-run in backward. */
    mem4d_report *sel = run("recompute=selective", NULL);
    same_except(none, sel, BIT(MEM4D_TERM_ACTIVATIONS));
    ck_assert_uint_eq(get(none, 0, MEM4D_TERM_ACTIVATIONS) - get(sel, 0, MEM4D_TERM_ACTIVATIONS),
                      31 * T * 4 * A_HEADS / TP);
    /* Full, uniform, 1 layer per group: 8 checkpoints per micro-batch, one layer live. */
    mem4d_report *uni = run("recompute=full", "recompute_method=uniform", "recompute_num_layers=1", NULL);
    same_except(none, uni, BIT(MEM4D_TERM_ACTIVATIONS));
    ck_assert_uint_eq(get(uni, 0, MEM4D_TERM_ACTIVATIONS), 4 * 8 * CKPT + 8 * T * 4 + WS + A_LAYER);
    /* Uniform, 4 layers per group: 2 checkpoints, four layers live. */
    mem4d_report *uni4 = run("recompute=full", "recompute_method=uniform", "recompute_num_layers=4", NULL);
    ck_assert_uint_eq(get(uni4, 1, MEM4D_TERM_ACTIVATIONS), 3 * 2 * CKPT + WS + 4 * A_LAYER);
    /* Block, first 3 layers: 3 checkpoints + 5 full layers per micro-batch, one layer live. */
    mem4d_report *blk = run("recompute=full", "recompute_method=block", "recompute_num_layers=3", NULL);
    ck_assert_uint_eq(get(blk, 1, MEM4D_TERM_ACTIVATIONS), 3 * (3 * CKPT + 5 * A_LAYER) + WS + A_LAYER);
    mem4d_report_free(none);
    mem4d_report_free(sel);
    mem4d_report_free(uni);
    mem4d_report_free(uni4);
    mem4d_report_free(blk);
}
END_TEST

START_TEST(dropout_masks)
{
    mem4d_report *none = run(NULL);
    /* Hidden dropout: two one-byte masks of h per token and layer, split by
     * t_sp = t, and the embedding dropout's mask on the first stage for each
     * of its 4 in-flight micro-batches. */
    mem4d_report *hid = run("hidden_dropout=1", NULL);
    same_except(none, hid, BIT(MEM4D_TERM_ACTIVATIONS));
    uint64_t mask = T * 2 * H / TP;
    ck_assert_uint_eq(get(hid, 0, MEM4D_TERM_ACTIVATIONS) - get(none, 0, MEM4D_TERM_ACTIVATIONS),
                      32 * mask + 4 * T * H / TP);
    ck_assert_uint_eq(get(hid, 1, MEM4D_TERM_ACTIVATIONS) - get(none, 1, MEM4D_TERM_ACTIVATIONS), 24 * mask);
    ck_assert_uint_eq(get(hid, 3, MEM4D_TERM_ACTIVATIONS) - get(none, 3, MEM4D_TERM_ACTIVATIONS), 8 * mask);
    /* Full recompute regenerates the layers' masks: only the live group's and the embedding's stay. */
    mem4d_report *uni = run("recompute=full", "recompute_num_layers=1", NULL);
    mem4d_report *uni_hid = run("recompute=full", "recompute_num_layers=1", "hidden_dropout=1", NULL);
    same_except(uni, uni_hid, BIT(MEM4D_TERM_ACTIVATIONS));
    ck_assert_uint_eq(get(uni_hid, 0, MEM4D_TERM_ACTIVATIONS) - get(uni, 0, MEM4D_TERM_ACTIVATIONS),
                      mask + 4 * T * H / TP);
    ck_assert_uint_eq(get(uni_hid, 1, MEM4D_TERM_ACTIVATIONS) - get(uni, 1, MEM4D_TERM_ACTIVATIONS), mask);
    /* Attention dropout inside fused attention keeps only RNG state: nothing moves. */
    mem4d_report *att = run("attention_dropout=1", NULL);
    same_except(none, att, 0);
    /* Without flash attention each layer keeps the 2a·s/c softmax output instead
     * of the 4a log-sum-exp, and one layer's backward holds the probabilities'
     * gradient 2a·s/c instead of flash's fp32 dq accumulator 4a·dh. */
    mem4d_report *unf = run("flash_attn=0", NULL);
    ck_assert_uint_eq(get(unf, 1, MEM4D_TERM_ACTIVATIONS) - get(none, 1, MEM4D_TERM_ACTIVATIONS),
                      24 * (T * (2 * A_HEADS * S - 4 * A_HEADS) / TP) + T * (2 * A_HEADS * S - 4 * A_HEADS * DH) / TP);
    /* Attention dropout adds an a·s/c one-byte mask and the 2-byte dropped
     * probabilities per token, split by t (the 5as of Korthikanti et al. with the
     * softmax), and in backward the dropout's gradient beside the probabilities', 2a·s/c. */
    mem4d_report *unf_att = run("flash_attn=0", "attention_dropout=1", NULL);
    same_except(unf, unf_att, BIT(MEM4D_TERM_ACTIVATIONS));
    ck_assert_uint_eq(get(unf_att, 1, MEM4D_TERM_ACTIVATIONS) - get(unf, 1, MEM4D_TERM_ACTIVATIONS),
                      24 * (T * 3 * A_HEADS * S / TP) + T * 2 * A_HEADS * S / TP);
    /* Selective recompute re-runs the attention core, its dropout included: only
     * the re-run layer's 3a·s/c and the backward's 2a·s/c remain. */
    mem4d_report *sel = run("flash_attn=0", "recompute=selective", NULL);
    mem4d_report *sel_att = run("flash_attn=0", "recompute=selective", "attention_dropout=1", NULL);
    same_except(sel, sel_att, BIT(MEM4D_TERM_ACTIVATIONS));
    ck_assert_uint_eq(get(sel_att, 1, MEM4D_TERM_ACTIVATIONS) - get(sel, 1, MEM4D_TERM_ACTIVATIONS),
                      T * 5 * A_HEADS * S / TP);
    mem4d_report *all[] = {none, hid, uni, uni_hid, att, unf, unf_att, sel, sel_att};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mem4d_report_free(all[i]);
}
END_TEST

START_TEST(fused_cross_entropy)
{
    mem4d_report *none = run(NULL);
    /* Only the last stage's loss transient moves: one more fp32 logits-sized
     * buffer, 4·T·V_p/t (10 instead of 6 bytes per token and vocabulary entry). */
    mem4d_report *fused = run("cross_entropy_fusion=1", NULL);
    same_except(none, fused, BIT(MEM4D_TERM_ACTIVATIONS));
    for (uint32_t s = 0; s < 3; s++)
        ck_assert_uint_eq(get(fused, s, MEM4D_TERM_ACTIVATIONS), get(none, s, MEM4D_TERM_ACTIVATIONS));
    ck_assert_uint_eq(get(fused, 3, MEM4D_TERM_ACTIVATIONS), 8 * A_LAYER + T * 4 * H / TP + 10 * T * V / TP);
    mem4d_report_free(none);
    mem4d_report_free(fused);
}
END_TEST

START_TEST(vocabulary_padding)
{
    mem4d_report *r = run("tp=4", "dp=1", NULL);
    ck_assert_uint_eq(info(r, MEM4D_INFO_PADDED_VOCAB), 128512); /* next multiple of 128·4 */
    uint64_t layer4 = (2 * H * A_HEADS * DH + 2 * H * K_HEADS * DH) / 4 + 3 * H * F / 4 + 2 * H;
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_PARAMS), 8 * layer4 + UINT64_C(128512) * H / 4);
    mem4d_report_free(r);
}
END_TEST

START_TEST(uneven_stages_and_tied_head)
{
    mem4d_report *r = run("decoder_first_pipeline_num_layers=6", "decoder_last_pipeline_num_layers=6", NULL);
    static const uint64_t layers[4] = {6, 10, 10, 6};
    for (uint32_t s = 0; s < 4; s++)
        ck_assert_uint_eq(get(r, s, MEM4D_TERM_LAYERS), layers[s]);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_PARAMS), 6 * P_LAYER + EMB);
    mem4d_report_free(r);
    /* A tied head is still a separate copy on the last stage when p > 1
     * (plus the embedding group), and one shared matrix when p = 1. */
    ck_assert_int_eq(mem4d_model_set(model, MEM4D_MODEL_TIED_EMBEDDINGS, 1), MEM4D_OK);
    mem4d_report *tied = run(NULL);
    ck_assert_uint_eq(get(tied, 3, MEM4D_TERM_PARAMS), 8 * P_LAYER + H + EMB);
    ck_assert_uint_eq(info(tied, MEM4D_INFO_PROCESS_GROUPS), 6);
    mem4d_report *one = run("pp=1", "dp=8", NULL);
    ck_assert_uint_eq(get(one, 0, MEM4D_TERM_PARAMS), 32 * P_LAYER + H + EMB);
    mem4d_report_free(tied);
    mem4d_report_free(one);
}
END_TEST

START_TEST(context_parallel_groups_and_tokens)
{
    mem4d_report *r = run("cp=2", "dp=1", NULL);
    /* world, tp, cp, pp, dp×cp, model-parallel; dp = 1 has no group. */
    ck_assert_uint_eq(info(r, MEM4D_INFO_PROCESS_GROUPS), 6);
    /* T halves: the last stage's loss is 6·(T/2)·V_p/t. */
    uint64_t a_half = A_LAYER / 2, head = (T / 2) * 4 * H / TP;
    ck_assert_uint_eq(get(r, 3, MEM4D_TERM_ACTIVATIONS), 8 * a_half + head + 6 * (T / 2) * V / TP);
    /* Buffers: workspaces, SP gather 2·T'·h, pipeline 2·(2·T'·h/t), the ring's K/V blocks 2·(4·T'·k·dh/t). */
    uint64_t t2 = T / 2;
    ck_assert_uint_eq(get(r, 3, MEM4D_TERM_BUFFERS), dev(MEM4D_DEVICE_WORKSPACE_BYTES) + 2 * t2 * H +
                                                         2 * (2 * t2 * H / TP) + 2 * (4 * t2 * K_HEADS * DH / TP));
    mem4d_report_free(r);
}
END_TEST

/* Qwen1.5-MoE-A2.7B: 60 experts of 1408, top-4, a shared expert of 5632. */
START_TEST(experts_split_by_ep)
{
    mem4d_model *moe = tu_model("qwen1.5-moe-a2.7b");
    mem4d_layout *l = tu_layout("pp=2", "dp=4", "ep=4", "seq=4096", "gbs=32", NULL);
    mem4d_report *r = NULL;
    mem4d_report_new(&r);
    ck_assert_int_eq(mem4d_estimate(moe, l, device, r), MEM4D_OK);
    uint64_t attn = 4 * 2048 * 2048 + 3 * 2048, shared = 3 * 2048 * 5632 + 2048, router = 2048 * 60;
    uint64_t experts = UINT64_C(15) * 3 * 2048 * 1408; /* 60 / ep 4 on this rank */
    uint64_t dense = attn + shared + router + 2 * 2048;
    ck_assert_uint_eq(get(r, 1, MEM4D_TERM_PARAMS), 12 * (dense + experts) + 2048 + UINT64_C(151936) * 2048);
    /* Expert optimizer state shards over d·c/ep = 1, the rest over d·c = 4. */
    uint64_t n1 = get(r, 1, MEM4D_TERM_PARAMS), ne = 12 * experts;
    ck_assert_uint_eq(get(r, 1, MEM4D_TERM_OPTIMIZER), 12 * (n1 - ne) / 4 + 12 * ne);
    /* world, pp, dp, model-parallel, ep (expert-dp = 4/4 = 1 has none). */
    ck_assert_uint_eq(info(r, MEM4D_INFO_PROCESS_GROUPS), 5);
    mem4d_report_free(r);
    mem4d_layout_free(l);
    mem4d_model_free(moe);
}
END_TEST

/* Token capacity (Qwen1.5-MoE-A2.7B: 60 experts of 1408, top-4): padded
 * to capacity the expert tensors grow with the factor, so their bytes are
 * linear in it; dropping beyond a capacity above 1 keeps top-k (as none),
 * below 1 it keeps what padding to that capacity keeps. Nothing but the
 * activations moves. */
/* qwen1.5-moe-a2.7b estimated on layout l (freed). */
static mem4d_report *moe_estimate(mem4d_layout *l)
{
    mem4d_model *moe = tu_model("qwen1.5-moe-a2.7b");
    mem4d_report *r = NULL;
    mem4d_report_new(&r);
    ck_assert_msg(mem4d_estimate(moe, l, device, r) == MEM4D_OK, "%s", mem4d_report_message(r));
    mem4d_layout_free(l);
    mem4d_model_free(moe);
    return r;
}

/* The MoE figures below are term by term for balanced routing (what
 * --moe-router-force-load-balancing gives); unset, moe_imbalance_ppm takes
 * the dropless load the step time derives (moe_routed_rows_follow_the_load). */
#define BALANCED "moe_imbalance_ppm=1000000"

static uint64_t moe_activations(const char *cap, const char *pad, mem4d_report **out)
{
    *out = moe_estimate(tu_layout("pp=2", "dp=4", "ep=4", "seq=4096", "gbs=32", BALANCED, cap, pad, NULL));
    return get(*out, 0, MEM4D_TERM_ACTIVATIONS);
}

/* Megatron-FSDP shards the experts' gradients (ZeRO-2/3) over the expert
 * data-parallel group, as the distributed optimizer does their optimizer
 * state: with fp32 gradients and 12 optimizer bytes a parameter the
 * optimizer state is three times the gradients, dense and expert parts
 * alike (dp 4, ep 4: the experts unsharded). */
START_TEST(fsdp_expert_shards)
{
    mem4d_report *r = moe_estimate(tu_layout("pp=2", "dp=4", "ep=4", "seq=4096", "gbs=32", "zero_stage=3", NULL));
    uint64_t g = get(r, 0, MEM4D_TERM_GRADIENTS), n = get(r, 0, MEM4D_TERM_PARAMS);
    ck_assert_uint_eq(3 * g, get(r, 0, MEM4D_TERM_OPTIMIZER));
    ck_assert_uint_gt(g, 4 * n / 4);
    mem4d_report_free(r);
}
END_TEST

/* Unset, moe_imbalance_ppm sizes the routed rows by the busiest rank's
 * dropless load, the figure the step time waits for (doc/perf.md, "Token
 * imbalance"): Qwen1.5-MoE's 60 experts, top-4, over ep 4 (15 a rank),
 * 4096 tokens a rank: the router's published spread sigma = 0.52/2.3437,
 * a rank's relative variance (1 - 1/4)·60/59·(sigma²·4/60 + (1 - 4/60)/
 * (4096·4)), the largest of 4 normal draws 1.0294 sigma above the mean:
 * iota = 1.0520, rounded up to millionths. One rank holds every expert at
 * ep 1; a dropping capacity of 1 caps the load at the mean. */
START_TEST(moe_routed_rows_follow_the_load)
{
    double sigma = 0.52 / 2.3437, E = 60, k = 4, ep = 4, rows = 4096 * 4;
    double var = (1 - 1 / ep) * E / (E - 1) * (sigma * sigma * ep / E + (1 - k / E) / rows);
    char iota[64];
    snprintf(iota, sizeof iota, "moe_imbalance_ppm=%llu", (unsigned long long)ceil((1 + 1.0294 * sqrt(var)) * 1e6));
    mem4d_report *unset = moe_estimate(tu_layout("pp=2", "dp=4", "ep=4", "seq=4096", "gbs=32", NULL));
    mem4d_report *derived = moe_estimate(tu_layout("pp=2", "dp=4", "ep=4", "seq=4096", "gbs=32", iota, NULL));
    mem4d_report *even = moe_estimate(tu_layout("pp=2", "dp=4", "ep=4", "seq=4096", "gbs=32", BALANCED, NULL));
    ck_assert_uint_eq(get(unset, 0, MEM4D_TERM_ACTIVATIONS), get(derived, 0, MEM4D_TERM_ACTIVATIONS));
    ck_assert_uint_gt(get(unset, 0, MEM4D_TERM_ACTIVATIONS), get(even, 0, MEM4D_TERM_ACTIVATIONS));
    same_except(even, unset, BIT(MEM4D_TERM_ACTIVATIONS));
    mem4d_report *rs[] = {unset, derived, even, NULL, NULL, NULL, NULL};
    rs[3] = moe_estimate(tu_layout("pp=2", "dp=4", "ep=1", "seq=4096", "gbs=32", NULL));
    rs[4] = moe_estimate(tu_layout("pp=2", "dp=4", "ep=1", "seq=4096", "gbs=32", BALANCED, NULL));
    ck_assert_uint_eq(get(rs[3], 0, MEM4D_TERM_ACTIVATIONS), get(rs[4], 0, MEM4D_TERM_ACTIVATIONS));
    rs[5] = moe_estimate(tu_layout("pp=2", "dp=4", "ep=4", "seq=4096", "gbs=32", "moe_capacity_factor_ppm=1000000", NULL));
    rs[6] = moe_estimate(
        tu_layout("pp=2", "dp=4", "ep=4", "seq=4096", "gbs=32", "moe_capacity_factor_ppm=1000000", BALANCED, NULL));
    ck_assert_uint_eq(get(rs[5], 0, MEM4D_TERM_ACTIVATIONS), get(rs[6], 0, MEM4D_TERM_ACTIVATIONS));
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++)
        mem4d_report_free(rs[i]);
}
END_TEST

START_TEST(moe_token_capacity)
{
    mem4d_report *r0, *r1, *r2, *r3, *r4, *r5;
    uint64_t none = moe_activations(NULL, NULL, &r0);
    uint64_t pad15 = moe_activations("moe_capacity_factor_ppm=1500000", "moe_pad_to_capacity=1", &r1);
    uint64_t pad20 = moe_activations("moe_capacity_factor_ppm=2000000", "moe_pad_to_capacity=1", &r2);
    uint64_t drop15 = moe_activations("moe_capacity_factor_ppm=1500000", NULL, &r3);
    uint64_t drop05 = moe_activations("moe_capacity_factor_ppm=500000", NULL, &r4);
    uint64_t pad05 = moe_activations("moe_capacity_factor_ppm=500000", "moe_pad_to_capacity=1", &r5);
    ck_assert_uint_gt(pad15, none);
    /* linear in the factor: (2.0 - 1) = 2 x (1.5 - 1), up to the ceilings */
    uint64_t d15 = pad15 - none, d20 = pad20 - none;
    ck_assert_msg(d20 + 64 >= 2 * d15 && 2 * d15 + 64 >= d20, "%llu %llu", (unsigned long long)d15,
                  (unsigned long long)d20);
    ck_assert_uint_eq(drop15, none);
    ck_assert_uint_eq(drop05, pad05);
    ck_assert_uint_lt(pad05, none);
    /* the busiest rank's load (moe_imbalance_ppm): dropless, its routed rows
     * grow as a capacity factor's padding does; a dropping capacity bounds
     * them, a padded one fixes them */
    mem4d_report *i0, *i1, *i2;
    uint64_t imb15 = moe_activations("moe_imbalance_ppm=1500000", NULL, &i0);
    uint64_t imb15_drop12 = moe_activations("moe_imbalance_ppm=1500000", "moe_capacity_factor_ppm=1200000", &i1);
    uint64_t imb15_drop20 = moe_activations("moe_imbalance_ppm=1500000", "moe_capacity_factor_ppm=2000000", &i2);
    ck_assert_uint_eq(imb15, pad15);
    ck_assert_uint_gt(imb15_drop12, none);
    ck_assert_uint_lt(imb15_drop12, imb15);
    ck_assert_uint_eq(imb15_drop20, imb15); /* dropping at 2.0: the load 1.5 stays under it */
    mem4d_report_free(i0);
    mem4d_report_free(i1);
    mem4d_report_free(i2);
    same_except(r0, r1, BIT(MEM4D_TERM_ACTIVATIONS));
    same_except(r0, r4, BIT(MEM4D_TERM_ACTIVATIONS));
    mem4d_report *rs[] = {r0, r1, r2, r3, r4, r5};
    for (size_t i = 0; i < 6; i++)
        mem4d_report_free(rs[i]);
    /* padding needs a factor; both are Megatron-Core's */
    mem4d_model *moe = tu_model("qwen1.5-moe-a2.7b");
    static const char *const bad[][2] = {{"moe_pad_to_capacity=1", NULL},
                                         {"moe_capacity_factor_ppm=1000000", "framework=deepspeed"}};
    for (size_t i = 0; i < 2; i++) {
        mem4d_layout *l = tu_layout("pp=2", "dp=4", "seq=4096", bad[i][0], bad[i][1], NULL);
        char why[256];
        ck_assert_int_eq(mem4d_validate(moe, l, why, sizeof why), MEM4D_E_CONFLICT);
        ck_assert_msg(strstr(why, "moe_") != NULL, "%s", why);
        mem4d_layout_free(l);
    }
    mem4d_model_free(moe);
}
END_TEST

/* One MoE estimate: qwen1.5-moe-a2.7b (h 2048, 60 experts, top-4, fe 1408,
 * 24 expert layers) on pp 2, dp 4, ep 4, tp 1, 4096 tokens, 8 micro-batches
 * (stage 0 keeps 2 in flight, 12 layers each), plus the keys given. */
static mem4d_report *moe_run(const char *a, const char *b, const char *c)
{
    return moe_estimate(tu_layout("pp=2", "dp=4", "ep=4", "seq=4096", "gbs=32", BALANCED, a, b, c, NULL));
}

static uint64_t delta(const mem4d_report *a, const mem4d_report *b, uint32_t stage, mem4d_term t)
{
    return get(b, stage, t) - get(a, stage, t);
}

/* mem4d_validate() of layout l (freed) for model m gives want. */
static void assert_invalid(const mem4d_model *m, mem4d_layout *l, mem4d_status want)
{
    char why[256];
    ck_assert_int_eq(mem4d_validate(m, l, why, sizeof why), want);
    ck_assert(why[0] != '\0');
    mem4d_layout_free(l);
}

/* The token dispatchers, term by term (doc/full-model.md, "MoE token
 * dispatchers"). Numbers: h = 2048 (2h = 4096 bytes a token), E = 60,
 * N = ep·etp = 4 ranks, L = 15 local experts, T = 4096. */
START_TEST(moe_token_dispatchers)
{
    mem4d_report *a2a = moe_run(NULL, NULL, NULL);
    /* DeepEP: C = 10 channels, n = 4 peers, r = 1, R_nvl = 256: the NVLink
     * buffer ceil128(10·4·(8 + 12 + 256·(4096 + 2056))) = 62997376, +160 B,
     * + the 32 MiB workspace; no RDMA buffer within a node. FIXED only. */
    mem4d_report *dep = moe_run("moe_dispatcher=deepep", NULL, NULL);
    same_except(a2a, dep, BIT(MEM4D_TERM_FIXED));
    ck_assert_uint_eq(delta(a2a, dep, 0, MEM4D_TERM_FIXED), UINT64_C(62997376) + 160 + 32 * MiB);
    /* twice the SMs, twice the channels */
    mem4d_report *dep40 = moe_run("moe_dispatcher=deepep", "moe_dispatcher_sms=40", NULL);
    ck_assert_uint_eq(delta(a2a, dep40, 0, MEM4D_TERM_FIXED),
                      UINT64_C(125994624) /* ceil128(20·4·1574932) */ + 160 + 32 * MiB);
    /* HybridEP: M = 4096·4 tokens of 2h + 4·L·R (240) + 4·h/128 (64) + E (60)
     * bytes, + 8·64·4 chunk flags; its handle N·(4 + 5L) = 316 bytes a token
     * per expert layer, kept by 2 micro-batches x 12 layers on stage 0. */
    mem4d_report *hep = moe_run("moe_dispatcher=hybridep", NULL, NULL);
    same_except(a2a, hep, BIT(MEM4D_TERM_FIXED) | BIT(MEM4D_TERM_ACTIVATIONS));
    ck_assert_uint_eq(delta(a2a, hep, 0, MEM4D_TERM_FIXED), UINT64_C(16384) * 4460 + 2048);
    ck_assert_uint_eq(delta(a2a, hep, 0, MEM4D_TERM_ACTIVATIONS), UINT64_C(2) * 12 * 4096 * 316);
    /* recomputing the moe module re-runs the dispatch: only the re-run layer's handle is live */
    mem4d_report *a2a_rc = moe_run("recompute=selective", "recompute_modules=64", NULL);
    mem4d_report *hep_rc = moe_run("moe_dispatcher=hybridep", "recompute=selective", "recompute_modules=64");
    ck_assert_uint_eq(delta(a2a_rc, hep_rc, 0, MEM4D_TERM_ACTIVATIONS), UINT64_C(4096) * 316);
    mem4d_report_free(a2a_rc);
    mem4d_report_free(hep_rc);
    /* allgather: N·T tokens of 6h + 5E bytes (the gathered input, fp32
     * probabilities and map, the unpermuted output and its fp32 copy) */
    mem4d_report *ag = moe_run("moe_dispatcher=allgather", NULL, NULL);
    same_except(a2a, ag, BIT(MEM4D_TERM_BUFFERS));
    ck_assert_uint_eq(delta(a2a, ag, 0, MEM4D_TERM_BUFFERS), UINT64_C(4) * 4096 * (6 * 2048 + 5 * 60));
    mem4d_report *rs[] = {a2a, dep, dep40, hep, ag};
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++)
        mem4d_report_free(rs[i]);
    /* Across nodes DeepEP adds its RDMA buffer in 512 MiB NVSHMEM chunks:
     * qwen2-57b-a14b (h 3584) at ep 16: n = 8, r = 2, R_nvl 288, R_rdma 140:
     * ceil128(10·8·(16 + 12 + 288·9224)) + 160 + 32 MiB + one 512 MiB chunk for
     * ceil128(10·2·(144 + 2·140·9240)) = 51746944 bytes. */
    mem4d_model *q57 = tu_model("qwen2-57b-a14b");
    uint64_t fixed[2];
    for (int i = 0; i < 2; i++) {
        mem4d_layout *l = tu_layout("dp=16", "ep=16", "seq=4096", i ? "moe_dispatcher=deepep" : "moe_dispatcher=alltoall",
                                    NULL);
        mem4d_report *r = NULL;
        mem4d_report_new(&r);
        ck_assert_msg(mem4d_estimate(q57, l, device, r) == MEM4D_OK, "%s", mem4d_report_message(r));
        fixed[i] = get(r, 0, MEM4D_TERM_FIXED);
        mem4d_report_free(r);
        mem4d_layout_free(l);
    }
    ck_assert_uint_eq(fixed[1] - fixed[0], UINT64_C(212523264) + 160 + 32 * MiB + 512 * MiB);
    /* Megatron-Core's and DeepEP's rules */
    static const char *const bad[][3] = {{"moe_dispatcher=deepep", "ep=1", NULL},
                                         {"moe_dispatcher=deepep", "moe_capacity_factor_ppm=1000000",
                                          "moe_pad_to_capacity=1"},
                                         {"moe_dispatcher=deepep", "moe_dispatcher_sms=21", NULL},
                                         {"moe_pad_multiple=16", NULL, NULL},
                                         {"moe_dispatcher=allgather", "moe_pad_multiple=16", "fp8=1"},
                                         {"moe_dispatcher=hybridep", "framework=deepspeed", NULL}};
    static const mem4d_status want[] = {MEM4D_E_CONFLICT, MEM4D_E_CONFLICT, MEM4D_E_RANGE, MEM4D_E_CONFLICT,
                                        MEM4D_E_CONFLICT, MEM4D_E_CONFLICT};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        mem4d_layout *l = tu_layout("dp=16", "ep=16", "seq=4096", bad[i][0], bad[i][1], bad[i][2], NULL);
        char why[256];
        ck_assert_int_eq(mem4d_validate(q57, l, why, sizeof why), want[i]);
        mem4d_layout_free(l);
    }
    /* DeepEP has no configuration for 12 ranks (48 experts... 64 over ep 12 do not divide: use etp) */
    mem4d_layout *l12 = tu_layout("tp=3", "dp=4", "ep=4", "seq=4095", "moe_dispatcher=deepep", NULL);
    char why[256];
    ck_assert_int_ne(mem4d_validate(q57, l12, why, sizeof why), MEM4D_OK);
    mem4d_layout_free(l12);
    mem4d_model_free(q57);
    /* a dense model has no dispatcher */
    mem4d_layout *dense = tu_layout("pp=4", "dp=4", "seq=4096", "moe_dispatcher=deepep", NULL);
    ck_assert_int_eq(mem4d_validate(model, dense, why, sizeof why), MEM4D_E_EXPERTS);
    mem4d_layout_free(dense);
}
END_TEST

/* Router padding for quantized GEMMs: with alltoall every one of the 4
 * senders pads each of a rank's 15 experts, on average 15/2 rows (a = 16);
 * the flex dispatchers pad once on the receiver: 4 times fewer rows. */
START_TEST(moe_router_padding)
{
    mem4d_report *a = moe_run("fp8=1", NULL, NULL), *ap = moe_run("fp8=1", "moe_pad_multiple=16", NULL);
    mem4d_report *d = moe_run("fp8=1", "moe_dispatcher=deepep", NULL);
    mem4d_report *dp = moe_run("fp8=1", "moe_dispatcher=deepep", "moe_pad_multiple=16");
    uint64_t da = delta(a, ap, 0, MEM4D_TERM_ACTIVATIONS), dd = delta(d, dp, 0, MEM4D_TERM_ACTIVATIONS);
    ck_assert_uint_gt(dd, 0);
    ck_assert_msg(da + da / 100 >= 4 * dd && 4 * dd + da / 100 >= da, "%llu vs 4 x %llu", (unsigned long long)da,
                  (unsigned long long)dd); /* up to the rounding of rows per token */
    /* 60·15/2 = 450 rows for 4096 tokens: about 11% more than the 4 routed a token */
    ck_assert_uint_lt(da, get(a, 0, MEM4D_TERM_ACTIVATIONS) / 5);
    mem4d_report *rs[] = {a, ap, d, dp};
    for (size_t i = 0; i < 4; i++)
        mem4d_report_free(rs[i]);
}
END_TEST

/* The EP overlap keeps one more expert layer's activations at the peak;
 * delayed weight gradients hold a layer's QKV output gradient
 * (2·(a·d_qk + k·(d_qk + d_v)) = 12288 bytes a token), its output
 * projection's and its experts' down projection's (2h + 4·2h): 32768 bytes
 * a token of T = 4096 beside the backward working set. pp 2 x vpp 2 (the
 * overlap needs virtual stages), 6 layers a chunk: stage 0 keeps 5
 * chunk-micro-batches with 16 micro-batches, 4 with 2, so one expert layer
 * is A = (act(16) − act(2) − the token ids 8·T of one more micro-batch)/6. */
static mem4d_report *overlap_run(const char *gbs, const char *a, const char *b)
{
    return moe_estimate(tu_layout("pp=2", "vpp=2", "dp=4", "ep=4", "seq=4096", BALANCED, gbs, a, b, NULL));
}

START_TEST(moe_ep_overlap_and_delayed_wgrad)
{
    mem4d_report *base = overlap_run("gbs=64", NULL, NULL), *two = overlap_run("gbs=8", NULL, NULL);
    mem4d_report *ov = overlap_run("gbs=64", "moe_ep_overlap=1", NULL);
    mem4d_report *dw = overlap_run("gbs=64", "moe_ep_overlap=1", "delay_wgrad=1");
    ck_assert_uint_eq(get(base, 0, MEM4D_TERM_IN_FLIGHT), 3);
    ck_assert_uint_eq(get(two, 0, MEM4D_TERM_IN_FLIGHT), 2);
    uint64_t six = delta(two, base, 0, MEM4D_TERM_ACTIVATIONS) - 8 * 4096;
    ck_assert_uint_eq(six % 6, 0);
    same_except(base, ov, BIT(MEM4D_TERM_ACTIVATIONS));
    ck_assert_uint_eq(delta(base, ov, 0, MEM4D_TERM_ACTIVATIONS), six / 6);
    ck_assert_uint_eq(delta(ov, dw, 0, MEM4D_TERM_ACTIVATIONS), UINT64_C(4096) * 32768);
    mem4d_report *rs[] = {base, two, ov, dw};
    for (size_t i = 0; i < 4; i++)
        mem4d_report_free(rs[i]);
    mem4d_model *moe = tu_model("qwen1.5-moe-a2.7b");
    static const char *const bad[][3] = {{"delay_wgrad=1", NULL, NULL},
                                         {"moe_ep_overlap=1", "pp=2", NULL},
                                         {"moe_ep_overlap=1", "recompute=full", NULL},
                                         {"moe_ep_overlap=1", "ep=1", NULL},
                                         {"moe_ep_overlap=1", "cuda_graph=transformer_engine", NULL},
                                         {"moe_ep_overlap=1", "cuda_graph=transformer_engine", "cuda_graph_scope=5"}};
    char why[256];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mem4d_layout *l = tu_layout("dp=4", "ep=4", "seq=4096", bad[i][0], bad[i][1], bad[i][2], NULL);
        ck_assert_int_eq(mem4d_validate(moe, l, why, sizeof why), MEM4D_E_CONFLICT);
        mem4d_layout_free(l);
    }
    /* graphs of attention and the router beside the overlap are Megatron-Core's own recipe */
    mem4d_layout *ok = tu_layout("dp=4", "ep=4", "seq=4096", "moe_ep_overlap=1", "cuda_graph=transformer_engine",
                                 "cuda_graph_scope=9", NULL);
    ck_assert_msg(mem4d_validate(moe, ok, why, sizeof why) == MEM4D_OK, "%s", why);
    mem4d_layout_free(ok);
    mem4d_model_free(moe);
}
END_TEST

/* fp32 residuals (llama3.1-8b, tp 2 with sequence parallelism, pp 4, 32
 * micro-batches): the pipeline's two buffers hold 4-byte elements
 * (2·T·2h/t_sp more), stage r keeps each in-flight micro-batch's received
 * fp32 input (4h·T/t_sp), stage 0 receives none; full-recompute
 * checkpoints double. */
START_TEST(fp32_residual_stream)
{
    mem4d_report *a = run(NULL), *b = run("fp32_residual=1", NULL);
    for (uint32_t r = 0; r < 4; r++)
        ck_assert_uint_eq(delta(a, b, r, MEM4D_TERM_BUFFERS), 2 * T * 2 * H / TP);
    ck_assert_uint_eq(delta(a, b, 0, MEM4D_TERM_ACTIVATIONS), 0);
    ck_assert_uint_eq(delta(a, b, 1, MEM4D_TERM_ACTIVATIONS), 3 * T * 4 * H / TP);
    ck_assert_uint_eq(delta(a, b, 3, MEM4D_TERM_ACTIVATIONS), 1 * T * 4 * H / TP);
    same_except(a, b, BIT(MEM4D_TERM_BUFFERS) | BIT(MEM4D_TERM_ACTIVATIONS));
    mem4d_report *c = run("recompute=full", NULL), *d = run("recompute=full", "fp32_residual=1", NULL);
    /* stage 3, 1 micro-batch: its 8 layers recomputed as one group (recompute_num_layers 0), one
     * checkpoint C more, + the received input; with groups of 2 layers, 4 checkpoints */
    ck_assert_uint_eq(delta(c, d, 3, MEM4D_TERM_ACTIVATIONS), CKPT + T * 4 * H / TP);
    mem4d_report *e = run("recompute=full", "recompute_num_layers=2", NULL);
    mem4d_report *f = run("recompute=full", "recompute_num_layers=2", "fp32_residual=1", NULL);
    ck_assert_uint_eq(delta(e, f, 3, MEM4D_TERM_ACTIVATIONS), 4 * CKPT + T * 4 * H / TP);
    mem4d_report_free(e);
    mem4d_report_free(f);
    mem4d_report *rs[] = {a, b, c, d};
    for (size_t i = 0; i < 4; i++)
        mem4d_report_free(rs[i]);
    assert_invalid(model, tu_layout("pp=4", "dp=4", "seq=4096", "fp32_residual=1", "param_bytes=4", NULL),
                   MEM4D_E_CONFLICT);
}
END_TEST

/* CUDA graphs (same job, stage 0 keeps 4 micro-batches of 8 layers): static
 * inputs kept at every moment, in BUFFERS: transformer_engine one hidden
 * state 2h·T/t_sp and one causal mask T·s per graphed layer and in-flight
 * micro-batch, and one more hidden state; local one hidden state per
 * micro-batch; full_iteration 28 bytes a token of each of the 32
 * micro-batches. The eager optimizer step cannot reuse the graph pool: the
 * smaller of the pool's peak and the step's buffers stays reserved
 * (FRAGMENTATION), never allocated. */
START_TEST(cuda_graph_static_buffers)
{
    uint64_t H1 = T * 2 * H / TP, MASK = T * S;
    mem4d_report *a = run(NULL), *te = run("cuda_graph=transformer_engine", NULL);
    mem4d_report *noattn = run("cuda_graph=transformer_engine", "cuda_graph_scope=2", NULL); /* mlp */
    mem4d_report *loc = run("cuda_graph=local", NULL), *full = run("cuda_graph=full_iteration", NULL);
    ck_assert_uint_eq(get(a, 0, MEM4D_TERM_IN_FLIGHT), 4);
    ck_assert_uint_eq(delta(a, te, 0, MEM4D_TERM_BUFFERS), 4 * 8 * (H1 + MASK) + H1);
    ck_assert_uint_eq(delta(a, noattn, 0, MEM4D_TERM_BUFFERS), 4 * 8 * H1 + H1);
    ck_assert_uint_eq(delta(a, loc, 0, MEM4D_TERM_BUFFERS), 4 * H1);
    ck_assert_uint_eq(delta(a, full, 0, MEM4D_TERM_BUFFERS), 32 * T * 28);
    mem4d_report *rs[] = {a, te, noattn, loc, full};
    for (size_t i = 1; i < 5; i++) {
        ck_assert_uint_eq(get(rs[i], 0, MEM4D_TERM_ACTIVATIONS), get(a, 0, MEM4D_TERM_ACTIVATIONS));
        ck_assert_uint_gt(get(rs[i], 0, MEM4D_TERM_FRAGMENTATION), get(a, 0, MEM4D_TERM_FRAGMENTATION));
        same_except(a, rs[i], BIT(MEM4D_TERM_BUFFERS));
    }
    for (size_t i = 0; i < 5; i++)
        mem4d_report_free(rs[i]);
    static const char *const bad[][2] = {{"cuda_graph=local", "recompute=full"},
                                         {"cuda_graph=local", "framework=torchtitan"}};
    for (size_t i = 0; i < 2; i++) {
        mem4d_layout *l = tu_layout("pp=4", "dp=4", "seq=4096", bad[i][0], bad[i][1], NULL);
        char why[256];
        ck_assert_int_eq(mem4d_validate(model, l, why, sizeof why), MEM4D_E_CONFLICT);
        mem4d_layout_free(l);
    }
}
END_TEST

/* Megatron FSDP's double buffers (ZeRO-3, no overlap flags): the
 * forward/backward keeps two gathered layers and two layers' unsharded
 * gradients (the units' buckets) instead of the prefetch window and one
 * layer's gradients, and they stay allocated at the optimizer step. */
START_TEST(fsdp_double_buffers)
{
    mem4d_report *a = run("zero_stage=3", NULL), *b = run("zero_stage=3", "fsdp_double_buffer=1", NULL);
    uint64_t grads = P_LAYER * 4, layer = P_LAYER * 2; /* fp32 grads; bf16 weights */
    uint64_t window = 2 * (8 * P_LAYER < 500000000 + 2 * P_LAYER ? 8 * P_LAYER : 500000000 + 2 * P_LAYER);
    ck_assert_uint_eq(get(b, 1, MEM4D_TERM_BUFFERS) + window + grads, get(a, 1, MEM4D_TERM_BUFFERS) + 2 * (grads + layer));
    same_except(a, b, BIT(MEM4D_TERM_BUFFERS));
    mem4d_report_free(a);
    mem4d_report_free(b);
    assert_invalid(model, tu_layout("pp=4", "dp=4", "seq=4096", "fsdp_double_buffer=1", NULL), MEM4D_E_CONFLICT);
}
END_TEST

/* Fine-grained activation offloading: core_attn and attn_proj send Q, K,
 * V and the attention output (2·(a·dh + k·2dh) + 2·a·dh = 20480 bytes a
 * token, split by t) to the host: stage 0's 4 micro-batches x 8 layers keep
 * 32 layers' worth less, and two layers' worth are back on the GPU in
 * backward (the last layer's groups, kept, and the one reloaded). Half the
 * groups offloaded, half the bytes. */
START_TEST(fine_grained_activation_offloading)
{
    uint64_t L1 = T * 20480 / TP;
    mem4d_report *a = run(NULL), *b = run("offload_modules=12", NULL);
    mem4d_report *c = run("offload_modules=12", "activation_offload_fraction_ppm=500000", NULL);
    same_except(a, b, BIT(MEM4D_TERM_ACTIVATIONS));
    ck_assert_uint_eq(get(a, 0, MEM4D_TERM_ACTIVATIONS) - get(b, 0, MEM4D_TERM_ACTIVATIONS), 30 * L1);
    ck_assert_uint_eq(get(a, 0, MEM4D_TERM_ACTIVATIONS) - get(c, 0, MEM4D_TERM_ACTIVATIONS), 15 * L1);
    mem4d_report_free(a);
    mem4d_report_free(b);
    mem4d_report_free(c);
    /* the experts' inputs: expert_fc1 the permuted tokens 4·2h, moe_act the
     * activation's input 4·2·fe·2 bytes; 2 micro-batches x 12 layers on stage 0 */
    mem4d_report *m = moe_run(NULL, NULL, NULL), *mo = moe_run("offload_modules=96", NULL, NULL);
    ck_assert_uint_eq(get(m, 0, MEM4D_TERM_ACTIVATIONS) - get(mo, 0, MEM4D_TERM_ACTIVATIONS),
                      22 * UINT64_C(4096) * (4 * 2 * 2048 + 4 * 4 * 1408));
    mem4d_report_free(m);
    mem4d_report_free(mo);
    static const char *const bad[][3] = {{"offload_modules=8", NULL, NULL},
                                         {"offload_modules=32", NULL, NULL},
                                         {"offload_modules=4", "activation_offload_layers=2", "pp=1"},
                                         {"offload_modules=1", "cuda_graph=transformer_engine", NULL},
                                         {"offload_modules=4", "cuda_graph=local", NULL},
                                         {"offload_modules=4", "framework=torchtitan", NULL}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mem4d_layout *l = tu_layout("pp=4", "dp=4", "seq=4096", bad[i][0], bad[i][1], bad[i][2], NULL);
        char why[256];
        ck_assert_int_eq(mem4d_validate(model, l, why, sizeof why), MEM4D_E_CONFLICT);
        ck_assert_msg(strstr(why, "offload") != NULL, "%s", why);
        mem4d_layout_free(l);
    }
    mem4d_model *moe = tu_model("qwen1.5-moe-a2.7b");
    mem4d_layout *l = tu_layout("dp=4", "ep=4", "seq=4096", "offload_modules=32", "recompute=selective",
                                "recompute_modules=64", NULL);
    char why[256];
    ck_assert_int_eq(mem4d_validate(moe, l, why, sizeof why), MEM4D_E_CONFLICT);
    mem4d_layout_free(l);
    mem4d_model_free(moe);
}
END_TEST

/* Deferred embedding weight gradients (pp 4, 32 micro-batches): the last
 * stage keeps each deferred micro-batch's head input (2h·T/t_sp) and logits
 * gradient (2·T·V/t): 4 of them at the last loss with a limit of 4; with
 * every micro-batch deferred, 31 at the last loss and 32 at the flush. */
START_TEST(deferred_embedding_wgrad)
{
    uint64_t each = T * 2 * H / TP + 2 * T * (uint64_t)V / TP;
    mem4d_report *a = run(NULL), *b = run("defer_embedding_wgrad=1", "wgrad_deferral_limit=4", NULL);
    same_except(a, b, BIT(MEM4D_TERM_ACTIVATIONS));
    ck_assert_uint_eq(delta(a, b, 3, MEM4D_TERM_ACTIVATIONS), 4 * each);
    ck_assert_uint_eq(delta(a, b, 0, MEM4D_TERM_ACTIVATIONS), 0);
    mem4d_report *c = run("defer_embedding_wgrad=1", NULL);
    uint64_t moment = get(c, 3, MEM4D_TERM_PEAK_MOMENT), act = get(c, 3, MEM4D_TERM_ACTIVATIONS);
    if (moment == MEM4D_MOMENT_OPTIMIZER_STEP)
        ck_assert_uint_ge(get(c, 3, MEM4D_TERM_BUFFERS), 32 * each);
    else
        ck_assert_uint_eq(act - get(a, 3, MEM4D_TERM_ACTIVATIONS), 31 * each);
    mem4d_report_free(a);
    mem4d_report_free(b);
    mem4d_report_free(c);
    assert_invalid(model, tu_layout("pp=1", "dp=16", "seq=4096", "defer_embedding_wgrad=1", NULL), MEM4D_E_CONFLICT);
}
END_TEST

/* --create-all-gather-group: one more communicator over dp x cp (tp 2,
 * pp 4, dp 2), its NCCL buffers in FIXED. */
START_TEST(allgather_groups)
{
    mem4d_report *a = run(NULL), *b = run("allgather_groups=1", NULL);
    same_except(a, b, BIT(MEM4D_TERM_FIXED));
    ck_assert_uint_eq(delta(a, b, 0, MEM4D_TERM_FIXED), dev(MEM4D_DEVICE_NCCL_BYTES_PER_GROUP));
    uint64_t ga = 0, gb = 0;
    ck_assert_int_eq(mem4d_report_info(a, MEM4D_INFO_PROCESS_GROUPS, &ga), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_info(b, MEM4D_INFO_PROCESS_GROUPS, &gb), MEM4D_OK);
    ck_assert_uint_eq(gb, ga + 1);
    mem4d_report_free(a);
    mem4d_report_free(b);
}
END_TEST

START_TEST(moe_preset_parameter_counts)
{
    static const struct {
        const char *name;
        uint64_t params;
    } cases[] = {
        {"mixtral-8x7b", UINT64_C(46702792704)},     /* Hugging Face model card: 46.7B */
        {"qwen1.5-moe-a2.7b", UINT64_C(14315784192)}, /* model card: 14.3B in total */
        {"qwen2-57b-a14b", UINT64_C(57408658944)},    /* model card: 57B (57.4B) in total */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mem4d_model *m = tu_model(cases[i].name);
        uint64_t n = 0;
        ck_assert_int_eq(mem4d_model_num_params(m, &n), MEM4D_OK);
        ck_assert_uint_eq(n, cases[i].params);
        mem4d_model_free(m);
    }
}
END_TEST

START_TEST(overflow_is_range_not_wrap)
{
    mem4d_model *m = NULL;
    ck_assert_int_eq(mem4d_model_new(&m), MEM4D_OK);
    mem4d_model_set(m, MEM4D_MODEL_HIDDEN_SIZE, 1u << 20);
    mem4d_model_set(m, MEM4D_MODEL_FFN_HIDDEN_SIZE, 1u << 22);
    mem4d_model_set(m, MEM4D_MODEL_NUM_LAYERS, 4096);
    mem4d_model_set(m, MEM4D_MODEL_NUM_HEADS, 1u << 14);
    mem4d_model_set(m, MEM4D_MODEL_VOCAB_SIZE, 1u << 24);
    mem4d_layout *l = tu_layout("dp=1", "seq=16777216", "mbs=65536", NULL);
    mem4d_report *r = NULL;
    mem4d_report_new(&r);
    ck_assert_int_eq(mem4d_estimate(m, l, device, r), MEM4D_E_RANGE);
    ck_assert_uint_eq(mem4d_report_num_stages(r), 0);
    mem4d_report_free(r);
    mem4d_layout_free(l);
    mem4d_model_free(m);
}
END_TEST

/* The BLOOM prequel's model: h 14336, 64 heads, f 4h, 72 layers. */
static mem4d_model *bloom_prequel_model(void)
{
    mem4d_model *m = NULL;
    ck_assert_int_eq(mem4d_model_new(&m), MEM4D_OK);
    const char *const keys[][2] = {{"hidden_size", "14336"}, {"num_layers", "72"},     {"num_attention_heads", "64"},
                                   {"ffn_hidden_size", "57344"}, {"vocab_size", "250880"}, {"gated_mlp", "0"},
                                   {"normalization", "layernorm"}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_int_eq(mem4d_model_set_str(m, keys[i][0], keys[i][1]), MEM4D_OK);
    return m;
}

/* The BLOOM prequel's layer (h 14336, 64 heads, f 4h, 72 layers) at tp 8
 * pp 12 dp 4, sequence 2048, softmax attention with both dropouts, on
 * `stack` at micro-batch `mbs`, with the recompute settings rc (rc2 NULL or a second one). */
static mem4d_report *bloom_prequel(const mem4d_model *m, const char *stack, const char *mbs, const char *rc,
                                   const char *rc2)
{
    mem4d_device *d = tu_device("a100-80");
    ck_assert_int_eq(mem4d_device_set_str(d, "stack", stack), MEM4D_OK);
    mem4d_layout *l = tu_layout("tp=8", "pp=12", "dp=4", "seq=2048", "gbs=2048", "sequence_parallel=0",
                                "flash_attn=0", "attention_dropout=1", "hidden_dropout=1", rc, rc2, NULL);
    ck_assert_int_eq(mem4d_layout_set_str(l, "mbs", mbs), MEM4D_OK);
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    ck_assert_msg(mem4d_estimate(m, l, d, r) == MEM4D_OK, "%s", mem4d_report_message(r));
    mem4d_layout_free(l);
    mem4d_device_free(d);
    return r;
}

/* Where the stack's fused softmax declines the shape (lib/perf.c,
 * FUSED_SOFTMAX; m4d_softmax_falls_back), PyTorch's fp32 softmax keeps its
 * 4-byte output for the backward where the kernel keeps 2, and with
 * attention dropout its half copy is freed: 7 bytes a score against the
 * kernel's 5, and the backward holds two fp32 score tensors, 8 against 4
 * (doc/full-model.md, "Activations kept for backward"). BigScience's fork
 * of 2022-02 takes the 8 heads a rank for the keys: micro-batch 1 falls
 * back, 4 runs fused; megatron-deepspeed's test passes both, and a stack
 * without the rule (middle) keeps what megatron-deepspeed keeps. Per
 * sample a layer has (a/t)·s² = 8·2048² scores: kept by the stage's 11
 * in-flight micro-batches of 6 layers without recompute, by the one layer
 * re-run with full recompute of one layer a group or selective recompute
 * of the core, and in every case the backward's. */
START_TEST(fused_softmax_fallback_memory)
{
    mem4d_model *m = bloom_prequel_model();
    const uint64_t scores = UINT64_C(8) * 2048 * 2048;
    const struct {
        const char *rc, *rc2;
        uint64_t kept; /* layer-micro-batches that keep the core's tensors on stage 1 */
    } cases[] = {{"recompute=none", NULL, 11 * 6},
                 {"recompute=full", "recompute_num_layers=1", 1},
                 {"recompute=selective", NULL, 1}};
    const char *const bs = "megatron-deepspeed-bigscience-2022-02", *ds = "megatron-deepspeed";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *rc = cases[i].rc, *rc2 = cases[i].rc2;
        mem4d_report *r[2][3];
        for (int b = 0; b < 2; b++) {
            const char *mbs = b ? "4" : "1";
            r[b][0] = bloom_prequel(m, bs, mbs, rc, rc2);
            r[b][1] = bloom_prequel(m, ds, mbs, rc, rc2);
            r[b][2] = bloom_prequel(m, "middle", mbs, rc, rc2);
            same_except(r[b][1], r[b][0], BIT(MEM4D_TERM_ACTIVATIONS));
            same_except(r[b][1], r[b][2], 0);
        }
        /* the report says which softmax ran: PyTorch's only for BigScience's micro-batch 1 */
        for (int b = 0; b < 2; b++)
            for (int k = 0; k < 3; k++) {
                ck_assert_uint_eq(info(r[b][k], MEM4D_INFO_ATTENTION_KERNEL), 5);
                ck_assert_uint_eq(info(r[b][k], MEM4D_INFO_SOFTMAX_FALLBACK), b == 0 && k == 0);
            }
        ck_assert_uint_eq(get(r[0][1], 1, MEM4D_TERM_IN_FLIGHT) * get(r[0][1], 1, MEM4D_TERM_LAYERS), 66);
        uint64_t extra = get(r[0][0], 1, MEM4D_TERM_ACTIVATIONS) - get(r[0][1], 1, MEM4D_TERM_ACTIVATIONS);
        ck_assert_msg(extra == (cases[i].kept * (7 - 5) + (8 - 4)) * scores, "%s: %llu", cases[i].rc,
                      (unsigned long long)extra);
        ck_assert_uint_eq(get(r[1][0], 1, MEM4D_TERM_ACTIVATIONS), get(r[1][1], 1, MEM4D_TERM_ACTIVATIONS));
        /* per sample: micro-batch 1 keeps `extra` more than a quarter of micro-batch 4 */
        ck_assert_uint_eq(4 * get(r[0][1], 1, MEM4D_TERM_ACTIVATIONS), get(r[1][1], 1, MEM4D_TERM_ACTIVATIONS));
        ck_assert_uint_eq(4 * get(r[0][0], 1, MEM4D_TERM_ACTIVATIONS) - get(r[1][0], 1, MEM4D_TERM_ACTIVATIONS),
                          4 * extra);
        for (int b = 0; b < 2; b++)
            for (int k = 0; k < 3; k++)
                mem4d_report_free(r[b][k]);
    }
    mem4d_model_free(m);
}
END_TEST

/* Megatron-LM of 2022 (the megatron-lm-2022 profile, NVIDIA/Megatron-LM@
 * 2e90a342) lets 4096 keys through is_kernel_available, but a causal
 * model's fused kernel (scaled_upper_triang_masked_softmax_cuda.cu:
 * TORCH_INTERNAL_ASSERT(seq_len <= 2048)) refused them until 6753e8bf
 * (2023-05-05; NVIDIA/Megatron-LM#260): a job of 4096 keys ran PyTorch's
 * softmax, as megatron-deepspeed's does beyond its 2048, and keeps what
 * that keeps; at 2048 keys both keep the fused kernel's, as a stack
 * without the rule (middle) does. */
START_TEST(fused_softmax_causal_limit)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    uint64_t act[2][3];
    const char *const stacks[] = {"megatron-lm-2022", "megatron-deepspeed", "middle"};
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++) {
            mem4d_device *d = tu_device("a100-80");
            ck_assert_int_eq(mem4d_device_set_str(d, "stack", stacks[k]), MEM4D_OK);
            mem4d_layout *l = tu_layout("tp=8", "pp=4", "dp=1", "gbs=8", "mbs=1", "flash_attn=0", NULL);
            ck_assert_int_eq(mem4d_layout_set_str(l, "seq", i ? "4096" : "2048"), MEM4D_OK);
            mem4d_report *r = NULL;
            ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
            ck_assert_msg(mem4d_estimate(m, l, d, r) == MEM4D_OK, "%s", mem4d_report_message(r));
            act[i][k] = get(r, 1, MEM4D_TERM_ACTIVATIONS);
            /* what ran: softmax attention, PyTorch's softmax at 4096 keys on the stacks with the rule */
            ck_assert_uint_eq(info(r, MEM4D_INFO_ATTENTION_KERNEL), 5);
            ck_assert_uint_eq(info(r, MEM4D_INFO_SOFTMAX_FALLBACK), i == 1 && k < 2);
            mem4d_report_free(r);
            mem4d_layout_free(l);
            mem4d_device_free(d);
        }
    ck_assert_uint_eq(act[0][0], act[0][2]);
    ck_assert_uint_eq(act[0][1], act[0][2]);
    ck_assert_uint_eq(act[1][0], act[1][1]);
    ck_assert_msg(act[1][0] > act[1][2], "%llu %llu", (unsigned long long)act[1][0], (unsigned long long)act[1][2]);
    mem4d_model_free(m);
}
END_TEST

/* The BLOOM prequel's job of bloom_prequel() with mbs 1, no recompute and
 * its attention left to the device (flash NULL) or set ("flash_attn=0",
 * "flash_attn=1"), on a100-80 with dkey = dval; its step time in *step. */
static mem4d_report *attention_job(const mem4d_model *m, const char *dkey, const char *dval, const char *flash,
                                   double *step)
{
    mem4d_device *d = tu_device("a100-80");
    ck_assert_int_eq(mem4d_device_set_str(d, dkey, dval), MEM4D_OK);
    mem4d_layout *l = tu_layout("tp=8", "pp=12", "dp=4", "seq=2048", "gbs=2048", "mbs=1", "sequence_parallel=0",
                                "attention_dropout=1", "hidden_dropout=1", flash, NULL);
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    ck_assert_msg(mem4d_estimate(m, l, d, r) == MEM4D_OK, "%s", mem4d_report_message(r));
    ck_assert_int_eq(mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, step), MEM4D_OK);
    mem4d_layout_free(l);
    mem4d_device_free(d);
    return r;
}

/* One owner decides the job's attention for the memory and the step time
 * (m4d_attention_fused(), lib/perf.c): the layout's flash_attn where set,
 * else the device's attention kernel, else its stack's. A layout that leaves
 * flash_attn unset on the megatron-lm-2022, megatron-deepspeed or
 * BigScience's stack (softmax attention) is the job with flash_attn 0: the
 * same memory (its s x s scores kept, beyond the default stack's flash
 * memory) and step time; flash_attn 1 set runs flash attention there. */
START_TEST(attention_kind_one_owner)
{
    mem4d_model *m = bloom_prequel_model();
    const uint64_t scores = UINT64_C(8) * 2048 * 2048; /* (a/t) s^2 a layer and sample */
    double t_mid, t_mid0, t_def, t_zero, t_one;
    mem4d_report *mid = attention_job(m, "stack", "middle", NULL, &t_mid);
    mem4d_report *mid0 = attention_job(m, "stack", "middle", "flash_attn=0", &t_mid0);
    ck_assert_uint_ge(get(mid0, 1, MEM4D_TERM_ACTIVATIONS), get(mid, 1, MEM4D_TERM_ACTIVATIONS) + 66 * 4 * scores);
    const char *const stacks[] = {"megatron-lm-2022", "megatron-deepspeed", "megatron-deepspeed-bigscience-2022-02"};
    for (size_t i = 0; i < sizeof stacks / sizeof stacks[0]; i++) {
        mem4d_report *def = attention_job(m, "stack", stacks[i], NULL, &t_def);
        mem4d_report *zero = attention_job(m, "stack", stacks[i], "flash_attn=0", &t_zero);
        mem4d_report *one = attention_job(m, "stack", stacks[i], "flash_attn=1", &t_one);
        same_except(def, zero, 0);
        ck_assert_msg(t_def == t_zero, "%s: %g s against %g s", stacks[i], t_def, t_zero);
        /* the report says what ran where the layout's getter reads flash_attn's default 1:
         * softmax attention, PyTorch's softmax where BigScience's fork declines 8 heads a
         * rank at micro-batch 1; flash_attn 1 set runs FlashAttention-2 */
        uint64_t flash = 0;
        mem4d_layout *unset = tu_layout(NULL);
        ck_assert_int_eq(mem4d_layout_get(unset, MEM4D_LAYOUT_FLASH_ATTN, &flash), MEM4D_OK);
        ck_assert_uint_eq(flash, 1);
        mem4d_layout_free(unset);
        ck_assert_uint_eq(info(def, MEM4D_INFO_ATTENTION_KERNEL), 5);
        ck_assert_uint_eq(info(def, MEM4D_INFO_SOFTMAX_FALLBACK), i == 2);
        ck_assert_uint_eq(info(zero, MEM4D_INFO_SOFTMAX_FALLBACK), i == 2);
        ck_assert_uint_eq(info(one, MEM4D_INFO_ATTENTION_KERNEL), 1);
        ck_assert_uint_eq(info(one, MEM4D_INFO_SOFTMAX_FALLBACK), 0);
        /* the scores: 11 in-flight micro-batches of 6 layers on stage 1, at 4 bytes or more each */
        ck_assert_uint_ge(get(def, 1, MEM4D_TERM_ACTIVATIONS), get(mid, 1, MEM4D_TERM_ACTIVATIONS) + 66 * 4 * scores);
        same_except(one, mid, 0);
        ck_assert_msg(t_one < t_def, "%s: flash %g s, softmax %g s", stacks[i], t_one, t_def);
        mem4d_report_free(one);
        mem4d_report_free(zero);
        mem4d_report_free(def);
    }
    /* a kernel the device names decides an unset flash_attn; a set one is the layout's */
    mem4d_report *unf = attention_job(m, "attention_kernel", "unfused", NULL, &t_def);
    same_except(unf, mid0, 0);
    ck_assert(t_def == t_mid0);
    mem4d_report *fa2 = attention_job(m, "attention_kernel", "fa2", "flash_attn=0", &t_zero);
    same_except(fa2, mid0, 0);
    ck_assert(t_zero == t_mid0);
    /* the middle stack's kernel, cuDNN's; softmax where the kernel or the layout says so, a
     * stack without a fused-softmax rule never falling back */
    ck_assert_uint_eq(info(mid, MEM4D_INFO_ATTENTION_KERNEL), 3);
    ck_assert_uint_eq(info(unf, MEM4D_INFO_ATTENTION_KERNEL), 5);
    ck_assert_uint_eq(info(fa2, MEM4D_INFO_ATTENTION_KERNEL), 5);
    ck_assert_uint_eq(info(mid0, MEM4D_INFO_SOFTMAX_FALLBACK), 0);
    mem4d_report_free(fa2);
    mem4d_report_free(unf);
    mem4d_report_free(mid0);
    mem4d_report_free(mid);
    mem4d_model_free(m);
}
END_TEST

/* MEM4D_INFO_ATTENTION_KERNEL names the kernel that runs: the device's
 * where set, else its stack's (the middle stack's cuDNN), FlashAttention-2
 * for FlashAttention-3 asked of an A100 (no fp8 peak, no FA3 there). A
 * search's reports say what an estimate of the layout it yields says, the
 * fused softmax's fallback varying with the micro-batch it searches. */
START_TEST(attention_kernel_is_what_runs)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    const struct {
        const char *gpu, *kernel;
        uint64_t runs;
    } cases[] = {{"h100-80", NULL, 3},   {"h100-80", "fa3", 2}, {"a100-80", "fa3", 1},  {"a100-80", "sdpa", 4},
                 {"h100-80", "triton", 6}, {"a100-80", "unfused", 5}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mem4d_device *d = tu_device(cases[i].gpu);
        if (cases[i].kernel)
            ck_assert_int_eq(mem4d_device_set_str(d, "attention_kernel", cases[i].kernel), MEM4D_OK);
        mem4d_layout *l = tu_layout("tp=8", "dp=1", "seq=2048", "gbs=8", NULL);
        mem4d_report *r = tu_estimate(m, l, d);
        ck_assert_msg(info(r, MEM4D_INFO_ATTENTION_KERNEL) == cases[i].runs, "%s %s: %llu", cases[i].gpu,
                      cases[i].kernel ? cases[i].kernel : "auto",
                      (unsigned long long)info(r, MEM4D_INFO_ATTENTION_KERNEL));
        ck_assert_uint_eq(info(r, MEM4D_INFO_SOFTMAX_FALLBACK), 0);
        mem4d_report_free(r);
        mem4d_layout_free(l);
        mem4d_device_free(d);
    }
    mem4d_model_free(m);
    /* the search: BigScience's fork of 2022-02 at tp 8 (4 heads a rank) */
    m = bloom_prequel_model();
    mem4d_device *d = tu_device("a100-80");
    ck_assert_int_eq(mem4d_device_set_str(d, "stack", "megatron-deepspeed-bigscience-2022-02"), MEM4D_OK);
    mem4d_layout *base = tu_layout("world=384", "seq=2048", "gbs=2048", NULL), *l = NULL;
    mem4d_search *search = NULL;
    ck_assert_int_eq(mem4d_search_new(m, d, base, &search), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_set_option(search, MEM4D_SEARCH_FITS_ONLY, 0), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_new(&l), MEM4D_OK);
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    unsigned seen[2] = {0, 0};
    for (unsigned n = 0; n < 400 && mem4d_search_next(search, l, r) == MEM4D_OK; n++) {
        mem4d_report *e = tu_estimate(m, l, d);
        for (mem4d_info i = MEM4D_INFO_ATTENTION_KERNEL; i <= MEM4D_INFO_SOFTMAX_FALLBACK; i++)
            ck_assert_uint_eq(info(r, i), info(e, i));
        ck_assert_uint_eq(info(r, MEM4D_INFO_ATTENTION_KERNEL), 5);
        seen[info(r, MEM4D_INFO_SOFTMAX_FALLBACK)]++;
        mem4d_report_free(e);
    }
    ck_assert_msg(seen[0] > 0 && seen[1] > 0, "fused %u, fallen back %u", seen[0], seen[1]);
    mem4d_report_free(r);
    mem4d_layout_free(l);
    mem4d_search_free(search);
    mem4d_layout_free(base);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("full");
    TCase *tc = tcase_create("terms");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, stage_parameters);
    tcase_add_test(tc, attention_kernel_is_what_runs);
    tcase_add_test(tc, one_f_one_b_activations);
    tcase_add_test(tc, buffers_and_fixed);
    tcase_add_test(tc, device_constants_move_only_their_terms);
    tcase_add_test(tc, tp_comm_overlap_userbuffers);
    tcase_add_test(tc, sgd_optimizer_state);
    tcase_add_test(tc, overlapped_distributed_optimizer);
    tcase_add_test(tc, distributed_optimizer_and_zero);
    tcase_add_test(tc, precisions);
    tcase_add_test(tc, optimizer_step_moment);
    tcase_add_test(tc, interleaved_schedule);
    tcase_add_test(tc, fewer_micro_batches_than_stages);
    tcase_add_test(tc, recomputation);
    tcase_add_test(tc, dropout_masks);
    tcase_add_test(tc, fused_cross_entropy);
    tcase_add_test(tc, vocabulary_padding);
    tcase_add_test(tc, uneven_stages_and_tied_head);
    tcase_add_test(tc, context_parallel_groups_and_tokens);
    tcase_add_test(tc, experts_split_by_ep);
    tcase_add_test(tc, distributed_optimizer_instances);
    tcase_add_test(tc, activation_offloading);
    tcase_add_test(tc, shorter_end_virtual_stages);
    tcase_add_test(tc, virtual_stage_layer_table);
    tcase_add_test(tc, fsdp_expert_shards);
    tcase_add_test(tc, moe_token_capacity);
    tcase_add_test(tc, moe_routed_rows_follow_the_load);
    tcase_add_test(tc, moe_token_dispatchers);
    tcase_add_test(tc, moe_router_padding);
    tcase_add_test(tc, moe_ep_overlap_and_delayed_wgrad);
    tcase_add_test(tc, fp32_residual_stream);
    tcase_add_test(tc, cuda_graph_static_buffers);
    tcase_add_test(tc, fsdp_double_buffers);
    tcase_add_test(tc, fine_grained_activation_offloading);
    tcase_add_test(tc, deferred_embedding_wgrad);
    tcase_add_test(tc, allgather_groups);
    tcase_add_test(tc, moe_preset_parameter_counts);
    tcase_add_test(tc, overflow_is_range_not_wrap);
    tcase_add_test(tc, dsa_indexer_memory);
    tcase_add_test(tc, logprob_loss_memory);
    tcase_add_test(tc, fp8_recipe_attention_output_copy);
    tcase_add_test(tc, nvfp4_saved_inputs);
    tcase_add_test(tc, fused_softmax_fallback_memory);
    tcase_add_test(tc, fused_softmax_causal_limit);
    tcase_add_test(tc, attention_kind_one_owner);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
