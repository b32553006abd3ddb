"""An established storage session survives its server address becoming
deprecated (RFC 4862 §5.5.4): a deprecated address stays valid for the
communication already using it."""

from __future__ import annotations

import ipaddress
import secrets
import subprocess
import time

from scapy.layers.inet6 import IPv6

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.control import NotSupported
from ...core.verdict import Deviation
from ...errors import BenchError
from ...net.nd import prefix_option, router_advertisement
from ...scenario import storage as C
from ...scenario.observe import autoconfigure
from ...util.proc import in_ns
from .integrity import first_difference, pattern

PATTERN_BYTES = 1 << 20


def _wait_until(pred, proc: subprocess.Popen, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if pred():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def _connections(t: CheckContext, since: float, dut: str, port: int) -> set[int]:
    """Client ports of the connections opened (SYN) to the DUT's port in this check."""
    from scapy.layers.inet import TCP

    return {f.pkt[TCP].sport for f in C.session_frames(t, since, dut, port)
            if TCP in f.pkt and f.pkt[TCP].dport == port and f.pkt[TCP].flags.S and not f.pkt[TCP].flags.A}


def _address_state(t: CheckContext, dut: str) -> str | None:
    """"deprecated", "preferred" or "missing" where the control adapter can
    read the state of the DUT's addresses; None elsewhere."""
    try:
        return t.control.address_states().get(dut, "missing")
    except NotSupported:
        return None


@check(
    area="storage", ipv6ready=None,
    title="An established storage session survives its server address becoming deprecated",
    rfc="RFC 4862 §5.5.4 (a deprecated address remains valid; existing communication using it continues), §5.5.3 e)",
    expect="after a Router Advertisement sets the preferred lifetime of the DUT's prefix to 0 in the middle of an SMB3 "
           "session, the same session reads back the pattern it wrote before",
    parts=[Part("A", "SMB3 session (smbclient put, deprecation, get)", capabilities=["SMB"])],
    fault="dut_removes_deprecated_addresses",
    capabilities=[], dut_config="storage",
    # the tester deprecates the prefix and must be the only router: another router re-advertising it would
    # undo the event (and re-form an address a deleting stack removed, hiding the FAIL)
    needs=["exclusive_router"],
)
def session_survives_address_deprecation(t: CheckContext):
    """Renumbering starts by deprecating the old prefix (preferred lifetime
    0): new connections should use another address, but a deprecated
    address stays valid, and connections already using it continue
    (RFC 4862 §5.5.4).  A storage session cut by a renumbering event loses
    its locks and in-flight I/O."""
    # the tester is the only router: TR1 advertises the link prefix (preferred) and the DUT forms its address
    auto = autoconfigure(t, t.tr1, t.target.link_prefix, valid=7200, preferred=3600)
    if auto.address is None:
        raise t.not_judged("global-address", "slaac.global_address_is_formed_and_probed#", auto.missing())
    dut = C.dut_address(t)
    svc = C.service(t, "SMB")
    port = int(svc["port"])
    net = t.target.link_prefix
    if ipaddress.IPv6Address(dut) not in net:
        raise C.NotApplicable(f"the DUT's address {dut} is not in the link prefix {net} the tester can deprecate")
    cl = C.client(t)
    seed = secrets.token_bytes(8)
    data = pattern(PATTERN_BYTES, seed)
    name = f"v6gate-{seed.hex()}.bin"
    src, back = cl.workdir / f"renum-{name}", cl.workdir / f"renum-{name}.back"
    ready = cl.workdir / f"renum-{name}.ready"
    src.write_bytes(data)
    t.defer(lambda: [p.unlink(missing_ok=True) for p in (src, back, ready)])
    # the session is driven line by line on smbclient's stdin: a write, a first read-back into ``ready``
    # (the check sees the session working), then - after the deprecation - the read-back that counts
    # smbclient takes one line per wake-up of its event loop: each line goes in once the last one acted
    second = f"get {name} {back}\n"
    share = svc.get("share") or "v6gate"
    argv = cl.smbclient_argv(["-N", f"//{dut}/{share}", "-m", "SMB3", "-p", str(port), "-t", "5"])
    since = t.now()
    proc = subprocess.Popen(in_ns(cl.netns, argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    t.defer(lambda: proc.poll() is None and proc.kill())
    within = max(10.0, 5 * t.reply_timeout)

    def line(text: str) -> None:
        proc.stdin.write(text)
        proc.stdin.flush()

    line(f"put {src} {name}\n")
    wrote = _wait_until(lambda: any(f.pkt[IPv6].src != dut and len(f.pkt) > 1000
                                    for f in C.session_frames(t, since, dut, port)), proc, within)
    if wrote:
        line(f"get {name} {ready}\n")
    if not wrote or not _wait_until(lambda: ready.exists() and ready.stat().st_size == len(data), proc, within):
        out = proc.communicate(timeout=5)[0] if proc.poll() is not None else ""
        if not ("NT_STATUS" in out or "onnection" in out or proc.poll() is None):
            raise BenchError(f"smbclient stopped before the pause: {(out.strip().splitlines() or ['no output'])[-1]}")
        raise Deviation(f"the SMB3 session to //{dut}/{share} did not complete its first write: "
                         f"{(out.strip().splitlines() or ['no output'])[-1][:200]}; {C.dut_frames_summary(t, since, dut)}")
    ports_before = _connections(t, since, dut, port)
    # deprecate the DUT's prefix: TR1's RA with preferred lifetime 0 (valid lifetime kept at two hours)
    ra = router_advertisement(t.tr1, prefixes=[prefix_option(net, valid=7200, preferred=0)])
    t.send(ra, label=f"Router Advertisement from TR1: {net} preferred lifetime 0")
    t.defer(lambda: t.send(router_advertisement(t.tr1, prefixes=[prefix_option(net, valid=86400, preferred=14400)]),
                           label=f"Router Advertisement from TR1: {net} preferred again"))
    # the event as the DUT took it (the lab can read it): deprecated, or removed at once (then the
    # session below shows the consequence; the lab router's next RA may form the address again)
    state = None
    deadline = time.monotonic() + max(1.0, t.reply_timeout)
    while time.monotonic() < deadline:
        state = _address_state(t, dut)
        if state != "preferred":
            break
        time.sleep(0.02)
    t.measure("dut_address_after_ra", state)
    if state == "missing":
        t.note(f"the DUT removed {dut} when it was deprecated")
    if state == "preferred":
        proc.kill()
        return t.inconclusive(f"the DUT did not deprecate {dut} after the RA (preferred lifetime 0); the "
                              "renumbering event did not happen, so the session was not put to the test")
    # the session must keep working after the event, not only in the instant after it: give the DUT the
    # reply timeout to act on the deprecation (a stack that drops deprecated addresses does so then)
    t.wait(max(1.0, t.reply_timeout))
    t.note(f"{dut} is {_address_state(t, dut)} {max(1.0, t.reply_timeout):g} s after the RA")
    line(second)
    if _wait_until(lambda: back.exists() and back.stat().st_size == len(data), proc, max(20.0, 10 * t.reply_timeout)):
        line(f"del {name}\n")
        time.sleep(0.2)
    try:
        out, _ = proc.communicate("exit\n", timeout=max(5.0, 3 * t.reply_timeout))
    except subprocess.TimeoutExpired:
        proc.kill()
        out = proc.communicate()[0]
        raise Deviation(f"the SMB3 session stalled after {dut} was deprecated (no read-back within the timeout); "
                         f"{C.dut_frames_summary(t, since, dut)}") from None
    ports_after = _connections(t, since, dut, port)
    if proc.returncode != 0 or not back.exists() or "NT_STATUS" in out:
        raise Deviation(f"the SMB3 session broke after {dut} was deprecated: "
                         f"{(out.strip().splitlines() or ['no output'])[-1][:200]}; {C.dut_frames_summary(t, since, dut)}")
    diff = first_difference(data, back.read_bytes())
    if diff != "identical":
        raise Deviation(f"after deprecation the pattern read back wrong: {diff}")
    if len(ports_after) > 1 or (ports_before and ports_after != ports_before):
        raise BenchError(f"smbclient used more than one connection ({sorted(ports_after)}): not one session")
    return t.conclude(f"the session (client port {', '.join(map(str, sorted(ports_after))) or '?'}) read back its "
                       f"{len(data)}-byte pattern after {dut} was deprecated"
                       + ("" if state else " (deprecation not readable on this target)"), [])
