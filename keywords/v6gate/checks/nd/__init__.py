"""Neighbor Discovery checks, one module per section (RFC 4861, RFC 6980) — IPv6 Ready Core v6LC.2.1:
address resolution, the Neighbor Cache state machine and Neighbor
Unreachability Detection, on-link determination.

Neighbour-cache states are driven and judged from the wire (see
``net/nce.py``): the checks never read the DUT's cache.  Timers come from
RFC 4861 §10 and the target's timing; where a check ages an entry, the
tester shortens ReachableTime with a Router Advertisement (which needs it to
be the only router).  In the lab, NUD checks use the ``nud-fast`` DUT
configuration (DELAY_FIRST_PROBE_TIME 1 s, stated in the lab target).
"""
