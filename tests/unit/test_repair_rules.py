"""The repair rules (lab/repair_rules/*): what each hands the DUT's kernel,
checked on the messages the checks really send (pure logic, no lab)."""

import ipaddress
import struct

import pytest
from scapy.layers.inet6 import (
    ICMPv6EchoRequest,
    ICMPv6MLReport,
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6ND_RA,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
)

from v6gate.lab.faults import load_faults
from v6gate.lab.repair import DROP, RULES, _load_rules
from v6gate.lab.repair_rules import nd as R
from v6gate.lab.repair_rules.addr import echo_source_swap
from v6gate.lab.repair_rules.mld import mld_query_as_v2, mld_query_delay, mld_report_wrong
from v6gate.net import packets as P
from v6gate.net.dad import DAD_NA_VARIANTS, DAD_NS_VARIANTS, dad_na, dad_ns
from v6gate.net.dns import dnssl_option, rdnss_option
from v6gate.net.mld import mld_query
from v6gate.net.nd import prefix_option, router_advertisement
from v6gate.net.nodes import EmulatedNode
from v6gate.net.rd import INVALID_RA, advertised_prefixes, fragmented, invalid_ra

DUT = {"mac": "02:00:00:00:00:02", "link_local": "fe80::ff:fe00:2", "addresses": []}
PREFIX = ipaddress.IPv6Network("2001:db8:77:1::/64")


def _ip(frame) -> bytes:
    return bytes(frame[IPv6]) if not isinstance(frame, bytes) else frame[14:]


def _icmp_ok(packet: bytes) -> IPv6:
    """The packet parses, its ICMPv6 checksum is right, and its length matches."""
    pkt = IPv6(packet)
    nh, off = packet[6], 40
    while nh != 58:
        nh, off = packet[off], off + (packet[off + 1] + 1) * 8
    icmp = bytearray(packet[off:])
    stored = struct.unpack("!H", icmp[2:4])[0]
    icmp[2:4] = b"\0\0"
    assert R._checksum(packet[8:24], packet[24:40], bytes(icmp)) == stored
    assert struct.unpack("!H", packet[4:6])[0] == len(packet) - 40
    return pkt


def _options(packet: bytes) -> list[tuple[int, int]]:
    """(type, length in octets) of an RA's options."""
    out, off = [], 56
    while off + 2 <= len(packet):
        out.append((packet[off], packet[off + 1] * 8))
        off += packet[off + 1] * 8 or len(packet)
    return out


def _router():
    return EmulatedNode.fresh("TR1", router=True)


@pytest.mark.parametrize("how", INVALID_RA)
def test_nd_validity_makes_every_invalid_ra_valid(how):
    ra = invalid_ra(_router(), how, router_lifetime=600, cur_hop_limit=77,
                    prefixes=[prefix_option(PREFIX, valid=600, preferred=600)])
    out = R.nd_validity(_ip(ra), DUT, types=[134])
    pkt = _icmp_ok(out)
    assert pkt.hlim == 255 and ipaddress.IPv6Address(pkt.src).is_link_local
    assert pkt[ICMPv6ND_RA].code == 0 and pkt[ICMPv6ND_RA].chlim == 77
    assert all(length for _type, length in _options(out))


def test_nd_validity_leaves_other_types_alone():
    ra = invalid_ra(_router(), "hop_limit_254", router_lifetime=600)
    assert R.nd_validity(_ip(ra), DUT, types=[135]) is None


def test_nd_validity_reassembles_fragments():
    ra = router_advertisement(_router(), router_lifetime=600, prefixes=[prefix_option(PREFIX)])
    atomic = fragmented(ra, atomic=True)
    assert len(atomic) == 1
    whole = _icmp_ok(R.nd_validity(_ip(atomic[0]), DUT, types=[134]))
    assert ICMPv6ND_RA in whole and whole.nh == 58
    pieces = fragmented(ra, atomic=False)
    assert len(pieces) >= 2
    outs = [R.nd_validity(_ip(p), DUT, types=[134]) for p in pieces]
    assert all(o == DROP for o in outs[:-1])
    assert bytes(_icmp_ok(outs[-1])[ICMPv6ND_RA]) == bytes(IPv6(bytes(ra[IPv6]))[ICMPv6ND_RA])


@pytest.mark.parametrize("how", [h for h in DAD_NS_VARIANTS if h not in ("valid", "reserved_set", "with_tllao")])
def test_nd_validity_turns_invalid_dad_ns_into_a_probe_for_the_dut(how):
    R._learn(_ip(router_advertisement(_router(), prefixes=[prefix_option(PREFIX)])))
    tentative = P.address_in(PREFIX, P.eui64_iid(DUT["mac"]))
    out = R.nd_validity(_ip(dad_ns(EmulatedNode.fresh("TN1"), tentative, DUT["mac"], how)), DUT, types=[135])
    pkt = _icmp_ok(out)
    assert pkt.src == "::" and pkt.hlim == 255 and pkt[ICMPv6ND_NS].code == 0
    assert P.same_address(pkt[ICMPv6ND_NS].tgt, tentative)
    assert P.same_address(pkt.dst, P.solicited_node(tentative))
    assert ICMPv6NDOptSrcLLAddr not in pkt


@pytest.mark.parametrize("how", [h for h in DAD_NA_VARIANTS if h not in ("valid", "reserved_set", "with_sllao")])
def test_nd_validity_turns_invalid_dad_na_into_a_defence(how):
    R._learn(_ip(router_advertisement(_router(), prefixes=[prefix_option(PREFIX)])))
    tentative = P.address_in(PREFIX, P.eui64_iid(DUT["mac"]))
    out = R.nd_validity(_ip(dad_na(EmulatedNode.fresh("TN1"), tentative, how)), DUT, types=[136])
    pkt = _icmp_ok(out)
    assert pkt.hlim == 255 and pkt[ICMPv6ND_NA].S == 0 and pkt[ICMPv6ND_NA].code == 0
    assert P.same_address(pkt[ICMPv6ND_NA].tgt, tentative)


def test_short_dad_message_carries_the_rest_of_the_target_as_padding():
    tentative = P.address_in(PREFIX, P.eui64_iid(DUT["mac"]))
    frame = dad_ns(EmulatedNode.fresh("TN1"), tentative, DUT["mac"], "short_length")
    assert isinstance(frame, bytes)
    ip = IPv6(frame[14:])
    assert ip.plen == 20 and frame[-4:] == ipaddress.IPv6Address(tentative).packed[-4:]


def test_dad_target_is_ours_rewrites_another_identifier_to_the_duts():
    other = P.address_in(PREFIX, 0x1234)
    out = R.dad_target_is_ours(_ip(dad_ns(EmulatedNode.fresh("TN1"), other, DUT["mac"])), DUT)
    pkt = _icmp_ok(out)
    assert P.same_address(pkt[ICMPv6ND_NS].tgt, P.address_in(PREFIX, P.eui64_iid(DUT["mac"])))


def test_ns_is_dad_only_for_the_duts_addresses():
    tn1 = EmulatedNode.fresh("TN1")
    R._learn(_ip(router_advertisement(_router(), prefixes=[prefix_option(PREFIX)])))
    mine = P.address_in(PREFIX, P.eui64_iid(DUT["mac"]))
    from v6gate.net.nd import neighbor_solicitation

    out = R.ns_is_dad(_ip(neighbor_solicitation(tn1, mine, dut_mac=DUT["mac"], src=tn1.link_local)), DUT)
    assert _icmp_ok(out).src == "::"
    other = P.address_in(PREFIX, 0x99)
    assert R.ns_is_dad(_ip(neighbor_solicitation(tn1, other, dut_mac=DUT["mac"], src=tn1.link_local)), DUT) is None


def test_pio_rewrite_each_mistake():
    def ra(**pio):
        return _ip(router_advertisement(_router(), prefixes=[prefix_option(PREFIX, **pio)]))

    def pio(packet):
        return _icmp_ok(packet)[ICMPv6ND_RA].getlayer("ICMPv6 Neighbor Discovery Option - Prefix Information")

    assert pio(R.pio_rewrite(ra(autonomous=0), DUT, autonomous=1)).A == 1
    assert pio(R.pio_rewrite(ra(length=120), DUT, prefix_length=64)).prefixlen == 64
    clamped = pio(R.pio_rewrite(ra(valid=20, preferred=40), DUT, clamp_preferred=True))
    assert clamped.preferredlifetime == 20
    assert pio(R.pio_rewrite(ra(valid=0, preferred=0), DUT, valid_if_zero=600)).validlifetime == 600
    assert pio(R.pio_rewrite(ra(valid=0xFFFFFFFF, preferred=0xFFFFFFFF), DUT, infinite_as=0)).validlifetime == 0
    assert pio(R.pio_rewrite(ra(valid=4, preferred=4), DUT, min_valid=0xFFFFFFFF)).validlifetime == 0xFFFFFFFF
    two = _ip(router_advertisement(_router(), prefixes=[prefix_option(PREFIX), prefix_option("2001:db8:77:2::/64")]))
    assert advertised_prefixes(IPv6(R.pio_rewrite(two, DUT, first_only=True))) == [PREFIX]
    net = ipaddress.IPv6Network("2001:db8:77:3::/64")
    first = _ip(router_advertisement(_router(), prefixes=[prefix_option(net, valid=3, preferred=3)]))
    assert R.pio_rewrite(first, DUT, no_extension=True) is None
    assert pio(R.pio_rewrite(first, DUT, no_extension=True)).validlifetime == 0


def test_router_lifetime_floor_and_hop_limit_default():
    ra = _ip(router_advertisement(_router(), router_lifetime=0, cur_hop_limit=0))
    assert _icmp_ok(R.ra_router_lifetime_floor(ra, DUT, floor=1800))[ICMPv6ND_RA].routerlifetime == 1800
    assert _icmp_ok(R.ra_cur_hop_limit_default(ra, DUT))[ICMPv6ND_RA].chlim == 64
    long = _ip(router_advertisement(_router(), router_lifetime=9000))
    assert R.ra_router_lifetime_floor(long, DUT, floor=1800) is None


def test_l0_is_read_as_a_withdrawal():
    ra = _ip(router_advertisement(_router(), prefixes=[prefix_option(PREFIX, on_link=0)]))
    pkt = _icmp_ok(R.ra_l0_means_offlink(ra, DUT))
    opt = pkt.getlayer("ICMPv6 Neighbor Discovery Option - Prefix Information")
    assert opt.L == 1 and opt.validlifetime == 0


def test_sticky_lladdr_keeps_the_first_address():
    tr = _router()
    first = router_advertisement(tr)
    assert R.ra_sllao_sticky(_ip(first), DUT) is None
    moved = router_advertisement(tr)
    moved[ICMPv6NDOptSrcLLAddr].lladdr = P.random_mac()
    assert _icmp_ok(R.ra_sllao_sticky(_ip(moved), DUT))[ICMPv6NDOptSrcLLAddr].lladdr == tr.mac


def test_ra_dns_options_strip_and_lifetime():
    dns = "2001:db8:77:1::53"
    ra = _ip(router_advertisement(_router(), options=[rdnss_option([dns], 4), dnssl_option(["v6g.example"], 4)]))
    stripped = R.ra_dns_options(ra, DUT, strip=[25])
    _icmp_ok(stripped)
    assert [t for t, _ in _options(stripped)] == [t for t, _ in _options(ra) if t != 25]
    forever = _icmp_ok(R.ra_dns_options(ra, DUT, lifetime=0xFFFFFFFF))
    assert forever.getlayer("ICMPv6 Neighbor Discovery Option - Recursive DNS Server Option").lifetime == 0xFFFFFFFF


@pytest.mark.parametrize("field", ["hop_limit", "source", "destination", "router_alert", "reserved",
                                   "max_resp_delay"])
def test_mld_report_wrong_changes_one_field_of_a_v1_report(field):
    from v6gate.net.mld import judge_common, mld_report_v1

    report = _ip(mld_report_v1(EmulatedNode.fresh("DUT"), "ff02::1:ff00:2"))
    pkt = _icmp_ok(mld_report_wrong(report, DUT, field=field))
    if field in ("hop_limit", "source", "router_alert"):
        assert judge_common(pkt)
    elif field == "destination":
        assert pkt.dst == "ff02::1"
    elif field == "reserved":
        assert pkt[ICMPv6MLReport].reserved
    else:
        assert pkt[ICMPv6MLReport].mrd == 1000


def test_mld_query_rules():
    q = _ip(mld_query(_router(), version=1, mrd_ms=1000))
    assert struct.unpack("!H", mld_query_delay(q, DUT, factor=10)[52:54])[0] == 10000
    assert struct.unpack("!H", mld_query_delay(q, DUT, floor_ms=10000)[52:54])[0] == 10000
    zero = _ip(mld_query(_router(), version=1, mrd_ms=0))
    assert mld_query_delay(zero, DUT, floor_ms=10000, keep_zero=True) is None  # "at once" stays at once
    assert struct.unpack("!H", mld_query_delay(zero, DUT, floor_ms=10000)[52:54])[0] == 10000
    assert struct.unpack("!H", mld_query_delay(q, DUT, floor_ms=10000, keep_zero=True)[52:54])[0] == 10000
    v2 = mld_query_as_v2(q, DUT)
    assert len(v2) == len(q) + 4 and struct.unpack("!H", v2[4:6])[0] == len(v2) - 40


def test_echo_source_swap():
    dut = dict(DUT)
    ll, g1, g2 = "fe80::ff:fe00:2", P.address_in(PREFIX, 2), P.address_in("2001:db8:77:9::/64", 2)
    for target in (g1, g2):  # the DUT's DAD probes teach the rule its addresses
        echo_source_swap(_ip(dad_ns(EmulatedNode.fresh("X"), target, DUT["mac"])), dut)
    req = IPv6(src=g1, dst="2001:db8:99::1") / ICMPv6EchoRequest(id=1, seq=1)
    assert _icmp_ok(echo_source_swap(bytes(req), dut, to="link_local")).src == ll
    assert _icmp_ok(echo_source_swap(bytes(req), dut, to="other_global")).src == g2


def test_every_repair_rule_named_by_a_fault_exists():
    _load_rules()
    for f in load_faults().values():
        if f.repair:
            assert f.repair["rule"] in RULES, f"{f.name}: unknown repair rule {f.repair['rule']}"
            assert f.repair.get("direction", "in") in ("in", "out", "both"), f"{f.name}: repair direction in, out or both"
