"""A host that does not claim RFC 8925 or CLAT is reported, not failed: the
RFC 8925 check still watches it and SKIPs with what it saw; the CLAT check
SKIPs (root, the lab)."""

import yaml

from v6gate.core.check import find
from v6gate.core.session import Session
from v6gate.core.target import absolute_file_refs
from v6gate.paths import FIXTURES


def test_unclaimed_rfc8925_and_clat_are_reported_not_failed(tmp_path):
    lab = FIXTURES / "targets" / "lab.yaml"
    doc = absolute_file_refs(yaml.safe_load(lab.read_text()), lab.parent)  # key files named from the copy too
    doc["capabilities"] = [c for c in doc["capabilities"] if c not in ("RFC8925", "CLAT")]
    doc["lab"]["topology"] = str((lab.parent / doc["lab"]["topology"]).resolve())
    doc["waiver_files"] = [str(lab.parent / w) for w in doc.get("waiver_files", [])]
    target = tmp_path / "no-rfc8925.yaml"
    target.write_text(yaml.safe_dump(doc))
    with Session.for_lab(tmp_path / "run", target_file=target) as s:
        rfc8925 = find("v6only.ipv6_only_preferred_option_stops_dhcpv4")
        r = s.run(rfc8925, rfc8925.part("request"))
        assert r.verdict == "SKIP", r.reason
        assert "does not claim RFC8925" in r.reason and "for information" in r.reason
        assert "parameter request list" in r.reason, "what the host did is reported"
        clat = find("v6only.clat_uses_the_discovered_nat64_prefix")
        r = s.run(clat, clat.part("pref64"))
        assert r.verdict == "SKIP" and "does not claim CLAT" in r.reason, r.reason
