"""The target's extensions.mld and extensions.plpmtud: defaults, and bad
values as one line naming the field (pure logic, no lab)."""

from types import SimpleNamespace

import pytest

from v6gate.checks.mld.source_filtering import mld_settings
from v6gate.core.context import NotApplicable
from v6gate.errors import UsageError
from v6gate.scenario.plpmtud import echo_port, settings


def _t(extensions=None, services=()):
    return SimpleNamespace(target=SimpleNamespace(extensions=extensions or {}, services=list(services),
                                                  source="dut.yaml"))


def test_mld_defaults_are_rfc_3810_s():
    assert mld_settings(_t()) == (2, 1.0)
    assert mld_settings(_t({"mld": {"robustness": 3, "unsolicited_report_interval_s": 0.5}})) == (3, 0.5)


@pytest.mark.parametrize("ext,field", [({"robustness": 0}, "robustness"), ({"robustness": True}, "robustness"),
                                       ({"unsolicited_report_interval_s": "1"}, "unsolicited_report_interval_s"),
                                       ({"unsolicited_report_interval_s": 600}, "unsolicited_report_interval_s")])
def test_bad_mld_values_name_the_field(ext, field):
    with pytest.raises(UsageError, match=f"extensions.mld.{field}"):
        mld_settings(_t({"mld": ext}))


def test_plpmtud_needs_a_client_and_an_echo_service():
    with pytest.raises(NotApplicable, match=r"extensions\.plpmtud\.client"):
        settings(_t())
    with pytest.raises(NotApplicable, match="TCP echo service"):
        echo_port(_t(services=[{"name": "echo", "port": 7, "proto": "udp"}]))
    assert echo_port(_t(services=[{"name": "echo", "port": 7007, "proto": "tcp"}])) == 7007
    ext = {"plpmtud": {"client": {"netns": "ns1", "address": "2001:DB8:3::C"}}}
    assert settings(_t(ext)) == ("ns1", "2001:db8:3::c", 30.0)


@pytest.mark.parametrize("client,timeout,field", [({"address": "not-an-address"}, 30, "client.address"),
                                                  ({"address": "2001:db8::1", "netns": 5}, 30, "client.netns"),
                                                  ({"address": "2001:db8::1"}, 0, "transfer_timeout_s")])
def test_bad_plpmtud_values_name_the_field(client, timeout, field):
    with pytest.raises(UsageError, match=f"extensions.plpmtud.{field}"):
        settings(_t({"plpmtud": {"client": client, "transfer_timeout_s": timeout}}))
