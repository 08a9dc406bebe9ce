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

static const struct {
    const char *file, *gres;
    uint32_t nodes;
} jobs[] = {
    {"llama3-8b.sbatch", "gres:gpu:h100:8", 1},  {"llama3-70b.sbatch", "gres:gpu:h100:8", 4},
    {"bad-tp.sbatch", "gres:gpu:h100:6", 1},     {"no-training.sbatch", "gres:gpu:h100:1", 1},
    {"unreadable.sbatch", "gres:gpu:h100:8", 1},
};

static char *slurp(const char *dir, const char *name)
{
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
    printf("%-20s %8s %12s %12s  outcome\n", "job", "rounds", "ms/submit", "worst ms");
    for (size_t i = 0; i < sizeof jobs / sizeof *jobs; i++) {
        char *script = slurp(argv[1], jobs[i].file);
        if (!script) {
            fprintf(stderr, "cannot read %s/%s\n", argv[1], jobs[i].file);
            return 1;
        }
        double total = 0, worst = 0;
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
            double dt = now_ms() - t0;
            total += dt;
            worst = dt > worst ? dt : worst;
            fake_xfree(&err);
        }
        printf("%-20s %8d %12.3f %12.3f  %s\n", jobs[i].file, rounds, total / rounds, worst,
               rc == 0 ? "admitted" : "rejected");
        if (getenv("BENCH_VERBOSE"))
            printf("    %s\n", fake_slurm_last_info);
        fake_slurm_last_info[0] = '\0';
        free(script);
    }
    fini();
    unlink(conf);
    rmdir(dir);
    return 0;
}
