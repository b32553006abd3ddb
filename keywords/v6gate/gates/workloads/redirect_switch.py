"""Redirect time-to-switch (RFC 4861 §8.3), measured on the tester's wire
(any DUT that follows Redirects).

The tester is the DUT's only router (TR1, IPv6 Ready "Common Test Setup
1.1", ``scenario/firsthop.py``), set up once per gate.  Each trial takes a
fresh off-link correspondent TN (a new Destination Cache entry) and forwards
its Echo Requests to the DUT through TR1, one in flight at a time (the next
after the reply, or after ``poll_s``); once the DUT
answers through TR1, TR1 sends a Redirect for TN's address whose target is
TR2, a better first hop on the link, with TR2's link-layer address in the
Target Link-Layer Address option (so the DUT needs no resolution to use it,
§8.3).  ``time`` runs from the Redirect to the first Echo Reply the DUT sends
to TR2's MAC: how long the DUT keeps using the worse path.  A DUT that never
switches within ``give_up_s`` is a very slow sample (``give_up_s``), not a
hang; the forwarded Echo Requests keep coming meanwhile, so a switch is seen
at the first packet the DUT sends after it.
"""

from __future__ import annotations

from scapy.layers.inet6 import ICMPv6EchoReply, IPv6
from scapy.layers.l2 import Ether

from ...net import packets as P
from ...net.redirect import redirect
from ..engine import Measure
from ..profiles import GateProfile
from ..registry import Workload, register_workload

#: the check that judges "the DUT sends to an off-link destination through its default router"
FIRST_HOP_JUDGED_BY = "nd.next_hop_follows_prefix_list#C"


def _bench(t):
    """TR1 as the DUT's only router and TR2 beside it, once per gate (kept on the check's context)."""
    bench = getattr(t, "_redirect_gate", None)
    if bench is None:
        from ...scenario.firsthop import FirstHop

        fh = FirstHop(t).start()
        bench = t._redirect_gate = (fh, fh.router("TR2"))
    return bench


def redirect_switch(t, prof: GateProfile, i: int) -> Measure:
    p = prof.params
    poll, give_up = float(p.get("poll_s", 0.005)), float(p.get("give_up_s", 1.0))
    fh, tr2 = _bench(t)
    tn = fh.offlink_node(f"TN{i}")
    before = fh.ask(tn.offlink)
    if before.reply is None:
        before = fh.ask(tn.offlink)  # the DUT may still be resolving TR1 on a loaded bench
    if before.mac != fh.tr1.mac.lower():
        went = "nowhere" if before.mac is None else f"to {fh.names.get(before.mac, before.mac)}"
        raise t.not_judged("first-hop:TR1", FIRST_HOP_JUDGED_BY,
                           f"the DUT's answer to the off-link {tn.offlink} went {went}, not through TR1, its only "
                           "router, before any Redirect")
    rd = redirect(fh.tr1, t.dut.mac, fh.dut_global, target=tr2.link_local, destination=tn.offlink, tlla=tr2.mac)
    sent = t.send(rd, label=f"Redirect from TR1: {tn.offlink} is better reached through TR2")
    switched, asked = None, 0
    while switched is None and t.now() - sent < give_up:
        req = fh.forwarded_echo(tn.offlink)
        since = t.port.send(req)
        asked += 1
        got = t.port.collect(t.from_dut(lambda pk: ICMPv6EchoReply in pk and P.same_address(pk[IPv6].dst, tn.offlink)),
                             poll, since=since, until=bool)  # one Echo Request in flight, at most every poll_s
        for f in got:
            if f.pkt[Ether].dst.lower() == tr2.mac.lower():
                switched = f
                break
    raw = {"destination": tn.offlink, "tr1": fh.tr1.mac, "tr2": tr2.mac, "echo_requests_after": asked}
    if switched is None:
        return Measure({"time": give_up * 1000}, 0.0, 0.0, {**raw, "switched": False})
    return Measure({"time": round((switched.time - sent) * 1000, 3)}, 0.0, 0.0, {**raw, "switched": True})


register_workload(Workload("redirect_switch", compare=frozenset({"target"}), metrics={"time": ("ms", False)},
                           params=frozenset({"poll_s", "give_up_s"}), sample=redirect_switch))
