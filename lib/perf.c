/*
 * Step-time model: predicted seconds per optimizer step of a layout, built
 * from the operations of one transformer layer (each GEMM from its own shape,
 * flash attention, memory-bound element-wise work, kernel launches), the
 * collectives on the links they cross with the overlap the frameworks use,
 * and the pipeline schedule. doc/perf.md derives every term and gives every
 * constant's physical meaning and source; symbols are those of
 * doc/formulas.md (t c p d b m s v h f L a k V). It runs for every layout a
 * search visits: no libm, no allocation, no integer division.
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "private.h"

/* GEMM tile of the Hopper/Ampere cuBLAS and CUTLASS kernels large training
 * GEMMs run on (M x N per CTA), and the K a tile's pipeline fill and
 * epilogue cost, in 16-bit elements (4 stages of 64): doc/perf.md,
 * "Constants". A k-block is 128 bytes wide whatever the type (CUTLASS's
 * Hopper GEMM examples: TileShape K 32 for tf32 in
 * 48_hopper_warp_specialized_gemm, 64 for 16-bit, 128 for fp8 in
 * 54_hopper_fp8_warp_specialized_gemm, NVIDIA/cutlass@3afc42d7), so an fp8
 * GEMM's fill is 2 x K_FILL of its 1-byte elements. */
#define TILE_M 128
#define TILE_N 256
#define K_FILL 256.0
/* Flash attention's query block per CTA (FlashAttention-2/3, cuDNN), and
 * the fixed work of one query tile (load Q, rescale, write O and the
 * log-sum-exp) in key/value positions: the FlashAttention-3 causal hd128
 * forward curve (about 470, 560, 610, 640 TFLOP/s at 2k, 4k, 8k, 16k)
 * follows kv/(kv + 384) for the mean kv length kv = s/2 of a causal row. */
#define ATTN_TILE 128
#define ATTN_FILL 384.0
/* Flash attention's asymptotic rate as a share of the large-GEMM rate:
 * forward and backward (FlashAttention-3 paper, H100 bf16 hd128: ~660 and
 * ~520 TFLOP/s at long sequences, against ~794 for cuBLAS). The backward
 * executes 2.5 forward FLOPs (recomputes QK^T; dV, dP, dQ, dK). These are
 * the rates of the device's own generation of flash kernel (FlashAttention-3
 * on Hopper; FlashAttention-2 on Ampere reaches 73% and 63% of A100's peak,
 * FlashAttention-2 paper, arXiv 2307.08691, about the same share of A100's
 * 86.9% MAMF); ATTN_KERNELS scales them per kernel. */
#define ATTN_FWD_SHARE 0.83
#define ATTN_BWD_SHARE 0.65
#define ATTN_BWD_WORK 2.5
/* ATTN_DROPOUT: attention dropout (attention_dropout 1) inside a fused
 * attention kernel, which draws its Philox mask in the forward and again in
 * the backward (a flash kernel; unfused attention runs it as its own
 * kernel over the scores, ATTN_DROPOUT_BYTES). The cost is a share of the kernel's forward-and-backward
 * time: 0.594 -> 0.614 ms at p 0.1 on H200, Transformer Engine 2.15's cuDNN
 * backend, sbhd (Megatron-Core's layout), bf16, 4 x 1024 tokens, 16 heads of
 * 128 (NVIDIA/TransformerEngine issue #3312). FlashAttention-2 on GB200
 * pays 5% (0.695 -> 0.728 ms, pull request #3313 in the same repository). */
#define ATTN_DROPOUT 0.034
/* ATTN_DROPOUT_BYTES: unfused (softmax) attention applies attention dropout
 * as an element-wise kernel of its own over the s x s probabilities
 * (Megatron's CoreAttention: self.attention_dropout, torch.nn.Dropout):
 * the forward's native_dropout reads the bf16 probabilities and writes them
 * dropped and a one-byte bool mask (2 + 2 + 1), the backward's
 * native_dropout_backward reads the gradient and the mask and writes the
 * gradient (2 + 1 + 2) (PyTorch aten/src/ATen/native/Dropout.cpp,
 * native_functions.yaml). The kernel's rate is the matmul-and-softmax
 * measurement's (ATTN_KERNELS[5], without dropout) no more. */
#define ATTN_DROPOUT_BYTES 5.0
/* UNFUSED_ATTN: softmax attention (attention_kernel unfused: Megatron's
 * CoreAttention of 2021-22, Megatron-DeepSpeed's) is its kernels, timed as
 * the GEMM rule and the HBM rate time them, not as a share of a flash
 * kernel's rate: the scores' batched GEMM (baddbmm, Q K^T: an s x s output
 * per head over K = d_h; the backward's dO V^T the same), the long-K ones
 * (P V; the backward's dV, dQ, dK: d_h-wide outputs over s), each 2 bytes
 * a score and its operands' 2 d_h (q + k) bytes, and the fused softmax's
 * bytes. A GEMM here costs its compute (K_FILL and waves) plus its bytes,
 * not the larger of the two: at K = d_h the mainloop is too short to hide
 * the epilogue's stores, and the long-K ones stream 2 bytes of scores per
 * 2 d_h FLOPs, where neither roof is reached. Checked against published
 * runtimes (doc/perf.md, "Attention kernels"): the FlashAttention paper's
 * Megatron attention on A100 40 GB (arXiv 2205.14135, appendix E, Tables
 * 18 and 19, d_h 64, 2k tokens: 4.28 / 8.86 ms forward / backward, this
 * 4.76 / 7.76), the FlashAttention-2 paper's PyTorch attention on A100
 * 80 GB (arXiv 2307.08691, Figures 5b and 6b, d_h 128, 2k: 63 / 84
 * TFLOP/s, this 58 / 87) and the FlashAttention-3 paper's standard
 * attention on H100 (139 / 181 at 16k, this 124 / 185); the flash share
 * it replaces charged d_h 128 on A100 1.5-1.75 times the published time.
 * UNFUSED_SOFTMAX_FWD, _BWD: bytes a score of Megatron's causal fused
 * softmax (megatron/fused_kernels/scaled_upper_triang_masked_softmax.h,
 * NVIDIA/Megatron-LM@9019bbf4, what FusedScaleMaskSoftmax runs for a
 * causal mask up to 2048 keys): the forward reads a row up to its
 * diagonal, half the square on average, and writes the whole row (1 + 2);
 * the backward reads the output and its gradient up to the diagonal and
 * writes the whole row (1 + 1 + 2). */
#define UNFUSED_SOFTMAX_FWD 3.0
#define UNFUSED_SOFTMAX_BWD 4.0
/* FUSED_SOFTMAX: Megatron's FusedScaleMaskSoftmax runs the fused kernel
 * above only where its shape test passes (is_kernel_available: fp16 or
 * bf16 input, 16 < keys <= the stack's limit, keys % 4 == 0, and for a
 * causal mask the attention batches b * a/t a multiple of the kernel's
 * batches per block, get_batch_per_block(): 128 threads of warps of
 * min(keys', 32) lanes, two rows a warp where keys' <= 128, keys' the
 * power of two at or above the keys; 4 beyond 128 keys). The limit is
 * 2048 in Megatron-DeepSpeed of 2021-22 (bigscience-workshop/
 * Megatron-DeepSpeed@99c8fe07; microsoft/Megatron-DeepSpeed's
 * megatron/model/fused_softmax.py at acc3e9b5, unchanged until its
 * 2023-07-04 rebase, 9e72d571, tests b * a/t % 4 alone, the rule's beyond
 * 128 keys) and, with a causal mask, in Megatron-LM of 2022 too: its test
 * lets 4096 keys through from 7a77abd9 (2022-01), but the causal kernel
 * asserts seq_len <= 2048 (scaled_upper_triang_masked_softmax_cuda.cu at
 * the megatron-lm-2022 profile's 2e90a342) until 6753e8bf (2023-05-05;
 * NVIDIA/Megatron-LM#260), so a longer sequence ran only with
 * --no-masked-softmax-fusion. Elsewhere it falls back to PyTorch's ops
 * (forward_torch_softmax), in fp32 under Megatron's default
 * apply_query_key_layer_scaling, which turns attention_softmax_in_fp32 on
 * and makes the scale the layer number: input.float() (2 read, 4
 * written), * scale (4, 4), masked_fill_ in place (4, 4; the [1, 1, s, s]
 * mask from L2), Softmax (4, 4), .half() (4, 2): SOFTMAX_TORCH_FWD bytes
 * a score; the backward runs the same five in reverse, the softmax's
 * reading its output and the gradient (6, 12, 8, 8, 6): SOFTMAX_TORCH_BWD.
 * Charged beyond the fused kernel's. The test is m4d_softmax_falls_back()
 * (lib/private.h), which the memory model's kept bytes share
 * (SOFTMAX_TORCH_KEPT, lib/estimate_activations.c). */
#define SOFTMAX_TORCH_FWD 36.0
#define SOFTMAX_TORCH_BWD 40.0
/* FUSED_SOFTMAX_SWAPPED: BigScience's Megatron-DeepSpeed from 2021-10-21
 * (9f5f5d4c, "fused softmax layer bug fix sync") to 2022-03-06 (1cb76a64)
 * declared the static get_batch_per_block(b, np, sq, sk) and called it
 * as get_batch_per_block(sq, sk, b, np), so the kernel's batches per
 * block came from the heads per rank in place of the keys: 8 heads give
 * 32, and b * 8 passes only at micro-batch 4 and 8 (Megatron-LM fixed the
 * same order on 2021-08-13, 0d350c8d). The BLOOM prequel's sweeps ran it:
 * the megatron-deepspeed-bigscience-2022-02 profile. */
/* UNFUSED_ALIBI: with ALiBi the scores' GEMM adds the bias (BigScience's
 * Megatron-DeepSpeed, megatron/model/transformer.py: torch.baddbmm over
 * alibi[:b*np, :, :sk], a [b*np, 1, sk] tensor, with beta 1). cuBLAS takes
 * no broadcast C: PyTorch copies the expanded bias into the s x s result
 * (write 2 bytes a score) and the GEMM reads it back as C (2 more;
 * aten/src/ATen/native/cuda/Blas.cpp, baddbmm_out_cuda_impl). Without ALiBi
 * beta is 0 and C is neither copied nor read. */
#define UNFUSED_ALIBI 4.0
/* DROPOUT_FWD, DROPOUT_BWD: hidden dropout (hidden_dropout 1) in
 * Megatron-Core's bias-dropout-add after attention and after the MLP
 * (megatron/core/fusions/fused_bias_dropout.py at core_r0.10.0, compiled by
 * jit_fuser, torch.compile from PyTorch 2.2). The forward's fused kernel
 * also writes the one-byte mask it keeps for the backward (DROPOUT_FWD
 * bytes per element). The backward runs a kernel that reads the gradient
 * and the mask and writes the dropped gradient (2 + 1 + 2 bytes), where
 * without dropout the add passes its gradient through with no kernel. */
#define DROPOUT_FWD 1.0
#define DROPOUT_BWD 5.0
/* LN_APEX_FWD, LN_APEX_BWD: the time of Megatron's non-persistent fused
 * LayerNorm (MixedFusedLayerNorm, megatron/fused_kernels/
 * layer_norm_cuda_kernel.cu: apex's FusedLayerNorm kernels with mixed
 * types) over the persistent one the model's norm bytes stand for (apex's
 * contrib FastLayerNorm, which Megatron-LM runs for the hidden sizes it
 * supports since a2fdcdf0, 2021-11-10, --no-persist-layer-norm): on A100,
 * B 32 x S 512, forward 895.8 against 1258.0 GB/s and backward 572.2
 * against 1163.4 GB/s (NVIDIA/apex pull request 1037, the persistent
 * kernel's own benchmark; the old backward reads the input and the output
 * gradient twice, for the input gradient and for gamma and beta).
 * Megatron-DeepSpeed of 2021-22 (MT-NLG's, BigScience's @99c8fe07
 * megatron/model/fused_layer_norm.py) has only the non-persistent one. Its
 * RMSNorm (normalization RMSNorm) is the same kernels, not eager PyTorch:
 * microsoft/Megatron-DeepSpeed runs apex's MixedFusedRMSNorm on CUDA since
 * it took RMSNorm (69e3c6a0, 2023-07-20; megatron/model/__init__.py at
 * f4157bea), FusedLayerNorm's kernels with rms_only (NVIDIA/apex#1274,
 * csrc/layer_norm_cuda_kernel.cu); its eager megatron/model/rmsnorm.py
 * (aad7ad9d, 2023-12-07) runs only on other accelerators, and
 * BigScience's fork has no RMSNorm. */
#define LN_APEX_FWD (1258.0 / 895.8)
#define LN_APEX_BWD (1163.4 / 572.2)
/* Each attention kernel's rate on Hopper and later (a device with an fp8
 * peak) over FlashAttention-3's, forward and backward, at 16k tokens, H100
 * SXM5 bf16 hd128 (FlashAttention-3 paper, arXiv 2407.08608, Figures 5 and
 * 6: forward causal FA2 335, cuDNN 539, FA3 616 TFLOP/s; backward FA2 322,
 * cuDNN 516, FA3 561; "standard attention" forward 139 of FA3's 648
 * without the causal mask, backward 181 of 561). sdpa is PyTorch's flash
 * backend, FlashAttention-2's kernels. On Ampere every flash kernel is
 * FlashAttention-2 (no FA3 there; cuDNN's matches it) and softmax attention
 * keeps its share. Softmax attention computes the whole s x s square. */
static const struct {
    double fwd, bwd, work;
} ATTN_KERNELS[] = {
    [1] = {335.0 / 616, 322.0 / 561, 1}, /* fa2 */
    [2] = {1, 1, 1},                     /* fa3 */
    [3] = {539.0 / 616, 516.0 / 561, 1}, /* cudnn */
    [4] = {335.0 / 616, 322.0 / 561, 1}, /* sdpa */
    [5] = {1, 1, 2},                     /* unfused: its own GEMMs and bytes (UNFUSED_ATTN) */
    [6] = {335.0 / 616, 322.0 / 561, 1}, /* triton: FlashAttention-2's, over TRITON_FA_FWD and _BWD */
};
/* The Triton flash attention llm-foundry's attn_impl "triton" runs
 * (llmfoundry/models/layers/flash_attn_triton.py, "Copied from"
 * flash-attention@eff9fe6b flash_attn/flash_attn_triton.py) against
 * FlashAttention-2, on any GPU. Forward: "around 1.3-1.5x faster ... in the
 * forward pass" (FlashAttention-2 paper, arXiv 2307.08691, section 4.1):
 * 1.4. Forward and backward together, causal, head dimension 128, 2k
 * tokens, the rows' shape: FlashAttention-2 155 TFLOP/s against the
 * "FlashAttention Triton" bar's 68 (Figure 4d, A100), 2.28 times; with the
 * forward at 1.4 and FlashAttention-2's own forward/backward split (its
 * shares and backward work above: the forward 0.239 of its attention time)
 * the backward takes (155/68 - 0.239 * 1.4) / 0.761 = 2.56. */
#define TRITON_FA_FWD 1.4
#define TRITON_FA_BWD 2.56
/* TRITON_FA_DH64: the same kernel at head dimension 64 over 128, forward
 * and backward together, causal, 2k tokens: 79 against 68 TFLOP/s (the
 * "FlashAttention Triton" bars of the FlashAttention-2 paper's Figure 4c
 * and 4d, A100). flash_attn_triton.py switches its configuration there:
 * num_warps 4 for d <= 64, 8 above, and a BLOCK_HEADDIM of the next power
 * of two (_flash_attn_forward, _flash_attn_backward), so a head of 64 or
 * less runs the head-64 kernel. */
#define TRITON_FA_DH64 (79.0 / 68)
/* ATTN_UNPAD: llm-foundry's attn_impl "flash" (flash_attn_fn,
 * llmfoundry/models/layers/attention.py at 5e85bd62, and the same copies
 * at 8c8dd48f) runs FlashAttention-2's varlen kernel on unpadded rows: it
 * gathers q, k and v into them (flash-attn's bert_padding.unpad_input,
 * index_first_axis) and puts the output back into the padded batch
 * (pad_input), also when no token is padding. flash_attn/bert_padding.py
 * (Dao-AILab/flash-attention v2.4.2, the rows' flash-attn) gathers with
 * torch.gather over an int64 index repeated across the row
 * (repeat(indices, "z -> z d")), so per bf16 element the index is written
 * and read (8 + 8 bytes) beside the element's read and write (2 + 2):
 * UNPAD_GATHER; the backward zeroes the gradient, builds the index again
 * and scatters (2 + 16 + 4): UNPAD_SCATTER. The output's put zeroes the
 * padded tensor and writes the rows (IndexPutFirstAxis: 2 + 4): PAD_PUT;
 * its backward indexes the rows out (4): PAD_GATHER. Bytes per element of
 * a layer's q (and of its k and v), HBM-bound. */
#define UNPAD_GATHER 20.0
#define UNPAD_SCATTER 22.0
#define PAD_PUT 6.0
#define PAD_GATHER 4.0
/* TE_CP_RING: Megatron-Core's context parallelism runs Transformer
 * Engine's p2p ring (AttnFuncWithCPAndKVP2P, transformer_engine/pytorch/
 * attention.py, the same code at v1.9 and v2.0), which around its c
 * attention kernels per layer moves HBM bytes a single kernel does not
 * (sbhd, causal, bf16; per element of a token's local q and of its k,
 * on the last CP rank, whose every step covers its whole local q). Forward:
 * torch.cat of k and v into the first p2p buffer (read 2, write 2, both:
 * TE_CP_KV_COPY per element of k), the output zeroed (TE_CP_OUT_ZERO), and
 * after the ring one merge per step, flash_attn_fwd_out_correction
 * compiled by jit_fuser into one kernel (read the step's output, read and
 * write the merged one: TE_CP_MERGE). Backward: the saved k,v copied into
 * the first p2p buffer (TE_CP_KV_COPY), each step's dq and dk,dv copied
 * (TE_CP_COPY) then added (TE_CP_ADD: read 2 + 2, write 2) into the
 * accumulators: dq copied once and added c - 1 times, the dk,dv halves of
 * steps 0 .. c-2 (one element of k a token each, copied then added) and
 * the whole dk,dv of the diagonal step c - 1 (two), 4 + 6c per element of
 * k. From TE 2.2 (attention.py at v2.2; dot_product_attention/
 * context_parallel.py from v2.3, the same at v2.8) the first step's merge
 * writes the output itself (flash_attn_fwd_out_correction_init: read 2,
 * write 2, TE_CP_MERGE_INIT) and nothing is zeroed: c - 1 merges follow.
 * The softmax statistics (one float per query and head) are left out:
 * 1/dh of the output. */
#define TE_CP_KV_COPY 8.0
#define TE_CP_OUT_ZERO 2.0
#define TE_CP_MERGE 6.0
#define TE_CP_MERGE_INIT 4.0
#define TE_CP_COPY 4.0
#define TE_CP_ADD 6.0
/* mma.sync, the tensor-core instruction of Ampere-generation kernels, reaches
 * about 2/3 of Hopper's tensor-core peak; only warpgroup MMA reaches the rest
 * (FlashAttention-3 paper, section 1). */
#define MMA_SYNC_SHARE (2.0 / 3)

/* HBM bytes per logit of Megatron's cross entropy over forward and
 * backward, by cross_entropy_impl (doc/perf.md, "Cross entropy", counts each
 * kernel). Unfused (NVIDIA/Megatron-LM@1e057005
 * megatron/core/tensor_parallel/cross_entropy.py): the fp32 cast (2 + 4),
 * the max (4), the in-place subtraction (8), exp (8), the sum (4), the
 * division (8); backward the product with the output gradient (8) and
 * autograd's cast back to bf16 (6). Native (fusions/fused_cross_entropy.py,
 * each torch.compile'd step one pass): cast and max (6), subtraction, exp
 * and sum (8), division (8); backward the gradient read, its bf16 written
 * and the in-place update of the saved softmax written back (10); the
 * releases that rebuild the mutated fp32 copy in a fresh buffer and copy it
 * back (cross_entropy_fusion = 1) add 4 + 4 in the forward's and the
 * backward's step that reduce over or scatter into it. Transformer Engine's
 * parallel_cross_entropy (transformer_engine/pytorch/triton/cross_entropy.py,
 * 2.2 to 2.17): the online softmax reads the bf16 logits (2), the loss
 * kernel reads them again and writes the gradient in their place (4), the
 * backward scales it in place (4). */
#define CE_UNFUSED 52.0
#define CE_NATIVE 32.0
#define CE_NATIVE_COPY_BACK 16.0
#define CE_TE 10.0

/* STEP_PASSES levels (dp_prepare), each running the passes of the one below */
enum { STEP_APEX_DFA = 1, STEP_MCORE = 2, STEP_MLM2022 = 3 };

/* A named software stack (MEM4D_DEVICE_STACK): attention kernel (index in
 * ATTN_KERNELS), GEMM library (1 native, 2 ampere, 3 cuda11), seconds per micro-batch
 * outside the layers, gradient-accumulation bytes per local weight and
 * micro-batch. doc/perf.md, "The software stack", sources every figure. */
static const struct stack {
    uint8_t attn, gemm;
    double mb_overhead, accum_bytes, ce_bytes;
    bool op_sac; /* selective recompute is torchtitan's per-op policy (op_sac_time) */
    bool eager;  /* element-wise work as eager PyTorch runs it (EAGER_NORM) */
    bool eager_act; /* only the gated activation eager (EAGER_SWIGLU): nanotron's GLUActivation (models/llama.py: split, silu, multiply; its norms and RoPE are Triton kernels) */
    bool zero1_allreduce; /* nanotron's ZeRO-1: fp32 all-reduce, then an unpacked all-gather (dp_prepare) */
    bool dtensor_tp;      /* TP as PyTorch's DTensor runs it: no backward collective hidden (tp_time) */
    bool fsdp2_copies;    /* FSDP2's copy-out after each all-gather, copy-in before each reduce-scatter */
    bool titan_model;     /* torchtitan's Llama: separate linears, GQA by repeat_kv (TITAN_MODEL) */
    bool tp_sync;         /* Megatron-DeepSpeed's TP: the backward's all-reduces on the compute stream (tp_time) */
    bool ds_pipe;         /* DeepSpeed's pipeline engine: its blocking p2p and partitioned activations (comm_prepare) */
    bool p2p_split;       /* Megatron-LM 2022's scatter_gather_tensors_in_pipeline (P2P_SHAPE, comm_prepare) */
    uint8_t step_passes;  /* the Megatron family's step outside Adam (STEP_PASSES, dp_prepare): 1 Apex DistributedFusedAdam, 2 Megatron-Core's DistributedOptimizer, 3 Megatron-LM 2022 */
    bool ln_apex;         /* Megatron's non-persistent fused LayerNorm (LN_APEX_FWD, _BWD) */
    bool bias_add;        /* the QKV bias added by a kernel of its own, Megatron's local linears (BIAS_BYTES) */
    bool bias_epilogue;   /* Transformer Engine's linears: the QKV bias and its gradient in the GEMMs' epilogues (BIAS_BYTES) */
    bool fsdp_root;       /* ZeRO-2/3 as PyTorch's FSDP (1 or 2) wraps a model: the root unit's collectives (FSDP_ROOT), ZeRO-2 as SHARD_GRAD_OP (FSDP_SHARD_GRAD_OP) */
    bool attn_unpad;      /* FlashAttention-2 called through llm-foundry's flash_attn_fn: its unpadding copies (ATTN_UNPAD) */
    bool nanotron_model;  /* nanotron's Llama: its attention's q/k/v reshuffles copied (NANOTRON_MODEL) */
    bool te_norm_fp8;     /* Megatron-Core's TE layers: the norm before qkv and fc1 writes fp8 itself (TE_FP8_CASTS) */
    bool sq_relu_fused;   /* squared ReLU compiled into one kernel each way, not eager (SQ_RELU_EAGER) */
    uint8_t te_cp_ring;   /* Megatron-Core's CP through Transformer Engine's p2p ring, its merges and copies (TE_CP_RING): 1 TE 1.9-2.1, 2 TE 2.2 and later */
    struct m4d_softmax_rule softmax; /* the fused softmax's shapes, with softmax attention (FUSED_SOFTMAX) */
} STACKS[M4D_NSTACKS] = {
    /* middle: cuDNN attention, autograd's accumulation into bf16 .grad */
    {.attn = 3, .gemm = 1, .accum_bytes = 6, .ce_bytes = 12, .te_norm_fp8 = true, .sq_relu_fused = true,
     .bias_epilogue = true},
    /* megatron-lm-2022: fused softmax, gradient_accumulation_fusion, unfused cross entropy, the pipeline's
     * scatter-gather */
    {.attn = 5, .gemm = 1, .ce_bytes = CE_UNFUSED, .te_norm_fp8 = true, .p2p_split = true, .bias_add = true,
     .step_passes = STEP_MLM2022, .softmax = {2048, false}},
    /* megatron-deepspeed: softmax attention, bf16 update_hp_grads, CUDA 11 GEMMs, its TP and pipeline, unfused cross
     * entropy */
    {.attn = 5, .gemm = 3, .accum_bytes = 18, .ce_bytes = CE_UNFUSED, .tp_sync = true, .ds_pipe = true,
     .ln_apex = true, .bias_add = true, .softmax = {2048, false}},
    /* nemo-24.07: Transformer Engine 1.9's cuDNN attention, Megatron-Core 0.8's native fused cross entropy, NeMo 1's
     * Apex DistributedFusedAdam */
    {.attn = 3, .gemm = 1, .ce_bytes = CE_NATIVE + CE_NATIVE_COPY_BACK, .te_norm_fp8 = true, .sq_relu_fused = true,
     .te_cp_ring = 1, .bias_epilogue = true, .step_passes = STEP_APEX_DFA},
    /* nemo-25: Megatron-Core's DistributedOptimizer */
    {.attn = 3, .gemm = 1, .ce_bytes = 12, .te_norm_fp8 = true, .te_cp_ring = 2, .bias_epilogue = true,
     .step_passes = STEP_MCORE},
    /* torchtitan: SDPA, autograd accumulation, fp32 cross entropy, op SAC, eager */
    {.attn = 4, .gemm = 1, .accum_bytes = 6, .ce_bytes = 40, .op_sac = true, .eager = true, .dtensor_tp = true,
     .fsdp2_copies = true, .titan_model = true, .fsdp_root = true},
    /* composer: FlashAttention-2, FSDP1 gradient path, eager fp32 cross entropy */
    {.attn = 1, .gemm = 1, .accum_bytes = 18, .ce_bytes = 40, .fsdp_root = true, .attn_unpad = true},
    /* nanotron: FlashAttention-2, fp32 gradient accumulation, Megatron's unfused fp32 cross entropy (52), eager
     * SwiGLU */
    {.attn = 1, .gemm = 1, .accum_bytes = 10, .ce_bytes = CE_UNFUSED, .eager_act = true, .zero1_allreduce = true,
     .nanotron_model = true},
    /* torchtitan-compile: torchtitan with torch.compile's fused element-wise */
    {.attn = 4, .gemm = 1, .accum_bytes = 6, .ce_bytes = 40, .op_sac = true, .dtensor_tp = true, .fsdp2_copies = true,
     .titan_model = true, .fsdp_root = true, .sq_relu_fused = true},
    /* megatron-deepspeed-bigscience-2022-02: megatron-deepspeed as BigScience's fork ran it from 2021-10-21 to
     * 2022-03-06 (the BLOOM prequel's sweeps): its fused softmax's swapped shape test */
    {.attn = 5, .gemm = 3, .accum_bytes = 18, .ce_bytes = CE_UNFUSED, .tp_sync = true, .ds_pipe = true,
     .ln_apex = true, .bias_add = true, .softmax = {2048, true}},
};

/* The device's profile: its stack key, the middle one where unset or unknown. */
static const struct stack *stack_of(const mem4d_device *dev)
{
    uint64_t i = dev->v[MEM4D_DEVICE_STACK];
    return &STACKS[i < M4D_NSTACKS ? i : 0];
}

/* The attention kernel that keeps the s x s scores (ATTN_KERNELS[5]). */
#define ATTN_UNFUSED 5
/* FlashAttention-2 (ATTN_KERNELS[1]): what a fused job runs on a stack
 * whose own kernel is softmax attention, the flash-attn package that
 * Megatron-LM's and Megatron-DeepSpeed's --use-flash-attn call. */
#define ATTN_FA2 1

bool m4d_attention_fused(const mem4d_layout *l, const mem4d_device *dev)
{
    if (l->flash_set)
        return l->v[MEM4D_LAYOUT_FLASH_ATTN] != 0;
    uint64_t ak = dev->v[MEM4D_DEVICE_ATTENTION_KERNEL];
    return (ak ? ak : stack_of(dev)->attn) != ATTN_UNFUSED;
}

/* The kernel (ATTN_KERNELS' index) a job whose attention is fused or not
 * (m4d_attention_fused()) runs: softmax attention the unfused kernel, a
 * fused job the device's kernel, else its stack's, else FlashAttention-2;
 * FlashAttention-3 where the key names none the table knows. */
static uint64_t attention_kernel(const mem4d_device *dev, bool flash)
{
    const struct stack *st = stack_of(dev);
    uint64_t ak = dev->v[MEM4D_DEVICE_ATTENTION_KERNEL] ? dev->v[MEM4D_DEVICE_ATTENTION_KERNEL] : st->attn;
    if (!flash)
        return ATTN_UNFUSED;
    if (ak == ATTN_UNFUSED) /* a fused job on a kernel that is not */
        ak = st->attn != ATTN_UNFUSED ? st->attn : ATTN_FA2;
    return ak < sizeof ATTN_KERNELS / sizeof ATTN_KERNELS[0] && ATTN_KERNELS[ak].work != 0 ? ak : 2;
}

void m4d_ctx_device(struct m4d_ctx *x, const mem4d_layout *l, const mem4d_device *dev)
{
    x->flash = m4d_attention_fused(l, dev);
    x->softmax = stack_of(dev)->softmax;
    /* MEM4D_INFO_ATTENTION_KERNEL: the kernel that runs, FlashAttention-2
     * for FlashAttention-3 on a device without an fp8 peak (no FA3 there,
     * machine_of()'s Ampere rates) */
    uint64_t ak = attention_kernel(dev, x->flash);
    x->attn_kernel = ak == 2 && dev->v[MEM4D_DEVICE_PEAK_FP8_FLOPS] == 0 ? ATTN_FA2 : ak;
}

/* nanotron's ZeRO-1 with fp32 gradient accumulation (the only ZeRO it
 * runs with accumulate_grad_in_fp32, its benchmarks' setting) builds no
 * DistributedDataParallel (trainer.py, init_model: make_ddp is false), so
 * after the pipeline drains sync_gradients_across_dp all-reduces the whole
 * contiguous fp32 gradient buffer (reduce_scatter=False: "too memory
 * hungry"), the optimizer updates the rank's shard, and
 * ZeroDistributedOptimizer._all_gather_params gathers the bf16 weights
 * through nanotron's all_gather_coalesced (distributed.py), which for each
 * of the dp ranks flattens that rank's slices of every parameter tensor
 * into one buffer and after the gather copies each slice back, one eager
 * op per (rank, tensor) from a Python loop; the slices themselves are
 * Python indexing (tensor[slice(...)]) per (rank, tensor), in
 * _all_gather_params. NANOTRON_LAYER_TENSORS: a nanotron Llama layer's
 * parameter tensors (input_layernorm, qkv_proj, o_proj,
 * post_attention_layernorm, gate_up_proj, down_proj: models/llama.py);
 * EAGER_OP_S: the host seconds of one eager PyTorch CUDA op issued back to
 * back (8 us on A100 for an elementwise op, flagos-ai/Torch-FL pull
 * request 27's cuda submit column; 5-7 us per op on the CPU in
 * pytorch/pytorch issue 41383), which a loop of small copies runs at;
 * EAGER_VIEW_S: one that launches no kernel, a view (about 2 us, "approx
 * half of it is python parsing overhead", in the same issue). */
#define NANOTRON_LAYER_TENSORS 6.0
#define EAGER_OP_S 8e-6
#define EAGER_VIEW_S 2e-6
/* FSDP2 (torchtitan's fully_shard; torch/distributed/fsdp/_fully_shard/
 * _fsdp_collectives.py) gathers a block's shards into one flat buffer and
 * then, on the compute stream, copies it out into the unsharded parameters
 * (foreach_all_gather_copy_out, split_with_sizes_copy: read and write every
 * gathered byte), once before the forward and once before the backward
 * (reshard_after_forward); before the reduce-scatter it copies the
 * gradients into one buffer in the reduce dtype (foreach_reduce,
 * _chunk_cat: read the bf16 gradient, write the reduce dtype's bytes,
 * fp32 under torchtitan's default mixed_precision_reduce). Per local weight
 * and micro-batch: 2 (2 p) + p + g bytes of HBM; 2 p + p + g with
 * reshard_after_forward never (one gather). FSDP1 (Composer) gathers
 * into the flat parameter the weights are views of, and needs neither. */
/* FSDP_ROOT: PyTorch's FSDP (FSDP2's fully_shard, FSDP1's
 * FullyShardedDataParallel) wraps each block as a unit and the model itself
 * as the root, whose parameters are what the blocks leave: the embedding,
 * the final norm and the output layer (torchtitan's apply_fsdp,
 * parallelisms/parallelize_llama.py at 9dec370a: fully_shard per block,
 * then fully_shard(model); llm-foundry's FSDP wraps each block and the
 * model). Before the first block's forward nothing runs to hide the root's
 * gather and the first block's, queued behind it (the embedding lookup is
 * microseconds), and after the first block's backward only the embedding's
 * remains to hide that block's reduce-scatter and the root's, which the
 * optimizer step waits for. Every micro-batch gathers them again (FSDP
 * reshards after the backward); the last reduce-scatters are once a step. */
/* FSDP_SHARD_GRAD_OP: FSDP1's ShardingStrategy.SHARD_GRAD_OP (FSDP2's
 * reshard_after_forward=False) keeps each unit's gathered weights from its
 * forward to its backward: PyTorch's torch/distributed/fsdp/
 * _runtime_utils.py (2.1, the llm-foundry rows' torch) reshards after the
 * forward only for the RESHARD_AFTER_FORWARD_HANDLE_STRATEGIES (FULL_SHARD,
 * HYBRID_SHARD: _post_forward_reshard), and after the backward whenever the
 * gradients are synchronised (_should_free_in_backward), so each micro-batch gathers every unit once,
 * before its forward (a re-run forward under recompute finds it gathered),
 * and reduce-scatters its gradients after its backward: the units, rings
 * and exposure of ZeRO-3 without the backward's gather. Megatron's
 * bucketed ZeRO-2 (gradients reduced once a step, weights gathered after
 * the optimizer) is another schedule: zero_stage 2 means this one on the
 * stacks that wrap the model in PyTorch's FSDP (fsdp_root). */
/* FSDP_ONCE: PyTorch's FSDP (fsdp_root, or the device's pytorch_fsdp) with
 * the gradients reduced once a step (zero_stage 1, dist_opt): each unit
 * accumulates its unsharded gradients over the micro-batches and
 * reduce-scatters them after its last backward (FSDP1's no_sync, FSDP2's
 * set_requires_gradient_sync(False) until the last micro-batch, which
 * torch.distributed.pipelining sets for FSDP stages), and gathers its
 * weights once before its first forward, keeping them to the last backward
 * (Llama 3's "we do not reshard after forward computation", arXiv
 * 2407.21783 sec. 3.3.2). The distributed optimizer's bytes and hiding
 * window, in one collective per unit (dp_prepare), and what it hides costs
 * the compute beside it as FSDP's per-layer collectives do (beside_cost,
 * PERSISTENT_WAVES: dp_exposed), not only the SMs Megatron's buckets are
 * charged. */
/* DTENSOR_TP: torchtitan's tensor parallelism is PyTorch's DTensor
 * (parallelize_module with ColwiseParallel, RowwiseParallel and
 * SequenceParallel): autograd runs each linear's data and weight gradients
 * in one node and only then the collective of the input gradient (the
 * reduce-scatter the forward all-gather's backward is), which the next node
 * waits for, so none of the backward's four collectives hides under a GEMM,
 * where Megatron overlaps the two reduce-scatters (and its re-gathers of
 * the input, which DTensor does not need: it saves the gathered input)
 * with the weight-gradient GEMMs. Without async TP (tp_comm_overlap).
 * Under torchtitan's selective "op" recompute the policy's _save_list
 * (mm, the SDPA kernels, reduce_scatter_tensor, max) keeps the
 * reduce-scatters' outputs but not the all-gathers', so the recompute
 * gathers each column-parallel input again: two more collectives a layer.
 * Async TP (tp_comm_overlap) is PyTorch's micro-pipeline pass
 * (torch/_inductor/fx_passes/micro_pipeline_tp.py, pytorch/pytorch@5f65158a
 * and already @00122fb1), which fuses an all-gather with the matmuls that
 * take its result as their left operand and a reduce-scatter with the one
 * matmul that produces its input (_find_producer_matmul: an mm, or a reshape
 * of one). The backward's reduce-scatters of the column-parallel input
 * gradients reduce a sum (torchtitan's wq + wk + wv and w1 + w3 are separate
 * linears: models/llama3/model.py@820504e2), whose producer is an add: those
 * two stay whole and exposed; every other collective is split. */
/* TP_SYNC: Megatron-DeepSpeed's tensor parallelism of 2021-22
 * (bigscience-workshop/Megatron-DeepSpeed@99c8fe07 megatron/mpu/layers.py:
 * ColumnParallelLinear.forward runs copy_to_tensor_model_parallel_region,
 * then F.linear; mpu/mappings.py: its backward all-reduces) predates the
 * asynchronous all-reduce: autograd computes the linear's input and weight
 * gradients in one node and then all-reduces the input gradient on the
 * compute stream, so the backward's two all-reduces of a layer are exposed.
 * DS_PIPE: DeepSpeed's pipeline engine (deepspeed/runtime/pipe/, v0.6.0; the
 * same transfers from microsoft/DeepSpeed@e2fdd254e, v0.5.4, which MT-NLG's
 * one-tensor pipe needs: doc/perf.md, "DeepSpeed's pipeline engine across
 * 2021-22"):
 * TrainSchedule pairs a stage with one neighbour per step and p2p.send/recv
 * are torch.distributed.send/recv, which the compute stream waits for; an
 * event simulation of the schedule with rendezvous transfers exposes 4
 * transfers per micro-batch on a middle stage (2 with each neighbour) and 2
 * on an end stage, against Megatron's 2 batched ones. With TP the engine
 * sends 1/t of the activation (is_pipe_partitioned: a meta tensor, then the
 * data) and all-gathers it over the TP group (PartitionedTensor.full()):
 * the received input, the saved output and the received gradient on a
 * middle stage, 2 on the first, 1 on the last. doc/perf.md, "The software
 * stack". */
/* Element-wise work as eager PyTorch runs it (torchtitan without
 * torch.compile), in bf16 elements (2 bytes) moved per element and forward:
 * RMSNorm is at::rms_norm's composite (aten/src/ATen/native/layer_norm.cpp:
 * upcast to fp32 (read 2, write 4 bytes), pow (4, 4), mean (4), mul by the
 * rsqrt (4, 4), type_as (4, 2), mul by the weight (2, 2): 36 bytes, 18);
 * torchtitan's apply_rotary_emb runs xq.float() (2, 4), the complex
 * multiply (4, 4) and type_as (4, 2): 20 bytes, 10; SwiGLU's silu (2, 2)
 * and multiply (2 + 2, 2): 10 bytes per F, 5. */
/* BIAS_BYTES: the linears' biases (add_bias_linear, add_qkv_bias), bf16
 * elements per token. fc1's bias is returned to the MLP (skip_bias_add) and
 * added by the fused bias-GeLU (or bias-SwiGLU), whose autograd.Function
 * returns its full-shape input gradient for the bias too (GeLUFunction.
 * backward: "return tmp, tmp"), which the autograd engine sums to the
 * bias's shape: one more read of fc1's output gradient (up). The QKV
 * linear adds its own bias: Megatron's local linears (megatron/core/
 * tensor_parallel/layers.py at NVIDIA/Megatron-LM@285068c8,
 * LinearWithGradAccumulationAndAsyncCommunication: output = output + bias,
 * read and write; backward grad_output.sum(dim=0), a read) and Megatron-
 * DeepSpeed's (mpu/layers.py at bigscience-workshop/Megatron-DeepSpeed@
 * 99c8fe07: F.linear on a 3-D input, matmul then output += bias in the
 * PyTorch of 2021-22) 2 (q + 2 kv) forward and q + 2 kv backward (bias_add);
 * Transformer Engine's linears add it in the GEMM's epilogue and take its
 * gradient in the weight-gradient GEMM's (CUBLASLT_EPILOGUE_BIAS and
 * _BGRADB, common/gemm/cublaslt_gemm.cu; fp8: fused with the gradient's
 * cast-transpose), nothing (bias_epilogue); PyTorch's nn.Linear adds it in
 * the epilogue and sums its gradient, q + 2 kv backward. The proj and fc2
 * biases are added in the fused bias-dropout-add (skip_bias_add): their
 * gradients' sums are not charged, the fuser's (TorchScript's nvFuser,
 * torch.compile's Inductor) choice to fuse them into the dropout's
 * backward kernel or not left unread. doc/perf.md, "Element-wise". */
#define EAGER_NORM 18.0
#define EAGER_ROPE 10.0
#define EAGER_SWIGLU 5.0
/* EAGER_GLU_SPLIT: nanotron's GLUActivation (models/llama.py) takes the gate
 * and up halves of one fused gate_up output by torch.split, whose backward
 * concatenates their gradients into one tensor (autograd's split backward is
 * a cat: read 2 and write 2 bytes of each of the 2 F elements of a token, 8
 * per F); its eager backward otherwise moves 18 bytes per F (the multiply's
 * two gradients, 6 each, silu's 6), where twice the forward's 10 is charged:
 * 26 against 20, 6 bytes per F more in the backward (EAGER_SWIGLU's
 * eager_act profile only; torchtitan's w1 and w3 are separate linears). */
#define EAGER_GLU_SPLIT 6.0
/* SQ_RELU_EAGER: squared ReLU as NeMo 2 defines it for Nemotron
 * (nemo/collections/llm/fn/activation.py, squared_relu: torch.pow(
 * torch.nn.functional.relu(x), 2), its @torch.jit.script commented out,
 * "remove until we have serialization"; NemotronConfig's activation_func)
 * runs as eager PyTorch, in bf16 elements per element of the MLP's F:
 * forward relu (read 1, write 1) and pow (1, 1), 4 where a fused
 * activation moves 2; backward PowBackward0 (grad * (2 * x.pow(1)): a copy
 * for pow(x, 1), 1 + 1; the scalar multiply, 1 + 1; the product with the
 * gradient, 2 + 1) and ReluBackward0 (threshold_backward: 2 + 1), 10 where
 * twice the forward's 4 is charged: SQ_RELU_BWD more. Megatron-Core's own
 * squared_relu (megatron/core/activations.py) is @jit_fuser, torch.compile
 * on PyTorch 2.2 and later: one kernel each way, as GeLU's; so are NeMo 1's
 * (nemo/collections/nlp/modules/common/megatron/utils.py, squared_relu
 * @jit_fuser at NeMo v2.0.0 to v2.2.1, which activation_to_func hands its
 * Megatron-Core GPT model: the nemo-24.07 profile) and torch.compile's
 * (sq_relu_fused in STACKS). */
#define SQ_RELU_FWD 4.0
#define SQ_RELU_BWD 2.0
/* TITAN_MODEL: torchtitan's Llama (torchtitan/models/llama/model.py at
 * 9dec370a, the December 2024 benchmark's commit, and models/llama3/model.py
 * at 820504e2, the async-TP one's) is written as separate linears, wq, wk,
 * wv and w1, w3 each its own nn.Linear on the same input, and runs grouped-
 * query attention by repeat_kv (unsqueeze, expand, reshape: a copy of K and
 * V at the query heads' width) before SDPA. Eager, per token and layer in
 * bf16 elements: the two copies read kv and write q each, 2 (q + kv), and
 * the backward's autograd sums the input gradients of the linears that share
 * an input, 2 adds for wq, wk, wv and 1 for w1, w3, each reading 2 and
 * writing 1 of h: 9 h (6 h without a gate). Compiled (torch.compile per
 * block), Inductor writes K once at the query width from the RoPE kernel
 * and expands V in one copy, 2 q more than the fused RoPE of a fused-QKV
 * model, and fuses the sums into the next kernel, which then reads the
 * other gradients: 3 h (2 h). */
#define TITAN_GRAD_SUMS_EAGER 9.0
#define TITAN_GRAD_SUMS_COMPILED 3.0
/* NANOTRON_MODEL: nanotron's CausalSelfAttention (src/nanotron/models/
 * llama.py, training path, at huggingface/nanotron@67c5ebb6, the commit of
 * its benchmark branch nouamane/bench2, and unchanged at c2528430) reshuffles
 * q, k and v with copies a fused-QKV model does not make. Forward, in bytes
 * per token and layer of q = a dh / t and kv = k dh / t: the qkv output made
 * [3, b, s, heads, dh] by permute(...).contiguous() (or, with GQA, three
 * transpose(0, 1).contiguous()), 4 (q + 2 kv); K and V concatenated by
 * torch.cat, 8 kv, and permuted to [b, s, 2, heads, dh] and made contiguous
 * for flash-attn's rotary, 8 kv. Backward: the split of that tensor into K
 * and V concatenates dK and dV, 8 kv; the unbind of the permuted qkv stacks
 * dQ, dK and dV, 4 (q + 2 kv), and the view of the qkv output reshapes the
 * permuted gradient, another 4 (q + 2 kv) (GQA's split has no such view). With
 * b > 1 o_proj's input is the transposed attention output, which the matmul
 * copies (4 q), and the view's backward copies its gradient back (4 q): the
 * same copy the memory model keeps (nanotron_attention_copies). Flash
 * attention takes K and V as strided views (maybe_contiguous copies only a
 * non-unit last stride), and the rotary runs in place (counted as RoPE). */
/* NANOTRON_HOST: the host work of one nanotron Llama layer and micro-batch
 * (huggingface/nanotron@67c5ebb6, the benchmark branch, model and TP code
 * unchanged at c2528430: models/llama.py, parallel/tensor_parallel/
 * functional.py and distributed_differentiable_primitives.py,
 * optim/gradient_accumulator.py; flash-attn v2.5.0's Triton RMSNorm
 * (ops/triton/layer_norm.py) and rotary (layers/rotary.py,
 * ops/triton/rotary.py) and its varlen attention), counted by kind, each at
 * its host cost: an op a Python line issues that launches a kernel or
 * allocates (EAGER_OP_S); a call that launches nothing, a view, a slice, a
 * module's __call__, a cached lookup, a kernel the C++ autograd engine
 * issues (EAGER_VIEW_S); an autograd.Function's apply or Python backward
 * (AUTOGRAD_FN_S); a Triton launch (TRITON_LAUNCH_S); a c10d NCCL
 * collective (COLL_OPS eager ops: its Python wrapper and Work, the stream
 * handshake, NCCL's enqueue). Forward at tp 1: 22 ops (2 per RMSNorm: y,
 * rstd; the 4 F.linear; the permute copy of qkv, the cat and permute copy
 * of K and V; cu_seqlens' 2 zeros, 2 sums, 2 cumsums; the varlen call;
 * 2 residual adds; silu, mul), 49 calls (13 module calls; 4 per norm:
 * reshapes, weight.contiguous, its torch.cuda.device; 12 reshapes of q, k
 * and v; 7 in the rotary; 6 around the attention; 3 on its output), 9
 * autograd.Functions (2 norms, 2 column and 2 row linears, 2 rotaries,
 * flash attention), 4 Triton launches (norms, rotaries). Backward: 26 ops
 * (dgrad and wgrad matmuls of the 4 linears; 4 per norm: dx, the per-SM dw
 * partials, their sum and cast; dq, dk, dv and the varlen call; the fp32
 * accumulation of the 6 weights' gradients, FP32GradientAccumulator.
 * _accumulate_grad, one add_ each), 97 calls (18 kernels of the C++ nodes:
 * residual sums, SwiGLU, the reshapes' copies, 6 AccumulateGrad; 36 in the
 * accumulation loop, 6 a weight; 43 in the Python backwards), 9 Python
 * backwards, 4 Triton launches. At tp > 1 (REDUCE_SCATTER with async
 * communication, the benchmark's): a column linear's forward gathers
 * (all_gather_into_tensor, async), allocates its output, splits it and
 * runs the local sub-GEMM, waits, then the other shards' (+2 ops, 12
 * calls, 1 collective); a row linear's forward reduce-scatters through a
 * nested autograd.Function (+1 op, 3 calls, 1 Function, 1 collective);
 * backward, a column linear re-gathers its input and reduce-scatters its
 * input gradient (+3 ops, 6 calls, 2 collectives), a row linear gathers
 * the output gradient and splits the dgrad (+2 ops, 15 calls, 1
 * collective). The shards before and after a rank's own are one sub-GEMM
 * each (NANOTRON_HOST_SUB: an mm and its views, forward in the two column
 * linears, backward in the two row linears): one at tp 2, two on the
 * middle ranks from tp 3, whose pace the collectives impose on all. */
struct host_count {
    double ops, calls, fns, triton, colls;
};
static const struct host_count NANOTRON_HOST_FWD = {22, 49, 9, 4, 0}, NANOTRON_HOST_BWD = {26, 97, 9, 4, 0};
static const struct host_count NANOTRON_HOST_TP_FWD = {6, 30, 2, 0, 4}, NANOTRON_HOST_TP_BWD = {10, 42, 0, 0, 6};
static const struct host_count NANOTRON_HOST_SUB_FWD = {2, 8, 0, 0, 0}, NANOTRON_HOST_SUB_BWD = {2, 6, 0, 0, 0};
/* TRITON_LAUNCH_S: the Python side of one launch of a compiled Triton
 * kernel with many arguments, 62 us (triton-lang/triton pull request 3503:
 * the Triton shipped with PyTorch 2.2, "40us to 4.2us for kernels with a
 * few params, or 62us to 6us for kernels with many params"; flash-attn's
 * layer-norm kernel takes 33 arguments, its rotary 25, each behind
 * autotune and heuristics wrappers, and the benchmark ran PyTorch 2.1's
 * Triton 2.1). AUTOGRAD_FN_S: a Python autograd.Function's apply over a
 * direct call, 17 us (pytorch/pytorch issue 189573, "13 in 2 out -> 17us
 * overhead"), taken for its Python backward as well. COLL_OPS: a c10d
 * collective as eager ops (above). */
#define TRITON_LAUNCH_S 62e-6
#define AUTOGRAD_FN_S 17e-6
#define COLL_OPS 3.0

static double host_seconds(const struct host_count *c)
{
    return (c->ops + COLL_OPS * c->colls) * EAGER_OP_S + c->calls * EAGER_VIEW_S + c->fns * AUTOGRAD_FN_S +
           c->triton * TRITON_LAUNCH_S;
}

/* EAGER_HOST: a framework that issues a layer's kernels from Python, one
 * eager op at a time, runs the layer no faster than its host issues it.
 * The host runs ahead of the GPU only as far as the launch queue holds
 * (the layer's ops are stream-ordered: nanotron's collectives are async or
 * wait on the stream, and nothing in a layer reads a device value on the
 * host), so each pass of a layer takes the slower of its GPU work and its
 * host work, forward and backward apart (the forward's host work lies
 * between the backward's, a head and a loss away). Counted from the
 * framework's own code, whichever stack computes: nanotron's Llama
 * (NANOTRON_HOST). Other stacks have no count and keep their GPU time:
 * Megatron-Core with Transformer Engine issues a layer in under 2 ms
 * against 7-18 ms of GPU time in its validation runs (doc/perf.md, the fp8
 * launches), torchtitan's and llm-foundry's runs take 77 and 17 ms or more
 * a layer and micro-batch (measured), far above such a count. */
static void host_prepare(const struct m4d_ctx *x, struct m4d_perf_group *pg)
{
    pg->host_fwd = pg->host_bwd = 0;
    if (!pg->mc.nanotron_model || x->experts || x->nlt)
        return;
    pg->host_fwd = host_seconds(&NANOTRON_HOST_FWD);
    pg->host_bwd = host_seconds(&NANOTRON_HOST_BWD);
    if (x->t > 1) { /* the TP linears' extra work, and the sub-GEMMs around the rank's own: one at tp 2, two from tp 3 */
        double subs = x->t > 2 ? 2 : 1;
        pg->host_fwd += host_seconds(&NANOTRON_HOST_TP_FWD);
        pg->host_fwd += subs * host_seconds(&NANOTRON_HOST_SUB_FWD);
        pg->host_bwd += host_seconds(&NANOTRON_HOST_TP_BWD);
        pg->host_bwd += subs * host_seconds(&NANOTRON_HOST_SUB_BWD);
    }
}

/* Kernels per layer and forward pass (norms, GEMMs, RoPE, attention,
 * activation, residual adds, TP collectives); the backward launches twice
 * as many. */
#define KERNELS_FWD 16.0
/* The share of the SM time a GEMM's partial last wave leaves idle that it
 * loses: stream-K kernels (Osama et al., "Stream-K: Work-centric Parallel
 * Decomposition for Dense Matrix-Matrix Multiplication on the GPU", arXiv
 * 2301.03598, 2023; CUTLASS 2.11 and later, cuBLAS 12) spread that wave
 * over the idle SMs and pay a partial-sum fix-up, recovering about half;
 * the data-parallel tiling of a CUDA 11-era library (gemm_library=cuda11)
 * loses all of it. */
#define WAVE_LOST 0.5
#define WAVE_LOST_CUDA11 1.0
/* SMs Transformer Engine's pipelined reduce-scatter overlap occupies
 * (its userbuffers default, num_sm = 16). */
#define UB_SMS 16
/* SMs a NCCL collective's kernel holds while it runs, one CTA per channel,
 * which no compute kernel shares ("If you are on DGX with 8 NICs and a top
 * speed of 190 GB/s, then it would use 16 SMs"; "NCCL CTAs won't share an
 * SM with compute kernels": NCCL's maintainer in NVIDIA/nccl issue 689):
 * the figure for a group inside one NVLink domain and for one with 8
 * members per node; nccl_slow_of() derives the others. */
#define NCCL_SMS 16.0
/* Bytes/s per GPU of the network from which NCCL's ring search splits a
 * cross-node channel in two (NVIDIA/nccl v2.25.1 src/graph/search.cc): a
 * channel runs at the fastest of its speeds (sm90: 48, 45, 42, 40, 30, 24
 * GB/s, ...; sm80: 48, 30, 28, 24, ...) not above the GPU's NIC, and
 * ncclTopoDupChannels splits it from 25 GB/s: 400 Gb/s NICs (48) split,
 * 200 Gb/s ones (24) do not. */
#define NCCL_DUP_BW 28e9
/* A GEMM beside a NCCL kernel on Hopper takes PERSISTENT_WAVES times as
 * long: CUDA 12's cuBLAS picks persistent kernels there, which launch one
 * CTA per SM and loop over tiles, so the CTAs that do not fit beside the
 * collective's run as a second wave ("the matmuls take 2x as long to
 * complete when they are overlapped with a NCCL kernel", FSDP training on
 * H100, pytorch/pytorch issue 143988). While a collective of T seconds
 * hides behind them, the GEMMs do T / PERSISTENT_WAVES seconds of their
 * work: they cost T (1 - 1 / PERSISTENT_WAVES) more, unless the collective
 * outlasts them (unit_time_of, FSDP). The grid is sized to the GPU's SMs at
 * launch, so any SMs the collective holds make the second wave: the cost
 * follows the collective's T (ring_time_split), not its channel count. */
#define PERSISTENT_WAVES 2.0
/* On Ampere a kernel beside a NCCL kernel takes AMPERE_BESIDE times as
 * long, GEMMs and the rest alike: profiled GPT training on A100-SXM4-80GB
 * (NVIDIA/nccl issue 1428, Nsight Systems), beside an all-gather a GEMM
 * 1.18 -> 2.08 ms, attention 0.18 -> 0.33 ms, an element-wise kernel 0.02
 * -> 0.05 ms; NCCL's maintainer puts it on memory bandwidth, of which NCCL
 * moves 2-3 times its link bytes (stores, reads back, user data). The
 * GEMMs' ratio, 2.08 / 1.18, for all of them (the element-wise kernels
 * are a small share of a layer). While a collective of T seconds hides
 * behind them they cost T (1 - 1 / AMPERE_BESIDE), at least its SMs'. */
#define AMPERE_BESIDE (2.08 / 1.18)
/* Computational stragglers: hosts that run the same work slower than the
 * rest, through no fault a check catches. MegaScale's CUDA-event heat-map
 * found about 0.5% of its A100 machines about 10% slower on the same
 * forward, the same hosts in every experiment (Jiang et al., arXiv
 * 2402.15627, NSDI '24: sec. 5.1 and 6.3), and its job of more than 10,000
 * GPUs gained about 0.7 points of MFU once they were removed: 0.7 of the
 * 55.2% its 12,288-GPU run reached (Table 2), 1.27% of the step. A
 * synchronous step waits for its slowest host, so a job of H hosts pays
 * that share with the chance that one of its hosts is such a straggler,
 * 1 - (1 - STRAGGLER_HOSTS)^H, less the chance for one host, which the
 * device's rates (one host's) already hold (straggler_share): 0.04% of
 * the step at 8 hosts, 0.34% at 64, 0.91% at 256, 1.25% at 1,000, 1.26% at
 * MegaScale's 1,536 and beyond. */
#define STRAGGLER_HOSTS 0.005
#define STRAGGLER_STEP (0.007 / 0.552)

/* What one second of a collective (or DeepEP's kernels) hidden beside
 * compute costs that compute: its GEMMs (the share `gemm` of it) the
 * persistent second wave where the library runs persistent kernels, the
 * rest the SMs the collective holds (`slow` extra seconds per second). */
static inline double beside_cost(const struct m4d_machine *mc, double gemm, double slow)
{
    if (mc->ampere_beside) /* AMPERE_BESIDE: every kernel beside it */
        return slow > 1 - 1 / AMPERE_BESIDE ? slow : 1 - 1 / AMPERE_BESIDE;
    return mc->persistent ? gemm * (1 - 1 / PERSISTENT_WAVES) + (1 - gemm) * slow : slow;
}

/* The band of the measured step time around the prediction, as measured /
 * predicted: the 5th and 95th percentiles over the validation runs
 * (tests/data/throughput/throughput.csv, every row the model expresses;
 * doc/perf.md, "Uncertainty"), uncalibrated, and over the runs, exact and
 * approximate, predicted by a device calibrated on the first run of their (source, GPU,
 * precision, stack): a calibration carried to other models and layouts of its
 * stack, the widest use a calibrated device file gets (it also holds the
 * runs of a weak-scaling series calibrated on its first run;
 * tests/test-throughput.c prints all of them). */
#define BAND_LOW 0.889
#define BAND_HIGH 1.181
#define BAND_CAL_LOW 0.928
#define BAND_CAL_HIGH 1.141
/* Between layouts of one job (the search's equivalence, m4d_speed_band_
 * relative()): the band of the runs of a weak-scaling series predicted by a
 * device calibrated on its first run, where the level common to one job's
 * layouts cancels and what remains is the model's spread within a family. */
#define BAND_REL_LOW 0.969
#define BAND_REL_HIGH 1.084

/* Seconds of one micro-batch's work on one GPU. */
struct unit_time {
    double layer_compute; /* GEMMs, attention, element-wise, launches (+ recompute) */
    double layer_tp;      /* exposed TP collectives of one layer */
    double layer_cp;      /* exposed CP ring of one layer */
    double layer_ep;      /* exposed MoE dispatch and combine of one layer */
    double layer_expert;  /* expert GEMMs and activation of one layer (in layer_compute) */
    double layer_router;  /* router, top-k, aux loss, permutation of one layer (in layer_compute) */
    double layer_fsdp;    /* exposed ZeRO-3 gathers / reduce-scatters of one layer */
    double head;          /* LM head and loss, forward and backward */
    double layer_bwd;     /* backward compute of one layer (hides DP collectives) */
    double gemm;          /* the GEMMs' share of one layer's forward (and re-run) and backward compute */
    double layer_fwd;     /* forward compute of one layer */
    double dense;         /* an MoE model's dense layer: all of it, its compute and its exposed TP */
    double dense_compute;
    double dense_tp;
    /* of layer_compute, dense_compute and head, the GEMMs and attention,
     * whose rate follows the SM clock (POWER_BALANCE) */
    double layer_clocked, dense_clocked, head_clocked;
    /* of layer_compute, the GPU waiting for the host's launches (EAGER_HOST,
     * m4d_moe_host): idle power (POWER_BALANCE) */
    double layer_host;
    /* a global attention layer's compute beyond a local one's, all of it
     * clocked (SLIDING_WINDOW: its attention forward, re-run and backward) */
    double global;
};

#define MAX0(v) ((v) > 0 ? (v) : 0)
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* Every count here is below 2^62: the signed conversion is one instruction,
 * the unsigned one a branchy sequence, and this runs per searched layout. */
static inline double D(uint64_t v) { return (double)(int64_t)v; }

static double ppm(uint64_t v) { return D(v) * 1e-6; }

/* Ceiling of a positive quotient; a fraction below 1e-6 is taken for rounding
 * error (no libm, no integer division in the per-layout path). */
static inline double ceil_q(double q) { return (double)(int64_t)(q + 0.999999); }

/* STRAGGLER_HOSTS, STRAGGLER_STEP: the share of the step a job of `world`
 * GPUs, `gpn` a host, loses to the chance that one of its hosts is a
 * straggler, over what one host loses: the device's rates are one host's
 * (a fleet's mean), so a job on one host pays nothing more, and one on H
 * hosts (1 - q) - (1 - q)^H of STRAGGLER_STEP; (1 - q)^H by squaring. */
static double straggler_share(double world, double gpn)
{
    uint64_t h = (uint64_t)ceil_q(world / (gpn > 0 ? gpn : 1));
    double base = 1 - STRAGGLER_HOSTS, none = 1;
    for (; h; h >>= 1, base *= base)
        if (h & 1)
            none *= base;
    return STRAGGLER_STEP * (1 - STRAGGLER_HOSTS - none);
}

/* The power balance of a step. The compute figures (peak_flops,
 * matmul_efficiency_ppm: mamf-finder's MAMF) are a burst; a step draws the board's power and its clock settles where the
 * step's mean power meets the limit (power_limit_w, else board_power_w).
 * Of the board's power a share does not follow the SM clock: what an H100
 * or H200 SXM draws idle at P0 (67-71 W of 700 W on H100 80GB HBM3, 73-76 W
 * on H200, nvidia-smi; IDLE_SHARE), the HBM, the board and the leakage. The
 * rest is dynamic, C V^2 f, and the voltage tracks the clock across the
 * DVFS range, so it goes as f^3 and the clock as the cube root of the
 * dynamic power's ratio (doc/perf.md, "Power limit"). Where mamf-finder
 * publishes the rate a GEMM sustains once the board sits at its TDP (MSMF,
 * SUSTAINED) the burst's dynamic power is the board's over the cube of
 * that rate's share of the burst; elsewhere the burst is taken as what
 * the board sustains. */
#define IDLE_SHARE 0.1
/* The rate a GEMM sustains once the board sits at its TDP (mamf-finder's
 * MSMF, stas00/ml-engineering@082816f, fast-mamf branch,
 * compute/accelerator/README.md) over the burst the presets' efficiencies
 * hold (their MAMF, the historical protocol's), bf16 and fp8, by SMs and
 * board power: H200 SXM's MSMF 708.5 and 1288.7 TFLOP/s (carried to H100
 * SXM: the same GH100 die, 132 SMs, 1980 MHz boost and 700 W TDP) over
 * H100 SXM's 0.803 and 0.709 of 989.4 and 1978.9; B200 SXM's 1456.3 and
 * 2795.7 over its 0.776 and 0.763 of 2250 and 4500. */
static const struct {
    uint64_t sms, board_w;
    double bf16, fp8;
} SUSTAINED[] = {
    {132, 700, 708.5 / (0.803 * 989.4), 1288.7 / (0.709 * 1978.9)},
    {148, 1000, 1456.3 / (0.776 * 2250), 2795.7 / (0.763 * 4500)},
};

/* The cube of the compute rate (a share of the burst's) that a step of
 * compute alone sustains at the limit: SUSTAINED cubed, times the
 * dynamic power's share left under power_limit_w (clamped to [1/64, 1]);
 * 1 without a board power. */
static double power_r_of(const uint64_t *dv, bool fp8)
{
    uint64_t limit_w = dv[MEM4D_DEVICE_POWER_LIMIT_W], board_w = dv[MEM4D_DEVICE_BOARD_POWER_W];
    if (board_w == 0)
        return 1;
    double rho = 1, r = 1;
    for (size_t i = 0; dv[MEM4D_DEVICE_PEAK_FP8_FLOPS] != 0 && i < sizeof SUSTAINED / sizeof SUSTAINED[0]; i++)
        if (SUSTAINED[i].sms == dv[MEM4D_DEVICE_SM_COUNT] && SUSTAINED[i].board_w == board_w)
            rho = fp8 ? SUSTAINED[i].fp8 : SUSTAINED[i].bf16;
    if (limit_w != 0 && limit_w < board_w) {
        double idle = IDLE_SHARE * D(board_w);
        r = (D(limit_w) - idle) / (D(board_w) - idle);
        if (r < 1.0 / 64)
            r = 1.0 / 64;
    }
    return rho * rho * rho * r;
}

/* POWER_BALANCE: the clock y (a share of the burst's) of a step whose
 * GEMMs and attention take k seconds at the burst, whose other kernels
 * (element-wise, copies: HBM-bound, their rate not the SM clock's) take e
 * more, both at the SMs' busy power, idle + P_dyn y^3, and whose other time
 * o (exposed communication, bubble, optimizer, the GPU waiting for the
 * host's launches or the framework's per-micro-batch time) draws the idle
 * share:
 * the step's mean power meets the limit where y^3 (k + e y) = r (k + (e +
 * o) y). Returned as z = 1/y, the GEMMs' stretch, the root of
 * h(z) = r k z^4 + r (e + o) z^3 - k z - e; the caller checks that y = 1
 * is above the limit (h(1) < 0). h is convex, h(1/cbrt(r)) = o >= 0:
 * Halley's iteration from there (one division a step, cubic), Newton's
 * where Halley's denominator is not positive; no libm. */
static inline double power_stretch(double r, double zc, double k, double e, double o)
{
    double rk = r * k, reo = r * (e + o), z = zc;
    for (int i = 0; i < 32; i++) {
        double z2 = z * z, h = (rk * z + reo) * z2 * z - k * z - e, h1 = (4 * rk * z + 3 * reo) * z2 - k;
        double h2 = (12 * rk * z + 6 * reo) * z, den = 2 * h1 * h1 - h * h2;
        double d = den > 0 ? 2 * h * h1 / den : h / h1;
        z -= d;
        if (d < 1e-3 * z && d > -1e-3 * z) /* cubic: what is left is of the order of d^3 */
            break;
    }
    return z;
}

/* The inverse cube root of r in (0, 1]: Newton's iteration from 1 on
 * r z^3 = 1, no libm. power_r reaches below 1/64 (SUSTAINED cubed times
 * the clamped 1/64: 0.0091 on B200); from 1 the iterates rise to r^(-1/3)
 * by at most 4/3 a step, so 40 steps hold it to rounding for r down to
 * 1/1024 at least. */
static double inv_cbrt_unit(double r)
{
    double z = 1;
    for (int i = 0; i < 40; i++)
        z = z * (4 - r * z * z * z) / 3;
    return z;
}

/* An fp8 recipe's linear-layer GEMM time with its quantization (Transformer
 * Engine's autocast: the casts, scaling factors and the recipe's GEMM
 * kernel) over delayed scaling's, which the fp8 peak and casts above stand
 * for (mamf-finder's fp8 is a tensor-wise scaled_mm; doc/presets.md).
 * Transformer Engine's GEMM benchmark, one layer's 12 linear GEMMs of a 5B
 * model (hidden 4096, ffn 16384, 15,872 tokens), autocast:
 * tensorwise (current scaling) 20.285 against 18.978 ms and blockwise
 * 22.882 ms on an H200 NVL, MXFP8 8.984 against 7.802 ms on a B300
 * (NVIDIA/TransformerEngine@d0067d0 docs/examples/gemm_profiling/
 * gemm_profiling.rst, "Worked Example"; on the B300 tensorwise is 9.147 and
 * blockwise 1.30x over bf16's 12.758 against delayed's 1.61x, the figure
 * b300_model_config_speedup.png). Indexed by fp8_recipe: delayed,
 * tensorwise, mxfp8, blockwise, custom; each recipe at the figure of the
 * generation that introduced it (Hopper; MXFP8 runs on Blackwell only).
 * Tensorwise is 1 (TE_FP8_CURRENT): its GEMM is delayed scaling's kernel
 * (one per-tensor scale an operand), pre-quantized 16.785 ms against
 * delayed's 18.978 autocast on the H200 NVL, and the whole 1.307 ms of
 * its autocast excess is its quantization's amax pass, which
 * gemms_prepare charges by bytes. */
static const double FP8_RECIPE_TIME[] = {1, 1, 8.984 / 7.802, 22.882 / 18.978, 1};

/* NVFP4 (fp8_recipe nvfp4: Transformer Engine's NVFP4BlockScaling): the
 * linear and expert GEMMs run at the device's fp4 peak (peak_fp4_flops) at
 * the share of it that fp4 kernels reach, and quantize at tensorwise's bytes
 * (TE_FP8_CURRENT: NVFP4 takes a per-tensor amax first too) times its
 * kernels' extra work. Both from Transformer Engine's GEMM benchmark on a
 * B300 (NVIDIA/TransformerEngine@8f2e635 docs/examples/gemm_profiling/
 * gemm_profiling.rst, the 5B model's 12 GEMMs a layer, 15,872 tokens):
 * NVFP4_GEMM_SHARE: pre-quantized (the GEMM kernels alone) NVFP4 takes
 * 3.764 ms where tensorwise fp8 takes 6.812, so an fp4 kernel reaches
 * (6.812 · 4500) / (3.764 · 12600) of what an fp8 one reaches of its peak
 * (b300-288's fp8 and fp4 peaks): the fp4 rate is the fp8 MAMF share
 * (fp8_efficiency_ppm; mamf-finder measures no fp4 GEMM) times this.
 * NVFP4_QUANT_TIME: autocast less pre-quantized, NVFP4's quantization
 * (amax, the random Hadamard transform on the weight gradient's inputs,
 * stochastic rounding of the gradients, 2D weight scaling) takes 6.453 -
 * 3.764 ms where tensorwise's takes 9.147 - 6.812. */
#define NVFP4_GEMM_SHARE (6.812 * 4500 / (3.764 * 12600))
#define NVFP4_QUANT_TIME ((6.453 - 3.764) / (9.147 - 6.812))

/* Of x it reads the framework, fp8 and its recipe, the cross entropy's
 * kernels and whether the attention is fused (flash) alone, which no search
 * knob changes: a search computes it once (m4d_perf_machine(), search.c). */
static struct m4d_machine machine_of(const struct m4d_ctx *x, const mem4d_device *dev)
{
    const uint64_t *dv = dev->v;
    double eff = ppm(dv[MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM]), ce = ppm(dv[MEM4D_DEVICE_COMM_EFFICIENCY_PPM]);
    double peak = D(dv[MEM4D_DEVICE_PEAK_FLOPS]), lin = peak, fp8_slow = 1;
    if (x->fp8 && dv[MEM4D_DEVICE_PEAK_FP8_FLOPS] != 0) {
        if (x->fp8_recipe < sizeof FP8_RECIPE_TIME / sizeof FP8_RECIPE_TIME[0])
            fp8_slow = FP8_RECIPE_TIME[x->fp8_recipe];
        lin = D(dv[MEM4D_DEVICE_PEAK_FP8_FLOPS]) * ppm(dv[MEM4D_DEVICE_FP8_EFFICIENCY_PPM]) / eff / fp8_slow;
    }
    if (x->fp8 && x->fp8_recipe == M4D_FP8_RECIPE_NVFP4 && dv[MEM4D_DEVICE_PEAK_FP4_FLOPS] != 0) {
        fp8_slow = NVFP4_QUANT_TIME; /* the casts' (gemms_prepare): the GEMMs' own rate is below */
        lin = D(dv[MEM4D_DEVICE_PEAK_FP4_FLOPS]) * ppm(dv[MEM4D_DEVICE_FP8_EFFICIENCY_PPM]) * NVFP4_GEMM_SHARE / eff;
    }
    double gpn = D(dv[MEM4D_DEVICE_GPUS_PER_NODE] ? dv[MEM4D_DEVICE_GPUS_PER_NODE] : 1);
    double inter = D(dv[MEM4D_DEVICE_INTER_NODE_BANDWIDTH]);
    /* The node's NICs are shared by every GPU whose ring leaves the node. */
    if (dv[MEM4D_DEVICE_NICS_PER_NODE] && dv[MEM4D_DEVICE_NIC_BANDWIDTH])
        inter = D(dv[MEM4D_DEVICE_NICS_PER_NODE]) * D(dv[MEM4D_DEVICE_NIC_BANDWIDTH]) / gpn;
    /* The stack: its profile, then the keys set on the device. The job's
     * attention is m4d_attention_fused()'s (x->flash, as its memory):
     * softmax attention runs the unfused kernel, a fused job the device's
     * kernel, else its stack's, else FlashAttention-2. */
    const struct stack *st = stack_of(dev);
    bool hopper = dv[MEM4D_DEVICE_PEAK_FP8_FLOPS] != 0;
    uint64_t ak = attention_kernel(dev, x->flash);
    uint64_t gl = dv[MEM4D_DEVICE_GEMM_LIBRARY] ? dv[MEM4D_DEVICE_GEMM_LIBRARY] : st->gemm;
    double af = ATTN_KERNELS[ak].fwd, ab = ATTN_KERNELS[ak].bwd;
    if (!hopper && ak != 5) /* Ampere: every flash kernel is FlashAttention-2's generation */
        af = ab = 1;
    if (ak == 6) { /* Triton's flash attention, slower than FlashAttention-2 everywhere */
        af /= TRITON_FA_FWD;
        ab /= TRITON_FA_BWD;
    }
    if (hopper && gl == 2 && MMA_SYNC_SHARE < eff) { /* Ampere kernels on Hopper */
        peak *= MMA_SYNC_SHARE / eff;
        lin *= MMA_SYNC_SHARE / eff;
    }
    /* What a streaming kernel reaches of the data sheet's HBM rate: the
     * device's measured share (presets: doc/presets.md), folded in once. */
    double hbm = D(dv[MEM4D_DEVICE_HBM_BANDWIDTH]);
    if (dv[MEM4D_DEVICE_HBM_EFFICIENCY_PPM])
        hbm *= ppm(dv[MEM4D_DEVICE_HBM_EFFICIENCY_PPM]);
    struct m4d_machine mc = {
        .attn_fwd = ak == 5 ? af : ATTN_FWD_SHARE * af, /* UNFUSED_ATTN: its kernels' own time at 1 */
        .attn_bwd = ak == 5 ? ab : ATTN_BWD_SHARE * ab,
        .attn_work = ATTN_KERNELS[ak].work,
        .attn_dh64 = ak == 6 ? TRITON_FA_DH64 : 1,
        .mb_overhead = dv[MEM4D_DEVICE_MICROBATCH_OVERHEAD_NS] ? D(dv[MEM4D_DEVICE_MICROBATCH_OVERHEAD_NS]) * 1e-9
                                                                : st->mb_overhead,
        .accum_bytes = dv[MEM4D_DEVICE_GRAD_ACCUM_BYTES] ? D(dv[MEM4D_DEVICE_GRAD_ACCUM_BYTES]) : st->accum_bytes,
        .ce_bytes = x->ce_impl == 1   ? CE_UNFUSED
                    : x->ce_impl == 2 ? CE_NATIVE + (x->ce_fusion ? CE_NATIVE_COPY_BACK : 0)
                    : x->ce_impl == 3 ? CE_TE
                                      : st->ce_bytes,
        .op_sac = st->op_sac,
        .ew_eager = st->eager,
        .act_eager = st->eager_act,
        /* the framework's own distributed code, whichever stack computes */
        .zero1_allreduce = st->zero1_allreduce || x->fw == MEM4D_FRAMEWORK_NANOTRON,
        .dtensor_tp = st->dtensor_tp || x->fw == MEM4D_FRAMEWORK_TORCHTITAN,
        .fsdp2_copies = st->fsdp2_copies || x->fw == MEM4D_FRAMEWORK_TORCHTITAN,
        .titan_model = st->titan_model || x->fw == MEM4D_FRAMEWORK_TORCHTITAN,
        .nanotron_model = st->nanotron_model || x->fw == MEM4D_FRAMEWORK_NANOTRON,
        .tp_sync = st->tp_sync,
        .ln_apex = st->ln_apex,
        .bias_add = st->bias_add,
        .bias_epilogue = st->bias_epilogue,
        .ds_pipe = st->ds_pipe || x->fw == MEM4D_FRAMEWORK_DEEPSPEED,
        .p2p_split = st->p2p_split,
        .step_passes = st->step_passes,
        .ds_zero1 = st->ds_pipe || x->fw == MEM4D_FRAMEWORK_DEEPSPEED, /* the same engine's ZeRO (DS_ZERO1) */
        .fsdp_root = st->fsdp_root || x->fw == MEM4D_FRAMEWORK_TORCHTITAN || dv[MEM4D_DEVICE_PYTORCH_FSDP],
        .attn_unpad = st->attn_unpad && ak == 1, /* the flash-attn package's FlashAttention-2 */
        .attn_unfused = ak == 5,
        .softmax = st->softmax,
        .te_norm_fp8 = st->te_norm_fp8,
        .te_cp_ring = x->fw == MEM4D_FRAMEWORK_MEGATRON ? st->te_cp_ring : 0,
        .sq_relu_eager = !st->sq_relu_fused,
        .gemm = peak * eff,
        .gemm_lin = lin * eff,
        .fp8_slow = fp8_slow,
        .power_r = power_r_of(dv, x->fp8 && dv[MEM4D_DEVICE_PEAK_FP8_FLOPS] != 0),
        .hbm = hbm,
        .domain = dv[MEM4D_DEVICE_NVLINK_DOMAIN] ? D(dv[MEM4D_DEVICE_NVLINK_DOMAIN]) : gpn,
        .gpn = gpn,
        .kernel = D(dv[MEM4D_DEVICE_KERNEL_OVERHEAD_NS]) * 1e-9,
        .host_op = EAGER_OP_S,
        .sms = D(dv[MEM4D_DEVICE_SM_COUNT]),
        .wave_lost = gl == 3 ? WAVE_LOST_CUDA11 : WAVE_LOST,
        .inv_sms = dv[MEM4D_DEVICE_SM_COUNT] ? 1 / D(dv[MEM4D_DEVICE_SM_COUNT]) : 0,
        .nccl_dup = inter >= NCCL_DUP_BW ? 2 : 1,
        .persistent = hopper && gl == 1 && dv[MEM4D_DEVICE_SM_COUNT] != 0,
        .ampere_beside = !hopper && dv[MEM4D_DEVICE_SM_COUNT] != 0,
        .inv_hbm = hbm > 0 ? 1 / hbm : 0,
        .intra = {D(dv[MEM4D_DEVICE_INTRA_NODE_BANDWIDTH]) * ce, D(dv[MEM4D_DEVICE_INTRA_NODE_LATENCY_NS]) * 1e-9},
        .inter = {inter * ppm(m4d_perf_effective(dev, MEM4D_DEVICE_INTER_NODE_EFFICIENCY_PPM)),
                  D(dv[MEM4D_DEVICE_INTER_NODE_LATENCY_NS]) * 1e-9},
    };
    mc.power_zc = inv_cbrt_unit(mc.power_r);
    /* A device's own attention rate (a calibration's) replaces the
     * kernel's forward share; the backward keeps its ratio to it. */
    if (dv[MEM4D_DEVICE_ATTENTION_EFFICIENCY_PPM]) {
        mc.attn_bwd *= ppm(dv[MEM4D_DEVICE_ATTENTION_EFFICIENCY_PPM]) / mc.attn_fwd;
        mc.attn_fwd = ppm(dv[MEM4D_DEVICE_ATTENTION_EFFICIENCY_PPM]);
    }
    return mc;
}

/* A group's members in one NVLink domain, its ranks `stride` apart: the
 * g of link_for(), ring_time_split() and nccl_slow_of(). */
static inline double domain_members(const struct m4d_machine *mc, double stride)
{
    return stride < mc->domain ? (double)(int64_t)(mc->domain / stride) : 1;
}

/* Whether the weights are gathered and the gradients reduce-scattered per
 * layer, as FSDP units: ZeRO-3, and ZeRO-2 where PyTorch's FSDP wraps the
 * model (fsdp_root), whose ZeRO-2 is FSDP1's SHARD_GRAD_OP (FSDP2's
 * reshard_after_forward=False): the same units, the weights kept gathered
 * from the forward through the backward (FSDP_SHARD_GRAD_OP). */
static inline bool fsdp_units(const struct m4d_ctx *x, const struct m4d_machine *mc)
{
    return x->zero >= 3 || (x->zero == 2 && mc->fsdp_root);
}

/* FSDP_ONCE: PyTorch's FSDP reducing the gradients once a step. */
static inline bool fsdp_once(const struct m4d_ctx *x, const struct m4d_machine *mc)
{
    return mc->fsdp_root && x->zero >= 1 && !fsdp_units(x, mc);
}

/* Megatron orders ranks tp-cp-dp-pp: a group whose members span `span`
 * consecutive ranks stays on NVLink when span <= the NVLink domain (a node,
 * or a whole NVL72 rack). Otherwise it crosses the network, where NCCL's
 * rings (and trees) run through the g members of the group in each domain
 * over NVLink and leave the domain once per channel, the channels spread
 * over the domain's NICs (src/graph/search.cc, ncclTopoCompute: one NIC per
 * channel). The domain's members of all the parallel groups (`stride`
 * ranks apart) share its NICs, so each group moves its bytes at g times one
 * GPU's share of the network, up to NVLink's rate. */
static struct m4d_link link_for(const struct m4d_machine *mc, double span, double stride)
{
    if (span <= mc->domain)
        return mc->intra;
    struct m4d_link l = mc->inter;
    double g = domain_members(mc, stride);
    l.bw *= g;
    if (mc->intra.bw > 0 && l.bw > mc->intra.bw)
        l.bw = mc->intra.bw;
    return l;
}

/* The pipeline's neighbours: t·c·d ranks apart (Megatron's rank order puts
 * the pipeline outermost), its group t·c·d·p ranks in all. The one place
 * the pipeline's span and stride are written: its send/receive link, the
 * tied embedding's all-reduce and NCCL's SMs for the transfers use it. */
struct pipe_span {
    double span, stride;
};
static inline struct pipe_span pipe_neighbours(const struct m4d_ctx *x)
{
    double stride = D(x->t * x->c * x->d);
    return (struct pipe_span){stride * D(x->p), stride};
}

/* Ring collective over n ranks moving `frac` of `bytes` per GPU in `steps`
 * latency-bound steps. A link without bandwidth is not modelled (0 s). */
static double ring_time(const struct m4d_link *l, double n, double bytes, double frac, double steps)
{
    if (n <= 1 || l->bw <= 0)
        return 0;
    return steps * l->lat + frac * bytes / l->bw;
}

/* The latency of one ring all-gather or reduce-scatter over the n ranks of
 * a group of `span` consecutive ranks `stride` apart (link_for), as NCCL's
 * tuner times one (src/graph/tuning.cc, ncclTopoTuneModel: nsteps = n − 1
 * of which nInterSteps = nodes − 1 cross the network at its latency, the
 * others NVLink's): a ring leaves each NVLink domain once, so across d
 * domains of g members each it takes (n − d)·λ_intra + (d − 1)·λ_inter,
 * not (n − 1)·λ_inter. */
static double ring_latency(const struct m4d_machine *mc, double span, double stride, double n)
{
    if (span <= mc->domain)
        return (n - 1) * mc->intra.lat;
    double d = ceil_q(n / domain_members(mc, stride));
    return (n - d) * mc->intra.lat + (d - 1) * mc->inter.lat;
}

/* `colls` such collectives moving `frac` of `bytes` per GPU in all. */
static double ring_time_split(const struct m4d_machine *mc, double span, double stride, double n, double bytes,
                              double frac, double colls)
{
    struct m4d_link l = link_for(mc, span, stride);
    if (n <= 1 || l.bw <= 0)
        return 0;
    return colls * ring_latency(mc, span, stride, n) + frac * bytes / l.bw;
}

/* Tile-slots lost to wave quantisation over `tiles` equal tiles, as
 * (tiles + lost) / tiles: the SMs idle in the partial last wave, of which
 * the library loses WAVE_LOST (stream-K kernels recover about half and pay
 * the partial-sum fix-up with the rest) or WAVE_LOST_CUDA11 (all). */
static inline double wave_slots(const struct m4d_machine *mc, double tiles)
{
    if (mc->sms == 0 || tiles <= 0)
        return tiles;
    return tiles + mc->wave_lost * (ceil_q(tiles * mc->inv_sms) * mc->sms - tiles);
}

/* One GEMM of N x K at `rate` FLOP/s for large shapes, inputs of `eb`
 * bytes per element: the slower of its compute (wave quantisation over
 * the SMs, the K pipeline fill, the columns of whole tiles: a partial tile
 * runs as long as a whole one in its wave) and its HBM traffic (bf16 output), as the
 * coefficients gemm_time() takes the M rows of a micro-batch with. */
static struct m4d_gemm gemm_of(const struct m4d_machine *mc, double n, double k, double rate, double eb)
{
    struct m4d_gemm g = {
        .c = 2 * ceil_q(n * (1.0 / TILE_N)) * TILE_N * (k + K_FILL * 2 / eb) / rate,
        .a = (eb * k + 2 * n) * mc->inv_hbm,
        .b = eb * k * n * mc->inv_hbm,
        .tn = ceil_q(n * (1.0 / TILE_N)),
    };
    return g;
}

static inline double gemm_time(const struct m4d_machine *mc, const struct m4d_gemm *g, double m)
{
    if (g->tn == 0) /* no such GEMM (an expert layer without a shared expert) */
        return 0;
    double tiles = ceil_q(m * (1.0 / TILE_M)) * g->tn;
    return MAX(m * g->c * wave_slots(mc, tiles) / tiles, m * g->a + g->b);
}

/* Active MLP width: dense f, or top-k routed experts plus the shared one. */
static uint64_t mlp_width(const struct m4d_ctx *x)
{
    if (x->experts == 0)
        return x->f;
    return x->topk * (x->fe ? x->fe : x->f) + x->fs;
}

/* The MLP width the layer's dense GEMMs run: f, or an expert layer's
 * shared expert (the routed experts are timed in lib/perf_moe.c). */
static double mlp_width_run(const struct m4d_ctx *x)
{
    return D(x->experts == 0 ? x->f : x->fs);
}

/* TE_FP8_CASTS: bytes per element Transformer Engine's fp8 linears move
 * beyond bf16's to quantize a tensor (read 2, write 1), transpose an fp8
 * one (read 1, write 1), do both in one kernel (read 2, write 1 + 1), or
 * quantize unfused, then transpose (5). With delayed scaling (TE 1.9, tag
 * v1.9, pytorch/module/): a te.Linear casts and transposes its input in
 * one kernel (linear.py, fp8_cast_transpose_fused), or under sequence
 * parallelism casts it in the forward (on its own 1/t of the rows when it
 * then gathers them) and transposes the whole in the backward
 * (fp8_transpose); a LayerNormLinear's norm writes its output in fp8
 * itself (layernorm_linear.py: ln_out uint8 from _apply_normalization),
 * which then pays only the backward's transpose. Megatron-Core's TE layers
 * (transformer_engine.py: TELayerNormColumnParallelLinear for qkv and fc1,
 * TERowParallelLinear for the output projection and fc2, the activation
 * its own in bf16; NVIDIA/Megatron-LM@d98e8a64) take the fused norm for
 * qkv and fc1 (te_norm_fp8 in the stack), other stacks' te.Linear layers
 * (llm-foundry's fc_type te) a cast of every input. Output gradients are
 * cast and transposed in one kernel (base.py, grad_output_preprocess),
 * except a row-parallel linear's under sequence parallelism: cast on its
 * 1/t of the rows, gathered in fp8, then transposed. TE 2.x keeps the
 * fused norm for delayed scaling; its current scaling writes the norm in
 * bf16, takes its amax, then quantizes (pytorch/csrc/extensions/
 * normalization.cpp@v2.2, nvte_compute_amax on the unquantized output):
 * every recipe but delayed pays the unfused count. */
/* (the counts: M4D_FP8_Q, _T, _QT, _Q_THEN_T in private.h, which the
 * expert layers' casts read too, lib/perf_moe.c) */
/* TE_FP8_CURRENT: tensorwise (current) scaling, Transformer Engine 2.9
 * (tag v2.9; Megatron-Bridge 25.11's pin, pyproject.toml@v0.2.0) with
 * Megatron-Core 0.15. Float8CurrentScalingQuantizer::quantize
 * (pytorch/csrc/quantizer.cpp) reads the bf16 tensor once for its amax
 * (nvte_compute_amax, 2 bytes an element; all-reduced over the TP group
 * for a sequence-parallel shard), then casts it, with its transpose in the
 * same kernel when both layouts are wanted (nvte_quantize_v2): 2 + 4. TE's
 * own norm computes the amax as it writes its bf16 output
 * (extensions/normalization.cpp, FUSED_NORM_AMAX_FP8 unless
 * NVTE_NORM_FWD_USE_CUDNN), so the norm before qkv and fc1 pays the cast
 * alone: 4, or under sequence parallelism a row-wise cast of its shard,
 * the fp8 gather and the transpose (3/t + 2, layernorm_linear.py). The
 * output projection keeps its bf16 input (Megatron-Core's attention.py
 * set_save_original_input for every recipe but delayed, core_v0.15.3)
 * and quantizes it row-wise in the forward and column-wise in the
 * backward (linear.py, save_original_input): 2 × (2 + 3). A
 * row-parallel output gradient under sequence parallelism is quantized on
 * its shard, gathered, then transposed ((2 + 3)/t + 2, base.py
 * grad_output_preprocess); every other tensor 2 + 4, each weight 2 + 4
 * once per step (the amax read: M4D_FP8_AMAX, private.h). */

/* The four linear layers and the head as GEMMs on one GPU: N outputs and K
 * inputs after the TP split, at the full rate and beside a userbuffers
 * kernel that keeps UB_SMS SMs (lin_ub; linears_time() says which GEMM runs
 * how with tp_comm_overlap). With fp8
 * each linear's input, output gradient and weight are quantized, and
 * the input and output gradient also transposed for the backward (Hopper
 * fp8 GEMMs take K-major operands), over HBM, per micro-batch at the bytes
 * per element below (TE_FP8_CASTS). The weight's cast and
 * transpose (5 bytes per element) run once per step: Megatron-Core sets
 * is_first_microbatch on the step's first micro-batch (pipeline_parallel/
 * schedules.py, forward_step: model.set_is_first_microbatch()) and its TE
 * layers pass it to Transformer Engine, which casts the weight then and
 * reuses the cached fp8 copy for the step's other micro-batches
 * (extensions/transformer_engine.py, TELinear.forward;
 * NVIDIA/Megatron-LM@d98e8a64). */
/* An MoE model with dense layers (moe_first_dense_layers, a MoE layer
 * period; a layer pattern's are lib/perf_hybrid.c's). */
static bool has_dense_layers(const struct m4d_ctx *x)
{
    return x->experts && !x->nlt && (x->first_dense > 0 || x->moe_period != 1);
}

/* Element-wise kernels' HBM seconds per sample, a forward's and its
 * backward's: the backward is charged twice ew_per_b (unit_time_of), so
 * ew_grad_per_b takes what the backward moves beyond that (negative where
 * it moves less). */
static void ew_kernels(struct m4d_perf_group *pg, double fwd, double bwd)
{
    pg->ew_per_b += fwd;
    pg->ew_grad_per_b += bwd - 2 * fwd;
}

static void gemms_prepare(const struct m4d_ctx *x, struct m4d_perf_group *pg)
{
    const struct m4d_machine *mc = &pg->mc;
    double rt = 1 / D(x->t), h = D(x->h), q = D(x->a * x->dh) * rt, kv = D(x->k * x->dh) * rt;
    double F = mlp_width_run(x) * rt, up = (x->gated ? 2 : 1) * F, qkv = q + 2 * kv;
    double eb = x->fp8 ? 1 : 2, r = mc->gemm_lin, rs = r;
    pg->chunks = 1;
    pg->row_slices = mc->nanotron_model && x->t > 1 && !x->tp_overlap ? D(x->t) : 0; /* NANOTRON_TP_SLICES */
    if (x->tp_overlap && x->t > 1) {
        pg->chunks = D(x->t);
        if (mc->sms > UB_SMS)
            rs = r * (mc->sms - UB_SMS) * mc->inv_sms;
    }
    pg->lin[0] = gemm_of(mc, qkv, h, r, eb);
    pg->lin[1] = gemm_of(mc, h, q, r, eb);
    pg->lin[2] = gemm_of(mc, up, h, r, eb);
    pg->lin[3] = gemm_of(mc, h, F, r, eb);
    pg->lin_ub[0] = gemm_of(mc, qkv, h, rs, eb);
    pg->lin_ub[1] = gemm_of(mc, h, q, rs, eb);
    pg->lin_ub[2] = gemm_of(mc, up, h, rs, eb);
    pg->lin_ub[3] = gemm_of(mc, h, F, rs, eb);
    if (F == 0) /* an expert layer without a shared expert: no down projection either */
        pg->lin[3].tn = pg->lin_ub[3].tn = 0;
    /* an MoE model's dense layers run the dense ffn instead, timed as a
     * dense model's MLP (linears_time) */
    memset(pg->dense_mlp, 0, sizeof pg->dense_mlp);
    memset(pg->dense_mlp_ub, 0, sizeof pg->dense_mlp_ub);
    if (has_dense_layers(x)) {
        double Fd = D(x->f) * rt, upd = (x->gated ? 2 : 1) * Fd;
        pg->dense_mlp[0] = gemm_of(mc, upd, h, r, eb);
        pg->dense_mlp[1] = gemm_of(mc, h, Fd, r, eb);
        pg->dense_mlp_ub[0] = gemm_of(mc, upd, h, rs, eb);
        pg->dense_mlp_ub[1] = gemm_of(mc, h, Fd, rs, eb);
    }
    pg->head = gemm_of(mc, D(x->Vp) * rt, h, mc->gemm, 2);
    pg->rows_per_b = D(x->s) / D(x->c);
    pg->cast_a = pg->cast_b = 0;
    if (x->fp8) {
        double w = h * (qkv + up + q + F), in, out;
        double wb = M4D_FP8_Q_THEN_T;
        bool sp = x->t > 1 && x->sp;
        if (x->fp8_recipe == 0) { /* delayed scaling (TE_FP8_CASTS) */
            double full = sp ? M4D_FP8_Q + M4D_FP8_T : M4D_FP8_QT, shard = sp ? M4D_FP8_Q * rt + M4D_FP8_T : M4D_FP8_QT;
            in = (mc->te_norm_fp8 ? M4D_FP8_T : shard) * 2 * h + full * (q + F);
            out = M4D_FP8_QT * (qkv + up) + shard * 2 * h;
        } else if (x->fp8_recipe == 1 || x->fp8_recipe == M4D_FP8_RECIPE_NVFP4) { /* TE_FP8_CURRENT; NVFP4 */
            double whole = M4D_FP8_AMAX + M4D_FP8_QT, shard = sp ? (M4D_FP8_AMAX + M4D_FP8_Q) * rt + M4D_FP8_T : whole;
            double norm = !mc->te_norm_fp8 ? shard : sp ? M4D_FP8_Q * rt + M4D_FP8_T : M4D_FP8_QT;
            double proj = x->fw == MEM4D_FRAMEWORK_MEGATRON ? 2 * (M4D_FP8_AMAX + M4D_FP8_Q) : whole;
            in = norm * 2 * h + proj * q + whole * F;
            out = whole * (qkv + up) + shard * 2 * h;
            wb = whole;
        } else {
            in = M4D_FP8_Q_THEN_T * (2 * h + q + F);
            out = M4D_FP8_QT * (qkv + up + 2 * h);
        }
        pg->cast_a = (in + out) * mc->inv_hbm * mc->fp8_slow;
        if (x->fp8_params)
            wb = M4D_FP8_T;
        pg->cast_b = wb * w * mc->inv_hbm * mc->fp8_slow;
    }
    /* Memory-bound element-wise work of a forward: two norms (read, write
     * h) and two residual adds (read 2h, write h) on the TP-sharded
     * sequence with SP, RoPE on q and k (a rotary model's only: learned,
     * ALiBi and no positions run no RoPE kernel; a learned table's add is
     * one per micro-batch on the first stage, ALiBi's bias is inside the
     * attention kernel) and the MLP activation on the TP-split widths,
     * bf16. The backward moves twice as much. */
    double sh = x->t > 1 && x->sp ? rt : 1, act = (x->gated ? 3 : 2) * F;
    /* Eager PyTorch (EAGER_NORM, _ROPE, _SWIGLU: bf16 elements moved per
     * element, where a fused kernel moves 2 per norm and per RoPE). */
    double norm = mc->ew_eager ? EAGER_NORM : 2, rope = mc->ew_eager ? EAGER_ROPE : 2;
    double acte = (mc->ew_eager || mc->act_eager) && x->gated ? EAGER_SWIGLU * F : act;
    bool sqr = x->sq_relu && !x->gated && mc->sq_relu_eager; /* SQ_RELU_EAGER */
    if (sqr)
        acte = SQ_RELU_FWD * F;
    /* torchtitan's Llama (TITAN_MODEL): repeat_kv's copies in the forward,
     * the sums of the shared inputs' gradients in the backward */
    double rep = 0, sums = 0;
    if (mc->titan_model) {
        rep = kv < q ? (mc->ew_eager ? 2 * (q + kv) : 2 * q) : 0;
        sums = (mc->ew_eager ? TITAN_GRAD_SUMS_EAGER : TITAN_GRAD_SUMS_COMPILED) * (x->gated ? 1 : 2.0 / 3) * h;
    }
    pg->ew_per_b = 2 * pg->rows_per_b * (sh * (2 * norm + 6) * h + (x->rope ? rope * (q + kv) : 0) + acte + rep) * mc->inv_hbm;
    /* nanotron's attention copies (NANOTRON_MODEL), bytes: the forward's, the
     * backward's (with the GQA split, no view to copy back through) */
    double cf = 0, cb = 0;
    if (mc->nanotron_model) {
        cf = 4 * (q + 2 * kv) + 16 * kv;
        cb = 8 * kv + (x->k < x->a ? 1 : 2) * 4 * (q + 2 * kv);
    }
    pg->copy_per_b = pg->rows_per_b * cf * mc->inv_hbm;
    pg->cp_fwd_per_b = pg->cp_bwd_per_b = 0;
    if (mc->te_cp_ring && x->c > 1 && !x->cp_all_gather) { /* TE_CP_RING: the ring's, not CP_ALL_GATHER's */
        double c = D(x->c);
        double merges = mc->te_cp_ring == 1 ? TE_CP_OUT_ZERO + TE_CP_MERGE * c : TE_CP_MERGE_INIT + TE_CP_MERGE * (c - 1);
        pg->cp_fwd_per_b = pg->rows_per_b * (TE_CP_KV_COPY * kv + merges * q) * mc->inv_hbm;
        pg->cp_bwd_per_b = pg->rows_per_b *
                           (TE_CP_KV_COPY * kv + (TE_CP_COPY + TE_CP_ADD * (c - 1)) * q + (TE_CP_COPY + TE_CP_ADD * c) * kv) *
                           mc->inv_hbm;
    }
    pg->copy_mb_per_b = mc->nanotron_model ? pg->rows_per_b * 4 * q * mc->inv_hbm : 0;
    double split = mc->act_eager && x->gated ? EAGER_GLU_SPLIT * F : 0; /* nanotron's GLU split, backward */
    pg->ew_grad_per_b = pg->rows_per_b * (2 * sums + cb + split + (sqr ? 2 * SQ_RELU_BWD * F : 0)) * mc->inv_hbm;
    /* BIAS_BYTES, bf16 elements per token: fc1's bias gradient, a sum over
     * the tokens of fc1's output gradient; the QKV bias's add (a kernel of
     * its own, bias_add) and its gradient's sum, where no GEMM epilogue
     * does them (bias_epilogue). The other two biases' adds and sums are in
     * the bias-dropout-add's fused kernels. */
    double bias_fwd = 0, bias_bwd = x->linear_bias ? up : 0;
    if ((x->qkv_bias || x->linear_bias) && !mc->bias_epilogue) {
        bias_fwd = mc->bias_add ? 2 * qkv : 0;
        bias_bwd += qkv;
    }
    ew_kernels(pg, 2 * pg->rows_per_b * bias_fwd * mc->inv_hbm, 2 * pg->rows_per_b * bias_bwd * mc->inv_hbm);
    if (x->hidden_dropout) /* DROPOUT_FWD, DROPOUT_BWD: two a layer, on the rows the residual adds run on */
        ew_kernels(pg, pg->rows_per_b * sh * 2 * DROPOUT_FWD * h * mc->inv_hbm,
                   pg->rows_per_b * sh * 2 * DROPOUT_BWD * h * mc->inv_hbm);
    pg->attn_drop_per_b = 0;
    if (x->attn_dropout && mc->attn_unfused) { /* ATTN_DROPOUT_BYTES: the rank's heads' s x s probabilities */
        double probs = pg->rows_per_b * D(x->s) * D(x->a) / D(x->t) * ATTN_DROPOUT_BYTES * mc->inv_hbm;
        pg->attn_drop_per_b = probs;
        ew_kernels(pg, probs, probs); /* the backward moves the same bytes once */
    }
    pg->pad_per_b = 0;
    if (mc->attn_unpad) { /* ATTN_UNPAD: q, k and v gathered, the output put back; the reverse in the backward */
        pg->pad_per_b = pg->rows_per_b * (UNPAD_GATHER * (q + 2 * kv) + PAD_PUT * q) * mc->inv_hbm;
        pg->ew_grad_per_b += pg->rows_per_b * (UNPAD_SCATTER * (q + 2 * kv) + PAD_GATHER * q) * mc->inv_hbm;
    }
    pg->ew_norm_per_b = 2 * pg->rows_per_b * sh * 2 * norm * h * mc->inv_hbm;
    if (mc->ln_apex) { /* LN_APEX_FWD, _BWD: the norms' forward (re-run too) and backward (twice the forward's bytes) */
        ew_kernels(pg, (LN_APEX_FWD - 1) * pg->ew_norm_per_b, 2 * (LN_APEX_BWD - 1) * pg->ew_norm_per_b);
        pg->ew_norm_per_b *= LN_APEX_FWD; /* what a selective re-run of the norms (M4D_RC_LAYERNORM) runs */
    }
    pg->ew_act_per_b = 2 * pg->rows_per_b * acte * mc->inv_hbm;
    double dact = (mc->ew_eager || mc->act_eager) && x->gated ? EAGER_SWIGLU * D(x->f) * rt
                  : sqr                                        ? SQ_RELU_FWD * D(x->f) * rt
                                                               : (x->gated ? 3 : 2) * D(x->f) * rt;
    pg->dense_act_per_b = 2 * pg->rows_per_b * (dact - acte) * mc->inv_hbm;
    /* Cross entropy over fp32 logits: the stack's bytes per logit read and
     * written over forward and backward (12 fused, 40 eager). */
    pg->ce_per_b = mc->ce_bytes * pg->rows_per_b * D(x->Vp) * rt * mc->inv_hbm;
}

/* Userbuffers' pipelined reduce-scatter splits its GEMM into this many
 * chunks (Transformer Engine's initialize_ub() default num_splits of the
 * "pipeline" method, transformer_engine/pytorch/module/base.py@d0067d0d). */
#define UB_RS_SPLITS 4.0

/* Forward and backward (dgrad and wgrad) seconds of the four linears for M
 * rows (*mlp: the MLP's two forward), and the fp8 casts. Without
 * tp_comm_overlap each GEMM runs whole at the full rate and the backward
 * costs twice the forward. With it, each GEMM runs as Transformer Engine's
 * default userbuffers overlap runs it (initialize_ub(), module/base.py
 * @d0067d0d, methods and get_default_config()): the column-parallel
 * forwards (qkv_fprop, fc1_fprop) and the row-parallel dgrads (proj_dgrad,
 * fc2_dgrad) as "ring_exchange", t chunks of M/t rows on every SM (the
 * copy engine moves the data); the row-parallel forwards (proj_fprop,
 * fc2_fprop) as "pipeline", UB_RS_SPLITS chunks beside a reduce-scatter
 * kernel on UB_SMS SMs; the column-parallel dgrads and wgrads (qkv_, fc1_)
 * as "bulk", whole, beside a collective on UB_SMS SMs; the row-parallel
 * wgrads ("external") whole on every SM. */
/* NANOTRON_TP_SLICES: nanotron's tensor-parallel linears with
 * tp_linear_async_communication in REDUCE_SCATTER mode, its benchmarks'
 * setting (scripts/scaling_benchmarks.py; src/nanotron/parallel/
 * tensor_parallel/functional.py at huggingface/nanotron@67c5ebb6 and
 * c2528430), run two GEMMs of a layer as slices of their M rows, one
 * torch.mm per slice into a view of one output: a column-parallel forward
 * (_ColumnLinearAsyncCommunication: its own rank's M/t rows while the
 * all-gather runs, then the rows of the ranks before it and those after it)
 * and a row-parallel input gradient (_RowLinearAsyncCommunication.backward,
 * the same three slices around the gradient's all-gather). Rank r's slices
 * are r M/t, M/t and (t - 1 - r) M/t rows, each with its own partial last
 * wave; the TP collectives wait for the slowest rank. Every other GEMM of
 * the layer runs whole. */
static double rank_slices_time(const struct m4d_machine *mc, const struct m4d_gemm *g, double M, double t)
{
    double m = M / t, worst = 0;
    for (double r = 0; r < t; r++) {
        double s = gemm_time(mc, g, m);
        if (r > 0)
            s += gemm_time(mc, g, r * m);
        if (r < t - 1)
            s += gemm_time(mc, g, (t - 1 - r) * m);
        worst = MAX(worst, s);
    }
    return worst;
}

static double linears_time(const struct m4d_perf_group *pg, const struct m4d_gemm *mg, const struct m4d_gemm *mu,
                           double M, double *bwd, double *mlp)
{
    const struct m4d_machine *mc = &pg->mc;
    const struct m4d_gemm *g = pg->lin, *u = pg->lin_ub; /* the MLP's: mg, mu (up, down) */
    if (M4D_UNLIKELY(pg->row_slices > 1)) { /* NANOTRON_TP_SLICES */
        double t = pg->row_slices, col = gemm_time(mc, &g[0], M), up = gemm_time(mc, &mg[0], M);
        double row = gemm_time(mc, &g[1], M), down = gemm_time(mc, &mg[1], M);
        double attn = rank_slices_time(mc, &g[0], M, t) + row;
        *mlp = rank_slices_time(mc, &mg[0], M, t) + down;
        /* column dgrad and wgrad whole; row dgrad sliced, wgrad whole */
        *bwd = 2 * (col + up) + rank_slices_time(mc, &g[1], M, t) + rank_slices_time(mc, &mg[1], M, t) + row + down;
        return attn + *mlp;
    }
    if (pg->chunks <= 1) {
        double attn = gemm_time(mc, &g[0], M) + gemm_time(mc, &g[1], M);
        *mlp = gemm_time(mc, &mg[0], M) + gemm_time(mc, &mg[1], M);
        *bwd = 2 * (attn + *mlp);
        return attn + *mlp;
    }
    double t = pg->chunks, mr = ceil_q(M / t), mp = ceil_q(M * (1 / UB_RS_SPLITS));
    double col = t * (gemm_time(mc, &g[0], mr) + gemm_time(mc, &mg[0], mr));
    double row = UB_RS_SPLITS * (gemm_time(mc, &u[1], mp) + gemm_time(mc, &mu[1], mp));
    *mlp = t * gemm_time(mc, &mg[0], mr) + UB_RS_SPLITS * gemm_time(mc, &mu[1], mp);
    *bwd = 2 * (gemm_time(mc, &u[0], M) + gemm_time(mc, &mu[0], M)) +
           t * (gemm_time(mc, &g[1], mr) + gemm_time(mc, &mg[1], mr)) + gemm_time(mc, &g[1], M) +
           gemm_time(mc, &mg[1], M);
    return col + row;
}

/* SLIDING_WINDOW: a local layer's causal window of w keys (query i reads
 * min(i + 1, w) keys: w·s - w(w - 1)/2 pairs for s >= w) against the s²/2
 * a full causal kernel is charged, at most 1; fused kernels skip the key
 * blocks outside the window as they skip those above the diagonal
 * (FlashAttention-2's window_size: "Query at position i will only attend to
 * keys between [i - window_size[0], i + window_size[1]]", README.md, and its
 * forward starts at n_block_min, csrc/flash_attn/src/flash_fwd_kernel.h,
 * Dao-AILab/flash-attention@0251105a; cuDNN's and FA3's alike). The mean over
 * the model's layers, global layers 1: the layers' mean keys per query over
 * the full kernel's; a pipeline stage's global layers beyond the model's
 * share add what a global layer's attention takes beyond a local one's
 * (win_delta, stage_layers, pipeline_of). Not with cp > 1 (the ring's
 * chunks) nor beside a layer pattern (its attention layers' places): timed
 * full, m4d_window_timing(). */
enum m4d_window m4d_window_timing(const struct m4d_ctx *x)
{
    uint64_t span = x->window ? x->window : x->chunk;
    if (!span || span >= x->s)
        return M4D_WINDOW_NONE;
    if (x->c > 1 || x->nlt || (x->chunk && x->fw != MEM4D_FRAMEWORK_TORCHTITAN))
        return M4D_WINDOW_TIMED_FULL;
    return M4D_WINDOW_TIMED;
}

/* CHUNKED_ATTN: a local layer of chunk c (Llama 4's attention_chunk_size:
 * query q reads key k <= q where k // c == q // c, transformers'
 * chunked_overlay on its causal mask, masking_utils.py) computes the causal
 * triangle of each chunk: with s = n·c + r, n·c(c + 1)/2 + r(r + 1)/2 pairs
 * against the s²/2 a full causal kernel is charged (the window's count,
 * diagonal included). The kernels that skip the rest: FlexAttention's block
 * mask skips the key blocks no query of a block reads, as torchtitan's
 * Llama 4 runs it (attn_type "flex": get_fixed_block_mask_mod and'ed with
 * the causal mask, torchtitan/models/llama4/model/model.py and
 * models/attention.py, pytorch/torchtitan@0dd6f3b6; its sdpa path ignores
 * the chunk). FlashAttention-2 has no chunk argument; FlashAttention-3's
 * attention_chunk is forward only ("FA3 backward does not support
 * attention_chunk", hopper/flash_attn_interface.py,
 * Dao-AILab/flash-attention@0251105a); Megatron-Core has no chunked
 * attention (its one attention_chunk is inference's 0, core/transformer/
 * attention.py, NVIDIA/Megatron-LM@d98e8a64). So a chunk is timed under
 * framework torchtitan, at the job's kernel's rate (FlexAttention's own is
 * not modelled), and full elsewhere, as with cp > 1, which torchtitan's
 * FlexAttention does not take (args.py: "Context Parallel only supports
 * SDPA attention"), and beside a layer pattern: m4d_window_timing(). */
static double window_local(const struct m4d_ctx *x)
{
    if (m4d_window_timing(x) != M4D_WINDOW_TIMED || !x->L)
        return 1;
    double s = D(x->s), f;
    if (x->chunk) {
        double c = D(x->chunk), n = D(x->s / x->chunk), r = D(x->s % x->chunk);
        f = (n * c * (c + 1) + r * (r + 1)) / (s * s);
    } else {
        double w = D(x->window);
        f = (2 * w * s - w * (w - 1)) / (s * s);
    }
    return f < 1 ? f : 1;
}

static double window_share(const struct m4d_ctx *x, double local)
{
    return local < 1 ? 1 - D(m4d_local_layers_in(x, 0, x->L)) / D(x->L) * (1 - local) : 1;
}

/* Flash attention of one layer. Causal kernels skip the masked half of
 * s x s; CP's load-balanced chunks give every rank 1/c of the work; each
 * query tile pays ATTN_FILL keys on top of the mean s/(2c) it reads (a
 * sliding window's layers fewer: window_share). Softmax attention computes
 * and masks the whole square whatever the window. */
static void attention_prepare(const struct m4d_ctx *x, struct m4d_perf_group *pg)
{
    pg->attn_pv_per_b = pg->attn_qk_tiles_per_b = pg->attn_bytes_fwd_per_b = pg->attn_bytes_bwd_per_b = 0;
    pg->attn_torch_fwd_per_b = pg->attn_torch_bwd_per_b = 0;
    pg->attn_softmax_s = pg->attn_softmax_np = 0;
    pg->win_delta = 0;
    if (pg->mc.attn_unfused) { /* UNFUSED_ATTN: per sample, the rank's heads, q queries over k keys */
        double heads = D(x->a) / D(x->t), q = D(x->s) / D(x->c), k = D(x->s), dh = D(x->dh), r = pg->mc.gemm;
        double scores = heads * q * k, gemm_bytes = 2 * scores + heads * 2 * dh * (q + k);
        pg->attn_per_b = 2 * scores * (dh + K_FILL) / r;
        pg->attn_qk_tiles_per_b = heads * ceil_q(q * (1.0 / TILE_M)) * ceil_q(k * (1.0 / TILE_N));
        pg->attn_pv_per_b = heads * q * 2 * dh * (k + K_FILL) / r;
        pg->attn_tiles_per_b = heads * ceil_q(q * (1.0 / TILE_M)) * ceil_q(dh * (1.0 / TILE_N));
        pg->attn_flops_per_b = 2 * scores * 2 * dh; /* QK^T and P V over the whole square */
        pg->attn_bytes_fwd_per_b =
            (2 * gemm_bytes + (UNFUSED_SOFTMAX_FWD + (x->alibi ? UNFUSED_ALIBI : 0)) * scores) * pg->mc.inv_hbm;
        pg->attn_bytes_bwd_per_b = (4 * gemm_bytes + UNFUSED_SOFTMAX_BWD * scores) * pg->mc.inv_hbm;
        if (pg->mc.softmax.keys) { /* FUSED_SOFTMAX: PyTorch's softmax where the fused one declines */
            pg->attn_torch_fwd_per_b = (SOFTMAX_TORCH_FWD - UNFUSED_SOFTMAX_FWD) * scores * pg->mc.inv_hbm;
            pg->attn_torch_bwd_per_b = (SOFTMAX_TORCH_BWD - UNFUSED_SOFTMAX_BWD) * scores * pg->mc.inv_hbm;
            pg->attn_softmax_s = x->s;
            pg->attn_softmax_np = x->a / x->t;
        }
        return;
    }
    double local = window_local(x), share = window_share(x, local);
    double w = pg->mc.attn_work, qd = D(x->a * x->dh), sc = D(x->s) / D(x->c), kv = 0.5 * w * sc * share;
    /* a global layer's attention beyond a local one's, over the mean layer's
     * (the charge is flops (kv + ATTN_FILL) / kv: affine in the keys) */
    if (local < 1)
        pg->win_delta = 0.5 * w * sc * (1 - local) / (kv + ATTN_FILL);
    double flops = 0.5 * w * 4 * D(x->s) * D(x->s) * qd / D(x->t * x->c) * share;
    pg->attn_flops_per_b = flops;
    /* ATTN_DROPOUT (a flash kernel's; unfused attention returned above and
     * pays ATTN_DROPOUT_BYTES in gemms_prepare) */
    pg->attn_per_b = flops * (kv + ATTN_FILL) / (pg->mc.gemm * kv) * (x->attn_dropout ? 1 + ATTN_DROPOUT : 1);
    if (x->dh <= 64) /* TRITON_FA_DH64 */
        pg->attn_per_b /= pg->mc.attn_dh64;
    pg->attn_tiles_per_b = D(x->a) / D(x->t) * ceil_q(sc * (1.0 / ATTN_TILE));
}

/* The fastest rate a kernel is charged at over its peak: the large GEMMs'
 * (gemm_lin, of the peak of the precision they run in) and a fused
 * attention kernel's executed FLOPs over its time (attention_prepare's
 * forward at full waves, its backward ATTN_BWD_WORK of them) against the
 * bf16 peak. Above 1 the device's efficiencies run a kernel past the GPU's
 * peak (m4d_perf_warn). Softmax attention's own GEMMs run at the GEMM rate
 * or below. */
static double kernel_share(const mem4d_device *dev, const struct m4d_perf_group *pg)
{
    double k = pg->mc.gemm_lin / pg->peak;
    if (!pg->mc.attn_unfused && pg->attn_per_b > 0) {
        double a = pg->attn_flops_per_b * MAX(pg->mc.attn_fwd, pg->mc.attn_bwd) /
                   (pg->attn_per_b * D(dev->v[MEM4D_DEVICE_PEAK_FLOPS]));
        k = MAX(k, a);
    }
    return k;
}

static void attention_time(const struct m4d_perf_group *pg, double b, double *fwd, double *bwd)
{
    if (pg->attn_qk_tiles_per_b > 0) { /* UNFUSED_ATTN: QK^T and P V; dO V^T, dV, dQ, dK */
        double t1 = b * pg->attn_qk_tiles_per_b, t2 = b * pg->attn_tiles_per_b;
        double qk = b * pg->attn_per_b * wave_slots(&pg->mc, t1) / t1;
        double pv = b * pg->attn_pv_per_b * wave_slots(&pg->mc, t2) / t2;
        double bf = pg->attn_bytes_fwd_per_b, bb = pg->attn_bytes_bwd_per_b;
        if (pg->attn_torch_fwd_per_b > 0 && /* FUSED_SOFTMAX: does the fused kernel take b * a/t batches? */
            m4d_softmax_falls_back(pg->mc.softmax, pg->attn_softmax_s, pg->attn_softmax_np, (uint64_t)b))
            bf += pg->attn_torch_fwd_per_b, bb += pg->attn_torch_bwd_per_b;
        *fwd = (qk + pv + b * bf) / pg->mc.attn_fwd;
        *bwd = (qk + 3 * pv + b * bb) / pg->mc.attn_bwd;
        return;
    }
    double tiles = b * pg->attn_tiles_per_b;
    double cost = b * pg->attn_per_b * wave_slots(&pg->mc, tiles) / tiles;
    *fwd = cost / pg->mc.attn_fwd;
    *bwd = cost * ATTN_BWD_WORK / pg->mc.attn_bwd;
}

/* A ring over n ranks moving `frac` of `per_b` bytes per sample in `steps`
 * latency-bound steps: its latency and its transfer seconds per sample; a
 * link without bandwidth is not modelled (both 0). */
static void ring_coef(const struct m4d_link *l, double n, double per_b, double frac, double steps, double *lat,
                      double *xfer)
{
    *lat = *xfer = 0;
    if (n > 1 && l->bw > 0) {
        *lat = steps * l->lat;
        *xfer = frac * per_b / l->bw;
    }
}

/* Collectives whose bytes grow with the micro-batch: TP (b s h 2 / c per
 * collective), the CP ring step (K and V of the local chunk) and the
 * pipeline send/recv (one activation, forward and backward, per model
 * chunk); the MoE dispatch and combine are lib/perf_moe.c's. */
static void comm_prepare(const struct m4d_ctx *x, struct m4d_perf_group *pg)
{
    const struct m4d_machine *mc = &pg->mc;
    double t = D(x->t), c = D(x->c), s = D(x->s), h = D(x->h);
    struct m4d_link tl = link_for(mc, t, 1), cl = link_for(mc, t * c, t);
    ring_coef(&tl, t, s * h * 2 / c, (t - 1) / t, t - 1, &pg->tp_lat, &pg->tp_per_b);
    /* TP_FP8_GATHER: under fp8, Megatron-Core's TE layers gather fp8, 1
     * byte an element: the norm's fp8 output before QKV and fc1 in the
     * forward and again for the wgrad (layernorm_linear.py@v1.9: ln_out
     * uint8, gather_along_first_dim(ln_out); with userbuffers its fp8
     * buffer), the row-parallel linears' output gradient cast on its own
     * rows, then gathered (base.py grad_output_preprocess: cast_to_fp8, then
     * gather_along_first_dim or the ub fp8 buffer); TE 2.2 gathers the
     * quantized tensor alike (gather_along_first_dim(..., quantizer=)).
     * The reduce-scatters carry the bf16 GEMM outputs. */
    pg->tp_ag_share = x->fp8 && mc->te_norm_fp8 ? 0.5 : 1;
    pg->cp_lat = cl.lat;
    pg->cp_per_b = cl.bw > 0 ? 2 * s / c * D(x->k * x->dh) / t * 2 / cl.bw : 0;
    pg->p2p_lat = pg->p2p_per_b = 0;
    for (int i = 0; i < 3; i++)
        pg->p2p_n[i] = pg->p2p_ag[i] = 0;
    if (x->p > 1) {
        double chunks = 2 * D(x->v ? x->v : 1);
        struct pipe_span pn = pipe_neighbours(x);
        struct m4d_link pl = link_for(mc, pn.span, pn.stride);
        /* P2P_SHAPE: the sequence-parallel slice, else the whole activation
         * on every TP rank (Megatron-Core's get_tensor_shapes and the
         * interleaved tensor_shape: s/c rows, divided by t only under
         * sequence parallelism); Megatron-LM of 2022 (megatron/
         * p2p_communication.py, scatter_gather_tensors_in_pipeline, on by
         * default, "and not args.sequence_parallel") sends 1/t of it
         * (split_tensor_into_1d_equal_chunks) and all-gathers every received
         * tensor over the TP group after the exchange (gather_split_1d_tensor):
         * 2v - 1 on an end stage, 2v on a middle one; DeepSpeed's engine
         * partitions it (DS_PIPE). */
        bool whole = x->t > 1 && !x->sp && !mc->ds_pipe, split = whole && mc->p2p_split;
        double rows = whole && !split ? 1 : t;
        ring_coef(&pl, 2, s * h * 2 / (rows * c), 1, 1, &pg->p2p_lat, &pg->p2p_per_b);
        pg->p2p_n[0] = pg->p2p_n[1] = pg->p2p_n[2] = chunks;
        /* P2P_ENDS: Megatron's 1F1B (vpp 1) exchanges once after a forward
         * (send_forward_recv_backward: the activation out, the gradient in,
         * one peer, both directions at once) and once after a backward
         * (send_backward_recv_forward); the last stage has no activation to
         * send and the first none to receive, so each end exchanges once a
         * micro-batch (p2p_communication.py returns without communicating,
         * Megatron-LM 2022 and Megatron-Core alike). Interleaved, the end
         * ranks trade with both neighbours (the chunks wrap round). */
        if (chunks == 2 && x->fw == MEM4D_FRAMEWORK_MEGATRON && !mc->ds_pipe && !mc->nanotron_model)
            pg->p2p_n[0] = pg->p2p_n[2] = 1;
        if (split) {
            pg->p2p_ag[0] = pg->p2p_ag[2] = chunks - 1;
            pg->p2p_ag[1] = chunks;
        }
        if (mc->ds_pipe) { /* DS_PIPE: each end trades with one neighbour, a middle stage with two */
            pg->p2p_lat *= 2; /* the partition's meta tensor, then its data */
            pg->p2p_n[0] = pg->p2p_n[2] = 2;
            pg->p2p_n[1] = x->p > 2 ? 4 : 2;
            if (x->t > 1) { /* the all-gathers of the partitioned activations and gradients */
                pg->p2p_ag[0] = 2;
                pg->p2p_ag[1] = 3;
                pg->p2p_ag[2] = 1;
            }
        }
    }
}

/* One TP all-gather of b samples (TP_FP8_GATHER: tp_ag_share of the bytes). */
static inline double tp_allgather(const struct m4d_perf_group *pg, double b)
{
    return pg->tp_lat + b * pg->tp_per_b * pg->tp_ag_share;
}

/* TP collectives of one layer (SP: all-gather before the column-parallel
 * linears, reduce-scatter after the row-parallel ones; all-reduces without
 * SP move the same bytes). Forward: 4 exposed. Backward: the 2 gathers of
 * the output gradient are exposed; the input re-gathers and the gradient
 * reduce-scatters run asynchronously under the dgrad and wgrad GEMMs.
 * With tp_comm_overlap every collective is split into t chunks under its
 * GEMM: only the first chunk and what the GEMM cannot cover is exposed.
 * A collective hides under the GEMM it feeds or is fed by, not under the
 * layer's mean GEMM: half of them under the attention block's (QKV, the
 * output projection: ga, their mean), half under the MLP's (gm), so a
 * collective longer than the small attention GEMMs shows even when the
 * MLP's would cover it. */
/* TP_BESIDE: what a backward TP collective of `coll` seconds costs the
 * layer when Megatron's asynchronous path runs it beside a weight-gradient
 * GEMM of `window` seconds (the input's re-gather, the input gradient's
 * reduce-scatter or all-reduce, launched before the GEMM): the part that
 * outlasts the GEMM, and the compute the collective's kernel takes from
 * the GEMM beside it, as FSDP's hidden collectives pay it (unit_time_of:
 * on Hopper's persistent GEMMs max(T - W, l T), PERSISTENT_WAVES; on
 * Ampere AMPERE_BESIDE; elsewhere its SMs, nccl_cost). NCCL's collectives
 * take "extra GPU cycles for communication" (arXiv 2407.21783, sec. 3.3.3,
 * of NCCL's all-gather, reduce-scatter and point-to-point); userbuffers'
 * GEMMs (tp_comm_overlap) pay their UB_SMS instead (lin_ub). */
static inline double tp_beside(const struct m4d_perf_group *pg, double coll, double window)
{
    double x = MAX0(coll - window);
    if (pg->mc.persistent || pg->mc.ampere_beside)
        return MAX(x, pg->tp_lost * coll);
    return x + (coll - x) * pg->tp_lost; /* nccl_cost */
}

/* torchtitan's per-op policy (op_sac_time): recompute "op", as its TOML's
 * selective_ac_option "op" reads, or "selective" on a stack whose selective
 * recompute is that policy (op_sac). */
static inline bool op_policy(const struct m4d_ctx *x, const struct m4d_perf_group *pg)
{
    return x->recompute == 3 || (x->recompute == 1 && pg->mc.op_sac);
}

static double tp_time(const struct m4d_ctx *x, const struct m4d_perf_group *pg, double b, double ga, double gm,
                      double passes_fwd)
{
    if (pg->tp_lat == 0 && pg->tp_per_b == 0)
        return 0;
    double t = D(x->t), one = pg->tp_lat + b * pg->tp_per_b;
    /* torchtitan's op policy saves the reduce-scatters' outputs, not the
     * all-gathers': its recompute gathers the two inputs again (DTENSOR_TP) */
    double regather = pg->mc.dtensor_tp && op_policy(x, pg) ? 2 : 0;
    if (M4D_UNLIKELY(x->tp_overlap)) {
        double rest = one * (t - 1) / t, chunked = one / t + 0.5 * (MAX0(rest - ga) + MAX0(rest - gm));
        if (pg->mc.dtensor_tp) /* DTENSOR_TP's async TP: the backward's two reduce-scatters stay whole */
            return (4 * passes_fwd + 2 + regather) * chunked + 2 * one;
        /* forward 2 gathers and 2 reduce-scatters; backward 2 gathers of
         * the output gradient, 2 of the inputs, 2 reduce-scatters */
        double ag = tp_allgather(pg, b), rest_ag = ag * (t - 1) / t, chunked_ag = ag / t + 0.5 * (MAX0(rest_ag - ga) + MAX0(rest_ag - gm));
        return (2 * passes_fwd + 4) * chunked_ag + (2 * passes_fwd + 2) * chunked;
    }
    if (M4D_UNLIKELY(pg->mc.dtensor_tp)) /* DTENSOR_TP: the backward's 2 gathers and 2 reduce-scatters, all exposed */
        return 4 * passes_fwd * one + (4 + regather) * one;
    if (pg->mc.tp_sync) /* TP_SYNC: the backward's 2 all-reduces (4 one-way collectives' bytes), all exposed */
        return 4 * passes_fwd * one + 4 * one;
    /* TP_ASYNC_AR: without SP the backward gathers nothing; each block's one
     * all-reduce (of its column-parallel input gradient) runs under the
     * weight-gradient GEMM launched after it (Megatron-LM's
     * ColumnParallelLinearWithAsyncAllreduce, NVIDIA/Megatron-LM@02bb1f5c
     * megatron/mpu/layers.py) */
    if (!x->sp)
        return 4 * passes_fwd * one + tp_beside(pg, 2 * one, ga) + tp_beside(pg, 2 * one, gm);
    if (M4D_LIKELY(pg->tp_ag_whole)) { /* ag == one: the same sum, each term formed once */
        double xa = tp_beside(pg, one, ga), xm = tp_beside(pg, one, gm);
        return 2 * passes_fwd * (one + one) + 2 * one + xa + xa + xm + xm;
    }
    double ag = tp_allgather(pg, b);
    return 2 * passes_fwd * (ag + one) + 2 * ag + tp_beside(pg, ag, ga) + tp_beside(pg, one, ga) + tp_beside(pg, ag, gm) +
           tp_beside(pg, one, gm);
}

/* CP ring attention: c-1 steps of K,V per forward, K,V and dK,dV per
 * backward, each step under the attention of the chunk it brings; each
 * step's latency is a synchronisation and never hides. CP_ALL_GATHER
 * (cp_comm_type all_gather): Llama 3's context parallelism "first
 * all-gather[s] the key (K) and value (V) tensors, and then compute[s]
 * attention output for the local query (Q) tensor chunk ... the all-gather
 * communication latency is exposed in the critical path" (arXiv 2407.21783,
 * sec. 3.3.2); Transformer Engine's implementation of it
 * (AttnFuncWithCPAndKVAllGather, "KV all-gather between CP ranks is
 * exposed. Refer section 3.3.2 of The Llama 3 Herd of Models",
 * transformer_engine/pytorch/attention/dot_product_attention/
 * context_parallel.py at NVIDIA/TransformerEngine@d0067d0d) gathers K and V
 * (two ring all-gathers of c - 1 steps, each rank's chunk of K and V once
 * over the link in all) on the compute stream before the forward's
 * attention, gathers them again before the backward's, and reduce-scatters
 * dK and dV after it: nothing under the attention. */
static double cp_time(const struct m4d_ctx *x, const struct m4d_perf_group *pg, double b, double attn_f,
                      double attn_b, double passes_fwd)
{
    if (x->c <= 1)
        return 0;
    double c = D(x->c), xfer = b * pg->cp_per_b, k = pg->mc.kernel;
    if (x->cp_all_gather) {
        double gather = 2 * ((c - 1) * pg->cp_lat + k) + (c - 1) * xfer; /* K's and V's */
        return passes_fwd * gather + 2 * gather;                          /* backward: gathers, reduce-scatters */
    }
    double sf = attn_f / c, sb = attn_b / c; /* one step's attention */
    double fwd = (c - 1) * (pg->cp_lat + MAX0(xfer - sf) + k);
    double bwd = (c - 1) * (pg->cp_lat + MAX0(2 * xfer - sb) + 2 * k);
    return passes_fwd * fwd + bwd;
}

/* Selective recompute runs the forward of the modules it keeps no
 * activations of again (Megatron's --recompute-modules; core_attn alone by
 * default): the attention core, the MLP's linears (mlp, moe,
 * shared_experts), the norms, the MLP activation. Softmax attention's core
 * holds its dropout (Megatron's CoreAttention applies attention_dropout to
 * the probabilities inside the checkpointed core_attention; Korthikanti et
 * al. 2022, section 5: "QK^T matrix multiply, softmax, softmax dropout, and
 * attention over V"), so the re-run moves its forward bytes again. */
/* The selective re-runs whose time selective_time counts as GEMMs and
 * attention (the attention core, an MLP's linears), not element-wise work. */
#define RC_CLOCKED (M4D_RC_CORE_ATTN | M4D_RC_MLP | M4D_RC_MOE | M4D_RC_SHARED_EXPERTS)
static double selective_time(uint64_t m, const struct m4d_perf_group *pg, double b, double attn, double mlp)
{
    double t = 0;
    if (m & M4D_RC_CORE_ATTN)
        t += attn;
    if (m & (M4D_RC_MLP | M4D_RC_MOE | M4D_RC_SHARED_EXPERTS))
        t += mlp;
    if (m & M4D_RC_LAYERNORM)
        t += b * pg->ew_norm_per_b;
    if (m & M4D_RC_MOE_ACT)
        t += b * pg->ew_act_per_b;
    return t;
}

/* torchtitan's selective recompute ("op" policy, torchtitan/models/llama3/
 * infra/parallelize.py, _custom_policy: "Saves output of all compute ops,
 * except every second mm"): the attention kernel's output is kept and the
 * backward re-runs the 2nd, 4th and 6th matmul of the block's forward, in
 * the order wq wk wv wo, w1 w3 w2 (gated) or w1 w2, and its element-wise
 * work (norms, RoPE, activation), which the policy never saves. */
static double op_sac_time(const struct m4d_ctx *x, const struct m4d_perf_group *pg, double M, double ew)
{
    const struct m4d_machine *mc = &pg->mc;
    double m = pg->chunks > 1 ? ceil_q(M / pg->chunks) : M;
    double q = D(x->a * x->dh), kv = D(x->k * x->dh);
    double mm = gemm_time(mc, &pg->lin[0], m) * kv / (q + 2 * kv) + gemm_time(mc, &pg->lin[1], m) +
                (x->gated ? 0.5 * gemm_time(mc, &pg->lin[2], m) : gemm_time(mc, &pg->lin[3], m));
    return pg->chunks * mm + ew;
}

static void perf_b_of(const struct m4d_perf_group *pg, double b, struct m4d_perf_b *t)
{
    double M = b * pg->rows_per_b;
    t->b = b;
    t->lin = linears_time(pg, pg->lin + 2, pg->lin_ub + 2, M, &t->lin_bwd, &t->mlp);
    t->cast = pg->cast_a * M;
    t->dense_lin = t->dense_lin_bwd = t->dense_mlp = 0;
    if (M4D_UNLIKELY(pg->dense_mlp[0].tn > 0))
        t->dense_lin = linears_time(pg, pg->dense_mlp, pg->dense_mlp_ub, M, &t->dense_lin_bwd, &t->dense_mlp);
    attention_time(pg, b, &t->attn_fwd, &t->attn_bwd);
    t->head = gemm_time(&pg->mc, &pg->head, M);
}

/* Extra compute seconds per second of a NCCL ring collective hidden
 * behind compute, for a group of `span` consecutive ranks whose members
 * are `stride` apart (link_for): the compute runs on the SMs its CTAs, one
 * per channel, leave it, sms / (sms - channels) as long. Inside an NVLink
 * domain, NCCL_SMS. Across domains NCCL's ring search (NVIDIA/nccl
 * v2.25.1 src/graph/search.cc, ncclTopoCompute) finds one channel per NIC
 * its g members in the node reach, one per GPU on a DGX, at up to 48 GB/s;
 * ncclTopoDupChannels doubles them where that is at least 25 GB/s and
 * there are at most 4 (nccl_dup), and src/graph/connect.cc
 * (ncclTopoPostset) doubles every ring's channels again: 2g or 4g CTAs,
 * 16 for a DGX's 8 members per node, 4 for one member per node on 400 Gb/s
 * NICs (Megatron-FSDP's expert shards over nodes). */
static double nccl_slow_of(const struct m4d_machine *mc, double span, double stride)
{
    double s = NCCL_SMS;
    if (span > mc->domain) {
        double g = domain_members(mc, stride);
        s = 2 * g * (g <= 4 ? mc->nccl_dup : 1);
    }
    return mc->sms > s ? s / (mc->sms - s) : 0;
}

/* What `hidden` seconds of NCCL collectives behind compute cost that
 * compute at `slow` extra seconds per second (nccl_slow_of). */
static inline double nccl_cost(double hidden, double slow)
{
    return hidden > 0 ? hidden * slow : 0;
}

static struct unit_time unit_time_of(const struct m4d_ctx *x, const struct m4d_perf_group *pg,
                                     const struct m4d_perf_b *bt)
{
    /* Full recompute runs the forward, and its collectives, once more. */
    double pf = x->recompute == 2 ? 2 : 1, b = D(x->b), M = b * pg->rows_per_b, kern = pg->mc.kernel;
    double cast = bt->cast, mlp = bt->mlp, lin = bt->lin, af = bt->attn_fwd, ab = bt->attn_bwd;
    double ew = b * pg->ew_per_b, cpf = b * pg->cp_fwd_per_b, cpb = b * pg->cp_bwd_per_b; /* TE_CP_RING */
    cast += pg->cast_b / D(x->m); /* the fp8 weight casts, once per step (gemms_prepare) */
    double fwd, bwd;
    if (M4D_UNLIKELY(pg->attn_copies)) {
        /* NANOTRON_MODEL: its attention's copies, forward and backward (b > 1: o_proj's input, each way); ATTN_UNPAD's */
        double copy = b * pg->copy_per_b, copy_mb = b > 1 ? b * pg->copy_mb_per_b : 0;
        fwd = lin + af + cpf + ew + b * pg->pad_per_b + copy + copy_mb + KERNELS_FWD * kern;
        bwd = bt->lin_bwd + ab + cpb + 2 * ew + b * pg->ew_grad_per_b + copy_mb + 2 * KERNELS_FWD * kern;
    } else { /* the same sums without their zero terms */
        fwd = lin + af + cpf + ew + KERNELS_FWD * kern;
        bwd = bt->lin_bwd + ab + cpb + 2 * ew + b * pg->ew_grad_per_b + 2 * KERNELS_FWD * kern;
    }
    double rc_clocked = 0; /* of the re-run, its GEMMs and attention (POWER_BALANCE) */
    double rc_attn = pf;   /* attention forwards the layer runs a micro-batch */
    if (M4D_UNLIKELY(op_policy(x, pg) && x->experts == 0 && !x->nlt)) {
        rc_clocked = op_sac_time(x, pg, M, 0);
        bwd += rc_clocked + ew;
    } else if (x->recompute == 1) { /* selective: the modules re-run in the backward; the core its dropout too */
        bwd += selective_time(x->rc_modules, pg, b, af + cpf + b * pg->attn_drop_per_b, mlp);
        rc_clocked = selective_time(x->rc_modules & RC_CLOCKED, pg, b, af, mlp);
        rc_attn += (x->rc_modules & M4D_RC_CORE_ATTN) ? 1 : 0;
    }
    struct unit_time u = {0};
    u.global = (rc_attn * af + ab) * pg->win_delta;
    struct m4d_moe_time mt = {0};
    double ecast = 0; /* the experts' fp8 casts, per micro-batch and once per step */
    if (M4D_UNLIKELY(pg->moe.on)) { /* the routed experts (lib/perf_moe.c) */
        m4d_moe_time(&pg->mc, &pg->moe, b, &mt);
        double rc_e = 0, rc_r = 0;
        if (x->recompute == 1 && (x->rc_modules & M4D_RC_MOE))
            rc_e = mt.expert_fwd, rc_r = mt.router_fwd;
        else if (x->recompute == 1 && (x->rc_modules & M4D_RC_MOE_ACT))
            rc_e = mt.act;
        ecast = mt.cast + pg->moe.cast_w / D(x->m);
        u.layer_expert = pf * mt.expert_fwd + mt.expert_bwd + rc_e + ecast;
        u.layer_router = pf * mt.router_fwd + mt.router_bwd + rc_r;
        fwd += mt.expert_fwd + mt.router_fwd;
        bwd += mt.expert_bwd + mt.router_bwd + rc_e + rc_r;
    }
    struct m4d_hybrid_out ho = {0, 0, 1, 1};
    if (M4D_UNLIKELY(x->nlt)) { /* a layer pattern: the mean of its layers, one module each (lib/perf_hybrid.c) */
        struct m4d_hybrid_in hi = {&pg->mc, M, af, ab, mt.expert_fwd + mt.router_fwd, mt.expert_bwd + mt.router_bwd};
        m4d_hybrid_mean(x, &hi, &ho);
        fwd = ho.fwd;
        bwd = ho.bwd + (x->recompute == 1 && (x->rc_modules & M4D_RC_CORE_ATTN) ? ho.attn_share * af : 0);
        cast *= 0.5;
        u.layer_expert *= ho.moe_share;
        u.layer_router *= ho.moe_share;
    }
    u.layer_fwd = fwd;
    u.layer_bwd = bwd;
    u.gemm = pf * fwd + bwd > 0 ? (pf * lin + bt->lin_bwd) / (pf * fwd + bwd) : 0;
    /* Gradient accumulation outside the GEMMs: every micro-batch's weight
     * gradients added into the accumulated ones (stack_of's bytes). */
    u.layer_compute = pf * fwd + bwd + cast + ecast * ho.moe_share + pg->accum_layer;
    u.layer_clocked = pf * (lin + af) + bt->lin_bwd + ab + rc_clocked;
    if (M4D_UNLIKELY(pg->moe.on || x->nlt)) { /* the expert GEMMs; a layer pattern's mean (m4d_hybrid_mean) */
        u.layer_clocked += (pf * mt.expert_fwd + mt.expert_bwd - 3 * mt.act) * ho.moe_share;
        if (u.layer_clocked > u.layer_compute)
            u.layer_clocked = u.layer_compute;
    }
    u.layer_tp = tp_time(x, pg, b, (lin - mlp) / 2, mlp / 2, pf) * (x->nlt ? 0.5 : 1); /* a pattern's layer: one module's two */
    u.layer_cp = cp_time(x, pg, b, af, ab, pf) * ho.attn_share;
    if (M4D_UNLIKELY(pg->host_fwd > 0)) { /* EAGER_HOST: the GPU waiting for the host's launches */
        double half = 0.5 * (u.layer_tp + u.layer_cp), rerun = pf - 1;
        u.layer_host = MAX0(pg->host_fwd - fwd - half) +
                       MAX0(pg->host_bwd + rerun * pg->host_fwd - bwd - rerun * fwd - pg->accum_layer - half);
        u.layer_compute += u.layer_host;
    }
    if (M4D_UNLIKELY(pg->moe.on)) { /* an expert layer's TP collectives, its dispatch and combine */
        u.layer_tp *= pg->moe.tp_share;
        /* the GEMMs' share of the layer's compute, which the overlapped
         * dispatch and combine run beside */
        double egemm = mt.expert_fwd + mt.expert_bwd - 3 * mt.act, work = u.layer_fwd + u.layer_bwd;
        double gshare = work > 0 ? (lin + bt->lin_bwd + egemm) / work : 0;
        double lost = beside_cost(&pg->mc, gshare, 1 / pg->moe.sm_keep - 1);
        u.layer_ep = m4d_moe_exposed(x, &mt, u.layer_fwd, u.layer_bwd, mlp, pf, lost) * ho.moe_share;
        /* the GPU waiting for the host (lib/perf_moe.c), counted with the router's launches;
         * the GPU's side is its work and every exposed collective (TP, CP's ring, EP), as in EAGER_HOST */
        double host = m4d_moe_host(x, &pg->moe, u.layer_fwd, u.layer_bwd, u.layer_ep + u.layer_tp + u.layer_cp, pf) * ho.moe_share;
        u.layer_compute += host;
        u.layer_host += host;
        u.layer_router += host;
    }
    /* ZeRO-3 / FSDP: the layer's weights are gathered before its forward
     * and again before its backward, its gradients reduce-scattered after;
     * prefetch hides them behind the neighbouring layer's compute. Under
     * full recompute Megatron's FSDP gathers a layer once for its re-run
     * forward and its backward ("When recomputing a whole Transformer
     * layer, gather parameters once for both the recomputation and backward
     * computation", custom_fsdp/fully_sharded_data_parallel.py, and
     * Megatron-FSDP's megatron_fsdp.py: the post-forward hook keeps the
     * weights in the backward), behind both. The compute they hide behind
     * runs on the SMs their kernels leave it (nccl_cost). */
    if (M4D_UNLIKELY(pg->fsdp)) {
        /* The forward's gather (n1 of them, g1 seconds each) hides behind
         * the forward; the backward's collectives (g2) behind the backward
         * and whatever forward runs in it (w2). FSDP_SHARD_GRAD_OP: one
         * gather a micro-batch, only the reduce-scatter in the backward;
         * FSDP2 with reshard_after_forward "never" (2) is that schedule
         * (torchtitan's fsdp_reshard_after_forward, NeMo AutoModel's
         * default: doc/perf.md, "Expert data parallelism"). */
        bool sgo = x->zero == 2 || (x->fw == MEM4D_FRAMEWORK_TORCHTITAN && x->reshard == 2), once = sgo || (x->recompute == 2 && x->fw == MEM4D_FRAMEWORK_MEGATRON);
        double g1 = pg->fsdp_ag, g2 = (sgo ? 0 : pg->fsdp_ag) + pg->fsdp_rs, n1 = once ? 1 : pf;
        double over2 = sgo ? g2 - bwd - (pf - 1) * fwd : once ? g2 - fwd - bwd : g2 - bwd; /* g2 beyond w2 */
        if (pg->mc.persistent || pg->mc.ampere_beside) {
            /* Hopper's CUDA 12 cuBLAS runs persistent GEMMs, one CTA per
             * SM: beside the collective's CTAs the last of them wait for a
             * second wave (PERSISTENT_WAVES), the layer's other kernels lose
             * the SMs; on Ampere every kernel runs AMPERE_BESIDE times as
             * long. A collective of T seconds beside W seconds of compute
             * leaves it T (1 - 1 / waves) of work undone, or outlasts it. */
            double lost = beside_cost(&pg->mc, u.gemm, pg->fsdp_slow);
            u.layer_fsdp = n1 * MAX(g1 - fwd, lost * g1) + MAX(over2, lost * g2);
        } else {
            u.layer_fsdp = n1 * MAX0(g1 - fwd) + MAX0(over2);
            u.layer_fsdp += nccl_cost(n1 * g1 + g2 - u.layer_fsdp, pg->fsdp_slow);
        }
    }
    if (M4D_UNLIKELY(pg->moe_dense)) {
        /* An MoE model's dense layer: the dense MLP in place of the shared
         * expert, no router, experts or dispatch, all of its TP collectives;
         * selective recompute re-runs its MLP for the mlp module. */
        double dmlp = bt->dense_mlp, dlin = bt->dense_lin, dew = ew + b * pg->dense_act_per_b;
        double dfwd = dlin + af + cpf + dew + KERNELS_FWD * kern;
        double dbwd = bt->dense_lin_bwd + ab + cpb + 2 * dew + 2 * KERNELS_FWD * kern;
        uint64_t drc = x->recompute == 1 ? x->rc_modules & ~(uint64_t)(M4D_RC_MOE | M4D_RC_SHARED_EXPERTS) : 0;
        dbwd += selective_time(drc, pg, b, af + cpf + b * pg->attn_drop_per_b, dmlp);
        u.dense_compute = pf * dfwd + dbwd + cast + pg->accum_layer;
        u.dense_clocked = pf * (dlin + af) + bt->dense_lin_bwd + ab + selective_time(drc & RC_CLOCKED, pg, b, af, dmlp);
        u.dense_tp = tp_time(x, pg, b, (dlin - dmlp) / 2, dmlp / 2, pf);
        u.dense = u.dense_compute + u.dense_tp + u.layer_cp + u.layer_fsdp;
    }
    u.head = 3 * bt->head + b * pg->ce_per_b + 6 * kern;
    u.head_clocked = 3 * bt->head;
    /* Offloading (one stage, no recompute): the transfers run beside the
     * stage's forward and backward; what they outlast stalls the compute
     * (Transformer Engine holds the layers until the copies are done). */
    if (M4D_UNLIKELY(pg->offload_per_b > 0) && pg->layers_max > 0) {
        double xfer = b * pg->offload_per_b, layers = pg->layers_max;
        u.layer_compute += (MAX0(xfer - layers * fwd) + MAX0(xfer - layers * bwd)) / layers;
    }
    return u;
}

/* SLIDING_WINDOW: the global layers of rank r beyond the model's share
 * of its n layers. */
static double global_excess(const struct m4d_ctx *x, uint64_t r, double n)
{
    double L = D(x->L), global = L - D(m4d_local_layers_in(x, 0, x->L));
    return ((n - D(m4d_stage_local_layers(x, r))) * L - n * global) / L; /* 0 where the stage holds whole periods */
}

/* Layers of the first, the heaviest middle and the last rank (stages.c),
 * of an MoE model the dense ones among them, of a sliding window's model
 * the global ones beyond the model's share (the middle rank: of the
 * heaviest, the one with the most global layers, then expert layers). */
static void stage_layers(const struct m4d_ctx *x, struct m4d_perf_group *pg)
{
    const struct m4d_split *sp = &x->split;
    pg->n_first = D(m4d_split_rank_layers(sp, 0));
    pg->n_last = D(m4d_split_rank_layers(sp, x->p - 1));
    pg->n_mid = D(m4d_split_middle_max(sp));
    pg->d_first = pg->d_mid = pg->d_last = 0;
    pg->g_first = pg->g_mid = pg->g_last = pg->g_mids = 0;
    bool dense = has_dense_layers(x), window = pg->win_delta > 0;
    if (!dense && !window)
        return;
    if (dense) {
        pg->d_first = pg->n_first - D(m4d_stage_moe_layers(x, 0));
        pg->d_last = x->p > 1 ? pg->n_last - D(m4d_stage_moe_layers(x, x->p - 1)) : 0;
    }
    if (window) {
        pg->g_first = global_excess(x, 0, pg->n_first);
        pg->g_last = x->p > 1 ? global_excess(x, x->p - 1, pg->n_last) : 0;
    }
    double best_g = -1e300, best_e = -1;
    for (uint64_t r = 1; r + 1 < x->p; r++) {
        double n = D(m4d_split_rank_layers(sp, r)), e = dense ? D(m4d_stage_moe_layers(x, r)) : 0;
        double g = window ? global_excess(x, r, n) : 0;
        pg->g_mids += g;
        if (n == pg->n_mid && (g > best_g || (g == best_g && e > best_e))) {
            best_g = g, best_e = e;
            pg->d_mid = dense ? n - e : 0;
            pg->g_mid = g;
        }
    }
}

/* Megatron's model FLOPs per sequence (training.py,
 * num_floating_point_operations, the --log-throughput figure): 3 passes,
 * full s x s attention, no recompute. With LatentMoE the routed experts
 * count at the latent width and its two projections 4·s·h·latent
 * ("Routed experts run on moe_latent_size", "Up proj and down proj",
 * transformer_flops, NVIDIA/Megatron-LM@d98e8a64). */
static double model_flops_per_seq(const struct m4d_ctx *x)
{
    double s = D(x->s), h = D(x->h), qd = D(x->a * x->dh), kvd = D(x->k * x->dh);
    double gm = x->gated ? 3 : 2;
    double mlp = 2 * s * h * gm * D(mlp_width(x));
    if (x->experts && x->latent) { /* the MLP's FLOPs a forward, h·width replaced */
        double lt = D(x->latent);
        mlp = 2 * s * gm * (h * D(x->fs) + lt * D(x->topk * x->fe)) + 4 * s * h * lt;
    }
    double layer = 2 * s * h * (2 * qd + 2 * kvd) + 4 * s * s * qd + mlp;
    return 3 * (D(x->L) * layer + 2 * s * h * D(x->Vp));
}

/* The FLOPs one sequence's step executes, as the step time charges them
 * (the clamp of the band and the warning past the peak, m4d_perf_metrics):
 * Megatron's count (the counted, pg->flops_per_seq) with its attention,
 * 3 passes of the full s x s square (4 s^2 qd a layer), replaced by what the
 * kernel runs (attention_prepare's attn_flops_per_b over the t x c ranks): a
 * fused kernel's causal half (attn_work) over the window's keys
 * (window_share), its backward ATTN_BWD_WORK forwards; softmax attention
 * the whole square, 3 passes (the count). Recompute adds the
 * forward it re-runs: every layer's under full recompute, the attention
 * core's under selective recompute of core_attn; the other modules a
 * selective recompute re-runs are left out, so the figure is a lower bound
 * there (the clamp errs towards none). A layer pattern keeps its count
 * (Megatron's hybrid count already takes a causal s^2), plus the layers'
 * forward under full recompute. */
static double executed_flops_per_seq(const struct m4d_ctx *x, const struct m4d_perf_group *pg)
{
    double s = D(x->s), head = 2 * s * D(x->h) * D(x->Vp), L = D(x->L), counted = pg->flops_per_seq;
    if (x->nlt)
        return counted + (x->recompute == 2 ? counted / 3 - head : 0);
    double square = 4 * s * s * D(x->a * x->dh); /* one forward of the full s x s attention */
    double fwd = pg->attn_flops_per_b * D(x->t * x->c), bwd = (pg->mc.attn_unfused ? 2 : ATTN_BWD_WORK) * fwd;
    double exec = counted - 3 * L * square + L * (fwd + bwd);
    if (x->recompute == 2)
        exec += counted / 3 - head - L * square + L * fwd;
    else if (x->recompute == 1 && (x->rc_modules & M4D_RC_CORE_ATTN))
        exec += L * fwd;
    return exec;
}

/* NCCL's double binary tree for an all-reduce of `bytes` over n ranks, r of
 * them in each NVLink domain, in `colls` collectives (src/graph/tuning.cc,
 * ncclTopoTuneModel): a chain inside the domain and a tree across domains,
 * latency 2·((r − 1)·λ_intra + ⌈log2 nodes⌉·λ_inter) per collective; bus
 * bandwidth TREE_BW of the link's and algorithm bandwidth half of that, so
 * 2·bytes/(TREE_BW·B_inter). NCCL's tuner runs whichever of ring and tree
 * is faster; inside one domain the chain never is (-1: no tree). */
#define TREE_BW 0.92
static double tree_allreduce_time(const struct m4d_machine *mc, double n, double r, double bytes, double colls)
{
    double nodes = n / r, hops = 0, bw = r * mc->inter.bw; /* the r members' NICs, as link_for() */
    if (nodes < 2 || mc->inter.bw <= 0)
        return -1;
    if (mc->intra.bw > 0 && bw > mc->intra.bw)
        bw = mc->intra.bw;
    for (double span = 1; span < nodes; span *= 2)
        hops++;
    return colls * 2 * ((r - 1) * mc->intra.lat + hops * mc->inter.lat) + 2 * bytes / (TREE_BW * bw);
}

/* An all-reduce of `bytes` over the n ranks of the d·c group in `colls`
 * collectives: ring or NCCL's tree, whichever is faster; the group's
 * members sit t apart (ranks tp-cp-dp-pp). */
static double dp_allreduce_time(const struct m4d_ctx *x, const struct m4d_perf_group *pg, double n, double bytes,
                                double colls)
{
    double t = D(x->t), per_domain = t < pg->mc.domain ? (double)(int64_t)(pg->mc.domain / t) : 1;
    double frac = (n - 1) / n;
    double tree = tree_allreduce_time(&pg->mc, n, per_domain < n ? per_domain : n, bytes, colls);
    double ring = ring_time_split(&pg->mc, D(x->t * x->c * x->d), t, n, bytes, 2 * frac, 2 * colls);
    return tree >= 0 && tree < ring ? tree : ring;
}

/* DS_ZERO1: DeepSpeed's ZeRO stage 1 (DeepSpeedZeroOptimizer, deepspeed/
 * runtime/zero/stage_1_and_2.py, v0.5.9 to v0.9.0; stage2.py from v0.5.0).
 * The engine turns contiguous_gradients off for stage 1
 * (_configure_zero_optimizer, "Overlap and contiguous grads are
 * meaningless in stage 1"), so reduce_ipg_grads takes
 * buffered_reduce_fallback, whose allreduce_bucket sets rank = None and
 * runs dist.all_reduce over the data-parallel group on each bucket of
 * fp16/bf16 gradients (flattened, divided by dp, copied back); step() then
 * all-gathers the updated 16-bit partitions, the buckets
 * reduce_bucket_size and allgather_bucket_size (M4D_DS_BUCKET, private.h,
 * the memory model's too). */

/* Gradient reduction and parameter gather over the d*c ranks that share
 * the `params` weights of the heaviest stage, before any overlap, and the
 * optimizer step. */
static void dp_prepare(const struct m4d_ctx *x, struct m4d_perf_group *pg, double params, double experts)
{
    struct m4d_shards sh; /* the groups memory shards over (m4d_shards) */
    m4d_shards(x, &sh);
    double n = D(sh.dp), frac = (n - 1) / n, span = D(x->t * x->c * x->d);
    struct pipe_span pn = pipe_neighbours(x);
    double bucket = D(x->bucket);
    if (bucket == 0 && pg->mc.zero1_allreduce) /* nanotron's DDP: ddp_bucket_cap_mb 25 of bf16 gradients */
        bucket = 12.5e6;
    else if (bucket == 0) /* Megatron: max(40M, 1M x dp) elements */
        bucket = n > 40 ? 1e6 * n : 40e6;
    /* NCCL runs bucket-sized reduce-scatters and all-gathers as rings of
     * n-1 latency-bound steps, of which only those that leave an NVLink
     * domain pay the network's latency (ring_latency), as FSDP's do.
     * FSDP_ONCE: PyTorch's FSDP reducing once a step runs one of each per
     * unit, a block (FSDP_ROOT). */
    double colls = (double)(int64_t)(params / bucket) + 1;
    if (fsdp_once(x, &pg->mc) && pg->layers_max >= 1)
        colls = pg->layers_max;
    double g = params * D(x->grad_bytes), w = params * D(x->param_bytes) - pg->fp8_gather_lin * D(x->param_bytes - 1);
    pg->dp_reduce = pg->dp_gather = pg->dp_serial = 0;
    pg->dp_colls = colls;
    if (fsdp_units(x, &pg->mc)) {
        /* gathers and reduce-scatters run per layer (unit_time_of) */
    } else if (x->zero >= 1 && pg->mc.zero1_allreduce && n > 1) {
        /* nanotron's ZeRO-1 (NANOTRON_LAYER_TENSORS): after the pipeline,
         * one all-reduce of the fp32 buffer, one all-gather of the bf16
         * weights, and n (tensors + 2) eager ops unpacking it (each rank's
         * flatten, its copy out of the gather, a copy per tensor) after
         * n tensors slices to gather into */
        double tensors = pg->layers_max * NANOTRON_LAYER_TENSORS + 2;
        pg->dp_serial = dp_allreduce_time(x, pg, n, params * 4, 1) + ring_time_split(&pg->mc, span, D(x->t), n, w, frac, 1) +
                        n * ((tensors + 2) * EAGER_OP_S + tensors * EAGER_VIEW_S);
    } else if (x->zero == 1 && pg->mc.ds_zero1 && n > 1) {
        /* DS_ZERO1: DeepSpeed's ZeRO stage 1 all-reduces the whole
         * gradient in reduce_bucket_size buckets, then all-gathers the
         * updated weights in allgather_bucket_size shards (both 5·10^8
         * elements by default): 3 (n-1)/n of the bytes where a
         * reduce-scatter and a gather move 2 (n-1)/n (doc/perf.md, "The
         * software stack"). The gather's shards: num_shards = max(1,
         * partition numel x dp // allgather_bucket_size), the last shard
         * taking the remainder (step(), stage_1_and_2.py at v0.5.10 and
         * v0.6.0) */
        double dcolls = (double)(int64_t)(params / D(m4d_ds_bucket(x->bucket))) + 1;
        double gcolls = MAX((double)(int64_t)(params / D(m4d_ds_bucket(x->ag_bucket))), 1);
        pg->dp_colls = dcolls;
        pg->dp_reduce = dp_allreduce_time(x, pg, n, g, dcolls);
        pg->dp_gather = ring_time_split(&pg->mc, span, D(x->t), n, w, frac, gcolls);
    } else if (x->zero >= 1) {
        pg->dp_reduce = ring_time_split(&pg->mc, span, D(x->t), n, g, frac, colls);
        pg->dp_gather = ring_time_split(&pg->mc, span, D(x->t), n, w, frac, colls);
    } else {
        pg->dp_reduce = dp_allreduce_time(x, pg, n, g, colls);
    }
    /* Tied embeddings on p > 1 stages: after the DP reduction the first and
     * the last stage all-reduce the shared embedding's gradient
     * (Megatron-Core finalize_model_grads, _allreduce_embedding_grads;
     * nanotron sync_tied_weights_gradients, its fp32 buffer), over the
     * pipeline's link, hidden by nothing. */
    if (x->tied && x->p > 1) {
        struct m4d_link el = link_for(&pg->mc, pn.span, pn.stride);
        double eg = D(x->h) * D(x->Vp) / D(x->t) * (pg->mc.zero1_allreduce ? 4 : D(x->grad_bytes));
        pg->dp_serial += ring_time(&el, 2, eg, 1, 2);
    }
    /* Expert weights are replicated over the expert-data-parallel group
     * (t·d·c/(ep·etp) ranks, ep·etp apart in Megatron-Core's expert rank
     * order), whose distributed optimizer reduces their gradients and
     * gathers them after the dense ones (Megatron-Core's expert buckets). */
    double ne = experts > 0 ? D(sh.edp) : 1;
    pg->dp_slow = nccl_slow_of(&pg->mc, D(x->t * x->c * x->d), D(x->t));
    /* P2P_OVERLAP: the pipeline's neighbours (pipe_neighbours); across
     * nodes 2 or 4 CTAs, as NCCL gives a network peer (p2p_hidden) */
    pg->p2p_slow = nccl_slow_of(&pg->mc, pn.span, pn.stride);
    if (experts > 0 && x->zero < 3) {
        double est = D(m4d_ep_group(x)), dense = pg->dp_reduce + pg->dp_gather;
        double ec = (double)(int64_t)(experts / bucket) + 1, ef = (ne - 1) / ne;
        double eg = experts * D(x->grad_bytes), ew = experts * D(x->param_bytes);
        pg->dp_colls += ec;
        if (x->zero >= 1) {
            pg->dp_reduce += ring_time_split(&pg->mc, span, est, ne, eg, ef, ec);
            pg->dp_gather += ring_time_split(&pg->mc, span, est, ne, ew, ef, ec);
        } else {
            pg->dp_reduce += ring_time_split(&pg->mc, span, est, ne, eg, 2 * ef, 2 * ec);
        }
        /* the hidden seconds' SMs, each group's by its share of them */
        double all = pg->dp_reduce + pg->dp_gather;
        if (all > 0)
            pg->dp_slow = (dense * pg->dp_slow +
                           (all - dense) * nccl_slow_of(&pg->mc, span, est)) / all;
    }
    /* Adam is memory-bound: read the gradient, read and write master
     * weights and both moments, write the bf16 weights. Without a master
     * copy (master_weight_bytes 0: fp32 training, or Apex's
     * DistributedFusedAdam with store_params False, which reads the weights'
     * shard, updates it and writes it back) the weights are read as well. */
    double shard = x->zero >= 1 ? params / D(sh.opt) + experts / D(sh.eopt) : params + experts;
    double per = D(x->grad_bytes) + 2.0 * D(x->master_bytes) + 4.0 * D(x->opt_bytes) +
                 (x->master_bytes ? 1.0 : 2.0) * D(x->param_bytes);
    pg->opt_s = shard * per * pg->mc.inv_hbm;
    /* STEP_PASSES: the Megatron family's step outside Adam's own kernel,
     * g = grad_bytes, the gradient buffer's element (doc/perf.md, "The
     * step outside Adam").
     * - Every level zeroes the contiguous gradient buffer before the step's
     *   first micro-batch (g a local weight written) and clips by the norm
     *   amp_C.multi_tensor_l2norm reads over the shard's gradients (g a
     *   shard weight; the clip's own scale runs only when the norm exceeds
     *   the clip): Apex's DistributedFusedAdam (NVIDIA/apex@b496d85f,
     *   apex/contrib/optimizers/distributed_fused_adam.py: zero_grad's
     *   grad_buffer.zero_() under NeMo's contiguous_grad_buffer,
     *   _local_grad_norm; it reduces with ReduceOp.AVG, folds the clip
     *   into _grad_scale and writes the weights from its fused kernel), as
     *   NeMo 1 runs it (the nemo-24.07 profile).
     * - STEP_MCORE adds the master weights' read by the copy into the
     *   model's (DistributedOptimizer._copy_main_params_to_model_params,
     *   copy_ of the fp32 shard into the bf16 parameter buffer, whose write
     *   Adam's `per` counts), NVIDIA/Megatron-LM core_r0.8.0 to
     *   core_v0.15.0 (megatron/core/optimizer/distrib_optimizer.py; the
     *   buffer's zero_() in distributed/param_and_grad_buffer.py reset()).
     *   Its main gradients are fp32: from a bf16 buffer (grad_reduce_in_fp32
     *   False) _copy_model_grads_to_main_grads makes them with .float()
     *   (g read, 4 written), and the norm and Adam then read 4, not g
     *   (Adam's `per` counts g). NeMo 2 and Megatron-Bridge average in the
     *   collective (average_in_collective=True), so no scale pass.
     * - STEP_MLM2022 adds Megatron-LM 2022's in-place division of the
     *   buffer by dp before its all-reduce (`buffer_.data /=`, at dp 1 too:
     *   2 g a local weight), NVIDIA/Megatron-LM@2e90a342 (the same at
     *   @285068c8), megatron/model/distributed.py; its clip and copy are
     *   optimizer/clip_grads.py and Float16OptimizerWithFloat16Params.
     * Not charged (per run, no key says them): Megatron-Core's
     * check_for_nan_in_grad norm over each bucket (NeMo 2's recipes on,
     * Megatron-Bridge's performance scripts off), its scale pass where
     * average_in_collective is False, and the fp8 weights' cast under
     * fp8_param_gather (quantize_param_shard). */
    if (pg->mc.step_passes) {
        double local = pg->mc.step_passes >= STEP_MLM2022 ? 3.0 : 1.0, gb = D(x->grad_bytes);
        double per_shard = gb;
        /* fp32 main gradients: the norm's 4, the copy's master read; from a
         * bf16 buffer also .float()'s g read and 4 written and Adam's 4 - g
         * more read, 8 in all */
        if (pg->mc.step_passes >= STEP_MCORE)
            per_shard = 4.0 + D(x->master_bytes) + (gb < 4.0 ? 8.0 : 0.0);
        pg->opt_s += ((params + experts) * local * gb + shard * per_shard) * pg->mc.inv_hbm;
    }
}

/* Exposed DP seconds. Buckets are reduced as the backward produces them:
 * all but the last bucket hide behind the rest of the last micro-batch's
 * backward. With v chunks the others hide in the cool-down (widen), but the
 * first chunk's 1/v finishes last, behind its own backward only. The
 * parameter gather is the same against the first forwards. What hides
 * costs the compute it hides behind the SMs its kernels hold (nccl_cost);
 * FSDP's (FSDP_ONCE) costs it what FSDP's per-layer collectives do, on
 * GEMMs that are `gemm` of it (beside_cost). */
static double dp_exposed(const struct m4d_ctx *x, const struct m4d_perf_group *pg, double bwd_stage,
                         double fwd_stage, double widen, double gemm)
{
    double reduce = pg->dp_reduce, gather = pg->dp_gather, colls = pg->dp_colls, v = D(x->v ? x->v : 1);
    /* DS_ZERO1: DeepSpeed turns overlap_comm off for stage 1 */
    bool overlap = !(x->zero == 1 && pg->mc.ds_zero1);
    if (x->overlap_grad && overlap)
        reduce = MAX(MAX(reduce - widen * bwd_stage, reduce / colls), MAX0(reduce - bwd_stage) / v);
    if (x->overlap_param && overlap)
        gather = MAX(MAX(gather - widen * fwd_stage, gather / colls), MAX0(gather - fwd_stage) / v);
    double hidden = pg->dp_reduce + pg->dp_gather - reduce - gather;
    if (fsdp_once(x, &pg->mc)) /* beside_cost is the SMs' share (dp_slow) on other GPUs */
        return reduce + gather + MAX0(hidden) * beside_cost(&pg->mc, gemm, pg->dp_slow);
    return reduce + gather + nccl_cost(hidden, pg->dp_slow);
}

/* P2P_OVERLAP: Megatron-Core's interleaved schedule with overlap_p2p_comm
 * (megatron/core/pipeline_parallel/schedules.py, core_r0.8.0 to
 * core_v0.17.1, forward_backward_pipelining_with_interleaving). Rank r runs
 * W = (p - r - 1)·2 + (v - 1)·p warm-up chunk forwards (all m·v when m = p,
 * or fewer chunks), each followed by an exchange it waits for before the
 * next chunk, so exposed; the steady state's m·v - W iterations post the
 * forward's send and next receive, and the backward's, as isend/irecv
 * (p2p_communication.py _p2p_ops, batch_p2p_comm False) and wait for the
 * receive only before the chunk that uses it, a chunk later: hidden; the
 * cool-down's W backward exchanges block again (send_backward_recv_backward
 * without overlap_p2p_comm). Of a stage's transfers per micro-batch the
 * share (m·v - W)/(m·v) hides, and each hidden second costs the compute
 * beside it (GEMMs the share `gemm` of it) what beside_cost says: NCCL's
 * send and receive kernels hold SMs as a collective's do, for a network
 * peer max(NICs, 2) channels or more (NVIDIA/nccl src/graph/paths.cc,
 * ncclTopoGetNchannels). hid[i] is what the
 * steady state saves per micro-batch on the first, a middle and the last
 * stage; xfer is one transfer's seconds. Only the transfers hide: the TP
 * all-gather of a received slice (P2P_SHAPE's p2p_ag) runs after the wait,
 * on the compute's path. Megatron-Core ignores the flag without interleaving (vpp 1:
 * "Non-interleaved pipeline parallelism does not support overlapping p2p
 * communication"); DeepSpeed's engine has none. */
static void p2p_hidden(const struct m4d_ctx *x, const struct m4d_perf_group *pg, const struct unit_time *u,
                       double xfer, double hid[3])
{
    hid[0] = hid[1] = hid[2] = 0;
    if (!x->p2p_overlap || x->v < 2 || x->p < 2 || pg->mc.ds_pipe)
        return;
    double cost = beside_cost(&pg->mc, u->gemm, pg->p2p_slow), m = D(x->m), v = D(x->v), p = D(x->p), all = m * v;
    double rank[3] = {0, (p - 1) / 2, p - 1}, layers[3] = {pg->n_first, pg->n_mid, pg->n_last};
    for (int i = 0; i < 3; i++) {
        double w = x->m == x->p ? all : 2 * (p - rank[i] - 1) + (v - 1) * p;
        /* a chunk's transfer each way, hidden under the other direction's
         * chunk as far as that chunk lasts */
        double one = pg->p2p_n[i] * xfer / (2 * v), f = layers[i] * u->layer_fwd / v, b = layers[i] * u->layer_bwd / v;
        if (w < all)
            hid[i] = v * (MIN(one, b) + MIN(one, f)) * (1 - w / all) * (1 - cost);
    }
}

/* The pipeline of one step: the slowest stage's time per micro-batch (its
 * compute and its layers), the bubble, and the whole. */
struct pipeline {
    double tmax, cmax, lmax, layers_max, bubble, total;
    double emax; /* expert layers of the slowest stage (lmax without an MoE model's dense ones) */
    double p2p;  /* the slowest stage's pipeline transfers per micro-batch */
    double head; /* 1 where the slowest stage holds the head */
    double gx;   /* the slowest stage's global layers beyond the model's share (SLIDING_WINDOW) */
};

/* Stage times per micro-batch: the first stage also holds the head when
 * p = 1. The slowest stage sets the pace of the steady state; the others'
 * warm-up and cool-down form the bubble, cut by v. */
static struct pipeline pipeline_of(const struct m4d_ctx *x, const struct m4d_perf_group *pg,
                                   const struct unit_time *u, const double p2p[3], const double hid[3])
{
    double n_first = pg->n_first, n_mid = pg->n_mid, n_last = pg->n_last, p = D(x->p), v = D(x->v ? x->v : 1);
    double lt = u->layer_compute + u->layer_tp + u->layer_cp + u->layer_ep + u->layer_fsdp;
    /* an MoE model's dense layers: what each takes beyond an expert layer */
    double dl = u->dense - lt, dc = u->dense_compute - u->layer_compute;
    double df = pg->d_first, dm = pg->d_mid, dz = pg->d_last;
    /* a sliding window's model: its global layers beyond the layers' share
     * (SLIDING_WINDOW), each a global layer's attention beyond a local one's */
    double gf = pg->g_first * u->global, gm = pg->g_mid * u->global, gz = pg->g_last * u->global;
    /* The framework's time per micro-batch outside the layers. */
    double hf = (x->p == 1 ? u->head : 0) + pg->mc.mb_overhead;
    double mo = pg->mc.mb_overhead, tf = n_first * lt + df * dl + gf + hf + p2p[0];
    double tm = n_mid * lt + dm * dl + gm + mo + p2p[1], tl = n_last * lt + dz * dl + gz + u->head + mo + p2p[2];
    /* P2P_OVERLAP: the steady state without the transfers it hides (hid,
     * what they cost the compute beside them taken off already); the fill
     * and drain, the bubble, keep every stage's whole time */
    struct pipeline pl = {tf - hid[0], n_first * u->layer_compute + df * dc + gf + hf, n_first, n_first, 0, 0, n_first - df,
                          p2p[0] - hid[0], x->p == 1, pg->g_first};
    double sum = tf, whole = tf;
    if (x->p > 1) {
        /* the middle stages each as the heaviest, their global layers their own */
        sum = tf + (p - 2) * (tm - gm) + pg->g_mids * u->global + tl;
        if (x->p > 2 && tm - hid[1] > pl.tmax) {
            pl = (struct pipeline){tm - hid[1], n_mid * u->layer_compute + dm * dc + gm + mo, n_mid, 0, 0, 0, n_mid - dm,
                                   p2p[1] - hid[1], 0, pg->g_mid};
            whole = tm;
        }
        if (tl - hid[2] > pl.tmax) {
            pl = (struct pipeline){tl - hid[2], n_last * u->layer_compute + dz * dc + gz + u->head + mo, n_last, 0, 0, 0,
                                   n_last - dz, p2p[2] - hid[2], 1, pg->g_last};
            whole = tl;
        }
    }
    pl.layers_max = pg->layers_max;
    pl.bubble = (sum - whole) / v;
    pl.total = D(x->m) * pl.tmax + pl.bubble;
    return pl;
}

/* A band: the device's own speed_band_*_ppm where set, else lo and hi; the
 * high bound at least 1 (the band holds the prediction). */
static void band_of(const mem4d_device *dev, double lo, double hi, double *low, double *high)
{
    const uint64_t *dv = dev->v;
    *low = dv[MEM4D_DEVICE_SPEED_BAND_LOW_PPM] ? ppm(dv[MEM4D_DEVICE_SPEED_BAND_LOW_PPM]) : lo;
    if (dv[MEM4D_DEVICE_SPEED_BAND_HIGH_PPM])
        hi = ppm(dv[MEM4D_DEVICE_SPEED_BAND_HIGH_PPM]);
    *high = MAX(hi, 1);
}

mem4d_status mem4d_device_speed_band(const mem4d_device *dev, double *low, double *high)
{
    if (!dev || !low || !high)
        return MEM4D_E_INVALID_ARG;
    bool cal = dev->v[MEM4D_DEVICE_CALIBRATED_RUNS] != 0;
    band_of(dev, cal ? BAND_CAL_LOW : BAND_LOW, cal ? BAND_CAL_HIGH : BAND_HIGH, low, high);
    return MEM4D_OK;
}

void m4d_speed_band_relative(const mem4d_device *dev, double *low, double *high)
{
    band_of(dev, BAND_REL_LOW, BAND_REL_HIGH, low, high);
}

uint64_t m4d_perf_effective(const mem4d_device *dev, mem4d_device_param key)
{
    /* the load spread's 0 is the router's published figure: an auxiliary-
     * loss router's, 0.52 / 2.3437 (lib/perf_moe.c, spread_of()) */
    if (key == MEM4D_DEVICE_MOE_LOAD_SPREAD_PPM)
        return dev->v[key] ? dev->v[key] : 221871;
    /* the network's efficiency is the links' until set */
    if (key == MEM4D_DEVICE_INTER_NODE_EFFICIENCY_PPM)
        return dev->v[key] ? dev->v[key] : dev->v[MEM4D_DEVICE_COMM_EFFICIENCY_PPM];
    if (key != MEM4D_DEVICE_ATTENTION_EFFICIENCY_PPM && key != MEM4D_DEVICE_MICROBATCH_OVERHEAD_NS)
        return dev->v[key];
    /* bf16, a layout that leaves flash_attn unset: the device's kernel or its stack's */
    struct mem4d_layout l = {.flash_set = false};
    struct m4d_ctx x = {.flash = m4d_attention_fused(&l, dev)};
    struct m4d_machine mc = machine_of(&x, dev);
    double v = key == MEM4D_DEVICE_ATTENTION_EFFICIENCY_PPM ? mc.attn_fwd * 1e6 : mc.mb_overhead * 1e9;
    return (uint64_t)(v + 0.5);
}

struct m4d_machine m4d_perf_machine(const struct m4d_ctx *x, const mem4d_device *dev)
{
    return machine_of(x, dev);
}

void m4d_perf_prepare(const struct m4d_ctx *x, const mem4d_device *dev, const struct layer_share *share,
                      const struct m4d_machine *mc, struct m4d_perf_group *pg)
{
    pg->ok = dev->v[MEM4D_DEVICE_PEAK_FLOPS] != 0 && x->gbs != 0 && x->p != 0 && x->t != 0 && x->c != 0;
    if (!pg->ok)
        return;
    pg->mc = mc ? *mc : machine_of(x, dev);
    gemms_prepare(x, pg);
    attention_prepare(x, pg);
    comm_prepare(x, pg);
    m4d_moe_prepare(x, dev, &pg->mc, &pg->moe);
    stage_layers(x, pg);
    pg->layers_max = MAX(MAX(pg->n_first, pg->n_mid), pg->n_last);
    pg->fsdp = fsdp_units(x, &pg->mc);
    pg->tp_lost = x->t > 1 ? beside_cost(&pg->mc, 1, nccl_slow_of(&pg->mc, D(x->t), 1)) : 0; /* TP_BESIDE */
    pg->attn_copies = pg->pad_per_b != 0 || pg->copy_per_b != 0 || pg->copy_mb_per_b != 0;
    pg->tp_ag_whole = pg->tp_ag_share == 1;
    pg->moe_dense = pg->moe.on && pg->d_first + pg->d_mid + pg->d_last > 0;
    pg->flops_per_seq = x->nlt ? m4d_hybrid_flops_per_seq(x) : model_flops_per_seq(x);
    pg->straggle = straggler_share(D(x->world), pg->mc.gpn); /* the world is the group's: not formed per layout */
    /* CPU activation offloading: the offloaded layers' activations go to the
     * host in the forward and come back in the backward, over the host link,
     * each direction on its own copy engine (A_layer is linear in b). */
    pg->offload_per_b = 0;
    if (x->act_offload && dev->v[MEM4D_DEVICE_HOST_BANDWIDTH]) {
        struct m4d_ctx one = *x;
        one.b = 1;
        pg->offload_per_b = D(x->act_offload) * D(m4d_layer_activation_bytes(&one)) /
                            D(dev->v[MEM4D_DEVICE_HOST_BANDWIDTH]);
    }
    /* MFU against the peak of the precision the GEMMs run in: fp4 for NVFP4. */
    bool fp4 = x->fp8 && x->fp8_recipe == M4D_FP8_RECIPE_NVFP4 && dev->v[MEM4D_DEVICE_PEAK_FP4_FLOPS];
    pg->peak = D(dev->v[fp4                                               ? MEM4D_DEVICE_PEAK_FP4_FLOPS
                        : x->fp8 && dev->v[MEM4D_DEVICE_PEAK_FP8_FLOPS] ? MEM4D_DEVICE_PEAK_FP8_FLOPS
                                                                          : MEM4D_DEVICE_PEAK_FLOPS]);
    pg->exec_flops_per_seq = executed_flops_per_seq(x, pg);
    pg->kernel_share = kernel_share(dev, pg);
    mem4d_device_speed_band(dev, &pg->band_lo, &pg->band_hi);
    /* Weights of one layer on one GPU, as the memory model shards them
     * (m4d_layer_share: linear weights over t, experts over ep·etp, norms
     * and the router replicated), and of the heaviest stage with its
     * embedding; with experts, wl is the dense part and we the experts'
     * (replicated over the expert-data-parallel group). */
    bool ok = true;
    struct layer_share ls = share ? *share : m4d_layer_share(&ok, x);
    double wl = x->nlt ? m4d_hybrid_mean_layer_weights(x) : ok ? D(ls.linear) + D(ls.expert) + D(ls.replicated) : 0;
    double we = 0;
    if (!x->nlt && ok && x->experts) {
        wl = D(ls.linear) + D(ls.replicated);
        we = D(ls.expert);
    }
    pg->accum_layer = (wl + we) * pg->mc.accum_bytes * pg->mc.inv_hbm;
    host_prepare(x, pg);
    if (x->zero >= 3 && pg->mc.fsdp2_copies) { /* FSDP2's copy-out and copy-in (above DTENSOR_TP) */
        uint64_t outs = x->fw == MEM4D_FRAMEWORK_TORCHTITAN && x->reshard == 2 ? 1 : 2; /* gathers a micro-batch */
        pg->accum_layer += (wl + we) * D(2 * outs * x->param_bytes + x->param_bytes + x->grad_bytes) * pg->mc.inv_hbm;
    }
    double embed = (x->p == 1 && !x->tied ? 2.0 : 1.0) * D(x->h) * D(x->Vp) / D(x->t);
    /* fp8_param_gather: the linear weights gathered at 1 byte (dp_prepare, FSDP below) */
    double lin8 = x->fp8 && x->fp8_params && ok && !x->nlt ? D(ls.linear) : 0;
    pg->fp8_gather_lin = pg->layers_max * lin8;
    dp_prepare(x, pg, pg->layers_max * wl + embed, pg->layers_max * we);
    pg->fsdp_ag = pg->fsdp_rs = pg->fsdp_edge_ag = pg->fsdp_edge_rs = 0;
    if (fsdp_units(x, &pg->mc)) { /* FSDP's gathers and reduce-scatters run over its shard group */
        struct m4d_shards g;
        m4d_shards(x, &g);
        double n = D(g.fsdp);
        double span = D(x->t * g.fsdp), frac = (n - 1) / n;
        pg->fsdp_ag = ring_time_split(&pg->mc, span, D(x->t), n, wl * D(x->param_bytes) - lin8 * D(x->param_bytes - 1), frac, 1);
        pg->fsdp_rs = ring_time_split(&pg->mc, span, D(x->t), n, wl * D(x->grad_bytes), frac, 1);
        pg->fsdp_slow = nccl_slow_of(&pg->mc, span, D(x->t));
        if (pg->mc.fsdp_root) { /* FSDP_ROOT: the root unit's and the first block's, not hidden */
            pg->fsdp_edge_ag = pg->fsdp_ag + ring_time_split(&pg->mc, span, D(x->t), n, embed * D(x->param_bytes), frac, 1);
            pg->fsdp_edge_rs = pg->fsdp_rs + ring_time_split(&pg->mc, span, D(x->t), n, embed * D(x->grad_bytes), frac, 1);
        }
        if (we > 0) { /* the experts' shards over their expert-data-parallel group */
            double ne = D(g.edp), es = D(x->t * x->c * x->d), est = D(m4d_ep_group(x));
            double dense = pg->fsdp_ag + pg->fsdp_rs;
            pg->fsdp_ag += ring_time_split(&pg->mc, es, est, ne, we * D(x->param_bytes), (ne - 1) / ne, 1);
            pg->fsdp_rs += ring_time_split(&pg->mc, es, est, ne, we * D(x->grad_bytes), (ne - 1) / ne, 1);
            /* the hidden seconds' SMs, each group's by its share of them */
            double all = pg->fsdp_ag + pg->fsdp_rs;
            if (all > 0)
                pg->fsdp_slow = (dense * pg->fsdp_slow + (all - dense) * nccl_slow_of(&pg->mc, D(x->t * x->c * x->d),
                                                                                      D(m4d_ep_group(x)))) / all;
        }
    }
}

_Static_assert(M4D_PERF_B_KEY_BYTES % sizeof(double) == 0, "the per-b key holds 8-byte fields only (no padding)");

void m4d_perf_b_key(const struct m4d_perf_group *pg, unsigned char key[M4D_PERF_B_KEY_BYTES])
{
    memcpy(key, pg->lin, M4D_PERF_B_KEY_BYTES);
}

bool m4d_perf_b_shared(const struct m4d_perf_group *pg, const unsigned char key[M4D_PERF_B_KEY_BYTES])
{
    return memcmp(key, pg->lin, M4D_PERF_B_KEY_BYTES) == 0;
}

void m4d_perf_fill_memo(const struct m4d_ctx *x, const struct m4d_perf_group *pg, struct m4d_perf_b *memo,
                        mem4d_report *r)
{
    r->have_metrics = false; /* every metric is written below when true */
    if (!pg->ok || x->m == 0)
        return;
    struct m4d_perf_b own;
    if (!memo)
        memo = &own, own.b = 0;
    if (memo->b != D(x->b))
        perf_b_of(pg, D(x->b), memo);
    struct unit_time u = unit_time_of(x, pg, memo);
    double one = pg->p2p_lat + D(x->b) * pg->p2p_per_b, ag = pg->tp_lat + D(x->b) * pg->tp_per_b, m = D(x->m);
    double p2p[3], hid[3];
    for (int i = 0; i < 3; i++)
        p2p[i] = pg->p2p_n[i] * one + pg->p2p_ag[i] * ag;
    p2p_hidden(x, pg, &u, one, hid);
    struct pipeline pl = pipeline_of(x, pg, &u, p2p, hid);
    /* The DP collectives of the heaviest stage hide behind the last
     * micro-batch's backward (reduce) and the first forward (gather).
     * Interleaved, the last v-1 chunks of a rank finish their backward
     * while the cool-down still runs about min(m, p) micro-batches of the
     * earlier chunks (and the first forwards of the warm-up likewise). */
    double v = D(x->v ? x->v : 1), mq = D(x->m < x->p ? x->m : x->p);
    double widen = 1 + (mq - 1) * (v - 1) / v;
    double dp = dp_exposed(x, pg, pl.layers_max * u.layer_bwd, pl.layers_max * u.layer_fwd, widen, u.gemm);
    dp += pg->dp_serial + m * pg->fsdp_edge_ag + pg->fsdp_edge_rs; /* FSDP_ROOT */
    double step = pl.total + dp + pg->opt_s, pr = pg->mc.power_r;
    /* POWER_BALANCE (power_stretch): the slowest stage's GEMMs and attention
     * (kmax a micro-batch), and the bubble's share of them (the other
     * stages'), at the clock the step's mean power sustains. Of its compute
     * the SMs run busy all but the time the GPU waits for the host (the
     * launches of EAGER_HOST and m4d_moe_host, the framework's time a
     * micro-batch outside the layers, microbatch_overhead_ns): there the
     * GPU runs nothing and draws the idle share, as in the rest of the step. */
    double c = m * (pl.cmax - pl.emax * u.layer_host - pg->mc.mb_overhead);
    if (pr * step < c) {
        double kmax = pl.lmax * u.layer_clocked + (pl.lmax - pl.emax) * (u.dense_clocked - u.layer_clocked) +
                      pl.gx * u.global + pl.head * u.head_clocked,
               k = m * kmax;
        if (k > 0) {
            double stretch = power_stretch(pr, pg->mc.power_zc, k, c - k, step - c) - 1;
            double bk = pl.bubble > 0 ? pl.bubble * kmax / pl.tmax : 0;
            step += stretch * (k + bk);
            pl.bubble += stretch * bk;
            pl.cmax += stretch * kmax;
        }
    }
    /* STRAGGLER_STEP: the whole step waits for a straggling host (a part
     * of its own, MEM4D_METRIC_STRAGGLER_S). */
    double straggle = step;
    step *= 1 + pg->straggle;
    straggle = step - straggle;
    struct m4d_perf_parts *o = &r->perf;
    *o = (struct m4d_perf_parts){
        .step = step,
        .bubble = pl.bubble,
        .m = m,
        .cmax = pl.cmax,
        .straggle = straggle,
        .lmax = pl.lmax,
        .emax = pl.emax,
        .tp = u.layer_tp,
        .tp_dense = (pl.lmax - pl.emax) * (u.dense_tp - u.layer_tp),
        .cp = u.layer_cp,
        .ep = u.layer_ep,
        .expert = u.layer_expert,
        .router = u.layer_router,
        .fsdp = u.layer_fsdp,
        .p2p = pl.p2p,
        .dp = dp,
        .opt = pg->opt_s,
        .gbs = D(x->gbs),
        .s = D(x->s),
        .world = D(x->world),
        .flops_per_seq = pg->flops_per_seq,
        .exec_flops_per_seq = pg->exec_flops_per_seq,
        .kernel_share = pg->kernel_share,
        .peak = pg->peak,
        .band_lo = pg->band_lo,
        .band_hi = pg->band_hi,
    };
    r->have_metrics = true;
}

double m4d_perf_executed_share(const struct m4d_perf_parts *p)
{
    return p->exec_flops_per_seq * p->gbs / (p->step * p->world * p->peak);
}

void m4d_perf_metrics(const struct m4d_perf_parts *p, double o[M4D_NMETRICS])
{
    double step = p->step, m = p->m;
    double tflops = p->flops_per_seq * p->gbs / (step * 1e12 * p->world);
    o[MEM4D_METRIC_STEP_TIME_S] = step;
    o[MEM4D_METRIC_TOKENS_PER_S] = p->gbs * p->s / step;
    o[MEM4D_METRIC_TFLOPS_PER_GPU] = tflops;
    o[MEM4D_METRIC_MFU] = tflops * 1e12 / p->peak;
    o[MEM4D_METRIC_BUBBLE_FRACTION] = p->bubble / step;
    o[MEM4D_METRIC_COMPUTE_TIME_S] = m * p->cmax;
    double ml = m * p->lmax;
    o[MEM4D_METRIC_TP_COMM_S] = ml * p->tp + m * p->tp_dense;
    o[MEM4D_METRIC_CP_COMM_S] = ml * p->cp;
    o[MEM4D_METRIC_EP_COMM_S] = m * p->emax * p->ep;
    o[MEM4D_METRIC_EXPERT_COMPUTE_S] = m * p->emax * p->expert;
    o[MEM4D_METRIC_ROUTER_PERMUTE_S] = m * p->emax * p->router;
    o[MEM4D_METRIC_PP_COMM_S] = m * p->p2p;
    o[MEM4D_METRIC_DP_COMM_S] = p->dp + ml * p->fsdp;
    o[MEM4D_METRIC_BUBBLE_S] = p->bubble;
    o[MEM4D_METRIC_OPTIMIZER_S] = p->opt;
    double lo = p->band_lo, hi = p->band_hi, run = m4d_perf_executed_share(p);
    /* The band is of a measured run, none faster than the FLOPs it executes
     * at the peak: its fast end stops where they would run at the peak, or
     * at the prediction where that, or a kernel's charged rate, is beyond
     * the peak (m4d_perf_warn says so). Not at MFU 1: MFU counts work the
     * kernels do not run (the full s x s attention, every key of a window).
     * doc/perf.md, "Uncertainty". */
    double stop = run < 1 && p->kernel_share <= 1 ? run : 1;
    if (lo < stop)
        lo = stop;
    o[MEM4D_METRIC_STEP_TIME_LOW_S] = step * lo;
    o[MEM4D_METRIC_STEP_TIME_HIGH_S] = step * hi;
    o[MEM4D_METRIC_TOKENS_PER_S_LOW] = o[MEM4D_METRIC_TOKENS_PER_S] / hi;
    o[MEM4D_METRIC_TOKENS_PER_S_HIGH] = o[MEM4D_METRIC_TOKENS_PER_S] / lo;
    o[MEM4D_METRIC_TFLOPS_PER_GPU_LOW] = tflops / hi;
    o[MEM4D_METRIC_TFLOPS_PER_GPU_HIGH] = tflops / lo;
    o[MEM4D_METRIC_MFU_LOW] = o[MEM4D_METRIC_MFU] / hi;
    o[MEM4D_METRIC_MFU_HIGH] = o[MEM4D_METRIC_MFU] / lo;
    o[MEM4D_METRIC_MFU_PEAK_FLOPS] = p->peak;
    o[MEM4D_METRIC_STRAGGLER_S] = p->straggle;
    o[MEM4D_METRIC_EXPOSED_COMM_S] = o[MEM4D_METRIC_TP_COMM_S] + o[MEM4D_METRIC_CP_COMM_S] +
                                     o[MEM4D_METRIC_EP_COMM_S] + o[MEM4D_METRIC_PP_COMM_S] +
                                     o[MEM4D_METRIC_DP_COMM_S];
}

void m4d_perf_warn(mem4d_report *r)
{
    if (!r->have_metrics || r->nwarn >= M4D_MAX_WARN)
        return;
    double o[M4D_NMETRICS];
    m4d_perf_metrics(&r->perf, o);
    double mfu = o[MEM4D_METRIC_MFU], run = m4d_perf_executed_share(&r->perf);
    if (run > 1 || r->perf.kernel_share > 1)
        m4d_msg(r->warn[r->nwarn++], sizeof r->warn[0],
                 "speed: above the peak: the device's efficiencies run a kernel at %.1f%% of the GPU's peak and "
                 "the step's work at %.1f%% (MFU %.1f%%), which no run sustains; the band's fast end is the "
                 "prediction",
                 100 * r->perf.kernel_share, 100 * run, 100 * mfu);
    else if (mfu > 1)
        m4d_msg(r->warn[r->nwarn++], sizeof r->warn[0],
                 "speed: MFU %.1f%% is Megatron's count, which charges the full s x s attention over every "
                 "earlier key, more than the kernels run; the work they run is %.1f%% of the peak",
                 100 * mfu, 100 * run);
}

void m4d_perf_fill(const struct m4d_ctx *x, const struct m4d_perf_group *pg, mem4d_report *r)
{
    m4d_perf_fill_memo(x, pg, NULL, r);
}

void m4d_perf(const struct m4d_ctx *x, const mem4d_device *dev, mem4d_report *r)
{
    struct m4d_perf_group pg;
    m4d_perf_prepare(x, dev, NULL, NULL, &pg);
    m4d_perf_fill(x, &pg, r);
}

double m4d_gemm_mnk(const struct m4d_machine *mc, double m, double n, double k, double rate, double eb,
                    double streams)
{
    return m4d_gemm_tiles(mc, m, ceil_q(m * (1.0 / TILE_M)), n, k, rate, eb, streams);
}

/* A GEMM whose m rows spread about their mean with standard deviation sd
 * (uniform on m ± √3·sd, the spread of that variance): the mean of its
 * time over the whole row tiles its rows take, each tile count weighted by
 * the share of the spread that needs it (the wave quantisation is not
 * linear in the tiles: the mean tile count would put every GEMM on a wave
 * boundary that only some cross). */
double m4d_gemm_spread(const struct m4d_machine *mc, double m, double sd, double n, double k, double rate, double eb,
                       double streams)
{
    double a = 1.7320508075688772 * sd, lo = m > a ? m - a : 0, hi = m + a;
    double j0 = ceil_q(lo * (1.0 / TILE_M)), j1 = ceil_q(hi * (1.0 / TILE_M));
    if (hi - lo < 1e-6)
        return m4d_gemm_mnk(mc, m, n, k, rate, eb, streams);
    if (j1 - j0 > 8) /* a spread over many tiles: half a tile of padding on average */
        return m4d_gemm_tiles(mc, m, m * (1.0 / TILE_M) + 0.5, n, k, rate, eb, streams);
    double t = 0;
    for (double j = j0 > 0 ? j0 : 1; j <= j1; j++) {
        double from = MAX(lo, (j - 1) * TILE_M), to = hi < j * TILE_M ? hi : j * TILE_M;
        if (to > from)
            t += (to - from) * m4d_gemm_tiles(mc, m, j, n, k, rate, eb, streams);
    }
    return t / (hi - lo);
}

double m4d_gemm_tiles(const struct m4d_machine *mc, double m, double tm, double n, double k, double rate, double eb,
                      double streams)
{
    double tn = ceil_q(n * (1.0 / TILE_N)), tiles = streams * tm * tn;
    if (tiles <= 0)
        return 0;
    /* a partial tile, of rows or of columns, runs as long as a whole one in its wave */
    double compute =
        streams * 2 * tm * TILE_M * tn * TILE_N * (k + K_FILL * 2 / eb) / rate * wave_slots(mc, tiles) / tiles;
    double memory = streams * (eb * (m * k + k * n) + 2 * m * n) * mc->inv_hbm;
    return MAX(compute, memory);
}
