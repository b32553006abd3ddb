"""The offload area's lab parts on the real namespace lab: the DUT
configurations set the DUT veth's offloads as declared, run the echo
services, make the tester's switch port a wire, and give it its offloads
back when the DUT is rebuilt (nothing leaks into the next check)."""

from v6gate.lab.lab import Lab
from v6gate.util.proc import run


def features(ns: str, ifname: str) -> dict[str, str]:
    out = run(["ethtool", "-k", ifname], ns=ns).stdout
    return {k.strip(): v.split()[0] for k, _, v in (line.partition(": ") for line in out.splitlines()[1:]) if v}


def listening(ns: str) -> set[tuple[str, int]]:
    out = run(["ss", "-Hlntu"], ns=ns).stdout
    return {(line.split()[0], int(line.split()[4].rsplit(":", 1)[1])) for line in out.splitlines() if line.strip()}


def test_offload_configurations_toggle_the_dut_and_restore_the_wire():
    with Lab(run_id="ofl") as lab:
        wire = lab._port_name(lab.tester_node.name, "lan")
        before = features(lab.switch_ns, wire)
        for config, want in (("offload-on", "on"), ("offload-off", "off")):
            lab.reset_dut(config=config)
            dut = features(lab.dut_ns, lab.dut_ifname())
            for name in ("rx-checksumming", "tx-checksumming", "tcp-segmentation-offload",
                         "generic-segmentation-offload", "generic-receive-offload"):
                assert dut[name] == want, f"{config}: {name} is {dut[name]}"
            sw = features(lab.switch_ns, wire)
            assert sw["tcp-segmentation-offload"] == sw["generic-segmentation-offload"] == "off"
            assert sw["tx-checksumming"] == sw["scatter-gather"] == "off"
            assert {("tcp", 7), ("udp", 7), ("tcp", 9), ("tcp", 7007)} <= listening(lab.dut_ns)
            ip = run(["ip", "-4", "-o", "addr", "show", "dev", lab.dut_ifname()], ns=lab.dut_ns).stdout
            assert "198.18.1.2/24" in ip
        lab.reset_dut()
        assert features(lab.switch_ns, wire) == before, "the wire's offloads were not given back"
        assert not {("tcp", 7)} & listening(lab.dut_ns)
