#!/usr/bin/env python3
"""The exported symbols of libmem4d.so equal the functions the public header
declares and the version script lists; every declared function carries
Doxygen @since. Usage: check-symbols.py HEADER MAP LIBRARY"""
import re
import subprocess
import sys


def header_functions(text):
    return set(re.findall(r'MEM4D_API\s+[^;(]*?\b(mem4d_\w+)\s*\(', text))


def undocumented(text):
    """Functions whose preceding comment block lacks @since."""
    bad = []
    for m in re.finditer(r'(/\*\*(?:(?!\*/).)*\*/)\s*MEM4D_API\s+[^;(]*?\b(mem4d_\w+)\s*\(', text, re.S):
        if '@since' not in m.group(1):
            bad.append(m.group(2))
    documented = {m.group(2) for m in re.finditer(
        r'(/\*\*(?:(?!\*/).)*\*/)\s*MEM4D_API\s+[^;(]*?\b(mem4d_\w+)\s*\(', text, re.S)}
    return bad + sorted(header_functions(text) - documented)


def map_symbols(text):
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    return set(re.findall(r'\b(mem4d_\w+)\s*;', text))


def exported(lib):
    out = subprocess.run(['nm', '-D', '--defined-only', lib], check=True,
                         capture_output=True, text=True).stdout
    return {line.split()[-1].split('@')[0] for line in out.splitlines()
            if line.split() and line.split()[-2] in ('T', 'D', 'B', 'R')}


def main():
    header, mapfile, lib = sys.argv[1:4]
    htext = open(header).read()
    h, v, e = header_functions(htext), map_symbols(open(mapfile).read()), exported(lib)
    problems = []
    if h - v:
        problems.append('declared in the header but not in the version script: %s' % sorted(h - v))
    if v - h:
        problems.append('in the version script but not in the header: %s' % sorted(v - h))
    if e - h:
        problems.append('exported but not in the header: %s' % sorted(e - h))
    if h - e:
        problems.append('declared but not exported: %s' % sorted(h - e))
    nodoc = undocumented(htext)
    if nodoc:
        problems.append('without a Doxygen comment with @since: %s' % nodoc)
    for p in problems:
        print('FAIL:', p)
    print('%d functions: header, version script and exports agree' % len(h) if not problems else '')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
