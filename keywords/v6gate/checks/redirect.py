"""Redirect (RFC 4861 §8, RFC 6980 §5) — IPv6 Ready Core v6LC.2.3.

Common set-up (the IPv6 Ready "Common Test Setup 1.1"): the tester's TR1
is the DUT's only router, advertising the link prefix; TN1 and TN2 have
off-link addresses and talk to the DUT "through" TR1 (TR1's MAC, their
off-link source).  Which first hop the DUT then uses for its answers shows
whether it processed a Redirect (its Destination Cache, §8.3); what it sends
to the Redirect's target shows the target's Neighbor Cache entry (§8.3,
judged as in ``net/nce.py``).  Every check needs the tester to be the only
router (``exclusive_router``).
"""

from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6ND_Redirect,
    ICMPv6NDOptMTU,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
)
from scapy.layers.l2 import Ether

from ..core.check import Part, check
from ..core.context import CheckContext, NotApplicable
from ..core.verdict import Deviation
from ..net import packets as P
from ..net.mutate import break_one
from ..net.nd import fresh_prefix, prefix_option
from ..net.redirect import oversized_redirected, redirect, unrecognized_option, zero_length_option
from ..scenario import nce
from ..scenario.firsthop import FirstHop
from ..scenario.nce import Expect, Neighbour

UNCONTROLLABLE_MULTICAST_DESTINATION = (
    "a Redirect for a multicast Destination changes nothing a host sends to the correspondent, so a stack that "
    "skipped this validity test behaves on the wire like one that discarded the Redirect")


class RedirectBench:
    """Common Test Setup 1.1 plus the nodes the Redirect checks use."""

    def __init__(self, t: CheckContext, *, alternate: bool = False):
        self.t = t
        batch = getattr(t, "together", None)
        if batch is None:
            self.fh = FirstHop(t).start()
        else:  # parts side by side share TR1, the DUT's one default router (core/together.py)
            first = batch.shared("redirect:first-hop", lambda: FirstHop(t).start())
            self.fh = first if first.t is t else FirstHop.beside(t, first)
        self.tr1 = self.fh.tr1
        self.tn1 = self.fh.offlink_node("TN1")
        self.tr2 = self.fh.router("TR2") if alternate else None
        self.last_reply = None
        if alternate:
            self._reach_tr2()

    def _reach_tr2(self) -> None:
        """TR2 pings the DUT's link-local address and answers its NS, so the
        DUT's entry for TR2 is REACHABLE (set-up step b)."""
        nb = Neighbour(self.t, self.tr2)
        nb.node.answers_ns = True
        since = self.t.send(nb.echo_request(), label="Echo Request from TR2 to the DUT's link-local address")
        if self.t.port.expect(self.t.from_dut(nb.is_reply), self.t.reply_timeout + 3 * self.t.retrans_timer,
                              since=since) is None:
            raise Deviation("setup: no Echo Reply to TR2's link-local Echo Request (TR2 answered the DUT's NS)",
                            name="nce:TR2", judged_by=nce.STATE_JUDGES["reachable"])

    def first_hop(self, src: str | None = None, step: str = "before the Redirect"):
        """Step 1-2: the DUT answers TN1 through TR1, its only router."""
        answer = self.fh.require_first_hop(src or self.tn1.offlink, self.tr1, step)
        self.last_reply = answer.reply
        return answer

    def redirect(self, *, target: str, tlla: str | None = None, rh: bool | str = False, to_link_local: bool = False,
                 destination: str | None = None, sender=None, **fields):
        """A Redirect from TR1 (or ``sender``) for TN1's off-link address (or
        ``destination``); ``rh``: carry the DUT's last answer ('oversized':
        padded past 1280 octets)."""
        redirected = None
        if rh and self.last_reply is not None:
            inner = self.last_reply.pkt[IPv6]
            redirected = oversized_redirected(inner) if rh == "oversized" else inner
        return redirect(sender or self.tr1, self.t.dut.mac,
                        self.t.dut.link_local if to_link_local else self.fh.dut_global,
                        target=target, destination=destination or self.tn1.offlink, tlla=tlla,
                        redirected=redirected, trim=rh != "oversized", **fields)

    def answer_via(self, node, src: str | None = None):
        """Forward an Echo Request from TN1 (or ``src``); judge the first hop: (seen, problems)."""
        self.t.wait(nce.SETTLE_S)
        src = src or self.tn1.offlink
        answer = self.fh.ask(src)
        seen = answer.describe(self.fh.names)
        if answer.mac != node.mac.lower():
            where = "nowhere" if answer.mac is None else f"to {self.fh.names.get(answer.mac, answer.mac)}"
            return seen, [f"the answer to {src} went {where}, not to {node.name} ({node.mac})"]
        return seen, []

    def discard_then_valid(self, seen, problems):
        """No vacuous PASS: once an invalid Redirect was discarded, a valid
        one (TR1: TN1 is on-link, with TN1's TLLA) must be followed, or the
        DUT may ignore every Redirect and the discard proves nothing.
        (seen, problems) in, (seen, problems) out, for ``t.conclude``."""
        if problems:
            return seen, problems
        self.t.send(self.redirect(target=self.tn1.offlink, tlla=self.tn1.mac),
                    label="valid Redirect from TR1: TN1 is on-link (its effect is required)")
        how, after = self.answer_via(self.tn1)
        if after:
            return (f"{seen}; after a valid Redirect: {how}",
                    [f"then a valid Redirect (TN1 on-link) was not followed either ({after[0]}): the DUT ignores "
                     f"every Redirect, so the discard proves nothing"])
        return f"{seen}; a valid Redirect afterwards was followed ({how})", []


def _options_parts(letters_globals, *, expect, fault):
    """Parts A-D (or A-H) over IPv6 destination x TLLA x Redirected Header."""
    parts = []
    combos = [(False, False), (False, True), (True, False), (True, True)]
    for i, (to_ll, (tlla, rh)) in enumerate([(ll, c) for ll in letters_globals for c in combos]):
        parts.append(Part(chr(ord("A") + i),
                          f"IPv6 Destination {'Link-local' if to_ll else 'Global'} (HUT), "
                          f"{'TLLA' if tlla else 'no TLLA'}, {'Redirected Header' if rh else 'no Redirected Header'}",
                          to_link_local=to_ll, tlla=tlla, rh=rh, expect=expect, fault=fault))
    return parts


# ================================================================================================
# Redirected on-link / to an alternate router: valid and suspicious (RFC 4861 §8.1, §8.3)
# ================================================================================================

@check(
    area="redirect",
    ipv6ready="v6LC.2.3.1",
    title="Redirected On-link: Valid (Hosts Only)",
    rfc="RFC 4861 §8.1, §8.3, §4.5",
    scope="host",
    needs=["exclusive_router"],
    liveness="echo",
    expect="after a valid Redirect whose Target is TN1's (off-link) Destination, the DUT treats TN1 as on-link: it "
           "answers TN1's next Echo Request directly to TN1's MAC (resolving TN1 first when there was no TLLA)",
    parts=_options_parts([False], expect=None, fault="dut_ignores_redirects"),
)
def redirect_to_on_link_destination_is_followed(t: CheckContext):
    """'If the Target Address is the same as the ICMP Destination Address,
    the destination is on-link' ... 'the host MUST update its Destination
    Cache so that subsequent traffic goes to the specified target' and
    treat the target as a neighbour (RFC 4861 §8.3, §4.5)."""
    b = RedirectBench(t)
    b.first_hop()
    t.send(b.redirect(target=b.tn1.offlink, tlla=b.tn1.mac if t.p.tlla else None, rh=t.p.rh,
                      to_link_local=t.p.to_link_local), label="Redirect from TR1: TN1 is on-link")
    return t.conclude(*b.answer_via(b.tn1))


@check(
    area="redirect",
    ipv6ready="v6LC.2.3.2",
    title="Redirected On-link: Suspicious (Hosts Only)",
    rfc="RFC 4861 §8.1, §8.3, §4.5, §4.6",
    scope="host",
    needs=["exclusive_router"],
    liveness="echo",
    fault="dut_ignores_redirects",
    expect="the Redirect is valid despite the oddity and is followed: the DUT answers TN1 directly",
    parts=[
        Part("A", "Option Unrecognized", how="unrecognized_option",
             expect="an unrecognized option is skipped (§4.6) and the Redirect followed: TN1 answered directly"),
        Part("B", "Reserved Field is Non-zero", how="reserved",
             expect="the Reserved field is ignored by receivers (§4.5) and the Redirect followed: TN1 answered "
                    "directly"),
        Part("C", "Target Address not Covered by On-link Prefix", how="not_on_link_prefix",
             expect="a Target equal to the Destination makes it on-link whatever the Prefix List says (§8.3): TN1 "
                    "answered directly"),
    ],
)
def suspicious_on_link_redirect_is_followed(t: CheckContext):
    """Receivers MUST ignore options they do not recognize and continue
    processing (§4.6) and MUST ignore the Reserved field (§4.5); a Target
    equal to the Destination redirects on-link even outside every on-link
    prefix (§8.3)."""
    b = RedirectBench(t)
    b.first_hop()
    fields = {"options": [unrecognized_option()]} if t.p.how == "unrecognized_option" else (
        {"reserved": 0xFFFFFFFF} if t.p.how == "reserved" else {})
    t.send(b.redirect(target=b.tn1.offlink, tlla=b.tn1.mac, **fields), label=f"Redirect from TR1 ({t.p.how})")
    return t.conclude(*b.answer_via(b.tn1))


@check(
    area="redirect",
    ipv6ready="v6LC.2.3.4",
    title="Redirected to Alternate Router: Valid (Hosts Only)",
    rfc="RFC 4861 §8.1, §8.3, §4.5",
    scope="host",
    needs=["exclusive_router"],
    liveness="echo",
    expect="after a valid Redirect whose Target is TR2's link-local address, the DUT answers TN1 through TR2",
    parts=_options_parts([False, True], expect=None, fault="dut_ignores_redirects"),
)
def redirect_to_alternate_router_is_followed(t: CheckContext):
    """'The Target Address ... is a better first hop ... MUST be a
    link-local address' when it is a router; the host updates its
    Destination Cache so that subsequent traffic to the Destination goes to
    the Target (RFC 4861 §8.3)."""
    b = RedirectBench(t, alternate=True)
    b.first_hop()
    t.send(b.redirect(target=b.tr2.link_local, tlla=b.tr2.mac if t.p.tlla else None, rh=t.p.rh,
                      to_link_local=t.p.to_link_local), label="Redirect from TR1: use TR2")
    return t.conclude(*b.answer_via(b.tr2))


@check(
    area="redirect",
    ipv6ready="v6LC.2.3.5",
    title="Redirected to Alternate Router: Suspicious (Hosts only)",
    rfc="RFC 4861 §8.1, §8.3, §4.5, §4.6",
    scope="host",
    needs=["exclusive_router"],
    liveness="echo",
    fault="dut_ignores_redirects",
    expect="the Redirect is valid despite the oddity and is followed: the DUT answers TN1 through TR2",
    parts=[
        Part("A", "Option Unrecognized", how="unrecognized_option"),
        Part("B", "Reserved Field is Non-zero", how="reserved"),
    ],
)
def suspicious_alternate_router_redirect_is_followed(t: CheckContext):
    """An unrecognized option is skipped (RFC 4861 §4.6) and a non-zero
    Reserved field ignored (§4.5): the Redirect to TR2 is still followed."""
    b = RedirectBench(t, alternate=True)
    b.first_hop()
    fields = {"options": [unrecognized_option()]} if t.p.how == "unrecognized_option" else {"reserved": 0xFFFFFFFF}
    t.send(b.redirect(target=b.tr2.link_local, tlla=b.tr2.mac, **fields), label=f"Redirect from TR1 ({t.p.how})")
    return t.conclude(*b.answer_via(b.tr2))


@check(
    area="redirect",
    ipv6ready="v6LC.2.3.7",
    title="Redirected Twice (Hosts Only)",
    rfc="RFC 4861 §8.1, §8.3",
    scope="host",
    needs=["exclusive_router"],
    liveness="echo",
    fault="dut_ignores_redirects",
    expect="TR1 redirects TN1's traffic to TR2, then TR2 (now the first hop for TN1) redirects it to TR3: the DUT "
           "answers TN1 through TR2, then through TR3",
)
def second_redirect_from_new_first_hop_is_followed(t: CheckContext):
    """A Redirect is valid only from 'the current first-hop router for the
    specified ICMP Destination Address' (RFC 4861 §8.1); after the first
    Redirect that is TR2, whose own Redirect must be followed (§8.3)."""
    b = RedirectBench(t, alternate=True)
    tr3 = b.fh.router("TR3")
    b.first_hop()
    t.send(b.redirect(target=b.tr2.link_local), label="Redirect from TR1: use TR2")
    seen1, problems = b.answer_via(b.tr2)
    if problems:
        return t.conclude(f"after the first Redirect: {seen1}", problems)
    t.send(b.redirect(target=tr3.link_local, sender=b.tr2), label="Redirect from TR2: use TR3")
    seen2, problems = b.answer_via(tr3)
    return t.conclude(f"after TR1's Redirect: {seen1}; after TR2's: {seen2}", problems)


@check(
    area="redirect",
    ipv6ready="v6LC.2.3.8",
    title="Invalid Option (Hosts Only)",
    rfc="RFC 4861 §8.1, §4.6",
    scope="host",
    needs=["exclusive_router"],
    liveness="echo",
    fault="dut_ignores_redirects",
    expect="options that do not belong in a Redirect are ignored and the rest of it processed: the DUT answers TN1 "
           "through TR2",
    parts=[
        Part("A", "Path MTU Option", option="mtu"),
        Part("B", "Prefix Information Option", option="prefix"),
        Part("C", "Source Link-layer Address Option", option="sllao"),
    ],
)
def redirect_with_foreign_option_is_followed(t: CheckContext):
    """'Receivers MUST silently ignore any options they do not recognize
    and continue processing the message' and options a message type does
    not use are ignored (RFC 4861 §8.1, §4.6): the Redirect to TR2 stands."""
    b = RedirectBench(t, alternate=True)
    b.first_hop()
    opt = {"mtu": ICMPv6NDOptMTU(mtu=1400), "prefix": prefix_option(b.fh.prefix),
           "sllao": ICMPv6NDOptSrcLLAddr(lladdr=b.tr1.mac)}[t.p.option]
    t.send(b.redirect(target=b.tr2.link_local, options=[opt]), label=f"Redirect from TR1 with a {t.p.option} option")
    return t.conclude(*b.answer_via(b.tr2))


@check(
    area="redirect",
    ipv6ready="v6LC.2.3.9",
    title="No Destination Cache Entry (Hosts Only)",
    rfc="RFC 4861 §8.3",
    scope="host",
    needs=["exclusive_router"],
    liveness="echo",
    fault="dut_ignores_redirects",
    expect="a Redirect for a destination the DUT has not sent to yet creates a Destination Cache entry: its first "
           "answer to TN1 goes through TR2",
)
def redirect_without_destination_cache_entry_is_followed(t: CheckContext):
    """'If no Destination Cache entry exists for the destination, an
    implementation SHOULD create such an entry' (RFC 4861 §8.3)."""
    b = RedirectBench(t, alternate=True)
    t.send(b.redirect(target=b.tr2.link_local, tlla=b.tr2.mac), label="Redirect from TR1 (no traffic to TN1 yet)")
    return t.conclude(*b.answer_via(b.tr2))


# ================================================================================================
# Invalid Redirects (RFC 4861 §8.1)
# ================================================================================================

INVALID = [
    ("A", "Redirect Source Address is Global", "global_source"),
    ("B", "Redirect Source Address is not the current first-hop router", "not_first_hop"),
    ("C", "Hop Limit is not 255", "hop_limit_254"),
    ("D", "ICMPv6 Code is not 0", "code_1"),
    ("E", "ICMPv6 Checksum is invalid", "bad_checksum"),
    ("F", "ICMPv6 Destination Address is Multicast", "multicast_destination"),
    ("G", "Target Address is Multicast", "multicast_target"),
    ("H", "ICMPv6 length is less than 40 Octets", "short_length"),
    ("I", "Option has Length Zero", "zero_length_option"),
]

_INVALID_WHY = {
    "global_source": "the IP Source Address must be a link-local address",
    "not_first_hop": "the IP source must be the current first-hop router for the Destination",
    "hop_limit_254": "the IP Hop Limit must be 255",
    "code_1": "the ICMP Code must be 0",
    "bad_checksum": "the ICMP checksum must be valid",
    "multicast_destination": "the ICMP Destination Address must not be multicast",
    "multicast_target": "the Target Address must be link-local (to a router) or the Destination (on-link)",
    "short_length": "the ICMP length must be 40 or more octets",
    "zero_length_option": "every included option must have a length greater than zero",
}

_INVALID_FAULT = {
    "global_source": "impostor_applies_redirect_without_validation",
    "not_first_hop": "impostor_applies_redirect_without_validation",
    "hop_limit_254": "dut_ignores_redirect_hop_limit",
    "code_1": "dut_ignores_redirect_code",
    "bad_checksum": "dut_ignores_redirect_checksum",
    "multicast_destination": "impostor_applies_redirect_without_validation",
    "multicast_target": "impostor_applies_redirect_without_validation",
    "short_length": "impostor_applies_redirect_without_validation",
    "zero_length_option": "dut_ignores_zero_length_redirect_option",
}


def _invalid_parts(consequence: str, uncontrollable: dict) -> list[Part]:
    return [Part(letter, title, how=how, expect=f"discarded ({_INVALID_WHY[how]}, RFC 4861 §8.1): {consequence}",
                 **({"uncontrollable": uncontrollable[how]} if how in uncontrollable
                    else {"fault": _INVALID_FAULT[how]}))
            for letter, title, how in INVALID]


def _invalid_redirect(b: RedirectBench, how: str, *, target: str, tlla: str, destination: str | None = None,
                      other_router=None):
    """A Redirect from TR1 made invalid in one way (RFC 4861 §8.1)."""
    dest = destination or b.tn1.offlink
    if how == "global_source":
        return b.redirect(target=target, tlla=tlla, destination=dest, src=b.tr1.global_addr)
    if how == "not_first_hop":
        return b.redirect(target=target, tlla=tlla, destination=dest, sender=other_router)
    if how in ("hop_limit_254", "code_1", "bad_checksum"):
        return break_one(b.redirect(target=target, tlla=tlla, destination=dest), ICMPv6ND_Redirect, how)
    if how == "multicast_destination":
        return b.redirect(target=target if target != dest else P.ALL_NODES, tlla=tlla, destination=P.ALL_NODES)
    if how == "multicast_target":
        return b.redirect(target=P.ALL_NODES, tlla=tlla, destination=dest)
    if how == "short_length":
        # ICMP length 39 < 40; the rest of the message (last octet of the Destination, TLLA) follows as a
        # link-layer trailer, as a parser that ignores the length would read it
        return break_one(b.redirect(target=target, tlla=tlla, destination=dest), ICMPv6ND_Redirect, how, length=39,
                         trailer="rest")
    if how == "zero_length_option":
        full = b.redirect(target=target, destination=dest)
        return P.icmpv6_from_bytes(full, bytes(full[ICMPv6ND_Redirect]) + zero_length_option()[:2]
                                   + bytes.fromhex(tlla.replace(":", "")))
    raise ValueError(how)


@check(
    area="redirect",
    ipv6ready="v6LC.2.3.3",
    title="Redirected On-link: Invalid (Hosts Only)",
    rfc="RFC 4861 §8.1",
    scope="host",
    needs=["exclusive_router"],
    liveness="echo",
    expect="the invalid Redirect is silently discarded: the DUT still answers TN1 through TR1",
    parts=_invalid_parts("TN1 is still answered through TR1",
                         {"multicast_destination": UNCONTROLLABLE_MULTICAST_DESTINATION}),
)
def invalid_on_link_redirect_is_ignored(t: CheckContext):
    """'A host MUST silently discard any received Redirect message that does
    not satisfy all of the following validity checks' (RFC 4861 §8.1).  The
    Redirect would otherwise make TN1 on-link (Target = Destination, with
    TN1's TLLA)."""
    b = RedirectBench(t)
    other = b.fh.router("TR2")
    b.first_hop()
    t.send(_invalid_redirect(b, t.p.how, target=b.tn1.offlink, tlla=b.tn1.mac, other_router=other),
           label=f"invalid Redirect ({t.p.how}): TN1 is on-link")
    return t.conclude(*b.discard_then_valid(*b.answer_via(b.tr1)))


@check(
    area="redirect",
    ipv6ready="v6LC.2.3.6",
    title="Redirected to Alternate Router: Invalid (Hosts Only)",
    rfc="RFC 4861 §8.1",
    scope="host",
    needs=["exclusive_router"],
    liveness="echo",
    expect="the invalid Redirect is silently discarded: the DUT still answers TN1 through TR1",
    parts=_invalid_parts("TN1 is still answered through TR1",
                         {"multicast_destination": UNCONTROLLABLE_MULTICAST_DESTINATION}),
)
def invalid_alternate_router_redirect_is_ignored(t: CheckContext):
    """RFC 4861 §8.1 validity checks for a Redirect that would otherwise send
    TN1's traffic to TR2 (with TR2's TLLA)."""
    b = RedirectBench(t, alternate=True)
    other = b.fh.router("TR3")
    b.first_hop()
    t.send(_invalid_redirect(b, t.p.how, target=b.tr2.link_local, tlla=b.tr2.mac, other_router=other),
           label=f"invalid Redirect ({t.p.how}): use TR2")
    return t.conclude(*b.discard_then_valid(*b.answer_via(b.tr1)))


@check(
    area="redirect",
    ipv6ready="v6LC.2.3.18",
    title="Fragmented Redirect is dropped",
    rfc="RFC 6980 §5",
    scope="host",
    needs=["exclusive_router"],
    liveness="echo",
    fault="dut_accepts_fragmented_nd",
    expect="a Redirect carried in IPv6 fragments is silently ignored: the DUT still answers TN1 through TR1",
)
def fragmented_redirect_is_ignored(t: CheckContext):
    """'...nodes MUST silently ignore ND messages if the packets carrying
    them include an IPv6 Fragmentation Header' (RFC 6980 §5).  The Redirect
    is valid otherwise (to TR2, with TR2's TLLA and the Redirected Header)."""
    b = RedirectBench(t, alternate=True)
    b.first_hop()
    for frag in nce.fragments(b.redirect(target=b.tr2.link_local, tlla=b.tr2.mac, rh=True), first=32):
        t.send(frag, label="fragment of a Redirect from TR1: use TR2")
    return t.conclude(*b.discard_then_valid(*b.answer_via(b.tr1)))


# ================================================================================================
# Neighbor Cache updates by Redirects (RFC 4861 §8.3)
# ================================================================================================

NC_VARIANTS = {
    # letter: (title, TLLA 'none'|'same'|'diff', Redirected Header False|True|'oversized')
    "no_entry": [("A", "No TLLA Option, No Redirected Packet Option, Link-layer Address Unchanged", "none", False),
                 ("B", "TLLA Option, No Redirected Packet Option, Link-layer Address Updated", "diff", False),
                 ("C", "TLLA Option, Redirected Packet Option, Link-layer Address Updated", "diff", True),
                 ("D", "TLLA Option, Oversized Redirected Packet Option, Link-layer Address Updated", "diff",
                  "oversized")],
    "cached": [("A", "No TLLA Option, No Redirected Packet Option, Link-layer Address Unchanged", "none", False),
               ("B", "TLLA Option, No Redirected Packet Option, Link-layer Address Unchanged", "same", False),
               ("C", "TLLA Option, No Redirected Packet Option, Link-layer Address Updated", "diff", False),
               ("D", "TLLA Option, Redirected Packet Option, Link-layer Address Updated", "diff", True),
               ("E", "TLLA Option, Oversized Redirected Packet Option, Link-layer Address Updated", "diff",
                "oversized")],
}


def redirect_nc_outcome(state: str, tlla: str) -> tuple[str, str]:
    """RFC 4861 §8.3 for the target's entry: (new state, 'old'|'new' address).
    'If a Neighbor Cache entry is created for the target, its reachability
    state MUST be set to STALE ... If a cache entry already existed and it is
    updated with a different link-layer address, its reachability state MUST
    also be set to STALE.  If the link-layer address is the same as that
    already in the cache, the cache entry's state remains unchanged.'"""
    if tlla == "none" or tlla == "same":
        return state, "old"
    return "stale", "new"


_UNCHANGED_FAULT = {
    "none": "impostor_redirect_creates_target_entry",
    "incomplete": "impostor_redirect_resolves_target",
    "reachable": "impostor_redirect_makes_target_stale",
    "stale": "impostor_redirect_confirms_stale_target",
    "probe": "impostor_redirect_confirms_probe_target",
}


def _nc_parts(state: str) -> list[Part]:
    parts = []
    for letter, title, tlla, rh in NC_VARIANTS["no_entry" if state in ("none", "incomplete") else "cached"]:
        new_state, lla = redirect_nc_outcome(state, tlla)
        words = {"none": "TR2 still has no entry: its Echo Request makes the DUT solicit it (multicast NS) first",
                 "incomplete": "TR2's entry stays INCOMPLETE: no Echo Reply reaches TR2 while the DUT keeps "
                               "soliciting it",
                 "reachable": "TR2's entry stays REACHABLE: its Echo Request is answered at once and no NS follows",
                 "stale": "TR2's entry is STALE with {lla}: its Echo Request is answered at once to that address, "
                          "then probed after DELAY_FIRST_PROBE_TIME",
                 "probe": "TR2's entry stays in PROBE: the DUT keeps probing the cached address"}[new_state]
        words = words.format(lla="the Redirect's TLLA" if lla == "new" else "the cached address")
        parts.append(Part(letter, title, tlla=tlla, rh=rh, expect=f"{words} (RFC 4861 §8.3)",
                          fault=_UNCHANGED_FAULT[state] if lla == "old" else "dut_ignores_redirects"))
    return parts


def _redirect_updates(t: CheckContext, state: str):
    """TR2's entry in ``state``; a valid Redirect (Destination TN2, Target
    TR2) from TR1 with the part's TLLA and Redirected Header; judge TR2's
    entry."""
    b = RedirectBench(t)
    tr2 = b.fh.router("TR2")
    tn2 = b.fh.offlink_node("TN2")
    b.first_hop(tn2.offlink)
    nb = Neighbour(t, tr2)
    named = tr2.mac.lower()
    nce.enter(nb, state)
    if tr2.mac.lower() != named:  # on a DUT the run does not rebuild, TR2 may be a router aged with an earlier part
        b.fh.names.pop(named, None)
        b.fh.name(tr2)
    other = nce.fresh_mac()
    tlla = {"none": None, "same": nb.mac, "diff": other}[t.p.tlla]
    since = t.send(b.redirect(target=tr2.link_local, destination=tn2.offlink, tlla=tlla, rh=t.p.rh),
                   label=f"Redirect from TR1: TN2 via TR2, TLLA {tlla or 'none'}, Redirected Header {t.p.rh}")
    new_state, lla = redirect_nc_outcome(state, t.p.tlla)
    expect = Expect(new_state, other if lla == "new" else nb.mac)
    if new_state == "incomplete":
        problems, seen = nce.judge_resolution_continues(nb, since)
    elif state == "incomplete":
        problems, seen = nce.judge_resolution_completed(nb, expect.lla, since, "stale", by="the Redirect's TLLA")
    elif new_state == "probe":
        problems, seen = nce.judge_probing_continues(nb, expect.lla, since)
    else:
        problems, seen = nce.judge_by_echo(nb, expect, since)
    text = f"TR2 {state.upper()}, Redirect sent; then {seen}"
    return t.conclude(text, problems)


def _nc_check(state: str, ipv6ready: str, title: str, doc_extra: str):
    def run(t: CheckContext):
        return _redirect_updates(t, state)

    run.__name__ = {"none": "redirect_creates_target_entry", "incomplete": "redirect_updates_incomplete_target",
                    "reachable": "redirect_updates_reachable_target", "stale": "redirect_updates_stale_target",
                    "probe": "redirect_updates_probe_target"}[state]
    run.__doc__ = ("'If the redirect contains a Target Link-Layer Address option, the host either creates or "
                   "updates the Neighbor Cache entry for the target.  In both cases, the cached link-layer address "
                   "is copied from the Target Link-Layer Address option.' (RFC 4861 §8.3) " + doc_extra)
    return check(area="redirect", ipv6ready=ipv6ready, title=title, rfc="RFC 4861 §8.3, §7.3.3", scope="host",
                 needs=["exclusive_router"], dut_config="nud-fast", liveness="echo",
                 expect="the Redirect updates the Target's Neighbor Cache entry as RFC 4861 §8.3 requires",
                 parts=_nc_parts(state), forms_addresses=False, concurrent_parts=True)(run)


redirect_creates_target_entry = _nc_check(
    "none", "v6LC.2.3.10", "Neighbor Cache Updated, No Neighbor Cache Entry (Hosts Only)",
    "Without a TLLA no entry is created (there is no address to cache).")
redirect_updates_incomplete_target = _nc_check(
    "incomplete", "v6LC.2.3.11", "Neighbor Cache Updated from State INCOMPLETE (Hosts Only)",
    "A TLLA completes a pending resolution (STALE, queued packets sent).")
redirect_updates_reachable_target = _nc_check(
    "reachable", "v6LC.2.3.12", "Neighbor Cache Updated from State REACHABLE (Hosts Only)",
    "The same address leaves a REACHABLE entry REACHABLE; a different one makes it STALE.")
redirect_updates_stale_target = _nc_check(
    "stale", "v6LC.2.3.13", "Neighbor Cache Updated from State STALE (Hosts Only)",
    "A Redirect is no reachability confirmation: a STALE entry stays STALE.")
redirect_updates_probe_target = _nc_check(
    "probe", "v6LC.2.3.14", "Neighbor Cache Updated from State PROBE (Hosts Only)",
    "The same address (or none) leaves an entry in PROBE probing; a different one makes it STALE.")


@check(
    area="redirect",
    ipv6ready="v6LC.2.3.15",
    title="Invalid Redirect does not Update Neighbor Cache (Hosts Only)",
    rfc="RFC 4861 §8.1, §8.3",
    scope="host",
    needs=["exclusive_router"],
    liveness="echo",
    expect="the invalid Redirect creates no entry for its Target: TR2's later Echo Request makes the DUT solicit TR2 "
           "(multicast NS) before answering",
    parts=_invalid_parts("no entry is created for TR2", {
        "multicast_target": "the Target is a multicast address, so the Redirect's TLLA could only create an entry "
                            "for that multicast address, which the DUT never resolves: a stack that skipped this "
                            "validity test behaves on the wire like one that discarded the Redirect"}),
)
def invalid_redirect_does_not_update_neighbor_cache(t: CheckContext):
    """RFC 4861 §8.1: an invalid Redirect is silently discarded, so its
    Target Link-Layer Address option must not create a Neighbor Cache entry
    for the Target (§8.3 applies only to valid Redirects)."""
    b = RedirectBench(t)
    tr2 = b.fh.router("TR2")
    tn2 = b.fh.offlink_node("TN2")
    other = b.fh.router("TR3")
    b.first_hop(tn2.offlink)
    nb = Neighbour(t, tr2)
    t.send(_invalid_redirect(b, t.p.how, target=tr2.link_local, tlla=nce.fresh_mac(), destination=tn2.offlink,
                             other_router=other),
           label=f"invalid Redirect ({t.p.how}): TN2 via TR2, with a TLLA")
    problems, seen = nce.judge_by_echo(nb, Expect("none"))
    return t.conclude(*b.discard_then_valid(f"TR2 had no entry, invalid Redirect sent; then {seen}", problems))


# ================================================================================================
# Routers (SKIP on hosts)
# ================================================================================================

@check(
    area="redirect",
    ipv6ready="v6LC.2.3.16",
    title="Redirect – Transmit (Routers Only)",
    rfc="RFC 4861 §8.2",
    scope="router",
    liveness="ns",
    expect="the router redirects a host on the link to a better first hop only when RFC 4861 §8.2 allows it",
    parts=[
        Part("A", "Send Redirect", how="on_link",
             expect="a Redirect to TN1 (hop limit 255, link-local source, at most 1280 octets): Target and "
                    "Destination TN2's address (TN2 is on TN1's link)"),
        Part("B", "Send Redirect to Alternate Router", how="alternate",
             expect="a Redirect to TN1 naming TR2's link-local address as Target for a destination the router "
                    "reaches through TR2"),
        Part("C", "Source not neighbor", how="source_off_link",
             expect="no Redirect: the packet's source address is not a neighbour's (§8.2)"),
        Part("D", "Destination Multicast", how="multicast",
             expect="no Redirect: the packet's destination is a multicast address (§8.2)"),
    ],
)
def router_sends_redirects_when_allowed(t: CheckContext):
    """'A router SHOULD send a redirect message ... if ... the Source Address
    of the packet identifies a neighbor, and the router determines (by
    means outside the scope of this specification) that a better first-hop
    node resides on the same link ... for the destination', and MUST NOT
    for multicast destinations (RFC 4861 §8.2).  TN1 sends through the
    router (its MAC) to a node on their common link."""
    if t.p.how == "alternate":
        raise NotApplicable("needs a route on the router to an off-link prefix via TR2, which v6gate cannot configure "
                            "through a control adapter; configure it and use part A's procedure by hand")
    tn1, tn2 = t.tn1, t.tn2
    dst = P.solicited_node(tn2.global_addr) if t.p.how == "multicast" else tn2.global_addr
    src = (P.address_in(fresh_prefix(avoid=t.target.link_prefix), P.random_iid()) if t.p.how == "source_off_link"
           else tn1.global_addr)
    req = (Ether(src=tn1.mac, dst=t.dut.mac) / IPv6(src=src, dst=dst, hlim=64)
           / ICMPv6EchoRequest(id=0x4ED1, seq=1, data=P.nonce(32)))

    def is_redirect(p):
        return ICMPv6ND_Redirect in p and P.same_address(p[ICMPv6ND_Redirect].dst, dst)

    if t.p.how in ("source_off_link", "multicast"):
        return t.expect_silence(req, is_redirect, what="Redirect")
    frame = t.expect_reply(req, is_redirect, what="Redirect")
    if frame is None:
        raise Deviation(f"no Redirect for {dst} after forwarding TN1's packet")
    rd = frame.pkt[ICMPv6ND_Redirect]
    problems = []
    if frame.pkt[IPv6].hlim != 255:
        problems.append(f"hop limit {frame.pkt[IPv6].hlim}, not 255")
    if not P.is_link_scoped(frame.pkt[IPv6].src):
        problems.append(f"source {frame.pkt[IPv6].src} is not link-local")
    if not P.same_address(rd.tgt, dst):
        problems.append(f"Target {rd.tgt}, not {dst}")
    if len(bytes(frame.pkt[IPv6])) > 1280:
        problems.append(f"{len(bytes(frame.pkt[IPv6]))} octets, more than 1280")
    return t.conclude(f"Redirect to {frame.pkt[IPv6].dst}: Target {rd.tgt}, Destination {rd.dst}", problems)


@check(
    area="redirect",
    ipv6ready="v6LC.2.3.17",
    title="Redirect – Receive (Routers Only)",
    rfc="RFC 4861 §8.1, §8.3",
    scope="router",
    liveness="ns",
    expect="the router does not act on a Redirect: TN2 (on its link) is still answered directly, not through the "
           "Redirect's Target",
)
def router_ignores_redirects(t: CheckContext):
    """Redirects tell hosts of a better first hop; §8.3 ('Host Specification')
    applies to hosts only and a router does not change its forwarding for
    one (RFC 4861 §8.1, §8.3)."""
    tn1, tn2 = t.tn1, t.tn2
    target = t.node("TR2", router=True)
    t.send(redirect(tn1, t.dut.mac, t.dut.link_local, target=target.link_local, destination=tn2.global_addr,
                    tlla=target.mac), label="Redirect from TN1 to the router: use TR2 for TN2")
    t.wait(nce.SETTLE_S)
    req = t.to_dut(tn2, t.dut.link_local, src=tn2.global_addr) / ICMPv6EchoRequest(id=0x4ED2, seq=1)
    frame = t.expect_reply(req, lambda p: ICMPv6EchoReply in p and p[ICMPv6EchoReply].id == 0x4ED2, what="Echo Reply")
    if frame is None:
        raise Deviation("no Echo Reply to TN2 after the Redirect")
    if frame.pkt[Ether].dst.lower() == target.mac.lower():
        raise Deviation("the router sent TN2's reply to TR2: it followed a Redirect")
    return t.conclude(f"Echo Reply to TN2 sent to {frame.pkt[Ether].dst}", [])
