/*
 * Fuzz mem4d_import_megatron(): the reader of Megatron-LM argument vectors
 * that launchers and schedulers call on every job submission.
 *
 * Input: byte 0 chooses the explicit world size (0: look in the environment);
 * the rest is split on NUL/newline into arguments. An argument starting with
 * '@' goes to the environment instead ("@WORLD_SIZE=64").
 * SPDX-License-Identifier: MIT
 */
#include "fuzz-common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    /* Small explicit world sizes plus a few large powers of two. */
    uint64_t world = data[0] < 0xf0 ? data[0] : UINT64_C(1) << (data[0] - 0xf0 + 16);

    struct fuzz_argv a;
    fuzz_split(&a, data + 1, size - 1, 1);
    const char *args[FUZZ_MAX_ARGS + 1], *env[FUZZ_MAX_ARGS + 1];
    int nargs = 0, nenv = 0;
    for (int i = 0; i < a.argc; i++) {
        if (a.argv[i][0] == '@')
            env[nenv++] = a.argv[i] + 1;
        else
            args[nargs++] = a.argv[i];
    }
    args[nargs] = NULL;
    env[nenv] = NULL;

    mem4d_import *imp = NULL;
    mem4d_model *m = NULL;
    mem4d_layout *l = NULL;
    FUZZ_REQUIRE(mem4d_import_new(&imp) == MEM4D_OK && mem4d_model_new(&m) == MEM4D_OK
                     && mem4d_layout_new(&l) == MEM4D_OK, "new");
    mem4d_status st = mem4d_import_megatron(imp, nargs, args, nenv ? env : NULL, world, m, l);
    const char *msg = mem4d_import_message(imp);
    FUZZ_REQUIRE(msg != NULL, "NULL message");
    if (st != MEM4D_OK)
        FUZZ_REQUIRE(msg[0] != '\0', "import failed with %d and no message", (int)st);
    size_t nw = mem4d_import_warning_count(imp);
    for (size_t i = 0; i < nw; i++)
        FUZZ_REQUIRE(mem4d_import_warning(imp, i) != NULL, "warning %zu of %zu is NULL", i, nw);
    FUZZ_REQUIRE(mem4d_import_warning(imp, nw) == NULL, "warning past the end");
    mem4d_world_source ws = mem4d_import_world_source(imp);
    FUZZ_REQUIRE(ws >= MEM4D_WORLD_NONE && ws <= MEM4D_WORLD_ENV_SLURM_NODES, "world source %d", (int)ws);

    if (st == MEM4D_OK) {
        /* Whatever the import accepted, estimating it must be well-behaved. */
        mem4d_device *d = NULL;
        mem4d_report *r = NULL;
        if (mem4d_device_preset_count() > 0)
            FUZZ_REQUIRE(mem4d_device_new_preset(mem4d_device_preset_name(0), &d) == MEM4D_OK, "dev");
        else
            FUZZ_REQUIRE(mem4d_device_new(&d) == MEM4D_OK, "dev");
        FUZZ_REQUIRE(mem4d_report_new(&r) == MEM4D_OK, "report");
        if (mem4d_estimate(m, l, d, r) == MEM4D_OK)
            fuzz_check_report(r);
        mem4d_report_free(r);
        mem4d_device_free(d);
    }

    /* Importing twice into one handle must reset its messages, not append. */
    if (size & 1)
        (void)mem4d_import_megatron(imp, 0, args, NULL, 8, m, l);

    mem4d_layout_free(l);
    mem4d_model_free(m);
    mem4d_import_free(imp);
    fuzz_argv_free(&a);
    return 0;
}
