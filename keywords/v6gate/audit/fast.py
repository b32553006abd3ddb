"""The audit's fast path: every frame of a capture into ``hosts.Audit``
without tshark and without a per-packet object for the common frames.

Most frames of a production capture are TCP or UDP payload between hosts
the audit already knows, from addresses it already recorded.  For such a
frame ``Audit.add`` only counts (frames, bytes, family, the IPv4 kind), so
this loop does exactly that from a few header fields read with
``struct.unpack_from``: the EtherType (one 802.1Q tag allowed), the IP
version, protocol, lengths and checksums, the ports, the TCP flags, the
source MAC and IP address.  Every other frame (ARP, DHCPv4, DHCPv6, DNS,
ND, RAs, ICMP, a SYN, extension headers, fragments, a bad checksum, a
truncated frame, the first frame of a host or of an address, anything
while a host is inside V6ONLY_WAIT) goes to the deep dissector
(``dissect.fields_of``, tshark's fields) and to ``Audit.add`` itself.

``known`` remembers, per host (raw MAC), the source addresses for which a
counted frame would change nothing else.  Those facts only grow (an
address once recorded stays recorded) except when the host restarts an
interface (a DAD probe of its link-local address starts a new episode,
``Host.episode_used`` is a new set): then they are forgotten.  What other
hosts' frames change in a host (an OFFER with option 108, a DNS answer) is
read live (V6ONLY_WAIT) or matters only to frames that always go deep (a
SYN).  So the shortcut holds exactly when ``Audit.add`` would only have
counted: the findings are identical to the deep path's (tested on every
fixture, edge-case and synthetic capture, and against tshark).

``read_into(..., jobs=2)`` reads the capture's chunks on two processes
(``parallel.py``) with the same ``scan`` loop and the same result.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
import time

from ..net import v6only as V
from . import dissect
from .hosts import MAX_ADDRESSES, Audit
from .pcapread import Reader
from .tshark import F

_HH = struct.Struct("!HH")
#: ports whose payload an audit field reads (DNS, mDNS, LLMNR, DHCPv4, DHCPv6): always the deep path
CONTROL_PORTS = frozenset((53, 5353, 5355, 67, 68, 4011, 546, 547))
ZERO16 = bytes(16)


class Progress:
    """frames, MB, rate and ETA on one line of a terminal's stderr; silent
    when stderr is not a terminal (CI, a pipe, a file)."""

    def __init__(self, total_bytes: int, stream=None, force: bool | None = None, every: float = 0.5):
        self.stream = stream or sys.stderr
        self.every = every
        self.on = force if force is not None else bool(getattr(self.stream, "isatty", lambda: False)())
        self.total = max(1, total_bytes)
        self.t0 = self.last = time.monotonic()
        self.shown = False

    def update(self, frames: int, done_bytes: int, final: bool = False) -> None:
        if not self.on:
            return
        now = time.monotonic()
        if not final and now - self.last < self.every:
            return
        self.last = now
        el = max(now - self.t0, 1e-6)
        rate = frames / el
        eta = (self.total - done_bytes) / (done_bytes / el) if done_bytes else 0
        pct = min(100.0, 100.0 * done_bytes / self.total)
        self.stream.write(f"\rv6gate audit: {frames:,} frames, {done_bytes / 1e6:,.0f}/{self.total / 1e6:,.0f} MB "
                          f"({pct:.0f}%), {rate:,.0f} frames/s, ETA {eta:,.0f} s   ")
        if final:
            self.stream.write("\n")
        self.stream.flush()
        self.shown = True

    def finish(self, frames: int, done_bytes: int) -> None:
        """The last line, ended, once a line was shown or the read outlasted
        one interval; a read quicker than that leaves the terminal alone."""
        if self.shown or time.monotonic() - self.t0 >= self.every:
            self.update(frames, done_bytes, final=True)


def _ok(pseudo: bytes, seg: bytes) -> bool:
    """The Internet checksum over pseudo header + segment verifies: their
    16-bit words sum to 0xFFFF in ones' complement, i.e. the big-endian
    number they form is 0 modulo 0xFFFF (2**16 = 1 mod 0xFFFF); one
    modulo over both, the segment's odd byte padded by a shift."""
    n = int.from_bytes(seg, "big")
    if len(seg) & 1:
        n <<= 8
    return (int.from_bytes(pseudo, "big") + n) % 0xFFFF == 0


#: ICMPv6 types Audit.add only counts from a known address: echo, MLD, NS (not DAD: the source is
#: known, so not ::), NA, Redirect (ND ones with hop limit 255); RS and RA change host state, errors quote packets
ICMP6_COUNTED = frozenset((128, 129, 130, 131, 132, 143, 135, 136, 137))
ND_TYPES = frozenset((133, 134, 135, 136, 137))


def _icmp6_counted(fr: bytes, o: int, end: int, hlim: int, addrs: bytes) -> bool:
    t = fr[o]
    if t not in ICMP6_COUNTED or (t in ND_TYPES and hlim != 255):
        return False
    return _ok(addrs + (end - o).to_bytes(4, "big") + b"\0\0\0\x3a", fr[o:end])


def option_108_decoder(audit: Audit) -> dict:
    """Make ``audit`` decode option 108 from the frame being added
    (``state["frame"]``); ``state["decoded"]`` counts the decodes; while
    ``state["replay"]`` (a parallel audit merging a worker's frames), the
    value the worker decoded, ``state["opt"]``, is taken instead."""
    state = {"frame": b"", "decoded": 0, "opt": None, "replay": False}

    def option_108(_offset):
        if state["replay"]:
            return state["opt"]
        state["decoded"] += 1
        state["opt"] = value = dissect.option_108(state["frame"])
        return value

    audit.option_108 = option_108
    return state


def learner(hosts: dict, known: dict, holder, carried):
    """``learn(src, fields)``, after a deep frame from raw MAC ``src``: record
    in ``known[src]`` = [``holder(host)``, {raw IPv6 source}, {raw IPv4
    source}, the host's episode set, ``carried``] the source addresses for
    which a counted frame of the host would change nothing but counters."""
    esrc, v6_src, ip_src = F["esrc"], F["v6_src"], F["ip_src"]

    def learn(src: bytes, f: list) -> None:
        h = hosts.get(f[esrc])
        if h is None:
            return
        entry = known.get(src)
        if entry is None or (entry[3] is not h.episode_used and entry[3] is not None):  # a DAD probe of a
            entry = known[src] = [holder(h), set(), set(), h.episode_used, carried()]  # link-local: a new episode
        else:  # (None: a parallel worker's knowledge of the host, from before this chunk's Audit)
            entry[0], entry[3] = holder(h), h.episode_used
        v6 = f[v6_src].split(",", 1)[0]
        if v6 and v6 != "::" and (v6 in h.ipv6_addrs or len(h.ipv6_addrs) >= MAX_ADDRESSES) and (
                h.episode is None or v6 in h.episode_used or len(h.episode_used) >= MAX_ADDRESSES):
            entry[1].add(socket.inet_pton(socket.AF_INET6, v6))
        v4 = f[ip_src].split(",", 1)[0]
        if v4 and (v4 == "0.0.0.0" or v4 in h.ipv4_addrs or len(h.ipv4_addrs) >= MAX_ADDRESSES):
            entry[2].add(socket.inet_aton(v4))

    return learn


NOTHING = frozenset()


def read_into(audit: Audit, path, *, deep_only: bool = False, progress: Progress | None = None, jobs: int = 1,
              chunk_bytes: int | None = None) -> dict:
    """Feed every frame of ``path`` to ``audit``; returns counters
    (packets, deep-dissected frames, option-108 decodes, bytes, workers).
    ``jobs`` > 1: on that many processes over the capture's chunks
    (``parallel.py``; the same result), except for a gzip'ed capture."""
    if jobs > 1 and not deep_only and Reader(path).fmt != "gzip":
        from .parallel import read_parallel

        return read_parallel(audit, path, jobs=jobs, chunk_bytes=chunk_bytes, progress=progress)
    reader = Reader(path)
    known: dict[bytes, list] = {}
    state = option_108_decoder(audit)
    learn = learner(audit.hosts, known, lambda h: h, lambda: NOTHING)
    _, deep, shortcut = scan(audit, reader, known, learn, state, deep_only=deep_only, progress=progress)
    audit.frames += shortcut  # Audit.add counts the deep ones itself
    if progress is not None:
        progress.finish(reader.frames, reader.bytes_read)
    return {"packets": reader.frames, "deep_frames": deep, "decoded_108": state["decoded"], "bytes": reader.size,
            "workers": 1, "pid": os.getpid()}


def scan(audit: Audit, reader: Reader, known: dict, learn, state: dict, *, promote=None, sink=None,
         deep_only: bool = False, progress: Progress | None = None) -> tuple[int, int, int]:
    """The frames ``reader`` hands out into ``audit``: counted from their
    headers when ``known`` says that is all ``Audit.add`` would do (into
    ``known[mac][0]``: the Host, or a parallel worker's tally), else
    dissected, added, given to ``sink(frame number, offset, fields)`` and
    ``learn``ed from.  ``promote(entry, raw IPv6 source, frame number,
    ns)``: an address of ``entry[4]`` (a parallel worker's knowledge from
    an earlier chunk) is used.  Returns (frames, deep, counted)."""
    fields_of, add = dissect.fields_of, audit.add
    ipv4_kind = V.IPV4
    k = deep = shortcut = 0
    check_every = (1 << 16) - 1
    fast, from_bytes, unpack_ports, control_ports = not deep_only, int.from_bytes, _HH.unpack_from, CONTROL_PORTS
    for off, ns, orig, lt, fr in reader:
        k += 1
        if progress is not None and not k & check_every:
            progress.update(reader.frames, reader.bytes_read)
        if fast and lt == 1 and len(fr) >= 54 and not fr[6] & 1:
            entry = known.get(fr[6:12])
            if entry is not None:
                et = (fr[12] << 8) | fr[13]
                l3 = 14
                if et == 0x8100:
                    et = (fr[16] << 8) | fr[17]
                    l3 = 18
                h = entry[0]
                flen = len(fr)
                counted = None  # the Seen to count an IPv4 frame in, or True for an IPv6 frame
                # the checksums inline (the hot loop: no call per frame): the Internet checksum verifies
                # when pseudo header + segment, read as one big-endian number, is 0 modulo 0xFFFF
                # (2**16 = 1 mod 0xFFFF); the pseudo header's words are the addresses (just before the
                # segment when there is no extension header), the length and the protocol
                if et == 0x86DD and fr[l3] >> 4 == 6:
                    nh = fr[l3 + 6]
                    o = l3 + 40
                    end = o + ((fr[l3 + 4] << 8) | fr[l3 + 5])
                    while (nh == 0 or nh == 60) and o + 8 <= end:  # hop-by-hop, destination options
                        nh, o = fr[o], o + (fr[o + 1] + 1) * 8
                    if o + 8 <= end <= flen and (fr[l3 + 8:l3 + 24] in entry[1] or (
                            entry[4] and fr[l3 + 8:l3 + 24] in entry[4] and promote(entry, fr[l3 + 8:l3 + 24],
                                                                                    reader.frames, ns))):
                        if nh == 6 or nh == 17:
                            sport, dport = unpack_ports(fr, o)
                            seg_end = 0
                            if sport in control_ports or dport in control_ports:
                                pass
                            elif nh == 17:
                                length = (fr[o + 4] << 8) | fr[o + 5]  # tshark's pseudo header: the UDP length
                                if length >= 8 and o + length <= flen:
                                    if fr[o + 6] or fr[o + 7]:
                                        seg_end = o + length
                                    else:  # no checksum: "not present", not "bad"
                                        counted = True
                            elif end >= o + 20 and fr[o + 13] & 0x12 != 0x02:  # not a connection attempt
                                seg_end, length = end, end - o
                            if seg_end:
                                if o == l3 + 40:
                                    v = from_bytes(fr[l3 + 8:seg_end], "big")
                                    if (seg_end - o) & 1:
                                        v <<= 8
                                else:
                                    v = from_bytes(fr[o:seg_end], "big")
                                    if (seg_end - o) & 1:
                                        v <<= 8
                                    v += from_bytes(fr[l3 + 8:l3 + 40], "big")
                                if not (v + length + nh) % 0xFFFF:
                                    counted = True
                        elif nh == 58 and _icmp6_counted(fr, o, end, fr[l3 + 7], fr[l3 + 8:l3 + 40]):
                            counted = True
                elif et == 0x0800 and fr[l3] == 0x45:
                    proto = fr[l3 + 9]
                    o = l3 + 20
                    end = l3 + ((fr[l3 + 2] << 8) | fr[l3 + 3])
                    if ((proto == 6 or proto == 17) and o + 8 <= end <= flen and not fr[l3 + 6] & 0x3F
                            and not fr[l3 + 7] and fr[l3 + 12:l3 + 16] in entry[2]):
                        t = ns / 1_000_000_000
                        quiet = h.offers_108 and h.offers_108[0][0] < t <= h.quiet_until
                        seen = h.kinds.get(ipv4_kind)
                        if ((not quiet or h.after_offer_108.count) and seen is not None and seen.count
                                and not from_bytes(fr[l3:o], "big") % 0xFFFF):
                            sport, dport = unpack_ports(fr, o)
                            seg_end = 0
                            if sport in control_ports or dport in control_ports:
                                pass
                            elif proto == 17:
                                length = (fr[o + 4] << 8) | fr[o + 5]
                                if length >= 8 and o + length <= flen:
                                    if fr[o + 6] or fr[o + 7]:
                                        seg_end = o + length
                                    else:
                                        counted = seen
                            elif end >= o + 20 and fr[o + 13] & 0x12 != 0x02:
                                seg_end, length = end, end - o
                            if seg_end:
                                v = from_bytes(fr[l3 + 12:seg_end], "big")  # the addresses, then the segment
                                if (seg_end - o) & 1:
                                    v <<= 8
                                if not (v + length + proto) % 0xFFFF:
                                    counted = seen
                if counted is not None:  # what Audit.add does with such a frame: count it, nothing else
                    t = ns / 1_000_000_000
                    shortcut += 1
                    audit.t_last = t
                    h.frames += 1
                    h.bytes += orig
                    h.last_time = t
                    if counted is True:
                        h.v6_frames += 1
                        h.v6_bytes += orig
                    else:
                        h.v4_frames += 1
                        counted.count += 1
                        if quiet:  # within V6ONLY_WAIT, already reported: counted as Audit.add does
                            h.after_offer_108.count += 1
                    continue
        # the deep path: tshark's fields from the dissector, Audit.add as the tshark path runs it
        deep += 1
        state["frame"] = fr
        f = fields_of(fr, lt, orig, ns)
        add(reader.frames, off, f)
        if sink is not None:
            sink(reader.frames, off, f)
        if deep_only or lt != 1 or len(fr) < 14:
            continue
        learn(fr[6:12], f)
    return k, deep, shortcut
