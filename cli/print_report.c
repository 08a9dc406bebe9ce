/*
 * The report printers of `estimate` and `check`: the per-stage table and
 * the JSON object.
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

double cli_gib(uint64_t bytes)
{
    return (double)bytes / 1073741824.0;
}

static uint64_t term(const mem4d_report *r, uint32_t stage, mem4d_term t)
{
    uint64_t v = 0;
    mem4d_report_get(r, stage, t, &v);
    return v;
}

static double metric(const mem4d_report *r, mem4d_metric m)
{
    double v = 0;
    mem4d_report_metric(r, m, &v);
    return v;
}

/* Speed and where the step goes, when the report has them. */
static void print_speed(FILE *out, const mem4d_report *r, const mem4d_layout *layout, const mem4d_device *dev,
                        uint64_t world)
{
    double step;
    if (mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &step) != MEM4D_OK) {
        uint64_t peak = 0;
        mem4d_device_get(dev, MEM4D_DEVICE_PEAK_FLOPS, &peak);
        fprintf(out, "speed: not predicted: %s\n",
                peak ? "give --gbs, the global batch (the step is its micro-batches)"
                     : "the device has no peak_flops (set it: --device-set peak_flops=..., or in the device file)");
        return;
    }
    double w = (double)(world ? world : 1), tok = metric(r, MEM4D_METRIC_TOKENS_PER_S);
    fprintf(out, "speed: step %.3f s (%.3f-%.3f), %.0f tokens/s (%.0f-%.0f; %.0f per GPU), "
                 "%.1f TFLOP/s per GPU (%.1f-%.1f), MFU %.1f%% (%.1f-%.1f%%) of the %s peak %.0f TFLOP/s\n",
            step, metric(r, MEM4D_METRIC_STEP_TIME_LOW_S), metric(r, MEM4D_METRIC_STEP_TIME_HIGH_S), tok,
            metric(r, MEM4D_METRIC_TOKENS_PER_S_LOW), metric(r, MEM4D_METRIC_TOKENS_PER_S_HIGH), tok / w,
            metric(r, MEM4D_METRIC_TFLOPS_PER_GPU), metric(r, MEM4D_METRIC_TFLOPS_PER_GPU_LOW),
            metric(r, MEM4D_METRIC_TFLOPS_PER_GPU_HIGH), 100 * metric(r, MEM4D_METRIC_MFU),
            100 * metric(r, MEM4D_METRIC_MFU_LOW), 100 * metric(r, MEM4D_METRIC_MFU_HIGH), cli_mfu_peak_name(layout, dev),
            metric(r, MEM4D_METRIC_MFU_PEAK_FLOPS) / 1e12);
    fputs("band: where 90% of measured runs fell around the prediction (doc/perf.md, \"Uncertainty\")\n", out);
    static const struct {
        const char *label;
        mem4d_metric m;
    } parts[] = {
        {"compute", MEM4D_METRIC_COMPUTE_TIME_S}, {"TP", MEM4D_METRIC_TP_COMM_S},
        {"CP", MEM4D_METRIC_CP_COMM_S},           {"DP", MEM4D_METRIC_DP_COMM_S},
        {"PP", MEM4D_METRIC_PP_COMM_S},           {"EP", MEM4D_METRIC_EP_COMM_S},
        {"bubble", MEM4D_METRIC_BUBBLE_S},        {"optimizer", MEM4D_METRIC_OPTIMIZER_S},
        {"straggler", MEM4D_METRIC_STRAGGLER_S},
    };
    fputs("step:", out);
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        double v = metric(r, parts[i].m);
        fprintf(out, "%s %s %.3f s (%.1f%%)", i ? "," : "", parts[i].label, v, 100 * v / step);
    }
    fputs(" - communication is what compute does not hide\n", out);
    double experts = metric(r, MEM4D_METRIC_EXPERT_COMPUTE_S), router = metric(r, MEM4D_METRIC_ROUTER_PERMUTE_S);
    if (experts > 0)
        fprintf(out, "experts: GEMMs %.3f s (%.1f%%), router and permutation %.3f s (%.1f%%) of the compute; "
                "dispatch and combine exposed %.3f s\n", experts, 100 * experts / step, router, 100 * router / step,
                metric(r, MEM4D_METRIC_EP_COMM_S));
}

const char *cli_attention_kernel(const mem4d_report *r)
{
    uint64_t k = 0;
    mem4d_report_info(r, MEM4D_INFO_ATTENTION_KERNEL, &k);
    const char *name = mem4d_device_value_name(MEM4D_DEVICE_ATTENTION_KERNEL, k);
    return name ? name : "unknown";
}

/* The model's local layers as the step time takes them (the report's
 * MEM4D_INFO_WINDOW_*): null without a window or chunk shorter than the
 * sequence, else their kind ("sliding" or "chunked"), its tokens (keys per
 * query or per chunk), the local layers and whether they were timed full. */
static void print_local_attention_json(FILE *out, const mem4d_report *r, const mem4d_model *model)
{
    uint64_t w = 0, c = 0, local = 0, full = 0;
    mem4d_report_info(r, MEM4D_INFO_WINDOW_LAYERS, &local);
    if (!local) {
        fputs("null", out);
        return;
    }
    mem4d_report_info(r, MEM4D_INFO_WINDOW_TIMED_FULL, &full);
    mem4d_model_get(model, MEM4D_MODEL_WINDOW_SIZE, &w);
    mem4d_model_get(model, MEM4D_MODEL_ATTENTION_CHUNK_SIZE, &c);
    fprintf(out, "{\"kind\": \"%s\", \"tokens\": %llu, \"%s\": %llu, \"%s\": %s}", w ? "sliding" : "chunked",
            (unsigned long long)(w ? w : c), mem4d_info_name(MEM4D_INFO_WINDOW_LAYERS), (unsigned long long)local,
            mem4d_info_name(MEM4D_INFO_WINDOW_TIMED_FULL), full ? "true" : "false");
}

/* Which attention the job runs, as the memory and the step time take it:
 * fused (flash) attention and its kernel, or softmax attention and whether
 * the stack's fused softmax takes the shape. */
static void print_attention(FILE *out, const mem4d_report *r, const mem4d_model *model, const mem4d_layout *layout)
{
    uint64_t fallback = 0, s = 0, b = 0, a = 0, t = 1;
    mem4d_report_info(r, MEM4D_INFO_SOFTMAX_FALLBACK, &fallback);
    const char *k = cli_attention_kernel(r);
    if (strcmp(k, "unfused") != 0) {
        fprintf(out, "attention: fused (flash) attention, kernel %s", k);
        uint64_t w = 0, c = 0, L = 0, local = 0, full = 0;
        mem4d_model_get(model, MEM4D_MODEL_WINDOW_SIZE, &w);
        mem4d_model_get(model, MEM4D_MODEL_ATTENTION_CHUNK_SIZE, &c);
        mem4d_report_info(r, MEM4D_INFO_WINDOW_LAYERS, &local);
        if (local) { /* the local layers and how the step time takes them: the report's */
            mem4d_report_info(r, MEM4D_INFO_WINDOW_TIMED_FULL, &full);
            mem4d_model_get(model, MEM4D_MODEL_NUM_LAYERS, &L);
            fprintf(out, w ? "; a sliding window of %llu keys on %llu of %llu layers%s"
                           : "; chunked attention, chunks of %llu tokens, on %llu of %llu layers%s",
                    (unsigned long long)(w ? w : c), (unsigned long long)local, (unsigned long long)L,
                    full ? ", timed as full attention" : "");
        }
        fputc('\n', out);
        return;
    }
    if (!fallback) {
        fputs("attention: softmax attention over the s x s scores (kernel unfused), the stack's fused softmax\n", out);
        return;
    }
    mem4d_layout_get(layout, MEM4D_LAYOUT_SEQ_LENGTH, &s);
    mem4d_layout_get(layout, MEM4D_LAYOUT_MICRO_BATCH, &b);
    mem4d_layout_get(layout, MEM4D_LAYOUT_TP, &t);
    mem4d_model_get(model, MEM4D_MODEL_NUM_HEADS, &a);
    fprintf(out, "attention: softmax attention over the s x s scores (kernel unfused); the stack's fused softmax "
                 "declines sequence %llu, micro-batch %llu, %llu heads per rank, so PyTorch's fp32 softmax runs "
                 "(more memory and HBM traffic)\n",
            (unsigned long long)s, (unsigned long long)b, (unsigned long long)(t ? a / t : a));
}

/* The model's size and the moment each stage peaks at, consecutive stages
 * of one moment as a range: "stages 0-2 forward_backward". */
static void print_moments(FILE *out, const mem4d_report *r)
{
    uint64_t params = 0;
    mem4d_report_info(r, MEM4D_INFO_MODEL_PARAMS, &params);
    fprintf(out, "model: %llu parameters (%.2f B). stages peak at:", (unsigned long long)params, (double)params / 1e9);
    uint32_t n = mem4d_report_num_stages(r);
    for (uint32_t s = 0, first = 0; s < n; s++) {
        uint64_t m = term(r, s, MEM4D_TERM_PEAK_MOMENT);
        if (s + 1 < n && term(r, s + 1, MEM4D_TERM_PEAK_MOMENT) == m)
            continue;
        const char *name = mem4d_moment_name((mem4d_moment)m);
        if (first == s)
            fprintf(out, "%s stage %u %s", first ? "," : "", s, name ? name : "unknown");
        else
            fprintf(out, "%s stages %u-%u %s", first ? "," : "", first, s, name ? name : "unknown");
        first = s + 1;
    }
    fputc('\n', out);
}

void cli_print_report(FILE *out, const mem4d_model *model, const mem4d_layout *layout,
                      const mem4d_device *device, const mem4d_report *r)
{
    uint64_t v[6] = {0};
    static const mem4d_layout_param keys[] = {MEM4D_LAYOUT_TP, MEM4D_LAYOUT_CP, MEM4D_LAYOUT_PP,
                                               MEM4D_LAYOUT_MICRO_BATCH, MEM4D_LAYOUT_SEQ_LENGTH};
    for (size_t i = 0; i < 5; i++)
        mem4d_layout_get(layout, keys[i], &v[i]);
    mem4d_report_info(r, MEM4D_INFO_DP, &v[5]);
    fprintf(out, "%s on %s, tp %llu cp %llu pp %llu dp %llu, micro-batch %llu, sequence %llu, %s mode\n",
            cli_text(mem4d_model_name(model)), cli_text(mem4d_device_name(device)), (unsigned long long)v[0],
            (unsigned long long)v[1], (unsigned long long)v[2], (unsigned long long)v[5],
            (unsigned long long)v[3], (unsigned long long)v[4], mem4d_mode_name(mem4d_report_mode(r)));
    fprintf(out, "%5s %8s %9s %9s %11s %9s %9s %9s %9s %9s\n", "stage", "layers", "weights", "grads", "optimizer",
            "activ.", "overhead", "allocated", "reserved", "total");
    for (uint32_t s = 0; s < mem4d_report_num_stages(r); s++)
        fprintf(out, "%5u %8llu %9.2f %9.2f %11.2f %9.2f %9.2f %9.2f %9.2f %9.2f%s\n", s,
                (unsigned long long)term(r, s, MEM4D_TERM_LAYERS), cli_gib(term(r, s, MEM4D_TERM_WEIGHTS)),
                cli_gib(term(r, s, MEM4D_TERM_GRADIENTS)), cli_gib(term(r, s, MEM4D_TERM_OPTIMIZER)),
                cli_gib(term(r, s, MEM4D_TERM_ACTIVATIONS)), cli_gib(term(r, s, MEM4D_TERM_OVERHEAD)),
                cli_gib(term(r, s, MEM4D_TERM_PEAK_ALLOCATED)), cli_gib(term(r, s, MEM4D_TERM_PEAK_RESERVED)),
                cli_gib(term(r, s, MEM4D_TERM_TOTAL)), s == mem4d_report_peak_stage(r) ? "  <- peak" : "");
    uint64_t dev = mem4d_report_device_bytes(r), peak = mem4d_report_peak_bytes(r);
    uint32_t ps = mem4d_report_peak_stage(r);
    fprintf(out, "GiB. allocated = torch.cuda.max_memory_allocated, reserved = max_memory_reserved; total adds the\n"
                 "CUDA context and NCCL. peak %.2f GiB (allocated %.2f, reserved %.2f) of %.2f GiB (%.1f%%): %s\n",
            cli_gib(peak), cli_gib(term(r, ps, MEM4D_TERM_PEAK_ALLOCATED)),
            cli_gib(term(r, ps, MEM4D_TERM_PEAK_RESERVED)), cli_gib(dev),
            dev ? 100.0 * (double)peak / (double)dev : 0.0, mem4d_verdict_name(mem4d_report_verdict(r)));
    uint64_t world = 0;
    mem4d_report_info(r, MEM4D_INFO_WORLD, &world);
    print_moments(out, r);
    print_attention(out, r, model, layout);
    print_speed(out, r, layout, device, world);
    for (size_t i = 0; i < mem4d_report_warning_count(r); i++)
        fprintf(out, "warning: %s\n", cli_text(mem4d_report_warning(r, i)));
}

void cli_json_string(FILE *out, const char *text)
{
    /* valid JSON whatever the bytes: control characters and bytes that are
     * not UTF-8 as cli_printable() shows them, then JSON's own escapes */
    size_t n = strlen(text) * 6 + 1;
    char small[1024], *buf = n <= sizeof small ? small : malloc(n);
    const char *s = buf ? cli_printable(text, buf, n) : "";
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', out);
        fputc(*s, out);
    }
    fputc('"', out);
    if (buf != small)
        free(buf);
}

/* Which peak MFU is taken against: the precision the job runs in, as
 * MEM4D_METRIC_MFU_PEAK_FLOPS takes it (lib/perf.c): fp4 for an NVFP4 job
 * (fp8_recipe "nvfp4") on a device that has an fp4 peak, fp8 for an fp8 job
 * on a device that has an fp8 peak, else bf16. Not by comparing the peaks: a
 * device whose fp8 peak equals its bf16 one would name a bf16 job's "fp8". */
const char *cli_mfu_peak_name(const mem4d_layout *layout, const mem4d_device *dev)
{
    uint64_t fp8 = 0, peak = 0, fp4 = 0, r = 0;
    mem4d_layout_get(layout, MEM4D_LAYOUT_FP8, &fp8);
    mem4d_layout_get(layout, MEM4D_LAYOUT_FP8_RECIPE, &r);
    mem4d_device_get(dev, MEM4D_DEVICE_PEAK_FP8_FLOPS, &peak);
    mem4d_device_get(dev, MEM4D_DEVICE_PEAK_FP4_FLOPS, &fp4);
    const char *recipe = mem4d_layout_value_name(MEM4D_LAYOUT_FP8_RECIPE, r);
    if (fp8 && fp4 && recipe && strcmp(recipe, "nvfp4") == 0)
        return "fp4";
    return fp8 && peak ? "fp8" : "bf16";
}

void cli_print_metrics_json(FILE *out, const mem4d_report *r, const mem4d_layout *layout, const mem4d_device *dev)
{
    double v;
    if (mem4d_report_metric(r, MEM4D_METRIC_STEP_TIME_S, &v) != MEM4D_OK) {
        fputs("null", out);
        return;
    }
    fputc('{', out);
    for (size_t i = 0; i < mem4d_metric_count(); i++) {
        mem4d_report_metric(r, (mem4d_metric)i, &v);
        fprintf(out, "%s\"%s\": %.9g", i ? ", " : "", mem4d_metric_name((mem4d_metric)i), v);
    }
    fprintf(out, ", \"mfu_peak\": \"%s\"}", cli_mfu_peak_name(layout, dev));
}

void cli_print_report_json(FILE *out, const mem4d_model *model, const mem4d_report *r, const mem4d_layout *layout,
                           const mem4d_device *dev)
{
    static const mem4d_term terms[] = {MEM4D_TERM_WEIGHTS, MEM4D_TERM_GRADIENTS, MEM4D_TERM_OPTIMIZER,
                                       MEM4D_TERM_ACTIVATIONS, MEM4D_TERM_OVERHEAD, MEM4D_TERM_TOTAL,
                                       MEM4D_TERM_PARAMS, MEM4D_TERM_LAYERS, MEM4D_TERM_IN_FLIGHT,
                                       MEM4D_TERM_PEAK_ALLOCATED, MEM4D_TERM_PEAK_RESERVED,
                                       MEM4D_TERM_BUFFERS, MEM4D_TERM_FRAGMENTATION, MEM4D_TERM_FIXED};
    uint32_t ps = mem4d_report_peak_stage(r);
    fprintf(out, "{\"mode\": \"%s\", \"verdict\": \"%s\", \"device_bytes\": %llu, \"peak_bytes\": %llu, "
                 "\"peak_allocated_bytes\": %llu, \"peak_reserved_bytes\": %llu, \"peak_stage\": %u, \"warnings\": [",
            mem4d_mode_name(mem4d_report_mode(r)), mem4d_verdict_name(mem4d_report_verdict(r)),
            (unsigned long long)mem4d_report_device_bytes(r), (unsigned long long)mem4d_report_peak_bytes(r),
            (unsigned long long)term(r, ps, MEM4D_TERM_PEAK_ALLOCATED),
            (unsigned long long)term(r, ps, MEM4D_TERM_PEAK_RESERVED), ps);
    for (size_t i = 0; i < mem4d_report_warning_count(r); i++) {
        fputs(i ? ", " : "", out);
        cli_json_string(out, mem4d_report_warning(r, i));
    }
    fputs("], \"stages\": [", out);
    for (uint32_t s = 0; s < mem4d_report_num_stages(r); s++) {
        fprintf(out, "%s{\"stage\": %u", s ? ", " : "", s);
        for (size_t i = 0; i < sizeof terms / sizeof terms[0]; i++)
            fprintf(out, ", \"%s\": %llu", mem4d_term_name(terms[i]), (unsigned long long)term(r, s, terms[i]));
        const char *moment = mem4d_moment_name((mem4d_moment)term(r, s, MEM4D_TERM_PEAK_MOMENT));
        fprintf(out, ", \"%s\": ", mem4d_term_name(MEM4D_TERM_PEAK_MOMENT));
        cli_json_string(out, moment ? moment : "unknown");
        fputc('}', out);
    }
    uint64_t params = 0;
    mem4d_report_info(r, MEM4D_INFO_MODEL_PARAMS, &params);
    uint64_t fallback = 0;
    mem4d_report_info(r, MEM4D_INFO_SOFTMAX_FALLBACK, &fallback);
    fprintf(out, "], \"%s\": %llu, \"%s\": ", mem4d_info_name(MEM4D_INFO_MODEL_PARAMS), (unsigned long long)params,
            mem4d_info_name(MEM4D_INFO_ATTENTION_KERNEL));
    cli_json_string(out, cli_attention_kernel(r));
    fprintf(out, ", \"%s\": %s, \"local_attention\": ", mem4d_info_name(MEM4D_INFO_SOFTMAX_FALLBACK),
            fallback ? "true" : "false");
    print_local_attention_json(out, r, model);
    fputs(", \"speed\": ", out);
    cli_print_metrics_json(out, r, layout, dev);
    fprintf(out, "}\n");
}
