/*
 * Opening what the subcommands estimate: the model (a preset or a
 * config.json) and the device, with the settings their flags left waiting.
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "cli.h"

/* "a, b, c" into a buffer, for a one-line error. */
static const char *list_names(char *buf, size_t size, size_t (*count)(void), const char *(*name)(size_t))
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < count() && used < size; i++) {
        int n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", name(i));
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return buf;
}

void cli_print_warnings(const mem4d_import *imp)
{
    for (size_t i = 0; i < mem4d_import_warning_count(imp); i++)
        fprintf(stderr, "mem4d: warning: %s\n", cli_text(mem4d_import_warning(imp, i)));
}

/* Did the command line set layout key k: its own flag given, or (--set) a
 * value other than the key's default. A flag with a default of its own
 * (plan's --gpus, --seq, --gbs) counts only when given. */
static bool layout_key_given(const struct cli_args *a, size_t k, uint64_t v)
{
    uint64_t def = 0;
    for (size_t i = 0; a->cmd->options[i].name; i++) {
        const struct cli_option *o = &a->cmd->options[i];
        if (o->dest != CLI_TO_LAYOUT || o->kind != CLI_VALUE || o->key != k)
            continue;
        if (a->given[i])
            return true;
        if (o->def)
            return false;
    }
    return mem4d_layout_param_default((mem4d_layout_param)k, &def) == MEM4D_OK && v != def;
}

/* One file over a copy of the command line's layout (whose dp or world the
 * readers use), then the keys the command line set back on top. */
static bool apply_job_file(struct cli_args *a, const mem4d_model *model, bool torchtitan)
{
    const char *flag = torchtitan ? "--torchtitan-config" : "--ds-config";
    const char *path = torchtitan ? a->tt_config : a->ds_config;
    mem4d_import *imp = NULL;
    mem4d_layout *file = NULL;
    bool ok = false;
    if (mem4d_import_new(&imp) != MEM4D_OK || mem4d_layout_clone(a->layout, &file) != MEM4D_OK) {
        cli_error("out of memory");
        goto out;
    }
    mem4d_status st = torchtitan ? mem4d_import_torchtitan_config(imp, path, 0, model, file)
                                 : mem4d_import_deepspeed_config(imp, path, file);
    if (st != MEM4D_OK) {
        cli_error("%s %s: %s", flag, path, mem4d_import_message(imp));
        goto out;
    }
    cli_print_warnings(imp);
    uint32_t layers = 0;
    bool table = mem4d_layout_get_stage_layers(file, &layers, 1) > 0, restaged = false, regrid = false,
         dp_given = false, batch_given = false;
    /* the file's degrees and the batch its reader derived from them */
    uint64_t f_dp = 0, f_pp = 1, gbs = 0, mbs = 0;
    mem4d_layout_get(file, MEM4D_LAYOUT_DP, &f_dp);
    mem4d_layout_get(file, MEM4D_LAYOUT_PP, &f_pp);
    mem4d_layout_get(file, MEM4D_LAYOUT_GLOBAL_BATCH, &gbs);
    mem4d_layout_get(file, MEM4D_LAYOUT_MICRO_BATCH, &mbs);
    for (size_t k = 0; k < mem4d_layout_param_count(); k++) {
        uint64_t v = 0;
        if (mem4d_layout_get(a->layout, (mem4d_layout_param)k, &v) != MEM4D_OK || !layout_key_given(a, k, v))
            continue;
        if (mem4d_layout_set(file, (mem4d_layout_param)k, v) != MEM4D_OK) {
            cli_error("%s %s: %s = %llu does not go with the file", flag, path,
                      mem4d_layout_param_name((mem4d_layout_param)k), (unsigned long long)v);
            goto out;
        }
        restaged |= k == MEM4D_LAYOUT_PP || k == MEM4D_LAYOUT_VPP;
        regrid |= k == MEM4D_LAYOUT_TP || k == MEM4D_LAYOUT_CP || k == MEM4D_LAYOUT_PP;
        dp_given |= k == MEM4D_LAYOUT_DP;
        batch_given |= k == MEM4D_LAYOUT_GLOBAL_BATCH || k == MEM4D_LAYOUT_MICRO_BATCH;
    }
    /* other degrees over the command line's world: dp is what they leave */
    uint64_t world = 0, t = 1, c = 1, p = 1, dp = f_dp;
    if (regrid && !dp_given && mem4d_layout_get(file, MEM4D_LAYOUT_WORLD, &world) == MEM4D_OK && world)
        mem4d_layout_set(file, MEM4D_LAYOUT_DP, 0);
    mem4d_layout_get(file, MEM4D_LAYOUT_TP, &t);
    mem4d_layout_get(file, MEM4D_LAYOUT_CP, &c);
    mem4d_layout_get(file, MEM4D_LAYOUT_PP, &p);
    if (!dp_given && world && t && c && p && world % (t * c * p) == 0)
        dp = world / (t * c * p);
    else
        mem4d_layout_get(file, MEM4D_LAYOUT_DP, &dp);
    /* torchtitan's batch follows its degrees: the global batch is
     * local_batch_size x dp unless global_batch_size is set, and under PP
     * the micro-batch is pipeline_parallel_microbatch_size, not the local
     * batch. The reader derived them from the file's degrees; other ones
     * given here keep the file's numbers, which torchtitan would not run. */
    if (torchtitan && regrid && !batch_given && (dp != f_dp || (p > 1) != (f_pp > 1)))
        fprintf(stderr, "mem4d: warning: %s %s: global batch %llu and micro-batch %llu are the file's for its dp %llu "
                        "and pp %llu, kept at dp %llu and pp %llu; torchtitan's would be local_batch_size x dp "
                        "(unless global_batch_size is set) and, under pp, pipeline_parallel_microbatch_size: give "
                        "--gbs and --mbs\n", flag, cli_text(path), (unsigned long long)gbs, (unsigned long long)mbs,
                (unsigned long long)f_dp, (unsigned long long)f_pp, (unsigned long long)dp, (unsigned long long)p);
    /* the file's per-stage split belongs to its pp and vpp; plan searches others */
    if (table && (restaged || strcmp(a->cmd->name, "plan") == 0)) {
        fprintf(stderr, "mem4d: warning: %s: the layers are split evenly over the %s pp and vpp, not as the file's "
                        "pipeline split\n", flag, restaged ? "command line's" : "searched");
        mem4d_layout_set_stage_layers(file, NULL, 0);
    }
    ok = mem4d_layout_copy(a->layout, file) == MEM4D_OK;
out:
    mem4d_layout_free(file);
    mem4d_import_free(imp);
    return ok;
}

bool cli_apply_job_files(struct cli_args *a, const mem4d_model *model)
{
    return (!a->ds_config || apply_job_file(a, model, false)) && (!a->tt_config || apply_job_file(a, model, true));
}

/* One waiting setting; the error names its flag (and key, for --model-set
 * and --device-set) and what the key takes. */
static bool apply(const struct cli_pending *p, mem4d_status st, enum cli_table table, const char *key_name)
{
    if (st == MEM4D_OK)
        return true;
    char num[24], flag[160];
    snprintf(num, sizeof num, "%llu", (unsigned long long)p->value);
    if (!strcmp(p->flag, "--model-set") || !strcmp(p->flag, "--device-set"))
        snprintf(flag, sizeof flag, "%s %s", p->flag, key_name);
    else
        snprintf(flag, sizeof flag, "%s", p->flag);
    uint64_t lo = 0, hi = 0;
    if (table == CLI_TABLE_MODEL)
        mem4d_model_param_bounds((mem4d_model_param)p->key, &lo, &hi);
    else
        mem4d_device_param_bounds((mem4d_device_param)p->key, &lo, &hi);
    if (st == MEM4D_E_RANGE)
        cli_range_error(flag, p->text ? p->text : num, lo, hi);
    else
        cli_value_error(flag, p->text ? p->text : "", table, (int)p->key, 0);
    return false;
}

bool cli_apply_model_settings(const struct cli_args *a, mem4d_model *model)
{
    if (a->layer_pattern && mem4d_model_set_layer_pattern(model, a->layer_pattern) != MEM4D_OK) {
        cli_error("--model-set layer_pattern: '%s' is not a layer pattern (symbols M G * - E L, "
                  "\"*{heads}\" and \"-{ffn}\" widths, at most 4096 layers)", a->layer_pattern);
        return false;
    }
    for (size_t i = 0; i < a->n_model_set; i++) {
        const struct cli_pending *p = &a->model_set[i];
        mem4d_model_param key = (mem4d_model_param)p->key;
        mem4d_status st = p->text ? mem4d_model_set_str(model, mem4d_model_param_name(key), p->text)
                                  : mem4d_model_set(model, key, p->value);
        uint64_t now = 1;
        /* For these two, 0 is the library's "not set" (one group per head;
         * hidden / heads): given explicitly it is a mistake, not a size. */
        if (st == MEM4D_OK && (key == MEM4D_MODEL_NUM_KV_HEADS || key == MEM4D_MODEL_HEAD_DIM) &&
            mem4d_model_get(model, key, &now) == MEM4D_OK && now == 0) {
            cli_error("%s %s=0 would mean \"not set\" (%s); give a size of at least 1", p->flag,
                      mem4d_model_param_name(key),
                      key == MEM4D_MODEL_HEAD_DIM ? "hidden_size / num_attention_heads"
                                                  : "a key/value head per attention head");
            return false;
        }
        if (!apply(p, st, CLI_TABLE_MODEL, mem4d_model_param_name(key)))
            return false;
    }
    return true;
}

static bool open_hf_config(const char *path, mem4d_model **out)
{
    mem4d_import *imp = NULL;
    mem4d_status st = mem4d_import_new(&imp);
    if (st == MEM4D_OK && (st = mem4d_model_new(out)) == MEM4D_OK)
        st = mem4d_import_hf_config(imp, path, *out);
    if (imp)
        cli_print_warnings(imp);
    if (st != MEM4D_OK) {
        const char *msg = imp ? mem4d_import_message(imp) : "";
        cli_error("%s: %s", path, *msg ? msg : mem4d_strerror(st));
        mem4d_model_free(*out);
        *out = NULL;
    }
    mem4d_import_free(imp);
    return st == MEM4D_OK;
}

bool cli_open_model(const struct cli_args *a, const char *fallback, mem4d_model **out)
{
    *out = NULL;
    const char *preset = a->model ? a->model : fallback;
    if (a->hf_config) {
        if (!open_hf_config(a->hf_config, out))
            return false;
    } else if (!preset) {
        cli_error("--model or --hf-config is required");
        return false;
    } else if (mem4d_model_new_preset(preset, out) != MEM4D_OK) {
        char names[1024];
        cli_error("unknown model '%s' (known: %s)", preset,
                  list_names(names, sizeof names, mem4d_model_preset_count, mem4d_model_preset_name));
        return false;
    }
    if (!cli_apply_model_settings(a, *out)) {
        mem4d_model_free(*out);
        *out = NULL;
        return false;
    }
    return true;
}

bool cli_open_device(const struct cli_args *a, mem4d_device **out)
{
    *out = NULL;
    if (mem4d_device_new_preset(a->gpu, out) != MEM4D_OK) {
        char names[1024];
        cli_error("unknown gpu '%s' (known: %s)", a->gpu,
                  list_names(names, sizeof names, mem4d_device_preset_count, mem4d_device_preset_name));
        return false;
    }
    char why[256];
    /* The GPU's compute: a file that changes it describes another GPU. */
    static const mem4d_device_param compute[] = {MEM4D_DEVICE_PEAK_FLOPS, MEM4D_DEVICE_PEAK_FP8_FLOPS,
                                                 MEM4D_DEVICE_SM_COUNT};
    uint64_t preset[3] = {0};
    for (size_t k = 0; k < 3; k++)
        mem4d_device_get(*out, compute[k], &preset[k]);
    if (a->device_file && mem4d_device_load(*out, a->device_file, why, sizeof why) != MEM4D_OK) {
        cli_error("--device-file %s: %s", a->device_file, why);
        mem4d_device_free(*out);
        *out = NULL;
        return false;
    }
    for (size_t k = 0; a->device_file && cli_given(a, "--gpu") && k < 3; k++) {
        uint64_t v = 0;
        mem4d_device_get(*out, compute[k], &v);
        if (v != preset[k]) {
            fprintf(stderr, "mem4d: warning: --device-file %s describes another GPU than --gpu %s (%s, its %s %llu "
                    "against %llu): the file's figures are used; a calibration carries to its own GPU only\n",
                    a->device_file, a->gpu, cli_text(mem4d_device_name(*out)), mem4d_device_param_name(compute[k]),
                    (unsigned long long)v, (unsigned long long)preset[k]);
            break;
        }
    }
    for (size_t i = 0; i < a->n_device_set; i++) {
        const struct cli_pending *p = &a->device_set[i];
        mem4d_device_param key = (mem4d_device_param)p->key;
        mem4d_status st = p->text ? mem4d_device_set_str(*out, mem4d_device_param_name(key), p->text)
                                  : mem4d_device_set(*out, key, p->value);
        if (!apply(p, st, CLI_TABLE_DEVICE, mem4d_device_param_name(key))) {
            mem4d_device_free(*out);
            *out = NULL;
            return false;
        }
    }
    return true;
}
