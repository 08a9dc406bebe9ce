/*
 * The library describes itself: names of statuses, kinds, report infos and
 * metrics, search options (with kinds and defaults) and search counters; its
 * version as a number. Parameter tables live in params.c, term names beside
 * the report (report.c). Each table here is indexed by its enum, and its
 * count (private.h) is checked against the enum's last value.
 * SPDX-License-Identifier: MIT
 */
#include "private.h"

/* Each table is checked to have its count's rows (M4D_TABLE_ROWS); a
 * designated row left out in the middle would be a NULL name, which C cannot
 * check at compile time: tests/test-describe.c walks every table for NULLs. */

const char *mem4d_status_name(mem4d_status status)
{
    /* A switch rather than a table: -Wswitch (in -Wall, an error here)
     * fails the build when a status has no case. */
    switch (status) {
#define NAME(s) \
    case s: return #s
        NAME(MEM4D_OK);
        NAME(MEM4D_END);
        NAME(MEM4D_E_INVALID_ARG);
        NAME(MEM4D_E_NOMEM);
        NAME(MEM4D_E_RANGE);
        NAME(MEM4D_E_UNKNOWN_KEY);
        NAME(MEM4D_E_UNKNOWN_PRESET);
        NAME(MEM4D_E_PARSE);
        NAME(MEM4D_E_MODEL);
        NAME(MEM4D_E_HEADS_TP);
        NAME(MEM4D_E_KV_HEADS_TP);
        NAME(MEM4D_E_LAYERS_PP);
        NAME(MEM4D_E_WORLD);
        NAME(MEM4D_E_SEQ);
        NAME(MEM4D_E_BATCH);
        NAME(MEM4D_E_UNSUPPORTED);
        NAME(MEM4D_E_NO_JSON);
        NAME(MEM4D_E_IO);
        NAME(MEM4D_E_JSON);
        NAME(MEM4D_E_MISSING);
        NAME(MEM4D_E_CONFLICT);
        NAME(MEM4D_E_DIM_TP);
        NAME(MEM4D_E_EXPERTS);
#undef NAME
    }
    return NULL;
}

size_t mem4d_status_count(void)
{
    return M4D_NSTATUS;
}

uint32_t mem4d_version_number(void)
{
    return MEM4D_VERSION_NUMBER;
}

const char *mem4d_param_kind_name(mem4d_param_kind kind)
{
    switch (kind) {
    case MEM4D_KIND_INTEGER: return "integer";
    case MEM4D_KIND_BOOLEAN: return "boolean";
    case MEM4D_KIND_CHOICE: return "choice";
    case MEM4D_KIND_BYTES: return "bytes";
    case MEM4D_KIND_WIDTH: return "width";
    case MEM4D_KIND_PPM: return "ppm";
    case MEM4D_KIND_FLOPS: return "flops";
    case MEM4D_KIND_BYTES_PER_S: return "bytes_per_s";
    case MEM4D_KIND_NANOSECONDS: return "nanoseconds";
    }
    return NULL;
}

size_t mem4d_term_count(void)
{
    return M4D_NTERMS;
}

size_t mem4d_info_count(void)
{
    return M4D_NINFO;
}

const char *mem4d_info_name(mem4d_info info)
{
    static const char *const names[] = {
        [MEM4D_INFO_DP] = "dp",
        [MEM4D_INFO_WORLD] = "world",
        [MEM4D_INFO_MICROBATCHES] = "microbatches",
        [MEM4D_INFO_PADDED_VOCAB] = "padded_vocab",
        [MEM4D_INFO_MODEL_PARAMS] = "model_params",
        [MEM4D_INFO_PROCESS_GROUPS] = "process_groups",
        [MEM4D_INFO_ATTENTION_KERNEL] = "attention_kernel",
        [MEM4D_INFO_SOFTMAX_FALLBACK] = "softmax_fallback",
        [MEM4D_INFO_WINDOW_LAYERS] = "window_layers",
        [MEM4D_INFO_WINDOW_TIMED_FULL] = "window_timed_full",
    };
    M4D_TABLE_ROWS(names, M4D_NINFO);
    return (unsigned)info < M4D_NINFO ? names[info] : NULL;
}

size_t mem4d_metric_count(void)
{
    return M4D_NMETRICS;
}

const char *mem4d_metric_name(mem4d_metric metric)
{
    static const char *const names[] = {
        [MEM4D_METRIC_STEP_TIME_S] = "step_time_s",
        [MEM4D_METRIC_TOKENS_PER_S] = "tokens_per_s",
        [MEM4D_METRIC_TFLOPS_PER_GPU] = "tflops_per_gpu",
        [MEM4D_METRIC_MFU] = "mfu",
        [MEM4D_METRIC_BUBBLE_FRACTION] = "bubble_fraction",
        [MEM4D_METRIC_COMPUTE_TIME_S] = "compute_time_s",
        [MEM4D_METRIC_EXPOSED_COMM_S] = "exposed_comm_s",
        [MEM4D_METRIC_TP_COMM_S] = "tp_comm_s",
        [MEM4D_METRIC_CP_COMM_S] = "cp_comm_s",
        [MEM4D_METRIC_DP_COMM_S] = "dp_comm_s",
        [MEM4D_METRIC_PP_COMM_S] = "pp_comm_s",
        [MEM4D_METRIC_EP_COMM_S] = "ep_comm_s",
        [MEM4D_METRIC_BUBBLE_S] = "bubble_s",
        [MEM4D_METRIC_OPTIMIZER_S] = "optimizer_s",
        [MEM4D_METRIC_EXPERT_COMPUTE_S] = "expert_compute_s",
        [MEM4D_METRIC_ROUTER_PERMUTE_S] = "router_permute_s",
        [MEM4D_METRIC_STEP_TIME_LOW_S] = "step_time_low_s",
        [MEM4D_METRIC_STEP_TIME_HIGH_S] = "step_time_high_s",
        [MEM4D_METRIC_TOKENS_PER_S_LOW] = "tokens_per_s_low",
        [MEM4D_METRIC_TOKENS_PER_S_HIGH] = "tokens_per_s_high",
        [MEM4D_METRIC_TFLOPS_PER_GPU_LOW] = "tflops_per_gpu_low",
        [MEM4D_METRIC_TFLOPS_PER_GPU_HIGH] = "tflops_per_gpu_high",
        [MEM4D_METRIC_MFU_LOW] = "mfu_low",
        [MEM4D_METRIC_MFU_HIGH] = "mfu_high",
        [MEM4D_METRIC_MFU_PEAK_FLOPS] = "mfu_peak_flops",
        [MEM4D_METRIC_STRAGGLER_S] = "straggler_s",
    };
    M4D_TABLE_ROWS(names, M4D_NMETRICS);
    return (unsigned)metric < M4D_NMETRICS ? names[metric] : NULL;
}

/* The search's options: search.c takes its defaults and checks from here. */
const struct m4d_option_desc m4d_search_options[] = {
    [MEM4D_SEARCH_FITS_ONLY] = {"fits_only", MEM4D_KIND_BOOLEAN, 1},
    [MEM4D_SEARCH_NODE_LOCAL] = {"node_local", MEM4D_KIND_BOOLEAN, 1},
    [MEM4D_SEARCH_RANKED] = {"ranked", MEM4D_KIND_BOOLEAN, 1},
    [MEM4D_SEARCH_MAX_RESULTS] = {"max_results", MEM4D_KIND_INTEGER, 0},
    [MEM4D_SEARCH_UNEVEN_STAGES] = {"uneven_stages", MEM4D_KIND_BOOLEAN, 1},
    [MEM4D_SEARCH_TIE_BREAK] = {"tie_break", MEM4D_KIND_BOOLEAN, 0},
};
M4D_TABLE_ROWS(m4d_search_options, M4D_NSEARCH_OPTIONS);

size_t mem4d_search_option_count(void)
{
    return M4D_NSEARCH_OPTIONS;
}

const char *mem4d_search_option_name(mem4d_search_option option)
{
    return (unsigned)option < M4D_NSEARCH_OPTIONS ? m4d_search_options[option].name : NULL;
}

mem4d_status mem4d_search_option_kind(mem4d_search_option option, mem4d_param_kind *kind)
{
    if ((unsigned)option >= M4D_NSEARCH_OPTIONS || !kind)
        return MEM4D_E_INVALID_ARG;
    *kind = m4d_search_options[option].kind;
    return MEM4D_OK;
}

mem4d_status mem4d_search_option_default(mem4d_search_option option, uint64_t *value)
{
    if ((unsigned)option >= M4D_NSEARCH_OPTIONS || !value)
        return MEM4D_E_INVALID_ARG;
    *value = m4d_search_options[option].def;
    return MEM4D_OK;
}

size_t mem4d_search_stat_count(void)
{
    return M4D_NSEARCH_STATS;
}

const char *mem4d_search_stat_name(mem4d_search_stat stat)
{
    static const char *const names[] = {
        [MEM4D_SEARCH_STAT_VISITED] = "visited",
        [MEM4D_SEARCH_STAT_PRUNED] = "pruned",
        [MEM4D_SEARCH_STAT_VALID] = "valid",
        [MEM4D_SEARCH_STAT_YIELDED] = "yielded",
        [MEM4D_SEARCH_STAT_EQUIVALENT] = "equivalent",
    };
    M4D_TABLE_ROWS(names, M4D_NSEARCH_STATS);
    return (unsigned)stat < M4D_NSEARCH_STATS ? names[stat] : NULL;
}
