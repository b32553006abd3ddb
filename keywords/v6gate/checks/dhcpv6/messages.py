"""DHCPv6 client (RFC 8415): what the client's messages look like —
constants, message format, identifiers (DUID, IAID), IA_NA / IA Address,
Elapsed Time, Option Request — IPv6 Ready DHCP_CONF.1.1.x, the format parts
of 1.2.x, 4.1.1-4.1.8 and 10, 7.1.2-7.1.4 and 9.

Each check drives the DUT (``scenario.dhcpv6.observe``) until it sends the message
in question, with the tester as the link's only router (RA with M/O) and
as the server, then judges the message against RFC 8415 §18.2.x, §21 and
Appendix B (and RFC 3646 §5 for the DNS options).
"""

from __future__ import annotations

from ...core.check import Part, check
from ...core.context import CheckContext, NotApplicable
from ...core.verdict import Deviation
from ...net import dhcpv6 as D
from ...net import packets as P
from ...scenario import dhcpv6 as X

CAPS = ["DHCPv6-Client"]
MALFORMED = "impostor_client_sends_malformed_messages"


# -- message format, one check per message type -------------------------------------------------------------
FORMAT = {
    # msg type: (RFC clause, what the message must be)
    D.SOLICIT: ("RFC 8415 §18.2.1, §7.1, §21.9",
                "a Solicit to ff02::1:2 port 547 from a link-local address with a Client Identifier (a valid DUID), "
                "an IA_NA, an Elapsed Time of 0, an Option Request option asking for SOL_MAX_RT, no Server "
                "Identifier and no server-only option"),
    D.REQUEST: ("RFC 8415 §18.2.2",
                "a Request to ff02::1:2 port 547 with the Client Identifier, the advertising server's Server "
                "Identifier, an IA_NA, an Elapsed Time of 0 and an Option Request option asking for SOL_MAX_RT"),
    D.CONFIRM: ("RFC 8415 §18.2.3",
                "after a reboot, a Confirm to ff02::1:2 with the Client Identifier, no Server Identifier, the "
                "IA_NA with the address it holds and an Elapsed Time of 0"),
    D.RENEW: ("RFC 8415 §18.2.4",
              "at T1, a Renew with the Client Identifier, the Server Identifier of the server that leased the "
              "address, the IA_NA with that address, an Elapsed Time of 0 and an Option Request option"),
    D.REBIND: ("RFC 8415 §18.2.5",
               "at T2, a Rebind to ff02::1:2 with the Client Identifier, no Server Identifier, the IA_NA with "
               "the address, an Elapsed Time of 0 and an Option Request option"),
    D.RELEASE: ("RFC 8415 §18.2.7",
                "a Release with the Client Identifier, the Server Identifier, the IA_NA with the address "
                "released and an Elapsed Time of 0"),
    D.DECLINE: ("RFC 8415 §18.2.8",
                "after its Duplicate Address Detection fails, a Decline with the Client Identifier, the Server "
                "Identifier, the IA_NA with the declined address and an Elapsed Time of 0"),
    D.INFORMATION_REQUEST: ("RFC 8415 §18.2.6, §7.1, §21.9",
                            "after an RA with M=0 O=1, an Information-request to ff02::1:2 port 547 with a Client "
                            "Identifier, no IA option, an Elapsed Time of 0 and an Option Request option asking for "
                            "INF_MAX_RT and the Information Refresh Time"),
}


def _judge_format(t: CheckContext, msg_type: int):
    o = X.observe(t, msg_type)
    m = o.message
    held = [o.bench.address] if msg_type in (D.CONFIRM, D.RENEW, D.REBIND, D.RELEASE, D.DECLINE) else None
    server = o.bench.server.duid if msg_type in (D.REQUEST, D.RENEW, D.RELEASE, D.DECLINE) else None
    client = o.binding.duid if o.binding else None
    return t.conclude(X.describe(m), X.judge_message(m, mode=o.bench.mode, server_duid=server, client_duid=client,
                                                     addresses=held))


def _format_check(func_name: str, ipv6ready: str, title: str, msg_type: int, part: str | None = None,
                  needs=X.NEEDS):
    rfc, expect = FORMAT[msg_type]

    def run(t: CheckContext):
        return _judge_format(t, msg_type)

    run.__name__ = func_name
    run.__doc__ = (f"The {D.name_of(msg_type)} carries what {rfc.split(',')[0]} requires (MUST), nothing a "
                   "client may not send (Appendix B), and every option with its exact length.")
    parts = [Part(part, title)] if part else None
    return check(area="dhcpv6", ipv6ready=ipv6ready, title=title if not part else f"{title} ({D.name_of(msg_type)})",
                 rfc=rfc, expect=expect, capabilities=CAPS, needs=needs, fault=MALFORMED, parts=parts,
                 dut_config=X.DUT_CONFIG)(run)


client_message_is_well_formed = _format_check("client_message_is_well_formed", "DHCP_CONF.1.1.3",
                                              "Client Message Format", D.SOLICIT)
solicit_is_well_formed = _format_check("solicit_is_well_formed", "DHCP_CONF.1.2.1", "Solicit message format",
                                       D.SOLICIT, "A")
request_is_well_formed = _format_check("request_is_well_formed", "DHCP_CONF.1.2.3", "Request message format",
                                       D.REQUEST, "A")
confirm_is_well_formed = _format_check("confirm_is_well_formed", "DHCP_CONF.1.2.4", "Confirm message format",
                                       D.CONFIRM, "A")
renew_is_well_formed = _format_check("renew_is_well_formed", "DHCP_CONF.1.2.5", "Renew message format",
                                     D.RENEW, "A")
rebind_is_well_formed = _format_check("rebind_is_well_formed", "DHCP_CONF.1.2.6", "Rebind message format",
                                      D.REBIND, "A")
release_is_well_formed = _format_check("release_is_well_formed", "DHCP_CONF.1.2.7", "Release message format",
                                       D.RELEASE, "A")
decline_is_well_formed = _format_check("decline_is_well_formed", "DHCP_CONF.1.2.8", "Decline message format",
                                       D.DECLINE, "A")
information_request_is_well_formed = _format_check(
    "information_request_is_well_formed", "DHCP_CONF.7.1.3", "Client Message Format (Information-request)",
    D.INFORMATION_REQUEST)


@check(
    area="dhcpv6",
    ipv6ready="DHCP_CONF.1.2.4",
    title="Transmission of Confirm Messages",
    rfc="RFC 8415 §18.2.3, §21.4, §21.6",
    capabilities=CAPS,
    needs=X.NEEDS,
    dut_config=X.DUT_CONFIG,
    fault="impostor_client_confirms_without_addresses",
    expect="the Confirm after a reboot carries, in the IA_NA it held (same IAID), every address leased to it "
           "(T1, T2 and the lifetimes SHOULD be 0: reported, not judged)",
    parts=[Part("E", "Reserved address information in the Confirm")],
)
def confirm_carries_the_addresses_held(t: CheckContext):
    """"The client includes IA options for all the IAs assigned to the
    interface for which the Confirm message is being sent.  The IA options
    include all of the addresses the client currently has associated with
    those IAs.  The client SHOULD set the T1 and T2 fields in any IA_NA
    options and the preferred-lifetime and valid-lifetime fields in the IA
    Address options to 0, as the server will ignore these fields"
    (RFC 8415 §18.2.3)."""
    o = X.observe(t, D.CONFIRM)
    m = o.message
    problems = []
    held = m.addresses()
    if not any(P.same_address(a, o.bench.address) for a in held):
        problems.append(f"the Confirm's IA_NA does not carry the leased address {o.bench.address}")
    if o.binding and not any(ia.iaid == o.binding.iaid for ia in m.ia_nas):
        problems.append(f"no IA_NA with the IAID {o.binding.iaid:#010x} the address was leased to")
    notes = [f"IA_NA {ia.iaid:#010x} has T1 {ia.t1} T2 {ia.t2} (SHOULD be 0)" for ia in m.ia_nas if ia.t1 or ia.t2]
    notes += [f"IA Address {a.address} has lifetimes {a.preferred}/{a.valid} (SHOULD be 0)"
              for ia in m.ia_nas for a in ia.addresses if a.preferred or a.valid]
    return t.conclude("".join(n + "; " for n in notes) + X.describe(m), problems)


# -- constants: addresses and ports ------------------------------------------------------------------------
def _constants(t: CheckContext, msg_type: int, part: str):
    if part == "invalid_port":
        return _answer_to_wrong_port_is_ignored(t, msg_type)
    o = X.observe(t, msg_type)
    m = o.message
    if part == "multicast":
        ok = P.same_address(m.dst, D.ALL_DHCP_RELAY_AGENTS_AND_SERVERS)
        seen = f"{m.name} sent to {m.dst} (Ethernet {m.frame.pkt.dst})"
        if not ok:
            raise Deviation(f"{seen}, not to All_DHCP_Relay_Agents_and_Servers ff02::1:2")
        return t.conclude(seen, [])
    seen = f"{m.name} from UDP port {m.sport} to port {m.dport}"
    ok = m.dport == D.SERVER_PORT and m.sport == D.CLIENT_PORT
    if not ok:
        raise Deviation(f"{seen}, not from {D.CLIENT_PORT} to {D.SERVER_PORT}")
    return t.conclude(seen, [])


WRONG_PORT = 33546


def _answer_to_wrong_port_is_ignored(t: CheckContext, msg_type: int):
    """Every answer goes to UDP port 33546: the client must go on retransmitting
    (and, stateful, send no Request); then a correct answer ends the exchange."""
    b = X.Bench(t, mode=X.STATEFUL if msg_type == D.SOLICIT else X.STATELESS, start=False)
    answer = D.ADVERTISE if msg_type == D.SOLICIT else D.REPLY

    def to_wrong_port(m):
        b.server.send(b.server.build(answer, m), m, dport=WRONG_PORT)
        return None

    b.server.on(msg_type, to_wrong_port)
    b.start()
    first = b.first(msg_type)
    if first is None:
        raise Deviation(f"no {D.name_of(msg_type)} within {b.first_message_within:g} s of the RA")
    t.note(f"every {D.name_of(answer)} goes to UDP port {WRONG_PORT} instead of {D.CLIENT_PORT}")
    window = D.EXCHANGES[msg_type].irt * (1 + D.RAND) * 2 + b.tol + t.reply_timeout
    retrans = b.first(msg_type, within=window, since=first.time + 0.01, where=lambda x: x.xid == first.xid)
    if msg_type == D.SOLICIT:
        req = b.server.messages(D.REQUEST)
        if req:
            raise Deviation(f"{X.describe(req[0])}: the client acted on an Advertise sent to UDP port {WRONG_PORT}")
    if retrans is None:
        raise Deviation(f"no retransmission of the {first.name} (xid {first.xid:#08x}) within {window:.1f} s although "
                         f"its answer went to UDP port {WRONG_PORT}: the client accepted it or gave up")
    # liveness of the exchange itself: the same answer on the right port ends it
    b.server.on(msg_type, lambda m: b.server.build(answer, m))
    nxt = D.REQUEST if msg_type == D.SOLICIT else None
    seen = (f"the {D.name_of(answer)} sent to UDP port {WRONG_PORT} was ignored: the {first.name} "
            f"(xid {first.xid:#08x}) was retransmitted {retrans.time - first.time:.2f} s later")
    if nxt is not None:
        if b.server.messages(D.REQUEST):
            raise Deviation(f"a Request followed an Advertise sent to UDP port {WRONG_PORT}")
        got = b.first(nxt, within=window * 2, since=retrans.time)
        if got is None:
            raise Deviation(f"{seen}, but no Request followed a correct Advertise either: the client seems stuck")
        seen += "; a correct Advertise then got a Request"
    return t.conclude(seen, [])


_CONSTANT_PARTS = lambda first: [  # noqa: E731
    Part("A", "Multicast Address", how="multicast", fault="impostor_client_sends_to_wrong_group",
         expect=f"the {first} is sent to All_DHCP_Relay_Agents_and_Servers (ff02::1:2)"),
    Part("B", "Valid UDP port", how="ports", fault="impostor_client_uses_wrong_ports",
         expect=f"the {first} is sent from UDP port 546 to UDP port 547"),
    Part("C", "Invalid UDP port", how="invalid_port", fault="impostor_client_accepts_any_port",
         expect=f"an answer to the {first} sent to a UDP port other than 546 is ignored: the client retransmits "
                f"the {first} with the same transaction ID" + (" and sends no Request" if first == "Solicit" else "")),
]


@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.1.2", title="Implementation of DHCP Constants",
       rfc="RFC 8415 §7.1, §7.2", capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG,
       expect="DHCPv6 constants used as RFC 8415 §7 defines them", parts=_CONSTANT_PARTS("Solicit"))
def solicit_uses_the_dhcp_multicast_address_and_ports(t: CheckContext):
    """"Clients listen for DHCP messages on UDP port 546.  Servers and relay
    agents listen for DHCP messages on UDP port 547" (§7.2); a client uses
    All_DHCP_Relay_Agents_and_Servers (ff02::1:2) to reach the servers on its
    link (§7.1)."""
    return _constants(t, D.SOLICIT, t.p.how)


@check(area="dhcpv6", ipv6ready="DHCP_CONF.7.1.2", title="Implementation of DHCP Constants (stateless)",
       rfc="RFC 8415 §7.1, §7.2", capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG,
       expect="DHCPv6 constants used as RFC 8415 §7 defines them", parts=_CONSTANT_PARTS("Information-request"))
def information_request_uses_the_dhcp_multicast_address_and_ports(t: CheckContext):
    """The stateless client reaches the servers through ff02::1:2, port 547,
    and listens on port 546 only (RFC 8415 §7.1, §7.2)."""
    return _constants(t, D.INFORMATION_REQUEST, t.p.how)


# -- identifiers ---------------------------------------------------------------------------------------------
@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.1.4", title="Client Identifier Option Format",
       rfc="RFC 8415 §21.2, §11", capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG,
       fault="impostor_client_sends_malformed_duid",
       expect="exactly one Client Identifier option (code 1) holding a well-formed DUID, the same in the Solicit "
              "and in the Request")
def client_identifier_is_well_formed(t: CheckContext):
    """The Client Identifier option carries the client's DUID; its length is
    the DUID's (RFC 8415 §21.2), and the DUID has one of the formats of §11.
    A client identifies itself with the same DUID in every message."""
    o = X.observe(t, D.REQUEST)
    req = o.message
    sol = o.bench.server.messages(D.SOLICIT)[0] if o.bench.server.messages(D.SOLICIT) else None
    problems = []
    for m in filter(None, [sol, req]):
        ids = m.all(D.OPT_CLIENTID)
        if len(ids) != 1:
            problems.append(f"the {m.name} has {len(ids)} Client Identifier options, not 1")
            continue
        problems += [f"{m.name}: {p}" for p in D.parse_duid(ids[0].data).problems]
    if sol and req.client_duid and sol.client_duid and sol.client_duid != req.client_duid:
        problems.append(f"the Request's DUID {req.client_duid.hex(':')} is not the Solicit's {sol.client_duid.hex(':')}")
    return t.conclude(X.describe(req), problems)


def _duid_check(func_name: str, ipv6ready: str, key: str, mode: str, letters: tuple[str, str]):
    dtype = D.DUID_KEYS[key]
    name = D.DUID_NAMES[dtype]
    msg_type = D.SOLICIT if mode == X.STATEFUL else D.INFORMATION_REQUEST
    layout = {"llt": "type 1, hardware type, time (seconds since 2000-01-01 UTC) and a link-layer address of the "
                     "hardware type's length",
              "en": "type 2, a 32-bit enterprise number and a variable identifier",
              "ll": "type 3, hardware type and a link-layer address of the hardware type's length"}[key]

    def run(t: CheckContext):
        X.require_duid_type(t, key)
        o = X.observe(t, msg_type)
        m = o.message
        if m.client_duid is None:
            raise Deviation(f"{X.describe(m)}: no Client Identifier option, so no DUID to judge")
        duid = D.parse_duid(m.client_duid)
        if duid.type != dtype:
            declared = X.settings(t.target).duid_types
            if declared is None:
                raise NotApplicable(f"the DUT uses a {duid.name} ({duid.raw.hex(':')}); declare "
                                    f"extensions.dhcpv6.duid_types in the target file to exercise {name}")
            raise Deviation(f"the target declares {name}, but the DUT sends a {duid.name} ({duid.describe()})")
        if t.p.what == "format":
            if duid.problems:
                raise Deviation(f"{duid.describe()}: {'; '.join(duid.problems)}")
            return t.conclude(f"{duid.describe()} is well formed", [])
        before = m.client_duid
        since = o.bench.restart()
        if msg_type == D.INFORMATION_REQUEST:
            again = o.bench.first(msg_type, since=since, within=float(t.timing["ready_timeout_s"]) + 2 * t.reply_timeout)
        else:
            again = _first_after_restart(o.bench, since)
        if again is None:
            raise Deviation(f"no DHCPv6 message within {float(t.timing['ready_timeout_s']) + 2 * t.reply_timeout:g} s "
                             "of the DUT's restart")
        if again.client_duid != before:
            now = D.parse_duid(again.client_duid).describe() if again.client_duid else "no Client Identifier"
            raise Deviation(f"before the restart {duid.describe()}; after it, the {again.name} carries {now}")
        return t.conclude(f"{duid.describe()} in the {m.name} before the restart and in the {again.name} after it", [])

    run.__name__ = func_name
    run.__doc__ = (f"A {name} is {layout} (RFC 8415 §11).  A DUID is stable: the client uses the same one after a "
                   "restart (§11: it 'should not change over time'; a DUID-LLT 'MUST' be kept in stable storage, "
                   "§11.2).")
    return check(
        area="dhcpv6", ipv6ready=ipv6ready, title="Client DHCP Unique Identifier Contents",
        rfc="RFC 8415 §11, §11.2-§11.4", capabilities=CAPS, needs=X.NEEDS,
        dut_config={"llt": "dhcp6-client", "en": "dhcp6-client-duid-en", "ll": "dhcp6-client-duid-ll"}[key],
        expect=f"the Client Identifier holds a well-formed {name}",
        parts=[Part(letters[0], f"{name} Format", what="format", fault="impostor_client_sends_malformed_duid",
                    expect=f"the {D.name_of(msg_type)}'s Client Identifier holds a {name}: {layout}"),
               Part(letters[1], f"{name} Consistency", what="consistency",
                    fault=f"impostor_client_changes_duid_{key}_on_restart",
                    expect=f"after a restart the client identifies itself with the same {name}")],
    )(run)


def _first_after_restart(bench, since: float):
    """The first Solicit or Confirm after a restart: a restarted client starts
    an exchange with one of them (a Confirm when it holds a lease); a Request
    or Renew seen then may still be the client from before the restart."""
    within = float(bench.t.timing["ready_timeout_s"]) + 2 * bench.t.reply_timeout
    got = bench.server.wait(None, within, since, where=lambda m: m.type in (D.SOLICIT, D.CONFIRM))
    return got[0] if got else None


for _sect, _ipr, _mode in (("", "DHCP_CONF.1.1.5", X.STATEFUL), ("_with_dns_options", "DHCP_CONF.4.1.10", X.STATEFUL),
                           ("_stateless", "DHCP_CONF.7.1.9", X.STATELESS)):
    for _key, _letters in (("llt", ("A", "B")), ("en", ("C", "D")), ("ll", ("E", "F"))):
        _fn = f"duid_{_key}_is_well_formed_and_stable{_sect}"
        globals()[_fn] = _duid_check(_fn, _ipr, _key, _mode, _letters)


@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.1.6", title="IA_NA Option Format", rfc="RFC 8415 §21.4",
       capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG, fault="impostor_client_sends_malformed_ia_na",
       expect="the Solicit carries an IA_NA option (code 3) of at least 12 octets: an IAID, T1 and T2 (not T1 > T2; "
              "SHOULD be 0 in a client's message, reported) and only well-formed IA Address options")
def ia_na_is_well_formed(t: CheckContext):
    """IA_NA: IAID (4 octets), T1, T2 (4 octets each), then IA_NA options.
    "In a message sent by a client to a server, the T1 and T2 fields SHOULD
    be set to 0" (RFC 8415 §21.4)."""
    o = X.observe(t, D.SOLICIT)
    m = o.message
    problems = [p for p in m.problems if "IA_NA" in p or "IA Address" in p]
    ias = m.all(D.OPT_IA_NA)
    if not ias:
        problems.append("no IA_NA option")
    notes = []
    for ia in m.ia_nas:
        if ia.t1 and ia.t2 and ia.t1 > ia.t2:
            problems.append(f"IA_NA {ia.iaid:#010x} has T1 {ia.t1} > T2 {ia.t2}")
        elif ia.t1 or ia.t2:
            notes.append(f"IA_NA {ia.iaid:#010x} has T1 {ia.t1} and T2 {ia.t2} (SHOULD be 0)")
        for a in ia.addresses:
            if a.preferred > a.valid:
                problems.append(f"IA Address hint {a.address} has preferred {a.preferred} > valid {a.valid}")
    return t.conclude("".join(n + "; " for n in notes) + X.describe(m), problems)


@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.1.7", title="Identity Association Consistency",
       rfc="RFC 8415 §12.1", capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG,
       fault="impostor_client_changes_iaid_on_restart",
       expect="the IAID of the IA_NA is the same in the Solicit and the Request, and after a restart the client "
              "uses the same IAID for the interface")
def iaid_is_consistent_across_restarts(t: CheckContext):
    """"The IAID uniquely identifies the IA and MUST be chosen to be unique
    among the IAIDs for that IA type on the client ... The IAID MUST be
    consistent across restarts of the DHCP client" (RFC 8415 §12.1)."""
    o = X.observe(t, D.REQUEST)
    b = o.bench
    sol = b.server.messages(D.SOLICIT)
    iaids = {m.name: [ia.iaid for ia in m.ia_nas] for m in [*sol[:1], o.message]}
    if not all(iaids.values()) or len({tuple(v) for v in iaids.values()}) != 1:
        raise Deviation(f"IAIDs differ within one exchange: {iaids}")
    if not b.wait_usable(b.address):
        raise Deviation(f"the DUT does not answer on the leased address {b.address} after the Reply")
    since = b.restart()
    again = _first_after_restart(b, since)
    if again is None:
        raise Deviation("no DHCPv6 message after the DUT's restart")
    after = [ia.iaid for ia in again.ia_nas]
    before = iaids["Request"]
    ok = after == before
    seen = f"IAID {', '.join(f'{i:#010x}' for i in before)} before the restart, {', '.join(f'{i:#010x}' for i in after) or 'no IA_NA'} in the {again.name} after it"
    if not ok:
        raise Deviation(seen)
    return t.conclude(seen, [])


@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.1.8", title="Server Identifier Option Format",
       rfc="RFC 8415 §18.2.2, §21.3", capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG,
       fault="impostor_client_mangles_server_id",
       expect="the Request carries one Server Identifier option (code 2) holding, octet for octet, the DUID of "
              "the server whose Advertise the client chose")
def request_names_the_advertising_server(t: CheckContext):
    """"The client MUST include a Server Identifier option (see Section
    21.3) with the identifier from the Advertise message" (RFC 8415 §18.2.2)."""
    o = X.observe(t, D.REQUEST)
    m = o.message
    ids = m.all(D.OPT_SERVERID)
    want = o.bench.server.duid
    if len(ids) != 1:
        raise Deviation(f"{X.describe(m)}: {len(ids)} Server Identifier options, not 1")
    if ids[0].data != want:
        raise Deviation(f"Server Identifier {ids[0].data.hex(':')}, not the server's DUID {want.hex(':')}")
    return t.conclude(f"Server Identifier {ids[0].data.hex(':')} is the advertising server's DUID", [])


@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.1.9", title="IA Address Option Format",
       rfc="RFC 8415 §21.6, §18.2.4", capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG,
       fault="impostor_client_sends_malformed_ia_na",
       expect="the Renew's IA_NA carries an IA Address option (code 5, 24 octets plus options) for the leased "
              "address (lifetimes SHOULD be 0 in a client's message: reported, not judged)")
def ia_address_is_well_formed(t: CheckContext):
    """IA Address: the IPv6 address, preferred and valid lifetimes (RFC 8415
    §21.6); the Renew carries "an IA option with all addresses currently
    assigned to the IA" (§18.2.4); "In a message sent by a client to a
    server, the preferred-lifetime and valid-lifetime fields SHOULD be set to
    0" (§21.6)."""
    o = X.observe(t, D.RENEW)
    m = o.message
    problems = [p for p in m.problems if "IA" in p]
    addrs = [a for ia in m.ia_nas for a in ia.addresses]
    if not any(P.same_address(a.address, o.bench.address) for a in addrs):
        problems.append(f"no IA Address option for the leased address {o.bench.address}")
    notes = [f"IA Address {a.address} has lifetimes {a.preferred}/{a.valid} (SHOULD be 0; the server ignores them)"
             for a in addrs if a.preferred or a.valid]
    return t.conclude("".join(n + "; " for n in notes) + X.describe(m), problems)


# -- Elapsed Time -------------------------------------------------------------------------------------------
@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.1.10", title="Elapsed Time Option Format", rfc="RFC 8415 §21.9",
       capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG, fault="impostor_client_omits_elapsed_time",
       expect="one Elapsed Time option (code 8, 2 octets) set to 0 in the first message of the exchange",
       parts=[Part("A", "Elapsed Time Option in Solicit message", msg=D.SOLICIT),
              Part("B", "Elapsed Time Option in Request message", msg=D.REQUEST),
              Part("C", "Elapsed Time Option in Confirm message", msg=D.CONFIRM),
              Part("D", "Elapsed Time Option in Renew message", msg=D.RENEW),
              Part("E", "Elapsed Time Option in Rebind message", msg=D.REBIND),
              Part("F", "Elapsed Time Option in Release message", msg=D.RELEASE),
              Part("G", "Elapsed Time Option in Decline message", msg=D.DECLINE),
              Part("H", "Elapsed Time Option in a retransmitted Solicit", msg="retransmission",
                   fault="impostor_client_freezes_elapsed_time",
                   expect="in each retransmission of the Solicit, the Elapsed Time is the time since the first "
                          "transmission, in hundredths of a second")])
def elapsed_time_is_reported(t: CheckContext):
    """"A client MUST include an Elapsed Time option in messages to indicate
    how long the client has been trying to complete a DHCP message exchange.
    The elapsed time is measured from the time at which the client sent the
    first message in the message exchange, and the elapsed-time field is set
    to 0 in the first message in the message exchange" (RFC 8415 §21.9);
    the value is in hundredths of a second."""
    if t.p.msg == "retransmission":
        b = X.Bench(t)
        b.server.on(D.SOLICIT, None)
        sols = b.wait(D.SOLICIT, b.first_message_within + 1.1 + 2.2 + 2 * b.tol, count=3)
        sols = [m for m in sols if m.xid == sols[0].xid] if sols else []
        if len(sols) < 3:
            raise Deviation(f"{len(sols)} Solicit(s) with one transaction ID within "
                             f"{b.first_message_within + 3.3 + 2 * b.tol:.1f} s; three needed")
        problems, seen = [], []
        for m in sols:
            real = (m.time - sols[0].time) * 100
            seen.append(f"{m.elapsed / 100 if m.elapsed is not None else 'none'} s at +{real / 100:.2f} s")
            if m.elapsed is None:
                problems.append("a retransmission has no Elapsed Time option")
            elif abs(m.elapsed - real) > 100 * b.tol + 0.05 * real:
                problems.append(f"Elapsed Time {m.elapsed / 100:.2f} s when {real / 100:.2f} s had elapsed")
        text = "Elapsed Time " + ", ".join(seen)
        return t.conclude(text, problems)
    o = X.observe(t, t.p.msg)
    m = o.message
    ets = m.all(D.OPT_ELAPSED_TIME)
    if len(ets) != 1:
        raise Deviation(f"{X.describe(m)}: {len(ets)} Elapsed Time options, not 1")
    if len(ets[0].data) != 2:
        raise Deviation(f"{X.describe(m)}: the Elapsed Time option is {len(ets[0].data)} octets, not 2")
    seen = f"the first {m.name} carries Elapsed Time {m.elapsed / 100:.2f} s"
    if m.elapsed != 0:
        raise Deviation(f"{seen}, not 0")
    return t.conclude(seen, [])


# -- Option Request option for the DNS configuration (RFC 3646 with RFC 8415 §21.7) --------------------------
def _oro(t: CheckContext, msg_type: int, want: int, *, must_carry: bool):
    o = X.observe(t, msg_type)
    m = o.message
    problems = [p for p in X.judge_message(m, mode=o.bench.mode) if "Option Request" in p or "RFC 3646" in p
                or "octets" in p]
    oro = m.oro
    name = D.OPTION_NAMES[want]
    if must_carry:
        if oro is None:
            problems.append(f"no Option Request option (RFC 8415 §21.7: MUST in a {m.name})")
        elif want not in oro:
            problems.append(f"the Option Request option ({oro}) does not ask for the {name} option ({want})")
    else:
        if m.opt(want) is not None:
            problems.append(f"carries a {name} option (RFC 3646 §5: only in Solicit, Advertise, Request, Renew, "
                            "Rebind, Information-request and Reply)")
    return t.conclude(X.describe(m), problems)


def _oro_parts(msg_name: str, must_carry: bool, fault: str):
    what = "asks for it in its Option Request option" if must_carry else "does not carry it"
    return [Part("A", f"{msg_name} message format with Option Request Option (DNS Recursive Name Server option)",
                 want=D.OPT_DNS_SERVERS, fault=fault,
                 expect=f"the {msg_name} {what}: DNS Recursive Name Server (option 23)"),
            Part("B", f"{msg_name} message format with Option Request Option (Domain Search List option)",
                 want=D.OPT_DOMAIN_LIST, fault=fault,
                 expect=f"the {msg_name} {what}: Domain Search List (option 24)")]


def _oro_check(func_name: str, ipv6ready: str, title: str, msg_type: int, must_carry: bool, parts=None,
               mode_doc: str = ""):
    fault = "impostor_client_omits_dns_from_oro" if must_carry else "impostor_client_sends_dns_options_everywhere"

    def run(t: CheckContext):
        return _oro(t, msg_type, t.p.want, must_carry=must_carry)

    run.__name__ = func_name
    if must_carry:
        run.__doc__ = ("A client that wants the DNS configuration asks for it: \"The client MUST include an Option "
                       "Request option ... to request ... any other options the client is interested in receiving\" "
                       f"(RFC 8415 §18.2, §21.7) in its {D.name_of(msg_type)}; the option codes are 23 and 24 "
                       f"(RFC 3646 §3, §4).{mode_doc}")
    else:
        run.__doc__ = ("\"The DNS Recursive Name Server option MUST NOT appear in any other than the following "
                       "messages: Solicit, Advertise, Request, Renew, Rebind, Information-Request, and Reply\"; the "
                       f"same for the Domain Search List option (RFC 3646 §5): not in a {D.name_of(msg_type)}.")
    return check(area="dhcpv6", ipv6ready=ipv6ready, title=title, rfc="RFC 3646 §3-§5; RFC 8415 §21.7",
                 capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG,
                 expect="the DNS configuration options are requested where they may be (and only there)",
                 parts=parts or _oro_parts(D.name_of(msg_type), must_carry, fault))(run)


oro_format_asks_for_dns_configuration = _oro_check(
    "oro_format_asks_for_dns_configuration", "DHCP_CONF.4.1.1", "Option Request Option Format", D.SOLICIT, True,
    parts=[Part("A", "Option Request Option Format (DNS Recursive Name Server option)", want=D.OPT_DNS_SERVERS,
                fault="impostor_client_omits_dns_from_oro",
                expect="an Option Request option (code 6, an even length, one 2-octet code per option, no "
                       "duplicates) listing the DNS Recursive Name Server option (23)"),
           Part("B", "Option Request Option Format (Domain Search List option)", want=D.OPT_DOMAIN_LIST,
                fault="impostor_client_omits_dns_from_oro",
                expect="an Option Request option (code 6, an even length, one 2-octet code per option, no "
                       "duplicates) listing the Domain Search List option (24)")])
solicit_asks_for_dns_configuration = _oro_check(
    "solicit_asks_for_dns_configuration", "DHCP_CONF.4.1.2",
    "Transmission of Solicit Messages for DNS Configuration Options", D.SOLICIT, True)
request_asks_for_dns_configuration = _oro_check(
    "request_asks_for_dns_configuration", "DHCP_CONF.4.1.3",
    "Transmission of Request Messages for DNS Configuration Options", D.REQUEST, True)
confirm_carries_no_dns_options = _oro_check(
    "confirm_carries_no_dns_options", "DHCP_CONF.4.1.4",
    "Transmission of Confirm Messages for DNS Configuration Options", D.CONFIRM, False)
renew_asks_for_dns_configuration = _oro_check(
    "renew_asks_for_dns_configuration", "DHCP_CONF.4.1.5",
    "Transmission of Renew Messages for DNS Configuration Options", D.RENEW, True)
rebind_asks_for_dns_configuration = _oro_check(
    "rebind_asks_for_dns_configuration", "DHCP_CONF.4.1.6",
    "Transmission of Rebind Message for DNS Configuration Options", D.REBIND, True)
release_carries_no_dns_options = _oro_check(
    "release_carries_no_dns_options", "DHCP_CONF.4.1.7",
    "Transmission of Release Messages for DNS Configuration Options", D.RELEASE, False)
decline_carries_no_dns_options = _oro_check(
    "decline_carries_no_dns_options", "DHCP_CONF.4.1.8",
    "Transmission of Decline Messages for DNS Configuration Options", D.DECLINE, False)
information_request_asks_for_dns_configuration = _oro_check(
    "information_request_asks_for_dns_configuration", "DHCP_CONF.7.1.4", "Option Request Option Format (stateless)",
    D.INFORMATION_REQUEST, True,
    parts=[Part("A", "Option Request Option Format (DNS Recursive Name Server option)", want=D.OPT_DNS_SERVERS,
                fault="impostor_client_omits_dns_from_oro",
                expect="the Information-request's Option Request option lists the DNS Recursive Name Server "
                       "option (23)"),
           Part("B", "Option Request Option Format (Domain Search List option)", want=D.OPT_DOMAIN_LIST,
                fault="impostor_client_omits_dns_from_oro",
                expect="the Information-request's Option Request option lists the Domain Search List option (24)")],
    mode_doc=" (stateless: RFC 8415 §18.2.6)")
