/*
 * Step time of expert layers (lib/perf_moe.c through mem4d_estimate(), and
 * the search over ep, etp and the dispatcher): what each mechanism of
 * doc/perf.md, "Expert layers", does to the prediction.
 * SPDX-License-Identifier: MIT
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

/* A device key predict() sets on h100-80 when not NULL ("key=value"). */
static const char *device_kv;

/* The metric of model m on device d for layout l. */
static double metric_of(const mem4d_model *m, const mem4d_layout *l, const mem4d_device *d, mem4d_metric which)
{
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    ck_assert_msg(mem4d_estimate(m, l, d, r) == MEM4D_OK, "%s", mem4d_report_message(r));
    double v = -1;
    ck_assert_int_eq(mem4d_report_metric(r, which, &v), MEM4D_OK);
    mem4d_report_free(r);
    return v;
}

/* The metric of model m on h100-80 for the layout of the given keys. */
static double predict(const mem4d_model *m, mem4d_metric which, const char *first, ...)
{
    va_list ap;
    va_start(ap, first);
    mem4d_layout *l = NULL;
    ck_assert_int_eq(mem4d_layout_new(&l), MEM4D_OK);
    for (const char *kv = first; kv; kv = va_arg(ap, const char *)) {
        const char *eq = strchr(kv, '=');
        ck_assert(eq != NULL);
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
        ck_assert_msg(mem4d_layout_set_str(l, key, eq + 1) == MEM4D_OK, "%s", kv);
    }
    va_end(ap);
    mem4d_device *d = tu_device("h100-80");
    if (device_kv) {
        const char *eq = strchr(device_kv, '=');
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(eq - device_kv), device_kv);
        ck_assert_int_eq(mem4d_device_set_str(d, key, eq + 1), MEM4D_OK);
    }
    double v = metric_of(m, l, d, which);
    mem4d_device_free(d);
    mem4d_layout_free(l);
    return v;
}

#define JOB "seq=4096", "gbs=256", "mbs=1", "recompute=selective"
#define EP MEM4D_METRIC_EP_COMM_S
#define EXPERTS MEM4D_METRIC_EXPERT_COMPUTE_S

/* A dense model has no expert time; an expert layer's GEMMs and router are
 * parts of the compute. */
START_TEST(breakdown)
{
    mem4d_model *dense = tu_model("llama3.1-8b");
    ck_assert(predict(dense, EXPERTS, "world=8", JOB, NULL) == 0);
    ck_assert(predict(dense, MEM4D_METRIC_ROUTER_PERMUTE_S, "world=8", JOB, NULL) == 0);
    mem4d_model_free(dense);
    mem4d_model *m = tu_qwen3("8");
    double e = predict(m, EXPERTS, "world=64", "ep=8", JOB, NULL);
    double r = predict(m, MEM4D_METRIC_ROUTER_PERMUTE_S, "world=64", "ep=8", JOB, NULL);
    double c = predict(m, MEM4D_METRIC_COMPUTE_TIME_S, "world=64", "ep=8", JOB, NULL);
    ck_assert_msg(e > 0 && r > 0 && e + r < c, "%g %g %g", e, r, c);
    ck_assert(predict(m, EP, "world=64", "ep=8", JOB, NULL) > 0);
    mem4d_model_free(m);
}
END_TEST

/* DeepSeek-V3's leading dense layers (moe_first_dense_layers) are timed as
 * dense layers: no expert GEMMs, router or dispatch there, and the dense
 * ffn (12288 wide, against 8 experts of 1536 routed per token) instead. On
 * one stage of 8 layers, 2 of them dense, the expert seconds are 6/8 of the
 * all-expert model's; with pp 2 the first stage holds the dense layers and
 * the last (all expert layers) keeps its breakdown. */
START_TEST(dense_layers)
{
    mem4d_model *m = tu_qwen3("8");
    double e8 = predict(m, EXPERTS, "world=64", "ep=8", JOB, NULL);
    double s8 = predict(m, MEM4D_METRIC_STEP_TIME_S, "world=64", "ep=8", JOB, NULL);
    double p8 = predict(m, EP, "world=64", "pp=2", "ep=8", JOB, NULL);
    ck_assert_int_eq(mem4d_model_set_str(m, "moe_first_dense_layers", "2"), MEM4D_OK);
    double e6 = predict(m, EXPERTS, "world=64", "ep=8", JOB, NULL);
    double s6 = predict(m, MEM4D_METRIC_STEP_TIME_S, "world=64", "ep=8", JOB, NULL);
    double p6 = predict(m, EP, "world=64", "pp=2", "ep=8", JOB, NULL);
    ck_assert_msg(fabs(e6 / e8 - 0.75) < 1e-9, "expert seconds %g against %g", e6, e8);
    ck_assert_msg(s6 != s8, "the dense layers take as long as expert layers: %g", s6);
    ck_assert_msg(fabs(p6 - p8) < 1e-9 * p8, "pp 2: the all-expert last stage sets the pace: EP %g against %g", p6, p8);
    mem4d_model_free(m);
}
END_TEST

/* The alltoall dispatcher sorts the rows it receives by local expert and
 * back (sort_chunks_by_idxs): more memory-bound work than DeepEP's where a
 * rank holds several experts; where it holds one they differ by DeepEP's
 * host synchronisations alone: 20 launches after them a forward at the
 * host's 8 us instead of the GPU's 2 us, 8 layers and 2 micro-batches. */
START_TEST(alltoall_sorts_by_expert)
{
    mem4d_model *m = tu_qwen3("8");
    const mem4d_metric R = MEM4D_METRIC_ROUTER_PERMUTE_S;
    double a8 = predict(m, R, "world=128", "ep=8", "moe_dispatcher=alltoall", JOB, NULL);
    double d8 = predict(m, R, "world=128", "ep=8", "moe_dispatcher=deepep", JOB, NULL);
    double a128 = predict(m, R, "world=128", "ep=128", "moe_dispatcher=alltoall", JOB, NULL);
    double d128 = predict(m, R, "world=128", "ep=128", "moe_dispatcher=deepep", JOB, NULL);
    ck_assert_msg(a8 > 1.1 * d8, "16 local experts: alltoall %g, deepep %g", a8, d8);
    ck_assert_msg(fabs(d128 - a128 - 20 * 6e-6 * 8 * 2) < 1e-9, "one local expert: alltoall %g, deepep %g", a128,
                  d128);
    mem4d_model_free(m);
}
END_TEST

/* Megatron's FSDP gathers a layer once for the re-run forward of full
 * recompute and its backward: its exposed gathers are no more than with
 * selective recompute, where the backward alone hides the second one. */
START_TEST(fsdp_full_recompute_gathers_once)
{
    mem4d_model *m = tu_qwen3("8");
    const mem4d_metric DP = MEM4D_METRIC_DP_COMM_S;
#define FSDP "world=256", "tp=2", "ep=8", "zero_stage=3", "seq=4096", "gbs=256", "mbs=1"
    double full = predict(m, DP, FSDP, "recompute=full", NULL);
    double sel = predict(m, DP, FSDP, "recompute=selective", NULL);
#undef FSDP
    ck_assert_msg(full > 0 && full < sel, "FSDP seconds: full recompute %g, selective %g", full, sel);
    mem4d_model_free(m);
}
END_TEST

/* Megatron-Core lays the EP group out over ep·etp consecutive ranks: ep 8
 * with etp 1 stays on one node's NVLink, with etp = tp = 4 it spans four
 * nodes and crosses the network. */
START_TEST(group_placement)
{
    mem4d_model *m = tu_qwen3("8");
    double inside = predict(m, EP, "world=64", "tp=4", "ep=8", "etp=1", "moe_dispatcher=alltoall", JOB, NULL);
    double across = predict(m, EP, "world=64", "tp=4", "ep=8", "etp=4", "moe_dispatcher=alltoall", JOB, NULL);
    ck_assert_msg(3 * inside < across, "%g %g", inside, across);
    mem4d_model_free(m);
}
END_TEST

/* DeepEP sends a token once per remote node (about 2.7 copies a token for
 * 128 experts, top-8, over 4 nodes) at 0.95 of the NIC; the all-to-all
 * sends one per remote expert (6) at NCCL's share. */
START_TEST(deepep_once_per_node)
{
    mem4d_model *m = tu_qwen3("8");
    double a2a = predict(m, EP, "world=256", "tp=2", "ep=32", "etp=1", "moe_dispatcher=alltoall", JOB, NULL);
    double deepep = predict(m, EP, "world=256", "tp=2", "ep=32", "etp=1", "moe_dispatcher=deepep", JOB, NULL);
    double ratio = a2a / deepep, want = (6.0 / 0.7) / (2.7 / 0.95); /* bytes over the link's share */
    ck_assert_msg(fabs(ratio / want - 1) < 0.1, "all-to-all / DeepEP %g, expected about %g", ratio, want);
    mem4d_model_free(m);
}
END_TEST

/* The allgather dispatcher gathers every token of the ep group on each
 * rank and reduce-scatters back, (ep - 1) tokens' rows a token over the
 * ring, against the all-to-all's k (ep - 1)/ep copies: Mixtral's top-2 of
 * 8 experts at ep 8 inside a node moves ep/k = 4 times the bytes. */
START_TEST(allgather_moves_every_token)
{
    mem4d_model *m = tu_model("mixtral-8x7b");
#define ONE_NODE "world=8", "ep=8", "etp=1", "moe_imbalance_ppm=1000000", "seq=4096", "gbs=64", "mbs=1"
    double a2a = predict(m, EP, ONE_NODE, "moe_dispatcher=alltoall", NULL);
    double ag = predict(m, EP, ONE_NODE, "moe_dispatcher=allgather", NULL);
#undef ONE_NODE
    ck_assert_msg(fabs(ag / a2a / 4 - 1) < 0.02, "allgather / all-to-all EP seconds %g, expected about 4", ag / a2a);
    mem4d_model_free(m);
}
END_TEST

/* On a GB200 NVL72 (4 GPUs a tray, 72 on one NVLink domain) HybridEP keeps
 * an ep 32 group's tokens on NVLink: its EP seconds do not depend on the
 * network. On 4-GPU NVLink domains HybridEP crosses the network. DeepEP's
 * normal kernels do not run a group wider than a tray there (8 NVLink
 * peers a node or one node; DeepEP issue 579): refused, within a tray
 * estimated. */
START_TEST(hybridep_in_the_nvlink_domain)
{
    mem4d_model *m = tu_qwen3("8");
    mem4d_device *d = tu_device("gb200-186");
    mem4d_layout *l = tu_layout("world=64", "ep=32", "etp=1", "moe_imbalance_ppm=1000000", JOB, NULL);
    double t[2]; /* NICs as preset, a quarter of their speed */
    uint64_t bw = tu_device_get(d, "nic_bandwidth");
    ck_assert_int_eq(mem4d_layout_set_str(l, "moe_dispatcher", "hybridep"), MEM4D_OK);
    for (int j = 0; j < 2; j++) {
        ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_NIC_BANDWIDTH, j ? bw / 4 : bw), MEM4D_OK);
        t[j] = metric_of(m, l, d, EP);
    }
    ck_assert_msg(t[1] == t[0] && t[0] > 0, "HybridEP %g s, %g s on a slower network", t[0], t[1]);
    ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_NIC_BANDWIDTH, bw), MEM4D_OK);
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set_str(l, "moe_dispatcher", "deepep"), MEM4D_OK);
    const char *eps[] = {"32", "8", "4"};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(mem4d_layout_set_str(l, "ep", eps[i]), MEM4D_OK);
        mem4d_status st = mem4d_estimate(m, l, d, r);
        ck_assert_msg(st == (i < 2 ? MEM4D_E_CONFLICT : MEM4D_OK), "DeepEP ep %s on gb200-186: %s", eps[i],
                      mem4d_report_message(r));
        if (i < 2)
            ck_assert_ptr_nonnull(strstr(mem4d_report_message(r), "DeepEP issue 579"));
    }
    /* nodes of 8 GPUs (an H100 node's) run it */
    ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_GPUS_PER_NODE, 8), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set_str(l, "ep", "32"), MEM4D_OK);
    ck_assert_msg(mem4d_estimate(m, l, d, r) == MEM4D_OK, "%s", mem4d_report_message(r));
    mem4d_report_free(r);
    ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_GPUS_PER_NODE, 4), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_set(d, MEM4D_DEVICE_NVLINK_DOMAIN, 4), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set_str(l, "moe_dispatcher", "hybridep"), MEM4D_OK);
    ck_assert_msg(metric_of(m, l, d, EP) > t[1], "HybridEP over 4-GPU domains");
    mem4d_layout_free(l);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

/* HybridEP's NVLink copies on a GB200 NVL72: SM-bound below 16 SMs (34
 * GB/s an SM: half the SMs, twice the seconds), then at a ceiling of 0.62
 * of the link that more SMs do not raise (its GB200 rows: 544 GB/s at 16
 * SMs, 557 at 32). */
START_TEST(hybridep_sm_ceiling)
{
    mem4d_model *m = tu_qwen3("8");
    mem4d_device *d = tu_device("gb200-186");
    mem4d_layout *l =
        tu_layout("world=64", "ep=32", "etp=1", "moe_imbalance_ppm=1000000", "moe_dispatcher=hybridep", JOB, NULL);
    const char *sms[] = {"4", "8", "20", "64"};
    double t[4];
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(mem4d_layout_set_str(l, "moe_dispatcher_sms", sms[i]), MEM4D_OK);
        t[i] = metric_of(m, l, d, EP);
    }
    ck_assert_msg(fabs(t[0] / t[1] / 2 - 1) < 0.02, "HybridEP 4 / 8 SMs: %g s / %g s", t[0], t[1]);
    ck_assert_msg(t[1] > 2 * t[2] && t[2] == t[3], "HybridEP 8, 20, 64 SMs: %g, %g, %g s", t[1], t[2], t[3]);
    mem4d_layout_free(l);
    mem4d_device_free(d);
    mem4d_model_free(m);
}
END_TEST

/* The EP overlap hides one micro-batch's dispatch and combine under
 * another's compute; DeepEP's SMs are taken from that compute. */
START_TEST(ep_overlap)
{
    mem4d_model *m = tu_qwen3("8");
    double plain = predict(m, EP, "world=256", "tp=2", "ep=32", "etp=1", "moe_dispatcher=deepep", JOB, NULL);
    double hidden = predict(m, EP, "world=256", "tp=2", "ep=32", "etp=1", "moe_dispatcher=deepep", "moe_ep_overlap=1",
                            JOB, NULL);
    ck_assert_msg(hidden < 0.8 * plain, "%g %g", hidden, plain);
    const mem4d_metric T = MEM4D_METRIC_STEP_TIME_S;
    double few = predict(m, T, "world=256", "tp=2", "ep=32", "etp=1", "moe_dispatcher=deepep", "moe_ep_overlap=1",
                         "moe_dispatcher_sms=8", JOB, NULL);
    double many = predict(m, T, "world=256", "tp=2", "ep=32", "etp=1", "moe_dispatcher=deepep", "moe_ep_overlap=1",
                          "moe_dispatcher_sms=64", JOB, NULL);
    ck_assert_msg(many > few, "%g %g", many, few);
    /* the warm-up forwards and cool-down backwards run alone: with pp 2 and
     * vpp 2 (2 + 2 + 1 of m·v chunk passes on the first rank) fewer
     * micro-batches expose more of each one's dispatch */
#define PIPE "world=256", "tp=2", "pp=2", "vpp=2", "ep=32", "etp=1", "moe_dispatcher=deepep", "moe_ep_overlap=1"
    double m8 = predict(m, EP, PIPE, "seq=4096", "gbs=512", "mbs=1", NULL) / 8; /* dp 64 */
    double m64 = predict(m, EP, PIPE, "seq=4096", "gbs=4096", "mbs=1", NULL) / 64;
#undef PIPE
    ck_assert_msg(m8 > 1.05 * m64, "EP seconds a micro-batch: %g with 8 of them, %g with 64", m8, m64);
    mem4d_model_free(m);
}
END_TEST

/* The EP overlap's unpaired passes are the chunk passes memory holds on the
 * first stage at its peak (one rule, m4d_in_flight_units()): the overlap
 * hides nothing exactly when every chunk pass of the first rank is a
 * warm-up one, m·v <= 2(p-1) + (v-1)·p + 1, where memory's in-flight count
 * on stage 0 is every micro-batch; under all forward, all backward every
 * micro-batch is in flight and none pairs. Fails if the two drift. */
static void ep_and_in_flight(const mem4d_model *m, uint64_t p, uint64_t v, uint64_t mb, bool afab, bool overlap,
                             double *ep, uint64_t *in_flight)
{
    mem4d_layout *l = NULL;
    ck_assert_int_eq(mem4d_layout_new(&l), MEM4D_OK);
    char gbs[32], pp[32], vpp[32];
    uint64_t dp = 256 / (2 * p);
    snprintf(gbs, sizeof gbs, "%llu", (unsigned long long)(mb * dp));
    snprintf(pp, sizeof pp, "%llu", (unsigned long long)p);
    snprintf(vpp, sizeof vpp, "%llu", (unsigned long long)v);
    const char *kv[][2] = {{"world", "256"}, {"tp", "2"}, {"pp", pp}, {"vpp", vpp}, {"ep", "32"}, {"etp", "1"},
                           {"moe_dispatcher", "deepep"}, {"moe_ep_overlap", overlap ? "1" : "0"},
                           {"pipeline_schedule", afab ? "afab" : "1f1b"}, {"seq", "4096"}, {"gbs", gbs},
                           {"mbs", "1"}, {"recompute", "selective"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        ck_assert_msg(mem4d_layout_set_str(l, kv[i][0], kv[i][1]) == MEM4D_OK, "%s", kv[i][0]);
    mem4d_device *d = tu_device("h100-80");
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    ck_assert_msg(mem4d_estimate(m, l, d, r) == MEM4D_OK, "%s", mem4d_report_message(r));
    ck_assert_int_eq(mem4d_report_metric(r, EP, ep), MEM4D_OK);
    ck_assert_int_eq(mem4d_report_get(r, 0, MEM4D_TERM_IN_FLIGHT, in_flight), MEM4D_OK);
    mem4d_report_free(r);
    mem4d_device_free(d);
    mem4d_layout_free(l);
}

START_TEST(ep_overlap_warmup_is_memorys)
{
    mem4d_model *m = tu_qwen3("8");
    static const uint64_t pv[][2] = {{2, 2}, {4, 2}, {2, 4}};
    for (size_t i = 0; i < sizeof pv / sizeof pv[0]; i++) {
        uint64_t p = pv[i][0], v = pv[i][1], warm = 2 * (p - 1) + (v - 1) * p + 1;
        for (uint64_t mb = 1; mb <= 3 * p; mb++) {
            double plain, hidden;
            uint64_t a, b;
            ep_and_in_flight(m, p, v, mb, false, false, &plain, &a);
            ep_and_in_flight(m, p, v, mb, false, true, &hidden, &b);
            uint64_t units = mb * v < warm ? mb * v : warm;
            ck_assert_uint_eq(a, b);
            ck_assert_msg(b == (units + v - 1) / v, "pp %llu vpp %llu m %llu: in flight %llu",
                          (unsigned long long)p, (unsigned long long)v, (unsigned long long)mb,
                          (unsigned long long)b);
            bool all_warm = mb * v <= warm;
            ck_assert_msg(all_warm ? fabs(hidden - plain) <= 1e-12 * plain : hidden < plain,
                          "pp %llu vpp %llu m %llu: EP %g with the overlap, %g without", (unsigned long long)p,
                          (unsigned long long)v, (unsigned long long)mb, hidden, plain);
        }
    }
    /* pp 1: one forward and one backward alone, memory holds one; afab:
     * memory holds all 4 and the overlap hides nothing */
    double plain, hidden;
    uint64_t a, b;
    ep_and_in_flight(m, 1, 1, 4, false, false, &plain, &a);
    ep_and_in_flight(m, 1, 1, 4, false, true, &hidden, &b);
    ck_assert_msg(a == 1 && b == 1 && hidden < plain, "%llu %llu %g %g", (unsigned long long)a,
                  (unsigned long long)b, hidden, plain);
    ep_and_in_flight(m, 1, 1, 4, true, false, &plain, &a);
    ep_and_in_flight(m, 1, 1, 4, true, true, &hidden, &b);
    ck_assert_msg(a == 4 && b == 4 && fabs(hidden - plain) <= 1e-12 * plain, "%llu %llu %g %g",
                  (unsigned long long)a, (unsigned long long)b, hidden, plain);
    mem4d_model_free(m);
}
END_TEST

/* --delay-wgrad-compute under the EP overlap runs the experts' weight
 * gradients apart (mlp_bwd_dw), after the dgrads: the backward dispatch
 * waits for the dgrads alone and the forward dispatch hides under the
 * weight gradients too. At ep 32 over 4 nodes a dispatch outlasts the
 * dgrads but not the dgrads and wgrads together: the paired steps expose
 * nothing more (doc/perf.md, "Overlap": 0.07 of 0.99 ms a layer at
 * t3-174's figures); the compute is the same. */
START_TEST(delayed_wgrad)
{
    mem4d_model *m = tu_qwen3("8");
#define EP32 "world=256", "tp=2", "ep=32", "etp=1", "moe_dispatcher=deepep", "moe_ep_overlap=1", \
             "seq=4096", "gbs=8192", "mbs=1", "recompute=selective"
    double plain = predict(m, EP, EP32, NULL), delayed = predict(m, EP, EP32, "delay_wgrad=1", NULL);
    ck_assert_msg(delayed < 0.99 * plain, "EP seconds: %g delayed, %g not", delayed, plain);
    ck_assert(predict(m, EXPERTS, EP32, NULL) == predict(m, EXPERTS, EP32, "delay_wgrad=1", NULL));
#undef EP32
    mem4d_model_free(m);
}
END_TEST

/* FSDP2 with expert parallelism (torchtitan; Megatron-FSDP alike): a rank
 * gathers and reduce-scatters its E/ep experts over the expert-data-
 * parallel group, t·d·c/(ep·etp) ranks, the dense weights over dp·cp. At
 * ep 64 on 64 GPUs that group is one rank: only the dense weights move,
 * and the DP seconds are the dense model's share. (At ep 8 against ep 1 the
 * expert bytes fall 9-fold but the group, one rank a node, runs on one
 * NIC where a 64-rank ring crosses a node's 8: about the same seconds.) */
START_TEST(fsdp_with_experts)
{
    mem4d_model *m = tu_qwen3("8");
    const mem4d_metric DP = MEM4D_METRIC_DP_COMM_S;
#define TT "world=64", "framework=torchtitan", "seq=4096", "gbs=256", "mbs=1"
    double ep8 = predict(m, DP, TT, "ep=8", NULL), ep64 = predict(m, DP, TT, "ep=64", NULL);
    ck_assert_msg(ep64 < 0.25 * ep8, "FSDP seconds: %g at ep 64, %g at ep 8", ep64, ep8);
    /* reshard_after_forward "never" (NeMo AutoModel's default) keeps each
     * block gathered from its forward to its backward: one gather a
     * micro-batch, not two */
    double kept = predict(m, DP, TT, "ep=8", "reshard_after_forward=never", NULL);
    ck_assert_msg(kept < 0.8 * ep8, "FSDP seconds: %g kept gathered, %g resharded", kept, ep8);
    /* and copies the gathered buffer out into the parameters once, not twice */
    const mem4d_metric C = MEM4D_METRIC_COMPUTE_TIME_S;
    ck_assert(predict(m, C, TT, "ep=8", "reshard_after_forward=never", NULL) < predict(m, C, TT, "ep=8", NULL));
#undef TT
    mem4d_model_free(m);
}
END_TEST

/* What the EP overlap hides costs the compute beside it: on Hopper's
 * persistent cuBLAS GEMMs (gemm_library native) a second wave for the
 * GEMMs, on a CUDA 11-era library only the SMs DeepEP holds. */
START_TEST(ep_overlap_persistent)
{
    mem4d_model *m = tu_qwen3("8");
#define EP32 "world=256", "tp=2", "ep=32", "etp=1", "moe_dispatcher=deepep"
#define STEADY "seq=4096", "gbs=8192", "mbs=1", "recompute=selective" /* 64 micro-batches: mostly paired */
    double ratio[2];
    static const char *const libs[2] = {"gemm_library=native", "gemm_library=cuda11"};
    for (int i = 0; i < 2; i++) {
        device_kv = libs[i];
        ratio[i] = predict(m, EP, EP32, "moe_ep_overlap=1", STEADY, NULL) / predict(m, EP, EP32, STEADY, NULL);
    }
    device_kv = NULL;
#undef STEADY
#undef EP32
    ck_assert_msg(ratio[0] > 1.3 * ratio[1], "EP seconds with the overlap over without: %g native, %g cuda11",
                  ratio[0], ratio[1]);
    mem4d_model_free(m);
}
END_TEST

/* An fp8 recipe's GEMMs and quantization take its measured time over
 * delayed scaling's: blockwise slower than MXFP8 slower than delayed; the
 * recipe does nothing without fp8. */
START_TEST(fp8_recipe)
{
    mem4d_model *m = tu_qwen3("8");
    const mem4d_metric T = MEM4D_METRIC_STEP_TIME_S;
#define FP8 "world=64", "ep=8", "fp8=1"
    double delayed = predict(m, T, FP8, JOB, NULL);
    double mx = predict(m, T, FP8, "fp8_recipe=mxfp8", JOB, NULL);
    double block = predict(m, T, FP8, "fp8_recipe=blockwise", JOB, NULL);
    double experts = predict(m, EXPERTS, FP8, JOB, NULL);
    double block_experts = predict(m, EXPERTS, FP8, "fp8_recipe=blockwise", JOB, NULL);
#undef FP8
    ck_assert_msg(delayed < mx && mx < block, "%g %g %g", delayed, mx, block);
    ck_assert_msg(block_experts > 1.1 * experts, "expert seconds %g blockwise, %g delayed", block_experts, experts);
    ck_assert(predict(m, T, "world=64", "ep=8", "fp8_recipe=blockwise", JOB, NULL) ==
              predict(m, T, "world=64", "ep=8", JOB, NULL));
    mem4d_model_free(m);
}
END_TEST

/* Many small experts: the same routed rows over 16 local experts (ep 8:
 * 512 rows each at tp 4) take longer than over 4 (ep 32: 2048 rows each);
 * grouped GEMMs sharing the SMs (with the EP overlap's hardware queues)
 * beat one expert at a time. */
START_TEST(small_experts)
{
    mem4d_model *m = tu_qwen3("8");
    double ep8 = predict(m, EXPERTS, "world=256", "tp=4", "ep=8", "etp=1", JOB, NULL);
    double ep32 = predict(m, EXPERTS, "world=256", "tp=4", "ep=32", "etp=1", JOB, NULL);
    ck_assert_msg(ep8 > 1.3 * ep32, "%g %g", ep8, ep32);
    double grouped = predict(m, EXPERTS, "world=256", "tp=4", "ep=8", "etp=1", "moe_ep_overlap=1", JOB, NULL);
    double sequential = predict(m, EXPERTS, "world=256", "tp=4", "ep=8", "etp=1", "moe_ep_overlap=1",
                                "moe_grouped_gemm=0", JOB, NULL);
    ck_assert_msg(sequential > 1.2 * grouped, "%g %g", sequential, grouped);
    mem4d_model_free(m);
}
END_TEST

/* Megatron-Core's SequentialMLP (moe_grouped_gemm 0) runs its 16 local
 * experts (ep 8) one MLP after another: without the EP overlap the GEMMs
 * take as long as TE's GroupedLinear's (one at a time either way), but each
 * expert launches its own activation and the outputs are concatenated, 16
 * kernels more a forward (32 a backward) at 2 us, 8 layers, 4
 * micro-batches; where the host sets the pace (tp 4, 128 tokens: the
 * backward, test host_bound), its ops (4 + 16 a forward against
 * GroupedMLP's 10, twice that backward) cost more too. */
START_TEST(sequential_experts)
{
    mem4d_model *m = tu_qwen3("8");
    const mem4d_metric R = MEM4D_METRIC_ROUTER_PERMUTE_S;
    double grouped = predict(m, R, "world=64", "ep=8", JOB, NULL);
    double seq = predict(m, R, "world=64", "ep=8", "moe_grouped_gemm=0", JOB, NULL);
    ck_assert_msg(fabs(seq - grouped - 3 * 16 * 2e-6 * 8 * 4) < 1e-9, "router and launches %g, grouped %g", seq,
                  grouped);
    ck_assert(predict(m, EXPERTS, "world=64", "ep=8", JOB, NULL) ==
              predict(m, EXPERTS, "world=64", "ep=8", "moe_grouped_gemm=0", JOB, NULL));
#define TINY "world=32", "tp=4", "ep=8", "seq=128", "gbs=64", "mbs=1", "recompute=selective"
    /* the step's compute (pp 1: the step less the DP collectives, the
     * optimizer and the share a straggling host costs the 4 hosts'
     * step, lib/perf.c STRAGGLER_STEP) */
    const mem4d_metric T = MEM4D_METRIC_COMPUTE_TIME_S;
    device_kv = "board_power_w=0"; /* the host's seconds exactly: no power balance (lib/perf.c POWER_BALANCE) */
    double host = predict(m, T, TINY, "moe_grouped_gemm=0", NULL) - predict(m, T, TINY, NULL);
    device_kv = NULL;
#undef TINY
    /* 64 layer passes: the 48 more launches at 2 us on the GPU, and the
     * host-bound backward's 20 more ops at 8 us beyond its 32 more launches */
    ck_assert_msg(fabs(host - 64 * (48 * 2e-6 + (20 * 8e-6 - 32 * 2e-6))) < 1e-9, "host-bound: %g s more", host);
    mem4d_model_free(m);
}
END_TEST

/* Where an expert layer's GPU work is shorter than the host's, the GPU
 * runs at the host's pace: Qwen3-235B at tp 4 and ep 8 with 32 tokens a
 * rank issues 73 + 2·16 ops a forward and 146 + 8·16 a backward, 8 us
 * each, per layer and micro-batch (8 layers, 8 micro-batches), in far
 * less GPU time. CUDA graphs of attention, router and preprocess replay 11
 * and 20 of the forward's ops from one launch each, and twice as many of
 * the backward's: up to 93 ops fewer per layer and micro-batch, more than
 * the forward's 31 where the backward stays host-bound. */
START_TEST(host_bound)
{
    mem4d_model *m = tu_qwen3("8");
#define TINY "world=32", "tp=4", "ep=8", "seq=128", "gbs=64", "mbs=1", "recompute=selective"
    const mem4d_metric C = MEM4D_METRIC_COMPUTE_TIME_S;
    double step = predict(m, MEM4D_METRIC_STEP_TIME_S, TINY, NULL), eager = predict(m, C, TINY, NULL);
    ck_assert_msg(step >= 64 * (105 + 274) * 8e-6, "%g", step);
    double graphs = predict(m, C, TINY, "cuda_graph=transformer_engine", "cuda_graph_scope=25", NULL);
    ck_assert_msg(graphs < eager - 64 * 31 * 8e-6 && graphs >= eager - 64 * 93 * 8e-6 - 1e-9, "%g %g", eager, graphs);
#undef TINY
    mem4d_model_free(m);
}
END_TEST

/* A host-bound expert layer's forward runs at the host's pace, beside the
 * GPU's work and every collective it waits on, the context-parallel ring's
 * among them (as EAGER_HOST's wait counts it): slower GEMMs hide more of
 * the ring and leave the host less to wait for, never a faster step. A
 * DeepSeek-V3-shaped model (MLA, 256 experts, 61 layers) in fp8 at tp 2,
 * cp 4 on 32 GPUs: its bf16 GEMMs at 60% of the peak instead of 80.3% made
 * the step 36.322 -> 36.303 s, the ring's exposed time falling 45 ms while
 * the host's wait, which did not count it, gave back none of it. */
START_TEST(host_bound_counts_cp)
{
    mem4d_model *m = NULL;
    ck_assert_int_eq(mem4d_model_new(&m), MEM4D_OK);
    static const char *const dims[][2] = {
        {"hidden_size", "7168"},        {"ffn_hidden_size", "18432"}, {"num_layers", "61"},
        {"num_attention_heads", "128"}, {"num_query_groups", "128"},  {"vocab_size", "129280"},
        {"swiglu", "1"},                {"num_experts", "256"},       {"moe_router_topk", "8"},
        {"moe_ffn_hidden_size", "2048"}, {"q_lora_rank", "1536"},     {"kv_lora_rank", "512"},
        {"qk_head_dim", "128"},         {"qk_pos_emb_head_dim", "64"}, {"v_head_dim", "128"},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        ck_assert_int_eq(mem4d_model_set_str(m, dims[i][0], dims[i][1]), MEM4D_OK);
#define MLA_CP "world=32", "tp=2", "cp=4", "seq=4096", "gbs=32", "mbs=1", "fp8=1"
    double step = predict(m, MEM4D_METRIC_STEP_TIME_S, MLA_CP, NULL);
    double ring = predict(m, MEM4D_METRIC_CP_COMM_S, MLA_CP, NULL);
    device_kv = "matmul_efficiency_ppm=600000";
    double slower = predict(m, MEM4D_METRIC_STEP_TIME_S, MLA_CP, NULL);
    double hidden = predict(m, MEM4D_METRIC_CP_COMM_S, MLA_CP, NULL);
    device_kv = NULL;
#undef MLA_CP
    ck_assert_msg(hidden < ring, "the slower GEMMs hide no more of the ring: %g against %g s", hidden, ring);
    ck_assert_msg(slower >= step, "slower GEMMs, a faster step: %.6f against %.6f s", slower, step);
    mem4d_model_free(m);
}
END_TEST

/* An expert GEMM's columns past a whole tile (TILE_N) take one more tile
 * a row tile, which runs as long as a whole one in its wave, as the rows of
 * a partial row tile do: a wider expert is never faster. Qwen3-30B-A3B's
 * shape at tp 2, etp 2: experts 1056 wide (fc1 1056 columns a rank, five
 * tiles of 256) took 12.6% less expert time than 1024 wide (four), their
 * work spread over one more tile in waves of the same few tiles. */
START_TEST(partial_column_tile)
{
    mem4d_model *m = tu_qwen3("8");
    ck_assert_int_eq(mem4d_model_set_str(m, "hidden_size", "2048"), MEM4D_OK);
    ck_assert_int_eq(mem4d_model_set_str(m, "num_attention_heads", "32"), MEM4D_OK);
    double prev = 0;
    for (int f = 960; f <= 1152; f += 32) {
        char w[32];
        snprintf(w, sizeof w, "%d", f);
        ck_assert_int_eq(mem4d_model_set_str(m, "moe_ffn_hidden_size", w), MEM4D_OK);
        double e = predict(m, EXPERTS, "world=8", "tp=2", "etp=2", "seq=4096", "gbs=32", "mbs=1", NULL);
        ck_assert_msg(e >= prev, "experts %d wide: %g s, narrower: %g s", f, e, prev);
        prev = e;
    }
    mem4d_model_free(m);
}
END_TEST

/* The shared expert beside the dispatch and combine hides them; without a
 * shared expert the setting changes nothing. */
START_TEST(shared_expert_overlap)
{
    mem4d_model *m = tu_qwen3("8");
    double plain = predict(m, EP, "world=64", "ep=8", JOB, NULL);
    ck_assert(predict(m, EP, "world=64", "ep=8", "moe_shared_expert_overlap=1", JOB, NULL) == plain);
    ck_assert_int_eq(mem4d_model_set_str(m, "moe_shared_expert_intermediate_size", "8192"), MEM4D_OK);
    double shared = predict(m, EP, "world=64", "ep=8", JOB, NULL);
    double hidden = predict(m, EP, "world=64", "ep=8", "moe_shared_expert_overlap=1", JOB, NULL);
    ck_assert_msg(hidden < 0.8 * shared, "%g %g", hidden, shared);
    mem4d_model_free(m);
}
END_TEST

/* The busiest rank's rows set the pace: 1.5 times the mean costs about 1.5
 * times the expert GEMMs. */
START_TEST(imbalance)
{
    mem4d_model *m = tu_qwen3("8");
    double even = predict(m, EXPERTS, "world=64", "ep=8", "moe_imbalance_ppm=1000000", JOB, NULL);
    double skew = predict(m, EXPERTS, "world=64", "ep=8", "moe_imbalance_ppm=1500000", JOB, NULL);
    ck_assert_msg(skew > 1.35 * even && skew < 1.65 * even, "%g %g", skew, even);
    mem4d_model_free(m);
}
END_TEST

/* Dropless routing with a learned router (moe_imbalance_ppm 0): the busiest
 * of ep ranks, each the sum of E/ep experts' loads. Qwen3-235B's 128
 * experts: EP 8 (16 a rank) about 1.08 of balanced, EP 32 (4 a rank) about
 * 1.22; one rank holds every expert at EP 1; a capacity factor caps it. */
START_TEST(derived_imbalance)
{
    mem4d_model *m = tu_qwen3("8");
    double r[2];
    const char *eps[2] = {"ep=8", "ep=32"};
    for (int i = 0; i < 2; i++) {
        double even = predict(m, EXPERTS, "world=64", eps[i], "moe_imbalance_ppm=1000000", JOB, NULL);
        r[i] = predict(m, EXPERTS, "world=64", eps[i], JOB, NULL) / even;
    }
    ck_assert_msg(r[0] > 1.04 && r[0] < 1.12, "%g", r[0]);
    ck_assert_msg(r[1] > 1.15 && r[1] < 1.30, "%g", r[1]);
    ck_assert(predict(m, EXPERTS, "world=64", "ep=1", JOB, NULL) ==
              predict(m, EXPERTS, "world=64", "ep=1", "moe_imbalance_ppm=1000000", JOB, NULL));
    /* dropping at the capacity: at most max(factor, 1) of the mean */
    ck_assert(predict(m, EXPERTS, "world=64", "ep=32", "moe_capacity_factor_ppm=1000000", JOB, NULL) ==
              predict(m, EXPERTS, "world=64", "ep=32", "moe_capacity_factor_ppm=1000000",
                      "moe_imbalance_ppm=1000000", JOB, NULL));
    ck_assert(predict(m, EXPERTS, "world=64", "ep=8", "moe_capacity_factor_ppm=1200000",
                      "moe_imbalance_ppm=1500000", JOB, NULL) ==
              predict(m, EXPERTS, "world=64", "ep=8", "moe_capacity_factor_ppm=1200000",
                      "moe_imbalance_ppm=1200000", JOB, NULL));
    /* an auxiliary-loss-free router (a per-expert bias, MaxVio 0.04 against
     * 0.52) is nearly balanced; a spread the device sets applies to either */
    ck_assert_int_eq(mem4d_model_set_str(m, "moe_router_expert_bias", "1"), MEM4D_OK);
    double lf = predict(m, EXPERTS, "world=64", "ep=32", JOB, NULL) /
                predict(m, EXPERTS, "world=64", "ep=32", "moe_imbalance_ppm=1000000", JOB, NULL);
    ck_assert_msg(lf > 1 && lf < 1.03, "%g", lf);
    ck_assert_int_eq(mem4d_model_set_str(m, "moe_router_expert_bias", "0"), MEM4D_OK);
    /* below the mean is no load a rank can have */
    char why[256];
    mem4d_layout *l = tu_layout("world=64", "ep=8", "moe_imbalance_ppm=500000", JOB, NULL);
    ck_assert_int_eq(mem4d_validate(m, l, why, sizeof why), MEM4D_E_RANGE);
    ck_assert_msg(strstr(why, "moe_imbalance_ppm") != NULL, "%s", why);
    mem4d_layout_free(l);
    mem4d_model_free(m);
}
END_TEST

/* The dispatchers a search over experts yields (a bit per dispatcher),
 * with ep fixed at `ep` (1: searched), the dispatchers allowed `allow` (0:
 * any), on device d; *eps and *etp1 receive the ep values and the count of
 * layouts with etp 1, *count the count of layouts. */
static uint64_t search_layouts(const mem4d_model *m, const mem4d_device *d, const char *ep, uint64_t allow,
                               uint64_t *eps, uint64_t *etp1, uint64_t *count)
{
    mem4d_layout *base = tu_layout("world=64", "seq=4096", "gbs=256", ep, NULL);
    mem4d_search *s = NULL;
    ck_assert_int_eq(mem4d_search_new(m, d, base, &s), MEM4D_OK);
    ck_assert_int_eq(mem4d_search_set_option(s, MEM4D_SEARCH_FITS_ONLY, 0), MEM4D_OK);
    if (allow)
        ck_assert_int_eq(mem4d_search_allow(s, MEM4D_LAYOUT_MOE_DISPATCHER, &allow, 1), MEM4D_OK);
    mem4d_layout *l = NULL;
    ck_assert_int_eq(mem4d_layout_new(&l), MEM4D_OK);
    uint64_t disps = 0, n = 0;
    *eps = *etp1 = 0;
    while (mem4d_search_next(s, l, NULL) == MEM4D_OK) {
        uint64_t e, etp, disp;
        ck_assert_int_eq(mem4d_layout_get(l, MEM4D_LAYOUT_EP, &e), MEM4D_OK);
        ck_assert_int_eq(mem4d_layout_get(l, MEM4D_LAYOUT_ETP, &etp), MEM4D_OK);
        ck_assert_int_eq(mem4d_layout_get(l, MEM4D_LAYOUT_MOE_DISPATCHER, &disp), MEM4D_OK);
        *eps |= UINT64_C(1) << (e < 63 ? e : 63);
        disps |= UINT64_C(1) << disp;
        *etp1 += etp == 1;
        n++;
    }
    *count = n;
    mem4d_layout_free(l);
    mem4d_search_free(s);
    mem4d_layout_free(base);
    return disps;
}

/* search_layouts(), which yields some layout. */
static uint64_t searched(const mem4d_model *m, const mem4d_device *d, const char *ep, uint64_t allow, uint64_t *eps,
                         uint64_t *etp1)
{
    uint64_t n = 0, disps = search_layouts(m, d, ep, allow, eps, etp1, &n);
    ck_assert_uint_gt(n, 0);
    return disps;
}

/* The search varies ep, etp and the dispatcher for a model with experts
 * whose layout leaves ep at 1, and keeps an ep the layout gives. HybridEP
 * only where its NVLink rate was measured (B200, GB200's NVLink 5), not on
 * an H100 unless asked for. */
START_TEST(search_over_experts)
{
    mem4d_model *m = tu_qwen3("8");
    mem4d_device *h100 = tu_device("h100-80"), *b200 = tu_device("b200-180");
    const uint64_t all = 15, hybridep = UINT64_C(1) << MEM4D_MOE_DISPATCHER_HYBRIDEP;
    uint64_t eps, etp1;
    ck_assert_uint_eq(searched(m, h100, "ep=8", 0, &eps, &etp1), 1); /* the layout's alltoall */
    ck_assert_uint_eq(eps, UINT64_C(1) << 8);
    uint64_t disps = searched(m, h100, "ep=1", 0, &eps, &etp1);
    ck_assert_msg(__builtin_popcountll(eps) >= 4, "ep values %llx", (unsigned long long)eps);
    ck_assert_uint_gt(etp1, 0);
    ck_assert_msg(disps == (all & ~hybridep), "dispatchers on h100-80 %llx", (unsigned long long)disps);
    disps = searched(m, h100, "ep=1", MEM4D_MOE_DISPATCHER_HYBRIDEP, &eps, &etp1);
    ck_assert_msg(disps == hybridep, "dispatchers asked for on h100-80 %llx", (unsigned long long)disps);
    disps = searched(m, b200, "ep=1", 0, &eps, &etp1);
    ck_assert_msg(disps == all, "dispatchers on b200-180 %llx", (unsigned long long)disps);
    /* DeepEP on a GB200 only inside a 4-GPU tray */
    mem4d_device *gb200 = tu_device("gb200-186");
    disps = searched(m, gb200, "ep=1", MEM4D_MOE_DISPATCHER_DEEPEP, &eps, &etp1);
    ck_assert_msg(disps == UINT64_C(1) << MEM4D_MOE_DISPATCHER_DEEPEP, "%llx", (unsigned long long)disps);
    ck_assert_msg(etp1 > 0 && (eps & ~UINT64_C(0x16)) == 0, "DeepEP's ep values on gb200-186 %llx",
                  (unsigned long long)eps);
    mem4d_device_free(gb200);
    /* DeepEP before Hopper (an A100) within a node's 8 GPUs alone, on an MI300X at every ep; no HybridEP on
     * either, even when asked for */
    mem4d_device *a100 = tu_device("a100-80"), *mi300x = tu_device("mi300x-192");
    disps = searched(m, a100, "ep=1", MEM4D_MOE_DISPATCHER_DEEPEP, &eps, &etp1);
    ck_assert_msg(disps == UINT64_C(1) << MEM4D_MOE_DISPATCHER_DEEPEP, "%llx", (unsigned long long)disps);
    ck_assert_msg((eps & UINT64_C(0x100)) && (eps & ~UINT64_C(0x116)) == 0, "DeepEP's ep values on a100-80 %llx",
                  (unsigned long long)eps);
    searched(m, mi300x, "ep=1", MEM4D_MOE_DISPATCHER_DEEPEP, &eps, &etp1);
    ck_assert_msg(eps >> 16, "DeepEP's ep values on mi300x-192 %llx", (unsigned long long)eps);
    uint64_t n = 0;
    search_layouts(m, a100, "ep=1", MEM4D_MOE_DISPATCHER_HYBRIDEP, &eps, &etp1, &n);
    ck_assert_uint_eq(n, 0);
    search_layouts(m, mi300x, "ep=1", MEM4D_MOE_DISPATCHER_HYBRIDEP, &eps, &etp1, &n);
    ck_assert_uint_eq(n, 0);
    /* DeepEP's rates are NVIDIA's: on an MI300X only when asked for */
    disps = searched(m, mi300x, "ep=1", 0, &eps, &etp1);
    ck_assert_msg(disps == 3, "dispatchers on mi300x-192 %llx", (unsigned long long)disps);
    mem4d_device_free(mi300x);
    mem4d_device_free(a100);
    mem4d_device_free(b200);
    mem4d_device_free(h100);
    mem4d_model_free(m);
}
END_TEST

/* model m's layout l on device d: its status, with the message in why */
static mem4d_status estimate_why(const mem4d_model *m, const mem4d_layout *l, const mem4d_device *d, char *why,
                                 size_t n)
{
    mem4d_report *r = NULL;
    ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
    mem4d_status st = mem4d_estimate(m, l, d, r);
    snprintf(why, n, "%s", mem4d_report_message(r));
    mem4d_report_free(r);
    return st;
}

/* What the flex dispatchers run on (doc/perf.md, "What the flex dispatchers
 * run on"). HybridEP's TMA copies need Hopper or later, and CUDA: an A100
 * (no fp8 peak) and an MI300X refuse it. DeepEP before Hopper runs its
 * intranode kernels alone (ep x etp up to 8, one node); on an MI300X
 * (ROCm/DeepEP) it runs as on an H100. A copy of an MI300X, or one read
 * back from its device file, is an MI300X; an A100 given an fp8 peak is
 * taken for a Hopper, and a device that states no peak refuses nothing. */
START_TEST(flex_dispatchers_by_gpu)
{
    mem4d_model *m = tu_qwen3("8");
    mem4d_layout *l = tu_layout("world=64", "etp=1", JOB, NULL);
    static const struct {
        const char *gpu, *ep, *dispatcher, *why; /* why: a word of the refusal, NULL where estimated */
    } cases[] = {
        {"a100-80", "2", "hybridep", "TMA"},           {"a100-80", "8", "hybridep", "TMA"},
        {"a100-80", "8", "deepep", NULL},              {"a100-80", "16", "deepep", "intranode"},
        {"a100-80", "64", "deepep", "intranode"},      {"mi300x-192", "8", "hybridep", "ROCm"},
        {"mi300x-192", "64", "hybridep", "ROCm"},      {"mi300x-192", "32", "deepep", NULL},
        {"h100-80", "32", "deepep", NULL},             {"h100-80", "8", "hybridep", NULL},
    };
    char why[256];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        mem4d_device *d = tu_device(cases[i].gpu);
        ck_assert_int_eq(mem4d_layout_set_str(l, "ep", cases[i].ep), MEM4D_OK);
        ck_assert_int_eq(mem4d_layout_set_str(l, "moe_dispatcher", cases[i].dispatcher), MEM4D_OK);
        mem4d_status st = estimate_why(m, l, d, why, sizeof why);
        ck_assert_msg(st == (cases[i].why ? MEM4D_E_CONFLICT : MEM4D_OK), "%s ep %s %s: %s", cases[i].gpu,
                      cases[i].ep, cases[i].dispatcher, why);
        ck_assert_msg(!cases[i].why || strstr(why, cases[i].why), "%s", why);
        mem4d_device_free(d);
    }
    /* an MI300X's copy and its device file read back */
    mem4d_device *mi = tu_device("mi300x-192"), *copy = NULL, *back = NULL;
    char text[8192];
    ck_assert_int_eq(mem4d_device_clone(mi, &copy), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_format(mi, text, sizeof text, NULL), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_new(&back), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_parse(back, text, strlen(text), why, sizeof why), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set_str(l, "ep", "8"), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set_str(l, "moe_dispatcher", "hybridep"), MEM4D_OK);
    ck_assert_int_eq(estimate_why(m, l, copy, why, sizeof why), MEM4D_E_CONFLICT);
    ck_assert_int_eq(estimate_why(m, l, back, why, sizeof why), MEM4D_E_CONFLICT);
    /* a device with memory alone: no generation, no vendor known */
    mem4d_device *bare = NULL;
    ck_assert_int_eq(mem4d_device_new(&bare), MEM4D_OK);
    ck_assert_int_eq(mem4d_device_set_str(bare, "memory_bytes", "85899345920"), MEM4D_OK);
    ck_assert_msg(estimate_why(m, l, bare, why, sizeof why) == MEM4D_OK, "%s", why);
    /* an A100 with an fp8 peak runs both */
    mem4d_device *a100 = tu_device("a100-80");
    ck_assert_int_eq(mem4d_device_set(a100, MEM4D_DEVICE_PEAK_FP8_FLOPS, tu_device_get(a100, "peak_flops") * 2),
                     MEM4D_OK);
    ck_assert_msg(estimate_why(m, l, a100, why, sizeof why) == MEM4D_OK, "%s", why);
    ck_assert_int_eq(mem4d_layout_set_str(l, "ep", "16"), MEM4D_OK);
    ck_assert_int_eq(mem4d_layout_set_str(l, "moe_dispatcher", "deepep"), MEM4D_OK);
    ck_assert_msg(estimate_why(m, l, a100, why, sizeof why) == MEM4D_OK, "%s", why);
    mem4d_device_free(a100);
    mem4d_device_free(bare);
    mem4d_device_free(back);
    mem4d_device_free(copy);
    mem4d_device_free(mi);
    mem4d_layout_free(l);
    mem4d_model_free(m);
}
END_TEST

/* Estimate ep 8 over 64 GPUs with `dispatcher` on each of the three
 * devices, and assert that only the first one's report has a warning that
 * names the dispatcher. */
static void dispatcher_warns_first_only(const char *dispatcher, const char *const gpus[3])
{
    char set[64];
    snprintf(set, sizeof set, "moe_dispatcher=%s", dispatcher);
    mem4d_model *m = tu_qwen3("8");
    mem4d_layout *l = tu_layout("world=64", "ep=8", "etp=1", set, JOB, NULL);
    for (int i = 0; i < 3; i++) {
        mem4d_device *d = tu_device(gpus[i]);
        mem4d_report *r = NULL;
        ck_assert_int_eq(mem4d_report_new(&r), MEM4D_OK);
        ck_assert_msg(mem4d_estimate(m, l, d, r) == MEM4D_OK, "%s", mem4d_report_message(r));
        int found = 0;
        for (size_t w = 0; w < mem4d_report_warning_count(r); w++)
            found += strstr(mem4d_report_warning(r, w), dispatcher) != NULL;
        ck_assert_msg(found == (i == 0), "%s: %d %s warnings", gpus[i], found, dispatcher);
        mem4d_report_free(r);
        mem4d_device_free(d);
    }
    mem4d_layout_free(l);
    mem4d_model_free(m);
}

/* HybridEP on a link its published NVLink rate was not measured on (an
 * H100's 450 GB/s) is timed with a warning that says so; on B200 and
 * GB200 (900 GB/s) without one. */
START_TEST(hybridep_unsourced_warns)
{
    static const char *const gpus[] = {"h100-80", "b200-180", "gb200-186"};
    dispatcher_warns_first_only("hybridep", gpus);
}
END_TEST

/* DeepEP on an AMD GPU (ROCm/DeepEP) is timed with rates measured on
 * NVIDIA GPUs: the estimate says so; not on an NVIDIA GPU. */
START_TEST(deepep_unsourced_on_amd)
{
    static const char *const gpus[] = {"mi300x-192", "h100-80", "b200-180"};
    dispatcher_warns_first_only("deepep", gpus);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("perf-moe");
    TCase *tc = tcase_create("experts");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, breakdown);
    tcase_add_test(tc, dense_layers);
    tcase_add_test(tc, alltoall_sorts_by_expert);
    tcase_add_test(tc, fsdp_full_recompute_gathers_once);
    tcase_add_test(tc, group_placement);
    tcase_add_test(tc, deepep_once_per_node);
    tcase_add_test(tc, allgather_moves_every_token);
    tcase_add_test(tc, hybridep_in_the_nvlink_domain);
    tcase_add_test(tc, hybridep_sm_ceiling);
    tcase_add_test(tc, ep_overlap);
    tcase_add_test(tc, ep_overlap_warmup_is_memorys);
    tcase_add_test(tc, ep_overlap_persistent);
    tcase_add_test(tc, fp8_recipe);
    tcase_add_test(tc, delayed_wgrad);
    tcase_add_test(tc, fsdp_with_experts);
    tcase_add_test(tc, small_experts);
    tcase_add_test(tc, imbalance);
    tcase_add_test(tc, derived_imbalance);
    tcase_add_test(tc, host_bound);
    tcase_add_test(tc, host_bound_counts_cp);
    tcase_add_test(tc, partial_column_tile);
    tcase_add_test(tc, sequential_experts);
    tcase_add_test(tc, shared_expert_overlap);
    tcase_add_test(tc, search_over_experts);
    tcase_add_test(tc, hybridep_unsourced_warns);
    tcase_add_test(tc, deepep_unsourced_on_amd);
    tcase_add_test(tc, flex_dispatchers_by_gpu);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
