"""Other parts run while a part waits before its first probe.

On a DUT the run does not rebuild, a part may have to wait before its first
probe: for room in the DUT's address table, until an address an earlier
part left expires (an RA cannot take it back, RFC 4862 §5.5.3 e; a table
the run discovered or the target declares, core/room.py), or for a timed
state an earlier check left that its verdict could see (MLDv1
compatibility mode, ``CheckContext.dut_keeps_state``).  The order spreads
those areas among the others (core/order.py), yet in a run of the default
host areas the waits still came to 385 s of 1718 s.  The same goes for
the wait before a part's second attempt where its first found the DUT's
table full (``meanwhile``).  While such a part
would wait, the run takes the next parts of the plan that would not wait
themselves and that need no room (their checks do not form addresses, by
declaration or by area), runs them now and keeps their results for their
own turn (``Plan.keep``), as it keeps those of parts that ran beside an
earlier one (core/together.py).  The waiting part then runs when its wait
is over, or waits out what is left.

What moves: only parts of other checks, of areas whose order does not time
a DUT state (not those of ``order.SPREAD``), that are not ``lasting`` and
do not reset the DUT; each still runs whole, with its own settling,
liveness look and capture, and the report keeps the plan's order.  Each
check leaves the DUT's link parameters and routers as it found them, so a
part run earlier sees the DUT it would have seen at its turn.
"""

from __future__ import annotations

import time
from typing import Any

from .order import SPREAD

#: a wait shorter than this is not worth running another part first (a part takes 0.3-25 s)
FILL_MIN_S = 2.0


def wait_before(session: Any, c: Any, letter: str | None) -> float:
    """How long a part of ``c`` would wait now before its first probe."""
    return max(session.table.wait_before(c, letter), session.settle_left(c.area))


def before(session: Any, c: Any, part: Any) -> None:
    """Before ``part`` of ``c`` runs: while it would wait, run the plan's
    next parts that would not."""
    _others(session, c, part, lambda: wait_before(session, c, part.letter), "its first probe")


def meanwhile(session: Any, c: Any, part: Any, seconds: float) -> None:
    """Wait ``seconds`` before ``part`` of ``c`` runs again (its retry once
    the run's addresses have expired, core/room.py), running the plan's next
    parts that would not wait while at least FILL_MIN_S of it is left."""
    deadline = time.monotonic() + seconds
    _others(session, c, part, lambda: deadline - time.monotonic(), "its second attempt")
    time.sleep(max(0.0, deadline - time.monotonic()))


def _others(session: Any, c: Any, part: Any, left, until: str) -> None:
    """While ``left()`` (seconds) is at least FILL_MIN_S, run the plan's next
    movable part; not once the bench is lost or the DUT dead."""
    plan, liveness = session.plan, session.liveness
    if plan is None or liveness is None:
        return
    waiting = f"{c.id}#{part.letter}" if part.letter else c.id
    while not session.bench_lost and not getattr(liveness, "dead", False) and left() >= FILL_MIN_S:
        nxt = plan.ahead(c, part, lambda c2, p2: movable(session, c, c2, p2))
        if nxt is None:
            return
        session.run_ahead(*nxt, waiting=waiting, until=until)


def movable(session: Any, c: Any, c2: Any, p2: Any) -> bool:
    """Whether ``p2`` of ``c2`` may run ahead of its turn while a part of
    ``c`` waits (see the module docstring)."""
    return (c2.id != c.id and c2.area not in SPREAD and session.table.forms_addresses(c2) is not True
            and wait_before(session, c2, p2.letter) == 0 and not p2.params.get("lasting")
            and "reset" not in c2.needs)
