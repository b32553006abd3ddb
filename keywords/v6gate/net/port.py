"""The tester's layer-2 access to the DUT's link.

* Frames are sent with an explicit Ethernet header on an AF_PACKET socket
  bound to the tester interface (opened inside the tester's namespace when
  there is one); Scapy only builds and parses, it never routes.
* A receive thread parses every incoming frame once and keeps it with its
  arrival time: the kernel's receive timestamp (SO_TIMESTAMPNS) on the
  monotonic clock, so a frame's time is when it reached the tester, not when
  a busy harness got round to reading it.  A wait that ends empty ends only
  once the thread has read every frame that arrived before its deadline
  (``drained_through``): on a loaded machine, "nothing came" is a fact about
  the link, not about the harness's scheduling.  ``expect``/``collect`` only look at frames that arrived after
  the probe was sent (the flush), and only at frames the caller's matcher
  accepts: replies are matched by a per-probe token, background ND/MLD/RA is
  never confused with an answer.
* Responders (the emulated tester nodes' Neighbor Discovery, for example)
  see every frame first and may answer at once, as a real node would.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from scapy.layers.l2 import Ether
from scapy.packet import Packet

from ..errors import BenchError
from ..util.netns import netns

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_OUTGOING = 4
SIOCGIFINDEX, SIOCGIFFLAGS, IFF_UP = 0x8933, 0x8913, 0x1
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux; SCM_TIMESTAMPNS has the same value
#: how long past a deadline a wait keeps waiting for a lagging receive thread to catch up
CATCH_UP_S = 10.0


@dataclass
class Frame:
    time: float  # time.monotonic() at arrival
    raw: bytes
    pkttype: int
    _pkt: Packet | None = field(default=None, repr=False)

    @property
    def pkt(self) -> Packet:
        if self._pkt is None:
            self._pkt = Ether(self.raw)
        return self._pkt

    @property
    def outgoing(self) -> bool:
        return self.pkttype == PACKET_OUTGOING

    def summary(self) -> str:
        try:
            return self.pkt.summary()
        except Exception:  # a malformed frame still deserves a line
            return f"{len(self.raw)}-byte frame"


Matcher = Callable[[Packet], bool]
Responder = Callable[["Port", Frame], None]


class Port:
    """Layer-2 send/expect on one interface."""

    def __init__(self, iface: str, ns: str | None = None, history_s: float = 120.0):
        self.iface = iface
        self.ns = ns
        self.history_s = history_s
        self.sock: socket.socket | None = None
        self.mac: str | None = None
        self._frames: list[Frame] = []
        self._sent: list[Frame] = []
        self._cond = threading.Condition()
        self._responders: list[Responder] = []
        self._watchers: list[Responder] = []  # called with the frames this interface sends (add_watcher)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = os.pipe()
        self._ifindex: int | None = None
        self.rx_errors = 0
        self.last_error: str | None = None  # the latest receive/responder failure, for the check's ERROR
        #: every frame that reached the socket before this (monotonic) time has been read and kept
        self._drained_at = 0.0

    # -- lifecycle ------------------------------------------------------------
    def open(self) -> Port:
        try:
            with netns(self.ns):
                s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
                s.bind((self.iface, 0))
                ifindex = socket.if_nametoindex(self.iface)
            self._ifindex = ifindex
        except OSError as exc:
            where = f" in namespace {self.ns}" if self.ns else ""
            raise BenchError(f"cannot open tester interface {self.iface!r}{where}: {exc.strerror or exc}; "
                             "check tester.interface in the target file") from None
        mreq = struct.pack("iHH8s", ifindex, PACKET_MR_PROMISC, 0, b"")
        s.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        with contextlib.suppress(OSError):
            s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.sock = s
        self.mac = ":".join(f"{b:02x}" for b in s.getsockname()[4][:6])
        self._thread = threading.Thread(target=self._rx_loop, name=f"port-{self.iface}", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        if self._thread:
            self._thread.join(2)
        if self.sock:
            self.sock.close()
            self.sock = None
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> Port:
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- receive --------------------------------------------------------------
    def _rx_loop(self) -> None:
        sock = self.sock
        cmsg_space = socket.CMSG_SPACE(16)
        while not self._stop.is_set():
            checked = time.monotonic()
            try:
                r, _, _ = select.select([sock, self._wake_r], [], [], 0.5)
            except (OSError, ValueError):
                return
            if self._wake_r in r:
                with contextlib.suppress(OSError):
                    os.read(self._wake_r, 512)
            if sock not in r:
                # the socket was empty when checked: everything that arrived before then is read
                with self._cond:
                    self._drained_at = checked
                    self._cond.notify_all()
                continue
            try:
                raw, anc, _flags, addr = sock.recvmsg(65535, cmsg_space)
            except OSError as exc:
                if self._stop.is_set():
                    return
                self.rx_errors += 1
                self.last_error = f"receive on {self.iface} failed: {exc}"
                continue
            frame = Frame(_arrival(anc), raw, addr[2])
            if frame.outgoing:
                self._hand(frame, self._watchers, "watcher")
                continue  # our own transmissions are logged in send()
            self._hand(frame, self._responders, "responder")
            with self._cond:
                self._frames.append(frame)
                horizon = frame.time - self.history_s
                if self._frames and self._frames[0].time < horizon:
                    self._frames = [f for f in self._frames if f.time >= horizon]
                # frames queue in arrival order: every one that arrived before this one is read
                self._drained_at = max(self._drained_at, frame.time)
                self._cond.notify_all()

    def _hand(self, frame: Frame, handlers: list[Responder], kind: str) -> None:
        for handler in list(handlers):
            try:
                handler(self, frame)
            except Exception as exc:
                self.rx_errors += 1
                self.last_error = f"a {kind} on {self.iface} raised {type(exc).__name__}: {exc}"

    def lost(self) -> str | None:
        """Why the tester interface can no longer carry the run (deleted, replaced, or set down), or None.
        Asked through the port's own socket, so in the tester's namespace and without entering it."""
        if self.sock is None:
            return None
        name = self.iface.encode()[:15]
        try:
            ifindex = struct.unpack_from("i", fcntl.ioctl(self.sock, SIOCGIFINDEX, struct.pack("16s16x", name)), 16)[0]
        except OSError:
            return f"tester interface {self.iface} was deleted"
        if ifindex != self._ifindex:
            return f"tester interface {self.iface} was deleted (another interface now has its name)"
        try:
            flags = struct.unpack_from("H", fcntl.ioctl(self.sock, SIOCGIFFLAGS, struct.pack("16s16x", name)), 16)[0]
        except OSError as exc:
            return f"tester interface {self.iface} cannot be read ({exc.strerror or exc})"
        if not flags & IFF_UP:
            return f"tester interface {self.iface} was set down"
        return None

    def add_responder(self, responder: Responder) -> None:
        self._responders.append(responder)

    def add_watcher(self, watcher: Responder) -> None:
        """``watcher(port, frame)`` for every frame sent through this
        interface (by this port or by the namespace's own stack), which
        responders never see and the port does not keep: for an impostor
        that acts on what the DUT sends (lab/impostor.py ``outgoing``)."""
        self._watchers.append(watcher)

    def remove_responder(self, responder: Responder) -> None:
        with contextlib.suppress(ValueError):
            self._responders.remove(responder)

    def clear_responders(self) -> None:
        self._responders.clear()

    # -- send -----------------------------------------------------------------
    def send(self, pkt: Packet | bytes) -> float:
        """Send one frame; returns its send time (monotonic)."""
        if self.sock is None:
            raise BenchError("tester port is not open")
        raw = bytes(pkt)
        t = time.monotonic()
        try:
            self.sock.send(raw)
        except OSError as exc:
            raise BenchError(f"send on tester interface {self.iface} failed: {exc.strerror or exc}") from None
        self._sent.append(Frame(t, raw, PACKET_OUTGOING, pkt if isinstance(pkt, Packet) else None))
        if self._sent[0].time < t - self.history_s:
            self._sent = [f for f in self._sent if f.time >= t - self.history_s]
        return t

    # -- expect ---------------------------------------------------------------
    def now(self) -> float:
        return time.monotonic()

    def frames_since(self, since: float, match: Matcher | None = None) -> list[Frame]:
        with self._cond:
            frames = [f for f in self._frames if f.time >= since]
        return [f for f in frames if match is None or _safe(match, f)]

    def expect(self, match: Matcher, within: float, since: float | None = None) -> Frame | None:
        """First frame accepted by ``match`` that arrived after ``since``
        (default: now), waiting at most ``within`` seconds."""
        since = self.now() if since is None else since
        deadline = self.now() + within
        seen = 0
        with self._cond:
            while True:
                frames = [f for f in self._frames if f.time >= since]
                for f in frames[seen:]:
                    if _safe(match, f):
                        return f
                seen = len(frames)
                left = deadline - self.now()
                if left <= 0:
                    if self._caught_up(deadline):
                        return None
                    continue
                self._cond.wait(left)

    def collect(self, match: Matcher, within: float, since: float | None = None,
                until: Callable[[list[Frame]], bool] | None = None) -> list[Frame]:
        """Every accepted frame in a window of ``within`` seconds (stops early
        when ``until(frames)`` is true)."""
        since = self.now() if since is None else since
        deadline = self.now() + within
        with self._cond:
            while True:
                got = [f for f in self._frames if f.time >= since and _safe(match, f)]
                if until and until(got):
                    return got
                left = deadline - self.now()
                if left <= 0:
                    if self._caught_up(deadline):
                        return [f for f in got if f.time <= deadline]
                    continue
                self._cond.wait(left)

    def _caught_up(self, deadline: float) -> bool:
        """With ``_cond`` held: True once every frame that arrived before
        ``deadline`` has been read (or the receive thread is hopelessly late:
        then the wait ends as before, after CATCH_UP_S); otherwise wake the
        thread and wait a little for it."""
        if self._drained_at >= deadline or self.now() > deadline + CATCH_UP_S or self.sock is None:
            return True
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        self._cond.wait(0.02)
        return False

    def drained_through(self, deadline: float) -> None:
        """Block until every frame that arrived before ``deadline`` has been
        read (at most CATCH_UP_S past it): a caller that judges "nothing came
        by ``deadline``" from its own records calls this first."""
        with self._cond:
            while not self._caught_up(deadline):
                pass

    def sent_since(self, since: float) -> list[Frame]:
        return [f for f in self._sent if f.time >= since]


class _WallToMono:
    """The offset between the wall clock (the kernel's receive timestamps) and
    the monotonic clock (everything else).  One reading of both clocks is only
    as good as the gap between the two reads: a receive thread preempted
    between them (a busy machine) put a frame milliseconds early, before the
    probe that caused it, and a check then missed an answer that came 11 us
    after its question.  So the offset is taken from a wall-mono-wall triple
    whose two wall reads are close (best of a few), and re-taken only every
    ``REFRESH_S`` (NTP slews by at most 0.5 ms/s) and kept when a new one is
    less certain than the old."""

    REFRESH_S = 1.0
    GOOD_S = 50e-6

    def __init__(self, clock=time.monotonic, wall=time.time):
        self.clock, self.wall = clock, wall
        self.offset, self.error, self.taken, self.tried = None, None, None, None

    def sample(self, tries: int = 5) -> tuple[float, float]:
        best = None
        for _ in range(tries):
            w1, m, w2 = self.wall(), self.clock(), self.wall()
            if best is None or w2 - w1 < best[1]:
                best = ((w1 + w2) / 2 - m, w2 - w1)
            if best[1] <= self.GOOD_S:
                break
        return best

    def __call__(self, wall_ts: float) -> float:
        now = self.clock()
        if self.tried is None or now - self.tried >= self.REFRESH_S:
            off, err = self.sample()
            self.tried = now
            stale = self.taken is None or now - self.taken >= 10 * self.REFRESH_S
            if self.offset is None or err <= max(self.error, self.GOOD_S) or stale:
                self.offset, self.error, self.taken = off, err, now
        return min(now, wall_ts - self.offset)


_wall_to_mono = _WallToMono()


def _arrival(ancillary) -> float:
    """The kernel's receive time of a frame (SCM_TIMESTAMPNS, wall clock) on
    the monotonic clock; the read time when the kernel gave none."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
            sec, nsec = struct.unpack("qq", data[:16])
            return _wall_to_mono(sec + nsec / 1e9)
    return time.monotonic()


def _safe(match: Matcher, frame: Frame) -> bool:
    try:
        return bool(match(frame.pkt))
    except Exception:
        return False
