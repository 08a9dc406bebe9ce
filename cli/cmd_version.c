/*
 * mem4d version (or mem4d --version): the library's version.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

CLI_COMMAND(version);

const struct cli_option cmd_version_options[] = {CLI_END};
const char cmd_version_about[] = "Prints the version of the libmem4d the tool runs on.";

int cmd_version(struct cli_args *args)
{
    (void)args;
    printf("mem4d %s\n", mem4d_version());
    return CLI_OK;
}
