"""ESP with IPv6 extension headers and fragmentation: ESP after the headers
that precede it in transport mode, ESP that arrives in fragments, and a
Packet Too Big for a tunnel's outer path (the IPv6 Ready IPsec PMTU cases)."""

from __future__ import annotations

from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6PacketTooBig,
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    PadN,
)
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from ...core.check import Part, check
from ...core.context import CheckContext
from ...ipsec.association import establish
from ...net import frag as FR
from ...scenario.probes import echo_request
from ._common import COMMON, describe, echo, echo_matcher, one_reply

IPV6_MIN_MTU = 1280  # RFC 8200 §5
#: the Echo Request's data in the fragmentation and PMTU checks: the DUT's reply inside ESP is then 1424
#: octets on the wire, more than the IPv6 minimum MTU and within the link's 1500
BIG_DATA = 1300


def _headers(kind: str) -> tuple:
    if kind == "hbh":
        return (IPv6ExtHdrHopByHop(options=[PadN(optdata=b"\0\0\0\0")]),)
    if kind == "dstopts":
        return (IPv6ExtHdrDestOpt(options=[PadN(optdata=b"\0\0\0\0")]),)
    return (IPv6ExtHdrFragment(offset=0, m=0, id=FR.new_ident()),)  # an atomic fragment (RFC 6946)


@check(
    area="ipsec", title="ESP after extension headers is processed",
    rfc="RFC 4303 §3.1.1; RFC 8200 §4.1, §4.3, §4.6; RFC 6946 §4",
    expect="an ESP-protected Echo Request (AES-GCM-16, transport mode) whose ESP header follows a Hop-by-Hop "
           "Options header, a Destination Options header or an atomic Fragment header is answered in ESP on the SA",
    parts=[Part("A", "after a Hop-by-Hop Options header", headers="hbh", fault="ipsec_dut_drops_esp_behind_hbh"),
           Part("B", "after a Destination Options header", headers="dstopts",
                fault="ipsec_dut_drops_esp_behind_dstopts"),
           Part("C", "after an atomic Fragment header", headers="fragment",
                fault="ipsec_dut_drops_esp_behind_a_fragment_header")],
    **COMMON,
)
def esp_after_extension_headers_is_processed(t: CheckContext):
    """RFC 4303 §3.1.1: in transport mode ESP is inserted after the IP header
    and before a next layer protocol header; in IPv6 it appears after the
    hop-by-hop, routing and fragmentation extension headers (Destination
    Options may come before or after it).  A receiver processes those headers
    (RFC 8200 §4) and then ESP; an atomic fragment is processed without
    reassembly (RFC 6946 §4)."""
    sa = establish(t, "aes-gcm-16")
    _, ans = echo(t, sa, before=_headers(t.p.headers))
    return one_reply(t, sa, ans, t.t0, f"the ESP-protected Echo Request behind {t.part_spec.title[6:]}",
                     [sa.describe()])


@check(
    area="ipsec", title="ESP that arrives in fragments is reassembled, then processed",
    rfc="RFC 4303 §3.4.1; RFC 8200 §4.5",
    expect="an ESP-protected Echo Request (AES-GCM-16, transport mode, 1300 octets of data) sent as two IPv6 "
           "fragments of the ESP packet is reassembled and answered in ESP on the SA",
    fault="ipsec_dut_does_not_reassemble",
    **COMMON,
)
def fragmented_esp_is_reassembled_then_processed(t: CheckContext):
    """RFC 4303 §3.4.1: if required, reassembly is performed prior to IPsec
    processing; ESP is applied to whole IP datagrams, so a fragment of an ESP
    packet is not ESP-processed alone (RFC 8200 §4.5: the receiver
    reassembles the fragmentable part first)."""
    sa = establish(t, "aes-gcm-16")
    req = echo_request(size=40 + 8 + BIG_DATA)
    frame = sa.protect(req)
    frags = FR.fragment(frame, cuts=[8 * 90])  # 720 octets of the ESP packet, then the rest
    since = t.now()
    for f in frags:
        t.send(f, label=f"fragment {f[IPv6ExtHdrFragment].offset * 8}+{len(FR.fragment_data(f))} of the ESP packet "
                        f"(SPI {sa.to_dut.spi:#x} seq {sa.last_seq})")
    ans = sa.await_answer(echo_matcher(req), since)
    return one_reply(t, sa, ans, since, "the Echo Request in the fragmented ESP packet",
                     [sa.describe(), f"sent the {len(bytes(frame[IPv6]))}-octet ESP packet as {len(frags)} fragments"])


@check(
    area="ipsec", title="A Packet Too Big for a tunnel's outer path lowers the MTU inside the tunnel",
    rfc="RFC 4301 §8.2.1, §8.2.2; RFC 8201 §4; RFC 4303 §3.3.4",
    expect="after a Packet Too Big (MTU 1280) for the DUT's 1424-octet ESP packet to the security gateway, the DUT's "
           "answer to the same Echo Request leaves in ESP packets of at most 1280 octets (its Echo Reply fragmented "
           "inside the tunnel), which reassemble to the Echo Reply",
    fault="ipsec_dut_ignores_packet_too_big",
    **COMMON,
)
def packet_too_big_for_the_tunnel_lowers_the_inner_mtu(t: CheckContext):
    """RFC 4301 §8.2.1: an IPsec implementation processes an ICMP PMTU
    message for an SA's outer path and records the path MTU in the SA;
    §8.2.2 has it propagate to the traffic inside (the MTU the inner packets
    see is the outer path's less the IPsec overhead).  RFC 8201 §4: a node
    reduces its path MTU on a Packet Too Big and fragments what it sends
    accordingly (the sender of the inner packet here is the DUT itself)."""
    sa = establish(t, "aes-gcm-16", mode="tunnel", topology="gateway")
    _, first = echo(t, sa, size=40 + 8 + BIG_DATA)
    if first is None or not first.protected:
        raise t.not_judged("esp-echo", "ipsec.tunnel_mode_reaches_a_host_behind_a_gateway#A",
                           "the DUT did not answer a large Echo Request inside the tunnel")
    outer = bytes(first.frame[IPv6])
    seen, problems = [sa.describe(), f"before: {describe(first)}, {len(outer)} octets on the wire"], []
    if len(outer) <= IPV6_MIN_MTU:
        raise t.not_judged("big-reply", "ipsec.tunnel_mode_reaches_a_host_behind_a_gateway#A",
                           f"the DUT's ESP packet was {len(outer)} octets, not more than {IPV6_MIN_MTU}: a Packet Too "
                           "Big could not lower it")
    router = t.tr1
    ptb = (Ether(src=router.mac, dst=t.dut.mac) / IPv6(src=router.global_addr, dst=sa.dut, hlim=64)
           / ICMPv6PacketTooBig(mtu=IPV6_MIN_MTU) / outer[:IPV6_MIN_MTU - 48])
    t.send(ptb, label=f"Packet Too Big MTU {IPV6_MIN_MTU} from {router.global_addr} quoting the DUT's ESP packet")
    t.wait(0.2)
    req2 = echo_request(size=40 + 8 + BIG_DATA)
    since = t.send(sa.protect(req2), label=f"the same-size Echo Request id {req2.id:#x} in the tunnel")
    t.wait(t.reply_timeout)
    t.port.drained_through(t.now())
    got = sa.esp_from_dut(since)
    sizes = [len(bytes(a.frame[IPv6])) for a in got]
    too_big = [s for s in sizes if s > IPV6_MIN_MTU]
    inner = [a.inner for a in got if a.protected]
    whole = [p for p in inner if ICMPv6EchoReply in p and p[ICMPv6EchoReply].id == req2.id]
    frags = [p for p in inner if IPv6ExtHdrFragment in p]
    reply = None
    if whole:
        reply = whole[0]
    elif frags:
        data = FR.reassemble(frags)
        if data is not None:
            first_frag = min(frags, key=lambda p: p[IPv6ExtHdrFragment].offset)
            reply = IPv6(bytes(IPv6(src=first_frag[IPv6].src, dst=first_frag[IPv6].dst,
                                    nh=first_frag[IPv6ExtHdrFragment].nh) / Raw(data)))
    seen.append(f"after the Packet Too Big: {len(got)} ESP packet(s) of {', '.join(map(str, sizes)) or 'none'} octets"
                + (f", inner fragments {len(frags)}" if frags else ""))
    if not got:
        t.record_dut_sent(since, what="ESP answer")
        problems.append(f"no ESP answer to the Echo Request after the Packet Too Big within {t.reply_timeout:g} s")
    if too_big:
        problems.append(f"an ESP packet of {max(too_big)} octets after the Packet Too Big (MTU {IPV6_MIN_MTU}) for "
                        "the tunnel's outer path (RFC 4301 §8.2: the path MTU must reach the SA)")
    if got and (reply is None or ICMPv6EchoReply not in reply or reply[ICMPv6EchoReply].id != req2.id):
        problems.append("the ESP packets after the Packet Too Big do not carry (fragments of) the Echo Reply")
    elif reply is not None:
        seen.append(f"inner: {reply.summary()}")
    return t.conclude(seen, problems)
