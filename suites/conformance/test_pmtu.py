"""Path MTU Discovery — RFC 8201 (obsoletes RFC 1981); IPv6 Ready Core
v6LC.4 (host scope), v6LC.4.1.6 under Core 5.0.x semantics and v6LC.4.1.12.

Topology: the tester is the DUT's only router TR1 (the lab stops its radvd)
and advertises a fresh prefix; off-link TN2/TN3 sit behind it, TN1 on the
link.  Packet Too Big messages come from TR1 (or TN1 for the on-link case).
References, parts and expected outcomes: keywords/v6gate/checks/pmtu.py
(`v6gate list --area pmtu`).  The 5-minute no-increase check runs in the
`full` profile.
"""

from v6gate.pytest_plugin import check_test

test_pmtu = check_test("pmtu")
