"""Capture files: what the audit accepts, how it reads one frame back for
Scapy, and how to build a large synthetic capture for throughput tests.

Formats: pcap (micro- or nanosecond, either byte order) and pcapng.
Anything else, an empty file or one cut in the middle of a packet is a
usage error with a one-line message (the CLI exits 2).
"""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

from ..errors import UsageError

PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"
PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6), b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9), b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}
GZIP = b"\x1f\x8b"
EPB, SPB, OPB = 6, 3, 2
#: the largest record a reader takes (64 MiB; larger is a damaged length field, not a frame): the Python
#: readers' and, given as -D, the C engine's (engine/walk.c)
MAX_RECORD = 0x4000000
LINKTYPE_ETHERNET = 1


def capture_format(path: Path) -> str:
    """'pcap', 'pcapng' or 'gzip' (a compressed capture tshark can read);
    a one-line UsageError otherwise."""
    try:
        with open(path, "rb") as f:
            head = f.read(28)
    except FileNotFoundError:
        raise UsageError(f"{path}: file not found; pass a pcap or pcapng capture") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory; pass a pcap or pcapng capture file") from None
    except PermissionError:
        raise UsageError(f"{path}: cannot read it (permission denied)") from None
    if not head:
        raise UsageError(f"{path}: empty file, not a capture; pass a pcap or pcapng file")
    if head[:4] == PCAPNG_SHB:
        if len(head) < 28:
            raise UsageError(f"{path}: truncated pcapng file ({len(head)} bytes, shorter than its section header)")
        return "pcapng"
    if head[:4] in PCAP_MAGICS:
        if len(head) < 24:
            raise UsageError(f"{path}: truncated pcap file ({len(head)} bytes, shorter than its 24-byte header)")
        return "pcap"
    if head[:2] == GZIP:
        return "gzip"
    raise UsageError(f"{path}: not a pcap or pcapng capture (it starts with {head[:4].hex(' ')}); "
                     "pass a file written by tcpdump, dumpcap, tshark or Wireshark")


def read_frame_at(path: Path, offset: int, fmt: str) -> bytes | None:
    """The link-layer bytes of the frame whose record starts at ``offset``
    (tshark's frame.file_off), for a second look with Scapy."""
    if fmt == "gzip" or offset is None or offset < 0:
        return None
    with open(path, "rb") as f:
        if fmt == "pcap":
            endian = PCAP_MAGICS[f.read(4)][0]
            f.seek(offset)
            head = f.read(16)
            if len(head) < 16:
                return None
            incl = struct.unpack(endian + "IIII", head)[2]
            return f.read(incl)
        f.seek(0)
        shb = f.read(12)
        endian = "<" if shb[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
        f.seek(offset)
        head = f.read(8)
        if len(head) < 8:
            return None
        btype, blen = struct.unpack(endian + "II", head)
        body = f.read(blen - 8)
        if btype in (EPB, OPB):  # both keep the captured length at body offset 12, the data at 20
            caplen = struct.unpack(endian + "I", body[12:16])[0]
            return body[20:20 + caplen]
        if btype == SPB:
            return body[4:blen - 12]
    return None


class PcapWriter:
    """A minimal classic-pcap writer (Ethernet, microseconds), fast enough
    to write millions of frames."""

    def __init__(self, path: Path, snaplen: int = 65535):
        self.f = open(path, "wb")
        self.f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, LINKTYPE_ETHERNET))
        self.count = 0

    def write(self, ts: float, frame: bytes) -> None:
        sec = int(ts)
        self.f.write(struct.pack("<IIII", sec, int((ts - sec) * 1e6), len(frame), len(frame)))
        self.f.write(frame)
        self.count += 1

    def close(self) -> None:
        self.f.close()


def seed_frames(paths) -> list[tuple[float, bytes]]:
    """(relative time, frame) of every frame in the given captures, in order."""
    from scapy.utils import RawPcapReader

    out = []
    for p in paths:
        opener = gzip.open if str(p).endswith(".gz") else open
        with opener(p, "rb") as fh:
            reader = RawPcapReader(fh)
            t0 = None
            for data, meta in reader:
                ts = _meta_time(meta)
                t0 = ts if t0 is None else t0
                out.append((ts - t0, bytes(data)))
    return out


def _meta_time(meta) -> float:
    if hasattr(meta, "sec"):
        return meta.sec + meta.usec / 1e6
    tshigh, tslow, res = getattr(meta, "tshigh", 0), getattr(meta, "tslow", 0), getattr(meta, "tsresol", 1000000)
    return ((tshigh << 32) | tslow) / res


def synthesize(out: Path, seeds: list[tuple[float, bytes]], packets: int, hosts: int = 100,
               start: float = 1_700_000_000.0) -> int:
    """Write ``packets`` frames cycling through ``seeds``; every cycle gives
    the frames another set of source/destination MACs (their last two
    octets), so the capture holds ``hosts`` distinct stations and the
    audit's per-host state is exercised.  Returns the frames written."""
    if not seeds:
        raise UsageError("no seed frames to synthesize a capture from")
    w = PcapWriter(out)
    span = max(t for t, _ in seeds) + 0.001
    n, cycle = 0, 0
    try:
        while n < packets:
            tag = struct.pack("!H", cycle % max(1, hosts))
            base = start + cycle * span
            for rel, frame in seeds:
                if n >= packets:
                    break
                f = bytearray(frame)
                if len(f) >= 14:
                    if not f[0] & 1:  # a unicast destination: relabel it like its source
                        f[3:5] = tag
                    f[9:11] = tag
                w.write(base + rel, bytes(f))
                n += 1
            cycle += 1
    finally:
        w.close()
    return n


def _payload_frame(src_mac: bytes, dst_mac: bytes, family: int, proto: int, sport: int, dport: int,
                   payload: bytes, seq: int = 1) -> bytes:
    """An Ethernet frame of TCP (ACK/PSH, no SYN) or UDP payload with
    correct checksums, between two unicast stations (host ``src`` and a
    server), for the realistic mix."""
    tag = src_mac[4:6]
    if proto == 6:
        l4 = struct.pack("!HHIIBBHHH", sport, dport, seq, 1, 5 << 4, 0x18, 502, 0, 0) + payload
    else:
        l4 = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    if family == 6:
        src, dst = bytes.fromhex("20010db8000000010000000000") + b"\x02" + tag, bytes.fromhex("20010db8000000ff" + "00" * 7 + "80")
        pseudo = src + dst + struct.pack("!IxxxB", len(l4), proto)
    else:
        src, dst = bytes((10, 1, tag[0], tag[1])), bytes((192, 0, 2, 80))
        pseudo = src + dst + struct.pack("!xBH", proto, len(l4))
    ck = _inet_checksum(pseudo + l4)
    off = 16 if proto == 6 else 6
    l4 = l4[:off] + struct.pack("!H", ck) + l4[off + 2:]
    if family == 6:
        l3 = struct.pack("!IHBB", 6 << 28, len(l4), proto, 64) + src + dst
        etype = 0x86DD
    else:
        head = struct.pack("!BBHHHBBH", 0x45, 0, 20 + len(l4), 1, 0x4000, 64, proto, 0) + src + dst
        l3 = head[:10] + struct.pack("!H", _inet_checksum(head)) + head[12:]
        etype = 0x0800
    return dst_mac + src_mac + struct.pack("!H", etype) + l3 + l4


def _inet_checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF or 0xFFFF


def synthesize_mix(out: Path, seeds: list[tuple[float, bytes]], packets: int, hosts: int = 200,
                   control_percent: float = 3.0, start: float = 1_700_000_000.0) -> tuple[int, int]:
    """A capture with a realistic mix: mostly TCP and UDP payload (80 %
    IPv6, 20 % IPv4; 60 to 1,400 bytes) between ``hosts`` stations and
    their servers, and ``control_percent`` of control traffic (the
    lab-made seed frames: ARP, DHCPv4, RAs, NS/NA, MLD, DHCPv6, DNS,
    mDNS), their MACs relabelled like ``synthesize``'s.  Returns (frames,
    control frames) written."""
    if not seeds:
        raise UsageError("no seed frames to synthesize a capture from")
    import random

    rng = random.Random(8925)
    server = bytes.fromhex("02000000fe01")
    pool = []
    for i in range(max(1, hosts)):
        mac = b"\x02\x00\x00\x00" + struct.pack("!H", i)
        for k in range(4):
            family = 6 if rng.random() < 0.8 else 4
            proto = 6 if rng.random() < 0.7 else 17
            size = rng.choice((60, 120, 300, 600, 1400))
            pool.append(_payload_frame(mac, server, family, proto, 40000 + k, 443 if proto == 6 else 4433,
                                       bytes(rng.getrandbits(8) for _ in range(size)), seq=k + 1))
    every = max(1, round(100.0 / control_percent)) if control_percent > 0 else 0
    w = PcapWriter(out)
    n = ctl = si = cycle = 0
    t = start
    try:
        while n < packets:
            if every and n % every == 0:
                _, frame = seeds[si]
                f = bytearray(frame)
                tag = struct.pack("!H", cycle % max(1, hosts))
                if len(f) >= 14:
                    if not f[0] & 1:
                        f[3:5] = tag
                    f[9:11] = tag
                w.write(t, bytes(f))
                ctl += 1
                si += 1
                if si == len(seeds):
                    si, cycle = 0, cycle + 1
            else:
                w.write(t, pool[rng.randrange(len(pool))])
            t += 0.0001
            n += 1
    finally:
        w.close()
    return n, ctl
