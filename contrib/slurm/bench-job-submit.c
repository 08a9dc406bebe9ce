/*
 * bench-job-submit: milliseconds per sbatch submission spent in
 * job_submit/mem4d's job_submit(), on the example jobs (reading the script,
 * the estimate, and for the rejected ones the search for a layout that fits).
 *   bench-job-submit EXAMPLES_DIR [ROUNDS]
 * It drives the plugin as slurmctld does, with tests/fake_slurm.c standing in
 * for slurmctld. Prints figures; it does not pass or fail.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/fake_slurm.h"

/* Llama-3.1-405B on 2048 nodes with tp 8 alone: out of memory, and the
 * proposal searches a 16384-GPU world (the largest search here). */
static const char big[] = "#MEM4D --model llama3.1-405b --seq-length 8192 --global-batch-size 2048 "
                          "--micro-batch-size 1 --tensor-model-parallel-size 8 --bf16 --use-distributed-optimizer\n";

static const struct {
    const char *file, *gres;
    uint32_t nodes;
} jobs[] = {
    {"llama3-8b.sbatch", "gres:gpu:h100:8", 1},  {"llama3-70b.sbatch", "gres:gpu:h100:8", 4},
    {"bad-tp.sbatch", "gres:gpu:h100:6", 1},     {"no-training.sbatch", "gres:gpu:h100:1", 1},
    {"unreadable.sbatch", "gres:gpu:h100:8", 1}, {"llama3-70b-pp2.sbatch", "gres:gpu:h100:8", 2},
    {NULL, "gres:gpu:h100:8", 2048},
};

static char *slurp(const char *dir, const char *name)
{
    if (!name)
        return strdup(big);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench-job-submit EXAMPLES_DIR [ROUNDS]\n");
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 200;
    char dir[] = "/tmp/bench-job-submit-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char conf[4200];
    snprintf(conf, sizeof conf, "%s/mem4d.conf", dir);
    FILE *f = fopen(conf, "w");
    if (!f)
        return 1;
    fputs("gres.h100 = h100-80\npolicy = admit\n", f);
    fclose(f);
    fake_slurm_conf_dir = dir;
    if (init() != 0) {
        fprintf(stderr, "init failed: %s\n", fake_slurm_last_error);
        return 1;
    }
    if (rounds < 1)
        rounds = 1;
    double *ms = malloc((size_t)rounds * sizeof *ms);
    if (!ms)
        return 1;
    printf("%-22s %7s %10s %10s %10s %10s  outcome\n", "job", "rounds", "mean ms", "median", "p99", "max");
    for (size_t i = 0; i < sizeof jobs / sizeof *jobs; i++) {
        char *script = slurp(argv[1], jobs[i].file);
        if (!script) {
            fprintf(stderr, "cannot read %s/%s\n", argv[1], jobs[i].file);
            return 1;
        }
        double total = 0;
        int rc = 0;
        for (int r = 0; r < rounds; r++) {
            job_desc_msg_t jd;
            fake_job_desc_init(&jd);
            jd.script = script;
            jd.tres_per_node = (char *)jobs[i].gres;
            jd.min_nodes = jobs[i].nodes;
            char *err = NULL;
            double t0 = now_ms();
            rc = job_submit(&jd, 1000, &err);
            ms[r] = now_ms() - t0;
            total += ms[r];
            fake_xfree(&err);
        }
        qsort(ms, (size_t)rounds, sizeof *ms, cmp_double);
        printf("%-22s %7d %10.3f %10.3f %10.3f %10.3f  %s\n", jobs[i].file ? jobs[i].file : "405b-16384-gpus", rounds, total / rounds,
               ms[rounds / 2], ms[(size_t)((rounds - 1) * 0.99)], ms[rounds - 1], rc == 0 ? "admitted" : "rejected");
        if (getenv("BENCH_VERBOSE"))
            printf("    %s\n", fake_slurm_last_info);
        fake_slurm_last_info[0] = '\0';
        free(script);
    }
    free(ms);
    fini();
    unlink(conf);
    rmdir(dir);
    return 0;
}
