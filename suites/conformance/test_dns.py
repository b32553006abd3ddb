"""The DNS stub resolver over IPv6 (RFC 8504-bis beyond "AAAA over IPv6"):
EDNS(0) on queries (RFC 6891), TCP after a truncated answer (RFC 7766),
IPv4-mapped AAAA answers discarded, answers from an unexpected source
ignored (RFC 5452), reverse lookups in ip6.arpa (RFC 3596), HTTPS/SVCB
address hints (RFC 9460).

Topology: the tester plays the DUT's resolver (a DNS server over UDP and
TCP, reached only over IPv6, at the address the target file gives or
advertised by RDNSS); the lab DUT's glibc resolver is pointed at it (DUT
configurations dns-client, dns-dual-stack).  Checks, parts and expected
outcomes are declared in keywords/v6gate/checks/dns.py
(`v6gate list --area dns`); docs/dns.md.
"""

from v6gate.pytest_plugin import check_test

test_dns = check_test("dns")
