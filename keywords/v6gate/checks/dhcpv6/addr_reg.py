"""Registering self-generated addresses with DHCPv6 (RFC 9686): a host
that claims it (capability ADDR-REG) asks for the Address Registration
option in an Information-request, and when the tester's server offers it,
multicasts an ADDR-REG-INFORM from each SLAAC address it forms.

The lab's DUT (kernel SLAAC, dhcpcd 9.4.1) does not implement RFC 9686, so
the lab target does not claim ADDR-REG and the check SKIPs there;
``tests/lab/test_addr_reg.py`` proves it both ways against the project's
own simulated client (``lab/impostor_rules/dhcpv6_addr_reg.py``)."""

from __future__ import annotations

import ipaddress

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.verdict import Deviation
from ...net import dhcpv6 as D
from ...net import packets as P
from ...net.nd import fresh_prefix, prefix_option, router_advertisement
from ...scenario.observe import dad_window

#: RFC 8415 §15: the first retransmission comes IRT x (1 + RAND), RAND in [-0.1, 0.1]; and bench slack
FIRST_RT = (D.ADDR_REG_IRT * 0.9, D.ADDR_REG_IRT * 1.1)
RT_SLACK_S = 0.25


def _judge_inform(m: D.Message, address: str, valid: int, preferred: int) -> list[str]:
    """RFC 9686 §4.2: the ADDR-REG-INFORM's form."""
    problems = []
    if not P.same_address(m.src, address):
        problems.append(f"sent from {m.src}, not from the address being registered ({address})")
    if not P.same_address(m.dst, D.ALL_DHCP_RELAY_AGENTS_AND_SERVERS):
        problems.append(f"sent to {m.dst}, not to All_DHCP_Relay_Agents_and_Servers (ff02::1:2)")
    if m.client_duid is None:
        problems.append("no Client Identifier option")
    if m.server_duid is not None:
        problems.append("carries a Server Identifier option")
    if m.oro is not None:
        problems.append("carries an Option Request option")
    iaas = D.ia_addresses(m)
    if len(iaas) != 1:
        problems.append(f"{len(iaas)} IA Address options, not exactly one")
    elif not P.same_address(iaas[0].address, address):
        problems.append(f"its IA Address names {iaas[0].address}, not {address}")
    elif not (0 < iaas[0].valid <= valid and iaas[0].preferred <= min(preferred, iaas[0].valid)):
        problems.append(f"IA Address lifetimes preferred {iaas[0].preferred} s / valid {iaas[0].valid} s are not the "
                        f"address's current ones (the prefix gave {preferred} s / {valid} s)")
    return problems + m.problems


@check(
    area="dhcpv6", scope="host",
    title="Self-generated addresses are registered with ADDR-REG-INFORM",
    rfc="RFC 9686 §4.2, §4.4, §4.5",
    capabilities=["ADDR-REG"],
    needs=["exclusive_router", "reset"],
    fault="impostor_registers_from_link_local",
    liveness=None,
    expect="after an RA with O=1 and a SLAAC prefix, the DUT sends an Information-request whose Option Request "
           "option names the Address Registration option; when the tester's Reply carries it, the DUT multicasts "
           "an ADDR-REG-INFORM for its new address: from that address, to ff02::1:2, with a Client Identifier, no "
           "Server Identifier, no Option Request option, exactly one IA Address (the address, its lifetimes)",
    parts=[
        Part("register", "ADDR-REG-INFORM from the address, acknowledged", reply=True),
        Part("retransmit", "ADDR-REG-INFORM retransmitted while unacknowledged", reply=False,
             fault="impostor_registers_without_retransmission",
             expect="with no ADDR-REG-REPLY, the DUT sends the ADDR-REG-INFORM again with the same transaction ID "
                    "IRT (1 s) x (1 +- 0.1) later (RFC 9686 §4.5, RFC 8415 §15)"),
    ],
)
def self_generated_address_is_registered(t: CheckContext):
    """'After successfully assigning a self-generated IPv6 address ... a
    client implementing this specification SHOULD multicast an
    ADDR-REG-INFORM message'; it 'MUST be sent from the address being
    registered', MUST include a Client Identifier, MUST NOT contain a Server
    Identifier or an Option Request option, and MUST contain exactly one IA
    Address option whose lifetimes match the address's (RFC 9686 §4.2).
    The client first asks for the Address Registration option in the ORO of
    an Information-request (§4.4) and retransmits unacknowledged messages
    with the same transaction ID, IRT 1 s (§4.5)."""
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    valid = preferred = 600
    server = D.TesterServer(t.port, t.node("DHCP6S"), t.dut.mac, D.Lease([]))
    server.extra_options.append(D.opt(D.OPT_ADDR_REG_ENABLE))
    server.on(D.INFORMATION_REQUEST, lambda m: server.reply(m, ia=False, dns=False))
    acked = []

    def ack(m: D.Message):
        iaas = D.ia_addresses(m)
        if not t.p.reply or not iaas:
            return None
        acked.append(m)
        server.send(D.message(D.ADDR_REG_REPLY, m.xid, [D.opt(D.OPT_IAADDR, m.opt(D.OPT_IAADDR).data)]),
                    dst=iaas[0].address)
        return None

    server.on(D.ADDR_REG_INFORM, ack)
    server.start()
    try:
        since = t.send(router_advertisement(t.tr1, other=1, prefixes=[prefix_option(prefix, valid=valid,
                                                                                     preferred=preferred)]),
                       label=f"RA: O=1, prefix {prefix} (A=1)")
        irs = server.wait(D.INFORMATION_REQUEST, dad_window(t) + 2 * t.reply_timeout, since=since)
        if not irs:
            raise Deviation(f"no Information-request within {dad_window(t) + 2 * t.reply_timeout:g} s of an RA with "
                             "O=1: the DUT never asked whether the network takes address registrations")
        asked = [m for m in irs if m.oro and D.OPT_ADDR_REG_ENABLE in m.oro]
        if not asked:
            raise Deviation(f"the DUT's Information-request asks for options {irs[0].oro}, not the Address "
                             f"Registration option ({D.OPT_ADDR_REG_ENABLE}) (RFC 9686 §4.4)")
        window = dad_window(t) + 2 * t.reply_timeout
        informs = server.wait(D.ADDR_REG_INFORM, window, since=since,
                              where=lambda m: any(ipaddress.IPv6Address(a.address) in prefix
                                                  for a in D.ia_addresses(m)) or
                              ipaddress.IPv6Address(m.src) in prefix)
        if not informs:
            other = server.messages(D.ADDR_REG_INFORM, since)
            raise Deviation(f"no ADDR-REG-INFORM for an address in {prefix} within {window:g} s of the Reply offering "
                             f"registration{' (others: ' + '; '.join(m.summary() for m in other) + ')' if other else ''}")
        first = informs[0]
        address = next((a.address for a in D.ia_addresses(first) if ipaddress.IPv6Address(a.address) in prefix),
                       first.src)
        problems = _judge_inform(first, address, valid, preferred)
        seen = f"{first.summary()} for {address}"
        if problems:
            raise Deviation(f"{'; '.join(problems)} ({seen})")
        if t.p.reply:
            t.wait(FIRST_RT[1] + RT_SLACK_S)
            again = [m for m in server.messages(D.ADDR_REG_INFORM, first.time + 0.001) if m.xid == first.xid]
            if again:
                raise Deviation(f"{seen}; acknowledged with an ADDR-REG-REPLY, yet sent again "
                                 f"{again[0].time - first.time:.2f} s later (RFC 9686 §4.5: stop on the reply)")
            return t.conclude(f"{seen}; acknowledged, not repeated", [])
        more = server.wait(D.ADDR_REG_INFORM, FIRST_RT[1] + RT_SLACK_S + 0.5, since=first.time + 0.001,
                           where=lambda m: m.xid == first.xid)
        if not more:
            raise Deviation(f"{seen}; not acknowledged, and not retransmitted within {FIRST_RT[1] + RT_SLACK_S:g} s")
        gap = more[0].time - first.time
        t.measure("addr_reg_first_rt_s", round(gap, 3))
        if not FIRST_RT[0] - RT_SLACK_S <= gap <= FIRST_RT[1] + RT_SLACK_S:
            raise Deviation(f"{seen}; retransmitted {gap:.2f} s later, outside IRT x (1 +- 0.1) = "
                             f"[{FIRST_RT[0]:g}, {FIRST_RT[1]:g}] s (+-{RT_SLACK_S:g} s)")
        return t.conclude(f"{seen}; retransmitted with the same transaction ID {gap:.2f} s later", [])
    finally:
        server.stop()
