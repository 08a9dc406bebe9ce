/*
 * Fuzz the readers of what users hand `mem4d calibrate` and --device-file:
 * mem4d_calibration_add_megatron_log() (Megatron-LM training logs),
 * mem4d_calibration_add_log() (torchtitan and nanotron logs of a given job)
 * and mem4d_device_parse() (device files).
 *
 * Input: byte 0 picks the reader (odd: a device file; even from 0xC0: a
 * torchtitan (bit 1 clear) or nanotron (bit 1 set) log of a small job; other
 * even values: a Megatron-LM log with the explicit world size byte 0 / 2, 0:
 * the arguments block's); the rest is the text. A log that is read is fitted to an h100-80 (the fit
 * estimates every log), a device file that is read is formatted and read
 * back, which must give the same device.
 * SPDX-License-Identifier: MIT
 */
#include "fuzz-common.h"

/* What every reader promises: a refusal says why, an accepted log is counted,
 * and its fit (when one is possible) reproduces a positive measured step with
 * at most one constant fitted from one run. */
static void check_read_and_fit(mem4d_calibration *c, mem4d_status st)
{
    const char *msg = mem4d_calibration_message(c);
    FUZZ_REQUIRE(msg != NULL, "NULL message");
    if (st != MEM4D_OK)
        FUZZ_REQUIRE(msg[0] != '\0', "refused with %d and no message", (int)st);
    FUZZ_REQUIRE(mem4d_calibration_log_count(c) == (st == MEM4D_OK), "log count");
    if (st != MEM4D_OK)
        return;
    mem4d_device *d = NULL;
    FUZZ_REQUIRE(mem4d_device_new_preset("h100-80", &d) == MEM4D_OK, "device");
    if (mem4d_calibration_fit(c, d) == MEM4D_OK) {
        double v;
        FUZZ_REQUIRE(mem4d_calibration_get(c, 0, MEM4D_CALIBRATION_MEASURED_STEP_S, &v) == MEM4D_OK && v > 0,
                     "measured step");
        FUZZ_REQUIRE(mem4d_calibration_get(c, 0, MEM4D_CALIBRATION_PREDICTED_STEP_AFTER_S, &v) == MEM4D_OK && v > 0,
                     "fitted step");
        mem4d_device_param key;
        int fitted, n = 0;
        for (size_t i = 0; mem4d_calibration_constant(c, i, &key, &fitted) == MEM4D_OK; i++)
            n += fitted;
        FUZZ_REQUIRE(n <= 1, "one run fitted %d constants", n);
    }
    mem4d_device_free(d);
}

static void fuzz_log(const char *text, size_t len, uint64_t world)
{
    /* A small job for logs without an arguments block. */
    static const char *const argv[] = {"--num-layers", "2", "--hidden-size", "256", "--num-attention-heads", "4",
                                       "--seq-length", "512", "--max-position-embeddings", "512",
                                       "--vocab-size", "1024", "--micro-batch-size", "1",
                                       "--global-batch-size", "8"};
    mem4d_calibration *c = NULL;
    FUZZ_REQUIRE(mem4d_calibration_new(&c) == MEM4D_OK, "new");
    mem4d_status st = mem4d_calibration_add_megatron_log(c, text, len, (int)(sizeof argv / sizeof argv[0]), argv,
                                                         world ? world : 8);
    check_read_and_fit(c, st);
    mem4d_calibration_free(c);
}

/* A torchtitan or nanotron log of a small job: read, then fitted. */
static void fuzz_framework_log(const char *text, size_t len, mem4d_log_format format)
{
    mem4d_calibration *c = NULL;
    mem4d_model *m = NULL;
    mem4d_layout *l = NULL;
    FUZZ_REQUIRE(mem4d_calibration_new(&c) == MEM4D_OK && mem4d_model_new_preset("llama3.2-1b", &m) == MEM4D_OK &&
                     mem4d_layout_new(&l) == MEM4D_OK,
                 "new");
    FUZZ_REQUIRE(mem4d_layout_set(l, MEM4D_LAYOUT_WORLD, 8) == MEM4D_OK &&
                     mem4d_layout_set(l, MEM4D_LAYOUT_SEQ_LENGTH, 2048) == MEM4D_OK &&
                     mem4d_layout_set(l, MEM4D_LAYOUT_GLOBAL_BATCH, 64) == MEM4D_OK,
                 "layout");
    mem4d_status st = mem4d_calibration_add_log(c, format, text, len, m, l);
    check_read_and_fit(c, st);
    mem4d_layout_free(l);
    mem4d_model_free(m);
    mem4d_calibration_free(c);
}

static void fuzz_device(const char *text, size_t len)
{
    mem4d_device *d = NULL, *e = NULL;
    char why[256], buf[8192];
    FUZZ_REQUIRE(mem4d_device_new(&d) == MEM4D_OK && mem4d_device_new(&e) == MEM4D_OK, "new");
    mem4d_status st = mem4d_device_parse(d, text, len, why, sizeof why);
    if (st != MEM4D_OK) {
        FUZZ_REQUIRE(why[0] != '\0', "refused with %d and no message", (int)st);
    } else {
        size_t n = 0;
        FUZZ_REQUIRE(mem4d_device_format(d, buf, sizeof buf, &n) == MEM4D_OK, "format");
        FUZZ_REQUIRE(mem4d_device_parse(e, buf, n, why, sizeof why) == MEM4D_OK, "read back: %s", why);
        for (size_t k = 0; k < mem4d_device_param_count(); k++) {
            uint64_t x = 0, y = 0;
            mem4d_device_get(d, (mem4d_device_param)k, &x);
            mem4d_device_get(e, (mem4d_device_param)k, &y);
            FUZZ_REQUIRE(x == y, "key %zu differs after a round trip", k);
        }
    }
    mem4d_device_free(e);
    mem4d_device_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *text = (const char *)data + 1;
    if (data[0] & 1)
        fuzz_device(text, size - 1);
    else if (data[0] >= 0xC0)
        fuzz_framework_log(text, size - 1, data[0] & 2 ? MEM4D_LOG_NANOTRON : MEM4D_LOG_TORCHTITAN);
    else
        fuzz_log(text, size - 1, data[0] / 2);
    return 0;
}
