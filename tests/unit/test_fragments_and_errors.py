"""Pure logic of the IPv6 header, fragmentation and ICMPv6-error helpers
(net/exthdr.py, net/frag.py, net/icmperr.py): offsets, per-fragment parts,
reassembly, and the judging of ICMPv6 errors, against hand-built packets."""

import struct

import pytest
from scapy.layers.inet6 import ICMPv6EchoRequest, ICMPv6ParamProblem, IPv6, IPv6ExtHdrFragment
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from v6gate.net import exthdr as X
from v6gate.net import frag as F
from v6gate.net import icmperr

TN, DUT = "fe80::1", "fe80::2"


def echo(n=80):
    return Ether(src="02:76:00:00:00:01", dst="02:00:00:00:00:02") / IPv6(src=TN, dst=DUT) / ICMPv6EchoRequest(
        id=7, seq=1, data=bytes(i % 251 for i in range(n)))


def test_fragments_reassemble_to_the_original_payload():
    pkt = echo()
    frags = F.fragment(pkt, [32, 64], ident=0x1234)
    assert [f[IPv6ExtHdrFragment].offset * 8 for f in frags] == [0, 32, 64]
    assert [f[IPv6ExtHdrFragment].m for f in frags] == [1, 1, 0]
    assert all(f[IPv6ExtHdrFragment].id == 0x1234 for f in frags)
    assert F.reassemble(frags[::-1]) == F.fragmentable_part(pkt)
    assert F.reassemble(frags[:2]) is None  # no last fragment
    assert F.reassemble([frags[0], frags[2]]) is None  # a hole


def test_fragment_offsets_must_be_multiples_of_8():
    with pytest.raises(ValueError):
        F.fragment(echo(), [30])


def test_per_fragment_part_follows_rfc8200():
    plain = bytes(echo()[IPv6])
    assert F.per_fragment_length(plain) == 40
    hbh = IPv6(src=TN, dst=DUT) / X.hop_by_hop(X.padn(6)) / ICMPv6EchoRequest()
    assert F.per_fragment_length(bytes(hbh)) == 48
    rh = IPv6(src=TN, dst=DUT) / X.destination_options(X.padn(6)) / X.routing(33, 0, [TN]) / ICMPv6EchoRequest()
    assert F.per_fragment_length(bytes(rh)) == 40 + 8 + 24  # up to and including the Routing header
    dst_only = IPv6(src=TN, dst=DUT) / X.destination_options(X.padn(6)) / ICMPv6EchoRequest()
    assert F.per_fragment_length(bytes(dst_only)) == 40


def test_unfragmentable_part_can_be_chosen():
    pkt = Ether() / IPv6(src=TN, dst=DUT) / X.destination_options(X.padn(6)) / ICMPv6EchoRequest(data=b"x" * 40)
    frags = F.fragment(pkt, [16], unfragmentable=48)
    raw = bytes(frags[0][IPv6])
    assert raw[6] == X.NH_DEST_OPTS and raw[40] == X.NH_FRAGMENT and raw[48] == X.NH_ICMPV6


def test_atomic_fragment_is_recognised():
    atomic = Ether() / IPv6(src=TN, dst=DUT) / IPv6ExtHdrFragment(nh=58, offset=0, m=0, id=9) / ICMPv6EchoRequest()
    assert F.is_atomic_fragment(atomic)
    assert not F.is_atomic_fragment(F.fragment(echo(), [32])[0])


def test_option_offsets():
    pkt = IPv6(src=TN, dst=DUT) / X.destination_options(X.unknown_option(0, b"\0\0"), X.unknown_option(2, b"\0\0"))
    assert X.offset_of_option(pkt, type(pkt.payload), X.UNKNOWN_OPTION[2]) == 46
    assert X.action_of(X.UNKNOWN_OPTION[3]) == 3


def _pp(code, ptr, quote, src=DUT, dst=TN):
    return Ether() / IPv6(src=src, dst=dst) / ICMPv6ParamProblem(code=code, ptr=ptr) / Raw(quote)


def test_icmp_error_is_parsed_from_the_raw_frame():
    probe = bytes(echo()[IPv6])
    e = icmperr.parse(_pp(2, 42, probe))
    assert (e.type, e.code, e.field) == (4, 2, 42)
    assert e.quoted == probe and e.quoted_src == TN and e.quoted_dst == DUT
    assert icmperr.error_about(TN, DUT, type_=4)(_pp(2, 42, probe))
    assert not icmperr.error_about("fe80::9")(_pp(2, 42, probe))
    assert icmperr.parse(echo()) is None


def test_a_correct_error_has_no_problems():
    probe = bytes(echo()[IPv6])
    e = icmperr.parse(_pp(1, 6, probe))
    assert icmperr.problems(e, type_=4, code=1, invoking=probe, field=6) == []


def test_wrong_code_pointer_source_and_short_quote_are_reported():
    probe = bytes(echo(1400)[IPv6])
    e = icmperr.parse(_pp(0, 7, probe[:48], src="fe80::3"))
    found = " | ".join(icmperr.problems(e, type_=4, code=1, invoking=probe, field=6))
    assert "code 0" in found and "pointer 7" in found and "fe80::3" in found and "quotes 48 octets" in found


def test_pointed_octet_is_checked_in_the_quote():
    probe = bytes(echo()[IPv6])
    e = icmperr.parse(_pp(2, 40, probe))
    assert icmperr.problems(e, type_=4, code=2, invoking=probe, pointed_octet=probe[40]) == []
    assert icmperr.problems(e, type_=4, code=2, invoking=probe, pointed_octet=0x9D)


def test_oversized_error_is_reported():
    probe = bytes(echo(1400)[IPv6])
    body = struct.pack("!BBHI", 4, 0, 0, 4) + probe
    e = icmperr.IcmpError(4, 0, 4, DUT, TN, 40 + len(body), probe)
    assert any("minimum MTU" in p for p in icmperr.problems(e, type_=4, code=0, invoking=probe, field=4))
