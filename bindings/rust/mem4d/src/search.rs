// SPDX-License-Identifier: MIT
//! Search: every valid layout for a GPU count, filtered and ranked, as an Iterator.

use std::ptr::{self, NonNull};

use mem4d_sys as sys;

use crate::describe::{Device, Layout, Model};
use crate::error::{check, Error, Result, Status};
use crate::generated::{SearchOption, SearchStat};
use crate::report::Report;

/// One layout a search yielded, with its estimate.
pub struct Plan {
    /// The layout, every knob set.
    pub layout: Layout,
    /// Its estimate, as mem4d_estimate() gives it.
    pub report: Report,
    /// With [`SearchOption::TieBreak`] 1: its speed band overlaps the fastest's (the
    /// fastest's own too), as `mem4d plan` marks the row and `plan --json` names it
    /// (`equivalent_to_fastest`); false without the tie-break or a speed prediction, and
    /// for a layout that does not fit (none is equivalent where none fits).
    pub equivalent_to_fastest: bool,
}

/// A search over the layouts of a model on a GPU count; iterate it for [`Plan`]s.
pub struct Search {
    ptr: NonNull<sys::mem4d_search>,
    done: bool,
}

// SAFETY: a search is a plain owned object without global state.
unsafe impl Send for Search {}

impl Drop for Search {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { sys::mem4d_search_free(self.ptr.as_ptr()) }
    }
}

fn layout_key(name: &str) -> Result<i32> {
    let text = crate::error::c_string("a parameter name", name)?;
    let mut key = 0;
    // SAFETY: NUL-terminated name; valid out-pointer.
    let code = unsafe { sys::mem4d_layout_param_from_name(text.as_ptr(), &mut key) };
    check(code, || format!("unknown layout parameter '{name}'"))?;
    Ok(key)
}

impl Search {
    /// Start a search; `base` needs at least the world size and sequence length.
    /// The handles are copied.
    pub fn new(model: &Model, device: &Device, base: &Layout) -> Result<Search> {
        let mut out = ptr::null_mut();
        // SAFETY: live handles; valid out-pointer.
        let code = unsafe { sys::mem4d_search_new(model.as_ptr(), device.as_ptr(), base.as_ptr(), &mut out) };
        check(code, || "cannot start the search".to_string())?;
        let ptr = NonNull::new(out).ok_or_else(|| Error::new(Status::E_NOMEM, ""))?;
        Ok(Search { ptr, done: false })
    }

    /// Set an option (before the first layout is taken).
    pub fn option(&mut self, option: SearchOption, value: u64) -> Result<&mut Search> {
        // SAFETY: live handle.
        let code = unsafe { sys::mem4d_search_set_option(self.ptr.as_ptr(), option as i32, value) };
        check(code, || format!("search option {option:?} = {value} is not accepted"))?;
        Ok(self)
    }

    /// Bound a searched knob ("tp", "cp", "pp", "dp", "mbs", "vpp", "recompute", "dist_opt").
    pub fn bound(&mut self, name: &str, min: u64, max: u64) -> Result<&mut Search> {
        let key = layout_key(name)?;
        // SAFETY: live handle.
        let code = unsafe { sys::mem4d_search_bound(self.ptr.as_ptr(), key, min, max) };
        check(code, || format!("search bound {min} <= {name} <= {max} is not accepted"))?;
        Ok(self)
    }

    /// Restrict a searched knob to a set of values.
    pub fn allow(&mut self, name: &str, values: &[u64]) -> Result<&mut Search> {
        let key = layout_key(name)?;
        // SAFETY: live handle; values points to values.len() integers.
        let code = unsafe { sys::mem4d_search_allow(self.ptr.as_ptr(), key, values.as_ptr(), values.len()) };
        check(code, || format!("search set {name} in {values:?} is not accepted"))?;
        Ok(self)
    }

    /// Start over, keeping options and constraints.
    pub fn reset(&mut self) -> Result<()> {
        self.done = false;
        // SAFETY: live handle.
        check(unsafe { sys::mem4d_search_reset(self.ptr.as_ptr()) }, String::new)
    }

    /// Read a counter.
    pub fn stat(&self, stat: SearchStat) -> Result<u64> {
        let mut value = 0;
        // SAFETY: live handle; valid out-pointer.
        check(unsafe { sys::mem4d_search_stat_get(self.ptr.as_ptr(), stat as i32, &mut value) }, String::new)?;
        Ok(value)
    }

    fn take(&mut self) -> Result<Option<Plan>> {
        let mut layout = Layout::new()?;
        let mut report = Report::new()?;
        // SAFETY: live handles, exclusively borrowed.
        let code = unsafe { sys::mem4d_search_next(self.ptr.as_ptr(), layout.as_mut_ptr(), report.as_mut_ptr()) };
        if code == sys::MEM4D_END {
            return Ok(None);
        }
        check(code, || "the search failed".to_string())?;
        // The equivalent layouts are the first SearchStat::Equivalent yielded (counted
        // once the first is); this one is the SearchStat::Yielded-th.
        let equivalent_to_fastest = self.stat(SearchStat::Yielded)? <= self.stat(SearchStat::Equivalent)?;
        Ok(Some(Plan { layout, report, equivalent_to_fastest }))
    }
}

impl Iterator for Search {
    type Item = Result<Plan>;

    /// The next layout; after an error or the end, None.
    fn next(&mut self) -> Option<Result<Plan>> {
        if self.done {
            return None;
        }
        let item = self.take().transpose();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
}

fn solve(
    f: unsafe extern "C" fn(
        *const sys::mem4d_model,
        *const sys::mem4d_layout,
        *const sys::mem4d_device,
        *mut u64,
    ) -> i32,
    model: &Model,
    layout: &Layout,
    device: &Device,
) -> Result<u64> {
    let mut out = 0;
    // SAFETY: live handles; valid out-pointer.
    check(unsafe { f(model.as_ptr(), layout.as_ptr(), device.as_ptr(), &mut out) }, || {
        layout.validate(model).err().map(|e| e.message).unwrap_or_default()
    })?;
    Ok(out)
}

/// Largest micro-batch with which `layout` still fits (0: not even 1).
pub fn max_micro_batch(model: &Model, layout: &Layout, device: &Device) -> Result<u64> {
    solve(sys::mem4d_solve_max_micro_batch, model, layout, device)
}

/// Longest sequence with which `layout` still fits (0: none).
pub fn max_seq_length(model: &Model, layout: &Layout, device: &Device) -> Result<u64> {
    solve(sys::mem4d_solve_max_seq_length, model, layout, device)
}

/// Fewest GPUs (up to `max_gpus`) on which some layout fits, with the fastest
/// such layout; None when none fits.
pub fn min_gpus(model: &Model, device: &Device, base: &Layout, max_gpus: u64) -> Result<Option<(u64, Layout)>> {
    let mut gpus = 0;
    let mut layout = Layout::new()?;
    // SAFETY: live handles; valid out-pointers.
    let code = unsafe {
        sys::mem4d_solve_min_gpus(
            model.as_ptr(),
            device.as_ptr(),
            base.as_ptr(),
            max_gpus,
            &mut gpus,
            layout.as_mut_ptr(),
        )
    };
    check(code, String::new)?;
    Ok((gpus != 0).then_some((gpus, layout)))
}

impl std::fmt::Debug for Search {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Search")
            .field("yielded", &self.stat(SearchStat::Yielded).unwrap_or(0))
            .field("done", &self.done)
            .finish()
    }
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan").field("layout", &self.layout).field("report", &self.report).finish()
    }
}
