// SPDX-License-Identifier: MIT
//! Raw declarations of libmem4d's public header, `include/mem4d/mem4d.h`.
//!
//! Every item is in `generated.rs`, written by `scripts/gen-bindings.py`
//! from the header (no code generator from the network is needed to build);
//! `scripts/gen-bindings.py --check` fails when it is stale.
//!
//! C enums are `c_int` type aliases with constants rather than Rust enums: a
//! newer library may return a value this crate does not know, and turning it
//! into a Rust enum would be undefined behaviour.
//!
//! Linking: `build.rs` takes `MEM4D_LIB_DIR` (the directory holding
//! `libmem4d.so`), else asks `pkg-config mem4d` when `pkg-config` exists,
//! else leaves the search to the system linker.
//!
//! The crate uses `std::os::raw` (not `core::ffi`, stable only since Rust
//! 1.64) so that Debian 12's rustc 1.63 builds it.
#![allow(non_camel_case_types)]

// scripts/gen-bindings.py writes it and the bindings-fresh test holds it to that
// output: rustfmt leaves it as written
#[rustfmt::skip]
mod generated;

pub use generated::*;
