/*
 * Import: torchtitan job TOML files (train_configs/NAME.toml) into a layout,
 * through the strict TOML reader of toml.c (no dependency). The keys, their
 * types and defaults are torchtitan's JobConfig (pytorch/torchtitan
 * torchtitan/config/job_config.py at 238fa99, 2026-02-23, the last before
 * #2386 replaced TOML with Python configs; 2025's torchtitan/config_manager.py
 * at e7c0cae; 2024's at 9dec370, whose parallel degrees sit in [training]
 * and [experimental]). Keys absent keep torchtitan's defaults; a value of the
 * wrong type is refused, as torchtitan's dataclasses and tyro refuse it.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "toml.h"

#define DOC "torchtitan TOML"
#define SET_T(key, val, what) m4d_imp_set(c->imp, m4d_layout_params, M4D_LAYOUT_NPARAM, l->v, (key), (val), (what))
#define TT_MAX_BYTES (1u << 20) /* a job file is a few kilobytes */

/* The tables a key may sit in: [parallelism] (2025), then where 2024 kept it. */
struct tt {
    mem4d_import *imp;
    const struct m4d_toml *root, *par, *training, *experimental, *ac, *compile, *float8_old, *float8_new, *model;
};

/* --- typed reads ------------------------------------------------------------- */

static mem4d_status type_error(struct tt *c, const char *section, const struct m4d_toml *v, const char *want)
{
    return m4d_imp_fail(c->imp, MEM4D_E_PARSE, DOC ": %s%s%s is %s, not %s", section, *section ? "." : "", v->key,
                        m4d_toml_type_name(v->type), want);
}

/* A section: absent is NULL; anything but a table is refused. */
static mem4d_status tt_table(struct tt *c, const struct m4d_toml *parent, const char *path, const char *key,
                             const struct m4d_toml **out)
{
    *out = m4d_toml_get(parent, key);
    if (*out && (*out)->type != M4D_TOML_TABLE)
        return type_error(c, path, *out, "a table");
    return MEM4D_OK;
}

/* The first of the tables that has key (2025's place, then 2024's). */
static const struct m4d_toml *find(const struct m4d_toml *const *tables, size_t n, const char *key,
                                   const char **section)
{
    static const char *const names[] = {"parallelism", "training", "experimental"};
    for (size_t k = 0; k < n; k++) {
        const struct m4d_toml *v = m4d_toml_get(tables[k], key);
        if (v) {
            *section = names[k];
            return v;
        }
    }
    return NULL;
}

static mem4d_status tt_int(struct tt *c, const char *section, const struct m4d_toml *v, int64_t *out)
{
    if (!v)
        return MEM4D_OK;
    if (v->type != M4D_TOML_INT)
        return type_error(c, section, v, "an integer");
    *out = v->i;
    return MEM4D_OK;
}

static mem4d_status tt_bool(struct tt *c, const char *section, const struct m4d_toml *v, bool *out)
{
    if (!v)
        return MEM4D_OK;
    if (v->type != M4D_TOML_BOOL)
        return type_error(c, section, v, "true or false");
    *out = v->b;
    return MEM4D_OK;
}

static mem4d_status tt_str(struct tt *c, const char *section, const struct m4d_toml *v, const char **out)
{
    if (!v)
        return MEM4D_OK;
    if (v->type != M4D_TOML_STRING)
        return type_error(c, section, v, "a string");
    *out = v->s;
    return MEM4D_OK;
}

/* A parallel key of [parallelism] / [training] / [experimental]. */
static mem4d_status par_int(struct tt *c, const char *key, int64_t *out)
{
    const struct m4d_toml *const tables[] = {c->par, c->training, c->experimental};
    const char *section = "";
    const struct m4d_toml *v = find(tables, 3, key, &section);
    return tt_int(c, section, v, out);
}

static mem4d_status par_bool(struct tt *c, const char *key, bool *out)
{
    const struct m4d_toml *const tables[] = {c->par, c->training, c->experimental};
    const char *section = "";
    const struct m4d_toml *v = find(tables, 3, key, &section);
    return tt_bool(c, section, v, out);
}

static mem4d_status par_str(struct tt *c, const char *key, const char **out)
{
    const struct m4d_toml *const tables[] = {c->par, c->training, c->experimental};
    const char *section = "";
    const struct m4d_toml *v = find(tables, 3, key, &section);
    return tt_str(c, section, v, out);
}

static mem4d_status choice(struct tt *c, const char *what, const char *value, const char *const *names,
                           size_t *index)
{
    for (size_t k = 0; names[k]; k++)
        if (strcmp(value, names[k]) == 0) {
            *index = k;
            return MEM4D_OK;
        }
    char list[160] = "";
    size_t used = 0;
    for (size_t k = 0; names[k] && used < sizeof list; k++) {
        int w = snprintf(list + used, sizeof list - used, "%s%s", k ? ", " : "", names[k]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return m4d_imp_fail(c->imp, MEM4D_E_PARSE, DOC ": %s = \"%.40s\" is not one of %s", what, value, list);
}

/* --- keys this reader knows (the others are warned about) ------------------- */

static const char *const par_keys[] = {
    "context_parallel_degree", "context_parallel_load_balancer", "context_parallel_rotate_method",
    "data_parallel_replicate_degree", "data_parallel_shard_degree", "disable_loss_parallel",
    "enable_async_tensor_parallel", "enable_compiled_autograd", "expert_parallel_comm_backend",
    "expert_parallel_degree", "expert_tensor_parallel_degree", "fsdp_reshard_after_forward",
    "module_fqns_per_model_part", "pipeline_parallel_degree", "pipeline_parallel_expert_parallel_overlap",
    "pipeline_parallel_first_stage_less_layers", "pipeline_parallel_last_stage_less_layers",
    "pipeline_parallel_layers_per_stage", "pipeline_parallel_microbatch_size", "pipeline_parallel_schedule",
    "pipeline_parallel_schedule_csv", "pipeline_parallel_split_points", "tensor_parallel_degree", NULL};
static const char *const training_keys[] = {
    "batch_size", "compile", "data_parallel_replicate_degree", "data_parallel_shard_degree", "dataloader",
    "dataset", "dataset_path", "deterministic", "disable_loss_parallel", "dtype", "enable_cpu_offload",
    "gc_debug", "gc_freq", "global_batch_size", "local_batch_size", "max_norm", "mixed_precision_param",
    "mixed_precision_reduce", "seed", "seq_len", "steps", "tensor_parallel_degree", "warmup_steps", NULL};
static const char *const experimental_keys[] = {
    "context_parallel_degree", "context_parallel_rotate_method", "custom_args_module", "custom_import",
    "enable_async_tensor_parallel", "enable_compiled_autograd", "pipeline_parallel_degree",
    "pipeline_parallel_microbatches", "pipeline_parallel_schedule", "pipeline_parallel_schedule_csv",
    "pipeline_parallel_split_points", NULL};
static const char *const ac_keys[] = {
    "debug", "determinism_check", "early_stop", "memory_budget", "mode", "per_op_sac_force_recompute_mm_shapes_by_fqns",
    "preserve_rng_state", "selective_ac_option", "visualize_memory_budget_pareto", NULL};
static const char *const compile_keys[] = {"backend", "components", "enable", NULL};
static const char *const float8_keys[] = {
    "emulate", "enable_float8_linear", "enable_fsdp_float8_all_gather", "filter_fqns",
    "force_recompute_fp8_weight_in_bwd", "precompute_float8_dynamic_scale_for_fsdp", "recipe_name",
    "scaling_type_grad_output", "scaling_type_input", "scaling_type_weight", NULL};

static void warn_unknown(struct tt *c, const struct m4d_toml *table, const char *section, const char *const *known)
{
    for (const struct m4d_toml *m = table ? table->first : NULL; m; m = m->next) {
        size_t k = 0;
        while (known[k] && strcmp(known[k], m->key) != 0)
            k++;
        if (!known[k])
            m4d_imp_warn(c->imp, DOC ": %s.%.60s is not a key this reader knows (torchtitan refuses keys its "
                                 "JobConfig lacks); not read", section, m->key);
    }
}

/* --- the parallel degrees ------------------------------------------------------ */

struct degrees {
    int64_t tp, cp, pp, rep, shard, ep, etp;
};

/* torchtitan's ParallelDims: dp_shard -1 takes the GPUs the others leave,
 * and every degree times the others must be the world size. */
static mem4d_status read_degrees(struct tt *c, uint64_t world, struct degrees *d)
{
    *d = (struct degrees){1, 1, 1, 1, -1, 1, 1};
    TRY(par_int(c, "tensor_parallel_degree", &d->tp));
    TRY(par_int(c, "context_parallel_degree", &d->cp));
    TRY(par_int(c, "pipeline_parallel_degree", &d->pp));
    TRY(par_int(c, "data_parallel_replicate_degree", &d->rep));
    TRY(par_int(c, "data_parallel_shard_degree", &d->shard));
    TRY(par_int(c, "expert_parallel_degree", &d->ep));
    TRY(par_int(c, "expert_tensor_parallel_degree", &d->etp));
    static const char *const names[] = {"tensor_parallel_degree", "context_parallel_degree",
                                        "pipeline_parallel_degree", "data_parallel_replicate_degree",
                                        "expert_parallel_degree", "expert_tensor_parallel_degree"};
    const int64_t vals[] = {d->tp, d->cp, d->pp, d->rep, d->ep, d->etp};
    for (size_t k = 0; k < 6; k++)
        if (vals[k] < 1 || vals[k] > (1 << 24))
            return m4d_imp_fail(c->imp, MEM4D_E_RANGE, DOC ": %s = %lld is not a degree from 1 to 2^24", names[k],
                                (long long)vals[k]);
    if (d->shard == 0 || d->shard < -1 || d->shard > (1 << 24))
        return m4d_imp_fail(c->imp, MEM4D_E_RANGE, DOC ": data_parallel_shard_degree = %lld is not -1 (the rest) "
                            "or a degree from 1 to 2^24", (long long)d->shard);
    uint64_t rest = (uint64_t)(d->tp * d->cp) * (uint64_t)(d->pp * d->rep); /* each below 2^24 */
    if (d->shard == -1) {
        if (world == 0)
            return m4d_imp_fail(c->imp, MEM4D_E_MISSING, DOC ": data_parallel_shard_degree is -1 (the GPUs the other "
                                "degrees leave); give the world size (the number of GPUs)");
        if (world % rest != 0)
            return m4d_imp_fail(c->imp, MEM4D_E_WORLD, DOC ": world size %llu is not divisible by tp %lld x cp %lld "
                                "x pp %lld x dp_replicate %lld = %llu", (unsigned long long)world, (long long)d->tp,
                                (long long)d->cp, (long long)d->pp, (long long)d->rep, (unsigned long long)rest);
        d->shard = (int64_t)(world / rest);
    } else if (world && rest * (uint64_t)d->shard != world) {
        return m4d_imp_fail(c->imp, MEM4D_E_WORLD, DOC ": tp %lld x cp %lld x pp %lld x dp_replicate %lld x "
                            "dp_shard %lld = %llu GPUs, not the world size %llu (torchtitan's ParallelDims "
                            "refuses it)", (long long)d->tp, (long long)d->cp, (long long)d->pp, (long long)d->rep,
                            (long long)d->shard, (unsigned long long)(rest * (uint64_t)d->shard),
                            (unsigned long long)world);
    }
    if (d->etp != 1 && d->etp != d->tp)
        return m4d_imp_fail(c->imp, MEM4D_E_CONFLICT, DOC ": expert_tensor_parallel_degree = %lld must be 1 or "
                            "tensor_parallel_degree %lld", (long long)d->etp, (long long)d->tp);
    return MEM4D_OK;
}

/* --- the pipeline: stages per rank and torchtitan's split --------------------- */

/* torch.distributed.pipelining's get_schedule_class (case-insensitive):
 * single-stage schedules hold one stage per rank, the others two by
 * default (torchtitan's pipeline_llm). */
enum sched_kind { S_1F1B, S_GPIPE, S_LOOP, S_BFS, S_V };
static const char *const sched_names[] = {"1F1B", "PipelineScheduleSingle", "GPipe", "Interleaved1F1B",
                                          "InterleavedZeroBubble", "PipelineScheduleMulti", "LoopedBFS",
                                          "ZBVZeroBubble", "DualPipeV", NULL};
static const enum sched_kind sched_kinds[] = {S_1F1B, S_1F1B, S_GPIPE, S_LOOP, S_LOOP, S_LOOP, S_BFS, S_V, S_V};

/* Layers of a "layers.N" module name; -1 for any other module. */
static long layer_index(const char *fqn)
{
    if (strncmp(fqn, "layers.", 7) != 0 || fqn[7] < '0' || fqn[7] > '9')
        return -1;
    char *end;
    long n = strtol(fqn + 7, &end, 10);
    return *end == '\0' ? n : -1;
}

/* module_fqns_per_model_part (a list of lists of module names) or 2024's
 * pipeline_parallel_split_points (the first module of every stage but the
 * first): the transformer layers of each stage. */
static mem4d_status explicit_split(struct tt *c, const struct m4d_toml *fqns, const struct m4d_toml *splits,
                                   uint64_t L, uint32_t *table, size_t cap, size_t *n)
{
    uint64_t named = 0;
    *n = 0;
    if (fqns) {
        if (fqns->type != M4D_TOML_ARRAY)
            return type_error(c, "parallelism", fqns, "a list of lists of module names");
        for (const struct m4d_toml *part = fqns->first; part; part = part->next) {
            if (part->type != M4D_TOML_ARRAY || *n == cap)
                return m4d_imp_fail(c->imp, MEM4D_E_PARSE, DOC ": parallelism.module_fqns_per_model_part must be "
                                    "a list of at most %zu lists of module names", cap);
            uint32_t layers = 0;
            for (const struct m4d_toml *m = part->first; m; m = m->next) {
                if (m->type != M4D_TOML_STRING)
                    return m4d_imp_fail(c->imp, MEM4D_E_PARSE, DOC ": parallelism.module_fqns_per_model_part "
                                        "holds %s, not a module name", m4d_toml_type_name(m->type));
                layers += layer_index(m->s) >= 0;
            }
            table[(*n)++] = layers;
            named += layers;
        }
        if (named != L)
            return m4d_imp_fail(c->imp, MEM4D_E_LAYERS_PP, DOC ": module_fqns_per_model_part names %llu of the %llu "
                                "layers", (unsigned long long)named, (unsigned long long)L);
        return MEM4D_OK;
    }
    if (splits->type != M4D_TOML_ARRAY)
        return type_error(c, "", splits, "a list of module names");
    long prev = 0;
    for (const struct m4d_toml *m = splits->first;; m = m->next) {
        long at = (long)L;
        if (m) {
            at = m->type == M4D_TOML_STRING ? layer_index(m->s) : -1;
            if (at <= prev || (uint64_t)at >= L)
                return m4d_imp_fail(c->imp, MEM4D_E_PARSE, DOC ": pipeline_parallel_split_points must name "
                                    "layers.N in increasing order below the %llu layers", (unsigned long long)L);
        }
        if (*n == cap)
            return m4d_imp_fail(c->imp, MEM4D_E_RANGE, DOC ": more than %zu pipeline stages", cap);
        table[(*n)++] = (uint32_t)(at - prev);
        prev = at;
        if (!m)
            return MEM4D_OK;
    }
}

/* torchtitan's generate_llm_fqn_per_model_part: the embedding and the output
 * count as in and out layers, the effective layers are split evenly and the
 * first stages take the remainder. */
static mem4d_status generated_split(struct tt *c, uint64_t stages, uint64_t L, int64_t in, int64_t out,
                                    uint32_t *table)
{
    uint64_t eff = L + (uint64_t)in + (uint64_t)out;
    if (stages > eff)
        return m4d_imp_fail(c->imp, MEM4D_E_LAYERS_PP, DOC ": %llu pipeline stages exceed the %llu effective layers "
                            "(%llu layers + first/last stage less layers); torchtitan refuses it",
                            (unsigned long long)stages, (unsigned long long)eff, (unsigned long long)L);
    uint64_t per = eff / stages, extra = eff % stages, next = 0;
    if ((uint64_t)in > per || (uint64_t)out > per)
        return m4d_imp_fail(c->imp, MEM4D_E_LAYERS_PP, DOC ": pipeline_parallel_%s_stage_less_layers %lld exceeds "
                            "the %llu layers of a stage; torchtitan refuses it", (uint64_t)in > per ? "first" : "last",
                            (long long)((uint64_t)in > per ? in : out), (unsigned long long)per);
    for (uint64_t k = 0; k < stages; k++) {
        uint64_t want = per + (k < extra) - (k == 0 ? (uint64_t)in : 0) - (k == stages - 1 ? (uint64_t)out : 0);
        uint64_t got = want < L - next ? want : L - next;
        table[k] = (uint32_t)got;
        next += got;
    }
    if (next != L)
        return m4d_imp_fail(c->imp, MEM4D_E_LAYERS_PP, DOC ": the split leaves %llu of the %llu layers without a "
                            "stage", (unsigned long long)(L - next), (unsigned long long)L);
    return MEM4D_OK;
}

static mem4d_status read_pipeline(struct tt *c, const mem4d_model *model, int64_t pp, mem4d_layout *l)
{
    const char *name = "1F1B", *csv = "";
    int64_t lps = 0, in = 1, out = 1;
    TRY(par_str(c, "pipeline_parallel_schedule", &name));
    TRY(par_str(c, "pipeline_parallel_schedule_csv", &csv));
    TRY(par_int(c, "pipeline_parallel_layers_per_stage", &lps));
    TRY(par_int(c, "pipeline_parallel_first_stage_less_layers", &in));
    TRY(par_int(c, "pipeline_parallel_last_stage_less_layers", &out));
    size_t s = 0;
    while (sched_names[s] && !m4d_streq_ci(sched_names[s], name))
        s++;
    if (!sched_names[s]) {
        size_t k;
        return choice(c, "pipeline_parallel_schedule", name, sched_names, &k);
    }
    if (mem4d_layout_set_stage_layers(l, NULL, 0) != MEM4D_OK) /* the even split, unless torchtitan's below */
        return MEM4D_E_INVALID_ARG;
    if (pp == 1)
        return MEM4D_OK; /* no pipeline: torchtitan builds none */
    enum sched_kind kind = sched_kinds[s];
    bool single = kind == S_1F1B || kind == S_GPIPE;
    if (csv && *csv)
        m4d_imp_warn(c->imp, DOC ": pipeline_parallel_schedule_csv runs the schedule of a CSV file; its memory is "
                             "estimated as %s's", sched_names[s]);
    if (in < 0 || out < 0 || (lps != 0 && lps < 1))
        return m4d_imp_fail(c->imp, MEM4D_E_RANGE, DOC ": pipeline_parallel_*_stage_less_layers and "
                            "pipeline_parallel_layers_per_stage cannot be negative");
    const struct m4d_toml *fqns = m4d_toml_get(c->par, "module_fqns_per_model_part");
    const struct m4d_toml *const tables[] = {c->par, c->experimental};
    const char *section = "";
    const struct m4d_toml *splits = find(tables, 2, "pipeline_parallel_split_points", &section);
    uint64_t L = 0;
    if (model)
        mem4d_model_get(model, MEM4D_MODEL_NUM_LAYERS, &L);
    uint32_t table[4096];
    size_t n = 0;
    uint64_t per_rank;
    if ((fqns || lps || splits) && L == 0)
        return m4d_imp_fail(c->imp, MEM4D_E_MISSING, DOC ": %s needs the model's layer count; give the model",
                            fqns ? "module_fqns_per_model_part" : lps ? "pipeline_parallel_layers_per_stage"
                                                                      : "pipeline_parallel_split_points");
    if (fqns || splits) {
        TRY(explicit_split(c, fqns, splits, L, table, sizeof table / sizeof table[0], &n));
        if (n % (uint64_t)pp != 0)
            return m4d_imp_fail(c->imp, MEM4D_E_LAYERS_PP, DOC ": %zu pipeline stages over pp %lld ranks; torchtitan "
                                "needs a whole number of stages per rank", n, (long long)pp);
        per_rank = n / (uint64_t)pp;
    } else {
        uint64_t stages = (uint64_t)pp * (single ? 1 : 2);
        if (lps) { /* ceil((L + in + out) / layers per stage) stages, a multiple of pp */
            stages = (L + (uint64_t)in + (uint64_t)out + (uint64_t)lps - 1) / (uint64_t)lps;
            if (stages % (uint64_t)pp != 0)
                return m4d_imp_fail(c->imp, MEM4D_E_LAYERS_PP, DOC ": %llu virtual stages (layers_per_stage %lld) "
                                    "are not divisible by pp %lld; torchtitan refuses it",
                                    (unsigned long long)stages, (long long)lps, (long long)pp);
        }
        per_rank = stages / (uint64_t)pp;
        if (L && stages <= sizeof table / sizeof table[0]) {
            TRY(generated_split(c, stages, L, in, out, table));
            n = stages;
        }
    }
    if (single && per_rank != 1)
        return m4d_imp_fail(c->imp, MEM4D_E_CONFLICT, DOC ": the single-stage schedule %s needs one stage per rank, "
                            "not %llu; torchtitan refuses it", sched_names[s], (unsigned long long)per_rank);
    if (!single && per_rank < 2)
        return m4d_imp_fail(c->imp, MEM4D_E_CONFLICT, DOC ": the multi-stage schedule %s needs at least two stages "
                            "per rank, not %llu; torchtitan refuses it", sched_names[s], (unsigned long long)per_rank);
    TRY(SET_T(MEM4D_LAYOUT_VPP, per_rank, "pipeline_parallel_schedule"));
    TRY(SET_T(MEM4D_LAYOUT_PIPELINE_SCHEDULE, kind == S_GPIPE, "pipeline_parallel_schedule"));
    if (kind == S_BFS)
        m4d_imp_warn(c->imp, DOC ": LoopedBFS runs every micro-batch through a stage before the next; its "
                             "activations in flight are estimated as Interleaved1F1B's (fewer)");
    else if (kind == S_V)
        m4d_imp_warn(c->imp, DOC ": %s places stages in a V (rank r holds stages r and 2pp-1-r, the first and last "
                             "on rank 0) with its own order; estimated with Interleaved1F1B's placement and in-flight "
                             "micro-batches", sched_names[s]);
    else if (kind == S_LOOP && s == 4)
        m4d_imp_warn(c->imp, DOC ": InterleavedZeroBubble splits the backward (input and weight gradients); its "
                             "in-flight activations are estimated as Interleaved1F1B's");
    if (n == 0) {
        m4d_imp_warn(c->imp, DOC ": without the model's layer count the layers are split evenly, not as torchtitan "
                             "splits them (the embedding and output counted as layers)");
        return MEM4D_OK;
    }
    if (mem4d_layout_set_stage_layers(l, table, n) != MEM4D_OK)
        return m4d_imp_fail(c->imp, MEM4D_E_RANGE, DOC ": the pipeline split of %zu stages does not fit the layout's "
                            "layer table", n);
    return MEM4D_OK;
}

/* --- batch, recomputation, precision, float8, compile -------------------------- */

static mem4d_status read_batch(struct tt *c, int64_t pp, uint64_t dp, mem4d_layout *l)
{
    const struct m4d_toml *t = c->training;
    int64_t local = 8, global = -1, seq = 2048, mbs = 1, nmb = 0;
    const struct m4d_toml *lb = m4d_toml_get(t, "local_batch_size");
    TRY(tt_int(c, "training", lb ? lb : m4d_toml_get(t, "batch_size"), &local));
    TRY(tt_int(c, "training", m4d_toml_get(t, "global_batch_size"), &global));
    TRY(tt_int(c, "training", m4d_toml_get(t, "seq_len"), &seq));
    if (local < 1 || seq < 1 || (global < 1 && global != -1))
        return m4d_imp_fail(c->imp, MEM4D_E_RANGE, DOC ": %s must be at least 1",
                            local < 1 ? "training.local_batch_size" : seq < 1 ? "training.seq_len"
                                                                             : "training.global_batch_size (or -1)");
    uint64_t per_step = (uint64_t)local * dp;
    if (global == -1)
        global = (int64_t)per_step;
    else if ((uint64_t)global % per_step != 0)
        return m4d_imp_fail(c->imp, MEM4D_E_BATCH, DOC ": global_batch_size %lld is not a multiple of "
                            "local_batch_size %lld x dp %llu; torchtitan refuses it", (long long)global,
                            (long long)local, (unsigned long long)dp);
    int64_t micro = local;
    if (pp > 1) {
        if (m4d_toml_get(c->experimental, "pipeline_parallel_microbatches")) { /* 2024 */
            TRY(tt_int(c, "experimental", m4d_toml_get(c->experimental, "pipeline_parallel_microbatches"), &nmb));
            if (nmb < 0)
                return m4d_imp_fail(c->imp, MEM4D_E_RANGE, DOC ": pipeline_parallel_microbatches is negative");
            if (nmb == 0)
                nmb = pp;
            if (local % nmb != 0)
                return m4d_imp_fail(c->imp, MEM4D_E_BATCH, DOC ": batch_size %lld is not divisible by %lld "
                                    "micro-batches", (long long)local, (long long)nmb);
            micro = local / nmb;
        } else {
            TRY(par_int(c, "pipeline_parallel_microbatch_size", &mbs));
            if (mbs < 1 || local % mbs != 0)
                return m4d_imp_fail(c->imp, MEM4D_E_BATCH, DOC ": local_batch_size %lld is not divisible by "
                                    "pipeline_parallel_microbatch_size %lld", (long long)local, (long long)mbs);
            micro = mbs;
        }
    }
    TRY(SET_T(MEM4D_LAYOUT_SEQ_LENGTH, (uint64_t)seq, "training.seq_len"));
    TRY(SET_T(MEM4D_LAYOUT_MICRO_BATCH, (uint64_t)micro, "training.local_batch_size"));
    return SET_T(MEM4D_LAYOUT_GLOBAL_BATCH, (uint64_t)global, "training.global_batch_size");
}

static mem4d_status read_recompute(struct tt *c, mem4d_layout *l)
{
    static const char *const modes[] = {"selective", "full", "memory_budget", "none", NULL};
    const char *mode = "selective", *option = "2";
    size_t m = 0;
    TRY(tt_str(c, "activation_checkpoint", m4d_toml_get(c->ac, "mode"), &mode));
    TRY(choice(c, "activation_checkpoint.mode", mode, modes, &m));
    /* a string in torchtitan ("2" or "op"): its code calls .isdigit() on it */
    TRY(tt_str(c, "activation_checkpoint", m4d_toml_get(c->ac, "selective_ac_option"), &option));
    if (m == 3)
        return SET_T(MEM4D_LAYOUT_RECOMPUTE, 0, "activation_checkpoint.mode");
    if (m == 1)
        return SET_T(MEM4D_LAYOUT_RECOMPUTE, 2, "activation_checkpoint.mode");
    if (m == 2) {
        m4d_imp_warn(c->imp, DOC ": activation_checkpoint.mode memory_budget lets the compiler choose what to "
                             "recompute; estimated without recomputation (an upper bound)");
        return SET_T(MEM4D_LAYOUT_RECOMPUTE, 0, "activation_checkpoint.mode");
    }
    if (strcmp(option, "op") == 0)
        return SET_T(MEM4D_LAYOUT_RECOMPUTE, 3, "activation_checkpoint.selective_ac_option");
    char *end;
    long every = option[0] >= '0' && option[0] <= '9' ? strtol(option, &end, 10) : 0;
    if (every < 1 || *end != '\0' || every > 4096)
        return m4d_imp_fail(c->imp, MEM4D_E_PARSE, DOC ": activation_checkpoint.selective_ac_option = \"%.40s\" is "
                            "not \"op\" or a positive whole number (every n-th layer)", option);
    TRY(SET_T(MEM4D_LAYOUT_RECOMPUTE, 2, "activation_checkpoint.selective_ac_option"));
    return SET_T(MEM4D_LAYOUT_RECOMPUTE_EVERY, (uint64_t)every, "activation_checkpoint.selective_ac_option");
}

static mem4d_status read_precision(struct tt *c, mem4d_layout *l)
{
    static const char *const param[] = {"bfloat16", "float32", NULL};
    static const char *const reduce[] = {"float32", "bfloat16", NULL}; /* bfloat16: torchtitan 2024-2025 */
    const char *p = "bfloat16", *r = "float32";
    size_t pi = 0, ri = 0;
    bool offload = false;
    TRY(tt_str(c, "training", m4d_toml_get(c->training, "mixed_precision_param"), &p));
    TRY(choice(c, "training.mixed_precision_param", p, param, &pi));
    TRY(tt_str(c, "training", m4d_toml_get(c->training, "mixed_precision_reduce"), &r));
    TRY(choice(c, "training.mixed_precision_reduce", r, reduce, &ri));
    TRY(tt_bool(c, "training", m4d_toml_get(c->training, "enable_cpu_offload"), &offload));
    if (offload)
        m4d_imp_warn(c->imp, DOC ": training.enable_cpu_offload moves FSDP's parameters, gradients and optimizer "
                             "state to the CPU; not modelled (estimated on the GPU)");
    if (pi == 1)
        TRY(SET_T(MEM4D_LAYOUT_PARAM_BYTES, 4, "training.mixed_precision_param"));
    return ri == 1 ? SET_T(MEM4D_LAYOUT_MAIN_GRAD_BYTES, 2, "training.mixed_precision_reduce") : MEM4D_OK;
}

/* model.converters names "float8" ([quantize.linear.float8] since 2025,
 * [float8] before); 2024's [float8] enable_float8_linear. */
static mem4d_status read_float8(struct tt *c, mem4d_layout *l)
{
    bool on = false, ag = false;
    const struct m4d_toml *conv = m4d_toml_get(c->model, "converters");
    if (conv && conv->type == M4D_TOML_STRING) { /* "float8" or "float8,other" (tyro's list from text) */
        on = strstr(conv->s, "float8") != NULL;
    } else if (conv && conv->type == M4D_TOML_ARRAY) {
        for (const struct m4d_toml *m = conv->first; m; m = m->next) {
            if (m->type != M4D_TOML_STRING)
                return m4d_imp_fail(c->imp, MEM4D_E_PARSE, DOC ": model.converters holds %s, not a name",
                                    m4d_toml_type_name(m->type));
            on |= strcmp(m->s, "float8") == 0 || strcmp(m->s, "quantize.linear.float8") == 0;
        }
    } else if (conv) {
        return type_error(c, "model", conv, "a list of names");
    }
    TRY(tt_bool(c, "float8", m4d_toml_get(c->float8_old, "enable_float8_linear"), &on));
    const struct m4d_toml *sec = c->float8_new ? c->float8_new : c->float8_old;
    const char *recipe = "tensorwise";
    TRY(tt_bool(c, "float8", m4d_toml_get(sec, "enable_fsdp_float8_all_gather"), &ag));
    TRY(tt_str(c, "float8", m4d_toml_get(sec, "recipe_name"), &recipe));
    if (!on)
        return MEM4D_OK;
    static const char *const recipes[] = {"tensorwise", "rowwise", "rowwise_with_gw_hp", NULL};
    size_t r = 0;
    TRY(choice(c, "float8 recipe_name", recipe, recipes, &r));
    TRY(SET_T(MEM4D_LAYOUT_FLOAT8, r == 0 ? 1 : 2, "float8.recipe_name"));
    return ag ? SET_T(MEM4D_LAYOUT_FP8_ALL_GATHER, 1, "enable_fsdp_float8_all_gather") : MEM4D_OK;
}

static mem4d_status read_compile(struct tt *c, mem4d_layout *l)
{
    bool on = false, loss = true;
    if (c->compile) { /* 2025: [compile] enable, components */
        TRY(tt_bool(c, "compile", m4d_toml_get(c->compile, "enable"), &on));
        const struct m4d_toml *parts = m4d_toml_get(c->compile, "components");
        if (parts && parts->type != M4D_TOML_ARRAY)
            return type_error(c, "compile", parts, "a list of names");
        bool blocks = true;
        if (parts) {
            loss = blocks = false;
            for (const struct m4d_toml *m = parts->first; m; m = m->next) {
                if (m->type != M4D_TOML_STRING || (strcmp(m->s, "model") != 0 && strcmp(m->s, "loss") != 0))
                    return m4d_imp_fail(c->imp, MEM4D_E_PARSE, DOC ": compile.components holds something other "
                                        "than \"model\" and \"loss\"");
                loss |= strcmp(m->s, "loss") == 0;
                blocks |= strcmp(m->s, "model") == 0;
            }
        }
        if (on && loss && !blocks) /* the layout has no "loss only": the blocks' part is not modelled anyway */
            m4d_imp_warn(c->imp, DOC ": compile.components = [\"loss\"] compiles the loss alone; estimated as "
                                 "blocks_and_loss (what compiling the blocks changes is not modelled)");
        on &= loss || blocks;
    } else {
        TRY(tt_bool(c, "training", m4d_toml_get(c->training, "compile"), &on));
        loss = c->par != NULL; /* training.compile: the loss too since [parallelism] (2025) */
    }
    return SET_T(MEM4D_LAYOUT_COMPILE, on ? (loss ? 2 : 1) : 0, "compile.enable");
}

/* context_parallel_rotate_method: how PyTorch's context-parallel SDPA
 * moves K and V (torch/distributed/tensor/experimental/_attention.py,
 * _templated_ring_attention and its backward). "alltoall" passes them round
 * the ring, each step under the attention of a chunk (permute_tensor): the
 * ring, cp_comm_type p2p. "allgather", torchtitan's default, all-gathers
 * them once, issued before the local chunk's attention and awaited after
 * it, and passes dK and dV round the ring: neither the ring nor the exposed
 * all_gather; the ring's cost stands in, and a warning says so. */
static mem4d_status read_context_parallel(struct tt *c, int64_t cp, mem4d_layout *l)
{
    static const char *const methods[] = {"allgather", "alltoall", NULL};
    const char *method = "allgather";
    size_t k = 0;
    TRY(par_str(c, "context_parallel_rotate_method", &method));
    TRY(choice(c, "context_parallel_rotate_method", method, methods, &k));
    if (cp > 1 && k == 0)
        m4d_imp_warn(c->imp, DOC ": context_parallel_rotate_method allgather (torchtitan's default: K and V "
                             "all-gathered once, under the local chunk's attention only) is not modelled; the step "
                             "time charges context parallelism the ring's transfers (alltoall) instead");
    return SET_T(MEM4D_LAYOUT_CP_COMM_TYPE, 0, "context_parallel_rotate_method");
}

static mem4d_status tt_apply(struct tt *c, uint64_t world, const mem4d_model *model, mem4d_layout *l)
{
    const struct m4d_toml *quantize = NULL, *linear = NULL;
    TRY(tt_table(c, c->root, "", "parallelism", &c->par));
    TRY(tt_table(c, c->root, "", "training", &c->training));
    TRY(tt_table(c, c->root, "", "experimental", &c->experimental));
    TRY(tt_table(c, c->root, "", "activation_checkpoint", &c->ac));
    TRY(tt_table(c, c->root, "", "float8", &c->float8_old));
    TRY(tt_table(c, c->root, "", "model", &c->model));
    TRY(tt_table(c, c->root, "", "quantize", &quantize));
    TRY(tt_table(c, quantize, "quantize", "linear", &linear));
    TRY(tt_table(c, linear, "quantize.linear", "float8", &c->float8_new));
    c->compile = m4d_toml_get(c->root, "compile");
    if (c->compile && c->compile->type != M4D_TOML_TABLE)
        c->compile = NULL; /* 2024 had no [compile]; training.compile is read instead */
    warn_unknown(c, c->par, "parallelism", par_keys);
    warn_unknown(c, c->training, "training", training_keys);
    warn_unknown(c, c->experimental, "experimental", experimental_keys);
    warn_unknown(c, c->ac, "activation_checkpoint", ac_keys);
    warn_unknown(c, c->compile, "compile", compile_keys);
    warn_unknown(c, c->float8_old, "float8", float8_keys);
    warn_unknown(c, c->float8_new, "quantize.linear.float8", float8_keys);
    struct degrees d;
    TRY(read_degrees(c, world, &d));
    uint64_t dp = (uint64_t)(d.shard * d.rep);
    TRY(SET_T(MEM4D_LAYOUT_FRAMEWORK, MEM4D_FRAMEWORK_TORCHTITAN, DOC));
    TRY(SET_T(MEM4D_LAYOUT_TP, (uint64_t)d.tp, "tensor_parallel_degree"));
    TRY(SET_T(MEM4D_LAYOUT_CP, (uint64_t)d.cp, "context_parallel_degree"));
    TRY(SET_T(MEM4D_LAYOUT_PP, (uint64_t)d.pp, "pipeline_parallel_degree"));
    TRY(SET_T(MEM4D_LAYOUT_DP, dp, "data_parallel_shard_degree x data_parallel_replicate_degree"));
    TRY(SET_T(MEM4D_LAYOUT_WORLD, 0, "data_parallel_shard_degree"));
    TRY(SET_T(MEM4D_LAYOUT_DP_REPLICATE, (uint64_t)d.rep, "data_parallel_replicate_degree"));
    TRY(SET_T(MEM4D_LAYOUT_EP, (uint64_t)d.ep, "expert_parallel_degree"));
    if (d.ep > 1)
        TRY(SET_T(MEM4D_LAYOUT_ETP, (uint64_t)d.etp, "expert_tensor_parallel_degree"));
    TRY(read_batch(c, d.pp, dp, l));
    TRY(read_pipeline(c, model, d.pp, l));
    TRY(read_recompute(c, l));
    TRY(read_precision(c, l));
    TRY(read_float8(c, l));
    TRY(read_compile(c, l));
    TRY(read_context_parallel(c, d.cp, l));
    bool async_tp = false;
    const char *reshard = "default";
    size_t r = 0;
    static const char *const reshards[] = {"default", "always", "never", NULL};
    TRY(par_bool(c, "enable_async_tensor_parallel", &async_tp));
    TRY(SET_T(MEM4D_LAYOUT_TP_COMM_OVERLAP, async_tp, "enable_async_tensor_parallel"));
    TRY(par_str(c, "fsdp_reshard_after_forward", &reshard));
    TRY(choice(c, "parallelism.fsdp_reshard_after_forward", reshard, reshards, &r));
    return SET_T(MEM4D_LAYOUT_RESHARD_AFTER_FORWARD, r, "fsdp_reshard_after_forward");
}

mem4d_status mem4d_import_torchtitan_config_buffer(mem4d_import *import, const char *toml, size_t size,
                                                   uint64_t world, const mem4d_model *model, mem4d_layout *layout)
{
    if (!import)
        return MEM4D_E_INVALID_ARG;
    m4d_imp_reset(import);
    if (!toml || !layout)
        return m4d_imp_fail(import, MEM4D_E_INVALID_ARG, "NULL document or layout");
    if (size > TT_MAX_BYTES)
        return m4d_imp_fail(import, MEM4D_E_RANGE, DOC ": %zu bytes, more than %u; not a job file", size,
                            TT_MAX_BYTES);
    struct m4d_toml *root = NULL;
    char why[M4D_MSG_MAX - 32];
    mem4d_status st = m4d_toml_parse(toml, size, &root, why, sizeof why);
    if (st != MEM4D_OK)
        return m4d_imp_fail(import, st, DOC ": %s", why);
    mem4d_layout l = *layout; /* all or nothing */
    struct tt c = {.imp = import, .root = root};
    st = tt_apply(&c, world ? world : layout->v[MEM4D_LAYOUT_WORLD], model, &l);
    if (st == MEM4D_OK)
        *layout = l;
    m4d_toml_free(root);
    m4d_imp_done(import);
    return st;
}

mem4d_status mem4d_import_torchtitan_config(mem4d_import *import, const char *path, uint64_t world,
                                            const mem4d_model *model, mem4d_layout *layout)
{
    if (!import)
        return MEM4D_E_INVALID_ARG;
    m4d_imp_reset(import);
    if (!path || !layout)
        return m4d_imp_fail(import, MEM4D_E_INVALID_ARG, "NULL path or layout");
    char *buf = NULL, why[M4D_MSG_MAX];
    size_t size = 0;
    mem4d_status st = m4d_read_file(path, DOC " job file", TT_MAX_BYTES, &buf, &size, why, sizeof why);
    if (st != MEM4D_OK)
        return m4d_imp_fail(import, st, "%s", why);
    st = mem4d_import_torchtitan_config_buffer(import, buf, size, world, model, layout);
    free(buf);
    return st;
}
