"""Invalid and fragmented Neighbor Advertisements / Solicitations (RFC 4861 §7.1.2, RFC 6980 §5)."""


from scapy.layers.inet6 import ICMPv6ND_NA

from ...core.check import Part, check
from ...core.context import CheckContext
from ...net import packets as P
from ...net.mutate import break_one
from ...scenario import nce
from ...scenario.nce import Neighbour


def _invalid_na(nb: Neighbour, how: str):
    """An NA answering TN1's pending resolution (to all-nodes, S=0, O=1,
    TLLA) made invalid in one way (RFC 4861 §7.1.2)."""
    if how == "solicited_multicast":
        return nb.na(s=1, o=1, multicast=True)
    if how == "multicast_target":
        return nb.na(s=0, o=1, multicast=True, target=P.ALL_NODES)
    # short_length: ICMP length 20 < 24, the rest of the message following as a link-layer trailer (as a parser
    # that ignores the length would read it); zero_length_option: the TLLA option's length octet
    return break_one(nb.na(s=0, o=1, multicast=True), ICMPv6ND_NA, how, length=20, trailer="rest")


@check(
    area="nd",
    ipv6ready="v6LC.2.1.15",
    title="Invalid Neighbor Advertisement Handling",
    rfc="RFC 4861 §7.1.2",
    liveness="ns",
    expect="the invalid NA is silently discarded: TN1's entry stays INCOMPLETE, no Echo Reply reaches TN1 while the "
           "DUT keeps soliciting it",
    parts=[
        Part("A", "NUT receives invalid NA (Solicited Flag == 1)", how="solicited_multicast",
             expect="discarded: 'If the IP Destination Address is a multicast address the Solicited flag is zero'",
             fault="dut_accepts_solicited_multicast_na"),
        Part("B", "NUT receives invalid NA (Hop Limit == 254)", how="hop_limit_254",
             expect="discarded: the IP Hop Limit of an NA must be 255", fault="dut_ignores_na_hop_limit"),
        Part("C", "NUT receives invalid NA (Invalid Checksum)", how="bad_checksum",
             expect="discarded: the ICMP checksum must be valid", fault="dut_ignores_na_checksum"),
        Part("D", "NUT receives invalid NA (ICMP code != zero)", how="code_1",
             expect="discarded: the ICMP Code must be 0", fault="dut_ignores_na_code"),
        Part("E", "NUT receives invalid NA (ICMP length < 24 octets)", how="short_length",
             expect="discarded: the ICMP length (from the IP length) must be 24 or more octets",
             fault="impostor_applies_na_without_validation"),
        Part("F", "NUT receives invalid NA (Target Address is multicast)", how="multicast_target",
             expect="discarded: the Target Address must not be a multicast address",
             uncontrollable="an NA for a multicast target has no neighbour entry to change: a stack that skipped "
                            "this validity test would look up the multicast address, find nothing and behave on the "
                            "wire exactly like one that discarded it"),
        Part("G", "NUT receives invalid NA (Option of length 0)", how="zero_length_option",
             expect="discarded: every included option must have a length greater than zero",
             fault="dut_ignores_zero_length_na_option"),
    ],
)
def invalid_na_is_ignored(t: CheckContext):
    """'A node MUST silently discard any received Neighbor Advertisement
    messages that do not satisfy all of the following validity checks'
    (RFC 4861 §7.1.2).  The NA would otherwise complete TN1's pending
    address resolution, so acceptance shows as the queued Echo Reply."""
    nb = Neighbour(t, t.tn1)
    nce.incomplete(nb)
    since = t.send(_invalid_na(nb, t.p.how), label=f"invalid NA ({t.p.how}) from TN1")
    problems, seen = nce.judge_resolution_continues(nb, since)
    text = f"TN1 INCOMPLETE, invalid NA ({t.p.how}) sent; then {seen}"
    return t.conclude(text, problems)


@check(
    area="nd",
    ipv6ready="v6LC.2.1.22",
    title="Fragmented Neighbor Solicitation is dropped",
    rfc="RFC 6980 §5",
    liveness="echo",
    fault="dut_accepts_fragmented_nd",
    expect="no Neighbor Advertisement: a Neighbor Solicitation carried in IPv6 fragments is silently ignored",
)
def fragmented_ns_is_ignored(t: CheckContext):
    """'...nodes MUST silently ignore ND messages if the packets carrying
    them include an IPv6 Fragmentation Header' — with the SEND exception
    only (RFC 6980 §5).  The NS is valid otherwise (unicast, with SLLA)."""
    nb = Neighbour(t, t.tn1)
    frags = nce.fragments(nb.ns(multicast=False, sll=True))
    return t.expect_silence(frags, nb.is_na_for_me, what="Neighbor Advertisement to TN1")


@check(
    area="nd",
    ipv6ready="v6LC.2.1.23",
    title="Fragmented Neighbor Advertisement is dropped",
    rfc="RFC 6980 §5",
    liveness="ns",
    fault="dut_accepts_fragmented_nd",
    expect="the fragmented NA is ignored: TN1's entry stays INCOMPLETE, no Echo Reply reaches TN1 while the DUT keeps "
           "soliciting it",
)
def fragmented_na_is_ignored(t: CheckContext):
    """RFC 6980 §5: a Neighbor Advertisement in IPv6 fragments MUST be
    silently ignored.  Here it is a valid solicited NA (S=1, O=1, TLLA)
    that would otherwise complete TN1's pending address resolution."""
    nb = Neighbour(t, t.tn1)
    nce.incomplete(nb)
    since = t.now()
    for frag in nce.fragments(nb.na(s=1, o=1)):
        t.send(frag, label="fragment of a solicited NA from TN1")
    problems, seen = nce.judge_resolution_continues(nb, since)
    text = f"TN1 INCOMPLETE, fragmented NA sent; then {seen}"
    return t.conclude(text, problems)
