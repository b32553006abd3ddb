"""MLDv2 records read from a Report's bytes (net/mld.py) and the source-
filtering repair rules (lab/repair_rules/mld.py), on the messages Linux and
the checks really send (pure logic, no lab)."""

import struct

from scapy.layers.inet6 import (
    ICMPv6MLDMultAddrRec,
    ICMPv6MLReport2,
    IPv6,
    IPv6ExtHdrHopByHop,
    PadN,
    RouterAlert,
)
from scapy.layers.l2 import Ether

from v6gate.lab.repair import DROP
from v6gate.lab.repair_rules.mld import (
    mld_exclude_answer_per_table_3,
    mld_record_wrong,
    mld_report_once,
    mld_source_query_as_group_query,
)
from v6gate.net.mld import fresh_group, fresh_sources, in_ssm_range, mld_query, parse_records, v2_records
from v6gate.net.nodes import EmulatedNode

DUT = {"mac": "02:00:00:00:00:02", "link_local": "fe80::ff:fe00:2"}
SN = "ff02::1:ff00:2"


def report(*records) -> bytes:
    """An MLDv2 Report as the DUT's kernel sends it (IPv6 packet bytes)."""
    recs = [ICMPv6MLDMultAddrRec(rtype=t, dst=g, sources=list(s)) for t, g, s in records]
    pkt = (IPv6(src=DUT["link_local"], dst="ff02::16", hlim=1)
           / IPv6ExtHdrHopByHop(options=[RouterAlert(value=0), PadN(optdata=b"")])
           / ICMPv6MLReport2(records=recs, records_number=len(recs)))
    return bytes(pkt)


def records_of(raw: bytes):
    return [(r.rtype, r.group, r.sources) for r in v2_records(IPv6(raw))]


def test_every_record_is_read_not_only_scapy_s_first():
    raw = report((2, "ff18::99", ["2001:db8::4"]), (1, "ff18::88", ["2001:db8::1", "2001:db8::2"]), (2, SN, []))
    assert records_of(raw) == [(2, "ff18::99", ["2001:db8::4"]), (1, "ff18::88", ["2001:db8::1", "2001:db8::2"]),
                               (2, SN, [])]
    assert len(IPv6(raw)[ICMPv6MLReport2].records) == 1  # why: Scapy nests the others in the first's payload


def test_a_record_cut_short_keeps_what_is_there():
    body = bytes([5, 0]) + struct.pack("!H", 3) + bytes(16) + bytes(16)  # claims 3 sources, carries 1
    (rec,) = parse_records(body, 1)
    assert rec.declared_sources == 3 and len(rec.sources) == 1
    assert parse_records(body[:10], 1) == []


def test_ssm_range_and_fresh_names():
    assert all(in_ssm_range(fresh_group(ssm=True)) for _ in range(50))
    assert not in_ssm_range(fresh_group()) and not in_ssm_range("ff3e:0:0:1::1") and in_ssm_range("ff35::8000:1")
    a, b = fresh_sources(2)
    assert a != b and a.startswith("2001:db8:")


def test_swap_and_drop_source_leave_the_solicited_node_group_alone():
    raw = report((5, "ff18::1", ["2001:db8::1", "2001:db8::2"]), (4, SN, []))
    out = mld_record_wrong(raw, DUT, swap={5: 6})
    assert records_of(out) == [(6, "ff18::1", ["2001:db8::1", "2001:db8::2"]), (4, SN, [])]
    assert records_of(mld_record_wrong(raw, DUT, drop_source=True))[0] == (5, "ff18::1", ["2001:db8::1"])
    assert IPv6(out).plen == len(out) - 40
    assert mld_record_wrong(report((4, SN, [])), DUT, swap={4: 3}) is None  # nothing of ours to change


def test_dropping_every_record_holds_the_report_back():
    assert mld_record_wrong(report((6, "ff3e::8000:1", ["2001:db8::1"])), DUT, drop_types=[6]) == DROP


class _State:
    def __init__(self):
        self.state = {}


def test_report_once_holds_back_the_retransmission_only():
    r, change = _State(), report((5, "ff18::1", ["2001:db8::1"]))
    assert mld_report_once(change, DUT, repairer=r) is None
    assert mld_report_once(change, DUT, repairer=r) == DROP
    answer = report((1, "ff18::1", ["2001:db8::1"]))  # current state: answers to queries pass
    assert mld_report_once(answer, DUT, repairer=r) is None and mld_report_once(answer, DUT, repairer=r) is None


def _query_bytes(group, sources):
    return bytes(mld_query(EmulatedNode("TQ", "02:00:00:00:00:0a", "fe80::a"), version=2, group=group, sources=sources)[IPv6])


def test_source_query_arrives_as_a_group_query():
    out = mld_source_query_as_group_query(_query_bytes("ff18::1", ["2001:db8::1", "2001:db8::2"]), DUT)
    q = Ether() / IPv6(out)
    assert q.sources_number == 0 and list(q.sources) == [] and IPv6(out).plen == len(out) - 40
    assert mld_source_query_as_group_query(_query_bytes("ff18::1", []), DUT) is None


def test_exclude_answer_rewritten_per_table_3():
    r = _State()
    assert mld_exclude_answer_per_table_3(_query_bytes("ff18::1", ["2001:db8::1", "2001:db8::2"]), DUT,
                                          repairer=r) is None
    out = mld_exclude_answer_per_table_3(report((2, "ff18::1", ["2001:db8::1"])), DUT, repairer=r)
    assert records_of(out) == [(1, "ff18::1", ["2001:db8::2"])]
    # B - A empty: no Report at all
    mld_exclude_answer_per_table_3(_query_bytes("ff18::1", ["2001:db8::1"]), DUT, repairer=r)
    assert mld_exclude_answer_per_table_3(report((2, "ff18::1", ["2001:db8::1"])), DUT, repairer=r) == DROP
    # nothing pending: untouched
    assert mld_exclude_answer_per_table_3(report((2, "ff18::1", ["2001:db8::1"])), DUT, repairer=r) is None


def test_report_once_drops_the_repeated_record_from_a_merged_report():
    r = _State()
    assert mld_report_once(report((5, "ff18::1", ["2001:db8::1"]), (4, SN, [])), DUT, repairer=r) is None
    out = mld_report_once(report((5, "ff18::1", ["2001:db8::1"]), (4, "ff02::1:ff00:9", [])), DUT, repairer=r)
    assert records_of(out) == [(4, "ff02::1:ff00:9", [])]
