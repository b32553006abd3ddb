"""RA to a usable SLAAC address (RFC 4862 §5.5.3, §5.4), measured on the
tester's wire (any DUT): the tester's router advertises a fresh prefix; the
time runs from the RA to the first Echo Reply from the address the DUT
formed (learned from its DAD probe).  Echo Requests go out every
``POLL_S``; a tentative address does not answer (§5.4), so the first reply
marks the address usable."""

from __future__ import annotations

from scapy.layers.inet6 import ICMPv6EchoRequest, ICMPv6ND_NS

from ...net import match as M
from ...net import packets as P
from ...net.nd import fresh_prefix, is_dad_ns_for, prefix_option, router_advertisement
from ..engine import Measure
from ..profiles import GateProfile
from ..registry import Workload, register_workload

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


register_workload(Workload("ra_to_slaac", compare=frozenset({"target"}), metrics={"time": ("s", False)},
                           params=frozenset({"dad_transmits"}), sample=ra_to_usable_address))
