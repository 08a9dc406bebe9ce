// SPDX-License-Identifier: MIT
//! Model, Layout and Device: owned handles with string-keyed parameters.

use std::os::raw::{c_char, c_int};
use std::ptr::{self, NonNull};

use mem4d_sys as sys;

use crate::error::{c_string, check, owned_str, Error, Result, Status};
use crate::generated::ParamKind;

/// The functions of one described kind ("model", "layout", "device").
struct Api<T> {
    kind: &'static str,
    new: unsafe extern "C" fn(*mut *mut T) -> c_int,
    clone: unsafe extern "C" fn(*const T, *mut *mut T) -> c_int,
    free: unsafe extern "C" fn(*mut T),
    set: unsafe extern "C" fn(*mut T, c_int, u64) -> c_int,
    get: unsafe extern "C" fn(*const T, c_int, *mut u64) -> c_int,
    set_str: unsafe extern "C" fn(*mut T, *const c_char, *const c_char) -> c_int,
    count: unsafe extern "C" fn() -> usize,
    name: unsafe extern "C" fn(c_int) -> *const c_char,
    from_name: unsafe extern "C" fn(*const c_char, *mut c_int) -> c_int,
    bounds: unsafe extern "C" fn(c_int, *mut u64, *mut u64) -> c_int,
    kind_of: unsafe extern "C" fn(c_int, *mut c_int) -> c_int,
    default_of: unsafe extern "C" fn(c_int, *mut u64) -> c_int,
}

impl<T> Api<T> {
    fn new_handle(&self) -> Result<NonNull<T>> {
        let mut out = ptr::null_mut();
        // SAFETY: out is a valid out-pointer.
        check(unsafe { (self.new)(&mut out) }, String::new)?;
        NonNull::new(out).ok_or_else(|| Error::new(Status::E_NOMEM, ""))
    }

    fn key(&self, name: &str) -> Result<c_int> {
        let text = c_string("a parameter name", name)?;
        let mut key = 0;
        // SAFETY: text is NUL-terminated; key is a valid out-pointer.
        let code = unsafe { (self.from_name)(text.as_ptr(), &mut key) };
        check(code, || format!("unknown {} parameter '{name}'", self.kind))?;
        Ok(key)
    }

    fn bounds(&self, name: &str) -> Result<(u64, u64)> {
        let key = self.key(name)?;
        let (mut lo, mut hi) = (0, 0);
        // SAFETY: valid out-pointers.
        check(unsafe { (self.bounds)(key, &mut lo, &mut hi) }, String::new)?;
        Ok((lo, hi))
    }

    fn kind_of(&self, name: &str) -> Result<ParamKind> {
        let key = self.key(name)?;
        let mut kind = 0;
        // SAFETY: a valid out-pointer.
        check(unsafe { (self.kind_of)(key, &mut kind) }, String::new)?;
        Ok(ParamKind::from_raw(kind))
    }

    fn default_of(&self, name: &str) -> Result<u64> {
        let key = self.key(name)?;
        let mut value = 0;
        // SAFETY: a valid out-pointer.
        check(unsafe { (self.default_of)(key, &mut value) }, String::new)?;
        Ok(value)
    }

    fn keys(&self) -> Vec<String> {
        // SAFETY: count and name take no handle; name returns a static string.
        let count = unsafe { (self.count)() };
        (0..count).map(|i| unsafe { owned_str((self.name)(i as c_int)) }).collect()
    }

    fn set(&self, h: NonNull<T>, name: &str, value: u64) -> Result<()> {
        let key = self.key(name)?;
        // SAFETY: h is a live handle owned by the caller.
        let code = unsafe { (self.set)(h.as_ptr(), key, value) };
        check(code, || match self.bounds(name) {
            Ok((lo, hi)) if code == sys::MEM4D_E_RANGE => {
                format!("{} parameter '{name}' = {value} is outside [{lo}, {hi}]", self.kind)
            }
            _ => String::new(),
        })
    }

    fn set_str(&self, h: NonNull<T>, name: &str, value: &str) -> Result<()> {
        let (n, v) = (c_string("a parameter name", name)?, c_string("a value", value)?);
        // SAFETY: h is live; both strings are NUL-terminated.
        let code = unsafe { (self.set_str)(h.as_ptr(), n.as_ptr(), v.as_ptr()) };
        check(code, || format!("{} parameter '{name}' = '{value}' is not accepted", self.kind))
    }

    fn get(&self, h: NonNull<T>, name: &str) -> Result<u64> {
        let key = self.key(name)?;
        let mut value = 0;
        // SAFETY: h is live; value is a valid out-pointer.
        check(unsafe { (self.get)(h.as_ptr(), key, &mut value) }, String::new)?;
        Ok(value)
    }

    fn clone_handle(&self, h: NonNull<T>) -> Result<NonNull<T>> {
        let mut out = ptr::null_mut();
        // SAFETY: h is live; out is a valid out-pointer.
        check(unsafe { (self.clone)(h.as_ptr(), &mut out) }, String::new)?;
        NonNull::new(out).ok_or_else(|| Error::new(Status::E_NOMEM, ""))
    }
}

// The C enums of the keys are c_int aliases, so the functions fit Api<T> as they are.
macro_rules! described {
    ($(#[$doc:meta])* $ty:ident, $raw:ty, $api:ident, $kind:literal, $prefix:ident) => {
        $(#[$doc])*
        pub struct $ty {
            ptr: NonNull<$raw>,
        }

        paste_api!($api, $raw, $kind, $prefix);

        // SAFETY: the library has no global state; a handle may move between
        // threads, and its const functions may run on many threads at once.
        unsafe impl Send for $ty {}
        unsafe impl Sync for $ty {}

        impl $ty {
            /// A new object with every parameter at its default.
            pub fn new() -> Result<$ty> {
                Ok($ty { ptr: $api.new_handle()? })
            }

            /// Set parameters from (name, value) pairs.
            pub fn with(values: &[(&str, u64)]) -> Result<$ty> {
                let mut object = $ty::new()?;
                for (name, value) in values {
                    object.set(name, *value)?;
                }
                Ok(object)
            }

            /// Set a parameter by name or alias ("tp", "tensor_model_parallel_size").
            pub fn set(&mut self, name: &str, value: u64) -> Result<&mut $ty> {
                $api.set(self.ptr, name, value)?;
                Ok(self)
            }

            /// Set a parameter from text ("recompute", "full"; "sp", "true").
            pub fn set_str(&mut self, name: &str, value: &str) -> Result<&mut $ty> {
                $api.set_str(self.ptr, name, value)?;
                Ok(self)
            }

            /// Read a parameter.
            pub fn get(&self, name: &str) -> Result<u64> {
                $api.get(self.ptr, name)
            }

            /// Canonical names of every parameter, in key order.
            pub fn keys() -> Vec<String> {
                $api.keys()
            }

            /// (min, max) accepted for a parameter.
            pub fn bounds(name: &str) -> Result<(u64, u64)> {
                $api.bounds(name)
            }

            /// What a parameter's number means (integer, boolean, choice, bytes, ...).
            pub fn param_kind(name: &str) -> Result<ParamKind> {
                $api.kind_of(name)
            }

            /// The value a new object holds for a parameter.
            pub fn param_default(name: &str) -> Result<u64> {
                $api.default_of(name)
            }

            /// Every parameter with its value, in key order.
            pub fn values(&self) -> Vec<(String, u64)> {
                $ty::keys()
                    .into_iter()
                    .map(|k| {
                        let v = self.get(&k).unwrap_or(0);
                        (k, v)
                    })
                    .collect()
            }

            /// A copy (fails only when memory runs out).
            pub fn try_clone(&self) -> Result<$ty> {
                Ok($ty { ptr: $api.clone_handle(self.ptr)? })
            }

            /// The raw handle, for calls through [`crate::sys`].
            pub fn as_ptr(&self) -> *const $raw {
                self.ptr.as_ptr()
            }

            /// The raw handle, mutable.
            pub fn as_mut_ptr(&mut self) -> *mut $raw {
                self.ptr.as_ptr()
            }
        }

        impl Clone for $ty {
            fn clone(&self) -> $ty {
                self.try_clone().expect(concat!("out of memory copying a ", $kind))
            }
        }

        impl Drop for $ty {
            fn drop(&mut self) {
                // SAFETY: we own the handle; it is freed exactly once.
                unsafe { ($api.free)(self.ptr.as_ptr()) }
            }
        }

        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let mut s = f.debug_struct(stringify!($ty));
                for (k, v) in self.values().iter().filter(|(_, v)| *v != 0) {
                    s.field(k, v);
                }
                s.finish()
            }
        }
    };
}

macro_rules! paste_api {
    ($api:ident, $raw:ty, $kind:literal, model) => {
        static $api: Api<$raw> = Api {
            kind: $kind,
            new: sys::mem4d_model_new,
            clone: sys::mem4d_model_clone,
            free: sys::mem4d_model_free,
            set: sys::mem4d_model_set,
            get: sys::mem4d_model_get,
            set_str: sys::mem4d_model_set_str,
            count: sys::mem4d_model_param_count,
            name: sys::mem4d_model_param_name,
            from_name: sys::mem4d_model_param_from_name,
            bounds: sys::mem4d_model_param_bounds,
            kind_of: sys::mem4d_model_param_kind,
            default_of: sys::mem4d_model_param_default,
        };
    };
    ($api:ident, $raw:ty, $kind:literal, layout) => {
        static $api: Api<$raw> = Api {
            kind: $kind,
            new: sys::mem4d_layout_new,
            clone: sys::mem4d_layout_clone,
            free: sys::mem4d_layout_free,
            set: sys::mem4d_layout_set,
            get: sys::mem4d_layout_get,
            set_str: sys::mem4d_layout_set_str,
            count: sys::mem4d_layout_param_count,
            name: sys::mem4d_layout_param_name,
            from_name: sys::mem4d_layout_param_from_name,
            bounds: sys::mem4d_layout_param_bounds,
            kind_of: sys::mem4d_layout_param_kind,
            default_of: sys::mem4d_layout_param_default,
        };
    };
    ($api:ident, $raw:ty, $kind:literal, device) => {
        static $api: Api<$raw> = Api {
            kind: $kind,
            new: sys::mem4d_device_new,
            clone: sys::mem4d_device_clone,
            free: sys::mem4d_device_free,
            set: sys::mem4d_device_set,
            get: sys::mem4d_device_get,
            set_str: sys::mem4d_device_set_str,
            count: sys::mem4d_device_param_count,
            name: sys::mem4d_device_param_name,
            from_name: sys::mem4d_device_param_from_name,
            bounds: sys::mem4d_device_param_bounds,
            kind_of: sys::mem4d_device_param_kind,
            default_of: sys::mem4d_device_param_default,
        };
    };
}

described!(
    /// A transformer architecture.
    Model, sys::mem4d_model, MODEL_API, "model", model
);
described!(
    /// A training layout: parallel sizes, batch, sequence, precision, mode.
    Layout, sys::mem4d_layout, LAYOUT_API, "layout", layout
);
described!(
    /// One GPU: memory, speeds and fixed costs.
    Device, sys::mem4d_device, DEVICE_API, "device", device
);

fn preset_names(
    count: unsafe extern "C" fn() -> usize,
    name: unsafe extern "C" fn(usize) -> *const c_char,
) -> Vec<String> {
    // SAFETY: both take no handle; names are static strings.
    unsafe { (0..count()).map(|i| owned_str(name(i))).collect() }
}

impl Model {
    /// A built-in preset such as "llama3.1-70b" (case-insensitive).
    pub fn preset(name: &str) -> Result<Model> {
        let text = c_string("a preset name", name)?;
        let mut out = ptr::null_mut();
        // SAFETY: text is NUL-terminated; out is a valid out-pointer.
        let code = unsafe { sys::mem4d_model_new_preset(text.as_ptr(), &mut out) };
        check(code, || format!("unknown model preset '{name}'"))?;
        Ok(Model { ptr: NonNull::new(out).ok_or_else(|| Error::new(Status::E_NOMEM, ""))? })
    }

    /// Names of the built-in presets.
    pub fn presets() -> Vec<String> {
        preset_names(sys::mem4d_model_preset_count, sys::mem4d_model_preset_name)
    }

    /// A model read from a Hugging Face config.json file.
    pub fn from_hf_config(path: impl AsRef<std::path::Path>) -> Result<Model> {
        let mut model = Model::new()?;
        crate::Importer::new()?.hf_config(path, &mut model)?;
        Ok(model)
    }

    /// A model read from the text of a Hugging Face config.json.
    pub fn from_hf_json(json: &str) -> Result<Model> {
        let mut model = Model::new()?;
        crate::Importer::new()?.hf_json(json, &mut model)?;
        Ok(model)
    }

    /// Its preset name, or "custom".
    pub fn name(&self) -> String {
        // SAFETY: the string lives as long as the model; it is copied at once.
        unsafe { owned_str(sys::mem4d_model_name(self.ptr.as_ptr())) }
    }

    /// Rename it (at most 63 bytes are kept).
    pub fn set_name(&mut self, name: &str) -> Result<()> {
        let text = c_string("a model name", name)?;
        // SAFETY: live handle; NUL-terminated string.
        check(unsafe { sys::mem4d_model_set_name(self.ptr.as_ptr(), text.as_ptr()) }, String::new)
    }

    /// Total parameter count.
    pub fn num_params(&self) -> Result<u64> {
        let mut count = 0;
        // SAFETY: live handle; valid out-pointer.
        check(unsafe { sys::mem4d_model_num_params(self.ptr.as_ptr(), &mut count) }, String::new)?;
        Ok(count)
    }

    /// Ok, or an Error saying what is inconsistent.
    pub fn validate(&self) -> Result<()> {
        let mut why = [0 as c_char; 512];
        // SAFETY: live handle; why is a writable buffer of the given size.
        let code = unsafe { sys::mem4d_model_validate(self.ptr.as_ptr(), why.as_mut_ptr(), why.len()) };
        check(code, || unsafe { owned_str(why.as_ptr()) })
    }
}

impl Layout {
    /// The name of an enumerated parameter's current value ("full"), if any.
    pub fn value_name(&self, name: &str) -> Result<Option<String>> {
        let key = LAYOUT_API.key(name)?;
        let value = self.get(name)?;
        // SAFETY: takes no handle; returns a static string or NULL.
        let text = unsafe { sys::mem4d_layout_value_name(key, value) };
        Ok((!text.is_null()).then(|| unsafe { owned_str(text) }))
    }

    /// Ok, or an Error naming the first rule this layout breaks for `model`.
    pub fn validate(&self, model: &Model) -> Result<()> {
        let mut why = [0 as c_char; 512];
        // SAFETY: live handles; why is a writable buffer of the given size.
        let code = unsafe { sys::mem4d_validate(model.as_ptr(), self.as_ptr(), why.as_mut_ptr(), why.len()) };
        check(code, || unsafe { owned_str(why.as_ptr()) })
    }

    /// The Megatron-LM flags that set this layout, as one line.
    pub fn megatron_args(&self, model: &Model) -> Result<String> {
        let mut need = 0usize;
        // SAFETY: live handles; a NULL buffer of size 0 only measures.
        unsafe { sys::mem4d_layout_megatron_args(model.as_ptr(), self.as_ptr(), ptr::null_mut(), 0, &mut need) };
        let mut buf = vec![0 as c_char; need + 1];
        // SAFETY: live handles; buf is writable for buf.len() bytes.
        let code = unsafe {
            sys::mem4d_layout_megatron_args(model.as_ptr(), self.as_ptr(), buf.as_mut_ptr(), buf.len(), ptr::null_mut())
        };
        check(code, String::new)?;
        // SAFETY: the library wrote a NUL-terminated line into buf.
        Ok(unsafe { owned_str(buf.as_ptr()) })
    }

    /// Overwrite this layout with `other` without allocating.
    pub fn copy_from(&mut self, other: &Layout) -> Result<()> {
        // SAFETY: both handles are live and distinct (&mut vs &).
        check(unsafe { sys::mem4d_layout_copy(self.as_mut_ptr(), other.as_ptr()) }, String::new)
    }
}

impl Device {
    /// A built-in preset such as "h100-80" (case-insensitive).
    pub fn preset(name: &str) -> Result<Device> {
        let text = c_string("a preset name", name)?;
        let mut out = ptr::null_mut();
        // SAFETY: text is NUL-terminated; out is a valid out-pointer.
        let code = unsafe { sys::mem4d_device_new_preset(text.as_ptr(), &mut out) };
        check(code, || format!("unknown device preset '{name}'"))?;
        Ok(Device { ptr: NonNull::new(out).ok_or_else(|| Error::new(Status::E_NOMEM, ""))? })
    }

    /// Names of the built-in presets.
    pub fn presets() -> Vec<String> {
        preset_names(sys::mem4d_device_preset_count, sys::mem4d_device_preset_name)
    }

    /// Its preset name, or "custom".
    pub fn name(&self) -> String {
        // SAFETY: the string lives as long as the device; it is copied at once.
        unsafe { owned_str(sys::mem4d_device_name(self.ptr.as_ptr())) }
    }
}
