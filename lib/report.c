/*
 * The report handle's whole lifecycle: creation, reset before an estimate,
 * the fill helpers the estimators share (totals, peak, verdict, job-wide
 * infos; the final status is m4d_report_done(), inline in private.h), copy,
 * and the public accessors. The fit limit and the verdict rule are defined
 * here once; the search prunes with them.
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>

#include "private.h"

/* --- lifecycle ----------------------------------------------------------- */

mem4d_status mem4d_report_new(mem4d_report **out)
{
    if (!out)
        return MEM4D_E_INVALID_ARG;
    *out = calloc(1, sizeof **out);
    if (!*out)
        return MEM4D_E_NOMEM;
    (*out)->status = MEM4D_E_MISSING;
    (*out)->verdict = MEM4D_VERDICT_OOM;
    m4d_strlcpy((*out)->msg, "no estimate yet", sizeof (*out)->msg);
    return MEM4D_OK;
}

void mem4d_report_free(mem4d_report *report)
{
    free(report);
}

void m4d_report_reset(mem4d_report *r, const mem4d_device *dev)
{
    r->msg[0] = '\0';
    r->nwarn = 0;
    r->nstages = 0;
    r->peak_stage = 0;
    r->have_metrics = false;
    r->peak_only = false;
    r->verdict = MEM4D_VERDICT_OOM;
    r->device_bytes = dev ? dev->v[MEM4D_DEVICE_MEMORY_BYTES] : 0;
    memset(r->info, 0, sizeof r->info);
}

void m4d_report_copy(mem4d_report *dst, const mem4d_report *src)
{
    dst->status = src->status;
    dst->mode = src->mode;
    dst->verdict = src->verdict;
    dst->nstages = src->nstages;
    dst->peak_stage = src->peak_stage;
    dst->device_bytes = src->device_bytes;
    memcpy(dst->info, src->info, sizeof dst->info);
    dst->have_metrics = src->have_metrics;
    dst->peak_only = src->peak_only;
    dst->perf = src->perf;
    memcpy(dst->msg, src->msg, sizeof dst->msg);
    dst->nwarn = src->nwarn;
    memcpy(dst->warn, src->warn, src->nwarn * sizeof dst->warn[0]);
    memcpy(dst->stages, src->stages, src->nstages * sizeof dst->stages[0]);
}

/* --- fit limit, verdict and fill helpers ----------------------------------- */

/* bytes * 1e6 > memory * threshold, exact in 128 bits. Paper mode keeps the
 * paper's margin (fit_threshold_ppm, 80%); full mode models the overheads
 * that margin stood for, so its margin is what its measured residuals leave
 * (full_fit_threshold_ppm, doc/full-model.md "The verdict"). */
bool m4d_over_fit_limit(const mem4d_device *dev, mem4d_mode mode, uint64_t bytes)
{
    mem4d_device_param th = mode == MEM4D_MODE_FULL ? MEM4D_DEVICE_FULL_FIT_THRESHOLD_PPM
                                                    : MEM4D_DEVICE_FIT_THRESHOLD_PPM;
    unsigned __int128 limit = (unsigned __int128)dev->v[MEM4D_DEVICE_MEMORY_BYTES] * dev->v[th];
    return (unsigned __int128)bytes * 1000000u > limit;
}

mem4d_verdict m4d_verdict_for(const mem4d_device *dev, mem4d_mode mode, uint64_t peak)
{
    if (peak > dev->v[MEM4D_DEVICE_MEMORY_BYTES])
        return MEM4D_VERDICT_OOM;
    return m4d_over_fit_limit(dev, mode, peak) ? MEM4D_VERDICT_TIGHT : MEM4D_VERDICT_FITS;
}

void m4d_report_verdict(mem4d_report *r, const mem4d_device *dev)
{
    r->device_bytes = dev->v[MEM4D_DEVICE_MEMORY_BYTES];
    r->verdict = m4d_verdict_for(dev, r->mode, r->stages[r->peak_stage].t[MEM4D_TERM_TOTAL]);
}

mem4d_status m4d_report_finish(mem4d_report *r, const mem4d_device *dev)
{
    r->peak_stage = 0;
    for (uint32_t i = 0; i < r->nstages; i = (uint32_t)m4d_stage_next(r->peak_only, i, r->nstages)) {
        uint64_t *t = r->stages[i].t;
        if (!m4d_stage_sums(t))
            return MEM4D_E_RANGE;
        if (t[MEM4D_TERM_TOTAL] > r->stages[r->peak_stage].t[MEM4D_TERM_TOTAL])
            r->peak_stage = i;
    }
    m4d_report_verdict(r, dev);
    return MEM4D_OK;
}

/* The job-wide values of a resolved context. */
mem4d_status m4d_report_fill_info(mem4d_report *r, const struct m4d_ctx *x)
{
    r->info[MEM4D_INFO_DP] = x->d;
    r->info[MEM4D_INFO_WORLD] = x->world;
    r->info[MEM4D_INFO_MICROBATCHES] = x->m;
    r->info[MEM4D_INFO_PADDED_VOCAB] = x->Vp;
    r->info[MEM4D_INFO_MODEL_PARAMS] = x->params_total;
    r->info[MEM4D_INFO_ATTENTION_KERNEL] = x->attn_kernel;
    r->info[MEM4D_INFO_SOFTMAX_FALLBACK] = m4d_ctx_softmax_falls_back(x, x->s, x->b);
    enum m4d_window window = m4d_window_timing(x);
    r->info[MEM4D_INFO_WINDOW_LAYERS] = window != M4D_WINDOW_NONE ? m4d_local_layers_in(x, 0, x->L) : 0;
    r->info[MEM4D_INFO_WINDOW_TIMED_FULL] = window == M4D_WINDOW_TIMED_FULL;
    if (!x->params_total_ok) {
        m4d_msg(r->msg, sizeof r->msg, "the parameter count overflows 64 bits");
        return MEM4D_E_RANGE;
    }
    return MEM4D_OK;
}

/* --- accessors -------------------------------------------------------------- */

mem4d_status mem4d_report_status(const mem4d_report *r)
{
    return r ? r->status : MEM4D_E_INVALID_ARG;
}

const char *mem4d_report_message(const mem4d_report *r)
{
    return r ? r->msg : "";
}

mem4d_mode mem4d_report_mode(const mem4d_report *r)
{
    return r ? r->mode : MEM4D_MODE_FULL;
}

mem4d_verdict mem4d_report_verdict(const mem4d_report *r)
{
    return r && r->status == MEM4D_OK ? r->verdict : MEM4D_VERDICT_OOM;
}

uint32_t mem4d_report_num_stages(const mem4d_report *r)
{
    return r && r->status == MEM4D_OK ? r->nstages : 0;
}

uint32_t mem4d_report_peak_stage(const mem4d_report *r)
{
    return r && r->status == MEM4D_OK ? r->peak_stage : 0;
}

uint64_t mem4d_report_peak_bytes(const mem4d_report *r)
{
    return r && r->status == MEM4D_OK ? r->stages[r->peak_stage].t[MEM4D_TERM_TOTAL] : 0;
}

uint64_t mem4d_report_device_bytes(const mem4d_report *r)
{
    return r ? r->device_bytes : 0;
}

mem4d_status mem4d_report_get(const mem4d_report *r, uint32_t stage, mem4d_term term, uint64_t *value)
{
    if (!r || !value || (unsigned)term >= M4D_NTERMS)
        return MEM4D_E_INVALID_ARG;
    if (r->status != MEM4D_OK || stage >= r->nstages)
        return MEM4D_E_RANGE;
    *value = r->stages[stage].t[term];
    return MEM4D_OK;
}

size_t mem4d_report_warning_count(const mem4d_report *r)
{
    return r && r->status == MEM4D_OK ? r->nwarn : 0;
}

const char *mem4d_report_warning(const mem4d_report *r, size_t index)
{
    return r && r->status == MEM4D_OK && index < r->nwarn ? r->warn[index] : NULL;
}

mem4d_status mem4d_report_info(const mem4d_report *r, mem4d_info info, uint64_t *value)
{
    if (!r || !value || (unsigned)info >= M4D_NINFO)
        return MEM4D_E_INVALID_ARG;
    *value = r->info[info];
    return MEM4D_OK;
}

mem4d_status mem4d_report_metric(const mem4d_report *r, mem4d_metric metric, double *value)
{
    if (!r || !value || (unsigned)metric >= M4D_NMETRICS)
        return MEM4D_E_INVALID_ARG;
    if (r->status != MEM4D_OK || !r->have_metrics)
        return MEM4D_E_UNSUPPORTED;
    double all[M4D_NMETRICS];
    m4d_perf_metrics(&r->perf, all);
    *value = all[metric];
    return MEM4D_OK;
}

const char *mem4d_verdict_name(mem4d_verdict v)
{
    switch (v) {
    case MEM4D_VERDICT_FITS: return "fits";
    case MEM4D_VERDICT_TIGHT: return "tight";
    case MEM4D_VERDICT_OOM: return "oom";
    }
    return "unknown";
}

const char *mem4d_mode_name(mem4d_mode mode)
{
    switch (mode) {
    case MEM4D_MODE_FULL: return "full";
    case MEM4D_MODE_PAPER: return "paper";
    }
    return "unknown";
}

const char *mem4d_moment_name(mem4d_moment moment)
{
    switch (moment) {
    case MEM4D_MOMENT_FORWARD_BACKWARD: return "forward_backward";
    case MEM4D_MOMENT_EMBEDDING_GRAD: return "embedding_grad";
    case MEM4D_MOMENT_OPTIMIZER_STEP: return "optimizer_step";
    }
    return NULL;
}

const char *mem4d_term_name(mem4d_term term)
{
    static const char *const names[] = {
        [MEM4D_TERM_WEIGHTS] = "weights_bytes",
        [MEM4D_TERM_GRADIENTS] = "gradients_bytes",
        [MEM4D_TERM_OPTIMIZER] = "optimizer_bytes",
        [MEM4D_TERM_ACTIVATIONS] = "activations_bytes",
        [MEM4D_TERM_OVERHEAD] = "overhead_bytes",
        [MEM4D_TERM_TOTAL] = "total_bytes",
        [MEM4D_TERM_PARAMS] = "params",
        [MEM4D_TERM_LAYERS] = "layers",
        [MEM4D_TERM_IN_FLIGHT] = "in_flight",
        [MEM4D_TERM_BUFFERS] = "buffers_bytes",
        [MEM4D_TERM_FRAGMENTATION] = "fragmentation_bytes",
        [MEM4D_TERM_FIXED] = "fixed_bytes",
        [MEM4D_TERM_PEAK_ALLOCATED] = "peak_allocated_bytes",
        [MEM4D_TERM_PEAK_RESERVED] = "peak_reserved_bytes",
        [MEM4D_TERM_PEAK_MOMENT] = "peak_moment",
    };
    M4D_TABLE_ROWS(names, M4D_NTERMS);
    return (unsigned)term < M4D_NTERMS ? names[term] : NULL;
}
