"""NFSv4.0 on the wire (RFC 7530, RFC 5531 ONC RPC over TCP): one COMPOUND
that reads the ``fs_locations`` and ``fsid`` attributes of a path
(PUTROOTFH, LOOKUP per component, GETATTR), i.e. what a client asks when a
LOOKUP crosses into a referral (RFC 7530 §8.4.1-8.4.3, §8.5).

Run as a program inside the client's namespace (``python -m v6gate.net.nfs4
fs_locations ADDR PORT PATH``); it prints one JSON object: the per-operation
statuses and the decoded attributes, or the error.  libnfs's tools stop at
NFS4ERR_MOVED and print no locations, hence this client.
"""

from __future__ import annotations

import os
import socket
import struct
import sys

from .speaker import answer, recv_exact

NFS_PROGRAM, NFS_V4, PROC_COMPOUND = 100003, 4, 1
OP_GETATTR, OP_LOOKUP, OP_PUTROOTFH = 9, 15, 24
FATTR4_FSID, FATTR4_FS_LOCATIONS = 8, 24
AUTH_SYS = 1
NFS4_OK, NFS4ERR_MOVED = 0, 10019
STATUS = {0: "NFS4_OK", 2: "NFS4ERR_NOENT", 13: "NFS4ERR_ACCES", 10019: "NFS4ERR_MOVED", 10008: "NFS4ERR_DELAY",
          10013: "NFS4ERR_GRACE", 10016: "NFS4ERR_WRONGSEC", 10004: "NFS4ERR_NOTSUPP", 10021: "NFS4ERR_NOFILEHANDLE"}


class RpcError(Exception):
    """The server's RPC or NFS answer is not what RFC 5531 / RFC 7530 allow (the DUT's doing)."""


def _string(b: bytes) -> bytes:
    return struct.pack(">I", len(b)) + b + b"\0" * (-len(b) % 4)


class Xdr:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def u32(self) -> int:
        if self.pos + 4 > len(self.data):
            raise RpcError(f"XDR answer ends at byte {len(self.data)}, inside a 4-byte field")
        v = struct.unpack_from(">I", self.data, self.pos)[0]
        self.pos += 4
        return v

    def u64(self) -> int:
        return (self.u32() << 32) | self.u32()

    def opaque(self) -> bytes:
        n = self.u32()
        if n > len(self.data) - self.pos:
            raise RpcError(f"XDR opaque of {n} bytes, {len(self.data) - self.pos} left")
        b = self.data[self.pos:self.pos + n]
        self.pos += n + (-n % 4)
        return b

    def string(self) -> str:
        return self.opaque().decode(errors="replace")

    def strings(self) -> list[str]:
        n = self.u32()
        if n > 1024:
            raise RpcError(f"XDR array of {n} strings")
        return [self.string() for _ in range(n)]


def compound_call(xid: int, ops: bytes, nops: int) -> bytes:
    cred = struct.pack(">I", 0) + _string(b"v6gate") + struct.pack(">III", 0, 0, 0)  # stamp, name, uid, gid, gids
    body = (struct.pack(">IIIIII", xid, 0, 2, NFS_PROGRAM, NFS_V4, PROC_COMPOUND)
            + struct.pack(">I", AUTH_SYS) + _string(cred) + struct.pack(">II", 0, 0)
            + _string(b"") + struct.pack(">II", 0, nops) + ops)
    return struct.pack(">I", 0x80000000 | len(body)) + body


def fs_locations_ops(path: str) -> tuple[bytes, int]:
    comps = [c for c in path.split("/") if c]
    ops = struct.pack(">I", OP_PUTROOTFH)
    for c in comps:
        ops += struct.pack(">I", OP_LOOKUP) + _string(c.encode())
    ops += struct.pack(">III", OP_GETATTR, 1, (1 << FATTR4_FSID) | (1 << FATTR4_FS_LOCATIONS))
    return ops, len(comps) + 2


def _recv_record(sock: socket.socket) -> bytes:
    out = b""
    while True:
        head = recv_exact(sock, 4)
        n = struct.unpack(">I", head)[0]
        out += recv_exact(sock, n & 0x7FFFFFFF)
        if n & 0x80000000:
            return out


def parse_compound_reply(xid: int, data: bytes) -> dict:
    x = Xdr(data)
    rxid, mtype, reply_stat = x.u32(), x.u32(), x.u32()
    if rxid != xid or mtype != 1:
        raise RpcError(f"RPC reply xid {rxid} type {mtype}, expected a REPLY to xid {xid}")
    if reply_stat != 0:
        raise RpcError(f"RPC call denied (reply_stat {reply_stat})")
    x.u32()
    x.opaque()  # verifier
    accept = x.u32()
    if accept != 0:
        raise RpcError(f"RPC call not accepted (accept_stat {accept}: 1 PROG_UNAVAIL, 2 PROG_MISMATCH)")
    status = x.u32()
    x.opaque()  # tag
    results = []
    attrs: dict = {}
    for _ in range(x.u32()):
        op, st = x.u32(), x.u32()
        results.append({"op": op, "status": STATUS.get(st, st)})
        if st != NFS4_OK:
            break
        if op == OP_GETATTR:
            attrs = parse_fattr(x)
    return {"status": STATUS.get(status, status), "ops": results, "attrs": attrs}


def parse_fattr(x: Xdr) -> dict:
    words = [x.u32() for _ in range(x.u32())]
    body = Xdr(x.opaque())
    bits = {w * 32 + b for w, v in enumerate(words) for b in range(32) if v >> b & 1}
    out: dict = {"returned": sorted(bits)}
    for bit in sorted(bits):
        if bit == FATTR4_FSID:
            out["fsid"] = [body.u64(), body.u64()]
        elif bit == FATTR4_FS_LOCATIONS:
            root = body.strings()
            locations = []
            for _ in range(body.u32()):
                servers = body.strings()
                locations.append({"servers": servers, "rootpath": "/" + "/".join(body.strings())})
            out["fs_locations"] = {"fs_root": "/" + "/".join(root), "locations": locations}
        else:
            raise RpcError(f"the server returned attribute {bit}, which was not asked for")
    return out


def fs_locations(addr: str, port: int, path: str, timeout: float = 5.0) -> dict:
    xid = int.from_bytes(os.urandom(4), "big")
    ops, n = fs_locations_ops(path)
    with socket.create_connection((addr, port), timeout=timeout) as s:
        s.sendall(compound_call(xid, ops, n))
        return parse_compound_reply(xid, _recv_record(s))


def main(argv: list[str]) -> int:
    if len(argv) != 5 or argv[1] != "fs_locations":
        print("usage: python -m v6gate.net.nfs4 fs_locations ADDRESS PORT PATH", file=sys.stderr)
        return 2
    return answer(lambda: fs_locations(argv[2], int(argv[3]), argv[4]), (OSError, RpcError),
                  (RpcError, ConnectionError, TimeoutError))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
