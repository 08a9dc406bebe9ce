/*
 * The GPUs a SLURM job asks for. The formats are those sbatch writes
 * (SchedMD/slurm slurm-22-05-8-1, src/common/slurm_opt.c, xfmt_tres() in
 * src/common/proc_args.c): "gres:gpu:8", "gres:gpu:h100:8", "gres:gpu:h100"
 * (a count of 1), several items separated by commas.
 * SPDX-License-Identifier: MIT
 */
#include "request.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define NO_VAL32 0xfffffffeu
#define NO_VAL16_ 0xfffeu

static bool given32(uint32_t v)
{
    return v != 0 && v != NO_VAL32 && v != 0xffffffffu;
}

static bool given16(uint16_t v)
{
    return v != 0 && v != NO_VAL16_ && v != 0xffffu;
}

/* All decimal digits (a count, never a GPU type's name). */
static bool all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return n > 0;
}

/* A whole decimal count, at most 2^32 - 1; *out is left alone otherwise. */
static bool parse_count(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n > 10 || !all_digits(s, n))
        return false;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (uint64_t)(s[i] - '0');
    if (v > UINT32_MAX)
        return false;
    *out = v;
    return true;
}

/* One "gpu[:TYPE][:COUNT]" item (after "gres:"): true when it is well formed. */
static bool gpu_spec(const char *r, size_t n, char *type, size_t tsize, uint64_t *count)
{
    /* r points after "gpu"; tokens are separated by ':' (or '=' before a count). */
    const char *tok[3];
    size_t len[3];
    int nt = 0;
    size_t i = 0;
    while (i < n) {
        if ((r[i] != ':' && r[i] != '=' && r[i] != '/') || nt == 3)
            return false;
        i++;
        size_t j = i;
        while (j < n && r[j] != ':' && r[j] != '=')
            j++;
        tok[nt] = r + i;
        len[nt++] = j - i;
        i = j;
    }
    *count = 1;
    type[0] = '\0';
    if (nt == 0)
        return true;
    size_t type_tok = (size_t)nt; /* none */
    if (all_digits(tok[nt - 1], len[nt - 1])) {
        /* a count, or one too large to read: never a type named by digits */
        if (!parse_count(tok[nt - 1], len[nt - 1], count))
            return false;
        if (nt == 2)
            type_tok = 0;
        else if (nt > 2)
            return false;
    } else if (nt == 1) {
        type_tok = 0;
    } else {
        return false;
    }
    if (type_tok < (size_t)nt) {
        if (len[type_tok] == 0 || len[type_tok] >= tsize)
            return false;
        memcpy(type, tok[type_tok], len[type_tok]);
        type[len[type_tok]] = '\0';
    }
    return true;
}

/* The GPU item of a TRES list: 1 found (count and type filled), 0 none,
 * -1 malformed. */
static int gpu_item(const char *tres, char *type, size_t tsize, uint64_t *count)
{
    for (const char *p = tres; p && *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *q = p;
        if (n >= 5 && (strncmp(q, "gres:", 5) == 0 || strncmp(q, "gres/", 5) == 0)) {
            q += 5;
            n -= 5;
        }
        if (n >= 3 && strncmp(q, "gpu", 3) == 0 && (n == 3 || q[3] == ':' || q[3] == '=' || q[3] == '/'))
            return gpu_spec(q + 3, n - 3, type, tsize, count) ? 1 : -1;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

static bool mul(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a && b > UINT64_MAX / a)
        return false;
    *out = a * b;
    return true;
}

void m4s_request_from_job(const struct m4s_job_fields *job, struct m4s_request *req)
{
    memset(req, 0, sizeof *req);
    uint64_t nodes = given32(job->min_nodes) ? job->min_nodes : 1, per = 0, tasks = 0;
    if (given32(job->num_tasks))
        tasks = job->num_tasks;
    else if (given16(job->ntasks_per_node))
        tasks = (uint64_t)job->ntasks_per_node * nodes;

    static const struct {
        int kind; /* 0 job, 1 node, 2 task, 3 socket */
        const char *what;
    } order[] = {{0, "--gpus"}, {1, "--gres/--gpus-per-node"}, {2, "--gpus-per-task"}, {3, "--gpus-per-socket"}};
    const char *fields[4] = {job->tres_per_job, job->tres_per_node, job->tres_per_task, job->tres_per_socket};
    for (size_t i = 0; i < 4; i++) {
        char type[sizeof req->gpu_type];
        int r = gpu_item(fields[order[i].kind], type, sizeof type, &per);
        if (r < 0) {
            snprintf(req->why, sizeof req->why, "the GPU request '%.100s' (%s) is not one the plugin reads",
                     fields[order[i].kind], order[i].what);
            return;
        }
        if (r == 0)
            continue;
        memcpy(req->gpu_type, type, sizeof type);
        bool ok = true;
        switch (order[i].kind) {
        case 0: req->gpus = per; break;
        case 1: ok = mul(per, nodes, &req->gpus); break;
        case 2:
            if (!tasks) {
                snprintf(req->why, sizeof req->why, "--gpus-per-task without a task count says nothing "
                                                    "about the number of GPUs");
                return;
            }
            ok = mul(per, tasks, &req->gpus);
            break;
        default:
            snprintf(req->why, sizeof req->why, "GPUs per socket (%s) do not tell the number of GPUs "
                                                "before the nodes are chosen", order[i].what);
            return;
        }
        if (!ok || req->gpus == 0) {
            req->gpus = 0;
            snprintf(req->why, sizeof req->why, "the GPU request '%.100s' gives no usable GPU count",
                     fields[order[i].kind]);
        }
        return;
    }
    /* No GPU request: one GPU per task, when tasks are given. */
    if (tasks) {
        req->gpus = tasks;
        return;
    }
    snprintf(req->why, sizeof req->why, "the job requests no GPUs and no task count");
}
