"""Checks of behaviour the lab's DUT does not implement, proven both ways
(root, the lab): RFC 9686 (dhcpv6.self_generated_address_is_registered,
capability ADDR-REG) and RFC 9463 (rdnss.encrypted_resolver_is_used,
capability DNR).  The lab target claims neither; the controls prove them
the same way (tests/lab/test_controls.py: a claiming copy of the lab target,
the faults' stands_in_for); here a copy of the lab target claims both and each check runs
against the project's own simulated client (lab/impostor_rules/
dhcpv6_addr_reg.py, rdnss_dnr.py): PASS when it behaves correctly, FAIL for
the named mistake, FAIL on the plain lab DUT."""

import pytest

from v6gate.core.check import find
from v6gate.core.session import Session

from conftest import claiming_target


@pytest.fixture(scope="module")
def claiming_session(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("addr-reg")
    target = claiming_target(tmp, ["ADDR-REG", "DNR", "DHCPv6-PD"])
    with Session.for_lab(tmp / "run", target_file=target) as s:
        yield s


@pytest.mark.parametrize("part, fault, want, says", [
    ("register", "impostor_registers_addresses", "PASS", "acknowledged, not repeated"),
    ("register", "impostor_registers_from_link_local", "FAIL", "not from the address being registered"),
    ("register", None, "FAIL", "no Information-request"),
    ("retransmit", "impostor_registers_addresses", "PASS", "same transaction ID"),
    ("retransmit", "impostor_registers_without_retransmission", "FAIL", "not retransmitted"),
])
def test_addr_reg_is_proven_both_ways(claiming_session, part, fault, want, says):
    c = find("dhcpv6.self_generated_address_is_registered")
    r = claiming_session.run(c, c.part(part), fault=fault, setup=f"addr-reg-{fault or 'plain'}")
    assert r.verdict == want, r.reason
    assert says in r.reason, r.reason


@pytest.mark.parametrize("fault, want, says", [
    ("impostor_resolves_over_dnr", "PASS", "TCP segment(s) to port 8853"),
    ("impostor_takes_dnr_for_rdnss", "FAIL", "plain DNS to the encrypted resolver"),
    (None, "FAIL", "no TCP connection to"),
])
def test_dnr_is_proven_both_ways(claiming_session, fault, want, says):
    c = find("rdnss.encrypted_resolver_is_used")
    r = claiming_session.run(c, c.parts[0], fault=fault, setup=f"dnr-{fault or 'plain'}")
    assert r.verdict == want, r.reason
    assert says in r.reason, r.reason


@pytest.mark.parametrize("fault, want, says", [
    ("impostor_requests_a_prefix_for_p_flag", "PASS", "Solicit"),
    ("impostor_solicits_an_address_for_p_flag", "FAIL", "carries no IA_PD"),
    (None, "FAIL", "no Solicit within"),
])
def test_p_flag_prefix_delegation_is_proven_both_ways(claiming_session, fault, want, says):
    c = find("dhcpv6.p_flag_starts_prefix_delegation")
    r = claiming_session.run(c, c.parts[0], fault=fault, setup=f"pd-{fault or 'plain'}")
    assert r.verdict == want, r.reason
    assert says in r.reason, r.reason
