"""Control-plane timing trials, measured on the tester's wire (any DUT).

* RA to a usable SLAAC address (RFC 4862 §5.5.3, §5.4): the tester's router
  advertises a fresh prefix; the time runs from the RA to the first Echo
  Reply from the address the DUT formed (learned from its DAD probe).  Echo
  Requests go out every ``POLL_S``; a tentative address does not answer
  (§5.4), so the first reply marks the address usable.
* NS to NA (RFC 4861 §7.2.4): a Neighbor Solicitation for the DUT's
  link-local address from a fresh emulated node; the time to its solicited
  Neighbor Advertisement.
* Link-up to DHCPv6 lease (RFC 8415 §18.2.1): the DUT restarts (its link
  comes up); the time until it holds an address that is not its SLAAC or
  link-local one (read through the control adapter).  A host starts
  DHCPv6 when a Router Advertisement says M=1 (RFC 4861 §4.2), so the
  tester's router advertises M=1 O=1 as the link comes up and answers the
  DUT's Router Solicitations with it; the server is the network's own (the
  lab's Kea), not the tester.
"""

from __future__ import annotations

import ipaddress
import time

from scapy.layers.inet6 import ICMPv6EchoRequest, ICMPv6ND_NS, ICMPv6ND_RS, ICMPv6NDOptSrcLLAddr, IPv6

from ..core.context import NotApplicable
from ..core.control import NotSupported
from ..errors import UsageError
from ..net import match as M
from ..net import packets as P
from ..net.nd import fresh_prefix, is_dad_ns_for, prefix_option, router_advertisement
from .engine import Measure
from .profiles import GateProfile

POLL_S = 0.01


def ra_to_usable_address(t, prof: GateProfile, i: int) -> Measure:
    target_s = prof.metrics[0].target
    give_up = 3 * target_s + 2.0  # a missing address is a (very slow) sample, not a hang
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    tr = t.node(f"TR{i}", router=True)
    tn = t.node(f"TN{i}", prefix=prefix)
    ra = router_advertisement(tr, prefixes=[prefix_option(prefix, valid=300, preferred=300)])
    sent = t.port.send(ra)
    dad = t.port.expect(t.from_dut(lambda p: is_dad_ns_for(p, prefix)), give_up, since=sent)
    if dad is None:
        return Measure({"time": give_up}, 0.0, 0.0, {"prefix": str(prefix), "dad_ns": None, "usable": False,
                                                  "note": f"no DAD probe for an address in {prefix}"})
    addr = dad.pkt[ICMPv6ND_NS].tgt
    seq = 0
    while True:
        seq += 1
        req = tn.ipv6(addr, t.dut.mac, src=tn.global_addr) / ICMPv6EchoRequest(id=0x6A7E, seq=seq & 0xFFFF,
                                                                                data=P.nonce(8))
        since = t.port.send(req)
        reply = t.port.expect(t.from_dut(M.echo_reply_to(req)), POLL_S, since=since)
        if reply is not None:
            return Measure({"time": reply.time - sent}, 0.0, 0.0,
                           {"prefix": str(prefix), "address": addr, "dad_ns_after_s": round(dad.time - sent, 4),
                            "echo_requests": seq, "usable": True})
        if t.port.now() - sent > give_up:
            return Measure({"time": give_up}, 0.0, 0.0, {"prefix": str(prefix), "address": addr,
                                                      "dad_ns_after_s": round(dad.time - sent, 4),
                                                      "echo_requests": seq, "usable": False})


def ns_to_na(t, prof: GateProfile, i: int) -> Measure:
    tn = t.node(f"TN{i}")
    target = t.dut.link_local
    ns = (tn.ipv6(P.solicited_node(target), "", hlim=255) / ICMPv6ND_NS(tgt=target)
          / ICMPv6NDOptSrcLLAddr(lladdr=tn.mac))
    give_up = max(t.reply_timeout, 3 * prof.metrics[0].target / 1000)
    sent = t.port.send(ns)
    na = t.port.expect(t.from_dut(M.all_of(M.na_for(target), M.ipv6_to(tn.link_local))), give_up, since=sent)
    if na is None:
        return Measure({"time": give_up * 1000}, 0.0, 0.0, {"target": target, "answered": False})
    t.wait(0.02)  # keep probes apart
    return Measure({"time": (na.time - sent) * 1000}, 0.0, 0.0, {"target": target, "answered": True,
                                                              "na_src": na.pkt[IPv6].src})


def link_up_to_dhcpv6_lease(t, prof: GateProfile, i: int) -> Measure:
    target_s = prof.metrics[0].target
    give_up = 3 * target_s
    iid = P.eui64_iid(t.dut.mac)
    managed_ra = router_advertisement(t.tr1, prefixes=[prefix_option(t.target.link_prefix, autonomous=0, valid=3600,
                                                                      preferred=3600)],
                                      router_lifetime=1800, managed=1, other=1)
    dut_mac = bytes.fromhex(t.dut.mac.replace(":", ""))

    def answer_rs(port, frame):
        if frame.raw[6:12] == dut_mac and ICMPv6ND_RS in frame.pkt:
            port.send(managed_ra)

    t.port.add_responder(answer_rs)
    try:
        return _lease_after_restart(t, give_up, _leased_address_test(prof, iid), managed_ra)
    finally:
        t.port.remove_responder(answer_rs)


def _leased_address_test(prof: GateProfile, iid: int):
    """Which of the DUT's addresses is a DHCPv6 lease: one from the profile's
    ``pool`` ("first-last"), or else any global one that is not the EUI-64 SLAAC address."""
    pool = prof.params.get("pool")
    if pool:
        try:
            first, last = (int(ipaddress.IPv6Address(x.strip())) for x in str(pool).split("-", 1))
        except ValueError:
            raise UsageError(f"fixtures/gates/profiles.yaml: {prof.gate}: params.pool {pool!r} is not "
                             "'first-last' (two IPv6 addresses)") from None
        return lambda a: first <= int(ipaddress.IPv6Address(a)) <= last
    return lambda a: not P.is_link_scoped(a) and int(ipaddress.IPv6Address(a)) & ((1 << 64) - 1) != iid


def _lease_after_restart(t, give_up: float, is_lease, managed_ra) -> Measure:
    t0 = time.monotonic()
    try:
        t.restart_dut()
    except NotSupported as exc:
        raise NotApplicable(str(exc)) from None
    up = time.monotonic()
    t.send(managed_ra, label="RA M=1 O=1 as the link comes up")
    while time.monotonic() - up < give_up:
        try:
            addrs = t.control.addresses()
        except NotSupported as exc:
            raise NotApplicable(f"the DUT's addresses cannot be read: {exc}") from None
        leased = [a for a in addrs if is_lease(a)]
        if leased:
            return Measure({"time": time.monotonic() - up}, 0.0, 0.0, {"address": leased[0], "restart_s":
                                                                     round(up - t0, 3)})
        time.sleep(0.02)
    return Measure({"time": give_up}, 0.0, 0.0, {"address": None, "restart_s": round(up - t0, 3)})
