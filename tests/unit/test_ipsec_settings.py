"""extensions.ipsec of a target file (ipsec/settings.py): hooks and hand-made
SAs, keys from an environment variable, a file or inline hex, validated at
load (``v6gate validate``) in one line that names the field and never the
key; and the pure helpers around an association (counters, redaction, the
impostor's reading of ``ip xfrm state``)."""

import subprocess
import sys

import pytest
import yaml

from v6gate.core.target import load_target
from v6gate.errors import TargetFileError
from v6gate.ipsec import association as A
from v6gate.ipsec import settings as S
from v6gate.lab.impostor_rules.ipsec import xfrm_states
from v6gate.paths import ROOT

GCM_KEY = "00112233445566778899aabbccddeeff01020304"  # 16-byte AES key and 4-byte salt
AUTH_KEY = "ab" * 32


def target(tmp_path, ipsec: dict, name="dut.yaml"):
    doc = yaml.safe_load((ROOT / "fixtures" / "targets" / "example-host.yaml").read_text())
    doc["extensions"] = {"ipsec": ipsec}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


def sa(**over):
    base = {"name": "gcm", "mode": "transport", "encr": "aes-gcm-16", "peer": "2001:db8:1::100", "spi_in": "0x1000",
            "spi_out": 4097, "key_in": GCM_KEY, "key_out": {"env": "V6G_TEST_KEY_OUT"}}
    base.update(over)
    return base


def test_hooks_and_manual_sas_load(tmp_path, monkeypatch):
    monkeypatch.setenv("V6G_TEST_KEY_OUT", GCM_KEY.upper())
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "auth.hex").write_text(" ".join(AUTH_KEY[i:i + 8] for i in range(0, 64, 8)) + "\n")
    cbc = sa(name="cbc", encr="aes-cbc", mode="tunnel", gateway="2001:db8:1::101", key_in="0x" + "11" * 16,
             key_out={"env": "V6G_TEST_KEY_OUT_CBC"}, auth_in={"file": "keys/auth.hex"}, auth_out=AUTH_KEY,
             sequence_start=7)
    monkeypatch.setenv("V6G_TEST_KEY_OUT_CBC", "22" * 16)
    t = load_target(target(tmp_path, {"replay_window": 128, "sas": [sa(), cbc]}))
    s = S.settings_of(t)
    assert s.window == 128 and s.commands == {}
    m = s.manual("aes-cbc", "tunnel")
    assert (m.spi_in, m.spi_out, m.gateway, m.window, m.sequence_start) == (0x1000, 4097, "2001:db8:1::101", 128, 7)
    assert m.auth_in.read() == bytes.fromhex(AUTH_KEY) and m.key_in.read() == b"\x11" * 16
    assert s.manual("aes-gcm-16", "transport").key_out.read() == bytes.fromhex(GCM_KEY)
    assert s.manual("null", "transport") is None
    assert GCM_KEY not in repr(s) and "2222" not in repr(s), "keys never in a repr"


@pytest.mark.parametrize("ipsec, field, says", [
    ({"sas": [sa(key_in="00112233")]}, "sas[0].key_in", "is 4 bytes; aes-gcm-16 takes 20"),
    ({"sas": [sa(key_out={"env": "V6G_TEST_UNSET"})]}, "sas[0].key_out", "V6G_TEST_UNSET is not set"),
    ({"sas": [sa(key_in={"file": "nope.hex"})]}, "sas[0].key_in", "is not a file"),
    ({"sas": [sa(key_in="zz")]}, "sas[0].key_in", "not an even number of hex digits"),
    ({"sas": [sa(key_in={"url": "x"})]}, "sas[0].key_in", "is not a key source"),
    ({"sas": [sa(spi_in=255)]}, "sas[0].spi_in", "is not an SPI"),
    ({"sas": [sa(peer="fe80::1")]}, "sas[0].peer", "not a global unicast"),
    ({"sas": [sa(encr="3des")]}, "sas[0].encr", "not an algorithm"),
    ({"sas": [sa(encr="aes-cbc", key_in="11" * 16, key_out="11" * 16)]}, "sas[0]", "missing auth_in"),
    ({"sas": [sa(auth_in=AUTH_KEY)]}, "sas[0].auth_in", "has no separate integrity key"),
    ({"sas": [sa(mode="beet")]}, "sas[0].mode", "is not a mode"),
    ({"commands": {"install": "x {spi}"}}, "commands", "needs both install and flush"),
    ({"commands": {"install": "x {spi}", "flush": "y"}}, "commands.install", "{spi} is not a field"),
    ({"replay_window": -1}, "replay_window", "is not a window size"),
    ({"sa": []}, "extensions.ipsec", "unknown field 'sa'"),
])
def test_a_bad_setting_is_one_line_naming_the_field(tmp_path, monkeypatch, ipsec, field, says):
    monkeypatch.setenv("V6G_TEST_KEY_OUT", GCM_KEY)
    monkeypatch.delenv("V6G_TEST_UNSET", raising=False)
    with pytest.raises(TargetFileError) as exc:
        load_target(target(tmp_path, ipsec))
    msg = str(exc.value)
    assert field in msg and says in msg and "\n" not in msg, msg
    assert GCM_KEY not in msg and GCM_KEY.upper() not in msg


def test_validate_refuses_a_missing_key_with_exit_2_and_never_prints_one(tmp_path):
    path = target(tmp_path, {"sas": [sa(key_out={"file": "out.hex"})]})
    (tmp_path / "out.hex").write_text("12")
    cp = subprocess.run([sys.executable, "-m", "v6gate.cli", "validate", str(path)], capture_output=True, text=True,
                        timeout=60, cwd=ROOT)
    assert cp.returncode == 2, cp.stdout + cp.stderr
    assert "sas[0].key_out" in cp.stderr and "is 1 bytes" in cp.stderr and "Traceback" not in cp.stderr
    assert GCM_KEY not in cp.stdout + cp.stderr


def test_the_lab_target_has_hooks_for_every_install_field():
    s = S.settings_of(load_target(ROOT / "fixtures" / "targets" / "lab.yaml"))
    assert set(S.INSTALL_FIELDS) <= {f.strip("{}") for f in s.commands["install"].split() for f in [f.split("=")[-1]]}
    assert {"flush", "state"} <= set(s.commands)


def test_counters_that_moved_are_named():
    before = "src ...\nXfrmInStateSeqError     \t2\nXfrmInNoStates 1\n"
    after = "XfrmInStateSeqError     \t3\nXfrmInNoStates 1\nXfrmInTmplMismatch 4\n"
    assert A.counters_moved(before, after) == "XfrmInStateSeqError +1, XfrmInTmplMismatch +4"
    assert A.counters_moved(None, None) == ""


def test_a_failed_install_hook_never_shows_the_keys():
    keys = ["aa" * 20, "bb" * 20]
    msg = A._redact(f"DUT command failed (exit 1): v6g-sa install key_in={keys[0]} key_out={keys[1]}", keys)
    assert keys[0] not in msg and keys[1] not in msg and msg.count("<key>") == 2


def test_the_impostor_reads_the_kernels_sas():
    text = """src 2001:db8:1::99 dst 2001:db8:1::5
\tproto esp spi 0x00000100 reqid 0 mode transport
\treplay-window 0 seq 0x00000000 flag  (0x00000000)
\taead rfc4106(gcm(aes)) 0x0102030405060708090a0b0c0d0e0f1011121314 (160 bits) 128
\tanti-replay esn context:
src 2001:db8:1::5 dst 2001:db8:1::99
\tproto esp spi 0x00000200 reqid 0 mode tunnel
\treplay-window 0 seq 0x00000000 flag  (0x00000000)
\tauth-trunc hmac(sha256) 0x""" + "cd" * 32 + """ (256 bits) 128
\tenc cbc(aes) 0x""" + "ef" * 16 + """
src 2001:db8:1::5 dst 2001:db8:1::98
\tproto esp spi 0x00000300 reqid 0 mode transport
\tauth-trunc hmac(sha256) 0x""" + "cd" * 32 + """ (256 bits) 128
\tenc ecb(cipher_null)\x20
"""
    got = xfrm_states(text)
    assert [(src, dst, s.spi, s.algorithm, s.mode) for src, dst, s in got] == [
        ("2001:db8:1::99", "2001:db8:1::5", 0x100, "aes-gcm-16", "transport"),
        ("2001:db8:1::5", "2001:db8:1::99", 0x200, "aes-cbc", "tunnel"),
        ("2001:db8:1::5", "2001:db8:1::98", 0x300, "null", "transport")]
    assert got[1][2].auth_key == b"\xcd" * 32 and got[2][2].key == b""


def test_the_commented_example_in_example_host_loads(tmp_path, monkeypatch):
    """The extensions.ipsec example of fixtures/targets/example-host.yaml, uncommented, is a valid target
    (hooks and hand-made SAs both shown there)."""
    text = (ROOT / "fixtures" / "targets" / "example-host.yaml").read_text()
    block = text[text.index("# -- extensions.ipsec"):]
    block = block[:block.index("\n# -- ", 1)] if "\n# -- " in block else block  # up to the next section's example
    lines = [ln[2:] if ln.startswith("# ") else "" for ln in block.splitlines()]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("extensions:"))
    snippet = yaml.safe_load("\n".join(ln for ln in lines[start:] if ln.startswith(("extensions", " "))))
    ipsec = snippet["extensions"]["ipsec"]
    assert set(ipsec) == {"replay_window", "commands", "sas"}
    for name in ("V6GATE_ESP_GCM_IN",):
        monkeypatch.setenv(name, GCM_KEY)
    for name in ("V6GATE_ESP_CBC_IN", "V6GATE_ESP_CBC_OUT"):
        monkeypatch.setenv(name, "11" * 16)
    for name in ("V6GATE_ESP_CBC_AUTH_IN", "V6GATE_ESP_CBC_AUTH_OUT"):
        monkeypatch.setenv(name, AUTH_KEY)
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "gcm-out.hex").write_text(GCM_KEY + "\n")
    s = S.settings_of(load_target(target(tmp_path, ipsec)))
    assert [m.name for m in s.sas] == ["gcm-transport", "cbc-tunnel"] and "install" in s.commands
