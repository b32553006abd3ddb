"""Steps shared by the DNS checks and the Happy Eyeballs gate: the target's
DNS facts, the tester playing the DUT's resolver (``serve``), and the DUT's
lookups through it."""

from __future__ import annotations

import ipaddress
import subprocess

from ..core.context import CheckContext, NotApplicable
from ..errors import BenchError
from ..net import packets as P
from ..net.dns import rdnss_option
from ..net.dnsserver import DnsServer, norm
from ..net.nd import router_advertisement
from ..net.v6only import parse_addresses

#: the check that judges whether the DUT's resolver is reached (the precondition of every lookup)
REACHED = "dns.resolver_reached_over_ipv6"


# -- the target's DNS facts --------------------------------------------------------------------------------
def settings(target) -> dict:
    ext = target.extensions.get("dns") or {}
    if not isinstance(ext, dict):
        raise BenchError(f"{target.source}: extensions.dns must be a mapping (see docs/dns.md)")
    return ext


def resolver_address(t: CheckContext) -> str | None:
    value = settings(t.target).get("resolver")
    if not value:
        return None
    try:
        return str(ipaddress.IPv6Address(str(value)))
    except ValueError:
        raise BenchError(f"{t.target.source}: extensions.dns.resolver {value!r} is not an IPv6 address") from None


def dut_name(t: CheckContext) -> str | None:
    value = settings(t.target).get("name")
    return norm(value) if value else None


# -- the tester's DNS server and the DUT's lookups ----------------------------------------------------------
def serve(t: CheckContext, **behaviour) -> DnsServer:
    """The DUT's resolver, played by the tester for the rest of the check:
    at the target's resolver address, or advertised by RDNSS."""
    address = resolver_address(t)
    if address is None and not t.target.claims("RDNSS"):
        raise NotApplicable("the target file says neither which resolver the DUT uses (extensions.dns.resolver) "
                            "nor that the DUT takes one from Router Advertisements (capability RDNSS)")
    node = t.node("DNS")
    if address is not None:
        node.extra_addrs.append(address)
    server = DnsServer(node, **behaviour)
    t.port.add_responder(server.responder)
    t.defer(lambda: (t.port.remove_responder(server.responder), server.stop()))
    if address is None:
        ra = router_advertisement(t.tr1, router_lifetime=0, options=[rdnss_option([node.global_addr], 600)])
        t.send(ra, label=f"RA: RDNSS {node.global_addr} (the tester's resolver)")
        server.rdnss_again = lambda: t.send(ra, label="RA again: RDNSS")
    t.note(f"the tester's DNS server is at {address or node.global_addr} ({node.mac})")
    server.address = address or node.global_addr
    return server


def lookup(t: CheckContext, name: str, family: str = "any", *, timeout: float | None = None) -> tuple[list[str], str]:
    """Make the DUT resolve ``name``; the addresses its lookup returned and
    the adapter's output."""
    limit = timeout if timeout is not None else max(4.0, 4 * t.reply_timeout)
    proc = t.control.resolve(name, family=family, timeout_s=limit)
    out = ""
    if isinstance(proc, subprocess.Popen):
        try:
            out, err = proc.communicate(timeout=limit + 3)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        else:
            t.control.check_exit(proc, err)
    addrs = parse_addresses(out or "")
    t.note(f"the DUT's lookup of {name} ({family}) returned {addrs or 'nothing'}")
    return addrs, (out or "").strip()


def lookup_until_asked(t: CheckContext, server: DnsServer, name: str, family: str = "any", **kw) -> tuple[list[str], str]:
    """A lookup; with an RDNSS-advertised resolver the DUT may take a moment
    to apply it, so the lookup is repeated (with the RA) until a query for
    ``name`` arrives or the target's ready timeout passes."""
    deadline = t.now() + (float(t.timing["ready_timeout_s"]) if hasattr(server, "rdnss_again") else 0.0)
    while True:
        since = t.now()
        result = lookup(t, name, family, **kw)
        if server.asked(name, since=since) or t.now() >= deadline:
            return result
        server.rdnss_again()
        t.wait(0.3)


def require_asked(t: CheckContext, server: DnsServer, name: str, since: float = 0.0) -> list:
    queries = server.asked(name, since=since)
    if not queries:
        raise t.not_judged("resolver-in-use", REACHED, f"no query for {name} reached the DUT's resolver "
                                                       f"{server.address} (queries seen: "
                                                       f"{[q.describe() for q in server.asked()] or 'none'})")
    return queries


def fresh_name(label: str = "host") -> str:
    return f"{label}-{P.nonce(4).hex()}.dns.v6gate.test"


def fresh_address() -> str:
    return P.address_in("2001:db8:5300::/48", P.random_iid())
