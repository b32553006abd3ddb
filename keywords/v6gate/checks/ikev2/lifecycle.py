"""An established IKE SA over its life (RFC 7296 §1.3.2, §1.3.3, §1.4, §2.4,
§2.8, §2.18): rekeying the CHILD_SA and the IKE SA without losing traffic,
liveness checks answered, a DELETE honoured."""

from __future__ import annotations

from ...core.check import Part, check
from ...core.verdict import Deviation
from ...net.ikev2 import exchange as X
from ...net.ikev2.codec import Delete, IkeParseError
from ...net.ikev2.const import Exchange, Proto
from ...net.ikev2.crypto import CryptoError
from ...net.ikev2.peer import ProtocolError
from . import _common as C

JUDGED_BY_TRAFFIC = "ikev2.child_sa_carries_ipv6_traffic#A"


def _traffic_precondition(t, end, child) -> None:
    """The CHILD_SA carries an Echo before the check changes anything (judged by the traffic check)."""
    echoes = C.esp_echo(t, end, child, 1)
    if echoes[0].reply is None:
        raise t.not_judged("child-sa-traffic", JUDGED_BY_TRAFFIC,
                           "; ".join(C.echo_problems(echoes, child)) or "no Echo Reply in ESP")


def _ask(t, end, build, what: str):
    """A request on the IKE SA and its result; a FAIL-worthy description when the DUT does not answer it."""
    try:
        return X.ask(end.ch, end.peer, build, t.reply_timeout), None
    except X.NoAnswer as exc:
        return None, f"the DUT did not answer the {what}: {exc}"
    except (ProtocolError, IkeParseError, CryptoError) as exc:
        return None, f"the DUT's answer to the {what} is wrong: {exc}"


@check(
    area="ikev2", ipv6ready=None,
    title="A CHILD_SA rekeyed with CREATE_CHILD_SA keeps traffic flowing",
    rfc="RFC 7296 §1.3.3 (rekeying CHILD_SAs with N(REKEY_SA)), §2.8 (the old SA stays usable until the initiator "
        "deletes it), §1.4.1",
    expect="the DUT answers the rekey with a new CHILD_SA (with a KE of the requested group under PFS); an Echo "
           "Request in ESP on the old CHILD_SA between the rekey and its DELETE is answered; the DELETE of the old "
           "one is answered with the paired SA's Delete; the new CHILD_SA then carries Echo Requests and Replies",
    parts=[Part("A", "without PFS"), Part("B", "with PFS (a KE of ECP-256)", pfs=19)],
    fault="dut_drops_the_rekeyed_child_sa_at_once",
    capabilities=["IKEv2"], dut_config="ipsec-vm",
)
def child_sa_rekey_keeps_traffic_flowing(t):
    """RFC 7296 §2.8: "The old SA ... can be deleted by the initiator after the new one is established";
    until then both are live, so traffic in flight on the old one is not lost.  §1.3.3: the rekey names
    the old SA in N(REKEY_SA); with PFS the exchange carries its own Diffie-Hellman."""
    C.require_role(t, "responder")
    pfs = getattr(t.p, "pfs", None)
    end = C.ike(t)
    old = C.establish(t, end).child
    _traffic_precondition(t, end, old)
    res, problem = _ask(t, end, lambda p: p.create_child(rekey=old, pfs_group=pfs), "CREATE_CHILD_SA rekey")
    if problem:
        raise Deviation(problem)
    if not res.ok:
        raise Deviation(f"the DUT refused to rekey the CHILD_SA: {res.detail}")
    new = res.child
    seen = [f"rekeyed: {new.label()}" + (f" with PFS group {pfs}" if pfs else "")]
    problems = []
    t.wait(t.reply_timeout)  # the old SA still carries traffic a while after the rekey, until its DELETE (§2.8)
    during = C.esp_echo(t, end, old, 1, replies_on=[old, new])
    if during[0].reply is None:
        problems.append("traffic on the old CHILD_SA was lost between the rekey and its DELETE: "
                        + "; ".join(C.echo_problems(during, old, "the old CHILD_SA")))
    else:
        seen.append(f"an Echo Request on the old SA, after the rekey, answered on SPI 0x{during[0].on.spi_in.hex()}")
    dres, problem = _ask(t, end, lambda p: p.delete_child(old), "DELETE of the old CHILD_SA")
    if problem:
        problems.append(problem)
    else:
        d = dres.msg.get(Delete)
        if d is None or old.spi_out not in d.spis:
            problems.append(f"the DELETE of the old CHILD_SA was answered without a Delete of its pair (SPI "
                            f"0x{old.spi_out.hex()}): {dres.msg.label()}")
    after = C.esp_echo(t, end, new, 2)
    C.judge_echoes(seen, problems, after, new, "the new CHILD_SA",
                   f"the new CHILD_SA carries Echo Requests and Replies (SPI 0x{new.spi_in.hex()})")
    return t.conclude(seen, problems)


@check(
    area="ikev2", ipv6ready="IKEv2.EN.R.1.2.6.1",
    title="An IKE SA rekeyed with CREATE_CHILD_SA carries on, and its CHILD_SA with it",
    rfc="RFC 7296 §1.3.2 (rekeying an IKE SA), §2.18 (SKEYSEED from the old SK_d and the new g^ir), §2.8 (the "
        "CHILD_SAs move to the new IKE SA)",
    expect="the DUT answers the IKE SA rekey with SA (a new 8-octet SPI), Nr and KE; the new IKE SA's keys (SKEYSEED "
           "= prf(SK_d old, g^ir new | Ni | Nr)) open its answer to a liveness check; the old IKE SA's DELETE is "
           "answered; the CHILD_SA still carries traffic",
    fault="dut_ignores_create_child_sa_requests",
    capabilities=["IKEv2"], dut_config="ipsec-vm",
)
def ike_sa_rekey_keeps_the_child_sa(t):
    """RFC 7296 §1.3.2: an IKE SA is rekeyed by a CREATE_CHILD_SA exchange carrying SA, Ni and KEi; §2.18 gives
    the new keys; §2.8: the CHILD_SAs of the old IKE SA move to the new one, so rekeying loses no traffic."""
    C.require_role(t, "responder")
    end = C.ike(t)
    child = C.establish(t, end).child
    _traffic_precondition(t, end, child)
    old_ike = end.peer.ike
    res, problem = _ask(t, end, lambda p: p.rekey_ike(), "CREATE_CHILD_SA rekeying the IKE SA")
    if problem:
        raise Deviation(problem)
    if not res.ok:
        raise Deviation(f"the DUT refused to rekey the IKE SA: {res.detail}")
    new_ike = end.peer.ike
    seen = [f"new IKE SA 0x{new_ike.spi_i.hex()}/0x{new_ike.spi_r.hex()} ({new_ike.chosen.label()})"]
    problems = []
    live, problem = _ask(t, end, lambda p: p.informational(), "liveness check on the new IKE SA")
    if problem:
        problems.append(problem + " (the new IKE SA's keys are not the DUT's, or it dropped the SA)")
    else:
        seen.append(f"the new IKE SA answers a liveness check (Message ID {live.msg.msg_id})")
    with end.ch.lock:
        req = old_ike.protect(Exchange.INFORMATIONAL, old_ike.next_request, [Delete(Proto.IKE, [])], response=False)
    dg = end.ch.request(req, within=t.reply_timeout, label="DELETE of the old IKE SA")
    if dg is None:
        problems.append("the DUT did not answer the DELETE of the old IKE SA")
    echoes = C.esp_echo(t, end, child, 2)
    C.judge_echoes(seen, problems, echoes, child, "the CHILD_SA after the IKE SA rekey",
                   "the CHILD_SA carries traffic after the rekey and the old IKE SA's deletion")
    return t.conclude(seen, problems)


@check(
    area="ikev2", ipv6ready="IKEv2.EN.R.1.1.3.4",
    title="A liveness check (an empty INFORMATIONAL request) is answered",
    rfc="RFC 7296 §1.4 and §2.4 (an INFORMATIONAL request with no payloads is a liveness check; every request "
        "MUST be answered), §1.5",
    expect="two protected INFORMATIONAL requests with no payloads (Message IDs 2 and 3) each get a protected "
           "INFORMATIONAL response with the same Message ID, the Response flag, and no payloads",
    fault="dut_ignores_informational_requests",
    capabilities=["IKEv2"], dut_config="ipsec-vm",
)
def liveness_check_is_answered(t):
    """RFC 7296 §2.4: an endpoint that gets no answer to its liveness checks considers the peer dead and
    deletes the IKE SA; a DUT that does not answer them loses every SA with a peer that checks."""
    C.require_role(t, "responder")
    end = C.ike(t)
    C.establish(t, end)
    seen, problems = [], []
    for _ in range(2):
        res, problem = _ask(t, end, lambda p: p.informational(), "liveness check")
        if problem:
            problems.append(problem)
            break
        msg = res.msg
        if msg.exchange != Exchange.INFORMATIONAL or not msg.is_response:
            problems.append(f"the answer is {msg.label()}, not an INFORMATIONAL response")
        if msg.inner:
            problems.append(f"the answer carries payloads {msg.label()} (a liveness check's answer has none)")
        seen.append(f"{msg.label()} answered")
    return t.conclude(seen, problems)


@check(
    area="ikev2", ipv6ready="IKEv2.EN.R.1.1.3.6",
    title="A DELETE of a CHILD_SA is honoured",
    rfc="RFC 7296 §1.4.1 (the responder MUST answer with a Delete of the paired SA and close its half), §3.11",
    expect="the INFORMATIONAL response carries a Delete naming the DUT's SPI of the pair; afterwards an Echo Request "
           "in ESP on the deleted SA gets no answer (in ESP or in the clear), while the IKE SA still answers a "
           "liveness check",
    fault="dut_keeps_the_deleted_child_sa",
    capabilities=["IKEv2"], dut_config="ipsec-vm",
)
def child_sa_delete_is_honoured(t):
    """RFC 7296 §1.4.1: "the receiving node MUST close its incoming SAs and send a Delete for its outgoing SAs
    in the response"; an SA a peer deleted that still admits traffic is a door nobody watches."""
    C.require_role(t, "responder")
    end = C.ike(t)
    child = C.establish(t, end).child
    _traffic_precondition(t, end, child)
    res, problem = _ask(t, end, lambda p: p.delete_child(child), "DELETE of the CHILD_SA")
    if problem:
        raise Deviation(problem)
    problems, seen = [], []
    d = res.msg.get(Delete)
    if d is None or d.proto != Proto.ESP or child.spi_out not in d.spis:
        problems.append(f"the DELETE was answered without a Delete of the paired SA (SPI 0x{child.spi_out.hex()}): "
                        f"{res.msg.label()}")
    else:
        seen.append(f"the response deletes the pair (SPI 0x{child.spi_out.hex()})")
    # three Echo Requests on the deleted SA over twice the silence window: a DUT that kept (or put back) its half
    # answers one of them
    echoes = C.esp_echo(t, end, child, 3, within=2 * t.silence / 3)
    answered = [e for e in echoes if e.reply is not None or e.clear is not None]
    if any(e.reply is not None for e in answered):
        problems.append(f"the DUT answered (in ESP) an Echo Request on the CHILD_SA it deleted (SPI "
                        f"0x{child.spi_out.hex()})")
    elif answered:
        problems.append(f"the DUT answered (in the clear) an Echo Request that came in ESP on SPI "
                        f"0x{child.spi_out.hex()}, which it deleted")
    else:
        seen.append(f"three Echo Requests on the deleted SA got no answer in {2 * t.silence:g} s")
    _live, problem = _ask(t, end, lambda p: p.informational(), "liveness check after the DELETE")
    if problem:
        return t.conclude(f"the IKE SA stopped answering after the CHILD_SA's DELETE (a silent DUT proves nothing): "
                          f"{problem}", problems or [problem])
    seen.append("the IKE SA still answers a liveness check")
    return t.conclude(seen, problems)
