"""The order of a run's parts on a DUT the run does not rebuild.

The embedded lab gives each check a fresh DUT; an external DUT carries
what one check leaves into the next.  Some of that runs out on its own
timer, and a check whose verdict it could touch waits it out first
(``CheckContext.dut_keeps_state``): an MLDv1 check leaves the DUT in MLDv1
compatibility mode for its Older Version Querier Present Timeout (13 s with
the querier's short timers), which only MLD checks wait out.  Run back to
back, the MLD parts each waited those 13 s; spread evenly among the other
areas' parts, the timer runs out while those run.  Each group keeps its own
order, so no part sees another part's state it would not have seen anyway
(other areas' checks do not judge the DUT's MLD Reports).  Parts of a check
that run side by side (core/together.py) stay next to each other.

SLAAC and router-discovery parts make the DUT form addresses from fresh
prefixes, which it keeps until their valid lifetime runs out (an RA cannot
take them back, RFC 4862 §5.5.3 e): on a DUT with a small address table the
next such part waits for room (core/room.py).  Spread among the other
areas' parts, those addresses expire while the others run.  Each check
leaves the DUT's link parameters and routers as it found them
(CheckContext.restore_link_parameters, withdraw), so the parts they run
between see the DUT they would have seen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from .together import units

T = TypeVar("T")

#: the areas whose parts are spread among the others on a DUT the run does not rebuild (see above)
SPREAD = ("mld", "slaac", "rd")


def spread(items: Sequence[T], area_of: Callable[[T], str | None], area: str) -> list[T]:
    """``items`` with those of ``area`` spread evenly among the others, each
    group in its own order; the others' first part comes first."""
    ours = [i for i in items if area_of(i) == area]
    rest = [i for i in items if area_of(i) != area]
    if not ours or not rest:
        return list(items)
    out: list[T] = []
    step, j = len(rest) / len(ours), 0
    for n, item in enumerate(ours):
        upto = round((n + 1) * step)
        out.extend(rest[j:upto])
        j = upto
        out.append(item)
    return out + rest[j:]


def for_external_dut(items: Sequence[T], area_of: Callable[[T], str | None],
                     unit_of: Callable[[T], str | None] = lambda _: None) -> list[T]:
    """The order of ``items`` against a DUT the run does not rebuild.  Items
    of one unit (``unit_of``: parts of a check that run side by side,
    core/together.py) stay next to each other: the spread goes between units."""
    out = units(list(items), unit_of)
    for area in SPREAD:
        out = spread(out, lambda u: area_of(u[0]), area)
    return [i for u in out for i in u]
