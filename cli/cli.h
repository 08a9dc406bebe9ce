/*
 * The mem4d command-line tool's shared pieces: the command table, the
 * declarative option tables, and the helpers the subcommands share.
 *
 * How the tool is put together (a new flag is one row, a new subcommand one
 * entry in commands.c plus one file):
 *
 *   commands.c     THE command table: name, summary, handler, option table.
 *                  main.c and fuzz/fuzz_cli.c both dispatch through it.
 *   options.c      the one parser and the one usage printer, both driven by
 *                  a subcommand's option table (struct cli_option rows).
 *   cmd_NAME.c     a subcommand: its option table, its help text, its handler.
 *   common.c       opening models and devices, the report printers.
 *   print_plan.c   plan's printers: table, JSON, CSV and the SVG landscape.
 *
 * A row says what a flag takes (its kind) and where the value goes (its
 * destination): a layout, model or device key of the library, a field of
 * struct cli_args, the output format, or one of plan's search constraints.
 * Layout values are set as they are parsed (so errors come in argv order);
 * model and device values wait in struct cli_args until the subcommand has
 * opened the model and device (cli_open_model(), cli_open_device()).
 *
 * Examples of rows (the parser, --help and the fuzzer follow from them):
 *   a layout key:        CLI_LAYOUT("--ep", MEM4D_LAYOUT_EP, "E", "expert-parallel size"),
 *   a searched knob:     CLI_SEARCH("--ep", MEM4D_LAYOUT_EP, "expert-parallel sizes searched"),
 *   a model key:         CLI_MODEL("--vocab-size", CLI_UINT, MEM4D_MODEL_VOCAB_SIZE, "V", "..."),
 *   any device key:      CLI_ROW("--device-set", CLI_KEYVAL, CLI_TO_DEVICE, 0, "KEY=VALUE", "...",
 *                                NULL, 0, 0),
 *   a tool option:       a field in struct cli_args and CLI_ARG("--flag", kind, field, ...).
 * Rows every estimating subcommand shares are CLI_ROWS_MODEL and CLI_ROWS_DEVICE.
 * SPDX-License-Identifier: MIT
 */
#ifndef MEM4D_CLI_H
#define MEM4D_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <mem4d/mem4d.h>

/* Exit statuses of every subcommand. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* What a flag takes. */
enum cli_kind {
    CLI_SWITCH, /* no value: sets a bool (or, to CLI_TO_FORMAT, the format) */
    CLI_UINT,   /* a decimal integer */
    CLI_GIB,    /* a decimal size in GiB ("80", "79.5"), stored in bytes */
    CLI_NAME,   /* a non-empty word: a preset name */
    CLI_PATH,   /* a file to read: must be a regular file when it exists */
    CLI_OUTPUT, /* a file to write */
    CLI_VALUE,  /* a value of a library key: decimal, or a name ("full", "true") */
    CLI_SPEC,   /* plan: a value, a range LO-HI or a list A,B,C of a layout key */
    CLI_KEYVAL  /* KEY=VALUE: any key of the destination, by name */
};

/* Where the value goes. */
enum cli_dest {
    CLI_TO_ARGS,   /* a field of struct cli_args (key = its offset) */
    CLI_TO_LAYOUT, /* a mem4d_layout_param of cli_args.layout (key) */
    CLI_TO_MODEL,  /* a mem4d_model_param, applied by cli_open_model() */
    CLI_TO_DEVICE, /* a mem4d_device_param, applied by cli_open_device() */
    CLI_TO_FORMAT, /* the output format (key: enum cli_format) */
    CLI_TO_SEARCH  /* plan: a constraint on layout key `key` (CLI_SPEC) */
};

enum cli_format { CLI_FORMAT_TABLE, CLI_FORMAT_JSON, CLI_FORMAT_CSV };

/* One flag: one row. */
struct cli_option {
    const char *name;    /* "--tp" */
    enum cli_kind kind;
    enum cli_dest dest;
    size_t key;          /* the library key, offsetof(struct cli_args, field), or the format */
    const char *metavar; /* "N" in the usage; NULL: a switch, or the key's value names */
    const char *help;    /* one line */
    const char *def;     /* set through the same path before argv; NULL for none */
    uint64_t min;        /* CLI_UINT, CLI_VALUE: smallest value accepted (on top of the library's) */
    int group;           /* nonzero: at most one flag of the group may be given */
};

/* A row: every field, then shorthands by destination. G is the conflict group. */
#define CLI_ROW(flag, kind, dest, key, meta, help, def, min, g) {flag, kind, dest, key, meta, help, def, min, g}
#define CLI_FIELD(f) offsetof(struct cli_args, f)
#define CLI_ARG(flag, kind, f, meta, help) CLI_ROW(flag, kind, CLI_TO_ARGS, CLI_FIELD(f), meta, help, NULL, 0, 0)
#define CLI_LAYOUT(flag, key, meta, help) CLI_ROW(flag, CLI_VALUE, CLI_TO_LAYOUT, key, meta, help, NULL, 0, 0)
#define CLI_MODEL(flag, kind, key, meta, help) CLI_ROW(flag, kind, CLI_TO_MODEL, key, meta, help, NULL, 0, 0)
#define CLI_DEVICE(flag, kind, key, meta, help) CLI_ROW(flag, kind, CLI_TO_DEVICE, key, meta, help, NULL, 0, 0)
#define CLI_SEARCH(flag, key, help) CLI_ROW(flag, CLI_SPEC, CLI_TO_SEARCH, key, "SPEC", help, NULL, 0, 0)
#define CLI_FORMAT(flag, fmt, help) \
    CLI_ROW(flag, CLI_SWITCH, CLI_TO_FORMAT, fmt, NULL, help, NULL, 0, CLI_GROUP_FORMAT)
#define CLI_END CLI_ROW(NULL, CLI_SWITCH, CLI_TO_ARGS, 0, NULL, NULL, NULL, 0, 0)

/* Conflict groups shared by the tables. */
enum { CLI_GROUP_MODEL = 1, CLI_GROUP_FORMAT = 2 };

/* Rows several subcommands share. */
#define CLI_ROWS_MODEL(preset_help, def)                                                               \
    CLI_ROW("--model", CLI_NAME, CLI_TO_ARGS, CLI_FIELD(model), "NAME", preset_help, def, 0,           \
            CLI_GROUP_MODEL),                                                                          \
        CLI_ROW("--hf-config", CLI_PATH, CLI_TO_ARGS, CLI_FIELD(hf_config), "FILE",                    \
                "the model from a Hugging Face config.json", NULL, 0, CLI_GROUP_MODEL),                 \
        CLI_ROW("--model-set", CLI_KEYVAL, CLI_TO_MODEL, 0, "KEY=VALUE",                               \
                "any model key, by name, applied over the model (--model-set num_layers=40)", NULL, 0, 0)
#define CLI_ROWS_DEVICE                                                                                \
    CLI_ROW("--gpu", CLI_NAME, CLI_TO_ARGS, CLI_FIELD(gpu), "NAME", "the GPU, a built-in preset",      \
            "h100-80", 0, 0),                                                                          \
        CLI_DEVICE("--gpu-memory-gib", CLI_GIB, MEM4D_DEVICE_MEMORY_BYTES, "X",                         \
                   "the GPU's memory in GiB, instead of the preset's"),                                \
        CLI_ROW("--device-file", CLI_PATH, CLI_TO_ARGS, CLI_FIELD(device_file), "FILE",                \
                "a device file (KEY = VALUE lines, see doc/perf.md), applied over --gpu", NULL, 0, 0), \
        CLI_ROW("--device-set", CLI_KEYVAL, CLI_TO_DEVICE, 0, "KEY=VALUE",                             \
                "any device key, by name, applied after --device-file", NULL, 0, 0)

/* At most this many model or device settings, and search constraints, per run. */
#define CLI_MAX_PENDING 32
#define CLI_MAX_OPTIONS 96 /* rows of one option table; cli_run() refuses a longer table */
#define CLI_MAX_SPECS 16
#define CLI_MAX_LAYOUT_KEYS 256 /* flags of cli_args.layout_given; lib/private.h asserts the layout keys fit */
#define CLI_MAX_LIST 64

/* A model or device value waiting for its object. */
struct cli_pending {
    const char *flag;
    size_t key;
    const char *text; /* set through the key's own parser when non-NULL */
    uint64_t value;   /* else this value */
};

/* plan: a knob constraint as given: [lo, hi] or a list. */
struct cli_spec {
    const char *flag;
    mem4d_layout_param key;
    bool is_list;
    uint64_t lo, hi;
    uint64_t list[CLI_MAX_LIST];
    size_t n;
};

/* Everything the parser fills; the subcommand reads it. */
struct cli_args {
    const struct cli_command *cmd;
    mem4d_layout *layout;  /* CLI_TO_LAYOUT rows, set as parsed */
    mem4d_layout *scratch; /* parses plan's SPEC values */
    /* CLI_TO_ARGS fields: */
    const char *model, *hf_config, *gpu, *svg, *device_file, *log, *output, *ds_config, *tt_config;
    const char *log_format, *measured[3]; /* calibrate: --log-format, --measured-step-s, -tflops, -tokens-per-s */
    uint64_t top, world_size;
    bool strict, all, cross_node, even_stages;
    enum cli_format format;
    /* Waiting for their objects: */
    struct cli_pending model_set[CLI_MAX_PENDING], device_set[CLI_MAX_PENDING];
    size_t n_model_set, n_device_set;
    const char *layer_pattern; /* --model-set layer_pattern=...; NULL: not given */
    struct cli_spec spec[CLI_MAX_SPECS];
    size_t n_spec;
    /* After "--", for subcommands with rest_usage: */
    int rest_argc;
    char **rest_argv;
    /* given[i]: row i of the option table was on the command line. */
    bool given[CLI_MAX_OPTIONS];
    /* layout_given[k]: layout key k was set by its flag or by --set (cli_layout_given;
     * room for the 87 keys of 0.2 and those appended after, checked against
     * the key count at compile time in lib/private.h) */
    bool layout_given[CLI_MAX_LAYOUT_KEYS];
};

/* One subcommand. */
struct cli_command {
    const char *name;
    const char *summary; /* one line, for `mem4d --help` */
    int (*run)(struct cli_args *args);
    const struct cli_option *options; /* ends with CLI_END */
    const char *about;       /* the help text after the options' synopsis (printf-free, plain) */
    const char *rest_usage;  /* non-NULL: takes arguments after "--" ("MEGATRON-ARGS...") */
};

/* What each cmd_NAME.c defines (and declares with this macro, as commands.c does). */
#define CLI_COMMAND(name)                                                                          \
    int cmd_##name(struct cli_args *args);                                                         \
    extern const struct cli_option cmd_##name##_options[];                                         \
    extern const char cmd_##name##_about[]

/* The command table (commands.c). The first three keep their places: the
 * fuzz corpus picks a subcommand by index. */
extern const struct cli_command cli_commands[];
extern const size_t cli_command_count;

/* Run one subcommand: argv[0] is its name. Parses, prints --help, runs. */
int cli_run(const struct cli_command *cmd, int argc, char **argv);

/* The whole tool: argv[0] is the program. Does not close stdout. */
int cli_main(int argc, char **argv);

/* The usage of a subcommand, generated from its table. */
void cli_usage(FILE *out, const struct cli_command *cmd);

/* Whether the flag `name` was given on the command line. */
bool cli_given(const struct cli_args *args, const char *name);
/* Layout key `key` was set on the command line, by its own flag (--framework)
 * or by --set KEY=VALUE, whatever the value (the key's default included). */
bool cli_layout_given(const struct cli_args *args, mem4d_layout_param key);

/* One line "mem4d: ..." on stderr. */
void cli_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* "FLAG TEXT is out of range (LO to HI)", or, for a value inside the range
 * that the key does not take, says so. text may be NULL. */
void cli_range_error(const char *flag, const char *text, uint64_t lo, uint64_t hi);

/* Which table a key is of, for cli_value_error(). */
enum cli_table { CLI_TABLE_MODEL, CLI_TABLE_LAYOUT, CLI_TABLE_DEVICE };

/* A value the key's setter refused as malformed: says what the key takes
 * (a whole number and its bounds, true or false, or its names). */
void cli_value_error(const char *flag, const char *text, enum cli_table table, int key, uint64_t min);

/* The model from --model (or `fallback` when neither --model nor
 * --hf-config is given; NULL: --model is required) with the pending model
 * settings applied; import warnings go to stderr. Prints the error. */
bool cli_open_model(const struct cli_args *args, const char *fallback, mem4d_model **out);

/* Apply the pending model settings to a model opened elsewhere. */
bool cli_apply_model_settings(const struct cli_args *args, mem4d_model *model);

/* The device from --gpu, then --device-file, then the pending device
 * settings; prints the error. */
bool cli_open_device(const struct cli_args *args, mem4d_device **out);

/* Each import warning as "mem4d: warning: ..." on stderr. */
void cli_print_warnings(const mem4d_import *imp);

/* text as it may be shown on a terminal, in JSON, CSV or SVG: control
 * characters (C0, DEL, C1), bidirectional and line-separator characters and
 * bytes that are not UTF-8 become \xNN or \uNNNN text; buf holds the result
 * (cut at a character when full), which is returned. */
const char *cli_printable(const char *text, char *buf, size_t size);

/* cli_printable() into one of a few rotating static buffers, for printf
 * arguments (the CLI is single-threaded). */
const char *cli_text(const char *text);

/* --ds-config and --torchtitan-config: each file's settings over the layout,
 * under the layout keys the command line set (a flag given, or --set). The
 * model gives torchtitan's pipeline split its layer count. Prints the error
 * naming the flag; false on failure. */
bool cli_apply_job_files(struct cli_args *a, const mem4d_model *model);

/* Bytes to GiB for display. */
double cli_gib(uint64_t bytes);

/* The per-stage table printed by `estimate` and `check`. */
void cli_print_report(FILE *out, const mem4d_model *model, const mem4d_layout *layout,
                      const mem4d_device *device, const mem4d_report *report);

/* The JSON object printed by `estimate --json`. */
void cli_print_report_json(FILE *out, const mem4d_model *model, const mem4d_report *report,
                           const mem4d_layout *layout, const mem4d_device *device);

/* The report's speed figures as a JSON object keyed by mem4d_metric_name(),
 * with "mfu_peak" naming the peak MFU is taken against ("bf16" or "fp8"), or
 * null when it has none. */
void cli_print_metrics_json(FILE *out, const mem4d_report *report, const mem4d_layout *layout,
                            const mem4d_device *device);

/* The precision whose peak MFU is taken against: "fp8" for an fp8 job on a
 * device with an fp8 peak, else "bf16" (MEM4D_METRIC_MFU_PEAK_FLOPS's rule). */
const char *cli_mfu_peak_name(const mem4d_layout *layout, const mem4d_device *device);

/* The attention kernel the report's job runs (MEM4D_INFO_ATTENTION_KERNEL):
 * its attention_kernel name, "fa3" ... "unfused" (softmax attention). */
const char *cli_attention_kernel(const mem4d_report *report);

/* Write a JSON string literal (quotes and escapes included). */
void cli_json_string(FILE *out, const char *s);

#endif
