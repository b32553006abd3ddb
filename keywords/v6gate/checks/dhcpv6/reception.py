"""DHCPv6 client (RFC 8415): what the client does with what servers send —
basic exchanges, Advertise selection, Reply processing (T1/T2, new
addresses, lifetimes), status codes, invalid Advertise and Reply, messages a
client must never accept, Reconfigure without authentication, Rapid Commit,
and the RA's M and O flags; IPv6 Ready DHCP_CONF.1.1.1, 1.2.7 B, 1.2.8 B,
1.3.x, 7.1.7, 7.1.8.

The judgement is on the wire: what the client sends next, and whether the
leased address answers an Echo Request from an on-link node (a DUT uses an
address it holds; one it released, declined or whose lifetime ended stays
silent, RFC 4862 §5.4 / RFC 8415 §18.2.7-8).
"""

from __future__ import annotations

import ipaddress
import struct

from scapy.layers.inet import UDP
from scapy.packet import Raw

from ...core.check import Part, check
from ...core.context import CheckContext, NotApplicable
from ...core.verdict import Deviation
from ...net import dhcpv6 as D
from ...net import packets as P
from ...scenario import dhcpv6 as X

CAPS = ["DHCPv6-Client"]
NEEDS = X.NEEDS
CFG = X.DUT_CONFIG


def _usable(t: CheckContext, b: X.Bench, address: str, what: str):
    """PASS when the address answers (it is in use), with ``what`` said."""
    ok = b.wait_usable(address, within=2.0 + t.reply_timeout)
    if not ok:
        raise Deviation(f"{what}; {address} does not answer Echo Requests")
    return t.conclude(f"{what}; {address} answers Echo Requests", [])


def _no_new_leases(b: X.Bench) -> None:
    """From now on the server leases nothing new, so the address can only
    stay in use through the lease being judged."""
    b.server.on(D.SOLICIT, None)
    b.server.on(D.REQUEST, None)


def _next_from_client(b: X.Bench, since: float, within: float, types=None):
    got = b.server.wait(None, within, since, where=lambda m: types is None or m.type in types)
    return got[0] if got else None


# -- basic exchanges -------------------------------------------------------------------------------------------
@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.1.1", title="Basic Message Exchange",
       rfc="RFC 8415 §18.2.10, §18.2.10.1, §18.2.10.2", capabilities=CAPS, needs=NEEDS, dut_config=CFG,
       expect="each client-initiated exchange completes on a valid Reply",
       parts=[Part("A", "Valid Reply message in response to Request", how="request",
                   fault="impostor_client_ignores_leases",
                   expect="after the Reply to its Request, the client uses the leased address (it answers an Echo "
                          "Request) and stops retransmitting the Request"),
              Part("B", "Valid Reply message in response to Confirm message", how="confirm",
                   fault="impostor_client_solicits_after_confirm",
                   expect="after a reboot, a Reply with Success to its Confirm lets the client go on using the "
                          "address, without a new Solicit"),
              Part("C", "Valid Reply message in response to a Renew message", how="renew",
                   fault="impostor_client_ignores_lifetime_updates",
                   expect="the Reply to the Renew ends the exchange (no Renew retransmission, no Rebind at T2) and "
                          "its lifetimes keep the address past its first valid lifetime"),
              Part("D", "Valid Reply message in response to a Rebind message", how="rebind",
                   fault="impostor_client_ignores_lifetime_updates",
                   expect="the Reply to the Rebind ends the exchange (no Rebind retransmission) and its lifetimes "
                          "keep the address past its first valid lifetime"),
              Part("E", "Valid Reply message in response to a Release message", how="release",
                   fault="impostor_client_keeps_released_address",
                   expect="the Reply to the Release ends the exchange (no retransmission) and the address is no "
                          "longer used"),
              Part("F", "Valid Reply message in response to a Decline message", how="decline",
                   fault="impostor_client_keeps_declined_address",
                   expect="the Reply to the Decline ends the exchange (no retransmission) and the declined "
                          "address is not used")])
def reply_completes_each_exchange(t: CheckContext):
    """A valid Reply ends the exchange it answers (RFC 8415 §15) and the
    client acts on it: it uses the leases of a Reply to Request, Renew or
    Rebind, with their new lifetimes (§18.2.10.1); after a successful
    Confirm it "can use the addresses" (§18.2.10.1); a Release or Decline is
    "completed" by the Reply (§18.2.10.2), and released or declined
    addresses are not used (§18.2.7, §18.2.8)."""
    how = t.p.how
    if how == "request":
        b = X.Bench(t)
        req = b.first(D.REQUEST, within=b.first_message_within + 2.5)
        if req is None:
            raise Deviation("no Request after the Advertise (preference 255)")
        ok = b.wait_usable(b.address)
        retrans = [m for m in b.server.messages(D.REQUEST, since=req.time + 0.01) if m.xid == req.xid]
        seen = f"Reply sent to the Request (xid {req.xid:#08x}); {b.address} " + ("answers" if ok else "does not answer")
        if retrans:
            raise Deviation(f"{seen}; but the Request was retransmitted after the Reply")
        if not ok:
            raise Deviation(seen)
        return t.conclude(seen, [])
    if how == "confirm":
        o = X.observe(t, D.CONFIRM)
        b = o.bench
        ok = b.wait_usable(b.address, within=3.0 + t.reply_timeout)
        sol = b.server.messages(D.SOLICIT, since=o.message.time)
        seen = f"Reply (Success) to the Confirm; {b.address} " + ("answers" if ok else "does not answer")
        if sol:
            raise Deviation(f"{seen}; but the client solicited again {sol[0].time - o.message.time:.2f} s later")
        if not ok:
            raise Deviation(seen)
        return t.conclude(seen, [])
    if how in ("renew", "rebind"):
        msg = D.RENEW if how == "renew" else D.REBIND
        b = X.Bench(t, start=False, t1=1, t2=4 if how == "renew" else 2, preferred=6, valid=6)
        if msg == D.REBIND:
            b.server.on(D.RENEW, None)
        b.server.on(msg, lambda m: b.server.reply(m, t1=200, t2=300, addresses=[(b.address, 400, 500)]))
        b.start()
        o = X.observe(t, msg, bench=b)
        first = o.message
        _no_new_leases(b)
        t.wait(max(0.0, o.binding.reply_at + 6 + 1 - t.now()))
        again = [m for m in b.server.messages(msg, since=first.time + 0.01) if m.xid == first.xid]
        later = b.server.messages(D.REBIND if msg == D.RENEW else D.SOLICIT, since=first.time)
        if again or later:
            what = f"the {first.name} was retransmitted" if again else f"a {later[0].name} followed"
            raise Deviation(f"Reply (lifetimes 400/500 s) sent to the {first.name}; {what} anyway")
        return _usable(t, b, b.address, f"Reply (lifetimes 400/500 s) to the {first.name}; 7 s after the lease's "
                                         "first valid lifetime of 6 s began")
    msg = D.RELEASE if how == "release" else D.DECLINE
    o = X.observe(t, msg)
    b = o.bench
    t.wait(max(0.0, o.message.time + 1.1 + b.tol + 0.5 - t.now()))
    again = [m for m in b.server.messages(msg, since=o.message.time + 0.01) if m.xid == o.message.xid]
    if again:
        raise Deviation(f"Reply (Success) sent to the {o.message.name}; retransmitted "
                         f"{again[0].time - o.message.time:.2f} s later anyway")
    problems, seen = b.not_in_use(b.address, what=f"Echo Reply from the {'released' if how == 'release' else 'declined'}"
                                                  f" address {b.address}")
    return t.conclude(seen, problems)


@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.2.7", title="Transmission of Release Messages",
       rfc="RFC 8415 §18.2.7", capabilities=CAPS, needs=NEEDS, dut_config=CFG,
       fault="impostor_client_keeps_released_address",
       expect="once the client releases its lease, the released address no longer answers (the client stops "
              "using it before it sends the Release)",
       parts=[Part("B", "Release of received address")])
def released_address_is_no_longer_used(t: CheckContext):
    """"The client MUST stop using all of the leases being released before
    the client begins the Release message exchange process" (RFC 8415
    §18.2.7)."""
    o = X.observe(t, D.RELEASE)
    problems, seen = o.bench.not_in_use(o.bench.address, what=f"Echo Reply from the released address {o.bench.address}")
    return t.conclude(seen, problems)


@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.2.8", title="Transmission of Decline Messages",
       rfc="RFC 8415 §18.2.8", capabilities=CAPS, needs=NEEDS, dut_config=CFG,
       fault="impostor_client_keeps_declined_address",
       expect="after its Duplicate Address Detection fails and it declines the address, the client does not use it",
       parts=[Part("B", "Decline of received address")])
def declined_address_is_not_used(t: CheckContext):
    """"If any of the addresses are found to be in use on the link, the
    client sends a Decline message to the server"; "The client MUST NOT use
    any of the addresses it is declining as the source address in the
    Decline message or in any subsequently transmitted message" (RFC 8415
    §18.2.8, RFC 4862 §5.4.5)."""
    o = X.observe(t, D.DECLINE)
    b = o.bench
    b.defended.discard(b.address)  # from now on the address is free: only the DUT could answer for it
    problems, seen = b.not_in_use(b.address, what=f"Echo Reply from the declined address {b.address}")
    return t.conclude(seen, problems)


# -- Advertise ---------------------------------------------------------------------------------------------------
@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.3.1", title="Reception of Advertise Messages",
       rfc="RFC 8415 §18.2.9, §21.8", capabilities=CAPS, needs=NEEDS, dut_config=CFG,
       fault="impostor_client_ignores_preference",
       expect="of two Advertise messages received in the first RT, preference 10 then preference 200, the client "
              "requests from the server with preference 200 (its Server Identifier in the Request)")
def most_preferred_advertise_is_chosen(t: CheckContext):
    """"The client MUST collect Advertise messages for the first RT seconds"
    and "selects ... the Advertise message with the highest server
    preference value" (RFC 8415 §18.2.9); the Preference option carries that
    value (§21.8)."""
    b = X.Bench(t, start=False, preference=10)
    other_node = t.node("DHCP6S2")
    other = D.TesterServer(t.port, other_node, t.dut.mac, D.Lease([P.address_in(b.prefix, P.random_iid())]),
                           preference=200)  # not started: it only sends the second Advertise

    def both(m):
        first = b.server.advertise(m)
        b.server.send(first, m)
        other.send(other.advertise(m), m)
        return None

    b.server.on(D.SOLICIT, both)
    b.start()
    req = b.first(D.REQUEST, within=b.first_message_within + 2.5)
    if req is None:
        raise Deviation("no Request after two Advertise messages (preferences 10 and 200)")
    chose = "preference 200" if req.server_duid == other.duid else \
        "preference 10" if req.server_duid == b.server.duid else f"an unknown server {req.server_duid!r}"
    seen = f"Advertise with preference 10 then 200 to the Solicit; the Request names the server with {chose}"
    if req.server_duid != other.duid:
        raise Deviation(seen)
    return t.conclude(seen, [])


@check(area="dhcpv6", title="Advertise with preference 255 is acted on at once", rfc="RFC 8415 §18.2.9",
       capabilities=CAPS, needs=NEEDS, dut_config=CFG, fault="impostor_client_collects_despite_preference_255",
       expect="an Advertise with preference 255 makes the client send its Request at once (within 0.5 s), not "
              "after its first RT (> 1 s)",
       parts=[Part("preference-255", "Advertise with preference 255")])
def advertise_with_preference_255_is_acted_on_at_once(t: CheckContext):
    """"If the client receives an Advertise message that includes a
    Preference option with a preference value of 255, the client immediately
    begins a client-initiated message exchange ... by sending a Request
    message to the server from which the Advertise message was received"
    (RFC 8415 §18.2.9)."""
    b = X.Bench(t, preference=255)
    sol = b.first(D.SOLICIT)
    if sol is None:
        raise Deviation(f"no Solicit within {b.first_message_within:g} s of an RA with M=1")
    req = b.first(D.REQUEST, within=3.0, since=sol.time)
    if req is None:
        raise Deviation("no Request within 3 s of an Advertise with preference 255")
    delay = req.time - sol.time
    # at once: well before the first RT (> 1 s) a collecting client would wait out
    at_once = min(D.EXCHANGES[D.SOLICIT].irt / 2, t.reply_timeout)
    ok = delay < at_once
    seen = f"Request {delay:.3f} s after the Solicit its Advertise (preference 255) answered"
    if not ok:
        raise Deviation(f"{seen}: not at once (more than {at_once:g} s; a client waiting out its first RT requests "
                        "after at least 1 s)")
    return t.conclude(seen, [])


@check(area="dhcpv6", title="Advertise without addresses is ignored", rfc="RFC 8415 §18.2.9",
       capabilities=CAPS, needs=NEEDS, dut_config=CFG, fault="impostor_client_accepts_invalid_messages",
       expect="an Advertise whose IA_NA holds no address (status NoAddrsAvail) does not get a Request; the client "
              "solicits again and requests from the next Advertise that has an address",
       parts=[Part("no-addrs-avail", "Advertise with NoAddrsAvail")])
def advertise_without_addresses_is_ignored(t: CheckContext):
    """"The client MUST ignore any Advertise message that contains no
    addresses (IA Address options ...) and no delegated prefixes" (RFC 8415
    §18.2.9), e.g. one whose IA_NA carries the NoAddrsAvail status."""
    b = X.Bench(t, start=False)
    empty: list[D.Message] = []

    def first_empty(m):
        if not empty:
            empty.append(m)
            return b.server.advertise(m, ia_status=(D.NO_ADDRS_AVAIL, "none"))
        return b.server.advertise(m)

    b.server.on(D.SOLICIT, first_empty)
    b.start()
    req = b.first(D.REQUEST, within=b.first_message_within + 1.1 * 3 + b.tol)
    if req is None:
        raise Deviation("no Request at all, even after an Advertise with an address")
    sols = b.server.messages(D.SOLICIT)
    if len(sols) < 2 or req.time < sols[1].time:
        raise Deviation(f"{X.describe(req)}: requested from the Advertise with NoAddrsAvail (before any "
                         "retransmission of the Solicit)")
    return t.conclude(f"Advertise with NoAddrsAvail to the first Solicit ignored; the Request followed the Advertise "
                       f"to Solicit #{len([s for s in sols if s.time <= req.time])}", [])


# -- Reply processing ------------------------------------------------------------------------------------------
@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.3.2", title="Client Initiated Exchange - Reception of Reply Messages",
       rfc="RFC 8415 §18.2.10.1, §18.2.4, §18.2.5", capabilities=CAPS, needs=NEEDS, dut_config=CFG,
       expect="the client records and uses what the Reply says about its IA",
       parts=[Part("A", "T1 and T2 Times Recorded", how="t1t2", fault="impostor_client_ignores_t1",
                   expect="with T1 = 2 s and T2 = 4 s in the Reply (and the Renews unanswered), a Renew at T1 and a "
                          "Rebind at T2, measured from the Reply"),
              Part("B", "New Address in IA option", how="new", fault="impostor_client_ignores_new_addresses",
                   expect="a second address added to the IA by the Reply to the Renew is used too"),
              Part("C", "Update Lifetimes", how="lifetimes", fault="impostor_client_ignores_lifetime_updates",
                   expect="longer lifetimes in the Reply to the Renew (at T1 = 3 s) keep the address past its "
                          "first valid lifetime (6 s)"),
              Part("D", "IA Address option - Valid Lifetime set to zero", how="zero",
                   fault="impostor_client_keeps_zero_lifetime_address",
                   expect="an address the Reply to the Renew gives a valid lifetime of 0 is no longer used"),
              Part("E", "IA Address option not included in IA from Server", how="unlisted",
                   fault="impostor_client_drops_unlisted_addresses",
                   expect="an address the Reply to the Renew does not list keeps being used until its own lifetime "
                          "ends")])
def reply_updates_the_ia(t: CheckContext):
    """When the client receives a Reply to a Request, Renew or Rebind it
    records T1 and T2 (§18.2.10.1: the Renew goes out at T1, the Rebind at
    T2, §18.2.4, §18.2.5) and: "Add any new leases in the IA option to the IA
    as recorded by the client. Update lifetimes for any leases in the IA
    option that the client already has recorded in the IA. Discard any
    leases from the IA, as recorded by the client, that have a valid
    lifetime of 0 in the IA Address or IA Prefix option. Leave unchanged any
    information about leases the client has recorded in the IA but that were
    not included in the IA from the server" (RFC 8415 §18.2.10.1)."""
    how = t.p.how
    if how == "t1t2":
        b = X.Bench(t, start=False, t1=2, t2=4, preferred=60, valid=80)
        b.server.on(D.RENEW, None)
        b.start()
        bnd = X.bound(b)
        renew = b.first(D.RENEW, within=max(0.0, bnd.reply_at + 2 - t.now()) + 1 + b.tol, since=bnd.reply_at)
        rebind = b.first(D.REBIND, within=max(0.0, bnd.reply_at + 4 - t.now()) + 1 + b.tol, since=bnd.reply_at)
        at = {k: (m.time - bnd.reply_at if m else None) for k, m in (("Renew", renew), ("Rebind", rebind))}
        seen = "; ".join(f"{k} at +{v:.2f} s" if v is not None else f"no {k}" for k, v in at.items())
        ok = at["Renew"] is not None and abs(at["Renew"] - 2) <= 0.2 + b.tol and at["Rebind"] is not None and \
            abs(at["Rebind"] - 4) <= 0.4 + b.tol
        if not ok:
            raise Deviation(f"T1 2 s, T2 4 s in the Reply; {seen} (not at T1 / T2)")
        return t.conclude(f"T1 2 s, T2 4 s in the Reply; {seen}", [])
    # T1 3 s: the first Renew comes after bind() has seen the address work
    b = X.Bench(t, start=False, t1=3, t2=60, preferred=6, valid=6)
    extra = P.address_in(b.prefix, P.random_iid())
    replies = {
        "new": lambda m: b.server.reply(m, t1=200, t2=300, addresses=[(b.address, 400, 500), (extra, 400, 500)]),
        "lifetimes": lambda m: b.server.reply(m, t1=200, t2=300, addresses=[(b.address, 400, 500)]),
        "zero": lambda m: b.server.reply(m, t1=200, t2=300, addresses=[(b.address, 0, 0), (extra, 400, 500)]),
        "unlisted": lambda m: b.server.reply(m, t1=200, t2=300, addresses=[]),
    }
    b.lease.valid = b.lease.preferred = 60 if how == "unlisted" else 6
    b.server.on(D.RENEW, replies[how])
    b.start()
    o = X.observe(t, D.RENEW, bench=b)
    t.note(f"Reply to the Renew: {how}")
    _no_new_leases(b)
    if how == "new":
        return _usable(t, b, extra, f"Reply to the Renew added {extra}")
    if how == "lifetimes":
        t.wait(max(0.0, o.binding.reply_at + 7 - t.now()))
        return _usable(t, b, b.address, "Reply to the Renew raised the lifetimes to 400/500 s; 7 s after the first "
                                        "valid lifetime of 6 s began")
    if how == "zero":
        if not b.wait_usable(extra, within=2.0 + t.reply_timeout):
            raise Deviation(f"the client did not act on the Reply to the Renew: the new address {extra} does not "
                             "answer either")
        problems, seen = b.not_in_use(b.address, what=f"Echo Reply from {b.address}, given a valid lifetime of 0")
        return t.conclude(seen, problems)
    t.wait(max(0.0, o.message.time + 1.0 - t.now()))
    return _usable(t, b, b.address, "Reply to the Renew with an IA_NA that lists no address")


# -- status codes -----------------------------------------------------------------------------------------------
STATUS_PARTS = [
    Part("A", "Reply message contains UnspecFail", how="unspecfail_request", fault="impostor_client_retries_at_once",
         expect="after a Reply with UnspecFail to its Request, the client retries no sooner than its retransmission "
                "time allows (rate-limited: not within 0.9 s) and uses no address from it"),
    Part("B", "Reply message contains UseMulticast", how="usemulticast", fault="impostor_client_ignores_usemulticast",
         expect="after a Reply with UseMulticast to its Request, the client sends the Request again, to ff02::1:2"),
    Part("C", "Reply message contains NotOnLink in response to a Request message", how="notonlink_request",
         fault="impostor_client_ignores_status_codes",
         expect="after NotOnLink in the IA of the Reply to its Request, the client does not use the address: it "
                "sends a Request without it or a Solicit"),
    Part("D", "Reply message contains NotOnLink in response to a Confirm message", how="notonlink_confirm",
         fault="impostor_client_ignores_status_codes",
         expect="after a Reply with NotOnLink to its Confirm, the client restarts server discovery (Solicit) and "
                "stops using the address"),
    Part("E", "Reply message contains NoAddrsAvail in response to a Request message", how="noaddrsavail",
         fault="impostor_client_ignores_status_codes",
         expect="after NoAddrsAvail in the IA of the Reply to its Request, the client uses no address from that "
                "server (the advertised address stays silent)"),
    Part("F", "Reply message contains NoBinding in response to a Renew message", how="nobinding_renew",
         fault="impostor_client_ignores_status_codes",
         expect="after NoBinding in the IA of the Reply to its Renew, the client sends a Request for the IA"),
    Part("G", "Reply message contains NoBinding in response to a Rebind message", how="nobinding_rebind",
         fault="impostor_client_ignores_status_codes",
         expect="after NoBinding in the IA of the Reply to its Rebind, the client sends a Request for the IA"),
    Part("H", "Reply to a Renew message without the IA", how="missing_renew", fault="impostor_client_retries_at_once",
         expect="after a Reply to its Renew that leaves out its IA, the client renews again, rate-limited: not "
                "within 0.9 s, and within its Renew retransmission time (REN_TIMEOUT 10 s + 10%)"),
    Part("I", "Reply to a Rebind message without the IA", how="missing_rebind", fault="impostor_client_retries_at_once",
         expect="after a Reply to its Rebind that leaves out its IA, the client rebinds again, rate-limited: not "
                "within 0.9 s, and within its Rebind retransmission time (REB_TIMEOUT 10 s + 10%)"),
    Part("J", "Reply message contains UnspecFail in response to a Renew message", how="unspecfail_renew",
         fault="impostor_client_retries_at_once",
         expect="after a Reply with UnspecFail to its Renew, the client keeps the address and renews again, "
                "rate-limited: not within 0.9 s"),
    Part("K", "Reply message contains Success in response to a Confirm message", how="success_confirm",
         fault="impostor_client_solicits_after_confirm",
         expect="after a Reply with Success to its Confirm, the client keeps using the address and does not "
                "solicit"),
]


@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.3.3",
       title="Client Initiated Exchange - Reception of Reply Messages (status codes)",
       rfc="RFC 8415 §18.2.10, §18.2.10.1, §14.1, §21.13", capabilities=CAPS, needs=NEEDS, dut_config=CFG,
       expect="the client reacts to each status code as RFC 8415 §18.2.10 says", parts=STATUS_PARTS)
def reply_status_codes_are_honoured(t: CheckContext):
    """RFC 8415 §18.2.10: "If the client receives a Reply message with a
    status code of UnspecFail ... the client MUST limit the rate at which it
    retransmits the message"; "with a status code of UseMulticast, the client
    ... resends the original message using multicast".  §18.2.10.1: NotOnLink
    to a Request: "the client can either reissue the message without
    specifying any addresses or restart the DHCP server discovery process";
    only NotOnLink to a Confirm: "the client MUST restart the DHCP server
    discovery process"; NoAddrsAvail: "the client has received no usable
    addresses in the IA"; NoBinding to a Renew or Rebind: "Sends a Request
    message to the server that responded"; an IA missing from the Reply to a
    Renew or Rebind: "Sends a Renew/Rebind ... the client MUST rate-limit its
    transmissions (see Section 14.1) and MAY just wait for the normal
    retransmission time"."""
    how = t.p.how
    if how in ("unspecfail_request", "usemulticast", "notonlink_request", "noaddrsavail"):
        return _status_to_request(t, how)
    if how in ("notonlink_confirm", "success_confirm"):
        return _status_to_confirm(t, how)
    return _status_to_renew_or_rebind(t, how)


def _status_to_request(t: CheckContext, how: str):
    b = X.Bench(t, start=False)
    if how == "usemulticast":
        b.server.extra_options.append(D.opt(D.OPT_UNICAST, ipaddress.IPv6Address(b.server_node.global_addr).packed))
    answered: list[D.Message] = []

    def first_bad(m):
        if answered:
            return b.server.reply(m)
        answered.append(m)
        if how == "unspecfail_request":
            return b.server.reply(m, ia=False, status=(D.UNSPEC_FAIL, "try later"))
        if how == "usemulticast":
            return b.server.reply(m, ia=False, status=(D.USE_MULTICAST, "use multicast"), dns=False)
        return b.server.reply(m, ia_status=(D.NOT_ON_LINK, "not on link"))

    def always_noaddrsavail(m):
        return b.server.reply(m, ia_status=(D.NO_ADDRS_AVAIL, "no addresses"))

    b.server.on(D.REQUEST, always_noaddrsavail if how == "noaddrsavail" else first_bad)
    b.start()
    req = b.first(D.REQUEST, within=b.first_message_within + 2.5)
    if req is None:
        raise Deviation("no Request after the Advertise (preference 255)")
    sent = b.reply_sent_for(req, 1.0) or req.time
    code = {"unspecfail_request": "UnspecFail", "usemulticast": "UseMulticast", "notonlink_request": "NotOnLink",
            "noaddrsavail": "NoAddrsAvail"}[how]
    lead = f"Reply with {code} to the Request (xid {req.xid:#08x})"
    if how == "noaddrsavail":
        problems, seen = b.not_in_use(b.address, what=f"Echo Reply from {b.address}, which the Reply ({code}) did not lease")
        return t.conclude(seen, problems)
    within = D.EXCHANGES[D.REQUEST].irt * (1 + D.RAND) + b.tol + t.reply_timeout
    # from the instant the Reply left (no margin after it: a client that answers within a millisecond,
    # as the simulated ones do on a quiet machine, must be seen; the Request itself arrived before it)
    nxt = _next_from_client(b, sent, within + (1.0 if how == "notonlink_request" else 0.0))
    if how == "unspecfail_request":
        if nxt is None:
            return t.conclude(f"{lead}; no message within {within:.1f} s (the client waits)", [])
        gap = nxt.time - sent
        ok = gap >= 0.9 * D.EXCHANGES[D.REQUEST].irt - b.tol / 2
        seen = f"{lead}; next message {nxt.name} {gap:.2f} s later"
        if not ok:
            raise Deviation(f"{seen}: not rate-limited")
        return t.conclude(seen, [])
    if how == "usemulticast":
        if nxt is None or nxt.type != D.REQUEST:
            raise Deviation(f"{lead}; {'no Request' if nxt is None else nxt.name} within {within:.1f} s")
        ok = P.same_address(nxt.dst, D.ALL_DHCP_RELAY_AGENTS_AND_SERVERS)
        seen = f"{lead}; the Request was sent again {nxt.time - sent:.2f} s later to {nxt.dst}"
        if not ok:
            raise Deviation(seen)
        return t.conclude(seen, [])
    # NotOnLink to a Request
    if nxt is None:
        raise Deviation(f"{lead}; no Solicit or Request without the address within {within + 1:.1f} s")
    if nxt.type == D.REQUEST and any(P.same_address(a, b.address) for a in nxt.addresses()):
        raise Deviation(f"{lead}; the client asked for the same address again: {X.describe(nxt)}")
    if nxt.type not in (D.SOLICIT, D.REQUEST):
        raise Deviation(f"{lead}; then {X.describe(nxt)}")
    return t.conclude(f"{lead}; then a {nxt.name} {nxt.time - sent:.2f} s later without the address", [])


def _status_to_confirm(t: CheckContext, how: str):
    b = X.Bench(t, start=False)
    if how == "notonlink_confirm":
        b.server.on(D.CONFIRM, lambda m: b.server.reply(m, ia=False, status=(D.NOT_ON_LINK, "moved")))
    b.start()
    o = X.observe(t, D.CONFIRM, bench=b)
    sent = b.reply_sent_for(o.message, 1.0) or o.message.time
    if how == "success_confirm":
        t.wait(max(0.0, sent + 1 + D.EXCHANGES[D.SOLICIT].max_delay + b.tol - t.now()))
        sol = b.server.messages(D.SOLICIT, since=sent)
        if sol:
            raise Deviation(f"Reply with Success to the Confirm; the client solicited {sol[0].time - sent:.2f} s later")
        return _usable(t, b, b.address, "Reply with Success to the Confirm; no Solicit")
    b.server.on(D.SOLICIT, None)  # the lease must not come back
    within = D.EXCHANGES[D.SOLICIT].max_delay + b.tol + t.reply_timeout + 1
    solicit = b.first(D.SOLICIT, within=within, since=sent)
    if solicit is None:
        raise Deviation(f"Reply with NotOnLink to the Confirm; no Solicit within {within:.1f} s")
    problems, gone = b.not_in_use(b.address, what=f"Echo Reply from {b.address} after NotOnLink")
    seen = f"Reply with NotOnLink to the Confirm; Solicit {solicit.time - sent:.2f} s later; {gone}"
    if problems:
        raise Deviation(seen)
    return t.conclude(seen, [])


def _status_to_renew_or_rebind(t: CheckContext, how: str):
    rebind = how in ("nobinding_rebind", "missing_rebind")
    msg = D.REBIND if rebind else D.RENEW
    b = X.Bench(t, start=False, t1=1, t2=2 if rebind else 60, preferred=80, valid=90)
    if rebind:
        b.server.on(D.RENEW, None)
    answered: list[D.Message] = []

    def first_bad(m):
        if answered:
            return None  # later retransmissions: silence, the check judges their timing
        answered.append(m)
        if how.startswith("nobinding"):
            return b.server.reply(m, ia_status=(D.NO_BINDING, "no binding"))
        if how.startswith("missing"):
            return b.server.reply(m, ia=False)
        return b.server.reply(m, ia=False, status=(D.UNSPEC_FAIL, "try later"))

    b.server.on(msg, first_bad)
    b.start()
    o = X.observe(t, msg, bench=b)
    first = o.message
    sent = b.reply_sent_for(first, 1.0) or first.time
    code = "NoBinding in the IA" if how.startswith("nobinding") else "no IA" if how.startswith("missing") else \
        "UnspecFail"
    lead = f"Reply ({code}) to the {first.name} (xid {first.xid:#08x})"
    if how.startswith("nobinding"):
        within = t.reply_timeout + b.tol + 1
        req = b.first(D.REQUEST, within=within, since=sent)
        if req is None:
            nxt = _next_from_client(b, sent, 0.1)
            raise Deviation(f"{lead}; no Request within {within:.1f} s" + (f" (sent {nxt.name})" if nxt else ""))
        return t.conclude(f"{lead}; Request {req.time - sent:.2f} s later", [])
    ex = D.EXCHANGES[msg]
    within = ex.irt * (1 + D.RAND) + b.tol + t.reply_timeout
    nxt = b.first(msg, within=within, since=sent)  # no margin: see _status_to_request
    if nxt is None:
        raise Deviation(f"{lead}; no further {first.name} within {within:.1f} s")
    gap = nxt.time - sent
    ok = gap >= 0.9 - b.tol / 2
    seen = f"{lead}; next {nxt.name} {gap:.2f} s later"
    if not ok:
        raise Deviation(f"{seen}: not rate-limited")
    if how == "unspecfail_renew":
        return _usable(t, b, b.address, seen)
    return t.conclude(seen, [])


# -- invalid Advertise and Reply ------------------------------------------------------------------------------
INVALID = {
    "no_server_id": ("no Server Identifier option", dict(server_id=False)),
    "no_client_id": ("no Client Identifier option", dict(client_id=False)),
    "other_client_id": ("a Client Identifier that is not the client's DUID", "other_client"),
    "xid": ("a transaction ID that is not the client's", "xid"),
    "t1_gt_t2": ("an IA_NA with T1 (50) > T2 (40)", dict(t1=50, t2=40)),
    "pref_gt_valid": ("an IA Address with preferred lifetime (600) > valid lifetime (300)", "pref"),
}


def _invalid_kw(b: X.Bench, m: D.Message, what: str) -> dict:
    kw = INVALID[what][1]
    if kw == "other_client":
        return {"client_id": struct.pack("!HH", D.DUID_LL, 1) + bytes.fromhex("0276" + "deadbeef")}
    if kw == "xid":
        return {"xid": (m.xid + 0x5A5A5) & 0xFFFFFF}
    if kw == "pref":
        return {"addresses": [(b.address, 600, 300)]}
    return dict(kw)


@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.3.4", title="Reception of Invalid Advertise Message",
       rfc="RFC 8415 §16.3", capabilities=CAPS, needs=NEEDS, dut_config=CFG,
       fault="impostor_client_accepts_invalid_messages",
       expect="an invalid Advertise is discarded: no Request follows it, and the client goes on soliciting",
       parts=[Part("A", "No Server Identifier option", what="no_server_id"),
              Part("B", "No Client Identifier option", what="no_client_id"),
              Part("C", "Client Identifier that does not match the DUID of the client", what="other_client_id"),
              Part("D", "Transaction ID Mismatch", what="xid")])
def invalid_advertise_is_discarded(t: CheckContext):
    """"Clients MUST discard any received Advertise message that meets any
    of the following conditions: the message does not include a Server
    Identifier option; the message does not include a Client Identifier
    option; the contents of the Client Identifier option do not match the
    client's DUID; the transaction-id field value does not match the value
    the client used in its Solicit message" (RFC 8415 §16.3)."""
    b = X.Bench(t, start=False)
    b.server.on(D.SOLICIT, lambda m: b.server.advertise(m, **_invalid_kw(b, m, t.p.what)))
    b.start()
    first = b.first(D.SOLICIT)
    if first is None:
        raise Deviation(f"no Solicit within {b.first_message_within:g} s of an RA with M=1")
    window = D.EXCHANGES[D.SOLICIT].irt * (1 + D.RAND) * 3 + b.tol + t.reply_timeout
    t.wait(max(0.0, first.time + window - t.now()))
    reqs = b.server.messages(D.REQUEST)
    lead = f"every Solicit answered with an Advertise with {INVALID[t.p.what][0]}"
    if reqs:
        raise Deviation(f"{lead}; the client sent {X.describe(reqs[0])}")
    sols = [m for m in b.server.messages(D.SOLICIT) if m.xid == first.xid]
    if len(sols) < 2:
        raise Deviation(f"{lead}; no Request, but no Solicit retransmission either within {window:.1f} s")
    b.server.on(D.SOLICIT, lambda m: b.server.advertise(m))
    if b.first(D.REQUEST, within=window, since=sols[-1].time) is None:
        raise Deviation(f"{lead}; the client ignored them, but did not request after a valid Advertise either")
    return t.conclude(f"{lead}; no Request for {window:.1f} s ({len(sols)} Solicits), then a valid Advertise got one", [])


def _invalid_reply(t: CheckContext, mode: str, what: str):
    stateless = mode == X.STATELESS
    msg = D.INFORMATION_REQUEST if stateless else D.REQUEST
    b = X.Bench(t, mode=mode, start=False)
    b.server.on(msg, lambda m: b.server.reply(m, ia=not stateless, **_invalid_kw(b, m, what)))
    b.start()
    first = b.first(msg, within=b.first_message_within + (0 if stateless else 2.5))
    if first is None:
        raise Deviation(f"no {D.name_of(msg)} within {b.first_message_within:g} s")
    lead = f"Reply with {INVALID[what][0]} to the {first.name}"
    if what in ("t1_gt_t2", "pref_gt_valid"):
        problems, seen = b.not_in_use(b.address, what=f"Echo Reply from {b.address}, leased only by that invalid Reply")
        return t.conclude(seen, problems)
    within = D.EXCHANGES[msg].irt * (1 + D.RAND) + b.tol + t.reply_timeout
    again = b.first(msg, within=within, since=first.time + 0.01, where=lambda m: m.xid == first.xid)
    if again is None:
        raise Deviation(f"{lead}; no retransmission of the {first.name} within {within:.1f} s: the client took it")
    if not stateless and b.echo(b.address, within=0.5):
        raise Deviation(f"{lead}; retransmitted, but {b.address} answers: the address was configured")
    return t.conclude(f"{lead}; the {first.name} was retransmitted {again.time - first.time:.2f} s later", [])


@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.3.5", title="Reception of Invalid Reply Message",
       rfc="RFC 8415 §16.10, §21.4, §21.6", capabilities=CAPS, needs=NEEDS, dut_config=CFG,
       fault="impostor_client_accepts_invalid_messages",
       expect="an invalid Reply (or invalid IA) is discarded: the client retransmits its Request, and uses no "
              "address from it",
       parts=[Part("A", "No Server Identifier option", what="no_server_id"),
              Part("B", "Transaction ID Mismatch", what="xid"),
              Part("C", "Contains invalid IA_NA option T1 > T2", what="t1_gt_t2",
                   expect="an IA_NA with T1 > T2 (both non-zero) is discarded: its address is not used"),
              Part("D", "Contains invalid IA Address (preferred lifetime > valid lifetime)", what="pref_gt_valid",
                   expect="an IA Address with a preferred lifetime above its valid lifetime is discarded: the "
                          "address is not used")])
def invalid_reply_is_discarded(t: CheckContext):
    """"Clients MUST discard any received Reply message that meets any of
    the following conditions: the message does not include a Server
    Identifier option; the transaction-id field in the message does not
    match the value used in the original message" (RFC 8415 §16.10).  "If a
    client receives an IA_NA with T1 greater than T2 and both T1 and T2 are
    greater than 0, the client discards the IA_NA option" (§21.4); "A client
    discards any addresses for which the preferred lifetime is greater than
    the valid lifetime" (§21.6)."""
    return _invalid_reply(t, X.STATEFUL, t.p.what)


@check(area="dhcpv6", ipv6ready="DHCP_CONF.7.1.7", title="Reception of Invalid Reply Message (stateless)",
       rfc="RFC 8415 §16.10", capabilities=CAPS, needs=NEEDS, dut_config=CFG,
       fault="impostor_client_accepts_invalid_messages",
       expect="an invalid Reply to the Information-request is discarded: the client retransmits its "
              "Information-request with the same transaction ID",
       parts=[Part("A", "No Server Identifier option", what="no_server_id"),
              Part("B", "Transaction ID Mismatch", what="xid")])
def invalid_reply_to_information_request_is_discarded(t: CheckContext):
    """A Reply without a Server Identifier, or with a transaction ID that is
    not the Information-request's, MUST be discarded (RFC 8415 §16.10)."""
    return _invalid_reply(t, X.STATELESS, t.p.what)


# -- messages a client never accepts --------------------------------------------------------------------------------
def _stray(b: X.Bench, kind: int, duid: bytes | None) -> bytes:
    tn_duid = D.duid_ll(b.t.tn2.mac)
    if kind == D.RELAY_FORW:
        inner = D.message(D.SOLICIT, D.fresh_xid(), [D.opt(D.OPT_CLIENTID, tn_duid), D.opt(D.OPT_ELAPSED_TIME, b"\0\0")])
        return bytes([D.RELAY_FORW, 0]) + bytes(16) + ipaddress.IPv6Address(b.t.tn2.link_local).packed + \
            D.opt(D.OPT_RELAY_MSG, inner)
    if kind == D.RELAY_REPL:
        inner = b.server.build(D.ADVERTISE, D.Message(D.SOLICIT, D.fresh_xid(), [D.Option(D.OPT_CLIENTID, duid or b"")],
                                                      []))
        return bytes([D.RELAY_REPL, 0]) + bytes(16) + ipaddress.IPv6Address(b.t.dut.link_local).packed + \
            D.opt(D.OPT_RELAY_MSG, inner)
    opts = [D.opt(D.OPT_CLIENTID, tn_duid), D.opt(D.OPT_ELAPSED_TIME, b"\0\0")]
    if kind in (D.REQUEST, D.RENEW, D.RELEASE, D.DECLINE):
        opts.append(D.opt(D.OPT_SERVERID, duid or b.server.duid))
    if kind != D.INFORMATION_REQUEST:
        opts.append(D.ia_na_option(1, 0, 0, [(b.address, 0, 0)]))
    return D.message(kind, D.fresh_xid(), opts)


def _validation_parts():
    kinds = [("A", D.SOLICIT), ("B", D.REQUEST), ("C", D.CONFIRM), ("D", D.RENEW), ("E", D.REBIND),
             ("F", D.DECLINE), ("G", D.RELEASE), ("H", D.INFORMATION_REQUEST), ("I", D.RELAY_FORW),
             ("J", D.RELAY_REPL)]
    return [Part(letter, f"{D.name_of(k)} message (type {k})", kind=k,
                 expect=f"a {D.name_of(k)} sent to the client (UDP port 546) is discarded: no DHCPv6 message in "
                        "answer within the silence window, and the client still holds its configuration")
            for letter, k in kinds]


def _client_discards(t: CheckContext, mode: str):
    b = X.Bench(t, mode=mode, t1=300, t2=400, preferred=500, valid=600)
    if mode == X.STATEFUL:
        X.bound(b)
    else:
        first = b.first(D.INFORMATION_REQUEST)
        if first is None:
            raise Deviation(f"no Information-request within {b.first_message_within:g} s of an RA with M=0 O=1")
        t.wait(0.3)
    kind = t.p.kind
    payload = _stray(b, kind, b.server.messages()[0].client_duid if b.server.messages() else None)
    tn = t.tn2
    probe = t.to_dut(tn, t.dut.link_local) / UDP(sport=D.SERVER_PORT if kind == D.RELAY_REPL else D.CLIENT_PORT,
                                                 dport=D.CLIENT_PORT) / Raw(payload)
    since = t.now()
    out = t.expect_silence(probe, lambda p: UDP in p and (p[UDP].sport == D.CLIENT_PORT or
                                                           p[UDP].dport in (D.CLIENT_PORT, D.SERVER_PORT)),
                           what=f"DHCPv6 message in answer to a {D.name_of(kind)}", liveness="ns")
    stray = [m for m in b.server.messages(since=since)]
    if out.verdict == "PASS" and stray:
        raise Deviation(f"the client sent {X.describe(stray[0])} after the {D.name_of(kind)}")
    return out


@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.3.6", title="Client Message Validation",
       rfc="RFC 8415 §16.2, §16.4-§16.9, §16.12-§16.13", capabilities=CAPS, needs=NEEDS, dut_config=CFG,
       fault="impostor_client_answers_client_messages",
       expect="messages only servers and relays receive are discarded by the client", parts=_validation_parts())
def client_discards_messages_for_servers(t: CheckContext):
    """"Clients MUST discard any received Solicit / Request / Confirm /
    Renew / Rebind / Decline / Release / Information-request messages"
    (RFC 8415 §16.2, §16.4-§16.9) and relay messages (§16.12-§16.13: relay
    agents and servers only)."""
    return _client_discards(t, X.STATEFUL)


@check(area="dhcpv6", ipv6ready="DHCP_CONF.7.1.8", title="Client Message Validation (stateless)",
       rfc="RFC 8415 §16.2, §16.4-§16.9, §16.12-§16.13", capabilities=CAPS, needs=NEEDS, dut_config=CFG,
       fault="impostor_client_answers_client_messages",
       expect="messages only servers and relays receive are discarded by the stateless client",
       parts=_validation_parts())
def stateless_client_discards_messages_for_servers(t: CheckContext):
    """A stateless client discards every message type meant for servers and
    relay agents (RFC 8415 §16)."""
    return _client_discards(t, X.STATELESS)


@check(area="dhcpv6", title="Reconfigure without authentication is discarded", rfc="RFC 8415 §16.11, §18.2.11",
       capabilities=CAPS, needs=NEEDS, dut_config=CFG, fault="impostor_client_accepts_reconfigure",
       expect="a Reconfigure (Renew) from the client's server without an Authentication option is discarded: no "
              "Renew follows it",
       parts=[Part("no-auth", "Reconfigure without Authentication option")])
def reconfigure_without_authentication_is_discarded(t: CheckContext):
    """"Clients MUST discard any received Reconfigure message that meets any
    of the following conditions: ... the message does not include an
    Authentication option or the message fails authentication" (RFC 8415
    §16.11); a client acts on a Reconfigure only with the reconfigure key
    the server gave it (§20.4)."""
    b = X.Bench(t, t1=300, t2=400, preferred=500, valid=600)
    bnd = X.bound(b)
    payload = D.message(D.RECONFIGURE, 0, [D.opt(D.OPT_SERVERID, b.server.duid), D.opt(D.OPT_CLIENTID, bnd.duid),
                                           D.opt(D.OPT_RECONF_MSG, bytes([D.RENEW]))])
    probe = b.server.frame(payload, t.dut.link_local)
    since = t.now()
    out = t.expect_silence(probe, lambda p: D.is_client_message(p, (D.RENEW, D.REBIND, D.REQUEST,
                                                                     D.INFORMATION_REQUEST)),
                           what="Renew in answer to an unauthenticated Reconfigure",
                           within=t.silence + 1.0, liveness="ns")
    got = b.server.messages(D.RENEW, since=since)
    if out.verdict == "PASS" and got:
        raise Deviation(f"Reconfigure without authentication; the client sent {X.describe(got[0])}")
    return out


# -- Rapid Commit and the RA flags -----------------------------------------------------------------------------------
@check(area="dhcpv6", title="Rapid Commit is honoured when the client offers it", rfc="RFC 8415 §18.2.1, §21.14",
       capabilities=CAPS, needs=NEEDS, dut_config="dhcp6-client-rapid-commit",
       fault="impostor_client_ignores_rapid_commit_reply",
       expect="when the client's Solicit carries Rapid Commit, a Reply with Rapid Commit and a lease ends the "
              "exchange: no Request follows, and the address is used",
       parts=[Part("rapid-commit", "Reply with Rapid Commit to a Solicit with Rapid Commit")])
def rapid_commit_reply_is_accepted(t: CheckContext):
    """"If the client has included a Rapid Commit option in the Solicit
    message and is waiting for a Reply, the client terminates the
    retransmission process as soon as a Reply message with a Rapid Commit
    option is received" and processes it as a Reply to a Request (RFC 8415
    §18.2.1, §18.2.10, §21.14)."""
    b = X.Bench(t, start=False)

    def rapid(m):
        if m.opt(D.OPT_RAPID_COMMIT) is None:
            return b.server.advertise(m)
        return b.server.reply(m, extra=[D.opt(D.OPT_RAPID_COMMIT)])

    b.server.on(D.SOLICIT, rapid)
    b.start()
    sol = b.first(D.SOLICIT)
    if sol is None:
        raise Deviation(f"no Solicit within {b.first_message_within:g} s of an RA with M=1")
    if sol.opt(D.OPT_RAPID_COMMIT) is None:
        raise NotApplicable("the DUT's Solicit carries no Rapid Commit option (it does not offer it)")
    ok = b.wait_usable(b.address)
    t.wait(0.5)
    reqs = b.server.messages(D.REQUEST)
    if reqs:
        raise Deviation(f"Reply with Rapid Commit to the Solicit; the client sent a Request anyway: {X.describe(reqs[0])}")
    if not ok:
        raise Deviation(f"Reply with Rapid Commit to the Solicit; no Request; {b.address} does not answer")
    return t.conclude(f"Reply with Rapid Commit to the Solicit; no Request; {b.address} answers", [])


@check(area="dhcpv6", title="The RA's M and O flags start DHCPv6", rfc="RFC 4861 §4.2; RFC 8415 §18",
       capabilities=CAPS, needs=NEEDS, dut_config=CFG, fault="impostor_client_swaps_ra_flags",
       expect="an RA with M=1 starts stateful DHCPv6 (Solicit); one with M=0 and O=1 starts stateless DHCPv6 "
              "(Information-request, no Solicit)",
       parts=[Part("M", "M=1: stateful (Solicit)", mode=X.STATEFUL),
              Part("O", "M=0, O=1: stateless (Information-request)", mode=X.STATELESS)])
def ra_flags_start_dhcpv6(t: CheckContext):
    """"M: 1-bit 'Managed address configuration' flag. When set, it indicates
    that addresses are available via Dynamic Host Configuration Protocol";
    "O: ... When set, it indicates that other configuration information is
    available via DHCPv6" (RFC 4861 §4.2).  A host uses the stateful exchange
    (Solicit) for addresses and the stateless one (Information-request, RFC
    8415 §18.2.6) for other configuration only."""
    b = X.Bench(t, mode=t.p.mode)
    want, other = (D.SOLICIT, D.INFORMATION_REQUEST) if t.p.mode == X.STATEFUL else (D.INFORMATION_REQUEST, D.SOLICIT)
    got = b.first(want)
    wrong = b.server.messages(other)
    flags = "M=1 O=1" if t.p.mode == X.STATEFUL else "M=0 O=1"
    if wrong:
        raise Deviation(f"RA with {flags}; the client sent {X.describe(wrong[0])}")
    if got is None:
        raise Deviation(f"RA with {flags}; no {D.name_of(want)} within {b.first_message_within:g} s")
    return t.conclude(f"RA with {flags}; {D.name_of(want)} {got.time - b.started_at:.2f} s later, no {D.name_of(other)}", [])
