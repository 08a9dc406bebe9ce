/*
 * bench-estimate: the cost of one mem4d_estimate() call (full and paper
 * mode) for a few typical layouts, as nanoseconds per call.
 *   bench-estimate [seconds per case, default 0.5] [--iterations N]
 * With --iterations the loop runs exactly N calls per case (for
 * instruction counts under valgrind --tool=callgrind).
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mem4d/mem4d.h>

/* CPU seconds of this thread: "on one core" is what it measures, and
 * other processes on a shared machine do not count against it (on an idle
 * machine it equals the wall clock). */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const struct {
    const char *model, *what;
    const char *kv[8];
} cases[] = {
    {"llama3.1-8b", "tp 2, dp 4 (p = 1)", {"tp=2", "world=8", "seq=8192", "gbs=128"}},
    {"llama3.1-70b", "tp 8, pp 4, dp 2", {"tp=8", "pp=4", "world=64", "seq=8192", "gbs=512"}},
    {"llama3.1-70b", "tp 4, pp 8, vpp 5, cp 2", {"tp=4", "pp=8", "vpp=5", "cp=2", "world=64", "seq=8192", "gbs=512"}},
    {"llama3.1-405b", "tp 8, pp 16 (7+14x8+7), dp 128",
     {"tp=8", "pp=16", "first_stage_layers=7", "last_stage_layers=7", "world=16384", "seq=8192", "gbs=2048"}},
};

int main(int argc, char **argv)
{
    double budget = 0.5;
    long fixed = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iterations") && i + 1 < argc)
            fixed = atol(argv[++i]);
        else
            budget = atof(argv[i]);
    }
    mem4d_device *d = NULL;
    mem4d_report *r = NULL;
    if (mem4d_device_new_preset("h100-80", &d) != MEM4D_OK || mem4d_report_new(&r) != MEM4D_OK)
        return 1;
    printf("%-14s %-34s %-5s %12s\n", "model", "layout", "mode", "ns/estimate");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        mem4d_model *m = NULL;
        mem4d_layout *l = NULL;
        if (mem4d_model_new_preset(cases[c].model, &m) != MEM4D_OK || mem4d_layout_new(&l) != MEM4D_OK)
            return 1;
        for (size_t k = 0; k < 8 && cases[c].kv[k]; k++) {
            char key[64];
            const char *eq = strchr(cases[c].kv[k], '=');
            snprintf(key, sizeof key, "%.*s", (int)(eq - cases[c].kv[k]), cases[c].kv[k]);
            if (mem4d_layout_set_str(l, key, eq + 1) != MEM4D_OK)
                return 1;
        }
        for (int mode = 0; mode < 2; mode++) {
            mem4d_layout_set(l, MEM4D_LAYOUT_MODE, (uint64_t)mode);
            if (mem4d_estimate(m, l, d, r) != MEM4D_OK)
                continue; /* paper mode refuses uneven stages and vpp */
            long n = 0;
            double t0 = now(), t1 = t0;
            do {
                for (int i = 0; i < 1000; i++)
                    mem4d_estimate(m, l, d, r);
                n += 1000;
                t1 = now();
            } while (fixed ? n < fixed : t1 - t0 < budget);
            printf("%-14s %-34s %-5s %12.1f\n", cases[c].model, cases[c].what, mode ? "paper" : "full",
                   (t1 - t0) / (double)n * 1e9);
        }
        mem4d_layout_free(l);
        mem4d_model_free(m);
    }
    mem4d_report_free(r);
    mem4d_device_free(d);
    return 0;
}
