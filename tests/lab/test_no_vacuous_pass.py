"""No vacuous PASS: every "silently discard" part is followed, in the same
check, by a valid message whose effect is required, so a DUT that ignores
every RA (or every Redirect, or every MLD Query) FAILs it instead of passing it for free.

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


@pytest.mark.parametrize("check_id, part, fault", CASES, ids=[f"{c}#{p}" for c, p, _ in CASES])
def test_a_dut_that_ignores_everything_fails(session, check_id, part, fault):
    c = load_all()[check_id]
    r = session.run(c, c.part(part), fault=fault, setup="ignores-everything")
    assert r.verdict == "FAIL", r.reason
    assert "proves nothing" in r.reason or "did not accept the RA" in r.reason, r.reason  # problems lead the reason
