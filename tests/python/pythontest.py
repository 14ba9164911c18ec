# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the Python module's tests share: where the built module is, and the environment a
Python process needs to load it from a sanitizer build."""

import glob
import os
import subprocess

import pmugatetest as t

# The build tree's python/ holds the package and its extension (python/pmugate/meson.build).
PYTHON_DIR = os.path.abspath(os.environ.get("PMUGATE_PYTHON_DIR", os.path.join(t.BUILD, "python")))
PYTHON = "/usr/bin/python3"


def sanitizer_env():
    """{} for a plain build. A sanitizer build's extension needs AddressSanitizer's runtime
    first in the process, and Debian's python3 is not built with it: the runtime the extension
    links (gcc: libasan.so.N, found with ldd) is preloaded, and leaks are not checked (the
    interpreter keeps its memory at exit). None when no runtime to preload is found (clang links
    it into executables only)."""
    if not t.SANITIZED:
        return {}
    ext = glob.glob(os.path.join(PYTHON_DIR, "pmugate", "_pmugate*.so"))
    if not ext:
        return None
    try:
        # what the extension links, not what this process preloads
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        out = subprocess.run(["ldd", ext[0]], capture_output=True, text=True, timeout=30, env=env).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    runtime = [line.split("=>")[1].split()[0] for line in out.splitlines() if "libasan.so" in line and "=>" in line]
    if not runtime:
        return None
    options = os.environ.get("ASAN_OPTIONS", "")
    return {"LD_PRELOAD": runtime[0], "ASAN_OPTIONS": (options + ":" if options else "") + "detect_leaks=0"}
