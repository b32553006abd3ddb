"""Interoperation with a real IKEv2 implementation: strongSwan 5.9.8
(charon and swanctl, from Debian) beside the tester, in a namespace of the
run's own on a macvlan of the tester's interface, as initiator and as
responder to the DUT, with IPv6 traffic through the CHILD_SA.

This machine's kernel has no ESP, so the tester-side charon uses
kernel-libipsec (``extensions.ikev2.interop_peer.kernel``): ESP in user
space over a TUN device, which in 5.9.8 forces UDP encapsulation (NAT-D
faked, RFC 3948) and does tunnel mode only.  The DUT's side is its own ESP
(the lab's: the VM kernel's xfrm).  The capture holds the exchange; its
decryption tables come from charon's own key log."""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from pathlib import Path

from scapy.layers.inet import UDP
from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, IPv6

from ...core.check import Part, check
from ...core.context import NotApplicable
from ...core.verdict import Deviation
from ...errors import BenchError
from ...net.ikev2 import keylog
from ...net.ikev2 import proposals as PR
from ...net.ikev2 import strongswan as S
from ...net.ikev2.const import Encr, Integ, Proto
from ...scenario.ikev2_peer import PeerNamespace
from . import _common as C

ENCR = {"AES_CBC": Encr.AES_CBC, "AES_GCM_16": Encr.AES_GCM_16, "3DES": Encr.TRIPLE_DES}
INTEG = {"HMAC_SHA2_256_128": Integ.HMAC_SHA2_256_128, "HMAC_SHA1_96": Integ.HMAC_SHA1_96,
         "HMAC_SHA2_384_192": Integ.HMAC_SHA2_384_192, "HMAC_SHA2_512_256": Integ.HMAC_SHA2_512_256}


def _chosen(sa: dict, proto: int) -> PR.Chosen | None:
    e = ENCR.get(sa.get("encr-alg", ""))
    if e is None:
        return None
    bits = int(sa["encr-keysize"]) if sa.get("encr-keysize") else None
    return PR.Chosen(proto, e, bits, INTEG.get(sa.get("integ-alg", "")), None, None, None)


def _tables(t, charon: S.Charon, sas: list[dict], peer: str, dut: str, peer_initiated: bool) -> list[str]:
    """Wireshark's tables for the pcap from charon's log (its key derivations, in order)."""
    if t.pcap is None:
        return []
    try:
        blocks = keylog.charon_key_blocks(charon.log.read_text(errors="replace"))
    except OSError:
        return []
    ike_blocks = [b for b in blocks if b["_kind"] == "ike"]
    child_blocks = [b for b in blocks if b["_kind"] == "child"]
    ike, esp = [], []
    for sa, b in zip(sas, ike_blocks):
        ch = _chosen(sa, Proto.IKE)
        if ch is None or "Sk_ei" not in b:
            continue
        ike.append(keylog.IkeRecord(bytes.fromhex(sa["initiator-spi"]), bytes.fromhex(sa["responder-spi"]), ch,
                                    b["Sk_ei"], b["Sk_er"], b.get("Sk_ai", b""), b.get("Sk_ar", b"")))
    children = [c for sa in sas for c in (sa.get("child-sas") or {}).values()]
    for c, b in zip(children, child_blocks):
        ch = _chosen(c, Proto.ESP)
        if ch is None:
            continue
        i2r = (b["encryption initiator"], b.get("integrity initiator", b""))
        r2i = (b["encryption responder"], b.get("integrity responder", b""))
        out, inb = (i2r, r2i) if peer_initiated else (r2i, i2r)
        esp += [keylog.EspRecord(peer, dut, bytes.fromhex(c["spi-out"]), ch, *out),
                keylog.EspRecord(dut, peer, bytes.fromhex(c["spi-in"]), ch, *inb)]
    return [p.name for p in keylog.write(t.pcap, ike, esp)]


@check(
    area="ikev2", ipv6ready=None,
    title="The DUT interoperates with strongSwan in both roles, with IPv6 traffic through the CHILD_SA",
    rfc="RFC 7296 §1.2-§1.3 (IKE_SA_INIT, IKE_AUTH, CHILD_SA), §2.23 and RFC 3948 (UDP encapsulation, which the "
        "peer's kernel-libipsec forces); RFC 4303",
    expect="strongSwan 5.9.8 beside the tester and the DUT establish an IKE SA and a CHILD_SA with the pre-shared key "
           "(strongSwan initiating in A, the DUT in B); three Echo Requests from strongSwan's namespace to the DUT "
           "are answered through the CHILD_SA (its ESP counters count them both ways), none in the clear on the wire",
    parts=[Part("A", "strongSwan initiates (the DUT as responder)"),
           Part("B", "the DUT initiates (strongSwan as responder)", initiator=True)],
    fault="dut_ike_accepts_only_legacy_transforms",
    capabilities=["IKEv2"], dut_config="ipsec-vm",
)
def dut_interoperates_with_strongswan(t):
    """USGv6 asks for interoperable IKEv2: the DUT must agree with an independent implementation, not only
    with the tester's.  strongSwan is the reference open-source IKEv2; if it and the DUT cannot bring up a
    CHILD_SA and pass IPv6 traffic through it, neither will the DUT's peers in the field."""
    s = C.cfg(t)
    if s.interop_peer is None:
        raise NotApplicable("no tester-side strongSwan is configured (extensions.ikev2.interop_peer)")
    initiator = getattr(t.p, "initiator", False)
    C.require_role(t, "initiator" if initiator else "responder")
    if initiator and not s.interop_peer.get("initiate"):
        raise NotApplicable("the DUT cannot be made to initiate to strongSwan (extensions.ikev2.interop_peer.initiate)")
    dut = C.dut_address(t)
    peer_addr = s.interop_peer["address"]
    work = Path(tempfile.mkdtemp(prefix="v6gate-ikev2-interop-"))
    t.defer(lambda: shutil.rmtree(work, ignore_errors=True))
    ns = PeerNamespace(t.target.tester_interface, t.target.tester_netns, peer_addr)
    t.defer(ns.close)
    charon = S.Charon(ns.ns, work / "charon", S.Settings(kernel=s.interop_peer["kernel"], retransmit_timeout=1.0,
                                                        retransmit_base=2.0, retransmit_tries=4)).start()
    t.defer(charon.stop)
    conn = S.Connection("dut", peer_addr, dut, s.ike, s.esp, peer_addr, s.identity or dut, child="dut",
                        mode="tunnel")
    charon.load(S.swanctl_conf([conn], {peer_addr: s.psk().value, s.identity or dut: s.psk().value}))
    t.note(f"strongSwan {peer_addr} in namespace {ns.ns} (kernel-{s.interop_peer['kernel']}), proposals "
           f"{', '.join(s.ike)} / {', '.join(s.esp)}")
    since = t.port.now()
    if initiator:
        t.control.command(s.interop_peer["initiate"], timeout_s=max(10.0, 5 * t.reply_timeout))
        t.note(f"asked the DUT to initiate to strongSwan ({s.interop_peer['initiate']})")
        deadline = time.monotonic() + C.initiation_wait(t)
        sas = []
        while time.monotonic() < deadline:
            sas = [sa for sa in charon.list_sas() if sa.get("state") == "ESTABLISHED"
                   and any(c.get("state") == "INSTALLED" for c in (sa.get("child-sas") or {}).values())]
            if sas:
                break
            time.sleep(0.3)
        how = "the DUT initiated" if sas else f"no CHILD_SA up {C.initiation_wait(t):g} s after the DUT was asked"
    else:
        cp = charon.initiate("dut", timeout=max(15.0, 4 * C.initiation_wait(t)))
        how = f"swanctl --initiate: exit {cp.returncode}"
        sas = [sa for sa in charon.list_sas() if sa.get("state") == "ESTABLISHED"]
        if cp.returncode != 0:
            t.note("swanctl: " + " | ".join(ln for ln in cp.stdout.splitlines()[-6:]))
    t.measure("strongswan_sas", sas)
    if not sas:
        log = charon.log.read_text(errors="replace") if charon.log.exists() else ""
        why = [ln.split("] ", 1)[-1] for ln in log.splitlines() if any(k in ln for k in (
            "NO_PROP", "AUTHENTICATION_FAILED", "AUTH_FAILED", "TS_UNACCEPT", "giving up", "no acceptable proposal",
            "received proposals", "configured proposals", "failed"))][-5:]
        for code, words in (("NO_PROPOSAL_CHOSEN", ("NO_PROP", "no acceptable proposal")),
                            ("AUTHENTICATION_FAILED", ("AUTHENTICATION_FAILED", "AUTH_FAILED")),
                            ("TS_UNACCEPTABLE", ("TS_UNACCEPT",))):
            if any(w in log for w in words):
                how += f"; {code}"
        t.record_dut_sent(since, what="an IKE exchange with strongSwan")
        raise Deviation(f"strongSwan and the DUT did not establish an IKE SA with a CHILD_SA ({how}); strongSwan "
                        f"logged: {' | '.join(why) or 'nothing relevant'}")
    sa = sas[0]
    children = [c for c in (sa.get("child-sas") or {}).values() if c.get("state") == "INSTALLED"]
    seen = [f"IKE SA {sa.get('initiator-spi')}/{sa.get('responder-spi')} ({sa.get('encr-alg')}-"
            f"{sa.get('encr-keysize', '')}/{sa.get('integ-alg', '')}/{sa.get('dh-group')}, {how}); CHILD_SA "
            + ", ".join(f"{c.get('mode')} {c.get('protocol')} {c.get('encr-alg')} in {c.get('spi-in')} out "
                        f"{c.get('spi-out')}" + (" in UDP" if c.get("encap") == "yes" else "") for c in children)]
    problems = []
    if not children:
        problems.append(f"the IKE SA is up but no CHILD_SA is installed: {sa.get('child-sas')}")
        return t.conclude(seen, problems)
    if initiator:
        # the DUT installs its SAs once it has strongSwan's IKE_AUTH response: a first Echo Request may come
        # before that (its loss is no interoperability problem); one is sent until one is answered
        deadline = time.monotonic() + C.initiation_wait(t)
        while time.monotonic() < deadline and ns.ping(dut, count=1)[0] != 0:
            t.note("a first Echo Request through the CHILD_SA went unanswered (the DUT's SAs not in place yet)")
    before = {c["spi-in"]: (int(c.get("packets-in", 0)), int(c.get("packets-out", 0)))
              for sa2 in charon.list_sas() for c in (sa2.get("child-sas") or {}).values()}
    ping_since = t.port.now()
    rc, out = ns.ping(dut, count=3)
    received = next((ln for ln in out.splitlines() if "received" in ln), out.strip()[-120:])
    m = re.search(r"(\d+) received", out)
    if m is None or int(m.group(1)) != 3:
        rc = rc or 1
    after = {c["spi-in"]: c for sa2 in charon.list_sas() for c in (sa2.get("child-sas") or {}).values()}
    moved = [(int(after[k].get("packets-in", 0)) - before[k][0], int(after[k].get("packets-out", 0)) - before[k][1])
             for k in before if k in after]
    seen.append(f"ping {peer_addr} -> {dut}: {received}; ESP packets counted (in, out): {moved}")
    if rc != 0:
        problems.append(f"Echo Requests from strongSwan's namespace to the DUT through the CHILD_SA were not all "
                        f"answered ({received})")
    if not moved or min(min(m) for m in moved) < 3:
        problems.append(f"strongSwan's CHILD_SA counted {moved} ESP packets (in, out), not the 3 Echo Requests and "
                        "Replies")
    clear = t.port.frames_since(ping_since, lambda p: IPv6 in p and (ICMPv6EchoRequest in p or ICMPv6EchoReply in p)
                                and {p[IPv6].src, p[IPv6].dst} == {peer_addr, dut} and UDP not in p)
    if clear:
        problems.append(f"{len(clear)} Echo packet(s) between strongSwan and the DUT crossed the link in the clear")
    try:
        tables = _tables(t, charon, sas, peer_addr, dut, peer_initiated=not initiator)
        if tables:
            t.measure("decryption_tables", tables)
    except (KeyError, ValueError) as exc:
        raise BenchError(f"strongSwan's key log could not be read for the decryption tables: {exc}") from None
    charon.swanctl("--terminate", "--ike", "dut", "--timeout", "3", timeout=10, check=False)
    return t.conclude(seen, problems)
