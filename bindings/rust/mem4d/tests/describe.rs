// SPDX-License-Identifier: MIT
//! The generated copies of the header (mem4d-sys, and the safe crate's enums)
//! agree with the library under test, as it describes itself.
//! `scripts/gen-bindings.py --check` proves they match the header; this proves
//! the library linked here was built from that header.

use std::ffi::CStr;
use std::os::raw::c_char;

use mem4d::{sys, Info, Metric, SearchOption, SearchStat, Status, Term};

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
