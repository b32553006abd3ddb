"""Impostor rules for IPv6-only readiness (RFC 8925)."""

from scapy.layers.dhcp import BOOTP, DHCP
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from ...net import v6only as V
from ..impostor import rule


@rule("dhcpv4_request_despite_v6only_preferred")
def dhcpv4_request_despite_v6only_preferred(pkt, dut, **_):
    """A DHCPv4 client that asks for option 108 and then ignores it: it
    answers a DHCPOFFER carrying the option with a DHCPREQUEST for the
    offered address (RFC 8925 §3.2: the client MUST NOT)."""
    if BOOTP not in pkt or pkt[BOOTP].op != 2 or V.dhcp_message(pkt) != "DHCPOFFER":
        return []
    opts = V.dhcp_options(pkt)
    mac = bytes(int(x, 16) for x in dut["mac"].split(":"))
    if "ipv6-only-preferred" not in opts or bytes(pkt[BOOTP].chaddr)[:6] != mac:
        return []
    offer = pkt[BOOTP]
    request = (Ether(src=dut["mac"], dst="ff:ff:ff:ff:ff:ff") / IP(src="0.0.0.0", dst="255.255.255.255")
               / UDP(sport=V.DHCP_CLIENT_PORT, dport=V.DHCP_SERVER_PORT)
               / BOOTP(op=1, xid=offer.xid, chaddr=mac + b"\x00" * 10, flags=0)
               / DHCP(options=[("message-type", "request"), ("requested_addr", offer.yiaddr),
                               ("server_id", opts.get("server_id", pkt[IP].src)),
                               ("param_req_list", [1, 3, 6, 15, V.OPTION_V6ONLY_PREFERRED]), "end"]))
    return [request]
