"""The fast engine on several cores: a capture read over its chunks by
forked workers and merged in the capture's order, with exactly the result
of one process reading it.

Chunks: the record or block starting at byte ``off`` belongs to chunk
``off // chunk_bytes`` (``pcapread.Reader``): every process walks the whole
file (reading the headers of the other chunks' records, which is cheap)
and so agrees on the chunks and the frame numbers without a pre-pass.
Chunk ``c`` is read by process ``c % jobs``: 0 is this process, which reads
its chunks exactly as a serial audit does (``fast.scan`` into the
``Audit`` itself); the others are forked workers (``os.fork``: nothing is
imported again, the parent's pages are shared copy-on-write).

A worker reads its chunks with its own, local ``Audit`` (it never sees the
other processes' chunks; emptied at each of its chunks: what it carries from
one to the next is only what it learned of the hosts' addresses, ``known``,
and which hosts sent IPv4) and writes per chunk, to a spool file: in order,
the frames it dissected (number, offset, fields, the option-108 value it
decoded) and the "use" events below, then a summary: per host the frames
it only counted (frames, bytes, family, IPv4 count, the last such frame's
time unless a dissected frame of the host came later, the time range of
the counted IPv4 frames).  The parent, when its walk enters chunk ``c``,
replays the worker's frames through ``Audit.add`` in order (the per-host
rules see the serial run's sequence), adds the counters, and skips the
chunk's frames.

Why the worker's counting is the serial run's counting: a worker counts a
frame only on facts that, once true, stay true whatever the chunks it did
not see hold (the host and its address were recorded: counts only grow,
address sets only grow until full), except two, which it reports for the
parent to settle against the state the chunk starts from:
- an interface restart (a DAD probe of a link-local address) in a chunk it
  did not see starts a new episode in which an address must be recorded
  as used again: the first counted frame per host and address that relies
  on an earlier chunk's knowledge is a "use" event, which the parent
  replays with ``Audit.episode_use`` (what ``Audit.add`` does for it);
- V6ONLY_WAIT: a counted IPv4 frame inside the window after an OFFER with
  option 108 is also counted as traffic after the offer; the parent counts
  the chunk's IPv4 frames of a host as all outside or all inside the
  window the chunk starts with; a frame after an OFFER to the host or its
  restart inside the chunk is dissected, not counted (``Audit.watch``).
A chunk whose counted IPv4 frames straddle the window (or after which the
first frame inside it would have been dissected), or whose worker failed
(a damaged capture, a crash), is read again by the parent itself, as the
serial run reads it: the result never depends on the split.

Memory: a worker's spool is a file per chunk on disk, deleted once merged;
at most ``CREDITS`` chunks ahead of the merge (a credit pipe), so the
parent's memory holds one batch at a time.  A gzip'ed capture cannot be
split by byte offset: it is read serially (``fast.read_into``).
"""

from __future__ import annotations

import gc
import math
import os
import pickle
import shutil
import signal
import tempfile
from pathlib import Path

from ..net import v6only as V
from . import kernel
from .dissect import ntop6, time_text
from .fast import Progress, known_for, option_108_decoder, scan
from .hosts import Audit, Seen
from .pcapread import Reader
from .tshark import F

#: a capture this large or larger is read in parallel by default (below it the fork and the merge cost
#: more than the second core gives; measured in docs/v6only.md)
PARALLEL_MIN_BYTES = 8 << 20
MIN_CHUNK = 1 << 20
MAX_CHUNK = 32 << 20
CREDITS = 4  # chunks a worker may be ahead of the merge
BATCH = 1024  # records per pickled batch
ESRC = F["esrc"]


def default_jobs(size: int, fmt: str) -> int:
    """Processes for an audit that did not ask: 1 with the counting kernel
    (it reads a realistic capture at 0.5-0.6 M frames/s on one core, faster
    than two processes; a second pays only where control traffic dominates,
    about 1.3 times for 1.7 times the memory: ``--jobs 2`` asks for it;
    measured in docs/v6only.md); without it, 2 when there are 2 cores and
    the capture is large enough that the second pays; 1 for a gzip'ed one."""
    if fmt == "gzip" or size < PARALLEL_MIN_BYTES or kernel.load() is not None:
        return 1
    return max(1, min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def chunk_size(size: int, jobs: int) -> int:
    """Bytes per chunk: some 32 chunks per process (the last one's
    imbalance small), 1 to 32 MiB."""
    return max(MIN_CHUNK, min(MAX_CHUNK, size // (32 * jobs)))


class _V4:
    """A worker's count of a host's counted IPv4 frames in a chunk, with
    their time range.  It stands where ``fast.Known`` reads and adds to a
    host's ``kinds[IPV4]`` Seen: ``count`` reads as the chunk's count plus
    one (the host's IPv4 was seen before: why the frame is counted)."""

    __slots__ = ("hi", "lo", "n", "tally")

    def __init__(self, tally):
        self.tally, self.n, self.lo, self.hi = tally, 0, math.inf, -math.inf

    @property
    def count(self) -> int:
        return self.n + 1

    def more(self, n: int, lo: float, hi: float) -> None:
        """``n`` counted IPv4 frames, the first at ``lo``, the last at ``hi`` (``fast.Known.drain``)."""
        self.n += n
        if lo < self.lo:
            self.lo = lo
        if hi > self.hi:
            self.hi = hi


#: what makes the counting kernel take every IPv4 frame of a host as inside V6ONLY_WAIT with nothing counted
#: after the offer yet: it dissects them
_BLOCKED = [(-math.inf,)]


class Tally:
    """A worker's counted frames of one host in one chunk: the attributes
    ``fast.Known.drain`` updates on a Host with the frames the kernel counted."""

    __slots__ = ("after_offer_108", "bytes", "frames", "kinds", "last_time", "mac", "offers_108", "quiet_until",
                 "v4", "v4_frames", "v6_bytes", "v6_frames")

    def __init__(self, mac: str):
        self.mac = mac
        self.frames = self.bytes = self.v6_frames = self.v6_bytes = self.v4_frames = 0
        self.last_time = None  # None: a dissected frame of the host is the chunk's last so far
        self.v4 = _V4(self)
        self.kinds: dict = {}
        self.offers_108: list = []
        self.quiet_until = 0.0
        self.after_offer_108 = Seen()

    def block_ipv4(self) -> None:
        """An OFFER with option 108 to the host, or its restart, in this chunk:
        its IPv4 frames are dissected from here on (the window changed)."""
        self.offers_108, self.quiet_until = _BLOCKED, math.inf

    def row(self) -> tuple:
        return (self.mac, self.frames, self.bytes, self.last_time, self.v6_frames, self.v6_bytes, self.v4_frames,
                self.v4.n, self.v4.lo, self.v4.hi)


def _send(f, msg) -> None:
    pickle.dump(msg, f, protocol=pickle.HIGHEST_PROTOCOL)
    f.flush()


def _peak_kib() -> int:
    try:
        with open("/proc/self/status") as f:
            return next((int(line.split()[1]) for line in f if line.startswith("VmHWM:")), 0)
    except OSError:
        return 0


class _Worker:
    """One forked worker's side: its chunks of the capture, read with a
    local Audit, to spool files."""

    def __init__(self, path: Path, chunk_bytes: int, jobs: int, index: int, spool: str, notify, credit: int):
        self.jobs, self.index, self.spool, self.notify, self.credit = jobs, index, spool, notify, credit
        self.audit = local = Audit()
        self.state = option_108_decoder(local)
        self.tallies: dict[str, Tally] = {}
        self.v4_hosts: set[str] = set()  # hosts whose IPv4 it has seen (the audit has: that only grows)
        local.watch = self.watch
        self.known = known_for(local, lambda h: self.tally(h.mac), promote=self.promote)
        self.reader = Reader(path, chunk_bytes, self.keep)
        self.out = None  # the current chunk's spool file
        self.batch: list = []

    def tally(self, mac: str) -> Tally:
        t = self.tallies.get(mac)
        if t is None:
            t = self.tallies[mac] = Tally(mac)
        if not t.kinds:
            h = self.audit.hosts.get(mac)
            if h is not None and V.IPV4 in h.kinds:
                self.v4_hosts.add(mac)
            if mac in self.v4_hosts:
                t.kinds = {V.IPV4: t.v4}
        return t

    def watch(self, mac: str, what: str) -> None:
        """An OFFER with option 108 to the host or its restart: its IPv4 frames
        are dissected for the rest of the chunk; a restart makes what the
        worker knew of its addresses void (as ``fast.Known.learn`` does)."""
        self.tally(mac).block_ipv4()
        if self.known is not None:
            self.known.invalidate(mac)
            if what == "restart":
                self.known.forget(bytes.fromhex(mac.replace(":", "")))

    def run(self) -> None:
        scan(self.audit, self.reader, self.known, self.state, sink=self.sink)
        self.flush()
        _send(self.notify, ("done", _peak_kib()))

    def keep(self, chunk: int) -> bool:
        self.flush()
        if chunk % self.jobs != self.index:
            return False
        if not os.read(self.credit, 1):
            raise SystemExit(0)  # the parent is gone
        self.chunk, self.frames0, self.decoded0, self.deep = chunk, self.reader.frames, self.state["decoded"], 0
        self.out = open(os.path.join(self.spool, f"{chunk}.pickle"), "wb")
        # a new chunk: a new local Audit (memory: only this chunk's hosts), counters from zero, the
        # knowledge carried (its facts stay true; what they were learned from need not be kept)
        local = self.audit
        local.hosts.clear()
        local.t0, local.t_last, local.frames = None, 0.0, 0
        local.rdnss_seen.clear()
        local.pref64_seen.clear()
        self.tallies.clear()
        if self.known is not None:
            self.known.new_chunk(self.tally)
        return True

    def sink(self, frame: int, offset: int, f: list) -> None:
        self.batch.append((frame, offset, f, self.state["opt"]))
        self.state["opt"] = None
        self.deep += 1
        t = self.tallies.get(f[ESRC])
        if t is not None:
            t.last_time = None
        if len(self.batch) >= BATCH:
            pickle.dump(self.batch, self.out, protocol=pickle.HIGHEST_PROTOCOL)
            self.batch = []

    def promote(self, entry, src: bytes, frame: int, ns: int) -> bool:
        """The host sends from an address learned in an earlier chunk: the
        parent records it as used in the host's episode at this frame."""
        self.known.promoted(entry, src)
        self.batch.append((frame, -1, entry.holder.mac, ntop6(src), ns))
        return True

    def flush(self) -> None:
        if self.out is None:
            return
        if self.batch:
            pickle.dump(self.batch, self.out, protocol=pickle.HIGHEST_PROTOCOL)
            self.batch = []
        at = self.out.tell()
        frames = self.reader.frames - self.frames0
        pickle.dump({"frames": frames, "deep": self.deep, "decoded": self.state["decoded"] - self.decoded0,
                     "t_last": self.audit.t_last if frames else None,
                     "tallies": [t.row() for t in self.tallies.values() if t.frames]},
                    self.out, protocol=pickle.HIGHEST_PROTOCOL)
        self.out.close()
        self.out = None
        _send(self.notify, ("chunk", self.chunk, at))


def _quiet_hosts(audit: Audit, tallies: list) -> set | None:
    """The hosts whose counted IPv4 frames in a chunk all fall inside the
    V6ONLY_WAIT window the chunk starts with (counted after the offer too);
    None when a host's fall partly inside, or inside before anything was
    counted after the offer (the chunk is read again)."""
    quiet = set()
    for mac, *_, v4n, lo, hi in tallies:
        if not v4n:
            continue
        h = audit.hosts.get(mac)  # None: a new host, first seen in the chunk (no window at its start)
        if h is None or not h.offers_108:
            continue
        start, end = h.offers_108[0][0], h.quiet_until
        if hi <= start or lo > end:
            continue
        if start < lo and hi <= end and h.after_offer_108.count:
            quiet.add(mac)
            continue
        return None
    return quiet


class _Merge:
    """The parent's side: which chunks it reads, the workers' merged in order."""

    def __init__(self, audit: Audit, state: dict, spool: str, workers: list, progress: Progress | None):
        self.audit, self.state, self.spool, self.workers, self.progress = audit, state, spool, workers, progress
        self.jobs = len(workers) + 1
        self.merged = self.redone = self.deep = 0
        self.reader: Reader | None = None
        self.known = None  # this process's fast.Known

    def keep(self, chunk: int) -> bool:
        owner = chunk % self.jobs
        if owner == 0:
            return True
        w = self.workers[owner - 1]
        if w["failed"]:
            return True
        try:
            msg = pickle.load(w["notify"])
        except (EOFError, pickle.UnpicklingError, OSError):
            msg = ("error",)
        if msg[0] != "chunk" or msg[1] != chunk:
            w["failed"] = msg  # it failed (or stopped): its chunks from here on are read here
            return True
        path = os.path.join(self.spool, f"{chunk}.pickle")
        try:
            with open(path, "rb") as f:
                f.seek(msg[2])
                summary = pickle.load(f)
                quiet = _quiet_hosts(self.audit, summary["tallies"])
                if quiet is None:
                    self.redone += 1
                    return True
                f.seek(0)
                while f.tell() < msg[2]:
                    self._replay(pickle.load(f))
            self._count(summary, quiet)
            self.merged += 1
            return False
        finally:
            os.unlink(path)
            try:
                os.write(w["credit"], b"x")
            except OSError:  # it is gone: it will say why when its next chunk is due
                pass
            if self.progress is not None and self.reader is not None:
                self.progress.update(self.reader.frames, self.reader.bytes_read)

    def _replay(self, batch: list) -> None:
        audit, state, hosts = self.audit, self.state, self.audit.hosts
        add = audit.add
        state["replay"] = True
        restarted = set()
        audit.watch = lambda mac, what: restarted.add(mac) if what == "restart" else None
        known = self.known
        try:
            for rec in batch:
                if rec[1] < 0:  # the host uses an address it was known by in an earlier chunk
                    h = hosts.get(rec[2])
                    if h is not None:
                        audit.episode_use(h, rec[3], float(time_text(rec[4])), rec[0])
                else:
                    state["opt"] = rec[3]
                    add(rec[0], rec[1], rec[2])
                    self.deep += 1
        finally:
            state["replay"] = False
            audit.watch = None
        for mac in restarted if known is not None else ():  # what this process knew of a host that restarted
            key = bytes.fromhex(mac.replace(":", ""))  # in the chunk: forgotten, as fast.Known.learn forgets it
            entry = known.entries.get(key)  # after a restart it reads itself
            if entry is not None and entry.episode is not entry.holder.episode_used:
                known.forget(key)

    def _count(self, summary: dict, quiet: set) -> None:
        audit, hosts = self.audit, self.audit.hosts
        for mac, frames, nbytes, last, v6f, v6b, v4f, v4n, _, _ in summary["tallies"]:
            h = hosts[mac]
            h.frames += frames
            h.bytes += nbytes
            h.v6_frames += v6f
            h.v6_bytes += v6b
            h.v4_frames += v4f
            if v4n:
                h.kinds[V.IPV4].count += v4n
                if mac in quiet:
                    h.after_offer_108.count += v4n
            if last is not None:
                h.last_time = last
            audit.frames += frames
        if summary["t_last"] is not None:
            audit.t_last = summary["t_last"]
        self.state["decoded"] += summary["decoded"]


def read_parallel(audit: Audit, path, *, jobs: int, chunk_bytes: int | None = None,
                  progress: Progress | None = None) -> dict:
    """``fast.read_into`` on ``jobs`` processes (this one and ``jobs`` - 1
    forked workers); the same ``audit`` as a serial read."""
    path = Path(path)
    size = path.stat().st_size
    chunk_bytes = chunk_bytes or chunk_size(size, jobs)
    spool = tempfile.mkdtemp(prefix="v6gate-audit-chunks-")
    state = option_108_decoder(audit)
    workers: list[dict] = []
    kernel.load()  # built and loaded once, before the workers fork
    gc.collect()
    gc.freeze()  # the collector does not touch (and so copy) the objects the workers share with this process
    try:
        for index in range(1, jobs):
            notify_r, notify_w = os.pipe()
            credit_r, credit_w = os.pipe()
            pid = os.fork()
            if pid == 0:  # the worker
                status = 0
                try:
                    signal.signal(signal.SIGINT, signal.SIG_DFL)
                    os.close(notify_r)
                    os.close(credit_w)
                    for w in workers:
                        w["notify"].close()
                        os.close(w["credit"])
                    notify = os.fdopen(notify_w, "wb")
                    try:
                        _Worker(path, chunk_bytes, jobs, index, spool, notify, credit_r).run()
                    except BaseException as exc:  # any failure: the parent reads its chunks itself
                        try:
                            _send(notify, ("error", f"{type(exc).__name__}: {exc}"))
                        except BaseException:
                            status = 1
                finally:
                    os._exit(status)
            os.close(notify_w)
            os.close(credit_r)
            try:
                os.write(credit_w, b"x" * CREDITS)
            except OSError:  # it ended already (a capture it cannot read): it said why
                pass
            workers.append({"pid": pid, "notify": os.fdopen(notify_r, "rb"), "credit": credit_w, "failed": False})
        merge = _Merge(audit, state, spool, workers, progress)
        reader = merge.reader = Reader(path, chunk_bytes, merge.keep)
        known = merge.known = known_for(audit, lambda h: h, progress=progress)
        try:
            _, deep, shortcut = scan(audit, reader, known, state, progress=progress)
        finally:
            if known is not None:
                known.close()
        audit.frames += shortcut
        child_peak = 0
        for w in workers:
            if not w["failed"]:
                try:
                    msg = pickle.load(w["notify"])
                    if msg[0] == "done":
                        child_peak += msg[1]
                except (EOFError, pickle.UnpicklingError, OSError):
                    pass
    finally:
        gc.unfreeze()
        for w in workers:
            w["notify"].close()
            os.close(w["credit"])
            try:
                os.kill(w["pid"], signal.SIGTERM)
            except ProcessLookupError:
                pass
            os.waitpid(w["pid"], 0)
        shutil.rmtree(spool, ignore_errors=True)
    if progress is not None:
        progress.finish(reader.frames, reader.bytes_read)
    return {"packets": reader.frames, "deep_frames": deep + merge.deep, "decoded_108": state["decoded"],
            "bytes": size, "workers": jobs, "pid": os.getpid(), "chunk_bytes": chunk_bytes,
            "chunks_merged": merge.merged, "chunks_read_again": merge.redone, "workers_peak_rss_kib": child_peak,
            "workers_failed": [w["failed"] for w in workers if w["failed"]]}
