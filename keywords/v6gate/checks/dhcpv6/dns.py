"""DHCPv6 DNS configuration (RFC 3646 with RFC 8415): the DNS Recursive Name
Server and Domain Search List options a client obtains are the ones it
then uses — stateful (DHCP_CONF.4.1.9, 4.1.4 C/D), stateless (7.1.1,
7.1.6), and with a real server (Kea) for the lab's happy path.

The tester plays the DNS servers (emulated on-link nodes answering AAAA
queries) and makes the DUT resolve a name through its control adapter
(``t.control.resolve``): which server the query goes to, and which name it
asks for (a single-label name gets the search domain appended), show the
configuration in use.
"""

from __future__ import annotations

import secrets
import subprocess

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.verdict import Deviation
from ...net import dhcpv6 as D
from ...net import packets as P
from ...scenario import dhcpv6 as X

CAPS = ["DHCPv6-Client"]
IGNORES_DNS = "impostor_client_ignores_dns_options"
ANSWER = "2001:db8:ffff::d6"


def _resolve(t: CheckContext, name: str, servers: list, *, settle: float = 0.3):
    """Make the DUT resolve ``name``; return (queries seen at ``servers``, what it printed)."""
    responders = [D.DnsResponder(t.port, n, t.dut.mac, ANSWER).start() for n in servers]
    for r in responders:
        t.defer(r.stop)
    t.wait(settle)  # the client writes its resolver configuration just after the Reply
    since = t.now()
    t.note(f"the DUT resolves {name}")
    proc = t.control.resolve(name, family="inet6", timeout_s=max(3.0, 3 * t.reply_timeout))
    try:
        out, _ = proc.communicate(timeout=max(4.0, 4 * t.reply_timeout))
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    else:
        t.control.check_exit(proc)
    queries = [q for r in responders for q in r.wait(0.0, since)]
    queries.sort(key=lambda q: q.time)
    for q in queries:
        t.note(f"DNS query for {q.name} (type {q.qtype}) from {q.src} to {q.dst}")
    return queries, (out or "").strip()


def _judge_dns(t: CheckContext, queries, output: str, *, server: str, name: str, lead: str):
    if not queries:
        raise Deviation(f"{lead}; the DUT sent no DNS query to the server(s) it was given "
                         f"(resolver output: {output[:120] or 'nothing'})")
    first = queries[0]
    problems = []
    if not P.same_address(first.dst, server):
        problems.append(f"the first query went to {first.dst}, not {server}")
    if first.name.lower() != name.lower().rstrip("."):
        problems.append(f"it asked for {first.name}, not {name.rstrip('.')}")
    seen = f"{lead}; first DNS query for {first.name} to {first.dst}"
    if ANSWER in output:
        seen += f"; the DUT resolved it to {ANSWER}"
    return t.conclude(seen, problems)


def _label() -> str:
    return f"v6g{secrets.token_hex(3)}"


def _dns_use(t: CheckContext, mode: str, what: str):
    """what: server | domain | server_update | domain_update | server_order | domain_order | confirm_*"""
    b = X.Bench(t, mode=mode, start=False, t1=2 if "update" in what else 0, t2=200 if "update" in what else 0)
    s1 = b.dns
    d1 = b.lease.domains[0]
    servers, names = [s1], [d1]
    if what in ("server_order", "domain_order"):
        s2 = t.node("DNS2")
        d2 = f"second-{secrets.token_hex(2)}.v6gate.example"
        b.lease.dns_servers = [s1.global_addr, s2.global_addr]
        b.lease.domains = [d1, d2]
        servers = [s1, s2]
    if "update" in what:
        s2 = t.node("DNS2")
        d2 = f"renewed-{secrets.token_hex(2)}.v6gate.example"
        servers = [s1, s2]
        b.server.on(D.RENEW, lambda m: b.server.reply(m, t1=200, t2=300, dns_servers=[s2.global_addr], domains=[d2]))
    b.start()
    if mode == X.STATEFUL and not what.startswith("confirm"):
        o = X.observe(t, D.RENEW, bench=b) if "update" in what else None
        if o is None:
            X.bound(b)
        elif b.reply_sent_for(o.message, 1.0) is None:
            raise Deviation("the tester's server did not answer the Renew")
    elif mode == X.STATELESS:
        first = b.first(D.INFORMATION_REQUEST)
        if first is None:
            raise Deviation(f"no Information-request within {b.first_message_within:g} s of an RA with M=0 O=1")
        if b.reply_sent_for(first, 1.0) is None:
            raise Deviation("the tester's server did not answer the Information-request")
    else:  # after a reboot, confirmed
        o = X.observe(t, D.CONFIRM, bench=b)
        b.wait_usable(b.address, within=3.0)
    label = _label()
    if what in ("server", "server_order", "confirm_server"):
        name, server = f"{label}.v6gate.example.", s1.global_addr
        lead = f"DNS servers {', '.join(b.lease.dns_servers)} given"
    elif what == "server_update":
        name, server = f"{label}.v6gate.example.", servers[1].global_addr
        lead = f"DNS server {s1.global_addr} given, then {server} in the Reply to the Renew"
    elif what == "domain_update":
        name, server = label, servers[1].global_addr
        lead = f"search list {d1} given, then {d2} in the Reply to the Renew"
        names = [d2]
    else:
        name, server = label, s1.global_addr
        lead = f"search list {', '.join(b.lease.domains)} given"
    if "confirm" in what:
        lead += " (with the lease, and again in the Reply to the Confirm after a reboot)"
    queries, out = _resolve(t, name, servers)
    want = name if name.endswith(".") else f"{name}.{names[0]}"
    return _judge_dns(t, queries, out, server=server, name=want, lead=lead)


USING_PARTS = [Part("A", "Using DNS Recursive Name Server option", what="server",
                    expect="a name the DUT resolves is asked of the DNS server the Reply gave"),
               Part("B", "Using Domain Search List option", what="domain",
                    expect="a single-label name the DUT resolves is completed with the search domain the Reply gave")]


@check(area="dhcpv6", ipv6ready="DHCP_CONF.4.1.9",
       title="Client Initiated Exchange - Reception of Reply Messages for DNS Configuration Options",
       rfc="RFC 3646 §3, §4; RFC 8415 §18.2.10.1", capabilities=CAPS, needs=X.NEEDS,
       dut_config=X.DUT_CONFIG, fault=IGNORES_DNS,
       expect="the DNS configuration of the latest Reply is the one the DUT's resolver uses",
       parts=[*USING_PARTS,
              Part("C", "DNS Recursive Name Server option updated by the server", what="server_update",
                   expect="after the Reply to the Renew gives another DNS server, names are asked of the new one"),
              Part("D", "Domain Search List option updated by the server", what="domain_update",
                   expect="after the Reply to the Renew gives another search domain, single-label names get the "
                          "new one"),
              Part("E", "DNS Recursive Name Server option with several servers", what="server_order",
                   expect="of two DNS servers in the option, the first listed is asked first (order of "
                          "preference)"),
              Part("F", "Domain Search List option with several domains", what="domain_order",
                   expect="of two search domains in the option, the first listed is tried first")])
def dns_configuration_from_reply_is_used(t: CheckContext):
    """"The DNS Recursive Name Server option provides a list of one or more
    IPv6 addresses of DNS recursive name servers to which a client's DNS
    resolver MAY send DNS queries. The DNS servers are listed in the order of
    preference for use by the client resolver"; "The Domain Search List
    option specifies the domain search list the client is to use when
    resolving hostnames with DNS" (RFC 3646 §3, §4).  A Reply to a Renew
    replaces the options (RFC 8415 §18.2.10.1)."""
    return _dns_use(t, X.STATEFUL, t.p.what)


@check(area="dhcpv6", ipv6ready="DHCP_CONF.4.1.4", title="Transmission of Confirm Messages for DNS Configuration Options",
       rfc="RFC 3646 §3, §4; RFC 8415 §18.2.3", capabilities=CAPS, needs=X.NEEDS,
       dut_config=X.DUT_CONFIG, fault=IGNORES_DNS,
       expect="after a reboot and the Confirm exchange, the DUT still resolves with the DNS configuration it got",
       parts=[Part("C", "DNS Recursive Name Server option after the Confirm exchange", what="confirm_server",
                   expect="after the reboot and the Confirm, a name is asked of the DNS server of the lease"),
              Part("D", "Domain Search List option after the Confirm exchange", what="confirm_domain",
                   expect="after the reboot and the Confirm, a single-label name gets the lease's search domain")])
def dns_configuration_survives_a_confirm(t: CheckContext):
    """A client that confirms its lease after a reboot (RFC 8415 §18.2.3)
    goes on with the configuration of that lease: the DNS Recursive Name
    Server and Domain Search List options (RFC 3646 §3, §4), here sent again
    in the Reply to the Confirm."""
    return _dns_use(t, X.STATEFUL, t.p.what)


@check(area="dhcpv6", ipv6ready="DHCP_CONF.7.1.1", title="Basic Message Exchanges (stateless)",
       rfc="RFC 8415 §18.2.6, §18.2.10; RFC 3646 §3", capabilities=CAPS, needs=X.NEEDS,
       dut_config=X.DUT_CONFIG, fault=IGNORES_DNS,
       expect="after an RA with M=0 O=1, the Information-request / Reply exchange completes and the DUT resolves "
              "names through the DNS server of the Reply")
def stateless_exchange_configures_the_dut(t: CheckContext):
    """A client that needs only configuration information sends an
    Information-request and uses the Reply's options (RFC 8415 §18.2.6,
    §18.2.10), here the DNS server of RFC 3646 §3."""
    return _dns_use(t, X.STATELESS, "server")


@check(area="dhcpv6", ipv6ready="DHCP_CONF.7.1.6",
       title="Client Initiated Exchange - Reception of Reply Messages for DNS Configuration Options (stateless)",
       rfc="RFC 3646 §3, §4; RFC 8415 §18.2.10", capabilities=CAPS, needs=X.NEEDS,
       dut_config=X.DUT_CONFIG, fault=IGNORES_DNS,
       expect="the DNS configuration of the Reply to the Information-request is the one the DUT uses",
       parts=USING_PARTS)
def stateless_dns_configuration_is_used(t: CheckContext):
    """The stateless client's resolver uses the DNS Recursive Name Server and
    Domain Search List options of the Reply (RFC 3646 §3, §4)."""
    return _dns_use(t, X.STATELESS, t.p.what)


# -- a real server: Kea ----------------------------------------------------------------------------------------
KEA = {"renew": 4, "rebind": 6, "valid": 12, "dns": "2001:db8:1::53", "domain": "kea.v6gate.example"}


@check(area="dhcpv6", title="A lease from a real DHCPv6 server (Kea) is obtained, renewed and used",
       rfc="RFC 8415 §18.2.2, §18.2.4, §18.2.10.1; RFC 3646 §3, §4", capabilities=CAPS,
       needs=X.NEEDS, dut_config=X.DUT_CONFIG, lab_services=["kea-dhcp6"],
       expect="with Kea serving the link, the client leases an address from Kea's pool and uses it",
       parts=[Part("lease", "Lease from Kea", what="lease", fault="impostor_client_ignores_leases",
                   expect="the client requests an address of Kea's pool and then answers on it"),
              Part("renew", "Renew at Kea's T1", what="renew", fault="impostor_client_ignores_lifetime_updates",
                   expect="the client renews at Kea's T1 (4 s) and, renewed, still answers on the address after the "
                          "first valid lifetime (12 s)"),
              Part("dns", "Kea's DNS configuration", what="dns", fault=IGNORES_DNS,
                   expect="a single-label name is asked of Kea's DNS server (2001:db8:1::53) with Kea's search "
                          "domain")])
def lease_from_a_real_server_is_used(t: CheckContext):
    """The happy path with a real server: Solicit, Advertise, Request, Reply
    with Kea (RFC 8415 §18.2.1-§18.2.2), the Renew at T1 (§18.2.4) and the
    DNS options Kea returns (RFC 3646)."""
    b = X.Bench(t, start=False, dns=False)
    b.server.handlers = {}  # Kea answers; the tester only advertises the router and watches
    b.start()
    req = b.first(D.REQUEST, within=b.first_message_within + 3.5)
    if req is None:
        sols = b.server.messages(D.SOLICIT)
        raise Deviation(f"no Request within {b.first_message_within + 3.5:g} s ({len(sols)} Solicit(s) for Kea)")
    addrs = req.addresses()
    if not addrs:
        raise Deviation(f"{X.describe(req)}: the Request names no address from Kea's Advertise")
    address = addrs[0]
    if not b.wait_usable(address):
        raise Deviation(f"the DUT does not answer on {address}, leased from Kea")
    if t.p.what == "lease":
        return t.conclude(f"Request for {address} (Kea's pool) and the address answers Echo Requests", [])
    if t.p.what == "renew":
        renew = b.first(D.RENEW, within=KEA["renew"] + 2 + b.tol, since=req.time)
        if renew is None:
            raise Deviation(f"no Renew within {KEA['renew'] + 2} s of the Request (Kea's T1 is {KEA['renew']} s)")
        at = renew.time - req.time
        if abs(at - KEA["renew"]) > 0.5 + b.tol:
            raise Deviation(f"Renew {at:.2f} s after the Request, not at Kea's T1 {KEA['renew']} s")
        t.wait(max(0.0, req.time + KEA["valid"] + 1 - t.now()))
        ok = b.wait_usable(address, within=2.0)
        seen = f"Renew {at:.2f} s after the Request (T1 {KEA['renew']} s); {address} "
        after = f" after Kea's first valid lifetime of {KEA['valid']} s"
        if not ok:
            raise Deviation(f"{seen}stopped answering{after}")
        return t.conclude(f"{seen}still answers{after}", [])
    dns = t.node("KEADNS")
    dns.extra_addrs.append(KEA["dns"])
    label = _label()
    queries, out = _resolve(t, label, [dns])
    return _judge_dns(t, queries, out, server=KEA["dns"], name=f"{label}.{KEA['domain']}",
                      lead=f"Kea gave DNS server {KEA['dns']} and search domain {KEA['domain']}")
