/*
 * THE command table of the mem4d tool: main.c and fuzz/fuzz_cli.c both
 * dispatch through it. A subcommand is one CLI_COMMAND line and one row
 * here, plus its file cmd_NAME.c (its option table, help text and handler).
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "cli.h"

CLI_COMMAND(estimate);
CLI_COMMAND(plan);
CLI_COMMAND(check);
CLI_COMMAND(presets);
CLI_COMMAND(version);
CLI_COMMAND(calibrate);

/* The fuzz corpus picks a subcommand by its index: append, never reorder. */
const struct cli_command cli_commands[] = {
    {"estimate", "memory of every pipeline stage of one layout", cmd_estimate, cmd_estimate_options,
     cmd_estimate_about, NULL},
    {"plan", "every valid layout on N GPUs, filtered by memory, ranked by speed", cmd_plan, cmd_plan_options,
     cmd_plan_about, NULL},
    {"check", "pre-flight check of a Megatron-LM argument list", cmd_check, cmd_check_options,
     cmd_check_about, "MEGATRON-ARGS..."},
    {"presets", "list built-in models and devices", cmd_presets, cmd_presets_options, cmd_presets_about, NULL},
    {"version", "print the library version", cmd_version, cmd_version_options, cmd_version_about, NULL},
    {"calibrate", "fit the device to training logs or measured figures, write a device file", cmd_calibrate,
     cmd_calibrate_options, cmd_calibrate_about, "MEGATRON-ARGS..."},
};
const size_t cli_command_count = sizeof cli_commands / sizeof cli_commands[0];

static void usage(FILE *out)
{
    fprintf(out, "usage: mem4d COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < cli_command_count; i++)
        fprintf(out, "  %-9s %s\n", cli_commands[i].name, cli_commands[i].summary);
    fprintf(out, "\nRun 'mem4d COMMAND --help' for the options of a command.\n"
                 "With no command, mem4d plans llama3.1-70b on 64 h100-80 GPUs.\n");
}

int cli_main(int argc, char **argv)
{
    if (argc < 2) {
        char *plan_argv[] = {"plan", NULL};
        return cli_run(&cli_commands[1], 1, plan_argv);
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(cmd, "--version"))
        cmd = "version";
    for (size_t i = 0; i < cli_command_count; i++)
        if (!strcmp(cmd, cli_commands[i].name))
            return cli_run(&cli_commands[i], argc - 1, argv + 1);
    cli_error("unknown command '%s' (try 'mem4d --help')", cmd);
    return CLI_USAGE;
}
