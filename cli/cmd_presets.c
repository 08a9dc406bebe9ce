/*
 * mem4d presets: the built-in models and devices, by name.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

CLI_COMMAND(presets);

const struct cli_option cmd_presets_options[] = {CLI_END};
const char cmd_presets_about[] = "Lists the names --model and --gpu take.";

int cmd_presets(struct cli_args *args)
{
    (void)args;
    printf("models:");
    for (size_t i = 0; i < mem4d_model_preset_count(); i++)
        printf(" %s", mem4d_model_preset_name(i));
    printf("\ndevices:");
    for (size_t i = 0; i < mem4d_device_preset_count(); i++)
        printf(" %s", mem4d_device_preset_name(i));
    printf("\n");
    return CLI_OK;
}
