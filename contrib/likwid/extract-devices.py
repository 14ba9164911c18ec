#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Prints LIKWID's access daemon device list (the PciDeviceIndex enum of
src/includes/pci_types.h) as "INDEX NAME" lines, one device a line, MAX_NUM_PCI_DEVICES last.

LIKWID numbers the devices of its access daemon protocol by their place in that enum, and the
numbering changed between releases (docs/LIKWID.md, "LIKWID versions"). The tables under
tests/likwid/devices/ were made with, in a clone of LIKWID's repository:

    git show v5.4.1:src/includes/pci_types.h | contrib/likwid/extract-devices.py > likwid-5.4.txt

Reads the header from the file named on the command line, else standard input. Fails on
anything in the enum it does not understand (a preprocessor line, an expression) rather than
guess a number."""

import re
import sys

ENTRY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?:=\s*(0x[0-9A-Fa-f]+|[0-9]+))?$")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def extract(text):
    text = strip_comments(text)
    m = re.search(r"typedef\s+enum\s*\{([^}]*)\}\s*PciDeviceIndex\s*;", text)
    if not m:
        raise ValueError("no 'typedef enum { ... } PciDeviceIndex;' in the input")
    body = m.group(1)
    if "#" in body:
        raise ValueError("a preprocessor line inside PciDeviceIndex: the numbering depends on the build")
    devices, value = [], 0
    for item in body.split(","):
        item = " ".join(item.split())
        if not item:
            continue
        e = ENTRY.match(item)
        if not e:
            raise ValueError("cannot read the enum entry %r" % item)
        if e.group(2):
            value = int(e.group(2), 0)
        devices.append((value, e.group(1)))
        value += 1
    if not devices or devices[-1][1] != "MAX_NUM_PCI_DEVICES":
        raise ValueError("PciDeviceIndex does not end with MAX_NUM_PCI_DEVICES")
    return devices


def main():
    text = open(sys.argv[1]).read() if len(sys.argv) > 1 else sys.stdin.read()
    for value, name in extract(text):
        print("%d %s" % (value, name))


if __name__ == "__main__":
    main()
