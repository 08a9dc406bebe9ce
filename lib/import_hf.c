/*
 * Import: Hugging Face config.json files (built only with json-c; without
 * it import_hf_none.c provides the same entry points).
 * SPDX-License-Identifier: MIT
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "import.h"

/* A config.json is a few kilobytes; anything this large is not one. */
#define HF_MAX_BYTES (16u << 20)

/* What a non-regular file is, for the message that refuses it. */
static const char *file_kind(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO (named pipe)";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a plain file";
}

/* An integer member: absent (or null) leaves *given false; wrong types,
 * fractions and negative numbers are errors naming the key. */
static mem4d_status hf_uint(mem4d_import *imp, struct json_object *root, const char *key,
                            bool required, uint64_t *out, bool *given)
{
    struct json_object *v = NULL;
    *given = false;
    if (!json_object_object_get_ex(root, key, &v) || json_object_get_type(v) == json_type_null) {
        if (required)
            return m4d_imp_fail(imp, MEM4D_E_MISSING, "config.json has no \"%s\"", key);
        return MEM4D_OK;
    }
    switch (json_object_get_type(v)) {
    case json_type_int:
        if (json_object_get_int64(v) < 0)
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "\"%s\" is negative (%lld)", key,
                            (long long)json_object_get_int64(v));
        *out = json_object_get_uint64(v);
        if (*out == UINT64_MAX) /* json-c saturates larger numbers */
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "\"%s\" is too large", key);
        break;
    case json_type_double: {
        /* 4096.0 is an integer written oddly; 4096.5 and 1e30 are not. */
        double d = json_object_get_double(v);
        if (d < 0.0)
            return m4d_imp_fail(imp, MEM4D_E_RANGE, "\"%s\" is negative (%g)", key, d);
        if (!(d <= 9007199254740992.0) || d != floor(d))
            return m4d_imp_fail(imp, MEM4D_E_JSON, "\"%s\" is %g, not a whole number", key, d);
        *out = (uint64_t)d;
        break;
    }
    default:
        return m4d_imp_fail(imp, MEM4D_E_JSON, "\"%s\" is a %s, not a number", key,
                        json_type_to_name(json_object_get_type(v)));
    }
    *given = true;
    return MEM4D_OK;
}

static mem4d_status hf_bool(mem4d_import *imp, struct json_object *root, const char *key, bool *out)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(root, key, &v) || json_object_get_type(v) == json_type_null)
        return MEM4D_OK;
    if (json_object_get_type(v) != json_type_boolean)
        return m4d_imp_fail(imp, MEM4D_E_JSON, "\"%s\" is a %s, not true or false", key,
                        json_type_to_name(json_object_get_type(v)));
    *out = json_object_get_boolean(v);
    return MEM4D_OK;
}

/* The families read here; all are Llama-shaped decoders. */
enum hf_family { HF_LLAMA, HF_MISTRAL, HF_QWEN2, HF_MIXTRAL, HF_QWEN2_MOE, HF_OTHER };

static mem4d_status hf_family_of(mem4d_import *imp, struct json_object *root, enum hf_family *fam)
{
    struct json_object *v = NULL;
    *fam = HF_OTHER;
    if (!json_object_object_get_ex(root, "model_type", &v)) {
        m4d_imp_warn(imp, "config.json has no \"model_type\"; read as a Llama-like model");
        *fam = HF_LLAMA;
        return MEM4D_OK;
    }
    if (json_object_get_type(v) != json_type_string)
        return m4d_imp_fail(imp, MEM4D_E_JSON, "\"model_type\" is a %s, not a string",
                        json_type_to_name(json_object_get_type(v)));
    const char *t = json_object_get_string(v);
    static const struct { const char *name; enum hf_family fam; } known[] = {
        {"llama", HF_LLAMA},     {"mistral", HF_MISTRAL},       {"qwen2", HF_QWEN2},
        {"mixtral", HF_MIXTRAL}, {"qwen2_moe", HF_QWEN2_MOE},
    };
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (strcmp(t, known[i].name) == 0)
            *fam = known[i].fam;
    if (*fam == HF_OTHER) {
        char shown[65]; /* a long name is cut, at a character boundary */
        m4d_strlcpy(shown, t, sizeof shown);
        m4d_imp_warn(imp, "model_type \"%s\" is not llama, mistral, qwen2, mixtral or qwen2_moe; "
                     "read as a Llama-like model", shown);
        *fam = HF_LLAMA;
    }
    return MEM4D_OK;
}

/* The integer keys and where they go. */
static const struct {
    const char *key;
    mem4d_model_param param;
    bool required;
} hf_keys[] = {
    {"hidden_size", MEM4D_MODEL_HIDDEN_SIZE, true},
    {"intermediate_size", MEM4D_MODEL_FFN_HIDDEN_SIZE, true},
    {"num_hidden_layers", MEM4D_MODEL_NUM_LAYERS, true},
    {"num_attention_heads", MEM4D_MODEL_NUM_HEADS, true},
    {"vocab_size", MEM4D_MODEL_VOCAB_SIZE, true},
    {"num_key_value_heads", MEM4D_MODEL_NUM_KV_HEADS, false},
    {"head_dim", MEM4D_MODEL_HEAD_DIM, false},
    {"max_position_embeddings", MEM4D_MODEL_MAX_POSITION, false},
    {"num_local_experts", MEM4D_MODEL_NUM_EXPERTS, false},       /* Mixtral */
    {"num_experts", MEM4D_MODEL_NUM_EXPERTS, false},             /* Qwen2-MoE */
    {"num_experts_per_tok", MEM4D_MODEL_EXPERT_TOPK, false},
    {"moe_intermediate_size", MEM4D_MODEL_EXPERT_FFN_SIZE, false},
    {"shared_expert_intermediate_size", MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE, false},
};

static mem4d_status hf_apply(mem4d_import *imp, struct json_object *root, mem4d_model *m)
{
    enum hf_family fam;
    TRY(hf_family_of(imp, root, &fam));
    /* Start from the Llama shape: keys a config leaves out take HF defaults
     * (k = a, head_dim = h / a, untied), not whatever the handle held. */
    m->v[MEM4D_MODEL_NUM_KV_HEADS] = 0;
    m->v[MEM4D_MODEL_HEAD_DIM] = 0;
    m->v[MEM4D_MODEL_NUM_EXPERTS] = 0;
    m->v[MEM4D_MODEL_EXPERT_TOPK] = 0;
    m->v[MEM4D_MODEL_EXPERT_FFN_SIZE] = 0;
    m->v[MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE] = 0;
    for (size_t i = 0; i < sizeof hf_keys / sizeof *hf_keys; i++) {
        uint64_t v = 0;
        bool given;
        char what[64];
        TRY(hf_uint(imp, root, hf_keys[i].key, hf_keys[i].required, &v, &given));
        m4d_msg(what, sizeof what, "\"%s\"", hf_keys[i].key);
        if (given)
            TRY(SET_M(m, hf_keys[i].param, v, what));
    }
    bool tied = false, attn_bias = false, mlp_bias = false;
    TRY(hf_bool(imp, root, "tie_word_embeddings", &tied));
    TRY(hf_bool(imp, root, "attention_bias", &attn_bias));
    TRY(hf_bool(imp, root, "mlp_bias", &mlp_bias));
    if (attn_bias)
        m4d_imp_warn(imp, "\"attention_bias\" also puts a bias on the output projection; only the QKV bias is modelled");
    if (mlp_bias)
        m4d_imp_warn(imp, "\"mlp_bias\" biases are not modelled");
    TRY(SET_M(m, MEM4D_MODEL_TIED_EMBEDDINGS, tied, "\"tie_word_embeddings\""));
    TRY(SET_M(m, MEM4D_MODEL_QKV_BIAS, fam == HF_QWEN2 || fam == HF_QWEN2_MOE || attn_bias, "\"attention_bias\""));
    TRY(SET_M(m, MEM4D_MODEL_NORM, 0, "normalization"));
    TRY(SET_M(m, MEM4D_MODEL_GATED_MLP, 1, "gated MLP"));
    m4d_strlcpy(m->name, "custom", sizeof m->name);
    return MEM4D_OK;
}

mem4d_status m4d_imp_parse_object(mem4d_import *imp, const char *json, size_t size, const char *doc,
                                  struct json_object **out)
{
    *out = NULL;
    if (size > INT_MAX)
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "the document is too large (%zu bytes)", size);
    struct json_tokener *tok = json_tokener_new();
    if (!tok)
        return m4d_imp_fail(imp, MEM4D_E_NOMEM, "out of memory while parsing JSON");
    struct json_object *root = json_tokener_parse_ex(tok, json, (int)size);
    enum json_tokener_error err = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    mem4d_status st = MEM4D_OK;
    if (err == json_tokener_continue || (!root && err == json_tokener_success)) {
        st = m4d_imp_fail(imp, MEM4D_E_JSON, "the JSON document is truncated");
    } else if (err != json_tokener_success) {
        st = m4d_imp_fail(imp, MEM4D_E_JSON, "malformed JSON near byte %zu: %s", end, json_tokener_error_desc(err));
    } else {
        while (end < size && isspace((unsigned char)json[end]))
            end++;
        if (end < size)
            st = m4d_imp_fail(imp, MEM4D_E_JSON, "unexpected text after the JSON document at byte %zu", end);
        else if (json_object_get_type(root) != json_type_object)
            st = m4d_imp_fail(imp, MEM4D_E_JSON, "the top level of %s is a %s, not an object", doc,
                          json_type_to_name(json_object_get_type(root)));
    }
    if (st != MEM4D_OK) {
        json_object_put(root);
        return st;
    }
    *out = root;
    return MEM4D_OK;
}

static mem4d_status hf_parse(mem4d_import *imp, const char *json, size_t size, mem4d_model *model)
{
    struct json_object *root = NULL;
    mem4d_status st = m4d_imp_parse_object(imp, json, size, "config.json", &root);
    if (st != MEM4D_OK)
        return st;
    mem4d_model m = *model;
    st = hf_apply(imp, root, &m);
    if (st == MEM4D_OK)
        *model = m;
    json_object_put(root);
    return st;
}


mem4d_status mem4d_import_hf_config_buffer(mem4d_import *import, const char *json, size_t size,
                                           mem4d_model *model)
{
    if (!import)
        return MEM4D_E_INVALID_ARG;
    m4d_imp_reset(import);
    if (!json || !model)
        return m4d_imp_fail(import, MEM4D_E_INVALID_ARG, "NULL document or model");
    if (size == 0)
        return m4d_imp_fail(import, MEM4D_E_JSON, "the JSON document is empty");
    mem4d_status st = hf_parse(import, json, size, model);
    m4d_imp_done(import);
    return st;
}

/* Read a whole small file; *buf is malloc'ed. Only a regular file is read:
 * a FIFO or a terminal could block forever and a directory is not a
 * document, so the file is opened without blocking and checked first. */
mem4d_status m4d_imp_read_file(mem4d_import *imp, const char *path, const char *doc, char **buf, size_t *size)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return m4d_imp_fail(imp, MEM4D_E_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int err = errno;
        close(fd);
        return m4d_imp_fail(imp, MEM4D_E_IO, "cannot read %s: %s", path, strerror(err));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return m4d_imp_fail(imp, MEM4D_E_IO, "%s is %s, not a regular file; give the path of a %s",
                            path, file_kind(sb.st_mode), doc);
    }
    if (sb.st_size > (off_t)HF_MAX_BYTES) {
        close(fd);
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "%s is larger than %u bytes; not a %s", path,
                            HF_MAX_BYTES, doc);
    }
    char *b = malloc(HF_MAX_BYTES + 1);
    if (!b) {
        close(fd);
        return m4d_imp_fail(imp, MEM4D_E_NOMEM, "out of memory reading %s", path);
    }
    /* The file may still grow while it is read: read up to one byte past the limit. */
    size_t n = 0;
    while (n < HF_MAX_BYTES + 1) {
        ssize_t r = read(fd, b + n, HF_MAX_BYTES + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int err = errno;
            close(fd);
            free(b);
            return m4d_imp_fail(imp, MEM4D_E_IO, "cannot read %s: %s", path, strerror(err));
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n > HF_MAX_BYTES) {
        free(b);
        return m4d_imp_fail(imp, MEM4D_E_RANGE, "%s is larger than %u bytes; not a %s", path,
                            HF_MAX_BYTES, doc);
    }
    *buf = b;
    *size = n;
    return MEM4D_OK;
}
mem4d_status mem4d_import_hf_config(mem4d_import *import, const char *path, mem4d_model *model)
{
    if (!import)
        return MEM4D_E_INVALID_ARG;
    m4d_imp_reset(import);
    if (!path || !model)
        return m4d_imp_fail(import, MEM4D_E_INVALID_ARG, "NULL path or model");
    char *buf = NULL;
    size_t size = 0;
    mem4d_status st = m4d_imp_read_file(import, path, "config.json", &buf, &size);
    if (st != MEM4D_OK)
        return st;
    st = mem4d_import_hf_config_buffer(import, buf, size, model);
    free(buf);
    return st;
}
