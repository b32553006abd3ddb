"""Offload correctness over IPv6: what a DUT's checksum, segmentation and
coalescing engines accept and produce, judged over the wire.

Black-box: the tester sends crafted TCP/UDP packets to the DUT's ordinary
services (the target's ``services:`` named ``echo``), with and without
extension headers, and judges what comes back.  Each check is registered
twice, once per lab DUT configuration (``offload-on``: the DUT veth's tx/rx
checksum, TSO, GSO and GRO on; ``offload-off``: all off), so both code paths
of the DUT are judged and must give the same verdicts.  On a real DUT the two
ids run the same probes against the device as it is configured (the DUT
configuration is the lab's); ``ethtool -k`` of the DUT (where the control
adapter can run it) is recorded with every result.
"""

from __future__ import annotations

import functools

from scapy.layers.inet import TCP, UDP

from ..core.check import Part, check
from ..core.context import NotApplicable
from ..core.control import NotSupported
from ..errors import BenchError
from ..net import offload as O

#: the lab DUT configurations every offload check runs in (fixtures/lab/topology.yaml)
CONFIGS = {"offloads_on": "offload-on", "offloads_off": "offload-off"}


def offload_check(**decl):
    """Register the check once per DUT configuration: ids
    ``offload.<name>_offloads_on`` and ``offload.<name>_offloads_off``."""

    def register(func):
        for suffix, config in CONFIGS.items():
            @functools.wraps(func)
            def variant(t, _func=func):
                record_offloads(t)
                return _func(t)

            check(area="offload", id=f"offload.{func.__name__}_{suffix}", dut_config=config,
                  **{**decl, "title": f"{decl['title']} (DUT offloads {'on' if suffix.endswith('on') else 'off'})"}
                  )(variant)
        return func

    return register


def record_offloads(t) -> None:
    """``ethtool -k`` of the DUT's interface in the result's measurements
    (what the DUT's offload engines were set to while it was judged)."""
    iface = getattr(t.control, "interface", None) or (t.target.extensions.get("offload") or {}).get("interface")
    if not iface:
        t.measure("dut_offloads", "not recorded: no DUT interface name (extensions.offload.interface)")
        return
    try:
        text = t.control.command(f"ethtool -k {iface}", timeout_s=10)
    except (NotSupported, BenchError) as exc:
        t.measure("dut_offloads", f"not recorded: {exc}")
        return
    feats = {}
    for line in text.splitlines():
        name, _, value = line.strip().partition(": ")
        if value and not line.startswith("Features"):
            feats[name] = value
    t.measure("dut_offloads", feats)


def echo_port(t, proto: str) -> int:
    """The port of the target's declared echo service over ``proto``."""
    for s in t.target.services:
        if s.get("name") == "echo" and s.get("proto", "tcp") == proto:
            return int(s["port"])
    raise NotApplicable(f"the target declares no {proto.upper()} echo service (services: name echo, proto "
                        f"{proto}): the offload checks talk to the DUT's ordinary services")


#: a SYN's options as a stack sends them (24 octets: the SYN spans both fragments of a "fragment" probe)
SYN_OPTIONS = [("MSS", 1220), ("NOP", None), ("NOP", None), ("Timestamp", (1, 0)), ("NOP", None), ("WScale", 7),
               ("SAckOK", b""), ("NOP", None), ("NOP", None)]


def _segment(proto: str, port: int, sport: int, data: bytes):
    if proto == "tcp":
        return TCP(sport=sport, dport=port, flags="S", seq=int.from_bytes(data[:4], "big"),
                   options=SYN_OPTIONS, window=65535)
    return UDP(sport=sport, dport=port) / data


def delivered(t, node, dst: str, proto: str, port: int, ext: str, how: str, label: str):
    """Send one probe (a SYN to the echo port, or a datagram to it) behind
    ``ext`` with its checksum ``how``; return (delivered?, what came back)."""
    sport = O.sport()
    data = O.payload(label)
    base = t.to_dut(node, dst)
    frames = O.probe(base, ext, _segment(proto, port, sport, data), how)
    m = O.answer_to(node.global_addr, sport)
    since = t.port.now()
    for f in frames:
        t.send(f, label=f"{label}: {proto.upper()} {'SYN' if proto == 'tcp' else 'datagram'} to port {port} "
                        f"behind {O.EXTENSIONS[ext]}, checksum {how}")
    window = t.reply_timeout if how == "good" else t.silence
    frame = t.port.expect(t.from_dut(m), window, since=since)
    if frame is None:
        t.note(f"nothing from the DUT about the {label} probe within {window:g} s")
        return False, None
    p = frame.pkt
    t.note(f"received {frame.summary()} (+{frame.time - since:.3f} s)")
    if proto == "tcp" and TCP in p and p[TCP].dport == sport:
        flags = str(p[TCP].flags)
        if "S" in flags and "A" in flags:
            rst = t.to_dut(node, dst) / TCP(sport=sport, dport=port, flags="R", seq=p[TCP].ack)
            t.send(rst, label=f"RST closing the {label} probe's connection")
            return True, f"SYN-ACK (seq {p[TCP].seq}, ack {p[TCP].ack})"
        return True, f"TCP {flags}"
    if proto == "udp" and UDP in p and p[UDP].dport == sport:
        same = bytes(p[UDP].payload) == data
        return True, f"UDP echo of {len(bytes(p[UDP].payload))} octets{'' if same else ' (payload changed)'}"
    return True, f"ICMPv6 {p.summary()}"


def _parts(proto: str, fault: str):
    return [Part(f"{proto}_{ext}", f"{proto.upper()} behind {O.EXTENSIONS[ext]}", proto=proto, ext=ext, fault=fault)
            for ext in O.EXTENSIONS]


@offload_check(
    title="A TCP SYN or UDP datagram with a wrong checksum is not delivered; the same with a right one is",
    rfc="RFC 8200 §8.1 (upper-layer checksums over the pseudo-header); RFC 9293 §3.1 and §3.10.7 (a segment "
        "with a bad checksum is discarded); RFC 768; RFC 8200 §4.3-§4.5 (Hop-by-Hop, Routing with Segments Left 0, "
        "Fragment) and §4.6",
    expect="a SYN to the echo port (or a datagram to it) whose transport checksum is wrong draws nothing from the "
           "DUT (no SYN-ACK, no RST, no echo, no ICMPv6 error) within the silence window; the same probe with a "
           "correct checksum draws a SYN-ACK (an echo), behind the same extension header",
    parts=[*_parts("tcp", "impostor_accepts_bad_checksums"), *_parts("udp", "impostor_accepts_bad_checksums")],
    liveness="echo",
)
def wrong_checksum_is_not_delivered(t):
    """RFC 9293 §3.1: "The checksum field is the 16-bit ones' complement of
    the ones' complement sum of all 16-bit words in the header and text"
    over the pseudo-header of RFC 8200 §8.1; a receiver discards a segment
    whose checksum does not verify (RFC 9293 §3.10.7, RFC 1122 §4.1.3.4 for
    UDP).  Offload engines that "verify" in hardware, or drivers that mark
    every packet as verified, deliver such packets; engines that cannot
    parse an extension header fall back to software, and some get that
    wrong.  The valid probe behind the same header must be delivered (RFC
    8200 §4: the extension headers here are ones every node processes or,
    for a Routing header with Segments Left 0, ignores), so a DUT that drops
    everything cannot pass."""
    port = echo_port(t, t.p.proto)
    tn = t.tn1
    dst = t.dut.global_address()
    bad, what_bad = delivered(t, tn, dst, t.p.proto, port, t.p.ext, "bad", "wrong-checksum")
    good, what_good = delivered(t, tn, dst, t.p.proto, port, t.p.ext, "good", "right-checksum")
    behind = O.EXTENSIONS[t.p.ext]
    if bad:
        return t.failed(f"a {t.p.proto.upper()} probe with a wrong checksum behind {behind} was delivered: the DUT "
                        f"answered with {what_bad}" + (f" (the valid probe drew {what_good})" if good else ""))
    if not good:
        return t.failed(f"the valid {t.p.proto.upper()} probe behind {behind} (right checksum) was not delivered "
                        f"either: nothing within {t.reply_timeout:g} s, so the silence to the wrong one proves "
                        "nothing")
    return t.passed(f"nothing within {t.silence:g} s for the wrong checksum; the right one drew {what_good} "
                    f"(behind {behind})")


@offload_check(
    title="UDP over IPv6 with a zero checksum is discarded; the same datagram with its checksum is delivered",
    rfc="RFC 8200 §8.1 (UDP checksum mandatory over IPv6: a zero checksum is discarded and should be logged); "
        "RFC 6935/6936 (the zero-checksum exception is for tunnel protocols that opt in, not ordinary sockets)",
    expect="a datagram to the echo port with UDP checksum 0 is not echoed (and draws no ICMPv6 error) within the "
           "silence window; the same datagram with its checksum is echoed",
    parts=[Part("plain", "UDP with no extension header", ext="none"),
           Part("fragment", "UDP in two fragments", ext="fragment")],
    fault="impostor_accepts_zero_udp_checksum",
    liveness="echo",
)
def zero_udp_checksum_is_discarded(t):
    """RFC 8200 §8.1: "Unlike IPv4, the default behavior when UDP packets
    are originated by an IPv6 node is that the UDP checksum is not
    optional ... IPv6 receivers must discard UDP packets containing a zero
    checksum and should log the error."  RFC 6935/6936 relax this only for
    tunnel protocols that explicitly enable it per port."""
    port = echo_port(t, "udp")
    tn = t.tn1
    dst = t.dut.global_address()
    zero, what_zero = delivered(t, tn, dst, "udp", port, t.p.ext, "zero", "zero-checksum")
    good, what_good = delivered(t, tn, dst, "udp", port, t.p.ext, "good", "right-checksum")
    if zero:
        return t.failed(f"a UDP datagram with checksum 0 ({O.EXTENSIONS[t.p.ext]}) was delivered: the DUT answered "
                        f"with {what_zero}")
    if not good:
        return t.failed(f"the same datagram with its checksum was not echoed either within {t.reply_timeout:g} s, "
                        "so the silence to the zero checksum proves nothing")
    return t.passed(f"nothing within {t.silence:g} s for checksum 0; the valid datagram drew {what_good}")
