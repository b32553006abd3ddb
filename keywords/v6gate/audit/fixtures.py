"""The audit's sample captures (fixtures/captures/), each a capture of a
lab run with the verdicts of the active checks that ran in it
(``<name>.json`` beside ``<name>.pcapng``).  ``tools/make-audit-fixtures``
makes them again."""

from __future__ import annotations

from ..paths import FIXTURES

CAPTURES = FIXTURES / "captures"

#: name -> (what it shows, [(check id, part, fault)])
SAMPLES = {
    "v6only-host": (
        "the lab's IPv6-only-ready host (dhcpcd, RFC 8925) on its healthy lab: start-up, names, connections, "
        "DHCPv4 with option 108 on an IPv6-mostly link, DNS from RDNSS and stateless DHCPv6, the DNS64/NAT64 path",
        [("v6only.host_sends_no_ipv4_on_an_ipv6_only_link", "startup", None),
         ("v6only.host_sends_no_ipv4_on_an_ipv6_only_link", "in_use", None),
         ("v6only.ipv6_only_preferred_option_stops_dhcpv4", "request", None),
         ("v6only.ipv6_only_preferred_option_stops_dhcpv4", "offer", None),
         ("v6only.names_are_resolved_over_ipv6", "rdnss", None),
         ("v6only.names_are_resolved_over_ipv6", "dhcpv6", None),
         ("v6only.ipv4_only_name_is_reached_through_nat64", None, None)]),
    "v6only-host-dhcpv4-without-108": (
        "the same host also running a DHCPv4 client that does not know RFC 8925 (ISC dhclient)",
        [("v6only.host_sends_no_ipv4_on_an_ipv6_only_link", "startup", "dut_runs_a_dhcpv4_client_without_option_108"),
         ("v6only.ipv6_only_preferred_option_stops_dhcpv4", "request", "dut_runs_a_dhcpv4_client_without_option_108")]),
    "v6only-host-ignores-option-108": (
        "a DHCPv4 client that asks for option 108 and still requests the address offered with it",
        [("v6only.ipv6_only_preferred_option_stops_dhcpv4", "offer", "impostor_uses_an_address_offered_with_option_108")]),
    "dad-skipped": (
        "a host that assigns its addresses without Duplicate Address Detection, restarted on the capture",
        [("slaac.link_local_address_is_probed_before_use", None, "dut_skips_dad")]),
    "dual-stack-host": (
        "the host on a dual-stack link (static IPv4): address selection and services over both families",
        [("v6only.ipv6_is_preferred_for_a_dual_stack_name", None, None),
         ("v6only.declared_services_answer_over_ipv6", "tcp", None)]),
}
