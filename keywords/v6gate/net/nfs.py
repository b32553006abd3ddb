"""Sequential NFSv3 I/O with a chosen block size, through libnfs (the C
library behind libnfs-utils, libnfs13 4.0 on Debian 12) called with ctypes:
the measured NFS client of the storage gate.  Debian's fio has no nfs
engine and nfs-cp has no block size; libnfs's synchronous API does.

Run as a program inside the client's namespace:
``python -m v6gate.net.nfs seq ADDRESS EXPORT BS read|write SECONDS`` prints
one JSON object (operations, bytes, seconds, this process's CPU) or the error.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import resource
import sys
import time

O_RDWR = os.O_RDWR


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


def sequential(host: str, export: str, bs: int, rw: str, seconds: float, span: int = 32 << 20) -> dict:
    lib = _lib()
    nfs = lib.nfs_init_context()
    if not nfs:
        raise NfsError("nfs_init_context failed")
    fh = ctypes.c_void_p()

    def check(rc: int, what: str) -> int:
        if rc < 0:
            raise NfsError(f"{what}: {(lib.nfs_get_error(nfs) or b'').decode(errors='replace')}")
        return rc

    try:
        check(lib.nfs_mount(nfs, host.encode(), export.encode()), f"mount {host}:{export}")
        path = f"/v6gate-gate-{os.getpid()}.bin".encode()
        check(lib.nfs_creat(nfs, path, 0o644, ctypes.byref(fh)), "create")
        block = (bytes(range(256)) * (bs // 256 + 1))[:bs]
        if rw == "read":  # the file to read: span bytes written first (not measured)
            for off in range(0, span, bs):
                check(lib.nfs_pwrite(nfs, fh, off, bs, block), "prepare")
        buf = ctypes.create_string_buffer(bs)
        ops, off = 0, 0
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            if rw == "write":
                n = check(lib.nfs_pwrite(nfs, fh, off, bs, block), "write")
            else:
                n = check(lib.nfs_pread(nfs, fh, off, bs, buf), "read")
            if n != bs:
                raise NfsError(f"{rw} moved {n} of {bs} bytes at offset {off}")
            ops += 1
            off = (off + bs) % span
        elapsed = time.monotonic() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        lib.nfs_close(nfs, fh)
        fh = ctypes.c_void_p()
        lib.nfs_unlink.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.nfs_unlink(nfs, path)
    finally:
        if fh:
            lib.nfs_close(nfs, fh)
        lib.nfs_destroy_context(nfs)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {"ops": ops, "bytes": ops * bs, "seconds": elapsed, "cpu_s": cpu, "bs": bs, "rw": rw}


def main(argv: list[str]) -> int:
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
