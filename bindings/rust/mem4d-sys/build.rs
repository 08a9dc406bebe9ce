// SPDX-License-Identifier: MIT
//! Find libmem4d without any crate from the network.
//!
//! 1. `MEM4D_LIB_DIR`: a directory holding libmem4d.so (a meson build tree's
//!    `lib/`, or an install's libdir).
//! 2. `pkg-config --libs-only-L mem4d`, when a pkg-config program exists
//!    (a meson build tree works too: PKG_CONFIG_PATH=<build>/meson-uninstalled).
//! 3. Otherwise the system linker's default paths.
//!
//! The directory found is passed to dependent build scripts as
//! `DEP_MEM4D_LIB_DIR` (this package `links = "mem4d"`), so the safe crate can
//! give its tests and examples a run-time path to the same library.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn pkg_config_dirs() -> Option<Vec<PathBuf>> {
    let program = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    let out = Command::new(program).args(["--libs-only-L", "mem4d"]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.split_whitespace().filter_map(|flag| flag.strip_prefix("-L")).map(PathBuf::from).collect())
}

fn main() {
    for var in ["MEM4D_LIB_DIR", "PKG_CONFIG", "PKG_CONFIG_PATH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let dirs: Vec<PathBuf> = match env::var_os("MEM4D_LIB_DIR") {
        Some(dir) => vec![PathBuf::from(dir)],
        None => match pkg_config_dirs() {
            Some(dirs) => dirs,
            None => {
                println!(
                    "cargo:warning=libmem4d: MEM4D_LIB_DIR unset and pkg-config found no mem4d; \
                     relying on the linker's default paths"
                );
                Vec::new()
            }
        },
    };
    for dir in &dirs {
        println!("cargo:rustc-link-search=native={}", dir.display());
        // This crate's own tests run against the library they linked.
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    }
    if let Some(dir) = dirs.first() {
        println!("cargo:lib_dir={}", dir.display());
    }
    println!("cargo:rustc-link-lib=dylib=mem4d");
}
