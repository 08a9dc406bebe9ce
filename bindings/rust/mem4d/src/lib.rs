// SPDX-License-Identifier: MIT
//! Safe Rust API of libmem4d: how much GPU memory each pipeline stage of a
//! Megatron-style LLM training job uses, and which 4D layouts fit.
//!
//! ```no_run
//! use mem4d::{estimate, Device, Layout, Model};
//! let model = Model::preset("llama3.1-70b")?;
//! let layout = Layout::with(&[("tp", 8), ("pp", 4), ("dp", 2), ("mbs", 1), ("seq", 8192)])?;
//! let device = Device::preset("h100-80")?;
//! let report = estimate(&model, &layout, &device)?;
//! println!("{} GiB, {}", report.peak_bytes() as f64 / mem4d::GIB, report.verdict());
//! # Ok::<(), mem4d::Error>(())
//! ```
//!
//! Handles own their C objects and free them on drop. Every fallible call
//! returns [`Result`], whose [`Error`] carries the library's [`Status`] and a
//! sentence saying what went wrong.

mod calibrate;
mod describe;
mod error;
// scripts/gen-bindings.py writes it and the bindings-fresh test holds it to that
// output: rustfmt leaves it as written
#[rustfmt::skip]
mod generated;
mod import;
mod report;
mod search;

pub use calibrate::Calibration;
pub use describe::{Device, Layout, Model};
pub use error::{Error, Result, Status};
pub use generated::{Info, Metric, Mode, ParamKind, SearchOption, SearchStat, Stage, Term, Verdict, WorldSource};
pub use import::{import_megatron, Importer, MegatronImport};
pub use report::{estimate, Report};
pub use search::{max_micro_batch, max_seq_length, min_gpus, Plan, Search};

pub use mem4d_sys as sys;

/// Bytes in a GiB, for display.
pub const GIB: f64 = (1u64 << 30) as f64;

/// Version of the loaded library ("0.2.0").
pub fn library_version() -> String {
    // SAFETY: mem4d_version returns a static, NUL-terminated string.
    unsafe { error::owned_str(sys::mem4d_version()) }
}
