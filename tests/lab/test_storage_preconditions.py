"""Storage checks on a DUT that never reached their precondition: with no
global address on the link (SLAAC off, global addresses flushed:
fixtures/faults/storage.yaml ``dut_has_no_global_address``), every storage
part says NOT_JUDGED ``global-address`` and points at the check that judges
address formation, instead of FAILing its own clause (its client could not
connect) or ERRORing (the bench is fine).  One root cause, one FAIL: that
FAIL belongs to slaac.global_address_is_formed_and_probed.
"""

import pytest

from v6gate.core.check import load_all
from v6gate.core.session import Session

FAULT = "dut_has_no_global_address"
#: the checks of the lab's VM target (NVMe/TCP, the NFSv4 referral; DUT configuration storage-vm) are left
#: out: it is a device of its own on the link whose entries in fixtures/targets/lab.yaml name its address, so
#: the lab DUT's missing global address is not their precondition (a real array's entry without one is)
PARTS = [(cid, p.letter) for cid, c in sorted(load_all().items()) if cid.startswith("storage.")
         and c.dut_config != "storage-vm"
         for p in (c.parts or [None]) if p is None or p.profile in (None, "default")]


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    s = Session.for_lab(tmp_path_factory.mktemp("storage-preconditions"))
    yield s
    s.close()


def test_every_storage_part_is_covered():
    assert len(PARTS) >= 14, PARTS


@pytest.mark.parametrize("check_id, part", PARTS, ids=[f"{c}#{p}" for c, p in PARTS])
def test_no_global_address_is_not_judged_not_failed(session, check_id, part):
    c = load_all()[check_id]
    r = session.run(c, c.part(part), fault=FAULT, setup="no-global-address")
    assert r.verdict == "NOT_JUDGED", f"{r.verdict}: {r.reason}"
    assert r.precondition["name"] == "global-address", r.precondition
    assert r.precondition["judged_by"].startswith("slaac.global_address_is_formed_and_probed"), r.precondition
    assert "2001:db8:1::" in r.reason, r.reason  # names the address (or prefix) it looked for
