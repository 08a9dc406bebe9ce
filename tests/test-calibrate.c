/*
 * Calibration suite (lib/calibrate.c): Megatron-LM logs in
 * tests/data/megatron-logs are read (arguments block, iteration and memory
 * lines), the fit brings the predicted step time and memory peaks onto the
 * measured ones, the fitted device survives a device file, and logs it
 * cannot read are refused naming the line.
 * SPDX-License-Identifier: MIT
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const char *data_dir; /* argv[1]; read-only after main() starts */

static char *slurp(const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", data_dir, name);
    FILE *fp = fopen(path, "rb");
    ck_assert_msg(fp != NULL, "cannot open %s", path);
    static char buf[1 << 20];
    *len = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[*len] = '\0';
    return buf;
}

static double fig(const mem4d_calibration *c, size_t log, mem4d_calibration_figure f)
{
    double v = -1;
    ck_assert_int_eq(mem4d_calibration_get(c, log, f, &v), MEM4D_OK);
    return v;
}

/* After the fit every one of the n runs' predicted steps is within 0.5% of
 * its measured one. */
static void steps_match(const mem4d_calibration *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ck_assert(fabs(fig(c, i, MEM4D_CALIBRATION_PREDICTED_STEP_AFTER_S) /
                       fig(c, i, MEM4D_CALIBRATION_MEASURED_STEP_S) - 1) < 0.005);
}

static uint64_t dget(const mem4d_device *d, mem4d_device_param k)
{
    uint64_t v = 0;
    ck_assert_int_eq(mem4d_device_get(d, k, &v), MEM4D_OK);
    return v;
}

/* One log: the measured median (first iteration left out), the log's own
 * TFLOP/s, and after the fit a step within 0.5%. */
START_TEST(one_log_fits_its_step)
{
    mem4d_calibration *c = NULL;
    ck_assert_int_eq(mem4d_calibration_new(&c), MEM4D_OK);
    size_t len;
    const char *text = slurp("llama31-8b-cp2-16gpu.log", &len);
    ck_assert_msg(mem4d_calibration_add_megatron_log(c, text, len, 0, NULL, 0) == MEM4D_OK, "%s",
                  mem4d_calibration_message(c));
    ck_assert_uint_eq(mem4d_calibration_log_count(c), 1);
    ck_assert_int_eq(mem4d_calibration_get(c, 0, MEM4D_CALIBRATION_MEASURED_STEP_S, &(double){0}),
                     MEM4D_E_UNSUPPORTED); /* no fit yet */
    mem4d_device *d = tu_device("h100-80");
    uint64_t before = dget(d, MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM);
    ck_assert_msg(mem4d_calibration_fit(c, d) == MEM4D_OK, "%s", mem4d_calibration_message(c));
    /* median of 12311.7 12298.2 12304.9 12295.0 12300.3 12302.6 ms (19210.4, the
     * first, is left out) */
    ck_assert_double_eq_tol(fig(c, 0, MEM4D_CALIBRATION_MEASURED_STEP_S), 12.30145, 1e-9);
    ck_assert_double_eq_tol(fig(c, 0, MEM4D_CALIBRATION_MEASURED_TFLOPS_PER_GPU), 616.5, 0.1);
    double after = fig(c, 0, MEM4D_CALIBRATION_PREDICTED_STEP_AFTER_S);
    ck_assert_msg(fabs(after / 12.30145 - 1) < 0.005, "after the fit %.4f s", after);
    ck_assert(fig(c, 0, MEM4D_CALIBRATION_PREDICTED_STEP_BEFORE_S) > 0);
    /* compute dominates an 8B model on 16 GPUs: the matmul efficiency moved */
    ck_assert_uint_ne(dget(d, MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM), before);
    /* no memory line in this log */
    double v;
    ck_assert_int_eq(mem4d_calibration_get(c, 0, MEM4D_CALIBRATION_MEASURED_MAX_ALLOCATED, &v), MEM4D_E_UNSUPPORTED);
    /* The fitted device as a file, read back: the same prediction. */
    char buf[4096];
    ck_assert_int_eq(mem4d_device_format(d, buf, sizeof buf, NULL), MEM4D_OK);
    mem4d_device *e = NULL;
    ck_assert_int_eq(mem4d_device_new(&e), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_parse(e, buf, strlen(buf), NULL, 0), MEM4D_OK);
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_layout *l = tu_layout("world=16", "cp=2", "seq=8192", "gbs=256", "tp_comm_overlap=1",
                                "overlap_grad_reduce=1", "overlap_param_gather=1", "cross_entropy_impl=te", NULL);
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    double step_d, step_e;
    ck_assert_int_eq(mem4d_estimate(m, l, d, r), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &step_d), MEM4D_OK);
    ck_assert_int_eq(mem4d_estimate(m, l, e, r), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &step_e), MEM4D_OK);
    ck_assert(step_d == step_e);
    ck_assert(fabs(step_e / after - 1) < 1e-3); /* the same job, written by hand */
    mem4d_report_free(r);
    mem4d_layout_free(l);
    mem4d_model_free(m);
    mem4d_device_free(e);
    mem4d_device_free(d);
    mem4d_calibration_free(c);
}
END_TEST

/* A memory line: the fixed workspace and the allocator overhead take the
 * measured peaks exactly; two logs fit together. */
START_TEST(memory_offsets_and_two_logs)
{
    mem4d_calibration *c = NULL;
    ck_assert_int_eq(mem4d_calibration_new(&c), MEM4D_OK);
    static const char *const logs[] = {"llama32-1b-dp8.log", "llama31-8b-cp2-16gpu.log"};
    for (size_t i = 0; i < 2; i++) {
        size_t len;
        const char *text = slurp(logs[i], &len);
        ck_assert_msg(mem4d_calibration_add_megatron_log(c, text, len, 0, NULL, 0) == MEM4D_OK, "%s: %s", logs[i],
                      mem4d_calibration_message(c));
    }
    mem4d_device *d = tu_device("h100-80");
    ck_assert_msg(mem4d_calibration_fit(c, d) == MEM4D_OK, "%s", mem4d_calibration_message(c));
    double mib = 1048576.0;
    ck_assert_double_eq_tol(fig(c, 0, MEM4D_CALIBRATION_MEASURED_MAX_ALLOCATED), 12003.60 * mib, 1);
    ck_assert_double_eq_tol(fig(c, 0, MEM4D_CALIBRATION_MEASURED_MAX_RESERVED), 12232.00 * mib, 1);
    ck_assert(fig(c, 0, MEM4D_CALIBRATION_MEMORY_RANK) == 0);
    ck_assert_double_eq_tol(fig(c, 0, MEM4D_CALIBRATION_PREDICTED_MAX_ALLOCATED_AFTER), 12003.60 * mib, 2);
    ck_assert_double_eq_tol(fig(c, 0, MEM4D_CALIBRATION_PREDICTED_MAX_RESERVED_AFTER), 12232.00 * mib,
                            12232.00 * mib * 2e-6);
    /* One constant (compute dominates both) for two jobs: the fit lowers
     * the summed squared log error, it cannot zero both. */
    double e_before = 0, e_after = 0;
    for (size_t i = 0; i < 2; i++) {
        double meas = fig(c, i, MEM4D_CALIBRATION_MEASURED_STEP_S);
        double before = fig(c, i, MEM4D_CALIBRATION_PREDICTED_STEP_BEFORE_S);
        double after = fig(c, i, MEM4D_CALIBRATION_PREDICTED_STEP_AFTER_S);
        printf("%-26s measured %.3f s, predicted %.3f s before (%+.1f%%), %.3f s after (%+.1f%%)\n", logs[i], meas,
               before, 100 * (before / meas - 1), after, 100 * (after / meas - 1));
        e_before += log(before / meas) * log(before / meas);
        e_after += log(after / meas) * log(after / meas);
    }
    ck_assert(e_after < e_before);
    mem4d_device_free(d);
    mem4d_calibration_free(c);
}
END_TEST

/* The predicted step and peak of a one-log calibration on an H100: what
 * identifies the job a log was read as. */
static void job_figures(const char *text, size_t len, double out[2])
{
    mem4d_calibration *c = NULL;
    ck_assert_int_eq(mem4d_calibration_new(&c), MEM4D_OK);
    ck_assert_msg(mem4d_calibration_add_megatron_log(c, text, len, 0, NULL, 0) == MEM4D_OK, "%s",
                  mem4d_calibration_message(c));
    mem4d_device *d = tu_device("h100-80");
    ck_assert_msg(mem4d_calibration_fit(c, d) == MEM4D_OK, "%s", mem4d_calibration_message(c));
    out[0] = fig(c, 0, MEM4D_CALIBRATION_PREDICTED_STEP_BEFORE_S);
    double v = 0;
    out[1] = mem4d_calibration_get(c, 0, MEM4D_CALIBRATION_PREDICTED_MAX_ALLOCATED_BEFORE, &v) == MEM4D_OK ? v : -1;
    mem4d_device_free(d);
    mem4d_calibration_free(c);
}

/* Append "  name ....... value" as _print_args() writes it (dots to column
 * 48, none for a longer name). */
static void put_arg(char *buf, size_t size, const char *name, const char *value)
{
    size_t used = strlen(buf), nl = strlen(name);
    char dots[64] = "";
    for (size_t i = 0; nl + i < 48 && i < sizeof dots - 1; i++)
        dots[i] = '.', dots[i + 1] = '\0';
    snprintf(buf + used, size - used, "  %s %s %s\n", name, dots, value);
}

static const char *const header = "------------------------ arguments ------------------------\n";
static const char *const footer = "-------------------- end of arguments ---------------------\n";
static const char *const steps =
    " [2025-01-01 00:00:00.000000] iteration        1/      10 | elapsed time per iteration (ms): 2000.0 |\n"
    " [2025-01-01 00:00:02.000000] iteration        2/      10 | elapsed time per iteration (ms): 1000.0 |\n"
    "[Rank 0] (after 2 iterations) memory (MB) | allocated: 9000.0 | max allocated: 20000.0 | reserved: "
    "22000.0 | max reserved: 22000.0\n";

/* A small MoE job's block: `freq` and `modules` as Megatron prints them. */
static void moe_log(char *buf, size_t size, const char *freq, const char *modules, const char *extra_name,
                    const char *extra_value)
{
    static const char *const args[][2] = {
        {"num_layers", "4"}, {"hidden_size", "2048"}, {"ffn_hidden_size", "8192"}, {"num_attention_heads", "16"},
        {"seq_length", "4096"}, {"max_position_embeddings", "4096"}, {"micro_batch_size", "1"},
        {"global_batch_size", "64"}, {"vocab_size", "32000"}, {"bf16", "True"}, {"swiglu", "True"},
        {"normalization", "RMSNorm"}, {"position_embedding_type", "rope"}, {"num_experts", "8"},
        {"moe_ffn_hidden_size", "1024"}, {"moe_router_topk", "2"}, {"expert_model_parallel_size", "2"},
        {"main_grads_dtype", "torch.float32"}, {"main_params_dtype", "torch.float32"},
        {"exp_avg_dtype", "torch.float32"}, {"exp_avg_sq_dtype", "torch.float32"},
        {"rerun_mode", "RerunMode.DISABLED"}, {"attention_backend", "AttnBackend.auto"},
        {"recompute_granularity", "selective"}, {"world_size", "8"},
    };
    snprintf(buf, size, "%s", header);
    for (size_t i = 0; i < sizeof args / sizeof *args; i++)
        put_arg(buf, size, args[i][0], args[i][1]);
    put_arg(buf, size, "moe_layer_freq", freq);
    put_arg(buf, size, "recompute_modules", modules);
    if (extra_name)
        put_arg(buf, size, extra_name, extra_value);
    size_t used = strlen(buf);
    snprintf(buf + used, size - used, "%s%s", footer, steps);
}

/* A log in Megatron-LM's current format with every argument its
 * arguments.py adds (tests/data/megatron-logs/gen-all-arguments.py) is read
 * as the same job as the shorter log it was made from: dtypes printed as
 * torch.float32, enums, lists, None, names of 48 characters and more
 * (no dots), 847 arguments (issue 24, item 1). */
START_TEST(every_argument_megatron_prints)
{
    size_t len;
    static char all[1 << 17];
    const char *text = slurp("llama31-8b-all-arguments.log", &len);
    ck_assert_uint_lt(len, sizeof all);
    memcpy(all, text, len + 1);
    ck_assert_ptr_nonnull(strstr(all, "  main_grads_dtype ................................ torch.float32\n"));
    ck_assert_ptr_nonnull(strstr(all, "  inference_dynamic_batching_cuda_graph_mixed_prefill_count  16\n"));
    double a[2], b[2];
    job_figures(all, len, a);
    text = slurp("llama31-8b-cp2-16gpu.log", &len);
    job_figures(text, len, b);
    ck_assert(a[0] == b[0]);
    /* cp_comm_type (a list, cp 2): all_gather is its exposed all-gather, a
     * slower step; a2a, not modelled, is estimated as the ring */
    static const char *const p2p = "  cp_comm_type .................................... ['p2p']\n";
    char *at = strstr(all, p2p);
    ck_assert_ptr_nonnull(at);
    static char other[1 << 17];
    const char *const kinds[] = {"['all_gather']", "['a2a']"};
    for (size_t k = 0; k < 2; k++) {
        int n = snprintf(other, sizeof other, "%.*s  cp_comm_type .................................... %s\n%s",
                         (int)(at - all), all, kinds[k], at + strlen(p2p));
        ck_assert(n > 0 && (size_t)n < sizeof other);
        job_figures(other, (size_t)n, b);
        ck_assert_msg(k == 0 ? b[0] > a[0] : b[0] == a[0], "%s: step %g s, p2p %g s", kinds[k], b[0], a[0]);
        ck_assert(b[1] == a[1]); /* the memory does not read it */
    }
    /* Behind a launcher's prefix on every line (torchrun --tee, srun -l),
     * with another rank's line inside the block: the same job. */
    static char prefixed[1 << 18];
    size_t used = 0;
    for (const char *p = all; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
        used += (size_t)snprintf(prefixed + used, sizeof prefixed - used, "[default0]:%.*s", (int)n, p);
        if (strstr(p, "  bf16 ") == p)
            used += (size_t)snprintf(prefixed + used, sizeof prefixed - used, "[default3]:W1201 NCCL warn\n");
        p += n;
    }
    job_figures(prefixed, used, b);
    ck_assert(a[0] == b[0]);
}
END_TEST

/* The log's overlap_p2p_comm (a destination whose flag has another name,
 * --overlap-p2p-communication) is read: the all-arguments log at pp 2 with
 * two virtual stages (8 layers a chunk), True a shorter step than False,
 * the same memory. */
START_TEST(overlap_p2p_comm_from_the_log)
{
    size_t len;
    const char *text = slurp("llama31-8b-all-arguments.log", &len);
    static const char *const lines[][2] = {
        {"  pipeline_model_parallel_size .................... 1\n", "2"},
        {"  num_layers_per_virtual_pipeline_stage ........... None\n", "8"},
        {"  overlap_p2p_comm ................................ True\n", NULL},
    };
    static char log[2][1 << 17];
    for (int on = 0; on < 2; on++) {
        ck_assert_uint_lt(len, sizeof log[on]);
        memcpy(log[on], text, len + 1);
        for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
            char *at = strstr(log[on], lines[i][0]);
            ck_assert_ptr_nonnull(at);
            const char *v = lines[i][1] ? lines[i][1] : on ? "True" : "False";
            size_t keep = (size_t)(strrchr(lines[i][0], ' ') - lines[i][0]) + 1; /* up to the value */
            char tail[1 << 17];
            snprintf(tail, sizeof tail, "%s", at + strlen(lines[i][0]));
            snprintf(at + keep, sizeof log[on] - (size_t)(at - log[on]) - keep, "%s\n%s", v, tail);
        }
    }
    double off[2], on[2];
    job_figures(log[0], strlen(log[0]), off);
    job_figures(log[1], strlen(log[1]), on);
    ck_assert_msg(on[0] < off[0], "step %g s with the overlap, %g s without", on[0], off[0]);
    ck_assert(on[1] == off[1]);
}
END_TEST

/* Item 2: a value of any length, an empty value without its trailing
 * blank, any number of arguments. Item 3: list values are read. */
START_TEST(long_empty_many_and_list_values)
{
    static char buf[1 << 20], base[1 << 14];
    double ref[2], v[2];
    moe_log(base, sizeof base, "[0, 1, 1, 1]", "['core_attn']", NULL, NULL);
    job_figures(base, strlen(base), ref);
    /* A tokenizer path of 300 characters: read (it used to be dropped). */
    char path[320];
    memset(path, 'x', 300);
    path[0] = '/';
    path[300] = '\0';
    moe_log(buf, sizeof buf, "[0, 1, 1, 1]", "['core_attn']", "tokenizer_model", path);
    job_figures(buf, strlen(buf), v);
    ck_assert(v[0] == ref[0] && v[1] == ref[1]);
    /* An empty value, its trailing blank stripped, and one with it. */
    moe_log(buf, sizeof buf, "[0, 1, 1, 1]", "['core_attn']", "data_cache_path", "");
    char *blank = strstr(buf, "data_cache_path ");
    ck_assert_ptr_nonnull(blank);
    job_figures(buf, strlen(buf), v);
    ck_assert(v[0] == ref[0]);
    char *end = strchr(blank, '\n');
    memmove(end - 1, end, strlen(end) + 1); /* "....... \n" -> ".......\n" */
    job_figures(buf, strlen(buf), v);
    ck_assert(v[0] == ref[0]);
    /* 3000 arguments before the job's: none is dropped. */
    snprintf(buf, sizeof buf, "%s", header);
    for (int i = 0; i < 3000; i++) {
        char name[32];
        snprintf(name, sizeof name, "aaa_extra_argument_%04d", i);
        put_arg(buf, sizeof buf, name, "1");
    }
    strcat(buf, strstr(base, header) + strlen(header));
    job_figures(buf, strlen(buf), v);
    ck_assert(v[0] == ref[0] && v[1] == ref[1]);
    /* The evaluated pattern: one dense layer first. Every layer an expert
     * layer is another job, and so is the pattern given as an int. */
    moe_log(buf, sizeof buf, "1", "['core_attn']", NULL, NULL);
    job_figures(buf, strlen(buf), v);
    ck_assert(v[1] != ref[1]);
    moe_log(buf, sizeof buf, "[1, 1, 1, 1]", "['core_attn']", NULL, NULL);
    job_figures(buf, strlen(buf), ref);
    ck_assert(v[0] == ref[0] && v[1] == ref[1]);
    /* recompute_modules as a list of several, and of none */
    moe_log(buf, sizeof buf, "[0, 1, 1, 1]", "['core_attn', 'moe_act', 'layernorm']", NULL, NULL);
    job_figures(buf, strlen(buf), v);
    moe_log(base, sizeof base, "[0, 1, 1, 1]", "['core_attn']", NULL, NULL);
    job_figures(base, strlen(base), ref);
    ck_assert(v[1] < ref[1]); /* more recomputed: less kept */
    /* A value it cannot read is refused naming the flag. */
    mem4d_calibration *c = NULL;
    ck_assert_int_eq(mem4d_calibration_new(&c), MEM4D_OK);
    moe_log(buf, sizeof buf, "[0, 1, 1, 1]", "['core_attn', 'everything']", NULL, NULL);
    ck_assert_int_eq(mem4d_calibration_add_megatron_log(c, buf, strlen(buf), 0, NULL, 0), MEM4D_E_PARSE);
    ck_assert_ptr_nonnull(strstr(mem4d_calibration_message(c), "--recompute-modules"));
    /* The memory line of a rank the job does not have. */
    moe_log(buf, sizeof buf, "[0, 1, 1, 1]", "['core_attn']", NULL, NULL);
    char *rank = strstr(buf, "[Rank 0]");
    memcpy(rank, "[Rank 9]", 8);
    ck_assert_int_eq(mem4d_calibration_add_megatron_log(c, buf, strlen(buf), 0, NULL, 0), MEM4D_E_CONFLICT);
    ck_assert_ptr_nonnull(strstr(mem4d_calibration_message(c), "the memory line is of rank 9, but the job has 8 GPUs"));
    mem4d_calibration_free(c);
}
END_TEST

/* Without an arguments block the job comes from argv. */
START_TEST(arguments_from_argv)
{
    static const char log[] =
        " [2025-01-01 00:00:00.000000] iteration        1/      10 | consumed samples:          128 | "
        "elapsed time per iteration (ms): 20000.0 | global batch size:   128 |\n"
        " [2025-01-01 00:00:12.000000] iteration        2/      10 | consumed samples:          256 | "
        "elapsed time per iteration (ms): 12000.0 | global batch size:   128 |\n";
    static const char *const argv[] = {
        "--num-layers", "32", "--hidden-size", "4096", "--ffn-hidden-size", "14336", "--num-attention-heads", "32",
        "--group-query-attention", "--num-query-groups", "8", "--seq-length", "8192", "--max-position-embeddings",
        "8192", "--vocab-size", "128256", "--swiglu", "--normalization", "RMSNorm", "--position-embedding-type",
        "rope", "--disable-bias-linear", "--untie-embeddings-and-output-weights", "--micro-batch-size", "1",
        "--global-batch-size", "128", "--bf16", "--use-distributed-optimizer", "--context-parallel-size", "2",
        "--tp-comm-overlap"};
    mem4d_calibration *c = NULL;
    ck_assert_int_eq(mem4d_calibration_new(&c), MEM4D_OK);
    ck_assert_int_eq(mem4d_calibration_add_megatron_log(c, log, sizeof log - 1, 0, NULL, 8), MEM4D_E_MISSING);
    ck_assert_str_eq(mem4d_calibration_message(c), "the log has no arguments block and no arguments were given: "
                                                   "give the job's Megatron-LM arguments (after --)");
    ck_assert_msg(mem4d_calibration_add_megatron_log(c, log, sizeof log - 1, (int)(sizeof argv / sizeof argv[0]),
                                                     argv, 8) == MEM4D_OK,
                  "%s", mem4d_calibration_message(c));
    mem4d_device *d = tu_device("h100-80");
    ck_assert_int_eq(mem4d_calibration_fit(c, d), MEM4D_OK);
    ck_assert_double_eq_tol(fig(c, 0, MEM4D_CALIBRATION_MEASURED_STEP_S), 12.0, 1e-12);
    ck_assert(fabs(fig(c, 0, MEM4D_CALIBRATION_PREDICTED_STEP_AFTER_S) / 12.0 - 1) < 0.005);
    mem4d_device_free(d);
    mem4d_calibration_free(c);
}
END_TEST

/* Logs it cannot read: one sentence naming the line. */
START_TEST(refusals_name_the_line)
{
    static const struct {
        const char *text, *why;
        mem4d_status st;
    } bad[] = {
        {"hello\nworld\n", "no iteration line with \"elapsed time per iteration (ms)\": not a Megatron-LM training log",
         MEM4D_E_MISSING},
        {"x\n iteration 1/ 2 | elapsed time per iteration (ms): fast |\n",
         "line 2: elapsed time per iteration (ms) is not a number", MEM4D_E_PARSE},
        {" iteration 1/ 2 | elapsed time per iteration (ms): 0.0 |\n",
         "line 1: elapsed time per iteration 0 ms is outside [0.1 ms, 1 day]: not a training step", MEM4D_E_RANGE},
        {" iteration 1/ 2 | elapsed time per iteration (ms): 1e-300 |\n",
         "line 1: elapsed time per iteration 1e-300 ms is outside [0.1 ms, 1 day]: not a training step",
         MEM4D_E_RANGE},
        {"x\n iteration 1/ 2 | elapsed time per iteration (ms): 1e18 |\n",
         "line 2: elapsed time per iteration 1e+18 ms is outside [0.1 ms, 1 day]: not a training step",
         MEM4D_E_RANGE},
        {" iteration 1/ 2 | elapsed time per iteration (ms): -5 |\n",
         "line 1: elapsed time per iteration -5 ms is outside [0.1 ms, 1 day]: not a training step", MEM4D_E_RANGE},
        {"[Rank -1] (after 1 iterations) memory (MB) | allocated: 1 | max allocated: 9 | reserved: 2 | "
         "max reserved: 10\n",
         "line 1: a memory line needs allocated, max allocated, reserved and max reserved (MB), max reserved >= "
         "max allocated",
         MEM4D_E_PARSE},
        {" iteration 1/ 2 | elapsed time per iteration (ms): 900.0 |\n",
         "one iteration line only: the first is warm-up (compilation, allocation), and calibration needs at least "
         "one more",
         MEM4D_E_MISSING},
        {"[Rank 0] (after 1 iterations) memory (MB) | allocated: 0.0 | max allocated: 0.0 | reserved: 0.0 | "
         "max reserved: 0.0\n",
         "line 1: max allocated must be above 0 MB, no figure negative, and max reserved at most 2^30 MB: not a "
         "training GPU's memory",
         MEM4D_E_RANGE},
        {"[Rank 0.5] (after 1 iterations) memory (MB) | allocated: 1 | max allocated: 9 | reserved: 2 | "
         "max reserved: 10\n",
         "line 1: a memory line needs allocated, max allocated, reserved and max reserved (MB), max reserved >= "
         "max allocated",
         MEM4D_E_PARSE},
        {" iteration 1/ 2 | elapsed time per iteration (ms): 10.0 | throughput per GPU (TFLOP/s/GPU): nan? |\n",
         "line 1: throughput per GPU (TFLOP/s/GPU) is not a number", MEM4D_E_PARSE},
        {"a\nb\n[Rank 0] (after 1 iterations) memory (MB) | allocated: 1 | max allocated: 9 | reserved: 2\n",
         "line 3: a memory line needs allocated, max allocated, reserved and max reserved (MB), max reserved >= "
         "max allocated",
         MEM4D_E_PARSE},
        {"------------------------ arguments ------------------------\n  tensor_model_parallel_size 8\n",
         "line 2: not a \"name .... value\" line inside the arguments block", MEM4D_E_PARSE},
        {"------------------------ arguments ------------------------\n"
         "  num_layers ...................................... 2\n"
         " iteration 1/ 2 | elapsed time per iteration (ms): 10.0 |\n",
         "line 3: not a \"name .... value\" line inside the arguments block", MEM4D_E_PARSE},
        {"------------------------ arguments ------------------------\n"
         "  num_layers ...................................... 2\n",
         "the arguments block has no \"end of arguments\" line", MEM4D_E_PARSE},
    };
    mem4d_calibration *c = NULL;
    ck_assert_int_eq(mem4d_calibration_new(&c), MEM4D_OK);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(mem4d_calibration_add_megatron_log(c, bad[i].text, strlen(bad[i].text), 0, NULL, 8),
                         bad[i].st);
        ck_assert_str_eq(mem4d_calibration_message(c), bad[i].why);
    }
    ck_assert_int_eq(mem4d_calibration_add_megatron_log(c, "a\0b", 3, 0, NULL, 0), MEM4D_E_PARSE);
    ck_assert_str_eq(mem4d_calibration_message(c), "line 1: a NUL byte: not a text log");
    ck_assert_uint_eq(mem4d_calibration_log_count(c), 0);
    mem4d_device *d = tu_device("h100-80");
    ck_assert_int_eq(mem4d_calibration_fit(c, d), MEM4D_E_MISSING);
    ck_assert_int_eq(mem4d_calibration_fit(NULL, d), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_calibration_add_megatron_log(NULL, "", 0, 0, NULL, 0), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_calibration_get(c, 0, MEM4D_CALIBRATION_MEASURED_STEP_S, &(double){0}),
                     MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_calibration_new(NULL), MEM4D_E_INVALID_ARG);
    mem4d_calibration_free(NULL);
    mem4d_device_free(d);
    mem4d_calibration_free(c);
}
END_TEST

/* A refused argument (MEM4D_E_INVALID_ARG) is said in the message too,
 * not left with the last failure's sentence: the Python and Rust bindings
 * raise every failure with mem4d_calibration_message(). Each call below
 * follows a failed log read whose sentence it must replace. */
START_TEST(refused_arguments_say_why)
{
    static const char *const why[] = {
        "a NULL model or layout",
        "a measurement is a step time, TFLOP/s per GPU or tokens per second, not another figure",
        "the log format is not one this library reads",
        "a NULL log (text of nonzero length, or path), model or layout",
        "a NULL log (text of nonzero length, or path), model or layout",
        "a NULL log text of nonzero length, a negative argc or a NULL argv",
        "a NULL log path",
        "a NULL device",
    };
    mem4d_calibration *c = NULL;
    ck_assert_int_eq(mem4d_calibration_new(&c), MEM4D_OK);
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_layout *l = tu_layout("world=8", "tp=2", "seq=4096", "gbs=64", NULL);
    const char *argv[] = {"--num-layers", "2"};
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(mem4d_calibration_add_megatron_log(c, "x\n", 2, 0, NULL, 8), MEM4D_E_MISSING);
        mem4d_status st;
        switch (i) {
        case 0: st = mem4d_calibration_add_measurement(c, m, NULL, MEM4D_CALIBRATION_MEASURED_STEP_S, 1.0); break;
        case 1: st = mem4d_calibration_add_measurement(c, m, l, MEM4D_CALIBRATION_MEMORY_RANK, 1.0); break;
        case 2: st = mem4d_calibration_add_log(c, (mem4d_log_format)7, "", 0, m, l); break;
        case 3: st = mem4d_calibration_add_log(c, MEM4D_LOG_TORCHTITAN, NULL, 5, m, l); break;
        case 4: st = mem4d_calibration_add_log_file(c, MEM4D_LOG_NANOTRON, "x.log", NULL, l); break;
        case 5: st = mem4d_calibration_add_megatron_log(c, "", 0, -1, argv, 0); break;
        case 6: st = mem4d_calibration_add_megatron_log_file(c, NULL, 0, NULL, 0); break;
        default: st = mem4d_calibration_fit(c, NULL); break;
        }
        ck_assert_int_eq(st, MEM4D_E_INVALID_ARG);
        ck_assert_str_eq(mem4d_calibration_message(c), why[i]);
    }
    mem4d_layout_free(l);
    mem4d_model_free(m);
    mem4d_calibration_free(c);
}
END_TEST

/* A log's figures are those of the last fit, and only while it stands: a
 * refit that fails midway (here on a measured throughput that makes a step
 * of more than a day) has written some logs' "before" figures and none of
 * their "after" ones, and a log read after a fit was in none; the figures
 * are refused then (MEM4D_E_UNSUPPORTED), as mem4d_calibration_constant()
 * refuses the constants, until a fit succeeds again. */
START_TEST(figures_only_of_a_standing_fit)
{
    mem4d_calibration *c = NULL;
    ck_assert_int_eq(mem4d_calibration_new(&c), MEM4D_OK);
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_layout *l = tu_layout("world=8", "tp=2", "seq=4096", "gbs=64", NULL);
    mem4d_device *d = tu_device("h100-80");
    mem4d_device_param key;
    int fitted_flag;
    double v = 0;
    ck_assert_int_eq(mem4d_calibration_add_measurement(c, m, l, MEM4D_CALIBRATION_MEASURED_STEP_S, 4.0), MEM4D_OK);
    ck_assert_msg(mem4d_calibration_fit(c, d) == MEM4D_OK, "%s", mem4d_calibration_message(c));
    ck_assert_int_eq(mem4d_calibration_get(c, 0, MEM4D_CALIBRATION_PREDICTED_STEP_AFTER_S, &v), MEM4D_OK);
    ck_assert(fabs(v / 4.0 - 1) < 0.01);
    /* a log read after the fit */
    ck_assert_int_eq(mem4d_calibration_add_measurement(c, m, l, MEM4D_CALIBRATION_MEASURED_TFLOPS_PER_GPU, 1e-9),
                     MEM4D_OK);
    ck_assert_int_eq(mem4d_calibration_constant(c, 0, &key, &fitted_flag), MEM4D_E_UNSUPPORTED);
    ck_assert_int_eq(mem4d_calibration_get(c, 0, MEM4D_CALIBRATION_PREDICTED_STEP_AFTER_S, &v), MEM4D_E_UNSUPPORTED);
    ck_assert_int_eq(mem4d_calibration_get(c, 0, MEM4D_CALIBRATION_MEASURED_STEP_S, &v), MEM4D_E_UNSUPPORTED);
    /* the refit fails on it, after the first log's "before" figures */
    ck_assert_int_eq(mem4d_calibration_fit(c, d), MEM4D_E_RANGE);
    ck_assert_int_eq(mem4d_calibration_constant(c, 0, &key, &fitted_flag), MEM4D_E_UNSUPPORTED);
    for (int f = 0; f <= (int)MEM4D_CALIBRATION_MEASURED_TOKENS_PER_S; f++)
        ck_assert_int_eq(mem4d_calibration_get(c, 0, (mem4d_calibration_figure)f, &v), MEM4D_E_UNSUPPORTED);
    mem4d_device_free(d);
    mem4d_layout_free(l);
    mem4d_model_free(m);
    mem4d_calibration_free(c);
}
END_TEST

/* Is device key k among the constants the last fit fitted? */
static int fitted(const mem4d_calibration *c, mem4d_device_param k)
{
    mem4d_device_param key;
    int f;
    for (size_t i = 0; mem4d_calibration_constant(c, i, &key, &f) == MEM4D_OK; i++)
        if (key == k)
            return f;
    ck_abort_msg("%s is not a constant the fit considers", mem4d_device_param_name(k));
    return -1;
}

/* torchtitan and nanotron logs of a job given as model and layout, in their
 * own formats (colours included); a measured figure without a log. Each
 * reads exactly, one run fits the one constant that dominates its step,
 * and the device records that it was calibrated and on how many runs. */
START_TEST(framework_logs_and_measurements)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_layout *l = tu_layout("world=8", "seq=8192", "gbs=32", "zero_stage=3", NULL);
    /* torchtitan/components/metrics.py: tps is tokens/s per GPU; step 1 is the warm-up. */
    static const char titan[] =
        "[rank0]:[titan] 2025-01-01 10:00:00,000 - root - INFO - Training starts at step 1.\n"
        "[rank0]:[titan] 2025-01-01 10:00:10,000 - root - INFO - \033[31mstep:  1  \033[32mloss: 12.25000  "
        "\033[33mgrad_norm:  4.0000  \033[36mmemory: 60.50GiB(63.68%)  \033[34mtps: 1,000  \033[36mtflops: 50.00  "
        "\033[35mmfu: 5.06%\033[39m\n"
        "[rank0]:[titan] 2025-01-01 10:00:20,000 - root - INFO - \033[31mstep: 10  \033[32mloss:  9.50000  "
        "\033[33mgrad_norm:  2.0000  \033[36mmemory: 60.50GiB(63.68%)  \033[34mtps: 8,192  \033[36mtflops: 400.00  "
        "\033[35mmfu: 40.44%\033[39m\n"
        "[rank0]:[titan] 2025-01-01 10:00:30,000 - root - INFO - step: 20  loss:  9.00000  grad_norm:  1.0000  "
        "memory: 60.50GiB(63.68%)  tps: 8,192  tflops: 400.00  mfu: 40.44%\n";
    mem4d_calibration *c = NULL;
    ck_assert_int_eq(mem4d_calibration_new(&c), MEM4D_OK);
    ck_assert_msg(mem4d_calibration_add_log(c, MEM4D_LOG_TORCHTITAN, titan, sizeof titan - 1, m, l) == MEM4D_OK, "%s",
                  mem4d_calibration_message(c));
    mem4d_device *d = tu_device("h100-80");
    ck_assert_int_eq(mem4d_calibration_constant(c, 0, &(mem4d_device_param){0}, &(int){0}), MEM4D_E_UNSUPPORTED);
    ck_assert_msg(mem4d_calibration_fit(c, d) == MEM4D_OK, "%s", mem4d_calibration_message(c));
    /* 32 x 8192 tokens at 8192 tokens/s on each of 8 GPUs: 4 s */
    ck_assert_double_eq_tol(fig(c, 0, MEM4D_CALIBRATION_MEASURED_TOKENS_PER_S), 8 * 8192.0, 1e-9);
    ck_assert_double_eq_tol(fig(c, 0, MEM4D_CALIBRATION_MEASURED_STEP_S), 4.0, 1e-9);
    ck_assert(fabs(fig(c, 0, MEM4D_CALIBRATION_PREDICTED_STEP_AFTER_S) / 4.0 - 1) < 0.005);
    ck_assert_int_eq(fitted(c, MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM), 1);
    ck_assert_int_eq(fitted(c, MEM4D_DEVICE_ATTENTION_EFFICIENCY_PPM), 0);
    ck_assert_int_eq(fitted(c, MEM4D_DEVICE_MICROBATCH_OVERHEAD_NS), 0);
    ck_assert_int_eq(fitted(c, MEM4D_DEVICE_COMM_EFFICIENCY_PPM), 0);
    ck_assert_int_eq(fitted(c, MEM4D_DEVICE_FP8_EFFICIENCY_PPM), 0);
    ck_assert_int_eq(mem4d_calibration_constant(c, 99, &(mem4d_device_param){0}, &(int){0}), MEM4D_E_RANGE);
    ck_assert_uint_eq(dget(d, MEM4D_DEVICE_CALIBRATED_RUNS), 1);
    mem4d_device_free(d);
    mem4d_calibration_free(c);

    /* nanotron's human_format: 4.1K ms is 4.1 s (the "elapsed_" name of
     * older releases read the same). */
    static const char nano[] =
        "\033[2;3m01/01 10:00:00 [INFO|DP=0]\033[0m: iteration: 1 / 100 | consumed_tokens: 262K | "
        "elapsed_time_per_iteration_ms: 9.5K | tokens_per_sec: 27.6K | tokens_per_sec_per_gpu: 3.45K | "
        "global_batch_size: 262K | lm_loss: 12.2 | lr: 0.0003 | model_tflops_per_gpu: 170 | eta: 0:15:00\n"
        "\033[2;3m01/01 10:00:04 [INFO|DP=0]\033[0m: iteration: 2 / 100 | consumed_tokens: 524K | "
        "time_per_iteration_ms: 4.1K | tokens_per_sec: 63.9K | tokens_per_sec_per_gpu: 7.99K | "
        "global_batch_size: 262K | lm_loss: 11.9 | lr: 0.0003 | model_tflops_per_gpu: 393 | eta: 0:06:40\n";
    ck_assert_int_eq(mem4d_calibration_new(&c), MEM4D_OK);
    ck_assert_msg(mem4d_calibration_add_log(c, MEM4D_LOG_NANOTRON, nano, sizeof nano - 1, m, l) == MEM4D_OK, "%s",
                  mem4d_calibration_message(c));
    /* A measured figure without a log, of each kind: one run each. */
    ck_assert_int_eq(mem4d_calibration_add_measurement(c, m, l, MEM4D_CALIBRATION_MEASURED_STEP_S, 4.1), MEM4D_OK);
    ck_assert_int_eq(mem4d_calibration_add_measurement(c, m, l, MEM4D_CALIBRATION_MEASURED_TOKENS_PER_S,
                                                       32 * 8192 / 4.1),
                     MEM4D_OK);
    d = tu_device("h100-80");
    ck_assert_msg(mem4d_calibration_fit(c, d) == MEM4D_OK, "%s", mem4d_calibration_message(c));
    for (size_t i = 0; i < 3; i++)
        ck_assert_double_eq_tol(fig(c, i, MEM4D_CALIBRATION_MEASURED_STEP_S), 4.1, 1e-9);
    /* TFLOP/s per GPU under Megatron's count: the predicted figure at 4.1 s. */
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    ck_assert_int_eq(mem4d_estimate(m, l, d, r), MEM4D_OK);
    double step = 0, tflops = 0;
    ck_assert_int_eq(mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &step), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_metric(r, MEM4D_METRIC_TFLOPS_PER_GPU, &tflops), MEM4D_OK);
    ck_assert_int_eq(mem4d_calibration_add_measurement(c, m, l, MEM4D_CALIBRATION_MEASURED_TFLOPS_PER_GPU,
                                                       tflops * step / 4.1),
                     MEM4D_OK);
    ck_assert_int_eq(mem4d_calibration_fit(c, d), MEM4D_OK);
    ck_assert_double_eq_tol(fig(c, 3, MEM4D_CALIBRATION_MEASURED_STEP_S), 4.1, 1e-9);
    ck_assert_uint_eq(dget(d, MEM4D_DEVICE_CALIBRATED_RUNS), 4);
    /* Refusals. */
    ck_assert_int_eq(mem4d_calibration_add_measurement(c, m, l, MEM4D_CALIBRATION_MEASURED_STEP_S, -1),
                     MEM4D_E_RANGE);
    ck_assert_str_eq(mem4d_calibration_message(c), "a measured figure must be a positive number");
    ck_assert_int_eq(mem4d_calibration_add_measurement(c, m, l, MEM4D_CALIBRATION_MEMORY_RANK, 1),
                     MEM4D_E_INVALID_ARG);
    mem4d_layout *nogbs = tu_layout("world=8", "seq=8192", NULL);
    ck_assert_int_eq(mem4d_calibration_add_measurement(c, m, nogbs, MEM4D_CALIBRATION_MEASURED_STEP_S, 1),
                     MEM4D_E_MISSING);
    ck_assert_int_eq(mem4d_calibration_add_log(c, MEM4D_LOG_TORCHTITAN, "step: 1  loss: 2  tps: soon\n", 27, m, l),
                     MEM4D_E_PARSE);
    ck_assert_str_eq(mem4d_calibration_message(c), "line 1: tps is not a positive number of tokens per second");
    ck_assert_int_eq(mem4d_calibration_add_log(c, MEM4D_LOG_NANOTRON, "iteration: 1 / 2 | time_per_iteration_ms: x\n",
                                               44, m, l),
                     MEM4D_E_PARSE);
    ck_assert_int_eq(mem4d_calibration_add_log(c, MEM4D_LOG_NANOTRON, "hello\n", 6, m, l), MEM4D_E_MISSING);
    ck_assert_str_eq(mem4d_calibration_message(c),
                     "no iteration line with \"time_per_iteration_ms\": not a nanotron training log");
    ck_assert_int_eq(mem4d_calibration_add_log(c, (mem4d_log_format)7, "", 0, m, l), MEM4D_E_INVALID_ARG);
    /* One step line is the warm-up alone: refused, as the header says (it said
     * "taken as it is"), and a measured step is held to a log's range. */
    static const char one[] = "step: 1  loss: 2  tps: 8,192\n";
    ck_assert_int_eq(mem4d_calibration_add_log(c, MEM4D_LOG_TORCHTITAN, one, sizeof one - 1, m, l), MEM4D_E_MISSING);
    ck_assert_ptr_nonnull(strstr(mem4d_calibration_message(c), "one step line only"));
    ck_assert_int_eq(mem4d_calibration_add_measurement(c, m, l, MEM4D_CALIBRATION_MEASURED_STEP_S, 1e308),
                     MEM4D_E_RANGE);
    ck_assert_uint_eq(mem4d_calibration_log_count(c), 4);
    mem4d_layout_free(nogbs);
    mem4d_report_free(r);
    mem4d_device_free(d);
    mem4d_calibration_free(c);
    mem4d_layout_free(l);
    mem4d_model_free(m);
}
END_TEST

/* Runs that vary what each constant acts on identify more than one: step
 * times measured on a device whose GEMM efficiency, attention efficiency
 * and per-micro-batch overhead differ from the preset's, over micro-batch
 * counts and sequence lengths, are fitted back from the preset. One run
 * of them fits one constant only. */
START_TEST(several_runs_identify_several_constants)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_device *truth = tu_device("h100-80");
    ck_assert_int_eq(mem4d_device_set_str(truth, "matmul_efficiency_ppm", "500000"), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_set_str(truth, "attention_efficiency_ppm", "500000"), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_set_str(truth, "microbatch_overhead_ns", "20000000"), MEM4D_OK);
    static const char *const jobs[][4] = {
        {"seq=2048", "gbs=512", "mbs=1", "pp=1"}, {"seq=2048", "gbs=512", "mbs=8", "pp=1"},
        {"seq=16384", "gbs=64", "mbs=1", "pp=1"}, {"seq=8192", "gbs=128", "mbs=2", "pp=1"},
        {"seq=4096", "gbs=256", "mbs=4", "pp=1"},
    };
    mem4d_calibration *c = NULL, *one = NULL;
    ck_assert_int_eq(mem4d_calibration_new(&c), MEM4D_OK);
    ck_assert_int_eq(mem4d_calibration_new(&one), MEM4D_OK);
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    mem4d_layout *ls[5];
    for (size_t i = 0; i < 5; i++) {
        ls[i] = tu_layout("world=8", "tp=2", jobs[i][0], jobs[i][1], jobs[i][2], jobs[i][3], NULL);
        double step = 0;
        ck_assert_int_eq(mem4d_estimate(m, ls[i], truth, r), MEM4D_OK);
        ck_assert_int_eq(mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &step), MEM4D_OK);
        ck_assert_int_eq(mem4d_calibration_add_measurement(c, m, ls[i], MEM4D_CALIBRATION_MEASURED_STEP_S, step),
                         MEM4D_OK);
        if (i == 0)
            ck_assert_int_eq(mem4d_calibration_add_measurement(one, m, ls[i], MEM4D_CALIBRATION_MEASURED_STEP_S, step),
                             MEM4D_OK);
    }
    mem4d_device *d = tu_device("h100-80");
    ck_assert_msg(mem4d_calibration_fit(c, d) == MEM4D_OK, "%s", mem4d_calibration_message(c));
    ck_assert_int_eq(fitted(c, MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM), 1);
    ck_assert_int_eq(fitted(c, MEM4D_DEVICE_ATTENTION_EFFICIENCY_PPM), 1);
    ck_assert_int_eq(fitted(c, MEM4D_DEVICE_MICROBATCH_OVERHEAD_NS), 1);
    ck_assert_int_eq(fitted(c, MEM4D_DEVICE_FP8_EFFICIENCY_PPM), 0); /* no fp8 run */
    printf("fitted back: matmul %llu, attention %llu, per micro-batch %llu ns\n",
           (unsigned long long)dget(d, MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM),
           (unsigned long long)dget(d, MEM4D_DEVICE_ATTENTION_EFFICIENCY_PPM),
           (unsigned long long)dget(d, MEM4D_DEVICE_MICROBATCH_OVERHEAD_NS));
    ck_assert(fabs((double)dget(d, MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM) / 500000 - 1) < 0.03);
    ck_assert(fabs((double)dget(d, MEM4D_DEVICE_ATTENTION_EFFICIENCY_PPM) / 500000 - 1) < 0.05);
    ck_assert(fabs((double)dget(d, MEM4D_DEVICE_MICROBATCH_OVERHEAD_NS) / 20e6 - 1) < 0.1);
    steps_match(c, 5);
    mem4d_device *d1 = tu_device("h100-80");
    ck_assert_int_eq(mem4d_calibration_fit(one, d1), MEM4D_OK);
    int n = 0;
    mem4d_device_param key;
    int f;
    for (size_t i = 0; mem4d_calibration_constant(one, i, &key, &f) == MEM4D_OK; i++)
        n += f;
    ck_assert_int_eq(n, 1);
    for (size_t i = 0; i < 5; i++)
        mem4d_layout_free(ls[i]);
    mem4d_device_free(d1);
    mem4d_device_free(d);
    mem4d_report_free(r);
    mem4d_calibration_free(one);
    mem4d_calibration_free(c);
    mem4d_device_free(truth);
    mem4d_model_free(m);
}
END_TEST

/* A router's load spread (moe_load_spread_ppm) moves only dropless MoE runs
 * whose imbalance is derived: with a forced-balance run of the same job
 * beside a dropless one the fit tells it from the rates and recovers it; a
 * forced-balance run alone leaves it. (Two runs fit two constants: when the
 * rates are off too, the rate that moves both runs most, here the
 * network's efficiency at EP 32 (its all-to-all crosses nodes), takes their
 * common gap, and the spread
 * comes back within about 6%.) */
START_TEST(dropless_runs_fit_the_load_spread)
{
    mem4d_model *m = tu_qwen3("8");
    mem4d_device *truth = tu_device("h100-80");
    ck_assert_int_eq(mem4d_device_set_str(truth, "moe_load_spread_ppm", "600000"), MEM4D_OK);
    const char *routing[2] = {"moe_imbalance_ppm=1000000", "moe_imbalance_ppm=0"};
    mem4d_calibration *c = NULL, *forced = NULL;
    ck_assert_int_eq(mem4d_calibration_new(&c), MEM4D_OK);
    ck_assert_int_eq(mem4d_calibration_new(&forced), MEM4D_OK);
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    for (size_t i = 0; i < 2; i++) {
        mem4d_layout *l = tu_layout("world=64", "ep=32", "seq=4096", "gbs=256", "mbs=1", routing[i], NULL);
        double step = 0;
        ck_assert_int_eq(mem4d_estimate(m, l, truth, r), MEM4D_OK);
        ck_assert_int_eq(mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &step), MEM4D_OK);
        ck_assert_int_eq(mem4d_calibration_add_measurement(c, m, l, MEM4D_CALIBRATION_MEASURED_STEP_S, step),
                         MEM4D_OK);
        if (i == 0)
            ck_assert_int_eq(mem4d_calibration_add_measurement(forced, m, l, MEM4D_CALIBRATION_MEASURED_STEP_S, step),
                             MEM4D_OK);
        mem4d_layout_free(l);
    }
    mem4d_device *d = tu_device("h100-80");
    ck_assert_msg(mem4d_calibration_fit(c, d) == MEM4D_OK, "%s", mem4d_calibration_message(c));
    ck_assert_int_eq(fitted(c, MEM4D_DEVICE_MOE_LOAD_SPREAD_PPM), 1);
    printf("fitted back: load spread %llu\n", (unsigned long long)dget(d, MEM4D_DEVICE_MOE_LOAD_SPREAD_PPM));
    ck_assert(fabs((double)dget(d, MEM4D_DEVICE_MOE_LOAD_SPREAD_PPM) / 600000 - 1) < 0.02);
    steps_match(c, 2);
    mem4d_device *d1 = tu_device("h100-80");
    ck_assert_int_eq(mem4d_calibration_fit(forced, d1), MEM4D_OK);
    ck_assert_int_eq(fitted(forced, MEM4D_DEVICE_MOE_LOAD_SPREAD_PPM), 0);
    ck_assert_uint_eq(dget(d1, MEM4D_DEVICE_MOE_LOAD_SPREAD_PPM), 0);
    mem4d_device_free(d1);
    mem4d_device_free(d);
    mem4d_report_free(r);
    mem4d_calibration_free(forced);
    mem4d_calibration_free(c);
    mem4d_device_free(truth);
    mem4d_model_free(m);
}
END_TEST

/* One run whose exposed communication crosses the network tells the
 * network's rate, not NVLink's: calibrated on a data-parallel job over 16
 * nodes of a device whose network reaches 40% of its rate (NVLink the
 * preset's 70%), the fit takes inter_node_efficiency_ppm, leaves
 * comm_efficiency_ppm, and a tensor-parallel job inside one node is
 * predicted as on the true device. Fitting comm_efficiency_ppm instead
 * (both links, what the fit did before the network had its own key)
 * slows that job's NVLink all-reduces by the network's figure. */
START_TEST(network_run_leaves_nvlink)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_device *truth = tu_device("h100-80");
    ck_assert_int_eq(mem4d_device_set_str(truth, "inter_node_efficiency_ppm", "400000"), MEM4D_OK);
    mem4d_layout *dp = tu_layout("world=128", "seq=1024", "gbs=128", "mbs=1", NULL);
    mem4d_layout *tp = tu_layout("world=8", "tp=8", "seq=8192", "gbs=64", "mbs=1", NULL);
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    double step_dp = 0, step_tp = 0, pred_tp = 0, preset_tp = 0;
    ck_assert_int_eq(mem4d_estimate(m, dp, truth, r), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &step_dp), MEM4D_OK);
    ck_assert_int_eq(mem4d_estimate(m, tp, truth, r), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &step_tp), MEM4D_OK);
    mem4d_calibration *c = NULL;
    ck_assert_int_eq(mem4d_calibration_new(&c), MEM4D_OK);
    ck_assert_int_eq(mem4d_calibration_add_measurement(c, m, dp, MEM4D_CALIBRATION_MEASURED_STEP_S, step_dp), MEM4D_OK);
    mem4d_device *d = tu_device("h100-80");
    ck_assert_int_eq(mem4d_estimate(m, tp, d, r), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &preset_tp), MEM4D_OK);
    ck_assert_double_eq_tol(preset_tp / step_tp, 1, 1e-12); /* NVLink alike on both */
    ck_assert_msg(mem4d_calibration_fit(c, d) == MEM4D_OK, "%s", mem4d_calibration_message(c));
    ck_assert_int_eq(fitted(c, MEM4D_DEVICE_INTER_NODE_EFFICIENCY_PPM), 1);
    ck_assert_int_eq(fitted(c, MEM4D_DEVICE_COMM_EFFICIENCY_PPM), 0);
    ck_assert_uint_eq(dget(d, MEM4D_DEVICE_COMM_EFFICIENCY_PPM), 700000);
    printf("fitted back: network %llu\n", (unsigned long long)dget(d, MEM4D_DEVICE_INTER_NODE_EFFICIENCY_PPM));
    ck_assert(fabs((double)dget(d, MEM4D_DEVICE_INTER_NODE_EFFICIENCY_PPM) / 400000 - 1) < 0.02);
    steps_match(c, 1);
    ck_assert_int_eq(mem4d_estimate(m, tp, d, r), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &pred_tp), MEM4D_OK);
    ck_assert_msg(fabs(pred_tp / step_tp - 1) < 1e-3, "tp job %.4f s on the fitted device, %.4f s on the true one",
                  pred_tp, step_tp);
    /* A fit that moves neither link leaves the network's key unset. */
    mem4d_calibration *one = NULL;
    ck_assert_int_eq(mem4d_calibration_new(&one), MEM4D_OK);
    ck_assert_int_eq(mem4d_calibration_add_measurement(one, m, tp, MEM4D_CALIBRATION_MEASURED_STEP_S, step_tp * 1.1),
                     MEM4D_OK);
    mem4d_device *d1 = tu_device("h100-80");
    ck_assert_msg(mem4d_calibration_fit(one, d1) == MEM4D_OK, "%s", mem4d_calibration_message(one));
    ck_assert_int_eq(fitted(one, MEM4D_DEVICE_INTER_NODE_EFFICIENCY_PPM), 0);
    ck_assert_int_eq(fitted(one, MEM4D_DEVICE_COMM_EFFICIENCY_PPM), 0);
    ck_assert_uint_eq(dget(d1, MEM4D_DEVICE_INTER_NODE_EFFICIENCY_PPM), 0);
    mem4d_device_free(d1);
    mem4d_calibration_free(one);
    mem4d_device_free(d);
    mem4d_calibration_free(c);
    mem4d_report_free(r);
    mem4d_layout_free(tp);
    mem4d_layout_free(dp);
    mem4d_device_free(truth);
    mem4d_model_free(m);
}
END_TEST

int main(int argc, char **argv)
{
    data_dir = argc > 1 ? argv[1] : "tests/data/megatron-logs";
    Suite *s = suite_create("calibrate");
    TCase *tc = tcase_create("megatron-logs");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, one_log_fits_its_step);
    tcase_add_test(tc, memory_offsets_and_two_logs);
    tcase_add_test(tc, arguments_from_argv);
    tcase_add_test(tc, refusals_name_the_line);
    tcase_add_test(tc, refused_arguments_say_why);
    tcase_add_test(tc, figures_only_of_a_standing_fit);
    tcase_add_test(tc, every_argument_megatron_prints);
    tcase_add_test(tc, overlap_p2p_comm_from_the_log);
    tcase_add_test(tc, long_empty_many_and_list_values);
    tcase_add_test(tc, framework_logs_and_measurements);
    tcase_add_test(tc, several_runs_identify_several_constants);
    tcase_add_test(tc, dropless_runs_fit_the_load_spread);
    tcase_add_test(tc, network_run_leaves_nvlink);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
