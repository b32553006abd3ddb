"""The project's own simulated RFC 9686 client (ADDR-REG-INFORM), for the
lab controls of ``dhcpv6.self_generated_address_is_registered``: the lab's
Linux DUT (kernel SLAAC, dhcpcd 9.4.1) does not register its addresses, so
the check is proven against this peer, speaking for the DUT from its MAC
and addresses, once implementing RFC 9686 correctly and once with one
mistake (``mistake``: ``link_local_source``, ``no_retransmission``).

It sends an Information-request asking for the Address Registration
option when a Router Advertisement has M or O set (RFC 9686 §4.4), and
when a Reply carries the option, an ADDR-REG-INFORM for each global address
the DUT's kernel has on the interface (read from its namespace once DAD is
over), retransmitted IRT 1 s apart up to MRC 3 times until an ADDR-REG-REPLY
names its transaction (§4.5)."""

from __future__ import annotations

import ipaddress
import json
import secrets
import struct

from scapy.layers.inet import UDP
from scapy.layers.inet6 import ICMPv6ND_RA, IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from ...net import dhcpv6 as D
from ...net import packets as P
from ...util.proc import run
from ..impostor import rule


def _frame(dut, src: str, payload: bytes):
    return (Ether(src=dut["mac"], dst=P.multicast_mac(D.ALL_DHCP_RELAY_AGENTS_AND_SERVERS))
            / IPv6(src=src, dst=D.ALL_DHCP_RELAY_AGENTS_AND_SERVERS, hlim=1)
            / UDP(sport=D.CLIENT_PORT, dport=D.SERVER_PORT) / Raw(payload))


def _life(value) -> int:
    return 0xFFFFFFFF if value in (None, "forever") or value >= 0xFFFFFFFF else int(value)


def _global_addresses(impostor, dut) -> list[tuple[str, int, int]]:
    cp = run(["ip", "-6", "-j", "addr", "show", "dev", dut["ifname"], "scope", "global"], ns=impostor.ns,
             check=False, what="simulated RFC 9686 client: the DUT's addresses")
    out = []
    for link in json.loads(cp.stdout or "[]"):
        for a in link.get("addr_info", []):
            if a.get("tentative") or a.get("family") != "inet6":
                continue
            out.append((a["local"], _life(a.get("preferred_life_time")), _life(a.get("valid_life_time"))))
    return out


@rule("addr_reg_client")
def addr_reg_client(pkt, dut, impostor, mistake: str | None = None, **_):
    state = impostor.state
    duid = D.duid_ll(dut["mac"])
    if ICMPv6ND_RA in pkt and pkt[Ether].src.lower() != dut["mac"].lower():
        ra = pkt[ICMPv6ND_RA]
        if (ra.M or ra.O) and not state.get("asked"):
            state["asked"] = True
            oro = struct.pack("!HH", D.OPT_DNS_SERVERS, D.OPT_ADDR_REG_ENABLE)
            ir = D.message(D.INFORMATION_REQUEST, D.fresh_xid(), [
                D.opt(D.OPT_CLIENTID, duid), D.opt(D.OPT_ELAPSED_TIME, b"\0\0"), D.opt(D.OPT_ORO, oro)])
            return [_frame(dut, dut["link_local"], ir)]
        return []
    if UDP not in pkt or pkt[UDP].dport != D.CLIENT_PORT or pkt[Ether].src.lower() == dut["mac"].lower():
        return []
    msg = D.parse(pkt)
    if msg is None:
        return []
    if msg.type == D.ADDR_REG_REPLY:
        state.setdefault("acked", set()).add(msg.xid)
        return []
    if msg.type != D.REPLY or msg.opt(D.OPT_ADDR_REG_ENABLE) is None or state.get("registering"):
        return []
    state["registering"] = True

    def register_all():
        frames = []
        for address, preferred, valid in _global_addresses(impostor, dut):
            if ipaddress.IPv6Address(address).is_link_local:
                continue
            xid = D.fresh_xid()
            inform = D.message(D.ADDR_REG_INFORM, xid, [
                D.opt(D.OPT_CLIENTID, duid),
                D.opt(D.OPT_IAADDR, ipaddress.IPv6Address(address).packed + struct.pack("!II", preferred, valid))])
            src = dut["link_local"] if mistake == "link_local_source" else address
            frame = _frame(dut, src, inform)
            frames.append(frame)
            if mistake != "no_retransmission":
                for n in range(1, D.ADDR_REG_MRC):  # MRC transmissions in all (RFC 8415 §15)
                    impostor.later(D.ADDR_REG_IRT * (2 ** n - 1) * (1 + (secrets.randbelow(21) - 10) / 100),
                                   (lambda f=frame, x=xid: [] if x in state.get("acked", set()) else [f]))
        return frames

    impostor.later(0.5, register_all)  # after DAD of the address the RA's prefix gave
    return []
