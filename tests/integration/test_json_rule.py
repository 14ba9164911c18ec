#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""One rule for JSON, through the CLI on the simulated PMU: "json" is one document and "jsonl" is
JSON Lines, with -I or without, whether -O or an -o suffix names it; "json-doc" stays the older
name of "json"."""

import json
import os
import sys

import pmugatetest as t

INTERVAL = ("topdown", "-c", "0", "-I", "100ms", "-S", "0.35s")


def test_json_is_one_document(tap):
    sim = t.Sim("icx", rules=[("0-3", t.STENCIL)])
    try:
        for fmt in ("json", "JSON", "json-doc"):
            rc, out, err = sim.run(*INTERVAL, "-O", fmt)
            doc = json.loads(out) if rc == 0 else {}
            tap.ok(len(doc.get("intervals", [])) >= 3 and doc["intervals"][-1]["partial"] is True,
                   "-I -O %s: one document whose intervals array holds every interval, the partial last" % fmt,
                   out[-300:] + err)
        rc, out, err = sim.run(*INTERVAL, "-O", "jsonl")
        lines = [json.loads(line) for line in out.splitlines()] if rc == 0 else []
        tap.ok(len(lines) >= 3 and all("intervals" not in d for d in lines) and lines[-1]["partial"] is True,
               "-I -O jsonl: an object a line, one per interval", out[-300:] + err)
        rc, out, err = sim.run("topdown", "-c", "0", "-S", "0.2s", "-O", "jsonl")
        tap.ok(rc == 0 and len(out.splitlines()) == 1 and "aggregate" in json.loads(out),
               "-O jsonl without -I: one object on one line", out[-300:] + err)
        for suffix, want in (("json", "document"), ("jsonl", "lines")):
            path = os.path.join(sim.dir, "out." + suffix)
            rc, _, err = sim.run(*INTERVAL, "-o", path)
            with open(path) as f:
                text = f.read()
            if want == "document":
                ok = rc == 0 and len(json.loads(text)["intervals"]) >= 3
            else:
                ok = rc == 0 and len([json.loads(line) for line in text.splitlines()]) >= 3
            tap.ok(ok, "-I -o out.%s: as -O %s" % (suffix, suffix), text[-300:] + err)
    finally:
        sim.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_json_is_one_document]))
