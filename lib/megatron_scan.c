/*
 * Import: the Megatron-LM argument scanner. Reads an argument vector the way
 * argparse does (a flag's value after '=' or as the next word, the last
 * occurrence wins, nargs='+' lists), looks each flag up in the flag table
 * (megatron_flags.c) and records the modelled ones; the appliers in
 * import_megatron.c give them their meaning.
 * SPDX-License-Identifier: MIT
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "megatron.h"

/* A flag's name without "--" and "=value", copied so it can be looked up. */
struct flag_tok {
    char name[96];
    const char *value; /* after '=', or NULL */
};

static void split_flag(const char *arg, struct flag_tok *tok)
{
    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    if (len >= sizeof tok->name)
        len = m4d_utf8_cut(name, sizeof tok->name - 1); /* long unknown flags are only ever warned about */
    memcpy(tok->name, name, len);
    tok->name[len] = '\0';
    tok->value = eq ? eq + 1 : NULL;
}

static bool is_flag(const char *arg)
{
    return arg[0] == '-' && arg[1] == '-' && arg[2] != '\0';
}

/* Integer value of a flag: digits only; a sign or junk names the flag. */
mem4d_status m4d_megatron_parse_int(mem4d_import *imp, const char *flag, const char *text, uint64_t *out)
{
    if (text[0] == '-' && isdigit((unsigned char)text[1]))
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "--%s %s: the value must not be negative", flag, text);
    if (!isdigit((unsigned char)text[0]))
        return m4d_imp_fail(imp, MEM4D_E_PARSE, "--%s: '%s' is not a whole number", flag, text);
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (*end != '\0')
        return m4d_imp_fail(imp, MEM4D_E_PARSE, "--%s: '%s' is not a whole number", flag, text);
    if (errno == ERANGE)
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "--%s %s does not fit in 64 bits", flag, text);
    *out = (uint64_t)v;
    return MEM4D_OK;
}

/* A finite decimal number (Megatron's type=float). */
mem4d_status m4d_megatron_parse_number(mem4d_import *imp, const char *flag, const char *text, double *out)
{
    char *end = NULL;
    errno = 0;
    *out = m4d_strtod(text, &end);
    if (end == text || *end != '\0' || errno == ERANGE || !isfinite(*out))
        return m4d_imp_fail(imp, MEM4D_E_PARSE, "--%s: '%s' is not a number", flag, text);
    return MEM4D_OK;
}

static mem4d_status parse_real(mem4d_import *imp, const char *flag, const char *text, double *out)
{
    double r;
    TRY(m4d_megatron_parse_number(imp, flag, text, &r));
    if (r < 0.0 || r > 1.0)
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "--%s %s is not a probability in [0, 1]", flag, text);
    *out = r;
    return MEM4D_OK;
}

static mem4d_status parse_word(mem4d_import *imp, const struct m4d_megatron_flag *d, const char *text,
                               uint64_t *out)
{
    for (uint64_t i = 0; d->choices[i]; i++) {
        if (m4d_streq_ci(text, d->choices[i])) {
            *out = i;
            return MEM4D_OK;
        }
    }
    char list[160] = "";
    size_t used = 0;
    for (size_t i = 0; d->choices[i] && used < sizeof list; i++) {
        int n = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", d->choices[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return m4d_imp_fail(imp, MEM4D_E_PARSE, "--%s: '%s' is not one of %s", d->flag, text, list);
}

/* A list of choices (nargs='+'): the first word, then every following word
 * that is not a flag (argc 0: the value came after '=', alone). */
static mem4d_status parse_bits(mem4d_import *imp, const struct m4d_megatron_flag *d, const char *text, int argc,
                               const char *const *argv, int *i, uint64_t *out, unsigned *words)
{
    uint64_t one = 0;
    *out = 0;
    *words = 0;
    for (;;) {
        TRY(parse_word(imp, d, text, &one));
        *out |= UINT64_C(1) << one;
        ++*words;
        if (*i + 1 >= argc || !argv[*i + 1] || is_flag(argv[*i + 1]))
            return MEM4D_OK;
        text = argv[++*i];
    }
}

/* Read one modelled flag at argv[*i]; advances *i past its value. */
static mem4d_status read_opt(mem4d_import *imp, const struct m4d_megatron_flag *row, const struct flag_tok *tok, int argc,
                             const char *const *argv, int *i, struct m4d_opt_val *vals)
{
    const struct m4d_megatron_flag *d = row;
    struct m4d_opt_val *v = &vals[d->slot];
    if (d->kind == M4D_FLAG_SWITCH) {
        if (tok->value)
            return m4d_imp_fail(imp, MEM4D_E_PARSE, "--%s takes no value (got '%s')", d->flag, tok->value);
        v->given = true;
        v->at = *i;
        v->u = 1;
        return MEM4D_OK;
    }
    const char *text = tok->value;
    if (!text) {
        if (*i + 1 >= argc || !argv[*i + 1] || is_flag(argv[*i + 1]))
            return m4d_imp_fail(imp, MEM4D_E_MISSING, "--%s needs a value", d->flag);
        text = argv[++*i];
    }
    if (text[0] == '\0')
        return m4d_imp_fail(imp, MEM4D_E_MISSING, "--%s has an empty value", d->flag);
    mem4d_status st = MEM4D_OK;
    switch (d->kind) {
    case M4D_FLAG_INT: st = m4d_megatron_parse_int(imp, d->flag, text, &v->u); break;
    case M4D_FLAG_REAL: st = parse_real(imp, d->flag, text, &v->r); break;
    case M4D_FLAG_WORD: st = parse_word(imp, d, text, &v->u); break;
    case M4D_FLAG_TEXT: v->s = text; break;
    case M4D_FLAG_BITS: st = parse_bits(imp, d, text, tok->value ? 0 : argc, argv, i, &v->u, &v->words); break;
    default: break;
    }
    if (st == MEM4D_OK) {
        v->given = true;
        v->at = *i;
    }
    return st;
}

/* Skip a flag that is not modelled and the values after it (Megatron has
 * no positional arguments, so every following non-flag word is its value). */
static void skip_values(const struct flag_tok *tok, int argc, const char *const *argv, int *i)
{
    if (tok->value)
        return;
    while (*i + 1 < argc && argv[*i + 1] && !is_flag(argv[*i + 1]))
        ++*i;
}

/* slime's train.py overrides two Megatron defaults after parsing
 * (_set_default_megatron_args, slime/backends/megatron_utils/arguments.py at
 * THUDM/slime@624b824): use_distributed_optimizer = True ("always use zero
 * optimizer") and bf16 = not fp16. */
static void slime_defaults(int argc, struct m4d_opt_val *vals, bool entropy)
{
    /* its loss: log-probabilities (and with --entropy-coef not 0 the
     * entropy) on the fp32 logits, not Megatron's cross entropy */
    vals[MF_LOGPROB_LOSS].given = true;
    vals[MF_LOGPROB_LOSS].u = entropy ? 2 : 1;
    vals[MF_LOGPROB_LOSS].at = argc;
    vals[MF_DIST_OPT].given = true;
    vals[MF_DIST_OPT].at = argc;
    if (!vals[MF_FP16].given) {
        vals[MF_BF16].given = true;
        vals[MF_BF16].at = argc;
    }
}

mem4d_status m4d_megatron_scan(mem4d_import *imp, int argc, const char *const *argv, struct m4d_opt_val *vals)
{
    const struct m4d_trainer_flag *warned = NULL; /* one warning per trainer family */
    bool slime = false, entropy = false;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!arg)
            return m4d_imp_fail(imp, MEM4D_E_INVALID_ARG, "argument %d is NULL", i);
        if (!is_flag(arg)) {
            m4d_imp_warn(imp, "'%s' is not a flag; Megatron-LM would reject it", arg);
            continue;
        }
        struct flag_tok tok;
        split_flag(arg, &tok);
        const struct m4d_megatron_flag *row = m4d_megatron_flag_find(tok.name);
        if (row && m4d_flag_is_read(row)) {
            TRY(read_opt(imp, row, &tok, argc, argv, &i, vals));
            if (row->slot == MF_SPEC) /* nargs='*': a module, then a function */
                skip_values(&tok, argc, argv, &i);
            continue;
        }
        const struct m4d_trainer_flag *trainer = row ? NULL : m4d_trainer_flag_find(tok.name);
        slime |= trainer && strcmp(trainer->trainer, "slime") == 0;
        if (trainer && strcmp(tok.name, "entropy-coef") == 0) { /* last one wins, as argparse */
            const char *value = tok.value ? tok.value : i + 1 < argc && argv[i + 1] ? argv[i + 1] : "0";
            entropy = m4d_strtod(value, NULL) != 0.0;
        }
        if (row && row->kind == M4D_FLAG_WARN)
            m4d_imp_warn(imp, "--%s %s", row->flag, row->why);
        else if (trainer && trainer->why && trainer != warned) {
            m4d_imp_warn(imp, "--%s: %s %s", tok.name, trainer->trainer, trainer->why);
            warned = trainer;
        } else if (!row && !trainer)
            m4d_imp_warn(imp, "--%s is not a flag this version knows; it was ignored", tok.name);
        skip_values(&tok, argc, argv, &i);
    }
    if (slime)
        slime_defaults(argc, vals, entropy);
    return MEM4D_OK;
}
