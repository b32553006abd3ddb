"""Path MTU when ICMPv6 is blocked: Packetization Layer Path MTU Discovery
(RFC 4821) for TCP, and the default PMTU method the node requirements ask
for (draft-ietf-6man-rfc8504-bis, "Path MTU Discovery and Packet Size").

The DUT sends: a node behind a path narrower than the DUT's link (1280
octets past the first router, the links themselves 1500) sends 1 MiB to the
DUT's TCP echo service (RFC 862) and reads it back, so the DUT's TCP must
fit its segments to the path.  Where the path's router drops every Packet
Too Big (a black hole, RFC 2923), only PLPMTUD gets the data through (RFC
4821 §1: "... the sender ... must be able to detect and recover from black
holes"); where the PTBs arrive, RFC 8201 does.  The node and its path come
from the target (``extensions.plpmtud.client: {netns, address}``; the lab
fills it in: its router and the ``far-path`` node, lab/services/farpath.py),
the DUT's echo service from ``services:``.

Datagram PLPMTUD (RFC 8899): where the DUT claims it (capability
DPLPMTUD) and names a QUIC endpoint (``extensions.plpmtud.quic``), a node
behind a narrower hop that drops every Packet Too Big (``extensions.plpmtud.
datagram_client``; the lab's is 1400 octets) fetches a few MiB from it, and
the DUT's datagram sizes on the wire show its search (scenario/dplpmtud.py).
"""

from __future__ import annotations

from scapy.layers.inet import TCP, UDP
from scapy.layers.inet6 import ICMPv6PacketTooBig, IPv6

from ..core.check import Part, check
from ..core.context import CheckContext
from ..errors import BenchError
from ..scenario import dplpmtud
from ..scenario.plpmtud import DEFAULT_TIMEOUT_S, PATH_MTU, TRANSFER_OCTETS, echo_port, settings, transfer


def _bulk(t: CheckContext, dut: str):
    """Run the transfer and read the wire: (answer, segments above the path MTU, Packet Too Big seen)."""
    netns, client, timeout = settings(t)
    port = echo_port(t)
    since = t.now()
    t.note(f"{client} sends {TRANSFER_OCTETS} octets to the DUT's TCP echo [{dut}]:{port} and reads them back "
           f"(at most {timeout:g} s)")
    answer = transfer(netns, dut, port, TRANSFER_OCTETS, timeout)
    t.wait(0.3)  # the last frames reach the capture
    big = t.collect((lambda p: TCP in p and IPv6 in p and p[TCP].sport == port
                               and len(p[IPv6]) > PATH_MTU), 0, since=since)
    ptb = t.collect(lambda p: ICMPv6PacketTooBig in p and p[IPv6].dst == dut, 0, since=since, any_source=True)
    t.measure("transfer_s", answer.get("seconds"))
    t.measure("echoed_octets", answer.get("received"))
    t.measure("segments_above_path_mtu", len(big))
    t.measure("packet_too_big_seen", len(ptb))
    return answer, big, ptb, timeout


def _outcome(answer: dict, timeout: float) -> str:
    if answer.get("complete"):
        return f"{TRANSFER_OCTETS} octets echoed back in {answer['seconds']:.2f} s"
    return (f"{answer.get('received', 0)} of {TRANSFER_OCTETS} octets echoed back within {timeout:g} s "
            f"({answer.get('error')})")


@check(area="plpmtud", title="A TCP transfer from the DUT completes over a path that drops Packet Too Big",
       rfc="RFC 4821 §1, §3, §7.5; draft-ietf-6man-rfc8504-bis (Path MTU Discovery and Packet Size)",
       capabilities=["PLPMTUD"], liveness="echo", needs=["lab_router"], fault="dut_tcp_without_plpmtud",
       lab_services=["plpmtud-blackhole", "hub"], dut_config="plpmtud",
       expect=f"1 MiB sent by the DUT's TCP (its echo service) to a node behind a {PATH_MTU}-octet hop whose router "
              f"drops every Packet Too Big arrives whole within the stated time ({DEFAULT_TIMEOUT_S:g} s unless the "
              "target states extensions.plpmtud.transfer_timeout_s): the DUT finds the path MTU by probing")
def tcp_transfer_completes_when_ptb_is_dropped(t: CheckContext):
    """'PLPMTUD ... does not rely on ICMP or other messages from the
    network' and 'allows the Packetization Layer to ... recover from
    black holes' (RFC 4821 §1, §3); a connection whose full-size segments
    vanish must fall back to a smaller size (§7.5, black hole detection) and
    so complete.  The node requirements name RFC 4821 as the method for
    'paths where delivery of ICMPv6 messages to a host is not assured'."""
    dut = t.dut.global_address()
    answer, big, ptb, timeout = _bulk(t, dut)
    if ptb:
        raise BenchError(f"{len(ptb)} Packet Too Big reached the DUT: the path's router does not drop them, so this "
                         "is not the black-holed path the check needs")
    seen = (f"{_outcome(answer, timeout)}; the DUT sent {len(big)} segment(s) above {PATH_MTU} octets, which the "
            f"path dropped without a Packet Too Big")
    problems = [] if answer.get("complete") else [
        f"the transfer did not complete over the black-holed path: {_outcome(answer, timeout)}; no recovery by "
        "probing (PLPMTUD)"]
    return t.conclude(seen, problems)


@check(area="plpmtud", title="A PMTU discovery method works in the DUT's default configuration",
       rfc="draft-ietf-6man-rfc8504-bis (Path MTU Discovery and Packet Size); RFC 8201 §4; RFC 4821 §1",
       capabilities=["PMTUD"], liveness="echo", needs=["lab_router"], fault="dut_without_pmtu_discovery_by_default",
       lab_services=["plpmtud-ptb", "hub"], dut_config="plpmtud-default",
       parts=[Part("ptb_delivered", "path narrower than the link, Packet Too Big delivered")],
       expect=f"with its default settings, the DUT's 1 MiB over a path with a {PATH_MTU}-octet hop (whose router "
              "sends Packet Too Big) arrives whole within the stated time: a PMTU method (RFC 8201, or PLPMTUD) is "
              "on by default")
def pmtu_method_is_enabled_by_default(t: CheckContext):
    """The node requirements make a Path MTU Discovery method enabled by
    default a MUST (draft-ietf-6man-rfc8504-bis; RFC 8504 §5.7.1 had
    'SHOULD be supported'): a DUT as shipped must get full-size data over a
    path narrower than its link, by RFC 8201 ('nodes ... MUST ... reduce
    the size of the packets they send along the path', §4) or by PLPMTUD."""
    dut = t.dut.global_address()
    answer, big, ptb, timeout = _bulk(t, dut)
    seen = (f"{_outcome(answer, timeout)}; the DUT sent {len(big)} segment(s) above {PATH_MTU} octets and was sent "
            f"{len(ptb)} Packet Too Big")
    problems = [] if answer.get("complete") else [
        f"the transfer did not complete in the DUT's default configuration: {_outcome(answer, timeout)}"
        + ("; the Packet Too Big it was sent changed nothing" if ptb else "")]
    return t.conclude(seen, problems)


@check(area="plpmtud", title="A datagram transport (QUIC) finds a larger PLPMTU by probing a path that drops Packet "
                             "Too Big",
       rfc="RFC 8899 §4.1, §4.4, §5.2, §5.3; RFC 9000 §14.3; draft-ietf-6man-rfc8504-bis (Path MTU Discovery and "
           "Packet Size)",
       capabilities=["DPLPMTUD"], liveness="echo", needs=["lab_router"], fault="dut_quic_without_dplpmtud",
       lab_services=["dplpmtud-path", "hub"], dut_config="dplpmtud",
       expect="the DUT's QUIC endpoint, sending a few MiB to a node behind a hop narrower than its link (lab: 1400 "
              "octets) whose router drops every Packet Too Big, sends probes above the path MTU (lost), then settles: "
              f"at least {dplpmtud.SETTLED_MIN} datagrams after its last probe, the largest at most the path MTU and "
              f"above BASE_PLPMTU ({dplpmtud.BASE_PLPMTU} octets); the transfer completes within the stated time")
def datagrams_settle_by_probing_when_ptb_is_dropped(t: CheckContext):
    """'DPLPMTUD ... does not rely on PTB messages' (RFC 8899 §1.1): in the
    SEARCHING state the PL sends probe packets larger than the current
    PLPMTU (§4.1, §5.2) and raises the PLPMTU to the largest that is
    acknowledged; a lost probe is not retransmitted as data and data above
    the PLPMTU is never sent (§4.4), so the flow settles at a size the path
    carries (SEARCH_COMPLETE).  QUIC runs this search (RFC 9000 §14.3) with
    PING+PADDING probes; the sizes are read from the capture (IPv6 packet
    octets), the frames themselves being encrypted."""
    endpoint, client, timeout = dplpmtud.settings(t)
    dut = t.dut.global_address()
    since = t.now()
    t.note(f"[{client.address}] (behind a {client.path_mtu}-octet hop that drops Packet Too Big) fetches "
           f"{endpoint.path} ({endpoint.octets} octets) from the DUT's QUIC endpoint [{dut}]:{endpoint.port} "
           f"(ALPN {endpoint.alpn}; at most {timeout:g} s)")
    answer = dplpmtud.transfer(client, dut, endpoint, timeout)
    t.wait(0.3)  # the last frames reach the capture
    frames = t.collect((lambda p: UDP in p and IPv6 in p and p[UDP].sport == endpoint.port
                                  and p[IPv6].dst == client.address), 0, since=since)
    ptb = t.collect(lambda p: ICMPv6PacketTooBig in p and p[IPv6].dst == dut, 0, since=since, any_source=True)
    if ptb:
        raise BenchError(f"{len(ptb)} Packet Too Big reached the DUT: the path's router does not drop them, so this "
                         "is not the black-holed path the check needs")
    found = dplpmtud.search([(f.time, len(f.pkt[IPv6])) for f in frames], client.path_mtu)
    t.measure("transfer_s", answer.get("seconds"))
    t.measure("received_octets", answer.get("received"))
    t.measure("datagrams", found.datagrams)
    t.measure("probes_above_path_mtu", len(found.above))
    t.measure("largest_datagram", found.largest)
    t.measure("settled_datagram", found.settled)
    t.measure("last_probe_s", found.above[-1][0] if found.above else None)
    error = str(answer.get("error") or "")
    if error.startswith("handshake") and not found.above:
        raise BenchError(f"no QUIC handshake with the DUT's endpoint [{dut}]:{endpoint.port} (ALPN {endpoint.alpn}, "
                         f"extensions.plpmtud.quic): {error}; the DUT sent {found.datagrams} datagram(s) to the "
                         "client, none above the path MTU (is the endpoint running, with this port and ALPN?)")
    unjudged = dplpmtud.stopped_below(found, client.path_mtu)
    if unjudged is not None and answer.get("complete"):
        return t.inconclusive(unjudged)
    seen, problems = dplpmtud.judge(found, client.path_mtu)
    if unjudged is not None:  # its search stopped short of the path: not judged here, only the transfer is
        seen, problems = f"{seen}; {unjudged}", []
    if answer.get("complete"):
        seen += f"; {endpoint.octets} octets arrived in {answer.get('seconds', 0):.2f} s"
    else:
        problems.append(f"the transfer did not complete over the black-holed path: {answer.get('received', 0)} of "
                        f"{endpoint.octets} octets within {timeout:g} s ({error or 'no error given'})")
    return t.conclude(seen, problems)
