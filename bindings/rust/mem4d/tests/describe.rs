// SPDX-License-Identifier: MIT
//! The generated copies of the header (mem4d-sys, and the safe crate's enums)
//! agree with the library under test, as it describes itself.
//! `scripts/gen-bindings.py --check` proves they match the header; this proves
//! the library linked here was built from that header.

use std::ffi::CStr;
use std::os::raw::c_char;

use mem4d::{
    sys, Device, Info, Layout, Metric, Mode, Model, ParamKind, SearchOption, SearchStat, Status, Term, Verdict,
};

fn text(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        // SAFETY: the library returns static NUL-terminated strings.
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }
}

/// "StepTimeS" -> "step_time_s" (the library's names are the enum's, lower case).
fn snake(debug: &str) -> String {
    let mut out = String::new();
    for (i, ch) in debug.chars().enumerate() {
        if ch.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(ch.to_ascii_lowercase());
    }
    out
}

#[test]
fn version_and_status_names() {
    // SAFETY: plain queries of static data.
    unsafe {
        assert_eq!(sys::mem4d_version_number(), sys::MEM4D_VERSION_NUMBER);
        assert_eq!(sys::mem4d_status_count(), sys::MEM4D_STATUS_NAMES.len());
        for (i, name) in sys::MEM4D_STATUS_NAMES.iter().enumerate() {
            assert_eq!(text(sys::mem4d_status_name(i as i32)).as_deref(), Some(*name));
        }
    }
    assert_eq!(mem4d::library_version(), "0.2.0");
    assert_eq!(Status::E_RANGE.name(), "E_RANGE");
}

#[test]
fn enums_match_the_library() {
    // SAFETY: plain queries of static data.
    unsafe {
        assert_eq!(sys::mem4d_term_count(), Term::ALL.len());
        assert_eq!(sys::mem4d_info_count(), Info::ALL.len());
        for v in Info::ALL {
            assert_eq!(text(sys::mem4d_info_name(v as i32)), Some(snake(&format!("{v:?}"))));
        }
        assert_eq!(sys::mem4d_metric_count(), Metric::ALL.len());
        for v in Metric::ALL {
            assert_eq!(text(sys::mem4d_metric_name(v as i32)), Some(snake(&format!("{v:?}"))));
        }
        assert_eq!(sys::mem4d_search_option_count(), SearchOption::ALL.len());
        for v in SearchOption::ALL {
            assert_eq!(text(sys::mem4d_search_option_name(v as i32)), Some(snake(&format!("{v:?}"))));
        }
        assert_eq!(sys::mem4d_search_stat_count(), SearchStat::ALL.len());
        for v in SearchStat::ALL {
            assert_eq!(text(sys::mem4d_search_stat_name(v as i32)), Some(snake(&format!("{v:?}"))));
        }
    }
}

#[test]
fn stage_has_every_term() {
    let report = mem4d::estimate(
        &mem4d::Model::preset("llama3.1-8b").unwrap(),
        &mem4d::Layout::with(&[("tp", 2), ("world", 8), ("seq", 4096)]).unwrap(),
        &mem4d::Device::preset("h100-80").unwrap(),
    )
    .unwrap();
    let stage = report.stage(0).unwrap();
    assert_eq!(stage.total, report.get(0, Term::Total).unwrap());
    assert_eq!(stage.peak_reserved, report.get(0, Term::PeakReserved).unwrap());
    assert_eq!(stage.weights, report.get(0, Term::Weights).unwrap());
}

#[test]
fn parameters_describe_themselves() {
    assert_eq!(Layout::param_kind("tp").unwrap(), ParamKind::Integer);
    assert_eq!(Layout::param_kind("sequence_parallel").unwrap(), ParamKind::Boolean);
    assert_eq!(Layout::param_kind("recompute").unwrap(), ParamKind::Choice);
    assert_eq!(Layout::param_kind("main_grad_bytes").unwrap(), ParamKind::Width);
    assert_eq!(Model::param_kind("normalization").unwrap(), ParamKind::Choice);
    assert_eq!(Device::param_kind("memory_bytes").unwrap(), ParamKind::Bytes);
    assert_eq!(Device::param_kind("fit_threshold_ppm").unwrap(), ParamKind::Ppm);
    assert_eq!(Device::param_kind("peak_flops").unwrap(), ParamKind::Flops);
    assert_eq!(Device::param_kind("hbm_bandwidth").unwrap(), ParamKind::BytesPerS);
    assert_eq!(Device::param_kind("intra_node_latency_ns").unwrap(), ParamKind::Nanoseconds);
    assert_eq!(Layout::param_default("vocab_divisor").unwrap(), 128);
    assert_eq!(Device::param_default("gpus_per_node").unwrap(), 8);
    assert_eq!(Layout::param_kind("no_such_key").unwrap_err().status, Status::E_UNKNOWN_KEY);
    // Every key has a kind this crate knows, and its default is what a new object holds.
    let fresh = Layout::new().unwrap();
    for key in Layout::keys() {
        assert!(!matches!(Layout::param_kind(&key).unwrap(), ParamKind::Other(_)), "{key}");
        assert_eq!(Layout::param_default(&key).unwrap(), fresh.get(&key).unwrap(), "{key}");
    }
}

#[test]
fn open_enums_keep_unknown_values() {
    assert_eq!(Mode::from_raw(sys::MEM4D_MODE_PAPER), Mode::Paper);
    assert_eq!(Mode::from_raw(99), Mode::Other(99));
    assert_eq!(Mode::Other(99).raw(), 99);
    assert_eq!(Verdict::Tight.raw(), sys::MEM4D_VERDICT_TIGHT);
    assert_eq!(Verdict::Oom.to_string(), "oom");
    assert_eq!(ParamKind::from_raw(sys::MEM4D_KIND_BYTES_PER_S), ParamKind::BytesPerS);
}
