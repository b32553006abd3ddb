"""Room in the DUT's address table: on a DUT that declares a bounded table
(``dut.max_addresses``), before an RA with a prefix the DUT holds no
address in, wait until the addresses earlier checks made it form have
expired (core/ledger.py keeps the run's prefixes and when they run out),
or SKIP when they cannot in time.  Used through the check context:
``t.send`` (before and after every RA), ``t.needs_addresses(n)`` and the
session's ``make_room_first``."""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

from scapy.layers.inet6 import ICMPv6ND_RA, ICMPv6NDOptPrefixInfo, IPv6, IPv6ExtHdrFragment
from scapy.packet import Packet

from ..errors import NotApplicable

if TYPE_CHECKING:
    from .context import CheckContext


class AddressRoom:
    """The address-table bookkeeping of one check ``t``."""

    def __init__(self, t: CheckContext):
        self.t = t

    def before_send(self, pkt) -> list[tuple[ipaddress.IPv6Network, int]]:
        """The prefixes ``pkt`` makes the DUT form addresses in (not the link's own, which the DUT held when the
        run found it), after waiting for room for them."""
        forms = self._check_prefixes(forms_addresses(pkt))
        if forms:
            self.make_room(forms)
        return forms

    def withdrawn(self, pkt) -> list[tuple[ipaddress.IPv6Network, int]]:
        """The prefixes (not the link's own) a withdrawing RA sets to lifetime 0, to record, without waiting."""
        return self._check_prefixes(forms_addresses(pkt))

    @property
    def _owner(self) -> str:
        return f"{self.t.check.id}#{self.t.part}"

    def make_room(self, forms: list[tuple[ipaddress.IPv6Network, int]]) -> None:
        """On a DUT with a bounded address table (``dut.max_addresses``),
        wait until the addresses earlier checks made it form have expired
        and the prefixes this RA brings fit (see core/ledger.py)."""
        session = self.t.session
        slots = session.address_slots() if session is not None else None
        if slots is None:
            return
        ledger, now = session.ledger, self.t.port.now()
        new = [net for net, valid in forms if valid and not ledger.holds(net, now)]
        if new:
            self._wait_for_room(len(new), slots, skip=True)

    def first(self) -> None:
        """Before the check's first probe, on a DUT with a bounded address
        table: room for one prefix, so that a check that forms an address
        does not wait for it in the middle, after it set up neighbour
        entries or timers that the wait would let run out."""
        session = self.t.session
        slots = session.address_slots() if session is not None else None
        if slots is not None:
            self._wait_for_room(1, slots, skip=False, first=True)

    def _wait_for_room(self, count: int, slots: int, *, skip: bool, first: bool = False) -> None:
        ledger, now = self.t.session.ledger, self.t.port.now()
        per_prefix = 2 if self.t.target.claims("Temp-Addr") else 1
        wait = ledger.wait_for_room(count, slots=slots, per_prefix=per_prefix, owner=self._owner, now=now)
        held = ", ".join(f"{e.prefix} (by {e.owner}, {e.expires - now:.0f} s left)" for e in ledger.live(now))
        limit = float(self.t.target.timing["address_room_wait_s"])
        if (wait is None or wait > limit) and not skip:
            return  # the check may form no address at all; if it does, its RA says whether it fits
        if wait is None or wait > limit:
            # the DUT behaves: its declared table is full of the run's own addresses (an RA cannot take them back
            # before their valid lifetime runs out, RFC 4862 §5.5.3 e), so the part cannot be judged on this DUT
            # now; a FAIL "formed no address" would be the bench's doing
            size = self.t.target.dut_max_addresses
            own = [e for e in ledger.live(now) if e.owner == self._owner]
            if wait is None and (len(own) + count) * per_prefix > slots:
                why = self._too_many(len(own) + count, slots)
            else:
                why = (f"the DUT's address table (dut.max_addresses {size}) is full of the run's earlier addresses "
                       f"({held}), which an RA cannot take back (RFC 4862 §5.5.3 e)"
                       + (f" and which outlast {limit:g} s (timing.address_room_wait_s)" if wait is not None else ""))
            raise NotApplicable(f"{why}: reset the DUT between checks (control.adapter) or run this part on its own")
        if wait > 0:
            self.t.note(f"waiting {wait:.1f} s for room in the DUT's address table (max_addresses "
                      f"{self.t.target.dut_max_addresses}){' before the first probe' if first else ''}: the run's "
                      f"addresses in {held} run out first")
            self.t.measurements["address_room_wait_s"] = round(self.t.measurements.get("address_room_wait_s", 0)
                                                             + wait, 1)
            self.t.wait(wait)

    def _too_many(self, n: int, slots: int) -> str:
        per_prefix = 2 if self.t.target.claims("Temp-Addr") else 1
        return (f"this part needs {n * per_prefix} address(es) at once, and the DUT's table (dut.max_addresses "
                f"{self.t.target.dut_max_addresses}) has room for {slots} beside the addresses it held")

    def needs(self, n: int) -> None:
        """This part makes the DUT hold addresses from ``n`` of its prefixes
        at once: on a DUT whose declared table (``dut.max_addresses``) cannot,
        SKIP now, before anything is sent."""
        slots = self.t.session.address_slots() if self.t.session is not None else None
        per_prefix = 2 if self.t.target.claims("Temp-Addr") else 1
        if slots is not None and n * per_prefix > slots:
            raise NotApplicable(f"{self._too_many(n, slots)}: run it against a DUT with a larger table")

    def _check_prefixes(self, forms: list[tuple[ipaddress.IPv6Network, int]]):
        """Leave out the link's own prefix: the DUT held its address when the run found it."""
        return [(net, valid) for net, valid in forms if not net.overlaps(self.t.target.link_prefix)]

    def record(self, forms: list[tuple[ipaddress.IPv6Network, int]], when: float) -> None:
        if self.t.session is None:
            return
        for net, valid in forms:
            self.t.session.ledger.advertise(net, valid, self._owner, when)


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
