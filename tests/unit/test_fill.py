"""Other parts while a part waits for room in the DUT's address table
(core/fill.py, Plan.ahead, AddressTable.wait_before): pure logic; the
packets are proven by the external runs (docs/writing-checks.md)."""

import ipaddress
from types import SimpleNamespace

from v6gate.core import fill
from v6gate.core.check import Check, Part
from v6gate.core.ledger import AddressLedger
from v6gate.core.room import AddressTable
from v6gate.core.together import Plan


def _check(cid, n=1, **kw):
    return Check(id=cid, area=cid.split(".")[0], title=cid, rfc="RFC 4861", expect="x", func=lambda t: None,
                 parts=tuple(Part(chr(65 + i), **({"lasting": True} if kw.pop("lasting", False) else {}))
                             for i in range(n)), **kw)


class _Port:
    def __init__(self):
        self.t = 100.0

    def now(self):
        return self.t


class _Control:
    def addresses(self):
        return ["fe80::1", "2001:db8:1::1"]  # the DUT's own: its link-local and one in the link prefix


def _session(max_addresses=None, discovered=None):
    target = SimpleNamespace(dut_max_addresses=max_addresses, claims=lambda cap: False, other_routers=False,
                             is_lab=False)
    s = SimpleNamespace(target=target, ledger=AddressLedger(), port=_Port(), control=_Control(),
                        dut=SimpleNamespace(link_local="fe80::1", link_prefix_advertised=0.0), bench_lost=None,
                        liveness=SimpleNamespace(dead=None), plan=None, settle={})
    s.settle_left = lambda area: max([u - s.port.now() for areas, (u, _) in s.settle.items()
                                      if not areas or area in areas] + [0.0])
    s.table = AddressTable(s)
    s.table.discovered = discovered
    return s


def _fill_ledger(s, owner, expires_in):
    for i, left in enumerate(expires_in):
        s.ledger.inherit(ipaddress.IPv6Network(f"2001:db8:{i + 10:x}::/64"), s.port.now() + left, owner)


def test_a_part_of_a_forming_area_waits_for_the_first_address_to_expire_and_others_do_not():
    s = _session(discovered=4)  # 2 slots beside the DUT's own 2 addresses
    _fill_ledger(s, "slaac.earlier#A", [7.0, 30.0])
    slaac, nd, declared = _check("slaac.x"), _check("nd.y"), _check("rd.z", forms_addresses=False)
    assert s.table.wait_before(slaac, "A") == 7.0
    assert s.table.wait_before(nd, "A") == 0.0  # nd forms no address by area
    assert s.table.wait_before(declared, "A") == 0.0  # declared: its RAs form none
    assert s.table.forms_addresses(slaac) is True and s.table.forms_addresses(declared) is False
    assert s.table.forms_addresses(nd) is None  # only running it would tell
    s.table._forming.add("nd.y")  # an earlier part of it did
    assert s.table.forms_addresses(nd) is True and s.table.wait_before(nd, "B") == 7.0


def test_no_bound_known_means_no_wait():
    s = _session()
    _fill_ledger(s, "slaac.earlier#A", [7.0, 30.0, 40.0])
    assert s.table.wait_before(_check("slaac.x"), "A") == 0.0


def test_the_plan_gives_the_next_part_that_fits_once():
    a, b, c = _check("slaac.a", 2), _check("nd.b", 2), _check("icmpv6.c", 1)
    plan = Plan([(a, a.parts[0]), (b, b.parts[0]), (a, a.parts[1]), (b, b.parts[1]), (c, c.parts[0])],
                external=True)
    not_slaac = lambda c2, p2: c2.area != "slaac"  # noqa: E731
    assert plan.ahead(a, a.parts[0], not_slaac) == (b, b.parts[0])
    assert plan.ahead(a, a.parts[0], not_slaac) == (b, b.parts[1])  # the first was taken
    plan.keep(b, b.parts[0], ("kept",))
    assert plan.ahead(a, a.parts[0], not_slaac) == (c, c.parts[0])
    assert plan.ahead(a, a.parts[0], not_slaac) is None
    assert plan.take(b, b.parts[0]) == ("kept",)
    assert plan.ahead(b, b.parts[1], lambda *_: True) is None  # nothing after the last part is left
    assert plan.ahead(_check("ipv6.unplanned"), Part("A"), lambda *_: True) is None


def test_a_part_moves_only_from_another_check_of_an_unspread_area_that_needs_no_room():
    s = _session(discovered=4)
    _fill_ledger(s, "slaac.earlier#A", [7.0, 30.0])
    waiting = _check("slaac.x")
    movable = lambda c2, p=None: fill.movable(s, waiting, c2, p or c2.parts[0])  # noqa: E731
    assert movable(_check("nd.y")) and movable(_check("redirect.y")) and movable(_check("ipv6.y"))
    assert not movable(_check("slaac.x"))  # its own check keeps its order
    assert not movable(_check("rd.y"))  # forms addresses (and its order is spread)
    assert not movable(_check("mld.y", forms_addresses=False))  # MLD's order times the DUT's MLDv1 mode
    assert not movable(_check("nd.lasting", lasting=True))  # leaves an address the run cannot take back: runs last
    assert not movable(_check("nd.reset", needs=("reset",)))
    s.table._forming.add("icmpv6.formed")
    assert not movable(_check("icmpv6.formed"))


def test_while_the_part_would_wait_the_next_movable_parts_run_ahead_and_then_it_runs():
    s = _session(discovered=4)
    _fill_ledger(s, "slaac.earlier#A", [5.0, 30.0])
    slaac, nd, rd, ipv6 = _check("slaac.x"), _check("nd.y", 2), _check("rd.z"), _check("ipv6.w")
    order = [(slaac, slaac.parts[0]), (rd, rd.parts[0]), (nd, nd.parts[0]), (nd, nd.parts[1]), (ipv6, ipv6.parts[0])]
    s.plan = Plan(order, external=True)
    ran = []

    def run_ahead(c, p, waiting, until="its first probe"):
        ran.append(f"{c.id}#{p.letter}")
        s.port.t += 2.0  # each part takes 2 s
        s.plan.keep(c, p, ("done",))

    s.run_ahead = run_ahead
    fill.before(s, slaac, slaac.parts[0])
    assert ran == ["nd.y#A", "nd.y#B"]  # 5 s of wait: two parts of 2 s, then 1 s is left (< FILL_MIN_S)
    assert s.plan.take(nd, nd.parts[0]) == ("done",)

    s2 = _session(max_addresses=4)  # a declared table: every check makes room first, so every part would wait
    _fill_ledger(s2, "slaac.earlier#A", [5.0, 30.0])
    s2.plan, s2.run_ahead = Plan(order, external=True), run_ahead
    ran.clear()
    fill.before(s2, slaac, slaac.parts[0])
    assert ran == []


def test_a_part_that_would_wait_out_a_timed_state_lets_the_others_run_first():
    s = _session()
    mld, nd, mld2 = _check("mld.x"), _check("nd.y", 3), _check("mld.z")
    s.settle[frozenset({"mld"})] = (s.port.now() + 4.5, "MLDv1 compatibility mode")
    s.plan = Plan([(mld, mld.parts[0]), (mld2, mld2.parts[0]), (nd, nd.parts[0]), (nd, nd.parts[1]),
                   (nd, nd.parts[2])], external=True)
    ran = []

    def run_ahead(c, p, waiting, until="its first probe"):
        ran.append(f"{c.id}#{p.letter} before {waiting}")
        s.port.t += 1.5
        s.plan.keep(c, p, ("done",))

    s.run_ahead = run_ahead
    fill.before(s, mld, mld.parts[0])
    # the other MLD part would wait too (and keeps its place); nd runs until less than FILL_MIN_S is left
    assert ran == ["nd.y#A before mld.x#A", "nd.y#B before mld.x#A"]
    s.settle[frozenset()] = (s.port.now() + 9, "a state every check would see")
    ran.clear()
    fill.before(s, mld, mld.parts[0])
    assert ran == []  # every part would wait for it: nothing moves


def test_the_wait_before_a_second_attempt_runs_other_parts_and_then_sleeps_what_is_left(monkeypatch):
    s = _session(discovered=4)
    slaac, nd = _check("slaac.x", 2), _check("nd.y", 3)
    s.plan = Plan([(slaac, slaac.parts[0]), (slaac, slaac.parts[1]), (nd, nd.parts[0]), (nd, nd.parts[1]),
                   (nd, nd.parts[2])], external=True)
    clock = {"t": 0.0}
    monkeypatch.setattr(fill.time, "monotonic", lambda: clock["t"])
    monkeypatch.setattr(fill.time, "sleep", lambda sec: clock.__setitem__("t", clock["t"] + sec))
    ran = []

    def run_ahead(c, p, waiting, until):
        ran.append((f"{c.id}#{p.letter}", waiting, until))
        clock["t"] += 3.0
        s.plan.keep(c, p, ("done",))

    s.run_ahead = run_ahead
    fill.meanwhile(s, slaac, slaac.parts[0], 7.5)
    # its own later part keeps its place; two nd parts of 3 s, then 1.5 s (< FILL_MIN_S) is slept
    assert ran == [("nd.y#A", "slaac.x#A", "its second attempt"), ("nd.y#B", "slaac.x#A", "its second attempt")]
    assert clock["t"] == 7.5
