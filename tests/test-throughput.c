/*
 * The step-time model against published training runs
 * (tests/data/throughput/throughput.csv, 298 rows from 12 sources,
 * provenance in its README): prints the predicted and measured tokens/s
 * per GPU (or TFLOP/s, or MFU, where the source gives only that) of every
 * row; per source the uncalibrated median |error|, the mean signed error
 * and the residual after one constant, before issue 21's mechanisms and
 * now; every sweep of one model over layouts on one cluster and every
 * weak-scaling series with the rank correlation of predicted and measured
 * order; and the error after calibrating on one run. MoE rows (branch
 * i22's) are printed and not judged. The sweeps of one model over layouts
 * in tests/data/throughput/sweeps.csv (argv[2]) are judged by their order. Asserts the targets of doc/perf.md,
 * "Validation", or guards at what the model reaches where it falls short.
 * Last, the FP8, MXFP8 and NVFP4 runs of blackwell-precisions.csv (beside
 * argv[1]) are printed, not judged.
 * SPDX-License-Identifier: MIT
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define MAX_FIELDS 64
#define MAX_ROWS 512
#define MAX_SOURCES 32

/* Guards at what the step-time model reaches (doc/perf.md, "Validation"),
 * where it falls short of the targets: every source's median |error| <= 15%
 * and mean signed error within +-10% (issue 21), the median residual after
 * one constant per source <= 5%, no weak-scaling series with an order to
 * match below Spearman 0.85, calibrated on one run per (source, GPU,
 * precision, stack) <= 5% (CAL_SOURCE: the worst source's exact runs;
 * CAL_SOURCE_ALL: every run), bf16 exact rows <= 10%, and no source's
 * median worse than before issue 21 (RISE: the largest rise reached, in
 * points). Calibrated on each run's nearest run, the 5% is asserted. */
#define WORST_SOURCE_MEDIAN 0.22
#define WORST_SOURCE_MEAN 0.22
#define RESIDUAL 0.05
/* 4 since STEP_PASSES (doc/perf.md, "Megatron-Core's and Apex's step
 * outside Adam"): its shard passes shrink with dp, which turns near-ties
 * the other way in two of dgxc's series the model predicts flat (Nemotron-4
 * 15B bf16, 16 against 32 GPUs 0.04% apart; Llama-3.1 70B fp8, 0.04% over
 * 64-2048 GPUs) */
#define SERIES_BELOW 4
#define CAL_SOURCE 0.12
#define CAL_SOURCE_ALL 0.05 /* the target, met */
#define EXACT_BF16 0.10
#define RISE 0.050

static const char *csv_path;   /* argv[1]; read-only after main() starts */
static const char *sweeps_path; /* argv[2]: tests/data/throughput/sweeps.csv */
static const char *figures_path; /* argv[3], optional: where fig() appends */

/* One record of the figures that scripts/gen-validation.py lays out as the
 * generated blocks of doc/perf.md and README.md (and `validation-fresh`
 * checks): tab-separated fields, the first naming the record, doubles at
 * full precision (%.17g; the script rounds them). Written only when the
 * test is given a third argument; opened per record, as each test case
 * runs in a child of its own. */
static void fig(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fig(const char *fmt, ...)
{
    if (!figures_path)
        return;
    FILE *f = fopen(figures_path, "a");
    if (!f) { /* no ck_assert: main() writes the guards outside any test */
        perror(figures_path);
        exit(1);
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    if (fclose(f) != 0) {
        perror(figures_path);
        exit(1);
    }
}

struct row {
    char id[16], source[32], model[48], precision[24], status[16], gpu[24];
    bool moe;         /* routed experts (ep > 1 or experts= in the notes): i22's rows, printed only */
    char sweep[128];  /* model, GPU, GPU count, sequence: one cluster's sweep */
    char layout[64];  /* tp cp pp vpp mbs: what a sweep varies */
    double meas; /* measured tokens/s per GPU (or TFLOP/s per GPU, or MFU, as `kind` says) */
    enum { TOKENS, TFLOPS, MFU } kind; /* what the source gives: tokens/s or step time, else TFLOP/s, else MFU */
    uint64_t gpus;
    double params, seq; /* the model's parameters and the sequence: how near two jobs are */
    double pred, err;
    double share[7]; /* compute, TP, CP, DP, PP, bubble, optimizer over the step */
    double step;     /* predicted step time, s */
    double peak;     /* predicted peak memory, bytes */
    double band[2];  /* the band's step times over the predicted step */
    mem4d_model *m;  /* the job, kept for the calibration check */
    mem4d_layout *l;
    mem4d_device *d;
    char key[200]; /* everything but the GPU count: a weak-scaling series */
};

struct table {
    char *head[MAX_FIELDS];
    int n;
};

static const char *col(const struct table *t, char **f, const char *name)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->head[i], name) == 0)
            return f[i];
    ck_abort_msg("throughput.csv has no column %s", name);
    return NULL;
}

/* A value without its "inferred" mark ("1?" -> "1"); "?" alone -> "". */
static const char *val(const struct table *t, char **f, const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s", col(t, f, name));
    size_t n = strlen(buf);
    if (n && buf[n - 1] == '?')
        buf[n - 1] = '\0';
    return buf;
}

static void set(mem4d_layout *l, const char *key, const char *value, const char *id)
{
    if (!*value)
        return;
    ck_assert_msg(mem4d_layout_set_str(l, key, value) == MEM4D_OK, "row %s: %s=%s", id, key, value);
}

static mem4d_model *model_of(const struct table *t, char **f, const char *id)
{
    char b[64];
    mem4d_model *m = NULL;
    if (strcmp(col(t, f, "mem4d_model"), "custom") != 0) {
        ck_assert_msg(mem4d_model_new_preset(col(t, f, "mem4d_model"), &m) == MEM4D_OK, "row %s: model", id);
        return m;
    }
    static const char *const keys[][2] = {
        {"hidden", "hidden_size"}, {"ffn", "ffn_hidden_size"},  {"layers", "num_layers"},
        {"heads", "num_attention_heads"}, {"kv_heads", "num_query_groups"}, {"vocab", "vocab_size"},
        {"tied", "tie_word_embeddings"},  {"gated", "gated_mlp"},
    };
    ck_assert_int_eq(mem4d_model_new(&m), MEM4D_OK);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_msg(mem4d_model_set_str(m, keys[i][1], val(t, f, keys[i][0], b, sizeof b)) == MEM4D_OK,
                      "row %s: %s", id, keys[i][0]);
    if (strcmp(col(t, f, "arch"), "gpt") == 0)
        ck_assert_int_eq(mem4d_model_set_str(m, "normalization", "layernorm"), MEM4D_OK);
    /* The position embedding and the linears' biases of the GPT-style rows
     * (the rest of the table: RoPE, no biases). GPT-3 is GPT-2's
     * architecture (Brown et al. 2020, section 2.1): a learned position
     * table and a bias on every linear, as Megatron-LM's defaults
     * (--position-embedding-type learned_absolute, add_bias_linear) and
     * NeMo's GPT-3 configs (position_embedding_type learned_absolute, bias
     * True) run it; the Megatron GPT shapes of Korthikanti et al., MegaScale
     * and MT-NLG are that model. BLOOM: ALiBi and biases (the prequel's
     * script, --position-embedding-type alibi; Megatron-DeepSpeed's linears
     * keep their biases). MPT: ALiBi, no biases (llm-foundry's MPT configs,
     * alibi: true, no_bias: true). Nemotron-4: RoPE, no biases. */
    static const struct {
        const char *model, *position;
        bool bias;
    } gpt_style[] = {
        {"GPT-", "learned_absolute", true}, {"MT-NLG", "learned_absolute", true},
        {"BLOOM", "alibi", true},           {"MPT-", "alibi", false},
    };
    for (size_t i = 0; i < sizeof gpt_style / sizeof gpt_style[0]; i++)
        if (strstr(col(t, f, "model"), gpt_style[i].model) == col(t, f, "model")) {
            ck_assert_int_eq(mem4d_model_set_str(m, "position_embedding_type", gpt_style[i].position), MEM4D_OK);
            ck_assert_int_eq(mem4d_model_set_str(m, "add_bias_linear", gpt_style[i].bias ? "1" : "0"), MEM4D_OK);
            /* the table as long as the sequence (GPT-3's 2048 positions) */
            if (!strcmp(gpt_style[i].position, "learned_absolute"))
                ck_assert_int_eq(mem4d_model_set_str(m, "max_position_embeddings", val(t, f, "seq", b, sizeof b)),
                                 MEM4D_OK);
            break;
        }
    /* Nemotron-4's MLP is squared ReLU (NeMo's NemotronConfig, activation_func) */
    if (strstr(col(t, f, "model"), "Nemotron-4"))
        ck_assert_int_eq(mem4d_model_set_str(m, "activation", "squared_relu"), MEM4D_OK);
    /* MoE dims are in the notes ("experts=128 topk=8 moe_ffn=1536 ..."). */
    static const char *const moe[][2] = {
        {"experts=", "num_experts"},         {"topk=", "moe_router_topk"}, {"moe_ffn=", "moe_ffn_hidden_size"},
        {"shared=", "moe_shared_expert_intermediate_size"}, {"first_dense=", "moe_first_dense_layers"},
        {"head_dim=", "kv_channels"},
    };
    const char *notes = col(t, f, "notes");
    for (size_t i = 0; i < sizeof moe / sizeof moe[0]; i++) {
        const char *at = strstr(notes, moe[i][0]);
        if (!at || (at > notes && at[-1] != ' ' && at[-1] != '"'))
            continue;
        snprintf(b, sizeof b, "%.*s", (int)strspn(at + strlen(moe[i][0]), "0123456789"), at + strlen(moe[i][0]));
        if (*b && strcmp(b, "0") != 0)
            ck_assert_msg(mem4d_model_set_str(m, moe[i][1], b) == MEM4D_OK, "row %s: %s%s", id, moe[i][0], b);
    }
    return m;
}

/* The MoE knobs of a moe-modelzoo row (tests/data/throughput/README.md):
 * Megatron-MoE-ModelZoo's sbatch_benchmarking.sh runs DeepEP unless the
 * row (its notes or framework column) names the all-to-all or HybridEP,
 * turns on --tp-comm-overlap for bf16 (since 2025-12-16: not for the H100
 * table's runs), and with A2A_OVERLAP=1 --overlap-moe-expert-parallel-comm and
 * --delay-wgrad-compute; its model yamls set --expert-tensor-parallel-size
 * 1 and --moe-grouped-gemm; the notes give the recompute modules and a
 * capacity factor. The routing: rows whose notes say "dropless" ran the
 * learned router (moe_imbalance_ppm left at 0, the library derives the
 * busiest rank's load); the others forced balance
 * (--moe-router-force-load-balancing: the long-context and GB200 tables
 * and the Mixtral script say so, and run_235b.sh's H100 baseline command
 * of the main H100 table passes it): 10^6. */
static void moe_knobs(const struct table *t, char **f, mem4d_layout *l, const char *id)
{
    const char *notes = col(t, f, "notes");
    if (strcmp(col(t, f, "source"), "moe-modelzoo") != 0)
        return;
    set(l, "etp", "1", id);
    if (!strstr(notes, "dropless") || strstr(notes, "force"))
        set(l, "moe_imbalance_ppm", "1000000", id);
    /* The dispatcher the framework column names ("DeepEP dispatcher", "A2A
     * dispatcher", "alltoall dispatcher": the Mixtral script's
     * DISPATCHER=alltoall); DeepEP refuses padding to the capacity: those
     * runs use alltoall. */
    const char *fw = col(t, f, "framework");
    set(l, "moe_dispatcher",
        strstr(notes, "AlltoAll") || strstr(notes, "capacity factor") || strstr(fw, "A2A") || strstr(fw, "alltoall")
            ? "alltoall"
        : strstr(notes, "HybridEP") || strstr(fw, "HybridEP") ? "hybridep"
                                                              : "deepep",
        id);
    /* --tp-comm-overlap for bf16 entered sbatch_benchmarking.sh on
     * 2025-12-16 (b09773a); the H100 table's runs (2025-05-27, the script
     * of 31c5686) ran without it */
    if (strncmp(col(t, f, "precision"), "bf16", 4) == 0 && !strstr(col(t, f, "source_ref"), "H100 table"))
        set(l, "tp_comm_overlap", "1", id);
    if ((strstr(notes, "A2A overlap") || strstr(notes, "A2A_OVERLAP=1")) && !strstr(notes, "A2A_OVERLAP=0")) {
        set(l, "moe_ep_overlap", "1", id);
        /* A2A_OVERLAP=1 adds --delay-wgrad-compute (sbatch_benchmarking.sh
         * since 7f7b732); the H100 table's overlap run passed
         * --combined-1f1b --combined-1f1b-recipe ep_a2a alone
         * (examples/qwen3/run_235b.sh@31c5686 and @8017e11) */
        if (!strstr(col(t, f, "source_ref"), "H100 table"))
            set(l, "delay_wgrad", "1", id);
    }
    /* The H100 table's runs (2025-05) used the model yaml of 31c5686
     * (model_configs/benchmarking/Qwen3-235B-A22B.yaml), which has no
     * --cross-entropy-loss-fusion: Megatron-LM's unfused cross entropy (the
     * flag came in 274316a, 2025-08-20, with --cross-entropy-fusion-impl te) */
    if (strstr(col(t, f, "source_ref"), "H100 table"))
        set(l, "cross_entropy_impl", "unfused", id);
    /* the fp8 recipe: "MXFP8(1x32 block scaling)" (PR=mxfp8), "PR=fp8
     * block-wise FP8" (the Mixtral script's blockwise recipe) */
    if (strstr(notes, "MXFP8"))
        set(l, "fp8_recipe", "mxfp8", id);
    else if (strstr(notes, "block-wise FP8"))
        set(l, "fp8_recipe", "blockwise", id);
    if (strstr(notes, "capacity factor 1.0")) {
        set(l, "moe_capacity_factor_ppm", "1000000", id);
        set(l, "moe_pad_to_capacity", strstr(notes, "pad to capacity") ? "1" : "0", id);
    }
    /* recompute modules: "norm, act" / "layernorm+moe_act" / "layernorm+moe" */
    unsigned bits = 0;
    bits |= strstr(notes, "layernorm") || strstr(notes, "'norm, act'") ? 4 : 0;
    bits |= strstr(notes, "moe_act") || strstr(notes, "'norm, act'") ? 8 : 0;
    bits |= strstr(notes, "layernorm+moe;") ? 64 : 0;
    if (bits) {
        char b[16];
        snprintf(b, sizeof b, "%u", bits);
        set(l, "recompute_modules", b, id);
    }
}

/* nanotron's pipeline split (src/nanotron/models/base.py, build_model, at
 * the rows' commit c2528430): each block's cost from
 * get_block_compute_costs() (models/llama.py: a decoder layer 4 a d_qkv h +
 * 3 f h, the lm_head V h, everything else 0), thresholds total (r + 1) / pp,
 * and a block stays on the current rank, which the block whose cumulative
 * cost passes its threshold closes. The front stages get the extra layers
 * ("stage_layers" of the layout, as text). */
static void nanotron_split(const struct table *t, char **f, char *out, size_t size)
{
    double h = strtod(col(t, f, "hidden"), NULL), ff = strtod(col(t, f, "ffn"), NULL);
    double v = strtod(col(t, f, "vocab"), NULL), layer = 4 * h * h + 3 * ff * h;
    unsigned long L = strtoul(col(t, f, "layers"), NULL, 10), pp = strtoul(col(t, f, "pp"), NULL, 10);
    double total = (double)L * layer + v * h, cum = 0;
    unsigned long r = 0, n[512] = {0};
    ck_assert_uint_le(pp, 512);
    for (unsigned long i = 0; i < L; i++) {
        n[r]++;
        cum += layer;
        if (cum > total * (double)(r + 1) / (double)pp && r + 1 < pp)
            r++;
    }
    size_t k = 0;
    out[0] = 0;
    for (unsigned long i = 0; i < pp && k < size; i++)
        k += (size_t)snprintf(out + k, size - k, "%s%lu", i ? "," : "", n[i]);
}

static mem4d_layout *layout_of(const struct table *t, char **f, const char *id)
{
    char b[64];
    mem4d_layout *l = NULL;
    ck_assert_int_eq(mem4d_layout_new(&l), MEM4D_OK);
    static const char *const keys[][2] = {
        {"gpus", "world"}, {"seq", "seq"}, {"gbs", "gbs"}, {"mbs", "mbs"}, {"tp", "tp"},
        {"cp", "cp"},      {"pp", "pp"},   {"ep", "ep"},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        set(l, keys[i][1], val(t, f, keys[i][0], b, sizeof b), id);
    moe_knobs(t, f, l, id);
    /* A split that pp does not divide counts the embedding and the loss as
     * one layer each (Megatron's --account-for-embedding-in-pipeline-split
     * and --account-for-loss-in-pipeline-split, as the sources state). */
    uint64_t layers = strtoull(col(t, f, "layers"), NULL, 10), pp = strtoull(col(t, f, "pp"), NULL, 10);
    uint64_t vpp_n = strtoull(col(t, f, "vpp"), NULL, 10);
    if (strstr(col(t, f, "notes"), "embedding and loss counted in the pipeline split") && pp > 1 && vpp_n > 1) {
        /* Megatron's --account-for-embedding-in-pipeline-split and
         * --account-for-loss-in-pipeline-split with vpp, on the rows whose
         * notes say their run set them (tests/data/throughput/README.md:
         * ModelZoo's Qwen3 config, Megatron-Bridge's and NeMo 2.0's Llama
         * 3.1 405B recipes): every virtual stage holds (layers + 2)/(pp vpp)
         * slots, the first and the last one layer fewer (Megatron-Core's
         * get_num_layers_to_build asserts the division) */
        ck_assert_msg((layers + 2) % (pp * vpp_n) == 0, "%s: %llu layers + 2 do not split over pp %llu x vpp %llu", id,
                      (unsigned long long)layers, (unsigned long long)pp, (unsigned long long)vpp_n);
        set(l, "first_chunk_fewer_layers", "1", id);
        set(l, "last_chunk_fewer_layers", "1", id);
    } else if (!strcmp(col(t, f, "source"), "llama3-paper") && pp > 1 && vpp_n == 0 && (layers + 2) % pp == 0) {
        /* Llama 3's pipeline (arXiv 2407.21783, sec. 3.3.2, "Pipeline
         * parallelism improvements"): "we reduce one Transformer layer each
         * from the first and the last stages ... This means that the first
         * model chunk on the first stage has only the embedding, and the
         * last model chunk on the last stage has only output projection and
         * loss calculation", with "an interleaved schedule ... with V
         * pipeline stages on one pipeline rank": a chunk holds one layer,
         * so V = (layers + 2)/pp (126 + 2 = 16 x 8) */
        snprintf(b, sizeof b, "%llu", (unsigned long long)((layers + 2) / pp));
        set(l, "vpp", b, id);
        set(l, "first_chunk_fewer_layers", "1", id);
        set(l, "last_chunk_fewer_layers", "1", id);
    } else if (!strcmp(col(t, f, "source"), "nanotron") && pp > 1) {
        char split[2048];
        nanotron_split(t, f, split, sizeof split);
        set(l, "stage_layers", split, id);
    } else if (pp > 1 && layers % pp != 0 && (layers + 2) % pp == 0) {
        snprintf(b, sizeof b, "%llu", (unsigned long long)((layers + 2) / pp - 1));
        set(l, "decoder_first_pipeline_num_layers", b, id);
        set(l, "decoder_last_pipeline_num_layers", b, id);
    }
    /* Llama 3's context parallelism all-gathers K and V, its latency "exposed
     * in the critical path" (arXiv 2407.21783, sec. 3.3.2, "Context
     * parallelism for long sequences"): cp_comm_type all_gather */
    if (!strcmp(col(t, f, "source"), "llama3-paper"))
        set(l, "cp_comm_type", "all_gather", id);
    /* vpp "?" (not stated) and interleaving over uneven stages are predicted as 1F1B. */
    const char *vpp = val(t, f, "vpp", b, sizeof b);
    if (*vpp && mem4d_layout_set_str(l, "vpp", vpp) == MEM4D_OK) {
        mem4d_model *m = model_of(t, f, id);
        char g[32];
        mem4d_device *d = tu_device(val(t, f, "mem4d_gpu", g, sizeof g));
        mem4d_report *r = NULL;
        ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
        if (mem4d_estimate(m, l, d, r) != MEM4D_OK)
            ck_assert_int_eq(mem4d_layout_set_str(l, "vpp", "1"), MEM4D_OK);
        mem4d_report_free(r);
        mem4d_device_free(d);
        mem4d_model_free(m);
    }
    const char *etp = strstr(col(t, f, "notes"), "ETP=");
    if (etp) { /* expert tensor parallelism, in the notes of MoE rows */
        snprintf(b, sizeof b, "%.*s", (int)strspn(etp + 4, "0123456789"), etp + 4);
        set(l, "etp", b, id);
    }
    const char *rc = val(t, f, "recompute", b, sizeof b);
    set(l, "recompute", strncmp(rc, "selective", 9) == 0 ? "selective" : rc, id);
    const char *dopt = val(t, f, "dist_opt", b, sizeof b);
    /* llm-foundry's SHARD_GRAD_OP (written dist_opt 1, its notes say so;
     * tests/data/throughput/README.md) is FSDP's ZeRO-2, which zero_stage 2
     * means on a stack that wraps the model in PyTorch's FSDP (lib/perf.c,
     * FSDP_SHARD_GRAD_OP) */
    if (strcmp(dopt, "fsdp") == 0)
        set(l, "zero_stage", "3", id);
    else if (strstr(col(t, f, "notes"), "FSDP SHARD_GRAD_OP"))
        set(l, "zero_stage", "2", id);
    else
        set(l, "dist_opt", dopt, id);
    const char *ov = val(t, f, "overlap_dp", b, sizeof b);
    bool nemotron = !strcmp(col(t, f, "source"), "nemotron4-reports");
    /* The Nemotron-4 reports do not state the DP overlaps; NVIDIA's
     * NeMo-Framework-Launcher configs of those models set them
     * (launcher_scripts/conf/training/nemotron/nemotron_15b.yaml@089b90e6
     * and nemotron_340b.yaml@3be81fc1: overlap_grad_sync, overlap_param_sync). */
    if (!*ov && nemotron)
        ov = "1";
    set(l, "overlap_grad_reduce", ov, id);
    set(l, "overlap_param_gather", ov, id);
    const char *tov = strcmp(col(t, f, "source"), "moe-modelzoo") ? val(t, f, "tp_comm_overlap", b, sizeof b) : "";
    /* The 15B's config, the one its DP overlaps come from, also sets
     * ub_tp_comm_overlap: True. (The 340B's own pretraining config,
     * nemotron_340b.yaml@7c842fcd, "actual GPU/GBS numbers used in
     * pretraining", sets it False: the 340B rows keep their column.) */
    if (!*tov && nemotron && !strcmp(col(t, f, "model"), "Nemotron-4-15B"))
        tov = "1";
    set(l, "tp_comm_overlap", tov, id);
    if (strncmp(col(t, f, "precision"), "fp8", 3) == 0)
        set(l, "fp8", "1", id);
    /* "fp8 (current scaling)": Megatron-Bridge's FP8-CS runs, whose
     * bf16_with_fp8_current_scaling_mixed sets fp8_recipe "tensorwise"
     * (per-tensor current scaling; NVIDIA-NeMo/Megatron-Bridge@0509780
     * src/megatron/bridge/training/mixed_precision.py) */
    if (strstr(col(t, f, "precision"), "current scaling")) {
        set(l, "fp8_recipe", "tensorwise", id);
        /* the same preset sets fp8_param_gather=True (mixed_precision.py
         * at NVIDIA-NeMo/Megatron-Bridge v0.2.0, the 25.11 release) */
        set(l, "fp8_param_gather", "1", id);
    }
    /* "fp8 (mxfp8)": Bridge's bf16_with_mxfp8_mixed (fp8_recipe mxfp8,
     * fp8_param_gather with reuse_grad_buf_for_mxfp8_param_ag); "nvfp4":
     * bf16_with_nvfp4_mixed (fp4 e2m1, fp4_recipe nvfp4, fp4_param_gather:
     * fp8 with fp8_recipe nvfp4 here; NVIDIA-NeMo/Megatron-Bridge v0.4.2
     * src/megatron/bridge/training/mixed_precision.py). Only
     * blackwell-precisions.csv has them. */
    const char *prec = col(t, f, "precision");
    if (strstr(prec, "(mxfp8)") || !strcmp(prec, "nvfp4")) {
        set(l, "fp8", "1", id);
        set(l, "fp8_recipe", strstr(prec, "(mxfp8)") ? "mxfp8" : "nvfp4", id);
        set(l, "fp8_param_gather", "1", id);
    }
    /* Transformer Engine's activation offloading (Bridge's
     * cpu_offloading_num_layers) and a parameter gather left unoverlapped
     * (Bridge's disable_param_gather_overlap), as a row's notes say:
     * blackwell-precisions.csv's (tests/data/throughput/README.md) */
    const char *off = strstr(col(t, f, "notes"), "activation_offload_layers=");
    if (off) {
        off += strlen("activation_offload_layers=");
        snprintf(b, sizeof b, "%.*s", (int)strspn(off, "0123456789"), off);
        set(l, "activation_offload_layers", b, id);
    }
    if (strstr(col(t, f, "notes"), "param gather not overlapped"))
        set(l, "overlap_param_gather", "0", id);
    return l;
}

/* The software stack of a row's framework column (doc/perf.md, "The
 * software stack"): the first entry whose text the column contains. */
static const struct {
    const char *framework, *stack, *attention; /* attention: NULL = the stack's */
} stacks[] = {
    /* NeMo 24.07's performance table: the container's launcher exports
     * NVTE_FUSED_ATTN=0 to every training job ("Disable cudnn FA until we've
     * tested it more": NeMo-Framework-Launcher@8325688d, the 24.07 tag,
     * launcher_scripts/conf/config.yaml env_vars), and Transformer Engine
     * 1.9 (e79d915a, pytorch/attention.py get_attention_backend) then runs
     * its flash-attn backend, flash-attn 2.0.6-2.5.8: FlashAttention-2 */
    {"NeMo 24.07", "nemo-24.07", "fa2"},
    {"NVIDIA internal, 2024", "nemo-24.07", NULL},
    {"NeMo 1 /", "nemo-24.07", NULL}, /* dgxc's Nemotron-4 runs: NeMo 1's megatron_gpt_pretraining.py */
    {"NeMo 2.0", "nemo-25", NULL},
    {"Megatron-Bridge", "nemo-25", NULL},
    {"Megatron-Core MoE", "nemo-25", NULL},
    /* the BLOOM prequel's sweeps (sweeps.csv): BigScience's fork of those
     * days, whose fused softmax declines more shapes (FUSED_SOFTMAX_SWAPPED) */
    {"BigScience's fork of 2022-02", "megatron-deepspeed-bigscience-2022-02", NULL},
    {"DeepSpeed pipeline", "megatron-deepspeed", NULL},
    {"MegaScale (ByteDance", "megatron-lm-2022", "fa2"}, /* MegaScale runs FlashAttention-2 (its section 3.2) */
    {"Megatron-LM", "megatron-lm-2022", NULL},
    {"torchtitan (FSDP2, eager)", "torchtitan", NULL},
    {"torchtitan", "torchtitan-compile", NULL}, /* "+ torch.compile", "+ compile" */
    /* llm-foundry's benchmark sweep (scripts/train/benchmarking/sweep.sh
     * at 5e85bd62, the tables' commit) leaves submit_benchmarks.py's
     * --attn_impl at its default, "triton" */
    {"llm-foundry", "composer", "triton"},
    {"nanotron", "nanotron", NULL},
    /* Meta's stack for Llama 3 405B is PyTorch's (arXiv 2407.21783, sec.
     * 3.3: PyTorch FSDP, TORCH_NCCL_AVOID_RECORD_STREAMS, PyTorch's NCCL
     * flight recorder), and its pretraining ran before FlashAttention-3
     * (arXiv 2407.08608, July 2024) and PyTorch's cuDNN attention backend
     * (2.4, July 2024) existed: FlashAttention-2's kernels, as SDPA's */
    {"Meta internal", "middle", "fa2"},
};

/* Rows whose own run names another attention kernel than their stack's:
 * llm-foundry's large-scale table ("H100 80GB BF16 (Large Scale, >= 128
 * GPUs)") was run by scripts/train/benchmarking/sweep.py (PR #838,
 * 5e85bd62), which passes --attn_impl flash for 1b, 3b, 7b and 70b and
 * --attn_impl triton for 13b and 30b, and installs .[gpu-flash2]
 * (flash-attn 2.4.2, submit_benchmarks.py at that commit). */
static const struct {
    const char *source, *notes, *model, *attention;
} row_kernels[] = {
    {"llm-foundry-mpt", "(Large Scale, >= 128 GPUs)", "MPT-1b", "fa2"},
    {"llm-foundry-mpt", "(Large Scale, >= 128 GPUs)", "MPT-3b", "fa2"},
    {"llm-foundry-mpt", "(Large Scale, >= 128 GPUs)", "MPT-7b", "fa2"},
    {"llm-foundry-mpt", "(Large Scale, >= 128 GPUs)", "MPT-70b", "fa2"},
    /* dgxc's Nemotron-4 340B runs set NVTE_FUSED_ATTN=0 (nemotron/configure.sh
     * at 1b9bb6b): Transformer Engine's flash-attn backend, FlashAttention-2 */
    {"dgxc-benchmarking", "head dim 192", "Nemotron-4-340B", "fa2"},
    /* Nemotron-4 340B's pretraining (arXiv 2406.11704; its config
     * nemotron_340b.yaml@7c842fcd, 2024-06-17) ran a Transformer Engine
     * that refuses cuDNN's fused attention above head dim 128 (through v1.7
     * of 2024-05-31: nvte_get_fused_attn_backend, common/fused_attn/
     * fused_attn.cpp, "head_dim <= 128"; v1.8 of 2024-07-24 first admits
     * 256 on sm90 with cuDNN 9): its head dim 192 (18432 / 96) runs
     * DotProductAttention's flash-attn backend, FlashAttention-2 */
    {"nemotron4-reports", "TP8 x PP12", "Nemotron-4-340B", "fa2"},
};

static void set_row_kernel(mem4d_device *d, const char *source, const char *notes, const char *model)
{
    for (size_t i = 0; i < sizeof row_kernels / sizeof row_kernels[0]; i++)
        if (!strcmp(source, row_kernels[i].source) && strstr(notes, row_kernels[i].notes) &&
            !strcmp(model, row_kernels[i].model))
            ck_assert_int_eq(mem4d_device_set_str(d, "attention_kernel", row_kernels[i].attention), MEM4D_OK);
}

static void set_stack(mem4d_device *d, const char *framework, const char *id)
{
    for (size_t i = 0; i < sizeof stacks / sizeof stacks[0]; i++)
        if (strstr(framework, stacks[i].framework)) {
            ck_assert_msg(mem4d_device_set_str(d, "stack", stacks[i].stack) == MEM4D_OK, "row %s: stack", id);
            if (stacks[i].attention)
                ck_assert_int_eq(mem4d_device_set_str(d, "attention_kernel", stacks[i].attention), MEM4D_OK);
            return;
        }
    /* any other framework: the default, middle stack */
}

/* What a source states of its hardware, or of its numerics, beyond the
 * preset the row names and its stack's profile: torchtitan's Grand Teton
 * H100s have 96 GB of HBM2e at 2.4 TB/s
 * (benchmarks/llama3_h100_202412_torchtitan.md, "Hardware"). */
static const struct {
    const char *source, *key, *value;
} hardware[] = {
    {"torchtitan", "hbm_bandwidth", "2400000000000"},
    /* Llama 3's gradients accumulate in fp32 over the micro-batches (arXiv
     * 2407.21783, sec. 3.3.2, "Numerical stability": "we use FP32 gradient
     * accumulation during backward computation over multiple
     * micro-batches"): a bf16 weight's gradient added into an fp32 buffer,
     * nanotron's 10 bytes per weight and micro-batch (read 2 and 4, write
     * 4), where the middle profile charges autograd's 6 into a bf16 .grad */
    {"llama3-paper", "grad_accum_bytes", "10"},
    /* and its data parallelism is PyTorch's FSDP (sec. 3.3.2: "We use fully
     * sharded data parallelism (FSDP; ... zhao2023pytorch)"), which reduces
     * those fp32 gradients once a step ("reduce-scatter gradients in FP32
     * across data parallel workers in FSDP") and keeps the gathered weights
     * from the forward through the backward ("we do not reshard after
     * forward computation"), its gathers prefetched and its reduce-scatters
     * run asynchronously beside the compute ("Network-aware parallelism
     * configuration") */
    {"llama3-paper", "pytorch_fsdp", "1"},
    /* Jean Zay's A100 nodes: "8 GPUs per node ... 4 OmniPath links",
     * "Inter-node connect: Omni-Path Architecture (OPA)"
     * (bigscience-workshop/bigscience train/tr11-176B-ml/README.md,
     * "Hardware"). What NCCL reaches through one of them is measured on
     * that partition (experiments/bandwidth/all_reduce_bench-a100-n4.txt,
     * 2022-01-28, NCCL 2.10.3, 4 nodes x 8 A100 80 GB): a 4 GB all-reduce
     * at 40.5-40.8 Gbps bus bandwidth, its ring's two channels leaving each
     * node through one NIC (NET/IB/3 out, NET/IB/1 in, no GDRDMA): 5.07
     * GB/s per link, 41% of Omni-Path's 100 Gb/s. The device takes it as
     * the link's rate over comm_efficiency_ppm (0.7), 7.24 GB/s. */
    {"bloom-prequel", "nics_per_node", "4"},
    {"bloom-prequel", "nic_bandwidth", "7240000000"},
};

/* The source's hardware on the row's device: the table above, and the power
 * limit the gpu column states ("500 W": torchtitan's "default 500W power
 * limit", the same file). */
static void set_hardware(mem4d_device *d, const char *source, const char *gpu, const char *id)
{
    for (size_t i = 0; i < sizeof hardware / sizeof hardware[0]; i++)
        if (!strcmp(source, hardware[i].source))
            ck_assert_msg(mem4d_device_set_str(d, hardware[i].key, hardware[i].value) == MEM4D_OK, "row %s: %s", id,
                          hardware[i].key);
    for (const char *w = strstr(gpu, " W"); w; w = strstr(w + 1, " W")) {
        const char *n = w;
        while (n > gpu && n[-1] >= '0' && n[-1] <= '9')
            n--;
        if (n < w) {
            char b[16];
            snprintf(b, sizeof b, "%.*s", (int)(w - n), n);
            ck_assert_msg(mem4d_device_set_str(d, "power_limit_w", b) == MEM4D_OK, "row %s: power limit", id);
        }
    }
}

/* Predict one row; false when it is marked suspect or cannot be expressed. */
static double causal_tflops(const struct row *r);

static bool predict_row(const struct table *t, char **f, struct row *r)
{
    char b[64];
    snprintf(r->id, sizeof r->id, "%s", col(t, f, "id"));
    snprintf(r->source, sizeof r->source, "%s", col(t, f, "source"));
    snprintf(r->model, sizeof r->model, "%s", col(t, f, "model"));
    snprintf(r->precision, sizeof r->precision, "%.3s", col(t, f, "precision"));
    snprintf(r->status, sizeof r->status, "%s", col(t, f, "status"));
    snprintf(r->gpu, sizeof r->gpu, "%s", val(t, f, "mem4d_gpu", b, sizeof b));
    r->moe = strtoull(col(t, f, "ep"), NULL, 10) > 1 || strstr(col(t, f, "notes"), "experts=") != NULL;
    snprintf(r->sweep, sizeof r->sweep, "%s on %s %s x%s seq %s", r->model, r->precision, r->gpu,
             col(t, f, "gpus"), col(t, f, "seq"));
    snprintf(r->layout, sizeof r->layout, "tp%s cp%s pp%s vpp%s mbs%s", col(t, f, "tp"), col(t, f, "cp"),
             col(t, f, "pp"), col(t, f, "vpp"), col(t, f, "mbs"));
    if (strcmp(r->status, "suspect") == 0)
        return false;
    r->gpus = strtoull(col(t, f, "gpus"), NULL, 10);
    const char *tok = col(t, f, "meas_tokens_per_s_per_gpu");
    const char *step_s = col(t, f, "meas_step_s"), *tfl = col(t, f, "meas_tflops_per_gpu");
    r->kind = *tok || *step_s ? TOKENS : *tfl ? TFLOPS : MFU;
    r->meas = strtod(*tok ? tok : *step_s ? step_s : *tfl ? tfl : col(t, f, "meas_mfu"), NULL);
    if (!*tok && *step_s && r->meas > 0) { /* tokens/s per GPU from the step time */
        double gbs = strtod(val(t, f, "gbs", b, sizeof b), NULL), seq = strtod(val(t, f, "seq", b, sizeof b), NULL);
        r->meas = gbs * seq / (r->meas * (double)r->gpus);
    }
    ck_assert_msg(r->meas > 0, "row %s: no measurement", r->id);
    mem4d_model *m = model_of(t, f, r->id);
    mem4d_layout *l = layout_of(t, f, r->id);
    mem4d_device *d = tu_device(r->gpu);
    ck_assert_int_eq(mem4d_device_set_str(d, "gpus_per_node", val(t, f, "gpus_per_node", b, sizeof b)), MEM4D_OK);
    set_stack(d, col(t, f, "framework"), r->id);
    set_row_kernel(d, r->source, col(t, f, "notes"), r->model);
    /* overlap_p2p_comm (doc/perf.md, "The pipeline and the step"): what the
     * Megatron-Core stacks' launchers set with virtual stages (the model
     * reads it only with vpp > 1). NeMo 2's MegatronCommOverlapCallback and
     * Megatron-Bridge's comm_overlap set it for vp > 1, Megatron-LM's
     * arguments default to it since 4eeff55d (2023-10-12; the MoE model
     * zoo's scripts), NeMo 1's launcher configs name it: True in the 24.07 tag's
     * GPT-3 175B, Llama-2 13B/70B and Llama-3 70B configs and in dgxc's
     * gpt3_175b_hydra.yaml, llama3.1_405b.yaml and nemotron/configure.sh;
     * False in nemotron_340b.yaml (24.07 and the pretraining's 7c842fcd),
     * whose rows say so in their notes. Megatron-LM of 2021-23 had no such
     * overlap or left it off (--overlap-p2p-communication, 2023-05,
     * store_true): korthikanti2022, MegaScale's baseline. */
    uint64_t stack = 0;
    ck_assert_int_eq(mem4d_device_get(d, MEM4D_DEVICE_STACK, &stack), MEM4D_OK);
    const char *stack_name = mem4d_device_value_name(MEM4D_DEVICE_STACK, stack); /* nemo-24.07, nemo-25 */
    if (stack_name && !strncmp(stack_name, "nemo-", 5) && !strstr(col(t, f, "notes"), "overlap_p2p_comm False"))
        ck_assert_int_eq(mem4d_layout_set_str(l, "overlap_p2p_comm", "1"), MEM4D_OK);
    /* DeepSpeed's pipeline engine in fp16 leaves the accumulation to
     * autograd (the bf16 path's update_hp_grads, the profile's 18 bytes,
     * runs only with bf16): the fp16 .grad, 6 bytes per weight; its ZeRO-1
     * reduces those fp16 gradients (communication_data_type: the model's
     * dtype), 2 bytes per weight. */
    /* Megatron-DeepSpeed of 2021-22 (MT-NLG's, BigScience's) has no
     * sequence parallelism: its TP all-reduces the full activations and
     * every rank runs the norms, dropouts and residual adds on all of them
     * (bigscience-workshop/Megatron-DeepSpeed@99c8fe07: no
     * --sequence-parallel in megatron/arguments.py, mpu/mappings.py reduces
     * with all_reduce). */
    /* Rows whose source states that the run had no sequence parallelism
     * (Korthikanti et al. 2022, arXiv 2205.05198: its "full recompute"
     * baseline is tensor parallelism alone; "present work" is sequence
     * parallelism with selective recompute) are predicted as they ran. */
    if (strstr(col(t, f, "framework"), "DeepSpeed pipeline") ||
        strstr(col(t, f, "notes"), "WITHOUT sequence parallelism"))
        ck_assert_int_eq(mem4d_layout_set_str(l, "sequence_parallel", "0"), MEM4D_OK);
    if (!strncmp(col(t, f, "precision"), "fp16", 4) && strstr(col(t, f, "framework"), "DeepSpeed pipeline"))
    {
        ck_assert_int_eq(mem4d_device_set_str(d, "grad_accum_bytes", "6"), MEM4D_OK);
        ck_assert_int_eq(mem4d_layout_set_str(l, "main_grad_bytes", "2"), MEM4D_OK);
    }
    /* Rows whose run reduced its gradients in bf16, as their source states
     * (the notes say where): a bf16 main-gradient buffer, reduce-scattered at
     * 2 bytes a weight (tests/data/throughput/README.md) */
    if (strstr(col(t, f, "notes"), "gradients reduced in bf16"))
        ck_assert_int_eq(mem4d_layout_set_str(l, "main_grad_bytes", "2"), MEM4D_OK);
    /* and whose optimizer kept its state in bf16 (Apex's DistributedFusedAdam
     * with dtype bf16): both Adam moments 2 bytes, and the master copy as the
     * notes say, none (store_params False: the step updates the bf16 weights
     * in place) or bf16 (tests/data/throughput/README.md) */
    if (strstr(col(t, f, "notes"), "optimizer state in bf16")) {
        ck_assert_int_eq(mem4d_layout_set_str(l, "optimizer_state_bytes", "2"), MEM4D_OK);
        ck_assert_int_eq(mem4d_layout_set_str(l, "master_weight_bytes",
                                              strstr(col(t, f, "notes"), "no master copy") ? "0" : "2"),
                         MEM4D_OK);
    }
    /* and whose run computed the loss unfused (a NeMo 1 config without
     * cross_entropy_loss_fusion: Megatron-Core's default, False) */
    if (strstr(col(t, f, "notes"), "unfused cross entropy"))
        ck_assert_int_eq(mem4d_layout_set_str(l, "cross_entropy_impl", "unfused"), MEM4D_OK);
    /* and whose config kept Megatron's dropouts (a NeMo 1 GPT-3 config:
     * hidden_dropout and attention_dropout 0.1) */
    if (strstr(col(t, f, "notes"), "hidden and attention dropout")) {
        ck_assert_int_eq(mem4d_layout_set_str(l, "hidden_dropout", "1"), MEM4D_OK);
        ck_assert_int_eq(mem4d_layout_set_str(l, "attention_dropout", "1"), MEM4D_OK);
    }
    set_hardware(d, r->source, col(t, f, "gpu"), r->id);
    mem4d_report *rep = NULL;
    ck_assert_int_eq(mem4d_report_new(&rep), MEM4D_OK);
    mem4d_status st = mem4d_estimate(m, l, d, rep);
    /* Only an approx row (or a MoE row, judged by moe_rows_match_published_runs) may be one the
     * library cannot express. */
    ck_assert_msg(st == MEM4D_OK || strcmp(r->status, "approx") == 0 || r->moe, "row %s: %s", r->id,
                  mem4d_report_message(rep));
    if (st != MEM4D_OK)
        printf("%-5s %-18s %-26.26s not expressible: %s\n", r->id, r->source, r->model, mem4d_report_message(rep));
    double v = 0;
    if (st == MEM4D_OK)
    ck_assert_int_eq(mem4d_report_metric(rep, r->kind == TFLOPS ? MEM4D_METRIC_TFLOPS_PER_GPU
                                              : r->kind == MFU  ? MEM4D_METRIC_MFU
                                                                : MEM4D_METRIC_TOKENS_PER_S,
                                         &v),
                     MEM4D_OK);
    static const mem4d_metric parts[7] = {MEM4D_METRIC_COMPUTE_TIME_S, MEM4D_METRIC_TP_COMM_S,
                                          MEM4D_METRIC_CP_COMM_S,      MEM4D_METRIC_DP_COMM_S,
                                          MEM4D_METRIC_PP_COMM_S,      MEM4D_METRIC_BUBBLE_S,
                                          MEM4D_METRIC_OPTIMIZER_S};
    double step = 1, part;
    if (st == MEM4D_OK)
        ck_assert_int_eq(mem4d_report_metric(rep, MEM4D_METRIC_STEP_TIME_S, &step), MEM4D_OK);
    r->step = step;
    uint64_t params = 0;
    if (st == MEM4D_OK)
        ck_assert_int_eq(mem4d_report_info(rep, MEM4D_INFO_MODEL_PARAMS, &params), MEM4D_OK);
    r->params = (double)params;
    r->seq = strtod(val(t, f, "seq", b, sizeof b), NULL);
    r->peak = st == MEM4D_OK ? (double)mem4d_report_peak_bytes(rep) : 0;
    for (int i = 0; i < 2 && st == MEM4D_OK; i++) {
        ck_assert_int_eq(mem4d_report_metric(rep, i ? MEM4D_METRIC_STEP_TIME_HIGH_S : MEM4D_METRIC_STEP_TIME_LOW_S,
                                             &part),
                         MEM4D_OK);
        r->band[i] = part / step;
    }
    for (int i = 0; i < 7; i++)
        r->share[i] = st == MEM4D_OK && mem4d_report_metric(rep, parts[i], &part) == MEM4D_OK ? part / step : 0;
    r->pred = st != MEM4D_OK ? NAN : r->kind != TOKENS ? v : v / (double)r->gpus;
    r->err = (r->pred - r->meas) / r->meas;
    /* The series key: every column but the ones weak scaling moves. */
    snprintf(r->key, sizeof r->key, "%s %s %s %s%s tp%s cp%s pp%s vpp%s mbs%s [%s]", r->source, r->model,
             r->precision, r->gpu, r->kind == TOKENS ? "" : r->kind == TFLOPS ? " TFLOP/s" : " MFU", col(t, f, "tp"),
             col(t, f, "cp"), col(t, f, "pp"), val(t, f, "vpp", b, sizeof b), col(t, f, "mbs"), col(t, f, "framework"));
    mem4d_report_free(rep);
    if (st != MEM4D_OK) {
        mem4d_device_free(d);
        mem4d_layout_free(l);
        mem4d_model_free(m);
        return false;
    }
    r->m = m, r->l = l, r->d = d;
    if (r->moe && r->kind == TFLOPS && !strcmp(r->source, "moe-modelzoo")) { /* the source's own count */
        r->pred = causal_tflops(r);
        r->err = r->pred / r->meas - 1;
    }
    return true;
}

static size_t load(struct row *rows, const char *path)
{
    FILE *fp = fopen(path, "r");
    ck_assert_msg(fp != NULL, "cannot open %s", path ? path : "(null)");
    static char line[8192], head_line[8192];
    char *f[MAX_FIELDS];
    struct table t = {{0}, 0};
    size_t n = 0;
    while (fgets(line, sizeof line, fp)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (t.n == 0) {
            memcpy(head_line, line, sizeof line);
            t.n = tu_csv_split(head_line, t.head, MAX_FIELDS);
            continue;
        }
        ck_assert_msg(tu_csv_split(line, f, MAX_FIELDS) == t.n, "row after %zu has a different number of fields", n);
        ck_assert_uint_lt(n, MAX_ROWS);
        if (predict_row(&t, f, &rows[n]))
            n++;
    }
    fclose(fp);
    return n;
}

static void free_rows(struct row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        mem4d_device_free(rows[i].d);
        mem4d_layout_free(rows[i].l);
        mem4d_model_free(rows[i].m);
    }
}

/* Median |error| of the rows matching (status, precision, source; NULL =
 * any), or -1 when none does. */
static double median_err(const struct row *rows, size_t n, const char *status, const char *prec, const char *source,
                         size_t *count)
{
    double e[MAX_ROWS];
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!rows[i].moe && (!status || strcmp(rows[i].status, status) == 0) && (!prec || strcmp(rows[i].precision, prec) == 0) &&
            (!source || strcmp(rows[i].source, source) == 0))
            e[k++] = fabs(rows[i].err);
    *count = k;
    return k ? tu_median(e, k) : -1;
}

/* Ranks with ties averaged. */
static void ranks(const double *v, size_t n, double *r)
{
    for (size_t i = 0; i < n; i++) {
        double less = 0, same = 0;
        for (size_t j = 0; j < n; j++)
            less += v[j] < v[i], same += v[j] == v[i];
        r[i] = less + (same + 1) / 2;
    }
}

static double spearman(const double *a, const double *b, size_t n)
{
    double ra[MAX_ROWS], rb[MAX_ROWS], ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
    ranks(a, n, ra);
    ranks(b, n, rb);
    for (size_t i = 0; i < n; i++)
        ma += ra[i] / (double)n, mb += rb[i] / (double)n;
    for (size_t i = 0; i < n; i++) {
        sab += (ra[i] - ma) * (rb[i] - mb);
        saa += (ra[i] - ma) * (ra[i] - ma);
        sbb += (rb[i] - mb) * (rb[i] - mb);
    }
    return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : 1;
}

/* A weak-scaling series whose measured values span less than this share
 * has no order to reproduce: its spread is run-to-run noise (the dgxc
 * series of 70B, for one, moves by 0.2% without a trend). */
#define SERIES_MIN_SPREAD 0.02

/* Spearman of every series of >= 4 runs (MoE series: moe_rows_match_published_runs);
 * returns how many of those with an order to match fall below 0.85. */
static size_t series_orders(const struct row *rows, size_t n)
{
    bool done[MAX_ROWS] = {false};
    size_t below = 0;
    printf("\nweak-scaling series (one source varies the GPU count over >= 4 runs), tokens/s per GPU:\n");
    for (size_t i = 0; i < n; i++) {
        if (done[i] || rows[i].moe)
            continue;
        double meas[MAX_ROWS], pred[MAX_ROWS], lo = 1e300, hi = 0;
        size_t k = 0;
        for (size_t j = i; j < n; j++)
            if (!done[j] && strcmp(rows[j].key, rows[i].key) == 0) {
                done[j] = true;
                meas[k] = rows[j].meas, pred[k++] = rows[j].pred;
                lo = fmin(lo, rows[j].meas), hi = fmax(hi, rows[j].meas);
            }
        if (k < 4)
            continue;
        double rho = spearman(meas, pred, k);
        bool ordered = hi / lo - 1 >= SERIES_MIN_SPREAD;
        printf("  %-64.64s n=%zu spread %4.1f%% Spearman %+.2f%s\n", rows[i].key, k, 100 * (hi / lo - 1), rho,
               ordered ? "" : " (spread below 2%: no order to match)");
        below += ordered && rho < 0.85;
        fig("series\t%s\t%zu\t%.17g\t%.17g\t%d", rows[i].key, k, hi / lo - 1, rho, ordered);
    }
    return below;
}

/* The per-source figures of the model before issue 21 (lib/perf.c at
 * a72d516): median |error|, mean signed error, and the median residual
 * after one constant per source, over the source's rows that are not MoE.
 * nanotron's are a72d516's predictions against the measurements as they
 * are now (its runs' own tokens/s, the 80B-on-64-GPUs run's GQA, row 284
 * suspect: tests/data/throughput/README.md), over the 24 rows a72d516
 * expresses (not the 80B on 32 stages); against the SVG's MFU, which
 * counts more FLOPs than the runs did, they read 14.9%, +25.6%, 13.6%.
 * llama3-paper's are a72d516's on the layout the rows take now, the
 * paper's (V = 8, the end chunks one layer fewer: layout_of()); on the
 * 1F1B the rows took before (its bubble 31-47%) they read 4.0%, -10.1%,
 * 8.2%. */
static const struct {
    const char *source;
    double med, mean, resid;
} before_i21[] = {
    {"dgxc-benchmarking", 0.053, -0.025, 0.049},
    {"mt-nlg", 0.541, +0.550, 0.015},
    {"llama3-paper", 0.319, +0.421, 0.079},
    {"torchtitan", 0.671, +0.700, 0.103},
    {"nanotron", 0.217, +0.275, 0.166},
    {"nemo-24.07", 0.072, -0.039, 0.033},
    {"megatron-bridge", 0.059, +0.012, 0.063},
    {"korthikanti2022", 0.194, +0.213, 0.038},
    {"megascale2024", 0.213, +0.077, 0.201},
    {"nemotron4-reports", 0.135, -0.145, 0.190},
    {"llm-foundry-mpt", 0.298, +0.213, 0.198},
};

/* Sources in order of first appearance; returns their count. */
static size_t sources_of(const struct row *rows, size_t n, const char **out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < k && strcmp(out[j], rows[i].source) != 0)
            j++;
        if (j == k) {
            ck_assert_uint_lt(k, MAX_SOURCES);
            out[k++] = rows[i].source;
        }
    }
    return k;
}

struct source_fig {
    double med, mean, resid; /* median |error|, mean signed error, residual after one constant */
    size_t n;
};

/* One source's figures over its rows that are (moe) or are not (!moe) MoE;
 * res[] receives each such row's residual after the source's constant (the
 * geometric mean of predicted / measured). */
static struct source_fig source_figures(const struct row *rows, size_t n, const char *source, bool moe, double *res,
                                        size_t *nres)
{
    double e[MAX_ROWS], lr = 0;
    struct source_fig sf = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rows[i].source, source) && rows[i].moe == moe) {
            e[sf.n++] = rows[i].err;
            sf.mean += rows[i].err;
            lr += log1p(rows[i].err);
        }
    if (!sf.n)
        return sf;
    sf.mean /= (double)sf.n;
    double k = exp(lr / (double)sf.n), r[MAX_ROWS];
    for (size_t i = 0; i < sf.n; i++) {
        r[i] = fabs((1 + e[i]) / k - 1);
        res[(*nres)++] = r[i];
        e[i] = fabs(e[i]);
    }
    sf.med = tu_median(e, sf.n);
    sf.resid = tu_median(r, sf.n);
    return sf;
}

/* Per source: uncalibrated median |error|, mean signed error, residual
 * after one constant, before (the table above) and now. Returns the worst
 * median and |mean| over the non-MoE sources, the overall residual, and
 * the largest rise of a source's median over its "before" figure. */
static void per_source(const struct row *rows, size_t n, double *worst_med, double *worst_mean, double *resid,
                       double *worst_rise)
{
    const char *src[MAX_SOURCES];
    size_t ns = sources_of(rows, n, src), nres = 0, nmoe = 0;
    double res[MAX_ROWS], moe_res[MAX_ROWS];
    *worst_med = *worst_mean = *worst_rise = 0;
    printf("\nper source, uncalibrated (every row that is not suspect; MoE rows printed here, judged below):\n");
    printf("  %-18s %5s  %-24s  %-24s\n", "", "", "median |err|  mean err", "residual after 1 constant");
    printf("  %-18s %5s  %8s %7s %8s %7s  %8s %7s\n", "source", "rows", "before", "now", "before", "now", "before",
           "now");
    for (size_t s = 0; s < ns; s++) {
        for (int moe = 0; moe < 2; moe++) {
            struct source_fig f = source_figures(rows, n, src[s], moe, moe ? moe_res : res, moe ? &nmoe : &nres);
            if (!f.n)
                continue;
            size_t b = 0;
            while (b < sizeof before_i21 / sizeof before_i21[0] && strcmp(before_i21[b].source, src[s]) != 0)
                b++;
            bool known = b < sizeof before_i21 / sizeof before_i21[0] && !moe;
            printf("  %-18s %5zu  %7.1f%% %6.1f%% %+7.1f%% %+6.1f%%  %7.1f%% %6.1f%%%s\n", src[s], f.n,
                   known ? 100 * before_i21[b].med : NAN, 100 * f.med, known ? 100 * before_i21[b].mean : NAN, 100 * f.mean,
                   known ? 100 * before_i21[b].resid : NAN, 100 * f.resid, moe ? "  (MoE, printed only)" : "");
            fig("source\t%s\t%d\t%zu\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g", src[s], moe, f.n, f.med, f.mean,
                f.resid, known ? before_i21[b].med : NAN, known ? before_i21[b].mean : NAN,
                known ? before_i21[b].resid : NAN);
            if (moe)
                continue;
            *worst_med = fmax(*worst_med, f.med);
            *worst_mean = fmax(*worst_mean, fabs(f.mean));
            if (known)
                *worst_rise = fmax(*worst_rise, f.med - before_i21[b].med);
        }
    }
    *resid = nres ? tu_median(res, nres) : 0;
    printf("  residual after one constant per source, median over %zu rows: %.1f%%\n", nres, 100 * *resid);
    fig("residual\t%zu\t%.17g", nres, *resid);
}

/* Sweeps: rows of one model on one cluster (GPU, GPU count, sequence,
 * precision) over different layouts. Prints for those of >= 3 layouts the
 * Spearman of predicted against measured order, the measured-fastest and
 * the predicted-fastest run, and whether the measured-fastest run's
 * prediction lies inside the band of the predicted-fastest one's (the
 * tokens/s band `mem4d plan` prints: layouts inside it are equivalent).
 * Returns the smallest Spearman of those of >= 5 layouts (1 when none);
 * *judged counts them and *outside those whose fastest is outside. */
/* The band between layouts of one job that the search compares with
 * (lib/perf.c BAND_REL_*, m4d_speed_band_relative()): the series
 * calibration's percentiles, which step_time_matches_published_runs checks
 * against what it measures. */
#define REL_LOW 0.969
#define REL_HIGH 1.084

/* Where `mem4d plan` lists a sweep's k runs (idx[] into rows): the runs
 * whose band between layouts overlaps the fastest's first (lib/search.c,
 * tie_break), by fewer model-parallel GPUs, then speed, then less peak
 * memory; then the others by speed. score[] is higher for a run listed
 * earlier. */
static void plan_order(const struct row *rows, const size_t *idx, const double *mp, size_t k, double *score)
{
    double lo = REL_LOW, hi = REL_HIGH, best = 0;
    for (size_t a = 0; a < k; a++)
        best = fmax(best, rows[idx[a]].pred);
    for (size_t a = 0; a < k; a++) {
        const struct row *r = &rows[idx[a]];
        if (r->pred * hi < best * lo) { /* not equivalent: by speed, after every equivalent one */
            score[a] = r->pred;
            continue;
        }
        double before = 0; /* equivalent runs the tie-break lists before this one */
        for (size_t b = 0; b < k; b++) {
            const struct row *o = &rows[idx[b]];
            if (b == a || o->pred * hi < best * lo)
                continue;
            before += mp[b] < mp[a] || (mp[b] == mp[a] && (o->pred > r->pred || (o->pred == r->pred && o->peak < r->peak)));
        }
        score[a] = 1e12 - before;
    }
}

/* The pairs of a sweep's k runs (idx[] into rows) whose predicted order is
 * the reverse of the measured one, the three farthest apart (measured gap
 * plus predicted gap): what costs the Spearman most, and where a missing
 * mechanism shows first. */
static void misordered_pairs(const struct row *rows, const size_t *idx, size_t k)
{
    size_t worst[3][2] = {{0}};
    double gap[3] = {0, 0, 0};
    size_t n = 0;
    for (size_t a = 0; a < k; a++)
        for (size_t b = a + 1; b < k; b++) {
            const struct row *x = &rows[idx[a]], *y = &rows[idx[b]];
            double dm = x->meas / y->meas - 1, dp = x->pred / y->pred - 1;
            if (dm * dp >= 0)
                continue;
            n++;
            double g = fabs(dm) + fabs(dp);
            for (int q = 0; q < 3; q++)
                if (g > gap[q]) {
                    for (int r = 2; r > q; r--)
                        gap[r] = gap[r - 1], worst[r][0] = worst[r - 1][0], worst[r][1] = worst[r - 1][1];
                    gap[q] = g, worst[q][0] = idx[a], worst[q][1] = idx[b];
                    break;
                }
        }
    printf("    %zu of %zu pairs misordered%s\n", n, k * (k - 1) / 2, n ? "; the farthest apart:" : "");
    for (int q = 0; q < 3 && q < (int)n; q++) {
        const struct row *x = &rows[worst[q][0]], *y = &rows[worst[q][1]];
        printf("      %s %s vs %s %s: measured %+.1f%%, predicted %+.1f%%\n", x->id, x->layout, y->id, y->layout,
               100 * (x->meas / y->meas - 1), 100 * (x->pred / y->pred - 1));
    }
}

static double sweeps(const struct row *rows, size_t n, size_t *judged, size_t *outside)
{
    bool done[MAX_ROWS] = {false};
    double worst = 1;
    *judged = *outside = 0;
    printf("\nsweeps (one model on one cluster: GPU, GPU count, sequence, precision; >= 3 layouts):\n");
    for (size_t i = 0; i < n; i++) {
        if (done[i] || rows[i].moe)
            continue;
        double meas[MAX_ROWS], pred[MAX_ROWS], rule[MAX_ROWS], mp[MAX_ROWS], plan[MAX_ROWS];
        size_t k = 0, layouts = 0, fm = i, fp = i, idx[MAX_ROWS];
        for (size_t j = i; j < n; j++)
            if (!done[j] && !rows[j].moe && !strcmp(rows[j].sweep, rows[i].sweep)) {
                bool seen = false;
                for (size_t q = i; q < j && !seen; q++)
                    seen = !rows[q].moe && !strcmp(rows[q].sweep, rows[i].sweep) &&
                           !strcmp(rows[q].layout, rows[j].layout);
                layouts += !seen;
                done[j] = true;
                unsigned tp = 0, cp = 0, pp = 0, mbs = 0;
                sscanf(rows[j].layout, "tp%u cp%u pp%u vpp%*s mbs%u", &tp, &cp, &pp, &mbs);
                rule[k] = -1e4 * tp * cp * pp + mbs; /* fewest model-parallel GPUs, then the largest mbs */
                mp[k] = (double)tp * cp * pp, idx[k] = j;
                meas[k] = rows[j].meas, pred[k++] = rows[j].pred;
                fm = rows[j].meas > rows[fm].meas ? j : fm;
                fp = rows[j].pred > rows[fp].pred ? j : fp;
            }
        if (layouts < 3)
            continue;
        double rho = spearman(meas, pred, k);
        /* the band of tokens/s is the prediction over the step's band */
        bool inside = rows[fm].pred >= rows[fp].pred / rows[fp].band[1];
        plan_order(rows, idx, mp, k, plan);
        printf("  %-56.56s %zu runs, %zu layouts, Spearman %+.2f%s\n", rows[i].sweep, k, layouts, rho,
               layouts >= 5 ? "" : " (fewer than 5 layouts: printed only)");
        printf("    the order mem4d plan lists (band-equivalent ones by model-parallel GPUs, then speed): %+.2f; the rule "
               "'fewest model-parallel GPUs, then the largest micro-batch': %+.2f\n",
               spearman(meas, plan, k), spearman(meas, rule, k));
        printf("    measured fastest %s %s (%.1f, predicted %.1f); predicted fastest %s %s (%.1f, band %.1f-%.1f): %s\n",
               rows[fm].id, rows[fm].layout, rows[fm].meas, rows[fm].pred, rows[fp].id, rows[fp].layout, rows[fp].pred,
               rows[fp].pred / rows[fp].band[1], rows[fp].pred / rows[fp].band[0],
               inside ? "inside its band" : "OUTSIDE its band");
        misordered_pairs(rows, idx, k);
        fig("sweep\t%s\t%s\t%zu\t%zu\t%.17g\t%.17g\t%.17g\t%d", rows[i].source, rows[i].sweep, k, layouts, rho,
            spearman(meas, plan, k), spearman(meas, rule, k), inside);
        if (layouts >= 5) {
            ++*judged;
            *outside += !inside;
            worst = fmin(worst, rho);
        }
    }
    if (!*judged)
        printf("  no sweep of the data has >= 5 layouts of one model on one cluster\n");
    return worst;
}

/* Append to a bounded buffer. */
static void add(char *buf, size_t size, size_t *used, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static void add(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, size - *used, fmt, ap);
    va_end(ap);
    ck_assert(n >= 0 && (size_t)n < size - *used);
    *used += (size_t)n;
}

static uint64_t mget(const mem4d_model *m, mem4d_model_param k)
{
    uint64_t v = 0;
    ck_assert_int_eq(mem4d_model_get(m, k, &v), MEM4D_OK);
    return v;
}

static uint64_t lget(const mem4d_layout *l, mem4d_layout_param k)
{
    uint64_t v = 0;
    ck_assert_int_eq(mem4d_layout_get(l, k, &v), MEM4D_OK);
    return v;
}

/* A Megatron-LM log of a row's job, as Megatron prints it: the arguments
 * block (dest names, dots to column 48) and two iteration lines at the
 * measured step time. */
static size_t megatron_log(const struct row *r, double step_s, char *buf, size_t size)
{
    size_t used = 0;
    const mem4d_model *m = r->m;
    const mem4d_layout *l = r->l;
    char v[64];
    add(buf, size, &used, "------------------------ arguments ------------------------\n");
#define ARG(name, ...)                                                          \
    do {                                                                        \
        snprintf(v, sizeof v, __VA_ARGS__);                                     \
        add(buf, size, &used, "  %s %.*s %s\n", name, (int)(48 - strlen(name)), \
            "................................................", v);             \
    } while (0)
    ARG("add_bias_linear", "%s", mget(m, MEM4D_MODEL_LINEAR_BIAS) ? "True" : "False");
    /* the row's dropouts (Megatron-LM defaults both to 0.1: a log that left
     * them out would read as on) */
    ARG("attention_dropout", "%s", lget(l, MEM4D_LAYOUT_ATTENTION_DROPOUT) ? "0.1" : "0.0");
    ARG("bf16", "True");
    uint64_t first = lget(l, MEM4D_LAYOUT_FIRST_STAGE_LAYERS), last = lget(l, MEM4D_LAYOUT_LAST_STAGE_LAYERS);
    if (first)
        ARG("decoder_first_pipeline_num_layers", "%llu", (unsigned long long)first);
    if (last)
        ARG("decoder_last_pipeline_num_layers", "%llu", (unsigned long long)last);
    /* the embedding and the loss counted as pipeline layers (a virtual split's shorter first and last chunk) */
    if (lget(l, MEM4D_LAYOUT_FIRST_CHUNK_FEWER_LAYERS))
        ARG("account_for_embedding_in_pipeline_split", "True");
    if (lget(l, MEM4D_LAYOUT_LAST_CHUNK_FEWER_LAYERS))
        ARG("account_for_loss_in_pipeline_split", "True");
    ARG("context_parallel_size", "%llu", (unsigned long long)lget(l, MEM4D_LAYOUT_CP));
    /* the row's cross entropy as its layout or its stack's profile has it (doc/perf.md,
     * "Cross entropy"): megatron-lm-2022 and megatron-deepspeed unfused, nemo-24.07 native
     * (Megatron-Core 0.8), the other Megatron profiles' 12 nearest Transformer Engine's */
    uint64_t ce = lget(l, MEM4D_LAYOUT_CROSS_ENTROPY_IMPL), stack = 0;
    ck_assert_int_eq(mem4d_device_get(r->d, MEM4D_DEVICE_STACK, &stack), MEM4D_OK);
    if (ce == 0)
        ce = stack == 1 || stack == 2 ? 1 : stack == 3 ? 2 : 3;
    if (ce != 1) {
        ARG("cross_entropy_fusion_impl", "%s", ce == 2 ? "native" : "te");
        ARG("cross_entropy_loss_fusion", "True");
    }
    ARG("ffn_hidden_size", "%llu", (unsigned long long)mget(m, MEM4D_MODEL_FFN_HIDDEN_SIZE));
    if (lget(l, MEM4D_LAYOUT_FP8))
        ARG("fp8", "hybrid");
    ARG("global_batch_size", "%llu", (unsigned long long)lget(l, MEM4D_LAYOUT_GLOBAL_BATCH));
    if (lget(l, MEM4D_LAYOUT_MAIN_GRAD_BYTES) == 2)
        ARG("grad_reduce_in_bf16", "True");
    /* a bf16 optimizer state through Megatron's precision-aware optimizer
     * (main_params_dtype has no bf16 and no "none": a bf16 master copy reads
     * as fp16's 2 bytes, none as fp32's 4) */
    if (lget(l, MEM4D_LAYOUT_OPT_STATE_BYTES) == 2) {
        ARG("use_precision_aware_optimizer", "True");
        ARG("exp_avg_dtype", "torch.bfloat16");
        ARG("exp_avg_sq_dtype", "torch.bfloat16");
        ARG("main_params_dtype", "%s", lget(l, MEM4D_LAYOUT_MASTER_WEIGHT_BYTES) == 2 ? "torch.float16" : "torch.float32");
    }
    uint64_t a = mget(m, MEM4D_MODEL_NUM_HEADS), k = mget(m, MEM4D_MODEL_NUM_KV_HEADS);
    if (k && k != a)
        ARG("group_query_attention", "True");
    ARG("hidden_dropout", "%s", lget(l, MEM4D_LAYOUT_HIDDEN_DROPOUT) ? "0.1" : "0.0");
    ARG("hidden_size", "%llu", (unsigned long long)mget(m, MEM4D_MODEL_HIDDEN_SIZE));
    ARG("max_position_embeddings", "%llu", (unsigned long long)lget(l, MEM4D_LAYOUT_SEQ_LENGTH));
    ARG("micro_batch_size", "%llu", (unsigned long long)lget(l, MEM4D_LAYOUT_MICRO_BATCH));
    ARG("normalization", "%s", mget(m, MEM4D_MODEL_NORM) ? "LayerNorm" : "RMSNorm");
    ARG("num_attention_heads", "%llu", (unsigned long long)a);
    ARG("num_layers", "%llu", (unsigned long long)mget(m, MEM4D_MODEL_NUM_LAYERS));
    if (k && k != a)
        ARG("num_query_groups", "%llu", (unsigned long long)k);
    if (lget(l, MEM4D_LAYOUT_OVERLAP_GRAD_REDUCE))
        ARG("overlap_grad_reduce", "True");
    ARG("overlap_p2p_comm", "%s", lget(l, MEM4D_LAYOUT_OVERLAP_P2P_COMM) ? "True" : "False");
    if (lget(l, MEM4D_LAYOUT_OVERLAP_PARAM_GATHER) && lget(l, MEM4D_LAYOUT_DIST_OPT) &&
        lget(l, MEM4D_LAYOUT_ZERO_STAGE) != 3)
        ARG("overlap_param_gather", "True");
    ARG("pipeline_model_parallel_size", "%llu", (unsigned long long)lget(l, MEM4D_LAYOUT_PP));
    ARG("position_embedding_type", "%s",
        mem4d_model_value_name(MEM4D_MODEL_POSITION_EMBEDDING, mget(m, MEM4D_MODEL_POSITION_EMBEDDING)));
    uint64_t rc = lget(l, MEM4D_LAYOUT_RECOMPUTE);
    if (rc)
        ARG("recompute_granularity", "%s", rc == 1 ? "selective" : "full");
    if (rc == 2) {
        ARG("recompute_method", "uniform");
        ARG("recompute_num_layers", "1");
    }
    ARG("seq_length", "%llu", (unsigned long long)lget(l, MEM4D_LAYOUT_SEQ_LENGTH));
    uint64_t tp = lget(l, MEM4D_LAYOUT_TP);
    if (tp > 1)
        ARG("sequence_parallel", "True");
    if (mget(m, MEM4D_MODEL_GATED_MLP))
        ARG("swiglu", "True");
    ARG("tensor_model_parallel_size", "%llu", (unsigned long long)tp);
    if (lget(l, MEM4D_LAYOUT_TP_COMM_OVERLAP))
        ARG("tp_comm_overlap", "True");
    if (!mget(m, MEM4D_MODEL_TIED_EMBEDDINGS))
        ARG("untie_embeddings_and_output_weights", "True");
    if (lget(l, MEM4D_LAYOUT_ZERO_STAGE) == 3)
        ARG("use_torch_fsdp2", "True");
    else if (lget(l, MEM4D_LAYOUT_DIST_OPT))
        ARG("use_distributed_optimizer", "True");
    /* --use-flash-attn where the row runs fused attention: a run on the
     * Megatron-LM of 2022 or Megatron-DeepSpeed (their stacks' softmax
     * attention) passed none, and its log leaves the attention to the stack
     * (lib/import_megatron.c, apply_attention) */
    uint64_t kernel = 0;
    ck_assert_int_eq(mem4d_device_get(r->d, MEM4D_DEVICE_ATTENTION_KERNEL, &kernel), MEM4D_OK);
    if (kernel ? kernel != 5 : stack != 1 && stack != 2 && stack != 9)
        ARG("use_flash_attn", "True");
    uint64_t vpp = lget(l, MEM4D_LAYOUT_VPP);
    if (vpp > 1)
        ARG("num_virtual_stages_per_pipeline_rank", "%llu", (unsigned long long)vpp);
    ARG("vocab_size", "%llu", (unsigned long long)mget(m, MEM4D_MODEL_VOCAB_SIZE));
    ARG("world_size", "%llu", (unsigned long long)r->gpus);
#undef ARG
    add(buf, size, &used, "-------------------- end of arguments ---------------------\n");
    for (int i = 1; i <= 2; i++)
        add(buf, size, &used,
            " [2026-01-01 00:00:0%d.000000] iteration %8d/%8d | consumed samples: %12llu | "
            "elapsed time per iteration (ms): %.1f | global batch size: %5llu |\n",
            i, i, 2, (unsigned long long)(i * lget(l, MEM4D_LAYOUT_GLOBAL_BATCH)), step_s * 1000,
            (unsigned long long)lget(l, MEM4D_LAYOUT_GLOBAL_BATCH));
    return used;
}

/* nanotron's human_format(): three significant digits, then K, M, B, ...
 * for each factor of 1000 (src/nanotron/logging/base.py). */
static void human_format(double x, char *buf, size_t size)
{
    static const char *const sizes[] = {"", "K", "M", "B", "T", "P", "E"};
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%.3g", x);
    x = strtod(tmp, NULL);
    int k = 0;
    while (x >= 1000 && k < 6)
        x /= 1000, k++;
    snprintf(tmp, sizeof tmp, "%f", x);
    char *e = tmp + strlen(tmp);
    while (e > tmp && e[-1] == '0')
        *--e = '\0';
    if (e > tmp && e[-1] == '.')
        *--e = '\0';
    snprintf(buf, size, "%s%s", tmp, sizes[k]);
}

/* A torchtitan log of a row's job at the measured step: its metrics lines
 * as torchtitan/components/metrics.py (MetricsProcessor.log) prints them,
 * colours included; tps is tokens per second per GPU. */
static size_t torchtitan_log(const struct row *r, double step_s, char *buf, size_t size)
{
    size_t used = 0;
    double tps = (double)lget(r->l, MEM4D_LAYOUT_GLOBAL_BATCH) * (double)lget(r->l, MEM4D_LAYOUT_SEQ_LENGTH) /
                 (step_s * (double)r->gpus);
    char t[32];
    snprintf(t, sizeof t, "%.0f", tps);
    char grouped[48];
    size_t n = strlen(t), g = 0;
    for (size_t i = 0; i < n; i++) {
        if (i && (n - i) % 3 == 0)
            grouped[g++] = ',';
        grouped[g++] = t[i];
    }
    grouped[g] = '\0';
    add(buf, size, &used, "[rank0]:[titan] 2026-01-01 00:00:00,000 - root - INFO - Training starts at step 1\n");
    for (int i = 1; i <= 3; i++)
        add(buf, size, &used,
            "[rank0]:[titan] 2026-01-01 00:00:%02d,000 - root - INFO - \033[31mstep: %2d  \033[32mloss: %8.5f  "
            "\033[33mgrad_norm: %7.4f  \033[36mmemory: %5.2fGiB(%.2f%%)  \033[34mtps: %s  "
            "\033[36mtflops: %.2f  \033[35mmfu: %.2f%%\033[39m\n",
            10 * i, 10 * i, 8.0 / i, 1.0, 60.0, 63.2, grouped, 400.0, 40.0);
    return used;
}

/* A nanotron log of a row's job at the measured step: its iteration lines
 * as src/nanotron/logging/base.py (LoggerWriter.add_scalars_from_list) and
 * trainer.py (train_step_logs) print them. */
static size_t nanotron_log(const struct row *r, double step_s, char *buf, size_t size)
{
    size_t used = 0;
    double tokens = (double)lget(r->l, MEM4D_LAYOUT_GLOBAL_BATCH) * (double)lget(r->l, MEM4D_LAYOUT_SEQ_LENGTH);
    char ms[32], tps[32], tpg[32], gbs[32], cons[32];
    human_format(step_s * 1000, ms, sizeof ms);
    human_format(tokens / step_s, tps, sizeof tps);
    human_format(tokens / step_s / (double)r->gpus, tpg, sizeof tpg);
    human_format(tokens, gbs, sizeof gbs);
    for (int i = 1; i <= 3; i++) {
        human_format(tokens * i, cons, sizeof cons);
        add(buf, size, &used,
            "\033[2;3m01/01 00:00:%02d [INFO|DP=0|PP=0|TP=0]\033[0m: iteration: %d / 100 | consumed_tokens: %s | "
            "time_per_iteration_ms: %s | tokens_per_sec: %s | tokens_per_sec_per_gpu: %s | global_batch_size: %s | "
            "lm_loss: 11.9 | lr: 0.0003 | model_tflops_per_gpu: 400 | eta: 0:10:00\n",
            i, i, cons, ms, tps, tpg, gbs);
    }
    return used;
}

/* Read a row's run, at the measured step, into a calibration through a log
 * in its framework's own format; a framework without a reader (Meta's
 * internal stack, llm-foundry/Composer) gives the measured step without a
 * log. */
static void add_row_log(mem4d_calibration *c, const struct row *r, double meas_step)
{
    static char log[16384];
    mem4d_status st;
    if (!strcmp(r->source, "llama3-paper") || !strcmp(r->source, "llm-foundry-mpt"))
        st = mem4d_calibration_add_measurement(c, r->m, r->l, MEM4D_CALIBRATION_MEASURED_STEP_S, meas_step);
    else if (!strcmp(r->source, "torchtitan"))
        st = mem4d_calibration_add_log(c, MEM4D_LOG_TORCHTITAN, log, torchtitan_log(r, meas_step, log, sizeof log),
                                       r->m, r->l);
    else if (!strcmp(r->source, "nanotron"))
        st = mem4d_calibration_add_log(c, MEM4D_LOG_NANOTRON, log, nanotron_log(r, meas_step, log, sizeof log), r->m,
                                       r->l);
    else
        st = mem4d_calibration_add_megatron_log(c, log, megatron_log(r, meas_step, log, sizeof log), 0, NULL, 0);
    ck_assert_msg(st == MEM4D_OK, "row %s: %s", r->id, mem4d_calibration_message(c));
}

/* The q-quantile of v[0..n), sorted in place. */
static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(double *v, size_t n, double q)
{
    qsort(v, n, sizeof *v, cmp_d);
    size_t i = (size_t)(q * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

/* Do rows i and j share a calibration: the same source, GPU, precision and
 * stack (by_series false), or the same weak-scaling series (by_series
 * true)? The stack is the row's device, every key but gpus_per_node (the
 * profile its framework column maps to, its attention kernel, its
 * hardware): a calibrated device file is carried to the jobs of the stack
 * it was fitted on, as a run of MegaScale's stack (FlashAttention-2) is
 * not predicted on the device of its Megatron-LM baseline, nor a compiled
 * torchtitan run on the eager one's. */
static bool same_group(const struct row *a, const struct row *b, bool by_series)
{
    if (by_series)
        return !strcmp(a->key, b->key);
    if (strcmp(a->source, b->source) || strcmp(a->gpu, b->gpu) || strcmp(a->precision, b->precision))
        return false;
    for (size_t k = 0; k < mem4d_device_param_count(); k++) {
        uint64_t x = 0, y = 0;
        if (k == MEM4D_DEVICE_GPUS_PER_NODE)
            continue;
        mem4d_device_get(a->d, (mem4d_device_param)k, &x);
        mem4d_device_get(b->d, (mem4d_device_param)k, &y);
        if (x != y)
            return false;
    }
    return true;
}

struct band_check {
    double covered; /* share of the runs whose measured step falls in the band */
    double q05, q95; /* 5th and 95th percentile of measured / predicted step */
    size_t n;
    double lib[2]; /* the band the library gave the first run (every run's) */
};

/* measured / predicted step of runs[0..n) against their bands. */
static struct band_check band_check(double *ratio, const double (*band)[2], size_t n)
{
    struct band_check b = {0, 0, 0, n, {n ? band[0][0] : 0, n ? band[0][1] : 0}};
    size_t in = 0;
    for (size_t i = 0; i < n; i++)
        in += ratio[i] >= band[i][0] && ratio[i] <= band[i][1];
    b.covered = n ? (double)in / (double)n : 0;
    b.q05 = quantile(ratio, n, 0.05);
    b.q95 = quantile(ratio, n, 0.95);
    return b;
}

/* Print the median |error| of the calibrated runs (err[] not NAN) of one
 * source, or of every source when `source` is NULL, and of their exact
 * runs; returns the former, *exact the latter (-1 when there is none). */
static double cal_line(const struct row *rows, size_t n, const double *err, const char *source, double *exact,
                       int mode)
{
    double e[MAX_ROWS], ex[MAX_ROWS], u[MAX_ROWS]; /* u: the same runs' uncalibrated |error| */
    size_t k = 0, kx = 0;
    for (size_t i = 0; i < n; i++)
        if ((!source || !strcmp(rows[i].source, source)) && !isnan(err[i])) {
            u[k] = fabs(rows[i].err);
            e[k++] = fabs(err[i]);
            if (!strcmp(rows[i].status, "exact"))
                ex[kx++] = fabs(err[i]);
        }
    *exact = kx ? tu_median(ex, kx) : -1;
    if (!k)
        return -1;
    double med = tu_median(e, k);
    printf("  %-18s median |error| %5.1f%% (%zu runs)", source ? source : "every source", 100 * med, k);
    if (kx)
        printf(", exact runs %5.1f%% (%zu)", 100 * *exact, kx);
    printf("; uncalibrated %5.1f%%\n", 100 * tu_median(u, k));
    fig("cal\t%d\t%s\t%zu\t%.17g\t%zu\t%.17g", mode, source ? source : "*", k, med, kx, *exact);
    return med;
}

/* A device calibrated on row r from a log of that run in its framework's
 * format (the caller frees it). */
static mem4d_device *calibrate_on(const struct row *r)
{
    mem4d_calibration *c = NULL;
    ck_assert_int_eq(mem4d_calibration_new(&c), MEM4D_OK);
    /* The measured step: the prediction scaled by predicted/measured
     * throughput (tokens/s and TFLOP/s are both inverse to it). */
    add_row_log(c, r, r->step * r->pred / r->meas);
    mem4d_device *d = NULL;
    ck_assert_int_eq(mem4d_device_clone(r->d, &d), MEM4D_OK);
    ck_assert_msg(mem4d_calibration_fit(c, d) == MEM4D_OK, "row %s: %s", r->id, mem4d_calibration_message(c));
    if (getenv("MEM4D_TRACE_CAL")) {
        printf("  row %s: fitted:", r->id);
        for (size_t q = 0; q < 8; q++) {
            mem4d_device_param key;
            int fitted;
            if (mem4d_calibration_constant(c, q, &key, &fitted) == MEM4D_OK && fitted) {
                uint64_t v0 = 0, v1 = 0;
                mem4d_device_get(r->d, key, &v0);
                mem4d_device_get(d, key, &v1);
                printf(" %s %llu -> %llu", mem4d_device_param_name(key), (unsigned long long)v0, (unsigned long long)v1);
            }
        }
        printf("\n");
    }
    mem4d_calibration_free(c);
    return d;
}

/* How far row b is from row a as a job to calibrate for: model size, then
 * sequence, then GPU count (log ratios), compared in that order. */
static int nearer(const struct row *a, const struct row *b, const struct row *c)
{
    const double db[3] = {fabs(log(b->params / a->params)), fabs(log(b->seq / a->seq)),
                          fabs(log((double)b->gpus / (double)a->gpus))};
    const double dc[3] = {fabs(log(c->params / a->params)), fabs(log(c->seq / a->seq)),
                          fabs(log((double)c->gpus / (double)a->gpus))};
    for (int k = 0; k < 3; k++)
        if (fabs(db[k] - dc[k]) > 1e-9)
            return db[k] < dc[k];
    return 0;
}

/* What a calibration is carried over: from the first run of each (source,
 * GPU, precision, stack) to the others, from the first run of each
 * weak-scaling series to the others, or to each run from the run of its
 * (source, GPU, precision, stack) nearest to it (`nearer`). */
enum cal_mode { CAL_FIRST, CAL_SERIES, CAL_NEAREST };

/* Calibrate as `mode` says, then predict the other runs; returns the
 * largest per-source median |error| of the exact runs, *all the median
 * |error| of every run predicted, and the band check of those runs (all,
 * and the exact ones). */
static double calibrated(struct row *rows, size_t n, enum cal_mode mode, double *all, struct band_check *bc,
                         struct band_check *bcx)
{
    static double ratio[MAX_ROWS], band[MAX_ROWS][2], xratio[MAX_ROWS], xband[MAX_ROWS][2];
    size_t nb = 0, nx = 0;
    const char *sources[MAX_SOURCES];
    size_t ns = sources_of(rows, n, sources);
    bool used[MAX_ROWS] = {false};
    double err[MAX_ROWS];
    size_t on[MAX_ROWS]; /* the run each run is predicted from; itself: none */
    mem4d_report *rep = NULL;
    ck_assert_int_eq(mem4d_report_new(&rep), MEM4D_OK);
    for (size_t i = 0; i < n; i++) {
        err[i] = NAN, on[i] = i;
        if (rows[i].moe) /* the log writer has no MoE arguments */
            used[i] = true;
    }
    for (size_t i = 0; i < n; i++) {
        if (rows[i].moe)
            continue;
        if (mode == CAL_NEAREST) {
            for (size_t k = 0; k < n; k++)
                if (k != i && !rows[k].moe && same_group(&rows[i], &rows[k], false) &&
                    (on[i] == i || nearer(&rows[i], &rows[k], &rows[on[i]])))
                    on[i] = k;
        } else if (!used[i]) {
            used[i] = true;
            for (size_t j = i + 1; j < n; j++)
                if (!used[j] && same_group(&rows[i], &rows[j], mode == CAL_SERIES))
                    used[j] = true, on[j] = i;
        }
    }
    for (size_t i = 0; i < n; i++) {
        bool calibrates = false; /* some other run is predicted from it */
        for (size_t j = 0; j < n && !calibrates; j++)
            calibrates = j != i && on[j] == i;
        if (!calibrates)
            continue;
        mem4d_device *d = calibrate_on(&rows[i]);
        for (size_t j = 0; j < n; j++) {
            if (j == i || on[j] != i)
                continue;
            uint64_t gpn = 0;
            ck_assert_int_eq(mem4d_device_get(rows[j].d, MEM4D_DEVICE_GPUS_PER_NODE, &gpn), MEM4D_OK);
            ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_GPUS_PER_NODE, gpn), MEM4D_OK);
            ck_assert_int_eq(mem4d_estimate(rows[j].m, rows[j].l, d, rep), MEM4D_OK);
            double step;
            ck_assert_int_eq(mem4d_report_metric(rep, MEM4D_METRIC_STEP_TIME_S, &step), MEM4D_OK);
            err[j] = rows[j].step / step * (1 + rows[j].err) - 1; /* throughput scales as 1/step */
            ratio[nb] = 1 + err[j]; /* measured over predicted step */
            double lo, hi;
            ck_assert_int_eq(mem4d_report_metric(rep, MEM4D_METRIC_STEP_TIME_LOW_S, &lo), MEM4D_OK);
            ck_assert_int_eq(mem4d_report_metric(rep, MEM4D_METRIC_STEP_TIME_HIGH_S, &hi), MEM4D_OK);
            band[nb][0] = lo / step, band[nb][1] = hi / step;
            if (!strcmp(rows[j].status, "exact")) {
                xratio[nx] = ratio[nb];
                xband[nx][0] = band[nb][0], xband[nx][1] = band[nb][1];
                nx++;
            }
            nb++;
            if (getenv("MEM4D_TRACE_CAL"))
                printf("    %s calibrated on %s: %+.1f%% (uncalibrated %+.1f%%)\n", rows[j].id, rows[i].id,
                       100 * err[j], 100 * rows[j].err);
        }
        mem4d_device_free(d);
    }
    mem4d_report_free(rep);
    *bc = band_check(ratio, (const double (*)[2])band, nb);
    *bcx = band_check(xratio, (const double (*)[2])xband, nx);
    static const char *const what[] = {
        "the first run of each (source, GPU, precision, stack)",
        "the first run of each weak-scaling series",
        "the run of its (source, GPU, precision, stack) nearest in model size, then sequence, then GPU count",
    };
    printf("\nafter calibrating on %s (through a log in its framework's format), the other runs:\n", what[mode]);
    double worst = 0, medx;
    for (size_t s = 0; s < ns; s++) {
        cal_line(rows, n, err, sources[s], &medx, (int)mode);
        if (medx > worst)
            worst = medx;
    }
    *all = cal_line(rows, n, err, NULL, &medx, (int)mode); /* the issue's figure: one median over every calibrated run */
    return worst;
}

START_TEST(step_time_matches_published_runs)
{
    static struct row rows[MAX_ROWS];
    size_t n = load(rows, csv_path), k;
    ck_assert_uint_gt(n, 0);
    printf("%-5s %-18s %-26s %-4s %-6s %6s %11s %11s %8s  %s\n", "id", "source", "model", "prec", "status", "gpus",
           "measured", "predicted", "error", "step: compute tp cp dp pp bubble optimizer (%)");
    for (size_t i = 0; i < n; i++)
        printf("%-5s %-18s %-26.26s %-4s %-6s %6llu %11.1f %11.1f %+7.1f%%  %3.0f %3.0f %3.0f %3.0f %3.0f %3.0f %3.0f%s\n",
               rows[i].id, rows[i].source, rows[i].model, rows[i].precision, rows[i].status,
               (unsigned long long)rows[i].gpus, rows[i].meas, rows[i].pred, 100 * rows[i].err,
               100 * rows[i].share[0], 100 * rows[i].share[1], 100 * rows[i].share[2], 100 * rows[i].share[3],
               100 * rows[i].share[4], 100 * rows[i].share[5], 100 * rows[i].share[6],
               rows[i].kind == TFLOPS ? " (TFLOP/s per GPU)" : rows[i].kind == MFU ? " (MFU)" : "");
    static const char *const precs[] = {"bf1", "fp8"}, *const stats[] = {"exact", "approx"};
    printf("\nmedian |error| of tokens/s per GPU by status and precision (rows that are not MoE):\n");
    for (int st = 0; st < 2; st++)
        for (int p = 0; p < 2; p++) {
            double all = median_err(rows, n, stats[st], precs[p], NULL, &k);
            if (k)
                printf("  %-6s %-4s %6.1f%% (%zu rows)\n", stats[st], p ? "fp8" : "bf16", 100 * all, k);
            if (k)
                fig("status\t%s\t%s\t%zu\t%.17g", stats[st], p ? "fp8" : "bf16", k, all);
        }
    double bf16 = median_err(rows, n, "exact", "bf1", NULL, &k);
    double fp8 = median_err(rows, n, "exact", "fp8", NULL, &k);
    double worst_med, worst_mean, resid, rise;
    per_source(rows, n, &worst_med, &worst_mean, &resid, &rise);
    size_t judged;
    size_t outside;
    double rho_sweep = sweeps(rows, n, &judged, &outside);
    size_t series_below = series_orders(rows, n);
    struct band_check bc_source, bc_series, bcx_source, bcx_series, bc_near, bcx_near;
    double all_source, all_series, all_near;
    double cal_source = calibrated(rows, n, CAL_FIRST, &all_source, &bc_source, &bcx_source);
    double cal = calibrated(rows, n, CAL_SERIES, &all_series, &bc_series, &bcx_series);
    calibrated(rows, n, CAL_NEAREST, &all_near, &bc_near, &bcx_near);
    /* The band: measured over predicted step of every run against its band,
     * uncalibrated and calibrated (lib/perf.c takes BAND_* from the
     * percentiles printed here). */
    static double ratio[MAX_ROWS], band[MAX_ROWS][2];
    for (size_t i = 0; i < n; i++)
        ratio[i] = 1 + rows[i].err, band[i][0] = rows[i].band[0], band[i][1] = rows[i].band[1];
    struct band_check bc = band_check(ratio, (const double (*)[2])band, n);
    printf("\nspeed band (measured / predicted step: 5th and 95th percentile; runs inside their band):\n");
    printf("  uncalibrated                                         %.3f %.3f  %5.1f%% of %zu runs\n", bc.q05, bc.q95,
           100 * bc.covered, bc.n);
    printf("  calibrated on one run per (source, GPU, prec., stack) %.3f %.3f  %5.1f%% of %zu runs\n", bc_source.q05,
           bc_source.q95, 100 * bc_source.covered, bc_source.n);
    printf("  calibrated on one run per weak-scaling series         %.3f %.3f  %5.1f%% of %zu runs\n", bc_series.q05,
           bc_series.q95, 100 * bc_series.covered, bc_series.n);
    printf("  the same, exact runs: per (source, GPU, prec., stack) %.3f %.3f  %5.1f%% of %zu runs\n", bcx_source.q05,
           bcx_source.q95, 100 * bcx_source.covered, bcx_source.n);
    printf("                        per weak-scaling series         %.3f %.3f  %5.1f%% of %zu runs\n", bcx_series.q05,
           bcx_series.q95, 100 * bcx_series.covered, bcx_series.n);
    const struct band_check *bands[] = {&bc, &bc_source, &bc_series, &bcx_source, &bcx_series};
    static const char *const band_names[] = {"uncalibrated", "source", "series", "source-exact", "series-exact"};
    for (size_t b = 0; b < 5; b++)
        fig("band\t%s\t%.17g\t%.17g\t%.17g\t%zu", band_names[b], bands[b]->q05, bands[b]->q95, bands[b]->covered,
            bands[b]->n);
    fflush(stdout);
    ck_assert_msg(bc.covered >= 0.8, "the uncalibrated band holds %.1f%% of the runs < 80%%", 100 * bc.covered);
    /* The calibrated band is that of a calibration carried to every other
     * run of its (source, GPU, precision, stack), approximate rows
     * (layouts partly guessed) included: a user's calibrated device file
     * meets jobs of both kinds (doc/perf.md, "Uncertainty"); it holds the
     * weak-scaling series too. It must hold >= 80% of those runs and of
     * the exact ones. */
    ck_assert_msg(bc_source.covered >= 0.8, "the calibrated band holds %.1f%% of the runs calibrated per "
                  "(source, GPU, precision, stack) < 80%%", 100 * bc_source.covered);
    ck_assert_msg(bcx_source.covered >= 0.8, "the calibrated band holds %.1f%% of the exact runs calibrated per "
                  "(source, GPU, precision, stack) < 80%%", 100 * bcx_source.covered);
    ck_assert_msg(bc_series.covered >= 0.8, "the calibrated band holds %.1f%% of the runs calibrated per series < 80%%",
                  100 * bc_series.covered);
    /* The bands the library prints are these percentiles (lib/perf.c BAND_*):
     * a change of the model that moves them refreshes the constants. */
    ck_assert_msg(fabs(bc.q05 - bc.lib[0]) < 5e-4 && fabs(bc.q95 - bc.lib[1]) < 5e-4,
                  "the uncalibrated band (lib/perf.c BAND_LOW/HIGH) %.3f-%.3f is not the runs' %.3f-%.3f",
                  bc.lib[0], bc.lib[1], bc.q05, bc.q95);
    ck_assert_msg(fabs(bc_source.q05 - bc_source.lib[0]) < 5e-4 && fabs(bc_source.q95 - bc_source.lib[1]) < 5e-4,
                  "the calibrated band (lib/perf.c BAND_CAL_LOW/HIGH) %.3f-%.3f is not the calibrated runs' %.3f-%.3f",
                  bc_source.lib[0], bc_source.lib[1], bc_source.q05, bc_source.q95);
    ck_assert_msg(fabs(bc_series.q05 - REL_LOW) < 5e-4 && fabs(bc_series.q95 - REL_HIGH) < 5e-4,
                  "the band between layouts (REL_*, lib/perf.c BAND_REL_*) %.3f-%.3f is not the series calibration's "
                  "%.3f-%.3f", REL_LOW, REL_HIGH, bc_series.q05, bc_series.q95);
    ck_assert_msg(bf16 <= EXACT_BF16, "bf16 exact median |error| %.1f%% > %.0f%%", 100 * bf16, 100 * EXACT_BF16);
    ck_assert_msg(fp8 <= 0.12, "fp8 exact median |error| %.1f%% > 12%%", 100 * fp8);
    ck_assert_msg(worst_med <= WORST_SOURCE_MEDIAN, "a source's median |error| %.1f%% > %.0f%%", 100 * worst_med,
                  100 * WORST_SOURCE_MEDIAN);
    ck_assert_msg(worst_mean <= WORST_SOURCE_MEAN, "a source's mean signed error %.1f%% is beyond +-%.0f%%",
                  100 * worst_mean, 100 * WORST_SOURCE_MEAN);
    ck_assert_msg(resid <= RESIDUAL, "residual after one constant per source %.1f%% > %.0f%%", 100 * resid,
                  100 * RESIDUAL);
    ck_assert_msg(rise <= RISE, "a source's median |error| rose by %.1f points over its figure before issue 21",
                  100 * rise);
    ck_assert_msg(rho_sweep >= 0.85, "a sweep of >= 5 layouts is ordered with Spearman %.2f < 0.85", rho_sweep);
    ck_assert_msg(outside == 0, "%zu sweeps' measured-fastest layout is outside the band of the predicted-fastest",
                  outside);
    ck_assert_msg(series_below <= SERIES_BELOW, "%zu weak-scaling series are ordered with Spearman < 0.85 (> %d)",
                  series_below, SERIES_BELOW);
    ck_assert_msg(cal <= 0.05, "calibrated on one run of a series, a source's other exact runs are off by a median "
                  "%.1f%% > 5%%", 100 * cal);
    ck_assert_msg(all_source <= CAL_SOURCE_ALL, "calibrated on the first run of each (source, GPU, precision, stack), "
                  "the other runs are off by a median %.1f%% > %.1f%%", 100 * all_source, 100 * CAL_SOURCE_ALL);
    ck_assert_msg(all_near <= 0.05, "calibrated on the nearest run of their (source, GPU, precision, stack), the "
                  "runs are off by a median %.1f%% > 5%%", 100 * all_near);
    ck_assert_msg(cal_source <= CAL_SOURCE, "calibrated on the first run of each (source, GPU, precision, stack), a source's "
                  "other exact runs are off by a median %.1f%% > %.0f%%", 100 * cal_source, 100 * CAL_SOURCE);
    free_rows(rows, n);
}
END_TEST

/* The MoE rows of every source (issue 22): per source the median |error|
 * and mean signed error, uncalibrated, and the rank correlation of each
 * sweep of one model over >= 3 layouts on one cluster (GPU, GPU count,
 * sequence, precision). The targets are moe-modelzoo within 12% and every
 * sweep at Spearman >= 0.85. The sweep target is met and held here: the
 * Qwen3-235B sweep reads +0.90 since FSDP's rings pay the network's latency
 * only where they leave a node (5a047d7), which puts the Megatron-FSDP run
 * (t3-175, measured with the fastest) second (1941 tokens/s, +4.2%) after the
 * EP-overlap run (t3-174, over-credited: +39.9%), and the EP 32, PP 32 and
 * TP 4 / EP 8 runs (t3-173, t3-176, t3-177) in their measured order. The
 * median target is met (10.6%; 11.5% when the dropless rows' busiest-rank
 * load was first derived, doc/perf.md, "Token imbalance"; 15.8% before):
 * MOE_ZOO_MEDIAN holds it. */
#define MOE_ZOO_MEDIAN 0.12
#define MOE_SWEEP_RHO 0.85
/* The TFLOP/s of a moe-modelzoo row in its own count. Megatron-LM's
 * --log-throughput counts causal attention (half of s x s) since
 * NVIDIA/Megatron-LM@8873b55d (2025-03-06, "Fixes in number of
 * floating-point operation estimates for MoE and attention layer"), and the
 * ModelZoo's runs are later (the code revisions of its tables); the
 * library's TFLOPS_PER_GPU keeps the full count (doc/perf.md, "Outputs").
 * The prediction is converted: its FLOPs per sequence less half the core
 * attention, 3 passes x 2 x L s^2 a dh. */
static double causal_tflops(const struct row *r)
{
    double heads = (double)mget(r->m, MEM4D_MODEL_NUM_HEADS), dh = (double)mget(r->m, MEM4D_MODEL_HEAD_DIM);
    if (dh == 0)
        dh = (double)mget(r->m, MEM4D_MODEL_HIDDEN_SIZE) / heads;
    double L = (double)mget(r->m, MEM4D_MODEL_NUM_LAYERS), s = (double)lget(r->l, MEM4D_LAYOUT_SEQ_LENGTH);
    double full = r->pred * 1e12 * r->step * (double)r->gpus / (double)lget(r->l, MEM4D_LAYOUT_GLOBAL_BATCH);
    return r->pred * (full - 6 * L * s * s * heads * dh) / full;
}

/* A sweep ranks its runs in one unit: tokens/s per GPU. A row that gives
 * TFLOP/s (in the source's count, as r->pred) is put in tokens/s through
 * the prediction's own FLOPs per token, which the measured figure shares. */
static void sweep_tokens(const struct row *r, double *meas, double *pred)
{
    *meas = r->meas, *pred = r->pred;
    if (r->kind != TFLOPS)
        return;
    double tok = (double)lget(r->l, MEM4D_LAYOUT_GLOBAL_BATCH) * (double)lget(r->l, MEM4D_LAYOUT_SEQ_LENGTH) /
                 (r->step * (double)r->gpus);
    *meas = r->meas * tok / r->pred, *pred = tok;
}

START_TEST(moe_rows_match_published_runs)
{
    static struct row rows[MAX_ROWS];
    size_t n = load(rows, csv_path), nm = 0;
    mem4d_report *rep = NULL;
    ck_assert_int_eq(mem4d_report_new(&rep), MEM4D_OK);
    printf("\nMoE rows: %-7s %-16s %-22s %-4s %-6s %-34s %9s %9s %7s  %s\n", "id", "source", "model", "prec",
           "status", "layout", "measured", "predicted", "error", "step: compute (experts router) EP bubble (%)");
    for (size_t i = 0; i < n; i++) {
        if (!rows[i].moe)
            continue;
        nm++;
        double step = rows[i].step, e = 0, r = 0, ep = 0;
        ck_assert_int_eq(mem4d_estimate(rows[i].m, rows[i].l, rows[i].d, rep), MEM4D_OK);
        mem4d_report_metric(rep, MEM4D_METRIC_EXPERT_COMPUTE_S, &e);
        mem4d_report_metric(rep, MEM4D_METRIC_ROUTER_PERMUTE_S, &r);
        mem4d_report_metric(rep, MEM4D_METRIC_EP_COMM_S, &ep);
        printf("          %-7s %-16s %-22.22s %-4s %-6s %-34.34s %9.1f %9.1f %+6.1f%%  %3.0f (%2.0f %2.0f) %3.0f %3.0f\n",
               rows[i].id, rows[i].source, rows[i].model, rows[i].precision, rows[i].status, rows[i].layout,
               rows[i].meas, rows[i].pred, 100 * rows[i].err, 100 * rows[i].share[0], 100 * e / step,
               100 * r / step, 100 * ep / step, 100 * rows[i].share[5]);
    }
    mem4d_report_free(rep);
    ck_assert_uint_gt(nm, 0);
    const char *src[MAX_SOURCES];
    size_t ns = sources_of(rows, n, src), nres = 0;
    double res[MAX_ROWS], zoo = -1;
    printf("\nMoE rows per source, uncalibrated:\n");
    for (size_t s = 0; s < ns; s++) {
        struct source_fig sf = source_figures(rows, n, src[s], true, res, &nres);
        if (!sf.n)
            continue;
        printf("  %-18s %3zu rows  median |error| %5.1f%%  mean %+6.1f%%  residual after one constant %5.1f%%\n",
               src[s], sf.n, 100 * sf.med, 100 * sf.mean, 100 * sf.resid);
        if (!strcmp(src[s], "moe-modelzoo"))
            zoo = sf.med;
    }
    /* sweeps: one model on one cluster over layouts */
    bool done[MAX_ROWS] = {false};
    double worst = 1;
    size_t judged = 0;
    printf("\nMoE sweeps (one model, GPU, GPU count, sequence, precision; >= 3 runs):\n");
    for (size_t i = 0; i < n; i++) {
        if (done[i] || !rows[i].moe)
            continue;
        double meas[MAX_ROWS], pred[MAX_ROWS];
        size_t k = 0, layouts = 0;
        for (size_t j = i; j < n; j++)
            if (rows[j].moe && !done[j] && !strcmp(rows[j].sweep, rows[i].sweep)) {
                bool seen = false;
                for (size_t q = i; q < j && !seen; q++)
                    seen = rows[q].moe && !strcmp(rows[q].sweep, rows[i].sweep) && !strcmp(rows[q].layout, rows[j].layout);
                layouts += !seen;
                done[j] = true;
                sweep_tokens(&rows[j], &meas[k], &pred[k]);
                k++;
            }
        if (k < 3)
            continue;
        double rho = spearman(meas, pred, k);
        printf("  %-60.60s %zu runs, %zu layouts, Spearman %+.2f%s\n", rows[i].sweep, k, layouts, rho,
               layouts >= 3 ? "" : " (one layout: routing variants, printed only)");
        fig("moe-sweep\t%s\t%zu\t%zu\t%.17g", rows[i].sweep, k, layouts, rho);
        if (layouts < 3)
            continue;
        judged++;
        worst = fmin(worst, rho);
    }
    fflush(stdout);
    ck_assert_msg(zoo >= 0 && zoo <= MOE_ZOO_MEDIAN, "moe-modelzoo median |error| %.1f%% > %.0f%% (target 12%%)",
                  100 * zoo, 100 * MOE_ZOO_MEDIAN);
    ck_assert_uint_gt(judged, 0);
    ck_assert_msg(worst >= MOE_SWEEP_RHO, "a MoE sweep is ordered with Spearman %.2f < %.2f (target 0.85)", worst,
                  MOE_SWEEP_RHO);
    free_rows(rows, n);
}
END_TEST

/* blackwell-precisions.csv, beside throughput.csv: Megatron-Bridge's Llama
 * runs on GB300 and GB200 in FP8 (current scaling), MXFP8 and NVFP4, one
 * model, GPU and container in each precision (tests/data/throughput/
 * README.md, "blackwell-precisions"). Printed with the prediction,
 * uncalibrated, and each NVFP4 run's speed over its MXFP8 and FP8 runs
 * measured and predicted; no target and no constant taken from them
 * (doc/perf.md, "Validation", NVFP4). Printed at the end of the last
 * case, after the sweeps, so that what came before prints as it did. */
static void blackwell_precisions(void)
{
    char path[1024];
    const char *slash = strrchr(csv_path, '/');
    snprintf(path, sizeof path, "%.*sblackwell-precisions.csv", slash ? (int)(slash - csv_path + 1) : 0, csv_path);
    static struct row rows[MAX_ROWS];
    size_t n = load(rows, path);
    ck_assert_uint_eq(n, 12);
    const char *recipe[MAX_ROWS];
    printf("\nBlackwell precisions (blackwell-precisions.csv: Megatron-Bridge on GB300 and GB200), uncalibrated:\n");
    printf("  %-6s %-14s %-9s %-10s %-6s %-28s %8s %9s %7s  step: compute tp cp dp pp bubble (%%)\n", "id",
           "model", "gpu", "recipe", "status", "layout", "measured", "predicted", "error");
    double e[MAX_ROWS];
    for (size_t i = 0; i < n; i++) {
        uint64_t fp8 = lget(rows[i].l, MEM4D_LAYOUT_FP8), rc = lget(rows[i].l, MEM4D_LAYOUT_FP8_RECIPE);
        recipe[i] = fp8 ? mem4d_layout_value_name(MEM4D_LAYOUT_FP8_RECIPE, rc) : "bf16";
        e[i] = fabs(rows[i].err);
        printf("  %-6s %-14.14s %-9s %-10s %-6s %-28s %8.0f %9.0f %+6.1f%% ", rows[i].id, rows[i].model, rows[i].gpu,
               recipe[i], rows[i].status, rows[i].layout, rows[i].meas, rows[i].pred, 100 * rows[i].err);
        for (int k = 0; k < 6; k++)
            printf(" %3.0f", 100 * rows[i].share[k]);
        printf("\n");
    }
    printf("  median |error| %.1f%%\n", 100 * tu_median(e, n));
    /* each NVFP4 run against the other precisions of its model and GPU */
    for (size_t i = 0; i < n; i++) {
        if (strcmp(recipe[i], "nvfp4") != 0)
            continue;
        for (size_t j = 0; j < n; j++)
            if (j != i && !strcmp(rows[j].model, rows[i].model) && !strcmp(rows[j].gpu, rows[i].gpu) &&
                strcmp(recipe[j], "nvfp4") != 0)
                printf("  %-14.14s %-9s nvfp4 over %-10s measured %.3f, predicted %.3f\n", rows[i].model,
                       rows[i].gpu, recipe[j], rows[i].meas / rows[j].meas, rows[i].pred / rows[j].pred);
    }
    fflush(stdout);
    free_rows(rows, n);
}

/* The layout sweeps of tests/data/throughput/sweeps.csv (public sweeps of
 * one model over layouts on one cluster, not in throughput.csv): per sweep
 * the Spearman of predicted against measured order and whether the
 * measured-fastest layout is inside the band of the predicted-fastest
 * (issue 21's targets: >= 0.85 and inside). SWEEP_RHO guards what the model
 * reaches, 0.96 and 0.93 on the BLOOM prequel's since BigScience's fork's
 * fused softmax declines their shapes (FUSED_SOFTMAX_SWAPPED, lib/perf.c;
 * 0.71 and 0.86 before; doc/perf.md, "Validation"). */
#define SWEEP_RHO 0.92
/* nanotron's one-node sweeps (HF's benchmark table, sweeps.csv README) are
 * guarded apart: what misorders them (the part of the floor per layer at
 * tp >= 2 beyond the host work the model counts, doc/perf.md "Layout
 * sweeps") is not what misorders BLOOM's; they read +0.90, +0.95, +0.93.
 * The 8.86B sweep read +0.87 under the power balance (lib/perf.c
 * POWER_BALANCE) until its tp 2 and 4 layouts paid what their backward TP
 * collectives take from the weight-gradient GEMMs beside them
 * (TP_BESIDE). */
#define SWEEP_RHO_NANOTRON 0.89
START_TEST(sweeps_keep_their_order)
{
    static struct row rows[MAX_ROWS];
    size_t n = load(rows, sweeps_path), judged, outside;
    ck_assert_uint_gt(n, 0);
    printf("%-7s %-26s %-28s %6s %10s %10s %8s  step: compute tp cp dp pp bubble optimizer (%%)\n", "id", "sweep",
           "layout", "gbs", "measured", "predicted", "error");
    for (size_t i = 0; i < n; i++) {
        uint64_t gbs = lget(rows[i].l, MEM4D_LAYOUT_GLOBAL_BATCH);
        printf("%-7s %-26.26s %-28s %6llu %10.1f %10.1f %+7.1f%% ", rows[i].id, rows[i].model, rows[i].layout,
               (unsigned long long)gbs, rows[i].meas, rows[i].pred, 100 * rows[i].err);
        for (int k = 0; k < 7; k++)
            printf(" %3.0f", 100 * rows[i].share[k]);
        printf("\n");
    }
    size_t m = 0, judged_nt, outside_nt; /* nanotron's rows last */
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].source, "nanotron") != 0) {
            struct row t = rows[m];
            rows[m++] = rows[i];
            rows[i] = t;
        }
    double worst = sweeps(rows, m, &judged, &outside);
    double worst_nt = sweeps(rows + m, n - m, &judged_nt, &outside_nt);
    fflush(stdout);
    ck_assert_uint_gt(judged, 0);
    ck_assert_uint_gt(judged_nt, 0);
    ck_assert_msg(worst >= SWEEP_RHO, "a sweep of sweeps.csv is ordered with Spearman %.2f < %.2f (target 0.85)",
                  worst, SWEEP_RHO);
    ck_assert_msg(worst_nt >= SWEEP_RHO_NANOTRON,
                  "a nanotron sweep of sweeps.csv is ordered with Spearman %.2f < %.2f (target 0.85)", worst_nt,
                  SWEEP_RHO_NANOTRON);
    ck_assert_msg(outside + outside_nt == 0,
                  "%zu sweeps' measured-fastest layout is outside the band of the predicted-fastest",
                  outside + outside_nt);
    free_rows(rows, n);
    blackwell_precisions();
}
END_TEST


int main(int argc, char **argv)
{
    csv_path = argc > 1 ? argv[1] : "tests/data/throughput/throughput.csv";
    sweeps_path = argc > 2 ? argv[2] : "tests/data/throughput/sweeps.csv";
    figures_path = argc > 3 ? argv[3] : NULL;
    /* the guards, for the generated "targets" table (scripts/gen-validation.py) */
    fig("guard\tWORST_SOURCE_MEDIAN\t%.17g", WORST_SOURCE_MEDIAN);
    fig("guard\tWORST_SOURCE_MEAN\t%.17g", WORST_SOURCE_MEAN);
    fig("guard\tRESIDUAL\t%.17g", RESIDUAL);
    fig("guard\tSERIES_BELOW\t%d", SERIES_BELOW);
    fig("guard\tCAL_SOURCE\t%.17g", CAL_SOURCE);
    fig("guard\tCAL_SOURCE_ALL\t%.17g", CAL_SOURCE_ALL);
    fig("guard\tEXACT_BF16\t%.17g", EXACT_BF16);
    fig("guard\tRISE\t%.17g", RISE);
    fig("guard\tSWEEP_RHO\t%.17g", SWEEP_RHO);
    fig("guard\tSWEEP_RHO_NANOTRON\t%.17g", SWEEP_RHO_NANOTRON);
    fig("guard\tMOE_ZOO_MEDIAN\t%.17g", MOE_ZOO_MEDIAN);
    fig("guard\tMOE_SWEEP_RHO\t%.17g", MOE_SWEEP_RHO);
    Suite *s = suite_create("throughput");
    TCase *tc = tcase_create("published-runs");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, step_time_matches_published_runs);
    tcase_add_test(tc, moe_rows_match_published_runs);
    tcase_add_test(tc, sweeps_keep_their_order);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
