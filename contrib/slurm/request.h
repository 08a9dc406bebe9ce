/*
 * The GPUs a SLURM job asks for: type and count, from the fields of its
 * request (no SLURM header needed, so it is tested on its own).
 * SPDX-License-Identifier: MIT
 */
#ifndef MEM4D_SLURM_REQUEST_H
#define MEM4D_SLURM_REQUEST_H

#include <stdint.h>

/* The job's fields as slurmctld passes them; counts are 0 or SLURM's NO_VAL
 * (0xfffffffe) / NO_VAL16 (0xfffe) when not given. The TRES strings are
 * comma-separated "gres:gpu[:TYPE][:COUNT]" items (sbatch's --gpus fills
 * tres_per_job, --gres and --gpus-per-node tres_per_node, --gpus-per-task
 * tres_per_task, --gpus-per-socket tres_per_socket). */
struct m4s_job_fields {
    const char *tres_per_job, *tres_per_node, *tres_per_task, *tres_per_socket;
    uint32_t min_nodes, num_tasks;
    uint16_t ntasks_per_node;
};

struct m4s_request {
    char gpu_type[64]; /* "" when the request names no type */
    uint64_t gpus;     /* the world size; 0 when it cannot be told (see why) */
    char why[192];
};

void m4s_request_from_job(const struct m4s_job_fields *job, struct m4s_request *req);

#endif
