/*
 * Fuzz mem4d_import_torchtitan_config_buffer() and the TOML reader under it:
 * torchtitan job files are user files, so every byte sequence must give a
 * status, never a crash or a hang (nesting is bounded), and a failed import
 * must leave the layout as it was. The buffer has no terminating NUL, so a
 * reader that runs past `size` is caught by AddressSanitizer. Half the runs
 * give the reader a model, so torchtitan's pipeline split is exercised.
 * SPDX-License-Identifier: MIT
 */
#include "fuzz-common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *toml = malloc(size ? size : 1);
    if (!toml)
        return 0;
    if (size)
        memcpy(toml, data, size);

    mem4d_import *imp = NULL;
    mem4d_layout *l = NULL, *before = NULL;
    mem4d_model *m = NULL;
    FUZZ_REQUIRE(mem4d_import_new(&imp) == MEM4D_OK && mem4d_layout_new(&l) == MEM4D_OK &&
                     mem4d_model_new_preset("llama3.1-8b", &m) == MEM4D_OK,
                 "new");
    FUZZ_REQUIRE(mem4d_layout_clone(l, &before) == MEM4D_OK, "clone");
    uint64_t world = size ? (uint64_t)1 << (data[0] % 8) : 8;
    mem4d_status st = mem4d_import_torchtitan_config_buffer(imp, toml, size, world, size % 2 ? m : NULL, l);
    fuzz_check_layout_import(st, MEM4D_OK, imp, l, before, m);
    mem4d_model_free(m);
    mem4d_layout_free(before);
    mem4d_layout_free(l);
    mem4d_import_free(imp);
    free(toml);
    return 0;
}
