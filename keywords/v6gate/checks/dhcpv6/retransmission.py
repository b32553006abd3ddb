"""DHCPv6 client (RFC 8415 §15, §7.6, §18.2): transmission and
retransmission — Solicit, Request, Confirm, Renew, Rebind, Release,
Decline and Information-request; IPv6 Ready DHCP_CONF.1.2.x (parts B-F),
7.1.5.

The tester's server stays silent, so the client retransmits; the observed
intervals are judged against RFC 8415 §15 (RT1 = IRT ± 10%, then doubling,
capped at MRT ± 10%; each interval against the previous observed one, so
the randomization does not accumulate), not against exact values.  A single
doubled interval is judged within 2·RT ± 0.2·RT: one draw of RAND cannot
tell RFC 8415's ±0.1·RT from a client that randomizes the doubled value;
``retransmission_randomization_is_within_rfc_bounds`` judges the ±0.1·RT
bound over many draws (full profile).
Whatever the server may shorten it shortens: SOL_MAX_RT / INF_MAX_RT
options (RFC 8415 §21.24-25, minimum 60 s), T1/T2 and lifetimes.  The
waits a client's own constants impose (REQ_MAX_RT 30 s, REN_MAX_RT and
REB_MAX_RT 600 s, REQ_MAX_RC 10) are in the full profile.
"""

from __future__ import annotations

import itertools
import struct

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.verdict import Deviation
from ...net import dhcpv6 as D
from ...scenario import dhcpv6 as X

CAPS = ["DHCPv6-Client"]


def _same_exchange(first: D.Message):
    return lambda m: m.xid == first.xid


def _intervals(t: CheckContext, b: X.Bench, msg_type: int, first: D.Message, count: int, *, mrt: float | None = None,
               lead: str = "", spread: float = D.GROWTH_SPREAD):
    """Collect ``count`` transmissions of ``first``'s exchange and judge the
    intervals (RFC 8415 §15; the doubling within ``spread``·RT, see
    net/dhcpv6.GROWTH_SPREAD): the check's verdict."""
    problems, seen = _judge_intervals(t, b, msg_type, first, count, mrt=mrt, lead=lead, spread=spread)
    return t.conclude(seen, problems)


def _judge_intervals(t: CheckContext, b: X.Bench, msg_type: int, first: D.Message, count: int, *, mrt: float | None = None,
                     lead: str = "", spread: float = D.GROWTH_SPREAD) -> tuple[list[str], str]:
    """(problems, seen) of ``_intervals``: a problem is the whole account of
    the transmissions."""
    ex = D.EXCHANGES[msg_type]
    mrt = ex.mrt if mrt is None else mrt
    budget = sum(_rt_upper(ex, k, mrt) for k in range(1, count)) + b.tol * count + t.reply_timeout
    msgs = b.wait(msg_type, budget, since=first.time, where=_same_exchange(first), count=count)
    times = [m.time for m in msgs[:count]]
    j = D.judge_intervals(times, ex, mrt=mrt, tolerance=b.tol, first_strictly_above_irt=msg_type == D.SOLICIT,
                          spread=spread)
    t.measure(f"{ex.name.lower()}_intervals_s", [round(x, 3) for x in j.intervals])
    seen = f"{lead}{ex.name} xid {first.xid:#08x} retransmitted after {j.text()}"
    if len(times) < count:
        quiet = t.now() - times[-1]
        limit = _rt_upper(ex, len(times), mrt) + b.tol
        why = (f"then nothing for {quiet:.1f} s, longer than the next RT may be ({limit:.1f} s"
               + (f", MRT {mrt:g} s + 10%)" if mrt else ")"))
        text = f"{seen}; {why}" + (f"; also {'; '.join(j.problems)}" if j.problems else "")
        return [text], text
    if j.problems:
        text = f"{seen}: {'; '.join(j.problems)}"
        return [text], text
    return [], seen


def _count_until_quiet(t: CheckContext, b: X.Bench, msg_type: int, first: D.Message, enough: int):
    """Transmissions of ``first``'s exchange until ``enough`` were seen or the
    client stayed quiet for longer than its next RT could be (2.1 times the
    last interval, capped by MRT + 10%): the end of a counted exchange."""
    ex = D.EXCHANGES[msg_type]
    seen = [first]
    last_rt = ex.irt
    while len(seen) < enough:
        nxt_rt = ex.irt * (1 + D.RAND) if len(seen) == 1 else last_rt * (2 + D.RAND)
        if ex.mrt:
            nxt_rt = min(nxt_rt, ex.mrt * (1 + D.RAND))
        got = b.wait(msg_type, nxt_rt + b.tol + t.reply_timeout, since=seen[-1].time + 0.01,
                     where=_same_exchange(first))
        if not got:
            break
        last_rt = got[0].time - seen[-1].time
        seen.append(got[0])
    return seen, t.now() - first.time


def _rt_upper(ex: D.Exchange, k: int, mrt: float) -> float:
    rt = ex.irt * (1 + D.RAND) * (2 + D.RAND) ** (k - 1)
    return min(rt, mrt * (1 + D.RAND)) if mrt else rt


# -- Solicit -------------------------------------------------------------------------------------------------
@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.2.1", title="Transmission of Solicit Messages",
       rfc="RFC 8415 §15, §18.2.1, §7.6", capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG,
       expect="with no Advertise, the client retransmits its Solicit per RFC 8415 §15",
       parts=[Part("B", "Reliability of DHCPv6 Retransmission", how="same", fault="impostor_client_changes_xid",
                   expect="the retransmitted Solicits keep the transaction ID, the Client Identifier and the IA_NA "
                          "of the first"),
              Part("C", "Retransmission of Solicit Message", how="intervals", fault="impostor_client_never_backs_off",
                   expect="Solicit intervals RT1 in (IRT, 1.1·IRT] (RAND > 0 for the first Solicit), then each "
                          "2·RT ± 0.1·RT (SOL_TIMEOUT 1 s)"),
              Part("D", "Maximum Retransmission Time of Solicit Message", how="mrt", profile="full",
                   fault="impostor_client_ignores_retransmission_limits",
                   rfc="RFC 8415 §15, §18.2.9, §21.24 (RFC 7083)",
                   expect="after an Advertise carrying SOL_MAX_RT 60 (and NoAddrsAvail), the Solicit intervals grow "
                          "by doubling until they reach 60 s ± 10% and stay there")])
def solicit_is_retransmitted_with_backoff(t: CheckContext):
    """"The client transmits the message according to Section 15, using the
    following parameters: IRT SOL_TIMEOUT, MRT SOL_MAX_RT, MRC 0, MRD 0"; "the
    first RT MUST be selected to be strictly greater than IRT by choosing
    RAND to be strictly greater than 0" (RFC 8415 §18.2.1).  Retransmissions
    are the same message: "The client MUST leave the transaction ID
    unchanged in retransmissions of a message" (§15, §16).  Any SOL_MAX_RT
    option in an Advertise "MUST be processed by the client, even if the
    message contains a Status Code option indicating a failure" (§18.2.9)."""
    b = X.Bench(t, start=False)
    if t.p.how == "mrt":
        def no_addresses(m):
            return b.server.advertise(m, ia=True, ia_status=(D.NO_ADDRS_AVAIL, "none for you"),
                                      extra=[D.opt(D.OPT_SOL_MAX_RT, struct.pack("!I", 60))])
        b.server.on(D.SOLICIT, no_addresses)
    else:
        b.server.on(D.SOLICIT, None)
    b.start()
    first = b.first(D.SOLICIT)
    if first is None:
        raise Deviation(f"no Solicit within {b.first_message_within:g} s of an RA with M=1")
    if t.p.how == "same":
        again = b.first(D.SOLICIT, within=D.EXCHANGES[D.SOLICIT].irt * 1.1 + b.tol + t.reply_timeout,
                        since=first.time + 0.01)
        if again is None:
            raise Deviation(f"the Solicit (xid {first.xid:#08x}) was not retransmitted within "
                             f"{1.1 + b.tol + t.reply_timeout:.1f} s")
        problems = []
        if again.xid != first.xid:
            problems.append(f"transaction ID changed from {first.xid:#08x} to {again.xid:#08x}")
        if again.client_duid != first.client_duid:
            problems.append("Client Identifier changed")
        if [ia.iaid for ia in again.ia_nas] != [ia.iaid for ia in first.ia_nas]:
            problems.append("IA_NA changed")
        seen = f"Solicit xid {first.xid:#08x}, retransmitted {again.time - first.time:.2f} s later as xid {again.xid:#08x}"
        return t.conclude(seen, problems, passed=seen + " with the same identifiers")
    if t.p.how == "intervals":
        return _intervals(t, b, D.SOLICIT, first, 4)
    return _intervals(t, b, D.SOLICIT, first, 9, mrt=60, lead="SOL_MAX_RT 60 advertised; ")


@check(area="dhcpv6", title="Solicit backoff beyond RFC 3315's 120 s cap", rfc="RFC 8415 §7.6, §15 (RFC 7083)",
       capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG, profile="full",
       fault="impostor_client_uses_rfc3315_max_rt",
       expect="with no server answering, the Solicit interval doubles past 132 s (RFC 3315's SOL_MAX_RT of 120 s + "
              "10%): SOL_MAX_RT is 3600 s since RFC 7083 / RFC 8415",
       parts=[Part("sol-max-rt-3600", "Solicit interval past 120 s")])
def solicit_backoff_exceeds_rfc3315_cap(t: CheckContext):
    """RFC 7083 raised SOL_MAX_RT from 120 s to 3600 s, and RFC 8415 §7.6
    keeps it: "SOL_MAX_RT 3600 secs Max Solicit timeout value".  A client
    still on RFC 3315's 120 s floods servers every two minutes; watching the
    intervals to about 256 s (about eight and a half minutes) tells the two
    apart (the full cap would take over an hour)."""
    b = _silent(t, D.SOLICIT)
    first = b.first(D.SOLICIT)
    if first is None:
        raise Deviation(f"no Solicit within {b.first_message_within:g} s of an RA with M=1")
    problems, seen = _judge_intervals(t, b, D.SOLICIT, first, 10)
    longest = max(t.measurements.get("solicit_intervals_s") or [0])
    old_cap = D.RFC3315_MAX_RT * (1 + D.RAND) + b.tol
    if not problems and longest <= old_cap:
        raise Deviation(f"{seen}: no interval above {old_cap:.0f} s, as if SOL_MAX_RT were RFC 3315's 120 s")
    return t.conclude(seen, problems)


@check(area="dhcpv6", title="Retransmission randomization stays within RFC 8415's bounds", rfc="RFC 8415 §15",
       capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG, profile="full",
       fault="impostor_client_never_backs_off",
       expect="over a long Solicit exchange (server silent, about 17 minutes), every interval after the first is "
              "within 2·RTprev ± 0.1·RTprev (RAND in [-0.1, 0.1] applied to RTprev), plus the capture tolerance",
       parts=[Part("rand", "RAND bound over many Solicit retransmissions")])
def retransmission_randomization_is_within_rfc_bounds(t: CheckContext):
    """"RT for each subsequent message transmission is based on the previous
    value of RT: RT = 2*RTprev + RAND*RTprev", RAND "a random number chosen
    with a uniform distribution between -0.1 and +0.1" (RFC 8415 §15).  One
    interval is one draw of RAND; a client that randomizes the doubled value
    (2*RTprev*(1 + RAND), twice the spread) stays inside the bound half the
    time, so this check judges ten draws (intervals up to 512 s), where
    such a client lands outside with near certainty."""
    b = _silent(t, D.SOLICIT)
    first = b.first(D.SOLICIT)
    if first is None:
        raise Deviation(f"no Solicit within {b.first_message_within:g} s of an RA with M=1")
    return _intervals(t, b, D.SOLICIT, first, 11, spread=D.RAND)


@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.2.2", title="Message Exchange Termination for Solicit Messages",
       rfc="RFC 8415 §18.2.1, §18.2.9", capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG,
       expect="the client ends the Solicit exchange as RFC 8415 §18.2.9 says",
       parts=[Part("A", "Advertise without Preference option before the first RT elapses", when="before",
                   fault="impostor_client_requests_at_once",
                   expect="an Advertise without a Preference option, answering the first Solicit, is kept while "
                          "the client collects Advertise messages for the whole first RT (> SOL_TIMEOUT): the "
                          "Request to that server comes no sooner than 1 s after the first Solicit"),
              Part("B", "Advertise without Preference option after the first RT elapses", when="after",
                   fault="impostor_client_waits_after_first_rt",
                   expect="an Advertise without a Preference option, answering a retransmitted Solicit, ends the "
                          "exchange at once: the Request follows within the reply timeout")])
def solicit_exchange_ends_as_specified(t: CheckContext):
    """"The client MUST collect Advertise messages for the first RT seconds,
    unless it receives an Advertise message with a preference value of 255";
    "If the client does not receive any Advertise messages before the first
    RT has elapsed, it begins the retransmission mechanism ... The client
    terminates the retransmission process as soon as it receives any
    Advertise message, and the client acts on the received Advertise message
    without waiting for any additional Advertise messages" (RFC 8415 §18.2.1,
    §18.2.9)."""
    b = X.Bench(t, start=False, preference=None)
    answered: list[D.Message] = []
    firsts: list[D.Message] = []

    def advertise(m):
        if not firsts:
            firsts.append(m)
        if t.p.when == "before" or answered or m.time - firsts[0].time > 0.5:
            answered.append(m)
            return b.server.advertise(m)
        return None  # part B: the first Solicit goes unanswered, the first RT elapses

    b.server.on(D.SOLICIT, advertise)
    b.start()
    first = b.first(D.SOLICIT)
    if first is None:
        raise Deviation(f"no Solicit within {b.first_message_within:g} s of an RA with M=1")
    within = D.EXCHANGES[D.SOLICIT].irt * 1.1 * 3 + b.tol + t.reply_timeout
    req = b.first(D.REQUEST, within=within, since=first.time)
    if req is None:
        raise Deviation(f"no Request within {within:.1f} s of the first Solicit although the server advertised")
    if t.p.when == "before":
        wait = req.time - first.time
        ok = wait >= D.EXCHANGES[D.SOLICIT].irt - b.tol / 4
        seen = (f"Advertise sent {answered[0].time - first.time if answered else 0:.3f} s after the first Solicit; "
                f"Request {wait:.3f} s after the first Solicit")
        if not ok:
            raise Deviation(f"{seen}: the client did not collect Advertise messages for the first "
                                             f"RT (> {D.EXCHANGES[D.SOLICIT].irt:g} s)")
        return t.conclude(seen, [])
    adv = answered[0] if answered else None
    if adv is None:
        raise Deviation("the client never retransmitted its Solicit, so no Advertise came after the first RT")
    sent = b.reply_sent_for(adv, 0.5) or adv.time
    delay = req.time - sent
    ok = delay <= t.reply_timeout
    seen = (f"Advertise answered the retransmitted Solicit {adv.time - first.time:.2f} s after the first; "
            f"Request {delay:.3f} s after the Advertise")
    if not ok:
        raise Deviation(f"{seen}: more than the reply timeout {t.reply_timeout:g} s")
    return t.conclude(seen, [])


# -- Request ---------------------------------------------------------------------------------------------------
@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.2.3", title="Transmission of Request Messages",
       rfc="RFC 8415 §15, §18.2.2, §7.6", capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG,
       expect="with no Reply, the client retransmits its Request per RFC 8415 §15 (REQ_TIMEOUT 1 s, REQ_MAX_RT "
              "30 s, REQ_MAX_RC 10)",
       parts=[Part("B", "Retransmission of Request messages", how="intervals", fault="impostor_client_never_backs_off",
                   expect="Request intervals RT1 = 1 s ± 10%, then 2·RT ± 0.2·RT"),
              Part("C", "Maximum Retransmission Time of Request messages", how="mrt", profile="full",
                   fault="impostor_client_ignores_retransmission_limits",
                   expect="the Request intervals double until REQ_MAX_RT (30 s ± 10%) and stay there"),
              Part("D", "Maximum Retransmission Count of Request messages", how="mrc", profile="full",
                   fault="impostor_client_ignores_retransmission_duration",
                   expect="the Request is sent REQ_MAX_RC (10) times in all, then no more")])
def request_is_retransmitted_with_backoff(t: CheckContext):
    """Request: "IRT REQ_TIMEOUT, MRT REQ_MAX_RT, MRC REQ_MAX_RC, MRD 0"
    (RFC 8415 §18.2.2); "the message exchange fails once the client has
    transmitted the message MRC times" (§15)."""
    b = X.Bench(t, start=False)
    b.server.on(D.REQUEST, None)
    b.start()
    first = b.first(D.REQUEST, within=b.first_message_within + 2.5)
    if first is None:
        raise Deviation("no Request after the Advertise (preference 255)")
    if t.p.how == "intervals":
        return _intervals(t, b, D.REQUEST, first, 3)
    if t.p.how == "mrt":
        return _intervals(t, b, D.REQUEST, first, 8)
    ex = D.EXCHANGES[D.REQUEST]
    same, watched = _count_until_quiet(t, b, D.REQUEST, first, ex.mrc + 1)
    seen = f"{len(same)} Request transmission(s) with xid {first.xid:#08x} (watched {watched:.0f} s)"
    if len(same) != ex.mrc:
        raise Deviation(f"{seen}, not REQ_MAX_RC = {ex.mrc}")
    return t.conclude(seen, [])


# -- Confirm ---------------------------------------------------------------------------------------------------
@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.2.4", title="Transmission of Confirm Messages",
       rfc="RFC 8415 §15, §18.2.3, §7.6", capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG,
       expect="with no Reply, the client retransmits its Confirm per RFC 8415 §15 (CNF_TIMEOUT 1 s, CNF_MAX_RT 4 s, "
              "CNF_MAX_RD 10 s)",
       parts=[Part("B", "Retransmission of Confirm messages", how="intervals", fault="impostor_client_never_backs_off",
                   expect="Confirm intervals RT1 = 1 s ± 10%, then 2·RT ± 0.2·RT"),
              Part("C", "Maximum Retransmission Time of Confirm messages", how="mrt", profile="full",
                   fault="impostor_client_ignores_retransmission_limits",
                   expect="no Confirm interval longer than CNF_MAX_RT (4 s) + 10%, over the whole exchange"),
              Part("D", "Maximum Retransmission Duration of Confirm messages", how="mrd",
                   fault="impostor_client_ignores_retransmission_duration",
                   expect="no Confirm later than CNF_MAX_RD (10 s) after the first one")])
def confirm_is_retransmitted_within_its_limits(t: CheckContext):
    """Confirm: "IRT CNF_TIMEOUT, MRT CNF_MAX_RT, MRC 0, MRD CNF_MAX_RD" (RFC
    8415 §18.2.3); "If the client does not receive any Reply messages
    before MRD, it ... SHOULD continue to use any leases, using the last
    known lifetimes"."""
    o = X.observe(t, D.CONFIRM, bench=_silent(t, D.CONFIRM))
    first = o.message
    b = o.bench
    ex = D.EXCHANGES[D.CONFIRM]
    if t.p.how == "intervals":
        return _intervals(t, b, D.CONFIRM, first, 3)
    # C: an interval above MRT can only show once the doubling passes it, after MRD for a client that keeps
    # MRD: watch two capped RTs past MRD.  D: a client ignoring MRD sends again within one capped RT.
    end = first.time + ex.mrd + ex.mrt * (1 + D.RAND) * (2 if t.p.how == "mrt" else 1) + b.tol
    t.wait(max(0.0, end - t.now()))
    times = [m.time for m in b.server.messages(D.CONFIRM, since=first.time) if m.xid == first.xid]
    rel = ", ".join(f"+{x - first.time:.2f}" for x in times)
    if t.p.how == "mrt":
        longest = max((b2 - a for a, b2 in itertools.pairwise(times)), default=0.0)
        ok = len(times) >= 3 and longest <= ex.mrt * 1.1 + b.tol
        seen = f"Confirm transmissions at {rel} s; longest interval {longest:.2f} s"
        if not ok:
            raise Deviation(f"{seen}: " + ("fewer than 3 transmissions" if len(times) < 3 else
                                                               f"above CNF_MAX_RT {ex.mrt:g} s + 10%"))
        return t.conclude(seen, [])
    last = times[-1] - first.time
    ok = last <= ex.mrd + b.tol
    seen = f"Confirm transmissions at {rel} s (watched until +{end - first.time:.1f} s)"
    if not ok:
        raise Deviation(f"{seen}: still confirming {last:.2f} s after the first, past CNF_MAX_RD "
                                         f"{ex.mrd:g} s")
    return t.conclude(seen, [])


def _silent(t: CheckContext, msg_type: int, **kw) -> X.Bench:
    b = X.Bench(t, start=False, **kw)
    b.server.on(msg_type, None)
    b.start()
    return b


# -- Renew and Rebind ------------------------------------------------------------------------------------------
@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.2.5", title="Transmission of Renew Messages",
       rfc="RFC 8415 §15, §18.2.4, §7.6", capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG,
       expect="with no Reply, the client retransmits its Renew per RFC 8415 §15 (REN_TIMEOUT 10 s, REN_MAX_RT 600 s) "
              "until T2",
       parts=[Part("B", "Retransmission of Renew message, T1 and T2 non-zero", how="intervals", profile="full",
                   fault="impostor_client_never_backs_off",
                   expect="Renew at T1 (1 s), then intervals 10 s ± 10%, then 2·RT ± 0.2·RT"),
              Part("C", "Maximum Retransmission Time of Renew message, T1 and T2 non-zero", how="mrt", profile="full",
                   fault="impostor_client_ignores_retransmission_limits",
                   expect="the Renew intervals double from 10 s until REN_MAX_RT (600 s ± 10%) and stay there "
                          "(watched for about 31 minutes)"),
              Part("D", "Maximum Retransmission Duration of Renew message", how="mrd",
                   fault="impostor_client_ignores_retransmission_duration",
                   expect="Renews only between T1 and T2 (4 s); at T2 the client stops renewing and sends a Rebind")])
def renew_is_retransmitted_until_t2(t: CheckContext):
    """Renew: "IRT REN_TIMEOUT, MRT REN_MAX_RT, MRC 0, MRD Remaining time
    until earliest T2"; "The message exchange is terminated when time T2 is
    reached ..., at which time the client begins the Rebind message exchange"
    (RFC 8415 §18.2.4)."""
    how = t.p.how
    # mrt: T2 (the end of the Renew exchange, its MRD) must lie beyond the ninth Renew even for the slowest
    # series the RFC allows (about 2170 s after T1) and a client whose RAND overshoots: at 2000 s a Rebind
    # at T2 once took the place of the ninth Renew and the check read the client's silence as a FAIL
    t2 = {"intervals": 200, "mrt": 2600, "mrd": 4}[how]
    o = X.observe(t, D.RENEW, bench=_silent(t, D.RENEW, t1=1, t2=t2, preferred=t2 + 600, valid=t2 + 700))
    first, b = o.message, o.bench
    if how == "intervals":
        return _intervals(t, b, D.RENEW, first, 3)
    if how == "mrt":  # 10, 20, ... 320, then 600 (capped) twice: only the second tells a cap from 640
        return _intervals(t, b, D.RENEW, first, 9)
    t2_at = o.binding.reply_at + t2
    rebind = b.first(D.REBIND, within=max(0.0, t2_at - t.now()) + 1 + b.tol + t.reply_timeout, since=first.time)
    renews = [m for m in b.server.messages(D.RENEW, since=first.time) if m.xid == first.xid]
    late = [m for m in renews if m.time > t2_at + b.tol]
    rel = ", ".join(f"+{m.time - o.binding.reply_at:.2f}" for m in renews)
    seen = f"T2 = {t2} s after the Reply; Renews at {rel} s"
    if late:
        raise Deviation(f"{seen}: still renewing after T2")
    if rebind is None:
        raise Deviation(f"{seen}: no Rebind by T2 + {1 + b.tol + t.reply_timeout:.1f} s")
    at = rebind.time - o.binding.reply_at
    ok = abs(at - t2) <= 1 + b.tol
    if not ok:
        raise Deviation(f"{seen}; Rebind at +{at:.2f} s, not at T2 = {t2} s")
    return t.conclude(f"{seen}; Rebind at +{at:.2f} s", [])


@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.2.6", title="Transmission of Rebind Message",
       rfc="RFC 8415 §15, §18.2.5, §7.6", capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG,
       expect="with no Reply, the client retransmits its Rebind per RFC 8415 §15 (REB_TIMEOUT 10 s, REB_MAX_RT "
              "600 s) until the valid lifetimes end",
       parts=[Part("B", "Retransmission of Rebind messages, T1 and T2 non-zero", how="intervals", profile="full",
                   fault="impostor_client_never_backs_off",
                   expect="Rebind at T2 (2 s), then intervals 10 s ± 10%, then 2·RT ± 0.2·RT"),
              Part("C", "Maximum Retransmission Time of Rebind messages, T1 and T2 non-zero", how="mrt",
                   profile="full", fault="impostor_client_ignores_retransmission_limits",
                   expect="the Rebind intervals double from 10 s until REB_MAX_RT (600 s ± 10%) and stay there "
                          "(watched for about 31 minutes)"),
              Part("D", "Maximum Retransmission Duration of Rebind messages", how="mrd",
                   fault="impostor_client_ignores_retransmission_duration",
                   expect="no Rebind after the valid lifetime (7 s) ends; the address is then no longer used")])
def rebind_is_retransmitted_until_leases_expire(t: CheckContext):
    """Rebind: "IRT REB_TIMEOUT, MRT REB_MAX_RT, MRC 0, MRD Remaining time
    until valid lifetimes of all leases in all IAs have expired"; when they
    have, the client stops using them (RFC 8415 §18.2.5)."""
    how = t.p.how
    valid = {"intervals": 200, "mrt": 2600, "mrd": 7}[how]  # mrt: beyond the ninth Rebind (see Renew)
    b = X.Bench(t, start=False, t1=1, t2=2, preferred=valid, valid=valid)
    b.server.on(D.RENEW, None)
    b.server.on(D.REBIND, None)
    b.start()
    o = X.observe(t, D.REBIND, bench=b)
    first = o.message
    if how == "intervals":
        return _intervals(t, b, D.REBIND, first, 3)
    if how == "mrt":
        return _intervals(t, b, D.REBIND, first, 9)
    b.server.on(D.SOLICIT, None)  # once the lease is gone, no server gives it back
    end_at = o.binding.reply_at + valid
    t.wait(max(0.0, end_at + 2 + b.tol - t.now()))
    rebinds = [m for m in b.server.messages(D.REBIND, since=first.time) if m.xid == first.xid]
    rel = ", ".join(f"+{m.time - o.binding.reply_at:.2f}" for m in rebinds)
    late = [m for m in rebinds if m.time > end_at + b.tol]
    seen = f"valid lifetime {valid} s after the Reply; Rebinds at {rel} s"
    if late:
        raise Deviation(f"{seen}: still rebinding after the valid lifetime ended")
    problems, gone = b.not_in_use(b.address, what=f"Echo Reply from {b.address} after its valid lifetime")
    if problems:
        raise Deviation(f"{seen}; {gone}")
    return t.conclude(f"{seen}; {gone}", [])


# -- Release and Decline ---------------------------------------------------------------------------------------
def _release_or_decline(t: CheckContext, msg_type: int):
    how = t.p.how
    b = X.Bench(t, start=False)
    if how in ("intervals", "mrc"):
        b.server.on(msg_type, None)
    elif how == "nobinding":
        b.server.on(msg_type, lambda m: b.server.reply(m, ia_status=(D.NO_BINDING, "no binding"), dns=False))
    elif how == "unspecfail":
        b.server.on(msg_type, lambda m: b.server.reply(m, ia=False, status=(D.UNSPEC_FAIL, "failed"), dns=False))
    b.start()
    o = X.observe(t, msg_type, bench=b)
    first = o.message
    ex = D.EXCHANGES[msg_type]
    if how == "intervals":
        return _intervals(t, b, msg_type, first, 3)
    if how == "mrc":
        same, watched = _count_until_quiet(t, b, msg_type, first, ex.mrc + 1)
        rel = ", ".join(f"+{m.time - first.time:.2f}" for m in same)
        seen = f"{len(same)} {ex.name} transmission(s) at {rel} s (watched {watched:.1f} s)"
        ok = len(same) == ex.mrc
        if not ok:
            raise Deviation(f"{seen}, not {ex.name[:3].upper()}_MAX_RC = {ex.mrc}")
        return t.conclude(seen, [])
    # a Reply (any status) completes the exchange
    window = ex.irt * (1 + D.RAND) * 3 + b.tol + t.reply_timeout
    t.wait(max(0.0, first.time + window - t.now()))
    same = [m for m in b.server.messages(msg_type, since=first.time) if m.xid == first.xid]
    status = "NoBinding in the IA" if how == "nobinding" else "UnspecFail"
    seen = f"Reply ({status}) sent to the first {ex.name}; {len(same)} transmission(s) in {window:.1f} s"
    if len(same) != 1:
        raise Deviation(f"{seen}: retransmitted after the Reply")
    return t.conclude(seen, [])


def _counted_parts(name: str, mrc: str) -> list[Part]:
    return [Part("C", f"Retransmission of {name} message", how="intervals", fault="impostor_client_never_backs_off",
                 expect=f"with no Reply, {name} intervals RT1 = 1 s ± 10%, then 2·RT ± 0.2·RT"),
            Part("D", f"Maximum Retransmission Count of {name} message, no Reply message from Server", how="mrc",
                 fault="impostor_client_ignores_retransmission_duration",
                 expect=f"with no Reply, the {name} is sent {mrc} (4) times in all, then no more"),
            Part("E", f"Retransmission of {name} message, Reply with NoBinding", how="nobinding",
                 fault="impostor_client_retransmits_after_reply",
                 expect="a Reply with NoBinding in the IA completes the exchange: no retransmission")]


@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.2.7", title="Transmission of Release Messages",
       rfc="RFC 8415 §15, §18.2.7, §18.2.10.2, §7.6", capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG,
       expect="the Release exchange follows RFC 8415 §15 (REL_TIMEOUT 1 s, REL_MAX_RC 4) and ends at the Reply",
       parts=[*_counted_parts("Release", "REL_MAX_RC"),
              Part("F", "Retransmission of Release message, Reply with UnspecFail", how="unspecfail",
                   fault="impostor_client_retransmits_after_reply",
                   expect="a Reply with a top-level UnspecFail also completes the exchange (regardless of the "
                          "status): no retransmission")])
def release_is_retransmitted_until_replied(t: CheckContext):
    """Release: "IRT REL_TIMEOUT, MRT 0, MRC REL_MAX_RC, MRD 0"; "If the
    Release message exchange fails, the client abandons the leases" (RFC
    8415 §18.2.7); "When the client receives a valid Reply message in
    response to a Release message, the client considers the Release event
    completed, regardless of the Status Code option(s) returned by the
    server" (§18.2.10.2).  REL_MAX_RC is 4 since RFC 8415 (RFC 3315 had 5)."""
    return _release_or_decline(t, D.RELEASE)


@check(area="dhcpv6", ipv6ready="DHCP_CONF.1.2.8", title="Transmission of Decline Messages",
       rfc="RFC 8415 §15, §18.2.8, §18.2.10.2, §7.6", capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG,
       expect="the Decline exchange follows RFC 8415 §15 (DEC_TIMEOUT 1 s, DEC_MAX_RC 4) and ends at the Reply",
       parts=_counted_parts("Decline", "DEC_MAX_RC"))
def decline_is_retransmitted_until_replied(t: CheckContext):
    """Decline: "IRT DEC_TIMEOUT, MRT 0, MRC DEC_MAX_RC, MRD 0" (RFC 8415
    §18.2.8); a valid Reply completes it "regardless of the Status Code
    option(s)" (§18.2.10.2).  DEC_MAX_RC is 4 since RFC 8415 (RFC 3315 had
    5)."""
    return _release_or_decline(t, D.DECLINE)


# -- Information-request ----------------------------------------------------------------------------------------
@check(area="dhcpv6", ipv6ready="DHCP_CONF.7.1.5", title="Transmission of Information-request Message",
       rfc="RFC 8415 §15, §18.2.6, §7.6", capabilities=CAPS, needs=X.NEEDS, dut_config=X.DUT_CONFIG,
       expect="with no Reply, the client retransmits its Information-request per RFC 8415 §15 (INF_TIMEOUT 1 s, "
              "INF_MAX_RT 3600 s or the server's INF_MAX_RT)",
       parts=[Part("A", "Reliability of DHCPv6 Retransmission", how="same", fault="impostor_client_changes_xid",
                   expect="the Information-request is retransmitted with the same transaction ID"),
              Part("B", "Retransmission of Information-request message", how="intervals",
                   fault="impostor_client_never_backs_off",
                   expect="Information-request intervals RT1 = 1 s ± 10%, then 2·RT ± 0.2·RT"),
              Part("C", "Maximum Retransmission Time of Information-request message", how="mrt", profile="full",
                   rfc="RFC 8415 §15, §18.2.6, §21.23, §21.25 (RFC 7083)",
                   fault="impostor_client_ignores_retransmission_limits",
                   expect="after a Reply with INF_MAX_RT 60 and an Information Refresh Time of 600 s, the next "
                          "Information-request (at the refresh) is retransmitted with intervals that double until "
                          "60 s ± 10%")])
def information_request_is_retransmitted_with_backoff(t: CheckContext):
    """Information-request: "IRT INF_TIMEOUT, MRT INF_MAX_RT, MRC 0, MRD 0"
    (RFC 8415 §18.2.6); retransmissions keep the transaction ID (§15); an
    INF_MAX_RT option in a Reply replaces INF_MAX_RT (§21.25), and the client
    asks again when the Information Refresh Time ends (§21.23)."""
    b = X.Bench(t, mode=X.STATELESS, start=False)
    if t.p.how == "mrt":
        refresh = 600  # IRT_MINIMUM (RFC 8415 §7.6, §21.23)
        replies = []

        def once(m):
            if replies:
                return None
            replies.append(m)
            return b.server.reply(m, ia=False, extra=[D.opt(D.OPT_INF_MAX_RT, struct.pack("!I", 60)),
                                                      D.opt(D.OPT_INFORMATION_REFRESH_TIME,
                                                            struct.pack("!I", refresh))])
        b.server.on(D.INFORMATION_REQUEST, once)
    else:
        b.server.on(D.INFORMATION_REQUEST, None)
    b.start()
    first = b.first(D.INFORMATION_REQUEST)
    if first is None:
        raise Deviation(f"no Information-request within {b.first_message_within:g} s of an RA with M=0 O=1")
    if t.p.how == "same":
        again = b.first(D.INFORMATION_REQUEST, within=1.1 + b.tol + t.reply_timeout, since=first.time + 0.01)
        if again is None:
            raise Deviation(f"the Information-request (xid {first.xid:#08x}) was not retransmitted")
        ok = again.xid == first.xid and again.client_duid == first.client_duid
        seen = (f"Information-request xid {first.xid:#08x}, retransmitted {again.time - first.time:.2f} s later as "
                f"xid {again.xid:#08x}")
        if not ok:
            raise Deviation(f"{seen}: the retransmission is not the same message")
        return t.conclude(seen, [])
    if t.p.how == "intervals":
        return _intervals(t, b, D.INFORMATION_REQUEST, first, 4)
    nxt = b.first(D.INFORMATION_REQUEST, within=refresh * 1.1 + 5, since=first.time + 1,
                  where=lambda m: m.xid != first.xid)
    if nxt is None:
        raise Deviation(f"no new Information-request within {refresh * 1.1 + 5:.0f} s of a Reply with an Information "
                         f"Refresh Time of {refresh} s (RFC 8415 §21.23)")
    return _intervals(t, b, D.INFORMATION_REQUEST, nxt, 9, mrt=60,
                      lead=f"INF_MAX_RT 60 in the Reply; refresh after {nxt.time - first.time:.0f} s; ")
