/*
 * The device handle: memory, peak throughput, links, calibration constants.
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>

#include "private.h"

#define NP M4D_DEVICE_NPARAM

mem4d_status mem4d_device_new(mem4d_device **out)
{
    if (!out)
        return MEM4D_E_INVALID_ARG;
    *out = calloc(1, sizeof **out);
    if (!*out)
        return MEM4D_E_NOMEM;
    m4d_param_defaults(m4d_device_params, NP, (*out)->v);
    m4d_strlcpy((*out)->name, "custom", sizeof (*out)->name);
    return MEM4D_OK;
}

mem4d_status mem4d_device_new_preset(const char *name, mem4d_device **out)
{
    if (!out)
        return MEM4D_E_INVALID_ARG;
    *out = NULL;
    if (!name)
        return MEM4D_E_INVALID_ARG;
    for (size_t i = 0; i < m4d_device_preset_n; i++) {
        const struct m4d_device_preset *p = &m4d_device_presets[i];
        if (!m4d_streq_ci(name, p->name))
            continue;
        mem4d_status st = mem4d_device_new(out);
        if (st != MEM4D_OK)
            return st;
        for (size_t k = 0; k < NP; k++)
            if (p->v[k])
                (*out)->v[k] = p->v[k] == M4D_ZERO ? 0 : p->v[k];
        m4d_strlcpy((*out)->name, p->name, sizeof (*out)->name);
        return MEM4D_OK;
    }
    return MEM4D_E_UNKNOWN_PRESET;
}

/* An AMD GPU: the library knows a device's vendor by its preset alone, a
 * device keeps its preset's name (a clone, a device file's preset line, and
 * mem4d_device_format()'s name line, which a parse restores); a device of
 * another name is of no known vendor. */
bool m4d_device_rocm(const mem4d_device *device)
{
    for (size_t i = 0; i < m4d_device_preset_n; i++)
        if (m4d_device_presets[i].rocm && m4d_streq_ci(device->name, m4d_device_presets[i].name))
            return true;
    return false;
}

mem4d_status mem4d_device_clone(const mem4d_device *device, mem4d_device **out)
{
    if (!out)
        return MEM4D_E_INVALID_ARG;
    *out = NULL;
    if (!device)
        return MEM4D_E_INVALID_ARG;
    *out = malloc(sizeof **out);
    if (!*out)
        return MEM4D_E_NOMEM;
    **out = *device;
    return MEM4D_OK;
}

void mem4d_device_free(mem4d_device *device)
{
    free(device);
}

mem4d_status mem4d_device_set(mem4d_device *device, mem4d_device_param key, uint64_t value)
{
    if (!device)
        return MEM4D_E_INVALID_ARG;
    return m4d_param_set(m4d_device_params, NP, device->v, (int)key, value);
}

mem4d_status mem4d_device_get(const mem4d_device *device, mem4d_device_param key, uint64_t *value)
{
    if (!device || !value || (unsigned)key >= NP)
        return MEM4D_E_INVALID_ARG;
    *value = device->v[key];
    return MEM4D_OK;
}

mem4d_status mem4d_device_set_str(mem4d_device *device, const char *name, const char *value)
{
    if (!device)
        return MEM4D_E_INVALID_ARG;
    return m4d_param_set_str(m4d_device_params, NP, device->v, name, value);
}

const char *mem4d_device_name(const mem4d_device *device)
{
    return device ? device->name : "";
}

size_t mem4d_device_preset_count(void)
{
    return m4d_device_preset_n;
}

const char *mem4d_device_preset_name(size_t index)
{
    return index < m4d_device_preset_n ? m4d_device_presets[index].name : NULL;
}

size_t mem4d_device_param_count(void)
{
    return NP;
}

const char *mem4d_device_param_name(mem4d_device_param key)
{
    return (unsigned)key < NP ? m4d_device_params[key].name : NULL;
}

mem4d_status mem4d_device_param_from_name(const char *name, mem4d_device_param *key)
{
    if (!name || !key)
        return MEM4D_E_INVALID_ARG;
    int k = m4d_param_lookup(m4d_device_params, NP, name);
    if (k < 0)
        return MEM4D_E_UNKNOWN_KEY;
    *key = (mem4d_device_param)k;
    return MEM4D_OK;
}

mem4d_status mem4d_device_param_bounds(mem4d_device_param key, uint64_t *min, uint64_t *max)
{
    return m4d_param_bounds(m4d_device_params, NP, (int)key, min, max);
}
