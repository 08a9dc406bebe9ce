/*
 * Helpers shared by the Check suites.
 * SPDX-License-Identifier: MIT
 */
#ifndef MEM4D_TESTUTIL_H
#define MEM4D_TESTUTIL_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>

#include <mem4d/mem4d.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

/* Run a suite and turn its result into an exit status. */
int tu_run(Suite *s);

/* Preset handles that abort the test on failure. */
mem4d_model *tu_model(const char *preset);
mem4d_device *tu_device(const char *preset);

/* Qwen3-235B-A22B's layer (Megatron-MoE-ModelZoo
 * model_configs/benchmarking/Qwen3-235B-A22B.yaml) with `layers` layers. */
mem4d_model *tu_qwen3(const char *layers);

/* A device's value of the key named `key` (aborts the test on failure). */
uint64_t tu_device_get(const mem4d_device *d, const char *key);

/* A layout from "key=value" pairs, NULL-terminated. */
mem4d_layout *tu_layout(const char *first, ...);

/* A new report of an estimate that must succeed (the test fails with the
 * report's message otherwise); the caller frees it. */
mem4d_report *tu_estimate(const mem4d_model *m, const mem4d_layout *l, const mem4d_device *d);

/* Split a CSV line in place at commas into at most max fields; a field may
 * be double-quoted (no escaped quotes inside). The line's newline is
 * dropped. Returns the number of fields. */
int tu_csv_split(char *line, char **fields, int max);

/* Write text to a new file named from path ("...XXXXXX", as mkstemp()
 * takes it, filled in); aborts the test on failure. The caller removes it. */
void tu_temp_file(char *path, const char *text);

/* Median of n > 0 values (sorts them). */
double tu_median(double *v, size_t n);

#endif
