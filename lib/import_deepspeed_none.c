/*
 * Import: DeepSpeed ds_config.json without json-c. The entry points exist in
 * every build (the ABI does not depend on the build options) and say how to
 * get the reader.
 * SPDX-License-Identifier: MIT
 */
#include "import.h"

static mem4d_status no_json(mem4d_import *imp)
{
    return m4d_imp_fail(imp, MEM4D_E_NO_JSON,
                        "libmem4d was built without JSON support; rebuild it with json-c (-Djson=enabled)");
}

mem4d_status mem4d_import_deepspeed_config_buffer(mem4d_import *import, const char *json, size_t size,
                                                  mem4d_layout *layout)
{
    if (!import)
        return MEM4D_E_INVALID_ARG;
    m4d_imp_reset(import);
    (void)size;
    if (!json || !layout)
        return m4d_imp_fail(import, MEM4D_E_INVALID_ARG, "NULL document or layout");
    return no_json(import);
}

mem4d_status mem4d_import_deepspeed_config(mem4d_import *import, const char *path, mem4d_layout *layout)
{
    if (!import)
        return MEM4D_E_INVALID_ARG;
    m4d_imp_reset(import);
    if (!path || !layout)
        return m4d_imp_fail(import, MEM4D_E_INVALID_ARG, "NULL path or layout");
    return no_json(import);
}
