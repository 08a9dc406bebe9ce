/*
 * Calibration: read Megatron-LM training logs (the arguments block, the
 * iteration lines, the memory lines), torchtitan's and nanotron's step lines
 * and measured figures without a log; fit the speed constants the runs can
 * identify to the measured step times and the memory model's fixed and
 * allocator offsets to the measured peaks. Formats are those of Megatron-LM's
 * megatron/training/training.py (training_log), arguments.py (_print_args)
 * and utils/common_utils.py (report_memory) at NVIDIA/Megatron-LM@d98e8a64;
 * doc/perf.md, "Calibration".
 * SPDX-License-Identifier: MIT
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"

#define CAL_MAX_LOGS 32

/* What a run's measured speed is, until the fit turns it into a step time
 * (every one is exactly inverse to the step of the same job). */
enum cal_kind { CAL_STEP, CAL_TFLOPS, CAL_TOKENS, CAL_TOKENS_PER_GPU };

struct cal_log {
    struct mem4d_model model;
    struct mem4d_layout layout;
    enum cal_kind kind;
    double meas;                  /* the measured figure of that kind */
    double step_s, tflops;        /* medians of the iteration lines (first left out) */
    bool have_tflops, have_mem;
    uint64_t mem_rank, mem_stage;
    double max_alloc, max_res;    /* bytes, of mem_rank's last memory line */
    double fig[M4D_NCALFIG];
    bool fig_set[M4D_NCALFIG];
};

/* The speed constants a fit may choose from (mem4d_calibration_constant()
 * lists them), and the candidates the choice is made among: those, and the
 * compute level (CAL_LEVEL: the bf16 and fp8 GEMM efficiencies by one
 * factor). */
enum cal_cand { /* the candidates' indices in cal_consts and cal->chosen */
    CAL_MATMUL,
    CAL_FP8,
    CAL_ATTENTION,
    CAL_OVERHEAD,
    CAL_COMM,       /* the links inside a node */
    CAL_LOAD_SPREAD,
    CAL_NETWORK,    /* the links between nodes */
    CAL_LEVEL,
    CAL_NCAND
};
#define CAL_NCONST CAL_LEVEL /* the constants: every candidate before the level */

struct mem4d_calibration {
    struct cal_log log[CAL_MAX_LOGS];
    size_t n;
    bool fitted;
    int chosen[CAL_NCAND];  /* by cal_consts index: 1 fitted, 0 left */
    double level_ratio;     /* fp8 over bf16 GEMM efficiency, which the compute level keeps */
    /* choose_constants()'s scratch: each candidate's moves of the runs' log
     * steps (J) and the chosen ones' orthonormal basis (Q). The handle's
     * own, as distinct calibrations may fit on different threads at once. */
    double J[CAL_NCAND][CAL_MAX_LOGS], Q[CAL_NCAND][CAL_MAX_LOGS];
    mem4d_report *report;
    char msg[M4D_MSG_MAX];
};

mem4d_status mem4d_calibration_new(mem4d_calibration **out)
{
    if (!out)
        return MEM4D_E_INVALID_ARG;
    *out = calloc(1, sizeof **out);
    if (!*out)
        return MEM4D_E_NOMEM;
    if (mem4d_report_new(&(*out)->report) != MEM4D_OK) {
        free(*out);
        *out = NULL;
        return MEM4D_E_NOMEM;
    }
    return MEM4D_OK;
}

void mem4d_calibration_free(mem4d_calibration *cal)
{
    if (!cal)
        return;
    mem4d_report_free(cal->report);
    free(cal);
}

const char *mem4d_calibration_message(const mem4d_calibration *cal)
{
    return cal ? cal->msg : "";
}

size_t mem4d_calibration_log_count(const mem4d_calibration *cal)
{
    return cal ? cal->n : 0;
}

/* --- reading a log -------------------------------------------------------------- */

static mem4d_status fail(mem4d_calibration *cal, mem4d_status st, size_t lineno, const char *what)
{
    if (lineno)
        m4d_msg(cal->msg, sizeof cal->msg, "line %zu: %s", lineno, what);
    else
        m4d_msg(cal->msg, sizeof cal->msg, "%s", what);
    return st;
}

/* Where the value after the first `label` in the line starts (its spaces
 * skipped), or NULL when the label is absent. */
static const char *after_label(const char *line, const char *label)
{
    const char *p = strstr(line, label);
    if (!p)
        return NULL;
    for (p += strlen(label); *p == ' '; p++)
        ;
    return p;
}

/* The number after `label` in the line, or false when the label is absent;
 * *bad when it is there but no number follows. */
static bool number_after(const char *line, const char *label, double *v, bool *bad)
{
    const char *p = after_label(line, label);
    if (!p)
        return false;
    char *end = NULL;
    double x = m4d_strtod(p, &end);
    if (end == p || !isfinite(x)) { /* a sign is read: the callers' ranges refuse it with the bound */
        *bad = true;
        return false;
    }
    *v = x;
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[first..n), v reordered; n > first. */
static double median_from(double *v, size_t n, size_t first)
{
    qsort(v + first, n - first, sizeof *v, cmp_double);
    size_t k = n - first;
    return k % 2 ? v[first + k / 2] : (v[first + k / 2 - 1] + v[first + k / 2]) / 2;
}

/* A number as nanotron's human_format() writes it: three significant
 * digits and a K, M, B, T, P or E for each factor of 1000 ("10.2K"); and
 * as torchtitan writes tps, with thousands separators ("4,376"). False when
 * `label` is absent; *bad when no number follows it. */
static bool scaled_after(const char *line, const char *label, double *v, bool *bad)
{
    const char *p = after_label(line, label);
    if (!p)
        return false;
    char digits[64];
    size_t n = 0;
    for (; (*p >= '0' && *p <= '9') || *p == '.' || *p == ','; p++)
        if (*p != ',' && n + 1 < sizeof digits)
            digits[n++] = *p;
    digits[n] = '\0';
    char *end = NULL;
    double x = m4d_strtod(digits, &end);
    if (n == 0 || *end != '\0') {
        *bad = true;
        return false;
    }
    static const char suffix[] = "KMBTPE";
    const char *k = *p ? strchr(suffix, *p) : NULL;
    for (const char *q = suffix; k && q <= k; q++)
        x *= 1000;
    *v = x;
    return true;
}

/* A line with ANSI colour sequences (ESC [ ... m) removed, in place. */
static void strip_ansi(char *line)
{
    char *w = line;
    for (const char *r = line; *r; r++) {
        if (*r == '\033' && r[1] == '[') {
            r += 2;
            while (*r && !(*r >= '@' && *r <= '~'))
                r++;
            if (!*r)
                break;
            continue;
        }
        *w++ = *r;
    }
    *w = '\0';
}

/* Growing arrays of one log read: no fixed count drops data. */
struct strings {
    char **v;
    size_t n, cap;
};

static bool strings_add(struct strings *a, const char *s, size_t len)
{
    if (a->n + 1 >= a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        char **v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return false;
        a->v = v;
        a->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return false;
    memcpy(copy, s, len);
    copy[len] = '\0';
    a->v[a->n++] = copy;
    a->v[a->n] = NULL;
    return true;
}

static void strings_free(struct strings *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
}

struct doubles {
    double *v;
    size_t n, cap;
};

static bool doubles_add(struct doubles *a, double x)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 256;
        double *v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return false;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return true;
}

struct scan {
    struct doubles steps, tfl;
    bool in_args, args_seen;
    const char *prefix; /* what precedes the arguments header on its line ("[default0]:", "0: ") */
    size_t prefix_len;
    struct strings args; /* the block as Megatron-LM flags */
    uint64_t world;
    bool world_seen;
    bool tp_overlap;
    bool have_mem;
    uint64_t mem_rank;
    size_t mem_line;
    double max_alloc, max_res;
};

/* "  name ....... value": _print_args() of Megatron-LM's arguments.py
 * writes two blanks, the name, a blank, 48 - len(name) dots (none for a
 * name of 48 characters or more), a blank and str(value), which may be
 * empty, hold blanks, or be a list; a trailing blank may have been
 * stripped by whatever stored the log. */
static bool split_argument(const char *line, const char **name, size_t *nl, const char **val)
{
    if (line[0] != ' ' || line[1] != ' ')
        return false;
    const char *p = line + 2;
    size_t n = 0;
    while (p[n] == '_' || (p[n] >= 'a' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z') || (p[n] >= '0' && p[n] <= '9'))
        n++;
    if (n == 0 || (p[n] != ' ' && p[n] != '\0'))
        return false;
    const char *q = p + n;
    if (*q == ' ')
        q++;
    while (*q == '.')
        q++;
    if (*q == ' ')
        q++;
    else if (*q != '\0')
        return false;
    *name = p;
    *nl = n;
    *val = q;
    return true;
}

/* The member of a Python enum as str() or repr() prints it:
 * "AttnBackend.auto", "<CudaGraphModule.attn: 1>" -> "auto", "attn". */
static bool enum_member(const char *v, size_t len, const char **m, size_t *ml)
{
    const char *end = v + len;
    if (len >= 2 && v[0] == '<' && end[-1] == '>') {
        v++;
        const char *colon = memchr(v, ':', (size_t)(end - v));
        end = colon ? colon : end - 1;
    }
    if (v >= end || !(*v >= 'A' && *v <= 'Z'))
        return false;
    const char *dot = memchr(v, '.', (size_t)(end - v));
    if (!dot || dot + 1 >= end)
        return false;
    for (const char *c = v; c < end; c++)
        if (c != dot && !(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')))
            return false;
    *m = dot + 1;
    *ml = (size_t)(end - dot - 1);
    return true;
}

/* torch dtypes back to the words of the flags: validate_args() maps
 * 'fp32', 'bf16', 'fp16', 'fp8' and 'auto' to torch.float32, torch.bfloat16,
 * torch.float16, torch.uint8 and None (arguments.py, "Map string data-type
 * to torch.dtype", NVIDIA/Megatron-LM@d98e8a64). */
static const char *dtype_word(const char *v)
{
    static const char *const map[][2] = {
        {"torch.float32", "fp32"}, {"torch.bfloat16", "bf16"}, {"torch.float16", "fp16"}, {"torch.uint8", "fp8"}};
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (!strcmp(v, map[i][0]))
            return map[i][1];
    return NULL;
}

static bool has_choice(const struct m4d_megatron_flag *row, const char *word)
{
    for (size_t i = 0; row->choices && row->choices[i]; i++)
        if (!strcmp(row->choices[i], word))
            return true;
    return false;
}

/* One element of a printed list, without its quotes or enum class. */
static bool add_element(struct strings *a, const char *b, const char *e)
{
    while (b < e && *b == ' ')
        b++;
    while (e > b && e[-1] == ' ')
        e--;
    const char *m;
    size_t ml;
    if (e - b >= 2 && (*b == '\'' || *b == '"') && e[-1] == *b)
        return strings_add(a, b + 1, (size_t)(e - b - 2));
    if (enum_member(b, (size_t)(e - b), &m, &ml))
        return strings_add(a, m, ml);
    return strings_add(a, b, (size_t)(e - b));
}

/* A list's elements, split at the commas outside quotes and brackets. */
static bool add_elements(struct strings *a, const char *v, size_t len)
{
    const char *b = v + 1, *end = v + len - 1;
    int depth = 0;
    char quote = 0;
    for (const char *c = b; c <= end; c++) {
        if (c == end || (!quote && depth == 0 && *c == ',')) {
            const char *x = b;
            while (x < c && *x == ' ')
                x++;
            if (x < c && !add_element(a, b, c))
                return false;
            b = c + 1;
        } else if (quote) {
            if (*c == '\\' && c + 1 < end)
                c++;
            else if (*c == quote)
                quote = 0;
        } else if (*c == '\'' || *c == '"') {
            quote = *c;
        } else if (*c == '[' || *c == '(' || *c == '<' || *c == '{') {
            depth++;
        } else if ((*c == ']' || *c == ')' || *c == '>' || *c == '}') && depth > 0) {
            depth--;
        }
    }
    return true;
}

/* One printed argument as the flags mem4d_import_megatron() reads: the
 * destination's flag (the few whose flag has another name are mapped),
 * True as the switch, a value in the "--flag=value" form (so that no value
 * is taken for a flag), a list as its elements for a flag of several words
 * and as the printed text for one of a single value (--moe-layer-freq's
 * evaluated pattern, --window-size's tuple), torch dtypes and enum members
 * as the words of the flag. Destinations the reader has no row for, or
 * skips, have no effect on the estimate and are passed over. */
static mem4d_status argument(mem4d_calibration *cal, struct scan *sc, const char *name, size_t nl, const char *val,
                             size_t lineno)
{
    size_t vl = strcspn(val, "\r\n");
    while (vl > 0 && val[vl - 1] == ' ')
        vl--;
    char flag[64], line_msg[96];
    if (nl >= sizeof flag)
        return MEM4D_OK; /* longer than any flag the reader knows */
    memcpy(flag, name, nl);
    flag[nl] = '\0';
    char *value = malloc(vl + 1);
    if (!value)
        return MEM4D_E_NOMEM;
    memcpy(value, val, vl);
    value[vl] = '\0';
    mem4d_status st = MEM4D_OK;
    bool t = !strcmp(value, "True"), f = !strcmp(value, "False");
    if (!strcmp(flag, "world_size")) {
        uint64_t w = 0;
        bool ok = vl > 0 && vl <= 19 && strspn(value, "0123456789") == vl;
        if (ok)
            w = strtoull(value, NULL, 10);
        if (!ok || w == 0) {
            m4d_msg(line_msg, sizeof line_msg, "world_size '%.40s' is not a positive whole number", value);
            st = fail(cal, MEM4D_E_PARSE, lineno, line_msg);
        }
        sc->world = w;
        sc->world_seen = true;
        goto out;
    }
    if (!strcmp(flag, "tp_comm_overlap") && t)
        sc->tp_overlap = true;
    /* Destinations whose flag has another name: the flag of a value (NULL:
     * True is the default) and the switch that printed False. */
    static const char *const renamed[][3] = {
        {"add_bias_linear", NULL, "--disable-bias-linear"},
        {"add_position_embedding", NULL, "--no-position-embedding"},
        {"fp4", "fp4-format", NULL},
        {"fp8", "fp8-format", NULL},
        {"nccl_ub", "use-nccl-ub", NULL},
        {"overlap_p2p_comm", "overlap-p2p-communication", "--no-overlap-p2p-communication"},
    };
    for (size_t i = 0; i < sizeof renamed / sizeof *renamed; i++) {
        if (strcmp(flag, renamed[i][0]) != 0)
            continue;
        if (f && renamed[i][2] && !strings_add(&sc->args, renamed[i][2], strlen(renamed[i][2])))
            st = MEM4D_E_NOMEM;
        if (f || !renamed[i][1])
            goto out;
        snprintf(flag, sizeof flag, "%s", renamed[i][1]);
        break;
    }
    for (char *c = flag; *c; c++)
        if (*c == '_')
            *c = '-';
    const struct m4d_megatron_flag *row = m4d_megatron_flag_find(flag);
    if (!row || row->kind == M4D_FLAG_SKIP)
        goto out;
    const char *word = value;
    size_t wl = vl, ml;
    const char *m;
    if (!strcmp(value, "None")) {
        /* 'auto' is None after validate_args() */
        if (row->kind == M4D_FLAG_WORD && has_choice(row, "auto") && strstr(flag, "dtype"))
            word = "auto", wl = 4;
        else
            goto out;
    } else if (dtype_word(value)) {
        word = dtype_word(value);
        wl = strlen(word);
    } else if (enum_member(value, vl, &m, &ml)) {
        word = m;
        wl = ml;
    }
    if (f || vl == 0)
        goto out; /* a switch not given, or an empty value: nothing set */
    char head[72];
    int hn = snprintf(head, sizeof head, "--%s", flag);
    if (row->kind == M4D_FLAG_SWITCH || (row->kind == M4D_FLAG_WARN && t)) {
        if (!t) {
            m4d_msg(line_msg, sizeof line_msg, "%.40s is a switch; '%.20s' is neither True nor False", name, value);
            st = fail(cal, MEM4D_E_PARSE, lineno, line_msg);
        } else if (!strings_add(&sc->args, head, (size_t)hn)) {
            st = MEM4D_E_NOMEM;
        }
        goto out;
    }
    bool list = vl >= 2 && ((value[0] == '[' && value[vl - 1] == ']') || (value[0] == '(' && value[vl - 1] == ')'));
    if (row->kind == M4D_FLAG_BITS && list) {
        size_t before = sc->args.n;
        if (!strings_add(&sc->args, head, (size_t)hn) || !add_elements(&sc->args, value, vl))
            st = MEM4D_E_NOMEM;
        else if (sc->args.n == before + 1) /* an empty list: nothing chosen */
            free(sc->args.v[--sc->args.n]), sc->args.v[sc->args.n] = NULL;
        goto out;
    }
    char *joined = malloc((size_t)hn + 1 + wl + 1);
    if (!joined) {
        st = MEM4D_E_NOMEM;
        goto out;
    }
    memcpy(joined, head, (size_t)hn);
    joined[hn] = '=';
    memcpy(joined + hn + 1, word, wl);
    if (!strings_add(&sc->args, joined, (size_t)hn + 1 + wl))
        st = MEM4D_E_NOMEM;
    free(joined);
out:
    free(value);
    return st;
}

/* A line inside the arguments block: its argument, the end of the block,
 * or (after a prefix such as "[default0]:" on the header) another
 * process's output. */
static mem4d_status block_line(mem4d_calibration *cal, struct scan *sc, const char *line, size_t lineno)
{
    if (strstr(line, "-- end of arguments --")) {
        sc->in_args = false;
        return MEM4D_OK;
    }
    const char *body = line, *name, *val;
    size_t nl;
    if (sc->prefix_len) {
        size_t len = strlen(line);
        if (len >= sc->prefix_len && !memcmp(line, sc->prefix, sc->prefix_len))
            body = line + sc->prefix_len;
        else if (len >= sc->prefix_len && split_argument(line + sc->prefix_len, &name, &nl, &val))
            body = line + sc->prefix_len; /* a prefix of the same width: a timestamp */
        else
            return MEM4D_OK; /* another rank's line between the arguments */
    }
    if (!split_argument(body, &name, &nl, &val))
        return fail(cal, MEM4D_E_PARSE, lineno, "not a \"name .... value\" line inside the arguments block");
    return argument(cal, sc, name, nl, val, lineno);
}

/* Megatron prints the elapsed time with one decimal ("%.1f"): a step
 * shorter than 0.1 ms or longer than a day is not a training step. */
#define STEP_MIN_MS 0.1
#define STEP_MAX_MS 86400000.0
/* Memory lines are MB of one GPU: 2^30 MB is a pebibyte. */
#define MEM_MAX_MB 1073741824.0

/* One line of a log. Lines that are neither iteration, memory nor
 * arguments lines are other output and are passed over. */
static mem4d_status scan_line(mem4d_calibration *cal, struct scan *sc, const char *line, size_t lineno)
{
    bool bad = false;
    const char *hdr = strstr(line, "-- arguments --");
    if (hdr && !sc->in_args) {
        while (hdr > line && hdr[-1] == '-')
            hdr--;
        sc->in_args = true;
        sc->args_seen = true;
        sc->prefix = line; /* only its length and bytes are kept: copied below */
        sc->prefix_len = (size_t)(hdr - line);
        for (size_t i = 0; i < sc->args.n; i++)
            free(sc->args.v[i]);
        sc->args.n = 0;
        sc->world_seen = false;
        sc->tp_overlap = false;
        return MEM4D_OK;
    }
    if (sc->in_args)
        return block_line(cal, sc, line, lineno);
    double ms;
    if (strstr(line, " iteration ") && number_after(line, "elapsed time per iteration (ms):", &ms, &bad)) {
        if (!(ms >= STEP_MIN_MS && ms <= STEP_MAX_MS)) {
            char why[128];
            m4d_msg(why, sizeof why, "elapsed time per iteration %g ms is outside [0.1 ms, 1 day]: not a training step",
                    ms);
            return fail(cal, MEM4D_E_RANGE, lineno, why);
        }
        double tf = 0;
        bool have = number_after(line, "throughput per GPU (TFLOP/s/GPU):", &tf, &bad);
        if (bad || tf < 0)
            return fail(cal, MEM4D_E_PARSE, lineno, "throughput per GPU (TFLOP/s/GPU) is not a number");
        if (!doubles_add(&sc->steps, ms / 1000) || !doubles_add(&sc->tfl, have ? tf : -1))
            return MEM4D_E_NOMEM;
        return MEM4D_OK;
    }
    if (bad)
        return fail(cal, MEM4D_E_PARSE, lineno, "elapsed time per iteration (ms) is not a number");
    if (strstr(line, "memory (MB) | allocated:")) {
        double al = 0, mal = 0, res = 0, mres = 0, rank = 0;
        bool ok = number_after(line, "| allocated:", &al, &bad) && number_after(line, "| max allocated:", &mal, &bad) &&
                  number_after(line, "| reserved:", &res, &bad) && number_after(line, "| max reserved:", &mres, &bad);
        const char *r = strstr(line, "[Rank ");
        if (r && (!number_after(r, "[Rank ", &rank, &bad) || rank < 0 || rank > 1e18 || rank != floor(rank)))
            ok = false;
        if (!ok || bad || mres < mal)
            return fail(cal, MEM4D_E_PARSE, lineno,
                        "a memory line needs allocated, max allocated, reserved and max reserved (MB), "
                        "max reserved >= max allocated");
        if (!(mal > 0) || al < 0 || res < 0 || mres > MEM_MAX_MB)
            return fail(cal, MEM4D_E_RANGE, lineno,
                        "max allocated must be above 0 MB, no figure negative, and max reserved at most 2^30 MB: "
                        "not a training GPU's memory");
        /* The last report of the first rank seen: its maxima only grow. */
        if (!sc->have_mem || (uint64_t)rank == sc->mem_rank) {
            sc->have_mem = true;
            sc->mem_rank = (uint64_t)rank;
            sc->mem_line = lineno;
            sc->max_alloc = mal * 1048576.0;
            sc->max_res = mres * 1048576.0;
        }
    }
    return MEM4D_OK;
}

/* A torchtitan metrics line: "step: N  loss: ...  tps: T  tflops: ...". */
static mem4d_status scan_torchtitan(mem4d_calibration *cal, struct scan *sc, char *line, size_t lineno)
{
    strip_ansi(line);
    bool bad = false;
    double tps;
    if (!strstr(line, "step:") || !strstr(line, "loss:"))
        return MEM4D_OK;
    if (!scaled_after(line, " tps:", &tps, &bad) || tps <= 0)
        return bad || strstr(line, " tps:")
                   ? fail(cal, MEM4D_E_PARSE, lineno, "tps is not a positive number of tokens per second")
                   : MEM4D_OK;
    return doubles_add(&sc->steps, tps) ? MEM4D_OK : MEM4D_E_NOMEM;
}

/* A nanotron iteration line: "iteration: N / M | ... | time_per_iteration_ms: X |
 * tokens_per_sec: Y | ...". */
static mem4d_status scan_nanotron(mem4d_calibration *cal, struct scan *sc, char *line, size_t lineno)
{
    strip_ansi(line);
    bool bad = false;
    double ms;
    if (!strstr(line, "iteration: ") || !strstr(line, " | "))
        return MEM4D_OK;
    if (!scaled_after(line, "time_per_iteration_ms:", &ms, &bad) || !(ms >= STEP_MIN_MS && ms <= STEP_MAX_MS))
        return bad || strstr(line, "time_per_iteration_ms:")
                   ? fail(cal, MEM4D_E_PARSE, lineno, "time_per_iteration_ms is not a number of ms in [0.1 ms, 1 day]")
                   : MEM4D_OK;
    return doubles_add(&sc->steps, ms / 1000) ? MEM4D_OK : MEM4D_E_NOMEM;
}

static void scan_free(struct scan *sc)
{
    free(sc->steps.v);
    free(sc->tfl.v);
    strings_free(&sc->args);
}

/* Scan the log's lines; a line of any length is read whole. */
static mem4d_status scan_text(mem4d_calibration *cal, mem4d_log_format format, struct scan *sc, const char *text,
                              size_t length)
{
    char *line = NULL, *prefix = NULL;
    size_t cap = 0;
    mem4d_status st = MEM4D_OK;
    const char *p = text, *end = text + length;
    for (size_t lineno = 1; p < end && st == MEM4D_OK; lineno++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
        size_t n = (size_t)(le - p);
        if (memchr(p, '\0', n)) {
            st = fail(cal, MEM4D_E_PARSE, lineno, "a NUL byte: not a text log");
            break;
        }
        if (n + 1 > cap) {
            char *b = realloc(line, n + 1);
            if (!b) {
                st = MEM4D_E_NOMEM;
                break;
            }
            line = b;
            cap = n + 1;
        }
        memcpy(line, p, n);
        line[n] = '\0';
        bool was_in = sc->in_args;
        st = format == MEM4D_LOG_TORCHTITAN ? scan_torchtitan(cal, sc, line, lineno)
             : format == MEM4D_LOG_NANOTRON ? scan_nanotron(cal, sc, line, lineno)
                                            : scan_line(cal, sc, line, lineno);
        if (st == MEM4D_OK && !was_in && sc->in_args) {
            /* keep the header's prefix: the line buffer is reused */
            free(prefix);
            prefix = malloc(sc->prefix_len + 1);
            if (!prefix) {
                st = MEM4D_E_NOMEM;
                break;
            }
            memcpy(prefix, line, sc->prefix_len);
            sc->prefix = prefix;
        }
        p = nl ? nl + 1 : end;
    }
    free(line);
    sc->prefix = NULL;
    free(prefix);
    if (st == MEM4D_E_NOMEM)
        fail(cal, st, 0, "out of memory reading the log");
    return st;
}

/* A Megatron-LM log's figures into its run, which becomes the last read:
 * the medians of its iteration lines (the first left out), its memory line. */
static mem4d_status take_run(mem4d_calibration *cal, struct cal_log *lg, struct scan *sc)
{
    lg->step_s = median_from(sc->steps.v, sc->steps.n, 1);
    lg->kind = CAL_STEP;
    lg->meas = lg->step_s;
    size_t nt = 0;
    for (size_t i = 0; i < sc->tfl.n; i++)
        if (sc->tfl.v[i] >= 0)
            sc->tfl.v[nt++] = sc->tfl.v[i];
    lg->have_tflops = nt > 1;
    lg->tflops = nt > 1 ? median_from(sc->tfl.v, nt, 1) : 0;
    lg->have_mem = sc->have_mem;
    lg->mem_rank = sc->mem_rank;
    lg->max_alloc = sc->max_alloc;
    lg->max_res = sc->max_res;
    cal->n++;
    cal->fitted = false;
    return MEM4D_OK;
}

static mem4d_status add_log(mem4d_calibration *cal, struct scan *sc, const char *text, size_t length, int argc,
                            const char *const *argv, uint64_t world_size)
{
    TRY(scan_text(cal, MEM4D_LOG_MEGATRON, sc, text, length));
    if (sc->in_args)
        return fail(cal, MEM4D_E_PARSE, 0, "the arguments block has no \"end of arguments\" line");
    if (sc->steps.n == 0)
        return fail(cal, MEM4D_E_MISSING, 0,
                    "no iteration line with \"elapsed time per iteration (ms)\": not a Megatron-LM training log");
    if (sc->steps.n == 1)
        return fail(cal, MEM4D_E_MISSING, 0,
                    "one iteration line only: the first is warm-up (compilation, allocation), and calibration "
                    "needs at least one more");
    struct cal_log *lg = &cal->log[cal->n];
    memset(lg, 0, sizeof *lg);
    m4d_param_defaults(m4d_model_params, M4D_MODEL_NPARAM, lg->model.v);
    m4d_strlcpy(lg->model.name, "custom", sizeof lg->model.name);
    m4d_param_defaults(m4d_layout_params, M4D_LAYOUT_NPARAM, lg->layout.v);
    /* The arguments block when the log has one, else the caller's argv. */
    int ac = sc->args_seen ? (int)sc->args.n : argc;
    const char *const *av = sc->args_seen ? (const char *const *)sc->args.v : argv;
    if (sc->args_seen && sc->args.n > INT32_MAX)
        return fail(cal, MEM4D_E_RANGE, 0, "the arguments block holds more arguments than an int counts");
    if (ac == 0)
        return fail(cal, MEM4D_E_MISSING, 0,
                    sc->args_seen ? "the log's arguments block sets none of the job's arguments"
                                  : "the log has no arguments block and no arguments were given: give the "
                                    "job's Megatron-LM arguments (after --)");
    mem4d_import *imp = NULL;
    if (mem4d_import_new(&imp) != MEM4D_OK)
        return MEM4D_E_NOMEM;
    mem4d_status st = mem4d_import_megatron(imp, ac, av, NULL, world_size ? world_size : sc->world, &lg->model,
                                            &lg->layout);
    if (st != MEM4D_OK)
        m4d_msg(cal->msg, sizeof cal->msg, "%s arguments: %s", sc->args_seen ? "the log's" : "the",
                mem4d_import_message(imp));
    mem4d_import_free(imp);
    if (st != MEM4D_OK)
        return st;
    if (!lg->layout.v[MEM4D_LAYOUT_WORLD] && !lg->layout.v[MEM4D_LAYOUT_DP])
        return fail(cal, MEM4D_E_MISSING, 0,
                    sc->args_seen ? "the log's arguments block gives no world_size: give the job's GPUs (world_size, "
                                    "--world-size)"
                                  : "the job's GPUs are unknown: the log has no arguments block, and its arguments "
                                    "do not say; give them (world_size, --world-size)");
    if (sc->tp_overlap || (!sc->args_seen && argc > 0)) {
        for (int i = 0; i < argc && !sc->args_seen; i++)
            if (argv[i] && !strcmp(argv[i], "--tp-comm-overlap"))
                sc->tp_overlap = true;
        lg->layout.v[MEM4D_LAYOUT_TP_COMM_OVERLAP] = sc->tp_overlap;
    }
    if (sc->have_mem) {
        /* the world, or tp x cp x pp x dp when only dp is given */
        const uint64_t *v = lg->layout.v;
        uint64_t world = v[MEM4D_LAYOUT_WORLD];
        if (!world && !m4d_mul3(v[MEM4D_LAYOUT_TP], v[MEM4D_LAYOUT_CP], v[MEM4D_LAYOUT_PP], &world))
            world = 0;
        if (!m4d_mul(world, v[MEM4D_LAYOUT_WORLD] ? 1 : v[MEM4D_LAYOUT_DP], &world))
            world = 0;
        if (world && sc->mem_rank >= world) {
            char why[160];
            m4d_msg(why, sizeof why, "the memory line is of rank %llu, but the job has %llu GPUs (ranks 0 to %llu)",
                    (unsigned long long)sc->mem_rank, (unsigned long long)world, (unsigned long long)world - 1);
            return fail(cal, MEM4D_E_CONFLICT, sc->mem_line, why);
        }
    }
    return take_run(cal, lg, sc);
}

mem4d_status mem4d_calibration_add_megatron_log(mem4d_calibration *cal, const char *text, size_t length, int argc,
                                                const char *const *argv, uint64_t world_size)
{
    if (!cal)
        return MEM4D_E_INVALID_ARG;
    if ((!text && length) || argc < 0 || (argc > 0 && !argv))
        return fail(cal, MEM4D_E_INVALID_ARG, 0, "a NULL log text of nonzero length, a negative argc or a NULL argv");
    cal->msg[0] = '\0';
    if (cal->n == CAL_MAX_LOGS)
        return fail(cal, MEM4D_E_RANGE, 0, "too many logs (at most 32)");
    struct scan sc = {0};
    mem4d_status st = add_log(cal, &sc, text, length, argc, argv, world_size);
    scan_free(&sc);
    return st;
}

#define CAL_LOG_MAX_BYTES ((size_t)1 << 30)

mem4d_status mem4d_calibration_add_megatron_log_file(mem4d_calibration *cal, const char *path, int argc,
                                                     const char *const *argv, uint64_t world_size)
{
    if (!cal)
        return MEM4D_E_INVALID_ARG;
    if (!path)
        return fail(cal, MEM4D_E_INVALID_ARG, 0, "a NULL log path");
    char *text = NULL;
    size_t len = 0;
    mem4d_status st = m4d_read_file(path, "Megatron-LM training log", CAL_LOG_MAX_BYTES, &text, &len, cal->msg,
                                    sizeof cal->msg);
    if (st != MEM4D_OK)
        return st;
    st = mem4d_calibration_add_megatron_log(cal, text, len, argc, argv, world_size);
    free(text);
    return st;
}

/* A new run of `model` and `layout`, which must describe a job whose speed
 * the estimate predicts; NULL (the message set) when refused. */
static struct cal_log *new_run(mem4d_calibration *cal, const mem4d_model *model, const mem4d_layout *layout,
                               mem4d_status *st)
{
    *st = MEM4D_OK;
    if (cal->n == CAL_MAX_LOGS) {
        *st = fail(cal, MEM4D_E_RANGE, 0, "too many logs and measurements (at most 32)");
        return NULL;
    }
    if (!layout->v[MEM4D_LAYOUT_GLOBAL_BATCH] || !layout->v[MEM4D_LAYOUT_SEQ_LENGTH] ||
        (!layout->v[MEM4D_LAYOUT_WORLD] && !layout->v[MEM4D_LAYOUT_DP])) {
        *st = fail(cal, MEM4D_E_MISSING, 0, "the job needs its GPUs (world), sequence length (seq) and global "
                                            "batch (gbs) to be timed");
        return NULL;
    }
    char why[M4D_MSG_MAX];
    *st = mem4d_validate(model, layout, why, sizeof why);
    if (*st != MEM4D_OK) {
        m4d_msg(cal->msg, sizeof cal->msg, "the job: %s", why);
        return NULL;
    }
    struct cal_log *lg = &cal->log[cal->n];
    memset(lg, 0, sizeof *lg);
    lg->model = *model;
    lg->layout = *layout;
    return lg;
}

/* The arguments of add_log and add_log_file (text: the log's text or path is
 * given). A refused argument is said in the message too, as every failure
 * is: the bindings raise with it, and the last failure's sentence would
 * name another cause. */
static mem4d_status log_args(mem4d_calibration *cal, mem4d_log_format format, bool text, const mem4d_model *model,
                             const mem4d_layout *layout)
{
    if (!cal)
        return MEM4D_E_INVALID_ARG;
    if (!text || !model || !layout)
        return fail(cal, MEM4D_E_INVALID_ARG, 0, "a NULL log (text of nonzero length, or path), model or layout");
    if ((unsigned)format > MEM4D_LOG_NANOTRON)
        return fail(cal, MEM4D_E_INVALID_ARG, 0, "the log format is not one this library reads");
    return MEM4D_OK;
}

mem4d_status mem4d_calibration_add_log(mem4d_calibration *cal, mem4d_log_format format, const char *text,
                                       size_t length, const mem4d_model *model, const mem4d_layout *layout)
{
    mem4d_status st = log_args(cal, format, text || !length, model, layout);
    if (st != MEM4D_OK)
        return st;
    cal->msg[0] = '\0';
    struct cal_log *lg = new_run(cal, model, layout, &st);
    if (!lg)
        return st;
    struct scan sc = {0};
    st = scan_text(cal, format, &sc, text, length);
    static const char *const what[] = {"no iteration line with \"elapsed time per iteration (ms)\": not a "
                                       "Megatron-LM training log",
                                       "no metrics line with \"step:\", \"loss:\" and \"tps:\": not a torchtitan "
                                       "training log",
                                       "no iteration line with \"time_per_iteration_ms\": not a nanotron training log"};
    if (st == MEM4D_OK && sc.in_args)
        st = fail(cal, MEM4D_E_PARSE, 0, "the arguments block has no \"end of arguments\" line");
    else if (st == MEM4D_OK && sc.steps.n == 0)
        st = fail(cal, MEM4D_E_MISSING, 0, what[format]);
    else if (st == MEM4D_OK && sc.steps.n == 1)
        st = fail(cal, MEM4D_E_MISSING, 0,
                  "one step line only: the first is warm-up (compilation, allocation), and calibration needs at "
                  "least one more");
    if (st == MEM4D_OK && format == MEM4D_LOG_MEGATRON) {
        st = take_run(cal, lg, &sc);
    } else if (st == MEM4D_OK) {
        double v = median_from(sc.steps.v, sc.steps.n, 1);
        lg->kind = format == MEM4D_LOG_TORCHTITAN ? CAL_TOKENS_PER_GPU : CAL_STEP;
        lg->meas = v;
        lg->step_s = format == MEM4D_LOG_TORCHTITAN ? 0 : v;
        cal->n++;
        cal->fitted = false;
    }
    scan_free(&sc);
    return st;
}

mem4d_status mem4d_calibration_add_log_file(mem4d_calibration *cal, mem4d_log_format format, const char *path,
                                            const mem4d_model *model, const mem4d_layout *layout)
{
    mem4d_status st = log_args(cal, format, path != NULL, model, layout);
    if (st != MEM4D_OK)
        return st;
    static const char *const doc[] = {"Megatron-LM training log", "torchtitan training log", "nanotron training log"};
    char *text = NULL;
    size_t len = 0;
    st = m4d_read_file(path, doc[format], CAL_LOG_MAX_BYTES, &text, &len, cal->msg, sizeof cal->msg);
    if (st != MEM4D_OK)
        return st;
    st = mem4d_calibration_add_log(cal, format, text, len, model, layout);
    free(text);
    return st;
}

mem4d_status mem4d_calibration_add_measurement(mem4d_calibration *cal, const mem4d_model *model,
                                               const mem4d_layout *layout, mem4d_calibration_figure figure,
                                               double value)
{
    if (!cal)
        return MEM4D_E_INVALID_ARG;
    if (!model || !layout)
        return fail(cal, MEM4D_E_INVALID_ARG, 0, "a NULL model or layout");
    if (figure != MEM4D_CALIBRATION_MEASURED_STEP_S && figure != MEM4D_CALIBRATION_MEASURED_TFLOPS_PER_GPU &&
        figure != MEM4D_CALIBRATION_MEASURED_TOKENS_PER_S)
        return fail(cal, MEM4D_E_INVALID_ARG, 0,
                    "a measurement is a step time, TFLOP/s per GPU or tokens per second, not another figure");
    cal->msg[0] = '\0';
    if (!(value > 0) || !isfinite(value))
        return fail(cal, MEM4D_E_RANGE, 0, "a measured figure must be a positive number");
    if (figure == MEM4D_CALIBRATION_MEASURED_STEP_S && !(value * 1000 >= STEP_MIN_MS && value * 1000 <= STEP_MAX_MS)) {
        char why[128];
        m4d_msg(why, sizeof why, "a measured step of %g s is outside [0.1 ms, 1 day]: not a training step", value);
        return fail(cal, MEM4D_E_RANGE, 0, why);
    }
    mem4d_status st;
    struct cal_log *lg = new_run(cal, model, layout, &st);
    if (!lg)
        return st;
    lg->kind = figure == MEM4D_CALIBRATION_MEASURED_STEP_S          ? CAL_STEP
               : figure == MEM4D_CALIBRATION_MEASURED_TFLOPS_PER_GPU ? CAL_TFLOPS
                                                                     : CAL_TOKENS;
    lg->meas = value;
    lg->step_s = lg->kind == CAL_STEP ? value : 0;
    cal->n++;
    cal->fitted = false;
    return MEM4D_OK;
}

/* --- fitting ----------------------------------------------------------------------- */

static void set_fig(struct cal_log *lg, mem4d_calibration_figure f, double v)
{
    lg->fig[f] = v;
    lg->fig_set[f] = true;
}

/* Estimate one log on a device: step time and, for its memory rank's
 * stage, peak allocated and reserved bytes. */
static mem4d_status predict(mem4d_calibration *cal, struct cal_log *lg, const mem4d_device *dev, double *step,
                            double *alloc, double *res)
{
    mem4d_report *r = cal->report;
    mem4d_status st = mem4d_estimate(&lg->model, &lg->layout, dev, r);
    if (st != MEM4D_OK) {
        m4d_msg(cal->msg, sizeof cal->msg, "log %zu: %s", (size_t)(lg - cal->log) + 1, mem4d_report_message(r));
        return st;
    }
    if (mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, step) != MEM4D_OK) {
        m4d_msg(cal->msg, sizeof cal->msg, "log %zu: no step time (a device without peak_flops?)",
                (size_t)(lg - cal->log) + 1);
        return MEM4D_E_UNSUPPORTED;
    }
    uint64_t world = 0, a = 0, rs = 0;
    mem4d_report_info(r, MEM4D_INFO_WORLD, &world);
    uint32_t nst = mem4d_report_num_stages(r);
    uint64_t per = world && nst ? world / nst : 1;
    lg->mem_stage = per ? lg->mem_rank / per : 0;
    if (lg->mem_stage >= nst)
        lg->mem_stage = nst - 1;
    mem4d_report_get(r, (uint32_t)lg->mem_stage, MEM4D_TERM_PEAK_ALLOCATED, &a);
    mem4d_report_get(r, (uint32_t)lg->mem_stage, MEM4D_TERM_PEAK_RESERVED, &rs);
    *alloc = (double)a;
    *res = (double)rs;
    return MEM4D_OK;
}

/* The speed constants a fit may choose from, each with the range it is
 * searched in, whether that search is over log(value) (the rates) or the
 * value (a time that may be 0), and the move by which its influence on the
 * runs is measured: a plausible error of the device's value (a third of a
 * rate, 4 ms per micro-batch, of which the power balance gives part back
 * on a power-limited board as the clock the idle time leaves; the router's load spread moves only dropless
 * MoE runs whose imbalance is derived, so it is chosen only when such a run
 * differs from the others in a way the rates do not explain: beside a
 * forced-balance run of the job, or runs at several ep). Communication is
 * two candidates, the links inside a node (comm_efficiency_ppm, once the
 * network has its own value) and the network (inter_node_efficiency_ppm):
 * a run whose exposed communication crosses the network tells the
 * network's rate, and fitting comm_efficiency_ppm from it would carry that
 * figure onto the NVLink traffic of every other job (a tensor-parallel
 * all-reduce inside a node). The last candidate, the compute level, moves
 * the bf16 GEMM efficiency and with it the fp8 one by the same factor (and
 * attention, whose rate is a share of the bf16 GEMM's): what one fp8 run
 * can tell, as it cannot tell its fp8 GEMMs apart from the bf16 attention
 * and LM head around them. */
static const struct cal_const {
    mem4d_device_param key;
    double lo, hi, move;
    bool log_scale;
    bool level; /* key is the bf16 GEMM efficiency; the fp8 one follows it */
} cal_consts[CAL_NCAND] = {
    [CAL_MATMUL] = {MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM, 20000, 1000000, 1.5, true, false},
    [CAL_FP8] = {MEM4D_DEVICE_FP8_EFFICIENCY_PPM, 20000, 1000000, 1.5, true, false},
    [CAL_ATTENTION] = {MEM4D_DEVICE_ATTENTION_EFFICIENCY_PPM, 20000, 2000000, 1.5, true, false},
    [CAL_OVERHEAD] = {MEM4D_DEVICE_MICROBATCH_OVERHEAD_NS, 0, 200e6, 4e6, false, false},
    [CAL_COMM] = {MEM4D_DEVICE_COMM_EFFICIENCY_PPM, 10000, 1000000, 1.5, true, false},
    [CAL_LOAD_SPREAD] = {MEM4D_DEVICE_MOE_LOAD_SPREAD_PPM, 1000, 4000000, 1.5, true, false},
    [CAL_NETWORK] = {MEM4D_DEVICE_INTER_NODE_EFFICIENCY_PPM, 10000, 1000000, 1.5, true, false},
    [CAL_LEVEL] = {MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM, 20000, 1000000, 1.5, true, true},
};

/* Set a candidate's value on a device: the compute level also sets the fp8
 * GEMM efficiency at the ratio the fit started from, within its range. */
static void put(const mem4d_calibration *cal, mem4d_device *dev, const struct cal_const *k, uint64_t v)
{
    dev->v[k->key] = v;
    if (k->level) {
        double f = (double)v * cal->level_ratio;
        dev->v[MEM4D_DEVICE_FP8_EFFICIENCY_PPM] = (uint64_t)llround(fmin(fmax(f, k->lo), k->hi));
    }
}

/* A run's predicted step on `dev`: NAN when it cannot be estimated. */
static double step_on(mem4d_calibration *cal, struct cal_log *lg, const mem4d_device *dev)
{
    double step, a, r;
    return predict(cal, lg, dev, &step, &a, &r) == MEM4D_OK ? step : NAN;
}

/* Sum over the runs of log(predicted / measured)^2 on `dev`. */
static double step_error(mem4d_calibration *cal, const mem4d_device *dev)
{
    double e = 0;
    for (size_t i = 0; i < cal->n; i++) {
        double step = step_on(cal, &cal->log[i], dev);
        if (!(step > 0))
            return INFINITY;
        double d = log(step / cal->log[i].step_s);
        e += d * d;
    }
    return e;
}

static uint64_t const_value(const struct cal_const *k, double x)
{
    double v = k->log_scale ? exp(x) : x;
    return v <= 0 ? 0 : (uint64_t)llround(v);
}

/* Golden-section search of one constant in its range for the least error. */
static void fit_key(mem4d_calibration *cal, mem4d_device *dev, const struct cal_const *k)
{
    const double g = 0.6180339887498949;
    double a = k->log_scale ? log(k->lo) : k->lo, b = k->log_scale ? log(k->hi) : k->hi;
    for (int it = 0; it < 48; it++) {
        double x1 = b - g * (b - a), x2 = a + g * (b - a);
        put(cal, dev, k, const_value(k, x1));
        double f1 = step_error(cal, dev);
        put(cal, dev, k, const_value(k, x2));
        double f2 = step_error(cal, dev);
        if (f1 <= f2)
            b = x2;
        else
            a = x1;
    }
    put(cal, dev, k, const_value(k, (a + b) / 2));
}

/* A constant's coordinate for the joint fit: log(value) for a rate, the
 * value in units of its plausible error for a time. */
static double coord(const struct cal_const *k, uint64_t v)
{
    return k->log_scale ? log((double)(v ? v : 1)) : (double)v / k->move;
}

static uint64_t from_coord(const struct cal_const *k, double x)
{
    double lo = k->log_scale ? log(k->lo) : k->lo / k->move, hi = k->log_scale ? log(k->hi) : k->hi / k->move;
    x = x < lo ? lo : x > hi ? hi : x;
    return const_value(k, k->log_scale ? x : x * k->move);
}

/* Levenberg-Marquardt on the chosen constants together (coordinate descent
 * crawls along the valley two correlated constants make): residuals
 * log(predicted / measured step), a forward-difference Jacobian. */
static void fit_joint(mem4d_calibration *cal, mem4d_device *dev, const int *idx, size_t nk)
{
    size_t n = cal->n;
    double lambda = 1e-3, err = step_error(cal, dev);
    for (int it = 0; it < 40 && err > 1e-14; it++) {
        double r[CAL_MAX_LOGS], J[CAL_NCAND][CAL_MAX_LOGS], x[CAL_NCAND];
        for (size_t i = 0; i < n; i++)
            r[i] = log(step_on(cal, &cal->log[i], dev) / cal->log[i].step_s);
        for (size_t k = 0; k < nk; k++) {
            const struct cal_const *c = &cal_consts[idx[k]];
            x[k] = coord(c, dev->v[c->key]);
            mem4d_device moved = *dev;
            double h = 1e-3;
            put(cal, &moved, c, from_coord(c, x[k] + h));
            double dh = coord(c, moved.v[c->key]) - x[k];
            if (dh == 0) { /* at the upper bound: step down */
                put(cal, &moved, c, from_coord(c, x[k] - h));
                dh = coord(c, moved.v[c->key]) - x[k];
            }
            for (size_t i = 0; i < n; i++)
                J[k][i] = dh != 0 ? (log(step_on(cal, &cal->log[i], &moved) / cal->log[i].step_s) - r[i]) / dh : 0;
        }
        bool better = false;
        while (!better && lambda < 1e8) {
            /* (JtJ + lambda diag(JtJ)) d = -Jt r by Gaussian elimination */
            double A[CAL_NCAND][CAL_NCAND + 1];
            for (size_t a = 0; a < nk; a++) {
                for (size_t b = 0; b < nk; b++) {
                    double v = 0;
                    for (size_t i = 0; i < n; i++)
                        v += J[a][i] * J[b][i];
                    A[a][b] = v;
                }
                double g = 0;
                for (size_t i = 0; i < n; i++)
                    g += J[a][i] * r[i];
                A[a][nk] = -g;
            }
            for (size_t a = 0; a < nk; a++)
                A[a][a] += lambda * (A[a][a] > 0 ? A[a][a] : 1e-12);
            bool singular = false;
            for (size_t a = 0; a < nk && !singular; a++) {
                size_t piv = a;
                for (size_t b = a + 1; b < nk; b++)
                    if (fabs(A[b][a]) > fabs(A[piv][a]))
                        piv = b;
                if (fabs(A[piv][a]) < 1e-300) {
                    singular = true;
                    break;
                }
                for (size_t c = 0; c <= nk; c++) {
                    double t = A[a][c];
                    A[a][c] = A[piv][c];
                    A[piv][c] = t;
                }
                for (size_t b = 0; b < nk; b++)
                    if (b != a) {
                        double f = A[b][a] / A[a][a];
                        for (size_t c = a; c <= nk; c++)
                            A[b][c] -= f * A[a][c];
                    }
            }
            if (singular)
                break;
            mem4d_device trial = *dev;
            for (size_t k = 0; k < nk; k++) {
                const struct cal_const *c = &cal_consts[idx[k]];
                put(cal, &trial, c, from_coord(c, x[k] + A[k][nk] / A[k][k]));
            }
            double e = step_error(cal, &trial);
            if (e < err) {
                *dev = trial;
                err = e;
                lambda = fmax(lambda / 10, 1e-9);
                better = true;
            } else {
                lambda *= 10;
            }
        }
        if (!better)
            break;
    }
}

/* The device's value of a constant as the search moves it: attention's 0
 * stands for the kernel's own share. */
static uint64_t effective(const mem4d_device *dev, mem4d_device_param key)
{
    return m4d_perf_effective(dev, key);
}

/* How the runs' log step times move when each constant moves by its
 * plausible error (J[k][i]), then the constants to fit: greedily the one
 * whose move is largest once the moves of those already chosen are
 * projected out (Gram-Schmidt), while that rest still moves some run's step
 * by CAL_MIN_MOVE and keeps CAL_MIN_OWN of its own move (not a near-copy of
 * a chosen one), at most one constant per run. */
#define CAL_MIN_MOVE 0.01
#define CAL_MIN_OWN 0.25
static mem4d_status choose_constants(mem4d_calibration *cal, const mem4d_device *dev, const double *base)
{
    double (*J)[CAL_MAX_LOGS] = cal->J, (*Q)[CAL_MAX_LOGS] = cal->Q;
    size_t n = cal->n, nq = 0;
    double norm0[CAL_NCAND];
    for (size_t k = 0; k < CAL_NCAND; k++) {
        const struct cal_const *c = &cal_consts[k];
        mem4d_device moved = *dev;
        double v = (double)effective(dev, c->key);
        put(cal, &moved, c,
            c->log_scale ? (uint64_t)llround(fmax(v / c->move, c->lo)) : (uint64_t)llround(v + c->move));
        norm0[k] = 0;
        for (size_t i = 0; i < n; i++) {
            double step = step_on(cal, &cal->log[i], &moved);
            if (!(step > 0))
                return MEM4D_E_UNSUPPORTED;
            J[k][i] = log(step / base[i]);
            norm0[k] += J[k][i] * J[k][i];
        }
        norm0[k] = sqrt(norm0[k]);
        cal->chosen[k] = 0;
    }
    while (nq < n && nq < CAL_NCAND) {
        int best = -1;
        double best_norm = 0, rest[CAL_MAX_LOGS];
        for (size_t k = 0; k < CAL_NCAND; k++) {
            if (cal->chosen[k])
                continue;
            double r[CAL_MAX_LOGS], nr = 0, most = 0;
            memcpy(r, J[k], n * sizeof *r);
            for (size_t q = 0; q < nq; q++) {
                double dot = 0;
                for (size_t i = 0; i < n; i++)
                    dot += r[i] * Q[q][i];
                for (size_t i = 0; i < n; i++)
                    r[i] -= dot * Q[q][i];
            }
            for (size_t i = 0; i < n; i++)
                nr += r[i] * r[i], most = fmax(most, fabs(r[i]));
            nr = sqrt(nr);
            if (most >= CAL_MIN_MOVE && nr >= CAL_MIN_OWN * norm0[k] && nr > best_norm) {
                best = (int)k;
                best_norm = nr;
                memcpy(rest, r, n * sizeof *r);
            }
        }
        if (best < 0)
            break;
        cal->chosen[best] = 1;
        for (size_t i = 0; i < n; i++)
            Q[nq][i] = rest[i] / best_norm;
        nq++;
    }
    /* The level with one of the two GEMM efficiencies spans what the two
     * span apart: fit those. */
    if (cal->chosen[CAL_LEVEL] && (cal->chosen[CAL_MATMUL] || cal->chosen[CAL_FP8]))
        cal->chosen[CAL_LEVEL] = 0, cal->chosen[CAL_MATMUL] = cal->chosen[CAL_FP8] = 1;
    return MEM4D_OK;
}

mem4d_status mem4d_calibration_fit(mem4d_calibration *cal, mem4d_device *device)
{
    if (!cal)
        return MEM4D_E_INVALID_ARG;
    if (!device)
        return fail(cal, MEM4D_E_INVALID_ARG, 0, "a NULL device");
    cal->msg[0] = '\0';
    cal->fitted = false;
    if (cal->n == 0)
        return fail(cal, MEM4D_E_MISSING, 0, "no log to fit");
    mem4d_device dev = *device;
    double dalloc = 0, ratio = 0, base[CAL_MAX_LOGS];
    size_t nmem = 0;
    for (size_t i = 0; i < cal->n; i++) {
        struct cal_log *lg = &cal->log[i];
        double step, a, r, tok = 0, tfl = 0;
        uint64_t world = 0;
        mem4d_status st = predict(cal, lg, &dev, &step, &a, &r);
        if (st != MEM4D_OK)
            return st;
        mem4d_report_metric(cal->report, MEM4D_METRIC_TOKENS_PER_S, &tok);
        mem4d_report_metric(cal->report, MEM4D_METRIC_TFLOPS_PER_GPU, &tfl);
        mem4d_report_info(cal->report, MEM4D_INFO_WORLD, &world);
        /* A throughput is inverse to the step of the same job. */
        double meas_tokens = lg->kind == CAL_TOKENS ? lg->meas : lg->kind == CAL_TOKENS_PER_GPU ? lg->meas * (double)world : 0;
        if (lg->kind == CAL_TFLOPS)
            lg->step_s = step * tfl / lg->meas;
        else if (meas_tokens > 0)
            lg->step_s = step * tok / meas_tokens;
        /* A throughput is held to a log's rule for the step it makes. */
        if (!(lg->step_s * 1000 >= STEP_MIN_MS && lg->step_s * 1000 <= STEP_MAX_MS)) {
            static const char *const what[] = {"a step", "TFLOP/s per GPU", "tokens/s of the whole job",
                                               "tps (tokens/s per GPU)"};
            char why[M4D_MSG_MAX];
            m4d_msg(why, sizeof why, "run %zu: the measured %s %g make a step of %g s for this job, outside "
                    "[0.1 ms, 1 day]: not this job's figure (check its unit)", i + 1, what[lg->kind], lg->meas,
                    lg->step_s);
            return fail(cal, MEM4D_E_RANGE, 0, why);
        }
        base[i] = step;
        set_fig(lg, MEM4D_CALIBRATION_MEASURED_STEP_S, lg->step_s);
        set_fig(lg, MEM4D_CALIBRATION_PREDICTED_STEP_BEFORE_S, step);
        if (meas_tokens > 0)
            set_fig(lg, MEM4D_CALIBRATION_MEASURED_TOKENS_PER_S, meas_tokens);
        if (lg->kind == CAL_TFLOPS)
            set_fig(lg, MEM4D_CALIBRATION_MEASURED_TFLOPS_PER_GPU, lg->meas);
        else if (lg->have_tflops)
            set_fig(lg, MEM4D_CALIBRATION_MEASURED_TFLOPS_PER_GPU, lg->tflops);
        if (lg->have_mem) {
            set_fig(lg, MEM4D_CALIBRATION_MEASURED_MAX_ALLOCATED, lg->max_alloc);
            set_fig(lg, MEM4D_CALIBRATION_MEASURED_MAX_RESERVED, lg->max_res);
            set_fig(lg, MEM4D_CALIBRATION_PREDICTED_MAX_ALLOCATED_BEFORE, a);
            set_fig(lg, MEM4D_CALIBRATION_PREDICTED_MAX_RESERVED_BEFORE, r);
            set_fig(lg, MEM4D_CALIBRATION_MEMORY_RANK, (double)lg->mem_rank);
            dalloc += lg->max_alloc - a;
            /* The estimate's reserved-over-allocated has a structural part
             * (stranded and rounded segments, doc/full-model.md "The
             * allocator") besides allocator_overhead_ppm x allocated; the
             * constant takes only what the structure leaves. */
            double ppm0 = (double)dev.v[MEM4D_DEVICE_ALLOCATOR_OVERHEAD_PPM] / 1e6, structural = r - a - a * ppm0;
            ratio += lg->max_alloc > 0 ? (lg->max_res - lg->max_alloc - structural) / lg->max_alloc : 0;
            nmem++;
        }
    }
    cal->level_ratio = dev.v[MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM]
                           ? (double)dev.v[MEM4D_DEVICE_FP8_EFFICIENCY_PPM] / (double)dev.v[MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM]
                           : 1;
    /* The network's efficiency is the links' until set: given its own value
     * here, comm_efficiency_ppm moves the links inside a node alone. A fit
     * that moves neither leaves the key as it was. */
    uint64_t net0 = dev.v[MEM4D_DEVICE_INTER_NODE_EFFICIENCY_PPM];
    dev.v[MEM4D_DEVICE_INTER_NODE_EFFICIENCY_PPM] = effective(&dev, MEM4D_DEVICE_INTER_NODE_EFFICIENCY_PPM);
    if (choose_constants(cal, &dev, base) != MEM4D_OK)
        return fail(cal, MEM4D_E_UNSUPPORTED, 0, "a run cannot be estimated once a constant moves");
    /* Coordinate descent over the chosen constants, started from the
     * device's values (attention's 0 from the kernel's own share). */
    int idx[CAL_NCAND];
    size_t nfit = 0;
    for (size_t k = 0; k < CAL_NCAND; k++)
        if (cal->chosen[k]) {
            idx[nfit++] = (int)k;
            dev.v[cal_consts[k].key] = effective(&dev, cal_consts[k].key);
        }
    /* One sweep of golden-section searches finds the valley, the joint fit
     * follows it. */
    for (size_t k = 0; k < nfit; k++)
        fit_key(cal, &dev, &cal_consts[idx[k]]);
    if (nfit > 1)
        fit_joint(cal, &dev, idx, nfit);
    if (!cal->chosen[CAL_COMM] && !cal->chosen[CAL_NETWORK])
        dev.v[MEM4D_DEVICE_INTER_NODE_EFFICIENCY_PPM] = net0;
    dev.v[MEM4D_DEVICE_CALIBRATED_RUNS] = cal->n;
    cal->msg[0] = '\0'; /* a failed trial of the search is no message */
    /* A rate pinned at its search bound did not fit: the measured steps are
     * beyond what the device explains (a wrong --gpu, a log of another job,
     * or a model that misses it). The bound is kept, and said. */
    char note[M4D_MSG_MAX] = "";
    for (size_t k = 0; k < nfit && !note[0]; k++) {
        const struct cal_const *c = &cal_consts[idx[k]];
        double v = (double)dev.v[c->key];
        bool high = v >= c->hi * 0.999;
        if (c->log_scale && c->key != MEM4D_DEVICE_MOE_LOAD_SPREAD_PPM && (high || v <= c->lo * 1.001))
            m4d_msg(note, sizeof note, "%s stopped at its bound %llu: the measured steps are %s than the device "
                    "explains at %s; check --gpu or --device-file", mem4d_device_param_name(c->key),
                    (unsigned long long)dev.v[c->key], high ? "faster" : "slower",
                    high ? "full efficiency" : "the least efficiency searched");
    }
    /* Memory: the fixed workspace takes the mean allocated offset (it adds to
     * both moments the peak is taken at), the allocator overhead the
     * measured reserved over allocated. */
    if (nmem) {
        /* Within the keys' bounds, or refused: a device file then says what
         * was printed. Below the least bound the offset is clamped, and the
         * message notes it. */
        uint64_t ws_min = 0, ws_max = 0, ppm_min = 0, ppm_max = 0;
        mem4d_device_param_bounds(MEM4D_DEVICE_WORKSPACE_BYTES, &ws_min, &ws_max);
        mem4d_device_param_bounds(MEM4D_DEVICE_ALLOCATOR_OVERHEAD_PPM, &ppm_min, &ppm_max);
        double ws = (double)dev.v[MEM4D_DEVICE_WORKSPACE_BYTES] + dalloc / (double)nmem;
        double ppm = ratio / (double)nmem * 1e6;
        char why[M4D_MSG_MAX];
        if (ws > (double)ws_max) {
            m4d_msg(why, sizeof why, "the memory lines call for workspace_bytes of %.0f, above its bound %llu: the "
                    "measured peaks are not this job's on this device", ws, (unsigned long long)ws_max);
            return fail(cal, MEM4D_E_RANGE, 0, why);
        }
        if (ppm > (double)ppm_max) {
            m4d_msg(why, sizeof why, "the memory lines call for allocator_overhead_ppm of %.0f, above its bound %llu "
                    "(reserved more than twice allocated)", ppm, (unsigned long long)ppm_max);
            return fail(cal, MEM4D_E_RANGE, 0, why);
        }
        dev.v[MEM4D_DEVICE_WORKSPACE_BYTES] = ws > (double)ws_min ? (uint64_t)llround(ws) : ws_min;
        dev.v[MEM4D_DEVICE_ALLOCATOR_OVERHEAD_PPM] = ppm > (double)ppm_min ? (uint64_t)llround(ppm) : ppm_min;
        if (ws < (double)ws_min || ppm < (double)ppm_min)
            m4d_msg(cal->msg, sizeof cal->msg, "the measured peaks are below the prediction by more than %s can "
                    "take: it was set to its least value, %llu, and the prediction stays above the measurement",
                    ws < (double)ws_min ? "workspace_bytes" : "allocator_overhead_ppm",
                    (unsigned long long)(ws < (double)ws_min ? ws_min : ppm_min));
    }
    if (note[0] && !cal->msg[0])
        m4d_strlcpy(cal->msg, note, sizeof cal->msg);
    char kept[M4D_MSG_MAX];
    m4d_strlcpy(kept, cal->msg, sizeof kept);
    for (size_t i = 0; i < cal->n; i++) {
        struct cal_log *lg = &cal->log[i];
        double step, a, r;
        mem4d_status st = predict(cal, lg, &dev, &step, &a, &r);
        if (st != MEM4D_OK)
            return st;
        set_fig(lg, MEM4D_CALIBRATION_PREDICTED_STEP_AFTER_S, step);
        if (lg->have_mem) {
            set_fig(lg, MEM4D_CALIBRATION_PREDICTED_MAX_ALLOCATED_AFTER, a);
            set_fig(lg, MEM4D_CALIBRATION_PREDICTED_MAX_RESERVED_AFTER, r);
        }
    }
    m4d_strlcpy(cal->msg, kept, sizeof cal->msg);
    *device = dev;
    cal->fitted = true;
    return MEM4D_OK;
}

mem4d_status mem4d_calibration_constant(const mem4d_calibration *cal, size_t index, mem4d_device_param *key,
                                        int *fitted)
{
    if (!cal || !key || !fitted)
        return MEM4D_E_INVALID_ARG;
    if (!cal->fitted)
        return MEM4D_E_UNSUPPORTED;
    if (index >= CAL_NCONST)
        return MEM4D_E_RANGE;
    *key = cal_consts[index].key;
    *fitted = cal->chosen[index] || (cal->chosen[CAL_LEVEL] && (*key == MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM ||
                                                               *key == MEM4D_DEVICE_FP8_EFFICIENCY_PPM));
    return MEM4D_OK;
}

mem4d_status mem4d_calibration_get(const mem4d_calibration *cal, size_t log_index,
                                      mem4d_calibration_figure figure, double *value)
{
    if (!cal || !value || log_index >= cal->n || (unsigned)figure >= M4D_NCALFIG)
        return MEM4D_E_INVALID_ARG;
    /* a failed refit has written some figures and not others, and a log
     * read after a fit was in none: the figures are a standing fit's */
    if (!cal->fitted || !cal->log[log_index].fig_set[figure])
        return MEM4D_E_UNSUPPORTED;
    *value = cal->log[log_index].fig[figure];
    return MEM4D_OK;
}
