/*
 * Helpers shared by the libFuzzer harnesses: turning bytes into argument
 * vectors, and the invariants every successful estimate must satisfy.
 * SPDX-License-Identifier: MIT
 */
#ifndef MEM4D_FUZZ_COMMON_H
#define MEM4D_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mem4d/mem4d.h>

/* libFuzzer's entry points; declared here to satisfy -Wmissing-prototypes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Most arguments one input is split into: far more than any real command
 * line needs, few enough that an input stays cheap to run. */
#define FUZZ_MAX_ARGS 96

/* A NUL-terminated, writable copy of the input plus pointers to its pieces.
 * Pieces are separated by NUL or newline bytes; empty pieces are kept only
 * when keep_empty is set (an empty argument is a legal, interesting input). */
struct fuzz_argv {
    char *buf;
    int argc;
    char *argv[FUZZ_MAX_ARGS + 1];
};

static inline void fuzz_split(struct fuzz_argv *a, const uint8_t *data, size_t size, int keep_empty)
{
    a->argc = 0;
    a->buf = malloc(size + 1);
    if (!a->buf)
        abort(); /* the fuzzer's own allocation: not a finding about the library */
    if (size)
        memcpy(a->buf, data, size);
    a->buf[size] = '\0';
    size_t start = 0;
    for (size_t i = 0; i <= size && a->argc < FUZZ_MAX_ARGS; i++) {
        if (i < size && a->buf[i] != '\0' && a->buf[i] != '\n')
            continue;
        a->buf[i] = '\0';
        if (i > start || keep_empty)
            a->argv[a->argc++] = a->buf + start;
        start = i + 1;
    }
    a->argv[a->argc] = NULL;
}

static inline void fuzz_argv_free(struct fuzz_argv *a)
{
    free(a->buf);
    a->buf = NULL;
}

/* A failed invariant is a bug in the library: stop the fuzzer with a line
 * that names it, so the crash report is self-explanatory. */
#define FUZZ_REQUIRE(cond, ...)                                                \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "invariant broken: %s: ", #cond);                  \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            abort();                                                           \
        }                                                                      \
    } while (0)

static inline uint64_t fuzz_term(const mem4d_report *r, uint32_t stage, mem4d_term term)
{
    uint64_t v = 0;
    mem4d_status st = mem4d_report_get(r, stage, term, &v);
    FUZZ_REQUIRE(st == MEM4D_OK, "report_get(stage %u, term %d) gave %d", stage, (int)term, (int)st);
    return v;
}

/* Sum of two byte counts that the library claims to have computed without
 * wrapping: a wrapped sum means the library reported parts that do not add up. */
static inline uint64_t fuzz_sum(uint64_t a, uint64_t b, uint32_t stage)
{
    uint64_t r;
    FUZZ_REQUIRE(!__builtin_add_overflow(a, b, &r), "stage %u: parts %llu + %llu overflow",
                 stage, (unsigned long long)a, (unsigned long long)b);
    return r;
}

/* The identities of the header's mem4d_term documentation, for every stage,
 * plus the peak and verdict bookkeeping. Called after every OK estimate. */
static inline void fuzz_check_report(const mem4d_report *r)
{
    FUZZ_REQUIRE(mem4d_report_status(r) == MEM4D_OK, "status %d", (int)mem4d_report_status(r));
    uint32_t n = mem4d_report_num_stages(r);
    FUZZ_REQUIRE(n >= 1, "an OK report has %u stages", n);
    uint64_t peak = 0;
    uint32_t peak_stage = 0;
    for (uint32_t s = 0; s < n; s++) {
        uint64_t w = fuzz_term(r, s, MEM4D_TERM_WEIGHTS), g = fuzz_term(r, s, MEM4D_TERM_GRADIENTS);
        uint64_t o = fuzz_term(r, s, MEM4D_TERM_OPTIMIZER), act = fuzz_term(r, s, MEM4D_TERM_ACTIVATIONS);
        uint64_t ov = fuzz_term(r, s, MEM4D_TERM_OVERHEAD), tot = fuzz_term(r, s, MEM4D_TERM_TOTAL);
        uint64_t buf = fuzz_term(r, s, MEM4D_TERM_BUFFERS), frag = fuzz_term(r, s, MEM4D_TERM_FRAGMENTATION);
        uint64_t fix = fuzz_term(r, s, MEM4D_TERM_FIXED);
        uint64_t alloc = fuzz_term(r, s, MEM4D_TERM_PEAK_ALLOCATED);
        uint64_t resv = fuzz_term(r, s, MEM4D_TERM_PEAK_RESERVED);
        uint64_t sum = fuzz_sum(fuzz_sum(fuzz_sum(fuzz_sum(w, g, s), o, s), act, s), ov, s);
        FUZZ_REQUIRE(sum == tot, "stage %u: total %llu != sum of parts %llu", s,
                     (unsigned long long)tot, (unsigned long long)sum);
        uint64_t osum = fuzz_sum(fuzz_sum(buf, frag, s), fix, s);
        FUZZ_REQUIRE(osum == ov, "stage %u: overhead %llu != buffers+fragmentation+fixed %llu", s,
                     (unsigned long long)ov, (unsigned long long)osum);
        FUZZ_REQUIRE(fuzz_sum(fuzz_sum(alloc, frag, s), fix, s) == tot,
                     "stage %u: peak_allocated %llu + fragmentation + fixed != total", s,
                     (unsigned long long)alloc);
        FUZZ_REQUIRE(fuzz_sum(alloc, frag, s) == resv, "stage %u: peak_reserved %llu wrong", s,
                     (unsigned long long)resv);
        if (mem4d_report_mode(r) == MEM4D_MODE_PAPER)
            FUZZ_REQUIRE(ov == 0, "paper mode with overhead %llu", (unsigned long long)ov);
        if (s == 0 || tot > peak) {
            peak = tot;
            peak_stage = s;
        }
    }
    FUZZ_REQUIRE(mem4d_report_peak_bytes(r) == peak, "peak_bytes %llu, max total %llu",
                 (unsigned long long)mem4d_report_peak_bytes(r), (unsigned long long)peak);
    FUZZ_REQUIRE(mem4d_report_peak_stage(r) == peak_stage, "peak_stage %u, first max at %u",
                 mem4d_report_peak_stage(r), peak_stage);
    mem4d_verdict v = mem4d_report_verdict(r);
    uint64_t dev = mem4d_report_device_bytes(r);
    FUZZ_REQUIRE((v == MEM4D_VERDICT_OOM) == (peak > dev), "verdict %d for peak %llu on %llu bytes",
                 (int)v, (unsigned long long)peak, (unsigned long long)dev);
}

/* After a layout reader ran: its messages are there; a failure says why
 * (unless the reader is not built: no_reader) and leaves the layout as it
 * was; a layout it accepted estimates on an 80 GiB GPU, or says why not. */
static inline void fuzz_check_layout_import(mem4d_status st, mem4d_status no_reader, const mem4d_import *imp,
                                            const mem4d_layout *l, const mem4d_layout *before, const mem4d_model *m)
{
    FUZZ_REQUIRE(st != MEM4D_E_IO && st != MEM4D_END, "buffer import gave %d", (int)st);
    FUZZ_REQUIRE(mem4d_import_message(imp) != NULL, "NULL message");
    for (size_t i = 0; i < mem4d_import_warning_count(imp); i++)
        FUZZ_REQUIRE(mem4d_import_warning(imp, i) != NULL, "NULL warning %zu", i);
    if (st != MEM4D_OK) {
        if (st != no_reader)
            FUZZ_REQUIRE(mem4d_import_message(imp)[0] != '\0', "import failed with %d, no message", (int)st);
        for (size_t k = 0; k < mem4d_layout_param_count(); k++) {
            uint64_t a = 0, b = 0;
            (void)mem4d_layout_get(l, (mem4d_layout_param)k, &a);
            (void)mem4d_layout_get(before, (mem4d_layout_param)k, &b);
            FUZZ_REQUIRE(a == b, "failed import changed layout key %zu", k);
        }
        FUZZ_REQUIRE(mem4d_layout_get_stage_layers(l, NULL, 0) == mem4d_layout_get_stage_layers(before, NULL, 0),
                     "failed import changed the stage table");
        return;
    }
    mem4d_device *d = NULL;
    mem4d_report *r = NULL;
    FUZZ_REQUIRE(mem4d_device_new(&d) == MEM4D_OK && mem4d_report_new(&r) == MEM4D_OK, "new");
    (void)mem4d_device_set(d, MEM4D_DEVICE_MEMORY_BYTES, UINT64_C(80) << 30);
    if (mem4d_estimate(m, l, d, r) == MEM4D_OK)
        fuzz_check_report(r);
    else
        FUZZ_REQUIRE(mem4d_report_message(r)[0] != '\0', "estimate failed without a message");
    mem4d_report_free(r);
    mem4d_device_free(d);
}

#endif
