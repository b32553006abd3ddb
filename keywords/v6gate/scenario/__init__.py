"""The scenario layer: the steps that drive a DUT through the per-check
context ``t`` and say what it did, shared by the checks of one or more
areas.

Between ``checks/`` (what each clause asserts) and ``net/`` (packets and
protocols, no check context): a step here sends through ``t``, waits,
observes, and returns what it found (a frame, ``(problems, seen)``, a
binding) or raises ``Deviation`` when the DUT did not do what the step
needs (``judged_by`` names the check that judges that behaviour).  A
step never builds a check's verdict for it.

* ``nce``: the DUT's Neighbor Cache driven into a state and inferred from the wire
* ``offlink``: the tester as the DUT's only router, nodes beyond it
* ``firsthop``: the DUT's first hop toward an off-link destination
* ``observe``: the DUT's addresses, DAD and router choice observed from the wire
* ``probes``: an Echo Request as the carrier of a probe; reply, error or silence
* ``rd``: router discovery steps (autoconfiguration through a router, its use)
* ``dhcpv6``: the tester's DHCPv6 server and driving the DUT's client to each message
* ``storage``: the storage clients on the link and the service sessions they hold
* ``v6only``: the IPv4 a DUT sent in a window (IPv6-only checks, storage)
"""
