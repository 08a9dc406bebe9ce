#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Print the memory of every pipeline stage of Llama-3.1-70B on H100-80GB,
tp 8 pp 4 dp 2, micro-batch 1, sequence 8192: the same table as

    mem4d estimate --model llama3.1-70b --gpu h100-80 --tp 8 --pp 4 --dp 2 --mbs 1 --seq 8192

Run from a checkout with MEM4D_LIBRARY=build/lib/libmem4d.so.0 (or with the
library installed).
"""

import os
import sys

try:
    import mem4d
except ImportError:  # running from the source tree without installing
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import mem4d


def gib(n):
    return n / mem4d.GIB


def print_report(model, layout, device, report, out=sys.stdout):
    """The CLI's table (cli/print_report.c, cli_print_report)."""
    print(f"{model.name} on {device.name}, tp {layout['tp']} cp {layout['cp']} pp {layout['pp']} "
          f"dp {report.dp}, micro-batch {layout['mbs']}, sequence {layout['seq']}, "
          f"{report.mode} mode", file=out)
    print(f"{'stage':>5} {'layers':>8} {'weights':>9} {'grads':>9} {'optimizer':>11} "
          f"{'activ.':>9} {'overhead':>9} {'allocated':>9} {'reserved':>9} {'total':>9}", file=out)
    for index, s in enumerate(report.stages):
        peak = "  <- peak" if index == report.peak_stage else ""
        print(f"{index:5d} {s.layers:8d} {gib(s.weights):9.2f} {gib(s.gradients):9.2f} "
              f"{gib(s.optimizer):11.2f} {gib(s.activations):9.2f} {gib(s.overhead):9.2f} "
              f"{gib(s.peak_allocated):9.2f} {gib(s.peak_reserved):9.2f} "
              f"{gib(s.total):9.2f}{peak}", file=out)
    share = 100.0 * report.peak_bytes / report.device_bytes if report.device_bytes else 0.0
    print("GiB. allocated = torch.cuda.max_memory_allocated, reserved = max_memory_reserved; "
          "total adds the", file=out)
    print(f"CUDA context and NCCL. peak {gib(report.peak_bytes):.2f} GiB "
          f"(allocated {gib(report.peak_allocated_bytes):.2f}, reserved {gib(report.peak_reserved_bytes):.2f}) "
          f"of {gib(report.device_bytes):.2f} GiB ({share:.1f}%): {report.verdict}", file=out)
    # The moment each stage peaks at, consecutive stages of one moment as a range.
    parts, first = [], 0
    for index, s in enumerate(report.stages):
        if index + 1 < len(report.stages) and report.stages[index + 1].peak_moment == s.peak_moment:
            continue
        name = mem4d.Moment(s.peak_moment).name.lower()
        parts.append(f"stage {index} {name}" if first == index else f"stages {first}-{index} {name}")
        first = index + 1
    print(f"model: {report.model_params} parameters ({report.model_params / 1e9:.2f} B). "
          f"stages peak at: {', '.join(parts)}", file=out)
    # Which attention runs: fused (flash) and its kernel, or softmax attention and its softmax.
    if report.attention_kernel_name != "unfused":
        print(f"attention: fused (flash) attention, kernel {report.attention_kernel_name}", file=out)
    elif not report.softmax_fallback:
        print("attention: softmax attention over the s x s scores (kernel unfused), the stack's fused softmax",
              file=out)
    else:
        print("attention: softmax attention over the s x s scores (kernel unfused); the stack's fused softmax "
              f"declines sequence {layout['seq']}, micro-batch {layout['mbs']}, "
              f"{model['num_attention_heads'] // layout['tp']} heads per rank, so PyTorch's fp32 softmax runs "
              "(more memory and HBM traffic)", file=out)
    if report.metrics is None:  # the speed and its band need the global batch (layout gbs)
        why = ("give --gbs, the global batch (the step is its micro-batches)" if device["peak_flops"] else
               "the device has no peak_flops (set it: --device-set peak_flops=..., or in the device file)")
        print(f"speed: not predicted: {why}", file=out)
    for warning in report.warnings:
        print(f"warning: {warning}", file=out)


def main():
    with mem4d.Model.preset("llama3.1-70b") as model, \
         mem4d.Layout(tp=8, pp=4, dp=2, mbs=1, seq=8192) as layout, \
         mem4d.Device.preset("h100-80") as device:
        try:
            report = mem4d.estimate(model, layout, device)
        except mem4d.Mem4dError as err:
            print(f"estimate: {err}", file=sys.stderr)
            return 1
        print_report(model, layout, device, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
