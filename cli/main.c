/*
 * mem4d: command-line front end of libmem4d. A thin layer: every number it
 * prints comes from the public API.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>

#include "common.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *what;
} commands[] = {
    {"estimate", cmd_estimate, "memory of every pipeline stage of one layout"},
    {"plan", cmd_plan, "every valid layout on N GPUs, filtered by memory, ranked by speed"},
    {"check", cmd_check, "pre-flight check of a Megatron-LM argument list"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: mem4d COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].what);
    fprintf(out, "  presets   list built-in models and devices\n  version   print the library version\n\n"
                 "Run 'mem4d COMMAND --help' for the options of a command.\n"
                 "With no command, mem4d plans llama3.1-70b on 64 h100-80 GPUs.\n");
}

static int list_presets(void)
{
    printf("models:");
    for (size_t i = 0; i < mem4d_model_preset_count(); i++)
        printf(" %s", mem4d_model_preset_name(i));
    printf("\ndevices:");
    for (size_t i = 0; i < mem4d_device_preset_count(); i++)
        printf(" %s", mem4d_device_preset_name(i));
    printf("\n");
    return CLI_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        char *plan_argv[] = {"plan", NULL};
        return cmd_plan(1, plan_argv);
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("mem4d %s\n", mem4d_version());
        return CLI_OK;
    }
    if (!strcmp(cmd, "presets"))
        return list_presets();
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(cmd, commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    cli_error("unknown command '%s' (try 'mem4d --help')", cmd);
    return CLI_USAGE;
}
