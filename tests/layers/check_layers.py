#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The layer rule of pmugated and libpmugate, checked on the source tree.

Each component is a stack of layers (LAYERS below, the one place the order is written). A file
may include headers of its own layer and of the layers beneath it, never of a layer above, and
names a header of its component by its path from the component's one include root
("pmu/batch.h", "measure/schedule.h"), so that a reader and a grep see the layer; no private
header of the client shares a public header's name. proto/ (the wire format, shared by both
sides) sits beneath every layer of both; the public headers (include/pmugate/) beneath every
layer of the client. Neither component includes the other.

It also reports import circles: files (a .c and its .h counted as one) that reach each other
through their includes, and, given built object files (--objects), through the functions and
data they use. A circle is a failure too.

  check_layers.py [--source DIR] [--objects DIR ...] [--component NAME] [--verbose] [--stats]

--verbose counts the include lines from layer to layer; --stats prints files per folder and
the longest file and function of each component (as TAP comments).

Output is TAP, one test per rule and component.
"""

import argparse
import collections
import os
import re
import subprocess
import sys

# Bottom to top. A layer is a folder under the component's root, or (for files at the root
# itself) a list of file stems; a file belongs to the deepest folder listed that holds it. A
# layer marked 'beside' another sits on the same floor: neither may include the other.
LAYERS = {
    'client': {
        'root': 'client',
        'layers': [
            ('core', {'dirs': ['core']}),
            ('events', {'dirs': ['events']}),
            # pmugate timing's ring reader, decoder and analysis: beside events, used by cli
            ('timing', {'dirs': ['timing'], 'beside': 'events'}),
            ('measure', {'dirs': ['measure']}),
            ('marker', {'dirs': ['marker']}),
            ('likwid', {'dirs': ['likwid'], 'beside': 'marker'}),
            ('cli', {'dirs': ['cli']}),
            ('examples', {'dirs': ['examples']}),
        ],
    },
    'daemon': {
        'root': 'daemon',
        'layers': [
            ('util', {'stems': ['audit', 'audit-fold', 'cpuset', 'kernel-file', 'log', 'refusal', 'state-dir']}),
            ('backend', {'dirs': ['backend']}),
            # the simulator implements the backend interface; only main() chooses it
            ('backend/sim', {'dirs': ['backend/sim']}),
            ('policy', {'dirs': ['policy']}),
            ('pmu', {'dirs': ['pmu']}),
            # the perf_event path's scopes and attr checks, above the backend and the policy
            ('perf', {'dirs': ['perf']}),
            ('server', {'dirs': ['server']}),
            ('handlers', {'dirs': ['handlers']}),
            ('main', {'stems': ['main', 'privileges', 'perf-opener-main']}),
        ],
    },
}

# Circles known and not yet broken, reported as TODO (TAP): a circle not listed here fails. None
# is left; the list stays for the rare move that must land in two steps. Each is the sorted
# list of its files (through includes: paths under the component's root without suffix; through
# functions: the object files' names).
KNOWN_CIRCLES = []

# Beneath every layer: the wire format, and the header meson generates into the build root.
SHARED_ROOT = 'proto'
GENERATED = {'build-config.h'}
# Beneath every client layer: the public headers, included as "pmugate/NAME.h".
PUBLIC_ROOT = 'include'

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
SOURCE_SUFFIXES = ('.c', '.h')


def layer_of(component, rel):
    """The index of the layer holding rel (a path under the component's root), or None."""
    stem = os.path.splitext(rel)[0]
    folder = os.path.dirname(rel)
    for i, (_, where) in enumerate(LAYERS[component]['layers']):
        for d in where.get('dirs', []):
            if folder == d or folder.startswith(d + '/'):
                # a deeper folder listed as its own layer takes the file
                deeper = [e for _, w in LAYERS[component]['layers'] for e in w.get('dirs', [])
                          if e != d and e.startswith(d + '/') and (folder == e or folder.startswith(e + '/'))]
                if not deeper:
                    return i
        if folder == '' and stem in where.get('stems', []):
            return i
    return None


def floors_of(component):
    """Each layer's floor: one above the floor below, or its neighbour's ('beside')."""
    floors, by_name = [], {}
    for name, where in LAYERS[component]['layers']:
        beside = where.get('beside')
        floor = by_name[beside] if beside else (max(floors) + 1 if floors else 0)
        floors.append(floor)
        by_name[name] = floor
    return floors


def component_files(source, component):
    root = os.path.join(source, LAYERS[component]['root'])
    for dirpath, _, names in os.walk(root):
        for n in sorted(names):
            if n.endswith(SOURCE_SUFFIXES):
                path = os.path.join(dirpath, n)
                yield os.path.relpath(path, root)


def resolve(source, component, rel, name):
    """Where "name" included from rel resolves, as (kind, path): kind is a component's name,
    'shared', 'public', 'generated', 'outside' (a file of the project under none of these) or
    None when not found. Classified by where the file is, not by how it was reached."""
    root = os.path.join(source, LAYERS[component]['root'])
    candidates = [os.path.join(root, os.path.dirname(rel), name), os.path.join(root, name),
                  os.path.join(source, SHARED_ROOT, name), os.path.join(source, PUBLIC_ROOT, name)]
    candidates += [os.path.join(source, LAYERS[c]['root'], name) for c in LAYERS if c != component]
    for path in candidates:
        if not os.path.isfile(path):
            continue
        path = os.path.normpath(path)
        areas = [(c, LAYERS[c]['root']) for c in LAYERS] + [('shared', SHARED_ROOT), ('public', PUBLIC_ROOT)]
        for kind, top in areas:
            if path.startswith(os.path.join(os.path.normpath(source), top) + os.sep):
                return kind, path
        return 'outside', path
    if name in GENERATED:
        return 'generated', name
    return None, None


def check_component(source, component, verbose):
    """Returns (problems, graph, stats) for one component."""
    root = os.path.join(source, LAYERS[component]['root'])
    names = [n for n, _ in LAYERS[component]['layers']]
    floors = floors_of(component)
    problems = collections.defaultdict(list)
    graph = collections.defaultdict(set)
    edges = collections.Counter()
    public = set()
    for dirpath, _, files in os.walk(os.path.join(source, PUBLIC_ROOT)):
        public.update(f for f in files if f.endswith('.h'))
    for rel in component_files(source, component):
        if component == 'client' and os.path.basename(rel) in public:
            problems['named'].append(f'{component}/{rel}: shares its name with a public header')
        mine = layer_of(component, rel)
        if mine is None:
            problems['layered'].append(f'{component}/{rel}: in no layer of {component}')
            continue
        with open(os.path.join(root, rel), encoding='utf-8', errors='replace') as f:
            text = f.read()
        node = os.path.splitext(rel)[0]
        graph[node]
        for name in INCLUDE.findall(text):
            kind, path = resolve(source, component, rel, name)
            where = f'{component}/{rel}: #include "{name}"'
            if kind is None:
                problems['resolved'].append(f'{where} names no file of the project')
                continue
            if kind == 'outside':
                problems['up'].append(f'{where} is a file outside the include roots')
                continue
            if kind == 'public' and component != 'client':
                problems['up'].append(f'{where} is a public header of the client')
                continue
            if kind in LAYERS:
                if kind != component:
                    problems['up'].append(f'{where} is a file of {kind}')
                    continue
                target = os.path.relpath(path, os.path.normpath(root))
                theirs = layer_of(component, target)
                if name != target:
                    problems['named'].append(f'{where} should name its layer: "{target}"')
                if theirs is None:
                    problems['layered'].append(f'{where}: {target} is in no layer')
                    continue
                edges[(names[mine], names[theirs])] += 1
                if floors[theirs] > floors[mine]:
                    problems['up'].append(f'{where} runs up from {names[mine]} to {names[theirs]}')
                elif floors[theirs] == floors[mine] and theirs != mine:
                    problems['up'].append(f'{where} runs across from {names[mine]} to {names[theirs]}, '
                                          'beside it')
                tnode = os.path.splitext(target)[0]
                if tnode != node:
                    graph[node].add(tnode)
            elif kind == 'shared' and '/' in name:
                problems['named'].append(f'{where}: proto headers are named from proto/ itself')
    if verbose:
        for (a, b), n in sorted(edges.items()):
            print(f'# {component}: {a} -> {b}: {n} include lines')
    return problems, graph


def circles(graph):
    """Strongly connected sets of more than one node (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def symbol_graph(objects):
    """Which object file uses which other's functions and data, from nm; nodes are the objects'
    source names."""
    defined, undefined = {}, {}
    for top in objects:
        for dirpath, _, names in os.walk(top):
            for n in sorted(names):
                if not n.endswith('.c.o'):
                    continue
                path = os.path.join(dirpath, n)
                out = subprocess.run(['nm', path], capture_output=True, text=True, check=True).stdout
                node = n[:-len('.c.o')]
                d, u = set(), set()
                for line in out.splitlines():
                    f = line.split()
                    if len(f) == 3 and f[1] in 'TDBRVW':
                        d.add(f[2])
                    elif len(f) == 2 and f[0] == 'U':
                        u.add(f[1])
                defined[node], undefined[node] = d, u
    owner = {}
    for node, syms in defined.items():
        for s in syms:
            owner.setdefault(s, node)
    graph = collections.defaultdict(set)
    for node, syms in undefined.items():
        graph[node]
        for s in syms:
            if s in owner and owner[s] != node:
                graph[node].add(owner[s])
    return graph


FUNCTION_START = re.compile(r'^[A-Za-z_][^=;]*\b(\w+)\s*\([^;]*\)\s*\{$')


def stats(source, component):
    """Files per folder, and the longest file and function (a top-level definition from its
    first line to the closing brace in column 0), as comment lines."""
    root = os.path.join(source, LAYERS[component]['root'])
    per_folder = collections.Counter()
    longest_file = (0, '')
    longest_function = (0, '', '')
    for rel in component_files(source, component):
        per_folder[os.path.dirname(rel) or '.'] += 1
        with open(os.path.join(root, rel), encoding='utf-8', errors='replace') as f:
            lines = f.read().splitlines()
        longest_file = max(longest_file, (len(lines), rel))
        start = None
        for i, line in enumerate(lines):
            m = FUNCTION_START.match(line)
            if m and not line.startswith(('struct', 'typedef', 'enum', 'union')):
                start = (i, m.group(1))
            elif line == '}' and start:
                longest_function = max(longest_function, (i - start[0] + 1, rel, start[1]))
                start = None
    out = [f'{component}: {sum(per_folder.values())} files']
    out += [f'{component}/{folder}: {n} files' for folder, n in sorted(per_folder.items())]
    out.append(f'{component}: longest file {longest_file[1]}, {longest_file[0]} lines')
    out.append(f'{component}: longest function {longest_function[2]}() in {longest_function[1]}, '
               f'{longest_function[0]} lines')
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--source', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
    parser.add_argument('--objects', nargs='*', default=[],
                        help="directories of a library's object files (meson's NAME.p)")
    parser.add_argument('--component', action='append', choices=sorted(LAYERS),
                        help='check only this component (repeatable; default all)')
    parser.add_argument('--verbose', action='store_true')
    parser.add_argument('--stats', action='store_true')
    args = parser.parse_args()
    source = os.path.normpath(args.source)

    results = []
    for component in args.component or LAYERS:
        if args.stats:
            for line in stats(source, component):
                print(f'# {line}')
        problems, graph = check_component(source, component, args.verbose)
        found = circles(graph)
        for rule, what in [('layered', 'every file is in a layer'),
                           ('resolved', 'every include names a file of the project'),
                           ('named', 'includes name their layer, private headers not a public one'),
                           ('up', 'no include runs up a layer or across components')]:
            results.append((f'{component}: {what}', problems.get(rule, [])))
        results.append((f'{component}: no import circles through includes', found))
    for top in args.objects:
        found = circles(symbol_graph([top]))
        results.append((f'{os.path.basename(os.path.normpath(top))}: no import circles through '
                        'functions and data', found))

    print('TAP version 13')
    print(f'1..{len(results)}')
    failed = 0
    for i, (title, found) in enumerate(results, 1):
        known = [f for f in found if f in KNOWN_CIRCLES]
        new = [f for f in found if f not in KNOWN_CIRCLES]
        directive = ' # TODO known circles, to be broken' if known and not new else ''
        print(f'{"not ok" if found else "ok"} {i} - {title}{directive}')
        for f in new + known:
            print(f'#   {" <-> ".join(f) if isinstance(f, list) else f}')
        failed += bool(new)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
