"""Performance gates (kind "gate"): is IPv6 at least as good as IPv4 (or
offload on as good as off, or a stream with an extension header as good as
without) within a margin, judged with paired interleaved trials and a
confidence interval; and control-plane times against stated targets.

The workloads, margins, budgets and the areas each gate goes with are data
(fixtures/gates/profiles.yaml, one check part per variant); the engine is
keywords/v6gate/gates/ (a module per workload, registered); why a gate goes
with an area is fixtures/gates/pairings.yaml.  Run in `v6gate run`'s serial
"gates" phase (suites/performance/test_perf.py).  Adding a gate:
docs/writing-gates.md.
"""

from ..core.check import Part, check
from ..core.context import CheckContext
from ..gates.profiles import profiles
from ..gates.run import run_gate


def _parts(gate: str) -> list[Part]:
    """One part per variant of the gate's profile (``fixtures/gates/profiles.yaml``), its run profile from
    the data; ``run_gate(t)`` runs the part's gate and variant."""
    out = []
    for label, prof in profiles()[gate].items():
        if label == "-":
            return [Part(None, profile=prof.profile, gate=gate, variant=None)]
        out.append(Part(label, _label_title(label), profile=prof.profile, gate=gate, variant=label))
    return out


def _label_title(label: str) -> str:
    """'10x9000' -> '10 pairs, MTU 9000'; other labels as they are."""
    pairs, x, mtu = label.partition("x")
    if x and pairs.isdigit() and mtu.isdigit():
        return f"{pairs} pair{'s' if pairs != '1' else ''}, MTU {mtu}"
    return label.replace("_", " ")


GATE = dict(area="perf", kind="gate", ipv6ready=None, capabilities=["Core"], liveness="ns", scope="both")
FAMILY = dict(**GATE, needs=[], lab_services=["perf-peer"], dut_config="perf")


@check(
    title="Streaming (STR): IPv6 throughput not below IPv4",
    rfc="RFC 8200 §1 (IPv6 as a successor of IPv4: IPv6-only readiness, non-inferiority)",
    expect="IPv6/IPv4 ratio of STR throughput (and CPU per MB) within the margin",
    fault="dut_ipv6_path_throttled",
    parts=_parts("str"),
    **FAMILY,
)
def ipv6_streaming_is_not_slower_than_ipv4(t: CheckContext):
    """z/VM study STR: 20 bytes out, 20 MB back, 1..50 client/server pairs,
    MTU 1500 and 9000.  An IPv6-only network must carry bulk transfers as
    well as IPv4 did: IPv6 throughput at least (1 - margin) x IPv4."""
    return run_gate(t)


@check(
    title="Request/response (RR): IPv6 transactions not below IPv4",
    rfc="RFC 8200 §1 (IPv6-only readiness, non-inferiority)",
    expect="IPv6/IPv4 ratio of RR transactions/s (and CPU per transaction) within the margin",
    fault="dut_ipv6_path_throttled",
    parts=_parts("rr"),
    **FAMILY,
)
def ipv6_request_response_is_not_slower_than_ipv4(t: CheckContext):
    """z/VM study RR: 200-byte request, 1000-byte response on a persistent
    connection per pair; the per-packet cost of IPv6 must not lower the
    transaction rate beyond the margin."""
    return run_gate(t)


@check(
    title="Connect/request/response (CRR): IPv6 transactions not below IPv4",
    rfc="RFC 8200 §1; RFC 4861 §7.3 (neighbor reuse across connections)",
    expect="IPv6/IPv4 ratio of CRR transactions/s (and CPU per transaction) within the margin",
    fault="dut_ipv6_path_throttled",
    parts=_parts("crr"),
    **FAMILY,
)
def ipv6_connect_request_response_is_not_slower_than_ipv4(t: CheckContext):
    """z/VM study CRR: a new TCP connection per transaction (64-byte
    request, 8 KB response); handshakes and teardown over IPv6 must cost no
    more than over IPv4."""
    return run_gate(t)


@check(
    title="TCP stream, 16 KB messages, 256 KB buffers: IPv6 within 2.5 % of IPv4",
    rfc="RFC 8200 §1 (IPv6-only readiness, non-inferiority)",
    expect="IPv6/IPv4 throughput ratio at least 0.975 of IPv6's payload per segment relative to IPv4's "
           "(0.9862 at MTU 1500)",
    fault="dut_ipv6_path_throttled",
    parts=_parts("stream_16k"),
    **FAMILY,
)
def ipv6_tcp_stream_16k_is_within_2_5_percent_of_ipv4(t: CheckContext):
    """vSphere study: a TCP stream of 16 KB messages with 256 KB socket
    buffers; IPv6 throughput within 2.5 % of IPv4 (one connection per
    family, alternated every 10 ms: see the gate's description)."""
    return run_gate(t)


@check(
    title="Payload-size sweep: IPv6 throughput and half-RTT latency vs IPv4",
    rfc="RFC 8200 §5 (packet size), §4.5 (fragmentation above the MTU for UDP)",
    expect="at every payload size 4..32768 bytes, IPv6 within the margin of IPv4",
    fault="dut_ipv6_path_throttled",
    parts=_parts("sweep"),
    **FAMILY,
)
def ipv6_payload_sweep_is_not_slower_than_ipv4(t: CheckContext):
    """10 GbE vs IPoIB study: UDP and TCP throughput and half round-trip
    latency for payloads 4..32768 bytes in powers of two (qperf), one
    paired comparison per size, a curve per metric."""
    return run_gate(t)


@check(
    title="ESP (AES-GCM-16): IPv6 throughput not below IPv4 over the same SA configuration",
    rfc="RFC 4303 §3.4; RFC 8221 §5 (AES-GCM-16); RFC 8200 §1 (IPv6-only readiness, non-inferiority)",
    expect="IPv6/IPv4 ratio of the 1500-octet AES-GCM-16 ESP packets the DUT opens per second (transport mode, "
           "saturated) within the margin; its CPU per MB for both, and ESP's CPU per MB against plain IPv6, reported",
    fault="esp_gate_ipv6_path_costlier",
    parts=_parts("esp"),
    **{**GATE, "capabilities": ["IPsec"], "dut_config": "ipsec-vm-icount"},
)
def esp_ipv6_is_not_slower_than_esp_ipv4(t: CheckContext):
    """An IPv6-only host protects its traffic with ESP over IPv6 where it
    used ESP over IPv4: the same SA configuration must not open fewer
    packets per second over IPv6 (RFC 4303 §3.4 inbound processing, the
    RFC 8221 MUST AES-GCM-16).  The gate drives the DUT's ESP receive path to
    saturation in each family, pairs alternated, and reports what ESP costs
    it against plain IPv6."""
    return run_gate(t)


@check(
    title="Offload on is not worse than offload off",
    rfc="RFC 8200 §8.1 (upper-layer checksums, offloaded or not); RFC 6936",
    expect="with TSO/GSO/GRO and checksum offload on, throughput at least (1 - margin) x off and CPU per MB at "
           "most (1 + margin) x off, in each family",
    fault="dut_large_segments_slowed",
    parts=_parts("offload"),
    **FAMILY,
)
def offload_on_is_not_slower_than_offload_off(t: CheckContext):
    """Dell/Broadcom and FreeBSD studies: offloads exist to save CPU per
    byte; in each family, the stack with its offloads on must not be slower
    or costlier than with them off."""
    return run_gate(t)


@check(
    title="Offload on is not worse than offload off for request/response transactions",
    rfc="RFC 8200 §8.1 (upper-layer checksums, offloaded or not); RFC 9293 §3.7.1 (segmentation)",
    expect="with TSO/GSO/GRO and checksum offload on, transactions/s (64 KiB out, 100 bytes back) at least "
           "(1 - margin) x off and CPU per transaction at most (1 + margin) x off, in each family",
    fault="dut_large_segments_slowed",
    parts=_parts("offload_rr"),
    **FAMILY,
)
def offload_on_is_not_costlier_per_transaction(t: CheckContext):
    """The FreeBSD and storage studies: offload on vs off as a cost per
    transaction (a storage write: 64 KiB request, small answer) as well as
    per byte; in each family, offloads must not make transactions slower
    or costlier.  The offload area's conformance checks
    (docs/offload.md) judge that what the offloads produce is correct."""
    return run_gate(t)


@check(
    title="IPv6 offloads match IPv4 offloads (ethtool -k)",
    rfc="RFC 8200 §8.1 (IPv6 upper-layer checksums); IPv6-only readiness",
    expect="every offload on for IPv4 has its IPv6 twin on",
    fault="dut_ipv6_tso_off",
    parts=_parts("offload_parity"),
    **FAMILY,
)
def ipv6_offloads_match_ipv4_offloads(t: CheckContext):
    """The Dell/Broadcom study found IPv6 offloads missing where IPv4 had
    them: a NIC (or driver) that segments or checksums IPv4 in hardware
    should do the same for IPv6."""
    return run_gate(t)


@check(
    title="A Destination Options header costs no more than the margin",
    rfc="RFC 8200 §4.6 (Destination Options header), §4 (extension headers processed at the destination)",
    expect="stream throughput with an 8-byte Destination Options header at least (1 - margin) x without",
    fault="dut_slows_destination_options",
    parts=_parts("dstopts"),
    **FAMILY,
)
def destination_options_header_costs_within_margin(t: CheckContext):
    """Extension-header cost: the same IPv6 stream with and without a
    Destination Options header (one PadN option) on every data packet; a
    destination must process it (RFC 8200 §4) without falling off its fast
    path by more than the margin."""
    return run_gate(t)


@check(
    title="A Hop-by-Hop Options header costs no more than the margin",
    rfc="RFC 8200 §4.3 (Hop-by-Hop Options header), §4 (processed by the destination); RFC 9098",
    expect="stream throughput with an 8-byte Hop-by-Hop Options header at least (1 - margin) x without, beyond "
           "the bytes the header takes",
    fault="dut_slows_hop_by_hop_options",
    parts=_parts("hopopts"),
    **FAMILY,
)
def hop_by_hop_options_header_costs_within_margin(t: CheckContext):
    """Extension-header cost for the header every node may look at: the
    same IPv6 stream with and without a Hop-by-Hop Options header (one PadN
    option) on every data packet.  RFC 9098 reports such packets falling to
    a slow path; a host must not."""
    return run_gate(t)


@check(
    title="Fragmented UDP: IPv6 transactions not below IPv4",
    rfc="RFC 8200 §4.5 (Fragment header: fragmentation at the source, reassembly at the destination); "
        "RFC 791 §3.2 (IPv4 fragmentation)",
    expect="IPv6/IPv4 ratio of UDP request/response transactions/s with 8000-byte datagrams (6 fragments each way "
           "at MTU 1500) within the margin",
    fault="dut_slows_ipv6_fragments",
    parts=_parts("fragments"),
    **FAMILY,
)
def ipv6_fragment_reassembly_is_not_slower_than_ipv4(t: CheckContext):
    """Fragmentation and reassembly cost: a DUT answering UDP datagrams
    larger than the MTU reassembles each request and fragments each answer;
    over IPv6 that may not cost more than over IPv4 beyond the margin."""
    return run_gate(t)


@check(
    title="RA to a usable SLAAC address within the target",
    rfc="RFC 4862 §5.5.3, §5.4 (address formation and DAD); RFC 4861 §10 (RetransTimer)",
    expect="median time from a Router Advertisement with a new prefix to an answer from the new address "
           "within the target",
    fault="dut_slow_dad",
    parts=_parts("ra_to_slaac"),
    **{**GATE, "capabilities": ["Core", "SLAAC"]},
)
def ra_to_usable_slaac_address_within_target(t: CheckContext):
    """A host forms an address from an autonomous prefix as soon as the RA
    arrives (RFC 4862 §5.5.3) and may use it once DAD has completed (§5.4):
    DupAddrDetectTransmits x RetransTimer after the probe."""
    return run_gate(t)


@check(
    title="Link-up to DHCPv6 lease within the target",
    rfc="RFC 8415 §18.2.1 (Solicit at start-up), §15 (SOL_MAX_DELAY)",
    expect="median time from the DUT's link-up to holding a DHCPv6-leased address within the target",
    fault="dut_dhcpv6_client_blocked",
    parts=_parts("dhcpv6_lease"),
    **{**GATE, "needs": ["reset"], "lab_services": ["kea-dhcp6"], "dut_config": "dhcp6-client",
       "capabilities": ["Core", "DHCPv6-Client"]},
)
def link_up_to_dhcpv6_lease_within_target(t: CheckContext):
    """A DHCPv6 client starts with a Solicit after a random delay of at most
    SOL_MAX_DELAY (1 s) and holds its address after the Reply (RFC 8415
    §18.2.1): a few seconds at most on a quiet link."""
    return run_gate(t)


@check(
    title="NS to NA latency within the target",
    rfc="RFC 4861 §7.2.4 (sending solicited Neighbor Advertisements), §10 (RetransTimer)",
    expect="median time from a Neighbor Solicitation to the DUT's solicited Neighbor Advertisement within the "
           "target",
    fault="dut_answers_ns_late",
    parts=_parts("ns_to_na"),
    **GATE,
)
def ns_to_na_latency_within_target(t: CheckContext):
    """A node answers a valid NS for its address with a solicited NA
    (RFC 4861 §7.2.4); late answers make neighbours retransmit after
    RetransTimer and stall every new flow."""
    return run_gate(t)


@check(
    title="Block storage (iSCSI) over IPv6 not slower than over IPv4",
    rfc="RFC 7143 §4.2 (iSCSI over TCP, any IP version); RFC 8200 §1 (IPv6-only readiness, non-inferiority)",
    expect="IPv6/IPv4 ratio of sequential iSCSI MB/s and IOPS at 64 KiB and 256 KiB blocks within the margin",
    fault="dut_ipv6_path_throttled",
    parts=_parts("storage_iscsi_seq"),
    **{**FAMILY, "capabilities": ["iSCSI"], "dut_config": "storage-perf"},
)
def ipv6_iscsi_sequential_io_is_not_slower_than_ipv4(t: CheckContext):
    """Storage vendor's IPv6-only study: block storage at 64 KiB and 256 KiB
    blocks, sequential read and write, must move as many MB/s and IOPS over
    IPv6 as over IPv4, at no more CPU."""
    return run_gate(t)


@check(
    title="File storage (NFSv3) over IPv6 not slower than over IPv4",
    rfc="RFC 1813 §3.3.6-7 (NFSv3 READ/WRITE), RFC 5665 (NFS over IPv6 transports); RFC 8200 §1 (non-inferiority)",
    expect="IPv6/IPv4 ratio of sequential NFSv3 MB/s and IOPS at 64 KiB and 256 KiB blocks within the margin",
    fault="dut_ipv6_path_throttled",
    parts=_parts("storage_nfs_seq"),
    **{**FAMILY, "capabilities": ["NFS"], "dut_config": "storage-perf"},
)
def ipv6_nfs_sequential_io_is_not_slower_than_ipv4(t: CheckContext):
    """Storage vendor's IPv6-only study: NFS at 64 KiB and 256 KiB blocks,
    sequential read and write, must move as many MB/s and IOPS over IPv6 as
    over IPv4, at no more CPU."""
    return run_gate(t)


@check(
    title="Offload on is not worse than offload off for block storage (iSCSI) over IPv6",
    rfc="RFC 7143 §4.2 (iSCSI over TCP); RFC 8200 §8.1 (upper-layer checksums, offloaded or not); "
        "RFC 9293 §3.7.1 (segmentation)",
    expect="over IPv6, with TSO/GSO/GRO and checksum offload on, sequential iSCSI MB/s at least (1 - margin) x "
           "off and CPU ms per MB at most (1 + margin) x off, at 64 KiB and 256 KiB blocks",
    fault="dut_large_segments_slowed_both_ways",
    parts=_parts("storage_iscsi_offload"),
    **{**FAMILY, "capabilities": ["iSCSI"], "dut_config": "storage-perf"},
)
def iscsi_offload_on_is_not_worse_than_off(t: CheckContext):
    """Storage vendor's study, offload question: with the NIC's offloads on,
    block storage over IPv6 must move at least as many MB/s at no more CPU
    per MB as with them off; an offload path that is slow for IPv6's large
    segments shows here."""
    return run_gate(t)


@check(
    title="Offload on is not worse than offload off for file storage (NFSv3) over IPv6",
    rfc="RFC 1813 §3.3.6-7 (NFSv3 READ/WRITE); RFC 8200 §8.1 (upper-layer checksums, offloaded or not); "
        "RFC 9293 §3.7.1 (segmentation)",
    expect="over IPv6, with TSO/GSO/GRO and checksum offload on, sequential NFSv3 MB/s at least (1 - margin) x "
           "off and CPU ms per MB at most (1 + margin) x off, at 64 KiB and 256 KiB blocks",
    fault="dut_large_segments_slowed_both_ways",
    parts=_parts("storage_nfs_offload"),
    **{**FAMILY, "capabilities": ["NFS"], "dut_config": "storage-perf"},
)
def nfs_offload_on_is_not_worse_than_off(t: CheckContext):
    """Storage vendor's study, offload question, for file storage over IPv6."""
    return run_gate(t)


@check(
    title="Redirect: the DUT switches to the better first hop within the target",
    rfc="RFC 4861 §8.3 (Redirect processing: the Destination Cache updated on receipt), §4.5",
    expect="median time from a valid Redirect (target TR2, with its link-layer address) to the DUT's first packet "
           "to TR2 within the target",
    fault="dut_ignores_redirects",
    parts=_parts("redirect_switch"),
    **{**GATE, "needs": ["exclusive_router"], "liveness": "echo", "scope": "host"},
)
def redirect_switches_first_hop_within_target(t: CheckContext):
    """A host that receives a valid Redirect updates its Destination Cache
    so that subsequent traffic to the destination goes to the target
    (RFC 4861 §8.3): following a Redirect costs the host nothing only if it
    switches at its next packet, not after a timer."""
    return run_gate(t)


@check(
    title="Neighbour churn: the DUT answers many new neighbours at once within the target",
    rfc="RFC 4861 §7.2.2 (packets queued while resolving), §7.2.4; RFC 4861 §7.3.2 (an entry per neighbour)",
    expect="median time for the DUT to resolve and answer 32 new on-link correspondents at once within the target",
    fault="dut_resolves_ten_neighbours_a_second",
    parts=_parts("nd_churn"),
    **{**GATE, "liveness": "echo"},
)
def neighbour_churn_within_target(t: CheckContext):
    """A server on a busy link meets new neighbours all the time: each
    first packet to one waits for address resolution (RFC 4861 §7.2.2),
    so the rate at which a stack resolves many neighbours at once is the
    price of ND in a churning network (ARP's on IPv4)."""
    return run_gate(t)


@check(
    title="MLD: the DUT reports a group it joins within the target",
    rfc="RFC 3810 §6.1 (State Change Report sent immediately on a change of state), RFC 2710 §4; RFC 4541 §2.1.1",
    expect="median time from the DUT joining a fresh group to its first Report naming the group within the target",
    fault="dut_sends_no_mld_reports_on_join",
    parts=_parts("mld_join"),
    **{**GATE, "capabilities": ["MLDv2"], "liveness": "echo", "scope": "host"},
)
def mld_join_is_reported_within_target(t: CheckContext):
    """'When the state of an interface changes ... the node immediately
    transmits a State Change Report' (RFC 3810 §6.1): the time from a join
    to that Report is the DUT's share of the time from a join to the
    group's traffic, since switches and routers forward it only then."""
    return run_gate(t)


#: the lab fault under which each Happy Eyeballs part must FAIL (the same client, configured badly)
HE_FAULTS = {"healthy": "dut_prefers_ipv4_for_connections", "ipv6_blackhole": "dut_waits_for_the_tcp_timeout",
             "ipv6_slow": "dut_waits_for_the_tcp_timeout", "aaaa_delayed": "dut_waits_for_both_answers"}


@check(
    title="Happy Eyeballs: time to a connected socket when IPv6 is broken or slow, IPv6 preferred when it works",
    rfc="RFC 8305 §3 (Resolution Delay), §4-§5 (IPv6 first, Connection Attempt Delay), §8 (recommended values)",
    expect="median time from the DUT's first DNS query to a connected socket within CAD 250 ms + 150 ms when IPv6 "
           "is black-holed or its SYN-ACK is 1 s late, within Resolution Delay 50 ms + 150 ms when the AAAA "
           "answer is 1 s late; on a healthy path IPv6 wins",
    parts=[Part(p.letter, p.title, profile=p.profile, fault=HE_FAULTS[p.letter], **p.params)
           for p in _parts("happy_eyeballs")],
    **{**GATE, "capabilities": ["Happy-Eyeballs"], "dut_config": "he-dual-stack", "liveness": "echo",
       "scope": "host"},
)
def happy_eyeballs_connects_within_rfc8305_delays(t: CheckContext):
    """'Implementations SHOULD ... start the next connection attempt after
    the Connection Attempt Delay (250 ms recommended)' rather than wait for
    the first attempt to time out (RFC 8305 §5); when the A answer comes
    first they wait at most the Resolution Delay (50 ms) for AAAA (§3); and
    IPv6 is tried first and preferred when it works (§4).  An application
    that waits for TCP's connect timeout before trying IPv4 is what an
    IPv6 rollout notices first."""
    return run_gate(t)


@check(
    title="PLPMTUD: what a Packet Too Big black hole costs a 1 MiB transfer, against an open path",
    rfc="RFC 4821 §1, §7.5; draft-ietf-6man-rfc8504-bis (Path MTU Discovery and Packet Size)",
    expect="the median extra time of 1 MiB through a path that drops every Packet Too Big, over the same transfer "
           "on an open path to the same node, paired and interleaved, within the target (10 s)",
    fault="dut_tcp_without_plpmtud",
    parts=_parts("plpmtud_recovery"),
    **{**GATE, "capabilities": ["PLPMTUD"], "needs": ["lab_router"], "lab_services": ["plpmtud-blackhole"],
       "dut_config": "plpmtud", "liveness": "echo", "scope": "host"},
)
def plpmtud_recovers_from_a_black_hole_within_target(t: CheckContext):
    """PLPMTUD lets a sender 'detect and recover from' black holes (RFC
    4821 §1): the recovery is a cost in time that conformance alone does
    not show (a stack that finds the path after a minute of retransmission
    timeouts still 'completes').  Timed against the same transfer on an
    open path, in pairs, so the machine's load hits both alike."""
    return run_gate(t)
