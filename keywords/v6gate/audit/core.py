"""The audit engine in C (``engine/``): every frame of a capture
dissected and judged without per-frame Python, into the same
``hosts.Audit`` the Python path fills.

The Python reader (``pcapread.Reader``) still owns the file: it reads big
buffers, and hands each to the engine, which judges every pcap record and
pcapng Enhanced Packet Block wholly inside it and stops at anything the
reader must judge itself (another block type, a record across the buffer's
end, a damaged length): the reader reads that record (or raises its
one-line error, after the frames before it were judged, as the Python path
does) and hands its frame to the engine (``v6a_frame``).  At the end the
engine's host state comes back as JSON and becomes ``hosts.Host`` objects,
so the findings and the report are built from exactly what the Python path
builds them from (``export``).

A time beyond 64-bit nanoseconds (a pcapng offset or resolution that puts a
frame past the year 2262) is ``Unsupported``: the caller audits the
capture on the Python path instead.
"""

from __future__ import annotations

import ctypes
import json
import os

from ..errors import BenchError
from ..net import v6only as V
from . import native
from .capture import MAX_RECORD
from .dissect import time_text
from .hosts import BOUNDS, Audit, Host, Seen

GO, UNSUPPORTED, NOMEM = 0, 5, 6
MAIL_POS, MAIL_FRAMES, MAIL_WORDS = 0, 1, 2
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
KINDS = (V.ARP, V.DHCPV4_RFC8925, V.DHCPV4, V.IPV4)  # engine.h K_*
PROGRESS_EVERY = 65536  # frames between progress updates


class Unsupported(Exception):
    """The engine cannot judge this capture exactly (a time beyond 64-bit ns)."""


def _signatures(lib) -> None:
    P, I64, I32, U32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_uint32
    P64 = ctypes.POINTER(ctypes.c_int64)
    for name, res, args in (
            ("v6a_new", P, [P64]), ("v6a_free", None, [P]),
            ("v6a_setup", None, [P, P, I64, I32, I32, I32, U32, P64, I64]),
            ("v6a_next", I32, [P, I64, I64]),
            ("v6a_frame", I32, [P, ctypes.c_char_p, I64, U32, U32, I64, I64]),
            ("v6a_export_run", I64, [P]), ("v6a_export_hosts", I64, [P, I64]), ("v6a_output", ctypes.c_void_p, [P]),
            ("v6a_report", I64, [P, ctypes.POINTER(ctypes.c_char_p), I64, ctypes.c_double,
                                 ctypes.POINTER(ctypes.c_int32), P64])):
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args


SOURCES = ("engine/util.c", "engine/dissect.c", "engine/rules.c", "engine/walk.c", "engine/export.c",
           "engine/pyfmt.c", "engine/judge.c", "engine/report.c")
#: the bounds the engine is built with (-D): written once, in hosts.py and capture.py
DEFINES = {**BOUNDS, "MAX_RECORD": MAX_RECORD}
LIBRARY = native.Library("engine", SOURCES, _signatures, depends=("engine/engine.h",), defines=DEFINES)
EXPORT_BATCH = 1 << 20  # bytes of JSON per batch of hosts


def load():
    """The engine's library, or None (the reason said once on stderr)."""
    return LIBRARY.load()


def _no_memory() -> BenchError:
    return BenchError("v6gate audit: the audit engine ran out of memory (its host tables); free memory or "
                      "audit a smaller capture")


class Engine:
    """One audit in the engine: the reader's ``engine`` (it walks the
    reader's buffers), ``frame`` for the records the reader reads itself,
    ``export`` into a ``hosts.Audit`` at the end."""

    def __init__(self, lib, progress=None):
        self.lib, self.progress = lib, progress
        self.mail = (ctypes.c_int64 * MAIL_WORDS)()
        self.ctx = lib.v6a_new(self.mail)
        if not self.ctx:
            raise _no_memory()
        self.buf, self.walk = None, None
        self.shown = 0

    def close(self) -> None:
        if self.ctx:
            self.lib.v6a_free(self.ctx)
            self.ctx = None

    # -- the reader's side (pcapread.Reader calls these) -----------------------------------------------
    @staticmethod
    def interfaces(ifaces: list) -> ctypes.Array:
        """pcapng interfaces: (link type, units per second, offset s); a resolution beyond 64 bits is 0
        (the reader reads that interface's frames itself)."""
        flat = []
        for lt, per_s, tsoff in ifaces:
            flat += [lt, per_s if 0 < per_s <= I64_MAX else 0, max(I64_MIN, min(I64_MAX, tsoff))]
        return (ctypes.c_int64 * max(1, len(flat)))(*flat)

    def pcap(self, reader, b, big: bool, nano: bool, linktype: int) -> None:
        self._run(reader, b, (False, big, nano, linktype & 0xFFFFFFFF, None, 0))

    def pcapng(self, reader, b, big: bool, table, n: int) -> None:
        self._run(reader, b, (True, big, False, 0, table, n))

    def _run(self, reader, b, walk: tuple) -> None:
        buf = b.buf
        if buf is not self.buf or walk != self.walk:  # (a refilled buffer is a new view)
            self.lib.v6a_setup(self.ctx, b.address(), len(buf), *walk)
            self.buf, self.walk = buf, walk
        rc = self.lib.v6a_next(self.ctx, b.pos, reader.frames)
        b.pos = self.mail[MAIL_POS]
        reader.frames += self.mail[MAIL_FRAMES]
        self._check(rc)
        if self.progress is not None and reader.frames - self.shown >= PROGRESS_EVERY:
            self.shown = reader.frames
            self.progress.update(reader.frames, reader.bytes_read)

    @staticmethod
    def _check(rc: int) -> None:
        if rc == UNSUPPORTED:
            raise Unsupported("a frame's time is beyond 64-bit nanoseconds")
        if rc == NOMEM:
            raise _no_memory()

    def frame(self, fr: bytes, lt: int, orig: int, ns: int, number: int) -> None:
        """A frame the reader read itself."""
        if not I64_MIN <= ns <= I64_MAX:
            raise Unsupported("a frame's time is beyond 64-bit nanoseconds")
        self._check(self.lib.v6a_frame(self.ctx, fr, len(fr), lt & 0xFFFFFFFF, orig & 0xFFFFFFFF, ns, number))

    # -- the result ------------------------------------------------------------------------------------
    def run(self) -> dict:
        """The run's totals and sets: frames, decoded (option-108 values), hosts, t0 and t_last (ns or
        None), rdnss_seen, pref64_seen."""
        return self._json(self.lib.v6a_export_run(self.ctx))

    def report(self, streams, strings: list[str], startup_window: float) -> None:
        """Every host judged and written to ``streams`` (``hostout.Streams``) by the C writer
        (engine/report.c): the texts ``hostout.write_python`` writes, host by host."""
        from .hostout import COLUMNS, STREAMS, VERDICTS

        text = (ctypes.c_char_p * len(strings))(*(x.encode() for x in strings))
        cells = len(COLUMNS) * len(VERDICTS)
        counts = (ctypes.c_int64 * (2 * cells + 1))()
        files = streams.open("wb")
        try:
            fds = (ctypes.c_int32 * len(STREAMS))(*(files[name].fileno() for name in STREAMS))
            n = self.lib.v6a_report(self.ctx, text, len(strings), startup_window, fds, counts)
        finally:
            for f in files.values():
                f.close()
        if n == -1:
            raise _no_memory()
        if n == -2:
            err = counts[len(counts) - 1]
            raise BenchError(f"v6gate audit: cannot write the report's working files in {streams.dir} "
                             f"({os.strerror(err)}); free space there or set TMPDIR")
        if n < 0:
            raise RuntimeError(f"v6a_report: {n} (the strings given do not match engine/report.c)")
        streams.hosts = n
        streams.counts = [[counts[i * len(VERDICTS) + v] for v in range(len(VERDICTS))] for i in range(len(COLUMNS))]
        streams.first_rows = {counts[cells + k] for k in range(cells) if counts[cells + k] >= 0}

    def export(self, audit: Audit) -> int:
        """The engine's hosts into ``audit`` (a fresh one), a batch at a
        time (the engine frees what it wrote); returns the option-108 values
        it decoded."""
        run = self._json(self.lib.v6a_export_run(self.ctx))
        audit.frames = run["frames"]
        if run["t0"] is not None:
            audit.t0, audit.t_last = _t(run["t0"]), _t(run["t_last"])
        audit.rdnss_seen = set(run["rdnss_seen"])
        audit.pref64_seen = set(run["pref64_seen"])
        hosts = audit.hosts
        while True:
            batch = self._json(self.lib.v6a_export_hosts(self.ctx, EXPORT_BATCH))
            if not batch:
                return run["decoded"]
            for row in batch:
                h = _host(row)
                hosts[h.mac] = h

    def _json(self, n: int):
        if n < 0:
            raise _no_memory()
        return json.loads(ctypes.string_at(self.lib.v6a_output(self.ctx), n))


def _t(ns: int) -> float:
    """The frame time the Python path computes: float(frame.time_epoch)."""
    return float(time_text(ns))


def _seen(row: list) -> Seen:
    if not row[0]:
        return Seen()
    count, ns, frame, first = row
    return Seen(count, _t(ns), frame, first)


def _host(row: list) -> Host:
    (mac, frames, nbytes, first_ns, last_ns, desc, startup, v6f, v4f, other, v6b, kinds, v4, v6, dad, episode,
     probed, used, skipped, rs, dhcp, offers, quiet, quiet_restart, after, dns, qtypes, dns_v4, nd_hlim, bad, ra,
     rdnss, pref64, other_config, lifetimes, answers, choices, ipv6, clat) = row
    return Host(
        mac, frames=frames, bytes=nbytes, first_time=_t(first_ns), last_time=_t(last_ns), first_frame_desc=desc,
        first_frame_startup=bool(startup), v6_frames=v6f, v4_frames=v4f, other_frames=other, v6_bytes=v6b,
        kinds={KINDS[k]: _seen(s) for k, s in kinds}, ipv4_addrs=v4,
        ipv6_addrs={a: (_t(ns), frame, bool(p)) for a, ns, frame, p in v6}, dad={a: _t(ns) for a, ns in dad},
        episode=_t(episode) if episode is not None else None, episode_probed=set(probed), episode_used=set(used),
        dad_skipped=[(a, _t(ns), frame) for a, ns, frame in skipped], rs_times=[_t(ns) for ns in rs],
        dhcp_client={(V.DHCP_MESSAGE.get(msg, f"DHCP message {msg}"), bool(w)): _seen(s) for msg, w, s in dhcp},
        offers_108=[(_t(ns), frame, yi, srv, value) for ns, frame, yi, srv, value in offers],
        quiet_until=float(quiet), quiet_ended_by_restart=bool(quiet_restart), after_offer_108=_seen(after),
        dns={(fam, res): n for fam, res, n in dns}, dns_qtypes={V.DNS_QTYPE.get(qt, str(qt)): n for qt, n in qtypes},
        dns_v4=_seen(dns_v4), nd_hlim=_seen(nd_hlim), checksum_bad=_seen(bad), ra=_seen(ra), ra_rdnss=rdnss,
        ra_pref64=pref64, ra_other_config=bool(other_config), ra_router_lifetimes=set(lifetimes),
        answers={name: {"A": set(a), "AAAA": set(aaaa)} for name, a, aaaa in answers},
        first_choice={name: (fam, _t(ns), frame, dst) for name, fam, ns, frame, dst in choices},
        ipv6=_seen(ipv6), clat=_seen(clat))


def read(audit: Audit, path, lib, progress=None) -> dict:
    """Every frame of ``path`` judged by the engine into ``audit`` (a
    fresh one); the counters of ``fast.read_into``.  ``Unsupported``: the
    capture needs the Python path (``audit`` untouched)."""
    engine, counts = walk(path, lib, progress)
    try:
        counts["decoded_108"] = engine.export(audit)
    finally:
        engine.close()
    return counts


def walk(path, lib, progress=None) -> tuple[Engine, dict]:
    """Every frame of ``path`` judged by the engine; the engine (its hosts in it: ``report`` or ``export``
    them, then ``close`` it) and the counters of ``fast.read_into`` (decoded_108 from ``run``).
    ``Unsupported``: the capture needs the Python path."""
    from .pcapread import Reader

    reader = Reader(path)
    engine = Engine(lib, progress)
    reader.engine = engine
    try:
        read_by_reader = 0
        for _, ns, orig, lt, fr in reader:
            engine.frame(fr, lt, orig, ns, reader.frames)
            read_by_reader += 1
    except BaseException:
        engine.close()
        raise
    if progress is not None:
        progress.finish(reader.frames, reader.bytes_read)
    return engine, {"packets": reader.frames, "bytes": reader.size, "engine": "c", "pid": os.getpid(),
                    "frames_read_by_python": read_by_reader}
