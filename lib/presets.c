/*
 * Built-in models and devices: data, not code paths. Sources are in
 * doc/presets.md; parameter counts are checked against the published ones
 * in tests/test-model.c.
 * SPDX-License-Identifier: MIT
 */
#include "private.h"

#define GiB (UINT64_C(1) << 30)
#define T12 UINT64_C(1000000000000) /* tera */
#define G9 UINT64_C(1000000000)     /* giga */

#define M(name_, h, f, L, a, k, V, ...) \
    {name_, {[MEM4D_MODEL_HIDDEN_SIZE] = h, [MEM4D_MODEL_FFN_HIDDEN_SIZE] = f, [MEM4D_MODEL_NUM_LAYERS] = L, \
             [MEM4D_MODEL_NUM_HEADS] = a, [MEM4D_MODEL_NUM_KV_HEADS] = k, [MEM4D_MODEL_VOCAB_SIZE] = V, __VA_ARGS__}}

#define POS(n) [MEM4D_MODEL_MAX_POSITION] = n
#define TIED [MEM4D_MODEL_TIED_EMBEDDINGS] = 1
#define QKVB [MEM4D_MODEL_QKV_BIAS] = 1
#define HD(n) [MEM4D_MODEL_HEAD_DIM] = n
#define MOE(e, k, fe, fs) [MEM4D_MODEL_NUM_EXPERTS] = e, [MEM4D_MODEL_EXPERT_TOPK] = k, \
    [MEM4D_MODEL_EXPERT_FFN_SIZE] = fe, [MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE] = fs

const struct m4d_model_preset m4d_model_presets[] = {
    M("llama2-7b", 4096, 11008, 32, 32, 32, 32000, POS(4096)),
    M("llama2-13b", 5120, 13824, 40, 40, 40, 32000, POS(4096)),
    M("llama2-70b", 8192, 28672, 80, 64, 8, 32000, POS(4096)),
    M("llama3-8b", 4096, 14336, 32, 32, 8, 128256, POS(8192)),
    M("llama3-70b", 8192, 28672, 80, 64, 8, 128256, POS(8192)),
    M("llama3.1-8b", 4096, 14336, 32, 32, 8, 128256, POS(131072)),
    M("llama3.1-70b", 8192, 28672, 80, 64, 8, 128256, POS(131072)),
    M("llama3.1-405b", 16384, 53248, 126, 128, 8, 128256, POS(131072)),
    M("llama3.2-1b", 2048, 8192, 16, 32, 8, 128256, POS(131072), TIED, HD(64)),
    M("llama3.2-3b", 3072, 8192, 28, 24, 8, 128256, POS(131072), TIED, HD(128)),
    M("mistral-7b", 4096, 14336, 32, 32, 8, 32000, POS(32768)),
    M("qwen2.5-7b", 3584, 18944, 28, 28, 4, 152064, POS(131072), QKVB),
    M("qwen2.5-72b", 8192, 29568, 80, 64, 8, 152064, POS(131072), QKVB),
    /* Mixture of experts (issue 6): experts, top-k, expert FFN, shared-expert FFN. */
    M("mixtral-8x7b", 4096, 14336, 32, 32, 8, 32000, POS(32768), MOE(8, 2, 14336, 0)),
    M("qwen1.5-moe-a2.7b", 2048, 5632, 24, 16, 16, 151936, POS(8192), QKVB, MOE(60, 4, 1408, 5632)),
    M("qwen2-57b-a14b", 3584, 18944, 28, 28, 4, 151936, POS(32768), QKVB, MOE(64, 8, 2560, 20480)),
};
const size_t m4d_model_preset_n = sizeof m4d_model_presets / sizeof m4d_model_presets[0];

#define DV(rocm_, name_, gib, bf16_tf, fp8_tf, hbm_gbs, intra_gbs, inter_gbs, sms, eff, fp8eff, ...) \
    {name_, rocm_, {[MEM4D_DEVICE_MEMORY_BYTES] = (gib) * GiB, [MEM4D_DEVICE_PEAK_FLOPS] = (bf16_tf) * T12 / 10, \
             [MEM4D_DEVICE_PEAK_FP8_FLOPS] = (fp8_tf) * T12 / 10, [MEM4D_DEVICE_HBM_BANDWIDTH] = (hbm_gbs) * G9, \
             [MEM4D_DEVICE_INTRA_NODE_BANDWIDTH] = (intra_gbs) * G9, \
             [MEM4D_DEVICE_INTER_NODE_BANDWIDTH] = (inter_gbs) * G9, [MEM4D_DEVICE_SM_COUNT] = sms, \
             [MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM] = (eff) * 1000, [MEM4D_DEVICE_FP8_EFFICIENCY_PPM] = (fp8eff) * 1000, \
             __VA_ARGS__}}
/* An NVIDIA GPU (CUDA), and an AMD one (ROCm: m4d_device_rocm()). */
#define D(...) DV(false, __VA_ARGS__)
#define D_ROCM(...) DV(true, __VA_ARGS__)

/* Memory: the capacity the vendor states, read in GiB (2^30 bytes), the unit
 * nvidia-smi and rocm-smi report. Peaks are dense (no sparsity), in tenths of
 * TFLOP/s. Link bandwidths are per GPU, one direction. Efficiencies (per
 * mille) are the measured Maximum Achievable Matmul FLOPS over the peak, bf16
 * and fp8 (stas00/ml-engineering, compute/accelerator/README.md); every
 * figure's source is in doc/presets.md. An A100 has no fp8 peak (its fp8
 * efficiency is never read); the MI300X has no fp8 MAMF measured, so its
 * fp8 GEMMs run at its bf16 rate: 0.514 x 1307.4 = 0.257 x 2614.9. */
/* The host link, one direction: PCIe Gen4 x16 64 GB/s and Gen5 x16 128 GB/s
 * bidirectional (the data sheets), NVLink-C2C 900 GB/s bidirectional
 * (Transformer Engine's CPU-offloading guide); B200's is left unknown. */
#define PCIE4 [MEM4D_DEVICE_HOST_BANDWIDTH] = 32 * G9
#define PCIE5 [MEM4D_DEVICE_HOST_BANDWIDTH] = 64 * G9
/* The dense fp4 tensor-core peak, TFLOP/s (B200 and later; 0 before):
 * stas00/ml-engineering@744d01e compute/accelerator/README.md, "TFLOPS
 * comparison table", fp4 column, from the DGX B200/B300 data sheets and the
 * GB200/GB300 NVL72 specifications (doc/presets.md). */
#define FP4(tf) [MEM4D_DEVICE_PEAK_FP4_FLOPS] = (tf) * T12
/* The board's rated power: the data sheets' maximum TDP, what the step's
 * power balance holds a step's mean power to (POWER_BALANCE, lib/perf.c). */
#define W(n) [MEM4D_DEVICE_BOARD_POWER_W] = n
/* The share of the HBM rate a streaming kernel (one load, one store stream)
 * reaches, measured per GPU (doc/presets.md, "Achievable HBM bandwidth");
 * every H100 takes the H100 PCIe's; B200, GB200, B300 and GB300 have none
 * measured. */
#define HBM(ppm) [MEM4D_DEVICE_HBM_EFFICIENCY_PPM] = ppm
#define H100_NVL(name_) D(name_, 94, 8355, 16710, 3900, 300, 50, 132, 803, 709, [MEM4D_DEVICE_NVLINK_DOMAIN] = 2, PCIE5, W(400), HBM(852000))
const struct m4d_device_preset m4d_device_presets[] = {
    D("a100-40", 40, 3120, 0, 1555, 300, 25, 108, 869, 1, PCIE4, W(400), HBM(888000)),
    D("a100-80", 80, 3120, 0, 2039, 300, 25, 108, 869, 1, PCIE4, W(400), HBM(849000)),
    D("h100-80", 80, 9894, 19789, 3350, 450, 50, 132, 803, 709, PCIE5, W(700), HBM(852000)),
    /* h100-94 keeps the figures it always had, the H100 NVL's. */
    H100_NVL("h100-94"),
    D("h100-sxm-94", 94, 9894, 19789, 3350, 450, 50, 132, 803, 709, PCIE5, W(700), HBM(852000)),
    H100_NVL("h100-nvl-94"),
    D("h200-141", 141, 9894, 19789, 4800, 450, 50, 132, 803, 734, PCIE5, W(700), HBM(850000)),
    D("b200-180", 180, 22500, 45000, 8000, 900, 50, 148, 776, 763, W(1000), FP4(9000)),
    /* One GPU of a GB200 NVL72 rack: 18 trays of 4 GPUs in one NVLink
     * domain, one 400 Gb/s ConnectX-7 per GPU. */
    D("gb200-186", 186, 25000, 50000, 8000, 900, 50, 148, 729, 723, [MEM4D_DEVICE_GPUS_PER_NODE] = 4,
      [MEM4D_DEVICE_NVLINK_DOMAIN] = 72, [MEM4D_DEVICE_NICS_PER_NODE] = 4, [MEM4D_DEVICE_NIC_BANDWIDTH] = 50 * G9,
      [MEM4D_DEVICE_HOST_BANDWIDTH] = 450 * G9, W(1200), FP4(10000)),
    /* Blackwell Ultra in a DGX/HGX B300: 8 GPUs on NVLink 5, one 800 Gb/s
     * ConnectX-8 per GPU (100 GB/s); bf16 and fp8 as B200's, fp4 1.4x.
     * MAMF measured on a B300 SXM (doc/presets.md). */
    D("b300-288", 288, 22500, 45000, 8000, 900, 100, 160, 786, 745, W(1000), FP4(12600)),
    /* One GPU of a GB300 NVL72 rack: GB200's rack with Blackwell Ultra, 288
     * GB of HBM3e a GPU (72 x 288 GB = 20.7 TB a rack), one 800 Gb/s
     * ConnectX-8 per GPU. No MAMF is published for GB300: it takes GB200's
     * (the same Grace-coupled board and clocks as GB200 against B200). */
    D("gb300-288", 288, 25000, 50000, 8000, 900, 100, 160, 729, 723, [MEM4D_DEVICE_GPUS_PER_NODE] = 4,
      [MEM4D_DEVICE_NVLINK_DOMAIN] = 72, [MEM4D_DEVICE_NICS_PER_NODE] = 4, [MEM4D_DEVICE_NIC_BANDWIDTH] = 100 * G9,
      [MEM4D_DEVICE_HOST_BANDWIDTH] = 450 * G9, W(1400), FP4(15000)),
    D_ROCM("mi300x-192", 192, 13074, 26149, 5300, 448, 50, 304, 514, 257, PCIE5, W(750), HBM(777000)),
};
const size_t m4d_device_preset_n = sizeof m4d_device_presets / sizeof m4d_device_presets[0];
