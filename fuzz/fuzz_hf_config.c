/*
 * Fuzz mem4d_import_hf_config_buffer(): Hugging Face config.json files are
 * user files, so every byte sequence must give a status, never a crash.
 * The buffer is passed without a terminating NUL (the header allows that),
 * so a reader that runs past `size` is caught by AddressSanitizer.
 * SPDX-License-Identifier: MIT
 */
#include "fuzz-common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size heap copy: libFuzzer's own buffer is also exact, but this
     * keeps the harness honest if that ever changes. */
    char *json = malloc(size ? size : 1);
    if (!json)
        return 0;
    if (size)
        memcpy(json, data, size);

    mem4d_import *imp = NULL;
    mem4d_model *m = NULL;
    FUZZ_REQUIRE(mem4d_import_new(&imp) == MEM4D_OK && mem4d_model_new(&m) == MEM4D_OK, "new");
    /* Odd sizes also read unknown architectures as Llama-like (mem4d_import_set_llama_like). */
    FUZZ_REQUIRE(mem4d_import_set_llama_like(imp, (int)(size & 1)) == MEM4D_OK, "llama-like");
    mem4d_status st = mem4d_import_hf_config_buffer(imp, json, size, m);
    FUZZ_REQUIRE(st != MEM4D_E_IO && st != MEM4D_END, "buffer import gave %d", (int)st);
    FUZZ_REQUIRE(mem4d_import_message(imp) != NULL, "NULL message");
    if (st != MEM4D_OK && st != MEM4D_E_NO_JSON)
        FUZZ_REQUIRE(mem4d_import_message(imp)[0] != '\0', "import failed with %d, no message", (int)st);

    if (st == MEM4D_OK) {
        uint64_t n;
        char why[128];
        (void)mem4d_model_num_params(m, &n);
        if (mem4d_model_validate(m, why, sizeof why) == MEM4D_OK) {
            /* A model the reader accepted must estimate cleanly on a small job. */
            mem4d_layout *l = NULL;
            mem4d_device *d = NULL;
            mem4d_report *r = NULL;
            FUZZ_REQUIRE(mem4d_layout_new(&l) == MEM4D_OK && mem4d_device_new(&d) == MEM4D_OK
                             && mem4d_report_new(&r) == MEM4D_OK, "new");
            (void)mem4d_layout_set(l, MEM4D_LAYOUT_WORLD, 1);
            (void)mem4d_layout_set(l, MEM4D_LAYOUT_SEQ_LENGTH, 2048);
            (void)mem4d_device_set(d, MEM4D_DEVICE_MEMORY_BYTES, UINT64_C(80) << 30);
            if (mem4d_estimate(m, l, d, r) == MEM4D_OK)
                fuzz_check_report(r);
            mem4d_report_free(r);
            mem4d_device_free(d);
            mem4d_layout_free(l);
        }
    }
    mem4d_model_free(m);
    mem4d_import_free(imp);
    free(json);
    return 0;
}
