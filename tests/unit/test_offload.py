"""The offload area's packet logic (pure): the independent TCP/UDP checksum,
probe builders, the tester's TCP reassembly, the coalescing probes, and the
lab fault rules (impostor and repairer) on recorded packets."""

import struct
from types import SimpleNamespace

import pytest
from scapy.layers.inet import TCP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrDestOpt
from scapy.layers.l2 import Ether

from v6gate.checks import offload as C
from v6gate.lab.impostor_rules import offload as I
from v6gate.lab.repair_rules import offload as R
from v6gate.net import frag as F
from v6gate.net import offload as O

DUT_MAC, TN_MAC = "02:00:00:00:00:02", "02:00:00:00:aa:01"
DUT, TN = "2001:db8:1::2", "2001:db8:1::a"


def base():
    return Ether(src=TN_MAC, dst=DUT_MAC) / IPv6(src=TN, dst=DUT)


def ip_of(frame) -> bytes:
    return bytes(frame[IPv6])


@pytest.mark.parametrize("ext", ["none", "hbh", "dstopts", "routing"])
@pytest.mark.parametrize("layer", [TCP, UDP])
def test_checksums_agree_with_scapy_and_bad_and_zero_are_what_they_say(ext, layer):
    seg = TCP(sport=40001, dport=7, flags="S", seq=5) if layer is TCP else UDP(sport=40001, dport=7) / b"abcdefgh"
    good = ip_of(O.probe(base(), ext, seg, "good")[0])
    proto, start = O.transport(good)
    assert proto == (O.NH_TCP if layer is TCP else O.NH_UDP)
    carried, right = O.checksum_of(good, proto, start)
    assert carried == right
    bad = ip_of(O.probe(base(), ext, seg, "bad")[0])
    carried, right = O.checksum_of(bad, *O.transport(bad))
    assert carried != right and right == O.checksum_of(good, proto, start)[1]
    if layer is UDP:
        zero = ip_of(O.probe(base(), ext, seg, "zero")[0])
        assert O.checksum_of(zero, *O.transport(zero))[0] == 0


def test_a_fragment_probe_keeps_the_whole_fixed_header_in_the_first_fragment_and_reassembles():
    seg = TCP(sport=40001, dport=7, flags="S", seq=5, options=C.SYN_OPTIONS)
    frames = O.probe(base(), "fragment", seg, "bad")
    assert len(frames) == 2 and O.transport(ip_of(frames[0])) is None
    assert len(F.fragment_data(frames[0])) == O.FIRST_FRAGMENT >= 20
    assert F.reassemble(frames) == bytes(O.with_checksum(base() / seg, TCP, "bad")[TCP])


def _impostor():
    return SimpleNamespace(state={})


DUT_INFO = {"mac": DUT_MAC, "link_local": "fe80::ff:fe00:2", "addresses": [DUT]}


@pytest.mark.parametrize("ext", ["none", "hbh", "fragment"])
def test_impostor_answers_exactly_the_bad_checksums(ext):
    imp = _impostor()
    syn = TCP(sport=40001, dport=7, flags="S", seq=99, options=C.SYN_OPTIONS)
    assert not [r for f in O.probe(base(), ext, syn, "good") for r in I.accepts_bad_transport_checksums(f, DUT_INFO, imp)]
    replies = [r for f in O.probe(base(), ext, syn, "bad") for r in I.accepts_bad_transport_checksums(f, DUT_INFO, imp)]
    assert len(replies) == 1 and replies[0][TCP].flags == "SA" and replies[0][TCP].ack == 100
    data = UDP(sport=40002, dport=7) / (b"x" * 40)
    replies = [r for f in O.probe(base(), ext, data, "bad") for r in I.accepts_bad_transport_checksums(f, DUT_INFO, imp)]
    assert len(replies) == 1 and bytes(replies[0][UDP].payload) == b"x" * 40
    zero = O.probe(base(), ext, data, "zero")
    assert not [r for f in zero for r in I.accepts_bad_transport_checksums(f, DUT_INFO, imp)]
    assert len([r for f in zero for r in I.accepts_bad_transport_checksums(f, DUT_INFO, imp, zero_only=True)]) == 1


def _dut_segment(seq, data, ext="none", fl=0x111):
    pkt = Ether() / IPv6(src=DUT, dst=TN, fl=fl)
    hdr = O.ext_headers(ext, O.NH_TCP)
    pkt = (pkt / hdr if hdr is not None else pkt) / TCP(sport=7, dport=40001, flags="PA", seq=seq, ack=1) / data
    return ip_of(Ether(bytes(pkt)))


def test_repairer_breaks_only_later_data_segments_and_each_way_is_seen_by_the_judge():
    R._counts.clear()
    segs = [_dut_segment(1 + 100 * i, b"d" * 100, ext="dstopts") for i in range(4)]
    out = [R.tcp_segments_broken_after(s, DUT_INFO, action="strip_dstopts", after=2) for s in segs]
    assert out[:2] == [None, None] and all(o is not None for o in out[2:])
    assert IPv6ExtHdrDestOpt not in IPv6(out[2]) and O.checksum_of(out[2], *O.transport(out[2]))[0] == \
        O.checksum_of(out[2], *O.transport(out[2]))[1]
    R._counts.clear()
    corrupt = R.tcp_segments_broken_after(segs[0], DUT_INFO, action="corrupt_checksum", after=0)
    carried, right = O.checksum_of(corrupt, *O.transport(corrupt))
    assert carried != right
    st = SimpleNamespace(frames=[(0, ip, IPv6(ip)) for ip in [*segs[:2], corrupt]])
    problems, figures = C._judge_segments(st, mss=100, pmtu=None, dstopts=True)
    assert figures["data_segments"] == 3 and any(p.startswith("checksum: 1 segment") for p in problems)


def test_repairer_raises_the_syn_mss_with_a_valid_checksum():
    syn = ip_of(O.probe(base(), "none", TCP(sport=40001, dport=7, flags="S", options=[("MSS", 1000)]), "good")[0])
    out = R.tcp_syn_mss(syn, DUT_INFO, mss=1440)
    assert dict(IPv6(out)[TCP].options)["MSS"] == 1440
    carried, right = O.checksum_of(out, *O.transport(out))
    assert carried == right


@pytest.mark.parametrize("when", ["dstopts", "out_of_order"])
def test_coalescing_faults_change_data_but_keep_the_checksum_valid(when):
    R._ends.clear()
    later = _dut_segment(601, bytes(range(200)) * 3, ext="dstopts")
    first = _dut_segment(1, bytes(range(256)) * 2 + bytes(88), ext="dstopts")
    if when == "out_of_order":
        assert R.tcp_data_corrupted_when(later, DUT_INFO, when=when) is None
    out = R.tcp_data_corrupted_when(first, DUT_INFO, when=when)
    assert out != first and len(out) == len(first)
    carried, right = O.checksum_of(out, *O.transport(out))
    assert carried == right


def test_fragment_fault_changes_only_first_fragments_keeping_the_datagram_checksum():
    seg = base() / TCP(sport=40001, dport=7, flags="PA", seq=1) / (bytes(range(256)) * 2)
    frags = F.fragment(Ether(bytes(seg)), [256])
    first = R.tcp_data_corrupted_when(ip_of(frags[0]), DUT_INFO, when="fragment")
    assert first is not None and R.tcp_data_corrupted_when(ip_of(frags[1]), DUT_INFO, when="fragment") is None
    whole = F.reassemble([Ether(src=TN_MAC, dst=DUT_MAC) / IPv6(first), frags[1]])
    assert whole != bytes(seg[TCP])
    ip = ip_of(base())[:40]
    ip = ip[:4] + struct.pack("!H", len(whole)) + bytes([O.NH_TCP]) + ip[7:] + whole
    assert O.checksum_of(ip, O.NH_TCP, 40)[0] == O.checksum_of(ip, O.NH_TCP, 40)[1]


@pytest.mark.parametrize("mode", ["headers", "out_of_order", "fragments"])
def test_coalescing_probes_carry_exactly_the_data_once(mode):
    node = SimpleNamespace(ipv6=lambda dst, mac, **f: Ether(src=TN_MAC, dst=mac) / IPv6(src=TN, dst=dst, **f))
    st = O.TcpStream(node, DUT_MAC, DUT, 7, 1440)
    st.rcv_nxt = 1
    start = st.snd_nxt
    data = O.payload(mode, C.COALESCE_SEGMENTS * C.COALESCE_OCTETS)
    frames = [Ether(bytes(f)) for f in C._coalescing_frames(st, data, mode)]
    pieces, frag_groups = {}, {}
    for f in frames:
        if F.is_fragment(f):
            frag_groups.setdefault(f[F.IPv6ExtHdrFragment].id, []).append(f)
            continue
        pieces[f[TCP].seq] = bytes(f[TCP].payload)
    for group in frag_groups.values():
        body = F.reassemble(group)
        tcp = TCP(body)
        pieces[tcp.seq] = bytes(tcp.payload)
    got, seq = b"", start
    while seq in pieces:
        got += pieces[seq]
        seq += len(pieces[seq])
    assert got == data
    if mode == "headers":
        assert len({(f[IPv6].fl, f[IPv6].tc, IPv6ExtHdrDestOpt in f) for f in frames}) > 2
    if mode == "fragments":
        assert len(frag_groups) == C.COALESCE_SEGMENTS // 2


def test_impostor_answers_bad_checksums_over_ipv4_too():
    from scapy.layers.inet import IP

    base4 = Ether(src=TN_MAC, dst=DUT_MAC) / IP(src="198.18.1.200", dst="198.18.1.2")
    good = O.with_checksum(base4 / TCP(sport=40003, dport=7, flags="S", seq=7), TCP, "good")
    bad = O.with_checksum(base4 / TCP(sport=40003, dport=7, flags="S", seq=7), TCP, "bad")
    assert I.accepts_bad_transport_checksums(good, DUT_INFO, _impostor()) == []
    (reply,) = I.accepts_bad_transport_checksums(bad, DUT_INFO, _impostor())
    assert reply[IP].dst == "198.18.1.200" and reply[TCP].flags == "SA" and reply[TCP].ack == 8


def _judge(segs):
    st = SimpleNamespace(frames=[(0, ip, IPv6(ip)) for ip in segs])
    return C._judge_segments(st, mss=100, pmtu=None, dstopts=False)


def test_a_new_flow_label_on_new_data_fails():
    segs = [_dut_segment(1 + 100 * i, b"d" * 100, fl=0x111 if i < 2 else 0x222) for i in range(4)]
    problems, figures = _judge(segs)
    assert problems == ["flow label changed: 2 flow labels, changed on new data at #3: 0x00111 -> 0x00222"], problems
    assert figures["relabelled_at_retransmission"] == []


def test_a_new_flow_label_on_a_timeout_retransmission_is_the_stack_rehashing_not_a_fault():
    # data 1..401 sent with 0x111; the RTO retransmits from 201 with a new label (Linux txrehash), then new data
    segs = [_dut_segment(1 + 100 * i, b"d" * 100) for i in range(4)]
    segs += [_dut_segment(201, b"d" * 100, fl=0x222), _dut_segment(401, b"d" * 100, fl=0x222)]
    problems, figures = _judge(segs)
    assert problems == [], problems
    assert figures["relabelled_at_retransmission"] == ["#5: 0x00111 -> 0x00222"]
    assert figures["flow_labels"] == [0x111, 0x222]
