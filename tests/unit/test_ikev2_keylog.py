"""The Wireshark decryption tables written next to a check's pcap: tshark
really opens the SK payloads and the ESP packets of an exchange between two
of the tester's IKEv2 ends with them, and the charon log parser takes the
keys out of a strongSwan level-4 log."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from scapy.layers.inet import UDP
from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import wrpcap

from v6gate.net.ikev2 import keylog, proposals
from v6gate.net.ikev2.const import Proto
from v6gate.net.ikev2.peer import Config, IkePeer
from v6gate.net.ikev2.traffic import EspPair

A, B = "2001:db8:1::a", "2001:db8:1::b"


def _frame(src, dst, data):
    return Ether(src="02:00:00:00:00:0a", dst="02:00:00:00:00:0b") / IPv6(src=src, dst=dst) / UDP(
        sport=500, dport=500) / Raw(data)


@pytest.mark.skipif(not shutil.which("tshark"), reason="tshark is not installed")
@pytest.mark.parametrize(("ike", "esp"), [("aes128-sha256-modp2048", "aes128-sha256"),
                                          ("aes256gcm16-prfsha256-ecp256", "aes128gcm16")])
def test_tshark_opens_the_exchange_with_the_tables(tmp_path, ike, esp):
    i = IkePeer(Config(A, B, [proposals.parse(ike)], [proposals.parse(esp, Proto.ESP)], psk=b"k"))
    r = IkePeer(Config(B, A, [proposals.parse(ike)], [proposals.parse(esp, Proto.ESP)], psk=b"k"))
    frames = []
    req = i.sa_init()
    resp, _ = r.answer_sa_init(req)
    i.take_sa_init(resp)
    auth = i.auth()
    auth_resp, _ = r.answer_auth(auth)
    i.take_auth(auth_resp)
    frames += [_frame(A, B, req), _frame(B, A, resp), _frame(A, B, auth), _frame(B, A, auth_resp)]
    child = i.children[0]
    inner = IPv6(src=A, dst=B) / ICMPv6EchoRequest(id=0x77, seq=1, data=b"decrypted by wireshark")
    frames.append(Ether(src="02:00:00:00:00:0a", dst="02:00:00:00:00:0b") / EspPair(child, A, B).protect(inner))
    pcap = tmp_path / "check.pcapng"
    wrpcap(str(pcap), frames)
    written = keylog.write(pcap, [keylog.ike_record(i.ike)], keylog.esp_records(child, A, B))
    assert [p.suffix for p in written] == [".ikev2_decryption_table", ".esp_sa"]
    cmd = keylog.wireshark_command(pcap)
    out = subprocess.run(cmd + " -V", shell=True, capture_output=True, text=True, timeout=60).stdout
    assert "Identification - Initiator" in out and "Traffic Selector - Initiator" in out, out[-2000:]  # SK opened
    assert "Echo (ping) request" in out, out[-2000:]  # the ESP packet opened: its ICMPv6 is dissected


def test_the_charon_log_parser_takes_each_derivation():
    log = "\n".join([
        "1 12[IKE] Sk_d secret => 4 bytes @ 0x1", "1 12[IKE]    0: 01 02 03 04                                      ....",
        "1 12[IKE] Sk_ai secret => 2 bytes @ 0x1", "1 12[IKE]    0: AA BB                                            ..",
        "1 12[IKE] PSK secret => 3 bytes @ 0x1", "1 12[IKE]    0: 70 73 6B                                         psk",
        "1 12[CHD] encryption initiator key => 2 bytes @ 0x1", "1 12[CHD]    0: 0E 0F                     ..",
        "1 12[CHD] encryption responder key => 2 bytes @ 0x1", "1 12[CHD]    0: 10 11                     ..",
    ])
    blocks = keylog.charon_key_blocks(log)
    assert [b["_kind"] for b in blocks] == ["ike", "child"]
    assert blocks[0]["Sk_d"] == bytes([1, 2, 3, 4]) and blocks[0]["Sk_ai"] == b"\xaa\xbb"
    assert "PSK" not in str(blocks)  # only SA keys are taken, never the pre-shared key's dump
    assert blocks[1] == {"_kind": "child", "encryption initiator": b"\x0e\x0f", "encryption responder": b"\x10\x11"}
