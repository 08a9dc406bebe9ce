/*
 * Fuzz mem4d_import_deepspeed_config_buffer(): ds_config.json files are
 * user files, so every byte sequence must give a status, never a crash,
 * and a failed import must leave the layout as it was. The buffer has no
 * terminating NUL, so a reader that runs past `size` is caught by
 * AddressSanitizer.
 * SPDX-License-Identifier: MIT
 */
#include "fuzz-common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *json = malloc(size ? size : 1);
    if (!json)
        return 0;
    if (size)
        memcpy(json, data, size);

    mem4d_import *imp = NULL;
    mem4d_layout *l = NULL, *before = NULL;
    FUZZ_REQUIRE(mem4d_import_new(&imp) == MEM4D_OK && mem4d_layout_new(&l) == MEM4D_OK, "new");
    (void)mem4d_layout_set(l, MEM4D_LAYOUT_DP, 8);
    (void)mem4d_layout_set(l, MEM4D_LAYOUT_SEQ_LENGTH, 2048);
    FUZZ_REQUIRE(mem4d_layout_clone(l, &before) == MEM4D_OK, "clone");
    mem4d_status st = mem4d_import_deepspeed_config_buffer(imp, json, size, l);
    mem4d_model *m = NULL;
    FUZZ_REQUIRE(mem4d_model_new_preset("llama3.1-8b", &m) == MEM4D_OK, "new");
    fuzz_check_layout_import(st, MEM4D_E_NO_JSON, imp, l, before, m);
    mem4d_model_free(m);
    mem4d_layout_free(before);
    mem4d_layout_free(l);
    mem4d_import_free(imp);
    free(json);
    return 0;
}
