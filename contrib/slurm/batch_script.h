/*
 * The batch-script reader of the job_submit/mem4d plugin: finds the
 * Megatron-LM argument list in a SLURM batch script, as people write it.
 *
 * A pure function: no SLURM, no libmem4d, no I/O, no global state, so it can
 * be unit-tested and fuzzed on its own. Work is bounded by the limits below
 * whatever the input; every allocation is released by m4s_script_free().
 * SPDX-License-Identifier: MIT
 */
#ifndef MEM4D_SLURM_BATCH_SCRIPT_H
#define MEM4D_SLURM_BATCH_SCRIPT_H

#include <stddef.h>

/* Bounds on the work per script (each one makes the script "unreadable"). */
#define M4S_MAX_SCRIPT_BYTES (1u << 20) /* a quarter of SLURM's default max_script_size */
#define M4S_MAX_WORDS 8192u             /* words of one command or array */
#define M4S_MAX_VARS 256u               /* distinct variables assigned */
#define M4S_MAX_REFS 65536u             /* $-expansions followed */
#define M4S_MAX_ENV 65536u              /* environment entries looked at (the rest: unset) */
#define M4S_MAX_EXPANSION (2u << 20)    /* bytes of words produced, M4S_WORD_COST more a word */
#define M4S_WORD_COST 16u
#define M4S_MAX_DEPTH 8u                /* nested ${A:-${B}} and bash -c "..." */

typedef enum m4s_found {
    M4S_FOUND_NONE = 0,      /* no training command and no #MEM4D line */
    M4S_FOUND_COMMAND = 1,   /* a launcher line running a training script */
    M4S_FOUND_DIRECTIVE = 2, /* #MEM4D lines (they win over a command) */
    M4S_FOUND_UNREADABLE = 3 /* found, but the arguments cannot be read: see why */
} m4s_found;

struct m4s_script {
    m4s_found found;
    int argc;          /* the Megatron-LM arguments (what follows the script name) */
    char **argv;       /* argc words, then NULL */
    char *hf_config;   /* the value of --hf-config, taken out of argv; or NULL */
    char *model;       /* the value of --model (a libmem4d preset), taken out of argv; or NULL */
    unsigned line;     /* 1-based line of the command or first directive; 0 if none */
    char why[256];     /* for M4S_FOUND_UNREADABLE: one sentence naming the cause */
};

/*
 * Read @p text (@p len bytes; NUL bytes end it early) and fill @p out.
 * @p scripts: NULL-terminated names of training scripts ("pretrain_gpt.py");
 *            a word whose last path component equals one of them starts the
 *            argument list.
 * @p envp:    NULL-terminated "NAME=value" strings (the job's environment) for
 *            variables the script does not assign; may be NULL.
 * @p args:    NULL-terminated script arguments ($0, $1, ...); may be NULL.
 * Returns 0, or -1 when memory ran out (@p out is then empty).
 */
int m4s_read_script(const char *text, size_t len, const char *const *scripts,
                    const char *const *envp, const char *const *args, struct m4s_script *out);

/* Free what m4s_read_script() filled; leaves @p s empty. NULL is allowed. */
void m4s_script_free(struct m4s_script *s);

#endif
