"""iSCSI discovery over IPv6: the SendTargets answer's TargetAddress
values (RFC 7143 §13.8)."""

from __future__ import annotations

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.verdict import Deviation
from ...net.iscsi import INITIATOR, parse_target_address
from ...scenario import storage as C


def judge_target_addresses(pairs: list[list[str]] | list[tuple[str, str]], link_is_global: bool = True
                           ) -> tuple[list[str], list[str]]:
    """(problems, portals) of a SendTargets answer: every TargetAddress must
    be a well-formed ``[IPv6]:port,tpgt`` (or a name), not IPv4, link-local
    or loopback on a link where the client used a global address."""
    problems, portals = [], []
    target = None
    for key, value in pairs:
        if key == "TargetName":
            target = value
        elif key == "TargetAddress":
            portals.append(value)
            try:
                ta = parse_target_address(value)
            except ValueError as exc:
                problems.append(f"malformed TargetAddress of {target}: {exc}")
                continue
            bad = C.classify(ta.host, link_is_global)
            if bad:
                problems.append(f"TargetAddress {value} of {target} is {bad}")
    return problems, portals


@check(
    area="storage", ipv6ready=None,
    title="iSCSI SendTargets lists only IPv6 portals usable on the link",
    rfc="RFC 7143 §13.8 (TargetAddress: domainname[:port][,tpgt], IPv6 in brackets), §4.3 (discovery)",
    expect="a discovery session on the DUT's global IPv6 address returns TargetAddress entries that are bracketed "
           "global IPv6 portals (or names): none IPv4, link-local, loopback or malformed",
    parts=[
        Part("A", "discovery on the global address (control: a link-local portal)",
             fault="dut_iscsi_advertises_link_local_portal"),
        Part("B", "discovery on the global address (control: an IPv4 portal)", fault="dut_iscsi_advertises_ipv4_portal"),
    ],
    capabilities=["iSCSI"], dut_config="storage",
)
def sendtargets_portals_are_ipv6(t: CheckContext):
    """A target returns, for each target name, the addresses where an
    initiator can reach it (TargetAddress).  On an IPv6-only link an IPv4
    portal cannot be reached, a link-local one cannot be reached from off
    the link and carries no zone, and an unbracketed IPv6 literal cannot be
    told apart from the port: each breaks the initiator's next login."""
    dut, svc, port, cl = C.endpoint(t, "iSCSI")
    answer, since = C.ask(t, cl, "v6gate.net.iscsi", ["sendtargets", dut, str(port), INITIATOR],
                          "iSCSI discovery client")
    if "error" in answer:
        raise C.speaker_error(answer, f"discovery session on [{dut}]:{port} failed: {answer['error']}; "
                                      f"{C.dut_frames_summary(t, since, dut)}")
    pairs = answer["sendtargets"]
    t.measure("sendtargets", pairs)
    names = [v for k, v in pairs if k == "TargetName"]
    if not names:
        raise Deviation(f"SendTargets=All on [{dut}]:{port} returned no TargetName (keys: {pairs})")
    if svc.get("iqn") and svc["iqn"] not in names:
        raise Deviation(f"SendTargets did not list {svc['iqn']} (the target file's iqn); it listed {names}")
    problems, portals = judge_target_addresses(pairs, link_is_global=True)
    if problems:
        raise Deviation("; ".join(problems) + f" (discovery over [{dut}]:{port})")
    note = "" if portals else " (no TargetAddress: the targets are at the discovery address, §13.8)"
    return t.conclude(f"{len(names)} target(s), portals {', '.join(portals) or '-'} all bracketed global IPv6{note}", [])
