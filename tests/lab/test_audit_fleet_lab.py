"""The fleet audit's lab proof (issue 33): three lab hosts start while the
tester captures the link (fixtures/lab/fleet.yaml): an IPv4-only host
(DHCPv4), a dual-stack host and an IPv6-only host asking for option 108
of the router's Kea.  ``v6gate audit`` with the inventory of the three
classifies them exactly one per class (33.3 % IPv6-only), flags the
expired exception of the dual-stack host, and gives the same fleet
through the capture cut in two and merged (root, namespaces)."""

import json
import struct
import subprocess
import sys
import time

import pytest

from v6gate.audit.pcapread import Reader
from v6gate.lab.lab import Lab
from v6gate.net.capture import Capture
from v6gate.paths import ROOT
from v6gate.util.proc import run

TOPOLOGY = ROOT / "fixtures" / "lab" / "fleet.yaml"
HOSTS = {"host4": "02:00:00:00:04:04", "hostds": "02:00:00:00:04:46", "host6": "02:00:00:00:04:06"}
CLIENTS = {"host4-dhcpcd", "hostds-dhcpcd", "host6-dhcpcd"}
AS_OF = time.strftime("%Y-%m-%d", time.gmtime())


def _addresses(lab: Lab, node: str, family: str) -> str:
    return run(["ip", f"-{family}", "-o", "addr", "show", "dev", "eth0"], ns=lab.ns(node), check=False).stdout


def _started(lab: Lab) -> bool:
    """host4 and hostds hold DHCPv4 leases, hostds and host6 global IPv6 addresses."""
    return ("inet 198.18.1." in _addresses(lab, "host4", "4") and "inet 198.18.1." in _addresses(lab, "hostds", "4")
            and all("2001:db8:1:" in _addresses(lab, n, "6") for n in ("hostds", "host6")))


@pytest.fixture(scope="module")
def startup(tmp_path_factory):
    """The capture of the three hosts' start-up."""
    d = tmp_path_factory.mktemp("fleet-lab")
    pcap = d / "startup.pcapng"
    lab = Lab(TOPOLOGY).up()
    try:
        capture = Capture("eth0", lab.tester_ns).start()
        try:
            capture.begin(pcap)
            for node in ("hostds", "host6"):  # their interfaces start on the capture (DAD, RS, MLD)
                run(["ip", "link", "set", "eth0", "down"], ns=lab.ns(node))
                run(["ip", "link", "set", "eth0", "up"], ns=lab.ns(node))
            lab.ensure_services(CLIENTS)
            deadline = time.monotonic() + 40
            while not _started(lab):
                assert time.monotonic() < deadline, {n: _addresses(lab, n, "4") + _addresses(lab, n, "6")
                                                     for n in HOSTS}
                time.sleep(0.2)
            time.sleep(3.0)  # host6's OFFER with 108 answered (or not) before the capture ends
            capture.end(wait=True)
        finally:
            capture.stop()
    finally:
        lab.down()
    (d / "inventory.csv").write_text("asset,macs,owner,system,location\n"
                                     f"printer-1,{HOSTS['host4']},facilities,print,hq\n"
                                     f"ws-1,{HOSTS['hostds']},it,desktops,hq\n"
                                     f"ws-2,{HOSTS['host6']},it,desktops,branch\n")
    (d / "exceptions.csv").write_text("asset,reason,approved_by,retire_by\n"
                                      "printer-1,firmware has no IPv6,CIO,2099-12-31\n"
                                      "ws-1,legacy VPN client,CIO,2025-06-30\n")
    return d


def audit(d, *inputs, out: str) -> tuple[subprocess.CompletedProcess, dict]:
    cp = subprocess.run([sys.executable, "-m", "v6gate.cli", "audit", *map(str, inputs), "--out", str(d / out),
                         "--inventory", str(d / "inventory.csv"), "--exceptions", str(d / "exceptions.csv"),
                         "--as-of", AS_OF], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert cp.returncode in (0, 1), cp.stderr
    return cp, json.loads((d / out / "fleet.json").read_text())


def check_fleet(doc: dict) -> None:
    classes = {r["asset"]: r["class"] for r in doc["assets"] if r["in_inventory"]}
    assert classes == {"printer-1": "ipv4-only", "ws-1": "dual-stack", "ws-2": "ipv6-only"}, \
        [(r["asset"], r["why"]) for r in doc["assets"]]
    t = doc["totals"]
    assert t["assets"] == 3 and t["ipv6_only"] == {"count": 1, "percent": 33.3}
    assert [t["classes"][c]["count"] for c in ("ipv4-only", "dual-stack", "ipv6-only")] == [1, 1, 1]
    by = {r["asset"]: r for r in doc["assets"]}
    ev = {e["signal"] for e in by["ws-2"]["evidence"]}
    assert {"ipv6", "dhcpv4_108"} <= ev, by["ws-2"]["evidence"]  # asked for 108, nothing else of IPv4
    assert "dhcpv4" in {e["signal"] for e in by["printer-1"]["evidence"]}
    expired = [f for f in doc["findings"] if f["finding"] == "exception_expired"]
    assert [f["asset"] for f in expired] == ["ws-1"] and by["printer-1"]["exception"]["status"] == "in force"
    assert "02:00:00:00:00:01" in doc["unknown_assets"]  # the router: a host no inventory asset names


def test_three_lab_hosts_are_one_of_each_class_and_the_expired_exception_is_flagged(startup):
    cp, doc = audit(startup, startup / "startup.pcapng", out="one")
    check_fleet(doc)
    assert cp.returncode == 1 and "exception_expired  ws-1" in cp.stdout
    assert "IPv6-only 33.3%" in cp.stdout


def test_the_same_through_two_captures_merged(startup):
    frames = [(ns, orig, lt, fr) for _, ns, orig, lt, fr in Reader(startup / "startup.pcapng")]
    half = len(frames) // 2
    for name, part in (("first.pcap", frames[:half]), ("second.pcap", frames[half:])):
        with open(startup / name, "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, part[0][2]))
            for ns, orig, _, fr in part:
                f.write(struct.pack("<IIII", ns // 10**9, ns % 10**9, len(fr), orig) + fr)
    _, doc = audit(startup, startup / "first.pcap", startup / "second.pcap", out="two")
    check_fleet(doc)
    assert sorted(doc["captures"]) == ["first.pcap", "second.pcap"]
    _, merged = audit(startup, startup / "two" / "partial.json", out="merged")  # the partial given back
    assert merged["totals"] == doc["totals"]
