#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The wire vocabulary is spelled once, in proto/, checked on the source tree.

proto/wire.h and proto/wire.c name the request types, the op kinds of a batch and the field
positions of every reply tuple; daemon and client take them from there. This fails when code
outside proto/ (and the tests, which speak the wire literally on purpose) writes an op kind as
a string into a message, starts a request with a type's name written by hand, or reads a
reply tuple's field by a number instead of its name.

  check_wire.py [--source DIR]

Output is TAP: one check per rule, the offending lines as comments. Before the tree, each
rule is run on a line it must catch and one it must let pass, so a broken pattern fails too.
"""
import argparse
import os
import re
import sys

SCANNED = ['client', 'daemon', 'exporter', 'bench']


def vocabulary(source):
    text = open(os.path.join(source, 'proto', 'wire.c'), encoding='utf-8').read()
    ops = re.findall(r'WIRE_OP\("([^"]+)",', open(os.path.join(source, 'proto', 'wire.h'),
                                                   encoding='utf-8').read() + text)
    types = re.findall(r'\[REQUEST_[A-Z_]+\] = "([a-z_]+)"', text)
    if not ops or not types:
        sys.exit('check_wire.py: no op kinds or request types found in proto/wire.[ch]')
    return sorted(set(ops)), sorted(set(types))


def rules(ops, types):
    op_names = '|'.join(re.escape(o) for o in ops)
    type_names = '|'.join(re.escape(t) for t in types)
    return [
        ('op kinds are packed from wire_ops[], not written as strings',
         re.compile(r'pack_string\([^;()]*?,\s*"(?:' + op_names + r')"\s*\)'),
         'r = pack_string(pk, "wm") < 0;', 'r = pack_string(pk, wire_ops[kind].name) < 0;'),
        ('requests begin from a RequestType, not a hand-written name',
         re.compile(r'(?:request_pack_begin|connection_begin)\([^;()]*?"(?:' + type_names + r')"'),
         'r = connection_begin(c, "status", 0, &pk);', 'r = connection_begin(c, REQUEST_STATUS, 0, &pk);'),
        ('reply tuple fields are read by their names in wire.h, not by number',
         re.compile(r'via\.array\.ptr\[\s*\d+\s*\]'),
         'v = t->via.array.ptr[3];', 'v = t->via.array.ptr[HELLO_UNIT_DEVICE];'),
    ]


def sources(source):
    for top in SCANNED:
        for root, dirs, files in os.walk(os.path.join(source, top)):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(('.c', '.h')):
                    path = os.path.join(root, name)
                    yield os.path.relpath(path, source), open(path, encoding='utf-8').read()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument('--source', default=os.path.join(here, '..', '..'))
    args = parser.parse_args()

    checks = rules(*vocabulary(args.source))
    files = list(sources(args.source))
    results = []
    for title, pattern, bad, good in checks:
        found = []
        if not pattern.search(bad) or pattern.search(good):
            found.append(f'the pattern itself is broken: {bad!r} / {good!r}')
        for rel, text in files:
            for m in pattern.finditer(text):
                line = text.count('\n', 0, m.start()) + 1
                found.append(f'{rel}:{line}: {" ".join(m.group(0).split())}')
        results.append((title, found))

    print('TAP version 13')
    print(f'1..{len(results)}')
    for i, (title, found) in enumerate(results, 1):
        print(f'{"not ok" if found else "ok"} {i} - {title}')
        for f in found:
            print(f'#   {f}')
    return 1 if any(found for _, found in results) else 0


if __name__ == '__main__':
    sys.exit(main())
