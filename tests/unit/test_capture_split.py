"""The capture splitter cuts a pcapng stream into one file per check at the
marker frames, drops the markers, and keeps the file readable by tshark."""

import io
import shutil
import struct
import subprocess

import pytest
from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6
from scapy.layers.l2 import Ether
from scapy.utils import PcapNgWriter

from v6gate.net.capture import MAGIC, MARKER_ETHERTYPE, Capture, pcap_frame_count

MAC = bytes.fromhex("020000000e0e")


def marker(kind: bytes, token: bytes) -> bytes:
    return (MAC + MAC + struct.pack("!H", MARKER_ETHERTYPE) + MAGIC + kind + token).ljust(60, b"\0")


def frame(i: int) -> bytes:
    return bytes(Ether(src="02:76:00:00:00:01", dst="02:00:00:00:00:02") / IPv6(src="fe80::1", dst="fe80::2")
                 / ICMPv6EchoRequest(id=i, seq=i))


def pcapng(frames: list[bytes], tmp_path) -> bytes:
    path = tmp_path / "stream.pcapng"
    w = PcapNgWriter(str(path))
    for f in frames:
        w.write(Ether(f))
    w.close()
    return path.read_bytes()


def test_segments_hold_exactly_their_frames(tmp_path):
    cap = Capture("eth0", None)
    cap._mac = MAC
    t1, t2 = b"1" * 16, b"2" * 16
    cap._segments = {t1: tmp_path / "one.pcapng", t2: tmp_path / "two.pcapng"}
    stream = [frame(0), marker(b"S", t1), frame(1), frame(2), marker(b"E", t1), frame(3),
              marker(b"S", t2), frame(4), marker(b"E", t2), frame(5)]
    cap.split_stream(io.BufferedReader(io.BytesIO(pcapng(stream, tmp_path))))
    assert cap.error is None
    assert pcap_frame_count(tmp_path / "one.pcapng") == 2
    assert pcap_frame_count(tmp_path / "two.pcapng") == 1
    assert cap.segments_written == 2


def test_a_segment_without_end_marker_is_closed_by_the_next_start(tmp_path):
    cap = Capture("eth0", None)
    cap._mac = MAC
    t1, t2 = b"a" * 16, b"b" * 16
    cap._segments = {t1: tmp_path / "a.pcapng", t2: tmp_path / "b.pcapng"}
    cap.split_stream(io.BytesIO(pcapng([marker(b"S", t1), frame(1), marker(b"S", t2), frame(2), frame(3)], tmp_path)))
    cap._current[1].close()
    assert pcap_frame_count(tmp_path / "a.pcapng") == 1
    assert pcap_frame_count(tmp_path / "b.pcapng") == 2


@pytest.mark.skipif(not shutil.which("tshark"), reason="tshark not installed")
def test_segment_files_are_readable_by_tshark(tmp_path):
    cap = Capture("eth0", None)
    cap._mac = MAC
    tok = b"t" * 16
    cap._segments = {tok: tmp_path / "s.pcapng"}
    cap.split_stream(io.BytesIO(pcapng([marker(b"S", tok), frame(7), frame(8), marker(b"E", tok)], tmp_path)))
    out = subprocess.run(["tshark", "-r", str(tmp_path / "s.pcapng"), "-T", "fields", "-e", "icmpv6.echo.identifier"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0x0007", "0x0008"]


def test_a_capture_whose_dumpcap_died_says_how():
    """Asked between parts: dumpcap gone (here a real process killed by SIGKILL) is why the run cannot go on;
    a capture being stopped, or running, is not."""
    cap = Capture("eth0", None)
    assert cap.died() is None  # never started
    cap.proc = subprocess.Popen(["sh", "-c", "kill -KILL $$"])
    cap.proc.wait(10)
    assert cap.died() == f"the capture (dumpcap on eth0, pid {cap.proc.pid}) ended (killed by SIGKILL)"
    cap.proc = subprocess.Popen(["sh", "-c", "exit 2"])
    cap.proc.wait(10)
    assert cap.died().endswith("ended (exit 2)")
    cap._stopping = True
    assert cap.died() is None
