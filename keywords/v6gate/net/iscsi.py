"""iSCSI on the wire (RFC 7143): a discovery session (Login with
SessionType=Discovery, Text Request SendTargets=All, Logout) over a TCP
socket, and the parsing of the TargetAddress values it returns (§13.8).

Run as a program inside the client's namespace (the harness does
``ip netns exec NS python -m v6gate.net.iscsi sendtargets ADDR PORT IQN``);
it prints one JSON object: the keys of the answer, in order, or the error.
``... rw ADDR PORT INITIATOR IQN LUN SRC DST`` logs in to IQN, writes SRC's
bytes from LBA 0 with WRITE(10) (R2T / Data-Out), reads them back with
READ(10) into DST (libiscsi-bin has no writing tool).

libiscsi's iscsi-ls prints one portal per target; the checks need every
TargetAddress the target sends, so the discovery session is spoken here.
"""

from __future__ import annotations

import ipaddress
import json
import re
import socket
import struct
import sys
from dataclasses import dataclass

from .alternate import ArmFailed
from .speaker import answer

#: the initiator name v6gate logs in with (the storage checks and the iSCSI gates)
INITIATOR = "iqn.2026-11.test.v6gate:initiator"
BHS = 48
OP_LOGIN_REQ, OP_TEXT_REQ, OP_LOGOUT_REQ = 0x03, 0x04, 0x06
OP_LOGIN_RSP, OP_TEXT_RSP, OP_LOGOUT_RSP, OP_REJECT = 0x23, 0x24, 0x26, 0x3F


class IscsiError(Exception):
    """The target's answer is not what RFC 7143 allows (the DUT's doing)."""


def _pad4(n: int) -> int:
    return (n + 3) & ~3


def keys_bytes(pairs: list[tuple[str, str]]) -> bytes:
    return b"".join(f"{k}={v}".encode() + b"\0" for k, v in pairs)


def parse_keys(data: bytes) -> list[tuple[str, str]]:
    """Text keys (RFC 7143 §6.1): key=value strings, each ended by a NUL."""
    out = []
    for item in data.split(b"\0"):
        if not item:
            continue
        k, sep, v = item.decode("utf-8", "replace").partition("=")
        out.append((k, v if sep else ""))
    return out


def pdu(opcode: int, flags: int, *, isid: bytes = b"\x00\x02\x3d\x00\x00\x01", tsih: int = 0, itt: int = 1,
        cid: int = 0, cmdsn: int = 1, expstatsn: int = 0, csg_nsg: int | None = None, data: bytes = b"",
        immediate: bool = True, ttt: int = 0xFFFFFFFF) -> bytes:
    """A request PDU: BHS (48 bytes) + data segment padded to 4 bytes."""
    op = opcode | (0x40 if immediate else 0)
    if csg_nsg is not None:
        flags |= csg_nsg
    dlen = len(data)
    if opcode == OP_LOGIN_REQ:
        bhs = struct.pack(">BBBBB", op, flags, 0, 0, 0) + struct.pack(">I", dlen)[1:]
        bhs += isid + struct.pack(">H", tsih) + struct.pack(">IHH", itt, cid, 0)
        bhs += struct.pack(">II", cmdsn, expstatsn) + b"\0" * 16
    else:
        bhs = struct.pack(">BBBBB", op, flags, 0, 0, 0) + struct.pack(">I", dlen)[1:]
        bhs += b"\0" * 8 + struct.pack(">II", itt, ttt) + struct.pack(">II", cmdsn, expstatsn) + b"\0" * 16
    assert len(bhs) == BHS
    return bhs + data + b"\0" * (_pad4(dlen) - dlen)


@dataclass
class Pdu:
    opcode: int
    flags: int
    bhs: bytes
    data: bytes

    @property
    def status(self) -> tuple[int, int]:
        return self.bhs[36], self.bhs[37]

    @property
    def statsn(self) -> int:
        return struct.unpack(">I", self.bhs[24:28])[0]

    @property
    def tsih(self) -> int:
        return struct.unpack(">H", self.bhs[14:16])[0]


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise IscsiError(f"the target closed the connection after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def read_pdu(sock: socket.socket) -> Pdu:
    bhs = _recv_exact(sock, BHS)
    ahs = bhs[4] * 4
    dlen = int.from_bytes(bhs[5:8], "big")
    if ahs:
        _recv_exact(sock, ahs)
    data = _recv_exact(sock, _pad4(dlen))[:dlen] if dlen else b""
    return Pdu(bhs[0] & 0x3F, bhs[1], bhs, data)


def discovery(host: str, port: int, initiator: str, timeout: float = 5.0) -> dict:
    """Log in for discovery, ask SendTargets=All, log out.  Returns
    {"login": [...keys], "sendtargets": [[key, value], ...], "local": addr, "peer": addr}."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect((host, port))
        local, peer = sock.getsockname()[0], sock.getpeername()[0]
        # Login: security negotiation straight to the full feature phase (AuthMethod=None), T=1 CSG=0 NSG=3
        login_keys = [("InitiatorName", initiator), ("SessionType", "Discovery"), ("AuthMethod", "None"),
                      ("HeaderDigest", "None"), ("DataDigest", "None"), ("MaxRecvDataSegmentLength", "65536")]
        sock.sendall(pdu(OP_LOGIN_REQ, 0x80, csg_nsg=0x03, data=keys_bytes(login_keys)))
        rsp = read_pdu(sock)
        if rsp.opcode != OP_LOGIN_RSP:
            raise IscsiError(f"expected a Login Response, got opcode 0x{rsp.opcode:02x}")
        if rsp.status != (0, 0):
            raise IscsiError(f"login refused: status class {rsp.status[0]} detail {rsp.status[1]} "
                             f"(keys {parse_keys(rsp.data)})")
        if not rsp.flags & 0x80:
            raise IscsiError("the target did not move to the full feature phase (T bit clear)")
        statsn = rsp.statsn
        sock.sendall(pdu(OP_TEXT_REQ, 0x80, cmdsn=1, expstatsn=statsn + 1, itt=2,
                         data=keys_bytes([("SendTargets", "All")])))
        answer = b""
        while True:
            r = read_pdu(sock)
            if r.opcode == OP_REJECT:
                raise IscsiError("the target rejected the SendTargets Text Request")
            if r.opcode != OP_TEXT_RSP:
                raise IscsiError(f"expected a Text Response, got opcode 0x{r.opcode:02x}")
            answer += r.data
            if r.flags & 0x80 or not r.flags & 0x40:  # F bit: final; C bit: continued
                break
            ttt = struct.unpack(">I", r.bhs[20:24])[0]
            sock.sendall(pdu(OP_TEXT_REQ, 0x80, cmdsn=1, expstatsn=r.statsn + 1, itt=2, ttt=ttt))
        sock.sendall(pdu(OP_LOGOUT_REQ, 0x80, cmdsn=1, itt=3, expstatsn=statsn + 2))
        try:
            read_pdu(sock)
        except (IscsiError, OSError):
            pass  # a target may close at once; the answer is what counts
        return {"login": parse_keys(rsp.data), "sendtargets": parse_keys(answer), "local": local, "peer": peer}
    finally:
        sock.close()


# -- RFC 7143 §13.8 TargetAddress -----------------------------------------------------------------
_TA = re.compile(r"^(?P<host>\[[^\]]*\]|[^:,\[\]]+|[0-9A-Fa-f:.]+)(?::(?P<port>\d{1,5}))?(?:,(?P<tpgt>\d+))?$")


@dataclass
class TargetAddress:
    text: str
    host: str  # without brackets
    port: int | None
    tpgt: int | None
    bracketed: bool

    @property
    def ip(self):
        try:
            return ipaddress.ip_address(self.host)
        except ValueError:
            return None


def parse_target_address(text: str) -> TargetAddress:
    """``domainname[:port][,portal-group-tag]``, an IPv6 literal in brackets
    (RFC 7143 §13.8, RFC 3986 §3.2.2).  Raises ValueError, saying what is wrong."""
    m = _TA.match(text)
    if not m:
        raise ValueError(f"{text!r} is not domainname[:port][,tpgt]")
    host = m.group("host")
    bracketed = host.startswith("[")
    if bracketed:
        host = host[1:-1]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"{text!r}: {host!r} in brackets is not an IPv6 address") from None
    elif host.count(":") > 1 or (":" in host and m.group("port") is None):
        raise ValueError(f"{text!r}: an IPv6 address must be in brackets (RFC 7143 §13.8)")
    port = int(m.group("port")) if m.group("port") else None
    if port is not None and not 0 < port < 65536:
        raise ValueError(f"{text!r}: port {port} out of range")
    tpgt = int(m.group("tpgt")) if m.group("tpgt") else None
    return TargetAddress(text, host, port, tpgt, bracketed)


# -- a normal session: SCSI WRITE(10) and READ(10) (RFC 7143 §11.2-11.8) -------------------------------
OP_SCSI_CMD, OP_DATA_OUT = 0x01, 0x05
OP_SCSI_RSP, OP_DATA_IN, OP_R2T = 0x21, 0x25, 0x31


class Session:
    """One connection of a Normal session to ``iqn``, LUN ``lun``: enough of
    RFC 7143 to write and read blocks (R2T and Data-Out, Data-In)."""

    def __init__(self, host: str, port: int, initiator: str, iqn: str, lun: int = 1, timeout: float = 10.0,
                 isid: bytes = b"\x00\x02\x3d\x00\x00\x01"):
        # two sessions of one initiator at once need distinct ISIDs: the same (initiator, ISID) is a session
        # reinstatement (RFC 7143 §6.3.5), and the target would drop the first
        self.isid = isid
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect((host, port))
        self.lun = struct.pack(">HHI", lun & 0x3FFF, 0, 0)
        self.cmdsn, self.expstatsn, self.itt = 1, 0, 0x100
        self.target_mrdsl = 8192
        first = [("InitiatorName", initiator), ("TargetName", iqn), ("SessionType", "Normal"),
                 ("AuthMethod", "None")]
        rsp = self._login(0x80 | 0x01, first)  # CSG 0 (security) -> NSG 1 (operational)
        ops = [("HeaderDigest", "None"), ("DataDigest", "None"), ("MaxRecvDataSegmentLength", "262144"),
               ("InitialR2T", "Yes"), ("ImmediateData", "No"), ("MaxBurstLength", "262144"),
               ("FirstBurstLength", "65536"), ("MaxConnections", "1"), ("ErrorRecoveryLevel", "0"),
               ("DataPDUInOrder", "Yes"), ("DataSequenceInOrder", "Yes")]
        rsp = self._login(0x80 | 0x04 | 0x03, ops, tsih=rsp.tsih)  # CSG 1 -> NSG 3 (full feature)
        for k, v in parse_keys(rsp.data):
            if k == "MaxRecvDataSegmentLength" and v.isdigit():
                self.target_mrdsl = int(v)
            if k == "MaxBurstLength" and v.isdigit():
                self.max_burst = int(v)

    def _login(self, flags: int, keys, tsih: int = 0) -> Pdu:
        self.sock.sendall(pdu(OP_LOGIN_REQ, flags, isid=self.isid, tsih=tsih, cmdsn=self.cmdsn,
                              expstatsn=self.expstatsn, data=keys_bytes(keys)))
        rsp = read_pdu(self.sock)
        if rsp.opcode != OP_LOGIN_RSP or rsp.status != (0, 0):
            raise IscsiError(f"login refused: opcode 0x{rsp.opcode:02x} status {rsp.status} {parse_keys(rsp.data)}")
        self.expstatsn = rsp.statsn + 1
        return rsp

    def _cmd(self, flags: int, cdb: bytes, length: int) -> int:
        self.itt += 1
        bhs = bytearray(BHS)
        bhs[0], bhs[1] = OP_SCSI_CMD, flags | 0x80 | 0x01  # F, simple task attribute
        bhs[8:16] = self.lun
        struct.pack_into(">IIII", bhs, 16, self.itt, length, self.cmdsn, self.expstatsn)
        bhs[32:32 + len(cdb)] = cdb
        self.sock.sendall(bytes(bhs))
        self.cmdsn += 1
        return self.itt

    def _status(self, r: Pdu, what: str) -> None:
        self.expstatsn = r.statsn + 1
        if r.bhs[2] != 0 or r.bhs[3] != 0:
            raise IscsiError(f"{what}: response {r.bhs[2]} SCSI status 0x{r.bhs[3]:02x}")

    def write(self, lba: int, data: bytes, block: int = 512) -> None:
        cdb = struct.pack(">BBIBHB", 0x2A, 0, lba, 0, len(data) // block, 0)
        itt = self._cmd(0x20, cdb, len(data))
        while True:
            r = read_pdu(self.sock)
            if r.opcode == OP_R2T:
                ttt, = struct.unpack(">I", r.bhs[20:24])
                off, want = struct.unpack(">II", r.bhs[40:48])
                for datasn, pos in enumerate(range(off, off + want, self.target_mrdsl)):
                    chunk = data[pos:min(pos + self.target_mrdsl, off + want)]
                    bhs = bytearray(BHS)
                    bhs[0] = OP_DATA_OUT
                    bhs[1] = 0x80 if pos + len(chunk) >= off + want else 0
                    bhs[5:8] = len(chunk).to_bytes(3, "big")
                    bhs[8:16] = self.lun
                    struct.pack_into(">II", bhs, 16, itt, ttt)
                    struct.pack_into(">I", bhs, 28, self.expstatsn)
                    struct.pack_into(">II", bhs, 36, datasn, pos)
                    self.sock.sendall(bytes(bhs) + chunk + b"\0" * (_pad4(len(chunk)) - len(chunk)))
            elif r.opcode == OP_SCSI_RSP:
                self._status(r, "WRITE(10)")
                return
            else:
                raise IscsiError(f"WRITE(10): unexpected opcode 0x{r.opcode:02x}")

    def read(self, lba: int, nbytes: int, block: int = 512) -> bytes:
        cdb = struct.pack(">BBIBHB", 0x28, 0, lba, 0, nbytes // block, 0)
        self._cmd(0x40, cdb, nbytes)
        buf = bytearray(nbytes)
        while True:
            r = read_pdu(self.sock)
            if r.opcode == OP_DATA_IN:
                off, = struct.unpack(">I", r.bhs[40:44])
                buf[off:off + len(r.data)] = r.data
                if r.flags & 0x01:  # S: status in this PDU
                    self._status(r, "READ(10)")
                    return bytes(buf)
            elif r.opcode == OP_SCSI_RSP:
                self._status(r, "READ(10)")
                return bytes(buf)
            else:
                raise IscsiError(f"READ(10): unexpected opcode 0x{r.opcode:02x}")

    def clear_unit_attention(self, tries: int = 3) -> None:
        """TEST UNIT READY until GOOD: a new I_T nexus first gets a UNIT ATTENTION (CHECK CONDITION)."""
        for _ in range(tries):
            self._cmd(0, bytes(6), 0)
            r = read_pdu(self.sock)
            if r.opcode != OP_SCSI_RSP:
                raise IscsiError(f"TEST UNIT READY: unexpected opcode 0x{r.opcode:02x}")
            self.expstatsn = r.statsn + 1
            if r.bhs[3] == 0:
                return
        raise IscsiError(f"TEST UNIT READY: SCSI status 0x{r.bhs[3]:02x} after {tries} tries")

    def close(self) -> None:
        try:
            self.sock.sendall(pdu(OP_LOGOUT_REQ, 0x80, cmdsn=self.cmdsn, itt=0xFFF, expstatsn=self.expstatsn))
            read_pdu(self.sock)
        except (OSError, IscsiError):
            pass
        self.sock.close()


def write_and_read_back(host: str, port: int, initiator: str, iqn: str, lun: int, src: str, dst: str,
                        lba: int = 0) -> dict:
    with open(src, "rb") as f:
        data = f.read()
    s = Session(host, port, initiator, iqn, lun)
    try:
        s.clear_unit_attention()
        chunk = 256 << 10
        for off in range(0, len(data), chunk):
            s.write(lba + off // 512, data[off:off + chunk])
        back = bytearray()
        for off in range(0, len(data), chunk):
            back += s.read(lba + off // 512, min(chunk, len(data) - off))
    finally:
        s.close()
    with open(dst, "wb") as f:
        f.write(back)
    return {"written": len(data), "read": len(back), "target_mrdsl": s.target_mrdsl}


def sequential(host: str, port: int, initiator: str, iqn: str, lun: int, bs: int, rw: str, seconds: float,
               span: int = 32 << 20) -> dict:
    """Sequential READ(10) or WRITE(10) of ``bs``-byte blocks over the first
    ``span`` bytes of the LUN, for ``seconds``: operations, bytes, and this
    process's CPU (the measured client of the storage gate)."""
    import resource
    import time

    s = Session(host, port, initiator, iqn, lun)
    try:
        s.clear_unit_attention()
        data = bytes(range(256)) * (bs // 256)
        ops, lba, blocks = 0, 0, bs // 512
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            if rw == "write":
                s.write(lba, data)
            else:
                s.read(lba, bs)
            ops += 1
            lba = (lba + blocks) % (span // 512)
        elapsed = time.monotonic() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        s.close()
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {"ops": ops, "bytes": ops * bs, "seconds": elapsed, "cpu_s": cpu, "bs": bs, "rw": rw}


def alternated(hosts: tuple[str, str], port: int, initiator: str, iqn: str, lun: int, bs: int, rw: str,
               seconds: float, slice_s: float, span: int = 16 << 20) -> dict:
    """Both arms (one session per address, each on its own ``span`` of the LUN) in ABBA slices
    (net/alternate.py)."""
    from .alternate import run_slices

    sessions, ops = [], []
    data = bytes(range(256)) * (bs // 256)
    blocks, per = bs // 512, span // 512
    try:
        for i, h in enumerate(hosts):
            try:
                s = Session(h, port, initiator, iqn, lun, isid=b"\x00\x02\x3d\x00\x01" + bytes([i + 1]))
                sessions.append(s)
                s.clear_unit_attention()
            except (OSError, IscsiError) as exc:
                raise ArmFailed(i, exc) from exc
            state = {"lba": 0}

            def op(s=s, state=state, base=i * per) -> int:
                if rw == "write":
                    s.write(base + state["lba"], data)
                else:
                    s.read(base + state["lba"], bs)
                state["lba"] = (state["lba"] + blocks) % per
                return bs

            ops.append(op)
        out = run_slices(ops, seconds, slice_s)
    finally:
        for s in sessions:
            s.close()
    return {**out, "bs": bs, "rw": rw, "hosts": list(hosts)}


# -- an impostor discovery service (lab faults only) -------------------------------------------------
def rsp_pdu(opcode: int, flags: int, req: bytes, statsn: int, data: bytes, *, status: int = 0) -> bytes:
    """A response PDU answering request BHS ``req`` (ITT echoed, StatSN set)."""
    dlen = len(data)
    bhs = bytearray(BHS)
    bhs[0], bhs[1] = opcode, flags
    bhs[5:8] = dlen.to_bytes(3, "big")
    if opcode == OP_LOGIN_RSP:
        bhs[2], bhs[3] = 0, 0
        bhs[8:14] = req[8:14]  # ISID
        bhs[14:16] = b"\x00\x01"  # TSIH
        bhs[36], bhs[37] = status >> 8, status & 0xFF
    bhs[16:20] = req[16:20]  # ITT
    if opcode == OP_TEXT_RSP:
        bhs[20:24] = b"\xff\xff\xff\xff"
    cmdsn = struct.unpack(">I", req[24:28])[0]
    bhs[24:36] = struct.pack(">III", statsn, cmdsn + 1, cmdsn + 16)
    return bytes(bhs) + data + b"\0" * (_pad4(dlen) - dlen)


def impostor(port: int, iqn: str, portal: str) -> None:
    """Answer discovery sessions on [::]:port as a target whose SendTargets
    lists ``portal`` (a lab fault: a target advertising an IPv4 portal)."""
    srv = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("::", port))
    srv.listen(4)
    while True:
        conn, _ = srv.accept()
        conn.settimeout(10)
        statsn = 1
        try:
            while True:
                req = read_pdu(conn)
                if req.opcode == OP_LOGIN_REQ:
                    conn.sendall(rsp_pdu(OP_LOGIN_RSP, 0x83, req.bhs, statsn, keys_bytes(
                        [("TargetPortalGroupTag", "1"), ("AuthMethod", "None")])))
                elif req.opcode == OP_TEXT_REQ:
                    conn.sendall(rsp_pdu(OP_TEXT_RSP, 0x80, req.bhs, statsn, keys_bytes(
                        [("TargetName", iqn), ("TargetAddress", portal)])))
                elif req.opcode == OP_LOGOUT_REQ:
                    conn.sendall(rsp_pdu(OP_LOGOUT_RSP, 0x80, req.bhs, statsn, b""))
                    break
                statsn += 1
        except (OSError, IscsiError):
            pass
        finally:
            conn.close()


def main(argv: list[str]) -> int:
    if len(argv) == 9 and argv[1] == "rw":
        try:
            out = write_and_read_back(argv[2], int(argv[3]), argv[4], argv[5], int(argv[6]), argv[7], argv[8])
        except (OSError, IscsiError) as exc:
            out = {"error": f"{exc.__class__.__name__}: {exc}"}
        print(json.dumps(out))
        return 0
    if len(argv) == 10 and argv[1] == "seq":
        try:
            out = sequential(argv[2], int(argv[3]), argv[4], argv[5], int(argv[6]), int(argv[7]), argv[8],
                             float(argv[9]))
        except (OSError, IscsiError) as exc:
            out = {"error": f"{exc.__class__.__name__}: {exc}"}
        print(json.dumps(out))
        return 0
    if len(argv) == 12 and argv[1] == "alt":
        try:
            out = alternated((argv[2], argv[3]), int(argv[4]), argv[5], argv[6], int(argv[7]), int(argv[8]), argv[9],
                             float(argv[10]), float(argv[11]))
        except (OSError, IscsiError, ValueError, ArmFailed) as exc:
            out = {"error": f"{exc.__class__.__name__}: {exc}", "arm": getattr(exc, "arm", None)}
        print(json.dumps(out))
        return 0
    if len(argv) == 5 and argv[1] == "impostor":
        impostor(int(argv[2]), argv[3], argv[4])
        return 0
    if len(argv) != 5 or argv[1] != "sendtargets":
        print("usage: python -m v6gate.net.iscsi sendtargets ADDRESS PORT INITIATOR_IQN", file=sys.stderr)
        return 2
    return answer(lambda: discovery(argv[2], int(argv[3]), argv[4]), (OSError, IscsiError),
                  (IscsiError, ConnectionError, TimeoutError))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
