"""The IKEv2 codec: what it writes is what RFC 7296 §3 draws, what it reads is
bounded (every malformed length is a one-line IkeParseError, never an
IndexError), and proposal strings read as strongSwan reads them."""

from __future__ import annotations

import random
import struct

import pytest

from v6gate.net.ikev2 import codec, proposals
from v6gate.net.ikev2.codec import KE, SA, TS, IkeParseError, Message, Nonce, Notification, Selector
from v6gate.net.ikev2.const import TT, Encr, Exchange, Flag, Group, Integ, Notify, Prf, Proto


def _init_request() -> Message:
    return Message(b"\x01" * 8, b"\0" * 8, Exchange.IKE_SA_INIT, Flag.INITIATOR, 0,
                   [SA([proposals.parse("aes128-sha256-modp2048")]), KE(Group.MODP_2048, b"\x02" * 256),
                    Nonce(b"\x03" * 32), Notification(Notify.NAT_DETECTION_SOURCE_IP, b"\x04" * 20)])


def test_header_and_chain_as_rfc7296_draws_them():
    raw = _init_request().encode()
    _spi_i, _spi_r, first, version, exch, flags, mid, length = struct.unpack_from("!8s8sBBBBII", raw)
    assert (first, version, exch, flags, mid, length) == (33, 0x20, 34, 0x08, 0, len(raw))
    # the SA payload's generic header names KE next; its proposal is "last" with 4 transforms
    nxt, crit, _plen = struct.unpack_from("!BBH", raw, 28)
    assert (nxt, crit) == (34, 0)
    last, _, _, num, proto, spi_size, ntrans = struct.unpack_from("!BBHBBBB", raw, 32)
    assert (last, num, proto, spi_size, ntrans) == (0, 1, 1, 0, 4)
    # the first transform: ENCR AES-CBC with a TV Key Length attribute of 128 (type 14 with the AF bit)
    more, _, tlen, ttype, _, tid, attr, val = struct.unpack_from("!BBHBBHHH", raw, 40)
    assert (more, tlen, ttype, tid, attr, val) == (3, 12, 1, 12, 0x800E, 128)


def test_decode_round_trips():
    m = _init_request()
    d = Message.decode(m.encode())
    assert d.exchange == Exchange.IKE_SA_INIT and not d.is_response and d.from_initiator
    assert d.get(SA).proposals[0].label() == "AES_CBC-128/HMAC_SHA2_256/HMAC_SHA2_256_128/MODP_2048"
    assert d.get(KE).group == Group.MODP_2048 and len(d.get(KE).data) == 256
    assert d.notify(Notify.NAT_DETECTION_SOURCE_IP).data == b"\x04" * 20
    assert d.label() == "IKE_SA_INIT request #0 [SA KE No N(NAT_DETECTION_SOURCE_IP)]"


def test_traffic_selectors_round_trip_ipv6_and_ipv4():
    ts = TS(True, [Selector.of("2001:db8:1::5"), Selector("198.18.0.1", "198.18.0.9", 17, 500, 500)])
    m = Message(b"\1" * 8, b"\2" * 8, Exchange.IKE_AUTH, 0, 1, [ts])
    got = Message.decode(m.encode()).get(TS)
    assert [s.ts_type for s in got.selectors] == [8, 7]
    assert got.selectors[0].label() == "2001:db8:1::5/128"
    assert got.selectors[1].label() == "198.18.0.1-198.18.0.9 proto 17 ports 500-500"


@pytest.mark.parametrize(("cut", "why"), [
    (lambda b: b[:20], "shorter than the 28-octet"),
    (lambda b: b[:24] + struct.pack("!I", 30) + b[28:30], "header cut short"),
    (lambda b: b[:-1], "Length"),
])
def test_malformed_lengths_are_one_line_errors(cut, why):
    with pytest.raises(IkeParseError, match=why):
        Message.decode(cut(_init_request().encode()))


def test_a_payload_claiming_more_than_is_left_is_refused():
    raw = bytearray(_init_request().encode())
    struct.pack_into("!H", raw, 30, 5000)  # the SA payload's length
    with pytest.raises(IkeParseError, match="does not fit"):
        Message.decode(bytes(raw))


def test_random_mutations_never_raise_anything_but_parse_errors():
    base = _init_request().encode()
    rng = random.Random(7)
    for _ in range(3000):
        b = bytearray(base)
        for _ in range(rng.randint(1, 6)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        if rng.random() < 0.3:
            b = b[:rng.randrange(len(b))]
        try:
            Message.decode(bytes(b))
        except IkeParseError:
            pass


def test_an_sk_payload_must_be_last():
    m = Message(b"\1" * 8, b"\2" * 8, Exchange.IKE_AUTH, 0, 1, [codec.SK(35, b"\0" * 48)])
    raw = m.encode() + b"\0\0\0\4"
    raw = raw[:24] + struct.pack("!I", len(raw)) + raw[28:]
    with pytest.raises(IkeParseError, match="must be last"):
        Message.decode(raw)


def test_peek_header_and_the_non_esp_marker():
    raw = _init_request().encode()
    assert codec.peek_header(raw)[2:] == (Exchange.IKE_SA_INIT, Flag.INITIATOR, 0)
    assert codec.peek_header(b"\x01" * 10) is None
    assert codec.strip_non_esp_marker(b"\0\0\0\0" + raw) == raw
    assert codec.strip_non_esp_marker(b"\x12\x34\x56\x78" + raw) is None


@pytest.mark.parametrize(("text", "proto", "want"), [
    ("aes128-sha256-modp2048", Proto.IKE, [(TT.ENCR, Encr.AES_CBC, 128), (TT.PRF, Prf.HMAC_SHA2_256, None),
                                          (TT.INTEG, Integ.HMAC_SHA2_256_128, None), (TT.DH, Group.MODP_2048, None)]),
    ("aes256gcm16-prfsha384-ecp256-x25519", Proto.IKE, [(TT.ENCR, Encr.AES_GCM_16, 256),
                                                       (TT.PRF, Prf.HMAC_SHA2_384, None), (TT.DH, Group.ECP_256, None),
                                                       (TT.DH, Group.CURVE25519, None)]),
    ("3des-sha1-modp1024", Proto.IKE, [(TT.ENCR, Encr.TRIPLE_DES, None), (TT.PRF, Prf.HMAC_SHA1, None),
                                      (TT.INTEG, Integ.HMAC_SHA1_96, None), (TT.DH, Group.MODP_1024, None)]),
    ("aes128gcm16", Proto.ESP, [(TT.ENCR, Encr.AES_GCM_16, 128), (TT.ESN, 0, None)]),
    ("aes128-sha256-esn", Proto.ESP, [(TT.ENCR, Encr.AES_CBC, 128), (TT.INTEG, Integ.HMAC_SHA2_256_128, None),
                                      (TT.ESN, 1, None)]),
])
def test_proposal_strings_read_as_strongswan_reads_them(text, proto, want):
    p = proposals.parse(text, proto)
    assert [(t.type, t.id, t.key_length) for t in p.transforms] == want


@pytest.mark.parametrize(("text", "proto", "why"), [
    ("aes128-sha257-modp2048", Proto.IKE, "sha257"), ("aes128-sha256", Proto.IKE, "Diffie-Hellman"),
    ("aes128-modp2048", Proto.IKE, "integrity"), ("aes128-prfsha256", Proto.ESP, "PRF"),
    ("sha256-modp2048", Proto.IKE, "encryption"),
])
def test_bad_proposal_strings_say_which_word(text, proto, why):
    with pytest.raises(proposals.ProposalError, match=why):
        proposals.parse(text, proto)


def test_a_responder_chooses_in_the_offerers_order_and_refuses_what_it_lacks():
    offered = [proposals.parse("3des-sha1-modp1024", num=1), proposals.parse("aes128-sha256-ecp256-modp2048", num=2)]
    mine = [proposals.parse("aes128-aes256-sha256-modp2048-ecp256")]
    c = proposals.choose(offered, mine)
    assert (c.num, c.encr, c.key_bits, c.group) == (2, Encr.AES_CBC, 128, Group.ECP_256)
    assert proposals.choose(offered[:1], mine) is None
    assert proposals.text(c.proposal()) == "aes128-prfsha256-sha256-ecp256"
