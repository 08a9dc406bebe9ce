/*
 * The torchtitan job reader (mem4d_import_torchtitan_config) and its strict
 * TOML 1.0 reader: torchtitan's published job files of 2024-2026, each
 * schedule's stages per rank and torchtitan's layer split, the types
 * torchtitan's JobConfig declares, TOML syntax (valid forms read, every
 * invalid one refused with its line), and hostile input (a FIFO, a device,
 * deep nesting, a huge file) refused at once.
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mem4d/mem4d.h>

#include "testutil.h"

#ifndef TT_DATA
#define TT_DATA "tests/data/torchtitan"
#endif

static mem4d_import *imp;
static mem4d_layout *lay;

static void setup(void)
{
    ck_assert_int_eq(mem4d_import_new(&imp), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_new(&lay), MEM4D_OK);
}

static void teardown(void)
{
    mem4d_layout_free(lay);
    mem4d_import_free(imp);
}

static mem4d_status tt(const char *toml, uint64_t world, const mem4d_model *m)
{
    return mem4d_import_torchtitan_config_buffer(imp, toml, strlen(toml), world, m, lay);
}

static uint64_t get(mem4d_layout_param k)
{
    uint64_t v = 0;
    ck_assert_int_eq(mem4d_layout_get(lay, k, &v), MEM4D_OK);
    return v;
}

static bool warned(const char *needle)
{
    for (size_t i = 0; i < mem4d_import_warning_count(imp); i++)
        if (strstr(mem4d_import_warning(imp, i), needle))
            return true;
    return false;
}

/* torchtitan's own job files, 2024 to 2026: the layout each describes. */
START_TEST(published_job_files)
{
    static const struct {
        const char *file, *model;
        uint64_t world, tp, pp, dp, mbs, gbs, seq, vpp, recompute, compile;
    } jobs[] = {
        {"llama3_70b-2024.toml", "llama3.1-70b", 64, 8, 1, 8, 8, 64, 8192, 1, 2, 0},
        {"llama3_405b-2025.toml", "llama3.1-405b", 512, 8, 1, 64, 2, 128, 8192, 1, 2, 2},
        {"llama3_8b-2026.toml", "llama3.1-8b", 8, 1, 1, 8, 1, 8, 8192, 1, 3, 0}, /* op-selective, compile off */
        {"llama4_17bx128e-2026.toml", "llama3.1-70b", 256, 8, 4, 8, 1, 8, 8192, 1, 2, 0},
    };
    char path[512];
    for (size_t i = 0; i < sizeof jobs / sizeof jobs[0]; i++) {
        mem4d_model *m = tu_model(jobs[i].model);
        snprintf(path, sizeof path, "%s/%s", TT_DATA, jobs[i].file);
        mem4d_status st = mem4d_import_torchtitan_config(imp, path, jobs[i].world, m, lay);
        ck_assert_msg(st == MEM4D_OK, "%s: %s", jobs[i].file, mem4d_import_message(imp));
        ck_assert_uint_eq(get(MEM4D_LAYOUT_FRAMEWORK), MEM4D_FRAMEWORK_TORCHTITAN);
        ck_assert_uint_eq(get(MEM4D_LAYOUT_TP), jobs[i].tp);
        ck_assert_uint_eq(get(MEM4D_LAYOUT_PP), jobs[i].pp);
        ck_assert_uint_eq(get(MEM4D_LAYOUT_DP), jobs[i].dp);
        ck_assert_uint_eq(get(MEM4D_LAYOUT_MICRO_BATCH), jobs[i].mbs);
        ck_assert_uint_eq(get(MEM4D_LAYOUT_GLOBAL_BATCH), jobs[i].gbs);
        ck_assert_uint_eq(get(MEM4D_LAYOUT_SEQ_LENGTH), jobs[i].seq);
        ck_assert_uint_eq(get(MEM4D_LAYOUT_VPP), jobs[i].vpp);
        ck_assert_uint_eq(get(MEM4D_LAYOUT_RECOMPUTE), jobs[i].recompute);
        ck_assert_uint_eq(get(MEM4D_LAYOUT_COMPILE), jobs[i].compile);
        ck_assert_msg(mem4d_import_warning_count(imp) == 0, "%s: %s", jobs[i].file, mem4d_import_warning(imp, 0));
        mem4d_model_free(m);
    }
    /* pp 4 over 80 layers, the embedding and output counted as layers:
     * 82 / 4 = 20 rest 2, so 21 - 1, 21, 20, 20 - 1 */
    uint32_t layers[8];
    ck_assert_uint_eq(mem4d_layout_get_stage_layers(lay, layers, 8), 4);
    ck_assert_uint_eq(layers[0], 20);
    ck_assert_uint_eq(layers[1], 21);
    ck_assert_uint_eq(layers[2], 20);
    ck_assert_uint_eq(layers[3], 19);
    /* the 16B MoE: ep 8 over dp_shard 8, expert TP 1 */
    snprintf(path, sizeof path, "%s/deepseek_v3_16b-2026.toml", TT_DATA);
    ck_assert_int_eq(mem4d_import_torchtitan_config(imp, path, 8, NULL, lay), MEM4D_OK);
    ck_assert_uint_eq(get(MEM4D_LAYOUT_EP), 8);
    ck_assert_uint_eq(get(MEM4D_LAYOUT_ETP), 1);
    ck_assert_uint_eq(get(MEM4D_LAYOUT_COMPILE), 2); /* components = ["loss"]: the compiled loss */
    ck_assert(warned("compiles the loss alone"));
}
END_TEST

/* torch.distributed.pipelining's schedules: one stage per rank for 1F1B and
 * GPipe, two for the looped and V schedules (torchtitan's pipeline_llm
 * default), case-insensitive; pipeline_parallel_layers_per_stage and the
 * explicit splits set it too. */
START_TEST(schedules_and_stages_per_rank)
{
    static const struct {
        const char *name;
        uint64_t vpp, afab;
        const char *warn;
    } s[] = {
        {"1F1B", 1, 0, NULL},          {"gpipe", 1, 1, NULL},
        {"Interleaved1F1B", 2, 0, NULL}, {"interleaved1f1b", 2, 0, NULL},
        {"InterleavedZeroBubble", 2, 0, "splits the backward"},
        {"LoopedBFS", 2, 0, "every micro-batch"},
        {"ZBVZeroBubble", 2, 0, "in a V"},  {"DualPipeV", 2, 0, "in a V"},
        {"PipelineScheduleMulti", 2, 0, NULL}, {"PipelineScheduleSingle", 1, 0, NULL},
    };
    mem4d_model *m = tu_model("llama3.1-8b"); /* 32 layers */
    char doc[512];
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        snprintf(doc, sizeof doc,
                 "[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_schedule = \"%s\"\n"
                 "[training]\nlocal_batch_size = 8\n", s[i].name);
        ck_assert_msg(tt(doc, 32, m) == MEM4D_OK, "%s: %s", s[i].name, mem4d_import_message(imp));
        ck_assert_uint_eq(get(MEM4D_LAYOUT_VPP), s[i].vpp);
        ck_assert_uint_eq(get(MEM4D_LAYOUT_PIPELINE_SCHEDULE), s[i].afab);
        ck_assert_uint_eq(get(MEM4D_LAYOUT_MICRO_BATCH), 1); /* pipeline_parallel_microbatch_size's default */
        ck_assert_uint_eq(mem4d_layout_get_stage_layers(lay, NULL, 0), 4 * s[i].vpp);
        if (s[i].warn)
            ck_assert_msg(warned(s[i].warn), "%s", s[i].name);
        else
            ck_assert_uint_eq(mem4d_import_warning_count(imp), 0);
    }
    /* 34 effective layers over 8 stages: 5,4,4,4,4,4,4,5 effective, less the ends */
    uint32_t t[8];
    ck_assert_uint_eq(mem4d_layout_get_stage_layers(lay, t, 8), 4);
    ck_assert_int_eq(tt("[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_schedule = \"Interleaved1F1B\"\n",
                        32, m), MEM4D_OK);
    ck_assert_uint_eq(mem4d_layout_get_stage_layers(lay, t, 8), 8);
    ck_assert_uint_eq(t[0], 4);
    ck_assert_uint_eq(t[1], 5);
    ck_assert_uint_eq(t[6], 4);
    ck_assert_uint_eq(t[7], 3);
    /* layers per stage 3: ceil(34 / 3) = 12 stages, 3 per rank */
    ck_assert_int_eq(tt("[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_schedule = \"ZBVZeroBubble\"\n"
                        "pipeline_parallel_layers_per_stage = 3\n", 32, m), MEM4D_OK);
    ck_assert_uint_eq(get(MEM4D_LAYOUT_VPP), 3);
    /* the explicit parts and 2024's split points (llama3.2-1b: 16 layers) */
    mem4d_model *small = tu_model("llama3.2-1b");
    ck_assert_int_eq(tt("[parallelism]\npipeline_parallel_degree = 2\npipeline_parallel_schedule = \"Interleaved1F1B\"\n"
                        "module_fqns_per_model_part = [[\"tok_embeddings\", \"layers.0\", \"layers.1\"],"
                        " [\"layers.2\", \"layers.3\", \"layers.4\", \"layers.5\", \"layers.6\"],"
                        " [\"layers.7\", \"layers.8\", \"layers.9\", \"layers.10\", \"layers.11\"],"
                        " [\"layers.12\", \"layers.13\", \"layers.14\", \"layers.15\", \"norm\", \"output\"]]\n",
                        8, small), MEM4D_OK);
    ck_assert_uint_eq(mem4d_layout_get_stage_layers(lay, t, 8), 4);
    ck_assert_uint_eq(t[0], 2);
    ck_assert_uint_eq(t[3], 4);
    ck_assert_uint_eq(get(MEM4D_LAYOUT_VPP), 2);
    ck_assert_int_eq(tt("[parallelism]\npipeline_parallel_degree = 2\n"
                        "module_fqns_per_model_part = [[\"layers.0\"], [\"layers.1\"]]\n", 8, small),
                     MEM4D_E_LAYERS_PP);
    ck_assert_ptr_nonnull(strstr(mem4d_import_message(imp), "2 of the 16 layers"));
    ck_assert_int_eq(tt("[experimental]\npipeline_parallel_degree = 2\npipeline_parallel_schedule = \"1f1b\"\n"
                        "pipeline_parallel_split_points = [\"layers.6\"]\n", 8, small), MEM4D_OK);
    ck_assert_uint_eq(mem4d_layout_get_stage_layers(lay, t, 8), 2);
    ck_assert_uint_eq(t[0], 6);
    ck_assert_uint_eq(t[1], 10);
    ck_assert_int_eq(tt("[experimental]\npipeline_parallel_degree = 2\npipeline_parallel_split_points = [\"layers.6\","
                        " \"layers.3\"]\n", 8, small), MEM4D_E_PARSE);
    mem4d_model_free(small);
    mem4d_model_free(m);
}
END_TEST

/* What torchtitan itself refuses is refused here, with its reason. */
START_TEST(what_torchtitan_refuses)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    static const struct {
        const char *toml;
        mem4d_status st;
        const char *says;
    } bad[] = {
        {"[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_schedule = \"Bogus\"\n", MEM4D_E_PARSE,
         "not one of 1F1B"},
        {"[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_schedule = \"1F1B\"\n"
         "pipeline_parallel_layers_per_stage = 3\n", MEM4D_E_CONFLICT, "one stage per rank"},
        {"[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_schedule = \"Interleaved1F1B\"\n"
         "pipeline_parallel_layers_per_stage = 9\n", MEM4D_E_CONFLICT, "at least two stages"},
        {"[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_schedule = \"Interleaved1F1B\"\n"
         "pipeline_parallel_layers_per_stage = 5\n", MEM4D_E_LAYERS_PP, "not divisible by pp"},
        {"[parallelism]\ntensor_parallel_degree = 3\n", MEM4D_E_WORLD, "not divisible"},
        {"[parallelism]\ndata_parallel_shard_degree = 4\n", MEM4D_E_WORLD, "not the world size"},
        {"[parallelism]\ndata_parallel_shard_degree = 0\n", MEM4D_E_RANGE, "-1 (the rest)"},
        {"[parallelism]\ntensor_parallel_degree = -2\n", MEM4D_E_RANGE, "not a degree"},
        {"[training]\nglobal_batch_size = 100\nlocal_batch_size = 8\n", MEM4D_E_BATCH, "not a multiple"},
        {"[parallelism]\npipeline_parallel_degree = 2\npipeline_parallel_microbatch_size = 3\n"
         "[training]\nlocal_batch_size = 8\n", MEM4D_E_BATCH, "not divisible"},
        {"[activation_checkpoint]\nmode = \"sometimes\"\n", MEM4D_E_PARSE, "not one of selective"},
        {"[activation_checkpoint]\nselective_ac_option = \"x2\"\n", MEM4D_E_PARSE, "\"op\" or a positive"},
        {"[training]\nmixed_precision_param = \"float64\"\n", MEM4D_E_PARSE, "not one of bfloat16, float32"},
        {"[parallelism]\nfsdp_reshard_after_forward = \"sometimes\"\n", MEM4D_E_PARSE, "not one of default"},
        {"[parallelism]\nexpert_parallel_degree = 2\nexpert_tensor_parallel_degree = 4\n", MEM4D_E_CONFLICT,
         "must be 1 or"},
        /* types: a string where a table, a boolean or an integer is expected */
        {"parallelism = \"tp=8\"\n", MEM4D_E_PARSE, "parallelism is a string, not a table"},
        {"[compile]\nenable = \"no\"\n", MEM4D_E_PARSE, "compile.enable is a string, not true or false"},
        {"[parallelism]\ntensor_parallel_degree = \"8\"\n", MEM4D_E_PARSE, "is a string, not an integer"},
        {"[parallelism]\ntensor_parallel_degree = 8.0\n", MEM4D_E_PARSE, "is a float, not an integer"},
        {"[parallelism]\ntensor_parallel_degree = true\n", MEM4D_E_PARSE, "is a boolean, not an integer"},
        {"[activation_checkpoint]\nselective_ac_option = 2\n", MEM4D_E_PARSE, "an integer, not a string"},
        {"[model]\nconverters = [\"float8\", 3]\n", MEM4D_E_PARSE, "converters holds an integer"},
        {"[quantize]\nlinear = 1\n", MEM4D_E_PARSE, "quantize.linear is an integer, not a table"},
    };
    ck_assert_int_eq(mem4d_layout_set(lay, MEM4D_LAYOUT_TP, 5), MEM4D_OK);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mem4d_status st = tt(bad[i].toml, 8, m);
        ck_assert_msg(st == bad[i].st && strstr(mem4d_import_message(imp), bad[i].says),
                      "%s: %d %s", bad[i].toml, st, mem4d_import_message(imp));
        ck_assert_uint_eq(get(MEM4D_LAYOUT_TP), 5); /* all or nothing */
    }
    /* dp_shard -1 without a world size: say what is missing */
    ck_assert_int_eq(tt("[training]\nseq_len = 4096\n", 0, m), MEM4D_E_MISSING);
    ck_assert_ptr_nonnull(strstr(mem4d_import_message(imp), "world size"));
    /* layers_per_stage without the model's layers */
    ck_assert_int_eq(tt("[parallelism]\npipeline_parallel_degree = 2\npipeline_parallel_schedule = \"Interleaved1F1B\"\n"
                        "pipeline_parallel_layers_per_stage = 4\n", 8, NULL), MEM4D_E_MISSING);
    /* and what it accepts but this model does not cover is a warning */
    ck_assert_int_eq(tt("[training]\nenable_cpu_offload = true\n[activation_checkpoint]\nmode = \"memory_budget\"\n"
                        "[parallelism]\ntensor_paralel_degree = 2\n", 8, m), MEM4D_OK);
    ck_assert(warned("enable_cpu_offload"));
    ck_assert(warned("memory_budget"));
    ck_assert(warned("parallelism.tensor_paralel_degree is not a key"));
    mem4d_model_free(m);
}
END_TEST

/* context_parallel_rotate_method: alltoall is the ring (cp_comm_type p2p);
 * allgather, torchtitan's default, is neither model, so at cp > 1 the ring
 * stands in with a warning; a value torch lacks is refused. */
START_TEST(context_parallel_rotate_method)
{
    static const struct {
        const char *toml;
        bool warns;
    } cases[] = {
        {"[parallelism]\ncontext_parallel_degree = 2\ncontext_parallel_rotate_method = \"alltoall\"\n", false},
        {"[parallelism]\ncontext_parallel_degree = 2\ncontext_parallel_rotate_method = \"allgather\"\n", true},
        {"[parallelism]\ncontext_parallel_degree = 2\n", true}, /* the default */
        {"[experimental]\ncontext_parallel_degree = 2\n", true}, /* 2024's section */
        {"[parallelism]\ncontext_parallel_degree = 1\n", false}, /* no context parallelism */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_int_eq(mem4d_layout_set(lay, MEM4D_LAYOUT_CP_COMM_TYPE, 1), MEM4D_OK);
        ck_assert_msg(tt(cases[i].toml, 8, NULL) == MEM4D_OK, "%s: %s", cases[i].toml, mem4d_import_message(imp));
        ck_assert_uint_eq(get(MEM4D_LAYOUT_CP_COMM_TYPE), 0);
        ck_assert_msg(warned("context_parallel_rotate_method allgather") == cases[i].warns, "%s", cases[i].toml);
    }
    ck_assert_int_eq(tt("[parallelism]\ncontext_parallel_degree = 2\ncontext_parallel_rotate_method = \"ring\"\n",
                        8, NULL), MEM4D_E_PARSE);
    ck_assert_ptr_nonnull(strstr(mem4d_import_message(imp), "is not one of allgather, alltoall"));
}
END_TEST

/* TOML 1.0: the forms of the specification read as it says. */
START_TEST(toml_forms)
{
    static const char *const good[] = {
        "# a comment\n\n[parallelism] # trailing\ntensor_parallel_degree = 0x2\n",
        "parallelism.tensor_parallel_degree = +2\n",
        "\"parallelism\".'tensor_parallel_degree' = 2\r\n",
        "[ parallelism ]\ntensor_parallel_degree = 0b10\n",
        "parallelism = { tensor_parallel_degree = 2, context_parallel_degree = 1 }\n",
        ("[parallelism]\ntensor_parallel_degree = 2\n[training]\nseq_len = 1_024\n[job]\ndescription = \"\"\"\nmulti\\\n"
        "   line \"quoted\" \\u00e9\"\"\"\nname = '''C:\\raw'''\nwhen = 1979-05-27T07:32:00Z\nday = 1979-05-27\n"
        "at = 07:32:00.5\nlocal = 1979-05-27 07:32:00\nx = [1, [2, 3], { a = 'b' }, ]\nf = [1e3, -0.5, inf, nan, +1_0.2_5]\n"),
        ("[[metrics.sinks]]\nname = 'a'\n[[metrics.sinks]]\nname = 'b'\n[metrics.sinks.opts]\nx = 1\n"
         "[parallelism]\ntensor_parallel_degree = 2\n"),
        "[a.b.c]\nx = 1\n[a]\ny = 2\n[parallelism]\ntensor_parallel_degree = 2\n",
        "\xef\xbb\xbf[parallelism]\ntensor_parallel_degree = 2\n",
        "[parallelism]\ntensor_parallel_degree = 2\n[job]\nname = \"\xce\xb1\xce\xb2 \\U0001F600\"\n",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        mem4d_status st = tt(good[i], 8, NULL);
        ck_assert_msg(st == MEM4D_OK, "%zu: %s", i, mem4d_import_message(imp));
        ck_assert_uint_eq(get(MEM4D_LAYOUT_TP), 2);
    }
    /* every torchtitan TOML form here reads 2 tp and 4 dp over 8 GPUs */
    ck_assert_uint_eq(get(MEM4D_LAYOUT_DP), 4);
}
END_TEST

/* Not TOML: each refused with its line and what is wrong. */
START_TEST(toml_errors)
{
    static const struct {
        const char *toml, *says;
    } bad[] = {
        {"[parallelism]\ntensor_parallel_degree = 2\ntensor_parallel_degree = 4\n", "line 3: the key tensor_parallel_degree is defined twice"},
        {"[parallelism]\n[parallelism]\n", "line 2: [parallelism]: the table parallelism is already defined"},
        {"a = 1\na.b = 2\n", "already defined"},
        {"[a]\nb.c = 1\n[a.b]\n", "already defined"},
        {"[a]\nb = 1\n[a.b]\n", "already defined"},
        {"a = [1]\n[[a]]\n", "already an array"},
        {"a = {x = 1}\n[a.y]\n", "already defined"},
        {"a = {x = 1}\na.y = 2\n", "already defined"},
        {"x = \"never ends\n", "a newline inside a one-line string"},
        {"x = \"\"\"never ends\n", "line 1: a string that never ends"},
        {"x = \"\\q\"\n", "unknown escape"},
        {"x = \"\\uD800\"\n", "not a Unicode scalar value"},
        {"x = 01\n", "not a TOML number"},
        {"x = 1__0\n", "not a TOML number"},
        {"x = 9223372036854775808\n", "does not fit in 64 bits"},
        {"x = 1.\n", "not a TOML number"},
        {"x = .5\n", "not a TOML number"},
        {"x = 1e400\n", "out of range"},
        {"x = no\n", "not a TOML number"},
        {"x = True\n", "not a TOML number"},
        {"x = 1979-13-27\n", "not a TOML date"},
        {"x = 1 2\n", "after the value"},
        {"x = [1 2]\n", "expected ',' or ']'"},
        {"x = {a = 1,}\n", "trailing comma"},
        {"x = {a = 1\n}\n", "must end on its line"},
        {"= 1\n", "'=' cannot start a key"},
        {"x\n", "expected '='"},
        {"x =\n", "a value is missing"},
        {"[a\n", "expected ']'"},
        {"[[a]\n", "expected ']]'"},
        {"x = 1\n\x01\n", "line 2: control character U+0001"},
        {"x = \"a\x7f\"\n", "control character U+007F"},
        {"x = \"\xff\"\n", "not UTF-8"},
        {"x = \"\xc0\xaf\"\n", "not UTF-8"},
        {"x = \"\xed\xa0\x80\"\n", "surrogate"},
        {"x = 1\r\ny = 2\r", "control character U+000D"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mem4d_status st = tt(bad[i].toml, 8, NULL);
        ck_assert_msg(st == MEM4D_E_PARSE && strstr(mem4d_import_message(imp), bad[i].says),
                      "%zu %s: %d %s", i, bad[i].toml, st, mem4d_import_message(imp));
    }
    /* a NUL byte inside the buffer */
    ck_assert_int_eq(mem4d_import_torchtitan_config_buffer(imp, "x = 1\0y = 2\n", 12, 8, NULL, lay), MEM4D_E_PARSE);
    ck_assert_ptr_nonnull(strstr(mem4d_import_message(imp), "U+0000"));
}
END_TEST

/* Hostile input: deep nesting, a huge buffer, a FIFO, a device, a directory. */
START_TEST(hostile_input)
{
    size_t depth = 100000;
    char *deep = malloc(depth * 2 + 8);
    ck_assert_ptr_nonnull(deep);
    memcpy(deep, "x = ", 4);
    memset(deep + 4, '[', depth);
    memset(deep + 4 + depth, ']', depth);
    deep[4 + 2 * depth] = '\0';
    ck_assert_int_eq(tt(deep, 8, NULL), MEM4D_E_PARSE);
    ck_assert_ptr_nonnull(strstr(mem4d_import_message(imp), "nested more than"));
    memset(deep + 4, '{', depth);
    ck_assert_int_eq(tt(deep, 8, NULL), MEM4D_E_PARSE);
    free(deep);
    char *big = calloc(1, (2u << 20) + 1);
    ck_assert_ptr_nonnull(big);
    memset(big, '#', 2u << 20);
    ck_assert_int_eq(tt(big, 8, NULL), MEM4D_E_RANGE);
    free(big);
    char dir[] = "/tmp/mem4d-tt-XXXXXX", fifo[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/job.toml", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(mem4d_import_torchtitan_config(imp, fifo, 8, NULL, lay), MEM4D_E_IO); /* at once, not blocked */
    ck_assert_ptr_nonnull(strstr(mem4d_import_message(imp), "not a regular file"));
    unlink(fifo);
    rmdir(dir);
    ck_assert_int_eq(mem4d_import_torchtitan_config(imp, "/dev/zero", 8, NULL, lay), MEM4D_E_IO);
    ck_assert_int_eq(mem4d_import_torchtitan_config(imp, "/", 8, NULL, lay), MEM4D_E_IO);
    ck_assert_int_eq(mem4d_import_torchtitan_config(imp, "/nonexistent/job.toml", 8, NULL, lay), MEM4D_E_IO);
    ck_assert_int_eq(mem4d_import_torchtitan_config(imp, NULL, 8, NULL, lay), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_import_torchtitan_config_buffer(NULL, "", 0, 8, NULL, lay), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_import_torchtitan_config_buffer(imp, NULL, 0, 8, NULL, lay), MEM4D_E_INVALID_ARG);
    /* an empty document is torchtitan's defaults */
    ck_assert_int_eq(mem4d_import_torchtitan_config_buffer(imp, "", 0, 8, NULL, lay), MEM4D_OK);
    ck_assert_uint_eq(get(MEM4D_LAYOUT_DP), 8);
    ck_assert_uint_eq(get(MEM4D_LAYOUT_SEQ_LENGTH), 2048);
    ck_assert_uint_eq(get(MEM4D_LAYOUT_GLOBAL_BATCH), 64);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("torchtitan");
    TCase *tc = tcase_create("torchtitan");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, published_job_files);
    tcase_add_test(tc, schedules_and_stages_per_rank);
    tcase_add_test(tc, what_torchtitan_refuses);
    tcase_add_test(tc, context_parallel_rotate_method);
    tcase_add_test(tc, toml_forms);
    tcase_add_test(tc, toml_errors);
    tcase_add_test(tc, hostile_input);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
