"""External DUTs as first-class targets: one worker per DUT, link.mtu drives
the MTU-dependent checks, and a needs=reset check on an external lab DUT
resets through the adapter or SKIPs (pure logic)."""

import textwrap
from types import SimpleNamespace

import pytest

from v6gate.cli import workers_for
from v6gate.core.context import NotApplicable
from v6gate.core.control import NotSupported
from v6gate.core.target import load_target
from v6gate.paths import FIXTURES

HOST = textwrap.dedent("""\
    name: test-host
    kind: host
    capabilities: [Core]
    tester: {interface: enp3s0}
    dut: {mac: "52:54:00:12:34:56", link_local: eui64}
    link: {prefix: "2001:db8:1::/64", mtu: MTU}
    control: {adapter: none}
""")


def _target(tmp_path, mtu=1500):
    p = tmp_path / "t.yaml"
    p.write_text(HOST.replace("MTU", str(mtu)))
    return load_target(p)


def test_one_external_dut_gets_one_worker(tmp_path):
    n, why = workers_for(_target(tmp_path), 4)
    assert n == 1 and "one worker at a time" in why
    assert workers_for(_target(tmp_path), 1) == (1, None)
    assert workers_for(load_target(FIXTURES / "targets" / "lab.yaml"), 4) == (4, None)
    assert workers_for(None, 4) == (4, None)
    assert workers_for(load_target(FIXTURES / "targets" / "example-tap.yaml"), 4)[0] == 1  # one DUT on the lab's TAP


def test_link_mtu_drives_the_pmtu_checks(tmp_path):
    from v6gate.checks.pmtu import _link_mtu

    assert _link_mtu(SimpleNamespace(target=_target(tmp_path, 9000))) == 9000
    assert _link_mtu(SimpleNamespace(target=_target(tmp_path, 1500))) == 1500
    with pytest.raises(NotApplicable, match="link MTU is 1280"):
        _link_mtu(SimpleNamespace(target=_target(tmp_path, 1280)))


def test_external_lab_dut_resets_through_the_adapter_or_skips():
    from v6gate.core.check import load_all
    from v6gate.core.session import Session

    c = next(c for c in load_all().values() if "reset" in c.needs)
    calls = []

    class Lab:
        external_dut = True

        def set_router_advertising(self, on):
            pass

        def ensure_services(self, names):
            pass

    class Resets:
        def reset(self):
            calls.append("reset")
            return 0.0

    class Cannot:
        def reset(self):
            raise NotSupported("the DUT cannot be reset: control adapter 'none'")

    s = Session.__new__(Session)
    s.lab, s.control = Lab(), Resets()
    assert s._prepare_lab(c, None) is None and calls == ["reset"]
    s.control = Cannot()
    with pytest.raises(NotSupported, match="cannot be reset"):
        s._prepare_lab(c, None)


def _items(areas):
    def item(n, area):
        check = SimpleNamespace(area=area, id=f"{area}.c{n}")
        return SimpleNamespace(name=f"{area}{n}", callspec=SimpleNamespace(params={"v6check": (check, SimpleNamespace(
            letter=None, params={}))}))
    return [item(n, a) for n, a in enumerate(areas)]


def test_on_an_external_dut_mld_parts_are_spread_among_the_others_each_group_in_order():
    from v6gate.core.order import spread

    items = _items(["mld"] * 3 + ["nd"] * 6)
    out = [i.name for i in spread(items, lambda i: i.callspec.params["v6check"][0].area, "mld")]
    assert out == ["nd3", "nd4", "mld0", "nd5", "nd6", "mld1", "nd7", "nd8", "mld2"]
    only = items[:3]
    assert [i.name for i in spread(only, lambda i: i.callspec.params["v6check"][0].area, "mld")] == \
        ["mld0", "mld1", "mld2"]  # nothing to spread them among: they wait, as before


def test_on_an_external_dut_slaac_and_rd_parts_are_spread_too_each_check_in_order():
    from v6gate.core.order import for_external_dut

    items = _items(["icmpv6"] * 4 + ["rd"] * 2 + ["slaac"] * 2)
    out = [i.name for i in for_external_dut(items, lambda i: i.callspec.params["v6check"][0].area)]
    # SLAAC parts among the other six first, then router-discovery parts among the other six; each area's parts
    # in their own order
    assert out == ["icmpv60", "icmpv61", "icmpv62", "rd4", "slaac6", "icmpv63", "slaac7", "rd5"]


def test_the_run_spreads_mld_parts_only_against_an_external_dut(tmp_path):
    from v6gate.pytest_plugin import pytest_collection_modifyitems

    areas = ["ipv6", "mld", "mld", "nd", "nd", "nd", "nd"]
    for target, spread_out in ((str(FIXTURES / "targets" / "lab.yaml"), False), ("lab", False),
                               (str(_target(tmp_path).source), True),
                               (str(FIXTURES / "targets" / "example-tap.yaml"), True)):
        items = _items(areas)
        config = SimpleNamespace(option=SimpleNamespace(v6gate_target=target, v6gate_resume=None))
        pytest_collection_modifyitems(None, config, items)
        got = [i.callspec.params["v6check"][0].area for i in items]
        assert got == (["ipv6", "nd", "mld", "nd", "nd", "nd", "mld"] if spread_out else areas), (target, got)
