"""The project's own simulated RFC 9463 (DNR) client, for proving
``rdnss.encrypted_resolver_is_used`` both ways (tests/lab/test_simulated_clients.py):
the lab's Linux DUT (kernel, dhcpcd 9.4.1, glibc) does not implement DNR.

On a Router Advertisement carrying an Encrypted DNS option it opens a TCP
connection from the DUT's address to the resolver's address and the port
its SvcParams name (853 for DoT by default), as a DNR client does before it
sends queries over TLS.  With ``mistake: plain_dns`` it sends a plain DNS
query to the resolver's port 53 instead (a client that takes the option for
an RDNSS)."""

from __future__ import annotations

import json
import secrets

from scapy.layers.dns import DNS, DNSQR
from scapy.layers.inet import TCP, UDP
from scapy.layers.inet6 import ICMPv6ND_RA, IPv6
from scapy.layers.l2 import Ether

from ...net.dns import DNS_PORT, DOT_PORT, ND_OPT_ENCRYPTED_DNS, parse_encrypted_dns
from ...util.proc import run
from ..impostor import rule


def _source_for(impostor, dst: str) -> str | None:
    cp = run(["ip", "-6", "-j", "route", "get", dst], ns=impostor.ns, check=False,
             what="simulated DNR client: source address")
    try:
        return json.loads(cp.stdout or "[]")[0].get("prefsrc")
    except (ValueError, IndexError):
        return None


@rule("dnr_client")
def dnr_client(pkt, dut, impostor, mistake: str | None = None, **_):
    if ICMPv6ND_RA not in pkt or pkt[Ether].src.lower() == dut["mac"].lower():
        return []
    icmp = bytes(pkt[ICMPv6ND_RA])
    off, found = 16, None
    while off + 2 <= len(icmp) and icmp[off + 1]:
        if icmp[off] == ND_OPT_ENCRYPTED_DNS:
            found = parse_encrypted_dns(icmp[off:off + icmp[off + 1] * 8])
            break
        off += icmp[off + 1] * 8
    if not found or not found["lifetime"] or not found["addresses"] or impostor.state.get("connected"):
        return []
    impostor.state["connected"] = True
    resolver, router_mac = found["addresses"][0], pkt[Ether].src

    def connect():
        src = _source_for(impostor, resolver)
        if src is None:
            return []
        ip = Ether(src=dut["mac"], dst=router_mac) / IPv6(src=src, dst=resolver)
        if mistake == "plain_dns":
            return [ip / UDP(sport=40000 + secrets.randbelow(20000), dport=DNS_PORT)
                    / DNS(id=secrets.randbelow(0xFFFF), rd=1, qd=DNSQR(qname="example.v6gate.test", qtype="AAAA"))]
        return [ip / TCP(sport=40000 + secrets.randbelow(20000), dport=found["port"] or DOT_PORT, flags="S",
                         seq=secrets.randbelow(2**32))]

    impostor.later(0.5, connect)  # once the RA's prefix gave the DUT an address
    return []
