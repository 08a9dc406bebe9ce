/*
 * The plugin's configuration file (mem4d.conf beside slurm.conf): read once
 * when the plugin loads, then only read. See README.md for the format.
 * SPDX-License-Identifier: MIT
 */
#ifndef MEM4D_SLURM_CONF_H
#define MEM4D_SLURM_CONF_H

#include <stdbool.h>
#include <stddef.h>

#include <mem4d/mem4d.h>

struct m4s_named_device {
    char *name;           /* partition, gres type or device name */
    char *label;          /* the device's name as the file spells it */
    mem4d_device *device; /* owned */
};

struct m4s_map {
    struct m4s_named_device *v;
    size_t n, cap;
};

struct m4s_config {
    bool reject_unreadable; /* policy = reject */
    bool strict;            /* a "tight" verdict is rejected too */
    bool propose;           /* search a layout that fits */
    bool hf_config;         /* read --hf-config files */
    char **scripts;         /* NULL-terminated training script names */
    struct m4s_named_device default_device; /* device NULL when not set */
    struct m4s_map devices, partitions, gres;
};

/* Parse a configuration text; @p name names it in messages. On failure
 * returns -1 and writes "NAME:LINE: sentence" into @p err. */
int m4s_config_parse(const char *text, size_t len, const char *name, struct m4s_config **out,
                     char *err, size_t err_size);

/* Read and parse a file. A missing file gives the defaults (*missing set). */
int m4s_config_load(const char *path, struct m4s_config **out, bool *missing, char *err, size_t err_size);

void m4s_config_free(struct m4s_config *conf);

/* The device of a job: its GPU type's (gres.TYPE, or a device.TYPE), else
 * its partition's, else the default; NULL when none. */
const struct m4s_named_device *m4s_config_device(const struct m4s_config *conf, const char *gpu_type,
                                                 const char *partition);

#endif
