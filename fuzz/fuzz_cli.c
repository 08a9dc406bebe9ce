/*
 * Fuzz the mem4d command line: the subcommands' argument parsing, linked in
 * directly (everything in cli/ but main.c) and called with fuzzed argv.
 *
 * Input: byte 0 picks the subcommand from the CLI's own command table
 * (cli/commands.c: estimate, plan, check, then the rest); the rest is
 * split on NUL/newline into its arguments. The tool's output goes to
 * /dev/null; the sanitizers still report on the real standard error.
 *
 * The tool may open files named on its command line. A fuzzer must never
 * write files or block on a device, so fopen() is wrapped (-Wl,--wrap=fopen,
 * and fopen64):
 * every write goes to /dev/null and device or /proc paths read as empty.
 * SPDX-License-Identifier: MIT
 */
#include "fuzz-common.h"

#include "../cli/cli.h"

FILE *__real_fopen(const char *path, const char *mode);
FILE *__wrap_fopen(const char *path, const char *mode);
FILE *__real_fopen64(const char *path, const char *mode);
FILE *__wrap_fopen64(const char *path, const char *mode);

/* Writes, and reads of anything but plain files, go to /dev/null. */
static const char *safe_path(const char *path, const char *mode)
{
    static const char *const special[] = {"/dev/", "/proc/", "/sys/", "/run/"};
    int unsafe = strpbrk(mode, "wa+") != NULL;
    for (size_t i = 0; path && i < sizeof special / sizeof special[0]; i++)
        unsafe |= strncmp(path, special[i], strlen(special[i])) == 0;
    return unsafe ? "/dev/null" : path;
}

FILE *__wrap_fopen(const char *path, const char *mode)
{
    return __real_fopen(safe_path(path, mode), mode);
}

/* Meson builds with _FILE_OFFSET_BITS=64, which renames fopen to fopen64. */
FILE *__wrap_fopen64(const char *path, const char *mode)
{
    return __real_fopen64(safe_path(path, mode), mode);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* glibc lets the standard streams be reassigned. libFuzzer took its own
     * copy of stderr at start-up and the sanitizers write to fd 2 directly,
     * so only the tool's chatter is silenced. */
    FILE *null = __real_fopen("/dev/null", "w");
    if (!null)
        abort();
    stdout = null;
    stderr = null;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const struct cli_command *cmd = &cli_commands[data[0] % cli_command_count];

    struct fuzz_argv a;
    fuzz_split(&a, data + 1, size - 1, 1);
    /* argv[0] is the subcommand's name; shift the pieces up by one. */
    char *argv[FUZZ_MAX_ARGS + 2];
    char name[32];
    snprintf(name, sizeof name, "%s", cmd->name);
    argv[0] = name;
    for (int i = 0; i < a.argc; i++)
        argv[i + 1] = a.argv[i];
    argv[a.argc + 1] = NULL;

    int rc = cli_run(cmd, a.argc + 1, argv);
    FUZZ_REQUIRE(rc == CLI_OK || rc == CLI_FAIL || rc == CLI_USAGE, "%s exited %d", cmd->name, rc);
    fflush(stdout);
    fuzz_argv_free(&a);
    return 0;
}
