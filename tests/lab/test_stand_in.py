"""The stand-in DUT (lab/stand_in.py): under the DUT configuration ipsec-vm the
lab's VM (Debian 12's kernel with xfrm and ESP) is the DUT of the check: its
MAC and addresses are ``t.dut``'s, its console is ``t.control``, liveness
probes it, faults apply to it (console commands, an impostor answering as it
from the switch side), and between checks it is reset over its console, not
rebooted; a check of another configuration stops it."""

import pytest

from v6gate.core.check import Check, Part
from v6gate.core.session import Session
from v6gate.lab import faults as F
from v6gate.net import match as M
from v6gate.util.proc import run

VM_MAC, VM_ADDR, VM_LL = "02:00:00:00:00:05", "2001:db8:1::5", "fe80::ff:fe00:5"
SA = ("v6g-sa install mode=transport dut=2001:db8:1::5 peer=2001:db8:1::99 gateway=2001:db8:1::99 spi_in=0x100 "
      "spi_out=0x200 encr=aes-gcm-16 key_in=0102030405060708090a0b0c0d0e0f1011121314 "
      "key_out=1102030405060708090a0b0c0d0e0f1011121314 integ=none window=64")
FAULTS = {
    "selftest_vm_ignores_echo": {"reason": "the stand-in ignores Echo Requests (sysctl on its console)",
                                 "sysctl": {"net.ipv6.icmp.echo_ignore_all": 1}, "fails_with": "no Echo Reply"},
    "selftest_impostor_as_vm": {"reason": "an impostor answers Echo Requests to any address as the stand-in",
                                "impostor": {"rule": "echo_reply_to_any_destination"}, "counter": "impostor_answered"},
}


def probe_check(func, *, config="ipsec-vm", cid="selftest.stand_in_probe") -> Check:
    return Check(id=cid, area="selftest", title="stand-in probe", rfc="RFC 4443 §4.2", expect="an Echo Reply",
                 func=func, parts=(Part(None),), dut_config=config)


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    catalogue = F.load_faults()
    for name, spec in FAULTS.items():
        catalogue[name] = F.Fault(name=name, reason=spec["reason"], source="test", sysctl=spec.get("sysctl") or {},
                                  impostor=spec.get("impostor"), fails_with=spec.get("fails_with"),
                                  counter=spec.get("counter"), spec=spec)
    s = Session.for_lab(tmp_path_factory.mktemp("stand-in"))
    yield s
    s.close()
    for name in FAULTS:
        catalogue.pop(name, None)


def echo(t, dst=None, *, what="Echo Reply"):
    from scapy.layers.inet6 import ICMPv6EchoRequest

    from v6gate.net import packets as P

    req = t.to_dut(t.tn1, dst or t.dut.global_address()) / ICMPv6EchoRequest(id=0x5151, seq=1, data=P.nonce(16))
    return t.expect_reply(req, M.echo_reply_to(req), what=what, any_source=dst is not None)


def test_the_check_probes_the_stand_in(session):
    seen = {}

    def body(t):
        seen.update(mac=t.dut.mac, ll=t.dut.link_local, glob=t.dut.global_address(), control=t.control.name,
                    addrs=t.control.addresses(), timeout=t.reply_timeout)
        reply = echo(t)
        if reply is None:
            return t.failed("no Echo Reply")
        seen["reply_from"] = reply.pkt.src
        return t.passed("Echo Reply from the stand-in")

    r = session.run(probe_check(body), Part(None))
    assert r.verdict == "PASS", r.reason
    assert seen["mac"] == seen["reply_from"] == VM_MAC
    assert (seen["ll"], seen["glob"], seen["control"]) == (VM_LL, VM_ADDR, "vm-console")
    assert VM_ADDR in seen["addrs"] and VM_LL in seen["addrs"]
    assert [a for a in seen["addrs"] if a.startswith("2001:")] == [VM_ADDR], "only its static global address"
    assert seen["timeout"] == 2.0, "the stand-in's own timing (topology) applies"
    assert session.dut.mac != VM_MAC, "the session's own DUT view is untouched"


def test_state_is_reset_between_checks_without_a_reboot(session):
    def install(t):
        t.control.command(SA)
        return t.passed(t.control.command("v6g-sa state"))

    def look(t):
        return t.passed(t.control.command("v6g-sa state"))

    r = session.run(probe_check(install), Part(None))
    assert r.verdict == "PASS" and "spi 0x00000100" in r.seen, r.reason
    boots = session.lab.stand_in.boots
    r = session.run(probe_check(look), Part(None))
    assert r.verdict == "PASS" and "spi 0x" not in r.seen, r.seen
    assert session.lab.stand_in.boots == boots and session.lab.stand_in.resets >= 1
    assert session.lab.timings["stand_in_prepare_s"] < 10, session.lab.timings


def test_faults_apply_to_the_stand_in_and_go_with_the_reset(session):
    def body(t):
        return t.passed("Echo Reply") if echo(t) is not None else t.failed("no Echo Reply")

    r = session.run(probe_check(body), Part(None), fault="selftest_vm_ignores_echo")
    assert r.verdict == "FAIL", r.reason
    assert F.get_fault("selftest_vm_ignores_echo").proves(r.seen, r.problems, r.evidence.get("fault_counters")) is None
    r = session.run(probe_check(body), Part(None))
    assert r.verdict == "PASS", r.reason


def test_an_impostor_answers_as_the_stand_in_from_the_switch(session):
    def body(t):
        reply = echo(t, "2001:db8:1::dead")  # not the VM's: only the impostor answers, as the VM
        if reply is None:
            return t.passed("nothing answered for an address the DUT does not hold")
        return t.failed(f"an Echo Reply from {reply.pkt.src} for 2001:db8:1::dead")

    r = session.run(probe_check(body), Part(None))
    assert r.verdict == "PASS", r.reason
    r = session.run(probe_check(body), Part(None), fault="selftest_impostor_as_vm")
    assert r.verdict == "FAIL" and VM_MAC in r.seen, r.reason
    assert r.evidence["fault_counters"]["impostor_answered"] >= 1, r.evidence["fault_counters"]
    links = run(["ip", "-o", "link"], ns=session.lab.switch_ns).stdout
    assert "v6gimp" not in links, "the impostor's port goes with the fault"
    assert "ageing_time 0 " not in run(["ip", "-d", "link", "show", "br-lan"], ns=session.lab.switch_ns).stdout


def test_another_configuration_stops_it(session):
    lab = session.lab

    def body(t):
        return t.passed(t.dut.mac)

    session.run(probe_check(body), Part(None))
    pid = lab.stand_in.service.daemons[0].pid
    tap = lab.stand_in.service.tap
    r = session.run(probe_check(body, config=None), Part(None))
    assert r.verdict == "PASS" and r.seen != VM_MAC, r.seen
    assert lab.stand_in is None
    with pytest.raises(OSError):
        open(f"/proc/{pid}/stat").read()
    assert run(["ip", "link", "show", tap], ns=lab.switch_ns, check=False).returncode != 0
