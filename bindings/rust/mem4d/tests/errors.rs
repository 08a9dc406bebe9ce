// SPDX-License-Identifier: MIT
//! Bad input gives Err with the library's status and sentence.

mod common;

use std::os::raw::c_char;

use common::llama8b;
use mem4d::{estimate, sys, Device, Layout, Model, Status};

fn c_sentence(model: &Model, layout: &Layout) -> (i32, String) {
    let mut why = [0 as c_char; 512];
    // SAFETY: live handles; why is writable for its length.
    let code = unsafe { sys::mem4d_validate(model.as_ptr(), layout.as_ptr(), why.as_mut_ptr(), why.len()) };
    let text = unsafe { std::ffi::CStr::from_ptr(why.as_ptr()) }.to_string_lossy().into_owned();
    (code, text)
}

#[test]
fn unknown_presets_and_keys() {
    let err = Model::preset("gpt-9").unwrap_err();
    assert_eq!(err.status, Status::E_UNKNOWN_PRESET);
    assert!(err.message.contains("gpt-9"), "{err}");
    assert_eq!(Device::preset("tpu-v9").unwrap_err().status, Status::E_UNKNOWN_PRESET);
    let err = Layout::with(&[("tensor_size", 8)]).unwrap_err();
    assert_eq!(err.status, Status::E_UNKNOWN_KEY);
    assert!(err.message.contains("tensor_size"));
}

#[test]
fn range_errors_name_the_bounds_and_keep_the_value() {
    let (lo, hi) = Layout::bounds("tp").unwrap();
    let mut layout = Layout::with(&[("tp", 4)]).unwrap();
    let err = layout.set("tp", 0).unwrap_err();
    assert_eq!(err.status, Status::E_RANGE);
    assert!(err.message.contains(&format!("[{lo}, {hi}]")), "{err}");
    assert_eq!(layout.get("tp").unwrap(), 4);
}

#[test]
fn parse_errors() {
    let mut layout = Layout::new().unwrap();
    assert_eq!(layout.set_str("recompute", "sometimes").unwrap_err().status, Status::E_PARSE);
    assert_eq!(layout.set_str("tp", "8x").unwrap_err().status, Status::E_PARSE);
    assert_eq!(layout.set_str("tp", "8\0").unwrap_err().status, Status::E_PARSE);
}

#[test]
fn validation_statuses_carry_the_library_sentence() {
    let model = llama8b();
    let device = Device::preset("h100-80").unwrap();
    let cases: [(Status, &[(&str, u64)]); 5] = [
        (Status::E_HEADS_TP, &[("tp", 3), ("world", 3), ("seq", 8192)]),
        (Status::E_WORLD, &[("tp", 2), ("dp", 3), ("world", 8), ("seq", 8192)]),
        (Status::E_SEQ, &[("cp", 2), ("world", 2), ("seq", 8191)]),
        (Status::E_LAYERS_PP, &[("pp", 3), ("world", 3), ("seq", 8192)]),
        (Status::E_BATCH, &[("dp", 2), ("world", 2), ("seq", 8192), ("gbs", 3)]),
    ];
    for (status, keys) in cases {
        let layout = Layout::with(keys).unwrap();
        let err = estimate(&model, &layout, &device).err().unwrap_or_else(|| panic!("{keys:?} estimated"));
        assert_eq!(err.status, status, "{keys:?}: {err}");
        let (code, sentence) = c_sentence(&model, &layout);
        assert_eq!(code, status.0);
        assert_eq!(err.message, sentence);
        assert_eq!(layout.validate(&model).unwrap_err(), err);
        assert!(err.to_string().contains(status.name()));
    }
}

#[test]
fn model_validation() {
    let err = Model::with(&[("hidden_size", 4096)]).unwrap().validate().unwrap_err();
    assert_eq!(err.status, Status::E_MISSING);
    assert!(err.message.contains("num_layers"), "{err}");
    let mut model = llama8b();
    model.set("num_attention_heads", 33).unwrap();
    assert_eq!(model.validate().unwrap_err().status, Status::E_MODEL);
}

#[test]
fn status_names_and_descriptions() {
    assert_eq!(Status::E_RANGE.name(), "E_RANGE");
    assert_eq!(Status(99).name(), "UNKNOWN");
    assert_ne!(Status::E_RANGE.description(), Status::E_PARSE.description());
    assert_eq!(format!("{:?}", Status::E_SEQ), "E_SEQ(13)");
}
