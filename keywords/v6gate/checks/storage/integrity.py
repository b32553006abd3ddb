"""Data integrity over IPv6: a pattern written to the DUT's storage and
read back through a real client, compared byte for byte, with full-size
segments at the link MTU on the wire."""

from __future__ import annotations

import hashlib
import secrets

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.control import NotSupported
from ...core.verdict import Deviation
from ...errors import BenchError
from ...net.iscsi import INITIATOR
from ...scenario import storage as C

#: bytes written and read back: many full-size segments at any MTU up to 9000
PATTERN_BYTES = 4 << 20
#: the jumbo MTU of parts E-G (the storage seed's host MTU)
JUMBO = 9000


def pattern(nbytes: int, seed: bytes) -> bytes:
    """A pattern where every 32-byte block differs (a counter hashed with a
    per-check seed): a misplaced, repeated or zeroed block cannot compare equal."""
    out = bytearray()
    i = 0
    while len(out) < nbytes:
        out += hashlib.sha256(seed + i.to_bytes(8, "big")).digest()
        i += 1
    return bytes(out[:nbytes])


def first_difference(a: bytes, b: bytes) -> str:
    if len(a) != len(b):
        return f"read back {len(b)} bytes, wrote {len(a)}"
    for off in range(0, len(a), 4096):
        if a[off:off + 4096] != b[off:off + 4096]:
            return f"bytes differ from offset {off} (4 KiB block {off // 4096})"
    return "identical"


@check(
    area="storage", ipv6ready=None,
    title="Data written over IPv6 reads back intact with segments at the link MTU",
    rfc="RFC 8200 §5 (packet size: the link MTU), RFC 9293 §3.7.1 (MSS from the MTU); RFC 1813 §3.3.7/§3.3.6 "
        "(NFSv3 WRITE/READ), MS-SMB2 §3.2.4.6-7 (SMB2 WRITE/READ)",
    expect="a 4 MiB pattern written through the client and read back compares equal, the DUT's full-size "
           "segments (MSS from the link MTU) crossing the link",
    parts=[
        Part("A", "NFSv3 (nfs-cp)", proto="NFS", capabilities=["NFS"], fault="dut_loses_full_size_ipv6_packets"),
        Part("B", "SMB3 (smbclient put/get)", proto="SMB", capabilities=["SMB"],
             fault="dut_loses_full_size_ipv6_packets"),
        Part("C", "iSCSI (WRITE(10) and READ(10) on a Normal session, LBA 0)", proto="iSCSI", capabilities=["iSCSI"],
             fault="dut_loses_full_size_ipv6_packets"),
        Part("D", "NFSv3 to a client behind a 1280-byte hop (PMTUD in action)", proto="NFS", far=True,
             capabilities=["NFS"], fault="dut_ignores_packet_too_big",
             rfc="RFC 8201 §4 (a node reduces its PMTU on Packet Too Big), §5.2; RFC 8200 §5",
             expect="a 4 MiB pattern written and read back through a router whose path to the client has a "
                    "1280-byte MTU compares equal: the DUT lowered its path MTU on the router's Packet Too Big"),
        *[Part(letter, f"{title} with {JUMBO}-byte jumbo frames", proto=proto, jumbo=JUMBO, capabilities=[proto],
               fault="dut_loses_full_size_ipv6_packets",
               expect=f"with the link at MTU {JUMBO} (the lab raises its switch, the DUT and the client; a real "
                      f"bench declares link.mtu {JUMBO}), a 4 MiB pattern written and read back compares equal, "
                      f"the DUT's segments as large as the jumbo MTU allows")
          for letter, title, proto in (("E", "NFSv3 (nfs-cp)", "NFS"), ("F", "SMB3 (smbclient put/get)", "SMB"),
                                       ("G", "iSCSI (WRITE(10) and READ(10))", "iSCSI"))],
    ],
    capabilities=[], dut_config="storage",
)
def data_reads_back_intact_at_link_mtu(t: CheckContext):
    """Storage traffic is bulk traffic: every segment the DUT sends is as
    large as the link allows (RFC 8200 §5; the MSS follows the MTU), and
    the bytes read back must be the bytes written.  A path that loses
    full-size IPv6 packets (an MTU black hole) stalls the transfer."""
    dut, svc, port, cl = C.endpoint(t, t.p.proto, far=getattr(t.p, "far", False))
    if svc.get("writable") is False:
        raise C.NotApplicable(f"the target file says its {t.p.proto} service is not writable")
    jumbo = getattr(t.p, "jumbo", None)
    if not jumbo or (t.target.link_mtu or 0) >= jumbo:
        return _transfer(t, dut, svc, port, cl, int(t.target.link_mtu) if t.target.link_mtu else None)
    try:
        jumbo_link = t.session.link_mtu(jumbo)
    except NotSupported:
        raise C.NotApplicable(f"jumbo frames: the target's link MTU is {t.target.link_mtu}; set link.mtu: {jumbo} in "
                              f"the target file when the DUT, its switch and the storage client carry {jumbo}-byte "
                              "frames (the harness changes MTUs only on the lab)") from None
    with jumbo_link:
        t.note(f"the lab's link (switch, DUT, client, tester) is at MTU {jumbo} for this part")
        return _transfer(t, dut, svc, port, cl, jumbo)


def _transfer(t: CheckContext, dut: str, svc: dict, port: int, cl, mtu: int | None):
    """Write the pattern through the client, read it back, compare; the body of every part."""
    seed = secrets.token_bytes(8)
    data = pattern(PATTERN_BYTES, seed)
    name = f"v6gate-{seed.hex()}.bin"
    local_in = cl.workdir / f"storage-{name}"
    local_out = cl.workdir / f"storage-{name}.back"
    local_in.write_bytes(data)
    t.defer(lambda: [p.unlink(missing_ok=True) for p in (local_in, local_out)])
    limit = max(8.0, 8 * t.reply_timeout)  # a 4 MiB copy takes about a second here, under load
    since = t.now()
    if t.p.proto == "NFS":
        export = svc.get("export") or C.lab_export(t)
        url = f"nfs://{dut}{export}/{name}?version=3"  # libnfs: bare IPv6 in URLs; NFSv4 writes >= 4 KiB fail
        steps = [(["nfs-cp", str(local_in), url], f"nfs-cp to {url}"),
                 (["nfs-cp", url, str(local_out)], f"nfs-cp from {url}")]
        runner = cl.run
    elif t.p.proto == "iSCSI":
        if not svc.get("iqn") or svc.get("writable") is not True:
            raise C.NotApplicable("the integrity check writes the first 4 MiB of a LUN: declare the iSCSI service's "
                                  "iqn, lun and writable: true in the target file")
        what = f"WRITE(10)/READ(10) to {svc['iqn']} LUN {svc.get('lun', 0)} at [{dut}]:{port}"
        rc, out, err = cl.python("v6gate.net.iscsi", ["rw", dut, str(port), INITIATOR, svc["iqn"],
                                                      str(svc.get("lun", 0)), str(local_in), str(local_out)], limit)
        answer = out.strip().splitlines()[-1] if out.strip() else ""
        if rc is None or "error" in answer:
            how = f"timed out after {limit:g} s" if rc is None else f"failed: {answer[:200]}"
            raise Deviation(f"{what} {how}; {_largest(t, since, dut, port)}; {C.dut_frames_summary(t, since, dut)}")
        if rc != 0 or not answer:
            raise BenchError(f"the iSCSI client failed (exit {rc}): {err.strip()[-300:]}")
        steps = []
        runner = cl.run
    else:
        share = svc.get("share") or "v6gate"
        target = f"//{dut}/{share}"
        cmds = f"put {local_in} {name}; get {name} {local_out}; del {name}"
        steps = [(["-N", target, "-m", "SMB3", "-p", str(port), "-c", cmds], f"smbclient {target} put/get")]
        runner = cl.smbclient
    for argv, what in steps:
        rc, out, err = runner(argv, limit)
        if rc != 0 or "NT_STATUS" in out + err:
            detail = (err.strip() or out.strip() or "no output").splitlines()[-1][:200]
            how = f"timed out after {limit:g} s" if rc is None else f"failed: {detail}"
            raise Deviation(f"{what} {how}; "
                             f"{_largest(t, since, dut, port)}; {C.dut_frames_summary(t, since, dut)}")
    t.wait(0.2)
    if not local_out.exists():
        raise BenchError(f"the client reported success but wrote no {local_out}")
    back = local_out.read_bytes()
    diff = first_difference(data, back)
    largest = _largest_frame(t, since, dut, port)
    mss = _dut_mss(t, since, dut, port)
    if diff != "identical":
        raise Deviation(f"the {len(data)}-byte pattern read back wrong: {diff}")
    path = ""
    if getattr(t.p, "far", False):
        ptb = _packet_too_big_to_dut(t, since, dut)
        t.measure("packet_too_big_to_dut", ptb)
        if not ptb:
            # the part's stimulus: without a Packet Too Big the transfer did not exercise RFC 8201 at all
            raise BenchError(f"no Packet Too Big reached the DUT for the path to {cl.address} during the transfer "
                             f"(largest DUT packet {largest} octets): the path's narrower hop was not exercised (a "
                             "router that forwards above its next hop's MTU, e.g. an unlocked route MTU on Linux; or "
                             "a capture that does not see the router's frames to the DUT), so PMTUD is not judged")
        path = (f"; across the hop to {cl.address}: {len(ptb)} Packet Too Big to the DUT (MTU "
                f"{', '.join(sorted({str(m) for m in ptb}))}) and the transfer went on")
    t.measure("largest_dut_packet_bytes", largest)
    t.measure("dut_mss", mss)
    t.measure("link_mtu", mtu)
    # the capture may hold GSO super-packets on a virtual link (lab-notes: veth), so the MSS the DUT
    # announced (RFC 9293 §3.7.1: link MTU - 60 for IPv6) tells the segment size, not the largest frame
    return t.conclude(f"{len(data)} bytes written and read back identical over IPv6; the DUT announced MSS "
                       f"{mss or 'unseen'} (link MTU {mtu} - 60 = {mtu - 60 if mtu else '?'}); its largest captured "
                       f"packet {largest} bytes{path}", [])


def _largest_frame(t: CheckContext, since: float, dut: str, port: int) -> int:
    from scapy.layers.inet6 import IPv6

    frames = [f for f in C.session_frames(t, since, dut, port) if f.pkt[IPv6].src == dut]
    return max((len(f.pkt[IPv6]) for f in frames), default=0)


def _largest(t: CheckContext, since: float, dut: str, port: int) -> str:
    n = _largest_frame(t, since, dut, port)
    return f"the DUT's largest packet in the session: {n} bytes" if n else "no packet from the DUT's service port"


def _dut_mss(t: CheckContext, since: float, dut: str, port: int) -> int | None:
    from scapy.layers.inet import TCP
    from scapy.layers.inet6 import IPv6

    for f in C.session_frames(t, since, dut, port):
        p = f.pkt
        if TCP in p and p[IPv6].src == dut and p[TCP].flags.S:
            return dict((k, v) for k, v in p[TCP].options if isinstance(k, str)).get("MSS")
    return None


def _packet_too_big_to_dut(t: CheckContext, since: float, dut: str) -> list[int]:
    """MTUs of the Packet Too Big messages sent to the DUT in the check (the router's, seen on the link)."""
    from scapy.layers.inet6 import ICMPv6PacketTooBig, IPv6

    frames = t.collect(lambda p: ICMPv6PacketTooBig in p and p[IPv6].dst == dut, 0, since=since, any_source=True)
    return [f.pkt[ICMPv6PacketTooBig].mtu for f in frames]
