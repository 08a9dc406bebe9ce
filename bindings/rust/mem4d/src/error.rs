// SPDX-License-Identifier: MIT
//! Status codes and the error that carries them.

use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::fmt;

use mem4d_sys as sys;

/// A `mem4d_status` value. Kept as a number so that a status from a newer
/// library is reported rather than hidden.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Status(pub i32);

const NAMES: [&str; 23] = [
    "OK",
    "END",
    "E_INVALID_ARG",
    "E_NOMEM",
    "E_RANGE",
    "E_UNKNOWN_KEY",
    "E_UNKNOWN_PRESET",
    "E_PARSE",
    "E_MODEL",
    "E_HEADS_TP",
    "E_KV_HEADS_TP",
    "E_LAYERS_PP",
    "E_WORLD",
    "E_SEQ",
    "E_BATCH",
    "E_UNSUPPORTED",
    "E_NO_JSON",
    "E_IO",
    "E_JSON",
    "E_MISSING",
    "E_CONFLICT",
    "E_DIM_TP",
    "E_EXPERTS",
];

#[allow(missing_docs)]
impl Status {
    pub const OK: Status = Status(sys::MEM4D_OK);
    pub const END: Status = Status(sys::MEM4D_END);
    pub const E_INVALID_ARG: Status = Status(sys::MEM4D_E_INVALID_ARG);
    pub const E_NOMEM: Status = Status(sys::MEM4D_E_NOMEM);
    pub const E_RANGE: Status = Status(sys::MEM4D_E_RANGE);
    pub const E_UNKNOWN_KEY: Status = Status(sys::MEM4D_E_UNKNOWN_KEY);
    pub const E_UNKNOWN_PRESET: Status = Status(sys::MEM4D_E_UNKNOWN_PRESET);
    pub const E_PARSE: Status = Status(sys::MEM4D_E_PARSE);
    pub const E_MODEL: Status = Status(sys::MEM4D_E_MODEL);
    pub const E_HEADS_TP: Status = Status(sys::MEM4D_E_HEADS_TP);
    pub const E_KV_HEADS_TP: Status = Status(sys::MEM4D_E_KV_HEADS_TP);
    pub const E_LAYERS_PP: Status = Status(sys::MEM4D_E_LAYERS_PP);
    pub const E_WORLD: Status = Status(sys::MEM4D_E_WORLD);
    pub const E_SEQ: Status = Status(sys::MEM4D_E_SEQ);
    pub const E_BATCH: Status = Status(sys::MEM4D_E_BATCH);
    pub const E_UNSUPPORTED: Status = Status(sys::MEM4D_E_UNSUPPORTED);
    pub const E_NO_JSON: Status = Status(sys::MEM4D_E_NO_JSON);
    pub const E_IO: Status = Status(sys::MEM4D_E_IO);
    pub const E_JSON: Status = Status(sys::MEM4D_E_JSON);
    pub const E_MISSING: Status = Status(sys::MEM4D_E_MISSING);
    pub const E_CONFLICT: Status = Status(sys::MEM4D_E_CONFLICT);
    pub const E_DIM_TP: Status = Status(sys::MEM4D_E_DIM_TP);
    pub const E_EXPERTS: Status = Status(sys::MEM4D_E_EXPERTS);

    /// The enum name without its prefix ("E_RANGE"), or "UNKNOWN".
    pub fn name(self) -> &'static str {
        usize::try_from(self.0).ok().and_then(|i| NAMES.get(i)).copied().unwrap_or("UNKNOWN")
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
        macro_rules! check_names {
            ($($c:ident),*) => {$(
                assert_eq!(Status::$c.name(), stringify!($c));
            )*};
        }
        check_names!(
            OK,
            END,
            E_INVALID_ARG,
            E_NOMEM,
            E_RANGE,
            E_UNKNOWN_KEY,
            E_UNKNOWN_PRESET,
            E_PARSE,
            E_MODEL,
            E_HEADS_TP,
            E_KV_HEADS_TP,
            E_LAYERS_PP,
            E_WORLD,
            E_SEQ,
            E_BATCH,
            E_UNSUPPORTED,
            E_NO_JSON,
            E_IO,
            E_JSON,
            E_MISSING,
            E_CONFLICT,
            E_DIM_TP,
            E_EXPERTS
        );
        assert_eq!(NAMES.len(), 23);
    }
}
