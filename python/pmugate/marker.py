# SPDX-License-Identifier: LGPL-2.1-or-later
"""Markers: counts, time and calls of named regions of a Python program (docs/MARKERS.md).

Run the program under `pmugate stat -m -g GROUP -- python3 prog.py` (or `pmugate topdown -m`):
the runner programs the counters, each start and stop reads the counters of the CPU the calling
thread runs on, and the runner reports every region when the program ends. Run on its own,
every call returns at once and nothing is measured. A region is stopped by the thread that
started it.

    import pmugate.marker as marker
    with marker.region("solve"):
        solve()
    marker.start("io"); write(); marker.stop("io")
"""

import atexit
import functools

from . import _pmugate

_initialized = False


def init(nesting=False):
    """Reads what the runner passed and connects (once; start() does it when needed). nesting:
    every region may start inside another region of the same thread."""
    global _initialized
    _pmugate.marker_init(_pmugate.MARKER_NESTING if nesting else 0)
    if not _initialized:
        _initialized = True
        atexit.register(_close_at_exit)


def _close_at_exit():
    if _pmugate.marker_active():
        _pmugate.marker_close()


def register(name, nested=False):
    """Declares a region; nested: it may start while another region of the thread is open."""
    if not _initialized:
        init()
    _pmugate.marker_register(name, _pmugate.REGION_NESTED if nested else 0)


def start(name):
    """Opens region name on the calling thread."""
    if not _initialized:
        init()
    _pmugate.marker_start(name)


def stop(name):
    """Closes region name on the calling thread and adds its counts, time and one call."""
    _pmugate.marker_stop(name)


def reset(name):
    """Forgets what the calling thread measured of region name."""
    _pmugate.marker_reset(name)


def get(name):
    """What the calling thread measured of name so far: {"counts": [...], "seconds", "calls"}."""
    return _pmugate.marker_get(name)


def close():
    """Writes the results for the runner; markers are off afterwards (also done at exit)."""
    _pmugate.marker_close()


def active():
    """Whether markers measure (a runner started the program and init succeeded)."""
    return _pmugate.marker_active()


def read_mode():
    """"off", "daemon" (a round trip per start and stop) or "rdpmc" (read in user space)."""
    return _pmugate.marker_read_mode()


class region:
    """A region as a context manager or a decorator: start on entry, stop on exit."""

    def __init__(self, name, nested=False):
        self.name = name
        self.nested = nested

    def __enter__(self):
        if self.nested:
            register(self.name, nested=True)
        start(self.name)
        return self

    def __exit__(self, *exc):
        stop(self.name)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper
