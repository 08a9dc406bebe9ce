// SPDX-License-Identifier: MIT
//! Estimates: one layout's memory per pipeline stage.

use std::fmt;
use std::ptr::{self, NonNull};

use mem4d_sys as sys;

use crate::describe::{Device, Layout, Model};
use crate::error::{check, owned_str, Error, Result, Status};
use crate::generated::{Info, Metric, Mode, Stage, Term, Verdict};

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: accepts any value; returns a static string.
        f.write_str(&unsafe { owned_str(sys::mem4d_verdict_name(self.raw())) })
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: accepts any value; returns a static string.
        f.write_str(&unsafe { owned_str(sys::mem4d_mode_name(self.raw())) })
    }
}

impl Stage {
    /// The moment of the step this stage peaks at, by name: "forward_backward",
    /// "embedding_grad" or "optimizer_step" (the C library's mem4d_moment_name()).
    pub fn peak_moment_name(&self) -> String {
        let m = sys::mem4d_moment::try_from(self.peak_moment).unwrap_or(-1);
        // SAFETY: accepts any value; returns a static string or NULL (then "").
        unsafe { owned_str(sys::mem4d_moment_name(m)) }
    }
}

/// The result of an estimate; reusable (estimating into it again does not allocate).
pub struct Report {
    ptr: NonNull<sys::mem4d_report>,
}

// SAFETY: no global state; const functions may be shared between threads.
unsafe impl Send for Report {}
unsafe impl Sync for Report {}

impl Drop for Report {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { sys::mem4d_report_free(self.ptr.as_ptr()) }
    }
}

impl Report {
    /// An empty report (status E_MISSING until the first estimate).
    pub fn new() -> Result<Report> {
        let mut out = ptr::null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { sys::mem4d_report_new(&mut out) }, String::new)?;
        Ok(Report { ptr: NonNull::new(out).ok_or_else(|| Error::new(Status::E_NOMEM, ""))? })
    }

    /// Estimate into this report; on failure the error carries the report's sentence.
    pub fn estimate(&mut self, model: &Model, layout: &Layout, device: &Device) -> Result<()> {
        // SAFETY: all handles are live; the report is exclusively borrowed.
        let code = unsafe { sys::mem4d_estimate(model.as_ptr(), layout.as_ptr(), device.as_ptr(), self.as_mut_ptr()) };
        check(code, || self.message())
    }

    /// The raw handle.
    pub fn as_ptr(&self) -> *const sys::mem4d_report {
        self.ptr.as_ptr()
    }

    /// The raw handle, mutable.
    pub fn as_mut_ptr(&mut self) -> *mut sys::mem4d_report {
        self.ptr.as_ptr()
    }

    /// Status of the last estimate.
    pub fn status(&self) -> Status {
        // SAFETY: live handle.
        Status(unsafe { sys::mem4d_report_status(self.as_ptr()) })
    }

    /// Why the last estimate failed, or "".
    pub fn message(&self) -> String {
        // SAFETY: live handle; the string is copied at once.
        unsafe { owned_str(sys::mem4d_report_message(self.as_ptr())) }
    }

    /// The mode that produced it.
    pub fn mode(&self) -> Mode {
        // SAFETY: live handle.
        Mode::from_raw(unsafe { sys::mem4d_report_mode(self.as_ptr()) })
    }

    /// The verdict.
    pub fn verdict(&self) -> Verdict {
        // SAFETY: live handle.
        Verdict::from_raw(unsafe { sys::mem4d_report_verdict(self.as_ptr()) })
    }

    /// Number of stages (pp in full mode, 1 in paper mode).
    pub fn num_stages(&self) -> u32 {
        // SAFETY: live handle.
        unsafe { sys::mem4d_report_num_stages(self.as_ptr()) }
    }

    /// Index of the stage with the largest total.
    pub fn peak_stage(&self) -> u32 {
        // SAFETY: live handle.
        unsafe { sys::mem4d_report_peak_stage(self.as_ptr()) }
    }

    /// Total bytes of the peak stage.
    pub fn peak_bytes(&self) -> u64 {
        // SAFETY: live handle.
        unsafe { sys::mem4d_report_peak_bytes(self.as_ptr()) }
    }

    /// The device memory the verdict compared against.
    pub fn device_bytes(&self) -> u64 {
        // SAFETY: live handle.
        unsafe { sys::mem4d_report_device_bytes(self.as_ptr()) }
    }

    /// One per-stage quantity.
    pub fn get(&self, stage: u32, term: Term) -> Result<u64> {
        let mut value = 0;
        // SAFETY: live handle; valid out-pointer.
        let code = unsafe { sys::mem4d_report_get(self.as_ptr(), stage, term as i32, &mut value) };
        check(code, || format!("no stage {stage} in a report of {}", self.num_stages()))?;
        Ok(value)
    }

    /// Every term of one stage.
    pub fn stage(&self, stage: u32) -> Result<Stage> {
        Stage::from_terms(|term| self.get(stage, term))
    }

    /// Every stage, in order.
    pub fn stages(&self) -> Result<Vec<Stage>> {
        (0..self.num_stages()).map(|s| self.stage(s)).collect()
    }

    /// One whole-job value.
    pub fn info(&self, info: Info) -> Result<u64> {
        let mut value = 0;
        // SAFETY: live handle; valid out-pointer.
        check(unsafe { sys::mem4d_report_info(self.as_ptr(), info as i32, &mut value) }, String::new)?;
        Ok(value)
    }

    /// The attention kernel the job runs (Info::AttentionKernel), by the device key
    /// attention_kernel's names: "fa2", "fa3", "cudnn", "sdpa", "triton" (fused attention)
    /// or "unfused" (softmax attention; Info::SoftmaxFallback says whether PyTorch's fp32
    /// softmax ran in place of the stack's fused one).
    pub fn attention_kernel_name(&self) -> Result<String> {
        let kernel = self.info(Info::AttentionKernel)?;
        // SAFETY: takes no handle; returns a static string or NULL (owned_str copies it).
        Ok(unsafe { owned_str(sys::mem4d_device_value_name(sys::MEM4D_DEVICE_ATTENTION_KERNEL, kernel)) })
    }

    /// Settings of the estimated layout that change memory but are not
    /// modelled (e.g. "compile: ..."); empty after a failed estimate.
    pub fn warnings(&self) -> Vec<String> {
        // SAFETY: live handle; each string is copied at once.
        let n = unsafe { sys::mem4d_report_warning_count(self.as_ptr()) };
        (0..n).map(|i| unsafe { owned_str(sys::mem4d_report_warning(self.as_ptr(), i)) }).collect()
    }

    /// The peak stage's allocated and reserved peaks (torch.cuda.max_memory_allocated
    /// and max_memory_reserved counterparts), bytes.
    pub fn peak_allocated_reserved(&self) -> Result<(u64, u64)> {
        let s = self.stage(self.peak_stage())?;
        Ok((s.peak_allocated, s.peak_reserved))
    }

    /// A predicted speed figure; None when speed was not predicted.
    pub fn metric(&self, metric: Metric) -> Result<Option<f64>> {
        let mut value = 0.0;
        // SAFETY: live handle; valid out-pointer.
        let code = unsafe { sys::mem4d_report_metric(self.as_ptr(), metric as i32, &mut value) };
        if code == sys::MEM4D_E_UNSUPPORTED {
            return Ok(None);
        }
        check(code, String::new)?;
        Ok(Some(value))
    }
}

impl Term {
    /// The term's JSON name ("weights_bytes").
    pub fn name(self) -> String {
        // SAFETY: returns a static string or NULL.
        unsafe { owned_str(sys::mem4d_term_name(self as i32)) }
    }
}

/// Estimate `layout` for `model` on `device` into a new report.
pub fn estimate(model: &Model, layout: &Layout, device: &Device) -> Result<Report> {
    let mut report = Report::new()?;
    report.estimate(model, layout, device)?;
    Ok(report)
}

impl fmt::Debug for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("Report");
        s.field("status", &self.status());
        if self.status() == Status::OK {
            s.field("mode", &self.mode())
                .field("verdict", &self.verdict())
                .field("peak_stage", &self.peak_stage())
                .field("peak_bytes", &self.peak_bytes())
                .field("device_bytes", &self.device_bytes());
        } else {
            s.field("message", &self.message());
        }
        s.finish()
    }
}
