/*
 * What slurmctld gives the plugin, faked for the tests and the bench: SLURM's
 * allocator (same block layout, and a check that err_msg came from it),
 * logging into a buffer, the configuration path, and job copies.
 * SPDX-License-Identifier: MIT
 */
#ifndef MEM4D_SLURM_FAKE_H
#define MEM4D_SLURM_FAKE_H

#include <slurm/slurm.h>

/* The directory slurm_get_extra_conf_path() answers with. */
extern const char *fake_slurm_conf_dir;
/* The last line logged at error and at info level; blocks still allocated by
 * slurm_xstrdup(); 0/1: echo log lines to stderr. */
extern char fake_slurm_last_error[2048], fake_slurm_last_info[2048];
extern long fake_slurm_live_blocks;
extern int fake_slurm_verbose;

/* A job as slurmctld holds it, for job_modify(): copy_job_record_to_job_desc()
 * answers with a copy of desc whose script_buf holds script. */
struct fake_job {
    job_desc_msg_t desc;
    const char *script;
};

/* The plugin's entry points. */
int init(void);
int fini(void);
int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid, char **err_msg);
struct job_record;
int job_modify(job_desc_msg_t *job_desc, struct job_record *job_ptr, uint32_t submit_uid);

/* A request as sbatch sends one with no options (NO_VAL everywhere). */
void fake_job_desc_init(job_desc_msg_t *jd);
void fake_xfree(char **p);

#endif
