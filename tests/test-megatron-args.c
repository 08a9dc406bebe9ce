/*
 * Layout -> Megatron-LM flags (mem4d_layout_megatron_args): the exact line,
 * its buffer contract, and the round trip through mem4d_import_megatron().
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "../lib/megatron_args.h"

/* Split a line at single spaces (the function writes no quoted words). */
/* Split a line as the shell would: at spaces, a single-quoted word losing
 * its quotes (the pipeline layout is written quoted). */
static int split(char *line, const char **argv, int max)
{
    int n = 0;
    for (char *tok = strtok(line, " "); tok; tok = strtok(NULL, " ")) {
        ck_assert_int_lt(n, max);
        size_t len = strlen(tok);
        if (len >= 2 && tok[0] == '\'' && tok[len - 1] == '\'') {
            tok[len - 1] = '\0';
            tok++;
        }
        argv[n++] = tok;
    }
    return n;
}

START_TEST(exact_line_for_a_plain_layout)
{
    mem4d_model *m = tu_model("llama3.1-70b");
    mem4d_layout *l = tu_layout("tp=8", "pp=4", "dp=2", "mbs=1", "gbs=128", "seq=8192", NULL);
    char buf[512];
    size_t len = 0;
    ck_assert_int_eq(mem4d_layout_megatron_args(m, l, buf, sizeof buf, &len), MEM4D_OK);
    ck_assert_str_eq(buf, "--tensor-model-parallel-size 8 --context-parallel-size 1 "
                          "--pipeline-model-parallel-size 4 --micro-batch-size 1 "
                          "--global-batch-size 128 --seq-length 8192 --sequence-parallel "
                          "--use-distributed-optimizer");
    ck_assert_uint_eq(len, strlen(buf));
    mem4d_layout_free(l);
    mem4d_model_free(m);
}
END_TEST

/* A model with experts: the fewest flags that set its layout on Megatron-Core
 * 0.16, each expert flag left out where its value is that release's default
 * (etp equal to tp, ep 1, allgather, flex's backend deepep). */
START_TEST(expert_flags_at_megatron_defaults_are_left_out)
{
    static const struct {
        const char *ep, *etp, *dispatcher, *line;
    } cases[] = {
        {"ep=4", "etp=2", "moe_dispatcher=deepep", " --expert-model-parallel-size 4 --micro-batch-size 1 --seq-length "
                                                   "4096 --moe-token-dispatcher-type flex --sequence-parallel"},
        {"ep=4", "etp=1", "moe_dispatcher=hybridep",
         " --expert-model-parallel-size 4 --expert-tensor-parallel-size 1 --micro-batch-size 1 --seq-length 4096 "
         "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep --sequence-parallel"},
        {"ep=1", "etp=0", "moe_dispatcher=allgather", " --micro-batch-size 1 --seq-length 4096 --sequence-parallel"},
        {"ep=1", "etp=0", "moe_dispatcher=alltoall",
         " --micro-batch-size 1 --seq-length 4096 --moe-token-dispatcher-type alltoall --sequence-parallel"},
    };
    mem4d_model *m = tu_model("mixtral-8x7b");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        mem4d_layout *l = tu_layout("tp=2", cases[i].ep, cases[i].etp, "dp=4", "seq=4096", "dist_opt=0",
                                    cases[i].dispatcher, NULL);
        char buf[512], want[512];
        ck_assert_int_eq(mem4d_layout_megatron_args(m, l, buf, sizeof buf, NULL), MEM4D_OK);
        snprintf(want, sizeof want, "--tensor-model-parallel-size 2 --context-parallel-size 1 "
                 "--pipeline-model-parallel-size 1%s", cases[i].line);
        ck_assert_str_eq(buf, want);
        mem4d_layout_free(l);
    }
    mem4d_model_free(m);
}
END_TEST

START_TEST(buffer_contract)
{
    mem4d_model *m = tu_model("llama3.1-8b");
    mem4d_layout *l = tu_layout("tp=2", "dp=4", "seq=4096", NULL);
    size_t need = 0;
    ck_assert_int_eq(mem4d_layout_megatron_args(m, l, NULL, 0, &need), MEM4D_E_RANGE);
    ck_assert_uint_gt(need, 40);
    char *buf = malloc(need + 1);
    ck_assert_ptr_nonnull(buf);
    memset(buf, 'x', need + 1);
    /* One byte short of the NUL: refused, and the buffer left empty. */
    ck_assert_int_eq(mem4d_layout_megatron_args(m, l, buf, need, NULL), MEM4D_E_RANGE);
    ck_assert_str_eq(buf, "");
    size_t len = 0;
    ck_assert_int_eq(mem4d_layout_megatron_args(m, l, buf, need + 1, &len), MEM4D_OK);
    ck_assert_uint_eq(len, need);
    ck_assert_uint_eq(strlen(buf), need);
    ck_assert_int_eq(mem4d_layout_megatron_args(NULL, l, buf, need + 1, NULL), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_layout_megatron_args(m, NULL, buf, need + 1, NULL), MEM4D_E_INVALID_ARG);
    ck_assert_int_eq(mem4d_layout_megatron_args(m, l, NULL, 8, NULL), MEM4D_E_INVALID_ARG);
    free(buf);
    mem4d_layout_free(l);
    mem4d_model_free(m);
}
END_TEST

/* Layouts whose written flags must read back to the same keys. */
static const char *const round_trips[][12] = {
    {"tp=8", "pp=4", "dp=2", "mbs=1", "gbs=128", "seq=8192", NULL},
    {"tp=4", "cp=2", "pp=8", "vpp=5", "dp=1", "mbs=2", "seq=8192", "tp_comm_overlap=1", NULL},
    {"tp=8", "cp=4", "pp=2", "dp=1", "mbs=1", "seq=32768", "cp_comm_type=all_gather", NULL},
    {"tp=8", "pp=16", "first_stage_layers=3", "last_stage_layers=7", "dp=4", "seq=4096", NULL},
    {"tp=8", "pp=16", "vpp=2", "first_stage_layers=10", "last_stage_layers=14", "dp=1", "seq=4096", NULL},
    {"tp=1", "dp=64", "sp=0", "dist_opt=0", "recompute=selective", "seq=2048", "tp_comm_overlap=1", NULL},
    {"tp=8", "pp=2", "dp=4", "recompute=full", "recompute_method=block", "recompute_num_layers=7",
     "overlap_grad_reduce=1", "overlap_param_gather=1", "seq=8192", NULL},
    {"tp=8", "pp=2", "dp=4", "recompute=full", "distribute_saved_activations=1", "seq=8192", NULL},
    {"tp=2", "dp=8", "zero_stage=3", "seq=8192", NULL},
    {"tp=2", "dp=8", "zero_stage=2", "seq=8192", NULL},
    {"tp=8", "dp=1", "seq=4096", "optimizer_moments=1", NULL},
    {"tp=8", "dp=1", "seq=4096", "optimizer_moments=0", NULL},
    {"tp=8", "dp=4", "seq=4096", "dist_opt_instances=2", NULL},
    {"tp=8", "dp=1", "seq=4096", "moe_capacity_factor_ppm=1050000", "moe_pad_to_capacity=1", NULL},
    {"tp=8", "dp=1", "seq=4096", "moe_capacity_factor_ppm=2000000", NULL},
    {"tp=8", "dp=1", "seq=4096", "recompute=none", "activation_offload_layers=40", NULL},
    {"tp=8", "pp=4", "vpp=2", "dp=1", "seq=4096", "first_chunk_fewer_layers=2", "last_chunk_fewer_layers=6", NULL},
    /* a layer table: 80 layers over 4 x 3 virtual stages, a run of equal ones written as "(t*7|)*8" */
    {"tp=8", "pp=4", "vpp=3", "dp=1", "seq=4096", "stage_layers=5,7,7,7,7,7,7,7,7,6,6,7", NULL},
    {"tp=8", "pp=4", "vpp=1", "dp=1", "seq=4096", "stage_layers=20,22,18,20", NULL},
    /* the interleaved schedule's overlapped transfers, Megatron-LM's default with virtual stages
     * (written as a flag when off), over the virtual-stage flags and over a layout string */
    {"tp=4", "pp=8", "vpp=5", "dp=1", "seq=8192", "overlap_p2p_comm=1", NULL},
    {"tp=8", "pp=4", "vpp=3", "dp=1", "seq=4096", "stage_layers=5,7,7,7,7,7,7,7,7,6,6,7", "overlap_p2p_comm=1", NULL},
    /* a model with experts: ep, etp (0: tp) and the dispatcher, each of which the search varies,
     * written where they are not Megatron-Core 0.16's defaults (ep 1, etp = tp, allgather, flex's
     * deepep); the job's own expert flags are replaced, not kept */
    {"model=mixtral-8x7b", "tp=2", "ep=4", "etp=1", "dp=4", "seq=4096", "moe_dispatcher=alltoall", NULL},
    {"model=mixtral-8x7b", "tp=2", "ep=8", "etp=1", "dp=8", "seq=4096", "moe_dispatcher=deepep", NULL},
    {"model=mixtral-8x7b", "tp=2", "ep=2", "dp=4", "seq=4096", "moe_dispatcher=hybridep", NULL},
    {"model=mixtral-8x7b", "tp=4", "ep=1", "dp=2", "seq=4096", "moe_dispatcher=allgather", NULL},
    {"model=mixtral-8x7b", "tp=2", "ep=4", "etp=2", "dp=4", "seq=4096", "moe_dispatcher=deepep", NULL},
};

static const mem4d_layout_param compared[] = {
    MEM4D_LAYOUT_TP, MEM4D_LAYOUT_CP, MEM4D_LAYOUT_PP, MEM4D_LAYOUT_EP, MEM4D_LAYOUT_MICRO_BATCH,
    MEM4D_LAYOUT_GLOBAL_BATCH, MEM4D_LAYOUT_SEQ_LENGTH, MEM4D_LAYOUT_VPP,
    MEM4D_LAYOUT_FIRST_STAGE_LAYERS, MEM4D_LAYOUT_LAST_STAGE_LAYERS, MEM4D_LAYOUT_SEQUENCE_PARALLEL,
    MEM4D_LAYOUT_ZERO_STAGE, MEM4D_LAYOUT_OVERLAP_GRAD_REDUCE, MEM4D_LAYOUT_OVERLAP_PARAM_GATHER,
    MEM4D_LAYOUT_RECOMPUTE, MEM4D_LAYOUT_RECOMPUTE_METHOD, MEM4D_LAYOUT_RECOMPUTE_LAYERS,
    MEM4D_LAYOUT_TP_COMM_OVERLAP, MEM4D_LAYOUT_OPTIMIZER_MOMENTS, MEM4D_LAYOUT_DIST_OPT_INSTANCES,
    MEM4D_LAYOUT_MOE_CAPACITY_FACTOR_PPM, MEM4D_LAYOUT_MOE_PAD_TO_CAPACITY, MEM4D_LAYOUT_ACTIVATION_OFFLOAD_LAYERS,
    MEM4D_LAYOUT_FIRST_CHUNK_FEWER_LAYERS, MEM4D_LAYOUT_LAST_CHUNK_FEWER_LAYERS, MEM4D_LAYOUT_CP_COMM_TYPE,
    MEM4D_LAYOUT_ETP, MEM4D_LAYOUT_MOE_DISPATCHER, MEM4D_LAYOUT_OVERLAP_P2P_COMM,
    MEM4D_LAYOUT_DISTRIBUTE_SAVED_ACTIVATIONS,
};

#define M4D_TEST_VS 64

START_TEST(reads_back_through_the_importer)
{
    const char *const *keys = round_trips[_i];
    bool moe = strncmp(keys[0], "model=", 6) == 0;
    mem4d_model *m = tu_model(moe ? keys[0] + 6 : "llama3.1-70b");
    keys += moe;
    mem4d_layout *want = tu_layout(NULL);
    for (size_t k = 0; keys[k]; k++) {
        char kv[64];
        strncpy(kv, keys[k], sizeof kv - 1);
        kv[sizeof kv - 1] = '\0';
        char *eq = strchr(kv, '=');
        *eq = '\0';
        ck_assert_int_eq(mem4d_layout_set_str(want, kv, eq + 1), MEM4D_OK);
    }
    char line[1024];
    ck_assert_msg(mem4d_validate(m, want, line, sizeof line) == MEM4D_OK, "round trip %d: %s", _i, line);
    ck_assert_int_eq(mem4d_layout_megatron_args(m, want, line, sizeof line, NULL), MEM4D_OK);

    const char *argv[64];
    char copy[1024];
    strcpy(copy, line);
    int argc = split(copy, argv, 64);
    /* every flag of the line is one lib/megatron_args.h lists, so that
     * `mem4d check` takes the job's own out before applying the line */
    for (int i = 0; i < argc; i++)
        if (strncmp(argv[i], "--", 2) == 0)
            ck_assert_msg(m4d_megatron_replaced_words(argc, argv, i) > 0, "round trip %d: %s is not listed as replaced",
                          _i, argv[i]);
    uint64_t dp = 0;
    ck_assert_int_eq(mem4d_layout_get(want, MEM4D_LAYOUT_DP, &dp), MEM4D_OK);
    uint64_t world = 1;
    const mem4d_layout_param sizes[] = {MEM4D_LAYOUT_TP, MEM4D_LAYOUT_CP, MEM4D_LAYOUT_PP, MEM4D_LAYOUT_DP};
    for (size_t i = 0; i < 4; i++) {
        uint64_t v = 0;
        mem4d_layout_get(want, sizes[i], &v);
        world *= v;
    }
    mem4d_import *imp = NULL;
    ck_assert_int_eq(mem4d_import_new(&imp), MEM4D_OK);
    mem4d_layout *got = tu_layout(NULL);
    ck_assert_msg(mem4d_import_megatron(imp, argc, argv, NULL, world, m, got) == MEM4D_OK, "%s: %s", line,
                  mem4d_import_message(imp));
    for (size_t i = 0; i < sizeof compared / sizeof *compared; i++) {
        uint64_t a = 0, b = 0;
        mem4d_layout_get(want, compared[i], &a);
        mem4d_layout_get(got, compared[i], &b);
        if (compared[i] == MEM4D_LAYOUT_RECOMPUTE_LAYERS && a == 0 && b != 0)
            continue; /* "every layer" is written as the layers of one chunk */
        if (compared[i] == MEM4D_LAYOUT_GLOBAL_BATCH && a == 0)
            continue; /* unknown: not written, and Megatron then takes mbs x dp */
        if (compared[i] == MEM4D_LAYOUT_ETP) { /* 0: the experts split as the dense layers, over tp */
            uint64_t tp = 0;
            mem4d_layout_get(want, MEM4D_LAYOUT_TP, &tp);
            a = a ? a : tp;
            b = b ? b : tp;
        }
        if (compared[i] == MEM4D_LAYOUT_SEQUENCE_PARALLEL || compared[i] == MEM4D_LAYOUT_TP_COMM_OVERLAP) {
            uint64_t tp = 0;
            mem4d_layout_get(want, MEM4D_LAYOUT_TP, &tp);
            a = a && tp > 1; /* Megatron turns both off at tp 1; --tp-comm-overlap is not written there */
        }
        if (compared[i] == MEM4D_LAYOUT_OVERLAP_P2P_COMM) { /* read only when interleaved, and off otherwise */
            uint64_t pp = 1, vpp = 1;
            mem4d_layout_get(want, MEM4D_LAYOUT_PP, &pp);
            mem4d_layout_get(want, MEM4D_LAYOUT_VPP, &vpp);
            a = a && pp > 1 && vpp > 1;
            b = b && pp > 1 && vpp > 1;
        }
        if (compared[i] == MEM4D_LAYOUT_DISTRIBUTE_SAVED_ACTIVATIONS) { /* only with full recompute, tp > 1 */
            uint64_t tp = 1, rc = 0;
            mem4d_layout_get(want, MEM4D_LAYOUT_TP, &tp);
            mem4d_layout_get(want, MEM4D_LAYOUT_RECOMPUTE, &rc);
            a = a && tp > 1 && rc == 2;
        }
        ck_assert_msg(a == b, "%s: %s wrote %llu, read back %llu", line,
                      mem4d_layout_param_name(compared[i]), (unsigned long long)a, (unsigned long long)b);
    }
    uint32_t ta[M4D_TEST_VS], tb[M4D_TEST_VS];
    size_t na = mem4d_layout_get_stage_layers(want, ta, M4D_TEST_VS), nb = mem4d_layout_get_stage_layers(got, tb, M4D_TEST_VS);
    ck_assert_msg(na == nb && na <= M4D_TEST_VS && memcmp(ta, tb, na * sizeof *ta) == 0, "%s: the layer table of %zu "
                  "virtual stages read back as %zu", line, na, nb);
    mem4d_layout_free(got);
    mem4d_import_free(imp);
    mem4d_layout_free(want);
    mem4d_model_free(m);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("megatron-args");
    TCase *tc = tcase_create("megatron-args");
    tcase_add_test(tc, exact_line_for_a_plain_layout);
    tcase_add_test(tc, expert_flags_at_megatron_defaults_are_left_out);
    tcase_add_test(tc, buffer_contract);
    tcase_add_loop_test(tc, reads_back_through_the_importer, 0,
                        (int)(sizeof round_trips / sizeof *round_trips));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
