"""IPv6 header, extension headers and fragmentation (RFC 8200, RFC 5095,
RFC 7112, RFC 5722, RFC 6946, RFC 8021) — IPv6 Ready Core v6LC.1.

Where the IPv6 Ready spec (written against RFC 2460) and today's RFCs
differ, the check asserts today's RFC and says so in its ``rfc`` and
expectation: RFC 8200 replaces RFC 2460; Routing Type 0 is an unrecognized
Routing Type (RFC 5095); a first fragment must hold the whole header chain
(RFC 7112, RFC 8200 §4.5); overlapping fragments discard the datagram
(RFC 5722); atomic fragments are processed in isolation (RFC 6946) and
never generated (RFC 8021).
"""

from __future__ import annotations

from scapy.layers.inet import TCP
from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6PacketTooBig, IPv6, IPv6ExtHdrFragment
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from ..core.check import Part, check
from ..core.context import CheckContext
from ..core.verdict import Deviation, Verdict
from ..net import exthdr as X
from ..net import frag as F
from ..net import icmperr
from ..net import match as M
from ..net import packets as P
from ..scenario.offlink import become_router
from ..scenario.probes import (
    REASSEMBLY_TIMEOUT,
    deadline_margin,
    echo_request,
    expect_echo_reply,
    expect_error,
    expect_no_answer,
    invoking,
    skip_forwarding_parts,
)

PARAMETER_PROBLEM = 4
TIME_EXCEEDED = 3
PP_HEADER_FIELD, PP_NEXT_HEADER, PP_OPTION, PP_INCOMPLETE_CHAIN = 0, 1, 2, 3
PAYLOAD_LENGTH_POINTER = 4  # offset of the Payload Length field in the IPv6 header
NEXT_HEADER_POINTER = 6  # offset of the Next Header field in the IPv6 header


# -- v6LC.1.1: the IPv6 header ----------------------------------------------------------
@check(
    area="ipv6",
    ipv6ready="v6LC.1.1.1",
    title="Version Field",
    rfc="RFC 8200 §3",
    fault="impostor_answers_malformed_echo",
    liveness="echo",
    expect="Echo Requests whose IPv6 Version field is 0, 4, 5, 7 or 15 (not 6) are discarded: no Echo Reply "
           "and no ICMPv6 error within the silence window, and the DUT still answers afterwards",
)
def packets_with_version_other_than_6_are_discarded(t: CheckContext):
    """The Version field of an IPv6 packet is 6 (RFC 8200 §3); a packet
    with any other version in an IPv6 frame is not an IPv6 packet and is
    not processed as one."""
    tn1 = t.tn1
    frames, requests = [], []
    for version in (0, 4, 5, 7, 15):
        req = echo_request(seq=version)
        raw = bytearray(bytes(t.to_dut(tn1, t.dut.link_local) / req))
        raw[14] = (version << 4) | (raw[14] & 0x0F)
        frames.append(bytes(raw))
        requests.append(t.to_dut(tn1, t.dut.link_local) / req)
    return t.expect_silence(frames, M.any_of(*(M.echo_reply_to(r) for r in requests), icmperr.error_about(
        tn1.link_local)), what="Echo Reply or ICMPv6 error to a non-version-6 packet")


@check(
    area="ipv6",
    ipv6ready="v6LC.1.1.2",
    title="Traffic Class Non-Zero – End Node",
    rfc="RFC 8200 §7; RFC 2474 §3",
    fault="dut_drops_nonzero_traffic_class",
    liveness="echo",
    expect="an Echo Reply to an Echo Request whose Traffic Class is 0xA5 (DSCP 41, ECN 01): a node that does "
           "not use the Traffic Class bits ignores them (any Traffic Class in the reply is acceptable)",
)
def nonzero_traffic_class_is_accepted(t: CheckContext):
    """Nodes that do not support a specific use of the Traffic Class bits
    ignore them (RFC 8200 §7); the DSCP field is not to be used to discard
    packets (RFC 2474 §3)."""
    req = echo_request()
    return expect_echo_reply(t, t.to_dut(t.tn1, t.dut.link_local, tc=0xA5) / req, req, to=t.tn1.link_local)


@check(
    area="ipv6",
    ipv6ready="v6LC.1.1.4",
    title="Flow Label Non-Zero",
    rfc="RFC 8200 §6; RFC 6437 §2",
    fault="dut_drops_nonzero_flow_label",
    liveness="echo",
    expect="an Echo Reply to an Echo Request with Flow Label 0x5A5A5: a node that does not use the Flow Label "
           "ignores it when receiving",
    parts=[
        Part("A", "NUT receives Non-Zero Flow Label"),
        Part("B", "RUT forwards Non-Zero Flow Label", scope="router", forwarding=True,
             expect="the router forwards the packet with the Flow Label unchanged"),
    ],
)
def nonzero_flow_label_is_accepted(t: CheckContext):
    """Hosts or routers that do not support the functions of the Flow
    Label field are required to ignore it when receiving a packet
    (RFC 8200 §6, RFC 6437 §2: 'a forwarding node MUST NOT change it')."""
    skip_forwarding_parts(t)
    req = echo_request()
    return expect_echo_reply(t, t.to_dut(t.tn1, t.dut.link_local, fl=0x5A5A5) / req, req, to=t.tn1.link_local)


@check(
    area="ipv6",
    ipv6ready="v6LC.1.1.5",
    title="Payload Length",
    rfc="RFC 8200 §3",
    fault="dut_drops_odd_payload_length",
    liveness="ns",
    expect="an Echo Reply carrying the request's data, octet for octet, whatever the parity of the Payload Length",
    parts=[
        Part("A", "Payload Length Odd", data_len=29),
        Part("B", "RUT forwards Payload Length Odd", scope="router", forwarding=True,
             expect="the router forwards the packet with its odd Payload Length unchanged"),
        Part("C", "Payload Length Even", data_len=30, fault="dut_drops_even_payload_length"),
    ],
)
def payload_length_of_either_parity_is_accepted(t: CheckContext):
    """The Payload Length is the length of the IPv6 payload in octets
    (RFC 8200 §3); nothing requires it to be even, and the receiver uses it,
    not the frame length, to find the end of the packet."""
    skip_forwarding_parts(t)
    req = echo_request(data=P.nonce(t.p.data_len))
    probe = t.to_dut(t.tn1, t.dut.link_local) / req
    t.note(f"Payload Length {len(bytes(probe[IPv6].payload))}")
    return expect_echo_reply(t, probe, req, to=t.tn1.link_local)


@check(
    area="ipv6",
    ipv6ready="v6LC.1.1.6",
    title="No Next Header after IPv6 Header",
    rfc="RFC 8200 §4.7",
    fault="impostor_answers_malformed_echo",
    liveness="echo",
    expect="nothing: the octets after a Next Header of 59 (an Echo Request's, here) are ignored — no Echo Reply, "
           "no ICMPv6 error",
    parts=[
        Part("A", "NUT Receives No Next Header"),
        Part("B", "RUT Forwards No Next Header", scope="router", forwarding=True,
             expect="the router forwards the packet, octets after the header included, unchanged"),
    ],
)
def octets_after_no_next_header_are_ignored(t: CheckContext):
    """The value 59 in the Next Header field indicates that there is
    nothing following that header; octets past its end must be ignored
    (RFC 8200 §4.7)."""
    skip_forwarding_parts(t)
    req = echo_request()
    probe = t.to_dut(t.tn1, t.dut.link_local, nh=X.NH_NONE) / Raw(bytes(req))
    return expect_no_answer(t, probe, src=t.tn1.link_local, request=t.to_dut(t.tn1, t.dut.link_local) / req)


def _each_unassigned_next_header(t: CheckContext, head, pointer: int):
    """Parameter Problem code 1 at ``pointer`` for every unassigned Next
    Header value put in the header ``head(nh)`` ends with."""
    seen = []
    for nh in X.UNASSIGNED_NEXT_HEADERS:
        probe = head(nh) / Raw(P.nonce(16))
        out = expect_error(t, probe, src=t.tn1.link_local, type_=PARAMETER_PROBLEM, code=PP_NEXT_HEADER,
                           invoking_=invoking(probe), field=pointer)
        if out.verdict != Verdict.PASS:  # the problems of that packet's judgement, each naming the value
            return t.conclude(f"Next Header {nh}: {out.seen}",
                              [f"Next Header {nh}: {p}" for p in (out.problems or [out.seen])])
        seen.append(f"{nh}: {out.seen.split(' from ')[0]}")
    return t.conclude("; ".join(seen), [])


@check(
    area="ipv6",
    ipv6ready="v6LC.1.1.7",
    title="Unrecognized Next Header",
    rfc="RFC 8200 §4; RFC 4443 §3.4",
    fault="dut_points_past_the_parameter_problem",
    liveness="echo",
    expect="for each packet, an ICMPv6 Parameter Problem code 1 (unrecognized Next Header) with Pointer 6 "
           "(the IPv6 header's Next Header field), from the address the packet was sent to",
    parts=[
        Part("A", "Unrecognized Next Header in IPv6 Header (values 148, 173, 200, 252)", how="unassigned"),
        Part("B", "Unexpected Next Header in IPv6 Header (0, but a Fragment header follows)", how="unexpected",
             expect="an ICMPv6 Parameter Problem code 2 with Pointer 46: the Fragment header read as a Hop-by-Hop "
                    "Options header holds option type 0x87 (action 10) at offset 46, and no Echo Reply"),
    ],
)
def unrecognized_next_header_in_ipv6_header_is_reported(t: CheckContext):
    """If the Next Header value in the current header is unrecognized, the
    node should discard the packet and send a Parameter Problem code 1
    whose Pointer is the offset of the unrecognized value (RFC 8200 §4).
    A Next Header of 0 announces a Hop-by-Hop Options header: what follows
    is processed as one, whatever it really is."""
    tn1, dst = t.tn1, t.dut.link_local
    if t.p.how == "unassigned":
        return _each_unassigned_next_header(t, lambda nh: t.to_dut(tn1, dst, nh=nh), NEXT_HEADER_POINTER)
    req = echo_request()
    # the octets of a Fragment header (Next Header 58, offset 0, M=0, Identification 0x00008700)
    fragment_as_hbh = bytes([X.NH_ICMPV6, 0, 0, 0, 0x00, 0x00, 0x87, 0x00])
    probe = t.to_dut(tn1, dst, nh=X.NH_HOP_BY_HOP) / Raw(fragment_as_hbh) / req
    return expect_error(t, probe, src=tn1.link_local, type_=PARAMETER_PROBLEM, code=PP_OPTION,
                        invoking_=invoking(probe), field=46, pointed_octet=0x87,
                        request=t.to_dut(tn1, dst) / req)


@check(
    area="ipv6",
    ipv6ready="v6LC.1.1.8",
    title="Hop Limit Zero – End Node",
    rfc="RFC 8200 §3",
    fault="dut_drops_hop_limit_zero",
    liveness="echo",
    expect="an Echo Reply to an Echo Request that arrives with Hop Limit 0: only forwarding decrements and "
           "checks the Hop Limit; the destination processes the packet",
)
def hop_limit_zero_is_accepted_by_the_destination(t: CheckContext):
    """The Hop Limit is decremented by 1 by each node that forwards the
    packet (RFC 8200 §3); a packet's destination does not discard it for
    a Hop Limit of zero."""
    req = echo_request()
    return expect_echo_reply(t, t.to_dut(t.tn1, t.dut.link_local, hlim=0) / req, req, to=t.tn1.link_local)


# -- v6LC.1.2: extension headers and options ------------------------------------------
@check(
    area="ipv6",
    ipv6ready="v6LC.1.2.1",
    title="Next Header Zero",
    rfc="RFC 8200 §4, §4.3",
    fault="dut_points_past_the_parameter_problem",
    liveness="echo",
    expect="an ICMPv6 Parameter Problem code 1 with Pointer 40 (the Destination Options header's Next Header "
           "field, which says 0) and no Echo Reply",
)
def next_header_zero_after_an_extension_header_is_reported(t: CheckContext):
    """The Hop-by-Hop Options header must immediately follow the IPv6
    header; a Next Header value of zero in any header other than the IPv6
    header is treated as unrecognized: discard, and Parameter Problem code
    1 pointing at it (RFC 8200 §4)."""
    tn1, dst = t.tn1, t.dut.link_local
    req = echo_request()
    probe = (t.to_dut(tn1, dst) / X.destination_options(X.padn(6), nh=X.NH_HOP_BY_HOP)
             / X.hop_by_hop(X.padn(6), nh=X.NH_ICMPV6) / req)
    return expect_error(t, probe, src=tn1.link_local, type_=PARAMETER_PROBLEM, code=PP_NEXT_HEADER,
                        invoking_=invoking(probe), field=40, request=t.to_dut(tn1, dst) / req)


@check(
    area="ipv6",
    ipv6ready="v6LC.1.2.2",
    title="No Next Header after Extension Header",
    rfc="RFC 8200 §4.7",
    fault="impostor_answers_malformed_echo",
    liveness="echo",
    expect="nothing: the Echo Request octets after a Destination Options header whose Next Header is 59 are "
           "ignored — no Echo Reply, no ICMPv6 error",
    parts=[
        Part("A", "End Node"),
        Part("B", "Intermediate Node", scope="router", forwarding=True,
             expect="the router forwards the packet, octets after the header included, unchanged"),
    ],
)
def octets_after_no_next_header_in_extension_header_are_ignored(t: CheckContext):
    """A Next Header of 59 in an extension header means nothing follows;
    octets past the end of that header must be ignored (RFC 8200 §4.7)."""
    skip_forwarding_parts(t)
    req = echo_request()
    probe = t.to_dut(t.tn1, t.dut.link_local) / X.destination_options(X.padn(6), nh=X.NH_NONE) / Raw(bytes(req))
    return expect_no_answer(t, probe, src=t.tn1.link_local, request=t.to_dut(t.tn1, t.dut.link_local) / req)


@check(
    area="ipv6",
    ipv6ready="v6LC.1.2.3",
    title="Unrecognized Next Header in Extension Header – End Node",
    rfc="RFC 8200 §4; RFC 4443 §3.4",
    fault="dut_points_past_the_parameter_problem",
    liveness="echo",
    expect="for each packet, an ICMPv6 Parameter Problem code 1 with Pointer 40 (the Destination Options "
           "header's Next Header field)",
    parts=[
        Part("A", "Unrecognized Next Header in Extension Header (values 148, 173, 200, 252)", how="unassigned"),
        Part("B", "Unexpected Next Header in Extension Header (60, but a Fragment header follows)", how="unexpected",
             expect="an ICMPv6 Parameter Problem code 2 with Pointer 50: the Fragment header read as a Destination "
                    "Options header holds option type 0x87 (action 10) at offset 50; and no Echo Reply"),
    ],
)
def unrecognized_next_header_in_extension_header_is_reported(t: CheckContext):
    """The Next Header of an extension header is processed like the IPv6
    header's: an unrecognized value means discard and Parameter Problem
    code 1 pointing at it (RFC 8200 §4); a header is processed as the type
    the previous Next Header announced."""
    tn1, dst = t.tn1, t.dut.link_local
    if t.p.how == "unassigned":
        return _each_unassigned_next_header(t, lambda nh: t.to_dut(tn1, dst) / X.destination_options(X.padn(6), nh=nh),
                                            40)
    req = echo_request()
    # a Fragment header with offset 0x10E0 and the second reserved field 2: read as options it is type 0x87, length 4
    fragment_as_dstopt = bytes([X.NH_ICMPV6, 0, 0x87, 0x04, 0, 0, 0, 0])
    probe = (t.to_dut(tn1, dst) / X.destination_options(X.padn(6), nh=X.NH_DEST_OPTS) / Raw(fragment_as_dstopt)
             / req)
    return expect_error(t, probe, src=tn1.link_local, type_=PARAMETER_PROBLEM, code=PP_OPTION,
                        invoking_=invoking(probe), field=50, pointed_octet=0x87, request=t.to_dut(tn1, dst) / req)


@check(
    area="ipv6",
    ipv6ready="v6LC.1.2.4",
    title="Extension Header Processing Order",
    rfc="RFC 8200 §4, §4.5",
    fault="dut_points_past_the_parameter_problem",
    liveness="echo",
    expect="the error of the header that comes first in the packet, and no Echo Reply",
    parts=[
        Part("A", "Destination Options Header precedes Fragment Header, Error from Destination Options Header",
             order="dstopt_first", error="option",
             expect="an ICMPv6 Parameter Problem code 2 whose Pointer designates the unrecognized option (type "
                    "0x9D, action 10) of the Destination Options header before the Fragment header"),
        Part("B", "Destination Options Header precedes Fragment Header, Error from Fragment Header",
             order="dstopt_first", error="fragment",
             expect="an ICMPv6 Parameter Problem code 0 with Pointer 4 (the first fragment's Payload Length is not "
                    "a multiple of 8 octets although M=1)"),
        Part("C", "Fragment Header precedes Destination Options Header, Error from Destination Options Header",
             order="fragment_first", error="option",
             expect="after reassembly, an ICMPv6 Parameter Problem code 2 whose Pointer designates the "
                    "unrecognized option (type 0x9D) in the packet it quotes"),
        Part("D", "Fragment Header precedes Destination Options Header, Error from Fragment Header",
             order="fragment_first", error="both",
             expect="an ICMPv6 Parameter Problem code 0 with Pointer 4 for the invalid fragment; the Destination "
                    "Options header after it (with an unrecognized option) is never processed"),
    ],
)
def extension_headers_are_processed_in_order(t: CheckContext):
    """Extension headers must be processed strictly in the order they
    appear in the packet (RFC 8200 §4): an error is detected in the first
    header that has one.  A first fragment with M=1 whose payload is not a
    multiple of 8 octets gets Parameter Problem code 0 pointing at the
    Payload Length (RFC 8200 §4.5)."""
    tn1, dst = t.tn1, t.dut.link_local
    req = echo_request(data=P.nonce(56))
    bad_option = t.p.error in ("option", "both")
    dstopt = X.destination_options(X.unknown_option(0b10) if bad_option else X.padn(6))
    whole = t.to_dut(tn1, dst) / dstopt / req
    unfrag = 48 if t.p.order == "dstopt_first" else 40
    body = F.fragmentable_part(whole) if unfrag == 40 else bytes(whole[IPv6])[48:]
    ident = F.new_ident()
    if t.p.error in ("fragment", "both"):
        first = F.Piece(0, body[:37], True)  # 37 octets: not a multiple of 8 (RFC 8200 §4.5)
        frags = F.fragment(whole, ident=ident, unfragmentable=unfrag, pieces_=[first])
        return expect_error(t, frags, src=tn1.link_local, type_=PARAMETER_PROBLEM, code=PP_HEADER_FIELD,
                            invoking_=invoking(frags[0]), field=PAYLOAD_LENGTH_POINTER,
                            request=t.to_dut(tn1, dst) / req)
    frags = F.fragment(whole, [32], ident=ident, unfragmentable=unfrag)
    reassembled = invoking(whole)
    return expect_error(t, frags, src=tn1.link_local, type_=PARAMETER_PROBLEM, code=PP_OPTION,
                        invoking_=[invoking(f) for f in frags] + [reassembled],
                        pointed_octet=X.UNKNOWN_OPTION[0b10], request=t.to_dut(tn1, dst) / req)


@check(
    area="ipv6",
    ipv6ready="v6LC.1.2.5",
    title="Option Processing Order",
    rfc="RFC 8200 §4.2",
    fault="dut_points_past_the_parameter_problem",
    liveness="echo",
    expect="the first option (action 00) is skipped and the second one's action applies",
    parts=[
        Part("A", "First Option has Most Significant Bits 00b, Next has Most Significant Bits 01b", second=0b01,
             fault="impostor_answers_malformed_echo",
             expect="nothing: the 01b option discards the packet silently (no Echo Reply, no ICMPv6 error)"),
        Part("B", "First Option has Most Significant Bits 00b, Next has Most Significant Bits 10b", second=0b10,
             expect="an ICMPv6 Parameter Problem code 2 whose Pointer is the offset of the second option (46)"),
        Part("C", "First Option has Most Significant Bits 00b, Next has Most Significant Bits 11b", second=0b11,
             expect="an ICMPv6 Parameter Problem code 2 whose Pointer is the offset of the second option (46); "
                    "the destination is unicast"),
    ],
)
def options_are_processed_in_order(t: CheckContext):
    """Options are processed in the order they appear in the header; an
    unrecognized option's action is chosen by its two high-order bits
    (RFC 8200 §4.2): 00 skip, 01 discard, 10 discard and send Parameter
    Problem code 2, 11 the same unless the destination is multicast."""
    tn1, dst = t.tn1, t.dut.link_local
    req = echo_request()
    second = X.unknown_option(t.p.second, data=b"\x00\x00")
    probe = t.to_dut(tn1, dst) / X.destination_options(X.unknown_option(0b00, data=b"\x00\x00"), second) / req
    plain = t.to_dut(tn1, dst) / req
    if t.p.second == 0b01:
        return expect_no_answer(t, probe, src=tn1.link_local, request=plain)
    pointer = X.offset_of_option(probe, type(probe[IPv6].payload), X.UNKNOWN_OPTION[t.p.second])
    return expect_error(t, probe, src=tn1.link_local, type_=PARAMETER_PROBLEM, code=PP_OPTION,
                        invoking_=invoking(probe), field=pointer, pointed_octet=X.UNKNOWN_OPTION[t.p.second],
                        request=plain)


_OPTION_PARTS = [
    Part("A", "Pad1 Option", option="pad1", expect="an Echo Reply: Pad1 options are skipped"),
    Part("B", "PadN Option", option="padn", expect="an Echo Reply: a PadN option is skipped"),
    Part("C", "Most Significant Bits 00b", option=0b00,
         expect="an Echo Reply: an unrecognized option with action 00 is skipped"),
    Part("D", "Most Significant Bits 01b", option=0b01, fault="impostor_answers_malformed_echo",
         expect="nothing: an unrecognized option with action 01 discards the packet silently"),
    Part("E", "Most Significant Bits 10b, unicast destination", option=0b10, fault="dut_points_past_the_parameter_problem",
         expect="an ICMPv6 Parameter Problem code 2 whose Pointer is the option's offset (42), and no Echo Reply"),
    Part("F", "Most Significant Bits 11b, unicast destination", option=0b11, fault="dut_points_past_the_parameter_problem",
         expect="an ICMPv6 Parameter Problem code 2 whose Pointer is the option's offset (42), and no Echo Reply"),
    Part("G", "Most Significant Bits 10b, multicast destination", option=0b10, multicast=True,
         fault="dut_points_past_the_parameter_problem",
         expect="an ICMPv6 Parameter Problem code 2 (Pointer 42) from a unicast address of the DUT although the "
                "destination is the all-nodes group (action 10 reports even to multicast), and no Echo Reply"),
    Part("H", "Most Significant Bits 11b, multicast destination", option=0b11, multicast=True,
         fault="impostor_reports_every_unknown_option",
         expect="nothing: action 11 discards the packet and sends no Parameter Problem when the destination is "
                "multicast (no Echo Reply either)"),
]


def _option_header_check(t: CheckContext, header):
    tn1 = t.tn1
    dst = P.ALL_NODES if t.p.__dict__.get("multicast") else t.dut.link_local
    req = echo_request()
    option = t.p.option
    if option == "pad1":
        opts = [X.pad1()] * 6
    elif option == "padn":
        opts = [X.padn(6)]
    else:
        opts = [X.unknown_option(option)]
    probe = t.to_dut(tn1, dst) / header(*opts) / req
    plain = t.to_dut(tn1, dst) / req
    if option in ("pad1", "padn", 0b00):
        return expect_echo_reply(t, probe, req, to=tn1.link_local)
    if option == 0b01 or (option == 0b11 and P.is_multicast(dst)):
        return expect_no_answer(t, probe, src=tn1.link_local, request=plain)
    return expect_error(t, probe, src=tn1.link_local, type_=PARAMETER_PROBLEM, code=PP_OPTION,
                        invoking_=invoking(probe), field=42, pointed_octet=X.UNKNOWN_OPTION[option], request=plain,
                        dut_dst=t.dut.link_local if P.is_multicast(dst) else None)


@check(
    area="ipv6",
    ipv6ready="v6LC.1.2.6",
    title="Options Processing, Hop-by-Hop Options Header - End Node",
    rfc="RFC 8200 §4.2, §4.3; RFC 4443 §2.4 (e.3)",
    fault="dut_drops_hop_by_hop_options",
    liveness="echo",
    expect="each option handled as its type says (RFC 8200 §4.2)",
    parts=_OPTION_PARTS,
)
def hop_by_hop_options_are_processed_by_their_action_bits(t: CheckContext):
    """A Hop-by-Hop Options header is processed by the destination (RFC
    8200 §4.3); Pad1 and PadN are skipped, and an unrecognized option's
    two high-order bits say what to do: 00 skip, 01 discard, 10 discard
    and send Parameter Problem code 2 even to a multicast destination, 11
    the same only for a unicast destination (RFC 8200 §4.2).  A multicast
    destination otherwise gets no ICMPv6 error (RFC 4443 §2.4 (e.3))."""
    return _option_header_check(t, X.hop_by_hop)


@check(
    area="ipv6",
    ipv6ready="v6LC.1.2.8",
    title="Option Processing, Destination Options Header",
    rfc="RFC 8200 §4.2, §4.6; RFC 4443 §2.4 (e.3)",
    fault="dut_drops_destination_options",
    liveness="echo",
    expect="each option handled as its type says (RFC 8200 §4.2)",
    parts=_OPTION_PARTS,
)
def destination_options_are_processed_by_their_action_bits(t: CheckContext):
    """Destination Options are processed by the packet's destination (RFC
    8200 §4.6) with the same option rules as Hop-by-Hop Options: skip
    padding, and act on an unrecognized option by its two high-order bits
    (RFC 8200 §4.2)."""
    return _option_header_check(t, X.destination_options)


def _routed_echo(t: CheckContext, routing_type: int, segments_left: int):
    """Host1 (off-link) sends an Echo Request with a Routing header through
    TR1, as TAHI's v6LC.1.2.9/10 topology does."""
    path = become_router(t)
    host1 = path.remote("HOST1")
    hops = [path.remote("ROUTER1").global_addr, path.remote("ROUTER2").global_addr, path.remote("TR-FAR").global_addr]
    req = echo_request()
    probe = path.from_remote(host1) / X.routing(routing_type, segments_left, hops) / req
    return path, host1, req, probe


@check(
    area="ipv6",
    ipv6ready="v6LC.1.2.9",
    title="Unrecognized Routing Type - End Node",
    rfc="RFC 8200 §4.4; RFC 5095 §3",
    fault="dut_drops_routing_header",
    needs=["exclusive_router"],
    any_address=True,  # some global address of the DUT behind TR1 will do (scenario/offlink.py)
    liveness="echo",
    expect="an Echo Reply to Host1 (off-link, through TR1): a Routing header of an unrecognized type with "
           "Segments Left 0 is ignored",
    parts=[
        Part("A", "Unrecognized Routing Type 33", routing_type=X.UNKNOWN_ROUTING_TYPE),
        Part("B", "Unrecognized Routing Type 0", routing_type=X.ROUTING_TYPE_0, rfc="RFC 8200 §4.4; RFC 5095 §3",
             expect="an Echo Reply to Host1: RFC 5095 makes Type 0 an unrecognized Routing Type, and with Segments "
                    "Left 0 it is ignored"),
    ],
)
def unrecognized_routing_type_with_no_segments_left_is_ignored(t: CheckContext):
    """If Segments Left is zero, the node must ignore a Routing header of
    an unrecognized type and proceed to the next header (RFC 8200 §4.4).
    Type 0 is deprecated and processed as an unrecognized type (RFC 5095
    §3)."""
    _, host1, req, probe = _routed_echo(t, t.p.routing_type, 0)
    return expect_echo_reply(t, probe, req, to=host1.global_addr)


@check(
    area="ipv6",
    ipv6ready="v6LC.1.2.10",
    title="Unrecognized Routing Type - Intermediate Node",
    rfc="RFC 8200 §4.4; RFC 5095 §3",
    fault="dut_points_past_the_parameter_problem",
    needs=["exclusive_router"],
    any_address=True,  # some global address of the DUT behind TR1 will do (scenario/offlink.py)
    liveness="echo",
    expect="an ICMPv6 Parameter Problem code 0 with Pointer 42 (the Routing Type field) to Host1 (off-link, "
           "through TR1), and no Echo Reply: with Segments Left 1 the packet is discarded",
    parts=[
        Part("A", "Unrecognized Routing Type 33", routing_type=X.UNKNOWN_ROUTING_TYPE),
        Part("B", "Unrecognized Routing Type 0", routing_type=X.ROUTING_TYPE_0,
             expect="an ICMPv6 Parameter Problem code 0 with Pointer 42 to Host1, and no Echo Reply: Type 0 is an "
                    "unrecognized Routing Type since RFC 5095 (RFC 2460 had nodes forward along it)"),
    ],
)
def unrecognized_routing_type_with_segments_left_is_reported(t: CheckContext):
    """If Segments Left is non-zero, the node must discard the packet and
    send an ICMP Parameter Problem, Code 0, to the packet's Source Address,
    pointing to the unrecognized Routing Type (RFC 8200 §4.4); Type 0 is
    unrecognized (RFC 5095 §3)."""
    path, host1, req, probe = _routed_echo(t, t.p.routing_type, 1)
    return expect_error(t, probe, src=host1.global_addr, type_=PARAMETER_PROBLEM, code=PP_HEADER_FIELD,
                        invoking_=invoking(probe), field=42, pointed_octet=t.p.routing_type,
                        request=path.from_remote(host1) / req)


# -- v6LC.1.3: fragmentation --------------------------------------------------------
def _reassembly_probe(t: CheckContext, how: str):
    tn1 = t.tn1
    dst = t.dut.link_local
    if how == "reassemble_to_1500":
        req = echo_request(size=1500)
        whole = t.to_dut(tn1, dst) / req
        return req, F.fragment(whole, [512, 1024]), whole
    req = echo_request(data=P.nonce(80))
    whole = t.to_dut(tn1, dst) / req
    frags = F.fragment(whole, [32, 64])
    if how == "reverse":
        frags = frags[::-1]
    elif how == "ids_differ":
        frags[1][IPv6ExtHdrFragment].id ^= 0x5A5A5A5A
    elif how == "sources_differ":
        frags[1] = F.readdress(frags[1], src=t.tn2.link_local)
        frags[1][Ether].src = t.tn2.mac
    elif how == "destinations_differ":
        frags[1] = F.readdress(frags[1], dst=t.dut.global_address())
    return req, frags, whole


@check(
    area="ipv6",
    ipv6ready="v6LC.1.3.1",
    title="Fragment Reassembly",
    rfc="RFC 8200 §4.5",
    fault="dut_drops_fragments",
    liveness="echo",
    expect="an Echo Reply carrying the reassembled request's data",
    parts=[
        Part("A", "All Fragments are Valid", how="in_order"),
        Part("B", "All Fragments are Valid, reverse order", how="reverse"),
        Part("C", "Fragment IDs Differ Between Fragments", how="ids_differ", fault="impostor_reassembles_leniently",
             expect="nothing: fragments with different Identification values belong to different packets, so no "
                    "packet is complete (no Echo Reply, no ICMPv6 error before the reassembly timeout)"),
        Part("D", "Source Addresses Differ Between Fragments", how="sources_differ",
             fault="impostor_reassembles_leniently",
             expect="nothing: fragments from different sources belong to different packets (no Echo Reply)"),
        Part("E", "Destination Address Differ Between Fragments", how="destinations_differ",
             fault="impostor_reassembles_leniently",
             expect="nothing: fragments to different destinations belong to different packets (no Echo Reply)"),
        Part("F", "Reassemble to 1500", how="reassemble_to_1500",
             expect="an Echo Reply of 1500 octets carrying the request's data (three fragments reassemble to a "
                    "1500-octet packet)"),
    ],
)
def fragments_are_reassembled(t: CheckContext):
    """The original packet is reassembled only from fragments having the
    same Source Address, Destination Address and Fragment Identification;
    fragments may arrive in any order (RFC 8200 §4.5)."""
    req, frags, whole = _reassembly_probe(t, t.p.how)
    if t.p.how in ("ids_differ", "sources_differ", "destinations_differ"):
        return expect_no_answer(t, frags, src=t.tn1.link_local, request=whole)
    size = 1500 if t.p.how == "reassemble_to_1500" else None
    return expect_echo_reply(t, frags, req, to=t.tn1.link_local, size=size)


@check(
    area="ipv6",
    ipv6ready="v6LC.1.3.2",
    title="Reassembly Time Exceeded",
    rfc="RFC 8200 §4.5; RFC 4443 §3.3",
    fault="dut_sends_no_time_exceeded",
    profile="full",
    liveness="echo",
    expect="reassembly is possible for 60 s after the first-arriving fragment; then it is abandoned with a Time "
           "Exceeded code 1 only if the first fragment arrived",
    parts=[
        Part("A", "Time Elapsed Between Fragments less than Sixty Seconds", how="late_but_in_time",
             fault="dut_abandons_reassembly_early",
             expect="an Echo Reply: the last fragment arrives 55 s after the first, within the 60 s RFC 8200 "
                    "§4.5 allows"),
        Part("B", "Time Exceeded Before Last Fragments Arrive", how="too_late", fault="dut_keeps_reassembling_too_long",
             expect="an ICMPv6 Time Exceeded code 1 quoting the first fragment about 60 s after the first fragment, "
                    "and no Echo Reply when the last fragment arrives after that"),
        Part("C", "Time Exceeded (Global), Only First Fragment Received", how="first_only", scope_addr="global",
             expect="an ICMPv6 Time Exceeded code 1 from the DUT's global address quoting the first fragment about "
                    "60 s after it arrived"),
        Part("D", "Time Exceeded (Link-local), Only First Fragment Received", how="first_only",
             scope_addr="link_local",
             expect="an ICMPv6 Time Exceeded code 1 from the DUT's link-local address quoting the first fragment "
                    "about 60 s after it arrived"),
        Part("E", "Time Exceeded, Only Second Fragment Received", how="second_only",
             fault="impostor_reports_reassembly_timeout_without_first_fragment",
             expect="nothing: without the first fragment no Time Exceeded is sent (RFC 8200 §4.5), for 60 s and "
                    "beyond"),
    ],
)
def reassembly_is_abandoned_after_sixty_seconds(t: CheckContext):
    """If insufficient fragments are received to complete reassembly
    within 60 seconds of the reception of the first-arriving fragment,
    reassembly must be abandoned; if the first fragment has been received,
    an ICMP Time Exceeded -- Fragment Reassembly Time Exceeded message
    should be sent to its source (RFC 8200 §4.5, RFC 4443 §3.3)."""
    tn1 = t.tn1
    glob = t.p.__dict__.get("scope_addr") == "global"
    dst = t.dut.global_address() if glob else t.dut.link_local
    src = tn1.global_addr if glob else tn1.link_local
    req = echo_request(data=P.nonce(80))
    whole = t.to_dut(tn1, dst, src=src) / req
    frags = F.fragment(whole, [32, 64])
    how = t.p.how
    late = deadline_margin(t)
    if how == "late_but_in_time":
        t.send(frags[0])
        t.send(frags[1])
        t.wait(REASSEMBLY_TIMEOUT - late)
        return expect_echo_reply(t, frags[2], req, to=src)
    if how == "second_only":
        return expect_no_answer(t, frags[1], src=src, request=whole, within=REASSEMBLY_TIMEOUT + late)
    first_arrival = t.send(frags[0])
    if how == "too_late":
        t.send(frags[1])
    window = REASSEMBLY_TIMEOUT + late
    frame = t.port.expect(t.from_dut(icmperr.error_about(src, type_=TIME_EXCEEDED)), window, since=first_arrival)
    problems = []
    if frame is None:
        seen = f"no Time Exceeded within {window:g} s of the first fragment"
        problems.append("reassembly was not reported abandoned")
    else:
        err = icmperr.parse(frame.pkt)
        after = frame.time - first_arrival
        seen = f"{err.describe()} {after:.1f} s after the first fragment"
        problems += icmperr.problems(err, type_=TIME_EXCEEDED, code=1, invoking=[invoking(f) for f in frags[:2]],
                                     dut_dst=dst)
        if after < REASSEMBLY_TIMEOUT - 1.0:
            problems.append(f"reassembly abandoned after {after:.1f} s, before the 60 s RFC 8200 §4.5 gives it")
    if how == "too_late":
        since = t.now()
        t.send(frags[2])
        reply = t.port.expect(t.from_dut(M.echo_reply_to(whole)), t.reply_timeout, since=since)
        if reply is not None:
            problems.append("the last fragment, sent after the timeout, completed the packet: "
                            + reply.summary())
    return t.conclude(seen, problems)


@check(
    area="ipv6",
    ipv6ready="v6LC.1.3.3",
    title="Fragment Header M-Bit Set, Payload Length Invalid",
    rfc="RFC 8200 §4.5",
    fault="dut_points_past_the_parameter_problem",
    liveness="echo",
    expect="an ICMPv6 Parameter Problem code 0 with Pointer 4 (the Payload Length field), and the fragment "
           "discarded (no Echo Reply when the rest arrives)",
)
def fragment_with_m_bit_and_invalid_length_is_reported(t: CheckContext):
    """If the length of a fragment, as derived from its Payload Length,
    is not a multiple of 8 octets and its M flag is 1, the fragment must be
    discarded and a Parameter Problem code 0 sent, pointing to the Payload
    Length field (RFC 8200 §4.5)."""
    tn1, dst = t.tn1, t.dut.link_local
    req = echo_request(data=P.nonce(40))
    whole = t.to_dut(tn1, dst) / req
    body = F.fragmentable_part(whole)
    ident = F.new_ident()
    first = F.fragment(whole, ident=ident, pieces_=[F.Piece(0, body[:21], True)])
    rest = F.fragment(whole, ident=ident, pieces_=[F.Piece(24, body[24:], False)])
    return expect_error(t, first + rest, src=tn1.link_local, type_=PARAMETER_PROBLEM, code=PP_HEADER_FIELD,
                        invoking_=invoking(first[0]), field=PAYLOAD_LENGTH_POINTER, request=whole)


@check(
    area="ipv6",
    ipv6ready="v6LC.1.3.4",
    title="Stub Fragment Header",
    rfc="RFC 8200 §4.5; RFC 6946 §4",
    fault="dut_drops_atomic_fragments",
    liveness="echo",
    expect="an Echo Reply to an Echo Request carrying a Fragment header with offset 0 and M=0 (an atomic "
           "fragment): it is processed as a whole packet",
)
def stub_fragment_header_is_accepted(t: CheckContext):
    """A packet with a Fragment header whose offset is 0 and M flag 0 is a
    complete packet; a receiving host must process it as such, on its own
    (RFC 6946 §4)."""
    req = echo_request()
    probe = t.to_dut(t.tn1, t.dut.link_local) / X.fragment_header(X.NH_ICMPV6, 0, False, F.new_ident()) / req
    return expect_echo_reply(t, probe, req, to=t.tn1.link_local)


def _split_chain(t: CheckContext, how: str):
    """A datagram whose first fragment stops before the end of the header
    chain (RFC 7112 §5), and the rest of it."""
    tn1, dst = t.tn1, t.dut.link_local
    req = echo_request(data=P.nonce(32))
    if how == "dstopt":
        whole = t.to_dut(tn1, dst) / X.destination_options(X.padn(6)) / req
        cut = 8
    elif how == "routing":
        whole = t.to_dut(tn1, dst) / X.routing(X.UNKNOWN_ROUTING_TYPE, 0, [tn1.link_local]) / req
        cut = 24
    elif how == "dstopt_routing":
        whole = (t.to_dut(tn1, dst) / X.destination_options(X.padn(6))
                 / X.routing(X.UNKNOWN_ROUTING_TYPE, 0, [tn1.link_local]) / req)
        cut = 32
    else:  # the upper-layer header itself is split (20-octet TCP header, 8 octets in the first fragment)
        whole = t.to_dut(tn1, dst) / TCP(sport=int.from_bytes(P.nonce(2), "big") | 1024, dport=9, flags="S")
        cut = 8
    return F.fragment(whole, [cut], unfragmentable=40)


@check(
    area="ipv6",
    ipv6ready="v6LC.1.3.6",
    title="First Fragment Doesn't Contain All Headers",
    rfc="RFC 8200 §4.5; RFC 7112 §5",
    fault="dut_points_past_the_parameter_problem",
    liveness="echo",
    expect="an ICMPv6 Parameter Problem code 3 (first fragment has incomplete IPv6 header chain) with Pointer 0 "
           "quoting the first fragment, and the packet discarded (no Echo Reply, no TCP answer) when the second "
           "fragment completes it",
    parts=[
        Part("A", "Upper-Layer header after a Destination Options header is in the second fragment", how="dstopt"),
        Part("B", "Upper-Layer header after a Routing header is in the second fragment", how="routing"),
        Part("C", "Upper-Layer header after Destination Options and Routing headers is in the second fragment",
             how="dstopt_routing"),
        Part("D", "Upper-Layer (TCP) header split between the first and second fragments", how="tcp_split"),
    ],
)
def first_fragment_without_the_whole_header_chain_is_reported(t: CheckContext):
    """If the first fragment does not include all headers through an
    Upper-Layer header, that fragment should be discarded and an ICMP
    Parameter Problem, Code 3, sent to its source with the Pointer set to
    zero (RFC 8200 §4.5, RFC 7112 §5).  (RFC 2460 had no such rule: the
    IPv6 Ready 4.x spec has no such test; Core 5.0.x added v6LC.1.3.6.)"""
    frags = _split_chain(t, t.p.how)
    tn1 = t.tn1
    out = expect_error(t, frags, src=tn1.link_local, type_=PARAMETER_PROBLEM, code=PP_INCOMPLETE_CHAIN,
                       invoking_=invoking(frags[0]), field=0)
    answers = t.collect(M.all_of(M.ipv6_to(tn1.link_local), lambda p: ICMPv6EchoReply in p or TCP in p),
                        0, since=t.t0)
    if answers:
        raise Deviation(f"{out.seen}; and the packet was processed: {answers[0].summary()}")
    return out


# -- beyond the IPv6 Ready IDs: RFC 5722, RFC 6946, RFC 8021 ---------------------------------
@check(
    area="ipv6",
    title="Overlapping fragments discard the whole datagram",
    rfc="RFC 5722 §4; RFC 8200 §4.5",
    fault="impostor_reassembles_leniently",
    liveness="echo",
    expect="nothing: when a fragment overlaps another, the whole datagram is silently discarded, fragments not "
           "yet received included (no Echo Reply, no ICMPv6 error)",
    parts=[
        Part("in_order", "The overlapping fragment arrives after the one it overlaps", order="in_order"),
        Part("overlap_first", "The overlapping fragment arrives first", order="overlap_first"),
    ],
)
def overlapping_fragments_discard_the_datagram(t: CheckContext):
    """When reassembling an IPv6 datagram, if one or more of its
    constituent fragments is determined to be an overlapping fragment, the
    entire datagram (and any constituent fragments, including those not
    yet received) MUST be silently discarded (RFC 5722 §4; RFC 8200 §4.5)."""
    tn1, dst = t.tn1, t.dut.link_local
    req = echo_request(data=P.nonce(80))
    whole = t.to_dut(tn1, dst) / req
    body = F.fragmentable_part(whole)
    ident = F.new_ident()
    first, second, third = F.fragment(whole, [32, 64], ident=ident)
    overlap = F.fragment(whole, ident=ident, pieces_=[F.Piece(24, body[24:64], True)])[0]  # overlaps octets 24-31
    order = [first, overlap, second, third] if t.p.order == "in_order" else [overlap, first, second, third]
    return expect_no_answer(t, order, src=tn1.link_local, request=whole)


@check(
    area="ipv6",
    title="Atomic fragments are processed in isolation",
    rfc="RFC 6946 §4",
    fault="dut_drops_atomic_fragments",
    liveness="echo",
    expect="an Echo Reply to an atomic fragment (offset 0, M=0) that shares its Identification with a pending "
           "fragmented packet, and, when that packet's last fragment arrives, an Echo Reply to it too",
)
def atomic_fragments_are_processed_in_isolation(t: CheckContext):
    """A host that receives an atomic fragment MUST process it in isolation
    from any other packets or fragments, even ones with the same Source
    Address, Destination Address and Fragment Identification (RFC 6946 §4)."""
    tn1, dst = t.tn1, t.dut.link_local
    ident = F.new_ident()
    pending_req = echo_request(data=P.nonce(48))
    pending = t.to_dut(tn1, dst) / pending_req
    head, tail = F.fragment(pending, [32], ident=ident)
    atomic_req = echo_request()
    atomic = t.to_dut(tn1, dst) / X.fragment_header(X.NH_ICMPV6, 0, False, ident) / atomic_req
    t.send(head, label="first fragment of a pending Echo Request")
    out = expect_echo_reply(t, atomic, atomic_req, to=tn1.link_local, what="Echo Reply to the atomic fragment")
    if out.verdict != Verdict.PASS:
        return out
    second = expect_echo_reply(t, tail, pending_req, to=tn1.link_local,
                               what="Echo Reply to the pending packet")
    if second.verdict != Verdict.PASS:
        raise Deviation(f"atomic fragment answered ({out.seen}), but the pending packet sharing its "
                         f"Identification did not complete: {second.seen}")
    return t.conclude(f"atomic fragment: {out.seen}; pending packet: {second.seen}", [])


@check(
    area="ipv6",
    title="The DUT never sends atomic fragments",
    rfc="RFC 8021 §4; RFC 8201 §4; RFC 8200 §5",
    fault="impostor_sends_atomic_fragments",
    liveness="echo",
    expect="no packet from the DUT carries a Fragment header with offset 0 and M=0 (an atomic fragment); "
           "packets that fit the path MTU go without a Fragment header",
    parts=[
        Part("after_ptb_1279", "After a Packet Too Big reporting an MTU of 1279", mtu=1279,
             expect="1500-octet Echo Replies without any Fragment header: the PTB below 1280 is discarded (RFC 8201 "
                    "§4), where RFC 1981/2460 had the node add a Fragment header to every packet"),
        Part("after_ptb_1280", "Small packets after a Packet Too Big reporting 1280", mtu=1280,
             expect="64-octet Echo Replies without a Fragment header (they fit the 1280-octet path MTU)"),
    ],
)
def the_dut_never_sends_atomic_fragments(t: CheckContext):
    """IPv6 atomic fragments are deprecated: nodes do not generate them
    (RFC 8021 §4); RFC 8200 §5 dropped RFC 2460's rule that had a node add
    a Fragment header after a Packet Too Big reporting an MTU below 1280,
    and RFC 8201 §4 has such a PTB discarded."""
    tn1 = t.tn1
    dst, src = t.dut.global_address(), tn1.global_addr
    link_mtu = t.target.link_mtu  # a full-size packet on this link (target link.mtu)
    big = echo_request(size=link_mtu)
    probe = t.to_dut(tn1, dst) / big
    first = t.expect_reply(probe, M.echo_reply_to(probe), what=f"Echo Reply ({link_mtu} octets)")
    if first is None:
        raise Deviation(f"no Echo Reply to a {link_mtu}-octet Echo Request before the Packet Too Big")
    ptb = (Ether(src=tn1.mac, dst=t.dut.mac) / IPv6(src=src, dst=dst) / ICMPv6PacketTooBig(mtu=t.p.mtu)
           / Raw(bytes(first.pkt[IPv6])[:X.IPV6_MIN_MTU - 48]))
    since = t.now()
    t.send(ptb, label=f"Packet Too Big (MTU {t.p.mtu}) quoting the Echo Reply")
    sizes = (link_mtu, 1280, 64) if t.p.mtu < X.IPV6_MIN_MTU else (64, 100, 1232)
    for i, size in enumerate(sizes):
        request = t.to_dut(tn1, dst) / echo_request(size=size, seq=10 + i)
        t.expect_reply(request, M.echo_reply_to(request), what=f"Echo Reply ({size} octets)")
    t.wait(t.reply_timeout / 2)
    frames = t.collect(M.ipv6_to(src), 0, since=since)
    atomic = [f for f in frames if F.is_atomic_fragment(f.pkt)]
    replies = [f for f in frames if ICMPv6EchoReply in f.pkt or F.is_fragment(f.pkt)]
    seen = (f"{len(replies)} Echo Reply packets after the PTB, sizes "
            f"{', '.join(str(F.ipv6_length(f.pkt)) for f in replies)}")
    if atomic:
        raise Deviation(f"{seen}; atomic fragment: {atomic[0].summary()}")
    if len(replies) < len(sizes):
        raise Deviation(f"{seen}; expected at least {len(sizes)} (the DUT did not answer every request)")
    if t.p.mtu < X.IPV6_MIN_MTU and any(F.is_fragment(f.pkt) for f in replies):
        raise Deviation(f"{seen}; it fragmented after a PTB below 1280, which it must discard (RFC 8201 §4)")
    return t.conclude(seen + "; none carries a Fragment header with offset 0 and M=0", [])


# -- RFC 9673: Hop-by-Hop Options processing at the destination host ------------------------------


def _hbh_options(layout: str) -> list:
    if layout == "several":  # three options the host does not know (action 00), then PadN: 2 + 3 x 6 + 4 = 24 octets
        return [X.unknown_option(0b00), X.unknown_option(0b00), X.unknown_option(0b00), X.padn(4)]
    if layout == "padded":  # padding between and after options, no run longer than 7 octets: 24 octets
        return [X.unknown_option(0b00), X.padn(6), X.unknown_option(0b00), X.padn(4)]
    return [X.router_alert(), X.padn(2)]  # a known option the host has nothing to do with: 8 octets


@check(
    area="ipv6", scope="host",
    title="Hop-by-Hop Options: a host delivers packets with several, padded or known options",
    rfc="RFC 8200 §4.2, §4.3 as updated by RFC 9673",
    fault="dut_drops_hop_by_hop_options",
    liveness="echo",
    expect="an Echo Request whose Hop-by-Hop Options header carries the options of the part is delivered and "
           "answered: options the host does not recognise with action 00 are skipped, padding is skipped, and a "
           "Router Alert it has no use for changes nothing",
    parts=[
        Part("several-options", "Three unrecognised options (action 00) in one header", layout="several",
             fault="dut_processes_one_hop_by_hop_option"),
        Part("padded-header", "Options separated and followed by PadN in a 24-octet header", layout="padded",
             fault="dut_limits_hop_by_hop_header_to_8_octets"),
        Part("router-alert", "A Router Alert option (value 2) the host has no use for", layout="router_alert"),
    ],
)
def hop_by_hop_header_is_processed_by_the_host(t: CheckContext):
    """A destination host processes the Hop-by-Hop Options header (RFC 8200
    §4.3; RFC 9673 keeps that for hosts while letting routers skip it): the
    options are processed in order, an unrecognised option whose action
    bits are 00 is skipped and processing continues with the next one, and
    Pad1/PadN are skipped (RFC 8200 §4.2).  Three options, or a header
    padded out to 24 octets, are far below any processing limit a host may
    apply, so the packet is delivered and the Echo Request answered."""
    tn1, req = t.tn1, echo_request()
    header = X.hop_by_hop(*_hbh_options(t.p.layout))
    probe = t.to_dut(tn1, t.dut.link_local) / header / req
    t.note(f"Hop-by-Hop Options header of {len(bytes(probe[IPv6].payload)) - len(bytes(req))} octets: "
           f"{probe[IPv6].payload.options!r}"[:300])
    return expect_echo_reply(t, probe, req, to=tn1.link_local)
