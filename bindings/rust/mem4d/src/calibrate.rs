// SPDX-License-Identifier: MIT
//! Device files and calibration from Megatron-LM training logs.

use std::os::raw::c_char;
use std::ptr::{self, NonNull};

use mem4d_sys as sys;

use crate::describe::{Device, Layout, Model};
use crate::error::{c_string, check, owned_str, Error, Result, Status};
use crate::import::CArgv;

/// Bytes of the message buffer the device-file readers fill.
const WHY: usize = 256;

fn why_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

impl Device {
    /// A device from a device file (`KEY = VALUE` lines; see doc/perf.md).
    pub fn from_file(path: impl AsRef<std::path::Path>) -> Result<Device> {
        let mut d = Device::new()?;
        d.load(path)?;
        Ok(d)
    }

    /// Apply a device file to this device; the error names the line at fault.
    pub fn load(&mut self, path: impl AsRef<std::path::Path>) -> Result<()> {
        let text = c_string("a path", &path.as_ref().to_string_lossy())?;
        let mut why = [0u8; WHY];
        // SAFETY: live handle; NUL-terminated path; why holds WHY bytes.
        let code =
            unsafe { sys::mem4d_device_load(self.as_mut_ptr(), text.as_ptr(), why.as_mut_ptr() as *mut c_char, WHY) };
        check(code, || why_text(&why))
    }

    /// Apply a device file's text to this device.
    pub fn parse(&mut self, text: &str) -> Result<()> {
        let mut why = [0u8; WHY];
        // SAFETY: live handle; text points to text.len() bytes; why holds WHY bytes.
        let code = unsafe {
            sys::mem4d_device_parse(
                self.as_mut_ptr(),
                text.as_ptr() as *const c_char,
                text.len(),
                why.as_mut_ptr() as *mut c_char,
                WHY,
            )
        };
        check(code, || why_text(&why))
    }

    /// This device as a device file's text.
    pub fn to_text(&self) -> Result<String> {
        let mut len = 0usize;
        // SAFETY: live handle; a NULL buffer of size 0 asks for the length.
        unsafe { sys::mem4d_device_format(self.as_ptr(), ptr::null_mut(), 0, &mut len) };
        let mut buf = vec![0u8; len + 1];
        // SAFETY: buf holds len + 1 bytes.
        let code = unsafe {
            sys::mem4d_device_format(self.as_ptr(), buf.as_mut_ptr() as *mut c_char, buf.len(), ptr::null_mut())
        };
        check(code, String::new)?;
        Ok(why_text(&buf))
    }
}

/// Megatron-LM logs read so far; [`Calibration::fit`] fits a [`Device`] to them.
pub struct Calibration {
    ptr: NonNull<sys::mem4d_calibration>,
}

// SAFETY: an owned object without global state.
unsafe impl Send for Calibration {}

impl Drop for Calibration {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { sys::mem4d_calibration_free(self.ptr.as_ptr()) }
    }
}

impl Calibration {
    /// An empty calibration.
    pub fn new() -> Result<Calibration> {
        let mut out = ptr::null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { sys::mem4d_calibration_new(&mut out) }, String::new)?;
        Ok(Calibration { ptr: NonNull::new(out).ok_or_else(|| Error::new(Status::E_NOMEM, ""))? })
    }

    fn message(&self) -> String {
        // SAFETY: the string lives as long as the handle; copied at once.
        unsafe { owned_str(sys::mem4d_calibration_message(self.ptr.as_ptr())) }
    }

    /// Read one log. `args`: the job's Megatron-LM arguments, used only when
    /// the log has no arguments block; `world_size`: 0 to take it from the block.
    pub fn add_megatron_log(&mut self, text: &[u8], args: &[&str], world_size: u64) -> Result<()> {
        let argv = CArgv::new(args)?;
        let argc = i32::try_from(args.len()).map_err(|_| Error::new(Status::E_RANGE, "too many arguments"))?;
        // SAFETY: live handle; text points to text.len() bytes; argv holds argc strings and a NULL.
        let code = unsafe {
            sys::mem4d_calibration_add_megatron_log(
                self.ptr.as_ptr(),
                text.as_ptr() as *const c_char,
                text.len(),
                argc,
                argv.pointers.as_ptr(),
                world_size,
            )
        };
        check(code, || self.message())
    }

    /// Read one log from a file: only a regular file of at most 1 GiB (a FIFO,
    /// a device or a directory is refused with `E_IO`, without blocking).
    pub fn add_megatron_log_file(
        &mut self,
        path: impl AsRef<std::path::Path>,
        args: &[&str],
        world_size: u64,
    ) -> Result<()> {
        let text = c_string("a path", &path.as_ref().to_string_lossy())?;
        let argv = CArgv::new(args)?;
        let argc = i32::try_from(args.len()).map_err(|_| Error::new(Status::E_RANGE, "too many arguments"))?;
        // SAFETY: live handle; NUL-terminated path; argv holds argc strings and a NULL.
        let code = unsafe {
            sys::mem4d_calibration_add_megatron_log_file(
                self.ptr.as_ptr(),
                text.as_ptr(),
                argc,
                argv.pointers.as_ptr(),
                world_size,
            )
        };
        check(code, || self.message())
    }

    /// Read one log of the job `model` / `layout` written by `format`
    /// (`sys::MEM4D_LOG_MEGATRON`, `MEM4D_LOG_TORCHTITAN`, `MEM4D_LOG_NANOTRON`).
    pub fn add_log(
        &mut self,
        format: sys::mem4d_log_format,
        text: &[u8],
        model: &Model,
        layout: &Layout,
    ) -> Result<()> {
        // SAFETY: live handles; text points to text.len() bytes.
        let code = unsafe {
            sys::mem4d_calibration_add_log(
                self.ptr.as_ptr(),
                format,
                text.as_ptr() as *const c_char,
                text.len(),
                model.as_ptr(),
                layout.as_ptr(),
            )
        };
        check(code, || self.message())
    }

    /// A measured figure of the job without a log: `sys::MEM4D_CALIBRATION_MEASURED_STEP_S`,
    /// `MEASURED_TFLOPS_PER_GPU` (Megatron's count) or `MEASURED_TOKENS_PER_S` (whole job).
    pub fn add_measurement(
        &mut self,
        model: &Model,
        layout: &Layout,
        figure: sys::mem4d_calibration_figure,
        value: f64,
    ) -> Result<()> {
        // SAFETY: live handles.
        let code = unsafe {
            sys::mem4d_calibration_add_measurement(self.ptr.as_ptr(), model.as_ptr(), layout.as_ptr(), figure, value)
        };
        check(code, || self.message())
    }

    /// After [`Calibration::fit`]: the speed constants it considered, each with
    /// whether the runs identified it (true: fitted; false: left at the device's value).
    pub fn constants(&self) -> Result<Vec<(sys::mem4d_device_param, bool)>> {
        let mut out = Vec::new();
        loop {
            let (mut key, mut fitted): (sys::mem4d_device_param, i32) = (0, 0);
            // SAFETY: live handle; valid out-pointers.
            let code = unsafe { sys::mem4d_calibration_constant(self.ptr.as_ptr(), out.len(), &mut key, &mut fitted) };
            if Status(code) == Status::E_RANGE {
                return Ok(out);
            }
            check(code, String::new)?;
            out.push((key, fitted != 0));
        }
    }

    /// Fit the device's constants to every log read (the device changes in place).
    pub fn fit(&mut self, device: &mut Device) -> Result<()> {
        // SAFETY: live, exclusively borrowed handles.
        let code = unsafe { sys::mem4d_calibration_fit(self.ptr.as_ptr(), device.as_mut_ptr()) };
        check(code, || self.message())
    }

    /// Logs read so far.
    pub fn len(&self) -> usize {
        // SAFETY: live handle.
        unsafe { sys::mem4d_calibration_log_count(self.ptr.as_ptr()) }
    }

    /// Whether no log was read.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A figure (`sys::MEM4D_CALIBRATION_*`) of log `index` after [`Calibration::fit`];
    /// None when the log has no such line.
    pub fn figure(&self, index: usize, figure: sys::mem4d_calibration_figure) -> Result<Option<f64>> {
        let mut v = 0f64;
        // SAFETY: live handle; valid out-pointer.
        let code = unsafe { sys::mem4d_calibration_get(self.ptr.as_ptr(), index, figure, &mut v) };
        if Status(code) == Status::E_UNSUPPORTED {
            return Ok(None);
        }
        check(code, String::new)?;
        Ok(Some(v))
    }
}
