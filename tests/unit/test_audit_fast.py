"""The audit's fast engine gives exactly what the tshark engine gives: the
same fields frame by frame (the Python dissector against tshark 4.0), the
same audit JSON on every fixture capture (the fast engine against the
tshark engine; test_audit_engine.py proves the C engine against the Python
path); the reader handles pcap and pcapng variants; the progress line
shows only on a terminal."""

import io
import json
import shutil
import struct

import pytest

from v6gate.audit.dissect import fields_of
from v6gate.audit.fast import Progress
from v6gate.audit.fixtures import CAPTURES, SAMPLES
from v6gate.audit.pcapread import Reader
from v6gate.audit.run import audit_capture
from v6gate.audit.tshark import FIELDS, read_fields
from v6gate.errors import UsageError
from v6gate.report.results import all_checks

needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed (tools/setup)")
#: fields no finding reads (tshark lists a few more option types than the dissector)
UNREAD = {"opt_types", "dhcp_opts"}


def checks_json(doc) -> str:
    """The audit's JSON, without the time it was run at."""
    return json.dumps([{k: v for k, v in c.items() if k != "started"} for c in all_checks(doc)], sort_keys=True,
                      indent=1)


def edge_capture(path):
    """Frames where a shortcut would go wrong: VLAN and QinQ, fragments, extension headers, ICMP errors
    quoting DNS, zero and bad checksums, DNS over TCP, RAs with RDNSS and PREF64, DAD, DHCPv4, truncation."""
    from scapy.layers.dhcp import BOOTP, DHCP
    from scapy.layers.dhcp6 import DHCP6_Solicit
    from scapy.layers.dns import DNS, DNSQR, DNSRR
    from scapy.layers.inet import ICMP, IP, TCP, UDP
    from scapy.layers.inet6 import (
        ICMPv6DestUnreach,
        ICMPv6EchoRequest,
        ICMPv6ND_NS,
        ICMPv6ND_RA,
        ICMPv6ND_RS,
        ICMPv6NDOptRDNSS,
        ICMPv6NDOptSrcLLAddr,
        IPv6,
        IPv6ExtHdrDestOpt,
        IPv6ExtHdrFragment,
        IPv6ExtHdrHopByHop,
        IPv6ExtHdrRouting,
    )
    from scapy.layers.l2 import ARP, Dot1Q, Ether
    from scapy.packet import Raw
    from scapy.utils import wrpcap

    e = Ether(src="02:00:00:00:00:aa", dst="02:00:00:00:00:01")
    v6 = IPv6(src="2001:db8::aa", dst="2001:db8::1")
    pk = [
        e / Dot1Q(vlan=5) / v6 / UDP(sport=1000, dport=2000) / (b"x" * 20),
        Ether(src="02:00:00:00:00:aa", dst="02:00:00:00:00:01", type=0x88A8) / Dot1Q(vlan=5) / Dot1Q(vlan=6) / v6
        / TCP(flags="S"),
        e / v6 / UDP(sport=1000, dport=2000, chksum=0) / b"x",
        e / v6 / UDP(sport=1000, dport=2000, chksum=0x1234) / b"x",
        e / IP(src="1.2.3.4", dst="5.6.7.8") / UDP(sport=1000, dport=2000, chksum=0) / b"x",
        e / IP(src="1.2.3.4", dst="5.6.7.8", chksum=0x55) / TCP(dport=80, chksum=3),
        e / IP(src="1.2.3.4", dst="5.6.7.8", flags="MF") / UDP(sport=1000, dport=53) / (b"x" * 30),
        e / v6 / IPv6ExtHdrFragment(m=1) / UDP(sport=1000, dport=53) / (b"x" * 30),
        e / v6 / IPv6ExtHdrDestOpt() / IPv6ExtHdrRouting() / UDP(sport=1000, dport=53)
        / DNS(qd=DNSQR(qname="b.example", qtype="A")),
        e / IPv6(src="2001:db8::1", dst="2001:db8::aa") / ICMPv6DestUnreach() / v6 / UDP(sport=1000, dport=53)
        / DNS(qd=DNSQR(qname="c.example")),
        e / IP(src="5.6.7.8", dst="1.2.3.4") / ICMP(type=3, code=3) / IP(src="1.2.3.4", dst="5.6.7.8")
        / UDP(sport=1000, dport=53) / DNS(qd=DNSQR(qname="d.example")),
        e / IPv6(src="2001:db8::53", dst="2001:db8::aa") / UDP(sport=53, dport=1000)
        / DNS(qr=1, qd=DNSQR(qname="e.example"), an=DNSRR(rrname="e.example", type="A", rdata="9.9.9.9")
              / DNSRR(rrname="e.example", type="AAAA", rdata="2001:db8::99")),
        e / IP(src="1.2.3.4", dst="5.6.7.8") / TCP(sport=1000, dport=53) / struct.pack("!H", 30)
        / DNS(qd=DNSQR(qname="f.example")),
        e / IPv6(src="::ffff:1.2.3.4", dst="::2") / TCP(sport=1000, dport=80, flags="S"),
        e / IPv6(src="fe80::1", dst="ff02::1", hlim=255) / ICMPv6ND_RA(O=1, routerlifetime=1800)
        / ICMPv6NDOptRDNSS(dns=["2001:db8::53", "2001:db8::54"]),
        e / IPv6(src="fe80::1", dst="ff02::1", hlim=255) / ICMPv6ND_RA(O=0)
        / Raw(bytes.fromhex("2602000100006400ff9b000000000000")),
        e / IPv6(src="::", dst="ff02::1:ff00:1", hlim=254) / ICMPv6ND_NS(tgt="fe80::aa")
        / ICMPv6NDOptSrcLLAddr(lladdr="02:00:00:00:00:aa"),
        e / IPv6(src="fe80::aa", dst="ff02::2") / ICMPv6ND_RS() / Raw(b"\x01\x00"),
        Ether(src="02:00:00:00:00:aa", dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, psrc="169.254.1.1", pdst="169.254.1.2"),
        e / IP(src="0.0.0.0", dst="255.255.255.255") / UDP(sport=68, dport=67)
        / BOOTP(chaddr=bytes.fromhex("0200000000aa"))
        / DHCP(options=[("message-type", "discover"), ("param_req_list", [1, 3, 6, 108]), "end"]),
        e / IP(src="1.1.1.1", dst="255.255.255.255") / UDP(sport=67, dport=68)
        / BOOTP(op=2, yiaddr="1.1.1.5", chaddr=bytes.fromhex("0200000000aa"))
        / DHCP(options=[("message-type", "offer"), (108, b"\0\0\x01\x2c"), "end"]),
        e / v6 / UDP(sport=5353, dport=5353) / DNS(qd=DNSQR(qname="g.local", qtype="AAAA")),
        e / v6 / UDP(sport=546, dport=547) / DHCP6_Solicit(),
        e / v6 / IPv6ExtHdrHopByHop() / ICMPv6EchoRequest(cksum=1),
        e / IPv6(src="2001:db8::aa", dst="2001:db8::1", plen=200) / UDP(sport=1, dport=2) / b"short",
        e / v6 / TCP(sport=1, dport=2, flags="SA"),
    ]
    wrpcap(str(path), pk)
    return [bytes(p) for p in pk]


@needs_tshark
def test_the_dissector_gives_tshark_s_fields_frame_by_frame(tmp_path):
    edge = tmp_path / "edge.pcap"
    frames = edge_capture(edge)
    cut = tmp_path / "snap70.pcap"  # every frame cut at 70 bytes: tshark keeps the fields it has bytes for
    with open(cut, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 70, 1))
        for i, b in enumerate(frames):
            f.write(struct.pack("<IIII", 1_700_000_000 + i, 123456789, min(70, len(b)), len(b)) + b[:70])
    compared = 0
    for capture in [*sorted(CAPTURES.glob("*.pcapng")), edge, cut]:
        tshark = [f for _, _, f in read_fields(capture, jobs=1)]
        mine = [fields_of(fr, lt, orig, ns) for _, ns, orig, lt, fr in Reader(capture)]
        assert len(mine) == len(tshark)
        for n, (a, b) in enumerate(zip(tshark, mine), 1):
            for i, (name, _) in enumerate(FIELDS):
                if name in UNREAD or (name == "dhcp_yiaddr" and capture == cut):
                    continue  # (tshark 4.0 shows yiaddr for a cut OFFER but not for a cut DISCOVER)
                x, y = (float(a[i]), float(b[i])) if name == "time" else (a[i], b[i])
                assert x == y, f"{capture.name} frame {n}: {name} is {a[i]!r} in tshark, {b[i]!r} in the dissector"
            compared += 1
    assert compared > 450


@needs_tshark
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_fast_engine_writes_the_tshark_engine_s_audit_json(name, tmp_path):
    capture = CAPTURES / f"{name}.pcapng"
    _, ref = audit_capture(capture, out=tmp_path / "tshark", engine="tshark", jobs=1)
    _, fast = audit_capture(capture, out=tmp_path / "fast", engine="fast")
    assert checks_json(fast) == checks_json(ref)
    assert fast["run"]["audit"]["packets"] == ref["run"]["audit"]["packets"]


def _pcapng(endian: str, frames, resol: int | None = None, extra_block: bool = True) -> bytes:
    """A pcapng section: two interfaces (Ethernet, then raw IP with ``resol``), an unknown block,
    Enhanced Packet Blocks alternating between them."""
    def block(btype, body):
        body += b"\0" * (-len(body) % 4)
        n = 12 + len(body)
        return struct.pack(endian + "II", btype, n) + body + struct.pack(endian + "I", n)

    out = block(0x0A0D0D0A, struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1))
    out += block(1, struct.pack(endian + "HHI", 1, 0, 0) + struct.pack(endian + "HH", 0, 0))
    opts = struct.pack(endian + "HH", 9, 1) + bytes([resol]) + b"\0\0\0" if resol is not None else b""
    out += block(1, struct.pack(endian + "HHI", 101, 0, 0) + opts + struct.pack(endian + "HH", 0, 0))
    if extra_block:
        out += block(0x0BAD, b"unknown block body")
    for i, (units, frame) in enumerate(frames):
        body = struct.pack(endian + "IIIII", i % 2, units >> 32, units & 0xFFFFFFFF, len(frame), len(frame)) + frame
        out += block(6, body)
    return out


@pytest.mark.parametrize("endian", ["<", ">"])
def test_the_reader_handles_pcapng_sections_interfaces_and_resolutions(endian, tmp_path):
    eth = bytes.fromhex("020000000001 0200000000aa 86dd".replace(" ", "")) + bytes(40)
    raw = bytes.fromhex("60000000000011ff") + bytes(32)
    frames = [(1_700_000_000_123_456, eth), (1_700_000_000_123_456_789, raw)]
    cap = tmp_path / "two.pcapng"
    cap.write_bytes(_pcapng(endian, frames, resol=9) + _pcapng("<" if endian == ">" else ">", frames, resol=9))
    got = list(Reader(cap))
    assert [(lt, fr) for _, _, _, lt, fr in got] == [(1, eth), (101, raw)] * 2
    assert [ns for _, ns, _, _, _ in got] == [1_700_000_000_123_456_000, 1_700_000_000_123_456_789] * 2
    f = fields_of(got[1][4], 101, len(raw), got[1][1])
    assert f[0] == "1700000000.123456789" and f[FIELDS.index(("hlim", "ipv6.hlim"))] == "255"


@pytest.mark.parametrize("magic,nano", [(0xA1B2C3D4, False), (0xA1B23C4D, True)])
@pytest.mark.parametrize("endian", ["<", ">"])
def test_the_reader_handles_pcap_byte_orders_and_resolutions(magic, nano, endian, tmp_path):
    cap = tmp_path / "x.pcap"
    frame = bytes(60)
    with open(cap, "wb") as f:
        f.write(struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, 65535, 1))
        f.write(struct.pack(endian + "IIII", 1_700_000_000, 999_999_999 if nano else 999_999, 60, 1500) + frame)
    ((off, ns, orig, lt, fr),) = list(Reader(cap))
    assert (off, orig, lt, fr) == (24, 1500, 1, frame)
    assert ns == 1_700_000_000_999_999_999 if nano else ns == 1_700_000_000_999_999_000


@pytest.mark.parametrize("cut,message", [(-5, "truncated capture"), (30, "truncated capture")])
def test_a_cut_pcapng_is_a_usage_error_after_the_frames_before_it(cut, message, tmp_path):
    frames = [(1_700_000_000_000_000, bytes(60))] * 3
    data = _pcapng("<", frames)
    cap = tmp_path / "cut.pcapng"
    cap.write_bytes(data[:cut] if cut < 0 else data[:len(data) - 64 - cut])
    with pytest.raises(UsageError, match=message):
        list(Reader(cap))


def test_progress_shows_on_a_terminal_only():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    quiet = io.StringIO()
    p = Progress(10_000_000, stream=quiet)
    p.update(1000, 5_000_000, final=True)
    assert quiet.getvalue() == ""
    tty = Tty()
    p = Progress(10_000_000, stream=tty)
    p.t0 -= 2.0
    p.update(200_000, 5_000_000, final=True)
    line = tty.getvalue()
    assert "200,000 frames" in line and "5/10 MB (50%)" in line and "frames/s" in line and "ETA 2 s" in line


def test_progress_finishes_only_a_read_it_showed_or_that_outlasted_an_interval():
    out = io.StringIO()
    p = Progress(10_000_000, stream=out, force=True, every=60.0)
    p.update(10, 1_000)
    p.finish(20, 2_000)
    assert out.getvalue() == "", "a quick read leaves the terminal alone"
    p.t0 -= 61.0
    p.finish(30, 3_000)
    assert "30 frames" in out.getvalue() and out.getvalue().endswith("\n")
