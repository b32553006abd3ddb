"""What the run made a DUT configure: the addresses its RAs made it form.

A check cannot take an autoconfigured address back.  RFC 4862 §5.5.3 (e)
lets a Router Advertisement raise an address's valid lifetime, or cut a
long one down to two hours, but never below: a withdrawal (valid lifetime
0) leaves the address to run out what remains of it.  On a DUT the run
cannot reset, every check that advertises a new autonomous prefix therefore
leaves one address (two with temporary addresses) behind until its valid
lifetime ends, and a DUT with a bounded address table (embedded stacks
hold 3-10; Linux has ``max_addresses``) stops forming addresses part-way
through the run: every later SLAAC check would FAIL for state an earlier
check left, not for its own clause.

The ledger keeps, per autonomous prefix the tester advertised, when the
DUT's address in it expires by the RFC's arithmetic.  With the target's
``dut.max_addresses`` the session waits, before a check advertises a prefix
the DUT has no address in, until earlier checks' addresses have expired
and there is room for it; and the run reports what it left (``predicted``
in ``dut_state_after``).  Pure logic: the clock is a parameter.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass

#: RFC 4862 §5.5.3 (e): the two hours below which an RA cannot shorten an address's valid lifetime
TWO_HOURS = 7200
#: RFC 4861 §4.6.2: all ones is infinity
INFINITY = 0xFFFFFFFF
#: the valid (and preferred) lifetime of a fresh prefix a check needs only for its own probes: it outlasts the
#: check, and the address is gone soon after, so a bounded table has room again (seconds)
ADDRESS_LEASE_S = 60
#: what a short lease (below) keeps beyond the probes it is for: a loaded tester's scheduling, a DUT's own slack
SHORT_LEASE_SPARE_S = 10
#: RFC 4861 §10 MAX_RTR_SOLICITATION_DELAY: the random delay before a DUT probes a new address (RFC 4862 §5.4.2)
DAD_DELAY_S = 1.0


#: what scenario/observe.dad_done waits past the DAD probe's RetransTimer before the address is used
DAD_SETTLE_S = 0.2
#: a loaded tester's own time per probe beyond its window (building and sending it, decoding what the DUT sent
#: instead when nothing matched); in the external run of 2026-11-27 15:33 UTC (ext6) the probes of
#: rd.router_lifetime_is_honoured took a few milliseconds past their windows: ample headroom, on top of
#: SHORT_LEASE_SPARE_S
PROBE_OVERHEAD_S = 0.5


def short_lease(reply_timeout: float, retrans_timer: float, *, probes: int, span: float = 0.0, quick: int = 0) -> int:
    """The valid (and preferred) lifetime of a fresh prefix whose address a
    part needs only for the DUT's DAD probe and ``probes`` probes right after
    it, on the DUT's timing: the DAD delay, the reply timeout and one
    RetransTimer (DAD), each probe's reply timeout and 3 RetransTimers (its
    Neighbor Solicitation answered or not), ``quick`` more probes of a reply
    timeout each (after the first, when the address can no longer be
    tentative), ``span`` seconds the part spends beyond those (span_lease),
    and SHORT_LEASE_SPARE_S; never more than ADDRESS_LEASE_S.  With 1 s
    windows and the RFC's RetransTimer: 13 s for the DAD probe alone, 25 s
    with three probes, 19 s with one and two quick ones."""
    need = (DAD_DELAY_S + reply_timeout + retrans_timer + span + probes * (reply_timeout + 3 * retrans_timer)
            + quick * reply_timeout)
    return min(ADDRESS_LEASE_S, math.ceil(need + SHORT_LEASE_SPARE_S))


def span_lease(reply_timeout: float, retrans_timer: float, *, probes: int, waits: float = 0.0) -> int:
    """The valid (and preferred) lifetime of a fresh prefix whose address a
    part uses from its RA until its last probe (the router-discovery checks:
    an Echo Request to the address, answered through a router or on-link).
    short_lease's DAD term, then what the part spends past it:

    * the end of the address's forming (scenario/observe.autoconfigure):
      DAD_SETTLE_S after the DAD RetransTimer, or, on a DUT that performs no
      DAD, two reply timeouts (observe.in_use: a Neighbor Solicitation, then
      an Echo Request) in place of the RetransTimer: whichever is longer;
    * ``waits``: the part's own fixed waits (a Router Lifetime waited out, a
      pause for an RA's processing), added whole, though some parts count
      theirs from before the RA: an over-estimate, never short;
    * ``probes`` probes of a reply timeout and 3 RetransTimers each (an
      answer that needs address resolution; observe.next_hop_for tries
      twice: two probes) and PROBE_OVERHEAD_S each;

    and SHORT_LEASE_SPARE_S; never more than ADDRESS_LEASE_S.  With 1 s
    windows and the RFC's RetransTimer: 23 s for one next hop (two tries),
    38 s for two next hops around a Router Lifetime of 5 s waited out."""
    formed = max(DAD_SETTLE_S, 2 * reply_timeout - retrans_timer)
    return short_lease(reply_timeout, retrans_timer, probes=probes,
                       span=formed + waits + probes * PROBE_OVERHEAD_S)
#: how long after its valid lifetime ends an address may still answer: lifetimes are whole seconds and the
#: expiry runs on a timer that Linux rounds up to the next whole second (round_jiffies_up), so at valid + 1 s
#: a healthy lab's address answered, once in a README run and once in 20 loaded repeat runs
#: (slaac.multiple_prefixes_and_renumbering, +1.001 s); valid + 2 s keeps every never-expiring stack a FAIL.
#: The SLAAC expiry checks judge with it, and the ledger counts an address gone only this long after its end.
EXPIRY_GRACE_S = 2.0
#: what a DUT may add to an address's remaining valid lifetime each time an RA restates its prefix (whole seconds)
RESTATE_S = 1.0


def remaining_after(stored: float | None, received: int) -> float | None:
    """The address's remaining valid lifetime (seconds) after an RA with
    valid lifetime ``received`` for its prefix, RFC 4862 §5.5.3 (e); ``stored``
    is what remained before (None: the DUT has no address in the prefix).
    None: the RA forms no address (a new prefix with valid lifetime 0)."""
    value = math.inf if received == INFINITY else float(received)
    if stored is None:
        return value if received > 0 else None
    if value > TWO_HOURS or value > stored:
        return value
    if stored <= TWO_HOURS:
        return stored  # "ignore the Prefix Information option with regards to the valid lifetime"
    return float(TWO_HOURS)


@dataclass
class Entry:
    prefix: ipaddress.IPv6Network
    expires: float  # monotonic time the DUT's address in it is gone (grace included); inf: never
    owner: str  # the check (id#part) that first made the DUT form it
    formed: bool | None = None  # the DUT was seen forming it (its DAD probe); None: not known yet
    #: the DUT found its address a duplicate and did not assign it (a DAD test): whether it still takes a slot is
    #: the stack's (Linux deletes it, lwIP keeps a DADFAILED entry), so room still counts it and a discovered
    #: table's size does not
    duplicate: bool = False
    #: the DUT's address(es) in it, as its DAD probes named them (an earlier run's state is confirmed by them)
    addresses: tuple[str, ...] = ()


class AddressLedger:
    def __init__(self) -> None:
        self._entries: dict[ipaddress.IPv6Network, Entry] = {}

    def advertise(self, prefix: ipaddress.IPv6Network, valid: int, owner: str, now: float) -> None:
        """The tester sent an RA with ``prefix`` (autonomous, /64) and valid lifetime ``valid`` at ``now``."""
        old = self._entries.get(prefix)
        stored = old.expires - EXPIRY_GRACE_S - now if old and old.expires > now else None
        if stored is not None:
            # a DUT that counts the address's age in whole seconds (Linux) restates what remains rounded up: up to
            # one more second per RA that repeats the prefix (the check's withdrawal), seen as an address formed
            # again one second too late for the next check's room
            stored += RESTATE_S
        left = remaining_after(stored, valid)
        if left is None:
            self._entries.pop(prefix, None)
            return
        kept = old is not None and stored is not None  # the same address, its lifetime restated
        self._entries[prefix] = Entry(prefix, now + left + EXPIRY_GRACE_S, old.owner if kept else owner,
                                      old.formed if kept else None, old.duplicate if kept else False,
                                      old.addresses if kept else ())

    def mark_formed(self, prefix: ipaddress.IPv6Network, addresses=()) -> None:
        """The DUT was seen forming its address(es) in ``prefix`` (its DAD probe)."""
        e = self._entries.get(prefix)
        if e is not None:
            e.formed = True
            e.addresses = tuple(sorted({*e.addresses, *addresses}))

    def inherit(self, prefix: ipaddress.IPv6Network, expires: float, owner: str, addresses=()) -> None:
        """An address an earlier run made the DUT form, that it still holds
        (core/carryover.py): it takes room until ``expires`` like the run's own."""
        if prefix not in self._entries:
            self._entries[prefix] = Entry(prefix, expires, owner, True, False, tuple(addresses))

    def mark_duplicate(self, prefix: ipaddress.IPv6Network) -> None:
        """The DUT found its address in ``prefix`` a duplicate and did not assign it."""
        e = self._entries.get(prefix)
        if e is not None:
            e.duplicate = True

    def forget(self, prefix: ipaddress.IPv6Network) -> None:
        """The DUT formed no address in ``prefix``: it holds none there."""
        self._entries.pop(prefix, None)

    def live(self, now: float) -> list[Entry]:
        """The prefixes in which the DUT still holds the address the run made it form, earliest expiry first."""
        return sorted((e for e in self._entries.values() if e.expires > now), key=lambda e: e.expires)

    def holds(self, prefix: ipaddress.IPv6Network, now: float) -> bool:
        e = self._entries.get(prefix)
        return e is not None and e.expires > now

    def wait_for_room(self, new: int, *, slots: int, per_prefix: int, owner: str, now: float) -> float | None:
        """Seconds to wait until ``new`` more prefixes fit: ``slots`` addresses
        are free for the run's prefixes (the table's size less what the DUT
        had when the run found it), each prefix takes ``per_prefix``.  0: room
        now.  None: waiting cannot make room (``owner``'s own live prefixes,
        or ones that never expire, already fill it)."""
        live = self.live(now)
        excess = (len(live) + new) * per_prefix - slots
        if excess <= 0:
            return 0.0
        others = [e for e in live if e.owner != owner and math.isfinite(e.expires)]
        need = -(-excess // per_prefix)  # prefixes that must expire first
        if need > len(others):
            return None
        return max(0.0, others[need - 1].expires - now)

    def summary(self, now: float) -> dict:
        """What the run's prefixes leave on the DUT, by the RFC's arithmetic."""
        live = self.live(now)
        last = max((e.expires for e in live), default=now)
        return {"prefixes": [str(e.prefix) for e in live], "count": len(live),
                "all_gone_in_s": None if math.isinf(last) else round(last - now, 1)}
