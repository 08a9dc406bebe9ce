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
    uint64_t v = 0;
    bool given, b = false;
    struct json_object *ac = NULL;
    TRY(SET_L(l, MEM4D_LAYOUT_FRAMEWORK, MEM4D_FRAMEWORK_DEEPSPEED, "ds_config.json"));
    TRY(ds_uint(imp, root, "", "train_micro_batch_size_per_gpu", &v, &given));
    if (given)
        TRY(SET_L(l, MEM4D_LAYOUT_MICRO_BATCH, v, "train_micro_batch_size_per_gpu"));
    TRY(ds_uint(imp, root, "", "train_batch_size", &v, &given));
    if (given)
        TRY(SET_L(l, MEM4D_LAYOUT_GLOBAL_BATCH, v, "train_batch_size"));
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
