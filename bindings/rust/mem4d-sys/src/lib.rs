// SPDX-License-Identifier: MIT
//! Raw declarations of libmem4d's public header, `include/mem4d/mem4d.h`.
//!
//! Written by hand, one item per C declaration, so that this crate needs no
//! code generator from the network. `tests/header.rs` parses the header and
//! fails when a function or enum value is missing here, is extra, or differs
//! in arity or in the kind of a parameter.
//!
//! C enums are `c_int` type aliases with constants rather than Rust enums: a
//! newer library may return a value this crate does not know, and turning it
//! into a Rust enum would be undefined behaviour.
//!
//! Linking: `build.rs` takes `MEM4D_LIB_DIR` (the directory holding
//! `libmem4d.so`), else asks `pkg-config mem4d` when `pkg-config` exists,
//! else leaves the search to the system linker.
//!
//! The crate uses `std::os::raw` (not `core::ffi`, stable only since Rust
//! 1.64) so that Debian 12's rustc 1.63 builds it.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_double, c_int};
use core::marker::{PhantomData, PhantomPinned};

macro_rules! opaque {
    ($(#[$doc:meta] $name:ident),* $(,)?) => {$(
        #[$doc]
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            // Neither Send, Sync nor Unpin: the safe crate decides.
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    )*};
}

opaque! {
    /// Opaque `mem4d_model`.
    mem4d_model,
    /// Opaque `mem4d_layout`.
    mem4d_layout,
    /// Opaque `mem4d_device`.
    mem4d_device,
    /// Opaque `mem4d_report`.
    mem4d_report,
    /// Opaque `mem4d_search`.
    mem4d_search,
    /// Opaque `mem4d_import`.
    mem4d_import,
}

/// `MEM4D_VERSION_MAJOR` of the header these declarations follow.
pub const MEM4D_VERSION_MAJOR: u32 = 0;
/// `MEM4D_VERSION_MINOR`.
pub const MEM4D_VERSION_MINOR: u32 = 1;
/// `MEM4D_VERSION_MICRO`.
pub const MEM4D_VERSION_MICRO: u32 = 0;

/// `mem4d_status` (a C enum, passed as `int`).
pub type mem4d_status = c_int;
pub const MEM4D_OK: mem4d_status = 0;
pub const MEM4D_END: mem4d_status = 1;
pub const MEM4D_E_INVALID_ARG: mem4d_status = 2;
pub const MEM4D_E_NOMEM: mem4d_status = 3;
pub const MEM4D_E_RANGE: mem4d_status = 4;
pub const MEM4D_E_UNKNOWN_KEY: mem4d_status = 5;
pub const MEM4D_E_UNKNOWN_PRESET: mem4d_status = 6;
pub const MEM4D_E_PARSE: mem4d_status = 7;
pub const MEM4D_E_MODEL: mem4d_status = 8;
pub const MEM4D_E_HEADS_TP: mem4d_status = 9;
pub const MEM4D_E_KV_HEADS_TP: mem4d_status = 10;
pub const MEM4D_E_LAYERS_PP: mem4d_status = 11;
pub const MEM4D_E_WORLD: mem4d_status = 12;
pub const MEM4D_E_SEQ: mem4d_status = 13;
pub const MEM4D_E_BATCH: mem4d_status = 14;
pub const MEM4D_E_UNSUPPORTED: mem4d_status = 15;
pub const MEM4D_E_NO_JSON: mem4d_status = 16;
pub const MEM4D_E_IO: mem4d_status = 17;
pub const MEM4D_E_JSON: mem4d_status = 18;
pub const MEM4D_E_MISSING: mem4d_status = 19;
pub const MEM4D_E_CONFLICT: mem4d_status = 20;
pub const MEM4D_E_DIM_TP: mem4d_status = 21;
pub const MEM4D_E_EXPERTS: mem4d_status = 22;

/// `mem4d_model_param` (a C enum, passed as `int`).
pub type mem4d_model_param = c_int;
pub const MEM4D_MODEL_HIDDEN_SIZE: mem4d_model_param = 0;
pub const MEM4D_MODEL_FFN_HIDDEN_SIZE: mem4d_model_param = 1;
pub const MEM4D_MODEL_NUM_LAYERS: mem4d_model_param = 2;
pub const MEM4D_MODEL_NUM_HEADS: mem4d_model_param = 3;
pub const MEM4D_MODEL_NUM_KV_HEADS: mem4d_model_param = 4;
pub const MEM4D_MODEL_HEAD_DIM: mem4d_model_param = 5;
pub const MEM4D_MODEL_VOCAB_SIZE: mem4d_model_param = 6;
pub const MEM4D_MODEL_TIED_EMBEDDINGS: mem4d_model_param = 7;
pub const MEM4D_MODEL_QKV_BIAS: mem4d_model_param = 8;
pub const MEM4D_MODEL_NORM: mem4d_model_param = 9;
pub const MEM4D_MODEL_GATED_MLP: mem4d_model_param = 10;
pub const MEM4D_MODEL_NUM_EXPERTS: mem4d_model_param = 11;
pub const MEM4D_MODEL_EXPERT_TOPK: mem4d_model_param = 12;
pub const MEM4D_MODEL_EXPERT_FFN_SIZE: mem4d_model_param = 13;
pub const MEM4D_MODEL_SHARED_EXPERT_FFN_SIZE: mem4d_model_param = 14;
pub const MEM4D_MODEL_MAX_POSITION: mem4d_model_param = 15;

/// `mem4d_layout_param` (a C enum, passed as `int`).
pub type mem4d_layout_param = c_int;
pub const MEM4D_LAYOUT_TP: mem4d_layout_param = 0;
pub const MEM4D_LAYOUT_CP: mem4d_layout_param = 1;
pub const MEM4D_LAYOUT_PP: mem4d_layout_param = 2;
pub const MEM4D_LAYOUT_DP: mem4d_layout_param = 3;
pub const MEM4D_LAYOUT_WORLD: mem4d_layout_param = 4;
pub const MEM4D_LAYOUT_MICRO_BATCH: mem4d_layout_param = 5;
pub const MEM4D_LAYOUT_GLOBAL_BATCH: mem4d_layout_param = 6;
pub const MEM4D_LAYOUT_SEQ_LENGTH: mem4d_layout_param = 7;
pub const MEM4D_LAYOUT_SEQUENCE_PARALLEL: mem4d_layout_param = 8;
pub const MEM4D_LAYOUT_DIST_OPT: mem4d_layout_param = 9;
pub const MEM4D_LAYOUT_MAIN_GRAD_BYTES: mem4d_layout_param = 10;
pub const MEM4D_LAYOUT_VPP: mem4d_layout_param = 11;
pub const MEM4D_LAYOUT_RECOMPUTE: mem4d_layout_param = 12;
pub const MEM4D_LAYOUT_RECOMPUTE_METHOD: mem4d_layout_param = 13;
pub const MEM4D_LAYOUT_RECOMPUTE_LAYERS: mem4d_layout_param = 14;
pub const MEM4D_LAYOUT_FLASH_ATTN: mem4d_layout_param = 15;
pub const MEM4D_LAYOUT_MODE: mem4d_layout_param = 16;
pub const MEM4D_LAYOUT_VOCAB_DIVISOR: mem4d_layout_param = 17;
pub const MEM4D_LAYOUT_ZERO_STAGE: mem4d_layout_param = 18;
pub const MEM4D_LAYOUT_PARAM_BYTES: mem4d_layout_param = 19;
pub const MEM4D_LAYOUT_OPT_STATE_BYTES: mem4d_layout_param = 20;
pub const MEM4D_LAYOUT_MASTER_WEIGHT_BYTES: mem4d_layout_param = 21;
pub const MEM4D_LAYOUT_FP8: mem4d_layout_param = 22;
pub const MEM4D_LAYOUT_EP: mem4d_layout_param = 23;
pub const MEM4D_LAYOUT_FIRST_STAGE_LAYERS: mem4d_layout_param = 24;
pub const MEM4D_LAYOUT_LAST_STAGE_LAYERS: mem4d_layout_param = 25;
pub const MEM4D_LAYOUT_OVERLAP_GRAD_REDUCE: mem4d_layout_param = 26;
pub const MEM4D_LAYOUT_OVERLAP_PARAM_GATHER: mem4d_layout_param = 27;
pub const MEM4D_LAYOUT_BUCKET_SIZE: mem4d_layout_param = 28;
pub const MEM4D_LAYOUT_HIDDEN_DROPOUT: mem4d_layout_param = 29;
pub const MEM4D_LAYOUT_ATTENTION_DROPOUT: mem4d_layout_param = 30;
pub const MEM4D_LAYOUT_CROSS_ENTROPY_FUSION: mem4d_layout_param = 31;
pub const MEM4D_LAYOUT_FRAMEWORK: mem4d_layout_param = 32;
pub const MEM4D_LAYOUT_RESHARD_AFTER_FORWARD: mem4d_layout_param = 33;
pub const MEM4D_LAYOUT_DP_REPLICATE: mem4d_layout_param = 34;
pub const MEM4D_LAYOUT_RECOMPUTE_EVERY: mem4d_layout_param = 35;
pub const MEM4D_LAYOUT_FLOAT8: mem4d_layout_param = 36;
pub const MEM4D_LAYOUT_FP8_ALL_GATHER: mem4d_layout_param = 37;
pub const MEM4D_LAYOUT_ALLGATHER_BUCKET_SIZE: mem4d_layout_param = 38;
pub const MEM4D_LAYOUT_PREFETCH_BUCKET_SIZE: mem4d_layout_param = 39;
pub const MEM4D_LAYOUT_MAX_LIVE_PARAMETERS: mem4d_layout_param = 40;
pub const MEM4D_LAYOUT_OFFLOAD: mem4d_layout_param = 41;
pub const MEM4D_LAYOUT_CONTIGUOUS_GRADIENTS: mem4d_layout_param = 42;
pub const MEM4D_LAYOUT_PIPELINE_SCHEDULE: mem4d_layout_param = 43;
pub const MEM4D_LAYOUT_COMPILE: mem4d_layout_param = 44;
pub const MEM4D_LAYOUT_ASYNC_TP: mem4d_layout_param = 45;
pub const MEM4D_LAYOUT_EXPANDABLE_SEGMENTS: mem4d_layout_param = 46;
/// `mem4d_framework` (a C enum, passed as `int`): values of MEM4D_LAYOUT_FRAMEWORK.
pub type mem4d_framework = c_int;
pub const MEM4D_FRAMEWORK_MEGATRON: mem4d_framework = 0;
pub const MEM4D_FRAMEWORK_TORCHTITAN: mem4d_framework = 1;
pub const MEM4D_FRAMEWORK_DEEPSPEED: mem4d_framework = 2;
pub const MEM4D_FRAMEWORK_NANOTRON: mem4d_framework = 3;

/// `mem4d_device_param` (a C enum, passed as `int`).
pub type mem4d_device_param = c_int;
pub const MEM4D_DEVICE_MEMORY_BYTES: mem4d_device_param = 0;
pub const MEM4D_DEVICE_PEAK_FLOPS: mem4d_device_param = 1;
pub const MEM4D_DEVICE_PEAK_FP8_FLOPS: mem4d_device_param = 2;
pub const MEM4D_DEVICE_HBM_BANDWIDTH: mem4d_device_param = 3;
pub const MEM4D_DEVICE_INTRA_NODE_BANDWIDTH: mem4d_device_param = 4;
pub const MEM4D_DEVICE_INTER_NODE_BANDWIDTH: mem4d_device_param = 5;
pub const MEM4D_DEVICE_GPUS_PER_NODE: mem4d_device_param = 6;
pub const MEM4D_DEVICE_FIT_THRESHOLD_PPM: mem4d_device_param = 7;
pub const MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM: mem4d_device_param = 8;
pub const MEM4D_DEVICE_COMM_EFFICIENCY_PPM: mem4d_device_param = 9;
pub const MEM4D_DEVICE_INTRA_NODE_LATENCY_NS: mem4d_device_param = 10;
pub const MEM4D_DEVICE_INTER_NODE_LATENCY_NS: mem4d_device_param = 11;
pub const MEM4D_DEVICE_CUDA_CONTEXT_BYTES: mem4d_device_param = 12;
pub const MEM4D_DEVICE_NCCL_BYTES_PER_GROUP: mem4d_device_param = 13;
pub const MEM4D_DEVICE_ALLOCATOR_OVERHEAD_PPM: mem4d_device_param = 14;
pub const MEM4D_DEVICE_WORKSPACE_BYTES: mem4d_device_param = 15;
pub const MEM4D_DEVICE_FULL_FIT_THRESHOLD_PPM: mem4d_device_param = 16;

/// `mem4d_mode` (a C enum, passed as `int`).
pub type mem4d_mode = c_int;
pub const MEM4D_MODE_FULL: mem4d_mode = 0;
pub const MEM4D_MODE_PAPER: mem4d_mode = 1;

/// `mem4d_verdict` (a C enum, passed as `int`).
pub type mem4d_verdict = c_int;
pub const MEM4D_VERDICT_FITS: mem4d_verdict = 0;
pub const MEM4D_VERDICT_TIGHT: mem4d_verdict = 1;
pub const MEM4D_VERDICT_OOM: mem4d_verdict = 2;

/// `mem4d_term` (a C enum, passed as `int`).
pub type mem4d_term = c_int;
pub const MEM4D_TERM_WEIGHTS: mem4d_term = 0;
pub const MEM4D_TERM_GRADIENTS: mem4d_term = 1;
pub const MEM4D_TERM_OPTIMIZER: mem4d_term = 2;
pub const MEM4D_TERM_ACTIVATIONS: mem4d_term = 3;
pub const MEM4D_TERM_OVERHEAD: mem4d_term = 4;
pub const MEM4D_TERM_TOTAL: mem4d_term = 5;
pub const MEM4D_TERM_PARAMS: mem4d_term = 6;
pub const MEM4D_TERM_LAYERS: mem4d_term = 7;
pub const MEM4D_TERM_IN_FLIGHT: mem4d_term = 8;
pub const MEM4D_TERM_BUFFERS: mem4d_term = 9;
pub const MEM4D_TERM_FRAGMENTATION: mem4d_term = 10;
pub const MEM4D_TERM_FIXED: mem4d_term = 11;
pub const MEM4D_TERM_PEAK_ALLOCATED: mem4d_term = 12;
pub const MEM4D_TERM_PEAK_RESERVED: mem4d_term = 13;

/// `mem4d_info` (a C enum, passed as `int`).
pub type mem4d_info = c_int;
pub const MEM4D_INFO_DP: mem4d_info = 0;
pub const MEM4D_INFO_WORLD: mem4d_info = 1;
pub const MEM4D_INFO_MICROBATCHES: mem4d_info = 2;
pub const MEM4D_INFO_PADDED_VOCAB: mem4d_info = 3;
pub const MEM4D_INFO_MODEL_PARAMS: mem4d_info = 4;
pub const MEM4D_INFO_PROCESS_GROUPS: mem4d_info = 5;

/// `mem4d_metric` (a C enum, passed as `int`).
pub type mem4d_metric = c_int;
pub const MEM4D_METRIC_STEP_TIME_S: mem4d_metric = 0;
pub const MEM4D_METRIC_TOKENS_PER_S: mem4d_metric = 1;
pub const MEM4D_METRIC_TFLOPS_PER_GPU: mem4d_metric = 2;
pub const MEM4D_METRIC_MFU: mem4d_metric = 3;
pub const MEM4D_METRIC_BUBBLE_FRACTION: mem4d_metric = 4;
pub const MEM4D_METRIC_COMPUTE_TIME_S: mem4d_metric = 5;
pub const MEM4D_METRIC_EXPOSED_COMM_S: mem4d_metric = 6;

/// `mem4d_search_option` (a C enum, passed as `int`).
pub type mem4d_search_option = c_int;
pub const MEM4D_SEARCH_FITS_ONLY: mem4d_search_option = 0;
pub const MEM4D_SEARCH_NODE_LOCAL: mem4d_search_option = 1;
pub const MEM4D_SEARCH_RANKED: mem4d_search_option = 2;
pub const MEM4D_SEARCH_MAX_RESULTS: mem4d_search_option = 3;
pub const MEM4D_SEARCH_UNEVEN_STAGES: mem4d_search_option = 4;

/// `mem4d_search_stat` (a C enum, passed as `int`).
pub type mem4d_search_stat = c_int;
pub const MEM4D_SEARCH_STAT_VISITED: mem4d_search_stat = 0;
pub const MEM4D_SEARCH_STAT_PRUNED: mem4d_search_stat = 1;
pub const MEM4D_SEARCH_STAT_VALID: mem4d_search_stat = 2;
pub const MEM4D_SEARCH_STAT_YIELDED: mem4d_search_stat = 3;

/// `mem4d_world_source` (a C enum, passed as `int`).
pub type mem4d_world_source = c_int;
pub const MEM4D_WORLD_NONE: mem4d_world_source = 0;
pub const MEM4D_WORLD_EXPLICIT: mem4d_world_source = 1;
pub const MEM4D_WORLD_ENV_WORLD_SIZE: mem4d_world_source = 2;
pub const MEM4D_WORLD_ENV_SLURM_NTASKS: mem4d_world_source = 3;
pub const MEM4D_WORLD_ENV_SLURM_NODES: mem4d_world_source = 4;

extern "C" {
    // status
    pub fn mem4d_strerror(status: mem4d_status) -> *const c_char;
    pub fn mem4d_version() -> *const c_char;

    // model
    pub fn mem4d_model_new(out: *mut *mut mem4d_model) -> mem4d_status;
    pub fn mem4d_model_new_preset(name: *const c_char, out: *mut *mut mem4d_model) -> mem4d_status;
    pub fn mem4d_model_clone(model: *const mem4d_model, out: *mut *mut mem4d_model) -> mem4d_status;
    pub fn mem4d_model_free(model: *mut mem4d_model);
    pub fn mem4d_model_set(model: *mut mem4d_model, key: mem4d_model_param, value: u64) -> mem4d_status;
    pub fn mem4d_model_get(model: *const mem4d_model, key: mem4d_model_param, value: *mut u64) -> mem4d_status;
    pub fn mem4d_model_set_str(model: *mut mem4d_model, name: *const c_char, value: *const c_char) -> mem4d_status;
    pub fn mem4d_model_name(model: *const mem4d_model) -> *const c_char;
    pub fn mem4d_model_set_name(model: *mut mem4d_model, name: *const c_char) -> mem4d_status;
    pub fn mem4d_model_validate(model: *const mem4d_model, why: *mut c_char, why_size: usize) -> mem4d_status;
    pub fn mem4d_model_num_params(model: *const mem4d_model, count: *mut u64) -> mem4d_status;
    pub fn mem4d_model_preset_count() -> usize;
    pub fn mem4d_model_preset_name(index: usize) -> *const c_char;
    pub fn mem4d_model_param_count() -> usize;
    pub fn mem4d_model_param_name(key: mem4d_model_param) -> *const c_char;
    pub fn mem4d_model_param_from_name(name: *const c_char, key: *mut mem4d_model_param) -> mem4d_status;
    pub fn mem4d_model_param_bounds(key: mem4d_model_param, min: *mut u64, max: *mut u64) -> mem4d_status;

    // layout
    pub fn mem4d_layout_new(out: *mut *mut mem4d_layout) -> mem4d_status;
    pub fn mem4d_layout_clone(layout: *const mem4d_layout, out: *mut *mut mem4d_layout) -> mem4d_status;
    pub fn mem4d_layout_copy(dst: *mut mem4d_layout, src: *const mem4d_layout) -> mem4d_status;
    pub fn mem4d_layout_free(layout: *mut mem4d_layout);
    pub fn mem4d_layout_set(layout: *mut mem4d_layout, key: mem4d_layout_param, value: u64) -> mem4d_status;
    pub fn mem4d_layout_get(layout: *const mem4d_layout, key: mem4d_layout_param, value: *mut u64) -> mem4d_status;
    pub fn mem4d_layout_set_str(layout: *mut mem4d_layout, name: *const c_char, value: *const c_char) -> mem4d_status;
    pub fn mem4d_layout_param_count() -> usize;
    pub fn mem4d_layout_param_name(key: mem4d_layout_param) -> *const c_char;
    pub fn mem4d_layout_param_from_name(name: *const c_char, key: *mut mem4d_layout_param) -> mem4d_status;
    pub fn mem4d_layout_param_bounds(key: mem4d_layout_param, min: *mut u64, max: *mut u64) -> mem4d_status;
    pub fn mem4d_layout_value_name(key: mem4d_layout_param, value: u64) -> *const c_char;
    pub fn mem4d_validate(
        model: *const mem4d_model,
        layout: *const mem4d_layout,
        why: *mut c_char,
        why_size: usize,
    ) -> mem4d_status;

    // device
    pub fn mem4d_device_new(out: *mut *mut mem4d_device) -> mem4d_status;
    pub fn mem4d_device_new_preset(name: *const c_char, out: *mut *mut mem4d_device) -> mem4d_status;
    pub fn mem4d_device_clone(device: *const mem4d_device, out: *mut *mut mem4d_device) -> mem4d_status;
    pub fn mem4d_device_free(device: *mut mem4d_device);
    pub fn mem4d_device_set(device: *mut mem4d_device, key: mem4d_device_param, value: u64) -> mem4d_status;
    pub fn mem4d_device_get(device: *const mem4d_device, key: mem4d_device_param, value: *mut u64) -> mem4d_status;
    pub fn mem4d_device_set_str(device: *mut mem4d_device, name: *const c_char, value: *const c_char) -> mem4d_status;
    pub fn mem4d_device_name(device: *const mem4d_device) -> *const c_char;
    pub fn mem4d_device_preset_count() -> usize;
    pub fn mem4d_device_preset_name(index: usize) -> *const c_char;
    pub fn mem4d_device_param_count() -> usize;
    pub fn mem4d_device_param_name(key: mem4d_device_param) -> *const c_char;
    pub fn mem4d_device_param_from_name(name: *const c_char, key: *mut mem4d_device_param) -> mem4d_status;
    pub fn mem4d_device_param_bounds(key: mem4d_device_param, min: *mut u64, max: *mut u64) -> mem4d_status;

    // estimate
    pub fn mem4d_report_new(out: *mut *mut mem4d_report) -> mem4d_status;
    pub fn mem4d_report_free(report: *mut mem4d_report);
    pub fn mem4d_estimate(
        model: *const mem4d_model,
        layout: *const mem4d_layout,
        device: *const mem4d_device,
        report: *mut mem4d_report,
    ) -> mem4d_status;
    pub fn mem4d_report_status(report: *const mem4d_report) -> mem4d_status;
    pub fn mem4d_report_message(report: *const mem4d_report) -> *const c_char;
    pub fn mem4d_report_mode(report: *const mem4d_report) -> mem4d_mode;
    pub fn mem4d_report_verdict(report: *const mem4d_report) -> mem4d_verdict;
    pub fn mem4d_report_num_stages(report: *const mem4d_report) -> u32;
    pub fn mem4d_report_peak_stage(report: *const mem4d_report) -> u32;
    pub fn mem4d_report_peak_bytes(report: *const mem4d_report) -> u64;
    pub fn mem4d_report_device_bytes(report: *const mem4d_report) -> u64;
    pub fn mem4d_report_get(report: *const mem4d_report, stage: u32, term: mem4d_term, value: *mut u64)
        -> mem4d_status;
    pub fn mem4d_report_info(report: *const mem4d_report, info: mem4d_info, value: *mut u64) -> mem4d_status;
    pub fn mem4d_report_metric(report: *const mem4d_report, metric: mem4d_metric, value: *mut c_double)
        -> mem4d_status;
    pub fn mem4d_report_warning_count(report: *const mem4d_report) -> usize;
    pub fn mem4d_report_warning(report: *const mem4d_report, index: usize) -> *const c_char;
    pub fn mem4d_verdict_name(verdict: mem4d_verdict) -> *const c_char;
    pub fn mem4d_mode_name(mode: mem4d_mode) -> *const c_char;
    pub fn mem4d_term_name(term: mem4d_term) -> *const c_char;

    // search
    pub fn mem4d_search_new(
        model: *const mem4d_model,
        device: *const mem4d_device,
        base: *const mem4d_layout,
        out: *mut *mut mem4d_search,
    ) -> mem4d_status;
    pub fn mem4d_search_free(search: *mut mem4d_search);
    pub fn mem4d_search_set_option(search: *mut mem4d_search, option: mem4d_search_option, value: u64) -> mem4d_status;
    pub fn mem4d_search_bound(search: *mut mem4d_search, key: mem4d_layout_param, min: u64, max: u64) -> mem4d_status;
    pub fn mem4d_search_allow(
        search: *mut mem4d_search,
        key: mem4d_layout_param,
        values: *const u64,
        count: usize,
    ) -> mem4d_status;
    pub fn mem4d_search_next(
        search: *mut mem4d_search,
        layout: *mut mem4d_layout,
        report: *mut mem4d_report,
    ) -> mem4d_status;
    pub fn mem4d_search_reset(search: *mut mem4d_search) -> mem4d_status;
    pub fn mem4d_search_stat_get(search: *const mem4d_search, stat: mem4d_search_stat, value: *mut u64)
        -> mem4d_status;
    pub fn mem4d_solve_max_micro_batch(
        model: *const mem4d_model,
        layout: *const mem4d_layout,
        device: *const mem4d_device,
        mbs: *mut u64,
    ) -> mem4d_status;
    pub fn mem4d_solve_max_seq_length(
        model: *const mem4d_model,
        layout: *const mem4d_layout,
        device: *const mem4d_device,
        seq: *mut u64,
    ) -> mem4d_status;
    pub fn mem4d_solve_min_gpus(
        model: *const mem4d_model,
        device: *const mem4d_device,
        base: *const mem4d_layout,
        max_gpus: u64,
        gpus: *mut u64,
        layout: *mut mem4d_layout,
    ) -> mem4d_status;

    // import
    pub fn mem4d_import_new(out: *mut *mut mem4d_import) -> mem4d_status;
    pub fn mem4d_import_free(import: *mut mem4d_import);
    pub fn mem4d_import_megatron(
        import: *mut mem4d_import,
        argc: c_int,
        argv: *const *const c_char,
        envp: *const *const c_char,
        world_size: u64,
        model: *mut mem4d_model,
        layout: *mut mem4d_layout,
    ) -> mem4d_status;
    pub fn mem4d_import_hf_config(
        import: *mut mem4d_import,
        path: *const c_char,
        model: *mut mem4d_model,
    ) -> mem4d_status;
    pub fn mem4d_import_hf_config_buffer(
        import: *mut mem4d_import,
        json: *const c_char,
        size: usize,
        model: *mut mem4d_model,
    ) -> mem4d_status;
    pub fn mem4d_import_deepspeed_config(
        import: *mut mem4d_import,
        path: *const c_char,
        layout: *mut mem4d_layout,
    ) -> mem4d_status;
    pub fn mem4d_import_deepspeed_config_buffer(
        import: *mut mem4d_import,
        json: *const c_char,
        size: usize,
        layout: *mut mem4d_layout,
    ) -> mem4d_status;
    pub fn mem4d_import_message(import: *const mem4d_import) -> *const c_char;
    pub fn mem4d_import_warning_count(import: *const mem4d_import) -> usize;
    pub fn mem4d_import_warning(import: *const mem4d_import, index: usize) -> *const c_char;
    pub fn mem4d_import_world_source(import: *const mem4d_import) -> mem4d_world_source;
    pub fn mem4d_layout_megatron_args(
        model: *const mem4d_model,
        layout: *const mem4d_layout,
        buf: *mut c_char,
        size: usize,
        length: *mut usize,
    ) -> mem4d_status;
}
