// SPDX-License-Identifier: MIT
//! Status codes and the error that carries them.

use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::c_char;

use mem4d_sys as sys;

/// A `mem4d_status` value. Kept as a number so that a status from a newer
/// library is reported rather than hidden.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Status(pub i32);

// The constants (Status::OK, Status::E_RANGE, ...) are generated from the
// header into generated.rs.
impl Status {
    /// The enum name without its prefix ("E_RANGE"), or "UNKNOWN".
    pub fn name(self) -> &'static str {
        usize::try_from(self.0)
            .ok()
            .and_then(|i| sys::MEM4D_STATUS_NAMES.get(i))
            .and_then(|name| name.strip_prefix("MEM4D_"))
            .unwrap_or("UNKNOWN")
    }

    /// The library's short description (mem4d_strerror()).
    pub fn description(self) -> String {
        // SAFETY: mem4d_strerror accepts any value and returns a static string.
        unsafe { owned_str(sys::mem4d_strerror(self.0)) }
    }
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed call: the status and the library's sentence about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// What kind of failure.
    pub status: Status,
    /// What exactly is wrong, in words a user can act on.
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}]", self.message, self.status.name())
    }
}

impl std::error::Error for Error {}

/// The result of every fallible call.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn new(status: Status, message: impl Into<String>) -> Error {
        let mut message = message.into();
        if message.is_empty() {
            message = status.description();
        }
        Error { status, message }
    }
}

/// Ok for MEM4D_OK; otherwise an Error with `message` (or the status text).
pub(crate) fn check(code: sys::mem4d_status, message: impl FnOnce() -> String) -> Result<()> {
    if code == sys::MEM4D_OK {
        Ok(())
    } else {
        Err(Error::new(Status(code), message()))
    }
}

/// Copy a C string; NULL gives "".
///
/// # Safety
/// `p` must be NULL or point to a NUL-terminated string.
pub(crate) unsafe fn owned_str(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// A C string for an argument; an interior NUL is a parse error, not a panic.
pub(crate) fn c_string(what: &str, text: &str) -> Result<CString> {
    CString::new(text).map_err(|_| Error::new(Status::E_PARSE, format!("{what} contains a NUL byte")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_status_values() {
        assert_eq!(Status::OK.name(), "OK");
        assert_eq!(Status::E_RANGE.name(), "E_RANGE");
        assert_eq!(Status::E_EXPERTS.name(), "E_EXPERTS");
        assert_eq!(Status(sys::MEM4D_STATUS_NAMES.len() as i32).name(), "UNKNOWN");
        assert_eq!(Status(-1).name(), "UNKNOWN");
        assert_eq!(format!("{:?}", Status::E_PARSE), "E_PARSE(7)");
    }
}
