"""Offload correctness over IPv6 — receive checksum validation with and
without extension headers (RFC 8200 §8.1, §4; RFC 9293 §3.1, §3.10.7; RFC
768) and UDP zero checksums (RFC 8200 §8.1, RFC 6936).

Topology: the tester sends crafted TCP SYNs and UDP datagrams to the DUT's
declared echo service (target ``services:``) and judges what comes back.  The
lab DUT runs every check twice: DUT configuration offload-on (its veth's
tx/rx checksum, TSO, GSO, GRO on) and offload-off (all off); the verdicts
must agree.  Checks, parts and expected outcomes are declared in
keywords/v6gate/checks/offload.py (`v6gate list --area offload`); what the
lab can and cannot prove about offload engines is in docs/offload.md.
"""

from v6gate.pytest_plugin import check_test

test_offload = check_test("offload")
