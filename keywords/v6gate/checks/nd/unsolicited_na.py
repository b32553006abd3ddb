"""Unsolicited Neighbor Advertisements for a new address (RFC 9131 §4.1,
updating RFC 4861 §7.2.6): the sending side.  The receiving side, a
host's processing of unsolicited NAs, is judged in ``na_processing``.

In the lab, the Linux DUT sends them only with ``ndisc_notify`` (DUT
configuration ``na-notify``); the capability is RFC9131."""

import ipaddress

from scapy.layers.inet6 import ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6NDOptDstLLAddr, IPv6

from ...core.check import check
from ...core.context import CheckContext
from ...core.ledger import ADDRESS_LEASE_S
from ...core.verdict import Deviation
from ...net import packets as P
from ...net.nd import fresh_prefix, prefix_option, router_advertisement
from ...scenario.observe import FORMING, dad_probe_in, in_use, seen_probing


@check(
    area="nd", scope="host",
    title="A new address is announced with an unsolicited Neighbor Advertisement",
    rfc="RFC 9131 §4.1; RFC 4861 §7.2.6",
    needs=["exclusive_router"],
    capabilities=["RFC9131"],
    dut_config="na-notify",
    fault="dut_sends_no_unsolicited_na",
    liveness="echo",
    expect="after the DUT forms an address from an RA's prefix and DAD ends (one RetransTimer after its probe), it "
           "sends an unsolicited Neighbor Advertisement for it: Solicited flag 0, to a multicast group (all-routers "
           "or all-nodes), Target the new address, a Target Link-Layer Address option with the DUT's MAC, hop "
           "limit 255, within the reply timeout",
)
def new_address_is_announced(t: CheckContext):
    """RFC 9131 updates RFC 4861 and recommends that nodes send unsolicited
    Neighbor Advertisements upon assigning a new IPv6 address (§4.1), so
    that first-hop routers create a Neighbor Cache entry for it; RFC 4861
    §7.2.6 gives the message's form (S=0, a Target Link-Layer Address
    option, a multicast destination)."""
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    since = t.send(router_advertisement(t.tr1, prefixes=[prefix_option(prefix, valid=ADDRESS_LEASE_S, preferred=ADDRESS_LEASE_S)]),
                   label=f"RA with prefix {prefix} (A=1, router lifetime 0)")
    probe = dad_probe_in(t, prefix, since)
    if probe is None:
        # a DUT that performs no DAD announces the address it assigned as the RA came
        address = None if seen_probing(t) else in_use(t, prefix)
        if address is None:
            raise t.not_judged(f"address:{prefix}", FORMING, f"the DUT formed no address from {prefix} (no DAD probe): "
                                                             "there is no new address to announce")
        start = since
    else:
        address, start = probe.pkt[ICMPv6ND_NS].tgt, probe.time
    window = t.retrans_timer + t.reply_timeout  # DupAddrDetectTransmits (1 in the RFC default) x RetransTimer

    def announces(p) -> bool:
        return (ICMPv6ND_NA in p and P.same_address(p[ICMPv6ND_NA].tgt, address)
                and not p[ICMPv6ND_NA].S)

    na = t.port.expect(t.from_dut(announces), window, since=start)
    if na is None:
        sent = [f.summary() for f in t.collect(lambda p: IPv6 in p, 0, since=start)][:5]
        raise Deviation(f"no unsolicited Neighbor Advertisement for {address} within {window:g} s of its DAD probe"
                         f" (the DUT sent: {'; '.join(sent) or 'nothing'})")
    pkt = na.pkt
    problems = []
    if not P.is_multicast(pkt[IPv6].dst):
        problems.append(f"sent to {pkt[IPv6].dst}, not to a multicast group")
    if pkt[IPv6].hlim != 255:
        problems.append(f"hop limit {pkt[IPv6].hlim}, not 255")
    tlla = pkt[ICMPv6NDOptDstLLAddr].lladdr.lower() if ICMPv6NDOptDstLLAddr in pkt else None
    if tlla != t.dut.mac:
        problems.append(f"Target Link-Layer Address {tlla or 'missing'}, not the DUT's {t.dut.mac}")
    if ipaddress.IPv6Address(pkt[IPv6].src).is_unspecified:
        problems.append("sent from ::")
    seen = (f"NA for {address} {na.time - start:.3f} s after its {'DAD probe' if probe else 'RA'}, to {pkt[IPv6].dst}, "
            f"O={pkt[ICMPv6ND_NA].O} R={pkt[ICMPv6ND_NA].R}")
    if problems:
        raise Deviation(f"{'; '.join(problems)} ({seen})")
    return t.conclude(seen, [])
