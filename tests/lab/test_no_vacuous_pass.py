"""No vacuous PASS: every "silently discard" part is followed, in the same
check, by a valid message whose effect is required, so a DUT that ignores
every RA (or every Redirect, or every MLD Query) FAILs it instead of passing it for free.
Where the valid message's effect is an address the part needs (the slaac parts),
one root cause gives one FAIL: the part is NOT_JUDGED and names the part that
judges that address, which must FAIL under the same fault (never a PASS anywhere).

Each case runs the part on the lab under a fault that makes the DUT ignore
all such messages and requires a FAIL that says so (the valid message had no
effect).  The parts' own controls (tests/lab/test_controls.py) prove the
other side: PASS on the healthy lab, FAIL under their own fault.
"""

import pytest

from v6gate.core.check import load_all
from v6gate.core.session import Session

IGNORES_EVERY_RA = "dut_drops_router_advertisements"
IGNORES_EVERY_REDIRECT = "dut_ignores_redirects"
IGNORES_EVERY_QUERY = "dut_ignores_mld_queries"
# check id, part, the fault that makes the DUT ignore every message of the kind
CASES = [
    ("rd.invalid_ra_is_ignored", "B", IGNORES_EVERY_RA),
    ("rd.invalid_ra_is_ignored", "E", IGNORES_EVERY_RA),
    ("rd.fragmented_ra_is_ignored", "A", IGNORES_EVERY_RA),
    ("rd.ra_in_atomic_fragment_is_ignored", "A", IGNORES_EVERY_RA),
    ("rd.solicited_ra_stops_solicitations", "D", IGNORES_EVERY_RA),
    ("slaac.prefix_option_processing", "B", IGNORES_EVERY_RA),
    ("slaac.prefix_option_processing", "H", IGNORES_EVERY_RA),
    ("mld.invalid_query_is_ignored", "hop_limit_2", IGNORES_EVERY_QUERY),
    ("redirect.invalid_on_link_redirect_is_ignored", "C", IGNORES_EVERY_REDIRECT),
    ("redirect.invalid_alternate_router_redirect_is_ignored", "E", IGNORES_EVERY_REDIRECT),
    ("redirect.fragmented_redirect_is_ignored", None, IGNORES_EVERY_REDIRECT),
    ("redirect.invalid_redirect_does_not_update_neighbor_cache", "C", IGNORES_EVERY_REDIRECT),
]


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    s = Session.for_lab(tmp_path_factory.mktemp("no-vacuous-pass"))
    yield s
    s.close()


#: the part that judges an address the slaac parts need (issue 30: its precondition, one root cause)
ADDRESS_JUDGE = "slaac.global_address_is_formed_and_probed#A"


@pytest.mark.parametrize("check_id, part, fault", CASES, ids=[f"{c}#{p}" for c, p, _ in CASES])
def test_a_dut_that_ignores_everything_fails(session, check_id, part, fault):
    c = load_all()[check_id]
    r = session.run(c, c.part(part), fault=fault, setup="ignores-everything")
    assert "proves nothing" in r.reason or "did not accept the RA" in r.reason, r.reason  # problems lead the reason
    if r.verdict == "NOT_JUDGED":  # its precondition, an address from a valid RA, was not reached
        assert check_id.startswith("slaac.") and r.precondition["judged_by"] == ADDRESS_JUDGE, r.precondition
        judge_id, judge_part = ADDRESS_JUDGE.split("#")
        judge = load_all()[judge_id]
        j = session.run(judge, judge.part(judge_part), fault=fault, setup="ignores-everything")
        assert j.verdict == "FAIL", f"the root cause must FAIL where it is judged: {j.reason}"
        return
    assert r.verdict == "FAIL", r.reason
