"""Pure logic of the ikev2 checks and faults: the retransmission series judge,
the probes' damage and the impostor rules that undo exactly that damage, and
the strongSwan configuration and swanctl output the lab relies on."""

from __future__ import annotations

from types import SimpleNamespace

from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from v6gate.checks.ikev2 import refusals, reliability
from v6gate.checks.ikev2.settings import IkeSettings
from v6gate.lab.impostor_rules import ikev2 as rules
from v6gate.net.ikev2 import proposals
from v6gate.net.ikev2 import strongswan as S
from v6gate.net.ikev2.codec import Message
from v6gate.net.ikev2.const import Exchange, Flag
from v6gate.net.ikev2.exchange import Datagram

DUT = {"mac": "02:00:00:00:00:05", "addresses": ["2001:db8:1::5"]}


def _msg(exchange=Exchange.INFORMATIONAL, flags=Flag.INITIATOR, msg_id=2) -> bytes:
    return Message(b"\x11" * 8, b"\x22" * 8, exchange, flags, msg_id, []).encode() + b""


def _dg(t: float, data: bytes) -> Datagram:
    return Datagram(t, data, 500, 500, None)


def _t():
    t = SimpleNamespace()
    t._ikev2_settings = IkeSettings(retransmit_wait_s=12)
    return t


def test_growing_intervals_pass_and_constant_ones_fail():
    req = _msg(Exchange.IKE_SA_INIT, msg_id=0)
    grow = [_dg(x, req) for x in (0.0, 0.5, 1.52, 3.5, 7.6)]
    seen, problems = reliability._judge_series(_t(), grow, "IKE_SA_INIT request")
    assert not problems and "intervals 0.500, 1.020, 1.980, 4.100" in seen[0]
    flat = [_dg(x, req) for x in (0.0, 0.5, 1.0, 1.5)]
    _, problems = reliability._judge_series(_t(), flat, "IKE_SA_INIT request")
    assert problems and "do not grow exponentially" in problems[0]


def test_a_changed_retransmission_or_too_few_are_problems():
    req = _msg(Exchange.IKE_SA_INIT, msg_id=0)
    other = _msg(Exchange.IKE_SA_INIT, msg_id=1)
    _, problems = reliability._judge_series(_t(), [_dg(0, req), _dg(0.5, other), _dg(1.5, req)], "request")
    assert any("Message ID 1" in p for p in problems)
    _, problems = reliability._judge_series(_t(), [_dg(0, req)], "IKE_SA_INIT request")
    assert problems == ["the DUT did not retransmit its IKE_SA_INIT request within 12 s without a response"]
    _, problems = reliability._judge_series(_t(), [_dg(0, req), _dg(0.5, req)], "request")
    assert "cannot be judged from one" in problems[0]


def _frame(data: bytes, dport=500):
    return (Ether(src="02:7e:00:00:00:01", dst=DUT["mac"]) / IPv6(src="2001:db8:1::7e57", dst="2001:db8:1::5")
            / UDP(sport=dport, dport=dport) / Raw(data))


def test_the_impostor_rules_undo_exactly_the_probes_damage():
    good = _msg() + b"\x00" * 16  # stands for a protected INFORMATIONAL request (its last octets the ICV)
    good = good[:24] + len(good).to_bytes(4, "big") + good[28:]
    bad_icv = refusals._flip_last(good)
    (copy,) = rules.ike_icv_not_verified(_frame(bad_icv), DUT)
    assert bytes(copy[UDP].payload) == good and copy[Ether].src == "02:7e:00:00:00:01"
    # under the impostor the copy goes later, twice, once the DUT is done with the original (charon drops a
    # request whose Message ID it is still processing)
    sent = []
    later = SimpleNamespace(later=lambda after, frames: sent.append((after, frames)))
    assert rules.ike_icv_not_verified(_frame(bad_icv), DUT, impostor=later) == []
    assert [a for a, _ in sent] == list(rules.ICV_COPY_AFTER_S) and all(0.2 <= a < 1.5 for a, _ in sent)
    assert all(bytes(f[UDP].payload) == good for _, (f,) in sent)
    bad_spi = refusals._invert_spi_r(good)
    (copy,) = rules.ike_unknown_spi_accepted(_frame(bad_spi), DUT)
    assert bytes(copy[UDP].payload) == good
    natt = b"\0\0\0\0" + bad_spi
    (copy,) = rules.ike_unknown_spi_accepted(_frame(natt, 4500), DUT)
    assert bytes(copy[UDP].payload) == b"\0\0\0\0" + good


def test_the_impostor_rules_leave_other_frames_alone():
    response = _msg(flags=Flag.RESPONSE)
    assert rules.ike_icv_not_verified(_frame(response), DUT) == []
    init = _msg(Exchange.IKE_SA_INIT, msg_id=0)
    assert rules.ike_unknown_spi_accepted(_frame(init), DUT) == []
    esp = b"\x12\x34\x56\x78" + init  # ESP in UDP 4500 (a non-zero SPI, no marker)
    assert rules.ike_icv_not_verified(_frame(esp, 4500), DUT) == []
    other = _frame(_msg())
    other[IPv6].dst = "2001:db8:1::99"
    assert rules.ike_icv_not_verified(other, DUT) == []


def test_strongswan_configuration_from_data():
    conf = S.swanctl_conf([S.Connection("dut", "2001:db8:1::1ce", "2001:db8:1::5", ["aes128-sha256-modp2048"],
                                        ["aes128gcm16"], "2001:db8:1::1ce", "2001:db8:1::5", mode="tunnel")],
                          {"2001:db8:1::5": b"k\"ey"})
    assert "remote_addrs = 2001:db8:1::5" in conf and "mode = tunnel" in conf
    assert 'secret = 0x6b226579' in conf  # any octets, written as hex (no quoting of the key)
    s = S.Settings(kernel="libipsec").conf()
    assert "kernel-libipsec kernel-netlink" in s and "allow_peer_ts = yes" in s and "install_routes = yes" in s
    assert "kernel-libipsec" not in S.Settings(kernel="netlink").conf()


def test_swanctl_raw_output_is_parsed():
    raw = ("list-sa event {dut {uniqueid=1 version=2 state=ESTABLISHED initiator-spi=67559d224560a418 "
           "responder-spi=a49d3bc46519f0d5 encr-alg=AES_CBC encr-keysize=128 child-sas {dut-1 {name=dut "
           "state=INSTALLED mode=TUNNEL spi-in=28729a14 spi-out=c02dbc9f packets-in=3 "
           "local-ts=[2001:db8:9::e1/128] remote-ts=[2001:db8:9::5/128 2001:db8:9::6/128]}}}}\nlist-sas reply {}\n")
    (sa,) = S.ike_sas(raw)
    assert sa["name"] == "dut" and sa["state"] == "ESTABLISHED" and sa["encr-keysize"] == "128"
    (child,) = sa["child-sas"].values()
    assert child["spi-in"] == "28729a14" and child["remote-ts"] == ["2001:db8:9::5/128", "2001:db8:9::6/128"]


def test_the_lab_dut_proposals_parse():
    for text in ("aes128-sha256-modp2048", "aes128gcm16-prfsha256-ecp256", "aes128-sha256-x25519"):
        proposals.parse(text)


def test_the_vm_role_ships_every_plugin_its_charon_loads(tmp_path):
    """charon dlopen()s its plugins (ldd of charon does not show them): the ikev2 role lists each one v6g-ike's
    strongswan.conf loads, and the image holds them with their libraries, the scripts and the key."""
    import re

    import pytest

    from v6gate.lab.services import vm_target as V
    from v6gate.paths import FIXTURES

    loads = re.search(r"^\s*load = (.*)$", (FIXTURES / "lab" / "vm-target" / "v6g-ike").read_text(), re.M).group(1)
    role = V.load_roles()["ikev2"]
    listed = {p.rsplit("libstrongswan-", 1)[1][:-3] for p in role["host_files"] if "libstrongswan-" in p}
    assert set(loads.split()) == listed
    if not (V.IMAGE / "ready").is_file():
        pytest.skip("the VM kernel is fetched by tools/setup")
    image = V.build_initramfs(tmp_path / "i.cpio", ["ipsec", "ikev2"]).read_bytes()
    names = set(re.findall(rb"070701[0-9A-F]{104}([^\0]+)\0", image))
    for path in ["usr/lib/ipsec/charon", "usr/sbin/swanctl", "bin/v6g-ike", "etc/ike/params", "etc/ike/psk",
                 "roles/ikev2.start", "roles/ikev2.reset", "lib/x86_64-linux-gnu/libgcc_s.so.1",
                 *(f"usr/lib/ipsec/plugins/libstrongswan-{p}.so" for p in listed)]:
        assert path.encode() in names, f"{path} missing from the VM image"
    for lib in V.library_closure(["/usr/lib/ipsec/charon", "/usr/sbin/swanctl"]):
        assert lib.lstrip("/").encode() in names, f"{lib} missing from the VM image"
