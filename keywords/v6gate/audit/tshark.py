"""Reading a capture with tshark, streaming, in bounded memory.

tshark keeps a record of every frame it has read (about 130 bytes each
with 4.0), so one tshark over a multi-GB capture grows without bound.  The
capture is therefore cut, as it is read, into chunks of ``chunk_frames``
frames, each fed to its own ``tshark -r -`` (the file's header blocks
first) and read back as one line of fields per frame; ``jobs`` chunks are
decoded in parallel and consumed in order.  Memory stays at a few chunks
whatever the capture's size, and the splitter knows every frame's number
and file offset (for a second look with Scapy).

A capture cut in the middle of a packet, or a block that is not what its
format says, is a UsageError (one line, exit 2).
"""

from __future__ import annotations

import gzip
import queue
import struct
import subprocess
import tempfile
import threading
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BenchError, UsageError
from ..util.proc import need
from .capture import EPB, MAX_RECORD, OPB, PCAP_MAGICS, PCAPNG_SHB, SPB, capture_format

#: (name, tshark field); multi-valued fields come aggregated with ','
FIELDS = (
    ("time", "frame.time_epoch"),
    ("len", "frame.len"),
    ("esrc", "eth.src"),
    ("edst", "eth.dst"),
    ("etype", "eth.type"),
    ("vlan_etype", "vlan.etype"),
    ("ip_src", "ip.src"),
    ("ip_dst", "ip.dst"),
    ("ip_ck", "ip.checksum.status"),
    ("icmp_type", "icmp.type"),
    ("v6_src", "ipv6.src"),
    ("v6_dst", "ipv6.dst"),
    ("hlim", "ipv6.hlim"),
    ("arp_op", "arp.opcode"),
    ("arp_spa", "arp.src.proto_ipv4"),
    ("arp_tpa", "arp.dst.proto_ipv4"),
    ("sport", "udp.srcport"),
    ("dport", "udp.dstport"),
    ("udp_ck", "udp.checksum.status"),
    ("tcp_dport", "tcp.dstport"),
    ("tcp_syn", "tcp.flags.syn"),
    ("tcp_ack", "tcp.flags.ack"),
    ("tcp_ck", "tcp.checksum.status"),
    ("dhcp_type", "dhcp.option.dhcp"),
    ("dhcp_prl", "dhcp.option.request_list_item"),
    ("dhcp_opts", "dhcp.option.type"),
    ("dhcp_chaddr", "dhcp.hw.mac_addr"),
    ("dhcp_yiaddr", "dhcp.ip.your"),
    ("dns_resp", "dns.flags.response"),
    ("dns_qname", "dns.qry.name"),
    ("dns_qtype", "dns.qry.type"),
    ("dns_a", "dns.a"),
    ("dns_aaaa", "dns.aaaa"),
    ("icmp6_type", "icmpv6.type"),
    ("icmp6_ck", "icmpv6.checksum.status"),
    ("ns_target", "icmpv6.nd.ns.target_address"),
    ("ra_lifetime", "icmpv6.nd.ra.router_lifetime"),
    ("ra_flag_o", "icmpv6.nd.ra.flag.o"),
    ("opt_types", "icmpv6.opt.type"),
    ("rdnss", "icmpv6.opt.rdnss"),
    ("pref64", "icmpv6.opt.pref64.prefix"),
    ("pref64_plc", "icmpv6.opt.pref64.plc"),
)
F = {name: i for i, (name, _) in enumerate(FIELDS)}

#: decode exactly what the audit reads, validate checksums, keep no per-stream state
PREFS = {
    "ip.check_checksum": "TRUE",
    "udp.check_checksum": "TRUE",
    "tcp.check_checksum": "TRUE",
    "ip.defragment": "FALSE",
    "ipv6.defragment": "FALSE",
    "tcp.desegment_tcp_streams": "FALSE",
    "tcp.analyze_sequence_numbers": "FALSE",
    "tcp.calculate_timestamps": "FALSE",
    "udp.calculate_timestamps": "FALSE",
}


def tshark_argv() -> list[str]:
    argv = [need("tshark"), "-n", "-r", "-", "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a",
            "-E", "aggregator=,", "-E", "quote=n"]
    for k, v in PREFS.items():
        argv += ["-o", f"{k}:{v}"]
    for _, f in FIELDS:
        argv += ["-e", f]
    return argv


@dataclass
class Chunk:
    index: int
    first_frame: int  # global number (1-based) of its first frame
    data: bytes  # a self-contained capture: header blocks + frames
    offsets: array  # file offset of each frame's record


@dataclass
class ReadStats:
    packets: int = 0
    bytes_read: int = 0
    chunks: int = 0
    tshark_max_rss_kib: int = 0
    tshark_s: float = 0.0
    notes: list = field(default_factory=list)


class Splitter:
    """Cut a pcap/pcapng (optionally gzip'ed) capture into self-contained chunks."""

    def __init__(self, path: Path, chunk_frames: int):
        self.path = Path(path)
        self.fmt = capture_format(self.path)
        self.chunk_frames = max(1, chunk_frames)
        self.frames = 0

    def _open(self):
        if self.fmt == "gzip":
            return gzip.open(self.path, "rb")
        return open(self.path, "rb", buffering=1 << 20)

    def _truncated(self, what: str, off: int):
        return UsageError(f"{self.path}: truncated capture: it ends in the middle of {what} at byte {off}, after "
                          f"{self.frames} complete packets (copied while still being written?); audit a complete "
                          "capture")

    def chunks(self) -> Iterator[Chunk]:
        with self._open() as f:
            try:
                if self.fmt == "gzip":
                    magic = f.read(4)
                    f = _Prepend(magic, f)
                    self.inner = "pcapng" if magic == PCAPNG_SHB else "pcap" if magic in PCAP_MAGICS else None
                    if self.inner is None:
                        raise UsageError(f"{self.path}: a gzip file that holds no pcap or pcapng capture")
                else:
                    self.inner = self.fmt
                yield from (self._pcap(f) if self.inner == "pcap" else self._pcapng(f))
            except (EOFError, gzip.BadGzipFile, OSError) as exc:
                raise UsageError(f"{self.path}: cannot read the compressed capture ({exc})") from None

    def _emit(self, index, data: bytearray, offsets: array) -> Chunk:
        return Chunk(index, self.frames - len(offsets) + 1, bytes(data), offsets)

    def _pcap(self, f) -> Iterator[Chunk]:
        header = f.read(24)
        if len(header) < 24:
            raise self._truncated("the pcap file header", 0)
        endian = PCAP_MAGICS[header[:4]][0]
        linktype = struct.unpack(endian + "I", header[20:24])[0] & 0xFFFF
        if linktype not in (1, 113, 276):  # Ethernet; Linux cooked (SLL, SLL2) is refused later with its own reason
            raise UsageError(f"{self.path}: link type {linktype} is not Ethernet; audit a capture taken on the "
                             "link's Ethernet interface")
        off, index = 24, 0
        data, offsets = bytearray(header), array("q")
        rec = struct.Struct(endian + "IIII")
        while True:
            head = f.read(16)
            if not head:
                break
            if len(head) < 16:
                raise self._truncated(f"the header of packet {self.frames + 1}", off)
            incl = rec.unpack(head)[2]
            if incl > MAX_RECORD:
                raise UsageError(f"{self.path}: corrupt pcap record at byte {off} (a {incl}-byte packet); the file "
                                 "is damaged")
            body = f.read(incl)
            if len(body) < incl:
                raise self._truncated(f"packet {self.frames + 1}", off)
            data += head
            data += body
            offsets.append(off)
            off += 16 + incl
            self.frames += 1
            if len(offsets) >= self.chunk_frames:
                yield self._emit(index, data, offsets)
                index, data, offsets = index + 1, bytearray(header), array("q")
        if offsets:
            yield self._emit(index, data, offsets)

    def _pcapng(self, f) -> Iterator[Chunk]:
        off, index = 0, 0
        endian = "<"
        header_blocks: list[bytes] = []
        data, offsets = bytearray(), array("q")
        while True:
            head = f.read(8)
            if not head:
                break
            if len(head) < 8:
                raise self._truncated("a block header", off)
            if head[:4] == PCAPNG_SHB:
                bom = f.read(4)
                if len(bom) < 4:
                    raise self._truncated("a section header", off)
                endian = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">"
                blen = struct.unpack(endian + "I", head[4:8])[0]
                rest = f.read(blen - 12) if blen >= 12 else b""
                if blen < 28 or len(rest) < blen - 12:
                    raise self._truncated("a section header", off)
                if offsets:  # a new section: finish the chunk of the previous one
                    yield self._emit(index, data, offsets)
                    index, offsets = index + 1, array("q")
                header_blocks = [head + bom + rest]
                data = bytearray(header_blocks[0])
                off += blen
                continue
            btype, blen = struct.unpack(endian + "II", head)
            if blen < 12 or blen % 4:
                raise UsageError(f"{self.path}: corrupt pcapng block at byte {off} (length {blen}); the file is damaged")
            body = f.read(blen - 8)
            if len(body) < blen - 8:
                raise self._truncated(f"packet {self.frames + 1}" if btype in (EPB, SPB, OPB) else "a block", off)
            if btype in (EPB, SPB, OPB):
                data += head
                data += body
                offsets.append(off)
                self.frames += 1
                if len(offsets) >= self.chunk_frames:
                    yield self._emit(index, data, offsets)
                    index, data, offsets = index + 1, bytearray(b"".join(header_blocks)), array("q")
            elif btype == 1:  # interface description: this chunk and every later one need it
                header_blocks.append(head + body)
                data += head
                data += body
            off += blen
        if offsets:
            yield self._emit(index, data, offsets)


class _Prepend:
    """A file object whose first bytes were already read (format sniffing)."""

    def __init__(self, first: bytes, f):
        self.buf, self.f = first, f

    def read(self, n: int) -> bytes:
        if self.buf:
            out, self.buf = self.buf[:n], self.buf[n:]
            if len(out) < n:
                out += self.f.read(n - len(out))
            return out
        return self.f.read(n)


def read_fields(path: Path, *, chunk_frames: int = 100_000, jobs: int = 2,
                stats: ReadStats | None = None) -> Iterator[tuple[int, int, list[str]]]:
    """(frame number, file offset, fields) of every frame, in capture order."""
    import time

    stats = stats if stats is not None else ReadStats()
    splitter = Splitter(path, chunk_frames)
    argv = tshark_argv()
    todo: queue.Queue = queue.Queue(maxsize=max(1, jobs))
    done: dict[int, tuple[Chunk, object]] = {}
    cond = threading.Condition()
    state = {"chunks": None, "error": None}

    def produce():
        n = 0
        try:
            for chunk in splitter.chunks():
                todo.put(chunk)
                n += 1
        except Exception as exc:  # reported in order, where the reader stopped
            state["error"] = exc
        finally:
            with cond:
                state["chunks"] = n
                cond.notify_all()
            for _ in range(jobs):
                todo.put(None)

    def work():
        while True:
            chunk = todo.get()
            if chunk is None:
                return
            t0 = time.monotonic()
            result = _decode_chunk(argv, chunk, stats)
            with cond:
                stats.tshark_s += time.monotonic() - t0
                done[chunk.index] = (chunk, result)
                cond.notify_all()

    threads = [threading.Thread(target=produce, daemon=True)]
    threads += [threading.Thread(target=work, daemon=True) for _ in range(max(1, jobs))]
    for th in threads:
        th.start()
    index = 0
    while True:
        with cond:
            while index not in done and (state["chunks"] is None or index < state["chunks"]):
                cond.wait(0.5)
            if index not in done:
                break
            chunk, result = done.pop(index)
        if isinstance(result, Exception):
            raise result
        stats.chunks += 1
        out, err = result
        lines = 0
        try:
            for raw in out:
                if lines >= len(chunk.offsets):
                    break
                fields = raw.rstrip(b"\n").decode(errors="replace").split("\t")
                if len(fields) < len(FIELDS):
                    fields += [""] * (len(FIELDS) - len(fields))
                stats.packets += 1
                yield chunk.first_frame + lines, chunk.offsets[lines], fields
                lines += 1
            if lines != len(chunk.offsets):
                err.seek(0)
                msg = [ln for ln in err.read().decode(errors="replace").splitlines() if "Running as user" not in ln]
                raise BenchError(f"tshark decoded {lines} of the {len(chunk.offsets)} packets from packet "
                                 f"{chunk.first_frame} on: {(msg or ['no error message'])[-1]}")
        finally:
            out.close()
            err.close()
        index += 1
    for th in threads:
        th.join(5)
    if state["error"] is not None:
        raise state["error"]
    stats.bytes_read = Path(path).stat().st_size


def _peak_rss_kib(pid: int) -> int:
    """VmHWM of a running process: its peak resident set since its exec."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _decode_chunk(argv: list[str], chunk: Chunk, stats: ReadStats) -> tuple | Exception:
    """One tshark over one chunk.  Its output (one line per frame) goes to
    a temporary file the reader streams when it reaches the chunk, so no
    chunk's decoded lines are ever held in memory; its peak memory goes to
    ``stats``."""
    out, err = tempfile.TemporaryFile(prefix="v6gate-audit-"), tempfile.TemporaryFile(prefix="v6gate-audit-")
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out, stderr=err)
    finished = threading.Event()

    def watch():
        while not finished.wait(0.05):
            peak = _peak_rss_kib(proc.pid)
            if peak > stats.tshark_max_rss_kib:
                stats.tshark_max_rss_kib = peak

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        try:
            proc.stdin.write(chunk.data)
            proc.stdin.close()
        except BrokenPipeError:
            pass  # tshark stopped reading: its error is in err
        chunk.data = b""
        proc.wait(timeout=3600)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        out.close()
        err.close()
        return BenchError(f"tshark took more than an hour on packets {chunk.first_frame}..")
    finally:
        finished.set()
        watcher.join(1)
    out.seek(0)
    return out, err
