"""A DUT the run cannot reset, with a bounded address table: a part whose
addresses cannot fit SKIPs with the reason (never a FAIL "formed no
address"); parts that leave addresses the run cannot take back run last; a
timed state one check leaves (MLDv1 compatibility) is waited out by the next
check unless the DUT is reset first."""

from __future__ import annotations

import ipaddress
import types

import pytest

from v6gate.core.check import Part
from v6gate.core.context import CheckContext, NotApplicable
from v6gate.core.ledger import AddressLedger
from v6gate.pytest_plugin import pytest_collection_modifyitems

A = ipaddress.IPv6Network("2001:db8:a::/64")
B = ipaddress.IPv6Network("2001:db8:b::/64")
C = ipaddress.IPv6Network("2001:db8:c::/64")


class _Port:
    def __init__(self):
        self.t = 1000.0

    def now(self):
        return self.t


def _ctx(slots: int, *, room_wait_s: float = 900):
    from v6gate.core.control import NoControl
    from v6gate.core.room import AddressTable

    ledger = AddressLedger()
    target = types.SimpleNamespace(dut_max_addresses=slots + 2, timing={"address_room_wait_s": room_wait_s},
                                   claims=lambda cap: False)
    port = _Port()
    # the DUT's table: slots + 2 (its link-local address and one in the link prefix: what it held when found)
    session = types.SimpleNamespace(ledger=ledger, settle={}, target=target, port=port, control=NoControl(),
                                    dut=types.SimpleNamespace(link_local="fe80::1"))
    session.table = AddressTable(session)
    ctx = CheckContext.__new__(CheckContext)
    ctx.session, ctx.target, ctx.port = session, target, port
    ctx.check, ctx.part, ctx.attempt = types.SimpleNamespace(id="slaac.x", area="slaac", any_address=False), "A", 1
    ctx.timeline, ctx.measurements, ctx.t0 = [], {}, 0.0
    ctx.wait = lambda s: setattr(ctx.port, "t", ctx.port.t + s)
    return ctx, ledger


def test_a_part_needing_more_addresses_than_the_table_holds_skips_with_the_reason():
    ctx, _ = _ctx(slots=2)
    with pytest.raises(NotApplicable) as exc:
        ctx.room.make_room([(A, 60), (B, 60), (C, 60)])
    assert "needs 3 address(es) at once" in str(exc.value) and "room for 2" in str(exc.value)


def test_a_table_full_of_addresses_the_run_cannot_take_back_skips_naming_them():
    ctx, ledger = _ctx(slots=2)
    ledger.advertise(A, 7300, "slaac.two_hour_rule#B", 1000.0)
    ledger.advertise(B, 0xFFFFFFFF, "slaac.prefix_option_processing#J", 1000.0)
    with pytest.raises(NotApplicable) as exc:
        ctx.room.make_room([(C, 60)])
    msg = str(exc.value)
    assert "is full of the run's earlier addresses" in msg and "slaac.two_hour_rule#B" in msg
    assert "RFC 4862 §5.5.3 e" in msg


def test_a_short_wait_is_still_waited_and_measured():
    ctx, ledger = _ctx(slots=1)
    ledger.advertise(A, 60, "slaac.other#A", 1000.0)
    ctx.room.make_room([(B, 60)])
    assert 60 <= ctx.measurements["address_room_wait_s"] <= 63
    assert ctx.port.t >= 1060


def test_a_wait_beyond_the_limit_skips():
    ctx, ledger = _ctx(slots=1, room_wait_s=30)
    ledger.advertise(A, 600, "slaac.other#A", 1000.0)
    with pytest.raises(NotApplicable, match="outlast 30 s"):
        ctx.room.make_room([(B, 60)])


def test_parts_that_leave_lasting_addresses_run_last_and_the_rest_keep_their_order():
    def item(name, lasting=False):
        part = Part("A", lasting=True) if lasting else Part("A")
        return types.SimpleNamespace(name=name, callspec=types.SimpleNamespace(params={"v6check": (None, part)}))

    items = [item("a"), item("j", True), item("b"), types.SimpleNamespace(name="plain"), item("d", True), item("c")]
    pytest_collection_modifyitems(None, None, items)
    assert [i.name for i in items] == ["a", "b", "plain", "c", "j", "d"]


def test_a_timed_state_is_kept_for_the_next_check_the_longest_wins():
    ctx, _ = _ctx(slots=2)
    ctx.dut_keeps_state(3.0, "MLDv1 compatibility")
    first = ctx.session.settle[frozenset()]
    ctx.dut_keeps_state(1.0, "shorter")
    assert ctx.session.settle == {frozenset(): first} and first[1] == "MLDv1 compatibility"


def _settle_ctx(area, waited):
    return types.SimpleNamespace(check=types.SimpleNamespace(area=area), note=lambda m: waited.append(m),
                                 measure=lambda k, v: waited.append((k, v)), wait=lambda s: waited.append(s))


def test_the_next_check_waits_out_the_state_and_notes_why(monkeypatch):
    from v6gate.core import session as S

    waited = []
    ctx = _settle_ctx("nd", waited)
    sess = S.Session.__new__(S.Session)
    monkeypatch.setattr(S.time, "monotonic", lambda: 100.0)
    sess.settle = {frozenset(): (102.5, "the DUT stays in MLDv1 compatibility mode")}
    sess._wait_for_settle(ctx)
    assert waited[0].startswith("waiting 2.5 s before the first probe: the DUT stays in MLDv1")
    assert waited[1:] == [("settle_wait_s", 2.5), 2.5] and sess.settle == {}
    sess.settle = {frozenset(): (99.0, "already over")}
    waited.clear()
    sess._wait_for_settle(ctx)
    assert waited == [] and sess.settle == {}


def test_a_state_that_matters_to_one_area_is_waited_out_only_by_its_checks(monkeypatch):
    from v6gate.core import session as S

    clock = {"now": 100.0}
    monkeypatch.setattr(S.time, "monotonic", lambda: clock["now"])
    waited = []
    sess = S.Session.__new__(S.Session)
    sess.settle = {frozenset({"mld"}): (113.0, "MLDv1 compatibility")}
    sess._wait_for_settle(_settle_ctx("nd", waited))
    assert waited == [] and frozenset({"mld"}) in sess.settle  # an nd check runs at once; MLD's state is kept
    clock["now"] = 105.0
    sess._wait_for_settle(_settle_ctx("mld", waited))
    assert waited[1:] == [("settle_wait_s", 8.0), 8.0] and sess.settle == {}
    sess.settle = {frozenset({"mld"}): (106.0, "MLDv1 compatibility")}
    clock["now"] = 107.0
    sess._wait_for_settle(_settle_ctx("nd", waited))
    assert sess.settle == {}  # over while other checks ran: forgotten


def test_an_mld_check_leaves_its_compatibility_mode_to_mld_checks_only():
    ctx, _ = _ctx(slots=2)
    ctx.dut_keeps_state(13.25, "MLDv1 compatibility", matters_to=("mld",))
    ctx.dut_keeps_state(2.0, "something every check must wait out")
    assert set(ctx.session.settle) == {frozenset({"mld"}), frozenset()}


class _RecordingPort(_Port):
    def __init__(self):
        super().__init__()
        self.sent, self.responders = [], []

    def send(self, pkt):
        self.sent.append(pkt)
        return self.now()

    def expect(self, match, within, since=None):
        return None

    def add_responder(self, r):
        self.responders.append(r)

    def remove_responder(self, r):
        self.responders.remove(r)


def _view(*, is_lab=False, other_routers=False):
    from v6gate.core.dut import DutView

    target = types.SimpleNamespace(link_prefix=ipaddress.IPv6Network("2001:db8:1::/64"), is_lab=is_lab,
                                   other_routers=other_routers, dut_mac="52:54:00:00:00:01",
                                   timing={"reply_timeout_s": 0.1}, dut_iid=None)
    return DutView(target, control=None, link_local="fe80::1", port=_RecordingPort())


def test_the_tester_as_only_router_gives_the_dut_its_link_prefix_and_is_no_default_router():
    from scapy.layers.inet6 import ICMPv6ND_RA, ICMPv6NDOptPrefixInfo

    from v6gate.core.dut import LINK_PREFIX_LIFETIME_S

    view = _view()
    assert view._advertise_link_prefix(view.prefix, None)
    (ra,) = view.port.sent
    assert ra[ICMPv6ND_RA].routerlifetime == 0
    pio = ra[ICMPv6NDOptPrefixInfo]
    assert (pio.prefix, pio.prefixlen, pio.A, pio.L) == ("2001:db8:1::", 64, 1, 1)
    assert pio.validlifetime == pio.preferredlifetime == LINK_PREFIX_LIFETIME_S
    assert view.port.responders == [] and view.link_prefix_advertised == 1000.0
    view.port.t += LINK_PREFIX_LIFETIME_S / 2 + 1
    assert view._link_prefix_due()


@pytest.mark.parametrize("kw, prefix", [({"is_lab": True}, "2001:db8:1::/64"), ({"other_routers": True},
                                                                                  "2001:db8:1::/64"),
                                        ({}, "2001:db8:9::/64")])
def test_the_tester_advertises_only_the_link_prefix_and_only_as_the_only_router(kw, prefix):
    view = _view(**kw)
    assert not view._advertise_link_prefix(ipaddress.IPv6Network(prefix), None)
    assert view.port.sent == []


def test_a_part_that_declares_more_addresses_than_fit_skips_before_sending_anything():
    ctx, _ = _ctx(slots=2)
    ctx.needs_addresses(2)
    with pytest.raises(NotApplicable, match=r"needs 3 address\(es\) at once.*room for 2"):
        ctx.needs_addresses(3)
    ctx.session = None  # no session (a hand-built context): no bound known, nothing to refuse
    ctx.needs_addresses(30)


def test_a_part_whose_own_addresses_fill_the_table_says_so():
    ctx, ledger = _ctx(slots=2)
    ledger.advertise(A, 60, "slaac.x#A", 1000.0)
    ledger.advertise(B, 60, "slaac.x#A", 1000.0)
    with pytest.raises(NotApplicable, match=r"this part needs 3 address\(es\) at once"):
        ctx.room.make_room([(C, 60)])


def test_before_a_router_check_the_link_prefix_is_withdrawn_and_given_back_after():
    from scapy.layers.inet6 import ICMPv6NDOptPrefixInfo

    view = _view()
    view.withdraw_link_prefix()
    assert view.port.sent == []  # the tester never gave it: nothing to take back
    view._advertise_link_prefix(view.prefix, None)
    view.withdraw_link_prefix()
    view.withdraw_link_prefix()  # once
    assert len(view.port.sent) == 2
    pio = view.port.sent[1][ICMPv6NDOptPrefixInfo]
    assert (pio.prefix, pio.L, pio.A, pio.validlifetime, pio.preferredlifetime) == ("2001:db8:1::", 1, 1, 0, 0)
    view._learned[str(view.prefix)] = "2001:db8:1::5054:ff:fe00:1"
    view.control = types.SimpleNamespace(addresses=lambda: [])
    view.target.dut_global = []
    # the router check itself owns the link prefix: its address is looked up, the prefix is not given back
    assert view.global_address() == "2001:db8:1::5054:ff:fe00:1"
    assert not view._advertise_link_prefix(view.prefix, None) and len(view.port.sent) == 2
    view.restore_link_prefix()  # before the next check that is not a router check
    view.restore_link_prefix()  # once
    assert len(view.port.sent) == 3
    assert view.port.sent[2][ICMPv6NDOptPrefixInfo].validlifetime > 0  # on-link and preferred again
    view.forget()
    assert view._learned == {} and view.link_prefix_advertised is None


def test_a_link_prefix_a_check_left_on_link_is_withdrawn_before_the_next_router_check():
    from scapy.layers.inet6 import ICMPv6NDOptPrefixInfo

    view = _view()
    view.link_prefix_left_on_link()  # a check's TR1 advertised it (L=1), the run itself never did
    view.withdraw_link_prefix()
    view.withdraw_link_prefix()  # once
    assert len(view.port.sent) == 1
    pio = view.port.sent[0][ICMPv6NDOptPrefixInfo]
    assert (pio.prefix, pio.L, pio.validlifetime) == ("2001:db8:1::", 1, 0)
    view._advertise_link_prefix(view.prefix, None)
    view.withdraw_link_prefix()
    view.link_prefix_left_on_link()  # after the run's own withdrawal, a router check left it on-link again
    view.withdraw_link_prefix()
    assert len(view.port.sent) == 4 and view.port.sent[3][ICMPv6NDOptPrefixInfo].validlifetime == 0
    view.restore_link_prefix()
    assert view.port.sent[4][ICMPv6NDOptPrefixInfo].validlifetime > 0  # given back once, as before
    view.forget()
    assert not view._left_on_link


def test_ra_parameters_a_check_set_are_restored_on_a_dut_the_run_does_not_reset():
    from scapy.layers.inet6 import ICMPv6ND_RA, ICMPv6NDOptMTU, IPv6
    from scapy.layers.l2 import Ether

    ctx, _ = _ctx(slots=2)
    ctx.port = _RecordingPort()
    ctx.target.link_mtu = 1500
    ctx._link_parameters = [set(), None]
    ra = (Ether(src="02:00:00:00:00:01") / IPv6(src="fe80::1", dst="ff02::1", hlim=255)
          / ICMPv6ND_RA(routerlifetime=0, reachabletime=500, chlim=0) / ICMPv6NDOptMTU(mtu=1280))
    ctx._advertised = {}
    ctx._remember_advertisement(ra)
    ctx.restore_link_parameters()
    (back,) = ctx.port.sent
    assert back[ICMPv6ND_RA].reachabletime == 30_000 and back[ICMPv6ND_RA].chlim == 0  # hop limit was not touched
    assert back[ICMPv6ND_RA].retranstimer == 0 and back[ICMPv6NDOptMTU].mtu == 1500
    assert back[ICMPv6ND_RA].routerlifetime == 0 and back[IPv6].src == "fe80::1"
    ctx.restore_link_parameters()
    assert len(ctx.port.sent) == 1  # once


def test_room_is_made_before_the_first_probe_without_skipping():
    ctx, ledger = _ctx(slots=1)
    ledger.advertise(A, 60, "slaac.other#A", 1000.0)
    ctx.make_room_first()
    assert ctx.port.t >= 1060 and "before the first probe" in ctx.timeline[-1][1]
    ledger.advertise(B, 0xFFFFFFFF, "slaac.other#J", ctx.port.t)
    ctx.make_room_first()  # cannot be made: the check may form no address, so it goes on


def test_an_ra_that_sets_only_the_values_restore_would_set_needs_no_restore():
    from scapy.layers.inet6 import ICMPv6ND_RA, IPv6
    from scapy.layers.l2 import Ether

    ctx, _ = _ctx(slots=2)
    ctx.port = _RecordingPort()
    ctx._link_parameters, ctx._advertised = [set(), None], {}
    ctx._remember_advertisement(Ether(src="02:00:00:00:00:01") / IPv6(src="fe80::1", dst="ff02::1", hlim=255)
                                / ICMPv6ND_RA(routerlifetime=0, chlim=64, reachabletime=30_000, retranstimer=0))
    ctx.restore_link_parameters()
    assert ctx.port.sent == []


class _OffLinkT:
    """What scenario.offlink.become_router asks of a check's context."""

    def __init__(self, *, any_address=True, external=True, small=True, held="2001:db8:1::5054:ff:feab:cd02"):
        from v6gate.net.nodes import EmulatedNode

        self.check = types.SimpleNamespace(any_address=any_address, id="pmtu.x")
        self.target = types.SimpleNamespace(external=external, link_prefix=ipaddress.IPv6Network("2001:db8:1::/64"))
        self.dut = types.SimpleNamespace(held_link_address=lambda: held)
        self.room = types.SimpleNamespace(small=lambda: small)
        self.tr1 = EmulatedNode.fresh("TR1", self.target.link_prefix, router=True)
        self.sent, self.notes, self.used_held_address = [], [], False

    def send(self, pkt, label=""):
        self.sent.append(pkt)
        return 0.0

    def wait(self, s):
        pass

    def note(self, m):
        self.notes.append(m)


def test_a_check_needing_any_address_uses_the_held_one_where_the_table_is_small():
    from scapy.layers.inet6 import ICMPv6NDOptPrefixInfo

    from v6gate.scenario.offlink import become_router

    t = _OffLinkT()
    path = become_router(t)
    assert path.dut == "2001:db8:1::5054:ff:feab:cd02" and t.used_held_address
    pio = t.sent[0][ICMPv6NDOptPrefixInfo]
    assert pio.A == 0 and pio.L == 1 and path.prefix == ipaddress.IPv6Network(f"{pio.prefix}/64")
    assert "address table is small" in t.notes[-1]


def test_a_check_needing_any_address_falls_back_to_the_held_one_when_its_prefix_forms_none(monkeypatch):
    from v6gate.core.verdict import NotJudged
    from v6gate.scenario import offlink

    def formed_none(t, prefix, **kw):
        raise NotJudged("global-address", "slaac.global_address_is_formed_and_probed#A", "no address")

    monkeypatch.setattr(offlink, "advertise_prefix", formed_none)
    t = _OffLinkT(small=False)
    assert offlink.become_router(t).dut == "2001:db8:1::5054:ff:feab:cd02" and t.used_held_address
    for other in (_OffLinkT(small=False, any_address=False), _OffLinkT(small=False, external=False),
                  _OffLinkT(small=False, held=None)):
        with pytest.raises(NotJudged):  # a check that needs its own address, the lab's DUT, nothing held known
            offlink.become_router(other)
        assert not other.used_held_address


def test_a_check_needing_any_address_makes_no_room_before_its_first_probe():
    ctx, ledger = _ctx(slots=1)
    ledger.advertise(A, 60, "slaac.other#A", 1000.0)
    ctx.check = types.SimpleNamespace(id="pmtu.x", area="pmtu", any_address=True)
    ctx.session.table._forming.add("pmtu.x")
    ctx.room.first()
    assert "address_room_wait_s" not in ctx.measurements and ctx.room.small()
    ctx.check = types.SimpleNamespace(id="pmtu.x", area="pmtu", any_address=False)
    ctx.room.first()
    assert ctx.measurements["address_room_wait_s"] >= 60
