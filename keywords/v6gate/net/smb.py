"""SMB3 FSCTL_QUERY_NETWORK_INTERFACE_INFO (MS-SMB2 §2.2.31.4, answer
§2.2.32.5): the server's list of its network interfaces, which multichannel
clients connect to.  The request is sent with smbprotocol (a pure-Python
SMB2/3 client: smbclient cannot send this IOCTL); the answer's buffer is
parsed here, byte by byte, so that a mis-sized entry is seen as such.

Run as a program inside the client's namespace:
``python -m v6gate.net.smb interfaces ADDRESS PORT`` prints one JSON object
(the raw output buffer in hex, or the error).
"""

from __future__ import annotations

import ipaddress
import json
import struct
import sys
import uuid
from dataclasses import dataclass

FSCTL_QUERY_NETWORK_INTERFACE_INFO = 0x001401FC
ENTRY_BYTES = 152  # Next, IfIndex, Capability, Reserved (4 each), LinkSpeed (8), SockAddr_Storage (128)
SOCKADDR_STORAGE = 128
AF_INET_SMB, AF_INET6_SMB = 0x0002, 0x0017


@dataclass
class Interface:
    offset: int
    next: int
    ifindex: int
    capability: int
    link_speed: int
    family: int
    address: str | None
    port: int
    scope_id: int | None


def parse_interfaces(buf: bytes) -> tuple[list[Interface], list[str]]:
    """Entries of a NETWORK_INTERFACE_INFO chain and the framing problems
    found (MS-SMB2 §2.2.32.5: each entry 152 bytes with a 128-byte
    SOCKADDR_STORAGE; Next is the offset of the next 8-byte aligned entry,
    0 in the last)."""
    out, problems = [], []
    off = 0
    seen = set()
    while True:
        if off in seen:
            problems.append(f"entry at offset {off}: Next loops back")
            break
        seen.add(off)
        if off + ENTRY_BYTES > len(buf):
            problems.append(f"entry at offset {off}: only {len(buf) - off} bytes left, an entry is {ENTRY_BYTES} "
                            "(truncated)")
            break
        nxt, ifindex, cap, _res, speed = struct.unpack_from("<IIIIQ", buf, off)
        sa = buf[off + 24: off + 24 + SOCKADDR_STORAGE]
        family, port = struct.unpack_from("<HH", sa, 0)
        port = struct.unpack(">H", sa[2:4])[0]
        addr, scope = None, None
        if family == AF_INET_SMB:
            addr = str(ipaddress.IPv4Address(sa[4:8]))
        elif family == AF_INET6_SMB:
            addr = str(ipaddress.IPv6Address(sa[8:24]))
            scope = struct.unpack_from("<I", sa, 24)[0]
        else:
            problems.append(f"entry at offset {off}: address family 0x{family:04x} is neither 0x0002 (IPv4) nor "
                            "0x0017 (IPv6)")
        out.append(Interface(off, nxt, ifindex, cap, speed, family, addr, port, scope))
        if nxt == 0:
            if off + ENTRY_BYTES != len(buf):
                problems.append(f"the last entry ends at {off + ENTRY_BYTES}, the buffer at {len(buf)}")
            break
        if nxt < ENTRY_BYTES or nxt % 8:
            problems.append(f"entry at offset {off}: Next = {nxt}, not an 8-byte aligned offset of at least "
                            f"{ENTRY_BYTES} (the entry's size)")
            break
        off += nxt
    return out, problems


def query(host: str, port: int, user: str | None = None, password: str | None = None, timeout: float = 10) -> dict:
    from smbprotocol.connection import Connection
    from smbprotocol.ioctl import IOCTLFlags, SMB2IOCTLRequest, SMB2IOCTLResponse
    from smbprotocol.session import Session
    from smbprotocol.tree import TreeConnect

    conn = Connection(uuid.uuid4(), host, port, require_signing=False)
    conn.connect(timeout=timeout)
    try:
        session = Session(conn, username=user or "guest", password=password or "", require_encryption=False,
                          auth_protocol="ntlm")
        session.connect()
        tree = TreeConnect(session, rf"\\{host}\IPC$")
        tree.connect(require_secure_negotiate=False)
        req = SMB2IOCTLRequest()
        req["ctl_code"] = FSCTL_QUERY_NETWORK_INTERFACE_INFO
        req["file_id"] = b"\xff" * 16
        req["max_output_response"] = 65536
        req["flags"] = IOCTLFlags.SMB2_0_IOCTL_IS_FSCTL
        request = conn.send(req, sid=session.session_id, tid=tree.tree_connect_id)
        response = conn.receive(request)
        rsp = SMB2IOCTLResponse()
        rsp.unpack(response["data"].get_value())
        buf = rsp["buffer"].get_value()
        return {"dialect": f"0x{conn.dialect:04x}", "buffer": buf.hex()}
    finally:
        conn.disconnect(True)


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[1] != "interfaces":
        print("usage: python -m v6gate.net.smb interfaces ADDRESS PORT [USER PASSWORD]", file=sys.stderr)
        return 2
    try:
        out = query(argv[2], int(argv[3]), *(argv[4:6]))
    except Exception as exc:  # the program's one line for the check to judge (DUT or bench)
        out = {"error": f"{exc.__class__.__name__}: {exc}"}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
