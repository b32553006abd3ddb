"""Pure logic of the DHCPv6 area: the strict parser, DUID formats, the RFC
8415 §15 interval judgement, the target's extensions.dhcpv6 settings."""

import struct
from types import SimpleNamespace

import pytest

from v6gate.errors import TargetFileError
from v6gate.net import dhcpv6 as D
from v6gate.scenario import dhcpv6 as X


def _solicit(options: list[bytes]) -> bytes:
    return D.message(D.SOLICIT, 0x123456, options)


def test_a_well_formed_solicit_has_no_problems():
    duid = D.duid_llt("02:00:00:00:00:02", when=D.DUID_EPOCH + 100)
    raw = _solicit([D.opt(D.OPT_CLIENTID, duid), D.ia_na_option(7, 0, 0),
                    D.opt(D.OPT_ORO, struct.pack("!HHH", 23, 24, 82)), D.opt(D.OPT_ELAPSED_TIME, b"\0\0")])
    m = D.parse_payload(raw)
    m.src, m.dst, m.sport, m.dport = "fe80::2", D.ALL_DHCP_RELAY_AGENTS_AND_SERVERS, 546, 547
    assert m.xid == 0x123456 and m.client_duid == duid and m.oro == [23, 24, 82] and m.elapsed == 0
    assert X.judge_message(m) == []


def test_a_truncated_option_is_reported_not_repaired():
    raw = _solicit([D.opt(D.OPT_CLIENTID, b"\x00\x03\x00\x01" + bytes(6))])[:-3]
    m = D.parse_payload(raw)
    assert any("claims 10 octets" in p for p in m.problems)


def test_missing_and_forbidden_options_are_named_with_their_clause():
    raw = _solicit([D.ia_na_option(7, 0, 0), D.opt(D.OPT_PREFERENCE, b"\0"),
                    D.opt(D.OPT_SERVERID, D.duid_ll("02:00:00:00:00:09"))])
    m = D.parse_payload(raw)
    m.src, m.dst, m.sport, m.dport = "fe80::2", "ff05::1:3", 546, 547
    problems = " | ".join(X.judge_message(m))
    for text in ("no Client Identifier option (§18.2.1: MUST)", "no Elapsed Time", "carries a Server Identifier",
                 "Preference option, which only servers send", "not to All_DHCP_Relay_Agents_and_Servers"):
        assert text in problems


@pytest.mark.parametrize("raw,kind,problem", [
    (D.duid_llt("02:00:00:00:00:02", when=D.DUID_EPOCH + 86400), D.DUID_LLT, None),
    (D.duid_ll("02:00:00:00:00:02"), D.DUID_LL, None),
    (struct.pack("!HI", D.DUID_EN, 32473) + b"lab", D.DUID_EN, None),
    (struct.pack("!HHI", D.DUID_LLT, 1, 5) + bytes(4), D.DUID_LLT, "4-octet link-layer address"),
    (struct.pack("!HH", D.DUID_LL, 0) + bytes(6), D.DUID_LL, "hardware type 0"),
    (struct.pack("!H", 9) + b"x", 9, "unknown DUID type 9"),
    (b"\x00", None, "too short"),
], ids=["llt", "ll", "en", "llt-short-mac", "ll-hw-type-0", "unknown-type", "one-octet"])
def test_duid_formats(raw, kind, problem):
    d = D.parse_duid(raw)
    assert d.type == kind
    if problem:
        assert any(problem in p for p in d.problems), d.problems
    else:
        assert not d.problems


def test_intervals_follow_rfc8415_section_15():
    ex = D.EXCHANGES[D.SOLICIT]
    good = D.judge_intervals([0, 1.05, 3.1, 7.2], ex, tolerance=0.05, first_strictly_above_irt=True)
    assert not good.problems
    flat = D.judge_intervals([0, 1.0, 2.0, 3.0], ex, tolerance=0.05)
    assert len(flat.problems) == 2 and "outside" in flat.problems[0]
    early = D.judge_intervals([0, 0.95, 2.9], ex, tolerance=0.0, first_strictly_above_irt=True)
    assert "RAND > 0" in early.problems[0]


def test_intervals_are_capped_at_mrt():
    ex = D.EXCHANGES[D.SOLICIT]
    times = [0]
    for rt in (1, 2, 4, 8, 16, 32, 60, 58, 63):
        times.append(times[-1] + rt)
    assert not D.judge_intervals(times, ex, mrt=60, tolerance=0.1).problems
    uncapped = [*times[:7], times[6] + 64, times[6] + 64 + 128]
    assert D.judge_intervals(uncapped, ex, mrt=60, tolerance=0.1).problems


def test_domain_names_are_encoded_as_rfc1035_labels():
    assert D.domain_name("a.example") == b"\x01a\x07example\x00"


def _target(ext):
    return SimpleNamespace(extensions={"dhcpv6": ext}, source="my-dut.yaml")


def test_extension_settings_are_validated_with_a_fix():
    s = X.settings(_target({"duid_types": ["llt", "ll"], "commands": {"release": "dhclient -6 -r eth0"},
                            "timing_tolerance_s": 0.3, "reboot_keeps_lease": False}))
    assert s.duid_types == ("llt", "ll") and s.commands["release"] and s.timing_tolerance_s == 0.3
    assert X.settings(SimpleNamespace(extensions={}, source=None)).duid_types is None
    for bad, where in (({"duid_types": ["llt", "xyz"]}, "duid_types[1]"), ({"duid": ["llt"]}, "duid"),
                       ({"commands": {"renew": "x"}}, "commands"), ({"timing_tolerance_s": 0}, "timing_tolerance_s")):
        with pytest.raises(TargetFileError) as e:
            X.settings(_target(bad))
        assert f"extensions.dhcpv6.{where}" in str(e.value) and ";" in str(e.value)
