"""Link-up to DHCPv6 lease (RFC 8415 §18.2.1): the DUT restarts (its link
comes up); the time until it holds an address that is not its SLAAC or
link-local one (read through the control adapter).  A host starts DHCPv6
when a Router Advertisement says M=1 (RFC 4861 §4.2), so the tester's
router advertises M=1 O=1 as the link comes up and answers the DUT's Router
Solicitations with it; the server is the network's own (the lab's Kea), not
the tester."""

from __future__ import annotations

import ipaddress
import time

from scapy.layers.inet6 import ICMPv6ND_RS

from ...core.context import NotApplicable
from ...core.control import NotSupported
from ...errors import UsageError
from ...net import packets as P
from ...net.nd import prefix_option, router_advertisement
from ..engine import Measure
from ..profiles import GateProfile
from ..registry import Workload, register_workload


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


register_workload(Workload("dhcpv6_lease", compare=frozenset({"target"}), metrics={"time": ("s", False)},
                           params=frozenset({"pool"}), sample=link_up_to_dhcpv6_lease))
