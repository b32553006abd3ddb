"""Impostor rules for IPv6-only readiness (RFC 8925): DHCPv4 clients that
ask for the IPv6-Only Preferred option and then do not honour it."""

import ipaddress
import time

from scapy.layers.dhcp import BOOTP, DHCP
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP, Ether

from ...net import v6only as V
from ..impostor import rule

PRL_WITH_108 = [1, 3, 6, 15, V.OPTION_V6ONLY_PREFERRED]


def _mac_bytes(mac: str) -> bytes:
    return bytes(int(x, 16) for x in mac.split(":"))


def _client_message(dut: dict, message: str, xid: int, options: list):
    mac = _mac_bytes(dut["mac"])
    return (Ether(src=dut["mac"], dst="ff:ff:ff:ff:ff:ff") / IP(src="0.0.0.0", dst="255.255.255.255")
            / UDP(sport=V.DHCP_CLIENT_PORT, dport=V.DHCP_SERVER_PORT)
            / BOOTP(op=1, xid=xid, chaddr=mac + b"\x00" * 10, flags=0)
            / DHCP(options=[("message-type", message), *options, ("param_req_list", PRL_WITH_108), "end"]))


@rule("dhcpv4_uses_an_address_offered_with_v6only_preferred")
def dhcpv4_uses_an_address_offered_with_v6only_preferred(pkt, dut, pool="198.18.1.0/24", **_):
    """A DHCPv4 client that asks for option 108 and takes the offered
    address anyway (RFC 8925 §3.2: it MUST NOT request it): it answers a
    DHCPOFFER carrying the option with a DHCPREQUEST for the address, and
    answers ARP for addresses of the server's pool as its own."""
    if ARP in pkt and pkt[ARP].op == 1 and ipaddress.IPv4Address(pkt[ARP].pdst) in ipaddress.IPv4Network(pool):
        a = pkt[ARP]
        return [Ether(src=dut["mac"], dst=pkt[Ether].src)
                / ARP(op=2, hwsrc=dut["mac"], psrc=a.pdst, hwdst=a.hwsrc, pdst=a.psrc)]
    if BOOTP not in pkt or pkt[BOOTP].op != 2 or V.dhcp_message(pkt) != "DHCPOFFER":
        return []
    opts = V.dhcp_options(pkt)
    if "ipv6-only-preferred" not in opts or bytes(pkt[BOOTP].chaddr)[:6] != _mac_bytes(dut["mac"]):
        return []
    offer = pkt[BOOTP]
    return [_client_message(dut, "request", offer.xid, [("requested_addr", offer.yiaddr),
                                                          ("server_id", opts.get("server_id", pkt[IP].src))])]


@rule("dhcpv4_resumes_before_v6only_wait")
def dhcpv4_resumes_before_v6only_wait(pkt, dut, after_s=10.0, **_):
    """A DHCPv4 client that stops after an OFFER with option 108 but starts
    again after ``after_s`` seconds instead of V6ONLY_WAIT (at least 300 s,
    RFC 8925 §3.2): a DHCPDISCOVER, sent with the first frame the DUT
    receives once ``after_s`` have passed since the client (re)started."""
    state = dut.setdefault("v6only_impostor", {"started": time.monotonic(), "sent": False})
    if state["sent"] or time.monotonic() - state["started"] < after_s:
        return []
    state["sent"] = True
    return [_client_message(dut, "discover", int(time.monotonic() * 1000) & 0xFFFFFFFF, [])]
