// SPDX-License-Identifier: MIT
//! Estimates through the safe crate: golden values, identities, agreement with the CLI.

mod common;

use common::{json_numbers, llama8b, paper, run_cli, GIB};
use mem4d::{estimate, Device, Info, Layout, Mode, Model, Report, Term, Verdict};

/// estimator-notes.md section 2 (Llama-3.1-8B, s 8192): tp, cp, pp, mbs, world, dp,
/// weights+optimizer GiB, activations GiB, parameters on the rank (0: not given).
type GoldenRow = (u64, u64, u64, u64, u64, u64, f64, f64, u64);
const GOLDEN: [GoldenRow; 4] = [
    (2, 1, 1, 1, 4, 2, 44.87260437011719, 22.64453125, 4015132672),
    (1, 2, 1, 1, 4, 2, 67.30887222290039, 22.64453125, 8030261248),
    (2, 1, 2, 1, 128, 32, 11.919273376464844, 20.75, 2007564288),
    (2, 2, 1, 2, 128, 32, 23.137436628341675, 22.64453125, 0),
];

#[test]
fn paper_golden_values() {
    let model = llama8b();
    let device = Device::preset("h100-80").unwrap();
    for (tp, cp, pp, mbs, world, dp, w_gib, a_gib, params) in GOLDEN {
        let layout = paper(&[("tp", tp), ("cp", cp), ("pp", pp), ("mbs", mbs), ("world", world), ("seq", 8192)]);
        let r = estimate(&model, &layout, &device).unwrap();
        assert_eq!(r.mode(), Mode::Paper);
        assert_eq!(r.num_stages(), 1);
        assert_eq!(r.info(Info::Dp).unwrap(), dp);
        let s = r.stage(0).unwrap();
        let w = (s.weights + s.gradients + s.optimizer) as f64 / GIB;
        assert!((w - w_gib).abs() <= 1e-9, "tp {tp} cp {cp} pp {pp}: weights+optimizer {w} GiB, want {w_gib}");
        let a = s.activations as f64 / GIB;
        assert!((a - a_gib).abs() <= 1e-9, "tp {tp} cp {cp} pp {pp}: activations {a} GiB, want {a_gib}");
        assert_eq!(s.total, s.weights + s.gradients + s.optimizer + s.activations);
        if params != 0 {
            assert_eq!(s.params, params);
        }
    }
}

#[test]
fn model_parameter_count() {
    assert_eq!(llama8b().num_params().unwrap(), 8_030_261_248);
}

#[test]
fn verdicts() {
    let model = llama8b();
    let layout = paper(&[("tp", 2), ("world", 4), ("seq", 8192)]);
    let verdict = |gpu| estimate(&model, &layout, &Device::preset(gpu).unwrap()).unwrap().verdict();
    assert_eq!(verdict("h100-80"), Verdict::Tight);
    assert_eq!(verdict("h200-141"), Verdict::Fits);
    assert_eq!(verdict("a100-40"), Verdict::Oom);
    assert_eq!(Verdict::Tight.to_string(), "tight");
}

#[test]
fn full_mode_identities() {
    let model = Model::preset("llama3.1-70b").unwrap();
    let layout = Layout::with(&[("tp", 8), ("pp", 4), ("dp", 2), ("mbs", 1), ("seq", 8192), ("gbs", 64)]).unwrap();
    let r = estimate(&model, &layout, &Device::preset("h100-80").unwrap()).unwrap();
    assert_eq!(r.mode(), Mode::Full);
    let stages = r.stages().unwrap();
    assert_eq!(stages.len(), 4);
    assert_eq!(stages.iter().map(|s| s.layers).sum::<u64>(), 80);
    for s in &stages {
        assert_eq!(s.total, s.weights + s.gradients + s.optimizer + s.activations + s.overhead);
        assert_eq!(s.overhead, s.buffers + s.fragmentation + s.fixed);
        assert_eq!(s.peak_allocated, s.total - s.fragmentation - s.fixed);
        assert_eq!(s.peak_reserved, s.peak_allocated + s.fragmentation);
    }
    assert_eq!(r.peak_bytes(), stages.iter().map(|s| s.total).max().unwrap());
    assert_eq!(r.info(Info::Microbatches).unwrap(), 32);
    assert!(r.metric(mem4d::Metric::StepTimeS).unwrap().unwrap() > 0.0);
    assert!(r.get(4, Term::Total).is_err());
}

#[test]
fn report_reuse() {
    let model = llama8b();
    let device = Device::preset("h100-80").unwrap();
    let a = paper(&[("tp", 2), ("world", 4), ("seq", 8192)]);
    let b = paper(&[("cp", 2), ("world", 4), ("seq", 8192)]);
    let mut r = Report::new().unwrap();
    r.estimate(&model, &a, &device).unwrap();
    let first = r.stages().unwrap();
    r.estimate(&model, &b, &device).unwrap();
    assert_ne!(r.stages().unwrap(), first);
    r.estimate(&model, &a, &device).unwrap();
    assert_eq!(r.stages().unwrap(), first);
}

/// The report says which attention ran, as estimate --json does, where the layout's
/// flash_attn reads its default 1 whatever the device's stack runs.
#[test]
fn report_says_which_attention_ran() {
    type Case<'a> = (&'a str, &'a [&'a str], u64, u64, &'a str, bool);
    let cases: [Case; 4] = [
        ("h100-80", &[], 2, 8192, "cudnn", false),
        ("a100-80", &["attention_kernel=fa3"], 2, 8192, "fa2", false),
        ("h100-80", &["stack=megatron-deepspeed"], 2, 4096, "unfused", true),
        ("a100-80", &["stack=megatron-deepspeed-bigscience-2022-02"], 4, 2048, "unfused", true),
    ];
    for (gpu, dev, tp, seq, kernel, fallback) in cases {
        let layout = Layout::with(&[("tp", tp), ("world", 8), ("gbs", 64), ("seq", seq)]).unwrap();
        assert_eq!(layout.get("flash_attn").unwrap(), 1);
        let mut device = Device::preset(gpu).unwrap();
        for kv in dev {
            let (k, v) = kv.split_once('=').unwrap();
            device.set_str(k, v).unwrap();
        }
        let r = estimate(&llama8b(), &layout, &device).unwrap();
        assert_eq!(r.attention_kernel_name().unwrap(), kernel, "{gpu} {dev:?}");
        assert_eq!(r.info(Info::SoftmaxFallback).unwrap(), fallback as u64, "{gpu} {dev:?}");
        let (tp, seq) = (tp.to_string(), seq.to_string());
        let mut args = vec!["estimate", "--model", "llama3.1-8b", "--gpu", gpu, "--tp", &tp, "--world", "8"];
        args.extend_from_slice(&["--gbs", "64", "--seq", &seq, "--json"]);
        for kv in dev {
            args.extend_from_slice(&["--device-set", kv]);
        }
        if let Some(json) = run_cli(&args) {
            assert!(json.contains(&format!("\"attention_kernel\": \"{kernel}\", \"softmax_fallback\": {fallback}")));
        }
    }
}

#[test]
fn agrees_with_cli_json() {
    type Case<'a> = (&'a str, &'a [(&'a str, u64)], &'a [&'a str]);
    let cases: [Case; 3] = [
        (
            "llama3.1-70b",
            &[("tp", 8), ("pp", 4), ("dp", 2), ("mbs", 1), ("seq", 8192)],
            &["--tp", "8", "--pp", "4", "--dp", "2", "--mbs", "1", "--seq", "8192"],
        ),
        (
            "llama3.1-8b",
            &[("tp", 2), ("cp", 2), ("pp", 2), ("dp", 2), ("mbs", 2), ("seq", 16384), ("gbs", 64)],
            &["--tp", "2", "--cp", "2", "--pp", "2", "--dp", "2", "--mbs", "2", "--seq", "16384", "--gbs", "64"],
        ),
        (
            "qwen2.5-7b",
            &[("tp", 4), ("pp", 2), ("dp", 1), ("mbs", 1), ("seq", 8192), ("vpp", 2), ("gbs", 16)],
            &["--tp", "4", "--pp", "2", "--dp", "1", "--mbs", "1", "--seq", "8192", "--vpp", "2", "--gbs", "16"],
        ),
    ];
    for (preset, keys, flags) in cases {
        let mut args = vec!["estimate", "--model", preset, "--gpu", "h100-80", "--json"];
        args.extend_from_slice(flags);
        let json = match run_cli(&args) {
            Some(json) => json,
            None => return,
        };
        let r = estimate(
            &Model::preset(preset).unwrap(),
            &Layout::with(keys).unwrap(),
            &Device::preset("h100-80").unwrap(),
        )
        .unwrap();
        let stages = r.stages().unwrap();
        assert_eq!(json_numbers(&json, "peak_bytes"), vec![r.peak_bytes()]);
        assert_eq!(json_numbers(&json, "total_bytes"), stages.iter().map(|s| s.total).collect::<Vec<_>>());
        assert_eq!(json_numbers(&json, "weights_bytes"), stages.iter().map(|s| s.weights).collect::<Vec<_>>());
        assert_eq!(json_numbers(&json, "activations_bytes"), stages.iter().map(|s| s.activations).collect::<Vec<_>>());
        assert_eq!(json_numbers(&json, "overhead_bytes"), stages.iter().map(|s| s.overhead).collect::<Vec<_>>());
    }
}

#[test]
fn example_prints_the_cli_table() {
    let expected = match run_cli(&[
        "estimate",
        "--model",
        "llama3.1-70b",
        "--gpu",
        "h100-80",
        "--tp",
        "8",
        "--pp",
        "4",
        "--dp",
        "2",
        "--mbs",
        "1",
        "--seq",
        "8192",
    ]) {
        Some(expected) => expected,
        None => return,
    };
    // cargo test builds the examples next to the test executables' deps/ directory.
    let exe = std::env::current_exe().unwrap();
    let example = exe.parent().unwrap().parent().unwrap().join("examples").join("estimate");
    let out = std::process::Command::new(&example).output().expect("run the estimate example");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
}

#[test]
fn megatron_args_of_a_layout() {
    let model = Model::preset("llama3.1-70b").unwrap();
    let layout = Layout::with(&[("tp", 8), ("pp", 4), ("dp", 2), ("seq", 8192)]).unwrap();
    assert_eq!(
        layout.megatron_args(&model).unwrap(),
        "--tensor-model-parallel-size 8 --context-parallel-size 1 --pipeline-model-parallel-size 4 \
         --micro-batch-size 1 --seq-length 8192 --sequence-parallel --use-distributed-optimizer"
    );
}
