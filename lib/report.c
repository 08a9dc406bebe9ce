/*
 * The report handle: per-stage results of an estimate and their accessors.
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>

#include "private.h"

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
    *value = r->metric[metric];
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

const char *mem4d_term_name(mem4d_term term)
{
    static const char *const names[M4D_NTERMS] = {
        "weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "overhead_bytes",
        "total_bytes", "params", "layers", "in_flight", "buffers_bytes", "fragmentation_bytes",
        "fixed_bytes", "peak_allocated_bytes", "peak_reserved_bytes",
    };
    return (unsigned)term < M4D_NTERMS ? names[term] : NULL;
}

/* OVERHEAD = BUFFERS + FRAGMENTATION + FIXED; TOTAL = the four main terms +
 * OVERHEAD; PEAK_ALLOCATED = TOTAL - FRAGMENTATION - FIXED;
 * PEAK_RESERVED = PEAK_ALLOCATED + FRAGMENTATION. The verdict compares the
 * peak TOTAL (reserved + what lives outside PyTorch) with the device: fits up
 * to the mode's threshold, tight up to 100%. */
mem4d_status m4d_report_finish(mem4d_report *r, const mem4d_device *dev)
{
    r->peak_stage = 0;
    for (uint32_t i = 0; i < r->nstages; i++) {
        if (!m4d_stage_filled(r->peak_only, i, r->nstages))
            continue;
        uint64_t *t = r->stages[i].t, alloc = 0, over = 0;
        static const mem4d_term main_terms[] = {MEM4D_TERM_WEIGHTS, MEM4D_TERM_GRADIENTS, MEM4D_TERM_OPTIMIZER,
                                                 MEM4D_TERM_ACTIVATIONS, MEM4D_TERM_BUFFERS};
        for (size_t k = 0; k < sizeof main_terms / sizeof main_terms[0]; k++)
            if (!m4d_add(alloc, t[main_terms[k]], &alloc))
                return MEM4D_E_RANGE;
        if (!m4d_add(t[MEM4D_TERM_BUFFERS], t[MEM4D_TERM_FRAGMENTATION], &over) ||
            !m4d_add(over, t[MEM4D_TERM_FIXED], &over))
            return MEM4D_E_RANGE;
        t[MEM4D_TERM_OVERHEAD] = over;
        t[MEM4D_TERM_PEAK_ALLOCATED] = alloc;
        if (!m4d_add(alloc, t[MEM4D_TERM_FRAGMENTATION], &t[MEM4D_TERM_PEAK_RESERVED]) ||
            !m4d_add(t[MEM4D_TERM_PEAK_RESERVED], t[MEM4D_TERM_FIXED], &t[MEM4D_TERM_TOTAL]))
            return MEM4D_E_RANGE;
        if (t[MEM4D_TERM_TOTAL] > r->stages[r->peak_stage].t[MEM4D_TERM_TOTAL])
            r->peak_stage = i;
    }
    uint64_t peak = r->stages[r->peak_stage].t[MEM4D_TERM_TOTAL];
    uint64_t mem = dev->v[MEM4D_DEVICE_MEMORY_BYTES];
    /* Full mode models the overheads the paper's 80% margin stood for; its
     * margin is what its measured residuals leave (full_fit_threshold_ppm). */
    mem4d_device_param th = r->mode == MEM4D_MODE_FULL ? MEM4D_DEVICE_FULL_FIT_THRESHOLD_PPM
                                                       : MEM4D_DEVICE_FIT_THRESHOLD_PPM;
    unsigned __int128 limit = (unsigned __int128)mem * dev->v[th];
    r->device_bytes = mem;
    if (peak > mem)
        r->verdict = MEM4D_VERDICT_OOM;
    else if ((unsigned __int128)peak * 1000000u > limit)
        r->verdict = MEM4D_VERDICT_TIGHT;
    else
        r->verdict = MEM4D_VERDICT_FITS;
    return MEM4D_OK;
}
