// SPDX-License-Identifier: MIT
//! Import: Megatron-LM argument lists and Hugging Face configs.

use std::ffi::CString;
use std::os::raw::c_char;
use std::ptr::{self, NonNull};

use mem4d_sys as sys;

use crate::describe::{Layout, Model};
use crate::error::{c_string, check, owned_str, Error, Result, Status};
use crate::generated::WorldSource;

/// An import handle: keeps the message and warnings of its last import.
pub struct Importer {
    ptr: NonNull<sys::mem4d_import>,
}

// SAFETY: an owned object without global state.
unsafe impl Send for Importer {}

impl Drop for Importer {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { sys::mem4d_import_free(self.ptr.as_ptr()) }
    }
}

/// A NULL-terminated array of C strings, and the strings it points into.
pub(crate) struct CArgv {
    _strings: Vec<CString>,
    pub(crate) pointers: Vec<*const c_char>,
}

impl CArgv {
    pub(crate) fn new(items: &[&str]) -> Result<CArgv> {
        let strings = items.iter().map(|s| c_string("an argument", s)).collect::<Result<Vec<_>>>()?;
        let mut pointers: Vec<*const c_char> = strings.iter().map(|s| s.as_ptr()).collect();
        pointers.push(ptr::null());
        Ok(CArgv { _strings: strings, pointers })
    }
}

impl Importer {
    /// A new import handle.
    pub fn new() -> Result<Importer> {
        let mut out = ptr::null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { sys::mem4d_import_new(&mut out) }, String::new)?;
        Ok(Importer { ptr: NonNull::new(out).ok_or_else(|| Error::new(Status::E_NOMEM, ""))? })
    }

    fn result(&self, code: sys::mem4d_status) -> Result<()> {
        check(code, || self.message())
    }

    /// Read a Megatron-LM argument vector (no program name) into `model` and
    /// `layout`. `env`: "NAME=value" strings for the world-size fallbacks
    /// (None: no environment). `world_size`: explicit, or 0.
    pub fn megatron(
        &mut self,
        args: &[&str],
        env: Option<&[&str]>,
        world_size: u64,
        model: &mut Model,
        layout: &mut Layout,
    ) -> Result<()> {
        let argv = CArgv::new(args)?;
        let envp = env.map(CArgv::new).transpose()?;
        let argc = i32::try_from(args.len()).map_err(|_| Error::new(Status::E_RANGE, "too many arguments"))?;
        let envp_ptr = envp.as_ref().map_or(ptr::null(), |e| e.pointers.as_ptr());
        // SAFETY: argv has argc valid strings (and a NULL); envp is NULL-terminated
        // or NULL; handles are live and exclusively borrowed.
        let code = unsafe {
            sys::mem4d_import_megatron(
                self.ptr.as_ptr(),
                argc,
                argv.pointers.as_ptr(),
                envp_ptr,
                world_size,
                model.as_mut_ptr(),
                layout.as_mut_ptr(),
            )
        };
        self.result(code)
    }

    /// Read a Hugging Face config.json file into `model`.
    pub fn hf_config(&mut self, path: impl AsRef<std::path::Path>, model: &mut Model) -> Result<()> {
        let path = path.as_ref();
        let text = c_string("a path", &path.to_string_lossy())?;
        // SAFETY: live handles; NUL-terminated path.
        let code = unsafe { sys::mem4d_import_hf_config(self.ptr.as_ptr(), text.as_ptr(), model.as_mut_ptr()) };
        self.result(code)
    }

    /// Read the text of a Hugging Face config.json into `model`.
    pub fn hf_json(&mut self, json: &str, model: &mut Model) -> Result<()> {
        // SAFETY: live handles; json points to json.len() bytes (no NUL needed).
        let code = unsafe {
            sys::mem4d_import_hf_config_buffer(self.ptr.as_ptr(), json.as_ptr().cast(), json.len(), model.as_mut_ptr())
        };
        self.result(code)
    }

    /// Read a DeepSpeed ds_config.json file into `layout` (framework
    /// deepspeed, ZeRO stage, buckets, offload, precision; all or nothing).
    pub fn deepspeed_config(&mut self, path: impl AsRef<std::path::Path>, layout: &mut Layout) -> Result<()> {
        let path = path.as_ref();
        let text = c_string("a path", &path.to_string_lossy())?;
        // SAFETY: live handles; NUL-terminated path.
        let code = unsafe { sys::mem4d_import_deepspeed_config(self.ptr.as_ptr(), text.as_ptr(), layout.as_mut_ptr()) };
        self.result(code)
    }

    /// Read the text of a DeepSpeed ds_config.json into `layout`.
    pub fn deepspeed_json(&mut self, json: &str, layout: &mut Layout) -> Result<()> {
        // SAFETY: live handles; json points to json.len() bytes (no NUL needed).
        let code = unsafe {
            sys::mem4d_import_deepspeed_config_buffer(
                self.ptr.as_ptr(),
                json.as_ptr().cast(),
                json.len(),
                layout.as_mut_ptr(),
            )
        };
        self.result(code)
    }

    /// Read a torchtitan job TOML file into `layout` (framework torchtitan,
    /// degrees, batch, the schedule's stages per rank and, given the model,
    /// torchtitan's layer split; all or nothing). `world`: GPUs in the job,
    /// or 0 (needed when data_parallel_shard_degree is -1).
    pub fn torchtitan_config(
        &mut self,
        path: impl AsRef<std::path::Path>,
        world: u64,
        model: Option<&Model>,
        layout: &mut Layout,
    ) -> Result<()> {
        let path = path.as_ref();
        let text = c_string("a path", &path.to_string_lossy())?;
        let model = model.map_or(std::ptr::null(), |m| m.as_ptr());
        // SAFETY: live handles (model may be NULL); NUL-terminated path.
        let code = unsafe {
            sys::mem4d_import_torchtitan_config(self.ptr.as_ptr(), text.as_ptr(), world, model, layout.as_mut_ptr())
        };
        self.result(code)
    }

    /// Read the text of a torchtitan job TOML into `layout`.
    pub fn torchtitan_toml(
        &mut self,
        toml: &str,
        world: u64,
        model: Option<&Model>,
        layout: &mut Layout,
    ) -> Result<()> {
        let model = model.map_or(std::ptr::null(), |m| m.as_ptr());
        // SAFETY: live handles (model may be NULL); toml points to toml.len() bytes (no NUL needed).
        let code = unsafe {
            sys::mem4d_import_torchtitan_config_buffer(
                self.ptr.as_ptr(),
                toml.as_ptr().cast(),
                toml.len(),
                world,
                model,
                layout.as_mut_ptr(),
            )
        };
        self.result(code)
    }

    /// Why the last import failed, or "".
    pub fn message(&self) -> String {
        // SAFETY: live handle; copied at once.
        unsafe { owned_str(sys::mem4d_import_message(self.ptr.as_ptr())) }
    }

    /// Warnings of the last import.
    pub fn warnings(&self) -> Vec<String> {
        // SAFETY: live handle; each string copied at once.
        unsafe {
            (0..sys::mem4d_import_warning_count(self.ptr.as_ptr()))
                .map(|i| owned_str(sys::mem4d_import_warning(self.ptr.as_ptr(), i)))
                .collect()
        }
    }

    /// Where the last Megatron import took the world size from.
    pub fn world_source(&self) -> WorldSource {
        // SAFETY: live handle.
        WorldSource::from_raw(unsafe { sys::mem4d_import_world_source(self.ptr.as_ptr()) })
    }
}

/// What [`import_megatron`] read.
#[derive(Debug)]
pub struct MegatronImport {
    /// The architecture.
    pub model: Model,
    /// The configuration.
    pub layout: Layout,
    /// Flags that affect memory but are not modelled.
    pub warnings: Vec<String>,
    /// Where the world size came from.
    pub world_source: WorldSource,
}

/// Read a Megatron-LM argument vector into a new model and layout.
pub fn import_megatron(args: &[&str], env: Option<&[&str]>, world_size: u64) -> Result<MegatronImport> {
    let mut model = Model::new()?;
    let mut layout = Layout::new()?;
    let mut importer = Importer::new()?;
    importer.megatron(args, env, world_size, &mut model, &mut layout)?;
    Ok(MegatronImport { model, layout, warnings: importer.warnings(), world_source: importer.world_source() })
}

impl std::fmt::Debug for Importer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Importer").field("message", &self.message()).field("warnings", &self.warnings()).finish()
    }
}
