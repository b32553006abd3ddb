"""The tester's own IKEv2 (net/ikev2) against a real one: Debian 12's
strongSwan 5.9.8 charon in a namespace of its own, over IPv6 on a veth
pair.  The tester crafts every datagram from its port (its kernel's IPv6
is off), as the checks do; charon runs with kernel-libipsec (this kernel
has no ESP), which forces UDP encapsulation (NAT faked) and tunnel mode.

Both roles, the three key exchanges the issue names (MODP-2048, ECP-256,
Curve25519), AES-CBC with HMAC-SHA2-256-128 and AES-GCM-16 for IKE and
ESP, ESP traffic on the negotiated CHILD_SA, rekeys, liveness, DELETE,
refusals (NO_PROPOSAL_CHOSEN, AUTHENTICATION_FAILED), a message with a bad
ICV ignored while the next good one is answered, and certificates.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, IPv6
from scapy.layers.l2 import Ether

from v6gate.lab import registry
from v6gate.net.ikev2 import certs, proposals
from v6gate.net.ikev2 import exchange as X
from v6gate.net.ikev2 import strongswan as S
from v6gate.net.ikev2.codec import Delete, Message
from v6gate.net.ikev2.const import Exchange, Group, Notify, Proto
from v6gate.net.ikev2.peer import Config, Identity, IkePeer
from v6gate.net.ikev2.traffic import EspPair
from v6gate.net.nodes import EmulatedNode
from v6gate.net.port import Port

pytestmark = pytest.mark.lab

CHARON_ADDR, TESTER_ADDR = "2001:db8:5::a", "2001:db8:5::b"
PSK = secrets.token_bytes(24)
WITHIN = 3.0


@pytest.fixture(scope="module")
def link(tmp_path_factory):
    """(charon's namespace, its MAC, the tester's namespace, workdir): a veth pair, IPv6 on charon's side only."""
    if not shutil.which(S.CHARON):
        pytest.skip("strongSwan is not installed (./v6gate setup)")
    tag = secrets.token_hex(3)
    lab_id = f"{registry.PREFIX}ike{tag}"
    a, b = f"{lab_id}-a", f"{lab_id}-b"
    work = tmp_path_factory.mktemp("ikev2-strongswan")
    sh = lambda *c: subprocess.run(c, check=True, capture_output=True)  # noqa: E731
    # registered as this process's: `lab down --stale` elsewhere on the machine leaves them alone
    registry.register(lab_id, {"lab_id": lab_id, "owner_pid": os.getpid(), "namespaces": [a, b],
                               "owner_start": registry.process_start_time(), "created": time.time()})
    try:
        sh("ip", "netns", "add", a)
        sh("ip", "netns", "add", b)
        sh("ip", "link", "add", f"ik{tag}a", "type", "veth", "peer", "name", f"ik{tag}b")
        sh("ip", "link", "set", f"ik{tag}a", "netns", a, "name", "eth0")
        sh("ip", "link", "set", f"ik{tag}b", "netns", b, "name", "eth0")
        sh("ip", "netns", "exec", b, "sysctl", "-qw", "net.ipv6.conf.eth0.disable_ipv6=1")
        for ns in (a, b):
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
        sh("ip", "-n", a, "addr", "add", f"{CHARON_ADDR}/64", "dev", "eth0", "nodad")
        mac = json.loads(subprocess.run(["ip", "-n", a, "-j", "link", "show", "eth0"], capture_output=True,
                                        text=True).stdout)[0]["address"]
        yield a, mac, b, Path(work)
    finally:
        for ns in (a, b):
            registry.kill_ns_processes([ns], grace_s=0.5)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        registry.unregister(lab_id)


@pytest.fixture
def charon(link, request):
    ns, _, _, work = link
    c = S.Charon(ns, work / request.node.name[:40], S.Settings(kernel="libipsec", retransmit_timeout=1.0,
                                                               retransmit_base=2.0, retransmit_tries=3)).start()
    yield c
    c.forget()


@pytest.fixture
def tester(link):
    _, mac, ns, _ = link
    port = Port("eth0", ns=ns).open()
    node = EmulatedNode("TN1", "02:00:00:00:0b:01", "fe80::b", TESTER_ADDR)
    port.add_responder(node.responder)
    yield port, node, mac
    port.close()


def responder_conf(ike="aes128-sha256-modp2048,aes256gcm16-prfsha256-ecp256,aes128-sha256-x25519",
                   esp="aes128-sha256,aes128gcm16,aes256gcm16", **kw) -> str:
    conn = S.Connection("tester", CHARON_ADDR, "%any", ike.split(","), esp.split(","), CHARON_ADDR, TESTER_ADDR,
                        mode="tunnel", **kw)
    return S.swanctl_conf([conn], {TESTER_ADDR: PSK, CHARON_ADDR: PSK})


def make_peer(ike: str, esp: str, **kw) -> IkePeer:
    return IkePeer(Config(TESTER_ADDR, CHARON_ADDR, [proposals.parse(ike)], [proposals.parse(esp, Proto.ESP)],
                          psk=kw.pop("psk", PSK), remote_id=Identity.of(CHARON_ADDR), transport_mode=False, **kw))


_PAIRS: dict[bytes, EspPair] = {}


def esp_echo(port, node, mac, peer: IkePeer, child, count=2) -> list[int]:
    """Echo Requests protected on ``child``; the sequence numbers whose ESP-protected Echo Reply came back (the
    ESP sequence numbers go on from one call to the next: charon keeps a replay window)."""
    pair = _PAIRS.setdefault(child.spi_in, EspPair(child, TESTER_ADDR, CHARON_ADDR, natt=peer.nat_detected))
    got = []
    for seq in range(1, count + 1):
        inner = IPv6(src=TESTER_ADDR, dst=CHARON_ADDR) / ICMPv6EchoRequest(id=0x1ce, seq=seq, data=b"v6gate ikev2")
        t = port.send(Ether(src=node.mac, dst=mac) / pair.protect(inner))
        f = port.expect(pair.is_ours, WITHIN, since=t)
        if f is not None:
            back = pair.open(f.pkt)
            if ICMPv6EchoReply in back and back[ICMPv6EchoReply].seq == seq:
                got.append(seq)
    return got


@pytest.mark.parametrize(("ike", "esp"), [("aes128-sha256-modp2048", "aes128-sha256"),
                                          ("aes256gcm16-prfsha256-ecp256", "aes128gcm16"),
                                          ("aes128-sha256-x25519", "aes256gcm16")])
def test_tester_initiates_to_strongswan_and_traffic_flows(charon, tester, ike, esp):
    port, node, mac = tester
    charon.load(responder_conf())
    peer = make_peer(ike, esp)
    ch = X.Channel(port, node, mac, CHARON_ADDR)
    res, _ = X.initiate(ch, peer, WITHIN)
    assert res.ok, res.detail
    res = X.authenticate(ch, peer, WITHIN)
    assert res.ok and res.child is not None, res.detail
    sas = charon.list_sas()
    assert [(s["initiator-spi"], s["responder-spi"]) for s in sas] == [(peer.ike.spi_i.hex(), peer.ike.spi_r.hex())]
    child = sas[0]["child-sas"]
    (c,) = child.values()
    assert (c["spi-in"], c["spi-out"]) == (res.child.spi_out.hex(), res.child.spi_in.hex())
    assert esp_echo(port, node, mac, peer, res.child) == [1, 2]
    assert int(charon.list_sas()[0]["child-sas"][next(iter(child))]["packets-in"]) == 2


def test_rekeys_liveness_and_delete_with_strongswan(charon, tester):
    port, node, mac = tester
    charon.load(responder_conf())
    peer = make_peer("aes256gcm16-prfsha256-ecp256", "aes128gcm16")
    ch = X.Channel(port, node, mac, CHARON_ADDR)
    auto = X.AutoAnswer(ch, peer)
    port.add_responder(auto)
    res, _ = X.initiate(ch, peer, WITHIN)
    assert res.ok, res.detail
    first = X.authenticate(ch, peer, WITHIN).child
    assert X.ask(ch, peer, lambda p: p.informational(), WITHIN).ok
    rekeyed = X.ask(ch, peer, lambda p: p.create_child(rekey=first), WITHIN)
    assert rekeyed.ok, rekeyed.detail
    assert X.ask(ch, peer, lambda p: p.delete_child(first), WITHIN).ok
    assert esp_echo(port, node, mac, peer, rekeyed.child) == [1, 2]
    (sa,) = charon.list_sas()
    # (charon keeps the rekeyed inbound SA a few seconds, charon.delete_rekeyed_delay, as DELETED)
    assert [c["spi-in"] for c in sa["child-sas"].values() if c["state"] == "INSTALLED"] == [rekeyed.child.spi_out.hex()]
    old = peer.ike
    assert X.ask(ch, peer, lambda p: p.rekey_ike(), WITHIN).ok
    with ch.lock:
        req = old.protect(Exchange.INFORMATIONAL, old.next_request, [Delete(Proto.IKE, [])], response=False)
    assert ch.request(req, within=WITHIN) is not None
    (sa,) = charon.list_sas()
    assert (sa["initiator-spi"], sa["responder-spi"]) == (peer.ike.spi_i.hex(), peer.ike.spi_r.hex())
    assert esp_echo(port, node, mac, peer, rekeyed.child) == [1, 2]  # the CHILD_SA moved to the new IKE SA
    assert X.ask(ch, peer, lambda p: p.delete_ike(), WITHIN).ok
    assert charon.list_sas() == []
    assert not auto.errors


def test_bad_icv_and_wrong_spi_are_ignored_and_the_next_good_request_answered(charon, tester):
    port, node, mac = tester
    charon.load(responder_conf())
    peer = make_peer("aes128-sha256-modp2048", "aes128-sha256")
    ch = X.Channel(port, node, mac, CHARON_ADDR)
    X.initiate(ch, peer, WITHIN)
    X.authenticate(ch, peer, WITHIN)
    with ch.lock:
        good = peer.informational()
    bad = good[:-1] + bytes([good[-1] ^ 0x01])
    assert ch.request(bad, within=1.0, retransmits=0) is None
    wrong = bytes(8) + good[8:]  # an initiator SPI no IKE SA has
    assert ch.request(wrong, within=1.0, retransmits=0) is None
    got = ch.request(good, within=WITHIN)
    assert got is not None and peer.take_response(got.data).ok


def test_strongswan_refuses_deprecated_proposals_and_a_wrong_psk(charon, tester):
    port, node, mac = tester
    charon.load(responder_conf())
    ch = X.Channel(port, node, mac, CHARON_ADDR)
    res, _ = X.initiate(ch, make_peer("3des-sha1-modp1024", "aes128-sha256"), WITHIN)
    assert res.kind == "refused" and res.notify.type == Notify.NO_PROPOSAL_CHOSEN
    peer = make_peer("aes128-sha256-modp2048", "aes128-sha256", psk=b"not the secret")
    X.initiate(ch, peer, WITHIN)
    res = X.authenticate(ch, peer, WITHIN)
    assert res.kind == "refused" and res.notify.type == Notify.AUTHENTICATION_FAILED


def test_strongswan_initiates_to_the_tester_with_cookie_and_invalid_ke(charon, tester):
    port, node, mac = tester
    conn = S.Connection("out", CHARON_ADDR, TESTER_ADDR, ["aes128-sha256-modp2048-ecp256-x25519"], ["aes128gcm16"],
                        CHARON_ADDR, TESTER_ADDR, child="out", mode="tunnel", dpd_delay=1)
    charon.load(S.swanctl_conf([conn], {TESTER_ADDR: PSK, CHARON_ADDR: PSK}))
    peer = IkePeer(Config(TESTER_ADDR, CHARON_ADDR, [proposals.parse("aes128-sha256-modp2048-ecp256-x25519")],
                          [proposals.parse("aes128gcm16", Proto.ESP)], psk=PSK, transport_mode=False))
    ch = X.Channel(port, node, mac, CHARON_ADDR)
    auto = X.AutoAnswer(ch, peer)
    port.add_responder(auto)
    since = port.now()
    proc = charon.initiate_async("out")
    res, earlier, seen = X.serve_init(ch, peer, 10, since, require_cookie=True, demand_group=Group.CURVE25519)
    assert [e.kind for e in earlier] == ["cookie", "invalid_ke"] and res.ok, [e.detail for e in earlier]
    retry = Message.decode(seen[1].data)
    assert retry.payloads[0].type == Notify.COOKIE  # the COOKIE echoed, first (RFC 7296 §2.6)
    assert Message.decode(seen[2].data).payloads[0].type == Notify.COOKIE
    res, _ = X.serve_auth(ch, peer, 10, seen[-1].time)
    assert res.ok and res.child is not None, res.detail
    assert proc.wait(20) == 0
    time.sleep(2.5)  # dpd_delay 1 s: charon's liveness checks, answered by the tester
    assert any(a.result.detail == "liveness check" for a in auto.log), [a.result.detail for a in auto.log]
    assert esp_echo(port, node, mac, peer, res.child) == [1, 2]


def test_certificates_with_strongswan(charon, tester):
    port, node, mac = tester
    ca_key, ca = certs.make_ca()
    ck, ccert = certs.make_cert(ca_key, ca, "charon", CHARON_ADDR)
    tk, tcert = certs.make_cert(ca_key, ca, "tester", TESTER_ADDR)
    conn = S.Connection("tester", CHARON_ADDR, "%any", ["aes128-sha256-ecp256"], ["aes128gcm16"], CHARON_ADDR,
                        TESTER_ADDR, mode="tunnel", auth="pubkey", certs=["charon.der"])
    charon.load(S.swanctl_conf([conn]), {"x509/charon.der": ccert, "x509ca/ca.der": ca,
                                         "private/charon.pem": certs.pem_key(ck)})
    peer = IkePeer(Config(TESTER_ADDR, CHARON_ADDR, [proposals.parse("aes128-sha256-ecp256")],
                          [proposals.parse("aes128gcm16", Proto.ESP)], remote_id=Identity.of(CHARON_ADDR),
                          transport_mode=False, private_key=tk, cert=tcert, trust=[ca]))
    ch = X.Channel(port, node, mac, CHARON_ADDR)
    X.initiate(ch, peer, WITHIN)
    res = X.authenticate(ch, peer, WITHIN)
    assert res.ok, res.detail
    assert esp_echo(port, node, mac, peer, res.child) == [1, 2]
