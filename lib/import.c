/*
 * Import: the mem4d_import handle (its message and bounded warnings) and the
 * world size a launcher gives a job (explicit, WORLD_SIZE, SLURM_*). The
 * readers live beside it: import_megatron.c (Megatron-LM argument vectors,
 * flags in megatron_flags.c) and import_hf.c (Hugging Face config.json).
 *
 * Every reader works on copies of the caller's model and layout and writes
 * them back only on success, so a failed import leaves the handles as they
 * were.
 * SPDX-License-Identifier: MIT
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"

/* ------------------------------------------------------------------------ */
/* Handle and messages                                                       */

mem4d_status m4d_imp_read_file(mem4d_import *imp, const char *path, const char *doc, char **buf, size_t *size)
{
    return m4d_read_file(path, doc, M4D_IMP_MAX_FILE, buf, size, imp->msg, sizeof imp->msg);
}

mem4d_status mem4d_import_new(mem4d_import **out)
{
    if (!out)
        return MEM4D_E_INVALID_ARG;
    *out = calloc(1, sizeof **out);
    return *out ? MEM4D_OK : MEM4D_E_NOMEM;
}

void mem4d_import_free(mem4d_import *import)
{
    free(import);
}

void m4d_imp_reset(mem4d_import *imp)
{
    imp->msg[0] = '\0';
    imp->nwarn = 0;
    imp->dropped = 0;
    imp->world_source = MEM4D_WORLD_NONE;
}

mem4d_status m4d_imp_fail(mem4d_import *imp, mem4d_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    m4d_vmsg(imp->msg, sizeof imp->msg, fmt, ap);
    va_end(ap);
    return st;
}

void m4d_imp_warn(mem4d_import *imp, const char *fmt, ...)
{
    /* The last slot is kept for the "n more" summary written by m4d_imp_done(). */
    if (imp->nwarn >= M4D_IMP_MAX_WARN - 1) {
        imp->dropped++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    m4d_vmsg(imp->warn[imp->nwarn], M4D_MSG_MAX, fmt, ap);
    va_end(ap);
    imp->nwarn++;
}

void m4d_imp_done(mem4d_import *imp)
{
    if (imp->dropped) {
        m4d_msg(imp->warn[M4D_IMP_MAX_WARN - 1], M4D_MSG_MAX, "%zu further warnings were not kept",
                imp->dropped);
        imp->nwarn = M4D_IMP_MAX_WARN;
    }
}

const char *mem4d_import_message(const mem4d_import *import)
{
    return import ? import->msg : "";
}

size_t mem4d_import_warning_count(const mem4d_import *import)
{
    return import ? import->nwarn : 0;
}

const char *mem4d_import_warning(const mem4d_import *import, size_t index)
{
    if (!import || index >= import->nwarn)
        return NULL;
    return import->warn[index];
}

mem4d_status mem4d_import_set_llama_like(mem4d_import *import, int enable)
{
    if (!import)
        return MEM4D_E_INVALID_ARG;
    import->llama_like = enable != 0;
    return MEM4D_OK;
}

mem4d_world_source mem4d_import_world_source(const mem4d_import *import)
{
    return import ? import->world_source : MEM4D_WORLD_NONE;
}

mem4d_status m4d_imp_set(mem4d_import *imp, const struct m4d_param_desc *table, size_t n,
                         uint64_t *v, int key, uint64_t value, const char *what)
{
    mem4d_status st = m4d_param_set(table, n, v, key, value);
    if (st == MEM4D_E_RANGE)
        return m4d_imp_fail(imp, st, "%s %llu is outside the accepted range [%llu, %llu]", what,
                            (unsigned long long)value, (unsigned long long)table[key].min,
                            (unsigned long long)table[key].max);
    if (st != MEM4D_OK)
        return m4d_imp_fail(imp, st, "%s could not be set", what);
    return MEM4D_OK;
}

/* ------------------------------------------------------------------------ */
/* World size                                                                */

static const char *env_get(const char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (; envp && *envp; envp++)
        if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
            return *envp + n + 1;
    return NULL;
}

/* A variable's leading count: SLURM writes "8(x2)" or "8,4" for per-node
 * counts; the first figure is the one of the first node. */
static mem4d_status env_count(mem4d_import *imp, const char *name, const char *text, bool lead_only,
                              uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    if (!isdigit((unsigned char)text[0]))
        return m4d_imp_fail(imp, MEM4D_E_PARSE, "%s='%s' is not a count of processes", name, text);
    unsigned long long v = strtoull(text, &end, 10);
    if (errno == ERANGE || v == 0)
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "%s='%s' is not a usable count", name, text);
    if (*end != '\0' && !(lead_only && (*end == '(' || *end == ',')))
        return m4d_imp_fail(imp, MEM4D_E_PARSE, "%s='%s' is not a count of processes", name, text);
    *out = (uint64_t)v;
    return MEM4D_OK;
}

/* The caching allocator's settings, "key:value" pairs separated by commas
 * (PyTorch c10/cuda/CUDAAllocatorConfig; PYTORCH_ALLOC_CONF is the newer,
 * device-generic name and wins): expandable_segments True or False. */
/* The keys PyTorch's CUDA allocator knows: AcceleratorAllocatorConfig's
 * (c10/core/AllocatorConfig.h, keys_) and CUDAAllocatorConfig's
 * (c10/cuda/CUDAAllocatorConfig.cpp, parseArgs), pytorch/pytorch@b944315b. */
static const char *const alloc_keys[] = {
    "max_split_size_mb", "max_non_split_rounding_mb", "garbage_collection_threshold", "roundup_power2_divisions",
    "expandable_segments", "pinned_use_background_threads", "backend", "release_lock_on_cudamalloc",
    "release_lock_on_hipmalloc", "pinned_use_cuda_host_register", "pinned_use_hip_host_register",
    "pinned_num_register_threads", "pinned_reserve_segment_size_mb", "graph_capture_record_stream_reuse",
    "per_process_memory_fraction"};

/* PYTORCH_ALLOC_CONF (or, when it is absent, PYTORCH_CUDA_ALLOC_CONF) read
 * the way PyTorch reads it (c10::CachingAllocator::ConfigTokenizer and
 * AcceleratorAllocatorConfig::parseArgs in c10/core/AllocatorConfig.{h,cpp},
 * CUDAAllocatorConfig::parseArgs in c10/cuda/CUDAAllocatorConfig.cpp,
 * pytorch/pytorch@0ac71663 and @b944315b): ',' ':' '[' ']' are tokens of
 * their own and white space is dropped everywhere, so "expandable_segments:
 * True" is a key, ':', "True"; the pairs are "key:value" or "key:[...]"
 * separated by ','; a key given twice takes its last value; a boolean is
 * exactly True or False. A key PyTorch does not know makes it refuse the
 * job: a warning here, as a newer PyTorch may know it. */
mem4d_status m4d_imp_alloc_conf(mem4d_import *imp, const char *const *envp, mem4d_layout *layout)
{
    const char *name = "PYTORCH_ALLOC_CONF", *conf = env_get(envp, name);
    if (!conf) {
        name = "PYTORCH_CUDA_ALLOC_CONF";
        conf = env_get(envp, name);
    }
    if (!conf)
        return MEM4D_OK;
    /* Tokens, NUL-separated in one buffer: at most one per byte. */
    size_t n = strlen(conf), nt = 0;
    char *buf = malloc(2 * n + 1);
    const char **tok = malloc((n + 1) * sizeof *tok);
    if (!buf || !tok) {
        free(buf);
        free(tok);
        return m4d_imp_fail(imp, MEM4D_E_NOMEM, "out of memory reading %s", name);
    }
    char *w = buf;
    bool open_word = false;
    for (const char *c = conf; *c; c++) {
        if (*c == ',' || *c == ':' || *c == '[' || *c == ']') {
            if (open_word)
                *w++ = '\0';
            tok[nt++] = w;
            *w++ = *c;
            *w++ = '\0';
            open_word = false;
        } else if (!isspace((unsigned char)*c)) {
            if (!open_word)
                tok[nt++] = w;
            *w++ = *c;
            open_word = true;
        }
    }
    if (open_word)
        *w = '\0';
    mem4d_status st = MEM4D_OK;
    int expandable = -1;
    for (size_t i = 0; i < nt && st == MEM4D_OK; i++) {
        const char *key = tok[i];
        if (i + 2 >= nt || strcmp(tok[i + 1], ":") != 0) {
            st = m4d_imp_fail(imp, MEM4D_E_PARSE, "%s: '%.40s' needs ':' and a value (key:value, as PyTorch reads it)",
                              name, key);
            break;
        }
        i += 2;
        if (strcmp(tok[i], "[") == 0) {
            while (i < nt && strcmp(tok[i], "]") != 0)
                i++;
            if (i == nt) {
                st = m4d_imp_fail(imp, MEM4D_E_PARSE, "%s: the list of '%.40s' has no closing ']'", name, key);
                break;
            }
        }
        bool known = false;
        for (size_t k = 0; k < sizeof alloc_keys / sizeof *alloc_keys; k++)
            known = known || strcmp(key, alloc_keys[k]) == 0;
        if (!known)
            m4d_imp_warn(imp, "%s: '%.40s' is not a key PyTorch's CUDA allocator knows (it refuses the job with "
                         "\"Unrecognized key\"); ignored", name, key);
        if (strcmp(key, "backend") == 0 && strcmp(tok[i], "cudaMallocAsync") == 0)
            m4d_imp_warn(imp, "%s: backend:cudaMallocAsync is CUDA's own pool allocator; the reserved memory and "
                         "fragmentation are modelled for PyTorch's native caching allocator", name);
        if (strcmp(key, "expandable_segments") == 0) {
            if (strcmp(tok[i], "True") != 0 && strcmp(tok[i], "False") != 0) {
                st = m4d_imp_fail(imp, MEM4D_E_PARSE, "%s: expandable_segments:%.40s is not True or False (PyTorch "
                                  "takes these two words only)", name, tok[i]);
                break;
            }
            expandable = strcmp(tok[i], "True") == 0;
        }
        if (i + 1 < nt && strcmp(tok[++i], ",") != 0)
            st = m4d_imp_fail(imp, MEM4D_E_PARSE, "%s: '%.40s' after the value of '%.40s' where ',' belongs", name,
                              tok[i], key);
    }
    free(buf);
    free(tok);
    if (st != MEM4D_OK || expandable < 0)
        return st;
    return SET_L(layout, MEM4D_LAYOUT_EXPANDABLE_SEGMENTS, (uint64_t)expandable, name);
}

mem4d_status m4d_imp_world(mem4d_import *imp, const char *const *envp, uint64_t explicit_world,
                           uint64_t *world)
{
    const char *s;
    *world = 0;
    if (explicit_world) {
        *world = explicit_world;
        imp->world_source = MEM4D_WORLD_EXPLICIT;
    } else if ((s = env_get(envp, "WORLD_SIZE"))) {
        TRY(env_count(imp, "WORLD_SIZE", s, false, world));
        imp->world_source = MEM4D_WORLD_ENV_WORLD_SIZE;
    } else if ((s = env_get(envp, "SLURM_NTASKS"))) {
        TRY(env_count(imp, "SLURM_NTASKS", s, false, world));
        imp->world_source = MEM4D_WORLD_ENV_SLURM_NTASKS;
    } else if ((s = env_get(envp, "SLURM_JOB_NUM_NODES"))) {
        uint64_t nodes, per;
        const char *g = env_get(envp, "SLURM_GPUS_ON_NODE");
        const char *gname = "SLURM_GPUS_ON_NODE";
        if (!g) {
            g = env_get(envp, "SLURM_NTASKS_PER_NODE");
            gname = "SLURM_NTASKS_PER_NODE";
        }
        if (!g)
            return MEM4D_OK; /* nodes alone say nothing about GPUs */
        TRY(env_count(imp, "SLURM_JOB_NUM_NODES", s, false, &nodes));
        TRY(env_count(imp, gname, g, true, &per));
        if (!m4d_mul(nodes, per, world))
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "SLURM_JOB_NUM_NODES x %s overflows", gname);
        imp->world_source = MEM4D_WORLD_ENV_SLURM_NODES;
    }
    return MEM4D_OK;
}
