"""IPv6-only readiness: can this host run with no IPv4 at all?

No IPv6 Ready test IDs exist for these behaviours (``ipv6ready=None``);
each check names the RFC clause it asserts, or the IPv6-only operation
rationale (OMB M-21-07: no IPv4 fallback) where no RFC mandates the
behaviour.

The tester provides the network a host learns from (Router
Advertisements with RDNSS and PREF64, a DNS server, a stateless DHCPv6
server, peers with IPv4 and IPv6 addresses) and makes the DUT act through
its control adapter (``resolve``, ``connect``, ``ping``).  Checks that need
the lab's own servers (a DHCPv4 server offering option 108, the NAT64 and
DNS64 in front of an IPv4-only server) name them in ``lab_services`` and
SKIP on real targets.  Facts about the DUT's network that only the target
file can give live under ``extensions.v6only`` (see ``settings``).
"""

from __future__ import annotations

import ipaddress
import secrets
import subprocess
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

from scapy.layers.dhcp import BOOTP, DHCP
from scapy.layers.dns import DNS, DNSQR
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPerror
from scapy.layers.inet6 import ICMPv6DestUnreach, ICMPv6EchoRequest, IPv6
from scapy.layers.l2 import ARP, Ether

from ..core.check import Part, check
from ..core.context import CheckContext, NotApplicable
from ..core.verdict import Deviation
from ..errors import BenchError
from ..net import match as M
from ..net import packets as P
from ..net import v6only as V
from ..net.nd import fresh_prefix, prefix_option, router_advertisement
from ..net.port import Frame
from ..scenario.v6only import dut_ipv4, ipv4_summary, settings

#: ports the tester's peers listen on (any free port works; these read well in a pcap)
PEER_PORT = 443


# -- the target's IPv6-only facts ------------------------------------------------------------
@dataclass
class Nat64Facts:
    dns64: str  # a resolver doing DNS64 for the DUT's link
    prefix: ipaddress.IPv6Network  # the NAT64 prefix it synthesizes with
    ipv4_only_name: str  # a name with only an A record
    ipv4_only_address: str  # that A record
    port: int  # a TCP port open on that IPv4-only server


def nat64_facts(t: CheckContext) -> Nat64Facts:
    n = settings(t.target).get("nat64")
    if not n:
        raise NotApplicable("the target file declares no NAT64/DNS64 path (extensions.v6only.nat64: dns64, prefix, "
                            "ipv4_only_name, ipv4_only_address, port)")
    try:
        facts = Nat64Facts(str(ipaddress.IPv6Address(n["dns64"])), ipaddress.IPv6Network(n["prefix"]),
                           str(n["ipv4_only_name"]), str(ipaddress.IPv4Address(n["ipv4_only_address"])),
                           int(n.get("port", 80)))
        V.nat64_address(facts.prefix, facts.ipv4_only_address)
    except (KeyError, ValueError) as exc:
        raise BenchError(f"{t.target.source}: extensions.v6only.nat64 is incomplete or invalid ({exc}); give "
                         "dns64, prefix (/32../96), ipv4_only_name, ipv4_only_address and port") from None
    return facts


# -- the DUT acting through its control adapter --------------------------------------------------
def _finish(t: CheckContext, proc: subprocess.Popen, timeout: float) -> tuple[int | None, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return None, out or "", err or ""
    t.control.check_exit(proc, err)  # ssh exit 255 is the bench's failure, not the DUT's answer
    return proc.returncode, out or "", err or ""


def require_dut_ipv4(t: CheckContext, node, v4: ipaddress.IPv4Interface, tester_ipv4: str) -> None:
    """Bench sanity on a dual-stack link: the DUT answers ARP for the IPv4
    address the target file gives it (else the IPv4 side means nothing)."""
    who_has = (Ether(src=node.mac, dst="ff:ff:ff:ff:ff:ff")
               / ARP(op=1, hwsrc=node.mac, psrc=tester_ipv4, hwdst="00:00:00:00:00:00", pdst=str(v4.ip)))
    if t.expect_reply(who_has, lambda p: ARP in p and p[ARP].op == 2 and p[ARP].psrc == str(v4.ip),
                      what=f"ARP reply for {v4.ip}") is None:
        raise BenchError(f"the DUT does not answer ARP for its IPv4 address {v4.ip} (extensions.v6only.ipv4 in the "
                         "target file): is it configured on this link?")


def dut_resolves(t: CheckContext, name: str, family: str = "any") -> list[str]:
    """The addresses the DUT's own resolver returns for ``name``."""
    limit = max(2.0, 2 * t.reply_timeout)
    _, out, _ = _finish(t, t.control.resolve(name, family=family, timeout_s=limit), limit + 2)
    return V.parse_addresses(out)


def dut_resolves_within(t: CheckContext, name: str, within: float, family: str = "any", again=None) -> list[str]:
    """Ask the DUT to resolve ``name`` until it returns addresses or ``within``
    seconds pass (it may still be applying the resolver it just learned);
    ``again`` is called between attempts (e.g. to repeat an RA)."""
    deadline = t.now() + within
    while True:
        addrs = dut_resolves(t, name, family)
        if addrs or t.now() >= deadline:
            t.note(f"the DUT resolved {name} ({family}) to {addrs or 'nothing'}")
            return addrs
        if again:
            again()
        t.wait(min(0.25, max(0.0, deadline - t.now())))


def dut_connects(t: CheckContext, host: str, port: int, proto: str = "tcp") -> tuple[bool, str]:
    limit = max(2.0, 2 * t.reply_timeout)
    rc, _, err = _finish(t, t.control.connect(host, port, proto=proto, timeout_s=limit), limit + 2)
    detail = (err.strip().splitlines() or [""])[-1]
    t.note(f"the DUT's connection to {host} port {port}/{proto}: {'ok' if rc == 0 else f'failed {detail}'}")
    return rc == 0, detail or ("timed out" if rc is None else f"exit {rc}")


def dut_pings(t: CheckContext, dst: str) -> bool:
    rc, _, _ = _finish(t, t.control.ping(dst, count=1, wait_s=max(1.0, t.reply_timeout)), t.reply_timeout + 3)
    return rc == 0


# -- the network the tester provides ------------------------------------------------------------
@contextmanager
def responding(t: CheckContext, *responders):
    """Tester-side servers (``V.DnsServer.responder`` ...) for the body of a check."""
    for r in responders:
        t.port.add_responder(r)
    try:
        yield
    finally:
        for r in responders:
            t.port.remove_responder(r)


def advertise(t: CheckContext, *, rdnss=(), pref64=None, other_config=False, router_lifetime=0, prefixes=()) -> Callable[[], None]:
    """Send TR1's Router Advertisement carrying resolvers (RFC 8106) and the
    NAT64 prefix (RFC 8781); router lifetime 0 unless the tester must be
    the default router.  Returns a function that sends it again."""
    opts = []
    if rdnss:
        opts.append(V.rdnss_option(rdnss))
    if pref64 is not None:
        opts.append(V.pref64_option(pref64))
    ra = router_advertisement(t.tr1, router_lifetime=router_lifetime, other=int(other_config),
                              prefixes=prefixes, options=opts)
    what = ", ".join(filter(None, [f"RDNSS {' '.join(rdnss)}" if rdnss else "",
                                   f"PREF64 {pref64}" if pref64 is not None else "",
                                   "O=1" if other_config else "", f"lifetime {router_lifetime} s"]))

    def send():
        t.send(ra, label=f"Router Advertisement from TR1 ({what})")

    send()
    return send


def dns_server(t: CheckContext, name: str = "DNS") -> V.DnsServer:
    return V.DnsServer(t.node(name))


def _counts(counts: dict) -> str:
    return ", ".join(f"{n} {k}" for k, n in counts.items())


def _probe_answer(probe, proto_layer, dst: str):
    """A reply to ``probe`` (same ports, swapped) or an ICMP/ICMPv6 error about it."""
    sport, dport = probe[proto_layer].sport, probe[proto_layer].dport

    def m(p):
        if proto_layer in p and p[proto_layer].sport == dport and p[proto_layer].dport == sport:
            return True
        if IPv6 in probe:
            return M.icmp6_error_for(probe, 1)(p)
        return ICMP in p and p[ICMP].type == 3 and IPerror in p and p[IPerror].dst == dst

    return m


def _from_node(t: CheckContext, node, dst: str, ipv4_src: str | None):
    if ipv4_src:
        return Ether(src=node.mac, dst=t.dut.mac) / IP(src=ipv4_src, dst=dst)
    return t.to_dut(node, dst)


def tcp_probe(t: CheckContext, node, dst: str, port: int, ipv4_src: str | None = None) -> str:
    """A SYN from an emulated node to the DUT (over IPv4 when ``ipv4_src``):
    'open' (SYN-ACK, then reset at once), 'closed' (RST or ICMP
    unreachable) or 'silent'."""
    sport = 40000 + secrets.randbelow(20000)
    syn = _from_node(t, node, dst, ipv4_src) / TCP(sport=sport, dport=port, flags="S", seq=1000)
    reply = t.expect_reply(syn, _probe_answer(syn, TCP, dst), what=f"answer to a SYN for {dst} port {port}/tcp")
    if reply is None:
        return "silent"
    if TCP in reply.pkt and str(reply.pkt[TCP].flags) == "SA":
        rst = _from_node(t, node, dst, ipv4_src) / TCP(sport=sport, dport=port, flags="R", seq=1001)
        t.send(rst, label=f"RST closing the probe of {dst} port {port}/tcp")
        return "open"
    return "closed"


#: UDP services answered by a well-known request; others are judged by ICMP "port unreachable"
UDP_REQUESTS = {
    53: lambda: bytes(DNS(id=0x6A7E, rd=1, qd=DNSQR(qname="v6gate-probe.invalid", qtype="AAAA"))),
    123: lambda: b"\x23" + b"\x00" * 47,  # NTPv4 client request (RFC 5905 §7.3): LI 0, VN 4, mode 3
}


def udp_probe(t: CheckContext, node, dst: str, port: int, ipv4_src: str | None = None) -> str:
    """A request (DNS, NTP) or a small datagram to the DUT: 'open' (an
    answer), 'closed' (port unreachable) or 'silent'."""
    sport = 40000 + secrets.randbelow(20000)
    payload = UDP_REQUESTS.get(port, lambda: b"v6gate")()
    probe = _from_node(t, node, dst, ipv4_src) / UDP(sport=sport, dport=port) / payload
    reply = t.expect_reply(probe, _probe_answer(probe, UDP, dst), what=f"answer to a datagram for {dst} port {port}/udp")
    if reply is None:
        return "silent"
    return "open" if UDP in reply.pkt and reply.pkt[UDP].sport == port and ICMPv6DestUnreach not in reply.pkt \
        and ICMP not in reply.pkt else "closed"


# =====================================================================================================
# No IPv4 on an IPv6-only link
# =====================================================================================================
@check(
    area="v6only",
    title="No IPv4 on an IPv6-only link",
    rfc="RFC 8925 §3.2 (DHCPv4 on an IPv6-only link); RFC 6540 §2; IPv6-only operation (OMB M-21-07)",
    fault="dut_runs_a_dhcpv4_client_without_option_108",
    dut_config="v6only-host",
    needs=["originate"],
    expect="no ARP, no IPv4 packet and no DHCPv4 from the DUT except DHCPDISCOVER/DHCPREQUEST asking for the "
           "IPv6-Only Preferred option (RFC 8925 §3.2), while the DUT keeps working over IPv6",
    parts=[
        Part("startup", "Start-up on an IPv6-only link", phase="startup",
             expect="from its restart through its whole start-up window (the target's ready timeout), no ARP, no "
                    "IPv4 and no DHCPv4 without option 108 from the DUT; afterwards its SLAAC address answers an "
                    "Echo Request"),
        Part("in_use", "Name resolution, connections and declared services with IPv4 absent", phase="in_use",
             expect="the DUT resolves a name through the resolver the tester's RA advertised (RDNSS), connects to it "
                    "and pings it over IPv6, its declared TCP services answer over IPv6, and it sends no ARP, no "
                    "IPv4 and no DHCPv4 without option 108 meanwhile"),
    ],
)
def host_sends_no_ipv4_on_an_ipv6_only_link(t: CheckContext):
    """An IPv6-only host works with no IPv4 on its link: it configures
    itself and its applications reach names and services over IPv6, and it
    does not fall back to IPv4 (no ARP, no IPv4 packets).  The one IPv4
    exchange RFC 8925 §3.2 allows is DHCPv4 asking for option 108: the
    client "MUST include the IPv6-Only Preferred option code in the
    Parameter Request List in the DHCPDISCOVER and DHCPREQUEST messages"
    to learn that the link prefers IPv6-only."""
    if t.p.phase == "startup":
        return _startup_without_ipv4(t)
    return _working_without_ipv4(t)


def _startup_without_ipv4(t: CheckContext):
    since = t.restart_dut()
    window = float(t.timing["ready_timeout_s"])
    t.note(f"watching the DUT's start-up for {window:g} s (target timing ready_timeout_s)")
    t.wait(window)
    bad, firsts, allowed = ipv4_summary(t, since)
    address = t.dut.global_address()
    works = _echo_answered(t, t.tn1, address)
    seen_ok = f"{_counts(allowed)} (allowed by RFC 8925)" if allowed else "no IPv4 at all"
    if bad:
        raise Deviation(f"within {window:g} s of its restart the DUT sent {_counts(bad)}: first {'; '.join(firsts)}")
    if not works:
        raise Deviation(f"no IPv4 ({seen_ok}) but its address {address} did not answer an Echo Request after the "
                         "start-up")
    return t.conclude(f"{window:g} s of start-up with {seen_ok}; {address} answered an Echo Request", [])


def _echo_answered(t: CheckContext, node, address: str) -> bool:
    req = t.to_dut(node, address) / ICMPv6EchoRequest(id=0x6E0F, seq=1, data=P.nonce(16))
    return t.expect_reply(req, M.echo_reply_to(req), what=f"Echo Reply from {address}") is not None


def _working_without_ipv4(t: CheckContext):
    since = t.now()
    dns = dns_server(t)
    server = t.node("SERVER")
    peer = V.TcpPeer(server, ports=(PEER_PORT,))
    name = V.unique_name("server")
    dns.add(name, "AAAA", server.global_addr)
    problems, seen = [], []
    with responding(t, dns.responder, peer.responder):
        again = advertise(t, rdnss=[dns.node.global_addr])
        addrs = dut_resolves_within(t, name, t.reply_timeout + 1.0, again=again)
        if server.global_addr not in addrs:
            problems.append(f"resolving {name} gave {addrs or 'nothing'} (queries seen: "
                            f"{[q.qtype for q in dns.queries_for(name)] or 'none'})")
        else:
            seen.append(f"resolved {name} to {server.global_addr}")
            ok, detail = dut_connects(t, name, PEER_PORT)
            (seen if ok else problems).append(f"TCP connection to {name} port {PEER_PORT} "
                                              f"{'established' if ok else 'failed: ' + detail}")
        if dut_pings(t, server.global_addr):
            seen.append(f"pinged {server.global_addr}")
        else:
            problems.append(f"no successful ping of {server.global_addr}")
    tn = t.tn1
    address = t.dut.global_address()
    for svc in [s for s in t.target.services if s.get("proto", "tcp") == "tcp"]:
        state = tcp_probe(t, tn, address, int(svc["port"]))
        (seen if state == "open" else problems).append(f"declared service {svc['name']} {svc['port']}/tcp is "
                                                       f"{state} over IPv6")
    bad, firsts, allowed = ipv4_summary(t, since)
    if bad:
        problems.insert(0, f"the DUT sent {_counts(bad)}: first {'; '.join(firsts)}")
    note = f"; DHCPv4 allowed by RFC 8925: {_counts(allowed)}" if allowed else ""
    if problems:
        raise Deviation("; ".join(problems + seen) + note)
    return t.conclude("; ".join(seen) + f"; no IPv4 from the DUT{note}", [])


# =====================================================================================================
# RFC 8925: the IPv6-Only Preferred option
# =====================================================================================================
def _is_offer_with_108(mac: str):
    mac_bytes = bytes(int(x, 16) for x in mac.split(":"))

    def m(p):
        return (BOOTP in p and p[BOOTP].op == 2 and bytes(p[BOOTP].chaddr)[:6] == mac_bytes
                and V.dhcp_message(p) == "DHCPOFFER" and "ipv6-only-preferred" in V.dhcp_options(p))

    return m


def _dhcp_client_messages(frames) -> list:
    return [f for f in frames if UDP in f.pkt and f.pkt[UDP].dport == V.DHCP_SERVER_PORT and DHCP in f.pkt]


def _not_claimed(t: CheckContext, seen: str):
    """RFC 8925 is optional: a host that does not claim it is reported, not failed."""
    raise NotApplicable(f"the target does not claim RFC8925 (capabilities in the target file); for information: "
                        f"{seen}")


@check(
    area="v6only",
    title="DHCPv4 IPv6-Only Preferred option (IPv6-mostly link)",
    rfc="RFC 8925 §3.2",
    dut_config="v6only-host",
    lab_services=["router-ipv4-lan", "kea-dhcp4-v6mostly", "hub"],
    expect="the DUT asks for option 108 in its DHCPDISCOVER and DHCPREQUEST; after a DHCPOFFER carrying it, it "
           "does not request the offered address, configures no IPv4 address and stops DHCPv4 for V6ONLY_WAIT",
    parts=[
        Part("request", "DHCPDISCOVER asks for option 108", phase="request",
             fault="dut_runs_a_dhcpv4_client_without_option_108",
             expect="every DHCPDISCOVER and DHCPREQUEST the DUT sends after its restart carries 108 in its Parameter "
                    "Request List (option 55)"),
        Part("offer", "No DHCPREQUEST and no IPv4 address after an OFFER with option 108", phase="offer",
             fault="impostor_uses_an_address_offered_with_option_108",
             expect="after the server's DHCPOFFER carrying option 108, no DHCPREQUEST, DHCPDISCOVER or ARP from the "
                    "DUT for the DHCP client's first retransmission time (RFC 2131 §4.1: 4 s +- 1 s), and no answer "
                    "to an ARP probe for the offered address"),
        Part("wait", "DHCPv4 stays quiet for V6ONLY_WAIT", phase="wait", profile="full",
             fault="impostor_resumes_dhcpv4_before_v6only_wait",
             expect="no DHCPv4 message from the DUT for V6ONLY_WAIT after the OFFER: the option's value, at least "
                    "MIN_V6ONLY_WAIT (300 s, RFC 8925 §3.4)"),
    ],
)
def ipv6_only_preferred_option_stops_dhcpv4(t: CheckContext):
    """RFC 8925 §3.2: a client in IPv6-only preferred mode "MUST include
    the IPv6-Only Preferred option code in the Parameter Request List in the
    DHCPDISCOVER and DHCPREQUEST messages".  When the DHCPOFFER carries the
    option, the client "MUST NOT request the IPv4 address provided in the
    DHCPOFFER" and "SHOULD stop the DHCPv4 configuration process for
    V6ONLY_WAIT seconds", the option's value or MIN_V6ONLY_WAIT (300 s),
    whichever is greater."""
    since = t.restart_dut()
    window = float(t.timing["ready_timeout_s"])
    discover = t.port.expect(t.from_dut(lambda p: V.dhcp_message(p) == "DHCPDISCOVER"), window, since=since)
    if discover is None:
        seen = f"no DHCPDISCOVER within {window:g} s of its restart: it runs no DHCPv4 client"
        if not t.target.claims("RFC8925"):
            _not_claimed(t, seen)
        raise Deviation(seen)
    if t.p.phase == "request":
        return _asks_for_108(t, since, discover)
    offer = t.port.expect(_is_offer_with_108(t.dut.mac), t.reply_timeout + V.DHCP_FIRST_RETRANSMIT_S, since=since)
    if offer is None:
        if not t.target.claims("RFC8925") and 108 not in V.dhcp_prl(discover.pkt):
            _not_claimed(t, "its DHCPDISCOVER does not ask for option 108, so no server offers it")
        raise BenchError("no DHCPOFFER carrying option 108 for the DUT was seen on the link: is the lab's DHCPv4 "
                         "server (kea-dhcp4-v6mostly) up, and does the tester see its frames (hub)?")
    yiaddr = offer.pkt[BOOTP].yiaddr
    wait_s = max(V.dhcp_options(offer.pkt)["ipv6-only-preferred"], V.MIN_V6ONLY_WAIT_S)
    t.note(f"DHCPOFFER of {yiaddr} with option 108 = {V.dhcp_options(offer.pkt)['ipv6-only-preferred']} s "
           f"(V6ONLY_WAIT {wait_s} s) at +{offer.time - since:.3f} s")
    if t.p.phase == "offer":
        return _stops_after_offer(t, since, offer, yiaddr)
    return _quiet_for_v6only_wait(t, offer, wait_s)


def _asks_for_108(t: CheckContext, since, discover):
    t.wait(max(0.0, discover.time + t.reply_timeout - t.now()))
    msgs = [f for f in _dhcp_client_messages(t.collect(M.anything(), 0, since=since))
            if V.dhcp_message(f.pkt) in ("DHCPDISCOVER", "DHCPREQUEST")]
    without = [f for f in msgs if V.OPTION_V6ONLY_PREFERRED not in V.dhcp_prl(f.pkt)]
    seen = (f"{len(msgs)} DHCPDISCOVER/DHCPREQUEST, {len(without)} without option 108"
            + (f": first {V.describe_ipv4_frame(without[0], since)}" if without else
               f"; parameter request list {V.dhcp_prl(discover.pkt)}"))
    if not t.target.claims("RFC8925"):
        _not_claimed(t, seen)
    if without:
        raise Deviation(seen)
    return t.conclude(seen, [])


def _stops_after_offer(t: CheckContext, since, offer, yiaddr):
    window = max(t.silence, float(V.DHCP_FIRST_RETRANSMIT_S))
    t.wait(max(0.0, offer.time + window - t.now()))
    after = [f for f in t.collect(M.anything(), 0, since=offer.time) if V.ipv4_kind_of(f.pkt)]
    problems = [V.describe_ipv4_frame(f, since) for f in after]
    probe = V.arp_probe(t.tn1.mac, yiaddr)
    answer = t.expect_reply(probe, lambda p: ARP in p and p[ARP].op == 2 and p[ARP].psrc == yiaddr,
                            what=f"ARP reply for {yiaddr}")
    if answer is not None:
        problems.append(f"it answered an ARP probe for the offered {yiaddr}: it configured the address")
    seen = f"DHCPOFFER of {yiaddr} with option 108 at +{offer.time - since:.3f} s"
    if not t.target.claims("RFC8925"):
        _not_claimed(t, f"{seen}; afterwards: {'; '.join(problems) or 'no DHCPv4 and no ARP'}")
    if problems:
        raise Deviation(f"{seen}; then within {window:g} s: {'; '.join(problems[:4])}"
                         + (f" (+{len(problems) - 4} more)" if len(problems) > 4 else ""))
    if not t.alive(method=t.check.liveness or "ns"):
        raise Deviation(f"{seen}; no DHCPv4 or ARP afterwards, but the DUT stopped answering")
    return t.conclude(f"{seen}; no DHCPREQUEST, DHCPDISCOVER or ARP from the DUT within {window:g} s and no answer to an "
                       f"ARP probe for {yiaddr}", [])


def _quiet_for_v6only_wait(t: CheckContext, offer, wait_s):
    # RFC 8925 §3.2: quiet for V6ONLY_WAIT; a second of tolerance for the client's timer granularity.
    # Watched as it happens: the port keeps minutes of history, V6ONLY_WAIT is longer.
    until = offer.time + wait_s - 1.0
    t.note(f"watching DHCPv4 for {wait_s - 1.0:g} s after the OFFER")
    first = t.port.expect(t.from_dut(lambda p: UDP in p and p[UDP].dport == V.DHCP_SERVER_PORT and DHCP in p),
                          max(0.0, until - t.now()), since=offer.time + 0.001)
    if first is not None and first.time >= until:
        first = None
    seen = (f"{V.dhcp_message(first.pkt)} {first.time - offer.time:.1f} s after the OFFER" if first else
            f"no DHCPv4 message for {wait_s - 1:g} s after the OFFER")
    if not t.target.claims("RFC8925"):
        _not_claimed(t, f"{seen} (V6ONLY_WAIT {wait_s} s)")
    if first is not None:
        raise Deviation(f"{seen}, within V6ONLY_WAIT ({wait_s} s): {V.describe_ipv4_frame(first, offer.time)}")
    if not t.alive(method=t.check.liveness or "ns"):
        raise Deviation(f"{seen}, but the DUT stopped answering")
    return t.conclude(f"{seen} (V6ONLY_WAIT {wait_s} s)", [])


# =====================================================================================================
# DNS over IPv6
# =====================================================================================================
@check(
    area="v6only",
    title="Names resolved over IPv6 with resolvers learned over IPv6",
    rfc="RFC 8106 §5.3.1 (RDNSS); RFC 3646 §3 with RFC 8415 §18.2.6 (DHCPv6 DNS servers); RFC 3596 §2.1 (AAAA)",
    fault="dut_sends_no_dns_over_ipv6",
    dut_config="v6only-host",
    needs=["originate"],
    expect="the DUT sends its queries for a name to the resolver it learned over IPv6, over IPv6, asks for its AAAA "
           "record, returns the address, and sends no DNS over IPv4 (nor ARP) meanwhile",
    parts=[
        Part("rdnss", "Resolver from a Router Advertisement (RDNSS)", source="rdnss",
             rfc="RFC 8106 §5.3.1; RFC 3596 §2.1"),
        Part("dhcpv6", "Resolver from stateless DHCPv6 (O flag, DNS Recursive Name Server option)", source="dhcpv6",
             rfc="RFC 8415 §18.2.6; RFC 3646 §3; RFC 3596 §2.1",
             expect="after an RA with the O flag the DUT asks stateless DHCPv6 (Information-Request) for its "
                    "configuration, then sends its queries over IPv6 to the DNS server the Reply named, asks for "
                    "AAAA and returns the address; no DNS over IPv4"),
    ],
)
def names_are_resolved_over_ipv6(t: CheckContext):
    """A host on an IPv6-only link learns its recursive resolvers over
    IPv6: from the RA's RDNSS option (RFC 8106 §5.3.1: the host "SHOULD"
    use them) or from stateless DHCPv6 (RFC 8415 §18.2.6, option 23 of
    RFC 3646), asks for AAAA records (RFC 3596) and uses no IPv4 resolver
    (there is none to fall back to)."""
    since = t.now()
    dns = dns_server(t)
    target = t.node("NAMED")
    name = V.unique_name("named")
    dns.add(name, "AAAA", target.global_addr)
    responders = [dns.responder]
    dhcp6 = None
    if t.p.source == "dhcpv6":
        dhcp6 = V.Dhcp6InfoServer(t.node("DHCP6"), [dns.node.global_addr])
        responders.append(dhcp6.responder)
    within = t.reply_timeout + (V.INF_MAX_DELAY_S if dhcp6 else 0) + 1.0
    with responding(t, *responders):
        # with DHCPv6 the RA only says "ask DHCPv6 for other configuration" (O=1)
        again = advertise(t, other_config=True) if dhcp6 else advertise(t, rdnss=[dns.node.global_addr])
        addrs = dut_resolves_within(t, name, within, again=again)
    queries = dns.queries_for(name)
    bad, firsts, _ = ipv4_summary(t, since)
    dns4 = t.collect(lambda p: IP in p and UDP in p and V.DNS_PORT in (p[UDP].sport, p[UDP].dport), 0, since=since)
    problems = []
    how = "RDNSS" if not dhcp6 else "stateless DHCPv6"
    if dhcp6 and not dhcp6.requests:
        problems.append("no DHCPv6 Information-Request after an RA with the O flag")
    if not queries:
        problems.append(f"no query for {name} reached the resolver learned by {how} ({dns.node.global_addr})")
    elif "AAAA" not in {q.qtype for q in queries}:
        problems.append(f"queries for {name} asked only for {sorted({q.qtype for q in queries})}, never AAAA")
    if target.global_addr not in addrs:
        problems.append(f"the DUT's resolver returned {addrs or 'nothing'}, not {target.global_addr}")
    if dns4:
        problems.append(f"{len(dns4)} DNS messages over IPv4, the first to {dns4[0].pkt[IP].dst}")
    if bad:
        problems.append(f"IPv4 meanwhile: {_counts(bad)} (first {firsts[0]})")
    seen = (f"{len(queries)} queries for {name} over IPv6 to {dns.node.global_addr} ({', '.join(q.qtype for q in queries)})"
            f", answer {addrs or 'none'}")
    return t.conclude(seen, problems, passed=f"learned by {how}: {seen}; no DNS over IPv4")


# =====================================================================================================
# NAT64 / DNS64 path to an IPv4-only server
# =====================================================================================================
@check(
    area="v6only",
    title="An IPv4-only server is reached over IPv6 through DNS64 and NAT64",
    rfc="RFC 6147 §5.1.7 (DNS64 synthesis); RFC 6146 §1 (NAT64); RFC 6052 §2.2",
    fault="dut_drops_traffic_to_the_nat64_prefix",
    dut_config="v6only-host",
    needs=["originate"],
    lab_services=["router-ipv4-wan", "nat64", "dns64", "v4srv-ipv4", "v4srv-dns", "v4srv-web", "hub"],
    expect="the DUT resolves a name that has only an A record to the AAAA its DNS64 resolver synthesizes in the "
           "NAT64 prefix, and opens a TCP connection to it over IPv6 (through the NAT64 to the IPv4-only server)",
)
def ipv4_only_name_is_reached_through_nat64(t: CheckContext):
    """IPv6-only hosts reach the IPv4 Internet through NAT64 (RFC 6146)
    with DNS64 (RFC 6147): for a name with no AAAA record the DNS64
    synthesizes one from the A record with the NAT64 prefix (RFC 6052
    §2.2), and the host simply connects to it over IPv6."""
    nat = nat64_facts(t)
    since = t.now()
    expected = V.nat64_address(nat.prefix, nat.ipv4_only_address)
    again = advertise(t, rdnss=[nat.dns64])
    addrs = dut_resolves_within(t, nat.ipv4_only_name, t.reply_timeout + 1.0, again=again)
    if expected not in addrs:
        raise Deviation(f"the DUT resolved {nat.ipv4_only_name} (A {nat.ipv4_only_address} only) through {nat.dns64} "
                         f"to {addrs or 'nothing'}, not to the synthesized {expected}")
    ok, detail = dut_connects(t, nat.ipv4_only_name, nat.port)
    syns = t.collect(lambda p: IPv6 in p and TCP in p and P.same_address(p[IPv6].dst, expected)
                     and str(p[TCP].flags) == "S", 0, since=since)
    wire = f"; SYN to {expected} seen on the link" if syns else ""
    bad, firsts, _ = ipv4_summary(t, since)
    if bad:
        raise Deviation(f"the DUT sent {_counts(bad)} (first {firsts[0]})")
    if not ok:
        raise Deviation(f"resolved {nat.ipv4_only_name} to {expected}, but the TCP connection to port {nat.port} "
                         f"failed: {detail}{wire}")
    return t.conclude(f"resolved {nat.ipv4_only_name} to {expected} (DNS64 {nat.dns64}, prefix {nat.prefix}) and "
                       f"connected to port {nat.port}{wire}", [])


# =====================================================================================================
# Dual stack: service parity and address selection
# =====================================================================================================
@check(
    area="v6only",
    title="Declared services answer over IPv6 on the same ports as over IPv4",
    rfc="RFC 6540 §2 (IPv6 support equivalent to IPv4); IPv6-only operation (OMB M-21-07)",
    dut_config="dual-stack-host",
    expect="every service the target declares answers over IPv6 (a SYN-ACK, or a reply to a UDP request); where the "
           "DUT also has IPv4, no service answers over IPv4 only",
    parts=[
        Part("tcp", "TCP services", proto="tcp", fault="dut_web_service_answers_only_over_ipv4"),
        Part("udp", "UDP services", proto="udp", fault="dut_dns_service_answers_only_over_ipv4",
             expect="every UDP service the target declares answers its request (DNS, NTP) over IPv6, or is not "
                    "refused (no port unreachable) where it has no request/answer; never over IPv4 only"),
    ],
)
def declared_services_answer_over_ipv6(t: CheckContext):
    """An IPv6-only network reaches a device's services over IPv6 only:
    every service it offers must be reachable over IPv6, on the same ports
    as over IPv4 (a port open on IPv4 only is a service lost when IPv4 is
    turned off).  RFC 6540 §2: IPv6 support "MUST be equivalent or better
    in quality and functionality when compared to IPv4 support"."""
    services = [s for s in t.target.services if s.get("proto", "tcp") == t.p.proto]
    if not services:
        raise NotApplicable(f"the target declares no {t.p.proto.upper()} services (services: in the target file)")
    v4 = dut_ipv4(t)
    tn = t.tn1
    tn4 = str(v4.network.network_address + 200) if v4 else None
    peer = V.TcpPeer(tn, ports=(), ipv4=tn4)  # answers ARP for the tester's IPv4 identity
    address = t.dut.global_address()
    probe = tcp_probe if t.p.proto == "tcp" else udp_probe
    rows, problems = [], []
    with responding(t, peer.responder):
        if v4:
            require_dut_ipv4(t, tn, v4, tn4)
        for s in services:
            port = int(s["port"])
            six = probe(t, tn, address, port)
            four = probe(t, tn, str(v4.ip), port, ipv4_src=tn4) if v4 else None
            rows.append(f"{s['name']} {port}/{t.p.proto}: IPv6 {six}" + (f", IPv4 {four}" if four else ""))
            if t.p.proto == "tcp" or port in UDP_REQUESTS:
                ok6, ok4 = six == "open", four == "open"
            else:  # no request/answer: judged by refusal only
                ok6, ok4 = six != "closed", four is not None and four != "closed"
            if ok4 and not ok6:
                problems.append(f"{s['name']} port {port}/{t.p.proto} answers over IPv4 ({v4.ip}) but not over IPv6 "
                                f"({address}: {six})")
            elif not ok6 and not ok4:
                problems.append(f"{s['name']} port {port}/{t.p.proto} does not answer over IPv6 ({six})")
    seen = "; ".join(rows) + ("" if v4 else " (the DUT has no IPv4 address: extensions.v6only.ipv4 is not set)")
    return t.conclude(seen, problems)


@check(
    area="v6only",
    title="IPv6 is preferred for a name with AAAA and A records on a dual-stack link",
    rfc="RFC 6724 §6 rule 6 and §2.1 default policy table; RFC 8305 §4",
    fault="dut_prefers_ipv4_in_address_selection",
    dut_config="dual-stack-host",
    needs=["originate"],
    expect="asked to connect to a name that has both an AAAA and an A record, the DUT sends its first SYN to the "
           "IPv6 address (precedence 40 of ::/0 over 35 of ::ffff:0:0/96) and connects over IPv6",
)
def ipv6_is_preferred_for_a_dual_stack_name(t: CheckContext):
    """With both families available, destination address selection
    (RFC 6724 §6, rule 6: prefer higher precedence) with the default
    policy table (§2.1) orders IPv6 destinations before IPv4-mapped ones,
    and Happy Eyeballs (RFC 8305 §4) starts with the first address of that
    order: the host tries IPv6 first."""
    v4 = dut_ipv4(t)
    if v4 is None:
        raise NotApplicable("the DUT has no IPv4 address on this link (extensions.v6only.ipv4 in the target file): "
                            "there is no dual-stack choice to make")
    since = t.now()
    dns = dns_server(t)
    server = t.node("DUALSTACK")
    server4 = str(v4.network.network_address + 201)
    peer = V.TcpPeer(server, ports=(PEER_PORT,), ipv4=server4)
    name = V.unique_name("dualstack")
    dns.add(name, "AAAA", server.global_addr)
    dns.add(name, "A", server4)
    with responding(t, dns.responder, peer.responder):
        require_dut_ipv4(t, server, v4, server4)
        again = advertise(t, rdnss=[dns.node.global_addr])
        addrs = dut_resolves_within(t, name, t.reply_timeout + 1.0, again=again)
        if not addrs:
            raise Deviation(f"the DUT did not resolve {name} (AAAA {server.global_addr}, A {server4}) through its "
                             f"RDNSS resolver {dns.node.global_addr}")
        ok, detail = dut_connects(t, name, PEER_PORT)
    first = peer.first_syn()
    order = f"resolver order {addrs}"
    if first is None:
        raise Deviation(f"no SYN reached {server.global_addr} or {server4} ({order}; connection: {detail})")
    t.measure("first_syn_family", f"IPv{first.family}")
    seen = f"first SYN to {first.dst} (IPv{first.family}) +{first.time - since:.3f} s; {order}"
    if first.family != 6:
        raise Deviation(seen)
    if not ok:
        raise Deviation(f"{seen}, but the connection failed: {detail}")
    return t.conclude(f"{seen}; connected over IPv6", [])


# =====================================================================================================
# CLAT: NAT64 prefix discovery (PREF64, ipv4only.arpa) used for IPv4-literal traffic
# =====================================================================================================
#: an IPv4 literal the DUT is asked to reach when the target declares no IPv4-only server
DEFAULT_IPV4_LITERAL = "198.18.0.10"


@check(
    area="v6only",
    title="CLAT translates IPv4-literal traffic with the discovered NAT64 prefix",
    rfc="RFC 6877 §6.3; RFC 6052 §2.2",
    capabilities=["Core", "CLAT"],
    needs=["exclusive_router", "originate"],
    dut_config="clat-host",
    fault="clat_uses_a_static_nat64_prefix",
    expect="asked to connect to an IPv4 literal, the DUT's CLAT sends the connection over IPv6 to the literal "
           "embedded (RFC 6052) in the NAT64 prefix the network advertised, and the connection succeeds",
    parts=[
        Part("pref64", "NAT64 prefix from the PREF64 option of a Router Advertisement", source="pref64",
             rfc="RFC 8781 §5; RFC 6877 §6.3; RFC 6052 §2.2"),
        Part("ipv4only_arpa", "NAT64 prefix from the AAAA records of ipv4only.arpa", source="rfc7050",
             rfc="RFC 7050 §3; RFC 8880 §7.1; RFC 6877 §6.3; RFC 6052 §2.2",
             expect="the DUT asks its resolver (learned over IPv6) for the AAAA records of ipv4only.arpa, and its "
                    "CLAT then sends IPv4-literal connections over IPv6 to the literal embedded in the prefix "
                    "those records reveal"),
    ],
)
def clat_uses_the_discovered_nat64_prefix(t: CheckContext):
    """A CLAT (RFC 6877 §6.3) translates the host's IPv4 packets into IPv6
    with the NAT64 prefix of the network, which it discovers from the PREF64
    option of Router Advertisements (RFC 8781 §5: hosts "SHOULD" use it) or
    from the synthesized AAAA records of ipv4only.arpa (RFC 7050 §3).  The
    tester advertises a NAT64 prefix nobody else knows, so only a CLAT that
    learned it can send to the literal embedded in it (RFC 6052 §2.2)."""
    literal = (settings(t.target).get("nat64") or {}).get("ipv4_only_address", DEFAULT_IPV4_LITERAL)
    fresh = fresh_prefix(avoid=t.target.link_prefix)
    nat64 = ipaddress.IPv6Network(f"{fresh.network_address}/96")
    expected = V.nat64_address(nat64, literal)
    port = 80
    tr1 = t.tr1
    tr1.extra_addrs.append(expected)  # the tester plays the NAT64 and the server behind it
    peer = V.TcpPeer(tr1, ports=(port,))
    responders = [peer.responder]
    dns = None
    if t.p.source == "rfc7050":
        dns = dns_server(t)
        for well_known in V.WELL_KNOWN_IPV4:
            dns.add(V.IPV4ONLY_ARPA, "AAAA", V.nat64_address(nat64, well_known))
            dns.add(V.IPV4ONLY_ARPA, "A", well_known)
        responders.append(dns.responder)
    since = t.now()
    within = float(t.timing["ready_timeout_s"])
    with responding(t, *responders):
        again = advertise(t, router_lifetime=1800, prefixes=[prefix_option(t.target.link_prefix)],
                          pref64=nat64 if t.p.source == "pref64" else None,
                          rdnss=[dns.node.global_addr] if dns else ())
        ok, detail = False, ""
        deadline = t.now() + within
        syns6 = []
        while not syns6 and t.now() < deadline:  # until its CLAT has a prefix and sends
            ok, detail = dut_connects(t, literal, port)
            syns6 = t.collect(lambda p: IPv6 in p and TCP in p and str(p[TCP].flags) == "S" and p[TCP].dport == port,
                              0, since=since)
            if not syns6:
                again()
                t.wait(0.5)
    elsewhere = [f.pkt[IPv6].dst for f in syns6 if not P.same_address(f.pkt[IPv6].dst, expected)]
    problems = []
    if dns is not None:
        asked = {q.qtype for q in dns.queries_for(V.IPV4ONLY_ARPA)}
        if "AAAA" not in asked:
            problems.append(f"no AAAA query for {V.IPV4ONLY_ARPA} reached the resolver {dns.node.global_addr}")
    source = "PREF64" if t.p.source == "pref64" else f"{V.IPV4ONLY_ARPA} (RFC 7050)"
    first = peer.first_syn()
    if first is None:
        where = f"; its SYNs went to {', '.join(sorted(set(elsewhere)))} instead" if elsewhere else ""
        problems.append(f"no SYN to {expected} ({literal} in the advertised prefix {nat64}) within {within:g} s"
                        f"{where}; connection: {detail or 'not attempted'}")
    elif not ok:
        problems.append(f"SYN to {expected} from {first.src}, but the connection to {literal} failed: {detail}")
    if problems:
        return t.conclude(f"NAT64 prefix {nat64} from {source}", problems)
    return t.conclude(f"NAT64 prefix {nat64} from {source}: the connection to {literal}:{port} left as a SYN from "
                       f"{first.src} to {expected} (+{first.time - since:.3f} s) and succeeded", [])


# PREF64 lifetime (RFC 8781 §4, §5): the host stops using a NAT64 prefix whose lifetime is over
# =====================================================================================================
#: how long after its lifetime ends a CLAT may still use a PREF64 (its own timer granularity and a loaded bench)
PREF64_EXPIRY_MARGIN_S = 1.5


def _clat_syn(t: CheckContext, literal: str, expected: str, port: int) -> tuple[Frame | None, str]:
    """Ask the DUT to connect to ``literal``; the first SYN it sent to
    ``expected`` (the literal in the advertised NAT64 prefix), if any."""
    since = t.now()
    ok, detail = dut_connects(t, literal, port)
    syns = t.collect(lambda p: IPv6 in p and TCP in p and str(p[TCP].flags) == "S" and p[TCP].dport == port
                     and P.same_address(p[IPv6].dst, expected), 0, since=since)
    return (syns[0] if syns else None), ("connected" if ok else f"connection failed: {detail}")


@check(
    area="v6only",
    title="PREF64 lifetime: a NAT64 prefix is used for its scaled lifetime and no longer",
    rfc="RFC 8781 §4, §5",
    capabilities=["Core", "CLAT"],
    needs=["exclusive_router", "originate"],
    dut_config="clat-host",
    fault="clat_keeps_expired_nat64_prefix",
    expect="the DUT's CLAT uses the NAT64 prefix of a PREF64 option while its lifetime runs and stops using it "
           "when the lifetime is over",
    parts=[
        Part("lifetime-zero", "A PREF64 with lifetime 0 withdraws the prefix", lifetime=0,
             expect="after a PREF64 with lifetime 0 for the prefix in use, an IPv4-literal connection sends no SYN "
                    "to the literal in that prefix"),
        Part("scaled-lifetime", "The scaled lifetime counts in units of 8 seconds", lifetime=8,
             fault="clat_reads_pref64_lifetime_as_seconds",
             expect="after a PREF64 with Scaled Lifetime 1 (8 s) for the prefix in use, the prefix is still used "
                    "4 s later and no longer 8 s (+1.5 s margin) later"),
    ],
)
def pref64_lifetime_is_honoured(t: CheckContext):
    """'Scaled Lifetime: 13-bit unsigned integer. The maximum time in units of
    8 seconds over which this NAT64 prefix MAY be used' (RFC 8781 §4); a
    lifetime of zero says the prefix must no longer be used, and a host
    uses the prefix only while the lifetime runs (§5)."""
    literal = (settings(t.target).get("nat64") or {}).get("ipv4_only_address", DEFAULT_IPV4_LITERAL)
    nat64 = ipaddress.IPv6Network(f"{fresh_prefix(avoid=t.target.link_prefix).network_address}/96")
    expected, port, tr1 = V.nat64_address(nat64, literal), 80, t.tr1
    tr1.extra_addrs.append(expected)
    peer = V.TcpPeer(tr1, ports=(port,))

    def ra(lifetime: int) -> float:
        return t.send(router_advertisement(tr1, router_lifetime=1800, prefixes=[prefix_option(t.target.link_prefix)],
                                           options=[V.pref64_option(nat64, lifetime)]),
                      label=f"RA from TR1: PREF64 {nat64}, lifetime {lifetime} s (scaled {(lifetime + 7) // 8})")

    with responding(t, peer.responder):
        # first the prefix with a long lifetime, until the CLAT has set up its translation with it
        start, syn, detail = t.now(), None, ""
        deadline = start + float(t.timing["ready_timeout_s"])
        while syn is None and t.now() < deadline:
            ra(1800)
            syn, detail = _clat_syn(t, literal, expected, port)
        if syn is None:
            raise Deviation(f"the DUT never used the NAT64 prefix {nat64} (PREF64 lifetime 1800 s): no SYN to "
                             f"{expected} within {deadline - start:.1f} s ({detail}); the lifetime cannot be judged")
        used = f"SYN to {expected} {syn.time - start:.2f} s after the first RA"
        sent = ra(t.p.lifetime)
        if t.p.lifetime == 0:
            t.wait(0.5)
            after, detail = _clat_syn(t, literal, expected, port)
            if after is not None:
                raise Deviation(f"the prefix is still used {after.time - sent:.2f} s after a PREF64 with lifetime"
                                 f" 0 ({used} before it)")
            return t.conclude(f"{used}; none after the PREF64 with lifetime 0 ({detail})", [])
        t.wait(max(0.0, sent + t.p.lifetime / 2 - t.now()))
        mid, _ = _clat_syn(t, literal, expected, port)
        if mid is None:
            raise Deviation(f"{used}; but no SYN to {expected} {t.p.lifetime / 2:g} s after the RA that set its "
                             f"lifetime to {t.p.lifetime} s (Scaled Lifetime {(t.p.lifetime + 7) // 8} read as "
                             "seconds?)")
        t.wait(max(0.0, sent + t.p.lifetime + PREF64_EXPIRY_MARGIN_S - t.now()))
        late, detail = _clat_syn(t, literal, expected, port)
        if late is not None:
            raise Deviation(f"the prefix is still used {late.time - sent:.2f} s after an RA that gave it "
                             f"{t.p.lifetime} s ({used}; again at +{mid.time - sent:.2f} s)")
        return t.conclude(f"{used}; after the RA giving it {t.p.lifetime} s: used at +{mid.time - sent:.2f} s, not at "
                           f"+{t.p.lifetime + PREF64_EXPIRY_MARGIN_S:g} s ({detail})", [])
