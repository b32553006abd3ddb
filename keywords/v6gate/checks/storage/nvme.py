"""NVMe/TCP over IPv6: the discovery controller answers on a global IPv6
address, its Discovery Log Page hands out only IPv6 transport addresses
usable on the link (NVMe over Fabrics: Base 2.0 §5.16.1.23; NVMe/TCP
Transport 1.0 §3.1 and §4.1: TRADDR, ADRFAM), and data written over an I/O
queue reads back intact with full-size segments on the wire.

The host side is ``net/nvme_tcp.py`` (the kernel NVMe/TCP host is missing
here).  The lab's target is Linux nvmet-tcp in a VM on the DUT's link
(``lab/services/vm_target.py``), a device of its own: the target file
names its address (``services[].address``); a real array's NVMe/TCP
endpoint is the DUT's global address unless its entry names another.
"""

from __future__ import annotations

import ipaddress
import secrets

from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.verdict import Deviation
from ...errors import BenchError
from ...scenario import storage as C
from .integrity import PATTERN_BYTES, _dut_mss, _largest, _largest_frame, first_difference, pattern

IP_TRANSPORTS = ("tcp", "rdma")


def judge_log_entries(entries: list[dict], link_is_global: bool = True) -> list[str]:
    """What is wrong with a Discovery Log Page's entries for an IPv6-only
    link: an IP transport entry (TCP, RDMA) must say ADRFAM IPv6 and carry a
    global IPv6 TRADDR, without a zone, that matches its ADRFAM."""
    problems = []
    for i, e in enumerate(entries):
        if e.get("trtype") not in IP_TRANSPORTS:
            continue
        where = f"entry {i} ({e.get('subtype')} {e.get('subnqn')}, port {e.get('trsvcid')})"
        addr = str(e.get("traddr", ""))
        if e.get("adrfam") != "ipv6":
            problems.append(f"{where} has ADRFAM {e.get('adrfam')} and TRADDR {addr!r}, not IPv6")
            continue
        host, _, zone = addr.partition("%")
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            problems.append(f"{where}: TRADDR {addr!r} is not an IPv6 address (ADRFAM says IPv6)")
            continue
        if ip.version != 6:
            problems.append(f"{where}: TRADDR {addr!r} is an IPv4 address under ADRFAM IPv6")
            continue
        bad = C.classify(host, link_is_global)
        if bad:
            problems.append(f"{where}: TRADDR {addr!r} is {bad}")
        elif zone:
            problems.append(f"{where}: TRADDR {addr!r} carries a zone (%{zone}), which names an interface of "
                            "the target, meaningless to a host")
        if not str(e.get("trsvcid", "")).isdigit():
            problems.append(f"{where}: TRSVCID {e.get('trsvcid')!r} is not a TCP port")
    return problems


def _discover(t: CheckContext) -> tuple[dict, str, int, float, C.Client]:
    """(the client's answer, the endpoint address, port, session start, client) of one discovery session."""
    addr, _, port, cl = C.endpoint(t, "NVMe-TCP")
    answer, since = C.ask(t, cl, "v6gate.net.nvme_tcp", ["discover", addr, str(port)], "NVMe/TCP discovery host",
                          settle=0.3)
    return answer, addr, port, since, cl


def _session_failed(t: CheckContext, answer: dict, addr: str, port: int, since: float):
    frames = C.session_frames(t, since, addr, port)
    raise C.speaker_error(answer, f"NVMe/TCP discovery on [{addr}]:{port} failed: {answer['error']}; "
                                  f"{len(frames)} IPv6 frames to/from port {port}; "
                                  f"{C.dut_frames_summary(t, since, addr)}")


@check(
    area="storage", ipv6ready=None,
    title="An NVMe/TCP discovery controller answers on the target's global IPv6 address with no IPv4 on the wire",
    rfc="NVMe/TCP Transport 1.0 §3.6 (connection and ICReq/ICResp), NVMe over Fabrics (Base 2.0 §3.3, Connect; "
        "§5.16.1.23, Discovery Log Page); RFC 8200 §1 and OMB M-21-07 (IPv6-only operation)",
    expect="ICReq/ICResp, a Fabrics Connect to the discovery NQN and Get Log Page 70h complete over IPv6 on the "
           "target's global address; no IPv4 frame from the target during the session",
    parts=[
        Part("A", "discovery session on the global address (control: the port moved to IPv4)",
             fault="dut_nvme_port_ipv4_only"),
        Part("B", "discovery session with the target also sending IPv4 (no fallback traffic)",
             fault="dut_nvme_sends_ipv4_beside_its_sessions",
             expect="the discovery session completes and the target sends no IPv4 frame during it"),
    ],
    capabilities=["NVMe-TCP"], dut_config="storage-vm", liveness=None,
)
def nvme_tcp_discovery_answers_over_ipv6_only(t: CheckContext):
    """An NVMe/TCP host finds subsystems through a discovery controller.
    On an IPv6-only network that controller must accept the host's
    connection, capsules and log request on its global IPv6 address, and
    the target must not fall back to, or beacon, IPv4 while serving it
    (judged on the frames from the MAC that answered the session)."""
    answer, addr, port, since, cl = _discover(t)
    if "error" in answer:
        return _session_failed(t, answer, addr, port, since)
    frames = C.session_frames(t, since, addr, port)
    t.measure("session_frames", len(frames))
    t.measure("discovery_log", answer)
    macs = {f.pkt[Ether].src for f in frames if Ether in f.pkt and f.pkt[IPv6].src == addr}
    if not macs and frames:
        raise BenchError(f"none of the {len(frames)} captured session frames came from [{addr}]")
    leak = next((p for p in (C.ipv4_problem(t, since, mac) for mac in sorted(macs)) if p), None)
    if leak:
        raise Deviation(f"{leak}; the NVMe/TCP discovery session itself completed over IPv6 ({len(frames)} frames)")
    if not frames and t.session.captures_the_link:
        raise BenchError(f"the NVMe/TCP discovery on [{addr}]:{port} succeeded but the tester captured none of its "
                         "frames (the lab's hub mode is off?)")
    return t.conclude(f"ICReq/ICResp, Connect (controller {answer['cntlid']}) and the Discovery Log Page "
                       f"({answer['numrec']} entries) over IPv6 between {cl.address or 'the client'} and "
                       f"[{addr}]:{port} ({len(frames)} frames); no IPv4 from the target", [])


@check(
    area="storage", ipv6ready=None,
    title="The NVMe/TCP Discovery Log Page hands out only global IPv6 transport addresses",
    rfc="NVMe over Fabrics, Base 2.0 §5.16.1.23 (Discovery Log Page entry: TRTYPE, ADRFAM, TRSVCID, TRADDR); "
        "NVMe/TCP Transport 1.0 §4.1 (TRADDR: an IPv4 or IPv6 address as ADRFAM says); RFC 4007 §6 (zones are "
        "local to a node)",
    expect="every TCP/RDMA entry of the log (subsystems and referrals) has ADRFAM IPv6 and a global IPv6 TRADDR "
           "without a zone: none IPv4, link-local, loopback or malformed; the target file's subsystem NQN is listed",
    parts=[
        Part("A", "discovery log on the global address (control: an IPv4 referral)",
             fault="dut_nvme_refers_to_ipv4_discovery"),
        Part("B", "discovery log on the global address (control: a link-local referral with a zone)",
             fault="dut_nvme_refers_to_link_local_discovery"),
    ],
    capabilities=["NVMe-TCP"], dut_config="storage-vm", liveness=None,
)
def nvme_discovery_log_entries_are_ipv6(t: CheckContext):
    """A host connects to what the Discovery Log Page lists: every
    subsystem's port and every referral to another discovery controller.
    On an IPv6-only link an IPv4 entry cannot be reached, a link-local one
    not from off the link, and a zone names an interface of the target, not
    of the host: each breaks the host's next connection."""
    answer, addr, port, since, _ = _discover(t)
    if "error" in answer:
        return _session_failed(t, answer, addr, port, since)
    entries = answer["entries"]
    t.measure("discovery_log", entries)
    want = C.service(t, "NVMe-TCP").get("nqn")
    if want and not any(e["subnqn"] == want for e in entries):
        raise Deviation(f"the Discovery Log Page on [{addr}]:{port} does not list {want} (the target file's nqn); "
                         f"it lists {[e['subnqn'] for e in entries]}")
    problems = judge_log_entries(entries)
    if problems:
        raise Deviation("; ".join(problems) + f" (Discovery Log Page of [{addr}]:{port}, {len(entries)} entries)")
    shown = ", ".join(f"{e['subtype']} [{e['traddr']}]:{e['trsvcid']}" for e in entries)
    return t.conclude(f"{len(entries)} entries, all ADRFAM IPv6 with global addresses: {shown or '-'}", [])


@check(
    area="storage", ipv6ready=None,
    title="Data written over NVMe/TCP on IPv6 reads back intact with segments at the link MTU",
    rfc="NVMe/TCP Transport 1.0 §3.3-3.4 (H2CData after R2T, C2HData), NVM Command Set 1.0 §3.2.4/§3.2.6 "
        "(Write, Read); RFC 8200 §5 (packet size: the link MTU), RFC 9293 §3.7.1 (MSS from the MTU)",
    expect="a 4 MiB pattern written from LBA 0 of namespace 1 on an I/O queue (qid 1) and read back compares equal, "
           "the target's full-size segments crossing the link",
    parts=[Part(None, fault="dut_vm_loses_full_size_ipv6_packets")],
    capabilities=["NVMe-TCP"], dut_config="storage-vm", liveness=None,
)
def nvme_data_reads_back_intact_at_link_mtu(t: CheckContext):
    """Block storage is only as good as what reads back.  Over an IPv6
    path the target's Read data goes out in full-size segments (MSS from
    the link MTU); if those are lost the host's reads stall, and if blocks
    are misplaced they compare wrong."""
    addr, svc, port, cl = C.endpoint(t, "NVMe-TCP")
    if not svc.get("nqn") or svc.get("writable") is not True:
        raise C.NotApplicable("the integrity check writes the first 4 MiB of namespace 1: declare the NVMe-TCP "
                              "service's nqn and writable: true in the target file")
    data = pattern(PATTERN_BYTES, secrets.token_bytes(8))
    local_in, local_out = cl.workdir / "nvme-pattern.in", cl.workdir / "nvme-pattern.out"
    local_in.write_bytes(data)
    local_out.unlink(missing_ok=True)
    what = f"Write/Read of {len(data)} bytes on {svc['nqn']} namespace 1 at [{addr}]:{port}"
    answer, since = C.ask(t, cl, "v6gate.net.nvme_tcp", ["rw", addr, str(port), svc["nqn"], str(local_in),
                                                          str(local_out)], "NVMe/TCP host")
    if "error" in answer:
        raise C.speaker_error(answer, f"{what} failed: {answer['error']}; {_largest(t, since, addr, port)}; "
                                      f"{C.dut_frames_summary(t, since, addr)}")
    t.measure("io", answer)
    largest, mss = _largest_frame(t, since, addr, port), _dut_mss(t, since, addr, port)
    t.measure("largest_dut_packet_bytes", largest)
    t.measure("dut_mss", mss)
    if not local_out.exists():
        raise BenchError(f"the NVMe/TCP host reported success but wrote no {local_out}")
    diff = first_difference(data, local_out.read_bytes())
    if diff != "identical":
        raise Deviation(f"the {len(data)}-byte pattern read back wrong over NVMe/TCP: {diff}")
    mtu = t.target.link_mtu
    return t.conclude(f"{len(data)} bytes written and read back identical over IPv6 ({answer['lba_size']}-byte "
                       f"blocks, {answer['seconds']} s); the target announced MSS {mss or 'unseen'} (link MTU {mtu}); "
                       f"its largest captured packet {largest} bytes", [])
