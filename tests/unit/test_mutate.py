"""The one mutation table (net/mutate.py): each entry breaks exactly the one
validity test it names and keeps the rest of the message."""

import pytest
from scapy.layers.inet6 import (
    ICMPv6MLQuery,
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6ND_RA,
    ICMPv6NDOptDstLLAddr,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
    in6_chksum,
)
from scapy.layers.l2 import Ether

from v6gate.net.mutate import FIXED_PART, MUTATIONS, break_one


def _ns():
    return (Ether(src="02:00:00:00:00:aa", dst="02:00:00:00:00:02") / IPv6(src="fe80::aa", dst="fe80::2", hlim=255)
            / ICMPv6ND_NS(tgt="fe80::2") / ICMPv6NDOptSrcLLAddr(lladdr="02:00:00:00:00:aa"))


def _ra():
    return (Ether(src="02:00:00:00:00:01", dst="33:33:00:00:00:01") / IPv6(src="fe80::1", dst="ff02::1", hlim=255)
            / ICMPv6ND_RA(routerlifetime=1800) / ICMPv6NDOptSrcLLAddr(lladdr="02:00:00:00:00:01"))


def _cksum_ok(frame) -> bool:
    built = Ether(bytes(frame))
    ip = built[IPv6]
    body = bytearray(bytes(ip.payload)[:ip.plen])
    got = int.from_bytes(body[2:4], "big")
    body[2:4] = b"\0\0"
    return in6_chksum(58, ip, bytes(body)) == got


def test_each_mutation_breaks_one_test_only():
    ns = _ns()
    assert Ether(bytes(break_one(ns, ICMPv6ND_NS, "hop_limit_254")))[IPv6].hlim == 254
    assert _cksum_ok(break_one(ns, ICMPv6ND_NS, "hop_limit_254"))
    assert not _cksum_ok(break_one(ns, ICMPv6ND_NS, "bad_checksum"))
    coded = Ether(bytes(break_one(ns, ICMPv6ND_NS, "code_1")))
    assert coded[ICMPv6ND_NS].code == 1 and _cksum_ok(coded)
    assert bytes(ns) == bytes(_ns()), "the input frame is not changed"


def test_short_length_and_its_trailer():
    ns = _ns()
    body = bytes(ns[ICMPv6ND_NS])
    short = break_one(ns, ICMPv6ND_NS, "short_length", length=20)
    assert Ether(bytes(short))[IPv6].plen == 20 and _cksum_ok(short)
    trailed = bytes(break_one(ns, ICMPv6ND_NS, "short_length", length=20, trailer="rest"))
    assert trailed.endswith(body[20:]) and Ether(trailed)[IPv6].plen == 20
    four = bytes(break_one(ns, ICMPv6ND_NS, "short_length", length=20, trailer=4))
    assert four.endswith(body[20:24])
    ra = break_one(_ra(), ICMPv6ND_RA, "short_length", length=14)
    assert Ether(bytes(ra))[IPv6].plen == 14


@pytest.mark.parametrize("frame, layer", [(_ns, ICMPv6ND_NS), (_ra, ICMPv6ND_RA)])
def test_zero_length_option_is_the_first_option(frame, layer):
    out = bytes(break_one(frame(), layer, "zero_length_option"))
    icmp = out[14 + 40:]
    assert icmp[FIXED_PART[layer]] == 1 and icmp[FIXED_PART[layer] + 1] == 0
    assert _cksum_ok(break_one(frame(), layer, "zero_length_option"))


def test_na_zero_length_option_matches_the_tlla():
    na = (Ether() / IPv6(src="fe80::aa", dst="ff02::1", hlim=255) / ICMPv6ND_NA(tgt="fe80::aa", O=1)
          / ICMPv6NDOptDstLLAddr(lladdr="02:00:00:00:00:aa"))
    icmp = bytes(break_one(na, ICMPv6ND_NA, "zero_length_option"))[14 + 40:]
    assert icmp[24:26] == b"\x02\x00"


def test_unknown_mutation_is_refused():
    with pytest.raises(ValueError, match="unknown mutation"):
        break_one(_ns(), ICMPv6ND_NS, "made_up")
    assert set(MUTATIONS) == {"hop_limit_254", "bad_checksum", "code_1", "short_length", "zero_length_option"}
    assert ICMPv6MLQuery in FIXED_PART
