"""The ssh control adapter fills the target file's command templates; a
missing template is a SKIP reason naming the field to set."""

import pytest

from v6gate.core.control import NotSupported, SshControl


class Recorder(SshControl):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.sent = []

    def _run(self, command, timeout=60):
        self.sent.append(command)
        return "2: eth0    inet6 2001:db8:1::10/64 scope global\n    inet6 fe80::5054:ff:fe12:3456/64 scope link\n"


def test_templates_are_filled_and_quoted():
    c = Recorder({"host": "dut", "commands": {"reset": "ifdown {interface}; ifup {interface}",
                                              "addresses": "ip -6 -o addr show dev {interface}"}}, interface="eth0")
    c.reset()
    assert c.sent[-1] == "ifdown eth0; ifup eth0"
    assert c.addresses() == ["2001:db8:1::10", "fe80::5054:ff:fe12:3456"]
    assert c.sent[-1] == "ip -6 -o addr show dev eth0"


def test_missing_template_says_which_field():
    with pytest.raises(NotSupported, match=r"control.ssh.commands.ping is not set"):
        SshControl({"host": "dut", "commands": {}}).ping("2001:db8::1")


def test_ssh_argv_uses_batch_mode_and_identity():
    c = SshControl({"host": "10.0.0.9", "user": "admin", "port": 2222, "identity_file": "/k"})
    argv = c._argv("true")
    assert argv[:3] == ["ssh", "-o", "BatchMode=yes"] and "-p" in argv and "2222" in argv and "admin@10.0.0.9" in argv


def test_listen_templates_are_filled_and_quoted():
    c = Recorder({"host": "dut", "commands": {"listen": "join {group} {interface}", "unlisten": "leave {group}"}},
                 interface="eth0")
    c.listen("ff12::1:2")
    c.unlisten("ff12::1:2")
    assert c.sent == ["join ff12::1:2 eth0", "leave ff12::1:2"]


def test_missing_listen_template_is_a_skip_reason():
    with pytest.raises(NotSupported, match=r"control.ssh.commands.listen is not set"):
        SshControl({"host": "dut", "commands": {}}).listen("ff12::1")
