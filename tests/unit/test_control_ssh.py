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


def test_source_filters_use_the_listen_filter_template():
    c = Recorder({"host": "dut", "commands": {"listen": "join {group}",
                                              "listen_filter": "filter {interface} {group} {mode} {sources}"}},
                 interface="eth0")
    c.listen("ff3e::8000:1", mode="include", sources=["2001:db8::1", "2001:DB8::2"])
    c.listen("ff18::1")  # an ordinary join still uses 'listen'
    assert c.sent == ["filter eth0 ff3e::8000:1 include 2001:db8::1 2001:db8::2", "join ff18::1"]


def test_source_filter_without_its_template_is_a_skip_reason():
    with pytest.raises(NotSupported, match=r"control.ssh.commands.listen_filter is not set"):
        SshControl({"host": "dut", "commands": {"listen": "join {group}"}}).listen("ff18::1", mode="exclude",
                                                                                   sources=["2001:db8::1"])


def test_a_bad_source_or_mode_is_the_bench_s_error():
    from v6gate.errors import BenchError

    c = Recorder({"host": "dut", "commands": {"listen_filter": "f {group} {mode} {sources}"}})
    with pytest.raises(BenchError, match="source filter"):
        c.listen("ff18::1", mode="include", sources=["2001:db8::1; reboot"])
    with pytest.raises(BenchError, match="filter mode"):
        c.listen("ff18::1", mode="block", sources=[])
    assert c.sent == []


def test_the_destination_follows_a_double_dash():
    """ssh reads a destination that begins with '-' as an option (-oProxyCommand=... runs a local command)."""
    argv = SshControl({"host": "dut.example", "user": "admin"})._argv("true")
    assert argv[-3:] == ["--", "admin@dut.example", "true"]


@pytest.mark.parametrize("value", ["x;reboot", "$(reboot)", "`reboot`", "a b", "-x", "x\nreboot", "'", ""])
def test_a_run_value_that_is_not_a_plain_word_never_reaches_the_dut_shell(value):
    from v6gate.errors import BenchError

    c = Recorder({"host": "dut", "commands": {"resolve": "getent ahosts {name}"}}, interface="eth0")
    with pytest.raises(BenchError, match="not a plain word"):
        c.resolve(value)
    assert c.sent == []


def test_values_inside_a_quoted_part_of_a_template_stay_one_word():
    import shlex

    c = Recorder({"host": "dut", "commands": {
        "listen": "socat -u UDP6-RECV:5001,ipv6-join-group='[{group}]:{interface}' - &"}}, interface="vlan.100")
    c.listen("ff12::1:2")
    assert shlex.split(c.sent[-1])[2] == "UDP6-RECV:5001,ipv6-join-group=[ff12::1:2]:vlan.100"


def test_shell_braces_stay_shell_braces():
    """A shell group '{ ...; }', a variable '${X}' and doubled braces are the DUT shell's, not placeholders
    (the example target's listen_filter uses a group)."""
    import yaml

    from v6gate.paths import FIXTURES

    example = yaml.safe_load((FIXTURES / "targets" / "example-host.yaml").read_text())["control"]["ssh"]["commands"]
    c = Recorder({"host": "dut", "commands": {**example, "reset": "echo ${HOME} {{x}}; ip link set {interface} up"}},
                 interface="eth0")
    c.listen("ff3e::8000:1", mode="include", sources=["2001:db8::1", "2001:db8::2"])
    assert "|| { mkfifo $f && (nohup python3 /opt/v6gate/mcast_listener.py eth0 ff3e::8000:1 <>$f" in c.sent[-1]
    assert c.sent[-1].endswith("echo set include 2001:db8::1 2001:db8::2 >$f")
    c.reset()
    assert c.sent[-1] == "echo ${HOME} {x}; ip link set eth0 up"
