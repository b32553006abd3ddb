"""RFC 9686 (dhcpv6.self_generated_address_is_registered) proven both ways
(root, the lab).  The lab's DUT does not implement RFC 9686 and the lab
target does not claim ADDR-REG, so the controls cannot prove it; here a copy
of the lab target claims ADDR-REG and the check runs against the project's
own simulated client (lab/impostor_rules/dhcpv6_addr_reg.py): PASS when it
registers correctly, FAIL for the named mistake, FAIL on the plain lab DUT
(which never asks for the Address Registration option)."""

import pytest
import yaml

from v6gate.core.check import find
from v6gate.core.session import Session
from v6gate.paths import FIXTURES


@pytest.fixture(scope="module")
def claiming_session(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("addr-reg")
    lab = FIXTURES / "targets" / "lab.yaml"
    doc = yaml.safe_load(lab.read_text())
    doc["capabilities"] = [*doc["capabilities"], "ADDR-REG"]
    doc["lab"]["topology"] = str((lab.parent / doc["lab"]["topology"]).resolve())
    doc["waiver_files"] = [str(lab.parent / w) for w in doc.get("waiver_files", [])]
    target = tmp / "lab-addr-reg.yaml"
    target.write_text(yaml.safe_dump(doc))
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
