"""Target files: valid ones load; every malformed one gets a single line
naming the file, the field and the fix."""

import textwrap

import pytest

from v6gate.core.target import load_target
from v6gate.errors import TargetFileError
from v6gate.paths import FIXTURES

VALID = textwrap.dedent("""\
    name: test-host
    kind: host
    capabilities: [Core, SLAAC]
    tester: {interface: enp3s0}
    dut: {mac: "52:54:00:12:34:56", link_local: eui64}
    link: {prefix: "2001:db8:1::/64"}
    control: {adapter: none}
""")


def write(tmp_path, text, name="t.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_shipped_target_files_are_valid():
    for path in sorted((FIXTURES / "targets").glob("*.yaml")):
        t = load_target(path)
        assert t.name and t.kind in ("host", "router", "storage")


def test_valid_file_gives_a_target_with_defaults(tmp_path):
    t = load_target(write(tmp_path, VALID))
    assert t.dut_mac == "52:54:00:12:34:56"
    assert str(t.link_prefix) == "2001:db8:1::/64"
    assert t.timing["reply_timeout_s"] == 2.0 and t.timing["retrans_timer_s"] == 1.0
    assert t.claims("SLAAC") and not t.claims("DHCPv6-Client")


@pytest.mark.parametrize("change, field, fix_word", [
    (("kind: host", "kind: toaster"), "kind", "host, router, storage"),
    (('mac: "52:54:00:12:34:56"', 'mac: "52:54:00:12:34"'), "dut.mac", "aa:bb:cc:dd:ee:ff"),
    (("capabilities: [Core, SLAAC]", "capabilities: [Core, Teleport]"), "capabilities[1]", "known capability"),
    (('prefix: "2001:db8:1::/64"', 'prefix: "2001:db8:1::/48"'), "link.prefix", "2001:db8:1::/64"),
    (('prefix: "2001:db8:1::/64"', 'prefix: "2001:db8:1::5/64"'), "link.prefix", "network address"),
    (("control: {adapter: none}", "control: {adapter: telnet}"), "control.adapter", "none, netns"),
    (("control: {adapter: none}", "control: {adapter: ssh}"), "control.ssh", "control.ssh.host"),
    (("tester: {interface: enp3s0}", "tester: {iface: enp3s0}"), "tester", "interface"),
    (("name: test-host\n", "name: test-host\ncolour: blue\n"), "(top level)", "allowed here are: name"),
    (("link_local: eui64", "link_local: 2001:db8::1"), "dut.link_local", "fe80::"),
])
def test_malformed_field_is_named_with_its_fix(tmp_path, change, field, fix_word):
    path = write(tmp_path, VALID.replace(*change))
    with pytest.raises(TargetFileError) as exc:
        load_target(path)
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path}: {field}:"), msg
    assert fix_word in msg, msg


def test_missing_required_field(tmp_path):
    path = write(tmp_path, VALID.replace("kind: host\n", ""))
    with pytest.raises(TargetFileError, match=r"missing required field 'kind'"):
        load_target(path)


def test_yaml_syntax_error_names_the_line(tmp_path):
    path = write(tmp_path, VALID + "dut: [unclosed\n")
    with pytest.raises(TargetFileError, match=r"YAML syntax error at line \d+ column \d+"):
        load_target(path)


def test_a_key_given_twice_is_an_error_not_silently_the_last(tmp_path):
    # plain YAML would keep only the second 'extensions:' block and drop the first without a word
    path = write(tmp_path, VALID + "extensions:\n  nd: {delay_first_probe_time_s: 1}\n"
                                   "extensions:\n  dhcpv6: {duid_types: [llt]}\n")
    with pytest.raises(TargetFileError, match=r"line \d+ column 1: duplicate key 'extensions' \(first given at line \d+\)"):
        load_target(path)


def test_a_fault_file_with_a_key_given_twice_is_a_one_line_error(tmp_path):
    from v6gate.errors import UsageError
    from v6gate.lab.faults import load_faults

    (tmp_path / "x.yaml").write_text("faults:\n  f1: {reason: a, sysctl: {a: 1}}\n  f1: {reason: b, sysctl: {a: 2}}\n")
    with pytest.raises(UsageError, match=r"x.yaml: YAML error at line 3 column 3: duplicate key 'f1'"):
        load_faults(tmp_path)


def test_missing_file(tmp_path):
    with pytest.raises(TargetFileError, match="file not found"):
        load_target(tmp_path / "nope.yaml")


def test_waiver_needs_a_reason(tmp_path):
    path = write(tmp_path, VALID + "waivers:\n  - {check: nd.x_y, part: A}\n")
    with pytest.raises(TargetFileError, match=r"waivers\[0\]: missing required field 'reason'"):
        load_target(path)


def test_waiver_files_are_merged_and_matched_by_part(tmp_path):
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "a.yaml").write_text(
        "waivers:\n  - {check: area.some_check, part: B, reason: the lab kernel does X instead of Y}\n")
    t = load_target(write(tmp_path, VALID + "waiver_files: [dev/*.yaml]\n"))
    assert t.waiver_for("area.some_check", "B") is not None
    assert t.waiver_for("area.some_check", "A") is None


def test_broken_waiver_file_is_named(tmp_path):
    (tmp_path / "w.yaml").write_text("waivers:\n  - {check: a.b, reason: short}\n")
    with pytest.raises(TargetFileError) as exc:
        load_target(write(tmp_path, VALID + "waiver_files: [w.yaml]\n"))
    assert str(exc.value).startswith(f"{tmp_path / 'w.yaml'}: waivers[0].reason")
