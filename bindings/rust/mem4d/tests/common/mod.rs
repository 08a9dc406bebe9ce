// SPDX-License-Identifier: MIT
//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

use mem4d::{Layout, Model};

/// Bytes per GiB.
pub const GIB: f64 = (1u64 << 30) as f64;

/// The mem4d CLI built with the library under test: MEM4D_CLI, or
/// MEM4D_LIB_DIR/../cli/mem4d. None (the test then says it skipped).
pub fn cli() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("MEM4D_CLI") {
        return Some(PathBuf::from(path));
    }
    let lib = PathBuf::from(std::env::var_os("MEM4D_LIB_DIR")?);
    let path = lib.parent()?.join("cli").join("mem4d");
    path.is_file().then_some(path)
}

/// Run the CLI; stdout on success, None (and a note) when it is missing or fails.
pub fn run_cli(args: &[&str]) -> Option<String> {
    let cli = match cli() {
        Some(cli) => cli,
        None => {
            eprintln!("skipped: the mem4d CLI was not found (set MEM4D_CLI or MEM4D_LIB_DIR)");
            return None;
        }
    };
    let out = Command::new(&cli).args(args).output().expect("run the CLI");
    if !out.status.success() {
        eprintln!("skipped: {} {args:?} failed: {}", cli.display(), String::from_utf8_lossy(&out.stderr));
        return None;
    }
    Some(String::from_utf8(out.stdout).expect("UTF-8 output"))
}

/// Every unsigned number that follows `"key": ` in a JSON text, in order.
pub fn json_numbers(text: &str, key: &str) -> Vec<u64> {
    let pattern = format!("\"{key}\": ");
    text.match_indices(&pattern)
        .map(|(at, _)| {
            let rest = &text[at + pattern.len()..];
            let end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
            rest[..end].parse().expect("a number")
        })
        .collect()
}

/// A paper-mode layout from (key, value) pairs.
pub fn paper(values: &[(&str, u64)]) -> Layout {
    let mut layout = Layout::with(values).expect("layout");
    layout.set_str("mode", "paper").expect("paper mode");
    layout
}

pub fn llama8b() -> Model {
    Model::preset("llama3.1-8b").expect("preset")
}

/// Resident set size of this process in bytes (Linux /proc, "VmRSS: N kB").
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS line");
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}
