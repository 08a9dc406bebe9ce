/*
 * The job flags a line of mem4d_layout_megatron_args() (megatron_args.c)
 * replaces: every Megatron-LM flag that sets a layout key the line writes,
 * in each spelling the reader takes. The line leaves out switches that are
 * off and values at Megatron-Core 0.16's defaults, so a job's own flag for
 * such a key would survive a line appended after it (argparse: the last one
 * wins, and no later flag takes a switch back); taking these out of the job
 * first and appending the line sets the line's layout. Header-only (a table
 * and a lookup), shared by the writer's tests and `mem4d check`
 * (cli/cmd_check.c), so that the list has one owner: a flag the writer
 * starts to write is added here (test-megatron-args checks that every flag
 * of its lines is listed).
 *
 * Flags the line does not write are not listed, even where the line's
 * layout makes them moot: --recompute-modules, --moe-layer-recompute,
 * --overlapped-distributed-optimizer keep the job's value (the proposal's
 * layout keeps it too, and the reader takes them beside any recomputation;
 * `mem4d check` compares the estimate read back with the proposal's).
 * SPDX-License-Identifier: MIT
 */
#ifndef MEM4D_MEGATRON_ARGS_H
#define MEM4D_MEGATRON_ARGS_H

#include <stdbool.h>
#include <string.h>

/* How many words a replaced flag takes after its name (or in "=value"). */
enum m4d_replaced_value { M4D_REPLACED_SWITCH, M4D_REPLACED_VALUE, M4D_REPLACED_LIST };

static const struct m4d_replaced_flag {
    const char *name;
    enum m4d_replaced_value value;
} m4d_megatron_replaced_flags[] = {
    /* the parallel sizes, the batch and the sequence (put_sizes) */
    {"--tensor-model-parallel-size", M4D_REPLACED_VALUE},
    {"--context-parallel-size", M4D_REPLACED_VALUE},
    {"--pipeline-model-parallel-size", M4D_REPLACED_VALUE},
    {"--expert-model-parallel-size", M4D_REPLACED_VALUE},
    {"--expert-tensor-parallel-size", M4D_REPLACED_VALUE},
    {"--micro-batch-size", M4D_REPLACED_VALUE},
    {"--global-batch-size", M4D_REPLACED_VALUE},
    {"--seq-length", M4D_REPLACED_VALUE},
    /* the split over the stages (m4d_megatron_put_pipeline); the two
     * account-for switches cannot be taken back by a later flag */
    {"--pipeline-model-parallel-layout", M4D_REPLACED_VALUE},
    {"--num-layers-per-virtual-pipeline-stage", M4D_REPLACED_VALUE},
    {"--num-virtual-stages-per-pipeline-rank", M4D_REPLACED_VALUE},
    {"--decoder-first-pipeline-num-layers", M4D_REPLACED_VALUE},
    {"--decoder-last-pipeline-num-layers", M4D_REPLACED_VALUE},
    {"--account-for-embedding-in-pipeline-split", M4D_REPLACED_SWITCH},
    {"--account-for-loss-in-pipeline-split", M4D_REPLACED_SWITCH},
    {"--pp-partition-method", M4D_REPLACED_VALUE}, /* Megatron-DeepSpeed */
    /* the dispatcher; --moe-enable-deepep is the older spelling of flex's deepep */
    {"--moe-token-dispatcher-type", M4D_REPLACED_VALUE},
    {"--moe-flex-dispatcher-backend", M4D_REPLACED_VALUE},
    {"--moe-enable-deepep", M4D_REPLACED_SWITCH},
    /* the switches and settings of put_memory_switches */
    {"--sequence-parallel", M4D_REPLACED_SWITCH},
    {"--use-distributed-optimizer", M4D_REPLACED_SWITCH},
    /* the sharding, written as Megatron FSDP: its older name, torch's FSDP2,
     * and DeepSpeed's ZeRO stage, which `mem4d check` writes in place of
     * --use-distributed-optimizer for a Megatron-DeepSpeed job (and which
     * Megatron-LM does not take) */
    {"--use-megatron-fsdp", M4D_REPLACED_SWITCH},
    {"--use-custom-fsdp", M4D_REPLACED_SWITCH},
    {"--use-torch-fsdp2", M4D_REPLACED_SWITCH},
    {"--data-parallel-sharding-strategy", M4D_REPLACED_VALUE},
    {"--zero-stage", M4D_REPLACED_VALUE},
    /* the switch alone offloads no layer */
    {"--cpu-offloading", M4D_REPLACED_SWITCH},
    {"--cpu-offloading-num-layers", M4D_REPLACED_VALUE},
    {"--num-distributed-optimizer-instances", M4D_REPLACED_VALUE},
    {"--moe-expert-capacity-factor", M4D_REPLACED_VALUE},
    {"--moe-pad-expert-input-to-capacity", M4D_REPLACED_SWITCH},
    {"--optimizer", M4D_REPLACED_VALUE},
    {"--sgd-momentum", M4D_REPLACED_VALUE},
    {"--overlap-grad-reduce", M4D_REPLACED_SWITCH},
    {"--overlap-param-gather", M4D_REPLACED_SWITCH},
    {"--tp-comm-overlap", M4D_REPLACED_SWITCH},
    /* the interleaved schedule's transfers: on by default with virtual
     * stages, the opt-in of 2023-05 to 2023-10 the older spelling */
    {"--no-overlap-p2p-communication", M4D_REPLACED_SWITCH},
    {"--overlap-p2p-communication", M4D_REPLACED_SWITCH},
    {"--cp-comm-type", M4D_REPLACED_LIST}, /* one word, or one per layer */
    /* recomputation, with the older spellings the reader takes for it:
     * selective (--recompute-activations) and the legacy full recompute
     * (Megatron-LM before 2022, Megatron-DeepSpeed) */
    {"--recompute-granularity", M4D_REPLACED_VALUE},
    {"--recompute-method", M4D_REPLACED_VALUE},
    {"--recompute-num-layers", M4D_REPLACED_VALUE},
    {"--recompute-activations", M4D_REPLACED_SWITCH},
    {"--checkpoint-activations", M4D_REPLACED_SWITCH},
    {"--checkpoint-num-layers", M4D_REPLACED_VALUE},
    {"--activations-checkpoint-method", M4D_REPLACED_VALUE},
    {"--activations-checkpoint-num-layers", M4D_REPLACED_VALUE},
    /* full recomputation's checkpoints split over tp: Megatron-LM (and the
     * reader) refuse it without full recomputation and tp above 1, so a
     * job's own would refuse a proposal that turns either off */
    {"--distribute-saved-activations", M4D_REPLACED_SWITCH},
};

/* How many words of argv[i..] are a flag the line replaces, with its value
 * (all of a list's, up to the next "--" word), or 0. */
static inline int m4d_megatron_replaced_words(int argc, const char *const *argv, int i)
{
    for (size_t k = 0; k < sizeof m4d_megatron_replaced_flags / sizeof *m4d_megatron_replaced_flags; k++) {
        const struct m4d_replaced_flag *f = &m4d_megatron_replaced_flags[k];
        size_t n = strlen(f->name);
        if (strncmp(argv[i], f->name, n) != 0)
            continue;
        if (argv[i][n] == '=' && f->value != M4D_REPLACED_SWITCH)
            return 1;
        if (argv[i][n] != '\0')
            continue;
        int w = 1;
        if (f->value == M4D_REPLACED_VALUE)
            return i + 1 < argc ? 2 : 1;
        if (f->value == M4D_REPLACED_LIST)
            while (i + w < argc && strncmp(argv[i + w], "--", 2) != 0)
                w++;
        return w;
    }
    return 0;
}

#endif
