// SPDX-License-Identifier: MIT
//! Print the memory of every pipeline stage of Llama-3.1-70B on H100-80GB,
//! tp 8 pp 4 dp 2, micro-batch 1, sequence 8192: the same table as
//!
//!     mem4d estimate --model llama3.1-70b --gpu h100-80 --tp 8 --pp 4 --dp 2 --mbs 1 --seq 8192
//!
//! Run: MEM4D_LIB_DIR=build/lib cargo run --offline --example estimate

use std::io::{self, Write};
use std::process::ExitCode;

use mem4d::{estimate, Device, Info, Layout, Metric, Model, Report, GIB};

fn gib(bytes: u64) -> f64 {
    bytes as f64 / GIB
}

/// The CLI's table (cli/print_report.c, cli_print_report).
fn print_report(
    out: &mut impl Write,
    model: &Model,
    layout: &Layout,
    device: &Device,
    r: &Report,
) -> mem4d::Result<()> {
    let key = |k: &str| layout.get(k);
    writeln!(
        out,
        "{} on {}, tp {} cp {} pp {} dp {}, micro-batch {}, sequence {}, {} mode",
        model.name(),
        device.name(),
        key("tp")?,
        key("cp")?,
        key("pp")?,
        r.info(Info::Dp)?,
        key("mbs")?,
        key("seq")?,
        r.mode()
    )
    .ok();
    writeln!(
        out,
        "{:>5} {:>8} {:>9} {:>9} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "stage", "layers", "weights", "grads", "optimizer", "activ.", "overhead", "allocated", "reserved", "total"
    )
    .ok();
    for (i, s) in r.stages()?.iter().enumerate() {
        let peak = if i as u32 == r.peak_stage() { "  <- peak" } else { "" };
        writeln!(
            out,
            "{:5} {:8} {:9.2} {:9.2} {:11.2} {:9.2} {:9.2} {:9.2} {:9.2} {:9.2}{}",
            i,
            s.layers,
            gib(s.weights),
            gib(s.gradients),
            gib(s.optimizer),
            gib(s.activations),
            gib(s.overhead),
            gib(s.peak_allocated),
            gib(s.peak_reserved),
            gib(s.total),
            peak
        )
        .ok();
    }
    let (dev, peak) = (r.device_bytes(), r.peak_bytes());
    let share = if dev != 0 { 100.0 * peak as f64 / dev as f64 } else { 0.0 };
    let (alloc, resv) = r.peak_allocated_reserved()?;
    writeln!(out, "GiB. allocated = torch.cuda.max_memory_allocated, reserved = max_memory_reserved; total adds the")
        .ok();
    writeln!(
        out,
        "CUDA context and NCCL. peak {:.2} GiB (allocated {:.2}, reserved {:.2}) of {:.2} GiB ({:.1}%): {}",
        gib(peak),
        gib(alloc),
        gib(resv),
        gib(dev),
        share,
        r.verdict()
    )
    .ok();
    let params = r.info(Info::ModelParams)?;
    write!(out, "model: {} parameters ({:.2} B). stages peak at:", params, params as f64 / 1e9).ok();
    // Consecutive stages of one moment as a range.
    let stages = r.stages()?;
    let mut first = 0;
    for (i, s) in stages.iter().enumerate() {
        if i + 1 < stages.len() && stages[i + 1].peak_moment == s.peak_moment {
            continue;
        }
        let sep = if first > 0 { "," } else { "" };
        if first == i {
            write!(out, "{} stage {} {}", sep, i, s.peak_moment_name()).ok();
        } else {
            write!(out, "{} stages {}-{} {}", sep, first, i, s.peak_moment_name()).ok();
        }
        first = i + 1;
    }
    writeln!(out).ok();
    // Which attention runs: fused (flash) and its kernel, or softmax attention and its softmax.
    let kernel = r.attention_kernel_name()?;
    if kernel != "unfused" {
        writeln!(out, "attention: fused (flash) attention, kernel {}", kernel).ok();
    } else if r.info(Info::SoftmaxFallback)? == 0 {
        writeln!(out, "attention: softmax attention over the s x s scores (kernel unfused), the stack's fused softmax")
            .ok();
    } else {
        writeln!(
            out,
            "attention: softmax attention over the s x s scores (kernel unfused); the stack's fused softmax \
             declines sequence {}, micro-batch {}, {} heads per rank, so PyTorch's fp32 softmax runs \
             (more memory and HBM traffic)",
            key("seq")?,
            key("mbs")?,
            model.get("num_attention_heads")? / key("tp")?
        )
        .ok();
    }
    // The speed and its band need the global batch (layout gbs).
    if r.metric(Metric::StepTimeS)?.is_none() {
        let why = if device.get("peak_flops")? != 0 {
            "give --gbs, the global batch (the step is its micro-batches)"
        } else {
            "the device has no peak_flops (set it: --device-set peak_flops=..., or in the device file)"
        };
        writeln!(out, "speed: not predicted: {}", why).ok();
    }
    for w in r.warnings() {
        writeln!(out, "warning: {}", w).ok();
    }
    Ok(())
}

fn run() -> mem4d::Result<()> {
    let model = Model::preset("llama3.1-70b")?;
    let layout = Layout::with(&[("tp", 8), ("pp", 4), ("dp", 2), ("mbs", 1), ("seq", 8192)])?;
    let device = Device::preset("h100-80")?;
    let report = estimate(&model, &layout, &device)?;
    print_report(&mut io::stdout().lock(), &model, &layout, &device, &report)
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("estimate: {err}");
            ExitCode::FAILURE
        }
    }
}
