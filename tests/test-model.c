/*
 * Model handle: presets, parameter counts, keys, bounds, validation.
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "testutil.h"

/* Published parameter counts (model cards / safetensors totals). */
static const struct {
    const char *name;
    uint64_t params;
} published[] = {
    {"llama2-7b", UINT64_C(6738415616)},
    {"llama2-13b", UINT64_C(13015864320)},
    {"llama2-70b", UINT64_C(68976648192)},
    {"llama3-8b", UINT64_C(8030261248)},
    {"llama3-70b", UINT64_C(70553706496)},
    {"llama3.1-8b", UINT64_C(8030261248)},
    {"llama3.1-70b", UINT64_C(70553706496)},
    {"llama3.1-405b", UINT64_C(405853388800)},
    {"llama3.2-1b", UINT64_C(1235814400)},
    {"llama3.2-3b", UINT64_C(3212749824)},
    {"mistral-7b", UINT64_C(7241732096)},
    {"qwen2.5-7b", UINT64_C(7615616512)},
    {"qwen2.5-72b", UINT64_C(72706203648)},
};

START_TEST(preset_param_counts)
{
    const char *name = published[_i].name;
    mem4d_model *m = tu_model(name);
    uint64_t n = 0;
    ck_assert_int_eq(mem4d_model_num_params(m, &n), MEM4D_OK);
    ck_assert_msg(n == published[_i].params, "%s: %llu params, published %llu", name,
                  (unsigned long long)n, (unsigned long long)published[_i].params);
    ck_assert_str_eq(mem4d_model_name(m), name);
    ck_assert_int_eq(mem4d_model_validate(m, NULL, 0), MEM4D_OK);
    mem4d_model_free(m);
}
END_TEST

START_TEST(preset_list)
{
    size_t n = mem4d_model_preset_count();
    ck_assert_uint_ge(n, sizeof published / sizeof published[0]);
    for (size_t i = 0; i < sizeof published / sizeof published[0]; i++) {
        bool found = false;
        for (size_t j = 0; j < n; j++)
            found |= strcmp(mem4d_model_preset_name(j), published[i].name) == 0;
        ck_assert_msg(found, "%s not listed", published[i].name);
    }
    ck_assert_ptr_null(mem4d_model_preset_name(n));
    mem4d_model *m = NULL;
    ck_assert_int_eq(mem4d_model_new_preset("LLaMA3.1-8B", &m), MEM4D_OK); /* case-insensitive */
    mem4d_model_free(m);
    m = (mem4d_model *)1;
    ck_assert_int_eq(mem4d_model_new_preset("gpt-5", &m), MEM4D_E_UNKNOWN_PRESET);
    ck_assert_ptr_null(m);
    ck_assert_int_eq(mem4d_model_new_preset(NULL, &m), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_model_new_preset("llama2-7b", NULL), MEM4D_E_INVALID_ARG);
}
END_TEST

START_TEST(keys_and_aliases)
{
    mem4d_model *m = NULL;
    ck_assert_int_eq(mem4d_model_new(&m), MEM4D_OK);
    ck_assert_str_eq(mem4d_model_name(m), "custom");
    ck_assert_int_eq(mem4d_model_set_str(m, "hidden_size", "4096"), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(m, "intermediate_size", "14336"), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(m, "num-hidden-layers", "32"), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(m, "num_attention_heads", "32"), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(m, "num_key_value_heads", "8"), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(m, "vocab_size", "0x1f500"), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(m, "tie_word_embeddings", "false"), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(m, "normalization", "RMSNorm"), MEM4D_OK);
    uint64_t n = 0;
    ck_assert_int_eq(mem4d_model_num_params(m, &n), MEM4D_OK);
    ck_assert_uint_eq(n, UINT64_C(8030261248));
    ck_assert_int_eq(mem4d_model_get(m, MEM4D_MODEL_VOCAB_SIZE, &n), MEM4D_OK);
    ck_assert_uint_eq(n, 128256);

    ck_assert_int_eq(mem4d_model_set_str(m, "hidden_sizes", "1"), MEM4D_E_UNKNOWN_KEY);
    ck_assert_int_eq(mem4d_model_set_str(m, "hidden_size", "12x"), MEM4D_E_PARSE);
    ck_assert_int_eq(mem4d_model_set_str(m, "hidden_size", "-4"), MEM4D_E_PARSE);
    ck_assert_int_eq(mem4d_model_set_str(m, "hidden_size", ""), MEM4D_E_PARSE);
    ck_assert_int_eq(mem4d_model_set_str(m, "hidden_size", "99999999999999999999999"), MEM4D_E_RANGE);
    ck_assert_int_eq(mem4d_model_set_str(m, "hidden_size", "0"), MEM4D_E_RANGE);
    ck_assert_int_eq(mem4d_model_set_str(m, "normalization", "batchnorm"), MEM4D_E_PARSE);
    ck_assert_int_eq(mem4d_model_set_str(m, NULL, "1"), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_model_get(m, MEM4D_MODEL_HIDDEN_SIZE, &n), MEM4D_OK);
    ck_assert_uint_eq(n, 4096); /* failed sets leave the value unchanged */
    ck_assert_int_eq(mem4d_model_set(m, (mem4d_model_param)999, 1), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_model_set_name(m, "my-llama"), MEM4D_OK);
    ck_assert_str_eq(mem4d_model_name(m), "my-llama");
    mem4d_model_free(m);
}
END_TEST

START_TEST(param_table)
{
    size_t n = mem4d_model_param_count();
    ck_assert_uint_gt(n, MEM4D_MODEL_QK_LAYERNORM); /* 0.1 had 16; keys are only appended */
    for (size_t i = 0; i < n; i++) {
        const char *name = mem4d_model_param_name((mem4d_model_param)i);
        ck_assert_ptr_nonnull(name);
        mem4d_model_param k;
        ck_assert_int_eq(mem4d_model_param_from_name(name, &k), MEM4D_OK);
        ck_assert_int_eq((int)k, (int)i);
        uint64_t lo, hi;
        ck_assert_int_eq(mem4d_model_param_bounds(k, &lo, &hi), MEM4D_OK);
        ck_assert_uint_le(lo, hi);
    }
    ck_assert_ptr_null(mem4d_model_param_name((mem4d_model_param)n));
    ck_assert_int_eq(mem4d_model_param_bounds((mem4d_model_param)n, NULL, NULL), MEM4D_E_INVALID_ARG);
}
END_TEST

static mem4d_status validate_with(const char *key, const char *value, char *why, size_t size)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    ck_assert_int_eq(mem4d_model_set_str(m, key, value), MEM4D_OK);
    mem4d_status st = mem4d_model_validate(m, why, size);
    mem4d_model_free(m);
    return st;
}

START_TEST(validation)
{
    char why[128];
    ck_assert_int_eq(validate_with("num_attention_heads", "31", why, sizeof why), MEM4D_E_MODEL);
    ck_assert_str_eq(why, "hidden size 4096 is not divisible by 31 attention heads (set kv_channels)");
    ck_assert_int_eq(validate_with("num_query_groups", "3", why, sizeof why), MEM4D_E_MODEL);
    ck_assert_str_eq(why, "32 attention heads are not a multiple of 3 key/value heads");
    ck_assert_int_eq(validate_with("moe_router_topk", "2", why, sizeof why), MEM4D_E_MODEL);
    ck_assert_int_eq(validate_with("kv_channels", "128", why, sizeof why), MEM4D_OK);
    ck_assert_str_eq(why, "");
    /* A truncating buffer still gets a terminated prefix. */
    ck_assert_int_eq(validate_with("num_attention_heads", "31", why, 8), MEM4D_E_MODEL);
    ck_assert_str_eq(why, "hidden ");

    mem4d_model *m = NULL;
    ck_assert_int_eq(mem4d_model_new(&m), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_validate(m, why, sizeof why), MEM4D_E_MISSING);
    ck_assert_str_eq(why, "model parameter hidden_size is not set");
    uint64_t n;
    ck_assert_int_eq(mem4d_model_num_params(m, &n), MEM4D_E_MISSING);
    mem4d_model_free(m);
    ck_assert_int_eq(mem4d_model_validate(NULL, why, sizeof why), MEM4D_E_INVALID_ARG);
}
END_TEST

START_TEST(clone_is_independent)
{
    mem4d_model *a = tu_model("llama2-7b"), *b = NULL;
    ck_assert_int_eq(mem4d_model_clone(a, &b), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(b, MEM4D_MODEL_NUM_LAYERS, 2), MEM4D_OK);
    uint64_t la, lb;
    mem4d_model_get(a, MEM4D_MODEL_NUM_LAYERS, &la);
    mem4d_model_get(b, MEM4D_MODEL_NUM_LAYERS, &lb);
    ck_assert_uint_eq(la, 32);
    ck_assert_uint_eq(lb, 2);
    mem4d_model_free(a);
    mem4d_model_free(b);
    mem4d_model_free(NULL);
    ck_assert_int_eq(mem4d_model_clone(NULL, &b), MEM4D_E_INVALID_ARG);
    ck_assert_ptr_null(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, preset_param_counts, 0, (int)(sizeof published / sizeof published[0]));
    tcase_add_test(tc, preset_list);
    tcase_add_test(tc, keys_and_aliases);
    tcase_add_test(tc, param_table);
    tcase_add_test(tc, validation);
    tcase_add_test(tc, clone_is_independent);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
