/*
 * The framework key and its mechanisms (doc/full-model.md, "Frameworks"
 * and "The allocator"), with values computed by hand; the allocator's
 * block and segment rounding; full mode's verdict threshold; the
 * warnings; and the DeepSpeed ds_config.json reader.
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "../lib/private.h" /* the allocator's rounding rules are static inline */

/* A small Llama: h 1024, f 4096 (SwiGLU), 2 layers, 8 heads = 8 KV heads
 * (dh 128), vocabulary 32000, untied. One layer: attention 4·h² =
 * 4,194,304, MLP 3·h·f = 12,582,912, norms 2h = 2048: 16,779,264. Whole
 * model: 2 layers + embedding and head 2·V·h = 65,536,000 + final norm
 * 1024 = 99,095,552 parameters. */
#define LAYER UINT64_C(16779264)
#define EMB UINT64_C(32768000)
#define N_ALL (2 * LAYER + 2 * EMB + 1024)

static mem4d_model *small_model(uint64_t layers)
{
    mem4d_model *m = NULL;
    ck_assert_int_eq(mem4d_model_new(&m), MEM4D_OK);
    static const struct {
        mem4d_model_param k;
        uint64_t v;
    } dims[] = {{MEM4D_MODEL_HIDDEN_SIZE, 1024}, {MEM4D_MODEL_FFN_HIDDEN_SIZE, 4096}, {MEM4D_MODEL_NUM_HEADS, 8},
                {MEM4D_MODEL_NUM_KV_HEADS, 8},   {MEM4D_MODEL_VOCAB_SIZE, 32000}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        ck_assert_int_eq(mem4d_model_set(m, dims[i].k, dims[i].v), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(m, MEM4D_MODEL_NUM_LAYERS, layers), MEM4D_OK);
    return m;
}

static mem4d_device *big_device(void)
{
    mem4d_device *d = NULL;
    ck_assert_int_eq(mem4d_device_new(&d), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_MEMORY_BYTES, UINT64_C(80) << 30), MEM4D_OK);
    return d;
}

static uint64_t get(const mem4d_report *r, uint32_t stage, mem4d_term t)
{
    uint64_t v = 0;
    ck_assert_int_eq(mem4d_report_get(r, stage, t, &v), MEM4D_OK);
    return v;
}

/* Estimate the small model (2 layers unless given) with a layout of
 * "key=value" settings; the report is returned for inspection. */
static mem4d_report *run(uint64_t layers, mem4d_layout *l)
{
    mem4d_model *m = small_model(layers);
    mem4d_device *d = big_device();
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    ck_assert_msg(mem4d_estimate(m, l, d, r) == MEM4D_OK, "%s", mem4d_report_message(r));
    mem4d_layout_free(l);
    mem4d_device_free(d);
    mem4d_model_free(m);
    return r;
}

START_TEST(allocator_rounding)
{
    const uint64_t MiB = UINT64_C(1) << 20;
    ck_assert_uint_eq(m4d_alloc_block(1), 512);
    ck_assert_uint_eq(m4d_alloc_block(512), 512);
    ck_assert_uint_eq(m4d_alloc_block(513), 1024);
    ck_assert_uint_eq(m4d_alloc_size(1), 2 * MiB);           /* small pool segment */
    ck_assert_uint_eq(m4d_alloc_size(MiB), 2 * MiB);
    ck_assert_uint_eq(m4d_alloc_size(MiB + 1), 20 * MiB);    /* large, below 10 MiB */
    ck_assert_uint_eq(m4d_alloc_size(10 * MiB - 512), 20 * MiB);
    ck_assert_uint_eq(m4d_alloc_size(10 * MiB), 10 * MiB);   /* rounded to 2 MiB from here */
    ck_assert_uint_eq(m4d_alloc_size(10 * MiB + 1), 12 * MiB);
    ck_assert_uint_eq(m4d_alloc_size(UINT64_MAX - 3), UINT64_MAX - 3); /* no wrap */
}
END_TEST

/* torchtitan, dp 4 (FSDP over 4): fp32 sharded parameters, gradients and
 * Adam moments: 4N/4, 4N/4, 8N/4. Unsharded bf16 besides: the root module
 * (embedding, head, final norm: 2·(2·V·h + h)) and, by torchtitan's rule,
 * the last block (2·LAYER). */
START_TEST(fsdp_state)
{
    mem4d_report *r = run(2, tu_layout("framework=torchtitan", "dp=4", "seq=1024", NULL));
    uint64_t root = 2 * (2 * EMB + 1024);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_GRADIENTS), N_ALL);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_OPTIMIZER), 2 * N_ALL);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_WEIGHTS), N_ALL + root + 2 * LAYER);
    mem4d_report_free(r);
    r = run(2, tu_layout("framework=torchtitan", "dp=4", "seq=1024", "reshard_after_forward=always", NULL));
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_WEIGHTS), N_ALL + root);
    mem4d_report_free(r);
    /* HSDP: replicate 2 x shard 2 */
    r = run(2, tu_layout("framework=torchtitan", "dp=4", "dp_replicate=2", "seq=1024", NULL));
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_OPTIMIZER), 4 * N_ALL);
    mem4d_report_free(r);
}
END_TEST

/* Under PP torchtitan does not reshard: stage 0 (one layer and the
 * embedding, N0) keeps its block unsharded in bf16 and, with m = 16/4 = 4
 * micro-batches, accumulates unsharded fp32 gradients 4·N0. */
START_TEST(fsdp_pipeline_keeps_blocks)
{
    mem4d_report *r =
        run(2, tu_layout("framework=torchtitan", "dp=4", "pp=2", "gbs=16", "seq=1024", NULL));
    uint64_t n0 = LAYER + EMB;
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_PARAMS), n0);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_WEIGHTS), n0 + 2 * EMB + 2 * LAYER);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_GRADIENTS), n0 + 4 * n0);
    mem4d_report_free(r);
}
END_TEST

/* Experts on every second layer (moe_layer_freq 2, as Llama 4 Maverick's
 * interleave_moe_layer_step 2): 4 experts of 1024 (3·h·1024 each), top 2.
 * An expert layer holds LAYER - 3·h·f + 4·3·h·1024 = LAYER (the same
 * linear bytes here) and its router h·4 = 4096 besides, replicated. Under
 * PP, stage 1 of pp 3 (layers 2 and 3: one expert layer, one dense; no
 * root) keeps its blocks as they are, 2·n1, not two expert blocks. Its
 * root was n1 less the linear weights less two expert layers' replicated
 * parameters, 4096 below zero: "the estimate of stage 1 overflows 64 bits"
 * (Llama 4 Maverick under torchtitan at pp 4). */
START_TEST(fsdp_pipeline_blocks_of_a_layer_pattern)
{
    mem4d_model *m = small_model(6);
    ck_assert_int_eq(mem4d_model_set_str(m, "num_experts", "4"), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(m, "moe_router_topk", "2"), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(m, "moe_ffn_hidden_size", "1024"), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(m, "moe_layer_freq", "2"), MEM4D_OK);
    mem4d_device *d = big_device();
    mem4d_layout *l = tu_layout("framework=torchtitan", "dp=4", "pp=3", "gbs=16", "seq=1024", NULL);
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    ck_assert_msg(mem4d_estimate(m, l, d, r) == MEM4D_OK, "%s", mem4d_report_message(r));
    uint64_t n1 = 2 * LAYER + 4096;
    ck_assert_uint_eq(get(r, 1, MEM4D_TERM_PARAMS), n1);
    /* fp32 master over 4, and both blocks in bf16 */
    ck_assert_uint_eq(get(r, 1, MEM4D_TERM_WEIGHTS), n1 + 2 * n1);
    /* fp32 gradients over 4, and unsharded over m = 4 micro-batches */
    ck_assert_uint_eq(get(r, 1, MEM4D_TERM_GRADIENTS), n1 + 4 * n1);
    mem4d_report_free(r);
    mem4d_layout_free(l);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

/* torch.distributed.pipelining keeping the last stage's outputs
 * (pp_return_outputs): dp 4, pp 2, gbs 16, mbs 1: m = 4 micro-batches of
 * T = 1024 tokens; the bf16 logits are E2 = 2·1024·32000 bytes. At the last
 * micro-batch's loss the other three are held; at the end of the step all
 * four and their concatenation. Only the last stage moves. */
START_TEST(pipeline_schedule_keeps_outputs)
{
    uint64_t E2 = UINT64_C(2) * 1024 * 32000;
    mem4d_report *a = run(2, tu_layout("framework=torchtitan", "dp=4", "pp=2", "gbs=16", "seq=1024", NULL));
    mem4d_report *b = run(2, tu_layout("framework=torchtitan", "dp=4", "pp=2", "gbs=16", "seq=1024",
                                       "pp_return_outputs=1", NULL));
    ck_assert_uint_eq(get(a, 0, MEM4D_TERM_TOTAL), get(b, 0, MEM4D_TERM_TOTAL));
    ck_assert_uint_eq(get(b, 1, MEM4D_TERM_PEAK_MOMENT), MEM4D_MOMENT_FORWARD_BACKWARD);
    ck_assert_uint_eq(get(b, 1, MEM4D_TERM_ACTIVATIONS) - get(a, 1, MEM4D_TERM_ACTIVATIONS), 3 * E2);
    ck_assert_uint_gt(get(b, 1, MEM4D_TERM_PEAK_ALLOCATED), get(a, 1, MEM4D_TERM_PEAK_ALLOCATED));
    /* with 64 micro-batches the merge at the end of the step, 2·64·E2, is the peak */
    mem4d_report *e = run(2, tu_layout("framework=torchtitan", "dp=4", "pp=2", "gbs=256", "seq=1024",
                                       "pp_return_outputs=1", NULL));
    mem4d_report *f = run(2, tu_layout("framework=torchtitan", "dp=4", "pp=2", "gbs=256", "seq=1024", NULL));
    ck_assert_uint_eq(get(e, 1, MEM4D_TERM_PEAK_MOMENT), MEM4D_MOMENT_OPTIMIZER_STEP);
    /* workspace + merge + the pipeline's activation receive buffers (below) */
    ck_assert_uint_eq(get(e, 1, MEM4D_TERM_BUFFERS), (UINT64_C(256) << 20) + 128 * E2 + 63 * UINT64_C(1024) * 2048);
    ck_assert_uint_gt(get(e, 1, MEM4D_TERM_PEAK_ALLOCATED), get(f, 1, MEM4D_TERM_PEAK_ALLOCATED));
    mem4d_report_free(e);
    mem4d_report_free(f);
    mem4d_report_free(a);
    mem4d_report_free(b);
    /* without pipeline parallelism nothing is kept */
    mem4d_report *c = run(2, tu_layout("framework=torchtitan", "dp=4", "gbs=16", "seq=1024", NULL));
    mem4d_report *d = run(2, tu_layout("framework=torchtitan", "dp=4", "gbs=16", "seq=1024", "pp_return_outputs=1", NULL));
    ck_assert_uint_eq(get(c, 0, MEM4D_TERM_TOTAL), get(d, 0, MEM4D_TERM_TOTAL));
    mem4d_report_free(c);
    mem4d_report_free(d);
}
END_TEST

/* torch.distributed.pipelining's receive buffers, T·2h = 2 MiB each and
 * kept: stage 0 one gradient buffer per micro-batch, stage 1 one activation
 * buffer per micro-batch not in flight. From m = 4 to m = 8 both hold four
 * more; nothing else moves. */
START_TEST(pipeline_receive_buffers)
{
    uint64_t each = UINT64_C(1024) * 2048;
    mem4d_report *a = run(2, tu_layout("framework=torchtitan", "dp=4", "pp=2", "gbs=16", "seq=1024", NULL));
    mem4d_report *b = run(2, tu_layout("framework=torchtitan", "dp=4", "pp=2", "gbs=32", "seq=1024", NULL));
    for (uint32_t r = 0; r < 2; r++) {
        ck_assert_uint_eq(get(b, r, MEM4D_TERM_BUFFERS) - get(a, r, MEM4D_TERM_BUFFERS), 4 * each);
        ck_assert_uint_eq(get(b, r, MEM4D_TERM_ACTIVATIONS), get(a, r, MEM4D_TERM_ACTIVATIONS));
    }
    mem4d_report_free(a);
    mem4d_report_free(b);
}
END_TEST

/* Op-selective AC keeps per block and token: the input 2h, wq's and wv's
 * outputs 2·(a + k)·dh, the attention output 2·a·dh and its fp32 LSE 4a,
 * w1's output 2f and w2's 2h: 2048 + 4096 + 2048 + 32 + 8192 + 2048 =
 * 18464 bytes. Two more layers keep 2·18464·1024 bytes more (the loss
 * transient is the same). */
START_TEST(op_selective_keeps_every_other_mm)
{
    mem4d_report *a = run(2, tu_layout("framework=torchtitan", "dp=4", "seq=1024", "recompute=op", NULL));
    mem4d_report *b = run(4, tu_layout("framework=torchtitan", "dp=4", "seq=1024", "recompute=op", NULL));
    ck_assert_uint_eq(get(b, 0, MEM4D_TERM_ACTIVATIONS) - get(a, 0, MEM4D_TERM_ACTIVATIONS),
                      UINT64_C(2) * 18464 * 1024);
    mem4d_report_free(a);
    mem4d_report_free(b);
}
END_TEST

/* torchtitan's layer-selective AC (recompute_every 2 of full): of 4 blocks,
 * 2 keep only their input checkpoint 2h·T, 2 keep everything; with every
 * block checkpointed, 4 checkpoints. The difference is 2·(A - C). */
START_TEST(layer_selective_every_n)
{
    mem4d_report *all = run(4, tu_layout("framework=torchtitan", "dp=4", "seq=1024", "recompute=full", NULL));
    mem4d_report *half =
        run(4, tu_layout("framework=torchtitan", "dp=4", "seq=1024", "recompute=full", "recompute_every=2", NULL));
    mem4d_report *none = run(4, tu_layout("framework=torchtitan", "dp=4", "seq=1024", NULL));
    mem4d_report *none2 = run(2, tu_layout("framework=torchtitan", "dp=4", "seq=1024", NULL));
    uint64_t A2 = get(none, 0, MEM4D_TERM_ACTIVATIONS) - get(none2, 0, MEM4D_TERM_ACTIVATIONS); /* 2·A */
    uint64_t C = UINT64_C(2) * 1024 * 1024;                                                       /* 2h·T */
    ck_assert_uint_eq(get(half, 0, MEM4D_TERM_ACTIVATIONS) - get(all, 0, MEM4D_TERM_ACTIVATIONS), A2 - 2 * C);
    mem4d_report_free(all);
    mem4d_report_free(half);
    mem4d_report_free(none);
    mem4d_report_free(none2);
}
END_TEST

/* Virtual pipeline stages are Megatron's and torchtitan's schedules alone:
 * DeepSpeed's PipelineEngine and nanotron's engines run one chunk a rank.
 * Both frameworks took vpp > 1 and timed it as interleaved, and `mem4d plan
 * --framework deepspeed` ranked Mixtral at pp 2 vpp 16 among the fastest. */
START_TEST(vpp_is_megatron_and_torchtitan_only)
{
    static const char *const fws[] = {"framework=megatron", "framework=torchtitan", "framework=deepspeed",
                                      "framework=nanotron"};
    for (size_t f = 0; f < sizeof fws / sizeof fws[0]; f++) {
        mem4d_model *m = small_model(4);
        mem4d_device *d = big_device();
        mem4d_layout *l = tu_layout(fws[f], "dp=2", "pp=2", "vpp=2", "gbs=16", "seq=1024", NULL);
        mem4d_report *r = NULL;
        ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
        mem4d_status st = mem4d_estimate(m, l, d, r);
        if (f < 2) {
            ck_assert_msg(st == MEM4D_OK, "%s: %s", fws[f], mem4d_report_message(r));
        } else {
            ck_assert_int_eq(st, MEM4D_E_CONFLICT);
            ck_assert_msg(strstr(mem4d_report_message(r), "vpp 2 is modelled for framework megatron or torchtitan "
                                                          "only") != NULL, "%s", mem4d_report_message(r));
        }
        mem4d_report_free(r);
        mem4d_layout_free(l);
        mem4d_device_free(d);
        mem4d_model_free(m);
    }
}
END_TEST

/* nanotron ZeRO-1 over dp 4 with fp32 accumulation: bf16 weights 2N plus
 * the fp32 master of this rank's shard 4N/4; the fp32 gradient buffer over
 * every parameter 4N; Adam's moments 8N/4. No vocabulary padding. */
START_TEST(nanotron_state)
{
    mem4d_report *r = run(2, tu_layout("framework=nanotron", "dp=4", "tp=2", "seq=1024", NULL));
    uint64_t n = get(r, 0, MEM4D_TERM_PARAMS), v = 0;
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_WEIGHTS), 2 * n + n / 4 * 4);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_GRADIENTS), 4 * n);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_OPTIMIZER), 2 * n);
    ck_assert_int_eq(mem4d_report_info(r, MEM4D_INFO_PADDED_VOCAB, &v), MEM4D_OK);
    ck_assert_uint_eq(v, 32000); /* Megatron would pad to 32256 at tp 2 */
    mem4d_report_free(r);
}
END_TEST

/* nanotron ZeRO-0 over dp > 1 runs under torch's DDP, whose Reducer keeps a
 * bf16 bucket over every parameter: gradients 4N + 2N; on one rank there is
 * no DDP, and ZeRO-1 with fp32 accumulation skips it (trainer.py make_ddp). */
START_TEST(nanotron_ddp_bucket)
{
    mem4d_report *z0 = run(2, tu_layout("framework=nanotron", "dp=4", "zero_stage=0", "dist_opt=0", "seq=1024", NULL));
    mem4d_report *one = run(2, tu_layout("framework=nanotron", "dp=1", "zero_stage=0", "dist_opt=0", "seq=1024", NULL));
    uint64_t n = get(z0, 0, MEM4D_TERM_PARAMS);
    ck_assert_uint_eq(get(z0, 0, MEM4D_TERM_GRADIENTS), 6 * n);
    ck_assert_uint_eq(get(one, 0, MEM4D_TERM_GRADIENTS), 4 * n);
    mem4d_report_free(z0);
    mem4d_report_free(one);
}
END_TEST

/* nanotron's own pipeline split is not even: with pp > 1 and no stage
 * layer counts the estimate warns; given them, it does not. */
START_TEST(nanotron_split_warning)
{
    mem4d_report *r = run(4, tu_layout("framework=nanotron", "pp=2", "dp=2", "gbs=16", "seq=1024", NULL));
    ck_assert_uint_eq(mem4d_report_warning_count(r), 1);
    ck_assert_ptr_nonnull(strstr(mem4d_report_warning(r, 0), "nanotron split"));
    mem4d_report_free(r);
    r = run(4, tu_layout("framework=nanotron", "pp=2", "dp=2", "gbs=16", "seq=1024", "first_stage_layers=3",
                         "last_stage_layers=1", NULL));
    ck_assert_uint_eq(mem4d_report_warning_count(r), 0);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_LAYERS), 3);
    mem4d_report_free(r);
}
END_TEST

/* A layer without recompute keeps per token (b 1, t 1): both norms' inputs
 * and outputs 8h = 8192; Q, K, V and the attention output 2·(2a + 2k)·dh =
 * 8192; the eager SwiGLU's 4f intermediates, 2·4f = 32768; the LSE 4a = 32:
 * 49184 bytes. nanotron's attention also keeps the contiguous K/V copy
 * 2·2k·dh = 4096. Two more layers add 2·T times that. */
START_TEST(eager_layer_bytes)
{
    mem4d_report *ds2 = run(2, tu_layout("framework=deepspeed", "dp=4", "seq=1024", NULL));
    mem4d_report *ds4 = run(4, tu_layout("framework=deepspeed", "dp=4", "seq=1024", NULL));
    mem4d_report *nt2 = run(2, tu_layout("framework=nanotron", "dp=4", "seq=1024", NULL));
    mem4d_report *nt4 = run(4, tu_layout("framework=nanotron", "dp=4", "seq=1024", NULL));
    ck_assert_uint_eq(get(ds4, 0, MEM4D_TERM_ACTIVATIONS) - get(ds2, 0, MEM4D_TERM_ACTIVATIONS),
                      UINT64_C(2) * 1024 * 49184);
    ck_assert_uint_eq(get(nt4, 0, MEM4D_TERM_ACTIVATIONS) - get(nt2, 0, MEM4D_TERM_ACTIVATIONS),
                      UINT64_C(2) * 1024 * (49184 + 4096));
    mem4d_report_free(ds2);
    mem4d_report_free(ds4);
    mem4d_report_free(nt2);
    mem4d_report_free(nt4);
}
END_TEST

/* All-forward-all-backward keeps every micro-batch (m = 16/(1·2) = 8) on
 * stage 0; 1F1B keeps p - r = 2. */
START_TEST(afab_keeps_every_micro_batch)
{
    mem4d_report *a =
        run(2, tu_layout("framework=nanotron", "pp=2", "dp=2", "gbs=16", "seq=1024", "pp_engine=afab", NULL));
    mem4d_report *b = run(2, tu_layout("framework=nanotron", "pp=2", "dp=2", "gbs=16", "seq=1024", NULL));
    ck_assert_uint_eq(get(a, 0, MEM4D_TERM_IN_FLIGHT), 8);
    ck_assert_uint_eq(get(b, 0, MEM4D_TERM_IN_FLIGHT), 2);
    mem4d_report_free(a);
    mem4d_report_free(b);
}
END_TEST

/* DeepSpeed ZeRO-2 over dp 4 (bf16): weights 2N, gradient partition 2N/4,
 * fp32 master and moments 12N/4; optimizer offload leaves none on the GPU;
 * ZeRO-3 with parameter offload leaves no weights. overlap_comm adds a
 * second reduce bucket of 5·10^8 bf16 elements. */
START_TEST(deepspeed_state_and_buckets)
{
    mem4d_report *r = run(2, tu_layout("framework=deepspeed", "zero_stage=2", "dp=4", "seq=1024", NULL));
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_WEIGHTS), 2 * N_ALL);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_GRADIENTS), 2 * N_ALL / 4);
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_OPTIMIZER), 12 * N_ALL / 4);
    mem4d_report *o =
        run(2, tu_layout("framework=deepspeed", "zero_stage=2", "dp=4", "seq=1024", "overlap_grad_reduce=1", NULL));
    ck_assert_uint_eq(get(o, 0, MEM4D_TERM_BUFFERS) - get(r, 0, MEM4D_TERM_BUFFERS), UINT64_C(1000000000));
    mem4d_report_free(o);
    mem4d_report_free(r);
    r = run(2, tu_layout("framework=deepspeed", "zero_stage=2", "dp=4", "seq=1024", "offload=optimizer", NULL));
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_OPTIMIZER), 0);
    mem4d_report_free(r);
    r = run(2, tu_layout("framework=deepspeed", "zero_stage=3", "dp=4", "seq=1024", "offload=optimizer_and_params",
                         NULL));
    ck_assert_uint_eq(get(r, 0, MEM4D_TERM_WEIGHTS), 0);
    mem4d_report_free(r);
}
END_TEST

/* torchtitan at t = 1 computes the loss with PyTorch's cross_entropy on an
 * fp32 copy: the freed bf16 logits' segment stays reserved at the loss
 * backward - unless expandable segments let the allocator reuse it. With
 * E = T·V = 1024·32000 elements, 2E = 65,536,000 bytes sits in a 32 x 2 MiB
 * = 67,108,864-byte segment, and each of the three live fp32 blocks of
 * 4E = 131,072,000 bytes in 132,120,576. With expandable segments the
 * blocks are packed in one segment mapped in 20 MiB pages (kLargeBuffer):
 * only its end is rounded, not each block (4E is a 512-byte multiple). */
START_TEST(stranded_logits_segment)
{
    mem4d_report *a = run(2, tu_layout("framework=torchtitan", "dp=4", "seq=1024", "recompute=op", NULL));
    mem4d_report *b = run(2, tu_layout("framework=torchtitan", "dp=4", "seq=1024", "recompute=op",
                                       "expandable_segments=1", NULL));
    uint64_t alloc = get(a, 0, MEM4D_TERM_PEAK_ALLOCATED);
    ck_assert_uint_eq(get(b, 0, MEM4D_TERM_PEAK_ALLOCATED), alloc);
    /* 4% of allocated, the fp32 blocks' segment rounding, the stranded bf16 segment */
    ck_assert_uint_eq(get(a, 0, MEM4D_TERM_FRAGMENTATION),
                      (alloc * 40000 + 999999) / 1000000 + 3 * (UINT64_C(132120576) - 131072000) + 67108864);
    const uint64_t page = UINT64_C(20) << 20;
    ck_assert_uint_eq(get(b, 0, MEM4D_TERM_FRAGMENTATION), (alloc + page - 1) / page * page - alloc);
    /* 64 tokens: three fp32 blocks of 4E = 8,192,000 bytes, each of which
     * would take a 20 MiB segment of its own without expandable segments */
    mem4d_report *c = run(2, tu_layout("framework=torchtitan", "dp=4", "seq=64", "recompute=op",
                                       "expandable_segments=1", NULL));
    alloc = get(c, 0, MEM4D_TERM_PEAK_ALLOCATED);
    ck_assert_uint_eq(get(c, 0, MEM4D_TERM_FRAGMENTATION), (alloc + page - 1) / page * page - alloc);
    ck_assert_uint_lt(get(c, 0, MEM4D_TERM_FRAGMENTATION), page);
    mem4d_report_free(c);
    mem4d_report_free(a);
    mem4d_report_free(b);
}
END_TEST

/* A compiled loss (torchtitan since 2025) keeps the bf16 logits and their
 * bf16 gradient, 4E, instead of 3 fp32 blocks plus a stranded bf16 one. */
START_TEST(compiled_loss)
{
    mem4d_report *a = run(2, tu_layout("framework=torchtitan", "dp=4", "seq=1024", "recompute=op", NULL));
    mem4d_report *b =
        run(2, tu_layout("framework=torchtitan", "dp=4", "seq=1024", "recompute=op", "compile=blocks_and_loss", NULL));
    const uint64_t E = UINT64_C(1024) * 32000;
    ck_assert_uint_eq(get(a, 0, MEM4D_TERM_ACTIVATIONS) - get(b, 0, MEM4D_TERM_ACTIVATIONS), 12 * E - 4 * E);
    mem4d_report_free(a);
    mem4d_report_free(b);
}
END_TEST

START_TEST(warnings_name_unmodelled_settings)
{
    mem4d_report *r = run(2, tu_layout("framework=torchtitan", "dp=4", "seq=1024", NULL));
    ck_assert_uint_eq(mem4d_report_warning_count(r), 0);
    ck_assert_ptr_null(mem4d_report_warning(r, 0));
    mem4d_report_free(r);
    r = run(2, tu_layout("framework=torchtitan", "dp=4", "tp=2", "seq=1024", "compile=blocks", "async_tp=1", NULL));
    ck_assert_uint_eq(mem4d_report_warning_count(r), 2);
    ck_assert_ptr_nonnull(strstr(mem4d_report_warning(r, 0), "compile"));
    ck_assert_ptr_nonnull(strstr(mem4d_report_warning(r, 1), "async_tp"));
    ck_assert_ptr_null(mem4d_report_warning(NULL, 0));
    ck_assert_uint_eq(mem4d_report_warning_count(NULL), 0);
    mem4d_report_free(r);
}
END_TEST

/* Full mode's verdict: fits while TOTAL <= full_fit_threshold_ppm (85%) of
 * memory; paper mode keeps fit_threshold_ppm (80%). */
START_TEST(verdict_thresholds)
{
    mem4d_model *m = small_model(2);
    mem4d_device *d = big_device();
    mem4d_report *r = NULL;
    mem4d_layout *l = tu_layout("dp=4", "seq=1024", NULL);
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    ck_assert_int_eq(mem4d_estimate(m, l, d, r), MEM4D_OK);
    uint64_t total = mem4d_report_peak_bytes(r);
    /* total = 84% of memory: fits in full mode, whose threshold is 85% */
    ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_MEMORY_BYTES, total * 100 / 84), MEM4D_OK);
    ck_assert_int_eq(mem4d_estimate(m, l, d, r), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_verdict(r), MEM4D_VERDICT_FITS);
    ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_FULL_FIT_THRESHOLD_PPM, 800000), MEM4D_OK);
    ck_assert_int_eq(mem4d_estimate(m, l, d, r), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_verdict(r), MEM4D_VERDICT_TIGHT);
    /* paper mode: 84% is tight under the paper's 80%, whatever full's threshold */
    ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_FULL_FIT_THRESHOLD_PPM, 1000000), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_MODE, MEM4D_MODE_PAPER), MEM4D_OK);
    ck_assert_int_eq(mem4d_estimate(m, l, d, r), MEM4D_OK);
    uint64_t paper = mem4d_report_peak_bytes(r);
    ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_MEMORY_BYTES, paper * 100 / 84), MEM4D_OK);
    ck_assert_int_eq(mem4d_estimate(m, l, d, r), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_verdict(r), MEM4D_VERDICT_TIGHT);
    mem4d_report_free(r);
    mem4d_layout_free(l);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

/* Where a key applies is its row in the key table, and nothing is silently
 * ignored: paper mode refuses what its formula does not count (these three
 * were once ignored there), and a key only one framework has is refused
 * under the others (allgather_groups was ignored under torchtitan). */
START_TEST(keys_apply_where_their_rows_say)
{
    mem4d_model *m = small_model(2);
    mem4d_device *d = big_device();
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    static const char *const paper[][2] = {
        {"recompute_modules=3", "paper mode does not model recompute_modules 3"},
        {"offload_modules=1", "paper mode does not model offload_modules 1"},
        {"defer_embedding_wgrad=1", "paper mode does not model defer_embedding_wgrad 1"},
    };
    for (size_t i = 0; i < sizeof paper / sizeof paper[0]; i++) {
        mem4d_layout *l = tu_layout("dp=2", "pp=2", "seq=1024", "mode=paper", paper[i][0], NULL);
        ck_assert_int_eq(mem4d_estimate(m, l, d, r), MEM4D_E_UNSUPPORTED);
        ck_assert_msg(strstr(mem4d_report_message(r), paper[i][1]) != NULL, "%s", mem4d_report_message(r));
        ck_assert_int_eq(mem4d_layout_set_str(l, "mode", "full"), MEM4D_OK); /* full mode models it */
        ck_assert_msg(mem4d_estimate(m, l, d, r) == MEM4D_OK, "%s", mem4d_report_message(r));
        mem4d_layout_free(l);
    }
    char why[256];
    mem4d_layout *l = tu_layout("dp=4", "seq=1024", "framework=torchtitan", "allgather_groups=1", NULL);
    ck_assert_int_eq(mem4d_validate(m, l, why, sizeof why), MEM4D_E_CONFLICT);
    ck_assert_str_eq(why, "allgather_groups 1 is modelled for framework megatron only, not torchtitan");
    ck_assert_int_eq(mem4d_layout_set_str(l, "framework", "megatron"), MEM4D_OK);
    ck_assert_int_eq(mem4d_validate(m, l, why, sizeof why), MEM4D_OK);
    mem4d_layout_free(l);
    mem4d_report_free(r);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

/* Settings that belong to another framework are refused with a reason. */
START_TEST(framework_conflicts)
{
    mem4d_model *m = small_model(2);
    char why[256];
    static const char *const bad[][3] = {
        {"recompute=op", NULL, "torchtitan"},
        {"framework=nanotron", "zero_stage=2", "modelled for framework megatron, torchtitan or deepspeed only, not nanotron"},
        {"framework=torchtitan", "offload=optimizer", "deepspeed"},
        {"framework=torchtitan", "dp_replicate=3", "does not divide"},
        {"framework=deepspeed", "float8=tensorwise", "torchtitan"},
        {"framework=torchtitan", "fp8_all_gather=1", "tensorwise"},
        {"framework=torchtitan", "recompute_every=2", "recompute full"},
        {"recompute_every=2", NULL, "modelled for framework torchtitan only"},
        {"framework=deepspeed", "optimizer_moments=1", "modelled for framework megatron"},
        {"overlapped_dist_opt=1", "dist_opt=0", "needs dist_opt"},
        {"framework=deepspeed", "overlapped_dist_opt=1", "modelled for framework megatron only, not deepspeed"},
        {"pp_return_outputs=1", NULL, "torchtitan"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mem4d_layout *l = tu_layout("dp=4", "seq=1024", bad[i][0], bad[i][1], NULL);
        ck_assert_int_eq(mem4d_validate(m, l, why, sizeof why), MEM4D_E_CONFLICT);
        ck_assert_msg(strstr(why, bad[i][2]) != NULL, "%s: %s", bad[i][0], why);
        mem4d_layout_free(l);
    }
    /* paper mode is Megatron's */
    mem4d_layout *l = tu_layout("dp=4", "seq=1024", "framework=torchtitan", "mode=paper", NULL);
    mem4d_device *d = big_device();
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    ck_assert_int_eq(mem4d_estimate(m, l, d, r), MEM4D_E_UNSUPPORTED);
    mem4d_report_free(r);
    mem4d_device_free(d);
    mem4d_layout_free(l);
    mem4d_model_free(m);
}
END_TEST

/* --- the DeepSpeed reader -------------------------------------------------- */

static mem4d_status ds(const char *json, mem4d_layout *l, mem4d_import *imp)
{
    return mem4d_import_deepspeed_config_buffer(imp, json, strlen(json), l);
}

static uint64_t lget(const mem4d_layout *l, mem4d_layout_param k)
{
    uint64_t v = 0;
    ck_assert_int_eq(mem4d_layout_get(l, k, &v), MEM4D_OK);
    return v;
}

START_TEST(deepspeed_config_reads_zero_settings)
{
    mem4d_import *imp = NULL;
    mem4d_layout *l = NULL;
    ck_assert_int_eq(mem4d_import_new(&imp), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_new(&l), MEM4D_OK);
    const char *cfg = "{\"train_batch_size\": 512, \"train_micro_batch_size_per_gpu\": 4,"
                      " \"bf16\": {\"enabled\": true},"
                      " \"zero_optimization\": {\"stage\": 3, \"reduce_bucket_size\": 5e7,"
                      "   \"stage3_prefetch_bucket_size\": 2e7, \"stage3_max_live_parameters\": 3e8,"
                      "   \"contiguous_gradients\": false, \"offload_optimizer\": {\"device\": \"cpu\"},"
                      "   \"allgather_bucket_size\": \"auto\"},"
                      " \"activation_checkpointing\": {\"partition_activations\": true}}";
    mem4d_status st = ds(cfg, l, imp);
    if (st == MEM4D_E_NO_JSON) { /* built without json-c: the entry point says so */
        ck_assert_ptr_nonnull(strstr(mem4d_import_message(imp), "json-c"));
    } else {
        ck_assert_msg(st == MEM4D_OK, "%s", mem4d_import_message(imp));
        ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_FRAMEWORK), MEM4D_FRAMEWORK_DEEPSPEED);
        ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_ZERO_STAGE), 3);
        ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_GLOBAL_BATCH), 512);
        ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_MICRO_BATCH), 4);
        ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_BUCKET_SIZE), 50000000);
        ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_PREFETCH_BUCKET_SIZE), 20000000);
        ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_MAX_LIVE_PARAMETERS), 300000000);
        ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_ALLGATHER_BUCKET_SIZE), 0); /* "auto": default kept */
        ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_CONTIGUOUS_GRADIENTS), 0);
        ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_OVERLAP_GRAD_REDUCE), 1); /* stage 3's default */
        ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_OFFLOAD), 1);
        ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_PARAM_BYTES), 2);
        ck_assert_uint_eq(mem4d_import_warning_count(imp), 2); /* allgather "auto", partition_activations */
        /* fp32 training without bf16/fp16 sections */
        ck_assert_int_eq(ds("{\"zero_optimization\": {\"stage\": 1}}", l, imp), MEM4D_OK);
        ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_PARAM_BYTES), 4);
        ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_DIST_OPT), 1);
        /* bf16 without ZeRO: BF16_Optimizer partitions the fp32 state, as stage 1 does; fp16 does not */
        ck_assert_int_eq(ds("{\"bf16\": {\"enabled\": true}, \"zero_optimization\": {\"stage\": 0}}", l, imp),
                         MEM4D_OK);
        ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_ZERO_STAGE), 1);
        ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_DIST_OPT), 1);
        ck_assert_int_eq(ds("{\"fp16\": {\"enabled\": true}, \"zero_optimization\": {\"stage\": 0}}", l, imp),
                         MEM4D_OK);
        ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_ZERO_STAGE), 0);
        ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_DIST_OPT), 0);
    }
    mem4d_layout_free(l);
    mem4d_import_free(imp);
}
END_TEST

/* A new import and layout; false (nothing left open) when built without json-c. */
static bool ds_open(mem4d_import **imp, mem4d_layout **l)
{
    ck_assert_int_eq(mem4d_import_new(imp), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_new(l), MEM4D_OK);
    if (ds("{}", *l, *imp) != MEM4D_E_NO_JSON)
        return true;
    mem4d_layout_free(*l);
    mem4d_import_free(*imp);
    return false;
}

START_TEST(deepspeed_config_refuses_bad_input)
{
    mem4d_import *imp = NULL;
    mem4d_layout *l = NULL, *before = NULL;
    if (!ds_open(&imp, &l))
        return;
    ck_assert_int_eq(mem4d_layout_clone(l, &before), MEM4D_OK);
    static const struct {
        const char *json, *says;
        mem4d_status st;
    } bad[] = {
        {"{\"zero_optimization\": {\"stage\": 4}}", "stages 0 to 3", MEM4D_E_RANGE},
        {"{\"zero_optimization\": {\"stage\": 2, \"offload_param\": {\"device\": \"cpu\"}}}", "needs stage 3",
         MEM4D_E_CONFLICT},
        {"{\"zero_optimization\": {\"reduce_bucket_size\": 5.5}}", "not a whole number", MEM4D_E_JSON},
        {"{\"zero_optimization\": {\"reduce_bucket_size\": -1}}", "negative", MEM4D_E_RANGE},
        {"{\"zero_optimization\": {\"reduce_bucket_size\": 0}}", "is 0", MEM4D_E_RANGE},
        {"{\"zero_optimization\": {\"offload_optimizer\": {\"device\": \"gpu\"}}}", "not cpu, nvme or none",
         MEM4D_E_JSON},
        {"{\"bf16\": {\"enabled\": 1}}", "not true or false", MEM4D_E_JSON},
        {"{\"zero_optimization\": []}", "not an object", MEM4D_E_JSON},
        {"[1, 2]", "not an object", MEM4D_E_JSON},
        {"{\"train_batch_size\": 8", "truncated", MEM4D_E_JSON},
        {"{\"train_micro_batch_size_per_gpu\": 0}", "greater than 0", MEM4D_E_RANGE},
        {"{\"gradient_accumulation_steps\": 0, \"train_batch_size\": 8}", "greater than 0", MEM4D_E_RANGE},
        /* what DeepSpeed itself refuses (deepspeed/runtime/config.py) */
        {"{\"bf16\": {\"enabled\": true}, \"fp16\": {\"enabled\": true}}", "cannot be simultaneously enabled",
         MEM4D_E_CONFLICT},
        {"{\"train_batch_size\": 512, \"train_micro_batch_size_per_gpu\": 4, \"gradient_accumulation_steps\": 3}",
         "DeepSpeed refuses it", MEM4D_E_BATCH},
        /* a value left to the data-parallel size this layout does not have */
        {"{\"train_batch_size\": 512}", "set dp or world", MEM4D_E_MISSING},
        {"{\"train_micro_batch_size_per_gpu\": 2, \"gradient_accumulation_steps\": 4}", "set dp or world",
         MEM4D_E_MISSING},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(ds(bad[i].json, l, imp), bad[i].st);
        ck_assert_msg(strstr(mem4d_import_message(imp), bad[i].says) != NULL, "%s: %s", bad[i].json,
                      mem4d_import_message(imp));
        ck_assert_int_eq(memcmp(l, before, sizeof *l), 0); /* all or nothing */
    }
    ck_assert_int_eq(mem4d_import_deepspeed_config_buffer(imp, "{}", 0, l), MEM4D_E_JSON);
    ck_assert_int_eq(mem4d_import_deepspeed_config_buffer(imp, NULL, 2, l), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_import_deepspeed_config_buffer(NULL, "{}", 2, l), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_import_deepspeed_config(imp, "/nonexistent/ds_config.json", l), MEM4D_E_IO);
    ck_assert_int_eq(mem4d_import_deepspeed_config(imp, "/", l), MEM4D_E_IO);
    ck_assert_ptr_nonnull(strstr(mem4d_import_message(imp), "ds_config.json"));
    mem4d_layout_free(before);
    mem4d_layout_free(l);
    mem4d_import_free(imp);
}
END_TEST

/* DeepSpeed's batch triple (DeepSpeedConfig._set_batch_related_parameters):
 * the missing value from the layout's data-parallel size, the product checked;
 * ZeRO-2/3 under pipeline parallelism refused as DeepSpeed's PipelineEngine does. */
START_TEST(deepspeed_config_completes_the_batch_as_deepspeed_does)
{
    mem4d_import *imp = NULL;
    mem4d_layout *l = NULL;
    mem4d_model *m = NULL;
    char why[256];
    if (!ds_open(&imp, &l))
        return;
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_DP, 8), MEM4D_OK);
    ck_assert_int_eq(ds("{\"train_batch_size\": 512, \"gradient_accumulation_steps\": 4}", l, imp), MEM4D_OK);
    ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_MICRO_BATCH), 16); /* 512 / 8 / 4 */
    ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_GLOBAL_BATCH), 512);
    ck_assert_int_eq(ds("{\"train_micro_batch_size_per_gpu\": 2, \"gradient_accumulation_steps\": 4}", l, imp),
                     MEM4D_OK);
    ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_GLOBAL_BATCH), 64); /* 2 x 4 x 8 */
    ck_assert_int_eq(ds("{\"train_batch_size\": 64}", l, imp), MEM4D_OK); /* one step: micro-batch 64 / 8 */
    ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_MICRO_BATCH), 8);
    ck_assert_int_eq(ds("{\"train_micro_batch_size_per_gpu\": 3}", l, imp), MEM4D_OK);
    ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_GLOBAL_BATCH), 24);
    ck_assert_int_eq(ds("{\"train_batch_size\": 512, \"train_micro_batch_size_per_gpu\": 4, "
                        "\"gradient_accumulation_steps\": 16}", l, imp), MEM4D_OK);
    /* the same triple over dp 4: 512 != 4 x 16 x 4 */
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_DP, 4), MEM4D_OK);
    ck_assert_int_eq(ds("{\"train_batch_size\": 512, \"train_micro_batch_size_per_gpu\": 4, "
                        "\"gradient_accumulation_steps\": 16}", l, imp), MEM4D_E_BATCH);
    ck_assert_ptr_nonnull(strstr(mem4d_import_message(imp), "x dp 4"));
    ck_assert_int_eq(ds("{\"train_batch_size\": 10, \"gradient_accumulation_steps\": 2}", l, imp), MEM4D_E_BATCH);
    ck_assert_int_eq(ds("{\"train_batch_size\": 10, \"train_micro_batch_size_per_gpu\": 2}", l, imp), MEM4D_E_BATCH);
    /* dp from world over tp x cp x pp */
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_DP, 0), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_WORLD, 32), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_TP, 2), MEM4D_OK);
    ck_assert_int_eq(ds("{\"train_batch_size\": 64}", l, imp), MEM4D_OK);
    ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_MICRO_BATCH), 4); /* 64 / dp 16 */
    /* all three and no data-parallel size: the file's own, 512 / (4 x 16) */
    mem4d_layout_free(l);
    ck_assert_int_eq(mem4d_layout_new(&l), MEM4D_OK);
    ck_assert_int_eq(ds("{\"train_batch_size\": 512, \"train_micro_batch_size_per_gpu\": 4, "
                        "\"gradient_accumulation_steps\": 16, \"zero_optimization\": {\"stage\": 2}}", l, imp),
                     MEM4D_OK);
    ck_assert_uint_eq(lget(l, MEM4D_LAYOUT_DP), 8);
    /* ZeRO-2 with pipeline parallelism */
    m = tu_model("llama2-7b");
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_SEQ_LENGTH, 4096), MEM4D_OK);
    ck_assert_int_eq(mem4d_validate(m, l, why, sizeof why), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_PP, 2), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_GLOBAL_BATCH, 512), MEM4D_OK);
    ck_assert_int_eq(mem4d_validate(m, l, why, sizeof why), MEM4D_E_CONFLICT);
    ck_assert_msg(strstr(why, "incompatible with pipeline parallelism") != NULL, "%s", why);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_ZERO_STAGE, 1), MEM4D_OK);
    ck_assert_int_eq(mem4d_validate(m, l, why, sizeof why), MEM4D_OK);
    mem4d_model_free(m);
    mem4d_layout_free(l);
    mem4d_import_free(imp);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("frameworks");
    TCase *tc = tcase_create("frameworks");
    tcase_add_test(tc, allocator_rounding);
    tcase_add_test(tc, fsdp_state);
    tcase_add_test(tc, fsdp_pipeline_keeps_blocks);
    tcase_add_test(tc, fsdp_pipeline_blocks_of_a_layer_pattern);
    tcase_add_test(tc, vpp_is_megatron_and_torchtitan_only);
    tcase_add_test(tc, pipeline_schedule_keeps_outputs);
    tcase_add_test(tc, pipeline_receive_buffers);
    tcase_add_test(tc, op_selective_keeps_every_other_mm);
    tcase_add_test(tc, layer_selective_every_n);
    tcase_add_test(tc, nanotron_state);
    tcase_add_test(tc, nanotron_ddp_bucket);
    tcase_add_test(tc, nanotron_split_warning);
    tcase_add_test(tc, eager_layer_bytes);
    tcase_add_test(tc, afab_keeps_every_micro_batch);
    tcase_add_test(tc, deepspeed_state_and_buckets);
    tcase_add_test(tc, stranded_logits_segment);
    tcase_add_test(tc, compiled_loss);
    tcase_add_test(tc, warnings_name_unmodelled_settings);
    tcase_add_test(tc, verdict_thresholds);
    tcase_add_test(tc, framework_conflicts);
    tcase_add_test(tc, keys_apply_where_their_rows_say);
    tcase_add_test(tc, deepspeed_config_reads_zero_settings);
    tcase_add_test(tc, deepspeed_config_refuses_bad_input);
    tcase_add_test(tc, deepspeed_config_completes_the_batch_as_deepspeed_does);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
