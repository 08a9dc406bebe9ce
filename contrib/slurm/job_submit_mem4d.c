/*
 * job_submit/mem4d: a SLURM job_submit plugin that refuses, at sbatch time,
 * a training job whose GPUs would run out of memory, says why (stage, bytes
 * needed, bytes there) and which layout of the same GPUs fits.
 *
 * Written against SLURM 22.05's plugin interface (Debian 12): the symbols
 * below, job_submit()/job_modify() with 22.05's arguments, err_msg from
 * Slurm's own allocator. Only public headers; what slurmctld provides
 * (logging, xstrdup, the job's current request in job_modify) is declared
 * here and resolved when slurmctld loads the plugin.
 * SPDX-License-Identifier: MIT
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/spank.h> /* slurm_info(), slurm_error(), slurm_debug() */

#include "conf.h"
#include "decide.h"
#include "request.h"

#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(22, 5, 0) || SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)
#error "job_submit/mem4d follows SLURM 22.05's job_submit interface (job_modify's arguments, buf_t)"
#endif

/* The plugin's identity. plugin_version must equal the running slurmctld's
 * version exactly: a SLURM update means a rebuild (see README.md). */
const char plugin_name[] = "Reject jobs whose GPUs would run out of memory (libmem4d)";
const char plugin_type[] = "job_submit/mem4d";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/* From libslurmfull, which slurmctld has loaded (names as exported). */
extern char *slurm_xstrdup(const char *str);
extern void slurm_xfree(void **item);
extern char *slurm_get_extra_conf_path(char *conf_name);
extern void slurm_free_job_desc_msg(job_desc_msg_t *msg);
/* From slurmctld itself (exported to plugins): the job's current request,
 * script_buf included, as a new job_desc_msg_t. */
struct job_record;
extern job_desc_msg_t *copy_job_record_to_job_desc(struct job_record *job_ptr);

/* buf_t of SLURM 22.05 (src/common/pack.h), for the script of a job copy. */
struct m4s_slurm_buf {
    uint32_t magic;
    char *head;
    uint32_t size;
    uint32_t processed;
    bool mmaped;
};
#define M4S_BUF_MAGIC 0x42554545u

/* The configuration read by init(); read-only until fini(). */
static struct m4s_config *config;

int init(void);
int fini(void);
int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid, char **err_msg);
int job_modify(job_desc_msg_t *job_desc, struct job_record *job_ptr, uint32_t submit_uid);

int init(void)
{
    char name[] = "mem4d.conf";
    char *path = slurm_get_extra_conf_path(name);
    char err[1024];
    bool missing = false;
    struct m4s_config *c = NULL;
    int rc = SLURM_SUCCESS;
    if (!path) {
        slurm_error("job_submit/mem4d: cannot tell where mem4d.conf is");
        return SLURM_ERROR;
    }
    if (m4s_config_load(path, &c, &missing, err, sizeof err) != 0) {
        slurm_error("job_submit/mem4d: bad configuration: %s", err);
        rc = SLURM_ERROR;
    } else {
        size_t n = c->partitions.n + c->gres.n;
        slurm_info("job_submit/mem4d: libmem4d %s, %s %s: policy=%s strict=%s propose=%s, %zu device mappings%s",
                   mem4d_version(), missing ? "no" : "read", path, c->reject_unreadable ? "reject" : "admit",
                   c->strict ? "yes" : "no", c->propose ? "yes" : "no", n,
                   c->default_device.device ? ", a default device" : "");
        config = c;
    }
    slurm_xfree((void **)&path);
    return rc;
}

int fini(void)
{
    m4s_config_free(config);
    config = NULL;
    return SLURM_SUCCESS;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* A NULL-terminated copy of a counted array (slurmctld's may lack the NULL). */
static const char **terminated(char **v, uint32_t n, bool *oom)
{
    if (!v || !n)
        return NULL;
    const char **out = calloc((size_t)n + 1, sizeof *out);
    if (!out) {
        *oom = true;
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++)
        out[i] = v[i];
    return out;
}

/* Decide on a request; logs the outcome. */
static void decide(const job_desc_msg_t *jd, const char *script, uint32_t uid, const char *what,
                   struct m4s_decision *d)
{
    double t0 = now_ms();
    bool oom = false;
    const char **envp = terminated(jd->environment, jd->env_size, &oom);
    const char **argv = terminated(jd->argv, jd->argc, &oom);
    struct m4s_job job = {.script = script, .envp = envp, .argv = argv, .partition = jd->partition, .uid = uid};
    struct m4s_job_fields f = {.tres_per_job = jd->tres_per_job, .tres_per_node = jd->tres_per_node,
                               .tres_per_task = jd->tres_per_task, .tres_per_socket = jd->tres_per_socket,
                               .min_nodes = jd->min_nodes, .num_tasks = jd->num_tasks,
                               .ntasks_per_node = jd->ntasks_per_node};
    m4s_request_from_job(&f, &job.req);
    if (oom) {
        memset(d, 0, sizeof *d);
        d->outcome = M4S_UNKNOWN;
        d->reject = config->reject_unreadable;
        strcpy(d->message, "mem4d: cannot check this job's GPU memory: out of memory");
    } else {
        m4s_decide(config, &job, d);
    }
    free(envp);
    free(argv);
    double ms = now_ms() - t0;
    const char *name = jd->name ? jd->name : "";
    if (d->outcome == M4S_NO_TRAINING)
        slurm_debug("job_submit/mem4d: %s uid=%u name=%s: admitted untouched: no training command (%.2f ms)",
                    what, uid, name, ms);
    else
        slurm_info("job_submit/mem4d: %s uid=%u name=%s partition=%s gpus=%llu type=%s: %s, %s: %s (%.2f ms)",
                   what, uid, name, jd->partition ? jd->partition : "(default)",
                   (unsigned long long)job.req.gpus, job.req.gpu_type[0] ? job.req.gpu_type : "-",
                   m4s_outcome_name(d->outcome), d->reject ? "rejected" : "admitted", d->message, ms);
}

int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid, char **err_msg)
{
    if (!config || !job_desc)
        return SLURM_SUCCESS;
    uint32_t uid = job_desc->user_id != NO_VAL ? job_desc->user_id : submit_uid;
    struct m4s_decision d;
    decide(job_desc, job_desc->script, uid, "submit", &d);
    if (!d.reject)
        return SLURM_SUCCESS;
    if (err_msg) {
        if (*err_msg)
            slurm_xfree((void **)err_msg);
        *err_msg = slurm_xstrdup(d.message);
    }
    return ESLURM_ACCESS_DENIED;
}

/* Does an update touch the GPUs, nodes, tasks or partition? */
static bool changes_size(const job_desc_msg_t *u)
{
    return u->tres_per_job || u->tres_per_node || u->tres_per_task || u->tres_per_socket || u->partition ||
           u->min_nodes != NO_VAL || u->num_tasks != NO_VAL || u->ntasks_per_node != NO_VAL16;
}

int job_modify(job_desc_msg_t *job_desc, struct job_record *job_ptr, uint32_t submit_uid)
{
    if (!config || !job_desc || !job_ptr || !changes_size(job_desc))
        return SLURM_SUCCESS;
    job_desc_msg_t *cur = copy_job_record_to_job_desc(job_ptr);
    if (!cur)
        return SLURM_SUCCESS;
    /* The job as it will be: the update's fields over the current ones. */
    job_desc_msg_t next = *cur;
    if (job_desc->tres_per_job || job_desc->tres_per_node || job_desc->tres_per_task ||
        job_desc->tres_per_socket) {
        next.tres_per_job = job_desc->tres_per_job;
        next.tres_per_node = job_desc->tres_per_node;
        next.tres_per_task = job_desc->tres_per_task;
        next.tres_per_socket = job_desc->tres_per_socket;
    }
    if (job_desc->partition)
        next.partition = job_desc->partition;
    if (job_desc->min_nodes != NO_VAL)
        next.min_nodes = job_desc->min_nodes;
    if (job_desc->num_tasks != NO_VAL)
        next.num_tasks = job_desc->num_tasks;
    if (job_desc->ntasks_per_node != NO_VAL16)
        next.ntasks_per_node = job_desc->ntasks_per_node;
    /* The stored script (written with its NUL), read from the buffer. */
    const struct m4s_slurm_buf *b = cur->script_buf;
    char *script = NULL;
    if (b && b->magic == M4S_BUF_MAGIC && b->head && (script = malloc((size_t)b->size + 1))) {
        memcpy(script, b->head, b->size);
        script[b->size] = '\0';
    }
    uint32_t uid = cur->user_id != NO_VAL ? cur->user_id : submit_uid;
    struct m4s_decision d;
    if (script) {
        decide(&next, script, uid, "modify", &d);
    } else {
        memset(&d, 0, sizeof d);
        d.reject = false;
        slurm_info("job_submit/mem4d: modify uid=%u: no batch script to re-check; admitted", uid);
    }
    free(script);
    /* The copy's environment is one block under an array of pointers into
     * it (get_job_env()): freed as slurmctld's fed_mgr.c frees it, before
     * slurm_free_job_desc_msg(), which would free every string. */
    if (cur->environment) {
        slurm_xfree((void **)&cur->environment[0]);
        slurm_xfree((void **)&cur->environment);
        cur->env_size = 0;
    }
    slurm_free_job_desc_msg(cur);
    return d.reject ? ESLURM_ACCESS_DENIED : SLURM_SUCCESS;
}
