"""ICMPv6 (RFC 4443) — IPv6 Ready Core v6LC.5.

Where the IPv6 Ready spec (RFC 2463/2460/3513 era) and today's RFCs
differ, the check asserts today's: a request to a site-local address is
answered like one to any global address (RFC 3879 deprecated site-local,
RFC 4291 §2.5.7 has fec0::/10 treated as global unicast); errors are
limited to the IPv6 minimum MTU and rate-limited (RFC 4443 §2.4 (c), (f)).
"""

import ipaddress
import secrets
import subprocess

from scapy.layers.inet import UDP
from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6Unknown,
    IPv6,
)
from scapy.packet import Raw

from ..core.check import Part, check
from ..core.context import CheckContext
from ..core.verdict import Deviation
from ..net import exthdr as X
from ..net import frag as F
from ..net import icmperr
from ..net import match as M
from ..net import packets as P
from ..scenario.offlink import advertise_prefix
from ..scenario.probes import (
    REASSEMBLY_TIMEOUT,
    deadline_margin,
    echo_request,
    expect_error,
    expect_no_answer,
    invoking,
    skip_forwarding_parts,
)

DESTINATION_UNREACHABLE, PARAMETER_PROBLEM, TIME_EXCEEDED = 1, 4, 3
PORT_UNREACHABLE = 4
#: an ICMPv6 informational type no node implements (162-199 are unassigned)
UNKNOWN_INFORMATIONAL_TYPE = 180
#: the deprecated site-local prefix (RFC 3879), global unicast to new implementations (RFC 4291 §2.5.7)
SITE_LOCAL = ipaddress.IPv6Network("fec0::/10")
#: a multicast address used as a (forbidden) source, RFC 4291 §2.7
MULTICAST_SOURCE = "ff1e::1:3"


@check(
    area="icmpv6",
    ipv6ready="v6LC.5.1.2",
    title="Replying to Echo Requests",
    rfc="RFC 4443 §4.2",
    fault="dut_drops_echo_request",
    liveness="ns",
    expect="an Echo Reply within the reply timeout, from the address the request was sent to, "
           "carrying the request's identifier, sequence number and data unmodified",
    parts=[
        Part("A", "Request sent to the link-local address", dst="link_local"),
        Part("B", "Request sent to a global address", dst="global"),
        Part("C", "Request sent to the all-nodes multicast address", dst="all_nodes",
             expect="an Echo Reply (SHOULD) from one of the DUT's unicast addresses on the link, carrying "
                    "the request's identifier, sequence number and data",
             fault="dut_ignores_multicast_echo"),
        Part("D", "Request sent to the all-routers multicast address", dst="all_routers", scope="router",
             expect="an Echo Reply from one of the router's unicast addresses"),
        Part("E", "Request sent to the unspecified address", dst="unspecified",
             rfc="RFC 4291 §2.5.2; RFC 4443 §4.2",
             expect="no Echo Reply: the unspecified address must never be a destination (RFC 4291 §2.5.2)",
             fault="impostor_answers_echo_to_unspecified"),
        Part("F", "Request sent to the loopback address", dst="loopback",
             rfc="RFC 4291 §2.5.3; RFC 4443 §4.2",
             expect="no Echo Reply: a packet received on an interface with destination ::1 must be dropped "
                    "(RFC 4291 §2.5.3)",
             fault="impostor_answers_echo_to_loopback"),
        Part("G", "Request sent to a site-local address", dst="site_local",
             rfc="RFC 4291 §2.5.7; RFC 3879 §4; RFC 4443 §4.2",
             expect="an Echo Reply from the fec0::/10 address the DUT formed from TR1's advertised fec0::/64 prefix: "
                    "RFC 3879 deprecated site-local scope and RFC 4291 §2.5.7 has new implementations treat the "
                    "prefix as global unicast (the IPv6 Ready test, written for RFC 3513, expected site-local "
                    "handling; this asserts the current RFC)",
             fault="dut_rejects_site_local_addresses"),
    ],
)
def echo_request_is_answered(t: CheckContext):
    """Every node MUST implement an ICMPv6 Echo responder function that
    receives Echo Requests and originates corresponding Echo Replies.  The
    source of a reply to a unicast request MUST be the request's destination;
    a reply to a multicast request SHOULD be sent, from a unicast address of
    the receiving interface (RFC 4443 §4.2)."""
    where = t.p.dst
    if where == "global":
        dst = t.dut.global_address()
    elif where == "site_local" and t.target.kind == "router":
        dst = t.dut.global_address(SITE_LOCAL)  # a router does not autoconfigure: list it in the target file
    elif where == "site_local":
        prefix = ipaddress.IPv6Network(f"fec0:0:{secrets.randbelow(0xFFFF) + 1:x}:{secrets.randbelow(0xFFFF):x}::/64")
        dst = advertise_prefix(t, prefix).dut
    else:
        dst = {"link_local": t.dut.link_local, "all_nodes": P.ALL_NODES, "all_routers": P.ALL_ROUTERS,
               "unspecified": P.UNSPECIFIED, "loopback": "::1"}[where]
    tn1 = t.tn1
    src = tn1.source_for(dst) if where in ("link_local", "global") else tn1.link_local
    data = P.nonce(32)
    request = t.to_dut(tn1, dst, src=src) / ICMPv6EchoRequest(id=int.from_bytes(data[:2], "big"), seq=1, data=data)

    if where in ("unspecified", "loopback"):
        return t.expect_silence(request, M.all_of(M.echo_reply_to(request)), what="Echo Reply")

    reply = t.expect_reply(request, M.echo_reply_to(request), what="Echo Reply")
    if reply is None:
        raise Deviation(f"no Echo Reply to {dst} within {t.reply_timeout:g} s")
    ip, echo = reply.pkt[IPv6], reply.pkt[ICMPv6EchoReply]
    problems = []
    if bytes(echo.data) != data:
        problems.append("data differs from the request's")
    if not P.same_address(ip.dst, src):
        problems.append(f"sent to {ip.dst}, not to the requester {src}")
    if P.is_multicast(dst):
        if P.is_multicast(ip.src) or ip.src == P.UNSPECIFIED:
            problems.append(f"source {ip.src} is not a unicast address")
    elif not P.same_address(ip.src, dst):
        problems.append(f"source {ip.src} is not the request's destination {dst}")
    seen = f"Echo Reply from {ip.src} to {ip.dst}, id/seq {echo.id}/{echo.seq}, {len(bytes(echo.data))} data bytes"
    return t.conclude(seen, problems)


def _unused_port() -> int:
    """A port in the dynamic range (RFC 6335 §6) with no listener expected."""
    return 49152 + secrets.randbelow(16384)


@check(
    area="icmpv6",
    ipv6ready="v6LC.5.1.1",
    title="Transmitting Echo Requests",
    rfc="RFC 4443 §4.1, §2.3",
    fault="dut_cannot_send_echo_requests",
    needs=["originate"],
    liveness="ns",
    expect="when told to ping TN1's link-local address, the DUT sends an Echo Request (type 128, code 0, valid "
           "checksum) from its link-local address to TN1",
)
def echo_request_is_transmitted(t: CheckContext):
    """A node SHOULD implement an application-layer interface for
    originating Echo Requests (RFC 4443 §4.1); the message has type 128,
    code 0 and a valid checksum over the pseudo-header (§2.3)."""
    tn1 = t.tn1
    since = t.now()
    proc = t.control.ping(tn1.link_local, size=32, count=1, wait_s=t.reply_timeout)
    frame = t.port.expect(t.from_dut(M.all_of(M.ipv6_to(tn1.link_local), lambda p: ICMPv6EchoRequest in p)),
                          t.reply_timeout + 2, since=since)
    try:
        proc.wait(timeout=t.reply_timeout + 5)
    except subprocess.TimeoutExpired:
        proc.kill()
    else:
        t.control.check_exit(proc)
    if frame is None:
        raise Deviation(f"no Echo Request to {tn1.link_local} within {t.reply_timeout + 2:g} s of the ping command")
    pkt = frame.pkt
    ip, req = pkt[IPv6], pkt[ICMPv6EchoRequest]
    recomputed = IPv6(bytes(ip))
    del recomputed[ICMPv6EchoRequest].cksum
    good = IPv6(bytes(recomputed))[ICMPv6EchoRequest].cksum
    problems = []
    if req.code != 0:
        problems.append(f"code {req.code}, not 0")
    if req.cksum != good:
        problems.append(f"checksum {req.cksum:#06x}, expected {good:#06x}")
    if not P.same_address(ip.src, t.dut.link_local):
        problems.append(f"sent from {ip.src}, not from the DUT's link-local address {t.dut.link_local}")
    seen = f"Echo Request from {ip.src} to {ip.dst}, code {req.code}, checksum {req.cksum:#06x}, id {req.id}"
    return t.conclude(seen, problems)


@check(
    area="icmpv6",
    ipv6ready="v6LC.5.1.3",
    title="Destination Unreachable Message Generation",
    rfc="RFC 4443 §3.1",
    fault="dut_sends_no_destination_unreachable",
    liveness="echo",
    expect="an ICMPv6 Destination Unreachable code 4 (port unreachable) from the address the UDP datagram was sent "
           "to, quoting it",
    parts=[
        Part("A", "Route Unreachable", scope="router", forwarding=True,
             expect="a Destination Unreachable code 0 for a destination the router has no route to"),
        Part("B", "Address Unreachable", scope="router", forwarding=True,
             expect="a Destination Unreachable code 3 when address resolution of the next hop fails"),
        Part("C", "Port Unreachable – Link-Local Address", dst="link_local"),
        Part("D", "Port Unreachable – Global Address", dst="global"),
        Part("E", "Beyond Scope of Source Address", scope="router", forwarding=True,
             expect="a Destination Unreachable code 2 for a link-local source and an off-link destination"),
    ],
)
def port_unreachable_is_reported(t: CheckContext):
    """A destination node SHOULD originate a Destination Unreachable
    message with Code 4 in response to a packet for which the transport
    protocol (e.g., UDP) has no listener (RFC 4443 §3.1)."""
    skip_forwarding_parts(t)
    tn1 = t.tn1
    dst = t.dut.global_address() if t.p.dst == "global" else t.dut.link_local
    src = tn1.source_for(dst)
    probe = t.to_dut(tn1, dst, src=src) / UDP(sport=_unused_port(), dport=_unused_port()) / Raw(P.nonce(24))
    return expect_error(t, probe, src=src, type_=DESTINATION_UNREACHABLE, code=PORT_UNREACHABLE,
                        invoking_=invoking(probe))


@check(
    area="icmpv6",
    ipv6ready="v6LC.5.1.6",
    title="Erroneous Header Field (Parameter Problem Generation)",
    rfc="RFC 4443 §3.4; RFC 8200 §4.5",
    fault="dut_points_past_the_parameter_problem",
    liveness="echo",
    expect="an ICMPv6 Parameter Problem code 0 with Pointer 4 from the DUT's global address to TN1's, quoting the "
           "fragment (its Payload Length, 37, is not a multiple of 8 although M=1), and no Echo Reply",
)
def erroneous_header_field_is_reported(t: CheckContext):
    """If a node processing a packet finds a problem with a field in the
    IPv6 header or extension headers such that it cannot complete
    processing, it MUST discard the packet and SHOULD originate a
    Parameter Problem with the Pointer at the problem (RFC 4443 §3.4); a
    first fragment with M=1 whose length is not a multiple of 8 octets is
    such a problem, code 0, pointing at the Payload Length (RFC 8200 §4.5)."""
    tn1 = t.tn1
    dst = t.dut.global_address()
    req = echo_request(data=P.nonce(40))
    whole = t.to_dut(tn1, dst) / req
    frag = F.fragment(whole, pieces_=[F.Piece(0, F.fragmentable_part(whole)[:29], True)])[0]
    return expect_error(t, frag, src=tn1.global_addr, type_=PARAMETER_PROBLEM, code=0, invoking_=invoking(frag),
                        field=4, request=whole)


@check(
    area="icmpv6",
    ipv6ready="v6LC.5.1.7",
    title="Unrecognized Next Header (Parameter Problem Generation)",
    rfc="RFC 4443 §3.4; RFC 8200 §4",
    fault="dut_points_past_the_parameter_problem",
    liveness="echo",
    expect="an ICMPv6 Parameter Problem code 1 with Pointer 6 from the DUT's global address to TN1's, quoting the "
           "packet whose Next Header (200) is unrecognized",
)
def unrecognized_next_header_is_reported(t: CheckContext):
    """Parameter Problem code 1 reports an unrecognized Next Header type;
    the Pointer identifies the offending octet (RFC 4443 §3.4, RFC 8200 §4)."""
    tn1 = t.tn1
    probe = t.to_dut(tn1, t.dut.global_address(), nh=200) / Raw(P.nonce(16))
    return expect_error(t, probe, src=tn1.global_addr, type_=PARAMETER_PROBLEM, code=1, invoking_=invoking(probe),
                        field=6)


@check(
    area="icmpv6",
    ipv6ready="v6LC.5.1.8",
    title="Unknown Informational Message Type",
    rfc="RFC 4443 §2.4 (b)",
    fault="impostor_answers_unknown_informational",
    liveness="echo",
    expect=f"nothing: an ICMPv6 informational message of unknown type {UNKNOWN_INFORMATIONAL_TYPE} is silently "
           "discarded (no ICMPv6 message back)",
)
def unknown_informational_message_is_discarded(t: CheckContext):
    """If an ICMPv6 informational message of unknown type is received, it
    MUST be silently discarded (RFC 4443 §2.4 (b))."""
    tn1 = t.tn1
    probe = t.to_dut(tn1, t.dut.link_local) / ICMPv6Unknown(type=UNKNOWN_INFORMATIONAL_TYPE, code=0,
                                                           msgbody=P.nonce(12))
    answer = M.all_of(M.ipv6_to(tn1.link_local), lambda p: p[IPv6].nh == 58 and bytes(p[IPv6].payload)[:1] not in
                      (b"\x87", b"\x88"))
    return t.expect_silence(probe, M.any_of(icmperr.error_about(tn1.link_local), answer),
                            what="ICMPv6 message in answer to the unknown informational message")


def _non_unique_probe(t: CheckContext, how: str, src: str, dst: str, tn1):
    """The probe of v6LC.5.1.10-12: UDP to an unused port, the first
    fragment of an Echo Request, or an Echo Request with an unrecognized
    option whose action (10) asks for a Parameter Problem."""
    if how == "udp":
        return t.to_dut(tn1, dst, src=src) / UDP(sport=_unused_port(), dport=_unused_port()) / Raw(P.nonce(24)), None
    req = echo_request(data=P.nonce(48))
    if how == "reassembly":
        whole = t.to_dut(tn1, dst, src=src) / req
        return F.fragment(whole, [32])[0], whole
    whole = t.to_dut(tn1, dst, src=src) / X.destination_options(X.unknown_option(0b10)) / req
    return whole, t.to_dut(tn1, dst, src=src) / req


def _no_error_for(t: CheckContext, src: str, dst: str):
    tn1 = t.tn1
    probe, request = _non_unique_probe(t, t.p.how, src, dst, tn1)
    within = REASSEMBLY_TIMEOUT + deadline_margin(t) if t.p.how == "reassembly" else None
    return expect_no_answer(t, probe, src=src, request=request, within=within)


_UDP_EXPECT = "nothing: no Destination Unreachable (nor any other ICMPv6 error)"


@check(
    area="icmpv6",
    ipv6ready="v6LC.5.1.10",
    title="Error Condition With Multicast Destination",
    rfc="RFC 4443 §2.4 (e.3)",
    fault="impostor_reports_errors_for_non_unique_addresses",
    liveness="echo",
    expect="no ICMPv6 error for a packet sent to a multicast address (all-nodes)",
    parts=[
        Part("A", "UDP Port Unreachable", how="udp",
             expect=_UDP_EXPECT + " for a UDP datagram to an unused port of the all-nodes group"),
        Part("B", "Echo Request Reassembly Timeout", how="reassembly", profile="full",
             fault="impostor_reports_reassembly_timeout_of_first_fragments",
             expect="nothing: no Time Exceeded 60 s after the first fragment of an Echo Request to the all-nodes "
                    "group (and no Echo Reply)"),
    ],
)
def no_error_for_a_multicast_destination(t: CheckContext):
    """An ICMPv6 error message MUST NOT be originated as a result of
    receiving a packet destined to an IPv6 multicast address (exceptions:
    Packet Too Big, and Parameter Problem code 2 for an unrecognized option
    whose action bits are 10) (RFC 4443 §2.4 (e.3))."""
    return _no_error_for(t, t.tn1.link_local, P.ALL_NODES)


_NON_UNIQUE_PARTS = [
    Part("A", "UDP Port Unreachable", how="udp", expect=_UDP_EXPECT + " for a UDP datagram to an unused port"),
    Part("B", "Echo Request Too Big", scope="router", forwarding=True,
         expect="no Packet Too Big for a packet the router cannot forward"),
    Part("C", "Echo Request Reassembly Timeout", how="reassembly", profile="full",
         fault="impostor_reports_reassembly_timeout_of_first_fragments",
         expect="nothing: no Time Exceeded 60 s after the first fragment of an Echo Request (and no Echo Reply)"),
    Part("D", "Echo Request with Unknown Option in Destination Options", how="option",
         fault="impostor_reports_every_unknown_option",
         expect="nothing: no Parameter Problem for an unrecognized option with action 10 (and no Echo Reply)"),
]


@check(
    area="icmpv6",
    ipv6ready="v6LC.5.1.11",
    title="Error Condition With Non-Unique Source - Unspecified",
    rfc="RFC 4443 §2.4 (e.6)",
    fault="impostor_reports_errors_for_non_unique_addresses",
    liveness="echo",
    expect="no ICMPv6 error for a packet whose source is the unspecified address",
    parts=_NON_UNIQUE_PARTS,
)
def no_error_for_an_unspecified_source(t: CheckContext):
    """An ICMPv6 error message MUST NOT be originated as a result of
    receiving a packet whose source address does not uniquely identify a
    single node, e.g. the IPv6 Unspecified Address (RFC 4443 §2.4 (e.6))."""
    skip_forwarding_parts(t)
    return _no_error_for(t, P.UNSPECIFIED, t.dut.link_local)


@check(
    area="icmpv6",
    ipv6ready="v6LC.5.1.12",
    title="Error Condition With Non-Unique Source - Multicast",
    rfc="RFC 4443 §2.4 (e.6); RFC 4291 §2.7",
    fault="impostor_reports_errors_for_non_unique_addresses",
    liveness="echo",
    expect=f"no ICMPv6 error for a packet whose source is a multicast address ({MULTICAST_SOURCE})",
    parts=_NON_UNIQUE_PARTS,
)
def no_error_for_a_multicast_source(t: CheckContext):
    """An ICMPv6 error message MUST NOT be originated as a result of
    receiving a packet whose source address is a multicast address (RFC
    4443 §2.4 (e.6)); multicast addresses must not be used as source
    addresses (RFC 4291 §2.7)."""
    skip_forwarding_parts(t)
    return _no_error_for(t, MULTICAST_SOURCE, t.dut.link_local)


# -- beyond the IPv6 Ready IDs: RFC 4443 §2.4 rules every error obeys -----------------------------
@check(
    area="icmpv6",
    title="ICMPv6 errors fit the IPv6 minimum MTU",
    rfc="RFC 4443 §2.4 (c)",
    fault="impostor_sends_short_quoting_errors",
    liveness="echo",
    expect="every error in answer to a 1500-octet packet is at most 1280 octets and quotes as much of the packet "
           "as fits (1232 octets)",
    parts=[
        Part("destination_unreachable", "Destination Unreachable for a 1500-octet UDP datagram", how="udp"),
        Part("parameter_problem", "Parameter Problem for a 1500-octet packet with an unrecognized option",
             how="option"),
    ],
)
def error_messages_fit_the_minimum_mtu(t: CheckContext):
    """Every ICMPv6 error message MUST include as much of the IPv6
    offending (invoking) packet as possible without making the error
    message packet exceed the minimum IPv6 MTU (RFC 4443 §2.4 (c))."""
    tn1 = t.tn1
    dst = t.dut.global_address()
    src = tn1.global_addr
    if t.p.how == "udp":
        probe = t.to_dut(tn1, dst) / UDP(sport=_unused_port(), dport=_unused_port())
        type_, code = DESTINATION_UNREACHABLE, PORT_UNREACHABLE
    else:
        probe = t.to_dut(tn1, dst) / X.destination_options(X.unknown_option(0b10)) / UDP(sport=_unused_port(),
                                                                                         dport=_unused_port())
        type_, code = PARAMETER_PROBLEM, 2
    probe = probe / Raw(P.nonce(t.target.link_mtu - len(bytes(probe[IPv6]))))  # a full-size packet (link.mtu)
    since = t.now()
    t.send(probe, label=f"{len(bytes(probe[IPv6]))}-octet packet")
    inv = invoking(probe)
    errors = t.collect(M.any_of(icmperr.error_about(src, type_=type_), icmperr.misquoting(type_, [inv])),
                       t.reply_timeout, since=since)
    if not errors:
        t.record_dut_sent(since, what=icmperr.NAMES[type_], invoking=[inv])
        return t.conclude(f"no {icmperr.NAMES[type_]} within {t.reply_timeout:g} s", [f"no {icmperr.NAMES[type_]}"])
    problems, seen = [], []
    for f in errors:
        e = icmperr.parse(f.pkt)
        seen.append(e.describe())
        problems += icmperr.problems(e, type_=type_, code=code, invoking=invoking(probe))
    return t.conclude("; ".join(seen), problems)


#: back-to-back error-eliciting datagrams sent to judge the rate limit
RATE_LIMIT_BURST = 100


@check(
    area="icmpv6",
    title="ICMPv6 error messages are rate-limited",
    rfc="RFC 4443 §2.4 (f)",
    fault="dut_does_not_limit_error_rate",
    liveness="echo",
    expect=f"fewer Destination Unreachable messages than the {RATE_LIMIT_BURST} UDP datagrams to unused ports sent "
           "back to back (the DUT limits the rate of the errors it originates), and at least one",
)
def error_messages_are_rate_limited(t: CheckContext):
    """In order to limit the bandwidth and forwarding costs incurred by
    originating ICMPv6 error messages, an IPv6 node MUST limit the rate of
    ICMPv6 error messages it originates (RFC 4443 §2.4 (f)), e.g. with a
    token bucket whose parameters have conservative defaults."""
    tn1 = t.tn1
    dst = t.dut.link_local
    probes = [bytes(t.to_dut(tn1, dst) / UDP(sport=_unused_port(), dport=_unused_port()) / Raw(P.nonce(16)))
              for _ in range(RATE_LIMIT_BURST)]
    since = t.now()
    for p in probes:
        t.port.send(p)
    burst = t.now() - since
    t.note(f"sent {RATE_LIMIT_BURST} UDP datagrams to unused ports in {burst * 1000:.1f} ms")
    errors = t.collect(icmperr.error_about(tn1.link_local, type_=DESTINATION_UNREACHABLE), t.reply_timeout,
                       since=since)
    t.measure("errors", len(errors))
    seen = f"{len(errors)} Destination Unreachable for {RATE_LIMIT_BURST} datagrams sent in {burst * 1000:.1f} ms"
    if not errors:
        raise Deviation(seen + ": the DUT sent no error at all, so its rate limit cannot be seen")
    if len(errors) >= RATE_LIMIT_BURST:
        raise Deviation(seen + ": every datagram got its error, no rate limit")
    return t.conclude(seen, [])


@check(
    area="icmpv6",
    title="No ICMPv6 error in response to an ICMPv6 error",
    rfc="RFC 4443 §2.4 (e.1)",
    fault="impostor_reports_every_unknown_option",
    liveness="echo",
    expect="nothing: an ICMPv6 Destination Unreachable carrying an unrecognized option with action 10 in a "
           "Destination Options header is discarded without a Parameter Problem",
)
def no_error_in_response_to_an_error(t: CheckContext):
    """An ICMPv6 error message MUST NOT be originated as a result of
    receiving an ICMPv6 error message (RFC 4443 §2.4 (e.1)), even where
    the packet would otherwise call for one (here an option whose action
    bits 10 ask for a Parameter Problem, RFC 8200 §4.2)."""
    tn1 = t.tn1
    quoted = bytes(IPv6(src=t.dut.link_local, dst=tn1.link_local) / UDP(sport=_unused_port(), dport=53))
    probe = (t.to_dut(tn1, t.dut.link_local) / X.destination_options(X.unknown_option(0b10))
             / ICMPv6Unknown(type=DESTINATION_UNREACHABLE, code=PORT_UNREACHABLE, msgbody=b"\x00" * 4 + quoted))
    return expect_no_answer(t, probe, src=tn1.link_local, what="ICMPv6 error about an ICMPv6 error")
