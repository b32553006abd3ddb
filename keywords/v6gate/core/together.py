"""Parts of one check side by side, on a DUT the run does not rebuild.

A Neighbor Cache check judges an entry over DELAY_FIRST_PROBE_TIME (5 s on
a real DUT): the 18 parts of one entry state take 18 such windows one after
the other.  Where a check's parts each drive a neighbour of their own (a
fresh TN1: its own MAC and link-local address, so that every frame of the
DUT's a part judges is addressed to its neighbour alone) and share only DUT
state that is the same for all of them (the RA timers the entry state
needs), they can share the window: ``@check(concurrent_parts=True)``.

The run then takes the check's consecutive parts in batches (the order
puts them next to each other: ``units``) and runs each batch's parts in
threads, one check context each, in one capture.  Every part keeps its own
verdict, reason and timeline; its pcap is the batch's (the timeline names
its neighbour, the measurements the parts beside it).  What the batch shares
is done once: the link prefix, settling, the liveness look before and after,
the bench's health.  A step whose DUT state all parts share (the short
ReachableTime STALE ageing needs) goes through ``Batch.once`` / ``Batch.meet``
(scenario/nce.py), so no part restores a timer another still relies on.

Only where the DUT is not rebuilt before each part: the lab's DUT is rebuilt
per part (and faults are applied per part), so its parts run one at a time.
A batch is small so that a small Neighbor Cache holds every batch's
entries: 4 parts, or 6 on a DUT found to hold the room for them
(core/neighbour_room.py).  Against the lab's DUT and in Robot suites (no plan) every part runs alone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from .neighbour_room import MAX_PARTS, SAFE_PARTS
from .verdict import NotJudged, Outcome, Verdict, result_key

T = TypeVar("T")

#: parts of one check side by side at most: their neighbours are in the DUT's Neighbor Cache at once, beside the
#: entries earlier parts left; the run takes fewer where it has not found the room for them (core/neighbour_room.py)
BATCH = MAX_PARTS
#: how long a part waits for the others of its batch at a shared step before it gives up (a bench error)
MEET_TIMEOUT_S = 180.0


def units(items: Sequence[T], key: Callable[[T], str | None]) -> list[list[T]]:
    """``items`` cut into the units the run runs as one: consecutive items
    with the same key (not None) in lists of at most BATCH, every other item
    on its own."""
    out: list[list[T]] = []
    for item in items:
        k = key(item)
        last = out[-1] if out else None
        if k is not None and last and len(last) < BATCH and key(last[0]) == k:
            last.append(item)
        else:
            out.append([item])
    return out


def batch_key(c, external: bool) -> str | None:
    """The key ``units`` groups a check's parts by (None: one at a time)."""
    return c.id if external and getattr(c, "concurrent_parts", False) else None


class Batch:
    """The parts of one batch while they run: the steps they share."""

    def __init__(self, letters: Sequence[str | None]):
        self.letters = list(letters)
        self._cond = threading.Condition()
        self._active = set(self.letters)
        self._met: dict[str, dict] = {}
        self._done: set[str] = set()
        self._values: dict[str, object] = {}
        self._lock = threading.Lock()

    def once(self, name: str, step: Callable[[], object]) -> None:
        """Run ``step`` for the whole batch: the first part that gets here runs
        it, the others wait until it has run (and then go on without it)."""
        with self._lock:
            if name in self._done:
                return
            step()
            self._done.add(name)

    def shared(self, name: str, make: Callable[[], T]) -> T:
        """What ``make`` returns, made once for the whole batch by the first
        part that gets here (the others wait for it and get the same); a
        ``make`` that raised is tried again by the next part."""
        with self._lock:
            if name not in self._values:
                self._values[name] = make()
            return self._values[name]  # type: ignore[return-value]

    def meet(self, name: str, letter: str | None, value: float) -> float:
        """Wait until every part still running has met here (or ended), then
        return the largest value they brought (e.g. the last confirmation)."""
        deadline = time.monotonic() + MEET_TIMEOUT_S
        with self._cond:
            met = self._met.setdefault(name, {})
            met[letter] = value
            self._cond.notify_all()
            while not self._active <= set(met):
                left = deadline - time.monotonic()
                if left <= 0:
                    from ..errors import BenchError

                    waiting = sorted(str(x) for x in self._active - set(met))
                    raise BenchError(f"the parts run beside this one did not reach step {name!r} within "
                                     f"{MEET_TIMEOUT_S:g} s (parts {', '.join(waiting)})")
                self._cond.wait(left)
            return max(met.values())

    def leave(self, letter: str | None) -> None:
        """The part ended: the others no longer wait for it."""
        with self._cond:
            self._active.discard(letter)
            self._cond.notify_all()


class Plan:
    """The run's parts in the order they run, cut into units; the results of
    parts that ran beside an earlier one, until their own turn records them."""

    def __init__(self, parts: Sequence[tuple], external: bool):
        self._order = list(parts)
        self._index = {result_key(c.id, p.letter): i for i, (c, p) in enumerate(self._order)}
        self._begun: set[str] = set()  # parts whose turn came, or that ran ahead of it (``ahead``)
        self._unit_of: dict[str, list] = {}
        for unit in units(list(parts), lambda cp: batch_key(cp[0], external)):
            if len(unit) > 1:
                for c, p in unit:
                    self._unit_of[result_key(c.id, p.letter)] = [pp for _, pp in unit]
        self._ready: dict[str, tuple] = {}

    def batch(self, session, c, part) -> list:
        """``part`` and the parts of its unit that have not run and are to be
        run now (on a DUT that is healthy); just ``[part]`` otherwise (also
        when ``part`` itself is not to be run: it says why on its own)."""
        unit = self._unit_of.pop(result_key(c.id, part.letter), None)
        if not unit or session.blocked(c, part) is not None:
            return [part]
        room = getattr(session, "neighbour_room", None)
        limit = room.parts(len(unit)) if room is not None else min(len(unit), SAFE_PARTS)
        if limit < len(unit):
            unit = self._recut(c, part, limit)
        out = [part]
        for p in unit:
            key = result_key(c.id, p.letter)
            if p is part or key not in self._unit_of:
                continue
            del self._unit_of[key]
            if session.blocked(c, p) is None:
                out.append(p)
            else:  # run on its own turn (it says why it is not run)
                self._unit_of[key] = []
        return out

    def _recut(self, c, part, limit: int) -> list:
        """``part`` and the check's next parts that are to run side by side,
        in the plan's order, cut into batches of ``limit`` (fewer than the
        units the order made: the DUT's room, core/neighbour_room.py);
        returns ``part``'s batch."""
        i = self._index[result_key(c.id, part.letter)]
        later = [p for c2, p in self._order[i + 1:]
                 if c2.id == c.id and self._unit_of.get(result_key(c.id, p.letter))]
        first, later = [part, *later[:limit - 1]], later[limit - 1:]
        for j in range(0, len(later), limit):
            for p in later[j:j + limit]:
                self._unit_of[result_key(c.id, p.letter)] = later[j:j + limit]
        return first

    def keep(self, c, part, ready: tuple) -> None:
        self._ready[result_key(c.id, part.letter)] = ready

    def take(self, c, part) -> tuple | None:
        """The result of ``part`` if it ran beside or ahead of an earlier part
        (and from now on: its turn has come)."""
        key = result_key(c.id, part.letter)
        self._begun.add(key)
        return self._ready.pop(key, None)

    def ahead(self, c, part, fits: Callable[[object, object], bool]) -> tuple | None:
        """The first part after ``part`` in the run's order that has not run
        and that ``fits`` (check, part): (check, part), or None."""
        i = self._index.get(result_key(c.id, part.letter))
        if i is None:
            return None
        for c2, p2 in self._order[i + 1:]:
            key = result_key(c2.id, p2.letter)
            if key not in self._begun and key not in self._ready and fits(c2, p2):
                self._begun.add(key)
                return c2, p2
        return None


def run_batch(session, c, parts: list, pcap) -> dict:
    """Run ``parts`` of ``c`` side by side.  Returns {letter: (outcome, ctx,
    evidence, started, duration)} for the session to make each part's
    result."""
    from ..paths import shown
    from .context import CheckContext
    from .session import _now_iso, judged, outcome_of

    evidence = {"pcap": shown(pcap)}
    batch = Batch([p.letter for p in parts])
    ctxs: dict = {}
    outcomes: dict = {}
    times: dict = {}
    counters = None
    lost = None
    t_start, started = time.monotonic(), _now_iso()
    try:
        session.link_prefix_for(c)
        counters = {**session._bench_counters(), "capture": (0, None)}
        session.capture.begin(pcap)
        target, control, dut = session.probed()
        for p in parts:
            ctx = CheckContext(check=c, part=p, port=session.port, target=target, control=control, dut=dut,
                               session=session, pcap=pcap)
            ctx.together = batch
            ctxs[p.letter] = ctx
        first = ctxs[parts[0].letter]
        try:  # what the parts share: settling, room, the DUT answering before the first probe
            session._wait_for_settle(first)
            first.make_room_first()
            if c.liveness:
                session._require_reachable(first)
            ready = None
        except Exception as exc:
            ready = outcome_of(exc, first)
        if ready is not None:
            outcomes = dict.fromkeys(ctxs, ready)
            times = dict.fromkeys(ctxs, (started, time.monotonic() - t_start))
        else:
            threads = [threading.Thread(target=_run_part, args=(c, ctx, batch, outcomes, times, judged, outcome_of),
                                        name=f"part-{c.id}#{letter}", daemon=True) for letter, ctx in ctxs.items()]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
    finally:
        if session.capture:
            session.capture.end()
        lost = session._lost_now()
        for ctx in ctxs.values():
            ctx.cleanup()
    out = {}
    room = getattr(session, "neighbour_room", None)
    found = room.summary() if room is not None else None
    why = (f"; up to {found['parts_side_by_side']} side by side: the DUT held {found['held']} of {found['asked']} "
           f"fresh neighbours at once (core/neighbour_room.py, {found['pcap']})") if found else ""
    for p in parts:
        ctx = ctxs.get(p.letter)
        outcome = outcomes.get(p.letter) or Outcome(Verdict.ERROR, "harness error (a bug in v6gate, not the DUT): "
                                                                   "the part did not finish beside the others")
        if ctx is not None and len(parts) > 1:
            beside = [str(x.letter) for x in parts if x is not p]
            ctx.measurements["ran_beside"] = beside
            ctx.note(f"ran beside parts {', '.join(beside)} of the same check, each with a neighbour of its own "
                     f"(one capture for all of them){why}")
        out[p.letter] = [outcome, ctx, dict(evidence), *times.get(p.letter, (started, time.monotonic() - t_start))]
    first_ctx = ctxs.get(parts[0].letter)
    if first_ctx is not None and session.liveness is not None and not lost:
        _liveness_after(session, c, parts, first_ctx, out)
    broke = session._bench_broke(counters, session._bench_counters()) if counters is not None else None
    for p in parts:
        o = out[p.letter][0]
        if o.verdict == Verdict.SKIP:
            continue
        if lost:
            session.bench_lost = f"{lost} during {result_key(c.id, p.letter)}"
            out[p.letter][0] = Outcome(Verdict.ERROR, f"bench error: {lost} during this part (the check's own "
                                                      f"verdict would have been {o.verdict}: {o.seen})")
        elif broke:
            out[p.letter][0] = Outcome(Verdict.ERROR, f"bench error: {broke} (the check's own verdict would have "
                                                      f"been {o.verdict}: {o.seen})")
    return {k: tuple(v) for k, v in out.items()}


def _run_part(c, ctx, batch: Batch, outcomes: dict, times: dict, judged, outcome_of) -> None:
    from .session import _now_iso

    letter, t0, started = ctx.part, time.monotonic(), _now_iso()
    try:
        outcomes[letter] = judged(c, ctx)
    except Exception as exc:
        outcomes[letter] = outcome_of(exc, ctx)
    finally:
        batch.leave(letter)
        times[letter] = (started, time.monotonic() - t0)


def _liveness_after(session, c, parts: list, first_ctx, out: dict) -> None:
    """One liveness look for the batch (its packets are all after the first
    part's start): a DUT that stopped answering FAILs the first part for it;
    the other parts' verdicts that the silence could have decided are not
    judged (``dut-alive``, judged by the first part): one root cause, one FAIL."""
    key = result_key(c.id, parts[0].letter)
    before = out[parts[0].letter][0]
    after = session.liveness.after_part(first_ctx, key, before)
    if after is before:
        return
    out[parts[0].letter][0] = after
    if after.verdict != Verdict.FAIL:
        return
    why = after.problems[0] if after.problems else after.seen
    for p in parts[1:]:
        o = out[p.letter][0]
        if o.verdict not in (Verdict.PASS, Verdict.SKIP):
            out[p.letter][0] = NotJudged("dut-alive", key, f"the DUT stopped answering while this part ran beside "
                                                           f"{key}: {why}").outcome()
