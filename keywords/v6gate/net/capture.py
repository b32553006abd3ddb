"""Evidence: an independent capture (dumpcap) on the tester interface, split
into one pcapng per check.

dumpcap needs about 0.25 s to go live and delivers packets with up to 250 ms
delay, so one dumpcap runs for the whole session and writes pcapng to a
pipe (which it flushes per packet).  The harness brackets each check with
two *marker* frames (ethertype 0x88B5, IEEE local experimental, sent from the
tester interface to its own MAC so a switch never forwards them); a thread
reads dumpcap's stream and copies the blocks between a check's start and end
markers into that check's file.  The markers themselves are not copied.
"""

from __future__ import annotations

import contextlib
import secrets
import signal
import struct
import subprocess
import threading
import time
from pathlib import Path

from ..errors import BenchError
from ..util.netns import netns
from ..util.proc import in_ns, need

MARKER_ETHERTYPE = 0x88B5
MAGIC = b"V6GATE-MARK"
SHB, IDB, EPB, SPB = 0x0A0D0D0A, 0x00000001, 0x00000006, 0x00000003


class Capture:
    def __init__(self, iface: str, ns: str | None):
        self.iface = iface
        self.ns = ns
        self.proc: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Condition()
        self._seen_tokens: set[bytes] = set()
        self._segments: dict[bytes, Path] = {}  # token -> file for pending segments
        self._path: Path | None = None  # the segment between begin and end
        self._current: tuple[bytes, object, Path] | None = None  # token, open file, its path
        self._header = b""
        self._endian = "<"
        self._sock = None
        self._mac = b"\x00" * 6
        self.packets = 0
        self.error: str | None = None
        #: the OSError a segment could not be written with (ENOSPC, EROFS): no segment is written after it
        self.write_error: OSError | None = None
        self.segments_written = 0
        self._pending: bytes | None = None
        self._stopping = False

    # -- lifecycle --------------------------------------------------------------
    def start(self, ready_timeout: float = 5.0) -> Capture:
        need("dumpcap")
        import socket

        with netns(self.ns):
            # protocol 0: a send-only packet socket (it receives nothing)
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            s.bind((self.iface, 0))
        self._sock = s
        self._mac = s.getsockname()[4][:6]
        argv = ["dumpcap", "-q", "-i", self.iface, "-w", "-"]
        self.proc = subprocess.Popen(in_ns(self.ns, argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self._thread = threading.Thread(target=self._reader, name="capture-split", daemon=True)
        self._thread.start()
        token = self._new_token()
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            self._send_marker(b"R", token)
            with self._lock:
                if token in self._seen_tokens:
                    return self
                self._lock.wait(0.02)
            if self.proc.poll() is not None:
                break
        err = self._stderr_tail()
        self.stop()
        raise BenchError(f"dumpcap did not start capturing on {self.iface}: {err or 'no marker seen'}")

    def _stderr_tail(self) -> str:
        if self.proc and self.proc.poll() is not None and self.proc.stderr:
            with contextlib.suppress(Exception):
                return self.proc.stderr.read().decode(errors="replace").strip().splitlines()[-1]
        return ""

    def died(self) -> str | None:
        """Why the capture no longer records (dumpcap ended, or its reader stopped), or None while it does.
        Asked between parts: a part after this would have no pcap, so the run cannot go on."""
        if self.proc is None or self._stopping:
            return None
        rc = self.proc.poll()
        if rc is not None:
            how = f"killed by {signal.Signals(-rc).name}" if rc < 0 and -rc in signal.valid_signals() else f"exit {rc}"
            return f"the capture (dumpcap on {self.iface}, pid {self.proc.pid}) ended ({how})"
        if self._thread is not None and not self._thread.is_alive():
            return f"the capture's reader stopped ({self.error or 'dumpcap closed its output'})"
        return None

    def stop(self) -> None:
        self._stopping = True
        if self._current:
            self.end()
        if self.proc and self.proc.poll() is None:
            # let the last markers through the 250 ms capture buffer
            self._flush(timeout=1.0)
            self.proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(3)
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(2)
        if self._thread:
            self._thread.join(3)
        with self._lock:
            if self._current:
                with contextlib.suppress(OSError):
                    self._current[1].close()
                self._current = None
        if self._sock:
            self._sock.close()
            self._sock = None

    # -- segments -------------------------------------------------------------
    @staticmethod
    def _new_token() -> bytes:
        return secrets.token_bytes(16)

    def _send_marker(self, kind: bytes, token: bytes) -> None:
        frame = self._mac + self._mac + struct.pack("!H", MARKER_ETHERTYPE) + MAGIC + kind + token
        try:
            self._sock.send(frame.ljust(60, b"\x00"))
        except OSError as exc:  # the tester interface went away or down
            self.error = self.error or f"marker on {self.iface}: {exc.strerror or exc}"
            raise BenchError(f"the capture's marker could not be sent on {self.iface}: {exc.strerror or exc}") from None

    def begin(self, path: Path) -> bytes:
        """Start copying frames into ``path`` (a new pcapng); returns the segment token."""
        if self._current is not None:
            self.end()
        path.parent.mkdir(parents=True, exist_ok=True)
        token = self._new_token()
        with self._lock:
            self._segments[token] = path
        self._send_marker(b"S", token)
        self._pending = token
        self._path = path
        return token

    @property
    def path(self) -> Path | None:
        """The pcap being written (between begin and end), for evidence files kept next to it."""
        return self._path

    def end(self, wait: bool = False, timeout: float = 2.0) -> None:
        """Stop copying into the current segment (never raises: a failure is ``error``, the check's ERROR)."""
        token = self._pending
        if token is None:
            return
        try:
            self._send_marker(b"E", token)
        except BenchError:
            self._pending = None
            self._path = None
            return
        self._pending = None
        self._path = None
        if wait:
            self._wait_token(b"E" + token, timeout)

    def _flush(self, timeout: float) -> None:
        token = self._new_token()
        try:
            self._send_marker(b"F", token)
        except BenchError:
            return
        self._wait_token(b"F" + token, timeout)

    def _wait_token(self, key: bytes, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._lock:
            while key not in self._seen_tokens:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
        return True

    # -- the pcapng stream --------------------------------------------------------
    def _read_exact(self, f, n: int) -> bytes | None:
        buf = b""
        while len(buf) < n:
            chunk = f.read(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def _reader(self) -> None:
        self.split_stream(self.proc.stdout)

    def split_stream(self, f) -> None:
        """Copy a pcapng byte stream into the segment files as markers arrive."""
        try:
            while True:
                head = self._read_exact(f, 8)
                if head is None:
                    break
                btype = struct.unpack("<I", head[:4])[0]
                if btype == SHB:
                    magic = self._read_exact(f, 4)
                    self._endian = "<" if magic == b"\x4d\x3c\x2b\x1a" else ">"
                    blen = struct.unpack(self._endian + "I", head[4:8])[0]
                    rest = self._read_exact(f, blen - 12)
                    block = head + magic + rest
                    self._header = block
                    continue
                btype, blen = struct.unpack(self._endian + "II", head)
                body = self._read_exact(f, blen - 8)
                if body is None:
                    break
                block = head + body
                if btype == IDB:
                    self._header += block
                    continue
                if btype in (EPB, SPB):
                    self.packets += 1
                    data = self._packet_data(btype, body)
                    if data is not None and self._is_marker(data):
                        self._on_marker(data)
                        continue
                with self._lock:
                    if self._current:
                        self._write(block)
        except Exception as exc:  # the capture must never take the harness down
            self.error = f"capture reader: {exc}"
        finally:
            with self._lock:
                self._lock.notify_all()

    def _write(self, data: bytes) -> None:
        """Append to the current segment; a segment that cannot be written whole is removed (never half a pcap),
        and nothing more is written (the run directory is full or read-only: ``write_error``)."""
        try:
            self._current[1].write(data)
        except OSError as exc:
            self._failed(exc, self._current[2])

    def _failed(self, exc: OSError, path: Path) -> None:
        self.write_error = exc
        self.error = f"writing {path.name}: {exc.strerror or exc}"
        if self._current is not None:
            with contextlib.suppress(OSError):
                self._current[1].close()
            self._current = None
        with contextlib.suppress(OSError):
            path.unlink()

    def _packet_data(self, btype: int, body: bytes) -> bytes | None:
        if btype == EPB:
            caplen = struct.unpack(self._endian + "I", body[12:16])[0]
            return body[20:20 + caplen]
        return body[4:]

    def _is_marker(self, data: bytes) -> bool:
        return (len(data) >= 14 + len(MAGIC) + 17 and data[12:14] == struct.pack("!H", MARKER_ETHERTYPE)
                and data[14:14 + len(MAGIC)] == MAGIC and data[0:6] == self._mac)

    def _on_marker(self, data: bytes) -> None:
        off = 14 + len(MAGIC)
        kind, token = data[off:off + 1], data[off + 1:off + 17]
        with self._lock:
            if kind == b"S" and token in self._segments:
                if self._current:
                    with contextlib.suppress(OSError):
                        self._current[1].close()
                path = self._segments.pop(token)
                if self.write_error is None:
                    try:
                        self._current = (token, open(path, "wb"), path)
                    except OSError as exc:
                        self._failed(exc, path)
                    else:
                        self._write(self._header)
            elif kind == b"E" and self._current and self._current[0] == token:
                try:
                    self._current[1].close()
                except OSError as exc:  # its last buffered bytes did not fit
                    self._failed(exc, self._current[2])
                else:
                    self.segments_written += 1
                self._current = None
            self._seen_tokens.add(token)
            self._seen_tokens.add(kind + token)
            self._lock.notify_all()


def pcap_path_for(run_dir: Path, check_id: str, part: str | None, ipv6ready: str | None, suffix: str = "") -> Path:
    label = ipv6ready or "x"
    name = f"{label}{'-' + part if part else ''}__{check_id}{suffix}.pcapng"
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
    return run_dir / "pcap" / safe


def pcap_frame_count(path: Path) -> int | None:
    """Count packets in a pcapng written by the splitter (no external tool)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    n, off = 0, 0
    endian = "<"
    while off + 8 <= len(data):
        btype = struct.unpack("<I", data[off:off + 4])[0]
        if btype == SHB:
            endian = "<" if data[off + 8:off + 12] == b"\x4d\x3c\x2b\x1a" else ">"
        blen = struct.unpack(endian + "I", data[off + 4:off + 8])[0]
        if blen < 12:
            break
        if btype in (EPB, SPB):
            n += 1
        off += blen
    return n

