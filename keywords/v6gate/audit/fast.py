"""The audit's fast path: every frame of a capture into ``hosts.Audit``
without tshark and without a per-packet object for the common frames.

Most frames of a production capture are TCP or UDP payload between hosts
the audit already knows, from addresses it already recorded.  For such a
frame ``Audit.add`` only counts (frames, bytes, family, the IPv4 kind), so
the counting kernel (``scankernel.c``, loaded by ``kernel.py``) does exactly
that inside the reader's buffer, from a few header fields: the EtherType
(one 802.1Q tag allowed), the IP version, protocol, lengths and checksums,
the ports, the TCP flags, the source MAC and IP address.  What it counted
goes to the host (``Known.drain``) before Python looks at the host again.
Every other frame (ARP, DHCPv4, DHCPv6, DNS, ND, RAs, ICMP errors, a SYN,
extension headers, fragments, a bad checksum, a truncated frame, the first
frame of a host or of an address, an IPv4 frame while a host is inside
V6ONLY_WAIT with nothing counted after the OFFER yet) goes to the deep
dissector (``dissect.fields_of``, tshark's fields) and to ``Audit.add``.

``Known`` remembers, per host (raw MAC), the source addresses for which a
counted frame would change nothing else (in the kernel's tables).  Those
facts only grow (an address once recorded stays recorded) except when the
host restarts an interface (a DAD probe of its link-local address starts a
new episode, ``Host.episode_used`` is a new set): then they are forgotten.
What other hosts' frames change in a host (an OFFER with option 108, a DNS
answer) is handed to the kernel again (V6ONLY_WAIT) or matters only to
frames that always go deep (a SYN).  So the shortcut holds exactly when
``Audit.add`` would only have counted: the findings are identical to the
deep path's (tested on every fixture, edge-case and synthetic capture, and
against tshark).

``read_into(..., jobs=2)`` reads the capture's chunks on two processes
(``parallel.py``) with the same ``scan`` loop and the same result.
"""

from __future__ import annotations

import ctypes
import os
import socket
import sys
import time

from ..errors import BenchError
from ..net import v6only as V
from . import dissect, kernel
from .hosts import MAX_ADDRESSES, Audit
from .kernel import (
    DEEP,
    MAIL_ADDR,
    MAIL_COUNTED,
    MAIL_DIRTY,
    MAIL_FRAMES,
    MAIL_LAST_NS,
    MAIL_NS,
    MAIL_POS,
    MAIL_SLOT,
    MAIL_WORDS,
    PROMOTE,
    ROW,
    SYNC,
)
from .pcapread import Reader
from .tshark import F

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
NS = 1_000_000_000


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



def _ns_after(t: float) -> int:
    """The first integer nanosecond ``n`` with ``n / 1e9 > t`` as Python
    divides (``fast.py`` has always compared the frame's ``ns / 1e9`` with
    the window's float bounds; the kernel compares integers)."""
    if t != t or t == float("inf"):
        return I64_MAX
    if t == float("-inf"):
        return I64_MIN
    n = int(t * NS)
    while n / NS > t:
        n -= 1
    while n / NS <= t:
        n += 1
    return max(I64_MIN, min(I64_MAX, n))


def _no_memory() -> BenchError:
    return BenchError("v6gate audit: the counting kernel ran out of memory (its host and address tables); "
                      "free memory or audit a smaller capture")


class Entry:
    """What the fast path knows of one host: where its counted frames go
    (``holder``: the Host, or a parallel worker's Tally), its kernel slot,
    and the episode (``Host.episode_used``) the knowledge is from (None: a
    parallel worker's, from before this chunk's Audit)."""

    __slots__ = ("episode", "facts", "holder", "mac", "pushed", "slot")

    def __init__(self, mac: bytes, holder, slot: int, episode):
        self.mac, self.holder, self.slot, self.episode = mac, holder, slot, episode
        # what the kernel was told (``learn`` tells it again only what changed): the host's facts (None:
        # not since the kernel's copy was invalidated) and the addresses added (as the fields show them)
        self.facts = None
        self.pushed: set[str] = set()


class Known:
    """The hosts the counting kernel counts frames of, and the facts it
    counts them on: per host (raw MAC) the source addresses for which a
    counted frame changes nothing but counters (``learn``, after each deep
    frame of the host), and for its IPv4 frames whether the host's IPv4 was
    seen and the V6ONLY_WAIT window (``sync``, asked by the kernel when it
    meets a host whose facts may have changed).  The reader hands the
    kernel its buffer (``pcap``, ``pcapng``) and takes the records it does
    not count.  ``holder(host)``: where a host's counted frames go;
    ``promote(entry, raw address, frame number, ns)``: a parallel worker's
    host uses an address carried from an earlier chunk (True: count it)."""

    def __init__(self, lib, hosts: dict, holder, promote=None, progress: Progress | None = None):
        self.lib, self.hosts, self.holder, self.promote, self.progress = lib, hosts, holder, promote, progress
        self.mail = (ctypes.c_int64 * MAIL_WORDS)()
        self.ctx = lib.v6s_new(self.mail)
        if not self.ctx:
            raise _no_memory()
        self.entries: dict[bytes, Entry] = {}
        self.slots: list[Entry | None] = []
        self.rows = (ctypes.c_int64 * (ROW * 1024))()
        self.counted = 0
        self.audit: Audit | None = None  # its t_last follows the last counted frame
        self.stop = -1  # the slot of the frame the kernel stopped at for the deep path (-2: unknown)
        self.stop_dirty = 0
        self.shown = 0  # frames when the progress line was last updated
        self.buf, self.walk = None, None  # what the kernel walks (v6s_setup)

    def close(self) -> None:
        if self.ctx:
            self.drain()
            self.lib.v6s_free(self.ctx)
            self.ctx = None

    # -- what it counted, into the hosts --------------------------------------------------------------
    def drain(self, slot: int = -1) -> None:
        """Add what the kernel counted to the holders (of one slot, or all)."""
        lib, rows, slots = self.lib, self.rows, self.slots
        while True:
            n = lib.v6s_drain(self.ctx, slot, rows, 1024)
            if not n:
                return
            flat = rows[:ROW * n]
            for i in range(0, ROW * n, ROW):
                s, frames, nbytes, last_ns, v6f, v6b, v4f, quiet_n, lo, hi = flat[i:i + ROW]
                h = slots[s].holder
                h.frames += frames
                h.bytes += nbytes
                h.last_time = last_ns / NS
                if v6f:
                    h.v6_frames += v6f
                    h.v6_bytes += v6b
                if v4f:
                    h.v4_frames += v4f
                    h.kinds[V.IPV4].more(v4f, lo / NS, hi / NS)
                    if quiet_n:  # within V6ONLY_WAIT, already reported: counted as Audit.add does
                        h.after_offer_108.count += quiet_n
            if slot >= 0 or n < 1024:
                return

    def before_deep(self, src: bytes) -> None:
        """The reader hands out a frame of ``src`` for the deep path: what
        the kernel counted of that host goes to it first."""
        if self.stop >= 0:
            if self.stop_dirty:
                self.drain(self.stop)
        elif self.stop == -2:
            e = self.entries.get(src)
            if e is not None:
                self.drain(e.slot)
        self.stop = -2

    def invalidate(self, mac: str | None = None) -> None:
        """A host's IPv4 facts may have changed (``mac``; None: any host's)."""
        if mac is None:
            self.lib.v6s_invalidate(self.ctx, -1)
            for e in self.entries.values():
                e.facts = None
            return
        try:
            e = self.entries.get(bytes.fromhex(mac.replace(":", "")))
        except ValueError:
            return
        if e is not None:
            self.lib.v6s_invalidate(self.ctx, e.slot)
            e.facts = None

    def _facts(self, holder) -> tuple:
        """The kernel's copy of a host's facts: its IPv4 seen, counted after
        an OFFER with option 108, its first four RS recorded (by the Audit
        this process feeds: a parallel worker's chunk's, a lower bound), and
        the V6ONLY_WAIT window in integer nanoseconds."""
        seen = holder.kinds.get(V.IPV4)
        host = self.hosts.get(holder.mac)
        lo, hi = I64_MAX, I64_MIN
        if holder.offers_108:
            lo, hi = _ns_after(holder.offers_108[0][0]), _ns_after(holder.quiet_until) - 1
        return (seen is not None and seen.count > 0, holder.after_offer_108.count > 0,
                host is not None and len(host.rs_times) >= 4, lo, hi)

    def sync(self, slot: int) -> None:
        self.drain(slot)
        e = self.slots[slot]
        e.facts = self._facts(e.holder)
        self.lib.v6s_learn(self.ctx, slot, None, None, *e.facts)

    # -- what it knows ---------------------------------------------------------------------------------
    def _new(self, src: bytes, holder, episode) -> Entry:
        old = self.entries.get(src)
        if old is not None:
            self.drain(old.slot)
        slot = self.lib.v6s_slot(self.ctx, src)
        if slot < 0:
            raise _no_memory()
        self.lib.v6s_activate(self.ctx, slot, 1)  # no address known (its earlier ones are void)
        e = self.entries[src] = Entry(src, holder, slot, episode)
        if slot >= len(self.slots):
            self.slots.extend([None] * (slot + 1 - len(self.slots)))
        self.slots[slot] = e
        return e

    def forget(self, src: bytes) -> None:
        """What was known of a host's addresses is void (it restarted)."""
        e = self.entries.pop(src, None)
        if e is not None:
            self.drain(e.slot)
            self.lib.v6s_activate(self.ctx, e.slot, 0)

    def learn(self, src: bytes, f: list) -> None:
        """After a deep frame from raw MAC ``src``: record the source
        addresses for which a counted frame of the host would change
        nothing but counters, and its IPv4 facts."""
        h = self.hosts.get(f[ESRC])
        if h is None:
            return
        e = self.entries.get(src)
        if e is None or (e.episode is not h.episode_used and e.episode is not None):  # a DAD probe of a
            e = self._new(src, self.holder(h), h.episode_used)  # link-local: a new episode
        else:  # (None: a parallel worker's knowledge of the host, from before this chunk's Audit)
            e.holder, e.episode = self.holder(h), h.episode_used
        v6 = f[V6_SRC].split(",", 1)[0]
        a6 = a4 = None
        pushed = e.pushed
        if v6 and v6 != "::" and v6 not in pushed and (
                v6 in h.ipv6_addrs or len(h.ipv6_addrs) >= MAX_ADDRESSES) and (
                h.episode is None or v6 in h.episode_used or len(h.episode_used) >= MAX_ADDRESSES):
            a6 = socket.inet_pton(socket.AF_INET6, v6)
        v4 = f[IP_SRC].split(",", 1)[0]
        if v4 and v4 not in pushed and (v4 == "0.0.0.0" or v4 in h.ipv4_addrs or len(h.ipv4_addrs) >= MAX_ADDRESSES):
            a4 = socket.inet_aton(v4) + ZERO12
        # (the host's counted frames were drained before its deep frame: none since)
        facts = self._facts(e.holder)
        if a6 is None and a4 is None and facts == e.facts:
            return  # (the kernel knows all of it)
        if self.lib.v6s_learn(self.ctx, e.slot, a6, a4, *facts):
            raise _no_memory()
        e.facts = facts
        if a6 is not None:
            pushed.add(v6)
        if a4 is not None:
            pushed.add(v4)

    def promoted(self, e: Entry, src: bytes) -> None:
        """An address carried from an earlier chunk is the host's known one now."""
        self.lib.v6s_addr(self.ctx, e.slot, -3, src)
        self.lib.v6s_addr(self.ctx, e.slot, 1, src)

    def new_chunk(self, holder_of) -> None:
        """A parallel worker's next chunk: each host's counted frames go to
        ``holder_of(mac)``; its IPv6 addresses are carried (used again, they
        are promoted); its episode is unknown."""
        self.drain()
        for e in self.entries.values():
            e.holder, e.episode = holder_of(e.holder.mac), None
            e.pushed.clear()  # (its IPv6 addresses are carried now; its IPv4 ones stay, told again: no matter)
        if self.lib.v6s_carry_all(self.ctx):
            raise _no_memory()
        self.invalidate()

    # -- the reader's buffer ---------------------------------------------------------------------------
    def interfaces(self, ifaces: list) -> ctypes.Array:
        """pcapng interfaces for the kernel: (link type, units per second, offset s); a resolution beyond
        64 bits is 0 (the reader reads that interface's frames itself)."""
        flat = []
        for lt, per_s, tsoff in ifaces:
            flat += [lt, per_s if 0 < per_s <= I64_MAX else 0, max(I64_MIN, min(I64_MAX, tsoff))]
        return (ctypes.c_int64 * max(1, len(flat)))(*flat)

    def pcap(self, reader, b, limit: int, big: bool, nano: bool, linktype: int, count: bool) -> None:
        self._run(reader, b, (limit, False, big, nano, linktype & 0xFFFFFFFF, None, 0, count))

    def pcapng(self, reader, b, limit: int, big: bool, table, n: int, count: bool) -> None:
        self._run(reader, b, (limit, True, big, False, 0, table, n, count))

    def _run(self, reader, b, walk: tuple) -> None:
        """The kernel over the reader's buffer from its position: the records
        it counts (or walks) are consumed; it stops at the first one the
        reader or the deep path must take.  ``walk``: v6s_setup's arguments
        after the buffer, told to the kernel when they or the buffer change."""
        mail, ctx, buf = self.mail, self.ctx, b.buf
        pos = b.pos
        if buf is not self.buf or walk != self.walk:
            self.lib.v6s_setup(ctx, buf, len(buf), *walk)
            self.buf, self.walk = buf, walk  # (held: the kernel reads it)
        step = self.lib.v6s_next
        while True:
            rc = step(ctx, pos)
            pos = mail[MAIL_POS]
            reader.frames += mail[MAIL_FRAMES]
            if rc == SYNC:
                self.sync(mail[MAIL_SLOT])
                continue
            if rc == PROMOTE:
                src = ctypes.string_at(ctypes.addressof(mail) + 8 * MAIL_ADDR, 16)
                if not self.promote(self.slots[mail[MAIL_SLOT]], src, reader.frames + 1, mail[MAIL_NS]):
                    self.lib.v6s_force_deep(ctx)
                continue
            break
        b.pos = pos
        if rc == DEEP:
            self.stop, self.stop_dirty = mail[MAIL_SLOT], mail[MAIL_DIRTY]
        else:
            self.stop = -2
        counted = mail[MAIL_COUNTED]
        if counted != self.counted:
            self.counted = counted
            self.audit.t_last = mail[MAIL_LAST_NS] / NS
        if self.progress is not None and reader.frames - self.shown >= 65536:
            self.shown = reader.frames
            self.progress.update(reader.frames, reader.bytes_read)


ESRC, V6_SRC, IP_SRC = F["esrc"], F["v6_src"], F["ip_src"]
ZERO12 = bytes(12)


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


def known_for(audit: Audit, holder, *, promote=None, progress: Progress | None = None,
              deep_only: bool = False) -> Known | None:
    """The fast path's knowledge for ``audit`` (None: every frame goes
    deep, asked for or because the kernel cannot be built)."""
    lib = None if deep_only else kernel.load()
    if lib is None:
        return None
    known = Known(lib, audit.hosts, holder, promote=promote, progress=progress)
    known.audit = audit
    return known


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
    state = option_108_decoder(audit)
    known = known_for(audit, lambda h: h, progress=progress, deep_only=deep_only)
    try:
        _, deep, shortcut = scan(audit, reader, known, state, progress=progress)
    finally:
        if known is not None:
            known.close()
    audit.frames += shortcut  # Audit.add counts the deep ones itself
    if progress is not None:
        progress.finish(reader.frames, reader.bytes_read)
    return {"packets": reader.frames, "deep_frames": deep, "decoded_108": state["decoded"], "bytes": reader.size,
            "workers": 1, "pid": os.getpid()}


def scan(audit: Audit, reader: Reader, known: Known | None, state: dict, *, sink=None,
         progress: Progress | None = None) -> tuple[int, int, int]:
    """The frames of ``reader`` into ``audit``: those ``known`` counts are
    counted by the kernel (into their holders); the others are dissected,
    added, given to ``sink(frame number, offset, fields)`` and learned
    from.  ``known`` None: every frame is dissected.  Returns (frames
    handed to the deep path, deep, counted)."""
    fields_of, add = dissect.fields_of, audit.add
    chaddr = F["dhcp_chaddr"]
    k = deep = 0
    check_every = (1 << 14) - 1
    reader.fast = known
    for off, _ns, orig, lt, fr in reader:
        k += 1
        if progress is not None and not k & check_every:
            progress.update(reader.frames, reader.bytes_read)
        deep += 1
        if known is not None and lt == 1 and len(fr) >= 14:
            known.before_deep(fr[6:12])
        state["frame"] = fr
        f = fields_of(fr, lt, orig, _ns)
        add(reader.frames, off, f)
        if sink is not None:
            sink(reader.frames, off, f)
        if known is None:
            continue
        if f[chaddr]:  # an OFFER changes its client's V6ONLY_WAIT
            known.invalidate(f[chaddr].split(",", 1)[0])
        if lt == 1 and len(fr) >= 14:
            known.learn(fr[6:12], f)
    if known is not None:
        known.drain()
        return k, deep, known.counted
    return k, deep, 0
