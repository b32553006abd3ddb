"""Parts of a check side by side on an external DUT (core/together.py):
units, the plan's batches, the batch's shared steps (pure logic; the
packets are proven by the external nd runs, see docs/nd.md)."""

import threading
import time
from types import SimpleNamespace

import pytest

from v6gate.core import together
from v6gate.core.check import Check, Part, check
from v6gate.core.order import for_external_dut
from v6gate.core.together import BATCH, Batch, Plan, units
from v6gate.core.verdict import Outcome, Verdict


def _check(cid, n, concurrent=True):
    return Check(id=cid, area=cid.split(".")[0], title=cid, rfc="RFC 4861", expect="x", func=lambda t: None,
                 parts=tuple(Part(chr(65 + i)) for i in range(n)), concurrent_parts=concurrent)


def test_units_are_consecutive_parts_of_one_check_at_most_a_batch_each():
    items = ["a1", "a2", "b1", "a3", "c1", "c2"] + [f"d{i}" for i in range(BATCH + 2)]
    key = {"a": "A", "b": None, "c": None, "d": "D"}
    got = units(items, lambda i: key[i[0]])
    assert got[:5] == [["a1", "a2"], ["b1"], ["a3"], ["c1"], ["c2"]]  # None: each on its own; a3 is not next to a2
    assert [len(u) for u in got[5:]] == [BATCH, 2]


def test_the_spread_goes_between_units_so_a_batch_stays_together():
    nd = _check("nd.na_updates_stale_entry", BATCH + 2)
    mld = _check("mld.x", 2, concurrent=False)
    items = [(nd, p) for p in nd.parts] + [(mld, p) for p in mld.parts]
    letters = "".join(p.letter for p in nd.parts)
    out = for_external_dut(items, lambda i: i[0].area, lambda i: together.batch_key(i[0], True))
    # nd A-F (a unit of BATCH), mld A, nd G-H, mld B
    assert "".join(p.letter for _, p in out) == letters[:BATCH] + "A" + letters[BATCH:] + "B"
    # without units the MLD parts go between the nd parts
    out = for_external_dut(items, lambda i: i[0].area)
    half = len(letters) // 2
    assert "".join(p.letter for _, p in out) == letters[:half] + "A" + letters[half:] + "B"


def test_a_lab_run_has_no_units():
    nd = _check("nd.na_updates_stale_entry", 3)
    assert together.batch_key(nd, external=False) is None
    assert together.batch_key(_check("nd.other", 3, concurrent=False), external=True) is None


class _Room:
    """The DUT's Neighbor Cache room as core/neighbour_room.NeighbourRoom gives it."""

    def __init__(self, parts):
        self.asked: list[int] = []
        self._parts = parts

    def parts(self, want):
        self.asked.append(want)
        return min(want, self._parts)


class _Session:
    def __init__(self, blocked=(), room=BATCH):
        self._blocked = set(blocked)
        self.neighbour_room = _Room(room)

    def blocked(self, c, part):
        return Outcome(Verdict.SKIP, "not applicable") if part.letter in self._blocked else None


def test_the_plan_gives_the_first_part_its_batch_and_later_parts_their_kept_result():
    nd, other = _check("nd.na_updates_stale_entry", BATCH + 1), _check("ipv6.x", 1, concurrent=False)
    plan = Plan([(nd, p) for p in nd.parts] + [(other, other.parts[0])], external=True)
    session = _Session()
    first = plan.batch(session, nd, nd.parts[0])
    assert [p.letter for p in first] == list("ABCDEFG"[:BATCH])
    for p in first[1:]:
        plan.keep(nd, p, ("result", p.letter))
    assert plan.take(nd, nd.parts[1]) == ("result", "B")
    assert plan.take(nd, nd.parts[1]) is None  # recorded once
    assert plan.batch(session, nd, nd.parts[1]) == [nd.parts[1]]  # no second batch for a part that ran
    assert plan.batch(session, nd, nd.parts[BATCH]) == [nd.parts[BATCH]]  # the 7th: a unit of one
    assert plan.batch(session, other, other.parts[0]) == [other.parts[0]]


def test_a_dut_without_the_room_for_a_whole_unit_gets_the_check_recut_into_smaller_batches():
    from v6gate.core.neighbour_room import SAFE_PARTS

    nd, mld = _check("nd.na_updates_stale_entry", 3 * BATCH), _check("mld.x", 2, concurrent=False)
    items = [(nd, p) for p in nd.parts] + [(mld, p) for p in mld.parts]
    order = for_external_dut(items, lambda i: i[0].area, lambda i: together.batch_key(i[0], True))
    plan, session = Plan(order, external=True), _Session(room=SAFE_PARTS)
    batches = []
    for c, p in order:
        if c is nd and plan.take(c, p) is None:
            got = plan.batch(session, c, p)
            batches.append("".join(x.letter for x in got))
            for x in got[1:]:
                plan.keep(c, x, ("result", x.letter))
    letters = "".join(p.letter for p in nd.parts)
    # as many batches of SAFE_PARTS as the parts need, each part once, in the plan's order: not a remainder per unit
    assert batches == [letters[i:i + SAFE_PARTS] for i in range(0, len(letters), SAFE_PARTS)]
    assert session.neighbour_room.asked[0] == BATCH


def test_a_dut_with_the_room_runs_whole_units_and_a_short_unit_asks_for_no_probe():
    nd = _check("nd.na_updates_stale_entry", BATCH + 2)
    plan, session = Plan([(nd, p) for p in nd.parts], external=True), _Session(room=BATCH)
    assert len(plan.batch(session, nd, nd.parts[0])) == BATCH
    assert len(plan.batch(session, nd, nd.parts[BATCH])) == 2
    assert session.neighbour_room.asked == [BATCH, 2]  # (NeighbourRoom.parts probes only above SAFE_PARTS)


def test_a_session_that_cannot_find_out_the_room_runs_the_small_batches():
    from v6gate.core.neighbour_room import SAFE_PARTS

    nd = _check("nd.na_updates_stale_entry", BATCH)
    plan, session = Plan([(nd, p) for p in nd.parts], external=True), _Session()
    session.neighbour_room = None
    assert len(plan.batch(session, nd, nd.parts[0])) == SAFE_PARTS


def test_a_part_that_is_not_to_run_stays_out_of_the_batch_and_runs_on_its_own_turn():
    nd = _check("nd.na_updates_stale_entry", 4)
    plan = Plan([(nd, p) for p in nd.parts], external=True)
    first = plan.batch(_Session(blocked={"C"}), nd, nd.parts[0])
    assert [p.letter for p in first] == ["A", "B", "D"]
    assert plan.batch(_Session(blocked={"C"}), nd, nd.parts[2]) == [nd.parts[2]]


def test_a_first_part_that_is_not_to_run_takes_no_others_with_it():
    nd = _check("nd.na_updates_stale_entry", 4)
    plan = Plan([(nd, p) for p in nd.parts], external=True)
    assert plan.batch(_Session(blocked={"A"}), nd, nd.parts[0]) == [nd.parts[0]]  # it SKIPs (or is not run) alone
    assert [p.letter for p in plan.batch(_Session(), nd, nd.parts[1])] == ["B", "C", "D"]  # the rest still together


def test_a_plan_against_the_lab_runs_every_part_alone():
    nd = _check("nd.na_updates_stale_entry", 4)
    plan = Plan([(nd, p) for p in nd.parts], external=False)
    assert plan.batch(_Session(), nd, nd.parts[0]) == [nd.parts[0]]


def test_a_shared_step_runs_once_and_the_others_wait_for_it():
    batch, ran = Batch(["A", "B", "C"]), []

    def step():
        time.sleep(0.05)
        ran.append(1)

    after = []

    def part(letter):
        batch.once("short", step)
        after.append(len(ran))

    threads = [threading.Thread(target=part, args=(x,)) for x in "ABC"]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert ran == [1] and after == [1, 1, 1]  # nobody went on before the step was done


def test_a_meeting_gives_the_last_value_and_does_not_wait_for_a_part_that_ended():
    batch, got = Batch(["A", "B", "C"]), {}

    def part(letter, value, leave_first):
        if leave_first:
            batch.leave(letter)  # e.g. its setup raised: the others must not wait for it
            return
        got[letter] = batch.meet("confirmed", letter, value)
        batch.leave(letter)

    threads = [threading.Thread(target=part, args=a) for a in (("A", 1.0, False), ("B", 3.0, False),
                                                                ("C", 9.0, True))]
    for th in threads:
        th.start()
    for th in threads:
        th.join(5)
    assert got == {"A": 3.0, "B": 3.0}


def test_a_meeting_that_never_completes_is_a_bench_error_not_a_hang(monkeypatch):
    from v6gate.errors import BenchError

    monkeypatch.setattr(together, "MEET_TIMEOUT_S", 0.1)
    batch = Batch(["A", "B"])
    with pytest.raises(BenchError, match=r"did not reach step 'aged'.*parts B"):
        batch.meet("aged", "A", 1.0)


def test_a_value_made_once_is_the_whole_batch_s():
    batch, made, got = Batch(["A", "B", "C"]), [], []

    def part(letter):
        got.append((letter, batch.shared("x", lambda: made.append(letter) or f"made by {letter}")))

    threads = [threading.Thread(target=part, args=(x,)) for x in "ABC"]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(made) == 1 and {v for _, v in got} == {f"made by {made[0]}"}


def test_concurrent_parts_need_a_check_that_forms_no_address():
    with pytest.raises(ValueError, match="concurrent_parts needs forms_addresses=False"):
        check(area="nd", title="t", rfc="RFC 4861", expect="x", concurrent_parts=True, id="nd.t_bad")(lambda t: None)


def test_the_nd_and_redirect_state_checks_run_side_by_side_and_form_no_address():
    from v6gate.core.check import REGISTRY, load_all

    load_all()
    side = sorted(c.id for c in REGISTRY.values() if c.concurrent_parts)
    assert [i for i in side if i.startswith("nd.")] == [
        "nd.address_resolution_solicits_correctly", "nd.na_completes_address_resolution",
        "nd.na_updates_probe_entry", "nd.na_updates_reachable_entry", "nd.na_updates_stale_entry",
        "nd.na_without_entry_is_discarded", "nd.ns_completes_pending_resolution",
        "nd.ns_is_answered_without_nce", "nd.ns_updates_probe_entry", "nd.ns_updates_reachable_entry",
        "nd.ns_updates_stale_entry", "nd.unreachability_detection_probes"]
    assert [i for i in side if i.startswith("rd.")] == ["rd.ra_updates_neighbor_cache"]
    assert [i for i in side if i.startswith("redirect.")] == [
        "redirect.redirect_creates_target_entry", "redirect.redirect_updates_incomplete_target",
        "redirect.redirect_updates_probe_target", "redirect.redirect_updates_reachable_target",
        "redirect.redirect_updates_stale_target"]
    assert all(REGISTRY[i].forms_addresses is False for i in side)


def test_one_silence_after_a_batch_is_one_fail_and_the_rest_not_judged():
    from v6gate.core.together import _liveness_after

    fail = Outcome(Verdict.FAIL, "the DUT stopped answering", problems=["the DUT stopped answering after NA"])

    class Live:
        def after_part(self, ctx, key, outcome):
            return fail

    nd = _check("nd.na_updates_stale_entry", 3)
    out = {"A": [Outcome(Verdict.PASS, "ok")], "B": [Outcome(Verdict.PASS, "ok")],
           "C": [Outcome(Verdict.FAIL, "no Echo Reply")]}
    _liveness_after(SimpleNamespace(liveness=Live()), nd, list(nd.parts), object(), out)
    assert out["A"][0] is fail
    assert out["B"][0].verdict == Verdict.PASS  # judged before the silence: kept
    assert out["C"][0].verdict == Verdict.NOT_JUDGED
    assert out["C"][0].precondition["judged_by"] == "nd.na_updates_stale_entry#A"
