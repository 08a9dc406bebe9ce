// SPDX-License-Identifier: MIT
//! The Search iterator yields exactly what the C search yields.

mod common;

use std::ptr;

use common::llama8b;
use mem4d::{estimate, sys, Device, Layout, Model, Report, Search, SearchOption, SearchStat, Status};

const KNOBS: [&str; 8] = ["tp", "cp", "pp", "dp", "mbs", "vpp", "recompute", "dist_opt"];

type Row = (Vec<u64>, u64);

fn base() -> Layout {
    Layout::with(&[("world", 16), ("seq", 8192), ("gbs", 512)]).unwrap()
}

fn knobs(layout: &Layout) -> Vec<u64> {
    KNOBS.iter().map(|k| layout.get(k).unwrap()).collect()
}

/// The same search straight through mem4d-sys.
fn c_search(model: &Model, device: &Device, fits_only: u64, tp_max: u64) -> Vec<Row> {
    let base = base();
    let (mut layout, mut report) = (Layout::new().unwrap(), Report::new().unwrap());
    let mut rows = Vec::new();
    // SAFETY: live handles; the search is freed before returning.
    unsafe {
        let mut s = ptr::null_mut();
        assert_eq!(sys::mem4d_search_new(model.as_ptr(), device.as_ptr(), base.as_ptr(), &mut s), 0);
        assert_eq!(sys::mem4d_search_set_option(s, sys::MEM4D_SEARCH_FITS_ONLY, fits_only), 0);
        assert_eq!(sys::mem4d_search_bound(s, sys::MEM4D_LAYOUT_TP, 1, tp_max), 0);
        loop {
            let code = sys::mem4d_search_next(s, layout.as_mut_ptr(), report.as_mut_ptr());
            if code == sys::MEM4D_END {
                break;
            }
            assert_eq!(code, 0);
            rows.push((knobs(&layout), sys::mem4d_report_peak_bytes(report.as_ptr())));
        }
        sys::mem4d_search_free(s);
    }
    rows
}

fn search(model: &Model, device: &Device) -> Search {
    Search::new(model, device, &base()).unwrap()
}

#[test]
fn iterator_agrees_with_c_search() {
    let (model, device) = (llama8b(), Device::preset("h100-80").unwrap());
    for (fits_only, tp_max) in [(1, 8), (0, 8), (1, 2)] {
        let mut s = search(&model, &device);
        s.option(SearchOption::FitsOnly, fits_only).unwrap().bound("tp", 1, tp_max).unwrap();
        let rows: Vec<Row> = s.map(|p| p.unwrap()).map(|p| (knobs(&p.layout), p.report.peak_bytes())).collect();
        assert!(!rows.is_empty());
        assert_eq!(rows, c_search(&model, &device, fits_only, tp_max), "fits_only {fits_only} tp <= {tp_max}");
    }
}

#[test]
fn each_plan_is_its_own_estimate() {
    let (model, device) = (llama8b(), Device::preset("h100-80").unwrap());
    let mut s = search(&model, &device);
    s.option(SearchOption::MaxResults, 10).unwrap();
    let plans: Vec<_> = s.collect::<Result<_, _>>().unwrap();
    assert_eq!(plans.len(), 10);
    for p in &plans {
        let again = estimate(&model, &p.layout, &device).unwrap();
        assert_eq!(again.stages().unwrap(), p.report.stages().unwrap());
        assert_eq!(p.layout.get("world").unwrap(), 16);
    }
}

#[test]
fn allow_sets_stats_and_reset() {
    let (model, device) = (llama8b(), Device::preset("h100-80").unwrap());
    let mut s = search(&model, &device);
    s.allow("mbs", &[1, 2]).unwrap().bound("pp", 1, 1).unwrap();
    let n = s
        .by_ref()
        .map(|p| p.unwrap())
        .inspect(|p| {
            assert!([1, 2].contains(&p.layout.get("mbs").unwrap()));
            assert_eq!(p.layout.get("pp").unwrap(), 1);
        })
        .count();
    assert!(n > 0);
    assert_eq!(s.stat(SearchStat::Yielded).unwrap(), n as u64);
    s.reset().unwrap();
    assert_eq!(s.stat(SearchStat::Yielded).unwrap(), 0);
    assert_eq!(s.count(), n);
}

#[test]
fn bad_constraints() {
    let (model, device) = (llama8b(), Device::preset("h100-80").unwrap());
    let mut s = search(&model, &device);
    assert_eq!(s.bound("tp", 4, 2).unwrap_err().status, Status::E_RANGE);
    assert_eq!(s.bound("seq", 1, 2).unwrap_err().status, Status::E_UNSUPPORTED);
    assert_eq!(s.bound("nonsense", 1, 2).unwrap_err().status, Status::E_UNKNOWN_KEY);
    let missing = Search::new(&model, &device, &Layout::new().unwrap()).err().unwrap();
    assert_eq!(missing.status, Status::E_MISSING);
}

#[test]
fn max_micro_batch_is_the_edge() {
    let (model, device) = (llama8b(), Device::preset("h100-80").unwrap());
    let mut layout = Layout::with(&[("tp", 2), ("dp", 4), ("seq", 8192)]).unwrap();
    let best = mem4d::max_micro_batch(&model, &layout, &device).unwrap();
    assert!(best > 0);
    layout.set("mbs", best).unwrap();
    assert_eq!(estimate(&model, &layout, &device).unwrap().verdict(), mem4d::Verdict::Fits);
    layout.set("mbs", best + 1).unwrap();
    assert_ne!(estimate(&model, &layout, &device).unwrap().verdict(), mem4d::Verdict::Fits);
}

#[test]
fn iterator_agrees_with_cli_plan_json() {
    let args = [
        "plan",
        "--model",
        "llama3.1-8b",
        "--gpu",
        "h100-80",
        "--gpus",
        "16",
        "--seq",
        "8192",
        "--gbs",
        "512",
        "--top",
        "0",
        "--json",
    ];
    let json = match common::run_cli(&args) {
        Some(json) => json,
        None => return,
    };
    let (model, device) = (llama8b(), Device::preset("h100-80").unwrap());
    // `mem4d plan` lists the layouts equivalent to the fastest first (the tie-break).
    let mut s = search(&model, &device);
    s.option(SearchOption::TieBreak, 1).unwrap();
    let plans: Vec<_> = s.collect::<Result<_, _>>().unwrap();
    assert!(!plans.is_empty());
    for key in ["tp", "cp", "pp", "dp", "mbs", "vpp"] {
        let ours: Vec<u64> = plans.iter().map(|p| p.layout.get(key).unwrap()).collect();
        assert_eq!(common::json_numbers(&json, key), ours, "{key}");
    }
    let peaks: Vec<u64> = plans.iter().map(|p| p.report.peak_bytes()).collect();
    assert_eq!(common::json_numbers(&json, "peak_bytes"), peaks);
    // Each row says whether it is equivalent to the fastest, as plan --json marks it.
    let marked: Vec<bool> = json
        .match_indices("\"equivalent_to_fastest\": ")
        .map(|(at, m)| json[at + m.len()..].starts_with("true"))
        .collect();
    let ours: Vec<bool> = plans.iter().map(|p| p.equivalent_to_fastest).collect();
    assert_eq!(marked, ours);
    assert!(ours.iter().filter(|&&e| e).count() > 1, "the flag is tried where it varies");
}

#[test]
fn plans_are_equivalent_only_with_the_tie_break() {
    let (model, device) = (llama8b(), Device::preset("h100-80").unwrap());
    let mut s = search(&model, &device);
    s.option(SearchOption::TieBreak, 1).unwrap();
    let plans: Vec<_> = s.by_ref().collect::<Result<_, _>>().unwrap();
    let eq = s.stat(SearchStat::Equivalent).unwrap() as usize;
    assert!(eq >= 1);
    assert!(plans.iter().enumerate().all(|(i, p)| p.equivalent_to_fastest == (i < eq)));
    s.reset().unwrap();
    assert!(s.next().unwrap().unwrap().equivalent_to_fastest);
    assert!(search(&model, &device).all(|p| !p.unwrap().equivalent_to_fastest));
}
