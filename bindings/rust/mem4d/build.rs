// SPDX-License-Identifier: MIT
//! Give this crate's tests and examples a run-time path to the libmem4d that
//! mem4d-sys linked (mem4d-sys passes its directory as DEP_MEM4D_LIB_DIR), so
//! `cargo test` and `cargo run --example estimate` need no LD_LIBRARY_PATH.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_MEM4D_LIB_DIR");
    if let Ok(dir) = std::env::var("DEP_MEM4D_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
