# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate's exceptions: every failure of the daemon or the library is a pmugate.Error carrying
the daemon's code name and its one-line reason."""

import errno as _errno


class Error(Exception):
    """A request pmugated refused, or the library could not make.

    errno: the error number (errno.EACCES, ...); name: the daemon's code name such as
    "not-authorized" or "no-grant" ("" when the library itself found the problem); reason: the
    daemon's (or library's) one-line reason, which says what to do where it can; what: the step
    that failed ("starting the counters")."""

    def __init__(self, errno, name, reason, what):
        self.errno = errno
        self.name = name
        self.reason = reason
        self.what = what
        super().__init__("%s: %s%s" % (what, reason, " [%s]" % name if name else ""))


class DaemonUnavailable(Error):
    """pmugated does not answer: no socket, nobody listening, or the connection broke."""


class NotAuthorized(Error):
    """The daemon's policy gives the caller no right to this (not-authorized)."""


class NoGrant(Error):
    """Job mode: the caller has no job on this machine that pmugate may measure (no-grant)."""


class OutOfScope(Error):
    """Job mode: a CPU or package outside the caller's job (out-of-scope)."""


class Busy(Error):
    """Another client or PMU user holds the counters or CPUs (busy, limit)."""


class LeaseLost(Error):
    """The daemon ended the measurement's lease (revoked, preempted); its registers are restored."""


class UnknownGroup(Error):
    """No group of that name for the machine's CPU model."""


class InvalidEvent(Error):
    """An event name, modifier or group file the library cannot use."""


class NotSupported(Error):
    """The CPU model or daemon cannot do this (no recipe, no PMU, an older daemon)."""


_BY_NAME = {
    "not-authorized": NotAuthorized,
    "no-grant": NoGrant,
    "out-of-scope": OutOfScope,
    "reg-not-allowed": NotAuthorized,
    "reg-forbidden": NotAuthorized,
    "busy": Busy,
    "limit": Busy,
    "too-many-clients": Busy,
    "revoked": LeaseLost,
    "preempted": LeaseLost,
    "unknown-op": NotSupported,
    "version": NotSupported,
}

_UNAVAILABLE = {_errno.ENOENT, _errno.ECONNREFUSED, _errno.ECONNRESET, _errno.EPIPE, _errno.ENOTCONN,
                _errno.ENOTSOCK}


def _library_class(errno, reason, what):
    if what.startswith("connecting") and errno in _UNAVAILABLE | {_errno.EACCES}:
        return NotAuthorized if errno == _errno.EACCES else DaemonUnavailable
    if errno in (_errno.ECONNRESET, _errno.EPIPE, _errno.ENOTCONN):
        return DaemonUnavailable
    if errno in (_errno.EKEYREVOKED, _errno.ECANCELED):
        return LeaseLost
    if errno == _errno.EBUSY:
        return Busy
    if errno == _errno.EOPNOTSUPP:
        return NotSupported
    if what == "opening the measurement":
        if errno == _errno.ENOENT and "group" in reason:
            return UnknownGroup
        if errno in (_errno.ENOENT, _errno.EINVAL):
            return InvalidEvent
    if errno == _errno.EACCES:
        return NotAuthorized
    return Error


def from_errno(errno, name, reason, what):
    """The exception for a failure: by the daemon's code name, else by errno and step."""
    cls = _BY_NAME.get(name) if name else None
    return (cls or _library_class(errno, reason, what))(errno, name, reason, what)
