/*
 * The plugin's decision on one job, without SLURM: read the batch script,
 * estimate the job's memory with libmem4d, and admit or reject it with the
 * sentence the user sees. Bounded work, no global state, everything it
 * allocates freed before it returns.
 * SPDX-License-Identifier: MIT
 */
#ifndef MEM4D_SLURM_DECIDE_H
#define MEM4D_SLURM_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "conf.h"
#include "request.h"

enum m4s_outcome {
    M4S_NO_TRAINING = 0, /* no training command: admitted untouched */
    M4S_FITS = 1,        /* fits (or tight, when not strict): admitted */
    M4S_OOM = 2,         /* would run out of memory: rejected */
    M4S_TIGHT = 3,       /* above the fit threshold, strict: rejected */
    M4S_INVALID = 4,     /* the layout breaks a rule: rejected */
    M4S_UNKNOWN = 5      /* cannot read or compute: the policy decides */
};

struct m4s_job {
    const char *script; /* the batch script (NUL-terminated); may be NULL */
    const char *const *envp; /* the job's environment; may be NULL */
    const char *const *argv; /* the script's arguments ($0 first); may be NULL */
    const char *partition;   /* may be NULL */
    struct m4s_request req;  /* the GPUs asked for */
    uid_t uid;               /* the submitter, for --hf-config files */
};

struct m4s_decision {
    enum m4s_outcome outcome;
    bool reject;
    char message[1024]; /* one line: the user's reason (rejects) or the log's summary */
};

/* Decide. Never fails: what goes wrong inside is an M4S_UNKNOWN outcome. */
void m4s_decide(const struct m4s_config *conf, const struct m4s_job *job, struct m4s_decision *d);

/* The outcome's name for logs: "no-training", "fits", "oom", "tight", "invalid", "unknown". */
const char *m4s_outcome_name(enum m4s_outcome o);

#endif
