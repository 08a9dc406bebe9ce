/*
 * Import: DeepSpeed ds_config.json files into a layout (built only with
 * json-c; without it import_deepspeed_none.c provides the same entry
 * points). The keys and their defaults are DeepSpeed's
 * (deepspeed/runtime/config.py, deepspeed/runtime/zero/config.py).
 * SPDX-License-Identifier: MIT
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "import.h"

#define DOC "ds_config.json"

/* A member of obj that is present and not null, or NULL. */
static struct json_object *member(struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    if (!obj || !json_object_object_get_ex(obj, key, &v) || json_object_get_type(v) == json_type_null)
        return NULL;
    return v;
}

/* A whole number at obj.key (DeepSpeed writes sizes as 5e8): *given stays
 * false when the key is absent, or "auto" (the Hugging Face integration
 * fills it in; a warning says the default is kept). */
static mem4d_status ds_uint(mem4d_import *imp, struct json_object *obj, const char *path, const char *key,
                            uint64_t *out, bool *given)
{
    struct json_object *v = member(obj, key);
    *given = false;
    if (!v)
        return MEM4D_OK;
    enum json_type type = json_object_get_type(v);
    if (type == json_type_string && strcmp(json_object_get_string(v), "auto") == 0) {
        m4d_imp_warn(imp, "%s%s is \"auto\": libmem4d's default is kept", path, key);
        return MEM4D_OK;
    }
    if (type == json_type_int) {
        int64_t i = json_object_get_int64(v);
        if (i < 0)
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "%s%s is negative (%lld)", path, key, (long long)i);
        *out = json_object_get_uint64(v);
        if (*out == UINT64_MAX)
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "%s%s is too large", path, key);
    } else if (type == json_type_double) {
        double d = json_object_get_double(v);
        if (!(d >= 0.0) || !(d <= 9007199254740992.0) || d != floor(d))
            return m4d_imp_fail(imp, MEM4D_E_JSON, "%s%s is %g, not a whole number of at most 2^53", path, key, d);
        *out = (uint64_t)d;
    } else {
        return m4d_imp_fail(imp, MEM4D_E_JSON, "%s%s is a %s, not a number", path, key, json_type_to_name(type));
    }
    *given = true;
    return MEM4D_OK;
}

static mem4d_status ds_bool(mem4d_import *imp, struct json_object *obj, const char *path, const char *key,
                            bool *out, bool *given)
{
    struct json_object *v = member(obj, key);
    *given = false;
    if (!v)
        return MEM4D_OK;
    if (json_object_get_type(v) == json_type_string && strcmp(json_object_get_string(v), "auto") == 0) {
        m4d_imp_warn(imp, "%s%s is \"auto\": libmem4d's default is kept", path, key);
        return MEM4D_OK;
    }
    if (json_object_get_type(v) != json_type_boolean)
        return m4d_imp_fail(imp, MEM4D_E_JSON, "%s%s is a %s, not true or false", path, key,
                            json_type_to_name(json_object_get_type(v)));
    *out = json_object_get_boolean(v);
    *given = true;
    return MEM4D_OK;
}

/* An object member (absent: NULL, no error). */
static mem4d_status ds_object(mem4d_import *imp, struct json_object *obj, const char *path, const char *key,
                              struct json_object **out)
{
    *out = member(obj, key);
    if (*out && json_object_get_type(*out) != json_type_object)
        return m4d_imp_fail(imp, MEM4D_E_JSON, "%s%s is a %s, not an object", path, key,
                            json_type_to_name(json_object_get_type(*out)));
    return MEM4D_OK;
}

/* offload_optimizer / offload_param: {"device": "cpu" | "nvme" | "none"}. */
static mem4d_status ds_offload(mem4d_import *imp, struct json_object *zero, const char *key, bool *on)
{
    struct json_object *o = NULL, *dev;
    *on = false;
    TRY(ds_object(imp, zero, "zero_optimization.", key, &o));
    if (!o || !(dev = member(o, "device")))
        return MEM4D_OK;
    if (json_object_get_type(dev) != json_type_string)
        return m4d_imp_fail(imp, MEM4D_E_JSON, "zero_optimization.%s.device is a %s, not a string", key,
                            json_type_to_name(json_object_get_type(dev)));
    const char *d = json_object_get_string(dev);
    if (strcmp(d, "cpu") == 0 || strcmp(d, "nvme") == 0)
        *on = true;
    else if (strcmp(d, "none") != 0)
        return m4d_imp_fail(imp, MEM4D_E_JSON, "zero_optimization.%s.device is \"%.40s\", not cpu, nvme or none",
                            key, d);
    return MEM4D_OK;
}

/* A size key of zero_optimization into a layout key. */
static mem4d_status ds_size(mem4d_import *imp, struct json_object *zero, const char *key, mem4d_layout *l,
                            mem4d_layout_param lkey)
{
    uint64_t v = 0;
    bool given;
    TRY(ds_uint(imp, zero, "zero_optimization.", key, &v, &given));
    if (given && v == 0)
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "zero_optimization.%s is 0", key);
    return given ? SET_L(l, lkey, v, key) : MEM4D_OK;
}

static mem4d_status ds_zero(mem4d_import *imp, struct json_object *root, mem4d_layout *l)
{
    struct json_object *zero = NULL;
    uint64_t stage = 0;
    bool given, b, opt, par;
    TRY(ds_object(imp, root, "", "zero_optimization", &zero));
    TRY(ds_uint(imp, zero, "zero_optimization.", "stage", &stage, &given));
    if (stage > 3)
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "zero_optimization.stage is %llu; DeepSpeed has stages 0 to 3",
                            (unsigned long long)stage);
    TRY(SET_L(l, MEM4D_LAYOUT_ZERO_STAGE, stage, "zero_optimization.stage"));
    TRY(SET_L(l, MEM4D_LAYOUT_DIST_OPT, stage >= 1, "zero_optimization.stage"));
    TRY(ds_size(imp, zero, "reduce_bucket_size", l, MEM4D_LAYOUT_BUCKET_SIZE));
    TRY(ds_size(imp, zero, "allgather_bucket_size", l, MEM4D_LAYOUT_ALLGATHER_BUCKET_SIZE));
    TRY(ds_size(imp, zero, "stage3_prefetch_bucket_size", l, MEM4D_LAYOUT_PREFETCH_BUCKET_SIZE));
    TRY(ds_size(imp, zero, "stage3_max_live_parameters", l, MEM4D_LAYOUT_MAX_LIVE_PARAMETERS));
    /* overlap_comm defaults to true for stage 3 only (DeepSpeedZeroConfig). */
    b = stage == 3;
    TRY(ds_bool(imp, zero, "zero_optimization.", "overlap_comm", &b, &given));
    TRY(SET_L(l, MEM4D_LAYOUT_OVERLAP_GRAD_REDUCE, b, "overlap_comm"));
    b = true;
    TRY(ds_bool(imp, zero, "zero_optimization.", "contiguous_gradients", &b, &given));
    TRY(SET_L(l, MEM4D_LAYOUT_CONTIGUOUS_GRADIENTS, b, "contiguous_gradients"));
    TRY(ds_offload(imp, zero, "offload_optimizer", &opt));
    TRY(ds_offload(imp, zero, "offload_param", &par));
    if (par && stage < 3)
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "zero_optimization.offload_param needs stage 3 (it is %llu)",
                            (unsigned long long)stage);
    return SET_L(l, MEM4D_LAYOUT_OFFLOAD, par ? 2 : opt ? 1 : 0, "offload_optimizer");
}

/* The data-parallel size the layout already has (dp, or world over
 * tp x cp x pp); 0 when it has none. */
static uint64_t layout_dp(const mem4d_layout *l)
{
    const uint64_t *v = l->v;
    uint64_t tcp = v[MEM4D_LAYOUT_TP] * v[MEM4D_LAYOUT_CP] * v[MEM4D_LAYOUT_PP]; /* each below 2^24 */
    if (v[MEM4D_LAYOUT_DP])
        return v[MEM4D_LAYOUT_DP];
    return tcp && v[MEM4D_LAYOUT_WORLD] % tcp == 0 ? v[MEM4D_LAYOUT_WORLD] / tcp : 0;
}

/* train_batch_size = train_micro_batch_size_per_gpu x
 * gradient_accumulation_steps x the data-parallel size: DeepSpeed fills in
 * whichever of the three is missing and then asserts the product
 * (DeepSpeedConfig._set_batch_related_parameters and _batch_assertion,
 * deepspeed/runtime/config.py). The data-parallel size is the layout's own
 * (dp or world); when the file leaves a value to it and the layout has none,
 * the import says so rather than guess. A file with neither batch key leaves
 * the layout's (the command line's) batch alone. */
static mem4d_status ds_batch(mem4d_import *imp, struct json_object *root, mem4d_layout *l)
{
    uint64_t t = 0, b = 0, g = 0, d = layout_dp(l), bg;
    bool has_t, has_b, has_g;
    TRY(ds_uint(imp, root, "", "train_batch_size", &t, &has_t));
    TRY(ds_uint(imp, root, "", "train_micro_batch_size_per_gpu", &b, &has_b));
    TRY(ds_uint(imp, root, "", "gradient_accumulation_steps", &g, &has_g));
    if ((has_t && t == 0) || (has_b && b == 0) || (has_g && g == 0))
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "%s is 0; DeepSpeed needs it greater than 0",
                            has_t && t == 0   ? "train_batch_size"
                            : has_b && b == 0 ? "train_micro_batch_size_per_gpu"
                                              : "gradient_accumulation_steps");
    if (!has_t && !has_b)
        return MEM4D_OK; /* (gradient_accumulation_steps alone: DeepSpeed asks for one of them) */
    if (!has_b || !has_t) { /* the missing one needs the data-parallel size */
        if (d == 0)
            return m4d_imp_fail(imp, MEM4D_E_MISSING,
                                "%s without %s leaves the %s to the data-parallel size; set dp or world in the "
                                "layout before reading the file (mem4d estimate: --dp or --world)",
                                has_t ? "train_batch_size" : "train_micro_batch_size_per_gpu",
                                has_t ? "train_micro_batch_size_per_gpu" : "train_batch_size",
                                has_t ? "micro-batch size" : "global batch");
        if (!has_g)
            g = 1; /* DeepSpeed: one accumulation step when only one batch key is given */
        if (has_t) {
            if (!m4d_mul(g, d, &bg) || t % bg != 0 || t / bg == 0)
                return m4d_imp_fail(imp, MEM4D_E_BATCH,
                                    "train_batch_size %llu is not micro-batch x gradient_accumulation_steps %llu x "
                                    "dp %llu for a whole micro-batch; DeepSpeed refuses it (config.py)",
                                    (unsigned long long)t, (unsigned long long)g, (unsigned long long)d);
            b = t / bg;
        } else if (!m4d_mul(b, g, &bg) || !m4d_mul(bg, d, &t)) {
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "train_micro_batch_size_per_gpu x "
                                "gradient_accumulation_steps x dp is too large");
        }
    } else if (has_g) { /* all three: DeepSpeed asserts train = micro x gas x its data-parallel size */
        if (!m4d_mul(b, g, &bg) || t % bg != 0 || (d && t / bg != d))
            return m4d_imp_fail(imp, MEM4D_E_BATCH,
                                "train_batch_size %llu is not train_micro_batch_size_per_gpu %llu x "
                                "gradient_accumulation_steps %llu x %s%llu; DeepSpeed refuses it (config.py)",
                                (unsigned long long)t, (unsigned long long)b, (unsigned long long)g,
                                d ? "dp " : "a data-parallel size", d ? (unsigned long long)d : 0ULL);
        if (d == 0 && l->v[MEM4D_LAYOUT_WORLD] == 0)
            TRY(SET_L(l, MEM4D_LAYOUT_DP, t / bg, "train_batch_size / (micro-batch x gradient_accumulation_steps)"));
    } else if (d && (!m4d_mul(b, d, &bg) || t % bg != 0 || t / bg == 0)) {
        return m4d_imp_fail(imp, MEM4D_E_BATCH,
                            "train_batch_size %llu is not train_micro_batch_size_per_gpu %llu x dp %llu x a whole "
                            "number of accumulation steps; DeepSpeed refuses it (config.py)",
                            (unsigned long long)t, (unsigned long long)b, (unsigned long long)d);
    }
    TRY(SET_L(l, MEM4D_LAYOUT_MICRO_BATCH, b, has_b ? "train_micro_batch_size_per_gpu" : "train_batch_size"));
    return SET_L(l, MEM4D_LAYOUT_GLOBAL_BATCH, t, has_t ? "train_batch_size" : "train_micro_batch_size_per_gpu");
}

/* bf16 / fp16 sections: 2-byte parameters; neither: fp32 training. */
static mem4d_status ds_precision(mem4d_import *imp, struct json_object *root, mem4d_layout *l)
{
    bool on[2] = {false, false};
    static const char *const sections[] = {"bf16", "fp16"};
    for (size_t i = 0; i < 2; i++) {
        struct json_object *sec = NULL;
        bool given;
        TRY(ds_object(imp, root, "", sections[i], &sec));
        char path[16];
        snprintf(path, sizeof path, "%s.", sections[i]);
        TRY(ds_bool(imp, sec, path, "enabled", &on[i], &given));
    }
    if (on[0] && on[1]) /* DeepSpeedConfig asserts it (deepspeed/runtime/config.py) */
        return m4d_imp_fail(imp, MEM4D_E_CONFLICT, "bf16.enabled and fp16.enabled are both true; DeepSpeed refuses "
                                                   "it (\"bfloat16 and fp16 modes cannot be simultaneously enabled\")");
    TRY(SET_L(l, MEM4D_LAYOUT_PARAM_BYTES, on[0] || on[1] ? 2 : 4, "bf16.enabled"));
    /* bf16 without ZeRO runs DeepSpeed's BF16_Optimizer
     * (deepspeed/runtime/bf16_optimizer.py): it hands the optimizer only this
     * rank's 1/dp partition of the fp32 weights, so master weights and Adam's
     * moments are partitioned even at stage 0 - what stage 1 with fp32 main
     * gradients holds. The Megatron-DeepSpeed argument reader does the same. */
    if (on[0] && l->v[MEM4D_LAYOUT_ZERO_STAGE] == 0) {
        TRY(SET_L(l, MEM4D_LAYOUT_ZERO_STAGE, 1, "bf16.enabled at zero_optimization.stage 0"));
        TRY(SET_L(l, MEM4D_LAYOUT_DIST_OPT, 1, "bf16.enabled at zero_optimization.stage 0"));
    }
    return MEM4D_OK;
}

static mem4d_status ds_apply(mem4d_import *imp, struct json_object *root, mem4d_layout *l)
{
    bool given, b = false;
    struct json_object *ac = NULL;
    TRY(SET_L(l, MEM4D_LAYOUT_FRAMEWORK, MEM4D_FRAMEWORK_DEEPSPEED, "ds_config.json"));
    TRY(ds_batch(imp, root, l));
    TRY(ds_zero(imp, root, l));
    TRY(ds_precision(imp, root, l));
    TRY(ds_object(imp, root, "", "activation_checkpointing", &ac));
    TRY(ds_bool(imp, ac, "activation_checkpointing.", "partition_activations", &b, &given));
    if (b)
        m4d_imp_warn(imp, "activation_checkpointing.partition_activations splits checkpoints over "
                          "tensor-parallel ranks; not modelled (checkpoints are counted as Megatron keeps them)");
    b = false;
    TRY(ds_bool(imp, ac, "activation_checkpointing.", "cpu_checkpointing", &b, &given));
    if (b)
        m4d_imp_warn(imp, "activation_checkpointing.cpu_checkpointing moves checkpoints to the CPU; not modelled");
    return MEM4D_OK;
}

mem4d_status mem4d_import_deepspeed_config_buffer(mem4d_import *import, const char *json, size_t size,
                                                  mem4d_layout *layout)
{
    if (!import)
        return MEM4D_E_INVALID_ARG;
    m4d_imp_reset(import);
    if (!json || !layout)
        return m4d_imp_fail(import, MEM4D_E_INVALID_ARG, "NULL document or layout");
    if (size == 0)
        return m4d_imp_fail(import, MEM4D_E_JSON, "the JSON document is empty");
    struct json_object *root = NULL;
    mem4d_status st = m4d_imp_parse_object(import, json, size, DOC, &root);
    if (st == MEM4D_OK) {
        mem4d_layout l = *layout; /* all or nothing */
        st = ds_apply(import, root, &l);
        if (st == MEM4D_OK)
            *layout = l;
        json_object_put(root);
    }
    m4d_imp_done(import);
    return st;
}

mem4d_status mem4d_import_deepspeed_config(mem4d_import *import, const char *path, mem4d_layout *layout)
{
    if (!import)
        return MEM4D_E_INVALID_ARG;
    m4d_imp_reset(import);
    if (!path || !layout)
        return m4d_imp_fail(import, MEM4D_E_INVALID_ARG, "NULL path or layout");
    char *buf = NULL;
    size_t size = 0;
    mem4d_status st = m4d_imp_read_file(import, path, DOC, &buf, &size);
    if (st != MEM4D_OK)
        return st;
    st = mem4d_import_deepspeed_config_buffer(import, buf, size, layout);
    free(buf);
    return st;
}
