"""The project's own simulated RFC 9460 HTTPS-record client, for proving
``dns.https_ipv6hint_is_used`` both ways in the controls (the fault's
``stands_in_for: [SVCB-HTTPS]``): no client on the lab's Debian 12 DUT asks
for HTTPS records (glibc does not; curl 7.88 has no HTTPS RR support).

When the DUT's stub resolver asks its server for a name's AAAA or A record,
the simulated client asks the same server for the name's HTTPS record, as
the DUT (its address, a port of its own); when the answer carries an
ipv6hint it makes the DUT's own TCP stack connect to the first hint on the
record's port (443 without one) at once, in parallel with the A and AAAA
lookups ('Clients MAY use the hints to open connections in parallel with
the A and AAAA queries', RFC 9460 §7.3).  With ``mistake: ignores_hint`` it
asks for the HTTPS record but does not use the hint, so the DUT's
application connects only once the AAAA answer comes."""

from __future__ import annotations

import contextlib
import secrets
import socket
import threading

from scapy.layers.dns import DNS, DNSQR
from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from ...errors import V6GateError
from ...net.dnsserver import CODES, DNS_PORT, norm
from ...util.netns import netns
from ..impostor import rule

HTTPS_PORT = 443
SVC_PORT, SVC_IPV6HINT = 3, 6  # SvcParamKeys (RFC 9460 §14.3.2)
CONNECT_S = 2.0  # how long the simulated client waits for the handshake


def https_hint(pkt) -> tuple[str, int] | None:
    """The first ipv6hint of the HTTPS records in a DNS answer and the
    record's port (443 without a port SvcParam), or None."""
    try:
        answers = list(pkt[DNS].an or [])
    except (IndexError, AttributeError, TypeError):
        return None
    for rr in answers[:16]:
        if getattr(rr, "type", None) != CODES["HTTPS"]:
            continue
        port, hints = HTTPS_PORT, []
        for param in (getattr(rr, "svc_params", None) or [])[:16]:
            if param.key == SVC_PORT and isinstance(param.value, int):
                port = param.value
            elif param.key == SVC_IPV6HINT:
                hints = [str(a) for a in (param.value or [])]
        if hints:
            return hints[0], port
    return None


def _asked_name(pkt) -> str | None:
    """The name of the DUT's A or AAAA query in ``pkt``, or None."""
    if UDP not in pkt or pkt[UDP].dport != DNS_PORT or DNS not in pkt:
        return None
    dns = pkt[DNS]
    if dns.qr or not dns.qd:
        return None
    q = dns.qd[0]
    return norm(q.qname) if q.qtype in (CODES["A"], CODES["AAAA"]) else None


@rule("svcb_client", outgoing=True)
def svcb_client(pkt, dut, impostor, mistake: str | None = None, **_):
    if IPv6 not in pkt or UDP not in pkt:
        return []
    state = impostor.state
    asked = state.setdefault("asked", {})  # (our port, DNS ID) -> name
    if pkt[Ether].src.lower() == dut["mac"].lower():  # what the DUT sends (and the simulated client's own query)
        name = _asked_name(pkt)
        if name is None or name in asked.values():
            return []
        sport, xid = 40000 + secrets.randbelow(20000), secrets.randbelow(0x10000)
        asked[(sport, xid)] = name
        return [Ether(src=dut["mac"], dst=pkt[Ether].dst) / IPv6(src=pkt[IPv6].src, dst=pkt[IPv6].dst)
                / UDP(sport=sport, dport=DNS_PORT) / DNS(id=xid, rd=1, qd=DNSQR(qname=name, qtype="HTTPS"))]
    if pkt[UDP].sport != DNS_PORT or DNS not in pkt or (pkt[UDP].dport, pkt[DNS].id) not in asked:
        return []
    found = https_hint(pkt)
    if found is None or mistake == "ignores_hint" or state.get("connected"):
        return []
    state["connected"] = True
    hint, port = found

    def attempt():
        # the DUT's own TCP stack connects: a socket opened in its namespace (util/netns.py) sends the SYN
        with contextlib.suppress(OSError, V6GateError):  # the DUT rebuilt under it: nothing to connect from
            with netns(impostor.ns):
                sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            with sock:
                sock.settimeout(CONNECT_S)
                sock.connect((hint, port))

    def connect():
        threading.Thread(target=attempt, daemon=True).start()  # off the impostor's timer: it may wait CONNECT_S
        return []

    impostor.later(0.0, connect)
    return []
