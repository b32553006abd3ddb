"""A small streaming reader of pcap and pcapng, for the audit's fast path.

Why our own and not a package: the audit needs, per frame, only the bytes,
the original length, the link type and the time, at a few hundred thousand
frames a second in bounded memory.  Measured against dpkt 1.9.8 on a
100,000-frame capture (CPU time): this reader 0.9-1.1 M frames/s, dpkt's
pcap.Reader 0.6 M frames/s, dpkt with its Ethernet objects 0.11 M frames/s;
dpkt's pcapng reader takes one link type and time resolution for all
interfaces, python-pcapng builds an object per block and per option.  This reader
walks big buffers with ``struct.unpack_from`` and hands out
(offset, time, original length, link type, frame bytes) tuples.

Formats: pcap in both byte orders with micro- or nanosecond timestamps;
pcapng with any number of sections (each with its own byte order) and
interfaces (each with its link type, if_tsresol and if_tsoffset), Enhanced,
Simple and obsolete Packet blocks; other block types are skipped.  gzip'ed
captures are read through ``gzip``.  With ``engine`` (``core.Engine``) the
C engine judges the records wholly inside the buffer before the reader
looks at the next one itself.  A capture that ends inside a record or
holds an impossible length is a one-line UsageError (exit 2), raised where
the damage is: the frames before it have been handed out already.
"""

from __future__ import annotations

import ctypes
import gzip
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

from ..errors import UsageError
from .capture import EPB, MAX_RECORD, OPB, PCAP_MAGICS, PCAPNG_SHB, SPB, capture_format

READ = 4 << 20  # bytes per read: big enough that the per-read cost vanishes
ENGINE_AHEAD = 1 << 18  # bytes kept ahead in the buffer for the C engine (larger records: the reader's)
IDB = 1
BYTE_ORDER_MAGIC = 0x1A2B3C4D
_U32 = {"<": struct.Struct("<I"), ">": struct.Struct(">I")}


class _Buffer:
    """A window over a file, refilled in big pieces into one reused
    buffer (``readinto``: no new object, no fresh pages per read).  ``buf``
    is a read-only view of the bytes held, valid until the next ``need``:
    whatever outlives that is copied (the frames handed out are bytes)."""

    __slots__ = ("base", "buf", "eof", "f", "pos", "store")

    def __init__(self, f):
        self.f, self.buf, self.pos, self.base, self.eof = f, b"", 0, 0, False
        self.store: bytearray | None = None

    def need(self, n: int) -> bool:
        """Make ``n`` bytes available at ``pos``; False at the end of the file."""
        if len(self.buf) - self.pos >= n:
            return True
        if self.eof:
            return False
        rest = bytes(self.buf[self.pos:])  # (a copy: the store is written over)
        self.base += self.pos
        self.pos = 0
        have = len(rest)
        store = self.store
        if store is None or len(store) < max(READ, n):
            store = self.store = bytearray(max(READ, n))
        store[:have] = rest
        view = memoryview(store)
        while have < len(store):
            got = self.f.readinto(view[have:])
            if not got:
                self.eof = True
                break
            have += got
        self.buf = view[:have].toreadonly()
        return have >= n

    def address(self) -> int:
        """Where ``buf`` starts in memory (for the C engine, which reads it in place)."""
        return ctypes.addressof(ctypes.c_char.from_buffer(self.store))

    def left(self) -> int:
        return len(self.buf) - self.pos


class Reader:
    """Iterate (offset, ns, original length, link type, frame) over a capture.

    ``ns`` is the frame's time as integer nanoseconds since the epoch (as
    tshark's frame.time_epoch shows it); ``frame`` is a bytes object.
    ``frames`` counts the frames read (the number of the one just handed
    out); ``bytes_read`` where it got.  With ``engine`` (``core.Engine``)
    the C engine judges the records wholly inside the buffer first; only
    the rest are handed out here."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.fmt = capture_format(self.path)
        self.frames = 0
        self.size = self.path.stat().st_size
        self.engine = None

    @property
    def bytes_read(self) -> int:
        b = getattr(self, "_b", None)
        return b.base + b.pos if b is not None else 0

    def _truncated(self, what: str, off: int) -> UsageError:
        return UsageError(f"{self.path}: truncated capture: it ends in the middle of {what} at byte {off}, after "
                          f"{self.frames} complete packets (copied while still being written?); audit a complete "
                          "capture")

    def _corrupt(self, what: str, off: int) -> UsageError:
        return UsageError(f"{self.path}: corrupt {what} at byte {off}; the file is damaged (audit a complete, "
                          "undamaged capture)")

    def __iter__(self) -> Iterator[tuple[int, int, int, int, bytes]]:
        opener = gzip.open if self.fmt == "gzip" else open
        try:
            with opener(self.path, "rb") as f:
                self._b = b = _Buffer(f)
                if not b.need(4):
                    raise self._truncated("the file header", 0)
                magic = bytes(b.buf[:4])
                if magic in PCAP_MAGICS:
                    yield from self._pcap(b)
                elif magic == PCAPNG_SHB:
                    yield from self._pcapng(b)
                else:
                    raise UsageError(f"{self.path}: a gzip file that holds no pcap or pcapng capture")
        except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as exc:
            raise UsageError(f"{self.path}: cannot read the capture ({exc})") from None

    # -- classic pcap -----------------------------------------------------------------------------------
    def _pcap(self, b: _Buffer):
        if not b.need(24):
            raise self._truncated("the pcap file header", 0)
        endian, unit = PCAP_MAGICS[bytes(b.buf[:4])]
        nano = unit < 1e-6
        linktype = struct.unpack_from(endian + "I", b.buf, 20)[0] & 0x0FFFFFFF
        b.pos = 24
        rec = struct.Struct(endian + "IIII")
        unpack = rec.unpack_from
        engine, big = self.engine, endian == ">"
        while True:
            if engine is not None:
                if len(b.buf) - b.pos < ENGINE_AHEAD:
                    b.need(ENGINE_AHEAD)  # (the engine takes only records wholly in the buffer)
                engine.pcap(self, b, big, nano, linktype)
            if len(b.buf) - b.pos < 16 and not b.need(16):
                if b.left():
                    raise self._truncated(f"the header of packet {self.frames + 1}", b.base + b.pos)
                return
            pos = b.pos
            sec, frac, incl, orig = unpack(b.buf, pos)
            if incl > MAX_RECORD:
                raise UsageError(f"{self.path}: corrupt pcap record at byte {b.base + pos} (a {incl}-byte packet); "
                                 "the file is damaged")
            end = pos + 16 + incl
            if end > len(b.buf):
                if not b.need(16 + incl):
                    raise self._truncated(f"packet {self.frames + 1}", b.base + pos)
                pos = b.pos
                end = pos + 16 + incl
            b.pos = end
            self.frames += 1
            yield (b.base + pos, sec * 1_000_000_000 + (frac if nano else frac * 1000), orig, linktype,
                   bytes(b.buf[pos + 16:end]))

    # -- pcapng -----------------------------------------------------------------------------------------
    def _pcapng(self, b: _Buffer):
        endian = "<"
        ifaces: list[tuple[int, int, int]] = []  # (link type, units per second, offset s)
        hdr = {"<": struct.Struct("<II"), ">": struct.Struct(">II")}
        epb = {"<": struct.Struct("<IIIII"), ">": struct.Struct(">IIIII")}
        opb = {"<": struct.Struct("<HHIIII"), ">": struct.Struct(">HHIIII")}
        engine, table = self.engine, None  # table: the interfaces for the engine, made again when they change
        while True:
            if engine is not None and ifaces:
                if len(b.buf) - b.pos < ENGINE_AHEAD:
                    b.need(ENGINE_AHEAD)
                if table is None:
                    table = engine.interfaces(ifaces)
                engine.pcapng(self, b, endian == ">", table, len(ifaces))
            if not b.need(8):
                if b.left():
                    raise self._truncated("a block header", b.base + b.pos)
                return
            pos, off = b.pos, b.base + b.pos
            if b.buf[pos:pos + 4] == PCAPNG_SHB:
                if not b.need(12):
                    raise self._truncated("a section header", off)
                pos = b.pos
                bom = b.buf[pos + 8:pos + 12]
                if bom == b"\x4d\x3c\x2b\x1a":
                    endian = "<"
                elif bom == b"\x1a\x2b\x3c\x4d":
                    endian = ">"
                else:
                    raise self._corrupt("pcapng section header (unknown byte-order magic)", off)
                blen = _U32[endian].unpack_from(b.buf, pos + 4)[0]
                if blen < 28 or blen % 4 or blen > MAX_RECORD:
                    raise self._corrupt(f"pcapng section header (length {blen})", off)
                if not b.need(blen):
                    raise self._truncated("a section header", off)
                b.pos += blen
                ifaces, table = [], None
                continue
            btype, blen = hdr[endian].unpack_from(b.buf, pos)
            if blen < 12 or blen % 4 or blen > MAX_RECORD:
                raise UsageError(f"{self.path}: corrupt pcapng block at byte {off} (length {blen}); the file is "
                                 "damaged")
            if not b.need(blen):
                raise self._truncated(f"packet {self.frames + 1}" if btype in (EPB, SPB, OPB) else "a block", off)
            pos = b.pos
            buf = b.buf
            b.pos = pos + blen
            if btype in (EPB, OPB):
                if blen < 32:
                    raise self._corrupt(f"pcapng packet block (length {blen})", off)
                if btype == EPB:
                    iface, hi, lo, caplen, orig = epb[endian].unpack_from(buf, pos + 8)
                else:
                    iface, _, hi, lo, caplen, orig = opb[endian].unpack_from(buf, pos + 8)
                if iface >= len(ifaces):
                    raise self._corrupt(f"pcapng packet block (interface {iface} was never described)", off)
                if caplen > blen - 32:
                    raise self._corrupt(f"pcapng packet block (captured length {caplen} in a {blen}-byte block)",
                                        off)
                linktype, per_s, tsoff = ifaces[iface]
                units = (hi << 32) | lo
                ns = units * 1_000_000_000 // per_s if per_s != 1_000_000 else units * 1000
                self.frames += 1
                yield off, ns + tsoff * 1_000_000_000, orig, linktype, bytes(buf[pos + 28:pos + 28 + caplen])
            elif btype == SPB:
                if blen < 16:
                    raise self._corrupt(f"pcapng simple packet block (length {blen})", off)
                if not ifaces:
                    raise self._corrupt("pcapng simple packet block (no interface described)", off)
                orig = _U32[endian].unpack_from(buf, pos + 8)[0]
                linktype, snap = ifaces[0][0], blen - 16
                self.frames += 1
                yield off, 0, orig, linktype, bytes(buf[pos + 12:pos + 12 + min(orig, snap)])
            elif btype == IDB:
                if blen < 20:
                    raise self._corrupt(f"pcapng interface description (length {blen})", off)
                ifaces.append(self._idb(buf, pos, blen, endian))
                table = None

    def _idb(self, buf: bytes, pos: int, blen: int, endian: str) -> tuple[int, int, int]:
        linktype = struct.unpack_from(endian + "H", buf, pos + 8)[0]
        per_s, tsoff = 1_000_000, 0
        o, end = pos + 16, pos + blen - 4
        while o + 4 <= end:
            code, olen = struct.unpack_from(endian + "HH", buf, o)
            if code == 0:
                break
            val = buf[o + 4:o + 4 + olen]
            if code == 9 and olen >= 1:  # if_tsresol
                r = val[0]
                per_s = (1 << (r & 0x7F)) if r & 0x80 else 10 ** (r & 0x7F)
                if per_s <= 0 or (r & 0x7F) > 60:
                    per_s = 1_000_000
            elif code == 14 and olen >= 8:  # if_tsoffset, seconds
                tsoff = struct.unpack_from(endian + "q", val, 0)[0]
            o += 4 + olen + (-olen % 4)
        return linktype, per_s, tsoff
