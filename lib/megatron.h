/*
 * Private declarations of the Megatron-LM importer and writer: the scanner
 * (megatron_scan.c), the appliers (import_megatron.c), the pipeline split
 * read and written (megatron_pipeline.c) and the flag writer
 * (megatron_args.c).
 * SPDX-License-Identifier: MIT
 */
#ifndef MEM4D_MEGATRON_H
#define MEM4D_MEGATRON_H

#include "import.h"

/* What the command line said about one modelled flag (last one wins, as in argparse). */
struct m4d_opt_val {
    bool given;
    uint64_t u; /* integer, or index into the choices */
    double r;   /* M4D_FLAG_REAL */
    const char *s; /* M4D_FLAG_TEXT: the argument itself */
    int at;        /* where in the vector it was last given (argparse: last one wins) */
    unsigned words; /* M4D_FLAG_BITS: how many words it was given (a per-layer list) */
};

/* In an applier, with `vals` the scanned flags: was slot o given, its integer. */
#define GIVEN(o) (vals[o].given)
#define U(o) (vals[o].u)

/* --- megatron_scan.c ------------------------------------------------------- */

/* Read the vector into vals (MF_COUNT slots, zeroed); unknown and
 * unmodelled flags are warned about and skipped. */
mem4d_status m4d_megatron_scan(mem4d_import *imp, int argc, const char *const *argv, struct m4d_opt_val *vals);

/* A flag's integer value: digits only; a sign or junk names the flag. */
mem4d_status m4d_megatron_parse_int(mem4d_import *imp, const char *flag, const char *text, uint64_t *out);
/* A finite decimal number (Megatron's type=float). */
mem4d_status m4d_megatron_parse_number(mem4d_import *imp, const char *flag, const char *text, double *out);

/* --- import_megatron.c ----------------------------------------------------- */

/* Set a layout key from flag slot o, naming the flag when out of bounds. */
mem4d_status m4d_megatron_set_layout(mem4d_import *imp, mem4d_layout *l, mem4d_layout_param key, int o,
                                     uint64_t value);

/* --- megatron_hybrid.c ----------------------------------------------------- */

/* The hybrid layer pattern and the Mamba-2 / Gated DeltaNet flags into the
 * model ('|' segments into the layout's layer table); refusals of layer
 * descriptions the flags do not carry. */
mem4d_status m4d_megatron_apply_hybrid(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_model *m,
                                       mem4d_layout *l);
/* Its '|' pipeline segments as the layout's layer table (after the pipeline flags). */
mem4d_status m4d_megatron_apply_hybrid_segments(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_layout *l);
/* --use-dynamic-batch-size with --max-tokens-per-gpu: the longest packed
 * micro-batch as the layout's sequence. */
mem4d_status m4d_megatron_apply_dynamic_batch(mem4d_import *imp, const struct m4d_opt_val *vals, mem4d_layout *l);

/* --- megatron_pipeline.c --------------------------------------------------- */

/* The pipeline split's flags into the layout: virtual stages, the embedding
 * and loss counted as layers, --pipeline-model-parallel-layout. */
mem4d_status m4d_megatron_read_pipeline(mem4d_import *imp, const struct m4d_opt_val *vals, const mem4d_model *m,
                                        mem4d_layout *l);

/* The layout's split as Megatron-LM flags (uneven ends, virtual stages, a
 * layout string). */
void m4d_megatron_put_pipeline(struct m4d_out *o, const mem4d_model *m, const mem4d_layout *l);

#endif
