"""ICMPv6 (RFC 4443) — IPv6 Ready Core v6LC.5."""

from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, IPv6

from ..core.check import Part, check
from ..net import match as M
from ..net import packets as P


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
    ],
)
def echo_request_is_answered(t):
    """Every node MUST implement an ICMPv6 Echo responder function that
    receives Echo Requests and originates corresponding Echo Replies.  The
    source of a reply to a unicast request MUST be the request's destination;
    a reply to a multicast request SHOULD be sent, from a unicast address of
    the receiving interface (RFC 4443 §4.2)."""
    where = t.p.dst
    dst = {
        "link_local": t.dut.link_local,
        "global": t.dut.global_address() if where == "global" else None,
        "all_nodes": P.ALL_NODES,
        "all_routers": P.ALL_ROUTERS,
        "unspecified": P.UNSPECIFIED,
    }[where]
    tn1 = t.tn1
    src = tn1.link_local if where in ("all_nodes", "all_routers", "unspecified") else tn1.source_for(dst)
    data = P.nonce(32)
    request = t.to_dut(tn1, dst, src=src) / ICMPv6EchoRequest(id=int.from_bytes(data[:2], "big"), seq=1, data=data)

    if where == "unspecified":
        return t.expect_silence(request, M.all_of(M.echo_reply_to(request)), what="Echo Reply")

    reply = t.expect_reply(request, M.echo_reply_to(request), what="Echo Reply")
    if reply is None:
        return t.failed(f"no Echo Reply to {dst} within {t.reply_timeout:g} s")
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
    if problems:
        return t.failed(seen + ": " + "; ".join(problems))
    return t.passed(seen)
