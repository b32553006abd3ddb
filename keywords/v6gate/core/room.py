"""The DUT's address table: declared (``dut.max_addresses``) or discovered,
and room in it for the prefixes a check advertises.

A check cannot take back an address it made the DUT form (RFC 4862 §5.5.3
e), so on a DUT the run cannot reset every fresh prefix leaves an address
until its valid lifetime runs out (core/ledger.py keeps them).  A DUT with
a small table then stops forming addresses part-way through the run, and a
later check's fresh prefix forms nothing: a FAIL "formed no address" would
be the run's doing, not the DUT's.

* **Declared**: with ``dut.max_addresses`` the run waits, before an RA with
  a prefix the DUT holds no address in, until earlier checks' addresses
  have expired and there is room; a part whose addresses cannot fit SKIPs
  with the reason.
* **Discovered**: a user rarely knows the table's size.  The run watches
  which of its prefixes the DUT formed an address in (its DAD probes,
  core/observer.py).  When a part's fresh prefix forms nothing while the DUT
  holds addresses of the run's earlier prefixes that it did form, and the
  part did not PASS, the run infers that the table is full: its size is
  what the DUT held then (said, with the count).  It waits until those
  addresses have expired and runs the part once more (core/session.py): a
  part that now gets its address is judged on its own clause (its verdict
  "needed a discovered table limit"), one that still forms nothing with
  room in the table keeps its verdict, and the inference is dropped.  From
  then on the run makes room before each RA as for a declared table; where
  room cannot be made the part is NOT_JUDGED with that reason
  (precondition ``address-room``).

``AddressTable`` is the session's (one per run); ``AddressRoom`` is what a
check's context asks of it (``t.send`` before and after every RA,
``t.needs_addresses(n)``, the session's ``make_room_first``).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scapy.layers.inet6 import ICMPv6ND_RA, ICMPv6NDOptPrefixInfo, IPv6, IPv6ExtHdrFragment
from scapy.packet import Packet

from ..errors import BenchError, NotApplicable
from .control import NotSupported
from .setup import JUDGED_BY
from .verdict import NotJudged, Outcome, Verdict

if TYPE_CHECKING:
    from .context import CheckContext

#: the precondition of a part whose addresses cannot fit a discovered table now
ADDRESS_ROOM = "address-room"
#: the areas whose checks make the DUT form addresses from fresh prefixes (unless a check declares otherwise)
FORMING_AREAS = ("slaac", "rd", "addrarch", "rdnss")


@dataclass
class Fresh:
    """A prefix a part advertised that the DUT held no address in."""

    prefix: ipaddress.IPv6Network
    sent: float  # port time of the RA
    held: int  # addresses of the run's earlier prefixes the DUT had formed and still held then
    duplicates: int = 0  # of those, addresses it gave up as duplicates (a DAD test): they may hold no slot


@dataclass
class Suspicion:
    """A part's fresh prefix formed nothing while the table held ``held`` of the run's addresses."""

    prefix: ipaddress.IPv6Network
    held: int
    size: int  # the table size this implies, the DUT's own addresses included
    prefixes: int  # fresh prefixes the part advertised (room the retry needs)


def _key(ctx: CheckContext) -> str:
    return f"{ctx.check.id}#{ctx.part}"


def _owner(ctx: CheckContext) -> str:
    """The ledger's name for the part (its second attempt is another owner)."""
    attempt = getattr(ctx, "attempt", 1)
    return _key(ctx) + ("" if attempt == 1 else f"@{attempt}")


class AddressTable:
    """The DUT's address table over the run (``Session.table``)."""

    def __init__(self, session: Any):
        self.session = session
        self.declared: int | None = session.target.dut_max_addresses
        self.discovered: int | None = None
        self.found_at: str | None = None  # the part whose retry confirmed the discovered size
        self.evidence: str | None = None
        self.parts: dict[str, str] = {}  # part key -> how a discovered limit decided its verdict
        self._found: int | None = None  # addresses the DUT held outside the run's prefixes when the run found it
        self._assumed_link_address = False  # ``_found`` counts an address in the link prefix nobody read
        self.formed = 0  # the run's prefixes the DUT formed an address in
        self._forming: set[str] = set()  # checks whose parts advertised fresh prefixes

    # -- size --------------------------------------------------------------------------------
    @property
    def size(self) -> int | None:
        return self.declared if self.declared is not None else self.discovered

    def found(self) -> int:
        """Addresses the DUT held outside the run's own prefixes (read once
        through the control adapter, leaving out addresses in the prefixes the
        ledger already counts; else its link-local address and one in the link
        prefix)."""
        if self._found is None:
            s = self.session
            ours = [e.prefix for e in s.ledger.live(s.port.now() if s.port else 0.0)]
            try:
                held = {a.lower() for a in s.control.addresses()} - {s.dut.link_local.lower()}
                held = {a for a in held if not any(ipaddress.IPv6Address(a) in net for net in ours)}
                self._found = 1 + len(held)
            except (NotSupported, BenchError):
                self._found = 2
                self._assumed_link_address = True
        return self._found

    def _link_address_then(self, when: float) -> int:
        """0 where ``found`` counted an address in the link prefix that the
        DUT did not hold at ``when``: it was assumed (no control adapter to
        read the table), and the tester is the only router on the link and had
        not given the DUT that prefix yet (core/dut.py); else 1."""
        s = self.session
        if not self._assumed_link_address or s.target.other_routers or s.target.is_lab or s.dut is None:
            return 1
        given = s.dut.link_prefix_advertised
        return 1 if given is not None and given <= when else 0

    def slots(self) -> int | None:
        """Addresses of the table free for the run's prefixes (None: no bound known)."""
        size = self.size
        return None if size is None else max(0, size - self.found())

    def per_prefix(self) -> int:
        return 2 if self.session.target.claims("Temp-Addr") else 1

    def describe(self) -> str:
        if self.declared is not None:
            return f"dut.max_addresses {self.declared}"
        return f"{self.discovered}, discovered at {self.found_at}"

    # -- making room (a check's context asks, through AddressRoom) ------------------------------
    def make_room(self, ctx: CheckContext, forms: list[tuple[ipaddress.IPv6Network, int]]) -> None:
        """Before an RA: wait until the prefixes it brings fit the table."""
        slots = self.slots()
        if slots is None:
            return
        ledger, now = self.session.ledger, ctx.port.now()
        new = [net for net, valid in forms if valid and not ledger.holds(net, now)]
        if new:
            self._wait(ctx, len(new), slots, skip=True)

    def make_room_first(self, ctx: CheckContext) -> None:
        """Before the check's first probe: room for one prefix, so that a
        check that forms an address does not wait for it in the middle,
        after it set up neighbour entries or timers that the wait would let
        run out (a declared table: every check; a discovered one: the checks
        that form addresses, by area or because an earlier part did).  A
        check that needs only some global address of the DUT uses the one it
        holds instead (``any_address``, scenario/offlink.py): no room made."""
        slots = self.slots()
        if slots is not None and self._makes_room_first(ctx.check):
            self._wait(ctx, 1, slots, skip=False, first=True)

    def wait_before(self, check, letter: str | None) -> float:
        """How long ``make_room_first`` would wait now before the part's first
        probe (0: not at all; also where waiting cannot make room: that part
        says so itself)."""
        slots = self.slots()
        if slots is None or not self._makes_room_first(check) or self.session.port is None:
            return 0.0
        wait = self.session.ledger.wait_for_room(1, slots=slots, per_prefix=self.per_prefix(),
                                                 owner=f"{check.id}#{letter}", now=self.session.port.now())
        return wait or 0.0

    def forms_addresses(self, check) -> bool | None:
        """Whether the check's parts make the DUT form addresses: False where
        declared so, True where its area does or an earlier part of it did,
        None where only running it would tell."""
        if check.forms_addresses is False:
            return False
        return True if self._forms(check) else None

    def _makes_room_first(self, check) -> bool:
        return not check.any_address and (self.declared is not None or self._forms(check))

    def needs(self, ctx: CheckContext, n: int) -> None:
        """The part makes the DUT hold addresses from ``n`` prefixes at once:
        where the table cannot, the part is not judged now, before anything
        is sent."""
        slots = self.slots()
        if slots is not None and n * self.per_prefix() > slots:
            self._cannot(ctx, f"{self._too_many(n, slots)}: run it against a DUT with a larger table")

    def _forms(self, check) -> bool:
        if check.forms_addresses is False:
            return False  # declared: its RAs form no address (AddressRoom.before_send holds it to that)
        return check.id in self._forming or check.area in FORMING_AREAS

    def _too_many(self, n: int, slots: int) -> str:
        return (f"this part needs {n * self.per_prefix()} address(es) at once, and the DUT's table "
                f"({self.describe()}) has room for {slots} beside the addresses it held")

    def _cannot(self, ctx: CheckContext, why: str):
        """A declared table: SKIP (the target says the part cannot fit);
        a discovered one: NOT_JUDGED, the precondition named."""
        if self.declared is not None:
            raise NotApplicable(why)
        self.parts[_key(ctx)] = "not judged"
        raise NotJudged(ADDRESS_ROOM, self.found_at or JUDGED_BY["global-address"], why)

    def _wait(self, ctx: CheckContext, count: int, slots: int, *, skip: bool, first: bool = False) -> None:
        ledger, now = self.session.ledger, ctx.port.now()
        per_prefix = self.per_prefix()
        wait = ledger.wait_for_room(count, slots=slots, per_prefix=per_prefix, owner=_owner(ctx), now=now)
        held = ", ".join(f"{e.prefix} (by {e.owner}, {e.expires - now:.0f} s left)" for e in ledger.live(now))
        limit = float(self.session.target.timing["address_room_wait_s"])
        if (wait is None or wait > limit) and not skip:
            return  # the check may form no address at all; if it does, its RA says whether it fits
        if wait is None or wait > limit:
            # the DUT behaves: its table is full of the run's own addresses (an RA cannot take them back before
            # their valid lifetime runs out, RFC 4862 §5.5.3 e), so the part cannot be judged on this DUT now; a
            # FAIL "formed no address" would be the bench's doing
            own = [e for e in ledger.live(now) if e.owner == _owner(ctx)]
            if wait is None and (len(own) + count) * per_prefix > slots:
                why = self._too_many(len(own) + count, slots)
            else:
                why = (f"the DUT's address table ({self.describe()}) is full of the run's earlier addresses "
                       f"({held}), which an RA cannot take back (RFC 4862 §5.5.3 e)"
                       + (f" and which outlast {limit:g} s (timing.address_room_wait_s)" if wait is not None else ""))
            self._cannot(ctx, f"{why}: reset the DUT between checks (control.adapter) or run this part on its own")
        if wait is not None and wait > 0:
            ctx.note(f"waiting {wait:.1f} s for room in the DUT's address table ({self.describe()})"
                     f"{' before the first probe' if first else ''}: the run's addresses in {held} run out first")
            ctx.measurements["address_room_wait_s"] = round(ctx.measurements.get("address_room_wait_s", 0) + wait, 1)
            if self.declared is None:
                self.parts.setdefault(_key(ctx), "waited")
            ctx.wait(wait)

    # -- what a part formed (the session, after each part) ---------------------------------------
    def fresh(self, ctx: CheckContext, forms: list[tuple[ipaddress.IPv6Network, int]], sent: float,
              held_before: set) -> None:
        """Record the prefixes of an RA the DUT held no address in before it."""
        live = [e for e in self.session.ledger.live(sent) if e.formed and e.owner != _owner(ctx)]
        held, duplicates = len(live), sum(1 for e in live if e.duplicate)
        for net, valid in forms:
            if valid and net not in held_before:
                ctx.fresh.append(Fresh(net, sent, held, duplicates))

    def settle(self, ctx: CheckContext) -> list[Fresh]:
        """After a part: which of its fresh prefixes the DUT formed an address
        in (a DAD probe); a prefix it formed nothing in holds no address and
        leaves the ledger (only where the DUT is known to probe its addresses:
        else nothing can be told).  Returns the prefixes that formed nothing."""
        s = self.session
        observer, ledger = s.observer, s.ledger
        if not ctx.fresh or observer is None:
            return []
        self._forming.add(ctx.check.id)
        probes = observer.did_dad() is not None
        unformed = []
        for f in ctx.fresh:
            probed = observer.probed_in(f.prefix, f.sent)
            if probed:
                ledger.mark_formed(f.prefix, probed)
                self.formed += 1
            elif probes:
                ledger.forget(f.prefix)
                unformed.append(f)
        return unformed

    def suspect(self, ctx: CheckContext, outcome: Outcome, unformed: list[Fresh]) -> Suspicion | None:
        """A part that did not PASS, whose fresh prefix formed nothing while
        the DUT held addresses of the run's earlier prefixes: a full table?
        (Only for a DUT the run does not reset, with no declared size.)"""
        if self.declared is not None or not unformed or outcome.verdict in (Verdict.PASS, Verdict.SKIP):
            return None
        if getattr(ctx, "used_held_address", False):
            return None  # the part went on with an address the DUT held: its verdict did not need the fresh one
        first = next((f for f in unformed if f.held > 0), None)
        if first is None:
            return None
        # an address the DUT gave up as a duplicate may hold no slot (Linux deletes it, lwIP keeps a DADFAILED
        # entry): counted, the table would seem larger than it is, and a later part needing more addresses at once
        # than it holds would run and lose its own to the wait for room (a false FAIL); left out, the size is the
        # smaller one the evidence allows (more waiting, never a wrong verdict), unless nothing else filled it
        filled = first.held - first.duplicates or first.held
        # likewise the DUT's address in the link prefix where it had none yet (found() assumes one): left out
        size = self.found() - 1 + self._link_address_then(first.sent) + filled * self.per_prefix()
        return Suspicion(first.prefix, filled, size, len(ctx.fresh))

    def room_for_retry(self, ctx: CheckContext, suspicion: Suspicion) -> float | None:
        """Seconds until the retry's prefixes fit a table of the suspected
        size (the run's earlier addresses, and the first attempt's, expire
        first); None when waiting cannot make room within the limit."""
        ledger, now = self.session.ledger, ctx.port.now()
        slots = max(0, suspicion.size - self.found())
        wait = ledger.wait_for_room(suspicion.prefixes, slots=slots, per_prefix=self.per_prefix(),
                                    owner="(retry)", now=now)
        limit = float(self.session.target.timing["address_room_wait_s"])
        return None if wait is None or wait > limit else wait

    def confirm(self, key: str, suspicion: Suspicion) -> None:
        """The retry formed its address: the table size is discovered."""
        if self.discovered is None or suspicion.size < self.discovered:
            self.discovered = suspicion.size
            self.found_at = key
            self.evidence = (f"{key} formed no address in {suspicion.prefix} while the DUT held {suspicion.held} "
                             f"address(es) of the run's earlier prefixes ({suspicion.size} in all with its own), "
                             f"and formed one once they had expired")
        self.parts[key] = "retried"

    def refute(self) -> None:
        """The retry formed nothing with room in the table: it was not full."""
        if self.found_at is None:
            self.discovered = None

    def summary(self) -> dict | None:
        if self.declared is None and self.discovered is None and not self.parts:
            return None
        counts: dict[str, int] = {}
        for how in self.parts.values():
            counts[how] = counts.get(how, 0) + 1
        return {"declared": self.declared, "discovered": self.discovered, "found_at": self.found_at,
                "evidence": self.evidence, "formed": self.formed, "parts_needing_discovered_limit": len(self.parts),
                "by_how": counts, "parts": dict(sorted(self.parts.items()))}


class AddressRoom:
    """What one check ``t`` asks of the DUT's address table."""

    def __init__(self, t: CheckContext):
        self.t = t

    @property
    def _table(self) -> AddressTable | None:
        return getattr(self.t.session, "table", None) if self.t.session is not None else None

    def before_send(self, pkt) -> list[tuple[ipaddress.IPv6Network, int]]:
        """The prefixes ``pkt`` makes the DUT form addresses in (not the link's own, which the DUT held when the
        run found it), after waiting for room for them."""
        forms = self._check_prefixes(forms_addresses(pkt))
        check = getattr(self.t, "check", None)
        if forms and check is not None and check.forms_addresses is False:
            raise RuntimeError(f"{check.id} declares forms_addresses=False, but this RA would make the DUT "
                               f"form addresses in {', '.join(str(net) for net, _ in forms)}")
        if forms:
            self.make_room(forms)
        return forms

    def withdrawn(self, pkt) -> list[tuple[ipaddress.IPv6Network, int]]:
        """The prefixes (not the link's own) a withdrawing RA sets to lifetime 0, to record, without waiting."""
        return self._check_prefixes(forms_addresses(pkt))

    def make_room(self, forms: list[tuple[ipaddress.IPv6Network, int]]) -> None:
        """On a DUT with a bounded address table (declared or discovered),
        wait until the addresses earlier checks made it form have expired
        and the prefixes this RA brings fit (see core/ledger.py)."""
        table = self._table
        if table is not None:
            table.make_room(self.t, forms)

    def first(self) -> None:
        """Before the check's first probe, on a DUT with a bounded address
        table: room for one prefix (``AddressTable.make_room_first``)."""
        table = self._table
        if table is not None:
            table.make_room_first(self.t)

    def small(self) -> bool:
        """The DUT's address table is known to be bounded (declared, or
        discovered earlier in the run): room in it is for the checks that
        need an address of their own."""
        table = self._table
        return table is not None and table.slots() is not None

    def needs(self, n: int) -> None:
        """This part makes the DUT hold addresses from ``n`` of its prefixes
        at once: where its table cannot (declared: SKIP; discovered:
        NOT_JUDGED), say so now, before anything is sent."""
        table = self._table
        if table is not None:
            table.needs(self.t, n)

    def duplicate(self, prefix: ipaddress.IPv6Network) -> None:
        """The DUT found its address in ``prefix`` a duplicate and did not
        assign it (a DAD test): a discovered table's size leaves it out."""
        if self.t.session is not None:
            self.t.session.ledger.mark_duplicate(prefix)

    def _check_prefixes(self, forms: list[tuple[ipaddress.IPv6Network, int]]):
        """Leave out the link's own prefix: the DUT held its address when the run found it."""
        return [(net, valid) for net, valid in forms if not net.overlaps(self.t.target.link_prefix)]

    def held_now(self) -> set:
        """The run's prefixes the DUT holds an address in now (before an RA)."""
        session = self.t.session
        return {e.prefix for e in session.ledger.live(self.t.port.now())} if session is not None else set()

    def record(self, forms: list[tuple[ipaddress.IPv6Network, int]], when: float,
               held_before: set | None = None) -> None:
        if self.t.session is None:
            return
        for net, valid in forms:
            self.t.session.ledger.advertise(net, valid, _owner(self.t), when)
        table = self._table
        if held_before is not None and forms and table is not None:
            table.fresh(self.t, forms, when, held_before)


def forms_addresses(pkt) -> list[tuple[ipaddress.IPv6Network, int]]:
    """The autonomous /64 prefixes (with their valid lifetimes) of an RA a
    host would accept (RFC 4861 §6.1.2: hop limit 255, link-local source,
    code 0, checksum left to Scapy, not fragmented); SLAAC forms an address
    only from a prefix as long as 128 less the 64-bit IID, with a preferred
    lifetime no longer than its valid one (RFC 4862 §5.5.3 c, d).
    Deliberately invalid RAs, raw bytes and other packets: none."""
    if not isinstance(pkt, Packet) or ICMPv6ND_RA not in pkt or IPv6 not in pkt:
        return []
    ip, ra = pkt[IPv6], pkt[ICMPv6ND_RA]
    if ip.hlim != 255 or ra.code != 0 or ra.cksum is not None or IPv6ExtHdrFragment in pkt:
        return []
    try:
        if not ipaddress.IPv6Address(ip.src).is_link_local:
            return []
    except ValueError:
        return []
    out, i = [], 1
    opt = pkt.getlayer(ICMPv6NDOptPrefixInfo)
    while opt is not None:
        if opt.A and opt.prefixlen == 64 and opt.len in (None, 4) and opt.preferredlifetime <= opt.validlifetime:
            try:
                net = ipaddress.IPv6Network(f"{opt.prefix}/64", strict=False)
            except ValueError:
                net = None
            if net is not None and not net.is_link_local and not net.is_multicast:
                out.append((net, int(opt.validlifetime)))
        i += 1
        opt = pkt.getlayer(ICMPv6NDOptPrefixInfo, i)
    return out
