# SPDX-License-Identifier: MIT
"""A PEP 517 build backend that needs nothing but the standard library.

Why not setuptools: building a wheel with setuptools older than 70.1 needs the
separate `wheel` package, which is often absent on machines without network
access, and `pip install ./bindings/python` must work offline. The package
is pure Python (ctypes), so a wheel is just a zip file with three metadata
files; this module writes it. It also supports editable installs (a .pth file
pointing at this directory) and source distributions.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "mem4d"
TAG = "py3-none-any"


def _project():
    """name, version, description and requires-python from pyproject.toml."""
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    try:
        import tomllib
        return tomllib.loads(text)["project"]
    except ImportError:  # Python < 3.11: the fields are simple "key = "value"" lines
        fields = re.findall(r'^(name|version|description|requires-python)\s*=\s*"([^"]*)"',
                            text, re.M)
        return dict(fields)


def _metadata():
    p = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}",
             f"Summary: {p.get('description', '')}"]
    if "requires-python" in p:
        lines.append(f"Requires-Python: {p['requires-python']}")
    return "\n".join(lines) + "\n"


def _dist_info():
    p = _project()
    return f"{p['name']}-{p['version']}.dist-info", f"{p['name']}-{p['version']}"


def _wheel_text(generator="mem4d_build"):
    return (f"Wheel-Version: 1.0\nGenerator: {generator}\nRoot-Is-Purelib: true\n"
            f"Tag: {TAG}\n")


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory, files):
    """files: list of (archive path, bytes). Adds the dist-info; returns the name."""
    info, stem = _dist_info()
    files = files + [(f"{info}/METADATA", _metadata().encode()),
                     (f"{info}/WHEEL", _wheel_text().encode())]
    record = [_record_line(path, data) for path, data in files]
    record.append(f"{info}/RECORD,,")
    files.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    name = f"{stem}-{TAG}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w",
                         zipfile.ZIP_DEFLATED) as zf:
        for path, data in files:
            zf.writestr(path, data)
    return name


def _package_files():
    out = []
    pkg = os.path.join(ROOT, PACKAGE)
    for entry in sorted(os.listdir(pkg)):
        if entry.endswith(".py"):
            with open(os.path.join(pkg, entry), "rb") as f:
                out.append((f"{PACKAGE}/{entry}", f.read()))
    return out


# --- PEP 517 / PEP 660 hooks -------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info, _ = _dist_info()
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w") as f:
        f.write(_metadata())
    with open(os.path.join(metadata_directory, info, "WHEEL"), "w") as f:
        f.write(_wheel_text())
    return info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _package_files())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    pth = (ROOT + "\n").encode()
    return _write_wheel(wheel_directory, [(f"_{PACKAGE}_editable.pth", pth)])


def build_sdist(sdist_directory, config_settings=None):
    _, stem = _dist_info()
    name = f"{stem}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tf:
        for rel in ["pyproject.toml", "README.md", PACKAGE, "_backend", "tests", "examples"]:
            path = os.path.join(ROOT, rel)
            if os.path.exists(path):
                tf.add(path, arcname=f"{stem}/{rel}",
                       filter=lambda t: None if "__pycache__" in t.name else t)
        info = tarfile.TarInfo(f"{stem}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return name
