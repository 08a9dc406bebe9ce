/*
 * Fuzz the job_submit/mem4d plugin's batch-script reader
 * (contrib/slurm/batch_script.c): slurmctld runs it on every submitted
 * script, so no input may crash it, read past it, leak, or run unbounded.
 * The input is the script itself, in a buffer of exactly its size (no NUL
 * after it). What the reader finds is then imported as Megatron-LM
 * arguments, as the plugin does.
 * SPDX-License-Identifier: MIT
 */
#include "fuzz-common.h"

#include "../contrib/slurm/batch_script.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const scripts[] = {"pretrain_gpt.py", "train.py", NULL};
    static const char *const env[] = {"TP=8", "SEQ=8192", "EMPTY=", "ARGS=--num-layers 2 --bf16", NULL};
    static const char *const args[] = {"job.sh", "32", "--swiglu", NULL};
    char *text = malloc(size ? size : 1);
    FUZZ_REQUIRE(text != NULL, "malloc");
    if (size)
        memcpy(text, data, size);

    struct m4s_script s;
    int rc = m4s_read_script(text, size, scripts, (size & 1) ? env : NULL, (size & 2) ? args : NULL, &s);
    FUZZ_REQUIRE(rc == 0 || rc == -1, "status %d", rc);
    if (rc == 0) {
        FUZZ_REQUIRE(s.found >= M4S_FOUND_NONE && s.found <= M4S_FOUND_UNREADABLE, "found %d", (int)s.found);
        FUZZ_REQUIRE(s.argc >= 0, "argc %d", s.argc);
        if (s.found == M4S_FOUND_UNREADABLE)
            FUZZ_REQUIRE(s.why[0] != '\0' && s.argc == 0, "unreadable without a reason");
        if (s.found == M4S_FOUND_NONE)
            FUZZ_REQUIRE(s.argc == 0 && s.line == 0, "nothing found, but %d words", s.argc);
        if (s.argc > 0) {
            FUZZ_REQUIRE(s.argv && s.argv[s.argc] == NULL, "argv not NULL-terminated");
            for (int i = 0; i < s.argc; i++)
                FUZZ_REQUIRE(s.argv[i] != NULL, "word %d is NULL", i);
            mem4d_import *imp = NULL;
            mem4d_model *m = NULL;
            mem4d_layout *l = NULL;
            FUZZ_REQUIRE(mem4d_import_new(&imp) == MEM4D_OK && mem4d_model_new(&m) == MEM4D_OK &&
                             mem4d_layout_new(&l) == MEM4D_OK, "new");
            (void)mem4d_import_megatron(imp, s.argc, (const char *const *)s.argv, NULL, 64, m, l);
            mem4d_layout_free(l);
            mem4d_model_free(m);
            mem4d_import_free(imp);
        }
        m4s_script_free(&s);
        FUZZ_REQUIRE(s.argv == NULL && s.argc == 0, "not emptied by m4s_script_free");
    }
    free(text);
    return 0;
}
