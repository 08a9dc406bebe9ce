# SPDX-License-Identifier: MIT
"""The binding's table of C signatures must match include/mem4d/mem4d.h.

Each type is reduced to an ABI class on both sides: void, i32 (int and every
enum typedef), u32, u64 (uint64_t, and size_t where it is 64 bits wide), f64,
str (char *), handle:<struct> (pointer to an opaque handle), and a trailing
'*' per further level of pointer. A symbol only one side has, a different
parameter count, or a different class fails.
"""

import ctypes
import re
import unittest

import support
from support import _capi

_SIZE_CLASS = {4: "u32", 8: "u64"}[ctypes.sizeof(ctypes.c_size_t)]
_BASE = {"void": "void", "int": "i32", "uint32_t": "u32", "uint64_t": "u64",
         "size_t": _SIZE_CLASS, "double": "f64"}


def _strip_comments(text):
    """The header's code: no comments, no preprocessor lines (so `#define
    MEM4D_API` is not taken for a declaration), no `extern "C" {`."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return "\n".join(line for line in text.splitlines()
                     if not line.lstrip().startswith("#") and 'extern "C"' not in line)


def parse_header(path=support.HEADER):
    """{name: (return class, [parameter classes])} of every MEM4D_API function."""
    with open(path, encoding="utf-8") as f:
        text = _strip_comments(f.read())
    enums = set(re.findall(r"typedef\s+enum\s+\w*\s*\{[^}]*\}\s*(\w+)\s*;", text))
    handles = set(re.findall(r"typedef\s+struct\s+(\w+)\s+\1\s*;", text))

    def classify(ctype):
        stars = ctype.count("*")
        words = [w for w in re.findall(r"\w+", ctype) if w != "const"]
        if len(words) != 1:
            raise AssertionError(f"cannot classify C type {ctype!r}")
        base = words[0]
        if base == "char":
            return "str" + "*" * (stars - 1)
        if base in handles:
            return f"handle:{base}" + "*" * (stars - 1)
        if base in enums:
            return "i32" + "*" * stars
        if base not in _BASE:
            raise AssertionError(f"unknown C type {base!r} in the header")
        return _BASE[base] + "*" * stars

    functions = {}
    decl = re.compile(r"MEM4D_API\s+([^;(]*?)\b(mem4d_\w+)\s*\(([^)]*)\)\s*;", re.S)
    for ret, name, params in decl.findall(text):
        params = " ".join(params.split())
        args = []
        if params != "void":
            for param in params.split(","):
                m = re.match(r"^(.*?)(\w+)\s*$", param.strip())
                args.append(classify(m.group(1)))
        functions[name] = (classify(ret), args)
    return functions


def classify_ctype(t):
    if t is None:
        return "void"
    if t is ctypes.c_char_p:
        return "str"
    if isinstance(t, type) and issubclass(t, ctypes._Pointer):
        target = t._type_
        if isinstance(target, type) and issubclass(target, ctypes.Structure):
            return f"handle:mem4d_{target.__name__.lower()}"
        return classify_ctype(target) + "*"
    size = ctypes.sizeof(t)
    if t in (ctypes.c_double,):
        return "f64"
    if t in (ctypes.c_int, ctypes.c_int32):
        return "i32"
    if t in (ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t):
        return {4: "u32", 8: "u64"}[size]
    raise AssertionError(f"ctypes type {t!r} has no class")


def binding_table():
    return {name: (classify_ctype(res), [classify_ctype(a) for a in args])
            for name, res, args in _capi.SIGNATURES}


def parse_enums(path=support.HEADER):
    """{enum type: {constant: value}} of every enum of the header."""
    with open(path, encoding="utf-8") as f:
        text = _strip_comments(f.read())
    return {name: {k: int(v) for k, v in re.findall(r"(\w+)\s*=\s*(\d+)", body)}
            for body, name in re.findall(r"typedef\s+enum\s+\w*\s*\{([^}]*)\}\s*(\w+)\s*;", text)}


def binding_enums():
    """The binding's copies of the header's enums, spelled as C constants."""
    from mem4d import _estimate, _import, _search

    def seq(prefix, names):
        return {prefix + n.upper(): i for i, n in enumerate(names)}

    return {
        "mem4d_status": {"MEM4D_" + s.name: s.value for s in support.mem4d.Status},
        "mem4d_world_source": {"MEM4D_WORLD_" + s.name: s.value for s in _import.WorldSource},
        "mem4d_search_option": {"MEM4D_SEARCH_" + k.upper(): v for k, v in _search.OPTIONS.items()},
        "mem4d_search_stat": seq("MEM4D_SEARCH_STAT_", _search.STATS),
        "mem4d_term": seq("MEM4D_TERM_", _estimate.TERMS),
        "mem4d_info": seq("MEM4D_INFO_", _estimate.INFOS),
        "mem4d_metric": seq("MEM4D_METRIC_", _estimate.METRICS),
    }


class SignatureTest(unittest.TestCase):
    def test_enum_copies_match_header(self):
        header = parse_enums()
        for name, values in binding_enums().items():
            with self.subTest(enum=name):
                self.assertEqual(values, header[name])

    def test_header_parses_every_declaration(self):
        with open(support.HEADER, encoding="utf-8") as f:
            text = _strip_comments(f.read())
        declared = len(re.findall(r"^MEM4D_API\s", text, re.M))
        self.assertGreater(declared, 80)
        self.assertEqual(len(parse_header()), declared,
                         "a MEM4D_API declaration was not parsed")

    def test_no_symbol_missing_from_binding(self):
        missing = sorted(set(parse_header()) - set(binding_table()))
        self.assertEqual(missing, [], "header functions the binding lacks")

    def test_no_symbol_the_header_lacks(self):
        extra = sorted(set(binding_table()) - set(parse_header()))
        self.assertEqual(extra, [], "binding functions the header lacks")

    def test_signatures_match(self):
        header, binding = parse_header(), binding_table()
        for name in sorted(set(header) & set(binding)):
            with self.subTest(function=name):
                h_ret, h_args = header[name]
                b_ret, b_args = binding[name]
                self.assertEqual(len(b_args), len(h_args), "arity")
                self.assertEqual(b_ret, h_ret, "return type")
                self.assertEqual(b_args, h_args, "parameter types")

    def test_table_has_no_duplicates(self):
        names = [name for name, _, _ in _capi.SIGNATURES]
        self.assertEqual(len(names), len(set(names)))

    def test_checker_detects_a_mismatch(self):
        # The check itself must be able to fail: a table with a u64 where the
        # header has a handle is caught.
        self.assertNotEqual(classify_ctype(ctypes.c_uint64), classify_ctype(_capi.MODEL))
        self.assertNotEqual(classify_ctype(_capi.MODEL), classify_ctype(_capi.LAYOUT))


if __name__ == "__main__":
    unittest.main()
