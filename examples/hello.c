/*
 * The C API in a few lines: Llama-3.1-8B, tp 2, dp 2 on H100 80 GB, paper mode.
 * Build against an installed libmem4d:
 *   cc hello.c $(pkg-config --cflags --libs mem4d)
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>

#include <mem4d/mem4d.h>

int main(void)
{
    mem4d_model *model = NULL;
    mem4d_device *gpu = NULL;
    mem4d_layout *layout = NULL;
    mem4d_report *report = NULL;
    int rc = 1;

    if (mem4d_model_new_preset("llama3.1-8b", &model) || mem4d_device_new_preset("h100-80", &gpu) ||
        mem4d_layout_new(&layout) || mem4d_report_new(&report))
        goto out;
    mem4d_layout_set(layout, MEM4D_LAYOUT_TP, 2);
    mem4d_layout_set(layout, MEM4D_LAYOUT_DP, 2);
    mem4d_layout_set(layout, MEM4D_LAYOUT_SEQ_LENGTH, 8192);
    mem4d_layout_set_str(layout, "mode", "paper");
    if (mem4d_estimate(model, layout, gpu, report) != MEM4D_OK) {
        fprintf(stderr, "%s\n", mem4d_report_message(report));
        goto out;
    }
    printf("peak %llu bytes (%.9f GiB): %s\n", (unsigned long long)mem4d_report_peak_bytes(report),
           (double)mem4d_report_peak_bytes(report) / (1u << 30), mem4d_verdict_name(mem4d_report_verdict(report)));
    rc = 0;
out:
    mem4d_report_free(report);
    mem4d_layout_free(layout);
    mem4d_device_free(gpu);
    mem4d_model_free(model);
    return rc;
}
