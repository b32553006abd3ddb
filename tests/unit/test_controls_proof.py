"""Controls prove the reason: the logic that decides whether a FAIL is the
fault's FAIL (lab/faults.py Fault.proves, report/controls.py)."""

import pytest

from v6gate.core.check import load_all
from v6gate.errors import UsageError
from v6gate.lab.faults import load_faults, stand_in_for
from v6gate.report import controls as proof


def _fault(tmp_path, body):
    (tmp_path / "x.yaml").write_text("faults:\n" + body)
    return load_faults(tmp_path)


def test_pattern_must_match_what_was_seen(tmp_path):
    f = _fault(tmp_path, "  f:\n    reason: r\n    nft: x\n    fails_with: 'hop limit 254'\n")["f"]
    assert f.proves("NA from fe80::2, hop limit 254, not 255") is None
    why = f.proves("no Neighbor Advertisement within 1 s")
    assert why and "does not say /hop limit 254/" in why


def test_problems_are_searched_too(tmp_path):
    f = _fault(tmp_path, "  f:\n    reason: r\n    nft: x\n    fails_with: 'pointer \\d+, expected'\n")["f"]
    assert f.proves("Parameter Problem from the DUT", ["pointer 43, expected 42"]) is None


def test_a_setup_failure_never_proves(tmp_path):
    f = _fault(tmp_path, "  f:\n    reason: r\n    nft: x\n    fails_with: 'NS'\n")["f"]
    why = f.proves("setup: no multicast NS for TN1 fe80::1 (§7.2.2)")
    assert why and why.startswith("a setup step failed")


def test_counter_must_move(tmp_path):
    f = _fault(tmp_path, "  f:\n    reason: r\n    nft: x\n    counter: nft_matched\n")["f"]
    assert f.proves("anything", counters={"nft_matched": 3}) is None
    assert "did not move" in f.proves("anything", counters={"nft_matched": 0})
    assert "did not move" in f.proves("anything", counters={})


def test_undeclared_reason_is_unchecked(tmp_path):
    f = _fault(tmp_path, "  f:\n    reason: r\n    nft: x\n")["f"]
    assert "neither fails_with nor counter" in f.proves("no Echo Reply")


@pytest.mark.parametrize("body, words", [
    ("  f:\n    reason: r\n    nft: x\n    counter: bogus\n", "not one of"),
    ("  f:\n    reason: r\n    nft: x\n    fails_with: '(unclosed'\n", "not a regular expression"),
    ("  f:\n    reason: r\n    impostor: {rule: dnr_client}\n    stands_in_for: DNR\n", "list of capability names"),
    # only the project's own simulated peer may stand in for a capability: a DUT-side fault (nft) cannot
    ("  f:\n    reason: r\n    nft: x\n    stands_in_for: [DNR]\n", "simulated peer"),
])
def test_bad_declarations_are_refused(tmp_path, body, words):
    with pytest.raises(UsageError, match=words):
        _fault(tmp_path, body)


def test_simulated_peer_is_labelled():
    cat = load_faults()
    assert cat["impostor_client_conforms"].simulated_peer
    assert cat["dut_drops_echo_request"].simulated_peer is None


def test_stand_in_is_the_simulated_peer_claiming_every_capability():
    """The controls run a part needing capabilities the lab DUT does not claim against the fault whose
    simulated peer implements them all (tests/lab/test_controls.py); none for a capability no peer has."""
    assert stand_in_for(["DNR"]).name == "impostor_resolves_over_dnr"
    assert stand_in_for(["ADDR-REG"]).name == "impostor_registers_addresses"
    assert stand_in_for(["DHCPv6-PD"]).name == "impostor_requests_a_prefix_for_p_flag"
    assert stand_in_for(["DNR"]).simulated_peer
    assert stand_in_for(["DNR", "ADDR-REG"]) is None  # no one peer does both
    assert stand_in_for(["SVCB-HTTPS"]).name == "impostor_uses_https_hints"
    assert stand_in_for(["NO-SUCH-CAPABILITY"]) is None
    assert stand_in_for([]) is None


def test_every_fault_of_a_default_part_declares_its_reason():
    cat = load_faults()
    missing = sorted({c.fault_of(p) for c in load_all().values() for p in c.parts
                      if c.fault_of(p) and c.profile_of(p) == "default" and c.kind == "check"
                      and not (cat[c.fault_of(p)].fails_with or cat[c.fault_of(p)].counter)})
    assert missing == []


def test_judge_attempt_sides():
    cat = load_faults()
    f = cat["dut_loses_packets_awaiting_resolution"]
    ok = {"verdict": "FAIL", "seen": "TN1: replies to requests none of 1-3: no queued Echo Reply reached TN1",
          "fault_counters": {"nft_matched": 3}}
    assert proof.judge_attempt("fail", ok, f) is None
    setup = {"verdict": "FAIL", "seen": "setup: no multicast NS for TN1 fe80::1 (§7.2.2)",
             "fault_counters": {"nft_matched": 0}}
    assert proof.judge_attempt("fail", setup, f).startswith("a setup step failed")
    assert proof.judge_attempt("pass", {"verdict": "FAIL", "seen": "x"}, None) == "FAIL, not PASS"
    assert proof.judge_attempt("fail", {"verdict": "ERROR", "seen": "bench error"}, f) == "ERROR, not FAIL"
    assert proof.detection_rate([{"right": False}, {"right": True}]) == "1/2"


def test_stale_entries_are_found():
    registry = load_all()
    c = registry["nd.packets_wait_for_address_resolution"]
    p = c.parts[0]
    faults = (None, c.fault_of(p))
    entry = {"id": c.id, "part": p.letter, "status": "proven", "faults": list(faults),
             "source_hash": proof.source_hash(c, p, faults), "commit": "abc"}
    assert proof.is_stale(entry, registry) is None
    assert "changed since abc" in proof.is_stale({**entry, "source_hash": "0" * 16}, registry)
    assert "no proof stamp" in proof.is_stale({**entry, "source_hash": None}, registry)
    assert proof.is_stale({**entry, "id": "nd.gone"}, registry) == "the check no longer exists"
