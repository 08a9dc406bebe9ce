// SPDX-License-Identifier: MIT
//! No memory leak over 100k create/estimate/drop cycles.
//!
//! Resident memory (VmRSS) is read before and after. Leaking one model handle
//! (about 200 bytes) per cycle would add some 20 MB; a report, gigabytes.
//! One test function only: the harness's other threads would blur RSS.

mod common;

use common::rss_bytes;
use mem4d::{estimate, import_megatron, Device, Layout, Model, Report, Search, SearchOption, Status};

const CYCLES: usize = 100_000;
const ALLOWANCE: u64 = 4 << 20;

fn cycle() -> u64 {
    let model = Model::preset("llama3.1-8b").unwrap();
    let mut layout = Layout::with(&[("tp", 2), ("world", 4), ("seq", 8192)]).unwrap();
    layout.set_str("mode", "paper").unwrap();
    let device = Device::preset("h100-80").unwrap();
    let report = estimate(&model, &layout, &device).unwrap();
    report.stages().unwrap()[0].total
}

fn failing_cycle() -> Status {
    let model = Model::preset("llama3.1-8b").unwrap();
    let layout = Layout::with(&[("tp", 3), ("world", 3), ("seq", 8192)]).unwrap();
    let device = Device::preset("h100-80").unwrap();
    estimate(&model, &layout, &device).unwrap_err().status
}

fn search_cycle() -> u64 {
    let model = Model::preset("llama3.1-8b").unwrap();
    let device = Device::preset("h100-80").unwrap();
    let base = Layout::with(&[("world", 16), ("seq", 8192), ("gbs", 512)]).unwrap();
    let mut search = Search::new(&model, &device, &base).unwrap();
    search.option(SearchOption::Ranked, 0).unwrap().option(SearchOption::MaxResults, 2).unwrap();
    search.map(|p| p.unwrap().report.peak_bytes()).sum()
}

fn import_cycle() -> u64 {
    let args = ["--num-layers", "32", "--hidden-size", "4096", "--tensor-model-parallel-size", "2"];
    import_megatron(&args, None, 8).unwrap().layout.get("tp").unwrap()
}

fn growth(cycles: usize, f: impl Fn()) -> u64 {
    for _ in 0..2000 {
        f();
    }
    let before = rss_bytes();
    for _ in 0..cycles {
        f();
    }
    rss_bytes().saturating_sub(before)
}

#[test]
fn create_estimate_drop_cycles_do_not_leak() {
    let first = cycle();
    let grew = growth(CYCLES, || assert_eq!(cycle(), first));
    println!("resident memory grew {grew} bytes over {CYCLES} estimate cycles");
    assert!(grew < ALLOWANCE, "grew {grew} bytes over {CYCLES} cycles");

    let grew = growth(CYCLES, || assert_eq!(failing_cycle(), Status::E_HEADS_TP));
    println!("resident memory grew {grew} bytes over {CYCLES} failing cycles");
    assert!(grew < ALLOWANCE, "grew {grew} bytes over {CYCLES} failing cycles");

    let first = search_cycle();
    assert!(first > 0);
    let grew = growth(CYCLES / 10, || assert_eq!(search_cycle(), first));
    println!("resident memory grew {grew} bytes over {} search cycles", CYCLES / 10);
    assert!(grew < ALLOWANCE, "search: grew {grew} bytes");

    let grew = growth(CYCLES / 10, || assert_eq!(import_cycle(), 2));
    println!("resident memory grew {grew} bytes over {} import cycles", CYCLES / 10);
    assert!(grew < ALLOWANCE, "import: grew {grew} bytes");

    // The measure itself can fail: forgetting 2000 reports is seen.
    let before = rss_bytes();
    for _ in 0..2000 {
        std::mem::forget(Report::new().unwrap());
    }
    assert!(rss_bytes() - before > ALLOWANCE);
}
