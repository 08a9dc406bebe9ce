/*
 * Layout handle: defaults, keys, Megatron aliases, value names and every
 * validation rule with its exact status and sentence.
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "testutil.h"

START_TEST(defaults)
{
    mem4d_layout *l = NULL;
    ck_assert_int_eq(mem4d_layout_new(&l), MEM4D_OK);
    static const struct {
        mem4d_layout_param key;
        uint64_t value;
    } expect[] = {
        {MEM4D_LAYOUT_TP, 1}, {MEM4D_LAYOUT_CP, 1}, {MEM4D_LAYOUT_PP, 1}, {MEM4D_LAYOUT_DP, 0},
        {MEM4D_LAYOUT_WORLD, 0}, {MEM4D_LAYOUT_MICRO_BATCH, 1}, {MEM4D_LAYOUT_GLOBAL_BATCH, 0},
        {MEM4D_LAYOUT_SEQ_LENGTH, 0}, {MEM4D_LAYOUT_SEQUENCE_PARALLEL, 1}, {MEM4D_LAYOUT_DIST_OPT, 1},
        {MEM4D_LAYOUT_MAIN_GRAD_BYTES, 4}, {MEM4D_LAYOUT_VPP, 1}, {MEM4D_LAYOUT_RECOMPUTE, 0},
        {MEM4D_LAYOUT_FLASH_ATTN, 1}, {MEM4D_LAYOUT_MODE, 0}, {MEM4D_LAYOUT_VOCAB_DIVISOR, 128},
        {MEM4D_LAYOUT_PARAM_BYTES, 2}, {MEM4D_LAYOUT_OPT_STATE_BYTES, 4},
        {MEM4D_LAYOUT_MASTER_WEIGHT_BYTES, 4}, {MEM4D_LAYOUT_EP, 1},
        {MEM4D_LAYOUT_HIDDEN_DROPOUT, 0}, {MEM4D_LAYOUT_ATTENTION_DROPOUT, 0},
        {MEM4D_LAYOUT_CROSS_ENTROPY_FUSION, 0},
    };
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        uint64_t v = 99;
        ck_assert_int_eq(mem4d_layout_get(l, expect[i].key, &v), MEM4D_OK);
        ck_assert_msg(v == expect[i].value, "%s defaults to %llu", mem4d_layout_param_name(expect[i].key),
                      (unsigned long long)v);
    }
    mem4d_layout_free(l);
}
END_TEST

START_TEST(megatron_aliases)
{
    static const struct {
        const char *name;
        mem4d_layout_param key;
    } names[] = {
        {"tensor_model_parallel_size", MEM4D_LAYOUT_TP}, {"tensor-model-parallel-size", MEM4D_LAYOUT_TP},
        {"context_parallel_size", MEM4D_LAYOUT_CP}, {"pipeline_model_parallel_size", MEM4D_LAYOUT_PP},
        {"micro_batch_size", MEM4D_LAYOUT_MICRO_BATCH}, {"global_batch_size", MEM4D_LAYOUT_GLOBAL_BATCH},
        {"seq_length", MEM4D_LAYOUT_SEQ_LENGTH}, {"sequence_parallel", MEM4D_LAYOUT_SEQUENCE_PARALLEL},
        {"use_distributed_optimizer", MEM4D_LAYOUT_DIST_OPT}, {"recompute_granularity", MEM4D_LAYOUT_RECOMPUTE},
        {"virtual_pipeline_model_parallel_size", MEM4D_LAYOUT_VPP}, {"TP", MEM4D_LAYOUT_TP},
        {"expert_model_parallel_size", MEM4D_LAYOUT_EP},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        mem4d_layout_param k;
        ck_assert_int_eq(mem4d_layout_param_from_name(names[i].name, &k), MEM4D_OK);
        ck_assert_int_eq((int)k, (int)names[i].key);
    }
    mem4d_layout_param k;
    ck_assert_int_eq(mem4d_layout_param_from_name("tensor_parallel", &k), MEM4D_E_UNKNOWN_KEY);
    ck_assert_int_eq(mem4d_layout_param_from_name(NULL, &k), MEM4D_E_INVALID_ARG);
}
END_TEST

START_TEST(values_and_bounds)
{
    mem4d_layout *l = tu_layout("recompute=full", "recompute_method=block", "mode=paper", "sp=false", NULL);
    uint64_t v;
    mem4d_layout_get(l, MEM4D_LAYOUT_RECOMPUTE, &v);
    ck_assert_uint_eq(v, 2);
    ck_assert_str_eq(mem4d_layout_value_name(MEM4D_LAYOUT_RECOMPUTE, v), "full");
    mem4d_layout_get(l, MEM4D_LAYOUT_MODE, &v);
    ck_assert_uint_eq(v, MEM4D_MODE_PAPER);
    ck_assert_str_eq(mem4d_layout_value_name(MEM4D_LAYOUT_MODE, 0), "full");
    ck_assert_ptr_null(mem4d_layout_value_name(MEM4D_LAYOUT_MODE, 2));
    ck_assert_ptr_null(mem4d_layout_value_name(MEM4D_LAYOUT_TP, 1));
    mem4d_layout_get(l, MEM4D_LAYOUT_SEQUENCE_PARALLEL, &v);
    ck_assert_uint_eq(v, 0);

    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_TP, 0), MEM4D_E_RANGE);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_MAIN_GRAD_BYTES, 3), MEM4D_E_RANGE);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_MAIN_GRAD_BYTES, 2), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(l, MEM4D_LAYOUT_SEQUENCE_PARALLEL, 2), MEM4D_E_RANGE);
    ck_assert_int_eq(mem4d_layout_set_str(l, "recompute", "partial"), MEM4D_E_PARSE);
    ck_assert_int_eq(mem4d_layout_set_str(l, "mode", "3"), MEM4D_E_RANGE);
    ck_assert_int_eq(mem4d_layout_set(l, (mem4d_layout_param)mem4d_layout_param_count(), 1), MEM4D_E_INVALID_ARG);
    for (size_t i = 0; i < mem4d_layout_param_count(); i++) {
        uint64_t lo, hi;
        ck_assert_int_eq(mem4d_layout_param_bounds((mem4d_layout_param)i, &lo, &hi), MEM4D_OK);
        ck_assert_int_eq(mem4d_layout_set(l, (mem4d_layout_param)i, hi + 1), MEM4D_E_RANGE);
        if (lo > 0)
            ck_assert_int_eq(mem4d_layout_set(l, (mem4d_layout_param)i, lo - 1), MEM4D_E_RANGE);
    }
    mem4d_layout *c = NULL;
    ck_assert_int_eq(mem4d_layout_clone(l, &c), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set(c, MEM4D_LAYOUT_TP, 8), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_copy(l, c), MEM4D_OK);
    mem4d_layout_get(l, MEM4D_LAYOUT_TP, &v);
    ck_assert_uint_eq(v, 8);
    ck_assert_int_eq(mem4d_layout_copy(NULL, c), MEM4D_E_INVALID_ARG);
    mem4d_layout_free(c);
    mem4d_layout_free(l);
}
END_TEST

/* Each invalid layout of Llama-3.1-8B (32 heads, 8 KV heads, 32 layers):
 * exact status and exact sentence. */
static const struct {
    const char *kv[7];
    mem4d_status status;
    const char *why;
} invalid[] = {
    {{"tp=3", "dp=1", "seq=8190"}, MEM4D_E_HEADS_TP, "32 attention heads are not divisible by tp 3"},
    {{"tp=16", "dp=1", "seq=8192"}, MEM4D_E_KV_HEADS_TP,
     "8 key/value heads are not divisible by tp 16 (Megatron does not replicate key/value heads)"},
    {{"pp=3", "dp=1", "seq=8192"}, MEM4D_E_LAYERS_PP, "32 layers are not divisible by pp 3"},
    {{"pp=2", "vpp=3", "dp=1", "seq=8192"}, MEM4D_E_LAYERS_PP,
     "32 layers are not divisible by pp 2 x vpp 3 = 6"},
    {{"tp=4", "world=10", "seq=8192"}, MEM4D_E_WORLD,
     "world size 10 is not divisible by tp 4 x cp 1 x pp 1 = 4"},
    {{"tp=4", "world=16", "dp=2", "seq=8192"}, MEM4D_E_WORLD,
     "world size 16 is not tp 4 x cp 1 x pp 1 x dp 2 = 8"},
    {{"cp=2", "dp=1", "seq=8190"}, MEM4D_E_SEQ,
     "sequence length 8190 is not divisible by 2 x cp 2 = 4 (context-parallel load balancing)"},
    {{"tp=8", "dp=1", "seq=8196"}, MEM4D_E_SEQ,
     "sequence length 8196 / cp 1 is not divisible by tp 8 (sequence parallelism)"},
    {{"dp=2", "mbs=3", "gbs=100", "seq=8192"}, MEM4D_E_BATCH,
     "global batch 100 is not divisible by micro-batch 3 x dp 2"},
    {{"dp=2"}, MEM4D_E_MISSING, "sequence length (seq) is not set"},
    {{"seq=4096"}, MEM4D_E_MISSING, "neither dp nor world size is set"},
    {{"vpp=2", "dp=1", "seq=4096"}, MEM4D_E_CONFLICT, "vpp 2 needs pp of at least 2 (pp is 1)"},
    {{"ep=2", "dp=2", "seq=4096"}, MEM4D_E_EXPERTS, "ep 2 needs a mixture-of-experts model"},
    {{"pp=4", "recompute=full", "recompute_num_layers=9", "dp=1", "seq=4096"}, MEM4D_E_CONFLICT,
     "recompute_num_layers 9 exceeds the 8 layers of a pipeline stage"},
    {{"tp=4096", "cp=4096", "pp=2", "dp=1", "seq=4096"}, MEM4D_E_RANGE, "tp 4096 x cp 4096 x pp 2 exceeds 2^24 GPUs"},
    {{"pp=4", "first_stage_layers=10", "last_stage_layers=9", "dp=1", "seq=4096"}, MEM4D_E_LAYERS_PP,
     "32 layers minus 10 first-stage and 9 last-stage layers do not split evenly over the other 2 stages"},
    {{"pp=4", "vpp=2", "first_stage_layers=6", "last_stage_layers=6", "dp=1", "seq=4096"}, MEM4D_OK, ""},
    {{"pp=4", "vpp=2", "first_stage_layers=7", "last_stage_layers=7", "dp=1", "seq=4096"}, MEM4D_E_LAYERS_PP,
     "vpp 2 does not divide the 7 first-stage, 7 last-stage and 9 middle-stage layers"},
    {{"sp=false", "tp=2", "seq=4095", "dp=1"}, MEM4D_OK, ""},
};

START_TEST(invalid_layouts)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_layout *l = tu_layout(invalid[_i].kv[0], invalid[_i].kv[1], invalid[_i].kv[2], invalid[_i].kv[3],
                                invalid[_i].kv[4], invalid[_i].kv[5], invalid[_i].kv[6]);
    char why[256];
    ck_assert_int_eq(mem4d_validate(m, l, why, sizeof why), invalid[_i].status);
    ck_assert_str_eq(why, invalid[_i].why);
    mem4d_layout_free(l);
    mem4d_model_free(m);
}
END_TEST

START_TEST(ffn_not_divisible)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    ck_assert_int_eq(mem4d_model_set(m, MEM4D_MODEL_FFN_HIDDEN_SIZE, 14335), MEM4D_OK);
    mem4d_layout *l = tu_layout("tp=2", "dp=1", "seq=4096", NULL);
    char why[128];
    ck_assert_int_eq(mem4d_validate(m, l, why, sizeof why), MEM4D_E_DIM_TP);
    ck_assert_str_eq(why, "FFN size 14335 is not divisible by tp 2");
    ck_assert_int_eq(mem4d_validate(NULL, l, why, sizeof why), MEM4D_E_INVALID_ARG);
    /* The message names which FFN is at fault: the experts', then the shared expert's. */
    ck_assert_int_eq(mem4d_model_set(m, MEM4D_MODEL_FFN_HIDDEN_SIZE, 14336), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(m, MEM4D_MODEL_NUM_EXPERTS, 8), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(m, MEM4D_MODEL_EXPERT_TOPK, 2), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(m, MEM4D_MODEL_EXPERT_FFN_SIZE, 1407), MEM4D_OK);
    ck_assert_int_eq(mem4d_validate(m, l, why, sizeof why), MEM4D_E_DIM_TP);
    ck_assert_str_eq(why, "expert FFN size 1407 is not divisible by tp 2");
    ck_assert_int_eq(mem4d_model_set(m, MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE, 5633), MEM4D_OK);
    ck_assert_int_eq(mem4d_validate(m, l, why, sizeof why), MEM4D_E_DIM_TP);
    ck_assert_str_eq(why, "shared-expert FFN size 5633 is not divisible by tp 2");
    mem4d_layout_free(l);
    mem4d_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("layout");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, defaults);
    tcase_add_test(tc, megatron_aliases);
    tcase_add_test(tc, values_and_bounds);
    tcase_add_loop_test(tc, invalid_layouts, 0, (int)(sizeof invalid / sizeof invalid[0]));
    tcase_add_test(tc, ffn_not_divisible);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
