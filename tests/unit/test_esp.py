"""The tester's ESP codec (net/esp.py) against two independent
implementations: Scapy's SecurityAssociation (both directions, every
algorithm) and Wireshark's dissector (tshark decrypts and verifies the ICV
of what we seal, given the esp_sa line we write).  The lab checks run it
against Linux's xfrm."""

import os
import shutil
import subprocess

import pytest
from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, IPv6
from scapy.layers.ipsec import ESP, SecurityAssociation
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from v6gate.net import esp as E

SRC, DST = "2001:db8:1::10", "2001:db8:1::20"
SCAPY = {"aes-gcm-16": ("AES-GCM", None), "aes-cbc": ("AES-CBC", "SHA2-256-128"), "null": ("NULL", "SHA2-256-128")}


def echo(data=b"v6gate") -> IPv6:
    return IPv6(bytes(IPv6(src=SRC, dst=DST) / ICMPv6EchoRequest(id=9, seq=3, data=data)))


def scapy_sa(sa: E.SA) -> SecurityAssociation:
    crypt, auth = SCAPY[sa.algorithm]
    return SecurityAssociation(ESP, spi=sa.spi, crypt_algo=crypt, crypt_key=sa.key or None, auth_algo=auth,
                               auth_key=sa.auth_key or None)


def sealed_packet(sa: E.SA, seq: int, inner: IPv6, **kw) -> IPv6:
    body = E.seal(sa, seq, bytes(inner.payload), inner.nh, **kw)
    return IPv6(bytes(IPv6(src=inner.src, dst=inner.dst, nh=E.ESP_PROTO) / body))


@pytest.mark.parametrize("alg", list(E.ALGORITHMS))
def test_what_we_seal_scapy_opens(alg):
    sa = E.SA.fresh(0x1234, alg)
    for size in (0, 1, 2, 13, 100, 1200):
        inner = echo(os.urandom(size))
        out = scapy_sa(sa).decrypt(sealed_packet(sa, 7, inner))
        assert bytes(out[ICMPv6EchoRequest]) == bytes(inner[ICMPv6EchoRequest])


@pytest.mark.parametrize("alg", list(E.ALGORITHMS))
def test_what_scapy_seals_we_open(alg):
    sa = E.SA.fresh(0x4321, alg)
    ssa = scapy_sa(sa)
    ssa.seq_num = 41
    for size in (0, 5, 64, 1000):
        inner = echo(os.urandom(size))
        wire = IPv6(bytes(ssa.encrypt(inner)))
        opened = E.open_esp(sa, bytes(wire.payload))
        assert (opened.spi, opened.next_header) == (0x4321, 58)
        assert opened.payload == bytes(inner.payload)
        assert opened.problems == [], opened.problems  # Scapy pads 1, 2, 3, ... as the RFC says


@pytest.mark.parametrize("alg", list(E.ALGORITHMS))
def test_default_padding_and_alignment(alg):
    sa = E.SA.fresh(0x500, alg)
    block = E.ALGORITHMS[alg].block
    for size in range(0, 40):
        esp = E.seal(sa, 1, bytes(size), 59)
        opened = E.open_esp(sa, esp)
        assert opened.padding == bytes(range(1, opened.pad_length + 1))
        assert (size + opened.pad_length + 2) % block == 0
        assert opened.pad_length < block
        assert opened.problems == []


def test_rejections_say_why():
    sa = E.SA.fresh(0x600, "aes-gcm-16")
    esp = bytearray(E.seal(sa, 5, b"payload", 58))
    with pytest.raises(E.EspError, match="SPI 0x600, not the SA's 0x601"):
        E.open_esp(E.SA(0x601, "aes-gcm-16", sa.key), bytes(esp))
    bad = bytes(esp[:-1]) + bytes([esp[-1] ^ 1])
    with pytest.raises(E.EspError, match="ICV does not verify"):
        E.open_esp(sa, bad)
    with pytest.raises(E.EspError, match="too short"):
        E.open_esp(sa, bytes(esp[:20]))
    with pytest.raises(E.EspError, match="shorter than the ESP header"):
        E.open_esp(sa, bytes(esp[:6]))
    hm = E.SA.fresh(0x700, "null")
    esp = bytearray(E.seal(hm, 1, b"abc", 58))
    esp[9] ^= 0x80  # a payload bit: the HMAC no longer verifies
    with pytest.raises(E.EspError, match="HMAC"):
        E.open_esp(hm, bytes(esp))


def test_padding_that_is_not_the_default_is_a_problem_not_an_error():
    sa = E.SA.fresh(0x800, "null")
    opened = E.open_esp(sa, E.seal(sa, 1, b"abcd", 58, padding=b"\0\0"))
    assert opened.payload == b"abcd" and opened.pad_length == 2
    assert opened.problems and "not the default" in opened.problems[0]


def test_pad_length_beyond_the_payload_is_an_error():
    sa = E.SA.fresh(0x900, "null")
    body = E.seal(sa, 1, b"", 58, padding=b"\x01\x02")
    plain = bytearray(body[8:-16])
    plain[-2] = 9  # claims 9 bytes of padding in a 4-byte trailer
    raw = body[:8] + bytes(plain)
    with pytest.raises(E.EspError, match="Pad Length 9"):
        E.open_esp(sa, raw + E._icv(sa, raw))


def test_sa_parameters_are_validated():
    with pytest.raises(ValueError, match="key is 16 bytes, not 20"):
        E.SA(0x1000, "aes-gcm-16", bytes(16))
    with pytest.raises(ValueError, match="integrity key"):
        E.SA(0x1000, "aes-cbc", bytes(16), bytes(20))
    with pytest.raises(ValueError, match="reserved"):
        E.SA(7, "null", b"", bytes(32))
    with pytest.raises(ValueError, match="unknown ESP algorithm"):
        E.SA(0x1000, "3des", bytes(24))


@pytest.mark.skipif(not shutil.which("tshark"), reason="tshark not installed")
def test_wireshark_decrypts_and_verifies_what_we_seal(tmp_path):
    frames, lines = [], []
    for i, alg in enumerate(E.ALGORITHMS):
        sa = E.SA.fresh(0x2000 + i, alg)
        inner = IPv6(bytes(IPv6(src=SRC, dst=DST) / ICMPv6EchoReply(id=0x77, seq=i + 1, data=alg.encode())))
        frames.append(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / sealed_packet(sa, i + 1, inner))
        lines.append(E.wireshark_sa(sa, SRC, DST))
    wrpcap(str(tmp_path / "esp.pcap"), frames)
    conf = tmp_path / "wireshark"
    conf.mkdir()
    (conf / "esp_sa").write_text("\n".join(lines) + "\n")
    cp = subprocess.run(["tshark", "-n", "-o", "esp.enable_encryption_decode:TRUE", "-o",
                         "esp.enable_authentication_check:TRUE", "-r", str(tmp_path / "esp.pcap"), "-V"],
                        capture_output=True, text=True, env={**os.environ, "WIRESHARK_CONFIG_DIR": str(conf)}, timeout=60)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.count("Echo (ping) reply") == 3, cp.stdout[-2000:]
    icvs = [ln for ln in cp.stdout.splitlines() if "ESP ICV" in ln]
    assert len(icvs) == 3 and all("[correct]" in ln for ln in icvs), icvs


@pytest.mark.parametrize("alg", list(E.ALGORITHMS))
def test_peek_reads_the_plaintext_whatever_the_icv(alg):
    sa = E.SA.fresh(0xA00, alg)
    esp = bytearray(E.seal(sa, 1, b"0123456789abcdef" * 2, 58))
    esp[-1] ^= 0xFF  # the ICV no longer verifies
    assert E.peek(sa, bytes(esp)).startswith(b"0123456789abcdef" * 2)


@pytest.mark.skipif(not shutil.which("tshark"), reason="tshark not installed")
def test_the_reports_dissection_shows_the_packet_inside_the_esp(tmp_path):
    from v6gate.report.dissect import decryption_args, dissect

    sa = E.SA.fresh(0x3000, "aes-gcm-16")
    inner = IPv6(bytes(IPv6(src=SRC, dst=DST) / ICMPv6EchoReply(id=0x99, seq=5, data=b"inner")))
    pcap = tmp_path / "x.pcapng"
    wrpcap(str(pcap), [Ether(src="02:00:00:00:00:05", dst="02:00:00:00:00:01") / sealed_packet(sa, 1, inner)])
    assert decryption_args(str(pcap)) == []
    (tmp_path / "x.esp_sa").write_text(E.wireshark_sa(sa, SRC, DST) + "\n")
    args = decryption_args(str(pcap))
    assert "esp.enable_encryption_decode:TRUE" in args and any(a.startswith("uat:esp_sa:") for a in args)
    got = dissect(str(pcap), dut_mac="02:00:00:00:00:05", area="ipsec")
    assert "Echo (ping) reply" in got["frames"][0]["summary"], got
