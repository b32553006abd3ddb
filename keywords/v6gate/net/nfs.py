"""Sequential NFSv3 I/O with a chosen block size, through libnfs (the C
library behind libnfs-utils, libnfs13 4.0 on Debian 12) called with ctypes:
the measured NFS client of the storage gate.  Debian's fio has no nfs
engine and nfs-cp has no block size; libnfs's synchronous API does.

Run as a program inside the client's namespace:
``python -m v6gate.net.nfs seq ADDRESS EXPORT BS read|write SECONDS`` prints
one JSON object (operations, bytes, seconds, this process's CPU) or the error;
``python -m v6gate.net.nfs alt ADDRESS_A ADDRESS_B EXPORT BS read|write SECONDS SLICE``
runs both arms in ABBA slices (net/alternate.py) and prints them per arm.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import resource
import sys
import time

from .alternate import ArmFailed

O_RDWR = os.O_RDWR
#: per-call timeout of the gate's libnfs contexts (milliseconds)
TIMEOUT_MS = 10_000


class NfsError(Exception):
    pass


def _lib():
    name = ctypes.util.find_library("nfs") or "libnfs.so.13"
    lib = ctypes.CDLL(name)
    vp, u64 = ctypes.c_void_p, ctypes.c_uint64
    lib.nfs_init_context.restype = vp
    lib.nfs_get_error.restype = ctypes.c_char_p
    lib.nfs_get_error.argtypes = [vp]
    lib.nfs_mount.argtypes = [vp, ctypes.c_char_p, ctypes.c_char_p]
    lib.nfs_creat.argtypes = [vp, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(vp)]
    lib.nfs_open.argtypes = [vp, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(vp)]
    # libnfs 4.0: (nfs, fh, offset, count, buf); 5.x moved buf before count
    lib.nfs_pwrite.argtypes = [vp, vp, u64, u64, ctypes.c_char_p]
    lib.nfs_pread.argtypes = [vp, vp, u64, u64, ctypes.c_char_p]
    lib.nfs_close.argtypes = [vp, vp]
    lib.nfs_destroy_context.argtypes = [vp]
    return lib


def _reachable(host: str, ports: tuple[int, ...], timeout: float = 5.0) -> None:
    """The server's rpcbind and NFS ports accept a TCP connection: libnfs's mount waits minutes on a path that
    drops them (its timeout does not cover connecting), and the trial would end without saying which family
    failed."""
    import socket

    for port in ports:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except OSError as exc:
            raise NfsError(f"{host} port {port}: {exc.strerror or exc}") from None


def read_file_name(tag: str) -> str:
    """The file a read stream reads (kept between trials; the span written once)."""
    return f"v6gate-gate-read-{tag}.bin"


def prepare_read_files(directory: str, tags: list[str], span: int = 32 << 20) -> None:
    """Write the read streams' files straight into an export's directory (the lab's ganesha), so that no
    trial, and no arm, pays for writing them over the network."""
    block = bytes(range(256)) * 4096
    for tag in tags:
        path = os.path.join(directory, read_file_name(tag))
        if os.path.exists(path) and os.path.getsize(path) >= span:
            continue
        with open(path, "wb") as f:
            for _ in range(span // len(block)):
                f.write(block)


class _Stream:
    """One mounted export and one file of it, for sequential ``bs``-byte
    operations over its first ``span`` bytes (reads: the span is written
    first, not measured)."""

    def __init__(self, lib, host: str, export: str, bs: int, rw: str, span: int, tag: str):
        self.lib, self.bs, self.rw, self.span, self.off = lib, bs, rw, span, 0
        _reachable(host, (111, 2049))
        self.nfs = lib.nfs_init_context()
        if not self.nfs:
            raise NfsError("nfs_init_context failed")
        # a server that never answers (an IPv6 black hole) fails the call in 10 s instead of hanging the trial,
        # so the arm it belongs to is known (libnfs waits forever by default)
        lib.nfs_set_timeout.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.nfs_set_timeout(self.nfs, TIMEOUT_MS)
        self.fh = ctypes.c_void_p()
        # reads: a file kept between trials (read_file_name), written once through the client unless the bench
        # made it beforehand (the lab writes it in the export directory: no network cost, not even once)
        self.keep = rw == "read"
        self.path = (f"/{read_file_name(tag)}" if self.keep else f"/v6gate-gate-{os.getpid()}-{tag}.bin").encode()
        try:
            self.check(lib.nfs_mount(self.nfs, host.encode(), export.encode()), f"mount {host}:{export}")
            self.block = (bytes(range(256)) * (bs // 256 + 1))[:bs]
            if not (self.keep and lib.nfs_open(self.nfs, self.path, os.O_RDONLY, ctypes.byref(self.fh)) == 0):
                self.check(lib.nfs_creat(self.nfs, self.path, 0o644, ctypes.byref(self.fh)), "create")
                if self.keep:
                    for off in range(0, span, bs):
                        self.check(lib.nfs_pwrite(self.nfs, self.fh, off, bs, self.block), "prepare")
            self.buf = ctypes.create_string_buffer(bs)
        except BaseException:
            self.close()
            raise

    def check(self, rc: int, what: str) -> int:
        if rc < 0:
            raise NfsError(f"{what}: {(self.lib.nfs_get_error(self.nfs) or b'').decode(errors='replace')}")
        return rc

    def op(self) -> int:
        lib, bs = self.lib, self.bs
        if self.rw == "write":
            n = self.check(lib.nfs_pwrite(self.nfs, self.fh, self.off, bs, self.block), "write")
        else:
            n = self.check(lib.nfs_pread(self.nfs, self.fh, self.off, bs, self.buf), "read")
        if n != bs:
            raise NfsError(f"{self.rw} moved {n} of {bs} bytes at offset {self.off}")
        self.off = (self.off + bs) % self.span
        return n

    def close(self) -> None:
        lib = self.lib
        if self.fh:
            lib.nfs_close(self.nfs, self.fh)
            self.fh = ctypes.c_void_p()
            if not self.keep:
                lib.nfs_unlink.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
                lib.nfs_unlink(self.nfs, self.path)
        if self.nfs:
            lib.nfs_destroy_context(self.nfs)
            self.nfs = None


def sequential(host: str, export: str, bs: int, rw: str, seconds: float, span: int = 32 << 20) -> dict:
    st = _Stream(_lib(), host, export, bs, rw, span, "seq")
    try:
        ops = 0
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            st.op()
            ops += 1
        elapsed = time.monotonic() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        st.close()
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {"ops": ops, "bytes": ops * bs, "seconds": elapsed, "cpu_s": cpu, "bs": bs, "rw": rw}


def alternated(hosts: tuple[str, str], export: str, bs: int, rw: str, seconds: float, slice_s: float,
               span: int = 32 << 20) -> dict:
    """Both arms (one mount per address, a file each) in ABBA slices (net/alternate.py)."""
    from .alternate import run_slices

    lib = _lib()
    streams = []
    try:
        for i, h in enumerate(hosts):
            try:
                streams.append(_Stream(lib, h, export, bs, rw, span, f"arm{i}"))
            except (OSError, NfsError) as exc:
                raise ArmFailed(i, exc) from exc
        out = run_slices([s.op for s in streams], seconds, slice_s)
    finally:
        for s in streams:
            s.close()
    return {**out, "bs": bs, "rw": rw, "hosts": list(hosts)}


def main(argv: list[str]) -> int:
    if len(argv) == 9 and argv[1] == "alt":
        try:
            out = alternated((argv[2], argv[3]), argv[4], int(argv[5]), argv[6], float(argv[7]), float(argv[8]))
        except (OSError, NfsError, ValueError, ArmFailed) as exc:
            out = {"error": f"{exc.__class__.__name__}: {exc}", "arm": getattr(exc, "arm", None)}
        print(json.dumps(out))
        return 0
    if len(argv) != 7 or argv[1] != "seq":
        print("usage: python -m v6gate.net.nfs seq ADDRESS EXPORT BS read|write SECONDS", file=sys.stderr)
        return 2
    try:
        out = sequential(argv[2], argv[3], int(argv[4]), argv[5], float(argv[6]))
    except (OSError, NfsError) as exc:
        out = {"error": f"{exc.__class__.__name__}: {exc}"}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
