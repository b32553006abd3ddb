"""Enter a network namespace for the current thread only.

Network namespaces are per thread in Linux, so a socket opened while the
thread sits in a namespace stays bound to it after the thread returns.  That
is how the tester's layer-2 socket is opened inside the lab without running
the whole harness inside the namespace.
"""

import contextlib
import ctypes
import os
import socket

_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL("libc.so.6", use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextlib.contextmanager
def netns(name: str | None):
    """Run the body with this thread in namespace ``name`` (None: stay put)."""
    if not name:
        yield
        return
    path = f"/run/netns/{name}"
    try:
        target = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        from ..errors import BenchError

        raise BenchError(f"network namespace {name!r} does not exist (lab not up?)") from None
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(target)
        os.close(home)


def if_index(iface: str, ns: str | None = None) -> int:
    with netns(ns):
        return socket.if_nametoindex(iface)


def ns_exists(name: str) -> bool:
    return os.path.exists(f"/run/netns/{name}")
