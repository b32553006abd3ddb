"""NVMe/TCP on the wire: a discovery host (NVMe/TCP Transport Specification
1.0, NVMe over Fabrics 1.1 / Base 2.0 Discovery) over a TCP socket.

The session: ICReq/ICResp (TCP transport §3.6.2), a Fabrics Connect of the
admin queue to the discovery NQN, Property Set CC.EN = 1 and Property Get
CSTS until RDY (a controller serves admin commands only when enabled),
Get Log Page 70h (the Discovery Log Page: its 1,024-byte header, then every
entry), and a Property Set CC.SHN (normal shutdown) before closing.

``... rw ADDR PORT NQN SRC DST`` connects an admin queue and an I/O queue
(qid 1) to subsystem NQN, reads the namespace's LBA size (Identify), writes
SRC's bytes from LBA 0 of namespace 1 (Write; the data goes out in H2CData
PDUs answering the controller's R2Ts) and reads them back into DST (Read;
C2HData PDUs).

Run as a program inside the client's namespace (``python -m
v6gate.net.nvme_tcp discover ADDR PORT``); it prints one JSON object: the
controller's ICResp, the log's header and entries, or the error.  Debian
12's ``nvme-cli`` needs the kernel's NVMe/TCP host, which this machine
lacks, so the host side is spoken here.
"""

from __future__ import annotations

import socket
import struct
import sys
import uuid

from .speaker import answer, recv_exact

DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery"
HOST_UUID = uuid.UUID("6f7a2c1e-7b4d-4e0a-9a51-76367a617465")
HOST_NQN = f"nqn.2014-08.org.nvmexpress:uuid:{HOST_UUID}"
#: PDU types (TCP transport §3.6.2)
ICREQ, ICRESP, H2C_TERM, C2H_TERM, CAPSULE_CMD, CAPSULE_RESP, H2C_DATA, C2H_DATA, R2T = 0, 1, 2, 3, 4, 5, 6, 7, 9
C2H_LAST, C2H_SUCCESS = 0x04, 0x08
FABRICS, GET_LOG_PAGE, IDENTIFY = 0x7F, 0x02, 0x06
NVM_WRITE, NVM_READ = 0x01, 0x02
H2C_LAST = 0x04
PROP_SET, CONNECT, PROP_GET = 0x00, 0x01, 0x04
REG_CC, REG_CSTS = 0x14, 0x1C
#: SGL identifiers: in-capsule data (Data Block, Offset) and data moved by C2HData/H2CData PDUs (Transport)
SGL_INCAPSULE, SGL_TRANSPORT = 0x01, 0x5A
LOG_DISCOVERY = 0x70
TRTYPE = {1: "rdma", 2: "fc", 3: "tcp", 0xFE: "loop"}
ADRFAM = {1: "ipv4", 2: "ipv6", 3: "ib", 4: "fc", 0xFE: "intra-host"}
SUBTYPE = {1: "referral", 2: "nvme", 3: "current-discovery"}


class NvmeError(Exception):
    """The controller's answer is not what the specification allows, or it
    failed a command (the DUT's doing)."""


def recv_pdu(sock: socket.socket) -> tuple[int, int, bytes, bytes]:
    """(type, flags, header, data) of the next PDU."""
    ch = recv_exact(sock, 8, "the controller")
    ptype, flags, hlen, pdo, plen = struct.unpack("<BBBBI", ch)
    if hlen < 8 or plen < hlen or plen > 1 << 24:
        raise NvmeError(f"malformed PDU header: type {ptype:#x} hlen {hlen} plen {plen}")
    rest = recv_exact(sock, plen - 8, "the controller")
    header = ch + rest[:hlen - 8]
    data = rest[(pdo or hlen) - 8:] if plen > hlen else b""
    if ptype == C2H_TERM:
        fes = struct.unpack_from("<H", header, 8)[0]
        raise NvmeError(f"the controller terminated the connection (C2HTermReq, fatal error status {fes:#x})")
    return ptype, flags, header, data


def icreq() -> bytes:
    return struct.pack("<BBBBIHBBI", ICREQ, 0, 128, 0, 128, 0, 0, 0, 0) + bytes(112)


def capsule(sqe: bytes, data: bytes = b"") -> bytes:
    plen = 72 + len(data)
    return struct.pack("<BBBBI", CAPSULE_CMD, 0, 72, 72 if data else 0, plen) + sqe + data


def sqe(opcode: int, cid: int, *, fctype: int = 0, nsid: int = 0, sgl: tuple[int, int] = (0, 0),
        cdw10: bytes = b"") -> bytes:
    """A 64-byte submission queue entry; ``sgl`` = (identifier, length); ``cdw10`` = bytes 40-63."""
    b = bytearray(64)
    b[0], b[1] = opcode, 0x40  # PSDT 01b: SGLs (every command of a Fabrics transport)
    struct.pack_into("<H", b, 2, cid)
    if opcode == FABRICS:
        b[4] = fctype
    else:
        struct.pack_into("<I", b, 4, nsid)
    struct.pack_into("<QI", b, 24, 0, sgl[1])
    b[39] = sgl[0]
    b[40:40 + len(cdw10)] = cdw10
    return bytes(b)


class Host:
    """One admin queue of a controller, by the NVMe/TCP transport."""

    def __init__(self, addr: str, port: int, timeout: float = 5.0):
        self.sock = socket.create_connection((addr, port), timeout=timeout)
        self.cid = 0
        self.sock.sendall(icreq())
        ptype, _, h, _ = recv_pdu(self.sock)
        if ptype != ICRESP or len(h) < 16:
            raise NvmeError(f"the answer to ICReq is PDU type {ptype:#x}, not ICResp")
        pfv, cpda, dgst, maxh2c = struct.unpack_from("<HBBI", h, 8)
        self.icresp = {"pfv": pfv, "cpda": cpda, "dgst": dgst, "maxh2cdata": maxh2c}
        if pfv != 0:
            raise NvmeError(f"ICResp PDU format version {pfv}, not 0")

    def close(self) -> None:
        self.sock.close()

    def command(self, build, data: bytes = b"", read: int = 0, write: bytes = b"") -> tuple[int, bytes]:
        """Send ``build(cid)`` (an SQE), with in-capsule ``data``; send
        ``write`` in H2CData PDUs as the controller's R2Ts ask; collect
        ``read`` bytes of C2HData; returns (CQE dword 0, the data)."""
        self.cid = (self.cid + 1) & 0xFFFF
        cid = self.cid
        self.sock.sendall(capsule(build(cid), data))
        got = bytearray(read)
        seen = 0
        while True:
            ptype, flags, h, payload = recv_pdu(self.sock)
            if ptype == R2T:
                self._send_data(cid, write, h)
                continue
            if ptype == C2H_DATA:
                ccid, _, datao, datal = struct.unpack_from("<HHII", h, 8)
                if ccid != cid or datao + datal > read or len(payload) < datal:
                    raise NvmeError(f"C2HData for command {ccid} at offset {datao}+{datal} does not fit command "
                                    f"{cid}'s {read}-byte buffer")
                got[datao:datao + datal] = payload[:datal]
                seen += datal
                if flags & C2H_SUCCESS:
                    return 0, bytes(got)
                continue
            if ptype != CAPSULE_RESP or len(h) < 24:
                raise NvmeError(f"unexpected PDU type {ptype:#x} while waiting for command {cid}'s completion")
            dw0, _, _, _, ccid, status = struct.unpack_from("<IIHHHH", h, 8)
            if ccid != cid:
                raise NvmeError(f"completion for command {ccid}, waiting for {cid}")
            if status >> 1:
                sc, sct = (status >> 1) & 0xFF, (status >> 9) & 0x7
                raise NvmeError(f"command {cid} failed: status code type {sct:#x}, status code {sc:#x}")
            return dw0, bytes(got)

    def _send_data(self, cid: int, write: bytes, h: bytes) -> None:
        """Answer an R2T: its window of ``write`` in H2CData PDUs of at most MAXH2CDATA bytes."""
        ccid, ttag, r2to, r2tl = struct.unpack_from("<HHII", h, 8)
        if ccid != cid or r2to + r2tl > len(write):
            raise NvmeError(f"R2T for command {ccid} asks for bytes {r2to}+{r2tl}; command {cid} writes {len(write)}")
        step = max(1, min(self.icresp["maxh2cdata"] or r2tl, 1 << 20))
        off = r2to
        while off < r2to + r2tl:
            n = min(step, r2to + r2tl - off)
            last = H2C_LAST if off + n == r2to + r2tl else 0
            self.sock.sendall(struct.pack("<BBBBIHHIII", H2C_DATA, last, 24, 24, 24 + n, cid, ttag, off, n, 0)
                              + write[off:off + n])
            off += n

    def connect(self, subnqn: str, qid: int = 0, sqsize: int = 31, cntlid: int = 0xFFFF) -> int:
        data = bytearray(1024)
        data[0:16] = HOST_UUID.bytes
        struct.pack_into("<H", data, 16, cntlid)  # 0xFFFF on the admin queue: any controller (the dynamic model)
        data[256:256 + len(subnqn)] = subnqn.encode()
        data[512:512 + len(HOST_NQN)] = HOST_NQN.encode()
        spec = struct.pack("<HHHBBI", 0, qid, sqsize, 0, 0, 0)  # recfmt, qid, sqsize, cattr, resv, kato 0
        dw0, _ = self.command(lambda cid: sqe(FABRICS, cid, fctype=CONNECT, sgl=(SGL_INCAPSULE, 1024), cdw10=spec),
                              bytes(data))
        return dw0 & 0xFFFF

    def prop_get(self, offset: int) -> int:
        dw0, _ = self.command(lambda cid: sqe(FABRICS, cid, fctype=PROP_GET, cdw10=struct.pack("<B3xI", 0, offset)))
        return dw0

    def prop_set(self, offset: int, value: int) -> None:
        self.command(lambda cid: sqe(FABRICS, cid, fctype=PROP_SET, cdw10=struct.pack("<B3xIQ", 0, offset, value)))

    def enable(self, wait_s: float = 5.0) -> None:
        import time

        self.prop_set(REG_CC, 0x00460001)  # EN, IOSQES 6 (64 B), IOCQES 4 (16 B)
        deadline = time.monotonic() + wait_s
        while not self.prop_get(REG_CSTS) & 1:
            if time.monotonic() > deadline:
                raise NvmeError(f"CSTS.RDY not set {wait_s:g} s after CC.EN = 1")
            time.sleep(0.05)

    def get_log(self, lid: int, length: int, offset: int = 0) -> bytes:
        numd = length // 4 - 1
        cdw = struct.pack("<IIII", lid | ((numd & 0xFFFF) << 16), numd >> 16, offset & 0xFFFFFFFF, offset >> 32)
        _, data = self.command(lambda cid: sqe(GET_LOG_PAGE, cid, sgl=(SGL_TRANSPORT, length), cdw10=cdw),
                               read=length)
        return data

    def identify(self, cns: int, nsid: int = 0) -> bytes:
        _, data = self.command(lambda cid: sqe(IDENTIFY, cid, nsid=nsid, sgl=(SGL_TRANSPORT, 4096),
                                               cdw10=struct.pack("<I", cns)), read=4096)
        return data

    def io(self, opcode: int, lba: int, blocks: int, lba_size: int, write: bytes = b"") -> bytes:
        """Write or Read ``blocks`` logical blocks of namespace 1 from ``lba``."""
        n = blocks * lba_size
        cdw = struct.pack("<III", lba & 0xFFFFFFFF, lba >> 32, blocks - 1)
        _, data = self.command(lambda cid: sqe(opcode, cid, nsid=1, sgl=(SGL_TRANSPORT, n), cdw10=cdw),
                               read=0 if write else n, write=write)
        return data

    def shutdown(self) -> None:
        self.prop_set(REG_CC, 0x00464001)  # SHN 01b: normal shutdown


def _str(b: bytes) -> str:
    return b.split(b"\0", 1)[0].decode(errors="replace").strip()


def parse_log(page: bytes) -> dict:
    """The Discovery Log Page (Base 2.0 §5.16.1.23): its header and entries."""
    genctr, numrec, recfmt = struct.unpack_from("<QQH", page, 0)
    entries = []
    for i in range(numrec):
        e = page[1024 + 1024 * i:2048 + 1024 * i]
        if len(e) < 1024:
            break
        trtype, adrfam, subtype, _treq, portid, cntlid, asqsz = struct.unpack_from("<BBBBHHH", e, 0)
        entries.append({"trtype": TRTYPE.get(trtype, trtype), "adrfam": ADRFAM.get(adrfam, adrfam),
                        "subtype": SUBTYPE.get(subtype, subtype), "portid": portid, "cntlid": cntlid,
                        "asqsz": asqsz, "trsvcid": _str(e[32:64]), "subnqn": _str(e[256:512]),
                        "traddr": _str(e[512:768])})
    return {"genctr": genctr, "numrec": numrec, "recfmt": recfmt, "entries": entries}


def discovery(addr: str, port: int, timeout: float = 5.0) -> dict:
    host = Host(addr, port, timeout)
    try:
        cntlid = host.connect(DISCOVERY_NQN)
        host.enable()
        head = host.get_log(LOG_DISCOVERY, 1024)
        numrec = struct.unpack_from("<Q", head, 8)[0]
        if numrec > 1024:
            raise NvmeError(f"the Discovery Log Page claims {numrec} records")
        page = host.get_log(LOG_DISCOVERY, 1024 * (1 + numrec)) if numrec else head
        log = parse_log(page)
        host.shutdown()
        return {"icresp": host.icresp, "cntlid": cntlid, **log}
    finally:
        host.close()


def lba_format(ns: bytes) -> tuple[int, int]:
    """(namespace size in blocks, LBA data size in bytes) from Identify Namespace (Base 2.0 §5.17.2.1)."""
    nsze = struct.unpack_from("<Q", ns, 0)[0]
    lbads = ns[128 + 4 * (ns[26] & 0x0F) + 2]
    if not 9 <= lbads <= 16:
        raise NvmeError(f"Identify Namespace gives LBA data size 2^{lbads}")
    return nsze, 1 << lbads


def write_and_read_back(addr: str, port: int, nqn: str, src: str, dst: str, chunk: int = 128 << 10,
                        timeout: float = 4.0) -> dict:
    """Write ``src``'s bytes from LBA 0 of namespace 1 of ``nqn`` and read them back into ``dst``."""
    import time

    data = open(src, "rb").read()
    admin = Host(addr, port, timeout)
    try:
        cntlid = admin.connect(nqn)
        admin.enable()
        nsze, lba = lba_format(admin.identify(0, nsid=1))
        if len(data) % lba or len(data) // lba > nsze:
            raise ValueError(f"{len(data)} bytes do not fit whole {lba}-byte blocks of a {nsze}-block namespace")
        io = Host(addr, port, timeout)
        try:
            io.connect(nqn, qid=1, cntlid=cntlid)
            t0 = time.monotonic()
            for off in range(0, len(data), chunk):
                part = data[off:off + chunk]
                io.io(NVM_WRITE, off // lba, len(part) // lba, lba, write=part)
            back = bytearray()
            for off in range(0, len(data), chunk):
                n = min(chunk, len(data) - off)
                back += io.io(NVM_READ, off // lba, n // lba, lba)
            seconds = time.monotonic() - t0
        finally:
            io.close()
        admin.shutdown()
    finally:
        admin.close()
    open(dst, "wb").write(back)
    return {"cntlid": cntlid, "lba_size": lba, "nsze": nsze, "bytes": len(data), "seconds": round(seconds, 3)}


def main(argv: list[str]) -> int:
    if len(argv) == 7 and argv[1] == "rw":
        return answer(lambda: write_and_read_back(argv[2], int(argv[3]), argv[4], argv[5], argv[6]),
                      (OSError, NvmeError, ValueError), (NvmeError, ConnectionError, TimeoutError))
    if len(argv) != 4 or argv[1] != "discover":
        print("usage: python -m v6gate.net.nvme_tcp discover ADDRESS PORT | rw ADDRESS PORT NQN SRC DST",
              file=sys.stderr)
        return 2
    return answer(lambda: discovery(argv[2], int(argv[3])), (OSError, NvmeError),
                  (NvmeError, ConnectionError, TimeoutError))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
