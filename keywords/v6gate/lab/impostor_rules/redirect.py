"""Impostor rules for Redirect (RFC 4861 §8): reactive rules that apply
to the lab kernel's routes and neighbour cache what a stack that skips a
rule of §8.1/§8.3 would do with a Redirect, so the kernel's own traffic
afterwards shows it.  They send nothing themselves."""

import ipaddress

from ..impostor import rule
from . import _kernel as K

REDIRECT = 137


def _redirect(pkt):
    """(target, destination, TLLA or None) of a Redirect, read leniently: past
    its ICMP length, whatever its source, hop limit, code or checksum."""
    got = K.icmp_bytes(pkt)
    if got is None or len(got[2]) < 40 or got[2][0] != REDIRECT:
        return None
    body = got[2]
    tlla = K.options(body, 40).get(2)
    return K.addr(body[8:24]), K.addr(body[24:40]), K.mac(tlla) if tlla else None


@rule("redirect_applied_without_validation")
def redirect_applied_without_validation(pkt, dut, **_):
    """A stack that applies every Redirect without the validity tests of
    RFC 4861 §8.1: the destination is routed to the target (or on-link when
    the target is the destination or not a link-local unicast address) and
    the TLLA is entered for the target (§8.3)."""
    got = _redirect(pkt)
    if got is None:
        return []
    target, dest, tlla = got
    t, d = ipaddress.IPv6Address(target), ipaddress.IPv6Address(dest)
    if not d.is_multicast:
        if t == d or not t.is_link_local or t.is_multicast:
            K.run_ip(dut, "route", "replace", f"{d}/128", "dev", dut["ifname"])
        else:
            K.run_ip(dut, "route", "replace", f"{d}/128", "via", str(t), "dev", dut["ifname"])
    if tlla and not t.is_multicast and tlla != dut["mac"]:
        K.set_neigh(dut, str(t), tlla, "stale")
    return []


@rule("redirect_sets_target_state")
def redirect_sets_target_state(pkt, dut, when=("REACHABLE",), to="stale", **_):
    """A stack that sets the target's Neighbor Cache entry to ``to`` on a
    Redirect when it is in one of the states ``when`` ('NONE' for no entry),
    whatever the Redirect's TLLA says (RFC 4861 §8.3: no TLLA, or the cached
    address, leaves the entry unchanged).  The address is the TLLA, else the
    cached one, else the frame's source MAC."""
    got = _redirect(pkt)
    if got is None:
        return []
    target, _dest, tlla = got
    state, cached = K.neigh_state(dut, target)
    if state == "FAILED":
        state = "NONE"
    if state in set(when):
        K.set_neigh(dut, target, tlla or cached or K.ether_source(pkt), to)
    return []
