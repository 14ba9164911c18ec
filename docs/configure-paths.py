#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes a document with its paths as this build configured them.

The man pages are written with the paths of a /usr prefix (/etc/pmugate, /usr/share/pmugate,
/usr/libexec, ...), so they read well in the source tree; meson runs this at build time with the
configured directories, and what is installed names the paths the programs really use.

Usage: configure-paths.py INPUT OUTPUT NAME=DIR...  where NAME is one of the keys of DEFAULTS."""

import sys

# Longest first, so /usr/share/doc/pmugate is not taken for /usr/share/....
DEFAULTS = [
    ("docdir", "/usr/share/doc/pmugate"),
    ("pkgdatadir", "/usr/share/pmugate"),
    ("pkgsysconfdir", "/etc/pmugate"),
    ("libexecdir", "/usr/libexec"),
    ("sbindir", "/usr/sbin"),
    ("bindir", "/usr/bin"),
]


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    dirs = dict(a.split("=", 1) for a in argv[3:])
    unknown = set(dirs) - {k for k, _ in DEFAULTS}
    if unknown:
        sys.exit("configure-paths.py: unknown directory %s" % ", ".join(sorted(unknown)))
    with open(argv[1]) as f:
        text = f.read()
    # Placeholders first, so a replacement is never itself replaced by a later, shorter default.
    for i, (key, default) in enumerate(DEFAULTS):
        text = text.replace(default, "\0%d\0" % i)
    for i, (key, default) in enumerate(DEFAULTS):
        text = text.replace("\0%d\0" % i, dirs.get(key, default))
    with open(argv[2], "w") as f:
        f.write(text)


if __name__ == "__main__":
    main(sys.argv)
