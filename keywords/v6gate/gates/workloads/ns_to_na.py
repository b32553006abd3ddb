"""NS to NA (RFC 4861 §7.2.4), measured on the tester's wire (any DUT): a
Neighbor Solicitation for the DUT's link-local address from a fresh emulated
node; the time to its solicited Neighbor Advertisement."""

from __future__ import annotations

from scapy.layers.inet6 import ICMPv6ND_NS, ICMPv6NDOptSrcLLAddr, IPv6

from ...net import match as M
from ...net import packets as P
from ..engine import Measure
from ..profiles import GateProfile
from ..registry import Workload, register_workload


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


register_workload(Workload("ns_to_na", compare=frozenset({"target"}), metrics={"time": ("ms", False)},
                           sample=ns_to_na))
