/*
 * bench-search: how fast the layout search is. Searches every layout of
 * Llama-3.1-405B on 16,384 H100-80 GPUs (8 per node, sequence 8192, global
 * batch 2048) and prints layouts visited (estimated) per second, layouts
 * pruned, and the time to the ranked answer. Prints figures; never fails on
 * speed. Usage: bench-search [seconds per scenario, default 1]
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
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

/* The paper's closed formula (arXiv 2411.06465; doc/formulas.md, "Paper
 * mode") for Llama-3.1-405B, written out as a bare loop body: the floor a
 * full estimate is measured against. */
static uint64_t paper_bytes(uint64_t t, uint64_t c, uint64_t p, uint64_t d, uint64_t b)
{
    const uint64_t L = 126, h = 16384, a = 128, k = 8, dh = 128, f = 53248, V = 128256, s = 8192, gbs = 2048;
    uint64_t layer = h * a * dh + 2 * h * k * dh + a * dh * h + 3 * h * f + 2 * h;
    uint64_t N = (L * layer / p + h * V + t - 1) / t;
    uint64_t tokens = s * b, tc = t * c, m = gbs / (b * d);
    uint64_t act = (L * 2 * (4 * h + 2 * a * dh + 2 * k * dh + 4 * f) * tokens + tc - 1) / tc;
    if (m < p)
        act = (act * m + p - 1) / p;
    act += (8 * h * p * tokens + tc - 1) / tc;
    return 2 * N + 4 * N + (12 * N + d * c - 1) / (d * c) + act;
}

/* Nanoseconds per paper_bytes() over every (t, c, p, d, b) of the world
 * (listed first, so the loop is the formula alone); *least receives the
 * smallest estimate (so the loop's work is used). */
static double paper_loop_ns(double budget, uint64_t *least)
{
    static uint64_t grid[4096][5];
    size_t n = 0;
    for (uint64_t tp = 1; tp <= 8; tp *= 2)
        for (uint64_t cp = 1; cp <= 16; cp *= 2)
            for (uint64_t pp = 1; pp <= 126; pp++) {
                if (126 % pp || 16384 % (tp * cp * pp))
                    continue;
                uint64_t dp = 16384 / (tp * cp * pp);
                for (uint64_t b = 1; b <= 8 && 2048 % (b * dp) == 0 && n < 4096; b *= 2, n++) {
                    grid[n][0] = tp, grid[n][1] = cp, grid[n][2] = pp, grid[n][3] = dp, grid[n][4] = b;
                }
            }
    uint64_t low = UINT64_MAX, evals = 0;
    double t0 = now(), t;
    /* One pass over the grid takes about a microsecond and a read of the
     * CPU clock about 0.4 us here: the clock is read once per PASSES passes
     * so that its cost stays out of the figure (under 0.1%). */
    enum { PASSES = 1024 };
    do {
        for (int pass = 0; pass < PASSES; pass++)
            for (size_t i = 0; i < n; i++) {
                uint64_t bytes = paper_bytes(grid[i][0], grid[i][1], grid[i][2], grid[i][3], grid[i][4]);
                low = bytes < low ? bytes : low;
            }
        evals += PASSES * n;
        t = now() - t0;
    } while (t < budget);
    *least = low;
    return evals ? t * 1e9 / (double)evals : 0;
}

struct run {
    uint64_t visited, pruned, valid, yielded;
    double first_s; /* time to the first (best) layout */
};

/* One complete search; every layout is drawn so the whole answer is timed. */
static int search_once(const mem4d_model *m, const mem4d_device *d, const mem4d_layout *base,
                       int fits_only, int ranked, int node_local, struct run *out)
{
    mem4d_search *s;
    if (mem4d_search_new(m, d, base, &s) != MEM4D_OK)
        return -1;
    mem4d_search_set_option(s, MEM4D_SEARCH_FITS_ONLY, (uint64_t)fits_only);
    mem4d_search_set_option(s, MEM4D_SEARCH_RANKED, (uint64_t)ranked);
    mem4d_search_set_option(s, MEM4D_SEARCH_NODE_LOCAL, (uint64_t)node_local);
    double t0 = now();
    mem4d_status st = mem4d_search_next(s, NULL, NULL);
    out->first_s = now() - t0;
    while (st == MEM4D_OK)
        st = mem4d_search_next(s, NULL, NULL);
    mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_VISITED, &out->visited);
    mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_PRUNED, &out->pruned);
    mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_VALID, &out->valid);
    mem4d_search_stat_get(s, MEM4D_SEARCH_STAT_YIELDED, &out->yielded);
    mem4d_search_free(s);
    return st == MEM4D_END ? 0 : -1;
}

/* Repeat a search for about `budget` seconds and print its figures; *first
 * and *rate (may be NULL) receive the best time to the first answer and the
 * visited layouts per second. */
static int scenario(const char *name, const mem4d_model *m, const mem4d_device *d, const mem4d_layout *base,
                    int fits_only, int ranked, int node_local, double budget, double *first, double *rate)
{
    struct run r = {0};
    double best_first = 1e9, t0 = now(), t;
    long reps = 0;
    do {
        if (search_once(m, d, base, fits_only, ranked, node_local, &r) != 0) {
            fprintf(stderr, "bench-search: search failed\n");
            return -1;
        }
        if (r.first_s < best_first)
            best_first = r.first_s;
        reps++;
        t = now() - t0;
    } while (t < budget);
    double per = t / (double)reps;
    printf("%s\n", name);
    printf("  layouts visited (estimated) %llu, pruned unseen %llu, yielded %llu\n",
           (unsigned long long)r.visited, (unsigned long long)r.pruned, (unsigned long long)r.yielded);
    printf("  time to the %s answer %.1f us (best of %ld), whole search %.1f us (mean)\n",
           ranked ? "ranked" : "first", best_first * 1e6, reps, per * 1e6);
    printf("  visited layouts/s %.3g (%.0f ns each, search overhead included); "
           "visited + pruned layouts/s %.3g\n",
           (double)r.visited / per, per * 1e9 / (double)(r.visited ? r.visited : 1),
           (double)(r.visited + r.pruned) / per);
    if (first)
        *first = best_first;
    if (rate)
        *rate = (double)r.visited / per;
    return 0;
}

int main(int argc, char **argv)
{
    double budget = argc > 1 ? atof(argv[1]) : 1.0;
    mem4d_model *m = NULL;
    mem4d_device *d = NULL;
    mem4d_layout *base = NULL;
    if (mem4d_model_new_preset("llama3.1-405b", &m) != MEM4D_OK ||
        mem4d_device_new_preset("h100-80", &d) != MEM4D_OK || mem4d_layout_new(&base) != MEM4D_OK) {
        fprintf(stderr, "bench-search: setup failed\n");
        return 1;
    }
    mem4d_device_set(d, MEM4D_DEVICE_GPUS_PER_NODE, 8);
    mem4d_layout_set(base, MEM4D_LAYOUT_WORLD, 16384);
    mem4d_layout_set(base, MEM4D_LAYOUT_SEQ_LENGTH, 8192);
    mem4d_layout_set(base, MEM4D_LAYOUT_GLOBAL_BATCH, 2048);
    printf("Llama-3.1-405B, 16384 x h100-80 (8 per node), seq 8192, gbs 2048\n");
    double open_first = 0, all_rate = 0;
    int rc = scenario("ranked, fitting only, t*c within a node (the plan answer)", m, d, base, 1, 1, 1, budget, NULL,
                      NULL);
    rc |= scenario("ranked, fitting only, any t*c (every knob open)", m, d, base, 1, 1, 0, budget, &open_first, NULL);
    rc |= scenario("every valid layout estimated (no pruning), any t*c", m, d, base, 0, 0, 0, budget, NULL,
                   &all_rate);
    /* Llama 3's own split: 126 layers as 7 + 14 x 8 + 7 over 16 stages. */
    mem4d_layout_set(base, MEM4D_LAYOUT_FIRST_STAGE_LAYERS, 7);
    mem4d_layout_set(base, MEM4D_LAYOUT_LAST_STAGE_LAYERS, 7);
    printf("\nsame, with uneven first/last stages of 7 layers (Llama 3's pp 16 split)\n");
    rc |= scenario("ranked, fitting only, t*c within a node", m, d, base, 1, 1, 1, budget, NULL, NULL);
    rc |= scenario("every valid layout estimated (no pruning), any t*c", m, d, base, 0, 0, 0, budget, NULL, NULL);
    uint64_t least = 0;
    double paper_ns = paper_loop_ns(budget, &least);
    printf("\nsummary: estimated layouts/s %.3g (every valid layout, no pruning; target >= 4e6 on one core); "
           "plan with every knob open answered in %.2f ms (target <= 2 ms)\n",
           all_rate, open_first * 1e3);
    if (all_rate > 0 && paper_ns > 0)
        printf("summary: a full estimate in the search %.0f ns, the paper formula's bare loop %.1f ns: %.1fx "
               "(target <= 10x; its least layout %.1f GiB)\n", 1e9 / all_rate, paper_ns, 1e9 / all_rate / paper_ns,
               (double)least / (1 << 30));
    mem4d_layout_free(base);
    mem4d_device_free(d);
    mem4d_model_free(m);
    return rc ? 1 : 0;
}
