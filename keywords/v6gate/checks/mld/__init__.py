"""Multicast Listener Discovery checks, one module per section, the listener side — RFC 2710 (MLDv1, the
IPv6 Ready MLD Operations tests MLD.1.1-1.15) and RFC 3810 (MLDv2: Report
format, queries, MLDv1 compatibility).

The tester is the querier (TQ, link-local source).  The group under test is
one the DUT always listens to, the solicited-node group of its link-local
address; checks that need the DUT to start or stop listening use the
control adapter's listen/unlisten.  The MLDv1 checks first send an MLDv1
General Query: an MLDv2 host then enters MLDv1 compatibility mode and
behaves as RFC 2710 says (RFC 3810 §8.2.1)."""
