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
import ipaddress
import secrets
import shlex

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import ICMPv6PacketTooBig, IPv6
from scapy.layers.l2 import Ether

from ..core.check import Part, check
from ..core.context import CheckContext, NotApplicable
from ..core.control import NotSupported
from ..core.verdict import Deviation
from ..errors import BenchError
from ..net import frag as F
from ..net import offload as O
from ..net import v6only as V

#: the lab DUT configurations every offload check runs in (fixtures/lab/topology.yaml)
CONFIGS = {"offloads_on": "offload-on", "offloads_off": "offload-off"}


def offload_check(**decl):
    """Register the check once per DUT configuration: ids
    ``offload.<name>_offloads_on`` and ``offload.<name>_offloads_off``."""

    def register(func):
        for suffix, config in CONFIGS.items():
            @functools.wraps(func)
            def variant(t: CheckContext, _func=func):
                record_offloads(t)
                return _func(t)

            check(area="offload", id=f"offload.{func.__name__}_{suffix}", dut_config=config,
                  **{**decl, "title": f"{decl['title']} (DUT offloads {'on' if suffix.endswith('on') else 'off'})"}
                  )(variant)
        return func

    return register


def record_offloads(t: CheckContext) -> None:
    """``ethtool -k`` of the DUT's interface in the result's measurements
    (what the DUT's offload engines were set to while it was judged)."""
    iface = getattr(t.control, "interface", None) or (t.target.extensions.get("offload") or {}).get("interface")
    if not iface:
        t.measure("dut_offloads", "not recorded: no DUT interface name (extensions.offload.interface)")
        return
    try:
        text = t.control.command(f"ethtool -k {shlex.quote(iface)}", timeout_s=10)
    except (NotSupported, BenchError) as exc:
        t.measure("dut_offloads", f"not recorded: {exc}")
        return
    feats = {}
    for line in text.splitlines():
        name, _, value = line.strip().partition(": ")
        if value and not line.startswith("Features"):
            feats[name] = value
    t.measure("dut_offloads", feats)


def echo_port(t: CheckContext, proto: str) -> int:
    """The port of the target's declared echo service over ``proto``."""
    for s in t.target.services:
        if s.get("name") == "echo" and s.get("proto", "tcp") == proto:
            return int(s["port"])
    raise NotApplicable(f"the target declares no {proto.upper()} echo service (services: name echo, proto "
                        f"{proto}): the offload checks talk to the DUT's ordinary services")


#: a SYN's options as a stack sends them (24 octets: the SYN spans both fragments of a "fragment" probe)
SYN_OPTIONS = [("MSS", 1220), ("NOP", None), ("NOP", None), ("Timestamp", (1, 0)), ("NOP", None), ("WScale", 7),
               ("SAckOK", b""), ("NOP", None), ("NOP", None)]


def ipv4_of_dut(t: CheckContext, node) -> tuple[str, str]:
    """(the DUT's IPv4 address, the node's) for an IPv4 parity part: the
    target's extensions.offload.ipv4; SKIP without it (IPv4 is never
    required).  The node answers ARP for its IPv4 address."""
    value = (t.target.extensions.get("offload") or {}).get("ipv4")
    if not value:
        raise NotApplicable("the DUT has no IPv4 address declared (extensions.offload.ipv4): IPv4 parity is "
                            "judged only where the DUT has IPv4, never required")
    try:
        v4 = ipaddress.IPv4Interface(value)
    except ValueError:
        raise BenchError(f"{t.target.source}: extensions.offload.ipv4 {value!r} is not an IPv4 address/length such "
                         "as 198.18.1.2/24") from None
    mine = str(v4.network.network_address + 200)
    peer = V.TcpPeer(node, ports=(), ipv4=mine)
    t.port.add_responder(peer.responder)
    t.defer(lambda: t.port.remove_responder(peer.responder))
    return str(v4.ip), mine


def _segment(proto: str, port: int, sport: int, data: bytes):
    if proto == "tcp":
        return TCP(sport=sport, dport=port, flags="S", seq=secrets.randbits(32),
                   options=SYN_OPTIONS, window=65535)
    return UDP(sport=sport, dport=port) / data


def delivered(t: CheckContext, node, dst: str, proto: str, port: int, ext: str, how: str, label: str, ipv4: str | None = None):
    """Send one probe (a SYN to the echo port, or a datagram to it) behind
    ``ext`` with its checksum ``how``; return (delivered?, what came back).
    With ``ipv4`` (the node's IPv4 address) the probe goes over IPv4 to
    ``dst``, an IPv4 address of the DUT."""
    sport = O.sport()
    data = O.payload(label)
    if ipv4:
        base = Ether(src=node.mac, dst=t.dut.mac) / IP(src=ipv4, dst=dst)
        frames = [O.with_checksum(base / _segment(proto, port, sport, data), TCP if proto == "tcp" else UDP, how)]
        m = O.answer_to_v4(ipv4, sport)
    else:
        frames = O.probe(t.to_dut(node, dst), ext, _segment(proto, port, sport, data), how)
        m = O.answer_to(node.global_addr, sport)
    since = t.now()
    for f in frames:
        t.send(f, label=f"{label}: {proto.upper()} {'SYN' if proto == 'tcp' else 'datagram'} to port {port} "
                        f"{'over IPv4' if ipv4 else 'behind ' + O.EXTENSIONS[ext]}, checksum {how}")
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
            head = (Ether(src=node.mac, dst=t.dut.mac) / IP(src=ipv4, dst=dst)) if ipv4 else t.to_dut(node, dst)
            rst = head / TCP(sport=sport, dport=port, flags="R", seq=p[TCP].ack)
            t.send(rst, label=f"RST closing the {label} probe's connection")
            return True, f"SYN-ACK (seq {p[TCP].seq}, ack {p[TCP].ack})"
        return True, f"TCP {flags}"
    if proto == "udp" and UDP in p and p[UDP].dport == sport:
        same = bytes(p[UDP].payload) == data
        return True, f"UDP echo of {len(bytes(p[UDP].payload))} octets{'' if same else ' (payload changed)'}"
    return True, f"{'ICMP' if ipv4 else 'ICMPv6'} {p.summary()}"


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
    parts=[*_parts("tcp", "impostor_accepts_bad_checksums"), *_parts("udp", "impostor_accepts_bad_checksums"),
           *[Part(f"{proto}_ipv4", f"{proto.upper()} over IPv4 (parity, where the DUT has IPv4)", proto=proto,
                  ext="ipv4", fault="impostor_accepts_bad_checksums",
                  rfc="RFC 9293 §3.1 and §3.10.7; RFC 768 and RFC 1122 §4.1.3.4 (over IPv4: parity with IPv6; never "
                      "required, SKIP without IPv4)")
             for proto in ("tcp", "udp")]],
    liveness="echo",
)
def wrong_checksum_is_not_delivered(t: CheckContext):
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
    ipv4 = None
    if t.p.ext == "ipv4":
        dst, ipv4 = ipv4_of_dut(t, tn)
    else:
        dst = t.dut.global_address()
    bad, what_bad = delivered(t, tn, dst, t.p.proto, port, t.p.ext, "bad", "wrong-checksum", ipv4)
    good, what_good = delivered(t, tn, dst, t.p.proto, port, t.p.ext, "good", "right-checksum", ipv4)
    behind = "over IPv4" if ipv4 else f"behind {O.EXTENSIONS[t.p.ext]}"
    if bad:
        raise Deviation(f"a {t.p.proto.upper()} probe with a wrong checksum {behind} was delivered: the DUT "
                         f"answered with {what_bad}" + (f" (the valid probe drew {what_good})" if good else ""))
    if not good:
        raise Deviation(f"the valid {t.p.proto.upper()} probe {behind} (right checksum) was not delivered "
                         f"either: nothing within {t.reply_timeout:g} s, so the silence to the wrong one proves "
                         "nothing")
    return t.conclude(f"nothing within {t.silence:g} s for the wrong checksum; the right one drew {what_good} "
                       f"({behind})", [])


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
def zero_udp_checksum_is_discarded(t: CheckContext):
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
        raise Deviation(f"a UDP datagram with checksum 0 ({O.EXTENSIONS[t.p.ext]}) was delivered: the DUT answered "
                         f"with {what_zero}")
    if not good:
        raise Deviation(f"the same datagram with its checksum was not echoed either within {t.reply_timeout:g} s, "
                         "so the silence to the zero checksum proves nothing")
    return t.conclude(f"nothing within {t.silence:g} s for checksum 0; the valid datagram drew {what_good}", [])


# =====================================================================================================
# Transmit segmentation
# =====================================================================================================
#: what the tester sends through the echo service (the DUT sends it back as one stream)
BULK_OCTETS = 48_000
#: the tester's own segments: small enough for every MSS the DUT may announce
TESTER_SEGMENT = 1000


def _service_port(t: CheckContext, name: str) -> int:
    for s in t.target.services:
        if s.get("name") == name and s.get("proto", "tcp") == "tcp":
            return int(s["port"])
    raise NotApplicable(f"the target declares no TCP service named {name!r} (services: in the target file)")


def _connect(t: CheckContext, port: int, mss: int, pmtu: int | None = None):
    """Open a connection from TN1 to ``port`` announcing ``mss``; with
    ``pmtu``, then send TR1's Packet Too Big for it.  Returns the stream,
    or None when no SYN-ACK came."""
    tn = t.tn1
    dst = t.dut.global_address()
    st = O.TcpStream(tn, t.dut.mac, dst, port, mss)
    t.port.add_responder(st.responder)
    t.defer(lambda: t.port.remove_responder(st.responder))
    t.send(st.segment("S", seq=st.isn), label=f"SYN to port {port} announcing MSS {mss}")
    if not st.synack.wait(t.reply_timeout):
        return None
    t.send(st.segment("A"), label="ACK completing the handshake")
    if pmtu:
        quoted = (IPv6(src=dst, dst=tn.global_addr) / TCP(sport=port, dport=st.sport, flags="A",
                                                          seq=(st.peer_isn + 1) % 2**32, ack=st.snd_nxt)
                  / (b"\xa5" * 1200))
        tr = t.tr1
        ptb = (Ether(src=tr.mac, dst=t.dut.mac) / IPv6(src=tr.global_addr, dst=dst)
               / ICMPv6PacketTooBig(mtu=pmtu) / bytes(quoted)[:1232])
        t.send(ptb, label=f"Packet Too Big (MTU {pmtu}) for the connection, from TR1")
        t.wait(0.05)
    return st


def _await_echo(t: CheckContext, st, frames: list, total: int) -> float:
    """Send ``frames`` back to back, wait for ``total`` octets of echo (or
    the deadline), close with a RST; returns the seconds it took."""
    started = t.now()
    for f in frames:
        t.port.send(f)
    t.note(f"sent {total} octets in {len(frames)} frames")
    deadline = started + max(5.0, 5 * t.reply_timeout)
    while t.now() < deadline and len(st.received()) < total:
        t.wait(0.05)
    took = t.now() - started
    t.send(st.segment("R"), label="RST closing the connection")
    return took


def _stream(t: CheckContext, port: int, mss: int, pmtu: int | None):
    """Push BULK_OCTETS through the echo service; (stream, sent, seconds)."""
    st = _connect(t, port, mss, pmtu)
    if st is None:
        return None, b"", None
    data = O.payload("bulk", BULK_OCTETS)
    frames = []
    for off in range(0, len(data), TESTER_SEGMENT):
        frames.append(st.segment("PA", data[off:off + TESTER_SEGMENT]))
        st.snd_nxt += len(data[off:off + TESTER_SEGMENT])
    return st, data, _await_echo(t, st, frames, len(data))


def _judge_segments(st, *, mss: int, pmtu: int | None, dstopts: bool) -> tuple[list[str], dict]:
    from scapy.layers.inet6 import IPv6ExtHdrDestOpt

    problems: dict[str, list[str]] = {}
    labels, sizes, relabels, changes = set(), [], [], []
    label, sent_end = None, None  # the flow label in force, and the highest sequence number sent so far
    for i, (_, ip, p) in enumerate(st.frames):
        n = i + 1
        plen = int.from_bytes(ip[4:6], "big")
        if plen + 40 > len(ip):
            problems.setdefault("payload length", []).append(f"#{n}: Payload Length {plen} but {len(ip) - 40} "
                                                             "octets on the wire")
            continue
        ip = ip[:40 + plen]
        found = O.transport(ip)
        if not found:
            problems.setdefault("header chain", []).append(f"#{n}: no TCP header found")
            continue
        carried, right = O.checksum_of(ip, O.NH_TCP, found[1])
        if carried != right:
            problems.setdefault("checksum", []).append(f"#{n}: TCP checksum {carried:#06x}, correct {right:#06x}")
        hdr = (ip[found[1] + 12] >> 4) * 4
        payload = len(ip) - found[1] - hdr
        if payload:
            sizes.append(len(ip))
            fl = int.from_bytes(ip[0:4], "big") & 0xFFFFF
            labels.add(fl)
            seq = int.from_bytes(ip[found[1] + 4:found[1] + 8], "big")
            retransmitted = sent_end is not None and ((sent_end - seq) & 0xFFFFFFFF) < 0x80000000 and seq != sent_end
            if label is not None and fl != label:
                # a stack may pick a new flow label when it retransmits on a timeout (Linux re-hashes its
                # txhash, net.core.txrehash, to try another path): that is not segmentation; a new label on
                # new data is
                (relabels if retransmitted else changes).append(f"#{n}: {label:#07x} -> {fl:#07x}")
            label = fl
            end = (seq + payload) & 0xFFFFFFFF
            if sent_end is None or ((end - sent_end) & 0xFFFFFFFF) < 0x80000000:
                sent_end = end
        if payload > mss:
            problems.setdefault("MSS", []).append(f"#{n}: {payload} octets of data, MSS {mss}")
        if pmtu and len(ip) > pmtu:
            problems.setdefault("PMTU", []).append(f"#{n}: {len(ip)}-octet packet, path MTU {pmtu}")
        if dstopts and IPv6ExtHdrDestOpt not in p:
            problems.setdefault("Destination Options", []).append(f"#{n}: no Destination Options header")
    if changes:
        problems["flow label"] = [f"{len(labels)} flow labels, changed on new data at {', '.join(changes[:3])}"]
    out = [f"{k}: {len(v)} segment(s) wrong, first {v[0]}" if k != "flow label" else f"flow label changed: {v[0]}"
           for k, v in problems.items()]
    return out, {"segments": len(st.frames), "data_segments": len(sizes), "largest_packet": max(sizes or [0]),
                 "flow_labels": sorted(labels), "relabelled_at_retransmission": relabels}


@offload_check(
    title="The DUT's TCP segments are each complete and correct: checksum, length, MSS, path MTU, flow label",
    rfc="RFC 9293 §3.1 (checksum), §3.7.1 (segments within the MSS the peer announced, RFC 6691: less the IPv6 "
        "extension headers); RFC 8200 §3 (Payload Length) and §8.1; RFC 8201 §4 (packets within the PMTU a Packet Too "
        "Big set); RFC 6437 §2 (one flow label for the flow)",
    expect="echoing a 48 000-octet transfer, every segment the DUT sends has a correct TCP checksum, a Payload Length "
           "equal to what is on the wire, at most the MSS the tester announced as data, at most the path MTU a Packet "
           "Too Big set as its size, the same flow label as the others and, where the service's socket carries a "
           "Destination Options header, that header; and the echoed bytes are exactly those sent",
    parts=[
        Part("mss", "Data within the announced MSS (1000)", service="echo", mss=1000, pmtu=None,
             fault="dut_ignores_the_announced_mss"),
        Part("pmtu", "Packets within the path MTU a Packet Too Big set (1280; MSS 1440)", service="echo", mss=1440,
             pmtu=1280, fault="dut_ignores_packet_too_big"),
        Part("checksum", "Every segment's checksum and Payload Length correct", service="echo", mss=1000, pmtu=None,
             fault="dut_offload_corrupts_checksums_of_later_segments"),
        Part("flow_label", "One flow label for the connection", service="echo", mss=1000, pmtu=None,
             fault="dut_offload_changes_the_flow_label_of_later_segments"),
        Part("dstopts", "Service socket with a Destination Options header; MSS 1440, Packet Too Big 1280",
             service="echo-dstopts", mss=1440, pmtu=1280, dstopts=True,
             fault="dut_offload_strips_the_destination_options_of_later_segments"),
    ],
    liveness="echo",
)
def transmitted_segments_are_correct(t: CheckContext):
    """A segmentation engine (TSO, or the stack's GSO) cuts one large
    buffer into segments: each must be a complete, valid TCP/IPv6 packet
    (RFC 9293 §3.1 checksum, RFC 8200 §3 Payload Length), carry at most the
    MSS the peer announced (RFC 9293 §3.7.1; RFC 6691: IPv6 extension
    headers reduce the room for data), fit the path MTU a Packet Too Big
    reported (RFC 8201 §4), repeat every extension header of the original
    (a Destination Options header set on the socket, RFC 3542 §6), and keep
    the flow label of the flow (RFC 6437 §2: all packets of a flow carry
    the same label).  The bytes must arrive exactly as sent."""
    port = _service_port(t, t.p.service)
    mss, pmtu = t.p.mss, t.p.pmtu
    st, sent, took = _stream(t, port, mss, pmtu)
    if st is None:
        raise Deviation(f"no SYN-ACK from port {port} within {t.reply_timeout:g} s: the DUT's {t.p.service} service "
                         "does not accept a connection, so its segments cannot be judged")
    got = st.received()
    problems, figures = _judge_segments(st, mss=mss, pmtu=pmtu, dstopts=bool(t.p.__dict__.get("dstopts")))
    t.measure("segments", figures)
    t.measure("echo_seconds", round(took, 3))
    if got != sent:
        same = next((i for i, (a, b) in enumerate(zip(got, sent, strict=False)) if a != b), min(len(got), len(sent)))
        problems.append(f"echoed stream differs from what was sent: {len(got)} of {len(sent)} octets back in "
                        f"{took:.2f} s, first difference at octet {same}")
    seen = (f"{figures['data_segments']} data segments ({figures['segments']} in all), largest packet "
            f"{figures['largest_packet']} octets, flow label(s) {', '.join(f'{x:#07x}' for x in figures['flow_labels'])}; "
            f"{len(got)} of {len(sent)} octets echoed in {took:.2f} s")
    if figures["relabelled_at_retransmission"]:
        seen += (f"; a new flow label only on a timeout retransmission ({figures['relabelled_at_retransmission'][0]}: "
                 "the stack re-hashed to try another path, not a segmentation fault)")
    if problems:
        raise Deviation("; ".join(problems) + f" ({seen})")
    return t.conclude(seen, [])


# =====================================================================================================
# Receive coalescing and reassembly
# =====================================================================================================
#: the coalescing probes: 24 segments of 600 octets, back to back (one NAPI poll can hold them all)
COALESCE_SEGMENTS = 24
COALESCE_OCTETS = 600


def _coalescing_frames(st, data: bytes, mode: str) -> list:
    """The tester's segments of ``data`` for one coalescing part."""
    segs = []
    for i in range(len(data) // COALESCE_OCTETS):
        chunk = data[i * COALESCE_OCTETS:(i + 1) * COALESCE_OCTETS]
        seq = st.snd_nxt + i * COALESCE_OCTETS
        if mode == "headers":  # neighbours differ in extension header, flow label and traffic class
            segs.append([st.segment("PA", chunk, seq=seq, ext="dstopts" if i % 3 == 1 else "none",
                                    fl=0x12345 if i % 2 else 0x0ABCD, tc=0x20 if i % 4 >= 2 else 0)])
        elif mode == "fragments":  # every other segment in two fragments
            seg = st.segment("PA", chunk, seq=seq, fl=0x0ABCD)
            segs.append(F.fragment(seg, [256]) if i % 2 else [seg])
        else:
            segs.append([st.segment("PA", chunk, seq=seq, fl=0x0ABCD)])
    st.snd_nxt += len(data)
    if mode == "out_of_order":  # each pair sent later one first: every second segment fills a hole
        for i in range(0, len(segs) - 1, 2):
            segs[i], segs[i + 1] = segs[i + 1], segs[i]
        return [f for s in segs for f in s]
    if mode == "fragments":  # interleave: the second fragment of a segment after the next segment's first
        out, held = [], None
        for s in segs:
            out.append(s[0])
            if held is not None:
                out.append(held)
                held = None
            if len(s) > 1:
                held = s[1]
        return out + ([held] if held is not None else [])
    return [f for s in segs for f in s]


@offload_check(
    title="Segments that differ in headers, arrive out of order or in fragments reach the application intact",
    rfc="RFC 9293 §3.4 and §3.10.7.4 (data delivered in sequence, exactly once); RFC 8200 §4.5 (reassembly); "
        "RFC 8200 §4 and §7, RFC 6437 §2 (extension headers, traffic class and flow label are per packet: "
        "a receiver that merges packets must not lose what differs)",
    expect="24 segments of 600 octets sent back to back on one connection to the echo service come back as "
           "exactly the 14 400 octets sent, in order, when neighbouring segments differ in extension header, flow "
           "label and traffic class, when every pair arrives in reverse order, and when every other segment comes "
           "in two fragments interleaved with the next segment",
    parts=[
        Part("headers", "Neighbouring segments differ in Destination Options, flow label and traffic class",
             mode="headers", fault="dut_coalescing_misreads_segments_with_destination_options"),
        Part("out_of_order", "Every pair of segments in reverse order", mode="out_of_order",
             fault="dut_coalescing_misplaces_out_of_order_segments"),
        Part("fragments", "Every other segment in two fragments, interleaved with the next segment",
             mode="fragments", fault="dut_reassembly_corrupts_fragmented_segments"),
    ],
    liveness="echo",
)
def coalesced_segments_reach_the_application_intact(t: CheckContext):
    """Receive offloads (GRO, LRO, hardware coalescing) merge consecutive
    segments of a flow into one before the stack sees them.  They may only
    merge what is the same in every header but the sequence number; data
    must still reach the application exactly once and in order (RFC 9293
    §3.10.7.4), fragments reassembled exactly (RFC 8200 §4.5).  An engine
    that miscounts an extension header's length, places an out-of-order
    segment at the wrong offset or merges a fragment into a stream
    changes the bytes the application reads; the echo shows them."""
    port = echo_port(t, "tcp")
    st = _connect(t, port, 1440)
    if st is None:
        raise Deviation(f"no SYN-ACK from the echo port {port} within {t.reply_timeout:g} s: the DUT's echo service "
                         "does not accept a connection, so what it delivers cannot be judged")
    data = O.payload(f"coalesce-{t.p.mode}", COALESCE_SEGMENTS * COALESCE_OCTETS)
    frames = _coalescing_frames(st, data, t.p.mode)
    took = _await_echo(t, st, frames, len(data))
    got = st.received()
    t.measure("echo_seconds", round(took, 3))
    t.measure("frames_sent", len(frames))
    problems, figures = _judge_segments(st, mss=1440, pmtu=None, dstopts=False)
    seen = f"{len(got)} of {len(data)} octets echoed in {took:.2f} s from {len(frames)} frames sent"
    if got != data:
        first = next((i for i, (a, b) in enumerate(zip(got, data, strict=False)) if a != b), min(len(got), len(data)))
        lead = (f"the echoed stream differs from what was sent at octet {first} (segment {first // COALESCE_OCTETS + 1})"
                if first < len(got) else f"the echo stopped after {len(got)} octets: the rest never reached the "
                                         "application")
        raise Deviation("; ".join([lead, *problems]) + f" ({seen})")
    if problems:
        raise Deviation("; ".join(problems) + f" in the DUT's echo ({seen})")
    return t.conclude(f"{seen}, identical to what was sent; {figures['data_segments']} echo segments all correct", [])
