"""extensions.ikev2 of a target file: every field validated with a one-line
error naming the field and the fix, the pre-shared key only from a file or
the environment and never shown, and the lab target in agreement with the
lab DUT's own strongSwan configuration (fixtures/lab/vm-target/)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from v6gate.checks.ikev2 import settings as S
from v6gate.core.target import load_target
from v6gate.errors import TargetFileError
from v6gate.paths import FIXTURES, ROOT


class T:
    def __init__(self, ext, source="/tmp/t.yaml", caps=("IKEv2",)):
        self.extensions = {"ikev2": ext}
        self.source = source
        self.caps = caps

    def claims(self, cap):
        return cap in self.caps


def test_the_lab_target_agrees_with_the_lab_duts_strongswan():
    t = load_target(FIXTURES / "targets" / "lab.yaml")
    s = S.settings(t)
    params = dict(ln.split("=", 1) for ln in (FIXTURES / "lab" / "vm-target" / "ikev2.params").read_text().splitlines()
                  if ln and not ln.startswith("#"))
    assert s.ike == params["IKE"].split(",") and s.esp == params["ESP"].split(",")
    assert s.tester_address == params["TESTER"] and s.interop_peer["address"] == params["PEER"]
    assert s.mode == params["MODE"]
    assert s.psk().value == (FIXTURES / "lab" / "vm-target" / "ikev2-lab.psk").read_bytes().rstrip(b"\n")
    # the address is the stand-in VM's (fixtures/lab/topology.yaml, DUT configuration ipsec-vm)
    assert f'address: "{s.address}/64"' in (FIXTURES / "lab" / "topology.yaml").read_text()


@pytest.mark.parametrize(("ext", "field", "words"), [
    ("not a mapping", "extensions.ikev2", "not a mapping"),
    ({"colour": 1}, "colour", "unknown field"),
    ({"address": "198.18.0.1"}, "address", "not an IPv6 address"),
    ({"psk": "hunter2"}, "psk", "never write the key itself"),
    ({"psk": {"env": "A", "file": "b"}}, "psk", "{env: NAME} or {file: PATH}"),
    ({"proposals": {"ike": ["aes128-sha257-modp2048"]}}, "proposals.ike[0]", "sha257"),
    ({"proposals": {"esp": []}}, "proposals.esp", "1 to 32"),
    ({"mode": "beet"}, "mode", "transport or tunnel"),
    ({"roles": ["initiator", "observer"]}, "roles", "responder and/or initiator"),
    ({"roles": ["initiator"]}, "tester_address", "initiates to"),
    ({"retransmit_wait_s": 0}, "retransmit_wait_s", "1 to 600"),
    ({"initiate": "a\nb"}, "initiate", "one-line"),
    ({"interop_peer": {"address": "fe80::1", "kernel": "bsd"}}, "interop_peer.kernel", "libipsec or netlink"),
])
def test_bad_fields_are_one_line_errors_naming_the_field(ext, field, words):
    with pytest.raises(TargetFileError) as exc:
        S.settings(T(ext))
    msg = str(exc.value)
    assert field in msg and words in msg and "\n" not in msg and "hunter2" not in msg


def test_the_key_comes_from_a_file_or_the_environment_and_is_never_shown(tmp_path, monkeypatch):
    key = tmp_path / "dut.psk"
    key.write_bytes(b"s3cret value\n")
    s = S.settings(T({"psk": {"file": "dut.psk"}}, source=str(tmp_path / "target.yaml")))
    secret = s.psk()
    assert secret.value == b"s3cret value" and "s3cret" not in repr(secret) and "s3cret" not in str(s)
    monkeypatch.setenv("V6G_TEST_PSK", "from env")
    assert S.settings(T({"psk": {"env": "V6G_TEST_PSK"}})).psk().value == b"from env"
    monkeypatch.delenv("V6G_TEST_PSK")
    with pytest.raises(TargetFileError, match="V6G_TEST_PSK is not set"):
        S.validate(T({"psk": {"env": "V6G_TEST_PSK"}}))
    S.validate(T({"psk": {"env": "V6G_TEST_PSK"}}, caps=()))  # not claimed: the key is not needed
    key.write_bytes(b"x" * 2000)
    with pytest.raises(TargetFileError, match="over 1024 octets"):
        s.psk()
    key.write_bytes(b"\n")
    with pytest.raises(TargetFileError, match="empty"):
        s.psk()


def test_validate_refuses_a_bad_ikev2_section_in_one_line(tmp_path):
    bad = tmp_path / "t.yaml"
    bad.write_text('name: x\nkind: host\ncapabilities: [Core, IKEv2]\ntester: {interface: eth9}\n'
                   'dut: {mac: "02:00:00:00:00:09"}\ncontrol: {adapter: none}\n'
                   'extensions:\n  ikev2:\n    psk: {file: missing.psk}\n')
    cp = subprocess.run([sys.executable, "-m", "v6gate.cli", "validate", str(bad)], capture_output=True, text=True,
                        cwd=ROOT, timeout=60)
    assert cp.returncode == 2
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1 and "extensions.ikev2.psk" in lines[0] and "missing.psk" in lines[0], cp.stderr


def test_the_example_target_documents_the_section():
    text = (FIXTURES / "targets" / "example-host.yaml").read_text()
    assert "ikev2:" in text and "psk:" in text
    assert Path(ROOT / "docs" / "ipsec.md").read_text().count("ikev2") >= 1
