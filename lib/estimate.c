/*
 * mem4d_estimate(): the one estimate path. It checks the arguments,
 * resolves model and layout into a context, dispatches on the mode to
 * paper mode (estimate_paper.c) or full mode (estimate_full.c), finishes
 * the report (report.c) and adds the speed metrics (perf.c).
 * SPDX-License-Identifier: MIT
 */
#include "private.h"

static mem4d_status check_args(const mem4d_model *model, const mem4d_layout *layout,
                               const mem4d_device *device, mem4d_report *r)
{
    if (!model || !layout || !device) {
        m4d_msg(r->msg, sizeof r->msg, "model, layout and device must not be NULL");
        return MEM4D_E_INVALID_ARG;
    }
    if (device->v[MEM4D_DEVICE_MEMORY_BYTES] == 0) {
        m4d_msg(r->msg, sizeof r->msg, "device memory (memory_bytes) is not set");
        return MEM4D_E_MISSING;
    }
    return MEM4D_OK;
}

/* The memory half of an estimate, from a resolved context into a reset
 * report: shared by mem4d_estimate() and the search, which resolves once
 * per group of layouts. */
mem4d_status m4d_estimate_ctx(const struct m4d_ctx *x, const mem4d_device *device, mem4d_report *r, bool peak_only,
                              struct m4d_state_cache *cache)
{
    r->mode = x->mode;
    mem4d_status st;
    if (x->mode == MEM4D_MODE_PAPER) {
        if ((st = m4d_estimate_paper(x, r)) != MEM4D_OK)
            return st;
        if ((st = m4d_report_finish(r, device)) != MEM4D_OK) {
            m4d_msg(r->msg, sizeof r->msg, "the estimate overflows 64 bits");
            return st;
        }
    } else if (M4D_UNLIKELY((st = m4d_estimate_full(x, device, r, peak_only, cache)) != MEM4D_OK)) {
        return st; /* full mode sums each stage and picks the peak as it fills them */
    } else {
        m4d_report_verdict(r, device);
    }
    /* A peak-only report is the search's scratch: its stages, peak and
     * verdict are read, never its job-wide values (a layout the search
     * yields is estimated again in full), so only their one failure is
     * checked here. */
    if (peak_only && x->params_total_ok)
        return MEM4D_OK;
    return m4d_report_fill_info(r, x);
}

static mem4d_status run(const mem4d_model *model, const mem4d_layout *layout,
                        const mem4d_device *device, mem4d_report *r)
{
    struct m4d_ctx x;
    mem4d_status st = check_args(model, layout, device, r);
    if (st == MEM4D_OK)
        st = m4d_resolve(model, layout, &x, r->msg, sizeof r->msg);
    if (st == MEM4D_OK)
        st = m4d_check_device(&x, device, r->msg, sizeof r->msg);
    if (st == MEM4D_OK) {
        m4d_ctx_device(&x, layout, device); /* device checked (not NULL) */
        st = m4d_estimate_ctx(&x, device, r, false, NULL);
    }
    if (st == MEM4D_OK) {
        m4d_perf(&x, device, r);
        m4d_perf_warn(r);
    }
    return st;
}

mem4d_status mem4d_estimate(const mem4d_model *model, const mem4d_layout *layout,
                            const mem4d_device *device, mem4d_report *report)
{
    if (!report)
        return MEM4D_E_INVALID_ARG;
    m4d_report_reset(report, device);
    m4d_report_done(report, run(model, layout, device, report));
    return report->status;
}
