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
    FUZZ_REQUIRE(st != MEM4D_E_IO && st != MEM4D_END, "buffer import gave %d", (int)st);
    FUZZ_REQUIRE(mem4d_import_message(imp) != NULL, "NULL message");
    for (size_t i = 0; i < mem4d_import_warning_count(imp); i++)
        FUZZ_REQUIRE(mem4d_import_warning(imp, i) != NULL, "NULL warning %zu", i);
    if (st != MEM4D_OK) {
        if (st != MEM4D_E_NO_JSON)
            FUZZ_REQUIRE(mem4d_import_message(imp)[0] != '\0', "import failed with %d, no message", (int)st);
        for (size_t k = 0; k < mem4d_layout_param_count(); k++) {
            uint64_t a = 0, b = 0;
            (void)mem4d_layout_get(l, (mem4d_layout_param)k, &a);
            (void)mem4d_layout_get(before, (mem4d_layout_param)k, &b);
            FUZZ_REQUIRE(a == b, "failed import changed layout key %zu", k);
        }
    } else {
        /* A layout the reader accepted estimates cleanly or says why not. */
        mem4d_model *m = NULL;
        mem4d_device *d = NULL;
        mem4d_report *r = NULL;
        FUZZ_REQUIRE(mem4d_model_new_preset("llama3.1-8b", &m) == MEM4D_OK && mem4d_device_new(&d) == MEM4D_OK &&
                         mem4d_report_new(&r) == MEM4D_OK,
                     "new");
        (void)mem4d_device_set(d, MEM4D_DEVICE_MEMORY_BYTES, UINT64_C(80) << 30);
        if (mem4d_estimate(m, l, d, r) == MEM4D_OK)
            fuzz_check_report(r);
        else
            FUZZ_REQUIRE(mem4d_report_message(r)[0] != '\0', "estimate failed without a message");
        mem4d_report_free(r);
        mem4d_device_free(d);
        mem4d_model_free(m);
    }
    mem4d_layout_free(before);
    mem4d_layout_free(l);
    mem4d_import_free(imp);
    free(json);
    return 0;
}
