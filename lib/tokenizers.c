/*
 * Vocabulary sizes of the tokenizers launch scripts name, as data: Megatron-LM's
 * --tokenizer-type, Pai-Megatron-Patch's --patch-tokenizer-type and the
 * Hugging Face hub ids behind HuggingFaceTokenizer / PretrainedFromHF /
 * HFTokenizer. How each size enters the padded vocabulary is in
 * import_megatron.c (apply_vocab); doc/formulas.md gives the rules and the
 * sources below are the ones the numbers were read from.
 * SPDX-License-Identifier: MIT
 */
#include <ctype.h>
#include <string.h>

#include "import.h"

/* Megatron-LM megatron/training/tokenizer/tokenizer.py (commit 4ff7686c) and
 * Megatron-DeepSpeed megatron/tokenizer/tokenizer.py (microsoft f4157bea,
 * bigscience-workshop 8387ae17):
 * - GPT2BPETokenizer: len(encoder) of GPT-2's vocab.json, 50257 entries
 *   (openai-community/gpt2 config.json "vocab_size": 50257);
 * - BertWordPiece*: BERT's vocab.txt, 30522 entries uncased and 28996 cased
 *   (google-bert/bert-large-{uncased,cased} config.json), plus the [BOS] and
 *   [EOS] tokens _BertWordPieceTokenizer adds, plus --vocab-extra-ids;
 * - Llama2Tokenizer: the Llama 2 SentencePiece model, 32000 pieces
 *   (meta-llama/Llama-2-7b-hf config.json "vocab_size": 32000);
 * - NullTokenizer: --vocab-size plus the end-of-document token;
 * - TikTokenizer: --vocab-size, 2^17 when absent (CustomTikTokenizer);
 * - HuggingFaceTokenizer and PretrainedFromHF: len(tokenizer), base
 *   vocabulary and added tokens; Megatron-DeepSpeed's HFTokenizer:
 *   tokenizer.vocab_size, the base vocabulary alone;
 * - SentencePiece, GPTSentencePiece, Multimodal and SFT tokenizers read a
 *   file this library cannot see. */
const struct m4d_tokenizer_type m4d_tokenizer_types[] = {
    {"BertWordPieceCase", M4D_VOCAB_BERT, 28996 + 2},
    {"BertWordPieceLowerCase", M4D_VOCAB_BERT, 30522 + 2},
    {"GPT2BPETokenizer", M4D_VOCAB_FIXED, 50257},
    {"GPTSentencePieceTokenizer", M4D_VOCAB_FILE, 0},
    {"HFTokenizer", M4D_VOCAB_HUB_BASE, 0},
    {"HuggingFaceTokenizer", M4D_VOCAB_HUB_LEN, 0},
    {"Llama2Tokenizer", M4D_VOCAB_FIXED, 32000},
    {"MultimodalTokenizer", M4D_VOCAB_HUB_LEN, 0},
    {"NullMultimodalTokenizer", M4D_VOCAB_NULL, 0},
    {"NullTokenizer", M4D_VOCAB_NULL, 0},
    {"PretrainedFromHF", M4D_VOCAB_HUB_LEN, 0},
    {"SFTTokenizer", M4D_VOCAB_FILE, 0},
    {"SentencePieceTokenizer", M4D_VOCAB_FILE, 0},
    {"TikTokenizer", M4D_VOCAB_TIKTOKEN, UINT64_C(1) << 17},
};
const size_t m4d_tokenizer_type_n = sizeof m4d_tokenizer_types / sizeof *m4d_tokenizer_types;

/* Pai-Megatron-Patch megatron_patch/tokenizer/__init__.py (commit a098ca5a):
 * most types set the padded vocabulary outright to the tokenizer's size plus
 * --extra-vocab-size (no further padding); a few fix it to a constant. The
 * base sizes: LLama2/Mixtral tokenizer.vocab_size 32000 (Llama 2, Mixtral);
 * LLama3 tokenizer.vocab_size 128000 (Llama 3's base vocabulary, before its
 * 256 reserved special tokens); Qwen2/Qwen3 len(tokenizer.encoder) 151643
 * (Qwen's vocab.json, before the added tokens). GPT2BPETokenizer is
 * Megatron-LM's own. Types whose size depends on the checkpoint's files
 * (LLamaTokenizer, MistralTokenizer, DeepSeekV2Tokenizer, Yi, Falcon,
 * Baichuan, Qwen-1, Jieba, OPT) need the vocabulary from elsewhere. */
const struct m4d_tokenizer_type m4d_patch_tokenizer_types[] = {
    {"BloomTokenizerFromHF", M4D_VOCAB_PADDED, 250880},
    {"ChatGLMTokenizerFromHF", M4D_VOCAB_PADDED, 130528},
    {"GLM10BZHTokenizerFromHF", M4D_VOCAB_PADDED, 50048},
    {"GPT2BPETokenizer", M4D_VOCAB_FIXED, 50257},
    {"IcetkGLM130BTokenizer", M4D_VOCAB_PADDED, 150528},
    {"LLama2Tokenizer", M4D_VOCAB_PLUS_EXTRA, 32000},
    {"LLama3Tokenizer", M4D_VOCAB_PLUS_EXTRA, 128000},
    {"MixtralTokenizer", M4D_VOCAB_PLUS_EXTRA, 32000},
    {"Qwen2Tokenizer", M4D_VOCAB_PLUS_EXTRA, 151643},
    {"Qwen3Tokenizer", M4D_VOCAB_PLUS_EXTRA, 151643},
    {"StarcoderTokenizerFromHF", M4D_VOCAB_PADDED, 49152},
    {"VicunaTokenizerFromHF", M4D_VOCAB_PADDED, 32000},
};
const size_t m4d_patch_tokenizer_type_n = sizeof m4d_patch_tokenizer_types / sizeof *m4d_patch_tokenizer_types;

/* Hub tokenizers: a model family's name up to its size, then a digit. base
 * is tokenizer.vocab_size, len is len(tokenizer) (base plus added tokens,
 * the last id of tokenizer_config.json's "added_tokens_decoder" plus one):
 * - Llama 2: 32000 pieces, no added tokens;
 * - Llama 3, 3.1, 3.2, 3.3: 128000 + 256 reserved special tokens (ids
 *   128000..128255 in tokenizer_config.json), 128256 = config "vocab_size";
 * - Mistral-7B-v0.1 and Mixtral-8x7B: 32000, no added tokens;
 * - Qwen2: 151643 + <|endoftext|>, <|im_start|>, <|im_end|> = 151646;
 *   Qwen2.5: + 22 added tokens through <|file_sep|> (id 151664) = 151665;
 *   Qwen3: + 26 through </think> (id 151668) = 151669;
 * - GPT-2: 50257, no added tokens. */
static const struct m4d_hub_tokenizer hub_tokenizers[] = {
    {"gpt2", 50257, 50257, true},
    {"Llama-2-", 32000, 32000, false},
    {"Meta-Llama-3-", 128000, 128256, false},
    {"Meta-Llama-3.1-", 128000, 128256, false},
    {"Llama-3.1-", 128000, 128256, false},
    {"Llama-3.2-", 128000, 128256, false},
    {"Llama-3.3-", 128000, 128256, false},
    {"Mistral-7B-v0.1", 32000, 32000, true},
    {"Mistral-7B-Instruct-v0.1", 32000, 32000, true},
    {"Mixtral-8x7B-", 32000, 32000, false},
    {"Qwen2-", 151643, 151646, false},
    {"Qwen2.5-", 151643, 151665, false},
    {"Qwen3-", 151643, 151669, false},
};

const struct m4d_tokenizer_type *m4d_tokenizer_find(const struct m4d_tokenizer_type *table, size_t n,
                                                    const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (m4d_streq_ci(name, table[i].name))
            return &table[i];
    return NULL;
}

static bool prefix_ci(const char *s, const char *prefix)
{
    for (; *prefix; s++, prefix++)
        if (tolower((unsigned char)*s) != tolower((unsigned char)*prefix))
            return false;
    return true;
}

/* The last component of a hub id or a local path ("meta-llama/Meta-Llama-3-8B",
 * "/ckpt/Meta-Llama-3-8B/"), without a trailing slash, into buf. */
static void last_component(const char *id, char *buf, size_t size)
{
    size_t len = strlen(id);
    while (len > 0 && id[len - 1] == '/')
        len--;
    size_t start = len;
    while (start > 0 && id[start - 1] != '/')
        start--;
    size_t n = len - start < size - 1 ? len - start : size - 1;
    memcpy(buf, id + start, n);
    buf[n] = '\0';
}

const struct m4d_hub_tokenizer *m4d_hub_tokenizer_find(const char *id)
{
    char name[128];
    last_component(id, name, sizeof name);
    /* Vision and vision-language variants add image tokens. */
    if (strstr(name, "-Vision") || strstr(name, "-VL") || strstr(name, "-vision"))
        return NULL;
    for (size_t i = 0; i < sizeof hub_tokenizers / sizeof *hub_tokenizers; i++) {
        const struct m4d_hub_tokenizer *t = &hub_tokenizers[i];
        size_t n = strlen(t->prefix);
        if (t->exact ? m4d_streq_ci(name, t->prefix)
                     : prefix_ci(name, t->prefix) && isdigit((unsigned char)name[n]))
            return t;
    }
    return NULL;
}
