"""Pure logic of the nd and redirect areas: the RFC 4861 update tables the
checks judge by, the packet builders and the lenient parser the reactive
lab faults use.  No lab, no root."""

from types import SimpleNamespace

import pytest
from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6ND_NA,
    ICMPv6ND_Redirect,
    ICMPv6NDOptDstLLAddr,
    IPv6,
    IPv6ExtHdrFragment,
)
from scapy.layers.l2 import Ether
from scapy.packet import Padding

from v6gate.checks.nd.na_processing import NA_VARIANTS, _na_fault, na_outcome
from v6gate.checks.nd.ns_processing import ns_outcome
from v6gate.checks.redirect import redirect_nc_outcome
from v6gate.lab.faults import load_faults
from v6gate.lab.impostor_rules import _kernel as K
from v6gate.net import packets as P
from v6gate.net.nodes import EmulatedNode
from v6gate.net.redirect import MIN_MTU, oversized_redirected, redirect
from v6gate.scenario import nce


# -- RFC 4861 §7.2.5 ---------------------------------------------------------------------------------
@pytest.mark.parametrize("s,o", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_na_without_entry_is_discarded(s, o):
    for tlla in ("none", "same", "diff"):
        assert na_outcome("none", s, o, tlla) == ("none", "old")


def test_na_in_incomplete_needs_tlla_and_follows_the_solicited_flag():
    assert na_outcome("incomplete", 1, 1, "none") == ("incomplete", "old")
    assert na_outcome("incomplete", 1, 0, "diff") == ("reachable", "new")
    assert na_outcome("incomplete", 0, 1, "diff") == ("stale", "new")


def test_override_clear_with_another_address():
    # §7.2.5 (a): REACHABLE becomes STALE without taking the address; (b) otherwise ignored
    assert na_outcome("reachable", 1, 0, "diff") == ("stale", "old")
    assert na_outcome("stale", 1, 0, "diff") == ("stale", "old")
    assert na_outcome("probe", 0, 0, "diff") == ("probe", "old")


def test_override_set_or_same_address():
    assert na_outcome("probe", 1, 1, "diff") == ("reachable", "new")
    assert na_outcome("stale", 0, 1, "diff") == ("stale", "new")
    assert na_outcome("reachable", 0, 1, "diff") == ("stale", "new")
    assert na_outcome("stale", 1, 0, "same") == ("reachable", "old")
    assert na_outcome("probe", 0, 1, "none") == ("probe", "old")
    assert na_outcome("reachable", 0, 0, "same") == ("reachable", "old")


def test_na_variants_are_the_18_parts_and_multicast_ones_unsolicited():
    assert [v[0] for v in NA_VARIANTS] == [chr(ord("A") + i) for i in range(18)]
    assert all(s == 0 for _, multicast, s, _, _ in NA_VARIANTS if multicast)
    assert len({v[1:] for v in NA_VARIANTS}) == 18


@pytest.mark.parametrize("state", ["reachable", "stale", "probe"])
def test_every_na_part_names_an_existing_fault(state):
    faults = load_faults()
    for _, multicast, s, o, tlla in NA_VARIANTS:
        assert _na_fault(state, multicast, s, o, tlla) in faults


# -- RFC 4861 §7.2.3 and §8.3 ------------------------------------------------------------------------------
def test_ns_updates():
    assert ns_outcome("none", "same") == ("stale", "new")
    assert ns_outcome("incomplete", "none") == ("incomplete", "old")
    assert ns_outcome("reachable", "same") == ("reachable", "old")
    assert ns_outcome("probe", "diff") == ("stale", "new")


def test_redirect_updates():
    assert redirect_nc_outcome("none", "none") == ("none", "old")
    assert redirect_nc_outcome("none", "diff") == ("stale", "new")
    assert redirect_nc_outcome("reachable", "same") == ("reachable", "old")
    assert redirect_nc_outcome("probe", "diff") == ("stale", "new")


# -- timers -------------------------------------------------------------------------------------------------
def test_nud_timing_from_target():
    t = SimpleNamespace(target=SimpleNamespace(extensions={"nd": {"delay_first_probe_time_s": 1}}, source="x"),
                        retrans_timer=0.1, reply_timeout=1.0)
    timing = nce.NudTiming.of(t)
    assert timing.delay_first_probe == 1.0
    # the shortest random ReachableTime must outlast DELAY_FIRST_PROBE_TIME
    assert nce.MIN_RANDOM_FACTOR * timing.short_reachable_ms / 1000 > timing.delay_first_probe
    assert timing.ageing(timing.short_reachable_ms) > nce.MAX_RANDOM_FACTOR * timing.short_reachable_ms / 1000
    t.target.extensions = {}
    assert nce.NudTiming.of(t).delay_first_probe == nce.DELAY_FIRST_PROBE_TIME
    nce.advertised_retrans(t, 1000)  # a check that advertised RetransTimer 1 s is judged with it
    assert nce.NudTiming.of(t).retrans == 1.0


def test_bad_delay_first_probe_time_is_a_one_line_usage_error():
    from v6gate.errors import UsageError

    t = SimpleNamespace(target=SimpleNamespace(extensions={"nd": {"delay_first_probe_time_s": "5s"}}, source="t.yaml"),
                        retrans_timer=1.0, reply_timeout=2.0)
    with pytest.raises(UsageError, match="delay_first_probe_time_s"):
        nce.NudTiming.of(t)


# -- builders ----------------------------------------------------------------------------------------------
def _na():
    node = EmulatedNode.fresh("TN1", "2001:db8:1::/64")
    return (Ether(src=node.mac, dst="02:00:00:00:00:02") / IPv6(src=node.link_local, dst="fe80::1", hlim=255)
            / ICMPv6ND_NA(S=1, O=1, tgt=node.link_local) / ICMPv6NDOptDstLLAddr(lladdr=node.mac))


def test_fragments_reassemble_to_the_message():
    na = _na()
    frags = nce.fragments(na, first=16)
    assert len(frags) == 2
    body = b"".join(bytes(f[IPv6ExtHdrFragment].payload) for f in frags)
    assert body == bytes(Ether(bytes(na))[IPv6].payload)
    assert frags[0][IPv6ExtHdrFragment].m == 1 and frags[1][IPv6ExtHdrFragment].offset == 2
    assert frags[0][IPv6ExtHdrFragment].id == frags[1][IPv6ExtHdrFragment].id


def test_redirect_stays_within_1280_octets_unless_oversized():
    router = EmulatedNode.fresh("TR1", "2001:db8:1::/64", router=True)
    inner = IPv6(src="2001:db8:1::2", dst="2001:db8:9::1") / ICMPv6EchoReply(data=b"x" * 1400)
    red = Ether(bytes(redirect(router, "02:00:00:00:00:02", "2001:db8:1::2", target="fe80::1",
                               destination="2001:db8:9::1", redirected=inner)))
    assert len(bytes(red[IPv6])) <= MIN_MTU
    assert red[ICMPv6ND_Redirect].tgt == "fe80::1"
    big = redirect(router, "02:00:00:00:00:02", "2001:db8:1::2", target="fe80::1", destination="2001:db8:9::1",
                   redirected=oversized_redirected(inner[IPv6], 1400), trim=False)
    assert len(bytes(big[IPv6])) > MIN_MTU
    assert len(bytes(big[ICMPv6ND_Redirect])) % 8 == 0


# -- the reactive faults' lenient parser --------------------------------------------------------------------
def test_lenient_parser_reads_past_the_icmp_length():
    na = _na()
    body = bytes(na[ICMPv6ND_NA])
    short = P.icmpv6_from_bytes(na, body[:20])
    short[IPv6].plen = 20
    frame = Ether(bytes(short / Padding(load=body[20:])))
    src, _dst, icmp = K.icmp_bytes(frame)
    assert K.addr(src) == na[IPv6].src
    assert icmp[0] == 136 and K.addr(icmp[8:24]) == na[ICMPv6ND_NA].tgt
    assert K.mac(K.options(icmp, 24)[2]) == na[ICMPv6NDOptDstLLAddr].lladdr


def test_lenient_parser_stops_at_a_zero_length_option():
    assert K.options(bytes([2, 0, 1, 2, 3, 4, 5, 6, 1, 1, 9, 9, 9, 9, 9, 9]), 0) == {}
    assert K.options(bytes([1, 1, 1, 2, 3, 4, 5, 6]), 0) == {1: bytes([1, 2, 3, 4, 5, 6])}


# -- STALE neighbours aged together for a check's next parts (external DUTs) -----------------------------
class _Session:
    """A run's session (the pool is kept per session)."""


class _StaleT:
    def __init__(self, session, part, clock, *, external=True, needs=frozenset()):
        from v6gate.core.check import Part

        self.session, self.part, self.clock = session, part, clock
        self.target = SimpleNamespace(external=external, link_prefix="2001:db8:1::/64", extensions={})
        self.check = SimpleNamespace(id="nd.na_updates_stale_entry", needs=needs,
                                     parts=[Part(x) for x in "ABCDE"])
        self.dut = SimpleNamespace(link_local="fe80::5054:ff:feab:cd02")
        self.port = SimpleNamespace(now=lambda: clock["now"])
        self.retrans_timer, self.reply_timeout, self.notes = 1.0, 1.0, []
        self.nd_advertised_retrans = None

    def collect(self, match, window, since=None):
        self.clock["now"] += window
        return []

    def note(self, m):
        self.notes.append(m)


def _stale_bench(monkeypatch):
    monkeypatch.setattr(nce, "set_nd_timers", lambda t, **kw: None)
    confirmed = []

    def reachable(nb):
        confirmed.append(nb.mac)
        return SimpleNamespace(time=nb.t.clock["now"])
    monkeypatch.setattr(nce, "reachable", reachable)
    return confirmed


def test_on_an_external_dut_later_parts_take_neighbours_aged_with_an_earlier_parts_own(monkeypatch):
    confirmed = _stale_bench(monkeypatch)
    session, clock = _Session(), {"now": 100.0}
    a = _StaleT(session, "A", clock)
    nb = nce.Neighbour(a, EmulatedNode.fresh("TN1", "2001:db8:1::/64"))
    nce.stale(nb)
    assert len(confirmed) == 1 + nce.STALE_POOL and clock["now"] >= 116.75  # its own and two more, aged once
    assert "with 2 more neighbour(s)" in " ".join(a.notes)
    for part, mac in (("B", confirmed[1]), ("C", confirmed[2])):
        clock["now"] += 6.0
        t = _StaleT(session, part, clock)
        before = clock["now"]
        nb = nce.Neighbour(t, EmulatedNode.fresh("TN1", "2001:db8:1::/64"))
        nce.stale(nb)
        assert nb.mac == mac and nb.node.mac.lower() == mac and nb.addr == nb.node.link_local
        assert clock["now"] == before and "aged to STALE with an earlier part" in t.notes[0]
    clock["now"] += 6.0
    d = _StaleT(session, "D", clock)
    nce.stale(nce.Neighbour(d, EmulatedNode.fresh("TN1", "2001:db8:1::/64")))  # the pool is empty: it ages its own
    assert len(confirmed) == 3 + 1 + 1  # ... and one more for part E, the last left


def test_aged_neighbours_are_not_kept_too_long_nor_on_a_dut_the_run_rebuilds(monkeypatch):
    confirmed = _stale_bench(monkeypatch)
    clock = {"now": 100.0}
    for t in (_StaleT(_Session(), "A", clock, external=False), _StaleT(_Session(), "A", clock, needs={"reset"})):
        nce.stale(nce.Neighbour(t, EmulatedNode.fresh("TN1", "2001:db8:1::/64")))
    assert len(confirmed) == 2  # no extra neighbour: the lab's DUT is rebuilt, a reset DUT forgets them
    session = _Session()
    nce.stale(nce.Neighbour(_StaleT(session, "A", clock), EmulatedNode.fresh("TN1", "2001:db8:1::/64")))
    clock["now"] += nce.STALE_POOL_MAX_AGE_S + 1
    late = _StaleT(session, "B", clock)
    nb = nce.Neighbour(late, EmulatedNode.fresh("TN1", "2001:db8:1::/64"))
    nce.stale(nb)
    assert nb.mac not in confirmed[2:5] and "waiting" in late.notes[0]  # too old to be sure: aged its own


def test_a_router_neighbour_takes_routers_aged_with_an_earlier_parts_own_and_a_host_never_does(monkeypatch):
    """The Redirect checks' TR2 is a router: the extras aged with it are routers, made REACHABLE by the same
    packets (``reachable``), and only a later part's router neighbour of the same name takes one."""
    confirmed = _stale_bench(monkeypatch)
    kinds = []
    real_fresh = EmulatedNode.fresh

    def fresh(name, prefix=None, *, router=False):
        kinds.append((name, router))
        return real_fresh(name, prefix, router=router)
    monkeypatch.setattr(EmulatedNode, "fresh", staticmethod(fresh))
    session, clock = _Session(), {"now": 100.0}
    a = _StaleT(session, "A", clock)
    nce.stale(nce.Neighbour(a, EmulatedNode.fresh("TR2", "2001:db8:1::/64", router=True)))
    assert len(confirmed) == 1 + nce.STALE_POOL
    assert kinds[1:] == [("TR2'1", True), ("TR2'2", True)]  # the extras: routers, as TR2 is
    clock["now"] += 6.0
    host = nce.Neighbour(_StaleT(session, "B", clock), EmulatedNode.fresh("TR2", "2001:db8:1::/64"))
    nce.stale(host)  # a host of the same name is not what the aged routers were: it ages its own
    assert host.mac not in confirmed[1:3] and host.mac == confirmed[3]
    clock["now"] += 6.0
    b = _StaleT(session, "C", clock)
    router = nce.Neighbour(b, EmulatedNode.fresh("TR2", "2001:db8:1::/64", router=True))
    nce.stale(router)
    assert router.mac == confirmed[1] and router.node.is_router and router.addr == router.node.link_local
    assert "aged to STALE with an earlier part" in b.notes[0]


def test_a_router_neighbour_on_its_global_address_is_never_pooled(monkeypatch):
    confirmed = _stale_bench(monkeypatch)
    node = EmulatedNode.fresh("TR2", "2001:db8:1::/64", router=True)
    nce.stale(nce.Neighbour(_StaleT(_Session(), "A", {"now": 100.0}), node, addr=node.global_addr))
    assert len(confirmed) == 1  # another address kind than the pool's (link-local to link-local): no extras


def test_a_step_for_the_parts_side_by_side_runs_once_and_each_takes_its_value():
    import threading

    from v6gate.core.together import Batch

    batch, ran, got = Batch(["A", "B", "C"]), [], {}
    ts = []
    for letter in "ABC":
        t = SimpleNamespace(together=batch, part=letter, notes=[])
        t.note = t.notes.append
        ts.append(t)

    def part(t):
        got[t.part] = nce.once_for_batch(t, "the DUT's global address", lambda: ran.append(t.part) or "2001:db8:1::2")
    threads = [threading.Thread(target=part, args=(t,)) for t in ts]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(ran) == 1 and got == dict.fromkeys("ABC", "2001:db8:1::2")
    others = [t for t in ts if t.part != ran[0]]
    assert all(f"by part {ran[0]} (2001:db8:1::2)" in t.notes[0] for t in others)
    alone = SimpleNamespace(together=None, part="D")
    assert nce.once_for_batch(alone, "x", lambda: 7) == 7  # on its own: the part runs the step
