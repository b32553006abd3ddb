"""The address ledger: RFC 4862 §5.5.3 (e) arithmetic, room in a bounded
table, and which RAs a host would form an address from."""

from __future__ import annotations

import ipaddress
import math

import pytest
from scapy.layers.inet6 import ICMPv6ND_RA, ICMPv6NDOptPrefixInfo, IPv6, IPv6ExtHdrFragment
from scapy.layers.l2 import Ether

from v6gate.core.ledger import EXPIRY_GRACE_S, INFINITY, RESTATE_S, TWO_HOURS, AddressLedger, remaining_after
from v6gate.core.room import forms_addresses as _forms_addresses

A = ipaddress.IPv6Network("2001:db8:a::/64")
B = ipaddress.IPv6Network("2001:db8:b::/64")
C = ipaddress.IPv6Network("2001:db8:c::/64")


@pytest.mark.parametrize("stored, received, left", [
    (None, 600, 600.0),  # a new prefix forms an address
    (None, 0, None),  # a new prefix with valid lifetime 0 forms nothing
    (100.0, 600, 600.0),  # longer than what remains: raised
    (100.0, 0, 100.0),  # a withdrawal cannot shorten what remains under two hours
    (100.0, 50, 100.0),
    (5000.0, 9000, 9000.0),  # over two hours: taken as is
    (20000.0, 0, float(TWO_HOURS)),  # more than two hours remain: cut to two hours, never below
    (20000.0, 3600, float(TWO_HOURS)),
    (100.0, INFINITY, math.inf),
])
def test_remaining_lifetime_follows_rfc4862_5_5_3_e(stored, received, left):
    assert remaining_after(stored, received) == left


def test_a_withdrawn_address_runs_out_its_lifetime():
    led = AddressLedger()
    led.advertise(A, 40, "slaac#A", now=0.0)
    led.advertise(A, 0, "slaac#A", now=5.0)  # the check's final RA: the DUT may round what remains up a second
    assert led.holds(A, 39.0)
    assert led.holds(A, 40.0 + RESTATE_S + EXPIRY_GRACE_S - 0.1)
    assert not led.holds(A, 40.0 + RESTATE_S + EXPIRY_GRACE_S + 0.1)
    assert led.summary(41.0) == {"prefixes": [str(A)], "count": 1, "all_gone_in_s": 2.0}


def test_room_waits_for_the_earliest_other_checks_address():
    led = AddressLedger()
    led.advertise(A, 3600, "echo#G", now=0.0)
    led.advertise(B, 40, "slaac#A", now=10.0)
    # two free slots, both taken: the next check waits until slaac#A's address is gone
    wait = led.wait_for_room(1, slots=2, per_prefix=1, owner="slaac#B", now=20.0)
    assert wait == pytest.approx(10.0 + 40 + EXPIRY_GRACE_S - 20.0)
    assert led.wait_for_room(1, slots=3, per_prefix=1, owner="slaac#B", now=20.0) == 0.0
    # two prefixes, each with a temporary address beside it: two must go
    assert led.wait_for_room(1, slots=3, per_prefix=2, owner="x", now=20.0) == pytest.approx(3600 + EXPIRY_GRACE_S - 20)


def test_room_cannot_be_made_from_the_checks_own_or_endless_addresses():
    led = AddressLedger()
    led.advertise(A, 600, "rd#A", now=0.0)
    assert led.wait_for_room(1, slots=1, per_prefix=1, owner="rd#A", now=1.0) is None
    led.advertise(C, INFINITY, "rd#B", now=0.0)
    assert led.wait_for_room(1, slots=1, per_prefix=1, owner="rd#A", now=1.0) is None


def test_re_advertising_a_live_prefix_keeps_its_first_owner():
    led = AddressLedger()
    led.advertise(A, 40, "first", now=0.0)
    led.advertise(A, 600, "second", now=10.0)
    (entry,) = led.live(11.0)
    assert entry.owner == "first" and entry.expires == pytest.approx(610.0 + EXPIRY_GRACE_S)


def _pio(prefix, *, A=1, plen=64, valid=600, preferred=300):
    return ICMPv6NDOptPrefixInfo(prefix=prefix, prefixlen=plen, A=A, validlifetime=valid, preferredlifetime=preferred)


def test_only_ras_a_host_accepts_form_addresses():
    good = Ether() / IPv6(src="fe80::1", dst="ff02::1", hlim=255) / ICMPv6ND_RA() / _pio("2001:db8:a::") / _pio(
        "2001:db8:b::", A=0) / _pio("2001:db8:c::", plen=48) / _pio("2001:db8:d::", valid=10, preferred=20)
    assert _forms_addresses(good) == [(A, 600)]
    for bad in (
        Ether() / IPv6(src="fe80::1", dst="ff02::1", hlim=254) / ICMPv6ND_RA() / _pio("2001:db8:a::"),
        Ether() / IPv6(src="2001:db8::1", dst="ff02::1", hlim=255) / ICMPv6ND_RA() / _pio("2001:db8:a::"),
        Ether() / IPv6(src="fe80::1", dst="ff02::1", hlim=255) / ICMPv6ND_RA(code=1) / _pio("2001:db8:a::"),
        Ether() / IPv6(src="fe80::1", dst="ff02::1", hlim=255) / ICMPv6ND_RA(cksum=0x1234) / _pio("2001:db8:a::"),
        Ether() / IPv6(src="fe80::1", dst="ff02::1", hlim=255) / IPv6ExtHdrFragment() / ICMPv6ND_RA()
        / _pio("2001:db8:a::"),
        bytes(good),
    ):
        assert _forms_addresses(bad) == []


def test_a_short_lease_covers_the_dad_probe_and_the_probes_after_it_on_the_duts_timing():
    from v6gate.core.ledger import ADDRESS_LEASE_S, DAD_DELAY_S, SHORT_LEASE_SPARE_S, short_lease

    # 1 s windows, the RFC's RetransTimer: DAD (1 + 1 + 1 s), three Neighbor Solicitations of 1 + 3 x 1 s, the spare
    assert short_lease(1.0, 1.0, probes=3) == 3 + 12 + SHORT_LEASE_SPARE_S == 25
    assert short_lease(1.0, 1.0, probes=0) == 13
    # the DAD checks' three NS: the first waits out further DAD probes, the other two a reply time each
    assert short_lease(1.0, 1.0, probes=1, quick=2) == 3 + 4 + 2 + SHORT_LEASE_SPARE_S == 19
    assert short_lease(1.0, 0.1, probes=3) == math.ceil(DAD_DELAY_S + 1.1 + 3 * 1.3 + SHORT_LEASE_SPARE_S)
    assert short_lease(2.0, 1.0, probes=3) > short_lease(1.0, 1.0, probes=3)  # a slower DUT gets longer
    assert short_lease(10.0, 3.0, probes=3) == ADDRESS_LEASE_S  # never longer than the usual lease


def test_only_a_dut_the_run_does_not_rebuild_gets_a_short_lease():
    import types

    from v6gate.core.context import CheckContext
    from v6gate.core.ledger import ADDRESS_LEASE_S

    ctx = CheckContext.__new__(CheckContext)
    ctx.reply_timeout, ctx.retrans_timer = 1.0, 1.0
    ctx.target = types.SimpleNamespace(external=True)
    assert ctx.lease_for_probes(3) == 25 and ctx.lease_for_probes(0, rebuilt=30) == 13
    ctx.target = types.SimpleNamespace(external=False)  # the lab's DUT, rebuilt before each check: as before
    assert ctx.lease_for_probes(3) == ADDRESS_LEASE_S and ctx.lease_for_probes(0, rebuilt=30) == 30


def test_a_span_lease_covers_the_parts_waits_and_probes_from_its_ra_to_its_last_probe():
    from v6gate.core.ledger import (
        ADDRESS_LEASE_S,
        DAD_DELAY_S,
        DAD_SETTLE_S,
        PROBE_OVERHEAD_S,
        SHORT_LEASE_SPARE_S,
        span_lease,
    )

    # 1 s windows, the RFC's RetransTimer.  One next hop (two tries): DAD (1 + 1 + 1 s), its end (a DUT without DAD:
    # two reply timeouts in place of the RetransTimer, 1 s more), two tries of 1 + 3 x 1 s and 0.5 s each, the spare
    assert span_lease(1.0, 1.0, probes=2) == 3 + 1 + 2 * (4 + PROBE_OVERHEAD_S) + SHORT_LEASE_SPARE_S == 23
    # rd.router_lifetime_is_honoured: A (Router Lifetime 4 s and 0.5 s, one next hop), B (two next hops 0.2 s
    # apart), C (two next hops around Router Lifetime 5 s and 0.5 s)
    assert span_lease(1.0, 1.0, probes=2, waits=4.5) == 28
    assert span_lease(1.0, 1.0, probes=4, waits=0.2) == 33
    assert span_lease(1.0, 1.0, probes=4, waits=5.5) == 38
    # a DUT that answers within 0.1 s, the RFC's RetransTimer: forming ends with dad_done's margin (in_use is shorter)
    assert span_lease(0.1, 1.0, probes=2) == math.ceil(DAD_DELAY_S + 0.1 + 1.0 + DAD_SETTLE_S
                                                       + 2 * (3.1 + PROBE_OVERHEAD_S) + SHORT_LEASE_SPARE_S)
    assert span_lease(4.0, 2.0, probes=4, waits=5.5) == ADDRESS_LEASE_S  # never longer than the usual lease


@pytest.mark.parametrize("reply", [0.3, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("retrans", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("probes", [0, 2, 4])
@pytest.mark.parametrize("waits", [0.0, 0.2, 4.5, 5.5, 12.0])
def test_a_span_lease_is_never_shorter_than_the_span_it_is_for(reply, retrans, probes, waits):
    """The address must not expire while the part still uses it (a false
    FAIL, or a false PASS where the part expects no answer): the lease
    outlasts the part's longest timeline, with or without DAD, by the spare,
    unless that reaches the usual lease, which it then is."""
    from v6gate.core.ledger import ADDRESS_LEASE_S, DAD_DELAY_S, SHORT_LEASE_SPARE_S, short_lease, span_lease

    probe = reply + 3 * retrans
    with_dad = DAD_DELAY_S + reply + retrans + 0.2 + waits + probes * probe  # dad_probe_in, dad_done, waits, tries
    without_dad = DAD_DELAY_S + reply + 2 * reply + waits + probes * probe  # the DAD window, in_use, waits, tries
    lease = span_lease(reply, retrans, probes=probes, waits=waits)
    assert lease == ADDRESS_LEASE_S or lease >= max(with_dad, without_dad) + SHORT_LEASE_SPARE_S
    assert lease <= ADDRESS_LEASE_S
    assert lease >= short_lease(reply, retrans, probes=probes)  # never below the DAD-and-probes lease
    assert span_lease(reply, retrans, probes=probes, waits=waits + 1) >= lease  # longer spans, longer leases
    assert span_lease(reply, retrans, probes=probes + 1, waits=waits) >= lease


def test_only_a_dut_the_run_does_not_rebuild_gets_a_span_lease():
    import types

    from v6gate.core.context import CheckContext
    from v6gate.core.ledger import ADDRESS_LEASE_S

    ctx = CheckContext.__new__(CheckContext)
    ctx.reply_timeout, ctx.retrans_timer = 1.0, 1.0
    ctx.target = types.SimpleNamespace(external=True)
    assert ctx.lease_for_probes(2, waits=0.0) == 23 and ctx.lease_for_probes(4, waits=5.5) == 38
    assert ctx.lease_for_probes(2) == 21  # without waits: the DAD-and-probes lease, as before
    ctx.target = types.SimpleNamespace(external=False)  # the lab's DUT, rebuilt before each check: the RAs unchanged
    assert ctx.lease_for_probes(2, waits=0.0) == ADDRESS_LEASE_S and ctx.lease_for_probes(4, waits=5.5) == ADDRESS_LEASE_S
