"""Path MTU Discovery (RFC 8201, which obsoletes RFC 1981) — IPv6 Ready
Core v6LC.4.

The tester is the DUT's only router (TR1, ``needs=["exclusive_router"]``):
it advertises a fresh prefix with itself as default router, so off-link
nodes (TN2, TN3) reach the DUT through it and TR1 (or a router behind it)
sends the Packet Too Big messages.  The DUT's packets on the path are its
Echo Replies; for multicast destinations the DUT is asked to send Echo
Requests itself (``needs=["originate"]``).

Where the IPv6 Ready 4.x spec (RFC 1981) and RFC 8201 differ, the check
asserts RFC 8201: a PTB reporting less than 1280 is discarded, not clamped
to 1280 with a Fragment header added (v6LC.4.1.6 under Core 5.0.x), and a
PTB that does not match traffic the DUT sent may be ignored (v6LC.4.1.12).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, ICMPv6PacketTooBig, IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from ..core.check import Part, check
from ..core.context import CheckContext, NotApplicable
from ..core.ledger import ADDRESS_LEASE_S
from ..core.verdict import Deviation
from ..net import frag as F
from ..net import match as M
from ..net.exthdr import IPV6_MIN_MTU
from ..scenario.offlink import OffLinkPath, become_router
from ..scenario.probes import ECHO_HEADER, datagram, deadline_margin, echo_request

ETHERNET_MTU = 1500  # RFC 2464 §2; the default of a target file's link.mtu


def _link_mtu(t: CheckContext) -> int:
    """The link's MTU from the target file (link.mtu): the size of the
    "full-size" packets and the PMTU before any Packet Too Big."""
    mtu = int(getattr(t.target, "link_mtu", ETHERNET_MTU) or ETHERNET_MTU)
    if mtu <= IPV6_MIN_MTU:
        raise NotApplicable(f"the link MTU is {mtu} (target link.mtu): no Path MTU below it to discover")
    return mtu
#: RFC 8201 §4: no attempt to detect a PMTU increase within 5 minutes of a PTB
PMTU_INCREASE_MIN_S = 300.0
#: TAHI's v6LC.4.1.9 samples the path every 30 s
INCREASE_PROBE_INTERVAL_S = 30.0
#: a global-scope multicast group for the DUT to send to (RFC 4291 §2.7, scope E)
MULTICAST_GROUP = "ff1e::1:2"


@dataclass
class Peer:
    """Who talks to the DUT: an address and how to build frames from it."""

    name: str
    address: str
    frame: Callable[[], Packet]


def _remote(path: OffLinkPath, name: str) -> Peer:
    node = path.remote(name)
    return Peer(name, node.global_addr, lambda: path.from_remote(node))


def _onlink(t: CheckContext, path: OffLinkPath, name: str) -> Peer:
    node = path.onlink(name)
    return Peer(name, node.global_addr, lambda: t.to_dut(node, path.dut, src=node.global_addr))


def _settle(t: CheckContext) -> None:
    """Give the DUT a moment to process a Packet Too Big before probing."""
    t.wait(t.reply_timeout / 4)


def _reply(t: CheckContext, peer: Peer, size: int, seq: int):
    """Send an Echo Request of ``size`` octets; returns (request, the packets of
    the DUT's Echo Reply or None)."""
    probe = peer.frame() / echo_request(size=size, seq=seq)
    frame = t.expect_reply(probe, M.echo_reply_to(probe), what=f"Echo Reply ({size} octets) to {peer.name}")
    if frame is None:
        return probe, None
    return probe, datagram(t, frame) if F.is_fragment(frame.pkt) else [frame.pkt]


def _sizes(pkts) -> str:
    return "+".join(str(F.ipv6_length(p)) for p in pkts)


def _judge(request: Packet, pkts, pmtu: int) -> list[str]:
    """An Echo Reply must carry the request's data, fit the path MTU, and
    not be fragmented (nor carry a Fragment header) if it fits whole."""
    if pkts is None:
        return ["no Echo Reply"]
    out = []
    too_big = [F.ipv6_length(p) for p in pkts if F.ipv6_length(p) > pmtu]
    if too_big:
        out.append(f"packets of {', '.join(map(str, too_big))} octets exceed the path MTU of {pmtu}")
    size = F.ipv6_length(request)
    if size <= pmtu and any(F.is_fragment(p) for p in pkts):
        out.append(f"a {size}-octet reply fits the path MTU of {pmtu} but carries a Fragment header")
    if F.is_fragment(pkts[0]):
        body = F.reassemble(pkts)
        data = body[ECHO_HEADER:] if body else None
    else:
        data = bytes(pkts[0][ICMPv6EchoReply].data) if ICMPv6EchoReply in pkts[0] else None
    if data != bytes(request[ICMPv6EchoRequest].data):
        out.append("the reply (reassembled) does not carry the request's data")
    return out


def _ptb(path: OffLinkPath, quoted: Packet, mtu: int, *, code: int = 0, src: str | None = None) -> Packet:
    """A Packet Too Big from TR1 (or ``src`` behind it) quoting ``quoted``."""
    return (path.from_router(src=src or path.router_global) / ICMPv6PacketTooBig(code=code, mtu=mtu)
            / Raw(bytes(quoted[IPv6])[:IPV6_MIN_MTU - 48]))


def _path_with(t: CheckContext, peer_name: str = "TN2", onlink: bool = False, lease_s: int = ADDRESS_LEASE_S):
    path = become_router(t, lease_s=lease_s)
    peer = _onlink(t, path, peer_name) if onlink else _remote(path, peer_name)
    return path, peer


def _baseline(t: CheckContext, peer: Peer):
    """A full-size Echo Reply before any PTB: the packet the PTB will quote."""
    request, pkts = _reply(t, peer, _link_mtu(t), 1)
    problems = _judge(request, pkts, _link_mtu(t))
    return pkts, problems


def _after_ptb(t: CheckContext, peer: Peer, pmtu: int, seqs=(2,)) -> tuple[list[str], list[str]]:
    """Probe with full-size Echo Requests; (problems, seen) against ``pmtu``."""
    problems, seen = [], []
    for seq in seqs:
        request, pkts = _reply(t, peer, _link_mtu(t), seq)
        p = _judge(request, pkts, pmtu)
        problems += [f"reply #{seq} to {peer.name}: {x}" for x in p]
        seen.append(f"#{seq} to {peer.name}: {_sizes(pkts) if pkts else 'none'}")
    return problems, seen


# -- v6LC.4.1.1 - 4.1.8, 4.1.12: Echo Replies along a routed path --------------------------
@check(
    area="pmtu",
    ipv6ready="v6LC.4.1.1",
    title="Confirm Ping",
    rfc="RFC 8201 §3; RFC 4443 §4.2",
    fault="dut_drops_echo_request",
    needs=["exclusive_router"],
    any_address=True,  # some global address of the DUT behind TR1 will do (scenario/offlink.py)
    liveness="ns",
    expect="an Echo Reply of the request's size to TN2 (off-link, through TR1), carrying its data, not fragmented "
           "(it fits the 1500-octet link MTU)",
    parts=[
        Part("A", "ICMPv6 Echo Request 64 octets", size=64),
        Part("B", "ICMPv6 Echo Request 1280 octets", size=1280),
        Part("C", "ICMPv6 Echo Request of the link MTU (1500 octets on Ethernet)", size="link"),
    ],
)
def echo_replies_of_every_size_cross_the_path(t: CheckContext):
    """Before any Packet Too Big, the PMTU of a path is the first hop's MTU
    (RFC 8201 §3): the DUT answers Echo Requests of 64, 1280 and 1500
    octets with Echo Replies of the same size, unfragmented (RFC 4443 §4.2:
    the data returned entirely and unmodified)."""
    size = _link_mtu(t) if t.p.size == "link" else t.p.size
    _, peer = _path_with(t)
    request, pkts = _reply(t, peer, size, 1)
    problems = _judge(request, pkts, _link_mtu(t))
    if pkts is not None and F.ipv6_length(pkts[0]) != size and not F.is_fragment(pkts[0]):
        problems.append(f"the reply is {F.ipv6_length(pkts[0])} octets, not {size}")
    return t.conclude([f"reply to {peer.name}: {_sizes(pkts) if pkts else 'none'} octets"], problems)


@check(
    area="pmtu",
    ipv6ready="v6LC.4.1.2",
    title="Stored PMTU",
    rfc="RFC 8201 §4, §5.2",
    fault="dut_ignores_packet_too_big",
    needs=["exclusive_router"],
    any_address=True,  # some global address of the DUT behind TR1 will do (scenario/offlink.py)
    liveness="echo",
    expect="after a Packet Too Big (MTU 1280) for the path to TN2, every later 1500-octet Echo Reply to TN2 is "
           "fragmented into packets of at most 1280 octets (the PMTU is stored), while a 1500-octet Echo Reply to "
           "TN3, another off-link destination, is still sent whole (the PMTU is stored per destination)",
)
def pmtu_is_stored_per_destination(t: CheckContext):
    """A node reduces its PMTU estimate for the path when it receives a
    Packet Too Big and uses it for the following packets (RFC 8201 §4); the
    PMTU is stored per destination, the RECOMMENDED local representation of
    a path (RFC 8201 §5.2)."""
    path, tn2 = _path_with(t)
    tn3 = _remote(path, "TN3")
    pkts, problems = _baseline(t, tn2)
    if pkts is None:
        raise _no_baseline(t, "TN2")
    t.send(_ptb(path, pkts[0], IPV6_MIN_MTU), label="Packet Too Big (MTU 1280) for TN2's path")
    _settle(t)
    p2, seen = _after_ptb(t, tn2, IPV6_MIN_MTU, seqs=(2, 3, 4))
    request, other = _reply(t, tn3, _link_mtu(t), 5)
    p3 = [f"reply to TN3: {x}" for x in _judge(request, other, _link_mtu(t))]
    seen.append(f"to TN3: {_sizes(other) if other else 'none'}")
    return t.conclude(seen, problems + p2 + p3)


def _no_baseline(t: CheckContext, name: str):
    """The DUT did not answer the full-size Echo Request that precedes the
    Packet Too Big: the PMTU clause is not judged (NOT_JUDGED); answering
    Echo Requests from an off-link node is judged by the Echo check."""
    return t.not_judged(f"echo:{name}", "icmpv6.echo_request_is_answered#B",
                        f"no Echo Reply to {name} (off-link, through TR1) before the Packet Too Big, so there was "
                        "nothing to send a Packet Too Big about")


def _reduce(t: CheckContext, path, peer, *, mtu=IPV6_MIN_MTU, code=0, src=None, label=""):
    pkts, problems = _baseline(t, peer)
    if pkts is None:
        raise _no_baseline(t, peer.name)
    t.send(_ptb(path, pkts[0], mtu, code=code, src=src), label=label or f"Packet Too Big (MTU {mtu}, code {code})")
    _settle(t)
    p2, seen = _after_ptb(t, peer, mtu, seqs=(2, 3))
    return t.conclude([f"before: {_sizes(pkts)}", *seen], problems + p2)


@check(
    area="pmtu",
    ipv6ready="v6LC.4.1.3",
    title="Non-zero ICMPv6 Code",
    rfc="RFC 4443 §3.2; RFC 8201 §4",
    fault="dut_ignores_packet_too_big_with_nonzero_code",
    needs=["exclusive_router"],
    any_address=True,  # some global address of the DUT behind TR1 will do (scenario/offlink.py)
    liveness="echo",
    expect="a Packet Too Big with Code 0xA5 (MTU 1280) is honoured like one with Code 0: later 1500-octet Echo "
           "Replies to TN2 go in fragments of at most 1280 octets",
)
def packet_too_big_with_nonzero_code_is_honoured(t: CheckContext):
    """The Code of a Packet Too Big is set to 0 by the originator and
    ignored by the receiver (RFC 4443 §3.2)."""
    path, peer = _path_with(t)
    return _reduce(t, path, peer, code=0xA5)


@check(
    area="pmtu",
    ipv6ready="v6LC.4.1.4",
    title="Reduce PMTU On-link",
    rfc="RFC 8201 §4",
    fault="dut_ignores_packet_too_big",
    needs=["exclusive_router"],
    any_address=True,  # some global address of the DUT behind TR1 will do (scenario/offlink.py)
    liveness="echo",
    expect="after a Packet Too Big (MTU 1280) from TN1, an on-link node, 1500-octet Echo Replies to TN1 go in "
           "fragments of at most 1280 octets carrying the request's data",
)
def packet_too_big_reduces_the_pmtu_of_an_on_link_destination(t: CheckContext):
    """When a node receives a Packet Too Big, it MUST reduce its estimate
    of the PMTU for the relevant path to the MTU it reports (RFC 8201 §4),
    for an on-link destination as for any other."""
    path, peer = _path_with(t, "TN1", onlink=True)
    return _reduce(t, path, peer, src=peer.address, label="Packet Too Big (MTU 1280) from TN1")


@check(
    area="pmtu",
    ipv6ready="v6LC.4.1.5",
    title="Reduce PMTU Off-link",
    rfc="RFC 8201 §4",
    fault="dut_ignores_packet_too_big",
    needs=["exclusive_router"],
    any_address=True,  # some global address of the DUT behind TR1 will do (scenario/offlink.py)
    liveness="echo",
    expect="after a Packet Too Big (MTU 1280) from TR1 for the path to TN2 (off-link), 1500-octet Echo Replies to "
           "TN2 go in fragments of at most 1280 octets carrying the request's data",
)
def packet_too_big_reduces_the_pmtu_of_an_off_link_destination(t: CheckContext):
    """When a node receives a Packet Too Big, it MUST reduce its estimate
    of the PMTU for the relevant path to the MTU it reports (RFC 8201 §4)."""
    path, peer = _path_with(t)
    return _reduce(t, path, peer)


@check(
    area="pmtu",
    ipv6ready="v6LC.4.1.6",
    title="Receiving MTU Below IPv6 Minimum Link MTU",
    rfc="RFC 8201 §4 (Core 5.0.x semantics; RFC 1981 §4 had the PMTU set to 1280 and a Fragment header added)",
    fault="dut_clamps_small_packet_too_big",
    needs=["exclusive_router"],
    any_address=True,  # some global address of the DUT behind TR1 will do (scenario/offlink.py)
    liveness="echo",
    expect="the Packet Too Big is discarded: later 1500-octet Echo Replies to TN2 are still sent whole, without "
           "a Fragment header",
    parts=[
        Part("A", "MTU equal to 56", mtu=56),
        Part("B", "MTU equal to 1279", mtu=1279),
    ],
)
def packet_too_big_below_the_minimum_mtu_is_discarded(t: CheckContext):
    """If a node receives a Packet Too Big message reporting a next-hop MTU
    that is less than the IPv6 minimum link MTU, it must discard it; a node
    must not reduce its estimate of the Path MTU below the IPv6 minimum
    link MTU (RFC 8201 §4).  RFC 1981 instead had the node send packets of
    1280 octets with a Fragment header; IPv6 Ready Core 5.0.x asserts RFC
    8201, and so does this check."""
    path, peer = _path_with(t)
    pkts, problems = _baseline(t, peer)
    if pkts is None:
        raise _no_baseline(t, "TN2")
    t.send(_ptb(path, pkts[0], t.p.mtu), label=f"Packet Too Big (MTU {t.p.mtu})")
    _settle(t)
    p2, seen = _after_ptb(t, peer, _link_mtu(t), seqs=(2, 3))
    if p2:
        p2.insert(0, f"the DUT applied the Packet Too Big reporting {t.p.mtu}")
    return t.conclude(seen, problems + p2)


@check(
    area="pmtu",
    ipv6ready="v6LC.4.1.7",
    title="Increase Estimate",
    rfc="RFC 8201 §4",
    fault="impostor_raises_pmtu_on_larger_packet_too_big",
    needs=["exclusive_router"],
    any_address=True,  # some global address of the DUT behind TR1 will do (scenario/offlink.py)
    liveness="echo",
    expect="after a Packet Too Big of 1280, a second one reporting a larger MTU changes nothing: 1500-octet Echo "
           "Replies to TN2 stay in fragments of at most 1280 octets",
    parts=[
        Part("A", "MTU increase", mtu=1400),
        Part("B", "MTU equal to 0x1FFFFFFF", mtu=0x1FFFFFFF),
    ],
)
def packet_too_big_never_increases_the_pmtu(t: CheckContext):
    """A node MUST NOT increase its estimate of the Path MTU in response to
    the contents of a Packet Too Big message (RFC 8201 §4)."""
    path, peer = _path_with(t)
    pkts, problems = _baseline(t, peer)
    if pkts is None:
        raise _no_baseline(t, "TN2")
    t.send(_ptb(path, pkts[0], IPV6_MIN_MTU), label="Packet Too Big (MTU 1280)")
    _settle(t)
    request, reduced = _reply(t, peer, _link_mtu(t), 2)
    first = _judge(request, reduced, IPV6_MIN_MTU)
    if first:
        raise Deviation(f"the first Packet Too Big (1280) was not applied: {'; '.join(first)}")
    t.send(_ptb(path, reduced[0], t.p.mtu), label=f"Packet Too Big (MTU {t.p.mtu})")
    _settle(t)
    p2, seen = _after_ptb(t, peer, IPV6_MIN_MTU, seqs=(3, 4))
    return t.conclude([f"after MTU 1280: {_sizes(reduced)}", *seen], problems + p2)


@check(
    area="pmtu",
    ipv6ready="v6LC.4.1.8",
    title="Router Advertisement with MTU Option",
    rfc="RFC 4861 §6.3.4, §4.6.4; RFC 8201 §3",
    scope="host",
    fault="dut_ignores_ra_mtu_option",
    needs=["exclusive_router"],
    any_address=True,  # some global address of the DUT behind TR1 will do (scenario/offlink.py)
    liveness="echo",
    expect="after TR1's Router Advertisement with an MTU option of 1280, 1500-octet Echo Replies to TN2 go in "
           "fragments of at most 1280 octets (the link MTU, and so every path's first hop, is 1280)",
)
def ra_mtu_option_sets_the_link_mtu(t: CheckContext):
    """If the MTU option is present, hosts SHOULD copy its value into
    LinkMTU when it is at least the minimum link MTU and not above the
    maximum (RFC 4861 §6.3.4); a path's PMTU starts at its first hop's MTU
    (RFC 8201 §3)."""
    path = become_router(t, mtu=IPV6_MIN_MTU)
    peer = _remote(path, "TN2")
    _settle(t)
    problems, seen = _after_ptb(t, peer, IPV6_MIN_MTU, seqs=(1, 2))
    return t.conclude(seen, problems)


@check(
    area="pmtu",
    ipv6ready="v6LC.4.1.12",
    title="Validate Packet Too Big",
    rfc="RFC 8201 §4 (SHOULD validate the PTB payload); RFC 4443 §5.2",
    fault="dut_ignores_packet_too_big",
    needs=["exclusive_router"],
    any_address=True,  # some global address of the DUT behind TR1 will do (scenario/offlink.py)
    liveness="echo",
    expect="a Packet Too Big (MTU 1280) quoting an Echo Reply the DUT never sent (another identifier) is ignored: "
           "1500-octet Echo Replies to TN2 are still sent whole",
)
def packet_too_big_not_matching_sent_traffic_is_ignored(t: CheckContext):
    """Nodes SHOULD appropriately validate the payload of ICMPv6 PTB
    messages to ensure these are received in response to transmitted
    traffic (RFC 8201 §4).  The PTB here quotes the DUT's own Echo Reply
    with its identifier changed: a packet the DUT did not send."""
    path, peer = _path_with(t)
    pkts, problems = _baseline(t, peer)
    if pkts is None:
        raise _no_baseline(t, "TN2")
    forged = pkts[0].copy()
    forged[ICMPv6EchoReply].id ^= 0x5A5A
    forged[ICMPv6EchoReply].cksum = None
    forged = Ether(bytes(forged))
    t.send(_ptb(path, forged, IPV6_MIN_MTU), label="Packet Too Big (MTU 1280) quoting an Echo Reply never sent")
    _settle(t)
    p2, seen = _after_ptb(t, peer, _link_mtu(t), seqs=(2, 3))
    if p2:
        p2.insert(0, f"the DUT applied a Packet Too Big quoting an Echo Reply (identifier "
                     f"{forged[ICMPv6EchoReply].id:#06x}) it never sent")
    return t.conclude(seen, problems + p2)


# -- v6LC.4.1.9: no increase within five minutes ---------------------------------------------
@check(
    area="pmtu",
    ipv6ready="v6LC.4.1.9",
    title="Checking For Increase in PMTU",
    rfc="RFC 8201 §4",
    fault="dut_expires_pmtu_after_30_seconds",
    needs=["exclusive_router"],
    any_address=True,  # some global address of the DUT behind TR1 will do (scenario/offlink.py)
    profile="full",
    liveness="echo",
    expect="for 5 minutes after a Packet Too Big (MTU 1280), every 1500-octet Echo Reply to TN2 (one every 30 s) "
           "goes in fragments of at most 1280 octets: no attempt to detect a PMTU increase within 5 minutes",
)
def pmtu_is_not_raised_within_five_minutes(t: CheckContext):
    """A node MUST NOT attempt to detect an increase (by sending a packet
    larger than the current estimate) in less than 5 minutes after a
    Packet Too Big has been received for the path; the recommended setting
    of this timer is twice its minimum value, 10 minutes (RFC 8201 §4)."""
    # the DUT's address in TR1's prefix must outlive the five minutes of probes (ADDRESS_LEASE_S would
    # let it expire after one minute: no Echo Reply at +91 s on a healthy DUT)
    path, peer = _path_with(t, lease_s=int(PMTU_INCREASE_MIN_S) + 60)
    pkts, problems = _baseline(t, peer)
    if pkts is None:
        raise _no_baseline(t, "TN2")
    ptb_time = t.send(_ptb(path, pkts[0], IPV6_MIN_MTU), label="Packet Too Big (MTU 1280)")
    _settle(t)
    seen = []
    seq = 2
    margin = deadline_margin(t)
    marks = [k * INCREASE_PROBE_INTERVAL_S for k in range(int(PMTU_INCREASE_MIN_S // INCREASE_PROBE_INTERVAL_S))]
    marks.append(PMTU_INCREASE_MIN_S - margin)
    for mark in marks:
        t.wait(max(0.0, ptb_time + mark - t.now()))
        request, reply = _reply(t, peer, _link_mtu(t), seq)
        elapsed = t.now() - ptb_time
        p = _judge(request, reply, IPV6_MIN_MTU)
        seen.append(f"+{elapsed:.0f}s {_sizes(reply) if reply else 'none'}")
        if p:
            raise Deviation(f"{'; '.join(seen)}: at {elapsed:.0f} s after the PTB: {'; '.join(p)}")
        seq += 1
    t.measure("probes", len(marks))
    return t.conclude([f"{len(marks)} replies over {PMTU_INCREASE_MIN_S - margin:.0f} s: " + ", ".join(seen)],
                    problems)


# -- v6LC.4.1.10 - 4.1.11: multicast destinations (the DUT originates) ---------------------------
def _originate(t: CheckContext, group: str, total: int) -> list[Packet]:
    """Make the DUT send one Echo Request of ``total`` octets to ``group``;
    return the packets it put on the link (none if it refused locally)."""
    since = t.now()
    proc = t.control.ping(group, size=total - 48, count=1, wait_s=t.reply_timeout)
    try:
        proc.wait(timeout=t.reply_timeout + 10)
    except subprocess.TimeoutExpired:
        proc.kill()
    else:
        t.control.check_exit(proc)
    t.wait(t.reply_timeout / 4)
    return [f.pkt for f in t.collect(M.ipv6_to(group), 0, since=since)]


def _first_to_group(t: CheckContext) -> Packet:
    """The DUT's full-size Echo Request to the group, before any PTB (the
    packet the PTB quotes); none is the check's FAIL (Deviation)."""
    first = _originate(t, MULTICAST_GROUP, _link_mtu(t))
    whole = [p for p in first if F.ipv6_length(p) == _link_mtu(t)]
    if whole:
        return whole[0]
    raise Deviation(f"the DUT did not send a {_link_mtu(t)}-octet Echo Request to {MULTICAST_GROUP} before the Packet "
                     f"Too Big (saw {_sizes(first) if first else 'nothing'})")


def _probe_multicast(t: CheckContext, group: str, pmtu: int) -> tuple[list[str], str]:
    """After a PTB reduced the path to ``pmtu``: a packet of exactly
    ``pmtu`` octets goes whole, a larger one never leaves as a single packet
    larger than ``pmtu`` (fragments, or a local error for the application)."""
    problems = []
    fits = _originate(t, group, pmtu)
    if not fits:
        problems.append(f"the DUT sent nothing when asked for a {pmtu}-octet Echo Request to {group}")
    elif any(F.is_fragment(p) or F.ipv6_length(p) > pmtu for p in fits):
        problems.append(f"a {pmtu}-octet Echo Request went as {_sizes(fits)} (fragmented or oversized)")
    larger = _originate(t, group, _link_mtu(t))
    over = [F.ipv6_length(p) for p in larger if F.ipv6_length(p) > pmtu]
    if over:
        problems.append(f"a {_link_mtu(t)}-octet Echo Request left as packets of {over} octets, above the PMTU {pmtu}")
    how = _sizes(larger) if larger else "refused locally (nothing sent)"
    return problems, f"{pmtu}: {_sizes(fits) if fits else 'none'}; {_link_mtu(t)}: {how}"


@check(
    area="pmtu",
    ipv6ready="v6LC.4.1.10",
    title="Multicast Destination – One Router",
    rfc="RFC 8201 §4, §5.2",
    fault="dut_ignores_packet_too_big",
    needs=["exclusive_router", "originate"],
    any_address=True,  # some global address of the DUT behind TR1 will do (scenario/offlink.py)
    liveness="echo",
    expect=f"after TR1's Packet Too Big (MTU 1280) for the DUT's Echo Request to {MULTICAST_GROUP}, the DUT sends "
           "nothing larger than 1280 octets to the group: a 1280-octet request goes whole, a 1500-octet one is "
           "fragmented (or refused to the application), never sent whole",
)
def packet_too_big_for_a_multicast_destination_is_honoured(t: CheckContext):
    """A Packet Too Big for a packet sent to a multicast address reduces
    the PMTU of that destination like any other (RFC 8201 §4); RFC 8201
    §5.2 names the multicast destination address as the path's local
    representation."""
    path = become_router(t)
    whole = _first_to_group(t)
    t.send(_ptb(path, whole, IPV6_MIN_MTU), label=f"Packet Too Big (MTU 1280) for {MULTICAST_GROUP}")
    _settle(t)
    problems, seen = _probe_multicast(t, MULTICAST_GROUP, IPV6_MIN_MTU)
    return t.conclude([seen], problems)


@check(
    area="pmtu",
    ipv6ready="v6LC.4.1.11",
    title="Multicast Destination – Two Routers",
    rfc="RFC 8201 §4, §5.2",
    fault="dut_ignores_packet_too_big",
    needs=["exclusive_router", "originate"],
    any_address=True,  # some global address of the DUT behind TR1 will do (scenario/offlink.py)
    liveness="echo",
    expect=f"with Packet Too Big messages from two routers for {MULTICAST_GROUP} (TR1: 1400, then TR2: 1280, then "
           "TR1: 1400 again), the DUT's packets to the group follow the smallest MTU reported: at most 1400 octets "
           "after the first, at most 1280 after the second, and still 1280 after the third",
)
def multicast_pmtu_is_the_smallest_reported(t: CheckContext):
    """The PMTU of a multicast destination is the minimum of the MTUs of
    the paths to its members: each Packet Too Big lowers the estimate to
    the MTU it reports, and no Packet Too Big raises it (RFC 8201 §4)."""
    path = become_router(t)
    tr2 = t.node("TR2", router=True)
    tr2_addr = path.remote("TR2-FAR").global_addr
    whole = _first_to_group(t)
    t.send(_ptb(path, whole, 1400), label="Packet Too Big (MTU 1400) from TR1")
    _settle(t)
    p1, seen1 = _probe_multicast(t, MULTICAST_GROUP, 1400)
    at_1400 = _originate(t, MULTICAST_GROUP, 1400)
    if not at_1400:
        raise Deviation(f"after TR1's PTB: {seen1}; no 1400-octet packet to quote for TR2's PTB")
    ptb2 = (Ether(src=tr2.mac, dst=t.dut.mac) / IPv6(src=tr2_addr, dst=path.dut) / ICMPv6PacketTooBig(mtu=1280)
            / Raw(bytes(at_1400[0][IPv6])[:IPV6_MIN_MTU - 48]))
    t.send(ptb2, label="Packet Too Big (MTU 1280) from TR2")
    _settle(t)
    p2, seen2 = _probe_multicast(t, MULTICAST_GROUP, IPV6_MIN_MTU)
    t.send(_ptb(path, at_1400[0], 1400), label="Packet Too Big (MTU 1400) from TR1 again")
    _settle(t)
    p3, seen3 = _probe_multicast(t, MULTICAST_GROUP, IPV6_MIN_MTU)
    problems = [f"after TR1 (1400): {x}" for x in p1] + [f"after TR2 (1280): {x}" for x in p2] + [
        f"after TR1 again (1400): {x}" for x in p3]
    return t.conclude([f"after TR1: {seen1}", f"after TR2: {seen2}", f"after TR1 again: {seen3}"], problems)
