/*
 * Hybrid models: the layer pattern, the parameters of Mamba-2 and Gated
 * DeltaNet layers, their kept activations term by term (doc/full-model.md,
 * "Hybrid layers"), per-stage placement and the modes that refuse them.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* Nemotron-H-8B-Base-8K's dimensions (its config.json, tests/data/hf/hybrid). */
#define NH8_PATTERN "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"

static mem4d_model *nemotron_h_8b(void)
{
    mem4d_model *m = NULL;
    ck_assert_int_eq(mem4d_model_new(&m), MEM4D_OK);
    static const char *const kv[][2] = {
        {"hidden_size", "4096"}, {"num_attention_heads", "32"}, {"num_key_value_heads", "8"},
        {"head_dim", "128"}, {"ffn_hidden_size", "21504"}, {"swiglu", "false"}, {"vocab_size", "131072"},
        {"mamba_num_heads", "128"}, {"mamba_head_dim", "64"}, {"mamba_num_groups", "8"},
        {"mamba_state_dim", "128"}, {"conv_kernel", "4"},
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        ck_assert_int_eq(mem4d_model_set_str(m, kv[i][0], kv[i][1]), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(m, "hybrid_override_pattern", NH8_PATTERN), MEM4D_OK);
    return m;
}

START_TEST(pattern_round_trip)
{
    mem4d_model *m = nemotron_h_8b();
    char buf[256];
    uint64_t L = 0;
    ck_assert_uint_eq(mem4d_model_get_layer_pattern(m, buf, sizeof buf), 52);
    ck_assert_str_eq(buf, NH8_PATTERN);
    ck_assert_int_eq(mem4d_model_get(m, MEM4D_MODEL_NUM_LAYERS, &L), MEM4D_OK);
    ck_assert_uint_eq(L, 52);
    /* widths, a cut buffer, and the length when the buffer is short */
    ck_assert_int_eq(mem4d_model_set_layer_pattern(m, "*{8}-{14336}L*-"), MEM4D_OK);
    ck_assert_uint_eq(mem4d_model_get_layer_pattern(m, buf, 6), 15);
    ck_assert_str_eq(buf, "*{8}-");
    ck_assert_uint_eq(mem4d_model_get_layer_pattern(m, NULL, 0), 15);
    /* clearing keeps num_layers */
    ck_assert_int_eq(mem4d_model_set_layer_pattern(m, ""), MEM4D_OK);
    ck_assert_uint_eq(mem4d_model_get_layer_pattern(m, buf, sizeof buf), 0);
    mem4d_model_free(m);
}
END_TEST

START_TEST(pattern_refusals)
{
    mem4d_model *m = nemotron_h_8b();
    char buf[256];
    static const char *const bad[] = {"M-X", "M|M", "M*/M", "M{4}", "*{}", "*{0}", "-{12", "*{x}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(mem4d_model_set_layer_pattern(m, bad[i]) == MEM4D_E_PARSE, "%s", bad[i]);
    ck_assert_int_eq(mem4d_model_set_layer_pattern(m, "-{99999999}"), MEM4D_E_RANGE);
    /* a refused pattern leaves the model as it was */
    ck_assert_uint_eq(mem4d_model_get_layer_pattern(m, buf, sizeof buf), 52);
    /* more than 32 distinct layers */
    char many[512] = "";
    for (int i = 1; i <= 33; i++) {
        char one[16];
        snprintf(one, sizeof one, "-{%d}", i * 128);
        strcat(many, one);
    }
    ck_assert_int_eq(mem4d_model_set_layer_pattern(m, many), MEM4D_E_RANGE);
    /* num_layers contradicting the pattern, E without experts */
    char why[256];
    ck_assert_int_eq(mem4d_model_set(m, MEM4D_MODEL_NUM_LAYERS, 50), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_validate(m, why, sizeof why), MEM4D_E_MODEL);
    ck_assert_ptr_nonnull(strstr(why, "layer pattern"));
    ck_assert_int_eq(mem4d_model_set_layer_pattern(m, "ME*E"), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_validate(m, why, sizeof why), MEM4D_E_MISSING);
    ck_assert_ptr_nonnull(strstr(why, "num_experts"));
    ck_assert_int_eq(mem4d_model_set_layer_pattern(m, "MG*-"), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_validate(m, why, sizeof why), MEM4D_E_MISSING);
    ck_assert_ptr_nonnull(strstr(why, "Gated DeltaNet"));
    mem4d_model_free(m);
}
END_TEST

/* Nemotron-H-8B counted by hand from the module shapes of transformers'
 * modeling_nemotron_h.py (NemotronHMamba2Mixer, NemotronHAttention,
 * NemotronHMLP): 24 Mamba-2, 4 attention and 24 MLP layers, each with its
 * norm, the embedding and the untied head, the final norm. */
START_TEST(nemotron_h_8b_params)
{
    mem4d_model *m = nemotron_h_8b();
    uint64_t h = 4096, d = 128 * 64, conv = d + 2 * 8 * 128, in = 2 * d + 2 * 8 * 128 + 128;
    uint64_t mamba = h * in + conv * 4 + conv + 3 * 128 + d + d * h + h;
    uint64_t attn = h * 32 * 128 * 2 + 2 * h * 8 * 128 + h;
    uint64_t mlp = 2 * h * 21504 + h;
    uint64_t want = 24 * mamba + 4 * attn + 24 * mlp + 2 * 131072 * h + h, got = 0;
    ck_assert_int_eq(mem4d_model_num_params(m, &got), MEM4D_OK);
    ck_assert_uint_eq(got, want);
    mem4d_model_free(m);
}
END_TEST

static uint64_t term(const mem4d_report *r, uint32_t stage, mem4d_term t)
{
    uint64_t v = 0;
    ck_assert_int_eq(mem4d_report_get(r, stage, t, &v), MEM4D_OK);
    return v;
}

/* ACTIVATIONS of stage 0 for a pattern, pp 1 (one micro-batch in flight). */
static uint64_t activations(mem4d_model *m, const char *pattern, mem4d_layout *l, mem4d_device *dev)
{
    ck_assert_int_eq(mem4d_model_set_layer_pattern(m, pattern), MEM4D_OK);
    mem4d_report *r = tu_estimate(m, l, dev);
    ck_assert_uint_eq(term(r, 0, MEM4D_TERM_PEAK_MOMENT), MEM4D_MOMENT_FORWARD_BACKWARD);
    uint64_t a = term(r, 0, MEM4D_TERM_ACTIVATIONS);
    mem4d_report_free(r);
    return a;
}

/* One Mamba-2 layer keeps, per token, the fused norm's input and output
 * (2h each, 2 bytes), mamba_split_conv1d_scan_combined's saved zxbcdt
 * (2·d_inner + 2·G·N + heads) and out_x (d_inner), the group norm's input
 * and out_proj's input (d_inner each), 2 bytes each; a Gated DeltaNet layer
 * the norm, the in_proj output, the conv output, the L2-normalised q and k,
 * g (fp32), beta and A (64 per value head), the kernel's output and
 * out_proj's input. Adding one layer adds exactly that. */
START_TEST(mixer_activations_term_by_term)
{
    mem4d_model *m = nemotron_h_8b();
    mem4d_device *dev = tu_device("h200-141");
    mem4d_layout *l = tu_layout("tp=2", "dp=1", "mbs=1", "seq=4096", "sp=true", NULL);
    uint64_t T = 4096, h = 4096, t = 2, d = 8192, in = 2 * d + 2 * 8 * 128 + 128;
    uint64_t a2 = activations(m, "M*M-", l, dev), a3 = activations(m, "M*M-M", l, dev);
    ck_assert_uint_eq(a3 - a2, T * 4 * h / t + T * (2 * in + 6 * d) / t);
    /* Gated DeltaNet: Qwen3-Next-80B-A3B's dimensions */
    ck_assert_int_eq(mem4d_model_set_str(m, "linear_num_key_heads", "16"), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(m, "linear_num_value_heads", "32"), MEM4D_OK);
    uint64_t qk = 16 * 128, v = 32 * 128, nv = 32, gin = 2 * qk + 2 * v + 2 * nv, conv = 2 * qk + v;
    uint64_t g2 = activations(m, "G*G-", l, dev), g3 = activations(m, "G*G-G", l, dev);
    ck_assert_uint_eq(g3 - g2, T * 4 * h / t + T * (2 * gin + 2 * conv + 4 * qk + (4 + 2 + 128) * nv + 4 * v) / t);
    /* full recompute keeps a layer's input only, whatever its kind */
    ck_assert_int_eq(mem4d_layout_set_str(l, "recompute", "full"), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set_str(l, "recompute_method", "uniform"), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set_str(l, "recompute_num_layers", "1"), MEM4D_OK);
    uint64_t f2 = activations(m, "M*M-", l, dev), f3 = activations(m, "M*M-M", l, dev);
    ck_assert_uint_eq(f3 - f2, T * 2 * h / t);
    mem4d_layout_free(l);
    mem4d_device_free(dev);
    mem4d_model_free(m);
}
END_TEST

/* Per-stage placement follows the pattern: with pp 2 the first 26 layers
 * (12 M, 2 *, 12 -) and the last 26 (12 M, 2 *, 12 -) of Nemotron-H-8B,
 * and for a pattern front-loaded with Mamba layers the stages differ. */
START_TEST(stage_placement)
{
    mem4d_model *m = nemotron_h_8b();
    mem4d_device *dev = tu_device("h200-141");
    mem4d_layout *l = tu_layout("tp=1", "pp=2", "dp=1", "mbs=1", "seq=4096", "gbs=8", NULL);
    mem4d_report *r = tu_estimate(m, l, dev);
    uint64_t total = 0, h = 4096, emb = 131072 * h;
    ck_assert_int_eq(mem4d_model_num_params(m, &total), MEM4D_OK);
    uint64_t p0 = term(r, 0, MEM4D_TERM_PARAMS), p1 = term(r, 1, MEM4D_TERM_PARAMS);
    ck_assert_uint_eq(p0 + p1, total);
    ck_assert_uint_eq(p0 - emb, p1 - emb - h); /* the halves hold the same layers */
    /* 26 Mamba layers then 26 MLP layers: stage 0 holds every Mamba layer */
    char pat[64] = "";
    for (int i = 0; i < 26; i++)
        strcat(pat, "M");
    for (int i = 0; i < 26; i++)
        strcat(pat, "-");
    ck_assert_int_eq(mem4d_model_set_layer_pattern(m, pat), MEM4D_OK);
    ck_assert_msg(mem4d_estimate(m, l, dev, r) == MEM4D_OK, "%s", mem4d_report_message(r));
    uint64_t d = 8192, conv = d + 2048, in = 2 * d + 2048 + 128;
    uint64_t mamba = h * in + 5 * conv + 3 * 128 + d + d * h + h, mlp = 2 * h * 21504 + h;
    ck_assert_uint_eq(term(r, 0, MEM4D_TERM_PARAMS), 26 * mamba + emb);
    ck_assert_uint_eq(term(r, 1, MEM4D_TERM_PARAMS), 26 * mlp + emb + h);
    mem4d_report_free(r);
    mem4d_layout_free(l);
    mem4d_device_free(dev);
    mem4d_model_free(m);
}
END_TEST

START_TEST(refusals_with_sentences)
{
    mem4d_model *m = nemotron_h_8b();
    mem4d_device *dev = tu_device("h100-80");
    mem4d_layout *l = tu_layout("tp=1", "dp=8", "mbs=1", "seq=4096", "mode=paper", NULL);
    mem4d_report *r = NULL;
    char why[256];
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    ck_assert_int_eq(mem4d_estimate(m, l, dev, r), MEM4D_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(mem4d_report_message(r), "paper mode"));
    ck_assert_int_eq(mem4d_layout_set_str(l, "mode", "full"), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set_str(l, "framework", "torchtitan"), MEM4D_OK);
    ck_assert_int_eq(mem4d_validate(m, l, why, sizeof why), MEM4D_E_UNSUPPORTED);
    ck_assert_int_eq(mem4d_layout_set_str(l, "framework", "megatron"), MEM4D_OK);
    /* 8 Mamba groups do not split over tp 16 */
    ck_assert_int_eq(mem4d_layout_set_str(l, "tp", "16"), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set_str(l, "dp", "1"), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(m, "num_attention_heads", "64"), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(m, "num_key_value_heads", "16"), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(m, "ffn_hidden_size", "21504"), MEM4D_OK);
    ck_assert_int_eq(mem4d_validate(m, l, why, sizeof why), MEM4D_E_HEADS_TP);
    ck_assert_ptr_nonnull(strstr(why, "Mamba"));
    mem4d_report_free(r);
    mem4d_layout_free(l);
    mem4d_device_free(dev);
    mem4d_model_free(m);
}
END_TEST


/* Import a Megatron-LM argument vector (NULL-terminated) into m and l. */
static mem4d_status import_args(mem4d_import *imp, mem4d_model *m, mem4d_layout *l, uint64_t world, const char **argv)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    return mem4d_import_megatron(imp, argc, argv, NULL, world, m, l);
}

/* A new import, model and layout. */
static void open_import(mem4d_import **imp, mem4d_model **m, mem4d_layout **l)
{
    ck_assert_int_eq(mem4d_import_new(imp), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_new(m), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_new(l), MEM4D_OK);
}

static bool has_warning(const mem4d_import *imp, const char *text)
{
    for (size_t i = 0; i < mem4d_import_warning_count(imp); i++)
        if (strstr(mem4d_import_warning(imp, i), text))
            return true;
    return false;
}

/* Gated DeltaNet inside GPT layers (Qwen3-Next in Megatron-Core:
 * --experimental-attention-variant gated_delta_net, earlier
 * --linear-attention-type, with --linear-attention-freq): layer i mixes with
 * softmax attention when (i + 1) % N == 0 or the list says 0; each GPT layer
 * is two symbols, the mixer and its MLP (E with experts); uneven ends count
 * GPT layers; an MTP module is a GPT layer beside the pattern. */
START_TEST(gdn_inside_gpt_layers)
{
    mem4d_import *imp = NULL;
    mem4d_model *m = NULL;
    mem4d_layout *l = NULL;
    char buf[128];
    open_import(&imp, &m, &l);
    const char *freq[] = {"--num-layers", "8", "--hidden-size", "256", "--num-attention-heads", "4",
                          "--seq-length", "1024", "--micro-batch-size", "1", "--vocab-size", "1000",
                          "--num-experts", "4", "--moe-ffn-hidden-size", "128", "--moe-layer-freq", "([0]+[1]*7)",
                          "--linear-attention-type", "gated_delta_net", "--linear-attention-freq", "4",
                          "--pipeline-model-parallel-size", "2", "--decoder-first-pipeline-num-layers", "3",
                          "--decoder-last-pipeline-num-layers", "5", "--mtp-num-layers", "1",
                          "--position-embedding-type", "rope", "--linear-num-key-heads", "2",
                          "--linear-num-value-heads", "4", "--linear-key-head-dim", "32", "--linear-value-head-dim", "32",
                          NULL};
    ck_assert_msg(import_args(imp, m, l, 2, freq) == MEM4D_OK, "%s", mem4d_import_message(imp));
    mem4d_model_get_layer_pattern(m, buf, sizeof buf);
    ck_assert_str_eq(buf, "G-GEGE*EGEGEGE*E");
    uint64_t v = 0;
    ck_assert_int_eq(mem4d_layout_get(l, MEM4D_LAYOUT_FIRST_STAGE_LAYERS, &v), MEM4D_OK);
    ck_assert_uint_eq(v, 6);
    ck_assert_int_eq(mem4d_layout_get(l, MEM4D_LAYOUT_LAST_STAGE_LAYERS, &v), MEM4D_OK);
    ck_assert_uint_eq(v, 10);
    ck_assert_uint_eq(mem4d_import_warning_count(imp), 0);
    mem4d_device *dev = NULL;
    ck_assert_int_eq(mem4d_device_new_preset("h100-80", &dev), MEM4D_OK);
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    ck_assert_msg(mem4d_estimate(m, l, dev, r) == MEM4D_OK, "%s", mem4d_report_message(r));
    /* the same with the list form, and the current flag name */
    const char *list[] = {"--num-layers", "8", "--hidden-size", "256", "--num-attention-heads", "4",
                          "--seq-length", "1024", "--micro-batch-size", "1", "--vocab-size", "1000",
                          "--experimental-attention-variant", "gdn", "--linear-attention-freq", "([1]*3+[0])*2",
                          "--linear-num-key-heads", "2", "--linear-num-value-heads", "4", NULL};
    mem4d_model *m2 = NULL;
    ck_assert_int_eq(mem4d_model_new(&m2), MEM4D_OK);
    ck_assert_msg(import_args(imp, m2, l, 1, list) == MEM4D_OK, "%s", mem4d_import_message(imp));
    mem4d_model_get_layer_pattern(m2, buf, sizeof buf);
    ck_assert_str_eq(buf, "G-G-G-*-G-G-G-*-");
    /* --num-layers-per-virtual-pipeline-stage counts GPT layers too: 8 layers
     * over pp 2 at 2 a chunk are 2 chunks a rank, not the 16 symbols' 4 */
    const char *vpp[] = {"--num-layers", "8", "--hidden-size", "256", "--num-attention-heads", "4",
                         "--seq-length", "1024", "--vocab-size", "1000", "--experimental-attention-variant", "gdn",
                         "--linear-attention-freq", "4", "--linear-num-key-heads", "2", "--linear-num-value-heads", "4",
                         "--pipeline-model-parallel-size", "2", "--num-layers-per-virtual-pipeline-stage", "2", NULL};
    ck_assert_msg(import_args(imp, m2, l, 2, vpp) == MEM4D_OK, "%s", mem4d_import_message(imp));
    ck_assert_int_eq(mem4d_layout_get(l, MEM4D_LAYOUT_VPP, &v), MEM4D_OK);
    ck_assert_uint_eq(v, 2);
    /* refusals, each saying why */
    const char *nofreq[] = {"--num-layers", "8", "--hidden-size", "256", "--num-attention-heads", "4",
                            "--seq-length", "1024", "--vocab-size", "1000", "--experimental-attention-variant", "gdn",
                            NULL};
    ck_assert_int_eq(import_args(imp, m2, l, 1, nofreq), MEM4D_E_MISSING);
    ck_assert_ptr_nonnull(strstr(mem4d_import_message(imp), "--linear-attention-freq"));
    const char *badlen[] = {"--num-layers", "8", "--hidden-size", "256", "--num-attention-heads", "4",
                            "--seq-length", "1024", "--vocab-size", "1000", "--experimental-attention-variant", "gdn",
                            "--linear-attention-freq", "([1]*3+[0])", NULL};
    ck_assert_int_eq(import_args(imp, m2, l, 1, badlen), MEM4D_E_PARSE);
    const char *dsa[] = {"--num-layers", "8", "--hidden-size", "256", "--num-attention-heads", "4",
                         "--seq-length", "1024", "--vocab-size", "1000", "--experimental-attention-variant", "dsa",
                         NULL};
    ck_assert_int_eq(import_args(imp, m2, l, 1, dsa), MEM4D_E_UNSUPPORTED);
    mem4d_report_free(r);
    mem4d_device_free(dev);
    mem4d_model_free(m2);
    mem4d_layout_free(l);
    mem4d_model_free(m);
    mem4d_import_free(imp);
}
END_TEST

/* Megatron-LM's first hybrid example gave the 8B model by its ratios
 * (--hybrid-attention-ratio 0.08 --hybrid-mlp-ratio 0.5, 56 layers); today's
 * writes the pattern those ratios make (examples/mamba/train.sh at
 * df61e60b and at d98e8a64): both read to the same layers. */
START_TEST(megatron_ratios_make_the_published_pattern)
{
    mem4d_import *imp = NULL;
    mem4d_model *m = NULL;
    mem4d_layout *l = NULL;
    char buf[128];
    open_import(&imp, &m, &l);
    const char *ratios[] = {"--num-layers", "56", "--hidden-size", "4096", "--num-attention-heads", "32",
                            "--hybrid-attention-ratio", "0.08", "--hybrid-mlp-ratio", "0.5", "--seq-length", "4096",
                            "--micro-batch-size", "1", "--vocab-size", "256000", NULL};
    ck_assert_msg(import_args(imp, m, l, 8, ratios) == MEM4D_OK, "%s", mem4d_import_message(imp));
    mem4d_model_get_layer_pattern(m, buf, sizeof buf);
    ck_assert_str_eq(buf, "M-M-M--M-M*-M-M-M-M--M*-M-M-M-M-M*--M-M-M-M-M*-M--M-M-M-");
    const char *small[] = {"--num-layers", "48", "--hidden-size", "1024", "--num-attention-heads", "16",
                           "--is-hybrid-model", "--hybrid-attention-ratio", "0.08", "--hybrid-mlp-ratio", "0.5",
                           "--seq-length", "4096", "--vocab-size", "256000", NULL};
    ck_assert_msg(import_args(imp, m, l, 8, small) == MEM4D_OK, "%s", mem4d_import_message(imp));
    mem4d_model_get_layer_pattern(m, buf, sizeof buf);
    ck_assert_str_eq(buf, "M-M-M--M-*M-M-M-M--*M-M-M-M-*M--M-M-M-*M-M--M-M-");
    /* the pattern's pipeline segments become the layout's virtual stages */
    const char *piped[] = {"--hybrid-layer-pattern", "M-M*|M-M-|ME*E|MEME", "--hidden-size", "1024",
                           "--num-attention-heads", "16", "--num-experts", "8", "--pipeline-model-parallel-size", "2",
                           "--seq-length", "4096", "--vocab-size", "256000", NULL};
    ck_assert_msg(import_args(imp, m, l, 2, piped) == MEM4D_OK, "%s", mem4d_import_message(imp));
    uint32_t vs[8];
    uint64_t vpp = 0, L = 0;
    ck_assert_uint_eq(mem4d_layout_get_stage_layers(l, vs, 8), 4);
    ck_assert_uint_eq(vs[0] + vs[1] + vs[2] + vs[3], 16);
    ck_assert_int_eq(mem4d_layout_get(l, MEM4D_LAYOUT_VPP, &vpp), MEM4D_OK);
    ck_assert_uint_eq(vpp, 2);
    ck_assert_int_eq(mem4d_model_get(m, MEM4D_MODEL_NUM_LAYERS, &L), MEM4D_OK);
    ck_assert_uint_eq(L, 16);
    /* what the flags cannot describe is refused, naming it */
    const char *hetero[] = {"--heterogeneous-layers-config-path", "config.json", "--num-layers", "80", NULL};
    ck_assert_int_eq(import_args(imp, m, l, 8, hetero), MEM4D_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(mem4d_import_message(imp), "block_configs"));
    const char *mtp[] = {"--hybrid-layer-pattern", "M*M*/MM", "--hidden-size", "1024", NULL};
    ck_assert_int_eq(import_args(imp, m, l, 8, mtp), MEM4D_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(mem4d_import_message(imp), "'MM'"));
    /* MTP depths of attention and its MLP after '/' (parse_hybrid_pattern): the
     * depth count is mtp_num_layers; with --mtp-use-repeated-layer one module's
     * weights serve both depths */
    const char *depths[] = {"--hybrid-layer-pattern", "M*M-/*-/*-", "--hidden-size", "1024", "--num-attention-heads",
                            "16", "--ffn-hidden-size", "4096", "--seq-length", "4096", "--vocab-size", "32000",
                            "--disable-bias-linear", "--normalization", "RMSNorm", NULL};
    mem4d_model *d = NULL;
    ck_assert_int_eq(mem4d_model_new(&d), MEM4D_OK);
    ck_assert_msg(import_args(imp, d, l, 8, depths) == MEM4D_OK, "%s", mem4d_import_message(imp));
    uint64_t mtp_layers = 0, two = 0, one = 0;
    ck_assert_int_eq(mem4d_model_get(d, MEM4D_MODEL_MTP_LAYERS, &mtp_layers), MEM4D_OK);
    ck_assert_uint_eq(mtp_layers, 2);
    ck_assert_int_eq(mem4d_model_get(d, MEM4D_MODEL_NUM_LAYERS, &L), MEM4D_OK);
    ck_assert_uint_eq(L, 4);
    ck_assert_int_eq(mem4d_model_num_params(d, &two), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set(d, MEM4D_MODEL_MTP_REPEATED_LAYER, 1), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_num_params(d, &one), MEM4D_OK);
    mem4d_model_free(d);
    /* one module less: a dense GPT layer (4h² + 2hf + 2h norms), eh_proj 2h² and three norms */
    ck_assert_uint_eq(two - one, 4 * 1024 * 1024 + 2 * 1024 * 4096 + 2 * 1024 + 2 * 1024 * 1024 + 3 * 1024);
    const char *uneven[] = {"--hybrid-layer-pattern", "M*M-/*-/*E", "--hidden-size", "1024", NULL};
    ck_assert_int_eq(import_args(imp, m, l, 8, uneven), MEM4D_E_CONFLICT);
    mem4d_layout_free(l);
    mem4d_model_free(m);
    mem4d_import_free(imp);
}
END_TEST

/* slime's dynamic batching: the longest packed micro-batch the flags allow
 * (max_tokens_per_gpu on each GPU, cp times it per context-parallel group),
 * said in a sentence; the trainer's own flags are not memory-relevant and
 * raise no "not a flag" warning, Megatron-RL's inference buffers one. */
START_TEST(megatron_dynamic_batching_and_trainer_flags)
{
    mem4d_import *imp = NULL;
    mem4d_model *m = nemotron_h_8b();
    mem4d_layout *l = NULL;
    ck_assert_int_eq(mem4d_import_new(&imp), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_new(&l), MEM4D_OK);
    const char *dyn[] = {"--tensor-model-parallel-size", "4", "--context-parallel-size", "4",
                         "--use-dynamic-batch-size", "--max-tokens-per-gpu", "8192", "--colocate",
                         "--actor-num-nodes", "4", "--rollout-batch-size", "8", "--n-samples-per-prompt", "8",
                         "--sglang-mem-fraction-static", "0.75", "--rm-type", "deepscaler", "--eps-clip", "0.2", NULL};
    ck_assert_msg(import_args(imp, m, l, 32, dyn) == MEM4D_OK, "%s", mem4d_import_message(imp));
    uint64_t seq = 0, mbs = 0;
    ck_assert_int_eq(mem4d_layout_get(l, MEM4D_LAYOUT_SEQ_LENGTH, &seq), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_get(l, MEM4D_LAYOUT_MICRO_BATCH, &mbs), MEM4D_OK);
    ck_assert_uint_eq(seq, 4 * 8192);
    ck_assert_uint_eq(mbs, 1);
    ck_assert_uint_eq(mem4d_import_warning_count(imp), 1);
    ck_assert(has_warning(imp, "longest packed micro-batch"));
    const char *no_max[] = {"--use-dynamic-batch-size", NULL};
    ck_assert_int_eq(import_args(imp, m, l, 8, no_max), MEM4D_E_MISSING);
    const char *rl[] = {"--seq-length", "8192", "--grpo-group-size", "16", "--grpo-kl-beta", "0.0",
                        "--inference-max-requests", "64", "--inference-dynamic-batching-buffer-size-gb", "20",
                        "--langrl-env-config", "env.yaml", NULL};
    ck_assert_msg(import_args(imp, m, l, 8, rl) == MEM4D_OK, "%s", mem4d_import_message(imp));
    ck_assert_uint_eq(mem4d_import_warning_count(imp), 1);
    ck_assert(has_warning(imp, "shares the GPUs with training"));
    mem4d_layout_free(l);
    mem4d_model_free(m);
    mem4d_import_free(imp);
}
END_TEST

/* The step time of a pattern: speed metrics, whose model FLOPs are
 * Megatron-LM's hybrid_flops (training.py, d98e8a64) for Nemotron-H-8B,
 * counted here from its formula: per layer and forward, Mamba-2
 * 2sh(2·2h + 2GN + heads) + 7s·2h·N + 2s·2h·h, attention 4sh·p(h + h·g/a) +
 * 2s²h·p, MLP 4·(f/h)·s·h², the logits 2shV, times 3. */
START_TEST(step_time_of_a_pattern)
{
    mem4d_model *m = nemotron_h_8b();
    mem4d_device *dev = tu_device("h100-80");
    mem4d_layout *l = tu_layout("tp=4", "dp=2", "mbs=1", "seq=4096", "gbs=64", "vocab_divisor=1", NULL);
    mem4d_report *r = tu_estimate(m, l, dev);
    double step = 0, tf = 0;
    ck_assert_int_eq(mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &step), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_metric(r, MEM4D_METRIC_TFLOPS_PER_GPU, &tf), MEM4D_OK);
    double s = 4096, h = 4096, N = 128, G = 8, heads = 128, a = 32, g = 8, p = 128 * a / h, f = 21504, V = 131072;
    double mamba = 2 * s * h * (2 * 2 * h + 2 * G * N + heads) + 7 * s * 2 * h * N + 2 * s * 2 * h * h;
    double attn = 4 * s * h * p * (h + h * g / a) + 2 * s * s * h * p;
    double mlp = 4 * (f / h) * s * h * h;
    double want = 3 * (24 * mamba + 4 * attn + 24 * mlp + 2 * s * h * V);
    double got = tf * 1e12 * step * 8 / 64;
    ck_assert_msg(got > want * (1 - 1e-9) && got < want * (1 + 1e-9), "model FLOPs %g, Megatron's %g", got, want);
    /* turning the 24 MLP layers (2hf = 176M weights each) into Mamba-2
     * layers (110M of projections, and the scan) shortens the step, and
     * the step follows the layers' kinds, not their count */
    char pat[64] = "";
    for (int i = 0; i < 52; i++)
        strcat(pat, i % 13 == 6 ? "*" : "M");
    ck_assert_int_eq(mem4d_model_set_layer_pattern(m, pat), MEM4D_OK);
    double step_m = 0;
    ck_assert_msg(mem4d_estimate(m, l, dev, r) == MEM4D_OK, "%s", mem4d_report_message(r));
    ck_assert_int_eq(mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &step_m), MEM4D_OK);
    ck_assert_msg(step_m < step, "all-Mamba step %g, hybrid %g", step_m, step);
    mem4d_report_free(r);
    mem4d_layout_free(l);
    mem4d_device_free(dev);
    mem4d_model_free(m);
}
END_TEST

/* A published run: Megatron-Bridge's Nemotron 3 Nano performance recipe on
 * 16 H100 (NVIDIA-NeMo/Megatron-Bridge@067f987d, perf_recipes/nemotronh/
 * h100/nemotronh.py nemotron_3_nano_pretrain_16gpu_h100_bf16_config with
 * recipes/nemotronh/h100/nemotron_3_nano.py): TP 1, EP 8, DP 16, mbs 1,
 * 8192 tokens, GBS 1024, selective recompute of moe and layernorm, the
 * distributed optimizer with bf16 gradient reduction (grad_reduce_in_fp32
 * False), HybridEP, expandable segments, Transformer Engine CUDA graphs of
 * the attention (and Mamba, whose graph buffers are not modelled). It ran,
 * so it must not be judged out of memory; the model is its config.json's
 * (tests/data/hf/hybrid/nemotron-3-nano-30b-a3b.json). */
START_TEST(published_nemotron_3_nano_run_fits)
{
    mem4d_model *m = NULL;
    ck_assert_int_eq(mem4d_model_new(&m), MEM4D_OK);
    static const char *const kv[][2] = {
        {"hidden_size", "2688"}, {"num_attention_heads", "32"}, {"num_key_value_heads", "2"}, {"head_dim", "128"},
        {"ffn_hidden_size", "1856"}, {"swiglu", "false"}, {"vocab_size", "131072"}, {"num_experts", "128"},
        {"moe_router_topk", "6"}, {"moe_ffn_hidden_size", "1856"}, {"moe_shared_expert_intermediate_size", "3712"},
        {"moe_shared_expert_gate", "false"}, {"mamba_num_heads", "64"}, {"mamba_head_dim", "64"},
        {"mamba_num_groups", "8"}, {"mamba_state_dim", "128"},
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        ck_assert_int_eq(mem4d_model_set_str(m, kv[i][0], kv[i][1]), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_layer_pattern(m, "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"), MEM4D_OK);
    uint64_t n = 0;
    ck_assert_int_eq(mem4d_model_num_params(m, &n), MEM4D_OK);
    ck_assert_uint_eq(n, 31577937344u); /* the checkpoint's safetensors total */
    mem4d_layout *l = tu_layout("tp=1", "ep=8", "dp=16", "mbs=1", "seq=8192", "gbs=1024", "recompute=selective",
                                "recompute_modules=68", "main_grad_bytes=2", "dist_opt=true", "moe_dispatcher=hybridep",
                                "expandable_segments=true", "cuda_graph=transformer_engine", "cuda_graph_scope=1", NULL);
    mem4d_device *dev = tu_device("h100-80");
    mem4d_report *r = tu_estimate(m, l, dev);
    printf("Megatron-Bridge Nemotron 3 Nano 16xH100 bf16: %.2f GiB of 80, verdict %d\n",
           (double)mem4d_report_peak_bytes(r) / GIB, (int)mem4d_report_verdict(r));
    ck_assert_int_ne(mem4d_report_verdict(r), MEM4D_VERDICT_OOM);
    mem4d_report_free(r);
    mem4d_device_free(dev);
    mem4d_layout_free(l);
    mem4d_model_free(m);
}
END_TEST

/* qwen3_next without "layer_types": every full_attention_interval-th layer
 * is full attention; "mlp_only_layers" are dense; each layer two halves. */
START_TEST(qwen3_next_config_by_interval)
{
    static const char json[] =
        "{\"model_type\": \"qwen3_next\", \"hidden_size\": 256, \"intermediate_size\": 512, "
        "\"num_hidden_layers\": 8, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 64, "
        "\"vocab_size\": 1000, \"num_experts\": 4, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 64, "
        "\"shared_expert_intermediate_size\": 128, \"full_attention_interval\": 4, \"mlp_only_layers\": [0], "
        "\"linear_num_key_heads\": 2, \"linear_num_value_heads\": 4, \"linear_key_head_dim\": 32, "
        "\"linear_value_head_dim\": 32, \"linear_conv_kernel_dim\": 4, \"mtp_num_hidden_layers\": 1}";
    mem4d_import *imp = NULL;
    mem4d_model *m = NULL;
    ck_assert_int_eq(mem4d_import_new(&imp), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_new(&m), MEM4D_OK);
    mem4d_status st = mem4d_import_hf_config_buffer(imp, json, sizeof json - 1, m);
    if (st == MEM4D_E_NO_JSON) { /* built without json-c */
        mem4d_model_free(m);
        mem4d_import_free(imp);
        return;
    }
    ck_assert_msg(st == MEM4D_OK, "%s", mem4d_import_message(imp));
    char buf[64];
    uint64_t L = 0, gate = 0;
    mem4d_model_get_layer_pattern(m, buf, sizeof buf);
    ck_assert_str_eq(buf, "G-GEGE*EGEGEGE*E");
    ck_assert_int_eq(mem4d_model_get(m, MEM4D_MODEL_NUM_LAYERS, &L), MEM4D_OK);
    ck_assert_uint_eq(L, 16);
    ck_assert_int_eq(mem4d_model_get(m, MEM4D_MODEL_ATTENTION_OUTPUT_GATE, &gate), MEM4D_OK);
    ck_assert_uint_eq(gate, 1);
    ck_assert(has_warning(imp, "MTP layer"));
    mem4d_model_free(m);
    mem4d_import_free(imp);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hybrid");
    TCase *tc = tcase_create("hybrid");
    tcase_add_test(tc, pattern_round_trip);
    tcase_add_test(tc, pattern_refusals);
    tcase_add_test(tc, nemotron_h_8b_params);
    tcase_add_test(tc, mixer_activations_term_by_term);
    tcase_add_test(tc, stage_placement);
    tcase_add_test(tc, refusals_with_sentences);
    tcase_add_test(tc, megatron_ratios_make_the_published_pattern);
    tcase_add_test(tc, megatron_dynamic_batching_and_trainer_flags);
    tcase_add_test(tc, step_time_of_a_pattern);
    tcase_add_test(tc, published_nemotron_3_nano_run_fits);
    tcase_add_test(tc, qwen3_next_config_by_interval);
    tcase_add_test(tc, gdn_inside_gpt_layers);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
