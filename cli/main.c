/*
 * mem4d: command-line front end of libmem4d. A thin layer: every number it
 * prints comes from the public API. The subcommands, their options and how
 * they fit together: cli.h.
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <string.h>

#include "cli.h"

int main(int argc, char **argv)
{
    int rc = cli_main(argc, argv);
    /* Output lost to a full disk or a closed pipe is an error, not a success:
     * stdout is flushed and closed here, where its last error shows. */
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
        cli_error("cannot write the output: %s", errno ? strerror(errno) : "write error");
        return CLI_USAGE;
    }
    return rc;
}
