"""Router and prefix discovery checks, a module per section:
solicitations, validity, parameters, neighbor_cache, next_hop,
route_information (the steps they share are in ``scenario/rd.py``).  Router and prefix discovery (RFC 4861 §6, RFC 6980 §5) — IPv6 Ready Core
v6LC.2.2 and the host prefix list of v6LC.2.1.3/2.1.4.

The tester is the DUT's only router in these checks: the emulated routers
(TR1, TR2) send Router Advertisements with short lifetimes and timers, and
the DUT's answers to Echo Requests from a node beyond them (TN2) show which
routers and prefixes it uses.  Timers come from RFC 4861 §10 and the
target's timing; the tester sets ReachableTime / RetransTimer in its RAs
where a check needs them short."""
