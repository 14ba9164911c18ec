#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""check_layers.py on small made-up trees: it passes a tree that keeps the rule and fails each
way of breaking it (an include running up, one into the other component, one not naming its
layer, an import circle), so that the check on the real tree cannot pass by checking nothing."""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, 'check_layers.py')

GOOD = {
    'proto/macro.h': '#pragma once\n',
    'include/pmugate/pmugate.h': '#pragma once\n',
    'client/core/connection.h': '#pragma once\n#include "macro.h"\n',
    'client/core/connection.c': '#include "core/connection.h"\n#include "pmugate/pmugate.h"\n',
    'client/events/events.h': '#pragma once\n',
    'client/events/events.c': '#include "core/connection.h"\n#include "events/events.h"\n',
    'client/measure/schedule.c': '#include "events/events.h"\n#include "build-config.h"\n',
    'client/cli/pmugate.c': '#include "measure/schedule.h"\n#include "likwid/likwid-map.h"\n',
    'client/likwid/likwid-map.h': '#pragma once\n#include "core/connection.h"\n',
    'client/marker/marker-state.h': '#pragma once\n#include "measure/schedule.h"\n',
    'client/measure/schedule.h': '#pragma once\n',
    'daemon/log.h': '#pragma once\n',
    'daemon/log.c': '#include "log.h"\n',
    'daemon/pmu/batch.h': '#pragma once\n#include "log.h"\n',
    'daemon/pmu/batch.c': '#include "pmu/batch.h"\n#include "macro.h"\n',
    'daemon/server/server.c': '#include "pmu/batch.h"\n',
    'daemon/main.c': '#include "server/server.h"\n',
    'daemon/server/server.h': '#pragma once\n',
}

# Each breaks the rule once: (what, files changed, the check's line that must say not ok).
BROKEN = [
    ('an include running up a layer',
     {'client/core/connection.c': '#include "measure/schedule.h"\n'},
     'client: no include runs up a layer'),
    ('an include across to a layer beside it',
     {'client/likwid/likwid-map.h': '#pragma once\n#include "marker/marker-state.h"\n'},
     'client: no include runs up a layer'),
    ('a daemon include running up a layer',
     {'daemon/pmu/batch.c': '#include "server/server.h"\n'},
     'daemon: no include runs up a layer'),
    ('the daemon including a client header',
     {'daemon/pmu/batch.c': '#include "../../client/core/connection.h"\n'},
     'daemon: no include runs up a layer'),
    ('an include not naming its layer',
     {'client/events/events.c': '#include "events.h"\n'},
     'client: includes name their layer'),
    ('an include of a file that does not exist',
     {'client/events/events.c': '#include "events/gone.h"\n'},
     'client: every include names a file of the project'),
    ('a private header named as a public one',
     {'client/measure/pmugate.h': '#pragma once\n'},
     'client: includes name their layer'),
    ('a file in no layer',
     {'client/stray.c': '\n'},
     'client: every file is in a layer'),
    ('an import circle inside a layer',
     {'client/events/groups.h': '#pragma once\n#include "events/events.h"\n',
      'client/events/events.h': '#pragma once\n#include "events/groups.h"\n'},
     'client: no import circles through includes'),
]


def write_tree(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(text)


def run(files):
    with tempfile.TemporaryDirectory() as root:
        write_tree(root, files)
        p = subprocess.run([sys.executable, CHECK, '--source', root], capture_output=True, text=True)
        return p.returncode, p.stdout


def main():
    tests = 1 + 2 * len(BROKEN)
    print('TAP version 13')
    print(f'1..{tests}')
    n = 0
    failed = 0

    def report(ok, title, detail=''):
        nonlocal n, failed
        n += 1
        failed += not ok
        print(f'{"ok" if ok else "not ok"} {n} - {title}')
        if not ok and detail:
            for line in detail.splitlines():
                print(f'#   {line}')

    rc, out = run(GOOD)
    report(rc == 0, 'a tree that keeps the rule passes', out)
    for what, change, line in BROKEN:
        rc, out = run({**GOOD, **change})
        report(rc != 0, f'{what} fails the check', out)
        report(any(l.startswith('not ok') and line in l for l in out.splitlines()),
               f'{what} is named by "{line}"', out)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
