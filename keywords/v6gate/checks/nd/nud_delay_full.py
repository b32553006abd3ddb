"""Full profile: the protocol's own NUD delay (RFC 4861 §10), without the lab's shortened timer."""



from ...core.check import check
from ...core.context import CheckContext
from ...scenario import nce
from ...scenario.nce import Neighbour, NudTiming


@check(
    area="nd",
    title="NUD waits DELAY_FIRST_PROBE_TIME before probing (protocol default)",
    rfc="RFC 4861 §7.3.3, §10",
    profile="full",
    liveness="ns",
    fault="dut_probes_without_delay",
    expect="in the DUT's default configuration, the first unicast probe of an entry put in DELAY follows the packet "
           "by DELAY_FIRST_PROBE_TIME (5 s, RFC 4861 §10), not earlier (k/n trials)",
)
def first_probe_waits_delay_first_probe_time(t: CheckContext):
    """'...sets a timer to expire in DELAY_FIRST_PROBE_TIME seconds.  If the
    entry is still in the DELAY state when the timer expires, the entry's
    state changes to PROBE' (RFC 4861 §7.3.3) with DELAY_FIRST_PROBE_TIME
    = 5 seconds (§10).  The DELAY gives upper layers the chance to confirm
    reachability before the network is probed; the default-profile checks
    use the lab's shortened value, this one the protocol's."""
    timing = NudTiming.of(t)
    dfp = nce.DELAY_FIRST_PROBE_TIME

    def once(i):
        nb = Neighbour(t, t.node(f"TN1-{i + 1}"))
        nce.incomplete(nb)
        since = t.send(nb.na(s=0, o=1), label="unsolicited NA from TN1 (S=0 O=1 TLLA): entry STALE")
        reply = t.port.expect(t.from_dut(nb.is_reply), t.reply_timeout, since=since)
        if reply is None:
            return False, "no Echo Reply after TN1's NA (§7.2.5: STALE, queued packet sent)"
        probe = t.port.expect(t.from_dut(nb.is_unicast_ns_for_me), dfp + timing.retrans + timing.reply,
                              since=reply.time)
        if probe is None:
            return False, f"no unicast probe within {dfp + timing.retrans + timing.reply:g} s of the Echo Reply"
        delay = probe.time - reply.time
        seen = f"first probe {delay:.2f} s after the Echo Reply"
        if delay < 0.9 * dfp:
            return False, f"{seen}: earlier than DELAY_FIRST_PROBE_TIME ({dfp:g} s)"
        return True, seen

    return nce.trials(t, once)
