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
  link-local one (read through the control adapter).
"""

from __future__ import annotations

import ipaddress
import time

from scapy.layers.inet6 import ICMPv6EchoRequest, ICMPv6ND_NS, ICMPv6NDOptSrcLLAddr, IPv6

from ..core.context import NotApplicable
from ..core.control import NotSupported
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
    t0 = time.monotonic()
    try:
        t.restart_dut()
    except NotSupported as exc:
        raise NotApplicable(str(exc)) from None
    up = time.monotonic()
    while time.monotonic() - up < give_up:
        try:
            addrs = t.control.addresses()
        except NotSupported as exc:
            raise NotApplicable(f"the DUT's addresses cannot be read: {exc}") from None
        leased = [a for a in addrs if not P.is_link_scoped(a)
                  and int(ipaddress.IPv6Address(a)) & ((1 << 64) - 1) != iid]
        if leased:
            return Measure({"time": time.monotonic() - up}, 0.0, 0.0, {"address": leased[0], "restart_s":
                                                                     round(up - t0, 3)})
        time.sleep(0.02)
    return Measure({"time": give_up}, 0.0, 0.0, {"address": None, "restart_s": round(up - t0, 3)})
