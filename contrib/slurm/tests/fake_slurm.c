/*
 * The fakes of fake_slurm.h. slurm_xfree() aborts on a block that did not
 * come from slurm_xstrdup(), as SLURM's xfree would corrupt its heap.
 * SPDX-License-Identifier: MIT
 */
#include "fake_slurm.h"

#include <slurm/spank.h> /* slurm_info() and friends, with their format attributes */

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *fake_slurm_conf_dir = ".";
char fake_slurm_last_error[2048], fake_slurm_last_info[2048];
long fake_slurm_live_blocks;
int fake_slurm_verbose;

#define XMAGIC 0x42u

/* The plugin's view of these (declared there, defined here). */
char *slurm_xstrdup(const char *str);
void slurm_xfree(void **item);
char *slurm_get_extra_conf_path(char *conf_name);
void slurm_free_job_desc_msg(job_desc_msg_t *msg);
job_desc_msg_t *copy_job_record_to_job_desc(struct job_record *job_ptr);

/* SLURM's blocks: two size_t in front (magic, size), as src/common/xmalloc.c. */
static void *xalloc(size_t n)
{
    size_t *p = malloc(2 * sizeof(size_t) + n);
    if (!p)
        abort();
    p[0] = XMAGIC;
    p[1] = n;
    fake_slurm_live_blocks++;
    return p + 2;
}

char *slurm_xstrdup(const char *str)
{
    if (!str)
        return NULL;
    size_t n = strlen(str) + 1;
    char *s = xalloc(n);
    memcpy(s, str, n);
    return s;
}

void slurm_xfree(void **item)
{
    if (!*item)
        return;
    size_t *p = (size_t *)*item - 2;
    if (p[0] != XMAGIC) {
        fprintf(stderr, "fake slurm: xfree of a block SLURM did not allocate\n");
        abort();
    }
    p[0] = 0;
    free(p);
    fake_slurm_live_blocks--;
    *item = NULL;
}

void fake_xfree(char **p)
{
    slurm_xfree((void **)p);
}

char *slurm_get_extra_conf_path(char *conf_name)
{
    size_t n = strlen(fake_slurm_conf_dir) + strlen(conf_name) + 2;
    char *buf = malloc(n);
    if (!buf)
        abort();
    snprintf(buf, n, "%s/%s", fake_slurm_conf_dir, conf_name);
    char *s = slurm_xstrdup(buf);
    free(buf);
    return s;
}

__attribute__((format(printf, 3, 0))) static void vlog(char *into, const char *level, const char *fmt, va_list ap)
{
    char line[2048];
    vsnprintf(line, sizeof line, fmt, ap);
    if (into)
        memcpy(into, line, sizeof line);
    if (fake_slurm_verbose)
        fprintf(stderr, "%s: %s\n", level, line);
}

void slurm_info(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(fake_slurm_last_info, "info", fmt, ap);
    va_end(ap);
}

void slurm_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(fake_slurm_last_error, "error", fmt, ap);
    va_end(ap);
}

void slurm_debug(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(NULL, "debug", fmt, ap);
    va_end(ap);
}

/* SLURM 22.05's buf_t, as the plugin reads it. */
struct fake_buf {
    uint32_t magic;
    char *head;
    uint32_t size;
    uint32_t processed;
    bool mmaped;
};

job_desc_msg_t *copy_job_record_to_job_desc(struct job_record *job_ptr)
{
    const struct fake_job *j = (const struct fake_job *)job_ptr;
    job_desc_msg_t *d = malloc(sizeof *d);
    struct fake_buf *b = calloc(1, sizeof *b);
    if (!d || !b)
        abort();
    *d = j->desc;
    b->magic = 0x42554545u;
    b->size = (uint32_t)strlen(j->script) + 1; /* SLURM stores the NUL */
    b->head = malloc(b->size);
    if (!b->head)
        abort();
    memcpy(b->head, j->script, b->size);
    d->script_buf = b;
    /* As get_job_env(): the strings in one SLURM block, the array another. */
    static const char env[] = "HOME=/home/u\0TP=8\0";
    char *block = xalloc(sizeof env);
    memcpy(block, env, sizeof env);
    d->environment = xalloc(2 * sizeof(char *));
    d->environment[0] = block;
    d->environment[1] = block + strlen(block) + 1;
    d->env_size = 2;
    return d;
}

void slurm_free_job_desc_msg(job_desc_msg_t *msg)
{
    if (!msg)
        return;
    /* As SLURM's: every environment string is freed on its own. */
    for (uint32_t i = 0; msg->environment && i < msg->env_size; i++)
        slurm_xfree((void **)&msg->environment[i]);
    slurm_xfree((void **)&msg->environment);
    struct fake_buf *b = msg->script_buf;
    if (b)
        free(b->head);
    free(b);
    free(msg);
}

void fake_job_desc_init(job_desc_msg_t *jd)
{
    memset(jd, 0, sizeof *jd);
    jd->min_nodes = NO_VAL;
    jd->max_nodes = NO_VAL;
    jd->num_tasks = NO_VAL;
    jd->ntasks_per_node = NO_VAL16;
    jd->user_id = NO_VAL;
}
