"""A DUT's address table nobody declared (core/room.py): the run counts the
addresses it made the DUT form (its DAD probes), suspects a full table when
a part's fresh prefix forms nothing while the DUT holds the run's earlier
addresses, and from the retry that forms its address knows the size; a
part whose addresses cannot fit a discovered table is NOT_JUDGED with the
reason (a declared one SKIPs)."""

from __future__ import annotations

import ipaddress
import types

import pytest

from v6gate.core.context import NotApplicable
from v6gate.core.control import NoControl
from v6gate.core.ledger import AddressLedger
from v6gate.core.observer import DutObserver
from v6gate.core.room import AddressTable
from v6gate.core.verdict import NotJudged, Outcome, Verdict
from v6gate.net.port import Frame

MAC = "52:54:00:00:00:01"
A, B, C = (ipaddress.IPv6Network(f"2001:db8:{n}::/64") for n in "abc")


def _dad_frame(t: float, address: str, mac: str = MAC) -> Frame:
    from scapy.layers.inet6 import ICMPv6ND_NS, IPv6
    from scapy.layers.l2 import Ether

    pkt = Ether(src=mac, dst="33:33:ff:00:00:01") / IPv6(src="::", dst="ff02::1:ff00:1", hlim=255) / ICMPv6ND_NS(
        tgt=address)
    return Frame(t, bytes(pkt), 0)


def _setup(declared=None, *, other_routers=True):
    clock = types.SimpleNamespace(t=1000.0)
    port = types.SimpleNamespace(now=lambda: clock.t)
    target = types.SimpleNamespace(dut_max_addresses=declared, timing={"address_room_wait_s": 900},
                                   claims=lambda cap: False, other_routers=other_routers, is_lab=False)
    session = types.SimpleNamespace(ledger=AddressLedger(), target=target, port=port, control=NoControl(),
                                    dut=types.SimpleNamespace(link_local="fe80::1", link_prefix_advertised=None),
                                    observer=DutObserver(MAC))
    session.table = AddressTable(session)
    return session, clock


def _ctx(session, clock, part="A", check="slaac.x"):
    ctx = types.SimpleNamespace(check=types.SimpleNamespace(id=check, area="slaac"), part=part, attempt=1,
                                fresh=[], timeline=[], measurements={}, port=session.port)
    ctx._owner = f"{check}#{part}"
    ctx.note = lambda msg: ctx.timeline.append(msg)
    ctx.wait = lambda s: setattr(clock, "t", clock.t + s)
    return ctx


def _advertise(session, ctx, net, clock, *, probed: bool):
    held = {e.prefix for e in session.ledger.live(clock.t)}
    session.ledger.advertise(net, 60, ctx._owner, clock.t)
    session.table.fresh(ctx, [(net, 60)], clock.t, held)
    if probed:
        session.observer(None, _dad_frame(clock.t + 0.5, str(net.network_address + 1)))


def test_a_prefix_that_formed_nothing_leaves_the_ledger_and_one_that_formed_is_counted():
    session, clock = _setup()
    ctx = _ctx(session, clock)
    _advertise(session, ctx, A, clock, probed=True)
    _advertise(session, ctx, B, clock, probed=False)
    unformed = session.table.settle(ctx)
    assert [f.prefix for f in unformed] == [B]
    assert [e.prefix for e in session.ledger.live(clock.t)] == [A] and session.ledger.live(clock.t)[0].formed
    assert session.table.formed == 1


def test_a_dut_never_seen_probing_tells_nothing():
    session, clock = _setup()
    ctx = _ctx(session, clock)
    _advertise(session, ctx, A, clock, probed=False)
    assert session.table.settle(ctx) == []
    assert [e.prefix for e in session.ledger.live(clock.t)] == [A]  # it may hold an address there: kept


def test_a_fresh_prefix_that_forms_nothing_while_the_run_holds_addresses_is_a_suspected_full_table():
    session, clock = _setup()
    first = _ctx(session, clock, part="A")
    _advertise(session, first, A, clock, probed=True)
    _advertise(session, first, B, clock, probed=True)
    session.table.settle(first)
    clock.t += 5
    later = _ctx(session, clock, part="B")
    _advertise(session, later, C, clock, probed=False)
    unformed = session.table.settle(later)
    fail = Outcome(Verdict.FAIL, "no DAD probe", problems=["no DAD probe"])
    suspicion = session.table.suspect(later, fail, unformed)
    assert suspicion is not None and suspicion.held == 2 and suspicion.size == 4  # 2 + its own 2
    assert session.table.suspect(later, Outcome(Verdict.PASS, "fine"), unformed) is None  # a PASS needs no retry
    wait = session.table.room_for_retry(later, suspicion)
    assert 55 <= wait <= 65  # the run's two addresses expire first
    session.table.confirm("slaac.x#B", suspicion)
    assert session.table.discovered == 4 and session.table.found_at == "slaac.x#B"
    assert session.table.slots() == 2
    summary = session.table.summary()
    assert summary["parts_needing_discovered_limit"] == 1 and summary["by_how"] == {"retried": 1}
    assert "formed no address in 2001:db8:c::/64 while the DUT held 2" in summary["evidence"]


def test_an_address_the_dut_gave_up_as_a_duplicate_does_not_make_the_table_seem_larger():
    """A DAD test's duplicate: the DUT probed it (formed) and gave it up; Linux deletes it.  Counted, the table
    of 4 would seem to hold 5, and a part needing 3 addresses at once would run (and lose one of its own to the
    wait for room); left out, the size is the smaller one the evidence allows."""
    session, clock = _setup()
    first = _ctx(session, clock, part="A")
    for net in (A, B, ipaddress.IPv6Network("2001:db8:d::/64")):
        _advertise(session, first, net, clock, probed=True)
    session.table.settle(first)
    session.ledger.mark_duplicate(ipaddress.IPv6Network("2001:db8:d::/64"))  # t.room.duplicate(prefix)
    session.ledger.advertise(ipaddress.IPv6Network("2001:db8:d::/64"), 0, first._owner, clock.t)  # its withdrawal
    clock.t += 5
    later = _ctx(session, clock, part="B")
    _advertise(session, later, C, clock, probed=False)
    fail = Outcome(Verdict.FAIL, "no DAD probe", problems=["no DAD probe"])
    suspicion = session.table.suspect(later, fail, session.table.settle(later))
    assert suspicion is not None and suspicion.held == 2 and suspicion.size == 4, suspicion
    # for room it still counts (a stack may keep its DADFAILED entry in the table): the retry waits for all three
    assert len(session.ledger.live(clock.t)) == 3
    # a table that held only addresses given up as duplicates: they must have held its slots (lwIP), as before
    session, clock = _setup()
    first = _ctx(session, clock, part="A")
    _advertise(session, first, A, clock, probed=True)
    session.table.settle(first)
    session.ledger.mark_duplicate(A)
    later = _ctx(session, clock, part="B")
    _advertise(session, later, C, clock, probed=False)
    suspicion = session.table.suspect(later, fail, session.table.settle(later))
    assert suspicion is not None and suspicion.held == 1 and suspicion.size == 3


def test_a_dut_the_tester_had_not_given_the_link_prefix_yet_is_sized_without_that_address():
    """With no control adapter the run assumes the DUT holds its link-local address and one in the link
    prefix; where the tester is the only router and had not advertised the link prefix yet, the DUT held
    no address there, and the table (4 on the lab's bounded Linux) would seem to hold 5."""
    for given, size in ((None, 4), (900.0, 5)):  # not given yet / given before the part's RA
        session, clock = _setup(other_routers=False)
        session.dut.link_prefix_advertised = given
        first = _ctx(session, clock, part="A")
        for net in (A, B, ipaddress.IPv6Network("2001:db8:d::/64")):
            _advertise(session, first, net, clock, probed=True)
        session.table.settle(first)
        later = _ctx(session, clock, part="B")
        _advertise(session, later, C, clock, probed=False)
        fail = Outcome(Verdict.FAIL, "no DAD probe", problems=["no DAD probe"])
        suspicion = session.table.suspect(later, fail, session.table.settle(later))
        assert suspicion is not None and suspicion.size == size, (given, suspicion)
        session.table.confirm("slaac.x#B", suspicion)
        assert session.table.slots() == size - 2  # room still counts the address in the link prefix it will get


def test_no_suspicion_when_the_run_held_nothing():
    session, clock = _setup()
    ctx = _ctx(session, clock)
    session.observer(None, _dad_frame(clock.t - 100, "fe80::1"))  # it probes its addresses
    _advertise(session, ctx, A, clock, probed=False)
    unformed = session.table.settle(ctx)
    assert session.table.suspect(ctx, Outcome(Verdict.FAIL, "x", problems=["x"]), unformed) is None


def test_a_discovered_table_that_cannot_fit_a_part_is_not_judged_and_a_declared_one_skips():
    session, clock = _setup()
    session.table.discovered, session.table.found_at = 3, "slaac.x#B"
    ctx = _ctx(session, clock, part="C")
    with pytest.raises(NotJudged) as exc:
        session.table.needs(ctx, 2)
    assert exc.value.name == "address-room" and exc.value.judged_by == "slaac.x#B"
    assert "has room for 1" in exc.value.detail
    assert session.table.parts == {"slaac.x#C": "not judged"}
    declared, clock2 = _setup(declared=3)
    with pytest.raises(NotApplicable):
        declared.table.needs(_ctx(declared, clock2), 2)


def test_a_wait_for_room_in_a_discovered_table_is_counted():
    session, clock = _setup()
    session.table.discovered, session.table.found_at = 3, "slaac.x#B"
    session.ledger.advertise(A, 60, "slaac.x#A", clock.t)
    session.ledger.mark_formed(A)
    ctx = _ctx(session, clock, part="D")
    session.table.make_room(ctx, [(B, 60)])
    assert clock.t >= 1060 and session.table.parts == {"slaac.x#D": "waited"}
    assert ctx.measurements["address_room_wait_s"] >= 60


def test_a_check_whose_ras_form_no_address_waits_for_no_room_first_and_is_held_to_it():
    from v6gate.core.room import AddressRoom
    from v6gate.net.nd import prefix_option, router_advertisement
    from v6gate.net.nodes import EmulatedNode

    session, clock = _setup()
    session.table.discovered, session.table.found_at = 3, "slaac.x#B"
    session.ledger.advertise(A, 60, "slaac.x#A", clock.t)
    session.ledger.mark_formed(A)
    for declared, waits in ((None, True), (False, False)):  # an rd check: by its area / declared
        ctx = _ctx(session, clock, part="D", check="rd.y")
        ctx.check.forms_addresses, ctx.check.any_address = declared, False
        start = clock.t
        session.table.make_room_first(ctx)
        assert (clock.t > start) == waits, declared
        session.ledger.advertise(A, 60, "slaac.x#A", clock.t)  # full again
    tr = EmulatedNode.fresh("TR1", ipaddress.IPv6Network("2001:db8:1::/64"), router=True)
    ctx.target = types.SimpleNamespace(link_prefix=ipaddress.IPv6Network("2001:db8:1::/64"))
    assert AddressRoom(ctx).before_send(router_advertisement(tr, router_lifetime=0, cur_hop_limit=99)) == []
    with pytest.raises(RuntimeError, match="declares forms_addresses=False"):
        AddressRoom(ctx).before_send(router_advertisement(tr, prefixes=[prefix_option(B, valid=60, preferred=60)]))


def test_the_observer_keeps_only_the_current_boots_probes():
    obs = DutObserver(MAC)
    obs(None, _dad_frame(10.0, "fe80::1"))
    obs(None, _dad_frame(11.0, "2001:db8:a::1", mac="52:54:00:00:00:02"))  # another node's
    assert obs.did_dad().address == "fe80::1"
    assert obs.probed_in(A, 0.0) == []
    obs.reset(20.0)
    assert obs.did_dad() is None
    obs(None, _dad_frame(21.0, "2001:db8:a::1"))
    assert obs.probed_in(A, 20.5) == ["2001:db8:a::1"] and obs.probed_in(A, 21.5) == []
