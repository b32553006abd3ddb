"""The passive audit on a capture of a lab run agrees with the active
checks run on the same DUT during that capture: both ways, on the healthy
lab DUT and under the faults the checks name (root, the lab)."""

import pytest

from v6gate.audit.findings import ACTIVE
from v6gate.audit.labrun import active_verdicts, capture_lab_run
from v6gate.audit.run import audit_capture
from v6gate.report.results import all_checks

ACTIVE_OF = {active: finding for finding, active in ACTIVE.items()}
LEAK = "dut_runs_a_dhcpv4_client_without_option_108"
SELECT = "v6only.ipv6_is_preferred_for_a_dual_stack_name"
#: one capture per DUT configuration (an IPv6-only host and a dual-stack one are different hosts on the wire)
RUNS = {
    "v6only-healthy": ("PASS", [("v6only.host_sends_no_ipv4_on_an_ipv6_only_link", "in_use", None),
                                ("v6only.ipv6_only_preferred_option_stops_dhcpv4", "request", None),
                                ("v6only.ipv6_only_preferred_option_stops_dhcpv4", "offer", None),
                                ("v6only.names_are_resolved_over_ipv6", "rdnss", None)]),
    "v6only-faults": ("FAIL", [("v6only.host_sends_no_ipv4_on_an_ipv6_only_link", "in_use", LEAK),
                               ("v6only.ipv6_only_preferred_option_stops_dhcpv4", "request", LEAK),
                               ("v6only.ipv6_only_preferred_option_stops_dhcpv4", "offer",
                                "impostor_uses_an_address_offered_with_option_108")]),
    "dual-stack-healthy": ("PASS", [(SELECT, None, None)]),
    "dual-stack-fault": ("FAIL", [(SELECT, None, "dut_prefers_ipv4_in_address_selection")]),
}


@pytest.mark.parametrize("run", sorted(RUNS))
def test_audit_of_a_lab_run_agrees_with_its_active_checks(run, tmp_path):
    expected, items = RUNS[run]
    record = capture_lab_run(items, tmp_path / "lab-run.pcapng", tmp_path / "run")
    assert {c["verdict"] for c in record["checks"]} == {expected}, record["checks"]
    _, doc = audit_capture(tmp_path / "lab-run.pcapng", hosts=[record["dut_mac"]], out=tmp_path / "audit")
    audited = {c["id"]: c for c in all_checks(doc)}
    active = active_verdicts(record)
    covered = {ACTIVE_OF.get(c) or ACTIVE_OF.get(f"{c}#{p}") for c, p, _ in items} - {None}
    assert set(active) == covered, active
    for finding, verdict in active.items():
        assert audited[finding]["verdict"] == verdict, (
            f"{finding}: audit {audited[finding]['verdict']} ({audited[finding]['seen']}) but the active check "
            f"{ACTIVE[finding]} gave {verdict}")
    if not run.startswith("dual-stack"):  # a dual-stack host uses IPv4, so it is never IPv6-only ready
        assert audited["audit.ipv6_only_readiness"]["verdict"] == expected
