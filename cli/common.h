/*
 * Shared pieces of the mem4d command-line tool.
 * SPDX-License-Identifier: MIT
 */
#ifndef MEM4D_CLI_COMMON_H
#define MEM4D_CLI_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <mem4d/mem4d.h>

/* Exit statuses of every subcommand. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* Subcommands: argv[0] is the subcommand's name. */
int cmd_estimate(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_check(int argc, char **argv);

/* One line "mem4d: ..." on stderr. */
void cli_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Parse an unsigned decimal for a flag; prints the error and returns false. */
bool cli_parse_u64(const char *flag, const char *text, uint64_t *out);

/* Parse a positive decimal GiB figure ("80", "79.5") into bytes. */
bool cli_parse_gib(const char *flag, const char *text, uint64_t *out);

/* Open a model from a preset name or a Hugging Face config.json (when
 * hf_config is non-NULL); prints the error and returns false. */
bool cli_open_model(const char *preset, const char *hf_config, mem4d_model **out);

/* Open a device preset, optionally overriding its memory; prints the error. */
bool cli_open_device(const char *preset, uint64_t memory_bytes_or_0, mem4d_device **out);

/* Set a layout key from a flag's text; prints the error naming the flag. */
bool cli_layout_set(mem4d_layout *layout, const char *flag, mem4d_layout_param key, const char *text);

/* "--flag value" or "--flag=value": the value (NULL when argv[*i] is not
 * this flag; "" when the value is missing), advancing *i past it. */
const char *cli_flag_value(int argc, char **argv, int *i, const char *flag);

/* --set KEY=VALUE: any layout key by name; prints the error. */
bool cli_layout_set_kv(mem4d_layout *layout, const char *kv);

/* Bytes to GiB for display. */
double cli_gib(uint64_t bytes);

/* The per-stage table printed by `estimate` and `check`. */
void cli_print_report(FILE *out, const mem4d_model *model, const mem4d_layout *layout,
                      const mem4d_device *device, const mem4d_report *report);

/* The JSON object printed by `estimate --json`. */
void cli_print_report_json(FILE *out, const mem4d_report *report);

/* Write a JSON string literal (quotes and escapes included). */
void cli_json_string(FILE *out, const char *s);

#endif
