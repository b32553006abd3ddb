"""DNS configuration from Router Advertisements — RFC 8106 (RDNSS and DNSSL
options).

The tester advertises a resolver (RDNSS) and a search list (DNSSL) in its
RAs and runs that resolver on the link; the DUT is made to look up names
(control adapter: resolve), and its DNS queries show which resolver and
which search domains it uses, and that it stops when their lifetimes end.
The lab's Linux DUT runs dhcpcd for this (DUT configuration 'rdnss-client'):
the kernel itself hands the options to user space only."""

from __future__ import annotations

import subprocess

from scapy.layers.l2 import Ether

from ..core.check import Part, check
from ..core.context import CheckContext
from ..core.verdict import Deviation
from ..net import packets as P
from ..net.dns import Resolver, dnssl_option, rdnss_option
from ..net.nd import fresh_prefix, prefix_option, router_advertisement
from ..net.rd import is_rs

_RDNSS = dict(capabilities=["RDNSS"], needs=["exclusive_router"], dut_config="rdnss-client", liveness="echo")


def _lookup(t: CheckContext, name: str, resolver: Resolver, want: str, *, window: float) -> tuple[list, str]:
    """Make the DUT look ``name`` up, again and again until a query for
    ``want`` reaches ``resolver`` or ``window`` has passed (window 0: one
    lookup).  Each lookup runs to its end (or its own timeout), so a lookup
    that starts late on a loaded DUT is still seen.  Returns those queries
    and the last lookup's output."""
    deadline = t.now() + window
    per_lookup = 2.0 + t.reply_timeout
    while True:
        since = t.now()
        proc = t.control.resolve(name, family="inet6", timeout_s=per_lookup)
        output = ""
        if isinstance(proc, subprocess.Popen):
            try:
                output, _ = proc.communicate(timeout=per_lookup + 2.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                output, _ = proc.communicate()
            else:
                t.control.check_exit(proc)
        t.wait(0.1)  # frames still in flight
        asked = resolver.asked(since, want)
        if asked or t.now() >= deadline:
            return asked, (output or "").strip()
        t.wait(0.3)


def _advertise(t: CheckContext, resolver_node, *, rdnss_lifetime: int | None = 600, dnssl: list[str] = (),
               dnssl_lifetime: int = 600, prefix=None):
    """Send the RA, and send it again in answer to the DUT's Router
    Solicitations from now on (as a router does, RFC 4861 §6.2.6): a DUT
    whose RA consumer starts late asks for it."""
    options = []
    if rdnss_lifetime is not None:
        options.append(rdnss_option([resolver_node.global_addr], rdnss_lifetime))
    if dnssl:
        options.append(dnssl_option(list(dnssl), dnssl_lifetime))
    ra = router_advertisement(t.tr1, router_lifetime=0, options=options,
                              prefixes=[prefix_option(prefix, valid=600, preferred=600)])
    old = getattr(t, "_rdnss_answerer", None)
    if old is not None:
        t.port.remove_responder(old)

    def answer_rs(port, frame):
        if not frame.outgoing and is_rs(frame.pkt) and frame.pkt[Ether].src.lower() == t.dut.mac:
            port.send(ra)

    t._rdnss_answerer = answer_rs
    t.port.add_responder(answer_rs)
    return t.send(ra, label=f"RA: prefix {prefix}, RDNSS {resolver_node.global_addr} ({rdnss_lifetime} s)"
                            + (f", DNSSL {list(dnssl)} ({dnssl_lifetime} s)" if dnssl else ""))


def _setup(t: CheckContext):
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    node = t.node("DNS1", prefix=prefix)
    resolver = Resolver(node)
    t.port.add_responder(resolver)
    return prefix, node, resolver


def _teardown(t: CheckContext, resolver) -> None:
    t.port.remove_responder(resolver)
    answerer = getattr(t, "_rdnss_answerer", None)
    if answerer is not None:
        t.port.remove_responder(answerer)


def _nonce_name() -> str:
    return f"v6g-{P.nonce(4).hex()}"


def _use_window(t: CheckContext) -> float:
    """How long the DUT may take to start using an RA's DNS options: as long
    as it may take to get ready after a reset (its RA consumer may wait for
    DAD of the address it forms first).  Lookups stop as soon as one
    reaches the resolver, so a slow DUT costs time, not a verdict."""
    return float(t.timing["ready_timeout_s"])


def _expiry_slack(t: CheckContext) -> float:
    """Time allowed after a lifetime ends for the DUT to act on it (a user
    space consumer rewrites its resolver configuration then)."""
    return 1.0 + t.reply_timeout


@check(area="rdnss", title="The recursive DNS server of an RDNSS option is used", rfc="RFC 8106 §5.1, §5.3.1",
       fault="dut_ignores_rdnss_options", **_RDNSS,
       expect="after an RA with an RDNSS option naming the tester's resolver, the DUT's lookups go to that resolver "
              "over IPv6 (UDP port 53) and the answer reaches the application")
def advertised_resolver_is_used(t: CheckContext):
    """'The RDNSS option contains one or more IPv6 addresses of recursive DNS
    servers' (RFC 8106 §5.1); a host 'SHOULD ... use [them] for DNS name
    resolution' (§5.3.1)."""
    prefix, node, resolver = _setup(t)
    name = f"{_nonce_name()}.example.net"
    answer = P.address_in(fresh_prefix(), P.random_iid())
    resolver.records[name] = answer
    try:
        _advertise(t, node, prefix=prefix)
        asked, output = _lookup(t, name, resolver, name, window=_use_window(t))
    finally:
        _teardown(t, resolver)
    if not asked:
        raise Deviation(f"no DNS query for {name} reached the advertised resolver {node.global_addr} within "
                         f"{_use_window(t):g} s of lookups")
    q = asked[0]
    seen = f"query for {q.name} ({q.qtype}) from {q.src} to {q.dst}; the lookup returned {output or 'nothing'!r}"
    if answer not in output:
        raise Deviation(seen)
    return t.conclude(seen, [])


@check(area="rdnss", title="A resolver is no longer used once its lifetime ends", rfc="RFC 8106 §5.1, §5.2, §5.3.1",
       fault="dut_keeps_dns_options_forever", **_RDNSS,
       expect="an RDNSS (DNSSL) entry is used while its lifetime lasts and no longer once it has run out or an RA "
              "gives it lifetime 0",
       parts=[
           Part("rdnss_expires", "RDNSS lifetime runs out", option="rdnss", lifetime=4,
                expect="the resolver of an RDNSS option with Lifetime 4 s is used at first and gets no query once "
                       "the 4 s have passed (plus 1 s and the reply timeout for the DUT to act)"),
           Part("rdnss_zero", "RDNSS withdrawn with lifetime 0", option="rdnss", lifetime=0,
                expect="after an RA with the same RDNSS option and Lifetime 0, the resolver gets no query"),
           Part("dnssl_expires", "DNSSL lifetime runs out", option="dnssl", lifetime=4,
                expect="the domain of a DNSSL option with Lifetime 4 s is appended to single-label names at first, "
                       "and no longer once the 4 s have passed (plus 1 s and the reply timeout)"),
       ])
def dns_options_expire(t: CheckContext):
    """'Lifetime: The maximum time in seconds ... over which these RDNSS
    addresses MAY be used for name resolution ... A value of zero means that
    the RDNSS addresses MUST no longer be used' (RFC 8106 §5.1); the same
    for DNSSL domain names (§5.2)."""
    prefix, node, resolver = _setup(t)
    suffix = f"{_nonce_name()}.example"
    short = _nonce_name()
    name = f"{short}.{suffix}" if t.p.option == "dnssl" else f"{_nonce_name()}.example.net"
    lookup = short if t.p.option == "dnssl" else name
    try:
        first_lifetime = 600 if t.p.lifetime == 0 else t.p.lifetime
        sent = _advertise(t, node, prefix=prefix,
                          rdnss_lifetime=first_lifetime if t.p.option == "rdnss" else 600,
                          dnssl=[suffix] if t.p.option == "dnssl" else [],
                          dnssl_lifetime=first_lifetime)
        asked, _ = _lookup(t, lookup, resolver, name, window=_use_window(t))
        first_at = asked[0].time - sent if asked else None
        if not asked:
            raise t.not_judged("resolver-in-use", "rdnss.advertised_resolver_is_used#",
                               f"no query for {name} reached {node.global_addr} while the option was valid")
        if t.p.lifetime == 0:
            sent = _advertise(t, node, prefix=prefix, rdnss_lifetime=0)
            t.wait(_expiry_slack(t))
            when = "after the RA with RDNSS Lifetime 0"
        else:
            t.wait(max(0.0, sent + t.p.lifetime + _expiry_slack(t) - t.now()))
            when = f"{t.now() - sent:.1f} s after the RA (lifetime {t.p.lifetime} s)"
        later, _ = _lookup(t, lookup, resolver, name, window=0)
    finally:
        _teardown(t, resolver)
    if later:
        raise Deviation(f"{when} the DUT still asked {later[0].dst} for {later[0].name}")
    if not t.alive(method="echo"):
        raise Deviation(f"{when} no query for {name}, but the DUT stopped answering")
    return t.conclude(f"query for {name} at first ({first_at:.2f} s after the RA); {when} none", [])


@check(area="rdnss", title="The domains of a DNSSL option complete single-label names", rfc="RFC 8106 §5.2, §5.3.1",
       fault="dut_ignores_dnssl_options", **_RDNSS,
       expect="after an RA with RDNSS and DNSSL options, a lookup of a single-label name makes the DUT ask the "
              "advertised resolver for that name in the advertised domain")
def search_list_is_used(t: CheckContext):
    """'The DNSSL option contains one or more domain names of DNS suffixes'
    used for name lookups of unqualified names (RFC 8106 §5.2, §5.3.1)."""
    prefix, node, resolver = _setup(t)
    suffix, short = f"{_nonce_name()}.example", _nonce_name()
    full = f"{short}.{suffix}"
    answer = P.address_in(fresh_prefix(), P.random_iid())
    resolver.records[full] = answer
    try:
        _advertise(t, node, prefix=prefix, dnssl=[suffix])
        asked, output = _lookup(t, short, resolver, full, window=_use_window(t))
    finally:
        _teardown(t, resolver)
    others = sorted({q.name for q in resolver.queries})
    if not asked:
        raise Deviation(f"no query for {full} within {_use_window(t):g} s of looking up '{short}' (queries seen: "
                         f"{others or 'none'})")
    seen = f"looking up '{short}' asked {asked[0].dst} for {asked[0].name}; the lookup returned {output or 'nothing'!r}"
    if answer not in output:
        raise Deviation(seen)
    return t.conclude(seen, [])


# -- RFC 9463: Discovery of Network-designated Resolvers (DNR) in Router Advertisements ------------


@check(area="rdnss", scope="host", title="An encrypted resolver announced by DNR is contacted over its encrypted protocol",
       rfc="RFC 9463 §6; RFC 9460 (SvcParams)", capabilities=["DNR"], needs=["exclusive_router"], liveness=None,
       fault="impostor_takes_dnr_for_rdnss",
       expect="after an RA with a prefix and an Encrypted DNS option (ADN, the resolver's address, alpn dot, port "
              "8853), and a name lookup, the DUT opens a TCP connection to the resolver's address on port 8853 and "
              "sends it no plain DNS (UDP or TCP port 53)")
def encrypted_resolver_is_used(t: CheckContext):
    """A DNR client learns an encrypted resolver from the Encrypted DNS RA
    option: its Authentication Domain Name, addresses and SvcParams (RFC 9463
    §6), and reaches it with the protocol and port those SvcParams name
    (SvcParams of RFC 9460; DoT of RFC 7858).  A port other
    than the default (8853) shows the client read the SvcParams; plain DNS
    to the resolver's address means it took the option for an RDNSS."""
    from scapy.layers.inet import TCP, UDP
    from scapy.layers.inet6 import IPv6

    from ..core.control import NotSupported
    from ..net.dns import DNS_PORT, encrypted_dns_option

    prefix = fresh_prefix(avoid=t.target.link_prefix)
    node = t.node("DNR", prefix=prefix)
    port = 8853
    adn = f"{_nonce_name()}.resolver.v6gate.test"
    since = t.send(router_advertisement(t.tr1, router_lifetime=600, prefixes=[prefix_option(prefix)],
                                        options=[encrypted_dns_option(adn, [node.global_addr], port=port)]),
                   label=f"RA: prefix {prefix}, Encrypted DNS option {adn} at [{node.global_addr}]:{port} (alpn dot)")
    try:
        proc = t.control.resolve(f"{_nonce_name()}.example", timeout_s=3.0)
    except NotSupported:
        proc = None
    window = 3.0 + 2 * t.reply_timeout

    def to_resolver(p) -> bool:
        return IPv6 in p and P.same_address(p[IPv6].dst, node.global_addr) and (TCP in p or UDP in p)

    try:
        t.port.expect(t.from_dut(lambda p: to_resolver(p) and TCP in p and p[TCP].dport == port), window, since=since)
        t.wait(0.3)
    finally:
        if isinstance(proc, subprocess.Popen):
            proc.kill()
            proc.wait(5)
    frames = t.collect(to_resolver, 0, since=since)
    encrypted = [f for f in frames if TCP in f.pkt and f.pkt[TCP].dport == port]
    plain = [f for f in frames if (UDP in f.pkt and f.pkt[UDP].dport == DNS_PORT)
             or (TCP in f.pkt and f.pkt[TCP].dport == DNS_PORT)]
    problems = []
    if not encrypted:
        problems.append(f"no TCP connection to [{node.global_addr}]:{port} within {window:g} s of the RA")
    if plain:
        problems.append(f"plain DNS to the encrypted resolver: {plain[0].summary()}")
    seen = (f"{len(encrypted)} TCP segment(s) to port {port}"
            + (f", first {encrypted[0].time - since:.2f} s after the RA from {encrypted[0].pkt[IPv6].src}" if encrypted else "")
            + f"; {len(plain)} plain DNS message(s) to it")
    if problems:
        raise Deviation(f"{'; '.join(problems)} ({seen})")
    return t.conclude(seen, [])
