// SPDX-License-Identifier: MIT
//! The hand-written declarations of src/lib.rs must match include/mem4d/mem4d.h.
//!
//! Both files are parsed here (no crates: a small tokenizer is enough for the
//! header's one-declaration-per-statement style). Every type is reduced to an
//! ABI class: void, i32 (int and every enum), u32, u64 (uint64_t; size_t when
//! it is 64 bits), f64, str (char pointer), handle:<struct>, plus one '*' per
//! further level of pointer. A function only one side has, a different arity
//! or a different class fails; so does an enum constant with another value.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

type Sig = (String, Vec<String>);

fn read(rel: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The header of this checkout, or MEM4D_HEADER (e.g. an installed one).
fn header() -> String {
    match std::env::var_os("MEM4D_HEADER") {
        Some(path) => fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.to_string_lossy())),
        None => read("../../../include/mem4d/mem4d.h"),
    }
}

fn binding() -> String {
    read("src/lib.rs")
}

/// Remove /* */ and // comments (the header has no comment-like strings).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(tail) = rest.strip_prefix("/*") {
            let end = tail.find("*/").expect("unterminated comment");
            rest = &tail[end + 2..];
            out.push(' ');
        } else if let Some(tail) = rest.strip_prefix("//") {
            rest = tail.find('\n').map_or("", |end| &tail[end..]);
        } else {
            let ch = rest.chars().next().unwrap();
            out.push(ch);
            rest = &rest[ch.len_utf8()..];
        }
    }
    out
}

fn idents(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).collect()
}

/// Split "type name" into (type, name): the name is the last identifier.
fn split_decl(decl: &str) -> (&str, &str) {
    let decl = decl.trim();
    let cut = decl.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
    (&decl[..cut], &decl[cut..])
}

fn usize_class() -> &'static str {
    match std::mem::size_of::<usize>() {
        8 => "u64",
        _ => "u32",
    }
}

struct CHeader {
    enums: BTreeMap<String, Vec<(String, i64)>>,
    handles: Vec<String>,
    functions: BTreeMap<String, Sig>,
}

/// The header without comments and preprocessor lines (so `#define MEM4D_API`
/// and `extern "C" {` are not mistaken for parts of declarations).
fn header_code(raw: &str) -> String {
    strip_comments(raw)
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.contains("extern \"C\""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn parse_header(raw: &str) -> CHeader {
    let text = header_code(raw);
    let mut enums = BTreeMap::new();
    let mut handles = Vec::new();
    for stmt in text.split(';') {
        let stmt = stmt.trim();
        if let Some(body) = stmt.strip_prefix("typedef enum") {
            let open = body.find('{').expect("enum body");
            let close = body.rfind('}').expect("enum end");
            let name = idents(&body[close..]).last().unwrap().to_string();
            let values = body[open + 1..close]
                .split(',')
                .filter(|e| !e.trim().is_empty())
                .map(|e| {
                    let (k, v) = e.split_once('=').expect("enum values are explicit");
                    (k.trim().to_string(), v.trim().parse().unwrap())
                })
                .collect();
            enums.insert(name, values);
        } else if stmt.starts_with("typedef struct") {
            let words = idents(stmt);
            assert_eq!(words.len(), 4, "handle typedef: {stmt}");
            handles.push(words[3].to_string());
        }
    }
    let mut header = CHeader { enums, handles, functions: BTreeMap::new() };
    for stmt in text.split(';') {
        let stmt = stmt.trim();
        let decl = match stmt.strip_prefix("MEM4D_API") {
            Some(decl) => decl,
            None => continue,
        };
        let open = decl.find('(').unwrap();
        let close = decl.rfind(')').unwrap();
        let (ret, name) = split_decl(&decl[..open]);
        let params = decl[open + 1..close].trim();
        let args = if params == "void" {
            Vec::new()
        } else {
            params.split(',').map(|p| classify_c(&header, split_decl(p).0)).collect()
        };
        let ret = classify_c(&header, ret);
        header.functions.insert(name.to_string(), (ret, args));
    }
    header
}

fn classify_c(h: &CHeader, ctype: &str) -> String {
    let stars = ctype.matches('*').count();
    let words: Vec<&str> = idents(ctype).into_iter().filter(|w| *w != "const").collect();
    assert_eq!(words.len(), 1, "C type {ctype:?}");
    let base = words[0];
    let (class, stars) = match base {
        "char" => ("str".to_string(), stars - 1),
        "void" => ("void".to_string(), stars),
        "int" => ("i32".to_string(), stars),
        "uint32_t" => ("u32".to_string(), stars),
        "uint64_t" => ("u64".to_string(), stars),
        "size_t" => (usize_class().to_string(), stars),
        "double" => ("f64".to_string(), stars),
        b if h.enums.contains_key(b) => ("i32".to_string(), stars),
        b if h.handles.iter().any(|x| x == b) => (format!("handle:{b}"), stars - 1),
        other => panic!("unknown C type {other:?} in the header"),
    };
    class + &"*".repeat(stars)
}

struct RustDecls {
    aliases: BTreeMap<String, String>,
    consts: BTreeMap<String, i64>,
    functions: BTreeMap<String, Sig>,
}

fn parse_binding(raw: &str) -> RustDecls {
    let text = strip_comments(raw);
    let mut aliases = BTreeMap::new();
    let mut consts = BTreeMap::new();
    for stmt in text.split(';') {
        let stmt = stmt.trim();
        if let Some(rest) = stmt.strip_prefix("pub type ") {
            let (name, target) = rest.split_once('=').unwrap();
            aliases.insert(name.trim().to_string(), target.trim().to_string());
        } else if let Some(rest) = stmt.strip_prefix("pub const ") {
            let (lhs, value) = rest.split_once('=').unwrap();
            let name = lhs.split(':').next().unwrap().trim();
            consts.insert(name.to_string(), value.trim().parse().unwrap());
        }
    }
    let start = text.find("extern \"C\" {").expect("extern block");
    let block = &text[start..];
    let block = &block[..block.find("\n}").expect("end of extern block")];
    let mut decls = RustDecls { aliases, consts, functions: BTreeMap::new() };
    for stmt in block.split(';') {
        let at = match stmt.find("pub fn ") {
            Some(at) => at,
            None => continue,
        };
        let decl = &stmt[at + 7..];
        let open = decl.find('(').unwrap();
        let close = decl.rfind(')').unwrap();
        let name = decl[..open].trim().to_string();
        let args = decl[open + 1..close]
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .map(|p| classify_rust(&decls, p.split_once(':').unwrap().1))
            .collect();
        let ret = match decl[close + 1..].split_once("->") {
            Some((_, ty)) => classify_rust(&decls, ty),
            None => "void".to_string(),
        };
        decls.functions.insert(name, (ret, args));
    }
    decls
}

fn classify_rust(d: &RustDecls, ty: &str) -> String {
    let mut ty = ty.trim();
    let mut stars = 0;
    while let Some(rest) = ty.strip_prefix("*const ").or_else(|| ty.strip_prefix("*mut ")) {
        stars += 1;
        ty = rest.trim();
    }
    let mut base = ty.to_string();
    while let Some(target) = d.aliases.get(&base) {
        base = target.clone();
    }
    let (class, stars) = match base.as_str() {
        "c_char" => ("str".to_string(), stars - 1),
        "c_int" | "i32" => ("i32".to_string(), stars),
        "u32" => ("u32".to_string(), stars),
        "u64" => ("u64".to_string(), stars),
        "usize" => (usize_class().to_string(), stars),
        "c_double" | "f64" => ("f64".to_string(), stars),
        b if b.starts_with("mem4d_") => (format!("handle:{b}"), stars - 1),
        other => panic!("unknown Rust type {other:?} in src/lib.rs"),
    };
    class + &"*".repeat(stars)
}

#[test]
fn header_parses_every_declaration() {
    let text = header_code(&header());
    let declared = text.lines().filter(|l| l.starts_with("MEM4D_API ")).count();
    assert!(declared > 80, "only {declared} declarations found");
    assert_eq!(parse_header(&header()).functions.len(), declared);
}

#[test]
fn every_header_function_is_declared() {
    let h = parse_header(&header());
    let b = parse_binding(&binding());
    let missing: Vec<_> = h.functions.keys().filter(|n| !b.functions.contains_key(*n)).collect();
    assert!(missing.is_empty(), "header functions mem4d-sys lacks: {missing:?}");
}

#[test]
fn no_function_the_header_lacks() {
    let h = parse_header(&header());
    let b = parse_binding(&binding());
    let extra: Vec<_> = b.functions.keys().filter(|n| !h.functions.contains_key(*n)).collect();
    assert!(extra.is_empty(), "mem4d-sys functions the header lacks: {extra:?}");
}

#[test]
fn signatures_match() {
    let h = parse_header(&header());
    let b = parse_binding(&binding());
    let mut wrong = Vec::new();
    for (name, (h_ret, h_args)) in &h.functions {
        if let Some((b_ret, b_args)) = b.functions.get(name) {
            if h_args.len() != b_args.len() {
                wrong.push(format!("{name}: arity {} in the header, {} here", h_args.len(), b_args.len()));
            } else if h_ret != b_ret || h_args != b_args {
                wrong.push(format!("{name}: header ({h_ret}; {h_args:?}) vs sys ({b_ret}; {b_args:?})"));
            }
        }
    }
    assert!(wrong.is_empty(), "mismatched declarations:\n{}", wrong.join("\n"));
}

#[test]
fn enum_constants_match() {
    let h = parse_header(&header());
    let b = parse_binding(&binding());
    let mut wrong = Vec::new();
    for (ty, values) in &h.enums {
        if !b.aliases.contains_key(ty) {
            wrong.push(format!("enum type {ty} missing"));
        }
        for (name, value) in values {
            match b.consts.get(name) {
                Some(v) if v == value => {}
                Some(v) => wrong.push(format!("{name} = {v}, header says {value}")),
                None => wrong.push(format!("{name} missing")),
            }
        }
    }
    assert!(wrong.is_empty(), "enum constants:\n{}", wrong.join("\n"));
}

#[test]
fn checker_catches_a_changed_declaration() {
    // The comparison must be able to fail: drop a parameter from one function.
    let text = binding().replace(
        "pub fn mem4d_report_peak_stage(report: *const mem4d_report) -> u32",
        "pub fn mem4d_report_peak_stage() -> u32",
    );
    let b = parse_binding(&text);
    let h = parse_header(&header());
    assert_ne!(b.functions["mem4d_report_peak_stage"], h.functions["mem4d_report_peak_stage"]);
}
