"""Traffic on the negotiated CHILD_SA, over IPv6 only (RFC 7296 §1.3, §2.9,
§3.13.1; RFC 4303 §3.3.3; RFC 8200 and OMB M-21-07 for IPv6-only)."""

from __future__ import annotations

from scapy.layers.inet import UDP
from scapy.layers.ipsec import ESP
from scapy.layers.l2 import ARP, Ether

from ...core.check import Part, check
from ...core.verdict import Deviation
from ...net.ikev2 import exchange as X
from ...net.ikev2.codec import TS, IkeParseError
from ...net.ikev2.const import Exchange, TsType
from ...net.ikev2.crypto import CryptoError
from ...net.ikev2.peer import ProtocolError
from . import _common as C

COUNT = 3


def _dut_esp_seqs(echoes) -> list[int]:
    out = []
    for e in echoes:
        if e.esp is None:
            continue
        pkt = e.esp.pkt
        if ESP in pkt:
            out.append(pkt[ESP].seq)
        elif UDP in pkt:
            out.append(ESP(bytes(pkt[UDP].payload)).seq)
    return out


@check(
    area="ikev2", ipv6ready=None,
    title="IPv6 traffic flows on the negotiated CHILD_SA, in ESP on the SPIs the DUT chose",
    rfc="RFC 7296 §1.3 and §2.17 (the CHILD_SA and its keys), §2.9 (traffic selectors); RFC 4303 §3.3.3 (sequence "
        "numbers from 1), §3.4 (inbound processing)",
    expect="three Echo Requests sent in ESP on the CHILD_SA's outbound SPI each get an Echo Reply in ESP on the SPI "
           "the tester chose for the DUT's outbound SA, which opens with the negotiated keys, with sequence numbers "
           "1, 2, 3; none in the clear",
    parts=[
        Part("A", "the DUT as responder (the tester initiated)"),
        Part("initiator", "the DUT as initiator (IKEv2.EN.I.1.1.1.3, Use of CHILD_SA)", initiator=True,
             ipv6ready="IKEv2.EN.I.1.1.1.3"),
    ],
    fault="dut_drops_esp",
    capabilities=["IKEv2"], dut_config="ipsec-vm",
)
def child_sa_carries_ipv6_traffic(t):
    """The point of IKE is the CHILD_SA: RFC 7296 §2.17 derives its keys, and the IPsec stack MUST then
    protect the traffic its selectors name with them (RFC 4303 §3.1) and number its packets from 1
    (§3.3.3).  Judged on the wire: the DUT's ESP opens with the keys only the exchange could give it."""
    end = C.ike(t)
    initiator = getattr(t.p, "initiator", False)
    if initiator:
        res = C.serve_dut(t, end)
    else:
        C.require_role(t, "responder")
        res = C.establish(t, end)
    child = res.child
    lost = []
    if initiator:
        # an initiator installs its SAs once it has the IKE_AUTH response, which the tester cannot see: the first
        # Echo Requests may come before that (RFC 7296 leaves the moment to it); they are sent again, a few times
        deadline = t.port.now() + C.initiation_wait(t)
        while t.port.now() < deadline:
            first = C.esp_echo(t, end, child, 1)
            if first[0].reply is not None or first[0].clear is not None or first[0].error:
                break
            lost.append(first[0].seq)
        echoes = first + C.esp_echo(t, end, child, COUNT - 1)
    else:
        echoes = C.esp_echo(t, end, child, COUNT)
    problems = C.echo_problems(echoes, child)
    seqs = _dut_esp_seqs(echoes)
    if seqs and seqs != list(range(1, len(seqs) + 1)):
        problems.append(f"the DUT's ESP sequence numbers are {seqs}, not 1, 2, 3 (RFC 4303 §3.3.3)")
    got = sum(1 for e in echoes if e.reply is not None)
    early = (f"; {len(lost)} Echo Request(s) sent before the DUT had its SAs in place got no answer (sequence "
             f"{', '.join(map(str, lost))})") if lost else ""
    return t.conclude(f"{got} of {COUNT} Echo Requests in ESP answered in ESP on SPI 0x{child.spi_in.hex()} "
                      f"(sequence numbers {seqs}); {child.label()}{early}", problems)


@check(
    area="ikev2", ipv6ready=None,
    title="The DUT's IKE and ESP stay on IPv6: IPv6 traffic selectors, no IPv4 frame",
    rfc="RFC 7296 §3.13.1 (TS_IPV6_ADDR_RANGE), §2.9; RFC 8200 §1 and OMB M-21-07 (IPv6-only operation)",
    expect="the traffic selectors the DUT proposes as initiator are all TS_IPV6_ADDR_RANGE; while it initiates an "
           "IKE SA and sends ESP on its CHILD_SA it sends no IPv4 frame (no IKE or ESP over IPv4, no ARP)",
    parts=[
        Part("A", "the traffic selectors it proposes", fault="dut_proposes_ipv4_traffic_selectors"),
        Part("B", "no IPv4 frame during the session", frames=True, fault="dut_initiates_ike_over_ipv4"),
    ],
    capabilities=["IKEv2"], dut_config="ipsec-vm",
)
def ike_and_esp_stay_on_ipv6(t):
    """An IPv6-only asset must not fall back to IPv4 (OMB M-21-07): its IKE runs to the peer's IPv6 address and
    the selectors it negotiates name IPv6 traffic (RFC 7296 §3.13.1 TS_IPV6_ADDR_RANGE); an IPv4 selector, or
    IKE/ESP over IPv4, leaks traffic onto a family the link does not carry."""
    end = C.ike(t)
    since = C.make_dut_initiate(t)
    if getattr(t.p, "frames", False):
        try:
            res, _, seen = X.serve_init(end.ch, end.peer, C.initiation_wait(t), since)
            if res.ok:
                res, _ = X.serve_auth(end.ch, end.peer, C.initiation_wait(t), seen[-1].time)
        except X.NoAnswer as exc:
            res = None
            t.note(f"no IKE over IPv6: {exc}")
        except (ProtocolError, IkeParseError, CryptoError) as exc:
            res = None
            t.note(f"the IKE session did not complete: {exc}")
        if res is not None and res.ok and res.child is not None:
            C.esp_echo(t, end, res.child, 2)
        v4 = [f for f in t.port.frames_since(since, t.from_dut(lambda p: Ether in p and p[Ether].type in (0x0800,
                                                                                                       0x0806)))]
        if v4:
            first = v4[0].pkt
            what = (f"ARP who-has {first[ARP].pdst}" if ARP in first else first.summary())
            raise Deviation(f"the DUT sent {len(v4)} IPv4 frame(s) while it set up IKE (first: {what}, "
                            f"+{v4[0].time - since:.3f} s)")
        if res is None or not res.ok:
            raise t.not_judged("ike-sa", C.JUDGED_BY_INITIATOR, "the DUT's IKE session over IPv6 did not complete "
                                                                 "(and it sent no IPv4 frame)")
        return t.conclude(f"the DUT set up IKE and ESP over IPv6 only ({res.detail}); no IPv4 frame", [])
    dg = end.ch.wait(C.initiation_wait(t), since=since, exchange=Exchange.IKE_SA_INIT, response=False)
    if dg is None:
        raise t.not_judged("ike-init", C.JUDGED_BY_INITIATOR, "the DUT sent no IKE_SA_INIT request over IPv6")
    try:
        res, _, seen = X.serve_init(end.ch, end.peer, C.initiation_wait(t), since)
        auth = end.ch.wait(C.initiation_wait(t), since=seen[-1].time, exchange=Exchange.IKE_AUTH, response=False)
        if auth is None:
            raise X.NoAnswer("no IKE_AUTH request")
        msg = end.peer.ike.open(auth.data)
    except (X.NoAnswer, ProtocolError, IkeParseError, CryptoError) as exc:
        raise t.not_judged("ike-auth", C.JUDGED_BY_INITIATOR, f"the DUT's IKE_AUTH request was not read: {exc}") \
            from None
    selectors = [(p.initiator, s) for p in msg.inner if isinstance(p, TS) for s in p.selectors]
    others = [(p.initiator, o) for p in msg.inner if isinstance(p, TS) for o in p.other]
    problems = [f"its {'TSi' if i else 'TSr'} holds {s.label()}, a TS_IPV4_ADDR_RANGE" for i, s in selectors
                if s.ts_type == TsType.IPV4_ADDR_RANGE]
    problems += [f"its {'TSi' if i else 'TSr'} holds a selector of type {o[0]}" for i, o in others]
    if not selectors:
        problems.append(f"its IKE_AUTH request carries no traffic selector: {msg.label()}")
    shown = "; ".join(f"{'TSi' if i else 'TSr'} {s.label()}" for i, s in selectors)
    with end.ch.lock:
        out, res = end.peer.answer_auth(auth.data)
    end.ch.send(out, f"IKE_AUTH response ({res.detail})", dport=auth.sport, answers=auth.data)
    return t.conclude(f"the DUT's IKE_AUTH request proposes {shown}", problems)

